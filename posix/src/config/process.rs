//! The keys of a server about its process: its environment (`"env"`,
//! `"inheritEnv"`, `"envAllow"` and the secrets no child inherits),
//! `"maxRestarts"`, when it runs (`"lazy"`, `"idleStopMs"`) and how many
//! run (`"isolation"`, `"maxInstances"`).

use serde_json::Value;

use super::ctx::{type_name, Ctx, Object};
use super::ServerConfig;
use crate::servers::backoff::DEFAULT_MAX_RESTARTS;
use crate::process::childenv;
use crate::hub::{Isolation, DEFAULT_MAX_INSTANCES};
use crate::bytes::jsonpos::Path;

/// `"env"`: set over what the process inherits, in the file's order.
pub(super) fn parse_env(cx: &mut Ctx<'_>, at: &Path, v: Option<&Value>) -> Vec<(String, String)> {
    let mut env = Vec::new();
    match v {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, _) in cx.keys_in_order(&at.key("env")) {
                let Some(val) = m.get(&k) else { continue };
                if env.iter().any(|(e, _): &(String, String)| e == &k) {
                    continue;
                }
                let vat = at.key("env").key(&k);
                if k.is_empty() || k.contains('=') || k.contains('\0') {
                    cx.err(&vat, "environment variable names must be non-empty without `=`");
                    continue;
                }
                if let Some(s) = cx.string_keeping_secrets(&vat, val) {
                    if s.contains('\0') {
                        cx.err(&vat, "must not contain a NUL character");
                    } else {
                        env.push((k, s));
                    }
                }
            }
        }
        Some(other) => cx.err(&at.key("env"), format!("expected an object of strings, found {}", type_name(other))),
    }
    env
}

/// Longest `"maxInstances"` accepted.
const MAX_MAX_INSTANCES: u64 = 256;

/// `"isolation": "shared" | "client"` (default shared) and `"maxInstances"`
/// (with `"client"`; default 8): one process for every client, or one per
/// client principal (`hub::starts::isolation`); for a remote server, one
/// session per client principal.
pub(super) fn parse_isolation(cx: &mut Ctx<'_>, at: &Path, obj: &Object) -> Isolation {
    let mode = obj.get("isolation").and_then(|v| cx.string(&at.key("isolation"), v));
    let max = match obj.get("maxInstances") {
        None => DEFAULT_MAX_INSTANCES,
        Some(v) => match v.as_u64().filter(|n| (1..=MAX_MAX_INSTANCES).contains(n)) {
            Some(n) => n as usize,
            None => {
                cx.err(&at.key("maxInstances"), format!("expected a whole number from 1 to {MAX_MAX_INSTANCES}, found {v}"));
                DEFAULT_MAX_INSTANCES
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
pub(super) fn parse_power(cx: &mut Ctx<'_>, at: &Path, obj: &Object, defaults: Power) -> Power {
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

/// Longest `"maxRestarts"` accepted.
const MAX_MAX_RESTARTS: u64 = 1000;

/// A server's process keys: `"inheritEnv"` and `"envAllow"` (local servers
/// only; an allow list without `"inheritEnv"` means `false`), and
/// `"maxRestarts"`. The secrets of the policy are filled in by
/// [`mark_secrets`] once the whole file is read.
pub(super) fn parse_process_keys(
    cx: &mut Ctx<'_>,
    at: &Path,
    obj: &Object,
    local: bool,
) -> (childenv::Policy, u32) {
    let mut policy = childenv::Policy::default();
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
        None | Some(Value::Null) => DEFAULT_MAX_RESTARTS,
        Some(v) => match v.as_u64().filter(|&n| n <= MAX_MAX_RESTARTS) {
            Some(n) => n as u32,
            None => {
                cx.err(&at.key("maxRestarts"), format!("expected a whole number from 0 to {MAX_MAX_RESTARTS}, found {v}"));
                DEFAULT_MAX_RESTARTS
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
pub(super) fn mark_secrets(root: &Object, servers: &mut [ServerConfig]) {
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
    let mut secrets: Vec<String> = texts.iter().flat_map(|t| childenv::referenced_vars(t)).collect();
    secrets.sort();
    secrets.dedup();
    for s in servers {
        s.env_policy.secrets = secrets.clone();
    }
}
