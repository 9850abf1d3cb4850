//! Parse once: every buffer of a forwarded call and of its answer is scanned
//! once on its way through the hub (issue "One request pipeline"), for a
//! legacy and a 2026-07-28 call, from a transport that hands the hub bytes
//! (stdio) or the view it parsed (HTTP). Counted by core's
//! `json::scan_count` hook on every buffer that carries the call's marker
//! (the call, what the hub makes of it, the upstream's answer, the answer to
//! the client); the HTTP listener's side is in `http::tests::parse`.

use mcpx_core::envelope::Envelope;
use mcpx_core::json::scan_count;

use super::modern::with_meta;
use super::*;

/// In every call's arguments, and in the upstream's answer to it.
const MARKER: &str = "zq-hub-parse-once";

/// The upstream's answer to the forwarded request `sent`, as bytes.
fn answer_to(sent: &Value) -> Vec<u8> {
    format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[{{"type":"text","text":"{MARKER}"}}]}}}}"#, sent["id"]).into_bytes()
}

/// Feeds `call` (bytes, or the view a transport parsed) and the upstream's
/// answer to it; (parses, rescans) of the call, then of the answer.
fn through(p: &mut Pair, c: ClientId, call: &[u8], as_view: bool) -> [(usize, usize); 2] {
    assert!(String::from_utf8_lossy(call).contains(MARKER));
    scan_count::watch_marker(MARKER.as_bytes());
    if as_view {
        let env = Envelope::parse(call).unwrap();
        p.hub.handle(Input::ClientEnvelope(c, &env), p.now);
    } else {
        p.hub.handle(Input::ClientMessage(c, call), p.now);
    }
    let of_call = scan_count::get();
    p.pump();
    let sent = p.take_up(0);
    assert_eq!(sent["method"], "tools/call", "forwarded: {sent}");
    let answer = answer_to(&sent);
    scan_count::watch_marker(MARKER.as_bytes());
    p.hub.handle(Input::UpstreamMessage { up: 0, msg: &answer, on: None }, p.now);
    let of_answer = scan_count::get();
    p.pump();
    let got = p.take(c);
    assert_eq!(got["result"]["content"][0]["text"], MARKER, "answered: {got}");
    [of_call, of_answer]
}

/// A legacy `tools/call`, over stdio and as an HTTP view.
#[test]
fn a_legacy_call_and_its_answer_are_each_parsed_once() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    let c = p.client("2025-06-18", json!({}));
    assert_eq!(p.names(c), ["fs__read"]);
    let stdio = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fs__read","arguments":{"path":"zq-hub-parse-once"},"_meta":{"progressToken":"p"}}}"#;
    let http = br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"fs__read","arguments":{"path":"zq-hub-parse-once"}}}"#;
    assert_eq!(through(&mut p, c, stdio, false), [(1, 0); 2], "(parses, rescans) of the stdio call, its answer");
    assert_eq!(through(&mut p, c, http, true), [(1, 0); 2], "(parses, rescans) of the HTTP call, its answer");
}

/// A 2026-07-28 `tools/call` (its request context in `_meta`), through a
/// legacy and a 2026-07-28 upstream, over stdio and as an HTTP view: the
/// answer gets the modern stamp (`resultType`, `serverInfo`) spliced into
/// its bytes from the one view.
#[test]
fn a_modern_call_and_its_answer_are_each_parsed_once() {
    for (name, fake) in [("legacy", Fake::tools(&["read"])), ("modern", Fake::modern(&["read"]))] {
        let mut p = Pair::with(vec![("fs", fake)], HubOptions::default());
        let c = p.connect();
        for (id, as_view) in [(1, false), (2, true)] {
            let params = with_meta(json!({ "name": "fs__read", "arguments": { "path": MARKER } }), &json!({}));
            let call = serde_json::to_vec(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })).unwrap();
            let counts = through(&mut p, c, &call, as_view);
            assert_eq!(counts, [(1, 0); 2], "(parses, rescans) of the call, its answer: {name} upstream, as view: {as_view}");
        }
    }
}
