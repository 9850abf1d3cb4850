//! The approvals notify hook by HTTP POST (README "Approving calls"): the
//! real `mcpx serve --http` holds a call for the page and POSTs it, with
//! its one-time link, to a receiver this test runs (a loopback
//! `TcpListener`); the link from that POST, opened and its form posted
//! without any token, as a phone would, runs the call. A receiver that is
//! not there is logged once and the call still waits for the page.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::{json, Value};

/// alice's and bob's tokens on the hub's listener.
const ALICE: &str = "alice-token";
const BOB: &str = "bob-token";
/// The arguments of the held call.
const TEXT: &str = "rm -rf / (just kidding)";

/// One request the receiver got: its head (names as sent) and body.
struct Received {
    head: String,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// A receiver on a loopback port: each request is read whole, answered
/// 204, and passed on; its port and what it got.
fn receiver() -> (u16, mpsc::Receiver<Received>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let head_end = loop {
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break i + 4;
                }
                match s.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            };
            let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
            let got = Received { head, body: Vec::new() };
            let len: usize = got.header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
            while buf.len() < head_end + len {
                match s.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let _ = s.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
            let got = Received { body: buf[head_end..head_end + len].to_vec(), ..got };
            if tx.send(got).is_err() {
                return;
            }
        }
    });
    (port, rx)
}

/// A hub on `port` serving `demo`, whose `echo` waits for the page, told by
/// `notify`; alice and bob have tokens; `extra` is more of its config. Its
/// stderr goes to `log`; `HOOK_TOKEN` is in its environment.
fn hub(port: u16, notify: Value, log: &Path, extra: &[(&str, Value)]) -> (Hub, HttpServer) {
    let policy = json!({ "approve": [{ "tools": ["demo/echo"], "via": ["page"] }], "approvals": { "notify": notify } });
    let mut cfg = HubConfig::new().upstream(example_server("demo")).set("policy", policy).set("auth", json!({ "tokens": { "alice": ALICE, "bob": BOB } }));
    for (k, v) in extra {
        cfg = cfg.set(k, v.clone());
    }
    let hub = cfg.write();
    let script = r#"HOOK_TOKEN=hook-secret exec "$0" serve --config "$1" --http "$2" 2>"$3""#;
    let addr = format!("127.0.0.1:{port}");
    let args = ["-c", script, mcpx().to_str().unwrap(), hub.config.to_str().unwrap(), &addr, log.to_str().unwrap()];
    let server = HttpServer::start(&Cmd::new("/bin/sh", &args), port, "/mcp");
    (hub, server)
}

/// A hub whose notify hook is `notify(base)` (`base`: the hub's address,
/// the link base), with its log at `log`, and a call of `echo` waiting
/// for approval: the hub, its server and the waiting call.
fn waiting_call(log: &Path, notify: impl FnOnce(&str) -> Value) -> (Hub, HttpServer, String, JoinHandle<Resp>) {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let (hub, server) = hub(port, notify(&base), log, &[]);
    let waiting = call_echo(&server);
    (hub, server, base, waiting)
}

/// alice opens a session and calls `echo` in a thread: the call's answer
/// (which comes once the call is decided).
fn call_echo(server: &HttpServer) -> JoinHandle<Resp> {
    let auth = format!("Bearer {ALICE}");
    let h = [("Authorization", auth.as_str())];
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "notify-test", "version": "1"}}});
    let r = post(&server.url, &h, &init);
    assert_eq!(r.status, 200, "{}", r.text);
    let sid = r.header("mcp-session-id").expect("a session").to_string();
    let url = server.url.clone();
    std::thread::spawn(move || {
        let h = [("Authorization", auth.as_str()), ("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
        let r = post(&url, &h, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(r.status, 202, "{}", r.text);
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "demo__echo", "arguments": {"text": TEXT}}});
        post(&url, &h, &call)
    })
}

/// Approves through `link` as a phone's browser would: opens the page
/// (no token), then posts its form (same origin).
fn approve_by_link(base: &str, link: &str) {
    let (n, key) = link.strip_prefix(&format!("{base}/approvals/")).and_then(|p| p.split_once("?key=")).unwrap_or_else(|| panic!("not a link to this hub: {link}"));
    let page = http(link, &[], None);
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.text.contains("<h2>demo / echo</h2>") && page.text.contains(&format!("action=\"/approvals/{n}\"")), "{}", page.text);
    let form = [("Content-Type", "application/x-www-form-urlencoded"), ("Origin", base)];
    let r = http_request(&format!("{base}/approvals/{n}"), "POST", &form, format!("key={key}&decision=approve").as_bytes());
    assert!(r.text.contains("Approved: the call runs now."), "{} {}", r.status, r.text);
}

/// The echo ran: its answer is the call's result, not a tool error.
fn assert_echoed(answer: Resp) {
    let result = &answer.json["result"];
    assert_eq!(result["isError"], Value::Null, "{}", answer.text);
    assert!(texts(result).contains(TEXT), "the echo ran: {}", answer.text);
}

/// SHA-256 (hex) of `bytes`, by coreutils.
fn sha256(bytes: &[u8]) -> String {
    let mut p = Command::new("sha256sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("sha256sum");
    p.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = p.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap().split(' ').next().unwrap().to_string()
}

// covers: tools-human-in-loop-deny
#[test]
fn a_json_webhook_gets_the_call_and_its_link_and_the_link_approves_it() {
    let (hook_port, got) = receiver();
    let dir = TempDir::new();
    let (_hub, _server, base, waiting) = waiting_call(&dir.path().join("mcpx.log"), |base| json!({ "url": format!("http://127.0.0.1:{hook_port}/hooks/T0/secret"), "headers": { "Authorization": "Bearer ${HOOK_TOKEN}" }, "linkBase": base }));

    let r = got.recv_timeout(Duration::from_secs(20)).expect("the receiver is notified");
    assert!(r.head.starts_with("POST /hooks/T0/secret HTTP/1.1\r\n"), "{}", r.head);
    assert_eq!(r.header("content-type"), Some("application/json"), "{}", r.head);
    assert_eq!(r.header("authorization"), Some("Bearer hook-secret"), "{}", r.head);
    let v: Value = serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&r.body)));
    assert_eq!((v["server"].as_str(), v["tool"].as_str(), v["principal"].as_str()), (Some("demo"), Some("echo"), Some("alice")), "{v:#}");
    // The digest of the exact arguments (canonical JSON: sorted keys, no spaces).
    assert_eq!(v["sha256"], sha256(format!(r#"{{"text":"{TEXT}"}}"#).as_bytes()), "{v:#}");
    assert!(v["arguments"].as_str().unwrap().contains(TEXT), "{v:#}");
    let link = v["link"].as_str().unwrap();
    assert!(v["text"].as_str().unwrap().contains(TEXT) && v["text"].as_str().unwrap().ends_with(link), "{v:#}");
    // The call waits: the page lists it to alice.
    let list = http(&format!("{base}/approvals?format=json"), &[("Authorization", &format!("Bearer {ALICE}"))], None).json;
    assert_eq!((list["waiting"][0]["id"].clone(), list["waiting"][0]["digest"].clone()), (v["id"].clone(), v["sha256"].clone()), "{list:#}");
    assert!(!waiting.is_finished());

    approve_by_link(&base, link);
    assert_echoed(waiting.join().unwrap());
    // Once: one POST for the call, and its link is spent.
    assert!(got.recv_timeout(Duration::from_millis(500)).is_err(), "a second notification");
    let (n, key) = link.split_once("/approvals/").unwrap().1.split_once("?key=").unwrap();
    let form = [("Content-Type", "application/x-www-form-urlencoded"), ("Origin", base.as_str())];
    let r = http_request(&format!("{base}/approvals/{n}"), "POST", &form, format!("key={key}&decision=approve").as_bytes());
    assert_eq!(r.status, 404, "{}", r.text);
}

#[test]
fn ntfy_gets_the_text_with_a_title_and_the_link_to_open() {
    let (hook_port, got) = receiver();
    let dir = TempDir::new();
    let (_hub, _server, base, waiting) = waiting_call(&dir.path().join("mcpx.log"), |base| json!({ "url": format!("http://127.0.0.1:{hook_port}/mcpx-approvals"), "format": "ntfy", "headers": { "Priority": "high" }, "linkBase": base }));

    let r = got.recv_timeout(Duration::from_secs(20)).expect("the receiver is notified");
    assert!(r.head.starts_with("POST /mcpx-approvals HTTP/1.1\r\n"), "{}", r.head);
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"), "{}", r.head);
    assert_eq!(r.header("title"), Some("mcpx: alice asks to run demo/echo"), "{}", r.head);
    assert_eq!(r.header("priority"), Some("high"), "{}", r.head);
    let link = r.header("click").expect("the link to open").to_string();
    let text = String::from_utf8(r.body).unwrap();
    assert!(text.starts_with("alice asks to run demo/echo (arguments sha256 ") && text.contains(TEXT), "{text}");
    assert!(text.ends_with(&format!("Approve or deny: {link}")), "{text}");

    approve_by_link(&base, &link);
    assert_echoed(waiting.join().unwrap());
}

#[test]
fn an_unreachable_receiver_is_logged_once_and_the_call_still_waits_for_the_page() {
    // A port nothing listens on.
    let dead = free_port();
    let dir = TempDir::new();
    let log = dir.path().join("mcpx.log");
    let (_hub, _server, base, waiting) = waiting_call(&log, |base| json!({ "url": format!("http://127.0.0.1:{dead}/secret-topic"), "linkBase": base }));

    let failed = |log: &str| log.lines().filter(|l| l.contains("the notification to")).count();
    let start = Instant::now();
    let mut text = String::new();
    while failed(&text) == 0 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
        text = std::fs::read_to_string(&log).unwrap_or_default();
    }
    let line = text.lines().find(|l| l.contains("the notification to")).unwrap_or_else(|| panic!("no error logged:\n{text}"));
    assert!(line.contains("ERROR") || line.contains("error"), "{line}");
    assert!(line.contains(&format!("http://127.0.0.1:{dead}")) && line.contains("not retried"), "{line}");
    assert!(!text.contains("secret-topic"), "the log shows the URL's origin only:\n{text}");

    // The call still waits; alice approves it on the page, where its key is hers to see.
    std::thread::sleep(Duration::from_millis(500));
    assert!(!waiting.is_finished(), "the call was answered");
    let list = http(&format!("{base}/approvals?format=json"), &[("Authorization", &format!("Bearer {ALICE}"))], None).json;
    let w = &list["waiting"][0];
    assert_eq!(w["tool"], "echo", "{list:#}");
    let link = format!("{base}/approvals/{}?key={}", w["id"], w["key"].as_str().unwrap());
    approve_by_link(&base, &link);
    assert_echoed(waiting.join().unwrap());
    // Tried once, never again.
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(failed(&text), 1, "{text}");
}

/// Two replicas sharing Redis and a state key: alice's call waits on A,
/// and the notification's link points at B (where a load balancer may
/// send a phone). B's page lists the call to alice and not to bob; B
/// passes the link and its form to A over the hop, and the call runs on
/// A. A key that is not the call's is B's 404 too.
#[test]
fn a_call_waiting_on_one_replica_is_listed_and_approved_on_another() {
    let (hook_port, got) = receiver();
    let (_redis, redis_port) = redis_server();
    let dir = TempDir::new();
    let key = dir.path().join("state.key");
    std::fs::write(&key, "2a".repeat(32)).unwrap();
    let (port_a, port_b) = (free_port(), free_port());
    let (base_a, base_b) = (format!("http://127.0.0.1:{port_a}"), format!("http://127.0.0.1:{port_b}"));
    let replica = |me: &str, port: u16, peer: &str, peer_base: &str| {
        let notify = json!({ "url": format!("http://127.0.0.1:{hook_port}/hook"), "linkBase": base_b });
        let extra = [
            ("state", json!({ "url": format!("redis://127.0.0.1:{redis_port}/0"), "keyFile": key })),
            ("cluster", json!({ "replica": me, "peers": { peer: peer_base } })),
        ];
        hub(port, notify, &dir.path().join(format!("{me}.log")), &extra)
    };
    let (_hub_a, a) = replica("a", port_a, "b", &base_b);
    let (_hub_b, _b) = replica("b", port_b, "a", &base_a);
    let waiting = call_echo(&a);

    let r = got.recv_timeout(Duration::from_secs(20)).expect("the receiver is notified");
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    let link = v["link"].as_str().unwrap();
    assert!(link.starts_with(&format!("{base_b}/approvals/")), "{link}");
    // B lists A's call to alice, with its link's key; to bob, nothing.
    let list = |base: &str, token: &str| http(&format!("{base}/approvals?format=json"), &[("Authorization", &format!("Bearer {token}"))], None).json;
    let start = Instant::now();
    let mut l = list(&base_b, ALICE);
    while l["waiting"] == json!([]) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
        l = list(&base_b, ALICE);
    }
    let w = &l["waiting"][0];
    assert_eq!((w["replica"].as_str(), w["tool"].as_str(), w["principal"].as_str()), (Some("a"), Some("echo"), Some("alice")), "{l:#}");
    assert!(link.ends_with(&format!("/approvals/{}?key={}", w["id"], w["key"].as_str().unwrap())), "{link} {l:#}");
    assert_eq!(list(&base_b, BOB)["waiting"], json!([]));
    // A wrong key, through B: the same 404 as a decided call, and the call waits on.
    let n = w["id"].as_u64().unwrap();
    let form = [("Content-Type", "application/x-www-form-urlencoded"), ("Origin", base_b.as_str())];
    let wrong = http_request(&format!("{base_b}/approvals/{n}"), "POST", &form, format!("key={}&decision=approve", "0".repeat(32)).as_bytes());
    assert_eq!(wrong.status, 404, "{}", wrong.text);
    assert!(!waiting.is_finished());

    approve_by_link(&base_b, link);
    assert_echoed(waiting.join().unwrap());
    // Decided: gone from the lists, A's own and B's of A.
    std::thread::sleep(Duration::from_millis(300));
    for base in [&base_a, &base_b] {
        assert_eq!(list(base, ALICE)["waiting"], json!([]), "{base}");
    }
}
