//! `mcpx serve` end to end: the real binary, real child processes (small
//! `sh` MCP servers written by the tests), real pipes and signals.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;
use support::{pid_alive, MCPX};

/// A minimal MCP server in sh: answers initialize, tools/list and
/// tools/call (`hello`, `slow`: answers after 1 s, `hang`: never answers,
/// `crash`: exits 1), ping.
/// `$1` is its name; with `$2`, it starts a long-running grandchild first
/// and writes that one's pid to the file `$2`. With `FAKE_LOG` set, every
/// line it reads is appended to that file.
const FAKE: &str = r#"
name=${1:-fake}
echo "fake server $name starting" >&2
: "${FAKE_LOG:=/dev/null}"
if [ -n "$2" ]; then sleep 300 & echo $! > "$2"; fi
while IFS= read -r line; do
  printf '%s\n' "$line" >> "$FAKE_LOG"
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"%s","version":"1"}}}\n' "$id" "$name";;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"hello","inputSchema":{"type":"object"}},{"name":"slow","inputSchema":{"type":"object"}},{"name":"crash","inputSchema":{"type":"object"}},{"name":"hang","inputSchema":{"type":"object"}}]}}\n' "$id";;
    *'"method":"tools/call"'*'"name":"slow"'*)
      sleep 1
      printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"slow %s"}]}}\n' "$id" "$name";;
    *'"method":"tools/call"'*'"name":"hang"'*)
      ;;
    *'"method":"tools/call"'*'"name":"crash"'*)
      echo "$name: crashing on purpose" >&2; exit 1;;
    *'"method":"tools/call"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"hello from %s"}]}}\n' "$id" "$name";;
    *'"method":"ping"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id";;
  esac
done
"#;

use support::Scratch as Dir;

impl Dir {
    fn new(test: &str) -> Dir {
        Dir::create(&format!("serve-{test}"), &[("fake.sh", FAKE)])
    }
    fn fake(&self, args: &[&str]) -> Value {
        let mut a = vec![self.path("fake.sh").display().to_string()];
        a.extend(args.iter().map(|s| s.to_string()));
        json!({"command": "sh", "args": a})
    }
}

struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
}

impl Session {
    fn start(dir: &Dir, args: &[&str]) -> Session {
        Session::start_with(dir, args, &[])
    }

    fn start_with(dir: &Dir, args: &[&str], env: &[(&str, &str)]) -> Session {
        let mut child = dir.mcpx().args(args).envs(env.iter().copied()).stderr(Stdio::piped()).spawn().unwrap();
        let lines = support::lines(child.stdout.take().unwrap());
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Session { stdin: child.stdin.take(), child, lines, stderr }
    }

    fn send(&mut self, msg: &Value) {
        self.send_raw(serde_json::to_string(msg).unwrap().as_bytes());
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let w = self.stdin.as_mut().expect("stdin open");
        w.write_all(bytes).unwrap();
        w.write_all(b"\n").unwrap();
        w.flush().unwrap();
    }

    /// The next message that is a response with this id (others are skipped).
    fn response(&self, id: &Value, limit: Duration) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|e| panic!("no response {id}: {e}"));
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad line {line:?}: {e}"));
            // Nothing but JSON-RPC messages on mcpx's stdout.
            assert_eq!(v["jsonrpc"], "2.0", "not a JSON-RPC message on stdout: {line}");
            if v.get("id") == Some(id) && v.get("method").is_none() {
                return v;
            }
        }
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(&json!(id), Duration::from_secs(10))
    }

    fn initialize(&mut self) -> Value {
        let r = self.request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r
    }

    fn tool_names(&mut self, id: u64) -> Vec<String> {
        let r = self.request(id, "tools/list", json!({}));
        let mut names: Vec<String> = r["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools in {r}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for mcpx to exit; returns its exit code and stderr.
    fn wait(mut self, limit: Duration) -> (i32, String) {
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                let err = self.stderr.join().unwrap();
                return (st.code().unwrap_or(-1), err);
            }
            if t0.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("mcpx did not exit within {limit:?}; stderr:\n{}", self.stderr.join().unwrap());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn text_of(r: &Value) -> String {
    r["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text in {r}")).to_string()
}

/// Alive and not a zombie.
fn wait_for_file(p: &Path) -> String {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) {
        if let Ok(s) = std::fs::read_to_string(p) {
            if s.ends_with('\n') {
                return s.trim().to_string();
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{} never written", p.display());
}

// covers: stdio-server-exit-on-eof, stdio-client-stderr-not-error
#[test]
fn aggregates_two_servers_and_exits_0_at_end_of_input() {
    let dir = Dir::new("aggregate");
    let cfg = dir.config(&json!({"mcpServers": {
        "alpha": dir.fake(&["alpha"]),
        "beta": dir.fake(&["beta"]),
    }}));
    let mut s = Session::start(&dir, &["serve", "--config", cfg.to_str().unwrap()]);
    let init = s.initialize();
    assert_eq!(init["result"]["serverInfo"]["name"], "mcpx", "{init}");
    let names = s.tool_names(1);
    for want in ["alpha__hello", "beta__hello", "alpha__slow", "beta__crash"] {
        assert!(names.contains(&want.to_string()), "{want} not in {names:?}");
    }
    let r = s.request(2, "tools/call", json!({"name": "beta__hello", "arguments": {}}));
    assert_eq!(text_of(&r), "hello from beta");
    s.close_stdin();
    let (code, err) = s.wait(Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("config loaded from"), "{err}");
    assert!(!err.contains("error"), "{err}");
}

// covers: stdio-server-exit-on-eof
#[test]
fn requests_in_flight_at_end_of_input_are_answered_first() {
    let dir = Dir::new("drain");
    let cfg = dir.config(&json!({"mcpServers": {"alpha": dir.fake(&["alpha"])}}));
    let mut s = Session::start(&dir, &["serve", "--config", cfg.to_str().unwrap()]);
    s.initialize();
    s.tool_names(1);
    s.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "alpha__slow", "arguments": {}}}));
    s.close_stdin();
    let r = s.response(&json!(2), Duration::from_secs(10));
    assert_eq!(text_of(&r), "slow alpha");
    let (code, err) = s.wait(Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
}

// covers: stdio-client-shutdown-sequence
#[test]
fn sigterm_stops_every_server_and_its_grandchildren() {
    let dir = Dir::new("sigterm");
    let pidfile = dir.path("grandchild.pid");
    let cfg = dir.config(&json!({"mcpServers": {
        "alpha": dir.fake(&["alpha", pidfile.to_str().unwrap()]),
    }}));
    let mut s = Session::start(&dir, &["serve", "--config", cfg.to_str().unwrap()]);
    s.initialize();
    let gc: i32 = wait_for_file(&pidfile).parse().unwrap();
    assert!(pid_alive(gc));
    let t0 = Instant::now();
    unsafe_kill(s.child.id() as i32, "TERM");
    let (code, err) = s.wait(Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("SIGTERM: shutting down"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(8));
    let t1 = Instant::now();
    while pid_alive(gc) && t1.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!pid_alive(gc), "grandchild {gc} outlived mcpx");
}

fn unsafe_kill(pid: i32, sig: &str) {
    assert!(Command::new("kill").args([&format!("-{sig}"), &pid.to_string()]).status().unwrap().success());
}

// covers: stdio-client-restart-crashed-server, stdio-client-may-capture-stderr
#[test]
fn a_crashed_server_is_restarted() {
    let dir = Dir::new("crash");
    let cfg = dir.config(&json!({"mcpServers": {
        "alpha": dir.fake(&["alpha"]),
        "beta": dir.fake(&["beta"]),
    }}));
    let mut s = Session::start(&dir, &["serve", "--config", cfg.to_str().unwrap()]);
    s.initialize();
    s.tool_names(1);
    let r = s.request(2, "tools/call", json!({"name": "beta__crash", "arguments": {}}));
    assert!(r.get("error").is_some() || r["result"]["isError"] == true, "{r}");
    assert!(r.to_string().contains("beta"), "the error should name the server: {r}");
    // The other server is unaffected; beta comes back after its backoff.
    let r = s.request(3, "tools/call", json!({"name": "alpha__hello", "arguments": {}}));
    assert_eq!(text_of(&r), "hello from alpha");
    let t0 = Instant::now();
    let mut id = 4;
    loop {
        let r = s.request(id, "tools/call", json!({"name": "beta__hello", "arguments": {}}));
        if r["result"]["content"][0]["text"] == "hello from beta" {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(8), "beta never came back: {r}");
        std::thread::sleep(Duration::from_millis(100));
        id += 1;
    }
    s.close_stdin();
    let (code, err) = s.wait(Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("beta: crashing on purpose"), "stderr tail should be logged: {err}");
    assert!(err.contains("server beta: restarting in"), "{err}");
}

#[test]
fn a_server_that_cannot_start_does_not_stop_the_others() {
    let dir = Dir::new("missing");
    let cfg = dir.config(&json!({"mcpServers": {
        "ghost": {"command": "/nonexistent/mcp-server"},
        "alpha": dir.fake(&["alpha"]),
    }}));
    let mut s = Session::start(&dir, &["serve", "--config", cfg.to_str().unwrap()]);
    s.initialize();
    let r = s.request(1, "tools/call", json!({"name": "alpha__hello", "arguments": {}}));
    assert_eq!(text_of(&r), "hello from alpha");
    s.close_stdin();
    let (code, err) = s.wait(Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("ghost") && err.contains("cannot start `/nonexistent/mcp-server`: command not found"),
        "{err}"
    );
}

// covers: messages-error-response-same-id-unless-unreadable
#[test]
fn an_over_long_line_is_refused_and_the_session_goes_on() {
    let dir = Dir::new("long");
    let cfg = dir.config(&json!({"mcpServers": {"alpha": dir.fake(&["alpha"])}}));
    let mut s = Session::start(&dir, &["serve", "--config", cfg.to_str().unwrap()]);
    s.initialize();
    let mut big = br#"{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":""#.to_vec();
    big.resize(25 << 20, b'a');
    big.extend_from_slice(br#""}}"#);
    s.send_raw(&big);
    let line = s.lines.recv_timeout(Duration::from_secs(10)).unwrap();
    let v: Value = serde_json::from_str(&line).unwrap();
    assert!(v.get("error").is_some(), "{v}");
    // Its id is read from the line's first bytes; the limit is named.
    assert_eq!(v["id"], json!(5), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("over the 25165824-byte limit of one stdio message (24 MiB"), "{v}");
    let r = s.request(6, "ping", json!({}));
    assert_eq!(r["result"], json!({}), "{r}");
    s.close_stdin();
    let (code, err) = s.wait(Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_bad_config_exits_1_naming_file_line_and_column() {
    let dir = Dir::new("badcfg");
    let p = dir.path("bad.json");
    std::fs::write(&p, "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\", \"args\": \"-y pkg\"}}}\n").unwrap();
    let s = Session::start(&dir, &["serve", "--config", p.to_str().unwrap()]);
    let (code, err) = s.wait(Duration::from_secs(5));
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("{}:2:25: mcpServers.a.args: expected an array of strings, found a string", p.display())),
        "{err}"
    );
}

#[test]
fn command_line() {
    let out = Command::new(MCPX).arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("mcpx serve [--config FILE]") && help.contains("mcpServers"), "{help}");

    let out = Command::new(MCPX).arg("--version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8(out.stdout).unwrap().starts_with("mcpx "));

    for args in [&["--bogus"][..], &["serve", "--bogus"], &["bogus"], &[], &["serve", "--log-level", "loud"]] {
        let out = Command::new(MCPX).args(args).stdin(Stdio::null()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.starts_with("mcpx: ") && err.contains("mcpx --help"), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn without_a_config_the_builtin_demo_aggregates_two_example_servers() {
    let dir = Dir::new("default");
    let mut s = Session::start(&dir, &["serve"]);
    s.initialize();
    let names = s.tool_names(1);
    assert!(names.iter().any(|n| n.starts_with("demo__")), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("notes__")), "{names:?}");
    s.close_stdin();
    let (code, err) = s.wait(Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("no config file found"), "{err}");
}

// covers: stdio-client-may-capture-stderr, stdio-server-may-log-to-stderr, stdio-server-stdout-only-mcp
#[test]
fn the_config_in_the_working_directory_is_found() {
    let dir = Dir::new("cwdcfg");
    dir.config(&json!({"mcpServers": {"alpha": dir.fake(&["alpha"])}, "logLevel": "debug"}));
    let mut s = Session::start(&dir, &["serve"]);
    s.initialize();
    assert_eq!(s.tool_names(1), ["alpha__crash", "alpha__hang", "alpha__hello", "alpha__slow"]);
    s.close_stdin();
    let (code, err) = s.wait(Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("config loaded from mcpx.json"), "{err}");
    // logLevel from the config applies: the server's stderr is forwarded at debug.
    assert!(err.contains("[alpha] fake server alpha starting"), "{err}");
}

#[test]
fn a_second_signal_kills_stubborn_servers_at_once() {
    let dir = Dir::new("twice");
    // Ignores end of input and SIGTERM: only SIGKILL ends it.
    let cfg = dir.config(&json!({"mcpServers": {
        "stubborn": {"command": "sh", "args": ["-c", "trap '' TERM; while :; do sleep 1; done"]},
    }}));
    let s = Session::start(&dir, &["serve", "--config", cfg.to_str().unwrap(), "--log-level", "debug"]);
    let pid = s.child.id() as i32;
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    unsafe_kill(pid, "INT");
    std::thread::sleep(Duration::from_millis(300));
    unsafe_kill(pid, "INT");
    let (code, err) = s.wait(Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
    // Without the second signal: 2 s after closing stdin + 2 s after SIGTERM.
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}\n{err}", t0.elapsed());
    assert!(err.contains("SIGINT again: killing the servers' process groups now"), "{err}");
}

#[test]
fn a_request_the_server_never_answers_times_out_by_the_configured_timeout() {
    let dir = Dir::new("timeout");
    let mut alpha = dir.fake(&["alpha"]);
    alpha["timeoutMs"] = json!(400);
    let cfg = dir.config(&json!({"mcpServers": {"alpha": alpha}}));
    let mut s = Session::start(&dir, &["serve", "--config", cfg.to_str().unwrap()]);
    s.initialize();
    s.tool_names(9);
    let t0 = Instant::now();
    let r = s.request(1, "tools/call", json!({"name": "alpha__hang", "arguments": {}}));
    let took = t0.elapsed();
    assert!(r.get("error").is_some(), "{r}");
    assert!(took >= Duration::from_millis(350) && took < Duration::from_secs(3), "{took:?} {r}");
    // The session goes on.
    let r = s.request(2, "tools/call", json!({"name": "alpha__hello", "arguments": {}}));
    assert_eq!(text_of(&r), "hello from alpha");
    s.close_stdin();
    let (code, err) = s.wait(Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
}

// The timer is not reset per message: it sleeps until the earliest
// deadline, and a call whose deadline comes before that one wakes it.
#[test]
fn a_short_timeout_fires_while_a_call_with_a_longer_one_is_in_flight() {
    let dir = Dir::new("timeout-order");
    let mut alpha = dir.fake(&["alpha"]);
    alpha["timeoutMs"] = json!(400);
    let mut beta = dir.fake(&["beta"]);
    // Past the 3 s bound below, and short enough for the drain at the end.
    beta["timeoutMs"] = json!(4_000);
    let cfg = dir.config(&json!({"mcpServers": {"alpha": alpha, "beta": beta}}));
    let mut s = Session::start(&dir, &["serve", "--config", cfg.to_str().unwrap()]);
    s.initialize();
    s.tool_names(9);
    // In flight first, with the later deadline.
    s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "beta__hang", "arguments": {}}}));
    let t0 = Instant::now();
    let r = s.request(2, "tools/call", json!({"name": "alpha__hang", "arguments": {}}));
    let took = t0.elapsed();
    assert!(r.get("error").is_some(), "{r}");
    assert!(took >= Duration::from_millis(350) && took < Duration::from_secs(3), "{took:?} {r}");
    s.close_stdin();
    let (code, err) = s.wait(Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_pipelined_session_gets_its_lists_once_the_servers_are_up() {
    // As `printf '...' | mcpx serve`: everything written at once, then EOF.
    let dir = Dir::new("pipelined");
    let cfg = dir.config(&json!({"mcpServers": {
        "alpha": dir.fake(&["alpha"]),
        "beta": dir.fake(&["beta"]),
    }}));
    let mut s = Session::start(&dir, &["serve", "--config", cfg.to_str().unwrap()]);
    let msgs = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "beta__hello", "arguments": {}}}),
    ];
    let all: Vec<String> = msgs.iter().map(|m| m.to_string()).collect();
    s.send_raw(all.join("\n").as_bytes());
    s.close_stdin();
    let r = s.response(&json!(2), Duration::from_secs(10));
    assert_eq!(r["result"]["tools"].as_array().map(Vec::len), Some(8), "{r}");
    let r = s.response(&json!(3), Duration::from_secs(10));
    assert_eq!(text_of(&r), "hello from beta");
    let (code, err) = s.wait(Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
}

// covers: stdio-client-stdin-only-mcp
#[test]
fn servers_get_one_json_rpc_message_per_line_and_their_env() {
    let dir = Dir::new("stdin-only");
    let log = dir.path("alpha-stdin.log");
    let mut alpha = dir.fake(&["alpha"]);
    alpha["env"] = json!({"FAKE_LOG": log.to_str().unwrap()});
    let cfg = dir.config(&json!({"mcpServers": {"alpha": alpha}}));
    let mut s = Session::start(&dir, &["serve", "--config", cfg.to_str().unwrap()]);
    s.initialize();
    s.tool_names(1);
    let r = s.request(2, "tools/call", json!({"name": "alpha__hello", "arguments": {"text": "a\nb"}}));
    assert_eq!(text_of(&r), "hello from alpha");
    s.close_stdin();
    let (code, err) = s.wait(Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
    let seen = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = seen.lines().collect();
    assert!(lines.len() >= 4, "{seen}");
    let mut methods = Vec::new();
    for line in lines {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON: {line:?}: {e}"));
        assert!(v.is_object() && v["jsonrpc"] == "2.0", "not one JSON-RPC message: {line}");
        if let Some(m) = v["method"].as_str() {
            methods.push(m.to_string());
        }
    }
    for m in ["initialize", "notifications/initialized", "tools/list", "tools/call"] {
        assert!(methods.iter().any(|x| x == m), "{m} not sent: {methods:?}");
    }
}

#[test]
fn a_request_that_does_not_fit_the_server_queue_is_answered_with_an_error_at_once() {
    // A slow reader (`slow`: one line a second) behind a 64 KiB queue: the
    // pipe and the queue fill, and what does not fit must be refused at once
    // with an error naming the server and the limit, not wait for a timeout.
    let dir = Dir::new("queue-full");
    let cfg = dir.config(&json!({"mcpServers": {"alpha": dir.fake(&["alpha"])}}));
    let mut s = Session::start_with(&dir, &["serve", "--config", cfg.to_str().unwrap()], &[("MCPX_LIMITS", "queue=64K")]);
    s.initialize();
    s.tool_names(1);
    let pad = "x".repeat(32 << 10);
    let ids: Vec<u64> = (10..30).collect();
    let t0 = Instant::now();
    for &id in &ids {
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "alpha__slow", "arguments": {"pad": pad}}}));
    }
    let mut refused = 0;
    let mut answered = 0;
    let mut seen = std::collections::HashSet::new();
    while seen.len() < ids.len() {
        let left = Duration::from_secs(20).saturating_sub(t0.elapsed());
        let line = s.lines.recv_timeout(left).unwrap_or_else(|e| panic!("{} of {} answered: {e}", seen.len(), ids.len()));
        let v: Value = serde_json::from_str(&line).unwrap();
        let Some(id) = v["id"].as_u64() else { continue };
        assert!(ids.contains(&id) && seen.insert(id), "unexpected or repeated answer {v}");
        if let Some(e) = v.get("error") {
            let msg = e["message"].as_str().unwrap_or_default();
            assert!(msg.contains("alpha") && msg.contains("queue full") && msg.contains("65536 bytes"), "{v}");
            // The server is slow, not gone: say so, and that a retry will do.
            assert!(msg.contains("busy") && msg.contains("messages are queued") && msg.contains("retry"), "{v}");
            assert!(!msg.contains("not reading"), "{v}");
            assert_eq!(e["data"]["server"], "alpha", "{v}");
            // At once: long before any timeout, and before the slow server
            // could have worked through the queue.
            assert!(t0.elapsed() < Duration::from_secs(3), "refused only after {:?}: {v}", t0.elapsed());
            refused += 1;
        } else {
            assert_eq!(text_of(&v), "slow alpha");
            answered += 1;
        }
    }
    assert!(refused > 0, "nothing was refused; the test does not fill the queue");
    assert!(answered > 0, "nothing got through");
    s.close_stdin();
    let (code, err) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("server alpha: message to it refused"), "{err}");
}

fn cloexec_pipe() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills `fds` with two new descriptors, owned from here on.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    unsafe { (std::os::fd::OwnedFd::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1])) }
}

fn non_blocking(fd: &std::os::fd::OwnedFd) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: F_GETFL on a descriptor this test owns.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    assert!(flags >= 0);
    flags & libc::O_NONBLOCK != 0
}

#[test]
fn stdin_and_stdout_pipes_are_polled_and_their_flags_put_back_at_exit() {
    // O_NONBLOCK is on the open file description, shared with whoever gave
    // mcpx its pipes: mcpx may set it while it runs, but must undo it.
    let dir = Dir::new("nonblock");
    let cfg = dir.config(&json!({"mcpServers": {"alpha": dir.fake(&["alpha"])}}));
    let (in_r, in_w) = cloexec_pipe();
    let (out_r, out_w) = cloexec_pipe();
    let (in_seen, out_seen) = (in_r.try_clone().unwrap(), out_w.try_clone().unwrap());
    let mut child = Command::new(MCPX)
        .args(["serve", "--config", cfg.to_str().unwrap()])
        .current_dir(&dir.0)
        .env("HOME", &dir.0)
        .env_remove("MCPX_LOG")
        .stdin(Stdio::from(in_r))
        .stdout(Stdio::from(out_w))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = support::lines(std::fs::File::from(out_r));
    let mut w = std::fs::File::from(in_w);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    writeln!(w, "{init}").unwrap();
    let line = lines.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(line.contains("\"serverInfo\""), "{line}");
    assert!(non_blocking(&in_seen) && non_blocking(&out_seen), "pipes not polled by the reactor");
    drop(w);
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(t0.elapsed() < Duration::from_secs(10), "mcpx did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!non_blocking(&in_seen), "stdin left non-blocking");
    assert!(!non_blocking(&out_seen), "stdout left non-blocking");
}
