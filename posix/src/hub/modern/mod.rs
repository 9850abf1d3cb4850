//! The modern era (2026-07-28) on the client-facing side: which requests are
//! modern, their per-request `_meta`, `server/discover`, caching hints,
//! `resultType` and `serverInfo` on every result, per-request log levels and
//! `subscriptions/listen` streams.
//!
//! Decisions:
//! - Era per request (`versioning-dual-era-server-selects-by-opening`): a
//!   request carrying `_meta["io.modelcontextprotocol/protocolVersion"]`, and
//!   every `server/discover`, is modern; a client that has never sent
//!   `initialize` and has once been modern stays modern (a request of its
//!   without `_meta` is refused with -32602). Both eras are served on one
//!   connection at once (`versioning-dual-era-both-concurrently`).
//! - A modern request is normalized at ingress into the legacy form the rest
//!   of the hub routes (the `io.modelcontextprotocol/*` `_meta` keys,
//!   `inputResponses` and `requestState` removed) and its per-request context
//!   ([`ReqCtx`]: capabilities, log level, principal, salient params) rides
//!   with it in `pending`. Capabilities are never remembered across requests.
//! - Caching hints: lists and `server/discover` get the aggregate of the
//!   upstreams' hints (the smallest `ttlMs`, `public` only when every one says
//!   so); upstreams without hints count as `HubOptions::cache_ttl_ms` /
//!   `cache_public` (lists are read again on `list_changed`).
//!   `resources/read` gets its upstream's hints; a read of a server that
//!   gives none is [`stamp::NOT_CACHEABLE`], so a client never re-reads an old
//!   answer right after changing it (`tools/call` and `prompts/get` carry
//!   no hints at all in the 2026-07-28 schema).
//! - `subscriptions/listen`: any number of streams per client (up to
//!   `max_subscriptions`), acknowledged first with the agreed subset, every
//!   notification tagged with the listen request's id; a client's
//!   `notifications/cancelled` ends one; `Input::Shutdown` answers them all.
//!
//! Here: the per-request rules as free functions (era, context, error
//! codes, what a `tools/call` is), stamping (`stamp`) and the listen streams
//! with the early requests (`listens`, a subsystem answering with effects).
//! The hub routes between them and the rest (`router`: modern requests).

use mcpx_core::error::{ErrorCode, PeerCaps};
use mcpx_core::json::Kind as JsonKind;
use mcpx_core::method::Method;
use mcpx_core::meta::{self, validate_request_meta};
use mcpx_core::revision::{self, Era, Revisions};
use serde_json::{json, Value};

use super::request::{Refusal, Salient, MODERN};
use super::wire::{self, Edit, Msg};
use super::Outcome;

mod listens;
mod stamp;

pub(super) use listens::{Effect, Grant, Listens};
pub(super) use stamp::{discover, stamp, stamped, stamped_list, stamped_view, up_hints};

/// The per-request `_meta` of a modern request the hub sends upstream:
/// the revision, the capabilities `caps` it declares, mcpx as the client.
pub(super) fn upstream_meta(opts: &super::HubOptions, caps: Value) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert(meta::PROTOCOL_VERSION_KEY.into(), json!(MODERN.as_str()));
    m.insert(meta::CLIENT_CAPABILITIES_KEY.into(), caps);
    m.insert(meta::CLIENT_INFO_KEY.into(), json!({ "name": opts.server_name, "version": opts.server_version }));
    m
}

/// Is request `m` served in the modern era? `modern_connection`: its
/// client has been modern (and never sent `initialize`).
pub(super) fn is_modern_request(modern_connection: bool, m: &Msg) -> bool {
    let hints = revision::EraHints { modern_connection, ..Default::default() };
    revision::request_era(Some(&m.env), hints) == Era::Modern
}

/// The code a modern client gets for `code`.
pub(super) fn error_code(code: ErrorCode) -> ErrorCode {
    code.for_peer(MODERN, PeerCaps::default())
}

/// A method of the legacy session, on a modern request: -32601.
pub(super) fn legacy_only(m: &Msg) -> Refusal {
    let msg = format!("Method not found: {} is not part of protocol revision {} (it belongs to the initialize-based session)", m.method, MODERN.as_str());
    Refusal(ErrorCode::MethodNotFound, msg, None)
}

/// A method the modern era does not have.
pub(super) fn not_found(m: &Msg) -> Refusal {
    Refusal(ErrorCode::MethodNotFound, format!("Method not found: {}", m.method), None)
}

/// The per-request `_meta` of modern request `m` (its id `id`), checked
/// against the revisions served: the client's capabilities and log level,
/// or the error answer (its bytes, and what it says).
pub(super) fn request_meta(m: &Msg, id: &[u8], supported: Revisions) -> Result<(Value, Option<usize>), (Vec<u8>, Outcome)> {
    let rm = match validate_request_meta(&m.env, supported) {
        Ok(rm) => rm,
        Err(e) => {
            // Requirement: meta-server-rejects-missing-required-field, versioning-server-unsupported-version-error
            let mut buf = vec![0u8; 512];
            let n = loop {
                match e.write_response(Some(id), supported, &mut buf) {
                    Ok(n) => break n,
                    Err(o) => buf.resize(o.needed, 0),
                }
            };
            buf.truncate(n);
            return Err((buf, Outcome::Error { code: i64::from(e.error_code().code()), retry_after_s: None }));
        }
    };
    let caps: Value = serde_json::from_slice(rm.client_capabilities.bytes()).unwrap_or_else(|_| json!({}));
    let log_level = rm.log_level.and_then(|v| v.as_str()).and_then(|s| meta::LOG_LEVELS.iter().position(|l| s.eq_str(l)));
    Ok((caps, log_level))
}

/// What `requestState` is bound to of request `m`: its params when its
/// method has salient ones, as bytes (nothing is read of them here).
pub(super) fn salient(m: &Msg) -> Salient {
    Salient(match m.call {
        Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead => {
            let params = m.params.clone().map_or(&b"{}"[..], |p| &m.raw[p]);
            Some((params.to_vec(), m.call == Method::ResourcesRead))
        }
        _ => None,
    })
}

impl Salient {
    /// The salient params, whose `requestState` must match on the retry:
    /// the method's identifying params, canonical (key order is the
    /// client's to change, so they are read as a value; only these
    /// methods' params are).
    pub(super) fn canonical(&self) -> Vec<u8> {
        let Some((raw, by_uri)) = &self.0 else { return crate::bytes::canonical::canonical(&Value::Null) };
        let p: Value = serde_json::from_slice(raw).unwrap_or_else(|_| json!({}));
        let v = match by_uri {
            true => json!({ "uri": p.get("uri").cloned().unwrap_or(Value::Null) }),
            false => json!({
                "name": p.get("name").cloned().unwrap_or(Value::Null),
                "arguments": p.get("arguments").cloned().unwrap_or_else(|| json!({})),
            }),
        };
        crate::bytes::canonical::canonical(&v)
    }
}

/// What a `tools/call`, `prompts/get` or `resources/read` is.
pub(super) enum Call {
    /// A first request (nearly all): routed from its view (`_meta`'s
    /// request context is left out where it is forwarded:
    /// `wire::upstream_params`).
    First,
    /// `inputResponses` without `requestState`: routed normalized.
    Answers,
    /// A retry with `requestState` and, when given, the answers (kept by
    /// the relay as a value).
    Retry(String, Option<Value>),
}

/// Reads what call `m` is from its view: a first request has neither
/// `inputResponses` nor `requestState`.
pub(super) fn call(m: &Msg) -> Result<Call, Refusal> {
    let member = |k: &str| m.env.params().and_then(|p| p.get(k));
    let responses = member("inputResponses");
    if responses.is_some_and(|r| r.kind() != JsonKind::Object) {
        return Err(Refusal(ErrorCode::InvalidParams, "Invalid params: inputResponses must be an object mapping each input request's key to its result".into(), None));
    }
    let responses = responses.and_then(|r| serde_json::from_slice::<Value>(r.bytes()).ok());
    let bad_state = || Refusal(ErrorCode::InvalidParams, "Invalid params: requestState must be a string".into(), None);
    match member("requestState") {
        None if responses.is_none() => Ok(Call::First),
        None => Ok(Call::Answers),
        Some(s) if s.kind() == JsonKind::String => {
            let state = s.as_str().and_then(|s| String::from_utf8(s.decoded().collect()).ok()).ok_or_else(bad_state)?;
            Ok(Call::Retry(state, responses))
        }
        Some(_) => Err(bad_state()),
    }
}

/// Is modern request `m` in the form [`normalized`] gives (with
/// `upstream_state`) already: params with nothing to remove or replace?
/// Then it is routed from its view, never written again.
pub(super) fn is_normal(m: &Msg, upstream_state: Option<&Option<String>>) -> bool {
    let Some(p) = m.env.params() else { return false };
    match upstream_state {
        None => p.get("inputResponses").is_none() && p.get("requestState").is_none(),
        Some(None) => p.get("requestState").is_none(),
        Some(Some(_)) => false,
    }
}

/// Modern request `m` in the legacy form the rest of the hub routes, as new
/// bytes. `upstream_state`: for a retry to a modern upstream, the `inputResponses`
/// are kept and `requestState` set to this (`Some(None)`: removed); `None`:
/// both removed.
pub(super) fn normalized(m: &Msg, upstream_state: Option<Option<String>>) -> Vec<u8> {
    let id = m.id_bytes().unwrap_or(b"null");
    let params = match m.params.clone() {
        Some(p) => {
            let raw = &m.raw[p];
            let keep_input = upstream_state.is_some();
            let state = upstream_state.flatten().map(|s| wire::quote(&s));
            wire::edit_object(
                raw,
                0..raw.len(),
                |k, _| match k {
                    "inputResponses" if keep_input => Edit::Keep,
                    "inputResponses" => Edit::Drop,
                    "requestState" => match &state {
                        Some(s) => Edit::Replace(s.clone()),
                        None => Edit::Drop,
                    },
                    _ => Edit::Keep,
                },
                &[],
            )
        }
        None => b"{}".to_vec(),
    };
    wire::request_raw(id, &m.method, Some(&params))
}
