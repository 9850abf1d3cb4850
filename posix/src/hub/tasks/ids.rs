//! Task ids: unguessable strings drawn from the hub's secret seed, so a
//! task id says nothing about other tasks and cannot be guessed by another
//! client (`tasks-unbound-secure-ids`, even though tasks are also bound to
//! their principal).

use mcpx_core::request_state::{digest, Seeded};

/// Draws task ids.
pub(crate) struct Ids(Seeded);

impl Ids {
    /// Ids derived from the hub's secret seed (under a label of their own,
    /// so they share nothing with `requestState` nonces).
    pub fn new(secret_seed: [u8; 32]) -> Ids {
        let mut seed = secret_seed.to_vec();
        seed.extend_from_slice(b"mcpx/task-ids");
        Ids(Seeded::new(digest(&seed)))
    }

    /// A fresh id: `mcpx-` and 128 random bits in hex.
    // Requirement: tasks-id-string-receiver-unique
    pub fn next(&mut self) -> String {
        let mut s = String::with_capacity(5 + 32);
        s.push_str("mcpx-");
        for b in self.0.nonce() {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_distinct_and_depend_on_the_seed() {
        let mut a = Ids::new([1; 32]);
        let mut b = Ids::new([2; 32]);
        let (a1, a2, b1) = (a.next(), a.next(), b.next());
        assert_ne!(a1, a2);
        assert_ne!(a1, b1);
        assert_eq!(a1.len(), 37);
        assert!(a1[5..].bytes().all(|c| c.is_ascii_hexdigit()));
    }
}
