//! `policy.approve` (the rules) and `policy.approvals` (timeout, approvers,
//! bounds, notification), mapped into [`ApprovalConfig`].

use serde_json::Value;

use super::ctx::{Ctx, Object};
use super::HttpSettings;
use crate::policy::PolicyConfig;
use crate::bytes::jsonpos::Path;
use crate::policy::approval::{ApprovalConfig, Carrier, Format, Notify, Post, Rule, Via};
use crate::remote::url::{Scheme, Url};
use crate::remote::{Mode, RemoteSpec};
use crate::policy::catalog_acl::Pattern;

/// The annotations a rule may name (both default to true in the
/// specification, so a tool that says nothing is covered).
const ANNOTATIONS: [&str; 2] = ["destructiveHint", "openWorldHint"];

pub(super) fn parse(cx: &mut Ctx<'_>, at: &Path, p: &Object, out: &mut ApprovalConfig) {
    if let Some(v) = p.get("approve") {
        let at = at.key("approve");
        match v {
            Value::Array(rules) => {
                for (i, r) in rules.iter().enumerate() {
                    if let Some(r) = rule(cx, &at.idx(i), r) {
                        out.rules.push(r);
                    }
                }
            }
            other => cx.err(&at, format!("expected an array like [\"*/delete_*\", {{\"tools\": [\"files/write_*\"], \"via\": [\"page\"]}}], found {}", super::ctx::type_name(other))),
        }
    }
    let Some(o) = cx.block(&at.key("approvals"), p.get("approvals"), "") else {
        return;
    };
    let at = at.key("approvals");
    cx.unknown_keys(&at, o, &["timeoutMs", "approvers", "maxWaiting", "notify"]);
    if let Some(v) = o.get("timeoutMs") {
        out.timeout_ms = cx
            .positive(&at.key("timeoutMs"), v)
            .unwrap_or(out.timeout_ms);
    }
    if let Some(v) = o.get("approvers") {
        out.approvers = cx.strings(&at.key("approvers"), v).unwrap_or_default();
    }
    if let Some(v) = o.get("maxWaiting") {
        out.max_waiting = cx
            .positive(&at.key("maxWaiting"), v)
            .map_or(out.max_waiting, |n| n as usize);
    }
    if let Some(n) = cx.block(
        &at.key("notify"),
        o.get("notify"),
        "{\"url\": \"https://ntfy.sh/TOPIC\", \"format\": \"ntfy\", \"linkBase\": \"https://mcpx.example.net\"}",
    ) {
        out.notify = notify(cx, &at.key("notify"), n);
    }
}

/// One rule: a pattern, or `{"tools", "annotations", "principals", "via",
/// "rememberMs"}`.
fn rule(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Option<Rule> {
    let pattern = |cx: &mut Ctx<'_>, at: &Path, s: &str| match Pattern::parse(s) {
        Ok(p) => Some(p),
        Err(e) => {
            cx.err(at, e);
            None
        }
    };
    let o = match v {
        Value::String(_) => {
            return cx
                .string(at, v)
                .and_then(|s| pattern(cx, at, &s))
                .map(Rule::pattern)
        }
        v => cx.object(
            at,
            v,
            "\"files/delete_*\" or {\"tools\": [\"files/*\"], \"via\": [\"page\"]}",
        )?,
    };
    cx.unknown_keys(
        at,
        o,
        &["tools", "annotations", "principals", "via", "rememberMs"],
    );
    let mut r = Rule::default();
    if let Some(v) = o.get("tools") {
        for (i, s) in cx
            .strings(&at.key("tools"), v)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            r.tools.extend(pattern(cx, &at.key("tools").idx(i), s));
        }
    }
    if let Some(v) = o.get("annotations") {
        for (i, a) in cx
            .strings(&at.key("annotations"), v)
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            if ANNOTATIONS.contains(&a.as_str()) {
                r.annotations.push(a);
            } else {
                cx.err(&at.key("annotations").idx(i), format!("{a:?} is not one of {ANNOTATIONS:?} (annotations can require approval, never waive it)"));
            }
        }
    }
    if r.tools.is_empty() && r.annotations.is_empty() {
        cx.err(at, "a rule needs \"tools\" patterns or \"annotations\"");
    }
    if let Some(v) = o.get("principals") {
        r.principals = cx.strings(&at.key("principals"), v).unwrap_or_default();
    }
    if let Some(v) = o.get("via") {
        let mut via = Vec::new();
        for (i, s) in cx
            .strings(&at.key("via"), v)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            match s.as_str() {
                "client" => via.push(Via::Client),
                "page" => via.push(Via::Page),
                other => cx.err(
                    &at.key("via").idx(i),
                    format!("{other:?} is not \"client\" or \"page\""),
                ),
            }
        }
        if via.is_empty() {
            cx.err(
                &at.key("via"),
                "name at least one approver: \"client\" or \"page\"",
            );
        } else {
            r.via = via;
        }
    }
    if let Some(v) = o.get("rememberMs") {
        match v.as_u64() {
            Some(n) => r.remember_ms = n,
            None => cx.err(
                &at.key("rememberMs"),
                format!("expected a whole number of milliseconds, found {v}"),
            ),
        }
    }
    Some(r)
}

/// `{"command": [..]}` or `{"url", "format", "headers"}`, and `linkBase`.
fn notify(cx: &mut Ctx<'_>, at: &Path, o: &Object) -> Option<Notify> {
    cx.unknown_keys(at, o, &["command", "url", "format", "headers", "linkBase"]);
    let carrier = match (o.get("command"), o.get("url")) {
        (Some(_), Some(_)) => {
            cx.err(at, "give \"command\" or \"url\", not both");
            None
        }
        (None, None) => {
            cx.err(at, "expected {\"url\": \"https://ntfy.sh/TOPIC\", \"format\": \"ntfy\"} or {\"command\": [\"PROGRAM\", \"ARG\", ..]}");
            None
        }
        (Some(c), None) => {
            for k in ["format", "headers"].into_iter().filter(|k| o.contains_key(*k)) {
                cx.err(&at.key(k), format!("{k:?} goes with \"url\"; a command is given the call in its environment"));
            }
            command(cx, &at.key("command"), c)
        }
        (None, Some(u)) => post(cx, at, o, u),
    };
    let link_base = match o.get("linkBase") {
        Some(v) => link_base(cx, &at.key("linkBase"), v),
        None => None,
    };
    Some(Notify { carrier: carrier?, link_base })
}

fn command(cx: &mut Ctx<'_>, at: &Path, c: &Value) -> Option<Carrier> {
    match cx.strings(at, c)? {
        argv if argv.is_empty() => {
            cx.err(at, "expected a command and its arguments");
            None
        }
        argv => Some(Carrier::Command(argv)),
    }
}

/// `"url"` (http or https, no user info: credentials go in `"headers"`),
/// checked as the remote transport checks a server's; `"format"`,
/// `"headers"`.
fn post(cx: &mut Ctx<'_>, at: &Path, o: &Object, u: &Value) -> Option<Carrier> {
    let url = cx.string(&at.key("url"), u);
    let headers = super::remote::parse_headers(cx, at, o);
    let format = match o.get("format") {
        None => Some(Format::Json),
        Some(v) => match cx.string(&at.key("format"), v)?.as_str() {
            "json" => Some(Format::Json),
            "ntfy" => Some(Format::Ntfy),
            other => {
                cx.err(&at.key("format"), format!("{other:?} is not \"json\" or \"ntfy\""));
                None
            }
        },
    };
    let url = url?;
    let spec = RemoteSpec { name: String::new(), url: url.clone(), headers: headers.clone(), ca_file: None, timeout_ms: 0, mode: Mode::Auto, oauth: None };
    if let Err(e) = spec.check() {
        let key = e.config_key();
        cx.err(&at.key(key), e);
        return None;
    }
    if let Ok(u) = Url::parse(&url) {
        if u.scheme == Scheme::Http && !is_loopback(&u.host) {
            cx.warn(&at.key("url"), "a plain http:// URL to another host: the one-time link (a credential for the call) travels unencrypted");
        }
    }
    Some(Carrier::Post(Post { url, format: format?, headers }))
}

/// `"linkBase"`: the absolute URL an approver's browser reaches the
/// listener at, without query or fragment; kept without its trailing `/`.
fn link_base(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Option<String> {
    let s = cx.string(at, v)?;
    let example = "expected the URL an approver's browser reaches this hub at, like \"https://mcpx.example.net\"";
    match Url::parse(&s) {
        Ok(u) if !u.target.contains('?') && !s.contains('#') => Some(u.to_string().trim_end_matches('/').to_string()),
        Ok(_) => {
            cx.err(at, format!("{example} (no query or fragment)"));
            None
        }
        Err(e) => {
            cx.err(at, format!("{example}: {e}"));
            None
        }
    }
}

/// Warns when the listener would refuse the `Origin` of `linkBase`: the
/// page's Approve and Deny buttons post from it.
pub(super) fn check_link_origin(cx: &mut Ctx<'_>, top: &Path, http: &HttpSettings, policy: &PolicyConfig) {
    let Some(base) = policy.approvals.notify.as_ref().and_then(|n| n.link_base.as_deref()) else { return };
    let Ok(u) = Url::parse(base) else { return };
    let full = u.to_string();
    let origin = &full[..full.len() - u.target.len()];
    let guard = crate::http::origin::Guard::new(&http.allowed_origins, &[], std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
    if !guard.origin_ok(Some(origin.as_bytes())) {
        let at = top.key("policy").key("approvals").key("notify").key("linkBase");
        cx.warn(&at, format!("the page's Approve and Deny buttons post from {origin}, which the listener refuses: add it to \"http\": {{\"allowedOrigins\": [..]}}"));
    }
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback())
}
