//! `mcpx-bench-cluster`: the throughput of 1 vs 3 mcpx replicas behind
//! HAProxy (deploy/cluster/haproxy.cfg.in) for 2026-07-28 requests, and the
//! latency of one Redis round trip as the shared-state store makes it.
//!
//!   mcpx-bench-cluster [--mcpx PATH] [--echo PATH] [--clients N] [--seconds S]
//!
//! Needs redis-server and haproxy (Debian packages). Everything listens on
//! 127.0.0.1; every process it starts is killed at the end.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn spawn(program: &Path, args: &[&str]) -> Child {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()))
}

fn wait_port(port: u16) {
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(20), "nothing listens on {port} after 20 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One keep-alive connection sending 2026-07-28 `tools/call` POSTs.
struct ModernClient {
    reader: BufReader<TcpStream>,
    port: u16,
}

impl ModernClient {
    fn connect(port: u16) -> ModernClient {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        ModernClient { reader: BufReader::new(s), port }
    }

    /// POSTs `body` for `method`/`name`; the status and the body.
    fn post(&mut self, method: &str, name: Option<&str>, body: &str) -> (u16, String) {
        let mut req = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\nContent-Length: {}\r\n",
            self.port,
            body.len()
        );
        if let Some(n) = name {
            req.push_str(&format!("Mcp-Name: {n}\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(body);
        self.reader.get_mut().write_all(req.as_bytes()).unwrap();
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status = line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let mut len = 0;
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((n, v)) = line.split_once(':') {
                if n.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; len];
        self.reader.read_exact(&mut body).unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }
}

fn modern(id: u64, method: &str, params: &str) -> String {
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}"#;
    let params = if params.is_empty() { format!("{{{meta}}}") } else { format!("{{{params},{meta}}}") };
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
}

/// Runs `clients` threads calling the echo tool through `port` for
/// `secs` (after a warm-up); calls per second and the p50/p99 in µs.
fn load(port: u16, clients: usize, secs: f64) -> (f64, u64, u64) {
    let mut probe = ModernClient::connect(port);
    let t0 = Instant::now();
    let tool = loop {
        let (_, body) = probe.post("tools/list", None, &modern(1, "tools/list", ""));
        if let Some(i) = body.find("echo__echo") {
            break body[i..i + "echo__echo".len()].to_string();
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "no echo tool: {body}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let warm = Duration::from_millis(500);
    let measure = Duration::from_secs_f64(secs);
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let tool = tool.clone();
            std::thread::spawn(move || {
                let mut c = ModernClient::connect(port);
                let body = modern(7, "tools/call", &format!(r#""name":"{tool}","arguments":{{"text":"hello"}}"#));
                let start = Instant::now();
                let mut lat = Vec::new();
                while start.elapsed() < warm + measure {
                    let t = Instant::now();
                    let (status, answer) = c.post("tools/call", Some(&tool), &body);
                    assert!(status == 200 && answer.contains("hello"), "{status} {answer}");
                    if start.elapsed() > warm {
                        lat.push(t.elapsed().as_micros() as u64);
                    }
                }
                lat
            })
        })
        .collect();
    let mut all: Vec<u64> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    all.sort_unstable();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    (all.len() as f64 / secs, pct(0.5), pct(0.99))
}

/// `n` replicas (echo upstream, shared store and key) behind HAProxy: its port.
fn cluster(procs: &mut Procs, dir: &Path, mcpx: &Path, echo: &Path, redis: u16, n: usize) -> u16 {
    let ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
    for i in 0..n {
        let peers: Vec<String> =
            (0..n).filter(|&j| j != i).map(|j| format!(r#""r{}": "http://127.0.0.1:{}""#, j + 1, ports[j])).collect();
        let cfg = format!(
            r#"{{"mcpServers": {{"echo": {{"command": "{}"}}}}, "logLevel": "warn",
 "policy": {{"rateLimits": false, "metrics": false}},
 "state": {{"url": "redis://127.0.0.1:{redis}/0", "keyFile": "{}"}},
 "cluster": {{"replica": "r{}", "peers": {{{}}}}}}}"#,
            echo.display(),
            dir.join("state.key").display(),
            i + 1,
            peers.join(", ")
        );
        let path = dir.join(format!("n{n}-r{}.json", i + 1));
        std::fs::write(&path, cfg).unwrap();
        let addr = format!("127.0.0.1:{}", ports[i]);
        procs.0.push(spawn(mcpx, &["serve", "--http", &addr, "--config", &path.to_string_lossy()]));
        wait_port(ports[i]);
    }
    // The shipped config, with the replicas this run has (the others
    // commented out).
    let front = free_port();
    let template = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/cluster/haproxy.cfg.in")).unwrap();
    let mut cfg = template.replace("@PORT@", &front.to_string());
    for k in 0..3 {
        let tag = format!("@R{}@", k + 1);
        cfg = match ports.get(k) {
            Some(p) => cfg.replace(&tag, &p.to_string()),
            None => cfg.replace(&format!("    server r{} 127.0.0.1:{tag} check", k + 1), ""),
        };
    }
    let path = dir.join(format!("haproxy-{n}.cfg"));
    std::fs::write(&path, cfg).unwrap();
    procs.0.push(spawn(Path::new("haproxy"), &["-db", "-f", &path.to_string_lossy()]));
    wait_port(front);
    std::thread::sleep(Duration::from_millis(1500)); // health checks up
    front
}

/// Sequential `SET key 1 NX PX 60000` round trips (the nonce claim) on one
/// connection: p50 and p99 in µs.
fn redis_round_trip(port: u16, n: usize) -> (u64, u64) {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_nodelay(true).unwrap();
    let mut r = BufReader::new(s);
    let mut lat = Vec::with_capacity(n);
    let mut line = String::new();
    for i in 0..n {
        let key = format!("mcpx:nonce:bench{i}");
        let cmd = format!("*6\r\n$3\r\nSET\r\n${}\r\n{key}\r\n$1\r\n1\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n60000\r\n", key.len());
        let t = Instant::now();
        r.get_mut().write_all(cmd.as_bytes()).unwrap();
        line.clear();
        r.read_line(&mut line).unwrap();
        lat.push(t.elapsed().as_micros() as u64);
        assert!(line.starts_with("+OK"), "{line}");
    }
    lat.sort_unstable();
    (lat[n / 2], lat[n * 99 / 100])
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |k: &str| args.iter().position(|a| a == k).and_then(|i| args.get(i + 1)).cloned();
    let here = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let mcpx = opt("--mcpx").map(PathBuf::from).unwrap_or_else(|| here.join("mcpx"));
    let echo = opt("--echo").map(PathBuf::from).unwrap_or_else(|| here.join("mcpx-bench-echo"));
    let clients: usize = opt("--clients").and_then(|v| v.parse().ok()).unwrap_or(8);
    let secs: f64 = opt("--seconds").and_then(|v| v.parse().ok()).unwrap_or(3.0);
    let dir = std::env::temp_dir().join(format!("mcpx-bench-cluster-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("state.key"), "2a".repeat(32)).unwrap();

    let mut procs = Procs(Vec::new());
    let redis = free_port();
    let rp = redis.to_string();
    procs.0.push(spawn(Path::new("redis-server"), &["--port", &rp, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]));
    wait_port(redis);

    println!("mcpx-bench-cluster: {clients} clients, {secs} s per row, 2026-07-28 tools/call of the echo upstream through HAProxy");
    println!("{:<28} {:>10} {:>10} {:>10}", "row", "req/s", "p50 µs", "p99 µs");
    let mut rates = Vec::new();
    for n in [1, 3] {
        let front = cluster(&mut procs, &dir, &mcpx, &echo, redis, n);
        let (rate, p50, p99) = load(front, clients, secs);
        println!("{:<28} {rate:>10.0} {p50:>10} {p99:>10}", format!("{n} replica(s) + HAProxy"));
        rates.push(rate);
    }
    println!("3 replicas ÷ 1 replica: {:.2}×", rates[1] / rates[0]);
    let (p50, p99) = redis_round_trip(redis, 5000);
    println!("{:<28} {:>10} {p50:>10} {p99:>10}", "Redis SET NX PX round trip", "");
    let _ = std::fs::remove_dir_all(&dir);
}
