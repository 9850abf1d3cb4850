//! Test helpers shared by the upstream transports' unit tests.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant};

use smol::future::FutureExt as _;
use smol::Timer;

use crate::hub::{Next, UpstreamId};
use crate::process::exec::Executor;
use crate::servers::events::Events;

/// What an upstream reported, as text: `started`, `msg {line}`,
/// `garbage {what}`, `too_large {len} on {request}: over {limit}`, `exited {reason} | {stderr tail}`; and what each exit
/// said comes next.
#[derive(Default)]
pub struct Log(RefCell<Vec<String>>, RefCell<Vec<Next>>);

impl Events for Log {
    fn started(&self, _: UpstreamId) {
        self.0.borrow_mut().push("started".into());
    }
    fn message(&self, _: UpstreamId, line: &[u8]) {
        self.0.borrow_mut().push(format!("msg {}", String::from_utf8_lossy(line)));
    }
    fn garbage(&self, _: UpstreamId, what: &str) {
        self.0.borrow_mut().push(format!("garbage {what}"));
    }
    fn too_large(&self, _: UpstreamId, big: &crate::hub::Oversize<'_>, on: Option<&[u8]>) {
        let on = on.map(String::from_utf8_lossy);
        self.0.borrow_mut().push(format!("too_large {} on {on:?}: over {}", big.len, big.limit));
    }
    fn exited(&self, _: UpstreamId, reason: &str, tail: &str, next: Next) {
        self.0.borrow_mut().push(format!("exited {reason} | {tail}"));
        self.1.borrow_mut().push(next);
    }
}

impl Log {
    /// What each exit so far said comes next, in order.
    pub fn nexts(&self) -> Vec<Next> {
        self.1.borrow().clone()
    }
    /// The events so far, leaving none.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.borrow_mut())
    }
    pub fn all(&self) -> Vec<String> {
        self.0.borrow().clone()
    }
    pub fn count(&self, prefix: &str) -> usize {
        self.0.borrow().iter().filter(|e| e.starts_with(prefix)).count()
    }
    /// The messages received, parsed.
    pub fn msgs(&self) -> Vec<serde_json::Value> {
        self.0
            .borrow()
            .iter()
            .filter_map(|e| e.strip_prefix("msg "))
            .map(|m| serde_json::from_str(m).expect("a JSON message"))
            .collect()
    }
    /// The response with this id, if one came.
    pub fn answer(&self, id: serde_json::Value) -> Option<serde_json::Value> {
        self.msgs().into_iter().find(|m| m["id"] == id && m.get("method").is_none())
    }
}

/// Runs `body` on a fresh local executor, failing after `limit`.
pub fn run<F: Future<Output = ()>>(limit: Duration, body: impl FnOnce(Rc<Executor>) -> F) {
    let ex = Rc::new(Executor::new());
    let fut = body(ex.clone());
    let guard = async {
        Timer::after(limit).await;
        panic!("test took longer than {limit:?}");
    };
    crate::process::reactor::block_on(ex.run(fut.or(guard)));
}

/// Whether `cond` held within `limit`, polled every few milliseconds.
pub async fn until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if cond() {
            return true;
        }
        Timer::after(Duration::from_millis(5)).await;
    }
    cond()
}
