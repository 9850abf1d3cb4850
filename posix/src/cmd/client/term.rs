//! The terminal: questions (elicitation, required values) and the progress bar.
//!
//! Questions go to stderr and answers come from stdin, so stdout carries
//! only the command's output.

use mcpx_core::error::ErrorCode;
use std::io::{IsTerminal as _, Write as _};

use serde_json::{json, Map, Value};

/// Wrong answers to one question before giving up.
const MAX_TRIES: usize = 3;

pub fn stdin_is_terminal() -> bool {
    std::io::stdin().is_terminal()
}

pub fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// Shows `prompt` on stderr and reads one line from stdin (off the event
/// loop); `None` at end of input.
pub async fn ask(prompt: String) -> Option<String> {
    smol::unblock(move || {
        eprint!("{prompt}");
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
        }
    })
    .await
}

/// One field of an elicitation form (a property of `requestedSchema`).
#[derive(Clone, Debug, PartialEq)]
struct Field {
    name: String,
    label: String,
    kind: Kind,
    required: bool,
    default: Option<Value>,
}

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Text,
    Number { integer: bool },
    Bool,
    /// One of these values (`enum`, or `oneOf` of `const`s).
    Choice(Vec<String>),
    /// Several of these (an array of an enum).
    Choices(Vec<String>),
}

/// Values of `enum`, or of `oneOf`/`anyOf` entries with `const`.
fn choices(s: &Value) -> Option<Vec<String>> {
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        return Some(e.iter().filter_map(Value::as_str).map(str::to_string).collect());
    }
    let alts = s.get("oneOf").or_else(|| s.get("anyOf"))?.as_array()?;
    Some(alts.iter().filter_map(|a| a.get("const")?.as_str().map(str::to_string)).collect())
}

fn fields(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    props
        .iter()
        .map(|(name, p)| {
            let kind = match p.get("type").and_then(Value::as_str) {
                Some("number") => Kind::Number { integer: false },
                Some("integer") => Kind::Number { integer: true },
                Some("boolean") => Kind::Bool,
                Some("array") => Kind::Choices(p.get("items").and_then(choices).unwrap_or_default()),
                _ => choices(p).map_or(Kind::Text, Kind::Choice),
            };
            let title = p.get("title").and_then(Value::as_str).unwrap_or(name);
            let label = match p.get("description").and_then(Value::as_str) {
                Some(d) => format!("{title} ({d})"),
                None => title.to_string(),
            };
            Field { name: name.clone(), label, kind, required: required.contains(&name.as_str()), default: p.get("default").cloned() }
        })
        .collect()
}

impl Field {
    fn prompt(&self) -> String {
        let mut p = format!("  {}", self.label);
        match &self.kind {
            Kind::Choice(c) => p.push_str(&format!(" [{}]", c.join("/"))),
            Kind::Choices(c) => p.push_str(&format!(" [any of {}, comma-separated]", c.join(", "))),
            Kind::Bool => p.push_str(" [y/n]"),
            Kind::Text | Kind::Number { .. } => {}
        }
        if let Some(d) = &self.default {
            p.push_str(&format!(" (default {d})"));
        }
        if self.required {
            p.push_str(" *");
        }
        p.push_str(": ");
        p
    }

    /// The value of an answer: `Ok(None)` to leave the field out.
    fn parse(&self, answer: &str) -> Result<Option<Value>, String> {
        let a = answer.trim();
        if a.is_empty() {
            return match (&self.default, self.required) {
                (Some(d), _) => Ok(Some(d.clone())),
                (None, true) => Err("an answer is required".into()),
                (None, false) => Ok(None),
            };
        }
        let v = match &self.kind {
            Kind::Text => json!(a),
            Kind::Number { integer: true } => json!(a.parse::<i64>().map_err(|_| format!("{a:?} is not a whole number"))?),
            Kind::Number { integer: false } => json!(a.parse::<f64>().map_err(|_| format!("{a:?} is not a number"))?),
            Kind::Bool => match a.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => json!(true),
                "n" | "no" | "false" => json!(false),
                _ => return Err(format!("{a:?}: answer y or n")),
            },
            Kind::Choice(c) => {
                if !c.iter().any(|x| x == a) {
                    return Err(format!("{a:?} is not one of {}", c.join(", ")));
                }
                json!(a)
            }
            Kind::Choices(c) => {
                let picked: Vec<&str> = a.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
                if let Some(bad) = picked.iter().find(|p| !c.is_empty() && !c.iter().any(|x| x == *p)) {
                    return Err(format!("{bad:?} is not one of {}", c.join(", ")));
                }
                json!(picked)
            }
        };
        Ok(Some(v))
    }
}

/// Rounds of answering and editing one form before giving up.
const MAX_ROUNDS: usize = 5;

/// Asks the user an elicitation's form on the terminal: the fields, then
/// send, edit, decline or cancel. The result to send back; an error for a
/// mode other than form (the only one declared).
pub async fn elicit(params: &Value) -> Result<Value, (ErrorCode, String)> {
    // elicitation-client-missing-mode-is-form, elicitation-client-32602-on-undeclared-mode
    if let Some(mode) = params.get("mode").and_then(Value::as_str).filter(|m| *m != "form") {
        return Err((ErrorCode::InvalidParams, format!("elicitation mode {mode:?} was not declared by this client (form only)")));
    }
    let message = params.get("message").and_then(Value::as_str).unwrap_or("(no message)");
    let fields = fields(params.get("requestedSchema").unwrap_or(&Value::Null));
    eprintln!("\nA server asks (through the hub): {message}\n  (* = required; end of input, Ctrl-D, cancels)");
    let mut content = Map::new();
    for _ in 0..MAX_ROUNDS {
        for f in &fields {
            match ask_field(f, content.get(&f.name)).await {
                Answer::Value(Some(v)) => {
                    content.insert(f.name.clone(), v);
                }
                Answer::Value(None) => {
                    content.remove(&f.name);
                }
                Answer::Cancel => return Ok(json!({"action": "cancel"})),
            }
        }
        // elicitation-client-form-review-modify-responses, elicitation-client-decline-cancel-options
        eprintln!("  answer: {}", Value::Object(content.clone()));
        let Some(choice) = ask("  [s]end, [e]dit, [d]ecline or [c]ancel? [s]: ".into()).await else {
            return Ok(json!({"action": "cancel"}));
        };
        match choice.trim().to_ascii_lowercase().as_str() {
            "" | "s" | "send" => return Ok(json!({"action": "accept", "content": content})),
            "d" | "decline" => return Ok(json!({"action": "decline"})),
            "c" | "cancel" => return Ok(json!({"action": "cancel"})),
            _ => {}
        }
    }
    Ok(json!({"action": "cancel"}))
}

enum Answer {
    Value(Option<Value>),
    Cancel,
}

/// One field, asked until the answer fits (the earlier answer, when
/// editing, is the default).
async fn ask_field(f: &Field, earlier: Option<&Value>) -> Answer {
    let mut f_now = f.clone();
    if let Some(e) = earlier {
        f_now.default = Some(e.clone());
    }
    for _ in 0..MAX_TRIES {
        let Some(line) = ask(f_now.prompt()).await else { return Answer::Cancel };
        match f_now.parse(&line) {
            Ok(v) => return Answer::Value(v),
            Err(e) => eprintln!("  {e}"),
        }
    }
    Answer::Cancel
}

/// A progress bar on stderr, redrawn in place; drawn only on a terminal.
pub struct Progress {
    shown: bool,
    on: bool,
}

impl Progress {
    pub fn new() -> Progress {
        Progress { shown: false, on: stderr_is_terminal() }
    }

    /// Draws the `params` of a `notifications/progress`.
    pub fn update(&mut self, params: &Value) {
        if !self.on {
            return;
        }
        let line = bar(params, 30);
        eprint!("\r\x1b[2K{line}");
        let _ = std::io::stderr().flush();
        self.shown = true;
    }

    /// Clears the bar before the result is printed.
    pub fn finish(&mut self) {
        if self.shown {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
            self.shown = false;
        }
    }
}

/// `[#######.......]  45% message` (a counter when there is no total).
fn bar(params: &Value, width: usize) -> String {
    let done = params.get("progress").and_then(Value::as_f64).unwrap_or(0.0);
    let msg = params.get("message").and_then(Value::as_str).unwrap_or("");
    match params.get("total").and_then(Value::as_f64).filter(|t| *t > 0.0) {
        Some(total) => {
            let frac = (done / total).clamp(0.0, 1.0);
            let filled = (frac * width as f64).round() as usize;
            format!("[{}{}] {:>3.0}% {msg}", "#".repeat(filled), ".".repeat(width - filled), frac * 100.0)
        }
        None => format!("[{done}] {msg}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // covers: elicitation-client-prepopulate-defaults
    #[test]
    fn reads_a_form_from_the_requested_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name", "description": "Your name"},
                "age": {"type": "integer"},
                "ok": {"type": "boolean", "default": true},
                "color": {"type": "string", "enum": ["red", "green"]},
                "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
            },
            "required": ["name"]
        });
        let f = fields(&schema);
        let by = |n: &str| f.iter().find(|x| x.name == n).unwrap();
        assert_eq!(by("name").label, "Name (Your name)");
        assert!(by("name").required && !by("age").required);
        assert_eq!(by("name").parse(""), Err("an answer is required".into()));
        assert_eq!(by("name").parse(" Ada "), Ok(Some(json!("Ada"))));
        assert_eq!(by("age").parse("42"), Ok(Some(json!(42))));
        assert!(by("age").parse("4.2").is_err());
        assert_eq!(by("age").parse(""), Ok(None));
        assert_eq!(by("ok").parse(""), Ok(Some(json!(true))));
        assert_eq!(by("ok").parse("n"), Ok(Some(json!(false))));
        assert_eq!(by("color").parse("blue"), Err("\"blue\" is not one of red, green".into()));
        assert_eq!(by("size").kind, Kind::Choice(vec!["s".into(), "l".into()]));
        assert_eq!(by("tags").parse("a, b"), Ok(Some(json!(["a", "b"]))));
        assert!(by("tags").parse("c").is_err());
        assert_eq!(by("color").prompt(), "  color [red/green]: ");
    }

    // covers: elicitation-client-32602-on-undeclared-mode
    #[test]
    fn refuses_the_url_mode_it_did_not_declare() {
        let e = crate::process::reactor::block_on(elicit(&json!({"mode": "url", "url": "https://x", "message": "m", "elicitationId": "1"})));
        assert_eq!(e.unwrap_err().0, ErrorCode::InvalidParams);
    }

    #[test]
    fn draws_progress() {
        assert_eq!(bar(&json!({"progress": 1, "total": 4, "message": "step"}), 8), "[##......]  25% step");
        assert_eq!(bar(&json!({"progress": 9, "total": 4}), 4), "[####] 100% ");
        assert_eq!(bar(&json!({"progress": 3}), 4), "[3] ");
    }
}
