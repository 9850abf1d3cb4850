//! `mcpx serve`: the hub on stdio, with its servers supervised.
//!
//! Everything runs on one thread, on a `smol::LocalExecutor`. The pure
//! [`Hub`] is shared as `Rc<RefCell<_>>`; every input (a client line, a
//! server line, a process start or exit, a timer) goes through
//! [`Runtime::feed`], which reads the clock once, calls the hub, and routes
//! everything `poll_output` returns before anyone else touches the hub.
//! One timer task sleeps until `next_deadline()` and calls `tick`.
//!
//! Shutdown (end of stdin, a closed stdout, SIGINT/SIGTERM/SIGHUP): on end
//! of stdin the requests already sent are answered first (bounded by the
//! longest server timeout); then the hub is told the client is gone, stdout
//! is flushed, and every server is stopped (stdin closed, SIGTERM, SIGKILL to
//! its process group). A second signal kills the groups at once.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use smol::channel::{self, Receiver, Sender};
use smol::future::FutureExt as _;
use smol::stream::StreamExt as _;
use smol::{LocalExecutor, Task, Timer};

use crate::cli::ServeArgs;
use crate::config::{self, Config, Source};
use crate::http::{self, Http, HttpConfig, HubLink};
use crate::hub::{self, ClientId, Hub, HubOptions, Output, UpstreamId, UpstreamSpec};
use crate::log::{self, Level};
use crate::outbox::{Outbox, PushError};
use crate::remote::{self, RemoteSpec};
use crate::supervise::{self, Events, ProcessSpec};

/// Why the session is ending (or a step towards it).
#[derive(Debug)]
pub enum Stop {
    /// End of stdin.
    InputClosed,
    InputError(String),
    /// stdout is closed (after a `CloseClient`) or failed.
    OutputClosed,
    OutputError(String),
    Signal(&'static str),
}

struct ClientConn {
    out: Outbox,
    /// Signalled when the hub reports the client's `initialize` answered.
    init_answered: (Sender<()>, Receiver<()>),
}

/// A server's handle: a supervised child or a remote connection, alike to
/// the rest of `serve`.
#[derive(Clone)]
enum Upstream {
    Local(supervise::Upstream),
    Remote(remote::Remote),
}

impl Upstream {
    fn send(&self, msg: Vec<u8>) -> Result<(), (PushError, Vec<u8>)> {
        match self {
            Upstream::Local(u) => u.send(msg),
            Upstream::Remote(r) => r.send(msg),
        }
    }
    fn queue_bytes(&self) -> usize {
        match self {
            Upstream::Local(u) => u.queue_bytes(),
            Upstream::Remote(r) => r.queue_bytes(),
        }
    }
    fn restart(&self, why: &str) {
        match self {
            Upstream::Local(u) => u.restart(why),
            Upstream::Remote(r) => r.restart(why),
        }
    }
    fn shutdown(&self) {
        match self {
            Upstream::Local(u) => u.shutdown(),
            Upstream::Remote(r) => r.shutdown(),
        }
    }
    fn kill_now(&self) {
        match self {
            Upstream::Local(u) => u.kill_now(),
            Upstream::Remote(r) => r.kill_now(),
        }
    }
}

/// The state shared by all tasks of `mcpx serve`.
pub struct Runtime {
    hub: RefCell<Hub>,
    start: Instant,
    upstreams: RefCell<Vec<Upstream>>,
    names: Vec<String>,
    clients: RefCell<BTreeMap<ClientId, ClientConn>>,
    /// The HTTP server, when `--http` is given: its sessions are hub clients too.
    http: RefCell<Option<Http>>,
    /// Wakes the timer task: the next deadline may have moved.
    tick_wake: Sender<()>,
    stop: Sender<Stop>,
    closing: Cell<bool>,
}

impl Runtime {
    pub fn new(hub: Hub, names: Vec<String>) -> (Rc<Runtime>, Receiver<()>, Receiver<Stop>) {
        let (tick_wake, tick_rx) = channel::bounded(1);
        let (stop, stop_rx) = channel::bounded(16);
        let rt = Runtime {
            hub: RefCell::new(hub),
            start: Instant::now(),
            upstreams: RefCell::new(Vec::new()),
            names,
            clients: RefCell::new(BTreeMap::new()),
            http: RefCell::new(None),
            tick_wake,
            stop,
            closing: Cell::new(false),
        };
        (Rc::new(rt), tick_rx, stop_rx)
    }

    /// The one clock: milliseconds since mcpx started (monotonic).
    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn instant_at(&self, ms: u64) -> Instant {
        self.start + Duration::from_millis(ms)
    }

    /// Calls the hub with the current time, then routes all its outputs.
    pub fn feed<T>(&self, f: impl FnOnce(&mut Hub, u64) -> T) -> T {
        let now = self.now_ms();
        let r = f(&mut self.hub.borrow_mut(), now);
        self.drain();
        r
    }

    fn drain(&self) {
        loop {
            let out = self.hub.borrow_mut().poll_output();
            match out {
                Some(o) => self.route(o),
                None => break,
            }
        }
        let _ = self.tick_wake.try_send(());
    }

    fn name(&self, u: UpstreamId) -> &str {
        self.names.get(u).map_or("?", String::as_str)
    }

    fn route(&self, out: Output) {
        // Messages for HTTP sessions go to the HTTP server.
        let out = match self.http.borrow().as_ref() {
            Some(http) => match http.take(out) {
                Some(out) => out,
                None => return,
            },
            None => out,
        };
        match out {
            Output::ToClient(c, msg, _) => {
                let clients = self.clients.borrow();
                let Some(conn) = clients.get(&c) else {
                    debug!("message for client {c}, which is gone, dropped");
                    return;
                };
                match conn.out.push(msg) {
                    Ok(()) => {}
                    Err(PushError::Closed) if self.closing.get() => {}
                    Err(e) => error!("message to the client dropped: {e}"),
                }
            }
            Output::ClientInitialized(c, _) => {
                if let Some(conn) = self.clients.borrow().get(&c) {
                    let _ = conn.init_answered.0.try_send(());
                }
            }
            Output::ToUpstream(u, msg) => {
                let (sent, cap) = match self.upstreams.borrow().get(u) {
                    Some(up) => (up.send(msg), up.queue_bytes()),
                    None => return,
                };
                match sent {
                    Ok(()) => {}
                    Err((PushError::Closed, _)) => {
                        debug!("server {}: not running; message to it dropped", self.name(u))
                    }
                    Err((e, msg)) => {
                        // Never lose a request silently: the hub answers it
                        // now (naming the server and the limit); `drain`
                        // routes that answer next.
                        let why = format!("{e} (limit: {cap} bytes queued per server)");
                        warn!("server {}: message to it refused: {why}", self.name(u));
                        let now = self.now_ms();
                        self.hub.borrow_mut().upstream_refused(u, &msg, &why, now);
                    }
                }
            }
            Output::RestartUpstream(u, why) => {
                if self.closing.get() {
                    return;
                }
                warn!("server {}: restarting it: {why}", self.name(u));
                if let Some(up) = self.upstreams.borrow().get(u) {
                    up.restart(why);
                }
            }
            Output::CloseClient(c) => {
                if let Some(conn) = self.clients.borrow().get(&c) {
                    debug!("closing client {c}");
                    conn.out.close();
                }
            }
            Output::Log(level, msg) => log::write(log_level(level), format_args!("{msg}")),
        }
    }

    /// Registers a client whose messages go to `out`.
    pub fn connect_client(&self, out: Outbox) -> ClientId {
        let now = self.now_ms();
        let c = self.hub.borrow_mut().client_connected(now);
        let conn = ClientConn { out, init_answered: channel::bounded(1) };
        self.clients.borrow_mut().insert(c, conn);
        self.drain();
        c
    }

    /// One framed message from a stdio client: the hub parses it (once).
    pub fn client_message(&self, c: ClientId, msg: &[u8]) {
        self.feed(|h, now| h.client_message(c, msg, now));
    }

    /// Whether the client's `initialize` is still unanswered. A stream
    /// transport then holds the client's next messages: a conforming client
    /// waits for that answer anyway, and one that pipelines (`printf ... |
    /// mcpx serve`) gets its lists once the servers are up, not before.
    pub fn initializing(&self, c: ClientId) -> bool {
        !self.closing.get() && self.hub.borrow().client_initializing(c)
    }

    /// Completes once [`Runtime::initializing`] turns false, or after `limit`.
    pub async fn initialized(&self, c: ClientId, limit: Duration) {
        let Some(answered) = self.clients.borrow().get(&c).map(|conn| conn.init_answered.1.clone()) else {
            return;
        };
        let deadline = Instant::now() + limit;
        while self.initializing(c) {
            let signalled = async {
                let _ = answered.recv().await;
                true
            };
            let timeout = async {
                Timer::at(deadline).await;
                false
            };
            if !signalled.or(timeout).await {
                warn!("client {c}: no answer to its initialize within {} s; reading on", limit.as_secs());
                return;
            }
        }
    }

    pub fn client_frame_too_large(&self, c: ClientId, len: usize) {
        warn!("client sent a message of {len} bytes, over the limit; answered with an error");
        self.feed(|h, _| h.client_frame_too_large(c, len));
    }

    pub fn client_disconnected(&self, c: ClientId) {
        self.feed(|h, _| h.client_disconnected(c));
        if let Some(conn) = self.clients.borrow_mut().remove(&c) {
            conn.out.close();
        }
    }

    fn inflight(&self, c: ClientId) -> usize {
        self.hub.borrow().client_open_requests(c)
    }

    /// Reports a step towards the end of the session to `serve`.
    pub fn stop(&self, why: Stop) {
        let _ = self.stop.try_send(why);
    }
}

fn log_level(level: hub::Level) -> Level {
    match level {
        hub::Level::Error => Level::Error,
        hub::Level::Warn => Level::Warn,
        hub::Level::Info => Level::Info,
        hub::Level::Debug => Level::Debug,
    }
}

/// The HTTP server's settings from the command line and the config.
pub fn http_config(args: &ServeArgs, cfg: &Config) -> Option<HttpConfig> {
    let addr = args.http?;
    let mut h = HttpConfig::new(addr);
    h.token = args.token.clone().or_else(|| cfg.http.bearer.clone());
    h.auth = cfg.http.auth.clone();
    h.insecure_no_auth = args.insecure_no_auth;
    h.allowed_origins = cfg.http.allowed_origins.clone();
    h.allowed_hosts = cfg.http.allowed_hosts.clone();
    let limits = crate::limits::get();
    h.limits.max_body = h.limits.max_body.min(limits.max_frame_bytes);
    h.limits.max_sessions = h.limits.max_sessions.min(limits.max_sessions);
    let n = |v: Option<u64>, d: usize| v.map_or(d, |v| usize::try_from(v).unwrap_or(usize::MAX));
    h.limits.max_body = n(cfg.http.max_body, h.limits.max_body);
    h.limits.max_sessions = n(cfg.http.max_sessions, h.limits.max_sessions);
    h.limits.max_connections = n(cfg.http.max_connections, h.limits.max_connections);
    h.limits.session_idle_ms = cfg.http.session_idle_ms.unwrap_or(h.limits.session_idle_ms);
    Some(h)
}

/// The supervisors report here.
struct HubEvents(Rc<Runtime>);

impl Events for HubEvents {
    fn started(&self, id: UpstreamId) {
        debug!("server {}: started", self.0.name(id));
        self.0.feed(|h, now| h.upstream_started(id, now));
    }
    fn message(&self, id: UpstreamId, line: &[u8]) {
        self.0.feed(|h, now| h.upstream_message(id, line, now));
    }
    fn garbage(&self, id: UpstreamId, what: &str) {
        self.0.feed(|h, _| h.upstream_garbage(id, what));
    }
    fn exited(&self, id: UpstreamId, reason: &str, stderr_tail: &str) {
        if self.0.closing.get() {
            // Stopped by us at shutdown: nothing left for the hub to do about it.
            return;
        }
        self.0.feed(|h, now| h.upstream_exited(id, reason, stderr_tail, now));
    }
}

/// What a remote server's transport asks of the hub.
struct HubCatalog(Rc<Runtime>);

impl remote::Catalog for HubCatalog {
    fn tool_schema(&self, id: UpstreamId, tool: &str) -> Option<serde_json::Value> {
        self.0.hub.borrow().upstream_tool_schema(id, tool).cloned()
    }
    fn relist(&self, id: UpstreamId) {
        if !self.0.closing.get() {
            self.0.feed(|h, now| h.relist_upstream(id, now));
        }
    }
}

/// Sleeps until the hub's next deadline (or until woken because it may have
/// moved) and calls `tick`.
async fn timer_task(rt: Rc<Runtime>, wake: Receiver<()>) {
    // A deadline that `tick` did not move must not turn into a busy loop.
    let mut last_tick = None;
    loop {
        let deadline = rt.hub.borrow().next_deadline();
        let fire = async {
            match deadline {
                Some(ms) => {
                    let ms = match last_tick {
                        Some(t) if ms <= t => t + 1,
                        _ => ms,
                    };
                    Timer::at(rt.instant_at(ms)).await;
                    true
                }
                None => smol::future::pending().await,
            }
        };
        let woken = async {
            if wake.recv().await.is_err() {
                smol::future::pending::<()>().await;
            }
            false
        };
        if fire.or(woken).await {
            last_tick = Some(rt.feed(|h, now| {
                h.tick(now);
                now
            }));
        }
    }
}

/// Forwards SIGINT/SIGTERM/SIGHUP to the stop channel.
async fn signal_task(rt: Rc<Runtime>) {
    use async_signal::{Signal, Signals};
    let mut signals = match Signals::new([Signal::Int, Signal::Term, Signal::Hup]) {
        Ok(s) => s,
        Err(e) => {
            warn!("cannot watch for signals: {e}");
            return;
        }
    };
    while let Some(sig) = signals.next().await {
        let name = match sig {
            Ok(Signal::Int) => "SIGINT",
            Ok(Signal::Term) => "SIGTERM",
            Ok(Signal::Hup) => "SIGHUP",
            _ => continue,
        };
        rt.stop(Stop::Signal(name));
    }
}

/// The hub's view of the configuration.
pub fn hub_parts(cfg: &Config) -> (Vec<UpstreamSpec>, HubOptions) {
    let specs = cfg
        .servers
        .iter()
        .map(|s| {
            let mut u = UpstreamSpec::new(&s.name);
            u.prefix = s.prefix.clone();
            u.tools_allow = s.tools_allow.clone();
            u.tools_deny = s.tools_deny.clone();
            if let Some(t) = s.timeout_ms {
                u.timeout_ms = t;
            }
            if let Some(r) = &s.revisions {
                u.revisions = r.clone();
            }
            u.trusted = s.trusted;
            u
        })
        .collect();
    let mut opts = HubOptions { separator: cfg.separator.clone(), ..HubOptions::default() };
    let limits = crate::limits::get();
    opts.max_pending = opts.max_pending.min(limits.max_in_flight);
    opts.max_clients = opts.max_clients.min(limits.max_sessions);
    if !cfg.roots.is_empty() {
        let roots: Vec<serde_json::Value> = cfg
            .roots
            .iter()
            .map(|r| match &r.name {
                Some(n) => serde_json::json!({"uri": r.uri, "name": n}),
                None => serde_json::json!({"uri": r.uri}),
            })
            .collect();
        opts.roots = Some(serde_json::Value::Array(roots));
    }
    opts.cache_ttl_ms = cfg.cache_ttl_ms.unwrap_or(opts.cache_ttl_ms);
    opts.cache_public = cfg.cache_public.unwrap_or(opts.cache_public);
    opts.input_ttl_ms = cfg.input_ttl_ms.unwrap_or(opts.input_ttl_ms);
    opts.policy = cfg.policy.clone();
    opts.cursor_key = {
        use nanorand::Rng as _;
        nanorand::WyRand::new().generate::<u64>()
    };
    (specs, opts)
}

/// Where in the config file the hub's objection points.
pub(crate) fn hub_error_position(cfg: &Config, e: &hub::ConfigError) -> Option<String> {
    let server = |name: &str| crate::jsonpos::Path::root().key("mcpServers").key(name);
    let path = match e {
        hub::ConfigError::PrefixCollision(_, b) => {
            let p = server(b);
            if cfg.servers.iter().any(|s| s.name == *b && s.prefix != s.name) {
                p.key("prefix")
            } else {
                p
            }
        }
        hub::ConfigError::UnknownRevision { server: name, revision } => {
            let s = cfg.servers.iter().find(|s| s.name == *name)?;
            let i = s.revisions.as_ref()?.iter().position(|r| r == revision)?;
            server(name).key("revisions").idx(i)
        }
        hub::ConfigError::NoUsableRevision(name) => server(name).key("revisions"),
        hub::ConfigError::BadSeparator(_) => crate::jsonpos::Path::root().key("separator"),
        _ => return None,
    };
    cfg.position(&path)
}

/// `mcpx serve`. Returns the process exit code.
pub fn main(args: ServeArgs) -> i32 {
    // Level: --log-level, else MCPX_LOG, else the config's logLevel, else info.
    let env_level = match std::env::var("MCPX_LOG") {
        Ok(v) if !v.is_empty() => match Level::parse(&v) {
            Some(l) => Some(l),
            None => {
                warn!("MCPX_LOG={v:?} is not a log level (error, warn, info or debug); ignored");
                None
            }
        },
        _ => None,
    };
    let fixed_level = args.log_level.or(env_level);
    log::set_level(fixed_level.unwrap_or(Level::Info));

    let cfg = match config::load(args.config.as_deref(), &config::process_env) {
        Ok(c) => c,
        Err(e) => {
            for problem in &e.0 {
                error!("{problem}");
            }
            return 1;
        }
    };
    if let (None, Some(l)) = (fixed_level, cfg.log_level) {
        log::set_level(l);
    }
    match &cfg.source {
        Source::File(p) => info!("config loaded from {}", p.display()),
        Source::BuiltIn => {
            let looked: Vec<String> =
                config::search_path(&config::process_env).iter().map(|p| p.display().to_string()).collect();
            info!(
                "no config file found (looked for {}); serving the built-in demo: two example servers",
                looked.join(", ")
            );
        }
    }
    for w in &cfg.warnings {
        warn!("{w}");
    }
    for d in &cfg.disabled {
        info!("server {d}: disabled in the config");
    }
    if cfg.servers.is_empty() {
        warn!("no servers to run: the hub will serve an empty catalog");
    } else {
        let names: Vec<&str> = cfg.servers.iter().map(|s| s.name.as_str()).collect();
        info!("servers: {}", names.join(", "));
    }

    let hub = match crate::cmd::build_hub(&cfg) {
        Ok(h) => h,
        Err(e) => {
            error!("{e}");
            return 1;
        }
    };
    let http = http_config(&args, &cfg);
    let ex = Rc::new(LocalExecutor::new());
    // Pipes and sockets: polled by the reactor, non-blocking until `restore`
    // is dropped (see `stdfd`); files and terminals: a helper thread each.
    let io = crate::stdfd::stdio(64 << 10, false);
    let transports = Transports { stdio: args.serves_stdio(), http };
    let run = serve(ex.clone(), hub, &cfg, transports, io.input, io.output, supervise::Options::default());
    let status = smol::block_on(ex.run(run));
    drop(io.restore);
    status
}

/// Which transports `serve` offers clients.
pub struct Transports {
    /// One client on `input`/`output`.
    pub stdio: bool,
    /// The HTTP server (`--http`).
    pub http: Option<HttpConfig>,
}

/// Starts the transport of configured server `s` as upstream `id`.
fn spawn_upstream(
    ex: &Rc<LocalExecutor<'static>>,
    id: UpstreamId,
    s: &config::ServerConfig,
    sup_opts: &supervise::Options,
    events: &Rc<dyn Events>,
    catalog: &Rc<dyn remote::Catalog>,
) -> (Upstream, Task<()>) {
    match &s.remote {
        Some(r) => {
            let spec = RemoteSpec {
                name: s.name.clone(),
                url: r.url.clone(),
                headers: r.headers.clone(),
                ca_file: r.ca_file.clone(),
                timeout_ms: s.timeout_ms.unwrap_or(60_000),
                mode: r.mode,
                oauth: r.oauth.clone(),
            };
            let mut opts = remote::Options::default();
            opts.restart.max_restarts = s.max_restarts;
            let (r, task) = remote::spawn(ex, id, spec, opts, events.clone(), Some(catalog.clone()));
            (Upstream::Remote(r), task)
        }
        None => {
            let spec = ProcessSpec {
                name: s.name.clone(),
                command: s.command.clone(),
                args: s.args.clone(),
                env: s.env.clone(),
                env_policy: s.env_policy.clone(),
                cwd: s.cwd.clone(),
            };
            let mut opts = sup_opts.clone();
            opts.restart.max_restarts = s.max_restarts;
            let (u, task) = supervise::spawn(ex, id, spec, opts, events.clone());
            (Upstream::Local(u), task)
        }
    }
}

/// After the end of input: waits (up to `limit`) for the answers to client
/// `c`'s requests in flight, unless something else stops mcpx first.
async fn await_answers(rt: &Runtime, c: ClientId, stop_rx: &Receiver<Stop>, limit: Duration) {
    let n = rt.inflight(c);
    if n == 0 {
        return;
    }
    info!("end of input; waiting for the answers to {n} request(s)");
    let deadline = Instant::now() + limit;
    while rt.inflight(c) > 0 {
        if Instant::now() >= deadline {
            warn!("end of input: gave up waiting for {} answer(s)", rt.inflight(c));
            break;
        }
        let stop = async { stop_rx.recv().await.ok() };
        let poll = async {
            Timer::after(Duration::from_millis(20)).await;
            None
        };
        if let Some(s) = stop.or(poll).await {
            debug!("while draining: {s:?}");
            break;
        }
    }
}

/// Runs the hub for its clients (one on `input`/`output`, and/or HTTP
/// sessions) until the stdio session ends or a signal comes, and every
/// server is stopped. Returns the exit code.
pub async fn serve<R, W>(
    ex: Rc<LocalExecutor<'static>>,
    hub: Hub,
    cfg: &Config,
    transports: Transports,
    input: R,
    output: W,
    sup_opts: supervise::Options,
) -> i32
where
    R: smol::io::AsyncRead + Unpin + 'static,
    W: smol::io::AsyncWrite + Unpin + 'static,
{
    let names = cfg.servers.iter().map(|s| s.name.clone()).collect();
    let (rt, tick_rx, stop_rx) = Runtime::new(hub, names);
    let events: Rc<dyn Events> = Rc::new(HubEvents(rt.clone()));
    let catalog: Rc<dyn remote::Catalog> = Rc::new(HubCatalog(rt.clone()));
    // First, so that signals are ours before any child runs.
    let _signals = ex.spawn(signal_task(rt.clone()));
    smol::future::yield_now().await;

    // Bind before any server starts: a busy port or an unsafe address stops mcpx.
    let mut _http_server = None;
    if let Some(hc) = transports.http {
        let addr = hc.addr;
        let frt = rt.clone();
        let link = HubLink {
            feed: Rc::new(move |f: http::HubCall<'_>| frt.feed(|hub, now| f(hub, now))),
            log: Rc::new(|level, msg| log::write(log_level(level), format_args!("{msg}"))),
        };
        match http::bind(hc, link) {
            Ok((h, server)) => {
                info!("serving MCP over HTTP at http://{}/mcp", h.local_addr());
                *rt.http.borrow_mut() = Some(h);
                _http_server = Some(ex.spawn(server));
            }
            Err(e) => {
                error!("cannot serve HTTP on {addr}: {e}");
                return 1;
            }
        }
    }

    let mut tasks = Vec::new();
    for (id, s) in cfg.servers.iter().enumerate() {
        let (up, task) = spawn_upstream(&ex, id, s, &sup_opts, &events, &catalog);
        rt.upstreams.borrow_mut().push(up);
        tasks.push(task);
    }
    let _timer = ex.spawn(timer_task(rt.clone(), tick_rx));
    let client = transports.stdio.then(|| crate::stdio::start(&ex, &rt, input, output));

    // Longest a request can stay unanswered: the hub answers every forwarded
    // request by its server's timeout.
    let longest = cfg.servers.iter().map(|s| s.timeout_ms.unwrap_or(60_000)).max().unwrap_or(0);
    let drain_limit = Duration::from_millis(longest.min(600_000) + 2_000);

    let mut code = 0;
    let stop = stop_rx.recv().await;
    // Open `subscriptions/listen` requests are answered (and their
    // `notifications/cancelled` sent) first, while the clients and servers
    // are still there: nothing else would answer them, and the wait for the
    // stdio client's answers below would wait for them in vain.
    rt.feed(|h, _| h.shutdown());
    match stop {
        Ok(Stop::InputClosed) => {
            let c = client.as_ref().map_or(0, |cl| cl.id);
            await_answers(&rt, c, &stop_rx, drain_limit).await;
            info!("end of input: shutting down");
        }
        Ok(Stop::Signal(s)) => info!("{s}: shutting down"),
        Ok(Stop::OutputClosed) => info!("client connection closed: shutting down"),
        Ok(Stop::InputError(e)) | Ok(Stop::OutputError(e)) => {
            info!("{e}; shutting down");
        }
        Err(_) => code = 1,
    }

    if _http_server.is_some() {
        // Give the HTTP exchanges a moment to write those answers.
        Timer::after(Duration::from_millis(50)).await;
    }
    rt.closing.set(true);
    // No new HTTP requests; open exchanges end with the connections.
    drop(_http_server.take());
    if let Some(client) = client {
        rt.client_disconnected(client.id);
        // Flush what is queued for the client (bounded: it may not be reading).
        let flush = async {
            client.writer.await;
            true
        };
        let limit = async {
            Timer::after(Duration::from_secs(2)).await;
            false
        };
        if !flush.or(limit).await {
            debug!("stdout not drained within 2 s");
        }
        drop(client.reader);
    }

    let ups: Vec<Upstream> = rt.upstreams.borrow().clone();
    for up in &ups {
        up.shutdown();
    }
    let all_stopped = async {
        for t in tasks {
            t.await;
        }
    };
    let second_signal = async {
        loop {
            match stop_rx.recv().await {
                Ok(Stop::Signal(s)) => {
                    warn!("{s} again: killing the servers' process groups now");
                    for up in &ups {
                        up.kill_now();
                    }
                }
                Ok(_) => {}
                Err(_) => smol::future::pending::<()>().await,
            }
        }
    };
    all_stopped.or(second_signal).await;
    info!("all servers stopped");
    code
}
