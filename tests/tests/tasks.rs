//! Tasks through the real binary: mcpx runs a tool of `mcpx example-server`
//! as a task of its own (the example server is not asked for a task), for a
//! 2025-11-25 client on stdio and for 2026-07-28 requests over HTTP, and a
//! task is only its creator's (two named tokens); and the suite's tasks
//! scenarios through mcpx, with the example server's 2026 tasks and with
//! its 2025-11-25 tasks (legacy revisions only).

use mcpx_tests::suite::{self, run_forced_server_scenario, TASKS_SCENARIOS};
use mcpx_tests::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);
const EXT: &str = "io.modelcontextprotocol/tasks";

fn slow(seconds: f64) -> Value {
    json!({"name": "demo__slow_compute", "arguments": {"seconds": seconds, "label": "sum"}})
}

/// A 2025-11-25 client on stdio that declared tasks calls a tool as a task:
/// the task comes back at once, `tasks/result` waits for the outcome.
// covers: tasks-return-createtaskresult, tasks-result-blocks
#[test]
fn a_stdio_client_runs_a_tool_as_a_task() {
    let hub = HubConfig::new().upstream(example_server("demo")).write();
    let mut s = RawSession::spawn(&hub.serve());
    let id = s.request("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {"tasks": {}},
        "clientInfo": {"name": "mcpx-tasks-test", "version": "1"}}));
    let init = s.response_to(id, WAIT);
    assert!(init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object(), "{init}");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut params = slow(2.0);
    params["task"] = json!({"ttl": 60_000});
    let id = s.request("tools/call", params);
    let created = s.response_to(id, WAIT);
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "working", "the task, at once: {created}");
    let task_id = task["taskId"].as_str().expect("a task id").to_string();
    let id = s.request("tasks/result", json!({"taskId": task_id}));
    let done = s.response_to(id, WAIT);
    assert!(texts(&done["result"]).contains("sum: computed"), "{done}");
    assert_eq!(done["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], task_id.as_str());
    let id = s.request("tasks/get", json!({"taskId": task_id}));
    assert_eq!(s.response_to(id, WAIT)["result"]["status"], "completed");
}

/// A task made with alice's token is not found with bob's, whatever he
/// asks; alice polls it to its result.
// covers: tasks-bound-reject-foreign, ext-tasks-createtaskresult-shape, ext-tasks-get-carries-result
#[test]
fn a_task_over_http_is_only_its_creators() {
    let hub = HubConfig::new().upstream(example_server("demo")).set("auth", json!({"tokens": {"alice": "tok-alice", "bob": "tok-bob"}})).write();
    let server = hub.serve_http_with_state(hub.dir());
    let url = server.url.clone();
    let caps = json!({"extensions": {EXT: {}}});
    let created = post_modern(&url, "tok-alice", &modern_request(1, "tools/call", slow(1.0), caps.clone()));
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"].as_str().expect("a task id").to_string();
    for (i, method) in ["tasks/get", "tasks/cancel"].iter().enumerate() {
        let r = post_modern(&url, "tok-bob", &modern_request(10 + i as i64, method, json!({"taskId": task_id}), caps.clone()));
        assert_eq!(r["error"]["code"], -32602, "bob's {method}: {r}");
    }
    let deadline = Instant::now() + WAIT;
    let done = loop {
        let r = post_modern(&url, "tok-alice", &modern_request(20, "tasks/get", json!({"taskId": task_id}), caps.clone()));
        if r["result"]["status"] != "working" {
            break r;
        }
        assert!(Instant::now() < deadline, "the task never finished: {r}");
        std::thread::sleep(Duration::from_millis(r["result"]["pollIntervalMs"].as_u64().unwrap_or(100).min(1000)));
    };
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert!(texts(&done["result"]["result"]).contains("sum: computed"), "{done}");
}

/// `mcpx serve` on stdio fronting `mcpx example-server` started with `extra_args` (tools unprefixed).
fn hub_over_example_server(extra_args: &[&str]) -> (TempDir, Cmd) {
    let mut cmd = example_server_cmd("fixtures");
    cmd.args.extend(extra_args.iter().map(|s| s.to_string()));
    let config = json!({"mcpServers": {"fixtures": {"command": cmd.program, "args": cmd.args, "prefix": ""}}});
    let dir = TempDir::new();
    let path = dir.path().join("mcpx.json");
    std::fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
    let serve = Cmd::new(mcpx(), &["serve", "--config", path.to_str().unwrap()]);
    (dir, serve)
}

/// The TypeScript SDK's 2025-11-25 tasks client through mcpx on stdio: with
/// the example server speaking 2026-07-28 (mcpx takes its extension task and
/// polls it) and limited to the legacy revisions (mcpx relays its 2025
/// task); an optional and a required tool, under ids of mcpx's.
// covers: tasks-tool-required, tasks-result-blocks, tasks-get-implies-list, tasks-id-string-receiver-unique
#[test]
fn an_sdk_tasks_client_through_mcpx_on_either_era_of_upstream() {
    // A 2026 server marks no tool for tasks: mcpx offers every one as optional.
    for (extra, support) in [(&[][..], "optional"), (&["--revisions", LEGACY_ONLY][..], "required")] {
        let (_dir, serve) = hub_over_example_server(extra);
        let r = suite::sdk_task_call("slow_compute", json!({"seconds": 0.3, "label": "sdk"}), &serve);
        assert_eq!(r["text"], "sdk: computed for 0.3 s", "{extra:?}: {r}");
        assert_eq!((r["getStatus"].clone(), r["listed"].clone()), (json!("completed"), json!(true)), "{extra:?}: {r}");
        assert!(r["taskId"].as_str().is_some_and(|t| t.starts_with("mcpx-")), "the hub's id: {r}");
        let r = suite::sdk_task_call("failing_job", json!({}), &serve);
        assert_eq!(r["taskSupport"], support, "{extra:?}: {r}");
        assert!(r["text"].as_str().is_some_and(|t| t.contains("failing_job failed")), "{extra:?}: {r}");
    }
}

/// The example server limited to the legacy revisions: its tasks are the
/// 2025-11-25 utility, mcpx offers the 2026-07-28 extension to clients.
const LEGACY_ONLY: &str = "2024-11-05,2025-03-26,2025-06-18,2025-11-25";

/// The suite's tasks scenarios against `mcpx serve --http` fronting `mcpx
/// example-server` started with `extra_args`; every check passes, and every
/// scenario but `tasks-status-notifications` (which the suite itself skips:
/// it reports no checks) has a SUCCESS. Results go to `target/conformance/<leg>`.
fn run_tasks_scenarios(leg: &str, extra_args: &[&str]) {
    let (_dir, mut serve) = hub_over_example_server(extra_args);
    let port = free_port();
    serve.args.extend(["--http".to_string(), format!("127.0.0.1:{port}")]);
    let server = HttpServer::start(&serve, port, "/mcp");
    let out = repo_root().join("target/conformance").join(leg);
    let mut problems = Vec::new();
    for scenario in TASKS_SCENARIOS {
        let r = run_forced_server_scenario(&server.url, scenario, &out);
        problems.extend(r.failure.iter().map(|f| format!("{scenario}: {f}")));
        if r.success == 0 && scenario != "tasks-status-notifications" {
            problems.push(format!("{scenario}: no SUCCESS check"));
        }
    }
    assert!(problems.is_empty(), "tasks scenarios through mcpx ({leg}):\n{}", problems.join("\n"));
}

/// The suite's tasks scenarios through mcpx fronting the example server,
/// whose tasks extension mcpx relays.
// covers: ext-tasks-server-advertise-discover, ext-tasks-never-unsolicited
#[test]
fn suite_tasks_scenarios_through_mcpx() {
    run_tasks_scenarios("tasks", &[]);
}

/// The same scenarios with the example server limited to the legacy
/// revisions: mcpx serves the 2026-07-28 extension to the suite on top of
/// the server's 2025-11-25 tasks (created, polled, fetched, cancelled there),
/// its input requests inside a task as `inputRequests` answered by
/// `tasks/update`, and its MRTR round before the task is made.
// covers: ext-tasks-server-advertise-discover, ext-tasks-never-unsolicited, ext-tasks-createtaskresult-shape, ext-tasks-get-carries-result, ext-tasks-get-input-requests, ext-tasks-update, ext-tasks-cancel-cooperative
#[test]
fn suite_tasks_scenarios_through_mcpx_legacy_upstream() {
    run_tasks_scenarios("tasks-legacy-upstream", &["--revisions", LEGACY_ONLY]);
}
