//! `mcpx example-server`: a built-in MCP server on stdio.
//!
//! Newline-delimited JSON-RPC on stdin/stdout, single-threaded on smol.
//! It carries the conformance-suite fixtures (`test_*` tools, `test://` resources,
//! `test_*` prompts) and a few general tools (echo, add, slow, ask_user, …) used by
//! the README demo, the tests and the benchmarks.
//!
//! Eras. A plain `initialize` opens a legacy session (2024-11-05 … 2025-11-25:
//! the client's version is echoed when accepted, else the newest accepted one is
//! offered) and results are shaped for that revision. A request whose
//! `params._meta` names a modern version (2026-07-28), and `server/discover`,
//! are served statelessly: per-request capabilities and log level, `resultType`
//! and caching hints on results, input gathered with `InputRequiredResult`
//! instead of server→client requests. `--revisions` limits both.
//!
//! Modules: `server` (dispatch, sessions, cancellation, async tools),
//! `tools`/`resources`/`prompts` (catalogs and pure handlers), `flow` (tools and
//! prompts that need client input, as step functions run by both eras), `tasks`
//! (the `io.modelcontextprotocol/tasks` extension), `core_tasks` (the
//! 2025-11-25 tasks utility), `http` (`--http`), `content` (content blocks
//! per revision), `wire` (JSON-RPC plumbing).

mod content;
mod core_tasks;
mod demo;
mod flow;
mod http;
mod prompts;
mod resources;
mod server;
mod task_store;
mod tasks;
pub(crate) mod tools;
pub(crate) mod wire;

use mcpx_core::frame::line::{LineDecoder, LineEvent};
use server::{Out, Server};
use smol::channel::{bounded, Receiver};
use smol::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use crate::process::exec::Executor;
use smol::Timer;
use std::io::Write as _;
use std::rc::Rc;
use std::time::{Duration, Instant};
use mcpx_core::revision::{Revision, Revisions};

/// Input line buffer size; longer lines are skipped with an error.
const MAX_LINE: usize = 16 << 20;
/// Outgoing messages queued for stdout before senders wait.
pub(super) const OUT_QUEUE: usize = 1024;

const USAGE: &str =
    "usage: mcpx example-server [--demo] [--revisions REV[,REV...]] [--name NAME] [--page-size N]
                          [--http ADDR]

A built-in MCP server on stdio (newline-delimited JSON-RPC), or with --http on
Streamable HTTP.

  --demo            serve only the demo catalog (echo, add, current_time, a
                    readme resource, a greeting prompt) instead of the fixtures
  --revisions LIST  protocol revisions to accept, comma-separated
                    (default: 2024-11-05,2025-03-26,2025-06-18,2025-11-25,2026-07-28)
  --name NAME       serverInfo.name (default: mcpx-example)
  --page-size N     items per page of tools/prompts/resources lists (default: 1000)
  --http ADDR       serve Streamable HTTP on ADDR (a loopback address and port,
                    e.g. 127.0.0.1:8080) at /mcp instead of stdio
";

#[derive(Clone, Debug)]
pub struct Config {
    /// Accepted revisions.
    pub revisions: Revisions,
    pub name: String,
    pub page_size: usize,
    /// Input line buffer size (the longest accepted message is one byte less).
    pub max_line: usize,
    /// `--demo`: the catalog is [`demo`]'s, not the fixtures.
    pub demo: bool,
    /// `--http`: serve Streamable HTTP here instead of stdio.
    pub http: Option<std::net::SocketAddr>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            revisions: Revisions::ALL,
            name: "mcpx-example".into(),
            page_size: 1000,
            max_line: MAX_LINE,
            demo: false,
            http: None,
        }
    }
}

impl Config {
    pub fn accepts(&self, r: Revision) -> bool {
        self.revisions.contains(r)
    }
    pub fn modern(&self) -> bool {
        !self.revisions.intersect(Revisions::MODERN).is_empty()
    }
    pub fn newest_legacy(&self) -> Option<Revision> {
        self.revisions.intersect(Revisions::LEGACY).latest()
    }

    pub fn parse(args: &[String]) -> Result<Config, String> {
        let mut cfg = Config::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let (flag, inline) = match a.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (a.as_str(), None),
            };
            let mut value = |flag: &str| -> Result<String, String> {
                inline
                    .clone()
                    .or_else(|| it.next().cloned())
                    .ok_or_else(|| format!("{flag} needs a value"))
            };
            match flag {
                "--revisions" => {
                    let v = value(flag)?;
                    let mut revs = Revisions::EMPTY;
                    for s in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                        let r = Revision::parse(s).ok_or_else(|| {
                            let known: Vec<&str> = Revision::ALL.iter().map(|r| r.as_str()).collect();
                            format!("unknown revision \"{s}\" (known: {})", known.join(", "))
                        })?;
                        revs = revs.with(r);
                    }
                    if revs.is_empty() {
                        return Err("--revisions needs at least one revision".into());
                    }
                    cfg.revisions = revs;
                }
                "--demo" => cfg.demo = true,
                "--http" => {
                    let v = value(flag)?;
                    let addr: std::net::SocketAddr = v.parse().map_err(|_| {
                        format!("--http needs an address and port such as 127.0.0.1:8080, not \"{v}\"")
                    })?;
                    if !addr.ip().is_loopback() {
                        return Err(format!(
                            "--http {addr}: only loopback addresses (127.0.0.1, [::1]) are served"
                        ));
                    }
                    cfg.http = Some(addr);
                }
                "--name" => {
                    cfg.name = value(flag)?;
                    if cfg.name.is_empty() {
                        return Err("--name must not be empty".into());
                    }
                }
                "--page-size" => {
                    let v = value(flag)?;
                    cfg.page_size =
                        v.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
                            format!("--page-size needs a positive integer, not \"{v}\"")
                        })?;
                }
                _ => return Err(format!("unknown argument \"{a}\"")),
            }
        }
        // The conformance fixtures are test material: a build without them
        // (mcpx-edge) serves the demo catalog only, and link-time
        // optimisation leaves the rest out of the binary.
        if !cfg!(feature = "example-fixtures") && (!cfg.demo || cfg.http.is_some()) {
            return Err("this build serves the demo catalog only (--demo, over stdio): the conformance fixtures are in the desktop build (feature example-fixtures)".into());
        }
        Ok(cfg)
    }
}

pub fn main(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{USAGE}");
        return 0;
    }
    let cfg = match Config::parse(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mcpx example-server: {e}\n\n{USAGE}");
            return 2;
        }
    };
    let ex = Rc::new(Executor::new());
    // Without the fixtures `Config::parse` refuses `--http`, and this
    // leaves the HTTP server out of the binary.
    if let Some(addr) = cfg.http.filter(|_| cfg!(feature = "example-fixtures")) {
        return crate::process::reactor::block_on(ex.run(http::serve(cfg, ex.clone(), addr)));
    }
    // Pipes and sockets are polled by the reactor (about half the round-trip
    // latency of a helper thread); their flags are restored on return.
    let io = crate::process::stdfd::stdio(64 << 10, true);
    let status = crate::process::reactor::block_on(ex.run(serve(cfg, ex.clone(), io.input, io.output)));
    drop(io.restore);
    status
}

/// Serve one client over `input`/`output` until `input` ends. Returns the exit status.
pub async fn serve<R, W>(
    cfg: Config,
    ex: Rc<Executor>,
    mut input: R,
    output: W,
) -> i32
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + 'static,
{
    let (tx, rx) = bounded::<Out>(OUT_QUEUE);
    let writer = ex.spawn(write_loop(rx, output));
    let max_line = cfg.max_line;
    let srv = Server::new(cfg, tx.clone(), ex.clone(), flow::StateKey::random());
    let mut lines = LineDecoder::new(vec![0u8; max_line]);
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match input.read(&mut buf).await {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "mcpx example-server: reading stdin: {e}");
                break;
            }
        };
        // At end of input, a last line without its newline still counts.
        let mut data: &[u8] = if n == 0 { b"\n" } else { &buf[..n] };
        while !data.is_empty() {
            let took = lines.feed(data);
            data = &data[took..];
            while let Some(event) = lines.next() {
                match event {
                    LineEvent::Line(l) if l.iter().all(u8::is_ascii_whitespace) => {}
                    LineEvent::Line(l) => srv.on_line(l).await,
                    LineEvent::TooLarge { len, .. } => {
                        let e = wire::RpcError::new(
                            wire::INVALID_REQUEST,
                            format!(
                                "message of {len} bytes skipped: the limit is {} bytes",
                                max_line - 1
                            ),
                        );
                        let _ = tx
                            .send(Out::Line(
                                wire::error_response(&serde_json::Value::Null, &e).to_string(),
                            ))
                            .await;
                    }
                }
            }
        }
        if n == 0 {
            break;
        }
    }
    // Input is closed: nothing can answer our own requests any more. Give
    // running requests a moment to finish, then flush and leave.
    srv.abandon_client_requests();
    let deadline = Instant::now() + Duration::from_secs(2);
    while srv.in_flight() > 0 && Instant::now() < deadline {
        Timer::after(Duration::from_millis(10)).await;
    }
    let (ack_tx, ack_rx) = bounded(1);
    if tx.send(Out::Flush(ack_tx)).await.is_ok() {
        let _ = smol::future::or(async { ack_rx.recv().await.ok() }, async {
            Timer::after(Duration::from_secs(5)).await;
            None
        })
        .await;
    }
    drop(writer);
    0
}

async fn write_loop<W: AsyncWrite + Unpin>(rx: Receiver<Out>, mut out: W) {
    while let Ok(msg) = rx.recv().await {
        let mut next = Some(msg);
        // Write everything queued, then flush once.
        while let Some(m) = next.take() {
            match m {
                Out::Line(s) => {
                    if out.write_all(s.as_bytes()).await.is_err()
                        || out.write_all(b"\n").await.is_err()
                    {
                        return;
                    }
                }
                Out::Flush(ack) => {
                    let _ = out.flush().await;
                    let _ = ack.try_send(());
                }
            }
            next = rx.try_recv().ok();
        }
        if out.flush().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
