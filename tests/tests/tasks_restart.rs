//! Tasks across a restart of the real binary: `mcpx serve --http` is killed
//! (SIGKILL, as a crash) and started again on the same port with the same
//! config and state folder. A task `mcpx example-server --http` runs (a
//! remote upstream, which keeps running) is relayed again; a task mcpx ran
//! itself comes back failed, saying mcpx restarted; neither is another
//! principal's.

use mcpx_tests::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);
const EXT: &str = "io.modelcontextprotocol/tasks";

fn caps() -> Value {
    json!({"extensions": {EXT: {}}})
}

/// A task-augmented 2026-07-28 call of `tool` with alice's token: the hub's task id.
fn start_task(url: &str, id: i64, tool: &str, seconds: f64) -> String {
    let params = json!({"name": tool, "arguments": {"seconds": seconds, "label": "sum"}});
    let created = post_modern(url, "tok-alice", &modern_request(id, "tools/call", params, caps()));
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().expect("a task id").to_string()
}

fn get(url: &str, token: &str, id: i64, task: &str) -> Value {
    post_modern(url, token, &modern_request(id, "tasks/get", json!({"taskId": task}), caps()))
}

// covers: tasks-bound-reject-foreign, tasks-failed-status-message, ext-tasks-client-persist-ids
#[test]
fn tasks_survive_a_restart_of_mcpx() {
    let upstream_port = free_port();
    let mut up = example_server_cmd("up");
    up.args.extend(["--http".to_string(), format!("127.0.0.1:{upstream_port}")]);
    let upstream = HttpServer::start(&up, upstream_port, "/mcp");
    // A server without tasks (a legacy revision): mcpx runs its calls as tasks itself.
    let mut local = example_server("local");
    local.cmd.args.extend(["--revisions".to_string(), "2025-06-18".to_string()]);
    let hub = HubConfig::new()
        .upstream(local)
        .remote("up", json!({"url": upstream.url}))
        .set("auth", json!({"tokens": {"alice": "tok-alice", "bob": "tok-bob"}}))
        .write();
    let state = TempDir::new();
    let mut mcpx = hub.serve_http_with_state(state.path());
    let url = mcpx.url.clone();

    let relayed = start_task(&url, 1, "up__slow_compute", 2.0);
    let ran = start_task(&url, 2, "local__slow_compute", 120.0);
    assert_eq!(get(&url, "tok-alice", 3, &ran)["result"]["status"], "working");
    let files: Vec<_> = std::fs::read_dir(state.path().join("mcpx/tasks")).expect("the task state folder").collect();
    assert_eq!(files.len(), 1, "one state file: {files:?}");

    mcpx.kill();
    mcpx.restart();

    // The task mcpx ran: failed, with the reason, at once.
    let r = get(&url, "tok-alice", 4, &ran);
    assert_eq!(r["result"]["status"], "failed", "{r}");
    assert_eq!(r["result"]["statusMessage"], "mcpx restarted while this task ran; its result is lost", "{r}");
    // Still no one else's.
    for (i, task) in [&relayed, &ran].iter().enumerate() {
        let r = get(&url, "tok-bob", 5 + i as i64, task);
        assert_eq!(r["error"]["code"], -32602, "bob's tasks/get: {r}");
    }
    // The upstream's task: polled through mcpx to its result.
    let deadline = Instant::now() + WAIT;
    let done = loop {
        let r = get(&url, "tok-alice", 10, &relayed);
        assert_eq!(r["result"]["taskId"], relayed.as_str(), "{r}");
        if r["result"]["status"] != "working" {
            break r;
        }
        assert!(Instant::now() < deadline, "the relayed task never finished: {r}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert!(texts(&done["result"]["result"]).contains("sum: computed for 2 s"), "{done}");
}
