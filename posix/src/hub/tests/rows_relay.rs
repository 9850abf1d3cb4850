//! Requirement rows of the relayed client features (elicitation, sampling,
//! roots) and of JSON Schema handling: what mcpx does as a client of its
//! upstreams, as a server of its clients, and in between.

use serde_json::{json, Value};

use super::*;

const MODERN: &str = "2026-07-28";

/// `params` with the per-request `_meta` of a modern client declaring `caps`.
fn with_meta(mut params: Value, caps: &Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": { "name": "modern-test", "version": "1" },
    });
    params
}

impl Pair {
    pub(super) fn modern_call(&mut self, c: ClientId, id: Value, params: Value, caps: &Value) {
        self.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": with_meta(params, caps) }));
    }
}

/// The `initialize` request the hub sends an upstream allowed revisions up to
/// `newest` (the upstream is not scripted: the test sees it).
fn upstream_initialize(newest: &str) -> Value {
    let mut s = legacy_specs(&["fs"]);
    s[0].revisions.retain(|r| r.as_str() <= newest);
    let mut p = Pair::new(s, HubOptions::default());
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    let init = p.take_up(0);
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["params"]["protocolVersion"], newest);
    init
}

/// A legacy client on `rev` with `caps`, calling `fs__read` (in flight), so
/// the upstream's requests go to it.
pub(super) fn calling(rev: &str, caps: Value) -> (Pair, ClientId) {
    let (mut p, c) = one(rev, caps);
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
    p.take_up(0);
    (p, c)
}

/// A modern (2026-07-28) upstream `m` and a client that has said nothing.
fn modern_upstream() -> (Pair, ClientId) {
    let mut f = Fake::tools(&["ask"]);
    f.rev = MODERN;
    let mut p = Pair::with(vec![("m", f)], HubOptions::default());
    let c = p.connect();
    (p, c)
}

fn url_elicitation(id: &str) -> Value {
    json!({ "mode": "url", "message": "Sign in", "url": "https://auth.example.com/start?x=1", "elicitationId": id })
}

fn tool_sampling() -> Value {
    json!({
        "messages": [
            { "role": "user", "content": { "type": "text", "text": "Weather in Paris?" } },
            { "role": "assistant", "content": [{ "type": "tool_use", "id": "call_7", "name": "weather", "input": { "city": "Paris" } }] },
            { "role": "user", "content": [{ "type": "tool_result", "toolUseId": "call_7", "content": [{ "type": "text", "text": "18C" }] }] },
        ],
        "tools": [{ "name": "weather", "inputSchema": { "type": "object", "properties": { "city": { "type": "string" } } } }],
        "toolChoice": { "mode": "auto" },
        "maxTokens": 50,
    })
}

// ---------------------------------------------------------------- mcpx as client: declarations

// covers: roots-client-declare-capability-at-initialize, elicitation-client-support-at-least-one-mode
// covers: sampling-client-declare-tools-capability
#[test]
fn upstreams_are_told_at_initialize_what_mcpx_can_relay() {
    for rev in ALL_REVS {
        let init = upstream_initialize(rev);
        schema_check(rev, "InitializeRequest", &init);
        let caps = &init["params"]["capabilities"];
        assert_eq!(caps["roots"], json!({ "listChanged": true }), "{rev}");
        assert!(caps["sampling"].is_object(), "{rev}");
        let e = &caps["elicitation"];
        match rev {
            "2025-11-25" => {
                assert_eq!(e, &json!({ "form": {}, "url": {} }));
                assert_eq!(caps["sampling"], json!({ "tools": {} }), "tool use relayed to clients that declare it");
            }
            _ => {
                // Before 2025-11-25 `{}` means form (the only mode there is).
                assert_eq!(e, &json!({}), "{rev}");
                assert_eq!(caps["sampling"], json!({}), "{rev}: no sampling.tools before 2025-11-25");
            }
        }
    }
}

// covers: roots-client-declare-capability-per-request-meta, sampling-client-declare-capability-per-request-meta
// covers: elicitation-client-declare-capability-per-request-meta
#[test]
fn modern_upstreams_get_the_capabilities_on_every_request() {
    let (mut p, c) = modern_upstream();
    let full = json!({ "elicitation": { "form": {}, "url": {} }, "sampling": { "tools": {} }, "roots": {} });
    p.modern_call(c, json!(1), json!({ "name": "m__ask", "arguments": {} }), &full);
    let call = p.take_up(0);
    schema_check(MODERN, "CallToolRequest", &call);
    let caps = &call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    assert_eq!(caps, &relayed_caps(full.clone()), "{call}");
    // The next request declares less: so does the hub's, request by request.
    p.modern_call(c, json!(2), json!({ "name": "m__ask", "arguments": {} }), &json!({ "sampling": {} }));
    let call = p.take_up(0);
    assert_eq!(call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"], relayed_caps(json!({ "sampling": {} })));
    // A legacy client's calls carry what it declared at initialize.
    let l = p.client("2025-11-25", json!({ "roots": { "listChanged": true }, "elicitation": { "form": {} }, "sampling": {} }));
    p.send(l, json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "m__ask", "arguments": {} } }));
    let call = p.take_up(0);
    schema_check(MODERN, "CallToolRequest", &call);
    let caps = &call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    assert_eq!(caps, &relayed_caps(json!({ "roots": {}, "elicitation": { "form": {} }, "sampling": {} })), "{call}");
}

// covers: roots-client-listchanged-must-notify, roots-server-handle-list-changes
#[test]
fn a_clients_roots_change_reaches_the_upstreams() {
    let mut p = Pair::with(vec![("a", Fake::tools(&["x"])), ("b", Fake::tools(&["y"]))], HubOptions::default());
    let c = p.client("2025-11-25", json!({ "roots": { "listChanged": true } }));
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/roots/list_changed" }));
    for u in 0..2 {
        let n = p.take_up(u);
        assert_eq!(n, json!({ "jsonrpc": "2.0", "method": "notifications/roots/list_changed" }));
        schema_check("2025-11-25", "RootsListChangedNotification", &n);
    }
}

// covers: roots-uri-must-be-file-scheme
#[test]
fn configured_roots_must_be_file_uris() {
    for bad in [json!([{ "uri": "https://example.com/x" }]), json!({ "roots": [{ "uri": "/home/me" }] }), json!([{ "name": "no uri" }])] {
        let opts = HubOptions { roots: Some(bad.clone()), ..HubOptions::default() };
        assert!(Hub::new(specs(&["fs"]), opts).is_err(), "{bad}");
    }
    let opts = HubOptions { roots: Some(json!([{ "uri": "file:///work" }])), ..HubOptions::default() };
    assert!(Hub::new(specs(&["fs"]), opts).is_ok());
}

// covers: sampling-client-error-on-tools-without-capability, sampling-server-no-tools-without-capability
#[test]
fn tool_enabled_sampling_reaches_only_clients_that_declared_tool_use() {
    // Legacy client without sampling.tools: the upstream gets an error, the client nothing.
    let (mut p, c) = calling("2025-11-25", json!({ "sampling": {} }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": tool_sampling() }));
    let e = p.take_up(0);
    assert_eq!(e["id"], 5);
    assert!(e["error"]["message"].as_str().unwrap().contains("tool use"), "{e}");
    assert!(p.client_quiet(c));
    // toolChoice alone needs it too.
    let mut only_choice = json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "x" } }], "maxTokens": 5 });
    only_choice["toolChoice"] = json!({ "mode": "none" });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 6, "method": "sampling/createMessage", "params": only_choice }));
    assert!(p.take_up(0).get("error").is_some());
    assert!(p.client_quiet(c));
    // Modern client without it: not asked; the call fails -32021 naming sampling.tools.
    let (mut p, _) = one("2025-11-25", json!({}));
    let m = p.connect();
    p.modern_call(m, json!(1), json!({ "name": "fs__read" }), &json!({ "sampling": {} }));
    p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": tool_sampling() }));
    let r = p.take(m);
    assert_eq!(err_code(&r), -32021, "{r}");
    assert_eq!(r["error"]["data"]["requiredCapabilities"]["sampling"], json!({ "tools": {} }), "{r}");
}

// covers: sampling-tool-result-message-only-tool-results, sampling-tool-use-result-balance
// covers: sampling-toolresult-id-must-match-tooluse
#[test]
fn tool_use_conversations_are_relayed_unchanged() {
    let (mut p, c) = calling("2025-11-25", json!({ "sampling": { "tools": {} } }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": tool_sampling() }));
    let q = p.take(c);
    schema_check("2025-11-25", "CreateMessageRequest", &q);
    assert_eq!(q["params"], tool_sampling(), "messages, tool uses, results and their ids untouched");
    let answer = json!({ "role": "assistant", "content": [{ "type": "tool_use", "id": "call_8", "name": "weather", "input": { "city": "Lyon" } }], "model": "m", "stopReason": "toolUse" });
    p.send(c, json!({ "jsonrpc": "2.0", "id": q["id"], "result": answer }));
    assert_eq!(p.take_up(0), json!({ "jsonrpc": "2.0", "id": 5, "result": answer }));
    // A modern client gets the same messages in its input request.
    let (mut p, _) = one("2025-11-25", json!({}));
    let m = p.connect();
    p.modern_call(m, json!(1), json!({ "name": "fs__read" }), &json!({ "sampling": { "tools": {} } }));
    p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": tool_sampling() }));
    let irr = p.take(m);
    let req = irr["result"]["inputRequests"].as_object().unwrap().values().next().unwrap().clone();
    schema_check(MODERN, "CreateMessageRequest", &req);
    assert_eq!(req["params"]["messages"], tool_sampling()["messages"]);
}

// covers: sampling-message-must-have-role-and-content
#[test]
fn sampling_messages_reach_modern_clients_with_role_and_content() {
    let (mut p, _) = one("2025-11-25", json!({}));
    let m = p.connect();
    p.modern_call(m, json!(1), json!({ "name": "fs__read" }), &json!({ "sampling": {} }));
    p.take_up(0);
    let params = json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "hi" } }, { "role": "assistant", "content": { "type": "text", "text": "hello" } }], "maxTokens": 5 });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": params }));
    let irr = p.take(m);
    schema_check(MODERN, "InputRequiredResult", &irr["result"]);
    let req = irr["result"]["inputRequests"].as_object().unwrap().values().next().unwrap().clone();
    for (i, msg) in req["params"]["messages"].as_array().unwrap().iter().enumerate() {
        assert_eq!(msg["role"], params["messages"][i]["role"]);
        assert_eq!(msg["content"], params["messages"][i]["content"]);
        schema_check(MODERN, "SamplingMessage", msg);
    }
}

// covers: sampling-both-handle-sensitive-data
#[test]
fn prompts_and_completions_stay_out_of_the_hubs_log() {
    let (mut p, c) = calling("2025-11-25", json!({ "sampling": {} }));
    let secret = "hunter2-SECRET-prompt";
    let params = json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": secret } }], "systemPrompt": secret, "maxTokens": 5 });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": params }));
    let q = p.take(c);
    let answer = json!({ "role": "assistant", "content": { "type": "text", "text": format!("{secret}-answer") }, "model": "m" });
    p.send(c, json!({ "jsonrpc": "2.0", "id": q["id"], "result": answer }));
    p.take_up(0);
    // Refused ones too: the refusal names the capability, not the content.
    let d = p.client("2025-11-25", json!({}));
    p.send(d, json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "fs__read" } }));
    p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 6, "method": "sampling/createMessage", "params": params }));
    let e = p.take_up(0);
    assert!(!e.to_string().contains(secret), "{e}");
    assert!(!p.logs.is_empty(), "the refusal was logged");
    for (_, line) in &p.logs {
        assert!(!line.contains(secret), "{line}");
    }
}

// ---------------------------------------------------------------- elicitation

// covers: elicitation-server-no-undeclared-modes, elicitation-client-missing-mode-is-form
// covers: elicitation-empty-capability-means-form-only
#[test]
fn elicitation_modes_reach_only_clients_that_declared_them() {
    // Form only: a URL request is refused to the upstream, never sent.
    let (mut p, c) = calling("2025-11-25", json!({ "elicitation": { "form": {} } }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": url_elicitation("e1") }));
    assert!(p.take_up(0).get("error").is_some());
    assert!(p.client_quiet(c));
    // `{}` means form only.
    let (mut p, c) = calling("2025-11-25", json!({ "elicitation": {} }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": url_elicitation("e1") }));
    assert!(p.take_up(0).get("error").is_some());
    assert!(p.client_quiet(c));
    // URL only: a request without a mode is form, so it is refused too.
    let (mut p, c) = calling("2025-11-25", json!({ "elicitation": { "url": {} } }));
    let no_mode = json!({ "message": "Name?", "requestedSchema": { "type": "object", "properties": { "n": { "type": "string" } } } });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 2, "method": "elicitation/create", "params": no_mode }));
    assert!(p.take_up(0).get("error").is_some());
    assert!(p.client_quiet(c));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 3, "method": "elicitation/create", "params": url_elicitation("e2") }));
    assert_eq!(p.take(c)["params"]["mode"], "url");
    // A modern client declaring form only is never asked for a URL.
    let (mut p, _) = one("2025-11-25", json!({}));
    let m = p.connect();
    p.modern_call(m, json!(1), json!({ "name": "fs__read" }), &json!({ "elicitation": { "form": {} } }));
    p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 5, "method": "elicitation/create", "params": url_elicitation("e1") }));
    let r = p.take(m);
    assert_eq!(err_code(&r), -32021, "{r}");
    assert_eq!(r["error"]["data"]["requiredCapabilities"]["elicitation"], json!({ "url": {} }));
}

// covers: elicitation-client-32602-on-undeclared-mode
#[test]
fn modes_mcpx_did_not_declare_are_invalid_params() {
    // A 2025-06-18 upstream was offered form only (`{}`); an unknown mode was never offered.
    let mut s = legacy_specs(&["fs"]);
    s[0].revisions.retain(|r| r.as_str() <= "2025-06-18");
    let mut f = Fake::tools(&["read"]);
    f.rev = "2025-06-18";
    let mut p = Pair::new(s, HubOptions::default());
    p.start(0, f);
    let c = p.client("2025-11-25", json!({ "elicitation": { "form": {}, "url": {} } }));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
    p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": url_elicitation("e1") }));
    assert_eq!(err_code(&p.take_up(0)), -32602);
    let (mut p, c) = calling("2025-11-25", json!({ "elicitation": { "form": {}, "url": {} } }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 2, "method": "elicitation/create", "params": { "mode": "carrier-pigeon", "message": "x" } }));
    assert_eq!(err_code(&p.take_up(0)), -32602);
    assert!(p.client_quiet(c));
}

// covers: elicitation-request-must-include-mode-and-message, elicitation-form-request-shape
// covers: elicitation-client-elicitationid-opaque, elicitation-url-request-shape-with-id
// covers: elicitation-server-may-omit-mode-for-form
#[test]
fn relayed_elicitations_keep_their_shape() {
    let (mut p, c) = calling("2025-11-25", json!({ "elicitation": { "form": {}, "url": {} } }));
    // Form, with and without the mode: message and requestedSchema arrive.
    let schema = json!({ "type": "object", "properties": { "n": { "type": "string", "default": "x" } }, "required": ["n"] });
    for (i, mode) in [Some("form"), None].into_iter().enumerate() {
        let mut params = json!({ "message": "Name?", "requestedSchema": schema });
        if let Some(m) = mode {
            params["mode"] = json!(m);
        }
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": i, "method": "elicitation/create", "params": params }));
        let q = p.take(c);
        schema_check("2025-11-25", "ElicitRequest", &q);
        assert_eq!(q["params"]["message"], "[fs] Name?");
        assert_eq!(q["params"]["requestedSchema"], schema);
        assert_eq!(q["params"].get("mode").and_then(Value::as_str), mode);
    }
    // URL: mode, message, url and the upstream's elicitationId as it was.
    let odd = "  ÉLIC/../id?&=#{\"x\"} ";
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 9, "method": "elicitation/create", "params": url_elicitation(odd) }));
    let q = p.take(c);
    schema_check("2025-11-25", "ElicitRequest", &q);
    assert_eq!(q["params"]["mode"], "url");
    assert_eq!(q["params"]["url"], "https://auth.example.com/start?x=1");
    assert_eq!(q["params"]["elicitationId"], odd);
    assert_eq!(q["params"]["message"], "[fs] Sign in");
    // A modern upstream's URL request has no id: a 2025-11-25 client gets one.
    let (mut p, _) = modern_upstream();
    let l = p.client("2025-11-25", json!({ "elicitation": { "url": {} } }));
    p.send(l, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "m__ask", "arguments": {} } }));
    let call = p.take_up(0);
    let ask = json!({ "mode": "url", "message": "Sign in", "url": "https://auth.example.com/" });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "resultType": "input_required", "inputRequests": { "k": { "method": "elicitation/create", "params": ask } }, "requestState": "s" } }));
    let q = p.take(l);
    schema_check("2025-11-25", "ElicitRequest", &q);
    assert!(q["params"]["elicitationId"].as_str().is_some_and(|s| !s.is_empty()), "{q}");
}

// covers: elicitation-url-request-shape, elicitation-server-may-request-during-client-request
#[test]
fn url_elicitations_reach_modern_clients_with_mode_message_and_url() {
    let (mut p, _) = one("2025-11-25", json!({}));
    let m = p.connect();
    p.modern_call(m, json!(1), json!({ "name": "fs__read" }), &json!({ "elicitation": { "url": {} } }));
    p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 5, "method": "elicitation/create", "params": url_elicitation("e1") }));
    let irr = p.take(m);
    schema_check(MODERN, "InputRequiredResult", &irr["result"]);
    let req = irr["result"]["inputRequests"].as_object().unwrap().values().next().unwrap().clone();
    schema_check(MODERN, "ElicitRequest", &req);
    assert_eq!(req["params"]["mode"], "url");
    assert_eq!(req["params"]["message"], "[fs] Sign in");
    assert_eq!(req["params"]["url"], "https://auth.example.com/start?x=1");
    assert!(req["params"].get("elicitationId").is_none(), "no completion notices in 2026");
}

// covers: elicitation-client-no-url-prefetch
#[test]
fn url_elicitations_are_relayed_without_touching_the_url() {
    let (mut p, c) = calling("2025-11-25", json!({ "elicitation": { "url": {} } }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": url_elicitation("e1") }));
    // The hub's only output is the request to the client: nothing is fetched,
    // resolved or opened on the way (the hub performs no I/O of its own).
    assert_eq!(p.cl.get(&c).map_or(0, VecDeque::len), 1);
    assert!(p.up_quiet(0) && p.restarts.is_empty());
    assert_eq!(p.take(c)["params"]["url"], "https://auth.example.com/start?x=1");
}

// covers: elicitation-complete-only-to-initiating-client, elicitation-complete-must-carry-id
// covers: elicitation-client-ignore-unknown-complete, elicitation-server-may-send-complete-notification
#[test]
fn url_elicitation_completions_reach_only_the_client_that_was_asked() {
    let (mut p, c) = calling("2025-11-25", json!({ "elicitation": { "url": {} } }));
    let other = p.client("2025-11-25", json!({ "elicitation": { "url": {} } }));
    p.names(other);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": url_elicitation("e-42") }));
    let q = p.take(c);
    p.send(c, json!({ "jsonrpc": "2.0", "id": q["id"], "result": { "action": "accept" } }));
    p.take_up(0);
    let done = json!({ "jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": { "elicitationId": "e-42" } });
    p.upstream_says(0, done.clone());
    let n = p.take(c);
    assert_eq!(n, done);
    schema_check("2025-11-25", "ElicitationCompleteNotification", &n);
    assert!(p.client_quiet(other), "never broadcast");
    // Already completed, or unknown: dropped.
    p.upstream_says(0, done);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": { "elicitationId": "nope" } }));
    assert!(p.client_quiet(c) && p.client_quiet(other));
}

// covers: elicitation-server-must-return-32042, elicitation-url-required-error-lists-elicitations
// covers: elicitation-url-required-error-url-mode-with-id, elicitation-url-required-error-only-when-required
// covers: elicitation-no-32042-in-2026, elicitation-server-may-return-url-required-error
#[test]
fn url_required_errors_pass_to_2025_11_25_clients_only() {
    let err = json!({ "code": -32042, "message": "This request requires more information.", "data": { "elicitations": [url_elicitation("e-9")] } });
    let (mut p, c) = one("2025-11-25", json!({ "elicitation": { "url": {} } }));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
    let call = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "error": err }));
    let e = p.take(c);
    assert_eq!(e, json!({ "jsonrpc": "2.0", "id": 1, "error": err }));
    schema_check("2025-11-25", "URLElicitationRequiredError", &e);
    // A 2025-11-25 client without URL mode gets no URL elicitations: an internal error.
    let f = p.client("2025-11-25", json!({ "elicitation": { "form": {} } }));
    p.send(f, json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": { "name": "fs__read" } }));
    let call = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "error": err }));
    let e = p.take(f);
    assert_eq!(err_code(&e), -32603, "{e}");
    schema_check("2025-11-25", "JSONRPCErrorResponse", &e);
    // Ordinary failures stay what they were.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "fs__read" } }));
    let call = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "error": { "code": -32603, "message": "boom" } }));
    assert_eq!(err_code(&p.take(c)), -32603);
    // Modern clients never see -32042.
    let m = p.connect();
    p.modern_call(m, json!(3), json!({ "name": "fs__read" }), &json!({ "elicitation": { "url": {} } }));
    let call = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "error": err }));
    let e = p.take(m);
    assert_ne!(err_code(&e), -32042, "{e}");
    schema_check(MODERN, "JSONRPCErrorResponse", &e);
}

// covers: elicitation-server-handle-decline-cancel-failure
#[test]
fn declines_cancels_and_client_failures_reach_the_upstream() {
    let (mut p, c) = calling("2025-11-25", json!({ "elicitation": {} }));
    let form = json!({ "message": "Name?", "requestedSchema": { "type": "object", "properties": {} } });
    for (i, reply) in [json!({ "result": { "action": "decline" } }), json!({ "result": { "action": "cancel" } }), json!({ "error": { "code": -32603, "message": "UI crashed" } })].into_iter().enumerate() {
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": i, "method": "elicitation/create", "params": form }));
        let q = p.take(c);
        let mut ans = reply.clone();
        ans["jsonrpc"] = json!("2.0");
        ans["id"] = q["id"].clone();
        p.send(c, ans);
        let mut want = reply;
        want["jsonrpc"] = json!("2.0");
        want["id"] = json!(i);
        assert_eq!(p.take_up(0), want);
    }
    // A client that never answers: the upstream gets an error in time.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 7, "method": "elicitation/create", "params": form }));
    p.take(c);
    p.advance(HubOptions::default().relay_timeout_ms);
    let e = p.up.get_mut(&0).unwrap().iter().find(|m| m["id"] == 7).cloned().expect("an answer for 7");
    assert!(e.get("error").is_some());
    // A client that leaves: likewise.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 8, "method": "elicitation/create", "params": form }));
    p.take(c);
    p.hub.handle(Input::ClientDisconnected(c), p.now);
    p.pump();
    let e = p.up.get_mut(&0).unwrap().iter().find(|m| m["id"] == 8).cloned().expect("an answer for 8");
    assert!(e.get("error").is_some());
}

// covers: elicitation-server-state-bound-to-user, elicitation-server-stored-state-bound-to-user
// covers: elicitation-state-not-session-id-alone, elicitation-server-bind-to-client-and-user
// covers: elicitation-server-no-trust-client-user-id, elicitation-state-storage-protected
#[test]
fn elicitation_state_is_bound_to_the_client_and_its_principal() {
    // Legacy: only the client that was asked can answer; another client's
    // response with the same id is not taken for it.
    let (mut p, c) = calling("2025-11-25", json!({ "elicitation": {} }));
    let other = p.client("2025-11-25", json!({ "elicitation": {} }));
    let form = json!({ "message": "PIN?", "requestedSchema": { "type": "object", "properties": { "pin": { "type": "string" } } } });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "q", "method": "elicitation/create", "params": form }));
    let q = p.take(c);
    p.send(other, json!({ "jsonrpc": "2.0", "id": q["id"], "result": { "action": "accept", "content": { "pin": "forged" } } }));
    assert!(p.up_quiet(0), "a response from the wrong client reaches nothing");
    p.send(c, json!({ "jsonrpc": "2.0", "id": q["id"], "result": { "action": "accept", "content": { "pin": "1234" } } }));
    assert_eq!(p.take_up(0)["result"]["content"]["pin"], "1234");
    // Modern: the stored state is sealed to the principal the transport
    // authenticated, not to anything the client says: another principal's
    // retry (even naming the same session) reaches nothing.
    let (mut p, _) = one("2025-11-25", json!({}));
    let m = p.connect();
    p.hub.handle(Input::ClientPrincipal(m, b"alice"), p.now);
    p.modern_call(m, json!(1), json!({ "name": "fs__read" }), &json!({ "elicitation": {} }));
    p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "q", "method": "elicitation/create", "params": form }));
    let irr = p.take(m);
    let state = irr["result"]["requestState"].as_str().unwrap().to_string();
    let key = irr["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    assert!(!state.contains("alice"), "the state is opaque");
    let mallory = p.connect();
    p.hub.handle(Input::ClientPrincipal(mallory, b"mallory"), p.now);
    let retry = json!({ "name": "fs__read", "inputResponses": { key: { "action": "accept", "content": { "pin": "forged" } } }, "requestState": state });
    p.modern_call(mallory, json!(2), retry.clone(), &json!({ "elicitation": {} }));
    let r = p.take(mallory);
    assert_eq!(err_code(&r), -32602, "{r}");
    assert!(p.up_quiet(0));
    p.modern_call(m, json!(3), retry, &json!({ "elicitation": {} }));
    assert_eq!(p.take_up(0)["result"]["content"]["pin"], "forged", "alice's own retry is taken");
}

// covers: roots-server-list-via-input-required, mrtr-missing-capability-error-32021
#[test]
fn modern_clients_are_asked_for_roots_by_input_required_or_told_what_is_missing() {
    let (mut p, _) = one("2025-11-25", json!({}));
    let m = p.connect();
    p.modern_call(m, json!(1), json!({ "name": "fs__read" }), &json!({ "roots": {} }));
    p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "r", "method": "roots/list" }));
    let irr = p.take(m);
    schema_check(MODERN, "InputRequiredResult", &irr["result"]);
    let req = irr["result"]["inputRequests"].as_object().unwrap().values().next().unwrap().clone();
    assert_eq!(req["method"], "roots/list");
    // Without roots in this request's capabilities: -32021 naming roots.
    p.modern_call(m, json!(2), json!({ "name": "fs__read" }), &json!({}));
    p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "r2", "method": "roots/list" }));
    let r = p.take(m);
    assert_eq!(err_code(&r), -32021, "{r}");
    assert_eq!(r["error"]["data"]["requiredCapabilities"], json!({ "roots": {} }));
    schema_check(MODERN, "MissingRequiredClientCapabilityError", &r);
}

// ---------------------------------------------------------------- JSON Schema

// covers: json-schema-support-2020-12, json-schema-no-network-ref, json-schema-may-declare-dialect
#[test]
fn json_schema_2020_12_passes_through_and_no_ref_is_dereferenced() {
    let schema = json!({
        "type": "object",
        "$defs": { "pos": { "type": "integer", "minimum": 0 } },
        "properties": {
            "n": { "$ref": "#/$defs/pos" },
            "remote": { "$ref": "https://schemas.example.com/thing.json" },
            "pair": { "type": "array", "prefixItems": [{ "type": "string" }, { "type": "number" }] },
        },
        "dependentRequired": { "n": ["pair"] },
        "unevaluatedProperties": false,
    });
    let mut f = Fake::tools(&[]);
    f.tools = vec![json!({ "name": "t", "inputSchema": schema, "outputSchema": { "$schema": "https://json-schema.org/draft-07/schema#", "type": "object" } })];
    let mut p = Pair::with(vec![("fs", f)], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    let tools = p.list_all(c, "tools/list", "tools");
    assert_eq!(tools[0]["inputSchema"], schema, "2020-12 keywords and $refs untouched");
    assert_eq!(tools[0]["outputSchema"]["$schema"], "https://json-schema.org/draft-07/schema#", "the declared dialect kept");
    // The network $ref is neither fetched nor resolved: the hub did nothing
    // but talk to its client and upstream.
    assert!(p.restarts.is_empty() && p.closed.is_empty());
    // A call with arguments for it goes through as sent.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__t", "arguments": { "n": 1, "pair": ["a", 2] } } }));
    assert_eq!(p.take_up(0)["params"]["arguments"], json!({ "n": 1, "pair": ["a", 2] }));
}

// covers: tools-inputschema-valid-not-null, tools-inputschema-type-object-root
#[test]
fn tools_without_an_object_input_schema_are_not_listed() {
    let mut f = Fake::tools(&["good"]);
    f.tools.push(json!({ "name": "null_schema", "inputSchema": null }));
    f.tools.push(json!({ "name": "no_schema" }));
    f.tools.push(json!({ "name": "string_schema", "inputSchema": "object" }));
    f.tools.push(json!({ "name": "array_root", "inputSchema": { "type": "array" } }));
    let mut p = Pair::with(vec![("fs", f)], HubOptions::default());
    for rev in ["2025-11-25", "2024-11-05"] {
        let c = p.client(rev, json!({}));
        let tools = p.list_all(c, "tools/list", "tools");
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["fs__good"], "{rev}");
        for t in &tools {
            assert_eq!(t["inputSchema"]["type"], "object");
            schema_check(rev, "Tool", t);
        }
    }
}

// covers: json-schema-schemas-valid
#[test]
fn the_example_servers_own_schemas_are_valid_in_their_dialect() {
    use crate::example::tools;
    let mut seen = 0;
    for rev in mcpx_core::revision::Revision::ALL {
        for toggled in [false, true] {
            for t in tools::list(rev, toggled) {
                for key in ["inputSchema", "outputSchema"] {
                    let Some(s) = t.get(key) else { continue };
                    // Declared dialect, else 2020-12.
                    if let Err(e) = jsonschema::meta::validate(s) {
                        panic!("{} {key}: {e}\n{s}", t["name"]);
                    }
                    jsonschema::validator_for(s).unwrap_or_else(|e| panic!("{} {key} does not compile: {e}", t["name"]));
                    seen += 1;
                }
            }
        }
    }
    assert!(seen > 20, "{seen}");
}

// covers: roots-server-check-capability-before-use
#[test]
fn roots_are_asked_only_of_clients_that_declared_them() {
    let (mut p, c) = calling("2025-11-25", json!({ "sampling": {} }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "r", "method": "roots/list" }));
    let e = p.take_up(0);
    assert_eq!(e["id"], "r");
    assert!(e["error"]["message"].as_str().unwrap().contains("roots"), "{e}");
    assert!(p.client_quiet(c));
    let (mut p, c) = calling("2025-11-25", json!({ "roots": {} }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "r", "method": "roots/list" }));
    assert_eq!(p.take(c)["method"], "roots/list");
}

// covers: elicitation-app-show-requesting-server
#[test]
fn a_2025_06_18_client_is_told_which_server_asks() {
    let (mut p, c) = calling("2025-06-18", json!({ "elicitation": {} }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": { "message": "Name?", "requestedSchema": { "type": "object", "properties": {} } } }));
    let q = p.take(c);
    schema_check("2025-06-18", "ElicitRequest", &q);
    assert_eq!(q["params"]["message"], "[fs] Name?");
}

// covers: sampling-client-errors-user-rejected
#[test]
fn a_users_rejection_of_sampling_reaches_the_upstream_as_the_client_said_it() {
    for rev in ["2025-06-18", "2025-11-25"] {
        let (mut p, c) = calling(rev, json!({ "sampling": {} }));
        let params = json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "hi" } }], "maxTokens": 5 });
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 3, "method": "sampling/createMessage", "params": params }));
        let q = p.take(c);
        let err = json!({ "code": -1, "message": "User rejected sampling request" });
        p.send(c, json!({ "jsonrpc": "2.0", "id": q["id"], "error": err }));
        assert_eq!(p.take_up(0), json!({ "jsonrpc": "2.0", "id": 3, "error": err }), "{rev}");
    }
}

// covers: sampling-server-includecontext-only-with-context-capability, sampling-server-avoid-includecontext-values
#[test]
fn include_context_reaches_only_clients_that_declared_sampling_context() {
    let base = json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "hi" } }], "maxTokens": 5 });
    let with = |v: &str| {
        let mut p = base.clone();
        p["includeContext"] = json!(v);
        p
    };
    // Without sampling.context: thisServer / allServers are omitted ("none").
    let (mut p, c) = calling("2025-11-25", json!({ "sampling": {} }));
    for (i, v) in ["thisServer", "allServers", "none"].into_iter().enumerate() {
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": i, "method": "sampling/createMessage", "params": with(v) }));
        let q = p.take(c);
        schema_check("2025-11-25", "CreateMessageRequest", &q);
        let got = q["params"].get("includeContext").and_then(Value::as_str);
        assert_eq!(got, if v == "none" { Some("none") } else { None }, "{v}");
        assert_eq!(q["params"]["messages"], base["messages"]);
    }
    // With it: passed as the upstream asked.
    let (mut p, c) = calling("2025-11-25", json!({ "sampling": { "context": {} } }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": with("thisServer") }));
    assert_eq!(p.take(c)["params"]["includeContext"], "thisServer");
    // A modern client's input request likewise.
    for (caps, want) in [(json!({ "sampling": {} }), Value::Null), (json!({ "sampling": { "context": {} } }), json!("allServers"))] {
        let (mut p, _) = one("2025-11-25", json!({}));
        let m = p.connect();
        p.modern_call(m, json!(1), json!({ "name": "fs__read" }), &caps);
        p.take_up(0);
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": with("allServers") }));
        let irr = p.take(m);
        let req = irr["result"]["inputRequests"].as_object().unwrap().values().next().unwrap().clone();
        assert_eq!(req["params"]["includeContext"], want, "{caps}");
    }
}

// covers: sampling-tooluse-meta-preserve, sampling-stopreason-custom-values
#[test]
fn tool_use_meta_and_custom_stop_reasons_pass_through() {
    let (mut p, c) = calling("2025-11-25", json!({ "sampling": { "tools": {} } }));
    let mut params = tool_sampling();
    params["messages"][1]["content"][0]["_meta"] = json!({ "cache": "tu-1" });
    params["messages"][2]["content"][0]["_meta"] = json!({ "cache": "tr-1" });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": params }));
    let q = p.take(c);
    schema_check("2025-11-25", "CreateMessageRequest", &q);
    assert_eq!(q["params"]["messages"], params["messages"], "content _meta kept");
    let answer = json!({ "role": "assistant", "content": [{ "type": "tool_use", "id": "call_9", "name": "weather", "input": {}, "_meta": { "cache": "tu-2" } }], "model": "m", "stopReason": "provider_specific_halt" });
    p.send(c, json!({ "jsonrpc": "2.0", "id": q["id"], "result": answer }));
    let r = p.take_up(0);
    assert_eq!(r["result"], answer);
    schema_check("2025-11-25", "CreateMessageResult", &r["result"]);
}
