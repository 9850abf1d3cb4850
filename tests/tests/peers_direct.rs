//! The drivers against real servers directly, with no hub in between.
//!
//! These validate the harness and the peers themselves (each SDK client
//! against third-party servers, and against `mcpx example-server`), so that a
//! failure in `hub.rs` points at the hub, not at a driver. They test no hub
//! behaviour and claim no requirement row.

use mcpx_tests::*;
use serde_json::json;

/// list + two calls, in one session, against py_server.py.
fn py_server_basics(client: Client) {
    let r = client.script(
        json!([
            {"op": "list_tools", "expect_tools": ["greet", "multiply", "ask_user", "slow"]},
            {"op": "call", "tool": "greet", "args": {"name": "mcpx"}, "expect_text": "Hello, mcpx!"},
            {"op": "call", "tool": "multiply", "args": {"a": 6, "b": 7}, "expect_text": "42"},
            {"op": "call", "tool": "no_such_tool", "expect": "error"}
        ]),
        &py_server_cmd("py"),
    );
    r.assert_ok();
    r.check(
        r.json["protocol_version"] == client.latest_legacy_revision(),
        &format!(
            "negotiated revision should be {}",
            client.latest_legacy_revision()
        ),
    );
}

#[test]
fn py_1_3_0_calls_py_server() {
    py_server_basics(Client::Py("1.3.0"));
}

#[test]
fn py_1_9_4_calls_py_server() {
    py_server_basics(Client::Py("1.9.4"));
}

#[test]
fn py_1_12_4_calls_py_server() {
    py_server_basics(Client::Py("1.12.4"));
}

#[test]
fn py_1_30_0_calls_py_server() {
    py_server_basics(Client::Py("1.30.0"));
}

#[test]
fn py_2_3_0_calls_py_server() {
    py_server_basics(Client::Py2Mode("legacy"));
}

#[test]
fn ts_v1_calls_py_server() {
    py_server_basics(Client::TsV1);
}

#[test]
fn ts_v2_calls_py_server() {
    py_server_basics(Client::TsV2("legacy"));
}

/// server-everything sends tools/list_changed right after `initialized`; the
/// clients that read notifications cope (mcp 1.3.0 does not: see peers.md).
fn everything_basics(client: Client) {
    let r = client.script(
        json!([
            {"op": "list_tools", "expect_tools": ["echo", "get-sum", "trigger-long-running-operation"]},
            {"op": "call", "tool": "echo", "args": {"message": "direct"}, "expect_text": "Echo: direct"},
            {"op": "call", "tool": "get-sum", "args": {"a": 2, "b": 3}, "expect_text": "is 5"}
        ]),
        &everything_cmd(),
    );
    r.assert_ok();
}

#[test]
fn py_1_9_4_calls_everything() {
    everything_basics(Client::Py("1.9.4"));
}

#[test]
fn py_1_30_0_calls_everything() {
    everything_basics(Client::Py("1.30.0"));
}

#[test]
fn py_2_3_0_auto_calls_everything() {
    everything_basics(Client::Py2Mode("auto"));
}

#[test]
fn ts_v1_calls_everything() {
    everything_basics(Client::TsV1);
}

#[test]
fn ts_v2_auto_calls_everything() {
    everything_basics(Client::TsV2("auto"));
}

#[test]
fn list_everything_names_resources_and_prompts() {
    let r = Client::Py("1.30.0").run(&["list"], &everything_cmd());
    r.assert_ok();
    let prompts = strings(&r.json["prompts"]);
    r.check(
        prompts.contains(&"args-prompt".to_string()),
        "args-prompt not listed",
    );
    r.check(
        strings(&r.json["resource_templates"])
            .iter()
            .any(|t| t.starts_with("demo://resource/dynamic/text/")),
        "dynamic text template not listed",
    );
}

#[test]
fn elicitation_against_everything_ts_v1() {
    Client::TsV1
        .run(
            &["elicitation", "trigger-elicitation-request"],
            &everything_cmd(),
        )
        .assert_ok();
}

#[test]
fn elicitation_against_py_server_py_1_12_4() {
    // 1.12.4 rejects server-everything's elicitation schema (arrays, enumNames):
    // py_server's one-string schema is what it understands.
    let r = Client::Py("1.12.4").run(&["elicitation", "ask_user"], &py_server_cmd("py"));
    r.assert_ok();
    r.check(
        r.result_text()
            .contains("user answered: mcpx-elicited-answer"),
        "answer not echoed",
    );
}

#[test]
fn sampling_against_everything_py_1_30_0() {
    Client::Py("1.30.0")
        .run(
            &[
                "sampling",
                "trigger-sampling-request",
                r#"{"prompt":"hello"}"#,
            ],
            &everything_cmd(),
        )
        .assert_ok();
}

#[test]
fn sampling_against_py_server_py_1_3_0() {
    Client::Py("1.3.0")
        .run(&["sampling", "ask_model"], &py_server_cmd("py"))
        .assert_ok();
}

#[test]
fn roots_against_everything_py_2_3_0() {
    Client::Py2Mode("legacy")
        .run(&["roots", "get-roots-list"], &everything_cmd())
        .assert_ok();
}

#[test]
fn progress_against_everything_ts_v1() {
    let r = Client::TsV1.run(
        &[
            "progress",
            "trigger-long-running-operation",
            r#"{"duration":1,"steps":3}"#,
        ],
        &everything_cmd(),
    );
    r.assert_ok();
    // The last of the three can race the result (server-everything sends it
    // without waiting), so only require some.
    r.check(
        r.json["progress"].as_array().map_or(0, Vec::len) >= 1,
        "expected progress notifications",
    );
}

#[test]
fn progress_against_py_server_py_1_3_0() {
    // 1.3.0 has no progress callback: the driver sets the token itself.
    let r = Client::Py("1.3.0").run(
        &["progress", "slow", r#"{"steps":4,"delay":0.05}"#],
        &py_server_cmd("py"),
    );
    r.assert_ok();
    r.check(
        r.json["progress"].as_array().map_or(0, Vec::len) == 4,
        "expected 4 progress notifications",
    );
}

#[test]
fn cancel_against_py_server_ts_v1() {
    Client::TsV1
        .run(
            &["cancel", "slow", r#"{"steps":50,"delay":0.2}"#],
            &py_server_cmd("py"),
        )
        .assert_ok();
}

#[test]
fn cancel_against_everything_py_1_9_4() {
    Client::Py("1.9.4")
        .run(
            &[
                "cancel",
                "trigger-long-running-operation",
                r#"{"duration":10,"steps":5}"#,
            ],
            &everything_cmd(),
        )
        .assert_ok();
}

#[test]
fn read_prompt_complete_against_everything_ts_v2() {
    let c = Client::TsV2("legacy");
    let ev = everything_cmd();
    c.run(
        &[
            "read",
            "demo://resource/dynamic/text/1",
            "--expect-text",
            "Resource 1",
        ],
        &ev,
    )
    .assert_ok();
    c.run(
        &[
            "prompt",
            "args-prompt",
            r#"{"city":"Paris"}"#,
            "--expect-text",
            "Paris",
        ],
        &ev,
    )
    .assert_ok();
    let r = c.run(
        &[
            "complete",
            "prompt",
            "completable-prompt",
            "department",
            "E",
        ],
        &ev,
    );
    r.assert_ok();
    r.check(
        strings(&r.json["values"]) == ["Engineering"],
        "completion of E should be Engineering",
    );
}

// ---- mcpx example-server, directly -------------------------------------------

#[test]
fn example_server_lists_fixtures_py_1_30_0() {
    let r = Client::Py("1.30.0").run(
        &[
            "list",
            "--expect-tool",
            "test_simple_text",
            "--expect-tool",
            "echo",
            "--expect-tool",
            "ask_user",
        ],
        &example_server_cmd("demo"),
    );
    r.assert_ok();
}

fn example_server_basics(client: Client) {
    let r = client.script(
        json!([
            {"op": "list_tools", "expect_tools": ["echo", "add", "slow", "crash", "toggle_tool"]},
            {"op": "call", "tool": "echo", "args": {"text": "direct"}, "expect_text": "direct"},
            {"op": "call", "tool": "add", "args": {"a": 2, "b": 3}, "expect_text": "5"},
            {"op": "call", "tool": "test_simple_text", "expect_text": "This is a simple text response for testing."}
        ]),
        &example_server_cmd("demo"),
    );
    r.assert_ok();
    r.check(
        r.json["protocol_version"] == client.latest_legacy_revision(),
        &format!(
            "negotiated revision should be {}",
            client.latest_legacy_revision()
        ),
    );
}

#[test]
fn example_server_py_1_3_0() {
    example_server_basics(Client::Py("1.3.0"));
}

#[test]
fn example_server_py_1_9_4() {
    example_server_basics(Client::Py("1.9.4"));
}

#[test]
fn example_server_py_1_12_4() {
    example_server_basics(Client::Py("1.12.4"));
}

#[test]
fn example_server_py_1_30_0() {
    example_server_basics(Client::Py("1.30.0"));
}

#[test]
fn example_server_ts_v1() {
    example_server_basics(Client::TsV1);
}

#[test]
fn example_server_py_2_3_0_modern() {
    let r = Client::Py2Mode("2026-07-28").script(
        json!([{"op": "call", "tool": "echo", "args": {"text": "modern"}, "expect_text": "modern"}]),
        &example_server_cmd("demo"),
    );
    r.assert_ok();
    r.check(
        r.json["protocol_version"] == "2026-07-28",
        "should run at 2026-07-28",
    );
}

#[test]
fn example_server_flows_py_1_30_0() {
    let c = Client::Py("1.30.0");
    let demo = example_server_cmd("demo");
    c.run(&["elicitation", "ask_user"], &demo).assert_ok();
    c.run(&["sampling", "ask_model", r#"{"prompt":"hi"}"#], &demo)
        .assert_ok();
    c.run(&["roots", "list_roots"], &demo).assert_ok();
    c.run(&["progress", "slow", r#"{"seconds":0.5,"steps":5}"#], &demo)
        .assert_ok();
    c.run(&["cancel", "slow", r#"{"seconds":30}"#], &demo)
        .assert_ok();
}

#[test]
fn example_server_toggle_tool_ts_v1() {
    let r = Client::TsV1.script(
        json!([
            {"op": "list_tools", "expect_absent": ["dynamic_tool"]},
            {"op": "call", "tool": "toggle_tool"},
            {"op": "wait_notification", "method": "notifications/tools/list_changed"},
            {"op": "list_tools", "expect_tools": ["dynamic_tool"]},
            {"op": "call", "tool": "dynamic_tool", "expect_text": "dynamic_tool was called."}
        ]),
        &example_server_cmd("demo"),
    );
    r.assert_ok();
}

#[test]
fn example_server_flows_ts_v2_modern() {
    // At 2026-07-28 the example server asks through input-required results,
    // which the v2 SDK answers and retries.
    let c = Client::TsV2("2026-07-28");
    let demo = example_server_cmd("demo");
    for scenario in [
        &["elicitation", "ask_user"][..],
        &["sampling", "ask_model"],
        &["roots", "list_roots"],
        &["progress", "slow", r#"{"seconds":0.5,"steps":5}"#],
    ] {
        let r = c.run(scenario, &demo);
        r.assert_ok();
        r.check(
            r.json["protocol_version"] == "2026-07-28",
            "should run at 2026-07-28",
        );
    }
}

// ---- the drivers' Streamable HTTP mode (--url), against py_server.py --------

#[test]
fn http_py_1_9_4_calls_py_server() {
    let srv = py_server_http();
    Client::Py("1.9.4")
        .run_url(
            &[
                "call",
                "greet",
                r#"{"name":"http"}"#,
                "--expect-text",
                "Hello, http!",
            ],
            &srv.url,
        )
        .assert_ok();
}

#[test]
fn http_py_1_30_0_elicitation() {
    let srv = py_server_http();
    Client::Py("1.30.0")
        .run_url(&["elicitation", "ask_user"], &srv.url)
        .assert_ok();
}

#[test]
fn http_ts_v1_progress() {
    let srv = py_server_http();
    let r = Client::TsV1.run_url(
        &["progress", "slow", r#"{"steps":3,"delay":0.05}"#],
        &srv.url,
    );
    r.assert_ok();
}

#[test]
fn http_ts_v2_sampling() {
    let srv = py_server_http();
    Client::TsV2("legacy")
        .run_url(&["sampling", "ask_model"], &srv.url)
        .assert_ok();
}

#[test]
fn http_py_1_3_0_has_no_http_client() {
    // mcp 1.3.0 predates Streamable HTTP: the driver says so (exit 3) instead of failing oddly.
    let r = Client::Py("1.3.0").run_url(&["list"], "http://127.0.0.1:9/mcp");
    r.check(r.code == Some(3), "expected exit 3 (unsupported)");
    r.check(
        r.json["unsupported"]
            .as_str()
            .is_some_and(|s| s.contains("Streamable HTTP")),
        "no reason given",
    );
}
