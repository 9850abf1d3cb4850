//! Pair tests of the modern era (2026-07-28): mcpx as a dual-era server, as
//! a dual-era client of its upstreams, and the translation between eras.
//! Every message a modern client gets is validated against the 2026-07-28
//! schema.json; requirement rows are named in `// covers:` comments.

use serde_json::{json, Value};

use super::*;

const MODERN: &str = "2026-07-28";

/// Capabilities a modern client declares for one request.
fn full_caps() -> Value {
    json!({ "elicitation": { "form": {} }, "sampling": {}, "roots": {} })
}

fn meta(caps: &Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": { "name": "modern-test", "version": "1" },
    })
}

/// `params` with the per-request `_meta` of a modern client merged in.
pub(super) fn with_meta(mut params: Value, caps: &Value) -> Value {
    let m = meta(caps);
    let o = params.as_object_mut().expect("params object");
    let e = o.entry("_meta").or_insert_with(|| json!({}));
    for (k, v) in m.as_object().unwrap() {
        e[k] = v.clone();
    }
    params
}

/// Validates a message a modern client got against the 2026-07-28 schema:
/// `def` for results (e.g. `CallToolResultResponse`), errors and
/// notifications by their generic definitions.
fn check(v: &Value, def: &str) {
    if v.get("error").is_some() {
        schema_check(MODERN, "JSONRPCErrorResponse", v);
    } else if v.get("id").is_none() {
        schema_check(MODERN, "ServerNotification", v);
    } else {
        schema_check(MODERN, "JSONRPCResultResponse", v);
        schema_check(MODERN, def, v);
        let info = &v["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
        assert_eq!(info["name"], "mcpx", "serverInfo on every modern result: {v}");
        assert!(v["result"]["resultType"].is_string(), "{v}");
    }
}

impl Fake {
    pub(super) fn modern(names: &[&str]) -> Fake {
        let mut f = Fake::tools(names);
        f.rev = MODERN;
        f.caps = json!({ "tools": { "listChanged": true }, "prompts": { "listChanged": true }, "resources": { "subscribe": true, "listChanged": true } });
        f
    }
}

impl Pair {
    /// A modern request (id, method, params without `_meta`, capabilities);
    /// returns the next message the client got.
    pub(super) fn mreq(&mut self, c: ClientId, id: Value, method: &str, params: Value, caps: &Value) -> Value {
        self.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": with_meta(params, caps) }));
        self.take(c)
    }

    pub(super) fn msend(&mut self, c: ClientId, id: Value, method: &str, params: Value, caps: &Value) {
        self.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": with_meta(params, caps) }));
    }
}

/// A hub with one legacy upstream `fs` (tools `ask`, `read`) and a client
/// connection that has said nothing yet.
fn legacy_up() -> (Pair, ClientId) {
    let mut f = Fake::tools(&["ask", "read"]);
    f.caps = json!({ "tools": { "listChanged": true }, "prompts": {}, "resources": { "subscribe": true }, "logging": {} });
    f.prompts = vec![json!({ "name": "greet" })];
    f.resources = vec![json!({ "uri": "file:///a.txt", "name": "a" })];
    let mut p = Pair::with(vec![("fs", f)], HubOptions::default());
    let c = p.connect();
    (p, c)
}

/// A hub with one modern upstream `m` (tools `ask`, `read`).
fn modern_up() -> (Pair, ClientId) {
    let mut f = Fake::modern(&["ask", "read"]);
    f.prompts = vec![json!({ "name": "greet" })];
    f.resources = vec![json!({ "uri": "file:///a.txt", "name": "a" })];
    let mut p = Pair::with(vec![("m", f)], HubOptions::default());
    let c = p.connect();
    (p, c)
}

// ---------------------------------------------------------------- server side

// covers: versioning-server-must-implement-discover, discover-supportedversions, discover-capabilities
// covers: discover-serverinfo-in-meta, discover-cacheable, discover-resulttype, discover-instructions-optional
// covers: meta-server-should-send-serverinfo
#[test]
fn discover_answers_versions_capabilities_and_hints() {
    let (mut p, c) = legacy_up();
    let r = p.mreq(c, json!(1), "server/discover", json!({}), &json!({}));
    check(&r, "DiscoverResultResponse");
    let res = &r["result"];
    assert_eq!(res["supportedVersions"], json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]));
    assert_eq!(res["resultType"], "complete");
    assert_eq!(res["capabilities"]["tools"], json!({ "listChanged": true }));
    assert!(res["capabilities"].get("tasks").is_none() && res["capabilities"].get("extensions").is_none());
    assert_eq!(res["ttlMs"], 60_000);
    assert_eq!(res["cacheScope"], "private");
    assert!(res.get("serverInfo").is_none(), "serverInfo lives in _meta");
    assert_eq!(p.hub.clients().revision(c), None, "no session for a modern client");
    assert!(p.hub.clients().is_modern(c));
}

// covers: meta-server-rejects-missing-required-field, meta-request-params-meta-required, meta-request-required-fields
// covers: versioning-server-unsupported-version-error
#[test]
fn per_request_meta_is_validated() {
    let (mut p, c) = legacy_up();
    let r = p.request(c, json!(101), "server/discover", json!({}));
    assert_eq!((err_code(&r), r["id"].clone()), (-32602, json!(101)));
    check(&r, "");
    let r = p.request(c, json!(102), "server/discover", json!({ "_meta": { "io.modelcontextprotocol/clientCapabilities": {} } }));
    assert_eq!(err_code(&r), -32602);
    let r = p.request(c, json!(104), "tools/list", json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": MODERN } }));
    assert_eq!(err_code(&r), -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("clientCapabilities"));
    let r = p.request(c, json!(105), "server/discover", json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } }));
    assert!(r.get("result").is_some(), "clientInfo is optional: {r}");
    let r = p.request(c, json!(301), "server/discover", json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": "v999.0.0", "io.modelcontextprotocol/clientCapabilities": {} } }));
    schema_check(MODERN, "UnsupportedProtocolVersionError", &r);
    assert_eq!(err_code(&r), -32022);
    assert_eq!(r["error"]["data"]["requested"], "v999.0.0");
    assert_eq!(r["error"]["data"]["supported"][0], MODERN);
    assert_eq!(r["id"], 301);
    // A client that went modern stays modern: a request without _meta is refused.
    let r = p.request(c, json!(5), "tools/list", json!({}));
    assert_eq!(err_code(&r), -32602);
    // Bad log level.
    let mut m = with_meta(json!({}), &json!({}));
    m["_meta"]["io.modelcontextprotocol/logLevel"] = json!("loud");
    let r = p.request(c, json!(6), "tools/list", m);
    assert_eq!(err_code(&r), -32602);
    assert!(p.up_quiet(0));
}

// covers: versioning-dual-era-server-selects-by-opening, versioning-dual-era-server-may, versioning-dual-era-both-concurrently
#[test]
fn legacy_only_methods_are_not_found_for_modern_requests_and_both_eras_are_served() {
    let (mut p, c) = legacy_up();
    for (i, method) in ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "unknown/method"].iter().enumerate() {
        let r = p.mreq(c, json!(500 + i), method, json!({ "uri": "file:///a.txt", "level": "info", "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "x", "version": "1" } }), &json!({}));
        assert_eq!(err_code(&r), -32601, "{method}: {r}");
        assert_eq!(r["id"], 500 + i);
        check(&r, "");
    }
    assert!(p.up_quiet(0));
    // A legacy client on another connection at the same time.
    let l = p.client("2025-06-18", json!({}));
    assert_eq!(p.hub.clients().revision(l), Some("2025-06-18"));
    assert_eq!(p.request(l, json!(1), "ping", json!({}))["result"], json!({}));
    let r = p.request(l, json!(2), "tools/list", json!({}));
    assert!(r["result"].get("resultType").is_none() && r["result"].get("ttlMs").is_none(), "{r}");
    let r = p.mreq(c, json!(3), "tools/list", json!({}), &json!({}));
    check(&r, "ListToolsResultResponse");
}

// covers: caching-server-must-hint, messages-resulttype-server-must-include, messages-resulttype-required, cache-ttl-scope-required
#[test]
fn lists_and_reads_carry_caching_hints_and_result_type() {
    let (mut p, c) = legacy_up();
    for (m, def) in [("tools/list", "ListToolsResultResponse"), ("prompts/list", "ListPromptsResultResponse"), ("resources/list", "ListResourcesResultResponse"), ("resources/templates/list", "ListResourceTemplatesResultResponse")] {
        let r = p.mreq(c, json!(m), m, json!({}), &json!({}));
        check(&r, def);
        assert_eq!((r["result"]["ttlMs"].clone(), r["result"]["cacheScope"].clone()), (json!(60_000), json!("private")), "{r}");
    }
    p.msend(c, json!(9), "resources/read", json!({ "uri": "file:///a.txt" }), &json!({}));
    let up = p.take_up(0);
    assert_eq!(up["method"], "resources/read");
    assert!(up["params"]["_meta"].get("io.modelcontextprotocol/protocolVersion").is_none(), "modern keys stay at mcpx: {up}");
    schema_check("2025-11-25", "ReadResourceRequest", &up);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "contents": [{ "uri": "file:///a.txt", "text": "hi" }] } }));
    let r = p.take(c);
    check(&r, "ReadResourceResultResponse");
    // A read of a server without hints is not cacheable, whatever cacheTtlMs says.
    assert_eq!((r["result"]["ttlMs"].clone(), r["result"]["cacheScope"].clone()), (json!(0), json!("private")), "{r}");
    // An unknown resource is -32602 with the URI (not the legacy -32002).
    p.msend(c, json!(10), "resources/read", json!({ "uri": "nope://x" }), &json!({}));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "error": { "code": -32002, "message": "Resource not found", "data": { "uri": "nope://x" } } }));
    let r = p.take(c);
    assert_eq!(err_code(&r), -32602);
    assert_eq!(r["error"]["data"]["uri"], "nope://x");
    check(&r, "");
}

// covers: caching-public-shareable, caching-private-no-cross-auth
#[test]
fn hints_aggregate_the_smallest_ttl_and_private_unless_all_public() {
    let a = Fake::modern(&["x"]); // lists with ttlMs 5000, public
    let mut p = Pair::with(vec![("a", a.clone()), ("b", a)], HubOptions { cache_ttl_ms: 90_000, cache_public: true, ..HubOptions::default() });
    let c = p.connect();
    let r = p.mreq(c, json!(1), "tools/list", json!({}), &json!({}));
    assert_eq!((r["result"]["ttlMs"].clone(), r["result"]["cacheScope"].clone()), (json!(5000), json!("public")));
    // A legacy upstream counts with the configured default; private makes all private.
    let mut p = Pair::with(vec![("a", Fake::modern(&["x"])), ("b", Fake::tools(&["y"]))], HubOptions { cache_ttl_ms: 1000, ..HubOptions::default() });
    let c = p.connect();
    let r = p.mreq(c, json!(1), "tools/list", json!({}), &json!({}));
    assert_eq!((r["result"]["ttlMs"].clone(), r["result"]["cacheScope"].clone()), (json!(1000), json!("private")));
}

// covers: meta-server-no-infer-caps-from-prior, mrtr-only-declared-capabilities, meta-server-no-undeclared-client-capabilities
// covers: errors-missing-required-client-capability
#[test]
fn capabilities_are_read_per_request() {
    let (mut p, c) = legacy_up();
    // First request declares elicitation: the upstream's request becomes input.
    p.msend(c, json!(1), "tools/call", json!({ "name": "fs__ask", "arguments": {} }), &full_caps());
    let call = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": elicit_params() }));
    let r = p.take(c);
    assert_eq!(r["result"]["resultType"], "input_required");
    // Second request declares nothing: the upstream's request is refused, the
    // call cancelled, and the client told which capability the call needs.
    p.msend(c, json!(2), "tools/call", json!({ "name": "fs__ask", "arguments": { "n": 2 } }), &json!({}));
    let call2 = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "e2", "method": "elicitation/create", "params": elicit_params() }));
    let refused = p.take_up(0);
    assert_eq!(refused["id"], "e2");
    assert_eq!(err_code(&refused), -32601);
    let cancel = p.take_up(0);
    assert_eq!((cancel["method"].clone(), cancel["params"]["requestId"].clone()), (json!("notifications/cancelled"), call2["id"].clone()));
    let r = p.take(c);
    schema_check(MODERN, "MissingRequiredClientCapabilityError", &r);
    assert_eq!((r["id"].clone(), err_code(&r)), (json!(2), -32021));
    assert_eq!(r["error"]["data"]["requiredCapabilities"], json!({ "elicitation": {} }));
    assert_ne!(call["id"], call2["id"]);
}

// covers: logging-no-message-without-loglevel, logging-request-scoped-only
#[test]
fn log_messages_follow_each_requests_log_level() {
    let (mut p, c) = legacy_up();
    let d = p.connect();
    p.msend(c, json!(1), "tools/call", json!({ "name": "fs__read", "arguments": {} }), &json!({}));
    let mut m = with_meta(json!({ "name": "fs__read", "arguments": { "x": 1 } }), &json!({}));
    m["_meta"]["io.modelcontextprotocol/logLevel"] = json!("warning");
    p.send(d, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": m }));
    let a = p.take_up(0);
    // The legacy upstream's level is lowered so the request's messages are sent at all.
    let set = p.take_up(0);
    assert_eq!((set["method"].clone(), set["params"]["level"].clone()), (json!("logging/setLevel"), json!("warning")));
    let b = p.take_up(0);
    for level in ["info", "error"] {
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": { "level": level, "data": level } }));
    }
    assert!(p.client_quiet(c), "no logLevel: no log messages");
    let n = p.take(d);
    assert_eq!((n["method"].clone(), n["params"]["level"].clone()), (json!("notifications/message"), json!("error")));
    check(&n, "");
    assert!(p.client_quiet(d), "info is below warning");
    for (x, cl) in [(a, c), (b, d)] {
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": x["id"], "result": { "content": [] } }));
        check(&p.take(cl), "CallToolResultResponse");
    }
}

// covers: subscriptions-multiple-concurrent, subscriptions-ack-first-with-id, subscriptions-ack-reports-agreed-subset
// covers: subscriptions-only-requested-types, subscriptions-tag-every-notification, meta-subscription-id-on-listen-notifications
// covers: subscriptions-list-changed-via-listen, subscriptions-server-teardown-respond, subscriptions-listen-result-meta
// covers: cancellation-server-must-send-cancelled-on-listen-teardown, cancellation-server-only-for-listen
#[test]
fn listen_streams_are_acknowledged_tagged_filtered_and_ended() {
    let (mut p, c) = legacy_up();
    p.msend(c, json!(7), "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true, "promptsListChanged": true, "unknownKind": true } }), &json!({}));
    let ack = p.take(c);
    check(&ack, "");
    schema_check(MODERN, "SubscriptionsAcknowledgedNotification", &ack);
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
    assert_eq!(ack["params"]["notifications"], json!({ "toolsListChanged": true, "promptsListChanged": true }));
    p.msend(c, json!("r"), "subscriptions/listen", json!({ "notifications": { "resourcesListChanged": true, "resourceSubscriptions": ["file:///a.txt"] } }), &json!({}));
    let ack = p.take(c);
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "r");
    assert_eq!(ack["params"]["notifications"], json!({ "resourcesListChanged": true, "resourceSubscriptions": ["file:///a.txt"] }));
    // The legacy upstream is subscribed for the listen stream.
    let sub = p.take_up(0);
    assert_eq!((sub["method"].clone(), sub["params"]["uri"].clone()), (json!("resources/subscribe"), json!("file:///a.txt")));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": sub["id"], "result": {} }));
    // A tool change reaches stream 7 only, tagged.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    p.fakes[0].as_mut().unwrap().tools.push(tool("new"));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    let n = p.take(c);
    check(&n, "");
    assert_eq!(n["method"], "notifications/tools/list_changed");
    assert_eq!(n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
    assert!(p.client_quiet(c), "once, to the stream that asked");
    // A resource update reaches stream "r" only, tagged.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": "file:///a.txt" } }));
    let n = p.take(c);
    check(&n, "");
    assert_eq!(n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "r");
    assert!(p.client_quiet(c));
    // The client ends stream "r": the upstream is unsubscribed, nothing answered.
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "r" } }));
    assert_eq!(p.take_up(0)["method"], "resources/unsubscribe");
    assert!(p.client_quiet(c));
    // Shutdown ends stream 7 gracefully: a result with the subscription id, then the cancellation.
    p.hub.handle(Input::Shutdown, p.now);
    p.pump();
    let end = p.take(c);
    check(&end, "SubscriptionsListenResultResponse");
    assert_eq!((end["id"].clone(), end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone()), (json!(7), json!(7)));
    let n = p.take(c);
    assert_eq!((n["method"].clone(), n["params"]["requestId"].clone()), (json!("notifications/cancelled"), json!(7)));
    check(&n, "");
    assert!(p.client_quiet(c));
}

// covers: subscriptions-stdio-resubscribe
#[test]
fn listen_limits_and_duplicates() {
    let (mut p, c) = legacy_up();
    let r = p.mreq(c, json!(1), "subscriptions/listen", json!({}), &json!({}));
    assert_eq!(err_code(&r), -32602);
    p.msend(c, json!(2), "subscriptions/listen", json!({ "notifications": {} }), &json!({}));
    p.take(c);
    let r = p.mreq(c, json!(2), "subscriptions/listen", json!({ "notifications": {} }), &json!({}));
    assert_eq!(err_code(&r), -32600);
    // State dies with the connection.
    p.hub.handle(Input::ClientDisconnected(c), p.now);
    p.pump();
    assert_eq!(p.hub.status()["clients"].as_array().unwrap().len(), 0);
}

// ---------------------------------------------------------------- MRTR as server

fn elicit_params() -> Value {
    json!({ "mode": "form", "message": "Your name?", "requestedSchema": { "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] } })
}

fn sampling_params() -> Value {
    json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "Capital of France?" } }], "maxTokens": 100 })
}

fn answer_for(method: &str) -> Value {
    match method {
        "elicitation/create" => json!({ "action": "accept", "content": { "name": "Alice" } }),
        "sampling/createMessage" => json!({ "role": "assistant", "content": { "type": "text", "text": "Paris" }, "model": "m", "stopReason": "endTurn" }),
        _ => json!({ "roots": [{ "uri": "file:///r", "name": "r" }] }),
    }
}

fn params_for(method: &str) -> Value {
    match method {
        "elicitation/create" => elicit_params(),
        "sampling/createMessage" => sampling_params(),
        _ => json!({}),
    }
}

const INPUTS: [&str; 3] = ["elicitation/create", "sampling/createMessage", "roots/list"];

/// A modern client's `tools/call fs__ask` that the legacy upstream answers
/// with a request for input: returns (the upstream call, the client's
/// InputRequiredResult).
fn parked(p: &mut Pair, c: ClientId, method: &str) -> (Value, Value) {
    p.msend(c, json!(1), "tools/call", json!({ "name": "fs__ask", "arguments": { "q": 1 } }), &full_caps());
    let call = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "in-1", "method": method, "params": params_for(method) }));
    let irr = p.take(c);
    (call, irr)
}

// covers: mrtr-server-requests-via-mrtr, messages-servers-must-not-initiate-requests, mrtr-inputrequests-keys-values
// covers: mrtr-at-least-one-field, caching-input-required-no-hints, mrtr-supported-requests-only
#[test]
fn modern_client_legacy_upstream_round_trips() {
    for method in INPUTS {
        let (mut p, c) = legacy_up();
        let (call, irr) = parked(&mut p, c, method);
        check(&irr, "CallToolResultResponse");
        schema_check(MODERN, "InputRequiredResult", &irr["result"]);
        let res = &irr["result"];
        assert_eq!(res["resultType"], "input_required");
        assert!(res.get("ttlMs").is_none() && res.get("cacheScope").is_none());
        let reqs = res["inputRequests"].as_object().unwrap();
        assert_eq!(reqs.len(), 1);
        let (key, req) = reqs.iter().next().unwrap();
        assert_eq!(key, "fs-1");
        assert_eq!(req["method"], method);
        if method == "elicitation/create" {
            assert_eq!(req["params"]["message"], "[fs] Your name?");
        }
        let state = res["requestState"].as_str().unwrap().to_string();
        assert!(p.up_quiet(0), "the upstream waits");
        // The retry, with a new id.
        p.msend(c, json!(2), "tools/call", json!({ "name": "fs__ask", "arguments": { "q": 1 }, "inputResponses": { key.clone(): answer_for(method) }, "requestState": state }), &full_caps());
        let ans = p.take_up(0);
        assert_eq!(ans["id"], "in-1");
        assert_eq!(ans["result"], answer_for(method));
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [{ "type": "text", "text": "done" }] } }));
        let fin = p.take(c);
        check(&fin, "CallToolResultResponse");
        assert_eq!((fin["id"].clone(), fin["result"]["resultType"].clone()), (json!(2), json!("complete")));
        assert!(p.client_quiet(c));
    }
}

// covers: mrtr-no-assume-retry, mrtr-server-reask-missing-rather-than-error, mrtr-server-validate-responses
#[test]
fn several_rounds_missing_answers_and_requests_made_while_held() {
    let (mut p, c) = legacy_up();
    let (call, irr) = parked(&mut p, c, "elicitation/create");
    let s1 = irr["result"]["requestState"].as_str().unwrap().to_string();
    // While held, the upstream asks for sampling too.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "in-2", "method": "sampling/createMessage", "params": sampling_params() }));
    assert!(p.client_quiet(c));
    // The retry answers nothing useful (wrong key, and an extra one): asked again, with the sampling.
    p.msend(c, json!(2), "tools/call", json!({ "name": "fs__ask", "arguments": { "q": 1 }, "inputResponses": { "wrong": answer_for("elicitation/create"), "fs-1": 12345 }, "requestState": s1 }), &full_caps());
    let irr2 = p.take(c);
    check(&irr2, "CallToolResultResponse");
    let keys: Vec<&String> = irr2["result"]["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["fs-1", "fs-2"]);
    let s2 = irr2["result"]["requestState"].as_str().unwrap().to_string();
    assert_ne!(s1, s2);
    assert!(p.up_quiet(0));
    // Round 3 answers both.
    p.msend(c, json!(3), "tools/call", json!({ "name": "fs__ask", "arguments": { "q": 1 }, "inputResponses": { "fs-1": answer_for("elicitation/create"), "fs-2": answer_for("sampling/createMessage") }, "requestState": s2 }), &full_caps());
    assert_eq!(p.take_up(0)["id"], "in-1");
    assert_eq!(p.take_up(0)["id"], "in-2");
    // The upstream asks again later (a new round).
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "in-3", "method": "roots/list", "params": {} }));
    let irr3 = p.take(c);
    assert_eq!(irr3["id"], 3);
    let s3 = irr3["result"]["requestState"].as_str().unwrap().to_string();
    p.msend(c, json!(4), "tools/call", json!({ "name": "fs__ask", "arguments": { "q": 1 }, "inputResponses": { "fs-3": answer_for("roots/list") }, "requestState": s3 }), &full_caps());
    assert_eq!(p.take_up(0)["id"], "in-3");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [] } }));
    assert_eq!(p.take(c)["id"], 4);
}

// covers: mrtr-requeststate-attacker-controlled, mrtr-requeststate-replay-fields, mrtr-single-use-enforced, mrtr-no-cross-request-use
#[test]
fn tampered_replayed_expired_and_foreign_states_reach_nothing() {
    let retry = |p: &mut Pair, c: ClientId, id: i64, args: Value, state: &str| {
        p.mreq(c, json!(id), "tools/call", json!({ "name": "fs__ask", "arguments": args, "inputResponses": { "fs-1": answer_for("elicitation/create") }, "requestState": state }), &full_caps())
    };
    // Tampered.
    let (mut p, c) = legacy_up();
    let (_, irr) = parked(&mut p, c, "elicitation/create");
    let s = irr["result"]["requestState"].as_str().unwrap().to_string();
    let mut bad = s.clone().into_bytes();
    bad[20] = if bad[20] == b'A' { b'B' } else { b'A' };
    for forged in [String::from_utf8(bad).unwrap(), format!("{s}-TAMPERED"), "not-a-state".to_string()] {
        let r = retry(&mut p, c, 2, json!({ "q": 1 }), &forged);
        assert_eq!(err_code(&r), -32602, "{r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("requestState"), "{r}");
        check(&r, "");
    }
    // Another request (other arguments, other tool, other method).
    let r = retry(&mut p, c, 3, json!({ "q": 2 }), &s);
    assert!(r["error"]["message"].as_str().unwrap().contains("different parameters"), "{r}");
    let r = p.mreq(c, json!(4), "prompts/get", json!({ "name": "fs__greet", "requestState": s }), &full_caps());
    assert!(r["error"]["message"].as_str().unwrap().contains("different method"), "{r}");
    // Another principal.
    let d = p.connect();
    p.hub.handle(Input::ClientPrincipal(d, b"someone else"), p.now);
    let r = retry(&mut p, d, 5, json!({ "q": 1 }), &s);
    assert!(r["error"]["message"].as_str().unwrap().contains("different principal"), "{r}");
    assert!(p.up_quiet(0), "nothing reached the upstream");
    // The genuine retry works once, from another connection of the same principal...
    let e = p.connect();
    p.msend(e, json!(6), "tools/call", json!({ "name": "fs__ask", "arguments": { "q": 1 }, "inputResponses": { "fs-1": answer_for("elicitation/create") }, "requestState": s }), &full_caps());
    assert_eq!(p.take_up(0)["id"], "in-1");
    // ...and not twice.
    let r = retry(&mut p, c, 7, json!({ "q": 1 }), &s);
    assert!(r["error"]["message"].as_str().unwrap().contains("already been used"), "{r}");
    assert!(p.up_quiet(0));
    // Expired: past input_ttl_ms the state fails, and the held call was cancelled upstream.
    let (mut p, c) = legacy_up();
    let (call, irr) = parked(&mut p, c, "elicitation/create");
    let s = irr["result"]["requestState"].as_str().unwrap().to_string();
    p.advance(300_000);
    let err = p.take_up(0);
    assert_eq!((err["id"].clone(), err_code(&err)), (json!("in-1"), -32603));
    let cancel = p.take_up(0);
    assert_eq!((cancel["method"].clone(), cancel["params"]["requestId"].clone()), (json!("notifications/cancelled"), call["id"].clone()));
    let r = retry(&mut p, c, 8, json!({ "q": 1 }), &s);
    assert!(r["error"]["message"].as_str().unwrap().contains("expired"), "{r}");
    assert!(p.up_quiet(0));
}

#[test]
fn input_requests_follow_the_requests_capabilities() {
    let (mut p, c) = legacy_up();
    // URL elicitation needs elicitation.url; the upstream gets an error, the client -32021.
    p.msend(c, json!(1), "tools/call", json!({ "name": "fs__ask", "arguments": {} }), &full_caps());
    let call = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "u", "method": "elicitation/create", "params": { "mode": "url", "message": "go", "url": "https://x.example/", "elicitationId": "e" } }));
    assert_eq!(err_code(&p.take_up(0)), -32601);
    let r = p.take(c);
    assert_eq!(r["error"]["data"]["requiredCapabilities"], json!({ "elicitation": { "url": {} } }));
    // Declared: no elicitationId, no _meta in the input request.
    let caps = json!({ "elicitation": { "url": {} } });
    p.msend(c, json!(2), "tools/call", json!({ "name": "fs__ask", "arguments": { "b": 1 } }), &caps);
    let _ = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "u2", "method": "elicitation/create", "params": { "mode": "url", "message": "go", "url": "https://x.example/", "elicitationId": "e", "_meta": { "k": 1 } } }));
    let irr = p.take(c);
    check(&irr, "CallToolResultResponse");
    let req = &irr["result"]["inputRequests"]["fs-2"]["params"];
    assert!(req.get("elicitationId").is_none() && req.get("_meta").is_none(), "{req}");
    let _ = call;
}

// covers: mrtr-only-declared-capabilities
#[test]
fn only_the_declared_part_of_a_round_is_asked_and_the_rest_refused_at_the_retry() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["both"]))], HubOptions { input_coalesce_ms: 10, ..HubOptions::default() });
    let c = p.connect();
    let caps = json!({ "sampling": {} });
    p.msend(c, json!(1), "tools/call", json!({ "name": "fs__both", "arguments": {} }), &caps);
    let call = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "e", "method": "elicitation/create", "params": elicit_params() }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "s", "method": "sampling/createMessage", "params": sampling_params() }));
    p.advance(10);
    let irr = p.take(c);
    let reqs = irr["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(reqs.len(), 1);
    let (key, req) = reqs.iter().next().unwrap();
    assert_eq!(req["method"], "sampling/createMessage");
    assert!(p.up_quiet(0), "nothing answered yet");
    let state = irr["result"]["requestState"].as_str().unwrap();
    p.msend(c, json!(2), "tools/call", json!({ "name": "fs__both", "arguments": {}, "inputResponses": { key.clone(): answer_for("sampling/createMessage") }, "requestState": state }), &caps);
    let a = p.take_up(0);
    let b = p.take_up(0);
    let (refusal, answer) = if a["id"] == "e" { (a, b) } else { (b, a) };
    assert_eq!((refusal["id"].clone(), err_code(&refusal)), (json!("e"), -32601));
    assert_eq!((answer["id"].clone(), answer["result"]["model"].clone()), (json!("s"), json!("m")));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [] } }));
    assert_eq!(p.take(c)["id"], 2);
}

#[test]
fn an_upstream_answer_before_the_retry_goes_to_the_retry() {
    let (mut p, c) = legacy_up();
    let (call, irr) = parked(&mut p, c, "elicitation/create");
    let s = irr["result"]["requestState"].as_str().unwrap().to_string();
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [{ "type": "text", "text": "gave up waiting" }] } }));
    assert!(p.client_quiet(c));
    let r = p.mreq(c, json!(2), "tools/call", json!({ "name": "fs__ask", "arguments": { "q": 1 }, "inputResponses": {}, "requestState": s }), &full_caps());
    check(&r, "CallToolResultResponse");
    assert_eq!(r["result"]["content"][0]["text"], "gave up waiting");
}

// ---------------------------------------------------------------- client side

// covers: versioning-dual-era-client-probe-discover-first-stdio, versioning-client-may-discover-first, discover-client-may-call
// covers: meta-client-should-send-clientinfo, discover-client-choose-from-list
#[test]
fn modern_upstreams_are_probed_and_spoken_to_with_meta() {
    let mut p = Pair::new(specs(&["m"]), HubOptions::default());
    p.fakes[0] = None;
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    let probe = p.take_up(0);
    assert_eq!(probe["method"], "server/discover");
    schema_check(MODERN, "DiscoverRequest", &probe);
    assert_eq!(probe["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"], "mcpx");
    p.fakes[0] = Some(Fake::modern(&["a"]));
    let ans = p.fakes[0].as_ref().unwrap().answer(&probe).unwrap().unwrap();
    p.fakes[0] = None;
    p.upstream_says(0, ans);
    // Lists and the listen stream follow, each with _meta; no initialize.
    let mut seen = vec![];
    while let Some(m) = p.up.get_mut(&0).and_then(VecDeque::pop_front) {
        schema_check(MODERN, "ClientRequest", &m);
        assert_eq!(m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], MODERN);
        seen.push(m["method"].as_str().unwrap().to_string());
    }
    assert!(seen.contains(&"tools/list".to_string()) && seen.contains(&"subscriptions/listen".to_string()), "{seen:?}");
    assert!(!seen.iter().any(|m| m == "initialize" || m == "notifications/initialized"));
    assert_eq!(p.hub.status()["upstreams"][0]["revision"], MODERN);
}

// covers: versioning-fallback-not-keyed-to-one-code, versioning-era-cache
#[test]
fn legacy_upstreams_fall_back_to_initialize_and_the_era_is_cached() {
    for answer in [json!({ "code": -32601, "message": "Method not found" }), json!({ "code": -32602, "message": "Invalid params" }), json!({ "code": -32600, "message": "not initialized" })] {
        let mut p = Pair::new(specs(&["old"]), HubOptions::default());
        p.hub.handle(Input::UpstreamStarted(0), p.now);
        p.pump();
        let probe = p.take_up(0);
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": probe["id"], "error": answer }));
        assert_eq!(p.take_up(0)["method"], "initialize");
        // The era is remembered: the next start sends initialize at once.
        p.hub.handle(Input::UpstreamExited { up: 0, reason: "exit 1", stderr_tail: "", next: Next::Now }, p.now);
        p.hub.handle(Input::UpstreamStarted(0), p.now);
        p.pump();
        assert_eq!(p.take_up(0)["method"], "initialize");
    }
    // A probe that is never answered falls back after probe_timeout_ms.
    let mut p = Pair::new(specs(&["mute"]), HubOptions { probe_timeout_ms: 2000, ..HubOptions::default() });
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    assert_eq!(p.take_up(0)["method"], "server/discover");
    p.advance(2000);
    assert_eq!(p.take_up(0)["method"], "initialize");
    assert!(p.restarts.is_empty());
    // A failed initialize forgets the era: the next start probes again.
    let mut p = Pair::new(specs(&["x"]), HubOptions::default());
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    let probe = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": probe["id"], "error": { "code": -32601, "message": "no" } }));
    let init = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": init["id"], "error": { "code": -32603, "message": "boom" } }));
    p.hub.handle(Input::UpstreamExited { up: 0, reason: "killed", stderr_tail: "", next: Next::Now }, p.now);
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    assert_eq!(p.take_up(0)["method"], "server/discover");
}

// A legacy server's expected answer to the probe is logged as such, at debug level.
#[test]
fn a_legacy_answer_to_the_probe_is_a_debug_line_not_an_error() {
    let mut p = Pair::new(specs(&["old"]), HubOptions::default());
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    let probe = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": probe["id"], "error": { "code": -32601, "message": "Method not found" } }));
    assert_eq!(p.take_up(0)["method"], "initialize");
    assert!(p.logs.iter().any(|(l, m)| *l == Level::Debug && m == "server 'old' is a legacy server; using initialize"), "{:?}", p.logs);
    assert!(!p.logs.iter().any(|(l, m)| *l != Level::Debug && m.contains("server/discover")), "{:?}", p.logs);
}

/// A hub whose upstream 'slow' got the probe, let it time out (3 s) and
/// got `initialize`; returns the pair, the probe and the initialize.
fn slow_start() -> (Pair, Value, Value) {
    let mut p = Pair::new(specs(&["slow"]), HubOptions::default());
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    let probe = p.take_up(0);
    assert_eq!(probe["method"], "server/discover");
    p.advance(3000);
    let init = p.take_up(0);
    assert_eq!(init["method"], "initialize");
    (p, probe, init)
}

/// The answers of an mcp 2.x server already serving 2026-07-28: its
/// DiscoverResult, and its refusal of `initialize`.
fn modern_answers(probe: &Value, init: &Value) -> (Value, Value) {
    let discover = Fake::modern(&["a"]).answer(probe).unwrap().unwrap();
    let refusal = json!({ "jsonrpc": "2.0", "id": init["id"], "error": { "code": -32022, "message": "Unsupported protocol version", "data": { "supported": ["2026-07-28"], "requested": init["params"]["protocolVersion"] } } });
    (discover, refusal)
}

fn assert_up_modern(p: &mut Pair) {
    assert!(p.restarts.is_empty(), "{:?}", p.restarts);
    assert_eq!(p.hub.status()["upstreams"][0]["revision"], MODERN);
    assert_eq!(p.hub.status()["upstreams"][0]["era"], "modern");
    let lists: Vec<Value> = std::iter::from_fn(|| p.up.get_mut(&0).and_then(VecDeque::pop_front)).collect();
    assert!(lists.iter().any(|m| m["method"] == "tools/list"), "{lists:?}");
    assert!(lists.iter().all(|m| m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == MODERN), "{lists:?}");
}

// Issue 12 item 4: a slow-starting modern server is not restarted in a loop.
// covers: versioning-dual-era-client-probe-discover-first-stdio
#[test]
fn a_late_modern_answer_to_the_probe_wins_over_a_refused_initialize() {
    // The probe answered after 4 s, then initialize refused (the order a
    // server reading its stdin late answers in).
    let (mut p, probe, init) = slow_start();
    p.advance(1000);
    let (discover, refusal) = modern_answers(&probe, &init);
    p.upstream_says(0, discover);
    assert!(p.hub.status()["upstreams"][0]["revision"].is_null(), "initialize is still awaited");
    p.upstream_says(0, refusal);
    assert_up_modern(&mut p);
    p.advance(60_000);
    assert!(p.restarts.is_empty(), "{:?}", p.restarts);
    assert_era_learned_once(&p.logs);
    // The refusal first: the probe is waited for.
    let (mut p, probe, init) = slow_start();
    let (discover, refusal) = modern_answers(&probe, &init);
    p.upstream_says(0, refusal);
    assert!(p.restarts.is_empty(), "{:?}", p.restarts);
    p.advance(1000);
    p.upstream_says(0, discover);
    assert_up_modern(&mut p);
    assert_era_learned_once(&p.logs);
}

/// The normal way of learning a slow modern server's era reads as that:
/// one info line naming the era, the steps on the way at debug only.
fn assert_era_learned_once(logs: &[(Level, String)]) {
    let start = |m: &str| ["discover", "initialize", "ready"].iter().any(|w| m.contains(w));
    let info: Vec<&str> = logs.iter().filter(|(l, m)| *l != Level::Debug && start(m)).map(|(_, m)| m.as_str()).collect();
    assert_eq!(info, ["server 'slow' speaks 2026-07-28 (learned from its late answer to server/discover)", "server 'slow' ready (2026-07-28)"], "{logs:?}");
    assert!(logs.iter().any(|(l, m)| *l == Level::Debug && m.contains("did not answer server/discover")), "{logs:?}");
}

// covers: versioning-dual-era-client-probe-discover-first-stdio
#[test]
fn a_probe_left_unanswered_with_initialize_refused_is_given_longer_on_the_next_start() {
    let (mut p, probe, init) = slow_start();
    let (_, refusal) = modern_answers(&probe, &init);
    p.upstream_says(0, refusal);
    assert!(p.restarts.is_empty(), "waits for the probe until init_timeout_ms");
    p.advance(30_000 - 3000 - 1);
    assert!(p.restarts.is_empty());
    p.advance(1);
    assert_eq!(p.restarts, vec![(0, "initialize failed")]);
    // The next start does not repeat the 3 s fallback: the probe gets the whole init_timeout_ms.
    p.hub.handle(Input::UpstreamExited { up: 0, reason: "killed", stderr_tail: "", next: Next::Now }, p.now);
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    let probe = p.take_up(0);
    assert_eq!(probe["method"], "server/discover");
    p.advance(29_999);
    assert!(p.up_quiet(0), "no initialize before init_timeout_ms");
    let discover = Fake::modern(&["a"]).answer(&probe).unwrap().unwrap();
    p.upstream_says(0, discover);
    p.restarts.clear();
    assert_up_modern(&mut p);
    // A late answer after a successful initialize is ignored (no change of era).
    let (mut p, probe, init) = slow_start();
    let ok = json!({ "jsonrpc": "2.0", "id": init["id"], "result": { "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": { "name": "s", "version": "1" } } });
    p.upstream_says(0, ok);
    let discover = Fake::modern(&["a"]).answer(&probe).unwrap().unwrap();
    p.upstream_says(0, discover);
    assert_eq!(p.hub.status()["upstreams"][0]["revision"], "2025-11-25");
    assert!(p.restarts.is_empty());
}

// covers: messages-resulttype-unknown-invalid, messages-resulttype-absent-means-complete
#[test]
fn modern_upstream_results_pass_with_known_result_types_only() {
    let (mut p, c) = modern_up();
    let l = p.client("2025-11-25", json!({}));
    p.msend(c, json!(1), "tools/call", json!({ "name": "m__read", "arguments": {} }), &json!({}));
    let up = p.take_up(0);
    schema_check(MODERN, "CallToolRequest", &up);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "resultType": "task", "taskId": "t" } }));
    let r = p.take(c);
    assert_eq!(err_code(&r), -32603);
    assert!(r["error"]["message"].as_str().unwrap().contains("resultType 'task'"));
    // Absent resultType is complete; a legacy client sees no modern members.
    // Its logging/setLevel becomes the request's logLevel.
    assert_eq!(p.request(l, json!(9), "logging/setLevel", json!({ "level": "notice" }))["result"], json!({}));
    p.send(l, json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "m__read", "arguments": {} } }));
    let up = p.take_up(0);
    assert_eq!(up["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"], relayed_caps(json!({})));
    assert_eq!(up["params"]["_meta"]["io.modelcontextprotocol/logLevel"], "notice");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "resultType": "complete", "content": [], "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "m", "version": "1" } } } }));
    let r = p.take(l);
    assert!(r["result"].get("resultType").is_none(), "{r}");
    schema_check("2025-11-25", "CallToolResult", &r["result"]);
}

// covers: streamable-http-client-rejects-invalid-x-mcp-header
#[test]
fn tools_with_invalid_x_mcp_header_annotations_are_dropped() {
    let mut f = Fake::modern(&["good"]);
    f.tools.push(json!({ "name": "bad", "inputSchema": { "type": "object", "properties": { "a": { "type": "string", "x-mcp-header": "Bad Header" } } } }));
    f.tools.push(json!({ "name": "fine", "inputSchema": { "type": "object", "properties": { "a": { "type": "string", "x-mcp-header": "Region" } } } }));
    let mut p = Pair::with(vec![("m", f)], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["m__good", "m__fine"]);
    assert!(p.logs.iter().any(|(_, l)| l.contains("'bad' dropped")));
    // What an HTTP upstream transport reads to mirror x-mcp-header parameters.
    assert_eq!(p.hub.upstreams().revision(0), Some(MODERN));
    assert_eq!(p.hub.catalog().upstream_tool_schema(0, "fine").unwrap()["properties"]["a"]["x-mcp-header"], "Region");
    assert!(p.hub.catalog().upstream_tool_schema(0, "bad").is_none());
    p.hub.handle(Input::Relist(0), p.now);
    p.pump();
    assert_eq!(p.names(c), ["m__good", "m__fine"]);
}

// covers: subscriptions-stdio-client-correlate, subscriptions-list-changed-via-listen, stdio-client-correlates-subscription-id
#[test]
fn modern_upstream_list_changes_arrive_on_the_hubs_listen_stream() {
    let (mut p, c) = modern_up();
    let l = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(l), ["m__ask", "m__read"]);
    let _ = c;
    // The fake left the listen request unanswered: find its id in status via a tagged notification.
    p.fakes[0].as_mut().unwrap().tools.push(tool("new"));
    // A notification tagged with a foreign subscription id is ignored.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": { "_meta": { "io.modelcontextprotocol/subscriptionId": 999 } } }));
    assert_eq!(p.names(l).len(), 2);
    let listen_id = p.hub.ups[0].listen.expect("a listen stream");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": { "_meta": { "io.modelcontextprotocol/subscriptionId": listen_id } } }));
    assert_eq!(p.take(l)["method"], "notifications/tools/list_changed");
    assert_eq!(p.names(l), ["m__ask", "m__read", "m__new"]);
}

// ---------------------------------------------------------------- translation: the 2×2 matrix

/// One round trip of `method` input through mcpx, for a client of `client_era`
/// and an upstream of `up_era`; every client-bound message schema-checked.
fn round_trip(modern_client: bool, modern_upstream: bool, method: &str) {
    let ctx = format!("client {} / upstream {} / {method}", if modern_client { "modern" } else { "legacy" }, if modern_upstream { "modern" } else { "legacy" });
    let (mut p, c) = if modern_upstream { modern_up() } else { legacy_up() };
    let tool = if modern_upstream { "m__ask" } else { "fs__ask" };
    let legacy_caps = json!({ "elicitation": { "form": {} }, "sampling": {}, "roots": { "listChanged": true } });
    let c = if modern_client { c } else { p.client("2025-11-25", legacy_caps) };
    let args = json!({ "q": "x" });
    let call_params = json!({ "name": tool, "arguments": args });
    if modern_client {
        p.msend(c, json!(1), "tools/call", call_params.clone(), &full_caps());
    } else {
        p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call_params.clone() }));
    }
    let call = p.take_up(0);
    if modern_upstream {
        schema_check(MODERN, "CallToolRequest", &call);
        let caps = &call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
        assert!(caps.get(method.split('/').next().unwrap().trim_end_matches("ation").trim_end_matches("it")).is_some() || caps.get("roots").is_some(), "{ctx}: {caps}");
        // The upstream asks by InputRequiredResult.
        let irr = json!({ "resultType": "input_required", "inputRequests": { "k1": { "method": method, "params": params_for(method) } }, "requestState": "upstream-state-1" });
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": irr }));
    } else {
        schema_check("2025-11-25", "CallToolRequest", &call);
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "in-1", "method": method, "params": params_for(method) }));
    }
    let key;
    if modern_client {
        let irr = p.take(c);
        check(&irr, "CallToolResultResponse");
        assert_eq!(irr["result"]["resultType"], "input_required", "{ctx}");
        let reqs = irr["result"]["inputRequests"].as_object().unwrap();
        key = reqs.keys().next().unwrap().clone();
        assert_eq!(reqs[&key]["method"], method, "{ctx}");
        if method == "elicitation/create" {
            let server = if modern_upstream { "m" } else { "fs" };
            assert_eq!(reqs[&key]["params"]["message"], format!("[{server}] Your name?"), "{ctx}");
        }
        let state = irr["result"]["requestState"].as_str().unwrap().to_string();
        assert_ne!(state, "upstream-state-1", "{ctx}: the upstream's state is wrapped");
        let retry = json!({ "name": tool, "arguments": args, "inputResponses": { key.clone(): answer_for(method) }, "requestState": state });
        p.msend(c, json!(2), "tools/call", retry, &full_caps());
    } else {
        let req = p.take(c);
        assert_eq!(req["method"], method, "{ctx}");
        schema_check("2025-11-25", "JSONRPCRequest", &req);
        key = "k1".into();
        p.send(c, json!({ "jsonrpc": "2.0", "id": req["id"], "result": answer_for(method) }));
    }
    let final_id = if modern_upstream {
        let retry = p.take_up(0);
        schema_check(MODERN, "CallToolRequest", &retry);
        assert_ne!(retry["id"], call["id"], "{ctx}: a new id for the retry");
        assert_eq!(retry["params"]["requestState"], "upstream-state-1", "{ctx}: the upstream's state echoed exactly");
        assert_eq!(retry["params"]["inputResponses"]["k1"], answer_for(method), "{ctx}");
        assert_eq!(retry["params"]["arguments"], args, "{ctx}");
        retry["id"].clone()
    } else {
        let ans = p.take_up(0);
        assert_eq!((ans["id"].clone(), ans["result"].clone()), (json!("in-1"), answer_for(method)), "{ctx}");
        call["id"].clone()
    };
    let _ = key;
    let mut done = json!({ "content": [{ "type": "text", "text": "done" }] });
    if modern_upstream {
        done["resultType"] = json!("complete");
    }
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": final_id, "result": done }));
    let fin = p.take(c);
    assert_eq!(fin["result"]["content"][0]["text"], "done", "{ctx}: {fin}");
    if modern_client {
        check(&fin, "CallToolResultResponse");
        assert_eq!(fin["id"], 2);
    } else {
        schema_check("2025-11-25", "JSONRPCResponse", &fin);
        assert!(fin["result"].get("resultType").is_none(), "{ctx}");
        assert_eq!(fin["id"], 1);
    }
    assert!(p.client_quiet(c) && p.up_quiet(0), "{ctx}");
}

// covers: mrtr-client-fulfil-before-retry, mrtr-client-echo-state, mrtr-new-id-on-retry, mrtr-requeststate-opaque-client
#[test]
fn era_matrix_elicitation_sampling_and_roots_in_every_cell() {
    for modern_client in [false, true] {
        for modern_upstream in [false, true] {
            for method in INPUTS {
                round_trip(modern_client, modern_upstream, method);
            }
        }
    }
}

#[test]
fn modern_upstream_requests_the_legacy_client_cannot_answer_fail_the_call() {
    let (mut p, _) = modern_up();
    let c = p.client("2025-11-25", json!({}));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "m__ask", "arguments": {} } }));
    let call = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "resultType": "input_required", "inputRequests": { "k": { "method": "sampling/createMessage", "params": sampling_params() } } } }));
    let r = p.take(c);
    assert_eq!(err_code(&r), -32603);
    assert!(r["error"]["message"].as_str().unwrap().contains("sampling"));
    assert!(p.up_quiet(0));
}

// covers: versioning-dual-era-server-selects-by-opening
#[test]
fn modern_requests_wait_for_upstreams_to_start_like_initialize() {
    let mut p = Pair::new(legacy_specs(&["a"]), HubOptions::default());
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    let c = p.connect();
    p.msend(c, json!(1), "tools/list", json!({}), &json!({}));
    assert!(p.client_quiet(c), "held while a starts");
    let init = p.take_up(0);
    p.fakes[0] = Some(Fake::tools(&["x"]));
    let answer = p.fakes[0].as_ref().unwrap().answer(&init).unwrap().unwrap();
    p.upstream_says(0, answer);
    let r = p.take(c);
    check(&r, "ListToolsResultResponse");
    assert_eq!(r["result"]["tools"][0]["name"], "a__x");
}

// covers: versioning-client-retry-with-supported
#[test]
fn a_modern_upstream_that_stops_accepting_2026_is_negotiated_again() {
    let (mut p, c) = modern_up();
    p.msend(c, json!(1), "tools/call", json!({ "name": "m__read", "arguments": {} }), &json!({}));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "error": { "code": -32022, "message": "Unsupported protocol version", "data": { "supported": ["2025-11-25"], "requested": MODERN } } }));
    assert_eq!(err_code(&p.take(c)), -32022);
    assert_eq!(p.restarts, vec![(0, "protocol version no longer supported")]);
    // The next start probes again; a legacy answer now leads to initialize.
    p.fakes[0] = None;
    p.hub.handle(Input::UpstreamExited { up: 0, reason: "killed", stderr_tail: "", next: Next::Now }, p.now);
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    let probe = p.take_up(0);
    assert_eq!(probe["method"], "server/discover");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": probe["id"], "error": { "code": -32022, "message": "Unsupported protocol version", "data": { "supported": ["2025-11-25"], "requested": MODERN } } }));
    assert_eq!(p.take_up(0)["params"]["protocolVersion"], "2025-11-25");
}

// covers: caching-stale-refetch, caching-ttl-positive-fresh
#[test]
fn lists_of_modern_upstreams_without_change_notices_are_read_again_after_their_ttl() {
    let mut f = Fake::modern(&["a"]);
    f.caps = json!({ "tools": {} }); // no listChanged: only the TTL (5000 ms) says when to look again
    let mut p = Pair::with(vec![("m", f)], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["m__a"]);
    p.fakes[0].as_mut().unwrap().tools.push(tool("b"));
    p.advance(1000);
    assert_eq!(p.names(c), ["m__a"], "fresh: served from the hub's copy");
    p.advance(4000);
    // Stale: this read is answered from the copy, the upstream is read again,
    // and the client told the list changed.
    let r = p.request(c, json!("l"), "tools/list", json!({}));
    assert_eq!(r["result"]["tools"].as_array().unwrap().len(), 1);
    assert_eq!(p.take(c)["method"], "notifications/tools/list_changed");
    assert_eq!(p.names(c), ["m__a", "m__b"]);
}

/// Every message a modern client gets in a whole session, with legacy and
/// modern upstreams behind the hub, validated against the 2026-07-28 schema
/// (result by the request's method).
#[test]
fn everything_a_modern_client_gets_fits_the_2026_schema() {
    let mut legacy = Fake::tools(&["ask"]);
    legacy.caps = json!({ "tools": { "listChanged": true }, "prompts": {}, "resources": { "subscribe": true }, "logging": {}, "completions": {} });
    legacy.prompts = vec![json!({ "name": "greet", "arguments": [{ "name": "who", "title": "Who" }] })];
    legacy.resources = vec![json!({ "uri": "file:///a.txt", "name": "a", "annotations": { "lastModified": "2025-01-01T00:00:00Z" } })];
    legacy.templates = vec![json!({ "uriTemplate": "file:///{p}", "name": "files" })];
    legacy.tools[0]["execution"] = json!({ "taskSupport": "optional" });
    let mut p = Pair::with(vec![("fs", legacy), ("m", Fake::modern(&["x"]))], HubOptions::default());
    let c = p.connect();
    let caps = full_caps();
    let mut sent: Vec<(Value, &str)> = Vec::new();
    let mut ask = |p: &mut Pair, id: Value, method: &'static str, params: Value| {
        p.msend(c, id.clone(), method, params, &caps);
        sent.push((id, method));
    };
    ask(&mut p, json!(1), "server/discover", json!({}));
    for (i, m) in ["tools/list", "prompts/list", "resources/list", "resources/templates/list"].into_iter().enumerate() {
        ask(&mut p, json!(10 + i), m, json!({}));
    }
    ask(&mut p, json!(20), "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true, "resourceSubscriptions": ["file:///a.txt"] } }));
    let _ = p.up.get_mut(&0).map(VecDeque::clear);
    // A call that needs input, a plain call, a read, a prompt, a completion, an error.
    ask(&mut p, json!(30), "tools/call", json!({ "name": "fs__ask", "arguments": {} }));
    let call = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": call["id"], "progress": 1, "total": 2, "message": "half" } }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "e", "method": "elicitation/create", "params": { "message": "?", "requestedSchema": { "type": "object", "properties": {} } } }));
    ask(&mut p, json!(31), "tools/call", json!({ "name": "m__x", "arguments": {} }));
    let mcall = p.take_up(1);
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "id": mcall["id"], "result": { "resultType": "complete", "content": [{ "type": "audio", "data": "AA==", "mimeType": "audio/wav" }], "structuredContent": { "a": 1 } } }));
    ask(&mut p, json!(32), "resources/read", json!({ "uri": "file:///a.txt" }));
    let read = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": read["id"], "result": { "contents": [{ "uri": "file:///a.txt", "text": "hi", "_meta": { "k": 1 } }] } }));
    ask(&mut p, json!(33), "prompts/get", json!({ "name": "fs__greet", "arguments": { "who": "x" } }));
    let get = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": get["id"], "result": { "messages": [{ "role": "user", "content": { "type": "text", "text": "hi" } }] } }));
    ask(&mut p, json!(34), "completion/complete", json!({ "ref": { "type": "ref/prompt", "name": "fs__greet" }, "argument": { "name": "who", "value": "a" } }));
    let comp = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": comp["id"], "result": { "completion": { "values": ["ab"] } } }));
    ask(&mut p, json!(35), "tools/call", json!({ "name": "nope", "arguments": {} }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": "file:///a.txt" } }));
    p.hub.handle(Input::Shutdown, p.now);
    p.pump();
    let by_id: std::collections::HashMap<String, &str> = sent.iter().map(|(id, m)| (id.to_string(), *m)).collect();
    let mut n = 0;
    while let Some(v) = p.cl.get_mut(&c).and_then(VecDeque::pop_front).map(|x| x.0) {
        n += 1;
        let def = match v.get("id").map(|i| by_id.get(&i.to_string()).copied()) {
            Some(Some("server/discover")) => "DiscoverResultResponse",
            Some(Some("tools/list")) => "ListToolsResultResponse",
            Some(Some("prompts/list")) => "ListPromptsResultResponse",
            Some(Some("resources/list")) => "ListResourcesResultResponse",
            Some(Some("resources/templates/list")) => "ListResourceTemplatesResultResponse",
            Some(Some("subscriptions/listen")) => "SubscriptionsListenResultResponse",
            Some(Some("tools/call")) => "CallToolResultResponse",
            Some(Some("resources/read")) => "ReadResourceResultResponse",
            Some(Some("prompts/get")) => "GetPromptResultResponse",
            Some(Some("completion/complete")) => "CompleteResultResponse",
            _ => "JSONRPCResultResponse",
        };
        check(&v, def);
    }
    assert!(n >= 15, "{n} messages");
}

// covers: mrtr-inputrequests-keys-values
#[test]
fn input_requests_made_together_travel_together() {
    let mut f = Fake::tools(&["multi"]);
    f.caps = json!({ "tools": {} });
    let mut p = Pair::with(vec![("fs", f)], HubOptions { input_coalesce_ms: 15, ..HubOptions::default() });
    let c = p.connect();
    p.msend(c, json!(1), "tools/call", json!({ "name": "fs__multi", "arguments": {} }), &full_caps());
    let call = p.take_up(0);
    for (i, m) in INPUTS.iter().enumerate() {
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": i, "method": m, "params": params_for(m) }));
    }
    assert!(p.client_quiet(c), "within the window");
    assert_eq!(p.hub.next_deadline(), Some(p.now + 15));
    p.advance(15);
    let irr = p.take(c);
    check(&irr, "CallToolResultResponse");
    let reqs = irr["result"]["inputRequests"].as_object().unwrap();
    let methods: Vec<&str> = reqs.values().map(|r| r["method"].as_str().unwrap()).collect();
    assert_eq!(methods.len(), 3, "{irr}");
    let state = irr["result"]["requestState"].as_str().unwrap().to_string();
    let responses: serde_json::Map<String, Value> = reqs.iter().map(|(k, r)| (k.clone(), answer_for(r["method"].as_str().unwrap()))).collect();
    p.msend(c, json!(2), "tools/call", json!({ "name": "fs__multi", "arguments": {}, "inputResponses": responses, "requestState": state }), &full_caps());
    for i in 0..3 {
        assert_eq!(p.take_up(0)["id"], i);
    }
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [] } }));
    assert_eq!(p.take(c)["id"], 2);
    // An answer inside the window goes to the client as it is.
    p.msend(c, json!(3), "tools/call", json!({ "name": "fs__multi", "arguments": { "b": 1 } }), &full_caps());
    let call = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "x", "method": "roots/list", "params": {} }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [{ "type": "text", "text": "no roots needed" }] } }));
    let r = p.take(c);
    check(&r, "CallToolResultResponse");
    assert_eq!((r["id"].clone(), r["result"]["resultType"].clone()), (json!(3), json!("complete")));
}

// ---------------------------------------------------------------- the single-use set's share per principal

/// Principal-`c`'s call `id` to `m` answered `input_required` by the
/// upstream: the hub's `requestState` for it.
fn minted_state(p: &mut Pair, c: ClientId, id: u64) -> String {
    p.msend(c, json!(id), "tools/call", json!({ "name": "m__read", "arguments": {} }), &json!({}));
    let up = p.take_up(0);
    let irr = json!({ "resultType": "input_required", "inputRequests": { "k1": { "method": "roots/list", "params": {} } }, "requestState": format!("up-{id}") });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": irr }));
    let r = p.take(c);
    r["result"]["requestState"].as_str().unwrap_or_else(|| panic!("{r}")).to_string()
}

/// The retry of call `id` with `state`: what the client gets once the
/// upstream (if it was reached) answers `complete`.
fn redeemed(p: &mut Pair, c: ClientId, id: u64, state: &str) -> Value {
    let retry = json!({ "name": "m__read", "arguments": {}, "inputResponses": { "k1": { "roots": [] } }, "requestState": state });
    p.msend(c, json!(id), "tools/call", retry, &json!({}));
    if !p.up_quiet(0) {
        let up = p.take_up(0);
        assert_eq!(up["params"]["requestState"], format!("up-{id}"), "{up}");
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "resultType": "complete", "content": [] } }));
    }
    p.take(c)
}

// Issue 11 item 3: one principal redeeming requestStates as fast as it can
// fills only its own share of the single-use set; its next retry is refused
// naming that limit and when to retry (the token stays unused), and another
// principal's retries still succeed. Before, the set was hub-wide: one
// principal's 4,096 redeems refused everyone for the whole input TTL.
// covers: mrtr-single-use-enforced
#[test]
fn one_principal_filling_its_replay_share_does_not_lock_out_another() {
    let (mut p, a) = modern_up();
    p.hub.handle(Input::ClientPrincipal(a, b"user:alice"), p.now);
    let b = p.connect();
    p.hub.handle(Input::ClientPrincipal(b, b"user:bob"), p.now);
    let bobs = minted_state(&mut p, b, 1);
    let share = 4096 / 8;
    // Two calls a round, within the default tool-call rate limit (100/s).
    let step = 25;
    for id in 1..=share as u64 {
        let s = minted_state(&mut p, a, id);
        let r = redeemed(&mut p, a, id, &s);
        assert_eq!(r["result"]["resultType"], "complete", "redeem {id}: {r}");
        p.advance(step);
    }
    let id = share as u64 + 1;
    let s = minted_state(&mut p, a, id);
    let r = redeemed(&mut p, a, id, &s);
    assert_eq!(err_code(&r), -32600, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("requestState.singleUsePerPrincipal") && msg.contains(&format!("{share} of 4096")), "{msg}");
    let wait = r["error"]["data"]["retryAfterMs"].as_u64().unwrap();
    let ttl = HubOptions::default().input_ttl_ms;
    // Alice's first entry was redeemed `share` rounds ago: it frees first.
    assert_eq!(wait, ttl - share as u64 * step, "retry after {wait} ms (ttl {ttl})");
    assert!(r["error"]["data"]["limit"].as_str().unwrap().starts_with("requestState.singleUsePerPrincipal"), "{r}");
    // Bob is not locked out.
    let r = redeemed(&mut p, b, 1, &bobs);
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    // Alice's refused token was not burned: once her oldest entry expires it opens.
    p.advance(wait);
    let r = redeemed(&mut p, a, id, &s);
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
}

// ------------------------------------------- what the hub says upstream

fn header_map(h: &[(String, Vec<u8>)]) -> std::collections::BTreeMap<String, String> {
    h.iter().map(|(n, v)| (n.clone(), String::from_utf8(v.clone()).unwrap())).collect()
}

// covers: streamable-http-client-header-construction, streamable-http-param-value-encoding, streamable-http-mcp-name-base64
#[test]
fn modern_headers_are_built_from_the_body_and_the_tool_schema() {
    use crate::hub::upward::modern_headers;
    let schema = json!({"type": "object", "properties": {
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "region": {"type": "string", "x-mcp-header": "Region"},
        "flag": {"type": "boolean", "x-mcp-header": "Flag"},
        "gone": {"type": "string", "x-mcp-header": "Gone"},
        "opts": {"type": "object", "properties": {"depth": {"type": "integer", "x-mcp-header": "Depth"}}}}});
    let lookup = |t: &str| (t == "wetter☀").then_some(&schema);
    let params = json!({"name": "wetter☀", "arguments": {"count": 42, "region": "Zürich", "flag": true, "gone": null, "opts": {"depth": 3.0}}}).to_string();
    let h = header_map(&modern_headers("tools/call", mcpx_core::json::parse(params.as_bytes()).ok(), &lookup));
    assert_eq!(h["mcp-protocol-version"], MODERN);
    assert_eq!(h["mcp-method"], "tools/call");
    // Non-ASCII: the Base64 sentinel, of the UTF-8 bytes.
    assert_eq!(h["mcp-name"], "=?base64?d2V0dGVy4piA?=");
    assert_eq!(h["mcp-param-count"], "42");
    assert_eq!(h["mcp-param-region"], "=?base64?WsO8cmljaA==?=");
    assert_eq!(h["mcp-param-flag"], "true");
    assert_eq!(h["mcp-param-depth"], "3");
    assert!(!h.contains_key("mcp-param-gone"), "{h:?}");
    assert_eq!(h.len(), 7, "{h:?}");
    // Escapes in the body are decoded before encoding.
    let escaped = br#"{"name":"wetter\u2600","arguments":{"region":"Z\u00fcrich"}}"#;
    let h = header_map(&modern_headers("tools/call", mcpx_core::json::parse(escaped).ok(), &lookup));
    assert_eq!((h["mcp-name"].as_str(), h["mcp-param-region"].as_str()), ("=?base64?d2V0dGVy4piA?=", "=?base64?WsO8cmljaA==?="));

    let read = br#"{"uri":"file:///a b"}"#;
    let h = modern_headers("resources/read", mcpx_core::json::parse(read).ok(), &lookup);
    assert!(h.contains(&("mcp-name".into(), b"file:///a b".to_vec())), "{h:?}");
    // server/discover (also without params) has no Mcp-Name.
    let h = modern_headers("server/discover", None, &lookup);
    assert_eq!(h, vec![("mcp-protocol-version".into(), MODERN.as_bytes().to_vec()), ("mcp-method".into(), b"server/discover".to_vec())]);
}

// covers: streamable-http-standard-headers-required, streamable-http-client-sends-metadata-headers
#[test]
fn the_hub_describes_each_message_to_an_upstream_with_the_headers_of_a_modern_request() {
    let mut m = Fake::modern(&[]);
    m.tools.push(json!({ "name": "w", "inputSchema": { "type": "object", "properties": { "zone": { "type": "string", "x-mcp-header": "Zone" } } } }));
    let mut old = Fake::tools(&["x"]);
    old.rev = "2025-11-25";
    // `m` and `old` remote servers (HTTP), `local` a modern one on stdio.
    let mut sp = specs(&["m", "old", "local"]);
    sp[0].remote = true;
    sp[1].remote = true;
    let mut p = Pair::new(sp, HubOptions::default());
    let mut local = Fake::modern(&[]);
    local.tools = m.tools.clone();
    for (u, f) in [m, old, local].into_iter().enumerate() {
        p.start(u, f);
    }
    let c = p.client("2025-11-25", json!({}));
    p.upward.clear();
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "m__w", "arguments": { "zone": "eu" } } }));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "old__x", "arguments": { "zone": "eu" } } }));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "local__w", "arguments": { "zone": "eu" } } }));
    let call = |u: UpstreamId| p.upward.iter().find(|(to, v, _)| *to == u && v["method"] == "tools/call").cloned().expect("a call");
    // The modern upstream: its headers, the name as the upstream knows it.
    let (_, v, about) = call(0);
    let Upward::Request { id, method, modern: Some(h), .. } = &about else { panic!("{about:?}") };
    assert_eq!((id.bytes(), *method), (v["id"].to_string().as_bytes(), Some(mcpx_core::method::Method::ToolsCall)));
    let h = header_map(h);
    assert_eq!((h["mcp-method"].as_str(), h["mcp-name"].as_str(), h["mcp-param-zone"].as_str()), ("tools/call", "w", "eu"), "{h:?}");
    assert_eq!(h["mcp-protocol-version"], MODERN);
    // Built again (the transport's retry after -32020): the same headers.
    let bytes = serde_json::to_vec(&v).unwrap();
    assert_eq!(p.hub.catalog().upstream_headers_again(0, &bytes).map(|h| header_map(&h)), Some(h));
    // The legacy upstream: a request with no modern headers.
    let (_, _, about) = call(1);
    assert!(matches!(about, Upward::Request { modern: None, .. }), "{about:?}");
    // The modern process on stdio: a modern request, headers being HTTP's none.
    let (_, v, about) = call(2);
    assert_eq!(v["params"]["_meta"][mcpx_core::meta::PROTOCOL_VERSION_KEY], "2026-07-28", "{v}");
    assert!(matches!(about, Upward::Request { modern: None, .. }), "{about:?}");
    // Answers and notifications are described as such (checked for every
    // message by the pair, `check_upward`).
    assert!(p.upward.iter().all(|(_, v, a)| v.get("result").is_none() || *a == Upward::Answer));
}

// covers: messages-resulttype-server-must-include, messages-resulttype-required
#[test]
fn a_modern_result_passes_byte_exact_with_integers_beyond_64_bits() {
    for (name, fake) in [("m", Fake::modern(&["big"])), ("l", Fake::tools(&["big"]))] {
        let mut p = Pair::with(vec![(name, fake)], HubOptions::default());
        let c = p.connect();
        p.msend(c, json!(7), "tools/call", json!({ "name": format!("{name}__big"), "arguments": {} }), &json!({}));
        let up = p.take_up(0);
        let kept = r#""structuredContent":{"n":123456789012345678901234567890,"f":1.50e3,"s":"\u00e9"}"#;
        let raw = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[],{kept},"_meta":{{"x":-0}}}}}}"#, up["id"]);
        p.hub.handle(Input::UpstreamMessage { up: 0, msg: raw.as_bytes(), on: None }, p.now);
        p.pump();
        let (v, b) = p.take_raw(c);
        let s = String::from_utf8(b).unwrap();
        assert!(s.contains(kept) && s.contains(r#""x":-0"#), "{name}: {s}");
        check(&v, "CallToolResultResponse");
        assert_eq!(v["result"]["resultType"], "complete", "{v}");
    }
}

#[test]
fn stamping_splices_the_members_of_a_modern_result() {
    let p = Pair::new(specs(&["a"]), HubOptions::default());
    let st = |res: &str, hints| -> Value {
        let out = super::super::modern::stamped(&p.hub.opts, res.as_bytes(), hints);
        serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{res}: {e}: {}", String::from_utf8_lossy(&out)))
    };
    let info = json!({ "name": "mcpx", "version": p.hub.opts.server_version });
    assert_eq!(st("{}", None), json!({ "resultType": "complete", "_meta": { "io.modelcontextprotocol/serverInfo": info } }));
    assert_eq!(
        st(r#" { "resultType": 5, "_meta": [1], "ttlMs": 9 } "#.trim(), Some((0, true))),
        json!({ "resultType": "complete", "_meta": { "io.modelcontextprotocol/serverInfo": info }, "ttlMs": 0, "cacheScope": "public" })
    );
    assert_eq!(
        st(r#"{"resultType":"task","_meta":{"k":"v","io.modelcontextprotocol/serverInfo":null}}"#, Some((30, false))),
        json!({ "resultType": "task", "_meta": { "k": "v", "io.modelcontextprotocol/serverInfo": info }, "ttlMs": 30, "cacheScope": "private" })
    );
    // Not an object: as it is.
    assert_eq!(super::super::modern::stamped(&p.hub.opts, b"[1]", None), b"[1]");
}

/// A gone client's subscription to a resource of a 2026-07-28 upstream is
/// taken out of the hub's listen stream to it, which is opened again with
/// the new filter: that revision has no `resources/unsubscribe`.
#[test]
fn a_gone_clients_subscription_to_a_modern_upstream_leaves_its_listen_stream() {
    let (mut p, _) = modern_up();
    let l = p.client("2025-11-25", json!({}));
    p.list_all(l, "resources/list", "resources");
    assert_eq!(p.request(l, json!(1), "resources/subscribe", json!({ "uri": "file:///a.txt" }))["result"], json!({}));
    let listens = |p: &Pair, from: usize| -> Vec<Value> {
        p.upward[from..].iter().filter(|(u, v, _)| *u == 0 && v["method"] == "subscriptions/listen").map(|(_, v, _)| v["params"]["notifications"].clone()).collect()
    };
    assert_eq!(listens(&p, 0).last().expect("a listen stream")["resourceSubscriptions"], json!(["file:///a.txt"]));
    let mark = p.upward.len();
    p.hub.handle(Input::ClientDisconnected(l), p.now);
    p.pump();
    let methods: Vec<&Value> = p.upward[mark..].iter().filter(|(u, _, _)| *u == 0).map(|(_, v, _)| &v["method"]).collect();
    assert!(!methods.contains(&&json!("resources/unsubscribe")), "sent {methods:?}");
    let reopened = listens(&p, mark);
    assert_eq!(reopened.len(), 1, "sent {methods:?}");
    assert!(reopened[0].get("resourceSubscriptions").is_none(), "{}", reopened[0]);
}
