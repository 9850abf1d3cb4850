//! The HTTP side of the legacy session directory (`cluster::directory`):
//! a legacy session opened here is published before its first answer
//! leaves, refreshed while used, forgotten when it ends; a request naming a
//! session this replica does not know is passed to the replica that owns it
//! over the hop, and the owner's answer copied back as it comes.
//!
//! Publishing is awaited (the client's next request may land anywhere);
//! refreshes and deletions are queued to one task ([`run`]), so no request
//! waits for them. A lost refresh or deletion costs nothing lasting: the
//! entry expires with its TTL.
//!
//! Taking over (issue 25): beside the entry of a Streamable HTTP session,
//! what it keeps (`hub::Snapshot`), written (queued) when the hub says it
//! changed and with each refresh. A request for a session whose owner does
//! not accept a connection is served here when that state is there, sealed,
//! and the principal's: the entry is claimed (compare-and-set on the gone
//! owner: of two replicas, one takes it, the other passes requests on to
//! it), the session opens here under the same id (counted in the
//! principal's quota) and its client notices a dropped GET stream at most.
//! Its calls in flight on the gone replica are lost: a client coming back
//! for the stream of one gets an error for it ([`answer_lost`]), once.

use std::rc::Rc;

use mcpx_core::error::ErrorCode;

use super::auth::Principal;
use super::conn::Conn;
use super::decide::{self, Holder};
use super::dir_queue::{Job, TakenOver};
use super::request::Request;
use super::session::{self, Kind, Shared};
use super::sse_stream::{self, SseOut};
use crate::cluster::directory::Directory;
use crate::cluster::forward::RelayError;
use crate::cluster::hop_auth::Route;
use crate::cluster::store::Unavailable;
use crate::hub::{ClientId, Level, Snapshot};

/// Largest JSON answer relayed.
const MAX_JSON: usize = 16 << 20;

/// The headers of a client's request the owner needs to serve it (each
/// under the hop's MAC: `hop_auth::SIGNED_FIELDS`).
const RELAYED: [&str; 5] = ["mcp-session-id", "mcp-protocol-version", "accept", "content-type", "last-event-id"];

/// POST streams of the replica a session was taken over from whose loss
/// a session remembers telling (the next resume of one gets a 410).
const MAX_TOLD: usize = 8;

/// Publishes the new legacy session `sid` (before its first answer).
/// Without Redis the session still opens: it works where the load balancer
/// sticks, and the warning says why other replicas answer 404.
pub(crate) async fn publish(sh: &Shared, sid: &str) {
    let Some(dir) = sh.dir.get() else { return };
    match dir.publish(sid).await {
        // Ended while its entry was being written: the entry goes too.
        Ok(()) if !sh.set_published(sid, sh.now()) => {
            let _ = dir.forget(sid).await;
        }
        Ok(()) => {}
        Err(Unavailable(why)) => sh.log(
            Level::Warn,
            format!("session directory: a legacy session opened without its entry (only this replica can serve it): {why}"),
        ),
    }
}

/// Queues the refresh of every published session used since its last
/// refresh (a request, or a stream open) whose entry is half through its
/// TTL: at most one round trip per session and half-TTL.
pub(crate) fn refresh_due(sh: &Shared) {
    let Some(dir) = sh.dir.get() else { return };
    let half = dir.ttl_ms() / 2;
    for sid in sh.due_for_refresh(half) {
        sh.dir.queue(&sh.common, Job::Refresh(sid));
    }
}

/// What client `c`'s session keeps changed (`Output::SessionChanged`).
pub(crate) fn client_changed(sh: &Shared, c: ClientId) {
    let sid = sh.state.borrow().sessions.by_client.get(&c).cloned();
    if let Some(sid) = sid {
        changed(sh, &sid);
    }
}

/// What session `sid` keeps changed: a write of its state is queued, if
/// it is a published Streamable HTTP session and none is queued yet.
fn changed(sh: &Shared, sid: &str) {
    let due = {
        let mut st = sh.state.borrow_mut();
        let Some(s) = st.sessions.by_id.get_mut(sid) else { return };
        s.kind == Kind::Streamable && s.dir.published.is_some() && !std::mem::replace(&mut s.dir.state_due, true)
    };
    if due && !sh.dir.queue(&sh.common, Job::Keep(sid.to_string())) {
        sh.set_state_due(sid, false);
    }
}

/// Every session of this replica ends with it (shutdown): their entries go
/// now, each deletion bounded (the store's), all within `limit`.
pub(crate) async fn forget_all(sh: &Shared, limit: std::time::Duration) {
    let Some(dir) = sh.dir.get() else { return };
    let sids = sh.published_sessions();
    let work = async {
        for sid in &sids {
            let _ = dir.forget(sid).await;
        }
    };
    smol::future::or(work, async {
        smol::Timer::after(limit).await;
    })
    .await;
}

/// Runs the queued refreshes and deletions, one at a time, until the
/// listener ends.
pub(crate) async fn run(sh: Rc<Shared>) {
    while let Some(job) = sh.dir.next().await {
        let Some(dir) = sh.dir.get() else { continue };
        let done = match &job {
            Job::Refresh(sid) => match dir.publish(sid).await {
                Ok(()) => keep(&sh, &dir, sid).await,
                failed => failed,
            },
            Job::Keep(sid) => keep(&sh, &dir, sid).await,
            Job::Forget(sid) => dir.forget(sid).await,
        };
        if let Err(Unavailable(why)) = done {
            sh.log(Level::Debug, format!("session directory: {why}; the entry is left to its TTL"));
        }
    }
}

/// Writes what session `sid` keeps now, if it is a Streamable HTTP session
/// of this replica whose `initialize` was answered.
async fn keep(sh: &Shared, dir: &Directory, sid: &str) -> Result<(), Unavailable> {
    let Some(c) = sh.set_state_due(sid, false) else { return Ok(()) };
    let Some(snapshot) = sh.link.call(|hub, _| hub.client_snapshot(c)) else { return Ok(()) };
    let state = serde_json::to_vec(&snapshot.to_json()).unwrap_or_default();
    dir.keep(sid, &state).await.map(|_| ())
}

/// May session `sid` be another replica's? Only with a directory, and for
/// a session this replica does not hold: the one check every legacy
/// request pays (no allocation, no store).
pub(crate) fn held_elsewhere(sh: &Shared, sid: &str) -> bool {
    sh.dir.get().is_some() && !sid.is_empty() && !sh.knows_session(sid)
}

/// A request naming a legacy session this replica does not know
/// ([`held_elsewhere`]): passed
/// to the replica that owns it, if one among `cluster.peers` does and
/// answers; taken over when that replica is gone ([`take_over`]). `None`:
/// serve it here (which answers 404 when the session is not here: row
/// streamable-http-server-404-terminated-session); `Some(keep)`: answered.
/// Never for a request that came over the hop (`routes::serve_relayed`):
/// no loop.
pub(crate) async fn relay_elsewhere(sh: &Shared, conn: &mut Conn, req: &mut Request, sid: &str, who: &Principal) -> Option<bool> {
    let dir = sh.dir.get()?;
    let found = match dir.owner(sid).await {
        Ok(found) => found,
        Err(Unavailable(why)) => return Some(unavailable(conn, &why).await),
    };
    let owner = match decide::holder(found.as_deref(), dir.hop().me(), |r| dir.hop().knows(r)) {
        Holder::Peer(owner) => owner,
        Holder::Me | Holder::Nobody => return None,
    };
    let body = if req.has_body() {
        match conn.body(req).await {
            Ok(b) => b,
            Err(keep) => return Some(keep),
        }
    } else {
        Vec::new()
    };
    let why = match relay(conn, req, &dir, owner, who, &body, HOLDS).await {
        Ok(keep) => return Some(keep),
        Err(why) => why,
    };
    sh.log(Level::Info, format!("session directory: replica {owner:?} holding a session does not answer ({why})"));
    match take_over(sh, conn, req, sid, who, &dir, owner).await {
        TakeOver::Here => {}
        // Another replica took it over first: it serves it (no second
        // take-over if it is gone too).
        TakeOver::There(to) => {
            return Some(match relay(conn, req, &dir, &to, who, &body, HOLDS).await {
                Ok(keep) => keep,
                Err(why) => conn.refuse(&decide::holder_gone(&format!("replica {to:?}, which holds this session now, does not answer ({why})"))).await,
            })
        }
        TakeOver::Answered(keep) => return Some(keep),
        // Gone with its replica: the entry goes if it still names that
        // replica, and the client gets the 404 to start over.
        TakeOver::Lost => {
            let _ = dir.forget_if(sid, owner).await;
        }
        TakeOver::NotYours => {}
    }
    req.put_back(body);
    None
}

/// What a replica a session's request is passed to holds (the 502's words).
const HOLDS: &str = "holds this session";

/// Passes the request (its `body` read already) over the hop to replica
/// `to`, which `holds` what it is for, and copies its answer to the
/// client: `Ok(keep)` once answered (a 502 when `to` failed to answer);
/// `Err(why)` when `to` does not accept a connection (it is gone).
pub(crate) async fn relay(conn: &mut Conn, req: &Request, dir: &Directory, to: &str, who: &Principal, body: &[u8], holds: &str) -> Result<bool, String> {
    let target = match req.query() {
        "" => req.path().to_string(),
        q => format!("{}?{q}", req.path()),
    };
    let route = Route { method: req.method(), target: &target };
    let headers: Vec<(&str, &[u8])> = RELAYED.iter().filter_map(|n| Some((*n, req.header(n)?))).collect();
    match dir.hop().relay(to, &route, who.bytes(), &headers, body).await {
        Ok(resp) => Ok(copy_answer(conn, req, dir, to, resp, holds).await),
        Err(RelayError::Unreachable(why)) => Err(why),
        Err(e) => {
            let text = format!("Bad gateway: replica {to:?}, which {holds}, failed to answer: {e}");
            Ok(conn.error(502, None, ErrorCode::InternalError, &text, None, true).await)
        }
    }
}

/// "Not now" (503, Retry-After), as for any request that needs Redis.
async fn unavailable(conn: &mut Conn, why: &str) -> bool {
    conn.refuse(&decide::directory_unavailable(why)).await
}

/// What came of taking a session over.
enum TakeOver {
    /// It is here now: serve the request.
    Here,
    /// Another replica took it over first.
    There(String),
    /// The request is answered (Redis unavailable, the session quota).
    Answered(bool),
    /// Nothing kept to go on with: the session is gone.
    Lost,
    /// Another principal's: not taken over (the entry stays for its own).
    NotYours,
}

/// Session `sid`'s owner `owner` is gone: this replica goes on with it,
/// for a POST or GET of its own principal `who` to the MCP endpoint, when
/// the owner kept its state (a Streamable HTTP session; a 2024-11-05 one
/// ends with its stream).
async fn take_over(sh: &Shared, conn: &mut Conn, req: &Request, sid: &str, who: &Principal, dir: &Directory, owner: &str) -> TakeOver {
    if !decide::may_take_over(req.method(), req.path() == sh.cfg.path) {
        return TakeOver::Lost;
    }
    let kept = match dir.kept(sid).await {
        Ok(Some(kept)) => kept,
        Ok(None) => return TakeOver::Lost,
        Err(Unavailable(why)) => return TakeOver::Answered(unavailable(conn, &why).await),
    };
    let snapshot = match serde_json::from_slice(&kept).map_err(|e| format!("not JSON ({e})")).and_then(|v| Snapshot::from_json(&v)) {
        Ok(s) => s,
        Err(why) => {
            sh.log(Level::Warn, format!("session directory: the state a session of replica {owner:?} kept is not usable ({why}); 404"));
            return TakeOver::Lost;
        }
    };
    if snapshot.principal != who.bytes() {
        sh.log(Level::Info, format!("session directory: a request for a session of replica {owner:?} by another principal; not taken over, 404"));
        return TakeOver::NotYours;
    }
    if let Err(r) = session::admit(sh, who) {
        return TakeOver::Answered(r.answer(conn, None).await);
    }
    let claimed = dir.claim(sid, owner).await;
    if !matches!(claimed, Ok(true)) {
        session::release(sh, who);
    }
    match claimed {
        Ok(true) => {}
        Ok(false) => {
            let found = match dir.owner(sid).await {
                Ok(found) => found,
                Err(Unavailable(why)) => return TakeOver::Answered(unavailable(conn, &why).await),
            };
            return match decide::holder(found.as_deref(), dir.hop().me(), |r| dir.hop().knows(r)) {
                Holder::Peer(to) => TakeOver::There(to.to_string()),
                // Taken over here meanwhile, by a request before this one.
                Holder::Me => TakeOver::Here,
                Holder::Nobody => TakeOver::Lost,
            };
        }
        Err(Unavailable(why)) => return TakeOver::Answered(unavailable(conn, &why).await),
    }
    let opened = session::insert(sh, sid, Kind::Streamable, who, |hub, now| hub.adopt_client(&snapshot, now));
    if let Err(r) = opened {
        let _ = dir.forget(sid).await;
        return TakeOver::Answered(r.answer(conn, None).await);
    }
    sh.taken_over(sid, snapshot.rev, TakenOver { from: owner.to_string(), seq: sh.next_seq(), told: Vec::new() });
    changed(sh, sid);
    sh.log(Level::Info, format!("session directory: adopted session of replica {owner:?}, which does not answer (its calls in flight are lost)"));
    TakeOver::Here
}

/// A POST's stream on the replica a session was taken over from, which a
/// client asks to resume: its answer is lost with that replica.
pub(crate) struct Lost {
    from: String,
    /// The request it answered, when its id named it and its loss was not
    /// told yet.
    request: Option<Vec<u8>>,
}

/// Does `last_event_id` name a POST's stream of the replica session `sid`
/// was taken over from? Its events cannot be replayed here (row
/// streamable-http-server-no-cross-stream-replay); a standalone stream's id
/// is not one: the client gets a new standalone stream, as for any id of
/// a stream this replica does not have.
pub(crate) fn lost_stream(sh: &Shared, sid: &str, last_event_id: &str) -> Option<Lost> {
    let request = sse_stream::post_request(last_event_id)?;
    let (stream, _) = sse_stream::parse_id(last_event_id)?;
    let last_seq = sh.last_seq();
    let mut st = sh.state.borrow_mut();
    let t = st.sessions.by_id.get_mut(sid)?.dir.taken.as_mut()?;
    if t.seq < stream && stream <= last_seq {
        return None; // this replica's own
    }
    let first = !t.told.contains(&stream);
    if first {
        if t.told.len() >= MAX_TOLD {
            t.told.remove(0);
        }
        t.told.push(stream);
    }
    Some(Lost { from: t.from.clone(), request: request.filter(|_| first) })
}

/// Answers the resume of a [`Lost`] stream. The first time for a named
/// request not in flight here: its stream, with an error answering it,
/// then the stream's end (Python SDK 2.x takes the answer for the request
/// it resumed; the TypeScript SDK v1 by its id). Otherwise 410: the SDKs
/// try twice more, then give up on the stream.
pub(crate) async fn answer_lost(sh: &Shared, conn: &mut Conn, req: &Request, sid: &str, lost: Lost) -> bool {
    let text = format!(
        "replica {:?}, which was answering this request, is gone: its answer is lost, and it may or may not have run; send it again if that is safe",
        lost.from
    );
    let c = sh.state.borrow().sessions.by_id.get(sid).map(|s| s.client);
    let request = lost.request.filter(|id| c.is_some_and(|c| !sh.link.call(|hub, _| hub.clients().request_open(c, id))));
    sh.log(Level::Info, format!("http: a client came back for a stream of replica {:?}, whose session this replica took over: {}", lost.from, if request.is_some() { "its request is answered with an error" } else { "410" }));
    let Some(id) = request else {
        return conn.error(410, None, ErrorCode::InternalError, &format!("Gone: this stream was on {text}"), None, true).await;
    };
    let Some(mut out) = SseOut::start(conn, req.version, &[]).await else { return false };
    let msg = crate::bytes::written::error(Some(&id), ErrorCode::InternalError, &format!("mcpx {text}"), None);
    out.event(conn, None, &msg).await && out.finish(conn).await
}

/// A request another replica passed on here for session `sid`, which this
/// replica does not have (it restarted with the same id and lost it): the
/// entry naming this replica goes, and the request gets its 404. (Another
/// principal's session is not this case: it is there, and stays listed.)
pub(crate) async fn forget_unknown(sh: &Shared, sid: &str) {
    let Some(dir) = sh.dir.get() else { return };
    if !sh.knows_session(sid) {
        let _ = dir.forget(sid).await;
    }
}

/// Copies the owner's answer to the client: a JSON (or empty) body whole,
/// an SSE stream as its bytes come, with status, content type and
/// `Retry-After`.
async fn copy_answer(conn: &mut Conn, req: &Request, dir: &Directory, owner: &str, mut resp: crate::remote::http::Response, holds: &str) -> bool {
    if resp.content_type == "text/event-stream" {
        let Some(mut out) = SseOut::start(conn, req.version, &[]).await else { return false };
        loop {
            match resp.body.next_chunk().await {
                Ok(Some(bytes)) => {
                    if !out.raw(conn, bytes).await {
                        return false;
                    }
                }
                Ok(None) => break,
                // The owner's stream broke: so does the client's, without
                // its last chunk, so that the client sees it cut.
                Err(_) => return false,
            }
        }
        dir.hop().recycle(owner, resp.body);
        return out.finish(conn).await;
    }
    let body = match resp.body.read_all(MAX_JSON).await {
        Ok(b) => b,
        Err(e) => {
            let text = format!("Bad gateway: replica {owner:?}, which {holds}, broke off its answer: {e}");
            return conn.error(502, None, ErrorCode::InternalError, &text, None, true).await;
        }
    };
    dir.hop().recycle(owner, resp.body);
    let retry = resp.retry_after.as_deref().and_then(|v| std::str::from_utf8(v).ok());
    let mut hs: Vec<(&str, &str)> = Vec::with_capacity(2);
    if !resp.content_type.is_empty() {
        hs.push(("Content-Type", &resp.content_type));
    }
    if let Some(r) = retry {
        hs.push(("Retry-After", r));
    }
    conn.respond(resp.status, &hs, &body, true).await
}

impl Shared {
    /// Is `sid` one of this replica's sessions?
    fn knows_session(&self, sid: &str) -> bool {
        self.state.borrow().sessions.by_id.contains_key(sid)
    }

    /// Notes that `sid`'s entry was written `at`; false when the session
    /// is gone.
    fn set_published(&self, sid: &str, at: u64) -> bool {
        let mut st = self.state.borrow_mut();
        let Some(s) = st.sessions.by_id.get_mut(sid) else { return false };
        s.dir.published = Some(at);
        true
    }

    /// Notes whether a write of `sid`'s state is queued; its client, when it
    /// is a Streamable HTTP session.
    fn set_state_due(&self, sid: &str, due: bool) -> Option<ClientId> {
        let mut st = self.state.borrow_mut();
        let s = st.sessions.by_id.get_mut(sid).filter(|s| s.kind == Kind::Streamable)?;
        s.dir.state_due = due;
        Some(s.client)
    }

    /// Session `sid`, just opened, goes on from `t.from`'s: it speaks `rev`,
    /// and its entry names this replica now.
    fn taken_over(&self, sid: &str, rev: mcpx_core::revision::Revision, t: TakenOver) {
        let now = self.now();
        let mut st = self.state.borrow_mut();
        if let Some(s) = st.sessions.by_id.get_mut(sid) {
            s.rev = Some(rev);
            s.dir.published = Some(now);
            s.dir.taken = Some(t);
        }
    }

    /// The published sessions used since their entry was written at least
    /// `half_ttl` ms ago, marked as refreshed now.
    fn due_for_refresh(&self, half_ttl: u64) -> Vec<String> {
        let now = self.now();
        let mut st = self.state.borrow_mut();
        let mut due = Vec::new();
        for (sid, s) in st.sessions.by_id.iter_mut() {
            let Some(at) = s.dir.published else { continue };
            if now.saturating_sub(at) >= half_ttl && (s.last_seen > at || !s.idle()) {
                s.dir.published = Some(now);
                due.push(sid.clone());
            }
        }
        due
    }

    fn published_sessions(&self) -> Vec<String> {
        let st = self.state.borrow();
        st.sessions.by_id.iter().filter(|(_, s)| s.dir.published.is_some()).map(|(k, _)| k.clone()).collect()
    }
}
