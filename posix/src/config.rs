//! The config file: Claude-Desktop-compatible JSON plus a few mcpx keys.
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "github": {
//!       "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
//!       "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"},
//!       "cwd": "~/src", "disabled": false, "timeoutMs": 60000,
//!       "tools": {"allow": ["*"], "deny": ["delete_*"]},
//!       "prefix": "gh", "revisions": ["2025-06-18"],
//!       "inheritEnv": false, "envAllow": ["GITHUB_*"], "maxRestarts": 10
//!     },
//!     "remote": {
//!       "url": "https://example.com/mcp",
//!       "headers": {"Authorization": "Bearer ${TOKEN}"},
//!       "caFile": "~/ca.pem", "timeoutMs": 60000
//!     }
//!   },
//!   "separator": "__", "roots": ["~/src"], "logLevel": "info",
//!   "cacheTtlMs": 60000, "cachePublic": false, "inputTtlMs": 300000,
//!   "shutdownGraceMs": 10000, "startupWaitMs": 10000
//! }
//! ```
//!
//! `${VAR}` in any string value is replaced by the environment variable (an
//! error names it when unset); `${VAR:-default}` gives a default (also when
//! VAR is empty); `$${` writes a literal `${`; any other `$` is kept. Relative
//! `cwd`, `caFile` and `roots` paths are taken from the config file's folder,
//! `~/` from HOME. Servers keep the file's order. Errors and warnings carry
//! `file:line:column`.
//!
//! A server with `"url"` is remote: Streamable HTTP, falling back to the
//! 2024-11-05 HTTP+SSE transport; `"type": "http"` (or `"streamable-http"`)
//! and `"type": "sse"` pin one of the two. `"headers"` go with every request,
//! `"caFile"` (PEM) adds trusted CAs for https.
//!
//! `"inheritEnv"` and `"envAllow"` choose what a local server inherits of
//! mcpx's environment (see `childenv`); `"maxRestarts"` bounds the restarts
//! of a server that keeps failing (see `backoff`).
//!
//! `"cacheTtlMs"` and `"cachePublic"` are the caching hints (`ttlMs`,
//! `cacheScope`) 2026-07-28 clients get on results of servers that give none;
//! `"inputTtlMs"` is how long such a client has to answer a server's request
//! for input.
//!
//! `"shutdownGraceMs"` is how long a SIGTERM/SIGINT waits for the answers
//! to requests in flight before answering them with an error (see `serve`).

use std::fmt;
use std::path::{Path as FsPath, PathBuf};

use serde_json::Value;

use crate::jsonpos::{self, Path};
use crate::log::Level;

/// The default separator between a server's prefix and a tool name.
pub use mcpx_core::names::DEFAULT_SEPARATOR;
/// Longest server name or prefix accepted.
pub const MAX_NAME_LEN: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Loaded from this file.
    File(PathBuf),
    /// No config file was found: the built-in demo hub.
    BuiltIn,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::File(p) => write!(f, "{}", p.display()),
            Source::BuiltIn => f.write_str("built-in default (no config file found)"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    pub uri: String,
    pub name: Option<String>,
}

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
    /// Set for a remote server (`"url"`); `command`, `args`, `env` and
    /// `cwd` are then empty.
    pub remote: Option<RemoteServer>,
    /// `"inheritEnv"`, `"envAllow"`, and the variables the config reads as
    /// secrets: what the process inherits of mcpx's environment.
    pub env_policy: crate::childenv::Policy,
    /// `"maxRestarts"`: failed attempts in a row retried before giving up.
    pub max_restarts: u32,
    /// `"lazy"` and `"idleStopMs"`.
    pub power: Power,
    /// `"isolation"` and `"maxInstances"`.
    pub isolation: crate::hub::Isolation,
}

/// Longest `"maxInstances"` accepted.
const MAX_MAX_INSTANCES: u64 = 256;

/// `"isolation": "shared" | "client"` (default shared) and `"maxInstances"`
/// (with `"client"`; default 8): one process for every client, or one per
/// client principal (`hub::isolation`). A remote server's key is refused:
/// mcpx's one session with it cannot be split per client.
fn parse_isolation(cx: &mut Ctx<'_>, at: &Path, obj: &serde_json::Map<String, Value>, local: bool) -> crate::hub::Isolation {
    use crate::hub::Isolation;
    let mode = obj.get("isolation").and_then(|v| cx.string(&at.key("isolation"), v));
    let max = match obj.get("maxInstances") {
        None => crate::hub::DEFAULT_MAX_INSTANCES,
        Some(v) => match v.as_u64().filter(|n| (1..=MAX_MAX_INSTANCES).contains(n)) {
            Some(n) => n as usize,
            None => {
                cx.err(&at.key("maxInstances"), format!("expected a whole number from 1 to {MAX_MAX_INSTANCES}, found {v}"));
                crate::hub::DEFAULT_MAX_INSTANCES
            }
        },
    };
    match mode.as_deref() {
        None | Some("shared") => {
            if obj.contains_key("maxInstances") {
                cx.err(&at.key("maxInstances"), "only applies with \"isolation\": \"client\"");
            }
            Isolation::Shared
        }
        Some("client") if !local => {
            cx.err(&at.key("isolation"), "\"client\" isolation is for local (command) servers: mcpx has one session with a remote server; leave it \"shared\"");
            Isolation::Shared
        }
        Some("client") => Isolation::Client { max },
        Some(other) => {
            cx.err(&at.key("isolation"), format!("{other:?} is not \"shared\" or \"client\""));
            Isolation::Shared
        }
    }
}

/// When a server's process runs: `"lazy": true` starts it at its first use
/// instead of with mcpx (its tools are known from its last listing, kept in
/// the state directory); `"idleStopMs": N` stops it after N ms without a
/// request, until the next one. At the top level they are every server's
/// defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Power {
    pub lazy: bool,
    pub idle_stop_ms: Option<u64>,
}

/// The keys of [`Power`] in `obj`, over `defaults`.
fn parse_power(cx: &mut Ctx<'_>, at: &Path, obj: &serde_json::Map<String, Value>, defaults: Power) -> Power {
    let mut p = defaults;
    if let Some(v) = obj.get("lazy") {
        p.lazy = cx.bool(&at.key("lazy"), v).unwrap_or(p.lazy);
    }
    match obj.get("idleStopMs") {
        None => {}
        Some(Value::Null) => p.idle_stop_ms = None,
        Some(v) => match v.as_u64() {
            Some(n) if n > 0 => p.idle_stop_ms = Some(n),
            _ => cx.err(&at.key("idleStopMs"), format!("expected a positive whole number of milliseconds, found {v}")),
        },
    }
    p
}

/// Where and how to reach a remote server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteServer {
    pub url: String,
    /// Sent with every request, in file order.
    pub headers: Vec<(String, String)>,
    pub ca_file: Option<PathBuf>,
    pub mode: crate::remote::Mode,
    /// `"oauth"`: authorize with OAuth 2.1 instead of static headers.
    pub oauth: Option<crate::remote::oauth::OAuthSpec>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub source: Source,
    /// Enabled, supported servers in file order.
    pub servers: Vec<ServerConfig>,
    /// Names of servers with `"disabled": true`.
    pub disabled: Vec<String>,
    pub separator: String,
    pub roots: Vec<Root>,
    pub log_level: Option<Level>,
    /// `"cacheTtlMs"`, `"cachePublic"`: the caching hints given to modern
    /// clients for results of servers that give none (legacy servers).
    pub cache_ttl_ms: Option<u64>,
    pub cache_public: Option<bool>,
    /// `"inputTtlMs"`: how long a modern client has to answer a server's
    /// request for input (the life of its `requestState`).
    pub input_ttl_ms: Option<u64>,
    /// `"shutdownGraceMs"`: how long a signal's drain waits for answers.
    pub shutdown_grace_ms: Option<u64>,
    /// `"startupWaitMs"`: how long a client's `initialize` waits for servers still starting.
    pub startup_wait_ms: Option<u64>,
    /// `"auth"` and `"http"`: settings of `mcpx serve --http`.
    pub http: HttpSettings,
    /// `"policy"`: limits, catalogs, validation, audit, metrics (see [`PolicyConfig`]).
    pub policy: PolicyConfig,
    /// `"tasks"`: caps of the tasks mcpx runs and relays (see [`TaskSettings`]).
    pub tasks: TaskSettings,
    /// `"state"` and `"cluster"`: replicas sharing state (see [`ClusterSettings`]).
    pub cluster: ClusterSettings,
    /// Non-fatal problems, each formatted `file:line:col: message`.
    pub warnings: Vec<String>,
    /// The file's text, to point at problems found later (empty if built in).
    pub text: String,
}

impl Config {
    /// `file:line:col` of the member at `path`, for problems found after
    /// parsing (e.g. by the hub).
    pub fn position(&self, path: &Path) -> Option<String> {
        let Source::File(f) = &self.source else { return None };
        let off = jsonpos::locate(&self.text, path)?;
        let (l, c) = jsonpos::line_col(&self.text, off);
        Some(format!("{}:{l}:{c}", f.display()))
    }
}

/// Settings for serving MCP over HTTP (`mcpx serve --http ADDR`):
/// `"auth": {"bearer": "${MCPX_TOKEN}", "tokens": {"alice": "${ALICE_TOKEN}"},
/// "oauth": {"issuer", "audience", "scopes", "jwksUrl", "introspectionUrl",
/// "clientId", "clientSecret"}}` and
/// `"http": {"allowedOrigins": [..], "allowedHosts": [..], "maxBodyBytes": n,
/// "maxSessions": n, "maxConnections": n, "sessionIdleMs": n}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpSettings {
    pub bearer: Option<String>,
    /// `"auth": {"tokens": {..}, "oauth": {..}}`.
    pub auth: crate::http::AuthSettings,
    pub allowed_origins: Vec<String>,
    pub allowed_hosts: Vec<String>,
    pub max_body: Option<u64>,
    pub max_sessions: Option<u64>,
    pub max_connections: Option<u64>,
    pub session_idle_ms: Option<u64>,
}

/// One problem in a config file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    pub line: Option<(usize, usize)>,
    pub msg: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some((l, c)) => write!(f, "{}:{}:{}: {}", self.file, l, c, self.msg),
            None => write!(f, "{}: {}", self.file, self.msg),
        }
    }
}

/// Every error found in a config file (at least one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub Vec<Problem>);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    fn one(file: &str, msg: String) -> ConfigError {
        ConfigError(vec![Problem { file: file.to_string(), line: None, msg }])
    }
}

/// Where to find the environment (a function so tests need not touch the
/// process environment).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The real process environment.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
}

/// mcpx's state folder: `$XDG_STATE_HOME/mcpx/`, else
/// `~/.local/state/mcpx/` (list caches, OAuth tokens, tasks); `None` when
/// the environment names neither.
pub fn state_dir(env: EnvLookup<'_>) -> Option<PathBuf> {
    let nonempty = |k: &str| env(k).filter(|v| !v.is_empty());
    let state = match nonempty("XDG_STATE_HOME") {
        Some(x) => PathBuf::from(x),
        None => PathBuf::from(nonempty("HOME")?).join(".local").join("state"),
    };
    Some(state.join("mcpx"))
}

/// Files tried, in order, when no `--config` is given.
pub fn search_path(env: EnvLookup<'_>) -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("mcpx.json")];
    match env("XDG_CONFIG_HOME").filter(|s| !s.is_empty()) {
        Some(x) => out.push(PathBuf::from(x).join("mcpx").join("config.json")),
        None => {
            if let Some(h) = env("HOME").filter(|s| !s.is_empty()) {
                out.push(PathBuf::from(h).join(".config").join("mcpx").join("config.json"));
            }
        }
    }
    out
}

/// Loads `explicit` (which must exist), else the first file of
/// [`search_path`] that exists, else the built-in default.
pub fn load(explicit: Option<&FsPath>, env: EnvLookup<'_>) -> Result<Config, ConfigError> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => match search_path(env).into_iter().find(|p| p.is_file()) {
            Some(p) => p,
            None => return Ok(builtin_default()),
        },
    };
    let shown = path.display().to_string();
    let src = std::fs::read_to_string(&path)
        .map_err(|e| ConfigError::one(&shown, format!("cannot read config file: {e}")))?;
    let base = path
        .parent()
        .map(|p| if p.as_os_str().is_empty() { FsPath::new(".") } else { p })
        .unwrap_or(FsPath::new("."))
        .to_path_buf();
    let mut cfg = parse(&src, &shown, &base, env)?;
    cfg.source = Source::File(path);
    Ok(cfg)
}

/// The hub used when no config file exists: two instances of this binary's
/// own demo server (`example-server --demo`: a few harmless tools, no test
/// fixtures), so a new user sees aggregation at once.
pub fn builtin_default() -> Config {
    let exe = std::env::current_exe()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "mcpx".to_string());
    let server = |name: &str| ServerConfig {
        name: name.to_string(),
        command: exe.clone(),
        args: vec!["example-server".into(), "--demo".into(), "--name".into(), name.to_string()],
        env: Vec::new(),
        cwd: None,
        timeout_ms: None,
        tools_allow: Vec::new(),
        tools_deny: Vec::new(),
        prefix: name.to_string(),
        revisions: None,
        trusted: false,
        remote: None,
        env_policy: Default::default(),
        max_restarts: crate::backoff::DEFAULT_MAX_RESTARTS,
        power: Power::default(),
        isolation: Default::default(),
    };
    Config {
        source: Source::BuiltIn,
        servers: vec![server("demo"), server("notes")],
        disabled: Vec::new(),
        separator: DEFAULT_SEPARATOR.to_string(),
        roots: Vec::new(),
        log_level: None,
        cache_ttl_ms: None,
        cache_public: None,
        input_ttl_ms: None,
        shutdown_grace_ms: None,
        startup_wait_ms: None,
        http: HttpSettings::default(),
        policy: PolicyConfig::default(),
        tasks: TaskSettings::default(),
        cluster: ClusterSettings::default(),
        warnings: Vec::new(),
        text: String::new(),
    }
}

/// Replaces `${VAR}` and `${VAR:-default}`; `$${` is a literal `${`. Any other
/// `$` is kept as is.
pub fn expand(s: &str, env: EnvLookup<'_>) -> Result<String, String> {
    if !s.contains('$') {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix("${") {
            out.push_str("${");
            rest = tail;
        } else if let Some(body_on) = after.strip_prefix('{') {
            let end = body_on.find('}').ok_or_else(|| {
                format!("unterminated `${{` in {s:?} (write `$${{` for a literal `${{`)")
            })?;
            let body = &body_on[..end];
            let (name, default) = match body.find(":-") {
                Some(i) => (&body[..i], Some(&body[i + 2..])),
                None => (body, None),
            };
            let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!(
                    "`${{{body}}}` is not a valid variable reference (use ${{NAME}} or ${{NAME:-default}}; `$${{` for a literal `${{`)"
                ));
            }
            match (env(name), default) {
                (Some(v), Some(d)) if v.is_empty() => out.push_str(d),
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => {
                    return Err(format!(
                        "environment variable {name} is not set (referenced as `${{{name}}}`; set it, or write `${{{name}:-default}}`)"
                    ))
                }
            }
            rest = &body_on[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Whether `s` may be used as a name prefix: ASCII letters, digits, `_`, `-`, `.`.
fn valid_prefix_chars(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

struct Ctx<'a> {
    src: &'a str,
    file: &'a str,
    base: &'a FsPath,
    env: EnvLookup<'a>,
    errors: Vec<Problem>,
    warnings: Vec<String>,
}

impl Ctx<'_> {
    fn problem(&self, at: &Path, msg: String) -> Problem {
        let line = jsonpos::locate(self.src, at).map(|o| jsonpos::line_col(self.src, o));
        Problem { file: self.file.to_string(), line, msg }
    }
    fn err(&mut self, at: &Path, msg: impl Into<String>) {
        let p = self.problem(at, format!("{at}: {}", msg.into()));
        self.errors.push(p);
    }
    fn warn(&mut self, at: &Path, msg: impl Into<String>) {
        let p = self.problem(at, format!("{at}: {}", msg.into()));
        self.warnings.push(p.to_string());
    }

    fn unknown_keys(&mut self, at: &Path, obj: &serde_json::Map<String, Value>, known: &[&str]) {
        for k in obj.keys() {
            if !known.contains(&k.as_str()) {
                self.warn(
                    &at.key(k),
                    format!("unknown key {k:?} ignored (known keys here: {})", known.join(", ")),
                );
            }
        }
    }

    fn string(&mut self, at: &Path, v: &Value) -> Option<String> {
        match v {
            Value::String(s) => match expand(s, self.env) {
                Ok(s) => Some(s),
                Err(e) => {
                    self.err(at, e);
                    None
                }
            },
            other => {
                self.err(at, format!("expected a string, found {}", type_name(other)));
                None
            }
        }
    }

    fn strings(&mut self, at: &Path, v: &Value) -> Option<Vec<String>> {
        let Value::Array(items) = v else {
            self.err(at, format!("expected an array of strings, found {}", type_name(v)));
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match self.string(&at.idx(i), item) {
                Some(s) => out.push(s),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn bool(&mut self, at: &Path, v: &Value) -> Option<bool> {
        match v {
            Value::Bool(b) => Some(*b),
            other => {
                self.err(at, format!("expected true or false, found {}", type_name(other)));
                None
            }
        }
    }

    /// `~` and `~/…` to `$HOME`, relative paths against the config's folder.
    fn path(&mut self, at: &Path, s: &str) -> Option<PathBuf> {
        let p = if s == "~" || s.starts_with("~/") {
            match (self.env)("HOME").filter(|h| !h.is_empty()) {
                Some(h) => PathBuf::from(h).join(s.trim_start_matches('~').trim_start_matches('/')),
                None => {
                    self.err(at, "`~` used but HOME is not set");
                    return None;
                }
            }
        } else {
            PathBuf::from(s)
        };
        Some(if p.is_absolute() { p } else { self.base.join(p) })
    }
}

/// Parses config text. `file` names it in messages; `base` resolves relative
/// paths. `source` of the result is `BuiltIn` until [`load`] sets it.
pub fn parse(src: &str, file: &str, base: &FsPath, env: EnvLookup<'_>) -> Result<Config, ConfigError> {
    let root: Value = serde_json::from_str(src).map_err(|e| {
        let mut msg = e.to_string();
        if let Some(i) = msg.rfind(" at line ") {
            msg.truncate(i);
        }
        let line = (e.line() > 0).then(|| (e.line(), e.column()));
        ConfigError(vec![Problem { file: file.to_string(), line, msg: format!("invalid JSON: {msg}") }])
    })?;
    let mut cx = Ctx { src, file, base, env, errors: Vec::new(), warnings: Vec::new() };
    let top = Path::root();
    let Value::Object(obj) = &root else {
        cx.err(&top, format!("expected a JSON object with \"mcpServers\", found {}", type_name(&root)));
        return Err(ConfigError(cx.errors));
    };
    cx.unknown_keys(
        &top,
        obj,
        &["mcpServers", "separator", "roots", "logLevel", "auth", "http", "cacheTtlMs", "cachePublic", "inputTtlMs", "shutdownGraceMs", "startupWaitMs", "policy", "tasks", "lazy", "idleStopMs", "state", "cluster"],
    );
    let power = parse_power(&mut cx, &top, obj, Power::default());
    let http = parse_http(&mut cx, &top, obj);
    let policy = parse_policy(&mut cx, &top, obj);
    let tasks = parse_tasks(&mut cx, &top, obj);
    let cluster = parse_cluster(&mut cx, &top, obj);

    let separator = match obj.get("separator") {
        None => DEFAULT_SEPARATOR.to_string(),
        Some(v) => match cx.string(&top.key("separator"), v) {
            Some(s) if s.is_empty() => {
                cx.err(&top.key("separator"), "must not be empty");
                DEFAULT_SEPARATOR.to_string()
            }
            Some(s) if !s.bytes().all(mcpx_core::names::is_separator_byte) => {
                cx.err(
                    &top.key("separator"),
                    format!("{s:?} may only use letters, digits, `_`, `-` and `.` (tool names allow no more)"),
                );
                DEFAULT_SEPARATOR.to_string()
            }
            Some(s) => s,
            None => DEFAULT_SEPARATOR.to_string(),
        },
    };

    let log_level = obj.get("logLevel").and_then(|v| {
        let at = top.key("logLevel");
        let s = cx.string(&at, v)?;
        let l = Level::parse(&s);
        if l.is_none() {
            cx.err(&at, format!("{s:?} is not a log level (error, warn, info or debug)"));
        }
        l
    });

    let mut ms = |key: &str, min: u64| match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n) if n >= min => Some(n),
            _ => {
                let what = if min > 0 { "a positive" } else { "a" };
                cx.err(&top.key(key), format!("expected {what} whole number of milliseconds, found {v}"));
                None
            }
        },
    };
    let cache_ttl_ms = ms("cacheTtlMs", 0);
    let input_ttl_ms = ms("inputTtlMs", 1);
    let shutdown_grace_ms = ms("shutdownGraceMs", 0);
    let startup_wait_ms = ms("startupWaitMs", 0);
    let cache_public = match obj.get("cachePublic") {
        None | Some(Value::Null) => None,
        Some(v) => cx.bool(&top.key("cachePublic"), v),
    };

    let roots = match obj.get("roots") {
        None => Vec::new(),
        Some(v) => parse_roots(&mut cx, &top.key("roots"), v),
    };

    let mut servers = Vec::new();
    let mut disabled = Vec::new();
    let at_servers = top.key("mcpServers");
    match obj.get("mcpServers") {
        None => cx.err(&top, "missing \"mcpServers\" (an object of servers by name)"),
        Some(Value::Object(map)) => {
            // serde_json collapses duplicate keys and does not keep order:
            // take both from the text.
            let order = jsonpos::keys(src, &at_servers).unwrap_or_default();
            let mut seen: Vec<&str> = Vec::new();
            for (name, off) in &order {
                if seen.contains(&name.as_str()) {
                    let (l, c) = jsonpos::line_col(src, *off);
                    cx.errors.push(Problem {
                        file: file.to_string(),
                        line: Some((l, c)),
                        msg: format!("{}: duplicate server name", at_servers.key(name)),
                    });
                    continue;
                }
                seen.push(name);
                let Some(v) = map.get(name) else { continue };
                match parse_server(&mut cx, &at_servers.key(name), name, v, &separator, power) {
                    Parsed::Server(s) => servers.push(*s),
                    Parsed::Disabled => disabled.push(name.clone()),
                    Parsed::Skipped | Parsed::Invalid => {}
                }
            }
        }
        Some(other) => cx.err(
            &at_servers,
            format!("expected an object of servers by name, found {}", type_name(other)),
        ),
    }

    // Two servers with one prefix would shadow each other's names.
    for (i, a) in servers.iter().enumerate() {
        for b in &servers[..i] {
            if a.prefix == b.prefix {
                let what = if a.prefix.is_empty() {
                    "both have an empty prefix".to_string()
                } else {
                    format!("both use the prefix {:?}", a.prefix)
                };
                let at = at_servers.key(&a.name);
                cx.err(
                    &at,
                    format!("servers {:?} and {:?} {what}; give one a different \"prefix\"", b.name, a.name),
                );
            }
        }
    }

    if !cx.errors.is_empty() {
        return Err(ConfigError(cx.errors));
    }
    mark_secrets(obj, &mut servers);
    Ok(Config {
        source: Source::BuiltIn,
        servers,
        disabled,
        separator,
        roots,
        log_level,
        cache_ttl_ms,
        cache_public,
        input_ttl_ms,
        shutdown_grace_ms,
        startup_wait_ms,
        http,
        policy,
        tasks,
        cluster,
        warnings: cx.warnings,
        text: src.to_string(),
    })
}

/// `"auth"` and `"http"` (see [`HttpSettings`]).
fn parse_http(cx: &mut Ctx<'_>, top: &Path, obj: &serde_json::Map<String, Value>) -> HttpSettings {
    let mut out = HttpSettings::default();
    match obj.get("auth") {
        None | Some(Value::Null) => {}
        Some(Value::Object(a)) => {
            let at = top.key("auth");
            cx.unknown_keys(&at, a, &["bearer", "tokens", "oauth"]);
            if let Some(v) = a.get("bearer") {
                match cx.string(&at.key("bearer"), v) {
                    Some(t) if t.is_empty() => cx.err(&at.key("bearer"), "the token is empty"),
                    Some(t) => out.bearer = Some(t),
                    None => {}
                }
            }
            if let Some(v) = a.get("tokens") {
                out.auth.tokens = parse_tokens(cx, &at.key("tokens"), v);
            }
            if let Some(v) = a.get("oauth") {
                out.auth.oauth = parse_resource_server(cx, &at.key("oauth"), v);
            }
        }
        Some(other) => cx.err(&top.key("auth"), format!("expected an object like {{\"bearer\": \"${{MCPX_TOKEN}}\"}}, found {}", type_name(other))),
    }
    match obj.get("http") {
        None | Some(Value::Null) => {}
        Some(Value::Object(h)) => {
            let at = top.key("http");
            let nums = ["maxBodyBytes", "maxSessions", "maxConnections", "sessionIdleMs"];
            cx.unknown_keys(&at, h, &["allowedOrigins", "allowedHosts", "maxBodyBytes", "maxSessions", "maxConnections", "sessionIdleMs"]);
            if let Some(v) = h.get("allowedOrigins") {
                out.allowed_origins = cx.strings(&at.key("allowedOrigins"), v).unwrap_or_default();
            }
            if let Some(v) = h.get("allowedHosts") {
                out.allowed_hosts = cx.strings(&at.key("allowedHosts"), v).unwrap_or_default();
            }
            for key in nums {
                let Some(v) = h.get(key) else { continue };
                let n = match v.as_u64() {
                    Some(n) if n > 0 => Some(n),
                    _ => {
                        cx.err(&at.key(key), format!("expected a positive whole number, found {v}"));
                        None
                    }
                };
                match key {
                    "maxBodyBytes" => out.max_body = n,
                    "maxSessions" => out.max_sessions = n,
                    "maxConnections" => out.max_connections = n,
                    _ => out.session_idle_ms = n,
                }
            }
        }
        Some(other) => cx.err(&top.key("http"), format!("expected an object, found {}", type_name(other))),
    }
    out
}

// --- "tasks" (issue 14; the hub side is crate::hub::tasks) -----------------

/// `"tasks"`: `{"maxPerClient": n, "maxTasks": n, "maxResultBytes": n,
/// "defaultTtlMs": n, "maxTtlMs": n, "pollIntervalMs": n, "maxPollIntervalMs": n}`,
/// each optional (positive whole numbers); absent ones keep the hub's defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskSettings {
    pub max_per_client: Option<u64>,
    pub max_tasks: Option<u64>,
    pub max_result_bytes: Option<u64>,
    pub default_ttl_ms: Option<u64>,
    pub max_ttl_ms: Option<u64>,
    pub poll_ms: Option<u64>,
    pub max_poll_ms: Option<u64>,
}

impl TaskSettings {
    /// The hub's task options with these settings applied.
    pub fn apply(&self, o: &mut crate::hub::TaskOptions) {
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        o.max_live_per_principal = self.max_per_client.map_or(o.max_live_per_principal, size);
        o.max_tasks = self.max_tasks.map_or(o.max_tasks, size);
        o.max_result_bytes = self.max_result_bytes.map_or(o.max_result_bytes, size);
        o.default_ttl_ms = self.default_ttl_ms.unwrap_or(o.default_ttl_ms);
        o.max_ttl_ms = self.max_ttl_ms.unwrap_or(o.max_ttl_ms);
        o.poll_ms = self.poll_ms.unwrap_or(o.poll_ms);
        o.max_poll_ms = self.max_poll_ms.unwrap_or(o.max_poll_ms);
    }
}

fn parse_tasks(cx: &mut Ctx<'_>, top: &Path, obj: &serde_json::Map<String, Value>) -> TaskSettings {
    let mut out = TaskSettings::default();
    let at = top.key("tasks");
    let t = match obj.get("tasks") {
        None | Some(Value::Null) => return out,
        Some(Value::Object(t)) => t,
        Some(other) => {
            cx.err(&at, format!("expected an object like {{\"maxPerClient\": 16}}, found {}", type_name(other)));
            return out;
        }
    };
    let keys = ["maxPerClient", "maxTasks", "maxResultBytes", "defaultTtlMs", "maxTtlMs", "pollIntervalMs", "maxPollIntervalMs"];
    cx.unknown_keys(&at, t, &keys);
    for key in keys {
        let Some(v) = t.get(key) else { continue };
        let Some(n) = v.as_u64().filter(|n| *n > 0) else {
            cx.err(&at.key(key), format!("expected a positive whole number, found {v}"));
            continue;
        };
        let slot = match key {
            "maxPerClient" => &mut out.max_per_client,
            "maxTasks" => &mut out.max_tasks,
            "maxResultBytes" => &mut out.max_result_bytes,
            "defaultTtlMs" => &mut out.default_ttl_ms,
            "maxTtlMs" => &mut out.max_ttl_ms,
            "pollIntervalMs" => &mut out.poll_ms,
            _ => &mut out.max_poll_ms,
        };
        *slot = Some(n);
    }
    out
}

// --- "state" and "cluster" (issue 16; the hub side is crate::hub::shared) ---

/// The `requestState` sealing key shared by replicas: 32 bytes. Its
/// `Debug` shows nothing of it.
#[derive(Clone, PartialEq, Eq)]
pub struct StateKey(pub [u8; 32]);

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StateKey(<secret>)")
    }
}

impl StateKey {
    /// 64 hex digits, or base64 (standard or URL-safe, padded or not) of
    /// 32 bytes; surrounding whitespace is ignored.
    pub fn parse(text: &str) -> Result<StateKey, String> {
        use base64::Engine as _;
        let t = text.trim();
        let hex = (t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| (0..32).map(|i| u8::from_str_radix(&t[2 * i..2 * i + 2], 16).unwrap_or(0)).collect::<Vec<u8>>());
        let engines = [base64::engine::general_purpose::STANDARD, base64::engine::general_purpose::URL_SAFE];
        let b64 = || engines.iter().find_map(|e| e.decode(t).ok().or_else(|| e.decode(format!("{t}=")).ok()));
        match hex.or_else(b64).map(<[u8; 32]>::try_from) {
            Some(Ok(k)) => Ok(StateKey(k)),
            Some(Err(v)) => Err(format!("the key is {} bytes; it must be 32 (e.g. `openssl rand -hex 32`)", v.len())),
            None => Err("the key is neither 64 hex digits nor base64 of 32 bytes (e.g. `openssl rand -hex 32`)".to_string()),
        }
    }
}

/// `"state": {"url": "redis://HOST:PORT/DB", "keyFile": "PATH"}` and
/// `"cluster": {"replica": "r1", "peers": {"r2": "http://10.0.0.2:7402"}}`,
/// with the environment's `MCPX_STATE_URL`, `MCPX_STATE_KEY` (the key
/// itself, before `keyFile`) and `MCPX_REPLICA` (before `cluster.replica`).
/// All absent: one mcpx, state in memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterSettings {
    /// The shared store (Redis or Valkey).
    pub state_url: Option<String>,
    /// The sealing key every replica shares.
    pub state_key: Option<StateKey>,
    /// This replica's id; `Some` = in a cluster.
    pub replica: Option<String>,
    /// The other replicas: id and base URL of their internal hop.
    pub peers: Vec<(String, String)>,
}

impl ClusterSettings {
    /// What the hub needs of these settings.
    pub fn hub_options(&self) -> crate::hub::ClusterOptions {
        crate::hub::ClusterOptions {
            replica: self.replica.clone(),
            peers: self.peers.iter().map(|(id, _)| id.clone()).collect(),
            shared: self.state_url.is_some(),
            state_key: self.state_key.as_ref().map(|k| k.0),
            ..Default::default()
        }
    }
}

/// The environment variables that are settings of their own (not `${VAR}`
/// references of the config): unset, they mean "not configured".
pub const SETTING_VARS: [&str; 3] = ["MCPX_STATE_URL", "MCPX_STATE_KEY", "MCPX_REPLICA"];

fn parse_cluster(cx: &mut Ctx<'_>, top: &Path, obj: &serde_json::Map<String, Value>) -> ClusterSettings {
    let mut out = ClusterSettings::default();
    let env = |k: &str| (cx.env)(k).filter(|v| !v.trim().is_empty());
    let [env_url, env_key, env_replica] = SETTING_VARS.map(env);
    let object = |cx: &mut Ctx<'_>, key: &str, example: &str| match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::Object(o)) => Some(o.clone()),
        Some(other) => {
            cx.err(&top.key(key), format!("expected an object like {example}, found {}", type_name(other)));
            None
        }
    };
    let at = top.key("state");
    let state = object(cx, "state", r#"{"url": "redis://127.0.0.1:6379/0"}"#);
    let mut key_file = None;
    if let Some(st) = &state {
        cx.unknown_keys(&at, st, &["url", "keyFile"]);
        out.state_url = st.get("url").and_then(|v| cx.string(&at.key("url"), v));
        key_file = st.get("keyFile").and_then(|v| cx.string(&at.key("keyFile"), v)).and_then(|s| cx.path(&at.key("keyFile"), &s));
    }
    if let Some(u) = env_url {
        out.state_url = Some(u);
    }
    if let Some(u) = &out.state_url {
        if !(u.starts_with("redis://") || u.starts_with("rediss://")) {
            cx.err(&at.key("url"), format!("{u:?} is not a Redis URL (redis://HOST:PORT/DB; from \"state.url\" or MCPX_STATE_URL)"));
        }
    }
    let at = top.key("cluster");
    let cluster = object(cx, "cluster", r#"{"replica": "r1", "peers": {"r2": "http://127.0.0.1:7402"}}"#);
    if let Some(cl) = &cluster {
        cx.unknown_keys(&at, cl, &["replica", "peers"]);
        out.replica = cl.get("replica").and_then(|v| cx.string(&at.key("replica"), v));
        match cl.get("peers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(peers)) => {
                for (id, url) in peers {
                    let pat = at.key("peers").key(id);
                    let Some(url) = cx.string(&pat, url) else { continue };
                    if !crate::hub::shared::valid_replica_id(id) {
                        cx.err(&pat, format!("{id:?} is not a replica id (1 to {} of A-Z a-z 0-9 _ -)", crate::hub::shared::MAX_REPLICA_LEN));
                    } else if !(url.starts_with("http://") || url.starts_with("https://")) {
                        cx.err(&pat, format!("{url:?} is not an http:// or https:// URL of that replica's internal hop"));
                    } else {
                        out.peers.push((id.clone(), url));
                    }
                }
            }
            Some(other) => cx.err(&at.key("peers"), format!("expected an object of replica ids to URLs, found {}", type_name(other))),
        }
    }
    if let Some(r) = env_replica {
        out.replica = Some(r);
    }
    // The key is read only when something shares state: without "state"
    // and "cluster", MCPX_STATE_KEY means nothing to this mcpx.
    let at = top.key("state");
    if out.state_url.is_some() || out.replica.is_some() {
        match (env_key, key_file) {
            (Some(k), _) => match StateKey::parse(&k) {
                Ok(k) => out.state_key = Some(k),
                Err(why) => cx.err(&at, format!("MCPX_STATE_KEY: {why}")),
            },
            (None, Some(f)) => match std::fs::read(&f) {
                Ok(bytes) if bytes.len() == 32 => out.state_key = Some(StateKey(bytes.try_into().unwrap_or([0; 32]))),
                Ok(bytes) => match StateKey::parse(&String::from_utf8_lossy(&bytes)) {
                    Ok(k) => out.state_key = Some(k),
                    Err(why) => cx.err(&at.key("keyFile"), format!("{}: {why}", f.display())),
                },
                Err(e) => cx.err(&at.key("keyFile"), format!("cannot read {}: {e}", f.display())),
            },
            (None, None) => {}
        }
    }
    let at = top.key("cluster");
    if let Some(r) = &out.replica {
        if !crate::hub::shared::valid_replica_id(r) {
            cx.err(&at.key("replica"), format!("{r:?} is not a replica id (1 to {} of A-Z a-z 0-9 _ -; from \"cluster.replica\" or MCPX_REPLICA)", crate::hub::shared::MAX_REPLICA_LEN));
        }
        if out.peers.iter().any(|(id, _)| id == r) {
            cx.err(&at.key("peers").key(r), format!("names this replica itself ({r:?})"));
        }
        if out.state_url.is_none() {
            cx.err(&at, "replicas need shared state: set \"state\": {\"url\": \"redis://HOST:PORT/DB\"} (or MCPX_STATE_URL), or a requestState redeemed on one replica could be replayed on another");
        }
        if out.state_key.is_none() {
            cx.err(&at, "replicas need one sealing key: set MCPX_STATE_KEY (64 hex digits) or \"state\": {\"keyFile\": PATH}, the same on every replica");
        }
    } else if cluster.is_some() {
        cx.err(&at.key("replica"), "missing: this replica's id (or MCPX_REPLICA)");
    }
    out
}

// --- "policy" (issue 17; the modules are in crate::policy) -----------------

/// `"policy"`:
/// `{"rateLimits": {..} | false, "catalogs": {PRINCIPAL: {..}},
/// "validate": {..}, "audit": {..}, "metrics": true,
/// "untrustedAnnotations": "mark" | "remove"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyConfig {
    pub rate_limits: crate::policy::ratelimit::RateLimitConfig,
    pub catalogs: crate::policy::catalog_acl::Catalogs,
    /// `None`: no validation.
    pub validate: Option<ValidateSettings>,
    /// `None`: no audit log.
    pub audit: Option<AuditSettings>,
    /// Serve `/metrics` (default true).
    pub metrics: bool,
    /// What the tool annotations of servers not `"trusted"` get.
    pub untrusted_annotations: UntrustedAnnotations,
}

/// `policy.untrustedAnnotations` (requirement tools-annotations-untrusted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UntrustedAnnotations {
    /// Kept, with the server's name under `_meta["io.github.mcpx/provenance"]`.
    #[default]
    Mark,
    /// Removed from the tools listed.
    Remove,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            rate_limits: Default::default(),
            catalogs: Default::default(),
            validate: None,
            audit: None,
            metrics: true,
            untrusted_annotations: UntrustedAnnotations::Mark,
        }
    }
}

/// `"validate": {"servers": ["*"], "arguments": true, "elicitation": true,
/// "output": "log"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidateSettings {
    /// Server-name globs whose tools are validated.
    pub servers: Vec<String>,
    pub arguments: bool,
    pub elicitation: bool,
    pub output: OutputCheck,
}

/// What a `structuredContent` that breaks its `outputSchema` gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputCheck {
    Off,
    /// Passed on, and a warning logged.
    Log,
    /// Replaced by a tool error naming the violation.
    Refuse,
}

/// `"audit": {"file": "~/mcpx-audit.jsonl" | "stderr", "maxBytes": n,
/// "files": n, "arguments": false, "redact": [..], "queue": n}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditSettings {
    /// `None`: standard error.
    pub file: Option<PathBuf>,
    pub max_bytes: u64,
    pub files: u32,
    pub content: crate::policy::audit::Content,
    pub queue: usize,
}

fn parse_policy(cx: &mut Ctx<'_>, top: &Path, obj: &serde_json::Map<String, Value>) -> PolicyConfig {
    use crate::policy::catalog_acl::{Catalog, Pattern};
    use crate::policy::ratelimit::{ClassLimits, Rate, RateLimitConfig};
    let mut out = PolicyConfig::default();
    let at = top.key("policy");
    let p = match obj.get("policy") {
        None | Some(Value::Null) => return out,
        Some(Value::Object(p)) => p,
        Some(other) => {
            cx.err(&at, format!("expected an object, found {}", type_name(other)));
            return out;
        }
    };
    cx.unknown_keys(&at, p, &["rateLimits", "catalogs", "validate", "audit", "metrics", "untrustedAnnotations"]);
    fn object<'v>(cx: &mut Ctx<'_>, at: &Path, v: &'v Value) -> Option<&'v serde_json::Map<String, Value>> {
        match v {
            Value::Object(o) => Some(o),
            other => {
                cx.err(at, format!("expected an object, found {}", type_name(other)));
                None
            }
        }
    }
    fn positive(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Option<u64> {
        match v.as_u64() {
            Some(n) if n > 0 => Some(n),
            _ => {
                cx.err(at, format!("expected a positive whole number, found {v}"));
                None
            }
        }
    }
    // A rate string, or null for off.
    fn rate(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Option<Option<Rate>> {
        if v.is_null() {
            return Some(None);
        }
        let s = cx.string(at, v)?;
        match Rate::parse(&s) {
            Ok(r) => Some(Some(r)),
            Err(e) => {
                cx.err(at, e);
                None
            }
        }
    }

    match p.get("rateLimits") {
        None => {}
        Some(Value::Bool(false)) => out.rate_limits = RateLimitConfig::off(),
        Some(Value::Bool(true)) => {}
        Some(v) => {
            let at = at.key("rateLimits");
            if let Some(r) = object(cx, &at, v) {
                let classes = ["toolCalls", "completions", "serverRequests", "taskRequests"];
                let nums = ["progressPerRequest", "logsPerRequest", "maxBuckets"];
                let known: Vec<&str> = classes.iter().chain(&nums).copied().collect();
                cx.unknown_keys(&at, r, &known);
                let cfg = &mut out.rate_limits;
                for key in classes {
                    let Some(v) = r.get(key) else { continue };
                    let at = at.key(key);
                    let Some(c) = object(cx, &at, v) else { continue };
                    cx.unknown_keys(&at, c, &["perPrincipal", "perServer", "perTool"]);
                    let limits: &mut ClassLimits = match key {
                        "toolCalls" => &mut cfg.tool_calls,
                        "completions" => &mut cfg.completions,
                        "taskRequests" => &mut cfg.task_requests,
                        _ => &mut cfg.server_requests,
                    };
                    if let Some(v) = c.get("perPrincipal") {
                        limits.per_principal = rate(cx, &at.key("perPrincipal"), v).unwrap_or(limits.per_principal);
                    }
                    if let Some(v) = c.get("perServer") {
                        limits.per_server = rate(cx, &at.key("perServer"), v).unwrap_or(limits.per_server);
                    }
                    if let Some(v) = c.get("perTool") {
                        let at = at.key("perTool");
                        if let Some(globs) = object(cx, &at, v) {
                            // First match wins: keep the file's order.
                            for (glob, _) in jsonpos::keys(cx.src, &at).unwrap_or_default() {
                                let Some(v) = globs.get(&glob) else { continue };
                                if let Some(Some(r)) = rate(cx, &at.key(&glob), v) {
                                    limits.per_tool.push((glob, r));
                                }
                            }
                        }
                    }
                }
                for key in nums {
                    let Some(v) = r.get(key) else { continue };
                    let n = if v.is_null() && key != "maxBuckets" { Some(None) } else { positive(cx, &at.key(key), v).map(Some) };
                    match (key, n) {
                        (_, None) => {}
                        ("progressPerRequest", Some(n)) => cfg.progress_per_request = n.map(|n| n.min(u32::MAX.into()) as u32),
                        ("logsPerRequest", Some(n)) => cfg.logs_per_request = n.map(|n| n.min(u32::MAX.into()) as u32),
                        (_, Some(n)) => cfg.max_buckets = n.unwrap_or(1) as usize,
                    }
                }
            }
        }
    }

    if let Some(v) = p.get("catalogs") {
        let at = at.key("catalogs");
        if let Some(cs) = object(cx, &at, v) {
            for (principal, c) in cs {
                let at = at.key(principal);
                let Some(c) = object(cx, &at, c) else { continue };
                cx.unknown_keys(&at, c, &["allow", "deny", "toolSearch"]);
                let mut cat = Catalog::default();
                for (key, list) in [("allow", &mut cat.allow), ("deny", &mut cat.deny)] {
                    let Some(v) = c.get(key) else { continue };
                    for (i, s) in cx.strings(&at.key(key), v).unwrap_or_default().iter().enumerate() {
                        match Pattern::parse(s) {
                            Ok(p) => list.push(p),
                            Err(e) => cx.err(&at.key(key).idx(i), e),
                        }
                    }
                }
                if let Some(v) = c.get("toolSearch") {
                    cat.tool_search = cx.bool(&at.key("toolSearch"), v).unwrap_or(false);
                }
                out.catalogs.entries.push((principal.clone(), cat));
            }
        }
    }

    match p.get("validate") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(v) => {
            let at = at.key("validate");
            let mut s = ValidateSettings { servers: vec!["*".into()], arguments: true, elicitation: true, output: OutputCheck::Log };
            let empty = serde_json::Map::new();
            if let Some(o) = if v == &Value::Bool(true) { Some(&empty) } else { object(cx, &at, v) } {
                cx.unknown_keys(&at, o, &["servers", "arguments", "elicitation", "output"]);
                if let Some(v) = o.get("servers") {
                    s.servers = cx.strings(&at.key("servers"), v).unwrap_or(s.servers);
                }
                if let Some(v) = o.get("arguments") {
                    s.arguments = cx.bool(&at.key("arguments"), v).unwrap_or(s.arguments);
                }
                if let Some(v) = o.get("elicitation") {
                    s.elicitation = cx.bool(&at.key("elicitation"), v).unwrap_or(s.elicitation);
                }
                if let Some(v) = o.get("output") {
                    match cx.string(&at.key("output"), v).as_deref() {
                        Some("off") => s.output = OutputCheck::Off,
                        Some("log") => s.output = OutputCheck::Log,
                        Some("refuse") => s.output = OutputCheck::Refuse,
                        Some(other) => cx.err(&at.key("output"), format!("{other:?} is not \"off\", \"log\" or \"refuse\"")),
                        None => {}
                    }
                }
                if cfg!(not(feature = "validate")) {
                    cx.err(&at, "this build has no JSON Schema validation (built without the `validate` feature)");
                }
                out.validate = Some(s);
            }
        }
    }

    match p.get("audit") {
        None | Some(Value::Null) => {}
        Some(v) => {
            let at = at.key("audit");
            if let Some(a) = object(cx, &at, v) {
                let nums = ["maxBytes", "files", "queue"];
                cx.unknown_keys(&at, a, &["file", "maxBytes", "files", "arguments", "redact", "queue"]);
                let mut s = AuditSettings {
                    file: None,
                    max_bytes: 10 * 1024 * 1024,
                    files: 5,
                    content: Default::default(),
                    queue: 4096,
                };
                match a.get("file") {
                    None => cx.err(&at, "missing \"file\" (a path, or \"stderr\")"),
                    Some(v) => match cx.string(&at.key("file"), v) {
                        Some(f) if f == "stderr" => {}
                        Some(f) if f.is_empty() => cx.err(&at.key("file"), "is empty (a path, or \"stderr\")"),
                        Some(f) => s.file = cx.path(&at.key("file"), &f),
                        None => {}
                    },
                }
                for key in nums {
                    let Some(n) = a.get(key).and_then(|v| positive(cx, &at.key(key), v)) else { continue };
                    match key {
                        "maxBytes" => s.max_bytes = n,
                        "files" => s.files = n.min(1000) as u32,
                        _ => s.queue = n.min(1 << 20) as usize,
                    }
                }
                if let Some(v) = a.get("arguments") {
                    s.content.arguments = cx.bool(&at.key("arguments"), v).unwrap_or(false);
                }
                if let Some(v) = a.get("redact") {
                    s.content.redact = cx.strings(&at.key("redact"), v).unwrap_or_default();
                }
                out.audit = Some(s);
            }
        }
    }

    if let Some(v) = p.get("metrics") {
        out.metrics = cx.bool(&at.key("metrics"), v).unwrap_or(true);
    }
    if let Some(v) = p.get("untrustedAnnotations") {
        match cx.string(&at.key("untrustedAnnotations"), v).as_deref() {
            Some("mark") => out.untrusted_annotations = UntrustedAnnotations::Mark,
            Some("remove") => out.untrusted_annotations = UntrustedAnnotations::Remove,
            Some(other) => cx.err(&at.key("untrustedAnnotations"), format!("{other:?} is not \"mark\" or \"remove\"")),
            None => {}
        }
    }
    out
}
// --- end of "policy" --------------------------------------------------------

/// `"auth": {"tokens": {"alice": "${ALICE_TOKEN}", ...}}`: principal name → token.
fn parse_tokens(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Vec<(String, String)> {
    let Value::Object(m) = v else {
        cx.err(at, format!("expected an object like {{\"alice\": \"${{ALICE_TOKEN}}\"}}, found {}", type_name(v)));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, t) in m {
        let at = at.key(name);
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_graphic()) {
            cx.err(&at, "a principal name is visible ASCII, at least one character");
            continue;
        }
        match cx.string(&at, t) {
            Some(t) if t.is_empty() => cx.err(&at, "the token is empty"),
            Some(t) if out.iter().any(|(_, o)| *o == t) => cx.err(&at, "the same token as another principal: give each its own"),
            Some(t) => out.push((name.clone(), t)),
            None => {}
        }
    }
    out
}

/// `"auth": {"oauth": {...}}`: see [`crate::http::OAuthSettings`].
fn parse_resource_server(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Option<crate::http::OAuthSettings> {
    const KEYS: [&str; 7] = ["issuer", "audience", "scopes", "jwksUrl", "introspectionUrl", "clientId", "clientSecret"];
    let Value::Object(o) = v else {
        cx.err(at, format!("expected an object like {{\"issuer\": \"https://as.example.com\", \"audience\": \"https://hub.example.com/mcp\"}}, found {}", type_name(v)));
        return None;
    };
    cx.unknown_keys(at, o, &KEYS);
    let mut s = crate::http::OAuthSettings::default();
    let mut ok = true;
    for key in KEYS {
        let Some(v) = o.get(key) else {
            if matches!(key, "issuer" | "audience") {
                cx.err(at, format!("\"{key}\" is required"));
                ok = false;
            }
            continue;
        };
        if key == "scopes" {
            s.scopes = cx.strings(&at.key(key), v).unwrap_or_default();
            continue;
        }
        let Some(text) = cx.string(&at.key(key), v) else {
            ok = false;
            continue;
        };
        match key {
            "issuer" => s.issuer = text,
            "audience" => s.audience = text,
            "jwksUrl" => s.jwks_url = Some(text),
            "introspectionUrl" => s.introspection_url = Some(text),
            "clientId" => s.client_id = Some(text),
            _ => s.client_secret = Some(text),
        }
    }
    ok.then_some(s)
}

enum Parsed {
    Server(Box<ServerConfig>),
    Disabled,
    /// Unsupported (e.g. a remote `url`): warned about, not served.
    Skipped,
    Invalid,
}

const SERVER_KEYS: &[&str] = &[
    "command", "args", "env", "cwd", "disabled", "timeoutMs", "tools", "prefix", "revisions", "url",
    "headers", "caFile", "type", "transport", "inheritEnv", "envAllow", "maxRestarts", "oauth",
    "lazy", "idleStopMs", "trusted", "isolation", "maxInstances",
];

fn parse_server(cx: &mut Ctx<'_>, at: &Path, name: &str, v: &Value, sep: &str, power: Power) -> Parsed {
    let n_errors = cx.errors.len();
    let Value::Object(obj) = v else {
        cx.err(at, format!("expected an object with \"command\", found {}", type_name(v)));
        return Parsed::Invalid;
    };
    cx.unknown_keys(at, obj, SERVER_KEYS);

    if name.is_empty() {
        cx.err(at, "server name must not be empty");
    } else if name.chars().count() > MAX_NAME_LEN {
        cx.err(at, format!("server name is longer than {MAX_NAME_LEN} characters"));
    } else if name.chars().any(|c| c.is_control()) {
        cx.err(at, "server name must not contain control characters");
    }

    let disabled = match obj.get("disabled") {
        Some(d) => cx.bool(&at.key("disabled"), d).unwrap_or(false),
        None => false,
    };
    if disabled {
        return if cx.errors.len() > n_errors { Parsed::Invalid } else { Parsed::Disabled };
    }

    use crate::remote::Mode;
    let type_key = if obj.contains_key("type") { "type" } else { "transport" };
    let mode = match obj.get(type_key) {
        None | Some(Value::Null) => obj.contains_key("url").then_some(Mode::Auto),
        Some(Value::String(t)) => match t.as_str() {
            "stdio" => None,
            "http" | "streamable-http" | "streamableHttp" | "streamable_http" => Some(Mode::StreamableHttp),
            "sse" => Some(Mode::Sse),
            other => {
                cx.warn(
                    &at.key(type_key),
                    format!("transport {other:?} is not supported (use \"stdio\", \"http\" or \"sse\"); server {name:?} is skipped"),
                );
                return Parsed::Skipped;
            }
        },
        Some(other) => {
            cx.err(&at.key(type_key), format!("expected a string, found {}", type_name(other)));
            None
        }
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

    let command = match obj.get("command") {
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
    };
    let args = match obj.get("args") {
        None => Some(Vec::new()),
        Some(a) => cx.strings(&at.key("args"), a),
    };
    let mut env = Vec::new();
    match obj.get("env") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            // File order, from the text.
            let order = jsonpos::keys(cx.src, &at.key("env")).unwrap_or_default();
            for (k, _) in order {
                let Some(val) = m.get(&k) else { continue };
                if env.iter().any(|(e, _): &(String, String)| e == &k) {
                    continue;
                }
                let vat = at.key("env").key(&k);
                if k.is_empty() || k.contains('=') || k.contains('\0') {
                    cx.err(&vat, "environment variable names must be non-empty without `=`");
                    continue;
                }
                if let Some(s) = cx.string(&vat, val) {
                    if s.contains('\0') {
                        cx.err(&vat, "must not contain a NUL character");
                    } else {
                        env.push((k, s));
                    }
                }
            }
        }
        Some(other) => cx.err(
            &at.key("env"),
            format!("expected an object of strings, found {}", type_name(other)),
        ),
    }
    let cwd = match obj.get("cwd") {
        None | Some(Value::Null) => None,
        Some(c) => cx.string(&at.key("cwd"), c).and_then(|s| cx.path(&at.key("cwd"), &s)),
    };
    let timeout_ms = match obj.get("timeoutMs") {
        None | Some(Value::Null) => None,
        Some(t) => match t.as_u64() {
            Some(0) | None => {
                cx.err(
                    &at.key("timeoutMs"),
                    format!("expected a positive whole number of milliseconds, found {t}"),
                );
                None
            }
            Some(ms) => Some(ms),
        },
    };
    let (mut tools_allow, mut tools_deny) = (Vec::new(), Vec::new());
    match obj.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::Object(t)) => {
            let tat = at.key("tools");
            cx.unknown_keys(&tat, t, &["allow", "deny"]);
            if let Some(a) = t.get("allow") {
                tools_allow = cx.strings(&tat.key("allow"), a).unwrap_or_default();
                if matches!(a, Value::Array(v) if v.is_empty()) {
                    cx.warn(
                        &tat.key("allow"),
                        "an empty allow list allows every tool; use \"deny\": [\"*\"] to hide them all",
                    );
                }
            }
            if let Some(d) = t.get("deny") {
                tools_deny = cx.strings(&tat.key("deny"), d).unwrap_or_default();
            }
        }
        Some(other) => cx.err(
            &at.key("tools"),
            format!("expected an object {{\"allow\": [...], \"deny\": [...]}}, found {}", type_name(other)),
        ),
    }
    let prefix = match obj.get("prefix") {
        None => {
            if !name.is_empty() && !valid_prefix_chars(name) {
                cx.err(
                    at,
                    format!(
                        "server name {name:?} cannot prefix tool names (use letters, digits, `_`, `-`, `.`); rename it or set \"prefix\""
                    ),
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
            format!(
                "prefix {prefix:?} contains the separator {sep:?}, so names could not be split back; set another \"prefix\" or \"separator\""
            ),
        );
    }
    let revisions = match obj.get("revisions") {
        None | Some(Value::Null) => None,
        Some(r) => {
            let rat = at.key("revisions");
            let list = cx.strings(&rat, r);
            if let Some(list) = &list {
                if list.is_empty() {
                    cx.err(&rat, "must list at least one protocol revision, or be left out");
                }
                for (i, r) in list.iter().enumerate() {
                    let ok = r.len() == 10
                        && r.bytes().enumerate().all(|(j, b)| {
                            if j == 4 || j == 7 {
                                b == b'-'
                            } else {
                                b.is_ascii_digit()
                            }
                        });
                    if !ok {
                        cx.err(&rat.idx(i), format!("{r:?} is not a protocol revision (like \"2025-06-18\")"));
                    }
                }
            }
            list
        }
    };

    let (env_policy, max_restarts) = parse_process_keys(cx, at, obj, local);
    let power = parse_power(cx, at, obj, power);
    let trusted = obj.get("trusted").and_then(|v| cx.bool(&at.key("trusted"), v)).unwrap_or(false);
    let isolation = parse_isolation(cx, at, obj, local);

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
        remote,
        env_policy,
        max_restarts,
        power,
        isolation,
    }))
}

/// Longest `"maxRestarts"` accepted.
const MAX_MAX_RESTARTS: u64 = 1000;

/// A server's process keys: `"inheritEnv"` and `"envAllow"` (local servers
/// only; an allow list without `"inheritEnv"` means `false`), and
/// `"maxRestarts"`. The secrets of the policy are filled in by
/// [`mark_secrets`] once the whole file is read.
fn parse_process_keys(
    cx: &mut Ctx<'_>,
    at: &Path,
    obj: &serde_json::Map<String, Value>,
    local: bool,
) -> (crate::childenv::Policy, u32) {
    let mut policy = crate::childenv::Policy::default();
    for k in ["inheritEnv", "envAllow"] {
        if !local && obj.contains_key(k) {
            cx.err(&at.key(k), format!("{k:?} is for local servers; a remote server has no environment"));
        }
    }
    let inherit = obj.get("inheritEnv").and_then(|v| cx.bool(&at.key("inheritEnv"), v));
    if let Some(v) = obj.get("envAllow") {
        let aat = at.key("envAllow");
        policy.allow = cx.strings(&aat, v).unwrap_or_default();
        if inherit == Some(true) {
            cx.err(&aat, "an allow list needs \"inheritEnv\": false (with true, every variable but mcpx's secrets is passed)");
        }
        for (i, p) in policy.allow.iter().enumerate() {
            if p.is_empty() || p.contains('=') {
                cx.err(&aat.idx(i), "a variable name or `*` pattern must be non-empty without `=`");
            }
        }
    }
    policy.inherit = inherit.unwrap_or(!obj.contains_key("envAllow"));
    let max_restarts = match obj.get("maxRestarts") {
        None | Some(Value::Null) => crate::backoff::DEFAULT_MAX_RESTARTS,
        Some(v) => match v.as_u64().filter(|&n| n <= MAX_MAX_RESTARTS) {
            Some(n) => n as u32,
            None => {
                cx.err(&at.key("maxRestarts"), format!("expected a whole number from 0 to {MAX_MAX_RESTARTS}, found {v}"));
                crate::backoff::DEFAULT_MAX_RESTARTS
            }
        },
    };
    (policy, max_restarts)
}

/// The variables the config reads for mcpx itself go into every server's
/// policy as secrets, so no child inherits them: those in the top-level keys
/// other than `"mcpServers"` (`"auth"`, ...) and in remote servers' entries
/// (`"headers"`, the URL, ...; a remote server has no environment). What a
/// local server's own entry reads (`"env"`, `"args"`) is meant for it.
fn mark_secrets(root: &serde_json::Map<String, Value>, servers: &mut [ServerConfig]) {
    fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::String(s) => out.push(s),
            Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
            Value::Object(o) => o.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let mut texts = Vec::new();
    for (k, v) in root {
        match (k.as_str(), v) {
            ("mcpServers", Value::Object(m)) => {
                for s in m.values().filter(|s| s.get("url").is_some()) {
                    strings(s, &mut texts);
                }
            }
            ("mcpServers", _) => {}
            (_, v) => strings(v, &mut texts),
        }
    }
    let mut secrets: Vec<String> = texts.iter().flat_map(|t| crate::childenv::referenced_vars(t)).collect();
    secrets.sort();
    secrets.dedup();
    for s in servers {
        s.env_policy.secrets = secrets.clone();
    }
}

/// The keys of a remote server: `url`, `headers`, `caFile`, checked as the
/// transport will use them (URL, header syntax, reserved headers, the CA
/// file's certificates, TLS support in this build).
fn parse_remote(
    cx: &mut Ctx<'_>,
    at: &Path,
    obj: &serde_json::Map<String, Value>,
    mode: crate::remote::Mode,
) -> Option<RemoteServer> {
    for k in ["args", "env", "cwd"] {
        if obj.contains_key(k) {
            cx.err(&at.key(k), format!("{k:?} is for local servers; a remote server has \"url\""));
        }
    }
    let uat = at.key("url");
    let url = match obj.get("url") {
        None => {
            cx.err(at, "a remote server needs a \"url\"");
            None
        }
        Some(u) => cx.string(&uat, u),
    };
    let mut headers = Vec::new();
    match obj.get("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            let hat = at.key("headers");
            for (k, _) in jsonpos::keys(cx.src, &hat).unwrap_or_default() {
                let Some(val) = m.get(&k) else { continue };
                if headers.iter().any(|(h, _): &(String, String)| h.eq_ignore_ascii_case(&k)) {
                    cx.err(&hat.key(&k), "header given twice");
                    continue;
                }
                if let Some(v) = cx.string(&hat.key(&k), val) {
                    headers.push((k, v));
                }
            }
        }
        Some(other) => cx.err(
            &at.key("headers"),
            format!("expected an object of strings, found {}", type_name(other)),
        ),
    }
    let ca_file = match obj.get("caFile") {
        None | Some(Value::Null) => None,
        Some(c) => cx.string(&at.key("caFile"), c).and_then(|s| cx.path(&at.key("caFile"), &s)),
    };
    let oauth = match obj.get("oauth") {
        None | Some(Value::Null) => None,
        Some(o) => parse_oauth(cx, &at.key("oauth"), o),
    };
    let url = url?;
    let spec = crate::remote::RemoteSpec {
        name: String::new(),
        url: url.clone(),
        headers: headers.clone(),
        ca_file: ca_file.clone(),
        timeout_ms: 0,
        mode,
        oauth: oauth.clone(),
    };
    if let Err(e) = spec.check() {
        // Point at the key the problem is about.
        let key = e.config_key();
        let kat = if obj.contains_key(key) { at.key(key) } else { at.clone() };
        cx.err(&kat, e);
        return None;
    }
    Some(RemoteServer { url, headers, ca_file, mode, oauth })
}

const OAUTH_KEYS: &[&str] =
    &["clientId", "clientSecret", "clientMetadataUrl", "scopes", "grant", "privateKeyFile", "signingAlg", "openWith"];

/// A remote server's `"oauth"` block; the token store goes to
/// `$XDG_STATE_HOME/mcpx/` (or `~/.local/state/mcpx/`, or beside the config).
fn parse_oauth(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Option<crate::remote::oauth::OAuthSpec> {
    use crate::remote::oauth::{jwt, store, GrantKind, OAuthSpec};
    let Value::Object(obj) = v else {
        cx.err(at, format!("expected an object (e.g. {{}} or {{\"clientId\": \"...\"}}), found {}", type_name(v)));
        return None;
    };
    cx.unknown_keys(at, obj, OAUTH_KEYS);
    let n_errors = cx.errors.len();
    let text = |cx: &mut Ctx<'_>, k: &str| obj.get(k).filter(|v| !v.is_null()).and_then(|v| cx.string(&at.key(k), v));
    let mut spec = OAuthSpec {
        client_id: text(cx, "clientId"),
        client_secret: text(cx, "clientSecret"),
        client_metadata_url: text(cx, "clientMetadataUrl"),
        signing_alg: text(cx, "signingAlg"),
        open_with: text(cx, "openWith"),
        store: store::default_path(cx.env, cx.base),
        ..OAuthSpec::default()
    };
    if let Some(s) = obj.get("scopes").filter(|v| !v.is_null()) {
        spec.scopes = cx.strings(&at.key("scopes"), s).unwrap_or_default();
    }
    if let Some(p) = text(cx, "privateKeyFile") {
        spec.private_key_file = cx.path(&at.key("privateKeyFile"), &p);
    }
    spec.grant = match text(cx, "grant").as_deref() {
        None | Some("authorization_code") => GrantKind::AuthorizationCode,
        Some("client_credentials") => GrantKind::ClientCredentials,
        Some(other) => {
            cx.err(&at.key("grant"), format!("unknown grant {other:?} (use \"authorization_code\" or \"client_credentials\")"));
            GrantKind::AuthorizationCode
        }
    };
    if spec.client_secret.is_some() && spec.client_id.is_none() {
        cx.err(&at.key("clientSecret"), "\"clientSecret\" needs \"clientId\"");
    }
    if let Some(u) = &spec.client_metadata_url {
        if !u.starts_with("https://") {
            cx.err(&at.key("clientMetadataUrl"), "a Client ID Metadata Document URL must be https://");
        }
    }
    if spec.grant == GrantKind::ClientCredentials && spec.client_id.is_none() {
        cx.err(&at.key("grant"), "the client_credentials grant needs \"clientId\" (and \"clientSecret\" or \"privateKeyFile\")");
    }
    if let Some(alg) = &spec.signing_alg {
        if !jwt::ALGS.contains(&alg.as_str()) {
            cx.err(&at.key("signingAlg"), format!("signingAlg {alg:?} is not supported (use {})", jwt::ALGS.join(" or ")));
        }
    }
    if spec.private_key_file.is_some() {
        if spec.grant != GrantKind::ClientCredentials {
            cx.err(&at.key("privateKeyFile"), "\"privateKeyFile\" is for \"grant\": \"client_credentials\"");
        }
        if !cfg!(feature = "oauth-jwt") {
            cx.err(&at.key("privateKeyFile"), "this mcpx was built without private-key JWT support (cargo feature `oauth-jwt`)");
        }
    }
    (cx.errors.len() == n_errors).then_some(spec)
}

fn parse_roots(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Vec<Root> {
    let Value::Array(items) = v else {
        cx.err(at, format!("expected an array of paths or {{\"uri\", \"name\"}} objects, found {}", type_name(v)));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let iat = at.idx(i);
        let (raw, name) = match item {
            Value::String(_) => match cx.string(&iat, item) {
                Some(s) => (s, None),
                None => continue,
            },
            Value::Object(o) => {
                cx.unknown_keys(&iat, o, &["uri", "name"]);
                let Some(u) = o.get("uri") else {
                    cx.err(&iat, "a root object needs \"uri\"");
                    continue;
                };
                let Some(u) = cx.string(&iat.key("uri"), u) else { continue };
                let name = match o.get("name") {
                    Some(n) => cx.string(&iat.key("name"), n),
                    None => None,
                };
                (u, name)
            }
            other => {
                cx.err(&iat, format!("expected a path, a URI or an object, found {}", type_name(other)));
                continue;
            }
        };
        let uri = if raw.contains("://") {
            raw
        } else {
            match cx.path(&iat, &raw) {
                Some(p) => file_uri(&p),
                None => continue,
            }
        };
        out.push(Root { uri, name });
    }
    out
}

/// `file://` URI of an absolute path, percent-encoding what URIs do not allow.
pub fn file_uri(p: &FsPath) -> String {
    let mut out = String::from("file://");
    for b in p.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "TOKEN" => Some("t0k".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn ok(src: &str) -> Config {
        match parse(src, "cfg.json", FsPath::new("/etc/mcpx"), &env) {
            Ok(c) => c,
            Err(e) => panic!("unexpected error:\n{e}"),
        }
    }

    fn err(src: &str) -> String {
        match parse(src, "cfg.json", FsPath::new("/etc/mcpx"), &env) {
            Ok(c) => panic!("expected an error, got {c:?}"),
            Err(e) => e.to_string(),
        }
    }

    /// Parses with `vars` as the whole environment.
    fn with_env(src: &str, vars: &[(&str, &str)]) -> Result<Config, String> {
        let lookup = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string());
        parse(src, "cfg.json", FsPath::new("/etc/mcpx"), &lookup).map_err(|e| e.to_string())
    }

    #[test]
    fn state_and_cluster_settings() {
        let hex = "07".repeat(32);
        // Nothing configured: alone, and MCPX_STATE_KEY (even a bad one) means nothing.
        let c = with_env(r#"{"mcpServers": {}}"#, &[("MCPX_STATE_KEY", "junk")]).unwrap();
        assert_eq!(c.cluster, ClusterSettings::default());
        let o = c.cluster.hub_options();
        assert!(o.replica.is_none() && !o.shared && o.state_key.is_none());

        let cfg = r#"{"mcpServers": {}, "state": {"url": "redis://127.0.0.1:6379/0"},
            "cluster": {"replica": "r1", "peers": {"r2": "http://127.0.0.1:7402", "r3": "http://127.0.0.1:7403"}}}"#;
        let c = with_env(cfg, &[("MCPX_STATE_KEY", &hex)]).unwrap();
        assert_eq!(c.cluster.state_url.as_deref(), Some("redis://127.0.0.1:6379/0"));
        assert_eq!(c.cluster.peers, vec![("r2".to_string(), "http://127.0.0.1:7402".to_string()), ("r3".to_string(), "http://127.0.0.1:7403".to_string())]);
        let o = c.cluster.hub_options();
        assert_eq!((o.replica.as_deref(), o.peers.as_slice(), o.shared, o.state_key), (Some("r1"), &["r2".to_string(), "r3".to_string()][..], true, Some([7; 32])));
        assert!(!format!("{:?} {o:?}", c.cluster).contains("7, 7"), "the key never shows in Debug");
        // Base64 keys, and the environment before the file.
        let b64 = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc";
        let c = with_env(cfg, &[("MCPX_STATE_KEY", b64), ("MCPX_REPLICA", "r9"), ("MCPX_STATE_URL", "redis://10.0.0.1:6379/2")]).unwrap();
        assert_eq!((c.cluster.replica.as_deref(), c.cluster.state_url.as_deref(), c.cluster.state_key), (Some("r9"), Some("redis://10.0.0.1:6379/2"), Some(StateKey([7; 32]))));
        // A key file: hex text or 32 raw bytes.
        let dir = std::env::temp_dir().join(format!("mcpx-statekey-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in [("hex.key", format!("{hex}\n").into_bytes()), ("raw.key", vec![7u8; 32])] {
            let f = dir.join(name);
            std::fs::write(&f, bytes).unwrap();
            let src = format!(r#"{{"mcpServers": {{}}, "state": {{"url": "redis://h:1/0", "keyFile": {:?}}}, "cluster": {{"replica": "r1"}}}}"#, f.display().to_string());
            assert_eq!(with_env(&src, &[]).unwrap().cluster.state_key, Some(StateKey([7; 32])), "{name}");
        }
        std::fs::remove_dir_all(&dir).unwrap();

        let bad = |src: &str, vars: &[(&str, &str)]| with_env(src, vars).expect_err("refused");
        assert!(bad(cfg, &[("MCPX_STATE_KEY", "abcd")]).contains("MCPX_STATE_KEY: the key is 3 bytes; it must be 32"), "a short key");
        assert!(bad(cfg, &[("MCPX_STATE_KEY", "not a key!")]).contains("MCPX_STATE_KEY: the key is neither 64 hex digits"), "not a key");
        assert!(bad(cfg, &[]).contains("replicas need one sealing key"));
        let e = bad(r#"{"mcpServers": {}, "cluster": {"replica": "r1"}}"#, &[("MCPX_STATE_KEY", &hex)]);
        assert!(e.contains("cfg.json:1:") && e.contains("cluster: replicas need shared state"), "{e}");
        assert!(bad(r#"{"mcpServers": {}, "state": {"url": "http://h/"}}"#, &[]).contains("state.url: \"http://h/\" is not a Redis URL"));
        assert!(bad(r#"{"mcpServers": {}, "state": {"url": "redis://h:1/0"}, "cluster": {"peers": {}}}"#, &[("MCPX_STATE_KEY", &hex)]).contains("cluster.replica: missing"));
        let e = bad(r#"{"mcpServers": {}, "state": {"url": "redis://h:1/0"}, "cluster": {"replica": "r.1", "peers": {"r 2": "http://x", "r3": "ftp://x", "r.1": "http://y"}}}"#, &[("MCPX_STATE_KEY", &hex)]);
        for want in ["cluster.replica: \"r.1\" is not a replica id", "\"r 2\" is not a replica id", "\"ftp://x\" is not an http://", "\"r.1\" is not a replica id"] {
            assert!(e.contains(want), "{want} in {e}");
        }
        // State alone (one mcpx, its state in Redis) needs no replica and no key.
        let c = with_env(r#"{"mcpServers": {}, "state": {"url": "redis://h:1/0"}}"#, &[]).unwrap();
        assert!(c.cluster.hub_options().shared && c.cluster.replica.is_none());
    }

    #[test]
    fn claude_desktop_config() {
        let c = ok(r#"{
  "mcpServers": {
    "zeta": {"command": "npx", "args": ["-y", "@scope/server", "--token=${TOKEN}"],
             "env": {"B": "2", "A": "${TOKEN}"}},
    "alpha": {"command": "uvx", "args": ["mcp-server-fetch"], "cwd": "~/work"},
    "off": {"command": "x", "disabled": true}
  }
}"#);
        assert_eq!(c.servers.len(), 2);
        let z = &c.servers[0];
        assert_eq!(z.name, "zeta");
        assert_eq!(z.prefix, "zeta");
        assert_eq!(z.command, "npx");
        assert_eq!(z.args, ["-y", "@scope/server", "--token=t0k"]);
        assert_eq!(z.env, [("B".to_string(), "2".to_string()), ("A".to_string(), "t0k".to_string())]);
        assert_eq!(c.servers[1].name, "alpha");
        assert_eq!(c.servers[1].cwd, Some(PathBuf::from("/home/u/work")));
        assert_eq!(c.disabled, ["off"]);
        assert_eq!(c.separator, "__");
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn mcpx_keys() {
        let c = ok(r#"{
  "mcpServers": {
    "github": {"command": "gh-mcp", "timeoutMs": 5000, "prefix": "gh",
               "tools": {"allow": ["a", "b*"], "deny": ["b2"]}, "revisions": ["2025-06-18"],
               "cwd": "rel/dir"},
    "plain": {"command": "p", "prefix": ""}
  },
  "separator": "-",
  "roots": ["/srv/data", "~/src", {"uri": "file:///x", "name": "X"}, "a b"],
  "logLevel": "debug"
}"#);
        let g = &c.servers[0];
        assert_eq!(g.prefix, "gh");
        assert_eq!(g.timeout_ms, Some(5000));
        assert_eq!(g.tools_allow, ["a", "b*"]);
        assert_eq!(g.tools_deny, ["b2"]);
        assert_eq!(g.revisions, Some(vec!["2025-06-18".into()]));
        assert_eq!(g.cwd, Some(PathBuf::from("/etc/mcpx/rel/dir")));
        assert_eq!(c.servers[1].prefix, "");
        assert_eq!(c.separator, "-");
        assert_eq!(c.log_level, Some(Level::Debug));
        let uris: Vec<&str> = c.roots.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(uris, ["file:///srv/data", "file:///home/u/src", "file:///x", "file:///etc/mcpx/a%20b"]);
        assert_eq!(c.roots[2].name.as_deref(), Some("X"));
    }

    #[test]
    fn environment_and_restart_keys() {
        let c = ok(r#"{
  "mcpServers": {
    "a": {"command": "x", "env": {"G": "${HOME}"}},
    "b": {"command": "x", "inheritEnv": false, "maxRestarts": 0},
    "c": {"command": "x", "envAllow": ["GITHUB_*"], "maxRestarts": 3},
    "r": {"url": "https://h/mcp?k=${URL_KEY:-x}", "headers": {"Authorization": "Bearer ${API_KEY:-none}"}}
  },
  "auth": {"bearer": "${TOKEN}"}
}"#);
        let p: Vec<_> = c.servers.iter().map(|s| (s.env_policy.inherit, s.env_policy.allow.clone(), s.max_restarts)).collect();
        assert_eq!(
            p,
            [(true, vec![], 10), (false, vec![], 0), (false, vec!["GITHUB_*".to_string()], 3), (true, vec![], 10)]
        );
        // What the config reads as secrets is kept from every child.
        assert!(c.servers.iter().all(|s| s.env_policy.secrets == ["API_KEY", "TOKEN", "URL_KEY"]));

        let e = err(r#"{"mcpServers": {"a": {"command": "x", "inheritEnv": true, "envAllow": ["A"], "maxRestarts": -1}}}"#);
        assert!(e.contains("mcpServers.a.envAllow: an allow list needs \"inheritEnv\": false"), "{e}");
        assert!(e.contains("mcpServers.a.maxRestarts: expected a whole number from 0 to 1000, found -1"), "{e}");
        let e = err(r#"{"mcpServers": {"r": {"url": "https://h/mcp", "inheritEnv": false}}}"#);
        assert!(e.contains("mcpServers.r.inheritEnv: \"inheritEnv\" is for local servers"), "{e}");
    }

    #[test]
    fn expansion() {
        assert_eq!(expand("a ${TOKEN} b", &env).unwrap(), "a t0k b");
        assert_eq!(expand("$${TOKEN}", &env).unwrap(), "${TOKEN}");
        assert_eq!(expand("$HOME $ 5$", &env).unwrap(), "$HOME $ 5$");
        assert_eq!(expand("${NOPE:-dflt}", &env).unwrap(), "dflt");
        assert_eq!(expand("${EMPTY:-dflt}", &env).unwrap(), "dflt");
        assert_eq!(expand("${EMPTY}", &env).unwrap(), "");
        assert_eq!(expand("${TOKEN:-x}${TOKEN}", &env).unwrap(), "t0kt0k");
        assert_eq!(
            expand("${NOPE}", &env).unwrap_err(),
            "environment variable NOPE is not set (referenced as `${NOPE}`; set it, or write `${NOPE:-default}`)"
        );
        assert_eq!(
            expand("x ${TOKEN", &env).unwrap_err(),
            "unterminated `${` in \"x ${TOKEN\" (write `$${` for a literal `${`)"
        );
        assert!(expand("${1X}", &env).unwrap_err().contains("`${1X}` is not a valid variable reference"));
    }

    #[test]
    fn invalid_json_has_line_and_column() {
        let e = err("{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}");
        assert_eq!(e, "cfg.json:3:26: invalid JSON: trailing comma");
        let e = err("");
        assert!(e.starts_with("cfg.json:1:0: invalid JSON: EOF while parsing"), "{e}");
    }

    #[test]
    fn unset_variable_names_it_and_where() {
        let e = err("{\"mcpServers\": {\n  \"a\": {\"command\": \"x\",\n    \"env\": {\"K\": \"${MISSING}\"}}}}");
        assert_eq!(
            e,
            "cfg.json:3:13: mcpServers.a.env.K: environment variable MISSING is not set (referenced as `${MISSING}`; set it, or write `${MISSING:-default}`)"
        );
    }

    #[test]
    fn wrong_types() {
        let e = err("{\"mcpServers\": {\n  \"a\": {\"command\": \"x\",\n   \"args\": \"-y pkg\"}}}");
        assert_eq!(e, "cfg.json:3:4: mcpServers.a.args: expected an array of strings, found a string");
        let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\"ok\", 3]}}}");
        assert_eq!(e, "cfg.json:1:54: mcpServers.a.args[1]: expected a string, found a number");
        let e = err("{\"mcpServers\": {\"a\": {\"command\": [\"x\"]}}}");
        assert_eq!(e, "cfg.json:1:23: mcpServers.a.command: expected a string, found an array");
        let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": [\"A=1\"]}}}");
        assert_eq!(e, "cfg.json:1:39: mcpServers.a.env: expected an object of strings, found an array");
        let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": {\"A\": 1}}}}");
        assert_eq!(e, "cfg.json:1:47: mcpServers.a.env.A: expected a string, found a number");
        let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"disabled\": \"yes\"}}}");
        assert_eq!(e, "cfg.json:1:39: mcpServers.a.disabled: expected true or false, found a string");
        let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"timeoutMs\": -5}}}");
        assert_eq!(
            e,
            "cfg.json:1:39: mcpServers.a.timeoutMs: expected a positive whole number of milliseconds, found -5"
        );
        let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"tools\": [\"t\"]}}}");
        assert_eq!(
            e,
            "cfg.json:1:39: mcpServers.a.tools: expected an object {\"allow\": [...], \"deny\": [...]}, found an array"
        );
        let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"revisions\": [\"latest\"]}}}");
        assert_eq!(
            e,
            "cfg.json:1:53: mcpServers.a.revisions[0]: \"latest\" is not a protocol revision (like \"2025-06-18\")"
        );
        let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"revisions\": []}}}");
        assert_eq!(e, "cfg.json:1:39: mcpServers.a.revisions: must list at least one protocol revision, or be left out");
        let e = err("{\"mcpServers\": {\"a\": \"npx foo\"}}");
        assert_eq!(e, "cfg.json:1:17: mcpServers.a: expected an object with \"command\", found a string");
        let e = err("{\"mcpServers\": [\"a\"]}");
        assert_eq!(e, "cfg.json:1:2: mcpServers: expected an object of servers by name, found an array");
        let e = err("[1]");
        assert_eq!(e, "cfg.json:1:1: (top level): expected a JSON object with \"mcpServers\", found an array");
        let e = err("{\"mcpServers\": {}, \"logLevel\": \"loud\"}");
        assert_eq!(e, "cfg.json:1:20: logLevel: \"loud\" is not a log level (error, warn, info or debug)");
        let e = err("{\"mcpServers\": {}, \"separator\": \"\"}");
        assert_eq!(e, "cfg.json:1:20: separator: must not be empty");
        let e = err("{\"mcpServers\": {}, \"separator\": \"a:b\"}");
        assert_eq!(
            e,
            "cfg.json:1:20: separator: \"a:b\" may only use letters, digits, `_`, `-` and `.` (tool names allow no more)"
        );
        let e = err("{\"mcpServers\": {}, \"roots\": [true]}");
        assert_eq!(e, "cfg.json:1:30: roots[0]: expected a path, a URI or an object, found a boolean");
        let e = err("{\"mcpServers\": {}, \"roots\": [{\"name\": \"n\"}]}");
        assert_eq!(e, "cfg.json:1:30: roots[0]: a root object needs \"uri\"");
    }

    #[test]
    fn missing_pieces() {
        assert_eq!(err("{}"), "cfg.json:1:1: (top level): missing \"mcpServers\" (an object of servers by name)");
        let e = err("{\"mcpServers\": {\"a\": {\"args\": []}}}");
        assert_eq!(e, "cfg.json:1:17: mcpServers.a: server \"a\" has no \"command\" (the program to run)");
        let e = err("{\"mcpServers\": {\"a\": {\"command\": \" \"}}}");
        assert_eq!(e, "cfg.json:1:23: mcpServers.a.command: must not be empty");
    }

    #[test]
    fn isolation_is_shared_by_default_client_with_a_cap_and_refused_for_a_remote_server() {
        use crate::hub::Isolation;
        let c = ok(r#"{"mcpServers": {
    "a": {"command": "x"},
    "b": {"command": "x", "isolation": "shared"},
    "c": {"command": "x", "isolation": "client"},
    "d": {"command": "x", "isolation": "client", "maxInstances": 2}
}}"#);
        let i: Vec<Isolation> = c.servers.iter().map(|s| s.isolation).collect();
        assert_eq!(i, [Isolation::Shared, Isolation::Shared, Isolation::Client { max: 8 }, Isolation::Client { max: 2 }]);
        let e = err(r#"{"mcpServers": {"r": {"url": "https://h/mcp", "isolation": "client"}}}"#);
        assert!(e.contains("mcpServers.r.isolation: \"client\" isolation is for local (command) servers"), "{e}");
        let e = err(r#"{"mcpServers": {"a": {"command": "x", "isolation": "user"}}}"#);
        assert!(e.contains("mcpServers.a.isolation: \"user\" is not \"shared\" or \"client\""), "{e}");
        let e = err(r#"{"mcpServers": {"a": {"command": "x", "isolation": "client", "maxInstances": 0}}}"#);
        assert!(e.contains("mcpServers.a.maxInstances: expected a whole number from 1 to 256, found 0"), "{e}");
        let e = err(r#"{"mcpServers": {"a": {"command": "x", "maxInstances": 3}}}"#);
        assert!(e.contains("mcpServers.a.maxInstances: only applies with \"isolation\": \"client\""), "{e}");
    }

    #[test]
    fn lazy_and_idle_stop_per_server_over_the_top_level_defaults() {
        let c = ok(r#"{
  "lazy": true, "idleStopMs": 60000,
  "mcpServers": {
    "a": {"command": "x"},
    "b": {"command": "x", "lazy": false, "idleStopMs": null},
    "c": {"url": "https://h/mcp", "idleStopMs": 5}
  }
}"#);
        let p: Vec<Power> = c.servers.iter().map(|s| s.power).collect();
        assert_eq!(
            p,
            [
                Power { lazy: true, idle_stop_ms: Some(60000) },
                Power { lazy: false, idle_stop_ms: None },
                Power { lazy: true, idle_stop_ms: Some(5) },
            ]
        );
        assert_eq!(ok(r#"{"mcpServers": {"a": {"command": "x"}}}"#).servers[0].power, Power::default());
        let e = err(r#"{"mcpServers": {"a": {"command": "x", "idleStopMs": 0}}}"#);
        assert_eq!(e, "cfg.json:1:39: mcpServers.a.idleStopMs: expected a positive whole number of milliseconds, found 0");
        let e = err(r#"{"lazy": "yes", "mcpServers": {}}"#);
        assert!(e.starts_with("cfg.json:1:2: lazy: "), "{e}");
    }

    #[test]
    fn names_and_prefixes() {
        let e = err("{\"mcpServers\": {\"my server\": {\"command\": \"x\"}}}");
        assert_eq!(
            e,
            "cfg.json:1:17: [\"my server\"]: server name \"my server\" cannot prefix tool names (use letters, digits, `_`, `-`, `.`); rename it or set \"prefix\""
                .replace("[\"my server\"]", "mcpServers[\"my server\"]")
        );
        // A prefix makes such a name usable.
        let c = ok("{\"mcpServers\": {\"my server\": {\"command\": \"x\", \"prefix\": \"my\"}}}");
        assert_eq!(c.servers[0].prefix, "my");
        let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"prefix\": \"g h\"}}}");
        assert_eq!(e, "cfg.json:1:39: mcpServers.a.prefix: \"g h\" may only use letters, digits, `_`, `-`, `.`");
        let e = err("{\"mcpServers\": {\"a__b\": {\"command\": \"x\"}}}");
        assert_eq!(
            e,
            "cfg.json:1:17: mcpServers.a__b: prefix \"a__b\" contains the separator \"__\", so names could not be split back; set another \"prefix\" or \"separator\""
        );
        let e = err("{\"mcpServers\": {\"\": {\"command\": \"x\"}}}");
        assert_eq!(e, "cfg.json:1:17: mcpServers[\"\"]: server name must not be empty");
        let long = "x".repeat(65);
        let e = err(&format!("{{\"mcpServers\": {{\"{long}\": {{\"command\": \"x\"}}}}}}"));
        assert!(e.ends_with("server name is longer than 64 characters"), "{e}");
        let e = err("{\"mcpServers\": {\n \"a\": {\"command\": \"x\"},\n \"b\": {\"command\": \"y\", \"prefix\": \"a\"}}}");
        assert_eq!(
            e,
            "cfg.json:3:2: mcpServers.b: servers \"a\" and \"b\" both use the prefix \"a\"; give one a different \"prefix\""
        );
        let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"prefix\": \"\"}, \"b\": {\"command\": \"y\", \"prefix\": \"\"}}}");
        assert!(e.ends_with("servers \"a\" and \"b\" both have an empty prefix; give one a different \"prefix\""), "{e}");
        let e = err("{\"mcpServers\": {\n \"a\": {\"command\": \"x\"},\n \"a\": {\"command\": \"y\"}}}");
        assert_eq!(e, "cfg.json:3:2: mcpServers.a: duplicate server name");
    }

    #[test]
    fn several_errors_reported_together() {
        let e = err("{\"mcpServers\": {\n \"a\": {\"args\": 1},\n \"b\": {\"command\": 2}}}");
        assert_eq!(
            e,
            "cfg.json:2:2: mcpServers.a: server \"a\" has no \"command\" (the program to run)\n\
             cfg.json:2:8: mcpServers.a.args: expected an array of strings, found a number\n\
             cfg.json:3:8: mcpServers.b.command: expected a string, found a number"
        );
    }

    #[test]
    fn task_caps() {
        let c = ok(r#"{"mcpServers": {"a": {"command": "x"}}, "tasks": {"maxPerClient": 2, "maxResultBytes": 1000, "maxTtlMs": 60000}}"#);
        let mut o = crate::hub::TaskOptions::default();
        c.tasks.apply(&mut o);
        assert_eq!((o.max_live_per_principal, o.max_result_bytes, o.max_ttl_ms), (2, 1000, 60_000));
        assert_eq!(o.max_tasks, crate::hub::TaskOptions::default().max_tasks, "absent keys keep the defaults");
        let e = err(r#"{"mcpServers": {"a": {"command": "x"}}, "tasks": {"maxTasks": 0}}"#);
        assert!(e.contains("tasks.maxTasks: expected a positive whole number, found 0"), "{e}");
        let e = err(r#"{"mcpServers": {"a": {"command": "x"}}, "tasks": 5}"#);
        assert!(e.contains("tasks: expected an object"), "{e}");
    }

    #[test]
    fn hub_hints_for_modern_clients() {
        let c = ok(r#"{"mcpServers": {"a": {"command": "x"}}, "cacheTtlMs": 0, "cachePublic": true, "inputTtlMs": 90000}"#);
        assert_eq!((c.cache_ttl_ms, c.cache_public, c.input_ttl_ms), (Some(0), Some(true), Some(90_000)));
        let c = ok(r#"{"mcpServers": {"a": {"command": "x"}}}"#);
        assert_eq!((c.cache_ttl_ms, c.cache_public, c.input_ttl_ms), (None, None, None));
        let e = err(r#"{"mcpServers": {"a": {"command": "x"}}, "cacheTtlMs": -1, "cachePublic": "yes", "inputTtlMs": 0}"#);
        assert!(e.contains("cacheTtlMs: expected a whole number of milliseconds, found -1"), "{e}");
        assert!(e.contains("inputTtlMs: expected a positive whole number of milliseconds, found 0"), "{e}");
        assert!(e.contains("cachePublic"), "{e}");
    }

    #[test]
    fn shutdown_grace() {
        let c = ok(r#"{"mcpServers": {"a": {"command": "x"}}, "shutdownGraceMs": 2500}"#);
        assert_eq!(c.shutdown_grace_ms, Some(2500));
        assert_eq!(ok(r#"{"mcpServers": {"a": {"command": "x"}}}"#).shutdown_grace_ms, None);
        let e = err(r#"{"mcpServers": {"a": {"command": "x"}}, "shutdownGraceMs": "10s"}"#);
        assert!(e.contains("shutdownGraceMs: expected a whole number of milliseconds"), "{e}");
    }

    #[test]
    fn warnings_for_unknown_keys_and_transports() {
        let c = ok(r#"{
  "mcpServers": {
    "ws": {"type": "websocket", "url": "ws://example.com/mcp"},
    "local": {"type": "stdio", "command": "x", "comand": "typo",
              "tools": {"allow": [], "block": []}}
  },
  "extra": 1
}"#);
        assert_eq!(c.servers.len(), 1);
        assert_eq!(c.servers[0].name, "local");
        assert!(c.servers[0].tools_allow.is_empty());
        assert_eq!(c.servers[0].remote, None);
        assert_eq!(
            c.warnings,
            [
                "cfg.json:7:3: extra: unknown key \"extra\" ignored (known keys here: mcpServers, separator, roots, logLevel, auth, http, cacheTtlMs, cachePublic, inputTtlMs, shutdownGraceMs, startupWaitMs, policy, tasks, lazy, idleStopMs, state, cluster)",
                "cfg.json:3:12: mcpServers.ws.type: transport \"websocket\" is not supported (use \"stdio\", \"http\" or \"sse\"); server \"ws\" is skipped",
                "cfg.json:4:48: mcpServers.local.comand: unknown key \"comand\" ignored (known keys here: command, args, env, cwd, disabled, timeoutMs, tools, prefix, revisions, url, headers, caFile, type, transport, inheritEnv, envAllow, maxRestarts, oauth, lazy, idleStopMs, trusted, isolation, maxInstances)",
                "cfg.json:5:38: mcpServers.local.tools.block: unknown key \"block\" ignored (known keys here: allow, deny)",
                "cfg.json:5:25: mcpServers.local.tools.allow: an empty allow list allows every tool; use \"deny\": [\"*\"] to hide them all",
            ]
        );
    }

    #[test]
    fn remote_servers() {
        use crate::remote::Mode;
        let c = ok(r#"{
  "mcpServers": {
    "remote": {"url": "http://example.com/mcp", "timeoutMs": 5000, "prefix": "r",
               "headers": {"X-B": "2", "Authorization": "Bearer ${TOKEN}"}},
    "legacy": {"type": "sse", "url": "http://127.0.0.1:3001/sse"},
    "pinned": {"transport": "http", "url": "http://localhost/mcp"}
  }
}"#);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let r = c.servers[0].remote.as_ref().unwrap();
        assert_eq!(r.url, "http://example.com/mcp");
        assert_eq!(r.headers, [("X-B".to_string(), "2".to_string()), ("Authorization".into(), "Bearer t0k".into())]);
        assert_eq!((r.mode, r.ca_file.as_deref()), (Mode::Auto, None));
        assert_eq!((c.servers[0].timeout_ms, c.servers[0].prefix.as_str(), c.servers[0].command.as_str()), (Some(5000), "r", ""));
        assert_eq!(c.servers[1].remote.as_ref().unwrap().mode, Mode::Sse);
        assert_eq!(c.servers[2].remote.as_ref().unwrap().mode, Mode::StreamableHttp);
    }

    #[test]
    fn oauth_blocks() {
        use crate::remote::oauth::{GrantKind, OAuthSpec};
        let c = ok(r#"{"mcpServers": {
            "a": {"url": "https://a.example/mcp", "oauth": {}},
            "b": {"url": "https://b.example/mcp", "oauth": {"clientId": "id", "clientSecret": "${TOKEN}", "scopes": ["r", "w"],
                  "grant": "client_credentials", "privateKeyFile": "k.pem", "signingAlg": "RS256", "openWith": "open -a X"}}}}"#);
        let o = |i: usize| c.servers[i].remote.as_ref().unwrap().oauth.clone().unwrap();
        let store = PathBuf::from("/home/u/.local/state/mcpx/oauth-tokens.json");
        assert_eq!(o(0), OAuthSpec { store: store.clone(), ..OAuthSpec::default() });
        let b = o(1);
        assert_eq!((b.client_id.as_deref(), b.client_secret.as_deref(), b.scopes.len()), (Some("id"), Some("t0k"), 2));
        assert_eq!((b.grant, b.private_key_file, b.signing_alg.as_deref()), (GrantKind::ClientCredentials, Some("/etc/mcpx/k.pem".into()), Some("RS256")));
        assert_eq!((b.open_with.as_deref(), b.store), (Some("open -a X"), store));

        let one = |oauth: &str| err(&format!(r#"{{"mcpServers": {{"s": {{"url": "https://x/", "oauth": {oauth}}}}}}}"#));
        assert!(one("true").contains("mcpServers.s.oauth: expected an object"));
        assert!(one(r#"{"grant": "password"}"#).contains("mcpServers.s.oauth.grant: unknown grant \"password\""));
        assert!(one(r#"{"grant": "client_credentials"}"#).contains("needs \"clientId\""));
        assert!(one(r#"{"clientSecret": "s"}"#).contains("\"clientSecret\" needs \"clientId\""));
        assert!(one(r#"{"clientMetadataUrl": "http://x/c.json"}"#).contains("must be https://"));
        assert!(one(r#"{"signingAlg": "HS256"}"#).contains("signingAlg \"HS256\" is not supported"));
        assert!(one(r#"{"privateKeyFile": "k.pem"}"#).contains("\"privateKeyFile\" is for \"grant\": \"client_credentials\""));
        assert!(one(r#"{"scopes": "a b"}"#).contains("mcpServers.s.oauth.scopes: expected an array of strings"));
        let e = err(r#"{"mcpServers": {"s": {"url": "https://x/", "headers": {"authorization": "Bearer t"}, "oauth": {}}}}"#);
        assert!(e.contains("mcpServers.s.oauth: header \"Authorization\" and \"oauth\" are both set"), "{e}");
        let e = err(r#"{"mcpServers": {"s": {"command": "x", "oauth": {}}}}"#);
        assert!(e.contains("mcpServers.s.oauth: \"oauth\" is for remote servers"), "{e}");
    }

    #[test]
    fn remote_server_errors() {
        let one = |server: &str| err(&format!(r#"{{"mcpServers": {{"s": {server}}}}}"#));
        let e = one(r#"{"url": "ftp://x/"}"#);
        assert!(e.contains("mcpServers.s.url: url \"ftp://x/\": unsupported URL scheme"), "{e}");
        let e = one(r#"{"url": "http://x/", "command": "y"}"#);
        assert!(e.contains("\"command\" and \"url\" both given"), "{e}");
        let e = one(r#"{"type": "sse"}"#);
        assert!(e.contains("a remote server needs a \"url\""), "{e}");
        let e = one(r#"{"url": "http://x/", "headers": {"Host": "y"}}"#);
        assert!(e.contains("mcpServers.s.headers: header \"Host\" is set by mcpx itself"), "{e}");
        let e = one(r#"{"url": "http://x/", "headers": {"X-A": "${NOPE}"}}"#);
        assert!(e.contains("NOPE is not set"), "{e}");
        let e = one(r#"{"url": "http://x/", "caFile": "ca.pem"}"#);
        assert!(e.contains("mcpServers.s.caFile: caFile is set but the url is http://"), "{e}");
        let e = one(r#"{"url": "http://x/", "args": ["a"]}"#);
        assert!(e.contains("mcpServers.s.args: \"args\" is for local servers"), "{e}");
        let e = one(r#"{"command": "x", "headers": {"A": "b"}}"#);
        assert!(e.contains("mcpServers.s.headers: \"headers\" is for remote servers"), "{e}");
        let e = one(r#"{"url": "https://x/", "caFile": "/nonexistent/ca.pem"}"#);
        #[cfg(feature = "tls")]
        assert!(e.contains("mcpServers.s.caFile: caFile /nonexistent/ca.pem: cannot read it"), "{e}");
        #[cfg(not(feature = "tls"))]
        assert!(e.contains("built without TLS support"), "{e}");
    }

    #[test]
    fn disabled_servers_are_not_validated_further() {
        let c = ok("{\"mcpServers\": {\"a\": {\"disabled\": true}}}");
        assert!(c.servers.is_empty());
        assert_eq!(c.disabled, ["a"]);
    }

    #[test]
    fn search_path_order() {
        let with_xdg = |n: &str| match n {
            "XDG_CONFIG_HOME" => Some("/x".to_string()),
            "HOME" => Some("/h".to_string()),
            _ => None,
        };
        assert_eq!(
            search_path(&with_xdg),
            [PathBuf::from("mcpx.json"), PathBuf::from("/x/mcpx/config.json")]
        );
        let home_only = |n: &str| (n == "HOME").then(|| "/h".to_string());
        assert_eq!(
            search_path(&home_only),
            [PathBuf::from("mcpx.json"), PathBuf::from("/h/.config/mcpx/config.json")]
        );
    }

    #[test]
    fn load_reports_missing_explicit_file_and_uses_builtin_otherwise() {
        let e = load(Some(FsPath::new("/nonexistent/mcpx.json")), &env).unwrap_err().to_string();
        assert!(e.starts_with("/nonexistent/mcpx.json: cannot read config file: "), "{e}");
        let none = |_: &str| None;
        // The working directory of tests has no mcpx.json.
        let c = load(None, &none).unwrap();
        assert_eq!(c.source, Source::BuiltIn);
        let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["demo", "notes"]);
        assert_eq!(c.servers[0].args, ["example-server", "--demo", "--name", "demo"]);
    }

    #[test]
    fn load_reads_a_file_and_resolves_paths_next_to_it() {
        let dir = std::env::temp_dir().join(format!("mcpx-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("config.json");
        std::fs::write(&f, r#"{"mcpServers": {"a": {"command": "x", "cwd": "sub"}}}"#).unwrap();
        let c = load(Some(&f), &env).unwrap();
        assert_eq!(c.source, Source::File(f.clone()));
        let at = Path::root().key("mcpServers").key("a").key("cwd");
        assert_eq!(c.position(&at), Some(format!("{}:1:39", f.display())));
        assert_eq!(c.servers[0].cwd, Some(dir.join("sub")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
