//! The earliest deadline of a table, kept until the table changes. The hub
//! asks for its next deadline after every message of every client: a table
//! walked each time would make everyone's messages dearer by what one
//! client keeps in it. A table forgets the kept answer in each of its
//! methods that change it; debug builds check every kept answer against a
//! walk, so a change that did not forget fails the tests that make it.

use std::cell::Cell;

#[derive(Debug, Default)]
pub(super) struct Earliest(Cell<Option<Option<u64>>>);

impl Earliest {
    /// The table changed: the next answer walks it again.
    pub fn forget(&self) {
        self.0.set(None);
    }

    /// The kept answer, else `walk`'s (kept until the table changes).
    pub fn get(&self, walk: impl Fn() -> Option<u64>) -> Option<u64> {
        if let Some(kept) = self.0.get() {
            debug_assert_eq!(kept, walk(), "a change to the table did not forget its earliest deadline");
            return kept;
        }
        let earliest = walk();
        self.0.set(Some(earliest));
        earliest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_kept_until_forgotten() {
        let e = Earliest::default();
        let walks = Cell::new(0);
        let walk = |at| {
            walks.set(walks.get() + 1);
            at
        };
        assert_eq!(e.get(|| walk(Some(5))), Some(5));
        let before = walks.get();
        assert_eq!(e.get(|| Some(5)), Some(5), "kept");
        assert_eq!(walks.get(), before, "not walked again");
        e.forget();
        assert_eq!(e.get(|| walk(None)), None, "walked again once forgotten");
        assert_eq!(e.get(|| None), None, "an empty table's answer is kept too");
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "did not forget")]
    fn a_change_that_did_not_forget_fails_in_debug_builds() {
        let e = Earliest::default();
        e.get(|| Some(5));
        e.get(|| Some(3));
    }
}
