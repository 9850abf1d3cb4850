//! What a JSON-RPC message too large to frame still tells: the framing
//! layer keeps its first and last bytes ([`crate::frame::line::EDGE`] each),
//! and this module reads whether it is a response and which id it answers
//! (or a request, and its id).
//!
//! SDKs put the envelope at either end: the Python SDK writes
//! `{"jsonrpc":"2.0","id":7,"result":{...}}` (the id in the first bytes), the
//! TypeScript SDK `{"result":{...},"jsonrpc":"2.0","id":7}` (the id in the
//! last bytes). The head is scanned forward over the top-level members that
//! fit in it; the tail is read backward only for a last member `"id": N`
//! closing the object. A reply's id is taken only from a message whose head
//! shows `result` or `error` and no `method`, so a request is never taken
//! for an answer; a request's id only from its head.

use crate::json;

/// What a clipped message is, as far as its edges tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clipped<'a> {
    /// A response to request `id` (the id's JSON text: a number, or a string
    /// without escapes).
    Reply { id: &'a [u8] },
    /// A response whose id is in neither edge.
    ReplyWithoutId,
    /// A request (`id`: its id, when the head holds it) or a notification
    /// (`id: None`): its head names a `method`.
    Request { id: Option<&'a [u8]> },
    /// The head does not show what it is (not an object, or no telling key
    /// in the bytes kept).
    Unknown,
}

impl<'a> Clipped<'a> {
    /// The id of the request this message answers: its own id, or, for a
    /// reply whose id is in neither edge that came on the response stream
    /// of request `on` (an HTTP POST's SSE stream, which is that request's
    /// own), `on`.
    pub fn answers(self, on: Option<&'a [u8]>) -> Option<&'a [u8]> {
        match self {
            Clipped::Reply { id } => Some(id),
            Clipped::ReplyWithoutId => on,
            Clipped::Request { .. } | Clipped::Unknown => None,
        }
    }
}

/// Reads the message whose first bytes are `head` and last bytes `tail`.
pub fn classify<'a>(head: &'a [u8], tail: &'a [u8]) -> Clipped<'a> {
    let Head { reply, method, id } = scan_head(head);
    match (method, reply, id) {
        (true, _, id) => Clipped::Request { id },
        (false, true, Some(id)) => Clipped::Reply { id },
        (false, true, None) => last_id(tail).map_or(Clipped::ReplyWithoutId, |id| Clipped::Reply { id }),
        (false, false, _) => Clipped::Unknown,
    }
}

#[derive(Default)]
struct Head<'a> {
    reply: bool,
    method: bool,
    id: Option<&'a [u8]>,
}

/// The top-level members of the object that starts `head`, up to the first
/// one that does not fit.
fn scan_head(head: &[u8]) -> Head<'_> {
    let mut out = Head::default();
    let mut pos = skip_ws(head, 0);
    if head.get(pos) != Some(&b'{') {
        return out;
    }
    pos += 1;
    loop {
        let Ok(key) = json::skip_value(head, pos) else { return out };
        pos = skip_ws(head, key.span().end);
        let Some(key) = key.as_str() else { return out };
        if head.get(pos) != Some(&b':') {
            return out;
        }
        let value = json::skip_value(head, pos + 1);
        if key.eq_str("method") {
            out.method = true;
        } else if key.eq_str("result") || key.eq_str("error") {
            out.reply = true;
        } else if key.eq_str("id") {
            // A number at the very end of the head may be cut short.
            out.id = value.ok().filter(|v| v.span().end < head.len()).map(|v| v.bytes());
        }
        let Ok(value) = value else { return out };
        pos = skip_ws(head, value.span().end);
        match head.get(pos) {
            Some(b',') => pos += 1,
            _ => return out,
        }
    }
}

/// The id in a last member `"id": N` (or `"id": "N"`) that closes the
/// object `tail` ends.
fn last_id(tail: &[u8]) -> Option<&[u8]> {
    let mut end = trim_end(tail, tail.len());
    if end == 0 || tail[end - 1] != b'}' {
        return None;
    }
    end = trim_end(tail, end - 1);
    let start = if end > 0 && tail[end - 1] == b'"' {
        let open = tail[..end - 1].iter().rposition(|&b| b == b'"')?;
        if tail[open + 1..end - 1].contains(&b'\\') {
            return None;
        }
        open
    } else {
        let digits = tail[..end].iter().rev().take_while(|b| b.is_ascii_digit() || **b == b'-').count();
        end - digits
    };
    let id = tail.get(start..end).filter(|id| !id.is_empty())?;
    json::parse(id).ok()?;
    let colon = trim_end(tail, start);
    if colon == 0 || tail[colon - 1] != b':' {
        return None;
    }
    let key_end = trim_end(tail, colon - 1);
    let key = tail.get(key_end.checked_sub(4)?..key_end)?;
    let before = trim_end(tail, key_end - 4);
    (key == b"\"id\"" && before > 0 && matches!(tail[before - 1], b',' | b'{')).then_some(id)
}

fn skip_ws(b: &[u8], mut pos: usize) -> usize {
    while b.get(pos).is_some_and(|c| is_ws(*c)) {
        pos += 1;
    }
    pos
}

fn trim_end(b: &[u8], mut end: usize) -> usize {
    while end > 0 && is_ws(b[end - 1]) {
        end -= 1;
    }
    end
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(id: &str) -> Clipped<'_> {
        Clipped::Reply { id: id.as_bytes() }
    }

    #[test]
    fn id_first_as_the_python_sdk_writes() {
        let head = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"xxxxxxx"#;
        assert_eq!(classify(head, b"xxxx\"}]}}"), reply("7"));
        let head = br#"{ "jsonrpc" : "2.0" , "id" : "41", "error": {"code": -1, "message": "xxxxx"#;
        assert_eq!(classify(head, b"xx\"}}"), reply("\"41\""));
    }

    #[test]
    fn id_last_as_the_typescript_sdk_writes() {
        let head = br#"{"result":{"content":[{"type":"text","text":"xxxxxx"#;
        assert_eq!(classify(head, br#"xxxx"}]},"jsonrpc":"2.0","id":12}"#), reply("12"));
        assert_eq!(classify(head, b"xx\"}]}, \"id\" : \"9\" }\r"), reply("\"9\""));
    }

    #[test]
    fn a_nested_or_lookalike_id_is_not_taken() {
        let head = br#"{"result":{"content":[{"type":"text","text":"xxxxxx"#;
        // The last member closes a nested object, not the message.
        assert_eq!(classify(head, br#"xx","id":3}}"#), Clipped::ReplyWithoutId);
        // A key that only ends in `id`.
        assert_eq!(classify(head, br#"xx","xid":3}"#), Clipped::ReplyWithoutId);
        assert_eq!(classify(head, br#"xx\"id":3}"#), Clipped::ReplyWithoutId);
        // A string id with an escape is not read.
        assert_eq!(classify(head, br#"xx","id":"a\"b"}"#), Clipped::ReplyWithoutId);
        // Nothing usable at the end.
        assert_eq!(classify(head, b"xxxx"), Clipped::ReplyWithoutId);
        assert_eq!(classify(head, b""), Clipped::ReplyWithoutId);
    }

    #[test]
    fn requests_and_unknown_heads_are_not_replies() {
        let req = br#"{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{"xxxx"#;
        assert_eq!(classify(req, br#"x"}},"id":5}"#), Clipped::Request { id: Some(b"5") });
        let note = br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"xxx"#;
        assert_eq!(classify(note, b"x\"}}"), Clipped::Request { id: None });
        // A method after the result still makes it no reply.
        let odd = br#"{"error":{"code":1,"message":"m"},"method":"x","params":{"a":"xxx"#;
        assert_eq!(classify(odd, b"}"), Clipped::Request { id: None });
        assert_eq!(classify(b"[{\"id\":1,\"result\":", b"\"id\":1}"), Clipped::Unknown);
        assert_eq!(classify(br#"{"jsonrpc":"2.0","#, br#""id":1}"#), Clipped::Unknown);
        assert_eq!(classify(b"", b""), Clipped::Unknown);
        assert_eq!(classify(b"garbage", b"garbage"), Clipped::Unknown);
    }

    #[test]
    fn a_head_cut_inside_the_id_falls_back_to_the_tail() {
        assert_eq!(classify(br#"{"result":{"a":"x"#, br#"x"},"id":123}"#), reply("123"));
        // Without the member before it, `"id":` might be a string's content.
        assert_eq!(classify(br#"{"result":{"a":"x"#, b"\"id\":123}"), Clipped::ReplyWithoutId);
        // The head ends inside the id's digits: the tail has all of them.
        assert_eq!(classify(br#"{"error":{"code":-1,"message":"m"},"id":12"#, b",\"id\":123}"), reply("123"));
    }

    #[test]
    fn a_reply_on_its_request_stream_answers_that_request() {
        let on = Some(&b"4"[..]);
        assert_eq!(reply("9").answers(on), Some(&b"9"[..]));
        assert_eq!(Clipped::ReplyWithoutId.answers(on), on);
        assert_eq!(Clipped::ReplyWithoutId.answers(None), None);
        assert_eq!(Clipped::Request { id: Some(b"4") }.answers(on), None);
        assert_eq!(Clipped::Unknown.answers(on), None);
    }

    #[test]
    fn no_input_panics() {
        let samples: [&[u8]; 8] = [b"{", b"}", b"{\"", b"\"id\"}", b":}", b"-}", b"\"\"}", b"{\"id\":}"];
        for h in samples {
            for t in samples {
                let _ = classify(h, t);
            }
        }
    }
}
