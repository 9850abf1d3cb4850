//! Requests that need input from the client (elicitation, sampling, roots).
//!
//! Each such tool or prompt is a pure step function: given the answers gathered
//! so far, it either asks for more input (`Step::Need`) or finishes
//! (`Step::Done`). Two drivers run the same steps:
//! - legacy era: the server sends real server→client requests and waits for the
//!   answers (see `server.rs`);
//! - modern era (2026-07-28): the server answers with an `InputRequiredResult`
//!   and finishes when the client retries with `inputResponses` and the signed
//!   `requestState` (see [`modern_round`]).

use super::content::{text, tool_error, tool_result, tool_text};
use super::wire::{RpcError, RpcResult, INVALID_PARAMS, MISSING_CAPABILITY};
use mcpx_core::request_state::{self, Binding, Keys, OpenError, ReplaySet, Seeded};
use serde_json::{json, Map, Value};
use std::cell::RefCell;
use std::ops::ControlFlow::{self, Break, Continue};

/// The server→client methods a flow asks with.
const ELICIT: &str = "elicitation/create";
const SAMPLE: &str = "sampling/createMessage";
const ROOTS: &str = "roots/list";

/// One input the server needs from the client.
#[derive(Debug, Clone, PartialEq)]
pub struct InputReq {
    pub key: &'static str,
    pub method: &'static str,
    pub params: Value,
}

#[derive(Debug)]
pub enum Step {
    Need(Vec<InputReq>),
    Done(RpcResult),
}

/// Which kind of request a flow answers: shapes "done" results and errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Tool,
    Prompt,
}

pub type Gathered = Map<String, Value>;

/// Is `name` a flow of this kind?
pub fn is_flow(kind: Kind, name: &str) -> bool {
    flow_of(kind, name).is_some()
}

fn elicit(message: &str, schema: Value) -> Value {
    json!({"message": message, "requestedSchema": schema})
}

fn elicit_name(message: &str) -> Value {
    elicit(
        message,
        json!({"type": "object", "properties": {"name": {"type": "string", "description": "Your name"}}, "required": ["name"]}),
    )
}

fn sample(prompt: &str, max_tokens: u64) -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": max_tokens
    })
}

fn req(key: &'static str, method: &'static str, params: Value) -> InputReq {
    InputReq {
        key,
        method,
        params,
    }
}

/// The client's answer to an elicitation, as text for a tool result.
fn describe_elicitation(v: &Value) -> String {
    let action = v.get("action").and_then(Value::as_str).unwrap_or("?");
    match v.get("content") {
        Some(c) if action == "accept" => format!("{action} {c}"),
        _ => action.to_string(),
    }
}

fn elicited_field<'a>(v: &'a Value, field: &str) -> Option<&'a Value> {
    if v.get("action").and_then(Value::as_str) == Some("accept") {
        v.get("content").and_then(|c| c.get(field))
    } else {
        None
    }
}

/// The text of a sampling answer (`content` may be one block or, from 2025-11-25, an array).
fn sampled_text(v: &Value) -> String {
    let c = v.get("content");
    let block = match c {
        Some(Value::Array(a)) => a
            .iter()
            .find(|b| b.get("type").and_then(Value::as_str) == Some("text")),
        other => other,
    };
    match block.and_then(|b| b.get("text")).and_then(Value::as_str) {
        Some(t) => t.to_string(),
        None => format!("{}", c.cloned().unwrap_or(Value::Null)),
    }
}

fn describe_roots(v: &Value) -> String {
    match v.get("roots").and_then(Value::as_array) {
        Some(roots) if roots.is_empty() => "The client has no roots.".to_string(),
        Some(roots) => {
            let list: Vec<String> = roots
                .iter()
                .map(|r| {
                    let uri = r.get("uri").and_then(Value::as_str).unwrap_or("?");
                    match r.get("name").and_then(Value::as_str) {
                        Some(n) => format!("{uri} ({n})"),
                        None => uri.to_string(),
                    }
                })
                .collect();
            format!("Client roots: {}", list.join(", "))
        }
        None => "The client answered roots/list without a roots array.".to_string(),
    }
}

fn has_cap(caps: &Value, cap: &str) -> bool {
    caps.get(cap).is_some_and(|v| v.is_object())
}

/// Can the client answer `method`? Every elicitation here is form mode, which
/// a client declaring only `elicitation.url` (2025-11-25+) does not support.
pub fn supports(caps: &Value, method: &str) -> bool {
    let cap = capability_of(method);
    match caps.get(cap) {
        Some(Value::Object(o)) if cap == "elicitation" => o.is_empty() || o.contains_key("form"),
        Some(Value::Object(_)) => true,
        _ => false,
    }
}

/// The capability a server→client method needs.
pub fn capability_of(method: &str) -> &'static str {
    match method {
        SAMPLE => "sampling",
        ELICIT => "elicitation",
        _ => "roots",
    }
}

/// What a flow reads: the call's arguments, the answers gathered so far and
/// the client's capabilities.
struct Ask<'a> {
    args: &'a Value,
    got: &'a Gathered,
    caps: &'a Value,
}

/// A flow's progress: `Continue` with what it has so far, or `Break` with the
/// step that asks the client for what is missing.
type Asked<T> = ControlFlow<Step, T>;

impl<'a> Ask<'a> {
    fn arg(&self, key: &str) -> Option<&'a str> {
        self.args.get(key).and_then(Value::as_str)
    }

    /// The answer gathered under `key`, or a step asking for it.
    fn answer(&self, key: &'static str, method: &'static str, params: Value) -> Asked<&'a Value> {
        match self.got.get(key) {
            Some(v) => Continue(v),
            None => Break(Step::Need(vec![req(key, method, params)])),
        }
    }

    /// The answers to all of `reqs`, or a step asking at once for those
    /// still missing.
    fn answers(&self, reqs: Vec<InputReq>) -> Asked<()> {
        let missing: Vec<InputReq> = reqs.into_iter().filter(|r| !self.got.contains_key(r.key)).collect();
        if missing.is_empty() {
            Continue(())
        } else {
            Break(Step::Need(missing))
        }
    }
}

/// One flow: the result it finishes with, once it has every answer it needs.
type Flow = fn(&Ask<'_>) -> Asked<Value>;

/// Every flow, by kind and name (a name may share another's flow).
const FLOWS: &[(Kind, &str, Flow)] = &[
    (Kind::Tool, "test_sampling", sampling),
    (Kind::Tool, "ask_model", sampling),
    (Kind::Tool, "test_elicitation", user_info),
    (Kind::Tool, "ask_user", ask_user),
    (Kind::Tool, "test_elicitation_sep1034_defaults", elicitation_defaults),
    (Kind::Tool, "test_elicitation_sep1330_enums", elicitation_enums),
    (Kind::Tool, "list_roots", client_roots),
    (Kind::Tool, "test_input_required_result_list_roots", client_roots),
    (Kind::Tool, "test_missing_capability", greeting),
    (Kind::Tool, "test_streaming_elicitation", streaming_confirm),
    (Kind::Tool, "test_input_required_result_elicitation", user_name),
    (Kind::Tool, "test_tool_with_task", user_name),
    (Kind::Tool, "test_input_required_result_sampling", capital_question),
    (Kind::Tool, "test_input_required_result_request_state", state_confirm),
    (Kind::Tool, "test_input_required_result_tampered_state", state_confirm),
    (Kind::Tool, "test_input_required_result_multiple_inputs", multiple_inputs),
    (Kind::Tool, "test_input_required_result_multi_round", multi_round),
    (Kind::Tool, "test_input_required_result_capabilities", declared_capabilities),
    (Kind::Tool, "confirm_delete", confirm_delete),
    (Kind::Tool, "multi_input", multi_input),
    (Kind::Prompt, "test_input_required_result_prompt", prompt_context),
];

fn flow_of(kind: Kind, name: &str) -> Option<Flow> {
    FLOWS.iter().find(|(k, n, _)| *k == kind && *n == name).map(|(_, _, f)| *f)
}

/// The next step of flow `name`, given what has been gathered.
pub fn step(kind: Kind, name: &str, args: &Value, got: &Gathered, caps: &Value) -> Step {
    let Some(flow) = flow_of(kind, name) else {
        return Step::Done(Err(RpcError::invalid_params(format!("unknown {}: {name}", kind.noun()))));
    };
    match flow(&Ask { args, got, caps }) {
        Continue(v) => Step::Done(Ok(v)),
        Break(need) => need,
    }
}

fn prompt_context(a: &Ask<'_>) -> Asked<Value> {
    let schema = json!({"type": "object", "properties": {"context": {"type": "string", "description": "Context to include"}}, "required": ["context"]});
    let answer = a.answer("user_context", ELICIT, elicit("Please provide context for the prompt", schema))?;
    let ctx = match elicited_field(answer, "context") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "(no context given)".to_string(),
    };
    Continue(json!({
        "description": "A prompt that asked the client for context",
        "messages": [{"role": "user", "content": text(format!("Prompt with gathered context: {ctx}"))}]
    }))
}

fn sampling(a: &Ask<'_>) -> Asked<Value> {
    let prompt = a.arg("prompt").unwrap_or("Say hello.");
    let max = a.args.get("maxTokens").and_then(Value::as_u64).unwrap_or(100);
    let answer = a.answer("completion", SAMPLE, sample(prompt, max))?;
    Continue(tool_text(format!("LLM response: {}", sampled_text(answer))))
}

fn user_info(a: &Ask<'_>) -> Asked<Value> {
    let message = a.arg("message").unwrap_or("Please provide your information");
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "Your username"},
            "email": {"type": "string", "description": "Your email address", "format": "email"}
        },
        "required": ["username", "email"]
    });
    let answer = a.answer("user_info", ELICIT, elicit(message, schema))?;
    Continue(tool_text(format!("User response: {}", describe_elicitation(answer))))
}

fn ask_user(a: &Ask<'_>) -> Asked<Value> {
    let message = a.arg("message").or(a.arg("question")).unwrap_or("What is your name?");
    let schema = json!({
        "type": "object",
        "properties": {"answer": {"type": "string", "description": "Your answer"}},
        "required": ["answer"]
    });
    let answer = a.answer("answer", ELICIT, elicit(message, schema))?;
    Continue(tool_text(format!("User response: {}", describe_elicitation(answer))))
}

fn elicitation_defaults(a: &Ask<'_>) -> Asked<Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status",
                       "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": true}
        }
    });
    let message = "Please review and update the form fields with defaults";
    let answer = a.answer("defaults", ELICIT, elicit(message, schema))?;
    Continue(tool_text(format!("Elicitation completed: {}", describe_elicitation(answer))))
}

fn elicitation_enums(a: &Ask<'_>) -> Asked<Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "description": "Choose an option",
                               "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "description": "Choose a titled option", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}]},
            "legacyEnum": {"type": "string", "description": "Choose a legacy option",
                           "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "description": "Choose multiple options",
                              "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "description": "Choose multiple titled options",
                            "items": {"anyOf": [
                                {"const": "value1", "title": "First Choice"},
                                {"const": "value2", "title": "Second Choice"},
                                {"const": "value3", "title": "Third Choice"}]}}
        }
    });
    let answer = a.answer("enums", ELICIT, elicit("Please select options from the enum fields", schema))?;
    Continue(tool_text(format!("Elicitation completed: {}", describe_elicitation(answer))))
}

fn client_roots(a: &Ask<'_>) -> Asked<Value> {
    let answer = a.answer("client_roots", ROOTS, json!({}))?;
    Continue(tool_text(describe_roots(answer)))
}

fn greeting(a: &Ask<'_>) -> Asked<Value> {
    let answer = a.answer("greeting", SAMPLE, sample("Say hello.", 20))?;
    Continue(tool_text(format!("LLM response: {}", sampled_text(answer))))
}

fn streaming_confirm(a: &Ask<'_>) -> Asked<Value> {
    let answer = a.answer("confirm", ELICIT, elicit_confirm())?;
    Continue(tool_text(format!("Elicitation result: {}", describe_elicitation(answer))))
}

fn user_name(a: &Ask<'_>) -> Asked<Value> {
    let answer = a.answer("user_name", ELICIT, elicit_name("What is your name?"))?;
    Continue(hello(answer))
}

fn capital_question(a: &Ask<'_>) -> Asked<Value> {
    let answer = a.answer("capital_question", SAMPLE, sample("What is the capital of France?", 100))?;
    Continue(tool_text(format!("LLM response: {}", sampled_text(answer))))
}

fn state_confirm(a: &Ask<'_>) -> Asked<Value> {
    let answer = a.answer("confirm", ELICIT, elicit_confirm())?;
    let ok = elicited_field(answer, "ok").and_then(Value::as_bool) == Some(true);
    Continue(tool_text(if ok { "state-ok" } else { "state-not-confirmed" }))
}

fn multiple_inputs(a: &Ask<'_>) -> Asked<Value> {
    a.answers(vec![
        req("user_name", ELICIT, elicit_name("What is your name?")),
        req("greeting", SAMPLE, sample("Write a short greeting.", 50)),
        req("client_roots", ROOTS, json!({})),
    ])?;
    Continue(tool_result(vec![
        text(format!("Name: {}", describe_elicitation(&a.got["user_name"]))),
        text(format!("Greeting: {}", sampled_text(&a.got["greeting"]))),
        text(describe_roots(&a.got["client_roots"])),
    ]))
}

fn multi_round(a: &Ask<'_>) -> Asked<Value> {
    let step1 = a.answer("step1", ELICIT, elicit_name("Step 1: what is your name?"))?;
    let color_schema = json!({"type": "object",
        "properties": {"color": {"type": "string", "description": "Your favourite colour"}},
        "required": ["color"]});
    let step2 = a.answer("step2", ELICIT, elicit("Step 2: what is your favourite colour?", color_schema))?;
    let name = elicited_field(step1, "name").and_then(Value::as_str).unwrap_or("?");
    let color = elicited_field(step2, "color").and_then(Value::as_str).unwrap_or("?");
    Continue(tool_text(format!("{name} likes {color}.")))
}

/// Asks only for what the client declared; if it declared none, asks for
/// sampling so that the driver reports the missing capability.
fn declared_capabilities(a: &Ask<'_>) -> Asked<Value> {
    let mut all = Vec::new();
    if supports(a.caps, ELICIT) {
        all.push(req("user_name", ELICIT, elicit_name("What is your name?")));
    }
    if has_cap(a.caps, "sampling") {
        all.push(req("greeting", SAMPLE, sample("Write a short greeting.", 50)));
    }
    if has_cap(a.caps, "roots") {
        all.push(req("client_roots", ROOTS, json!({})));
    }
    if all.is_empty() {
        all.push(req("greeting", SAMPLE, sample("Write a short greeting.", 50)));
    }
    a.answers(all)?;
    Continue(tool_result(a.got.iter().map(|(k, v)| text(format!("{k}: {v}"))).collect()))
}

fn confirm_delete(a: &Ask<'_>) -> Asked<Value> {
    let file = a.arg("filename").unwrap_or("the file");
    let schema = json!({"type": "object",
        "properties": {"confirm": {"type": "boolean", "description": "Delete it?"}},
        "required": ["confirm"]});
    let answer = a.answer("confirm", ELICIT, elicit(&format!("Delete {file}?"), schema))?;
    let yes = elicited_field(answer, "confirm").and_then(Value::as_bool) == Some(true);
    Continue(tool_text(if yes {
        format!("Deleted {file} (not really: this is an example server).")
    } else {
        format!("Kept {file}.")
    }))
}

fn multi_input(a: &Ask<'_>) -> Asked<Value> {
    let schema = json!({"type": "object", "properties": {
        "name": {"type": "string", "description": "A name"},
        "confirm": {"type": "boolean", "description": "Confirm"}}});
    a.answers(vec![
        req("first_input", ELICIT, elicit("First question", schema.clone())),
        req("second_input", ELICIT, elicit("Second question", schema)),
    ])?;
    Continue(tool_result(vec![
        text(format!("First: {}", describe_elicitation(&a.got["first_input"]))),
        text(format!("Second: {}", describe_elicitation(&a.got["second_input"]))),
    ]))
}

fn elicit_confirm() -> Value {
    elicit(
        "Please confirm to continue",
        json!({"type": "object", "properties": {"ok": {"type": "boolean", "description": "Confirm"}}, "required": ["ok"]}),
    )
}

fn hello(answer: &Value) -> Value {
    match elicited_field(answer, "name").and_then(Value::as_str) {
        Some(n) => tool_text(format!("Hello, {n}!")),
        None => tool_text(format!("No name given ({}).", describe_elicitation(answer))),
    }
}

/// Check that a client's answer to `method` has the right shape.
pub fn validate_answer(method: &str, v: &Value) -> Result<(), String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("the answer to {method} must be an object"))?;
    match method {
        ELICIT => match obj.get("action").and_then(Value::as_str) {
            Some("accept") => match obj.get("content") {
                Some(Value::Object(_)) => Ok(()),
                _ => Err("an accepted elicitation needs an object \"content\"".into()),
            },
            Some("decline") | Some("cancel") => Ok(()),
            _ => Err("an elicitation answer needs \"action\": accept, decline or cancel".into()),
        },
        SAMPLE => {
            if obj.get("role").is_some() && obj.get("content").is_some() {
                Ok(())
            } else {
                Err("a sampling answer needs \"role\" and \"content\"".into())
            }
        }
        _ => match obj.get("roots") {
            Some(Value::Array(_)) => Ok(()),
            _ => Err("a roots/list answer needs a \"roots\" array".into()),
        },
    }
}

/// The `inputRequests` of an `InputRequiredResult` or of a task waiting for
/// input: each request by its key (a `roots/list` has no params).
pub fn input_requests(reqs: &[InputReq]) -> Value {
    let mut m = Map::new();
    for r in reqs {
        let mut e = Map::new();
        e.insert("method".into(), r.method.into());
        if r.method != ROOTS {
            e.insert("params".into(), r.params.clone());
        }
        m.insert(r.key.to_string(), Value::Object(e));
    }
    Value::Object(m)
}

/// The error for a request that needs a capability the client did not declare.
pub fn missing_capability(kind: Kind, name: &str, cap: &str, modern: bool) -> RpcResult {
    let msg = format!(
        "{} \"{name}\" needs the client capability \"{cap}\", which this client did not declare",
        kind.noun()
    );
    if modern {
        let mut caps = Map::new();
        caps.insert(cap.to_string(), json!({}));
        Err(RpcError::new(MISSING_CAPABILITY, msg).with_data(json!({"requiredCapabilities": caps})))
    } else if kind == Kind::Tool {
        Ok(tool_error(msg))
    } else {
        Err(RpcError::invalid_params(msg))
    }
}

impl Kind {
    /// What a flow of this kind is, in messages.
    fn noun(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
        }
    }

    /// The request method that runs a flow of this kind.
    fn method(self) -> &'static str {
        match self {
            Kind::Tool => "tools/call",
            Kind::Prompt => "prompts/get",
        }
    }
}

/// Opened `requestState`s remembered until they expire, at most: enough for
/// a retry per second over the whole [`STATE_TTL_MS`].
const REPLAY_CAPACITY: usize = 1024;

/// Integrity protection for `requestState`: core's sealed tokens
/// ([`mcpx_core::request_state`]: HMAC-SHA256, bound to the flow's method,
/// name and arguments, expiring after [`STATE_TTL_MS`], accepted once; row
/// mrtr-single-use-enforced). The key and the nonces derive from a random
/// seed per process, so a state is only valid for the process that issued it
/// (which is all a stdio server needs).
pub struct StateKey {
    keys: Keys,
    nonces: RefCell<Seeded>,
    used: RefCell<ReplaySet<REPLAY_CAPACITY>>,
}

impl StateKey {
    /// A key from 32 secret bytes.
    pub fn new(seed: [u8; 32]) -> Self {
        let nonces = Seeded::new(seed);
        let keys = Keys::new(nonces.key(1), None).expect("a single key has no duplicate id");
        StateKey {
            keys,
            nonces: RefCell::new(nonces),
            used: RefCell::new(ReplaySet::new()),
        }
    }

    /// A key from the operating system's random source.
    pub fn random() -> Self {
        use nanorand::Rng;
        let mut seed = [0u8; 32];
        nanorand::ChaCha20::new().fill_bytes(&mut seed);
        StateKey::new(seed)
    }

    #[cfg(test)]
    pub fn fixed() -> Self {
        StateKey::new([1; 32])
    }

    /// What a state is bound to: the flow's method, its name and its
    /// arguments (one client per process: no principal to tell apart).
    fn binding<'a>(kind: Kind, params: &'a [u8]) -> Binding<'a> {
        Binding {
            principal: b"",
            method: kind.method(),
            params,
        }
    }

    /// The flow's name and arguments in the form the binding digests.
    fn salient(name: &str, args: &Value) -> Vec<u8> {
        format!("{name}\0{args}").into_bytes()
    }

    /// Encode the gathered answers as an opaque, integrity-protected string
    /// for this call of flow `name` with `args`.
    pub fn seal(
        &self,
        kind: Kind,
        name: &str,
        args: &Value,
        got: &Gathered,
        now_ms: u64,
    ) -> Result<String, RpcError> {
        let inner = serde_json::to_vec(got).unwrap_or_default();
        let salient = Self::salient(name, args);
        let nonce = self.nonces.borrow_mut().nonce();
        let mut out = vec![0u8; request_state::sealed_len(kind.method().len(), inner.len())];
        self.keys
            .seal(&Self::binding(kind, &salient), &inner, &nonce, now_ms, STATE_TTL_MS, &mut out)
            .map(str::to_string)
            .map_err(|e| {
                RpcError::new(
                    INVALID_PARAMS,
                    format!("the answers gathered so far do not fit in a requestState: {e}"),
                )
            })
    }

    /// Decode a state issued by [`seal`](Self::seal) for the same flow and
    /// arguments; each state opens once.
    pub fn open(
        &self,
        kind: Kind,
        name: &str,
        args: &Value,
        state: &str,
        now_ms: u64,
    ) -> Result<Gathered, RpcError> {
        let bad = || {
            RpcError::invalid_params(
                "invalid requestState: it was modified or not issued by this server",
            )
        };
        let salient = Self::salient(name, args);
        let mut scratch = vec![0u8; state.len()];
        let opened = self.keys.open(
            state,
            &Self::binding(kind, &salient),
            now_ms,
            &mut self.used.borrow_mut(),
            &mut scratch,
        );
        match opened {
            Ok(o) => serde_json::from_slice(o.inner).map_err(|_| bad()),
            Err(OpenError::MethodMismatch | OpenError::ParamsMismatch | OpenError::PrincipalMismatch) => {
                Err(RpcError::invalid_params(format!(
                    "requestState was issued for another request, not this call of \"{name}\" with these arguments"
                )))
            }
            Err(OpenError::Expired) => Err(RpcError::invalid_params(
                "requestState has expired: send the request again without it",
            )),
            Err(e @ (OpenError::Replayed | OpenError::ReplaySetFull)) => {
                Err(RpcError::invalid_params(e.to_string()))
            }
            Err(_) => Err(bad()),
        }
    }
}

/// How long an issued `requestState` stays valid.
pub const STATE_TTL_MS: u64 = 10 * 60 * 1000;

/// One modern-era (2026-07-28) round: combine `requestState` and
/// `inputResponses` from the request, advance the flow as far as the answers
/// allow, and return either its final result or an `InputRequiredResult`.
pub fn modern_round(
    key: &StateKey,
    kind: Kind,
    name: &str,
    params: &Value,
    args: &Value,
    caps: &Value,
    now_ms: u64,
) -> RpcResult {
    let mut got = match params.get("requestState") {
        None | Some(Value::Null) => Gathered::new(),
        Some(Value::String(s)) => key.open(kind, name, args, s, now_ms)?,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "\"requestState\" must be a string",
            ))
        }
    };
    let mut responses = match params.get("inputResponses") {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            return Err(RpcError::invalid_params(
                "\"inputResponses\" must be an object",
            ))
        }
    };
    for _ in 0..16 {
        match step(kind, name, args, &got, caps) {
            Step::Done(r) => return r,
            Step::Need(reqs) => {
                let mut progressed = false;
                for r in &reqs {
                    if let Some(answer) = responses.remove(r.key) {
                        validate_answer(r.method, &answer).map_err(|m| {
                            RpcError::new(
                                INVALID_PARAMS,
                                format!("invalid inputResponses[\"{}\"]: {m}", r.key),
                            )
                        })?;
                        got.insert(r.key.to_string(), answer);
                        progressed = true;
                    }
                }
                if progressed {
                    continue;
                }
                if let Some(r) = reqs.iter().find(|r| !supports(caps, r.method)) {
                    return missing_capability(kind, name, capability_of(r.method), true);
                }
                return Ok(json!({
                    "resultType": "input_required",
                    "inputRequests": input_requests(&reqs),
                    "requestState": key.seal(kind, name, args, &got, now_ms)?,
                }));
            }
        }
    }
    Err(RpcError::new(
        super::wire::INTERNAL_ERROR,
        "flow did not settle",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps_all() -> Value {
        json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}})
    }

    fn round(name: &str, params: Value, caps: Value) -> RpcResult {
        modern_round(
            &StateKey::fixed(),
            Kind::Tool,
            name,
            &params,
            &json!({}),
            &caps,
            1000,
        )
    }

    #[test]
    fn elicitation_two_rounds() {
        let r1 = round(
            "test_input_required_result_elicitation",
            json!({}),
            caps_all(),
        )
        .unwrap();
        assert_eq!(r1["resultType"], "input_required");
        assert_eq!(
            r1["inputRequests"]["user_name"]["method"],
            "elicitation/create"
        );
        // No requestState needed for a single round.
        let r2 = round(
            "test_input_required_result_elicitation",
            json!({"inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}, "extra": {"x": 1}}}),
            caps_all(),
        )
        .unwrap();
        assert_eq!(r2["content"][0]["text"], "Hello, Alice!");
        // Wrong key: asked again.
        let r3 = round(
            "test_input_required_result_elicitation",
            json!({"inputResponses": {"wrong_key": {"action": "accept", "content": {"data": "wrong"}}}}),
            caps_all(),
        )
        .unwrap();
        assert_eq!(r3["resultType"], "input_required");
        // Malformed answers are rejected.
        assert!(round(
            "test_input_required_result_elicitation",
            json!({"inputResponses": {"user_name": 12345}}),
            caps_all()
        )
        .is_err());
        assert!(round(
            "test_input_required_result_elicitation",
            json!({"inputResponses": null}),
            caps_all()
        )
        .is_err());
    }

    #[test]
    fn multi_round_states_differ_and_tamper_fails() {
        let n = "test_input_required_result_multi_round";
        let r1 = round(n, json!({}), caps_all()).unwrap();
        let s1 = r1["requestState"].as_str().unwrap().to_string();
        let r2 = round(
            n,
            json!({"requestState": s1, "inputResponses": {"step1": {"action": "accept", "content": {"name": "Alice"}}}}),
            caps_all(),
        )
        .unwrap();
        assert_eq!(r2["resultType"], "input_required");
        let s2 = r2["requestState"].as_str().unwrap().to_string();
        assert_ne!(s1, s2);
        let r3 = round(
            n,
            json!({"requestState": s2, "inputResponses": {"step2": {"action": "accept", "content": {"color": "blue"}}}}),
            caps_all(),
        )
        .unwrap();
        assert_eq!(r3["content"][0]["text"], "Alice likes blue.");
        let bad = round(
            n,
            json!({"requestState": format!("{s2}-TAMPERED"), "inputResponses": {"step2": {"action": "accept", "content": {"color": "blue"}}}}),
            caps_all(),
        );
        assert_eq!(bad.unwrap_err().code, INVALID_PARAMS);
        // A state from one flow is refused by another.
        let other = round(
            "test_input_required_result_request_state",
            json!({"requestState": s1}),
            caps_all(),
        );
        assert!(other.is_err());
    }

    #[test]
    fn state_is_bound_to_arguments_expires_and_opens_once() {
        let k = StateKey::fixed();
        let n = "test_input_required_result_request_state";
        let t = Kind::Tool;
        let s = k.seal(t, n, &json!({"a": 1}), &Gathered::new(), 1000).unwrap();
        assert!(k.open(t, n, &json!({"a": 2}), &s, 1000).is_err());
        assert!(k.open(Kind::Prompt, n, &json!({"a": 1}), &s, 1000).is_err());
        assert!(k
            .open(t, n, &json!({"a": 1}), &s, 1000 + STATE_TTL_MS + 1)
            .is_err());
        assert!(StateKey::new([9; 32])
            .open(t, n, &json!({"a": 1}), &s, 1000)
            .is_err());
        assert!(k.open(t, n, &json!({"a": 1}), &s, 1000).is_ok());
        let again = k.open(t, n, &json!({"a": 1}), &s, 1000).unwrap_err();
        assert!(again.message.contains("already been used"), "{}", again.message);
    }

    #[test]
    fn capabilities_are_respected() {
        let r = round(
            "test_input_required_result_capabilities",
            json!({}),
            json!({"sampling": {}}),
        )
        .unwrap();
        let reqs = r["inputRequests"].as_object().unwrap();
        assert!(!reqs.is_empty());
        assert!(reqs.values().all(|v| v["method"] != "elicitation/create"));
        let e = round("test_missing_capability", json!({}), json!({})).unwrap_err();
        assert_eq!(e.code, MISSING_CAPABILITY);
        assert!(e.data.unwrap()["requiredCapabilities"]["sampling"].is_object());
    }

    #[test]
    fn url_only_elicitation_is_not_form() {
        assert!(supports(&json!({"elicitation": {}}), "elicitation/create"));
        assert!(supports(
            &json!({"elicitation": {"form": {}, "url": {}}}),
            "elicitation/create"
        ));
        assert!(!supports(
            &json!({"elicitation": {"url": {}}}),
            "elicitation/create"
        ));
        assert!(!supports(
            &json!({"sampling": true}),
            "sampling/createMessage"
        ));
    }

    #[test]
    fn multiple_inputs() {
        let n = "test_input_required_result_multiple_inputs";
        let r1 = round(n, json!({}), caps_all()).unwrap();
        assert_eq!(r1["inputRequests"].as_object().unwrap().len(), 3);
        assert!(r1["inputRequests"]["client_roots"].get("params").is_none());
        let r2 = round(
            n,
            json!({"requestState": r1["requestState"], "inputResponses": {
                "user_name": {"action": "accept", "content": {"name": "Alice"}},
                "greeting": {"role": "assistant", "content": {"type": "text", "text": "Hello there!"}, "model": "m"},
                "client_roots": {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}
            }}),
            caps_all(),
        )
        .unwrap();
        assert!(r2.get("resultType").is_none());
        assert_eq!(r2["content"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn prompt_flow() {
        let k = StateKey::fixed();
        let n = "test_input_required_result_prompt";
        let r1 = modern_round(
            &k,
            Kind::Prompt,
            n,
            &json!({}),
            &json!({}),
            &caps_all(),
            1000,
        )
        .unwrap();
        let key = r1["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        let p = json!({"inputResponses": {key: {"action": "accept", "content": {"context": "test context"}}}});
        let r2 = modern_round(
            &k,
            Kind::Prompt,
            n,
            &p,
            &json!({}),
            &caps_all(),
            1000,
        )
        .unwrap();
        assert!(r2["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("test context"));
    }

    #[test]
    fn legacy_missing_capability_is_tool_error() {
        let r = missing_capability(Kind::Tool, "ask_model", "sampling", false).unwrap();
        assert_eq!(r["isError"], true);
    }
}
