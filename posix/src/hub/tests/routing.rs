//! Which client a server's request for input goes to (issue 11 item 1):
//! only one the wire names, never a guess (`relay::Relays::cause_of`).

use serde_json::{json, Value};

use super::rows_relay::calling;
use super::tasks::{ext_caps, tasks_upstream};
use super::*;

/// A hub whose upstream `fs` has calls in flight from legacy clients `a` and
/// `b` (`b`'s sent first) and a modern client `m` (sent last): returns them
/// with the calls as the upstream got them.
fn three_callers() -> (Pair, [ClientId; 3], [Value; 3]) {
    let caps = json!({ "sampling": {}, "elicitation": {}, "roots": {} });
    let (mut p, a) = one("2025-11-25", caps.clone());
    let b = p.client("2025-11-25", caps.clone());
    let m = p.connect();
    p.send(b, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
    let call_b = p.take_up(0);
    p.advance(1);
    p.send(a, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
    let call_a = p.take_up(0);
    p.advance(1);
    p.modern_call(m, json!(1), json!({ "name": "fs__read" }), &caps);
    let call_m = p.take_up(0);
    (p, [a, b, m], [call_a, call_b, call_m])
}

/// Upstream `fs`'s request `method`, its `_meta` set to `meta` if given.
fn ask(method: &str, meta: Option<Value>) -> Value {
    let mut params = match method {
        "elicitation/create" => json!({ "mode": "form", "message": "Delete everything?", "requestedSchema": { "type": "object", "properties": {} } }),
        "roots/list" => json!({}),
        _ => json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "secret prompt" } }], "maxTokens": 5 }),
    };
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({ "jsonrpc": "2.0", "id": "s-1", "method": method, "params": params })
}

// Regression (issue 11 item 1): the request used to go to the client whose
// call was sent last, so one user saw another user's prompt.
#[test]
fn a_server_request_naming_no_client_reaches_none_of_several_callers() {
    for method in ["sampling/createMessage", "elicitation/create", "roots/list"] {
        let (mut p, clients, _) = three_callers();
        // A progress token that names no call in flight names nobody either.
        for meta in [None, Some(json!({ "progressToken": 999 })), Some(json!({ "io.modelcontextprotocol/related-task": { "taskId": "t" } }))] {
            p.upstream_says(0, ask(method, meta.clone()));
            let e = p.take_up(0);
            assert_eq!(e["id"], "s-1", "{method} {meta:?}");
            assert_eq!(err_code(&e), -32603);
            let why = e["error"]["message"].as_str().unwrap();
            assert!(why.contains("cannot tell which of its clients") && why.contains("3 have calls in flight"), "{why}");
            for c in clients {
                assert!(p.client_quiet(c), "{method} {meta:?}: client {c} was asked");
            }
            assert!(p.up_quiet(0));
        }
        assert!(p.logs.iter().any(|(l, s)| *l == Level::Warn && s.contains("'fs'") && s.contains(method)), "{method}: {:?}", p.logs);
    }
}

#[test]
fn a_progress_token_routes_a_server_request_to_the_call_it_names() {
    for method in ["sampling/createMessage", "elicitation/create"] {
        let (mut p, [a, b, m], calls) = three_callers();
        let token = |i: usize| Some(json!({ "progressToken": calls[i]["params"]["_meta"]["progressToken"] }));
        // `b`'s call is not the latest, yet its token names it: only `b` is asked.
        p.upstream_says(0, ask(method, token(1)));
        let q = p.take(b);
        assert_eq!(q["method"], method);
        assert!(p.client_quiet(a) && p.client_quiet(m) && p.client_quiet(b));
        p.send(b, json!({ "jsonrpc": "2.0", "id": q["id"], "result": answer_of(method) }));
        let r = p.take_up(0);
        assert_eq!((r["id"].clone(), r["result"].clone()), (json!("s-1"), answer_of(method)));
        // The modern client's call: it gets an InputRequiredResult, nobody else a thing.
        p.upstream_says(0, ask(method, token(2)));
        let irr = p.take(m);
        assert_eq!(irr["result"]["resultType"], "input_required", "{irr}");
        assert!(p.client_quiet(a) && p.client_quiet(b) && p.up_quiet(0));
    }
}

// Regression (issue 11 item 1): over HTTP the server's request comes on the
// response stream of the call it serves; the remote transport says which, and
// that names the caller although several have calls in flight and the request
// carries no token (it used to be refused as ambiguous).
// covers: streamable-http-post-sse-may-carry-requests
#[test]
fn a_server_request_on_a_calls_own_stream_reaches_that_caller_only() {
    for method in ["sampling/createMessage", "elicitation/create", "roots/list"] {
        let (mut p, [a, b, m], calls) = three_callers();
        // `b`'s call is neither the latest nor named by a token: its stream names it.
        p.upstream_says_on(0, ask(method, None), &calls[1]["id"]);
        let q = p.take(b);
        assert_eq!(q["method"], method);
        assert!(p.client_quiet(a) && p.client_quiet(m) && p.client_quiet(b) && p.up_quiet(0), "{method}: only b is asked");
        let answer = if method == "roots/list" { json!({ "roots": [] }) } else { answer_of(method) };
        p.send(b, json!({ "jsonrpc": "2.0", "id": q["id"], "result": answer }));
        let r = p.take_up(0);
        assert_eq!((r["id"].clone(), r["result"].clone()), (json!("s-1"), answer));
        // The stream wins over a token naming another call.
        let token = json!({ "progressToken": calls[1]["params"]["_meta"]["progressToken"] });
        p.upstream_says_on(0, ask(method, Some(token)), &calls[0]["id"]);
        assert_eq!(p.take(a)["method"], method);
        assert!(p.client_quiet(b) && p.client_quiet(m));
        // The modern caller's stream: an InputRequiredResult for it, nothing for the others.
        p.upstream_says_on(0, with_id(ask(method, None), "s-2"), &calls[2]["id"]);
        let irr = p.take(m);
        assert_eq!(irr["result"]["resultType"], "input_required", "{irr}");
        assert!(p.client_quiet(a) && p.client_quiet(b) && p.up_quiet(0));
    }
}

// A stream naming no client call (the hub's own request, or one answered
// already) names nobody: with several callers the request is refused.
#[test]
fn a_server_request_on_the_stream_of_no_call_reaches_none_of_several_callers() {
    let (mut p, clients, calls) = three_callers();
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": calls[0]["id"], "result": { "content": [] } }));
    p.take(clients[0]);
    for stream in [json!(987_654), calls[0]["id"].clone(), json!("not-a-hub-id")] {
        p.upstream_says_on(0, ask("elicitation/create", None), &stream);
        let e = p.take_up(0);
        assert_eq!(err_code(&e), -32603, "{stream}");
        assert!(e["error"]["message"].as_str().unwrap().contains("2 have calls in flight"), "{e}");
        for c in clients {
            assert!(p.client_quiet(c), "{stream}: client {c} was asked");
        }
    }
}

#[test]
fn once_only_one_client_has_calls_in_flight_it_gets_the_request() {
    let caps = json!({ "sampling": {} });
    let (mut p, a) = calling("2025-11-25", caps.clone());
    let b = p.client("2025-11-25", caps);
    p.send(b, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
    let call_b = p.take_up(0);
    p.upstream_says(0, ask("sampling/createMessage", None));
    assert_eq!(err_code(&p.take_up(0)), -32603, "two callers: refused");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call_b["id"], "result": { "content": [] } }));
    assert_eq!(p.take(b)["id"], 1);
    p.upstream_says(0, ask("sampling/createMessage", None));
    assert_eq!(p.take(a)["method"], "sampling/createMessage");
    assert!(p.client_quiet(b) && p.up_quiet(0));
}

fn answer_of(method: &str) -> Value {
    match method {
        "elicitation/create" => json!({ "action": "decline" }),
        _ => json!({ "role": "assistant", "content": { "type": "text", "text": "ok" }, "model": "m", "stopReason": "endTurn" }),
    }
}

// ---------------------------------------------------------------- held calls are their own conversation

/// A modern connection of `principal` whose call to `fs` is held for its
/// retry (the round went out): returns the connection, gone like a modern
/// HTTP POST after its answer, and the `InputRequiredResult`.
fn left_held(p: &mut Pair, principal: &[u8], up_id: &str) -> (ClientId, Value) {
    let caps = json!({ "sampling": {}, "elicitation": {}, "roots": {} });
    let m = p.connect();
    p.hub.handle(Input::ClientPrincipal(m, principal), p.now);
    p.modern_call(m, json!(1), json!({ "name": "fs__read", "arguments": { "who": up_id } }), &caps);
    p.take_up(0);
    p.upstream_says(0, with_id(ask("elicitation/create", None), up_id));
    let irr = p.take(m);
    assert_eq!(irr["result"]["resultType"], "input_required", "{irr}");
    p.hub.handle(Input::ClientDisconnected(m), p.now);
    p.pump();
    (m, irr)
}

/// A hub with `opts` and one tools upstream `fs` (timeout 10 s), no client.
fn one_server(opts: HubOptions) -> Pair {
    let mut s = specs(&["fs"]);
    s[0].timeout_ms = 10_000;
    let mut p = Pair::new(s, opts);
    p.start(0, Fake::tools(&["read"]));
    p
}

/// `v` with request id `id`.
fn with_id(mut v: Value, id: &str) -> Value {
    v["id"] = json!(id);
    v
}

// Regression: the first fix counted a call left held by an earlier modern
// request as a caller of its own, so every later request for input was
// refused as ambiguous (the conformance suite's 2026-07-28 leg through a
// legacy upstream failed).
// covers: streamable-http-post-sse-may-carry-requests
#[test]
fn a_call_left_held_does_not_compete_with_the_live_caller() {
    for method in ["sampling/createMessage", "elicitation/create", "roots/list"] {
        let (mut p, legacy) = one("2025-11-25", json!({ "sampling": {}, "elicitation": {}, "roots": {} }));
        let (gone, _) = left_held(&mut p, b"alice", "held-1");
        p.send(legacy, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
        let legacy_call = p.take_up(0);
        // The legacy client's call is the only live one: it is asked.
        p.upstream_says(0, ask(method, None));
        let q = p.take(legacy);
        assert_eq!(q["method"], method);
        assert!(p.client_quiet(gone) && p.up_quiet(0), "{method}");
        // A modern caller of another principal while the held call waits: its call parks.
        p.send(legacy, json!({ "jsonrpc": "2.0", "id": q["id"], "result": answer_of(method) }));
        p.take_up(0);
        let bob = p.connect();
        p.hub.handle(Input::ClientPrincipal(bob, b"bob"), p.now);
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": legacy_call["id"], "result": { "content": [] } }));
        assert_eq!(p.take(legacy)["id"], 1, "{method}");
        p.modern_call(bob, json!(7), json!({ "name": "fs__read" }), &json!({ "sampling": {}, "elicitation": {}, "roots": {} }));
        p.take_up(0);
        p.upstream_says(0, ask(method, None));
        let irr = p.take(bob);
        assert_eq!(irr["result"]["resultType"], "input_required", "{method}: {irr}");
        assert!(p.client_quiet(legacy) && p.up_quiet(0), "{method}");
    }
}

#[test]
fn held_calls_of_one_principal_take_a_late_request_in_their_next_round_those_of_two_do_not() {
    let (mut p, _) = one("2025-11-25", json!({}));
    let (_, irr) = left_held(&mut p, b"alice", "held-1");
    // Alone: the next round of the (latest) held call of alice.
    p.upstream_says(0, with_id(ask("sampling/createMessage", None), "late-1"));
    assert!(p.up_quiet(0), "not refused");
    let state = irr["result"]["requestState"].as_str().unwrap().to_string();
    let key = irr["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let retry = p.connect();
    p.hub.handle(Input::ClientPrincipal(retry, b"alice"), p.now);
    let caps = json!({ "sampling": {}, "elicitation": {}, "roots": {} });
    let params = json!({ "name": "fs__read", "arguments": { "who": "held-1" }, "inputResponses": { key: answer_of("elicitation/create") }, "requestState": state });
    p.modern_call(retry, json!(1), params, &caps);
    assert_eq!(p.take_up(0)["id"], "held-1");
    let irr2 = p.take(retry);
    let asks = irr2["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(asks.values().map(|a| a["method"].clone()).collect::<Vec<_>>(), [json!("sampling/createMessage")], "{irr2}");
    p.hub.handle(Input::ClientDisconnected(retry), p.now);
    p.pump();
    // Now bob's call is held too: two principals, nothing live, nothing names one.
    left_held(&mut p, b"bob", "held-2");
    p.upstream_says(0, with_id(ask("elicitation/create", None), "late-2"));
    let e = p.take_up(0);
    assert_eq!((e["id"].clone(), err_code(&e)), (json!("late-2"), -32603));
    assert!(e["error"]["message"].as_str().unwrap().contains("cannot tell which of its clients"), "{e}");
}

#[test]
fn a_held_call_within_its_coalescing_window_is_a_live_caller() {
    let mut p = one_server(HubOptions { input_coalesce_ms: 50, ..HubOptions::default() });
    let caps = json!({ "sampling": {}, "elicitation": {}, "roots": {} });
    let legacy = p.client("2025-11-25", caps.clone());
    let m = p.connect();
    p.modern_call(m, json!(1), json!({ "name": "fs__read" }), &caps);
    p.take_up(0);
    p.upstream_says(0, with_id(ask("elicitation/create", None), "in-1"));
    assert!(p.client_quiet(m), "within the window");
    p.send(legacy, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
    p.take_up(0);
    // The held call and the legacy call are both live: nobody is asked.
    p.upstream_says(0, with_id(ask("sampling/createMessage", None), "in-2"));
    let e = p.take_up(0);
    assert_eq!((e["id"].clone(), err_code(&e)), (json!("in-2"), -32603));
    assert!(p.client_quiet(legacy));
    p.advance(60);
    let irr = p.take(m);
    let asks = irr["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(asks.len(), 1, "only its own request: {irr}");
}

// ---------------------------------------------------------------- held calls: a share per principal

// Regression (issue 11 item 3): the cap of held calls was hub-wide, so one
// principal leaving calls held locked every other out, and the refusal went
// to the upstream only (whose tool then blamed the client).
#[test]
fn one_principal_cannot_hold_more_than_its_share_and_is_told_the_limit() {
    let mut p = one_server(HubOptions { max_relays: 16, ..HubOptions::default() });
    // 16 / 8: alice may hold 2.
    left_held(&mut p, b"alice", "a-1");
    left_held(&mut p, b"alice", "a-2");
    let caps = json!({ "elicitation": {} });
    let m = p.connect();
    p.hub.handle(Input::ClientPrincipal(m, b"alice"), p.now);
    p.modern_call(m, json!(3), json!({ "name": "fs__read", "arguments": { "who": "a-3" } }), &caps);
    let call = p.take_up(0);
    p.upstream_says(0, with_id(ask("elicitation/create", None), "a-3"));
    let r = p.take(m);
    assert_eq!((r["id"].clone(), err_code(&r)), (json!(3), -32603), "{r}");
    let why = r["error"]["message"].as_str().unwrap();
    assert!(why.contains("limit of held calls") && why.contains("share of 2 (of 16"), "{why}");
    assert!(!why.contains("answered"), "the client did not answer anything: {why}");
    let refused = p.take_up(0);
    assert_eq!((refused["id"].clone(), refused["error"]["message"].as_str().unwrap()), (json!("a-3"), why));
    let cancel = p.take_up(0);
    assert_eq!((cancel["method"].clone(), cancel["params"]["requestId"].clone()), (json!("notifications/cancelled"), call["id"].clone()));
    assert!(p.client_quiet(m) && p.up_quiet(0));
    // Bob still gets his call held.
    left_held(&mut p, b"bob", "b-1");
    // Once one of alice's expires, she may hold again.
    p.advance(300_000);
    while !p.up_quiet(0) {
        p.take_up(0);
    }
    left_held(&mut p, b"alice", "a-4");
}

// ---------------------------------------------------------------- related-task _meta

/// A hub whose modern upstream `m` runs task `up-7` for modern client
/// `alice`, while legacy client `bob` has a call in flight there (the one
/// live caller): returns them.
fn a_task_and_another_caller() -> (Pair, ClientId, ClientId) {
    let mut p = Pair::with(vec![("m", tasks_upstream())], HubOptions::default());
    let alice = p.connect();
    p.hub.handle(Input::ClientPrincipal(alice, b"alice"), p.now);
    p.msend(alice, json!(1), "tools/call", json!({ "name": "m__job" }), &ext_caps());
    let up = p.take_up(0);
    let task = json!({ "resultType": "task", "taskId": "up-7", "status": "working", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 60_000, "pollIntervalMs": 100 });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": task }));
    assert_eq!(p.take(alice)["result"]["resultType"], "task");
    let bob = p.client("2025-11-25", json!({ "sampling": {}, "elicitation": {}, "roots": {} }));
    p.send(bob, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "m__job" } }));
    p.take_up(0);
    (p, alice, bob)
}

// Regression (issue 11 item 1, related-task): a request naming the task of
// one client went to the one other caller with a call in flight, who had
// nothing to do with it. It belongs to the task's creator; this one is a
// 2026-07-28 client (input only through tasks/get), so it is refused, and so
// once the creator is gone; the other caller is never asked.
// covers: tasks-input-request-related-task
#[test]
fn a_request_naming_a_task_goes_to_its_creator_and_never_to_another_caller() {
    let (mut p, alice, bob) = a_task_and_another_caller();
    let related = Some(json!({ "io.modelcontextprotocol/related-task": { "taskId": "up-7" } }));
    p.upstream_says(0, ask("elicitation/create", related.clone()));
    let e = p.take_up(0);
    assert_eq!((e["id"].clone(), err_code(&e)), (json!("s-1"), -32603), "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("tasks/get"), "{e}");
    assert!(p.client_quiet(bob) && p.client_quiet(alice), "nobody else is asked the task's question");
    p.hub.handle(Input::ClientDisconnected(alice), p.now);
    p.pump();
    p.upstream_says(0, ask("elicitation/create", related));
    let e = p.take_up(0);
    assert!(e["error"]["message"].as_str().unwrap().contains("is gone"), "{e}");
    assert!(p.client_quiet(bob));
    // Without the task named, the one live caller is asked as before.
    p.upstream_says(0, ask("elicitation/create", None));
    assert_eq!(p.take(bob)["method"], "elicitation/create");
}
