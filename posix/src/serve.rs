//! `mcpx serve`: the hub on stdio, with its servers supervised.
//!
//! Everything runs on one thread, on a `smol::LocalExecutor`. The pure
//! [`Hub`] is shared as `Rc<RefCell<_>>`; every input (a client line, a
//! server line, a process start or exit, a timer) goes through
//! [`Runtime::feed`], which reads the clock once, calls the hub, and routes
//! everything `poll_output` returns before anyone else touches the hub.
//! One timer task sleeps until `next_deadline()` and calls `tick`.
//!
//! Shutdown (end of stdin, a closed stdout, SIGINT/SIGTERM) is one
//! drain: the hub refuses new requests; the requests in flight of every
//! client (stdio and HTTP) are answered, within the longest server timeout
//! after end of stdin or the grace period (`shutdownGraceMs`) after a
//! signal, and what is still open then is answered with an error; the HTTP
//! connections write their answers; then the hub is told the stdio client
//! is gone, stdout is flushed, and every server is stopped (stdin closed,
//! SIGTERM, SIGKILL to its process group). A second signal ends the drain
//! at once and kills the groups. SIGHUP reloads the config (see `reload`).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use smol::channel::{self, Receiver, Sender};
use smol::future::FutureExt as _;
use smol::{LocalExecutor, Task, Timer};

use crate::cli::ServeArgs;
use crate::cluster::runtime as cluster;
use crate::config::{self, Config, Source};
use crate::http::{self, Http, HttpConfig, HubLink};
use crate::hub::{self, About, ClientId, Hub, HubOptions, IdKey, ModernHeaders, Output, UpstreamId, UpstreamSpec, Upward};
use crate::log::{self, Level};
use crate::outbox::{Outbox, PushError};
use crate::reload::ServerAsk;
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
    /// Queues `msg`; a child takes the bytes as they are, a remote
    /// transport what `about` says of them too.
    fn send(&self, msg: Vec<u8>, about: Upward) -> Result<(), (PushError, Vec<u8>)> {
        match self {
            Upstream::Local(u) => u.send(msg),
            Upstream::Remote(r) => r.send(msg, about),
        }
    }
    /// The largest message it takes, if its transport has a cap.
    fn max_message(&self) -> Option<usize> {
        match self {
            Upstream::Local(_) => Some(crate::stdio::max_line()),
            Upstream::Remote(_) => None,
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
    /// By upstream id; a config reload adds, stops and replaces them
    /// (see `reload`). `None` while a lazy server sleeps.
    upstreams: RefCell<Vec<Option<Upstream>>>,
    /// Their supervisor tasks (taken while a reload stops one).
    tasks: RefCell<Vec<Option<Task<()>>>>,
    /// Their names ("" for a slot a reload freed).
    names: RefCell<Vec<String>>,
    clients: RefCell<BTreeMap<ClientId, ClientConn>>,
    /// The HTTP server, when `--http` is given: its sessions are hub clients too.
    http: RefCell<Option<Http>>,
    /// Wakes the timer task: the hub's next deadline comes before `armed`.
    tick_wake: Sender<()>,
    /// The hub deadline the timer task sleeps until (`None`: no deadline).
    armed: Cell<Option<u64>>,
    /// The hub's `Output::Power` and `Output::ListsRead`, for the task that
    /// runs the servers (`reload`).
    server_asks: (Sender<(UpstreamId, ServerAsk)>, Receiver<(UpstreamId, ServerAsk)>),
    stop: Sender<Stop>,
    closing: Cell<bool>,
    /// The task state file (`task_store`), with an HTTP listener.
    tasks_file: RefCell<Option<std::path::PathBuf>>,
    /// The queue of the cluster task (`cluster::runtime`), with a store or
    /// a hop configured.
    cluster_jobs: RefCell<Option<Sender<cluster::Job>>>,
}

impl Runtime {
    pub fn new(hub: Hub, names: Vec<String>) -> (Rc<Runtime>, Receiver<()>, Receiver<Stop>) {
        let (tick_wake, tick_rx) = channel::bounded(1);
        let (stop, stop_rx) = channel::bounded(16);
        let rt = Runtime {
            hub: RefCell::new(hub),
            start: Instant::now(),
            upstreams: RefCell::new(Vec::new()),
            tasks: RefCell::new(Vec::new()),
            names: RefCell::new(names),
            clients: RefCell::new(BTreeMap::new()),
            http: RefCell::new(None),
            tick_wake,
            armed: Cell::new(None),
            server_asks: channel::bounded(256),
            stop,
            closing: Cell::new(false),
            tasks_file: RefCell::new(None),
            cluster_jobs: RefCell::new(None),
        };
        (Rc::new(rt), tick_rx, stop_rx)
    }

    /// Queues `job` for the cluster task (`cluster::runtime`); without one,
    /// or with its queue full, the hub is answered now that it cannot be done.
    pub(crate) fn cluster_job(&self, job: cluster::Job) {
        let job = match self.cluster_jobs.borrow().as_ref() {
            Some(q) => match q.try_send(job) {
                Ok(()) => return,
                Err(e) => e.into_inner(),
            },
            None => job,
        };
        let why = match self.cluster_jobs.borrow().is_some() {
            true => format!("too many shared-state and hop requests queued (at most {})", cluster::MAX_IN_FLIGHT),
            false => "no shared state store or cluster hop is running in this mcpx".to_string(),
        };
        let now = self.now_ms();
        cluster::refuse(&mut self.hub.borrow_mut(), job, hub::shared::Answer::Unavailable(why.clone()), Err(why), now);
    }

    /// Runs the cluster task of `cl` on `ex`: from now on the jobs
    /// queued for it ([`Runtime::cluster_job`]) are done.
    pub(crate) fn run_cluster(self: &Rc<Runtime>, ex: &Rc<LocalExecutor<'static>>, cl: Rc<cluster::Cluster>) -> Task<()> {
        let (tx, rx) = channel::bounded(cluster::MAX_IN_FLIGHT);
        *self.cluster_jobs.borrow_mut() = Some(tx);
        ex.spawn(cl.run(ex.clone(), self.clone(), rx))
    }

    /// The MCP headers of a modern request forwarded over the hop (as a
    /// client of the owner would send them).
    pub(crate) fn modern_headers(&self, msg: &[u8]) -> Vec<(String, Vec<u8>)> {
        self.hub.borrow().client_request_headers(msg).unwrap_or_default()
    }

    /// One message of the owner's answer to client `c`'s forwarded request
    /// `request`, written to the client as the hub would; true when it was
    /// the response.
    pub(crate) fn deliver_forwarded(&self, c: ClientId, request: &IdKey, msg: Vec<u8>) -> bool {
        use mcpx_core::envelope::{Envelope, Kind};
        let Ok(env) = Envelope::parse(&msg) else {
            warn!("cluster hop: an answer message for client {c} is not JSON-RPC; dropped");
            return false;
        };
        let id = env.id_bytes().map(|id| {
            let start = id.as_ptr() as usize - msg.as_ptr() as usize;
            start..start + id.len()
        });
        let (about, response) = match env.kind() {
            Kind::Result | Kind::Error => (About::Reply { id }, true),
            Kind::Notification => (About::Notification { unsolicited: false, related: Some(request.clone()) }, false),
            Kind::Request => {
                warn!("cluster hop: the owner sent client {c} a request on a forwarded answer; dropped");
                return false;
            }
        };
        self.route(Output::ToClient(c, msg, about));
        response
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
        // The timer task is woken only for a deadline before the one it
        // sleeps until: a later one (a new call's timeout) waits, and one
        // that went away (an answered call) costs one early `tick` that
        // finds nothing due. So no timer is set or reset per message.
        if let Some(d) = self.hub.borrow().next_deadline() {
            if self.armed.get().is_none_or(|a| d < a) {
                self.armed.set(Some(d));
                let _ = self.tick_wake.try_send(());
            }
        }
    }

    /// The name of server `u` ("?" for no server, "" for a free slot).
    pub(crate) fn name(&self, u: UpstreamId) -> String {
        self.names.borrow().get(u).map_or_else(|| "?".to_string(), String::clone)
    }

    /// The id of the running server named `name`.
    pub(crate) fn upstream_id(&self, name: &str) -> Option<UpstreamId> {
        self.names.borrow().iter().position(|n| n == name)
    }

    /// Is mcpx shutting down?
    pub(crate) fn closing(&self) -> bool {
        self.closing.get()
    }

    /// Stops server `u` for good (a reload removed or replaced it): the hub
    /// first answers its requests in flight (saying `why`) and drops what it
    /// offered, then its process is stopped. Completes once it is gone, so
    /// that its slot can be given to another server.
    /// Its instances (`"isolation": "client"`) go with it.
    pub(crate) async fn stop_upstream(&self, u: UpstreamId, why: &str) {
        let instances = self.hub().upstream_instances(u);
        self.feed(|h, now| h.remove_upstream(u, why, now));
        self.stop_slots(std::iter::once(u).chain(instances)).await;
    }

    /// Restarts server `u` with its changed entry `spec` in its slot (a
    /// reload): the hub keeps its tools listed and holds its requests
    /// ([`Hub::replace_upstream`]) while its process and instances are
    /// stopped. True when its new entry is to be started now, false when
    /// it sleeps until used (`current`: its lists are for what it runs now).
    pub(crate) async fn replace_upstream(&self, u: UpstreamId, spec: UpstreamSpec, why: &str, current: bool) -> Result<bool, hub::ConfigError> {
        let instances = self.hub().upstream_instances(u);
        self.feed(|h, now| h.replace_upstream(u, spec, why, now))?;
        self.stop_process(u).await;
        self.stop_slots(instances).await;
        Ok(self.feed(|h, now| h.upstream_replaced(u, current, now)))
    }

    /// Stops the processes of `slots` and frees them.
    async fn stop_slots(&self, slots: impl IntoIterator<Item = UpstreamId>) {
        for slot in slots {
            self.stop_process(slot).await;
            if let Some(n) = self.names.borrow_mut().get_mut(slot) {
                n.clear();
            }
        }
    }

    /// Stops server `u`'s process (or connection) and completes once it is
    /// gone; the slot keeps its name, to be started again.
    pub(crate) async fn stop_process(&self, u: UpstreamId) {
        if let Some(Some(up)) = self.upstreams.borrow_mut().get_mut(u).map(Option::take) {
            up.shutdown();
        }
        let task = self.tasks.borrow_mut().get_mut(u).and_then(Option::take);
        if let Some(task) = task {
            task.await;
        }
    }

    /// Does slot `u` have a process (or connection) running or stopping?
    pub(crate) fn has_process(&self, u: UpstreamId) -> bool {
        self.tasks.borrow().get(u).is_some_and(Option::is_some)
    }

    /// The hub's requests to start or stop a server's process and to keep
    /// its lists.
    pub(crate) fn server_asks(&self) -> Receiver<(UpstreamId, ServerAsk)> {
        self.server_asks.1.clone()
    }

    /// The hub, for what the runtime asks it outside of `feed`.
    pub(crate) fn hub(&self) -> std::cell::Ref<'_, Hub> {
        self.hub.borrow()
    }

    /// Passes the hub's `ask` for server `u` to the task that runs the servers.
    fn ask_server(&self, u: UpstreamId, ask: ServerAsk) {
        if !self.closing.get() && self.server_asks.0.try_send((u, ask)).is_err() {
            error!("server {}: {ask:?} request dropped (too many waiting)", self.name(u));
        }
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
            Output::ToClient(c, msg, about) => {
                let clients = self.clients.borrow();
                let Some(conn) = clients.get(&c) else {
                    debug!("message for client {c}, which is gone, dropped");
                    return;
                };
                // An answer is never dropped for a full queue: the client's
                // reader waits instead (see `stdio`).
                let pushed = match about {
                    About::Reply { .. } | About::Batch => conn.out.push_answer(msg),
                    _ => conn.out.try_push(msg),
                };
                match pushed {
                    Ok(()) => {}
                    Err((PushError::Closed, _)) if self.closing.get() => {}
                    Err((e, _)) => error!("message to the client dropped: {e}"),
                }
            }
            Output::ClientInitialized(c, _) => {
                if let Some(conn) = self.clients.borrow().get(&c) {
                    let _ = conn.init_answered.0.try_send(());
                }
            }
            Output::ToUpstream(u, msg, about) => {
                let refused = {
                    let ups = self.upstreams.borrow();
                    let Some(Some(up)) = ups.get(u) else { return };
                    match up.max_message() {
                        // The tighter limit is checked before forwarding: the
                        // server would drop the line, the client wait for nothing.
                        Some(max) if msg.len() > max => {
                            Some((format!("the message is {} bytes, over {}", msg.len(), crate::stdio::line_limit()), msg))
                        }
                        _ => match up.send(msg, about) {
                            Ok(()) => None,
                            Err((PushError::Closed, _)) => {
                                debug!("server {}: not running; message to it dropped", self.name(u));
                                None
                            }
                            Err((e, msg)) => Some((format!("{e} (limit: {} bytes queued per server)", up.queue_bytes()), msg)),
                        },
                    }
                };
                if let Some((why, msg)) = refused {
                    // Never lose a request silently: the hub answers it now
                    // (naming the server and the limit); `drain` routes that
                    // answer next.
                    warn!("server {}: message to it refused: {why}", self.name(u));
                    let now = self.now_ms();
                    self.hub.borrow_mut().upstream_refused(u, &msg, &why, now);
                }
            }
            Output::RestartUpstream(u, why) => {
                if self.closing.get() {
                    return;
                }
                warn!("server {}: restarting it: {why}", self.name(u));
                if let Some(Some(up)) = self.upstreams.borrow().get(u) {
                    up.restart(why);
                }
            }
            Output::Power(u, p) => self.ask_server(u, ServerAsk::Power(p)),
            Output::ListsRead(u) => self.ask_server(u, ServerAsk::KeepLists),
            Output::CloseClient(c) => {
                if let Some(conn) = self.clients.borrow().get(&c) {
                    debug!("closing client {c}");
                    conn.out.close();
                }
            }
            Output::Log(level, msg) => log::write(log_level(level), format_args!("{msg}")),
            // The store and the hop between replicas (issue 16).
            Output::Shared(ask) => self.cluster_job(cluster::Job::Ask(ask)),
            Output::Forward { client, request, msg, principal, to } => {
                self.cluster_job(cluster::Job::Forward { client, request, msg, principal, to })
            }
            Output::SaveTasks(bytes) => {
                if let Some(p) = self.tasks_file.borrow().as_deref() {
                    if let Err(e) = crate::task_store::save(p, &bytes) {
                        error!("cannot write the task state file {}: {e} (tasks will not survive a restart)", p.display());
                    }
                }
            }
        }
    }

    /// Keeps the hub's tasks in the state file of the listener on `addr`
    /// from now on, and gives the hub those of the last run.
    fn keep_tasks(&self, cfg: &Config, addr: std::net::SocketAddr) {
        let Some(p) = crate::task_store::path(&config::process_env, &cfg.source, addr) else {
            warn!("no state folder ($XDG_STATE_HOME or $HOME): tasks will not survive a restart");
            return;
        };
        let saved = crate::task_store::load(&p).unwrap_or_else(|e| {
            warn!("cannot read the task state file {}: {e}", p.display());
            None
        });
        debug!("task state file: {}", p.display());
        *self.tasks_file.borrow_mut() = Some(p);
        self.feed(|h, now| h.restore_tasks(saved.as_deref(), now));
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

    /// A stdio client's line over [`crate::stdio::max_line`], skipped:
    /// handed to the hub with the limit named.
    pub fn client_frame_too_large(&self, c: ClientId, len: usize, head: &[u8], tail: &[u8]) {
        warn!("client sent a message of {len} bytes, over the limit; answered with an error");
        let limit = crate::stdio::line_limit();
        let big = crate::hub::Oversize { len, max: crate::stdio::max_line(), limit: &limit, head, tail };
        self.feed(|h, _| h.client_frame_too_large(c, &big));
    }

    pub fn client_disconnected(&self, c: ClientId) {
        self.feed(|h, _| h.client_disconnected(c));
        if let Some(conn) = self.clients.borrow_mut().remove(&c) {
            conn.out.close();
        }
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
    h.hop = cluster::hop_config(&cfg.cluster);
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
    fn message_on(&self, id: UpstreamId, line: &[u8], request: &[u8]) {
        self.0.feed(|h, now| h.upstream_message_on(id, line, request, now));
    }
    fn garbage(&self, id: UpstreamId, what: &str) {
        self.0.feed(|h, _| h.upstream_garbage(id, what));
    }
    fn too_large(&self, id: UpstreamId, big: &crate::hub::Oversize<'_>, on: Option<&[u8]>) {
        self.0.feed(|h, now| h.upstream_too_large(id, big, on, now));
    }
    fn exited(&self, id: UpstreamId, reason: &str, stderr_tail: &str, next: crate::backoff::Next) {
        if self.0.closing.get() {
            // Stopped by us at shutdown: nothing left for the hub to do about it.
            return;
        }
        self.0.feed(|h, now| h.upstream_exited(id, reason, stderr_tail, next, now));
    }
}

/// What a remote server's transport asks of the hub.
struct HubCatalog(Rc<Runtime>);

impl remote::Catalog for HubCatalog {
    fn headers_again(&self, id: UpstreamId, msg: &[u8]) -> Option<ModernHeaders> {
        self.0.hub.borrow().upstream_headers_again(id, msg)
    }
    fn relist(&self, id: UpstreamId) {
        if !self.0.closing.get() {
            self.0.feed(|h, now| h.relist_upstream(id, now));
        }
    }
}

/// Sleeps until the hub's next deadline (or until woken because an earlier
/// one came, see `Runtime::drain`) and calls `tick`.
async fn timer_task(rt: Rc<Runtime>, wake: Receiver<()>) {
    // A deadline that `tick` did not move must not turn into a busy loop.
    let mut last_tick = None;
    loop {
        // A wake-up the last `tick` asked for is answered by this pass.
        while wake.try_recv().is_ok() {}
        let deadline = rt.hub.borrow().next_deadline();
        rt.armed.set(deadline);
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

/// Forwards SIGINT/SIGTERM to the stop channel; SIGHUP reloads the
/// config (see `reload`).
async fn signal_task(rt: Rc<Runtime>) {
    use crate::signals::{SignalEvent, Watch};
    let mut signals = match Watch::new() {
        Ok(s) => s,
        Err(e) => {
            warn!("cannot watch for signals: {e}");
            return;
        }
    };
    while let Some(sig) = signals.next().await {
        match sig {
            SignalEvent::Stop(name) => rt.stop(Stop::Signal(name)),
            SignalEvent::Hangup => crate::reload::request(),
        }
    }
}

/// The hub's view of the configuration.
pub fn hub_parts(cfg: &Config) -> (Vec<UpstreamSpec>, HubOptions) {
    let specs = cfg.servers.iter().map(upstream_spec).collect();
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
    opts.startup_wait_ms = cfg.startup_wait_ms.unwrap_or(opts.startup_wait_ms);
    cfg.tasks.apply(&mut opts.tasks);
    opts.policy = cfg.policy.clone();
    opts.cluster = cfg.cluster.hub_options();
    opts.cursor_key = {
        use nanorand::Rng as _;
        nanorand::WyRand::new().generate::<u64>()
    };
    (specs, opts)
}

/// The hub's view of one configured server.
pub(crate) fn upstream_spec(s: &config::ServerConfig) -> UpstreamSpec {
    let mut u = UpstreamSpec::new(&s.name);
    u.prefix = s.prefix.clone();
    u.tools_allow = s.tools_allow.clone();
    u.tools_deny = s.tools_deny.clone();
    if let Some(t) = s.timeout_ms {
        u.timeout_ms = t;
    }
    u.lazy = s.power.lazy;
    u.idle_ms = s.power.idle_stop_ms.unwrap_or(0);
    if let Some(r) = &s.revisions {
        u.revisions = r.clone();
    }
    u.trusted = s.trusted;
    u.isolation = s.isolation;
    u.remote = s.remote.is_some();
    u
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
        Ok(mut h) => {
            h.set_call_log(log::enabled(Level::Debug));
            h
        }
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
    let reload = crate::reload::Settings { explicit: args.config.clone(), level_fixed: fixed_level.is_some() };
    let transports = Transports { stdio: args.serves_stdio(), http, reload };
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
    /// How the config is reloaded while serving.
    pub reload: crate::reload::Settings,
}

/// What starting a server's transport needs (at startup, and for servers a
/// reload adds).
pub(crate) struct Spawner {
    ex: Rc<LocalExecutor<'static>>,
    sup_opts: supervise::Options,
    events: Rc<dyn Events>,
    catalog: Rc<dyn remote::Catalog>,
}

impl Spawner {
    /// Starts configured server `s` as upstream `id` (a new id, or the slot
    /// of a server [`Runtime::stop_upstream`] has stopped).
    pub(crate) fn start(&self, rt: &Runtime, id: UpstreamId, s: &config::ServerConfig) {
        let (up, task) = spawn_upstream(self, id, s);
        Self::put(rt, id, &s.name, Some(up), Some(task));
    }

    /// Gives slot `id` to server `s` without starting it (a lazy server
    /// that sleeps until used).
    pub(crate) fn reserve(&self, rt: &Runtime, id: UpstreamId, s: &config::ServerConfig) {
        Self::put(rt, id, &s.name, None, None);
    }

    fn put(rt: &Runtime, id: UpstreamId, name: &str, up: Option<Upstream>, task: Option<Task<()>>) {
        let mut ups = rt.upstreams.borrow_mut();
        let mut tasks = rt.tasks.borrow_mut();
        let mut names = rt.names.borrow_mut();
        if ups.len() <= id {
            ups.resize_with(id + 1, || None);
            tasks.resize_with(id + 1, || None);
            names.resize(id + 1, String::new());
        }
        ups[id] = up;
        tasks[id] = task;
        names[id] = name.to_string();
    }
}

/// Starts the transport of configured server `s` as upstream `id`.
fn spawn_upstream(sp: &Spawner, id: UpstreamId, s: &config::ServerConfig) -> (Upstream, Task<()>) {
    let (ex, sup_opts, events, catalog) = (&sp.ex, &sp.sup_opts, &sp.events, &sp.catalog);
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

/// How long a SIGTERM/SIGINT waits for answers unless `shutdownGraceMs` says.
pub const DEFAULT_GRACE_MS: u64 = 10_000;

/// How a drain ended.
#[derive(Debug, PartialEq, Eq)]
enum Drained {
    /// Every request answered (and, over HTTP, every answer written).
    Done,
    /// The grace period ran out first.
    TimedOut,
    /// A signal came meanwhile: end at once.
    Hurry,
}

/// The drain every shutdown starts with: the hub already refuses new
/// requests (`Hub::shutdown`); this waits up to `limit` until every open
/// request of every client is answered and every HTTP answer written. A
/// closed stdout ends the stdio client (its requests are cancelled); a
/// signal ends the wait.
async fn drain_requests(rt: &Runtime, stdio: Option<ClientId>, stop_rx: &Receiver<Stop>, limit: Duration) -> Drained {
    let deadline = Instant::now() + limit;
    let open = || rt.hub.borrow().open_requests() + rt.http.borrow().as_ref().map_or(0, Http::answering);
    if open() > 0 {
        info!("waiting up to {} ms for the answers to {} request(s) in flight", limit.as_millis(), open());
    }
    while open() > 0 {
        if Instant::now() >= deadline {
            return Drained::TimedOut;
        }
        let stop = async { stop_rx.recv().await.ok() };
        let poll = async {
            Timer::after(Duration::from_millis(10)).await;
            None
        };
        match stop.or(poll).await {
            Some(Stop::Signal(s)) => {
                warn!("{s} again: ending at once");
                return Drained::Hurry;
            }
            Some(Stop::OutputClosed | Stop::OutputError(_)) => {
                if let Some(c) = stdio {
                    rt.client_disconnected(c);
                }
            }
            Some(other) => debug!("while draining: {other:?}"),
            None => {}
        }
    }
    Drained::Done
}

/// Waits up to `limit` for the HTTP connections to write the answers the
/// hub has given them.
async fn flush_http(rt: &Runtime, limit: Duration) {
    let deadline = Instant::now() + limit;
    while rt.http.borrow().as_ref().is_some_and(|h| h.answering() > 0) && Instant::now() < deadline {
        Timer::after(Duration::from_millis(10)).await;
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

    let cluster = match cluster::Cluster::new(&cfg.cluster) {
        Ok(cl) => cl.map(Rc::new),
        Err(e) => {
            error!("{e}");
            return 1;
        }
    };
    let _cluster = cluster.clone().map(|cl| rt.run_cluster(&ex, cl));

    // Bind before any server starts: a busy port or an unsafe address stops mcpx.
    let mut _http_server = None;
    if let Some(hc) = transports.http {
        let addr = hc.addr;
        #[cfg(feature = "cluster")]
        let idle_ms = hc.limits.session_idle_ms;
        let frt = rt.clone();
        let link = HubLink {
            feed: Rc::new(move |f: http::HubCall<'_>| frt.feed(|hub, now| f(hub, now))),
            log: Rc::new(|level, msg| log::write(log_level(level), format_args!("{msg}"))),
        };
        match http::bind(hc, link) {
            Ok((h, server)) => {
                info!("serving MCP over HTTP at http://{}/mcp", h.local_addr());
                #[cfg(feature = "cluster")]
                if let Some(dir) = cluster.as_ref().and_then(|cl| cl.directory(idle_ms)) {
                    h.use_directory(dir);
                }
                rt.keep_tasks(cfg, h.local_addr());
                *rt.http.borrow_mut() = Some(h);
                _http_server = Some(ex.spawn(server));
            }
            Err(e) => {
                error!("cannot serve HTTP on {addr}: {e}");
                return 1;
            }
        }
    }

    let spawner = Spawner { ex: ex.clone(), sup_opts, events, catalog };
    // The lists of lazy servers, from the shared store (bounded by its timeout) or the disk.
    let lists = crate::reload::lists::Lists::new(&config::process_env, cluster.clone());
    crate::reload::start_servers(&rt, &spawner, cfg, &lists).await;
    let reloads = ex.spawn(crate::reload::run(rt.clone(), spawner, cfg.clone(), transports.reload, lists));
    let _timer = ex.spawn(timer_task(rt.clone(), tick_rx));
    let client = transports.stdio.then(|| crate::stdio::start(&ex, &rt, input, output));

    // End of input waits as long as a request can stay unanswered (the hub
    // answers every forwarded request by its server's timeout); a signal
    // waits the grace period.
    let longest = cfg.servers.iter().map(|s| s.timeout_ms.unwrap_or(60_000)).max().unwrap_or(0);
    let input_limit = Duration::from_millis(longest.min(600_000) + 2_000);
    let grace = Duration::from_millis(cfg.shutdown_grace_ms.unwrap_or(DEFAULT_GRACE_MS));

    let mut code = 0;
    let stop = stop_rx.recv().await;
    // From here the hub refuses new requests. Open `subscriptions/listen`
    // requests are answered (and their `notifications/cancelled` sent)
    // first, while the clients and servers are still there: nothing else
    // would answer them, and the drain would wait for them in vain.
    rt.feed(|h, _| h.shutdown());
    let stdio_id = client.as_ref().map(|cl| cl.id);
    let limit = match &stop {
        Ok(Stop::InputClosed) => {
            info!("end of input: shutting down");
            input_limit
        }
        Ok(Stop::Signal(s)) => {
            info!("{s}: shutting down (a second signal ends at once)");
            grace
        }
        Ok(Stop::OutputClosed) => {
            info!("client connection closed: shutting down");
            grace
        }
        Ok(Stop::InputError(e) | Stop::OutputError(e)) => {
            info!("{e}; shutting down");
            grace
        }
        Err(_) => {
            code = 1;
            grace
        }
    };
    if let (Some(c), Ok(Stop::OutputClosed | Stop::OutputError(_))) = (stdio_id, &stop) {
        // Nobody reads its answers: its requests are cancelled.
        rt.client_disconnected(c);
    }
    let drained = drain_requests(&rt, stdio_id, &stop_rx, limit).await;
    let open = rt.hub.borrow().open_requests();
    if open > 0 {
        warn!("shutting down: answering {open} request(s) still in flight with an error");
        rt.feed(|h, _| h.abandon_requests(limit.as_millis() as u64));
    }
    let hurry = drained == Drained::Hurry;
    // Even in a hurry the answers just given get a moment to be written.
    let flush_limit = Duration::from_millis(if hurry { 200 } else { 2_000 });
    flush_http(&rt, flush_limit).await;
    rt.closing.set(true);
    // The task that runs the servers ends now (keeping lazy servers' lists).
    crate::reload::request();
    // Connections left are idle (or standalone streams): closed with the
    // server, their sessions gone from the directory first.
    #[cfg(feature = "cluster")]
    {
        // Not borrowed across the await: the listener's tasks run meanwhile.
        let http = rt.http.borrow().clone();
        if let Some(h) = http {
            h.forget_sessions(flush_limit).await;
        }
    }
    drop(_http_server.take());
    if let Some(client) = client {
        rt.client_disconnected(client.id);
        // Flush what is queued for the client (bounded: it may not be reading).
        let flush = async {
            client.writer.await;
            true
        };
        let limit = async {
            Timer::after(flush_limit).await;
            false
        };
        if !flush.or(limit).await {
            debug!("stdout not drained within {} ms", flush_limit.as_millis());
        }
        drop(client.reader);
    }

    let ups: Vec<Upstream> = rt.upstreams.borrow().iter().flatten().cloned().collect();
    for up in &ups {
        if hurry {
            up.kill_now();
        } else {
            up.shutdown();
        }
    }
    let tasks: Vec<Task<()>> = rt.tasks.borrow_mut().drain(..).flatten().collect();
    let all_stopped = async {
        for t in tasks {
            t.await;
        }
        // A reload that was stopping a server finishes that, then ends.
        reloads.await;
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
