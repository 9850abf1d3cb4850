//! Pair tests for requirement rows of the server primitives (tools, resources,
//! prompts) and the utilities (cancellation, progress, pagination, tasks,
//! multi round-trip input requests), on both sides of the hub.

use serde_json::{json, Value};

use super::*;

const MODERN: &str = "2026-07-28";

/// `params` with the per-request `_meta` of a modern client declaring `caps`.
fn modern_params(mut params: Value, caps: &Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": { "name": "rows-test", "version": "1" },
    });
    params
}

impl Pair {
    fn modern_send(&mut self, c: ClientId, id: Value, method: &str, params: Value, caps: &Value) {
        self.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": modern_params(params, caps) }));
    }

    fn modern_request(&mut self, c: ClientId, id: Value, method: &str, params: Value, caps: &Value) -> Value {
        self.modern_send(c, id, method, params, caps);
        self.take(c)
    }
}

/// A fake of `rev` with tools, prompts and resources.
fn rich(rev: &'static str) -> Fake {
    let mut f = Fake::tools(&["read", "ask"]);
    f.rev = rev;
    f.caps = json!({ "tools": { "listChanged": true }, "prompts": { "listChanged": true }, "resources": { "subscribe": true, "listChanged": true } });
    f.prompts = vec![json!({ "name": "greet", "arguments": [{ "name": "who" }] })];
    f.resources = vec![json!({ "uri": "file:///a.txt", "name": "a" })];
    f.templates = vec![json!({ "uriTemplate": "file:///{path}", "name": "files" })];
    f
}

// ---------------------------------------------------------------- tasks

// covers: tasks-receiver-without-cap-ignore, tasks-tool-no-cap-no-augment, tasks-tool-forbidden-default
// covers: tasks-augment-only-if-declared, tasks-no-capability-no-tasks
#[test]
fn task_augmented_requests_are_processed_as_plain_ones() {
    let mut f = Fake::tools(&["read"]);
    // An upstream that lists a tool as task-capable but declares no tasks
    // capability: a client must still not augment.
    f.tools[0]["execution"] = json!({ "taskSupport": "optional" });
    let mut p = Pair::with(vec![("fs", f)], HubOptions::default());
    let c = p.connect();
    let init = p.request(c, json!(0), "initialize", json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }));
    assert!(init["result"]["capabilities"].get("tasks").is_none(), "mcpx declares no tasks: {init}");
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": { "name": "fs__read", "arguments": { "a": 1 }, "task": { "ttl": 60000 } } }));
    let up = p.take_up(0);
    assert!(up["params"].get("task").is_none(), "no task augmentation upstream: {up}");
    assert_eq!(up["params"]["arguments"], json!({ "a": 1 }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [{ "type": "text", "text": "ok" }] } }));
    let r = p.take(c);
    assert_eq!(r["id"], 7);
    schema_check("2025-11-25", "CallToolResult", &r["result"]);
    assert!(r["result"].get("task").is_none(), "a plain result, no CreateTaskResult: {r}");
    // A task-augmented prompts/get too.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": { "task": {}, "name": "fs__read" } }));
    let up = p.take_up(0);
    assert!(up["params"].get("task").is_none(), "{up}");
    assert_eq!(up["params"]["name"], "read");
}

// ---------------------------------------------------------------- lists (2026-07-28)

// covers: tools-list-not-per-connection, resources-list-not-per-connection, prompts-list-not-per-connection
// covers: resources-list-must-respond-when-declared, prompts-list-must-respond-when-declared, prompts-declare-capability-discover
#[test]
fn modern_lists_are_the_same_for_every_connection_and_request() {
    let mut p = Pair::with(vec![("a", rich("2025-11-25")), ("b", rich(MODERN))], HubOptions::default());
    let c1 = p.connect();
    let c2 = p.connect();
    let disc = p.modern_request(c1, json!("d"), "server/discover", json!({}), &json!({}));
    let caps = &disc["result"]["capabilities"];
    assert!(caps.get("prompts").is_some() && caps.get("resources").is_some() && caps.get("tools").is_some(), "{disc}");
    let lists = [("tools/list", "tools"), ("resources/list", "resources"), ("resources/templates/list", "resourceTemplates"), ("prompts/list", "prompts")];
    let mut first: Vec<Value> = vec![];
    for (m, key) in lists {
        let r = p.modern_request(c1, json!(m), m, json!({}), &json!({}));
        assert!(r["result"][key].as_array().is_some_and(|a| !a.is_empty()), "{m}: {r}");
        first.push(r["result"][key].clone());
    }
    // Other requests on c1 in between: a call, a subscription, a read.
    p.modern_send(c1, json!("call"), "tools/call", json!({ "name": "a__read" }), &json!({ "elicitation": {} }));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    p.take(c1);
    p.modern_send(c1, json!("listen"), "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true, "resourceSubscriptions": ["file:///a.txt"] } }), &json!({}));
    while !p.client_quiet(c1) {
        p.take(c1);
    }
    // The same lists on c1 again and on c2, whatever capabilities each request declares.
    for (c, caps) in [(c1, json!({ "sampling": {}, "roots": {} })), (c2, json!({})), (c2, json!({ "elicitation": { "form": {} } }))] {
        for (i, (m, key)) in lists.iter().enumerate() {
            let r = p.modern_request(c, json!(i), m, json!({}), &caps);
            assert_eq!(r["result"][key], first[i], "{m} varies");
        }
    }
    // A legacy session sees the same items too.
    let l = p.client("2025-11-25", json!({}));
    assert_eq!(Value::Array(p.list_all(l, "tools/list", "tools")), first[0]);
}

// ---------------------------------------------------------------- resources

// covers: resources-not-found-32602, resources-no-empty-contents-for-missing, resources-sec-validate-uris
#[test]
fn unknown_or_malformed_resource_uris_are_refused() {
    let mut p = Pair::with(vec![("a", rich("2025-11-25")), ("b", rich("2025-11-25"))], HubOptions::default());
    let c = p.connect();
    for (i, params) in [json!({ "uri": "nope://x" }), json!({ "uri": "mcpx://zz/file:///a.txt" }), json!({}), json!({ "uri": 5 })].into_iter().enumerate() {
        let r = p.modern_request(c, json!(i), "resources/read", params.clone(), &json!({}));
        assert_eq!(err_code(&r), -32602, "{params}: {r}");
        assert!(r.get("result").is_none());
        schema_check(MODERN, "JSONRPCErrorResponse", &r);
    }
    assert!(p.up_quiet(0) && p.up_quiet(1), "nothing reached an upstream");
    // Legacy clients: the legacy code for a missing resource, -32602 for a malformed request.
    let l = p.client("2025-11-25", json!({}));
    assert_eq!(err_code(&p.request(l, json!(1), "resources/read", json!({ "uri": "nope://x" }))), -32002);
    assert_eq!(err_code(&p.request(l, json!(2), "resources/read", json!({ "uri": ["x"] }))), -32602);
    // An upstream's not-found becomes -32602 for a modern client, never an empty read.
    p.modern_send(c, json!(9), "resources/read", json!({ "uri": "file:///a.txt" }), &json!({}));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "error": { "code": -32002, "message": "Resource not found", "data": { "uri": "file:///a.txt" } } }));
    let r = p.take(c);
    assert_eq!(err_code(&r), -32602, "{r}");
    assert!(r.get("result").is_none());
}

/// RFC 3986 `URI` syntax, enough to reject what a minted URI must not hold:
/// `scheme ":" …` with only unreserved, reserved and `%HH` characters.
fn rfc3986(uri: &str) -> bool {
    let Some((scheme, rest)) = uri.split_once(':') else { return false };
    let mut sc = scheme.chars();
    if !sc.next().is_some_and(|c| c.is_ascii_alphabetic()) || !sc.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
        return false;
    }
    let b = rest.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c == '%' {
            if i + 2 >= b.len() || !b[i + 1].is_ascii_hexdigit() || !b[i + 2].is_ascii_hexdigit() {
                return false;
            }
            i += 3;
            continue;
        }
        if !(c.is_ascii_alphanumeric() || "-._~:/?#[]@!$&'()*+,;=".contains(c)) {
            return false;
        }
        i += 1;
    }
    rest.matches('#').count() <= 1
}

// covers: resources-custom-scheme-rfc3986
#[test]
fn uris_mcpx_mints_for_duplicates_are_rfc3986() {
    let uris = ["file:///readme", "db://h:5432/t?q=1", "mem:x%20y", "urn:isbn:0451450523", "https://e.example/a/b#frag"];
    let mut a = rich("2025-11-25");
    a.resources = uris.iter().map(|u| json!({ "uri": u, "name": "r" })).collect();
    let b = a.clone();
    let mut p = Pair::with(vec![("a", a), ("srv-b_2", b)], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    let res = p.list_all(c, "resources/list", "resources");
    assert_eq!(res.len(), 2 * uris.len());
    let minted: Vec<&str> = res.iter().map(|r| r["uri"].as_str().unwrap()).filter(|u| !uris.contains(u)).collect();
    assert_eq!(minted.len(), uris.len(), "{res:?}");
    for u in minted {
        assert!(rfc3986(u), "not an RFC 3986 URI: {u}");
        // And it reads from the right server with the original URI.
        p.send(c, json!({ "jsonrpc": "2.0", "id": u, "method": "resources/read", "params": { "uri": u } }));
        let up = p.take_up(1);
        assert!(uris.contains(&up["params"]["uri"].as_str().unwrap()), "{up}");
        p.upstream_says(1, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "contents": [] } }));
        p.take(c);
    }
    assert!(!rfc3986("mcpx://b/has space") && !rfc3986("no-scheme") && !rfc3986("x:%zz"));
}

// covers: resources-sec-binary-encoded, prompts-image-base64-mime, prompts-audio-base64-mime, prompts-embedded-must-include
// covers: tools-output-schema-conform
#[test]
fn binary_media_and_structured_content_pass_unchanged() {
    let mut f = rich("2025-11-25");
    f.tools[0]["outputSchema"] = json!({ "type": "object", "properties": { "n": { "type": "integer" } }, "required": ["n"] });
    let mut p = Pair::with(vec![("fs", f)], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    let tools = p.list_all(c, "tools/list", "tools");
    assert_eq!(tools[0]["outputSchema"]["required"], json!(["n"]));
    // A blob stays base64 with its MIME type.
    let blob = json!({ "contents": [{ "uri": "file:///a.bin", "mimeType": "application/octet-stream", "blob": "AAECAwQF/w==" }] });
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": { "uri": "file:///a.txt" } }));
    let up = p.take_up(0);
    let mut ans = blob.clone();
    ans["contents"][0]["uri"] = json!("file:///a.txt");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": ans }));
    let r = p.take(c);
    assert_eq!(r["result"], ans);
    schema_check("2025-11-25", "ReadResourceResult", &r["result"]);
    // Image, audio and embedded resources in a prompt keep data, MIME type and URI.
    let msgs = json!({ "messages": [
        { "role": "user", "content": { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" } },
        { "role": "user", "content": { "type": "audio", "data": "UklGRg==", "mimeType": "audio/wav" } },
        { "role": "user", "content": { "type": "resource", "resource": { "uri": "file:///a.txt", "mimeType": "text/plain", "text": "hi" } } },
        { "role": "user", "content": { "type": "resource", "resource": { "uri": "file:///a.bin", "mimeType": "application/octet-stream", "blob": "AAE=" } } },
    ] });
    p.send(c, json!({ "jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": { "name": "fs__greet", "arguments": { "who": "x" } } }));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": msgs }));
    let r = p.take(c);
    assert_eq!(r["result"], msgs);
    schema_check("2025-11-25", "GetPromptResult", &r["result"]);
    // Structured content conforming to the upstream's outputSchema reaches the client as it is.
    let out = json!({ "content": [{ "type": "text", "text": "{\"n\":3}" }], "structuredContent": { "n": 3 } });
    p.send(c, json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "fs__read" } }));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": out }));
    let r = p.take(c);
    assert_eq!(r["result"], out);
    schema_check("2025-11-25", "CallToolResult", &r["result"]);
}

// ---------------------------------------------------------------- prompts

// covers: prompts-validate-io
#[test]
fn prompt_requests_are_validated_before_they_reach_a_server() {
    let mut p = Pair::with(vec![("a", rich("2025-11-25")), ("b", rich("2025-11-25"))], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    for (i, params) in [json!({}), json!({ "name": 3 }), json!({ "name": "greet" }), json!({ "name": "c__greet" }), json!({ "name": "a__greet/../b__greet" })].into_iter().enumerate() {
        let r = p.request(c, json!(i), "prompts/get", params.clone());
        assert_eq!(err_code(&r), -32602, "{params}: {r}");
    }
    assert!(p.up_quiet(0) && p.up_quiet(1));
    // A valid name reaches only its own server, with the arguments as given.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 9, "method": "prompts/get", "params": { "name": "b__greet", "arguments": { "who": "'; DROP" } } }));
    let up = p.take_up(1);
    assert_eq!(up["params"]["name"], "greet");
    assert_eq!(up["params"]["arguments"], json!({ "who": "'; DROP" }));
    assert!(p.up_quiet(0));
}

// ---------------------------------------------------------------- tools: x-mcp-header

// covers: tools-x-mcp-header-reject-excludes, tools-x-mcp-header-tchar, tools-x-mcp-header-no-ctl, tools-x-mcp-header-reject-log
#[test]
fn tools_with_bad_x_mcp_header_names_are_not_listed() {
    let mut f = Fake::tools(&["plain"]);
    let with = |name: &str, h: &str| json!({ "name": name, "inputSchema": { "type": "object", "properties": { "p": { "type": "string", "x-mcp-header": h } } } });
    f.tools.push(with("good", "Region-Id"));
    f.tools.push(with("space", "Region Id"));
    f.tools.push(with("at", "Region@Id"));
    f.tools.push(with("cr", "Region\rId"));
    f.tools.push(with("lf", "Region\nX-Evil: 1"));
    f.tools.push(with("empty", ""));
    let mut p = Pair::with(vec![("fs", f)], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["fs__plain", "fs__good"]);
    // Each rejection is logged as a warning naming the tool and the reason.
    for bad in ["space", "at", "cr", "lf", "empty"] {
        assert!(p.logs.iter().any(|(l, m)| *l == Level::Warn && m.contains(&format!("tool '{bad}'")) && m.contains("x-mcp-header")), "{bad}: {:?}", p.logs);
    }
    let m = p.connect();
    let r = p.modern_request(m, json!(1), "tools/list", json!({}), &json!({}));
    let names: Vec<&str> = r["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["fs__plain", "fs__good"]);
    assert_eq!(r["result"]["tools"][1]["inputSchema"]["properties"]["p"]["x-mcp-header"], "Region-Id");
    // A call to a dropped tool is an unknown tool.
    assert_eq!(err_code(&p.request(c, json!(2), "tools/call", json!({ "name": "fs__cr" }))), -32602);
    assert!(p.up_quiet(0));
}

// ---------------------------------------------------------------- input requests (2026-07-28)

// covers: mrtr-input-request-type-restricted, tools-call-inputrequests-declared-only
#[test]
fn only_declared_input_request_kinds_reach_a_modern_client() {
    let mut f = rich("2025-11-25");
    f.caps["logging"] = json!({});
    let mut p = Pair::with(vec![("fs", f)], HubOptions::default());
    let c = p.connect();
    // A request that is not elicitation, sampling or roots never becomes an input request.
    p.modern_send(c, json!(1), "tools/call", json!({ "name": "fs__ask" }), &json!({ "elicitation": { "form": {} }, "sampling": {}, "roots": {} }));
    let call = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "x1", "method": "custom/ask", "params": {} }));
    let ans = p.take_up(0);
    assert_eq!((ans["id"].clone(), err_code(&ans)), (json!("x1"), -32601), "{ans}");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "x2", "method": "ping" }));
    let ans = p.take_up(0);
    assert_eq!(ans["id"], "x2");
    assert!(p.client_quiet(c), "nothing of those reaches the client");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [] } }));
    assert_eq!(p.take(c)["result"]["resultType"], "complete");
    // Kinds the request did not declare are not sent as input requests.
    for (i, (method, params)) in [
        ("elicitation/create", json!({ "mode": "form", "message": "m", "requestedSchema": { "type": "object", "properties": {} } })),
        ("sampling/createMessage", json!({ "messages": [], "maxTokens": 1 })),
        ("roots/list", json!({})),
    ]
    .into_iter()
    .enumerate()
    {
        p.modern_send(c, json!(10 + i), "tools/call", json!({ "name": "fs__ask", "arguments": { "i": i } }), &json!({}));
        let _call = p.take_up(0);
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": format!("in{i}"), "method": method, "params": params }));
        let mut ups = vec![];
        while !p.up_quiet(0) {
            ups.push(p.take_up(0));
        }
        assert!(ups.iter().any(|u| u["id"] == format!("in{i}") && u.get("error").is_some()), "{method}: the upstream is refused: {ups:?}");
        let r = p.take(c);
        assert!(r["result"].get("inputRequests").is_none(), "{method}: {r}");
        assert_ne!(r["result"]["resultType"], "input_required", "{r}");
    }
}

// ---------------------------------------------------------------- cancellation

// covers: cancellation-stdio-client-must-send, cancellation-ref-client-issued-in-progress, cancellation-requestid-required-non-task-forbidden-task
#[test]
fn cancellations_to_upstreams_name_in_flight_requests_by_id() {
    for rev in ["2025-11-25", MODERN] {
        let mut s = specs(&["fs"]);
        s[0].timeout_ms = 10_000;
        let mut p = Pair::new(s, HubOptions::default());
        p.start(0, rich(rev));
        let c = p.connect();
        let caps = json!({});
        // The client cancels: the upstream gets notifications/cancelled with its own id.
        p.modern_send(c, json!("a"), "tools/call", json!({ "name": "fs__read" }), &caps);
        let up = p.take_up(0);
        p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "a", "reason": "stop" } }));
        let n = p.take_up(0);
        assert_eq!(n["method"], "notifications/cancelled", "{rev}");
        assert_eq!(n["params"]["requestId"], up["id"], "{rev}");
        schema_check(if rev == MODERN { "2025-11-25" } else { rev }, "CancelledNotification", &n);
        // A timeout cancels too.
        p.modern_send(c, json!("b"), "tools/call", json!({ "name": "fs__read" }), &caps);
        let up = p.take_up(0);
        p.advance(10_000);
        assert_eq!(err_code(&p.take(c)), -32603);
        let n = p.take_up(0);
        assert_eq!((n["method"].clone(), n["params"]["requestId"].clone()), (json!("notifications/cancelled"), up["id"].clone()), "{rev}");
        // A completed request is never cancelled, nor a request of another client.
        p.modern_send(c, json!("c"), "tools/call", json!({ "name": "fs__read" }), &caps);
        let up = p.take_up(0);
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
        p.take(c);
        p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "c" } }));
        let other = p.connect();
        p.modern_send(other, json!("d"), "tools/call", json!({ "name": "fs__read" }), &caps);
        let _ = p.take_up(0);
        p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "d" } }));
        assert!(p.up_quiet(0), "{rev}: no cancellation for requests not in flight for that client");
    }
}

// ---------------------------------------------------------------- progress

// covers: progress-token-string-or-int, progress-token-unique-client, progress-stop-after-completion, progress-http-notifications-relate-to-request
// covers: progress-track-tokens
#[test]
fn progress_goes_only_to_its_request_and_stops_at_its_answer() {
    for rev in ["2025-11-25", MODERN] {
        let mut p = Pair::with(vec![("fs", rich(rev))], HubOptions::default());
        let c1 = p.connect();
        let c2 = p.connect();
        let caps = json!({});
        p.modern_send(c1, json!(1), "tools/call", json!({ "name": "fs__read", "_meta": {} }), &caps);
        p.modern_send(c1, json!(2), "tools/call", json!({ "name": "fs__read" }), &caps);
        p.modern_send(c2, json!(1), "tools/call", json!({ "name": "fs__read" }), &caps);
        let ups: Vec<Value> = (0..3).map(|_| p.take_up(0)).collect();
        let tokens: Vec<Value> = ups.iter().map(|u| u["params"]["_meta"]["progressToken"].clone()).collect();
        for t in &tokens {
            assert!(t.is_string() || t.is_i64() || t.is_u64(), "{rev}: {t}");
        }
        assert!(tokens[0] != tokens[1] && tokens[1] != tokens[2] && tokens[0] != tokens[2], "{rev}: {tokens:?}");
        // Progress for the third request reaches c2 only ...
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": tokens[2], "progress": 1 } }));
        assert!(p.client_quiet(c1), "{rev}");
        assert!(p.client_quiet(c2), "{rev}: c2 asked for no progress");
        // ... and only if that request asked for it.
        let mut params = modern_params(json!({ "name": "fs__read" }), &caps);
        params["_meta"]["progressToken"] = json!("t");
        p.send(c2, json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params }));
        let up = p.take_up(0);
        let tok = up["params"]["_meta"]["progressToken"].clone();
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": tok, "progress": 1, "total": 2 } }));
        let n = p.take(c2);
        assert_eq!((n["method"].clone(), n["params"]["progressToken"].clone()), (json!("notifications/progress"), json!("t")), "{rev}");
        assert!(p.client_quiet(c1), "{rev}");
        // After the answer, nothing more for it.
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
        assert_eq!(p.take(c2)["id"], 5);
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": tok, "progress": 2, "total": 2 } }));
        assert!(p.client_quiet(c2) && p.client_quiet(c1), "{rev}: progress stops with the response");
    }
}

// ---------------------------------------------------------------- pagination as a client

/// A hub with one legacy upstream the test answers by hand; returns the pair
/// after `initialize` was answered and `notifications/initialized` taken.
fn manual() -> Pair {
    let mut p = Pair::new(legacy_specs(&["fs"]), HubOptions::default());
    boot(&mut p);
    p
}

fn boot(p: &mut Pair) {
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    let init = p.take_up(0);
    assert_eq!(init["method"], "initialize", "{init}");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": init["id"], "result": { "protocolVersion": "2025-11-25", "capabilities": { "tools": {} }, "serverInfo": { "name": "m", "version": "0" } } }));
    assert_eq!(p.take_up(0)["method"], "notifications/initialized");
}

// covers: pagination-empty-cursor-not-end
#[test]
fn an_empty_next_cursor_from_an_upstream_is_followed() {
    let mut p = manual();
    let l1 = p.take_up(0);
    assert_eq!(l1["method"], "tools/list");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": l1["id"], "result": { "tools": [tool("one")], "nextCursor": "" } }));
    let l2 = p.take_up(0);
    assert_eq!((l2["method"].clone(), l2["params"]["cursor"].clone()), (json!("tools/list"), json!("")), "{l2}");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": l2["id"], "result": { "tools": [tool("two")] } }));
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["fs__one", "fs__two"]);
}

// covers: pagination-no-persist-across-sessions
#[test]
fn upstream_cursors_do_not_outlive_its_session() {
    let mut p = manual();
    let l1 = p.take_up(0);
    assert!(l1["params"].get("cursor").is_none());
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": l1["id"], "result": { "tools": [tool("one")], "nextCursor": "page-2" } }));
    let l2 = p.take_up(0);
    assert_eq!(l2["params"]["cursor"], "page-2");
    // The upstream goes away before answering; the next session lists from the start.
    p.hub.handle(Input::UpstreamExited { up: 0, reason: "exit 1", stderr_tail: "", next: Next::Now }, p.now);
    p.pump();
    while !p.up_quiet(0) {
        p.take_up(0);
    }
    boot(&mut p);
    let again = p.take_up(0);
    assert_eq!(again["method"], "tools/list");
    assert!(again["params"].get("cursor").is_none(), "no cursor from the last session: {again}");
}

// ---------------------------------------------------------------- SHOULD rows

// covers: pagination-missing-nextcursor-end, pagination-support-both-flows
#[test]
fn paginated_and_unpaginated_upstreams_are_both_listed_to_their_end() {
    let mut paged = Fake::tools(&["p1", "p2", "p3"]);
    paged.page = 1;
    let whole = Fake::tools(&["w1", "w2"]);
    let mut p = Pair::with(vec![("a", paged), ("b", whole)], HubOptions::default());
    assert!(p.up_quiet(0) && p.up_quiet(1), "no request past a page without nextCursor");
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["a__p1", "a__p2", "a__p3", "b__w1", "b__w2"]);
}

/// Tool names a 2025-11-25 server should use: 1..=128 of A-Z a-z 0-9 _ - .
fn good_tool_name(n: &str) -> bool {
    (1..=128).contains(&n.len()) && n.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

// covers: tools-name-case-sensitive, tools-name-unique-in-server, tools-aggregator-disambiguate, tools-aggregator-not-by-servername
// covers: tools-name-charset, tools-name-no-special, tools-name-length
#[test]
fn exposed_tool_names_are_unique_case_sensitive_and_well_formed() {
    // Both fakes call themselves "fake" in serverInfo; the config keys tell them apart.
    let odd = ["Read", "read", "with space", "comma,name", "ünï", &"x".repeat(200)];
    let mut p = Pair::with(vec![("a", Fake::tools(&odd)), ("b", Fake::tools(&["read"]))], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    let names = p.names(c);
    assert_eq!(names.len(), odd.len() + 1, "{names:?}");
    let mut seen = std::collections::HashSet::new();
    for n in &names {
        assert!(good_tool_name(n), "{n}");
        assert!(seen.insert(n.clone()), "duplicate {n}");
    }
    assert_eq!(&names[..2], ["a__Read", "a__read"]);
    assert_eq!(names[odd.len()], "b__read");
    // Each name reaches its own tool, case included.
    for (i, n) in names.iter().enumerate() {
        p.send(c, json!({ "jsonrpc": "2.0", "id": i, "method": "tools/call", "params": { "name": n } }));
        let (u, orig) = if i < odd.len() { (0, odd[i].to_string()) } else { (1, "read".to_string()) };
        assert_eq!(p.take_up(u)["params"]["name"], orig, "{n}");
    }
    assert_eq!(err_code(&p.request(c, json!("x"), "tools/call", json!({ "name": "A__READ" }))), -32602);
}

// covers: cancellation-ignore-invalid, cancellation-receiver-may-ignore, cancellation-server-may-ignore, cancellation-client-ignore-late-response
// covers: cancellation-client-should-send, cancellation-timeouts-establish, cancellation-timeout-then-cancel, cancellation-max-timeout-despite-progress
// covers: cancellation-log-reasons
#[test]
fn modern_cancellation_timeouts_and_invalid_notices() {
    let mut s = specs(&["m"]);
    s[0].timeout_ms = 10_000;
    let mut p = Pair::new(s, HubOptions { max_timeout_ms: 25_000, ..HubOptions::default() });
    p.start(0, rich(MODERN));
    let c = p.connect();
    let caps = json!({});
    p.modern_send(c, json!(1), "tools/call", json!({ "name": "m__read" }), &caps);
    let up = p.take_up(0);
    // Invalid notices are ignored and the session goes on.
    for bad in [json!({}), json!({ "requestId": { "x": 1 } }), json!({ "requestId": 999 }), json!({ "requestId": null })] {
        p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": bad }));
    }
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled" }));
    assert!(p.up_quiet(0) && p.client_quiet(c));
    // A valid one is relayed, its reason logged; the late answer is dropped.
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1, "reason": "user pressed stop" } }));
    assert_eq!(p.take_up(0)["params"]["requestId"], up["id"]);
    assert!(p.logs.iter().any(|(_, m)| m.contains("user pressed stop") && m.contains("'m'")), "{:?}", p.logs);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [], "resultType": "complete" } }));
    assert!(p.client_quiet(c));
    // A modern upstream's request times out: cancelled, the client told; progress
    // extends the clock but never past the maximum.
    p.modern_send(c, json!(2), "tools/call", json!({ "name": "m__read" }), &caps);
    let up = p.take_up(0);
    let tok = up["params"]["_meta"]["progressToken"].clone();
    let mut waited = 0;
    while p.client_quiet(c) {
        assert!(waited < 60_000, "no timeout");
        p.advance(9_000);
        waited += 9_000;
        if p.client_quiet(c) {
            p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": tok, "progress": 1 } }));
        }
    }
    let e = p.take(c);
    assert_eq!((e["id"].clone(), err_code(&e)), (json!(2), -32603), "{e}");
    assert_eq!(waited, 27_000, "past the 10 s timeout thanks to progress, stopped by the 25 s maximum");
    let mut ups = vec![];
    while !p.up_quiet(0) {
        ups.push(p.take_up(0));
    }
    assert!(ups.iter().any(|n| n["method"] == "notifications/cancelled" && n["params"]["requestId"] == up["id"]), "{ups:?}");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [], "resultType": "complete" } }));
    assert!(p.client_quiet(c), "the late answer is dropped");
}

// covers: tools-result-iserror-for-tool-errors, resources-read-multiple-may, resources-file-xdg-mime-may, resources-annotations-defs
// covers: tools-resource-link-may, tools-embedded-resource-may, tools-resource-link-may-not-listed, resources-client-accept-32002
#[test]
fn results_of_upstreams_reach_the_client_as_they_are() {
    let mut p = Pair::with(vec![("fs", rich("2025-11-25"))], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    let answers = [
        ("tools/call", json!({ "name": "fs__read" }), json!({ "content": [{ "type": "text", "text": "disk full" }], "isError": true })),
        ("tools/call", json!({ "name": "fs__read" }), json!({ "content": [
            { "type": "resource_link", "uri": "file:///not/listed", "name": "nl", "mimeType": "text/plain" },
            { "type": "resource", "resource": { "uri": "file:///e", "text": "e", "mimeType": "text/plain" } },
        ] })),
        ("resources/read", json!({ "uri": "file:///a.txt" }), json!({ "contents": [
            { "uri": "file:///a.txt", "mimeType": "inode/directory", "text": "" },
            { "uri": "file:///a.txt", "mimeType": "text/plain", "text": "two", "annotations": { "audience": ["user", "assistant"], "priority": 0.5, "lastModified": "2025-01-12T15:00:58Z" } },
        ] })),
    ];
    for (i, (m, params, ans)) in answers.into_iter().enumerate() {
        let r = {
            p.send(c, json!({ "jsonrpc": "2.0", "id": i, "method": m, "params": params }));
            let up = p.take_up(0);
            p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": ans }));
            p.take(c)
        };
        assert_eq!(r["result"], ans, "{m}");
        assert!(r.get("error").is_none());
    }
    // The links are not listed, and nothing made them so.
    let listed = p.list_all(c, "resources/list", "resources");
    assert!(listed.iter().all(|r| r["uri"] != "file:///not/listed"));
    // A legacy upstream's -32002 is read as not found by a modern client.
    let m = p.connect();
    p.modern_send(m, json!(9), "resources/read", json!({ "uri": "file:///a.txt" }), &json!({}));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "error": { "code": -32002, "message": "Resource not found" } }));
    assert_eq!(err_code(&p.take(m)), -32602);
}

// ---------------------------------------------------------------- completion, logging

// covers: completion-max-100
#[test]
fn completions_are_capped_at_100_and_bad_refs_refused() {
    let mut f = rich("2025-11-25");
    f.caps["completions"] = json!({});
    let mut p = Pair::with(vec![("p", f)], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    let ask = |i: usize| json!({ "jsonrpc": "2.0", "id": i, "method": "completion/complete", "params": { "ref": { "type": "ref/prompt", "name": "p__greet" }, "argument": { "name": "who", "value": "a" } } });
    // 150 values from the upstream: the client gets the first 100 in order, and knows there are more.
    p.send(c, ask(1));
    let up = p.take_up(0);
    let values: Vec<String> = (0..150).map(|i| format!("a{i:03}")).collect();
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "completion": { "values": values } } }));
    let r = p.take(c);
    assert_eq!(r["result"]["completion"]["values"], json!(values[..100]));
    assert_eq!((r["result"]["completion"]["hasMore"].clone(), r["result"]["completion"]["total"].clone()), (json!(true), json!(150)));
    schema_check("2025-11-25", "CompleteResult", &r["result"]);
    // 100 or fewer: unchanged.
    p.send(c, ask(2));
    let up = p.take_up(0);
    let few = json!({ "completion": { "values": ["alice", "al"], "total": 2, "hasMore": false } });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": few }));
    assert_eq!(p.take(c)["result"], few);
    // Invalid refs and missing names are -32602 and reach no server.
    for (i, params) in [
        json!({ "ref": { "type": "ref/prompt", "name": "p__nope" }, "argument": { "name": "who", "value": "" } }),
        json!({ "ref": { "type": "ref/prompt" }, "argument": { "name": "who", "value": "" } }),
    ]
    .into_iter()
    .enumerate()
    {
        let r = p.request(c, json!(10 + i), "completion/complete", params.clone());
        assert_eq!(err_code(&r), -32602, "{params}: {r}");
    }
    assert!(p.up_quiet(0));
}

// covers: logging-errors-setlevel, logging-invalid-loglevel-reject-request
#[test]
fn unknown_log_levels_are_invalid_params() {
    let mut f = rich("2025-11-25");
    f.caps["logging"] = json!({});
    let mut p = Pair::with(vec![("fs", f)], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    for bad in [json!("loud"), json!(3), json!(null)] {
        assert_eq!(err_code(&p.request(c, json!(1), "logging/setLevel", json!({ "level": bad }))), -32602, "{bad}");
    }
    assert!(p.up_quiet(0), "no level reached the upstream");
    assert_eq!(p.request(c, json!(2), "logging/setLevel", json!({ "level": "warning" }))["result"], json!({}));
    let m = p.connect();
    let mut params = modern_params(json!({ "name": "fs__read" }), &json!({}));
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("verbose");
    p.send(m, json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params }));
    let r = p.take(m);
    assert_eq!(err_code(&r), -32602, "{r}");
    schema_check(MODERN, "JSONRPCErrorResponse", &r);
}

// ---------------------------------------------------------------- list changes

// covers: tools-list-changed-notify-to-listeners, prompts-list-changed-notify-to-listeners, resources-list-changed-notify
#[test]
fn list_changes_reach_the_listeners_that_asked() {
    let mut p = Pair::with(vec![("fs", rich("2025-11-25"))], HubOptions::default());
    let m = p.connect();
    p.modern_send(m, json!("all"), "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true } }), &json!({}));
    assert_eq!(p.take(m)["method"], "notifications/subscriptions/acknowledged");
    let t = p.connect();
    p.modern_send(t, json!("tools"), "subscriptions/listen", json!({ "notifications": { "toolsListChanged": true } }), &json!({}));
    assert_eq!(p.take(t)["method"], "notifications/subscriptions/acknowledged");
    // A legacy client that listed resources.
    let l = p.client("2025-11-25", json!({}));
    p.list_all(l, "resources/list", "resources");
    for (what, notice, expect) in [
        ("tools", "notifications/tools/list_changed", "notifications/tools/list_changed"),
        ("prompts", "notifications/prompts/list_changed", "notifications/prompts/list_changed"),
        ("resources", "notifications/resources/list_changed", "notifications/resources/list_changed"),
    ] {
        let f = p.fakes[0].as_mut().unwrap();
        match what {
            "tools" => f.tools.push(tool("new")),
            "prompts" => f.prompts.push(json!({ "name": "new" })),
            _ => f.resources.push(json!({ "uri": "file:///new", "name": "new" })),
        }
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": notice }));
        let n = p.take(m);
        assert_eq!(n["method"], expect, "{what}");
        assert_eq!(n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "all");
        schema_check(MODERN, "ServerNotification", &n);
        if what == "tools" {
            assert_eq!(p.take(t)["method"], expect);
        }
        assert!(p.client_quiet(t), "{what}: only what the stream asked for");
        if what == "resources" {
            assert_eq!(p.take(l)["method"], expect);
        }
        assert!(p.client_quiet(l) && p.client_quiet(m), "{what}");
    }
}

// ---------------------------------------------------------------- structured content across eras

// covers: tools-structured-object-only, tools-output-schema-object-root, tools-structured-any-json
#[test]
fn non_object_structured_content_of_modern_upstreams_fits_legacy_clients() {
    let mut f = rich(MODERN);
    f.tools[0]["outputSchema"] = json!({ "type": "array", "items": { "type": "integer" } });
    let mut p = Pair::with(vec![("m", f)], HubOptions::default());
    let l = p.client("2025-11-25", json!({}));
    let tools = p.list_all(l, "tools/list", "tools");
    schema_check("2025-11-25", "ListToolsResult", &json!({ "tools": tools }));
    let out = json!({ "content": [{ "type": "text", "text": "[1,2]" }], "structuredContent": [1, 2], "resultType": "complete" });
    p.send(l, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "m__read" } }));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": out }));
    let r = p.take(l);
    schema_check("2025-11-25", "CallToolResult", &r["result"]);
    assert_eq!(r["result"]["content"], out["content"]);
    // A modern client gets the array as it is.
    let m = p.connect();
    let lt = p.modern_request(m, json!(2), "tools/list", json!({}), &json!({}));
    assert_eq!(lt["result"]["tools"][0]["outputSchema"]["type"], "array");
    p.modern_send(m, json!(3), "tools/call", json!({ "name": "m__read" }), &json!({}));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": out }));
    let r = p.take(m);
    assert_eq!(r["result"]["structuredContent"], json!([1, 2]));
    schema_check(MODERN, "CallToolResult", &r["result"]);
}
