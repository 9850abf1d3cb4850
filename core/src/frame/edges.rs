//! The first and last bytes of a frame too large to keep, which the
//! decoders skip: a JSON-RPC message's envelope is usually at one end
//! ([`crate::clipped`] reads it).

/// Bytes kept from each end of an over-long frame.
pub const EDGE: usize = 256;

/// Room after the tail for the frame's own terminator (a line's `\r`, an
/// SSE event's last line ending and blank line), stripped when read.
const SLACK: usize = 4;

/// The head fills up with the first bytes pushed to it; the tail window
/// slides over the last bytes pushed to it.
pub(super) struct Edges {
    head: [u8; EDGE],
    head_len: usize,
    tail: [u8; EDGE + SLACK],
    tail_len: usize,
}

impl Edges {
    pub(super) const EMPTY: Edges = Edges { head: [0; EDGE], head_len: 0, tail: [0; EDGE + SLACK], tail_len: 0 };

    /// Forgets the last frame's edges.
    pub(super) fn clear(&mut self) {
        self.head_len = 0;
        self.tail_len = 0;
    }

    /// More bytes of the frame, for both ends.
    pub(super) fn push(&mut self, more: &[u8]) {
        self.push_head(more);
        self.push_tail(more);
    }

    pub(super) fn push_head(&mut self, more: &[u8]) {
        let h = more.len().min(EDGE - self.head_len);
        self.head[self.head_len..self.head_len + h].copy_from_slice(&more[..h]);
        self.head_len += h;
    }

    pub(super) fn push_tail(&mut self, more: &[u8]) {
        let win = self.tail.len();
        if more.len() >= win {
            self.tail.copy_from_slice(&more[more.len() - win..]);
            self.tail_len = win;
            return;
        }
        let keep = self.tail_len.min(win - more.len());
        self.tail.copy_within(self.tail_len - keep..self.tail_len, 0);
        self.tail[keep..keep + more.len()].copy_from_slice(more);
        self.tail_len = keep + more.len();
    }

    pub(super) fn head(&self) -> &[u8] {
        &self.head[..self.head_len]
    }

    /// The last [`EDGE`] bytes before the terminator that `strip` removes.
    pub(super) fn tail(&self, strip: impl FnOnce(&[u8]) -> &[u8]) -> &[u8] {
        let tail = strip(&self.tail[..self.tail_len]);
        &tail[tail.len().saturating_sub(EDGE)..]
    }
}
