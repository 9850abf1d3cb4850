//! Loopback tests of HTTP details (issue 12 item 12): header fields that
//! must appear once, malformed chunked bodies, a session's revision.
//! Reuses the helpers of `tests`.

use super::*;

/// Sends `raw` on a fresh connection and reads one response.
fn raw(addr: SocketAddr, raw: &str) -> (Resp, TcpStream) {
    let mut s = connect(addr);
    s.write_all(raw.as_bytes()).unwrap();
    let r = read_resp(&mut s, &mut Vec::new());
    (r, s)
}

fn error_message(r: &Resp) -> String {
    r.json()["error"]["message"].as_str().unwrap_or("").to_string()
}

#[test]
fn host_once_and_origin_at_most_once_or_400() {
    let t = start(|_| {});
    let a = t.addr;
    let (r, _) = raw(a, &format!("GET /health HTTP/1.1\r\nHost: {a}\r\nHost: {a}\r\n\r\n"));
    assert_eq!(r.status, 400, "two Host fields");
    assert!(error_message(&r).contains("more than one Host"), "{}", r.text());
    let (r, _) = raw(a, "GET /health HTTP/1.1\r\n\r\n");
    assert_eq!(r.status, 400, "HTTP/1.1 without Host");
    assert!(error_message(&r).contains("must have a Host"), "{}", r.text());
    let o = "Origin: http://localhost:1";
    let (r, _) = raw(a, &format!("GET /health HTTP/1.1\r\nHost: {a}\r\n{o}\r\n{o}\r\n\r\n"));
    assert_eq!(r.status, 400, "two Origin fields");
    assert!(error_message(&r).contains("more than one Origin"), "{}", r.text());
    // One of each is fine. HTTP/1.0 may omit Host: no 400, but the
    // rebinding guard of a loopback server still wants a name it knows.
    let (r, _) = raw(a, &format!("GET /health HTTP/1.1\r\nHost: {a}\r\n{o}\r\n\r\n"));
    assert_eq!(r.status, 200);
    let (r, _) = raw(a, "GET /health HTTP/1.0\r\n\r\n");
    assert_eq!(r.status, 403, "{}", r.text());
}

#[test]
fn a_malformed_chunked_body_is_answered_400_before_the_close() {
    let t = start(|_| {});
    let sid = init(t.addr);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Mcp-Session-Id: {sid}\r\nTransfer-Encoding: chunked\r\n\r\n",
        t.addr
    );
    let (r, mut s) = raw(t.addr, &format!("{head}2\r\n{{}}\r\nzz\r\n"));
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(error_message(&r).contains("malformed chunked body"), "{}", r.text());
    assert_eq!(r.header("connection"), Some("close"));
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty(), "nothing after the 400: {}", String::from_utf8_lossy(&rest));
}

// covers: streamable-http-server-400-unsupported-version-header
#[test]
fn a_version_header_other_than_the_sessions_is_400() {
    let t = start(|_| {});
    let sid = init_with(t.addr, "2025-06-18");
    let body = serde_json::to_vec(&json!({ "jsonrpc": "2.0", "id": 3, "method": "ping" })).unwrap();
    let with = |v: &str| {
        let hs = [ACCEPT, JSON, ("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", v)];
        request(t.addr, "POST", "/mcp", &hs, &body)
    };
    let r = with("2025-11-25");
    assert_eq!(r.status, 400, "{}", r.text());
    let v = r.json();
    assert_eq!(v["id"], 3);
    assert_eq!(v["error"]["data"]["supported"], json!(["2025-06-18"]));
    assert_eq!(v["error"]["data"]["requested"], "2025-11-25");
    assert!(error_message(&r).contains("negotiated (2025-06-18)"), "{}", r.text());
    let r = with("2025-06-18");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["id"], 3);
}
