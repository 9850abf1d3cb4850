//! Tasks across a restart of mcpx (`hub::tasks::persist`): what one hub
//! saves, a new hub restores; relayed tasks reach their upstream again,
//! tasks the hub ran itself come back failed, saying why.

use super::*;

const REV: &str = "2025-11-25";

fn ext_caps() -> Value {
    json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } })
}

/// A hub that saves its tasks, over `fs` (tool `read`) and the modern `m`
/// (tool `job`, with the tasks extension); `epoch_ms` its wall clock at zero.
fn saving_hub(epoch_ms: u64, saved: Option<&[u8]>) -> Pair {
    let mut opts = HubOptions::default();
    opts.tasks.epoch_ms = epoch_ms;
    let mut m = Fake::modern(&["job"]);
    m.caps["extensions"] = ext_caps()["extensions"].clone();
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"])), ("m", m)], opts);
    p.hub.restore_tasks(saved, p.now);
    p
}

fn legacy_client(p: &mut Pair, principal: &[u8]) -> ClientId {
    let c = p.client(REV, json!({ "tasks": {} }));
    p.hub.handle(Input::ClientPrincipal(c, principal), p.now);
    c
}

fn modern_client(p: &mut Pair, principal: &[u8]) -> ClientId {
    let c = p.connect();
    p.hub.handle(Input::ClientPrincipal(c, principal), p.now);
    c
}

/// The state file's records, parsed.
fn records(p: &Pair) -> Vec<Value> {
    let last = p.saved.last().expect("a saved task state");
    let v: Value = serde_json::from_slice(last).unwrap();
    v["tasks"].as_array().unwrap().clone()
}

// covers: tasks-bound-reject-foreign, tasks-failed-status-message
#[test]
fn a_task_the_hub_ran_is_saved_before_it_is_answered_and_fails_clearly_after_a_restart() {
    let epoch = 1_800_000_000_000;
    let mut p = saving_hub(epoch, None);
    let alice = legacy_client(&mut p, b"alice");
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read", "arguments": {}, "task": { "ttl": 60_000 } } });
    p.hub.handle(Input::ClientMessage(alice, call.to_string().as_bytes()), p.now);
    let mut order = vec![];
    while let Some(o) = p.hub.poll_output() {
        match o {
            Output::SaveTasks(b) => {
                order.push("save");
                p.saved.push(b);
            }
            Output::ToClient(..) => order.push("answer"),
            _ => {}
        }
    }
    assert_eq!(order, ["save", "answer"], "the task is on disk before the client hears of it");
    let rec = &records(&p)[0];
    assert_eq!((rec["era"].clone(), rec["status"].clone(), rec["principal"].clone()), (json!(REV), json!("working"), json!("616c696365")), "{rec}");
    assert_eq!(rec["expiresAt"], epoch + p.now + 60_000);
    assert!(rec.get("upstream").is_none() && rec.get("result").is_none(), "no result is kept: {rec}");
    let id = rec["id"].as_str().unwrap().to_string();
    let state = p.saved.last().unwrap().clone();

    // mcpx restarts, ten seconds later.
    let mut q = saving_hub(epoch + 10_000, Some(&state));
    let again = legacy_client(&mut q, b"alice");
    let got = q.request(again, json!(2), "tasks/get", json!({ "taskId": id }));
    assert_eq!(got["result"]["status"], "failed", "{got}");
    assert_eq!(got["result"]["statusMessage"], "mcpx restarted while this task ran; its result is lost");
    assert_eq!(got["result"]["ttl"], 50_000, "the deadline is kept");
    let res = q.request(again, json!(3), "tasks/result", json!({ "taskId": id }));
    assert_eq!(res["error"]["message"], "mcpx restarted while this task ran; its result is lost", "{res}");
    let bob = legacy_client(&mut q, b"bob");
    let r = q.request(bob, json!(4), "tasks/get", json!({ "taskId": id }));
    assert_eq!(r["error"]["code"], -32602, "another principal's task is not found: {r}");

    // Past the deadline, the record is dropped.
    let mut late = saving_hub(epoch + 120_000, Some(&state));
    let again = legacy_client(&mut late, b"alice");
    let r = late.request(again, json!(5), "tasks/get", json!({ "taskId": id }));
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

#[test]
fn a_task_that_ended_before_the_restart_says_its_result_was_not_kept() {
    let epoch = 1_800_000_000_000;
    let mut p = saving_hub(epoch, None);
    let alice = legacy_client(&mut p, b"alice");
    let created = p.request(alice, json!(1), "tools/call", json!({ "name": "fs__read", "arguments": {}, "task": { "ttl": 60_000 } }));
    let up = p.take_up(0);
    let saves = p.saved.len();
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    assert_eq!(p.saved.len(), saves + 1, "the end of a task is saved");
    assert_eq!(records(&p)[0]["status"], "completed");
    let id = created["result"]["task"]["taskId"].as_str().unwrap().to_string();
    let state = p.saved.last().unwrap().clone();
    let mut q = saving_hub(epoch + 1_000, Some(&state));
    let again = legacy_client(&mut q, b"alice");
    let got = q.request(again, json!(2), "tasks/get", json!({ "taskId": id }));
    assert_eq!((got["result"]["status"].clone(), got["result"]["statusMessage"].clone()), (json!("failed"), json!("mcpx restarted after this task ended; its result was not kept")), "{got}");
}

// covers: tasks-bound-reject-foreign, ext-tasks-client-persist-ids
#[test]
fn a_relayed_task_reaches_its_upstream_again_after_a_restart() {
    let epoch = 1_800_000_000_000;
    let mut p = saving_hub(epoch, None);
    let alice = modern_client(&mut p, b"alice");
    p.msend(alice, json!(1), "tools/call", json!({ "name": "m__job" }), &ext_caps());
    let up = p.take_up(1);
    let task = json!({ "resultType": "task", "taskId": "up-7", "status": "working", "createdAt": "2027-01-15T08:00:00Z", "lastUpdatedAt": "2027-01-15T08:00:00Z", "ttlMs": 60_000, "pollIntervalMs": 100 });
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "id": up["id"], "result": task }));
    let created = p.take(alice);
    let id = created["result"]["taskId"].as_str().unwrap().to_string();
    let rec = &records(&p)[0];
    assert_eq!((rec["era"].clone(), rec["upstream"].clone()), (json!("2026-07-28"), json!({ "server": "m", "taskId": "up-7", "followed": false })), "{rec}");
    let state = p.saved.last().unwrap().clone();

    let mut q = saving_hub(epoch + 5_000, Some(&state));
    let bob = modern_client(&mut q, b"bob");
    let r = q.mreq(bob, json!(2), "tasks/get", json!({ "taskId": id }), &ext_caps());
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(q.up_quiet(1));
    let again = modern_client(&mut q, b"alice");
    q.msend(again, json!(3), "tasks/get", json!({ "taskId": id }), &ext_caps());
    let get = q.take_up(1);
    assert_eq!((get["method"].clone(), get["params"]["taskId"].clone()), (json!("tasks/get"), json!("up-7")), "{get}");
    let done = json!({ "resultType": "complete", "taskId": "up-7", "status": "completed", "createdAt": "2027-01-15T08:00:00Z", "lastUpdatedAt": "2027-01-15T08:00:09Z", "ttlMs": 60_000, "result": { "content": [] } });
    q.upstream_says(1, json!({ "jsonrpc": "2.0", "id": get["id"], "result": done }));
    let got = q.take(again);
    assert_eq!((got["result"]["taskId"].clone(), got["result"]["status"].clone()), (json!(id), json!("completed")), "{got}");

    // A hub whose config no longer has server `m` drops the mapping.
    let mut opts = HubOptions::default();
    opts.tasks.epoch_ms = epoch + 5_000;
    let mut other = Pair::with(vec![("fs", Fake::tools(&["read"]))], opts);
    assert_eq!(other.hub.restore_tasks(Some(&state), other.now), 0);
}
