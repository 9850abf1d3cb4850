//! The thread's executor: tasks spawned on it run on this thread, in the
//! order they were woken, whenever its [`Executor::run`] future is polled
//! (by [`block_on`](super::reactor::block_on), or as a task of another
//! executor).
//!
//! It is smol's `LocalExecutor` cut to what one thread needs: one queue of
//! woken tasks and the waker of the one `run` that drains it. smol's is
//! built for many threads sharing tasks (a local queue per runner, a
//! global one, stealing between them, a sleepers list behind a mutex): it
//! looked for each next task through three queues and registered itself as
//! a sleeper before each wait, about 4,100 of the 26,700 instructions of a
//! sequential 16 B stdio call; with this one the call counts 24,100. A
//! waker may still be called from another thread (async-io's, which
//! drives timers, remote connections and child exits), so the queue is
//! behind a mutex, never contended in the steady state.
//!
//! Dropping the executor drops its tasks' futures, as smol's does.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};

use async_task::{Runnable, Task};

/// Tasks one poll of [`Executor::run`] runs at most before it lets the
/// reactor look for events (smol's budget).
const BUDGET: usize = 200;

pub struct Executor {
    shared: Arc<Shared>,
    /// The tasks not yet ended, to drop their futures when the executor goes.
    active: Rc<RefCell<Active>>,
}

/// A slot per task: its waker until it ends.
#[derive(Default)]
struct Active {
    wakers: Vec<Option<Waker>>,
    free: Vec<usize>,
}

/// What a waker on any thread reaches.
struct Shared {
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    woken: VecDeque<Runnable>,
    /// The waker of the `run` that drains `woken`.
    runner: Option<Waker>,
    /// That `run` found `woken` empty and waits to be woken: the next task
    /// woken wakes it (while it runs, a task woken is simply queued).
    asleep: bool,
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn schedule(&self, runnable: Runnable) {
        let runner = {
            let mut q = self.queue();
            q.woken.push_back(runnable);
            if q.asleep {
                q.asleep = false;
                q.runner.clone()
            } else {
                None
            }
        };
        if let Some(w) = runner {
            w.wake();
        }
    }
}

/// Ends a task's slot in `active` when its future completes or is dropped.
struct Ended(Rc<RefCell<Active>>, usize);

impl Drop for Ended {
    fn drop(&mut self) {
        let mut active = self.0.borrow_mut();
        // Gone already when the executor is being dropped.
        if let Some(slot) = active.wakers.get_mut(self.1) {
            *slot = None;
            active.free.push(self.1);
        }
    }
}

impl Executor {
    pub fn new() -> Executor {
        Executor { shared: Arc::new(Shared { queue: Mutex::new(Queue::default()) }), active: Rc::default() }
    }

    /// Spawns `future`; it first runs at the executor's next turn.
    pub fn spawn<T: 'static>(&self, future: impl Future<Output = T> + 'static) -> Task<T> {
        let index = {
            let mut active = self.active.borrow_mut();
            match active.free.pop() {
                Some(i) => i,
                None => {
                    active.wakers.push(None);
                    active.wakers.len() - 1
                }
            }
        };
        let ended = Ended(self.active.clone(), index);
        let future = async move {
            let _ended = ended;
            future.await
        };
        let shared = self.shared.clone();
        let (runnable, task) = async_task::spawn_local(future, move |r| shared.schedule(r));
        self.active.borrow_mut().wakers[index] = Some(runnable.waker());
        runnable.schedule();
        task
    }

    /// Runs the woken tasks whenever polled, until `future` completes.
    pub async fn run<T>(&self, future: impl Future<Output = T>) -> T {
        let mut future = pin!(future);
        poll_fn(|cx| {
            if let Poll::Ready(t) = future.as_mut().poll(cx) {
                return Poll::Ready(t);
            }
            for _ in 0..BUDGET {
                let next = {
                    let mut q = self.shared.queue();
                    let next = q.woken.pop_front();
                    if next.is_none() {
                        if !q.runner.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                            q.runner = Some(cx.waker().clone());
                        }
                        q.asleep = true;
                    }
                    next
                };
                match next {
                    Some(runnable) => {
                        runnable.run();
                    }
                    None => return Poll::Pending,
                }
            }
            // More are woken: let the reactor look for events first.
            cx.waker().wake_by_ref();
            Poll::Pending
        })
        .await
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        // Wake every task not ended, so each is queued, then drop them all
        // (dropping a task's future may wake or end others).
        let active = std::mem::take(&mut *self.active.borrow_mut());
        for w in active.wakers.into_iter().flatten() {
            w.wake();
        }
        loop {
            let next = self.shared.queue().woken.pop_front();
            match next {
                Some(runnable) => drop(runnable),
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::time::Duration;

    #[test]
    fn tasks_run_in_the_order_they_were_woken_and_their_outputs_reach_the_awaiting_future() {
        let ex = Executor::new();
        let order = Rc::new(RefCell::new(Vec::new()));
        let sum = crate::process::reactor::block_on(ex.run(async {
            let tasks: Vec<_> = (1..=3)
                .map(|i| {
                    let order = order.clone();
                    ex.spawn(async move {
                        order.borrow_mut().push(i);
                        i
                    })
                })
                .collect();
            let mut sum = 0;
            for t in tasks.into_iter().rev() {
                sum += t.await;
            }
            sum
        }));
        assert_eq!(sum, 6);
        assert_eq!(*order.borrow(), [1, 2, 3]);
    }

    #[test]
    fn an_ended_tasks_slot_is_taken_by_the_next() {
        let ex = Executor::new();
        crate::process::reactor::block_on(ex.run(async {
            for i in 0..10 {
                assert_eq!(ex.spawn(async move { i }).await, i);
            }
        }));
        assert_eq!(ex.active.borrow().wakers.len(), 1);
    }

    #[test]
    fn a_task_woken_from_another_thread_wakes_the_waiting_run() {
        let ex = Executor::new();
        let (tx, rx) = smol::channel::bounded::<u32>(1);
        let got = crate::process::reactor::block_on(ex.run(async {
            let t = ex.spawn(async move { rx.recv().await.unwrap() });
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                smol::block_on(tx.send(7)).unwrap();
            });
            t.await
        }));
        assert_eq!(got, 7);
    }

    #[test]
    fn dropping_the_executor_drops_the_futures_of_its_waiting_tasks() {
        struct Flag(Rc<Cell<bool>>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.set(true);
            }
        }
        let dropped = Rc::new(Cell::new(false));
        let ex = Executor::new();
        let flag = Flag(dropped.clone());
        ex.spawn(async move {
            let _flag = flag;
            std::future::pending::<()>().await
        })
        .detach();
        crate::process::reactor::block_on(ex.run(smol::future::yield_now()));
        assert!(!dropped.get(), "the task is only waiting");
        drop(ex);
        assert!(dropped.get());
    }

    #[test]
    fn a_task_that_keeps_waking_itself_leaves_the_run_to_the_reactor_between_budgets() {
        let ex = Executor::new();
        let spins = Rc::new(Cell::new(0usize));
        let s = spins.clone();
        ex.spawn(async move {
            loop {
                s.set(s.get() + 1);
                smol::future::yield_now().await;
            }
        })
        .detach();
        // The run's own future is polled again only after a budget's worth.
        let polls = Cell::new(0usize);
        crate::process::reactor::block_on(ex.run(poll_fn(|cx| {
            polls.set(polls.get() + 1);
            if polls.get() == 3 {
                Poll::Ready(())
            } else {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        })));
        assert_eq!(spins.get(), 2 * BUDGET);
    }
}
