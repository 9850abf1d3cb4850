//! The request pipeline (issue 24) through the real binary over real
//! sockets: each rule holds on every path. An unknown tool's calls are
//! charged by the rate limits and audited by name; a catalog covers a
//! server's prompts and resources; an open listener's clients are one
//! principal whatever `Authorization` they send; the HTTP session quota
//! is the one count of sessions (the hub's table never locks out a live
//! principal first); the era HTTP decides is the hub's.

use mcpx_tests::*;
use serde_json::{json, Value};
use std::time::Duration;

fn demo(name: &str) -> Upstream {
    Upstream { name: name.into(), cmd: Cmd::new(mcpx(), &["example-server", "--name", name, "--demo"]) }
}

/// Opens a Streamable HTTP session with `headers`; its id.
fn open_session(url: &str, headers: &[(&str, &str)]) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "pipeline-test", "version": "1"}}});
    let r = post(url, headers, &init);
    assert_eq!(r.status, 200, "initialize: {} {}", r.status, r.text);
    let sid = r.header("mcp-session-id").expect("a session id").to_string();
    let mut h = headers.to_vec();
    h.extend([("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")]);
    let r = post(url, &h, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(r.status, 202, "{}", r.text);
    sid
}

/// A request in session `sid`.
fn in_session(url: &str, headers: &[(&str, &str)], sid: &str, id: i64, method: &str, params: Value) -> Resp {
    let mut h = headers.to_vec();
    h.extend([("Mcp-Session-Id", sid), ("MCP-Protocol-Version", "2025-11-25")]);
    post(url, &h, &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

/// The audit file's lines once there are `n` (the writer is a thread).
fn audit_lines(path: &std::path::Path, n: usize) -> Vec<Value> {
    for _ in 0..100 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        if lines.len() >= n {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("fewer than {n} audit lines in {}", path.display());
}

// covers: tools-server-sec-validate-inputs
#[test]
fn calls_to_an_unknown_tool_are_charged_by_the_principals_limit_and_audited_by_name() {
    let dir = TempDir::new();
    let log = dir.path().join("audit.jsonl");
    let hub = HubConfig::new()
        .upstream(demo("a"))
        .set("auth", json!({"tokens": {"alice": "alice-token-0123456789"}}))
        .set("policy", json!({"rateLimits": {"toolCalls": {"perPrincipal": "4/min", "perServer": null}}, "audit": {"file": log}}))
        .write();
    let server = hub.serve_http();
    let auth = [("Authorization", "Bearer alice-token-0123456789")];
    let sid = open_session(&server.url, &auth);
    for id in 1..=4 {
        let r = in_session(&server.url, &auth, &sid, id, "tools/call", json!({"name": "a__no_such_tool", "arguments": {}}));
        assert_eq!(r.json["error"]["message"], "Unknown tool: a__no_such_tool", "{}", r.text);
    }
    // Four unknown names spent the principal's four calls a minute: a call
    // to a real tool is over the limit now, and so is a fifth unknown one.
    let r = in_session(&server.url, &auth, &sid, 5, "tools/call", json!({"name": "a__echo", "arguments": {"text": "hi"}}));
    assert_eq!(r.json["error"]["code"], -32600, "{}", r.text);
    assert!(r.json["error"]["message"].as_str().unwrap().contains("perPrincipal (4/min)"), "{}", r.text);
    let r = in_session(&server.url, &auth, &sid, 6, "tools/call", json!({"name": "a__no_such_tool", "arguments": {}}));
    assert!(r.json["error"]["data"]["retryAfterMs"].as_u64().is_some(), "{}", r.text);
    // Every line names what was asked, who asked, and the stage that refused.
    let lines = audit_lines(&log, 6);
    for l in &lines[..4] {
        assert_eq!((l["name"].as_str(), l["principal"].as_str(), l["stage"].as_str()), (Some("a__no_such_tool"), Some("alice"), Some("route")), "{l}");
    }
    assert_eq!((lines[4]["name"].as_str(), lines[4]["stage"].as_str(), lines[4]["outcome"].as_str()), (Some("a__echo"), Some("admit"), Some("refused")), "{}", lines[4]);
    assert_eq!((lines[5]["name"].as_str(), lines[5]["stage"].as_str()), (Some("a__no_such_tool"), Some("admit")), "{}", lines[5]);
}

// covers: tools-server-sec-validate-inputs
#[test]
fn a_catalog_granting_one_tool_of_a_hides_bs_prompts_and_resources() {
    let hub = HubConfig::new()
        .upstream(demo("a"))
        .upstream(demo("b"))
        .set("auth", json!({"tokens": {"alice": "alice-token-0123456789", "ops": "ops-token-0123456789"}}))
        .set("policy", json!({"catalogs": {"alice": {"allow": ["a/echo"]}}}))
        .write();
    let server = hub.serve_http();
    let alice = [("Authorization", "Bearer alice-token-0123456789")];
    let ops = [("Authorization", "Bearer ops-token-0123456789")];
    let (sa, so) = (open_session(&server.url, &alice), open_session(&server.url, &ops));
    let names = |h: &[(&str, &str)], sid: &str, method: &str, key: &str, field: &str| -> Vec<String> {
        let r = in_session(&server.url, h, sid, 1, method, json!({}));
        r.json["result"][key].as_array().unwrap_or_else(|| panic!("{method}: {}", r.text)).iter().map(|x| x[field].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names(&alice, &sa, "prompts/list", "prompts", "name"), ["a__greeting"]);
    assert_eq!(names(&ops, &so, "prompts/list", "prompts", "name"), ["a__greeting", "b__greeting"]);
    let b_readme = names(&ops, &so, "resources/list", "resources", "uri").into_iter().find(|u| u.contains("b/")).expect("b's readme listed to ops");
    assert_eq!(names(&alice, &sa, "resources/list", "resources", "uri"), ["demo://readme"]);
    let r = in_session(&server.url, &alice, &sa, 2, "prompts/get", json!({"name": "b__greeting", "arguments": {"name": "x"}}));
    assert_eq!(r.json["error"]["message"], "Unknown prompt: b__greeting", "{}", r.text);
    let r = in_session(&server.url, &alice, &sa, 3, "resources/read", json!({"uri": b_readme}));
    assert_eq!(r.json["error"]["code"], -32002, "{}", r.text);
    let r = in_session(&server.url, &alice, &sa, 4, "completion/complete", json!({"ref": {"type": "ref/prompt", "name": "b__greeting"}, "argument": {"name": "name", "value": "A"}}));
    assert_eq!(r.json["error"]["message"], "Unknown prompt: b__greeting", "{}", r.text);
    // ops (no catalog entry) reads what alice may not.
    let r = in_session(&server.url, &ops, &so, 5, "resources/read", json!({"uri": b_readme}));
    assert!(r.json["result"]["contents"].is_array(), "{}", r.text);
}

/// On a listener without authentication, `Authorization` values are not
/// identities: a client sending one is the principal `anonymous` like every
/// other, so it gets the catalog configured for `anonymous`, whatever value
/// it rotates through.
#[test]
fn an_open_listeners_clients_are_all_anonymous_whatever_authorization_they_send() {
    let hub = HubConfig::new().upstream(demo("a")).set("policy", json!({"catalogs": {"anonymous": {"allow": ["a/echo"]}}})).write();
    let server = hub.serve_http();
    for value in ["", "Bearer x", "Bearer y", "Basic eDp5"] {
        let h: Vec<(&str, &str)> = if value.is_empty() { vec![] } else { vec![("Authorization", value)] };
        let sid = open_session(&server.url, &h);
        let r = in_session(&server.url, &h, &sid, 1, "tools/list", json!({}));
        let tools: Vec<&str> = r.json["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(tools, ["a__echo"], "with Authorization {value:?}: {}", r.text);
    }
}

/// `mcpx serve --http --stdio` with a stdio client that stays connected
/// (its stdin held open), and `MCPX_LIMITS=sessions=4`; killed on drop.
struct HttpAndStdio {
    child: std::process::Child,
    url: String,
}

impl HttpAndStdio {
    fn start(hub: &Hub) -> HttpAndStdio {
        use std::process::{Command, Stdio};
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new(mcpx())
            .args(["serve", "--config", hub.config.to_str().unwrap(), "--http", &addr, "--stdio"])
            .env("MCPX_LIMITS", "sessions=4")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "mcpx did not listen on {addr}");
            std::thread::sleep(Duration::from_millis(50));
        }
        HttpAndStdio { child, url: format!("http://{addr}/mcp") }
    }
}

impl Drop for HttpAndStdio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Abandoned sessions of two principals within their shares fill the HTTP
/// session quota; the hub's own client table (which also holds the stdio
/// client and one client per 2026-07-28 request) must not be full before
/// it, or every 2026-07-28 request and every new session is refused with
/// nothing evicted.
#[test]
fn abandoned_sessions_never_lock_out_modern_requests_or_new_sessions() {
    let hub = HubConfig::new().upstream(demo("a")).set("auth", json!({"tokens": {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789"}})).write();
    let server = HttpAndStdio::start(&hub);
    let alice = [("Authorization", "Bearer alice-token-0123456789")];
    let bob = [("Authorization", "Bearer bob-token-0123456789")];
    for h in [&alice, &alice, &bob, &bob] {
        open_session(&server.url, h);
    }
    // Four abandoned sessions, two each: the quota is full. A 2026-07-28
    // request (which takes a session unit for its life) ends the oldest
    // idle session and is served.
    let msg = modern_request(1, "tools/list", json!({}), json!({}));
    let r = post_modern(&server.url, "alice-token-0123456789", &msg);
    assert!(r["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{r}");
    // So is a new session of bob, again and again.
    for i in 0..3 {
        let sid = open_session(&server.url, &bob);
        let r = in_session(&server.url, &bob, &sid, i, "tools/list", json!({}));
        assert_eq!(r.status, 200, "{}", r.text);
    }
}

/// A POST whose `MCP-Protocol-Version` header says 2026-07-28 is served in
/// that era by the hub too: without its `_meta` it is the 2026-07-28
/// missing-field error, never the legacy "before initialize".
// covers: meta-server-rejects-missing-required-field
#[test]
fn a_post_classified_2026_by_its_header_is_answered_in_that_era() {
    let hub = HubConfig::new().upstream(demo("a")).write();
    let server = hub.serve_http();
    let h = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/list")];
    let r = post(&server.url, &h, &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}));
    let message = r.json["error"]["message"].as_str().unwrap_or_default().to_string();
    assert!(!message.contains("before initialize"), "{} {}", r.status, r.text);
    assert_eq!(r.json["error"]["code"], -32602, "{} {}", r.status, r.text);
    assert!(message.contains("_meta") || message.contains("protocolVersion"), "{message}");
}
