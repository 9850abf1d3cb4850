//! The stdio line framer: the same stream, whole or in reads of any size,
//! gives the same lines and over-long reports (with the same first and
//! last bytes); no line holds a line break.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx_core::frame::line::{LineDecoder, LineEvent, EDGE};
use mcpx_core_fuzz::{feed_all, reads};

#[derive(Debug, PartialEq)]
enum Frame {
    Line(Vec<u8>),
    TooLarge(usize, Vec<u8>, Vec<u8>),
}

fn decode(reads: &[&[u8]]) -> Vec<Frame> {
    let mut d = LineDecoder::new([0u8; 64]);
    feed_all(
        &mut d,
        reads,
        |d, input| d.feed(input),
        |d, out| {
            while let Some(ev) = d.next() {
                out.push(match ev {
                    LineEvent::Line(l) => {
                        assert!(!l.is_empty() && !l.contains(&b'\n'));
                        Frame::Line(l.to_vec())
                    }
                    LineEvent::TooLarge { len, head, tail } => {
                        assert!(len >= 63, "TooLarge for {len} bytes");
                        assert_eq!(head.len(), len.min(EDGE));
                        assert!(tail.len() <= EDGE && !tail.contains(&b'\n'));
                        Frame::TooLarge(len, head.to_vec(), tail.to_vec())
                    }
                });
            }
        },
    )
}

fuzz_target!(|data: &[u8]| {
    let (split, stream) = reads(data);
    assert_eq!(decode(&[stream]), decode(&split));
});
