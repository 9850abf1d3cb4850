//! Capped exponential backoff between attempts to run or reach an upstream,
//! shared by the stdio supervisor and the remote transport.

use std::time::{Duration, Instant};

use smol::channel::{Receiver, RecvError};
use smol::future::FutureExt as _;
use smol::Timer;

/// The delay before each next attempt: `min`, doubling up to `max`, and
/// `min` again after an attempt that lasted `stable_after`.
pub struct Backoff {
    min: Duration,
    max: Duration,
    stable_after: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(min: Duration, max: Duration, stable_after: Duration) -> Backoff {
        Backoff { min, max, stable_after, next: min }
    }

    /// Starts over at `min` (an asked-for restart is no failure).
    pub fn reset(&mut self) {
        self.next = self.min;
    }

    /// The delay after an attempt, begun at `started`, that failed.
    pub fn delay(&mut self, started: Instant) -> Duration {
        if started.elapsed() >= self.stable_after {
            self.next = self.min;
        }
        let d = self.next;
        self.next = (d * 2).min(self.max);
        d
    }
}

/// Waits `delay` unless a control message comes first: `None` when the delay
/// passed, else what `ctl` gave.
pub async fn wait<T>(delay: Duration, ctl: &Receiver<T>) -> Option<Result<T, RecvError>> {
    let told = async { Some(ctl.recv().await) };
    let timer = async {
        Timer::after(delay).await;
        None
    };
    told.or(timer).await
}
