//! Splicing messages and writing JSON-RPC envelopes into caller buffers.
//!
//! [`splice`] copies a message replacing a few spans (a new id, a prefixed
//! tool name, an inserted `_meta` member...) and copies everything else
//! byte for byte. [`spliced_len`] sizes the output first. The `write_*`
//! functions produce complete envelopes. Nothing allocates: a too-small
//! output buffer is a typed [`Overflow`] that reports the size needed.

pub use crate::json::Overflow;
use crate::json::{JsonValue, Kind as JsonKind, Span};

/// What to put in place of a span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insert<'s> {
    /// These bytes, verbatim (must be valid JSON in context).
    Raw(&'s [u8]),
    /// A JSON string whose decoded value is the concatenation of the parts,
    /// escaped as needed (e.g. `["github__", "create_issue"]`).
    String(&'s [&'s str]),
    /// An object member `"key":value` (the key is escaped, the value is raw
    /// JSON), or `"key":{"inner":value}` when `inner` is set; followed by a
    /// comma when `comma` is set.
    Member {
        /// The member's key (decoded form).
        key: &'s str,
        /// Wraps `value` in a one-member object under this key.
        inner: Option<&'s str>,
        /// The (innermost) value, raw JSON.
        value: &'s [u8],
        /// Whether a `,` follows (the object had other members).
        comma: bool,
    },
    /// A one-member object `{"key":value}`.
    Object {
        /// The member's key (decoded form).
        key: &'s str,
        /// The member's value, raw JSON.
        value: &'s [u8],
    },
}

/// Replace `span` of the source with `with`. An empty span inserts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Splice<'s> {
    /// The source bytes to replace.
    pub span: Span,
    /// The replacement.
    pub with: Insert<'s>,
}

impl<'s> Splice<'s> {
    /// Replaces `span` with raw JSON bytes.
    pub fn raw(span: Span, bytes: &'s [u8]) -> Self {
        Splice {
            span,
            with: Insert::Raw(bytes),
        }
    }

    /// Replaces `span` with a JSON string built from `parts`.
    pub fn string(span: Span, parts: &'s [&'s str]) -> Self {
        Splice {
            span,
            with: Insert::String(parts),
        }
    }

    /// Inserts member `"key":value` as the first member of `obj` (an object
    /// value). The caller ensures the key is not already present (see
    /// [`Splice::set_member`]). Insert at most one member per object in one
    /// splice list: the comma is chosen from the object's original contents.
    pub fn insert_member(obj: &JsonValue<'_>, key: &'s str, value: &'s [u8]) -> Self {
        Splice::insert(obj, key, None, value)
    }

    fn insert(obj: &JsonValue<'_>, key: &'s str, inner: Option<&'s str>, value: &'s [u8]) -> Self {
        let at = obj.span().start + 1;
        let comma = obj.members().next().is_some();
        Splice {
            span: Span::new(at, at),
            with: Insert::Member {
                key,
                inner,
                value,
                comma,
            },
        }
    }

    /// Sets member `key` of `obj` to `value`: replaces the value of its first
    /// occurrence, or inserts the member if absent.
    pub fn set_member(obj: &JsonValue<'_>, key: &'s str, value: &'s [u8]) -> Self {
        match obj.get(key) {
            Some(v) => Splice::raw(v.span(), value),
            None => Splice::insert_member(obj, key, value),
        }
    }

    /// Sets `obj[outer][key]` to `value`: when `obj` has an object member
    /// `outer`, as [`Splice::set_member`] on it; otherwise inserts
    /// `"outer":{"key":value}` into `obj` (replacing a non-object `outer`).
    /// E.g. `set_nested(msg, "params", "_meta", ..)` or
    /// `set_nested(params, "_meta", "progressToken", ..)`.
    pub fn set_nested(obj: &JsonValue<'_>, outer: &'s str, key: &'s str, value: &'s [u8]) -> Self {
        match obj.get(outer) {
            Some(o) if o.kind() == JsonKind::Object => Splice::set_member(&o, key, value),
            Some(o) => Splice {
                span: o.span(),
                with: Insert::Object { key, value },
            },
            None => Splice::insert(obj, outer, Some(key), value),
        }
    }

    /// Removes the first member `key` of `obj` together with one adjacent
    /// comma, or `None` when there is no such member. Two removals from the
    /// same object may overlap when one of them is the first member; remove
    /// at most one member per object in one splice list.
    pub fn remove_member(obj: &JsonValue<'_>, key: &str) -> Option<Self> {
        let mut prev_end = None;
        let mut members = obj.members();
        while let Some(m) = members.next() {
            let end = m.value.span().end;
            if m.key.eq_str(key) {
                let span = match (prev_end, members.next()) {
                    (Some(prev), _) => Span::new(prev, end),
                    (None, Some(next)) => Span::new(m.key_span.start, next.key_span.start),
                    (None, None) => Span::new(m.key_span.start, end),
                };
                return Some(Splice::raw(span, b""));
            }
            prev_end = Some(end);
        }
        None
    }
}

/// Removes every member of `obj` whose key `drop` selects, calling `push`
/// with non-overlapping removals in ascending order (several members of one
/// object may go in one splice list, unlike [`Splice::remove_member`]). Each
/// run of removed members goes with the comma before it, or, at the start
/// of the object, with the comma after it.
pub fn remove_members<'s>(
    obj: &JsonValue<'_>,
    mut drop: impl FnMut(&crate::json::JsonStr<'_>) -> bool,
    mut push: impl FnMut(Splice<'s>),
) {
    let mut last_kept_end: Option<usize> = None;
    // The open run of removed members: where it starts, where it ends.
    let mut run: Option<(usize, usize)> = None;
    for m in obj.members() {
        if drop(&m.key) {
            let start = run.map_or(m.key_span.start, |(s, _)| s);
            run = Some((start, m.value.span().end));
            continue;
        }
        if let Some((start, end)) = run.take() {
            let span = match last_kept_end {
                Some(prev) => Span::new(prev, end),
                None => Span::new(start, m.key_span.start),
            };
            push(Splice::raw(span, b""));
        }
        last_kept_end = Some(m.value.span().end);
    }
    if let Some((start, end)) = run {
        push(Splice::raw(Span::new(last_kept_end.unwrap_or(start), end), b""));
    }
}

/// Why a splice cannot be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpliceError {
    /// Spans out of bounds, inverted, overlapping or not in ascending order.
    BadSpans,
    /// The output buffer is too small.
    Overflow(Overflow),
}

impl From<Overflow> for SpliceError {
    fn from(o: Overflow) -> Self {
        SpliceError::Overflow(o)
    }
}

/// A bounded output cursor. Keeps counting past the end so an overflow
/// reports the full size needed.
pub(crate) struct Writer<'o> {
    out: &'o mut [u8],
    len: usize,
}

impl<'o> Writer<'o> {
    pub(crate) fn new(out: &'o mut [u8]) -> Self {
        Writer { out, len: 0 }
    }

    pub(crate) fn raw(&mut self, bytes: &[u8]) {
        if let Some(dst) = self.out.get_mut(self.len..self.len + bytes.len()) {
            dst.copy_from_slice(bytes);
        }
        self.len += bytes.len();
    }

    /// Writes `s` escaped as JSON string contents (no quotes).
    pub(crate) fn escaped(&mut self, s: &str) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let bytes = s.as_bytes();
        let mut run = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let esc: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0x08 => b"\\b",
                0x0c => b"\\f",
                0..=0x1f => &[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 15)],
                ],
                _ => continue,
            };
            self.raw(bytes.get(run..i).unwrap_or(&[]));
            self.raw(esc);
            run = i + 1;
        }
        self.raw(bytes.get(run..).unwrap_or(&[]));
    }

    /// Writes a JSON string of the concatenated parts.
    pub(crate) fn string(&mut self, parts: &[&str]) {
        self.raw(b"\"");
        for p in parts {
            self.escaped(p);
        }
        self.raw(b"\"");
    }

    pub(crate) fn int(&mut self, v: i64) {
        let mut digits = [0u8; 20];
        let mut n = v.unsigned_abs();
        let mut i = digits.len();
        loop {
            i -= 1;
            if let Some(d) = digits.get_mut(i) {
                *d = b'0' + (n % 10) as u8;
            }
            n /= 10;
            if n == 0 || i == 0 {
                break;
            }
        }
        if v < 0 {
            self.raw(b"-");
        }
        self.raw(digits.get(i..).unwrap_or(&[]));
    }

    fn insert(&mut self, with: &Insert<'_>) {
        match *with {
            Insert::Raw(b) => self.raw(b),
            Insert::String(parts) => self.string(parts),
            Insert::Member {
                key,
                inner,
                value,
                comma,
            } => {
                self.string(&[key]);
                self.raw(b":");
                match inner {
                    Some(inner) => self.insert(&Insert::Object { key: inner, value }),
                    None => self.raw(value),
                }
                if comma {
                    self.raw(b",");
                }
            }
            Insert::Object { key, value } => {
                self.raw(b"{");
                self.string(&[key]);
                self.raw(b":");
                self.raw(value);
                self.raw(b"}");
            }
        }
    }

    pub(crate) fn finish(self) -> Result<usize, Overflow> {
        if self.len <= self.out.len() {
            Ok(self.len)
        } else {
            Err(Overflow { needed: self.len })
        }
    }
}

fn check_spans(src: &[u8], splices: &[Splice<'_>]) -> Result<(), SpliceError> {
    let mut prev_end = 0;
    for s in splices {
        if s.span.start < prev_end || s.span.end < s.span.start || s.span.end > src.len() {
            return Err(SpliceError::BadSpans);
        }
        prev_end = s.span.end;
    }
    Ok(())
}

fn write_spliced(
    src: &[u8],
    splices: &[Splice<'_>],
    w: &mut Writer<'_>,
) -> Result<(), SpliceError> {
    check_spans(src, splices)?;
    let mut pos = 0;
    for s in splices {
        w.raw(src.get(pos..s.span.start).unwrap_or(&[]));
        w.insert(&s.with);
        pos = s.span.end;
    }
    w.raw(src.get(pos..).unwrap_or(&[]));
    Ok(())
}

/// The length of [`splice`]'s output. `splices` must be in ascending,
/// non-overlapping span order (insertions at the same offset as a
/// following replacement's start are fine).
pub fn spliced_len(src: &[u8], splices: &[Splice<'_>]) -> Result<usize, SpliceError> {
    let mut w = Writer::new(&mut []);
    write_spliced(src, splices, &mut w)?;
    Ok(w.len)
}

/// Copies `src` into `out`, replacing each splice's span; returns the output
/// length.
pub fn splice(src: &[u8], splices: &[Splice<'_>], out: &mut [u8]) -> Result<usize, SpliceError> {
    let mut w = Writer::new(out);
    write_spliced(src, splices, &mut w)?;
    Ok(w.finish()?)
}

const OPEN: &[u8] = b"{\"jsonrpc\":\"2.0\"";
const ID_MEMBER: &[u8] = b",\"id\":";

fn open(w: &mut Writer<'_>, id: Option<&[u8]>) {
    w.raw(OPEN);
    if let Some(id) = id {
        w.raw(ID_MEMBER);
        w.raw(id);
    }
}

/// Where the id of `id_len` bytes lies in every message these writers
/// produce with an id: a caller that wrote a response knows which request
/// it answers without reading it back.
pub const fn written_id_span(id_len: usize) -> Span {
    let start = OPEN.len() + ID_MEMBER.len();
    Span::new(start, start + id_len)
}

fn method_params(w: &mut Writer<'_>, method: &str, params: Option<&[u8]>) {
    w.raw(b",\"method\":");
    w.string(&[method]);
    if let Some(p) = params {
        w.raw(b",\"params\":");
        w.raw(p);
    }
    w.raw(b"}");
}

/// The error object `{"code":..,"message":"..","data":..}`, its data
/// member written by `data` (which reports whether it wrote a value).
fn error_object(w: &mut Writer<'_>, code: i64, message: &str, data: impl FnOnce(&mut Writer<'_>) -> bool) {
    w.raw(b"{\"code\":");
    w.int(code);
    w.raw(b",\"message\":");
    w.string(&[message]);
    // Speculatively write `,"data":`; `data` reports whether it wrote a value.
    let mark = w.len;
    w.raw(b",\"data\":");
    if !data(w) {
        w.len = mark;
    }
    w.raw(b"}");
}

fn raw_data(data: Option<&[u8]>) -> impl FnOnce(&mut Writer<'_>) -> bool + '_ {
    move |w| match data {
        Some(d) => {
            w.raw(d);
            true
        }
        None => false,
    }
}

/// Writes an error response with a data member written by `data`.
pub(crate) fn write_error_with(
    id: Option<&[u8]>,
    code: i64,
    message: &str,
    out: &mut [u8],
    data: impl FnOnce(&mut Writer<'_>) -> bool,
) -> Result<usize, Overflow> {
    let mut w = Writer::new(out);
    open(&mut w, id);
    w.raw(b",\"error\":");
    error_object(&mut w, code, message, data);
    w.raw(b"}");
    w.finish()
}

/// Writes `{"jsonrpc":"2.0","id":<id>,"error":{"code":..,"message":"..","data":..}}`.
///
/// `id` is the raw JSON id to echo (e.g. from [`crate::envelope::Envelope::id_bytes`]);
/// `None` omits the id, as error responses may when the request's id could
/// not be read (2025-11-25 and later; row
/// `messages-error-response-same-id-unless-unreadable`). `message` is
/// escaped; `data` is raw JSON. On [`Overflow`] nothing usable was written
/// and `needed` is the exact size to retry with: an error is never cut short.
pub fn write_error(
    id: Option<&[u8]>,
    code: i64,
    message: &str,
    data: Option<&[u8]>,
    out: &mut [u8],
) -> Result<usize, Overflow> {
    write_error_with(id, code, message, out, raw_data(data))
}

/// Writes only the error object `{"code":..,"message":"..","data":..}` (a
/// failed task's stored error, say), with the escaping of [`write_error`].
pub fn write_error_object(
    code: i64,
    message: &str,
    data: Option<&[u8]>,
    out: &mut [u8],
) -> Result<usize, Overflow> {
    let mut w = Writer::new(out);
    error_object(&mut w, code, message, raw_data(data));
    w.finish()
}

/// Writes an error response around an error object given as raw JSON (an
/// upstream's, passed on unchanged); `id` as in [`write_error`].
pub fn write_error_raw(id: Option<&[u8]>, error: &[u8], out: &mut [u8]) -> Result<usize, Overflow> {
    let mut w = Writer::new(out);
    open(&mut w, id);
    w.raw(b",\"error\":");
    w.raw(error);
    w.raw(b"}");
    w.finish()
}

/// Writes `{"jsonrpc":"2.0","id":<id>,"result":<result>}`; `result` is raw
/// JSON (an object).
pub fn write_result(id: &[u8], result: &[u8], out: &mut [u8]) -> Result<usize, Overflow> {
    let mut w = Writer::new(out);
    result_head(&mut w, id);
    w.raw(result);
    w.raw(RESULT_TAIL);
    w.finish()
}

/// Writes what [`write_result`] writes before the result, for a caller that
/// appends the result and [`RESULT_TAIL`] itself (a large result copied
/// once, into growable storage).
pub fn write_result_head(id: &[u8], out: &mut [u8]) -> Result<usize, Overflow> {
    let mut w = Writer::new(out);
    result_head(&mut w, id);
    w.finish()
}

/// What closes a response after its result.
pub const RESULT_TAIL: &[u8] = b"}";

fn result_head(w: &mut Writer<'_>, id: &[u8]) {
    open(w, Some(id));
    w.raw(b",\"result\":");
}

/// Writes `{"jsonrpc":"2.0","id":<id>,"method":"..","params":<params>}`.
pub fn write_request(
    id: &[u8],
    method: &str,
    params: Option<&[u8]>,
    out: &mut [u8],
) -> Result<usize, Overflow> {
    let mut w = Writer::new(out);
    open(&mut w, Some(id));
    method_params(&mut w, method, params);
    w.finish()
}

/// Writes `{"jsonrpc":"2.0","method":"..","params":<params>}`.
pub fn write_notification(
    method: &str,
    params: Option<&[u8]>,
    out: &mut [u8],
) -> Result<usize, Overflow> {
    let mut w = Writer::new(out);
    open(&mut w, None);
    method_params(&mut w, method, params);
    w.finish()
}

/// Writes `s` as a JSON string (with quotes and escapes) into `out`.
pub fn write_json_string(s: &str, out: &mut [u8]) -> Result<usize, Overflow> {
    let mut w = Writer::new(out);
    w.string(&[s]);
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_members_are_removed_in_one_list() {
        let cases: &[(&str, &[&str], &str)] = &[
            (r#"{"a":1,"b":2,"c":3,"d":4}"#, &["a", "c"], r#"{"b":2,"d":4}"#),
            (r#"{"a":1,"b":2,"c":3,"d":4}"#, &["b", "c"], r#"{"a":1,"d":4}"#),
            (r#"{"a":1,"b":2,"c":3}"#, &["a", "b", "c"], r#"{}"#),
            (r#"{ "a" : 1 , "b":2 }"#, &["b"], r#"{ "a" : 1 }"#),
            (r#"{"a":1,"b":{"x":1}}"#, &["a"], r#"{"b":{"x":1}}"#),
            (r#"{"a":1}"#, &["z"], r#"{"a":1}"#),
        ];
        for (src, keys, want) in cases {
            let v = crate::json::parse(src.as_bytes()).unwrap();
            let mut splices = std::vec::Vec::new();
            super::remove_members(&v, |k: &crate::json::JsonStr<'_>| keys.iter().any(|key| k.eq_str(key)), |s| splices.push(s));
            let mut out = [0u8; 64];
            let n = splice(src.as_bytes(), &splices, &mut out).unwrap();
            assert_eq!(core::str::from_utf8(&out[..n]).unwrap(), *want, "{src} - {keys:?}");
        }
    }

    #[test]
    fn written_ids_lie_where_written_id_span_says() {
        let mut out = [0u8; 128];
        let id = b"\"abc\"";
        let n = write_result(id, b"{}", &mut out).unwrap();
        assert_eq!(written_id_span(id.len()).slice(&out[..n]), id);
        let n = write_error(Some(b"12"), -32603, "x", None, &mut out).unwrap();
        assert_eq!(written_id_span(2).slice(&out[..n]), b"12");
    }
    #[test]
    fn error_writers_share_one_object_and_report_the_exact_size() {
        let mut out = [0u8; 256];
        let n = write_error_object(-32603, "a \"b\"", Some(b"[1]"), &mut out).unwrap();
        let obj = out[..n].to_vec();
        assert_eq!(obj, br#"{"code":-32603,"message":"a \"b\"","data":[1]}"#);
        let n = write_error_raw(Some(b"7"), &obj, &mut out).unwrap();
        let raw = out[..n].to_vec();
        let n = write_error(Some(b"7"), -32603, "a \"b\"", Some(b"[1]"), &mut out).unwrap();
        assert_eq!(&out[..n], raw.as_slice());
        // Too small: nothing is cut short, and `needed` is exactly enough.
        for len in [0, 10, raw.len() - 1] {
            let mut small = std::vec![0u8; len];
            let Err(Overflow { needed }) = write_error(Some(b"7"), -32603, "a \"b\"", Some(b"[1]"), &mut small) else {
                panic!("{len} bytes cannot hold {} bytes", raw.len())
            };
            assert_eq!(needed, raw.len());
        }
        assert_eq!(write_error_raw(None, b"{}", &mut out[..5]), Err(Overflow { needed: 28 }));
    }

    use crate::envelope::{Envelope, Kind};
    use crate::json;

    fn apply(src: &[u8], splices: &[Splice<'_>]) -> Vec<u8> {
        let n = spliced_len(src, splices).unwrap();
        let mut out = vec![0u8; n];
        assert_eq!(splice(src, splices, &mut out), Ok(n));
        if n > 0 {
            assert_eq!(
                splice(src, splices, &mut out[..n - 1]),
                Err(SpliceError::Overflow(Overflow { needed: n }))
            );
        }
        out
    }

    fn same_json(a: &[u8], b: &str) {
        let a: serde_json::Value = serde_json::from_slice(a).unwrap();
        let b: serde_json::Value = serde_json::from_str(b).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn replace_id_and_prefix_name() {
        let src = br#"{"jsonrpc":"2.0","id":"client-7","method":"tools/call","params":{"name":"create_issue","arguments":{}}}"#;
        let m = Envelope::parse(src).unwrap();
        let parts = ["github__", "create_issue"];
        let out = apply(
            src,
            &[
                Splice::raw(m.id().unwrap().span(), b"42"),
                Splice::string(m.name().unwrap().span(), &parts),
            ],
        );
        assert_eq!(
            out,
            br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"github__create_issue","arguments":{}}}"#
        );
    }

    #[test]
    fn insert_and_set_members() {
        // Adding resultType to a result (row: messages-resulttype-server-must-include).
        let src = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#;
        let m = Envelope::parse(src).unwrap();
        let r = m.result().unwrap();
        let out = apply(
            src,
            &[Splice::set_member(&r, "resultType", b"\"complete\"")],
        );
        same_json(
            &out,
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","tools":[]}}"#,
        );
        // Replacing an existing member.
        let src2 = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"x"}}"#;
        let r2 = Envelope::parse(src2).unwrap().result().unwrap();
        assert_eq!(
            apply(
                src2,
                &[Splice::set_member(&r2, "resultType", b"\"complete\"")]
            ),
            br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}"#
        );
        // Into an empty object: no comma.
        let src3 = br#"{"jsonrpc":"2.0","id":1,"result":{ }}"#;
        let r3 = Envelope::parse(src3).unwrap().result().unwrap();
        same_json(
            &apply(src3, &[Splice::insert_member(&r3, "k\"", b"1")]),
            r#"{"jsonrpc":"2.0","id":1,"result":{"k\"":1}}"#,
        );
    }

    #[test]
    fn set_nested_meta() {
        let meta = br#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;
        for (src, cursor) in [
            // No params at all.
            (
                &br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#[..],
                None,
            ),
            // Params without _meta.
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"c"}}"#,
                Some(&b"\"c\""[..]),
            ),
        ] {
            let m = Envelope::parse(src).unwrap();
            let out = apply(
                src,
                &[Splice::set_nested(&m.value(), "params", "_meta", meta)],
            );
            let back = Envelope::parse(&out).unwrap();
            assert_eq!(back.meta().unwrap().bytes(), meta);
            assert_eq!(back.cursor().map(|c| c.bytes()), cursor);
        }
        // Progress token into an existing _meta.
        let src =
            br#"{"jsonrpc":"2.0","id":1,"method":"a","params":{"_meta":{"progressToken":"up"}}}"#;
        let m = Envelope::parse(src).unwrap();
        let p = m.params().unwrap();
        let out = apply(
            src,
            &[Splice::set_nested(&p, "_meta", "progressToken", b"99")],
        );
        assert_eq!(
            Envelope::parse(&out)
                .unwrap()
                .progress_token()
                .unwrap()
                .bytes(),
            b"99"
        );
        // A non-object member is replaced.
        let v = json::parse(br#"{"_meta":null}"#).unwrap();
        assert_eq!(
            apply(v.buf(), &[Splice::set_nested(&v, "_meta", "k", b"1")]),
            br#"{"_meta":{"k":1}}"#
        );
    }

    #[test]
    fn remove_members() {
        let src = br#"{ "a" : 1 , "b":[2], "c":{"d":3} }"#;
        let obj = json::parse(src).unwrap();
        for (key, want) in [
            ("a", r#"{"b":[2],"c":{"d":3}}"#),
            ("b", r#"{"a":1,"c":{"d":3}}"#),
            ("c", r#"{"a":1,"b":[2]}"#),
        ] {
            same_json(
                &apply(src, &[Splice::remove_member(&obj, key).unwrap()]),
                want,
            );
        }
        assert!(Splice::remove_member(&obj, "d").is_none());
        let only = json::parse(br#"{"resultType":"complete"}"#).unwrap();
        let s = Splice::remove_member(&only, "resultType").unwrap();
        assert_eq!(apply(only.buf(), &[s]), b"{}");
    }

    #[test]
    fn bad_spans() {
        let src = b"0123456789";
        let bad: &[&[Splice<'_>]] = &[
            &[Splice::raw(Span::new(5, 11), b"")],
            &[Splice::raw(Span::new(5, 4), b"")],
            &[
                Splice::raw(Span::new(4, 6), b""),
                Splice::raw(Span::new(5, 7), b""),
            ],
            &[
                Splice::raw(Span::new(6, 7), b""),
                Splice::raw(Span::new(1, 2), b""),
            ],
        ];
        for s in bad {
            assert_eq!(spliced_len(src, s), Err(SpliceError::BadSpans));
            assert_eq!(splice(src, s, &mut [0; 64]), Err(SpliceError::BadSpans));
        }
        // Adjacent and empty splices are fine.
        let ok = [
            Splice::raw(Span::new(0, 0), b"<"),
            Splice::raw(Span::new(0, 2), b"ab"),
            Splice::raw(Span::new(2, 3), b""),
            Splice::raw(Span::new(10, 10), b">"),
        ];
        assert_eq!(apply(src, &ok), b"<ab3456789>");
        assert_eq!(apply(src, &[]), src);
    }

    // covers: errors-error-has-code-and-message, messages-error-response-same-id-unless-unreadable
    #[test]
    fn writers() {
        let mut out = [0u8; 256];
        let n = write_error(
            Some(b"\"r1\""),
            -32601,
            "No \"such\"\nmethod\u{1}é",
            Some(b"{\"x\":1}"),
            &mut out,
        )
        .unwrap();
        let m = Envelope::parse(&out[..n]).unwrap();
        assert_eq!(m.kind(), Kind::Error);
        assert_eq!(m.id_bytes(), Some(&b"\"r1\""[..]));
        assert_eq!(m.error_code(), Some(-32601));
        let msg = m.error().unwrap().get("message").unwrap().as_str().unwrap();
        assert!(msg.eq_str("No \"such\"\nmethod\u{1}é"));
        assert_eq!(
            m.error().unwrap().get("data").unwrap().bytes(),
            b"{\"x\":1}"
        );
        let n = write_error(None, -32700, "Parse error", None, &mut out).unwrap();
        assert_eq!(
            &out[..n],
            br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}"#
        );
        let n = write_result(b"7", b"{}", &mut out).unwrap();
        assert_eq!(&out[..n], br#"{"jsonrpc":"2.0","id":7,"result":{}}"#);
        let n = write_result_head(b"7", &mut out).unwrap();
        assert_eq!([&out[..n], b"{}", RESULT_TAIL].concat(), br#"{"jsonrpc":"2.0","id":7,"result":{}}"#);
        let n = write_request(b"-1", "roots/list", None, &mut out).unwrap();
        assert_eq!(
            &out[..n],
            br#"{"jsonrpc":"2.0","id":-1,"method":"roots/list"}"#
        );
        let n = write_notification(
            "notifications/cancelled",
            Some(br#"{"requestId":1}"#),
            &mut out,
        )
        .unwrap();
        assert_eq!(
            &out[..n],
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#
        );
        assert_eq!(
            write_result(b"7", b"{}", &mut out[..10]),
            Err(Overflow { needed: 36 })
        );
        let n = write_json_string("\t\u{7f}\u{2028}\\", &mut out).unwrap();
        assert_eq!(&out[..n], "\"\\t\u{7f}\u{2028}\\\\\"".as_bytes());
        for v in [0i64, 5, -32700, i64::MIN, i64::MAX] {
            let mut w = Writer::new(&mut out);
            w.int(v);
            let n = w.finish().unwrap();
            assert_eq!(core::str::from_utf8(&out[..n]).unwrap(), v.to_string());
        }
    }
}
