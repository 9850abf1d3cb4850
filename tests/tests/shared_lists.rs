//! Cached upstream listings shared by replicas through Redis (issue 16): a
//! lazy server's lists learned on one replica are known on another that
//! never ran it, so listing there does not start it; only a call does. A
//! server that is not lazy is listed while it still starts, and a call
//! waits for it.
//! Redis and the replicas run on free loopback ports, each replica with its
//! own empty `XDG_STATE_HOME` (no disk cache to fall back on), and the lazy
//! server is wrapped in a script that records each start with the name of
//! the replica that started it.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::{json, Value};

/// The store key of server `demo`'s lists (its name in hex).
const DEMO_KEY: &str = "mcpx:lists:64656d6f";

struct Setup {
    dir: TempDir,
    redis: HttpServer,
    redis_port: u16,
    /// One line per start of the lazy server: the replica that started it.
    marker: PathBuf,
}

fn setup() -> Setup {
    let dir = TempDir::new();
    let (redis, redis_port) = redis_server();
    let script = "sleep \"$DELAY\"\nprintf '%s\\n' \"$REPLICA\" >> \"$1\"\nshift\nexec \"$@\"\n";
    std::fs::write(dir.path().join("record-start.sh"), script).unwrap();
    let marker = dir.path().join("starts");
    // The replicas' shared key: what one keeps in Redis verifies on another.
    std::fs::write(dir.path().join("state.key"), "4e".repeat(32)).unwrap();
    Setup { dir, redis, redis_port, marker }
}

impl Setup {
    /// Replica `name`: `mcpx serve --http` with the lazy `demo` (the same
    /// command line on every replica) and the shared store.
    fn replica(&self, name: &str) -> HttpServer {
        self.replica_with(name, true, 0)
    }

    /// Replica `name` with `demo` lazy or not, its process coming up
    /// `delay_s` seconds after it is started.
    fn replica_with(&self, name: &str, lazy: bool, delay_s: u32) -> HttpServer {
        let demo = example_server_cmd("demo");
        let mut args = vec![self.dir.path().join("record-start.sh").display().to_string(), self.marker.display().to_string()];
        args.push(demo.program.display().to_string());
        args.extend(demo.args);
        let cfg = json!({
            "mcpServers": {"demo": {"command": "sh", "args": args, "lazy": lazy, "env": {"REPLICA": name, "DELAY": delay_s.to_string()}}},
            "state": {"url": format!("redis://127.0.0.1:{}/0", self.redis_port), "keyFile": self.dir.path().join("state.key")},
        });
        let cfg_path = self.dir.path().join(format!("{name}.json"));
        std::fs::write(&cfg_path, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
        let state = self.dir.path().join(format!("state-{name}"));
        std::fs::create_dir_all(&state).unwrap();
        let port = free_port();
        let (env, addr) = (format!("XDG_STATE_HOME={}", state.display()), format!("127.0.0.1:{port}"));
        let cmd = Cmd::new("env", &[&env, mcpx().to_str().unwrap(), "serve", "--config", &cfg_path.to_string_lossy(), "--http", &addr]);
        HttpServer::start(&cmd, port, "/mcp")
    }

    /// The replicas that started the lazy server, in order.
    fn starts(&self) -> Vec<String> {
        std::fs::read_to_string(&self.marker).unwrap_or_default().lines().map(String::from).collect()
    }

    /// Does Redis hold `key`? (`None`: Redis does not answer.)
    fn redis_has(&self, key: &str) -> Option<bool> {
        let mut s = TcpStream::connect(("127.0.0.1", self.redis_port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        s.write_all(format!("EXISTS {key}\r\n").as_bytes()).ok()?;
        let mut line = String::new();
        BufReader::new(s).read_line(&mut line).ok()?;
        Some(line.trim_end() == ":1")
    }
}

/// Server `name` in replica `r`'s `/status`.
fn upstream(r: &HttpServer, name: &str) -> Value {
    let url = r.url.replace("/mcp", "/status");
    let st = http(&url, &[("Accept", "application/json")], None).json;
    st["upstreams"].as_array().and_then(|a| a.iter().find(|u| u["name"] == name).cloned()).unwrap_or(Value::Null)
}

/// Waits (at most 20 s) until `cond` holds.
fn until(what: &str, cond: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < Duration::from_secs(20), "{what}: not within 20 s");
        thread::sleep(Duration::from_millis(50));
    }
}

/// `demo__greet` through an SDK client of `r`: the client's report.
fn greet(client: Client, r: &HttpServer, who: &str) -> Report {
    let args = json!({"name": who}).to_string();
    client.run_url(&["--prefix", "demo__", "--expect-text", &format!("Hello, {who}!"), "call", "greet", &args], &r.url)
}

fn lists(client: Client, r: &HttpServer) -> Vec<String> {
    let report = client.run_url(&["list"], &r.url);
    report.assert_ok();
    report.tools()
}

#[test]
fn a_replica_knows_a_lazy_servers_tools_from_another_and_starts_it_only_for_a_call() {
    let s = setup();
    // Replica 1 has never run demo: it starts it once to learn its lists,
    // and keeps them in Redis.
    let r1 = s.replica("r1");
    until("r1 lists demo", || lists(Client::Py2Mode("2026-07-28"), &r1).contains(&"demo__greet".to_string()));
    until("demo's lists in Redis", || s.redis_has(DEMO_KEY) == Some(true));
    assert_eq!(s.starts(), ["r1"]);
    // Replica 2, started afterwards with an empty disk cache, lists demo's
    // tools (modern and legacy clients) without starting it.
    let r2 = s.replica("r2");
    let modern = lists(Client::Py2Mode("2026-07-28"), &r2);
    assert!(modern.contains(&"demo__greet".to_string()), "{modern:?}");
    let legacy = lists(Client::TsV1, &r2);
    assert!(legacy.contains(&"demo__greet".to_string()), "{legacy:?}");
    let up = upstream(&r2, "demo");
    assert_eq!((up["state"].as_str(), up["starts"].as_u64()), (Some("asleep"), Some(0)), "{up:#}");
    assert_eq!(s.starts(), ["r1"], "listing on r2 started nothing");
    // A call through replica 2 starts it there and is answered.
    greet(Client::Py2Mode("2026-07-28"), &r2, "r2").assert_ok();
    assert_eq!(s.starts(), ["r1", "r2"]);
    assert_eq!(upstream(&r2, "demo")["state"], "ready");
}

#[test]
fn with_redis_down_a_replica_starts_at_once_and_learns_the_lists_itself() {
    let mut s = setup();
    let r1 = s.replica("r1");
    until("demo's lists in Redis", || s.redis_has(DEMO_KEY) == Some(true));
    s.redis.kill();
    // Not known from Redis (down) nor from its own disk: started to learn them.
    let t0 = Instant::now();
    let r2 = s.replica("r2");
    let tools = lists(Client::Py2Mode("2026-07-28"), &r2);
    assert!(tools.contains(&"demo__greet".to_string()), "{tools:?}");
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    assert_eq!(s.starts(), ["r1", "r2"], "r1 ({}) started it once, r2 once", r1.url);
}

#[test]
fn a_replica_lists_a_server_that_is_still_starting_and_its_calls_wait_for_it() {
    let s = setup();
    let _r1 = s.replica_with("r1", false, 0);
    until("demo's lists in Redis", || s.redis_has(DEMO_KEY) == Some(true));
    // Replica 2's demo takes 8 s to come up; its tools are listed before.
    let r2 = s.replica_with("r2", false, 8);
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/list")];
    let got = post(&r2.url, &headers, &modern_request(1, "tools/list", json!({}), json!({})));
    assert!(got.text.contains("demo__greet"), "{} {}", got.status, got.text);
    assert_eq!(s.starts(), ["r1"], "r2 listed demo before its process was up");
    // A call through replica 2 waits for it rather than fail as unknown.
    greet(Client::Py2Mode("2026-07-28"), &r2, "early").assert_ok();
    assert_eq!(s.starts(), ["r1", "r2"]);
}
