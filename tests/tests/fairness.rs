//! Several clients of one `mcpx serve --http ADDR --stdio`: one HTTP
//! connection that trickles a huge body, or that never reads its answers,
//! must not stall the stdio client or the other HTTP clients (issue 11 item
//! 4). For the trickle, latencies are compared with a baseline taken in the
//! same test; the figures are printed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpx_tests::*;

#[path = "../../posix/tests/support/flood.rs"]
mod flood;
use flood::Flood;
use serde_json::{json, Value};

struct StdioClient {
    child: Child,
    stdin: ChildStdin,
    lines: BufReader<ChildStdout>,
    next_id: u64,
}

impl StdioClient {
    /// Sends a request; returns its answer and the milliseconds it took.
    fn call(&mut self, method: &str, params: Value) -> (Value, f64) {
        self.next_id += 1;
        let id = self.next_id;
        let began = Instant::now();
        let msg = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
        for _ in 0..1000 {
            let mut line = String::new();
            assert!(self.lines.read_line(&mut line).unwrap() > 0, "mcpx closed stdout");
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if v["id"] == id {
                return (v, began.elapsed().as_secs_f64() * 1000.0);
            }
        }
        panic!("no answer to {method}");
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn health_ms(port: u16) -> f64 {
    let began = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    began.elapsed().as_secs_f64() * 1000.0
}

fn p99(mut ms: Vec<f64>) -> f64 {
    ms.sort_by(f64::total_cmp);
    ms[(ms.len() * 99 / 100).min(ms.len() - 1)]
}

/// A chunked POST of 1-byte chunks, written as fast as the socket takes
/// them for `for_ms`, then ended.
fn trickle(port: u16, for_ms: u64, done: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        );
        s.write_all(head.as_bytes()).unwrap();
        let block = b"1\r\n \r\n".repeat(10_000);
        let until = Instant::now() + Duration::from_millis(for_ms);
        while Instant::now() < until && s.write_all(&block).is_ok() {}
        done.store(true, Ordering::SeqCst);
        let _ = s.write_all(b"0\r\n\r\n");
        let _ = s.read(&mut [0u8; 1024]);
    })
}

/// `mcpx serve --http --stdio` over the demo server, its stdio client
/// initialized and its listener up: the client, the config (kept while the
/// hub runs) and the port.
fn start_hub() -> (StdioClient, Hub, u16) {
    let hub = HubConfig::new().upstream(example_server("demo")).write();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = Command::new(mcpx())
        .args(["serve", "--config", hub.config.to_str().unwrap(), "--http", &addr, "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start mcpx");
    let stdin = child.stdin.take().unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap());
    let mut io = StdioClient { child, stdin, lines, next_id: 0 };
    let init = json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "fair", "version": "1" } });
    let (r, _) = io.call("initialize", init);
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{r}");
    writeln!(io.stdin, "{}", json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "mcpx did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    (io, hub, port)
}

#[test]
fn a_trickled_upload_stalls_neither_stdio_nor_other_http_clients() {
    let (mut io, _hub, port) = start_hub();

    let mut base_health = Vec::new();
    let mut base_stdio = Vec::new();
    for _ in 0..30 {
        base_health.push(health_ms(port));
        base_stdio.push(io.call("ping", json!({})).1);
    }
    let done = Arc::new(AtomicBool::new(false));
    let up = trickle(port, 3000, done.clone());
    std::thread::sleep(Duration::from_millis(300));
    let (mut health, mut stdio) = (Vec::new(), Vec::new());
    while !done.load(Ordering::SeqCst) && health.len() < 500 {
        let h = health_ms(port);
        let (pong, s) = io.call("ping", json!({}));
        assert!(pong.get("result").is_some(), "{pong}");
        if done.load(Ordering::SeqCst) {
            break;
        }
        health.push(h);
        stdio.push(s);
    }
    up.join().unwrap();
    let n = health.len();
    let (bh, bs) = (p99(base_health), p99(base_stdio));
    let (th, ts) = if n > 0 { (p99(health), p99(stdio)) } else { (f64::INFINITY, f64::INFINITY) };
    println!("p99 idle: /health {bh:.2} ms, stdio ping {bs:.2} ms");
    println!("p99 while one HTTP connection trickles a body of 1-byte chunks: /health {th:.2} ms, stdio ping {ts:.2} ms ({n} samples)");
    assert!(n >= 20, "only {n} /health + stdio pings answered in the 2.7 s one upload trickled");
    assert!(th < bh * 50.0 + 250.0, "/health p99 {th:.2} ms while trickling vs {bh:.2} ms idle");
    assert!(ts < bs * 50.0 + 250.0, "stdio ping p99 {ts:.2} ms while trickling vs {bs:.2} ms idle");
}

/// One connection keeps posting to a session that does not exist and never
/// reads the 404s, so mcpx's writes to it back up. Meanwhile another HTTP
/// client starts a session and lists tools, a 2026-07-28 request is
/// answered, and so is the stdio client.
#[test]
fn a_connection_that_does_not_read_its_answers_stalls_no_other_client() {
    let (mut io, _hub, port) = start_hub();
    let addr = format!("127.0.0.1:{port}");

    let a = Flood::until_backed_up(&addr, "2025-11-25");
    println!("A's requests backed up after {}", a.sent);

    let url = format!("http://{addr}/mcp");
    let sid = bearer_session(&url, "b", json!({}));
    let h = [("Authorization", "Bearer b"), ("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let listed = post(&url, &h, &json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }));
    assert!(listed.json["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "B's tools/list: {} {}", listed.status, listed.text);
    let modern = post_modern(&url, "c", &modern_request(3, "tools/list", json!({}), json!({})));
    assert!(modern["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "a 2026-07-28 tools/list: {modern}");
    let (pong, _) = io.call("ping", json!({}));
    assert!(pong.get("result").is_some(), "the stdio client's ping: {pong}");
    assert!(io.child.try_wait().unwrap().is_none(), "mcpx left");
    a.end();
}
