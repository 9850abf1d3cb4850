//! Sessions (one hub client each), the open exchanges (POSTs waiting for
//! responses) and streams of each, and the routing of hub output to them.
//! See the module documentation of `http` for the routing rules.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::rc::Rc;

use mcpx_core::envelope::Envelope;
use mcpx_core::error::ErrorCode;
use mcpx_core::revision::Revision;
use nanorand::{ChaCha20, Rng};
use smol::channel::{self, Receiver};

use super::auth::{Authenticator, Principal};
use super::conn::{Common, Conn};
use super::decide;
use super::few::Few;
use super::mailbox::{Item, Sender};
use super::sse_stream::{self, Attach, Replay, StreamId};
use super::origin::Guard;
use super::{HttpConfig, HubLink};
use crate::hub::{About, ClientId, IdKey, Input, Level, Outcome};
use crate::policy::ratelimit::{Quota, QuotaRefusal, Refusal};

/// Most server→client requests waiting to be refused back to the hub.
const INBOX_CAP: usize = 1024;

/// `Retry-After` of a session refused at a cap: every session counted is
/// busy (a request or a stream open), so a few seconds is a fair guess.
const SESSION_RETRY_AFTER_S: u64 = 5;

pub(crate) struct Shared {
    pub cfg: HttpConfig,
    pub link: HubLink,
    pub local_addr: SocketAddr,
    /// What its connections share (limits, clock, log, refusals).
    pub common: Rc<Common>,
    pub guard: Guard,
    pub auth: Authenticator,
    pub state: RefCell<State>,
    /// The legacy session directory in the shared store (`session_dir`).
    #[cfg(feature = "cluster")]
    pub dir: super::dir_queue::SessionDir,
    /// Wakes the service task when `State::hub_inbox` has work.
    pub wake_tx: channel::Sender<()>,
    pub wake_rx: Receiver<()>,
    /// The authorizations of `"perPrincipal"` servers (`connect`).
    #[cfg(feature = "secrets")]
    pub flows: std::cell::OnceCell<Rc<crate::remote::oauth::delegated::Flows>>,
}

pub(crate) struct State {
    pub sessions: Sessions,
    pub conns: usize,
    /// Connections in the middle of a request (read, handled, answered).
    pub busy: usize,
    rng: ChaCha20,
    next_seq: u64,
    /// Messages to feed to the hub on a client's behalf (outside `deliver`).
    pub hub_inbox: VecDeque<(ClientId, Vec<u8>)>,
    /// When the connection limit was last logged as a warning.
    pub last_cap_warn: Option<u64>,
    /// Sessions per principal under `max_sessions` (issue 11 item 3).
    pub session_quota: Quota,
}

#[derive(Default)]
pub(crate) struct Sessions {
    pub by_id: HashMap<String, Session>,
    pub by_client: HashMap<ClientId, String>,
}

impl Sessions {
    pub fn len(&self) -> usize {
        self.by_id.len()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Streamable HTTP (`Mcp-Session-Id`).
    Streamable,
    /// 2024-11-05 HTTP+SSE: the `/sse` stream is the session.
    LegacySse,
    /// One 2026-07-28 request (stateless): a hub client for the life of its
    /// POST, whose id is never shown to the client.
    Modern,
}

pub(crate) struct Session {
    pub client: ClientId,
    pub kind: Kind,
    /// Who opened it: only requests of the same principal may use it.
    pub owner: Principal,
    /// Negotiated revision, read from the `initialize` result.
    pub rev: Option<Revision>,
    pub last_seen: u64,
    pub exchanges: Vec<Exchange>,
    /// The standalone stream (GET `/mcp`, or `/sse`): its sequence number and queue.
    pub get: Option<(u64, Sender)>,
    /// The GET stream's events, kept for a client that resumes it.
    pub replay: Option<Replay>,
    /// Its part in the session directory (`session_dir`).
    #[cfg(feature = "cluster")]
    pub dir: super::dir_queue::Listed,
}

impl Session {
    /// No request and no stream open (a POST stream left for a client to
    /// resume is none): the session may expire, or end to make room for a
    /// new one.
    pub fn idle(&self) -> bool {
        self.exchanges.iter().all(|e| e.tx.is_none()) && self.get.is_none()
    }
}

/// POST streams a session keeps for clients to resume at most; past it the
/// oldest goes.
const MAX_LEFT_STREAMS: usize = 8;

/// One POST waiting for responses.
pub(crate) struct Exchange {
    /// Its number, and the id of its SSE stream when it has one.
    pub seq: u64,
    /// The connection serving it: its POST's (`seq`), or a GET's that resumed it.
    owner: u64,
    /// Request ids (raw JSON) still unanswered.
    pub pending: Few<IdKey>,
    /// The client accepts an SSE answer.
    pub sse_ok: bool,
    /// `None`: its connection is gone, and the stream waits for the client
    /// to resume it (only a resumable stream that was begun).
    tx: Option<Sender>,
    /// Its events, kept for a client that resumes the stream
    /// (2025-03-26..2025-11-25 sessions).
    replay: Option<Replay>,
}

impl Shared {
    pub fn new(cfg: HttpConfig, link: HubLink, local_addr: SocketAddr) -> Shared {
        let guard = Guard::new(&cfg.allowed_origins, &cfg.allowed_hosts, local_addr);
        let (wake_tx, wake_rx) = channel::bounded(1);
        let auth = Authenticator::new(&cfg);
        // No principal takes more than half the sessions; on a listener
        // without authentication every client is the one principal
        // `anonymous`, whose share is then the whole cap.
        let max = cfg.limits.max_sessions;
        let share = if cfg.auth.required(cfg.token.as_deref()) { max.div_ceil(2) } else { max };
        let session_quota = Quota::new("HTTP sessions", max, share);
        let mut rng = ChaCha20::new();
        // Stream numbers start anywhere below 2^52, so that the event ids
        // of two replicas do not meet in a session one takes over from the
        // other (row streamable-http-event-id-unique).
        let next_seq = rng.generate::<u64>() >> 12;
        let common = Rc::new(Common::new(cfg.limits.clone(), link.log.clone()));
        Shared {
            auth,
            cfg,
            link,
            local_addr,
            common,
            guard,
            state: RefCell::new(State {
                sessions: Sessions::default(),
                conns: 0,
                busy: 0,
                rng,
                next_seq,
                hub_inbox: VecDeque::new(),
                last_cap_warn: None,
                session_quota,
            }),
            #[cfg(feature = "cluster")]
            dir: super::dir_queue::SessionDir::new(),
            wake_tx,
            wake_rx,
            #[cfg(feature = "secrets")]
            flows: std::cell::OnceCell::new(),
        }
    }

    /// Milliseconds since the server started (`Common::now`).
    pub fn now(&self) -> u64 {
        self.common.now()
    }

    pub fn log(&self, level: Level, msg: String) {
        self.common.log(level, msg)
    }

    /// Feeds client messages to the hub, then drains its output.
    pub fn feed(&self, c: ClientId, msgs: &[&[u8]]) {
        self.link.call(|hub, now| {
            for m in msgs {
                hub.handle(Input::ClientMessage(c, m), now);
            }
        });
    }

    /// Feeds messages this transport has parsed (the hub takes the views)
    /// of one HTTP request, with its trace context headers and its session
    /// (`sid`) for the hub's spans when tracing is on.
    pub fn feed_traced(&self, c: ClientId, msgs: &[Envelope<'_>], trace: &TraceIn, sid: Option<&str>) {
        #[cfg(not(feature = "traces"))]
        let _ = (trace, sid);
        self.link.call(|hub, now| {
            #[cfg(feature = "traces")]
            if hub.trace().on() {
                hub.handle(Input::ClientTrace { client: c, traceparent: trace.parent.as_deref(), tracestate: trace.state.as_deref(), session: sid, hop: trace.hop }, now);
            }
            for m in msgs {
                hub.handle(Input::ClientEnvelope(c, m), now);
            }
        });
    }

    pub fn next_seq(&self) -> u64 {
        let mut st = self.state.borrow_mut();
        st.next_seq += 1;
        st.next_seq
    }

    /// The last number [`Shared::next_seq`] gave.
    #[cfg(feature = "cluster")]
    pub fn last_seq(&self) -> u64 {
        self.state.borrow().next_seq
    }

    /// Marks activity on a session; false if it does not exist (any more).
    pub fn touch(&self, sid: &str, kind: Kind) -> Option<ClientId> {
        let now = self.now();
        let mut st = self.state.borrow_mut();
        let s = st.sessions.by_id.get_mut(sid).filter(|s| s.kind == kind)?;
        s.last_seen = now;
        Some(s.client)
    }
}

/// The W3C trace context headers of an HTTP request (`traceparent`,
/// `tracestate`), copied only when tracing is on and the request has them;
/// `hop`: the request came from another replica over the internal hop.
#[derive(Default)]
pub(crate) struct TraceIn {
    #[cfg(feature = "traces")]
    parent: Option<Vec<u8>>,
    #[cfg(feature = "traces")]
    state: Option<Vec<u8>>,
    /// From another replica over the hop: its context is the parent.
    #[cfg(feature = "traces")]
    hop: bool,
}

impl TraceIn {
    pub(crate) fn of(sh: &Shared, req: &super::request::Request, hop: bool) -> TraceIn {
        #[cfg(feature = "traces")]
        if let Some(p) = req.header("traceparent") {
            if sh.link.call(|h, _| h.trace().on()) {
                return TraceIn { parent: Some(p.to_vec()), state: req.header("tracestate").map(<[u8]>::to_vec), hop };
            }
        }
        #[cfg(not(feature = "traces"))]
        let _ = (sh, req, hop);
        TraceIn::default()
    }
}

/// 128 bits from the CSPRNG as 32 lowercase hex digits (visible ASCII, row
/// `streamable-http-session-id-visible-ascii`; `streamable-http-session-id-secure`).
fn mint_id(rng: &mut ChaCha20) -> String {
    let mut b = [0u8; 16];
    rng.fill_bytes(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Is the session `sid` (if it exists) not someone else's? Another
/// principal's session is treated as unknown (404), so that a session id
/// alone never lets one user act as another.
pub(crate) fn usable_by(shared: &Shared, sid: &str, who: &Principal) -> bool {
    shared.state.borrow().sessions.by_id.get(sid).is_none_or(|s| s.owner == *who)
}

/// A session refused at a cap: the HTTP status (429 for the principal's
/// share, 503 for the server's cap), the message naming the limit, and the
/// JSON-RPC `data`.
pub(crate) struct SessionRefused {
    pub status: u16,
    pub message: String,
    pub data: serde_json::Value,
}

impl SessionRefused {
    pub const RETRY_AFTER_S: u64 = SESSION_RETRY_AFTER_S;
    pub const CODE: ErrorCode = Refusal::CODE;

    fn quota(q: QuotaRefusal) -> SessionRefused {
        let (status, data) = match &q {
            QuotaRefusal::Share { share, global, .. } => {
                (429, serde_json::json!({ "limit": "http.maxSessions (per principal)", "share": share, "max": global }))
            }
            QuotaRefusal::Global { global, held, .. } => {
                (503, serde_json::json!({ "limit": "http.maxSessions", "max": global, "held": held }))
            }
        };
        SessionRefused { status, message: format!("{q} (none of those sessions is idle)"), data }
    }

    fn hub() -> SessionRefused {
        let message = "mcpx refused the session: too many clients are connected to the hub (limit: sessions)".to_string();
        SessionRefused { status: 503, message, data: serde_json::json!({ "limit": "sessions" }) }
    }

    /// The refusal of the request whose session could not be opened: the
    /// status, `Retry-After` and a JSON-RPC error naming the limit.
    pub fn refusal(self, id: Option<&[u8]>) -> decide::Refusal<'_> {
        let data = Some(self.data.to_string());
        decide::Refusal { status: self.status, code: Self::CODE, id, message: self.message.into(), data, retry_after_s: Some(Self::RETRY_AFTER_S) }
    }

    /// Answers the request whose session could not be opened.
    pub async fn answer(self, conn: &mut Conn, id: Option<&[u8]>) -> bool {
        conn.refuse(&self.refusal(id)).await
    }
}

/// The key of a principal in the session quota (readable where it can be).
fn principal_key(p: &Principal) -> String {
    match std::str::from_utf8(p.bytes()) {
        Ok(s) => s.to_string(),
        Err(_) => p.bytes().iter().map(|b| format!("{b:02x}")).collect(),
    }
}

/// The least recently used idle session (no request, no stream open),
/// among `owner`'s when given: the one to end for a new session.
fn oldest_idle(sessions: &Sessions, owner: Option<&Principal>) -> Option<String> {
    sessions
        .by_id
        .iter()
        .filter(|(_, s)| s.idle() && owner.is_none_or(|o| s.owner == *o))
        .min_by_key(|(_, s)| s.last_seen)
        .map(|(k, _)| k.clone())
}

/// Takes a session unit of `owner`'s quota, ending the oldest idle session
/// (of `owner` at its share, of anyone at the global cap) rather than
/// refusing; refuses only when every session in the way is busy. The unit
/// goes back when the session ends, or with [`release`].
pub(crate) fn admit(shared: &Shared, owner: &Principal) -> Result<(), SessionRefused> {
    let key = principal_key(owner);
    // Each pass ends one session; the share and then the global cap can
    // each ask for one.
    for _ in 0..3 {
        let refused = shared.state.borrow_mut().session_quota.acquire(&key);
        let victim = match refused {
            Ok(()) => return Ok(()),
            Err(q) => {
                let own = matches!(q, QuotaRefusal::Share { .. });
                let victim = oldest_idle(&shared.state.borrow().sessions, own.then_some(owner));
                victim.ok_or_else(|| SessionRefused::quota(q))?
            }
        };
        shared.log(Level::Debug, "http: the least recently used idle session ends to make room for a new one".into());
        end(shared, &victim, true);
    }
    Err(SessionRefused::hub())
}

/// A unit [`admit`] took for a session that did not open.
pub(crate) fn release(shared: &Shared, owner: &Principal) {
    shared.state.borrow_mut().session_quota.release(&principal_key(owner));
}

/// Opens a session of principal `owner`: a new hub client bound to it.
pub(crate) fn open(shared: &Shared, kind: Kind, owner: &Principal) -> Result<(String, ClientId), SessionRefused> {
    admit(shared, owner)?;
    let sid = mint_id(&mut shared.state.borrow_mut().rng);
    let c = insert(shared, &sid, kind, owner, |hub, now| {
        let c = hub.client_connected(now);
        hub.handle(Input::ClientPrincipal(c, owner.bytes()), now);
        // The era this listener decided for the request (`decide::classify`)
        // is the hub's too: decided once.
        if kind == Kind::Modern {
            hub.handle(Input::ClientModern(c), now);
        }
        c
    })?;
    Ok((sid, c))
}

/// Puts session `sid` of `owner`, whose quota unit [`admit`] took, in the
/// table, bound to the hub client `connect` makes. Refused when the hub
/// refuses that client (`end` gives the unit back).
pub(crate) fn insert(
    shared: &Shared,
    sid: &str,
    kind: Kind,
    owner: &Principal,
    connect: impl FnOnce(&mut crate::hub::Hub, u64) -> ClientId,
) -> Result<ClientId, SessionRefused> {
    let now = shared.now();
    // The session is in the table before the hub's outputs are routed: the
    // hub may refuse the client at once (CloseClient), which ends it.
    shared.link.call(|hub, hub_now| {
        let c = connect(hub, hub_now);
        let mut st = shared.state.borrow_mut();
        st.sessions.by_client.insert(c, sid.to_string());
        st.sessions.by_id.insert(
            sid.to_string(),
            Session {
                client: c,
                kind,
                owner: owner.clone(),
                rev: None,
                last_seen: now,
                exchanges: Vec::new(),
                get: None,
                replay: None,
                #[cfg(feature = "cluster")]
                dir: Default::default(),
            },
        );
    });
    let c = shared.state.borrow().sessions.by_id.get(sid).map(|s| s.client);
    let c = c.ok_or_else(SessionRefused::hub)?;
    shared.log(Level::Debug, format!("http: session opened for client {c} ({kind:?})"));
    Ok(c)
}

/// Ends a session: its streams close; the hub is told when `tell_hub`.
pub(crate) fn end(shared: &Shared, sid: &str, tell_hub: bool) -> bool {
    let removed = {
        let mut st = shared.state.borrow_mut();
        let s = st.sessions.by_id.remove(sid);
        if let Some(s) = &s {
            st.sessions.by_client.remove(&s.client);
        }
        s
    };
    let Some(s) = removed else { return false };
    release(shared, &s.owner);
    #[cfg(feature = "cluster")]
    if s.dir.published.is_some() {
        // Its entry goes.
        shared.dir.queue(&shared.common, super::dir_queue::Job::Forget(sid.to_string()));
    }
    shared.log(
        Level::Debug,
        format!("http: session of client {} ended", s.client),
    );
    drop(s.exchanges);
    drop(s.get);
    if tell_hub {
        shared.link.call(|hub, now| hub.handle(Input::ClientDisconnected(s.client), now));
    }
    true
}

pub(crate) fn end_by_client(shared: &Shared, c: ClientId, tell_hub: bool) {
    let sid = shared.state.borrow().sessions.by_client.get(&c).cloned();
    if let Some(sid) = sid {
        end(shared, &sid, tell_hub);
    }
}

/// Ends sessions idle for longer than the limit (no request, no open stream).
pub(crate) fn expire(shared: &Shared) -> usize {
    let now = shared.now();
    let idle = shared.cfg.limits.session_idle_ms;
    let old: Vec<String> = shared
        .state
        .borrow()
        .sessions
        .by_id
        .iter()
        .filter(|(_, s)| s.idle() && now.saturating_sub(s.last_seen) >= idle)
        .map(|(k, _)| k.clone())
        .collect();
    for sid in &old {
        shared.log(
            Level::Debug,
            format!("http: a session idle for {idle} ms expires"),
        );
        end(shared, sid, true);
    }
    old.len()
}

/// Registers an open POST; returns its stream's id, whose number is also
/// its connection's token for [`leave_exchange`]. A `resumable` one numbers
/// and keeps its events for a client that resumes its stream.
pub(crate) fn add_exchange(
    shared: &Shared,
    sid: &str,
    pending: Few<IdKey>,
    sse_ok: bool,
    resumable: bool,
    tx: Sender,
) -> Option<StreamId> {
    let seq = shared.next_seq();
    let mut st = shared.state.borrow_mut();
    let s = st.sessions.by_id.get_mut(sid)?;
    let id = StreamId::post(seq, pending.iter().next().filter(|_| pending.len() == 1));
    let replay = resumable.then(|| Replay::new(id.clone(), shared.cfg.limits.stream_queue));
    s.exchanges.push(Exchange { seq, owner: seq, pending, sse_ok, tx: Some(tx), replay });
    Some(id)
}

/// Connection `owner` is done with exchange `seq` (answered, or its client
/// gone). With `streamed` (the client has had ids of its stream) a
/// resumable exchange stays for the client to resume; otherwise it is
/// forgotten. Nothing happens when another connection has taken it over.
/// The session's idle clock restarts.
// Requirement: streamable-http-server-may-resume
pub(crate) fn leave_exchange(shared: &Shared, sid: &str, seq: u64, owner: u64, streamed: bool) {
    let now = shared.now();
    let mut st = shared.state.borrow_mut();
    let Some(s) = st.sessions.by_id.get_mut(sid) else { return };
    s.last_seen = now;
    let Some(i) = s.exchanges.iter().position(|e| e.seq == seq && e.owner == owner) else { return };
    if !(streamed && s.exchanges[i].replay.is_some()) {
        s.exchanges.remove(i);
        return;
    }
    s.exchanges[i].tx = None;
    let left: Vec<usize> = (0..s.exchanges.len()).filter(|&i| s.exchanges[i].tx.is_none()).collect();
    if left.len() > MAX_LEFT_STREAMS {
        s.exchanges.remove(left[0]);
    }
}

/// A GET with `Last-Event-ID` naming one of the session's POST streams:
/// connection `owner` (whose queue `tx` is) takes the stream over, and
/// gets what came after that event first. `None` when the id names no
/// POST stream of this session.
// Requirement: streamable-http-server-no-cross-stream-replay, streamable-http-get-no-responses
pub(crate) fn resume_exchange(shared: &Shared, sid: &str, last_event_id: &str, owner: u64, tx: Sender) -> Option<Attach> {
    let (stream, n) = sse_stream::parse_id(last_event_id)?;
    let mut st = shared.state.borrow_mut();
    let s = st.sessions.by_id.get_mut(sid)?;
    let i = s.exchanges.iter().position(|e| e.seq == stream)?;
    let e = &mut s.exchanges[i];
    let att = e.replay.as_mut()?.resume(n)?;
    if e.pending.is_empty() {
        // All answered: the backlog is the rest of the stream.
        s.exchanges.remove(i);
    } else {
        e.owner = owner;
        e.tx = Some(tx);
    }
    Some(att)
}

/// Opens the session's standalone stream; `None` if one is open already.
pub(crate) fn set_get(shared: &Shared, sid: &str, seq: u64, tx: Sender) -> Option<()> {
    let mut st = shared.state.borrow_mut();
    let s = st.sessions.by_id.get_mut(sid)?;
    if s.get.as_ref().is_some_and(|(_, t)| !t.is_closed()) {
        return None;
    }
    s.get = Some((seq, tx));
    Some(())
}

/// [`set_get`] for a resumable stream (GET `/mcp`): resumes the stream
/// `last_event_id` names, or begins a new one.
pub(crate) fn set_get_resumable(shared: &Shared, sid: &str, seq: u64, tx: Sender, last_event_id: Option<&str>) -> Option<Attach> {
    set_get(shared, sid, seq, tx)?;
    let mut st = shared.state.borrow_mut();
    let s = st.sessions.by_id.get_mut(sid)?;
    Some(Replay::attach(&mut s.replay, seq, last_event_id, shared.cfg.limits.stream_queue))
}

pub(crate) fn clear_get(shared: &Shared, sid: &str, seq: u64) {
    let now = shared.now();
    let mut st = shared.state.borrow_mut();
    if let Some(s) = st.sessions.by_id.get_mut(sid) {
        if s.get.as_ref().is_some_and(|(q, _)| *q == seq) {
            s.get = None;
            s.last_seen = now;
        }
    }
}

/// The hub answered client `c`'s `initialize`: its session speaks `rev`.
pub(crate) fn set_rev(shared: &Shared, c: ClientId, rev: Revision) {
    let mut st = shared.state.borrow_mut();
    let Some(sid) = st.sessions.by_client.get(&c).cloned() else { return };
    if let Some(s) = st.sessions.by_id.get_mut(&sid) {
        s.rev = Some(rev);
    }
}

pub(crate) fn session_rev(shared: &Shared, sid: &str) -> Option<Revision> {
    shared
        .state
        .borrow()
        .sessions
        .by_id
        .get(sid)
        .and_then(|s| s.rev)
}

/// Routes one hub message for client `c`.
pub(crate) fn deliver(shared: &Shared, c: ClientId, msg: Vec<u8>, about: About) {
    let mut st = shared.state.borrow_mut();
    let State { sessions, hub_inbox, .. } = &mut *st;
    let Some(s) = sessions.by_client.get(&c).and_then(|sid| sessions.by_id.get_mut(sid)) else {
        return;
    };
    if let Some(err) = route(s, msg, about) {
        if hub_inbox.len() < INBOX_CAP {
            hub_inbox.push_back((c, err));
        }
        drop(st);
        let _ = shared.wake_tx.try_send(());
    }
}

/// Which exchange index takes a message: the most recent one accepting SSE
/// with a connection.
fn latest_sse(s: &Session) -> Option<usize> {
    s.exchanges
        .iter()
        .enumerate()
        .filter(|(_, e)| e.sse_ok && e.tx.as_ref().is_some_and(|t| !t.is_closed()))
        .max_by_key(|(_, e)| e.seq)
        .map(|(i, _)| i)
}

/// Sends to exchange `i` (a response or not), numbered when its stream is
/// resumable, and kept unless it is the `last` of a live stream (which
/// ends with it); a stream left for its client to resume only keeps it. A full or
/// closed queue closes that exchange.
fn send_exchange(s: &mut Session, i: usize, response: Option<Outcome>, last: bool, msg: Vec<u8>) -> bool {
    let e = &mut s.exchanges[i];
    let n = e.replay.as_mut().map(|r| if last { r.number() } else { r.push(msg.clone()) });
    let Some(tx) = &e.tx else { return true };
    let item = match response {
        Some(outcome) => Item::Response(n, msg, outcome),
        None => Item::Other(n, msg),
    };
    match tx.try_send(item) {
        Ok(()) => true,
        Err(_) => {
            s.exchanges.remove(i);
            false
        }
    }
}

/// Sends to the standalone stream. When it is resumable the message is kept
/// for a resuming client too: always if `keep_if_away` (a notification
/// waits there while the client reconnects), else only when sent (a request
/// refused now must not come again later).
fn send_get(s: &mut Session, msg: Vec<u8>, keep_if_away: bool) -> bool {
    let (item, kept) = match &s.replay {
        Some(r) => (Item::Other(Some(r.next()), msg.clone()), Some(msg)),
        None => (Item::Other(None, msg), None),
    };
    let ok = s
        .get
        .as_ref()
        .is_some_and(|(_, tx)| tx.try_send(item).is_ok());
    if !ok {
        s.get = None;
    }
    if let (Some(r), Some(m)) = (s.replay.as_mut(), kept.filter(|_| ok || keep_if_away)) {
        r.push(m);
    }
    ok
}

/// Routes `msg` within the session by what the hub says it is (the bytes
/// are not read). Returns an error response to feed back to the hub when a
/// server→client request cannot be delivered.
fn route(s: &mut Session, msg: Vec<u8>, about: About) -> Option<Vec<u8>> {
    if s.kind == Kind::LegacySse {
        send_get(s, msg, false);
        return None;
    }
    match about {
        About::Reply { id, outcome } => {
            let id = &msg[id?];
            let Some(i) = s
                .exchanges
                .iter()
                .position(|e| e.pending.iter().any(|p| p.bytes() == id))
            else {
                return None; // its POST is gone: disconnect is not cancellation, the result is dropped
            };
            let e = &mut s.exchanges[i];
            e.pending.retain(|p| p.bytes() != id);
            // The last answer ends a live stream; one left for its client
            // keeps it until resumed.
            let end = e.pending.is_empty() && e.tx.is_some();
            if send_exchange(s, i, Some(outcome), end, msg) && end {
                s.exchanges.remove(i);
            }
            None
        }
        About::Request { id } => {
            if let Some(i) = latest_sse(s) {
                if send_exchange(s, i, None, false, msg.clone()) {
                    return None;
                }
            }
            let id = msg[id].to_vec();
            if send_get(s, msg, false) {
                return None;
            }
            let text = "the client has no open HTTP stream on which mcpx could send it a request";
            Some(crate::bytes::written::error(Some(&id), ErrorCode::InternalError, text, None))
        }
        // The listener answers a POSTed batch itself (one exchange, `join`);
        // the hub writes batch arrays for stream transports. Should one come
        // here, the standalone stream carries it.
        About::Batch => {
            send_get(s, msg, false);
            None
        }
        About::Notification { related: Some(r), .. } => {
            // Only on its request's stream; a client that accepts only JSON
            // cannot receive it there, and the GET stream is for unrelated messages.
            let at = s
                .exchanges
                .iter()
                .position(|e| e.pending.iter().any(|p| p.bytes() == r.bytes()));
            if let Some(i) = at.filter(|i| s.exchanges[*i].sse_ok) {
                send_exchange(s, i, None, false, msg);
            }
            None
        }
        About::Notification { unsolicited, related: None } => {
            if unsolicited && s.get.is_some() && send_get(s, msg.clone(), false) {
                return None;
            }
            if let Some(i) = latest_sse(s) {
                if send_exchange(s, i, None, false, msg.clone()) {
                    return None;
                }
            }
            // A notification with no live stream waits in the standalone
            // stream's replay buffer, if it has one.
            send_get(s, msg, true);
            None
        }
    }
}
