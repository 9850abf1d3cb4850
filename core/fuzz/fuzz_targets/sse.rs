//! The SSE decoder: the same stream, whole or in reads of any size, gives the
//! same events, ids and retry; what `write_event` writes decodes back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx_core::frame::sse::{write_event, SseDecoder, SseEvent, SseItem};
use mcpx_core_fuzz::{feed_all, reads};

#[derive(Debug, PartialEq)]
enum Frame {
    Event {
        event: Option<Vec<u8>>,
        data: Vec<u8>,
        id: Option<Vec<u8>>,
        retry: Option<u64>,
    },
    /// Its length and the kept first and last bytes of its data.
    TooLarge(usize, Vec<u8>, Vec<u8>),
}

fn decode(reads: &[&[u8]]) -> (Vec<Frame>, Vec<u8>, Option<u64>) {
    let mut d = SseDecoder::new([0u8; 128]);
    let frames = feed_all(
        &mut d,
        reads,
        |d, input| d.feed(input),
        |d, out| {
            while let Some(item) = d.next() {
                out.push(match item {
                    SseItem::Event(ev) => Frame::Event {
                        event: ev.event.map(<[u8]>::to_vec),
                        data: ev.data.to_vec(),
                        id: ev.id.map(<[u8]>::to_vec),
                        retry: ev.retry,
                    },
                    SseItem::TooLarge { len, head, tail } => Frame::TooLarge(len, head.to_vec(), tail.to_vec()),
                });
            }
        },
    );
    (frames, d.last_event_id().to_vec(), d.retry())
}

/// `b` when it is a valid `event`/`id` field value (no CR, LF or NUL).
fn field(b: &[u8]) -> Option<&[u8]> {
    (!b.iter().any(|&c| c == b'\r' || c == b'\n' || c == 0)).then_some(b)
}

fuzz_target!(|data: &[u8]| {
    let (split, stream) = reads(data);
    assert_eq!(decode(&[stream]), decode(&split));

    // Round trip: the stream's bytes as an event's data (event type and id
    // from its first bytes, when they are valid fields).
    let cut = stream.len().min(8);
    let (head, body) = stream.split_at(cut);
    let ev = SseEvent {
        event: field(&head[..cut / 2]).filter(|e| !e.is_empty()),
        data: body,
        id: field(&head[cut / 2..]),
        retry: None,
    };
    let mut out = vec![0u8; 64 + 8 * body.len()];
    let n = write_event(&ev, &mut out).expect("room for the event");
    let mut d = SseDecoder::new(vec![0u8; n + 16]);
    let mut input = &out[..n];
    let mut got = None;
    while !input.is_empty() {
        let taken = d.feed(input);
        input = &input[taken..];
        if let Some(SseItem::Event(e)) = d.next() {
            got = Some((e.event.map(<[u8]>::to_vec), e.data.to_vec(), e.id.map(<[u8]>::to_vec)));
        }
    }
    // Line breaks (CRLF, CR, LF) come back as LF.
    let mut want = Vec::new();
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'\r' if body.get(i + 1) == Some(&b'\n') => {
                want.push(b'\n');
                i += 1;
            }
            b'\r' => want.push(b'\n'),
            b => want.push(b),
        }
        i += 1;
    }
    let (event, data, id) = got.expect("a written event decodes");
    assert_eq!(event.as_deref(), ev.event);
    assert_eq!(data, want);
    assert_eq!(id.as_deref(), ev.id);
});
