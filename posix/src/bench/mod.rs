//! The measuring core behind `mcpx bench` and the `mcpx-bench` crate: one
//! implementation of the scenarios (stdio hop, HTTP bridge, footprint, hot
//! path allocations), the echo upstream, the byte relay and the report.
//!
//! ```text
//! mcpx bench [--rounds N] [--quick] [--json FILE] [--only SECTIONS]
//!            [--upstream echo|example] [--policy off|on|approve|traces] [--verbose]
//! mcpx bench echo            the bench's echo upstream on stdio
//! mcpx bench relay -- CMD..  the bare byte relay in front of CMD
//! ```
//! Everything runs on loopback and pipes, with bounded request counts and
//! durations. `mcpx bench` measures this very binary against its built-in
//! upstreams; `mcpx-bench` adds the installed peers.

pub mod echo;
pub mod http;
pub mod json;
pub mod relay;
mod report;
pub mod stdio;
pub mod sys;
#[cfg(feature = "traces")]
mod trace_sink;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

pub use report::{Key, Metrics, Report};

/// Payload sizes of the echo text.
pub const PAYLOADS: [usize; 2] = [16, 64 * 1024];
/// Requests in flight on the stdio path.
pub const WINDOWS: [usize; 3] = [1, 8, 16];
/// Concurrent HTTP clients.
pub const CLIENTS: [usize; 3] = [1, 8, 64];

/// Builds the command line of an HTTP bridge: (port, upstream command).
pub type Launch = Box<dyn Fn(u16, &[String]) -> Vec<String>>;

/// An HTTP bridge to compare: mcpx itself or a peer.
pub struct HttpTarget {
    pub name: String,
    /// `Err(why)` when it cannot run here (e.g. "not installed: run bench/setup.sh").
    pub launch: Result<Launch, String>,
    pub path: String,
    /// Pinned version or other note for the report.
    pub note: String,
    /// Environment for the bridge process.
    pub env: Vec<(String, String)>,
}

/// Which sections to run.
#[derive(Clone, Copy, Debug)]
pub struct Sections {
    pub stdio: bool,
    pub http: bool,
    pub footprint: bool,
    pub alloc: bool,
}

impl Sections {
    pub const ALL: Sections = Sections {
        stdio: true,
        http: true,
        footprint: true,
        alloc: true,
    };

    pub fn parse(list: &str) -> Result<Self, String> {
        let mut s = Sections {
            stdio: false,
            http: false,
            footprint: false,
            alloc: false,
        };
        for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part {
                "stdio" => s.stdio = true,
                "http" => s.http = true,
                "footprint" => s.footprint = true,
                "alloc" => s.alloc = true,
                other => {
                    return Err(format!(
                        "unknown section `{other}` (stdio, http, footprint, alloc)"
                    ))
                }
            }
        }
        Ok(s)
    }
}

/// Everything one run needs to know.
pub struct Plan {
    pub rounds: usize,
    pub quick: bool,
    pub verbose: bool,
    /// Which upstream MCP server the scenarios use.
    pub upstream: Upstream,
    /// The bench's echo server command.
    pub echo: Vec<String>,
    /// The relay command; the upstream command is appended after `--`.
    pub relay: Vec<String>,
    /// The mcpx command; `serve …` is appended.
    pub hub: Vec<String>,
    /// An mcpx built with the `count-alloc` feature, if any.
    pub alloc_hub: Option<Vec<String>>,
    /// HTTP bridges other than mcpx.
    pub peers: Vec<HttpTarget>,
    /// Binaries whose size to report.
    pub sizes: Vec<(String, PathBuf)>,
    pub sections: Sections,
    pub json: Option<PathBuf>,
    /// The `"policy"` block of every mcpx target.
    pub policy: Policy,
}

/// `--policy`: what the hub enforces while it is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Policy {
    /// No rate limit, no metrics, no validation, no audit: the hub's own cost.
    Off,
    /// What a config without a `"policy"` block runs: the default rate
    /// limits (raised too high to refuse anything) and metrics. The stdio
    /// rounds measure it beside `Off` (report `HUB_DEFAULT`), for what the
    /// policy machinery costs a call by default; HTTP rows run under it.
    Default,
    /// Rate limits (too high to refuse anything), validation of every call,
    /// an audit line per call into a small rotated file, metrics: the
    /// policy machinery on. The stdio rounds measure it beside `Off`
    /// (report `HUB_POLICY`), for what it costs; HTTP rows run under it.
    On,
    /// As `Off`, plus approval rules and pinning that no benched call
    /// meets: what the approve stage costs a call that needs no approval.
    /// The stdio rounds measure the hub both ways, `Off` and this, in the
    /// same round (report `HUB_APPROVE`), for the ratio of the two.
    Approve,
    /// As `Off`, plus traces: every call sampled, its spans exported over
    /// OTLP/HTTP to a sink in the bench (`trace_sink`). Measured as
    /// `Approve` is, beside `Off` in each round (report `HUB_TRACES`).
    #[cfg(feature = "traces")]
    Traces,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Off => "off",
            Policy::Default => "default",
            Policy::On => "on",
            Policy::Approve => "approve",
            #[cfg(feature = "traces")]
            Policy::Traces => "traces",
        }
    }

    /// The stdio row of a policy measured beside `Off` in each round.
    fn paired_row(self) -> Option<&'static str> {
        match self {
            Policy::Approve => Some(report::HUB_APPROVE),
            Policy::Default => Some(report::HUB_DEFAULT),
            Policy::On => Some(report::HUB_POLICY),
            #[cfg(feature = "traces")]
            Policy::Traces => Some(report::HUB_TRACES),
            Policy::Off => None,
        }
    }

    /// The `"policy"` block, auditing into `audit` when on.
    pub fn block(self, audit: &Path) -> serde_json::Value {
        match self {
            Policy::Off => serde_json::json!({"rateLimits": false, "metrics": false}),
            #[cfg(feature = "traces")]
            Policy::Traces => Policy::Off.block(audit),
            Policy::Approve => serde_json::json!({
                "rateLimits": false, "metrics": false, "pin": "approve",
                "approve": ["nothing-here/*", {"tools": ["*/delete_*"], "annotations": ["destructiveHint"]}]
            }),
            Policy::Default => serde_json::json!({
                "rateLimits": {
                    "toolCalls": {"perPrincipal": "1000000/s", "perServer": "1000000/s"},
                    "completions": {"perPrincipal": "1000000/s"},
                    "serverRequests": {"perServer": "1000000/s"},
                    "taskRequests": {"perPrincipal": "1000000/s"}
                },
                "metrics": true
            }),
            Policy::On => serde_json::json!({
                "rateLimits": {
                    "toolCalls": {"perPrincipal": "1000000/s", "perServer": "1000000/s", "perTool": {"*": "1000000/s"}},
                    "completions": {"perPrincipal": "1000000/s"},
                    "serverRequests": {"perServer": "1000000/s"}
                },
                "validate": {"servers": ["*"], "output": "log"},
                "audit": {"file": audit, "maxBytes": 1_048_576, "files": 1},
                "metrics": true
            }),
        }
    }
}

/// A hub config serving `servers`, with `policy` (an audit file next to `path`).
fn hub_doc(servers: serde_json::Value, policy: Policy, path: &Path) -> serde_json::Value {
    #[allow(unused_mut)]
    let mut doc = serde_json::json!({"mcpServers": servers, "logLevel": "warn", "policy": policy.block(&audit_path(path))});
    #[cfg(feature = "traces")]
    if policy == Policy::Traces {
        doc["traces"] = serde_json::json!({"endpoint": trace_sink::url(), "sampleRatio": 1.0});
    }
    doc
}

fn audit_path(config: &Path) -> PathBuf {
    config.with_extension("audit.jsonl")
}

/// The upstream behind every target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upstream {
    /// The bench's minimal echo server (never the bottleneck).
    Echo,
    /// `mcpx example-server`.
    Example,
}

impl Plan {
    pub fn upstream_cmd(&self) -> Vec<String> {
        match self.upstream {
            Upstream::Echo => self.echo.clone(),
            Upstream::Example => self
                .hub
                .iter()
                .cloned()
                .chain(["example-server".to_string()])
                // A build without the fixtures serves the demo catalog (its echo too).
                .chain((!cfg!(feature = "example-fixtures")).then(|| "--demo".to_string()))
                .collect(),
        }
    }
    pub fn upstream_name(&self) -> &'static str {
        match self.upstream {
            Upstream::Echo => "the bench's echo server",
            Upstream::Example => "mcpx example-server",
        }
    }
    fn stdio_secs(&self) -> f64 {
        if self.quick {
            0.12
        } else {
            0.4
        }
    }
    fn http_secs(&self) -> f64 {
        if self.quick {
            0.25
        } else {
            1.0
        }
    }
    fn log(&self, msg: impl AsRef<str>) {
        if self.verbose {
            eprintln!("bench: {}", msg.as_ref());
        }
    }
    fn child_stderr(&self) -> Stdio {
        if self.verbose {
            Stdio::inherit()
        } else {
            Stdio::null()
        }
    }
}

/// `mcpx bench …` for the binary that carries this module: `exe` is the
/// path of the running mcpx.
pub fn main(args: &[String]) -> i32 {
    match args.first().map(String::as_str) {
        Some("echo") => return echo::main(&args[1..]),
        Some("relay") => return relay::main(&args[1..]),
        _ => {}
    }
    let exe = match std::env::current_exe() {
        Ok(p) => p.to_string_lossy().into_owned(),
        Err(e) => {
            eprintln!("bench: cannot find this program's path: {e}");
            return 1;
        }
    };
    // How to run this binary again: itself, or through an emulator where
    // the kernel cannot (MCPX_BENCH_EXE="qemu-aarch64-static ./mcpx-edge").
    let me: Vec<String> = match std::env::var("MCPX_BENCH_EXE") {
        Ok(v) if !v.trim().is_empty() => v.split_whitespace().map(String::from).collect(),
        _ => vec![exe.clone()],
    };
    let with = |rest: &[&str]| -> Vec<String> {
        me.iter()
            .cloned()
            .chain(rest.iter().map(|s| s.to_string()))
            .collect()
    };
    let mut plan = Plan {
        rounds: 3,
        quick: false,
        verbose: false,
        upstream: Upstream::Example,
        echo: with(&["bench", "echo"]),
        relay: with(&["bench", "relay"]),
        hub: me.clone(),
        alloc_hub: cfg!(feature = "count-alloc").then(|| me.clone()),
        peers: Vec::new(),
        sizes: vec![("this mcpx".into(), PathBuf::from(&exe))],
        sections: Sections::ALL,
        json: None,
        policy: Policy::Off,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match parse_common(&mut plan, a, &mut it) {
            Ok(true) => {}
            Ok(false) if a == "--help" || a == "-h" => {
                print!("{USAGE}");
                return 0;
            }
            Ok(false) => {
                eprintln!("bench: unknown option `{a}`\n{USAGE}");
                return 2;
            }
            Err(e) => {
                eprintln!("bench: {e}");
                return 2;
            }
        }
    }
    run(&plan)
}

pub const USAGE: &str = "\
mcpx bench — measure this binary on this machine (loopback and pipes only)

    mcpx bench [--rounds N] [--quick] [--json FILE] [--only SECTIONS]
               [--upstream echo|example] [--policy off|on|approve|traces] [--verbose]

    --rounds N       repeat every scenario N times (default 3, at least 1),
                     rotating their order; the table shows medians
    --quick          shorter runs (a rough look, not a measurement)
    --json FILE      also write every round and the medians as JSON
    --only LIST      comma-separated: stdio,http,footprint,alloc
    --upstream U     echo: the bench's minimal echo server (default for
                     mcpx-bench); example: `mcpx example-server` (default
                     for `mcpx bench`)
    --policy P       off (default): mcpx with no rate limit, metrics,
                     validation or audit; default: what a config without
                     \"policy\" runs (its rate limits, raised too high to
                     refuse, and metrics); on: all of them (every call
                     validated and audited too); approve: off plus approval
                     rules and pinning no call meets; traces: off plus every
                     call traced (default, on, approve and traces: stdio rows
                     measured beside off; HTTP rows under default and on)
    --verbose        progress and the children's stderr on stderr

    MCPX_BENCH_EXE   how to start this binary again, e.g. through an
                     emulator: \"qemu-aarch64-static ./mcpx-edge\"
";

/// Parses an option shared by `mcpx bench` and `mcpx-bench`. `Ok(false)`:
/// not one of them.
pub fn parse_common<'a>(
    plan: &mut Plan,
    a: &str,
    it: &mut impl Iterator<Item = &'a String>,
) -> Result<bool, String> {
    let mut value = |name: &str| {
        it.next()
            .cloned()
            .ok_or_else(|| format!("{name} needs a value"))
    };
    match a {
        "--rounds" => {
            plan.rounds = value("--rounds")?
                .parse()
                .map_err(|_| "--rounds needs a number".to_string())?;
            plan.rounds = plan.rounds.max(1);
        }
        "--quick" => plan.quick = true,
        "--verbose" | "-v" => plan.verbose = true,
        "--json" => plan.json = Some(PathBuf::from(value("--json")?)),
        "--only" => plan.sections = Sections::parse(&value("--only")?)?,
        "--upstream" => match value("--upstream")?.as_str() {
            "echo" => plan.upstream = Upstream::Echo,
            "example" => plan.upstream = Upstream::Example,
            other => return Err(format!("unknown upstream `{other}` (echo or example)")),
        },
        "--policy" => match value("--policy")?.as_str() {
            "off" => plan.policy = Policy::Off,
            "default" => plan.policy = Policy::Default,
            "on" => plan.policy = Policy::On,
            "approve" => plan.policy = Policy::Approve,
            #[cfg(feature = "traces")]
            "traces" => plan.policy = Policy::Traces,
            other => return Err(format!("unknown policy `{other}` (off, on, approve or traces)")),
        },
        _ => return Ok(false),
    }
    Ok(true)
}

/// Runs the plan, prints the table, writes the JSON; the exit code.
pub fn run(plan: &Plan) -> i32 {
    let mut report = Report::new(plan);
    let started = Instant::now();
    eprintln!(
        "bench: {} round(s){}, upstream {}, policy {}; this takes {}",
        plan.rounds,
        if plan.quick { " (quick)" } else { "" },
        plan.upstream_name(),
        plan.policy.name(),
        if plan.quick {
            "under a minute"
        } else {
            "a few minutes"
        }
    );
    for round in 0..plan.rounds {
        if plan.sections.stdio {
            stdio_round(plan, round, &mut report);
        }
        if plan.sections.http {
            http_round(plan, round, &mut report);
        }
        if plan.sections.footprint {
            footprint_round(plan, round, &mut report);
        }
        eprintln!(
            "bench: round {} of {} done ({:.0} s)",
            round + 1,
            plan.rounds,
            started.elapsed().as_secs_f64()
        );
    }
    if plan.sections.alloc {
        alloc_section(plan, &mut report);
    }
    if plan.sections.footprint {
        for (name, path) in &plan.sizes {
            report.size(name, path);
        }
    }
    print!("{}", report.table());
    if let Some(path) = &plan.json {
        if let Err(e) = std::fs::write(path, report.json()) {
            eprintln!("bench: cannot write {}: {e}", path.display());
            return 1;
        }
        eprintln!("bench: wrote {}", path.display());
    }
    0
}

/// `items` rotated so that each round starts elsewhere.
fn rotated<T: Clone>(items: &[T], round: usize) -> Vec<T> {
    let mut v = items.to_vec();
    if !v.is_empty() {
        let k = (round * v.len().div_ceil(3).max(1)) % v.len();
        v.rotate_left(k);
    }
    v
}

fn payload(len: usize) -> Vec<u8> {
    vec![b'x'; len]
}

/// A config file for `mcpx serve` with `n` copies of the upstream.
struct Config(PathBuf);

impl Config {
    fn new(upstream: &[String], n: usize, policy: Policy) -> io::Result<Self> {
        static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("mcpx-bench-{}-{seq}.json", std::process::id()));
        let mut servers = serde_json::Map::new();
        for i in 1..=n {
            let prefix = if n == 1 {
                String::new()
            } else {
                format!("u{i}")
            };
            servers.insert(
                format!("u{i}"),
                serde_json::json!({"command": upstream[0], "args": &upstream[1..], "prefix": prefix}),
            );
        }
        let doc = hub_doc(servers.into(), policy, &path);
        std::fs::write(&path, serde_json::to_vec_pretty(&doc)?)?;
        Ok(Config(path))
    }
    fn path(&self) -> String {
        self.0.to_string_lossy().into_owned()
    }
}

impl Drop for Config {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(audit_path(&self.0));
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum StdioTarget {
    Direct,
    Relay,
    Mcpx,
    /// The hub under a policy measured beside `Off` in each round
    /// (`Policy::paired_row`): the policy machinery, approval rules no
    /// call meets, or traces.
    McpxWith(Policy),
}

impl StdioTarget {
    fn name(self) -> &'static str {
        match self {
            StdioTarget::Direct => report::DIRECT,
            StdioTarget::Relay => report::RELAY,
            StdioTarget::Mcpx => report::HUB,
            StdioTarget::McpxWith(p) => p.paired_row().unwrap_or(report::HUB),
        }
    }

    /// The policy the hub runs under for this target.
    fn policy(self, plan: &Plan) -> Policy {
        match (self, plan.policy) {
            (StdioTarget::McpxWith(p), _) => p,
            (_, p) if p.paired_row().is_some() => Policy::Off,
            (_, p) => p,
        }
    }
}

fn stdio_round(plan: &Plan, round: usize, report: &mut Report) {
    let mut targets = vec![StdioTarget::Direct, StdioTarget::Relay, StdioTarget::Mcpx];
    if plan.policy.paired_row().is_some() {
        targets.push(StdioTarget::McpxWith(plan.policy));
    }
    for target in rotated(&targets, round) {
        let config = match Config::new(&plan.upstream_cmd(), 1, target.policy(plan)) {
            Ok(c) => c,
            Err(e) => {
                report.fail(
                    Key::stdio(target.name(), 0, 0),
                    format!("cannot write a config: {e}"),
                );
                continue;
            }
        };
        let cmd: Vec<String> = match target {
            StdioTarget::Direct => plan.upstream_cmd(),
            StdioTarget::Relay => plan
                .relay
                .iter()
                .chain(["--".to_string()].iter())
                .chain(plan.upstream_cmd().iter())
                .cloned()
                .collect(),
            StdioTarget::Mcpx | StdioTarget::McpxWith(_) => plan
                .hub
                .iter()
                .cloned()
                .chain(["serve".into(), "--config".into(), config.path()])
                .collect(),
        };
        let variants: Vec<(usize, usize)> = PAYLOADS
            .iter()
            .flat_map(|&p| WINDOWS.iter().map(move |&w| (p, w)))
            .collect();
        plan.log(format!("round {} stdio {}", round + 1, target.name()));
        let mut peer = match stdio::Peer::spawn(&cmd, plan.child_stderr())
            .and_then(|mut p| p.handshake().map(|_| p))
        {
            Ok(p) => p,
            Err(e) => {
                for (p, w) in variants {
                    report.fail(Key::stdio(target.name(), p, w), e.to_string());
                }
                continue;
            }
        };
        // The process measured for CPU: the relay or hub itself, never the upstream.
        let measured = (target != StdioTarget::Direct).then(|| peer.pid());
        for (len, window) in rotated(&variants, round) {
            let key = Key::stdio(target.name(), len, window);
            match stdio_variant(plan, &mut peer, measured, len, window) {
                Ok(m) => report.add(key, round, m),
                Err(e) => report.fail(key, e.to_string()),
            }
        }
        peer.close();
        // Traced for the figure, or the figure is not of tracing.
        #[cfg(feature = "traces")]
        if target == StdioTarget::McpxWith(Policy::Traces) && trace_sink::exports() == 0 {
            report.fail(Key::stdio(target.name(), 0, 0), "no export reached the trace sink: the hub did not trace".into());
        }
    }
}

fn stdio_variant(
    plan: &Plan,
    peer: &mut stdio::Peer,
    measured: Option<u32>,
    len: usize,
    window: usize,
) -> io::Result<Metrics> {
    let text = payload(len);
    // Warm up and calibrate: the measured run lasts about stdio_secs().
    let warm = if len > 1024 { 50 } else { 500 };
    let peak_reset = measured.is_some_and(sys::reset_peak_rss);
    let w = peer.load(warm, window, &text)?;
    let per_call = w.elapsed_ns as f64 / warm as f64;
    let n = ((plan.stdio_secs() * 1e9 / per_call) as usize).clamp(100, 200_000);
    let cpu0 = measured.and_then(sys::cpu_us);
    let run = peer.load(n, window, &text)?;
    let cpu1 = measured.and_then(sys::cpu_us);
    let mut m = Metrics::from_latencies(&run.lat_ns, run.elapsed_ns, run.errors);
    if let (Some(a), Some(b)) = (cpu0, cpu1) {
        m.cpu_us_per_req = Some((b - a) as f64 / n as f64);
    }
    if let Some(pid) = measured {
        m.rss_kib = sys::vm_kib(pid, if peak_reset { "VmHWM" } else { "VmRSS" });
    }
    Ok(m)
}

/// A bridge process (stdin held open, so a server that also reads stdin
/// does not see end of input).
struct Bridge {
    child: Child,
    port: u16,
}

impl Bridge {
    fn start(
        plan: &Plan,
        cmd: &[String],
        env: &[(String, String)],
        port: u16,
    ) -> io::Result<Bridge> {
        let (program, args) = cmd
            .split_first()
            .ok_or_else(|| io::Error::other("empty command"))?;
        let child = Command::new(program)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(plan.child_stderr())
            .stderr(plan.child_stderr())
            .spawn()
            .map_err(|e| io::Error::other(format!("cannot start `{program}`: {e}")))?;
        let mut b = Bridge { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(b);
            }
            if let Ok(Some(status)) = b.child.try_wait() {
                return Err(io::Error::other(format!(
                    "`{program}` exited before listening ({status})"
                )));
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!(
                    "`{program}` did not listen on 127.0.0.1:{port} within 30 s"
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        // SIGTERM first so bridges can stop their children; then SIGKILL.
        sys::signal(self.child.id(), libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_millis(1500);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The mcpx HTTP target.
fn mcpx_http(plan: &Plan) -> HttpTarget {
    let hub = plan.hub.clone();
    let policy = plan.policy;
    HttpTarget {
        name: "mcpx serve --http".into(),
        launch: Ok(Box::new(move |port, upstream| {
            // The config is written per launch; its path is derived from the port.
            let path = std::env::temp_dir().join(format!(
                "mcpx-bench-http-{}-{port}.json",
                std::process::id()
            ));
            let servers = serde_json::json!({"u1": {"command": upstream[0], "args": &upstream[1..], "prefix": ""}});
            let doc = hub_doc(servers, policy, &path);
            let _ = std::fs::write(&path, serde_json::to_vec(&doc).unwrap_or_default());
            hub.iter()
                .cloned()
                .chain([
                    "serve".into(),
                    "--http".into(),
                    format!("127.0.0.1:{port}"),
                    "--config".into(),
                    path.to_string_lossy().into_owned(),
                ])
                .collect()
        })),
        path: "/mcp".into(),
        note: env!("CARGO_PKG_VERSION").into(),
        // The desktop caps, so that the 64-client rows measure the same
        // thing in mcpx-edge (16 sessions, 2 MiB queues by default).
        env: vec![("MCPX_LIMITS".into(), crate::Limits::DESKTOP.spec())],
    }
}

fn http_round(plan: &Plan, round: usize, report: &mut Report) {
    let mcpx = mcpx_http(plan);
    // Index 0 is mcpx, then the peers.
    let order: Vec<usize> = (0..=plan.peers.len()).collect();
    let variants: Vec<(usize, usize)> = PAYLOADS
        .iter()
        .flat_map(|&p| CLIENTS.iter().map(move |&c| (p, c)))
        .collect();
    for i in rotated(&order, round) {
        let t = if i == 0 { &mcpx } else { &plan.peers[i - 1] };
        let launch = match &t.launch {
            Ok(l) => l,
            Err(why) => {
                for &(p, c) in &variants {
                    report.fail(Key::http(&t.name, p, c), why.clone());
                }
                continue;
            }
        };
        // A fresh bridge per row: its RSS and sessions start from scratch.
        for (len, clients) in rotated(&variants, round) {
            let key = Key::http(&t.name, len, clients);
            let port = match sys::free_port() {
                Ok(p) => p,
                Err(e) => {
                    report.fail(key, format!("no free port: {e}"));
                    continue;
                }
            };
            let cmd = launch(port, &plan.upstream_cmd());
            plan.log(format!(
                "round {} http {}: {}",
                round + 1,
                t.name,
                cmd.join(" ")
            ));
            let result = Bridge::start(plan, &cmd, &t.env, port)
                .and_then(|bridge| http_variant(plan, &bridge, &t.path, len, clients));
            match result {
                Ok(m) => report.add(key, round, m),
                Err(e) => report.fail(key, e.to_string()),
            }
            if i == 0 {
                let _ = std::fs::remove_file(std::env::temp_dir().join(format!(
                    "mcpx-bench-http-{}-{port}.json",
                    std::process::id()
                )));
            }
        }
    }
}

fn http_variant(
    plan: &Plan,
    bridge: &Bridge,
    path: &str,
    len: usize,
    clients: usize,
) -> io::Result<Metrics> {
    let text = Arc::new(payload(len));
    let barrier = Arc::new(Barrier::new(clients + 1));
    let secs = plan.http_secs();
    let port = bridge.port;
    let mut handles = Vec::with_capacity(clients);
    for _ in 0..clients {
        let (text, barrier, path) = (text.clone(), barrier.clone(), path.to_string());
        handles.push(std::thread::spawn(
            move || -> io::Result<(Vec<u64>, u64)> {
                let mut conn = (|| {
                    let mut c = http::Client::connect(port, &path)?;
                    c.handshake()?;
                    Ok::<_, io::Error>(c)
                })();
                barrier.wait(); // 1: all connected
                                // Warm-up, all clients at once, as long as the measured run:
                                // fresh bridges (JITs, allocators, pools) settle first.
                let warm = match &mut conn {
                    Ok(c) => {
                        let end = Instant::now() + Duration::from_secs_f64(secs);
                        let mut n = 0;
                        let mut r = Ok(());
                        while r.is_ok() && (n < 3 || Instant::now() < end) {
                            r = c.call(&text).map(|_| ());
                            n += 1;
                        }
                        r
                    }
                    Err(_) => Ok(()),
                };
                barrier.wait(); // 2: all warm
                barrier.wait(); // 3: go
                let mut c = conn?;
                warm?;
                let deadline = Instant::now() + Duration::from_secs_f64(secs);
                let mut lat = Vec::new();
                let mut errors = 0;
                while Instant::now() < deadline {
                    let (ns, ok) = c.call(&text)?;
                    lat.push(ns);
                    errors += u64::from(!ok);
                }
                c.close();
                Ok((lat, errors))
            },
        ));
    }
    barrier.wait(); // 1: all connected
    barrier.wait(); // 2: all warm
    let pid = bridge.child.id();
    let peak_reset = sys::reset_peak_rss(pid);
    let cpu0 = sys::cpu_us(pid);
    let client0 = sys::cpu_us(std::process::id());
    let t0 = Instant::now();
    barrier.wait(); // 3: go
    let mut lat = Vec::new();
    let mut errors = 0;
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok((l, e))) => {
                lat.extend(l);
                errors += e;
            }
            Ok(Err(e)) => first_err = first_err.or(Some(e)),
            Err(_) => first_err = first_err.or(Some(io::Error::other("client thread panicked"))),
        }
    }
    let elapsed = t0.elapsed().as_nanos() as u64;
    let cpu1 = sys::cpu_us(pid);
    let client1 = sys::cpu_us(std::process::id());
    if let Some(e) = first_err {
        return Err(e);
    }
    let mut m = Metrics::from_latencies(&lat, elapsed, errors);
    if let (Some(a), Some(b)) = (cpu0, cpu1) {
        m.cpu_us_per_req = Some((b - a) as f64 / lat.len().max(1) as f64);
    }
    if let (Some(a), Some(b)) = (client0, client1) {
        m.client_cpu_us_per_req = Some((b - a) as f64 / lat.len().max(1) as f64);
    }
    // Without a reset, VmHWM is the peak over the bridge's whole life.
    m.rss_kib = sys::vm_kib(pid, if peak_reset { "VmHWM" } else { "VmRSS" });
    Ok(m)
}

fn footprint_round(plan: &Plan, round: usize, report: &mut Report) {
    for n in rotated(&[1usize, 8], round) {
        let key = Key::footprint(n);
        match footprint(plan, n) {
            Ok(m) => report.add(key, round, m),
            Err(e) => report.fail(key, e.to_string()),
        }
    }
    // The floor for start-up: the upstream alone.
    let t0 = Instant::now();
    let floor = stdio::Peer::spawn(&plan.upstream_cmd(), plan.child_stderr()).and_then(|mut p| {
        p.handshake()?;
        let init = t0.elapsed();
        p.call(b"x")?;
        let first = t0.elapsed();
        let rss = sys::vm_kib(p.pid(), "VmRSS");
        p.close();
        Ok((init, first, rss))
    });
    match floor {
        Ok((init, first, rss)) => {
            let m = Metrics {
                start_init_ms: Some(init.as_secs_f64() * 1e3),
                start_call_ms: Some(first.as_secs_f64() * 1e3),
                rss_kib: rss,
                ..Metrics::default()
            };
            report.add(Key::footprint(0), round, m);
        }
        Err(e) => report.fail(Key::footprint(0), e.to_string()),
    }
}

fn footprint(plan: &Plan, n: usize) -> io::Result<Metrics> {
    let config = Config::new(&plan.upstream_cmd(), n, plan.policy)?;
    let cmd: Vec<String> = plan
        .hub
        .iter()
        .cloned()
        .chain(["serve".into(), "--config".into(), config.path()])
        .collect();
    let t0 = Instant::now();
    let mut p = stdio::Peer::spawn(&cmd, plan.child_stderr())?;
    p.initialize()?;
    let t_init = t0.elapsed();
    p.initialized_and_list()?;
    p.call(b"x")?;
    let t_call = t0.elapsed();
    std::thread::sleep(Duration::from_millis(300));
    let mut m = Metrics {
        start_init_ms: Some(t_init.as_secs_f64() * 1e3),
        start_call_ms: Some(t_call.as_secs_f64() * 1e3),
        rss_idle_kib: sys::vm_kib(p.pid(), "VmRSS"),
        ..Metrics::default()
    };
    // Load: pipelined small and large calls.
    for &len in &PAYLOADS {
        let text = payload(len);
        let count = if len > 1024 { 300 } else { 5000 };
        p.load(count, 16, &text)?;
    }
    m.rss_kib = sys::vm_kib(p.pid(), "VmRSS");
    m.hwm_kib = sys::vm_kib(p.pid(), "VmHWM");
    p.close();
    Ok(m)
}

/// Allocation counts per forwarded call, from an mcpx built with the
/// `count-alloc` feature (it prints its counters on SIGUSR2).
fn alloc_section(plan: &Plan, report: &mut Report) {
    let Some(hub) = &plan.alloc_hub else {
        for len in PAYLOADS {
            report.fail(
                Key::alloc(len),
                "not measured: needs an mcpx built with --features count-alloc".into(),
            );
        }
        return;
    };
    let result = (|| -> io::Result<Vec<(usize, f64, f64)>> {
        let config = Config::new(&plan.upstream_cmd(), 1, plan.policy)?;
        let cmd: Vec<String> = hub
            .iter()
            .cloned()
            .chain(["serve".into(), "--config".into(), config.path()])
            .collect();
        let mut p = stdio::Peer::spawn(&cmd, Stdio::piped())?;
        let counts = alloc_counts_reader(&mut p.child)?;
        p.handshake()?;
        let mut out = Vec::new();
        for len in PAYLOADS {
            let text = payload(len);
            let n = if len > 1024 { 1000 } else { 10_000 };
            p.load(n / 4, 1, &text)?; // steady state: buffers grown, tables warm
            p.load(n / 4, 16, &text)?;
            let a = read_counts(&p, &counts)?;
            p.load(n, 1, &text)?;
            let b = read_counts(&p, &counts)?;
            out.push((
                len,
                (b.0 - a.0) as f64 / n as f64,
                (b.1 - a.1) as f64 / n as f64,
            ));
        }
        p.close();
        Ok(out)
    })();
    match result {
        Ok(rows) => {
            for (len, allocs, bytes) in rows {
                let m = Metrics {
                    allocs_per_req: Some(allocs),
                    alloc_bytes_per_req: Some(bytes),
                    ..Metrics::default()
                };
                report.add(Key::alloc(len), 0, m);
            }
        }
        Err(e) => {
            for len in PAYLOADS {
                report.fail(Key::alloc(len), e.to_string());
            }
        }
    }
}

type Counts = std::sync::mpsc::Receiver<(u64, u64)>;

/// Reads the hub's stderr; forwards `mcpx-alloc:` lines as (allocs, bytes).
fn alloc_counts_reader(child: &mut Child) -> io::Result<Counts> {
    use std::io::BufRead;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| io::Error::other("stderr not piped"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("mcpx-alloc:") {
                let mut fields: BTreeMap<&str, u64> = BTreeMap::new();
                for kv in rest.split_whitespace() {
                    if let Some((k, v)) = kv.split_once('=') {
                        fields.insert(k, v.parse().unwrap_or(0));
                    }
                }
                let _ = tx.send((
                    fields.get("allocs").copied().unwrap_or(0),
                    fields.get("bytes").copied().unwrap_or(0),
                ));
            }
        }
    });
    Ok(rx)
}

fn read_counts(p: &stdio::Peer, rx: &Counts) -> io::Result<(u64, u64)> {
    while rx.try_recv().is_ok() {}
    sys::signal(p.pid(), sys::SIGUSR2);
    rx.recv_timeout(Duration::from_secs(2)).map_err(|_| {
        io::Error::other("the hub printed no allocation counts (not a count-alloc build?)")
    })
}
