//! The one restart loop, shared by the stdio supervisor and the remote
//! transport: run an attempt (a child's life, a remote session), report how
//! it ended, wait with capped exponential backoff, try again, and give up
//! after a bounded number of failures in a row.
//!
//! A server that gave up stays down, with a `failed: ...` reason the hub
//! shows in its status, until a restart is asked for (`mcpx restart NAME`,
//! or a change to its entry in the config).

use std::future::Future;
use std::time::{Duration, Instant};

use smol::channel::{Receiver, RecvError};
use smol::future::FutureExt as _;
use smol::Timer;

use crate::log::line::show_duration;
use crate::hub::{Next, UpstreamId};
use crate::servers::events::Events;

/// Failed attempts in a row after which a server is given up (by default).
pub const DEFAULT_MAX_RESTARTS: u32 = 10;

/// What a supervisor is told from outside.
#[derive(Debug)]
pub enum Ctl {
    /// Stop the attempt (gently) and start a new one at once.
    Restart(String),
    /// Stop for good.
    Shutdown,
    /// Stop for good at once, skipping any goodbye.
    Kill,
}

/// The timings and the bound of the loop.
#[derive(Clone, Debug)]
pub struct Policy {
    pub min: Duration,
    pub max: Duration,
    /// An attempt that lasted this long counts as a success: the delay
    /// starts over at `min` and the failure count at 0.
    pub stable_after: Duration,
    /// Restarts after failures in a row before giving up.
    pub max_restarts: u32,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            min: Duration::from_millis(250),
            max: Duration::from_secs(30),
            stable_after: Duration::from_secs(10),
            max_restarts: DEFAULT_MAX_RESTARTS,
        }
    }
}

/// How an attempt ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// On its own (died, unreachable, session lost, could not start).
    Failed,
    /// A restart was asked for.
    Restart,
    /// A shutdown was asked for.
    Stopped,
}

/// An attempt's end with what the hub is told about it.
pub struct Ended {
    pub end: End,
    pub reason: String,
    /// The last lines of a child's stderr (empty for remote servers).
    pub tail: String,
}

/// The delay before each next attempt: `min`, doubling up to `max`, and
/// `min` again after an attempt that lasted `stable_after`. Also the
/// reconnection delay of the shared-state store (cluster/store.rs).
pub(crate) struct Backoff {
    min: Duration,
    max: Duration,
    stable_after: Duration,
    next: Duration,
}

impl Backoff {
    pub(crate) fn new(p: &Policy) -> Backoff {
        Backoff { min: p.min, max: p.max, stable_after: p.stable_after, next: p.min }
    }

    /// Starts over at `min` (an asked-for restart is no failure).
    pub(crate) fn reset(&mut self) {
        self.next = self.min;
    }

    /// The delay after an attempt, begun at `started`, that failed.
    pub(crate) fn delay(&mut self, started: Instant) -> Duration {
        if started.elapsed() >= self.stable_after {
            self.next = self.min;
        }
        let d = self.next;
        self.next = (d * 2).min(self.max);
        d
    }
}

/// Runs `attempt` until a shutdown: each end is reported to `events` as
/// `exited`, with the [`Next`] step; after a failure the next attempt waits
/// its backoff delay (logged as "server NAME: `retry` in N"), unless a
/// restart or shutdown comes first. After more than `policy.max_restarts`
/// failures in a row the report says [`Next::GaveUp`] and the loop waits for
/// a restart or a shutdown only.
pub async fn run<F, Fut>(
    name: &str,
    retry: &str,
    id: UpstreamId,
    events: &dyn Events,
    policy: &Policy,
    ctl: &Receiver<Ctl>,
    mut attempt: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Ended>,
{
    let mut backoff = Backoff::new(policy);
    let mut failures = 0u32;
    loop {
        let t0 = Instant::now();
        let Ended { end, reason, tail } = attempt().await;
        match end {
            End::Stopped => {
                events.exited(id, &reason, &tail, Next::Stop);
                return;
            }
            End::Restart => {
                events.exited(id, &reason, &tail, Next::Now);
                backoff.reset();
                failures = 0;
                continue;
            }
            End::Failed => {}
        }
        if t0.elapsed() >= policy.stable_after {
            failures = 0;
        }
        failures += 1;
        if failures > policy.max_restarts {
            warn!("server {name}: gave up after {failures} failed attempt(s) in a row: {reason}; once it is fixed, `mcpx restart {name}` starts it again (so does a change to its entry in the config)");
            events.exited(id, &reason, &tail, Next::GaveUp { attempts: failures });
            match ctl.recv().await {
                Ok(Ctl::Restart(why)) => {
                    info!("server {name}: trying again ({why})");
                    backoff.reset();
                    failures = 0;
                    continue;
                }
                Ok(Ctl::Shutdown | Ctl::Kill) | Err(_) => return,
            }
        }
        let delay = backoff.delay(t0);
        events.exited(id, &reason, &tail, Next::After(delay));
        info!("server {name}: {retry} in {} (attempt {} of {})", show_duration(delay), failures + 1, policy.max_restarts + 1);
        match wait(delay, ctl).await {
            None => {}
            Some(Ok(Ctl::Restart(_))) => {
                backoff.reset();
                failures = 0;
            }
            Some(Ok(Ctl::Shutdown | Ctl::Kill)) | Some(Err(_)) => return,
        }
    }
}

/// Waits `delay` unless a control message comes first: `None` when the delay
/// passed, else what `ctl` gave.
async fn wait<T>(delay: Duration, ctl: &Receiver<T>) -> Option<Result<T, RecvError>> {
    let told = async { Some(ctl.recv().await) };
    let timer = async {
        Timer::after(delay).await;
        None
    };
    told.or(timer).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::servers::testing::{run as run_ex, until, Log};
    use std::cell::Cell;
    use std::rc::Rc;

    fn fast(max_restarts: u32) -> Policy {
        Policy {
            min: Duration::from_millis(10),
            max: Duration::from_millis(40),
            stable_after: Duration::from_secs(10),
            max_restarts,
        }
    }

    fn failing(n: &Cell<u32>) -> impl std::future::Future<Output = Ended> + '_ {
        n.set(n.get() + 1);
        async move { Ended { end: End::Failed, reason: format!("exited with status {}", n.get()), tail: String::new() } }
    }

    // covers: stdio-client-restart-crashed-server
    #[test]
    fn gives_up_after_the_bound_and_waits_for_a_restart() {
        run_ex(Duration::from_secs(10), |ex| async move {
            let log = Rc::new(Log::default());
            let (tx, rx) = smol::channel::bounded(4);
            let attempts = Rc::new(Cell::new(0u32));
            let (l, a) = (log.clone(), attempts.clone());
            let task = ex.spawn(async move {
                run("x", "restarting", 0, &*l, &fast(2), &rx, || failing(&a)).await;
            });
            assert!(until(Duration::from_secs(5), || log.count("exited") == 3).await);
            // Given up: no more attempts, however long we wait.
            Timer::after(Duration::from_millis(200)).await;
            assert_eq!(attempts.get(), 3);
            let events = log.take();
            assert_eq!(events, ["exited exited with status 1 | ", "exited exited with status 2 | ", "exited exited with status 3 | "]);
            let ms = Duration::from_millis;
            assert_eq!(log.nexts(), [Next::After(ms(10)), Next::After(ms(20)), Next::GaveUp { attempts: 3 }]);
            // A restart asked for tries again, with a fresh count.
            tx.try_send(Ctl::Restart("asked".into())).unwrap();
            assert!(until(Duration::from_secs(5), || log.count("exited") == 3).await);
            assert_eq!(attempts.get(), 6);
            tx.try_send(Ctl::Shutdown).unwrap();
            task.await;
        });
    }

    #[test]
    fn delays_double_up_to_the_cap() {
        let mut b = Backoff::new(&fast(0));
        let t = Instant::now();
        let d: Vec<u128> = (0..4).map(|_| b.delay(t).as_millis()).collect();
        assert_eq!(d, [10, 20, 40, 40]);
        b.reset();
        assert_eq!(b.delay(t).as_millis(), 10);
    }
}
