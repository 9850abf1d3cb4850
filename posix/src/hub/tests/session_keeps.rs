//! What a session keeps of its `initialize` is bounded (issue 25 item 1):
//! over a limit the `initialize` is refused with -32602 naming it, and the
//! client is forgotten (an HTTP session is then not opened); at the limit
//! it is kept as sent.

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
            assert_eq!(p.hub.client_revision(c), None, "nothing is kept of it");
            let status = p.hub.status();
            let ids: Vec<u64> = status["clients"].as_array().unwrap().iter().filter_map(|c| c["id"].as_u64()).collect();
            assert!(!ids.contains(&c), "the client is forgotten: {status}");
        }
    }
}
