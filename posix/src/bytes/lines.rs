//! Newline-delimited message framing for byte streams (stdio), over the
//! core's [`LineDecoder`], in a buffer sized to the longest line at hand.

use std::future::Future;
use std::io;
use std::pin::Pin;

use smol::io::{AsyncRead, AsyncReadExt};

pub use mcpx_core::frame::line::LineEvent;
use mcpx_core::frame::line::LineDecoder;

/// Reads `r` to its end, calling `f` for each line (empty lines are skipped)
/// or over-long line (more than `max` bytes: dropped, reported with its
/// length; reading goes on). A last line without `\n` is delivered too.
///
/// The line buffer starts small and grows (doubling) only while a long line
/// arrives. It keeps its size after lines of up to [`KEEP`] bytes, so a
/// steady flow of them does not allocate (and zero) a buffer per message,
/// and shrinks back after a longer one, so one large message does not keep
/// its memory committed.
pub async fn read_lines<R: AsyncRead + Unpin>(
    r: R,
    max: usize,
    mut f: impl FnMut(LineEvent<'_>),
) -> io::Result<()> {
    read_lines_paced(r, max, |ev| {
        f(ev);
        None
    })
    .await
}

/// Something to wait for before the next line is handled.
pub type Pause = Pin<Box<dyn Future<Output = ()>>>;

/// The line buffer's size at first, and after a line over [`KEEP`].
const SMALL: usize = 64 << 10;

/// The largest line buffer kept once its line is handled.
const KEEP: usize = 256 << 10;

/// [`read_lines`] where `f` may return a [`Pause`]: the next line (even one
/// already read) waits until it completes.
///
/// Reads land in the line buffer itself (no read buffer to copy from).
pub async fn read_lines_paced<R: AsyncRead + Unpin>(
    mut r: R,
    max: usize,
    mut f: impl FnMut(LineEvent<'_>) -> Option<Pause>,
) -> io::Result<()> {
    // Capacity counts a trailing `\r`, and must exceed the line by one.
    let full = max.saturating_add(2);
    let mut dec = LineDecoder::new(vec![0u8; SMALL.min(full)]);
    loop {
        // The room is never empty here: a full buffer grew, or its line was
        // reported over-long, which empties it.
        let n = match r.read(dec.room()).await {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let end = n == 0;
        if end {
            // A last line without `\n` is delivered too.
            dec.room()[0] = b'\n';
        }
        dec.filled(n.max(1));
        handle(&mut dec, max, full, &mut f).await;
        if end {
            return Ok(());
        }
    }
}

/// Hands the lines complete in `dec` to `f`, growing the buffer first when
/// it is full below the cap and shrinking it after a very long line.
async fn handle(
    dec: &mut LineDecoder<Vec<u8>>,
    max: usize,
    full: usize,
    f: &mut impl FnMut(LineEvent<'_>) -> Option<Pause>,
) {
    // A full buffer below the cap grows before the decoder would call its
    // line over-long. Zeroed storage: the kernel commits its pages only as
    // the line fills them.
    if dec.buffered() == dec.capacity() && dec.capacity() < full {
        let bigger = dec.capacity().saturating_mul(2).min(full);
        let _ = dec.replace_storage(vec![0u8; bigger]);
    }
    // After the first line of several, the other tasks get their turn
    // before the next: its writer sends what the line became at once, so
    // the peer it goes to wakes up (tens of µs on a busy host) while the
    // rest are handled, instead of after them. The rest go out together:
    // a read of many lines costs two writes onward, not one per line.
    let mut first = true;
    loop {
        let pause = match dec.next() {
            None => break,
            // The storage has room for a `\r` too, so a line of `max + 1`
            // bytes can come through whole.
            Some(LineEvent::Line(l)) if l.len() > max => f(LineEvent::over_long(l)),
            Some(ev) => f(ev),
        };
        if let Some(p) = pause {
            p.await;
        } else if first && dec.buffered() > 0 {
            smol::future::yield_now().await;
        }
        first = false;
    }
    // A very long line is handled: give its memory back.
    if dec.capacity() > KEEP && dec.buffered() <= SMALL / 2 {
        let _ = dec.replace_storage(vec![0u8; SMALL]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(max: usize, chunks: &[&[u8]]) -> Vec<String> {
        struct Chunks<'a>(Vec<&'a [u8]>);
        impl AsyncRead for Chunks<'_> {
            fn poll_read(
                mut self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<io::Result<usize>> {
                if self.0.is_empty() {
                    return std::task::Poll::Ready(Ok(0));
                }
                // A read takes what fits; the rest comes next.
                let n = self.0[0].len().min(buf.len());
                buf[..n].copy_from_slice(&self.0[0][..n]);
                self.0[0] = &self.0[0][n..];
                if self.0[0].is_empty() {
                    self.0.remove(0);
                }
                std::task::Poll::Ready(Ok(n))
            }
        }
        let mut out = Vec::new();
        crate::process::reactor::block_on(read_lines(Chunks(chunks.to_vec()), max, |e| {
            out.push(match e {
                LineEvent::Line(l) => format!("L:{}", String::from_utf8_lossy(l)),
                LineEvent::TooLarge { len, .. } => format!("BIG:{len}"),
            })
        }))
        .unwrap();
        out
    }

    #[test]
    fn splits_lines_across_reads() {
        assert_eq!(run(100, &[b"ab", b"c\nd", b"e\r\n\nf"]), ["L:abc", "L:de", "L:f"]);
        assert_eq!(run(100, &[b"x\n"]), ["L:x"]);
        assert_eq!(run(100, &[]), Vec::<String>::new());
    }

    #[test]
    fn over_long_lines_are_reported_and_skipped() {
        assert_eq!(run(3, &[b"abcd\nok\n"]), ["BIG:4", "L:ok"]);
        assert_eq!(run(3, &[b"abcd", b"efg", b"h\nok\n"]), ["BIG:8", "L:ok"]);
        assert_eq!(run(3, &[b"abcdef"]), ["BIG:6"]);
        assert_eq!(run(3, &[b"abc\n"]), ["L:abc"]);
        assert_eq!(run(3, &[b"abc\r\n"]), ["L:abc"]);
    }

    #[test]
    fn a_growing_buffer_passes_long_lines_whole_up_to_the_cap() {
        let long = vec![b'x'; 5 * SMALL + 7];
        let mut input = long.clone();
        input.extend_from_slice(b"\nok\n");
        let chunks: Vec<&[u8]> = input.chunks(1000).collect();
        let out = run(6 * SMALL, &chunks);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].len(), 2 + long.len());
        assert_eq!(out[1], "L:ok");
        // One byte over the cap: still reported, not grown past it.
        let mut over = vec![b'y'; SMALL * 2 + 2];
        over.extend_from_slice(b"\nz\n");
        let chunks: Vec<&[u8]> = over.chunks(1000).collect();
        assert_eq!(run(SMALL * 2, &chunks), [format!("BIG:{}", SMALL * 2 + 2), "L:z".into()]);
    }

    #[test]
    fn a_pause_holds_the_next_line() {
        use std::cell::RefCell;
        use std::rc::Rc;
        let seen = Rc::new(RefCell::new(Vec::new()));
        let data: &[u8] = b"a\nb\nc\n";
        let s2 = seen.clone();
        crate::process::reactor::block_on(read_lines_paced(data, 10, move |ev| {
            let LineEvent::Line(l) = ev else { return None };
            s2.borrow_mut().push(String::from_utf8_lossy(l).into_owned());
            if l == b"a" {
                let s3 = s2.clone();
                Some(Box::pin(async move {
                    smol::Timer::after(std::time::Duration::from_millis(20)).await;
                    s3.borrow_mut().push("paused".into());
                }))
            } else {
                None
            }
        }))
        .unwrap();
        assert_eq!(*seen.borrow(), ["a", "paused", "b", "c"]);
    }

    #[test]
    fn the_first_of_several_lines_read_at_once_goes_on_before_the_rest_are_handled() {
        use std::cell::{Cell, RefCell};
        use std::rc::Rc;
        // A writer task woken by each line notes how many lines were
        // handled when it got its turn.
        let handled = Rc::new(Cell::new(0));
        let turns = Rc::new(RefCell::new(Vec::new()));
        let (tx, rx) = smol::channel::unbounded::<()>();
        let ex = crate::process::exec::Executor::new();
        let (h, t) = (handled.clone(), turns.clone());
        let writer = ex.spawn(async move {
            while rx.recv().await.is_ok() {
                t.borrow_mut().push(h.get());
                while rx.try_recv().is_ok() {}
            }
        });
        let data: &[u8] = b"a\nb\nc\nd\n";
        crate::process::reactor::block_on(ex.run(async {
            read_lines(data, 10, |_| {
                handled.set(handled.get() + 1);
                let _ = tx.try_send(());
            })
            .await
            .unwrap();
            drop(tx);
            writer.await;
        }));
        // Its first turn came after the first line, the next after the rest.
        assert_eq!(*turns.borrow(), [1, 4]);
    }
}
