//! A pipe or socket read that asks the reactor first once it is drained.
//!
//! `Async`'s own `poll_read` reads first and waits after: after a short
//! read (all there was), the next read fails with `EAGAIN`, the readiness
//! the reactor delivered earlier is taken as new, and a second read fails
//! too before the descriptor is armed again: two wasted system calls per
//! wake-up, four per forwarded stdio call. [`ReadyRead`] reads first only
//! while the last read filled its buffer (more may be waiting); after a
//! short read it waits for the reactor's next readiness, which (the
//! descriptor being level-triggered when armed) comes at once if bytes
//! arrived meanwhile.

use std::cell::Cell;
use std::fs::File;
use std::future::poll_fn;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use async_io::Async;
use smol::io::AsyncRead;

pub struct ReadyRead<T = File> {
    io: Async<T>,
    /// The last read filled its buffer (or none was made yet).
    more: Cell<bool>,
}

impl ReadyRead {
    /// Takes `fd` (a pipe or socket), made non-blocking.
    pub fn new(fd: impl Into<OwnedFd>) -> io::Result<ReadyRead> {
        Ok(ReadyRead::of(Async::new(File::from(fd.into()))?))
    }
}

impl<T> ReadyRead<T>
where
    for<'a> &'a T: Read,
{
    pub fn of(io: Async<T>) -> ReadyRead<T> {
        ReadyRead { io, more: Cell::new(true) }
    }

    /// The handle, for writes and the socket's own calls.
    pub fn io(&self) -> &Async<T> {
        &self.io
    }

    /// The next read waits for the reactor first (to share the thread).
    pub fn wait_next(&self) {
        self.more.set(false);
    }

    pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_read_ready(cx, buf)).await
    }

    fn poll_read_ready(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        loop {
            if !self.more.get() {
                ready!(self.io.poll_readable(cx))?;
            }
            match self.io.get_ref().read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.more.set(false),
                Err(e) => return Poll::Ready(Err(e)),
                Ok(n) => {
                    self.more.set(n == buf.len() && n > 0);
                    return Poll::Ready(Ok(n));
                }
            }
        }
    }
}

impl<T> AsyncRead for ReadyRead<T>
where
    for<'a> &'a T: Read,
{
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.poll_read_ready(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smol::io::AsyncReadExt;
    use std::io::Write;

    #[test]
    fn reads_what_arrives_in_any_chunking_and_then_the_end() {
        let (r, mut w) = std::io::pipe().unwrap();
        let mut r = ReadyRead::new(r).unwrap();
        smol::block_on(async {
            let mut buf = [0u8; 4];
            w.write_all(b"abcdef").unwrap();
            // A full read leaves `more` set: the rest comes without a wait.
            assert_eq!(AsyncReadExt::read(&mut r, &mut buf).await.unwrap(), 4);
            assert_eq!(AsyncReadExt::read(&mut r, &mut buf).await.unwrap(), 2);
            assert_eq!(&buf[..2], b"ef");
            // Drained: the next read waits for the writer.
            let writer = std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                w.write_all(b"g").unwrap();
            });
            assert_eq!(r.read(&mut buf).await.unwrap(), 1);
            assert_eq!(buf[0], b'g');
            writer.join().unwrap();
            // The writer is gone: end of input.
            r.wait_next();
            assert_eq!(r.read(&mut buf).await.unwrap(), 0);
        });
    }
}
