//! The listener's rules as functions: what a request says (its head, the
//! views of its body) and what the caller looked up about it (its session,
//! a tool's schema) go in, a decision comes out. No I/O here: `routes`
//! reads, asks here, then acts; the table tests in `decide_tests` are the
//! rules, without sockets.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use mcpx_core::envelope::{Batch, Envelope, EnvelopeError, Kind as MsgKind, Message};
use mcpx_core::error::{self, ErrorCode};
use mcpx_core::frame::http::Version;
use mcpx_core::revision::{self, Era, EraHints, Revision, Revisions};

use super::origin::{self, Guard};
use super::request::Request;
use crate::hub::Outcome;

/// The refusal of a request that needs a session but names none.
const NO_SESSION_ID: &str = "Bad Request: Mcp-Session-Id header is required";

/// A request answered with an error of the listener's own: the HTTP status,
/// the JSON-RPC error (code, the id it echoes, message, raw JSON `data`),
/// and when to retry (`Retry-After`).
#[derive(Debug, PartialEq)]
pub(crate) struct Refusal<'a> {
    pub status: u16,
    pub code: ErrorCode,
    pub id: Option<&'a [u8]>,
    pub message: Cow<'static, str>,
    pub data: Option<String>,
    pub retry_after_s: Option<u64>,
}

impl<'a> Refusal<'a> {
    /// An Invalid Request error (-32600) with no id or data: how the
    /// transport refuses a request it cannot take.
    pub fn invalid(status: u16, message: impl Into<Cow<'static, str>>) -> Refusal<'a> {
        Refusal { status, code: ErrorCode::InvalidRequest, id: None, message: message.into(), data: None, retry_after_s: None }
    }

    fn echoing(self, id: Option<&'a [u8]>) -> Refusal<'a> {
        Refusal { id, ..self }
    }

    fn with_data(self, data: String) -> Refusal<'a> {
        Refusal { data: Some(data), ..self }
    }

    /// A body that is not JSON-RPC (400, with the id when one could be read).
    pub fn unparsed(e: &EnvelopeError<'a>) -> Refusal<'a> {
        Refusal { code: e.error_code(), ..Refusal::invalid(400, e.message()).echoing(e.id_bytes()) }
    }
}

/// What the caller knows of a streamable session a request names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Known {
    /// Never opened, ended (DELETE, idle expiry) or not a streamable one.
    Unknown,
    /// Open; the revision its `initialize` negotiated, once answered.
    Live(Option<Revision>),
}

/// What a decision may need to look up.
pub(crate) trait Facts {
    /// The streamable session `sid`, as the listener knows it now.
    fn session(&self, sid: &str) -> Known;
    /// The input schema of tool `name`, if the hub has the tool.
    fn tool_schema(&self, name: &str) -> Option<serde_json::Value>;
}

/// What a request's path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Health,
    /// `/ready`: unauthenticated, as `/health`.
    Ready,
    Status,
    Metrics,
    /// `/approvals`: the calls waiting for approval (`approvals_page`).
    #[cfg(feature = "consent")]
    Approvals,
    /// `/approvals/N`: one of them, by its one-time link's key (no other
    /// credential).
    #[cfg(feature = "consent")]
    Approval(u64),
    /// `/restart`: an operator restarts a server (`operator`).
    #[cfg(feature = "cli")]
    Restart,
    /// `/signin`, `/signout`: the status pages' sign-in (`signin`).
    #[cfg(feature = "signin")]
    SignIn,
    #[cfg(feature = "signin")]
    SignOut,
    /// `/connect/ID`, `/oauth/callback`: a person authorizes a
    /// `"perPrincipal"` server for themselves (`connect`).
    #[cfg(feature = "secrets")]
    Connect,
    #[cfg(feature = "secrets")]
    OAuthCallback,
    /// 2024-11-05 HTTP+SSE (when served).
    Sse,
    Messages,
    /// The MCP endpoint.
    Mcp,
}

impl Target {
    pub fn of(path: &str, cfg: &super::HttpConfig) -> Option<Target> {
        let legacy = cfg.legacy_sse;
        Some(match path {
            "/health" => Target::Health,
            "/ready" => Target::Ready,
            "/status" => Target::Status,
            "/metrics" => Target::Metrics,
            #[cfg(feature = "cli")]
            "/restart" => Target::Restart,
            #[cfg(feature = "consent")]
            "/approvals" | "/approvals/" => Target::Approvals,
            #[cfg(feature = "consent")]
            p if p.starts_with("/approvals/") => Target::Approval(p["/approvals/".len()..].parse().ok()?),
            #[cfg(feature = "signin")]
            "/signin" => Target::SignIn,
            #[cfg(feature = "signin")]
            "/signout" => Target::SignOut,
            #[cfg(feature = "secrets")]
            p if p.starts_with("/connect/") => Target::Connect,
            #[cfg(feature = "secrets")]
            "/oauth/callback" => Target::OAuthCallback,
            "/sse" if legacy => Target::Sse,
            "/messages" if legacy => Target::Messages,
            p if p == cfg.path => Target::Mcp,
            _ => return None,
        })
    }
}

/// The target of a request's path: 404 for any other path.
pub(crate) fn target(path: &str, cfg: &super::HttpConfig) -> Result<Target, Refusal<'static>> {
    Target::of(path, cfg).ok_or_else(|| Refusal::invalid(404, format!("Not found: the MCP endpoint is {}", cfg.path)))
}

/// `/health` (no authentication): 200 with the body "ok" (`HEAD`: none), or
/// 405 with the methods allowed.
pub(crate) fn health(method: &str) -> Result<&'static [u8], &'static str> {
    match method {
        "GET" => Ok(b"ok"),
        "HEAD" => Ok(b""),
        _ => Err("GET, HEAD"),
    }
}

/// `/ready` (no authentication) with `not_ready` servers marked `"required"`
/// not ready: 200 when none, else 503; the body gives only the count (the
/// names are for `/status`, behind authentication). `HEAD`: no body. Else
/// 405 with the methods allowed.
pub(crate) fn ready(method: &str, not_ready: usize) -> Result<(u16, String), &'static str> {
    let status = if not_ready == 0 { 200 } else { 503 };
    match method {
        "GET" => Ok((status, format!("{{\"ready\":{},\"requiredNotReady\":{not_ready}}}", not_ready == 0))),
        "HEAD" => Ok((status, String::new())),
        _ => Err("GET, HEAD"),
    }
}

/// What a request another replica passed on may target: the MCP endpoint
/// and `/messages` (the sessions), a call waiting for approval here (its
/// one-time link), nothing else (404).
pub(crate) fn relayed(target: Option<Target>) -> Result<Target, Refusal<'static>> {
    match target {
        Some(t @ (Target::Mcp | Target::Messages)) => Ok(t),
        #[cfg(feature = "consent")]
        Some(t @ Target::Approval(_)) => Ok(t),
        _ => Err(Refusal::invalid(404, "Not found: the hop carries requests to the MCP endpoint, /messages and approval links only")),
    }
}

/// The 404 of a request to the hop's path on a listener that is no
/// cluster replica.
pub(crate) fn not_a_replica() -> Refusal<'static> {
    Refusal::invalid(404, "Not found: this mcpx is not a cluster replica (no \"cluster\" and shared state key)")
}

/// The methods allowed (405) when a request to a POST-only path is no POST.
pub(crate) fn post_only(method: &str) -> Option<&'static str> {
    (method != "POST").then_some("POST")
}

/// A connection over the listener's `max` connections: refused with 503
/// and closed; said at warning level at most every 10 s since the last
/// such warning at `last_warn` (a flood would drown the log).
#[derive(Debug, PartialEq)]
pub(crate) struct Overloaded {
    pub refusal: Refusal<'static>,
    pub warn: bool,
}

/// How a connection over the limit is refused, at `now` (ms).
pub(crate) fn overloaded(max: usize, last_warn: Option<u64>, now: u64) -> Overloaded {
    let text = format!("mcpx has {max} HTTP connections open (its limit); retry later");
    Overloaded {
        refusal: Refusal { code: ErrorCode::InternalError, ..Refusal::invalid(503, text) },
        warn: last_warn.is_none_or(|t| now >= t + 10_000),
    }
}

/// Does a refused connection linger before it closes (so that its peer
/// reads the answer), with `conns` open of `max`? Not under a flood (over
/// twice `max`): then it closes at once rather than hold sockets open.
pub(crate) fn linger_when_over(conns: usize, max: usize) -> bool {
    conns <= 2 * max
}

/// May the connection carry another request once this one is answered?
/// Only if the answer and the request allow it, and the request's body
/// was read (an unread body would be taken for the next request).
pub(crate) fn keep_connection(answered: bool, keep_alive: bool, body_read: bool, has_body: bool) -> bool {
    answered && keep_alive && (body_read || !has_body)
}

/// The checks every request passes first (rows
/// `streamable-http-server-validate-origin`, `streamable-http-server-403-invalid-origin`,
/// `http-sse-server-validate-origin`): one `Host` and at most one `Origin`
/// (400), both allowed (403).
pub(crate) fn front_door(req: &Request, guard: &Guard) -> Option<Refusal<'static>> {
    let http11 = req.version == Version::Http11;
    if let Some(why) = origin::field_lines_error(req.header_count("host"), req.header_count("origin"), http11) {
        return Some(Refusal::invalid(400, why));
    }
    if !guard.host_ok(req.header("host")) {
        let host = req.header_str("host").unwrap_or("");
        return Some(Refusal::invalid(403, format!("Forbidden: Host '{host}' is not allowed (DNS rebinding protection)")));
    }
    if !guard.origin_ok(req.header("origin")) {
        let origin = req.header_str("origin").unwrap_or("");
        return Some(Refusal::invalid(403, format!("Forbidden: Origin '{origin}' is not allowed")));
    }
    None
}

/// An endpoint of an authenticated request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Status,
    /// `POST /status`: a button on the page (an approver's accept of a pin
    /// change, an operator's restart of a server).
    #[cfg(any(feature = "consent", feature = "cli", feature = "secrets"))]
    StatusForm,
    #[cfg(feature = "cli")]
    Restart,
    #[cfg(feature = "consent")]
    Approvals,
    Metrics,
    Sse,
    Messages,
    Post,
    Get,
    Delete,
}

/// Where an authenticated request goes.
#[derive(Debug, PartialEq)]
pub(crate) enum Route {
    Serve(Endpoint),
    Refuse(Refusal<'static>),
    /// 405, with the methods the target allows.
    NotAllowed(&'static str),
}

/// The endpoint of `method` on `target`: first a session of another
/// principal (`foreign`: treated as unknown, 404), then the method (405).
pub(crate) fn route(target: Target, method: &str, foreign: bool) -> Route {
    if foreign {
        return Route::Refuse(ended());
    }
    let (endpoint, allow) = match (target, method) {
        (Target::Status, "GET") => (Some(Endpoint::Status), ""),
        #[cfg(any(feature = "consent", feature = "cli", feature = "secrets"))]
        (Target::Status, "POST") => (Some(Endpoint::StatusForm), ""),
        #[cfg(any(feature = "consent", feature = "cli", feature = "secrets"))]
        (Target::Status, _) => (None, "GET, POST"),
        #[cfg(feature = "consent")]
        (Target::Approvals, "GET") => (Some(Endpoint::Approvals), ""),
        #[cfg(feature = "consent")]
        (Target::Approvals, _) => (None, "GET"),
        // Served before authentication (`listener`), never routed here.
        #[cfg(feature = "consent")]
        (Target::Approval(_), _) => (None, "GET, POST"),
        #[cfg(feature = "cli")]
        (Target::Restart, "POST") => (Some(Endpoint::Restart), ""),
        #[cfg(feature = "cli")]
        (Target::Restart, _) => (None, "POST"),
        #[cfg(feature = "signin")]
        (Target::SignIn | Target::SignOut, _) => (None, "GET, POST"),
        (Target::Metrics, "GET") => (Some(Endpoint::Metrics), ""),
        (Target::Sse, "GET") => (Some(Endpoint::Sse), ""),
        #[cfg(not(any(feature = "consent", feature = "cli", feature = "secrets")))]
        (Target::Status, _) => (None, "GET"),
        (Target::Metrics | Target::Sse, _) => (None, "GET"),
        (Target::Messages, "POST") => (Some(Endpoint::Messages), ""),
        (Target::Messages, _) => (None, "POST"),
        (_, "POST") => (Some(Endpoint::Post), ""),
        (_, "GET") => (Some(Endpoint::Get), ""),
        (_, "DELETE") => (Some(Endpoint::Delete), ""),
        _ => (None, "GET, POST, DELETE"),
    };
    endpoint.map_or(Route::NotAllowed(allow), Route::Serve)
}

/// The session a request to the MCP endpoint names (`Mcp-Session-Id`).
pub(crate) fn session_of(req: &Request) -> Option<&str> {
    req.header_str("mcp-session-id").map(str::trim)
}

/// The `sessionId` of a 2024-11-05 `/messages?sessionId=…` POST.
pub(crate) fn legacy_session_of(req: &Request) -> &str {
    req.query().split('&').find_map(|kv| kv.strip_prefix("sessionId=")).unwrap_or("")
}

/// 415 unless the body is declared `application/json`.
pub(crate) fn json_body(req: &Request) -> Option<Refusal<'static>> {
    let ct = req.header_str("content-type").unwrap_or("");
    let json = ct.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
    (!json).then(|| Refusal::invalid(415, "Unsupported media type: POST a JSON-RPC message as application/json"))
}

/// May a POST's answer be an SSE stream? Unless its `Accept` names
/// other types only.
pub(crate) fn sse_ok(req: &Request) -> bool {
    !req.headers_present("accept") || req.accepts("text/event-stream")
}

/// Which era a POST belongs to (conformance notes §1.6): decided once, by
/// core's one classification.
pub(crate) fn classify(has_session: bool, version_header: Option<&str>, msg: &Message<'_>) -> Era {
    let single = match msg {
        Message::Single(env) => Some(env),
        Message::Batch(_) => None,
    };
    let hints = EraHints { session: has_session, version_header, modern_connection: false };
    revision::request_era(single, hints)
}

/// What to do with a POST to the MCP endpoint.
#[derive(Debug, PartialEq)]
pub(crate) enum Post<'r, 'b> {
    Refuse(Refusal<'b>),
    /// A 2026-07-28 notification or response: nothing to route it to (202).
    Accepted,
    /// A 2026-07-28 request: one request of a client that lives as long as
    /// the POST.
    Modern(Envelope<'b>),
    /// `initialize` without a session: a new session.
    Open(Envelope<'b>),
    /// The messages of the live session `sid`.
    InSession { sid: &'r str },
}

/// A POST's era, then the rules of that era.
pub(crate) fn post<'r, 'b>(req: &'r Request, msg: &Message<'b>, facts: &impl Facts) -> Post<'r, 'b> {
    let sid = session_of(req);
    let pv = req.header_str("mcp-protocol-version").map(str::trim);
    match classify(sid.is_some(), pv, msg) {
        Era::Modern => modern(req, msg, facts),
        Era::Legacy => legacy(sid, pv, msg, facts),
    }
}

/// A 2026-07-28 POST (also one another replica classified and passed on):
/// one request, its headers mirroring its body.
pub(crate) fn modern<'r, 'b>(req: &'r Request, msg: &Message<'b>, facts: &impl Facts) -> Post<'r, 'b> {
    let Message::Single(env) = msg else {
        let text = "Invalid request: JSON-RPC batches are not part of protocol revision 2026-07-28";
        return Post::Refuse(Refusal::invalid(400, text));
    };
    if env.kind() != MsgKind::Request {
        // Stateless: nothing to route a notification or response to (a
        // request is cancelled by closing its stream).
        return Post::Accepted;
    }
    // Requirement rows streamable-http-server-rejects-header-body-mismatch, streamable-http-header-mismatch-400-jsonrpc
    if let Some(text) = header_mismatch(req, env).or_else(|| param_mismatch(req, env, facts)) {
        let id = env.id_bytes().unwrap_or(b"null");
        return Post::Refuse(Refusal { code: ErrorCode::HeaderMismatch, ..Refusal::invalid(400, text).echoing(Some(id)) });
    }
    Post::Modern(*env)
}

/// A legacy POST: `initialize` (a new session) or messages of a session.
fn legacy<'r, 'b>(sid: Option<&'r str>, pv: Option<&str>, msg: &Message<'b>, facts: &impl Facts) -> Post<'r, 'b> {
    let first_id = match msg {
        Message::Single(e) => e.id_bytes(),
        Message::Batch(_) => None,
    };
    let header_rev = match pv.map(|v| (v, Revision::parse(v).filter(|r| r.era() == Era::Legacy))) {
        None => None,
        Some((_, Some(r))) => Some(r),
        // Requirement rows streamable-http-server-400-unsupported-version-header, streamable-http-server-assumes-2025-03-26
        Some((v, None)) => {
            let data = format!("{{\"supported\":{},\"requested\":{}}}", supported_json(), serde_json::Value::from(v));
            let text = format!("Bad Request: unsupported MCP-Protocol-Version '{v}'");
            return Post::Refuse(Refusal::invalid(400, text).echoing(first_id).with_data(data));
        }
    };
    let Some(sid) = sid else {
        // Requirement rows streamable-http-server-may-assign-session, streamable-http-server-400-missing-session
        let Message::Single(env) = msg else {
            return Post::Refuse(Refusal::invalid(400, NO_SESSION_ID));
        };
        if !(env.kind() == MsgKind::Request && env.method_is("initialize")) {
            let text = "Bad Request: Mcp-Session-Id header is required (send initialize first to open a session)";
            return Post::Refuse(Refusal::invalid(400, text).echoing(first_id));
        }
        return Post::Open(*env);
    };
    // Requirement rows streamable-http-server-404-terminated-session
    let Known::Live(negotiated) = facts.session(sid) else {
        return Post::Refuse(unknown_session(first_id));
    };
    // Requirement rows streamable-http-server-400-unsupported-version-header: a session
    // speaks the revision its initialize negotiated, no other.
    if let Some((h, n)) = header_rev.zip(negotiated).filter(|(h, n)| h != n) {
        let data = format!("{{\"supported\":[\"{}\"],\"requested\":\"{}\"}}", n.as_str(), h.as_str());
        let text = format!(
            "Bad Request: MCP-Protocol-Version '{}' is not the revision this session negotiated ({})",
            h.as_str(),
            n.as_str()
        );
        return Post::Refuse(Refusal::invalid(400, text).echoing(first_id).with_data(data));
    }
    let rev = header_rev.or(negotiated).unwrap_or(Revision::V2025_03_26);
    // Requirement rows streamable-http-post-body-may-batch (2025-03-26 only)
    if matches!(msg, Message::Batch(_)) && !Batch::allowed_in(rev) {
        let text = format!("Invalid request: JSON-RPC batches are not supported in protocol revision {}", rev.as_str());
        return Post::Refuse(Refusal::invalid(400, text));
    }
    Post::InSession { sid }
}

/// The 404 of a POST naming a session this listener does not have (any more).
pub(crate) fn unknown_session(id: Option<&[u8]>) -> Refusal<'_> {
    Refusal::invalid(404, "Not found: unknown or ended session; initialize a new one").echoing(id)
}

fn supported_json() -> String {
    let list: Vec<String> = Revisions::LEGACY.iter().map(|r| format!("\"{}\"", r.as_str())).collect();
    format!("[{}]", list.join(","))
}

/// The `HeaderMismatchError` (-32020) for a modern POST whose headers do not
/// mirror its body, if any (checked only once `_meta` itself is valid: a
/// missing field is the hub's -32602 first, conformance notes §3.1).
fn header_mismatch(req: &Request, env: &Envelope<'_>) -> Option<String> {
    use mcpx_core::headers::{self, HeaderField, ParamValue};
    let meta_version = env.protocol_version()?.as_str()?;
    let version = String::from_utf8_lossy(meta_version.raw()).into_owned();
    env.meta().and_then(|m| m.get(mcpx_core::meta::CLIENT_CAPABILITIES_KEY))?;
    let method = env.method_str().unwrap_or("");
    let name = headers::name_source(method).and_then(|s| env.params()?.get(s.field()));
    let name = name.and_then(|v| v.as_str()).map(|s| String::from_utf8_lossy(s.raw()).into_owned());
    let checks = [
        (HeaderField::ProtocolVersion, req.header("mcp-protocol-version"), Some(version.as_str())),
        (HeaderField::Method, req.header("mcp-method"), Some(method)),
        (HeaderField::Name, req.header("mcp-name"), name.as_deref()),
    ];
    for (field, header, body) in checks {
        if let Err(e) = headers::check(field, header, body.map(ParamValue::Str)) {
            return Some(format!("Header mismatch: {field} {:?} (the headers must mirror the body)", e.kind));
        }
    }
    None
}

/// The -32020 for a modern `tools/call` whose `Mcp-Param-*` headers do not
/// mirror the arguments annotated with `x-mcp-header`, if any.
fn param_mismatch(req: &Request, env: &Envelope<'_>, facts: &impl Facts) -> Option<String> {
    use mcpx_core::headers::{self, HeaderField, ParamValue};
    if !env.method_is("tools/call") {
        return None;
    }
    let name = env.name()?.as_str()?;
    let name = String::from_utf8_lossy(name.raw()).into_owned();
    let schema = facts.tool_schema(&name)?;
    let args: serde_json::Value = env.param("arguments").and_then(|a| serde_json::from_slice(a.bytes()).ok()).unwrap_or(serde_json::Value::Null);
    for (h, path) in crate::hub::param_headers::annotations(&schema) {
        let mut v = &args;
        for k in &path {
            v = v.get(k).unwrap_or(&serde_json::Value::Null);
        }
        let text;
        let body = match v {
            serde_json::Value::String(s) => Some(ParamValue::Str(s)),
            serde_json::Value::Bool(b) => Some(ParamValue::Bool(*b)),
            serde_json::Value::Number(n) => {
                text = n.to_string();
                Some(ParamValue::Number(&text))
            }
            _ => None,
        };
        let header = req.header(&format!("mcp-param-{}", h.to_ascii_lowercase()));
        // Requirement rows streamable-http-server-validates-param-headers, streamable-http-server-decodes-before-compare
        if let Err(e) = headers::check(HeaderField::Param(&h), header, body) {
            return Some(format!("Header mismatch: Mcp-Param-{h} {:?} (it must mirror the argument {})", e.kind, path.join(".")));
        }
    }
    None
}

/// What becomes of one message of a POST in a live session.
#[derive(Debug, PartialEq)]
pub(crate) enum Sorted<'b> {
    /// A request for the hub, whose response is awaited.
    Request(Envelope<'b>),
    /// A notification or response for the hub.
    Feed(Envelope<'b>),
    /// Answered here with this error: a request whose id is in flight
    /// already, or a message that is not JSON-RPC.
    Answer(Vec<u8>),
    /// Not answered: an invalid batch element without an id (it may have
    /// been a notification).
    Drop,
}

/// Sorts message `el` of a POST (`batch`: an element of its batch);
/// `in_flight` says whether a request id is in flight in the session.
pub(crate) fn sort<'b>(el: Result<Envelope<'b>, EnvelopeError<'b>>, batch: bool, in_flight: impl FnOnce(&[u8]) -> bool) -> Sorted<'b> {
    use crate::bytes::written;
    match el {
        Ok(env) if env.kind() == MsgKind::Request => {
            let id = env.id_bytes().unwrap_or(b"null");
            if in_flight(id) {
                let text = "Invalid request: this request id is already in flight";
                return Sorted::Answer(written::error(Some(id), ErrorCode::InvalidRequest, text, None));
            }
            Sorted::Request(env)
        }
        Ok(env) => Sorted::Feed(env),
        // Only answer what could be a request (never a notification).
        Err(e) if e.id_bytes().is_some() || !batch => Sorted::Answer(written::error(e.id_bytes(), e.error_code(), e.message(), None)),
        Err(_) => Sorted::Drop,
    }
}

/// How a POST that carried no request is answered, given the errors
/// decided for it (invalid batch elements, duplicate ids): 202 with none
/// (row `streamable-http-server-202-for-non-request`), else 200 for a
/// batch's array, 400 for a single message's error.
pub(crate) fn without_requests(errors: bool, batch: bool) -> u16 {
    match (errors, batch) {
        (false, _) => 202,
        (true, true) => 200,
        (true, false) => 400,
    }
}

/// The status and `Retry-After` of a POST's JSON answer, from what the hub
/// said of its (single) response. A 2026-07-28 answer's status follows its
/// error code (rows `streamable-http-unsupported-version-400`,
/// `streamable-http-unknown-method-404`); a rate-limit refusal gets
/// `Retry-After`, and 429 where the status follows the error (legacy SDK
/// clients read JSON-RPC errors only from a 200).
pub(crate) fn answer_status(modern: bool, batch: bool, outcome: Option<Outcome>) -> (u16, Option<u64>) {
    let (code, retry) = match outcome {
        Some(Outcome::Error { code, retry_after_s }) if !batch => (code, retry_after_s),
        _ => return (200, None),
    };
    let status = match (modern, retry) {
        (false, _) => 200,
        (true, Some(_)) => 429,
        (true, None) => error::http_status(code),
    };
    (status, retry)
}

/// A POST whose answers never all came (its queue closed): its session
/// ended meanwhile (404), else the queue overflowed (500).
pub(crate) fn unanswered(session_live: bool, queue_cap: usize) -> Refusal<'static> {
    if !session_live {
        return Refusal::invalid(404, "Not found: the session ended before the request was answered");
    }
    let msg = format!("mcpx dropped this request's answer: over {queue_cap} messages were waiting for it");
    Refusal { code: ErrorCode::InternalError, ..Refusal::invalid(500, msg) }
}

/// How long a POST whose client takes JSON only waits between wake-ups
/// while no keep-alive can flow.
const QUIET: Duration = Duration::from_secs(3600);

/// A POST's answer while its requests are with the hub: what to do with
/// each thing that comes (rows `streamable-http-server-json-or-sse-for-request`,
/// `streamable-http-sse-includes-response`,
/// `streamable-http-server-terminates-sse-after-response`). JSON when the
/// responses come first; an SSE stream when something else must go first,
/// or a call is long (so that keep-alives can flow).
#[derive(Debug)]
pub(crate) struct Answering {
    /// Responses still awaited.
    awaited: usize,
    /// The client takes an SSE answer.
    sse_ok: bool,
    /// A 2026-07-28 request (its status follows its error).
    modern: bool,
    batch: bool,
    /// The answer is an SSE stream already.
    streaming: bool,
    /// What the hub said of the last response.
    outcome: Option<Outcome>,
}

/// What came while a POST waits for its answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Came {
    /// A response to one of its requests.
    Response(Outcome),
    /// A message that is not a response (a notification, a server request).
    Other,
    /// The queue closed: no more will come.
    Closed,
    /// The keep-alive time, at `now`.
    Tick(Instant),
    /// The client went away.
    PeerGone,
}

/// What to do with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Keep the message for the JSON answer.
    Hold,
    /// Send the message on the stream; `start`: begin the stream first
    /// (its priming event, then what was held).
    Stream { start: bool },
    /// Send a keep-alive; `start`: begin the stream first.
    Ping { start: bool },
    /// Nothing can flow (the client takes JSON only): wake next at this time.
    Sleep(Instant),
    /// The client went away (the call goes on, row
    /// `streamable-http-disconnect-not-cancel`).
    Leave,
    /// The answer ends.
    End(End),
}

/// How a POST's answer ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// The end of its SSE stream.
    Stream,
    /// The JSON answer, with its status and `Retry-After`.
    Json { status: u16, retry_after_s: Option<u64> },
    /// Not every answer came and nothing streamed ([`unanswered`]).
    Unanswered,
}

impl Answering {
    pub fn new(awaited: usize, sse_ok: bool, modern: bool, batch: bool) -> Answering {
        Answering { awaited, sse_ok, modern, batch, streaming: false, outcome: None }
    }

    /// The end, once every response came.
    pub fn done(&self) -> Option<End> {
        (self.awaited == 0).then(|| self.end(false))
    }

    /// What to do with what came.
    pub fn on(&mut self, came: Came) -> Step {
        match came {
            Came::PeerGone => Step::Leave,
            Came::Closed => Step::End(self.end(true)),
            Came::Response(o) => {
                self.outcome = Some(o);
                self.awaited = self.awaited.saturating_sub(1);
                self.message(false)
            }
            Came::Other => self.message(true),
            Came::Tick(now) if !self.streaming && !self.sse_ok => Step::Sleep(now + QUIET),
            Came::Tick(_) => Step::Ping { start: self.stream() },
        }
    }

    /// A message: held while the answer can still be JSON; anything but a
    /// response starts the stream.
    fn message(&mut self, other: bool) -> Step {
        if !self.streaming && !other {
            return Step::Hold;
        }
        Step::Stream { start: self.stream() }
    }

    /// Streams from now on; true when that starts the stream.
    fn stream(&mut self) -> bool {
        !std::mem::replace(&mut self.streaming, true)
    }

    fn end(&self, early: bool) -> End {
        match (self.streaming, early) {
            (true, _) => End::Stream,
            (false, true) => End::Unanswered,
            (false, false) => {
                let (status, retry_after_s) = answer_status(self.modern, self.batch, self.outcome);
                End::Json { status, retry_after_s }
            }
        }
    }
}

/// Does a new stream of a session that negotiated `rev` begin with a
/// priming event? From 2025-11-25 on (row `streamable-http-sse-priming-event`).
fn primes(rev: Option<Revision>) -> bool {
    rev.is_some_and(|r| r >= Revision::V2025_11_25)
}

/// The SSE answer a POST of a session that negotiated `rev` would get:
/// (resumable, begins with a priming event). Resumable from 2025-03-26 on
/// (row `streamable-http-server-may-resume`); neither for a 2026-07-28
/// request (`modern`) nor for a client that takes no SSE answer.
pub(crate) fn post_stream(rev: Option<Revision>, modern: bool, sse_ok: bool) -> (bool, bool) {
    let rev = rev.filter(|_| !modern && sse_ok);
    (rev.is_some_and(|r| r >= Revision::V2025_03_26), primes(rev))
}

/// A GET that opens (or resumes) a session's standalone stream.
#[derive(Debug, PartialEq)]
pub(crate) struct OpenStream<'r> {
    pub sid: &'r str,
    pub last_event_id: Option<&'r str>,
    /// A new stream begins with a priming event (2025-11-25 on).
    pub prime: bool,
}

/// GET /mcp: the session's standalone stream (rows `streamable-http-get-sse-or-405`,
/// `streamable-http-get-no-responses`).
pub(crate) fn get<'r>(req: &'r Request, facts: &impl Facts) -> Result<OpenStream<'r>, Refusal<'static>> {
    if !req.accepts("text/event-stream") {
        return Err(Refusal::invalid(406, "Not acceptable: GET opens an SSE stream; send Accept: text/event-stream"));
    }
    let sid = session_of(req).ok_or_else(|| Refusal::invalid(400, NO_SESSION_ID))?;
    let Known::Live(rev) = facts.session(sid) else {
        return Err(unknown_session(None));
    };
    Ok(OpenStream { sid, last_event_id: req.header_str("last-event-id"), prime: primes(rev) })
}

/// DELETE /mcp: the session to end (rows `streamable-http-client-delete-session`,
/// `streamable-http-server-may-405-delete`).
pub(crate) fn delete<'r>(req: &'r Request, facts: &impl Facts) -> Result<&'r str, Refusal<'static>> {
    let sid = session_of(req).ok_or_else(|| Refusal::invalid(400, NO_SESSION_ID))?;
    match facts.session(sid) {
        Known::Live(_) => Ok(sid),
        Known::Unknown => Err(ended()),
    }
}

/// The 404 of a session that is not there to end, or to serve.
pub(crate) fn ended() -> Refusal<'static> {
    Refusal::invalid(404, "Not found: unknown or ended session")
}

/// The 404 of a POST whose session ended while it was being registered.
pub(crate) fn ended_meanwhile() -> Refusal<'static> {
    Refusal::invalid(404, "Not found: the session ended")
}

/// The 409 of a GET for a session whose standalone stream is open already.
pub(crate) fn second_stream() -> Refusal<'static> {
    Refusal::invalid(409, "Conflict: this session already has an open GET stream")
}

/// The 404 of `GET /metrics` when the hub keeps none.
pub(crate) fn metrics_off() -> Refusal<'static> {
    Refusal::invalid(404, "Not found: metrics are off (\"policy\": {\"metrics\": false})")
}

/// The 404 of a `POST /messages` naming no 2024-11-05 session of this listener.
pub(crate) fn unknown_legacy_session() -> Refusal<'static> {
    Refusal::invalid(404, "Not found: unknown or ended session; reconnect to /sse")
}

/// Which replica the directory names as holding a session this replica
/// does not hold.
#[cfg(feature = "cluster")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Holder<'a> {
    /// This replica (it took the session over meanwhile).
    Me,
    /// A replica among the peers: the request is relayed to it.
    Peer(&'a str),
    /// No entry, or a replica not among the peers: served here, which
    /// answers 404 unless the session is here (row
    /// `streamable-http-server-404-terminated-session`).
    Nobody,
}

/// The holder of a session whose entry names `owner`, for replica `me`
/// whose peers are those `peer` knows.
#[cfg(feature = "cluster")]
pub(crate) fn holder<'a>(owner: Option<&'a str>, me: &str, peer: impl Fn(&str) -> bool) -> Holder<'a> {
    match owner {
        Some(o) if o == me => Holder::Me,
        Some(o) if peer(o) => Holder::Peer(o),
        _ => Holder::Nobody,
    }
}

/// May a request go on with a session whose replica is gone, here? A POST
/// or GET to the MCP endpoint (a 2024-11-05 session ends with its stream),
/// by the principal the session's kept state names.
#[cfg(feature = "cluster")]
pub(crate) fn may_take_over(method: &str, mcp: bool) -> bool {
    matches!(method, "POST" | "GET") && mcp
}

/// The 503 of a request for a session whose replica cannot be looked up:
/// the session may well be alive there, and a 404 would make the client
/// start over for nothing; the directory reconnects within seconds.
#[cfg(feature = "cluster")]
pub(crate) fn directory_unavailable(why: &str) -> Refusal<'static> {
    let text = format!("Service unavailable: cannot find which replica holds this session ({why}); retry shortly");
    Refusal { code: ErrorCode::InternalError, retry_after_s: Some(DIRECTORY_RETRY_AFTER_S), ..Refusal::invalid(503, text) }
}

/// `Retry-After` of [`directory_unavailable`].
#[cfg(feature = "cluster")]
const DIRECTORY_RETRY_AFTER_S: u64 = 2;

/// The 404 of a request for a session whose replica does not answer.
#[cfg(feature = "cluster")]
pub(crate) fn holder_gone(why: &str) -> Refusal<'static> {
    Refusal::invalid(404, format!("Not found: unknown or ended session ({why}); initialize a new one"))
}

/// GET /sse (2024-11-05): 406 unless the client may take an SSE stream.
pub(crate) fn legacy_sse(req: &Request) -> Option<Refusal<'static>> {
    (!sse_ok(req)).then(|| Refusal::invalid(406, "Not acceptable: send Accept: text/event-stream"))
}

#[cfg(test)]
#[path = "tests_decide.rs"]
mod tests;
