//! The endpoints of an authenticated request (the `listener` checked it):
//! `/mcp` (POST, GET, DELETE), `/status`, `/metrics`, and the 2024-11-05
//! `/sse` + `/messages`. Each reads what it needs, asks `decide` what to
//! do (the rules live there), and acts: sessions, the hub, the answer.

use std::time::{Duration, Instant};

use mcpx_core::envelope::{Envelope, Message};
use mcpx_core::frame::http::Version;

use super::auth::Principal;
use crate::hub::{IdKey, Level};
use super::conn::{Conn, Wake};
use super::decide::{self, Came, End, Endpoint, Facts, Known, Post, Refusal, Route, Sorted, Step, Target};
use super::request::Request;
use super::session::{self, Kind, Shared, TraceIn};
use super::few::Few;
use super::mailbox::{Item, Receiver};
use super::sse_stream::{Attach, SseOut, StreamId};

/// A client's request in a legacy session of this replica that another
/// replica passed on over the hop (`cluster_hop`), as principal `who`:
/// served as if the client had come here, never passed on again.
pub(super) async fn serve_relayed(sh: &Shared, conn: &mut Conn, req: &mut Request, who: &Principal) -> bool {
    #[cfg(feature = "cluster")]
    if let Some(sid) = named_session(req, &sh.cfg) {
        super::session_dir::forget_unknown(sh, sid).await;
    }
    match decide::relayed(Target::of(req.path(), &sh.cfg)) {
        // A one-time approval link to a call this replica holds.
        #[cfg(feature = "consent")]
        Ok(Target::Approval(n)) => super::approvals_page::one(sh, conn, req, n, true).await,
        Ok(target) => serve(sh, conn, req, target, who).await,
        Err(r) => conn.refuse(&r).await,
    }
}

/// An authenticated request to `target`: to its endpoint (`decide::route`).
pub(super) async fn serve(sh: &Shared, conn: &mut Conn, req: &mut Request, target: Target, who: &Principal) -> bool {
    let named = decide::session_of(req).or_else(|| (target == Target::Messages).then(|| decide::legacy_session_of(req)));
    let foreign = named.is_some_and(|sid| !session::usable_by(sh, sid, who));
    match decide::route(target, req.method(), foreign) {
        Route::Refuse(r) => conn.refuse(&r).await,
        Route::NotAllowed(allow) => conn.method_not_allowed(allow).await,
        Route::Serve(Endpoint::Status) => super::status_page::get(sh, conn, req, who).await,
        #[cfg(any(feature = "consent", feature = "cli", feature = "secrets"))]
        Route::Serve(Endpoint::StatusForm) => super::status_page::post(sh, conn, req, who).await,
        #[cfg(feature = "consent")]
        Route::Serve(Endpoint::Approvals) => super::approvals_page::list(sh, conn, req, who).await,
        #[cfg(feature = "cli")]
        Route::Serve(Endpoint::Restart) => super::operator::restart(sh, conn, req, who).await,
        Route::Serve(Endpoint::Metrics) => metrics(sh, conn).await,
        Route::Serve(Endpoint::Sse) => legacy_sse(sh, conn, req, who).await,
        Route::Serve(Endpoint::Messages) => legacy_messages(sh, conn, req).await,
        Route::Serve(Endpoint::Post) => post(sh, conn, req, who).await,
        Route::Serve(Endpoint::Get) => get(sh, conn, req).await,
        Route::Serve(Endpoint::Delete) => delete(sh, conn, req).await,
    }
}

/// What the listener's decisions look up: its sessions, the hub's tools.
impl Facts for Shared {
    fn session(&self, sid: &str) -> Known {
        let st = self.state.borrow();
        st.sessions.by_id.get(sid).filter(|s| s.kind == Kind::Streamable).map_or(Known::Unknown, |s| Known::Live(s.rev))
    }

    fn tool_schema(&self, name: &str) -> Option<serde_json::Value> {
        self.link.call(|hub, _| hub.catalog().tool_input_schema(name))
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
        None => conn.refuse(&decide::metrics_off()).await,
    }
}

/// Reads a JSON body; answers 415/413 itself (`Err` then carries keep-alive).
async fn json_body(conn: &mut Conn, req: &mut Request) -> Result<Vec<u8>, bool> {
    if let Some(r) = decide::json_body(req) {
        return Err(conn.refuse(&r).await);
    }
    conn.body(req).await
}

/// POST /mcp: read, decide (`decide::post`), act.
async fn post(sh: &Shared, conn: &mut Conn, req: &mut Request, who: &Principal) -> bool {
    let body = match json_body(conn, req).await {
        Ok(b) => b,
        Err(keep) => return keep,
    };
    let posted = match Message::parse(&body) {
        Ok(msg) => act(sh, conn, req, decide::post(req, &msg, sh), &msg, who, false).await,
        Err(e) => Posted::Done(conn.refuse(&Refusal::unparsed(&e)).await),
    };
    // The hub has the messages: the body is not kept while their answers
    // are awaited (64 clients posting 64 KiB would hold 4 MiB).
    conn.recycle_body(body);
    posted.finish(sh, conn).await
}

/// A 2026-07-28 POST, classified already (here, or by the replica that
/// passed it on): served by the hub as one request of a client that lives
/// as long as the POST (no session, no `Mcp-Session-Id`). A
/// `subscriptions/listen` POST stays open as its stream.
pub(super) async fn post_modern(sh: &Shared, conn: &mut Conn, req: &Request, msg: &Message<'_>, who: &Principal) -> Posted {
    act(sh, conn, req, decide::modern(req, msg, sh), msg, who, true).await
}

/// Does what was decided for a POST whose messages are `msg`.
/// `hop`: it came from another replica over the internal hop.
async fn act<'b>(sh: &Shared, conn: &mut Conn, req: &Request, decided: Post<'_, 'b>, msg: &Message<'b>, who: &Principal, hop: bool) -> Posted {
    let batch = matches!(msg, Message::Batch(_));
    let (sse_ok, http10) = (decide::sse_ok(req), req.version == Version::Http10);
    let reply = Reply { batch, sse_ok, http10, set_session: false, modern: false };
    match decided {
        Post::Refuse(r) => Posted::Done(conn.refuse(&r).await),
        Post::Accepted => Posted::Done(conn.respond(202, &[], b"", true).await),
        Post::Modern(env) => open(sh, conn, env, Kind::Modern, who, Reply { modern: true, ..reply }, TraceIn::of(sh, req, hop)).await,
        Post::Open(env) => open(sh, conn, env, Kind::Streamable, who, Reply { set_session: true, ..reply }, TraceIn::of(sh, req, hop)).await,
        Post::InSession { sid } => in_session(sh, conn, sid, msg, reply, TraceIn::of(sh, req, hop)).await,
    }
}

/// Opens a session of `kind` for the one request `env` and passes it on.
async fn open(sh: &Shared, conn: &mut Conn, env: Envelope<'_>, kind: Kind, who: &Principal, reply: Reply, trace: TraceIn) -> Posted {
    let id = env.id_bytes().unwrap_or(b"null");
    let (sid, c) = match session::open(sh, kind, who) {
        Ok(x) => x,
        Err(r) => return Posted::Done(r.answer(conn, Some(id)).await),
    };
    // Before the answer: the client's next request may reach any replica.
    #[cfg(feature = "cluster")]
    if kind == Kind::Streamable {
        super::session_dir::publish(sh, &sid).await;
    }
    let x = Exchange { sid: &sid, c, pending: Few::one(IdKey::new(id)), msgs: Few::one(env), prefilled: Few::Empty, reply, trace };
    exchange(sh, conn, x).await
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

/// The messages of a live session: requests go to the hub once each (a
/// duplicate id is refused here), the rest are fed.
async fn in_session(sh: &Shared, conn: &mut Conn, sid: &str, msg: &Message<'_>, reply: Reply, trace: TraceIn) -> Posted {
    let Some(c) = sh.touch(sid, Kind::Streamable) else {
        let first_id = match msg {
            Message::Single(e) => e.id_bytes(),
            Message::Batch(_) => None,
        };
        return Posted::Done(conn.refuse(&decide::unknown_session(first_id)).await);
    };
    let (single, elements) = match msg {
        Message::Single(e) => (Some(Ok(*e)), None),
        Message::Batch(b) => (None, Some(b.elements())),
    };
    let batch = reply.batch;
    let mut x = Exchange {
        sid,
        c,
        pending: Few::Empty,
        msgs: Few::Empty,
        prefilled: Few::Empty,
        reply,
        trace,
    };
    for el in single.into_iter().chain(elements.into_iter().flatten()) {
        let (pending, c) = (&x.pending, x.c);
        let in_flight = |id: &[u8]| {
            let open = sh.link.call(|hub, _| hub.clients().request_open(c, id));
            pending.iter().any(|p| p.bytes() == id) || open
        };
        match decide::sort(el, batch, in_flight) {
            Sorted::Request(env) => {
                x.pending.push(IdKey::new(env.id_bytes().unwrap_or(b"null")));
                x.msgs.push(env);
            }
            Sorted::Feed(env) => x.msgs.push(env),
            Sorted::Answer(error) => x.prefilled.push(error),
            Sorted::Drop => {}
        }
    }
    if x.pending.is_empty() {
        sh.feed_traced(x.c, x.msgs.as_slice(), &x.trace, Some(x.sid));
        if x.prefilled.is_empty() {
            return Posted::Done(conn.respond(decide::without_requests(false, batch), &[], b"", true).await);
        }
        let status = decide::without_requests(true, batch);
        let body = join(x.prefilled, batch);
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
    /// The request's trace context headers (`"traces"`).
    trace: TraceIn,
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
    let (resumable, prime) = decide::post_stream(session::session_rev(sh, x.sid), x.reply.modern, x.reply.sse_ok);
    let Some(id) = session::add_exchange(sh, x.sid, x.pending, x.reply.sse_ok, resumable, tx) else {
        if x.reply.modern {
            session::end(sh, x.sid, true);
        }
        return Posted::Done(conn.refuse(&decide::ended_meanwhile()).await);
    };
    // A 2026-07-28 request's session is the listener's own, no MCP session.
    sh.feed_traced(x.c, x.msgs.as_slice(), &x.trace, (!x.reply.modern).then_some(x.sid));
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

    /// Moves the answer's bytes as `decide::Answering` says.
    async fn wait(self, sh: &Shared, conn: &mut Conn) -> bool {
        let Waiting { sid, stream, rx, expected, prefilled, reply: Reply { batch, sse_ok, http10, set_session, modern } } = self;
        let sid = sid.as_str();
        let seq = stream.id.seq;
        let session_hdr = [("Mcp-Session-Id", sid)];
        let extra: &[(&str, &str)] = if set_session { &session_hdr } else { &[] };
        let version = if http10 { Version::Http10 } else { Version::Http11 };
        let mut out = Answer { stream, version, extra, held: Few::Empty, sse: None };
        for r in prefilled {
            out.held.push((None, r));
        }
        let mut decided = decide::Answering::new(expected, sse_ok, modern, batch);
        let mut ping_at = Instant::now() + Duration::from_millis(sh.cfg.limits.sse_keepalive_ms.max(10));
        let end = loop {
            if let Some(end) = decided.done() {
                break end;
            }
            let (came, msg) = match conn.wait(&rx, ping_at).await {
                Wake::PeerGone => (Came::PeerGone, None),
                Wake::Item(None) => (Came::Closed, None),
                Wake::Item(Some(Item::Response(n, b, o))) => (Came::Response(o), Some((n, b))),
                Wake::Item(Some(Item::Other(n, b))) => (Came::Other, Some((n, b))),
                Wake::Tick => (Came::Tick(Instant::now()), None),
            };
            let sent = match decided.on(came) {
                Step::Hold => {
                    if let Some(m) = msg {
                        out.held.push(m);
                    }
                    true
                }
                Step::Stream { start } => out.send(conn, start, msg).await,
                Step::Ping { start } => out.send(conn, start, None).await,
                Step::Sleep(until) => {
                    ping_at = until;
                    true
                }
                Step::Leave => false,
                Step::End(end) => break end,
            };
            if !sent {
                // Requirement rows streamable-http-disconnect-not-cancel: the call goes on, its
                // result is dropped, or kept for a client that resumes the stream
                session::leave_exchange(sh, sid, seq, seq, out.sse.is_some());
                return false;
            }
            if let Some(s) = &out.sse {
                ping_at = s.next_ping;
            }
        };
        session::leave_exchange(sh, sid, seq, seq, false);
        conn.spare_queue = Some(rx);
        match (end, out.sse.take()) {
            (_, Some(s)) => s.finish(conn).await,
            (End::Json { status, retry_after_s }, None) => out.json(conn, status, retry_after_s, batch, !http10).await,
            (_, None) => {
                let live = sh.touch(sid, Kind::Streamable).is_some();
                conn.refuse(&decide::unanswered(live, sh.cfg.limits.stream_queue)).await
            }
        }
    }
}

/// The bytes of a POST's answer: the messages held for a JSON answer, or
/// its SSE stream once begun.
struct Answer<'a> {
    stream: Stream,
    version: Version,
    extra: &'a [(&'a str, &'a str)],
    held: Few<(Option<u64>, Vec<u8>)>,
    sse: Option<SseOut>,
}

impl Answer<'_> {
    /// Writes the JSON answer: the held messages, one or the batch of them.
    async fn json(self, conn: &mut Conn, status: u16, retry_after_s: Option<u64>, batch: bool, keep: bool) -> bool {
        let mut bodies = Few::Empty;
        for (_, r) in self.held {
            bodies.push(r);
        }
        let body = join(bodies, batch);
        let retry = retry_after_s.map(|s| s.to_string());
        let mut hs = [("Content-Type", "application/json"), ("", ""), ("", "")];
        let mut k = 1;
        for h in self.extra {
            hs[k] = *h;
            k += 1;
        }
        if let Some(secs) = &retry {
            hs[k] = ("Retry-After", secs);
            k += 1;
        }
        conn.respond(status, &hs[..k], &body, keep).await
    }

    /// Sends `msg` on the stream, or a keep-alive when there is none,
    /// beginning the stream first when `start`; false when the peer is gone.
    async fn send(&mut self, conn: &mut Conn, start: bool, msg: Option<(Option<u64>, Vec<u8>)>) -> bool {
        if start {
            let Some(s) = start_sse(conn, self.version, self.extra, &self.stream, &mut self.held).await else {
                return false;
            };
            self.sse = Some(s);
        }
        let Some(s) = self.sse.as_mut() else { return false };
        match msg {
            Some((n, bytes)) => s.message(conn, &self.stream.id, n, &bytes).await,
            None => s.ping(conn).await,
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

/// The legacy session a request to the MCP endpoint (`Mcp-Session-Id`) or
/// to `/messages` (`sessionId`) names.
#[cfg(feature = "cluster")]
pub(super) fn named_session<'r>(req: &'r Request, cfg: &super::HttpConfig) -> Option<&'r str> {
    match Target::of(req.path(), cfg)? {
        Target::Mcp => decide::session_of(req),
        Target::Messages => Some(decide::legacy_session_of(req)),
        _ => None,
    }
}

/// GET /mcp: the session's standalone stream (rows `streamable-http-get-sse-or-405`,
/// `streamable-http-get-no-responses`: only notifications and requests reach it).
async fn get(sh: &Shared, conn: &mut Conn, req: &Request) -> bool {
    let (sid, last, prime) = match decide::get(req, sh) {
        Ok(open) => (open.sid, open.last_event_id, open.prime),
        Err(r) => return conn.refuse(&r).await,
    };
    sh.touch(sid, Kind::Streamable);
    let (tx, rx) = conn.queue(sh.cfg.limits.stream_queue);
    let seq = sh.next_seq();
    // Requirement rows streamable-http-client-resume-with-last-event-id: a POST's stream is
    // resumed by GET too; it carries the rest of that stream and ends after its last answer.
    let resumed = last.and_then(|l| session::resume_exchange(sh, sid, l, seq, tx.clone()));
    if let Some(att) = resumed {
        drop(tx);
        let stream = att.stream.seq;
        lost_events(sh, &att);
        let keep = stream_out(conn, req.version, &rx, &[], None, Some((att, false))).await;
        session::leave_exchange(sh, sid, stream, seq, true);
        return keep;
    }
    // A POST's stream on the replica this session was taken over from: its
    // answer is gone with it.
    #[cfg(feature = "cluster")]
    if let Some(lost) = last.and_then(|l| super::session_dir::lost_stream(sh, sid, l)) {
        return super::session_dir::answer_lost(sh, conn, req, sid, lost).await;
    }
    let Some(att) = session::set_get_resumable(sh, sid, seq, tx, last) else {
        return conn.refuse(&decide::second_stream()).await;
    };
    lost_events(sh, &att);
    let keep = stream_out(conn, req.version, &rx, &[], None, Some((att, prime))).await;
    session::clear_get(sh, sid, seq);
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
    let sid = match decide::delete(req, sh) {
        Ok(sid) => sid,
        Err(r) => return conn.refuse(&r).await,
    };
    sh.touch(sid, Kind::Streamable);
    if !session::end(sh, sid, true) {
        return conn.refuse(&decide::ended()).await;
    }
    conn.respond(204, &[], b"", true).await
}

/// GET /sse (2024-11-05 HTTP+SSE): opens a session whose stream carries
/// everything; the `endpoint` event names where to POST (rows
/// `http-sse-server-two-endpoints`, `http-sse-server-endpoint-event`,
/// `http-sse-server-messages-as-sse-events`).
async fn legacy_sse(sh: &Shared, conn: &mut Conn, req: &mut Request, who: &Principal) -> bool {
    if let Some(r) = decide::legacy_sse(req) {
        return conn.refuse(&r).await;
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

/// POST /messages?sessionId=… (2024-11-05): 202, the answer comes on the stream.
async fn legacy_messages(sh: &Shared, conn: &mut Conn, req: &mut Request) -> bool {
    let sid = decide::legacy_session_of(req);
    let Some(c) = sh.touch(sid, Kind::LegacySse) else {
        if req.has_body() {
            if let Err(keep) = conn.body(req).await {
                return keep;
            }
        }
        return conn.refuse(&decide::unknown_legacy_session()).await;
    };
    let trace = TraceIn::of(sh, req, false);
    let body = match json_body(conn, req).await {
        Ok(b) => b,
        Err(keep) => return keep,
    };
    let msgs: Vec<Envelope<'_>> = match Message::parse(&body) {
        Ok(Message::Single(e)) => vec![e],
        Ok(Message::Batch(b)) => b.elements().filter_map(Result::ok).collect(),
        Err(e) => return conn.refuse(&Refusal::unparsed(&e)).await,
    };
    sh.feed_traced(c, &msgs, &trace, None);
    conn.respond(202, &[("Content-Type", "text/plain")], b"Accepted", true)
        .await
}
