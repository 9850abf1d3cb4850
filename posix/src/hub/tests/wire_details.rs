//! Small wire details a client sees: the `.` separator where the client's
//! revision allows it, no upstream `serverInfo` in legacy results, batches
//! on a 2025-03-26 stream session, and no requests before `initialize`.

use serde_json::json;

use super::*;

fn dotted() -> Pair {
    let mut f = Fake::tools(&["read"]);
    f.caps = json!({ "tools": { "listChanged": true }, "prompts": {} });
    f.prompts = vec![json!({ "name": "greet" })];
    Pair::with(vec![("fs", f)], HubOptions { separator: ".".into(), ..HubOptions::default() })
}

fn instructions(p: &mut Pair, rev: &str) -> String {
    let c = p.connect();
    let init = p.request(c, json!(0), "initialize", json!({ "protocolVersion": rev, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }));
    init["result"]["instructions"].as_str().expect("instructions").to_string()
}

// covers: tools-name-charset, tools-name-unique-in-server
#[test]
fn a_dotted_separator_is_shown_where_the_revision_allows_it_and_either_spelling_routes() {
    let mut p = dotted();
    let new = p.client("2025-11-25", json!({}));
    let old = p.client("2025-06-18", json!({}));
    assert_eq!(p.names(new), ["fs.read"]);
    assert_eq!(p.names(old), ["fs__read"], "before 2025-11-25 tool names have no '.'");
    assert_eq!(p.list_all(new, "prompts/list", "prompts")[0]["name"], "fs.greet");
    assert_eq!(p.list_all(old, "prompts/list", "prompts")[0]["name"], "fs__greet");
    // Both spellings reach the upstream's own name, from either client.
    for (c, name) in [(new, "fs.read"), (new, "fs__read"), (old, "fs__read"), (old, "fs.read")] {
        p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": name, "arguments": {} } }));
        let up = p.take_up(0);
        assert_eq!(up["params"]["name"], "read", "{name}");
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
        assert_eq!(p.take(c)["result"], json!({ "content": [] }));
    }
    p.send(new, json!({ "jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": { "name": "fs.greet" } }));
    assert_eq!(p.take_up(0)["params"]["name"], "greet");
    // Unknown names are still unknown, whatever the separator.
    assert_eq!(err_code(&p.request(new, json!(3), "tools/call", json!({ "name": "fs.nope" }))), -32602);
    // The instructions give the separator and prefix each client's names have.
    let text = instructions(&mut p, "2025-11-25");
    assert!(text.contains("prefix and '.'") && text.contains("- fs fs.: ready"), "{text}");
    let text = instructions(&mut p, "2025-03-26");
    assert!(text.contains("prefix and '__'") && text.contains("- fs fs__: ready"), "{text}");
    // A modern client's revision allows it too.
    let m = p.connect();
    let r = p.mreq(m, json!(4), "tools/list", json!({}), &json!({}));
    assert_eq!(r["result"]["tools"][0]["name"], "fs.read", "{r}");
}

#[test]
fn the_default_separator_is_unchanged_for_every_revision() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    for rev in ["2024-11-05", "2025-11-25"] {
        let c = p.client(rev, json!({}));
        assert_eq!(p.names(c), ["fs__read"]);
    }
    assert!(matches!(
        Hub::new(specs(&["a"]), HubOptions { separator: "a:b".into(), ..HubOptions::default() }).err(),
        Some(ConfigError::BadSeparator(_))
    ));
}

// covers: meta-reserved-prefix-2025-06-18, meta-reserved-prefix-second-label
#[test]
fn a_modern_upstreams_server_info_does_not_reach_legacy_results() {
    let mut p = Pair::with(vec![("m", Fake::modern(&["read"]))], HubOptions::default());
    let info = json!({ "name": "upstream-m", "version": "9" });
    for (rev, other) in [("2025-11-25", true), ("2025-06-18", false), ("2024-11-05", true)] {
        let c = p.client(rev, json!({}));
        p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "m__read", "arguments": {} } }));
        let up = p.take_up(0);
        let mut meta = json!({ "io.modelcontextprotocol/serverInfo": info });
        if other {
            meta["com.example/trace"] = json!("t1");
        }
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "resultType": "complete", "content": [], "_meta": meta } }));
        let (r, raw) = p.take_raw(c);
        let text = String::from_utf8(raw).unwrap();
        assert!(!text.contains("serverInfo") && !text.contains("upstream-m"), "{rev}: {text}");
        if other {
            assert_eq!(r["result"]["_meta"], json!({ "com.example/trace": "t1" }), "{rev}");
        } else {
            assert!(r["result"].get("_meta").is_none(), "{rev}: {r}");
        }
        schema_check(rev, "CallToolResult", &r["result"]);
    }
    // A modern client gets mcpx's own serverInfo in its place.
    let m = p.connect();
    p.msend(m, json!(7), "tools/call", json!({ "name": "m__read", "arguments": {} }), &json!({}));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "resultType": "complete", "content": [], "_meta": { "io.modelcontextprotocol/serverInfo": info } } }));
    let r = p.take(m);
    assert_eq!(r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcpx", "{r}");
}

// covers: stdio-message-may-be-batch, messages-batch-may-send-must-receive, lifecycle-initialize-not-in-batch
#[test]
fn a_batch_on_a_2025_03_26_session_is_answered_as_one_array() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read", "write"]))], HubOptions::default());
    let c = p.client("2025-03-26", json!({}));
    p.send(c, json!([
        { "jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": { "name": "fs__read", "arguments": {} } },
        { "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "nothing" } },
        { "jsonrpc": "2.0", "id": 2, "method": "ping" },
        { "jsonrpc": "2.0", "id": "b", "method": "tools/call", "params": { "name": "fs__write", "arguments": {} } },
        { "jsonrpc": "2.0", "id": 3, "method": "initialize", "params": { "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } },
        { "foo": 1 },
    ]));
    // Nothing until the last request of the batch is answered.
    assert!(p.client_quiet(c));
    let read = p.take_up(0);
    let write = p.take_up(0);
    assert_eq!((read["params"]["name"].as_str(), write["params"]["name"].as_str()), (Some("read"), Some("write")));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": write["id"], "result": { "content": [{ "type": "text", "text": "w" }] } }));
    assert!(p.client_quiet(c), "half a batch is not an answer");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": read["id"], "result": { "content": [{ "type": "text", "text": "r" }] } }));
    let (all, _) = p.take_raw(c);
    assert!(p.client_quiet(c), "one message: {all}");
    let answers = all.as_array().unwrap_or_else(|| panic!("an array: {all}"));
    assert_eq!(answers.len(), 5, "{all}");
    let by_id = |id: Value| answers.iter().find(|a| a["id"] == id).unwrap_or_else(|| panic!("{id} in {all}"));
    assert_eq!(by_id(json!("a"))["result"]["content"][0]["text"], "r");
    assert_eq!(by_id(json!("b"))["result"]["content"][0]["text"], "w");
    assert_eq!(by_id(json!(2))["result"], json!({}));
    assert_eq!(err_code(by_id(json!(3))), -32600);
    assert_eq!(err_code(by_id(Value::Null)), -32600, "the element that is no message");
    for a in answers.iter().filter(|a| !a["id"].is_null()) {
        schema_check("2025-03-26", "JSONRPCMessage", a);
    }
    // A batch of notifications only gets no answer; the session goes on.
    p.send(c, json!([{ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "x" } }]));
    assert!(p.client_quiet(c));
    assert_eq!(p.request(c, json!(9), "ping", json!({}))["result"], json!({}));
    // A request cancelled in flight gets no answer: its batch does not wait for one.
    p.send(c, json!([
        { "jsonrpc": "2.0", "id": "gone", "method": "tools/call", "params": { "name": "fs__read", "arguments": {} } },
        { "jsonrpc": "2.0", "id": 8, "method": "ping" },
    ]));
    let up = p.take_up(0);
    assert!(p.client_quiet(c));
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "gone" } }));
    let all = p.take(c);
    assert_eq!(all, json!([{ "jsonrpc": "2.0", "id": 8, "result": {} }]));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    assert!(p.client_quiet(c), "the cancelled call's late answer is not sent");
    // Answered at once when nothing in it is forwarded.
    p.send(c, json!([{ "jsonrpc": "2.0", "id": 10, "method": "ping" }, { "jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": { "name": "nope" } }]));
    let all = p.take(c);
    assert_eq!(all.as_array().map(Vec::len), Some(2), "{all}");
}

// covers: messages-batch-may-send-must-receive
#[test]
fn a_batch_on_any_other_revision_or_before_initialize_is_refused() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    let two = json!([{ "jsonrpc": "2.0", "id": 1, "method": "ping" }, { "jsonrpc": "2.0", "id": 2, "method": "ping" }]);
    for rev in ["2024-11-05", "2025-06-18", "2025-11-25"] {
        let c = p.client(rev, json!({}));
        p.send(c, two.clone());
        let r = p.take(c);
        assert_eq!(err_code(&r), -32600, "{rev}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains(&format!("not supported in protocol revision {rev}")), "{r}");
        assert!(p.client_quiet(c), "{rev}: one error, not one per element");
        assert!(p.up_quiet(0));
    }
    let c = p.connect();
    p.send(c, two);
    let r = p.take(c);
    assert!(r["error"]["message"].as_str().unwrap().contains("before initialize"), "{r}");
}

// covers: lifecycle-initialization-first-interaction, lifecycle-client-no-requests-before-init-response
#[test]
fn requests_before_initialize_other_than_ping_are_refused() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    let c = p.connect();
    for (method, params) in [("tools/list", json!({})), ("tools/call", json!({ "name": "fs__read" })), ("resources/list", json!({}))] {
        let r = p.request(c, json!(1), method, params);
        assert_eq!(err_code(&r), -32600, "{method}: {r}");
        let msg = r["error"]["message"].as_str().unwrap();
        assert!(msg.contains("before initialize") && msg.contains(method), "{msg}");
    }
    assert!(p.up_quiet(0), "nothing reached the server");
    assert_eq!(p.request(c, json!(2), "ping", json!({}))["result"], json!({}));
    // A notification before initialize is no request: still nothing back.
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/roots/list_changed" }));
    assert!(p.client_quiet(c));
    // Once initialized, the same session is served.
    let init = p.request(c, json!(3), "initialize", json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }));
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    assert_eq!(p.names(c), ["fs__read"]);
    // Stateless 2026-07-28 requests need no initialize.
    let m = p.connect();
    let r = p.mreq(m, json!(4), "tools/list", json!({}), &json!({}));
    assert_eq!(r["result"]["tools"][0]["name"], "fs__read", "{r}");
}
