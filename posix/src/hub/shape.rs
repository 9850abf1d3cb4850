//! Egress shaping: make what the hub sends fit the peer's negotiated revision.
//!
//! Inside the hub every message is in the newest legacy revision's form. Before
//! a result, notification or relayed request goes to a client it passes through
//! here, and only here. What differs between revisions is one table,
//! [`FEATURES`], checked against each revision's schema.json; the code below
//! only asks the table. A message that cannot contain anything the client's
//! revision lacks (decided by a byte search for the table's trigger words) is
//! passed through untouched, as the original bytes.
//!
//! Known limit: a message that does need reshaping is re-serialized through
//! `serde_json::Value`, so integers beyond 64 bits inside it become floats.

use serde_json::{json, Map, Value};

pub(super) use mcpx_core::revision::Revision as Rev;
use mcpx_core::revision::{Era, Feature};

/// Shaping facts of a revision: [`Rev::features`] via [`RevExt`].
pub(super) trait RevExt {
    fn features(self) -> Features;
}

impl RevExt for Rev {
    fn features(self) -> Features {
        Features::of(self)
    }
}

/// What a revision's schema has, as far as the hub's shaping is concerned.
/// Built from the core revision feature table (`mcpx_core::revision::Feature`),
/// plus three schema facts that table does not carry (see [`Features::of`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Features {
    /// `AudioContent` (2025-03-26+).
    pub audio: bool,
    /// `ResourceLink` content (2025-06-18+).
    pub resource_link: bool,
    /// `CallToolResult.structuredContent`, `Tool.outputSchema` (2025-06-18+).
    pub structured: bool,
    /// `title` on tools, resources, templates, prompts, prompt arguments,
    /// `Implementation` (2025-06-18+).
    pub title: bool,
    /// `icons` on the same, and `Implementation.description/websiteUrl` (2025-11-25).
    pub icons: bool,
    /// `_meta` on list items, content blocks and resource contents (2025-06-18+).
    pub item_meta: bool,
    /// `Tool.annotations` (2025-03-26+).
    pub tool_annotations: bool,
    /// `Tool.execution` and the `tasks` capability (2025-11-25).
    pub tasks: bool,
    /// `Annotations.lastModified` (2025-06-18+).
    pub last_modified: bool,
    /// `completions` server capability (2025-03-26+).
    pub completions: bool,
    /// `elicitation/create` and the `elicitation` client capability (2025-06-18+).
    pub elicitation: bool,
    /// `mode` in `elicitation/create` (form / url; 2025-11-25).
    pub elicitation_mode: bool,
    /// `message` in `notifications/progress` (2025-03-26+).
    pub progress_message: bool,
    /// An error response may leave out `id` when it could not be read (2025-11-25+).
    pub error_id_optional: bool,
    /// `resultType`, caching hints (`ttlMs`, `cacheScope`) on results (2026-07-28).
    pub result_type: bool,
    /// Server→client requests on the wire, with `_meta`, `task` and (URL mode)
    /// `elicitationId` in their params (legacy). Without it they are input
    /// requests inside an `InputRequiredResult`, which have none of those.
    pub wire_requests: bool,
}

impl Features {
    pub fn of(rev: Rev) -> Features {
        let has = |f| rev.supports(f);
        // Not in the core table, checked against each schema.json:
        // `_meta` on `Tool`/`Resource`/`Prompt`/content blocks and
        // `Annotations.lastModified` appear in 2025-06-18 (with `title`);
        // `JSONRPCErrorResponse.id` becomes optional in 2025-11-25.
        let since_2025_06_18 = rev >= Rev::V2025_06_18;
        Features {
            audio: has(Feature::AudioContent),
            resource_link: has(Feature::ResourceLink),
            structured: has(Feature::StructuredContent),
            title: has(Feature::Title),
            icons: has(Feature::Icons),
            item_meta: since_2025_06_18,
            tool_annotations: has(Feature::ToolAnnotations),
            tasks: has(Feature::CoreTasks),
            last_modified: since_2025_06_18,
            completions: has(Feature::CompletionsCapability),
            elicitation: has(Feature::Elicitation),
            elicitation_mode: has(Feature::ElicitationUrlMode),
            progress_message: has(Feature::ProgressMessage),
            error_id_optional: rev >= Rev::V2025_11_25 || rev.era() == Era::Modern,
            result_type: has(Feature::ResultType),
            wire_requests: has(Feature::LegacySession),
        }
    }
}

impl Features {
    /// Words whose presence in a message means it may need shaping, each
    /// with whether this revision has the feature (then it is no trigger).
    fn triggers(&self) -> [(bool, &'static [u8]); 11] {
        [
            (self.audio, b"\"audio\""),
            (self.resource_link, b"\"resource_link\""),
            (self.structured, b"\"structuredContent\""),
            (self.structured, b"\"outputSchema\""),
            (self.title, b"\"title\""),
            (self.icons, b"\"icons\""),
            (self.icons, b"\"websiteUrl\""),
            (self.item_meta, b"\"_meta\""),
            (self.tasks, b"\"execution\""),
            (self.last_modified, b"\"lastModified\""),
            (self.result_type, b"\"resultType\""),
        ]
    }

    /// Might `bytes` hold something this revision lacks?
    pub fn may_need_shaping(&self, bytes: &[u8]) -> bool {
        self.triggers().iter().any(|(has, w)| !has && contains(bytes, w))
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The result of `method` for a peer on `rev` (a client, or for the answers
/// to relayed requests an upstream): `None` = send the original bytes;
/// `Some` = the reshaped result.
pub(super) fn result(method: &str, raw: &[u8], rev: Rev) -> Option<Vec<u8>> {
    let f = &rev.features();
    if !f.may_need_shaping(raw) {
        return None;
    }
    let mut v: Value = serde_json::from_slice(raw).ok()?;
    if !f.result_type {
        if let Some(o) = v.as_object_mut() {
            for k in ["resultType", "ttlMs", "cacheScope"] {
                o.remove(k);
            }
        }
    }
    match method {
        "tools/call" => call_tool_result(&mut v, f),
        "prompts/get" => {
            if let Some(msgs) = v.get_mut("messages").and_then(Value::as_array_mut) {
                for m in msgs {
                    if let Some(c) = m.get_mut("content") {
                        *c = content_block(c.take(), f);
                    }
                }
            }
        }
        // Answers of clients to relayed requests, shaped for the upstream.
        "sampling/createMessage" => {
            if let Some(c) = v.get_mut("content") {
                *c = match c.take() {
                    Value::Array(a) => Value::Array(a.into_iter().map(|b| content_block(b, f)).collect()),
                    b => content_block(b, f),
                };
            }
        }
        "roots/list" => {
            if let Some(roots) = v.get_mut("roots").and_then(Value::as_array_mut) {
                for r in roots {
                    resource_contents(r, f);
                }
            }
        }
        "resources/read" => {
            if let Some(cs) = v.get_mut("contents").and_then(Value::as_array_mut) {
                for c in cs {
                    resource_contents(c, f);
                }
            }
        }
        _ => {}
    }
    serde_json::to_vec(&v).ok()
}

fn call_tool_result(v: &mut Value, f: &Features) {
    let Some(obj) = v.as_object_mut() else { return };
    if !f.structured {
        if let Some(sc) = obj.remove("structuredContent") {
            let empty = obj.get("content").and_then(Value::as_array).is_none_or(|a| a.is_empty());
            if empty {
                obj.insert("content".into(), json!([{ "type": "text", "text": sc.to_string() }]));
            }
        }
    }
    if let Some(cs) = obj.get_mut("content").and_then(Value::as_array_mut) {
        let taken = std::mem::take(cs);
        *cs = taken.into_iter().map(|c| content_block(c, f)).collect();
    }
}

/// One content block for `f`: audio and resource links become a text note
/// when the revision has no such block; unknown fields are stripped.
pub(super) fn content_block(c: Value, f: &Features) -> Value {
    let ty = c.get("type").and_then(Value::as_str).unwrap_or("");
    let mut c = match ty {
        "audio" if !f.audio => {
            let mime = c.get("mimeType").and_then(Value::as_str).unwrap_or("audio");
            json!({ "type": "text", "text": format!("[audio content ({mime}) omitted: this client's protocol revision cannot carry audio]") })
        }
        "resource_link" if !f.resource_link => {
            let uri = c.get("uri").and_then(Value::as_str).unwrap_or("");
            let name = c.get("name").and_then(Value::as_str).unwrap_or(uri);
            let mut text = format!("Resource link: {name} <{uri}>");
            if let Some(d) = c.get("description").and_then(Value::as_str) {
                text.push_str(" — ");
                text.push_str(d);
            }
            json!({ "type": "text", "text": text })
        }
        _ => c,
    };
    if let Some(o) = c.as_object_mut() {
        if !f.item_meta {
            o.remove("_meta");
        }
        if !f.icons {
            o.remove("icons");
        }
        if !f.title && o.get("type").and_then(Value::as_str) == Some("resource_link") {
            o.remove("title");
        }
        if let Some(a) = o.get_mut("annotations").and_then(Value::as_object_mut) {
            if !f.last_modified {
                a.remove("lastModified");
            }
        }
        if let Some(r) = o.get_mut("resource") {
            resource_contents(r, f);
        }
    }
    c
}

fn resource_contents(c: &mut Value, f: &Features) {
    if let Some(o) = c.as_object_mut() {
        if !f.item_meta {
            o.remove("_meta");
        }
    }
}

/// A list item (`Tool`, `Resource`, `ResourceTemplate`, `Prompt`) for `f`.
pub(super) fn item(v: &Value, f: &Features) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        if !f.title {
            o.remove("title");
        }
        if !f.icons {
            o.remove("icons");
        }
        if !f.item_meta {
            o.remove("_meta");
        }
        if !f.structured {
            o.remove("outputSchema");
        }
        if !f.tasks {
            o.remove("execution");
        }
        if !f.tool_annotations && o.contains_key("inputSchema") {
            o.remove("annotations");
        }
        if let Some(a) = o.get_mut("annotations").and_then(Value::as_object_mut) {
            if !f.last_modified {
                a.remove("lastModified");
            }
        }
        if let Some(args) = o.get_mut("arguments").and_then(Value::as_array_mut) {
            for a in args {
                if let Some(a) = a.as_object_mut() {
                    if !f.title {
                        a.remove("title");
                    }
                }
            }
        }
    }
    v
}

/// `serverInfo` for `f`.
pub(super) fn implementation(mut v: Value, f: &Features) -> Value {
    if let Some(o) = v.as_object_mut() {
        if !f.title {
            o.remove("title");
        }
        if !f.icons {
            o.remove("icons");
            o.remove("description");
            o.remove("websiteUrl");
        }
    }
    v
}

/// Server capabilities for `f`.
pub(super) fn server_capabilities(mut caps: Map<String, Value>, f: &Features) -> Map<String, Value> {
    if !f.completions {
        caps.remove("completions");
    }
    if !f.tasks {
        caps.remove("tasks");
    }
    caps
}

/// A `notifications/*` message's params for `f` (`None` = unchanged).
pub(super) fn notification_params(method: &str, params: &mut Value, f: &Features) -> bool {
    if method == "notifications/progress" && !f.progress_message {
        if let Some(o) = params.as_object_mut() {
            return o.remove("message").is_some();
        }
    }
    false
}

/// Params of a server→client request relayed to a client on `f`, or why it
/// cannot be expressed there.
pub(super) fn relayed_request(method: &str, mut params: Value, f: &Features) -> Result<Value, &'static str> {
    if method == "elicitation/create" {
        if !f.elicitation {
            return Err("the client's protocol revision has no elicitation");
        }
        if !f.elicitation_mode {
            if let Some(o) = params.as_object_mut() {
                match o.remove("mode") {
                    Some(Value::String(m)) if m != "form" => {
                        return Err("the client's protocol revision supports only form elicitation");
                    }
                    _ => {}
                }
            }
        }
    }
    if method == "sampling/createMessage" && !f.item_meta {
        if let Some(msgs) = params.get_mut("messages").and_then(Value::as_array_mut) {
            for m in msgs {
                if let Some(c) = m.get_mut("content") {
                    if c.is_object() {
                        *c = content_block(c.take(), f);
                    }
                }
            }
        }
    }
    Ok(params)
}

/// Params of an input request (`InputRequests` value) for `f`, or why it
/// cannot be expressed there. Modern input requests carry no `_meta`, no
/// `task` and no `elicitationId` (URL-mode completion notifications are gone).
pub(super) fn input_request(method: &str, params: Value, f: &Features) -> Result<Value, &'static str> {
    let mut params = relayed_request(method, params, f)?;
    if !f.wire_requests {
        if let Some(o) = params.as_object_mut() {
            o.remove("_meta");
            o.remove("task");
            o.remove("elicitationId");
        }
    }
    Ok(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_passes_everything_through() {
        let raw = br#"{"content":[{"type":"audio","data":"AA==","mimeType":"audio/wav"}],"structuredContent":{"a":1}}"#;
        assert_eq!(result("tools/call", raw, Rev::V2025_11_25), None);
        assert_eq!(result("tools/call", br#"{"content":[{"type":"text","text":"hi"}]}"#, Rev::V2024_11_05), None);
    }

    #[test]
    fn structured_only_becomes_text_before_2025_06_18() {
        let raw = br#"{"content":[],"structuredContent":{"a":1}}"#;
        let out: Value = serde_json::from_slice(&result("tools/call", raw, Rev::V2025_03_26).unwrap()).unwrap();
        assert_eq!(out, json!({"content":[{"type":"text","text":"{\"a\":1}"}]}));
    }
}
