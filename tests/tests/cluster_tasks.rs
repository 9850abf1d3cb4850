//! A task outlives the replica that created it when a remote server runs it
//! (issue 16): Redis, `mcpx example-server --http` as the remote server
//! both replicas reach, and two `mcpx serve --http` replicas sharing a
//! state key, on free loopback ports, started and stopped by the test
//! (redis-server from Debian: a missing one fails the test).

use std::thread;
use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::{json, Value};

fn tasks_caps() -> Value {
    json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } })
}

/// A replica `rN` of the two, with the remote server `ex` at `server`.
fn replica(dir: &TempDir, n: usize, ports: &[u16; 2], redis: u16, server: &str) -> HttpServer {
    let other = 1 - (n - 1);
    let cfg = json!({
        "mcpServers": { "ex": { "url": server } },
        "state": { "url": format!("redis://127.0.0.1:{redis}/0"), "keyFile": dir.path().join("state.key") },
        "cluster": { "replica": format!("r{n}"), "peers": { format!("r{}", other + 1): format!("http://127.0.0.1:{}", ports[other]) } },
    });
    let path = dir.path().join(format!("r{n}.json"));
    std::fs::write(&path, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
    let addr = format!("127.0.0.1:{}", ports[n - 1]);
    let r = HttpServer::start(&Cmd::new(mcpx(), &["serve", "--http", &addr, "--config", &path.to_string_lossy()]), ports[n - 1], "/mcp");
    let t0 = Instant::now();
    while !modern(&r.url, &modern_request(1, "tools/list", json!({}), json!({})))["result"].to_string().contains("ex__slow_compute") {
        assert!(t0.elapsed() < Duration::from_secs(20), "replica r{n} did not list the remote server's tools");
        thread::sleep(Duration::from_millis(100));
    }
    r
}

/// POSTs 2026-07-28 request `msg` to `url` with the headers it needs; its
/// JSON answer.
fn modern(url: &str, msg: &Value) -> Value {
    let method = msg["method"].as_str().expect("a request");
    let name = msg["params"]["name"].as_str().or(msg["params"]["taskId"].as_str());
    let mut h = vec![("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method)];
    h.extend(name.map(|n| ("Mcp-Name", n)));
    post(url, &h, msg).json
}

fn task_get(url: &str, id: i64, task: &str) -> Value {
    modern(url, &modern_request(id, "tasks/get", json!({ "taskId": task }), tasks_caps()))
}

// A remote server's task created through replica 1 is served through
// replica 2 (forwarded to its owner) while replica 1 lives; once replica 1
// is killed, replica 2 takes it over from its record in Redis and follows
// it to its result on the same remote server.
// covers: ext-tasks-client-persist-ids
#[test]
fn a_remote_servers_task_survives_the_replica_that_created_it() {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("state.key"), "5c".repeat(32)).unwrap();
    let (_redis, redis_port) = redis_server();
    let ex_port = free_port();
    let mut ex = example_server_cmd("ex");
    ex.args.extend(["--http".to_string(), format!("127.0.0.1:{ex_port}")]);
    let server = HttpServer::start(&ex, ex_port, "/mcp");
    let ports = [free_port(), free_port()];
    let mut r1 = replica(&dir, 1, &ports, redis_port, &server.url);
    let r2 = replica(&dir, 2, &ports, redis_port, &server.url);

    let call = modern_request(2, "tools/call", json!({ "name": "ex__slow_compute", "arguments": { "seconds": 3, "label": "kept" } }), tasks_caps());
    let created = modern(&r1.url, &call);
    let task = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {created}")).to_string();
    assert!(task.starts_with("mcpx-r1."), "{created}");
    let got = task_get(&r2.url, 3, &task);
    assert_eq!(got["result"]["status"], "working", "served by its owner through r2: {got}");

    r1.kill();
    let t0 = Instant::now();
    let done = loop {
        let got = task_get(&r2.url, 4, &task);
        assert_eq!(got["result"]["taskId"], task, "{got}");
        if got["result"]["status"] != "working" {
            break got;
        }
        assert!(t0.elapsed() < Duration::from_secs(15), "the task never ended: {got}");
        thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let text = done.pointer("/result/result/content/0/text").and_then(Value::as_str).unwrap_or_default();
    assert_eq!(text, "kept: computed for 3 s", "the remote server's result, through the replica that took the task over: {done}");
}
