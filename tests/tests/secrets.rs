//! Each person's own credentials upstream, as per-principal secrets
//! (issue 29): a server whose `env` or headers name `${secret:NAME}` runs
//! one instance per principal, each with its owner's `NAME` from the
//! `"secrets"` file. Python SDK (FastMCP 1.30.0) servers, one local on
//! stdio (it reports its environment), one remote over Streamable HTTP (it
//! reports the Authorization header of each call); three principals with
//! tokens of their own over mcpx's HTTP listener.

use std::os::unix::fs::PermissionsExt as _;

use mcpx_tests::*;
use serde_json::{json, Value};

const TOKENS: [(&str, &str); 3] = [("alice", "tok-alice-0123456789"), ("bob", "tok-bob-0123456789"), ("carol", "tok-carol-0123456789")];

fn text(r: &Value) -> String {
    r["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("a text result: {r}")).to_string()
}

// covers: authz-no-token-passthrough
#[test]
fn each_principal_reaches_local_and_remote_servers_with_its_own_secret_only() {
    let port = free_port();
    let script = driver("py_server.py");
    let remote = HttpServer::start(&Cmd::new(python("1.30.0"), &[script.to_str().unwrap(), "--name", "rem", "--http", &port.to_string()]), port, "/mcp");
    let local = Cmd::new(python("1.30.0"), &[script.to_str().unwrap(), "--name", "loc", "--env-var", "API_KEY"]);
    let tokens: serde_json::Map<String, Value> = TOKENS.iter().map(|(n, t)| (n.to_string(), json!(t))).collect();
    let hub = HubConfig::new()
        .remote("loc", json!({ "command": local.program, "args": local.args, "isolation": "client", "env": { "API_KEY": "${secret:API_KEY}" } }))
        .remote("rem", json!({ "url": remote.url, "isolation": "client", "headers": { "Authorization": "Bearer ${secret:TOKEN}" } }))
        .set("auth", json!({ "tokens": tokens }))
        .set("secrets", json!("secrets.json"))
        .write();
    // alice and bob have theirs; carol has none; "*" lists the local server's tools.
    let file = hub.dir().join("secrets.json");
    let secrets = json!({
        "alice": { "API_KEY": "alice-key", "TOKEN": "alice-tok" },
        "bob": { "API_KEY": "bob-key", "TOKEN": "bob-tok" },
        "*": { "API_KEY": "list-key" },
    });
    std::fs::write(&file, secrets.to_string()).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server = hub.serve_http();
    let url = &server.url;

    for (who, token) in &TOKENS[..2] {
        let sid = bearer_session(url, token, json!({}));
        assert_eq!(text(&bearer_call(url, token, &sid, "loc__env_var")), format!("API_KEY={who}-key"), "{who}'s own key, in its own process");
        assert_eq!(text(&bearer_call(url, token, &sid, "rem__auth_header")), format!("authorization: Bearer {who}-tok"), "{who}'s own token, in its own session");
    }
    // Again, interleaved: each instance stays its owner's.
    let (a, b) = (bearer_session(url, TOKENS[0].1, json!({})), bearer_session(url, TOKENS[1].1, json!({})));
    assert_eq!(text(&bearer_call(url, TOKENS[1].1, &b, "loc__env_var")), "API_KEY=bob-key");
    assert_eq!(text(&bearer_call(url, TOKENS[0].1, &a, "loc__env_var")), "API_KEY=alice-key");

    // carol has no secret: her call fails at once, saying what she lacks and
    // nothing of anyone else's.
    let sid = bearer_session(url, TOKENS[2].1, json!({}));
    for (tool, secret) in [("loc__env_var", "API_KEY"), ("rem__auth_header", "TOKEN")] {
        let r = bearer_call(url, TOKENS[2].1, &sid, tool);
        let msg = r["error"]["message"].as_str().unwrap_or_else(|| panic!("{tool}: an error: {r}"));
        assert!(msg.contains(&format!("each person's own {secret}")) && msg.contains("'carol'"), "{tool}: {msg}");
        for other in ["alice", "bob", "list-key", "secrets.json"] {
            assert!(!msg.contains(other), "{tool}: {msg}");
        }
    }
    // Added to the file, it applies at her next call (read when her instance starts).
    let mut s = secrets.clone();
    s["carol"] = json!({ "API_KEY": "carol-key", "TOKEN": "carol-tok" });
    std::fs::write(&file, s.to_string()).unwrap();
    assert_eq!(text(&bearer_call(url, TOKENS[2].1, &sid, "loc__env_var")), "API_KEY=carol-key");
    assert_eq!(text(&bearer_call(url, TOKENS[2].1, &sid, "rem__auth_header")), "authorization: Bearer carol-tok");
}
