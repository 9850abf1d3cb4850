//! Task ids: unguessable strings drawn from the hub's secret seed, so a
//! task id says nothing about other tasks and cannot be guessed by another
//! client (`tasks-unbound-secure-ids`, even though tasks are also bound to
//! their principal).
//!
//! A replica of a cluster (`hub::shared`) writes its id into the task ids
//! it issues, `mcpx-<replica>.<hex>`, so any replica can tell which one runs
//! a task. The owner is not secret and need not be authentic: a forged one
//! only sends the request to a replica that does not know the task.

use mcpx_core::request_state::{digest, Seeded};

/// Hex digits of the random part.
const RANDOM_HEX: usize = 32;

/// Draws task ids.
pub(crate) struct Ids {
    seeded: Seeded,
    /// `mcpx-` or `mcpx-<replica>.`
    prefix: String,
}

impl Ids {
    /// Ids derived from the hub's secret seed (under a label of their own,
    /// so they share nothing with `requestState` nonces) and the replica's
    /// id, if in a cluster (replicas started with one seed still differ).
    pub fn new(secret_seed: [u8; 32], replica: Option<&str>) -> Ids {
        let mut seed = secret_seed.to_vec();
        seed.extend_from_slice(b"mcpx/task-ids");
        let prefix = match replica {
            Some(r) => {
                seed.extend_from_slice(r.as_bytes());
                format!("mcpx-{r}.")
            }
            None => "mcpx-".to_string(),
        };
        Ids { seeded: Seeded::new(digest(&seed)), prefix }
    }

    /// A fresh id: the prefix and 128 random bits in hex.
    // Requirement: tasks-id-string-receiver-unique
    pub fn next(&mut self) -> String {
        let mut s = String::with_capacity(self.prefix.len() + RANDOM_HEX);
        s.push_str(&self.prefix);
        for b in self.seeded.nonce() {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }
}

/// The replica a task id names (`mcpx-<replica>.<hex>`), if any.
pub(crate) fn owner(id: &str) -> Option<&str> {
    let rest = id.strip_prefix("mcpx-")?;
    let (replica, random) = rest.rsplit_once('.')?;
    let random_ok = random.len() == RANDOM_HEX && random.bytes().all(|c| c.is_ascii_hexdigit());
    (random_ok && crate::hub::replica::valid_replica_id(replica)).then_some(replica)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_distinct_and_depend_on_the_seed() {
        let mut a = Ids::new([1; 32], None);
        let mut b = Ids::new([2; 32], None);
        let (a1, a2, b1) = (a.next(), a.next(), b.next());
        assert_ne!(a1, a2);
        assert_ne!(a1, b1);
        assert_eq!(a1.len(), 37);
        assert!(a1[5..].bytes().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(owner(&a1), None, "a hub alone names no replica");
    }

    #[test]
    fn a_replica_names_itself_and_replicas_with_one_seed_differ() {
        let mut r1 = Ids::new([1; 32], Some("r1"));
        let mut r2 = Ids::new([1; 32], Some("r-2"));
        let (a, b) = (r1.next(), r2.next());
        assert!(a.starts_with("mcpx-r1."), "{a}");
        assert_eq!((owner(&a), owner(&b)), (Some("r1"), Some("r-2")));
        assert_ne!(a[8..], b[9..]);
        for bad in ["mcpx-r1.xyz", "mcpx-.0123456789abcdef0123456789abcdef", "task-r1.0123456789abcdef0123456789abcdef", "mcpx-r 1.0123456789abcdef0123456789abcdef"] {
            assert_eq!(owner(bad), None, "{bad}");
        }
    }
}
