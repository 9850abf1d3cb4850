//! What a peer without a valid token can make mcpx ask the authorization
//! server. Every opaque token costs an outbound introspection, so:
//!
//! - a token the server called inactive is remembered as inactive for
//!   [`NEGATIVE_TTL_S`], by its SHA-256 digest (never the token itself), at
//!   most [`MAX_NEGATIVE`] of them (the oldest is forgotten first);
//! - each peer (an IPv4 address, an IPv6 /64) may have [`BURST`]
//!   introspections that found no active token, refilled at one per
//!   [`REFILL_S`] seconds; past that, its tokens mcpx does not know are
//!   refused at once (429 with `Retry-After`) without asking. An
//!   introspection that finds an active token gives its unit back, so
//!   clients with good tokens are never slowed. At most [`MAX_PEERS`] peers
//!   are tracked; with the table full of peers still paying, a new one is
//!   refused as over its share.
//!
//! Behind a reverse proxy every client has the proxy's address, so they
//! share one peer's units.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

/// How long an inactive answer is trusted.
pub(super) const NEGATIVE_TTL_S: u64 = 60;
/// Most inactive tokens remembered.
const MAX_NEGATIVE: usize = 4096;
/// Introspections a peer may have without an active token, at once.
pub(super) const BURST: u32 = 10;
/// Seconds for one unit to come back.
const REFILL_S: u64 = 1;
/// Most peers tracked.
const MAX_PEERS: usize = 4096;

type Digest = [u8; 32];

/// Who asks: an IPv4 address, an IPv6 /64 (one host's usual share), or a
/// peer whose address is unknown (all such together).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Peer {
    V4(u32),
    V6(u64),
    Unknown,
}

impl Peer {
    pub fn of(addr: Option<IpAddr>) -> Peer {
        match addr.map(|a| a.to_canonical()) {
            Some(IpAddr::V4(a)) => Peer::V4(a.into()),
            Some(IpAddr::V6(a)) => Peer::V6((u128::from(a) >> 64) as u64),
            None => Peer::Unknown,
        }
    }
}

/// Why a token is answered without asking the authorization server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// It was found inactive less than [`NEGATIVE_TTL_S`] ago.
    KnownInactive,
    /// The peer used up its introspections; one comes back in `retry_after_s`.
    OverShare { retry_after_s: u64 },
}

/// What the authorization server said of an introspected token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    Active,
    Inactive,
    /// No answer (unreachable, not JSON): the unit stays spent.
    Failed,
}

struct Bucket {
    units: u32,
    /// When `units` was last refilled (Unix s).
    at_s: u64,
}

impl Bucket {
    fn refill(&mut self, now_s: u64) {
        let back = now_s.saturating_sub(self.at_s) / REFILL_S;
        if back > 0 {
            self.units = u64::from(self.units).saturating_add(back).min(u64::from(BURST)) as u32;
            self.at_s = now_s;
        }
    }

    /// Full again by `now_s`: nothing to remember.
    fn idle(&self, now_s: u64) -> bool {
        u64::from(self.units).saturating_add(now_s.saturating_sub(self.at_s) / REFILL_S) >= u64::from(BURST)
    }
}

#[derive(Default)]
pub(super) struct Throttle {
    /// Inactive tokens: digest → until (Unix s).
    inactive: HashMap<Digest, u64>,
    /// The same, oldest first (the TTL is one: also soonest to expire).
    order: VecDeque<(u64, Digest)>,
    peers: HashMap<Peer, Bucket>,
}

impl Throttle {
    /// May `peer` have token `d` introspected at `now_s`? `Ok` spends one of
    /// its units, to be settled with [`Throttle::settle`].
    pub fn admit(&mut self, d: &Digest, peer: Peer, now_s: u64) -> Result<(), Refusal> {
        if self.inactive.get(d).is_some_and(|until| now_s < *until) {
            return Err(Refusal::KnownInactive);
        }
        if !self.peers.contains_key(&peer) && self.peers.len() >= MAX_PEERS {
            self.peers.retain(|_, b| !b.idle(now_s));
            if self.peers.len() >= MAX_PEERS {
                return Err(Refusal::OverShare { retry_after_s: REFILL_S });
            }
        }
        let b = self.peers.entry(peer).or_insert(Bucket { units: BURST, at_s: now_s });
        b.refill(now_s);
        if b.units == 0 {
            let retry_after_s = (b.at_s + REFILL_S).saturating_sub(now_s).max(1);
            return Err(Refusal::OverShare { retry_after_s });
        }
        b.units -= 1;
        Ok(())
    }

    /// The answer for token `d`, which `peer` was admitted for.
    pub fn settle(&mut self, d: Digest, peer: Peer, outcome: Outcome, now_s: u64) {
        match outcome {
            Outcome::Active => {
                if let Some(b) = self.peers.get_mut(&peer) {
                    b.units = (b.units + 1).min(BURST);
                }
            }
            Outcome::Inactive => self.remember_inactive(d, now_s),
            Outcome::Failed => {}
        }
    }

    fn remember_inactive(&mut self, d: Digest, now_s: u64) {
        while let Some((until, old)) = self.order.front().copied() {
            if until > now_s && self.order.len() < MAX_NEGATIVE {
                break;
            }
            self.order.pop_front();
            if self.inactive.get(&old) == Some(&until) {
                self.inactive.remove(&old);
            }
        }
        let until = now_s + NEGATIVE_TTL_S;
        self.inactive.insert(d, until);
        self.order.push_back((until, d));
    }

    #[cfg(test)]
    pub fn remembered(&self) -> usize {
        self.inactive.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000;

    fn d(i: u32) -> Digest {
        mcpx_core::request_state::digest(&i.to_be_bytes())
    }

    #[test]
    fn peers_are_addresses_and_v6_slash_64s() {
        let p = |s: &str| Peer::of(Some(s.parse().unwrap()));
        assert_eq!(p("10.0.0.1"), p("::ffff:10.0.0.1"));
        assert_ne!(p("10.0.0.1"), p("10.0.0.2"));
        assert_eq!(p("2001:db8:1:2::1"), p("2001:db8:1:2:ffff::9"));
        assert_ne!(p("2001:db8:1:2::1"), p("2001:db8:1:3::1"));
        assert_eq!(Peer::of(None), Peer::Unknown);
    }

    #[test]
    fn inactive_tokens_are_answered_from_memory_for_a_while() {
        let mut t = Throttle::default();
        let peer = Peer::V4(1);
        assert_eq!(t.admit(&d(1), peer, NOW), Ok(()));
        t.settle(d(1), peer, Outcome::Inactive, NOW);
        // Known inactive: no introspection, from any peer, until the TTL ends.
        assert_eq!(t.admit(&d(1), Peer::V4(2), NOW + NEGATIVE_TTL_S - 1), Err(Refusal::KnownInactive));
        assert_eq!(t.admit(&d(1), peer, NOW + NEGATIVE_TTL_S), Ok(()));
    }

    #[test]
    fn each_peer_has_a_share_of_unanswered_introspections() {
        let mut t = Throttle::default();
        let (bad, other) = (Peer::V4(1), Peer::V4(2));
        for i in 0..BURST {
            assert_eq!(t.admit(&d(i), bad, NOW), Ok(()), "{i}");
        }
        // Over its share (also while those are under way), at once.
        assert_eq!(t.admit(&d(100), bad, NOW), Err(Refusal::OverShare { retry_after_s: 1 }));
        // Another peer is not affected.
        assert_eq!(t.admit(&d(100), other, NOW), Ok(()));
        // One unit back per second.
        assert_eq!(t.admit(&d(101), bad, NOW + 1), Ok(()));
        assert_eq!(t.admit(&d(102), bad, NOW + 1), Err(Refusal::OverShare { retry_after_s: 1 }));
        // An active token gives its unit back.
        t.settle(d(101), bad, Outcome::Active, NOW + 1);
        assert_eq!(t.admit(&d(103), bad, NOW + 1), Ok(()));
        t.settle(d(103), bad, Outcome::Failed, NOW + 1);
        assert!(t.admit(&d(104), bad, NOW + 1).is_err(), "a failed introspection stays spent");
    }

    #[test]
    fn good_tokens_never_run_out() {
        let mut t = Throttle::default();
        for i in 0..10 * BURST {
            assert_eq!(t.admit(&d(i), Peer::V4(1), NOW), Ok(()), "{i}");
            t.settle(d(i), Peer::V4(1), Outcome::Active, NOW);
        }
    }

    #[test]
    fn the_tables_are_bounded() {
        let mut t = Throttle::default();
        for i in 0..(MAX_NEGATIVE as u32 + 10) {
            t.settle(d(i), Peer::Unknown, Outcome::Inactive, NOW);
        }
        assert_eq!(t.remembered(), MAX_NEGATIVE);
        assert_eq!(t.admit(&d(0), Peer::V4(1), NOW), Ok(()), "the oldest was forgotten");
        // Expired entries go first.
        t.settle(d(u32::MAX), Peer::Unknown, Outcome::Inactive, NOW + NEGATIVE_TTL_S);
        assert_eq!(t.remembered(), 1);
        // Peers: a full table of paying peers refuses a new one; idle ones make room.
        let mut t = Throttle::default();
        for p in 0..MAX_PEERS as u32 {
            assert!(t.admit(&d(p), Peer::V4(p), NOW).is_ok());
        }
        assert_eq!(t.admit(&d(0), Peer::V6(1), NOW), Err(Refusal::OverShare { retry_after_s: 1 }));
        assert_eq!(t.admit(&d(0), Peer::V6(1), NOW + 1), Ok(()), "refilled peers are forgotten");
        assert!(t.peers.len() <= MAX_PEERS);
    }
}
