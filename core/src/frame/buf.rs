//! Caller-provided storage holding the not-yet-decoded tail of a byte stream,
//! shared by the line and SSE decoders.
//!
//! Pending bytes live at `storage[start..end]`. Consuming a frame only moves
//! `start`; the consumed prefix is reclaimed lazily (one `copy_within`) when a
//! read no longer fits behind `end`, so many small frames in one read cost no
//! copying at all. A decoder may reserve a prefix of the storage (`floor`) for
//! bytes it has already assembled; compaction never moves pending bytes below it.
use core::ops::Range;

pub(super) struct Buf<B> {
    storage: B,
    start: usize,
    end: usize,
    /// Pending bytes (from `start`) already searched without finding a
    /// terminator, so a long frame arriving in many reads is scanned once.
    scanned: usize,
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> Buf<B> {
    pub(super) fn new(storage: B) -> Self {
        Buf { storage, start: 0, end: 0, scanned: 0 }
    }

    pub(super) fn capacity(&self) -> usize {
        self.storage.as_ref().len()
    }

    /// Number of pending (undecoded) bytes.
    pub(super) fn len(&self) -> usize {
        self.end - self.start
    }

    pub(super) fn pending(&self) -> &[u8] {
        self.storage.as_ref().get(self.start..self.end).unwrap_or(&[])
    }

    pub(super) fn storage(&self) -> &[u8] {
        self.storage.as_ref()
    }

    pub(super) fn storage_mut(&mut self) -> &mut [u8] {
        self.storage.as_mut()
    }

    /// Moves the pending bytes to the start of `storage` and keeps that
    /// instead; the old storage is given back. `Err(storage)` when the
    /// pending bytes do not fit. (Without a reserved prefix only.)
    pub(super) fn replace(&mut self, mut storage: B) -> Result<B, B> {
        let len = self.len();
        match storage.as_mut().get_mut(..len) {
            Some(dst) => dst.copy_from_slice(self.pending()),
            None => return Err(storage),
        }
        self.start = 0;
        self.end = len;
        Ok(core::mem::replace(&mut self.storage, storage))
    }

    /// True when the pending bytes fill everything above `floor`.
    pub(super) fn is_full(&self, floor: usize) -> bool {
        floor + self.len() >= self.capacity()
    }

    /// Moves the pending bytes down to `floor` (at most the current
    /// `start`) when fewer than `need` bytes are free behind them.
    fn settle(&mut self, floor: usize, need: usize) {
        if self.start == self.end {
            self.start = floor;
            self.end = floor;
        } else if self.capacity() - self.end < need && self.start > floor {
            self.storage.as_mut().copy_within(self.start..self.end, floor);
            self.end = floor + (self.end - self.start);
            self.start = floor;
        }
    }

    /// Appends as much of `input` as fits; returns how many bytes were taken.
    /// `floor` (at most the current `start`) is the reserved prefix.
    pub(super) fn fill(&mut self, floor: usize, input: &[u8]) -> usize {
        let cap = self.capacity();
        self.settle(floor, input.len());
        let n = input.len().min(cap.saturating_sub(self.end));
        let end = self.end;
        match (self.storage.as_mut().get_mut(end..end + n), input.get(..n)) {
            (Some(dst), Some(src)) => {
                dst.copy_from_slice(src);
                self.end += n;
                n
            }
            _ => 0,
        }
    }

    /// All the free storage behind the pending bytes (moved down to `floor`
    /// first), for a read to land in without a copy; [`Self::filled`] then
    /// appends what it wrote.
    pub(super) fn room(&mut self, floor: usize) -> &mut [u8] {
        self.settle(floor, usize::MAX);
        let end = self.end;
        self.storage.as_mut().get_mut(end..).unwrap_or(&mut [])
    }

    /// Appends the first `n` bytes of [`Self::room`] (at most all of it).
    pub(super) fn filled(&mut self, n: usize) {
        self.end = self.end.saturating_add(n).min(self.capacity());
    }

    /// Offset in [`Self::pending`] of the first terminator, where `search`
    /// finds it in the bytes not yet searched (a `memchr` of the terminator
    /// bytes); each byte is searched once.
    pub(super) fn find(&mut self, search: impl Fn(&[u8]) -> Option<usize>) -> Option<usize> {
        let pending = self.pending();
        let from = self.scanned.min(pending.len());
        let found = search(pending.get(from..)?);
        if found.is_none() {
            self.scanned = self.len();
        }
        found.map(|i| from + i)
    }

    /// Consumes `n` pending bytes (at most all of them) and returns where they
    /// are in the storage; they stay readable until the next [`Self::fill`].
    pub(super) fn consume(&mut self, n: usize) -> Range<usize> {
        let n = n.min(self.len());
        let taken = self.start..self.start + n;
        self.start += n;
        self.scanned = self.scanned.saturating_sub(n);
        taken
    }
}
