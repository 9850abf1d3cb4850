//! `policy.approve` (the rules) and `policy.approvals` (timeout, approvers,
//! bounds, notification), mapped into [`ApprovalConfig`].

use serde_json::Value;

use super::ctx::{Ctx, Object};
use crate::bytes::jsonpos::Path;
use crate::policy::approval::{ApprovalConfig, Notify, Rule, Via};
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
        "{\"command\": [\"/usr/local/bin/notify-approval\"]}",
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

/// `{"command": [..]}`.
fn notify(cx: &mut Ctx<'_>, at: &Path, o: &Object) -> Option<Notify> {
    cx.unknown_keys(at, o, &["command"]);
    let Some(c) = o.get("command") else {
        cx.err(at, "expected {\"command\": [\"PROGRAM\", \"ARG\", ..]}");
        return None;
    };
    match cx.strings(&at.key("command"), c)? {
        argv if argv.is_empty() => {
            cx.err(&at.key("command"), "expected a command and its arguments");
            None
        }
        command => Some(Notify { command }),
    }
}
