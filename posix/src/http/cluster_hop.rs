//! `POST /.mcpx/hop`: a request another replica forwarded to this one,
//! which owns what it continues (issue #16). Checked by the hop's MAC
//! (`cluster::hop_auth`: shared key, sending replica, time, principal,
//! method, target, session id, body), not by client credentials; then
//! served as the principal the sender authenticated: a continuation as a
//! modern (2026-07-28) POST to the MCP endpoint, a client's request in a
//! legacy session of this replica as that request itself (method, target,
//! headers, body; `routes::serve_relayed`). Its answer, JSON or SSE, is the
//! sender's to pass on.

use mcpx_core::envelope::Message;

use super::auth::Principal;
use super::conn::{Conn, Request};
use super::routes;
use crate::cluster::hop_auth::{self, HopKey, Received};

/// The hop's settings on the receiving side.
#[derive(Clone, Debug)]
pub struct HopConfig {
    pub key: HopKey,
    /// The replicas a hop may come from (`cluster.peers`).
    pub peers: Vec<String>,
}

pub(super) async fn handle(conn: &mut Conn, req: &mut Request) -> bool {
    let Some(hop) = conn.shared.cfg.hop.clone() else {
        return conn.reject(404, "Not found: this mcpx is not a cluster replica (no \"cluster\" and shared state key)").await;
    };
    if req.method() != "POST" {
        return routes::method_not_allowed(conn, "POST").await;
    }
    let body = match routes::body(conn, req).await {
        Ok(b) => b,
        Err(keep) => return keep,
    };
    let got = Received {
        from: req.header(hop_auth::FROM),
        time: req.header(hop_auth::TIME),
        principal: req.header(hop_auth::PRINCIPAL),
        mac: req.header(hop_auth::MAC),
        method: req.header(hop_auth::METHOD),
        target: req.header(hop_auth::TARGET),
        session: req.header("mcp-session-id"),
    };
    let asserted = match hop.key.verify(&got, &body, hop_auth::unix_ms(), &hop.peers) {
        Ok(a) => a,
        Err(r) => return conn.reject(r.status, &r.reason).await,
    };
    let who = Principal::asserted(asserted.principal);
    if asserted.target != hop_auth::PATH {
        req.carry(&asserted.method, &asserted.target, body);
        return routes::serve_relayed(conn, req, &who).await;
    }
    let msg = match Message::parse(&body) {
        Ok(m) => m,
        Err(e) => return conn.error(400, e.id_bytes(), e.error_code(), e.message(), None, true).await,
    };
    let posted = routes::post_modern(conn, req, &msg, &who).await;
    drop(body); // with the hub now
    posted.finish(conn).await
}
