//! When the runtime is under load: what tells the reactor to look for
//! events a while before it sleeps (`process::spin`).

use std::time::{Duration, Instant};

/// The runtime's word that events come soon: more than one request open
/// when the hub last went idle, or so within [`HOLD`] before. One open
/// request is a call going its way alone (the next event is a whole round
/// trip off); with a few in flight, the hub often answers all it holds
/// before the next comes in, and goes idle with one or none open.
#[derive(Debug, Clone, Copy, Default)]
pub struct Load {
    /// When more than one request was last open.
    seen: Option<Instant>,
}

/// How long load lasts after more than one request was open.
const HOLD: Duration = Duration::from_millis(1);

impl Load {
    /// With `open` requests open now, is the hub under load? The clock
    /// (`now`) is read only under load or within its hold: a call going
    /// its way alone pays nothing for the question.
    pub fn busy(&mut self, open: usize, now: impl FnOnce() -> Instant) -> bool {
        if open <= 1 && self.seen.is_none() {
            return false;
        }
        let now = now();
        if open > 1 {
            self.seen = Some(now);
        }
        let busy = self.seen.is_some_and(|t| now.saturating_duration_since(t) < HOLD);
        if !busy {
            self.seen = None;
        }
        busy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_is_more_than_one_request_open_now_or_within_a_millisecond_before() {
        let t0 = Instant::now();
        let at = |n| t0 + Duration::from_micros(n);
        let mut l = Load::default();
        // (µs after t0, requests open, busy)
        let table = [
            (0, 0, false),
            (10, 1, false), // one call alone: no load
            (20, 2, true),
            (500, 0, true), // all answered: still within the hold
            (1019, 1, true),
            (1020, 1, false), // the hold is over
            (1500, 3, true),
            (2400, 1, true),
            (2600, 0, false),
        ];
        for (t, open, busy) in table {
            assert_eq!(l.busy(open, || at(t)), busy, "{open} open at {t} µs");
        }
        // Once the hold is over, one open request or none reads no clock.
        assert!(!l.busy(1, || panic!("the clock read with no load")));
        assert!(!l.busy(0, || panic!("the clock read with no load")));
        assert!(l.busy(2, || at(3000)));
    }
}
