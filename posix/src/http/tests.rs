//! The HTTP server over real loopback sockets, driving a real hub whose one
//! upstream is a scripted fake (in-process, no child process). The server
//! runs on its own thread (single-threaded executor, as in `mcpx serve`);
//! the tests are blocking HTTP/1.1 clients. Requirement rows are named in
//! `// covers:` comments above each test.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_io::Timer;
use serde_json::{json, Value};

use super::*;
use crate::hub::{HubOptions, Input, Output, UpstreamSpec};
use crate::process::exec::Executor;

#[path = "tests_resume.rs"]
mod resume;
#[path = "tests_rows.rs"]
mod rows;

#[path = "tests_fair.rs"]
mod fair;

#[path = "tests_details.rs"]
mod details;

#[path = "tests_hop.rs"]
mod hop;

#[path = "tests_parse.rs"]
mod parse;

#[cfg(feature = "cluster")]
#[path = "tests_dir.rs"]
mod dir;

// ---------------------------------------------------------------- the server

/// What the fake upstream received (methods), for the test to inspect.
type Seen = Arc<Mutex<Vec<String>>>;

struct Fake {
    /// A `tools/call` waiting for the client's sampling answer: its id.
    waiting_sample: Option<Value>,
    extra_tool: bool,
}

fn tool(name: &str) -> Value {
    json!({ "name": name, "description": format!("the {name} tool"), "inputSchema": { "type": "object" } })
}

/// The fake upstream's answers to one message: (delay ms, message).
fn fake_upstream(f: &mut Fake, msg: &Value) -> Vec<(u64, Value)> {
    let id = msg.get("id").cloned();
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let reply = |result: Value| json!({ "jsonrpc": "2.0", "id": id.clone().unwrap_or(Value::Null), "result": result });
    if method.is_empty() {
        // A response: the client's answer to our sampling request.
        let Some(call) = f.waiting_sample.take() else {
            return vec![];
        };
        let text = match msg.get("result") {
            Some(r) => format!(
                "sampled: {}",
                r.pointer("/content/text")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
            ),
            None => format!(
                "sampling failed: {}",
                msg.pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
            ),
        };
        return vec![(
            0,
            json!({ "jsonrpc": "2.0", "id": call, "result": { "content": [{ "type": "text", "text": text }] } }),
        )];
    }
    if id.is_none() {
        return vec![];
    }
    match method {
        "initialize" => vec![(
            0,
            reply(json!({
                "protocolVersion": msg.pointer("/params/protocolVersion").cloned().unwrap_or(json!("2025-06-18")),
                "capabilities": { "tools": { "listChanged": true }, "logging": {} },
                "serverInfo": { "name": "fake", "version": "1" },
            })),
        )],
        "tools/list" => {
            let mut tools: Vec<Value> = ["echo", "slow", "progress", "sample", "log", "notify"]
                .iter()
                .map(|n| tool(n))
                .collect();
            if f.extra_tool {
                tools.push(tool("extra"));
            }
            tools.push(json!({ "name": "region", "inputSchema": { "type": "object", "properties": {
                "region": { "type": "string", "x-mcp-header": "Region" },
                "opts": { "type": "object", "properties": { "n": { "type": "integer", "x-mcp-header": "N" } } } } } }));
            vec![(0, reply(json!({ "tools": tools })))]
        }
        "ping" => vec![(0, reply(json!({})))],
        "tools/call" => {
            let name = msg
                .pointer("/params/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let args = msg
                .pointer("/params/arguments")
                .cloned()
                .unwrap_or(json!({}));
            let text = |t: String| reply(json!({ "content": [{ "type": "text", "text": t }] }));
            match name {
                "echo" => vec![(
                    0,
                    text(
                        args.get("text")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    ),
                )],
                "region" => vec![(0, text(args.get("region").and_then(Value::as_str).unwrap_or("").to_string()))],
                "slow" => vec![(
                    args.get("ms").and_then(Value::as_u64).unwrap_or(300),
                    text("slow done".into()),
                )],
                "progress" => {
                    let token = msg
                        .pointer("/params/_meta/progressToken")
                        .cloned()
                        .unwrap_or(Value::Null);
                    let mut out: Vec<(u64, Value)> = (1..=3)
                        .map(|i| (0, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": token, "progress": i, "total": 3 } })))
                        .collect();
                    out.push((0, text("progress done".into())));
                    out
                }
                "log" => vec![
                    (
                        0,
                        json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": { "level": "info", "data": "hello" } }),
                    ),
                    (0, text("logged".into())),
                ],
                "sample" => {
                    f.waiting_sample = id.clone();
                    vec![(
                        0,
                        json!({ "jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {
                        "messages": [{ "role": "user", "content": { "type": "text", "text": "hi" } }], "maxTokens": 10 } }),
                    )]
                }
                "notify" => {
                    f.extra_tool = !f.extra_tool;
                    vec![
                        (
                            0,
                            json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }),
                        ),
                        (0, text("notified".into())),
                    ]
                }
                _ => vec![(
                    0,
                    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32602, "message": "unknown tool" } }),
                )],
            }
        }
        _ => vec![(
            0,
            json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32601, "message": "no" } }),
        )],
    }
}

struct TestServer {
    addr: SocketAddr,
    seen: Seen,
}

/// Starts a hub + fake upstream + HTTP server on a thread; returns its address.
fn start(configure: impl FnOnce(&mut HttpConfig) + Send + 'static) -> TestServer {
    start_with(configure, None, |_| {})
}

/// Same, with a real upstream process (`command`) instead of the fake.
fn start_with(
    configure: impl FnOnce(&mut HttpConfig) + Send + 'static,
    command: Option<Vec<String>>,
    hub_options: fn(&mut HubOptions),
) -> TestServer {
    start_full(configure, command, hub_options, |_| {})
}

/// [`start_with`], with `setup` called on the listener once bound (on its
/// thread).
fn start_full(
    configure: impl FnOnce(&mut HttpConfig) + Send + 'static,
    command: Option<Vec<String>>,
    hub_options: fn(&mut HubOptions),
    setup: impl FnOnce(&Http) + Send + 'static,
) -> TestServer {
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut spec = UpstreamSpec::new("fake");
        spec.prefix = String::new();
        let mut opts = HubOptions {
            startup_wait_ms: 2000,
            ..HubOptions::default()
        };
        hub_options(&mut opts);
        let hub = Rc::new(RefCell::new(
            Hub::new(vec![spec], opts).expect("hub config"),
        ));
        let t0 = Instant::now();
        let now: Rc<dyn Fn() -> u64> = Rc::new(move || t0.elapsed().as_millis() as u64);
        let http_cell: Rc<RefCell<Option<Http>>> = Rc::new(RefCell::new(None));
        let (up_tx, up_rx) = smol::channel::unbounded::<Vec<u8>>();
        let drain: Rc<dyn Fn()> = {
            let hub = hub.clone();
            let http_cell = http_cell.clone();
            Rc::new(move || loop {
                let out = hub.borrow_mut().poll_output();
                let Some(out) = out else { break };
                let http = http_cell.borrow().clone();
                // As the runtime does: HTTP sessions first.
                let Some(out) = (match &http {
                    Some(h) => h.take(out),
                    None => Some(out),
                }) else {
                    continue;
                };
                match out {
                    Output::ToClient(..) | Output::ClientInitialized(..) | Output::SessionChanged(..) | Output::CloseClient(..) => {}
                    Output::ToUpstream(_, m, _) => {
                        let _ = up_tx.try_send(m);
                    }
                    Output::RestartUpstream(..) | Output::Power(..) | Output::ListsRead(..) | Output::SaveTasks(..) | Output::SavePins(..) | Output::Shared(..) | Output::Forward { .. } => {}
                    #[cfg(feature = "consent")]
                    Output::Notify(..) => {}
                    Output::Log(..) => {}
                }
            })
        };
        let mut cfg = HttpConfig::new("127.0.0.1:0".parse().unwrap());
        configure(&mut cfg);
        let feed: Rc<dyn Fn(HubCall<'_>)> = {
            let (hub, drain, now) = (hub.clone(), drain.clone(), now.clone());
            Rc::new(move |f: HubCall<'_>| {
                f(&mut hub.borrow_mut(), now());
                drain();
            })
        };
        let link = HubLink {
            feed,
            log: Rc::new(|_, _| {}),
        };
        let (http, server) = bind(cfg, link).expect("bind");
        setup(&http);
        tx.send(http.local_addr()).unwrap();
        *http_cell.borrow_mut() = Some(http);
        let ex = Rc::new(Executor::new());
        if let Some(cmd) = command {
            let (hub, drain, now) = (hub.clone(), drain.clone(), now.clone());
            let ex2 = ex.clone();
            ex.spawn(async move {
                use smol::io::{AsyncBufReadExt, AsyncWriteExt};
                let mut child = smol::process::Command::new(&cmd[0])
                    .args(&cmd[1..])
                    .stdin(smol::process::Stdio::piped())
                    .stdout(smol::process::Stdio::piped())
                    .spawn()
                    .expect("spawn the upstream");
                let mut stdin = child.stdin.take().unwrap();
                let stdout = child.stdout.take().unwrap();
                ex2.spawn(async move {
                    while let Ok(mut m) = up_rx.recv().await {
                        m.push(b'\n');
                        if stdin.write_all(&m).await.is_err() {
                            break;
                        }
                    }
                })
                .detach();
                let mut lines = smol::io::BufReader::new(stdout).lines();
                use smol::stream::StreamExt;
                while let Some(Ok(line)) = lines.next().await {
                    hub.borrow_mut().handle(Input::UpstreamMessage { up: 0, msg: line.as_bytes(), on: None }, now());
                    drain();
                }
                let _ = child;
            })
            .detach();
        } else {
            let (hub, drain, now, ex2) = (hub.clone(), drain.clone(), now.clone(), ex.clone());
            ex.spawn(async move {
                let fake = Rc::new(RefCell::new(Fake {
                    waiting_sample: None,
                    extra_tool: false,
                }));
                while let Ok(m) = up_rx.recv().await {
                    let v: Value = serde_json::from_slice(&m).unwrap();
                    seen2.lock().unwrap().push(
                        v.get("method")
                            .and_then(Value::as_str)
                            .unwrap_or("(response)")
                            .to_string(),
                    );
                    for (delay, reply) in fake_upstream(&mut fake.borrow_mut(), &v) {
                        let (hub, drain, now) = (hub.clone(), drain.clone(), now.clone());
                        let bytes = serde_json::to_vec(&reply).unwrap();
                        let feed = move || {
                            hub.borrow_mut().handle(Input::UpstreamMessage { up: 0, msg: &bytes, on: None }, now());
                            drain();
                        };
                        if delay == 0 {
                            feed();
                        } else {
                            ex2.spawn(async move {
                                Timer::after(Duration::from_millis(delay)).await;
                                feed();
                            })
                            .detach();
                        }
                    }
                }
            })
            .detach();
        }
        // The hub's timers.
        {
            let (hub, drain, now) = (hub.clone(), drain.clone(), now.clone());
            ex.spawn(async move {
                loop {
                    let t = now();
                    let next = hub
                        .borrow()
                        .next_deadline()
                        .unwrap_or(t + 100)
                        .min(t + 100)
                        .max(t + 1);
                    Timer::after(Duration::from_millis(next - t)).await;
                    hub.borrow_mut().handle(Input::Tick, now());
                    drain();
                }
            })
            .detach();
        }
        hub.borrow_mut().handle(Input::UpstreamStarted(0), now());
        drain();
        crate::process::reactor::block_on(ex.run(server));
    });
    let addr = rx.recv().unwrap();
    TestServer { addr, seen }
}

// ---------------------------------------------------------------- the client

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// The JSON messages of an SSE body (one `data:` line each).
    fn events(&self) -> Vec<Value> {
        sse_data(&self.text())
    }
}

fn sse_data(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn write_req(
    s: &mut TcpStream,
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\n");
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut all = head.into_bytes();
    all.extend_from_slice(body);
    s.write_all(&all).unwrap();
}

/// A connection that has sent the GET opening `sid`'s standalone stream.
fn open_get(addr: SocketAddr, sid: &str) -> TcpStream {
    let mut g = connect(addr);
    let hs = [("Accept", "text/event-stream"), ("Mcp-Session-Id", sid)];
    write_req(&mut g, addr, "GET", "/mcp", &hs, b"");
    g
}

/// Reads one response (Content-Length, chunked to its end, or until close).
fn read_resp(s: &mut TcpStream, buf: &mut Vec<u8>) -> Resp {
    use mcpx_core::frame::http::{parse_response, BodyFraming, Chunk, ChunkedDecoder};
    let mut tmp = [0u8; 65536];
    let (status, headers, framing, hl) = loop {
        if let Ok(Some((h, n))) = parse_response::<64>(buf, 1 << 20).map(|s| s.complete()) {
            let hs = h
                .headers
                .iter()
                .map(|x| {
                    (
                        x.name.to_string(),
                        String::from_utf8_lossy(x.value).into_owned(),
                    )
                })
                .collect();
            let fr = h.framing("POST").unwrap();
            let fr = if h.status == 204 || h.status == 100 {
                BodyFraming::None
            } else {
                fr
            };
            break (h.status, hs, fr, n);
        }
        let n = s.read(&mut tmp).expect("read head");
        assert!(
            n > 0,
            "closed before a response head: {:?}",
            String::from_utf8_lossy(buf)
        );
        buf.extend_from_slice(&tmp[..n]);
    };
    buf.drain(..hl);
    if status == 100 {
        return read_resp(s, buf);
    }
    let mut body = Vec::new();
    match framing {
        BodyFraming::None => {}
        BodyFraming::Length(n) => {
            while buf.len() < n as usize {
                let r = s.read(&mut tmp).expect("read body");
                assert!(r > 0, "closed mid-body");
                buf.extend_from_slice(&tmp[..r]);
            }
            body = buf.drain(..n as usize).collect();
        }
        BodyFraming::Chunked => {
            let mut d = ChunkedDecoder::new();
            loop {
                let (used, c) = d.decode(buf).unwrap();
                let c = match c {
                    Chunk::Data(x) => Some(x.to_vec()),
                    Chunk::End => None,
                    Chunk::NeedMore => Some(Vec::new()),
                };
                buf.drain(..used);
                match c {
                    None => break,
                    Some(x) if !x.is_empty() => body.extend_from_slice(&x),
                    Some(_) => {
                        let r = s.read(&mut tmp).expect("read chunk");
                        assert!(r > 0, "closed mid-stream");
                        buf.extend_from_slice(&tmp[..r]);
                    }
                }
            }
        }
        BodyFraming::UntilClose => {
            body.append(buf);
            let _ = s.read_to_end(&mut body);
        }
    }
    Resp {
        status,
        headers,
        body,
    }
}

const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("Content-Type", "application/json");

fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Resp {
    let mut s = connect(addr);
    write_req(&mut s, addr, method, path, headers, body);
    read_resp(&mut s, &mut Vec::new())
}

fn post(addr: SocketAddr, sid: Option<&str>, body: &Value) -> Resp {
    let mut hs = vec![ACCEPT, JSON];
    if let Some(s) = sid {
        hs.push(("Mcp-Session-Id", s));
        hs.push(("MCP-Protocol-Version", "2025-11-25"));
    }
    request(
        addr,
        "POST",
        "/mcp",
        &hs,
        &serde_json::to_vec(body).unwrap(),
    )
}

fn initialize_body(version: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": { "sampling": {} }, "clientInfo": { "name": "t", "version": "1" } } })
}

/// initialize + notifications/initialized; returns the session id.
fn init(addr: SocketAddr) -> String {
    init_with(addr, "2025-11-25")
}

fn init_with(addr: SocketAddr, version: &str) -> String {
    let r = post(addr, None, &initialize_body(version));
    assert_eq!(r.status, 200, "{}", r.text());
    let sid = r
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();
    assert_eq!(r.json()["result"]["protocolVersion"], version);
    // The negotiated revision in the header, as the session requires.
    let hs = [ACCEPT, JSON, ("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", version)];
    let body = serde_json::to_vec(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).unwrap();
    let r = request(addr, "POST", "/mcp", &hs, &body);
    assert_eq!(r.status, 202);
    sid
}

fn call(id: u64, name: &str, args: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": name, "arguments": args } })
}

fn status_json(addr: SocketAddr) -> Value {
    request(addr, "GET", "/status", &[], b"").json()
}

/// Reads from `s` until `needle` shows up (or the timeout); returns all read.
fn read_until(s: &mut TcpStream, needle: &str, timeout: Duration) -> String {
    let until = Instant::now() + timeout;
    let mut all = Vec::new();
    let mut tmp = [0u8; 65536];
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    while Instant::now() < until && !String::from_utf8_lossy(&all).contains(needle) {
        match s.read(&mut tmp) {
            Ok(0) => break,
            Ok(n) => all.extend_from_slice(&tmp[..n]),
            Err(_) => {}
        }
    }
    String::from_utf8_lossy(&all).into_owned()
}

// ---------------------------------------------------------------- the tests

// covers: streamable-http-server-may-assign-session
// covers: streamable-http-session-id-visible-ascii
// covers: streamable-http-session-id-secure
// covers: streamable-http-server-json-or-sse-for-request
// covers: streamable-http-server-202-for-non-request
// covers: streamable-http-server-single-endpoint-post-get
#[test]
fn initialize_then_json_answers_and_202s() {
    let t = start(|_| {});
    let r = post(t.addr, None, &initialize_body("2025-11-25"));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let sid = r.header("mcp-session-id").unwrap().to_string();
    assert_eq!(sid.len(), 32);
    assert!(sid.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    let other = init(t.addr);
    assert_ne!(sid, other, "every initialize opens a new session");
    let r = post(
        t.addr,
        Some(&sid),
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    );
    assert_eq!((r.status, r.body.len()), (202, 0));
    let r = post(
        t.addr,
        Some(&sid),
        &json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/list" }),
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["id"], 7);
    assert!(r.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "echo"));
    let r = post(
        t.addr,
        Some(&sid),
        &call(8, "echo", json!({ "text": "hi" })),
    );
    assert_eq!(r.json()["result"]["content"][0]["text"], "hi");
    // A response to nothing is still accepted input.
    let r = post(
        t.addr,
        Some(&sid),
        &json!({ "jsonrpc": "2.0", "id": 99, "result": {} }),
    );
    assert_eq!(r.status, 202);
}

// covers: streamable-http-server-404-terminated-session
// covers: streamable-http-client-delete-session
// covers: streamable-http-server-may-405-delete
#[test]
fn delete_ends_the_session_and_unknown_sessions_are_404() {
    let t = start(|_| {});
    let sid = init(t.addr);
    let hs = [
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let r = request(t.addr, "DELETE", "/mcp", &hs, b"");
    assert_eq!(r.status, 204);
    let r = post(
        t.addr,
        Some(&sid),
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }),
    );
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["code"], -32600);
    assert_eq!(request(t.addr, "DELETE", "/mcp", &hs, b"").status, 404);
    let r = post(
        t.addr,
        Some("0123456789abcdef0123456789abcdef"),
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" }),
    );
    assert_eq!(r.status, 404);
    assert_eq!(request(t.addr, "DELETE", "/mcp", &[], b"").status, 400);
    assert_eq!(status_json(t.addr)["http"]["sessions"], 0);
}

// covers: streamable-http-server-400-missing-session
// covers: streamable-http-server-400-unsupported-version-header
// covers: streamable-http-server-error-status-if-rejected
#[test]
fn missing_session_and_bad_versions_are_400() {
    let t = start(|_| {});
    let r = post(
        t.addr,
        None,
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32600);
    assert_eq!(r.json()["id"], 1);
    let sid = init(t.addr);
    let body = serde_json::to_vec(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" })).unwrap();
    let hs = [
        ACCEPT,
        JSON,
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "1999-01-01"),
    ];
    let r = request(t.addr, "POST", "/mcp", &hs, &body);
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["data"]["supported"]
        .as_array()
        .unwrap()
        .contains(&json!("2025-11-25")));
    let r = request(
        t.addr,
        "POST",
        "/mcp",
        &[ACCEPT, JSON, ("Mcp-Session-Id", sid.as_str())],
        b"{not json",
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32700);
    let r = request(
        t.addr,
        "POST",
        "/mcp",
        &[
            ACCEPT,
            ("Content-Type", "text/plain"),
            ("Mcp-Session-Id", sid.as_str()),
        ],
        &body,
    );
    assert_eq!(r.status, 415);
}

// covers: streamable-http-server-assumes-2025-03-26
// covers: streamable-http-post-body-may-batch
#[test]
fn batches_only_in_2025_03_26() {
    let t = start(|_| {});
    let sid = init_with(t.addr, "2025-03-26");
    let batch = json!([
        { "jsonrpc": "2.0", "id": 1, "method": "ping" },
        { "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 77 } },
        { "jsonrpc": "2.0", "id": "two", "method": "tools/list" }
    ]);
    // No MCP-Protocol-Version header: the session's 2025-03-26 applies.
    let hs = [ACCEPT, JSON, ("Mcp-Session-Id", sid.as_str())];
    let r = request(
        t.addr,
        "POST",
        "/mcp",
        &hs,
        &serde_json::to_vec(&batch).unwrap(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    let ids: Vec<Value> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].clone())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&json!(1)) && ids.contains(&json!("two")));
    let sid2 = init(t.addr);
    let r = post(t.addr, Some(&sid2), &batch);
    assert_eq!(r.status, 400);
}

/// A 2026-07-28 request body: `params` with the per-request `_meta`.
fn modern_body(id: Value, method: &str, mut params: Value, caps: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": { "name": "t", "version": "1" },
    });
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// POSTs a modern request with the 2026 headers mirroring its body.
fn modern_post(addr: SocketAddr, body: &Value, extra: &[(&str, &str)]) -> Resp {
    let method = body["method"].as_str().unwrap().to_string();
    let name = match method.as_str() {
        "tools/call" | "prompts/get" => body["params"]["name"].as_str().map(str::to_string),
        "resources/read" => body["params"]["uri"].as_str().map(str::to_string),
        _ => None,
    };
    let mut hs = vec![ACCEPT, JSON, ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method.as_str())];
    if let Some(n) = &name {
        hs.push(("Mcp-Name", n.as_str()));
    }
    for (k, v) in extra {
        hs.retain(|(x, _)| !x.eq_ignore_ascii_case(k));
        hs.push((k, v));
    }
    request(addr, "POST", "/mcp", &hs, &serde_json::to_vec(body).unwrap())
}

/// The one JSON-RPC response of a POST answer, JSON or SSE.
fn response_of(r: &Resp) -> Value {
    if r.header("content-type").is_some_and(|c| c.starts_with("text/event-stream")) {
        r.events().into_iter().find(|e| e.get("id").is_some()).expect("a response event")
    } else {
        r.json()
    }
}

// covers: streamable-http-unsupported-version-400, streamable-http-unknown-method-404
// covers: streamable-http-server-rejects-header-body-mismatch, streamable-http-header-mismatch-400-jsonrpc
// covers: streamable-http-protocol-version-header-matches-meta, streamable-http-server-validates-param-headers
// covers: streamable-http-server-decodes-before-compare
#[test]
fn modern_requests_are_served_without_sessions() {
    let t = start(|_| {});
    let r = modern_post(t.addr, &modern_body(json!(1), "server/discover", json!({}), json!({})), &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.header("mcp-session-id").is_none(), "no session for a modern client");
    let v = r.json();
    assert_eq!(v["result"]["supportedVersions"][0], "2026-07-28");
    assert_eq!(v["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcpx");
    let r = modern_post(t.addr, &modern_body(json!(2), "tools/call", json!({ "name": "echo", "arguments": { "text": "hi" } }), json!({})), &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    let v = response_of(&r);
    assert_eq!((v["result"]["content"][0]["text"].clone(), v["result"]["resultType"].clone()), (json!("hi"), json!("complete")));
    // Missing _meta: -32602 before any header comparison.
    let body = json!({ "jsonrpc": "2.0", "id": 101, "method": "server/discover", "params": {} });
    let r = modern_post(t.addr, &body, &[]);
    assert_eq!((r.status, r.json()["error"]["code"].clone(), r.json()["id"].clone()), (400, json!(-32602), json!(101)));
    // An unsupported version, mirrored in the header: -32022.
    let mut body = modern_body(json!(301), "server/discover", json!({}), json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let r = modern_post(t.addr, &body, &[("MCP-Protocol-Version", "v999.0.0")]);
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32022)));
    assert_eq!(r.json()["error"]["data"]["requested"], "v999.0.0");
    // The same with the header saying 2026-07-28: -32020.
    let r = modern_post(t.addr, &body, &[]);
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32020)));
    // Method and name headers must mirror the body.
    let body = modern_body(json!(3), "tools/call", json!({ "name": "echo", "arguments": {} }), json!({}));
    let r = modern_post(t.addr, &body, &[("Mcp-Name", "other")]);
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32020)));
    let r = modern_post(t.addr, &body, &[("Mcp-Method", "tools/list")]);
    assert_eq!(r.json()["error"]["code"], -32020);
    // Arguments annotated with x-mcp-header must be mirrored as Mcp-Param-*.
    let body = modern_body(json!(4), "tools/call", json!({ "name": "region", "arguments": { "region": "eu-west", "opts": { "n": 3 } } }), json!({}));
    let r = modern_post(t.addr, &body, &[("Mcp-Param-Region", "eu-west"), ("Mcp-Param-N", "3")]);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = modern_post(t.addr, &body, &[("Mcp-Param-Region", "=?base64?ZXUtd2VzdA==?="), ("Mcp-Param-N", "3")]);
    assert_eq!(r.status, 200, "encoded values are decoded first: {}", r.text());
    let r = modern_post(t.addr, &body, &[("Mcp-Param-Region", "us-east"), ("Mcp-Param-N", "3")]);
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32020)));
    let r = modern_post(t.addr, &body, &[("Mcp-Param-Region", "eu-west")]);
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32020)), "a missing Mcp-Param-N");
    // Legacy-only and unknown methods: 404 and -32601.
    for m in ["initialize", "ping", "logging/setLevel", "resources/subscribe", "unknown/method"] {
        let r = modern_post(t.addr, &modern_body(json!(500), m, json!({ "uri": "x://y", "level": "info" }), json!({})), &[]);
        assert_eq!((r.status, r.json()["error"]["code"].clone()), (404, json!(-32601)), "{m}");
    }
    // A dated legacy header without _meta is still the legacy handshake.
    let hs = [ACCEPT, JSON, ("MCP-Protocol-Version", "2025-11-25")];
    let r = request(t.addr, "POST", "/mcp", &hs, &serde_json::to_vec(&initialize_body("2025-11-25")).unwrap());
    assert_eq!(r.status, 200);
    assert!(r.header("mcp-session-id").is_some());
    // Modern clients leave no session behind.
    assert_eq!(status_json(t.addr)["http"]["sessions"].as_u64().unwrap_or(1), 1, "{}", status_json(t.addr));
}

// covers: mrtr-server-requests-via-mrtr, streamable-http-sse-no-requests
#[test]
fn modern_http_client_gets_input_required_and_retries_on_another_post() {
    let t = start(|_| {});
    let caps = json!({ "sampling": {} });
    let r = modern_post(t.addr, &modern_body(json!(1), "tools/call", json!({ "name": "sample", "arguments": {} }), caps.clone()), &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    let v = response_of(&r);
    if r.header("content-type").is_some_and(|c| c.starts_with("text/event-stream")) {
        assert!(r.events().iter().all(|e| e.get("method").is_none() || e.get("id").is_none()), "no server→client request on the stream");
    }
    assert_eq!(v["result"]["resultType"], "input_required", "{v}");
    let (key, req) = v["result"]["inputRequests"].as_object().unwrap().iter().next().unwrap();
    assert_eq!(req["method"], "sampling/createMessage");
    let state = v["result"]["requestState"].as_str().unwrap();
    let answer = json!({ "role": "assistant", "content": { "type": "text", "text": "hello" }, "model": "m" });
    let retry = modern_body(json!(2), "tools/call", json!({ "name": "sample", "arguments": {}, "inputResponses": { key.clone(): answer }, "requestState": state }), caps.clone());
    let r = modern_post(t.addr, &retry, &[]);
    let v = response_of(&r);
    assert_eq!(v["result"]["content"][0]["text"], "sampled: hello", "{v}");
    // The same state again: refused, 400.
    let r = modern_post(t.addr, &retry, &[]);
    assert_eq!((r.status, response_of(&r)["error"]["code"].clone()), (400, json!(-32602)));
}

// covers: subscriptions-tag-every-notification, subscriptions-ack-first-with-id
#[test]
fn a_listen_post_is_a_stream_of_tagged_notifications() {
    let t = start(|_| {});
    let body = modern_body(json!(77), "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } }), json!({}));
    let bytes = serde_json::to_vec(&body).unwrap();
    let mut s = connect(t.addr);
    let hs = [ACCEPT, JSON, ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "subscriptions/listen")];
    write_req(&mut s, t.addr, "POST", "/mcp", &hs, &bytes);
    let got = read_until(&mut s, "acknowledged", Duration::from_secs(5));
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(got.contains("text/event-stream"), "{got}");
    let ack = sse_data(&got).into_iter().next().expect("the acknowledgement first");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 77);
    // Another POST changes the tool list: the listen stream hears it, tagged.
    let r = modern_post(t.addr, &modern_body(json!(2), "tools/call", json!({ "name": "notify", "arguments": {} }), json!({})), &[]);
    assert_eq!(response_of(&r)["result"]["content"][0]["text"], "notified");
    let got = read_until(&mut s, "list_changed", Duration::from_secs(5));
    let n = sse_data(&got).into_iter().find(|e| e["method"] == "notifications/tools/list_changed").expect("list_changed on the listen stream");
    assert_eq!(n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 77);
    // Closing the stream ends the subscription.
    drop(s);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(status_json(t.addr)["http"]["sessions"].as_u64().unwrap_or(0), 0, "{}", status_json(t.addr));
}

// covers: streamable-http-server-single-endpoint-post-get
#[test]
fn other_methods_405_and_health_and_status() {
    let t = start(|_| {});
    let r = request(t.addr, "PUT", "/mcp", &[], b"");
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, POST, DELETE"));
    let r = request(t.addr, "GET", "/health", &[], b"");
    assert_eq!((r.status, r.text().as_str()), (200, "ok"));
    assert_eq!(
        request(t.addr, "POST", "/health", &[JSON], b"{}").status,
        405
    );
    assert_eq!(request(t.addr, "GET", "/nope", &[], b"").status, 404);
    let _sid = init(t.addr);
    let s = status_json(t.addr);
    assert_eq!(s["http"]["sessions"], 1);
    assert!(
        s.get("upstreams").is_some() || s.get("hub").is_some(),
        "{s}"
    );
}

// covers: streamable-http-server-validate-origin
// covers: streamable-http-server-403-invalid-origin
// covers: http-sse-server-validate-origin
#[test]
fn foreign_origin_and_host_are_403() {
    let t = start(|_| {});
    let body = serde_json::to_vec(&initialize_body("2025-11-25")).unwrap();
    let r = request(
        t.addr,
        "POST",
        "/mcp",
        &[ACCEPT, JSON, ("Origin", "http://evil.example.com")],
        &body,
    );
    assert_eq!(r.status, 403);
    let v = r.json();
    assert!(v.get("id").is_none(), "id-less error: {v}");
    assert_eq!(v["error"]["code"], -32600);
    let origin = format!("http://{}", t.addr);
    let r = request(
        t.addr,
        "POST",
        "/mcp",
        &[ACCEPT, JSON, ("Origin", origin.as_str())],
        &body,
    );
    assert_eq!(r.status, 200);
    // DNS rebinding: a foreign Host (conformance `dns-rebinding-protection`).
    let mut s = connect(t.addr);
    let raw = format!(
        "POST /mcp HTTP/1.1\r\nHost: evil.example.com\r\nOrigin: http://evil.example.com\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(raw.as_bytes()).unwrap();
    s.write_all(&body).unwrap();
    assert_eq!(read_resp(&mut s, &mut Vec::new()).status, 403);
    let mut s = connect(t.addr);
    s.write_all(b"GET /health HTTP/1.1\r\nHost: evil.example.com:80\r\n\r\n")
        .unwrap();
    assert_eq!(read_resp(&mut s, &mut Vec::new()).status, 403);
}

// A POST refused before its body was read closes its connection: the
// answer said keep-alive, so a client that sent its next request on it at
// once (an SDK's discovery GET after a 401) got no answer at all.
#[test]
fn an_answer_before_the_body_is_read_says_the_connection_closes() {
    let t = start(|c| c.token = Some("s3cret-token".into()));
    let body = serde_json::to_vec(&initialize_body("2025-11-25")).unwrap();
    let mut s = connect(t.addr);
    let mut buf = Vec::new();
    // No body: refused, and the connection goes on.
    write_req(&mut s, t.addr, "GET", "/status", &[], b"");
    let r = read_resp(&mut s, &mut buf);
    assert_eq!((r.status, r.header("connection")), (401, None));
    // A body the refusal does not read: refused, and the answer says so.
    write_req(&mut s, t.addr, "POST", "/mcp", &[ACCEPT, JSON], &body);
    let r = read_resp(&mut s, &mut buf);
    assert_eq!((r.status, r.header("connection")), (401, Some("close")));
    // A body read: the connection goes on (a new one, the last is closed).
    let mut s = connect(t.addr);
    write_req(&mut s, t.addr, "POST", "/mcp", &[ACCEPT, JSON, ("Authorization", "Bearer s3cret-token")], &body);
    let r = read_resp(&mut s, &mut buf);
    assert_eq!((r.status, r.header("connection")), (200, None));
}

// covers: streamable-http-server-authenticate
// covers: http-sse-server-authenticate
// covers: authz-no-token-passthrough
#[test]
fn bearer_token_401_and_never_forwarded() {
    let t = start(|c| c.token = Some("s3cret-token".into()));
    let body = serde_json::to_vec(&initialize_body("2025-11-25")).unwrap();
    let r = request(t.addr, "POST", "/mcp", &[ACCEPT, JSON], &body);
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").unwrap().starts_with("Bearer"));
    let r = request(
        t.addr,
        "POST",
        "/mcp",
        &[ACCEPT, JSON, ("Authorization", "Bearer wrong")],
        &body,
    );
    assert_eq!(r.status, 401);
    assert_eq!(request(t.addr, "GET", "/status", &[], b"").status, 401);
    assert_eq!(request(t.addr, "GET", "/health", &[], b"").status, 200);
    let auth = ("Authorization", "Bearer s3cret-token");
    let r = request(t.addr, "POST", "/mcp", &[ACCEPT, JSON, auth], &body);
    assert_eq!(r.status, 200);
    let sid = r.header("mcp-session-id").unwrap().to_string();
    let call = serde_json::to_vec(&call(3, "echo", json!({ "text": "x" }))).unwrap();
    let r = request(
        t.addr,
        "POST",
        "/mcp",
        &[ACCEPT, JSON, auth, ("Mcp-Session-Id", sid.as_str())],
        &call,
    );
    assert_eq!(r.status, 200);
    // The upstream saw only JSON-RPC bodies: the hub never gets HTTP headers,
    // so the token cannot travel upstream.
    assert!(!t.seen.lock().unwrap().iter().any(|m| m.contains("s3cret")));
}

// covers: streamable-http-server-bind-localhost, http-sse-server-bind-localhost
#[test]
fn non_loopback_without_token_refuses_to_start() {
    let cfg = HttpConfig::new("0.0.0.0:0".parse().unwrap());
    assert!(cfg.check().unwrap_err().contains("--insecure-no-auth"));
    let mut ok = cfg.clone();
    ok.insecure_no_auth = true;
    assert!(ok.check().is_ok());
    let mut tok = cfg;
    tok.token = Some("t".into());
    assert!(tok.check().is_ok());
    assert!(HttpConfig::new("127.0.0.1:0".parse().unwrap())
        .check()
        .is_ok());
}

#[test]
fn bodies_over_the_cap_are_413() {
    let t = start(|c| c.limits.max_body = 1024);
    // Decided from Content-Length, before any body byte is sent.
    let mut s = connect(t.addr);
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 40000000\r\n\r\n", t.addr);
    s.write_all(head.as_bytes()).unwrap();
    let r = read_resp(&mut s, &mut Vec::new());
    assert_eq!(r.status, 413);
    assert_eq!(r.json()["error"]["code"], -32600);
    assert_eq!(r.header("connection"), Some("close"));
    // Chunked: decided while reading.
    let mut s = connect(t.addr);
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", t.addr);
    s.write_all(head.as_bytes()).unwrap();
    for _ in 0..3 {
        s.write_all(b"200\r\n").unwrap();
        s.write_all(&[b' '; 0x200]).unwrap();
        s.write_all(b"\r\n").unwrap();
    }
    assert_eq!(read_resp(&mut s, &mut Vec::new()).status, 413);
    // Under the cap, fine (chunked too).
    let sid = init(t.addr);
    let body = serde_json::to_vec(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" })).unwrap();
    let mut s = connect(t.addr);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json\r\nMcp-Session-Id: {sid}\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
        t.addr,
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body).unwrap();
    s.write_all(b"\r\n0\r\n\r\n").unwrap();
    let r = read_resp(&mut s, &mut Vec::new());
    assert_eq!((r.status, r.json()["id"].clone()), (200, json!(1)));
}

#[test]
fn ten_thousand_headers_are_431() {
    let t = start(|_| {});
    let mut s = connect(t.addr);
    let mut head = format!("GET /health HTTP/1.1\r\nHost: {}\r\n", t.addr);
    for i in 0..10_000 {
        head.push_str(&format!("X-H-{i}: v\r\n"));
    }
    head.push_str("\r\n");
    let _ = s.write_all(head.as_bytes());
    let r = read_resp(&mut s, &mut Vec::new());
    assert_eq!(r.status, 431);
    // Over the field count, well under the size limit.
    let mut s = connect(t.addr);
    let mut head = format!("GET /health HTTP/1.1\r\nHost: {}\r\n", t.addr);
    for i in 0..150 {
        head.push_str(&format!("X-{i}: v\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    let r = read_resp(&mut s, &mut Vec::new());
    assert_eq!(r.status, 431);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("at most 100 fields"));
    // One huge header line, too.
    let mut s = connect(t.addr);
    let head = format!(
        "GET /health HTTP/1.1\r\nHost: {}\r\nX-Big: {}\r\n\r\n",
        t.addr,
        "a".repeat(100_000)
    );
    let _ = s.write_all(head.as_bytes());
    assert_eq!(read_resp(&mut s, &mut Vec::new()).status, 431);
}

// covers: streamable-http-post-sse-may-carry-requests
// covers: streamable-http-sse-includes-response
// covers: streamable-http-server-terminates-sse-after-response
// covers: streamable-http-x-accel-buffering
#[test]
fn progress_upgrades_the_answer_to_sse() {
    let t = start(|_| {});
    let sid = init(t.addr);
    let body = json!({ "jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {
        "name": "progress", "arguments": {}, "_meta": { "progressToken": "tok-1" } } });
    let r = post(t.addr, Some(&sid), &body);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("x-accel-buffering"), Some("no"));
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    let ev = r.events();
    assert_eq!(ev.len(), 4, "{ev:?}");
    for (i, e) in ev[..3].iter().enumerate() {
        assert_eq!(e["method"], "notifications/progress");
        assert_eq!(e["params"]["progressToken"], "tok-1");
        assert_eq!(e["params"]["progress"], i as u64 + 1);
    }
    assert_eq!(ev[3]["id"], 11);
    assert_eq!(ev[3]["result"]["content"][0]["text"], "progress done");
    // A client that accepts only JSON gets JSON (the notifications have nowhere to go).
    let b = serde_json::to_vec(
        &json!({ "jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {
        "name": "progress", "arguments": {}, "_meta": { "progressToken": "tok-2" } } }),
    )
    .unwrap();
    let hs = [
        ("Accept", "application/json"),
        JSON,
        ("Mcp-Session-Id", sid.as_str()),
    ];
    let r = request(t.addr, "POST", "/mcp", &hs, &b);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["id"], 12);
}

#[test]
fn log_messages_ride_on_the_call_stream() {
    let t = start(|_| {});
    let sid = init(t.addr);
    let r = post(
        t.addr,
        Some(&sid),
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": { "level": "debug" } }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = post(t.addr, Some(&sid), &call(2, "log", json!({})));
    let ev = r.events();
    assert_eq!(
        ev.first().map(|e| e["method"].clone()),
        Some(json!("notifications/message")),
        "{}",
        r.text()
    );
    assert_eq!(ev.last().unwrap()["id"], 2);
}

// covers: streamable-http-post-sse-may-carry-requests
#[test]
fn sampling_request_on_the_post_stream_and_answer_by_post() {
    let t = start(|_| {});
    let sid = init(t.addr);
    let mut s = connect(t.addr);
    let hs = [
        ACCEPT,
        JSON,
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    write_req(
        &mut s,
        t.addr,
        "POST",
        "/mcp",
        &hs,
        &serde_json::to_vec(&call(21, "sample", json!({}))).unwrap(),
    );
    let got = read_until(&mut s, "sampling/createMessage", Duration::from_secs(5));
    assert!(got.contains("text/event-stream"), "{got}");
    let req = sse_data(got.split("\r\n\r\n").nth(1).unwrap_or(""))
        .into_iter()
        .chain(
            got.lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter_map(|d| serde_json::from_str::<Value>(d).ok()),
        )
        .find(|v| v["method"] == "sampling/createMessage")
        .expect("the sampling request");
    let answer = json!({ "jsonrpc": "2.0", "id": req["id"], "result": {
        "role": "assistant", "content": { "type": "text", "text": "sampled text" }, "model": "m" } });
    let r = post(t.addr, Some(&sid), &answer);
    assert_eq!(r.status, 202);
    let rest = read_until(&mut s, "\"id\":21", Duration::from_secs(5));
    assert!(rest.contains("sampled: sampled text"), "{rest}");
}

#[test]
fn a_server_request_with_no_stream_is_refused_at_once() {
    let t = start(|_| {});
    let sid = init(t.addr);
    let b = serde_json::to_vec(&call(31, "sample", json!({}))).unwrap();
    let hs = [
        ("Accept", "application/json"),
        JSON,
        ("Mcp-Session-Id", sid.as_str()),
    ];
    let started = Instant::now();
    let r = request(t.addr, "POST", "/mcp", &hs, &b);
    assert!(started.elapsed() < Duration::from_secs(3));
    let text = r.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.starts_with("sampling failed: the client has no open HTTP stream"),
        "{text}"
    );
}

// covers: streamable-http-get-sse-or-405
// covers: streamable-http-get-no-responses
// covers: streamable-http-no-broadcast
// covers: streamable-http-sse-comment-keepalive
#[test]
fn get_stream_carries_list_changed_and_keepalives() {
    let t = start(|c| c.limits.sse_keepalive_ms = 200);
    let sid = init(t.addr);
    let r = post(
        t.addr,
        Some(&sid),
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
    );
    assert_eq!(r.status, 200);
    let mut g = open_get(t.addr, &sid);
    let head = read_until(&mut g, ": keep-alive", Duration::from_secs(3));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.contains("text/event-stream") && head.contains(": keep-alive"),
        "{head}"
    );
    // A second GET on the same session is refused.
    let hs = [
        ("Accept", "text/event-stream"),
        ("Mcp-Session-Id", sid.as_str()),
    ];
    assert_eq!(request(t.addr, "GET", "/mcp", &hs, b"").status, 409);
    assert_eq!(
        request(
            t.addr,
            "GET",
            "/mcp",
            &[("Accept", "text/event-stream")],
            b""
        )
        .status,
        400
    );
    assert_eq!(
        request(
            t.addr,
            "GET",
            "/mcp",
            &[
                ("Accept", "application/json"),
                ("Mcp-Session-Id", sid.as_str())
            ],
            b""
        )
        .status,
        406
    );
    // The call's own answer is JSON; the list change goes to the GET stream.
    let r = post(t.addr, Some(&sid), &call(2, "notify", json!({})));
    assert_eq!(r.json()["id"], 2);
    let got = read_until(&mut g, "list_changed", Duration::from_secs(5));
    assert!(got.contains("notifications/tools/list_changed"), "{got}");
    assert!(!got.contains("\"id\":2"), "no responses on the GET stream");
    // DELETE ends the stream.
    let r = request(
        t.addr,
        "DELETE",
        "/mcp",
        &[("Mcp-Session-Id", sid.as_str())],
        b"",
    );
    assert_eq!(r.status, 204);
    let end = read_until(&mut g, "0\r\n\r\n", Duration::from_secs(3));
    assert!(end.ends_with("0\r\n\r\n"), "{end:?}");
}

#[test]
fn keep_alive_and_pipelined_requests_answer_in_order() {
    let t = start(|_| {});
    let sid = init(t.addr);
    let mut s = connect(t.addr);
    let hs = [ACCEPT, JSON, ("Mcp-Session-Id", sid.as_str())];
    let mut all = Vec::new();
    for (i, name) in [(1, "slow"), (2, "echo"), (3, "echo")] {
        let mut one = Vec::new();
        let b = serde_json::to_vec(&call(
            i,
            name,
            json!({ "ms": 200, "text": format!("t{i}") }),
        ))
        .unwrap();
        let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\n", t.addr);
        for (n, v) in hs {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", b.len()));
        one.extend_from_slice(head.as_bytes());
        one.extend_from_slice(&b);
        all.extend(one);
    }
    s.write_all(&all).unwrap();
    let mut buf = Vec::new();
    for i in 1..=3 {
        let r = read_resp(&mut s, &mut buf);
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["id"], i);
    }
    // Still open for more.
    write_req(&mut s, t.addr, "GET", "/health", &[], b"");
    assert_eq!(read_resp(&mut s, &mut buf).status, 200);
}

#[test]
fn slowloris_is_closed_while_others_are_served() {
    let t = start(|c| c.limits.head_timeout_ms = 300);
    let mut slow = connect(t.addr);
    slow.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    let started = Instant::now();
    for _ in 0..3 {
        assert_eq!(request(t.addr, "GET", "/health", &[], b"").status, 200);
    }
    let _ = slow.write_all(b"X-Slow: 1\r\n");
    let mut tmp = [0u8; 64];
    slow.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n = slow.read(&mut tmp).unwrap_or(0);
    assert_eq!(n, 0, "closed without an answer");
    assert!(started.elapsed() < Duration::from_secs(3));
    // An idle connection that never sends a byte goes the same way.
    let mut idle = connect(t.addr);
    assert_eq!(idle.read(&mut tmp).unwrap_or(0), 0);
}

#[test]
fn connections_over_the_cap_get_503() {
    let t = start(|c| c.limits.max_connections = 2);
    let _a = connect(t.addr);
    let _b = connect(t.addr);
    std::thread::sleep(Duration::from_millis(100));
    let mut c = connect(t.addr);
    let r = read_resp(&mut c, &mut Vec::new());
    assert_eq!(r.status, 503);
    assert!(r.text().contains("HTTP connections"), "{}", r.text());
    drop((_a, _b));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(request(t.addr, "GET", "/health", &[], b"").status, 200);
}

#[test]
fn sessions_over_the_cap_get_503() {
    // Two principals, each at its share (half the cap) with a busy session:
    // none can make room (idle sessions would, `tests_fair`).
    let t = start(|c| {
        c.limits.max_sessions = 2;
        c.auth.tokens = vec![("a".into(), "ta".into()), ("b".into(), "tb".into()), ("c".into(), "tc".into())];
    });
    let mut streams = Vec::new();
    for token in ["Bearer ta", "Bearer tb"] {
        let body = serde_json::to_vec(&initialize_body("2025-11-25")).unwrap();
        let r = request(t.addr, "POST", "/mcp", &[ACCEPT, JSON, ("Authorization", token)], &body);
        let sid = r.header("mcp-session-id").expect("a session").to_string();
        let mut g = connect(t.addr);
        let hs = [("Accept", "text/event-stream"), ("Mcp-Session-Id", sid.as_str()), ("Authorization", token)];
        write_req(&mut g, t.addr, "GET", "/mcp", &hs, b"");
        assert!(read_until(&mut g, "\r\n\r\n", Duration::from_secs(5)).starts_with("HTTP/1.1 200"));
        streams.push(g);
    }
    let body = serde_json::to_vec(&initialize_body("2025-11-25")).unwrap();
    let r = request(t.addr, "POST", "/mcp", &[ACCEPT, JSON, ("Authorization", "Bearer tc")], &body);
    assert_eq!(r.status, 503);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("sessions"));
}

#[test]
fn five_hundred_abandoned_sessions_expire() {
    // Idle time well above what 500 initializations take on a loaded
    // 2-core machine, so that none expires before the first count.
    let idle = Duration::from_millis(3000);
    let t = start(|c| c.limits.session_idle_ms = 3000);
    let mut s = connect(t.addr);
    let mut buf = Vec::new();
    let body = serde_json::to_vec(&initialize_body("2025-11-25")).unwrap();
    let began = std::time::Instant::now();
    for _ in 0..500 {
        write_req(&mut s, t.addr, "POST", "/mcp", &[ACCEPT, JSON], &body);
        let r = read_resp(&mut s, &mut buf);
        assert_eq!(r.status, 200);
    }
    let st = status_json(t.addr);
    if began.elapsed() < idle {
        assert_eq!(st["http"]["sessions"], 500, "{}", st["http"]);
    }
    std::thread::sleep(idle + Duration::from_millis(1500));
    let st = status_json(t.addr);
    assert_eq!(st["http"]["sessions"], 0);
    assert_eq!(
        st["clients"].as_array().map(Vec::len).unwrap_or(0),
        0,
        "hub state released: {}",
        st["clients"]
    );
}

// covers: streamable-http-disconnect-not-cancel
#[test]
fn a_disconnect_is_not_a_cancellation() {
    let t = start(|_| {});
    let sid = init(t.addr);
    let mut s = connect(t.addr);
    let hs = [ACCEPT, JSON, ("Mcp-Session-Id", sid.as_str())];
    write_req(
        &mut s,
        t.addr,
        "POST",
        "/mcp",
        &hs,
        &serde_json::to_vec(&call(41, "slow", json!({ "ms": 300 }))).unwrap(),
    );
    std::thread::sleep(Duration::from_millis(100));
    drop(s);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !t.seen
            .lock()
            .unwrap()
            .iter()
            .any(|m| m == "notifications/cancelled"),
        "{:?}",
        t.seen.lock().unwrap()
    );
    // The session goes on; the same id may be used again.
    let r = post(
        t.addr,
        Some(&sid),
        &call(41, "echo", json!({ "text": "again" })),
    );
    assert_eq!(r.json()["result"]["content"][0]["text"], "again");
}

// covers: http-sse-server-two-endpoints
// covers: http-sse-server-endpoint-event
// covers: http-sse-server-messages-as-sse-events
// covers: http-sse-server-backcompat-host-both
#[test]
fn legacy_http_sse_endpoints() {
    let t = start(|_| {});
    let mut g = connect(t.addr);
    write_req(
        &mut g,
        t.addr,
        "GET",
        "/sse",
        &[("Accept", "text/event-stream")],
        b"",
    );
    let got = read_until(&mut g, "sessionId=", Duration::from_secs(3));
    let got = got + &read_until(&mut g, "\n\n", Duration::from_millis(300));
    assert!(got.contains("event: endpoint"), "{got}");
    let endpoint = got
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap()
        .to_string();
    assert!(endpoint.starts_with("/messages?sessionId="));
    let r = request(
        t.addr,
        "POST",
        &endpoint,
        &[JSON],
        &serde_json::to_vec(&initialize_body("2024-11-05")).unwrap(),
    );
    assert_eq!(r.status, 202);
    let got = read_until(&mut g, "protocolVersion", Duration::from_secs(5));
    assert!(
        got.contains("event: message") && got.contains("\"2024-11-05\""),
        "{got}"
    );
    let r = request(
        t.addr,
        "POST",
        &endpoint,
        &[JSON],
        &serde_json::to_vec(&json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" })).unwrap(),
    );
    assert_eq!(r.status, 202);
    assert!(read_until(&mut g, "\"echo\"", Duration::from_secs(5)).contains("\"id\":2"));
    assert_eq!(
        request(t.addr, "POST", "/messages?sessionId=nope", &[JSON], b"{}").status,
        404
    );
    // Closing the stream ends the session.
    drop(g);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        request(t.addr, "POST", &endpoint, &[JSON], b"{}").status,
        404
    );
}

#[test]
fn ending_a_session_answers_its_waiting_posts_404() {
    let t = start(|_| {});
    let sid = init(t.addr);
    let mut s = connect(t.addr);
    let hs = [ACCEPT, JSON, ("Mcp-Session-Id", sid.as_str())];
    let body = serde_json::to_vec(&call(51, "slow", json!({ "ms": 2000 }))).unwrap();
    write_req(&mut s, t.addr, "POST", "/mcp", &hs, &body);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        request(
            t.addr,
            "DELETE",
            "/mcp",
            &[("Mcp-Session-Id", sid.as_str())],
            b""
        )
        .status,
        204
    );
    let r = read_resp(&mut s, &mut Vec::new());
    assert_eq!(r.status, 404);
    // HEAD has no body.
    let mut h = connect(t.addr);
    write_req(&mut h, t.addr, "HEAD", "/health", &[], b"");
    let mut buf = Vec::new();
    let r = read_resp(&mut h, &mut buf);
    assert_eq!((r.status, r.body.len()), (200, 0));
}

#[test]
fn connection_close_is_honoured_and_http10_works() {
    let t = start(|_| {});
    let mut s = connect(t.addr);
    write_req(
        &mut s,
        t.addr,
        "GET",
        "/health",
        &[("Connection", "close")],
        b"",
    );
    let r = read_resp(&mut s, &mut Vec::new());
    assert_eq!((r.status, r.header("connection")), (200, Some("close")));
    let mut tmp = [0u8; 8];
    assert_eq!(s.read(&mut tmp).unwrap_or(0), 0);
    // HTTP/1.0 without keep-alive: one answer, then the close.
    let mut s = connect(t.addr);
    s.write_all(format!("GET /health HTTP/1.0\r\nHost: {}\r\n\r\n", t.addr).as_bytes())
        .unwrap();
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    let text = String::from_utf8_lossy(&all);
    assert!(
        text.starts_with("HTTP/1.1 200") && text.ends_with("ok"),
        "{text}"
    );
}

#[test]
fn a_server_request_falls_back_to_the_get_stream() {
    let t = start(|_| {});
    let sid = init(t.addr);
    let r = post(
        t.addr,
        Some(&sid),
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
    );
    assert_eq!(r.status, 200);
    let mut g = open_get(t.addr, &sid);
    assert!(
        read_until(&mut g, "text/event-stream", Duration::from_secs(3)).starts_with("HTTP/1.1 200")
    );
    // The call's POST accepts only JSON: the sampling request goes to the GET stream.
    let mut s = connect(t.addr);
    let b = serde_json::to_vec(&call(61, "sample", json!({}))).unwrap();
    write_req(
        &mut s,
        t.addr,
        "POST",
        "/mcp",
        &[
            ("Accept", "application/json"),
            JSON,
            ("Mcp-Session-Id", sid.as_str()),
        ],
        &b,
    );
    let got = read_until(&mut g, "sampling/createMessage", Duration::from_secs(5));
    let req = sse_data(&got)
        .into_iter()
        .find(|v| v["method"] == "sampling/createMessage")
        .expect("on the GET stream");
    let answer = json!({ "jsonrpc": "2.0", "id": req["id"], "result": {
        "role": "assistant", "content": { "type": "text", "text": "via get" }, "model": "m" } });
    assert_eq!(post(t.addr, Some(&sid), &answer).status, 202);
    let r = read_resp(&mut s, &mut Vec::new());
    assert_eq!(r.json()["result"]["content"][0]["text"], "sampled: via get");
}

#[test]
fn a_long_call_becomes_a_stream_with_keepalives() {
    let t = start(|c| c.limits.sse_keepalive_ms = 150);
    let sid = init(t.addr);
    let r = post(t.addr, Some(&sid), &call(71, "slow", json!({ "ms": 700 })));
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert!(r.text().contains(": keep-alive"), "{}", r.text());
    assert_eq!(
        r.events().last().unwrap()["result"]["content"][0]["text"],
        "slow done"
    );
}

#[test]
fn a_slow_body_is_cut_off() {
    let t = start(|c| c.limits.body_timeout_ms = 300);
    let mut s = connect(t.addr);
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"", t.addr);
    s.write_all(head.as_bytes()).unwrap();
    let started = Instant::now();
    let mut tmp = [0u8; 64];
    assert_eq!(s.read(&mut tmp).unwrap_or(0), 0);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(request(t.addr, "GET", "/health", &[], b"").status, 200);
}
