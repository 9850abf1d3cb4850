//! The stdio downstream: one MCP client on mcpx's own stdin/stdout.
//!
//! stdin is read line by line (an over-long line is reported to the hub,
//! which answers with an error; the session goes on; lines after an
//! `initialize` wait for its answer; while the output queue is full, the
//! next line waits until the client reads); outputs are written to
//! stdout one line each, in batches with one write and one flush, by a single
//! writer task, so messages never interleave.
//!
//! The handles come from `stdfd`: pipes and sockets are made non-blocking
//! and polled by the reactor (their original flags are restored on exit, as
//! the file descriptions are shared with the parent); files and terminals
//! are driven through `smol::Unblock` (a helper thread).

use std::io;
use std::rc::Rc;

use std::time::Duration;

use smol::io::{AsyncRead, AsyncWrite};
use smol::Task;

use crate::hub::ClientId;
use crate::bytes::lines::{read_lines_paced, LineEvent, Pause};
use crate::bytes::outbox::{self, Outbox};
use crate::process::exec::Executor;
use crate::serve::runtime::{Runtime, Stop};

/// A running stdio client connection.
pub struct StdioClient {
    pub id: ClientId,
    pub reader: Task<()>,
    pub writer: Task<()>,
}

/// Connects a client reading `input` and writing `output` (stdin/stdout in
/// `mcpx serve`). Its end is reported through [`Stop`].
pub fn start<R, W>(ex: &Rc<Executor>, rt: &Rc<Runtime>, input: R, output: W) -> StdioClient
where
    R: AsyncRead + Unpin + 'static,
    W: AsyncWrite + Unpin + 'static,
{
    let limits = crate::limits::get();
    let (tx, rx) = outbox::outbox(outbox::DEFAULT_MAX_MSGS, outbox::DEFAULT_MAX_BYTES.min(limits.max_queue_bytes));
    let id = rt.connect_client(tx.clone());

    let wrt = rt.clone();
    let writer = ex.spawn(async move {
        match rx.write_to(output).await {
            Ok(()) => wrt.stop(Stop::OutputClosed),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                wrt.stop(Stop::OutputError("the client closed its end of stdout".into()))
            }
            Err(e) => wrt.stop(Stop::OutputError(format!("writing to stdout failed: {e}"))),
        }
    });

    let rrt = rt.clone();
    let reader = ex.spawn(async move {
        let r = read_lines_paced(input, crate::limits::max_line(), |ev| {
            // Backpressure: while a server has a pipe's worth of this
            // client's messages not yet taken, the client is not read.
            let hold = match ev {
                LineEvent::Line(line) => rrt.client_message(id, line),
                LineEvent::TooLarge { len, head, tail } => {
                    rrt.client_frame_too_large(id, len, head, tail);
                    None
                }
            };
            let wait = if rrt.initializing(id) {
                Some(wait_initialized(rrt.clone(), id))
            } else {
                // A client that does not read its answers is not read
                // either until they are taken (none is dropped).
                tx.is_full().then(|| wait_room(tx.clone()))
            };
            match (hold, wait) {
                (Some(hold), Some(wait)) => Some(Box::pin(async move {
                    hold.await;
                    wait.await
                })),
                (hold, wait) => hold.or(wait),
            }
        })
        .await;
        match r {
            Ok(()) => rrt.stop(Stop::InputClosed),
            Err(e) => rrt.stop(Stop::InputError(format!("reading stdin failed: {e}"))),
        }
    });

    StdioClient { id, reader, writer }
}

/// Completes once the client's output queue has room again.
fn wait_room(out: Outbox) -> Pause {
    Box::pin(async move { out.room().await })
}

/// Longest the next client message is held while `initialize` is
/// unanswered (the hub answers it within its startup wait).
const INIT_HOLD: Duration = Duration::from_secs(30);

/// Completes once the client's `initialize` is answered (or after
/// [`INIT_HOLD`]).
fn wait_initialized(rt: Rc<Runtime>, id: ClientId) -> Pause {
    Box::pin(async move { rt.initialized(id, INIT_HOLD).await })
}
