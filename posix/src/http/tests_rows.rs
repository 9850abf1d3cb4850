//! Loopback tests for rows of the Streamable HTTP transport and of the
//! base protocol as it shows over HTTP (status codes of modern errors,
//! request-scoped streams, cancellation by closing a stream). Reuses the
//! server and client helpers of `tests`; rows are named in `// covers:`.

use super::*;

/// Validates `instance` against definition `def` of the 2026-07-28 schema,
/// found in `$MCPX_SPEC_DIR` or else beside the repository.
fn schema_2026(def: &str, instance: &Value) {
    let dir = std::env::var("MCPX_SPEC_DIR").unwrap_or_else(|_| format!("{}/../../shared/spec", env!("CARGO_MANIFEST_DIR")));
    let path = format!("{dir}/2026-07-28/schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("schema missing ({path}): {e}"));
    let mut schema: Value = serde_json::from_str(&text).expect("schema is JSON");
    let key = if schema.get("$defs").is_some() { "$defs" } else { "definitions" };
    schema["$ref"] = json!(format!("#/{key}/{def}"));
    let v = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = v.iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{def}: {errors:?}\n{instance}");
}

// covers: versioning-unsupported-version-http-400, errors-header-mismatch-http-400
#[test]
fn modern_version_and_header_errors_are_400_with_json_rpc_bodies() {
    let t = start(|_| {});
    let mut body = modern_body(json!(7), "tools/list", json!({}), json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let r = modern_post(t.addr, &body, &[("MCP-Protocol-Version", "2099-01-01")]);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.header("content-type").is_some_and(|c| c.starts_with("application/json")));
    let v = r.json();
    schema_2026("UnsupportedProtocolVersionError", &v);
    assert_eq!((v["id"].clone(), v["error"]["code"].clone()), (json!(7), json!(-32022)));
    assert!(v["error"]["data"]["supported"].as_array().unwrap().iter().any(|s| s == "2026-07-28"));
    // Header and body disagree (method): 400 with a HeaderMismatchError body.
    let body = modern_body(json!(8), "tools/list", json!({}), json!({}));
    let r = modern_post(t.addr, &body, &[("Mcp-Method", "prompts/list")]);
    assert_eq!(r.status, 400, "{}", r.text());
    let v = r.json();
    schema_2026("HeaderMismatchError", &v);
    assert_eq!((v["id"].clone(), v["error"]["code"].clone()), (json!(8), json!(-32020)));
    // Header and body disagree (version): the same.
    let r = modern_post(t.addr, &body, &[("MCP-Protocol-Version", "2025-11-25")]);
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, json!(-32020)), "{}", r.text());
}

// covers: streamable-http-server-single-endpoint-post, streamable-http-missing-version-header-legacy
#[test]
fn one_endpoint_takes_every_post_and_a_missing_header_means_2025_03_26() {
    let t = start(|_| {});
    // Modern and legacy alike POST to /mcp; no other path serves MCP.
    let r = modern_post(t.addr, &modern_body(json!(1), "tools/list", json!({}), json!({})), &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(response_of(&r)["result"]["tools"].is_array());
    for path in ["/", "/mcp/", "/mcp/messages", "/rpc"] {
        let r = request(t.addr, "POST", path, &[ACCEPT, JSON], &serde_json::to_vec(&initialize_body("2025-11-25")).unwrap());
        assert_ne!(r.status, 200, "{path}");
    }
    // A legacy session whose later POSTs carry no MCP-Protocol-Version header: served as 2025-03-26.
    let sid = init_with(t.addr, "2025-06-18");
    let b = serde_json::to_vec(&call(2, "echo", json!({ "text": "no header" }))).unwrap();
    let hs = [ACCEPT, JSON, ("Mcp-Session-Id", sid.as_str())];
    let r = request(t.addr, "POST", "/mcp", &hs, &b);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(response_of(&r)["result"]["content"][0]["text"], "no header");
}

// covers: streamable-http-sse-notifications-must-relate
#[test]
fn a_modern_call_stream_carries_only_its_own_notifications() {
    let t = start(|_| {});
    let mut a = modern_body(json!("a"), "tools/call", json!({ "name": "progress", "arguments": {} }), json!({}));
    a["params"]["_meta"]["progressToken"] = json!("tok-a");
    let mut s = connect(t.addr);
    let bytes = serde_json::to_vec(&a).unwrap();
    let hs = [ACCEPT, JSON, ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "progress")];
    write_req(&mut s, t.addr, "POST", "/mcp", &hs, &bytes);
    // Meanwhile another request with its own token on its own POST.
    let mut b = modern_body(json!("b"), "tools/call", json!({ "name": "progress", "arguments": {} }), json!({}));
    b["params"]["_meta"]["progressToken"] = json!("tok-b");
    let rb = modern_post(t.addr, &b, &[]);
    let got = read_until(&mut s, "progress done", Duration::from_secs(5));
    let ev = sse_data(&got);
    let evb = if rb.header("content-type").is_some_and(|c| c.starts_with("text/event-stream")) { rb.events() } else { vec![rb.json()] };
    for (evs, id, tok) in [(&ev, "a", "tok-a"), (&evb, "b", "tok-b")] {
        assert!(evs.iter().any(|e| e["id"] == id), "{evs:?}");
        for e in evs.iter() {
            if e.get("id").is_some() {
                assert_eq!(e["id"], id, "only its own response: {e}");
            } else {
                assert_eq!(e["method"], "notifications/progress", "{e}");
                assert_eq!(e["params"]["progressToken"], tok, "only its own notifications: {e}");
            }
        }
    }
    assert!(ev.iter().any(|e| e["method"] == "notifications/progress"), "{ev:?}");
}

// covers: streamable-http-close-is-cancel, streamable-http-silent-after-cancel, streamable-http-stop-cancelled-work, cancellation-http-disconnect-is-cancel, cancellation-http-no-messages-after-close
#[test]
fn closing_a_modern_post_cancels_the_request_upstream() {
    let t = start(|_| {});
    let body = modern_body(json!(41), "tools/call", json!({ "name": "slow", "arguments": { "ms": 600 } }), json!({}));
    let mut s = connect(t.addr);
    let hs = [ACCEPT, JSON, ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "slow")];
    write_req(&mut s, t.addr, "POST", "/mcp", &hs, &serde_json::to_vec(&body).unwrap());
    let deadline = Instant::now() + Duration::from_secs(5);
    while !t.seen.lock().unwrap().iter().any(|m| m == "tools/call") {
        assert!(Instant::now() < deadline, "the call never reached the upstream");
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(s);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !t.seen.lock().unwrap().iter().any(|m| m == "notifications/cancelled") {
        assert!(Instant::now() < deadline, "closing the stream did not cancel: {:?}", t.seen.lock().unwrap());
        std::thread::sleep(Duration::from_millis(10));
    }
    // The late answer goes nowhere and the hub keeps serving; nothing is left pending.
    std::thread::sleep(Duration::from_millis(800));
    let r = modern_post(t.addr, &modern_body(json!(41), "tools/call", json!({ "name": "echo", "arguments": { "text": "after" } }), json!({})), &[]);
    assert_eq!(response_of(&r)["result"]["content"][0]["text"], "after");
    let st = status_json(t.addr);
    assert_eq!(st["pending"].as_u64(), Some(0), "{st}");
}

// covers: streamable-http-missing-capability-400
#[test]
fn a_modern_call_needing_an_undeclared_capability_is_400() {
    let t = start(|_| {});
    let body = modern_body(json!(5), "tools/call", json!({ "name": "sample", "arguments": {} }), json!({}));
    let r = modern_post(t.addr, &body, &[]);
    let v = response_of(&r);
    assert_eq!((v["id"].clone(), v["error"]["code"].clone()), (json!(5), json!(-32021)), "{v}");
    schema_2026("MissingRequiredClientCapabilityError", &v);
    assert_eq!(r.status, 400, "{}", r.text());
}
