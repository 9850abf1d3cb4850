//! The policy wired into the hub (issue 17): per-principal catalogs and
//! their `list_changed`, rate limits, argument validation, trust marks and
//! tool search, driven through the pair harness.

use super::*;

/// Hub options with the `"policy"` block `policy` (parsed as a config file
/// would be).
pub(super) fn with_policy(policy: Value) -> HubOptions {
    let src = json!({ "mcpServers": {}, "policy": policy }).to_string();
    let env = |_: &str| None;
    let cfg = crate::config::parse(&src, "mcpx.json", std::path::Path::new("/cfg"), &env).expect("a valid policy");
    HubOptions { policy: cfg.policy, startup_wait_ms: 0, ..HubOptions::default() }
}

fn call(p: &mut Pair, c: ClientId, id: u64, name: &str, args: Value) -> Value {
    p.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": name, "arguments": args } }));
    match p.cl.get_mut(&c).and_then(VecDeque::pop_front) {
        Some((v, _)) => v,
        None => Value::Null, // forwarded: the upstream has it
    }
}

/// Answers the upstream's pending call with a text result.
fn answer_up(p: &mut Pair, u: UpstreamId) -> Value {
    let req = p.take_up(u);
    p.upstream_says(u, json!({ "jsonrpc": "2.0", "id": req["id"], "result": { "content": [{ "type": "text", "text": "done" }] } }));
    req
}

// covers: tools-server-sec-validate-inputs
#[test]
fn two_principals_see_their_own_catalogs_and_list_changed() {
    let opts = with_policy(json!({ "catalogs": {
        "alice": { "allow": ["a"] },
        "bob": { "deny": ["a/secret*"] }
    }}));
    let mut p = Pair::with(vec![("a", Fake::tools(&["open", "secret_x"])), ("b", Fake::tools(&["y"]))], opts);
    let alice = p.client("2025-11-25", json!({}));
    p.hub.handle(Input::ClientPrincipal(alice, b"token:alice"), p.now);
    let bob = p.client("2025-11-25", json!({}));
    p.hub.handle(Input::ClientPrincipal(bob, b"token:bob"), p.now);
    let stdio = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(alice), ["a__open", "a__secret_x"]);
    assert_eq!(p.names(bob), ["a__open", "b__y"]);
    assert_eq!(p.names(stdio), ["a__open", "a__secret_x", "b__y"], "no entry and no \"*\": everything");
    // A hidden tool is unknown to its calls, and never reaches the upstream.
    let r = call(&mut p, bob, 5, "a__secret_x", json!({}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(r["error"]["message"], "Unknown tool: a__secret_x");
    assert!(p.up_quiet(0));
    let r = call(&mut p, alice, 6, "b__y", json!({}));
    assert_eq!(r["error"]["message"], "Unknown tool: b__y");
    assert!(p.up_quiet(1));
    // b changes: bob and stdio see it, alice (who sees none of b) is not told.
    p.fakes[1].as_mut().unwrap().tools.push(tool("z"));
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    assert_eq!(p.take(bob)["method"], "notifications/tools/list_changed");
    assert_eq!(p.take(stdio)["method"], "notifications/tools/list_changed");
    assert!(p.client_quiet(alice));
    // a's hidden tool changes: only those who see it are told.
    p.fakes[0].as_mut().unwrap().tools[1]["description"] = json!("changed");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    assert_eq!(p.take(alice)["method"], "notifications/tools/list_changed");
    assert_eq!(p.take(stdio)["method"], "notifications/tools/list_changed");
    assert!(p.client_quiet(bob));
}

// covers: tools-server-sec-validate-inputs, completion-security
#[test]
fn the_call_over_the_limit_is_refused_and_never_forwarded() {
    let opts = with_policy(json!({ "rateLimits": {
        "toolCalls": { "perPrincipal": "3/s", "perServer": null },
        "completions": { "perPrincipal": "1/min" }
    }}));
    let mut f = Fake::tools(&["x"]);
    f.caps = json!({ "tools": {}, "prompts": {}, "completions": {} });
    f.prompts = vec![json!({ "name": "p" })];
    let mut p = Pair::with(vec![("a", f)], opts);
    let c = p.client("2025-11-25", json!({}));
    p.names(c);
    for id in 1..=3 {
        assert_eq!(call(&mut p, c, id, "a__x", json!({})), Value::Null);
        answer_up(&mut p, 0);
        assert!(p.take(c)["result"].is_object());
    }
    let r = call(&mut p, c, 4, "a__x", json!({}));
    assert_eq!(r["error"]["code"], -32600, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("policy.rateLimits.toolCalls.perPrincipal (3/s)") && msg.contains("retry after"), "{msg}");
    assert!(r["error"]["data"]["retryAfterMs"].as_u64().is_some_and(|ms| ms > 0 && ms <= 1000), "{r}");
    assert!(p.up_quiet(0), "the refused call never reaches the upstream");
    // A second later the bucket has refilled.
    p.advance(1000);
    assert_eq!(call(&mut p, c, 5, "a__x", json!({})), Value::Null);
    answer_up(&mut p, 0);
    p.take(c);
    // Completions have their own limit: one forwarded, the next refused.
    let complete = json!({ "ref": { "type": "ref/prompt", "name": "a__p" }, "argument": { "name": "a", "value": "" } });
    p.send(c, json!({ "jsonrpc": "2.0", "id": 7, "method": "completion/complete", "params": complete }));
    assert_eq!(p.take_up(0)["method"], "completion/complete");
    let r = p.request(c, json!(8), "completion/complete", complete);
    assert!(r["error"]["message"].as_str().unwrap_or("").contains("policy.rateLimits.completions.perPrincipal (1/min)"), "{r}");
    assert!(p.up_quiet(0));
}

// covers: json-schema-validate-per-dialect-and-error-on-unsupported, tools-server-sec-validate-inputs
#[cfg(feature = "validate")]
#[test]
fn invalid_arguments_are_refused_naming_the_property() {
    let opts = with_policy(json!({ "validate": { "servers": ["a"] } }));
    let mut f = Fake::tools(&["typed", "odd"]);
    f.tools[0]["inputSchema"] = json!({ "type": "object", "properties": { "count": { "type": "integer" } }, "required": ["count"] });
    f.tools[1]["inputSchema"] = json!({ "$schema": "http://example.com/my-own-dialect", "type": "object" });
    let mut p = Pair::with(vec![("a", f), ("b", Fake::tools(&["free"]))], opts);
    assert!(p.logs.iter().any(|(_, l)| l.contains("'odd'") && l.contains("inputSchema")), "{:?}", p.logs);
    let c = p.client("2025-11-25", json!({}));
    p.names(c);
    let r = call(&mut p, c, 1, "a__typed", json!({ "count": "three" }));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("a__typed") && msg.contains("/count"), "{msg}");
    assert_eq!(r["error"]["data"]["errors"][0]["pointer"], "/count", "{r}");
    let r = call(&mut p, c, 2, "a__typed", json!({}));
    assert!(r["error"]["message"].as_str().unwrap().contains("count"), "{r}");
    // An unsupported dialect is a clear error, not a silent pass.
    let r = call(&mut p, c, 3, "a__odd", json!({}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("my-own-dialect"), "{r}");
    assert!(p.up_quiet(0), "refused calls never reach the upstream");
    // Valid arguments pass; servers outside `validate.servers` are not checked.
    assert_eq!(call(&mut p, c, 4, "a__typed", json!({ "count": 3 })), Value::Null);
    assert_eq!(p.take_up(0)["params"]["arguments"], json!({ "count": 3 }));
    assert_eq!(call(&mut p, c, 5, "b__free", json!({ "anything": [1] })), Value::Null);
    p.take_up(1);
}

// covers: tools-server-sec-validate-inputs
#[cfg(feature = "validate")]
#[test]
fn structured_content_breaking_the_output_schema_is_logged_or_refused() {
    for (output, refused) in [("log", false), ("refuse", true)] {
        let mut f = Fake::tools(&["area"]);
        f.tools[0]["outputSchema"] = json!({ "type": "object", "properties": { "area": { "type": "number" } }, "required": ["area"] });
        let mut p = Pair::with(vec![("a", f)], with_policy(json!({ "validate": { "output": output } })));
        let c = p.client("2025-11-25", json!({}));
        p.names(c);
        for (id, area) in [(1, json!(2.5)), (2, json!("wide"))] {
            assert_eq!(call(&mut p, c, id, "a__area", json!({})), Value::Null);
            let req = p.take_up(0);
            let content = json!({ "area": area });
            p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": req["id"], "result": { "content": [{ "type": "text", "text": content.to_string() }], "structuredContent": content } }));
            let r = p.take(c);
            let bad = id == 2;
            assert_eq!(r["result"]["isError"] == true, bad && refused, "{output}: {r}");
            if bad && refused {
                assert!(r["result"]["content"][0]["text"].as_str().unwrap().contains("/area"), "{r}");
            } else {
                assert_eq!(r["result"]["structuredContent"], content);
            }
        }
        assert!(p.logs.iter().any(|(_, l)| l.contains("tool 'area' returned") && l.contains("/area")), "{:?}", p.logs);
    }
}

// covers: tools-annotations-untrusted
#[test]
fn untrusted_annotations_carry_their_server_or_are_removed() {
    let annotated = |names: &[&str]| {
        let mut f = Fake::tools(names);
        for t in &mut f.tools {
            t["annotations"] = json!({ "readOnlyHint": true, "destructiveHint": false });
        }
        f
    };
    for (mode, expect_marked) in [("mark", true), ("remove", false)] {
        let names = ["vetted", "random"];
        let mut specs = specs(&names);
        specs[0].trusted = true;
        let mut p = Pair::new(specs, with_policy(json!({ "untrustedAnnotations": mode })));
        p.start(0, annotated(&["t"]));
        p.start(1, annotated(&["t"]));
        // A client whose revision has no `_meta` on tools gets none of them.
        let old = p.client("2025-03-26", json!({}));
        let tools = p.list_all(old, "tools/list", "tools");
        assert_eq!(tools[0]["annotations"]["readOnlyHint"], true);
        assert!(tools[1].get("annotations").is_none(), "{}", tools[1]);
        let c = p.client("2025-11-25", json!({}));
        let tools = p.list_all(c, "tools/list", "tools");
        assert_eq!(tools[0]["annotations"]["readOnlyHint"], true, "a trusted server's annotations stay");
        assert!(tools[0].pointer("/_meta/io.github.mcpx~1provenance").is_none(), "{}", tools[0]);
        if expect_marked {
            assert_eq!(tools[1]["annotations"]["readOnlyHint"], true);
            assert_eq!(tools[1]["_meta"]["io.github.mcpx/provenance"], json!({ "server": "random", "trusted": false }), "{}", tools[1]);
        } else {
            assert!(tools[1].get("annotations").is_none(), "{}", tools[1]);
        }
    }
}

// covers: tools-server-sec-validate-inputs
#[test]
fn tool_search_lists_meta_tools_and_calls_through_the_same_policy() {
    let opts = with_policy(json!({
        "catalogs": { "stdio": { "toolSearch": true, "deny": ["a/hidden"] } },
        "rateLimits": { "toolCalls": { "perTool": { "a__op_7": "1/min" } } }
    }));
    let mut f = Fake::tools(&[]);
    for i in 0..500 {
        let mut t = tool(&format!("op_{i}"));
        t["description"] = json!(if i == 7 { "Paint the stripes of a zebra crossing".to_string() } else { format!("Operation {i} on widgets") });
        f.tools.push(t);
    }
    f.tools.push(tool("hidden"));
    f.page = 1000;
    let opts = HubOptions { max_list_items: 1000, ..opts };
    let mut p = Pair::with(vec![("a", f)], opts);
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["mcpx_search_tools", "mcpx_describe_tool", "mcpx_call_tool"]);
    let r = call(&mut p, c, 1, "mcpx_search_tools", json!({ "query": "zebra", "limit": 3 }));
    assert_eq!(r["result"]["structuredContent"]["tools"][0]["name"], "a__op_7", "{r}");
    let r = call(&mut p, c, 2, "mcpx_search_tools", json!({ "query": "hidden" }));
    assert!(!r.to_string().contains("a__hidden"), "the catalog applies to search: {r}");
    let r = call(&mut p, c, 3, "mcpx_describe_tool", json!({ "name": "a__op_7" }));
    assert_eq!(r["result"]["structuredContent"]["inputSchema"], json!({ "type": "object" }), "{r}");
    // The call goes to the named tool with the inner arguments.
    assert_eq!(call(&mut p, c, 4, "mcpx_call_tool", json!({ "name": "a__op_7", "arguments": { "k": 1 } })), Value::Null);
    let req = answer_up(&mut p, 0);
    assert_eq!(req["params"]["name"], "op_7");
    assert_eq!(req["params"]["arguments"], json!({ "k": 1 }));
    assert_eq!(p.take(c)["result"]["content"][0]["text"], "done");
    // ... and through the same limits and catalog.
    let r = call(&mut p, c, 5, "mcpx_call_tool", json!({ "name": "a__op_7" }));
    assert!(r["error"]["message"].as_str().unwrap().contains("perTool[\"a__op_7\"]"), "{r}");
    let r = call(&mut p, c, 6, "mcpx_call_tool", json!({ "name": "a__hidden" }));
    assert_eq!(r["error"]["message"], "Unknown tool: a__hidden");
    assert!(p.up_quiet(0));
}

/// An upstream's `sampling/createMessage` request `id`.
fn sampling(id: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "sampling/createMessage", "params": { "messages": [{ "role": "user", "content": { "type": "text", "text": "q" } }], "maxTokens": 3 } })
}

// covers: sampling-client-rate-limit, elicitation-client-rate-limit
#[test]
fn server_requests_over_their_limit_are_refused_to_the_server() {
    let opts = with_policy(json!({ "rateLimits": { "serverRequests": { "perServer": "1/min" } } }));
    let mut p = Pair::with(vec![("a", Fake::tools(&["x"]))], opts);
    let c = p.client("2025-11-25", json!({ "sampling": {}, "elicitation": {} }));
    p.names(c);
    assert_eq!(call(&mut p, c, 1, "a__x", json!({})), Value::Null);
    p.take_up(0);
    p.upstream_says(0, sampling("s1"));
    assert_eq!(p.take(c)["method"], "sampling/createMessage", "the first one is relayed");
    p.upstream_says(0, sampling("s2"));
    assert!(p.client_quiet(c), "the second never reaches the client");
    let r = p.take_up(0);
    assert_eq!(r["id"], "s2");
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("policy.rateLimits.serverRequests.perServer (1/min)"), "{r}");
    // Elicitation shares the server's budget.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": { "mode": "form", "message": "m", "requestedSchema": { "type": "object", "properties": {} } } }));
    assert!(p.client_quiet(c));
    assert!(p.take_up(0)["error"]["message"].as_str().unwrap().contains("serverRequests"));
}

// covers: progress-rate-limit
#[test]
fn progress_over_its_cap_per_request_is_dropped() {
    let (mut p, c) = listed(json!({ "rateLimits": { "progressPerRequest": 2 } }), json!({}));
    for id in [1, 2] {
        p.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": "a__x", "_meta": { "progressToken": "t" } } }));
        let req = p.take_up(0);
        let token = req["params"]["_meta"]["progressToken"].clone();
        for n in 1..=5 {
            p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": token, "progress": n } }));
        }
        let got: Vec<Value> = std::iter::from_fn(|| p.cl.get_mut(&c).and_then(VecDeque::pop_front).map(|x| x.0)).collect();
        assert_eq!(got.iter().map(|v| v["params"]["progress"].clone()).collect::<Vec<_>>(), [json!(1), json!(2)], "each request gets its own cap: {got:?}");
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": req["id"], "result": { "content": [] } }));
        assert_eq!(p.take(c)["id"], id);
    }
    assert_eq!(p.logs.iter().filter(|(_, l)| l.contains("policy.rateLimits.progressPerRequest (2)")).count(), 2, "logged once per request: {:?}", p.logs);
}

// covers: logging-impl-validate-control, logging-server-hygiene
#[test]
fn log_messages_over_the_cap_of_the_requests_in_flight_are_dropped() {
    let (mut p, c) = listed(json!({ "rateLimits": { "logsPerRequest": 2 } }), json!({}));
    let log = |n: u32| json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": { "level": "info", "data": n } });
    let drain = |p: &mut Pair| -> Vec<Value> { std::iter::from_fn(|| p.cl.get_mut(&c).and_then(VecDeque::pop_front).map(|x| x.0)).map(|v| v["params"]["data"].clone()).collect() };
    // Two calls in flight: a message counts against both, so the cap is
    // reached when both have sent two.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "a__x" } }));
    let first = p.take_up(0);
    for n in 1..=2 {
        p.upstream_says(0, log(n));
    }
    p.send(c, json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "a__x" } }));
    let second = p.take_up(0);
    for n in 3..=6 {
        p.upstream_says(0, log(n));
    }
    assert_eq!(drain(&mut p), [json!(1), json!(2), json!(3), json!(4)], "the second call's budget carries messages 3 and 4");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": first["id"], "result": { "content": [] } }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": second["id"], "result": { "content": [] } }));
    assert_eq!(p.take(c)["id"], 1);
    assert_eq!(p.take(c)["id"], 2);
    // No request in flight: the message is no request's, not capped here.
    p.upstream_says(0, log(7));
    assert_eq!(drain(&mut p), [json!(7)]);
    assert_eq!(p.logs.iter().filter(|(_, l)| l.contains("log notifications of one request over policy.rateLimits.logsPerRequest (2)")).count(), 2, "once per request: {:?}", p.logs);
    let text = p.hub.metrics_text(0, 0).expect("metrics on by default");
    assert!(text.contains("mcpx_notifications_dropped_total{server=\"a\",kind=\"log\"} 2"), "{text}");
}

/// `_meta` of a 2026-07-28 request declaring `caps`.
fn modern_meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": { "name": "t", "version": "1" },
    })
}

// covers: tools-server-sec-validate-inputs, subscriptions-list-changed-via-listen
#[test]
fn a_listen_stream_hears_only_of_tool_changes_its_principal_sees() {
    let opts = with_policy(json!({ "catalogs": { "alice": { "allow": ["a"] } } }));
    let mut p = Pair::with(vec![("a", Fake::tools(&["x"])), ("b", Fake::tools(&["y"]))], opts);
    let alice = p.connect();
    p.hub.handle(Input::ClientPrincipal(alice, b"token:alice"), p.now);
    let bob = p.connect();
    p.hub.handle(Input::ClientPrincipal(bob, b"token:bob"), p.now);
    for c in [alice, bob] {
        p.send(c, json!({ "jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": { "notifications": { "toolsListChanged": true }, "_meta": modern_meta(json!({})) } }));
        assert_eq!(p.take(c)["method"], "notifications/subscriptions/acknowledged");
    }
    // b's tools change: bob sees b, alice does not.
    p.fakes[1].as_mut().unwrap().tools.push(tool("z"));
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    let n = p.take(bob);
    assert_eq!((n["method"].clone(), n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone()), (json!("notifications/tools/list_changed"), json!(7)));
    assert!(p.client_quiet(alice), "a change alice cannot see is not announced to her");
    // a's tools change: both see a.
    p.fakes[0].as_mut().unwrap().tools.push(tool("w"));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    assert_eq!(p.take(alice)["method"], "notifications/tools/list_changed");
    assert_eq!(p.take(bob)["method"], "notifications/tools/list_changed");
    assert!(p.client_quiet(alice) && p.client_quiet(bob));
}

/// A hub with `policy` and upstream `a` (tool `x`), and a 2025-11-25
/// client declaring `caps` whose call of `a__x` the upstream has.
/// A hub over `a` (tool `x`) with `policy`, and a 2025-11-25 client with
/// `caps` that has read the tool list.
fn listed(policy: Value, caps: Value) -> (Pair, ClientId) {
    let mut p = Pair::with(vec![("a", Fake::tools(&["x"]))], with_policy(policy));
    let c = p.client("2025-11-25", caps);
    p.names(c);
    (p, c)
}

fn calling(policy: Value, caps: Value) -> (Pair, ClientId) {
    let (mut p, c) = listed(policy, caps);
    assert_eq!(call(&mut p, c, 1, "a__x", json!({})), Value::Null);
    p.take_up(0);
    (p, c)
}

const ELICIT_SCHEMA: &str = r#"{ "type": "object", "properties": { "n": { "type": "integer" }, "name": { "type": "string" } }, "required": ["n"] }"#;

fn elicitation(id: &str) -> Value {
    let schema: Value = serde_json::from_str(ELICIT_SCHEMA).unwrap();
    json!({ "jsonrpc": "2.0", "id": id, "method": "elicitation/create", "params": { "mode": "form", "message": "m", "requestedSchema": schema } })
}

// covers: elicitation-both-validate-against-schema, elicitation-client-validate-responses, tools-client-sec
#[test]
fn a_legacy_clients_elicitation_answer_is_checked_and_audited() {
    let log = audit_file("elicitation");
    let (mut p, c) = calling(json!({ "validate": { "servers": ["a"] }, "audit": { "file": log } }), json!({ "elicitation": {} }));
    // An answer breaking the schema: the server gets -32602 naming /n.
    p.upstream_says(0, elicitation("e1"));
    let asked = p.take(c);
    assert_eq!(asked["method"], "elicitation/create");
    p.send(c, json!({ "jsonrpc": "2.0", "id": asked["id"], "result": { "action": "accept", "content": { "n": "three" } } }));
    let r = p.take_up(0);
    assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (json!("e1"), json!(-32602)), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("/n"), "{r}");
    assert_eq!(r["error"]["data"]["errors"][0]["pointer"], "/n", "{r}");
    // A valid answer passes as the client wrote it; a decline has no content to check.
    p.upstream_says(0, elicitation("e2"));
    let asked = p.take(c);
    let answer = json!({ "action": "accept", "content": { "n": 3, "name": "x" } });
    p.send(c, json!({ "jsonrpc": "2.0", "id": asked["id"], "result": answer }));
    let r = p.take_up(0);
    assert_eq!((r["id"].clone(), r["result"].clone()), (json!("e2"), answer), "{r}");
    p.upstream_says(0, elicitation("e3"));
    let asked = p.take(c);
    p.send(c, json!({ "jsonrpc": "2.0", "id": asked["id"], "result": { "action": "decline" } }));
    assert_eq!(p.take_up(0)["result"]["action"], "decline");
    let lines = audit_lines(&log, 3);
    let outcomes: Vec<(&str, &str)> = lines.iter().map(|l| (l["method"].as_str().unwrap(), l["outcome"].as_str().unwrap())).collect();
    assert_eq!(outcomes, [("elicitation/create", "error"), ("elicitation/create", "result"), ("elicitation/create", "result")], "{lines:#?}");
    assert_eq!(lines[0]["errorCode"], -32602);
    for l in &lines {
        assert_eq!((l["principal"].as_str(), l["server"].as_str(), l["clientRevision"].as_str()), (Some("stdio"), Some("a"), Some("2025-11-25")), "{l}");
        assert!(l["durationMs"].is_u64() && l["bytesIn"].as_u64() > Some(0) && l["bytesOut"].as_u64() > Some(0), "{l}");
    }
}

/// The params of a 2026-07-28 `tools/call` of `tool` by a client that can
/// answer form elicitations, with the members of `extra` (a retry's).
fn modern_call_asking(tool: &str, extra: Value) -> Value {
    let mut params = json!({ "name": tool, "arguments": {}, "_meta": modern_meta(json!({ "elicitation": { "form": {} } })) });
    if let (Some(o), Value::Object(x)) = (params.as_object_mut(), extra) {
        o.extend(x);
    }
    params
}

// covers: elicitation-both-validate-against-schema, elicitation-client-validate-responses, mrtr-server-validate-responses
#[test]
fn a_modern_clients_input_response_is_checked_before_the_legacy_server_gets_it() {
    let opts = with_policy(json!({ "validate": { "servers": ["a"] } }));
    let mut p = Pair::with(vec![("a", Fake::tools(&["x"]))], opts);
    let c = p.connect();
    let call_with = |extra: Value| modern_call_asking("a__x", extra);
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call_with(json!({})) }));
    let up_call = p.take_up(0);
    p.upstream_says(0, elicitation("e1"));
    let irr = p.take(c);
    let (key, _) = irr["result"]["inputRequests"].as_object().expect("input_required").iter().next().unwrap();
    let state = irr["result"]["requestState"].clone();
    let retry = json!({ "inputResponses": { key.clone(): { "action": "accept", "content": { "name": "no n" } } }, "requestState": state });
    p.send(c, json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call_with(retry) }));
    let r = p.take_up(0);
    assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (json!("e1"), json!(-32602)), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("\"n\""), "names the missing property: {r}");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up_call["id"], "result": { "content": [] } }));
    assert_eq!(p.take(c)["id"], 2);
}

// covers: sampling-client-rate-limit, tools-client-sec
#[test]
fn relayed_sampling_and_its_refusal_get_audit_lines() {
    let log = audit_file("sampling");
    let (mut p, c) = calling(json!({ "rateLimits": { "serverRequests": { "perServer": "1/min" } }, "audit": { "file": log } }), json!({ "sampling": {} }));
    p.upstream_says(0, sampling("s1"));
    let asked = p.take(c);
    p.now += 25;
    p.send(c, json!({ "jsonrpc": "2.0", "id": asked["id"], "result": { "role": "assistant", "content": { "type": "text", "text": "a" }, "model": "m" } }));
    assert_eq!(p.take_up(0)["id"], "s1");
    p.upstream_says(0, sampling("s2"));
    assert_eq!(p.take_up(0)["error"]["code"], -32600);
    let lines = audit_lines(&log, 2);
    assert_eq!((lines[0]["method"].as_str(), lines[0]["outcome"].as_str()), (Some("sampling/createMessage"), Some("result")), "{lines:#?}");
    assert_eq!(lines[0]["durationMs"], 25);
    assert_eq!((lines[1]["outcome"].as_str(), lines[1]["limit"].as_str()), (Some("refused"), Some("policy.rateLimits.serverRequests.perServer (1/min)")), "{lines:#?}");
    for l in &lines {
        assert_eq!((l["principal"].as_str(), l["server"].as_str()), (Some("stdio"), Some("a")), "{l}");
        assert!(l.get("name").is_none() && l["bytesIn"].as_u64() > Some(0), "{l}");
    }
}

/// A fresh audit file path for test `name`.
fn audit_file(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpx-hub-audit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("audit.jsonl")
}

/// The audit file's lines once there are `n` (the writer is a thread).
fn audit_lines(path: &std::path::Path, n: usize) -> Vec<Value> {
    for _ in 0..100 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
        if lines.len() >= n {
            return lines;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("fewer than {n} audit lines in {}", path.display());
}

/// Issue 12 item 10: at debug level every call gets one log line naming the
/// client, server, method, duration and outcome; off, none.
#[test]
fn at_debug_level_each_call_gets_one_line_with_its_outcome() {
    let opts = HubOptions { startup_wait_ms: 0, policy: crate::policy::PolicyConfig { metrics: false, ..Default::default() }, ..HubOptions::default() };
    let mut p = Pair::with(vec![("a", Fake::tools(&["x"]))], opts);
    let c = p.client("2025-06-18", json!({}));
    p.hub.handle(Input::ClientPrincipal(c, b"token:alice"), p.now);
    let lines = |p: &Pair| p.logs.iter().filter(|(l, s)| *l == Level::Debug && s.starts_with("tools/call")).map(|(_, s)| s.clone()).collect::<Vec<_>>();
    assert!(call(&mut p, c, 1, "a__x", json!({})).is_null());
    answer_up(&mut p, 0);
    assert_eq!(p.take(c)["id"], 1);
    assert!(lines(&p).is_empty(), "no call lines unless asked: {:?}", p.logs);
    p.hub.handle(Input::CallLog(true), p.now);
    assert!(call(&mut p, c, 2, "a__x", json!({})).is_null());
    p.now += 7;
    answer_up(&mut p, 0);
    assert_eq!(p.take(c)["id"], 2);
    let r = call(&mut p, c, 3, "a__nope", json!({}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let got = lines(&p);
    assert_eq!(got.len(), 2, "one line per call: {got:?}");
    for part in ["tools/call a__x (its 'x')", "of 'alice' (2025-06-18)", "to server 'a'", ": result in 7 ms"] {
        assert!(got[0].contains(part), "{part:?} missing from {:?}", got[0]);
    }
    assert!(got[1].contains(": error -32602 in 0 ms"), "{:?}", got[1]);
    // The refusal names what was asked and the stage that refused it.
    assert!(got[1].starts_with("tools/call a__nope of 'alice'") && got[1].ends_with("refused at stage route"), "{:?}", got[1]);
}

/// A call refused before it is routed (its client has not initialized)
/// gets its line too, naming what was asked: its record opens with the
/// request, before any stage.
#[test]
fn a_call_refused_before_initialize_gets_its_line_naming_what_was_asked() {
    let opts = HubOptions { startup_wait_ms: 0, policy: crate::policy::PolicyConfig { metrics: false, ..Default::default() }, ..HubOptions::default() };
    let mut p = Pair::with(vec![("a", Fake::tools(&["x"]))], opts);
    let c = p.connect();
    p.hub.handle(Input::CallLog(true), p.now);
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "a__x", "arguments": {} } }));
    let r = p.take(c);
    assert!(r["id"] == 1 && r["error"]["code"].is_i64(), "refused: {r}");
    let got: Vec<&String> = p.logs.iter().filter(|(l, s)| *l == Level::Debug && s.starts_with("tools/call")).map(|(_, s)| s).collect();
    assert_eq!(got.len(), 1, "one line: {:?}", p.logs);
    assert!(got[0].starts_with("tools/call a__x of ") && got[0].contains(": error -32"), "{:?}", got[0]);
}

/// A 2026-07-28 server asks inside its own `InputRequiredResult`; the
/// answers come back in the client's retry, checked against the schema
/// sealed into mcpx's requestState: an invalid one never reaches the server.
// covers: elicitation-both-validate-against-schema, elicitation-server-validate-received-data, mrtr-server-validate-responses
#[test]
fn a_modern_servers_own_elicitation_is_checked_in_the_retry() {
    let opts = with_policy(json!({ "validate": { "servers": ["m"] } }));
    let mut p = Pair::with(vec![("m", Fake::modern(&["ask"]))], opts);
    let c = p.connect();
    let params = |extra: Value| modern_call_asking("m__ask", extra);
    let schema: Value = serde_json::from_str(ELICIT_SCHEMA).unwrap();
    let round = |p: &mut Pair, id: u64| {
        p.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params(json!({})) }));
        let call = p.take_up(0);
        let irr = json!({ "resultType": "input_required", "inputRequests": { "k1": { "method": "elicitation/create", "params": { "mode": "form", "message": "m", "requestedSchema": schema } } }, "requestState": "up-state" });
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": irr }));
        p.take(c)["result"]["requestState"].clone()
    };
    let state = round(&mut p, 1);
    let bad = json!({ "inputResponses": { "k1": { "action": "accept", "content": { "name": "no n" } } }, "requestState": state });
    p.send(c, json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params(bad) }));
    let r = p.take(c);
    assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (json!(2), json!(-32602)), "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("inputResponses.k1") && msg.contains("\"n\"") && msg.contains("server 'm'"), "names the answer, the property and the server: {r}");
    assert!(p.up_quiet(0), "the invalid answer never reaches the server");
    // A valid answer (or a decline) goes on with the server's own state.
    let state = round(&mut p, 3);
    let good = json!({ "inputResponses": { "k1": { "action": "accept", "content": { "name": "Ann", "n": 3 } } }, "requestState": state });
    p.send(c, json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": params(good) }));
    let retry = p.take_up(0);
    assert_eq!(retry["params"]["requestState"], "up-state", "{retry}");
    assert_eq!(retry["params"]["inputResponses"]["k1"]["content"]["n"], 3, "{retry}");
}

// covers: tasks-rate-limit
#[test]
fn task_requests_have_their_own_limit_per_principal() {
    let opts = with_policy(json!({ "rateLimits": { "taskRequests": { "perPrincipal": "2/s" } } }));
    let mut p = Pair::with(vec![("a", Fake::tools(&["x"]))], opts);
    let tasks = json!({ "tasks": { "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } } });
    let alice = p.client("2025-11-25", tasks.clone());
    p.hub.handle(Input::ClientPrincipal(alice, b"token:alice"), p.now);
    let bob = p.client("2025-11-25", tasks);
    p.hub.handle(Input::ClientPrincipal(bob, b"token:bob"), p.now);
    for id in 1..=2 {
        let r = p.request(alice, json!(id), "tasks/list", json!({}));
        assert!(r["result"]["tasks"].is_array(), "{r}");
    }
    let r = p.request(alice, json!(3), "tasks/get", json!({ "taskId": "nope" }));
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("policy.rateLimits.taskRequests.perPrincipal (2/s)"), "{r}");
    // Another principal has its own bucket; the refused one refills.
    assert!(p.request(bob, json!(4), "tasks/list", json!({}))["result"]["tasks"].is_array());
    p.advance(1000);
    assert!(p.request(alice, json!(5), "tasks/list", json!({}))["result"]["tasks"].is_array());
    assert!(p.up_quiet(0));
}

// covers: messages-resulttype-required, messages-resulttype-server-must-include
#[test]
fn a_meta_tools_answer_to_a_2026_client_is_a_complete_result_of_mcpx() {
    let opts = with_policy(json!({ "catalogs": { "stdio": { "toolSearch": true } } }));
    let mut p = Pair::with(vec![("a", Fake::tools(&["op"]))], opts);
    let c = p.connect();
    let caps = json!({});
    let r = p.mreq(c, json!(1), "tools/call", json!({ "name": "mcpx_search_tools", "arguments": { "query": "op" } }), &caps);
    schema_check("2026-07-28", "CallToolResultResponse", &r);
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcpx", "{r}");
}

// Who calls what: a made-up (or hidden) tool name is counted as `_unknown`
// and takes none of the labelled slots, so a client calling more
// names that do not exist leaves the real tools their own series.
#[cfg(feature = "activity")]
#[test]
fn made_up_tool_names_take_no_labelled_slot_in_tool_call_metrics() {
    let mut p = Pair::with(vec![("a", Fake::tools(&["x"]))], HubOptions { startup_wait_ms: 0, ..HubOptions::default() });
    let c = p.client("2025-11-25", json!({}));
    for i in 0..crate::policy::callers::TOOLS_LABELLED + 20 {
        let r = call(&mut p, c, i as u64 + 10, &format!("nope{i}"), json!({}));
        assert_eq!(r["error"]["code"], -32602, "{r}");
    }
    assert!(call(&mut p, c, 5, "a__x", json!({})).is_null(), "forwarded");
    answer_up(&mut p, 0);
    p.take(c);
    let text = p.hub.metrics_text(0, 0).expect("metrics on by default");
    assert!(text.contains("mcpx_tool_calls_total{tool=\"_unknown\",principal=\"stdio\",outcome=\"error\"} 84"), "{text}");
    assert!(text.contains("mcpx_tool_calls_total{tool=\"a__x\",principal=\"stdio\",outcome=\"result\"} 1"), "{text}");
    assert!(!text.contains("nope"), "{text}");
}
