//! Header value encoding (plain or Base64 sentinel) and decoding.

use core::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use super::number::{parse_safe_integer, safe_integer};
use super::{MCP_PARAM_PREFIX, SENTINEL_PREFIX, SENTINEL_SUFFIX};

pub use crate::json::Overflow;

/// A tool parameter (or standard field) value taken from the request body.
///
/// Strings are the decoded JSON string (escapes resolved). `null` and absent
/// values are represented by `None` where an `Option<ParamValue>` is taken:
/// the spec treats both as "no header".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamValue<'a> {
    /// A JSON string, unescaped. Rendered as is.
    Str(&'a str),
    /// A JSON integer already converted by the caller. Rendered in decimal.
    Int(i64),
    /// The raw text of a JSON number as it appears in the body (`42`,
    /// `42.0`, `4.2e1`). It must denote an integer within
    /// ±[`MAX_SAFE_INTEGER`](super::MAX_SAFE_INTEGER); rendered in decimal.
    Number(&'a str),
    /// A JSON boolean. Rendered as `true` / `false`.
    Bool(bool),
}

impl ParamValue<'_> {
    /// The value as a safe integer, if it is numeric and denotes one.
    /// `None` for strings and booleans too.
    pub(super) fn safe_integer(&self) -> Option<i64> {
        match *self {
            ParamValue::Int(i) => safe_integer(i),
            ParamValue::Number(raw) => parse_safe_integer(raw.bytes()),
            ParamValue::Str(_) | ParamValue::Bool(_) => None,
        }
    }
}

/// Why a parameter could not be rendered into a header value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeError {
    /// The output buffer is too small.
    Overflow(Overflow),
    /// A numeric value is not an integer within ±(2^53−1)
    /// (row tools-x-mcp-header-int-safe-range).
    NotSafeInteger,
}

impl From<Overflow> for EncodeError {
    fn from(o: Overflow) -> Self {
        EncodeError::Overflow(o)
    }
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::Overflow(o) => o.fmt(f),
            EncodeError::NotSafeInteger => {
                f.write_str("value is not an integer within the safe range ±(2^53-1)")
            }
        }
    }
}

/// Decimal rendering of an `i64` on the stack (at most 20 bytes).
struct DecimalDigits {
    buf: [u8; 20],
    start: usize,
}

impl DecimalDigits {
    fn new(value: i64) -> Self {
        let mut buf = [0u8; 20];
        // At most 19 digits: room for the sign.
        let mut start = buf.len() - crate::decimal::u64(value.unsigned_abs(), &mut buf).len();
        if value < 0 {
            start -= 1;
            buf[start] = b'-';
        }
        DecimalDigits { buf, start }
    }

    fn as_bytes(&self) -> &[u8] {
        self.buf.get(self.start..).unwrap_or_default()
    }
}

/// A plain header value byte as the spec allows it unencoded: visible ASCII
/// and space. (HTAB is a valid field-value byte but a control character,
/// which the spec says to encode.)
fn is_plain_byte(b: u8) -> bool {
    (0x20..=0x7e).contains(&b)
}

/// A byte RFC 9110 allows in a received field value (the spec's set:
/// visible ASCII, SP, HTAB).
fn is_field_value_byte(b: u8) -> bool {
    is_plain_byte(b) || b == b'\t'
}

/// Starts with `=?base64?` and ends with `?=`: the shape that is read as a
/// sentinel, so a plain value of that shape must be encoded too.
fn looks_like_sentinel(v: &[u8]) -> bool {
    v.starts_with(SENTINEL_PREFIX.as_bytes()) && v.ends_with(SENTINEL_SUFFIX.as_bytes())
}

/// Whether `value` must be carried as `=?base64?…?=`: it contains a byte
/// outside visible ASCII and space (non-ASCII, control characters including
/// HTAB), has leading or trailing whitespace, or looks like a sentinel
/// itself. Everything else, including the empty string, is sent plain.
pub fn needs_sentinel(value: &str) -> bool {
    let b = value.as_bytes();
    !b.iter().all(|&c| is_plain_byte(c))
        || b.first() == Some(&b' ')
        || b.last() == Some(&b' ')
        || looks_like_sentinel(b)
}

fn base64_len(n: usize) -> usize {
    n.div_ceil(3).saturating_mul(4)
}

/// Length of [`encode_value`]'s output for `value`.
pub fn encoded_len(value: &str) -> usize {
    len_in_form(value, needs_sentinel(value))
}

fn len_in_form(value: &str, sentinel: bool) -> usize {
    if sentinel {
        base64_len(value.len()).saturating_add(SENTINEL_PREFIX.len() + SENTINEL_SUFFIX.len())
    } else {
        value.len()
    }
}

/// Copies bytes known to be ASCII out as `&str`.
fn ascii(bytes: &[u8]) -> &str {
    // Only ASCII is ever written by the callers, so this cannot fail.
    core::str::from_utf8(bytes).unwrap_or_default()
}

/// Encodes `value` as a header value into `out`: plain when it is safe,
/// `=?base64?{standard Base64 with padding of its UTF-8}?=` otherwise
/// (row streamable-http-param-value-encoding, streamable-http-mcp-name-base64).
/// The result is always a valid RFC 9110 field value.
pub fn encode_value<'o>(value: &str, out: &'o mut [u8]) -> Result<&'o str, Overflow> {
    let sentinel = needs_sentinel(value);
    let needed = len_in_form(value, sentinel);
    let dst = out.get_mut(..needed).ok_or(Overflow { needed })?;
    if !sentinel {
        dst.copy_from_slice(value.as_bytes());
    } else {
        let (head, rest) = dst.split_at_mut(SENTINEL_PREFIX.len());
        head.copy_from_slice(SENTINEL_PREFIX.as_bytes());
        let (body, tail) = rest.split_at_mut(rest.len() - SENTINEL_SUFFIX.len());
        STANDARD
            .encode_slice(value, body)
            .map_err(|_| Overflow { needed })?;
        tail.copy_from_slice(SENTINEL_SUFFIX.as_bytes());
    }
    Ok(ascii(dst))
}

/// Renders a parameter value (string as is, integer in decimal, boolean as
/// `true`/`false`) and encodes it with [`encode_value`].
pub fn encode_param<'o>(value: ParamValue<'_>, out: &'o mut [u8]) -> Result<&'o str, EncodeError> {
    match value {
        ParamValue::Str(s) => Ok(encode_value(s, out)?),
        ParamValue::Bool(b) => Ok(encode_value(bool_text(b), out)?),
        ParamValue::Int(_) | ParamValue::Number(_) => {
            let i = value.safe_integer().ok_or(EncodeError::NotSafeInteger)?;
            Ok(encode_value(ascii(DecimalDigits::new(i).as_bytes()), out)?)
        }
    }
}

pub(super) fn bool_text(b: bool) -> &'static str {
    if b {
        "true"
    } else {
        "false"
    }
}

/// Writes the header name `Mcp-Param-{name}` for an `x-mcp-header` value.
pub fn param_header_name<'o>(name: &str, out: &'o mut [u8]) -> Result<&'o str, Overflow> {
    let needed = MCP_PARAM_PREFIX.len().saturating_add(name.len());
    let dst = out.get_mut(..needed).ok_or(Overflow { needed })?;
    let (head, tail) = dst.split_at_mut(MCP_PARAM_PREFIX.len());
    head.copy_from_slice(MCP_PARAM_PREFIX.as_bytes());
    tail.copy_from_slice(name.as_bytes());
    // Both parts are `&str`, so the concatenation is UTF-8.
    Ok(core::str::from_utf8(dst).unwrap_or_default())
}

/// If `header_name` is `Mcp-Param-{Name}` (prefix compared
/// case-insensitively), returns `{Name}`; compare it with the `x-mcp-header`
/// values case-insensitively too (row streamable-http-header-names-case-insensitive).
pub fn param_header_suffix(header_name: &[u8]) -> Option<&[u8]> {
    let p = MCP_PARAM_PREFIX.len();
    let (head, tail) = (header_name.get(..p)?, header_name.get(p..)?);
    (head.eq_ignore_ascii_case(MCP_PARAM_PREFIX.as_bytes()) && !tail.is_empty()).then_some(tail)
}

/// Why a received header value is unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueError {
    /// A byte outside visible ASCII, SP and HTAB.
    InvalidCharacter,
    /// A `=?base64?…?=` value whose payload is not canonical padded
    /// standard Base64.
    InvalidBase64,
    /// The decoded payload is not UTF-8.
    InvalidUtf8,
    /// The output buffer is too small.
    Overflow(Overflow),
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueError::InvalidCharacter => f.write_str("contains invalid characters"),
            ValueError::InvalidBase64 => f.write_str("is not valid =?base64?...?= encoding"),
            ValueError::InvalidUtf8 => f.write_str("does not decode to UTF-8"),
            ValueError::Overflow(o) => o.fmt(f),
        }
    }
}

/// A received header value, checked for valid characters and, when in
/// sentinel form, for valid Base64. Decode it with [`HeaderValue::bytes`]
/// (no buffer needed) or [`HeaderValue::decode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderValue<'a> {
    /// Plain value, or the Base64 payload between the markers.
    raw: &'a [u8],
    encoded: bool,
}

impl<'a> HeaderValue<'a> {
    /// Parses the value of a header that permits the sentinel form
    /// (`Mcp-Name`, `Mcp-Param-*`). Surrounding SP/HTAB is not part of a
    /// field value and is ignored.
    pub fn parse(raw: &'a [u8]) -> Result<Self, ValueError> {
        let v = Self::parse_plain(raw)?;
        if !looks_like_sentinel(v.raw) {
            return Ok(v);
        }
        let payload = v
            .raw
            .get(SENTINEL_PREFIX.len()..v.raw.len().saturating_sub(SENTINEL_SUFFIX.len()))
            .filter(|p| is_canonical_base64(p))
            .ok_or(ValueError::InvalidBase64)?;
        Ok(HeaderValue { raw: payload, encoded: true })
    }

    /// Parses the value of a header that does not permit the sentinel form
    /// (`Mcp-Method`, `MCP-Protocol-Version`): only the characters are checked.
    pub fn parse_plain(raw: &'a [u8]) -> Result<Self, ValueError> {
        let ows = |b: &u8| *b == b' ' || *b == b'\t';
        let start = raw.iter().position(|b| !ows(b)).unwrap_or(raw.len());
        let end = raw.iter().rposition(|b| !ows(b)).map_or(start, |i| i + 1);
        let v = raw.get(start..end).unwrap_or_default();
        if !v.iter().all(|&b| is_field_value_byte(b)) {
            return Err(ValueError::InvalidCharacter);
        }
        Ok(HeaderValue { raw: v, encoded: false })
    }

    /// Whether the value was in `=?base64?…?=` form.
    pub fn is_encoded(&self) -> bool {
        self.encoded
    }

    /// The decoded bytes.
    pub fn bytes(&self) -> DecodedBytes<'a> {
        DecodedBytes { rest: self.raw, encoded: self.encoded, group: [0; 3], pos: 0, len: 0 }
    }

    /// Length of the decoded value in bytes.
    pub fn decoded_len(&self) -> usize {
        if !self.encoded {
            return self.raw.len();
        }
        let pad = self.raw.iter().rev().take_while(|&&b| b == b'=').count();
        (self.raw.len() / 4 * 3).saturating_sub(pad)
    }

    /// Decodes into `out` and returns the value as UTF-8 text.
    pub fn decode<'o>(&self, out: &'o mut [u8]) -> Result<&'o str, ValueError> {
        let needed = self.decoded_len();
        let dst = out.get_mut(..needed).ok_or(ValueError::Overflow(Overflow { needed }))?;
        for (d, s) in dst.iter_mut().zip(self.bytes()) {
            *d = s;
        }
        core::str::from_utf8(dst).map_err(|_| ValueError::InvalidUtf8)
    }
}

/// Padded standard Base64 in canonical form: whole 4-character groups,
/// `=` only at the end of the last group, no stray trailing bits.
fn is_canonical_base64(payload: &[u8]) -> bool {
    let chunks = payload.chunks_exact(4);
    if !chunks.remainder().is_empty() {
        return false;
    }
    let groups = chunks.len();
    chunks.enumerate().all(|(i, g)| {
        (i + 1 == groups || !g.contains(&b'=')) && STANDARD.decode_slice(g, &mut [0u8; 3]).is_ok()
    })
}

/// Iterator over the decoded bytes of a [`HeaderValue`].
#[derive(Debug, Clone)]
pub struct DecodedBytes<'a> {
    rest: &'a [u8],
    encoded: bool,
    group: [u8; 3],
    pos: usize,
    len: usize,
}

impl Iterator for DecodedBytes<'_> {
    type Item = u8;

    fn next(&mut self) -> Option<u8> {
        if !self.encoded {
            let (&b, rest) = self.rest.split_first()?;
            self.rest = rest;
            return Some(b);
        }
        if self.pos >= self.len {
            let g = self.rest.get(..4)?;
            self.rest = self.rest.get(4..).unwrap_or_default();
            // Validated by `HeaderValue::parse`, so decoding cannot fail.
            self.len = STANDARD.decode_slice(g, &mut self.group).ok()?;
            self.pos = 0;
        }
        let b = *self.group.get(..self.len)?.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }
}
