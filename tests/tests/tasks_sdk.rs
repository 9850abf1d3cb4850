//! Real SDK task clients through mcpx: the Python SDK 1.30.0's experimental
//! tasks API (`tests/drivers/py_task_client.py`) and the TypeScript SDK
//! 1.32.2's experimental tasks client (`tests/drivers/ts_task_client.mjs`)
//! call a tool of `mcpx example-server` as a 2025-11-25 task through `mcpx
//! serve`, on stdio and over HTTP: the task comes at once, is polled to its
//! result and listed; over HTTP, another principal (another bearer token)
//! asking about it is refused. The newest published SDKs (Python mcp 2.3.0,
//! TypeScript v2 2.4.0) have no task client API, so these are the pinned
//! versions with one. Last, what such a client gets on the wire: a
//! `tasks/get` in a 2025-11-25 HTTP session is answered as JSON, not with
//! an SSE stream.

use mcpx_tests::*;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const TOOL: &str = "demo__slow_compute";

fn args() -> String {
    json!({"seconds": 0.5, "label": "sdk"}).to_string()
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Runs a driver; its report, which must say ok.
fn report(argv: Vec<String>) -> Value {
    let run = run_argv(&argv, Duration::from_secs(90));
    assert_eq!(run.code, Some(0), "{run}");
    run.json
}

fn hub_with_tokens() -> Hub {
    HubConfig::new().upstream(example_server("demo")).set("auth", json!({"tokens": {"alice": "tok-alice", "bob": "tok-bob"}})).write()
}

fn check_task(r: &Value) {
    assert_eq!(r["taskSupport"], "optional", "mcpx offers any tool as a task: {r}");
    assert!(r["text"].as_str().is_some_and(|t| t.contains("sdk: computed for 0.5 s")), "{r}");
    assert_eq!(r["listed"], true, "{r}");
}

fn foreign_refused(message: &Value) {
    assert!(message.as_str().is_some_and(|m| m.contains("no task")), "another principal's request must be refused as not found: {message}");
}

// covers: tasks-return-createtaskresult, tasks-get-implies-list
#[test]
fn python_sdk_task_client_through_mcpx_on_stdio() {
    let hub = HubConfig::new().upstream(example_server("demo")).write();
    let serve = hub.serve();
    let mut argv = vec![s(&python("1.30.0")), s(&driver("py_task_client.py")), TOOL.into(), args(), "--".into(), s(&serve.program)];
    argv.extend(serve.args);
    let r = report(argv);
    check_task(&r);
    assert_eq!(r["created"], "working", "{r}");
    assert_eq!(r["statuses"].as_array().and_then(|a| a.last()), Some(&json!("completed")), "{r}");
}

// covers: tasks-bound-reject-foreign, tasks-bind-auth-context
#[test]
fn python_sdk_task_client_through_mcpx_over_http_and_refused_to_another_principal() {
    let hub = hub_with_tokens();
    let server = hub.serve_http_with_state(hub.dir());
    let argv = vec![
        s(&python("1.30.0")),
        s(&driver("py_task_client.py")),
        "--url".into(),
        server.url.clone(),
        "--header".into(),
        "Authorization: Bearer tok-alice".into(),
        "--foreign".into(),
        "Authorization: Bearer tok-bob".into(),
        TOOL.into(),
        args(),
    ];
    let r = report(argv);
    check_task(&r);
    let foreign = r["foreign"].as_array().expect("bob's answers");
    assert_eq!(foreign.len(), 2, "{r}");
    foreign.iter().for_each(foreign_refused);
}

// covers: tasks-return-createtaskresult, tasks-result-blocks
#[test]
fn typescript_sdk_task_client_through_mcpx_on_stdio() {
    let hub = HubConfig::new().upstream(example_server("demo")).write();
    let serve = hub.serve();
    let mut argv = vec![s(&node()), s(&driver("ts_task_client.mjs")), TOOL.into(), args(), "--".into(), s(&serve.program)];
    argv.extend(serve.args);
    let r = report(argv);
    check_task(&r);
    assert_eq!(r["getStatus"], "completed", "{r}");
}

// covers: tasks-bound-reject-foreign
#[test]
fn typescript_sdk_task_client_through_mcpx_over_http_and_refused_to_another_principal() {
    let hub = hub_with_tokens();
    let server = hub.serve_http_with_state(hub.dir());
    let argv = vec![s(&node()), s(&driver("ts_task_client.mjs")), TOOL.into(), args(), "--url".into(), server.url.clone(), "tok-alice".into(), "tok-bob".into()];
    let r = report(argv);
    check_task(&r);
    foreign_refused(&r["foreign"]);
}

// covers: tasks-sse-no-upgrade-get
#[test]
fn tasks_get_in_an_http_session_is_answered_with_json() {
    let hub = HubConfig::new().upstream(example_server("demo")).write();
    let server = hub.serve_http_with_state(hub.dir());
    let rev = "2025-11-25";
    let init = post(&server.url, &[], &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": rev, "capabilities": {"tasks": {}}, "clientInfo": {"name": "raw", "version": "1"}}}));
    let sid = init.header("mcp-session-id").expect("a session").to_string();
    let h = [("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", rev)];
    post(&server.url, &h, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": TOOL, "arguments": {"seconds": 2, "label": "raw"}, "task": {"ttl": 60_000}}});
    let created = post(&server.url, &h, &call);
    let task = created.json["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {}", created.text)).to_string();
    let got = post(&server.url, &h, &json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": task}}));
    assert_eq!(got.status, 200, "{}", got.text);
    assert!(got.header("content-type").is_some_and(|t| t.starts_with("application/json")), "no SSE upgrade: {:?}", got.headers);
    assert_eq!(got.json["result"]["status"], "working", "{}", got.text);
}
