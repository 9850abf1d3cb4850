//! Pair tests for rows of the base protocol: messages, ids, errors, `_meta`,
//! lifecycle, versioning, caching and the stdio binding's directions, on both
//! sides of the hub and in both eras. Rows are named in `// covers:` comments.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::*;

const MODERN: &str = "2026-07-28";

fn modern_fake(names: &[&str]) -> Fake {
    let mut f = Fake::tools(names);
    f.rev = MODERN;
    f.caps = json!({ "tools": { "listChanged": true }, "resources": {} });
    f.resources = vec![json!({ "uri": "file:///a.txt", "name": "a" })];
    f
}

fn mmeta(params: Value, caps: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": { "name": "rows", "version": "1" },
    });
    params
}

impl Pair {
    fn mcall(&mut self, c: ClientId, id: Value, method: &str, params: Value, caps: Value) {
        self.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": mmeta(params, caps) }));
    }

    /// Every message queued for upstream `u`, in order.
    fn drain_up(&mut self, u: UpstreamId) -> Vec<Value> {
        self.up.get_mut(&u).map(|q| q.drain(..).collect()).unwrap_or_default()
    }

    /// Every message queued for client `c`, with its raw bytes.
    fn drain_cl(&mut self, c: ClientId) -> Vec<(Value, Vec<u8>)> {
        self.cl.get_mut(&c).map(|q| q.drain(..).collect()).unwrap_or_default()
    }
}

/// The JSON-RPC 2.0 shape of one message: a request, a notification or a
/// response (result xor error, error with an integer code and a message).
fn assert_jsonrpc(v: &Value) {
    assert!(v.is_object(), "one object, never a batch: {v}");
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    if let Some(m) = v.get("method") {
        assert!(m.is_string(), "{v}");
        if let Some(id) = v.get("id") {
            assert!(id.is_string() || id.is_i64() || id.is_u64(), "request ids are strings or integers: {v}");
        }
        if let Some(p) = v.get("params") {
            assert!(p.is_object(), "params by name: {v}");
        }
    } else {
        assert!(v.get("result").is_some() ^ v.get("error").is_some(), "result xor error: {v}");
        if let Some(e) = v.get("error") {
            assert!(e["code"].is_i64() && e["message"].is_string(), "{v}");
        }
        if let Some(r) = v.get("result") {
            assert!(r.is_object(), "{v}");
        }
    }
}

/// A `_meta` key: optional prefix of dot-separated labels (letter first,
/// letter or digit last, hyphens inside) and a slash, then a name that is
/// empty or starts and ends alphanumeric with `-_.` allowed inside.
fn valid_meta_key(k: &str) -> bool {
    let (prefix, name) = match k.rfind('/') {
        Some(i) => (Some(&k[..i]), &k[i + 1..]),
        None => (None, k),
    };
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphabetic()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
    };
    let prefix_ok = prefix.is_none_or(|p| p.split('.').all(label_ok));
    let b = name.as_bytes();
    let name_ok = b.is_empty()
        || (b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')));
    prefix_ok && name_ok
}

/// Every `_meta` key anywhere in `v`.
fn meta_keys(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                if k == "_meta" {
                    if let Some(m) = x.as_object() {
                        out.extend(m.keys().cloned());
                    }
                }
                meta_keys(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| meta_keys(x, out)),
        _ => {}
    }
}

#[test]
fn the_meta_key_rule_itself() {
    for k in ["io.modelcontextprotocol/serverInfo", "a/b", "x-y.z1/n_a.m-e", "plain", "", "a/"] {
        assert!(valid_meta_key(k), "{k}");
    }
    for k in ["1io/x", "io./x", "io-/x", "-a/b", "a/-b", "a/b-", "io.x/ b", "/x"] {
        assert!(!valid_meta_key(k), "{k}");
    }
}

// ---------------------------------------------------------------- ids and JSON-RPC

// covers: messages-all-messages-follow-jsonrpc-2, messages-request-id-unique-per-session
// covers: lifecycle-initialize-not-in-batch, lifecycle-client-sends-supported-version
// covers: lifecycle-implementations-support-base-and-lifecycle
#[test]
fn legacy_traffic_is_json_rpc_with_fresh_ids_both_ways() {
    let mut p = Pair::new(legacy_specs(&["fs"]), HubOptions::default());
    p.fakes[0] = None;
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    // The handshake: initialize alone (not a batch), offering a revision mcpx speaks.
    let init = p.take_up(0);
    assert_jsonrpc(&init);
    assert_eq!(init["method"], "initialize");
    let offered = init["params"]["protocolVersion"].as_str().unwrap();
    assert!(ALL_REVS.contains(&offered), "{offered}");
    let f = Fake::tools(&["read"]);
    let ans = f.answer(&init).unwrap().unwrap();
    p.fakes[0] = Some(f);
    p.upstream_says(0, ans);
    let mut ids_up: HashSet<String> = HashSet::new();
    ids_up.insert(init["id"].to_string());
    let c1 = p.client("2025-11-25", json!({ "sampling": {} }));
    let c2 = p.client("2025-06-18", json!({ "sampling": {} }));
    // Both clients use the same ids; the upstream sees distinct ones, never reused.
    let mut ids_to_clients: HashSet<String> = HashSet::new();
    for round in 0..3 {
        for c in [c1, c2] {
            p.send(c, json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": { "name": "fs__read", "arguments": { "r": round } } }));
            let up = p.take_up(0);
            assert_jsonrpc(&up);
            assert!(ids_up.insert(up["id"].to_string()), "id {} reused toward the upstream", up["id"]);
            // The upstream asks the calling client to sample: the hub's request ids are fresh too.
            p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": { "messages": [], "maxTokens": 5 } }));
            let s = p.take(c);
            assert_jsonrpc(&s);
            assert!(ids_to_clients.insert(s["id"].to_string()), "id {} reused toward clients", s["id"]);
            p.send(c, json!({ "jsonrpc": "2.0", "id": s["id"], "result": { "role": "assistant", "content": { "type": "text", "text": "x" }, "model": "m" } }));
            let back = p.take_up(0);
            assert_jsonrpc(&back);
            assert_eq!(back["id"], 1);
            p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
            let r = p.take(c);
            assert_jsonrpc(&r);
            assert_eq!(r["id"], 7);
        }
    }
    // Pings the hub sends are fresh ids as well.
    let n = p.hub.next_deadline().map(|d| d - p.now);
    if let Some(n) = n {
        p.advance(n);
        for m in p.drain_up(0) {
            assert_jsonrpc(&m);
            if m.get("method").is_some() && m.get("id").is_some() {
                assert!(ids_up.insert(m["id"].to_string()), "{m}");
            }
        }
    }
}

// covers: messages-request-id-unique-among-in-flight, stdio-client-no-responses
// covers: transport-binding-message-directions, stdio-server-no-requests
// covers: versioning-implementations-support-base-versioning-patterns
#[test]
fn modern_traffic_keeps_directions_and_distinct_in_flight_ids() {
    let mut p = Pair::with(vec![("m", modern_fake(&["a"])), ("fs", Fake::tools(&["ask"]))], HubOptions::default());
    let c = p.connect();
    // Many calls in flight at once.
    for i in 0..4 {
        p.mcall(c, json!(10 + i), "tools/call", json!({ "name": "m__a", "arguments": {} }), json!({}));
    }
    let ups = p.drain_up(0);
    assert_eq!(ups.len(), 4);
    let ids: HashSet<String> = ups.iter().map(|m| m["id"].to_string()).collect();
    assert_eq!(ids.len(), 4, "in-flight ids toward the modern upstream are distinct: {ups:?}");
    for m in &ups {
        assert_jsonrpc(m);
        assert!(m.get("method").is_some(), "the client side writes requests and notifications only: {m}");
    }
    // A legacy upstream asks for sampling during a modern call: the modern client
    // gets a result (input_required), never a request.
    p.mcall(c, json!(2), "tools/call", json!({ "name": "fs__ask", "arguments": {} }), json!({ "sampling": {} }));
    let call = p.take_up(1);
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": { "messages": [], "maxTokens": 5 } }));
    for m in &ups {
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": m["id"], "result": { "resultType": "complete", "content": [] } }));
    }
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [] } }));
    let got = p.drain_cl(c);
    assert!(got.len() >= 5, "{got:?}");
    for (m, raw) in &got {
        assert_jsonrpc(m);
        assert!(m.get("method").is_none() || m.get("id").is_none(), "no request to a modern client: {m}");
        assert!(std::str::from_utf8(raw).is_ok());
    }
    assert!(got.iter().any(|(m, _)| m["result"]["resultType"] == "input_required"));
    // The modern upstream never got a response from the hub.
    for m in p.drain_up(0) {
        assert!(m.get("method").is_some(), "{m}");
    }
}

// covers: transport-jsonrpc-utf8
#[test]
fn text_travels_as_utf8_and_invalid_utf8_is_a_parse_error() {
    let (mut p, c) = one("2025-11-25", json!({}));
    let text = "naïve café — 日本語 🦀";
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read", "arguments": { "t": text } } }));
    let up = p.take_up(0);
    assert_eq!(up["params"]["arguments"]["t"], text);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [{ "type": "text", "text": text }] } }));
    let (v, raw) = p.take_raw(c);
    let s = std::str::from_utf8(&raw).expect("UTF-8 on the wire");
    assert!(s.contains("日本語") || s.contains("\\u65e5"), "{s}");
    assert_eq!(v["result"]["content"][0]["text"], text);
    // Bytes that are not UTF-8 are not JSON-RPC: a parse error, and the session goes on.
    p.send_raw(c, b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}");
    assert_eq!(err_code(&p.take(c)), -32700);
    assert_eq!(p.request(c, json!(3), "ping", json!({}))["result"], json!({}));
}

// ---------------------------------------------------------------- errors

// covers: errors-receivers-no-meaning-for-legacy-subrange
#[test]
fn codes_of_the_legacy_subrange_are_passed_on_without_meaning() {
    for code in [-32001, -32003, -32050, -32099] {
        let (mut p, c) = one("2025-11-25", json!({}));
        p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
        let up = p.take_up(0);
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "error": { "code": code, "message": "upstream says no" } }));
        let e = p.take(c);
        assert_eq!((err_code(&e), e["id"].clone()), (code, json!(1)));
        assert!(p.restarts.is_empty(), "no restart, no renegotiation for {code}");
        assert!(p.up_quiet(0), "nothing sent upstream for {code}");
        // The upstream stays in service.
        p.send(c, json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "fs__read" } }));
        assert_eq!(p.take_up(0)["method"], "tools/call");
    }
}

// ---------------------------------------------------------------- lifecycle

// covers: lifecycle-respect-negotiated-version-and-capabilities-must
#[test]
fn only_negotiated_capabilities_are_used_in_either_direction() {
    let mut f = Fake::tools(&["read"]);
    f.caps = json!({ "tools": {}, "resources": {} }); // no subscribe, no logging
    f.resources = vec![json!({ "uri": "file:///a", "name": "a" })];
    let mut p = Pair::with(vec![("fs", f)], HubOptions::default());
    // A client without sampling, roots or elicitation.
    let c = p.client("2025-03-26", json!({}));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
    let call = p.take_up(0);
    for (i, m) in ["sampling/createMessage", "elicitation/create", "roots/list"].iter().enumerate() {
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": i, "method": m, "params": { "messages": [], "maxTokens": 1, "message": "x", "requestedSchema": { "type": "object", "properties": {} } } }));
        assert!(p.client_quiet(c), "{m} is not sent to a client that did not declare it");
        let e = p.take_up(0);
        assert_eq!(e["id"], i);
        assert!(e.get("error").is_some(), "{e}");
    }
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [] } }));
    p.take(c);
    // The upstream declared no subscribe and no logging: the hub sends it neither.
    let r = p.request(c, json!(2), "resources/subscribe", json!({ "uri": "fs+file:///a" }));
    assert!(r.get("error").is_some(), "{r}");
    p.request(c, json!(3), "logging/setLevel", json!({ "level": "debug" }));
    for m in p.drain_up(0) {
        assert!(m["method"] != "resources/subscribe" && m["method"] != "logging/setLevel", "{m}");
    }
    // The client negotiated 2025-03-26: results carry nothing newer (no structuredContent).
    p.send(c, json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": { "name": "fs__read" } }));
    let call = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [], "structuredContent": { "a": 1 } } }));
    let r = p.take(c);
    assert!(r["result"].get("structuredContent").is_none(), "{r}");
    schema_check("2025-03-26", "CallToolResult", &r["result"]);
}

// covers: lifecycle-stateless-no-reliance-on-prior-requests, lifecycle-stateless-explicit-handles
// covers: lifecycle-stateless-no-connection-reuse-required
#[test]
fn modern_requests_stand_alone_and_state_travels_in_the_request() {
    let mut f = Fake::tools(&["ask"]);
    f.caps = json!({ "tools": {} });
    let mut p = Pair::with(vec![("fs", f)], HubOptions::default());
    // No discover, no initialize first: the very first message is a call.
    let c = p.connect();
    p.mcall(c, json!(1), "tools/call", json!({ "name": "fs__ask", "arguments": {} }), json!({ "elicitation": { "form": {} } }));
    let call = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": { "mode": "form", "message": "name?", "requestedSchema": { "type": "object", "properties": {} } } }));
    let irr = p.take(c);
    assert_eq!(irr["result"]["resultType"], "input_required", "{irr}");
    let state = irr["result"]["requestState"].as_str().unwrap().to_string();
    let (key, _) = irr["result"]["inputRequests"].as_object().unwrap().iter().next().unwrap();
    // A later request on the same connection with other capabilities is judged on its own _meta.
    p.mcall(c, json!(2), "tools/list", json!({}), json!({}));
    assert!(p.take(c)["result"]["tools"].is_array());
    // The retry arrives on another connection: the explicit requestState is enough.
    let d = p.connect();
    let answer = json!({ "action": "accept", "content": {} });
    p.mcall(d, json!(3), "tools/call", json!({ "name": "fs__ask", "arguments": {}, "inputResponses": { key.clone(): answer }, "requestState": state }), json!({ "elicitation": { "form": {} } }));
    let ans = p.take_up(0);
    assert_eq!(ans["id"], "e1");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [] } }));
    let fin = p.take(d);
    assert_eq!((fin["id"].clone(), fin["result"]["resultType"].clone()), (json!(3), json!("complete")), "{fin}");
    assert!(p.client_quiet(c));
    assert_eq!(p.hub.clients().revision(c), None, "no session was made");
}

// ---------------------------------------------------------------- _meta

// covers: meta-no-assumptions-on-reserved-keys
#[test]
fn unknown_reserved_meta_keys_pass_untouched() {
    let (mut p, c) = one("2025-11-25", json!({}));
    let meta = json!({ "io.modelcontextprotocol/somethingNew": { "x": [1, 2] }, "modelcontextprotocol.io/other": 5, "com.example/k": "v" });
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read", "_meta": meta } }));
    let up = p.take_up(0);
    for (k, v) in meta.as_object().unwrap() {
        assert_eq!(&up["params"]["_meta"][k], v, "{k}");
    }
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [], "_meta": { "io.modelcontextprotocol/unheardOf": true } } }));
    let r = p.take(c);
    assert_eq!(r["result"]["_meta"]["io.modelcontextprotocol/unheardOf"], true);
}

// covers: meta-prefix-label-format, meta-name-format
#[test]
fn every_meta_key_the_hub_writes_is_well_formed() {
    let mut p = Pair::with(vec![("m", modern_fake(&["a"])), ("fs", Fake::tools(&["ask"]))], HubOptions::default());
    let c = p.connect();
    let mut keys = vec![];
    for (i, (method, params)) in [
        ("server/discover", json!({})),
        ("tools/list", json!({})),
        ("resources/list", json!({})),
        ("tools/call", json!({ "name": "m__a", "arguments": {} })),
        ("tools/call", json!({ "name": "fs__ask", "arguments": {} })),
        ("subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } })),
    ]
    .into_iter()
    .enumerate()
    {
        p.mcall(c, json!(i), method, params, json!({ "sampling": {} }));
    }
    for m in p.drain_up(0).into_iter().chain(p.drain_up(1)) {
        meta_keys(&m, &mut keys);
        if m["method"] == "tools/call" {
            let u = if m["params"]["name"] == "a" { 0 } else { 1 };
            p.upstream_says(u, json!({ "jsonrpc": "2.0", "id": m["id"], "result": { "resultType": "complete", "content": [] } }));
        }
    }
    for (m, _) in p.drain_cl(c) {
        meta_keys(&m, &mut keys);
    }
    let l = p.client("2025-11-25", json!({}));
    p.send(l, json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": { "name": "m__a", "arguments": {}, "_meta": { "progressToken": "t" } } }));
    for m in p.drain_up(0) {
        meta_keys(&m, &mut keys);
    }
    assert!(keys.iter().any(|k| k == "io.modelcontextprotocol/serverInfo"), "{keys:?}");
    assert!(keys.iter().any(|k| k == "io.modelcontextprotocol/protocolVersion"), "{keys:?}");
    for k in &keys {
        assert!(valid_meta_key(k), "malformed _meta key {k:?}");
    }
}

// ---------------------------------------------------------------- stdio binding, modern

// covers: stdio-client-cancel-by-notification
#[test]
fn a_modern_upstream_call_is_cancelled_by_notification() {
    let mut p = Pair::with(vec![("m", modern_fake(&["a"]))], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    p.send(c, json!({ "jsonrpc": "2.0", "id": "x", "method": "tools/call", "params": { "name": "m__a", "arguments": {} } }));
    let up = p.take_up(0);
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "x" } }));
    let cancel = p.take_up(0);
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], up["id"]);
    assert!(cancel.get("id").is_none());
    // A timeout cancels the same way.
    p.send(c, json!({ "jsonrpc": "2.0", "id": "y", "method": "tools/call", "params": { "name": "m__a", "arguments": {} } }));
    let up = p.take_up(0);
    p.advance(p.hub.next_deadline().unwrap() - p.now);
    assert!(p.take(c).get("error").is_some());
    let cancel = p.take_up(0);
    assert_eq!((cancel["method"].clone(), cancel["params"]["requestId"].clone()), (json!("notifications/cancelled"), up["id"].clone()));
}

// covers: stdio-server-silent-after-cancel, stdio-server-cancelled-only-for-listen, stdio-server-stop-cancelled-work
#[test]
fn a_cancelled_modern_request_gets_nothing_more_and_timeouts_are_errors_not_cancels() {
    let mut f = Fake::tools(&["read"]);
    f.caps = json!({ "tools": {}, "logging": {} });
    let mut p = Pair::with(vec![("fs", f)], HubOptions::default());
    let c = p.connect();
    p.mcall(c, json!(1), "tools/call", json!({ "name": "fs__read", "arguments": {}, "_meta": {} }), json!({}));
    let up = p.take_up(0);
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } }));
    assert_eq!(p.take_up(0)["method"], "notifications/cancelled");
    // Progress, logs and the late answer: none reaches the client.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": { "level": "error", "data": "late" } }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    assert!(p.client_quiet(c), "{:?}", p.cl.get(&c));
    // A call that times out gets an error response; the hub sends the modern
    // client no notifications/cancelled for it (only listen streams end that way).
    p.mcall(c, json!(2), "tools/call", json!({ "name": "fs__read", "arguments": {} }), json!({}));
    p.take_up(0);
    p.advance(p.hub.next_deadline().unwrap() - p.now);
    let got = p.drain_cl(c);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0["id"].clone(), got[0].0["error"].is_object()), (json!(2), true));
    assert!(got.iter().all(|(m, _)| m["method"] != "notifications/cancelled"));
}

// covers: stdio-no-fallback-on-modern-error, discover-request-meta-required
#[test]
fn a_modern_upstream_is_never_sent_initialize_after_a_modern_error() {
    let mut p = Pair::new(specs(&["m"]), HubOptions::default());
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    let probe = p.take_up(0);
    assert_eq!(probe["method"], "server/discover");
    let meta = &probe["params"]["_meta"];
    assert!(meta["io.modelcontextprotocol/protocolVersion"].is_string(), "{probe}");
    assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object(), "{probe}");
    assert_eq!(probe["params"].as_object().unwrap().len(), 1, "nothing beyond _meta: {probe}");
    // A modern answer: -32022 listing only versions mcpx does not speak: no
    // initialize (no fallback), the upstream counts as failed.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": probe["id"], "error": { "code": -32022, "message": "Unsupported protocol version", "data": { "supported": ["2027-01-01"], "requested": MODERN } } }));
    assert!(p.drain_up(0).iter().all(|m| m["method"] != "initialize"));
    assert_eq!(p.restarts, vec![(0, "no common protocol revision")]);
    // Listing a legacy revision: initialize with exactly that one.
    p.hub.handle(Input::UpstreamExited { up: 0, reason: "killed", stderr_tail: "", next: Next::Now }, p.now);
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    let probe = p.take_up(0);
    assert_eq!(probe["method"], "server/discover");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": probe["id"], "error": { "code": -32022, "message": "Unsupported protocol version", "data": { "supported": ["2027-01-01", "2025-06-18"], "requested": MODERN } } }));
    let init = p.take_up(0);
    assert_eq!((init["method"].clone(), init["params"]["protocolVersion"].clone()), (json!("initialize"), json!("2025-06-18")));
}

// ---------------------------------------------------------------- caching

// covers: caching-key-method-params, caching-no-cache-mrtr-retries, caching-ttl-not-poll
#[test]
fn only_unchanged_list_requests_are_cached_and_ttls_are_not_polled() {
    let mut f = modern_fake(&["a"]);
    f.caps = json!({ "tools": {}, "resources": {} });
    let mut p = Pair::with(vec![("m", f)], HubOptions::default());
    p.drain_up(0);
    let c = p.client("2025-11-25", json!({ "elicitation": {} }));
    // The same call twice: the upstream sees both (calls are never cached).
    for id in [1, 2] {
        p.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": "m__a", "arguments": { "k": 1 } } }));
        let up = p.take_up(0);
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "resultType": "complete", "content": [], "ttlMs": 60000, "cacheScope": "public" } }));
        p.take(c);
    }
    // A read with other parameters is sent, not answered from the copy of another read.
    for (id, uri) in [(3, "m+file:///a.txt"), (4, "m+file:///a.txt"), (5, "m+file:///b.txt")] {
        p.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": "resources/read", "params": { "uri": uri } }));
        let up = p.take_up(0);
        assert_eq!(up["method"], "resources/read");
        let sent = up["params"]["uri"].as_str().unwrap().to_string();
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "resultType": "complete", "contents": [{ "uri": sent, "text": sent }], "ttlMs": 60000, "cacheScope": "public" } }));
        let r = p.take(c);
        assert_eq!(r["result"]["contents"][0]["text"], sent, "{r}");
    }
    // An MRTR round: the retry goes upstream too.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": { "name": "m__a", "arguments": {} } }));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "resultType": "input_required", "inputRequests": { "q": { "method": "elicitation/create", "params": { "mode": "form", "message": "?", "requestedSchema": { "type": "object", "properties": {} } } } }, "requestState": "s1" } }));
    let el = p.take(c);
    assert_eq!(el["method"], "elicitation/create", "{el}");
    p.send(c, json!({ "jsonrpc": "2.0", "id": el["id"], "result": { "action": "accept", "content": {} } }));
    let retry = p.take_up(0);
    assert_eq!(retry["params"]["requestState"], "s1", "{retry}");
    assert_ne!(retry["id"], up["id"]);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": retry["id"], "result": { "resultType": "complete", "content": [] } }));
    p.take(c);
    // Time passes far beyond every TTL with nobody asking: the hub does not poll.
    p.drain_up(0);
    for _ in 0..10 {
        p.advance(60_000);
    }
    let polled: Vec<Value> = p.drain_up(0).into_iter().filter(|m| m["method"].as_str().is_some_and(|x| x.ends_with("/list"))).collect();
    assert!(polled.is_empty(), "{polled:?}");
}

// covers: caching-ttl-non-negative, caching-page-same-scope
#[test]
fn every_page_of_a_list_has_the_same_scope_and_a_non_negative_ttl() {
    let mut a = modern_fake(&["a", "b", "c", "d", "e"]);
    a.page = 2;
    let b = Fake::tools(&["f", "g"]);
    let mut p = Pair::with(vec![("m", a), ("fs", b)], HubOptions { page_size: 2, ..HubOptions::default() });
    let c = p.connect();
    let mut cursor: Option<String> = None;
    let mut scopes = HashSet::new();
    let mut pages = 0;
    loop {
        let mut params = json!({});
        if let Some(cu) = &cursor {
            params["cursor"] = json!(cu);
        }
        p.mcall(c, json!(pages), "tools/list", params, json!({}));
        let r = p.take(c);
        let res = &r["result"];
        assert!(res["ttlMs"].as_i64().is_some_and(|t| t >= 0), "{r}");
        scopes.insert(res["cacheScope"].as_str().expect("a scope").to_string());
        pages += 1;
        match res["nextCursor"].as_str() {
            Some(cu) => cursor = Some(cu.to_string()),
            None => break,
        }
        assert!(pages < 20);
    }
    assert!(pages >= 3, "{pages}");
    assert_eq!(scopes.len(), 1, "{scopes:?}");
    let r = {
        p.mcall(c, json!("d"), "server/discover", json!({}), json!({}));
        p.take(c)
    };
    assert!(r["result"]["ttlMs"].as_i64().is_some_and(|t| t >= 0), "{r}");
}

// covers: meta-otel-keys-w3c-format
#[test]
fn trace_context_keys_travel_unchanged_in_both_eras() {
    let otel = json!({
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "tracestate": "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
        "baggage": "userId=alice,serverNode=DF%2028,isProduction=false",
    });
    let mut p = Pair::with(vec![("m", modern_fake(&["a"])), ("fs", Fake::tools(&["b"]))], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    let d = p.connect();
    for (who, name, u) in [(c, "m__a", 0), (c, "fs__b", 1), (d, "m__a", 0), (d, "fs__b", 1)] {
        let mut params = json!({ "name": name, "arguments": {}, "_meta": otel.clone() });
        if who == d {
            let m = mmeta(json!({}), json!({}))["_meta"].clone();
            for (k, v) in m.as_object().unwrap() {
                params["_meta"][k] = v.clone();
            }
        }
        p.send(who, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params }));
        let up = p.take_up(u);
        for k in ["traceparent", "tracestate", "baggage"] {
            assert_eq!(up["params"]["_meta"][k], otel[k], "{name}: {k}");
        }
        p.upstream_says(u, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
        assert!(p.take(who).get("result").is_some());
    }
    // The hub itself never writes these keys.
    let l = p.client("2025-06-18", json!({}));
    p.send(l, json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "fs__b", "arguments": {} } }));
    let up = p.take_up(1);
    for k in ["traceparent", "tracestate", "baggage"] {
        assert!(up.pointer(&format!("/params/_meta/{k}")).is_none(), "{up}");
    }
}

// covers: messages-resulttype-extension-values
#[test]
fn result_types_are_the_core_set_unless_an_extension_was_advertised() {
    let mut p = Pair::with(vec![("m", modern_fake(&["a"]))], HubOptions::default());
    let c = p.connect();
    // mcpx advertises no extension: discover names none.
    p.mcall(c, json!(0), "server/discover", json!({}), json!({}));
    let d = p.take(c);
    assert!(d["result"]["capabilities"].get("extensions").is_none(), "{d}");
    for (i, rt) in ["task", "deferred", "complete", "input_required"].iter().enumerate() {
        p.mcall(c, json!(i + 1), "tools/call", json!({ "name": "m__a", "arguments": {} }), json!({ "elicitation": { "form": {} } }));
        let up = p.take_up(0);
        let mut res = json!({ "resultType": rt, "content": [] });
        if *rt == "input_required" {
            res = json!({ "resultType": rt, "inputRequests": { "q": { "method": "elicitation/create", "params": { "mode": "form", "message": "?", "requestedSchema": { "type": "object", "properties": {} } } } }, "requestState": "s" });
        }
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": res }));
        let r = p.take(c);
        match *rt {
            "complete" | "input_required" => assert_eq!(r["result"]["resultType"], *rt, "{r}"),
            _ => assert_eq!(err_code(&r), -32603, "{rt} is no core value and no advertised extension's: {r}"),
        }
    }
}

// covers: streamable-http-x-mcp-header-constraints
#[test]
fn tools_served_to_modern_clients_keep_only_valid_x_mcp_header_annotations() {
    let mut f = modern_fake(&[]);
    let prop = |name: &str, ty: &str, h: &str| json!({ "name": name, "inputSchema": { "type": "object", "properties": { "a": { "type": ty, "x-mcp-header": h } } } });
    f.tools = vec![
        prop("ok", "string", "Region"),
        prop("empty", "string", ""),
        prop("space", "string", "Bad Header"),
        prop("number", "number", "N"),
        prop("object", "object", "Obj"),
        json!({ "name": "dup", "inputSchema": { "type": "object", "properties": { "a": { "type": "string", "x-mcp-header": "Zone" }, "b": { "type": "string", "x-mcp-header": "zone" } } } }),
        json!({ "name": "nested", "inputSchema": { "type": "object", "properties": { "a": { "type": "array", "items": { "type": "string", "x-mcp-header": "Item" } } } } }),
    ];
    let mut p = Pair::with(vec![("m", f)], HubOptions::default());
    let c = p.connect();
    p.mcall(c, json!(1), "tools/list", json!({}), json!({}));
    let r = p.take(c);
    let names: Vec<&str> = r["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["m__ok"], "{r}");
    assert_eq!(r["result"]["tools"][0]["inputSchema"]["properties"]["a"]["x-mcp-header"], "Region");
    for t in r["result"]["tools"].as_array().unwrap() {
        let raw = serde_json::to_vec(&t["inputSchema"]).unwrap();
        assert!(mcpx_core::headers::validate_input_schema(&raw).is_ok(), "{t}");
    }
}

// ---------------------------------------------------------------- SHOULD / MAY rows

// covers: messages-result-any-object, errors-data-may
#[test]
fn any_result_object_and_any_error_data_pass_through() {
    let (mut p, c) = one("2025-11-25", json!({}));
    let odd = json!({ "content": [], "vendor": { "deep": [1, { "x": null }] }, "n": 3.5, "_meta": { "com.example/k": [true] } });
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": odd }));
    let r = p.take(c);
    for k in ["vendor", "n", "_meta"] {
        assert_eq!(r["result"][k], odd[k], "{k}: {r}");
    }
    for data in [json!("text"), json!(42), json!([1, 2]), json!({ "why": { "nested": true } }), Value::Null] {
        p.send(c, json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "fs__read" } }));
        let up = p.take_up(0);
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "error": { "code": -32603, "message": "failed", "data": data } }));
        let e = p.take(c);
        assert_eq!(e["error"]["data"], data, "{e}");
    }
}

// covers: errors-client-accept-32002-from-legacy
#[test]
fn a_legacy_upstreams_32002_is_accepted() {
    let mut f = Fake::tools(&[]);
    f.caps = json!({ "resources": {} });
    f.resources = vec![json!({ "uri": "file:///a", "name": "a" })];
    let mut p = Pair::with(vec![("fs", f)], HubOptions::default());
    let c = p.client("2025-06-18", json!({}));
    let uri = p.list_all(c, "resources/list", "resources")[0]["uri"].as_str().unwrap().to_string();
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": { "uri": uri } }));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "error": { "code": -32002, "message": "Resource not found", "data": { "uri": "file:///a" } } }));
    let e = p.take(c);
    assert_eq!((e["id"].clone(), err_code(&e)), (json!(1), -32002), "{e}");
    assert!(p.restarts.is_empty());
    // The upstream stays in service.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": { "uri": uri } }));
    assert_eq!(p.take_up(0)["method"], "resources/read");
}

// covers: lifecycle-client-no-requests-before-init-response
#[test]
fn nothing_but_initialize_before_the_upstream_answers_it() {
    let mut p = Pair::new(legacy_specs(&["fs"]), HubOptions::default());
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    let c = p.connect();
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {} }));
    p.advance(100);
    let sent = p.drain_up(0);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["method"], "initialize");
    // Answered: initialized first, then the hub's own requests.
    let f = Fake::tools(&["read"]);
    let ans = f.answer(&sent[0]).unwrap().unwrap();
    p.upstream_says(0, ans);
    let after = p.drain_up(0);
    assert_eq!(after[0]["method"], "notifications/initialized", "{after:?}");
    assert!(after.iter().skip(1).any(|m| m["method"] == "tools/list"), "{after:?}");
}

// covers: caching-ttl-zero-stale, caching-ttl-negative-zero, caching-ttl-absent-zero
#[test]
fn zero_negative_and_absent_ttls_are_stale_at_once() {
    for ttl in [Some(0), Some(-5), None] {
        let mut f = modern_fake(&["a"]);
        f.caps = json!({ "tools": {} });
        let mut p = Pair::with(vec![("m", f)], HubOptions::default());
        let c = p.client("2025-11-25", json!({}));
        // Re-list by hand with the TTL under test.
        p.fakes[0] = None;
        p.hub.handle(Input::Relist(0), p.now);
        p.pump();
        let l = p.take_up(0);
        assert_eq!(l["method"], "tools/list");
        let mut res = json!({ "resultType": "complete", "tools": [tool("a")], "cacheScope": "public" });
        if let Some(t) = ttl {
            res["ttlMs"] = json!(t);
        }
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": l["id"], "result": res }));
        p.drain_cl(c);
        p.advance(1);
        // The next read of the list looks again.
        p.request(c, json!("l"), "tools/list", json!({}));
        let again = p.drain_up(0);
        assert!(again.iter().any(|m| m["method"] == "tools/list"), "ttl {ttl:?}: {again:?}");
    }
}

// covers: lifecycle-server-no-requests-before-initialized
#[test]
fn no_requests_to_a_client_before_its_initialized_notification() {
    let (mut p, _) = one("2025-11-25", json!({}));
    let c = p.connect();
    let init = p.request(c, json!(0), "initialize", json!({ "protocolVersion": "2025-11-25", "capabilities": { "sampling": {}, "roots": {}, "elicitation": {} }, "clientInfo": { "name": "t", "version": "1" } }));
    assert!(init.get("result").is_some());
    // A call before notifications/initialized; the upstream asks for sampling.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
    let call = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "s", "method": "sampling/createMessage", "params": { "messages": [], "maxTokens": 5 } }));
    p.advance(1000);
    let got = p.drain_cl(c);
    assert!(got.iter().all(|(m, _)| m.get("method").is_none() || m.get("id").is_none() || m["method"] == "ping"), "{got:?}");
    // The notification releases the held request; the call completes.
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    let s = p.take(c);
    assert_eq!(s["method"], "sampling/createMessage", "{s}");
    p.send(c, json!({ "jsonrpc": "2.0", "id": s["id"], "result": { "role": "assistant", "content": { "type": "text", "text": "x" }, "model": "m" } }));
    assert_eq!(p.take_up(0)["id"], "s");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [] } }));
    assert_eq!(p.take(c)["id"], 1);
}

// covers: meta-info-not-for-behavior-or-security
#[test]
fn client_info_changes_nothing() {
    let mut p = Pair::with(vec![("m", modern_fake(&["a"])), ("fs", Fake::tools(&["b"]))], HubOptions::default());
    let c = p.connect();
    let mut seen = vec![];
    for (i, info) in [json!({ "name": "rows", "version": "1" }), json!({ "name": "admin", "version": "999" }), json!({ "name": "mcpx", "version": "0" })].into_iter().enumerate() {
        let mut params = mmeta(json!({}), json!({}));
        params["_meta"]["io.modelcontextprotocol/clientInfo"] = info;
        p.send(c, json!({ "jsonrpc": "2.0", "id": i, "method": "tools/list", "params": params }));
        let r = p.take(c);
        seen.push((r["result"]["tools"].clone(), r["result"]["cacheScope"].clone(), r["result"]["ttlMs"].clone()));
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
}

// covers: lifecycle-stateless-multiple-conversations
#[test]
fn interleaved_conversations_on_one_connection_stay_apart() {
    let mut f = Fake::tools(&["ask"]);
    f.caps = json!({ "tools": {} });
    let mut p = Pair::with(vec![("fs", f)], HubOptions::default());
    let c = p.connect();
    let caps = json!({ "elicitation": { "form": {} } });
    let mut parked = vec![];
    for (id, q) in [(1, "first"), (2, "second")] {
        p.mcall(c, json!(id), "tools/call", json!({ "name": "fs__ask", "arguments": { "q": q } }), caps.clone());
        let call = p.take_up(0);
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": format!("e-{q}"), "method": "elicitation/create", "params": { "mode": "form", "message": q, "requestedSchema": { "type": "object", "properties": {} } } }));
        let irr = p.take(c);
        let (key, req) = irr["result"]["inputRequests"].as_object().unwrap().iter().next().map(|(k, v)| (k.clone(), v.clone())).unwrap();
        assert!(req["params"]["message"].as_str().unwrap().ends_with(q));
        parked.push((call, key, irr["result"]["requestState"].as_str().unwrap().to_string(), q));
    }
    // Retries in the other order: each answer reaches its own upstream request.
    for (n, (call, key, state, q)) in parked.into_iter().rev().enumerate() {
        p.mcall(c, json!(10 + n), "tools/call", json!({ "name": "fs__ask", "arguments": { "q": q }, "inputResponses": { key: { "action": "accept", "content": { "who": q } } }, "requestState": state }), caps.clone());
        let ans = p.take_up(0);
        assert_eq!((ans["id"].clone(), ans["result"]["content"]["who"].clone()), (json!(format!("e-{q}")), json!(q)));
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [{ "type": "text", "text": q }] } }));
        let fin = p.take(c);
        assert_eq!((fin["id"].clone(), fin["result"]["content"][0]["text"].clone()), (json!(10 + n), json!(q)));
    }
}

// An UnsupportedProtocolVersionError whose `supported` names 2026-07-28 is
// answered by one more probe with that version, not by initialize; a second
// such error in the same start falls back to the listed legacy revision.
// covers: versioning-client-retry-with-supported
#[test]
fn a_32022_naming_the_modern_version_is_retried_once() {
    let mut p = Pair::new(specs(&["m"]), HubOptions::default());
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    let refuse = |p: &mut Pair, id: &Value| {
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32022, "message": "Unsupported protocol version", "data": { "supported": [MODERN, "2025-06-18"], "requested": MODERN } } }));
    };
    let probe = p.take_up(0);
    assert_eq!(probe["method"], "server/discover");
    refuse(&mut p, &probe["id"]);
    let retry = p.take_up(0);
    assert_eq!(retry["method"], "server/discover", "{retry}");
    assert_ne!(retry["id"], probe["id"], "a retry is a new request");
    assert_eq!(retry["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], MODERN);
    refuse(&mut p, &retry["id"]);
    let init = p.take_up(0);
    assert_eq!((init["method"].clone(), init["params"]["protocolVersion"].clone()), (json!("initialize"), json!("2025-06-18")));
}
