//! Remote MCP servers: the Streamable HTTP client transport (2025-03-26 ..
//! 2026-07-28), with fallback to the 2024-11-05 HTTP+SSE transport, over
//! HTTP or HTTPS.
//!
//! To the hub a remote server looks like a stdio child: a pipe of whole
//! JSON-RPC messages. [`spawn`] returns a [`Remote`] handle (`send`,
//! `restart`, `shutdown`) and a task that reports through [`Events`]:
//! `started` when the server is reachable, `message` for each message it
//! sends, `exited` when it is unreachable or its session is lost. Like the
//! stdio supervisor, the task tries again with capped exponential backoff,
//! so one failing server never affects the others.
//!
//! What the transport adds on its own, per the Streamable HTTP client duties:
//! - every message is one POST (`Accept: application/json, text/event-stream`);
//!   a JSON reply is one message, an SSE reply is read event by event (comments,
//!   multi-line data, `retry` and event ids honoured);
//! - what a message from the hub is (request and its id, notification,
//!   answer) comes with it ([`Upward`]): the transport never reads the hub's
//!   bytes. The `initialize` request and `notifications/initialized` are
//!   kept (to re-initialize); the `Mcp-Session-Id` of the initialize
//!   response and the `protocolVersion` of its result are sent on every
//!   later request (`MCP-Protocol-Version`);
//! - a 404 to a request carrying the session means the session expired: one
//!   re-initialize (the kept messages, without the session) and one retry;
//! - after `notifications/initialized` it opens the standalone GET stream for
//!   server-initiated messages (a 405 means the server has none), and resumes
//!   it, and any POST stream that ends before its response, with
//!   `Last-Event-ID` after the server's `retry` delay;
//! - on shutdown it DELETEs the session;
//! - a server that fails the initialize POST with 400, 404 or 405 is spoken
//!   to as a 2024-11-05 HTTP+SSE server: GET the URL, POST every message to
//!   the `endpoint` it announces (same origin only), read replies from the stream;
//! - a request that fails at the HTTP level (status, timeout, broken stream)
//!   is answered to the hub with a JSON-RPC error naming the server and cause.
//!
//! 2026-07-28 requests (the hub describes them with the headers that
//! revision requires: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`,
//! `Mcp-Param-*`, built in `hub::upward`) are stateless POSTs: no
//! `Mcp-Session-Id`, those headers instead. A -32020 (header mismatch)
//! answer makes the hub list the server's tools again ([`Catalog`]); the
//! request is retried once with headers the hub builds again from the new
//! listing. A `subscriptions/listen` stream has no idle timeout.
//!
//! Era detection is the hub's: it probes with `server/discover`, a modern
//! POST. A JSON-RPC error in any HTTP error reply (-32022 with
//! `data.supported`, or -32601/-32602 from a legacy server) reaches the hub
//! as it is; a bare 400/404/405 reaches it as a JSON-RPC error naming the
//! status. Either way the hub falls back to `initialize` (and caches the
//! era), which then takes the Streamable HTTP or HTTP+SSE path above.
//!
//! Requests run concurrently (up to [`Options::max_in_flight`]); a message's
//! POST starts only after the previous message was written, and after the
//! previous notification or response was accepted, so the server sees them in
//! the hub's order (`notifications/initialized` before `tools/list`).

pub(crate) mod conn;
pub mod error;
pub(crate) mod http;
pub mod oauth;
#[cfg(feature = "tls")]
pub(crate) mod roots;
mod session_error;
#[cfg(feature = "cli")]
pub use session_error::AUTH_HINT;
pub mod url;

#[cfg(test)]
mod tests;

use mcpx_core::error::ErrorCode;
use std::cell::{Cell, RefCell};
use std::io;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_io::Timer;
use mcpx_core::clipped;
use mcpx_core::envelope::{Envelope, Kind};
use mcpx_core::method::Method;
use mcpx_core::frame::sse::{SseDecoder, SseItem};
use mcpx_core::headers;
use smol::channel::{self, Receiver, Sender, TrySendError};
use smol::future::FutureExt as _;
use smol::lock::{Mutex, Semaphore};
use smol::Task;

use crate::process::exec::Executor;
use crate::servers::backoff::{self, Ctl, End, Ended, Policy};
use crate::hub::{ModernHeaders, Oversize, Upward};
use crate::log::line::show_duration;
use conn::Connector;
use http::{Body, Client, Limits, Response};
use error::SpecError;
use session_error::{SessionError, Step};
use url::{Scheme, Url};

/// The events of the stdio supervisor, reported in the same order: `started`
/// when the server is reachable, `message`s and `garbage`, then `exited`
/// (also after a failed attempt, with no `started` before it; the last
/// argument, a stderr tail for children, is empty).
pub use crate::hub::UpstreamId;
pub use crate::servers::events::Events;

/// Which HTTP transport the server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// Streamable HTTP, falling back to HTTP+SSE when the initialize POST
    /// fails with 400, 404 or 405.
    #[default]
    Auto,
    /// Streamable HTTP only.
    StreamableHttp,
    /// The 2024-11-05 HTTP+SSE transport only.
    Sse,
}

/// One configured remote server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteSpec {
    /// The server's name, for logs and errors.
    pub name: String,
    pub url: String,
    /// Sent on every request (`Authorization`, ...), `${VAR}` already expanded.
    pub headers: Vec<(String, String)>,
    /// Extra trusted CA certificates (PEM) for https.
    pub ca_file: Option<PathBuf>,
    /// Per-request timeout (ms): the server's `timeoutMs`.
    pub timeout_ms: u64,
    pub mode: Mode,
    /// OAuth instead of a static `Authorization` header.
    pub oauth: Option<oauth::OAuthSpec>,
}

/// Header names the transport sets itself; a configured header may not.
const RESERVED: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "content-type",
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

impl RemoteSpec {
    /// Checks what can be checked before connecting: the URL, TLS support,
    /// the headers, and the CA file. The error says what to fix.
    pub fn check(&self) -> Result<(), SpecError> {
        let url = Url::parse(&self.url).map_err(|err| SpecError::Url { url: self.url.clone(), err })?;
        if url.scheme == Scheme::Https && !cfg!(feature = "tls") {
            return Err(SpecError::NoTls { url: self.url.clone() });
        }
        for (name, value) in &self.headers {
            let token = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !token {
                return Err(SpecError::HeaderName(name.clone()));
            }
            if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name)) {
                return Err(SpecError::ReservedHeader(name.clone()));
            }
            if value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
                return Err(SpecError::HeaderValue(name.clone()));
            }
        }
        if self.ca_file.is_some() && url.scheme == Scheme::Http {
            return Err(SpecError::CaFileOnHttp);
        }
        if self.oauth.is_some() && self.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("authorization")) {
            return Err(SpecError::AuthorizationAndOauth);
        }
        Ok(connector(self.ca_file.as_deref(), &url, Duration::from_secs(1)).map(|_| ())?)
    }
}

/// What it takes to reach `url` (TLS with the public roots and `ca_file`).
pub(crate) fn connector(ca_file: Option<&std::path::Path>, url: &Url, connect_timeout: Duration) -> Result<Connector, error::TlsError> {
    #[cfg(feature = "tls")]
    let tls = match url.scheme {
        Scheme::Https => Some(conn::tls_connector(ca_file)?),
        Scheme::Http => None,
    };
    #[cfg(not(feature = "tls"))]
    let _ = (url, ca_file);
    Ok(Connector {
        connect_timeout,
        #[cfg(feature = "tls")]
        tls,
        #[cfg(feature = "tls")]
        ca_file: ca_file.map(std::path::Path::to_path_buf),
    })
}

/// Timings and limits.
#[derive(Clone, Debug)]
pub struct Options {
    pub connect_timeout: Duration,
    /// Reconnecting after a lost session: backoff and the bound.
    pub restart: Policy,
    /// Added to the server's `timeoutMs` for the HTTP exchange, so that the
    /// hub's own timeout (same value) answers the client first.
    pub timeout_grace: Duration,
    /// Longest response head.
    pub max_head: usize,
    /// Longest JSON response body, and longest SSE event: by default a
    /// stdio server's line cap, so limits agree whatever the transport.
    pub max_message: usize,
    /// Requests in flight at once; more wait in the queue.
    pub max_in_flight: usize,
    /// Messages and bytes queued for sending.
    pub queue_msgs: usize,
    pub queue_bytes: usize,
    /// Idle keep-alive connections kept.
    pub max_idle: usize,
    /// Reconnection delay of SSE streams when the server gives no `retry`.
    pub sse_retry: Duration,
    /// Resumptions of one POST's stream that ends before its response.
    pub max_resumes: u32,
    /// How long the DELETE at shutdown may take.
    pub shutdown_timeout: Duration,
    /// Who completes an OAuth authorization code flow (a `"perPrincipal"`
    /// server's instance: its principal, in its browser).
    #[cfg(feature = "secrets")]
    pub interaction: oauth::Interaction,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            connect_timeout: Duration::from_secs(10),
            restart: Policy::default(),
            timeout_grace: Duration::from_secs(1),
            max_head: 64 * 1024,
            max_message: crate::limits::max_line(),
            max_in_flight: 64,
            queue_msgs: 4096,
            queue_bytes: 64 << 20,
            max_idle: 4,
            sse_retry: Duration::from_secs(1),
            max_resumes: 5,
            shutdown_timeout: Duration::from_secs(2),
            #[cfg(feature = "secrets")]
            interaction: oauth::Interaction::Serve,
        }
    }
}

/// Why [`Remote::send`] refused a message: the stdio outbox's error.
pub use crate::bytes::outbox::PushError as SendError;

struct Shared {
    out: RefCell<Option<Sender<(Vec<u8>, Upward)>>>,
    /// Bytes queued in `out`.
    queued: Cell<usize>,
    max_bytes: usize,
    ctl: Sender<Ctl>,
}

/// Handle to one remote server.
#[derive(Clone)]
pub struct Remote {
    sh: Rc<Shared>,
}

impl Remote {
    /// Queues one message for the server; `about` says what it is (the
    /// transport never reads the bytes to learn it).
    /// A refused message is handed back with the reason.
    pub fn send(&self, msg: Vec<u8>, about: Upward) -> Result<(), (SendError, Vec<u8>)> {
        let out = self.sh.out.borrow();
        let Some(tx) = &*out else { return Err((SendError::Closed, msg)) };
        let (len, queued) = (msg.len(), self.sh.queued.get());
        // One message over the byte cap still goes when nothing is queued.
        if queued > 0 && queued + len > self.sh.max_bytes {
            return Err((SendError::Full { msgs: tx.len(), bytes: queued }, msg));
        }
        match tx.try_send((msg, about)) {
            Ok(()) => {
                self.sh.queued.set(queued + len);
                Ok(())
            }
            Err(TrySendError::Full((m, _))) => Err((SendError::Full { msgs: tx.len(), bytes: queued }, m)),
            Err(TrySendError::Closed((m, _))) => Err((SendError::Closed, m)),
        }
    }

    /// The cap on bytes queued for the server.
    pub fn queue_bytes(&self) -> usize {
        self.sh.max_bytes
    }

    /// Ends the session (DELETE) and starts a new one at once.
    pub fn restart(&self, reason: &str) {
        let _ = self.sh.ctl.try_send(Ctl::Restart(reason.to_string()));
    }

    /// Ends the session for good; the task returned by [`spawn`] ends when it has.
    pub fn shutdown(&self) {
        let _ = self.sh.ctl.try_send(Ctl::Shutdown);
    }

    /// Ends at once, without ending the session on the server (second signal).
    pub fn kill_now(&self) {
        let _ = self.sh.ctl.try_send(Ctl::Kill);
    }
}

/// Starts the transport of `spec` as upstream `id`; `catalog` answers its
/// questions about the server's tools (none: no `Mcp-Param-*` headers).
pub fn spawn(
    ex: &Rc<Executor>,
    id: UpstreamId,
    spec: RemoteSpec,
    opts: Options,
    events: Rc<dyn Events>,
    catalog: Option<Rc<dyn Catalog>>,
) -> (Remote, Task<()>) {
    let (ctl_tx, ctl_rx) = channel::bounded(8);
    let sh = Rc::new(Shared {
        out: RefCell::new(None),
        queued: Cell::new(0),
        max_bytes: opts.queue_bytes,
        ctl: ctl_tx,
    });
    let auth = match (&spec.oauth, Url::parse(&spec.url)) {
        (Some(o), Ok(url)) => Some(Rc::new(oauth::Authorizer::new(
            &spec.name,
            url,
            o.clone(),
            spec.ca_file.clone(),
            opts.connect_timeout,
            #[cfg(feature = "secrets")]
            opts.interaction.clone(),
            #[cfg(not(feature = "secrets"))]
            oauth::Interaction::Serve,
        ))),
        _ => None,
    };
    let sup = Supervisor { id, spec, opts, events, catalog, auth, ex: ex.clone(), sh: sh.clone(), ctl: ctl_rx };
    let task = ex.spawn(sup.run());
    (Remote { sh }, task)
}

struct Supervisor {
    id: UpstreamId,
    spec: RemoteSpec,
    opts: Options,
    events: Rc<dyn Events>,
    catalog: Option<Rc<dyn Catalog>>,
    auth: Option<Rc<oauth::Authorizer>>,
    ex: Rc<Executor>,
    sh: Rc<Shared>,
    ctl: Receiver<Ctl>,
}

impl Supervisor {
    async fn run(self) {
        let name = &self.spec.name;
        backoff::run(name, "reconnecting", self.id, &*self.events, &self.opts.restart, &self.ctl, || async {
            match self.prepare() {
                Ok((url, connector)) => self.session(url, connector).await,
                Err(e) => {
                    debug!("server {name}: {e}");
                    Ended { end: End::Failed, reason: e.to_string(), tail: String::new() }
                }
            }
        })
        .await
    }

    fn prepare(&self) -> Result<(Url, Connector), SpecError> {
        self.spec.check()?;
        let url = Url::parse(&self.spec.url).map_err(|err| SpecError::Url { url: self.spec.url.clone(), err })?;
        let connector = connector(self.spec.ca_file.as_deref(), &url, self.opts.connect_timeout)?;
        Ok((url, connector))
    }

    /// The state of a new session at `url`: the session, the channel of
    /// the failure that ends it, and what closes it (dropped, every task of
    /// the session stops).
    fn open(&self, url: Url, client: Client) -> (Rc<Session>, Receiver<SessionError>, Sender<()>) {
        let (fatal_tx, fatal_rx) = channel::bounded::<SessionError>(1);
        let (closed_tx, closed_rx) = channel::bounded::<()>(1);
        let timeout = Duration::from_millis(self.spec.timeout_ms) + self.opts.timeout_grace;
        let sess = Rc::new(Session {
            id: self.id,
            name: self.spec.name.clone(),
            events: self.events.clone(),
            catalog: self.catalog.clone(),
            auth: self.auth.clone(),
            ex: self.ex.clone(),
            opts: self.opts.clone(),
            headers: self.spec.headers.iter().map(|(n, v)| (n.to_ascii_lowercase(), v.as_bytes().to_vec())).collect(),
            mode: Cell::new(self.spec.mode),
            url: url.clone(),
            post_url: RefCell::new(url),
            client,
            timeout,
            session_id: RefCell::new(None),
            version: RefCell::new(None),
            generation: Cell::new(0),
            init: RefCell::new(None),
            initialized: RefCell::new(None),
            peek_init: Cell::new(false),
            reinit: Mutex::new(()),
            fatal: fatal_tx,
            closed: closed_rx,
            alive: Cell::new(true),
            get_started: Cell::new(false),
            new_session: RefCell::new(Vec::new()),
            in_flight: Arc::new(Semaphore::new(self.opts.max_in_flight.max(1))),
            list_ids: RefCell::new(Vec::new()),
            list_waiters: RefCell::new(Vec::new()),
        });
        (sess, fatal_rx, closed_tx)
    }

    /// One session: from the first connection to its loss or end.
    async fn session(&self, url: Url, connector: Connector) -> Ended {
        let name = &self.spec.name;
        let client = Client::new(connector, self.opts.max_idle);
        let warm = async {
            // An instance of a "tokenExchange" server gets its token first:
            // refused, it ends before it started (a next call starts it again).
            if let Some(a) = &self.auth {
                a.refresh_if_expiring().await.map_err(SessionError::auth)?;
            }
            client.warm(&url).await.map_err(|err| SessionError::Http { step: Step::Message, err: http::Error::Connect(err) })
        };
        let ctl = async { Err(self.ctl.recv().await.unwrap_or(Ctl::Shutdown)) };
        match async { Ok(warm.await) }.or(ctl).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let end = if e.waits_for_caller() { End::Stopped } else { End::Failed };
                let reason = e.to_string();
                debug!("server {name}: {reason}");
                return Ended { end, reason, tail: String::new() };
            }
            Err(Ctl::Restart(r)) => return Ended { end: End::Restart, reason: format!("restarted: {r}"), tail: String::new() },
            Err(Ctl::Shutdown | Ctl::Kill) => return Ended { end: End::Stopped, reason: "stopped".into(), tail: String::new() },
        }
        let (sess, fatal_rx, closed_tx) = self.open(url, client);
        let (out_tx, out_rx) = channel::bounded::<(Vec<u8>, Upward)>(self.opts.queue_msgs.max(1));
        *self.sh.out.borrow_mut() = Some(out_tx.clone());
        let t0 = Instant::now();
        debug!("server {name}: connected to {}", sess.url);
        self.events.started(self.id);

        enum Next {
            Msg((Vec<u8>, Upward)),
            Fatal(Option<SessionError>),
            Ctl(Ctl),
        }
        let result = loop {
            let msg = async { out_rx.recv().await.map(Next::Msg).unwrap_or(Next::Ctl(Ctl::Shutdown)) };
            let fatal = async { Next::Fatal(fatal_rx.recv().await.ok()) };
            let ctl = async { Next::Ctl(self.ctl.recv().await.unwrap_or(Ctl::Shutdown)) };
            let step = ctl.or(fatal).or(msg).await;
            let (msg, about) = match step {
                Next::Msg((m, about)) => {
                    self.sh.queued.set(self.sh.queued.get().saturating_sub(m.len()));
                    (m, about)
                }
                Next::Fatal(reason) => break Err(reason),
                Next::Ctl(c) => break Ok(c),
            };
            // Dispatch, still listening for control and for the session's end.
            let dispatch = async { Ok::<_, Next>(sess.clone().dispatch(msg, about).await) };
            let fatal = async { Err(Next::Fatal(fatal_rx.recv().await.ok())) };
            let ctl = async { Err(Next::Ctl(self.ctl.recv().await.unwrap_or(Ctl::Shutdown))) };
            match ctl.or(fatal).or(dispatch).await {
                Ok(Ok(())) => {}
                Ok(Err(reason)) => break Err(Some(reason)),
                Err(Next::Fatal(reason)) => break Err(reason),
                Err(Next::Ctl(c)) => break Ok(c),
                Err(Next::Msg(_)) => unreachable!(),
            }
        };

        // Tear down: no more sends, no more deliveries, tasks cancelled.
        out_tx.close();
        *self.sh.out.borrow_mut() = None;
        self.sh.queued.set(0);
        sess.alive.set(false);
        drop(closed_tx);
        let up = show_duration(Duration::from_millis(t0.elapsed().as_millis() as u64));
        match result {
            Err(reason) => {
                // Waiting for its principal: no new attempt until a call asks for one.
                let end = if reason.as_ref().is_some_and(SessionError::waits_for_caller) { End::Stopped } else { End::Failed };
                // The one place a session's failure becomes text.
                let reason = reason.map(|e| e.to_string()).unwrap_or_default();
                debug!("server {name}: session lost after {up}: {reason}");
                sess.client.clear();
                Ended { end, reason, tail: String::new() }
            }
            Ok(ctl) => {
                let (outcome, why) = match &ctl {
                    Ctl::Restart(r) => (End::Restart, format!("restarted: {r}")),
                    Ctl::Shutdown | Ctl::Kill => (End::Stopped, "stopped".to_string()),
                };
                debug!("server {name}: ending the session ({why})");
                if matches!(ctl, Ctl::Kill) {
                    sess.client.clear();
                } else {
                    // A second request to stop cuts the goodbye short.
                    let end = async {
                        sess.end().await;
                    };
                    let killed = async {
                        while let Ok(c) = self.ctl.recv().await {
                            if matches!(c, Ctl::Kill) {
                                return;
                            }
                        }
                        smol::future::pending::<()>().await
                    };
                    end.or(killed).await;
                }
                Ended { end: outcome, reason: why, tail: String::new() }
            }
        }
    }
}

/// What the transport asks of the hub about its server after it answered
/// a 2026-07-28 request with -32020 (header mismatch): a fresh listing of
/// its tools, then that request's headers built again from it (the
/// `x-mcp-header` annotations may have changed). Implemented by `serve`
/// over the hub.
pub trait Catalog {
    /// The 2026-07-28 headers of request `msg` to server `id`, from the
    /// tools as listed now.
    fn headers_again(&self, id: UpstreamId, msg: &[u8]) -> Option<ModernHeaders>;
    /// Lists server `id`'s tools again (its answers come back through the
    /// transport like any other message).
    fn relist(&self, id: UpstreamId);
    /// Server `id` (a `"perPrincipal"` server's instance) cannot go on
    /// until its principal authorizes at `ask`; the session ends next.
    #[cfg(feature = "secrets")]
    fn ask_to_authorize(&self, id: UpstreamId, ask: &oauth::delegated::Ask);
}

/// Whether `body` is a JSON-RPC error answering `id` with code -32020
/// (a header the server found not mirroring the body).
fn header_mismatch(body: &[u8], id: &[u8]) -> bool {
    match Envelope::parse(body.trim_ascii()) {
        Ok(env) => env.kind() == Kind::Error && env.id_bytes() == Some(id) && env.error_code() == Some(i64::from(headers::HeaderMismatch::CODE)),
        Err(_) => false,
    }
}

/// The state of one session with the server.
struct Session {
    id: UpstreamId,
    name: String,
    events: Rc<dyn Events>,
    catalog: Option<Rc<dyn Catalog>>,
    /// The server's OAuth tokens, when it has an `"oauth"` block.
    auth: Option<Rc<oauth::Authorizer>>,
    ex: Rc<Executor>,
    opts: Options,
    /// Configured headers, names lowercased.
    headers: Vec<(String, Vec<u8>)>,
    /// `Auto` until the initialize POST has decided.
    mode: Cell<Mode>,
    /// The configured URL: the MCP endpoint, or the SSE stream of HTTP+SSE.
    url: Url,
    /// Where messages are POSTed (the `endpoint` of an HTTP+SSE server).
    post_url: RefCell<Url>,
    client: Client,
    /// Per request: the server's timeout plus grace.
    timeout: Duration,
    session_id: RefCell<Option<Vec<u8>>>,
    /// Negotiated protocol version, from the initialize result.
    version: RefCell<Option<Vec<u8>>>,
    /// Bumped by each re-initialize.
    generation: Cell<u64>,
    /// The hub's `initialize` request (message, id) and `notifications/initialized`.
    init: RefCell<Option<(Vec<u8>, Vec<u8>)>>,
    initialized: RefCell<Option<Vec<u8>>>,
    /// Looking for the initialize result among delivered messages.
    peek_init: Cell<bool>,
    reinit: Mutex<()>,
    fatal: Sender<SessionError>,
    /// Closed when the session ends: every task of it stops.
    closed: Receiver<()>,
    alive: Cell<bool>,
    get_started: Cell<bool>,
    /// Woken by the next re-initialize.
    new_session: RefCell<Vec<Sender<()>>>,
    in_flight: Arc<Semaphore>,
    /// Ids of the `tools/list` requests in flight (the last few), and who
    /// waits for a listing's last page (a retry after -32020).
    list_ids: RefCell<Vec<Vec<u8>>>,
    list_waiters: RefCell<Vec<Sender<()>>>,
}

/// How a POST ended, for the retry logic.
enum PostError {
    /// The session expired (404 with a session id): re-initialize and retry.
    SessionExpired,
    /// A 2026-07-28 server answered -32020 (header mismatch): this body.
    HeaderMismatch(Vec<u8>),
    /// Failed for this reason (unreachable and unauthorized ones end the
    /// session, [`SessionError::ends_session`]).
    Failed(SessionError),
}

impl PostError {
    /// Why `step` failed, for a step that is not retried.
    fn cause(self, step: Step) -> SessionError {
        match self {
            PostError::SessionExpired => SessionError::Status { step, status: 404, body: Vec::new() },
            PostError::HeaderMismatch(body) => SessionError::Status { step, status: 400, body },
            PostError::Failed(e) => e,
        }
    }
}

impl Session {
    /// Runs `fut` as a task of this session: it stops when the session ends.
    fn spawn(&self, fut: impl std::future::Future<Output = ()> + 'static) {
        let closed = self.closed.clone();
        self.ex
            .spawn(fut.or(async move {
                let _ = closed.recv().await;
            }))
            .detach();
    }

    fn fail(&self, reason: SessionError) {
        let _ = self.fatal.try_send(reason);
    }

    /// Hands one received message to the hub, noting the initialize result;
    /// `on`: the id of the request on whose POST stream it came (a server
    /// request there is that request's, row streamable-http-post-sse-may-carry-requests).
    fn deliver(&self, msg: &[u8], on: Option<&[u8]>) {
        if !self.alive.get() {
            return;
        }
        let msg = msg.trim_ascii();
        if msg.is_empty() {
            return;
        }
        if self.peek_init.get() {
            self.note_init_result(msg, true);
        }
        let last_page = self.note_list_answer(msg);
        match on {
            Some(request) => self.events.message_on(self.id, msg, request),
            None => self.events.message(self.id, msg),
        }
        if last_page {
            // Delivered: the hub's catalog has the new schemas.
            for tx in self.list_waiters.borrow_mut().drain(..) {
                let _ = tx.try_send(());
            }
        }
    }

    /// If `msg` answers a `tools/list` in flight, forgets it; returns whether
    /// it was a last page (no `nextCursor`), or an error.
    fn note_list_answer(&self, msg: &[u8]) -> bool {
        if self.list_ids.borrow().is_empty() {
            return false;
        }
        let Ok(env) = Envelope::parse(msg) else { return false };
        if !matches!(env.kind(), Kind::Result | Kind::Error) {
            return false;
        }
        let Some(id) = env.id_bytes() else { return false };
        let mut ids = self.list_ids.borrow_mut();
        let Some(i) = ids.iter().position(|x| x.as_slice() == id) else { return false };
        ids.remove(i);
        env.result().and_then(|r| r.get("nextCursor")).is_none()
    }

    /// If `msg` answers the kept initialize request, records the negotiated
    /// version and stops looking; returns whether it did.
    fn note_init_result(&self, msg: &[u8], from_hub_init: bool) -> bool {
        let Some((_, init_id)) = &*self.init.borrow() else { return false };
        let Ok(env) = Envelope::parse(msg) else { return false };
        if env.id_bytes() != Some(init_id.as_slice()) || !matches!(env.kind(), Kind::Result | Kind::Error) {
            return false;
        }
        let v = env.result().and_then(|r| r.get("protocolVersion")).and_then(|v| v.as_str()).and_then(|s| s.as_str());
        if let Some(v) = v.filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_graphic())) {
            *self.version.borrow_mut() = Some(v.as_bytes().to_vec());
        }
        if from_hub_init {
            self.peek_init.set(false);
        }
        true
    }

    /// An SSE event over `max_message`, which the decoder dropped; `on`:
    /// the request whose POST stream it came on. Returns whether it was
    /// that request's answer, so the stream has nothing more for it.
    fn event_too_large(&self, len: usize, head: &[u8], tail: &[u8], on: Option<&[u8]>) -> bool {
        let max = self.opts.max_message;
        let limit = crate::limits::message_limit("one message from a remote server", max);
        if self.alive.get() {
            self.events.too_large(self.id, &Oversize { len, max, limit: &limit, head, tail }, on);
        }
        on.is_some() && clipped::classify(head, tail).answers(on) == on
    }

    /// A JSON-RPC error answered to the hub for request `id`.
    fn answer_error(&self, id: &[u8], why: &dyn std::fmt::Display) {
        let out = crate::bytes::written::error(Some(id), ErrorCode::InternalError, &format!("server {}: {why}", self.name), None);
        self.deliver(&out, None);
    }

    /// Sends one message from the hub, in order (see the module docs).
    async fn dispatch(self: Rc<Self>, msg: Vec<u8>, about: Upward) -> Result<(), SessionError> {
        let id = about.request_id().map(<[u8]>::to_vec);
        if about.is(Method::Initialize) {
            let id = id.unwrap_or_default();
            *self.init.borrow_mut() = Some((msg.clone(), id.clone()));
            *self.session_id.borrow_mut() = None;
            *self.version.borrow_mut() = None;
            self.peek_init.set(true);
            return self.initialize(msg, id).await;
        }
        let initialized = about.is(Method::Initialized);
        if initialized {
            *self.initialized.borrow_mut() = Some(msg.clone());
        }
        if let Some(id) = id.filter(|_| about.is(Method::ToolsList)) {
            let mut ids = self.list_ids.borrow_mut();
            if ids.len() >= 16 {
                ids.remove(0);
            }
            ids.push(id);
        }
        let permit = self.in_flight.acquire_arc().await;
        let (written_tx, written_rx) = channel::bounded::<()>(1);
        let is_request = about.request_id().is_some();
        let start_get = initialized && self.mode.get() == Mode::StreamableHttp && !self.get_started.replace(true);
        let me = self.clone();
        self.spawn(async move {
            me.post_message(msg, about, Some(written_tx)).await;
            drop(permit);
            if start_get {
                let me2 = me.clone();
                me.spawn(me2.standalone_stream());
            }
        });
        // Requests: wait until written; others: until accepted.
        let wait = async {
            if is_request {
                let _ = written_rx.recv().await;
            } else {
                while written_rx.recv().await.is_ok() {}
            }
        };
        let _ = wait
            .or(async {
                Timer::after(self.timeout).await;
            })
            .await;
        Ok(())
    }

    /// The `initialize` request: decides the transport, opens the session.
    async fn initialize(self: Rc<Self>, msg: Vec<u8>, id: Vec<u8>) -> Result<(), SessionError> {
        if self.mode.get() != Mode::Sse {
            match self.post_raw(&msg, false, Step::Initialize).await {
                Ok(resp) if (200..300).contains(&resp.status) => {
                    self.mode.set(Mode::StreamableHttp);
                    check_session_id(&resp)?;
                    *self.session_id.borrow_mut() = resp.session_id.clone();
                    return match self.read_reply(resp, Some(&id)).await {
                        Ok(true) => Ok(()),
                        Ok(false) => Err(SessionError::NoInitResult),
                        Err(e) => Err(SessionError::InitReply(Box::new(e))),
                    };
                }
                Ok(resp) if self.mode.get() == Mode::Auto && matches!(resp.status, 400 | 404 | 405) => {
                    debug!(
                        "server {}: initialize POST answered HTTP {}; trying the 2024-11-05 HTTP+SSE transport",
                        self.name, resp.status
                    );
                    self.mode.set(Mode::Sse);
                }
                Ok(resp) => return Err(self.refused(resp, Step::Initialize).await),
                Err(e) => return Err(e.cause(Step::Initialize)),
            }
        }
        // HTTP+SSE: open the stream, wait for the endpoint, POST to it.
        let (ep_tx, ep_rx) = channel::bounded::<Result<Url, SessionError>>(1);
        let me = self.clone();
        self.spawn(async move { me.legacy_stream(ep_tx).await });
        let endpoint = async { ep_rx.recv().await.unwrap_or(Err(SessionError::SseClosed)) };
        let endpoint = endpoint
            .or(async {
                Timer::after(self.timeout).await;
                Err(SessionError::NoEndpoint(self.timeout))
            })
            .await
            .map_err(|e| SessionError::Fallback(Box::new(e)))?;
        debug!("server {}: HTTP+SSE endpoint {endpoint}", self.name);
        *self.post_url.borrow_mut() = endpoint;
        match self.post_raw(&msg, false, Step::Initialize).await {
            Ok(mut resp) if (200..300).contains(&resp.status) => {
                // The answer comes on the stream; the body is an acknowledgement.
                if resp.body.drain(64 * 1024).await {
                    self.client.recycle(resp.body);
                }
                Ok(())
            }
            Ok(resp) => Err(self.refused(resp, Step::Initialize).await),
            Err(e) => Err(e.cause(Step::Initialize)),
        }
    }

    /// `step` answered with HTTP error `resp`: the status and the start of its body.
    async fn refused(&self, mut resp: Response, step: Step) -> SessionError {
        let body = resp.body.read_all(4096).await.unwrap_or_default();
        SessionError::Status { step, status: resp.status, body }
    }

    /// The request headers for the current session.
    fn headers(&self, accept: &'static [u8], with_session: bool) -> Vec<(String, Vec<u8>)> {
        let mut h: Vec<(String, Vec<u8>)> = vec![
            ("user-agent".into(), concat!("mcpx/", env!("CARGO_PKG_VERSION")).as_bytes().to_vec()),
            ("accept".into(), accept.to_vec()),
        ];
        h.extend(self.headers.iter().cloned());
        if let Some(bearer) = self.auth.as_ref().and_then(|a| a.header()) {
            h.push(("authorization".into(), bearer));
        }
        if with_session && self.mode.get() != Mode::Sse {
            if let Some(sid) = &*self.session_id.borrow() {
                h.push(("mcp-session-id".into(), sid.clone()));
            }
            if let Some(v) = &*self.version.borrow() {
                h.push(("mcp-protocol-version".into(), v.clone()));
            }
        }
        h
    }

    fn limits(&self, idle: Option<Duration>) -> Limits {
        Limits { max_head: self.opts.max_head, head_timeout: self.timeout, idle_timeout: idle }
    }

    /// One POST of `msg` to the current endpoint; the response head.
    async fn post_raw(&self, msg: &[u8], with_session: bool, step: Step) -> Result<Response, PostError> {
        self.post_with(msg, with_session, None, None, None, false, step).await
    }

    /// `modern`: the 2026-07-28 headers of a modern request, sent instead
    /// of the session's (no `Mcp-Session-Id`). `traceparent`: a traced
    /// request's W3C trace context (the same as in its `_meta`). `quiet_ok`: the reply may be
    /// silent for longer than the request timeout (a `subscriptions/listen`
    /// stream, which the hub renews on its own schedule).
    async fn post_with(
        &self,
        msg: &[u8],
        with_session: bool,
        written: Option<&Sender<()>>,
        modern: Option<&[(String, Vec<u8>)]>,
        traceparent: Option<crate::hub::TraceHeader>,
        quiet_ok: bool,
        step: Step,
    ) -> Result<Response, PostError> {
        #[cfg(not(feature = "traces"))]
        let _ = traceparent;
        let mut attempts = 0;
        loop {
            if let Some(a) = &self.auth {
                a.refresh_if_expiring().await.map_err(|e| PostError::Failed(SessionError::auth(e)))?;
            }
            // A modern request belongs to no session: no Mcp-Session-Id.
            let mut h = self.headers(b"application/json, text/event-stream", with_session && modern.is_none());
            h.extend(modern.unwrap_or_default().iter().cloned());
            #[cfg(feature = "traces")]
            h.extend(traceparent.as_ref().map(|t| ("traceparent".to_string(), t.bytes().to_vec())));
            h.push(("content-type".into(), b"application/json".to_vec()));
            let fields: Vec<(&str, &[u8])> = h.iter().map(|(n, v)| (n.as_str(), v.as_slice())).collect();
            let url = self.post_url.borrow().clone();
            let mut resp = self
                .client
                .request("POST", &url, &fields, msg, self.limits((!quiet_ok).then_some(self.timeout)), written)
                .await
                .map_err(|err| PostError::Failed(SessionError::Http { step, err }))?;
            let Some(auth) = self.auth.as_ref().filter(|_| matches!(resp.status, 401 | 403)) else { return Ok(resp) };
            // Requirement: authz-client-parses-www-authenticate, authz-step-up (a retry limit)
            if attempts >= oauth::MAX_ATTEMPTS {
                return Ok(resp);
            }
            attempts += 1;
            let sent = fields.iter().find(|(n, _)| *n == "authorization").map(|(_, v)| v.to_vec());
            let www = resp.www_authenticate.take();
            if resp.body.drain(64 * 1024).await {
                self.client.recycle(resp.body);
            }
            let version = self.version.borrow().clone();
            match auth.challenge(resp.status, www.as_deref(), sent.as_deref(), version.as_deref()).await {
                Ok(()) => {}
                #[cfg(feature = "secrets")]
                Err(oauth::Error::AuthorizeAt(ask)) => {
                    if let Some(c) = &self.catalog {
                        c.ask_to_authorize(self.id, &ask);
                    }
                    return Err(PostError::Failed(SessionError::AuthorizeFirst(ask.principal)));
                }
                Err(e) => return Err(PostError::Failed(SessionError::auth(e))),
            }
        }
    }

    /// POSTs one message from the hub and handles the answer.
    async fn post_message(self: &Rc<Self>, msg: Vec<u8>, about: Upward, written: Option<Sender<()>>) {
        let request_id = about.request_id().map(<[u8]>::to_vec);
        let what = match &about {
            Upward::Request { id, .. } => format!("request {}", String::from_utf8_lossy(id.bytes())),
            Upward::Notification { .. } => "notification".to_string(),
            Upward::Answer => "response".to_string(),
        };
        // A `subscriptions/listen` stream may stay silent for long.
        let listen = about.is(Method::SubscriptionsListen);
        #[cfg(feature = "traces")]
        let (mut modern, traceparent) = match about {
            Upward::Request { modern, traceparent, .. } => (modern, traceparent),
            _ => (None, None),
        };
        #[cfg(not(feature = "traces"))]
        let (mut modern, traceparent) = match about {
            Upward::Request { modern, .. } => (modern, None::<crate::hub::TraceHeader>),
            _ => (None, None),
        };
        let mut retried = false;
        let mut relisted = false;
        let mut written = written;
        loop {
            let generation = self.generation.get();
            let r = self.post_with(&msg, true, written.as_ref(), modern.as_deref(), traceparent.clone(), listen, Step::Message).await;
            written = None;
            let failure = match r {
                Ok(resp) => match self.handle_post_response(resp, request_id.as_deref()).await {
                    Ok(()) => return,
                    Err(e) => e,
                },
                Err(e) => e,
            };
            match failure {
                PostError::SessionExpired if !retried => {
                    retried = true;
                    debug!("server {}: session expired (HTTP 404); re-initializing", self.name);
                    if let Err(e) = self.reinitialize(generation).await {
                        return self.post_failed(request_id.as_deref(), &what, SessionError::Reinitialize(Box::new(e)));
                    }
                }
                PostError::HeaderMismatch(body) if !relisted && self.catalog.is_some() => {
                    // Requirement: streamable-http-client-relist-on-header-mismatch
                    relisted = true;
                    debug!("server {}: {what} answered -32020 (header mismatch); listing its tools again and retrying once", self.name);
                    if !self.relist().await {
                        self.deliver(&body, None);
                        return;
                    }
                    modern = self.catalog.as_ref().and_then(|c| c.headers_again(self.id, &msg)).or(modern);
                }
                PostError::HeaderMismatch(body) => {
                    self.deliver(&body, None);
                    return;
                }
                PostError::SessionExpired => return self.post_failed(request_id.as_deref(), &what, SessionError::ExpiredAgain),
                PostError::Failed(why) => return self.post_failed(request_id.as_deref(), &what, why),
            }
        }
    }

    /// A message from the hub failed: a request is answered with the error;
    /// a failure that no later message can escape ends the session (an
    /// unauthorized server's tools stay away until it is authorized).
    fn post_failed(&self, request_id: Option<&[u8]>, what: &str, why: SessionError) {
        match request_id {
            Some(id) => self.answer_error(id, &why),
            None if !why.ends_session() => warn!("server {}: {what} not delivered: {why}", self.name),
            None => {}
        }
        if why.ends_session() {
            self.fail(why);
        }
    }

    /// Asks the hub to list the server's tools again and waits (up to the
    /// request timeout) until the last page of that listing was delivered.
    async fn relist(&self) -> bool {
        let Some(catalog) = &self.catalog else { return false };
        let (tx, rx) = channel::bounded::<()>(1);
        self.list_waiters.borrow_mut().push(tx);
        catalog.relist(self.id);
        let done = async { rx.recv().await.is_ok() };
        done.or(async {
            Timer::after(self.timeout).await;
            false
        })
        .await
    }

    /// The answer to a POST of a message from the hub.
    async fn handle_post_response(self: &Rc<Self>, mut resp: Response, request_id: Option<&[u8]>) -> Result<(), PostError> {
        let status = resp.status;
        if (200..300).contains(&status) {
            if self.mode.get() == Mode::Sse {
                // HTTP+SSE: answers come on the stream.
                if resp.body.drain(64 * 1024).await {
                    self.client.recycle(resp.body);
                }
                return Ok(());
            }
            return match self.read_reply(resp, request_id).await {
                Ok(true) => Ok(()),
                Ok(false) if request_id.is_none() || status == 202 => Ok(()),
                Ok(false) => Err(PostError::Failed(SessionError::NoAnswer { status })),
                Err(e) => Err(PostError::Failed(e)),
            };
        }
        let had_session = self.session_id.borrow().is_some();
        if status == 404 && had_session && self.mode.get() == Mode::StreamableHttp {
            resp.body.drain(64 * 1024).await;
            return Err(PostError::SessionExpired);
        }
        let body = resp.body.read_all(64 * 1024).await.unwrap_or_default();
        if request_id.is_some_and(|id| header_mismatch(&body, id)) {
            return Err(PostError::HeaderMismatch(body));
        }
        // A JSON-RPC error for this request (e.g. with a 400) goes to the hub
        // as is: for the `server/discover` probe, the hub's cue to fall back
        // to `initialize` (versioning-dual-era-http-detect).
        if let (Some(id), Ok(env)) = (request_id, Envelope::parse(body.trim_ascii())) {
            if env.kind() == Kind::Error && env.id_bytes() == Some(id) {
                self.deliver(&body, None);
                return Ok(());
            }
        }
        Err(PostError::Failed(SessionError::Status { step: Step::Message, status, body }))
    }

    /// Reads a JSON or SSE reply and delivers its messages. Returns whether
    /// the response to `request_id` was among them.
    async fn read_reply(self: &Rc<Self>, mut resp: Response, request_id: Option<&[u8]>) -> Result<bool, SessionError> {
        if resp.content_type == "text/event-stream" {
            let mut st = SseState::default();
            let got = self.read_sse(&mut resp.body, &mut st, request_id, false).await;
            drop(resp);
            return match got {
                Ok(true) => Ok(true),
                Ok(false) | Err(_) if request_id.is_some() => self.resume(st, request_id.unwrap_or_default(), got.err()).await,
                Ok(false) => Ok(false),
                Err(e) => Err(e),
            };
        }
        let body = resp.body.read_all(self.opts.max_message).await.map_err(SessionError::Read)?;
        self.client.recycle(resp.body);
        let body_t = body.trim_ascii();
        if body_t.is_empty() {
            return Ok(false);
        }
        if resp.content_type != "application/json" && !resp.content_type.is_empty() {
            debug!("server {}: reply of type {:?} read as JSON", self.name, resp.content_type);
        }
        let answered = request_id.is_some_and(|id| answers(body_t, id));
        self.deliver(body_t, None);
        Ok(answered)
    }

    /// A POST's stream ended before its response: resume it with GET and
    /// `Last-Event-ID`, after the server's `retry` delay.
    async fn resume(self: &Rc<Self>, mut st: SseState, request_id: &[u8], err: Option<SessionError>) -> Result<bool, SessionError> {
        let ended = err.map(Box::new);
        for _ in 0..self.opts.max_resumes {
            if st.last_id.is_empty() {
                break;
            }
            Timer::after(st.retry.unwrap_or(self.opts.sse_retry)).await;
            let resp = match self.get_stream(Some(&st.last_id)).await {
                Ok(r) if (200..300).contains(&r.status) && r.content_type == "text/event-stream" => r,
                Ok(r) => {
                    let resume = SessionError::NotStream { status: r.status, content_type: r.content_type };
                    return Err(SessionError::Unanswered { ended, resume: Some(Box::new(resume)) });
                }
                Err(err) => {
                    let resume = SessionError::Http { step: Step::Message, err };
                    return Err(SessionError::Unanswered { ended, resume: Some(Box::new(resume)) });
                }
            };
            let mut body = resp.body;
            if let Ok(true) = self.read_sse(&mut body, &mut st, Some(request_id), false).await {
                return Ok(true);
            }
        }
        Err(SessionError::Unanswered { ended, resume: None })
    }

    /// A GET for an SSE stream on the MCP endpoint.
    async fn get_stream(&self, last_event_id: Option<&[u8]>) -> Result<Response, http::Error> {
        let mut h = self.headers(b"text/event-stream", true);
        if let Some(id) = last_event_id.filter(|i| !i.is_empty()) {
            h.push(("last-event-id".into(), id.to_vec()));
        }
        let fields: Vec<(&str, &[u8])> = h.iter().map(|(n, v)| (n.as_str(), v.as_slice())).collect();
        let limits = Limits { max_head: self.opts.max_head, head_timeout: self.timeout, idle_timeout: None };
        self.client.request("GET", &self.url, &fields, b"", limits, None).await
    }

    /// Reads SSE events from `body`, delivering each message. Stops after the
    /// response to `request_id`, if given; returns whether it came.
    async fn read_sse(&self, body: &mut Body, st: &mut SseState, request_id: Option<&[u8]>, swallow_init: bool) -> Result<bool, SessionError> {
        let mut dec = SseDecoder::new(vec![0u8; self.opts.max_message.max(4)]);
        loop {
            let chunk = match body.next_chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => return Ok(false),
                Err(e) => return Err(SessionError::Read(e)),
            };
            let mut input = chunk;
            while !input.is_empty() {
                let n = dec.feed(input);
                input = &input[n..];
                while let Some(item) = dec.next() {
                    match item {
                        SseItem::Event(ev) => {
                            if let Some(r) = ev.retry {
                                st.retry = Some(Duration::from_millis(r));
                            }
                            let kind = ev.event.unwrap_or(b"message");
                            if kind != b"message" {
                                debug!("server {}: SSE event {:?} ignored", self.name, String::from_utf8_lossy(kind));
                                continue;
                            }
                            let data = ev.data.trim_ascii();
                            if data.is_empty() {
                                continue; // a priming event
                            }
                            let answered = request_id.is_some_and(|id| answers(data, id));
                            if swallow_init && self.note_init_result(data, false) {
                                // The re-initialize result: for the transport only.
                            } else {
                                self.deliver(data, request_id);
                            }
                            if answered {
                                st.last_id = dec.last_event_id().to_vec();
                                return Ok(true);
                            }
                        }
                        SseItem::TooLarge { len, head, tail } => {
                            if self.event_too_large(len, head, tail, request_id) {
                                st.last_id = dec.last_event_id().to_vec();
                                return Ok(true);
                            }
                        }
                    }
                }
                st.last_id = dec.last_event_id().to_vec();
            }
        }
    }

    /// One re-initialize after the session of `generation` expired: the kept
    /// `initialize` without a session, then `notifications/initialized`.
    /// Concurrent callers for the same generation wait for the first.
    async fn reinitialize(self: &Rc<Self>, generation: u64) -> Result<(), SessionError> {
        let _guard = self.reinit.lock().await;
        if self.generation.get() != generation {
            return Ok(());
        }
        let (init, id) = self.init.borrow().clone().ok_or(SessionError::NothingToRepeat)?;
        *self.session_id.borrow_mut() = None;
        let resp = match self.post_raw(&init, false, Step::Initialize).await {
            Ok(r) if (200..300).contains(&r.status) => r,
            Ok(r) => return Err(self.refused(r, Step::Initialize).await),
            Err(e) => return Err(e.cause(Step::Initialize)),
        };
        check_session_id(&resp)?;
        let sid = resp.session_id.clone();
        let mut resp = resp;
        let got = if resp.content_type == "text/event-stream" {
            let mut st = SseState::default();
            self.read_sse(&mut resp.body, &mut st, Some(&id), true).await?
        } else {
            let body = resp.body.read_all(self.opts.max_message).await.map_err(SessionError::Read)?;
            self.client.recycle(resp.body);
            self.note_init_result(body.trim_ascii(), false)
        };
        if !got {
            return Err(SessionError::NoInitResult);
        }
        *self.session_id.borrow_mut() = sid;
        let note = self.initialized.borrow().clone();
        if let Some(note) = note {
            match self.post_raw(&note, true, Step::Initialized).await {
                Ok(mut r) if (200..300).contains(&r.status) => {
                    if r.body.drain(64 * 1024).await {
                        self.client.recycle(r.body);
                    }
                }
                Ok(r) => return Err(self.refused(r, Step::Initialized).await),
                Err(e) => return Err(e.cause(Step::Initialized)),
            }
        }
        self.generation.set(generation + 1);
        for tx in self.new_session.borrow_mut().drain(..) {
            let _ = tx.try_send(());
        }
        info!("server {}: session re-initialized", self.name);
        Ok(())
    }

    /// The standalone GET stream of a Streamable HTTP session: server-initiated
    /// messages. Reconnects with `Last-Event-ID`; a 405 means there is none.
    async fn standalone_stream(self: Rc<Self>) {
        let mut st = SseState::default();
        let mut delay = self.opts.sse_retry;
        let mut generation = self.generation.get();
        loop {
            if self.generation.get() != generation {
                generation = self.generation.get();
                st = SseState::default();
            }
            let t0 = Instant::now();
            match self.get_stream(Some(&st.last_id)).await {
                Ok(r) if r.status == 405 => {
                    debug!("server {}: no standalone SSE stream (HTTP 405)", self.name);
                    return;
                }
                Ok(r) if r.status == 404 => {
                    // Either the session expired, which the next POST finds
                    // out and repairs, or the server has no GET here. Wait for
                    // a new session rather than re-initializing from here: a
                    // server that answers every GET with 404 must not cause a
                    // re-initialize loop.
                    drop(r);
                    debug!("server {}: standalone SSE stream answered HTTP 404; waiting for a new session", self.name);
                    let (tx, rx) = channel::bounded::<()>(1);
                    self.new_session.borrow_mut().push(tx);
                    let _ = rx.recv().await;
                    continue;
                }
                Ok(r) if (200..300).contains(&r.status) && r.content_type == "text/event-stream" => {
                    let mut body = r.body;
                    let end = self.read_sse(&mut body, &mut st, None, false).await;
                    match end {
                        Err(e) => debug!("server {}: standalone SSE stream ended: {e}", self.name),
                        Ok(_) => debug!("server {}: standalone SSE stream ended: closed", self.name),
                    }
                }
                Ok(r) => {
                    debug!("server {}: standalone SSE stream refused: HTTP {} {:?}", self.name, r.status, r.content_type);
                }
                Err(err @ http::Error::Connect(_)) => {
                    // The server is gone: so are its tools, until it is back.
                    self.fail(SessionError::Http { step: Step::Message, err });
                    return;
                }
                Err(e) => debug!("server {}: standalone SSE stream failed: {e}", self.name),
            }
            // The server's retry when it gave one; back off while it fails fast.
            if t0.elapsed() >= Duration::from_secs(5) {
                delay = self.opts.sse_retry;
            }
            Timer::after(st.retry.unwrap_or(delay).max(Duration::from_millis(10))).await;
            delay = (delay * 2).min(self.opts.restart.max);
        }
    }

    /// The SSE stream of an HTTP+SSE server: first the `endpoint` event,
    /// then every message. Its end ends the session.
    async fn legacy_stream(self: Rc<Self>, endpoint: Sender<Result<Url, SessionError>>) {
        let h = self.headers(b"text/event-stream", false);
        let fields: Vec<(&str, &[u8])> = h.iter().map(|(n, v)| (n.as_str(), v.as_slice())).collect();
        let limits = Limits { max_head: self.opts.max_head, head_timeout: self.timeout, idle_timeout: None };
        let resp = match self.client.request("GET", &self.url, &fields, b"", limits, None).await {
            Ok(r) if (200..300).contains(&r.status) && r.content_type == "text/event-stream" => r,
            Ok(r) => {
                let _ = endpoint.try_send(Err(SessionError::NotStream { status: r.status, content_type: r.content_type }));
                return;
            }
            Err(err) => {
                let _ = endpoint.try_send(Err(SessionError::Http { step: Step::Message, err }));
                return;
            }
        };
        let mut body = resp.body;
        let mut dec = SseDecoder::new(vec![0u8; self.opts.max_message.max(4)]);
        let mut have_endpoint = false;
        let end = loop {
            let chunk = match body.next_chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => break SessionError::SseClosed,
                Err(e) => break SessionError::SseFailed(e),
            };
            let mut input = chunk;
            while !input.is_empty() {
                let n = dec.feed(input);
                input = &input[n..];
                while let Some(item) = dec.next() {
                    match item {
                        SseItem::Event(ev) if ev.event == Some(b"endpoint") => {
                            if have_endpoint {
                                continue;
                            }
                            have_endpoint = true;
                            let r = std::str::from_utf8(ev.data.trim_ascii())
                                .map_err(|_| SessionError::EndpointNotUtf8)
                                .and_then(|s| self.url.join_same_origin(s).map_err(SessionError::Endpoint));
                            let _ = endpoint.try_send(r);
                        }
                        SseItem::Event(ev) if ev.event.unwrap_or(b"message") == b"message" => self.deliver(ev.data, None),
                        SseItem::Event(_) => {}
                        SseItem::TooLarge { len, head, tail } => {
                            self.event_too_large(len, head, tail, None);
                        }
                    }
                }
            }
        };
        if !have_endpoint {
            let _ = endpoint.try_send(Err(end));
        } else {
            self.fail(end);
        }
    }

    /// The end of the session: DELETE it (Streamable HTTP with a session).
    async fn end(&self) {
        if self.mode.get() == Mode::StreamableHttp && self.session_id.borrow().is_some() {
            let h = self.headers(b"application/json, text/event-stream", true);
            let fields: Vec<(&str, &[u8])> = h.iter().map(|(n, v)| (n.as_str(), v.as_slice())).collect();
            let d = self.opts.shutdown_timeout;
            let limits = Limits { max_head: self.opts.max_head, head_timeout: d, idle_timeout: Some(d) };
            let del = self.client.request("DELETE", &self.url, &fields, b"", limits, None);
            let r = del
                .or(async {
                    Timer::after(d).await;
                    Err(http::Error::Io(io::Error::new(io::ErrorKind::TimedOut, "timed out")))
                })
                .await;
            match r {
                Ok(r) => debug!("server {}: session deleted (HTTP {})", self.name, r.status),
                Err(e) => debug!("server {}: DELETE of the session failed: {e}", self.name),
            }
        }
        self.client.clear();
    }
}

#[derive(Default)]
struct SseState {
    last_id: Vec<u8>,
    retry: Option<Duration>,
}

/// Whether `msg` is the response (result or error) to request `id`.
fn answers(msg: &[u8], id: &[u8]) -> bool {
    match Envelope::parse(msg) {
        Ok(env) => matches!(env.kind(), Kind::Result | Kind::Error) && env.id_bytes() == Some(id),
        Err(_) => false,
    }
}

/// Session ids are visible ASCII (0x21..0x7E); anything else is not echoed.
fn check_session_id(resp: &Response) -> Result<(), SessionError> {
    match &resp.session_id {
        Some(sid) if sid.is_empty() || !sid.iter().all(|&b| (0x21..=0x7e).contains(&b)) => Err(SessionError::BadSessionId),
        _ => Ok(()),
    }
}
