//! Requirement rows of the relayed client features that need the real
//! binary: the built-in example server's elicitations, seen through the hub.

use mcpx_tests::*;
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// Whether `p` is a primitive property of a form schema: string (with or
/// without enum / oneOf), number, integer, boolean, or a multi-select array
/// of enumerated strings (2025-11-25); never an object or nested schema.
fn primitive(p: &Value) -> bool {
    if p.get("properties").is_some() || p.get("$ref").is_some() {
        return false;
    }
    match p["type"].as_str() {
        Some("string" | "number" | "integer" | "boolean") => true,
        Some("array") => {
            let items = &p["items"];
            items.get("properties").is_none() && (items.get("enum").is_some() || items.get("anyOf").is_some() || items.get("oneOf").is_some())
        }
        _ => false,
    }
}

// covers: elicitation-form-schema-flat-primitives
#[test]
fn the_example_servers_form_schemas_are_flat_objects_of_primitives() {
    let hub = HubConfig::new().upstream(example_server("demo")).write();
    let mut s = RawSession::spawn(&hub.serve());
    let id = s.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
               "clientInfo": {"name": "mcpx-raw-test", "version": "1.0.0"}}),
    );
    assert!(s.response_to(id, WAIT).get("result").is_some());
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut seen = 0;
    for (tool, args) in [
        ("test_elicitation", json!({"message": "hello"})),
        ("test_elicitation_sep1034_defaults", json!({})),
        ("test_elicitation_sep1330_enums", json!({})),
        ("ask_user", json!({"message": "Who?"})),
        ("confirm_delete", json!({"filename": "x"})),
    ] {
        let call = s.request("tools/call", json!({"name": format!("demo__{tool}"), "arguments": args}));
        loop {
            let m = s.next_message(WAIT).unwrap_or_else(|| panic!("{tool}: nothing came; stderr:\n{}", s.finish()));
            if m["id"] == json!(call) && m.get("method").is_none() {
                break;
            }
            if m["method"] != "elicitation/create" {
                if m.get("id").is_some() && m.get("method").is_some() {
                    s.send(&json!({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "not in this test"}}));
                }
                continue;
            }
            let schema = &m["params"]["requestedSchema"];
            assert_eq!(schema["type"], "object", "{tool}: {m}");
            let props = schema["properties"].as_object().unwrap_or_else(|| panic!("{tool}: {m}"));
            for (k, p) in props {
                assert!(primitive(p), "{tool}: property {k} is not a primitive: {p}");
            }
            seen += 1;
            s.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": {"action": "decline"}}));
        }
    }
    assert!(seen >= 4, "{seen} elicitations");
    s.finish();
}
