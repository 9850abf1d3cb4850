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

use std::cell::OnceCell;
use std::rc::Rc;

use mcpx_core::error::ErrorCode;
use smol::channel::{self, Receiver, Sender};

use super::auth::Principal;
use super::conn::{Conn, Request};
use super::routes;
use super::session::Shared;
use super::sse_stream::SseOut;
use crate::cluster::directory::Directory;
use crate::cluster::forward::RelayError;
use crate::cluster::hop_auth::Route;
use crate::cluster::store::Unavailable;
use crate::hub::Level;

/// Refreshes and deletions waiting at most; past it they are dropped (the
/// entries then expire with their TTL).
const QUEUE: usize = 4096;

/// `Retry-After` of a request refused because the directory could not be
/// asked: Redis reconnects within seconds.
const UNAVAILABLE_RETRY_AFTER_S: u64 = 2;

/// Largest JSON answer relayed.
const MAX_JSON: usize = 16 << 20;

/// The headers of a client's request the owner needs to serve it (each
/// under the hop's MAC: `hop_auth::SIGNED_FIELDS`).
const RELAYED: [&str; 5] = ["mcp-session-id", "mcp-protocol-version", "accept", "content-type", "last-event-id"];

/// A store operation of a session that does not delay a request.
enum Job {
    Refresh(String),
    Forget(String),
}

/// The directory of the listener, once set ([`super::Http::use_directory`]).
pub(crate) struct SessionDir {
    dir: OnceCell<Rc<Directory>>,
    tx: Sender<Job>,
    rx: Receiver<Job>,
}

impl SessionDir {
    pub fn new() -> SessionDir {
        let (tx, rx) = channel::bounded(QUEUE);
        SessionDir { dir: OnceCell::new(), tx, rx }
    }

    pub fn set(&self, dir: Directory) {
        let _ = self.dir.set(Rc::new(dir));
    }

    fn get(&self) -> Option<Rc<Directory>> {
        self.dir.get().cloned()
    }

    fn queue(&self, sh: &Shared, job: Job) {
        if self.tx.try_send(job).is_err() {
            sh.log(Level::Debug, "session directory: the queue is full; an entry is left to its TTL".into());
        }
    }
}

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
        sh.dir.queue(sh, Job::Refresh(sid));
    }
}

/// Session `sid` ended: its entry goes.
pub(crate) fn forget(sh: &Shared, sid: &str) {
    sh.dir.queue(sh, Job::Forget(sid.to_string()));
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
    while let Ok(job) = sh.dir.rx.recv().await {
        let Some(dir) = sh.dir.get() else { continue };
        let done = match &job {
            Job::Refresh(sid) => dir.publish(sid).await,
            Job::Forget(sid) => dir.forget(sid).await,
        };
        if let Err(Unavailable(why)) = done {
            sh.log(Level::Debug, format!("session directory: {why}; the entry is left to its TTL"));
        }
    }
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
/// answers. `None`: serve it here (which answers 404: row
/// streamable-http-server-404-terminated-session); `Some(keep)`: answered.
/// Never for a request that came over the hop (`routes::serve_relayed`):
/// no loop.
pub(crate) async fn relay_elsewhere(conn: &mut Conn, req: &mut Request, sid: &str, who: &Principal) -> Option<bool> {
    let sh = conn.shared.clone();
    let dir = sh.dir.get()?;
    let owner = match dir.owner(sid).await {
        Ok(owner) => owner?,
        // The session may well be alive on its replica: a 404 would make
        // the client drop it and start over for nothing, so the answer is
        // "not now" (503, Retry-After), as for any request that needs Redis.
        Err(Unavailable(why)) => {
            let retry = UNAVAILABLE_RETRY_AFTER_S.to_string();
            let text = format!("Service unavailable: cannot find which replica holds this session ({why}); retry shortly");
            return Some(conn.error_with(503, &[("Retry-After", &retry)], None, ErrorCode::InternalError, &text, None, true).await);
        }
    };
    if owner == dir.hop().me() || !dir.hop().knows(&owner) {
        return None;
    }
    let body = if req.has_body() {
        match routes::body(conn, req).await {
            Ok(b) => b,
            Err(keep) => return Some(keep),
        }
    } else {
        Vec::new()
    };
    let target = match req.query() {
        "" => req.path().to_string(),
        q => format!("{}?{q}", req.path()),
    };
    let route = Route { method: req.method(), target: &target };
    let headers: Vec<(&str, &[u8])> = RELAYED.iter().filter_map(|n| Some((*n, req.header(n)?))).collect();
    match dir.hop().relay(&owner, &route, who.bytes(), &headers, &body).await {
        Ok(resp) => Some(copy_answer(conn, req, &dir, &owner, resp).await),
        Err(RelayError::Unreachable(why)) => {
            // Gone: the session with it. The entry goes if it still names
            // that replica, and the client gets the 404 to start over.
            sh.log(Level::Info, format!("session directory: replica {owner:?} holding a session does not answer ({why}); 404"));
            let _ = dir.forget_if(sid, &owner).await;
            req.put_back(body);
            None
        }
        Err(e) => {
            let text = format!("Bad gateway: replica {owner:?}, which holds this session, failed to answer: {e}");
            Some(conn.error(502, None, ErrorCode::InternalError, &text, None, true).await)
        }
    }
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
async fn copy_answer(conn: &mut Conn, req: &Request, dir: &Directory, owner: &str, mut resp: crate::remote::http::Response) -> bool {
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
            let text = format!("Bad gateway: replica {owner:?}, which holds this session, broke off its answer: {e}");
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
        s.published = Some(at);
        true
    }

    /// The published sessions used since their entry was written at least
    /// `half_ttl` ms ago, marked as refreshed now.
    fn due_for_refresh(&self, half_ttl: u64) -> Vec<String> {
        let now = self.now();
        let mut st = self.state.borrow_mut();
        let mut due = Vec::new();
        for (sid, s) in st.sessions.by_id.iter_mut() {
            let Some(at) = s.published else { continue };
            if now.saturating_sub(at) >= half_ttl && (s.last_seen > at || !s.idle()) {
                s.published = Some(now);
                due.push(sid.clone());
            }
        }
        due
    }

    fn published_sessions(&self) -> Vec<String> {
        let st = self.state.borrow();
        st.sessions.by_id.iter().filter(|(_, s)| s.published.is_some()).map(|(k, _)| k.clone()).collect()
    }
}
