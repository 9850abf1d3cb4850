//! One entry of `"mcpServers"`: a local (command) or remote (url) server,
//! with the keys every server has (`"tools"`, `"prefix"`, `"revisions"`,
//! `"timeoutMs"`, `"trusted"`, `"disabled"`).

use std::path::PathBuf;

use serde_json::Value;

use super::ctx::{type_name, Ctx, Object};
#[cfg(feature = "secrets")]
use super::expand::secret_refs;
use super::process::{parse_env, parse_isolation, parse_power, parse_process_keys, Power};
use super::remote::{parse_remote, parse_transport, RemoteServer, Transport};
use super::MAX_NAME_LEN;
use crate::process::childenv;
use crate::hub::Isolation;
use crate::bytes::jsonpos::Path;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// The key in `mcpServers`.
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// Set over the parent's environment, in file order.
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    pub timeout_ms: Option<u64>,
    /// Exact names or `*` globs; empty: every tool is allowed.
    pub tools_allow: Vec<String>,
    pub tools_deny: Vec<String>,
    /// The prefix of this server's names: `prefix` if given, else the name.
    /// Empty: names are exposed unprefixed.
    pub prefix: String,
    /// Protocol revisions to offer this server, newest preference first.
    pub revisions: Option<Vec<String>>,
    /// `"trusted"` (default false): its tool annotations are passed on as
    /// they are; an untrusted server's carry its name in `_meta` (or are
    /// removed, `policy.untrustedAnnotations`).
    pub trusted: bool,
    /// `"required"` (default false): `/ready` answers 503 while it is not ready.
    pub required: bool,
    /// Set for a remote server (`"url"`); `command`, `args`, `env` and
    /// `cwd` are then empty.
    pub remote: Option<RemoteServer>,
    /// `"inheritEnv"`, `"envAllow"`, and the variables the config reads as
    /// secrets: what the process inherits of mcpx's environment.
    pub env_policy: childenv::Policy,
    /// `"maxRestarts"`: failed attempts in a row retried before giving up.
    pub max_restarts: u32,
    /// `"lazy"` and `"idleStopMs"`.
    pub power: Power,
    /// `"isolation"` and `"maxInstances"`.
    pub isolation: Isolation,
}

#[cfg(feature = "secrets")]
impl ServerConfig {
    /// The per-principal secrets (`${secret:NAME}`) its `env` and headers
    /// name: each instance gets its owner's.
    pub fn secrets(&self) -> impl Iterator<Item = &str> {
        self.env.iter().chain(self.remote.iter().flat_map(|r| &r.headers)).flat_map(|(_, v)| secret_refs(v))
    }

    /// Where browsers reach the hub, for a remote server whose OAuth
    /// tokens are each principal's own (`"perPrincipal"`).
    pub fn per_principal_oauth(&self) -> Option<&str> {
        self.remote.as_ref()?.oauth.as_ref()?.per_principal.as_deref()
    }

    /// `"tokenExchange"`: a remote server's OAuth tokens are exchanged for
    /// each principal's own token to mcpx.
    pub fn token_exchange(&self) -> Option<&crate::remote::oauth::TokenExchange> {
        self.remote.as_ref()?.oauth.as_ref()?.token_exchange.as_ref()
    }

    /// Does each principal's instance reach the server with its own
    /// credentials (secrets, its own OAuth tokens, or exchanged ones)?
    pub fn own_credentials(&self) -> bool {
        self.secrets().next().is_some() || self.per_principal_oauth().is_some() || self.token_exchange().is_some()
    }
}

/// What one entry of `"mcpServers"` gives.
pub(super) enum Parsed {
    Server(Box<ServerConfig>),
    Disabled,
    /// Unsupported (e.g. an unknown transport): warned about, not served.
    Skipped,
    Invalid,
}

const SERVER_KEYS: &[&str] = &[
    "command", "args", "env", "cwd", "disabled", "timeoutMs", "tools", "prefix", "revisions", "url",
    "headers", "caFile", "type", "transport", "inheritEnv", "envAllow", "maxRestarts", "oauth",
    "lazy", "idleStopMs", "trusted", "isolation", "maxInstances", "required",
];

/// Server `name`'s entry `v` at `at`; `sep` is the file's separator and
/// `power` the file's defaults of `"lazy"` and `"idleStopMs"`.
pub(super) fn parse_server(cx: &mut Ctx<'_>, at: &Path, name: &str, v: &Value, sep: &str, power: Power) -> Parsed {
    let n_errors = cx.errors.len();
    let Value::Object(obj) = v else {
        cx.err(at, format!("expected an object with \"command\", found {}", type_name(v)));
        return Parsed::Invalid;
    };
    cx.unknown_keys(at, obj, SERVER_KEYS);
    check_name(cx, at, name);
    let disabled = match obj.get("disabled") {
        Some(d) => cx.bool(&at.key("disabled"), d).unwrap_or(false),
        None => false,
    };
    if disabled {
        return if cx.errors.len() > n_errors { Parsed::Invalid } else { Parsed::Disabled };
    }
    let mode = match parse_transport(cx, at, obj, name) {
        Transport::Local => None,
        Transport::Remote(mode) => Some(mode),
        Transport::Unsupported => return Parsed::Skipped,
    };
    let remote = match mode {
        Some(mode) => parse_remote(cx, at, obj, mode),
        None => {
            for k in ["url", "headers", "caFile", "oauth"] {
                if obj.contains_key(k) {
                    cx.err(&at.key(k), format!("{k:?} is for remote servers, but this one is \"stdio\""));
                }
            }
            None
        }
    };
    let local = mode.is_none();
    let command = parse_command(cx, at, obj, name, local);
    let args = match obj.get("args") {
        None => Some(Vec::new()),
        Some(a) => cx.strings(&at.key("args"), a),
    };
    let env = parse_env(cx, at, obj.get("env"));
    let cwd = match obj.get("cwd") {
        None | Some(Value::Null) => None,
        Some(c) => cx.string(&at.key("cwd"), c).and_then(|s| cx.path(&at.key("cwd"), &s)),
    };
    let timeout_ms = match obj.get("timeoutMs") {
        None | Some(Value::Null) => None,
        Some(t) => match t.as_u64() {
            Some(0) | None => {
                cx.err(&at.key("timeoutMs"), format!("expected a positive whole number of milliseconds, found {t}"));
                None
            }
            Some(ms) => Some(ms),
        },
    };
    let (tools_allow, tools_deny) = parse_tools(cx, at, obj.get("tools"));
    let prefix = parse_prefix(cx, at, obj, name, sep);
    let revisions = obj.get("revisions").filter(|r| !r.is_null()).and_then(|r| parse_revisions(cx, &at.key("revisions"), r));
    let (env_policy, max_restarts) = parse_process_keys(cx, at, obj, local);
    let power = parse_power(cx, at, obj, power);
    let trusted = obj.get("trusted").and_then(|v| cx.bool(&at.key("trusted"), v)).unwrap_or(false);
    let isolation = parse_isolation(cx, at, obj);
    let required = obj.get("required").and_then(|v| cx.bool(&at.key("required"), v)).unwrap_or(false);

    #[cfg(feature = "secrets")]
    let secrets = env.iter().chain(remote.iter().flat_map(|r| &r.headers)).any(|(_, v)| secret_refs(v).next().is_some());
    #[cfg(feature = "secrets")]
    if secrets && isolation == Isolation::Shared {
        let key = if local { "env" } else { "headers" };
        cx.err(&at.key(key), "uses a per-principal ${secret:...}: set \"isolation\": \"client\", so that each person's secret goes only to their own process or session");
    }
    #[cfg(feature = "secrets")]
    if remote.as_ref().and_then(|r| r.oauth.as_ref()?.per_principal.as_ref()).is_some() && isolation == Isolation::Shared {
        cx.err(&at.key("oauth"), "\"perPrincipal\" tokens: set \"isolation\": \"client\", so that each person's token goes only to their own session");
    }
    if remote.as_ref().and_then(|r| r.oauth.as_ref()?.token_exchange.as_ref()).is_some() && isolation == Isolation::Shared {
        cx.err(&at.key("oauth"), "\"tokenExchange\" tokens are each principal's own: set \"isolation\": \"client\", so that each person's token goes only to their own session");
    }
    if cx.errors.len() > n_errors {
        return Parsed::Invalid;
    }
    Parsed::Server(Box::new(ServerConfig {
        name: name.to_string(),
        command: command.unwrap_or_default(),
        args: args.unwrap_or_default(),
        env,
        cwd,
        timeout_ms,
        tools_allow,
        tools_deny,
        prefix,
        revisions,
        trusted,
        required,
        remote,
        env_policy,
        max_restarts,
        power,
        isolation,
    }))
}

/// A server name is 1 to [`MAX_NAME_LEN`] characters, none a control character.
fn check_name(cx: &mut Ctx<'_>, at: &Path, name: &str) {
    if name.is_empty() {
        cx.err(at, "server name must not be empty");
    } else if name.chars().count() > MAX_NAME_LEN {
        cx.err(at, format!("server name is longer than {MAX_NAME_LEN} characters"));
    } else if name.chars().any(|c| c.is_control()) {
        cx.err(at, "server name must not contain control characters");
    }
}

/// `"command"`: required for a local server, refused for a remote one.
fn parse_command(cx: &mut Ctx<'_>, at: &Path, obj: &Object, name: &str, local: bool) -> Option<String> {
    match obj.get("command") {
        None if !local => None,
        None => {
            cx.err(at, format!("server {name:?} has no \"command\" (the program to run)"));
            None
        }
        Some(_) if !local => {
            cx.err(at, "\"command\" and \"url\" both given: a server is either local or remote");
            None
        }
        Some(c) => match cx.string(&at.key("command"), c) {
            Some(c) if c.trim().is_empty() => {
                cx.err(&at.key("command"), "must not be empty");
                None
            }
            other => other,
        },
    }
}

/// `"tools": {"allow": [..], "deny": [..]}`.
fn parse_tools(cx: &mut Ctx<'_>, at: &Path, v: Option<&Value>) -> (Vec<String>, Vec<String>) {
    let (mut allow, mut deny) = (Vec::new(), Vec::new());
    match v {
        None | Some(Value::Null) => {}
        Some(Value::Object(t)) => {
            let tat = at.key("tools");
            cx.unknown_keys(&tat, t, &["allow", "deny"]);
            if let Some(a) = t.get("allow") {
                allow = cx.strings(&tat.key("allow"), a).unwrap_or_default();
                if matches!(a, Value::Array(v) if v.is_empty()) {
                    cx.warn(&tat.key("allow"), "an empty allow list allows every tool; use \"deny\": [\"*\"] to hide them all");
                }
            }
            if let Some(d) = t.get("deny") {
                deny = cx.strings(&tat.key("deny"), d).unwrap_or_default();
            }
        }
        Some(other) => cx.err(
            &at.key("tools"),
            format!("expected an object {{\"allow\": [...], \"deny\": [...]}}, found {}", type_name(other)),
        ),
    }
    (allow, deny)
}

/// Whether `s` may be used as a name prefix: ASCII letters, digits, `_`, `-`, `.`.
fn valid_prefix_chars(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// `"prefix"`, else the server's name; it must not contain `sep`, or names
/// could not be split back.
fn parse_prefix(cx: &mut Ctx<'_>, at: &Path, obj: &Object, name: &str, sep: &str) -> String {
    let prefix = match obj.get("prefix") {
        None => {
            if !name.is_empty() && !valid_prefix_chars(name) {
                cx.err(
                    at,
                    format!("server name {name:?} cannot prefix tool names (use letters, digits, `_`, `-`, `.`); rename it or set \"prefix\""),
                );
            }
            name.to_string()
        }
        Some(p) => {
            let pat = at.key("prefix");
            match cx.string(&pat, p) {
                Some(p) if !valid_prefix_chars(&p) => {
                    cx.err(&pat, format!("{p:?} may only use letters, digits, `_`, `-`, `.`"));
                    p
                }
                Some(p) if p.chars().count() > MAX_NAME_LEN => {
                    cx.err(&pat, format!("longer than {MAX_NAME_LEN} characters"));
                    p
                }
                Some(p) => p,
                None => String::new(),
            }
        }
    };
    if !prefix.is_empty() && prefix.contains(sep) {
        let where_ = if obj.contains_key("prefix") { at.key("prefix") } else { at.clone() };
        cx.err(
            &where_,
            format!("prefix {prefix:?} contains the separator {sep:?}, so names could not be split back; set another \"prefix\" or \"separator\""),
        );
    }
    prefix
}

/// `"revisions"`: protocol revisions (like `2025-06-18`) to offer, at least one.
fn parse_revisions(cx: &mut Ctx<'_>, rat: &Path, r: &Value) -> Option<Vec<String>> {
    let list = cx.strings(rat, r)?;
    if list.is_empty() {
        cx.err(rat, "must list at least one protocol revision, or be left out");
    }
    for (i, r) in list.iter().enumerate() {
        let ok = r.len() == 10
            && r.bytes().enumerate().all(|(j, b)| if j == 4 || j == 7 { b == b'-' } else { b.is_ascii_digit() });
        if !ok {
            cx.err(&rat.idx(i), format!("{r:?} is not a protocol revision (like \"2025-06-18\")"));
        }
    }
    Some(list)
}
