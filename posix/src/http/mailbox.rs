//! A stream's queue: how session routing hands messages to the connection
//! task that writes a POST's answer or a GET stream.
//!
//! Everything runs on one thread, so this is a `VecDeque` and a waker
//! behind an `Rc`, not a channel: no slot array sized by the cap up front,
//! no listener allocated per wait, and a connection reuses its queue from
//! one request to the next once no sender is left. Nothing can then reach a
//! later request of the connection, since reuse needs every sender gone.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};

use crate::hub::Outcome;

/// What a stream's connection task receives: a message, with its event
/// number when the stream is resumable.
#[derive(Debug)]
pub(crate) enum Item {
    /// A response to one of the exchange's requests, and what it says.
    Response(Option<u64>, Vec<u8>, Outcome),
    /// A notification or server→client request.
    Other(Option<u64>, Vec<u8>),
}

struct Inner {
    items: RefCell<VecDeque<Item>>,
    cap: Cell<usize>,
    senders: Cell<usize>,
    receiver_gone: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

impl Inner {
    fn wake(&self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

/// The routing side; the queue ends for the receiver once every sender is dropped.
pub(crate) struct Sender(Rc<Inner>);

/// The connection side.
pub(crate) struct Receiver(Rc<Inner>);

/// A queue of at most `cap` messages (at least one).
pub(crate) fn queue(cap: usize) -> (Sender, Receiver) {
    let inner = Rc::new(Inner {
        items: RefCell::new(VecDeque::new()),
        cap: Cell::new(cap.max(1)),
        senders: Cell::new(1),
        receiver_gone: Cell::new(false),
        waker: Cell::new(None),
    });
    (Sender(inner.clone()), Receiver(inner))
}

impl Sender {
    /// Queues `item`; gives it back when the queue is full or its receiver gone.
    pub fn try_send(&self, item: Item) -> Result<(), Item> {
        let q = &self.0;
        let mut items = q.items.borrow_mut();
        if q.receiver_gone.get() || items.len() >= q.cap.get() {
            return Err(item);
        }
        items.push_back(item);
        drop(items);
        q.wake();
        Ok(())
    }

    /// Its receiver is gone.
    pub fn is_closed(&self) -> bool {
        self.0.receiver_gone.get()
    }
}

impl Clone for Sender {
    fn clone(&self) -> Sender {
        self.0.senders.set(self.0.senders.get() + 1);
        Sender(self.0.clone())
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        let left = self.0.senders.get() - 1;
        self.0.senders.set(left);
        if left == 0 {
            self.0.wake();
        }
    }
}

impl Receiver {
    /// The next message; `None` once the queue is empty and every sender gone.
    pub async fn recv(&self) -> Option<Item> {
        poll_fn(|cx| {
            let q = &self.0;
            if let Some(item) = q.items.borrow_mut().pop_front() {
                return Poll::Ready(Some(item));
            }
            if q.senders.get() == 0 {
                return Poll::Ready(None);
            }
            let w = match q.waker.take() {
                Some(w) if w.will_wake(cx.waker()) => w,
                _ => cx.waker().clone(),
            };
            q.waker.set(Some(w));
            Poll::Pending
        })
        .await
    }

    /// This queue again, empty, with a new sender and cap, when no sender of
    /// its last use is left (else `None`: it stays with them and is dropped).
    pub fn reuse(self, cap: usize) -> Option<(Sender, Receiver)> {
        let q = &self.0;
        if q.senders.get() != 0 || Rc::strong_count(q) != 1 {
            return None;
        }
        q.items.borrow_mut().clear();
        q.cap.set(cap.max(1));
        q.senders.set(1);
        Some((Sender(q.clone()), self))
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.0.receiver_gone.set(true);
        self.0.items.borrow_mut().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(b: u8) -> Item {
        Item::Other(None, vec![b])
    }

    fn got(i: Option<Item>) -> Option<u8> {
        match i {
            Some(Item::Other(None, b)) | Some(Item::Response(None, b, _)) => Some(b[0]),
            _ => None,
        }
    }

    #[test]
    fn messages_come_in_order_up_to_the_cap_and_the_queue_ends_with_its_last_sender() {
        let (tx, rx) = queue(2);
        let tx2 = tx.clone();
        assert!(tx.try_send(item(1)).is_ok());
        assert!(tx2.try_send(item(2)).is_ok());
        assert!(tx.try_send(item(3)).is_err(), "over the cap");
        drop(tx);
        crate::process::reactor::block_on(async {
            assert_eq!(got(rx.recv().await), Some(1));
            assert_eq!(got(rx.recv().await), Some(2));
            drop(tx2);
            assert!(rx.recv().await.is_none(), "every sender gone");
        });
    }

    #[test]
    fn a_queue_is_reused_only_when_no_sender_of_its_last_use_is_left() {
        let (tx, rx) = queue(4);
        tx.try_send(item(1)).unwrap();
        let kept = tx.clone();
        drop(tx);
        assert!(rx.reuse(4).is_none(), "a sender is still held");
        assert!(kept.is_closed(), "the receiver went with the failed reuse");
        assert!(kept.try_send(item(2)).is_err());

        let (tx, rx) = queue(4);
        tx.try_send(item(1)).unwrap();
        drop(tx);
        let (tx, rx) = rx.reuse(1).expect("no sender left");
        crate::process::reactor::block_on(async {
            tx.try_send(item(5)).unwrap();
            assert!(tx.try_send(item(6)).is_err(), "the new cap");
            assert_eq!(got(rx.recv().await), Some(5), "nothing of the last use");
        });
    }

    #[test]
    fn a_waiting_receiver_is_woken_by_a_send_and_by_the_last_drop() {
        let (tx, rx) = queue(4);
        let ex = crate::process::exec::Executor::new();
        let task = ex.spawn(async move { (got(rx.recv().await), rx.recv().await.is_none()) });
        crate::process::reactor::block_on(ex.run(async {
            smol::future::yield_now().await;
            tx.try_send(item(7)).unwrap();
            smol::future::yield_now().await;
            drop(tx);
            assert_eq!(task.await, (Some(7), true));
        }));
    }
}
