//! Pair tests of `"isolation": "client"` (`hub::starts::isolation`): one instance of
//! a server per client principal, so a server's request for input is for
//! exactly one client (issue 11 item 1).

use serde_json::{json, Value};

use super::*;
use crate::hub::starts::LINGER_MS;

const CAPS: &str = r#"{ "sampling": {}, "elicitation": {} }"#;

/// A hub with server `fs` (tools `read`, `ask`) isolated per client, at most
/// `max` instances, started and listed (its template).
fn isolated(max: usize) -> Pair {
    let mut s = specs(&["fs"]);
    s[0].isolation = Isolation::Client { max };
    let mut p = Pair::new(s, HubOptions::default());
    p.start(0, Fake::tools(&["read", "ask"]));
    p
}

/// A legacy client of principal `who`, initialized and having read the tools.
fn client_of(p: &mut Pair, who: &str) -> ClientId {
    let c = p.client("2025-11-25", serde_json::from_str(CAPS).unwrap());
    p.hub.handle(Input::ClientPrincipal(c, who.as_bytes()), p.now);
    assert_eq!(p.names(c), ["fs__read", "fs__ask"]);
    c
}

fn call(p: &mut Pair, c: ClientId, id: i64, tool: &str) {
    p.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool } }));
}

fn elicit(question: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": "q", "method": "elicitation/create",
            "params": { "mode": "form", "message": question, "requestedSchema": { "type": "object", "properties": {} } } })
}

/// The instance slot that was asked to start last.
fn started(p: &mut Pair) -> UpstreamId {
    let (u, power) = p.power.pop().expect("a power request");
    assert_eq!(power, Power::Start);
    u
}

#[test]
fn each_principal_gets_its_own_instance_and_only_its_own_questions() {
    let mut p = isolated(8);
    let a = client_of(&mut p, "token:alice");
    let b = client_of(&mut p, "token:bob");
    // Listing started nothing: the catalog is the template's.
    assert!(p.power.is_empty());
    call(&mut p, a, 1, "fs__ask");
    let ia = started(&mut p);
    call(&mut p, b, 1, "fs__ask");
    let ib = started(&mut p);
    assert!(ia != 0 && ib != 0 && ia != ib, "{ia} {ib}");
    // The log names whose instance it is.
    let taken = format!("server 'fs': instance {ia} taken for principal 'alice' (client {a}, isolation)");
    assert!(p.logs.iter().any(|(l, s)| *l == Level::Info && *s == taken), "{:?}", p.logs);
    assert!(p.up_quiet(0), "the template gets no call");
    p.start(ia, Fake::tools(&["read", "ask"]));
    p.start(ib, Fake::tools(&["read", "ask"]));
    // The status names whose each instance is; the template is no one's.
    let ups = p.hub.status()["upstreams"].clone();
    assert_eq!([&ups[0]["owner"], &ups[ia]["owner"], &ups[ib]["owner"]], [&Value::Null, &json!("alice"), &json!("bob")], "{ups:#}");
    assert_eq!([&ups[ia]["instanceOf"], &ups[ib]["instanceOf"]], [&json!(0), &json!(0)], "{ups:#}");
    // Instances' lists are their template's: only the template's are kept.
    assert_eq!(p.lists_read, [0]);
    // Each call reached its owner's instance; both are in flight at once.
    assert_eq!(p.take_up(ia)["params"]["name"], "ask");
    assert_eq!(p.take_up(ib)["params"]["name"], "ask");
    // Both instances ask with nothing on the wire naming a call: each
    // question goes to its instance's owner, never the other client.
    p.upstream_says(ib, elicit("Delete all of Bob's files?"));
    p.upstream_says(ia, elicit("Delete all of Alice's files?"));
    let qa = p.take(a);
    let qb = p.take(b);
    assert_eq!(qa["params"]["message"], "[fs] Delete all of Alice's files?");
    assert_eq!(qb["params"]["message"], "[fs] Delete all of Bob's files?");
    assert!(p.client_quiet(a) && p.client_quiet(b));
    // Each answer goes back to the instance that asked.
    p.send(a, json!({ "jsonrpc": "2.0", "id": qa["id"], "result": { "action": "accept", "content": { "who": "alice" } } }));
    p.send(b, json!({ "jsonrpc": "2.0", "id": qb["id"], "result": { "action": "decline" } }));
    let ra = p.take_up(ia);
    let rb = p.take_up(ib);
    assert_eq!((ra["id"].clone(), ra["result"]["content"]["who"].clone()), (json!("q"), json!("alice")));
    assert_eq!((rb["id"].clone(), rb["result"]["action"].clone()), (json!("q"), json!("decline")));
    // An instance's log lines reach its owner only.
    p.send(b, json!({ "jsonrpc": "2.0", "id": 5, "method": "logging/setLevel", "params": { "level": "info" } }));
    assert!(p.take(b)["result"].is_object());
    p.send(a, json!({ "jsonrpc": "2.0", "id": 5, "method": "logging/setLevel", "params": { "level": "info" } }));
    assert!(p.take(a)["result"].is_object());
    p.upstream_says(ia, json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": { "level": "info", "data": "alice's secret" } }));
    assert_eq!(p.take(a)["params"]["data"], "alice's secret");
    assert!(p.client_quiet(b), "bob got alice's log line");
    // A second call of alice goes to her instance again: no new start.
    call(&mut p, a, 2, "fs__read");
    assert!(p.power.is_empty());
    assert_eq!(p.take_up(ia)["params"]["name"], "read");
}

#[test]
fn a_shared_server_refuses_the_same_questions_as_ambiguous() {
    // The control: without isolation, nothing names which caller asks.
    let mut p = Pair::new(specs(&["fs"]), HubOptions::default());
    p.start(0, Fake::tools(&["read", "ask"]));
    let a = client_of(&mut p, "token:alice");
    let b = client_of(&mut p, "token:bob");
    call(&mut p, a, 1, "fs__ask");
    call(&mut p, b, 1, "fs__ask");
    p.take_up(0);
    p.take_up(0);
    p.upstream_says(0, elicit("Delete all of Alice's files?"));
    let e = p.take_up(0);
    assert!(e["error"]["message"].as_str().unwrap().contains("\"isolation\": \"client\""), "{e}");
    assert!(p.client_quiet(a) && p.client_quiet(b));
}

#[test]
fn sessions_of_one_principal_share_its_instance_and_anonymous_sessions_do_not() {
    let mut p = isolated(8);
    let a1 = client_of(&mut p, "token:alice");
    let a2 = client_of(&mut p, "token:alice");
    let x = client_of(&mut p, "anonymous");
    let y = client_of(&mut p, "anonymous");
    call(&mut p, a1, 1, "fs__read");
    let ia = started(&mut p);
    call(&mut p, a2, 1, "fs__read");
    assert!(p.power.is_empty(), "alice's second session uses her instance");
    call(&mut p, x, 1, "fs__read");
    let ix = started(&mut p);
    call(&mut p, y, 1, "fs__read");
    let iy = started(&mut p);
    assert_eq!([ia, ix, iy].iter().collect::<std::collections::BTreeSet<_>>().len(), 3);
    assert_eq!(p.hub.starts().owned(0), 3);
}

/// Alice's call 1 in flight on her instance of `fs` (at most `max`), as
/// the instance got it.
fn alice_on_her_instance(max: usize) -> (Pair, ClientId, UpstreamId, Value) {
    let mut p = isolated(max);
    let a = client_of(&mut p, "token:alice");
    call(&mut p, a, 1, "fs__read");
    let ia = started(&mut p);
    p.start(ia, Fake::tools(&["read", "ask"]));
    let up = p.take_up(ia);
    (p, a, ia, up)
}

#[test]
fn past_max_instances_a_call_is_refused_naming_the_server_and_the_limit() {
    let (mut p, a, ia, up) = alice_on_her_instance(1);
    let b = client_of(&mut p, "token:bob");
    call(&mut p, b, 1, "fs__read");
    let e = p.take(b);
    assert_eq!(err_code(&e), -32603, "{e}");
    let msg = e["error"]["message"].as_str().unwrap();
    assert!(msg.contains("'fs'") && msg.contains("maxInstances") && msg.contains('1'), "{msg}");
    assert_eq!(e["error"]["data"], json!({ "server": "fs", "limit": "maxInstances", "maxInstances": 1 }));
    assert!(p.power.is_empty());
    // Alice's call is served all the same.
    p.upstream_says(ia, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    assert_eq!(p.take(a)["id"], 1);
}

#[test]
fn an_instance_stops_after_its_owner_has_gone_and_its_slot_serves_the_next() {
    let (mut p, a, ia, up) = alice_on_her_instance(1);
    p.upstream_says(ia, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    assert_eq!(p.take(a)["id"], 1);
    // Still connected: never stopped, however long unused.
    p.advance(60_000);
    assert!(p.power.is_empty());
    p.hub.handle(Input::ClientDisconnected(a), p.now);
    p.pump();
    // Gone: stopped once it lingered unused.
    assert!(p.hub.next_deadline().is_some_and(|at| at <= p.now + LINGER_MS));
    p.advance(LINGER_MS);
    assert_eq!(p.power, [(ia, Power::Stop)]);
    p.power.clear();
    assert_eq!(p.hub.starts().owned(0), 0);
    p.hub.handle(Input::UpstreamExited { up: ia, reason: "stopped", stderr_tail: "", next: Next::Stop }, p.now);
    p.pump();
    // The cap is free again: bob's call takes the same slot.
    let b = client_of(&mut p, "token:bob");
    call(&mut p, b, 1, "fs__read");
    assert_eq!(started(&mut p), ia);
    p.start(ia, Fake::tools(&["read", "ask"]));
    assert_eq!(p.take_up(ia)["params"]["name"], "read");
}

#[test]
fn a_call_as_a_task_runs_on_the_owners_instance_and_is_still_a_task() {
    let mut p = isolated(8);
    let c = p.client("2025-11-25", json!({ "tasks": {} }));
    p.hub.handle(Input::ClientPrincipal(c, b"token:alice"), p.now);
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read", "task": { "ttl": 60000 } } }));
    let iu = started(&mut p);
    p.start(iu, Fake::tools(&["read", "ask"]));
    // Served once its instance is up: a task whose call went to the instance.
    let created = p.take(c);
    assert_eq!(created["result"]["task"]["status"], "working", "{created}");
    let up = p.take_up(iu);
    assert_eq!(up["params"]["name"], "read");
    assert!(up["params"].get("task").is_none(), "{up}");
    assert!(p.up_quiet(0));
}

#[test]
fn removing_an_isolated_server_ends_its_instances_calls_and_frees_their_slots() {
    let (mut p, a, ia, _) = alice_on_her_instance(8);
    assert_eq!(p.hub.starts().instances_of(0), [ia]);
    p.hub.handle(Input::UpstreamRemoved { up: 0, why: "removed from the configuration" }, p.now);
    p.pump();
    // Alice's call in flight on her instance is answered, naming why.
    let e = p.take(a);
    assert_eq!(e["id"], 1);
    assert!(e["error"]["message"].as_str().unwrap().contains("removed from the configuration"), "{e}");
    assert!(p.hub.starts().instances_of(0).is_empty());
    assert_eq!(p.hub.starts().template_of(ia), None);
    // Both slots are free for a server a reload adds.
    let u = p.hub.add_upstream(UpstreamSpec::new("other"), p.now).unwrap();
    assert!(u == 0 || u == ia, "{u}");
}

/// A modern client of principal `who` with a listen stream on
/// `file:///a.txt` and a call in flight on its own instance of `fs` (the
/// call waited for the instance to start); returns it and the instance.
fn listening_principal(p: &mut Pair, who: &str) -> (ClientId, UpstreamId) {
    let l = p.connect();
    p.hub.handle(Input::ClientPrincipal(l, who.as_bytes()), p.now);
    p.msend(l, json!("l"), "subscriptions/listen", json!({ "notifications": { "resourceSubscriptions": ["file:///a.txt"] } }), &json!({}));
    assert_eq!(p.take(l)["method"], "notifications/subscriptions/acknowledged");
    while !p.up_quiet(0) {
        let sub = p.take_up(0);
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": sub["id"], "result": {} }));
    }
    p.msend(l, json!(1), "tools/call", json!({ "name": "fs__read" }), &json!({}));
    let iu = started(p);
    p.start(iu, resources_fake());
    assert_eq!(p.take_up(iu)["params"]["name"], "read");
    (l, iu)
}

fn resources_fake() -> Fake {
    let mut f = Fake::tools(&["read"]);
    f.caps = json!({ "tools": {}, "resources": { "subscribe": true } });
    f.resources = vec![json!({ "uri": "file:///a.txt", "name": "a" })];
    f
}

#[test]
fn an_instances_resource_updates_reach_only_its_owners_listen_streams() {
    let mut s = specs(&["fs"]);
    s[0].isolation = Isolation::Client { max: 8 };
    let mut p = Pair::new(s, HubOptions::default());
    p.start(0, resources_fake());
    let (a, ia) = listening_principal(&mut p, "token:alice");
    let (b, ib) = listening_principal(&mut p, "token:bob");
    assert!(ia != ib && p.client_quiet(a) && p.client_quiet(b));
    let updated = json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": "file:///a.txt" } });
    p.upstream_says(ia, updated.clone());
    let n = p.take(a);
    assert_eq!((n["method"].clone(), n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone()), (json!("notifications/resources/updated"), json!("l")));
    assert!(p.client_quiet(b), "bob's listen stream got alice's instance's update");
    p.upstream_says(ib, updated.clone());
    assert_eq!(p.take(b)["params"]["uri"], "file:///a.txt");
    assert!(p.client_quiet(a), "alice's listen stream got bob's instance's update");
    // The shared template's own updates reach every stream.
    p.upstream_says(0, updated);
    assert_eq!(p.take(a)["method"], "notifications/resources/updated");
    assert_eq!(p.take(b)["method"], "notifications/resources/updated");
}
