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

/// The Python SDK 1.30's task client (`py_task_client.py --elicit
/// ANSWER`) calls `echo` as a 2025-11-25 task through `serve`'s transport
/// (`--url URL` or `-- COMMAND`): its report.
fn task_approval(answer: &str, transport: Vec<String>) -> serde_json::Value {
    let py = python("1.30.0").to_string_lossy().into_owned();
    let mut argv = vec![py, driver("py_task_client.py").to_string_lossy().into_owned(), "--elicit".into(), answer.into()];
    if transport[0] == "--url" {
        argv.extend(transport.iter().cloned());
        argv.extend(["demo__echo".to_string(), ARGS.to_string()]);
    } else {
        argv.extend(["demo__echo".to_string(), ARGS.to_string()]);
        argv.extend(transport.iter().cloned());
    }
    let run = run_argv(&argv, std::time::Duration::from_secs(90));
    assert_eq!(run.code, Some(0), "{run}");
    run.json
}

/// The task came at once `input_required`, mcpx's question named it, and
/// it ended as the answer says: the tool's result, or (declined) a failed
/// task whose result is the tool error.
fn check_task(r: &serde_json::Value, answer: &str) {
    assert_eq!(r["created"], "input_required", "{r}");
    assert_eq!(r["asked"], json!([r["taskId"]]), "one question, naming the task: {r}");
    let last = r["statuses"].as_array().and_then(|s| s.last()).cloned();
    if answer == "accept" {
        assert_eq!(last, Some(json!("completed")), "{r}");
        assert!(r["text"].as_str().is_some_and(|t| t.contains("rm -rf / (just kidding)")), "{r}");
    } else {
        assert_eq!(last, Some(json!("failed")), "{r}");
        assert_eq!(r["isError"], true, "{r}");
        assert!(r["text"].as_str().is_some_and(|t| t.contains("declined this call")), "{r}");
    }
}

fn serve_argv(hub: &Hub) -> Vec<String> {
    let serve = hub.serve();
    let mut argv = vec!["--".to_string(), serve.program.to_string_lossy().into_owned()];
    argv.extend(serve.args);
    argv
}

// covers: tasks-input-required-move, tasks-input-request-related-task, elicitation-task-related-id-shared
#[test]
fn py_1_30_0_task_client_accepts_while_its_task_is_input_required() {
    let hub = hub();
    check_task(&task_approval("accept", serve_argv(&hub)), "accept");
}

#[test]
fn py_1_30_0_task_client_declines_while_its_task_is_input_required() {
    let hub = hub();
    check_task(&task_approval("decline", serve_argv(&hub)), "decline");
}

#[test]
fn py_1_30_0_task_client_over_http_accepts_while_its_task_is_input_required() {
    let hub = hub();
    let server = hub.serve_http();
    check_task(&task_approval("accept", vec!["--url".into(), server.url.clone()]), "accept");
}
