//! Principals through the real binary: each HTTP session and each 2026-07-28
//! request carries its own principal into the hub (the static token's name,
//! or the anonymous one), never the stdio client's, so a `requestState`
//! minted for one is refused to another and a session is only usable by the
//! principal that opened it (issue 11 item 2).

use mcpx_tests::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
const MODERN: &str = "2026-07-28";

/// One HTTP/1.1 exchange on a fresh connection (`Connection: close`):
/// status, headers, body (the JSON answer, or the last JSON-RPC message of
/// an SSE answer).
fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> (u16, Vec<(String, String)>, Value) {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut s = std::net::TcpStream::connect(authority).expect("connect");
    s.set_read_timeout(Some(WAIT)).unwrap();
    let body = serde_json::to_vec(body).unwrap();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|c| c.parse().ok()).unwrap_or(0);
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':')).map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string())).collect();
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_string() };
    let json = serde_json::from_str(&body).ok().or_else(|| {
        body.lines().filter_map(|l| l.strip_prefix("data:")).filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok()).filter(|m| m.get("id").is_some()).last()
    });
    (status, headers, json.unwrap_or(Value::Null))
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

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "mcpx-principal-test", "version": "1"},
    })
}

fn ask(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "demo__ask_user", "arguments": {"message": "Delete everything?"}, "_meta": meta()}})
}

/// The retry of `ask` with the answer and `state`.
fn retry(id: i64, first: &Value) -> Value {
    let r = &first["result"];
    assert_eq!(r["resultType"], "input_required", "not an input_required result: {first}");
    let key = r["inputRequests"].as_object().and_then(|m| m.keys().next().cloned()).expect("an input request");
    let answer = json!({"action": "accept", "content": {"answer": "yes"}});
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "demo__ask_user", "arguments": {"message": "Delete everything?"}, "_meta": meta(),
                      "inputResponses": {key: answer}, "requestState": r["requestState"]}})
}

fn modern_headers<'a>(auth: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"), ("Mcp-Name", "demo__ask_user")];
    if let Some(a) = auth {
        h.push(("Authorization", a));
    }
    h
}

/// Refused for the principal: -32602, nothing reached the server.
fn assert_refused(r: &Value, what: &str) {
    assert_eq!(r["error"]["code"], -32602, "{what}: the retry should be refused, got {r}");
    assert!(r["error"]["message"].as_str().unwrap_or("").contains("principal"), "{what}: the error should name the check: {r}");
}

/// `mcpx serve --stdio --http`, with `auth` (if any) in the config.
fn hub(auth: Option<Value>) -> (Hub, u16, RawSession) {
    let mut h = HubConfig::new().upstream(example_server("demo"));
    if let Some(a) = auth {
        h = h.set("auth", a);
    }
    let hub = h.write();
    let port = free_port();
    let mut cmd = hub.serve();
    cmd.args.extend(["--http".to_string(), format!("127.0.0.1:{port}"), "--stdio".to_string()]);
    let s = RawSession::spawn(&cmd);
    let deadline = std::time::Instant::now() + WAIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "mcpx did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    (hub, port, s)
}

/// The stdio client's held elicitation cannot be answered by an HTTP client
/// (a legacy session, or a 2026-07-28 request), and the reverse.
// covers: elicitation-server-state-bound-to-user, elicitation-state-not-session-id-alone
#[test]
fn a_held_request_of_stdio_is_refused_to_http_and_back() {
    let (_hub, port, mut s) = hub(None);
    let url = format!("http://127.0.0.1:{port}/mcp");
    // stdio: the first round of a modern call.
    s.send(&ask(1));
    let first = s.response_to(1, WAIT);
    // A legacy HTTP session retries it with the stdio client's state.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}}, "clientInfo": {"name": "mcpx-principal-test", "version": "1"}}});
    let (status, headers, _) = post(&url, &[], &init);
    assert_eq!(status, 200);
    let sid = headers.iter().find(|(n, _)| n == "mcp-session-id").map(|(_, v)| v.clone()).expect("a session id");
    let sh = [("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    post(&url, &sh, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let (_, _, r) = post(&url, &sh, &retry(2, &first));
    assert_refused(&r, "a legacy HTTP session answering the stdio client's question");
    // A 2026-07-28 HTTP request, the same.
    let (_, _, r) = post(&url, &modern_headers(None), &retry(3, &first));
    assert_refused(&r, "a 2026-07-28 HTTP request answering the stdio client's question");
    // The stdio client itself still can (the state was not used up).
    s.send(&retry(4, &first));
    let done = s.response_to(4, WAIT);
    assert_eq!(done["result"]["resultType"], "complete", "the stdio client's own retry: {done}");
    // The reverse: an HTTP request's state is refused to the stdio client.
    let (_, _, first) = post(&url, &modern_headers(None), &ask(5));
    s.send(&retry(6, &first));
    assert_refused(&s.response_to(6, WAIT), "the stdio client answering an HTTP client's question");
}

/// Two named static tokens are two principals: alice's state is refused to
/// bob, and alice's session is unknown (404) to bob.
// covers: elicitation-server-stored-state-bound-to-user, streamable-http-server-authenticate
#[test]
fn named_tokens_are_separate_principals() {
    let (_hub, port, _s) = hub(Some(json!({"tokens": {"alice": "tok-alice", "bob": "tok-bob"}})));
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (alice, bob) = ("Bearer tok-alice", "Bearer tok-bob");
    let (status, _, _) = post(&url, &modern_headers(Some("Bearer tok-carol")), &ask(1));
    assert_eq!(status, 401, "an unknown token");
    let (status, _, first) = post(&url, &modern_headers(Some(alice)), &ask(1));
    assert_eq!(status, 200);
    let (_, _, r) = post(&url, &modern_headers(Some(bob)), &retry(2, &first));
    assert_refused(&r, "bob answering alice's question");
    let (_, _, r) = post(&url, &modern_headers(Some(alice)), &retry(3, &first));
    assert_eq!(r["result"]["resultType"], "complete", "alice's own retry: {r}");
    // Sessions: alice's session id is worth nothing with bob's token.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "mcpx-principal-test", "version": "1"}}});
    let (status, headers, _) = post(&url, &[("Authorization", alice)], &init);
    assert_eq!(status, 200);
    let sid = headers.iter().find(|(n, _)| n == "mcp-session-id").map(|(_, v)| v.clone()).expect("a session id");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let hs = |auth| [("Authorization", auth), ("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let (status, _, _) = post(&url, &hs(bob), &list);
    assert_eq!(status, 404, "bob naming alice's session");
    let (status, _, r) = post(&url, &hs(alice), &list);
    assert_eq!(status, 200, "alice's own session: {r}");
    assert!(r["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{r}");
}
