//! What a session keeps of its `initialize` is bounded (issue 25 item 1):
//! over a limit the `initialize` is refused with -32602 naming it, and the
//! client is forgotten (an HTTP session is then not opened); at the limit
//! it is kept as sent. And what it keeps is a value ([`Snapshot`]) another
//! hub goes on from (issue 25).

use serde_json::json;

use super::*;
use crate::hub::client::KEPT_LIMITS;

/// `initialize` params whose `field` serializes to exactly `len` bytes.
fn params_with(field: &str, len: usize) -> Value {
    let mut p = json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } });
    // {"name":"<pad>"}: 11 bytes around the pad.
    p[field] = json!({ "name": "x".repeat(len - 11) });
    assert_eq!(p[field].to_string().len(), len);
    p
}

#[test]
fn initialize_over_what_a_session_keeps_is_refused_and_the_client_forgotten() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    for (field, max) in KEPT_LIMITS {
        // At the limit: kept.
        let c = p.connect();
        let r = p.request(c, json!(1), "initialize", params_with(field, max));
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{field} at {max} bytes: {r}");
        assert!(!p.closed.contains(&c));
        // One byte over (and far over): -32602 naming the field and the limit.
        for len in [max + 1, 2 << 20] {
            let c = p.connect();
            let r = p.request(c, json!(1), "initialize", params_with(field, len));
            assert_eq!(r["error"]["code"], -32602, "{field} at {len} bytes: {r}");
            let msg = r["error"]["message"].as_str().unwrap();
            assert!(msg.contains(field) && msg.contains(&format!("limit of {max} bytes")), "{msg}");
            assert_eq!(r["error"]["data"], json!({ "field": field, "bytes": len, "limitBytes": max }));
            assert!(p.closed.contains(&c), "the refused client is closed");
            assert_eq!(p.hub.clients().revision(c), None, "nothing is kept of it");
            let status = p.hub.status();
            let ids: Vec<u64> = status["clients"].as_array().unwrap().iter().filter_map(|c| c["id"].as_u64()).collect();
            assert!(!ids.contains(&c), "the client is forgotten: {status}");
        }
    }
}

/// The snapshot replicas share (feature `cluster`).
#[cfg(feature = "cluster")]
mod snapshot {
    use super::*;
    use mcpx_core::revision::Revision as Rev;

    /// An upstream with a tool, a subscribable resource and logging.
    fn logging_fake() -> Fake {
        let mut f = Fake::tools(&["read"]);
        f.caps = json!({ "tools": { "listChanged": true }, "resources": { "subscribe": true }, "logging": {} });
        f.resources = vec![json!({ "uri": "mem://a", "name": "a" })];
        f
    }

    /// The answer to the hub's fire-and-forget request `v` to upstream `u`.
    fn ok_up(p: &mut Pair, u: UpstreamId, v: &Value) {
        p.upstream_says(u, json!({ "jsonrpc": "2.0", "id": v["id"], "result": {} }));
    }

    /// A client of `p` that read its tools, asked for logs and subscribed to
    /// mem://a (each told to the upstream and answered).
    fn busy_client(p: &mut Pair) -> ClientId {
        let c = p.client("2025-06-18", json!({ "sampling": {} }));
        p.list_all(c, "tools/list", "tools");
        assert_eq!(p.request(c, json!(1), "logging/setLevel", json!({ "level": "warning" }))["result"], json!({}));
        let set = p.take_up(0);
        ok_up(p, 0, &set);
        p.send(c, json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": { "uri": "mem://a" } }));
        let sub = p.take_up(0);
        ok_up(p, 0, &sub);
        assert_eq!(p.take(c)["id"], 2);
        c
    }

    #[test]
    fn a_sessions_snapshot_is_what_it_keeps_and_each_change_is_said() {
        let mut p = Pair::with(vec![("fs", logging_fake())], HubOptions::default());
        let c = p.connect();
        assert_eq!(p.hub.client_snapshot(c), None, "nothing before initialize");
        p.hub.handle(Input::ClientPrincipal(c, b"token:alice"), p.now);
        p.request(c, json!(0), "initialize", json!({ "protocolVersion": "2025-06-18", "capabilities": { "sampling": {} }, "clientInfo": { "name": "t", "version": "1" } }));
        assert_eq!(p.changed, [c], "said once initialize is answered");
        p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        assert_eq!(p.changed.len(), 2, "initialized: said once");
        p.list_all(c, "tools/list", "tools");
        p.list_all(c, "tools/list", "tools");
        assert_eq!(p.changed.len(), 3, "a list read the first time only");
        for (id, level) in [(1, "warning"), (2, "warning"), (3, "error")] {
            p.request(c, json!(id), "logging/setLevel", json!({ "level": level }));
        }
        assert_eq!(p.changed.len(), 5, "a level asked, when it is another");
        p.send(c, json!({ "jsonrpc": "2.0", "id": 4, "method": "resources/subscribe", "params": { "uri": "mem://a" } }));
        assert_eq!(p.changed.len(), 6);
        let s = p.hub.client_snapshot(c).expect("an initialized legacy client's");
        let want = Snapshot {
            rev: Rev::V2025_06_18,
            caps: json!({ "sampling": {} }),
            info: json!({ "name": "t", "version": "1" }),
            principal: b"token:alice".to_vec(),
            ready: true,
            log_level: Some("error"),
            listed: [true, false, false],
            subscriptions: vec!["mem://a".into()],
        };
        assert_eq!(s, want);
        // As the store keeps it, and back.
        let j = s.to_json();
        assert_eq!(j["principal"], "746f6b656e3a616c696365");
        assert_eq!(j["listed"], json!(["tools"]));
        assert_eq!(Snapshot::from_json(&j), Ok(s));
        for (k, bad) in [("protocolVersion", json!("2026-07-28")), ("logLevel", json!("loud")), ("listed", json!(["tasks"])), ("principal", json!("zz")), ("capabilities", json!([]))] {
            let mut v = j.clone();
            v[k] = bad;
            assert!(Snapshot::from_json(&v).is_err(), "{k}");
        }
        // A modern client has no session to keep.
        let m = p.connect();
        p.hub.handle(Input::ClientModern(m), p.now);
        assert_eq!(p.hub.client_snapshot(m), None);
    }

    #[test]
    fn a_client_adopted_from_a_snapshot_goes_on_where_its_session_was() {
        // The session on one hub ("replica"), its snapshot adopted by another.
        let mut gone = Pair::with(vec![("fs", logging_fake())], HubOptions::default());
        let c = busy_client(&mut gone);
        let s = gone.hub.client_snapshot(c).unwrap();
        let mut p = Pair::with(vec![("fs", logging_fake())], HubOptions::default());
        let a = p.hub.adopt_client(&s, p.now);
        p.pump();
        assert_eq!(p.changed, [a], "its state is to be written by its new replica");
        // The upstream is asked what the session had asked.
        let set = p.take_up(0);
        assert_eq!((set["method"].clone(), set["params"]["level"].clone()), (json!("logging/setLevel"), json!("warning")));
        ok_up(&mut p, 0, &set);
        let sub = p.take_up(0);
        assert_eq!((sub["method"].clone(), sub["params"]["uri"].clone()), (json!("resources/subscribe"), json!("mem://a")));
        ok_up(&mut p, 0, &sub);
        assert!(p.client_quiet(a), "nothing for the client itself");
        assert_eq!(p.hub.client_snapshot(a), Some(s), "it keeps what it kept");
        assert_eq!(p.hub.clients().revision(a), Some("2025-06-18"));
        // Initialized: requests are served without a new handshake.
        let r = p.request(a, json!(7), "tools/list", json!({}));
        assert_eq!(r["result"]["tools"][0]["name"], "fs__read", "{r}");
        // Updates and log messages reach it.
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": "mem://a" } }));
        assert_eq!(p.take(a)["method"], "notifications/resources/updated");
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": { "level": "error", "data": "x" } }));
        assert_eq!(p.take(a)["method"], "notifications/message");
        // Leaving, it unsubscribes as any client does.
        p.hub.handle(Input::ClientDisconnected(a), p.now);
        p.pump();
        assert_eq!(p.take_up(0)["method"], "resources/unsubscribe");
    }

    #[test]
    fn an_adopted_client_counts_against_the_client_cap() {
        let mut gone = Pair::with(vec![("fs", logging_fake())], HubOptions::default());
        let c = busy_client(&mut gone);
        let s = gone.hub.client_snapshot(c).unwrap();
        let mut p = Pair::with(vec![("fs", logging_fake())], HubOptions { max_clients: 1, ..HubOptions::default() });
        p.connect();
        let a = p.hub.adopt_client(&s, p.now);
        p.pump();
        assert_eq!(p.closed, [a]);
        assert!(p.up_quiet(0), "nothing asked for a refused client");
        assert_eq!(p.hub.client_snapshot(a), None);
    }
}
