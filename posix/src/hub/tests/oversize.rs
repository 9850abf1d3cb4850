//! A reply over the transport's cap: the request it answers gets an error
//! at once (naming the server, the size and the limit), found by the id at
//! either end of the skipped message; other clients are not touched.

use mcpx_core::frame::line::LineEvent;
use serde_json::json;

use super::*;

const LIMIT: &str = "the 1048576-byte limit of one stdio message (1 MiB)";

/// Reports `msg` (a reply too large for the runtime) as the runtime does:
/// its size and its edges.
fn too_large(p: &mut Pair, u: UpstreamId, msg: &str) {
    too_large_on(p, u, msg, None);
}

/// [`too_large`] for a message that came on the response stream of the
/// hub's request `on` (an HTTP upstream's POST stream).
fn too_large_on(p: &mut Pair, u: UpstreamId, msg: &str, on: Option<u64>) {
    let LineEvent::TooLarge { len, head, tail } = LineEvent::over_long(msg.as_bytes()) else { unreachable!() };
    let big = Oversize { len, max: 1 << 20, limit: LIMIT, head, tail };
    p.hub.handle(Input::UpstreamTooLarge { up: u, big: &big, on: on.map(|id| id.to_string()).as_deref().map(str::as_bytes) }, p.now);
    p.pump();
}

/// Two clients each with a call in flight to `fs`: (pair, clients, the
/// upstream ids of their calls).
fn two_calls() -> (Pair, [ClientId; 2], [u64; 2]) {
    let (mut p, a) = one("2025-11-25", json!({}));
    let b = p.client("2025-06-18", json!({}));
    let mut ids = [0; 2];
    for (i, c) in [a, b].into_iter().enumerate() {
        p.send(c, json!({ "jsonrpc": "2.0", "id": format!("call-{i}"), "method": "tools/call", "params": { "name": "fs__slow" } }));
        let up = p.take_up(0);
        assert_eq!(up["method"], "tools/call");
        ids[i] = up["id"].as_u64().unwrap();
    }
    (p, [a, b], ids)
}

fn big_text() -> String {
    "x".repeat(3000)
}

// covers: messages-error-response-same-id-unless-unreadable, lifecycle-prepared-for-error-cases
#[test]
fn a_reply_over_the_cap_fails_its_own_request_at_once() {
    let (mut p, [a, b], [ida, idb]) = two_calls();
    // The TypeScript SDK's order: the id comes last.
    let ts = format!(r#"{{"result":{{"content":[{{"type":"text","text":"{}"}}]}},"jsonrpc":"2.0","id":{idb}}}"#, big_text());
    too_large(&mut p, 0, &ts);
    let e = p.take(b);
    assert_eq!((err_code(&e), e["id"].clone()), (-32603, json!("call-1")), "{e}");
    let msg = e["error"]["message"].as_str().unwrap();
    assert_eq!(msg, format!("server 'fs' answered tools/call with {} bytes, over {LIMIT}; the answer was dropped", ts.len()));
    assert_eq!(e["error"]["data"], json!({ "server": "fs", "bytes": ts.len(), "limitBytes": 1 << 20 }));
    assert!(p.client_quiet(a), "the other client's call is still open");
    assert!(p.logs.iter().any(|(l, s)| *l == Level::Warn && s.contains("answered tools/call")), "{:?}", p.logs);
    // The Python SDK's order: the id comes first.
    let py = format!(r#"{{"jsonrpc":"2.0","id":{ida},"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#, big_text());
    too_large(&mut p, 0, &py);
    let e = p.take(a);
    assert_eq!((err_code(&e), e["id"].clone()), (-32603, json!("call-0")), "{e}");
    // Nothing is left open: the late timeout answers nobody twice.
    p.advance(30_000);
    assert!(p.client_quiet(a) && p.client_quiet(b));
    // The server stays usable.
    p.send(a, json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": { "name": "fs__read" } }));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    assert_eq!(p.take(a)["result"], json!({ "content": [] }));
}

// covers: lifecycle-timeouts-cancel-on-expiry
#[test]
fn without_a_readable_id_the_timeout_names_the_limit() {
    let (mut p, [a, b], _) = two_calls();
    too_large(&mut p, 0, &format!(r#"{{"result":{{"text":"{}"}}}}"#, big_text()));
    assert!(p.client_quiet(a) && p.client_quiet(b), "no guess at whose answer it was");
    assert!(p.logs.iter().any(|(_, s)| s.contains("its id is not in its first or last bytes")), "{:?}", p.logs);
    p.advance(10_000);
    for c in [a, b] {
        let e = p.take(c);
        let msg = e["error"]["message"].as_str().unwrap();
        assert!(msg.starts_with("server 'fs' did not answer tools/call within 10000 ms"), "{msg}");
        assert!(msg.contains(&format!("over {LIMIT}")), "{msg}");
    }
    // A call sent after it times out without the note.
    p.send(a, json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": { "name": "fs__slow" } }));
    p.take_up(0);
    p.advance(10_000);
    let msg = p.take(a)["error"]["message"].as_str().unwrap().to_string();
    assert!(!msg.contains("limit"), "{msg}");
}

// covers: messages-error-response-same-id-unless-unreadable, messages-notification-no-response
#[test]
fn a_clients_request_over_the_cap_is_answered_with_its_own_id() {
    let (mut p, c) = one("2025-11-25", json!({}));
    let client_too_large = |p: &mut Pair, msg: &str| {
        let LineEvent::TooLarge { len, head, tail } = LineEvent::over_long(msg.as_bytes()) else { unreachable!() };
        p.hub.handle(Input::ClientFrameTooLarge(c, &Oversize { len, max: 1 << 20, limit: LIMIT, head, tail }), p.now);
        p.pump();
    };
    let req = format!(r#"{{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{{"name":"fs__read","arguments":{{"x":"{}"}}}}}}"#, big_text());
    client_too_large(&mut p, &req);
    let e = p.take(c);
    assert_eq!((err_code(&e), e["id"].clone()), (-32600, json!("big-1")), "{e}");
    assert_eq!(e["error"]["message"], format!("Invalid request: the message is {} bytes, over {LIMIT}; it was dropped", req.len()));
    assert_eq!(e["error"]["data"], json!({ "bytes": req.len(), "limitBytes": 1 << 20 }));
    assert!(p.up_quiet(0), "nothing of it reaches the server");
    // A notification gets no answer; garbage gets the unreadable-id error.
    client_too_large(&mut p, &format!(r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"x":"{}"}}}}"#, big_text()));
    assert!(p.client_quiet(c));
    client_too_large(&mut p, &big_text());
    let e = p.take(c);
    assert_eq!(err_code(&e), -32600);
    assert!(e.get("id").is_none(), "2025-11-25: unreadable id left out: {e}");
}

// covers: messages-error-response-same-id-unless-unreadable, lifecycle-prepared-for-error-cases
#[test]
fn a_reply_without_a_readable_id_on_its_requests_stream_fails_that_request() {
    let (mut p, [a, b], [ida, idb]) = two_calls();
    // The id sits in neither edge; off a request's stream, nothing is answered.
    let noid = format!(r#"{{"result":{{"text":"{}"}},"id":{idb},"jsonrpc":"2.0"}}"#, big_text());
    too_large(&mut p, 0, &noid);
    assert!(p.client_quiet(a) && p.client_quiet(b));
    // On the POST stream of b's call, it is b's answer.
    too_large_on(&mut p, 0, &noid, Some(idb));
    let e = p.take(b);
    assert_eq!((err_code(&e), e["id"].clone()), (-32603, json!("call-1")), "{e}");
    assert_eq!(e["error"]["message"], format!("server 'fs' answered tools/call with {} bytes, over {LIMIT}; the answer was dropped", noid.len()));
    // A readable id wins over the stream's; what does not look like a reply
    // (a notification, an unknown head) answers nothing.
    too_large_on(&mut p, 0, &format!(r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"x":"{}"}}}}"#, big_text()), Some(ida));
    too_large_on(&mut p, 0, &format!(r#"{{"pad":"{}"}}"#, big_text()), Some(ida));
    assert!(p.client_quiet(a));
    too_large_on(&mut p, 0, &format!(r#"{{"jsonrpc":"2.0","id":{ida},"result":{{"t":"{}"}}}}"#, big_text()), Some(idb));
    let e = p.take(a);
    assert_eq!((err_code(&e), e["id"].clone()), (-32603, json!("call-0")), "{e}");
}

#[test]
fn an_oversized_request_from_the_server_fails_no_call() {
    let (mut p, [a, b], [ida, _]) = two_calls();
    // Its id is the same number as a's call, in the server's own id space.
    let req = format!(r#"{{"jsonrpc":"2.0","id":{ida},"method":"sampling/createMessage","params":{{"x":"{}"}}}}"#, big_text());
    too_large(&mut p, 0, &req);
    assert!(p.client_quiet(a) && p.client_quiet(b));
    assert!(p.logs.iter().any(|(_, s)| s.contains("sent a request or notification")), "{:?}", p.logs);
    assert!(p.hub.clients().request_open(a, br#""call-0""#));
}
