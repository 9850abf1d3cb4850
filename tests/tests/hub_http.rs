//! Real SDK clients through `mcpx serve --http` (Streamable HTTP) to real
//! upstreams: the same hub as `hub.rs`, reached over loopback HTTP instead
//! of stdio.

use mcpx_tests::*;
use serde_json::json;

fn aggregate(client: Client) {
    let hub = three_upstreams();
    let http = hub.serve_http();
    let steps = json!([
        {"op": "list_tools", "expect_tools": ["demo__echo", "everything__get-sum", "py__greet"], "retry_for": 30},
        {"op": "call", "tool": "demo__echo", "args": {"text": "over http"}, "expect_text": "over http"},
        {"op": "call", "tool": "everything__get-sum", "args": {"a": 2, "b": 3}, "expect_text": "The sum of 2 and 3 is 5."},
        {"op": "call", "tool": "py__greet", "args": {"name": "http"}, "expect_text": "Hello, http! (from py)"}
    ]);
    let r = client.run_url(&["script", &steps.to_string()], &http.url);
    r.assert_ok();
    let want = client.latest_legacy_revision();
    r.check(
        r.json["protocol_version"] == want,
        &format!("the hub should accept the client's {want}"),
    );
}

// covers: streamable-http-server-json-or-sse-for-request, streamable-http-server-may-assign-session
#[test]
fn py_1_9_4_over_http() {
    aggregate(Client::Py("1.9.4"));
}

// covers: streamable-http-server-json-or-sse-for-request, streamable-http-server-may-assign-session
#[test]
fn py_1_12_4_over_http() {
    aggregate(Client::Py("1.12.4"));
}

// covers: streamable-http-server-json-or-sse-for-request, streamable-http-server-may-assign-session
#[test]
fn py_1_30_0_over_http() {
    aggregate(Client::Py("1.30.0"));
}

// covers: streamable-http-server-json-or-sse-for-request, streamable-http-server-may-assign-session
#[test]
fn py_2_3_0_legacy_over_http() {
    aggregate(Client::Py2Mode("legacy"));
}

// covers: streamable-http-server-json-or-sse-for-request, streamable-http-server-may-assign-session
#[test]
fn ts_v1_over_http() {
    aggregate(Client::TsV1);
}

// covers: streamable-http-server-json-or-sse-for-request, streamable-http-server-may-assign-session
#[test]
fn ts_v2_legacy_over_http() {
    aggregate(Client::TsV2("legacy"));
}

// covers: streamable-http-post-sse-may-carry-requests
#[test]
fn elicitation_over_http_py_1_30_0() {
    let hub = three_upstreams();
    let http = hub.serve_http();
    let r =
        Client::Py("1.30.0").run_url(&["--prefix", "py__", "elicitation", "ask_user"], &http.url);
    r.assert_ok();
    r.check(
        r.result_text()
            .contains("user answered: mcpx-elicited-answer"),
        "answer not round-tripped",
    );
}

// covers: streamable-http-post-sse-may-carry-requests
#[test]
fn sampling_over_http_ts_v1() {
    let hub = three_upstreams();
    let http = hub.serve_http();
    let r = Client::TsV1.run_url(
        &[
            "--prefix",
            "everything__",
            "sampling",
            "trigger-sampling-request",
            r#"{"prompt":"hi"}"#,
        ],
        &http.url,
    );
    r.assert_ok();
    r.check(
        r.result_text().contains("mcpx-test-model"),
        "the sampling result did not reach server-everything",
    );
}

// covers: streamable-http-sse-includes-response
#[test]
fn progress_over_http_py_1_30_0() {
    let hub = three_upstreams();
    let http = hub.serve_http();
    let r = Client::Py("1.30.0").run_url(
        &[
            "--prefix",
            "demo__",
            "progress",
            "slow",
            r#"{"seconds":1,"steps":4}"#,
        ],
        &http.url,
    );
    r.assert_ok();
    r.check(
        r.json["progress"].as_array().map_or(0, Vec::len) == 4,
        "expected the 4 progress notifications",
    );
}

/// `/ready`: 200 once every server marked `"required"` is ready, 503 (with
/// only the count) while one is not; without authentication, as `/health`,
/// which stays 200 either way.
#[test]
fn ready_waits_for_the_required_servers_only() {
    let ready_at = |url: &str| http(&url.replace("/mcp", "/ready"), &[], None);
    let ok = json!({"command": mcpx().to_str().unwrap(), "args": ["example-server", "--name", "ok"], "required": true});
    // A required server that cannot start: 503 for as long as it is down.
    let dead = json!({"command": "/nonexistent/mcp-server", "required": true});
    for (entries, want) in [(vec![("ok", ok.clone())], 200), (vec![("ok", ok.clone()), ("dead", dead)], 503)] {
        let hub = entries.into_iter().fold(HubConfig::new(), |h, (n, e)| h.remote(n, e)).write();
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let cmd = Cmd::new(mcpx(), &["serve", "--config", hub.config.to_str().unwrap(), "--http", &addr, "--token", "s3cret"]);
        let server = HttpServer::start(&cmd, port, "/mcp");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(if want == 200 { 20 } else { 2 });
        let mut r = ready_at(&server.url);
        while r.status != 200 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
            r = ready_at(&server.url);
        }
        assert_eq!(r.status, want, "{}", r.text);
        let not_ready = if want == 200 { 0 } else { 1 };
        assert_eq!(r.json, json!({"ready": want == 200, "requiredNotReady": not_ready}), "{}", r.text);
        assert_eq!(http(&server.url.replace("/mcp", "/health"), &[], None).status, 200);
    }
}
