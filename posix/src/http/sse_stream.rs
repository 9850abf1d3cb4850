//! SSE responses: the head, events and keep-alive comments, chunk-framed on
//! HTTP/1.1 (so the connection survives the stream's end) and delimited by
//! the connection's close on HTTP/1.0.
//!
//! A session's standalone (GET) stream and the SSE answer to each of its
//! POSTs are resumable ([`Replay`]): their events carry ids `<stream>-<n>`,
//! where `<stream>` is a number unique in the process and `n` counts its
//! events, so an id is unique across the session's streams and names the
//! stream it came from ([`StreamId`]: a POST's stream names its request
//! too). A 2025-11-25 client first gets a priming event (an
//! id, `retry`, empty data). Each event stays in a bounded buffer until the
//! client, reconnecting with `Last-Event-ID` (always a GET), shows it has
//! it; what came after is sent again, then the stream goes on: a POST's
//! until its last answer. An id of another stream replays nothing.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use mcpx_core::frame::http::{
    write_response_head, BodyFraming, Header, Version, LAST_CHUNK,
};
use mcpx_core::frame::sse::{write_comment, write_event, SseEvent};

use super::conn::Conn;
use crate::hub::IdKey;

pub(crate) struct SseOut {
    chunked: bool,
    keepalive: Duration,
    pub next_ping: Instant,
}

/// The reconnection time given with the priming event, in milliseconds.
pub(crate) const RETRY_MS: u64 = 1000;
/// Events a replay buffer keeps at most (fewer when the stream queue is
/// shorter), and their bytes: what every session with a GET stream may hold
/// at steady state, since a live stream's events are only known to be
/// received when the client resumes past them.
const REPLAY_EVENTS: usize = 256;
const REPLAY_BYTES: usize = 1 << 20;

/// Longest request id (its JSON) a POST's stream names in its event ids.
const MAX_NAMED_REQUEST: usize = 32;

/// What the ids of a resumable stream's events name: the stream's number
/// and, for the SSE answer to a POST, that it is one and the request it
/// answers when it has one short id (its JSON in hex): `<stream>-<n>` for a
/// standalone stream, `<stream>.<hex>-<n>` for a POST's. So a replica that
/// took the session over from a gone one knows a stream of that replica's
/// for a POST's, and can answer its request with an error when the client
/// comes back for it (issue 25; row streamable-http-event-id-encodes-stream).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StreamId {
    pub seq: u64,
    /// A POST's stream.
    pub post: bool,
    /// The request it answers, when named.
    pub request: Option<IdKey>,
}

impl StreamId {
    /// A standalone stream's.
    pub fn get(seq: u64) -> StreamId {
        StreamId { seq, post: false, request: None }
    }

    /// A POST's stream answering `request` (named when short enough).
    pub fn post(seq: u64, request: Option<&IdKey>) -> StreamId {
        StreamId { seq, post: true, request: request.filter(|r| r.bytes().len() <= MAX_NAMED_REQUEST).cloned() }
    }
}

/// The events of a resumable stream a client may not have yet.
pub(crate) struct Replay {
    pub stream: StreamId,
    /// Number of the next event (0 is the priming event's).
    next: u64,
    events: VecDeque<(u64, Vec<u8>)>,
    bytes: usize,
    max_events: usize,
}

/// A client attaching to a session's standalone stream.
pub(crate) struct Attach {
    pub stream: StreamId,
    /// A new stream (not resumed): it begins with a priming event when the
    /// client's revision knows them.
    pub fresh: bool,
    /// Events to send again first: (number, message).
    pub backlog: Vec<(u64, Vec<u8>)>,
    /// Events after the client's last one that the buffer no longer has.
    pub lost: u64,
}

impl Replay {
    pub fn new(stream: StreamId, max_events: usize) -> Replay {
        Replay { stream, next: 1, events: VecDeque::new(), bytes: 0, max_events: max_events.clamp(1, REPLAY_EVENTS) }
    }

    /// The number the next event gets.
    pub fn next(&self) -> u64 {
        self.next
    }

    /// Numbers an event that is not kept (the last of a live stream, which
    /// ends with it).
    pub fn number(&mut self) -> u64 {
        self.next += 1;
        self.next - 1
    }

    /// Keeps `msg` as the next event; the oldest go past the caps.
    pub fn push(&mut self, msg: Vec<u8>) -> u64 {
        let n = self.number();
        self.bytes += msg.len();
        self.events.push_back((n, msg));
        while self.events.len() > self.max_events || (self.bytes > REPLAY_BYTES && self.events.len() > 1) {
            if let Some((_, m)) = self.events.pop_front() {
                self.bytes -= m.len();
            }
        }
        n
    }

    /// Attaches a connection to `slot` (a session's standalone stream): it
    /// resumes the stream `last_event_id` names, else a new stream `stream`
    /// begins (and the old one's events are dropped).
    pub fn attach(slot: &mut Option<Replay>, stream: u64, last_event_id: Option<&str>, max_events: usize) -> Attach {
        let last = last_event_id.and_then(parse_id);
        let resumed = match (slot.as_mut(), last) {
            (Some(r), Some((st, n))) if st == r.stream.seq => r.resume(n),
            _ => None,
        };
        resumed.unwrap_or_else(|| {
            *slot = Some(Replay::new(StreamId::get(stream), max_events));
            Attach { stream: StreamId::get(stream), fresh: true, backlog: Vec::new(), lost: 0 }
        })
    }

    /// Resumes this stream after its event `n`: the events the client has
    /// are dropped, the rest are the backlog. `None` for a number the
    /// stream has not reached.
    pub fn resume(&mut self, n: u64) -> Option<Attach> {
        if n >= self.next {
            return None;
        }
        while self.events.front().is_some_and(|(k, _)| *k <= n) {
            let (_, m) = self.events.pop_front().expect("non-empty");
            self.bytes -= m.len();
        }
        let first = self.events.front().map_or(self.next, |(k, _)| *k);
        Some(Attach { stream: self.stream.clone(), fresh: false, backlog: self.events.iter().cloned().collect(), lost: first - n - 1 })
    }
}

/// The SSE id of event `n` of `stream`.
pub(crate) fn event_id(stream: &StreamId, n: u64) -> String {
    if !stream.post {
        return format!("{}-{n}", stream.seq);
    }
    let request = stream.request.as_ref().map(|r| crate::bytes::hex::hex(r.bytes())).unwrap_or_default();
    format!("{}.{request}-{n}", stream.seq)
}

/// The stream and number an event id names.
pub(crate) fn parse_id(s: &str) -> Option<(u64, u64)> {
    let (a, b) = s.trim().split_once('-')?;
    let stream = a.split_once('.').map_or(a, |(seq, _)| seq);
    Some((stream.parse().ok()?, b.parse().ok()?))
}

/// For the id of an event of a POST's stream, the request it answers (its
/// id's JSON) when named; `None` for any other id.
#[cfg(feature = "cluster")]
pub(crate) fn post_request(s: &str) -> Option<Option<Vec<u8>>> {
    let (a, _) = s.trim().split_once('-')?;
    let (_, request) = a.split_once('.')?;
    Some(crate::bytes::hex::unhex(request).filter(|r| !r.is_empty() && r.len() <= MAX_NAMED_REQUEST))
}

impl SseOut {
    /// Writes the `200 text/event-stream` head (rows `streamable-http-x-accel-buffering`
    /// and the `Cache-Control: no-cache` every proxy honours).
    pub async fn start(
        conn: &mut Conn,
        version: Version,
        extra: &[(&str, &str)],
    ) -> Option<SseOut> {
        let chunked = version == Version::Http11;
        let mut hs = vec![
            Header {
                name: "Content-Type",
                value: b"text/event-stream",
            },
            Header {
                name: "Cache-Control",
                value: b"no-cache",
            },
            Header {
                name: "X-Accel-Buffering",
                value: b"no",
            },
        ];
        for (n, v) in extra {
            hs.push(Header {
                name: n,
                value: v.as_bytes(),
            });
        }
        if !chunked {
            hs.push(Header {
                name: "Connection",
                value: b"close",
            });
        }
        let framing = if chunked {
            BodyFraming::Chunked
        } else {
            BodyFraming::UntilClose
        };
        let mut out = vec![0u8; 1024];
        let n = write_response_head(200, &hs, framing, &mut out).ok()?;
        conn.write(&out[..n]).await.ok()?;
        let keepalive = Duration::from_millis(conn.common.limits.sse_keepalive_ms.max(10));
        Some(SseOut {
            chunked,
            keepalive,
            next_ping: Instant::now() + keepalive,
        })
    }

    /// One event carrying a JSON-RPC message (`event` defaults to `message`).
    pub async fn event(&mut self, conn: &mut Conn, event: Option<&[u8]>, data: &[u8]) -> bool {
        self.write(conn, &SseEvent { event, data, id: None, retry: None }).await
    }

    /// Event `n` of resumable stream `stream` carrying a message.
    pub async fn numbered(&mut self, conn: &mut Conn, stream: &StreamId, n: u64, data: &[u8]) -> bool {
        let id = event_id(stream, n);
        self.write(conn, &SseEvent { event: None, data, id: Some(id.as_bytes()), retry: None }).await
    }

    /// A message on stream `stream`: event `n` when the stream is resumable.
    pub async fn message(&mut self, conn: &mut Conn, stream: &StreamId, n: Option<u64>, data: &[u8]) -> bool {
        match n {
            Some(n) => self.numbered(conn, stream, n, data).await,
            None => self.event(conn, None, data).await,
        }
    }

    /// The priming event of resumable stream `stream`: its first id, the
    /// reconnection time and empty data (row `streamable-http-sse-priming-event`).
    pub async fn prime(&mut self, conn: &mut Conn, stream: &StreamId) -> bool {
        let id = event_id(stream, 0);
        self.write(conn, &SseEvent { event: None, data: b"", id: Some(id.as_bytes()), retry: Some(RETRY_MS) }).await
    }

    async fn write(&mut self, conn: &mut Conn, ev: &SseEvent<'_>) -> bool {
        let data = ev.data;
        let need = data.len() + 96 + data.iter().filter(|b| **b == b'\n' || **b == b'\r').count() * 8;
        self.next_ping = Instant::now() + self.keepalive;
        conn.write_block(self.chunked, need, |out| write_event(ev, out).ok()).await
    }

    /// Bytes of an SSE stream written as they are (events another replica
    /// wrote: `session_dir`).
    #[cfg(feature = "cluster")]
    pub async fn raw(&mut self, conn: &mut Conn, bytes: &[u8]) -> bool {
        self.next_ping = Instant::now() + self.keepalive;
        conn.write_block(self.chunked, bytes.len(), |out| {
            out[..bytes.len()].copy_from_slice(bytes);
            Some(bytes.len())
        })
        .await
    }

    /// A keep-alive comment (row `streamable-http-sse-comment-keepalive`).
    pub async fn ping(&mut self, conn: &mut Conn) -> bool {
        self.next_ping = Instant::now() + self.keepalive;
        conn.write_block(self.chunked, 32, |out| write_comment(b"keep-alive", out).ok()).await
    }

    /// Ends the stream; true when the connection may carry another request.
    pub async fn finish(self, conn: &mut Conn) -> bool {
        self.chunked && conn.write(LAST_CHUNK).await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(a: &Attach) -> Vec<(u64, &[u8])> {
        a.backlog.iter().map(|(n, m)| (*n, m.as_slice())).collect()
    }

    // covers: streamable-http-event-id-unique, streamable-http-event-id-encodes-stream, streamable-http-server-no-cross-stream-replay
    #[test]
    fn a_resumed_stream_gets_what_came_after_its_last_id_and_no_other_streams_events() {
        let mut slot = None;
        let a = Replay::attach(&mut slot, 7, None, 8);
        assert!(a.fresh && a.backlog.is_empty());
        let r = slot.as_mut().unwrap();
        for m in [&b"a"[..], b"b", b"c"] {
            r.push(m.to_vec());
        }
        assert_eq!(event_id(&StreamId::get(7), 2), "7-2");
        // Had up to 1: gets 2 and 3, on the same stream.
        let a = Replay::attach(&mut slot, 9, Some("7-1"), 8);
        assert_eq!((a.stream.seq, a.fresh, a.lost), (7, false, 0));
        assert_eq!(msgs(&a), [(2, &b"b"[..]), (3, b"c")]);
        // What it showed it has is gone; numbering goes on.
        assert_eq!(slot.as_mut().unwrap().push(b"d".to_vec()), 4);
        let a = Replay::attach(&mut slot, 9, Some("7-3"), 8);
        assert_eq!(msgs(&a), [(4, &b"d"[..])]);
        // The priming id replays everything kept.
        let a = Replay::attach(&mut slot, 9, Some("7-0"), 8);
        assert_eq!(a.backlog.len(), 1);
        // Another stream's id, a future id or garbage: a new stream, nothing replayed.
        for bad in ["6-1", "7-99", "x", ""] {
            let mut s2 = None;
            Replay::attach(&mut s2, 7, None, 8);
            s2.as_mut().unwrap().push(b"z".to_vec());
            let a = Replay::attach(&mut s2, 11, Some(bad), 8);
            assert!(a.fresh && a.backlog.is_empty() && a.stream.seq == 11, "{bad}");
        }
    }

    // covers: streamable-http-event-id-encodes-stream
    #[test]
    fn a_post_streams_ids_say_so_and_name_its_request_when_it_is_short() {
        let id = StreamId::post(12, Some(&IdKey::new(b"31")));
        assert_eq!(event_id(&id, 4), "12.3331-4");
        assert_eq!(parse_id("12.3331-4"), Some((12, 4)));
        let long = IdKey::new(format!("\"{}\"", "x".repeat(40)).as_bytes());
        assert_eq!(event_id(&StreamId::post(12, Some(&long)), 1), "12.-1", "a long id is not named");
        assert_eq!(event_id(&StreamId::post(12, None), 0), "12.-0");
        assert_eq!(parse_id("12.-0"), Some((12, 0)));
        #[cfg(feature = "cluster")]
        {
            assert_eq!(post_request("12.3331-4"), Some(Some(b"31".to_vec())));
            assert_eq!(post_request("12.-4"), Some(None));
            assert_eq!(post_request("12.zz-4"), Some(None));
            assert_eq!(post_request("12-4"), None, "a standalone stream's");
        }
    }

    #[test]
    fn the_buffer_is_bounded_and_a_gap_is_counted() {
        let mut slot = None;
        Replay::attach(&mut slot, 1, None, 3);
        for i in 0..10u8 {
            slot.as_mut().unwrap().push(vec![i]);
        }
        let a = Replay::attach(&mut slot, 2, Some("1-2"), 3);
        assert_eq!(a.backlog.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [8, 9, 10]);
        assert_eq!(a.lost, 5, "events 3..=7 were dropped at the cap");
    }
}
