//! What every result to a modern client carries: `resultType`, the hub's
//! `serverInfo` in `_meta` and, for lists, reads and `server/discover`,
//! caching hints (see the decisions in the module above). Free functions of
//! the options and the upstreams as they are: they answer bytes, and the
//! hub writes them.

use mcpx_core::json::{JsonValue, Kind as JsonKind};
use mcpx_core::meta::SERVER_INFO_KEY;
use mcpx_core::revision::Revision;
use mcpx_core::rewrite::Splice;
use serde_json::{json, Map, Value};

use super::super::catalog::Kind;
use super::super::shape;
use super::super::upstream::Upstream;
use super::super::wire;
use super::super::HubOptions;

/// Hints on a read of a server that gives none: `ttlMs: 0` is "immediately
/// stale" (`caching-ttl-zero-stale`), private.
pub(in crate::hub) const NOT_CACHEABLE: (u64, bool) = (0, false);

/// Result `res` (a JSON object) for a modern client: `resultType`
/// (`"complete"` when it has none), the hub's `serverInfo` in `_meta` and,
/// when given, caching hints, spliced into the bytes: every other byte (ids,
/// numbers of any size) passes as it is. Anything but an object is returned
/// unchanged.
pub(in crate::hub) fn stamped(opts: &HubOptions, res: &[u8], hints: Option<(u64, bool)>) -> Vec<u8> {
    match mcpx_core::json::parse(res) {
        Ok(v) if v.kind() == JsonKind::Object => stamped_view(opts, &v, hints),
        _ => res.to_vec(),
    }
}

/// [`stamped`] of the object `res` (a view whose bytes are the result).
pub(in crate::hub) fn stamped_view(opts: &HubOptions, res: &JsonValue<'_>, hints: Option<(u64, bool)>) -> Vec<u8> {
    let info = serde_json::to_vec(&json!({ "name": opts.server_name, "version": opts.server_version })).unwrap_or_default();
    let ttl = hints.map(|(t, _)| t.to_string());
    let scope: &[u8] = if hints.is_some_and(|(_, public)| public) { b"\"public\"" } else { b"\"private\"" };
    // Members present are replaced in place; absent ones are written
    // together as one insertion (core's `insert_member` takes one per
    // object).
    let mut splices = Vec::with_capacity(4);
    let mut added: Vec<u8> = Vec::new();
    let mut add = |key: &str, value: &[u8]| {
        added.extend_from_slice(&wire::quote(key));
        added.push(b':');
        added.extend_from_slice(value);
        added.push(b',');
    };
    if !res.get("resultType").is_some_and(|v| v.kind() == JsonKind::String) {
        match res.get("resultType") {
            Some(v) => splices.push(Splice::raw(v.span(), b"\"complete\"")),
            None => add("resultType", b"\"complete\""),
        }
    }
    let meta = res.get("_meta");
    let info_meta;
    match meta {
        Some(m) if m.kind() == JsonKind::Object => splices.push(Splice::set_member(&m, SERVER_INFO_KEY, &info)),
        _ => {
            let mut o = wire::quote(SERVER_INFO_KEY);
            o.push(b':');
            o.extend_from_slice(&info);
            info_meta = [b"{".as_slice(), &o, b"}"].concat();
            match meta {
                Some(m) => splices.push(Splice::raw(m.span(), &info_meta)),
                None => add("_meta", &info_meta),
            }
        }
    }
    if let Some(ttl) = &ttl {
        for (k, v) in [("ttlMs", ttl.as_bytes()), ("cacheScope", scope)] {
            match res.get(k) {
                Some(old) => splices.push(Splice::raw(old.span(), v)),
                None => add(k, v),
            }
        }
    }
    let at = res.span().start + 1;
    if !added.is_empty() {
        if res.members().next().is_none() {
            added.pop(); // no comma before the closing brace
        }
        splices.push(Splice::raw(mcpx_core::json::Span::new(at, at), &added));
    }
    wire::splice_within(res, &mut splices)
}

/// [`stamped`] for a result the hub built as a value (task bodies, input
/// requests): the one rule, applied to its bytes.
pub(in crate::hub) fn stamp(opts: &HubOptions, v: &mut Value, hints: Option<(u64, bool)>) {
    let bytes = serde_json::to_vec(v).unwrap_or_default();
    if let Ok(s) = serde_json::from_slice(&stamped(opts, &bytes, hints)) {
        *v = s;
    }
}

/// The hints of upstream `up` for list `k` (or its reads, `None`).
pub(in crate::hub) fn up_hints(opts: &HubOptions, up: &Upstream, k: Option<Kind>) -> (u64, bool) {
    match k {
        Some(k) => up.hints[k.idx()].unwrap_or((opts.cache_ttl_ms, opts.cache_public)),
        None => up.read_hints.unwrap_or(NOT_CACHEABLE),
    }
}

/// Aggregate hints over the ready upstreams for `kinds` (all lists when empty).
pub(in crate::hub) fn agg_hints(opts: &HubOptions, ups: &[Upstream], kinds: &[Kind]) -> (u64, bool) {
    let kinds: &[Kind] = if kinds.is_empty() { &Kind::ALL } else { kinds };
    let mut ttl: Option<u64> = None;
    let mut public = true;
    for up in ups.iter().filter(|up| up.is_ready()) {
        for k in kinds {
            if !up.has_cap(k.capability()) {
                continue;
            }
            let (t, p) = up_hints(opts, up, Some(*k));
            ttl = Some(ttl.map_or(t, |x| x.min(t)));
            public &= p;
        }
    }
    match ttl {
        Some(t) => (t, public),
        None => (opts.cache_ttl_ms, opts.cache_public),
    }
}

/// List page `page` for a modern client, with its result members.
pub(in crate::hub) fn stamped_list(opts: &HubOptions, ups: &[Upstream], page: &[u8], k: Kind) -> Vec<u8> {
    stamped(opts, page, Some(agg_hints(opts, ups, &[k])))
}

/// The result of `server/discover` (`f`: the modern revision's features),
/// from the union of the upstreams' capabilities and the hub's
/// `instructions`. `tasks`: the request declared the tasks extension, which
/// mcpx serves.
pub(in crate::hub) fn discover(opts: &HubOptions, ups: &[Upstream], f: &shape::Features, union: Map<String, Value>, instructions: String, tasks: bool) -> Vec<u8> {
    // Requirement: versioning-server-must-implement-discover, discover-supportedversions, discover-capabilities, discover-serverinfo-in-meta, discover-cacheable, discover-resulttype
    let versions: Vec<&str> = opts.client_revisions.iter().rev().map(Revision::as_str).collect();
    let mut caps = shape::server_capabilities(union, f);
    // Requirement: ext-tasks-server-advertise-discover
    if tasks {
        super::super::apps::add_extension(&mut caps, super::super::tasks::EXT, json!({}));
    }
    let v = json!({
        "supportedVersions": versions,
        "capabilities": caps,
        "instructions": instructions,
    });
    stamped(opts, &serde_json::to_vec(&v).unwrap_or_default(), Some(agg_hints(opts, ups, &[])))
}
