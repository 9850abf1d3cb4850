//! A server's request for input reaches exactly the client that caused it,
//! never another (issue 11 item 1): real SDK clients over Streamable HTTP at
//! once, sharing one stdio server (`py_server.py`).

use mcpx_tests::*;
use serde_json::{json, Value};

/// What the server asked of a client, as its driver reported.
fn asked(r: &Report) -> Vec<Value> {
    r.json["server_requests"].as_array().cloned().unwrap_or_default()
}

/// Client `asker` calls a tool that asks for confirmation after a pause;
/// meanwhile another client (Python SDK 1.30.0, legacy) has a long call in
/// flight to the same server. Nothing on the wire says whose question it
/// is, so mcpx must ask neither (it used to ask the client whose call was
/// sent last: the other one) and the asking tool learns why.
fn two_callers_one_question(asker: Client) {
    let hub = HubConfig::new().upstream(py_server("py")).write();
    let http = hub.serve_http();
    let url = http.url.clone();
    let other = std::thread::spawn(move || {
        let steps = json!([
            {"op": "list_tools", "expect_tools": ["py__slow"], "retry_for": 30},
            {"op": "sleep", "seconds": 1},
            {"op": "call", "tool": "py__slow", "args": {"steps": 24, "delay": 0.5}, "expect_text": "slow done"}
        ]);
        Client::Py("1.30.0").run_url(&["script", &steps.to_string()], &url)
    });
    let steps = json!([
        {"op": "list_tools", "expect_tools": ["py__ask_user_after"], "retry_for": 30},
        {"op": "call", "tool": "py__ask_user_after", "args": {"question": "Delete all of A's files?", "delay": 5}, "expect": "any"}
    ]);
    let a = asker.run_url(&["script", &steps.to_string()], &http.url);
    let b = other.join().expect("the other client's thread");
    b.assert_ok();
    b.check(asked(&b).is_empty(), &format!("the other client was asked A's question: {:?}", asked(&b)));
    a.assert_ok();
    a.check(asked(&a).is_empty(), "nothing names A either: it must not be asked on a guess");
    let text = texts(&a.step(1)["result"]);
    a.check(text.contains("cannot tell which of its clients"), &format!("the tool should learn why it got no answer: {text}"));
}

// covers: streamable-http-post-sse-may-carry-requests
#[test]
fn a_legacy_clients_question_never_reaches_another_client() {
    two_callers_one_question(Client::Py("1.30.0"));
}

// covers: streamable-http-post-sse-may-carry-requests, mrtr-no-cross-request-use
#[test]
fn a_modern_clients_question_never_reaches_another_client() {
    two_callers_one_question(Client::Py2Mode("2026-07-28"));
}
