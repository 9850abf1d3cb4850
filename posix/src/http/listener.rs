//! The listener: the accept loop, each connection's requests one after
//! the other, and the front door every request passes before `routes`.
//!
//! Checks run in this order on every request: `Host` and `Origin` (403),
//! Protected Resource Metadata (served without credentials), the hop
//! between replicas (its own MAC), path (404), authentication (401/403,
//! not for `/health`; `auth`; a browser's GET of a status page may be sent
//! to `/signin` instead, `signin`), a session another replica holds
//! (`session_dir`); then `routes`: a session of another principal (404),
//! method (405).

use std::net::TcpListener;
use std::rc::Rc;
use std::time::Duration;

use async_io::Timer;
use mcpx_core::error::ErrorCode;
use smol::future;

#[cfg(feature = "consent")]
use super::approvals_page;
use super::cluster_hop;
use super::conn::Conn;
use super::decide::{self, Target};
use super::request::Request;
use super::routes;
use super::session::{self, Shared};
#[cfg(feature = "signin")]
use super::signin;
use super::auth::{unix_now, Principal, Reject};
#[cfg(feature = "cluster")]
use super::session_dir;
use crate::hub::Level;
use crate::process::exec::Executor;
use crate::process::reactor::Source;

/// Decrements the connection count when a connection task ends.
struct ConnGuard(Rc<Shared>);

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.0.state.borrow_mut().conns -= 1;
    }
}

/// Counts a connection as busy while it handles a request (a shutdown
/// waits for none to be).
struct BusyGuard(Rc<Shared>);

impl BusyGuard {
    fn enter(shared: &Rc<Shared>) -> BusyGuard {
        shared.state.borrow_mut().busy += 1;
        BusyGuard(shared.clone())
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.state.borrow_mut().busy -= 1;
    }
}

/// The accept loop, the connections and the service task (session expiry,
/// refusals fed back to the hub), on one local executor.
pub(crate) async fn serve(shared: Rc<Shared>, listener: Source<TcpListener>) {
    let ex = Rc::new(Executor::new());
    ex.spawn(service(shared.clone())).detach();
    #[cfg(feature = "cluster")]
    ex.spawn(session_dir::run(shared.clone())).detach();
    // The accept loop is a task of its own: the executor's `run` future is
    // polled whenever any connection's task wakes, and an accept there
    // would cost a failed `accept` per wake-up. It holds its executor
    // weakly: dropping this future drops the executor and its tasks.
    let weak = Rc::downgrade(&ex);
    let accepting = async move {
        loop {
            let stream = match listener.read_with(|l| l.accept()).await.and_then(|(s, _)| Source::new(s)) {
                Ok(s) => s,
                Err(e) => {
                    shared.log(Level::Warn, format!("http: accept failed: {e}"));
                    Timer::after(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = stream.get_ref().set_nodelay(true);
            let over = {
                let mut st = shared.state.borrow_mut();
                st.conns += 1;
                st.conns > shared.cfg.limits.max_connections
            };
            let Some(ex2) = weak.upgrade() else { return };
            let guard = ConnGuard(shared.clone());
            let conn = Conn::new(stream, shared.common.clone());
            if over {
                let shared = shared.clone();
                ex2.spawn(async move {
                    let _guard = guard;
                    let mut conn = conn;
                    let max = shared.cfg.limits.max_connections;
                    let now = shared.now();
                    let decided = {
                        let mut st = shared.state.borrow_mut();
                        let decided = decide::overloaded(max, st.last_cap_warn, now);
                        if decided.warn {
                            st.last_cap_warn = Some(now);
                        }
                        decided
                    };
                    let level = if decided.warn { Level::Warn } else { Level::Debug };
                    let r = &decided.refusal;
                    shared.log(level, format!("http: {}", r.message));
                    let _ = conn.error(r.status, None, r.code, &r.message, None, false).await;
                    if decide::linger_when_over(shared.state.borrow().conns, max) {
                        conn.linger_close().await;
                    }
                })
                .detach();
            } else {
                let shared = shared.clone();
                ex2.spawn(async move {
                    let _guard = guard;
                    connection(&shared, conn).await;
                })
                .detach();
            }
        }
    };
    ex.spawn(accepting).detach();
    ex.run(future::pending::<()>()).await
}

/// Expires idle sessions and feeds refused relays back to the hub.
async fn service(shared: Rc<Shared>) {
    let period = Duration::from_millis((shared.cfg.limits.session_idle_ms / 2).clamp(10, 1000));
    loop {
        let _ = future::or(
            async { shared.wake_rx.recv().await.map(|_| ()).unwrap_or(()) },
            async {
                Timer::after(period).await;
            },
        )
        .await;
        loop {
            let next = shared.state.borrow_mut().hub_inbox.pop_front();
            let Some((c, msg)) = next else { break };
            shared.feed(c, &[&msg]);
        }
        session::expire(&shared);
        #[cfg(feature = "cluster")]
        session_dir::refresh_due(&shared);
    }
}

async fn connection(sh: &Rc<Shared>, mut conn: Conn) {
    let mut first = true;
    loop {
        let req = match conn.read_head(first).await {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err((status, msg)) => {
                let _ = conn.error(status, None, ErrorCode::InvalidRequest, &msg, None, false).await;
                conn.linger_close().await;
                return;
            }
        };
        first = false;
        conn.persist = req.keep_alive;
        conn.body_pending = req.has_body();
        let busy = BusyGuard::enter(sh);
        let mut req = req;
        let keep = handle(sh, &mut conn, &mut req).await;
        conn.spare_head = Some(req);
        drop(busy);
        if !keep {
            conn.linger_close().await;
            return;
        }
    }
}

/// Answers one request; true when the connection may carry another.
async fn handle(sh: &Shared, conn: &mut Conn, req: &mut Request) -> bool {
    let keep = dispatch(sh, conn, req).await;
    decide::keep_connection(keep, req.keep_alive, req.body_read, req.has_body())
}

async fn dispatch(sh: &Shared, conn: &mut Conn, req: &mut Request) -> bool {
    if let Some(r) = decide::front_door(req, &sh.guard) {
        return conn.refuse(&r).await;
    }
    if let Some(keep) = sh.auth.metadata(conn, req).await {
        return keep;
    }
    // Authenticated by its own MAC, not by the client credentials.
    if req.path() == crate::cluster::hop_auth::PATH {
        return cluster_hop::handle(sh, conn, req).await;
    }
    let target = match decide::target(req.path(), &sh.cfg) {
        Ok(t) => t,
        Err(r) => return conn.refuse(&r).await,
    };
    if target == Target::Health {
        return match decide::health(req.method()) {
            Ok(body) => conn.respond(200, &[("Content-Type", "text/plain")], body, true).await,
            Err(allow) => conn.method_not_allowed(allow).await,
        };
    }
    if target == Target::Ready {
        let not_ready = sh.link.call(|hub, _| hub.required_not_ready());
        return match decide::ready(req.method(), not_ready) {
            Ok((status, body)) => conn.respond(status, &[("Content-Type", "application/json")], body.as_bytes(), true).await,
            Err(allow) => conn.method_not_allowed(allow).await,
        };
    }
    // A one-time approval link is its own credential.
    #[cfg(feature = "consent")]
    if let Target::Approval(n) = target {
        return approvals_page::one(sh, conn, req, n, false).await;
    }
    #[cfg(feature = "signin")]
    if matches!(target, Target::SignIn | Target::SignOut) {
        return signin::serve(sh, conn, req, target).await;
    }
    // A person's own authorization: the sign-in cookie, the flow's state.
    #[cfg(feature = "secrets")]
    if matches!(target, Target::Connect | Target::OAuthCallback) {
        return super::connect::serve(sh, conn, req, target).await;
    }
    let who = match signed_in(sh, req, target) {
        Some(r) => r,
        None => sh.auth.authenticate(req.all("authorization"), conn.peer, unix_now()).await,
    };
    let who = match who {
        Ok(p) => p,
        #[cfg(feature = "signin")]
        Err(r) if signin::rules::to_signin(&r, req.method(), target, req.headers_present("authorization"), prefers_html(req)) => {
            return signin::redirect(conn, target).await;
        }
        Err(r) => return sh.auth.refuse(conn, &r).await,
    };
    // A session another replica holds: served there (issue 16).
    #[cfg(feature = "cluster")]
    if let Some(sid) = routes::named_session(req, &sh.cfg).filter(|sid| session_dir::held_elsewhere(sh, sid)).map(str::to_string) {
        if let Some(keep) = session_dir::relay_elsewhere(sh, conn, req, &sid, &who).await {
            return keep;
        }
    }
    routes::serve(sh, conn, req, target, &who).await
}

/// Who sent a request to `target` by its sign-in cookie, where that is
/// what counts (`signin::rules::credential`); `None`: by `Authorization`.
fn signed_in(sh: &Shared, req: &Request, target: Target) -> Option<Result<Principal, Reject>> {
    #[cfg(feature = "signin")]
    if signin::rules::credential(req.method(), target, req.headers_present("authorization")) == signin::rules::Credential::Cookie {
        return Some(sh.auth.signed_in(req.all("cookie"), unix_now(), true));
    }
    let _ = (sh, req, target);
    None
}

/// Does the request prefer an HTML page (a browser's navigation)?
#[cfg(feature = "signin")]
fn prefers_html(req: &Request) -> bool {
    super::status_page::negotiate(req.header_str("accept"), req.query()) == Ok(super::status_page::Format::Html)
}
