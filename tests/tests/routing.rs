//! A server's request for input reaches exactly the client that caused it,
//! never another (issue 11 item 1): real SDK clients over Streamable HTTP at
//! once, sharing one server (`py_server.py`), on stdio or as a remote
//! Streamable HTTP server.

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

/// The elicitation messages client report `r` was asked.
fn questions(r: &Report) -> Vec<String> {
    asked(r).iter().filter(|q| q["method"] == "elicitation/create").map(|q| q["params"]["message"].as_str().unwrap_or("").to_string()).collect()
}

/// Two clients call a tool of one remote Streamable HTTP server (FastMCP)
/// that asks its caller a question after a pause; `b` starts second, so its
/// call is in flight when `a`'s question comes (and `a`'s, if `b`'s comes
/// first). The server sends each question on the POST stream of the call
/// it serves and the remote transport tells the hub which, so each client
/// is asked its own question, once, and its tool gets its own answer.
fn two_callers_each_asked_their_own(a: Client, b: Client) {
    let server = py_server_remote("py", Transport::StreamableHttp, None);
    let hub = HubConfig::new().remote("py", json!({ "url": server.url })).write();
    let http = hub.serve_http();
    let script = |pause: u64, question: &str| {
        json!([
            {"op": "list_tools", "expect_tools": ["py__ask_user_after"], "retry_for": 30},
            {"op": "sleep", "seconds": pause},
            {"op": "call", "tool": "py__ask_user_after", "args": {"question": question, "delay": 3}, "expect_text": "user answered: mcpx-elicited-answer"}
        ])
        .to_string()
    };
    let url = http.url.clone();
    let (qa, qb) = ("Delete all of A's files?", "Delete all of B's files?");
    let other = std::thread::spawn(move || b.run_url(&["script", &script(1, qb)], &url));
    let ra = a.run_url(&["script", &script(0, qa)], &http.url);
    let rb = other.join().expect("the other client's thread");
    for (r, own, theirs) in [(&ra, qa, qb), (&rb, qb, qa)] {
        r.assert_ok();
        let got = questions(r);
        r.check(got.len() == 1 && got[0].contains(own), &format!("asked {got:?}, expected only {own:?}"));
        r.check(!got.iter().any(|q| q.contains(theirs)), &format!("was asked the other client's question: {got:?}"));
    }
}

// covers: streamable-http-post-sse-may-carry-requests
#[test]
fn a_remote_servers_questions_reach_their_own_legacy_callers() {
    two_callers_each_asked_their_own(Client::Py("1.30.0"), Client::Py("1.30.0"));
}

// covers: streamable-http-post-sse-may-carry-requests, mrtr-no-cross-request-use
#[test]
fn a_remote_servers_questions_reach_their_own_callers_of_both_eras() {
    two_callers_each_asked_their_own(Client::Py("1.30.0"), Client::Py2Mode("2026-07-28"));
}
