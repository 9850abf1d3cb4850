//! The request pipeline's stages (`hub::stages`) hold on every path: a
//! call to an unknown or hidden tool is charged by the rate limits, and a
//! principal's catalog covers prompts, resources, templates, completions
//! and subscriptions as it covers tools.

use super::*;

fn with_policy(policy: Value) -> HubOptions {
    let src = json!({ "mcpServers": {}, "policy": policy }).to_string();
    let env = |_: &str| None;
    let cfg = crate::config::parse(&src, "mcpx.json", std::path::Path::new("/cfg"), &env).expect("a valid policy");
    HubOptions { policy: cfg.policy, startup_wait_ms: 0, ..HubOptions::default() }
}

fn call(p: &mut Pair, c: ClientId, id: u64, name: &str) -> Value {
    p.request(c, json!(id), "tools/call", json!({ "name": name, "arguments": {} }))
}

/// A server with a tool, a prompt, a resource and a template, that can
/// complete and be subscribed to.
fn everything(tool_name: &str) -> Fake {
    let mut f = Fake::tools(&[tool_name]);
    f.caps = json!({ "tools": {}, "prompts": {}, "resources": { "subscribe": true }, "completions": {} });
    f.prompts = vec![json!({ "name": "greet" })];
    f.resources = vec![json!({ "uri": format!("file:///{tool_name}/readme"), "name": "readme" })];
    f.templates = vec![json!({ "uriTemplate": format!("file:///{tool_name}/{{path}}"), "name": "files" })];
    f
}

// covers: tools-server-sec-validate-inputs
#[test]
fn calls_to_unknown_or_hidden_tools_are_charged_by_the_rate_limits() {
    let opts = with_policy(json!({
        "rateLimits": { "toolCalls": { "perPrincipal": "3/s", "perServer": null } },
        "catalogs": { "alice": { "allow": ["a/x"] } }
    }));
    let mut p = Pair::with(vec![("a", Fake::tools(&["x", "hidden"]))], opts);
    let c = p.client("2025-11-25", json!({}));
    p.hub.handle(Input::ClientPrincipal(c, b"token:alice"), p.now);
    for (id, name) in [(1, "a__nope"), (2, "a__hidden"), (3, "a__nope")] {
        let r = call(&mut p, c, id, name);
        assert_eq!(r["error"]["message"], format!("Unknown tool: {name}"), "{r}");
    }
    // The principal's three tokens are spent: its next call, to a tool it
    // may call, is over the limit and never reaches the server.
    let r = call(&mut p, c, 4, "a__x");
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("perPrincipal (3/s)"), "{r}");
    assert!(p.up_quiet(0));
    // And an unknown name over the limit is refused by the limit: a flood of
    // them is as slow as any other.
    let r = call(&mut p, c, 5, "a__nope");
    assert_eq!(r["error"]["code"], -32600, "{r}");
    // A second later the bucket has refilled: the call goes through.
    p.advance(1_000);
    p.send(c, json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": { "name": "a__x", "arguments": {} } }));
    assert_eq!(p.take_up(0)["params"]["name"], "x");
}

// covers: tools-server-sec-validate-inputs
#[test]
fn a_catalog_covers_prompts_resources_templates_completions_and_subscriptions() {
    let opts = with_policy(json!({ "catalogs": { "alice": { "allow": ["a/x"] } } }));
    let mut p = Pair::with(vec![("a", everything("x")), ("b", everything("y"))], opts);
    let alice = p.client("2025-11-25", json!({}));
    p.hub.handle(Input::ClientPrincipal(alice, b"token:alice"), p.now);
    let stdio = p.client("2025-11-25", json!({}));

    // Lists: alice sees a's prompts, resources and templates, none of b's.
    let uris = |p: &mut Pair, c| p.list_all(c, "resources/list", "resources").iter().map(|r| r["uri"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(uris(&mut p, alice), ["file:///x/readme"]);
    assert_eq!(uris(&mut p, stdio), ["file:///x/readme", "file:///y/readme"]);
    let prompts = p.list_all(alice, "prompts/list", "prompts");
    assert_eq!(prompts.iter().map(|x| x["name"].as_str().unwrap()).collect::<Vec<_>>(), ["a__greet"]);
    let templates = p.list_all(alice, "resources/templates/list", "resourceTemplates");
    assert_eq!(templates.len(), 1, "{templates:?}");
    assert_eq!(templates[0]["uriTemplate"], "file:///x/{path}");

    // Reads, gets, completions and subscriptions of b's: unknown to alice,
    // exactly as a name that does not exist, and nothing reaches b.
    let r = p.request(alice, json!(1), "prompts/get", json!({ "name": "b__greet" }));
    assert_eq!((r["error"]["code"].as_i64(), r["error"]["message"].as_str()), (Some(-32602), Some("Unknown prompt: b__greet")), "{r}");
    let r = p.request(alice, json!(2), "resources/read", json!({ "uri": "file:///y/readme" }));
    assert_eq!((r["error"]["code"].as_i64(), r["error"]["message"].as_str()), (Some(-32002), Some("Resource not found: file:///y/readme")), "{r}");
    let r = p.request(alice, json!(3), "completion/complete", json!({ "ref": { "type": "ref/prompt", "name": "b__greet" }, "argument": { "name": "n", "value": "" } }));
    assert_eq!(r["error"]["message"], "Unknown prompt: b__greet", "{r}");
    let r = p.request(alice, json!(4), "completion/complete", json!({ "ref": { "type": "ref/resource", "uri": "file:///y/{path}" }, "argument": { "name": "path", "value": "" } }));
    assert_eq!(r["error"]["code"], -32002, "{r}");
    let r = p.request(alice, json!(5), "resources/subscribe", json!({ "uri": "file:///y/readme" }));
    assert_eq!(r["error"]["code"], -32002, "{r}");
    assert!(p.up_quiet(1), "nothing of alice's reached b");

    // What alice may see still works, and stdio (no catalog) sees b.
    p.send(alice, json!({ "jsonrpc": "2.0", "id": 6, "method": "resources/read", "params": { "uri": "file:///x/readme" } }));
    assert_eq!(p.take_up(0)["method"], "resources/read");
    p.send(stdio, json!({ "jsonrpc": "2.0", "id": 7, "method": "prompts/get", "params": { "name": "b__greet" } }));
    assert_eq!(p.take_up(1)["method"], "prompts/get");
}

/// A change of b's prompts is news only to those who may see b.
#[test]
fn a_prompt_list_change_alice_cannot_see_sends_her_nothing() {
    let opts = with_policy(json!({ "catalogs": { "alice": { "allow": ["a/x"] } } }));
    let mut b = everything("y");
    b.caps = json!({ "tools": {}, "prompts": { "listChanged": true }, "resources": {} });
    let mut p = Pair::with(vec![("a", everything("x")), ("b", b)], opts);
    let alice = p.client("2025-11-25", json!({}));
    p.hub.handle(Input::ClientPrincipal(alice, b"token:alice"), p.now);
    let stdio = p.client("2025-11-25", json!({}));
    for c in [alice, stdio] {
        p.list_all(c, "prompts/list", "prompts");
    }
    p.fakes[1].as_mut().unwrap().prompts.push(json!({ "name": "bye" }));
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "method": "notifications/prompts/list_changed" }));
    assert_eq!(p.take(stdio)["method"], "notifications/prompts/list_changed");
    assert!(p.client_quiet(alice), "alice sees none of b's prompts");
}
