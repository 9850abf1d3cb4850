//! Framing: newline-delimited JSON (stdio), SSE events, HTTP/1.1 heads and bodies.
//! No JSON knowledge lives here.
//!
//! Every decoder is sans-IO and incremental: the caller feeds bytes as they
//! arrive, in reads of any size, and pulls complete frames out; any split of the
//! same stream yields the same frames. Decoders that must reassemble a frame
//! ([`line::LineDecoder`], [`sse::SseDecoder`]) work in caller-provided storage
//! whose length bounds one frame: a longer frame is reported as `TooLarge`,
//! skipped, and decoding resumes at the next frame boundary. Frames are handed
//! out as slices of that storage (or of the input), never copied.
//!
//! Every encoder writes into a caller-provided `&mut [u8]` and returns the
//! number of bytes written, or a [`WriteError`] that leaves nothing half-written
//! to rely on.
mod buf;
mod edges;
pub mod http;
pub mod line;
mod out;
pub mod sse;

/// Why an encoder could not write its frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteError {
    /// The output buffer is too small; the bytes written so far are garbage.
    Overflow,
    /// A field would break the framing (a line break in an SSE `event`/`id`
    /// or an HTTP header, a NUL in an SSE `id`, a malformed header name,
    /// method, target or status code). Nothing in `out` is meaningful.
    InvalidField,
}

/// A base-ten `u64` from one or more ASCII digits; `None` for anything else
/// (empty, sign, space, other bytes) or on overflow.
fn parse_decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    v.iter().try_fold(0u64, |n, &b| {
        let d = b.checked_sub(b'0').filter(|d| *d < 10)?;
        n.checked_mul(10)?.checked_add(u64::from(d))
    })
}

#[cfg(test)]
mod test_util {
    /// `stream` cut into consecutive reads at `cuts` (taken modulo its length).
    pub(super) fn split(stream: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        cuts.sort_unstable();
        let mut reads = Vec::new();
        let mut at = 0;
        for c in cuts.into_iter().chain([stream.len()]) {
            reads.push(stream[at..c].to_vec());
            at = c;
        }
        reads
    }
}
