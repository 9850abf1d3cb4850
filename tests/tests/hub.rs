//! Real SDK clients through `mcpx serve` to real upstreams.
//!
//! The usual hub (`three_upstreams`) runs `demo` (mcpx example-server),
//! `everything` (npm server-everything) and `py` (FastMCP, tests/drivers/py_server.py);
//! their names appear as `demo__echo`, `everything__get-sum`, `py__greet`.

use mcpx_tests::*;
use serde_json::json;

// ---- aggregation and namespacing, per client SDK ------------------------------

/// One session: the tools of all three upstreams are listed under their
/// prefixes, and a call to each upstream returns that upstream's answer.
fn aggregate(client: Client) {
    let hub = three_upstreams();
    let r = client.script(
        json!([
            {"op": "list_tools", "expect_tools": [
                "demo__echo", "demo__test_simple_text", "everything__echo", "everything__get-sum",
                "py__greet", "py__multiply"],
             "expect_absent": ["echo", "greet", "get-sum"]},
            {"op": "call", "tool": "demo__echo", "args": {"text": "through the hub"}, "expect_text": "through the hub"},
            {"op": "call", "tool": "everything__get-sum", "args": {"a": 2, "b": 3}, "expect_text": "The sum of 2 and 3 is 5."},
            {"op": "call", "tool": "py__greet", "args": {"name": "hub"}, "expect_text": "Hello, hub! (from py)"},
            {"op": "call", "tool": "nobody__echo", "args": {"text": "x"}, "expect": "error"}
        ]),
        &hub.serve(),
    );
    r.assert_ok();
    let want = client.latest_legacy_revision();
    r.check(
        r.json["protocol_version"] == want,
        &format!("the hub should accept the client's {want}"),
    );
    r.check(
        r.json["server_info"]["name"].is_string(),
        "initialize result has no serverInfo.name",
    );
    // Prefixed names stay unique across upstreams.
    let names: Vec<String> = strings(&r.step(0)["tools"]);
    let mut dedup = names.clone();
    dedup.sort();
    dedup.dedup();
    r.check(
        dedup.len() == names.len(),
        "duplicate tool names in the aggregated list",
    );
}


/// Runs `client` through the hub over the three upstreams and checks that the
/// call's result text contains `expect` (what the relayed answer left there).
fn relayed(client: Client, args: &[&str], expect: &str, why: &str) {
    let r = client.run(args, &three_upstreams().serve());
    r.assert_ok();
    r.check(r.result_text().contains(expect), why);
}

// covers: lifecycle-server-echoes-supported-version, lifecycle-server-responds-caps-and-info, tools-declare-capability
#[test]
fn py_1_3_0_through_hub() {
    // 1.3.0 deadlocks on a notification that arrives before it has read the
    // tools list: server-everything's early tools/list_changed must not reach it.
    aggregate(Client::Py("1.3.0"));
}

// covers: lifecycle-server-echoes-supported-version, lifecycle-server-responds-caps-and-info, tools-declare-capability
#[test]
fn py_1_9_4_through_hub() {
    aggregate(Client::Py("1.9.4"));
}

// covers: lifecycle-server-echoes-supported-version, lifecycle-server-responds-caps-and-info, tools-declare-capability
#[test]
fn py_1_12_4_through_hub() {
    aggregate(Client::Py("1.12.4"));
}

// covers: lifecycle-server-echoes-supported-version, lifecycle-server-responds-caps-and-info, tools-declare-capability
#[test]
fn py_1_30_0_through_hub() {
    aggregate(Client::Py("1.30.0"));
}

// covers: lifecycle-server-echoes-supported-version, lifecycle-server-responds-caps-and-info, tools-declare-capability
#[test]
fn py_2_3_0_legacy_through_hub() {
    aggregate(Client::Py2Mode("legacy"));
}

// covers: lifecycle-server-echoes-supported-version, lifecycle-server-responds-caps-and-info, tools-declare-capability
#[test]
fn ts_v1_through_hub() {
    aggregate(Client::TsV1);
}

// covers: lifecycle-server-echoes-supported-version, lifecycle-server-responds-caps-and-info, tools-declare-capability
#[test]
fn ts_v2_legacy_through_hub() {
    aggregate(Client::TsV2("legacy"));
}

/// Modern clients (2026-07-28, no handshake) through the hub to legacy upstreams.
fn aggregate_modern(client: Client) {
    let hub = three_upstreams();
    let r = client.script(
        json!([
            {"op": "list_tools", "expect_tools": ["demo__echo", "everything__get-sum", "py__greet"]},
            {"op": "call", "tool": "demo__echo", "args": {"text": "modern"}, "expect_text": "modern"},
            {"op": "call", "tool": "everything__get-sum", "args": {"a": 20, "b": 22}, "expect_text": "is 42."},
            {"op": "call", "tool": "py__greet", "args": {"name": "modern"}, "expect_text": "Hello, modern!"}
        ]),
        &hub.serve(),
    );
    r.assert_ok();
    r.check(
        r.json["protocol_version"] == "2026-07-28",
        "the session should run at 2026-07-28",
    );
}

// covers: tools-list-must-respond-when-declared
#[test]
fn py_2_3_0_modern_through_hub() {
    aggregate_modern(Client::Py2Mode("2026-07-28"));
}

// covers: tools-list-must-respond-when-declared
#[test]
fn ts_v2_auto_through_hub() {
    aggregate_modern(Client::TsV2("auto"));
}

// covers: resources-declare-capability, prompts-declare-capability, completion-declare-capability
#[test]
fn resources_prompts_completion_through_hub() {
    let hub = three_upstreams();
    let c = Client::Py("1.30.0");
    let r = c.run(&["list"], &hub.serve());
    r.assert_ok();
    let prompts = strings(&r.json["prompts"]);
    r.check(
        prompts.iter().any(|p| p.ends_with("args-prompt")),
        "server-everything's args-prompt missing",
    );
    r.check(
        prompts.iter().any(|p| p.ends_with("py_prompt")),
        "py_server's py_prompt missing",
    );
    let resources = strings(&r.json["resources"]);
    r.check(!resources.is_empty(), "no resources listed");
    // Reading and prompts go to the right upstream, whatever names the hub shows.
    let py_prompt = prompts.iter().find(|p| p.ends_with("py_prompt")).unwrap();
    c.run(
        &[
            "prompt",
            py_prompt,
            r#"{"topic":"hubs"}"#,
            "--expect-text",
            "Please write about hubs.",
        ],
        &hub.serve(),
    )
    .assert_ok();
    let completable = prompts
        .iter()
        .find(|p| p.ends_with("completable-prompt"))
        .expect("completable-prompt listed");
    let r = c.run(
        &["complete", "prompt", completable, "department", "E"],
        &hub.serve(),
    );
    r.assert_ok();
    r.check(
        strings(&r.json["values"]) == ["Engineering"],
        "completion should come from server-everything",
    );
    // The hub may rewrite URIs to keep them apart; read whatever it lists for py://info.
    let info = resources
        .iter()
        .find(|u| u.contains("py://info"))
        .expect("py_server's py://info listed");
    c.run(&["read", info, "--expect-text", "py info"], &hub.serve())
        .assert_ok();
}

// ---- server-to-client requests relayed through the hub -----------------------

// covers: elicitation-client-declare-capability-at-initialize
#[test]
fn elicitation_example_server_py_1_30_0() {
    let r = Client::Py("1.30.0").run(
        &["--prefix", "demo__", "elicitation", "ask_user"],
        &three_upstreams().serve(),
    );
    r.assert_ok();
}

// covers: elicitation-client-declare-capability-at-initialize
#[test]
fn elicitation_everything_ts_v1() {
    // server-everything registers trigger-elicitation-request only when its
    // client (the hub) declared elicitation.
    relayed(Client::TsV1, &["--prefix", "everything__", "elicitation", "trigger-elicitation-request"], "- Name: mcpx-elicited-answer", "the answer did not reach server-everything");
}

// covers: elicitation-client-declare-capability-at-initialize
#[test]
fn elicitation_py_server_py_1_12_4() {
    relayed(Client::Py("1.12.4"), &["--prefix", "py__", "elicitation", "ask_user"], "user answered: mcpx-elicited-answer", "answer not round-tripped");
}

// covers: tools-call-input-required-may
#[test]
fn elicitation_modern_client_py_2_3_0() {
    // A 2026-07-28 client gets the upstream's elicitation as an input-required
    // result; the SDK answers it and retries; the answer reaches the upstream.
    relayed(Client::Py2Mode("2026-07-28"), &["--prefix", "py__", "elicitation", "ask_user"], "user answered: mcpx-elicited-answer", "answer not round-tripped");
}

// covers: sampling-client-declare-capability-at-initialize
#[test]
fn sampling_example_server_ts_v1() {
    Client::TsV1
        .run(
            &[
                "--prefix",
                "demo__",
                "sampling",
                "ask_model",
                r#"{"prompt":"hi"}"#,
            ],
            &three_upstreams().serve(),
        )
        .assert_ok();
}

// covers: sampling-client-declare-capability-at-initialize
#[test]
fn sampling_everything_py_1_30_0() {
    relayed(Client::Py("1.30.0"), &["--prefix", "everything__", "sampling", "trigger-sampling-request", r#"{"prompt":"hi"}"#], "mcpx-test-model", "the sampling result did not reach server-everything");
}

// covers: sampling-client-declare-capability-at-initialize
#[test]
fn sampling_py_server_py_1_9_4() {
    relayed(Client::Py("1.9.4"), &["--prefix", "py__", "sampling", "ask_model"], "model said: mcpx-sampled-answer", "answer not round-tripped");
}

// ---- progress and cancellation -------------------------------------------------

// covers: progress-must-increase, progress-only-active-tokens
#[test]
fn progress_example_server_py_1_30_0() {
    let r = Client::Py("1.30.0").run(
        &[
            "--prefix",
            "demo__",
            "progress",
            "slow",
            r#"{"seconds":1,"steps":4}"#,
        ],
        &three_upstreams().serve(),
    );
    r.assert_ok();
    r.check(
        r.json["progress"].as_array().map_or(0, Vec::len) == 4,
        "expected the 4 progress notifications",
    );
}

// covers: progress-must-increase, progress-only-active-tokens
#[test]
fn progress_everything_ts_v1() {
    let r = Client::TsV1.run(
        &[
            "--prefix",
            "everything__",
            "progress",
            "trigger-long-running-operation",
            r#"{"duration":1,"steps":4}"#,
        ],
        &three_upstreams().serve(),
    );
    r.assert_ok();
}

// covers: progress-must-increase, progress-only-active-tokens
#[test]
fn progress_py_server_py_1_3_0() {
    // 1.3.0 sets the progress token by hand; the hub must give it back unchanged.
    let r = Client::Py("1.3.0").run(
        &[
            "--prefix",
            "py__",
            "progress",
            "slow",
            r#"{"steps":3,"delay":0.1}"#,
        ],
        &HubConfig::new()
            .upstream(example_server("demo"))
            .upstream(py_server("py"))
            .write()
            .serve(),
    );
    r.assert_ok();
    r.check(
        r.json["progress"].as_array().map_or(0, Vec::len) == 3,
        "expected the 3 progress notifications",
    );
}

// covers: cancellation-handle-races, cancellation-receiver-should-stop-free-no-response
#[test]
fn cancel_example_server_py_1_30_0() {
    Client::Py("1.30.0")
        .run(
            &["--prefix", "demo__", "cancel", "slow", r#"{"seconds":30}"#],
            &three_upstreams().serve(),
        )
        .assert_ok();
}

// covers: cancellation-handle-races, cancellation-receiver-should-stop-free-no-response
#[test]
fn cancel_py_server_ts_v1() {
    Client::TsV1
        .run(
            &[
                "--prefix",
                "py__",
                "cancel",
                "slow",
                r#"{"steps":100,"delay":0.2}"#,
            ],
            &three_upstreams().serve(),
        )
        .assert_ok();
}

// ---- list_changed and supervision ------------------------------------------------

fn toggle(client: Client) {
    let hub = HubConfig::new()
        .upstream(example_server("demo"))
        .upstream(py_server("py"))
        .write();
    let r = client.script(
        json!([
            {"op": "list_tools", "expect_tools": ["demo__toggle_tool", "py__greet"], "expect_absent": ["demo__dynamic_tool"]},
            {"op": "call", "tool": "demo__toggle_tool", "expect_text": "dynamic_tool added."},
            {"op": "wait_notification", "method": "notifications/tools/list_changed", "timeout": 10},
            {"op": "list_tools", "expect_tools": ["demo__dynamic_tool", "py__greet"]},
            {"op": "call", "tool": "demo__dynamic_tool", "expect_text": "dynamic_tool was called."},
            {"op": "call", "tool": "demo__toggle_tool", "expect_text": "dynamic_tool removed."},
            {"op": "wait_notification", "method": "notifications/tools/list_changed", "timeout": 10},
            {"op": "list_tools", "expect_tools": ["demo__toggle_tool"], "expect_absent": ["demo__dynamic_tool"]}
        ]),
        &hub.serve(),
    );
    r.assert_ok();
}

// covers: tools-list-changed-notify, subscriptions-list-changed-should-notify
#[test]
fn list_changed_after_toggle_py_1_30_0() {
    toggle(Client::Py("1.30.0"));
}

// covers: tools-list-changed-notify, subscriptions-list-changed-should-notify
#[test]
fn list_changed_after_toggle_ts_v1() {
    toggle(Client::TsV1);
}

fn crash_and_restart(client: Client) {
    let r = client.script(
        json!([
            {"op": "call", "tool": "demo__echo", "args": {"text": "before"}, "expect_text": "before"},
            // The upstream dies mid-call: the call must end (with an error), not hang.
            {"op": "call", "tool": "demo__crash", "expect": "error"},
            // The other upstreams keep serving meanwhile.
            {"op": "call", "tool": "py__greet", "args": {"name": "survivor"}, "expect_text": "Hello, survivor!"},
            {"op": "call", "tool": "everything__echo", "args": {"message": "still here"}, "expect_text": "Echo: still here"},
            // mcpx restarts the crashed upstream.
            {"op": "call", "tool": "demo__echo", "args": {"text": "after"}, "expect_text": "after", "retry_for": 20},
            {"op": "list_tools", "expect_tools": ["demo__echo", "py__greet", "everything__echo"]}
        ]),
        &three_upstreams().serve(),
    );
    r.assert_ok();
}

// covers: stdio-client-restart-crashed-server
#[test]
fn crashed_upstream_restarts_py_1_30_0() {
    crash_and_restart(Client::Py("1.30.0"));
}

// covers: stdio-client-restart-crashed-server
#[test]
fn crashed_upstream_restarts_ts_v1() {
    crash_and_restart(Client::TsV1);
}
