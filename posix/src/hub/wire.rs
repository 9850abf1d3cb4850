//! JSON-RPC messages as byte spans: classify one message, find members, splice.
//!
//! This is the hub's only view of message bytes. It validates a message once and
//! then hands out byte ranges, so results can be forwarded as the upstream's own
//! bytes with only the id replaced, and request ids (any string, any integer, of
//! any size) are restored to the client byte for byte. It is the swap point for
//! the core `envelope`/`rewrite` modules: the hub calls nothing else.

use std::ops::Range;

/// Deepest nesting accepted in a message.
const MAX_DEPTH: usize = 128;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Request,
    Notification,
    Result,
    Error,
}

/// One validated JSON-RPC message; ranges index `raw`.
#[derive(Clone, Debug)]
pub(super) struct Msg<'a> {
    pub raw: &'a [u8],
    pub kind: Kind,
    /// The id value (a string with its quotes, or a number), absent on
    /// notifications and on error responses whose id is null.
    pub id: Option<Range<usize>>,
    pub method: String,
    pub params: Option<Range<usize>>,
    pub result: Option<Range<usize>>,
    pub error: Option<Range<usize>>,
}

impl<'a> Msg<'a> {
    pub fn id_bytes(&self) -> Option<&'a [u8]> {
        self.id.clone().map(|r| &self.raw[r])
    }
    pub fn params_bytes(&self) -> Option<&'a [u8]> {
        self.params.clone().map(|r| &self.raw[r])
    }
    pub fn result_bytes(&self) -> Option<&'a [u8]> {
        self.result.clone().map(|r| &self.raw[r])
    }
    pub fn error_bytes(&self) -> Option<&'a [u8]> {
        self.error.clone().map(|r| &self.raw[r])
    }
    /// `params` parsed as a tree (`{}` when absent).
    pub fn params_value(&self) -> serde_json::Value {
        self.params_bytes()
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or_else(|| serde_json::json!({}))
    }
    /// The id as an unsigned integer, when it is one (ids the hub issued).
    pub fn id_u64(&self) -> Option<u64> {
        id_u64(self.id_bytes()?)
    }
}

/// An id the hub issued: a plain integer (tolerating an upstream that echoes
/// it back as a string of digits).
pub(super) fn id_u64(b: &[u8]) -> Option<u64> {
    let b = if b.len() >= 2 && b[0] == b'"' && b[b.len() - 1] == b'"' { &b[1..b.len() - 1] } else { b };
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// Why a message was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Bad {
    /// Not JSON (answer -32700 with no id).
    Parse(&'static str),
    /// JSON but not a valid JSON-RPC message (answer -32600, with the id
    /// when one could be read).
    Invalid { id: Option<Vec<u8>>, why: &'static str },
}

/// Validates and classifies one message.
pub(super) fn parse(raw: &[u8]) -> Result<Msg<'_>, Bad> {
    if std::str::from_utf8(raw).is_err() {
        return Err(Bad::Parse("the message is not UTF-8"));
    }
    let start = ws(raw, 0);
    let end = skip_value(raw, start, 0).map_err(|_| Bad::Parse("the message is not valid JSON"))?;
    if ws(raw, end) != raw.len() {
        return Err(Bad::Parse("the message has trailing characters after the JSON value"));
    }
    match raw.get(start) {
        Some(b'{') => {}
        Some(b'[') => return Err(Bad::Invalid { id: None, why: "batches are not supported" }),
        _ => return Err(Bad::Invalid { id: None, why: "a message must be a JSON object" }),
    }
    let (mut id, mut method, mut params, mut result, mut error, mut version) = (None, None, None, None, None, None);
    for (k, v) in members(raw, start..end) {
        match &raw[k] {
            b"\"id\"" => id = Some(v),
            b"\"method\"" => method = Some(v),
            b"\"params\"" => params = Some(v),
            b"\"result\"" => result = Some(v),
            b"\"error\"" => error = Some(v),
            b"\"jsonrpc\"" => version = Some(v),
            _ => {}
        }
    }
    let id_copy = id.clone().filter(|r: &Range<usize>| is_id(&raw[r.clone()])).map(|r| raw[r].to_vec());
    let invalid = |why| Err(Bad::Invalid { id: id_copy.clone(), why });
    if version.map(|v| &raw[v]) != Some(b"\"2.0\"") {
        return invalid("\"jsonrpc\" must be \"2.0\"");
    }
    if let Some(r) = &id {
        let b = &raw[r.clone()];
        if b == b"null" {
            if method.is_some() || result.is_some() {
                return invalid("the id must not be null");
            }
            id = None;
        } else if !is_id(b) {
            return invalid("the id must be a string or an integer");
        }
    }
    if let Some(m) = method {
        let name: String = match serde_json::from_slice(&raw[m]) {
            Ok(s) => s,
            Err(_) => return invalid("\"method\" must be a string"),
        };
        if let Some(p) = &params {
            if raw[p.start] != b'{' {
                return invalid("\"params\" must be an object");
            }
        }
        let kind = if id.is_some() { Kind::Request } else { Kind::Notification };
        return Ok(Msg { raw, kind, id, method: name, params, result: None, error: None });
    }
    let kind = match (&result, &error) {
        (Some(_), None) if id.is_some() => Kind::Result,
        (None, Some(e)) if raw[e.start] == b'{' => Kind::Error,
        _ => return invalid("a message needs a \"method\", or an id and exactly one of \"result\" and \"error\""),
    };
    Ok(Msg { raw, kind, id, method: String::new(), params: None, result, error })
}

/// A string, or a number without fraction or exponent.
fn is_id(b: &[u8]) -> bool {
    match b.first() {
        Some(b'"') => true,
        Some(c) if *c == b'-' || c.is_ascii_digit() => b.iter().all(|c| *c == b'-' || c.is_ascii_digit()),
        _ => false,
    }
}

fn ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// Index just past the JSON value starting at `i` (no leading whitespace).
fn skip_value(b: &[u8], i: usize, depth: usize) -> Result<usize, ()> {
    if depth > MAX_DEPTH {
        return Err(());
    }
    match *b.get(i).ok_or(())? {
        b'"' => skip_string(b, i),
        b'{' => {
            let mut j = ws(b, i + 1);
            if b.get(j) == Some(&b'}') {
                return Ok(j + 1);
            }
            loop {
                if b.get(j) != Some(&b'"') {
                    return Err(());
                }
                j = ws(b, skip_string(b, j)?);
                if b.get(j) != Some(&b':') {
                    return Err(());
                }
                j = ws(b, skip_value(b, ws(b, j + 1), depth + 1)?);
                match b.get(j) {
                    Some(b',') => j = ws(b, j + 1),
                    Some(b'}') => return Ok(j + 1),
                    _ => return Err(()),
                }
            }
        }
        b'[' => {
            let mut j = ws(b, i + 1);
            if b.get(j) == Some(&b']') {
                return Ok(j + 1);
            }
            loop {
                j = ws(b, skip_value(b, j, depth + 1)?);
                match b.get(j) {
                    Some(b',') => j = ws(b, j + 1),
                    Some(b']') => return Ok(j + 1),
                    _ => return Err(()),
                }
            }
        }
        b't' => lit(b, i, b"true"),
        b'f' => lit(b, i, b"false"),
        b'n' => lit(b, i, b"null"),
        b'-' | b'0'..=b'9' => skip_number(b, i),
        _ => Err(()),
    }
}

fn lit(b: &[u8], i: usize, w: &[u8]) -> Result<usize, ()> {
    if b[i..].starts_with(w) {
        Ok(i + w.len())
    } else {
        Err(())
    }
}

fn skip_string(b: &[u8], i: usize) -> Result<usize, ()> {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'"' => return Ok(j + 1),
            b'\\' => match b.get(j + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => j += 2,
                Some(b'u') if b.len() >= j + 6 && b[j + 2..j + 6].iter().all(u8::is_ascii_hexdigit) => j += 6,
                _ => return Err(()),
            },
            c if c < 0x20 => return Err(()),
            _ => j += 1,
        }
    }
    Err(())
}

fn skip_number(b: &[u8], i: usize) -> Result<usize, ()> {
    let mut j = i;
    if b[j] == b'-' {
        j += 1;
    }
    let digits = |j: &mut usize| {
        let s = *j;
        while *j < b.len() && b[*j].is_ascii_digit() {
            *j += 1;
        }
        *j > s
    };
    if b.get(j) == Some(&b'0') {
        j += 1;
    } else if !digits(&mut j) {
        return Err(());
    }
    if b.get(j) == Some(&b'.') {
        j += 1;
        if !digits(&mut j) {
            return Err(());
        }
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        j += 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if !digits(&mut j) {
            return Err(());
        }
    }
    Ok(j)
}

/// (key span with quotes, value span) of each member of the (already
/// validated) object at `obj`.
pub(super) fn members(b: &[u8], obj: Range<usize>) -> Vec<(Range<usize>, Range<usize>)> {
    let mut out = Vec::new();
    if b.get(obj.start) != Some(&b'{') {
        return out;
    }
    let mut j = ws(b, obj.start + 1);
    while j < obj.end && b[j] == b'"' {
        let Ok(ke) = skip_string(b, j) else { break };
        let vs = ws(b, ws(b, ke) + 1);
        let Ok(ve) = skip_value(b, vs, 0) else { break };
        out.push((j..ke, vs..ve));
        j = ws(b, ve);
        if b.get(j) == Some(&b',') {
            j = ws(b, j + 1);
        }
    }
    out
}

/// The value span of `path` (a chain of object keys) inside the object at `obj`.
pub(super) fn find(b: &[u8], obj: Range<usize>, path: &[&str]) -> Option<Range<usize>> {
    let mut cur = obj;
    for key in path {
        let quoted = serde_json::to_vec(key).ok()?;
        cur = members(b, cur).into_iter().find(|(k, _)| b[k.clone()] == quoted[..])?.1;
    }
    Some(cur)
}

/// A JSON string value at `r` (quoted), unescaped.
pub(super) fn string_at(b: &[u8], r: Range<usize>) -> Option<String> {
    serde_json::from_slice(&b[r]).ok()
}

/// `b` with each range replaced by its bytes (ranges must not overlap).
pub(super) fn splice(b: &[u8], mut edits: Vec<(Range<usize>, Vec<u8>)>) -> Vec<u8> {
    edits.sort_by_key(|(r, _)| r.start);
    let mut out = Vec::with_capacity(b.len() + 16);
    let mut at = 0;
    for (r, with) in edits {
        out.extend_from_slice(&b[at..r.start]);
        out.extend_from_slice(&with);
        at = r.end;
    }
    out.extend_from_slice(&b[at..]);
    out
}

/// A JSON string literal for `s`.
pub(super) fn quote(s: &str) -> Vec<u8> {
    serde_json::to_vec(s).unwrap_or_else(|_| b"\"\"".to_vec())
}

pub(super) fn request(id: u64, method: &str, params: Option<&[u8]>) -> Vec<u8> {
    let mut v = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":").into_bytes();
    v.extend_from_slice(&quote(method));
    if let Some(p) = params {
        v.extend_from_slice(b",\"params\":");
        v.extend_from_slice(p);
    }
    v.push(b'}');
    v
}

pub(super) fn notification(method: &str, params: Option<&[u8]>) -> Vec<u8> {
    let mut v = b"{\"jsonrpc\":\"2.0\",\"method\":".to_vec();
    v.extend_from_slice(&quote(method));
    if let Some(p) = params {
        v.extend_from_slice(b",\"params\":");
        v.extend_from_slice(p);
    }
    v.push(b'}');
    v
}

/// A result response; `id` is raw JSON (restored byte for byte).
pub(super) fn result(id: &[u8], result: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(result.len() + id.len() + 32);
    v.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    v.extend_from_slice(id);
    v.extend_from_slice(b",\"result\":");
    v.extend_from_slice(result);
    v.push(b'}');
    v
}

/// An error response with an error object given as raw JSON. `id` `None`:
/// the id could not be read and the member is left out (2025-11-25 schema);
/// callers answering older revisions pass `Some(b"null")` (JSON-RPC 2.0).
pub(super) fn error_raw(id: Option<&[u8]>, error: &[u8]) -> Vec<u8> {
    let mut v = b"{\"jsonrpc\":\"2.0\",".to_vec();
    if let Some(id) = id {
        v.extend_from_slice(b"\"id\":");
        v.extend_from_slice(id);
        v.push(b',');
    }
    v.extend_from_slice(b"\"error\":");
    v.extend_from_slice(error);
    v.push(b'}');
    v
}

/// An error response.
pub(super) fn error(id: Option<&[u8]>, code: i64, message: &str, data: Option<serde_json::Value>) -> Vec<u8> {
    let mut e = serde_json::json!({ "code": code, "message": message });
    if let Some(d) = data {
        e["data"] = d;
    }
    error_raw(id, &serde_json::to_vec(&e).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn refuses_bad_messages() {
        assert!(matches!(parse(b"{not json"), Err(Bad::Parse(_))));
        assert!(matches!(parse(b"{\"a\":1} x"), Err(Bad::Parse(_))));
        assert!(matches!(parse(b"[]"), Err(Bad::Invalid { .. })));
        assert!(matches!(parse(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#), Err(Bad::Invalid { .. })));
        assert!(matches!(parse(br#"{"jsonrpc":"2.0","id":{},"method":"x"}"#), Err(Bad::Invalid { .. })));
        assert_eq!(
            parse(br#"{"jsonrpc":"1.0","id":7,"method":"x"}"#).unwrap_err(),
            Bad::Invalid { id: Some(b"7".to_vec()), why: "\"jsonrpc\" must be \"2.0\"" }
        );
        assert!(matches!(parse(br#"{"jsonrpc":"2.0","id":1}"#), Err(Bad::Invalid { .. })));
    }

    #[test]
    fn splices() {
        let b = br#"{"a":1,"b":"x"}"#;
        let m = members(b, 0..b.len());
        let out = splice(b, vec![(m[1].1.clone(), b"2".to_vec()), (m[0].1.clone(), b"[]".to_vec())]);
        assert_eq!(out, br#"{"a":[],"b":2}"#);
    }
}
