//! `POST /.mcpx/hop`: a request another replica forwarded to this one,
//! which owns what it continues (issue #16). Checked by the hop's MAC
//! (`cluster::hop_auth`: shared key, sending replica, time, nonce,
//! principal, method, target, relayed header fields, body) and served once
//! (a nonce seen within the window is refused), not by client credentials; then
//! served as the principal the sender authenticated: a continuation as a
//! modern (2026-07-28) POST to the MCP endpoint, a client's request in a
//! legacy session of this replica as that request itself (method, target,
//! headers, body; `routes::serve_relayed`). Its answer, JSON or SSE, is the
//! sender's to pass on.

use std::cell::RefCell;

use mcpx_core::envelope::Message;

use super::auth::Principal;
use super::conn::Conn;
use super::decide;
use super::request::Request;
use super::routes;
use super::session::Shared;
use crate::cluster::hop_auth::{self, Field, HopKey, Received, Replays};

/// The hop's settings and state on the receiving side.
#[derive(Clone, Debug)]
pub struct HopConfig {
    pub key: HopKey,
    /// The replicas a hop may come from (`cluster.peers`).
    pub peers: Vec<String>,
    /// The nonces of the hops served within the window.
    replays: RefCell<Replays>,
}

impl HopConfig {
    pub fn new(key: HopKey, peers: Vec<String>) -> HopConfig {
        HopConfig { key, peers, replays: RefCell::default() }
    }
}

pub(super) async fn handle(sh: &Shared, conn: &mut Conn, req: &mut Request) -> bool {
    let Some(hop) = &sh.cfg.hop else {
        return conn.refuse(&decide::not_a_replica()).await;
    };
    if let Some(allow) = decide::post_only(req.method()) {
        return conn.method_not_allowed(allow).await;
    }
    let body = match conn.body(req).await {
        Ok(b) => b,
        Err(keep) => return keep,
    };
    let got = Received {
        from: req.header(hop_auth::FROM),
        time: req.header(hop_auth::TIME),
        nonce: req.header(hop_auth::NONCE),
        principal: req.header(hop_auth::PRINCIPAL),
        mac: req.header(hop_auth::MAC),
        method: req.header(hop_auth::METHOD),
        target: req.header(hop_auth::TARGET),
    };
    let fields: Vec<Field<'_>> = req.fields().collect();
    let now = hop_auth::unix_ms();
    let checked = hop.key.verify(&got, &fields, &body, now, &hop.peers).and_then(|a| hop.replays.borrow_mut().admit(&a, now).map(|()| a));
    let asserted = match checked {
        Ok(a) => a,
        Err(r) => return conn.reject(r.status, &r.reason).await,
    };
    let who = Principal::asserted(asserted.principal);
    if asserted.target != hop_auth::PATH {
        req.carry(&asserted.method, &asserted.target, body);
        return routes::serve_relayed(sh, conn, req, &who).await;
    }
    let msg = match Message::parse(&body) {
        Ok(m) => m,
        Err(e) => return conn.error(400, e.id_bytes(), e.error_code(), e.message(), None, true).await,
    };
    let posted = routes::post_modern(sh, conn, req, &msg, &who).await;
    drop(body); // with the hub now
    posted.finish(sh, conn).await
}
