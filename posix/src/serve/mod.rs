//! `mcpx serve`: the hub on stdio, with its servers supervised.
//!
//! Everything runs on one thread, on one executor (`process::exec`) that waits on
//! the thread's own reactor (`process::reactor`). The pure
//! [`Hub`] is shared as `Rc<RefCell<_>>`; every input (a client line, a
//! server line, a process start or exit, a timer) goes through
//! [`Runtime::feed`], which reads the clock once, hands the hub the
//! [`crate::hub::Input`], and routes everything `poll_output` returns
//! before anyone else touches the hub. One timer task sleeps on an alarm
//! set to `next_deadline()` (`process::alarm`) and hands the hub
//! `Input::Tick`.
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
//!
//! The parts: `runtime` (the shared state and the routing of the hub's
//! outputs), `feeds` (the servers' reports and the timer into it),
//! `spawner` (a server's transport), `options` (the config into the hub's
//! and the listener's options), `load` (when the reactor expects events
//! soon); this module composes them and drains.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use smol::channel::{self, Receiver};
use smol::future::FutureExt as _;
use smol::{Task, Timer};

use crate::cmd::cli::ServeArgs;
use crate::cluster::runtime as cluster;
use crate::config::{self, Config, Source};
use crate::http::{self, Http, HttpConfig, HubLink};
use crate::hub::{ClientId, Hub, Input};
use crate::log::{self, Level};
use crate::process::exec::Executor;
use crate::stdio::StdioClient;
use crate::process::supervise;
use crate::servers::events::Events;
use load::Load;

pub(crate) mod cluster_jobs;
mod feeds;
#[cfg(feature = "secrets")]
pub(crate) mod kept;
mod load;
#[cfg(feature = "consent")]
pub(crate) mod notify;
pub(crate) mod options;
#[cfg(feature = "cluster")]
pub(crate) mod pin_share;
pub(crate) mod pin_store;
pub(crate) mod runtime;
pub(crate) mod secrets;
pub(crate) mod spawner;
pub(crate) mod task_store;
#[cfg(feature = "traces")]
pub(crate) mod traces;

use feeds::{timer_task, HubCatalog, HubEvents};
use options::http_config;
use runtime::{log_level, Runtime, Stop, Upstream};
use spawner::Spawner;

/// Forwards SIGINT/SIGTERM to the stop channel; SIGHUP reloads the
/// config (see `reload`).
async fn signal_task(rt: Rc<Runtime>) {
    use crate::process::signals::{SignalEvent, Watch};
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

    let hub = match options::build_hub(&cfg) {
        Ok(mut h) => {
            h.handle(Input::CallLog(log::enabled(Level::Debug)), 0); // the runtime's clock starts at 0
            h
        }
        Err(e) => {
            error!("{e}");
            return 1;
        }
    };
    let http = http_config(&args, &cfg);
    let ex = Rc::new(Executor::new());
    // Pipes and sockets: polled by the reactor, non-blocking until `restore`
    // is dropped (see `stdfd`); files and terminals: a helper thread each.
    let io = crate::process::stdfd::stdio(64 << 10, false);
    let reload = crate::reload::Settings { explicit: args.config.clone(), level_fixed: fixed_level.is_some() };
    let transports = Transports { stdio: args.serves_stdio(), http, reload };
    let run = serve(ex.clone(), hub, &cfg, transports, io.input, io.output, supervise::Options::default());
    let status = crate::process::reactor::block_on(ex.run(run));
    drop(io.restore);
    status
}

/// While requests are in flight ([`Load`]), the next event is usually
/// microseconds away: the reactor looks for it a while before it sleeps
/// (`process::spin`). Until the guard is dropped.
fn expect_events_under_load(rt: &Rc<Runtime>) -> impl Drop {
    struct Guard;
    impl Drop for Guard {
        fn drop(&mut self) {
            crate::process::reactor::expect_events_while(None);
        }
    }
    let rt = Rc::downgrade(rt);
    let load = Cell::new(Load::default());
    let busy = move || {
        let open = rt.upgrade().map_or(0, |rt| rt.hub.try_borrow().map_or(0, |h| h.clients().open_requests()));
        let mut l = load.get();
        let busy = l.busy(open, Instant::now);
        load.set(l);
        busy
    };
    crate::process::reactor::expect_events_while(Some(Box::new(busy)));
    Guard
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
/// requests (`Input::Shutdown`); this waits up to `limit` until every open
/// request of every client is answered and every HTTP answer written. A
/// closed stdout ends the stdio client (its requests are cancelled); a
/// signal ends the wait.
async fn drain_requests(rt: &Runtime, stdio: Option<ClientId>, stop_rx: &Receiver<Stop>, limit: Duration) -> Drained {
    let deadline = Instant::now() + limit;
    let open = || rt.hub.borrow().clients().open_requests() + rt.http.borrow().as_ref().map_or(0, Http::answering);
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

/// Runs the cluster task of `cl` on `ex`: from now on the jobs the
/// runtime queues for it ([`Runtime::cluster_job`]) are done.
pub(crate) fn run_cluster(rt: &Rc<Runtime>, ex: &Rc<Executor>, cl: Rc<cluster::Cluster>) -> Task<()> {
    let (tx, rx) = channel::bounded(cluster_jobs::MAX_IN_FLIGHT);
    *rt.cluster_jobs.borrow_mut() = Some(tx);
    ex.spawn(cl.run(ex.clone(), rt.clone(), rx))
}

/// Binds the HTTP listener of `hc` (before any server starts: a busy port
/// or an unsafe address stops mcpx) and runs it on `ex`; `Err` once the
/// reason is logged.
fn start_http(ex: &Rc<Executor>, rt: &Rc<Runtime>, cfg: &Config, hc: HttpConfig, cluster: Option<&Rc<cluster::Cluster>>) -> Result<Task<()>, ()> {
    let addr = hc.addr;
    #[cfg(feature = "cluster")]
    let idle_ms = hc.limits.session_idle_ms;
    #[cfg(not(feature = "cluster"))]
    let _ = cluster;
    let frt = rt.clone();
    let link = HubLink {
        feed: Rc::new(move |f: http::HubCall<'_>| frt.feed(|hub, now| f(hub, now))),
        log: Rc::new(|level, msg| log::write(log_level(level), format_args!("{msg}"))),
    };
    match http::bind(hc, link) {
        Ok((h, server)) => {
            info!("serving MCP over HTTP at http://{}/mcp", h.local_addr());
            #[cfg(feature = "cluster")]
            if let Some(dir) = cluster.and_then(|cl| cl.directory(idle_ms)) {
                h.use_directory(dir);
            }
            rt.keep_tasks(cfg, h.local_addr());
            *rt.http.borrow_mut() = Some(h);
            Ok(ex.spawn(server))
        }
        Err(e) => {
            error!("cannot serve HTTP on {addr}: {e}");
            Err(())
        }
    }
}

/// How long the drain after `stop` waits for answers: `input` after end
/// of input, `grace` otherwise (logged); and the exit code.
fn drain_limit(stop: &Result<Stop, channel::RecvError>, input: Duration, grace: Duration) -> (Duration, i32) {
    match stop {
        Ok(Stop::InputClosed) => {
            info!("end of input: shutting down");
            (input, 0)
        }
        Ok(Stop::Signal(s)) => {
            info!("{s}: shutting down (a second signal ends at once)");
            (grace, 0)
        }
        Ok(Stop::OutputClosed) => {
            info!("client connection closed: shutting down");
            (grace, 0)
        }
        Ok(Stop::InputError(e) | Stop::OutputError(e)) => {
            info!("{e}; shutting down");
            (grace, 0)
        }
        Err(_) => (grace, 1),
    }
}

/// Ends the stdio client: the hub forgets it and what is queued for it is
/// flushed (bounded by `limit`: it may not be reading).
async fn close_stdio(rt: &Runtime, client: StdioClient, limit: Duration) {
    rt.client_disconnected(client.id);
    let flush = async {
        client.writer.await;
        true
    };
    let timeout = async {
        Timer::after(limit).await;
        false
    };
    if !flush.or(timeout).await {
        debug!("stdout not drained within {} ms", limit.as_millis());
    }
    drop(client.reader);
}

/// Stops every server (killed at once in a `hurry`, or on a second
/// signal) and waits for them and for `reloads`.
async fn stop_servers(rt: &Runtime, reloads: Task<()>, stop_rx: &Receiver<Stop>, hurry: bool) {
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
}

/// Runs the hub for its clients (one on `input`/`output`, and/or HTTP
/// sessions) until the stdio session ends or a signal comes, and every
/// server is stopped. Returns the exit code.
pub async fn serve<R, W>(
    ex: Rc<Executor>,
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
    let (rt, stop_rx) = match Runtime::new(hub, names) {
        Ok(x) => x,
        Err(e) => {
            error!("cannot make the runtime's timer: {e}");
            return 1;
        }
    };
    let _load = expect_events_under_load(&rt);
    let events: Rc<dyn Events> = Rc::new(HubEvents(rt.clone()));
    let catalog: Rc<dyn crate::remote::Catalog> = Rc::new(HubCatalog(rt.clone()));
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
    let _cluster = cluster.clone().map(|cl| run_cluster(&rt, &ex, cl));
    #[cfg(feature = "consent")]
    let _notify = {
        let (posts, task) = notify::start(&ex);
        *rt.notices.borrow_mut() = Some(posts);
        task
    };
    // `"traces"`: the exporter of the hub's finished spans.
    #[cfg(feature = "traces")]
    let exporter = match cfg.traces.as_ref().map(traces::Exporter::new) {
        Some(Ok(e)) => Some(Rc::new(e)),
        Some(Err(e)) => {
            error!("{e}");
            return 1;
        }
        None => None,
    };
    #[cfg(feature = "traces")]
    let _traces = exporter.clone().map(|e| ex.spawn(traces::run(rt.clone(), e)));
    let mut _http_server = match transports.http.map(|hc| start_http(&ex, &rt, cfg, hc, cluster.as_ref())) {
        Some(Err(())) => return 1,
        started => started.and_then(Result::ok),
    };

    let spawner = Spawner::new(ex.clone(), sup_opts, events, catalog, cfg, rt.http.borrow().as_ref(), cluster.as_ref());
    // The lists of lazy servers, from the shared store (bounded by its timeout) or the disk.
    let lists = crate::reload::lists::Lists::new(&config::process_env, cluster.clone());
    // The pins before the first listing (with a store: every replica's).
    #[cfg(feature = "cluster")]
    let _pins = pin_share::start(&rt, &ex, cfg, cluster.as_ref().and_then(|c| c.store())).await;
    #[cfg(not(feature = "cluster"))]
    rt.keep_pins(cfg);
    crate::reload::start_servers(&rt, &spawner, cfg, &lists).await;
    let reloads = ex.spawn(crate::reload::run(rt.clone(), spawner, cfg.clone(), transports.reload, lists));
    let _timer = ex.spawn(timer_task(rt.clone()));
    let client = transports.stdio.then(|| crate::stdio::start(&ex, &rt, input, output));

    // End of input waits as long as a request can stay unanswered (the hub
    // answers every forwarded request by its server's timeout); a signal
    // waits the grace period.
    let longest = cfg.servers.iter().map(|s| s.timeout_ms.unwrap_or(60_000)).max().unwrap_or(0);
    let input_limit = Duration::from_millis(longest.min(600_000) + 2_000);
    let grace = Duration::from_millis(cfg.shutdown_grace_ms.unwrap_or(DEFAULT_GRACE_MS));

    let stop = stop_rx.recv().await;
    // From here the hub refuses new requests. Open `subscriptions/listen`
    // requests are answered (and their `notifications/cancelled` sent)
    // first, while the clients and servers are still there: nothing else
    // would answer them, and the drain would wait for them in vain.
    rt.feed(|h, now| h.handle(Input::Shutdown, now));
    let stdio_id = client.as_ref().map(|cl| cl.id);
    let (limit, code) = drain_limit(&stop, input_limit, grace);
    if let (Some(c), Ok(Stop::OutputClosed | Stop::OutputError(_))) = (stdio_id, &stop) {
        // Nobody reads its answers: its requests are cancelled.
        rt.client_disconnected(c);
    }
    let drained = drain_requests(&rt, stdio_id, &stop_rx, limit).await;
    let open = rt.hub.borrow().clients().open_requests();
    if open > 0 {
        warn!("shutting down: answering {open} request(s) still in flight with an error");
        rt.feed(|h, now| h.handle(Input::AbandonRequests { grace_ms: limit.as_millis() as u64 }, now));
    }
    let hurry = drained == Drained::Hurry;
    // Even in a hurry the answers just given get a moment to be written.
    let flush_limit = Duration::from_millis(if hurry { 200 } else { 2_000 });
    flush_http(&rt, flush_limit).await;
    // The spans of the last answers.
    #[cfg(feature = "traces")]
    if let Some(e) = &exporter {
        traces::flush(&rt, e, flush_limit).await;
    }
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
        close_stdio(&rt, client, flush_limit).await;
    }
    stop_servers(&rt, reloads, &stop_rx, hurry).await;
    info!("all servers stopped");
    code
}
