//! Message buffers handed back once their bytes are written or copied
//! ([`outbox`]'s writer gives back each buffer it wrote, and a small message
//! copied into the room behind another), taken again by the next message
//! written ([`written::grow`]): a forwarded call's request and answer are
//! written into the last call's buffers instead of two new ones. Per thread (the runtime runs on one), at most [`KEEP`] buffers of
//! at most [`KEEP_BYTES`] each, so what is kept stays small.
//!
//! [`outbox`]: super::outbox
//! [`written::grow`]: super::written::grow

use std::cell::RefCell;

/// Buffers kept at most.
const KEEP: usize = 8;

/// A larger buffer (one large message) goes back to the allocator.
const KEEP_BYTES: usize = 256 << 10;

thread_local! {
    static SPARE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer, with the room a message given back had.
pub(crate) fn take() -> Vec<u8> {
    SPARE.with(|s| s.borrow_mut().pop()).unwrap_or_default()
}

/// `buf`'s bytes are copied out: its room serves the next message.
pub(crate) fn give(mut buf: Vec<u8>) {
    if buf.capacity() == 0 || buf.capacity() > KEEP_BYTES {
        return;
    }
    buf.clear();
    SPARE.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < KEEP {
            s.push(buf);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_taken_again_empty_and_big_or_many_are_not_kept() {
        let mut b = Vec::with_capacity(100);
        b.extend_from_slice(b"message");
        let at = b.as_ptr();
        give(b);
        let again = take();
        assert!(again.is_empty() && again.capacity() == 100 && again.as_ptr() == at, "the same room, emptied");
        assert_eq!(take().capacity(), 0, "nothing else kept");
        give(Vec::with_capacity(KEEP_BYTES + 1));
        assert_eq!(take().capacity(), 0, "a large buffer is not kept");
        for _ in 0..KEEP + 3 {
            give(Vec::with_capacity(16));
        }
        let kept = std::iter::from_fn(|| Some(take()).filter(|b| b.capacity() > 0)).count();
        assert_eq!(kept, KEEP);
    }
}
