//! The endpoints of an authenticated request (the `listener` checked it):
//! `/mcp` (POST, GET, DELETE), `/status`, `/metrics`, and the 2024-11-05
//! `/sse` + `/messages`; first a session of another principal (404), then
//! the method (405).

use mcpx_core::error::ErrorCode;
use std::time::{Duration, Instant};

use mcpx_core::envelope::{Envelope, Kind as MsgKind, Message};
use mcpx_core::frame::http::Version;
use mcpx_core::revision::{self, Era as RevEra, EraHints, Revision, Revisions};

use super::auth::Principal;
use crate::hub::{IdKey, Level, Outcome};
use super::conn::{Conn, Wake};
use super::request::Request;
use super::session::{self, Kind, Shared};
use super::few::Few;
use super::mailbox::{Item, Receiver};
use super::sse_stream::{Attach, SseOut, StreamId};

/// The refusal of a request that needs a session but names none.
const NO_SESSION_ID: &str = "Bad Request: Mcp-Session-Id header is required";

/// Handles one request; false when the connection must close.
/// A client's request in a legacy session of this replica that another
/// replica passed on over the hop (`cluster_hop`), as principal `who`:
/// served as if the client had come here, never passed on again.
pub(super) async fn serve_relayed(sh: &Shared, conn: &mut Conn, req: &mut Request, who: &Principal) -> bool {
    #[cfg(feature = "cluster")]
    if let Some(sid) = named_session(req, &sh.cfg) {
        super::session_dir::forget_unknown(sh, sid).await;
    }
    match Target::of(req.path(), &sh.cfg) {
        Some(target @ (Target::Mcp | Target::Messages)) => serve(sh, conn, req, target, who).await,
        _ => conn.reject(404, "Not found: the hop carries requests to the MCP endpoint and /messages only").await,
    }
}

/// An authenticated request to `target`: the session owner check, then the
/// method.
pub(super) async fn serve(sh: &Shared, conn: &mut Conn, req: &mut Request, target: Target, who: &Principal) -> bool {
    let named = session_of(req).or_else(|| (target == Target::Messages).then(|| legacy_session_of(req)));
    if named.is_some_and(|sid| !session::usable_by(sh, sid, who)) {
        return conn.reject(404, "Not found: unknown or ended session").await;
    }
    match (target, req.method()) {
        (Target::Status, "GET") => super::status_page::get(sh, conn, req, who).await,
        (Target::Status, _) => conn.method_not_allowed("GET").await,
        (Target::Metrics, "GET") => metrics(sh, conn).await,
        (Target::Metrics, _) => conn.method_not_allowed("GET").await,
        (Target::Sse, "GET") => legacy_sse(sh, conn, req, who).await,
        (Target::Sse, _) => conn.method_not_allowed("GET").await,
        (Target::Messages, "POST") => legacy_messages(sh, conn, req).await,
        (Target::Messages, _) => conn.method_not_allowed("POST").await,
        (_, "POST") => post(sh, conn, req, who).await,
        (_, "GET") => get(sh, conn, req).await,
        (_, "DELETE") => delete(sh, conn, req).await,
        _ => conn.method_not_allowed("GET, POST, DELETE").await,
    }
}

/// What a request's path names.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    Health,
    Status,
    Metrics,
    /// 2024-11-05 HTTP+SSE (when served).
    Sse,
    Messages,
    /// The MCP endpoint.
    Mcp,
}

impl Target {
    pub(super) fn of(path: &str, cfg: &super::HttpConfig) -> Option<Target> {
        let legacy = cfg.legacy_sse;
        Some(match path {
            "/health" => Target::Health,
            "/status" => Target::Status,
            "/metrics" => Target::Metrics,
            "/sse" if legacy => Target::Sse,
            "/messages" if legacy => Target::Messages,
            p if p == cfg.path => Target::Mcp,
            _ => return None,
        })
    }
}

/// `GET /metrics`: the hub's Prometheus text (`crate::policy::metrics`).
async fn metrics(sh: &Shared, conn: &mut Conn) -> bool {
    let (sessions, conns) = {
        let st = sh.state.borrow();
        (st.sessions.len(), st.conns)
    };
    match sh.link.call(|hub, _| hub.metrics_text(sessions, conns)) {
        Some(text) => {
            let hs = [("Content-Type", crate::policy::metrics::CONTENT_TYPE), ("Cache-Control", "no-cache")];
            conn.respond(200, &hs, text.as_bytes(), true).await
        }
        None => conn.reject(404, "Not found: metrics are off (\"policy\": {\"metrics\": false})").await,
    }
}

/// Reads a JSON body; answers 415/413 itself (`None` then carries keep-alive).
async fn json_body(conn: &mut Conn, req: &mut Request) -> Result<Vec<u8>, bool> {
    let ct = req.header_str("content-type").unwrap_or("");
    if !ct.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")) {
        return Err(conn.reject(415, "Unsupported media type: POST a JSON-RPC message as application/json").await);
    }
    conn.body(req).await
}

/// Which era a POST belongs to (conformance notes §1.6): decided once, by
/// core's one classification.
fn classify(has_session: bool, version_header: Option<&str>, msg: &Message<'_>) -> RevEra {
    let single = match msg {
        Message::Single(env) => Some(env),
        Message::Batch(_) => None,
    };
    let hints = EraHints { session: has_session, version_header, modern_connection: false };
    revision::request_era(single, hints)
}

fn supported_json() -> String {
    let list: Vec<String> = Revisions::LEGACY
        .iter()
        .map(|r| format!("\"{}\"", r.as_str()))
        .collect();
    format!("[{}]", list.join(","))
}

/// POST /mcp.
async fn post(sh: &Shared, conn: &mut Conn, req: &mut Request, who: &Principal) -> bool {
    let body = match json_body(conn, req).await {
        Ok(b) => b,
        Err(keep) => return keep,
    };
    let posted = match Message::parse(&body) {
        Ok(msg) => {
            let req = &*req;
            let sid = session_of(req);
            let pv = req.header_str("mcp-protocol-version").map(str::trim);
            match classify(sid.is_some(), pv, &msg) {
                RevEra::Modern => post_modern(sh, conn, req, &msg, who).await,
                RevEra::Legacy => post_legacy(sh, conn, req, sid, pv, &msg, who).await,
            }
        }
        Err(e) => Posted::Done(conn.error(400, e.id_bytes(), e.error_code(), e.message(), None, true).await),
    };
    // The hub has the messages: the body is not kept while their answers
    // are awaited (64 clients posting 64 KiB would hold 4 MiB).
    conn.recycle_body(body);
    posted.finish(sh, conn).await
}

/// A POST once its messages are with the hub (or it was answered), its
/// body no longer needed.
pub(super) enum Posted {
    /// Answered; true: keep the connection.
    Done(bool),
    /// Its requests are with the hub: their answers are awaited.
    Waiting(Waiting),
}

impl Posted {
    /// Answers the POST; true: keep the connection.
    pub(super) async fn finish(self, sh: &Shared, conn: &mut Conn) -> bool {
        match self {
            Posted::Done(keep) => keep,
            Posted::Waiting(w) => w.answer(sh, conn).await,
        }
    }
}

/// The `HeaderMismatchError` (-32020) for a modern POST whose headers do not
/// mirror its body, if any (checked only once `_meta` itself is valid: a
/// missing field is the hub's -32602 first, conformance notes §3.1).
fn header_mismatch(req: &Request, env: &Envelope<'_>) -> Option<String> {
    use mcpx_core::headers::{self, HeaderField, ParamValue};
    let meta_version = env.protocol_version()?.as_str()?;
    let version = String::from_utf8_lossy(meta_version.raw()).into_owned();
    if env.meta().and_then(|m| m.get(mcpx_core::meta::CLIENT_CAPABILITIES_KEY)).is_none() {
        return None;
    }
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
fn param_mismatch(sh: &Shared, req: &Request, env: &Envelope<'_>) -> Option<String> {
    use mcpx_core::headers::{self, HeaderField, ParamValue};
    if !env.method_is("tools/call") {
        return None;
    }
    let name = env.name()?.as_str()?;
    let name = String::from_utf8_lossy(name.raw()).into_owned();
    let schema = sh.link.call(|hub, _| hub.tool_input_schema(&name))?;
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

/// A 2026-07-28 (stateless) request: served by the hub as one request of a
/// client that lives as long as the POST (no session, no `Mcp-Session-Id`).
/// A `subscriptions/listen` POST stays open as its stream.
pub(super) async fn post_modern(sh: &Shared, conn: &mut Conn, req: &Request, msg: &Message<'_>, who: &Principal) -> Posted {
    let Message::Single(env) = msg else {
        let text = "Invalid request: JSON-RPC batches are not part of protocol revision 2026-07-28";
        return Posted::Done(conn.error(400, None, ErrorCode::InvalidRequest, text, None, true).await);
    };
    if env.kind() != MsgKind::Request {
        // Stateless: nothing to route a notification or response to (a
        // request is cancelled by closing its stream).
        return Posted::Done(conn.respond(202, &[], b"", true).await);
    }
    let id = env.id_bytes().unwrap_or(b"null");
    // Requirement rows streamable-http-server-rejects-header-body-mismatch, streamable-http-header-mismatch-400-jsonrpc
    if let Some(text) = header_mismatch(req, env).or_else(|| param_mismatch(sh, req, env)) {
        return Posted::Done(conn.error(400, Some(id), ErrorCode::HeaderMismatch, &text, None, true).await);
    }
    let (sid, c) = match session::open(sh, Kind::Modern, who) {
        Ok(x) => x,
        Err(r) => return Posted::Done(r.answer(conn, Some(id)).await),
    };
    let sse_ok = !req.headers_present("accept") || req.accepts("text/event-stream");
    let x = Exchange {
        sid: &sid,
        c,
        pending: Few::one(IdKey::new(id)),
        msgs: Few::one(*env),
        prefilled: Few::Empty,
        reply: Reply { batch: false, sse_ok, http10: req.version == Version::Http10, set_session: false, modern: true },
    };
    exchange(sh, conn, x).await
}

/// A legacy POST: `initialize` (new session) or a message in a session.
async fn post_legacy(
    sh: &Shared, conn: &mut Conn,
    req: &Request,
    sid: Option<&str>,
    pv: Option<&str>,
    msg: &Message<'_>,
    who: &Principal,
) -> Posted {
    let first_id = match msg {
        Message::Single(e) => e.id_bytes(),
        Message::Batch(_) => None,
    };
    // Requirement rows streamable-http-server-400-unsupported-version-header, streamable-http-server-assumes-2025-03-26
    let header_rev = match pv {
        None => None,
        Some(v) => match Revision::parse(v).filter(|r| r.era() == RevEra::Legacy) {
            Some(r) => Some(r),
            None => {
                let data = format!(
                    "{{\"supported\":{},\"requested\":{}}}",
                    supported_json(),
                    serde_json::Value::from(v)
                );
                let text = format!("Bad Request: unsupported MCP-Protocol-Version '{v}'");
                let data = Some(data.as_bytes());
                return Posted::Done(conn.error(400, first_id, ErrorCode::InvalidRequest, &text, data, true).await);
            }
        },
    };
    let sse_ok = !req.headers_present("accept") || req.accepts("text/event-stream");
    let http10 = req.version == Version::Http10;
    let Some(sid) = sid else {
        // Requirement rows streamable-http-server-may-assign-session, streamable-http-server-400-missing-session
        let Message::Single(env) = msg else {
            return Posted::Done(conn.reject(400, NO_SESSION_ID).await);
        };
        if !(env.kind() == MsgKind::Request && env.method_is("initialize")) {
            return Posted::Done(conn.error(400, first_id, ErrorCode::InvalidRequest, "Bad Request: Mcp-Session-Id header is required (send initialize first to open a session)", None, true).await);
        }
        let (sid, c) = match session::open(sh, Kind::Streamable, who) {
            Ok(x) => x,
            Err(r) => return Posted::Done(r.answer(conn, first_id).await),
        };
        // Before the answer: the client's next request may reach any replica.
        #[cfg(feature = "cluster")]
        super::session_dir::publish(sh, &sid).await;
        let id = env.id_bytes().unwrap_or(b"null");
        let x = Exchange {
            sid: &sid,
            c,
            pending: Few::one(IdKey::new(id)),
            msgs: Few::one(*env),
            prefilled: Few::Empty,
            reply: Reply { batch: false, sse_ok, http10, set_session: true, modern: false },
        };
        return exchange(sh, conn, x).await;
    };
    // Requirement rows streamable-http-server-404-terminated-session
    let Some(c) = sh.touch(sid, Kind::Streamable) else {
        let text = "Not found: unknown or ended session; initialize a new one";
        return Posted::Done(conn.error(404, first_id, ErrorCode::InvalidRequest, text, None, true).await);
    };
    let negotiated = session::session_rev(sh, sid);
    // Requirement rows streamable-http-server-400-unsupported-version-header: a session
    // speaks the revision its initialize negotiated, no other.
    if let Some((h, n)) = header_rev.zip(negotiated).filter(|(h, n)| h != n) {
        let data = format!("{{\"supported\":[\"{}\"],\"requested\":\"{}\"}}", n.as_str(), h.as_str());
        let text = format!(
            "Bad Request: MCP-Protocol-Version '{}' is not the revision this session negotiated ({})",
            h.as_str(),
            n.as_str()
        );
        return Posted::Done(conn.error(400, first_id, ErrorCode::InvalidRequest, &text, Some(data.as_bytes()), true).await);
    }
    let rev = header_rev.or(negotiated).unwrap_or(Revision::V2025_03_26);
    let (single, elements) = match msg {
        Message::Single(e) => (Some(Ok(*e)), None),
        Message::Batch(b) => {
            // Requirement rows streamable-http-post-body-may-batch (2025-03-26 only)
            if !mcpx_core::envelope::Batch::allowed_in(rev) {
                let text = format!(
                    "Invalid request: JSON-RPC batches are not supported in protocol revision {}",
                    rev.as_str()
                );
                return Posted::Done(conn.reject(400, &text).await);
            }
            (None, Some(b.elements()))
        }
    };
    let batch = matches!(msg, Message::Batch(_));
    let mut x = Exchange {
        sid,
        c,
        pending: Few::Empty,
        msgs: Few::Empty,
        prefilled: Few::Empty,
        reply: Reply { batch, sse_ok, http10, set_session: false, modern: false },
    };
    for el in single.into_iter().chain(elements.into_iter().flatten()) {
        match el {
            Ok(env) if env.kind() == MsgKind::Request => {
                let id = env.id_bytes().unwrap_or(b"null");
                let open = sh.link.call(|hub, _| hub.client_request_open(x.c, id));
                if x.pending.iter().any(|p| p.bytes() == id) || open {
                    x.prefilled.push(crate::bytes::written::error(
                        Some(id),
                        ErrorCode::InvalidRequest,
                        "Invalid request: this request id is already in flight",
                        None,
                    ));
                    continue;
                }
                x.pending.push(IdKey::new(id));
                x.msgs.push(env);
            }
            Ok(env) => x.msgs.push(env),
            Err(e) => {
                // Only answer what could be a request (never a notification).
                if e.id_bytes().is_some() || !batch {
                    x.prefilled.push(crate::bytes::written::error(
                        e.id_bytes(),
                        e.error_code(),
                        e.message(),
                        None,
                    ));
                }
            }
        }
    }
    if x.pending.is_empty() {
        sh.feed_views(x.c, x.msgs.as_slice());
        if x.prefilled.is_empty() {
            // Requirement rows streamable-http-server-202-for-non-request
            return Posted::Done(conn.respond(202, &[], b"", true).await);
        }
        let body = join(x.prefilled, batch);
        let status = if batch { 200 } else { 400 };
        return Posted::Done(conn.respond(status, &[("Content-Type", "application/json")], &body, true).await);
    }
    exchange(sh, conn, x).await
}

/// The body answering a POST: its one message, or the batch of them.
fn join(msgs: Few<Vec<u8>>, batch: bool) -> Vec<u8> {
    if batch {
        return crate::hub::batch_array(msgs.as_slice());
    }
    msgs.into_iter().next().unwrap_or_default()
}

/// A POST carrying requests, to be answered; `msgs` are views into its body.
struct Exchange<'b> {
    sid: &'b str,
    c: crate::hub::ClientId,
    pending: Few<IdKey>,
    msgs: Few<Envelope<'b>>,
    /// Responses decided here (invalid batch elements, duplicate ids).
    prefilled: Few<Vec<u8>>,
    reply: Reply,
}

/// How a POST's answer is given.
#[derive(Clone, Copy)]
struct Reply {
    batch: bool,
    sse_ok: bool,
    http10: bool,
    /// Send `Mcp-Session-Id` (the answer to `initialize`).
    set_session: bool,
    /// A 2026-07-28 request: a JSON error answer gets its HTTP status from
    /// the error code.
    modern: bool,
}

/// Registers the exchange, feeds the hub and answers: JSON when the
/// responses come first, SSE when something must stream before them (rows
/// `streamable-http-server-json-or-sse-for-request`, `streamable-http-sse-includes-response`,
/// `streamable-http-server-terminates-sse-after-response`).
async fn exchange(sh: &Shared, conn: &mut Conn, x: Exchange<'_>) -> Posted {
    let (tx, rx) = conn.queue(sh.cfg.limits.stream_queue);
    let expected = x.pending.len();
    // Requirement rows streamable-http-server-may-resume: the SSE answer of a
    // 2025-03-26..2025-11-25 session is resumable; a 2025-11-25 client gets
    // its priming event (streamable-http-sse-priming-event).
    let rev = session::session_rev(sh, x.sid).filter(|_| !x.reply.modern && x.reply.sse_ok);
    let resumable = rev.is_some_and(|r| r >= Revision::V2025_03_26);
    let prime = rev.is_some_and(|r| r >= Revision::V2025_11_25);
    let Some(id) = session::add_exchange(sh, x.sid, x.pending, x.reply.sse_ok, resumable, tx) else {
        if x.reply.modern {
            session::end(sh, x.sid, true);
        }
        return Posted::Done(conn.reject(404, "Not found: the session ended").await);
    };
    sh.feed_views(x.c, x.msgs.as_slice());
    Posted::Waiting(Waiting {
        sid: x.sid.to_string(),
        stream: Stream { id, prime },
        rx,
        expected,
        prefilled: x.prefilled,
        reply: x.reply,
    })
}

/// An exchange whose requests are with the hub: what answering it needs,
/// none of it borrowed from the POST's body.
pub(super) struct Waiting {
    sid: String,
    stream: Stream,
    rx: Receiver,
    expected: usize,
    prefilled: Few<Vec<u8>>,
    reply: Reply,
}

impl Waiting {
    /// Answers once the responses came: JSON, or SSE when something
    /// streamed first. A 2026-07-28 client ends with its POST.
    async fn answer(self, sh: &Shared, conn: &mut Conn) -> bool {
        let ends = self.reply.modern.then(|| self.sid.clone());
        let keep = self.wait(sh, conn).await;
        if let Some(sid) = ends {
            // Requirement rows streamable-http-close-is-cancel: the client ends with its POST (a call still in flight is cancelled upstream)
            session::end(sh, &sid, true);
        }
        keep
    }

    async fn wait(self, sh: &Shared, conn: &mut Conn) -> bool {
        let Waiting { sid, stream, rx, expected, prefilled, reply: Reply { batch, sse_ok, http10, set_session, modern } } = self;
        let sid = sid.as_str();
        let seq = stream.id.seq;
        // The connection is gone: a stream the client has ids of waits for it.
        let gone = |sse: &Option<SseOut>| session::leave_exchange(sh, sid, seq, seq, sse.is_some());
        let session_hdr = [("Mcp-Session-Id", sid)];
        let extra: &[(&str, &str)] = if set_session { &session_hdr } else { &[] };
        let version = if http10 {
            Version::Http10
        } else {
            Version::Http11
        };
        let mut responses: Few<(Option<u64>, Vec<u8>)> = Few::Empty;
        for r in prefilled {
            responses.push((None, r));
        }
        let mut got = 0usize;
        // What the (last) response says: the hub wrote it (`Outcome`).
        let mut outcome = None;
        let mut sse: Option<SseOut> = None;
        let mut ping_at =
            Instant::now() + Duration::from_millis(sh.cfg.limits.sse_keepalive_ms.max(10));
        let ended_early = loop {
            if got >= expected {
                break false;
            }
            let wake = conn.wait(&rx, ping_at).await;
            match wake {
                Wake::PeerGone => {
                    // Requirement rows streamable-http-disconnect-not-cancel: the call goes on, its
                    // result is dropped, or kept for a client that resumes the stream
                    gone(&sse);
                    return false;
                }
                Wake::Item(None) => break true,
                Wake::Item(Some(item)) => {
                    let (n, bytes, is_response) = match item {
                        Item::Response(n, b, o) => {
                            outcome = Some(o);
                            (n, b, true)
                        }
                        Item::Other(n, b) => (n, b, false),
                    };
                    if is_response {
                        got += 1;
                    }
                    if sse.is_none() && !is_response {
                        let Some(s) = start_sse(conn, version, extra, &stream, &mut responses).await else {
                            gone(&sse);
                            return false;
                        };
                        sse = Some(s);
                    }
                    match sse.as_mut() {
                        Some(s) => {
                            if !s.message(conn, &stream.id, n, &bytes).await {
                                gone(&sse);
                                return false;
                            }
                            ping_at = s.next_ping;
                        }
                        None => responses.push((n, bytes)),
                    }
                }
                Wake::Tick => {
                    if sse.is_none() {
                        if !sse_ok {
                            ping_at = Instant::now() + Duration::from_secs(3600);
                            continue;
                        }
                        // A long call: stream, so that keep-alives can flow.
                        let Some(s) = start_sse(conn, version, extra, &stream, &mut responses).await else {
                            gone(&sse);
                            return false;
                        };
                        sse = Some(s);
                    }
                    let s = sse.as_mut().expect("started");
                    if !s.ping(conn).await {
                        gone(&sse);
                        return false;
                    }
                    ping_at = s.next_ping;
                }
            }
        };
        session::leave_exchange(sh, sid, seq, seq, false);
        conn.spare_queue = Some(rx);
        match sse {
            Some(s) => s.finish(conn).await,
            None if ended_early => {
                if sh.touch(sid, Kind::Streamable).is_none() {
                    let msg = "Not found: the session ended before the request was answered";
                    conn.reject(404, msg).await
                } else {
                    let max = sh.cfg.limits.stream_queue;
                    let msg = format!(
                        "mcpx dropped this request's answer: over {max} messages were waiting for it"
                    );
                    conn.error(500, None, ErrorCode::InternalError, &msg, None, true).await
                }
            }
            None => {
                let mut bodies = Few::Empty;
                for (_, r) in responses {
                    bodies.push(r);
                }
                let body = join(bodies, batch);
                let error = match outcome {
                    Some(Outcome::Error { code, retry_after_s }) if !batch => Some((code, retry_after_s)),
                    _ => None,
                };
                let mut status = 200;
                if modern {
                    // Requirement rows streamable-http-unsupported-version-400, streamable-http-unknown-method-404
                    status = error.map_or(200, |(code, _)| mcpx_core::error::http_status(code));
                }
                // A rate-limit refusal: `Retry-After`, and 429 where the status
                // follows the error (2026-07-28); legacy SDK clients read
                // JSON-RPC errors only from a 200.
                let retry = error.and_then(|(_, retry)| retry).map(|s| s.to_string());
                let mut hs = [("Content-Type", "application/json"), ("", ""), ("", "")];
                let mut k = 1;
                for h in extra {
                    hs[k] = *h;
                    k += 1;
                }
                if let Some(secs) = &retry {
                    hs[k] = ("Retry-After", secs);
                    k += 1;
                    if modern {
                        status = 429;
                    }
                }
                conn.respond(status, &hs[..k], &body, !http10).await
            }
        }
    }
}

/// An exchange's SSE stream: its id, and whether it begins with a
/// priming event.
struct Stream {
    id: StreamId,
    prime: bool,
}

/// Turns an exchange's answer into an SSE stream, sending the priming event
/// and the responses `held` so far first; `None` when the peer is gone.
async fn start_sse(
    conn: &mut Conn,
    version: Version,
    extra: &[(&str, &str)],
    stream: &Stream,
    held: &mut Few<(Option<u64>, Vec<u8>)>,
) -> Option<SseOut> {
    let mut s = SseOut::start(conn, version, extra).await?;
    if stream.prime && !s.prime(conn, &stream.id).await {
        return None;
    }
    for (n, r) in std::mem::take(held) {
        if !s.message(conn, &stream.id, n, &r).await {
            return None;
        }
    }
    Some(s)
}

fn session_of(req: &Request) -> Option<&str> {
    req.header_str("mcp-session-id").map(str::trim)
}

/// The legacy session a request to the MCP endpoint (`Mcp-Session-Id`) or
/// to `/messages` (`sessionId`) names.
#[cfg(feature = "cluster")]
pub(super) fn named_session<'r>(req: &'r Request, cfg: &super::HttpConfig) -> Option<&'r str> {
    match Target::of(req.path(), cfg)? {
        Target::Mcp => session_of(req),
        Target::Messages => Some(legacy_session_of(req)),
        _ => None,
    }
}

/// GET /mcp: the session's standalone stream (rows `streamable-http-get-sse-or-405`,
/// `streamable-http-get-no-responses`: only notifications and requests reach it).
async fn get(sh: &Shared, conn: &mut Conn, req: &mut Request) -> bool {
    if !req.accepts("text/event-stream") {
        return conn.reject(406, "Not acceptable: GET opens an SSE stream; send Accept: text/event-stream").await;
    }
    let Some(sid) = session_of(req) else {
        return conn.reject(400, NO_SESSION_ID).await;
    };
    if sh.touch(&sid, Kind::Streamable).is_none() {
        return conn.reject(404, "Not found: unknown or ended session; initialize a new one").await;
    }
    let (tx, rx) = conn.queue(sh.cfg.limits.stream_queue);
    let seq = sh.next_seq();
    let last = req.header_str("last-event-id").map(str::to_string);
    // Requirement rows streamable-http-client-resume-with-last-event-id: a POST's stream is
    // resumed by GET too; it carries the rest of that stream and ends after its last answer.
    let resumed = last.as_deref().and_then(|l| session::resume_exchange(sh, &sid, l, seq, tx.clone()));
    if let Some(att) = resumed {
        drop(tx);
        let stream = att.stream.seq;
        lost_events(sh, &att);
        let keep = stream_out(conn, req.version, &rx, &[], None, Some((att, false))).await;
        session::leave_exchange(sh, &sid, stream, seq, true);
        return keep;
    }
    // A POST's stream on the replica this session was taken over from: its
    // answer is gone with it.
    #[cfg(feature = "cluster")]
    if let Some(lost) = last.as_deref().and_then(|l| super::session_dir::lost_stream(sh, &sid, l)) {
        return super::session_dir::answer_lost(sh, conn, req, &sid, lost).await;
    }
    let Some(att) = session::set_get_resumable(sh, &sid, seq, tx, last.as_deref()) else {
        return conn.reject(409, "Conflict: this session already has an open GET stream").await;
    };
    lost_events(sh, &att);
    let prime = session::session_rev(sh, &sid).is_some_and(|r| r >= Revision::V2025_11_25);
    let keep = stream_out(conn, req.version, &rx, &[], None, Some((att, prime))).await;
    session::clear_get(sh, &sid, seq);
    keep
}

/// Says so when a resumed stream's buffer no longer had all the client missed.
fn lost_events(sh: &Shared, att: &Attach) {
    if att.lost > 0 {
        sh.log(Level::Warn, format!("http: a client resumed its stream {}: {} event(s) it missed were no longer kept", att.stream.seq, att.lost));
    }
}

/// Copies a standalone stream's queue to the client until the queue closes
/// (session ended) or the peer leaves. `event` names the events. A
/// resumable stream (`resume`) begins with its priming event when new (and
/// the flag says the client's revision knows them), or with the events the
/// client missed.
async fn stream_out(
    conn: &mut Conn,
    version: Version,
    rx: &Receiver,
    extra: &[(&str, &str)],
    first: Option<(&[u8], &[u8])>,
    resume: Option<(Attach, bool)>,
) -> bool {
    let Some(mut s) = SseOut::start(conn, version, extra).await else {
        return false;
    };
    let stream = resume.as_ref().map_or(StreamId::get(0), |(a, _)| a.stream.clone());
    if let Some((att, prime)) = resume {
        if att.fresh && prime && !s.prime(conn, &stream).await {
            return false;
        }
        for (n, m) in &att.backlog {
            if !s.numbered(conn, &stream, *n, m).await {
                return false;
            }
        }
    }
    let event: Option<&[u8]> = if first.is_some() {
        Some(b"message")
    } else {
        None
    };
    if let Some((name, data)) = first {
        if !s.event(conn, Some(name), data).await {
            return false;
        }
    }
    loop {
        match conn.wait(rx, s.next_ping).await {
            Wake::PeerGone => return false,
            Wake::Item(None) => return s.finish(conn).await,
            Wake::Item(Some(Item::Response(Some(n), b, _) | Item::Other(Some(n), b))) => {
                if !s.numbered(conn, &stream, n, &b).await {
                    return false;
                }
            }
            Wake::Item(Some(Item::Response(None, b, _) | Item::Other(None, b))) => {
                if !s.event(conn, event, &b).await {
                    return false;
                }
            }
            Wake::Tick => {
                if !s.ping(conn).await {
                    return false;
                }
            }
        }
    }
}

/// DELETE /mcp: ends the session (rows `streamable-http-client-delete-session`,
/// `streamable-http-server-may-405-delete`: mcpx answers 204).
async fn delete(sh: &Shared, conn: &mut Conn, req: &mut Request) -> bool {
    if req.has_body() {
        if let Err(keep) = conn.body(req).await {
            return keep;
        }
    }
    let Some(sid) = session_of(req) else {
        return conn.reject(400, NO_SESSION_ID).await;
    };
    if sh.touch(&sid, Kind::Streamable).is_none() || !session::end(sh, &sid, true) {
        return conn.reject(404, "Not found: unknown or ended session").await;
    }
    conn.respond(204, &[], b"", true).await
}

/// GET /sse (2024-11-05 HTTP+SSE): opens a session whose stream carries
/// everything; the `endpoint` event names where to POST (rows
/// `http-sse-server-two-endpoints`, `http-sse-server-endpoint-event`,
/// `http-sse-server-messages-as-sse-events`).
async fn legacy_sse(sh: &Shared, conn: &mut Conn, req: &mut Request, who: &Principal) -> bool {
    if req.headers_present("accept") && !req.accepts("text/event-stream") {
        return conn.reject(406, "Not acceptable: send Accept: text/event-stream").await;
    }
    let (sid, _c) = match session::open(sh, Kind::LegacySse, who) {
        Ok(x) => x,
        Err(r) => return r.answer(conn, None).await,
    };
    // Before the endpoint event: its POSTs may reach any replica.
    #[cfg(feature = "cluster")]
    super::session_dir::publish(sh, &sid).await;
    let (tx, rx) = conn.queue(sh.cfg.limits.stream_queue);
    let seq = sh.next_seq();
    let _ = session::set_get(sh, &sid, seq, tx);
    let endpoint = format!("/messages?sessionId={sid}");
    let keep = stream_out(
        conn,
        req.version,
        &rx,
        &[],
        Some((b"endpoint", endpoint.as_bytes())),
        None,
    )
    .await;
    // The stream is the session.
    session::end(sh, &sid, true);
    keep
}

/// The `sessionId` of a 2024-11-05 `/messages?sessionId=…` POST.
fn legacy_session_of(req: &Request) -> &str {
    req.query().split('&').find_map(|kv| kv.strip_prefix("sessionId=")).unwrap_or("")
}

/// POST /messages?sessionId=… (2024-11-05): 202, the answer comes on the stream.
async fn legacy_messages(sh: &Shared, conn: &mut Conn, req: &mut Request) -> bool {
    let sid = legacy_session_of(req);
    let Some(c) = sh.touch(&sid, Kind::LegacySse) else {
        if req.has_body() {
            if let Err(keep) = conn.body(req).await {
                return keep;
            }
        }
        return conn.reject(404, "Not found: unknown or ended session; reconnect to /sse").await;
    };
    let body = match json_body(conn, req).await {
        Ok(b) => b,
        Err(keep) => return keep,
    };
    let msgs: Vec<Envelope<'_>> = match Message::parse(&body) {
        Ok(Message::Single(e)) => vec![e],
        Ok(Message::Batch(b)) => b.elements().filter_map(Result::ok).collect(),
        Err(e) => {
            return conn
                .error(400, e.id_bytes(), e.error_code(), e.message(), None, true)
                .await
        }
    };
    sh.feed_views(c, &msgs);
    conn.respond(202, &[("Content-Type", "text/plain")], b"Accepted", true)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn era(session: bool, header: Option<&str>, body: &str) -> &'static str {
        let msg = Message::parse(body.as_bytes()).unwrap();
        match classify(session, header, &msg) {
            RevEra::Legacy => "legacy",
            RevEra::Modern => "modern",
        }
    }

    #[test]
    fn a_post_is_classified_once_by_session_header_and_meta() {
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
        let modern = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        // The SDK's initialize: no header, no _meta.
        assert_eq!(era(false, None, init), "legacy");
        // Raw probes: a dated legacy header without _meta.
        assert_eq!(era(false, Some("2025-11-25"), init), "legacy");
        assert_eq!(era(false, Some("2024-11-05"), init), "legacy");
        // The 2026 wire: header or per-request _meta.
        assert_eq!(era(false, Some("2026-07-28"), init), "modern");
        assert_eq!(era(false, Some("v999.0.0"), init), "modern");
        assert_eq!(era(false, None, modern), "modern");
        assert_eq!(era(false, Some("2025-11-25"), modern), "modern");
        // A session decides it.
        assert_eq!(era(true, Some("2026-07-28"), modern), "legacy");
        assert_eq!(era(false, None, &format!("[{init}]")), "legacy");
    }
}
