//! The chunked transfer-coding decoder: the same body, whole or in reads of
//! any size, decodes to the same data and end (or error); consumed counts
//! stay inside each read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx_core::frame::http::{Chunk, ChunkedDecoder};
use mcpx_core_fuzz::reads;

/// (body data, ended, failed) from feeding `reads` in order.
fn decode(reads: &[&[u8]]) -> (Vec<u8>, bool, bool) {
    let mut d = ChunkedDecoder::new();
    let mut body = Vec::new();
    for read in reads {
        let mut rest = *read;
        loop {
            match d.decode(rest) {
                Err(_) => return (body, false, true),
                Ok((n, chunk)) => {
                    assert!(n <= rest.len());
                    rest = &rest[n..];
                    match chunk {
                        Chunk::Data(b) => {
                            assert!(n > 0, "data without progress");
                            body.extend_from_slice(b)
                        }
                        Chunk::NeedMore => {
                            assert!(rest.is_empty(), "NeedMore with input left");
                            break;
                        }
                        Chunk::End => {
                            assert!(d.is_done());
                            return (body, true, false);
                        }
                    }
                }
            }
        }
    }
    (body, false, false)
}

fuzz_target!(|data: &[u8]| {
    let (split, stream) = reads(data);
    let whole = decode(&[stream]);
    let pieces = decode(&split);
    assert_eq!(whole, pieces);
});
