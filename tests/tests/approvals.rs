//! Approvals end to end (README "Approving calls"): real clients of the
//! official SDKs, over stdio through `mcpx serve`, are shown the exact call
//! in an `elicitation/create` from mcpx and accept or decline it; a
//! declined call reaches the model's side as a tool error, and nothing
//! reaches the server. The page and its one-time link are tested in
//! `status_page` (headless Chromium).

use mcpx_tests::*;
use serde_json::json;

/// `demo` (the built-in example server) behind a rule that makes every call
/// of its `echo` wait for approval.
fn hub() -> Hub {
    HubConfig::new().upstream(example_server("demo")).set("policy", json!({ "approve": ["demo/echo"] })).write()
}

const ARGS: &str = r#"{"text":"rm -rf / (just kidding)"}"#;

/// `client` answers mcpx's question with `answer`: the question shows the
/// call, and the result is the tool's (accept) or a tool error (decline);
/// over stdio.
fn approve(client: Client, answer: &str) {
    let hub = hub();
    check(&client.run(&args(answer), &hub.serve()));
}

/// [`approve`] over Streamable HTTP (`mcpx serve --http`).
fn approve_over_http(client: Client, answer: &str) {
    let hub = hub();
    let server = hub.serve_http();
    check(&client.run_url(&args(answer), &server.url));
}

/// The driver's arguments: call `echo` with [`ARGS`], answering `answer`.
fn args(answer: &str) -> Vec<&str> {
    let mut args = vec!["--prefix", "demo__", "--elicit", answer, "call", "echo", ARGS];
    if answer == "decline" {
        args.extend(["--expect-error", "--expect-text", "declined this call"]);
    } else {
        args.extend(["--expect-text", "rm -rf / (just kidding)"]);
    }
    args
}

/// mcpx asked exactly once, showing the call, and the run held.
fn check(r: &Report) {
    r.assert_ok();
    let asked: Vec<&serde_json::Value> = r.json["server_requests"].as_array().map(|a| a.iter().filter(|q| q["method"] == "elicitation/create").collect()).unwrap_or_default();
    r.check(asked.len() == 1, "mcpx asks exactly once");
    let message = asked[0]["params"]["message"].as_str().unwrap_or("");
    for shown in ["Approve this tool call?", "server: demo", "tool: echo", "\"text\": \"rm -rf / (just kidding)\"", "arguments sha256: "] {
        r.check(message.contains(shown), &format!("{shown:?} is not in the question: {message}"));
    }
}

// covers: tools-human-in-loop-deny, tools-client-sec
#[test]
fn py_1_30_0_accepts() {
    approve(Client::Py("1.30.0"), "accept");
}

// covers: tools-human-in-loop-deny
#[test]
fn py_1_30_0_declines() {
    approve(Client::Py("1.30.0"), "decline");
}

// covers: tools-human-in-loop-deny, tools-client-sec
#[test]
fn py_2_3_0_accepts() {
    approve(Client::Py("2.3.0"), "accept");
}

// covers: tools-human-in-loop-deny
#[test]
fn py_2_3_0_declines() {
    approve(Client::Py("2.3.0"), "decline");
}

// covers: tools-human-in-loop-deny, tools-client-sec
#[test]
fn ts_v1_accepts() {
    approve(Client::TsV1, "accept");
}

// covers: tools-human-in-loop-deny
#[test]
fn ts_v1_declines() {
    approve(Client::TsV1, "decline");
}

// covers: tools-human-in-loop-deny, tools-client-sec
#[test]
fn ts_v2_accepts() {
    approve(Client::TsV2("legacy"), "accept");
}

// covers: tools-human-in-loop-deny
#[test]
fn ts_v2_declines() {
    approve(Client::TsV2("legacy"), "decline");
}

// covers: tools-human-in-loop-deny, tools-call-input-required-may
#[test]
fn py_2_3_0_in_2026_07_28_accepts_in_an_input_round() {
    approve(Client::Py2Mode("2026-07-28"), "accept");
}

// covers: tools-human-in-loop-deny
#[test]
fn py_2_3_0_in_2026_07_28_declines_in_an_input_round() {
    approve(Client::Py2Mode("2026-07-28"), "decline");
}

// covers: tools-human-in-loop-deny, tools-call-input-required-may
#[test]
fn ts_v2_in_2026_07_28_accepts_in_an_input_round() {
    approve(Client::TsV2("2026-07-28"), "accept");
}

// covers: tools-human-in-loop-deny
#[test]
fn ts_v2_in_2026_07_28_declines_in_an_input_round() {
    approve(Client::TsV2("2026-07-28"), "decline");
}

// covers: tools-human-in-loop-deny
#[test]
fn py_1_30_0_over_http_accepts() {
    approve_over_http(Client::Py("1.30.0"), "accept");
}

// covers: tools-human-in-loop-deny
#[test]
fn ts_v2_in_2026_07_28_over_http_declines_in_an_input_round() {
    approve_over_http(Client::TsV2("2026-07-28"), "decline");
}
