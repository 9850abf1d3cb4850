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
    p.hub.remove_upstream(0, "removed from the configuration", p.now);
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
    p.hub.upstream_exited(0, "stopped", "", Next::Now, p.now);
    p.hub.upstream_started(0, p.now);
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
    p.hub.remove_upstream(0, "removed from the configuration", p.now);
    assert_eq!(p.hub.add_upstream(clash, p.now), Ok(0));
    assert_eq!(p.hub.add_upstream(UpstreamSpec::new("a"), p.now).map_err(|_| ()), Err(()), "prefix 'a' is taken by 'other'");
}
