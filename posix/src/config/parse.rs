//! The top level of a config file: each block to its module, the plain
//! top-level keys here, then `"mcpServers"` in the file's order.

use std::path::Path as FsPath;

use serde_json::Value;

use super::cluster::parse_cluster;
use super::ctx::{type_name, Ctx, Object};
use super::error::{ConfigError, Problem, ProblemKind};
use super::http::parse_http;
use super::policy::parse_policy;
use super::process::{mark_secrets, parse_power, Power};
use super::roots::parse_roots;
use super::server::{parse_server, Parsed, ServerConfig};
use super::tasks::parse_tasks;
use super::{Config, Source, DEFAULT_SEPARATOR};
use crate::host::dirs::EnvLookup;
use crate::bytes::jsonpos::Path;
use crate::log::Level;

// `"traces"` only in a build with tracing: elsewhere it is an unknown key
// (a warning), at no cost to a small build.
const TOP_KEYS: &[&str] = &[
    "mcpServers", "separator", "roots", "logLevel", "auth", "http", "cacheTtlMs", "cachePublic", "inputTtlMs",
    "shutdownGraceMs", "startupWaitMs", "policy", "tasks", "lazy", "idleStopMs", "state", "cluster", "secrets",
    #[cfg(feature = "traces")]
    "traces",
];

/// Parses config text. `file` names it in messages; `base` resolves relative
/// paths. `source` of the result is `BuiltIn` until [`super::load`] sets it.
pub fn parse(src: &str, file: &str, base: &FsPath, env: EnvLookup<'_>) -> Result<Config, ConfigError> {
    let root: Value = serde_json::from_str(src).map_err(|e| {
        let mut msg = e.to_string();
        if let Some(i) = msg.rfind(" at line ") {
            msg.truncate(i);
        }
        let line = (e.line() > 0).then(|| (e.line(), e.column()));
        ConfigError::one(file, line, ProblemKind::Syntax(msg))
    })?;
    let mut cx = Ctx { src, file, base, env, errors: Vec::new(), warnings: Vec::new() };
    let top = Path::root();
    let Value::Object(obj) = &root else {
        cx.err(&top, format!("expected a JSON object with \"mcpServers\", found {}", type_name(&root)));
        return Err(ConfigError(cx.errors));
    };
    cx.unknown_keys(&top, obj, TOP_KEYS);
    let power = parse_power(&mut cx, &top, obj, Power::default());
    let http = parse_http(&mut cx, &top, obj);
    let policy = parse_policy(&mut cx, &top, obj);
    #[cfg(feature = "consent")]
    super::approvals::check_link_origin(&mut cx, &top, &http, &policy);
    let tasks = parse_tasks(&mut cx, &top, obj);
    #[cfg(feature = "traces")]
    let traces = super::traces::parse_traces(&mut cx, &top, obj);
    let separator = parse_separator(&mut cx, &top, obj.get("separator"));
    let log_level = obj.get("logLevel").and_then(|v| parse_level(&mut cx, &top.key("logLevel"), v));
    let mut ms = |key: &str, min: u64| millis(&mut cx, &top.key(key), obj.get(key), min);
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
    let (mut servers, disabled) = parse_servers(&mut cx, &top, obj, &separator, power);
    check_prefixes(&mut cx, &top.key("mcpServers"), &servers);
    #[cfg(feature = "secrets")]
    let keeps_tokens = servers.iter().any(|s| s.per_principal_oauth().is_some());
    #[cfg(not(feature = "secrets"))]
    let keeps_tokens = false;
    let cluster = parse_cluster(&mut cx, &top, obj, keeps_tokens);
    let secrets = parse_secrets(&mut cx, &top, obj, &servers);
    #[cfg(all(feature = "secrets", feature = "oauth"))]
    super::remote::check_token_exchange(&mut cx, &top, &http, &servers);
    if !cx.errors.is_empty() {
        return Err(ConfigError(cx.errors));
    }
    mark_secrets(obj, &mut servers);
    Ok(Config {
        source: Source::BuiltIn,
        servers,
        disabled,
        secrets,
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
        #[cfg(feature = "traces")]
        traces,
        warnings: cx.warnings,
        text: src.to_string(),
    })
}

/// `"separator"`: not empty, and only what tool names allow.
fn parse_separator(cx: &mut Ctx<'_>, top: &Path, v: Option<&Value>) -> String {
    let Some(v) = v else { return DEFAULT_SEPARATOR.to_string() };
    let at = top.key("separator");
    match cx.string(&at, v) {
        Some(s) if s.is_empty() => cx.err(&at, "must not be empty"),
        Some(s) if !s.bytes().all(mcpx_core::names::is_separator_byte) => {
            cx.err(&at, format!("{s:?} may only use letters, digits, `_`, `-` and `.` (tool names allow no more)"))
        }
        Some(s) => return s,
        None => {}
    }
    DEFAULT_SEPARATOR.to_string()
}

/// `"logLevel"`.
fn parse_level(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Option<Level> {
    let s = cx.string(at, v)?;
    let l = Level::parse(&s);
    if l.is_none() {
        cx.err(at, format!("{s:?} is not a log level (error, warn, info or debug)"));
    }
    l
}

/// A duration in milliseconds, at least `min`; `null` is absent.
fn millis(cx: &mut Ctx<'_>, at: &Path, v: Option<&Value>, min: u64) -> Option<u64> {
    let v = v.filter(|v| !v.is_null())?;
    match v.as_u64() {
        Some(n) if n >= min => Some(n),
        _ => {
            let what = if min > 0 { "a positive" } else { "a" };
            cx.err(at, format!("expected {what} whole number of milliseconds, found {v}"));
            None
        }
    }
}

/// `"mcpServers"`: the enabled servers in the file's order, and the names
/// of the disabled ones.
fn parse_servers(cx: &mut Ctx<'_>, top: &Path, obj: &Object, sep: &str, power: Power) -> (Vec<ServerConfig>, Vec<String>) {
    let (mut servers, mut disabled) = (Vec::new(), Vec::new());
    let at = top.key("mcpServers");
    let map = match obj.get("mcpServers") {
        None => {
            cx.err(top, "missing \"mcpServers\" (an object of servers by name)");
            return (servers, disabled);
        }
        Some(Value::Object(map)) => map,
        Some(other) => {
            cx.err(&at, format!("expected an object of servers by name, found {}", type_name(other)));
            return (servers, disabled);
        }
    };
    // serde_json collapses duplicate keys and does not keep order: take
    // both from the text.
    let mut seen: Vec<String> = Vec::new();
    for (name, off) in cx.keys_in_order(&at) {
        if seen.contains(&name) {
            let line = Some(crate::bytes::jsonpos::line_col(cx.src, off));
            let kind = ProblemKind::Key { path: at.key(&name), msg: "duplicate server name".into() };
            cx.errors.push(Problem { file: cx.file.to_string(), line, kind });
            continue;
        }
        seen.push(name.clone());
        let Some(v) = map.get(&name) else { continue };
        match parse_server(cx, &at.key(&name), &name, v, sep, power) {
            Parsed::Server(s) => servers.push(*s),
            Parsed::Disabled => disabled.push(name.clone()),
            Parsed::Skipped | Parsed::Invalid => {}
        }
    }
    (servers, disabled)
}

/// Two servers with one prefix would shadow each other's names.
fn check_prefixes(cx: &mut Ctx<'_>, at: &Path, servers: &[ServerConfig]) {
    for (i, a) in servers.iter().enumerate() {
        for b in &servers[..i] {
            if a.prefix == b.prefix {
                let what = if a.prefix.is_empty() {
                    "both have an empty prefix".to_string()
                } else {
                    format!("both use the prefix {:?}", a.prefix)
                };
                cx.err(&at.key(&a.name), format!("servers {:?} and {:?} {what}; give one a different \"prefix\"", b.name, a.name));
            }
        }
    }
}

/// `"secrets": "FILE"`: each principal's own secrets, which a server's
/// `env` and headers name as `${secret:NAME}` (read when a principal's
/// instance starts: `reload::secrets`). Required once a server names one.
fn parse_secrets(cx: &mut Ctx<'_>, top: &Path, obj: &Object, servers: &[ServerConfig]) -> Option<std::path::PathBuf> {
    let at = top.key("secrets");
    let file = obj.get("secrets").filter(|v| !v.is_null()).and_then(|v| cx.string(&at, v)).and_then(|s| cx.path(&at, &s));
    #[cfg(not(feature = "secrets"))]
    let _ = servers;
    #[cfg(feature = "secrets")]
    if file.is_none() {
        if let Some(s) = servers.iter().find(|s| s.secrets().next().is_some()) {
            let name = s.secrets().next().unwrap_or_default();
            cx.err(&top.key("mcpServers").key(&s.name), format!("names the per-principal secret {name} (`${{secret:{name}}}`), but no \"secrets\" file is configured: add \"secrets\": \"secrets.json\" (an object of principals, each an object of secrets)"));
        }
    }
    file
}
