//! JSON-RPC messages as byte spans, on the core `envelope`/`json`/`rewrite`
//! modules: classify one message, find members, splice, write envelopes.
//!
//! The hub validates a message once (core `Envelope`) and then works with byte
//! ranges, so results are forwarded as the upstream's own bytes with only the
//! id replaced, and request ids (any string, any integer, of any size) are
//! restored to the client byte for byte. Everything the hub does to message
//! bytes goes through this module.

use std::borrow::Cow;
use std::ops::Range;

use mcpx_core::envelope::{Envelope, EnvelopeError, Message, Reason};
use mcpx_core::json::{self, JsonStr, Span};
use mcpx_core::method::Method;
use mcpx_core::error::ErrorCode;
use mcpx_core::rewrite::{self, Splice};

use crate::bytes::spare;
use crate::bytes::written::{self, framed, grow, grow_into};

pub(super) use mcpx_core::envelope::Kind;

/// One validated JSON-RPC message; ranges index `raw`.
#[derive(Clone, Debug)]
pub(super) struct Msg<'a> {
    /// The checked view this was made from (`_meta` keys, params).
    pub env: Envelope<'a>,
    pub raw: &'a [u8],
    pub kind: Kind,
    /// The id value (a string with its quotes, or an integer), absent on
    /// notifications and on error responses whose id is null or missing.
    pub id: Option<Range<usize>>,
    /// The method, typed once here: everything after matches on it. A
    /// response (no method) has `Method::Other` of the empty string.
    pub call: Method<'a>,
    /// The method string, escapes decoded (empty on responses): what the
    /// hub echoes and forwards.
    pub method: Cow<'a, str>,
    pub params: Option<Range<usize>>,
    pub result: Option<Range<usize>>,
    pub error: Option<Range<usize>>,
}

fn range(s: Span) -> Range<usize> {
    s.start..s.end
}

impl<'a> Msg<'a> {
    /// The `taskId` of the message's related-task `_meta`, from the view.
    pub fn related_task_id(&self) -> Option<String> {
        self.env.related_task().and_then(|t| t.get("taskId")).and_then(|v| string_at(v.bytes(), 0..v.bytes().len()))
    }

    pub fn id_bytes(&self) -> Option<&'a [u8]> {
        self.id.clone().map(|r| &self.raw[r])
    }
    pub fn result_bytes(&self) -> Option<&'a [u8]> {
        self.result.clone().map(|r| &self.raw[r])
    }
    pub fn error_bytes(&self) -> Option<&'a [u8]> {
        self.error.clone().map(|r| &self.raw[r])
    }
    /// `params` parsed as a tree (`{}` when absent).
    pub fn params_value(&self) -> serde_json::Value {
        self.params
            .clone()
            .and_then(|r| serde_json::from_slice(&self.raw[r]).ok())
            .unwrap_or_else(|| serde_json::json!({}))
    }
    /// The value span of `path` (a chain of keys) inside `params`: a lookup
    /// in the view, no second scan.
    pub fn param(&self, path: &[&str]) -> Option<Range<usize>> {
        let (first, rest) = path.split_first()?;
        let mut cur = self.env.param(first)?;
        for key in rest {
            cur = cur.get(key)?;
        }
        Some(range(cur.span()))
    }
    /// The id as an unsigned integer, when it is one (ids the hub issued).
    pub fn id_u64(&self) -> Option<u64> {
        id_u64(self.id_bytes()?)
    }
}

/// An id the hub issued: a plain integer (tolerating a peer that echoes it
/// back as a string of digits).
pub(super) fn id_u64(b: &[u8]) -> Option<u64> {
    let b = if b.len() >= 2 && b[0] == b'"' && b[b.len() - 1] == b'"' { &b[1..b.len() - 1] } else { b };
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// Why a message was refused: the code and message to answer with, and the
/// id when it could be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Bad {
    pub code: ErrorCode,
    pub message: &'static str,
    pub id: Option<Vec<u8>>,
}

/// Is `raw` an (invalid) notification: an object with a `method` and no `id`?
/// Those are never answered (row `messages-notification-no-response`).
pub(super) fn is_notification_shaped(raw: &[u8]) -> bool {
    json::parse(raw).is_ok_and(|v| notification_shaped(&v))
}

/// [`is_notification_shaped`] of a value already scanned (a batch element).
pub(super) fn notification_shaped(v: &json::JsonValue<'_>) -> bool {
    v.kind() == json::Kind::Object && v.get("method").is_some() && v.get("id").is_none()
}

/// The answers to a JSON-RPC batch: one array of them, in the order given.
pub fn batch_array(answers: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + answers.iter().map(|a| a.len() + 1).sum::<usize>());
    out.push(b'[');
    for (i, a) in answers.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(a);
    }
    out.push(b']');
    out
}

/// Validates and classifies one message.
pub(super) fn parse(raw: &[u8]) -> Result<Msg<'_>, Bad> {
    Envelope::parse(raw).map(view).map_err(|e| bad(&e))
}

/// A client's frame: one message, or a batch (whose elements are checked
/// as they are read).
pub(super) fn parse_frame(raw: &[u8]) -> Result<Message<'_>, Bad> {
    Message::parse(raw).map_err(|e| bad(&e))
}

/// The error answering a message that failed its checks.
pub(super) fn bad(e: &EnvelopeError<'_>) -> Bad {
    Bad {
        code: e.error_code(),
        message: match e.reason {
            Reason::Batch => "Invalid request: JSON-RPC batches are not supported",
            _ => e.message(),
        },
        id: e.id_bytes().map(<[u8]>::to_vec),
    }
}

/// The hub's handle on a checked view: spans into the view's buffer (for a
/// batch element, the whole batch), nothing copied unless the method has
/// escape sequences.
pub(super) fn view(env: Envelope<'_>) -> Msg<'_> {
    let raw = env.buf();
    let method = match env.method() {
        None => Cow::Borrowed(""),
        Some(m) => match m.as_str() {
            Some(plain) => Cow::Borrowed(plain),
            None => Cow::Owned(String::from_utf8_lossy(&m.decoded().collect::<Vec<u8>>()).into_owned()),
        },
    };
    let id = env.id().filter(|v| v.kind() != json::Kind::Null).map(|v| range(v.span()));
    Msg {
        env,
        raw,
        kind: env.kind(),
        id,
        call: env.call().unwrap_or(Method::Other(JsonStr::EMPTY)),
        method,
        params: env.params().map(|v| range(v.span())),
        result: env.result().map(|v| range(v.span())),
        error: env.error().map(|v| range(v.span())),
    }
}

/// The value span of `path` (a chain of object keys) inside the (validated)
/// object at `obj`.
pub(super) fn find(b: &[u8], obj: Range<usize>, path: &[&str]) -> Option<Range<usize>> {
    let mut cur = json::skip_value(b, obj.start).ok()?;
    for key in path {
        cur = cur.get(key)?;
    }
    Some(range(cur.span()))
}

/// A JSON string value at `r` (quoted), unescaped.
pub(super) fn string_at(b: &[u8], r: Range<usize>) -> Option<String> {
    serde_json::from_slice(&b[r]).ok()
}

/// The JSON string at `r` of `b`, borrowed when nothing in it needs
/// decoding (no escape, no control character: the common name or URI).
pub(super) fn str_at(b: &[u8], r: Range<usize>) -> Option<Cow<'_, str>> {
    match &b[r.clone()] {
        [b'"', inner @ .., b'"'] if inner.iter().all(|c| *c >= 0x20 && *c != b'\\') => std::str::from_utf8(inner).ok().map(Cow::Borrowed),
        _ => string_at(b, r).map(Cow::Owned),
    }
}

/// `b` with each range replaced by its bytes (ranges must not overlap).
pub(super) fn splice(b: &[u8], mut edits: Vec<(Range<usize>, Vec<u8>)>) -> Vec<u8> {
    edits.sort_by_key(|(r, _)| r.start);
    let splices: Vec<Splice> = edits.iter().map(|(r, with)| Splice::raw(Span::new(r.start, r.end), with)).collect();
    apply(b, &splices)
}

/// `src` with `splices` applied (ascending, non-overlapping); `src` itself
/// when they do not fit it.
pub(super) fn apply(src: &[u8], splices: &[Splice<'_>]) -> Vec<u8> {
    let Ok(len) = rewrite::spliced_len(src, splices) else { return src.to_vec() };
    let mut out = vec![0u8; len];
    match rewrite::splice(src, splices, &mut out) {
        Ok(n) => {
            out.truncate(n);
            out
        }
        Err(_) => src.to_vec(),
    }
}

/// The bytes of `v` (a view into a larger buffer, e.g. a `result` inside
/// its message) with `splices` (spans of that buffer, inside `v`) applied.
pub(super) fn splice_within(v: &json::JsonValue<'_>, splices: &mut [Splice<'_>]) -> Vec<u8> {
    let base = v.span().start;
    for s in splices.iter_mut() {
        s.span = Span::new(s.span.start - base, s.span.end - base);
    }
    splices.sort_by_key(|s| s.span.start);
    apply(v.bytes(), splices)
}

/// What goes in place of a span of a client's message: raw JSON, or a
/// string (quoted and escaped as it is written, so a name that needs no
/// escaping is never copied first).
#[derive(Clone, Copy, Debug)]
pub(super) enum With<'a> {
    Raw(&'a [u8]),
    Str(&'a str),
}

impl With<'_> {
    fn write(self, out: &mut Vec<u8>) {
        match self {
            With::Raw(b) => out.extend_from_slice(b),
            With::Str(s) => push_string(out, s),
        }
    }

    /// About how many bytes it writes.
    pub fn size(self) -> usize {
        match self {
            With::Raw(b) => b.len(),
            With::Str(s) => s.len() + 2,
        }
    }

    /// The string it writes, unescaped.
    pub fn text(self) -> Option<String> {
        match self {
            With::Raw(b) => string_at(b, 0..b.len()),
            With::Str(s) => Some(s.to_string()),
        }
    }
}

/// The params of a request forwarded upstream, from the client's `params`
/// (a view into its message; `None`: it sent none) and their `_meta` (as
/// the envelope read it), appended to `out`:
/// `edits` applied (ranges in the message's buffer, inside `params`, none
/// inside its `_meta`), and `_meta` rebuilt from the view and written in
/// place: `progressToken` set to `token`, the members `drop` selects left
/// out, `add` (keys and raw values) set. One pass over the client's bytes,
/// nothing in them scanned again, nothing written twice.
pub(super) fn upstream_params(
    out: &mut Vec<u8>,
    params: Option<json::JsonValue<'_>>,
    meta: Option<json::JsonValue<'_>>,
    edits: &mut [(Range<usize>, With<'_>)],
    token: &[u8],
    drop: impl Fn(&str) -> bool,
    add: &[(&str, Vec<u8>)],
) {
    let Some(params) = params.filter(|p| p.kind() == json::Kind::Object) else {
        out.extend_from_slice(b"{\"_meta\":");
        write_meta(out, None, token, &drop, add);
        out.push(b'}');
        return;
    };
    let old = meta.filter(|m| m.kind() == json::Kind::Object);
    let src = params.bytes();
    let base = params.span().start;
    edits.sort_by_key(|(r, _)| r.start);
    // Where `_meta` goes: in place of the client's, else first (an empty span).
    let (meta, comma) = match meta {
        Some(m) => (m.span().start - base..m.span().end - base, false),
        None => (1..1, params.members().next().is_some()),
    };
    let rel = |r: &Range<usize>| r.start - base..r.end - base;
    // The meta goes after the edits before it and the insertions at its start.
    let at = edits.partition_point(|(r, _)| r.start - base < meta.start || (r.start - base == meta.start && r.is_empty()));
    let spans = || edits[..at].iter().map(|(r, _)| rel(r)).chain([meta.clone()]).chain(edits[at..].iter().map(|(r, _)| rel(r)));
    let mut prev = 0;
    if !spans().all(|r| {
        let ok = r.start >= prev && r.end >= r.start && r.end <= src.len();
        prev = r.end;
        ok
    }) {
        // Spans that do not fit the params: they pass as they came.
        return out.extend_from_slice(src);
    }
    let mut pos = 0;
    let mut copy_to = |out: &mut Vec<u8>, r: Range<usize>| {
        out.extend_from_slice(&src[pos..r.start]);
        pos = r.end;
    };
    for (r, with) in &edits[..at] {
        copy_to(out, rel(r));
        with.write(out);
    }
    copy_to(out, meta.clone());
    if meta.is_empty() {
        out.extend_from_slice(b"\"_meta\":");
    }
    write_meta(out, old.as_ref(), token, &drop, add);
    if comma {
        out.push(b',');
    }
    for (r, with) in &edits[at..] {
        copy_to(out, rel(r));
        with.write(out);
    }
    out.extend_from_slice(&src[pos..]);
}

/// `_meta` of a forwarded request, appended to `out`: the client's members
/// (`old`) but `progressToken`, those `drop` selects and those `add` sets;
/// then `"progressToken":token` and `add`.
fn write_meta(out: &mut Vec<u8>, old: Option<&json::JsonValue<'_>>, token: &[u8], drop: &impl Fn(&str) -> bool, add: &[(&str, Vec<u8>)]) {
    out.extend_from_slice(b"{\"progressToken\":");
    out.extend_from_slice(token);
    for m in old.into_iter().flat_map(|o| o.members()) {
        // A key with escapes is judged by what it says.
        let decoded: String;
        let key = match m.key.as_str() {
            Some(k) => k,
            None => {
                decoded = String::from_utf8(m.key.decoded().collect()).unwrap_or_default();
                &decoded
            }
        };
        if key != "progressToken" && !drop(key) && !add.iter().any(|(a, _)| *a == key) {
            out.push(b',');
            out.extend_from_slice(&m.value.buf()[m.key_span.start..m.value.span().end]);
        }
    }
    for (k, v) in add {
        out.push(b',');
        push_string(out, k);
        out.push(b':');
        out.extend_from_slice(v);
    }
    out.push(b'}');
}

/// A JSON string literal for `s`.
pub(super) fn quote(s: &str) -> Vec<u8> {
    grow(s.len() + 8, |out| rewrite::write_json_string(s, out))
}

/// `s` as a JSON string literal, appended to `out`.
fn push_string(out: &mut Vec<u8>, s: &str) {
    grow_into(out, s.len() + 2, |b| rewrite::write_json_string(s, b));
}


/// A request of the hub's (its id `id`) without params, or with `params`.
pub(super) fn request(id: u64, method: &str, params: Option<&[u8]>) -> Vec<u8> {
    let len = params.map_or(0, <[u8]>::len);
    request_with(id, method, len, |out| out.extend_from_slice(params.unwrap_or_default())).0
}

/// A request of the hub's in one buffer: the envelope, then the params
/// `params` appends (about `len` bytes; none when it appends nothing);
/// with the range of the params in it.
pub(super) fn request_with(id: u64, method: &str, len: usize, params: impl FnOnce(&mut Vec<u8>)) -> (Vec<u8>, Range<usize>) {
    let mut digits = [0u8; 20];
    let id = mcpx_core::decimal::u64(id, &mut digits);
    // Room for the params, `,"params":` and the closing brace after what
    // core writes, reserved but not zeroed: `params` appends.
    let head = 64 + id.len() + method.len();
    let mut out = spare::take();
    out.reserve_exact(head + len + 12);
    grow_into(&mut out, head, |out| rewrite::write_request(id, method, None, out));
    out.pop();
    let open = out.len();
    out.extend_from_slice(b",\"params\":");
    let at = out.len();
    params(&mut out);
    if out.len() == at {
        out.truncate(open);
    }
    let range = at.min(out.len())..out.len();
    out.push(b'}');
    (out, range)
}

/// A request with a raw id (a client's, restored byte for byte).
pub(super) fn request_raw(id: &[u8], method: &str, params: Option<&[u8]>) -> Vec<u8> {
    grow(64 + id.len() + method.len() + params.map_or(0, <[u8]>::len), |out| rewrite::write_request(id, method, params, out))
}

/// What [`edit_object`] does with one member.
pub(super) enum Edit {
    Keep,
    Drop,
    Replace(Vec<u8>),
}

/// The object at `obj` in `b`, rebuilt member by member: `f` decides for each
/// (unescaped key, raw value); `append` adds members at the end (raw values).
/// Members are copied as their original bytes.
pub(super) fn edit_object(b: &[u8], obj: Range<usize>, mut f: impl FnMut(&str, &[u8]) -> Edit, append: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let Ok(v) = json::skip_value(b, obj.start) else { return b[obj].to_vec() };
    let mut out = Vec::with_capacity(obj.len() + 64);
    out.push(b'{');
    let mut first = true;
    let mut sep = |out: &mut Vec<u8>| {
        if !first {
            out.push(b',');
        }
        first = false;
    };
    for m in v.members() {
        let key: String = serde_json::from_slice(&b[range(m.key_span)]).unwrap_or_default();
        let val = &b[range(m.value.span())];
        match f(&key, val) {
            Edit::Keep => {
                sep(&mut out);
                out.extend_from_slice(&b[m.key_span.start..m.value.span().end]);
            }
            Edit::Drop => {}
            Edit::Replace(with) => {
                sep(&mut out);
                out.extend_from_slice(&b[range(m.key_span)]);
                out.push(b':');
                out.extend_from_slice(&with);
            }
        }
    }
    for (k, val) in append {
        sep(&mut out);
        out.extend_from_slice(&quote(k));
        out.push(b':');
        out.extend_from_slice(val);
    }
    out.push(b'}');
    out
}

/// Params `p` (a whole object) with `_meta` members set from `meta` (added
/// or replaced) and those `drop_meta` returns true for removed.
pub(super) fn set_meta(p: &[u8], meta: &serde_json::Map<String, serde_json::Value>, drop_meta: impl Fn(&str) -> bool) -> Vec<u8> {
    let has_meta = json::skip_value(p, 0).ok().and_then(|v| v.get("_meta")).is_some_and(|m| m.kind() == json::Kind::Object);
    let new_meta = |old: Option<&[u8]>| -> Vec<u8> {
        let mut appended: Vec<(&str, Vec<u8>)> = Vec::new();
        for (k, v) in meta {
            appended.push((k.as_str(), serde_json::to_vec(v).unwrap_or_default()));
        }
        match old {
            Some(o) => edit_object(o, 0..o.len(), |k, _| if meta.contains_key(k) || drop_meta(k) { Edit::Drop } else { Edit::Keep }, &appended),
            None => edit_object(b"{}", 0..2, |_, _| Edit::Keep, &appended),
        }
    };
    if has_meta {
        edit_object(p, 0..p.len(), |k, v| if k == "_meta" { Edit::Replace(new_meta(Some(v))) } else { Edit::Keep }, &[])
    } else if meta.is_empty() {
        p.to_vec()
    } else {
        edit_object(p, 0..p.len(), |_, _| Edit::Keep, &[("_meta", new_meta(None))])
    }
}

/// A notification of the hub's own.
pub(super) fn notification(method: Method<'static>, params: Option<&[u8]>) -> Vec<u8> {
    let method = method.name().unwrap_or_default();
    grow(48 + method.len() + params.map_or(0, <[u8]>::len), |out| rewrite::write_notification(method, params, out))
}

/// A result response; `id` is raw JSON (restored byte for byte).
pub(super) fn result(id: &[u8], result: &[u8]) -> Vec<u8> {
    // `{"jsonrpc":"2.0","id":` `,"result":` `}`: 33 bytes around the two.
    framed(RESULT_FRAME - rewrite::RESULT_TAIL.len() + id.len(), |out| rewrite::write_result_head(id, out), result, rewrite::RESULT_TAIL)
}

/// What a response adds to its id and result.
const RESULT_FRAME: usize = 33;

/// An error response with an error object given as raw JSON. `id` `None`:
/// the id could not be read and the member is left out (2025-11-25 schema);
/// callers answering older revisions pass `Some(b"null")` (JSON-RPC 2.0).
pub(super) fn error_raw(id: Option<&[u8]>, error: &[u8]) -> Vec<u8> {
    written::error_raw(id, error)
}

/// An error response; `data` a JSON value the hub composed.
pub(super) fn error(id: Option<&[u8]>, code: ErrorCode, message: &str, data: Option<serde_json::Value>) -> Vec<u8> {
    let data = data.and_then(|d| serde_json::to_vec(&d).ok());
    written::error(id, code, message, data.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;


    // A 64 KiB result written twice (and its buffer grown once) cost a
    // tenth of a forwarded call: the first pass must fit.
    #[test]
    fn a_response_is_written_in_one_pass() {
        let payload = vec![b'7'; 65_536];
        let r = result(b"\"id-1\"", &payload);
        assert_eq!(r.len(), RESULT_FRAME + 6 + payload.len());
        assert_eq!(r.capacity(), r.len(), "sized right the first time, never grown");
        assert!(r.starts_with(br#"{"jsonrpc":"2.0","id":"id-1","result":7"#) && r.ends_with(b"7}"));
        // A forwarded request: the params appended into room reserved once.
        let (q, at) = request_with(12, "tools/call", payload.len(), |o| o.extend_from_slice(&payload));
        assert_eq!(&q[at], &payload[..]);
        assert!(q.starts_with(br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":7"#) && q.ends_with(b"7}"));
        assert!(q.capacity() < q.len() + 128, "sized once for the params, never grown: {} for {}", q.capacity(), q.len());
    }

    // A tool name or URI read into a String cost every call one
    // allocation: a string with nothing to decode is the message's own.
    #[test]
    fn a_string_param_is_borrowed_unless_it_needs_decoding() {
        let cases: [(&[u8], Option<&str>, bool); 7] = [
            (br#""echo__echo""#, Some("echo__echo"), true),
            (br#""caf\u00e9""#, Some("café"), false),
            (br#""a\"b""#, Some("a\"b"), false),
            ("\"né\"".as_bytes(), Some("né"), true),
            (b"\"a\tb\"", None, false),
            (b"42", None, false),
            (b"\"\"", Some(""), true),
        ];
        for (json, want, borrowed) in cases {
            let got = str_at(json, 0..json.len());
            assert_eq!(got.as_deref(), want, "{}", String::from_utf8_lossy(json));
            assert_eq!(matches!(got, Some(Cow::Borrowed(_))), borrowed, "{}", String::from_utf8_lossy(json));
        }
    }

    // A forwarded call wrote its params, its `_meta` and its envelope in
    // four buffers: one, sized once, is the whole request.
    #[test]
    fn a_forwarded_request_is_written_in_one_buffer() {
        let p = br#"{"name":"a","arguments":{"text":"0123456789abcdef"}}"#;
        let name = find(p, 0..p.len(), &["name"]).unwrap();
        let (out, params) = request_with(7, "tools/call", p.len() + 64, |out| {
            upstream_params(out, json::parse(p).ok(), None, &mut [(name, With::Str("b\"c"))], b"7", |_| false, &[("k", b"1".to_vec())]);
        });
        let want = br#"{"_meta":{"progressToken":7,"k":1},"name":"b\"c","arguments":{"text":"0123456789abcdef"}}"#;
        assert_eq!(String::from_utf8_lossy(&out[params]), String::from_utf8_lossy(want));
        assert!(out.starts_with(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta""#) && out.ends_with(b"}}}"));
        assert_eq!(out.capacity(), 64 + 1 + "tools/call".len() + p.len() + 64 + 12, "sized once, never grown");
    }

    #[test]
    fn classifies_and_keeps_raw_ids() {
        let m = parse(br#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":{"name":"x"}}"#).unwrap();
        assert_eq!(m.kind, Kind::Request);
        assert_eq!(m.id_bytes().unwrap(), b"123456789012345678901234567890");
        assert_eq!(m.method, "tools/call");
        let p = m.params.clone().unwrap();
        let r = find(m.raw, p, &["name"]).unwrap();
        assert_eq!(&m.raw[r], b"\"x\"");
        let m = parse(br#" {"jsonrpc":"2.0","id":"a\"b","result":{}} "#).unwrap();
        assert_eq!(m.kind, Kind::Result);
        assert_eq!(m.id_bytes().unwrap(), br#""a\"b""#);
        let m = parse(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#).unwrap();
        assert_eq!((m.kind, m.id), (Kind::Error, None));
        let m = parse(br#"{"jsonrpc":"2.0","method":"to\u006fls/list","id":1}"#).unwrap();
        assert_eq!(m.method, "tools/list");
    }

    #[test]
    fn refuses_bad_messages() {
        assert_eq!(parse(b"{not json").unwrap_err().code, ErrorCode::ParseError);
        assert_eq!(parse(b"{\"a\":1} x").unwrap_err().code, ErrorCode::ParseError);
        assert_eq!(parse(b"[]").unwrap_err().code, ErrorCode::InvalidRequest);
        assert_eq!(parse(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).unwrap_err().code, ErrorCode::InvalidRequest);
        assert_eq!(parse(br#"{"jsonrpc":"2.0","id":{},"method":"x"}"#).unwrap_err().code, ErrorCode::InvalidRequest);
        let e = parse(br#"{"jsonrpc":"1.0","id":7,"method":"x"}"#).unwrap_err();
        assert_eq!((e.code, e.id), (ErrorCode::InvalidRequest, Some(b"7".to_vec())));
        assert_eq!(parse(br#"{"jsonrpc":"2.0","id":1}"#).unwrap_err().code, ErrorCode::InvalidRequest);
    }

    #[test]
    fn forwarded_params_get_the_upstreams_token_and_context_in_meta() {
        let io = |k: &str| k.starts_with("io.modelcontextprotocol/");
        let fwd = |p: Option<&[u8]>, edits: &mut [(Range<usize>, With<'_>)], drop: bool, add: &[(&str, Vec<u8>)]| -> serde_json::Value {
            let mut out = Vec::new();
            let params = p.map(|p| json::parse(p).unwrap());
            upstream_params(&mut out, params, params.and_then(|p| p.get("_meta")), edits, b"9", |k| drop && io(k), add);
            serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out)))
        };
        use serde_json::json;
        let ctx = br#"{"name":"a","_meta":{"io.modelcontextprotocol/clientInfo":{},"progressToken":"p","k":1,"io.modelcontextprotocol\/logLevel":"info"},"arguments":{}}"#;
        let name = |p: &[u8]| find(p, 0..p.len(), &["name"]).unwrap();
        let table: [(Option<&[u8]>, bool, &[(&str, Vec<u8>)], serde_json::Value); 6] = [
            (None, false, &[], json!({ "_meta": { "progressToken": 9 } })),
            (Some(b"{}"), false, &[], json!({ "_meta": { "progressToken": 9 } })),
            (Some(br#"{"name":"a","arguments":{}}"#), false, &[], json!({ "name": "b", "arguments": {}, "_meta": { "progressToken": 9 } })),
            // A legacy client's members pass; its token is the upstream's.
            (Some(ctx), false, &[], json!({ "name": "b", "arguments": {}, "_meta": { "progressToken": 9, "k": 1, "io.modelcontextprotocol/clientInfo": {}, "io.modelcontextprotocol/logLevel": "info" } })),
            // A modern client's context stays at the hub (an escaped key too).
            (Some(ctx), true, &[], json!({ "name": "b", "arguments": {}, "_meta": { "progressToken": 9, "k": 1 } })),
            // The hub's own context for a modern upstream replaces any.
            (Some(ctx), true, &[("io.modelcontextprotocol/clientInfo", b"{\"name\":\"mcpx\"}".to_vec()), ("k", b"2".to_vec())], json!({ "name": "b", "arguments": {}, "_meta": { "progressToken": 9, "k": 2, "io.modelcontextprotocol/clientInfo": { "name": "mcpx" } } })),
        ];
        for (i, (p, drop, add, want)) in table.into_iter().enumerate() {
            let mut edits = match p {
                Some(p) if p.len() > 2 => vec![(name(p), With::Str("b"))],
                _ => vec![],
            };
            assert_eq!(fwd(p, &mut edits, drop, add), want, "row {i}");
        }
    }

    #[test]
    fn objects_are_edited_member_by_member() {
        let p = br#"{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":5},"requestState":"s","n":123456789012345678901234567890}"#;
        let out = edit_object(p, 0..p.len(), |k, _| if k == "requestState" { Edit::Drop } else { Edit::Keep }, &[("a", b"1".to_vec())]);
        assert_eq!(out, br#"{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":5},"n":123456789012345678901234567890,"a":1}"#);
        let mut meta = serde_json::Map::new();
        meta.insert("k".into(), serde_json::json!(true));
        let out = set_meta(p, &meta, |k| k.starts_with("io.modelcontextprotocol/"));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["_meta"], serde_json::json!({ "progressToken": 5, "k": true }));
        assert_eq!(set_meta(b"{}", &meta, |_| false), br#"{"_meta":{"k":true}}"#);
    }

    #[test]
    fn splices_and_writes() {
        let b = br#"{"a":1,"b":"x"}"#;
        let a = find(b, 0..b.len(), &["a"]).unwrap();
        let bb = find(b, 0..b.len(), &["b"]).unwrap();
        let out = splice(b, vec![(bb, b"2".to_vec()), (a, b"[]".to_vec())]);
        assert_eq!(out, br#"{"a":[],"b":2}"#);
        assert_eq!(result(b"\"i\"", b"{}"), br#"{"jsonrpc":"2.0","id":"i","result":{}}"#);
        assert_eq!(request(3, "ping", None), br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
        let big = "x".repeat(10_000);
        let e: serde_json::Value = serde_json::from_slice(&error(None, ErrorCode::InternalError, &big, None)).unwrap();
        assert_eq!(e["error"]["message"].as_str().unwrap().len(), 10_000);
    }
}
