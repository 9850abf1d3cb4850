//! Rows of the tasks utility the other task tests do not show: `taskId`
//! is the source of truth, audit lines, and mcpx as a client of an
//! upstream's tasks taking either kind of answer.

use super::*;

const RELATED: &str = "io.modelcontextprotocol/related-task";

fn ext_caps() -> Value {
    json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } })
}

fn task_of(p: &mut Pair, c: ClientId, id: i64) -> (String, Value) {
    let r = p.request(c, json!(id), "tools/call", json!({ "name": "fs__read", "arguments": {}, "task": { "ttl": 60_000 } }));
    let up = p.take_up(0);
    (r["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {r}")).to_string(), up)
}

// covers: tasks-taskid-param-authoritative, tasks-audit
#[test]
fn the_taskid_parameter_decides_and_task_lives_are_logged() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    let c = p.client("2025-11-25", json!({ "tasks": {} }));
    let (a, up_a) = task_of(&mut p, c, 1);
    let (b, _) = task_of(&mut p, c, 2);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up_a["id"], "result": { "content": [] } }));
    let _status = p.take(c);
    // related-task metadata naming another task is ignored.
    let got = p.request(c, json!(3), "tasks/get", json!({ "taskId": a, "_meta": { RELATED: { "taskId": b } } }));
    assert_eq!((got["result"]["taskId"].clone(), got["result"]["status"].clone()), (json!(a), json!("completed")), "{got}");
    let got = p.request(c, json!(4), "tasks/get", json!({ "taskId": b, "_meta": { RELATED: { "taskId": a } } }));
    assert_eq!((got["result"]["taskId"].clone(), got["result"]["status"].clone()), (json!(b), json!("working")), "{got}");
    let logged = |needle: String| p.logs.iter().any(|(l, s)| *l == Level::Info && s.contains(&needle));
    assert!(logged(format!("task {a} created: tools/call on server 'fs'")), "{:?}", p.logs);
    assert!(logged(format!("task {b} created")), "{:?}", p.logs);
    assert!(logged(format!("task {a} completed")), "{:?}", p.logs);
    assert!(!logged(format!("task {b} completed")), "only what happened is logged");
}

// covers: ext-tasks-client-polymorphic
#[test]
fn an_upstream_with_tasks_may_answer_a_task_or_the_result_itself() {
    let mut m = Fake::modern(&["job"]);
    m.caps["extensions"] = ext_caps()["extensions"].clone();
    let mut p = Pair::with(vec![("m", m)], HubOptions::default());
    let c = p.connect();
    p.msend(c, json!(1), "tools/call", json!({ "name": "m__job" }), &ext_caps());
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "resultType": "complete", "content": [{ "type": "text", "text": "at once" }] } }));
    let r = p.take(c);
    assert_eq!((r["result"]["resultType"].clone(), r["result"]["content"][0]["text"].clone()), (json!("complete"), json!("at once")), "{r}");
    assert!(r["result"].get("taskId").is_none(), "no task made up: {r}");
    p.msend(c, json!(2), "tools/call", json!({ "name": "m__job" }), &ext_caps());
    let up = p.take_up(0);
    let task = json!({ "resultType": "task", "taskId": "up-1", "status": "working", "createdAt": "2027-01-15T08:00:00Z", "lastUpdatedAt": "2027-01-15T08:00:00Z", "ttlMs": 1000 });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": task }));
    let r = p.take(c);
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    assert!(r["result"]["taskId"].as_str().is_some_and(|t| t.starts_with("mcpx-")), "{r}");
}
