//! Messages to upstreams, each written together with what it is
//! ([`Upward`]): the hub's requests (for a 2026-07-28 one, with the HTTP
//! headers that revision requires, built here), its notifications, and its
//! answers to an upstream's requests. Transports read the description and
//! never the bytes: a stdio child gets the bytes as they are, the remote
//! transport takes kind, id and headers from the description.
//!
//! The headers of a modern request mirror the params the hub wrote
//! (`Mcp-Method`; `Mcp-Name` from `params.name` or `params.uri`; for
//! `tools/call` an `Mcp-Param-{Name}` for each argument the tool's
//! `inputSchema`, as last listed, annotates with `x-mcp-header`). They are
//! read from those params with core's span scanner, values go through
//! core's header codec (the Base64 sentinel when not plain ASCII).
//!
//! The writers are functions over the hub's output queue, one per kind of
//! message; the hub runs its policy on an answer before it is written
//! (`Hub::emit_upstream`), and gives the headers its tools' schemas.

use std::collections::VecDeque;

use mcpx_core::envelope::{self, Envelope};
use mcpx_core::headers;
use mcpx_core::json::{self, JsonValue, Kind};
use mcpx_core::method::Method;
use serde_json::Value;

use super::request::MODERN;
use super::wire;
use super::{IdKey, ModernHeaders, Output, Upward, UpstreamId};

/// A tool's `inputSchema` by its name (the upstream's, or as exposed).
pub(crate) type Schema<'s> = dyn Fn(&str) -> Option<&'s Value> + 's;

/// Writes the hub's request `id` (`method`, `params` as written) to `u`;
/// `modern`: for a 2026-07-28 request, its headers.
pub(super) fn request(out: &mut VecDeque<Output>, u: UpstreamId, id: u64, method: &str, params: Option<&[u8]>, modern: Option<ModernHeaders>) {
    written_request(out, u, id, method, wire::request(id, method, params), modern);
}

/// Sends the hub's request `id` (`method`), written as `bytes` by
/// `wire::request_with`, to `u`.
pub(super) fn written_request(out: &mut VecDeque<Output>, u: UpstreamId, id: u64, method: &str, bytes: Vec<u8>, modern: Option<ModernHeaders>) {
    traced_request(out, u, id, method, bytes, modern, None);
}

/// [`written_request`] of a traced request: `traceparent` for a remote
/// server's header (the same as in its `_meta`).
pub(super) fn traced_request(out: &mut VecDeque<Output>, u: UpstreamId, id: u64, method: &str, bytes: Vec<u8>, modern: Option<ModernHeaders>, traceparent: Option<super::TraceHeader>) {
    #[cfg(not(feature = "traces"))]
    let _ = traceparent;
    let about = Upward::Request {
        id: id_key(id),
        method: Method::known(method),
        modern,
        #[cfg(feature = "traces")]
        traceparent,
    };
    out.push_back(Output::ToUpstream(u, bytes, about));
}

/// Writes the hub's notification `method` (with `params`) to `u`.
pub(super) fn notification(out: &mut VecDeque<Output>, u: UpstreamId, method: Method<'static>, params: Option<&[u8]>) {
    let bytes = wire::notification(method, params);
    out.push_back(Output::ToUpstream(u, bytes, Upward::Notification { method: Some(method) }));
}

/// Writes an answer (result or error, `bytes`) to one of `u`'s requests.
pub(super) fn answer(out: &mut VecDeque<Output>, u: UpstreamId, bytes: Vec<u8>) {
    out.push_back(Output::ToUpstream(u, bytes, Upward::Answer));
}

/// The 2026-07-28 headers of the hub's request of `method` with `params`
/// as written (parsed again here: the hub's own requests, and a retry's).
pub(super) fn written_headers(method: &str, params: Option<&[u8]>, schema: &Schema<'_>) -> ModernHeaders {
    modern_headers(method, params.and_then(|p| json::parse(p).ok()), schema)
}

/// The 2026-07-28 headers of a client's request `params` (a view into its
/// message) forwarded under `name` (the upstream's name of the tool,
/// prompt or resource): read from the client's view, not from the bytes
/// written for the upstream.
pub(super) fn forwarded_headers(method: &str, name: Option<String>, params: Option<JsonValue<'_>>, schema: &Schema<'_>) -> ModernHeaders {
    headers_named(method, name, params.and_then(|p| p.get("arguments")), schema)
}

/// The 2026-07-28 headers of request `msg`, built again: for an upstream
/// (the transport retries a request once after the server answered -32020
/// and the hub listed its tools again: the annotations may have changed;
/// `msg` is read again, on that retry only), or as a client of the hub
/// sends them (a request forwarded to another replica, which checks them
/// as any request's). `None` when `msg` is not a request.
pub(super) fn headers_again(msg: &[u8], schema: &Schema<'_>) -> Option<ModernHeaders> {
    let env = Envelope::parse(msg).ok()?;
    if env.kind() != envelope::Kind::Request {
        return None;
    }
    let method = String::from_utf8(env.method()?.decoded().collect()).ok()?;
    Some(modern_headers(&method, env.params(), schema))
}

/// The id of the hub's request `id` as its JSON bytes, without allocating.
fn id_key(id: u64) -> IdKey {
    IdKey::new(mcpx_core::decimal::u64(id, &mut [0u8; 20]))
}

/// The decoded text of a JSON string value.
fn text(v: JsonValue<'_>) -> Option<String> {
    String::from_utf8(v.as_str()?.decoded().collect()).ok()
}

/// A header value through the 2026-07-28 codec (Base64 sentinel when needed).
fn encoded(value: &str) -> Vec<u8> {
    let mut buf = vec![0u8; headers::encoded_len(value)];
    headers::encode_value(value, &mut buf).map(|s| s.as_bytes().to_vec()).unwrap_or_default()
}

/// The headers of a 2026-07-28 request of `method` with `params`:
/// `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*`
/// mirrors of the arguments that `schema` (a tool's `inputSchema` by the
/// upstream's name of the tool) annotates with `x-mcp-header`.
pub(crate) fn modern_headers(method: &str, params: Option<JsonValue<'_>>, schema: &Schema<'_>) -> ModernHeaders {
    let name = headers::name_source(method).and_then(|s| params?.get(s.field())).and_then(text);
    headers_named(method, name, params.and_then(|p| p.get("arguments")), schema)
}

/// [`modern_headers`] of a request whose `Mcp-Name` is `name` and whose
/// `params.arguments` are `args`.
fn headers_named(method: &str, name: Option<String>, args: Option<JsonValue<'_>>, schema: &Schema<'_>) -> ModernHeaders {
    let lower = |s: &str| s.to_ascii_lowercase();
    // Requirement: streamable-http-standard-headers-required, streamable-http-client-sends-metadata-headers, streamable-http-mcp-name-base64
    let mut h = vec![
        (lower(headers::MCP_PROTOCOL_VERSION), MODERN.as_str().as_bytes().to_vec()),
        (lower(headers::MCP_METHOD), encoded(method)),
    ];
    if let Some(name) = &name {
        h.push((lower(headers::MCP_NAME), encoded(name)));
    }
    let (Some(schema), true) = (name.as_deref().and_then(schema), method == "tools/call") else { return h };
    for (header, path) in crate::hub::param_headers::annotations(schema) {
        let mut a = args;
        for k in &path {
            a = a.and_then(|v| v.get(k));
        }
        let Some(a) = a else { continue };
        let s;
        // Requirement: streamable-http-client-header-construction, streamable-http-param-value-encoding (absent or null: no header)
        let pv = match a.kind() {
            Kind::String => {
                let Some(t) = text(a) else { continue };
                s = t;
                headers::ParamValue::Str(&s)
            }
            Kind::Bool => headers::ParamValue::Bool(a.bytes() == b"true"),
            Kind::Number => match std::str::from_utf8(a.bytes()) {
                Ok(n) => headers::ParamValue::Number(n),
                Err(_) => continue,
            },
            _ => continue,
        };
        let mut buf = vec![0u8; 4 * a.bytes().len() + 32];
        let Ok(value) = headers::encode_param(pv, &mut buf) else { continue };
        h.push((format!("{}{}", lower(headers::MCP_PARAM_PREFIX), lower(&header)), value.as_bytes().to_vec()));
    }
    h
}
