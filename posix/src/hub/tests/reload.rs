//! Pair tests of the entry points a config reload uses: servers added and
//! removed while clients stay connected.

use serde_json::json;

use super::*;

impl Pair {
    /// Adds server `name` and starts it as `fake`; returns its id.
    fn add(&mut self, name: &str, fake: Fake) -> UpstreamId {
        let u = self.hub.add_upstream(UpstreamSpec::new(name), self.now).expect("the new server is valid");
        if self.fakes.len() <= u {
            self.fakes.resize(u + 1, None);
        }
        self.start(u, fake);
        u
    }
}

#[test]
fn servers_come_and_go_while_a_client_stays() {
    let mut p = Pair::with(vec![("a", Fake::tools(&["x"]))], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["a__x"]);

    // Added: its tools appear and the client that listed is told.
    let b = p.add("b", Fake::tools(&["y"]));
    assert_eq!(b, 1);
    assert_eq!(p.take(c)["method"], "notifications/tools/list_changed");
    assert_eq!(p.names(c), ["a__x", "b__y"]);

    // Removed with a call in flight: the call is answered at once, saying why.
    p.send(c, json!({ "jsonrpc": "2.0", "id": "in-flight", "method": "tools/call", "params": { "name": "a__x" } }));
    p.take_up(0);
    p.hub.handle(Input::UpstreamRemoved { up: 0, why: "removed from the configuration" }, p.now);
    p.pump();
    let e = p.take(c);
    assert_eq!(e["id"], "in-flight");
    let msg = e["error"]["message"].as_str().unwrap();
    assert!(msg.contains("'a'") && msg.contains("removed from the configuration"), "{e}");
    assert_eq!(p.take(c)["method"], "notifications/tools/list_changed");
    assert_eq!(p.names(c), ["b__y"]);
    let r = p.request(c, json!(2), "tools/call", json!({ "name": "a__x" }));
    assert_eq!(err_code(&r), -32602, "{r}");
    let names: Vec<Value> = p.hub.status()["upstreams"].as_array().unwrap().iter().map(|u| u["name"].clone()).collect();
    assert_eq!(names, [json!("b")]);

    // Reports about the removed server's process are ignored, and nothing
    // is sent to it.
    p.hub.handle(Input::UpstreamExited { up: 0, reason: "stopped", stderr_tail: "", next: Next::Now }, p.now);
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    assert!(p.up_quiet(0));
    assert!(p.client_quiet(c));

    // Its slot is reused by the next server added.
    let d = p.add("d", Fake::tools(&["z"]));
    assert_eq!(d, 0);
    assert_eq!(p.take(c)["method"], "notifications/tools/list_changed");
    assert_eq!(p.names(c), ["d__z", "b__y"]);
    p.send(c, json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "d__z" } }));
    let up = p.take_up(0);
    assert_eq!(up["params"]["name"], "z");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    assert_eq!(p.take(c)["id"], 3);
}

#[test]
fn an_added_server_is_checked_against_the_others() {
    let mut p = Pair::with(vec![("a", Fake::tools(&["x"]))], HubOptions::default());
    assert_eq!(p.hub.add_upstream(UpstreamSpec::new("a"), p.now), Err(ConfigError::DuplicateName("a".into())));
    let mut clash = UpstreamSpec::new("other");
    clash.prefix = "a".into();
    assert_eq!(p.hub.add_upstream(clash.clone(), p.now), Err(ConfigError::PrefixCollision("a".into(), "other".into())));
    // Once `a` is gone, its name and prefix are free.
    p.hub.handle(Input::UpstreamRemoved { up: 0, why: "removed from the configuration" }, p.now);
    assert_eq!(p.hub.add_upstream(clash, p.now), Ok(0));
    assert_eq!(p.hub.add_upstream(UpstreamSpec::new("a"), p.now).map_err(|_| ()), Err(()), "prefix 'a' is taken by 'other'");
}

/// Client `c` calls tool `name` with request id `id`.
fn call(p: &mut Pair, c: ClientId, id: i64, name: &str) {
    p.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": name } }));
}

/// Replaces server 1 (`b`) with `spec` and stops its old process, as a
/// reload does; returns whether the runtime is to start it now.
fn replace_b(p: &mut Pair, spec: UpstreamSpec) -> bool {
    p.hub.replace_upstream(1, spec, "its configuration changed", p.now).expect("the changed entry is valid");
    p.pump();
    // The old process's exit is no crash: nothing more is answered or announced.
    p.hub.handle(Input::UpstreamExited { up: 1, reason: "stopped (exited with status 0)", stderr_tail: "", next: Next::Stop }, p.now);
    p.pump();
    p.hub.upstream_replaced(1, true, p.now)
}

#[test]
fn a_changed_server_stays_listed_across_its_restart_and_its_calls_wait_for_it() {
    let mut p = Pair::with(vec![("a", Fake::tools(&["x"])), ("b", Fake::tools(&["y", "z"]))], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["a__x", "b__y", "b__z"]);
    call(&mut p, c, 1, "b__y");
    p.take_up(1);

    p.hub.replace_upstream(1, UpstreamSpec { timeout_ms: 5000, ..UpstreamSpec::new("b") }, "its configuration changed", p.now).unwrap();
    p.pump();
    // The call in flight to the old process is answered at once, saying why.
    let e = p.take(c);
    assert_eq!(e["id"], 1);
    assert!(e["error"]["message"].as_str().unwrap().contains("its configuration changed"), "{e}");
    // Its tools stay listed, and nobody is told of a change.
    assert!(p.client_quiet(c), "no list_changed for a restart");
    assert_eq!(p.names(c), ["a__x", "b__y", "b__z"]);
    assert_eq!(p.hub.status()["upstreams"][1]["state"], "restarting");
    // A call while it restarts is no unknown tool: it waits for it.
    call(&mut p, c, 2, "b__z");
    p.hub.handle(Input::UpstreamExited { up: 1, reason: "stopped (exited with status 0)", stderr_tail: "", next: Next::Stop }, p.now);
    p.pump();
    assert!(p.client_quiet(c), "the old process's exit answers nothing");
    assert!(p.hub.upstream_replaced(1, true, p.now), "started at once");
    call(&mut p, c, 3, "b__y");
    assert!(p.client_quiet(c));
    p.advance(1500);
    p.start(1, Fake::tools(&["y", "z"]));
    for want in ["z", "y"] {
        let up = p.take_up(1);
        assert_eq!(up["params"]["name"], want, "{up}");
        p.upstream_says(1, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    }
    assert_eq!(p.take(c)["id"], 2);
    assert_eq!(p.take(c)["id"], 3);
    // The same listing after the restart: still no list_changed.
    assert!(p.client_quiet(c), "no list_changed when the listing is the same");
    assert_eq!(p.names(c), ["a__x", "b__y", "b__z"]);
}

#[test]
fn a_restart_announces_only_what_really_changed_and_a_late_start_fails_its_waiting_calls() {
    let mut p = Pair::with(vec![("a", Fake::tools(&["x"])), ("b", Fake::tools(&["y", "z"]))], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["a__x", "b__y", "b__z"]);
    // Its new entry hides `z`: the listing changes at once, told once.
    let spec = UpstreamSpec { tools_deny: vec!["z".into()], timeout_ms: 800, ..UpstreamSpec::new("b") };
    assert!(replace_b(&mut p, spec));
    assert_eq!(p.take(c)["method"], "notifications/tools/list_changed");
    assert!(p.client_quiet(c));
    assert_eq!(p.names(c), ["a__x", "b__y"]);
    // A call waits up to its timeoutMs for the start, then says so.
    call(&mut p, c, 1, "b__y");
    p.advance(799);
    assert!(p.client_quiet(c));
    p.advance(2);
    let e = p.take(c);
    assert!(e["error"]["message"].as_str().unwrap().contains("'b' did not start within 800 ms"), "{e}");
    // It comes up with the same tools (z still hidden): nothing more to tell.
    p.start(1, Fake::tools(&["y", "z"]));
    assert!(p.client_quiet(c), "the listing did not change again");
    // Another restart, and it comes back with a new tool: told once.
    assert!(replace_b(&mut p, UpstreamSpec::new("b")));
    assert!(p.client_quiet(c));
    p.start(1, Fake::tools(&["y", "w"]));
    assert_eq!(p.take(c)["method"], "notifications/tools/list_changed");
    assert!(p.client_quiet(c));
    assert_eq!(p.names(c), ["a__x", "b__y", "b__w"]);
}

#[test]
fn a_changed_lazy_server_sleeps_with_its_tools_listed() {
    let mut p = Pair::with(vec![("a", Fake::tools(&["x"])), ("b", Fake::tools(&["y"]))], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["a__x", "b__y"]);
    assert!(!replace_b(&mut p, UpstreamSpec { lazy: true, ..UpstreamSpec::new("b") }), "not started until used");
    assert_eq!(p.hub.status()["upstreams"][1]["state"], "asleep");
    assert_eq!(p.names(c), ["a__x", "b__y"]);
    call(&mut p, c, 1, "b__y");
    assert_eq!(p.power, [(1, Power::Start)]);
    p.start(1, Fake::tools(&["y"]));
    let up = p.take_up(1);
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    assert_eq!(p.take(c)["id"], 1);
    assert!(p.client_quiet(c));
    // Its new entry runs something else: what it listed is a guess, so it
    // is started to be listed again (listed as before meanwhile).
    p.hub.replace_upstream(1, UpstreamSpec { lazy: true, ..UpstreamSpec::new("b") }, "its configuration changed", p.now).unwrap();
    p.pump();
    assert!(p.hub.upstream_replaced(1, false, p.now), "started to be listed");
    assert_eq!(p.names(c), ["a__x", "b__y"]);
}
