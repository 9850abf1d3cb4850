//! `mcpx call NAME '{json args}'`: one tool call, its result printed.

use serde_json::{json, Value};

use super::list::print_json;
use super::session::Session;
use super::term::Progress;
use super::Failure;

/// The arguments as given: a JSON object (none: `{}`).
pub fn parse_args(args: Option<&str>) -> Result<Value, Failure> {
    let Some(text) = args else { return Ok(json!({})) };
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(Failure::Usage("the tool's arguments must be a JSON object, e.g. '{\"name\": \"value\"}'".into())),
        Err(e) => Err(Failure::Usage(format!("the tool's arguments are not JSON: {e}"))),
    }
}

pub async fn run(s: &mut Session, name: &str, args: Value, as_json: bool) -> Result<(), Failure> {
    let mut bar = Progress::new();
    let result = s.request("tools/call", json!({"name": name, "arguments": args}), &mut |p| bar.update(p)).await;
    bar.finish();
    let result = result?;
    let failed = result.get("isError").and_then(Value::as_bool) == Some(true);
    if as_json {
        print_json(&result)?;
    }
    if failed {
        let text = content_text(&result);
        let text = if text.is_empty() { "(no message)".to_string() } else { text };
        return Err(Failure::Failed(format!("tool {name} reported an error: {text}")));
    }
    if !as_json {
        print_result(&result);
    }
    if s.input_refused {
        return Err(Failure::Failed(format!(
            "tool {name}: a server asked a question that could not be put (run on a terminal to answer it)"
        )));
    }
    Ok(())
}

/// The text of each content block, one per line; other blocks as a note.
fn content_text(result: &Value) -> String {
    let blocks = result.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let lines: Vec<String> = blocks.iter().map(block_text).collect();
    lines.join("\n")
}

fn block_text(b: &Value) -> String {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    match b.get("type").and_then(Value::as_str).unwrap_or("") {
        "text" => s(b, "text"),
        kind @ ("image" | "audio") => {
            format!("[{kind}: {}, {} bytes of base64]", s(b, "mimeType"), b.get("data").and_then(Value::as_str).map_or(0, str::len))
        }
        "resource" => {
            let r = b.get("resource").unwrap_or(&Value::Null);
            match r.get("text").and_then(Value::as_str) {
                Some(t) => t.to_string(),
                None => format!("[resource: {}]", s(r, "uri")),
            }
        }
        "resource_link" => {
            let parts: Vec<String> = [s(b, "uri"), s(b, "name")].into_iter().filter(|p| !p.is_empty()).collect();
            format!("[link: {}]", parts.join(" "))
        }
        other => format!("[{other} content]"),
    }
}

fn print_result(result: &Value) {
    let text = content_text(result);
    if !text.is_empty() {
        println!("{text}");
    } else if let Some(sc) = result.get("structuredContent") {
        let _ = print_json(sc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_an_object() {
        assert_eq!(parse_args(None).ok(), Some(json!({})));
        assert_eq!(parse_args(Some(r#"{"a": 1}"#)).ok(), Some(json!({"a": 1})));
        assert!(matches!(parse_args(Some("[1]")), Err(Failure::Usage(m)) if m.contains("JSON object")));
        assert!(matches!(parse_args(Some("{nope")), Err(Failure::Usage(m)) if m.contains("not JSON")));
    }

    #[test]
    fn content_blocks_as_text() {
        let r = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "test://x", "text": "body"}},
            {"type": "resource", "resource": {"uri": "test://b", "blob": "AA=="}},
            {"type": "resource_link", "uri": "test://l", "name": "l"}
        ]});
        assert_eq!(
            content_text(&r),
            "hello\n[image: image/png, 4 bytes of base64]\nbody\n[resource: test://b]\n[link: test://l l]"
        );
    }
}
