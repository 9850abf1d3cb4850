//! The tool catalog and the tools that answer synchronously.

use super::content::{
    audio_wav, embedded_text, image_png, resource_link, text, tool_error, tool_result, tool_text,
};
use mcpx_core::revision::{Feature, Revision, Revisions};

use super::wire::{RpcError, RpcResult};
use serde_json::{json, Map, Value};

/// How a tool is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exec {
    /// Pure function of the arguments: answered inline.
    Sync,
    /// Needs time or notifications: runs as its own task (see `server.rs`).
    Async,
    /// Needs input from the client (see `flow.rs`).
    Flow,
}

pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// The revisions the tool is offered to.
    pub offered: Revisions,
    pub exec: Exec,
    schema: fn() -> Value,
    /// Tool annotations (2025-03-26+): (readOnly, destructive, idempotent, openWorld).
    hints: Option<(bool, bool, bool, bool)>,
}

fn empty() -> Value {
    json!({"type": "object", "properties": {}})
}

fn one_str(name: &'static str, desc: &'static str, required: bool) -> Value {
    let mut s =
        json!({"type": "object", "properties": {name: {"type": "string", "description": desc}}});
    if required {
        s["required"] = json!([name]);
    }
    s
}

/// Offered to every revision.
const EVERY: Revisions = Revisions::ALL;
/// Needs audio content blocks.
const AUDIO: Revisions = Feature::AudioContent.revisions();
/// Asks the client through elicitation.
const ELICITATION: Revisions = Feature::Elicitation.revisions();
/// Elicitation schemas with defaults (SEP-1034) and titled enums (SEP-1330),
/// from 2025-11-25 on.
const ELICITATION_2025_11_25: Revisions = Revisions::range(Revision::V2025_11_25, Revision::LATEST);

macro_rules! tool {
    (@ $name:expr, $title:expr, $desc:expr, $offered:expr, $exec:expr, $schema:expr, $hints:expr) => {
        ToolSpec {
            name: $name,
            title: $title,
            description: $desc,
            offered: $offered,
            exec: $exec,
            schema: $schema,
            hints: $hints,
        }
    };
    ($name:expr, $title:expr, $desc:expr, $offered:expr, $exec:expr, $schema:expr) => {
        tool!(@ $name, $title, $desc, $offered, $exec, $schema, None)
    };
    ($name:expr, $title:expr, $desc:expr, $offered:expr, $exec:expr, $schema:expr, $hints:expr) => {
        tool!(@ $name, $title, $desc, $offered, $exec, $schema, Some($hints))
    };
}

/// Every tool, in listing order. `dynamic_tool` is listed only while toggled on.
pub static TOOLS: &[ToolSpec] = &[
    tool!("echo", "Echo", "Returns its `text` (or `message`) argument unchanged.", EVERY, Exec::Sync,
        || json!({"type": "object", "properties": {
            "text": {"type": "string", "description": "Text to echo back"},
            "message": {"type": "string", "description": "Alternative name for `text`"}}}),
        (true, false, true, false)),
    tool!("add", "Add", "Adds two numbers and returns the sum (also as structured content).", EVERY, Exec::Sync,
        || json!({"type": "object", "properties": {
            "a": {"type": "number", "description": "First addend"},
            "b": {"type": "number", "description": "Second addend"}}, "required": ["a", "b"]}),
        (true, false, true, false)),
    tool!("slow", "Slow operation", "Waits `seconds` (default 2), sending `steps` progress notifications when a progressToken is given; stops on cancellation.", EVERY, Exec::Async,
        || json!({"type": "object", "properties": {
            "seconds": {"type": "number", "description": "How long to run, in seconds (max 600)"},
            "steps": {"type": "integer", "description": "Number of progress notifications (default 10)"}}}),
        (true, false, true, false)),
    tool!("ask_user", "Ask the user", "Asks the user a question through elicitation and returns the answer.", ELICITATION, Exec::Flow,
        || one_str("message", "The question to ask", false)),
    tool!("ask_model", "Ask the model", "Asks the client's model through sampling and returns its answer.", EVERY, Exec::Flow,
        || json!({"type": "object", "properties": {
            "prompt": {"type": "string", "description": "The prompt to send"},
            "maxTokens": {"type": "integer", "description": "Token limit (default 100)"}}})),
    tool!("list_roots", "List roots", "Asks the client for its roots and lists them.", EVERY, Exec::Flow, empty, (true, false, true, false)),
    tool!("fail", "Fail", "Always fails with a tool error (isError: true).", EVERY, Exec::Sync,
        || one_str("message", "The error message to return", false)),
    tool!("crash", "Crash", "Exits the server process immediately (for supervision tests).", EVERY, Exec::Sync,
        || json!({"type": "object", "properties": {"code": {"type": "integer", "description": "Exit code (default 1)"}}}),
        (false, true, false, false)),
    tool!("toggle_tool", "Toggle tool", "Adds or removes the tool `dynamic_tool` and sends notifications/tools/list_changed.", EVERY, Exec::Async, empty),
    tool!("dynamic_tool", "Dynamic tool", "Present only while toggled on by `toggle_tool`.", EVERY, Exec::Sync, empty),
    tool!("update_resource", "Update resource", "Changes test://watched-resource and notifies subscribers with notifications/resources/updated.", EVERY, Exec::Async,
        || one_str("uri", "Resource to update (default test://watched-resource)", false)),
    tool!("resource_link", "Resource link", "Returns a resource_link to test://static-text.", EVERY, Exec::Sync, empty, (true, false, true, false)),
    tool!("greet", "Greet", "Returns \"Hello, <name>!\".", EVERY, Exec::Sync, || one_str("name", "Who to greet", true), (true, false, true, false)),
    // Conformance fixtures.
    tool!("test_simple_text", "Simple text", "Tests simple text content response", EVERY, Exec::Sync, empty),
    tool!("test_image_content", "Image content", "Tests image content response", EVERY, Exec::Sync, empty),
    tool!("test_audio_content", "Audio content", "Tests audio content response", AUDIO, Exec::Sync, empty),
    tool!("test_embedded_resource", "Embedded resource", "Tests embedded resource content response", EVERY, Exec::Sync, empty),
    tool!("test_multiple_content_types", "Multiple content types", "Tests response with multiple content types (text, image, resource)", EVERY, Exec::Sync, empty),
    tool!("test_tool_with_logging", "Tool with logging", "Tests tool that emits log messages during execution", EVERY, Exec::Async, empty),
    tool!("test_tool_with_progress", "Tool with progress", "Tests tool that reports progress notifications", EVERY, Exec::Async, empty),
    tool!("test_error_handling", "Error handling", "Tests error response handling", EVERY, Exec::Sync, empty),
    tool!("test_sampling", "Sampling", "Tests server-initiated sampling (LLM completion request)", EVERY, Exec::Flow,
        || one_str("prompt", "The prompt to send to the LLM", true)),
    tool!("test_elicitation", "Elicitation", "Tests server-initiated elicitation (user input request)", ELICITATION, Exec::Flow,
        || one_str("message", "The message to show the user", true)),
    tool!("test_elicitation_sep1034_defaults", "Elicitation defaults", "Tests elicitation with default values per SEP-1034", ELICITATION_2025_11_25, Exec::Flow, empty),
    tool!("test_elicitation_sep1330_enums", "Elicitation enums", "Tests elicitation with enum schema improvements per SEP-1330", ELICITATION_2025_11_25, Exec::Flow, empty),
    tool!("test_reconnection", "Reconnection", "Tests SSE stream reconnection: answers after a short delay", EVERY, Exec::Async, empty),
    tool!("json_schema_2020_12_tool", "JSON Schema 2020-12", "Tool with a JSON Schema 2020-12 input schema", EVERY, Exec::Sync, schema_2020_12),
    tool!("test_missing_capability", "Missing capability", "Needs the client's sampling capability", EVERY, Exec::Flow, empty),
    tool!("test_streaming_elicitation", "Streaming elicitation", "Asks for a confirmation through elicitation", ELICITATION, Exec::Flow, empty),
    tool!("test_logging_tool", "Logging tool", "Emits one log message (only when the client asked for logs)", EVERY, Exec::Async, empty),
    tool!("test_trigger_tool_change", "Trigger tool change", "Sends notifications/tools/list_changed", EVERY, Exec::Async, empty),
    tool!("test_trigger_prompt_change", "Trigger prompt change", "Sends notifications/prompts/list_changed", EVERY, Exec::Async, empty),
    tool!("test_input_required_result_elicitation", "Input required: elicitation", "Asks for the user's name (elicitation) before answering", ELICITATION, Exec::Flow, empty),
    tool!("test_input_required_result_sampling", "Input required: sampling", "Asks the client's model a question before answering", EVERY, Exec::Flow, empty),
    tool!("test_input_required_result_list_roots", "Input required: roots", "Asks for the client's roots before answering", EVERY, Exec::Flow, empty),
    tool!("test_input_required_result_request_state", "Input required: request state", "Asks for a confirmation and carries requestState", ELICITATION, Exec::Flow, empty),
    tool!("test_input_required_result_multiple_inputs", "Input required: multiple inputs", "Asks for elicitation, sampling and roots at once", ELICITATION, Exec::Flow, empty),
    tool!("test_input_required_result_multi_round", "Input required: multiple rounds", "Asks two questions, one per round", ELICITATION, Exec::Flow, empty),
    tool!("test_input_required_result_tampered_state", "Input required: tampered state", "Refuses a modified requestState", ELICITATION, Exec::Flow, empty),
    tool!("test_input_required_result_capabilities", "Input required: capabilities", "Asks only for inputs the client declared capabilities for", EVERY, Exec::Flow, empty),
    // Tasks extension fixtures (task-creating when the request declares the extension).
    tool!("slow_compute", "Slow compute", "Works for `seconds` seconds; runs as a task when the client declares the tasks extension", EVERY, Exec::Async,
        || json!({"type": "object", "properties": {
            "seconds": {"type": "number", "description": "How long to work (default 1, max 600)"},
            "label": {"type": "string", "description": "A label echoed in the result"}}})),
    tool!("failing_job", "Failing job", "A task that ends with a tool error (needs the tasks extension on modern requests)", EVERY, Exec::Async, empty),
    tool!("protocol_error_job", "Protocol error job", "A task that fails with a protocol error (needs the tasks extension on modern requests)", EVERY, Exec::Async, empty),
    tool!("confirm_delete", "Confirm delete", "Asks to confirm deleting `filename` (a task waiting for input with the tasks extension)", ELICITATION, Exec::Flow,
        || one_str("filename", "The file to delete (nothing is deleted)", true)),
    tool!("multi_input", "Multiple inputs", "Asks two questions at once (a task waiting for input with the tasks extension)", ELICITATION, Exec::Flow, empty),
    tool!("test_tool_with_task", "Tool with task", "Asks for a name, then finishes as a task when the client declares the tasks extension", ELICITATION, Exec::Flow, empty),
];

fn schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

/// How a tool takes part in tasks (2025-11-25 `execution.taskSupport`; the
/// same split decides the 2026-07-28 extension's behaviour).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskSupport {
    /// Never a task (the default; absent from the listing).
    Forbidden,
    /// A task when the client asks for one, else a plain call.
    Optional,
    /// Only as a task: refused without one.
    Required,
}

impl TaskSupport {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// The task support of tool `name` (the tasks fixtures of the conformance suite).
pub fn task_support(name: &str) -> TaskSupport {
    match name {
        "slow_compute" => TaskSupport::Optional,
        "failing_job" | "protocol_error_job" | "confirm_delete" | "multi_input"
        | "test_tool_with_task" => TaskSupport::Required,
        _ => TaskSupport::Forbidden,
    }
}

/// The tool `name` as offered to a client speaking `rev`, if it is offered.
pub fn find(name: &str, rev: Revision, toggled: bool) -> Option<&'static ToolSpec> {
    TOOLS
        .iter()
        .find(|t| t.name == name)
        .filter(|t| t.offered.contains(rev) && (t.name != "dynamic_tool" || toggled))
}

fn describe(t: &ToolSpec, rev: Revision) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), t.name.into());
    if rev.supports(Feature::Title) {
        o.insert("title".into(), t.title.into());
    }
    o.insert("description".into(), t.description.into());
    o.insert("inputSchema".into(), (t.schema)());
    if rev.supports(Feature::StructuredContent) && t.name == "add" {
        o.insert(
            "outputSchema".into(),
            json!({"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}),
        );
    }
    let tasks = task_support(t.name);
    if rev.supports(Feature::CoreTasks) && tasks != TaskSupport::Forbidden {
        o.insert("execution".into(), json!({"taskSupport": tasks.as_str()}));
    }
    if rev.supports(Feature::ToolAnnotations) {
        if let Some((ro, de, id, ow)) = t.hints {
            let mut a = json!({"readOnlyHint": ro, "destructiveHint": de, "idempotentHint": id, "openWorldHint": ow});
            if rev.supports(Feature::Title) {
                a["title"] = t.title.into();
            }
            o.insert("annotations".into(), a);
        }
    }
    Value::Object(o)
}

/// All tools offered to `rev`, in order.
pub fn list(rev: Revision, toggled: bool) -> Vec<Value> {
    TOOLS
        .iter()
        .filter(|t| t.offered.contains(rev) && (t.name != "dynamic_tool" || toggled))
        .map(|t| describe(t, rev))
        .collect()
}

fn num(args: &Value, k: &str) -> Result<f64, String> {
    match args.get(k) {
        Some(Value::Number(n)) => n
            .as_f64()
            .ok_or_else(|| format!("\"{k}\" is not a finite number")),
        Some(_) => Err(format!("\"{k}\" must be a number")),
        None => Err(format!("missing required argument \"{k}\"")),
    }
}

/// An optional number argument: `Ok(None)` when absent, an error text when
/// present but not a number.
pub fn opt_num(args: &Value, k: &str) -> Result<Option<f64>, String> {
    match args.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| format!("\"{k}\" must be a number")),
    }
}

/// Run a synchronous tool. `crash` never returns.
pub fn call_sync(name: &str, args: &Value, rev: Revision) -> RpcResult {
    Ok(match name {
        "echo" => match args.get("text").or_else(|| args.get("message")) {
            Some(Value::String(s)) => tool_text(s.as_str()),
            Some(_) => tool_error("\"text\" must be a string"),
            None => tool_error("missing argument \"text\" (or \"message\")"),
        },
        "add" => match (num(args, "a"), num(args, "b")) {
            (Ok(a), Ok(b)) if !(a + b).is_finite() => {
                tool_error(format!("{a} + {b} overflows a double; use smaller numbers"))
            }
            (Ok(a), Ok(b)) => {
                let sum = a + b;
                // Keep integers integral in the output ("5", not "5.0").
                let sum_v = if sum.fract() == 0.0 && sum.abs() < 9e15 {
                    json!(sum as i64)
                } else {
                    json!(sum)
                };
                let mut r = tool_text(sum_v.to_string());
                if rev.supports(Feature::StructuredContent) {
                    r["structuredContent"] = json!({"sum": sum_v});
                }
                r
            }
            (Err(e), _) | (_, Err(e)) => tool_error(e),
        },
        "fail" => tool_error(
            args.get("message")
                .and_then(Value::as_str)
                .unwrap_or("This tool always fails."),
        ),
        "crash" => {
            let code = args.get("code").and_then(Value::as_i64).unwrap_or(1) as i32;
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "mcpx example-server: crash tool called, exiting with status {code}"
            );
            std::process::exit(code)
        }
        "dynamic_tool" => tool_text("dynamic_tool was called."),
        "resource_link" => tool_result(vec![
            text("Here is a link to a resource:"),
            resource_link(
                rev,
                "test://static-text",
                "static-text",
                "text/plain",
                "A static text resource",
            ),
        ]),
        "greet" => match args.get("name").and_then(Value::as_str) {
            Some(n) => tool_text(format!("Hello, {n}!")),
            None => tool_error("missing argument \"name\""),
        },
        "test_simple_text" => tool_text("This is a simple text response for testing."),
        "test_image_content" => tool_result(vec![image_png()]),
        "test_audio_content" => tool_result(vec![audio_wav(rev)]),
        "test_embedded_resource" => tool_result(vec![embedded_text(
            "test://embedded-resource",
            "text/plain",
            "This is an embedded resource content.",
        )]),
        "test_multiple_content_types" => tool_result(vec![
            text("Multiple content types test:"),
            image_png(),
            embedded_text(
                "test://mixed-content-resource",
                "application/json",
                r#"{"test":"data","value":123}"#,
            ),
        ]),
        "test_error_handling" => tool_error("This tool intentionally returns an error for testing"),
        "json_schema_2020_12_tool" => tool_text(format!("Received: {args}")),
        _ => return Err(RpcError::invalid_params(format!("unknown tool: {name}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for t in TOOLS {
            assert!(seen.insert(t.name), "duplicate {}", t.name);
            assert!(t.name.len() <= 64);
            assert!(t
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-'));
            assert!(!t.description.is_empty());
            assert_eq!((t.schema)()["type"], "object");
        }
    }

    #[test]
    fn listing_depends_on_revision() {
        let names = |rev| {
            list(rev, false)
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        let old = names(Revision::V2024_11_05);
        assert!(!old.contains(&"test_audio_content".to_string()));
        assert!(!old.contains(&"test_elicitation".to_string()));
        assert!(!old.contains(&"dynamic_tool".to_string()));
        let new = names(Revision::V2025_11_25);
        assert!(new.contains(&"test_elicitation_sep1330_enums".to_string()));
        assert!(list(Revision::V2024_11_05, false)
            .iter()
            .all(|t| t.get("title").is_none() && t.get("annotations").is_none()));
        let add = list(Revision::V2025_06_18, false)
            .into_iter()
            .find(|t| t["name"] == "add")
            .unwrap();
        assert!(add.get("outputSchema").is_some());
        assert!(list(Revision::V2024_11_05, true)
            .iter()
            .any(|t| t["name"] == "dynamic_tool"));
    }

    #[test]
    fn sync_tools() {
        let r = call_sync("echo", &json!({"text": "hi"}), Revision::V2025_11_25).unwrap();
        assert_eq!(r, json!({"content": [{"type": "text", "text": "hi"}]}));
        let r = call_sync("echo", &json!({"message": "yo"}), Revision::V2025_11_25).unwrap();
        assert_eq!(r["content"][0]["text"], "yo");
        assert_eq!(
            call_sync("echo", &json!({}), Revision::V2025_11_25).unwrap()["isError"],
            true
        );
        let r = call_sync("add", &json!({"a": 2, "b": 3}), Revision::V2025_11_25).unwrap();
        assert_eq!(r["content"][0]["text"], "5");
        assert_eq!(r["structuredContent"], json!({"sum": 5}));
        let r = call_sync("add", &json!({"a": 2, "b": 3}), Revision::V2025_03_26).unwrap();
        assert!(r.get("structuredContent").is_none());
        assert_eq!(
            call_sync("add", &json!({"a": "x", "b": 3}), Revision::V2025_11_25).unwrap()["isError"],
            true
        );
        let r = call_sync("test_error_handling", &json!({}), Revision::V2025_11_25).unwrap();
        assert_eq!(r["isError"], true);
        let r = call_sync("test_audio_content", &json!({}), Revision::V2025_11_25).unwrap();
        assert_eq!(r["content"][0]["mimeType"], "audio/wav");
        let r = call_sync("test_multiple_content_types", &json!({}), Revision::V2025_11_25).unwrap();
        let types: Vec<_> = r["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].clone())
            .collect();
        assert_eq!(
            types,
            vec![json!("text"), json!("image"), json!("resource")]
        );
        assert!(call_sync("nope", &json!({}), Revision::V2025_11_25).is_err());
        let r = call_sync("add", &json!({"a": 1e308, "b": 1e308}), Revision::V2025_11_25).unwrap();
        assert_eq!(r["isError"], true);
    }
}
