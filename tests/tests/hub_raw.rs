//! Bad input written straight to `mcpx serve`'s stdin, no SDK in between.

use mcpx_tests::*;
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

fn hub_session() -> (Hub, RawSession) {
    let hub = HubConfig::new().upstream(example_server("demo")).write();
    let mut s = RawSession::spawn(&hub.serve());
    s.initialize("2025-06-18");
    (hub, s)
}

/// The session still works: tools/list answers with the upstream's tools.
fn still_serving(s: &mut RawSession) {
    let id = s.request("tools/list", json!({}));
    let r = s.response_to(id, WAIT);
    let names: Vec<&str> = r["result"]["tools"]
        .as_array()
        .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        names.contains(&"demo__echo"),
        "tools/list after bad input: {r}"
    );
}

fn error_code(r: &Value) -> Option<i64> {
    r["error"]["code"].as_i64()
}

// covers: errors-standard-jsonrpc-codes, messages-error-response-same-id-unless-unreadable, errors-error-has-code-and-message
#[test]
fn malformed_json_gets_parse_error() {
    let (_hub, mut s) = hub_session();
    s.write_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \n");
    let r = s
        .next_response(WAIT)
        .expect("no answer to a malformed line");
    assert_eq!(error_code(&r), Some(-32700), "{r}");
    assert!(r["error"]["message"].is_string(), "{r}");
    assert!(r.get("result").is_none(), "{r}");
    // The id could not be read: it is null or absent, never made up.
    assert!(r.get("id").is_none() || r["id"].is_null(), "{r}");
    still_serving(&mut s);
}

// covers: errors-error-has-code-and-message, messages-error-response-same-id-unless-unreadable, errors-codes-integers
#[test]
fn unknown_method_gets_method_not_found() {
    let (_hub, mut s) = hub_session();
    let id = s.request("no/such/method", json!({}));
    let r = s.response_to(id, WAIT);
    assert_eq!(error_code(&r), Some(-32601), "{r}");
    assert_eq!(r["id"], json!(id), "{r}");
    assert!(r["error"]["message"].is_string(), "{r}");
    // A notification with an unknown method gets no answer at all.
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/no_such_thing"}));
    still_serving(&mut s);
}

// covers: errors-error-has-code-and-message
#[test]
fn over_long_line_errors_then_session_continues() {
    // Well over any sane per-message limit (the example server's is 16 MiB).
    const LEN: usize = 40 << 20;
    let (_hub, mut s) = hub_session();
    let mut line = br#"{"jsonrpc":"2.0","id":99,"method":"ping","params":{"pad":""#.to_vec();
    line.resize(line.len() + LEN, b'x');
    line.extend_from_slice(b"\"}}\n");
    s.write_raw(&line);
    drop(line);
    let r = s
        .next_response(Duration::from_secs(60))
        .expect("no answer to an over-long line");
    assert!(
        r.get("error").is_some(),
        "an over-long line must be answered with an error: {r}"
    );
    assert!(error_code(&r).is_some(), "{r}");
    still_serving(&mut s);
}

// covers: messages-result-response-same-id, messages-request-id-string-or-integer
#[test]
fn string_ids_come_back_unchanged() {
    let (_hub, mut s) = hub_session();
    s.send(
        &json!({"jsonrpc": "2.0", "id": "req-é-1", "method": "tools/call",
                   "params": {"name": "demo__echo", "arguments": {"text": "raw"}}}),
    );
    let r = s.next_response(WAIT).expect("no answer");
    assert_eq!(r["id"], json!("req-é-1"), "{r}");
    assert!(texts(&r["result"]).contains("raw"), "{r}");
}

// covers: stdio-message-may-be-batch, messages-batch-may-send-must-receive
#[test]
fn a_batch_on_a_2025_03_26_session_gets_one_array_and_elsewhere_one_error() {
    let hub = HubConfig::new().upstream(example_server("demo")).write();
    let mut s = RawSession::spawn(&hub.serve());
    s.initialize("2025-03-26");
    s.send(&json!([
        {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "demo__echo", "arguments": {"text": "in a batch"}}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
        {"jsonrpc": "2.0", "id": 11, "method": "ping"}
    ]));
    let r = s.next_response(WAIT).expect("no answer to the batch");
    let answers = r.as_array().unwrap_or_else(|| panic!("one array for the batch: {r}"));
    assert_eq!(answers.len(), 2, "{r}");
    let echo = answers.iter().find(|a| a["id"] == 10).unwrap_or_else(|| panic!("{r}"));
    assert!(texts(&echo["result"]).contains("in a batch"), "{r}");
    assert!(answers.iter().any(|a| a["id"] == 11 && a["result"] == json!({})), "{r}");
    still_serving(&mut s);

    let (_hub, mut s) = hub_session();
    s.send(&json!([{"jsonrpc": "2.0", "id": 12, "method": "ping"}]));
    let r = s.next_response(WAIT).expect("no answer to the batch");
    assert_eq!(error_code(&r), Some(-32600), "{r}");
    assert!(r["error"]["message"].as_str().unwrap_or("").contains("2025-06-18"), "{r}");
    still_serving(&mut s);
}

// covers: lifecycle-initialization-first-interaction, lifecycle-client-no-requests-before-init-response
#[test]
fn requests_before_initialize_are_refused_except_ping() {
    let hub = HubConfig::new().upstream(example_server("demo")).write();
    let mut s = RawSession::spawn(&hub.serve());
    let id = s.request("tools/list", json!({}));
    let r = s.response_to(id, WAIT);
    assert_eq!(error_code(&r), Some(-32600), "{r}");
    assert!(r["error"]["message"].as_str().unwrap_or("").contains("initialize"), "{r}");
    let id = s.request("ping", json!({}));
    assert_eq!(s.response_to(id, WAIT)["result"], json!({}));
    s.initialize("2025-06-18");
    still_serving(&mut s);
}
