//! `mcpx serve` with remote servers, end to end: the real binary against
//! small Streamable HTTP and HTTP+SSE servers run by the test on 127.0.0.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;
use support::MCPX;

/// One HTTP request as a test server saw it.
#[derive(Clone, Debug)]
struct Req {
    method: String,
    target: String,
    head: String,
    body: String,
}

impl Req {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

type Log = Arc<Mutex<Vec<Req>>>;

fn read_req(r: &mut BufReader<TcpStream>) -> Option<Req> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut head = String::new();
    let mut len = 0;
    loop {
        let mut l = String::new();
        if r.read_line(&mut l).ok()? == 0 {
            return None;
        }
        if l.trim_end().is_empty() {
            break;
        }
        if let Some((n, v)) = l.split_once(':') {
            if n.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok()?;
            }
        }
        head.push_str(&l);
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(Req { method, target, head, body: String::from_utf8(body).ok()? })
}

/// What a tiny MCP server answers to one message.
fn answer(name: &str, m: &Value) -> Option<Value> {
    let id = m.get("id")?.clone();
    let result = match m["method"].as_str()? {
        "initialize" => json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": name, "version": "1"}}),
        "tools/list" => json!({"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]}),
        "tools/call" => json!({"content": [{"type": "text", "text": format!("I am {name}")}]}),
        _ => json!({}),
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn write_json(s: &mut TcpStream, status: u16, extra: &str, body: &str) {
    let _ = write!(
        s,
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}\r\n{body}",
        body.len()
    );
}

/// A Streamable HTTP server at /mcp: JSON answers, a session id, 405 on GET.
fn streamable(log: Log) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            let log = log.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(s);
                while let Some(req) = read_req(&mut r) {
                    log.lock().unwrap().push(req.clone());
                    let s = r.get_mut();
                    match req.method.as_str() {
                        "POST" => match answer("streamy", &req.json()) {
                            Some(a) => write_json(s, 200, "mcp-session-id: abc\r\n", &a.to_string()),
                            None => write_json(s, 202, "", ""),
                        },
                        "GET" => write_json(s, 405, "", ""),
                        _ => write_json(s, 200, "", ""),
                    }
                }
            });
        }
    });
    port
}

/// A 2024-11-05 HTTP+SSE server: GET /sse is the stream, POST /msg the input.
fn legacy(log: Log) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel::<String>();
    let rx = Arc::new(Mutex::new(rx));
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            let (log, tx, rx): (Log, Sender<String>, _) = (log.clone(), tx.clone(), rx.clone());
            std::thread::spawn(move || {
                let mut r = BufReader::new(s);
                while let Some(req) = read_req(&mut r) {
                    log.lock().unwrap().push(req.clone());
                    let s = r.get_mut();
                    match (req.method.as_str(), req.target.as_str()) {
                        ("GET", "/sse") => {
                            let _ = write!(s, "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n");
                            let _ = write!(s, "event: endpoint\ndata: /msg?session=1\n\n");
                            let rx = rx.lock().unwrap();
                            while let Ok(m) = rx.recv() {
                                if write!(s, "event: message\ndata: {m}\n\n").and_then(|_| s.flush()).is_err() {
                                    return;
                                }
                            }
                        }
                        ("POST", "/msg?session=1") => {
                            if let Some(a) = answer("oldie", &req.json()) {
                                let _ = tx.send(a.to_string());
                            }
                            write_json(s, 202, "", "");
                        }
                        _ => write_json(s, 404, "", ""),
                    }
                }
            });
        }
    });
    port
}

struct Mcpx {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Mcpx {
    fn start(cfg: &Value, tag: &str) -> (Mcpx, PathBuf) {
        let dir = std::env::temp_dir().join(format!("mcpx-remote-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mcpx.json");
        std::fs::write(&path, cfg.to_string()).unwrap();
        let mut child = Command::new(MCPX)
            .args(["serve", "--config"])
            .arg(&path)
            .env("MCPX_TEST_TOKEN", "s3cret")
            .env_remove("MCPX_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = support::lines(child.stdout.take().unwrap());
        (Mcpx { stdin: child.stdin.take(), child, lines }, dir)
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|e| panic!("no response to {method}: {e}"));
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) && v.get("method").is_none() {
                return v;
            }
        }
    }

    fn send(&mut self, m: &Value) {
        let w = self.stdin.as_mut().unwrap();
        writeln!(w, "{m}").unwrap();
        w.flush().unwrap();
    }

    fn finish(mut self) -> i32 {
        self.stdin = None;
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st.code().unwrap_or(-1);
            }
            assert!(t0.elapsed() < Duration::from_secs(15), "mcpx did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

// covers: streamable-http-client-echoes-session
// covers: http-sse-client-post-to-endpoint
#[test]
fn remote_servers_are_aggregated_with_their_headers_and_nothing_of_the_client() {
    let (slog, llog): (Log, Log) = Default::default();
    let sport = streamable(slog.clone());
    let lport = legacy(llog.clone());
    let cfg = json!({"mcpServers": {
        "streamy": {"url": format!("http://127.0.0.1:{sport}/mcp"), "headers": {"Authorization": "Bearer ${MCPX_TEST_TOKEN}"}},
        "oldie": {"url": format!("http://127.0.0.1:{lport}/sse"), "timeoutMs": 5000}
    }});
    let (mut m, dir) = Mcpx::start(&cfg, "aggregate");
    let marker = "client-marker-7f3a";
    let init = m.request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {"roots": {}}, "clientInfo": {"name": marker, "version": "0"}}),
    );
    assert!(init["result"].is_object(), "{init}");
    m.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // Both servers come up in the background; wait for their tools.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut id = 1;
    let names = loop {
        id += 1;
        let r = m.request(id, "tools/list", json!({}));
        let mut names: Vec<String> =
            r["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
        names.sort();
        if names.len() == 2 || Instant::now() > deadline {
            break names;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(names, ["oldie__whoami", "streamy__whoami"]);
    for (n, who) in [("streamy__whoami", "I am streamy"), ("oldie__whoami", "I am oldie")] {
        id += 1;
        let params = json!({"name": n, "arguments": {}, "_meta": {"progressToken": marker}});
        let r = m.request(id, "tools/call", params);
        assert_eq!(r["result"]["content"][0]["text"], who, "{r}");
    }
    assert_eq!(m.finish(), 0);
    let _ = std::fs::remove_dir_all(dir);

    let sreqs = slog.lock().unwrap().clone();
    let lreqs = llog.lock().unwrap().clone();
    // The configured header on every request to its server, and only there.
    assert!(sreqs.iter().all(|q| q.header("authorization").as_deref() == Some("Bearer s3cret")), "{sreqs:?}");
    assert!(lreqs.iter().all(|q| q.header("authorization").is_none()));
    // The session is echoed after initialize, and the session ends with a DELETE.
    // (The hub probes with server/discover before initialize: count from initialize.)
    let init_at = sreqs.iter().position(|q| q.body.contains("\"initialize\"")).expect("an initialize");
    assert!(sreqs.iter().skip(init_at + 1).all(|q| q.header("mcp-session-id").as_deref() == Some("abc")), "{sreqs:?}");
    assert_eq!(sreqs.last().unwrap().method, "DELETE");
    // Nothing the client said reaches a server verbatim: not its identity,
    // not its progress token (the hub mints its own).
    for q in sreqs.iter().chain(&lreqs) {
        assert!(!q.head.contains(marker) && !q.body.contains(marker), "client data upstream: {q:?}");
    }
    // The legacy server was probed with POSTs (the hub's server/discover
    // probe, then initialize; 404 each), then got every message at its
    // announced endpoint, initialize first.
    let posts: Vec<&Req> = lreqs.iter().filter(|q| q.method == "POST").collect();
    let probes = posts.iter().take_while(|q| q.target == "/sse").count();
    assert!(probes >= 1 && posts[0].json()["method"] == "server/discover", "{posts:?}");
    assert!(posts[probes..].iter().all(|q| q.target == "/msg?session=1"), "{posts:?}");
    assert_eq!(posts[probes].json()["method"], "initialize");
    assert!(posts.len() - probes >= 4, "initialize, initialized, tools/list, tools/call: {posts:?}");
}
