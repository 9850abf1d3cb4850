//! Requirement rows of the primitive and utility areas that need a real
//! peer: an SDK client over mcpx's HTTP listener.

use mcpx_tests::*;
use serde_json::json;

// covers: authz-accept-only-own-tokens
#[test]
fn the_http_listener_accepts_only_its_own_token_py_1_30_0() {
    let hub = HubConfig::new().upstream(example_server("demo")).set("auth", json!({"bearer": "client-secret"})).write();
    let http = hub.serve_http();
    // Its own token: served.
    let steps = json!([{"op": "call", "tool": "demo__echo", "args": {"text": "hi"}, "expect_text": "hi"}]);
    let r = Client::Py("1.30.0").run_url(&["--header", "Authorization: Bearer client-secret", "script", &steps.to_string()], &http.url);
    r.assert_ok();
    // A token issued for something else, a prefix of its own, or one with extra
    // characters: refused with 401 before anything is served.
    for other in ["Bearer upstream-secret", "Bearer client-secre", "Bearer client-secret2", "Basic Y2xpZW50LXNlY3JldA=="] {
        let header = format!("Authorization: {other}");
        let r = Client::Py("1.30.0").run_url(&["--header", &header, "list"], &http.url);
        r.check(r.code == Some(1) && r.json["failures"].to_string().contains("401"), &format!("{other} should be refused with 401"));
    }
}
