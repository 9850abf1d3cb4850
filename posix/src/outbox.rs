//! Bounded queues of outgoing messages, one per peer (client stdout, each
//! server's stdin), drained by one writer task each.
//!
//! The hub is drained synchronously, so a full queue cannot push back on it:
//! at the cap (messages or bytes) `push` fails with [`Full`] and the caller
//! reports it, naming the peer. `try_push` hands the refused message back:
//! for a server's queue, `serve` gives it to `Hub::upstream_refused`, which
//! answers a client request in it with an error at once.
//!
//! An answer to a client's own request is never refused
//! ([`Outbox::push_answer`] takes it past the caps): instead the client's
//! reader stops reading while the queue is full ([`Outbox::is_full`],
//! [`Outbox::room`]), so the client cannot send more requests than its
//! queue holds plus those in flight. The writer sends each queued batch
//! with one `write_all` of whole lines, so messages never interleave.

use std::cell::Cell;
use std::fmt;
use std::io;
use std::rc::Rc;

use smol::channel::{self, Receiver, Sender, TrySendError};
use smol::io::{AsyncWrite, AsyncWriteExt};

/// Default caps: messages and bytes queued for one peer.
pub const DEFAULT_MAX_MSGS: usize = 4096;
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

/// Largest batch written at once (a single larger message is written whole).
const BATCH_BYTES: usize = 256 << 10;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PushError {
    /// The queue holds `msgs` messages / `bytes` bytes: the peer is not reading.
    Full { msgs: usize, bytes: usize },
    /// The writer is gone (peer closed or stopped).
    Closed,
}

impl fmt::Display for PushError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Full { msgs, bytes } => {
                write!(f, "output queue full ({msgs} messages, {bytes} bytes waiting): the peer is not reading")
            }
            PushError::Closed => f.write_str("the peer's input is closed"),
        }
    }
}

#[derive(Clone)]
pub struct Outbox {
    /// Unbounded: the caps are checked in `try_push`, so that answers can
    /// go past them.
    tx: Sender<Vec<u8>>,
    bytes: Rc<Cell<usize>>,
    max_msgs: usize,
    max_bytes: usize,
    /// A message left the queue (a wake-up for `room`).
    taken: Receiver<()>,
}

pub struct OutboxRx {
    rx: Receiver<Vec<u8>>,
    bytes: Rc<Cell<usize>>,
    taken: Sender<()>,
}

pub fn outbox(max_msgs: usize, max_bytes: usize) -> (Outbox, OutboxRx) {
    let (tx, rx) = channel::unbounded();
    let (taken_tx, taken) = channel::bounded(1);
    let bytes = Rc::new(Cell::new(0));
    let max_msgs = max_msgs.max(1);
    (Outbox { tx, bytes: bytes.clone(), max_msgs, max_bytes, taken }, OutboxRx { rx, bytes, taken: taken_tx })
}

impl Outbox {
    /// Queues one message (without its newline).
    #[cfg(test)]
    pub fn push(&self, msg: Vec<u8>) -> Result<(), PushError> {
        self.try_push(msg).map_err(|(e, _)| e)
    }

    /// As [`push`](Self::push), but a refused message is handed back (with
    /// any raw CR/LF turned into spaces), so the caller can answer for it.
    pub fn try_push(&self, msg: Vec<u8>) -> Result<(), (PushError, Vec<u8>)> {
        let queued = self.bytes.get();
        if self.tx.len() >= self.max_msgs || (queued > 0 && queued + msg.len() > self.max_bytes) {
            let mut msg = msg;
            one_line(&mut msg);
            return Err((PushError::Full { msgs: self.tx.len(), bytes: queued }, msg));
        }
        self.push_answer(msg)
    }

    /// Queues an answer to one of the peer's own requests, past the caps:
    /// it must not be lost, and the peer's reader holds back while the
    /// queue [`is_full`](Self::is_full). Fails only once the writer is gone.
    pub fn push_answer(&self, mut msg: Vec<u8>) -> Result<(), (PushError, Vec<u8>)> {
        one_line(&mut msg);
        let len = msg.len();
        match self.tx.try_send(msg) {
            Ok(()) => {
                self.bytes.set(self.bytes.get() + len);
                Ok(())
            }
            Err(TrySendError::Closed(m) | TrySendError::Full(m)) => Err((PushError::Closed, m)),
        }
    }

    /// At or over a cap: the peer is not reading fast enough.
    pub fn is_full(&self) -> bool {
        self.tx.len() >= self.max_msgs || self.bytes.get() >= self.max_bytes
    }

    /// Completes once the queue is below its caps again (or its writer is gone).
    pub async fn room(&self) {
        while self.is_full() && !self.tx.is_closed() {
            if self.taken.recv().await.is_err() {
                return;
            }
        }
    }

    /// The cap on bytes queued.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Ends the queue: the writer finishes what is queued, then stops.
    pub fn close(&self) {
        self.tx.close();
    }
}

impl OutboxRx {
    /// Writes queued messages as lines until the queue is closed and empty
    /// (`Ok`) or a write fails (`Err`, e.g. `BrokenPipe`: the peer is gone).
    pub async fn write_to<W: AsyncWrite + Unpin>(&self, mut w: W) -> io::Result<()> {
        let mut batch = Vec::new();
        let result = async {
            while let Ok(first) = self.rx.recv().await {
                batch.clear();
                self.take(first, &mut batch);
                while batch.len() < BATCH_BYTES {
                    match self.rx.try_recv() {
                        Ok(m) => self.take(m, &mut batch),
                        Err(_) => break,
                    }
                }
                let _ = self.taken.try_send(());
                w.write_all(&batch).await?;
                w.flush().await?;
                // A large batch's memory is given back, not kept for the next one.
                if batch.capacity() > BATCH_BYTES * 2 {
                    batch = Vec::new();
                }
            }
            Ok(())
        }
        .await;
        // Nobody will read what is left; let pushes fail fast.
        self.rx.close();
        self.taken.close();
        result
    }

    fn take(&self, msg: Vec<u8>, batch: &mut Vec<u8>) {
        self.bytes.set(self.bytes.get().saturating_sub(msg.len()));
        batch.extend_from_slice(&msg);
        batch.push(b'\n');
    }
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

    // covers: stdio-no-embedded-newlines
    #[test]
    fn every_message_is_written_as_exactly_one_line() {
        let (tx, rx) = outbox(8, 1000);
        tx.push(b"{\"a\":\r\n 1,\n\"b\":\"x\\ny\"}".to_vec()).unwrap();
        tx.push(b"{}".to_vec()).unwrap();
        tx.close();
        let mut out = Vec::new();
        smol::block_on(rx.write_to(&mut out)).unwrap();
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
        smol::block_on(rx.write_to(&mut out)).unwrap();
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
        smol::block_on(async {
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

    #[test]
    fn byte_cap() {
        let (tx, _rx) = outbox(100, 10);
        // One message larger than the cap is accepted when the queue is empty.
        tx.push(vec![b'x'; 20]).unwrap();
        assert_eq!(tx.push(b"y".to_vec()), Err(PushError::Full { msgs: 1, bytes: 20 }));
    }
}
