//! Pair tests of lazy start and idle stop (`hub::starts::lazy`).

use serde_json::json;

use super::*;

fn lazy(name: &str, idle_ms: u64) -> UpstreamSpec {
    UpstreamSpec { lazy: true, idle_ms, ..UpstreamSpec::new(name) }
}

fn call(p: &mut Pair, c: ClientId, id: i64, tool: &str) {
    p.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool } }));
}

/// Answers the next call upstream `u` got.
fn answer_call(p: &mut Pair, u: UpstreamId) {
    let up = p.take_up(u);
    assert_eq!(up["method"], "tools/call", "{up}");
    p.upstream_says(u, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
}

fn state(p: &Pair, name: &str) -> String {
    let st = p.hub.status();
    let u = st["upstreams"].as_array().unwrap().iter().find(|u| u["name"] == name).cloned().unwrap();
    u["state"].as_str().unwrap().to_string()
}

#[test]
fn a_sleeping_server_is_listed_started_by_a_call_and_answers_it() {
    let mut p = Pair::new(vec![UpstreamSpec::new("a"), lazy("z", 0)], HubOptions::default());
    p.start(0, Fake::tools(&["x"]));
    p.hub.handle(Input::SeedLists { up: 1, lists: &json!({ "capabilities": { "tools": { "listChanged": true } }, "tools": [tool("y")] }), hold: false }, p.now);
    p.pump();
    // Known at once, without its process: the handshake does not wait for it.
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["a__x", "z__y"]);
    assert_eq!(state(&p, "z"), "asleep");
    assert!(p.power.is_empty());
    // A call wakes it; a second one while it starts does not ask again.
    call(&mut p, c, 7, "z__y");
    call(&mut p, c, 8, "z__y");
    assert_eq!(p.power, [(1, Power::Start)]);
    assert!(p.client_quiet(c));
    // Up and listed: both calls go on, in order, and are answered.
    p.start(1, Fake::tools(&["y"]));
    answer_call(&mut p, 1);
    answer_call(&mut p, 1);
    assert_eq!(p.take(c)["id"], 7);
    assert_eq!(p.take(c)["id"], 8);
    assert_eq!(state(&p, "z"), "ready");
    // The same tools as the cache said: no list_changed.
    assert!(p.client_quiet(c));
}

#[test]
fn a_call_to_a_server_that_does_not_start_in_time_fails_naming_it() {
    let mut spec = lazy("z", 0);
    spec.timeout_ms = 500;
    let mut p = Pair::new(vec![spec], HubOptions::default());
    p.hub.handle(Input::SeedLists { up: 0, lists: &json!({ "capabilities": { "tools": {} }, "tools": [tool("y")] }), hold: false }, p.now);
    let c = p.client("2025-06-18", json!({}));
    call(&mut p, c, 1, "z__y");
    assert_eq!(p.power, [(0, Power::Start)]);
    p.advance(499);
    assert!(p.client_quiet(c));
    p.advance(2);
    let e = p.take(c);
    assert_eq!(e["id"], 1);
    assert!(e["error"]["message"].as_str().unwrap().contains("'z' did not start within 500 ms"), "{e}");
    // A start that fails outright fails its calls at once.
    call(&mut p, c, 2, "z__y");
    p.hub.handle(Input::UpstreamExited { up: 0, reason: "exited with status 127", stderr_tail: "command not found", next: Next::Now }, p.now);
    p.pump();
    let e = p.take(c);
    assert_eq!(e["id"], 2);
    assert!(e["error"]["message"].as_str().unwrap().contains("could not be started"), "{e}");
}

#[test]
fn an_idle_server_sleeps_keeping_its_tools_but_not_while_a_call_is_open() {
    let mut p = Pair::new(vec![UpstreamSpec { idle_ms: 1000, ..UpstreamSpec::new("a") }, UpstreamSpec::new("b")], HubOptions::default());
    p.start(0, Fake::tools(&["x"]));
    p.start(1, Fake::tools(&["y"]));
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["a__x", "b__y"]);
    // A call open longer than the idle time keeps it up.
    call(&mut p, c, 1, "a__x");
    p.advance(1500);
    assert!(p.power.is_empty());
    answer_call(&mut p, 0);
    assert_eq!(p.take(c)["id"], 1);
    p.advance(999);
    assert!(p.power.is_empty());
    p.advance(2);
    assert_eq!(p.power, [(0, Power::Stop)]);
    assert_eq!(state(&p, "a"), "asleep");
    // Its process goes; its tools stay, and nobody is told of a change.
    p.hub.handle(Input::UpstreamExited { up: 0, reason: "stopped", stderr_tail: "", next: Next::Now }, p.now);
    p.pump();
    assert_eq!(p.names(c), ["a__x", "b__y"]);
    assert!(p.client_quiet(c));
    assert_eq!(state(&p, "a"), "asleep");
    // b (no idle time) never sleeps; the next call to a wakes it.
    p.advance(10_000);
    assert_eq!(p.power, [(0, Power::Stop)]);
    call(&mut p, c, 2, "a__x");
    assert_eq!(p.power, [(0, Power::Stop), (0, Power::Start)]);
    p.start(0, Fake::tools(&["x"]));
    answer_call(&mut p, 0);
    assert_eq!(p.take(c)["id"], 2);
    // Two starts, no restart: a wake is not one.
    let a = &p.hub.status()["upstreams"][0];
    assert_eq!((&a["starts"], &a["restarts"]), (&json!(2), &json!(0)), "{a}");
}

#[test]
fn lists_are_reported_once_per_start_and_again_only_when_a_re_read_changed_them() {
    let mut p = Pair::new(vec![UpstreamSpec::new("a"), lazy("z", 0)], HubOptions::default());
    p.hub.handle(Input::SeedLists { up: 1, lists: &json!({ "capabilities": { "tools": { "listChanged": true } }, "tools": [tool("y")] }), hold: false }, p.now);
    p.pump();
    assert!(p.lists_read.is_empty(), "seeded lists were not read from the server");
    p.start(0, Fake::tools(&["x"]));
    assert_eq!(p.lists_read, [0]);
    // Read again, unchanged: nothing to keep.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    assert_eq!(p.lists_read, [0]);
    // Read again, changed: reported.
    p.fakes[0].as_mut().unwrap().tools.push(tool("w"));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    assert_eq!(p.lists_read, [0, 0]);
    // A new start reports its lists even when they are the same.
    p.hub.handle(Input::UpstreamExited { up: 0, reason: "exit status 1", stderr_tail: "", next: Next::Now }, p.now);
    p.pump();
    assert_eq!(p.lists_read, [0, 0]);
    p.start(0, Fake::tools(&["x", "w"]));
    assert_eq!(p.lists_read, [0, 0, 0]);
    // The lazy server, started by a call, reports what it lists.
    let c = p.client("2025-11-25", json!({}));
    call(&mut p, c, 1, "z__y");
    p.start(1, Fake::tools(&["y"]));
    assert_eq!(p.lists_read, [0, 0, 0, 1]);
    assert_eq!(p.hub.upstream_lists(1).unwrap()["tools"][0]["name"], "y");
}

#[test]
fn a_server_listed_before_its_first_start_has_its_calls_wait_for_it() {
    let mut p = Pair::new(vec![UpstreamSpec::new("a")], HubOptions::default());
    // Not lazy: its lists are given (another replica's), then it is started.
    p.hub.handle(Input::SeedLists { up: 0, lists: &json!({ "capabilities": { "tools": {} }, "tools": [tool("y")] }), hold: false }, p.now);
    p.pump();
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["a__y"], "listed before it is up");
    call(&mut p, c, 1, "a__y");
    assert!(p.client_quiet(c), "the call waits for the start");
    assert!(p.power.is_empty(), "the runtime starts it anyway");
    p.start(0, Fake::tools(&["y"]));
    answer_call(&mut p, 0);
    assert_eq!(p.take(c)["id"], 1);
    assert_eq!(state(&p, "a"), "ready");
}

#[test]
fn calls_waiting_for_a_start_fail_with_it_and_later_ones_are_not_held() {
    let mut p = Pair::new(vec![UpstreamSpec::new("a")], HubOptions::default());
    p.hub.handle(Input::SeedLists { up: 0, lists: &json!({ "capabilities": { "tools": {} }, "tools": [tool("y")] }), hold: false }, p.now);
    let c = p.client("2025-11-25", json!({}));
    p.names(c);
    // Its process runs but has not answered yet: still waited for.
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    call(&mut p, c, 1, "a__y");
    assert!(p.client_quiet(c));
    p.hub.handle(Input::UpstreamExited { up: 0, reason: "exit status 1", stderr_tail: "", next: Next::Now }, p.now);
    p.pump();
    let e = p.take(c);
    assert!(e["error"]["message"].as_str().unwrap().contains("'a' could not be started"), "{e}");
    // The start failed: the next call is told at once, as for any server down.
    call(&mut p, c, 2, "a__y");
    let e = p.take(c);
    assert_eq!(e["id"], 2, "{e}");
    assert!(e.get("error").is_some(), "{e}");
}

#[test]
fn a_call_while_a_woken_server_initializes_waits_for_it_too() {
    let mut p = Pair::new(vec![lazy("z", 0)], HubOptions::default());
    p.hub.handle(Input::SeedLists { up: 0, lists: &json!({ "capabilities": { "tools": {} }, "tools": [tool("y")] }), hold: false }, p.now);
    let c = p.client("2025-11-25", json!({}));
    call(&mut p, c, 1, "z__y");
    assert_eq!(p.power, [(0, Power::Start)]);
    // Started, not yet up: a second call is parked as well, and asks nothing more.
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    call(&mut p, c, 2, "z__y");
    assert!(p.client_quiet(c));
    assert_eq!(p.power, [(0, Power::Start)]);
    p.hub.handle(Input::UpstreamExited { up: 0, reason: "exit status 1", stderr_tail: "", next: Next::Now }, p.now);
    p.pump();
    for id in [1, 2] {
        let e = p.take(c);
        assert_eq!(e["id"], id);
        assert!(e["error"]["message"].as_str().unwrap().contains("could not be started"), "{e}");
    }
}

fn init_params() -> Value {
    json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } })
}

/// A client whose `initialize` is held for the startup wait (1000 ms), then
/// answered (the answer) and followed by `notifications/initialized`.
fn held_client(p: &mut Pair) -> (ClientId, Value) {
    let c = p.connect();
    p.send(c, json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init_params() }));
    assert!(p.client_quiet(c), "held for the startup wait");
    p.advance(1000);
    let r = p.take(c);
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    (c, r)
}

#[test]
fn a_server_slower_than_the_startup_wait_is_named_and_its_calls_wait_for_it() {
    let opts = HubOptions { startup_wait_ms: 1000, ..HubOptions::default() };
    let mut p = Pair::new(vec![UpstreamSpec::new("a"), UpstreamSpec::new("calc")], opts);
    p.start(0, Fake::tools(&["x"]));
    // calc's process is up but it does not answer yet (nothing known of it).
    p.hub.handle(Input::UpstreamStarted(1), p.now);
    p.pump();
    // The answer, after the startup wait, names the server that is not ready yet.
    let (c, r) = held_client(&mut p);
    assert_eq!(r["result"]["_meta"][NOT_READY_META], json!([{ "server": "calc", "state": "starting", "toolsKnown": false }]), "{r}");
    assert_eq!(p.names(c), ["a__x"]);
    let st = &p.hub.status()["upstreams"][1];
    assert_eq!((st["state"].clone(), st["toolsKnown"].clone()), (json!("starting"), json!(false)), "{st}");
    // A call to one of its tools is no unknown tool: it waits for it.
    call(&mut p, c, 1, "calc__add");
    assert!(p.client_quiet(c));
    // A name no configured server can have is unknown, as ever.
    let r = p.request(c, json!(2), "tools/call", json!({ "name": "nope" }));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().starts_with("Unknown tool: nope"), "{r}");
    // calc answers its probe at last: up and listed, the call goes on.
    let fake = Fake::tools(&["add"]);
    let probe = p.take_up(1);
    let answer = fake.answer(&probe).unwrap().unwrap();
    p.fakes[1] = Some(fake);
    p.upstream_says(1, answer);
    let up = p.take_up(1);
    assert_eq!((up["method"].clone(), up["params"]["name"].clone()), (json!("tools/call"), json!("add")), "{up}");
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    assert_eq!(p.take(c)["method"], "notifications/tools/list_changed");
    assert_eq!(p.take(c)["id"], 1);
    assert_eq!(p.names(c), ["a__x", "calc__add"]);
    // Once it is listed, a tool it does not have is unknown.
    let r = p.request(c, json!(3), "tools/call", json!({ "name": "calc__nope" }));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    // All ready: nothing named in a new client's initialize.
    let c2 = p.connect();
    let r = p.request(c2, json!(0), "initialize", init_params());
    assert!(r["result"].get("_meta").is_none(), "{r}");
}

#[test]
fn a_call_for_a_server_not_known_yet_that_cannot_wait_is_told_to_retry() {
    let opts = HubOptions { startup_wait_ms: 0, ..HubOptions::default() };
    let mut spec = UpstreamSpec::new("calc");
    spec.timeout_ms = 300;
    let mut p = Pair::new(vec![UpstreamSpec { prefix: String::new(), ..UpstreamSpec::new("a") }, spec], opts);
    p.start(0, Fake::tools(&["x"]));
    p.hub.handle(Input::UpstreamStarted(1), p.now);
    p.pump();
    let c = p.client("2025-11-25", json!({}));
    // Its start fails outright: the waiting call is told at once.
    call(&mut p, c, 1, "calc__add");
    p.hub.handle(Input::UpstreamExited { up: 1, reason: "exited with status 1", stderr_tail: "boom", next: Next::After(std::time::Duration::from_millis(2000)) }, p.now);
    p.pump();
    let e = p.take(c);
    assert!(e["error"]["message"].as_str().unwrap().contains("'calc' could not be started"), "{e}");
    // Restarting after its timeoutMs: a call is told when to retry.
    let r = p.request(c, json!(2), "tools/call", json!({ "name": "calc__add" }));
    assert_eq!(r["error"]["data"], json!({ "server": "calc", "state": "restarting", "retryAfterMs": 2000 }), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().starts_with("server 'calc' is restarting, retry in 2 s"), "{r}");
    // Starting again: a call waits for it, up to its timeoutMs.
    p.advance(2000);
    p.hub.handle(Input::UpstreamStarted(1), p.now);
    p.pump();
    call(&mut p, c, 2, "calc__add");
    assert!(p.client_quiet(c));
    p.advance(299);
    assert!(p.client_quiet(c));
    p.advance(2);
    let e = p.take(c);
    assert!(e["error"]["message"].as_str().unwrap().contains("'calc' did not start within 300 ms"), "{e}");
    // An unprefixed server (a) is listed: unknown names are not its.
    let r = p.request(c, json!(3), "tools/call", json!({ "name": "nope" }));
    assert!(r["error"]["message"].as_str().unwrap().starts_with("Unknown tool"), "{r}");
}

#[test]
fn a_server_known_from_its_last_run_holds_initialize_as_usual_then_is_listed_while_it_starts() {
    let opts = HubOptions { startup_wait_ms: 1000, ..HubOptions::default() };
    let mut p = Pair::new(vec![UpstreamSpec::new("calc")], opts);
    p.hub.handle(Input::SeedLists { up: 0, lists: &json!({ "capabilities": { "tools": {} }, "tools": [tool("add")] }), hold: true }, p.now);
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    // Held as without known lists.
    let (c, r) = held_client(&mut p);
    assert_eq!(r["result"]["_meta"][NOT_READY_META], json!([{ "server": "calc", "state": "starting", "toolsKnown": true }]), "{r}");
    assert_eq!(p.names(c), ["calc__add"]);
    call(&mut p, c, 1, "calc__add");
    assert!(p.client_quiet(c), "waits for it");
}
