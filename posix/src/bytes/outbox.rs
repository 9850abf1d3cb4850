//! Bounded queues of outgoing messages, one per peer (client stdout, each
//! server's stdin), drained by one writer task each.
//!
//! The hub is drained synchronously, so a full queue cannot push back on it:
//! at the cap (messages or bytes) `push` fails with [`Full`] and the caller
//! reports it, naming the peer. `try_push` hands the refused message back:
//! for a server's queue, `serve` gives it to `Input::UpstreamRefused`, which
//! answers a client request in it with an error at once.
//!
//! An answer to a client's own request is never refused
//! ([`Outbox::push_answer`] takes it past the caps): instead the client's
//! reader stops reading while the queue is full ([`Outbox::is_full`],
//! [`Outbox::room`]), so the client cannot send more requests than its
//! queue holds plus those in flight. The writer sends everything queued
//! when it wakes with one gathering write (`writev`) of whole lines, so
//! messages never interleave and a burst costs one write. Single-threaded
//! (`Rc`): a message is queued in its own buffer, never copied, except that
//! a small one goes into the room left behind the last (a burst of small
//! messages is a few buffers, not one each); a push wakes the writer, no
//! channel.
//!
//! A server's queue also pushes back on the stdio client: past a pipe's
//! worth queued that the writer has not taken, the client is not read
//! until it takes them ([`Outbox::hold`]), for a bounded time.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::future::{poll_fn, Future};
use std::io::{self, IoSlice};
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Duration;

use smol::io::{AsyncWrite, AsyncWriteExt};

/// Default caps: messages and bytes queued for one peer.
pub const DEFAULT_MAX_MSGS: usize = 4096;
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

/// A message up to this size is copied into the room behind the last one
/// queued, when it fits there; a larger one (or one that does not fit) is
/// queued in its own buffer.
const COPY_MAX: usize = 4 << 10;

/// Buffers one write gathers at most (Linux's `IOV_MAX` is 1024).
const GATHER: usize = 64;

/// Bytes queued and not yet taken by the writer past which the sender is
/// held ([`Outbox::hold`]): a pipe's worth (Linux's default pipe capacity).
pub const HOLD_BYTES: usize = 64 << 10;

/// Longest one hold lasts ([`Outbox::hold`]).
pub const HOLD_LIMIT: Duration = Duration::from_millis(50);

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PushError {
    /// The queue holds `msgs` messages / `bytes` bytes: the peer is not
    /// reading, or (a server) busy with what it has.
    Full { msgs: usize, bytes: usize },
    /// The writer is gone (peer closed or stopped).
    Closed,
}

impl fmt::Display for PushError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Full { msgs, bytes } => {
                write!(f, "output queue full ({msgs} messages, {bytes} bytes waiting)")
            }
            PushError::Closed => f.write_str("the peer's input is closed"),
        }
    }
}

/// The queue one writer drains: whole lines, so that all a wake-up of the
/// writer finds goes out in one write.
#[derive(Default)]
struct Queue {
    /// Queued messages in order, each ending in `\n`: a buffer holds one
    /// message, or several small ones.
    lines: VecDeque<Vec<u8>>,
    /// Bytes in `lines`.
    len: usize,
    msgs: usize,
    /// No more messages: the writer ends once `lines` is written.
    closed: bool,
    /// The writer is gone: pushes fail at once.
    gone: bool,
    /// The writer, waiting for lines.
    writer: Option<Waker>,
    /// Waiting for the queue to drop below its caps (`room`) or for the
    /// writer to take it (`hold`).
    waiting_room: Vec<Waker>,
    /// The writer took nothing for a whole hold: no sender is held until it
    /// takes something.
    stalled: bool,
}

impl Queue {
    /// Bytes of the queued messages (without their newlines).
    fn bytes(&self) -> usize {
        self.len - self.msgs
    }

    fn full(&self, max_msgs: usize, max_bytes: usize) -> bool {
        self.msgs >= max_msgs || self.bytes() >= max_bytes
    }
}

#[derive(Clone)]
pub struct Outbox {
    q: Rc<RefCell<Queue>>,
    max_msgs: usize,
    max_bytes: usize,
}

pub struct OutboxRx {
    q: Rc<RefCell<Queue>>,
}

pub fn outbox(max_msgs: usize, max_bytes: usize) -> (Outbox, OutboxRx) {
    let q = Rc::new(RefCell::new(Queue::default()));
    (Outbox { q: q.clone(), max_msgs: max_msgs.max(1), max_bytes }, OutboxRx { q })
}

impl Outbox {
    /// Queues one message (without its newline).
    #[cfg(test)]
    pub fn push(&self, msg: Vec<u8>) -> Result<(), PushError> {
        self.try_push(msg).map_err(|(e, _)| e)
    }

    /// As [`push`](Self::push), but a refused message is handed back, so
    /// the caller can answer for it.
    pub fn try_push(&self, msg: Vec<u8>) -> Result<(), (PushError, Vec<u8>)> {
        {
            let q = self.q.borrow();
            let queued = q.bytes();
            if q.msgs >= self.max_msgs || (queued > 0 && queued + msg.len() > self.max_bytes) {
                return Err((PushError::Full { msgs: q.msgs, bytes: queued }, msg));
            }
        }
        self.push_answer(msg)
    }

    /// Queues an answer to one of the peer's own requests, past the caps:
    /// it must not be lost, and the peer's reader holds back while the
    /// queue [`is_full`](Self::is_full). Fails only once the writer is gone.
    pub fn push_answer(&self, mut msg: Vec<u8>) -> Result<(), (PushError, Vec<u8>)> {
        let mut q = self.q.borrow_mut();
        if q.gone || q.closed {
            return Err((PushError::Closed, msg));
        }
        one_line(&mut msg);
        q.len += msg.len() + 1;
        q.msgs += 1;
        match q.lines.back_mut().filter(|last| msg.len() <= COPY_MAX && last.capacity() - last.len() > msg.len()) {
            Some(last) => {
                last.extend_from_slice(&msg);
                last.push(b'\n');
                super::spare::give(msg);
            }
            None => {
                msg.push(b'\n');
                q.lines.push_back(msg);
            }
        }
        if let Some(w) = q.writer.take() {
            w.wake();
        }
        Ok(())
    }

    /// At or over a cap: the peer is not reading fast enough.
    pub fn is_full(&self) -> bool {
        self.q.borrow().full(self.max_msgs, self.max_bytes)
    }

    /// Completes once the queue is below its caps again (or its writer is gone).
    pub async fn room(&self) {
        self.until(|q| !q.full(self.max_msgs, self.max_bytes)).await
    }

    /// When [`HOLD_BYTES`] or more are queued that the writer has not taken
    /// yet, in more than one message (one alone, however large, just waits
    /// for the writer: holding its sender would only cost a timer per
    /// message), a wait until it takes them, of at most [`HOLD_LIMIT`]: the
    /// client whose message was queued last is not read meanwhile. Requests
    /// then wait in the client, which can still choose what to send, and
    /// not in mcpx, where each would only add to every later request's wait
    /// and to mcpx's memory. A writer that takes nothing within the limit
    /// is stalled and holds nobody until it takes something again, so a
    /// peer that stopped reading delays the client's other messages by the
    /// limit once, not once per message.
    ///
    /// `limit` starts the clock, when there is a hold: a future that
    /// completes [`HOLD_LIMIT`] from now (the runtime's own timer: one of
    /// async-io's would wake its thread twice for each hold).
    pub fn hold<L: Future<Output = ()> + 'static>(&self, limit: impl FnOnce() -> L) -> Option<impl Future<Output = ()> + 'static> {
        let q = self.q.borrow();
        if q.stalled || q.gone || q.closed || q.msgs < 2 || q.len < HOLD_BYTES {
            return None;
        }
        let out = self.clone();
        let limit = limit();
        Some(async move {
            let taken = async {
                out.until(|q| q.len < HOLD_BYTES).await;
                true
            };
            let limit = async {
                limit.await;
                false
            };
            if !smol::future::or(taken, limit).await {
                out.q.borrow_mut().stalled = true;
            }
        })
    }

    /// Completes once `done` holds for the queue, or its writer is gone.
    async fn until(&self, done: impl Fn(&Queue) -> bool) {
        poll_fn(|cx| {
            let mut q = self.q.borrow_mut();
            if q.gone || q.closed || done(&q) {
                return Poll::Ready(());
            }
            if !q.waiting_room.iter().any(|w| w.will_wake(cx.waker())) {
                q.waiting_room.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }

    /// The cap on bytes queued.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Ends the queue: the writer finishes what is queued, then stops.
    pub fn close(&self) {
        let mut q = self.q.borrow_mut();
        q.closed = true;
        if let Some(w) = q.writer.take() {
            w.wake();
        }
    }
}

impl OutboxRx {
    /// Writes queued messages as lines until the queue is closed and empty
    /// (`Ok`) or a write fails (`Err`, e.g. `BrokenPipe`: the peer is gone).
    /// Everything queued when the writer wakes goes out in one gathering
    /// write; each buffer written is handed back for the next message.
    pub async fn write_to<W: AsyncWrite + Unpin>(&self, mut w: W) -> io::Result<()> {
        let mut batch = VecDeque::new();
        let result = async {
            while self.next_batch(&mut batch).await {
                write_all(&mut w, &mut batch).await?;
                w.flush().await?;
            }
            Ok(())
        }
        .await;
        // Nobody will read what is left; let pushes fail fast.
        self.gone();
        result
    }

    /// Waits for queued lines and swaps them into `batch` (empty); false
    /// once the queue is closed and empty.
    async fn next_batch(&self, batch: &mut VecDeque<Vec<u8>>) -> bool {
        poll_fn(|cx| {
            let mut q = self.q.borrow_mut();
            if q.lines.is_empty() {
                if q.closed {
                    return Poll::Ready(false);
                }
                q.writer = Some(cx.waker().clone());
                return Poll::Pending;
            }
            std::mem::swap(&mut q.lines, batch);
            q.len = 0;
            q.msgs = 0;
            q.stalled = false;
            for w in q.waiting_room.drain(..) {
                w.wake();
            }
            Poll::Ready(true)
        })
        .await
    }

    fn gone(&self) {
        let mut q = self.q.borrow_mut();
        q.gone = true;
        q.lines = VecDeque::new();
        q.len = 0;
        q.msgs = 0;
        for w in q.waiting_room.drain(..) {
            w.wake();
        }
    }
}

impl Drop for OutboxRx {
    /// A writer task cancelled before it ended leaves nobody to write.
    fn drop(&mut self) {
        self.gone();
    }
}

/// Writes all of `batch`'s buffers in order, as many as [`GATHER`] in
/// each write, handing each back once it is written.
async fn write_all<W: AsyncWrite + Unpin>(w: &mut W, batch: &mut VecDeque<Vec<u8>>) -> io::Result<()> {
    // Bytes of the first buffer already written.
    let mut done = 0;
    while let Some(first) = batch.front() {
        let first = &first[done..];
        let wrote = if batch.len() == 1 {
            w.write(first).await?
        } else {
            let mut slices = [IoSlice::new(&[]); GATHER];
            let bufs = std::iter::once(first).chain(batch.iter().skip(1).map(Vec::as_slice));
            let n = slices.iter_mut().zip(bufs).map(|(s, b)| *s = IoSlice::new(b)).count();
            w.write_vectored(&slices[..n]).await?
        };
        let mut wrote = done + wrote;
        if wrote == done {
            return Err(io::ErrorKind::WriteZero.into());
        }
        while batch.front().is_some_and(|b| b.len() <= wrote) {
            let b = batch.pop_front().expect("just seen");
            wrote -= b.len();
            super::spare::give(b);
        }
        done = wrote;
    }
    Ok(())
}

/// Makes `msg` safe to frame with one `\n`. Raw CR and LF can only be
/// whitespace between JSON tokens (inside strings they must be escaped), so
/// turning them into spaces keeps the message's meaning.
fn one_line(msg: &mut [u8]) {
    if !mcpx_core::frame::line::is_single_line(msg) {
        for b in msg.iter_mut() {
            if *b == b'\n' || *b == b'\r' {
                *b = b' ';
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smol::future::FutureExt as _;

    #[test]
    fn a_large_message_is_queued_in_its_own_buffer_and_a_small_one_in_the_room_behind_the_last() {
        let (tx, rx) = outbox(64, 1 << 20);
        let mut big = Vec::with_capacity(3 * COPY_MAX);
        big.resize(2 * COPY_MAX, b'x');
        let at = big.as_ptr();
        tx.push(big).unwrap();
        tx.push(b"{}".to_vec()).unwrap();
        tx.push(vec![b'y'; COPY_MAX + 1]).unwrap();
        tx.push(vec![b'z'; COPY_MAX]).unwrap();
        let q = rx.q.borrow();
        let sizes: Vec<usize> = q.lines.iter().map(Vec::len).collect();
        assert_eq!(sizes, [2 * COPY_MAX + 1 + 3, COPY_MAX + 2, COPY_MAX + 1]);
        assert_eq!(q.lines[0].as_ptr(), at, "not copied");
        assert_eq!((q.len, q.msgs), (sizes.iter().sum(), 4));
    }

    #[test]
    fn short_writes_resume_where_they_stopped_and_every_line_goes_out_once() {
        let (tx, rx) = outbox(100, 1 << 20);
        let mut want = Vec::new();
        for i in 0..(GATHER + 10) {
            let msg = vec![b'a' + (i % 26) as u8; if i % 3 == 0 { COPY_MAX + i } else { 1 + i }];
            want.extend_from_slice(&msg);
            want.push(b'\n');
            tx.push(msg).unwrap();
        }
        tx.close();
        let mut w = Writes { limit: 1000, writes: Vec::new() };
        crate::process::reactor::block_on(rx.write_to(&mut w)).unwrap();
        assert_eq!(w.writes.concat(), want);
        assert!(w.writes.iter().all(|b| b.len() <= 1000));
    }

    // covers: stdio-no-embedded-newlines
    #[test]
    fn every_message_is_written_as_exactly_one_line() {
        let (tx, rx) = outbox(8, 1000);
        tx.push(b"{\"a\":\r\n 1,\n\"b\":\"x\\ny\"}".to_vec()).unwrap();
        tx.push(b"{}".to_vec()).unwrap();
        tx.close();
        let mut out = Vec::new();
        crate::process::reactor::block_on(rx.write_to(&mut out)).unwrap();
        assert_eq!(out, b"{\"a\":   1, \"b\":\"x\\ny\"}\n{}\n");
        let first: serde_json::Value = serde_json::from_slice(out.split(|&b| b == b'\n').next().unwrap()).unwrap();
        assert_eq!(first, serde_json::json!({"a": 1, "b": "x\ny"}));
    }

    #[test]
    fn caps_and_order() {
        let (tx, rx) = outbox(2, 1000);
        tx.push(b"a".to_vec()).unwrap();
        tx.push(b"bb".to_vec()).unwrap();
        assert_eq!(tx.push(b"c".to_vec()), Err(PushError::Full { msgs: 2, bytes: 3 }));
        tx.close();
        let mut out = Vec::new();
        crate::process::reactor::block_on(rx.write_to(&mut out)).unwrap();
        assert_eq!(out, b"a\nbb\n");
        assert_eq!(tx.push(b"d".to_vec()), Err(PushError::Closed));
    }

    #[test]
    fn answers_pass_the_caps_and_room_waits_for_the_writer() {
        let (tx, rx) = outbox(2, 1000);
        tx.push(b"a".to_vec()).unwrap();
        tx.push(b"b".to_vec()).unwrap();
        assert!(tx.is_full());
        assert!(tx.push(b"c".to_vec()).is_err());
        tx.push_answer(b"answer".to_vec()).unwrap();
        let tx2 = tx.clone();
        let mut out = Vec::new();
        crate::process::reactor::block_on(async {
            let write = async {
                rx.write_to(&mut out).await.unwrap();
                false
            };
            let room = async {
                tx2.room().await;
                let full = tx2.is_full();
                tx2.close();
                !full
            };
            assert!(room.or(write).await, "room completes once the writer took the queue");
        });
        assert_eq!(out, b"a\nb\nanswer\n");
    }

    /// A hold's limit as the runtime gives it, on async-io's clock here.
    async fn limit() {
        smol::Timer::after(HOLD_LIMIT).await;
    }

    #[test]
    fn a_pipes_worth_not_taken_holds_the_sender_until_the_writer_takes_it() {
        let (tx, rx) = outbox(100, 1 << 20);
        tx.push(vec![b'a'; HOLD_BYTES - 2]).unwrap();
        assert!(tx.hold(limit).is_none(), "less than a pipe's worth holds nobody");
        tx.push(b"b".to_vec()).unwrap();
        let hold = tx.hold(limit).expect("a pipe's worth queued holds the sender");
        let (one, _rx) = outbox(100, 1 << 20);
        one.push(vec![b'a'; 4 * HOLD_BYTES]).unwrap();
        assert!(one.hold(limit).is_none(), "one message alone holds nobody, however large");
        let mut out = Vec::new();
        crate::process::reactor::block_on(async {
            let write = async {
                rx.write_to(&mut out).await.unwrap();
                false
            };
            let held = async {
                hold.await;
                // Released by the writer's taking the queue, not the limit.
                let stalled = tx.q.borrow().stalled;
                tx.close();
                !stalled
            };
            assert!(held.or(write).await, "the hold ends once the writer took the queue");
        });
        assert_eq!(out.len(), HOLD_BYTES + 1);
    }

    #[test]
    fn a_writer_that_takes_nothing_holds_once_until_it_takes_something() {
        let (tx, rx) = outbox(100, 1 << 20);
        tx.push(vec![b'a'; HOLD_BYTES]).unwrap();
        tx.push(b"a".to_vec()).unwrap();
        // Nobody writes: the hold ends at its limit and marks the writer stalled.
        crate::process::reactor::block_on(tx.hold(limit).expect("held"));
        assert!(tx.hold(limit).is_none(), "a stalled writer holds nobody again");
        tx.push(b"b".to_vec()).unwrap();
        assert!(tx.hold(limit).is_none());
        // Once it takes the queue, it holds senders again.
        let mut out = Vec::new();
        crate::process::reactor::block_on(async {
            let write = async {
                rx.write_to(&mut out).await.unwrap();
            };
            let refill = async {
                smol::future::yield_now().await;
                smol::future::yield_now().await;
                assert!(!tx.q.borrow().stalled, "taking the queue ends the stall");
                tx.push(vec![b'c'; HOLD_BYTES]).unwrap();
                tx.push(b"c".to_vec()).unwrap();
                let again = tx.hold(limit).is_some();
                tx.close();
                assert!(again, "a writer that took something holds senders again");
            };
            smol::future::zip(write, refill).await;
        });
        assert_eq!(out.len(), 2 * HOLD_BYTES + 8);
    }

    /// Records each write it is given, taking at most `limit` bytes of it
    /// (gathering as `writev` does).
    struct Writes {
        limit: usize,
        writes: Vec<Vec<u8>>,
    }

    impl AsyncWrite for Writes {
        fn poll_write(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &[u8]) -> std::task::Poll<io::Result<usize>> {
            self.poll_write_vectored(cx, &[IoSlice::new(buf)])
        }
        fn poll_write_vectored(mut self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>, bufs: &[IoSlice<'_>]) -> std::task::Poll<io::Result<usize>> {
            let mut all: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            all.truncate(self.limit);
            let n = all.len();
            self.writes.push(all);
            std::task::Poll::Ready(Ok(n))
        }
        fn poll_flush(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn poll_close(self: std::pin::Pin<&mut Self>, _: &mut std::task::Context<'_>) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[test]
    fn what_is_queued_at_a_wake_up_goes_out_in_one_write() {
        let (tx, rx) = outbox(100, 1000);
        let mut w = Writes { limit: usize::MAX, writes: Vec::new() };
        crate::process::reactor::block_on(async {
            let write = async {
                rx.write_to(&mut w).await.unwrap();
            };
            let feed = async {
                for round in 0..3u8 {
                    for i in 0..4u8 {
                        tx.push(vec![b'a' + round, b'0' + i]).unwrap();
                    }
                    // Let the writer take this round.
                    smol::future::yield_now().await;
                    smol::future::yield_now().await;
                }
                tx.close();
            };
            smol::future::zip(write, feed).await;
        });
        assert_eq!(w.writes, [b"a0\na1\na2\na3\n".to_vec(), b"b0\nb1\nb2\nb3\n".to_vec(), b"c0\nc1\nc2\nc3\n".to_vec()]);
        assert_eq!(tx.push(b"late".to_vec()), Err(PushError::Closed));
    }

    #[test]
    fn a_writer_dropped_unfinished_refuses_pushes_and_frees_room() {
        let (tx, rx) = outbox(1, 1000);
        tx.push(b"a".to_vec()).unwrap();
        assert!(tx.is_full());
        drop(rx);
        assert_eq!(tx.push(b"b".to_vec()), Err(PushError::Closed));
        crate::process::reactor::block_on(tx.room());
    }

    #[test]
    fn byte_cap() {
        let (tx, _rx) = outbox(100, 10);
        // One message larger than the cap is accepted when the queue is empty.
        tx.push(vec![b'x'; 20]).unwrap();
        assert_eq!(tx.push(b"y".to_vec()), Err(PushError::Full { msgs: 1, bytes: 20 }));
    }
}
