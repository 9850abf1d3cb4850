//! A zero-copy, validated view over one JSON-RPC message.
//!
//! [`Envelope::parse`] validates the bytes once (strict JSON, then the
//! JSON-RPC/MCP envelope rules) and classifies the message; afterwards every
//! accessor is a span lookup into the original buffer. Nothing is copied.
//!
//! Rules enforced (all revisions):
//! - `jsonrpc` must be the string `"2.0"`.
//! - A request has a string or integer `id` (any size; kept byte-exact).
//!   `null`, fractional, boolean, array and object ids are invalid requests
//!   (rows `messages-request-id-string-or-integer`,
//!   `messages-request-id-not-null`).
//! - A notification has a `method` and no `id` (row
//!   `messages-notification-no-id`).
//! - A response has `result` XOR `error` (row
//!   `messages-response-result-xor-error`); a result response needs a valid
//!   id; an error response's id may be absent or `null` (unreadable id, row
//!   `messages-error-response-same-id-unless-unreadable`).
//! - `params` and `result` are objects; `error` has an integer `code` and a
//!   string `message` (row `errors-error-has-code-and-message`).
//!
//! **Duplicate keys.** A key the hub interprets must be unique: a duplicate
//! envelope member (`jsonrpc`, `id`, `method`, `params`, `result`, `error`)
//! is an invalid request (-32600), and a duplicate `params` member that is
//! routed on (`_meta`, `name`, `cursor`, `uri`, `_meta.progressToken`) is
//! invalid params (-32602). Rejecting, rather than picking the first or last
//! occurrence, keeps the hub from routing on one value while the peer acts on
//! another. Duplicates elsewhere are passed through untouched.
//!
//! A top-level array is a batch: [`Message::parse`] returns it as a
//! [`Batch`], [`Envelope::parse`] refuses it. Batches are only legal in
//! 2025-03-26 ([`Batch::allowed_in`]).

use crate::error::ErrorCode;
use crate::json::{self, JsonError, JsonStr, JsonValue, Kind as JsonKind, Lookup, Span};
use crate::meta::keys::{PROGRESS_TOKEN_KEY, PROTOCOL_VERSION_KEY, RELATED_TASK_KEY};
use crate::method::Method;
use crate::revision::{EraSignals, Feature, Revision};
use crate::rewrite::{write_error, Overflow};

/// The four kinds of JSON-RPC message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `method` and `id`.
    Request,
    /// `method`, no `id`.
    Notification,
    /// `result` and `id`.
    Result,
    /// `error`, and `id` unless it could not be read.
    Error,
}

/// Why bytes are not a valid message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Not JSON at all (-32700).
    NotJson(JsonError),
    /// A JSON array where a single message was required.
    Batch,
    /// An empty batch `[]`.
    EmptyBatch,
    /// JSON, but not an object.
    NotObject,
    /// A duplicate envelope member.
    DuplicateMember,
    /// `jsonrpc` missing or not `"2.0"`.
    BadVersion,
    /// A request whose id is `null`.
    NullId,
    /// An id that is not a string or an integer.
    BadId,
    /// `method` not a string.
    BadMethod,
    /// A response without an id.
    MissingId,
    /// Both `result` and `error`, or `method` together with either.
    Ambiguous,
    /// No `method`, `result` or `error`.
    NoKind,
    /// `params` not an object.
    BadParams,
    /// `result` not an object.
    BadResult,
    /// `error` not an object with integer `code` and string `message`.
    BadError,
    /// A routed `params` member occurs twice (-32602).
    DuplicateParam,
    /// `params._meta` not an object (-32602).
    BadMeta,
    /// The buffer holding the message is over 4 GiB, past the offsets an
    /// envelope keeps (no transport's frame cap comes near it).
    TooLarge,
}

/// A message that cannot be accepted, with what is needed to answer it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvelopeError<'a> {
    /// What is wrong.
    pub reason: Reason,
    /// The request's id, when it could be read and is valid (string or
    /// integer), so the error response can echo it.
    pub id: Option<JsonValue<'a>>,
}

impl<'a> EnvelopeError<'a> {
    fn new(reason: Reason) -> Self {
        EnvelopeError { reason, id: None }
    }

    /// The JSON-RPC error to answer with: -32700 when the bytes are not JSON,
    /// -32602 for invalid routed params, -32600 otherwise.
    pub fn error_code(&self) -> ErrorCode {
        match self.reason {
            Reason::NotJson(_) => ErrorCode::ParseError,
            Reason::DuplicateParam | Reason::BadMeta => ErrorCode::InvalidParams,
            _ => ErrorCode::InvalidRequest,
        }
    }

    /// The integer code of [`EnvelopeError::error_code`].
    pub fn code(&self) -> i32 {
        self.error_code().code()
    }

    /// A concise message for the error response.
    pub fn message(&self) -> &'static str {
        match self.reason {
            Reason::NotJson(_) => "Parse error: message is not valid JSON",
            Reason::Batch => {
                "Invalid request: JSON-RPC batches are not supported in this protocol revision"
            }
            Reason::EmptyBatch => "Invalid request: empty batch",
            Reason::NotObject => "Invalid request: message is not a JSON object",
            Reason::DuplicateMember => "Invalid request: duplicate member",
            Reason::BadVersion => "Invalid request: jsonrpc must be \"2.0\"",
            Reason::NullId => "Invalid request: request id must not be null",
            Reason::BadId => "Invalid request: id must be a string or an integer",
            Reason::BadMethod => "Invalid request: method must be a string",
            Reason::MissingId => "Invalid request: response without id",
            Reason::Ambiguous => {
                "Invalid request: message has more than one of method, result, error"
            }
            Reason::NoKind => "Invalid request: message has no method, result or error",
            Reason::BadParams => "Invalid request: params must be an object",
            Reason::BadResult => "Invalid request: result must be an object",
            Reason::BadError => {
                "Invalid request: error must have an integer code and a string message"
            }
            Reason::DuplicateParam => "Invalid params: duplicate member",
            Reason::BadMeta => "Invalid params: _meta must be an object",
            Reason::TooLarge => "Invalid request: message over 4 GiB",
        }
    }

    /// The raw bytes of the id to echo, if any.
    pub fn id_bytes(&self) -> Option<&'a [u8]> {
        self.id.map(|v| v.bytes())
    }

    /// Writes the error response for this message into `out` (the id echoed
    /// when readable, omitted otherwise). Notifications must not be answered
    /// (row `messages-notification-no-response`): only call this for
    /// messages that could be requests.
    pub fn write_response(&self, out: &mut [u8]) -> Result<usize, Overflow> {
        write_error(
            self.id_bytes(),
            self.code().into(),
            self.message(),
            None,
            out,
        )
    }
}

/// A validated JSON-RPC message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope<'a> {
    msg: JsonValue<'a>,
    kind: Kind,
    id: Slot,
    method: Slot,
    call: Option<Method<'a>>,
    params: Slot,
    result: Slot,
    error: Slot,
    error_code: i64,
    meta: Slot,
    name: Slot,
    cursor: Slot,
    uri: Slot,
    task: Slot,
    is_error: Slot,
    result_type: Slot,
    progress_token: Slot,
    protocol_version: Slot,
    related_task: Slot,
}

/// Where an envelope keeps a value it read: its offsets in the message's
/// buffer and its kind, 12 bytes where a [`JsonValue`] takes 40. An
/// envelope keeps sixteen and is moved a few times on its way through the
/// hub, so its size is copied that often per message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    start: u32,
    end: u32,
    kind: Option<JsonKind>,
}

impl Slot {
    const NONE: Slot = Slot { start: 0, end: 0, kind: None };

    /// `v`'s place; its offsets fit, as [`Envelope::from_lookup`] refuses a
    /// buffer over `u32::MAX` bytes.
    fn of(v: Option<JsonValue<'_>>) -> Slot {
        v.map_or(Slot::NONE, |v| Slot { start: v.span().start as u32, end: v.span().end as u32, kind: Some(v.kind()) })
    }

    fn is_some(self) -> bool {
        self.kind.is_some()
    }
}

/// The members of a message the envelope reads, in the order of
/// [`Envelope::from_lookup`]'s destructuring.
const MEMBERS: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

/// The `params` members of a request or notification read with it, each
/// of which must be unique: the hub routes and acts on them.
pub const ROUTED_PARAMS: [&str; 5] = ["_meta", "name", "cursor", "uri", "task"];

/// The `result` members read with a response, first occurrence each: what
/// the hub learns of every answer (a tool error, a 2026-07-28 result's type).
pub const RESULT_MEMBERS: [&str; 2] = ["isError", "resultType"];

/// What a message's envelope reads of it: its [`MEMBERS`], and the
/// [`ROUTED_PARAMS`] of its params and [`RESULT_MEMBERS`] of its result.
struct Found<'a> {
    top: Lookup<'a, 6>,
    params: Lookup<'a, 5>,
    result: Lookup<'a, 2>,
}

impl<'a> Found<'a> {
    fn new() -> Self {
        Found { top: Lookup::new(), params: Lookup::new(), result: Lookup::new() }
    }

    /// Takes member `m` (of the member `parent`, or of the message).
    fn offer(&mut self, parent: Option<json::JsonStr<'a>>, m: json::Member<'a>) {
        match parent {
            None => self.top.offer(&MEMBERS, m),
            Some(p) if p.eq_str("params") => self.params.offer(&ROUTED_PARAMS, m),
            Some(p) if p.eq_str("result") => self.result.offer(&RESULT_MEMBERS, m),
            Some(_) => {}
        }
    }

    /// The same read from an already scanned message, by walking it.
    fn walk(msg: JsonValue<'a>) -> Self {
        let mut found = Found::new();
        for m in msg.members() {
            if m.value.kind() == JsonKind::Object && (m.key.eq_str("params") || m.key.eq_str("result")) {
                m.value.members().for_each(|inner| found.offer(Some(m.key), inner));
            }
            found.offer(None, m);
        }
        found
    }
}

/// Validates `buf` as JSON and reads what [`Found`] holds in the same pass,
/// into `found` (filled in place: it is over 500 bytes).
fn scan<'a>(buf: &'a [u8], found: &mut Found<'a>) -> Result<JsonValue<'a>, EnvelopeError<'a>> {
    json::parse_members(buf, &mut |parent, m| found.offer(parent, m)).map_err(|e| EnvelopeError::new(Reason::NotJson(e)))
}

fn is_valid_id(v: &JsonValue<'_>) -> bool {
    v.kind() == JsonKind::String || v.is_integer()
}

impl<'a> Envelope<'a> {
    /// Parses exactly one message (not a batch) from `buf`, which may be
    /// surrounded by JSON whitespace.
    pub fn parse(buf: &'a [u8]) -> Result<Self, EnvelopeError<'a>> {
        let mut found = Found::new();
        let v = scan(buf, &mut found)?;
        Self::from_lookup(v, &found)
    }

    /// Validates an already scanned value as one message.
    pub fn from_value(msg: JsonValue<'a>) -> Result<Self, EnvelopeError<'a>> {
        Self::from_lookup(msg, &Found::walk(msg))
    }

    /// Validates `msg` as one message, given what [`Found`] read of it.
    fn from_lookup(msg: JsonValue<'a>, read: &Found<'a>) -> Result<Self, EnvelopeError<'a>> {
        if u32::try_from(msg.buf().len()).is_err() {
            return Err(EnvelopeError::new(Reason::TooLarge));
        }
        let found = &read.top;
        match msg.kind() {
            JsonKind::Object => {}
            JsonKind::Array => return Err(EnvelopeError::new(Reason::Batch)),
            _ => return Err(EnvelopeError::new(Reason::NotObject)),
        }
        let [jsonrpc, id, method, params, result, error] = found.values;
        // The id is echoed only when it was read unambiguously and is valid.
        let echo = id.filter(|id| !found.duplicate && is_valid_id(id));
        let err = |reason| EnvelopeError { reason, id: echo };
        let fail = |reason| Err(err(reason));
        if found.duplicate {
            return fail(Reason::DuplicateMember);
        }
        let version_ok = jsonrpc
            .and_then(|v| v.as_str())
            .is_some_and(|s| s.eq_str("2.0"));
        if !version_ok {
            return fail(Reason::BadVersion);
        }
        let kind = match (method, result, error) {
            (Some(_), None, None) if id.is_some() => Kind::Request,
            (Some(_), None, None) => Kind::Notification,
            (None, Some(_), None) => Kind::Result,
            (None, None, Some(_)) => Kind::Error,
            (None, None, None) => return fail(Reason::NoKind),
            _ => return fail(Reason::Ambiguous),
        };
        match (kind, id) {
            (Kind::Request, Some(id)) if id.kind() == JsonKind::Null => {
                return fail(Reason::NullId)
            }
            (Kind::Result, None) => return fail(Reason::MissingId),
            (Kind::Error, Some(id)) if id.kind() == JsonKind::Null => {}
            (_, Some(id)) if !is_valid_id(&id) => return fail(Reason::BadId),
            _ => {}
        }
        let not = |v: Option<JsonValue<'_>>, k| v.is_some_and(|v| v.kind() != k);
        if not(method, JsonKind::String) {
            return fail(Reason::BadMethod);
        }
        if not(params, JsonKind::Object) {
            return fail(Reason::BadParams);
        }
        if not(result, JsonKind::Object) {
            return fail(Reason::BadResult);
        }
        let mut error_code = 0;
        if let Some(e) = error {
            let Ok([Some(code), Some(message)]) = e.lookup(["code", "message"]).unique() else {
                return fail(Reason::BadError);
            };
            match code.as_i64() {
                Some(c) if message.kind() == JsonKind::String => error_code = c,
                _ => return fail(Reason::BadError),
            }
        }
        // Routed params are read on requests and notifications only: a stray
        // `params` on a response is not ours to judge.
        // `task` too: the hub acts on it, so one reading of it is all.
        let [meta, name, cursor, uri, task] = match params.filter(|_| method.is_some()) {
            Some(_) => read.params.unique(),
            None => Ok([None; 5]),
        }
        .map_err(|_| err(Reason::DuplicateParam))?;
        let (mut progress_token, mut protocol_version, mut related_task) = (None, None, None);
        if let Some(mv) = meta {
            if mv.kind() != JsonKind::Object {
                return fail(Reason::BadMeta);
            }
            progress_token = mv
                .get_unique(PROGRESS_TOKEN_KEY)
                .map_err(|_| err(Reason::DuplicateParam))?;
            // A duplicate version is the -32602 of `meta::validate_request_meta`.
            [protocol_version, related_task] =
                mv.lookup([PROTOCOL_VERSION_KEY, RELATED_TASK_KEY]).values;
        }
        let call = method.and_then(|m| m.as_str()).map(Method::parse);
        let [is_error, result_type] = match result {
            Some(_) => read.result.values,
            None => [None; 2],
        };
        Ok(Envelope {
            msg,
            kind,
            id: Slot::of(id.filter(is_valid_id)),
            method: Slot::of(method),
            call,
            params: Slot::of(params),
            result: Slot::of(result),
            error: Slot::of(error),
            error_code,
            meta: Slot::of(meta),
            name: Slot::of(name),
            cursor: Slot::of(cursor),
            uri: Slot::of(uri),
            task: Slot::of(task),
            is_error: Slot::of(is_error),
            result_type: Slot::of(result_type),
            progress_token: Slot::of(progress_token),
            protocol_version: Slot::of(protocol_version),
            related_task: Slot::of(related_task),
        })
    }

    /// The value kept in `slot`.
    fn get(&self, slot: Slot) -> Option<JsonValue<'a>> {
        let (start, end) = (slot.start as usize, slot.end as usize);
        slot.kind.map(|kind| JsonValue::at(self.msg.buf(), kind, Span::new(start, end)))
    }

    /// The kind of message.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The buffer the message lies in (for a batch element: the whole batch).
    /// All spans handed out are offsets into this buffer.
    pub fn buf(&self) -> &'a [u8] {
        self.msg.buf()
    }

    /// The span of the whole message object.
    pub fn span(&self) -> Span {
        self.msg.span()
    }

    /// The message's own bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.msg.bytes()
    }

    /// The message as a JSON object value.
    pub fn value(&self) -> JsonValue<'a> {
        self.msg
    }

    /// The id (string or integer), byte-exact; `None` for notifications and
    /// for error responses whose id is absent or `null`. Echo it as
    /// [`Envelope::id_bytes`]: a string id with escapes (`"\u0061"`) is not
    /// normalized, so compare ids as raw bytes only within one peer.
    pub fn id(&self) -> Option<JsonValue<'a>> {
        self.get(self.id)
    }

    /// The id's raw JSON bytes (e.g. `42` or `"abc"`).
    pub fn id_bytes(&self) -> Option<&'a [u8]> {
        self.get(self.id).map(|v| v.bytes())
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<JsonStr<'a>> {
        self.get(self.method).and_then(|v| v.as_str())
    }

    /// The method as `&str` when it contains no escape sequence (almost
    /// always); see [`Envelope::method_is`] for an escape-proof comparison.
    pub fn method_str(&self) -> Option<&'a str> {
        self.method().and_then(|m| m.as_str())
    }

    /// The method of a request or notification as a typed [`Method`],
    /// classified once when the message was parsed.
    pub fn call(&self) -> Option<Method<'a>> {
        self.call
    }

    /// Whether the method equals `name` (escape sequences decoded).
    pub fn method_is(&self, name: &str) -> bool {
        self.method().is_some_and(|m| m.eq_str(name))
    }

    /// The span of the method string, including quotes.
    pub fn method_span(&self) -> Option<Span> {
        self.get(self.method).map(|v| v.span())
    }

    /// `params` (an object), if present.
    pub fn params(&self) -> Option<JsonValue<'a>> {
        self.get(self.params)
    }

    /// `result` (an object) of a result response.
    pub fn result(&self) -> Option<JsonValue<'a>> {
        self.get(self.result)
    }

    /// The `result` member `key`: one of [`RESULT_MEMBERS`] as read with
    /// the message, any other looked up (first occurrence either way).
    pub fn result_member(&self, key: &str) -> Option<JsonValue<'a>> {
        match key {
            "isError" => self.get(self.is_error),
            "resultType" => self.get(self.result_type),
            _ => self.get(self.result).and_then(|r| r.get(key)),
        }
    }

    /// `error` (an object) of an error response.
    pub fn error(&self) -> Option<JsonValue<'a>> {
        self.get(self.error)
    }

    /// `error.code` of an error response.
    pub fn error_code(&self) -> Option<i64> {
        self.error.is_some().then_some(self.error_code)
    }

    /// `params._meta` (an object), if present.
    pub fn meta(&self) -> Option<JsonValue<'a>> {
        self.get(self.meta)
    }

    /// `params.name` (any JSON type), if present.
    pub fn name(&self) -> Option<JsonValue<'a>> {
        self.get(self.name)
    }

    /// `params.cursor`, if present.
    pub fn cursor(&self) -> Option<JsonValue<'a>> {
        self.get(self.cursor)
    }

    /// `params.uri`, if present.
    pub fn uri(&self) -> Option<JsonValue<'a>> {
        self.get(self.uri)
    }

    /// `params._meta.progressToken` (a request opting in to progress), if
    /// present. The token of a `notifications/progress` is
    /// `param("progressToken")`.
    pub fn progress_token(&self) -> Option<JsonValue<'a>> {
        self.get(self.progress_token)
    }

    /// `params._meta["io.modelcontextprotocol/protocolVersion"]`: present on
    /// every modern (2026-07-28) request (any JSON type; validated by
    /// [`crate::meta::validate_request_meta`]).
    pub fn protocol_version(&self) -> Option<JsonValue<'a>> {
        self.get(self.protocol_version)
    }

    /// `params._meta["io.modelcontextprotocol/related-task"]` (2025-11-25
    /// tasks), if present.
    pub fn related_task(&self) -> Option<JsonValue<'a>> {
        self.get(self.related_task)
    }

    /// `params.task` (a task-augmented request), if present.
    pub fn task(&self) -> Option<JsonValue<'a>> {
        self.get(self.task)
    }

    /// The `params` member `key`: one of [`ROUTED_PARAMS`] as read with the
    /// message, any other the first occurrence.
    pub fn param(&self, key: &str) -> Option<JsonValue<'a>> {
        match key {
            "_meta" => self.get(self.meta),
            "name" => self.get(self.name),
            "cursor" => self.get(self.cursor),
            "uri" => self.get(self.uri),
            "task" => self.get(self.task),
            _ => self.get(self.params).and_then(|p| p.get(key)),
        }
    }
}

impl EraSignals for Envelope<'_> {
    fn is_request(&self) -> bool {
        self.kind() == Kind::Request
    }

    fn carries_protocol_version(&self) -> bool {
        self.protocol_version.is_some()
    }

    fn typed_method(&self) -> Option<Method<'_>> {
        self.call
    }
}

/// A top-level JSON array of messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch<'a> {
    array: JsonValue<'a>,
}

impl<'a> Batch<'a> {
    /// Whether a batch may be received (and must be, row
    /// `messages-batch-may-send-must-receive`) in `rev`: 2025-03-26 only.
    pub fn allowed_in(rev: Revision) -> bool {
        rev.supports(Feature::Batch)
    }

    /// The elements, each validated as a message. Element spans are offsets
    /// into the batch's buffer.
    pub fn elements(&self) -> impl Iterator<Item = Result<Envelope<'a>, EnvelopeError<'a>>> + 'a {
        self.array.elements().map(|v| match v.kind() {
            // A batch inside a batch is not a message.
            JsonKind::Array => Err(EnvelopeError::new(Reason::NotObject)),
            _ => Envelope::from_value(v),
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.array.elements().count()
    }

    /// Always false: empty batches are rejected by [`Message::parse`].
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole array.
    pub fn value(&self) -> JsonValue<'a> {
        self.array
    }
}

/// One frame's worth of JSON-RPC: a single message or a batch.
// `Batch` is much smaller than `Envelope`; boxing is not an option without an
// allocator, and a `Message` only lives on the stack while being dispatched.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message<'a> {
    /// A single message.
    Single(Envelope<'a>),
    /// A non-empty batch (legal only where [`Batch::allowed_in`]).
    Batch(Batch<'a>),
}

impl<'a> Message<'a> {
    /// Parses a single message or a non-empty batch. The batch's elements are
    /// validated when iterated, so one bad element does not hide the others.
    pub fn parse(buf: &'a [u8]) -> Result<Self, EnvelopeError<'a>> {
        let mut found = Found::new();
        let v = scan(buf, &mut found)?;
        if v.kind() != JsonKind::Array {
            return Envelope::from_lookup(v, &found).map(Message::Single);
        }
        if v.elements().next().is_none() {
            return Err(EnvelopeError::new(Reason::EmptyBatch));
        }
        Ok(Message::Batch(Batch { array: v }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Envelope<'_> {
        Envelope::parse(s.as_bytes()).unwrap_or_else(|e| panic!("{s}: {e:?}"))
    }

    fn e(s: &str) -> EnvelopeError<'_> {
        Envelope::parse(s.as_bytes()).unwrap_err()
    }

    #[test]
    fn routed_params_are_read_once_and_must_be_unique() {
        let m = p(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"task":1},"task":{"ttl":5}}}"#);
        assert_eq!(m.task().unwrap().bytes(), br#"{"ttl":5}"#);
        assert_eq!(m.param("task"), m.task());
        assert_eq!(m.param("name"), m.name());
        assert_eq!(m.param("arguments").unwrap().bytes(), br#"{"task":1}"#);
        let dup = e(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","task":{},"task":{"ttl":5}}}"#);
        assert_eq!(dup.reason, Reason::DuplicateParam);
        assert_eq!(dup.code(), -32602);
        // A response's params are not read.
        let r = p(r#"{"jsonrpc":"2.0","id":1,"result":{},"params":{"task":{}}}"#);
        assert!(r.task().is_none() && r.param("task").is_none());
    }

    // covers: messages-request-id-string-or-integer
    #[test]
    fn request() {
        let m = p(
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":{"name":"gh__issue","_meta":{"progressToken":"t1"},"arguments":{}}}"#,
        );
        assert_eq!(m.kind(), Kind::Request);
        assert_eq!(m.id_bytes(), Some(&b"123456789012345678901234567890"[..]));
        assert_eq!(m.method_str(), Some("tools/call"));
        assert!(m.method_is("tools/call"));
        assert_eq!(m.call(), Some(Method::ToolsCall));
        assert!(m.protocol_version().is_none() && m.related_task().is_none());
        assert_eq!(m.name().unwrap().bytes(), b"\"gh__issue\"");
        assert_eq!(m.progress_token().unwrap().bytes(), b"\"t1\"");
        assert_eq!(m.meta().unwrap().kind(), JsonKind::Object);
        assert!(m.cursor().is_none() && m.uri().is_none() && m.result().is_none());
        assert_eq!(m.param("arguments").unwrap().bytes(), b"{}");
        let s = p(
            r#" {"id":"a\"b","method":"res\/read","jsonrpc":"2.0","params":{"uri":"file:///x","cursor":"c"}} "#,
        );
        assert_eq!(s.id_bytes(), Some(&br#""a\"b""#[..]));
        assert_eq!(s.call(), Some(Method::Other(s.method().unwrap())));
        assert_eq!(s.method_str(), None);
        assert!(s.method_is("res/read"));
        assert_eq!(
            s.uri().unwrap().as_str().unwrap().as_str(),
            Some("file:///x")
        );
        assert_eq!(s.cursor().unwrap().bytes(), b"\"c\"");
        assert_eq!(s.bytes(), &s.buf()[1..s.buf().len() - 1]);
        assert_eq!(
            p(r#"{"jsonrpc":"2.0","id":-7,"method":"ping"}"#).id_bytes(),
            Some(&b"-7"[..])
        );
    }

    #[test]
    fn meta_keys_are_found_once() {
        let m = p(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/related-task":{"taskId":"t"},"progressToken":2}}}"#,
        );
        assert_eq!(m.protocol_version().unwrap().bytes(), br#""2026-07-28""#);
        assert_eq!(m.related_task().unwrap().bytes(), br#"{"taskId":"t"}"#);
        assert_eq!(m.progress_token().unwrap().bytes(), b"2");
    }

    // covers: messages-notification-no-id
    #[test]
    fn notification() {
        let m = p(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":5,"progress":1}}"#,
        );
        assert_eq!(m.kind(), Kind::Notification);
        assert!(m.id().is_none());
        assert!(m.progress_token().is_none());
        assert_eq!(m.param("progressToken").unwrap().bytes(), b"5");
    }

    // covers: messages-result-response-has-result, errors-error-has-code-and-message, messages-error-response-same-id-unless-unreadable
    #[test]
    fn responses() {
        let r = p(r#"{"jsonrpc":"2.0","id":"x","result":{"tools":[]}}"#);
        assert_eq!(r.kind(), Kind::Result);
        assert_eq!(r.result().unwrap().bytes(), br#"{"tools":[]}"#);
        let er =
            p(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"nope","data":[1]}}"#);
        assert_eq!(er.kind(), Kind::Error);
        assert_eq!(er.error_code(), Some(-32601));
        assert_eq!(r.error_code(), None);
        assert!(
            p(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#)
                .id()
                .is_none()
        );
        assert!(
            p(r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"x"}}"#)
                .id()
                .is_none()
        );
    }

    // covers: messages-request-id-not-null, messages-response-result-xor-error
    #[test]
    fn invalid_messages() {
        use Reason::*;
        let cases: &[(&str, Reason, i32, Option<&str>)] = &[
            (
                "{",
                NotJson(JsonError {
                    kind: json::ErrorKind::UnexpectedEnd,
                    offset: 1,
                }),
                -32700,
                None,
            ),
            ("[1]", Batch, -32600, None),
            ("1", NotObject, -32600, None),
            (
                r#"{"jsonrpc":"1.0","id":1,"method":"a"}"#,
                BadVersion,
                -32600,
                Some("1"),
            ),
            (
                r#"{"jsonrpc":2.0,"id":1,"method":"a"}"#,
                BadVersion,
                -32600,
                Some("1"),
            ),
            (r#"{"id":1,"method":"a"}"#, BadVersion, -32600, Some("1")),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"a"}"#,
                NullId,
                -32600,
                None,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1.5,"method":"a"}"#,
                BadId,
                -32600,
                None,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1e3,"method":"a"}"#,
                BadId,
                -32600,
                None,
            ),
            (
                r#"{"jsonrpc":"2.0","id":true,"method":"a"}"#,
                BadId,
                -32600,
                None,
            ),
            (
                r#"{"jsonrpc":"2.0","id":{},"method":"a"}"#,
                BadId,
                -32600,
                None,
            ),
            (
                r#"{"jsonrpc":"2.0","id":[1],"result":{}}"#,
                BadId,
                -32600,
                None,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
                BadMethod,
                -32600,
                Some("1"),
            ),
            (r#"{"jsonrpc":"2.0","result":{}}"#, MissingId, -32600, None),
            (
                r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
                BadId,
                -32600,
                None,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}"#,
                Ambiguous,
                -32600,
                Some("1"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"a","result":{}}"#,
                Ambiguous,
                -32600,
                Some("1"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":"q"}"#,
                NoKind,
                -32600,
                Some("\"q\""),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"a","params":[1]}"#,
                BadParams,
                -32600,
                Some("1"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":5}"#,
                BadResult,
                -32600,
                Some("1"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}"#,
                BadError,
                -32600,
                Some("1"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}"#,
                BadError,
                -32600,
                Some("1"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#,
                BadError,
                -32600,
                Some("1"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"code":2,"message":""}}"#,
                BadError,
                -32600,
                Some("1"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"a"}"#,
                DuplicateMember,
                -32600,
                None,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"a","\u006dethod":"b"}"#,
                DuplicateMember,
                -32600,
                None,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"a","params":{"name":"x","name":"y"}}"#,
                DuplicateParam,
                -32602,
                Some("1"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"a","params":{"_meta":{"progressToken":1,"progressToken":2}}}"#,
                DuplicateParam,
                -32602,
                Some("1"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":"z","method":"a","params":{"_meta":1}}"#,
                BadMeta,
                -32602,
                Some("\"z\""),
            ),
        ];
        for (s, reason, code, id) in cases {
            let err = e(s);
            assert_eq!(err.reason, *reason, "{s}");
            assert_eq!(err.code(), *code, "{s}");
            assert_eq!(err.id_bytes(), id.map(str::as_bytes), "{s}");
            assert!(!err.message().is_empty());
        }
    }

    // covers: messages-batch-may-send-must-receive, stdio-message-is-single, stdio-message-may-be-batch
    #[test]
    fn batches() {
        use Revision::*;
        assert!(Batch::allowed_in(V2025_03_26));
        for r in [V2024_11_05, V2025_06_18, V2025_11_25, V2026_07_28] {
            assert!(!Batch::allowed_in(r));
        }
        let buf =
            br#"[{"jsonrpc":"2.0","id":1,"method":"a"}, {"jsonrpc":"2.0","method":"n"}, 7, []]"#;
        let Message::Batch(b) = Message::parse(buf).unwrap() else {
            panic!()
        };
        assert_eq!(b.len(), 4);
        assert!(!b.is_empty());
        let els: Vec<_> = b.elements().collect();
        let first = els[0].unwrap();
        assert_eq!(first.kind(), Kind::Request);
        assert_eq!(first.id().unwrap().span().slice(buf), b"1");
        assert_eq!(first.buf(), &buf[..]);
        assert_eq!(els[1].unwrap().kind(), Kind::Notification);
        assert_eq!(els[2].unwrap_err().reason, Reason::NotObject);
        assert_eq!(els[3].unwrap_err().reason, Reason::NotObject);
        assert_eq!(
            Message::parse(b" [ ] ").unwrap_err().reason,
            Reason::EmptyBatch
        );
        assert!(matches!(
            Message::parse(br#"{"jsonrpc":"2.0","method":"n"}"#),
            Ok(Message::Single(_))
        ));
        assert_eq!(Message::parse(b"[").unwrap_err().code(), -32700);
    }

    #[test]
    fn an_envelope_stays_small_enough_to_move() {
        // It is moved a few times per message on the hub's path: its
        // sixteen values are kept as offsets (`Slot`), not as `JsonValue`s.
        assert!(core::mem::size_of::<Envelope<'_>>() <= 256, "{}", core::mem::size_of::<Envelope<'_>>());
    }
}
