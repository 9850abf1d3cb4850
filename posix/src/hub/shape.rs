//! Egress shaping: make what the hub sends fit the peer's negotiated revision.
//!
//! Inside the hub every message is in the newest legacy revision's form. Before
//! a result, notification or relayed request goes to a client it passes through
//! here, and only here. What differs between revisions is one table,
//! core's `mcpx_core::revision::Feature`, checked against each revision's schema.json; the code below
//! only asks the table. A message that cannot contain anything the client's
//! revision lacks (decided by a byte search for the table's trigger words) is
//! passed through untouched, as the original bytes.
//!
//! Results are reshaped by splicing their bytes (members removed, content
//! blocks replaced), so every number and string passes byte for byte. Lists,
//! capabilities and notifications the hub builds itself are `Value`s.

use mcpx_core::json::{self, JsonValue, Span};
use mcpx_core::meta::SERVER_INFO_KEY;
use mcpx_core::method::Method;
use mcpx_core::rewrite::{self, Splice};
use serde_json::{Map, Value};

pub(super) use mcpx_core::revision::Revision as Rev;
use mcpx_core::revision::Feature;

/// Shaping facts of a revision: [`Rev::features`] via [`RevExt`].
pub(super) trait RevExt {
    fn features(self) -> Features;
}

impl RevExt for Rev {
    fn features(self) -> Features {
        Features::of(self)
    }
}

/// What a revision's schema has, as far as the hub's shaping is concerned:
/// the core revision feature table (`mcpx_core::revision::Feature`, the one
/// table) read once per revision into flags.
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
    /// `.` in tool names (2025-11-25+): names with a dotted separator.
    pub dotted_names: bool,
}

impl Features {
    pub fn of(rev: Rev) -> Features {
        let has = |f| rev.supports(f);
        Features {
            audio: has(Feature::AudioContent),
            resource_link: has(Feature::ResourceLink),
            structured: has(Feature::StructuredContent),
            title: has(Feature::Title),
            icons: has(Feature::Icons),
            item_meta: has(Feature::ItemMeta),
            tool_annotations: has(Feature::ToolAnnotations),
            tasks: has(Feature::CoreTasks),
            last_modified: has(Feature::LastModified),
            completions: has(Feature::CompletionsCapability),
            elicitation: has(Feature::Elicitation),
            elicitation_mode: has(Feature::ElicitationUrlMode),
            progress_message: has(Feature::ProgressMessage),
            error_id_optional: has(Feature::ErrorIdOptional),
            result_type: has(Feature::ResultType),
            wire_requests: has(Feature::LegacySession),
            dotted_names: has(Feature::DotInToolNames),
        }
    }
}

impl Features {
    /// Words whose presence in a message means it may need shaping, each
    /// with whether this revision has the feature (then it is no trigger).
    fn triggers(&self) -> [(bool, &'static [u8]); 12] {
        [
            (self.result_type, SERVER_INFO_TRIGGER),
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
    /// One pass over the quotes of `bytes` (every trigger starts with one);
    /// only a quote followed by a trigger's first letter is compared.
    pub fn may_need_shaping(&self, bytes: &[u8]) -> bool {
        let triggers = self.triggers();
        // Second bytes of the triggers that count (all ASCII).
        let firsts = triggers.iter().filter(|(has, _)| !has).fold(0u128, |m, (_, w)| m | 1 << w[1]);
        if firsts == 0 {
            return false;
        }
        memchr::memchr_iter(b'"', bytes).any(|at| {
            let rest = &bytes[at..];
            rest.get(1).is_some_and(|&b| b < 128 && firsts & 1 << b != 0)
                && triggers.iter().any(|(has, w)| !has && rest.starts_with(w))
        })
    }
}

/// A modern server's `_meta` key naming it on every result
/// (`mcpx_core::meta::SERVER_INFO_KEY`), quoted: a shaping trigger.
const SERVER_INFO_TRIGGER: &[u8] = b"\"io.modelcontextprotocol/serverInfo\"";

/// The result of `method` for a peer on `rev` (a client, or for the answers
/// to relayed requests an upstream): `None` = send the original bytes;
/// `Some` = the reshaped result. For results kept as bytes (stored, or built
/// by the hub); a result inside a parsed message goes to [`result_view`].
pub(super) fn result(method: &str, raw: &[u8], rev: Rev) -> Option<Vec<u8>> {
    if !rev.features().may_need_shaping(raw) {
        return None;
    }
    result_view(method, json::parse(raw).ok()?, rev)
}

/// [`result`] of a result object inside a checked message: the reshaped
/// bytes are the original ones with members spliced out or replaced, so
/// every number and string not reshaped passes byte for byte (integers
/// beyond 64 bits included).
pub(super) fn result_view(method: &str, v: JsonValue<'_>, rev: Rev) -> Option<Vec<u8>> {
    let f = &rev.features();
    if v.kind() != json::Kind::Object || !f.may_need_shaping(v.bytes()) {
        return None;
    }
    let mut e = Edits::default();
    // Members of the result object itself that this revision lacks.
    let mut top: Vec<&str> = Vec::new();
    // The members read, in one pass (the first of each, as `get` reads).
    let [meta, structured, content] = v.lookup(["_meta", "structuredContent", "content"]).values;
    if !f.result_type {
        top.extend(["resultType", "ttlMs", "cacheScope"]);
        upstream_server_info(meta, &mut e, &mut top);
    }
    match method {
        "tools/call" => call_tool_result(&v, structured, content, f, &mut e, &mut top),
        "prompts/get" => {
            for m in elements(v.get("messages")) {
                if let Some(c) = m.get("content") {
                    content_block(&c, f, &mut e);
                }
            }
        }
        // Answers of clients to relayed requests, shaped for the upstream.
        "sampling/createMessage" => match content {
            Some(c) if c.kind() == json::Kind::Array => c.elements().for_each(|b| content_block(&b, f, &mut e)),
            Some(c) => content_block(&c, f, &mut e),
            None => {}
        },
        "roots/list" => elements(v.get("roots")).for_each(|r| resource_contents(&r, f, &mut e)),
        "resources/read" => elements(v.get("contents")).for_each(|c| resource_contents(&c, f, &mut e)),
        _ => {}
    }
    e.drop_keys(&v, &top);
    Some(e.apply(v))
}

/// A modern upstream names itself in every result's `_meta`
/// (`io.modelcontextprotocol/serverInfo`); to a legacy peer mcpx is the
/// server, and that key is no part of its revision: it is removed, and with
/// it `_meta` (the result's, `meta`) when nothing else is in it.
fn upstream_server_info(meta: Option<JsonValue<'_>>, e: &mut Edits, top: &mut Vec<&str>) {
    let Some(meta) = meta.filter(|m| m.kind() == json::Kind::Object) else { return };
    let (mut info, mut other) = (false, false);
    for m in meta.members() {
        if m.key.eq_str(SERVER_INFO_KEY) {
            info = true;
        } else {
            other = true;
        }
    }
    match (info, other) {
        (false, _) => {}
        (true, false) => top.push("_meta"),
        (true, true) => e.drop_keys(&meta, &[SERVER_INFO_KEY]),
    }
}

/// Byte edits of one value: spans of its buffer and what replaces them.
#[derive(Default)]
struct Edits(Vec<(Span, Vec<u8>)>);

impl Edits {
    fn replace(&mut self, span: Span, with: Vec<u8>) {
        self.0.push((span, with));
    }

    /// Removes the members of `obj` named in `keys` (one splice per run).
    fn drop_keys(&mut self, obj: &JsonValue<'_>, keys: &[&str]) {
        if keys.is_empty() || obj.kind() != json::Kind::Object {
            return;
        }
        rewrite::remove_members(obj, |k| keys.iter().any(|key| k.eq_str(key)), |s| self.0.push((s.span, Vec::new())));
    }

    /// `v`'s bytes with the edits applied (edits never overlap: each
    /// replaces a value the others do not descend into).
    fn apply(mut self, v: JsonValue<'_>) -> Vec<u8> {
        let base = v.span().start;
        self.0.sort_by_key(|(s, _)| s.start);
        let splices: Vec<Splice> = self.0.iter().map(|(s, with)| Splice::raw(Span::new(s.start - base, s.end - base), with)).collect();
        super::wire::apply(v.bytes(), &splices)
    }
}

/// The elements of an array member (none when absent or not an array).
fn elements<'a>(v: Option<JsonValue<'a>>) -> impl Iterator<Item = JsonValue<'a>> {
    v.filter(|a| a.kind() == json::Kind::Array).into_iter().flat_map(|a| a.elements())
}

fn str_of<'a>(v: Option<JsonValue<'a>>) -> Option<&'a str> {
    v?.as_str()?.as_str()
}

/// `[{"type":"text","text":<text>}]`, or the block alone.
fn text_block(text: &str) -> Vec<u8> {
    let mut b = br#"{"type":"text","text":"#.to_vec();
    b.extend_from_slice(&super::wire::quote(text));
    b.push(b'}');
    b
}

/// A tool's result `obj`, its `structuredContent` (`sc`) and `content`.
fn call_tool_result(obj: &JsonValue<'_>, sc: Option<JsonValue<'_>>, content: Option<JsonValue<'_>>, f: &Features, e: &mut Edits, top: &mut Vec<&str>) {
    // Before 2026-07-28 structuredContent is an object; other JSON values of
    // a modern upstream go as text only.
    // Requirement: tools-structured-object-only
    let non_object = !f.result_type && sc.is_some_and(|v| v.kind() != json::Kind::Object);
    let mut content_replaced = false;
    if let Some(sc) = sc.filter(|_| !f.structured || non_object) {
        let empty = content.is_none_or(|c| c.kind() != json::Kind::Array || c.elements().next().is_none());
        let text = std::str::from_utf8(sc.bytes()).unwrap_or_default();
        let mut block = b"[".to_vec();
        block.extend_from_slice(&text_block(text));
        block.push(b']');
        match content {
            Some(c) if empty => {
                e.replace(c.span(), block);
                content_replaced = true;
                top.push("structuredContent");
            }
            // No content at all: the structured member becomes it, in place.
            None => {
                let mut member = br#""content":"#.to_vec();
                member.extend_from_slice(&block);
                if let Some(m) = obj.members().find(|m| m.key.eq_str("structuredContent")) {
                    e.replace(Span::new(m.key_span.start, m.value.span().end), member);
                }
            }
            Some(_) => top.push("structuredContent"),
        }
    }
    if !content_replaced {
        elements(content).for_each(|c| content_block(&c, f, e));
    }
}

/// One content block for `f`: audio and resource links become a text note
/// when the revision has no such block; fields it lacks are removed.
fn content_block(c: &JsonValue<'_>, f: &Features, e: &mut Edits) {
    let [ty, annotations, resource] = c.lookup(["type", "annotations", "resource"]).values;
    let ty = str_of(ty).unwrap_or("");
    match ty {
        "audio" if !f.audio => {
            let mime = str_of(c.get("mimeType")).unwrap_or("audio");
            let text = format!("[audio content ({mime}) omitted: this client's protocol revision cannot carry audio]");
            return e.replace(c.span(), text_block(&text));
        }
        "resource_link" if !f.resource_link => {
            let uri = str_of(c.get("uri")).unwrap_or("");
            let name = str_of(c.get("name")).unwrap_or(uri);
            let mut text = format!("Resource link: {name} <{uri}>");
            if let Some(d) = str_of(c.get("description")) {
                text.push_str(" — ");
                text.push_str(d);
            }
            return e.replace(c.span(), text_block(&text));
        }
        _ => {}
    }
    let mut drop: Vec<&str> = Vec::new();
    if !f.item_meta {
        drop.push("_meta");
    }
    if !f.icons {
        drop.push("icons");
    }
    if !f.title && ty == "resource_link" {
        drop.push("title");
    }
    e.drop_keys(c, &drop);
    if let Some(a) = annotations.filter(|_| !f.last_modified) {
        e.drop_keys(&a, &["lastModified"]);
    }
    if let Some(r) = resource {
        resource_contents(&r, f, e);
    }
}

/// [`content_block`] of a block the hub holds as a `Value` (relayed
/// request params are still parsed into a tree).
fn content_block_value(c: Value, f: &Features) -> Value {
    let raw = serde_json::to_vec(&c).unwrap_or_default();
    let Ok(v) = json::parse(&raw) else { return c };
    let mut e = Edits::default();
    content_block(&v, f, &mut e);
    serde_json::from_slice(&e.apply(v)).unwrap_or(c)
}

fn resource_contents(c: &JsonValue<'_>, f: &Features, e: &mut Edits) {
    if !f.item_meta {
        e.drop_keys(c, &["_meta"]);
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
        // Before 2026-07-28 an outputSchema has an object root.
        // Requirement: tools-output-schema-object-root
        let object_root = |s: &Value| s.get("type").and_then(Value::as_str) == Some("object");
        if !f.structured || (!f.result_type && o.get("outputSchema").is_some_and(|s| !object_root(s))) {
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
pub(super) fn notification_params(method: Method<'_>, params: &mut Value, f: &Features) -> bool {
    if method == Method::Progress && !f.progress_message {
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
                        *c = content_block_value(c.take(), f);
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
    use serde_json::json;

    // Every trigger a revision lacks is found, wherever its quote is, and
    // a quote followed by another word is not taken for one.
    #[test]
    fn each_missing_feature_triggers_shaping() {
        let old = Rev::V2024_11_05.features();
        for (has, w) in old.triggers() {
            let mut bytes = br#"{"a":"x","#.to_vec();
            bytes.extend_from_slice(w);
            bytes.extend_from_slice(b":1}");
            assert_eq!(old.may_need_shaping(&bytes), !has, "{}", String::from_utf8_lossy(w));
        }
        assert!(!old.may_need_shaping(br#"{"aud":"titl","_met":"icon","ti""#));
    }

    #[test]
    fn latest_passes_everything_through() {
        let raw = br#"{"content":[{"type":"audio","data":"AA==","mimeType":"audio/wav"}],"structuredContent":{"a":1}}"#;
        assert_eq!(result("tools/call", raw, Rev::V2025_11_25), None);
        assert_eq!(result("tools/call", br#"{"content":[{"type":"text","text":"hi"}]}"#, Rev::V2024_11_05), None);
    }

    // Ids and numbers pass byte-exact, even when the result is reshaped.
    #[test]
    fn reshaping_keeps_every_other_byte() {
        let big = "123456789012345678901234567890";
        let raw = format!(r#"{{"content":[{{"type":"text","text":"n","_meta":{{"n":{big}}},"annotations":{{"lastModified":"x","priority":1.50}}}},{{"type":"audio","data":"AA==","mimeType":"audio/wav"}}],"structuredContent":{{"n":{big}}},"n": {big},"resultType":"complete"}}"#);
        let out = String::from_utf8(result("tools/call", raw.as_bytes(), Rev::V2024_11_05).unwrap()).unwrap();
        assert_eq!(
            out,
            format!(r#"{{"content":[{{"type":"text","text":"n","annotations":{{"priority":1.50}}}},{{"type":"text","text":"[audio content (audio/wav) omitted: this client's protocol revision cannot carry audio]"}}],"n": {big}}}"#)
        );
        // No content: the structured value becomes its text, byte for byte.
        let raw = format!(r#"{{"structuredContent":{{"n":{big}}}}}"#);
        let out = String::from_utf8(result("tools/call", raw.as_bytes(), Rev::V2024_11_05).unwrap()).unwrap();
        assert_eq!(out, format!(r#"{{"content":[{{"type":"text","text":"{{\"n\":{big}}}"}}]}}"#));
    }

    #[test]
    fn a_modern_result_reaches_each_legacy_revision_in_its_shape() {
        // (revision, the upstream's result, what that revision's client gets)
        let rows: [(Rev, &[u8], Value); 5] = [
            // Structured content and no content: the structured member becomes content, in place.
            (Rev::V2025_03_26, br#"{"structuredContent":{"a":1},"isError":false}"#, json!({"content":[{"type":"text","text":"{\"a\":1}"}],"isError":false})),
            // The upstream's serverInfo alone in _meta: _meta goes, with resultType and the caching hints.
            (Rev::V2025_11_25, br#"{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"u","version":"1"}},"resultType":"complete","ttlMs":5}"#, json!({"content":[]})),
            // Beside another key: only serverInfo goes.
            (Rev::V2025_11_25, br#"{"content":[],"_meta":{"x":1,"io.modelcontextprotocol/serverInfo":{"name":"u"}},"resultType":"complete"}"#, json!({"content":[],"_meta":{"x":1}})),
            // A non-object structuredContent beside content: text only (the content kept).
            (Rev::V2025_11_25, br#"{"content":[{"type":"text","text":"7"}],"structuredContent":7,"resultType":"complete"}"#, json!({"content":[{"type":"text","text":"7"}]})),
            // A block's icons, its annotations' lastModified and its resource's _meta, for 2025-03-26.
            (Rev::V2025_03_26, br#"{"content":[{"type":"resource","icons":[],"annotations":{"lastModified":"x","priority":1},"resource":{"uri":"a:b","text":"t","_meta":{}}}]}"#, json!({"content":[{"type":"resource","annotations":{"priority":1},"resource":{"uri":"a:b","text":"t"}}]})),
        ];
        for (rev, raw, want) in rows {
            let out: Value = serde_json::from_slice(&result("tools/call", raw, rev).expect("reshaped")).unwrap();
            assert_eq!(out, want, "{rev:?}: {}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn structured_only_becomes_text_before_2025_06_18() {
        let raw = br#"{"content":[],"structuredContent":{"a":1}}"#;
        let out: Value = serde_json::from_slice(&result("tools/call", raw, Rev::V2025_03_26).unwrap()).unwrap();
        assert_eq!(out, json!({"content":[{"type":"text","text":"{\"a\":1}"}]}));
    }
}
