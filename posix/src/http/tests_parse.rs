//! Parse once over HTTP: the listener parses a POST's body once and hands
//! the hub its view, and writes the hub's answer by what the hub says of it
//! (`About`, `Outcome`), never reading it again. Every buffer that carries
//! the call's marker is counted (core's `json::scan_count`): the body the
//! listener read, whatever the hub makes of it, the upstream's answer, the
//! answer written to the client. The hub's own side is in
//! `hub::tests::parse_once`.

use mcpx_core::json::scan_count;

use super::*;

const MARKER: &str = "zq-parse-once-marker";

/// (parses, rescans) of the buffers carrying [`MARKER`] while `send` posts
/// an `echo` call of it, whose answer must carry it back.
fn counted(send: impl FnOnce(Value) -> Resp) -> (usize, usize) {
    scan_count::watch_marker(MARKER.as_bytes());
    let r = send(json!({ "text": MARKER }));
    assert_eq!(r.status, 200, "{}", r.text());
    let got = response_of(&r);
    assert_eq!(got["result"]["content"][0]["text"], MARKER, "{got}");
    scan_count::get()
}

// The body, and the upstream's answer: one parse each, no rescan.
#[test]
fn a_legacy_call_over_http_is_parsed_once_each_way() {
    let t = start(|_| {});
    let sid = init(t.addr);
    assert_eq!(counted(|args| post(t.addr, Some(&sid), &call(5, "echo", args))), (2, 0));
}

#[test]
fn a_modern_call_over_http_is_parsed_once_each_way() {
    let t = start(|_| {});
    let send = |args| modern_post(t.addr, &modern_body(json!(5), "tools/call", json!({ "name": "echo", "arguments": args }), json!({})), &[]);
    // Once the upstream is ready (a request that comes while servers start
    // is kept as bytes until they have, and read again then).
    assert_eq!(send(json!({ "text": "warm" })).status, 200);
    assert_eq!(counted(send), (2, 0));
}
