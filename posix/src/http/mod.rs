//! Streamable HTTP serving: a small, hardened HTTP/1.1 server for `/mcp`
//! (no web framework), plus the 2024-11-05 HTTP+SSE endpoints.
//!
//! ```text
//!  TCP ─► listener ─► conn (heads, bodies, limits) ─► front door (Host/Origin, token)
//!        ─► routes (method)
//!        ─► POST: classify once (legacy session | modern stateless)
//!           ─► session (one hub ClientId per session) ─► Hub::client_message
//!  Hub output ToClient(c, msg, about) ─► Http::deliver ─► session routing
//!        ─► the POST stream waiting for that id | the GET stream | dropped
//! ```
//!
//! # Wiring (what the runtime does)
//! ```text
//! let rt2 = rt.clone();
//! let link = http::HubLink {
//!     feed: Rc::new(move |f| rt2.feed(|hub, now| f(hub, now))),
//!     log: Rc::new(|level, msg| /* mcpx's log */),
//! };
//! let (http, server) = http::bind(cfg, link)?;   // binds now, refuses unsafe configs
//! executor.spawn(server).detach();               // accept loop, connections, session expiry
//! // in the runtime's output routing, before its own clients:
//! let Some(out) = http.take(out) else { return };   // ToClient/CloseClient of HTTP sessions
//! ```
//! - `feed` is the runtime's "call the hub with the current time, then route
//!   all its outputs and re-arm the tick timer" (`Runtime::feed` of `serve`).
//!   The HTTP side goes through it for every hub call, never holding a
//!   borrow of its own state meanwhile, exactly as the stdio side does.
//! - `deliver` and `close_client` never call back into the hub; a message the
//!   hub must hear about in return (a server→client request that no stream
//!   can carry) is queued and fed to the hub from the server's own task.
//! - The hub never sees HTTP headers: the client's `Authorization` (or any
//!   other header) is never forwarded upstream (row `authz-no-token-passthrough`).
//!
//! # Sessions and routing decisions
//! - One session = one hub `ClientId`, minted at `initialize` with a 128-bit
//!   id from a ChaCha20 CSPRNG seeded by the OS (32 lowercase hex digits).
//!   Ended (DELETE, idle expiry, hub `CloseClient`) or unknown ids get 404;
//!   ending a session calls `Input::ClientDisconnected`.
//! - A POST disconnect is not cancellation (legacy revisions, row
//!   `streamable-http-disconnect-not-cancel`): the hub's call runs to
//!   completion. On a 2025-03-26..2025-11-25 session a POST answered by SSE
//!   is resumable like the GET stream (`sse_stream`): its events have ids
//!   (after a priming event for 2025-11-25), and once the client has had its
//!   stream the exchange waits (at most 8 per session) for a GET with
//!   `Last-Event-ID` naming it, which gets what came after and the rest of
//!   the stream. Otherwise the exchange is forgotten and the response dropped.
//! - Responses go to the POST whose request carried that id. Progress
//!   notifications go to the POST whose request chose that `progressToken`.
//!   Server→client requests (sampling, elicitation, roots, ping) go to the
//!   most recent open POST of the session that accepts SSE — the hub relays
//!   them to the client whose call to that upstream is the latest, and does
//!   not say which call caused them — else to the GET stream, else the hub is
//!   answered at once with a JSON-RPC error on the client's behalf (so the
//!   upstream is not left waiting for the relay timeout). Log messages and
//!   other notifications prefer the most recent open POST, then the GET
//!   stream; `list_changed` and `resources/updated` prefer the GET stream,
//!   then the most recent POST; with neither they are dropped.
//! - A POST answer is JSON unless something must stream before the response
//!   (a notification or request routed to it), or the call outlasts the SSE
//!   keep-alive interval: then it becomes an SSE stream that ends after the
//!   response. A POST whose `Accept` lacks `text/event-stream` always gets
//!   JSON; what would have streamed on it goes elsewhere or is dropped.
//! - 2024-11-05 HTTP+SSE: `GET /sse` opens a session whose one stream carries
//!   every message (`event: message`) after an `endpoint` event naming
//!   `/messages?sessionId=…`; POSTs there answer 202. Closing the stream ends
//!   the session.
//!
//! # Eras
//! A POST is classified once in [`decide`] (`classify`): legacy (session or
//! `initialize`) vs modern stateless (2026-07-28), per the rule in the
//! conformance notes: no `Mcp-Session-Id`, and a `MCP-Protocol-Version`
//! header or a `params._meta` protocol version, except a header naming a
//! dated legacy revision without `_meta`. A modern POST is one request of a
//! hub client that lives as long as the POST (session kind `Modern`, its id
//! never shown: no `Mcp-Session-Id`); its headers must mirror its body
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`: -32020 otherwise, once
//! `_meta` itself is valid); a JSON error answer gets its status from the code
//! (-32602/-32020/-32021/-32022: 400, -32601: 404); closing the POST cancels
//! the request; a `subscriptions/listen` POST is the subscription's stream.
//! Each request is authenticated to a principal (`auth`), which its session
//! or modern request carries into the hub (`requestState`, held requests)
//! and which owns the session it opens.
//!
//! # What a request costs the listener
//! A connection copies each head once into a buffer it reuses (`request::Request`:
//! spans, names lowercased in place), reads a Content-Length body into one
//! buffer of its size, feeds the hub views into it (`few::Few` keeps the one
//! message, id and answer of a plain POST inline), waits on its own queue
//! (`mailbox`, reused by its next request) and writes head and body in one
//! vectored write. One timer per connection (`conn::Alarm`) serves every
//! deadline and keep-alive, set again only when a deadline comes earlier.
//!
//! # Layers
//! A module uses only modules of the layers below its own:
//! 1. leaves: `limits`, `few`, `origin`, `refusals`, `request` (a request
//!    head as read), `mailbox` (a stream's queue and its `Item`), then
//!    `decide` (the listener's rules: a request and what was looked up
//!    about it in, a decision out; no I/O);
//! 2. `conn`: one connection's reads and writes, and what the connections
//!    of the listener share (`conn::Common`: limits, clock, log, refusals);
//! 3. `auth` (who sent a request) and `sse_stream` (SSE framing, the
//!    replay of resumable streams); `dir_queue` (a session's part in the
//!    session directory, the queue of its store writes);
//! 4. `session`: the sessions, their exchanges and streams, the routing of
//!    hub output, and the listener's state (`Shared`, `State`);
//! 5. `session_dir`: sessions in the shared directory, requests passed to
//!    the replica that holds their session, sessions taken over;
//! 6. `status_page`, `signin` (the status pages' sign-in), then `routes`:
//!    the endpoints;
//! 7. `cluster_hop`: requests another replica passed on, served by `routes`;
//! 8. `listener`: the accept loop, each connection's requests in turn, and
//!    the checks every request passes before `routes`.
//!
//! This module holds the configuration and the runtime's handle (`Http`);
//! `session::Shared` reaches the endpoints as a parameter, not through the
//! connection.
#[cfg(feature = "consent")]
mod approvals_page;
mod auth;
pub(crate) mod cluster_hop;
mod conn;
#[cfg(feature = "secrets")]
mod connect;
mod decide;
#[cfg(feature = "cluster")]
mod dir_queue;
mod few;
mod html;
#[cfg(any(feature = "consent", feature = "signin", feature = "cli"))]
mod form;
mod limits;
mod listener;
mod mailbox;
#[cfg(feature = "cli")]
mod operator;
pub(crate) mod origin;
mod refusals;
mod request;
mod routes;
mod session;
#[cfg(feature = "cluster")]
mod session_dir;
#[cfg(feature = "signin")]
mod signin;
mod sse_stream;
mod status_page;

#[cfg(test)]
mod tests;

use std::future::Future;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::rc::Rc;

use crate::process::reactor::Source;

use crate::hub::{About, ClientId, Hub, Level, Output};

pub use auth::{AuthSettings, OAuthSettings};
#[cfg(feature = "signin")]
pub use auth::SignInSettings;
pub use limits::Limits;

/// Everything `mcpx serve --http` needs to know.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// Where to listen. Loopback by default.
    pub addr: SocketAddr,
    /// The MCP endpoint path.
    pub path: String,
    /// Bearer token required on every request but `/health`; `None` = none.
    pub token: Option<String>,
    /// Named tokens and the OAuth resource server (see `auth`).
    pub auth: AuthSettings,
    /// Allow a non-loopback address without a token.
    pub insecure_no_auth: bool,
    /// The principals (globs) that may restart, disable and enable a server
    /// (`operator`).
    #[cfg(feature = "cli")]
    pub operators: Vec<String>,
    /// The config file the hub was started from, which the status page's
    /// Disable and Enable buttons edit (`operator::disable`); `None`: the
    /// built-in default, no file.
    #[cfg(feature = "cli")]
    pub config_file: Option<std::path::PathBuf>,
    /// Allowed `Origin` values besides the loopback defaults: exact
    /// (`https://app.example.com`) or any port (`https://app.example.com:*`).
    pub allowed_origins: Vec<String>,
    /// Allowed `Host` names (without port) besides the loopback names and the
    /// bound address. With a wildcard bind (0.0.0.0, ::) and this empty, the
    /// Host check is off: the token protects the server instead.
    pub allowed_hosts: Vec<String>,
    /// Serve the 2024-11-05 HTTP+SSE endpoints `/sse` and `/messages`.
    pub legacy_sse: bool,
    pub limits: Limits,
    /// The internal hop between replicas (`cluster_hop`); `None`: not in a
    /// cluster, the hop's path is not served.
    pub hop: Option<cluster_hop::HopConfig>,
    /// `http.statusPrincipals` and `http.signinTtlMs` at start: who has the
    /// status role (they may sign in and see whose each isolated instance
    /// is), and how long a sign-in lasts. A reload changes the listener's
    /// ([`Http::set_signin`]), not this.
    #[cfg(feature = "signin")]
    pub signin: SignInSettings,
    /// The key replicas share (`state.keyFile`), which sign-in cookies are
    /// sealed under so that one works on every replica; `None`: a key of
    /// this process.
    #[cfg(feature = "signin")]
    pub shared_key: Option<[u8; 32]>,
}

impl HttpConfig {
    /// Defaults for `addr`: path `/mcp`, no token, loopback origins only.
    pub fn new(addr: SocketAddr) -> HttpConfig {
        HttpConfig {
            addr,
            path: "/mcp".to_string(),
            token: None,
            auth: AuthSettings::default(),
            insecure_no_auth: false,
            #[cfg(feature = "cli")]
            operators: vec!["bearer".to_string()],
            #[cfg(feature = "cli")]
            config_file: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            legacy_sse: true,
            limits: Limits::default(),
            hop: None,
            #[cfg(feature = "signin")]
            signin: SignInSettings::default(),
            #[cfg(feature = "signin")]
            shared_key: None,
        }
    }

    /// Refuses configurations that would expose the hub: a non-loopback
    /// address without a token (unless `insecure_no_auth`), an empty token.
    pub fn check(&self) -> Result<(), String> {
        if self.token.as_deref() == Some("") {
            return Err(
                "the HTTP bearer token is empty: set a non-empty token or remove it".into(),
            );
        }
        self.auth.check(self.token.as_deref())?;
        if !self.addr.ip().is_loopback() && !self.auth.required(self.token.as_deref()) && !self.insecure_no_auth {
            return Err(format!(
                "refusing to serve HTTP on {} (not loopback) without a bearer token: \
                 set --token or \"auth\": {{\"bearer\": ...}}, or pass --insecure-no-auth",
                self.addr
            ));
        }
        if !self.path.starts_with('/') || self.path.len() < 2 {
            return Err(format!(
                "the HTTP path '{}' must start with '/' and name an endpoint",
                self.path
            ));
        }
        Ok(())
    }
}

/// A call into the hub: gets the hub and the runtime's `now_ms`.
pub type HubCall<'a> = &'a mut dyn FnMut(&mut Hub, u64);

/// How the HTTP server reaches the hub the runtime owns.
#[derive(Clone)]
pub struct HubLink {
    /// Runs the call on the hub with the runtime's clock, then drains the
    /// hub's outputs (routing `ToClient`/`CloseClient` of HTTP clients to
    /// [`Http::deliver`]/[`Http::close_client`]) and re-arms the hub's timer.
    pub feed: Rc<dyn Fn(HubCall<'_>)>,
    /// mcpx's own log.
    pub log: Rc<dyn Fn(Level, String)>,
}

impl HubLink {
    /// Calls `f` on the hub through `feed` and returns its result.
    pub fn call<T>(&self, f: impl FnOnce(&mut Hub, u64) -> T) -> T {
        let mut f = Some(f);
        let mut out = None;
        (self.feed)(&mut |hub, now| {
            if let Some(f) = f.take() {
                out = Some(f(hub, now));
            }
        });
        out.expect("feed runs the call")
    }
}

/// Handle on a running HTTP server (cheap to clone).
#[derive(Clone)]
pub struct Http {
    pub(crate) shared: Rc<session::Shared>,
}

impl Http {
    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.local_addr
    }

    /// Is `c` one of this server's sessions?
    pub fn owns(&self, c: ClientId) -> bool {
        self.shared
            .state
            .borrow()
            .sessions
            .by_client
            .contains_key(&c)
    }

    /// `Output::ToClient(c, msg, about)` for an HTTP client.
    pub fn deliver(&self, c: ClientId, msg: Vec<u8>, about: About) {
        session::deliver(&self.shared, c, msg, about);
    }

    /// `Output::CloseClient(c)`: ends the session (the hub already forgot it).
    pub fn close_client(&self, c: ClientId) {
        session::end_by_client(&self.shared, c, false);
    }

    /// Connections in the middle of a request other than a standalone
    /// stream (GET `/mcp`, `/sse`, which never ends by itself): a shutdown
    /// lets them write their answers before it ends the server.
    pub fn answering(&self) -> usize {
        let st = self.shared.state.borrow();
        let streams = st.sessions.by_id.values().filter(|s| s.get.as_ref().is_some_and(|(_, tx)| !tx.is_closed())).count();
        st.busy.saturating_sub(streams)
    }

    /// A config reload's `http.statusPrincipals` and `http.signinTtlMs`,
    /// taken from the next request on: the status role is checked on every
    /// request, so a cookie of a principal that lost it opens nothing more.
    #[cfg(feature = "signin")]
    pub fn set_signin(&self, s: SignInSettings) {
        self.shared.auth.set_signin(s);
    }

    /// Publishes this listener's legacy sessions in the session directory
    /// and passes requests for sessions of other replicas to them, or
    /// takes over those of a replica that is gone (`session_dir`).
    #[cfg(feature = "cluster")]
    pub fn use_directory(&self, dir: crate::cluster::directory::Directory) {
        self.shared.dir.set(dir);
    }

    /// The authorizations principals complete in their browsers
    /// (`"perPrincipal"` servers): served at `/connect/ID` and `/oauth/callback`.
    #[cfg(feature = "secrets")]
    pub fn use_flows(&self, flows: std::rc::Rc<crate::remote::oauth::delegated::Flows>) {
        let _ = self.shared.flows.set(flows);
    }

    /// Where each OAuth principal's latest verified access token goes: the
    /// subject token of the exchanges of `"tokenExchange"` servers.
    #[cfg(all(feature = "secrets", feature = "oauth"))]
    pub fn use_exchanges(&self, exchanges: std::rc::Rc<crate::remote::oauth::exchange::Exchanges>) {
        self.shared.auth.keep_subjects(exchanges);
    }

    /// Shutdown: the directory entries of the sessions still open go, all
    /// within `limit`.
    #[cfg(feature = "cluster")]
    pub async fn forget_sessions(&self, limit: std::time::Duration) {
        session_dir::forget_all(&self.shared, limit).await;
    }

    /// Routes an output meant for an HTTP client (`ToClient`, `CloseClient`
    /// of one of its sessions) and returns `None`; gives anything else back.
    pub fn take(&self, out: Output) -> Option<Output> {
        match out {
            Output::ToClient(c, msg, about) if self.owns(c) => self.deliver(c, msg, about),
            Output::ClientInitialized(c, rev) if self.owns(c) => session::set_rev(&self.shared, c, rev),
            #[cfg(feature = "cluster")]
            Output::SessionChanged(c) if self.owns(c) => session_dir::client_changed(&self.shared, c),
            #[cfg(not(feature = "cluster"))]
            Output::SessionChanged(c) if self.owns(c) => {}
            Output::CloseClient(c) if self.owns(c) => self.close_client(c),
            other => return Some(other),
        }
        None
    }
}

/// Binds `cfg.addr` and returns the handle and the server future (accept
/// loop, connections, session expiry), to be spawned on the runtime's
/// single-threaded executor. Fails on an unsafe configuration or a bind error.
pub fn bind(cfg: HttpConfig, link: HubLink) -> io::Result<(Http, impl Future<Output = ()>)> {
    cfg.check()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let listener = Source::new(TcpListener::bind(cfg.addr)?)?;
    let local_addr = listener.get_ref().local_addr()?;
    let shared = Rc::new(session::Shared::new(cfg, link, local_addr));
    // Calls that need approval may wait for the `/approvals` page now.
    #[cfg(feature = "consent")]
    shared.link.call(|hub, now| hub.handle(crate::hub::Input::ApprovalPage(true), now));
    let http = Http {
        shared: shared.clone(),
    };
    Ok((http, listener::serve(shared, listener)))
}
