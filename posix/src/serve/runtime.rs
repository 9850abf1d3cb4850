//! The state every task of `mcpx serve` shares: the hub, the servers'
//! handles, the clients' queues, and the one clock; [`Runtime::feed`] is
//! the one way into the hub, and `route` the one way out of it.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::io;
use std::time::{Duration, Instant};

use smol::channel::{self, Receiver, Sender};
use smol::future::FutureExt as _;
use smol::{Task, Timer};

use super::cluster_jobs::{self as cluster, Job};
use crate::config::{self, Config};
use crate::http::Http;
use crate::hub::{self, About, ClientId, Hub, IdKey, Input, Outcome, Output, Power, UpstreamId, UpstreamSpec, Upward};
use crate::log::{self, Level};
use crate::bytes::lines::Pause;
use crate::bytes::outbox::{Outbox, PushError, HOLD_LIMIT};
use crate::remote;
use crate::process::alarm::Alarm;
use crate::process::supervise;

/// What the hub asks of the task that runs the servers, for one of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerAsk {
    /// `Output::Power`: start or stop its process.
    Power(Power),
    /// `Output::ListsRead`: keep its lists.
    KeepLists,
}

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

pub(super) struct ClientConn {
    out: Outbox,
    /// Signalled when the hub reports the client's `initialize` answered.
    init_answered: (Sender<()>, Receiver<()>),
}

/// A server's handle: a supervised child or a remote connection, alike to
/// the rest of `serve`.
#[derive(Clone)]
pub(super) enum Upstream {
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
            Upstream::Local(_) => Some(crate::limits::max_line()),
            Upstream::Remote(_) => None,
        }
    }
    fn queue_bytes(&self) -> usize {
        match self {
            Upstream::Local(u) => u.queue_bytes(),
            Upstream::Remote(r) => r.queue_bytes(),
        }
    }
    pub(super) fn restart(&self, why: &str) {
        match self {
            Upstream::Local(u) => u.restart(why),
            Upstream::Remote(r) => r.restart(why),
        }
    }
    pub(super) fn shutdown(&self) {
        match self {
            Upstream::Local(u) => u.shutdown(),
            Upstream::Remote(r) => r.shutdown(),
        }
    }
    pub(super) fn kill_now(&self) {
        match self {
            Upstream::Local(u) => u.kill_now(),
            Upstream::Remote(r) => r.kill_now(),
        }
    }
}

/// The state shared by all tasks of `mcpx serve`.
pub struct Runtime {
    pub(super) hub: RefCell<Hub>,
    pub(super) start: Instant,
    /// By upstream id; a config reload adds, stops and replaces them
    /// (see `reload`). `None` while a lazy server sleeps.
    pub(super) upstreams: RefCell<Vec<Option<Upstream>>>,
    /// Their supervisor tasks (taken while a reload stops one).
    pub(super) tasks: RefCell<Vec<Option<Task<()>>>>,
    /// Their names ("" for a slot a reload freed).
    pub(super) names: RefCell<Vec<String>>,
    pub(super) clients: RefCell<BTreeMap<ClientId, ClientConn>>,
    /// The HTTP server, when `--http` is given: its sessions are hub clients too.
    pub(super) http: RefCell<Option<Http>>,
    /// What the timer task sleeps on, set to the hub's next deadline.
    pub(super) alarm: Alarm,
    /// The hub deadline the alarm is set to (`None`: none, or it rang).
    pub(super) armed: Cell<Option<u64>>,
    /// The hub's `Output::Power` and `Output::ListsRead`, for the task that
    /// runs the servers (`reload`).
    pub(super) server_asks: (Sender<(UpstreamId, ServerAsk)>, Receiver<(UpstreamId, ServerAsk)>),
    pub(super) stop: Sender<Stop>,
    pub(super) closing: Cell<bool>,
    /// The hold of the server queue the last message routed went into
    /// ([`supervise::Upstream::hold`]), for the stdio client that sent it.
    hold: RefCell<Option<Pause>>,
    /// The clock of that hold ([`Self::hold_limit`]).
    hold_alarm: Rc<Alarm>,
    /// The task state file (`task_store`), with an HTTP listener.
    pub(super) tasks_file: RefCell<Option<std::path::PathBuf>>,
    /// The pin files (`pin_store`), with `policy.pin`.
    pub(super) pins: RefCell<Option<crate::serve::pin_store::PinStore>>,
    /// The pins shared with the other replicas (`pin_share`), with
    /// `policy.pin` and a store.
    #[cfg(feature = "cluster")]
    pub(super) pin_share: RefCell<Option<Rc<crate::serve::pin_share::PinShare>>>,
    /// The queue of the cluster task (`cluster::runtime`), with a store or
    /// a hop configured.
    pub(super) cluster_jobs: RefCell<Option<Sender<Job>>>,
    /// The queue of the task that POSTs approval notifications (`notify`).
    #[cfg(feature = "consent")]
    pub(super) notices: RefCell<Option<Sender<super::notify::Job>>>,
}

impl Runtime {
    pub fn new(hub: Hub, names: Vec<String>) -> io::Result<(Rc<Runtime>, Receiver<Stop>)> {
        let (stop, stop_rx) = channel::bounded(16);
        let rt = Runtime {
            hub: RefCell::new(hub),
            start: Instant::now(),
            upstreams: RefCell::new(Vec::new()),
            tasks: RefCell::new(Vec::new()),
            names: RefCell::new(names),
            clients: RefCell::new(BTreeMap::new()),
            http: RefCell::new(None),
            alarm: Alarm::new()?,
            armed: Cell::new(None),
            server_asks: channel::bounded(256),
            stop,
            closing: Cell::new(false),
            hold: RefCell::new(None),
            hold_alarm: Rc::new(Alarm::new()?),
            tasks_file: RefCell::new(None),
            pins: RefCell::new(None),
            #[cfg(feature = "cluster")]
            pin_share: RefCell::new(None),
            cluster_jobs: RefCell::new(None),
            #[cfg(feature = "consent")]
            notices: RefCell::new(None),
        };
        Ok((Rc::new(rt), stop_rx))
    }

    /// Queues `job` for the cluster task (`cluster::runtime`); without one,
    /// or with its queue full, the hub is answered now that it cannot be done.
    pub(crate) fn cluster_job(&self, job: Job) {
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

    /// The MCP headers of a modern request forwarded over the hop (as a
    /// client of the owner would send them).
    pub(crate) fn modern_headers(&self, msg: &[u8]) -> Vec<(String, Vec<u8>)> {
        self.hub.borrow().catalog().client_request_headers(msg).unwrap_or_default()
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
            Kind::Result => (About::Reply { id, outcome: Outcome::of_result(env.result_member("isError")) }, true),
            Kind::Error => (About::Reply { id, outcome: Outcome::of_error(env.error()) }, true),
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

    pub(super) fn instant_at(&self, ms: u64) -> Instant {
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
        // The alarm is moved only for a deadline before the one it is set
        // to: a later one (a new call's timeout) waits, and one that went
        // away (an answered call) costs one early tick that finds nothing
        // due. So the alarm is not set per message.
        if let Some(d) = self.hub.borrow().next_deadline() {
            if self.armed.get().is_none_or(|a| d < a) {
                // A deadline already due rings a millisecond from now: one
                // the tick did not move must not turn into a busy loop.
                let d = d.max(self.now_ms() + 1);
                self.armed.set(Some(d));
                self.alarm.set(Some(self.instant_at(d)));
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
        let instances = self.hub().starts().instances_of(u);
        self.feed(|h, now| h.handle(Input::UpstreamRemoved { up: u, why }, now));
        self.stop_slots(std::iter::once(u).chain(instances)).await;
    }

    /// Restarts server `u` with its changed entry `spec` in its slot (a
    /// reload): the hub keeps its tools listed and holds its requests
    /// ([`Hub::replace_upstream`]) while its process and instances are
    /// stopped. True when its new entry is to be started now, false when
    /// it sleeps until used (`current`: its lists are for what it runs now).
    pub(crate) async fn replace_upstream(&self, u: UpstreamId, spec: UpstreamSpec, why: &str, current: bool) -> Result<bool, hub::ConfigError> {
        let instances = self.hub().starts().instances_of(u);
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
    /// Not one whose supervisor ended by itself (a remote instance that
    /// stopped to wait for its principal's authorization).
    pub(crate) fn has_process(&self, u: UpstreamId) -> bool {
        self.tasks.borrow().get(u).is_some_and(|t| t.as_ref().is_some_and(|t| !t.is_finished()))
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

    /// A config reload's sign-in settings, to the HTTP listener if there is
    /// one ([`Http::set_signin`]): was there?
    #[cfg(feature = "signin")]
    pub(crate) fn set_signin(&self, s: &crate::http::SignInSettings) -> bool {
        let http = self.http.borrow();
        if let Some(h) = http.as_ref() {
            h.set_signin(s.clone());
        }
        http.is_some()
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
                    Err((e, _)) => error!("message to the client dropped: {e}: the client is not reading"),
                }
            }
            Output::ClientInitialized(c, _) => {
                if let Some(conn) = self.clients.borrow().get(&c) {
                    let _ = conn.init_answered.0.try_send(());
                }
            }
            // A stdio session lives and dies with its connection.
            Output::SessionChanged(_) => {}
            Output::ToUpstream(u, msg, about) => {
                let refused = {
                    let ups = self.upstreams.borrow();
                    let Some(Some(up)) = ups.get(u) else { return };
                    match up.max_message() {
                        // The tighter limit is checked before forwarding: the
                        // server would drop the line, the client wait for nothing.
                        Some(max) if msg.len() > max => {
                            Some((format!("the message is {} bytes, over {}", msg.len(), crate::limits::line_limit()), msg))
                        }
                        _ => match up.send(msg, about) {
                            Ok(()) => {
                                if let Upstream::Local(child) = up {
                                    if let Some(hold) = child.hold(|| self.hold_limit()) {
                                        *self.hold.borrow_mut() = Some(Box::pin(hold));
                                    }
                                }
                                None
                            }
                            Err((PushError::Closed, _)) => {
                                debug!("server {}: not running; message to it dropped", self.name(u));
                                None
                            }
                            // Its queue is full because it is slow to take
                            // what it was sent, not because it is broken.
                            Err((PushError::Full { msgs, bytes }, msg)) => {
                                let limit = up.queue_bytes();
                                Some((format!("it is busy: {msgs} messages are queued for it ({bytes} bytes; output queue full at {limit} bytes queued per server); retry once it has answered some"), msg))
                            }
                        },
                    }
                };
                if let Some((why, msg)) = refused {
                    // Never lose a request silently: the hub answers it now
                    // (naming the server and the limit); `drain` routes that
                    // answer next.
                    warn!("server {}: message to it refused: {why}", self.name(u));
                    let now = self.now_ms();
                    self.hub.borrow_mut().handle(Input::UpstreamRefused { up: u, msg: &msg, why: &why }, now);
                }
            }
            Output::RestartUpstream(u, why) => {
                if self.closing.get() {
                    return;
                }
                let asked = cfg!(feature = "cli") && why == hub::RESTART_ASKED;
                let level = if asked { Level::Info } else { Level::Warn };
                log::write(level, format_args!("server {}: restarting it: {why}", self.name(u)));
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
            Output::Shared(ask) => self.cluster_job(Job::Ask(ask)),
            Output::Forward { client, request, msg, principal, to, traceparent } => {
                self.cluster_job(Job::Forward { client, request, msg, principal, to, traceparent })
            }
            #[cfg(feature = "consent")]
            Output::Notify(n) => {
                let (to, notice) = *n;
                super::notify::notify(to, &notice, self.notices.borrow().as_ref())
            }
            Output::SavePins(bytes) => {
                #[cfg(feature = "cluster")]
                if let Some(share) = self.pin_share.borrow().clone() {
                    share.hub_saved(self, &bytes);
                    return;
                }
                if let Some(store) = self.pins.borrow().as_ref() {
                    store.save(&bytes);
                }
            }
            Output::SaveTasks(bytes) => {
                if let Some(p) = self.tasks_file.borrow().as_deref() {
                    if let Err(e) = crate::serve::task_store::save(p, &bytes) {
                        error!("cannot write the task state file {}: {e} (tasks will not survive a restart)", p.display());
                    }
                }
            }
        }
    }

    /// Keeps the hub's tasks in the state file of the listener on `addr`
    /// from now on, and gives the hub those of the last run.
    pub(super) fn keep_tasks(&self, cfg: &Config, addr: std::net::SocketAddr) {
        let Some(p) = crate::serve::task_store::path(&config::process_env, &cfg.source, addr) else {
            warn!("no state folder ($XDG_STATE_HOME or $HOME): tasks will not survive a restart");
            return;
        };
        let saved = crate::serve::task_store::load(&p).unwrap_or_else(|e| {
            warn!("cannot read the task state file {}: {e}", p.display());
            None
        });
        debug!("task state file: {}", p.display());
        *self.tasks_file.borrow_mut() = Some(p);
        self.feed(|h, now| h.restore_tasks(saved.as_deref(), now));
    }

    /// Keeps the hub's pins in their files from now on (`pin_store`), and
    /// gives the hub what they hold (with replicas sharing the pins, the
    /// share does once it read the store: `pin_share::start`).
    pub(super) fn keep_pins(&self, cfg: &Config) {
        if cfg!(not(feature = "consent")) {
            return;
        }
        *self.pins.borrow_mut() = crate::serve::pin_store::PinStore::of(cfg);
        self.read_pins(true);
    }

    /// Gives the hub the pin files again if they changed on disk (or
    /// `first`); the config's task calls it every second. With replicas
    /// sharing the pins, they go through the share (`pin_share`).
    pub(crate) fn read_pins(&self, first: bool) {
        if cfg!(not(feature = "consent")) {
            return;
        }
        let Some((state, lock)) = self.pins.borrow().as_ref().and_then(|s| s.read_if_changed(first)) else { return };
        #[cfg(feature = "cluster")]
        if let Some(share) = self.pin_share.borrow().clone() {
            share.files_read(self, state, lock, first);
            return;
        }
        self.feed(|h, now| h.handle(Input::PinFiles { state: state.as_deref(), lock: lock.as_deref() }, now));
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

    /// The limit of a hold, [`HOLD_LIMIT`] from when it is first waited on,
    /// on the hold alarm (a timerfd on this thread's reactor: setting it is
    /// one call, where an async-io timer woke async-io's thread to add it
    /// and again to remove it, on every hold). Only the stdio client's
    /// reader waits on holds, one at a time, so one alarm serves them all; a
    /// hold nobody waits on (a message another transport routed) never
    /// sets it, and one released at its first look never does either. One
    /// released later leaves it set: unless the next hold moves it, it rings
    /// once for nothing, cheaper than a call to stop it on every hold.
    fn hold_limit(&self) -> impl std::future::Future<Output = ()> + 'static {
        let alarm = self.hold_alarm.clone();
        async move {
            alarm.set(Some(Instant::now() + HOLD_LIMIT));
            alarm.rung().await
        }
    }

    /// One framed message from a stdio client: the hub parses it (once).
    /// Feeds one message of stdio client `c` to the hub; a wait before
    /// reading the client again when a server's queue it went into holds a
    /// pipe's worth ([`Outbox::hold`](crate::bytes::outbox::Outbox::hold)).
    pub fn client_message(&self, c: ClientId, msg: &[u8]) -> Option<Pause> {
        self.hold.take();
        self.feed(|h, now| h.handle(Input::ClientMessage(c, msg), now));
        self.hold.take()
    }

    /// Whether the client's `initialize` is still unanswered. A stream
    /// transport then holds the client's next messages: a conforming client
    /// waits for that answer anyway, and one that pipelines (`printf ... |
    /// mcpx serve`) gets its lists once the servers are up, not before.
    pub fn initializing(&self, c: ClientId) -> bool {
        !self.closing.get() && self.hub.borrow().clients().initializing(c)
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

    /// A stdio client's line over [`crate::limits::max_line`], skipped:
    /// handed to the hub with the limit named.
    pub fn client_frame_too_large(&self, c: ClientId, len: usize, head: &[u8], tail: &[u8]) {
        warn!("client sent a message of {len} bytes, over the limit; answered with an error");
        let limit = crate::limits::line_limit();
        let big = crate::hub::Oversize { len, max: crate::limits::max_line(), limit: &limit, head, tail };
        self.feed(|h, now| h.handle(Input::ClientFrameTooLarge(c, &big), now));
    }

    pub fn client_disconnected(&self, c: ClientId) {
        self.feed(|h, now| h.handle(Input::ClientDisconnected(c), now));
        if let Some(conn) = self.clients.borrow_mut().remove(&c) {
            conn.out.close();
        }
    }

    /// Reports a step towards the end of the session to `serve`.
    pub fn stop(&self, why: Stop) {
        let _ = self.stop.try_send(why);
    }
}

pub(super) fn log_level(level: hub::Level) -> Level {
    match level {
        hub::Level::Error => Level::Error,
        hub::Level::Warn => Level::Warn,
        hub::Level::Info => Level::Info,
        hub::Level::Debug => Level::Debug,
    }
}

/// The runtime's side of the pins shared with the other replicas.
#[cfg(feature = "cluster")]
impl crate::serve::pin_share::Host for Runtime {
    fn keep_pins(&self, cfg: &Config) {
        Runtime::keep_pins(self, cfg);
    }

    fn set_pin_share(&self, share: Rc<crate::serve::pin_share::PinShare>) {
        *self.pin_share.borrow_mut() = Some(share);
    }

    fn pins_to_hub(&self, state: &[u8], lock: Option<&[u8]>) {
        self.feed(|h, now| h.handle(crate::hub::Input::PinFiles { state: Some(state), lock }, now));
    }

    fn save_pin_file(&self, bytes: &[u8]) {
        if let Some(store) = self.pins.borrow().as_ref() {
            store.save(bytes);
        }
    }

    fn closing(&self) -> bool {
        Runtime::closing(self)
    }
}
