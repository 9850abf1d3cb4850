//! The records of requests the policy tracks until their answer (audit
//! lines, metric samples, output checks), in slots.
//!
//! The client's open-request set keeps each request's [`Tracked`] handle
//! beside the id it hashes anyway (`Clients::opened`, `Clients::close`), so
//! neither the stages that mark the request nor its answer hash the
//! (client, id) pair again: the request being handled is `current`, and
//! the answer brings its handle. A request the open set could not keep
//! (past its cap) is found by its key, slot by slot. Bounded by `cap`:
//! past it the oldest record is dropped, and its handle then finds nothing.
//! Records are filled and read in their slots, never moved: a closed
//! record's strings keep their room for the slot's next.

use super::{ClientId, IdKey};

/// A record's slot and the slot's generation when the record was opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Tracked {
    at: u32,
    generation: u32,
}

impl Tracked {
    /// No record: the request is not tracked.
    pub const NONE: Tracked = Tracked { at: u32::MAX, generation: 0 };
}

struct Slot<R> {
    /// Bumped each time the slot is freed: older handles find nothing.
    generation: u32,
    /// Whose request, while the slot holds a record.
    key: Option<(ClientId, IdKey)>,
    /// Opened as the `born`-th record (the lowest is the oldest).
    born: u64,
    rec: R,
}

/// The open records; see the module doc.
pub(super) struct Records<R> {
    slots: Vec<Slot<R>>,
    free: Vec<u32>,
    live: usize,
    cap: usize,
    born: u64,
    /// The last record opened: the request being handled.
    current: Tracked,
}

impl<R: Default> Records<R> {
    pub fn new(cap: usize) -> Records<R> {
        Records { slots: Vec::new(), free: Vec::new(), live: 0, cap: cap.max(1), born: 0, current: Tracked::NONE }
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Opens a record of client `c`'s request `id` (the oldest record is
    /// dropped when `cap` are open); it is `current` until the next. The
    /// record is a closed one's, left as it was (its room reused): the
    /// caller fills in every field.
    pub fn open(&mut self, c: ClientId, id: &[u8]) -> (Tracked, &mut R) {
        if self.live >= self.cap {
            let oldest = self.slots.iter().enumerate().filter(|(_, s)| s.key.is_some()).min_by_key(|(_, s)| s.born).map(|(at, s)| Tracked { at: at as u32, generation: s.generation });
            if let Some(t) = oldest {
                self.close(t);
            }
        }
        self.born += 1;
        let key = Some((c, IdKey::new(id)));
        let at = match self.free.pop() {
            Some(at) => {
                let s = &mut self.slots[at as usize];
                (s.key, s.born) = (key, self.born);
                at
            }
            None => {
                self.slots.push(Slot { generation: 0, key, born: self.born, rec: R::default() });
                (self.slots.len() - 1) as u32
            }
        };
        self.live += 1;
        let s = &mut self.slots[at as usize];
        self.current = Tracked { at, generation: s.generation };
        (self.current, &mut s.rec)
    }

    fn slot(&self, t: Tracked) -> Option<&Slot<R>> {
        self.slots.get(t.at as usize).filter(|s| s.generation == t.generation && s.key.is_some())
    }

    #[cfg_attr(not(feature = "validate"), allow(dead_code))] // read by output checks
    pub fn get(&self, t: Tracked) -> Option<&R> {
        self.slot(t).map(|s| &s.rec)
    }

    pub fn get_mut(&mut self, t: Tracked) -> Option<&mut R> {
        self.slot(t)?;
        Some(&mut self.slots[t.at as usize].rec)
    }

    /// The record of client `c`'s request `id`: the current one, else
    /// looked for slot by slot (a request answered long after it came, or
    /// one its client's open set could not keep).
    pub fn find(&self, c: ClientId, id: &[u8]) -> Option<Tracked> {
        let is = |s: &Slot<R>| s.key.as_ref().is_some_and(|(x, k)| *x == c && k.bytes() == id);
        if self.slot(self.current).is_some_and(is) {
            return Some(self.current);
        }
        if self.live == 0 {
            return None;
        }
        let at = self.slots.iter().position(is)?;
        Some(Tracked { at: at as u32, generation: self.slots[at].generation })
    }

    /// Closes record `t`: the record, which stays in its slot (for its
    /// room) until the slot is opened again.
    pub fn close(&mut self, t: Tracked) -> Option<&mut R> {
        self.slot(t)?;
        let s = &mut self.slots[t.at as usize];
        s.key = None;
        s.generation = s.generation.wrapping_add(1);
        self.free.push(t.at);
        self.live -= 1;
        Some(&mut s.rec)
    }

    /// Client `c` is gone: its records are closed, and each is given to
    /// `closed` (to let go of what its slot need not keep).
    pub fn forget_client(&mut self, c: ClientId, mut closed: impl FnMut(&mut R)) {
        if self.live == 0 {
            return;
        }
        let theirs: Vec<Tracked> = self.slots.iter().enumerate().filter(|(_, s)| s.key.as_ref().is_some_and(|(x, _)| *x == c)).map(|(at, s)| Tracked { at: at as u32, generation: s.generation }).collect();
        for t in theirs {
            if let Some(r) = self.close(t) {
                closed(r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Opens record `v` of client `c`'s request `id`.
    fn put(r: &mut Records<u32>, c: ClientId, id: &[u8], v: u32) -> Tracked {
        let (t, rec) = r.open(c, id);
        *rec = v;
        t
    }

    #[test]
    fn a_handle_finds_its_record_until_closed_and_never_the_next_in_its_slot() {
        let mut r: Records<u32> = Records::new(8);
        let a = put(&mut r, 1, b"1", 10);
        assert_eq!(r.get(a), Some(&10));
        assert_eq!(r.close(a), Some(&mut 10));
        assert_eq!(r.get(a), None, "closed");
        assert_eq!(r.close(a), None, "closed once");
        let (b, rec) = r.open(1, b"2");
        assert_eq!(*rec, 10, "the slot's record is handed back as it was closed, for its room");
        *rec = 20;
        assert_eq!(b.at, a.at, "the slot is reused");
        assert_eq!(r.get(a), None, "an old handle does not find the slot's next record");
        assert_eq!(r.get(b), Some(&20));
        assert_eq!(r.get(Tracked::NONE), None);
    }

    #[test]
    fn a_request_is_found_by_client_and_id_current_or_not() {
        let mut r: Records<u32> = Records::new(8);
        let a = put(&mut r, 1, b"7", 1);
        let b = put(&mut r, 2, b"7", 2);
        assert_eq!(r.find(2, b"7"), Some(b), "the current one");
        assert_eq!(r.find(1, b"7"), Some(a), "an older one, by its key");
        assert_eq!(r.find(1, b"8"), None);
        r.close(b);
        assert_eq!(r.find(2, b"7"), None, "closed: the current handle finds nothing");
    }

    #[test]
    fn past_the_cap_the_oldest_record_is_dropped() {
        let mut r: Records<u32> = Records::new(2);
        let a = put(&mut r, 1, b"1", 1);
        let b = put(&mut r, 1, b"2", 2);
        if let Some(v) = r.get_mut(a) {
            *v += 10;
        }
        let c = put(&mut r, 1, b"3", 3);
        assert_eq!(r.get(a), None, "the oldest went");
        assert_eq!((r.get(b), r.get(c)), (Some(&2), Some(&3)));
        assert_eq!(r.live, 2);
    }

    #[test]
    fn a_gone_clients_records_go_and_the_others_stay() {
        let mut r: Records<u32> = Records::new(8);
        let a = put(&mut r, 1, b"1", 1);
        let b = put(&mut r, 2, b"1", 2);
        let c = put(&mut r, 1, b"2", 3);
        let mut closed = Vec::new();
        r.forget_client(1, |v| closed.push(*v));
        assert_eq!(closed, [1, 3], "each of its records, once");
        assert_eq!((r.get(a), r.get(b), r.get(c)), (None, Some(&2), None));
        assert!(!r.is_empty());
        r.forget_client(2, |_| {});
        assert!(r.is_empty());
    }
}
