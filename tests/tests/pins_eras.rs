//! Pinning of tool definitions for a client of each era: the Python SDK
//! 1.30 (2025-11-25, `initialize`) and the Python SDK 2.3 in 2026-07-28
//! mode (per-request `_meta`) over stdio, the TypeScript SDK v2 in
//! 2026-07-28 mode over Streamable HTTP, list the tools of
//! `py_pin_server.py` through `mcpx serve`; with `"pin": "hide"` a rug
//! pull (a description gaining hidden characters and an `<IMPORTANT>`
//! block), a tool that appears later and a rename are held back from the
//! list and unknown to calls, whatever the era. (Over HTTP, `/status`,
//! `mcpx pin accept` and lock files: `pins`.)

use mcpx_tests::*;
use serde_json::{json, Value};

fn pin_server() -> Upstream {
    let script = driver("py_pin_server.py");
    Upstream { name: "pin".into(), cmd: Cmd::new(python("1.30.0"), &[script.to_str().unwrap()]) }
}

fn list(expect: &[&str], absent: &[&str]) -> Value {
    json!({"op": "list_tools", "expect_tools": expect, "expect_absent": absent, "retry_for": 15})
}

fn call(tool: &str, args: Value, expect: &str, text: &str) -> Value {
    json!({"op": "call", "tool": tool, "args": args, "expect": expect, "expect_text": text})
}

/// `client` over stdio (or Streamable HTTP): the first listing is
/// trusted, then each change is held back. (Lists carry no caching hint here: a 2026-07-28 client keeps
/// a list for its `ttlMs` and hears of changes only on a listen stream,
/// which the driver does not open; a call is refused either way.)
fn changes_are_held_back(client: Client, http: bool) {
    let hub = HubConfig::new().upstream(pin_server()).set("policy", json!({"pin": "hide"})).set("cacheTtlMs", json!(0)).write();
    let steps = json!([
        list(&["pin__add", "pin__sub", "pin__mutate"], &[]),
        call("pin__add", json!({"a": 1, "b": 2}), "ok", "3"),
        call("pin__mutate", json!({"what": "describe"}), "ok", "mutated describe"),
        list(&["pin__sub"], &["pin__add"]),
        call("pin__add", json!({"a": 1, "b": 2}), "error", "Unknown tool: pin__add"),
        call("pin__mutate", json!({"what": "new"}), "ok", "mutated new"),
        call("pin__mutate", json!({"what": "rename"}), "ok", "mutated rename"),
        list(&["pin__mutate"], &["pin__add", "pin__extra", "pin__sub", "pin__subtract"]),
        call("pin__subtract", json!({"a": 3, "b": 1}), "error", "Unknown tool: pin__subtract"),
    ]);
    let steps = steps.to_string();
    let report = if http { client.run_url(&["script", &steps], &hub.serve_http().url) } else { client.run(&["script", &steps], &hub.serve()) };
    report.assert_ok();
}

#[test]
fn py_1_30_0_on_stdio_sees_changes_held_back() {
    changes_are_held_back(Client::Py("1.30.0"), false);
}

#[test]
fn py_2_3_0_in_2026_07_28_on_stdio_sees_changes_held_back() {
    changes_are_held_back(Client::Py2Mode("2026-07-28"), false);
}

#[test]
fn ts_v2_in_2026_07_28_over_http_sees_changes_held_back() {
    changes_are_held_back(Client::TsV2("2026-07-28"), true);
}
