//! A strict, allocation-free JSON scanner (RFC 8259).
//!
//! The scanner never builds a tree: it validates bytes and reports [`Span`]s.
//! A [`JsonValue`] pairs a buffer with the span of one validated value inside
//! it, and hands out views on its members, elements and string contents.
//! [`parse_lookup`] also hands back chosen members of the top-level object,
//! taken during the validating pass (the envelope reads a message this way).
//!
//! Strictness: invalid UTF-8, control characters in strings, unknown escapes,
//! lone surrogates (`"\ud800"`), leading zeros, `+1`, `.5`, `1.`, literals
//! other than `true`/`false`/`null`, and trailing data are all rejected.
//! Nesting is bounded by [`MAX_DEPTH`]; the scanner is iterative (a `u128`
//! bit stack), so no input can overflow the call stack. Numbers of any size
//! are accepted: they are spans, never converted.

/// Maximum nesting of arrays and objects (inclusive).
pub const MAX_DEPTH: usize = 128;

/// A half-open byte range `start..end` into a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// Builds a span.
    pub const fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }

    /// Number of bytes covered.
    pub const fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

    /// True when the span covers no byte.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of `buf` covered by this span, or an empty slice when the
    /// span does not lie inside `buf`.
    pub fn slice<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        buf.get(self.start..self.end).unwrap_or(&[])
    }
}

/// Why a byte sequence is not valid JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Input ended inside a value (or no value at all).
    UnexpectedEnd,
    /// A byte that cannot start or continue the current token.
    UnexpectedByte,
    /// Malformed number (leading zero, missing digits, ...).
    InvalidNumber,
    /// Unknown escape or malformed `\u` escape.
    InvalidEscape,
    /// A `\u` escape encoding an unpaired UTF-16 surrogate.
    LoneSurrogate,
    /// An unescaped control character (U+0000..U+001F) inside a string.
    ControlChar,
    /// String content that is not valid UTF-8.
    InvalidUtf8,
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep,
    /// Non-whitespace bytes after the value.
    TrailingData,
}

/// A JSON syntax error and the byte offset where it was detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonError {
    /// What is wrong.
    pub kind: ErrorKind,
    /// Offset into the scanned buffer.
    pub offset: usize,
}

/// The type of a JSON value, from its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `{...}`
    Object,
    /// `[...]`
    Array,
    /// `"..."`
    String,
    /// A number (integer or not; see [`JsonValue::is_integer`]).
    Number,
    /// `true` or `false`
    Bool,
    /// `null`
    Null,
}

fn err<T>(kind: ErrorKind, offset: usize) -> Result<T, JsonError> {
    Err(JsonError { kind, offset })
}

const fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn skip_ws(buf: &[u8], mut pos: usize) -> usize {
    while let Some(&b) = buf.get(pos) {
        if !is_ws(b) {
            break;
        }
        pos += 1;
    }
    pos
}

fn byte_at(buf: &[u8], pos: usize) -> Result<u8, JsonError> {
    match buf.get(pos) {
        Some(&b) => Ok(b),
        None => err(ErrorKind::UnexpectedEnd, pos),
    }
}

fn hex4(buf: &[u8], pos: usize) -> Result<u16, JsonError> {
    let mut v: u16 = 0;
    for i in 0..4 {
        let b = byte_at(buf, pos + i)?;
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return err(ErrorKind::InvalidEscape, pos + i),
        };
        v = (v << 4) | u16::from(d);
    }
    Ok(v)
}

/// Decodes one escape sequence starting at the backslash at `pos`.
/// Returns the character and the offset just after the sequence.
fn decode_escape(buf: &[u8], pos: usize) -> Result<(char, usize), JsonError> {
    let c = match byte_at(buf, pos + 1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let hi = hex4(buf, pos + 2)?;
            let next = pos + 6;
            return match hi {
                0xD800..=0xDBFF => {
                    if buf.get(next) != Some(&b'\\') || buf.get(next + 1) != Some(&b'u') {
                        return err(ErrorKind::LoneSurrogate, pos);
                    }
                    let lo = hex4(buf, next + 2)?;
                    if !(0xDC00..=0xDFFF).contains(&lo) {
                        return err(ErrorKind::LoneSurrogate, pos);
                    }
                    let cp = 0x10000 + ((u32::from(hi) - 0xD800) << 10) + (u32::from(lo) - 0xDC00);
                    match char::from_u32(cp) {
                        Some(c) => Ok((c, next + 6)),
                        None => err(ErrorKind::LoneSurrogate, pos),
                    }
                }
                0xDC00..=0xDFFF => err(ErrorKind::LoneSurrogate, pos),
                _ => match char::from_u32(u32::from(hi)) {
                    Some(c) => Ok((c, next)),
                    None => err(ErrorKind::InvalidEscape, pos),
                },
            };
        }
        _ => return err(ErrorKind::InvalidEscape, pos + 1),
    };
    Ok((c, pos + 2))
}

/// Scans a string starting at the opening quote at `pos`.
/// Returns the span including both quotes and whether it contains escapes.
///
/// Plain ASCII is skipped sixteen bytes at a time, a long run's end found
/// by `memchr` ([`ascii_run`]), and checked by that skip alone; only a run
/// holding non-ASCII bytes is validated as UTF-8, from its first such byte
/// to the quote or backslash that ends it.
/// Errors are those of the byte-wise scan in `reference`, which this one
/// must agree with on every input (a property test and the `json_fast` fuzz
/// target check it).
fn scan_string(buf: &[u8], pos: usize) -> Result<(Span, bool), JsonError> {
    if byte_at(buf, pos)? != b'"' {
        return err(ErrorKind::UnexpectedByte, pos);
    }
    let mut i = pos + 1;
    let mut escaped = false;
    loop {
        i += ascii_run(buf.get(i..).unwrap_or(&[]));
        match byte_at(buf, i)? {
            b'"' => return Ok((Span::new(pos, i + 1), escaped)),
            b'\\' => {
                escaped = true;
                i = decode_escape(buf, i)?.1;
            }
            0x00..=0x1f => return err(ErrorKind::ControlChar, i),
            // Non-ASCII: the run up to the next quote, backslash or control
            // byte. As in the byte-wise scan, its UTF-8 is judged when a
            // quote or backslash ends it (a control byte or the end of input
            // is the error otherwise); the ASCII before it is valid already.
            _ => {
                let end = i + plain_run(buf.get(i..).unwrap_or(&[]));
                if matches!(buf.get(end), Some(b'"' | b'\\')) {
                    if let Err(e) = core::str::from_utf8(buf.get(i..end).unwrap_or(&[])) {
                        return err(ErrorKind::InvalidUtf8, i + e.valid_up_to());
                    }
                }
                i = end;
            }
        }
    }
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Flags (the high bit of each byte) the bytes of `w` below `n`. A flag can
/// be wrong only above a right one (a borrow runs upwards), so the lowest
/// flag is always the first such byte.
const fn below(w: u64, n: u64) -> u64 {
    w.wrapping_sub(LO * n) & !w & HI
}

/// Flags the bytes of `w` that are `"`, `\` or a control character (the
/// lowest flag is right, as in [`below`]).
const fn special(w: u64) -> u64 {
    below(w, 0x20) | below(w ^ (LO * b'"' as u64), 1) | below(w ^ (LO * b'\\' as u64), 1)
}

const fn is_special(b: u8) -> bool {
    matches!(b, b'"' | b'\\' | 0x00..=0x1f)
}

/// The bytes of a run checked for every stop in one pass; past them, the
/// run's end (`"` or `\`) is found by `memchr` and the bytes before it are
/// checked for the other stops only.
const SHORT: usize = 32;

/// Length of the run at the start of `s` free of `"`, `\`, control
/// characters and what `extra` (word-wise) and `extra_byte` flag.
fn run_to_special(s: &[u8], extra: impl Fn(u64) -> u64 + Copy, extra_byte: impl Fn(u8) -> bool + Copy) -> usize {
    let head = s.get(..SHORT).unwrap_or(s);
    let n = run_until(head, |w| special(w) | extra(w), |b| is_special(b) || extra_byte(b));
    if n < head.len() || head.len() == s.len() {
        return n;
    }
    // A long string: its end at memory speed, then one check of what
    // precedes it.
    let rest = s.get(n..).unwrap_or(&[]);
    let end = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
    n + block_run(rest.get(..end).unwrap_or(rest), |b| b < 0x20 || extra_byte(b))
}

/// Bytes [`block_run`] checks a step.
const BLOCK: usize = 32;

/// Length of the run at the start of `s` before the first byte `stop`
/// names: a block at a time, its flags joined without branching (which the
/// compiler turns into vector compares), then byte by byte within the
/// block that holds one.
fn block_run(s: &[u8], stop: impl Fn(u8) -> bool + Copy) -> usize {
    let clean = s.chunks_exact(BLOCK).take_while(|c| !c.iter().fold(false, |any, &b| any | stop(b))).count();
    let n = clean * BLOCK;
    let tail = s.get(n..).unwrap_or(&[]);
    n + tail.iter().position(|&b| stop(b)).unwrap_or(tail.len())
}

/// Length of the run at the start of `s` free of `"`, `\`, control
/// characters and non-ASCII bytes: what a string scan skips without any
/// further check.
fn ascii_run(s: &[u8]) -> usize {
    run_to_special(s, |w| w & HI, |b| !b.is_ascii())
}

/// Length of the run at the start of `s` free of `"`, `\` and control
/// characters.
fn plain_run(s: &[u8]) -> usize {
    run_to_special(s, |_| 0, |_| false)
}

/// Length of the run at the start of `s` before the first byte that `stop`
/// flags in a little-endian word (see [`special`]) and `stop_byte` names:
/// sixteen bytes a step, then eight, then byte by byte.
#[inline(always)]
fn run_until(s: &[u8], stop: impl Fn(u64) -> u64, stop_byte: impl Fn(u8) -> bool) -> usize {
    fn word(c: &[u8]) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        u64::from_le_bytes(w)
    }
    let first = |m: u64| (m.trailing_zeros() / 8) as usize;
    let mut n = 0;
    let mut pairs = s.chunks_exact(16);
    for c in &mut pairs {
        let (a, b) = c.split_at(8);
        let (ma, mb) = (stop(word(a)), stop(word(b)));
        if ma | mb != 0 {
            return n + if ma != 0 { first(ma) } else { 8 + first(mb) };
        }
        n += 16;
    }
    if let Some(c) = pairs.remainder().get(..8) {
        let m = stop(word(c));
        if m != 0 {
            return n + first(m);
        }
        n += 8;
    }
    let tail = s.get(n..).unwrap_or(&[]);
    n + tail.iter().position(|&b| stop_byte(b)).unwrap_or(tail.len())
}

fn scan_digits(buf: &[u8], mut pos: usize) -> Result<usize, JsonError> {
    let start = pos;
    while matches!(buf.get(pos), Some(b'0'..=b'9')) {
        pos += 1;
    }
    if pos == start {
        return err(ErrorKind::InvalidNumber, pos);
    }
    Ok(pos)
}

/// Scans a number starting at `pos`; returns the offset just after it.
fn scan_number(buf: &[u8], mut pos: usize) -> Result<usize, JsonError> {
    if buf.get(pos) == Some(&b'-') {
        pos += 1;
    }
    match byte_at(buf, pos)? {
        b'0' => pos += 1,
        b'1'..=b'9' => pos = scan_digits(buf, pos)?,
        _ => return err(ErrorKind::InvalidNumber, pos),
    }
    if buf.get(pos) == Some(&b'.') {
        pos = scan_digits(buf, pos + 1)?;
    }
    if matches!(buf.get(pos), Some(b'e' | b'E')) {
        pos += 1;
        if matches!(buf.get(pos), Some(b'+' | b'-')) {
            pos += 1;
        }
        pos = scan_digits(buf, pos)?;
    }
    // A number must not run straight into another number-ish byte (`01`, `1a`
    // is caught by the caller as an unexpected byte).
    Ok(pos)
}

fn scan_literal(buf: &[u8], pos: usize, lit: &[u8]) -> Result<usize, JsonError> {
    for (i, &want) in lit.iter().enumerate() {
        if byte_at(buf, pos + i)? != want {
            return err(ErrorKind::UnexpectedByte, pos + i);
        }
    }
    Ok(pos + lit.len())
}

/// A string scanner: [`scan_string`], or in tests the byte-wise reference
/// (a type parameter, so the choice costs nothing).
trait StringScan: Fn(&[u8], usize) -> Result<(Span, bool), JsonError> + Copy {}
impl<F: Fn(&[u8], usize) -> Result<(Span, bool), JsonError> + Copy> StringScan for F {}

/// Scans one value whose first byte is at `pos` (no leading whitespace).
/// Returns its kind and span. Iterative: containers use a bit stack.
/// When the value is an object, each of its members is handed to `each` as
/// soon as the scan has validated it, and so is each member of a member
/// that is an object, with that member's key (deeper members are not).
fn scan_value<'a>(
    buf: &'a [u8],
    pos: usize,
    string: impl StringScan,
    each: &mut dyn FnMut(Option<JsonStr<'a>>, Member<'a>),
) -> Result<(Kind, Span), JsonError> {
    let start = pos;
    // The top-level member being scanned, and the member of its value being
    // scanned: key span, key escaped, value start.
    let mut member = (Span::new(0, 0), false, 0);
    let mut inner = (Span::new(0, 0), false, 0);
    let mut pos = pos;
    // Bit `d` set: the container at depth `d+1` is an object.
    let mut stack: u128 = 0;
    let mut depth: usize = 0;
    let mut first_kind = None;
    loop {
        // Expect a value at `pos`.
        let b = byte_at(buf, pos)?;
        let kind = match b {
            b'{' | b'[' => {
                if depth == MAX_DEPTH {
                    return err(ErrorKind::TooDeep, pos);
                }
                let is_obj = b == b'{';
                if is_obj {
                    stack |= 1u128 << depth;
                } else {
                    stack &= !(1u128 << depth);
                }
                depth += 1;
                first_kind.get_or_insert(if is_obj { Kind::Object } else { Kind::Array });
                pos = skip_ws(buf, pos + 1);
                let close = if is_obj { b'}' } else { b']' };
                if byte_at(buf, pos)? == close {
                    depth -= 1;
                    pos += 1;
                } else {
                    if is_obj {
                        let (key, escaped, value) = scan_key(buf, pos, string)?;
                        match depth {
                            1 => member = (key, escaped, value),
                            2 => inner = (key, escaped, value),
                            _ => {}
                        }
                        pos = value;
                    }
                    continue;
                }
                None
            }
            b'"' => {
                pos = string(buf, pos)?.0.end;
                Some(Kind::String)
            }
            b'-' | b'0'..=b'9' => {
                pos = scan_number(buf, pos)?;
                Some(Kind::Number)
            }
            b't' => {
                pos = scan_literal(buf, pos, b"true")?;
                Some(Kind::Bool)
            }
            b'f' => {
                pos = scan_literal(buf, pos, b"false")?;
                Some(Kind::Bool)
            }
            b'n' => {
                pos = scan_literal(buf, pos, b"null")?;
                Some(Kind::Null)
            }
            _ => return err(ErrorKind::UnexpectedByte, pos),
        };
        if let Some(k) = kind {
            first_kind.get_or_insert(k);
        }
        // After a value: close containers or move to the next item.
        loop {
            if depth == 0 {
                let k = first_kind.unwrap_or(Kind::Null);
                return Ok((k, Span::new(start, pos)));
            }
            // A top-level item just ended at `pos`: a member when the top is
            // an object; an item of one of its members: a member of that
            // member when both are objects.
            let in_obj = stack & (1u128 << (depth - 1)) != 0;
            if in_obj && stack & 1 != 0 {
                let at = |(key_span, escaped, value): (Span, bool, usize)| {
                    let raw = Span::new(key_span.start + 1, key_span.end.saturating_sub(1)).slice(buf);
                    let first = buf.get(value).copied().unwrap_or(b'n');
                    let value = JsonValue { buf, kind: kind_of(first), span: Span::new(value, pos) };
                    Member { key: JsonStr { raw, escaped }, key_span, value }
                };
                match depth {
                    1 => each(None, at(member)),
                    2 => each(Some(at(member).key), at(inner)),
                    _ => {}
                }
            }
            pos = skip_ws(buf, pos);
            match byte_at(buf, pos)? {
                b',' => {
                    pos = skip_ws(buf, pos + 1);
                    if in_obj {
                        let (key, escaped, value) = scan_key(buf, pos, string)?;
                        match depth {
                            1 => member = (key, escaped, value),
                            2 => inner = (key, escaped, value),
                            _ => {}
                        }
                        pos = value;
                    }
                    break;
                }
                b'}' if in_obj => {
                    depth -= 1;
                    pos += 1;
                }
                b']' if !in_obj => {
                    depth -= 1;
                    pos += 1;
                }
                _ => return err(ErrorKind::UnexpectedByte, pos),
            }
        }
    }
}

/// Scans `"key" :` plus following whitespace; returns the key's span,
/// whether it has escapes, and the value offset.
fn scan_key(buf: &[u8], pos: usize, string: impl StringScan) -> Result<(Span, bool, usize), JsonError> {
    let (key, escaped) = string(buf, pos)?;
    let pos = skip_ws(buf, key.end);
    if byte_at(buf, pos)? != b':' {
        return err(ErrorKind::UnexpectedByte, pos);
    }
    Ok((key, escaped, skip_ws(buf, pos + 1)))
}

/// The kind of the value whose first byte is `first`.
const fn kind_of(first: u8) -> Kind {
    match first {
        b'{' => Kind::Object,
        b'[' => Kind::Array,
        b'"' => Kind::String,
        b't' | b'f' => Kind::Bool,
        b'n' => Kind::Null,
        _ => Kind::Number,
    }
}

// Iteration over a value the scanner already validated uses the cheap
// skippers below instead of re-validating every nested value: they only
// track quotes, escapes and brackets. On input that is not valid JSON (only
// possible through a logic error) they still stay in bounds and never panic;
// the iterators then end early.

/// Skips a string whose opening quote is at `pos`: its span (with quotes)
/// and whether it contains escapes.
fn trusted_string(buf: &[u8], pos: usize) -> (Span, bool) {
    let mut i = pos + 1;
    let mut escaped = false;
    while let Some(at) = buf.get(i..).and_then(|rest| memchr::memchr2(b'"', b'\\', rest)) {
        i += at;
        if buf.get(i) == Some(&b'"') {
            return (Span::new(pos, i + 1), escaped);
        }
        escaped = true;
        i += 2;
    }
    (Span::new(pos, buf.len()), escaped)
}

/// Skips the validated value starting at `pos`.
fn trusted_value(buf: &[u8], pos: usize) -> Option<JsonValue<'_>> {
    let first = *buf.get(pos)?;
    let (kind, end) = match first {
        b'"' => (Kind::String, trusted_string(buf, pos).0.end),
        b'{' | b'[' => {
            let kind = kind_of(first);
            let mut depth = 0usize;
            let mut i = pos;
            loop {
                match *buf.get(i)? {
                    b'"' => i = trusted_string(buf, i).0.end,
                    b'{' | b'[' => {
                        depth += 1;
                        i += 1;
                    }
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        i += 1;
                        if depth == 0 {
                            break (kind, i);
                        }
                    }
                    _ => i += 1,
                }
            }
        }
        _ => {
            let kind = kind_of(first);
            let len = buf
                .get(pos..)?
                .iter()
                .position(|&b| matches!(b, b',' | b'}' | b']') || is_ws(b));
            (kind, len.map_or(buf.len(), |n| pos + n))
        }
    };
    Some(JsonValue {
        buf,
        kind,
        span: Span::new(pos, end),
    })
}

/// Validates that `buf` is exactly one JSON value, optionally surrounded by
/// whitespace, and returns a view on it.
pub fn parse(buf: &[u8]) -> Result<JsonValue<'_>, JsonError> {
    #[cfg(feature = "parse-count")]
    scan_count::note(buf, scan_count::Scan::Parse);
    parse_with(buf, scan_string, &mut |_, _| {})
}

/// Validates `buf` as [`parse`] does and, in the same pass, hands each
/// member of its top-level object to `each` (with `None`), and each member
/// of such a member whose value is an object (with that member's key), in
/// document order: what a message's envelope reads, without walking the
/// message again.
pub fn parse_members<'a>(buf: &'a [u8], each: &mut dyn FnMut(Option<JsonStr<'a>>, Member<'a>)) -> Result<JsonValue<'a>, JsonError> {
    #[cfg(feature = "parse-count")]
    scan_count::note(buf, scan_count::Scan::Parse);
    parse_with(buf, scan_string, each)
}

/// Validates `buf` as [`parse`] does and, in the same pass, looks up `keys`
/// among the members of its top-level object as [`JsonValue::lookup`]
/// would: a message's envelope read without walking it a second time.
pub fn parse_lookup<'a, const N: usize>(
    buf: &'a [u8],
    keys: [&str; N],
) -> Result<(JsonValue<'a>, Lookup<'a, N>), JsonError> {
    #[cfg(feature = "parse-count")]
    scan_count::note(buf, scan_count::Scan::Parse);
    let mut found = Lookup::new();
    let v = parse_with(buf, scan_string, &mut |parent, m| {
        if parent.is_none() {
            found.offer(&keys, m)
        }
    })?;
    Ok((v, found))
}

fn parse_with<'a>(
    buf: &'a [u8],
    string: impl StringScan,
    each: &mut dyn FnMut(Option<JsonStr<'a>>, Member<'a>),
) -> Result<JsonValue<'a>, JsonError> {
    let pos = skip_ws(buf, 0);
    let (kind, span) = scan_value(buf, pos, string, each)?;
    let v = JsonValue { buf, kind, span };
    let end = skip_ws(buf, v.span.end);
    if end != buf.len() {
        return err(ErrorKind::TrailingData, end);
    }
    Ok(v)
}

/// The scanner with strings read one byte at a time: the reference the fast
/// string scan must agree with on every input, accepted or not (same value,
/// same error kind and offset). For tests and the `json_fast` fuzz target.
#[cfg(any(test, feature = "scan-reference"))]
pub mod reference {
    use super::{decode_escape, err, ErrorKind, JsonError, JsonValue, Span};

    /// [`super::parse`] with the byte-wise string scan.
    pub fn parse(buf: &[u8]) -> Result<JsonValue<'_>, JsonError> {
        super::parse_with(buf, scan_string, &mut |_, _| {})
    }

    /// A string at `pos`, byte by byte: UTF-8 is checked for each run of
    /// unescaped bytes when a quote or backslash ends it.
    pub(super) fn scan_string(buf: &[u8], pos: usize) -> Result<(Span, bool), JsonError> {
        if super::byte_at(buf, pos)? != b'"' {
            return err(ErrorKind::UnexpectedByte, pos);
        }
        let (mut i, mut run, mut escaped) = (pos + 1, pos + 1, false);
        loop {
            let b = super::byte_at(buf, i)?;
            match b {
                b'"' | b'\\' => {
                    if let Err(e) = core::str::from_utf8(buf.get(run..i).unwrap_or(&[])) {
                        return err(ErrorKind::InvalidUtf8, run + e.valid_up_to());
                    }
                    if b == b'"' {
                        return Ok((Span::new(pos, i + 1), escaped));
                    }
                    escaped = true;
                    i = decode_escape(buf, i)?.1;
                    run = i;
                }
                0x00..=0x1f => return err(ErrorKind::ControlChar, i),
                _ => i += 1,
            }
        }
    }
}

/// Validates the one value starting at `pos` (after optional whitespace) and
/// returns a view on it; bytes after the value are not examined.
pub fn skip_value(buf: &[u8], pos: usize) -> Result<JsonValue<'_>, JsonError> {
    #[cfg(feature = "parse-count")]
    scan_count::note(buf, scan_count::Scan::Rescan);
    let pos = skip_ws(buf, pos);
    let (kind, span) = scan_value(buf, pos, scan_string, &mut |_, _| {})?;
    Ok(JsonValue { buf, kind, span })
}

/// One validated JSON value inside a buffer.
///
/// Only the scanner creates these, so the span always covers a valid value of
/// the reported kind in `buf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonValue<'a> {
    buf: &'a [u8],
    kind: Kind,
    span: Span,
}

impl<'a> JsonValue<'a> {
    /// The value of kind `kind` at `span` of `buf`, which the caller read
    /// there before (the envelope keeps only its offsets).
    pub(crate) const fn at(buf: &'a [u8], kind: Kind, span: Span) -> Self {
        JsonValue { buf, kind, span }
    }

    /// The type of the value.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Where the value lies in [`JsonValue::buf`].
    pub fn span(&self) -> Span {
        self.span
    }

    /// The whole buffer the value was scanned from.
    pub fn buf(&self) -> &'a [u8] {
        self.buf
    }

    /// The value's raw bytes, exactly as in the input.
    pub fn bytes(&self) -> &'a [u8] {
        self.span.slice(self.buf)
    }

    /// True for a number without fraction or exponent (`-12`, `0`,
    /// `123456789012345678901234567890`). `1.0` and `1e2` are not integers.
    pub fn is_integer(&self) -> bool {
        self.kind == Kind::Number && !self.bytes().iter().any(|b| matches!(b, b'.' | b'e' | b'E'))
    }

    /// The value as an `i64`, if it is an integer in range.
    pub fn as_i64(&self) -> Option<i64> {
        if !self.is_integer() {
            return None;
        }
        let b = self.bytes();
        let (neg, digits) = match b.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, b),
        };
        let mut v: i64 = 0;
        for &d in digits {
            let d = i64::from(d - b'0');
            v = v.checked_mul(10)?;
            v = if neg {
                v.checked_sub(d)?
            } else {
                v.checked_add(d)?
            };
        }
        Some(v)
    }

    /// The value as a string view, if it is a string.
    pub fn as_str(&self) -> Option<JsonStr<'a>> {
        if self.kind != Kind::String {
            return None;
        }
        let escaped = self.bytes().contains(&b'\\');
        let inner = Span::new(self.span.start + 1, self.span.end.saturating_sub(1));
        Some(JsonStr {
            raw: inner.slice(self.buf),
            escaped,
        })
    }

    /// Iterates the members of an object (empty for any other kind).
    pub fn members(&self) -> Members<'a> {
        Members(self.items(Kind::Object))
    }

    /// Iterates the elements of an array (empty for any other kind).
    pub fn elements(&self) -> Elements<'a> {
        Elements(self.items(Kind::Array))
    }

    /// The items of a container of `kind` (none for any other kind).
    fn items(&self, kind: Kind) -> Items<'a> {
        let pos = if self.kind == kind {
            self.span.start + 1
        } else {
            self.span.end
        };
        Items {
            buf: self.buf,
            pos,
            end: self.span.end,
        }
    }

    /// The first member of an object whose key equals `key`.
    pub fn get(&self, key: &str) -> Option<JsonValue<'a>> {
        self.members().find(|m| m.key.eq_str(key)).map(|m| m.value)
    }

    /// The member of an object whose key equals `key`, or [`Duplicate`] when
    /// the key occurs more than once.
    pub fn get_unique(&self, key: &str) -> Result<Option<JsonValue<'a>>, Duplicate> {
        let [found] = self.lookup([key]).unique()?;
        Ok(found)
    }

    /// Looks up several keys of an object in one pass: for each key, its
    /// first value, and whether any of the keys occurs more than once.
    pub fn lookup<const N: usize>(&self, keys: [&str; N]) -> Lookup<'a, N> {
        let mut found = Lookup::new();
        self.members().for_each(|m| found.offer(&keys, m));
        found
    }
}

/// The result of [`JsonValue::lookup`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lookup<'a, const N: usize> {
    /// The first value of each key, in the order the keys were given.
    pub values: [Option<JsonValue<'a>>; N],
    /// Whether some key occurred more than once.
    pub duplicate: bool,
}

impl<const N: usize> Default for Lookup<'_, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, const N: usize> Lookup<'a, N> {
    /// Nothing found yet.
    pub const fn new() -> Self {
        Lookup {
            values: [None; N],
            duplicate: false,
        }
    }

    /// Takes member `m` of the object looked up in, when its key is one of `keys`.
    pub fn offer(&mut self, keys: &[&str; N], m: Member<'a>) {
        if let Some((_, slot)) = keys.iter().zip(self.values.iter_mut()).find(|(k, _)| m.key.eq_str(k)) {
            self.duplicate |= slot.is_some();
            slot.get_or_insert(m.value);
        }
    }

    /// The values, or [`Duplicate`] if some key occurred more than once.
    pub fn unique(self) -> Result<[Option<JsonValue<'a>>; N], Duplicate> {
        if self.duplicate {
            Err(Duplicate)
        } else {
            Ok(self.values)
        }
    }
}

/// A key occurred more than once in an object where it must be unique.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Duplicate;

/// One object member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member<'a> {
    /// The key's contents.
    pub key: JsonStr<'a>,
    /// Span of the key including its quotes.
    pub key_span: Span,
    /// The value.
    pub value: JsonValue<'a>,
}

/// Where an iteration over a container's items stands.
#[derive(Debug, Clone)]
struct Items<'a> {
    buf: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> Items<'a> {
    /// The next item, read by `item` from its first byte (giving the item
    /// and where it ends); `None` at `close`, at malformed input, and ever
    /// after either.
    fn next_with<T>(
        &mut self,
        close: u8,
        item: impl FnOnce(&'a [u8], usize) -> Option<(T, usize)>,
    ) -> Option<T> {
        if self.pos >= self.end {
            return None;
        }
        let next = self.step(close, item);
        if next.is_none() {
            self.pos = self.end;
        }
        next
    }

    fn step<T>(
        &mut self,
        close: u8,
        item: impl FnOnce(&'a [u8], usize) -> Option<(T, usize)>,
    ) -> Option<T> {
        let pos = skip_ws(self.buf, self.pos);
        let pos = match *self.buf.get(pos)? {
            b if b == close => return None,
            b',' => skip_ws(self.buf, pos + 1),
            _ => pos,
        };
        let (t, end) = item(self.buf, pos)?;
        self.pos = end;
        Some(t)
    }
}

/// Iterator over an object's members; see [`JsonValue::members`].
#[derive(Debug, Clone)]
pub struct Members<'a>(Items<'a>);

impl<'a> Iterator for Members<'a> {
    type Item = Member<'a>;

    fn next(&mut self) -> Option<Member<'a>> {
        self.0.next_with(b'}', |buf, pos| {
            let (key_span, escaped) = trusted_string(buf, pos);
            let colon = skip_ws(buf, key_span.end);
            if buf.get(colon) != Some(&b':') {
                return None;
            }
            let value = trusted_value(buf, skip_ws(buf, colon + 1))?;
            let raw = Span::new(key_span.start + 1, key_span.end.saturating_sub(1)).slice(buf);
            let end = value.span.end;
            Some((
                Member {
                    key: JsonStr { raw, escaped },
                    key_span,
                    value,
                },
                end,
            ))
        })
    }
}

/// Iterator over an array's elements; see [`JsonValue::elements`].
#[derive(Debug, Clone)]
pub struct Elements<'a>(Items<'a>);

impl<'a> Iterator for Elements<'a> {
    type Item = JsonValue<'a>;

    fn next(&mut self) -> Option<JsonValue<'a>> {
        self.0.next_with(b']', |buf, pos| {
            let value = trusted_value(buf, pos)?;
            Some((value, value.span.end))
        })
    }
}

/// The contents of a validated JSON string, still escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonStr<'a> {
    raw: &'a [u8],
    escaped: bool,
}

/// A caller's output buffer is too small; `needed` bytes would have sufficed.
/// The one overflow error of every core writer (here, in core's lowest
/// layer, so that every writer above can use it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow {
    /// Bytes the complete output needs.
    pub needed: usize,
}

impl core::fmt::Display for Overflow {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "output buffer too small: {} bytes needed", self.needed)
    }
}


impl<'a> JsonStr<'a> {
    /// The empty string.
    pub const EMPTY: JsonStr<'static> = JsonStr { raw: b"", escaped: false };

    /// `s`, which has nothing JSON escapes (no quote, backslash or control
    /// character), as a string's contents: a method name of an extension.
    pub const fn plain(s: &'a str) -> JsonStr<'a> {
        JsonStr { raw: s.as_bytes(), escaped: false }
    }

    /// The escaped contents, without the quotes, exactly as in the input.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// True when the contents contain at least one escape sequence.
    pub fn has_escapes(&self) -> bool {
        self.escaped
    }

    /// The contents as `&str` when they contain no escape (the common case);
    /// `None` otherwise (use [`JsonStr::eq_str`] or [`JsonStr::unescape_into`]).
    pub fn as_str(&self) -> Option<&'a str> {
        if self.escaped {
            return None;
        }
        core::str::from_utf8(self.raw).ok()
    }

    /// Iterates the decoded UTF-8 bytes.
    pub fn decoded(&self) -> Decoded<'a> {
        Decoded {
            raw: self.raw,
            pos: 0,
            pending: [0; 4],
            pending_len: 0,
            pending_pos: 0,
        }
    }

    /// Length in bytes of the decoded UTF-8 contents.
    pub fn decoded_len(&self) -> usize {
        if self.escaped {
            self.decoded().count()
        } else {
            self.raw.len()
        }
    }

    /// Compares the decoded contents with `s`, without allocating.
    pub fn eq_str(&self, s: &str) -> bool {
        if self.escaped {
            self.decoded().eq(s.bytes())
        } else {
            self.raw == s.as_bytes()
        }
    }

    /// Decodes the contents into `out` and returns them as `&str`.
    pub fn unescape_into<'o>(&self, out: &'o mut [u8]) -> Result<&'o str, Overflow> {
        let needed = self.decoded_len();
        let dst = match out.get_mut(..needed) {
            Some(d) => d,
            None => return Err(Overflow { needed }),
        };
        for (d, s) in dst.iter_mut().zip(self.decoded()) {
            *d = s;
        }
        // Decoding valid JSON string contents always yields UTF-8.
        core::str::from_utf8(dst).map_err(|_| Overflow { needed })
    }
}

/// Iterator over the decoded UTF-8 bytes of a [`JsonStr`].
#[derive(Debug, Clone)]
pub struct Decoded<'a> {
    raw: &'a [u8],
    pos: usize,
    pending: [u8; 4],
    pending_len: usize,
    pending_pos: usize,
}

impl Iterator for Decoded<'_> {
    type Item = u8;

    fn next(&mut self) -> Option<u8> {
        if self.pending_pos < self.pending_len {
            let b = self.pending.get(self.pending_pos).copied();
            self.pending_pos += 1;
            return b;
        }
        let b = *self.raw.get(self.pos)?;
        if b != b'\\' {
            self.pos += 1;
            return Some(b);
        }
        // The string was validated, so the escape is well-formed; a malformed
        // one (impossible) ends the iteration.
        let (c, next) = decode_escape(self.raw, self.pos).ok()?;
        self.pos = next;
        let enc = c.encode_utf8(&mut self.pending);
        self.pending_len = enc.len();
        self.pending_pos = 1;
        self.pending.first().copied()
    }
}

/// A test hook (feature `parse-count`, never in a shipped build): counts the
/// scans of the watched buffers, so a test can check that a message crossing
/// mcpx is parsed once. A buffer is watched by its place ([`watch`]: one the
/// test holds) or by a marker in its bytes ([`watch_marker`]: every buffer a
/// transport or the hub makes of a message that carries the marker). Only
/// watched buffers count, so tests running beside it on other buffers do not
/// disturb the figures.
#[cfg(feature = "parse-count")]
pub mod scan_count {
    use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering::SeqCst};

    /// The longest marker [`watch_marker`] takes.
    pub const MARKER_MAX: usize = 32;

    static START: AtomicUsize = AtomicUsize::new(0);
    static END: AtomicUsize = AtomicUsize::new(0);
    /// The marker's bytes, and its length (0: none).
    static MARKER: [AtomicU8; MARKER_MAX] = [const { AtomicU8::new(0) }; MARKER_MAX];
    static MARKER_LEN: AtomicUsize = AtomicUsize::new(0);
    static PARSES: AtomicUsize = AtomicUsize::new(0);
    static RESCANS: AtomicUsize = AtomicUsize::new(0);

    pub(crate) enum Scan {
        /// [`super::parse`]: a whole message validated.
        Parse,
        /// [`super::skip_value`]: a value inside it validated again.
        Rescan,
    }

    /// Counts, from now on, the scans of bytes inside `buf` (from zero).
    pub fn watch(buf: &[u8]) {
        MARKER_LEN.store(0, SeqCst);
        START.store(buf.as_ptr() as usize, SeqCst);
        END.store(buf.as_ptr() as usize + buf.len(), SeqCst);
        reset();
    }

    /// Counts, from now on, the scans of every buffer whose bytes contain
    /// `marker` (from zero): the copies of a message that tests cannot hold,
    /// such as a request body read by the HTTP listener. At most
    /// [`MARKER_MAX`] bytes of it are used.
    pub fn watch_marker(marker: &[u8]) {
        START.store(0, SeqCst);
        END.store(0, SeqCst);
        let marker = &marker[..marker.len().min(MARKER_MAX)];
        for (slot, b) in MARKER.iter().zip(marker) {
            slot.store(*b, SeqCst);
        }
        MARKER_LEN.store(marker.len(), SeqCst);
        reset();
    }

    fn reset() {
        PARSES.store(0, SeqCst);
        RESCANS.store(0, SeqCst);
    }

    /// (parses, rescans) of the watched buffers since [`watch`] or
    /// [`watch_marker`].
    pub fn get() -> (usize, usize) {
        (PARSES.load(SeqCst), RESCANS.load(SeqCst))
    }

    fn watched(buf: &[u8]) -> bool {
        let at = buf.as_ptr() as usize;
        if at >= START.load(SeqCst) && at < END.load(SeqCst) {
            return true;
        }
        let len = MARKER_LEN.load(SeqCst);
        if len == 0 {
            return false;
        }
        let mut marker = [0u8; MARKER_MAX];
        for (b, slot) in marker.iter_mut().zip(&MARKER[..len]) {
            *b = slot.load(SeqCst);
        }
        buf.windows(len).any(|w| w == &marker[..len])
    }

    pub(crate) fn note(buf: &[u8], scan: Scan) {
        if watched(buf) {
            let counter = match scan {
                Scan::Parse => &PARSES,
                Scan::Rescan => &RESCANS,
            };
            counter.fetch_add(1, SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bytes that steer a string scan, and a few ordinary ones.
    fn scan_byte() -> impl Strategy<Value = u8> {
        prop_oneof![Just(b'"'), Just(b'\\'), Just(b'u'), Just(b'n'), Just(0x1f), Just(0x20), Just(0x7f), Just(0x80), Just(0xbf), Just(0xc3), Just(0xe2), Just(0xed), Just(0xf0), Just(0xff), any::<u8>()]
    }

    proptest! {
        // The word-at-a-time skips stop exactly where a byte-by-byte scan
        // would, wherever the stopping byte falls in a word.
        #[test]
        fn runs_stop_at_the_first_stopping_byte(
            s in prop::collection::vec(scan_byte(), 0..40),
            pad in 0usize..300,
        ) {
            let mut v = vec![b'a'; pad];
            v.extend_from_slice(&s);
            let naive = |stop: fn(u8) -> bool| v.iter().position(|&b| stop(b)).unwrap_or(v.len());
            prop_assert_eq!(plain_run(&v), naive(is_special));
            prop_assert_eq!(ascii_run(&v), naive(|b| is_special(b) || !b.is_ascii()));
        }

        // The fast string scan and the byte-wise reference agree on every
        // input: the same value or the same error at the same offset.
        #[test]
        fn fast_scan_agrees_with_the_bytewise_reference(
            body in prop::collection::vec(scan_byte(), 0..80),
            pad in 0usize..40,
            text in "\\PC{0,12}",
        ) {
            let mut doc = b"[\"".to_vec();
            doc.extend(std::iter::repeat_n(b'a', pad));
            doc.extend_from_slice(text.as_bytes());
            doc.extend_from_slice(&body);
            let whole = doc.clone();
            doc.extend_from_slice(b"\"]");
            for input in [&doc[..], &whole[..]] {
                prop_assert_eq!(parse(input), reference::parse(input));
            }
        }
    }

    fn ok(s: &str) -> bool {
        parse(s.as_bytes()).is_ok()
    }

    fn kind_of(s: &str) -> ErrorKind {
        parse(s.as_bytes()).unwrap_err().kind
    }

    #[test]
    fn accepts_valid() {
        for s in [
            "0",
            "-0",
            "1",
            "-12",
            "1.5",
            "1e10",
            "1E+2",
            "1e-2",
            "-0.0e0",
            "123456789012345678901234567890123",
            "true",
            "false",
            "null",
            "\"\"",
            "\"a\\\"b\\\\c\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\"",
            "\"é😀\"",
            "[]",
            "{}",
            " [ 1 , 2 ] ",
            "{\"a\":{\"b\":[null,{}]}}",
            "\t\r\n{ \"a\" : 1 }\n",
        ] {
            assert!(ok(s), "{s}");
        }
    }

    #[test]
    fn rejects_invalid() {
        use ErrorKind::*;
        let cases: &[(&[u8], ErrorKind)] = &[
            (b"", UnexpectedEnd),
            (b"  ", UnexpectedEnd),
            (b"01", TrailingData),
            (b"-", UnexpectedEnd),
            (b"+1", UnexpectedByte),
            (b".5", UnexpectedByte),
            (b"1.", InvalidNumber),
            (b"1e", InvalidNumber),
            (b"-a", InvalidNumber),
            (b"tru", UnexpectedEnd),
            (b"nul", UnexpectedEnd),
            (b"True", UnexpectedByte),
            (b"\"a", UnexpectedEnd),
            (b"\"\\x\"", InvalidEscape),
            (b"\"\\u12g4\"", InvalidEscape),
            (b"\"\\ud800\"", LoneSurrogate),
            (b"\"\\udc00\"", LoneSurrogate),
            (b"\"\\ud800\\u0041\"", LoneSurrogate),
            (b"\"a\nb\"", ControlChar),
            (b"\"\x00\"", ControlChar),
            (b"\"\xff\"", InvalidUtf8),
            (b"\"\xc3\"", InvalidUtf8),
            (b"\"\xed\xa0\x80\"", InvalidUtf8),
            // UTF-8 is judged where a quote or backslash ends the run, so a
            // control byte or the end of input before that is the error.
            (b"\"\xff\x01\"", ControlChar),
            (b"\"0123456789abcdef\xc3(\\n\"", InvalidUtf8),
            (b"\"0123456789abcdef\xc3", UnexpectedEnd),
            (b"[1,]", UnexpectedByte),
            (b"[,1]", UnexpectedByte),
            (b"{\"a\":1,}", UnexpectedByte),
            (b"{\"a\" 1}", UnexpectedByte),
            (b"{a:1}", UnexpectedByte),
            (b"{\"a\":1]", UnexpectedByte),
            (b"[1}", UnexpectedByte),
            (b"[1 2]", UnexpectedByte),
            (b"{} {}", TrailingData),
            (b"1 x", TrailingData),
            (b"\xef\xbb\xbf{}", UnexpectedByte),
        ];
        for (s, k) in cases {
            assert_eq!(
                parse(s).map(|_| ()).unwrap_err().kind,
                *k,
                "{:?}",
                String::from_utf8_lossy(s)
            );
        }
    }

    #[test]
    fn depth_is_bounded() {
        let ok_doc = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(ok(&ok_doc));
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(kind_of(&deep), ErrorKind::TooDeep);
        let mixed = "{\"a\":".repeat(MAX_DEPTH + 1) + "1" + &"}".repeat(MAX_DEPTH + 1);
        assert_eq!(kind_of(&mixed), ErrorKind::TooDeep);
        // Far deeper than any stack could take recursively.
        let huge = "[".repeat(1_000_000);
        assert_eq!(kind_of(&huge), ErrorKind::TooDeep);
    }

    #[test]
    fn members_and_elements() {
        let doc = br#" {"a" : 1, "b\u0031":[true, "x" ,{}], "c":null} "#;
        let v = parse(doc).unwrap();
        assert_eq!(v.kind(), Kind::Object);
        let ms: Vec<_> = v.members().collect();
        assert_eq!(ms.len(), 3);
        assert_eq!(ms[0].key.as_str(), Some("a"));
        assert_eq!(ms[0].key_span.slice(doc), b"\"a\"");
        assert_eq!(ms[0].value.bytes(), b"1");
        assert!(ms[1].key.eq_str("b1"));
        assert_eq!(ms[1].key.as_str(), None);
        let els: Vec<_> = ms[1].value.elements().map(|e| e.bytes()).collect();
        assert_eq!(els, [&b"true"[..], b"\"x\"", b"{}"]);
        assert_eq!(ms[2].value.kind(), Kind::Null);
        assert_eq!(v.get("c").unwrap().bytes(), b"null");
        assert!(v.get("d").is_none());
        assert_eq!(v.elements().count(), 0);
        assert_eq!(ms[0].value.members().count(), 0);
        assert_eq!(parse(b"[]").unwrap().elements().count(), 0);
        assert_eq!(parse(b"{ }").unwrap().members().count(), 0);
    }

    #[test]
    fn lookup_during_the_scan_matches_a_walk_after_it() {
        let keys = ["a", "b1", "c", "z"];
        for doc in [
            &br#" {"a" : 1, "b\u0031":[true, "x" ,{"a":2}], "c":{"d":{}} , "a":[]} "#[..],
            br#"{"c":"\"","a":{"b1":1}}"#,
            br#"{}"#,
            br#"[{"a":1}]"#,
            br#""a""#,
        ] {
            let v = parse(doc).unwrap();
            let (scanned, found) = parse_lookup(doc, keys).unwrap();
            assert_eq!(scanned, v);
            assert_eq!(found, v.lookup(keys), "{}", String::from_utf8_lossy(doc));
        }
        let (_, found) = parse_lookup(br#"{"a":1,"c":{"a":2},"\u0061":3}"#, ["a", "c"]).unwrap();
        assert!(found.duplicate);
        assert_eq!(found.values.map(|v| v.map(|v| v.bytes())), [Some(&b"1"[..]), Some(br#"{"a":2}"#)]);
        assert_eq!(parse_lookup(br#"{"a":1"#, ["a"]).unwrap_err().kind, ErrorKind::UnexpectedEnd);
    }

    #[test]
    fn members_of_members_during_the_scan_match_a_walk_after_it() {
        let key = |k: JsonStr<'_>| k.decoded().collect::<Vec<u8>>();
        for doc in [
            &br#" {"a" : 1, "p":{"x":[{"y":1}],"z":{"w":2}, "x":3}, "q":[{"r":1}] , "\u0070":{}} "#[..],
            br#"{"params":{"name":"t","arguments":{"text":"x"}},"result":{"content":[],"isError":true}}"#,
            br#"{}"#,
            br#"[{"a":{"b":1}}]"#,
            br#"{"a":"{\"b\":1}"}"#,
        ] {
            let v = parse(doc).unwrap();
            let mut seen = Vec::new();
            let scanned = parse_members(doc, &mut |parent, m| seen.push((parent.map(key), m.key_span, m.value))).unwrap();
            assert_eq!(scanned, v);
            let mut walked = Vec::new();
            for m in v.members() {
                if m.value.kind() == Kind::Object {
                    walked.extend(m.value.members().map(|inner| (Some(key(m.key)), inner.key_span, inner.value)));
                }
                walked.push((None, m.key_span, m.value));
            }
            assert_eq!(seen, walked, "{}", String::from_utf8_lossy(doc));
        }
    }

    #[test]
    fn duplicates() {
        let v = parse(br#"{"a":1,"\u0061":2,"b":3}"#).unwrap();
        assert_eq!(v.get_unique("a"), Err(Duplicate));
        assert_eq!(v.get_unique("b").unwrap().unwrap().bytes(), b"3");
        assert_eq!(v.get_unique("z"), Ok(None));
        assert_eq!(v.get("a").unwrap().bytes(), b"1");
    }

    #[test]
    fn strings_decode() {
        let v = parse(br#""a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00z""#).unwrap();
        let s = v.as_str().unwrap();
        let want = "a\"\\/\u{8}\u{c}\n\r\té😀z";
        assert!(s.eq_str(want));
        assert!(!s.eq_str("a"));
        assert_eq!(s.decoded_len(), want.len());
        let mut out = [0u8; 64];
        assert_eq!(s.unescape_into(&mut out).unwrap(), want);
        let mut small = [0u8; 3];
        assert_eq!(
            s.unescape_into(&mut small),
            Err(Overflow { needed: want.len() })
        );
        let plain = parse(b"\"plain\"").unwrap().as_str().unwrap();
        assert_eq!(plain.as_str(), Some("plain"));
        assert!(parse(b"1").unwrap().as_str().is_none());
    }

    #[test]
    fn integers() {
        fn i(s: &str) -> JsonValue<'_> {
            parse(s.as_bytes()).unwrap()
        }
        assert!(i("-12").is_integer());
        assert!(!i("1.0").is_integer());
        assert!(!i("1e2").is_integer());
        assert!(!i("\"1\"").is_integer());
        assert_eq!(i("-9223372036854775808").as_i64(), Some(i64::MIN));
        assert_eq!(i("9223372036854775807").as_i64(), Some(i64::MAX));
        assert_eq!(i("9223372036854775808").as_i64(), None);
        assert_eq!(i("-32600").as_i64(), Some(-32600));
    }

    #[test]
    fn spans_slice_safely() {
        assert_eq!(Span::new(5, 9).slice(b"abc"), b"");
        assert_eq!(Span::new(3, 1).len(), 0);
        assert!(Span::new(2, 2).is_empty());
    }
}
