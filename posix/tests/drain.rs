//! Nothing dropped, end to end (the real binary, `mcpx example-server`
//! behind it): on SIGTERM with calls in flight (its `slow` tool), clients
//! on stdio and on HTTP get every answer, or, past the grace period, an
//! error saying why; a stdio client that stops reading gets every answer
//! once it reads again.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;
use support::{Scratch, MCPX};

/// How many calls are in flight when the signal comes.
const CALLS: u64 = 50;

fn config(dir: &Scratch, grace_ms: Option<u64>) -> String {
    let mut cfg = json!({"mcpServers": {"ex": {"command": MCPX, "args": ["example-server"]}}});
    if let Some(g) = grace_ms {
        cfg["shutdownGraceMs"] = json!(g);
    }
    dir.config(&cfg).display().to_string()
}

fn term(child: &Child) {
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
}

/// Waits for `child` to exit; its exit code and stderr.
fn wait(mut child: Child, stderr: Receiver<String>, limit: Duration) -> (i32, String) {
    let t0 = Instant::now();
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code().unwrap_or(-1);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mcpx did not exit within {limit:?}: {}", stderr.try_iter().collect::<Vec<_>>().join("\n"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (code, stderr.try_iter().collect::<Vec<_>>().join("\n"))
}

struct Stdio1 {
    child: Child,
    stdin: std::process::ChildStdin,
    out: Receiver<String>,
    err: Receiver<String>,
}

impl Stdio1 {
    fn start(dir: &Scratch, cfg: &str) -> Stdio1 {
        let mut child = dir.mcpx().args(["serve", "--config", cfg]).stderr(Stdio::piped()).spawn().unwrap();
        let out = support::lines(child.stdout.take().unwrap());
        let err = support::lines(child.stderr.take().unwrap());
        let stdin = child.stdin.take().unwrap();
        Stdio1 { child, stdin, out, err }
    }

    fn send(&mut self, v: &Value) {
        self.stdin.write_all(format!("{v}\n").as_bytes()).unwrap();
    }

    fn answer(&self, id: u64) -> Value {
        loop {
            let line = self.out.recv_timeout(Duration::from_secs(20)).expect("an answer");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    }

    /// initialize, then tools/list until the example server's tools are there.
    fn ready(&mut self) {
        self.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
        self.answer(0);
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        for attempt in 0..50 {
            let id = 1000 + attempt;
            self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
            if self.answer(id).to_string().contains("ex__slow") {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("ex__slow never listed");
    }
}

fn slow_call(id: u64, seconds: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "ex__slow", "arguments": {"seconds": seconds, "steps": 1}}})
}

/// Sends `CALLS` slow calls on stdio, then SIGTERM; the answers (by id)
/// that reached stdout before it closed, and mcpx's exit code and stderr.
fn stdio_drain(test: &str, seconds: u64, grace_ms: Option<u64>) -> (Vec<Value>, i32, String, Duration) {
    let dir = Scratch::create(test, &[]);
    let cfg = config(&dir, grace_ms);
    let mut s = Stdio1::start(&dir, &cfg);
    s.ready();
    for id in 1..=CALLS {
        s.send(&slow_call(id, seconds));
    }
    // Let mcpx read and forward them all.
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    term(&s.child);
    let mut answers = Vec::new();
    while let Ok(line) = s.out.recv_timeout(Duration::from_secs(30)) {
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"].as_u64().is_some_and(|id| (1..=CALLS).contains(&id)) {
            answers.push(v);
        }
    }
    let took = t0.elapsed();
    let (code, err) = wait(s.child, s.err, Duration::from_secs(10));
    (answers, code, err, took)
}

#[test]
fn sigterm_over_stdio_answers_every_call_in_flight() {
    let (answers, code, err, took) = stdio_drain("sig-stdio", 2, None);
    assert_eq!(code, 0, "{err}");
    let ok = answers.iter().filter(|a| a["result"]["content"].is_array()).count();
    assert_eq!((answers.len(), ok), (CALLS as usize, CALLS as usize), "{answers:?}\n{err}");
    assert!(took < Duration::from_secs(8), "{took:?}\n{err}");
    assert!(err.contains("SIGTERM: shutting down"), "{err}");
}

#[test]
fn past_the_grace_period_every_call_in_flight_gets_an_error() {
    let (answers, code, err, took) = stdio_drain("sig-grace", 60, Some(500));
    assert_eq!(code, 0, "{err}");
    assert_eq!(answers.len(), CALLS as usize, "{answers:?}\n{err}");
    for a in &answers {
        let msg = a["error"]["message"].as_str().unwrap_or_else(|| panic!("not an error: {a}"));
        assert!(msg.contains("shutting down") && msg.contains("'ex'") && msg.contains("500 ms"), "{a}");
    }
    assert!(took < Duration::from_secs(6), "{took:?}\n{err}");
}

/// One HTTP/1.1 exchange on its own connection, in session `sid` when
/// given: the status, head and body (an SSE body as it came).
fn post(addr: &str, sid: Option<&str>, body: &Value) -> (u16, String, String) {
    post_raw(addr, sid, &body.to_string())
}

fn post_raw(addr: &str, sid: Option<&str>, body: &str) -> (u16, String, String) {
    let session = sid.map(|sid| [("Mcp-Session-Id", sid), ("MCP-Protocol-Version", "2025-06-18")]);
    support::post_text(addr, session.as_ref().map_or(&[][..], |h| &h[..]), body)
}

/// `mcpx serve --http` on a free port with config `cfg`: the child, its
/// stderr lines and the address.
fn start_http(dir: &Scratch, cfg: &str, env: &[(&str, &str)]) -> (Child, Receiver<String>, String) {
    let mut child = dir
        .mcpx()
        .args(["serve", "--config", cfg, "--http", "127.0.0.1:0"])
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = support::lines(child.stderr.take().unwrap());
    let addr = listening_at(&err);
    (child, err, addr)
}

/// The address from mcpx's "serving MCP over HTTP at" log line.
fn listening_at(err: &Receiver<String>) -> String {
    loop {
        let line = err.recv_timeout(Duration::from_secs(10)).expect("the listening line");
        if let Some(rest) = line.split("serving MCP over HTTP at http://").nth(1) {
            return rest.trim_end_matches("/mcp").to_string();
        }
    }
}

/// An initialized session once the example server's tools are listed: its id.
fn http_session(addr: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, head, _) = post(addr, None, &init);
    assert_eq!(status, 200, "{head}");
    let sid = head.lines().find_map(|l| l.strip_prefix("Mcp-Session-Id: ")).expect("a session id").to_string();
    post(addr, Some(&sid), &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let listed = (0..50).any(|i| {
        let (_, _, body) = post(addr, Some(&sid), &json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/list"}));
        body.contains("ex__slow") || {
            std::thread::sleep(Duration::from_millis(100));
            false
        }
    });
    assert!(listed, "ex__slow never listed");
    sid
}

#[test]
fn sigterm_over_http_answers_every_call_in_flight() {
    let dir = Scratch::create("sig-http", &[]);
    let cfg = config(&dir, None);
    let (mut child, err, addr) = start_http(&dir, &cfg, &[]);
    let sid = http_session(&addr);
    let calls: Vec<_> = (1..=CALLS)
        .map(|id| {
            let (addr, sid) = (addr.clone(), sid.clone());
            std::thread::spawn(move || post(&addr, Some(&sid), &slow_call(id, 2)))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(700));
    term(&child);
    let mut answered = 0;
    for (i, c) in calls.into_iter().enumerate() {
        let (status, head, body) = c.join().unwrap();
        assert_eq!(status, 200, "call {}: {head}\n{body}", i + 1);
        assert!(body.contains("\"result\"") && body.contains("\"content\""), "call {}: {body}", i + 1);
        answered += 1;
    }
    assert_eq!(answered, CALLS);
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.try_wait().unwrap();
    if status.is_none() {
        let _ = child.kill();
    }
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{}", err.try_iter().collect::<Vec<_>>().join("\n"));
}

/// A client that writes `n` pings without reading stdout, pauses, then
/// reads: every answer arrives, in order, none lost to the full queue.
#[test]
fn a_client_that_reads_slowly_gets_every_answer() {
    const N: u64 = 20_000;
    let dir = Scratch::create("slow-reader", &[]);
    let cfg = dir.config(&json!({"mcpServers": {}})).display().to_string();
    let mut child = dir.mcpx().args(["serve", "--config", &cfg]).stderr(Stdio::piped()).spawn().unwrap();
    let err = support::lines(child.stderr.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let writer = std::thread::spawn(move || {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let mut all = format!("{init}\n{}\n", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        for id in 1..=N {
            all.push_str(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n"));
        }
        // Blocks while mcpx holds back (its stdin pipe is full).
        stdin.write_all(all.as_bytes()).unwrap();
        stdin
    });
    // Not reading: mcpx's output queue fills up (4096 messages).
    std::thread::sleep(Duration::from_secs(2));
    let lines = support::lines(stdout);
    let mut ids = Vec::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(10)) {
        let v: Value = serde_json::from_str(&line).unwrap();
        assert!(v.get("error").is_none(), "{v}");
        ids.push(v["id"].as_u64().unwrap());
        if ids.len() > N as usize {
            break;
        }
    }
    let want: Vec<u64> = (0..=N).collect();
    assert_eq!(ids.len(), want.len(), "answers received");
    assert_eq!(ids, want);
    drop(writer.join().unwrap());
    let (code, err) = wait(child, err, Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("dropped"), "{err}");
}

/// Resident memory of process `pid`, in KiB (from /proc/PID/statm).
fn rss_kib(pid: u32) -> u64 {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    pages * page / 1024
}

/// Large calls through mcpx (client → mcpx → example server's `echo` →
/// mcpx → client): afterwards mcpx's RSS is back within 20 % (+ 3 MiB) of
/// its idle figure. Prints the figures. (Sized for a debug build, which
/// moves about 1 MB every 2 s through this path; the issue's 40 × 10 MB
/// would also exceed the 24 MiB upstream line cap, as `echo` answers with
/// the text twice.)
const MESSAGES: u64 = 6;
const MESSAGE_MB: usize = 2;

#[test]
fn memory_is_given_back_after_large_messages() {
    let dir = Scratch::create("rss", &[]);
    let cfg = config(&dir, None);
    let mut s = Stdio1::start(&dir, &cfg);
    s.ready();
    std::thread::sleep(Duration::from_millis(300));
    let idle = rss_kib(s.child.id());
    let text = "m".repeat(MESSAGE_MB * 1_000_000);
    let mut peak = 0;
    for id in 1..=MESSAGES {
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                       "params": {"name": "ex__echo", "arguments": {"text": text}}}));
        let a = s.answer(id);
        assert_eq!(a["result"]["content"][0]["text"].as_str().map(str::len), Some(text.len()), "call {id}");
        peak = peak.max(rss_kib(s.child.id()));
    }
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_kib(s.child.id());
    println!("mcpx RSS: idle {idle} KiB, peak {peak} KiB, after {MESSAGES} x {MESSAGE_MB} MB {after} KiB");
    assert!(after <= idle + idle / 5 + 3 * 1024, "idle {idle} KiB, peak {peak} KiB, after {after} KiB");
    drop(s.stdin);
    let (code, err) = wait(s.child, s.err, Duration::from_secs(10));
    assert_eq!(code, 0, "{err}");
}

/// An HTTP body the listener takes (its cap raised to 4 MiB) but over the
/// 1 MiB stdio line cap of the server behind it is refused before it is
/// forwarded: the client gets an error naming the server and the limit at
/// once, not a timeout.
#[test]
fn a_message_over_the_servers_line_cap_is_refused_at_once() {
    let dir = Scratch::create("over-cap", &[]);
    let cfg = dir
        .config(&json!({"mcpServers": {"ex": {"command": MCPX, "args": ["example-server"]}}, "http": {"maxBodyBytes": 4 << 20}}))
        .display()
        .to_string();
    let (mut child, _err, addr) = start_http(&dir, &cfg, &[("MCPX_LIMITS", "frame=1M")]);
    let sid = http_session(&addr);
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "ex__echo", "arguments": {"text": "m".repeat(2 << 20)}}});
    let t0 = Instant::now();
    let (status, head, body) = post(&addr, Some(&sid), &call);
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    assert_eq!(status, 200, "{head}");
    assert!(body.contains("\"error\"") && body.contains("'ex'") && body.contains("1048576-byte limit"), "{body}");
    let _ = child.kill();
    let _ = child.wait();
}

/// One 10 MB stdio line, then three bursts of concurrent 10 MB HTTP
/// requests (the hub reads and parses each whole body, then refuses the
/// unknown tool): afterwards, with every socket closed, mcpx's RSS is back
/// within 20 % of its idle figure. Prints the figures (tests/README.md).
/// Bursts are of 6 requests, which a debug build moves in seconds;
/// `MCPX_RSS_BURST=40` runs the issue's 40.
#[test]
fn memory_is_given_back_after_bursts_of_large_requests() {
    const BURSTS: usize = 3;
    const MB: usize = 10;
    let per_burst: u64 = std::env::var("MCPX_RSS_BURST").ok().and_then(|v| v.parse().ok()).unwrap_or(6);
    let dir = Scratch::create("rss-bursts", &[]);
    let cfg = config(&dir, None);
    let mut child = dir
        .mcpx()
        .args(["serve", "--config", &cfg, "--http", "127.0.0.1:0", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = support::lines(child.stderr.take().unwrap());
    let out = support::lines(child.stdout.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let addr = listening_at(&err);
    let sid = http_session(&addr);
    std::thread::sleep(Duration::from_millis(300));
    let idle = rss_kib(child.id());
    let t0 = Instant::now();
    let pad = "m".repeat(MB * 1_000_000);
    let big_call = |id: u64| {
        std::sync::Arc::new(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"ex__no_such_tool","arguments":{{"pad":"{pad}"}}}}}}"#
        ))
    };
    // One 10 MB line on stdio.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    writeln!(stdin, "{init}\n{}", big_call(1)).unwrap();
    let answered = (0..2).filter_map(|_| out.recv_timeout(Duration::from_secs(20)).ok()).filter(|l| l.contains("\"error\"")).count();
    assert_eq!(answered, 1, "the 10 MB stdio call is answered with an error");
    // The peak, sampled while the bursts run.
    let pid = child.id();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let sampler = std::thread::spawn(move || {
        let mut peak = 0;
        while stop_rx.recv_timeout(Duration::from_millis(50)).is_err() {
            peak = peak.max(rss_kib(pid));
        }
        peak
    });
    for burst in 0..BURSTS {
        let calls: Vec<_> = (0..per_burst)
            .map(|i| {
                let (addr, sid, call) = (addr.clone(), sid.clone(), big_call(100 + i));
                std::thread::spawn(move || post_raw(&addr, Some(&sid), &call))
            })
            .collect();
        for c in calls {
            let (status, head, body) = c.join().unwrap();
            assert_eq!(status, 200, "burst {burst}: {head}");
            assert!(body.contains("\"error\""), "burst {burst}: {body}");
        }
    }
    let load = t0.elapsed();
    let _ = stop_tx.send(());
    let peak = sampler.join().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_kib(child.id());
    println!("mcpx RSS: idle {idle} KiB, peak {peak} KiB, after 1 x {MB} MB stdio + {BURSTS} x {per_burst} x {MB} MB HTTP {after} KiB (load {load:?})");
    assert!(after <= idle + idle / 5, "idle {idle} KiB, peak {peak} KiB, after {after} KiB");
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
}
