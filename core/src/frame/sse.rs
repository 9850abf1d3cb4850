//! Server-Sent Events (`text/event-stream`): encoder and incremental decoder.
//!
//! The decoder follows the WHATWG HTML "event stream interpretation" rules:
//! lines end with CRLF, LF or CR (a CR at the end of one read and the LF at the
//! start of the next are one line ending); a UTF-8 BOM at stream start is
//! dropped; lines starting with `:` are comments and ignored; `field: value`
//! loses one space after the colon; `data` lines are joined with `\n`; an `id`
//! containing NUL is ignored; `retry` is used only if it is all ASCII digits; a
//! blank line dispatches the event, unless no `data` line was seen; unknown
//! fields are ignored; an event not ended by a blank line is never dispatched.
//! Bytes are passed through as they are: UTF-8 validation belongs to whoever
//! parses the data.
use heapless::Vec;

use super::buf::Buf;
use super::edges::Edges;
use super::out::Out;
use super::{parse_decimal, WriteError};

/// Longest `event` field value kept by [`SseDecoder`]; a longer one makes its
/// event [`SseItem::TooLarge`].
pub const MAX_EVENT_TYPE: usize = 64;
/// Longest `id` field value kept by [`SseDecoder`]; a longer one makes its event
/// [`SseItem::TooLarge`] and clears the last event id.
pub const MAX_ID: usize = 256;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One event, as written by [`write_event`] and returned by [`SseDecoder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SseEvent<'a> {
    /// The `event` field; `None` (or empty) means the default type, `message`.
    pub event: Option<&'a [u8]>,
    /// The `data` lines joined with `\n`.
    pub data: &'a [u8],
    /// The `id` field given in this event, if any. The id that persists across
    /// events (for `Last-Event-ID`) is [`SseDecoder::last_event_id`].
    pub id: Option<&'a [u8]>,
    /// The `retry` field given in this event, in milliseconds, if valid.
    pub retry: Option<u64>,
}

/// One decoded item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseItem<'a> {
    Event(SseEvent<'a>),
    /// An event did not fit in the storage (or its `event`/`id` exceeded
    /// [`MAX_EVENT_TYPE`]/[`MAX_ID`]); it was dropped up to the blank line
    /// ending it. `len` counts the bytes dropped. `head` is the first bytes
    /// of its data (up to [`super::line::EDGE`]), `tail` the last bytes of
    /// the stream before the blank line (of its last `data` line, usually),
    /// where a message's envelope usually is.
    TooLarge { len: usize, head: &'a [u8], tail: &'a [u8] },
}

/// Writes `ev` as an event block: `event`, `id`, `retry`, then one `data` line
/// per line of `ev.data` (split at CRLF, LF or CR; so the decoder gives back
/// line breaks as `\n`), then the blank line. An empty `event` is omitted.
/// At least one `data` line is written, so the event is always dispatched.
///
/// Errors: [`WriteError::InvalidField`] if `event` or `id` contains CR or LF or
/// `id` contains NUL; [`WriteError::Overflow`] if `out` is too small.
pub fn write_event(ev: &SseEvent<'_>, out: &mut [u8]) -> Result<usize, WriteError> {
    let breaks = |v: &[u8]| v.iter().any(|&b| b == b'\r' || b == b'\n');
    let event = ev.event.filter(|e| !e.is_empty());
    if event.is_some_and(breaks) || ev.id.is_some_and(|id| breaks(id) || id.contains(&0)) {
        return Err(WriteError::InvalidField);
    }
    let mut w = Out::new(out);
    if let Some(event) = event {
        put_field(&mut w, b"event", event)?;
    }
    if let Some(id) = ev.id {
        put_field(&mut w, b"id", id)?;
    }
    if let Some(ms) = ev.retry {
        put_retry(&mut w, ms)?;
    }
    for line in Lines::new(ev.data) {
        put_field(&mut w, b"data", line)?;
    }
    w.put(b"\n")?;
    Ok(w.len())
}

/// Writes a comment block (`: text` per line, then a blank line): a keep-alive
/// that every client ignores. An empty `text` writes `: \n\n`.
pub fn write_comment(text: &[u8], out: &mut [u8]) -> Result<usize, WriteError> {
    let mut w = Out::new(out);
    for line in Lines::new(text) {
        put_field(&mut w, b"", line)?;
    }
    w.put(b"\n")?;
    Ok(w.len())
}

/// Writes `retry: ms` and a blank line: sets the client's reconnection time
/// without dispatching an event (e.g. before closing a stream).
pub fn write_retry(ms: u64, out: &mut [u8]) -> Result<usize, WriteError> {
    let mut w = Out::new(out);
    put_retry(&mut w, ms)?;
    w.put(b"\n")?;
    Ok(w.len())
}

fn put_field(w: &mut Out<'_>, name: &[u8], value: &[u8]) -> Result<(), WriteError> {
    w.put(name)?;
    w.put(b": ")?;
    w.put(value)?;
    w.put(b"\n")
}

fn put_retry(w: &mut Out<'_>, ms: u64) -> Result<(), WriteError> {
    w.put(b"retry: ")?;
    w.put_num(ms, 10)?;
    w.put(b"\n")
}

/// The lines of `text` split at CRLF, LF or CR; `""` is one empty line and a
/// trailing line break ends with an empty line.
struct Lines<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a [u8]) -> Self {
        Lines { rest: Some(text) }
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        let Some(i) = rest.iter().position(|&b| b == b'\r' || b == b'\n') else {
            self.rest = None;
            return Some(rest);
        };
        let after = match rest.get(i..i + 2) {
            Some(b"\r\n") => i + 2,
            _ => i + 1,
        };
        self.rest = rest.get(after..);
        rest.get(..i)
    }
}

/// Skipping the rest of an over-large event, up to the blank line ending it.
#[derive(Clone, Copy)]
struct Skip {
    dropped: usize,
    at_line_start: bool,
    /// The blank line was found; report the drop before decoding on.
    ended: bool,
}

impl Skip {
    /// Scans `bytes` up to the blank line ending the event and returns how many
    /// bytes it consumed. `skip_lf` is the decoder's "line ended with CR" flag.
    fn scan(&mut self, skip_lf: &mut bool, bytes: &[u8]) -> usize {
        for (i, &b) in bytes.iter().enumerate() {
            if core::mem::take(skip_lf) && b == b'\n' {
                continue;
            }
            if b == b'\r' || b == b'\n' {
                *skip_lf = b == b'\r';
                if self.at_line_start {
                    self.dropped = self.dropped.saturating_add(i + 1);
                    self.ended = true;
                    return i + 1;
                }
                self.at_line_start = true;
            } else {
                self.at_line_start = false;
            }
        }
        self.dropped = self.dropped.saturating_add(bytes.len());
        bytes.len()
    }
}

/// `bytes` without the line endings that end them.
fn without_line_ends(bytes: &[u8]) -> &[u8] {
    let ends = bytes.iter().rev().take_while(|&&b| b == b'\r' || b == b'\n').count();
    &bytes[..bytes.len() - ends]
}

/// Incremental `text/event-stream` decoder in caller-provided storage.
///
/// The storage holds the event being assembled (its joined `data`) plus the
/// line being read, so its length bounds one event's data. The caller loop is
/// the one of [`super::line::LineDecoder`]:
///
/// ```
/// use mcpx_core::frame::sse::{SseDecoder, SseItem};
/// let mut d = SseDecoder::new([0u8; 256]);
/// let mut input: &[u8] = b": keep-alive\n\nid: 1\r\nevent: message\r\ndata: {}\r\n\r\n";
/// let mut data = Vec::new();
/// while !input.is_empty() {
///     let n = d.feed(input);
///     input = &input[n..];
///     while let Some(item) = d.next() {
///         if let SseItem::Event(ev) = item { data.push(ev.data.to_vec()) }
///     }
/// }
/// assert_eq!(data, [b"{}"]);
/// assert_eq!(d.last_event_id(), b"1");
/// ```
pub struct SseDecoder<B> {
    buf: Buf<B>,
    /// `storage[..data_len]` is the data buffer: each `data` value plus `\n`.
    data_len: usize,
    event: Vec<u8, MAX_EVENT_TYPE>,
    last_id: Vec<u8, MAX_ID>,
    /// An `id` field was seen in the current event.
    block_id: bool,
    block_retry: Option<u64>,
    retry: Option<u64>,
    /// The last line ended with CR; an LF right after it belongs to it.
    skip_lf: bool,
    /// Bytes of a BOM matched (and held back) at stream start; `None` after.
    bom: Option<usize>,
    skipping: Option<Skip>,
    /// An event was returned: clear it before touching the storage again.
    dispatched: bool,
    /// The first and last bytes of the event being skipped.
    edges: Edges,
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> SseDecoder<B> {
    /// A decoder whose capacity is `storage`'s length (at least 3 bytes, to
    /// recognise a BOM).
    pub fn new(storage: B) -> Self {
        SseDecoder {
            buf: Buf::new(storage),
            data_len: 0,
            event: Vec::new(),
            last_id: Vec::new(),
            block_id: false,
            block_retry: None,
            retry: None,
            skip_lf: false,
            bom: Some(0),
            skipping: None,
            dispatched: false,
            edges: Edges::EMPTY,
        }
    }

    /// Takes bytes from `input` and returns how many were taken. Once [`Self::next`]
    /// has returned `None`, a non-empty `input` is always at least partly taken.
    pub fn feed(&mut self, input: &[u8]) -> usize {
        self.release();
        let mut used = 0;
        while let Some(matched) = self.bom {
            let Some(&b) = input.get(used) else {
                return used;
            };
            if BOM.get(matched) == Some(&b) {
                used += 1;
                self.bom = Some(matched + 1).filter(|&m| m < BOM.len());
            } else {
                self.bom = None;
                self.buf.fill(0, BOM.get(..matched).unwrap_or(&[]));
            }
        }
        let rest = input.get(used..).unwrap_or(&[]);
        if let Some(skip) = self.skipping.as_mut().filter(|s| !s.ended) {
            let n = skip.scan(&mut self.skip_lf, rest);
            self.edges.push_tail(&rest[..n]);
            return used + n;
        }
        used + self.buf.fill(self.data_len, rest)
    }

    /// The next dispatched event or over-large-event report, if any. The event
    /// borrows the decoder until the next call on it.
    #[allow(clippy::should_implement_trait)] // lending: items borrow the decoder
    pub fn next(&mut self) -> Option<SseItem<'_>> {
        self.release();
        loop {
            if let Some(skip) = &mut self.skipping {
                if !skip.ended {
                    let pending = self.buf.pending();
                    let n = skip.scan(&mut self.skip_lf, pending);
                    self.edges.push_tail(&pending[..n]);
                    self.buf.consume(n);
                }
                if !skip.ended {
                    return None;
                }
                let len = skip.dropped;
                self.skipping = None;
                return Some(SseItem::TooLarge { len, head: self.edges.head(), tail: self.edges.tail(without_line_ends) });
            }
            if self.skip_lf {
                match self.buf.pending().first() {
                    Some(&b'\n') => {
                        self.skip_lf = false;
                        self.buf.consume(1);
                    }
                    Some(_) => self.skip_lf = false,
                    None => {}
                }
            }
            let Some(i) = self.buf.find(|s| memchr::memchr2(b'\r', b'\n', s)) else {
                if self.buf.is_full(self.data_len) {
                    self.drop_event(self.data_len, false);
                    continue;
                }
                return None;
            };
            self.skip_lf = self.buf.pending().get(i) == Some(&b'\r');
            let line = self.buf.consume(i + 1);
            if self.line(line.start..line.end - 1) {
                self.dispatched = true;
                return Some(SseItem::Event(SseEvent {
                    event: Some(self.event.as_slice()).filter(|e| !e.is_empty()),
                    data: self.buf.storage().get(..self.data_len - 1).unwrap_or(&[]),
                    id: Some(self.last_id.as_slice()).filter(|_| self.block_id),
                    retry: self.block_retry,
                }));
            }
        }
    }

    /// The last event id: set by every valid `id` field (empty: none). Send it
    /// as `Last-Event-ID` when reconnecting.
    pub fn last_event_id(&self) -> &[u8] {
        &self.last_id
    }

    /// The reconnection time from the last valid `retry` field, in milliseconds.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Bytes taken by [`Self::feed`] and held in storage: the current event's
    /// data and any unprocessed input.
    pub fn buffered(&self) -> usize {
        self.data_len + self.buf.len()
    }

    /// Processes one line (at `range` in the storage, without its ending);
    /// returns true when it dispatches an event.
    fn line(&mut self, range: core::ops::Range<usize>) -> bool {
        let line = self.buf.storage().get(range.clone()).unwrap_or(&[]);
        if line.is_empty() {
            if self.data_len > 0 {
                return true;
            }
            self.clear_event();
            return false;
        }
        let (name_len, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return false,
            Some(c) => {
                let skip = if line.get(c + 1) == Some(&b' ') { 2 } else { 1 };
                (c, range.start + c + skip..range.end)
            }
            None => (line.len(), range.end..range.end),
        };
        let storage = self.buf.storage();
        let name = storage.get(range.start..range.start + name_len).unwrap_or(&[]);
        let v = storage.get(value.clone()).unwrap_or(&[]);
        match name {
            b"data" => {
                let at = self.data_len;
                let storage = self.buf.storage_mut();
                storage.copy_within(value.clone(), at);
                let end = at + value.len();
                if let Some(b) = storage.get_mut(end) {
                    *b = b'\n';
                }
                self.data_len = end + 1;
            }
            b"event" => {
                self.event.clear();
                if self.event.extend_from_slice(v).is_err() {
                    self.drop_event(v.len(), true);
                }
            }
            b"id" if !v.contains(&0) => {
                self.last_id.clear();
                if self.last_id.extend_from_slice(v).is_err() {
                    self.drop_event(v.len(), true);
                } else {
                    self.block_id = true;
                }
            }
            b"retry" => {
                if let Some(ms) = parse_decimal(v) {
                    self.retry = Some(ms);
                    self.block_retry = Some(ms);
                }
            }
            _ => {}
        }
        false
    }

    /// Drops the current event and skips to the blank line ending it;
    /// `!at_line_start`: the storage filled up inside a line, which is the
    /// pending input.
    fn drop_event(&mut self, dropped: usize, at_line_start: bool) {
        self.edges.clear();
        self.edges.push_head(self.buf.storage().get(..self.data_len).unwrap_or(&[]));
        if !at_line_start {
            if let Some(value) = self.buf.pending().strip_prefix(b"data:") {
                self.edges.push_head(value.strip_prefix(b" ").unwrap_or(value));
            }
        }
        self.clear_event();
        self.skipping = Some(Skip { dropped, at_line_start, ended: false });
    }

    fn clear_event(&mut self) {
        self.data_len = 0;
        self.event.clear();
        self.block_id = false;
        self.block_retry = None;
    }

    fn release(&mut self) {
        if core::mem::take(&mut self.dispatched) {
            self.clear_event();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::test_util::split;
    use proptest::prelude::*;
    use std::vec::Vec;

    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    struct Ev {
        event: Option<Vec<u8>>,
        data: Vec<u8>,
        id: Option<Vec<u8>>,
        retry: Option<u64>,
    }

    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Item {
        Event(Ev),
        TooLarge(usize),
    }

    struct Decoded {
        items: Vec<Item>,
        /// Each `TooLarge`'s head and tail.
        edges: Vec<(Vec<u8>, Vec<u8>)>,
        last_id: Vec<u8>,
        retry: Option<u64>,
    }

    fn ev(data: &str) -> Item {
        Item::Event(Ev { data: data.as_bytes().to_vec(), ..Ev::default() })
    }

    fn decode(cap: usize, reads: &[&[u8]]) -> Decoded {
        let mut d = SseDecoder::new(vec![0u8; cap]);
        let mut items = Vec::new();
        let mut edges = Vec::new();
        for read in reads {
            let mut input = *read;
            let mut stalls = 0;
            while !input.is_empty() {
                let n = d.feed(input);
                input = &input[n..];
                stalls = if n == 0 { stalls + 1 } else { 0 };
                assert!(stalls < 2, "feed made no progress after next was drained");
                while let Some(item) = d.next() {
                    items.push(match item {
                        SseItem::Event(e) => Item::Event(Ev {
                            event: e.event.map(<[u8]>::to_vec),
                            data: e.data.to_vec(),
                            id: e.id.map(<[u8]>::to_vec),
                            retry: e.retry,
                        }),
                        SseItem::TooLarge { len, head, tail } => {
                            edges.push((head.to_vec(), tail.to_vec()));
                            Item::TooLarge(len)
                        }
                    });
                }
            }
        }
        Decoded { items, edges, last_id: d.last_event_id().to_vec(), retry: d.retry() }
    }

    fn decode_all(stream: &[u8]) -> Vec<Item> {
        decode(256, &[stream]).items
    }

    /// Straightforward WHATWG event-stream interpretation over the whole stream,
    /// with the decoder's bounds on `event` and `id` values.
    fn reference(stream: &[u8]) -> Decoded {
        let mut s = stream.strip_prefix(BOM).unwrap_or(stream);
        let (mut items, mut last_id, mut retry) = (Vec::new(), Vec::new(), None);
        let (mut data, mut event, mut block_id, mut block_retry) = (Vec::new(), Vec::new(), false, None);
        // Bytes of an event dropped for an over-long `event` or `id`, counted
        // as the decoder does: from the field's value to the first byte of the
        // blank line's ending.
        let mut dropped: Option<usize> = None;
        while let Some(i) = s.iter().position(|&b| b == b'\r' || b == b'\n') {
            let line = &s[..i];
            let ending = if s[i..].starts_with(b"\r\n") { 2 } else { 1 };
            s = &s[i + ending..];
            if let Some(n) = dropped.as_mut() {
                if line.is_empty() {
                    items.push(Item::TooLarge(*n + 1));
                    dropped = None;
                } else {
                    *n += line.len() + ending;
                }
                continue;
            }
            if line.is_empty() {
                if !data.is_empty() {
                    data.pop();
                    items.push(Item::Event(Ev {
                        event: Some(event.clone()).filter(|e: &Vec<u8>| !e.is_empty()),
                        data: data.clone(),
                        id: Some(last_id.clone()).filter(|_| block_id),
                        retry: block_retry,
                    }));
                }
                (data, event, block_id, block_retry) = (Vec::new(), Vec::new(), false, None);
                continue;
            }
            if line[0] == b':' {
                continue;
            }
            let (name, value) = match line.iter().position(|&b| b == b':') {
                Some(c) => (&line[..c], line[c + 1..].strip_prefix(b" ").unwrap_or(&line[c + 1..])),
                None => (line, &b""[..]),
            };
            let too_long = match name {
                b"event" => value.len() > MAX_EVENT_TYPE,
                b"id" => value.len() > MAX_ID && !value.contains(&0),
                _ => false,
            };
            if too_long {
                if name == b"id" {
                    last_id.clear();
                }
                dropped = Some(value.len() + ending - 1);
                (data, event, block_id, block_retry) = (Vec::new(), Vec::new(), false, None);
                continue;
            }
            match name {
                b"event" => event = value.to_vec(),
                b"data" => {
                    data.extend_from_slice(value);
                    data.push(b'\n');
                }
                b"id" if !value.contains(&0) => {
                    last_id = value.to_vec();
                    block_id = true;
                }
                b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                    if let Ok(ms) = std::str::from_utf8(value).unwrap().parse() {
                        retry = Some(ms);
                        block_retry = Some(ms);
                    }
                }
                _ => {}
            }
        }
        Decoded { items, edges: Vec::new(), last_id, retry }
    }

    fn write(ev: &SseEvent<'_>) -> Vec<u8> {
        let mut out = vec![0u8; 1024];
        let n = write_event(ev, &mut out).unwrap();
        out.truncate(n);
        out
    }

    #[test]
    fn writes_fields_in_order_and_splits_data_lines() {
        let ev = SseEvent { event: Some(b"message"), data: b"{\"a\":1}\n{}", id: Some(b"7"), retry: Some(1500) };
        assert_eq!(write(&ev), b"event: message\nid: 7\nretry: 1500\ndata: {\"a\":1}\ndata: {}\n\n");
        let plain = SseEvent { data: b"x\r\ny\rz\n", ..SseEvent::default() };
        assert_eq!(write(&plain), b"data: x\ndata: y\ndata: z\ndata: \n\n");
    }

    #[test]
    fn priming_event_has_id_and_empty_data_and_is_dispatched() {
        let ev = SseEvent { id: Some(b"s1-0"), ..SseEvent::default() };
        let bytes = write(&ev);
        assert_eq!(bytes, b"id: s1-0\ndata: \n\n");
        let d = decode(64, &[&bytes]);
        assert_eq!(d.items, vec![Item::Event(Ev { id: Some(b"s1-0".to_vec()), ..Ev::default() })]);
        assert_eq!(d.last_id, b"s1-0");
    }

    #[test]
    fn writer_rejects_fields_that_would_break_framing() {
        let mut out = [0u8; 64];
        for ev in [
            SseEvent { event: Some(b"a\nb"), ..SseEvent::default() },
            SseEvent { id: Some(b"1\r"), ..SseEvent::default() },
            SseEvent { id: Some(b"1\0"), ..SseEvent::default() },
        ] {
            assert_eq!(write_event(&ev, &mut out), Err(WriteError::InvalidField));
        }
        let big = SseEvent { data: &[b'x'; 64], ..SseEvent::default() };
        assert_eq!(write_event(&big, &mut out), Err(WriteError::Overflow));
        assert_eq!(write_comment(b"keep-alive", &mut [0u8; 4]), Err(WriteError::Overflow));
    }

    // row: streamable-http-sse-comment-keepalive
    #[test]
    fn comments_are_written_and_ignored() {
        let mut out = [0u8; 64];
        let n = write_comment(b"ping\nagain", &mut out).unwrap();
        assert_eq!(&out[..n], b": ping\n: again\n\n");
        let mut stream = out[..n].to_vec();
        stream.extend_from_slice(b":\ndata: 1\n:x\n\n");
        assert_eq!(decode_all(&stream), vec![ev("1")]);
    }

    #[test]
    fn retry_block_sets_reconnection_time_without_an_event() {
        let mut out = [0u8; 32];
        let n = write_retry(3000, &mut out).unwrap();
        assert_eq!(&out[..n], b"retry: 3000\n\n");
        let d = decode(64, &[&out[..n]]);
        assert!(d.items.is_empty());
        assert_eq!(d.retry, Some(3000));
    }

    #[test]
    fn retry_must_be_all_digits() {
        let d = decode(64, &[b"retry: 10\n\nretry: 2x\n\nretry:\n\nretry: -1\n\nretry: 99999999999999999999\n\n"]);
        assert_eq!(d.retry, Some(10));
        let d = decode(64, &[b"retry:20\ndata\n\n"]);
        assert_eq!(d.items, vec![Item::Event(Ev { retry: Some(20), ..Ev::default() })]);
    }

    #[test]
    fn multi_line_data_is_joined_and_one_leading_space_dropped() {
        assert_eq!(decode_all(b"data:a\ndata:  b\ndata\n\n"), vec![ev("a\n b\n")]);
    }

    #[test]
    fn event_type_id_and_unknown_fields() {
        let items = decode_all(b"event: endpoint\nid: 1\nfoo: bar\ndata: /post\n\ndata: 2\n\n");
        assert_eq!(
            items,
            vec![
                Item::Event(Ev {
                    event: Some(b"endpoint".to_vec()),
                    data: b"/post".to_vec(),
                    id: Some(b"1".to_vec()),
                    retry: None
                }),
                ev("2"),
            ]
        );
    }

    #[test]
    fn last_event_id_persists_and_nul_ids_are_ignored() {
        let d = decode(64, &[b"id: 5\ndata: a\n\ndata: b\n\nid: 6\0\ndata: c\n\nid\n\n"]);
        assert_eq!(d.items[1], ev("b"));
        assert_eq!(d.items[2], ev("c"));
        assert_eq!(d.last_id, b"");
        assert_eq!(decode(64, &[b"id: 5\ndata: a\n\nid: 6\0\n\n"]).last_id, b"5");
    }

    #[test]
    fn blank_line_without_data_dispatches_nothing_and_resets_type() {
        assert_eq!(decode_all(b"event: x\n\ndata: y\n\n"), vec![ev("y")]);
        assert_eq!(decode_all(b"data: unterminated\n"), vec![]);
    }

    #[test]
    fn every_line_ending_and_cr_lf_split_across_reads() {
        let want = vec![ev("a\nb"), ev("c")];
        assert_eq!(decode_all(b"data: a\rdata: b\r\rdata: c\r\n\r\n"), want);
        assert_eq!(decode(64, &[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\ndata: c\n\n"]).items, want);
        // A lone CR then a blank LF line: two line endings, so the event dispatches.
        assert_eq!(decode(64, &[b"data: a\r", b"\r", b"\n"]).items, vec![ev("a")]);
    }

    #[test]
    fn bom_is_stripped_once_even_when_split() {
        assert_eq!(decode(64, &[b"\xEF", b"\xBB", b"\xBFdata: 1\n\n"]).items, vec![ev("1")]);
        assert_eq!(decode_all(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: 1\n\n"), vec![]);
        // A BOM prefix that turns out not to be one is kept as data.
        assert_eq!(decode(64, &[b"\xEF\xBB", b"\x80: x\ndata: 1\n\n"]).items, vec![ev("1")]);
    }

    #[test]
    fn oversized_event_is_dropped_to_its_blank_line() {
        let mut stream = b"data: ok\n\ndata: ".to_vec();
        stream.extend_from_slice(&[b'x'; 100]);
        stream.extend_from_slice(b"\ndata: more\n\ndata: next\n\n");
        let d = decode(32, &[&stream[..20], &stream[20..]]);
        assert_eq!(d.items.len(), 3);
        assert_eq!(d.items[0], ev("ok"));
        assert!(matches!(d.items[1], Item::TooLarge(n) if n >= 32));
        assert_eq!(d.items[2], ev("next"));
    }

    /// Every over-large event's (head, tail) as the decoder reports them.
    fn edges_of(cap: usize, reads: &[&[u8]]) -> Vec<(Vec<u8>, Vec<u8>)> {
        decode(cap, reads).edges
    }

    #[test]
    fn oversized_event_keeps_the_first_and_last_bytes_of_its_data() {
        use crate::clipped::{classify, Clipped};
        use crate::frame::line::EDGE;
        let pad = "x".repeat(3000);
        let py = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"text":"{pad}"}}}}"#);
        let ts = format!(r#"{{"result":{{"text":"{pad}"}},"jsonrpc":"2.0","id":12}}"#);
        for end in ["\n\n", "\r\n\r\n", "\r\r"] {
            let stream = format!("data: ok{end}event: message\nid: 3\ndata: {py}{end}data: {ts}{end}data: after{end}");
            let reads: Vec<&[u8]> = stream.as_bytes().chunks(100).collect();
            let got = edges_of(512, &reads);
            assert_eq!(got.len(), 2, "{end:?}");
            assert_eq!(got[0].0, &py.as_bytes()[..EDGE]);
            assert_eq!(got[0].1, &py.as_bytes()[py.len() - EDGE..]);
            assert_eq!(got[1].1, &ts.as_bytes()[ts.len() - EDGE..]);
            assert_eq!(classify(&got[0].0, &got[0].1), Clipped::Reply { id: b"7" });
            assert_eq!(classify(&got[1].0, &got[1].1), Clipped::Reply { id: b"12" });
        }
        // Data lines before the one that overflows are joined into the head.
        let stream = format!("data: {{\"id\":5,\ndata: \"result\":\"{pad}\"}}\n\n");
        let got = edges_of(512, &[stream.as_bytes()]);
        assert_eq!(got[0].0, format!("{{\"id\":5,\n\"result\":\"{pad}").as_bytes()[..EDGE]);
        // An event dropped for its long `event` field keeps the data seen before it.
        let long = "e".repeat(MAX_EVENT_TYPE + 1);
        let got = edges_of(512, &[format!("data: {{\"id\":1}}\nevent: {long}\ndata: z\n\n").as_bytes()]);
        assert_eq!(got, [(b"{\"id\":1}\n".to_vec(), b"data: z".to_vec())]);
    }

    #[test]
    fn many_data_lines_overflow_the_assembled_event() {
        let stream = b"data: 0123\ndata: 0123\ndata: 0123\ndata: 0123\n\ndata: z\n\n";
        let d = decode(16, &[stream]);
        assert!(matches!(d.items[0], Item::TooLarge(_)));
        assert_eq!(d.items[1..], [ev("z")]);
    }

    #[test]
    fn over_long_event_type_or_id_drops_the_event() {
        let long = "x".repeat(MAX_EVENT_TYPE + 1);
        let stream = format!("id: 1\ndata: a\n\nevent: {long}\ndata: b\n\ndata: c\n\n");
        let d = decode(512, &[stream.as_bytes()]);
        assert!(matches!(d.items[1], Item::TooLarge(_)));
        assert_eq!(d.items[2], ev("c"));
        assert_eq!(d.last_id, b"1");
        let long = "9".repeat(MAX_ID + 1);
        let d = decode(512, &[format!("id: 1\n\nid: {long}\ndata: b\n\ndata: c\n\n").as_bytes()]);
        assert_eq!(d.items[1..], [ev("c")]);
        assert_eq!(d.last_id, b"");
    }

    #[test]
    fn tiny_storage_never_stalls() {
        for cap in 0..4 {
            let d = decode(cap, &[b"data: 1\n\n:c\n\ndata: 22\r\n\r\n"]);
            assert!(d.items.iter().all(|i| matches!(i, Item::TooLarge(_))));
        }
    }

    #[test]
    fn event_borrows_storage_until_next_call() {
        let mut d = SseDecoder::new([0u8; 64]);
        assert_eq!(d.feed(b"data: a\n\ndata: b\n\n"), 18);
        match d.next() {
            Some(SseItem::Event(e)) => assert_eq!(e.data, b"a"),
            other => panic!("{other:?}"),
        }
        match d.next() {
            Some(SseItem::Event(e)) => assert_eq!(e.data, b"b"),
            other => panic!("{other:?}"),
        }
        assert_eq!(d.next(), None);
        assert_eq!(d.buffered(), 0);
    }


    /// A run longer than half of [`MAX_ID`] and than [`MAX_EVENT_TYPE`].
    static LONG: [u8; 130] = [b'z'; 130];

    /// Streams built from field names, separators, line endings and noise;
    /// `event` and `id` values over their bounds are common.
    fn stream() -> impl Strategy<Value = Vec<u8>> {
        let token = prop_oneof![
            Just(&b"data"[..]),
            Just(&b"event"[..]),
            Just(&b"id"[..]),
            Just(&b"retry"[..]),
            Just(&b":"[..]),
            Just(&b": "[..]),
            Just(&b" "[..]),
            Just(&b"7"[..]),
            Just(&b"x"[..]),
            Just(&b"\nevent: "[..]),
            Just(&b"\nid: "[..]),
            Just(&LONG[..]),
            Just(&b"\0"[..]),
            Just(&b"\n"[..]),
            Just(&b"\r"[..]),
            Just(&b"\r\n"[..]),
            Just(BOM),
        ];
        (any::<bool>(), prop::collection::vec(token, 0..60)).prop_map(|(bom, tokens)| {
            let mut s = if bom { BOM.to_vec() } else { Vec::new() };
            tokens.iter().for_each(|t| s.extend_from_slice(t));
            s
        })
    }

    fn arb_event() -> impl Strategy<Value = Ev> {
        let text = |n| prop::collection::vec(prop_oneof![Just(b'\r'), Just(b'\n'), Just(b' '), Just(b':'), any::<u8>()], 0..n);
        let field = prop::collection::vec(any::<u8>().prop_filter("no line breaks", |b| *b != b'\r' && *b != b'\n'), 0..12);
        (prop::option::of(field.clone()), text(40), prop::option::of(field), prop::option::of(any::<u64>())).prop_map(
            |(event, data, id, retry)| Ev {
                event: event.filter(|e| !e.is_empty()),
                data,
                id: id.map(|mut id| {
                    id.retain(|&b| b != 0);
                    id
                }),
                retry,
            },
        )
    }

    /// Line breaks as the decoder gives them back: CRLF and CR become LF.
    fn normalized(data: &[u8]) -> Vec<u8> {
        Lines::new(data).collect::<Vec<_>>().join(&b'\n')
    }

    proptest! {
        #[test]
        fn matches_the_reference_under_any_split(s in stream(), cuts in prop::collection::vec(any::<usize>(), 0..12)) {
            let reads = split(&s, &cuts);
            let reads: Vec<&[u8]> = reads.iter().map(|r| r.as_slice()).collect();
            let got = decode(16384, &reads);
            let want = reference(&s);
            prop_assert_eq!(got.items, want.items);
            prop_assert_eq!(got.last_id, want.last_id);
            prop_assert_eq!(got.retry, want.retry);
        }

        #[test]
        fn small_storage_is_split_independent(s in stream(), cuts in prop::collection::vec(any::<usize>(), 0..12), cap in 0usize..24) {
            let reads = split(&s, &cuts);
            let reads: Vec<&[u8]> = reads.iter().map(|r| r.as_slice()).collect();
            let (got, whole) = (decode(cap, &reads), decode(cap, &[&s]));
            // Events that fit are the reference's; only over-large ones become TooLarge.
            let fits: Vec<&Item> = got.items.iter().filter(|i| matches!(i, Item::Event(_))).collect();
            let reference = reference(&s).items;
            prop_assert!(fits.iter().all(|i| reference.contains(i)));
            prop_assert_eq!(got.items.len(), whole.items.len());
            prop_assert_eq!(got.retry, whole.retry);
        }

            #[test]
        fn decode_of_encode_is_identity(
            events in prop::collection::vec(arb_event(), 0..8),
            noise in prop::collection::vec(0u8..3, 0..8),
            cuts in prop::collection::vec(any::<usize>(), 0..12),
        ) {
            let mut s = Vec::new();
            for (i, e) in events.iter().enumerate() {
                let ev = SseEvent { event: e.event.as_deref(), data: &e.data, id: e.id.as_deref(), retry: e.retry };
                let mut out = vec![0u8; 512];
                let mut keepalive = [0u8; 32];
                let k = match noise.get(i) {
                    Some(0) => write_comment(b"keep-alive", &mut keepalive).unwrap(),
                    Some(1) => write_retry(250, &mut keepalive).unwrap(),
                    _ => 0,
                };
                s.extend_from_slice(&keepalive[..k]);
                let n = write_event(&ev, &mut out).unwrap();
                s.extend_from_slice(&out[..n]);
            }
            let reads = split(&s, &cuts);
            let reads: Vec<&[u8]> = reads.iter().map(|r| r.as_slice()).collect();
            let want: Vec<Item> = events.iter().map(|e| Item::Event(Ev { data: normalized(&e.data), ..e.clone() })).collect();
            prop_assert_eq!(decode(1024, &reads).items, want);
        }
    }
}
