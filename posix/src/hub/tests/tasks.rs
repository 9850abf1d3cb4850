//! Tasks the hub runs itself (`hub::tasks`), in both eras, bound to their
//! principal, within their caps.

use super::*;

const REV: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";
const RELATED: &str = "io.modelcontextprotocol/related-task";

/// A 2025-11-25 client that declared tasks.
fn task_client(p: &mut Pair) -> ClientId {
    p.client(REV, json!({ "tasks": {} }))
}

fn call_as_task(p: &mut Pair, c: ClientId, id: i64, ttl: u64) -> (Value, Value) {
    let r = p.request(c, json!(id), "tools/call", json!({ "name": "fs__read", "arguments": { "n": id }, "task": { "ttl": ttl } }));
    let up = p.take_up(0);
    (r, up)
}

fn task_id(created: &Value) -> String {
    created["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("a CreateTaskResult: {created}")).to_string()
}

/// A hub over `fs` (tool `read`) and a client that called it as task `id`
/// with `ttl`; the upstream's call.
fn one_task(opts: HubOptions, ttl: u64) -> (Pair, ClientId, String, Value) {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], opts);
    let c = task_client(&mut p);
    let (created, up) = call_as_task(&mut p, c, 1, ttl);
    let id = task_id(&created);
    (p, c, id, up)
}

fn ok_text(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }] })
}

// covers: tasks-declare-capability, tasks-tool-optional, tasks-return-createtaskresult, tasks-begin-working
// covers: tasks-result-blocks, tasks-result-terminal-final, tasks-result-exact, tasks-result-response-related-task
// covers: tasks-timestamps, tasks-ttl-override-report, tasks-status-notification-no-related-task
// covers: tasks-no-related-task-in-get-list-cancel-results, tasks-id-string-receiver-unique, tasks-poll-interval
#[test]
fn a_legacy_client_runs_any_tool_as_a_task_and_fetches_the_result() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    let c = p.connect();
    let init = p.request(c, json!(0), "initialize", json!({ "protocolVersion": REV, "capabilities": { "tasks": {} }, "clientInfo": { "name": "t", "version": "1" } }));
    assert_eq!(init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"], json!({}), "{init}");
    schema_check(REV, "ServerCapabilities", &init["result"]["capabilities"]);
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    let tools = p.list_all(c, "tools/list", "tools");
    assert_eq!(tools[0]["execution"]["taskSupport"], "optional", "{tools:?}");

    let max_ttl = HubOptions::default().tasks.max_ttl_ms;
    let (created, up) = call_as_task(&mut p, c, 5, max_ttl * 10);
    assert_eq!(created["id"], 5);
    schema_check(REV, "CreateTaskResult", &created["result"]);
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], max_ttl, "a longer ttl is cut to mcpx's cap");
    assert!(task["pollInterval"].as_u64().is_some_and(|n| n > 0));
    assert!(task["createdAt"].as_str().is_some_and(|s| s.ends_with('Z')));
    let id = task_id(&created);
    assert!(up["params"].get("task").is_none(), "the upstream gets a plain call: {up}");
    assert_eq!(up["params"]["arguments"], json!({ "n": 5 }));

    let got = p.request(c, json!(6), "tasks/get", json!({ "taskId": id }));
    schema_check(REV, "GetTaskResult", &got["result"]);
    assert_eq!(got["result"]["status"], "working");
    assert!(got["result"].get("_meta").is_none(), "{got}");
    // tasks/result blocks until the task is terminal.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 7, "method": "tasks/result", "params": { "taskId": id } }));
    assert!(p.client_quiet(c));
    assert!(p.hub.clients().request_open(c, b"7"));

    // An integer wider than 64 bits, which only byte-exact keeping preserves.
    let answer = r#"{"content":[{"type":"text","text":"done"}],"structuredContent":{"big":123456789012345678901234567890}}"#;
    let raw_answer = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{answer}}}"#, up["id"]);
    p.hub.handle(Input::UpstreamMessage { up: 0, msg: raw_answer.as_bytes(), on: None }, p.now);
    p.pump();
    let status = p.take(c);
    assert_eq!(status["method"], "notifications/tasks/status", "{status}");
    schema_check(REV, "TaskStatusNotification", &status);
    assert_eq!(status["params"]["status"], "completed");
    assert!(status["params"].get("_meta").is_none());
    let (res, raw) = p.take_raw(c);
    assert_eq!(res["id"], 7);
    assert_eq!(res["result"]["content"][0]["text"], "done");
    assert!(String::from_utf8_lossy(&raw).contains("123456789012345678901234567890"), "numbers pass byte-exact");
    assert_eq!(res["result"]["_meta"][RELATED]["taskId"], id.as_str());
    schema_check(REV, "CallToolResult", &res["result"]);
    // Asked again: the same result, at once.
    let again = p.request(c, json!(8), "tasks/result", json!({ "taskId": id }));
    assert_eq!(again["result"], res["result"]);
    let got = p.request(c, json!(9), "tasks/get", json!({ "taskId": id }));
    assert_eq!(got["result"]["status"], "completed");
    let list = p.request(c, json!(10), "tasks/list", json!({}));
    schema_check(REV, "ListTasksResult", &list["result"]);
    assert_eq!(list["result"]["tasks"][0]["taskId"], id.as_str());
    // A second task has another id.
    let (second, _) = call_as_task(&mut p, c, 11, 1000);
    assert_ne!(task_id(&second), id);
}

// covers: tasks-bound-reject-foreign, tasks-bind-auth-context, tasks-get-implies-list
#[test]
fn a_task_belongs_to_its_principal_on_any_connection_and_to_no_one_else() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    let alice = task_client(&mut p);
    p.hub.handle(Input::ClientPrincipal(alice, b"alice"), p.now);
    let bob = task_client(&mut p);
    p.hub.handle(Input::ClientPrincipal(bob, b"bob"), p.now);
    let (created, up) = call_as_task(&mut p, alice, 1, 60_000);
    let id = task_id(&created);
    for (i, method) in ["tasks/get", "tasks/result", "tasks/cancel"].iter().enumerate() {
        let r = p.request(bob, json!(i), method, json!({ "taskId": id }));
        assert_eq!(r["error"]["code"], -32602, "{method}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("no task"), "{r}");
    }
    let bobs = p.request(bob, json!(9), "tasks/list", json!({}));
    assert_eq!(bobs["result"]["tasks"], json!([]));
    // Alice leaves; the task goes on and is hers on a new connection.
    p.hub.handle(Input::ClientDisconnected(alice), p.now);
    p.pump();
    assert!(p.up_quiet(0), "the task's call is not cancelled with the connection");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": ok_text("hers") }));
    let again = task_client(&mut p);
    p.hub.handle(Input::ClientPrincipal(again, b"alice"), p.now);
    let list = p.request(again, json!(1), "tasks/list", json!({}));
    assert_eq!(list["result"]["tasks"][0]["taskId"], id.as_str());
    let r = p.request(again, json!(2), "tasks/result", json!({ "taskId": id }));
    assert_eq!(r["result"]["content"][0]["text"], "hers");
    let r = p.request(bob, json!(3), "tasks/result", json!({ "taskId": id }));
    assert_eq!(r["error"]["code"], -32602, "still not Bob's: {r}");
}

/// Progress of a call mcpx runs as a task reaches its creator under the
/// original request's token after the CreateTaskResult, and stops when the
/// task ends.
// covers: progress-task-token-lives-with-task, progress-task-same-token, progress-task-stop-at-terminal
#[test]
fn a_tasks_progress_keeps_its_token_after_the_create_result_and_stops_at_its_end() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    let c = task_client(&mut p);
    p.task_tokens.push(json!("tok-1"));
    let params = json!({ "name": "fs__read", "arguments": {}, "task": { "ttl": 60_000 }, "_meta": { "progressToken": "tok-1" } });
    let created = p.request(c, json!(1), "tools/call", params);
    let id = task_id(&created);
    let up = p.take_up(0);
    let up_token = up["params"]["_meta"]["progressToken"].clone();
    assert!(!up_token.is_null(), "{up}");
    let progress = |p: &mut Pair, n: u64| p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": up_token, "progress": n } }));
    progress(&mut p, 1);
    let n = p.take(c);
    assert_eq!((n["method"].clone(), n["params"]["progressToken"].clone(), n["params"]["progress"].clone()), (json!("notifications/progress"), json!("tok-1"), json!(1)), "{n}");
    let r = p.request(c, json!(2), "tasks/cancel", json!({ "taskId": id }));
    assert_eq!(r["result"]["status"], "cancelled", "{r}");
    while p.cl.get(&c).is_some_and(|q| !q.is_empty()) {
        let m = p.take(c);
        assert_ne!(m["method"], "notifications/progress", "{m}");
    }
    progress(&mut p, 2);
    assert!(p.client_quiet(c), "no progress after the task ended");
}

/// HTTP sessions without any credential share the principal `anonymous`;
/// their tasks are each session's, so one never lists or reads another's.
// covers: tasks-unidentified-no-list, tasks-bound-reject-foreign
#[test]
fn sessions_without_credentials_each_have_their_own_tasks() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    let a = task_client(&mut p);
    p.hub.handle(Input::ClientPrincipal(a, crate::hub::ANONYMOUS_PRINCIPAL), p.now);
    let b = task_client(&mut p);
    p.hub.handle(Input::ClientPrincipal(b, crate::hub::ANONYMOUS_PRINCIPAL), p.now);
    let (created, up) = call_as_task(&mut p, a, 1, 60_000);
    let id = task_id(&created);
    assert_eq!(p.request(b, json!(2), "tasks/list", json!({}))["result"]["tasks"], json!([]));
    let r = p.request(b, json!(3), "tasks/get", json!({ "taskId": id }));
    assert_eq!(r["error"]["code"], -32602, "another anonymous session is another requestor: {r}");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": ok_text("a's") }));
    assert_eq!(p.take(a)["method"], "notifications/tasks/status");
    assert_eq!(p.request(a, json!(4), "tasks/list", json!({}))["result"]["tasks"][0]["taskId"], id.as_str());
    assert_eq!(p.request(a, json!(5), "tasks/result", json!({ "taskId": id }))["result"]["content"][0]["text"], "a's");
}

// covers: tasks-cancel-transition-before-response, tasks-cancel-terminal-reject, tasks-cancelled-sticky, cancellation-task-use-tasks-cancel
#[test]
fn cancelling_a_task_cancels_its_upstream_call_and_is_final() {
    let (mut p, c, id, up) = one_task(HubOptions::default(), 60_000);
    p.send(c, json!({ "jsonrpc": "2.0", "id": 2, "method": "tasks/result", "params": { "taskId": id } }));
    let r = p.request(c, json!(3), "tasks/cancel", json!({ "taskId": id }));
    schema_check(REV, "CancelTaskResult", &r["result"]);
    assert_eq!(r["result"]["status"], "cancelled", "{r}");
    let cancel = p.take_up(0);
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], up["id"]);
    assert_eq!(p.take(c)["method"], "notifications/tasks/status");
    let waiting = p.take(c);
    assert_eq!(waiting["id"], 2, "the waiting tasks/result is answered: {waiting}");
    assert_eq!(waiting["error"]["code"], -32603);
    // A late answer changes nothing.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": ok_text("late") }));
    let got = p.request(c, json!(4), "tasks/get", json!({ "taskId": id }));
    assert_eq!(got["result"]["status"], "cancelled");
    let again = p.request(c, json!(5), "tasks/cancel", json!({ "taskId": id }));
    assert_eq!(again["error"]["code"], -32602, "{again}");
}

// covers: tasks-result-same-error, tasks-failed-status-message, tasks-protocol-errors
#[test]
fn errors_and_tool_errors_fail_the_task_and_come_back_unchanged() {
    let (mut p, c, id, up) = one_task(HubOptions::default(), 60_000);
    let err = json!({ "code": -32000, "message": "disk on fire", "data": { "x": 1 } });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "error": err }));
    let status = p.take(c);
    assert_eq!(status["params"]["status"], "failed");
    assert_eq!(status["params"]["statusMessage"], "disk on fire");
    let r = p.request(c, json!(2), "tasks/result", json!({ "taskId": id }));
    assert_eq!(r["error"], err);
    let (created, up) = call_as_task(&mut p, c, 3, 60_000);
    let tool_error = json!({ "content": [{ "type": "text", "text": "no" }], "isError": true });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": tool_error }));
    assert_eq!(p.take(c)["params"]["status"], "failed");
    let r = p.request(c, json!(4), "tasks/result", json!({ "taskId": task_id(&created) }));
    assert_eq!(r["result"]["isError"], true);
    for (params, what) in [(json!({}), "no taskId"), (json!({ "taskId": "nope" }), "unknown")] {
        let r = p.request(c, json!(5), "tasks/get", params);
        assert_eq!(r["error"]["code"], -32602, "{what}: {r}");
    }
    let r = p.request(c, json!(6), "tasks/list", json!({ "cursor": "forged" }));
    assert_eq!(r["error"]["code"], -32602);
}

// covers: tasks-resource-limits, tasks-delete-after-ttl
#[test]
fn tasks_are_capped_per_principal_in_memory_and_in_time() {
    let mut opts = HubOptions::default();
    opts.tasks.max_live_per_principal = 1;
    opts.tasks.max_result_bytes = 200;
    let (mut p, c, id, up) = one_task(opts, 5_000);
    let r = p.request(c, json!(2), "tools/call", json!({ "name": "fs__read", "task": {} }));
    assert_eq!(r["error"]["code"], -32603);
    assert!(r["error"]["message"].as_str().unwrap().contains("limit"), "{r}");
    assert!(p.up_quiet(0), "nothing was sent for the refused task");
    // A result over the memory cap fails the task, saying why.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": ok_text(&"x".repeat(300)) }));
    let status = p.take(c);
    assert_eq!(status["params"]["status"], "failed");
    assert!(status["params"]["statusMessage"].as_str().unwrap().contains("task memory"), "{status}");
    // Finished, it no longer counts: a new task may start; past its ttl a
    // working task is cancelled upstream and forgotten.
    let (created2, up2) = call_as_task(&mut p, c, 3, 5_000);
    let id2 = task_id(&created2);
    p.advance(5_001);
    let cancel = p.take_up(0);
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], up2["id"]);
    for t in [id, id2] {
        let r = p.request(c, json!(4), "tasks/get", json!({ "taskId": t }));
        assert_eq!(r["error"]["code"], -32602, "expired: {r}");
    }
}

#[test]
fn a_task_whose_server_exits_fails_with_a_clear_status() {
    let (mut p, c, id, _) = one_task(HubOptions::default(), 60_000);
    p.hub.handle(Input::UpstreamExited { up: 0, reason: "killed", stderr_tail: "", next: Next::Now }, p.now);
    p.pump();
    let status = p.take(c);
    assert_eq!(status["params"]["status"], "failed");
    assert!(status["params"]["statusMessage"].as_str().unwrap().contains("exited"), "{status}");
    let r = p.request(c, json!(2), "tasks/result", json!({ "taskId": id }));
    assert_eq!(r["error"]["code"], -32603);
}

#[test]
fn clients_that_did_not_declare_tasks_get_plain_calls() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    let c = p.client(REV, json!({}));
    let tools = p.list_all(c, "tools/list", "tools");
    assert!(tools[0].get("execution").is_none(), "{tools:?}");
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read", "task": {} } }));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": ok_text("plain") }));
    assert_eq!(p.take(c)["result"]["content"][0]["text"], "plain");
    // Before 2025-11-25 there are no tasks, declared or not.
    let old = p.client("2025-06-18", json!({ "tasks": {} }));
    let init_caps = p.hub.clients.get(&old).is_some_and(|cl| crate::hub::tasks::declared_legacy(cl.rev(), cl.caps()));
    assert!(!init_caps);
}

pub(super) fn ext_caps() -> Value {
    json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } })
}

// covers: ext-tasks-server-advertise-discover, ext-tasks-createtaskresult-shape, ext-tasks-get-carries-result
// covers: ext-tasks-never-unsolicited, ext-tasks-cancel-cooperative, ext-tasks-update
// covers: meta-extension-ids-follow-meta-rules, versioning-extension-fallback-or-reject
#[test]
fn a_modern_client_with_the_extension_gets_tasks_and_polls_them() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    let c = p.connect();
    let d = p.mreq(c, json!(1), "server/discover", json!({}), &ext_caps());
    assert_eq!(d["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"], json!({}), "{d}");
    schema_check(MODERN, "DiscoverResult", &d["result"]);
    // Without the extension: a plain call, and tasks/* need the extension.
    p.msend(c, json!(2), "tools/call", json!({ "name": "fs__read" }), &json!({}));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": ok_text("plain") }));
    assert_eq!(p.take(c)["result"]["resultType"], "complete");
    let r = p.mreq(c, json!(3), "tasks/get", json!({ "taskId": "x" }), &json!({}));
    assert_eq!(r["error"]["code"], -32021, "{r}");

    let created = p.mreq(c, json!(4), "tools/call", json!({ "name": "fs__read" }), &ext_caps());
    let res = &created["result"];
    assert_eq!(res["resultType"], "task", "{created}");
    assert_eq!(res["status"], "working");
    assert!(res["ttlMs"].is_u64() && res["pollIntervalMs"].is_u64() && res["createdAt"].is_string());
    let id = res["taskId"].as_str().unwrap().to_string();
    let up = p.take_up(0);
    let got = p.mreq(c, json!(5), "tasks/get", json!({ "taskId": id }), &ext_caps());
    assert_eq!(got["result"]["status"], "working");
    assert!(got["result"].get("result").is_none());
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": ok_text("done") }));
    assert!(p.client_quiet(c), "no 2025 status notification to a modern client");
    let got = p.mreq(c, json!(6), "tasks/get", json!({ "taskId": id }), &ext_caps());
    assert_eq!(got["result"]["status"], "completed");
    assert_eq!(got["result"]["result"]["content"][0]["text"], "done");
    assert_eq!(got["result"]["resultType"], "complete");
    let u = p.mreq(c, json!(7), "tasks/update", json!({ "taskId": id, "inputResponses": {} }), &ext_caps());
    assert_eq!(u["result"]["resultType"], "complete", "{u}");
    let cancel = p.mreq(c, json!(8), "tasks/cancel", json!({ "taskId": id }), &ext_caps());
    assert_eq!(cancel["result"]["resultType"], "complete", "acknowledged even when finished: {cancel}");
    let got = p.mreq(c, json!(9), "tasks/get", json!({ "taskId": id }), &ext_caps());
    assert_eq!(got["result"]["status"], "completed", "cancellation is cooperative: a finished task stays so");
}

/// A modern upstream that serves the tasks extension.
pub(super) fn tasks_upstream() -> Fake {
    let mut f = Fake::modern(&["job"]);
    f.caps["extensions"] = json!({ "io.modelcontextprotocol/tasks": {} });
    f
}

// covers: tasks-unbound-secure-ids, tasks-bound-reject-foreign, ext-tasks-server-decides, ext-tasks-get-input-requests
// covers: ext-tasks-client-declare-per-request
#[test]
fn an_upstreams_task_is_relayed_under_an_id_of_the_hubs_and_only_to_its_principal() {
    let mut p = Pair::with(vec![("m", tasks_upstream())], HubOptions::default());
    let alice = p.connect();
    p.hub.handle(Input::ClientPrincipal(alice, b"alice"), p.now);
    let bob = p.connect();
    p.hub.handle(Input::ClientPrincipal(bob, b"bob"), p.now);
    p.msend(alice, json!(1), "tools/call", json!({ "name": "m__job" }), &ext_caps());
    let up = p.take_up(0);
    assert_eq!(up["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"], relayed_caps(ext_caps())["extensions"], "the upstream decides: {up}");
    let big = HubOptions::default().tasks.max_ttl_ms * 2;
    let task = json!({ "resultType": "task", "taskId": "up-7", "status": "working", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": big, "pollIntervalMs": 3_600_000 });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": task }));
    let created = p.take(alice);
    let res = &created["result"];
    assert_eq!(res["resultType"], "task", "{created}");
    let id = res["taskId"].as_str().unwrap().to_string();
    assert!(id.starts_with("mcpx-") && !id.contains("up-7"), "the upstream's id stays inside mcpx: {id}");
    assert_eq!(res["ttlMs"], HubOptions::default().tasks.max_ttl_ms);
    assert_eq!(res["pollIntervalMs"], HubOptions::default().tasks.max_poll_ms);
    // Bob cannot reach it; nothing goes upstream.
    let r = p.mreq(bob, json!(2), "tasks/get", json!({ "taskId": id }), &ext_caps());
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(p.up_quiet(0));
    // Alice's poll goes upstream with the upstream's id, and back with hers.
    p.msend(alice, json!(3), "tasks/get", json!({ "taskId": id }), &ext_caps());
    let get = p.take_up(0);
    assert_eq!(get["method"], "tasks/get");
    assert_eq!(get["params"]["taskId"], "up-7");
    let asks = json!({ "q": { "method": "elicitation/create", "params": { "message": "?", "requestedSchema": { "type": "object", "properties": {} } } } });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": get["id"], "result": { "resultType": "complete", "taskId": "up-7", "status": "input_required", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:01Z", "ttlMs": 1000, "pollIntervalMs": 100, "inputRequests": asks } }));
    let got = p.take(alice);
    assert_eq!(got["id"], 3);
    assert_eq!(got["result"]["taskId"], id.as_str());
    assert_eq!(got["result"]["inputRequests"], asks, "input requests inside the task pass through");
    // tasks/update keeps its inputResponses on the way up.
    p.msend(alice, json!(4), "tasks/update", json!({ "taskId": id, "inputResponses": { "q": { "action": "decline" } } }), &ext_caps());
    let upd = p.take_up(0);
    assert_eq!((upd["params"]["taskId"].clone(), upd["params"]["inputResponses"]["q"]["action"].clone()), (json!("up-7"), json!("decline")), "{upd}");
}

/// A 2025-11-25 upstream with tasks for `tools/call`: `job` runs only as a
/// task, `read` never.
fn legacy_tasks_upstream() -> Fake {
    let mut f = Fake::tools(&["read"]);
    f.caps["tasks"] = json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } });
    f.tools.push(json!({ "name": "job", "inputSchema": { "type": "object" }, "execution": { "taskSupport": "required" } }));
    f
}

/// The upstream's `CreateTaskResult` for its task `up`.
fn upstream_task(up: &str) -> Value {
    json!({ "task": { "taskId": up, "status": "working", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttl": 60_000, "pollInterval": 10 } })
}

/// The upstream's `notifications/tasks/status` of its task `up`.
fn upstream_status(up: &str, status: &str) -> Value {
    json!({ "jsonrpc": "2.0", "method": "notifications/tasks/status", "params": { "taskId": up, "status": status, "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:01Z", "ttl": 60_000 } })
}

/// The upstream's `elicitation/create` (request `id`) inside its task `up`.
fn upstream_asks(id: i64, up: &str) -> Value {
    let ask = json!({ "message": "sure?", "requestedSchema": { "type": "object", "properties": {} }, "_meta": { RELATED: { "taskId": up } } });
    json!({ "jsonrpc": "2.0", "id": id, "method": "elicitation/create", "params": ask })
}

/// Client `c`'s call of `job` (params `extra` merged in) reaches the
/// upstream task-augmented; the upstream creates its task `up`; the hub's
/// answer to the client and the `tasks/result` the hub holds upstream.
fn relayed_job(p: &mut Pair, c: ClientId, id: i64, up: &str, modern: bool) -> (Value, Value) {
    let params = json!({ "name": "fs__job", "task": { "ttl": HubOptions::default().tasks.max_ttl_ms * 10 } });
    if modern {
        p.msend(c, json!(id), "tools/call", json!({ "name": "fs__job" }), &ext_caps());
    } else {
        p.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }));
    }
    let call = p.take_up(0);
    assert_eq!(call["method"], "tools/call");
    assert_eq!(call["params"]["task"]["ttl"], if modern { HubOptions::default().tasks.default_ttl_ms } else { HubOptions::default().tasks.max_ttl_ms }, "the upstream runs the task, for the ttl mcpx grants: {call}");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": upstream_task(up) }));
    let created = p.take(c);
    let held = p.take_up(0);
    assert_eq!((held["method"].clone(), held["params"]["taskId"].clone()), (json!("tasks/result"), json!(up)), "the hub waits for the outcome: {held}");
    (created, held)
}

// covers: tasks-tool-required, tasks-return-createtaskresult, tasks-id-string-receiver-unique, tasks-input-request-related-task
// covers: tasks-status-notification-optional, tasks-result-blocks, tasks-result-response-related-task, tasks-bound-reject-foreign, tasks-input-required-move
// covers: tasks-requestor-may-ttl, tasks-requestor-input-required-call-result, tasks-related-task-all-messages, elicitation-task-related-id-shared
#[test]
fn a_legacy_upstreams_task_reaches_a_legacy_client_under_an_id_of_the_hubs() {
    let mut p = Pair::with(vec![("fs", legacy_tasks_upstream())], HubOptions::default());
    let alice = p.client(REV, json!({ "tasks": {}, "elicitation": {} }));
    p.hub.handle(Input::ClientPrincipal(alice, b"alice"), p.now);
    let bob = task_client(&mut p);
    p.hub.handle(Input::ClientPrincipal(bob, b"bob"), p.now);
    let tools = p.list_all(alice, "tools/list", "tools");
    let job = tools.iter().find(|t| t["name"] == "fs__job").expect("job listed");
    assert_eq!(job["execution"]["taskSupport"], "required", "{job}");

    let (created, held) = relayed_job(&mut p, alice, 5, "up-1", false);
    schema_check(REV, "CreateTaskResult", &created["result"]);
    let id = task_id(&created);
    assert!(id.starts_with("mcpx-") && !created.to_string().contains("up-1"), "the upstream's id stays inside mcpx: {created}");

    // Its status changes go to alice, with her id; not to bob.
    p.upstream_says(0, upstream_status("up-1", "input_required"));
    let n = p.take(alice);
    assert_eq!((n["method"].clone(), n["params"]["taskId"].clone(), n["params"]["status"].clone()), (json!("notifications/tasks/status"), json!(id), json!("input_required")), "{n}");
    assert!(p.client_quiet(bob));
    // Its request for input goes to alice, related to her id.
    p.upstream_says(0, upstream_asks(70, "up-1"));
    let e = p.take(alice);
    assert_eq!(e["method"], "elicitation/create", "{e}");
    assert_eq!(e["params"]["_meta"][RELATED]["taskId"], id.as_str());
    p.send(alice, json!({ "jsonrpc": "2.0", "id": e["id"], "result": { "action": "accept", "content": {} } }));
    let answer = p.take_up(0);
    assert_eq!((answer["id"].clone(), answer["result"]["action"].clone()), (json!(70), json!("accept")), "{answer}");

    // tasks/result waits for the upstream's outcome; bob gets nothing of it.
    p.send(alice, json!({ "jsonrpc": "2.0", "id": 6, "method": "tasks/result", "params": { "taskId": id } }));
    assert!(p.client_quiet(alice));
    let r = p.request(bob, json!(7), "tasks/get", json!({ "taskId": id }));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let mut done = ok_text("done");
    done["_meta"] = json!({ RELATED: { "taskId": "up-1" } });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": held["id"], "result": done }));
    assert_eq!(p.take(alice)["params"]["status"], "completed", "told first");
    let got = p.take(alice);
    assert_eq!(got["id"], 6);
    assert_eq!(got["result"]["content"][0]["text"], "done");
    assert_eq!(got["result"]["_meta"][RELATED]["taskId"], id.as_str());
    assert!(!got.to_string().contains("up-1"), "{got}");
    assert_eq!(p.request(alice, json!(8), "tasks/get", json!({ "taskId": id }))["result"]["status"], "completed");
}

// covers: cancellation-task-use-tasks-cancel, tasks-cancel-transition-before-response, tasks-cancelled-sticky
#[test]
fn cancelling_works_both_ways_for_a_legacy_upstreams_task() {
    let mut p = Pair::with(vec![("fs", legacy_tasks_upstream())], HubOptions::default());
    let c = task_client(&mut p);
    // The client cancels: the upstream gets tasks/cancel for its own id.
    let (created, _) = relayed_job(&mut p, c, 1, "up-1", false);
    let id = task_id(&created);
    let r = p.request(c, json!(2), "tasks/cancel", json!({ "taskId": id }));
    assert_eq!(r["result"]["status"], "cancelled", "{r}");
    assert_eq!(p.take(c)["params"]["status"], "cancelled", "and told so");
    let cancel = p.take_up(0);
    assert_eq!((cancel["method"].clone(), cancel["params"]["taskId"].clone()), (json!("tasks/cancel"), json!("up-1")), "{cancel}");
    // The client's notifications/cancelled for the call the task answered
    // cancels nothing: a task is cancelled with tasks/cancel only.
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } }));
    assert!(p.up_quiet(0));

    // The upstream cancels: the client sees it cancelled, tasks/result says so.
    let (created, _) = relayed_job(&mut p, c, 3, "up-2", false);
    let id = task_id(&created);
    p.send(c, json!({ "jsonrpc": "2.0", "id": 4, "method": "tasks/result", "params": { "taskId": id } }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tasks/status", "params": { "taskId": "up-2", "status": "cancelled", "statusMessage": "stopped by the operator", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:01Z", "ttl": 60_000 } }));
    let n = p.take(c);
    assert_eq!((n["method"].clone(), n["params"]["status"].clone()), (json!("notifications/tasks/status"), json!("cancelled")), "{n}");
    let waited = p.take(c);
    assert_eq!(waited["id"], 4);
    assert!(waited["error"]["message"].as_str().unwrap_or("").contains("cancelled"), "{waited}");
    let got = p.request(c, json!(5), "tasks/get", json!({ "taskId": id }));
    assert_eq!((got["result"]["status"].clone(), got["result"]["statusMessage"].clone()), (json!("cancelled"), json!("stopped by the operator")), "{got}");
}

/// A 2025-11-25 server's task mcpx follows (its held `tasks/result`)
/// survives a restart of mcpx: the new hub holds `tasks/result` open again
/// and its creator gets the outcome.
// covers: ext-tasks-client-persist-ids, tasks-bound-reject-foreign
#[test]
fn a_legacy_servers_task_is_followed_again_after_a_restart() {
    let mut p = Pair::with(vec![("fs", legacy_tasks_upstream())], HubOptions::default());
    p.hub.restore_tasks(None, p.now);
    let c = task_client(&mut p);
    p.hub.handle(Input::ClientPrincipal(c, b"alice"), p.now);
    let (created, _held) = relayed_job(&mut p, c, 1, "up-1", false);
    let id = task_id(&created);
    let state = p.saved.last().expect("saved before the answer").clone();

    let mut q = Pair::with(vec![("fs", legacy_tasks_upstream())], HubOptions::default());
    assert_eq!(q.hub.restore_tasks(Some(&state), q.now), 1);
    q.pump();
    let held = q.take_up(0);
    assert_eq!((held["method"].clone(), held["params"]["taskId"].clone()), (json!("tasks/result"), json!("up-1")), "followed again: {held}");
    let bob = task_client(&mut q);
    q.hub.handle(Input::ClientPrincipal(bob, b"bob"), q.now);
    assert_eq!(q.request(bob, json!(1), "tasks/get", json!({ "taskId": id }))["error"]["code"], -32602);
    let alice = task_client(&mut q);
    q.hub.handle(Input::ClientPrincipal(alice, b"alice"), q.now);
    assert_eq!(q.request(alice, json!(2), "tasks/get", json!({ "taskId": id }))["result"]["status"], "working");
    let mut done = ok_text("after the restart");
    done["_meta"] = json!({ RELATED: { "taskId": "up-1" } });
    q.upstream_says(0, json!({ "jsonrpc": "2.0", "id": held["id"], "result": done }));
    let r = q.request(alice, json!(3), "tasks/result", json!({ "taskId": id }));
    assert_eq!(r["result"]["content"][0]["text"], "after the restart", "{r}");
    assert_eq!(r["result"]["_meta"][RELATED]["taskId"], id.as_str(), "{r}");
}

// covers: cancellation-task-use-tasks-cancel
#[test]
fn a_task_augmented_call_cancelled_in_flight_cancels_its_task_with_tasks_cancel() {
    let mut p = Pair::with(vec![("fs", legacy_tasks_upstream())], HubOptions::default());
    let c = task_client(&mut p);
    let params = json!({ "name": "fs__job", "task": { "ttl": 1000 } });
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params }));
    let call = p.take_up(0);
    assert!(call["params"]["task"].is_object(), "{call}");
    // Cancelled before the server's CreateTaskResult: no notifications/cancelled
    // for a task-augmented request, and no answer to the client.
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } }));
    assert!(p.up_quiet(0), "a task-augmented request is never cancelled by notification");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": upstream_task("up-9") }));
    let cancel = p.take_up(0);
    assert_eq!((cancel["method"].clone(), cancel["params"]["taskId"].clone()), (json!("tasks/cancel"), json!("up-9")), "the task it made is cancelled: {cancel}");
    assert!(p.client_quiet(c));
    let listed = p.request(c, json!(2), "tasks/list", json!({}));
    assert_eq!(listed["result"]["tasks"], json!([]), "no task reached the client: {listed}");
    // A plain call is still cancelled the usual way.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "fs__read" } }));
    let plain = p.take_up(0);
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 3 } }));
    let n = p.take_up(0);
    assert_eq!((n["method"].clone(), n["params"]["requestId"].clone()), (json!("notifications/cancelled"), plain["id"].clone()), "{n}");
}

// covers: ext-tasks-get-input-requests, ext-tasks-update, ext-tasks-get-carries-result, ext-tasks-never-unsolicited, ext-tasks-server-decides, tasks-leave-input-required
#[test]
fn a_2026_client_gets_a_legacy_upstreams_task_and_answers_its_input_requests() {
    let mut p = Pair::with(vec![("fs", legacy_tasks_upstream())], HubOptions::default());
    let c = p.connect();
    // Without the extension a task-only tool is -32021, naming the extension.
    let r = p.mreq(c, json!(1), "tools/call", json!({ "name": "fs__job" }), &json!({}));
    assert_eq!(r["error"]["code"], -32021, "{r}");
    assert!(r["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(), "{r}");
    assert!(p.up_quiet(0));
    // A tool its server never runs as a task stays synchronous.
    p.msend(c, json!(2), "tools/call", json!({ "name": "fs__read" }), &ext_caps());
    let plain = p.take_up(0);
    assert!(plain["params"].get("task").is_none(), "{plain}");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": plain["id"], "result": ok_text("now") }));
    assert_eq!(p.take(c)["result"]["resultType"], "complete");

    let (created, held) = relayed_job(&mut p, c, 3, "up-1", true);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().expect("a task id").to_string();
    // The server says input_required before its request arrives: until it
    // does, the task has nothing to answer and stays working.
    p.upstream_says(0, upstream_status("up-1", "input_required"));
    let early = p.mreq(c, json!(30), "tasks/get", json!({ "taskId": id }), &ext_caps());
    assert_eq!(early["result"]["status"], "working", "no input request yet: {early}");
    p.upstream_says(0, upstream_asks(70, "up-1"));
    assert!(p.client_quiet(c), "a 2026 client is asked inside the task");
    let got = p.mreq(c, json!(4), "tasks/get", json!({ "taskId": id }), &ext_caps());
    assert_eq!(got["result"]["status"], "input_required", "{got}");
    let asks = got["result"]["inputRequests"].as_object().expect("inputRequests").clone();
    assert_eq!(asks.len(), 1, "{got}");
    let (key, req) = asks.iter().next().unwrap();
    assert_eq!(req["method"], "elicitation/create");
    assert!(!got.to_string().contains("up-1"), "{got}");
    let ack = p.mreq(c, json!(5), "tasks/update", json!({ "taskId": id, "inputResponses": { key.as_str(): { "action": "accept", "content": {} }, "unknown": {} } }), &ext_caps());
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let answer = p.take_up(0);
    assert_eq!((answer["id"].clone(), answer["result"]["action"].clone()), (json!(70), json!("accept")), "{answer}");
    assert_eq!(p.mreq(c, json!(6), "tasks/get", json!({ "taskId": id }), &ext_caps())["result"]["status"], "working");
    // A late input_required of the server's changes nothing: nothing is asked.
    p.upstream_says(0, upstream_status("up-1", "input_required"));
    assert_eq!(p.mreq(c, json!(61), "tasks/get", json!({ "taskId": id }), &ext_caps())["result"]["status"], "working");
    // Input still asked when the task ends is refused to the upstream.
    p.upstream_says(0, upstream_asks(71, "up-1"));
    assert_eq!(p.mreq(c, json!(60), "tasks/get", json!({ "taskId": id }), &ext_caps())["result"]["status"], "input_required");
    // A tool error: failed for the 2025 server, completed with the result for the 2026 client.
    let mut bad = ok_text("no such file");
    bad["isError"] = json!(true);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": held["id"], "result": bad }));
    let refused = p.take_up(0);
    assert_eq!((refused["id"].clone(), refused["error"]["code"].clone()), (json!(71), json!(-32603)), "{refused}");
    let done = p.mreq(c, json!(7), "tasks/get", json!({ "taskId": id }), &ext_caps());
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["result"]["isError"], true, "{done}");
    assert!(done["result"]["result"].get("_meta").is_none_or(|m| m.get(RELATED).is_none()), "{done}");
}

// covers: tasks-result-blocks, tasks-poll-respect-interval, ext-tasks-client-poll, ext-tasks-client-polymorphic, tasks-poll-until-terminal
#[test]
fn a_legacy_clients_task_on_a_2026_task_upstream_is_polled_to_its_result() {
    let mut p = Pair::with(vec![("m", tasks_upstream())], HubOptions::default());
    let c = task_client(&mut p);
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "m__job", "task": { "ttl": 60_000 } } }));
    let created = p.take(c);
    let id = task_id(&created);
    let call = p.take_up(0);
    assert!(call["params"].get("task").is_none(), "{call}");
    assert_eq!(call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"], relayed_caps(ext_caps())["extensions"], "mcpx takes the upstream's task: {call}");
    p.send(c, json!({ "jsonrpc": "2.0", "id": 2, "method": "tasks/result", "params": { "taskId": id } }));
    let working = |poll: u64| json!({ "resultType": "task", "taskId": "up-9", "status": "working", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 60_000, "pollIntervalMs": poll });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": working(200) }));
    assert!(p.up_quiet(0) && p.client_quiet(c), "nothing until the poll interval passed");
    p.advance(199);
    assert!(p.up_quiet(0));
    p.advance(1);
    let get = p.take_up(0);
    assert_eq!((get["method"].clone(), get["params"]["taskId"].clone()), (json!("tasks/get"), json!("up-9")), "{get}");
    let mut still = working(50);
    still["resultType"] = json!("complete");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": get["id"], "result": still }));
    p.advance(50);
    let get = p.take_up(0);
    let mut done = working(50);
    done["resultType"] = json!("complete");
    done["status"] = json!("completed");
    done["result"] = ok_text("polled");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": get["id"], "result": done }));
    assert_eq!(p.take(c)["params"]["status"], "completed");
    let got = p.take(c);
    assert_eq!(got["id"], 2, "the blocking tasks/result is answered: {got}");
    assert_eq!(got["result"]["content"][0]["text"], "polled");
    assert_eq!(got["result"]["_meta"][RELATED]["taskId"], id.as_str());
    assert!(!got.to_string().contains("up-9"), "{got}");
    p.advance(1000);
    assert!(p.up_quiet(0), "no more polls");
}

/// A connection of principal `who`.
fn principal(p: &mut Pair, who: &str) -> ClientId {
    let c = p.connect();
    p.hub.handle(Input::ClientPrincipal(c, who.as_bytes()), p.now);
    c
}

/// Client `c`'s 2026 call of `plain__run` (upstream 1, no tasks), run by
/// the hub as a task: its id and the upstream's call.
fn hub_task(p: &mut Pair, c: ClientId, id: i64) -> (String, Value) {
    let created = p.mreq(c, json!(id), "tools/call", json!({ "name": "plain__run" }), &ext_caps());
    let task = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {created}")).to_string();
    (task, p.take_up(1))
}

/// Opens listen stream `sub` on `c` for `ids`; the task ids agreed.
fn listen_tasks(p: &mut Pair, c: ClientId, sub: &str, ids: &[&str]) -> Value {
    p.msend(c, json!(sub), "subscriptions/listen", json!({ "notifications": { "taskIds": ids } }), &ext_caps());
    let ack = p.take(c);
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    ack["params"]["notifications"]["taskIds"].clone()
}

/// The next message to `c`: `notifications/tasks` on stream `sub` about `task`.
fn task_note(p: &mut Pair, c: ClientId, sub: &str, task: &str) -> Value {
    let n = p.take(c);
    assert_eq!(n["method"], "notifications/tasks", "{n}");
    assert_eq!((n["params"]["taskId"].as_str(), n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].as_str()), (Some(task), Some(sub)), "{n}");
    n["params"].clone()
}

// covers: ext-tasks-notifications-via-listen
#[test]
fn task_status_reaches_only_its_principals_listen_streams_that_asked_for_it() {
    let mut p = Pair::with(vec![("fs", legacy_tasks_upstream()), ("plain", Fake::tools(&["run"]))], HubOptions::default());
    let a = principal(&mut p, "token:alice");
    let (mine, up) = hub_task(&mut p, a, 1);
    let (created, _) = relayed_job(&mut p, a, 2, "up-1", true);
    let relayed = created["result"]["taskId"].as_str().expect("a task id").to_string();
    let b = principal(&mut p, "token:bob");
    let (theirs, up_b) = hub_task(&mut p, b, 1);
    // Another connection of alice listens. taskIds need the extension on the request.
    let a2 = principal(&mut p, "token:alice");
    let r = p.mreq(a2, json!("l0"), "subscriptions/listen", json!({ "notifications": { "taskIds": [mine] } }), &json!({}));
    assert_eq!(r["error"]["code"], -32021, "{r}");
    assert!(r["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(), "{r}");
    // Each stream is agreed only its principal's known tasks.
    assert_eq!(listen_tasks(&mut p, a2, "la", &[&mine, &relayed, &theirs, "nope"]), json!([mine, relayed]));
    assert_eq!(listen_tasks(&mut p, b, "lb", &[&mine, &theirs]), json!([theirs]));
    // The hub-run task ends: the whole task, as tasks/get gives it, on alice's stream only.
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "id": up["id"], "result": ok_text("done") }));
    let n = task_note(&mut p, a2, "la", &mine);
    assert_eq!((n["status"].clone(), n["result"]["content"][0]["text"].clone()), (json!("completed"), json!("done")), "{n}");
    assert!(p.client_quiet(a) && p.client_quiet(b), "only the stream that asked");
    // The relayed task's 2025 server asks for input inside it: the task,
    // with what to answer, on alice's stream.
    p.upstream_says(0, upstream_asks(70, "up-1"));
    let n = task_note(&mut p, a2, "la", &relayed);
    assert_eq!(n["status"], "input_required", "{n}");
    assert_eq!(n["inputRequests"].as_object().map(|m| m.len()), Some(1), "{n}");
    assert!(!p.cl[&a2].iter().any(|m| m.0.to_string().contains("up-1")), "the upstream's id stays hidden");
    assert!(p.client_quiet(a) && p.client_quiet(b));
    // Bob's task reaches bob's stream, never alice's.
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "id": up_b["id"], "result": ok_text("bob's") }));
    assert_eq!(task_note(&mut p, b, "lb", &theirs)["result"]["content"][0]["text"], "bob's");
    assert!(p.client_quiet(a2) && p.client_quiet(a));
}
