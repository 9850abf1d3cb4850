//! The built-in demo catalog (`mcpx example-server --demo`): what `mcpx
//! serve` runs when no config file exists. A few harmless tools (`echo`,
//! `add`, `current_time`), one short text resource and one prompt, so a
//! client pointed at the demo by mistake does not hand its model the
//! conformance fixtures, `crash` or `toggle_tool`.
//!
//! The server itself (eras, sessions, shaping) is the example server's; only
//! the catalog methods are answered here. `echo` and `add` are the example
//! server's own tools.

use std::time::SystemTime;

use serde_json::{json, Value};

use super::content::{text, tool_text};
use super::resources::not_found;
use super::tools;
use mcpx_core::revision::{Feature, Revision};

use super::wire::{require_str, RpcError, RpcResult};

pub const INSTRUCTIONS: &str = "The demo server built into mcpx: echo, add and current_time tools, a readme resource \
(demo://readme) and a greeting prompt. Write a config file to serve your own servers (see `mcpx --help`).";

/// The example server's tools the demo offers.
const SHARED_TOOLS: &[&str] = &["echo", "add"];

const README_URI: &str = "demo://readme";
const README: &str = "This is mcpx's built-in demo. mcpx runs it when it finds no config file \
(mcpx.json in the working directory, or ~/.config/mcpx/config.json). List your MCP servers there, \
in the same format as Claude Desktop's mcpServers, and mcpx serves all of them as one.";

fn current_time_tool(rev: Revision) -> Value {
    let mut t = json!({
        "name": "current_time",
        "description": "Returns the current date and time in UTC (RFC 3339).",
        "inputSchema": {"type": "object", "properties": {}},
    });
    if rev.supports(Feature::Title) {
        t["title"] = "Current time".into();
    }
    if rev.supports(Feature::ToolAnnotations) {
        t["annotations"] =
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false});
    }
    t
}

fn greeting_prompt() -> Value {
    json!({
        "name": "greeting",
        "description": "A friendly greeting for `name`.",
        "arguments": [{"name": "name", "description": "Who to greet", "required": true}],
    })
}

/// Answers a catalog method (tools, resources, prompts, completion) of the demo.
pub fn handle(method: &str, params: &Value, rev: Revision) -> RpcResult {
    match method {
        "tools/list" => {
            let mut list: Vec<Value> =
                tools::list(rev, false).into_iter().filter(|t| SHARED_TOOLS.iter().any(|n| t["name"] == *n)).collect();
            list.push(current_time_tool(rev));
            Ok(json!({ "tools": list }))
        }
        "tools/call" => {
            let name = require_str(params, "name")?;
            let none = json!({});
            let args = params.get("arguments").unwrap_or(&none);
            match name {
                "current_time" => Ok(tool_text(crate::log::line::timestamp(SystemTime::now()))),
                n if SHARED_TOOLS.contains(&n) => tools::call_sync(n, args, rev),
                n => Err(RpcError::invalid_params(format!("unknown tool: {n}"))),
            }
        }
        "resources/list" => Ok(json!({"resources": [
            {"uri": README_URI, "name": "readme", "description": "What this demo is", "mimeType": "text/plain"}
        ]})),
        "resources/templates/list" => Ok(json!({ "resourceTemplates": [] })),
        "resources/read" => match require_str(params, "uri")? {
            README_URI => Ok(json!({"contents": [{"uri": README_URI, "mimeType": "text/plain", "text": README}]})),
            uri => Err(not_found(uri, rev)),
        },
        "prompts/list" => Ok(json!({ "prompts": [greeting_prompt()] })),
        "prompts/get" => match require_str(params, "name")? {
            "greeting" => match params.pointer("/arguments/name") {
                Some(Value::String(who)) => Ok(json!({
                    "description": "A friendly greeting",
                    "messages": [{"role": "user", "content": text(format!("Please greet {who} warmly, in one sentence."))}],
                })),
                _ => Err(RpcError::invalid_params("missing required prompt argument \"name\" (a string)")),
            },
            n => Err(RpcError::invalid_params(format!("unknown prompt: {n}"))),
        },
        "completion/complete" => Ok(json!({"completion": {"values": [], "hasMore": false}})),
        _ => Err(RpcError::method_not_found(method)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_harmless_tools_a_resource_and_a_prompt() {
        let t = handle("tools/list", &json!({}), Revision::V2025_06_18).unwrap();
        let names: Vec<&str> = t["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["echo", "add", "current_time"]);
        let r = handle("tools/call", &json!({"name": "echo", "arguments": {"text": "hi"}}), Revision::V2025_06_18).unwrap();
        assert_eq!(r["content"][0]["text"], "hi");
        let r = handle("tools/call", &json!({"name": "add", "arguments": {"a": 2, "b": 3}}), Revision::V2025_06_18).unwrap();
        assert_eq!(r["content"][0]["text"], "5");
        let r = handle("tools/call", &json!({"name": "current_time"}), Revision::V2024_11_05).unwrap();
        assert!(r["content"][0]["text"].as_str().unwrap().ends_with('Z'), "{r}");
        let r = handle("tools/call", &json!({"name": "add", "arguments": {"a": "x"}}), Revision::V2025_06_18).unwrap();
        assert_eq!(r["isError"], true, "{r}");
        // The fixtures are not there.
        for n in ["crash", "toggle_tool", "test_simple_text"] {
            let e = handle("tools/call", &json!({"name": n}), Revision::V2025_06_18).unwrap_err();
            assert_eq!(e.message, format!("unknown tool: {n}"));
        }
        let r = handle("resources/read", &json!({"uri": "demo://readme"}), Revision::V2025_06_18).unwrap();
        assert!(r["contents"][0]["text"].as_str().unwrap().contains("config file"));
        assert!(handle("resources/read", &json!({"uri": "test://static-text"}), Revision::V2025_06_18).is_err());
        let p = handle("prompts/get", &json!({"name": "greeting", "arguments": {"name": "Ada"}}), Revision::V2025_06_18).unwrap();
        assert!(p["messages"][0]["content"]["text"].as_str().unwrap().contains("Ada"));
        assert!(handle("prompts/get", &json!({"name": "greeting"}), Revision::V2025_06_18).is_err());
    }
}
