//! A 2026-07-28 client through `mcpx serve` to a 2026-07-28 remote upstream:
//! `py_modern_server.py` (Python SDK 2.3.0, `MCPServer`) over Streamable
//! HTTP on 127.0.0.1, next to `mcpx example-server` as the local `demo`.
//!
//! The hub probes the upstream with `server/discover` and speaks to it in
//! the modern era: every request is a stateless POST with the 2026-07-28
//! headers, which the SDK server checks against the body (a missing or
//! wrong `Mcp-Name` or `Mcp-Param-*` fails the call with -32020).

use mcpx_tests::*;
use serde_json::json;

/// The modern upstream on a free port.
fn modern_upstream() -> HttpServer {
    let port = free_port();
    let script = driver("py_modern_server.py");
    let port_s = port.to_string();
    let cmd = Cmd::new(python("2.3.0"), &[script.to_str().unwrap(), "--name", "pym", "--http", &port_s]);
    HttpServer::start(&cmd, port, "/mcp")
}

fn hub(server: &HttpServer) -> Hub {
    HubConfig::new()
        .upstream(example_server("demo"))
        .remote("pym", json!({"url": server.url}))
        .write()
}

/// One session of a 2026-07-28 client: tools of both upstreams listed and
/// called, x-mcp-header arguments that need the Base64 sentinel included.
fn modern_session(client: Client) {
    let server = modern_upstream();
    let hub = hub(&server);
    let r = client.script(
        json!([
            {"op": "list_tools", "expect_tools": ["demo__echo", "pym__greet", "pym__forecast", "pym__ask_user"]},
            {"op": "call", "tool": "pym__greet", "args": {"name": "modern"}, "expect_text": "Hello, modern! (from pym)"},
            // Mcp-Param-Region is the Base64 sentinel of "Zürich", Mcp-Param-Days "3".
            {"op": "call", "tool": "pym__forecast", "args": {"region": "Zürich", "days": 3}, "expect_text": "forecast for Zürich, 3 days"},
            {"op": "call", "tool": "pym__forecast", "args": {"region": " padded ", "days": -2}, "expect_text": "forecast for  padded , -2 days"},
            {"op": "call", "tool": "demo__echo", "args": {"text": "local"}, "expect_text": "local"}
        ]),
        &hub.serve(),
    );
    r.assert_ok();
    r.check(r.json["protocol_version"] == "2026-07-28", "the client session should run at 2026-07-28");
}

// covers: versioning-dual-era-http-detect, streamable-http-client-sends-metadata-headers, streamable-http-client-header-construction, streamable-http-mcp-name-base64, streamable-http-param-value-encoding
#[test]
fn modern_client_to_modern_remote_py_2_3_0() {
    modern_session(Client::Py2Mode("2026-07-28"));
}

// covers: streamable-http-client-sends-metadata-headers, streamable-http-client-header-construction
#[test]
fn ts_v2_modern_client_to_modern_remote_py_2_3_0() {
    modern_session(Client::TsV2("2026-07-28"));
}

// covers: tools-call-input-required-may
#[test]
fn elicitation_modern_client_to_modern_remote_py_2_3_0() {
    let server = modern_upstream();
    let hub = hub(&server);
    let r = Client::Py2Mode("2026-07-28").run(&["--prefix", "pym__", "elicitation", "ask_user"], &hub.serve());
    r.assert_ok();
    // The upstream's input_required result reaches the client (requestState
    // wrapped by the hub), the client's retry reaches the upstream with the
    // answer and the upstream's own requestState.
    r.check(
        r.result_text().contains("user answered: mcpx-elicited-answer (state asked)"),
        "answer or requestState not round-tripped",
    );
}

// covers: tools-call-input-required-may
#[test]
fn elicitation_legacy_client_to_modern_remote_py_2_3_0() {
    let server = modern_upstream();
    let hub = hub(&server);
    let r = Client::Py("1.30.0").run(&["--prefix", "pym__", "elicitation", "ask_user"], &hub.serve());
    r.assert_ok();
    // A legacy client gets elicitation/create; the hub retries the upstream's
    // call with the answer and its requestState.
    r.check(
        r.result_text().contains("user answered: mcpx-elicited-answer (state asked)"),
        "answer or requestState not round-tripped",
    );
}

// covers: subscriptions-server-teardown-respond, cancellation-server-must-send-cancelled-on-listen-teardown
#[test]
fn end_of_input_answers_an_open_listen_and_exits_at_once() {
    use std::time::{Duration, Instant};
    let server = modern_upstream();
    let hub = hub(&server);
    let mut s = RawSession::spawn(&hub.serve());
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "mcpx-raw-test", "version": "1.0.0"}
    });
    let id = s.request("tools/list", json!({"_meta": meta}));
    let r = s.response_to(id, Duration::from_secs(30));
    assert!(r["result"]["tools"].is_array(), "{r}");
    s.send(&json!({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
                   "params": {"notifications": {"toolsListChanged": true}, "_meta": meta}}));
    std::thread::sleep(Duration::from_millis(500));
    // End of input: the listen is answered and mcpx exits without waiting
    // for it as for an ordinary request (up to the servers' timeout).
    let t0 = Instant::now();
    let stderr = s.finish();
    assert!(t0.elapsed() < Duration::from_secs(4), "mcpx took {:?} to exit; stderr:\n{stderr}", t0.elapsed());
    let answer = s.next_response(Duration::from_secs(1));
    let answer = answer.unwrap_or_else(|| panic!("no answer to the listen; stderr:\n{stderr}"));
    assert_eq!(answer["id"], "L", "{answer}");
    assert_eq!(answer["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "L", "{answer}");
}
