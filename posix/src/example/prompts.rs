//! Prompts and completion.

use super::content::{embedded_text, image_png, text};
use super::resources;
use mcpx_core::revision::{Feature, Revision};

use super::wire::{RpcError, RpcResult};
use serde_json::{json, Map, Value};

struct Arg {
    name: &'static str,
    description: &'static str,
    required: bool,
}

struct PromptSpec {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    args: &'static [Arg],
}

static PROMPTS: &[PromptSpec] = &[
    PromptSpec {
        name: "test_simple_prompt",
        title: "Simple prompt",
        description: "A simple prompt without arguments",
        args: &[],
    },
    PromptSpec {
        name: "test_prompt_with_arguments",
        title: "Prompt with arguments",
        description: "A prompt with required arguments",
        args: &[
            Arg {
                name: "arg1",
                description: "First test argument",
                required: true,
            },
            Arg {
                name: "arg2",
                description: "Second test argument",
                required: true,
            },
        ],
    },
    PromptSpec {
        name: "test_prompt_with_embedded_resource",
        title: "Prompt with embedded resource",
        description: "A prompt that includes an embedded resource",
        args: &[Arg {
            name: "resourceUri",
            description: "URI of the resource to embed",
            required: true,
        }],
    },
    PromptSpec {
        name: "test_prompt_with_image",
        title: "Prompt with image",
        description: "A prompt that includes image content",
        args: &[],
    },
    PromptSpec {
        name: "test_input_required_result_prompt",
        title: "Prompt needing input",
        description: "A prompt that asks the client for context (elicitation) before answering",
        args: &[],
    },
];

pub fn list(rev: Revision) -> Vec<Value> {
    PROMPTS
        .iter()
        // The input-required prompt asks through elicitation.
        .filter(|p| rev.supports(Feature::Elicitation) || p.name != "test_input_required_result_prompt")
        .map(|p| {
            let mut o = Map::new();
            o.insert("name".into(), p.name.into());
            if rev.supports(Feature::Title) {
                o.insert("title".into(), p.title.into());
            }
            o.insert("description".into(), p.description.into());
            if !p.args.is_empty() {
                let args: Vec<Value> = p
                    .args
                    .iter()
                    .map(|a| json!({"name": a.name, "description": a.description, "required": a.required}))
                    .collect();
                o.insert("arguments".into(), args.into());
            }
            Value::Object(o)
        })
        .collect()
}

pub fn exists(name: &str, rev: Revision) -> bool {
    list(rev).iter().any(|p| p["name"] == name)
}

fn msg(content: Value) -> Value {
    json!({"role": "user", "content": content})
}

/// `prompts/get` for the prompts that need no client input.
pub fn get(name: &str, args: &Value) -> RpcResult {
    let spec = PROMPTS
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| RpcError::invalid_params(format!("unknown prompt: {name}")))?;
    let mut vals = Map::new();
    for a in spec.args {
        match args.get(a.name) {
            Some(Value::String(s)) => {
                vals.insert(a.name.to_string(), s.clone().into());
            }
            Some(_) => {
                return Err(RpcError::invalid_params(format!(
                    "prompt argument \"{}\" must be a string",
                    a.name
                )))
            }
            None if a.required => {
                return Err(RpcError::invalid_params(format!(
                    "missing required prompt argument \"{}\"",
                    a.name
                )))
            }
            None => {}
        }
    }
    let s = |k: &str| {
        vals.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let messages = match name {
        "test_simple_prompt" => vec![msg(text("This is a simple prompt for testing."))],
        "test_prompt_with_arguments" => vec![msg(text(format!(
            "Prompt with arguments: arg1='{}', arg2='{}'",
            s("arg1"),
            s("arg2")
        )))],
        "test_prompt_with_embedded_resource" => vec![
            msg(embedded_text(
                &s("resourceUri"),
                "text/plain",
                "Embedded resource content for testing.",
            )),
            msg(text("Please process the embedded resource above.")),
        ],
        "test_prompt_with_image" => vec![
            msg(image_png()),
            msg(text("Please analyze the image above.")),
        ],
        _ => {
            return Err(RpcError::invalid_params(format!(
                "prompt {name} needs client input"
            )))
        }
    };
    Ok(json!({"description": spec.description, "messages": messages}))
}

/// `completion/complete`: prompt arguments and resource-template variables.
pub fn complete(params: &Value) -> RpcResult {
    let r = params
        .get("ref")
        .ok_or_else(|| RpcError::invalid_params("missing \"ref\""))?;
    let arg = params
        .get("argument")
        .ok_or_else(|| RpcError::invalid_params("missing \"argument\""))?;
    let arg_name = arg
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("\"argument.name\" must be a string"))?;
    let value = arg
        .get("value")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("\"argument.value\" must be a string"))?;
    let values: Vec<String> = match r.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = r.get("name").and_then(Value::as_str).unwrap_or("");
            let spec = PROMPTS
                .iter()
                .find(|p| p.name == name)
                .ok_or_else(|| RpcError::invalid_params(format!("unknown prompt: {name}")))?;
            if !spec.args.iter().any(|a| a.name == arg_name) {
                return Err(RpcError::invalid_params(format!(
                    "prompt {name} has no argument \"{arg_name}\""
                )));
            }
            let candidates: &[&str] = match arg_name {
                "arg1" | "arg2" => &["paris", "park", "party", "test", "testValue1", "testValue2"],
                "resourceUri" => &[
                    resources::STATIC_TEXT,
                    resources::STATIC_BINARY,
                    resources::WATCHED,
                ],
                _ => &[],
            };
            candidates
                .iter()
                .filter(|c| c.starts_with(value))
                .map(|c| c.to_string())
                .collect()
        }
        Some("ref/resource") => {
            let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
            if uri == resources::TEMPLATE {
                resources::complete_template(uri, arg_name, value).unwrap_or_default()
            } else if resources::exists(uri) {
                Vec::new()
            } else {
                return Err(RpcError::invalid_params(format!(
                    "unknown resource or template: {uri}"
                )));
            }
        }
        _ => {
            return Err(RpcError::invalid_params(
                "\"ref.type\" must be ref/prompt or ref/resource",
            ))
        }
    };
    let total = values.len();
    Ok(json!({"completion": {"values": values, "total": total, "hasMore": false}}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts() {
        let r = get(
            "test_prompt_with_arguments",
            &json!({"arg1": "testValue1", "arg2": "testValue2"}),
        )
        .unwrap();
        let s = r.to_string();
        assert!(s.contains("testValue1") && s.contains("testValue2"));
        assert!(get("test_prompt_with_arguments", &json!({"arg1": "x"})).is_err());
        let r = get(
            "test_prompt_with_embedded_resource",
            &json!({"resourceUri": "test://example-resource"}),
        )
        .unwrap();
        assert_eq!(r["messages"][0]["content"]["type"], "resource");
        assert_eq!(
            r["messages"][0]["content"]["resource"]["uri"],
            "test://example-resource"
        );
        let r = get("test_prompt_with_image", &json!({})).unwrap();
        assert_eq!(r["messages"][0]["content"]["type"], "image");
        assert!(get("test_simple_prompt", &json!({})).is_ok());
        assert!(list(Revision::V2025_11_25)
            .iter()
            .all(|p| p["description"].is_string()));
        assert!(!exists("test_input_required_result_prompt", Revision::V2025_03_26));
    }

    #[test]
    fn completion() {
        let r = complete(
            &json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
            "argument": {"name": "arg1", "value": "test"}}),
        )
        .unwrap();
        assert_eq!(
            r["completion"]["values"],
            json!(["test", "testValue1", "testValue2"])
        );
        let r = complete(
            &json!({"ref": {"type": "ref/resource", "uri": "test://template/{id}/data"},
            "argument": {"name": "id", "value": "4"}}),
        )
        .unwrap();
        assert_eq!(r["completion"]["values"], json!(["42"]));
        assert!(complete(&json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "a", "value": ""}})).is_err());
    }
}
