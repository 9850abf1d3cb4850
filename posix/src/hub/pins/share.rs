//! Pins shared by replicas (README: "Pinning tools"), sans-IO: the rules.
//! The runtime (`serve::pin_share`) reads and writes the store and the
//! state folder's pin file, and gives the hub what [`Shared`] says through
//! the same `Pins::load` as a pin file read from disk.
//!
//! With `"state": {"url"}` the pin file lives in the store too, one sealed
//! value for every replica (`mcpx:pins`, no expiry, at most 4 MiB), and each
//! replica's state folder keeps a copy (`mcpx pin accept` edits that copy,
//! and the edit goes to the store). The rules:
//!
//! - **Trust on first use is cluster-wide.** The first listing of a
//!   server's tools on any replica pins them for all: a replica reads the
//!   store before its first listing, so one that lists later finds the
//!   server seen and its definitions pinned, and any that differs is a
//!   change there too.
//! - **Concurrent writers merge, they do not overwrite.** A replica writes
//!   its edits (what it pinned, saw change, accepted) onto what the store
//!   holds now, with a compare-and-set on that value (retried, at most a
//!   few times): pins are the union of everyone's; a definition pinned
//!   with different digests by two replicas keeps the digest written first
//!   (the other replica then holds its own definition back as a change);
//!   an accept replaces the pin it was made against, unless another accept
//!   of the same definition was written first.
//! - **Pins are never dropped by a merge.** A value without a pin the
//!   replica knows (Redis flushed, or an older value put back) gets it
//!   again; a value that cannot be used (not sealed with the shared key,
//!   over the bound, not a pin file) is ignored with a warning and
//!   replaced by this replica's pins, which stay in force meanwhile.
//! - **A change seen on one replica is a change on all**: the stored
//!   changes are every replica's, so `mcpx pin accept` on any replica's
//!   state folder finds it, and the accept reaches every replica (each
//!   lists the accepted definition within a poll). A change leaves the
//!   store when accepted, or when the replicas that saw it no longer do
//!   (they list the pinned definition again, or no longer list the item):
//!   each writes back the changes it still holds back. One seen by a
//!   replica that is gone stays until accepted. The hub's `/status` shows
//!   its own changes (what it holds back).
//! - **With a lock file, the lock file stays the only trust**: nothing is
//!   pinned on first use anywhere, the lock files' pins are not put in the
//!   store, and the pins in the store are accepts only (`mcpx pin accept`
//!   on any replica), trusted beside each replica's lock file (an accept
//!   over the lock file's entry for that definition); changes are shared
//!   as above. An unreadable lock file trusts nothing, accepts included.
//! - **Without Redis** a replica works from its state folder as a single
//!   mcpx does, and writes its edits when the store answers again.
//!
//! Every replica should have the same `policy.pin`.

use std::collections::BTreeSet;

use super::file::{Key, PinFile};

/// `mine`'s edits since `base`, applied onto `theirs` (a three-way merge).
pub(super) fn merge(base: &PinFile, mine: &PinFile, theirs: &PinFile) -> PinFile {
    let mut out = PinFile { seen: theirs.seen.union(&mine.seen).cloned().collect(), ..PinFile::default() };
    let digest = |f: &PinFile, k: &Key| f.pins.get(k).map(|p| p.digest.clone());
    let keys: BTreeSet<&Key> = theirs.pins.keys().chain(mine.pins.keys()).collect();
    for k in keys {
        let (b, m, t) = (digest(base, k), digest(mine, k), digest(theirs, k));
        // Mine when they have none, or when I accepted another definition
        // than the one they still have; else theirs, written first.
        let from = match (&m, &t) {
            (Some(_), None) => mine,
            (Some(_), Some(_)) if m != b && t == b => mine,
            _ => theirs,
        };
        if let Some(p) = from.pins.get(k) {
            out.pins.insert(k.clone(), p.clone());
        }
    }
    let keys: BTreeSet<&Key> = base.changes.keys().chain(mine.changes.keys()).chain(theirs.changes.keys()).collect();
    for k in keys {
        let (b, m, t) = (base.changes.get(k), mine.changes.get(k), theirs.changes.get(k));
        // My edit (a change seen, or gone), unless they edited what I removed.
        let c = match (m == b, m) {
            (true, _) => t,
            (false, Some(m)) => Some(m),
            (false, None) if t == b => None,
            (false, None) => t,
        };
        // A change now pinned was accepted.
        if let Some(c) = c.filter(|c| out.pins.get(k).is_none_or(|p| p.digest != c.digest)) {
            out.changes.insert(k.clone(), c.clone());
        }
    }
    out
}

/// What the store held when read (see [`Shared::stored`]).
pub enum Theirs {
    /// What it held when last read or written.
    Same,
    /// This pin file, or (`None`) none that can be used: absent, or
    /// ignored.
    Now(Option<PinFile>),
}

/// The pins of one replica that shares them: what the store holds, this
/// replica's view of them (its state file's, and the hub's), and its edits
/// on the way to the store.
pub struct Shared {
    /// Only a lock file is trusted (`policy.pin.lockFile`).
    lock_mode: bool,
    /// What the store held when last read or written: the base of this
    /// replica's edits.
    known: PinFile,
    /// This replica's view: `known` and its edits not written yet. With a
    /// lock file its pins are the accepts only.
    local: PinFile,
    /// What the hub last said (its changes) or was told (pins and seen).
    hub: PinFile,
    /// The state file as last written or read.
    file: Option<PinFile>,
    /// The lock file as last read.
    lock: Option<PinFile>,
    /// `local` or `lock` changed since the file and the hub were last
    /// looked at.
    moved: bool,
}

impl Shared {
    /// With the files as read at start (the state folder's `state`, and the
    /// lock file when `lock_mode`). The state file's pins are this
    /// replica's to share (a store that does not have them gets them); its
    /// changes are taken for the store's already (one the store no longer
    /// has was accepted or withdrawn meanwhile).
    pub fn new(lock_mode: bool, state: Option<PinFile>, lock: Option<PinFile>) -> Shared {
        let mut local = state.clone().unwrap_or_default();
        if lock_mode {
            local.pins.clear();
        }
        let known = PinFile { changes: local.changes.clone(), ..PinFile::default() };
        Shared { lock_mode, known, local, hub: PinFile::default(), file: state, lock, moved: true }
    }

    /// The hub saved `m` (`Output::SavePins`): its edits go into this
    /// replica's view. With a lock file its pins (the trusted ones it was
    /// given) are not an edit.
    pub fn hub_saved(&mut self, m: PinFile) {
        if self.lock_mode {
            let base = PinFile { pins: self.local.pins.clone(), ..self.hub.clone() };
            let mine = PinFile { pins: self.local.pins.clone(), ..m.clone() };
            self.local = merge(&base, &mine, &self.local);
        } else {
            self.local = merge(&self.hub, &m, &self.local);
        }
        self.hub = m;
        self.keep_own();
        self.moved = true;
    }

    /// The changes the hub holds back stay in this replica's view (and so
    /// in the store) while it does: another replica that no longer sees
    /// one does not take it away from this one. One whose key another
    /// replica saw otherwise is left as it is (not written back and forth).
    fn keep_own(&mut self) {
        for (k, c) in &self.hub.changes {
            if self.local.pins.get(k).is_none_or(|p| p.digest != c.digest) && !self.local.changes.contains_key(k) {
                self.local.changes.insert(k.clone(), c.clone());
            }
        }
    }

    /// The files changed on disk (`mcpx pin accept`, or an operator): the
    /// state file's edits go into this replica's view (`None`: absent or
    /// unreadable, no edit); the lock file is what it is now. With a lock
    /// file, a pin edited in the state file is an accept.
    pub fn files_read(&mut self, state: Option<PinFile>, lock: Option<PinFile>) {
        if let Some(mut f) = state {
            let mut base = self.file.clone().unwrap_or_default();
            self.file = Some(f.clone());
            if self.lock_mode {
                f.pins.retain(|k, p| base.pins.get(k).is_none_or(|b| b.digest != p.digest));
                base.pins.retain(|k, _| f.pins.contains_key(k));
            }
            self.local = merge(&base, &f, &self.local);
            self.keep_own();
        }
        self.lock = lock;
        self.moved = true;
    }

    /// Are there edits not written to the store yet?
    pub fn pending(&self) -> bool {
        self.local != self.known
    }

    /// The store holds `theirs` now: this replica's edits applied onto it.
    /// What to write, when that differs from what it holds (compare-and-set
    /// on it; when another writer came first, read again and call this
    /// again: the edits are applied onto that).
    pub fn stored(&mut self, theirs: Theirs) -> Option<PinFile> {
        let (base, theirs) = match theirs {
            Theirs::Same => (self.known.clone(), self.known.clone()),
            Theirs::Now(Some(t)) => (std::mem::take(&mut self.known), t),
            // Nothing usable: everything this replica has is its to write
            // (nothing of it was removed there).
            Theirs::Now(None) => (PinFile::default(), PinFile::default()),
        };
        let merged = merge(&base, &self.local, &theirs);
        self.known = theirs;
        if merged != self.local {
            self.local = merged;
            self.keep_own();
            self.moved = true;
        }
        self.pending().then(|| self.local.clone())
    }

    /// `written` (what [`Shared::stored`] returned) is in the store now.
    pub fn written(&mut self, written: PinFile) {
        self.known = written;
    }

    /// This replica's view as its state file holds it (and the hub is
    /// given): with a lock file, trusted are the lock file's pins with the
    /// accepts over them, or nothing without a readable lock file.
    fn view(&self) -> PinFile {
        let mut v = self.local.clone();
        if self.lock_mode {
            v.pins = self.lock.as_ref().map(|l| {
                let mut pins = l.pins.clone();
                pins.extend(self.local.pins.iter().map(|(k, p)| (k.clone(), p.clone())));
                pins
            }).unwrap_or_default();
        }
        v
    }

    /// What to write as the state file, if it differs from what it holds.
    pub fn file_todo(&mut self) -> Option<Vec<u8>> {
        if !self.moved {
            return None;
        }
        let view = self.view();
        if self.file.as_ref() == Some(&view) {
            return None;
        }
        let bytes = view.to_bytes();
        self.file = Some(view);
        Some(bytes)
    }

    /// What to give the hub (`Pins::read`: the state file and the lock
    /// file), if it trusts or has seen other things than it was last given
    /// or said. Writes the state file first ([`Shared::file_todo`]), when
    /// `write` is given.
    pub fn hub_todo(&mut self, write: impl FnOnce(&[u8])) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
        if let Some(bytes) = self.file_todo() {
            write(&bytes);
        }
        if !std::mem::take(&mut self.moved) {
            return None;
        }
        let view = self.view();
        if view.pins == self.hub.pins && view.seen == self.hub.seen {
            return None;
        }
        self.hub.pins = view.pins.clone();
        self.hub.seen = view.seen.clone();
        let lock = (self.lock_mode && self.lock.is_some()).then(|| view.lock().to_bytes());
        Some((view.to_bytes(), lock))
    }
}

#[cfg(test)]
mod tests;
