//! `"policy"`: rate limits, catalogs, validation, audit, metrics, the
//! marks of untrusted annotations and the pinning of definitions, mapped into [`PolicyConfig`] (the
//! options `crate::policy` takes).

use serde_json::Value;

use super::ctx::{Ctx, Object};
use crate::bytes::jsonpos::Path;
use crate::policy::catalog_acl::{Catalog, Catalogs, Pattern};
use crate::policy::ratelimit::{ClassLimits, Rate, RateLimitConfig};
use crate::policy::{AuditSettings, OutputCheck, PolicyConfig, UntrustedAnnotations, ValidateSettings};
#[cfg(feature = "consent")]
use crate::policy::{PinSettings, Quarantine};

pub(super) fn parse_policy(cx: &mut Ctx<'_>, top: &Path, obj: &Object) -> PolicyConfig {
    let mut out = PolicyConfig::default();
    let at = top.key("policy");
    let Some(p) = cx.block(&at, obj.get("policy"), "") else { return out };
    cx.unknown_keys(&at, p, &["rateLimits", "catalogs", "validate", "audit", "metrics", "untrustedAnnotations", "pin", "approve", "approvals"]);
    match p.get("rateLimits") {
        None | Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => out.rate_limits = RateLimitConfig::off(),
        Some(v) => {
            if let Some(r) = cx.object(&at.key("rateLimits"), v, "") {
                parse_rate_limits(cx, &at.key("rateLimits"), r, &mut out.rate_limits);
            }
        }
    }
    if let Some(v) = p.get("catalogs") {
        if let Some(cs) = cx.object(&at.key("catalogs"), v, "") {
            parse_catalogs(cx, &at.key("catalogs"), cs, &mut out.catalogs);
        }
    }
    match p.get("validate") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(v) => out.validate = parse_validate(cx, &at.key("validate"), v),
    }
    if let Some(a) = cx.block(&at.key("audit"), p.get("audit"), "") {
        out.audit = Some(parse_audit(cx, &at.key("audit"), a));
    }
    if let Some(v) = p.get("metrics") {
        out.metrics = cx.bool(&at.key("metrics"), v).unwrap_or(true);
    }
    #[cfg(feature = "consent")]
    super::approvals::parse(cx, &at, p, &mut out.approvals);
    #[cfg(not(feature = "consent"))]
    for key in ["approve", "approvals", "pin"].into_iter().filter(|k| p.contains_key(*k)) {
        cx.err(&at.key(key), "this build has no approvals and pinning (built without the `consent` feature)");
    }
    if let Some(v) = p.get("untrustedAnnotations") {
        match cx.string(&at.key("untrustedAnnotations"), v).as_deref() {
            Some("mark") => out.untrusted_annotations = UntrustedAnnotations::Mark,
            Some("remove") => out.untrusted_annotations = UntrustedAnnotations::Remove,
            Some(other) => cx.err(&at.key("untrustedAnnotations"), format!("{other:?} is not \"mark\" or \"remove\"")),
            None => {}
        }
    }
    #[cfg(feature = "consent")]
    match p.get("pin") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(v) => out.pin = parse_pin(cx, &at.key("pin"), v),
    }
    out
}

/// `"pin": "warn" | "approve" | "hide" | {"mode", "findings", "lockFile"}`.
#[cfg(feature = "consent")]
fn parse_pin(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Option<PinSettings> {
    if v.is_string() {
        let mode = quarantine(cx, at, v)?;
        return Some(PinSettings { mode, findings: mode, lock_file: None });
    }
    let o = cx.object(at, v, "{\"mode\": \"hide\"}")?;
    cx.unknown_keys(at, o, &["mode", "findings", "lockFile"]);
    let mode = match o.get("mode") {
        Some(v) => quarantine(cx, &at.key("mode"), v)?,
        None => Quarantine::Warn,
    };
    let findings = match o.get("findings") {
        Some(v) => quarantine(cx, &at.key("findings"), v)?,
        None => mode,
    };
    let lock_file = match o.get("lockFile") {
        Some(v) => {
            let f = cx.string(&at.key("lockFile"), v)?;
            Some(cx.path(&at.key("lockFile"), &f)?)
        }
        None => None,
    };
    Some(PinSettings { mode, findings, lock_file })
}

/// `"warn"`, `"approve"` or `"hide"`.
#[cfg(feature = "consent")]
fn quarantine(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Option<Quarantine> {
    match cx.string(at, v)?.as_str() {
        "warn" => Some(Quarantine::Warn),
        "approve" => Some(Quarantine::Approve),
        "hide" => Some(Quarantine::Hide),
        other => {
            cx.err(at, format!("{other:?} is not \"warn\", \"approve\" or \"hide\""));
            None
        }
    }
}

/// A rate string, or null for off.
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

/// `"rateLimits": {CLASS: {..}, "progressPerRequest", "logsPerRequest", "maxBuckets"}`.
fn parse_rate_limits(cx: &mut Ctx<'_>, at: &Path, r: &Object, cfg: &mut RateLimitConfig) {
    let classes = ["toolCalls", "completions", "serverRequests", "taskRequests"];
    let nums = ["progressPerRequest", "logsPerRequest", "maxBuckets"];
    let known: Vec<&str> = classes.iter().chain(&nums).copied().collect();
    cx.unknown_keys(at, r, &known);
    for key in classes {
        let Some(v) = r.get(key) else { continue };
        let at = at.key(key);
        let Some(c) = cx.object(&at, v, "") else { continue };
        let limits: &mut ClassLimits = match key {
            "toolCalls" => &mut cfg.tool_calls,
            "completions" => &mut cfg.completions,
            "taskRequests" => &mut cfg.task_requests,
            _ => &mut cfg.server_requests,
        };
        parse_class(cx, &at, c, limits);
    }
    for key in nums {
        let Some(v) = r.get(key) else { continue };
        let n = if v.is_null() && key != "maxBuckets" { Some(None) } else { cx.positive(&at.key(key), v).map(Some) };
        match (key, n) {
            (_, None) => {}
            ("progressPerRequest", Some(n)) => cfg.progress_per_request = n.map(|n| n.min(u32::MAX.into()) as u32),
            ("logsPerRequest", Some(n)) => cfg.logs_per_request = n.map(|n| n.min(u32::MAX.into()) as u32),
            (_, Some(n)) => cfg.max_buckets = n.unwrap_or(1) as usize,
        }
    }
}

/// One class of rate limits: `{"perPrincipal", "perServer", "perTool": {GLOB: RATE}}`.
fn parse_class(cx: &mut Ctx<'_>, at: &Path, c: &Object, limits: &mut ClassLimits) {
    cx.unknown_keys(at, c, &["perPrincipal", "perServer", "perTool"]);
    if let Some(v) = c.get("perPrincipal") {
        limits.per_principal = rate(cx, &at.key("perPrincipal"), v).unwrap_or(limits.per_principal);
    }
    if let Some(v) = c.get("perServer") {
        limits.per_server = rate(cx, &at.key("perServer"), v).unwrap_or(limits.per_server);
    }
    if let Some(v) = c.get("perTool") {
        let at = at.key("perTool");
        if let Some(globs) = cx.object(&at, v, "") {
            // First match wins: keep the file's order.
            for (glob, _) in cx.keys_in_order(&at) {
                let Some(v) = globs.get(&glob) else { continue };
                if let Some(Some(r)) = rate(cx, &at.key(&glob), v) {
                    limits.per_tool.push((glob, r));
                }
            }
        }
    }
}

/// `"catalogs": {PRINCIPAL: {"allow", "deny", "toolSearch"}}`.
fn parse_catalogs(cx: &mut Ctx<'_>, at: &Path, cs: &Object, out: &mut Catalogs) {
    for (principal, c) in cs {
        let at = at.key(principal);
        let Some(c) = cx.object(&at, c, "") else { continue };
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
        out.entries.push((principal.clone(), cat));
    }
}

/// `"validate": true | {"servers", "arguments", "elicitation", "output"}`.
fn parse_validate(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Option<ValidateSettings> {
    let mut s = ValidateSettings { servers: vec!["*".into()], arguments: true, elicitation: true, output: OutputCheck::Log };
    let empty = serde_json::Map::new();
    let o = if v == &Value::Bool(true) { &empty } else { cx.object(at, v, "")? };
    cx.unknown_keys(at, o, &["servers", "arguments", "elicitation", "output"]);
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
        cx.err(at, "this build has no JSON Schema validation (built without the `validate` feature)");
    }
    Some(s)
}

/// `"audit": {"file", "maxBytes", "files", "arguments", "redact", "queue"}`.
fn parse_audit(cx: &mut Ctx<'_>, at: &Path, a: &Object) -> AuditSettings {
    let nums = ["maxBytes", "files", "queue"];
    cx.unknown_keys(at, a, &["file", "maxBytes", "files", "arguments", "redact", "queue"]);
    let mut s = AuditSettings { file: None, max_bytes: 10 * 1024 * 1024, files: 5, content: Default::default(), queue: 4096 };
    match a.get("file") {
        None => cx.err(at, "missing \"file\" (a path, or \"stderr\")"),
        Some(v) => match cx.string(&at.key("file"), v) {
            Some(f) if f == "stderr" => {}
            Some(f) if f.is_empty() => cx.err(&at.key("file"), "is empty (a path, or \"stderr\")"),
            Some(f) => s.file = cx.path(&at.key("file"), &f),
            None => {}
        },
    }
    for key in nums {
        let Some(n) = a.get(key).and_then(|v| cx.positive(&at.key(key), v)) else { continue };
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
    s
}
