//! How long the reactor looks for events before it sleeps on them.
//!
//! A thread asleep in `epoll_wait` is woken by the write that makes one of
//! its descriptors ready: the writer pays for the wake-up, and the sleeper
//! waits to be scheduled again. On a virtual machine each such hop costs
//! tens of microseconds, which under load is most of a stdio call's time
//! through mcpx (one thread handles both directions of every pipe, where a
//! relay has a thread per direction). So while the runtime expects events
//! soon (more than one request in flight), the reactor first looks for
//! them without sleeping, for a while that adapts as the guest halt-poll
//! governor's does: doubled (from [`START`], up to [`MAX`]) when the event
//! came after the look but within [`SOON`], halved (to none below
//! [`START`]) when it came later. [`SOON`] is well past [`MAX`]: a wait
//! that missed the look also holds the sleep's own wake-up, so under load
//! it often lasts longer than any look would. On a host with one CPU it
//! never looks: the writer it waits for would have no CPU to run on.

use std::time::Duration;

/// The longest look.
const MAX: Duration = Duration::from_micros(50);
/// The first look after none.
const START: Duration = Duration::from_micros(10);
/// A wait at most this long says the load goes on.
const SOON: Duration = Duration::from_micros(500);

/// The reactor's look before a sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spin {
    /// How long the next look lasts (zero: none).
    limit: Duration,
    /// Whether this host has a CPU for the writer besides this thread's.
    cpus: bool,
}

impl Spin {
    /// A thread that may use more than one CPU (`cpus`) may look.
    pub const fn new(cpus: bool) -> Spin {
        Spin { limit: Duration::ZERO, cpus }
    }

    /// How long to look before sleeping, when events are expected soon
    /// (`busy`, asked only on a host where the look may be taken): `None`
    /// for no look at all (nor a measure of the sleep).
    pub fn look(&self, busy: impl FnOnce() -> bool) -> Option<Duration> {
        (self.cpus && busy()).then_some(self.limit)
    }

    /// An event came `waited` after the look began (the look and, if it
    /// found none, the sleep after it).
    pub fn waited(&mut self, waited: Duration) {
        if waited > SOON {
            let half = self.limit / 2;
            self.limit = if half < START { Duration::ZERO } else { half };
        } else if waited > self.limit {
            self.limit = (self.limit * 2).clamp(START, MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn the_look_grows_while_events_come_soon_after_it_and_shrinks_while_they_come_late() {
        // (limit before, waited, limit after)
        let table = [
            (0, 3, 10),   // a first short sleep: a look begins
            (10, 4, 10),  // the look caught it: kept
            (10, 10, 10), // caught at its very end: kept
            (10, 12, 20), // a sleep just after it: longer
            (20, 45, 40),
            (40, 50, 50), // never past MAX
            (50, 49, 50),
            (50, 500, 50), // a wait with a wake-up in it still says load
            (50, 501, 25), // a later one: shorter
            (40, 1_000_000, 20),
            (20, 5_000, 10),
            (10, 900, 0), // below START: none
            (0, 900, 0),
            (0, 400, 10), // and a short wait again begins one
        ];
        for (before, waited, after) in table {
            let mut s = Spin { limit: us(before), cpus: true };
            s.waited(us(waited));
            assert_eq!(s.limit, us(after), "limit {before} µs, waited {waited} µs");
        }
    }

    #[test]
    fn it_looks_only_when_events_are_expected_and_another_cpu_can_send_them() {
        let mut s = Spin::new(true);
        s.waited(us(5));
        assert_eq!(s.look(|| true), Some(us(10)));
        assert_eq!(s.look(|| false), None, "nothing expected soon: sleep at once");
        let mut one = Spin::new(false);
        one.waited(us(5));
        assert_eq!(one.look(|| panic!("not asked")), None, "one CPU: looking would keep the writer off it");
    }
}
