//! The thread's own reactor for the descriptors on every message's path
//! (mcpx's stdin and stdout, each server's pipes, the HTTP listener and its
//! connections, the hub's alarm), and [`block_on`], which waits on it.
//!
//! On Linux it is one epoll set in which each descriptor is registered once,
//! for reads and writes, edge-triggered: waiting is one `epoll_wait`, and an
//! event costs no further call. async-io's reactor re-arms a descriptor
//! with an `epoll_ctl` after each event, sets and re-arms its timerfd and
//! re-arms its notifier around each wait (four calls per wait), and its
//! helper thread takes the reactor over whenever this thread is busy for
//! 50 µs, after which each event is handed over with a futex wake-up: a
//! forwarded stdio call cost 30 system calls on two threads.
//!
//! Under load (the runtime says when: [`expect_events_while`]) a wait
//! first looks for events a while without sleeping (`spin`): on a virtual
//! machine a sleeping thread's wake-up costs its writer and itself tens of
//! microseconds a hop.
//!
//! Timers, remote connections, Redis and the child processes' exits stay
//! with async-io: its helper thread drives them, and a waker called from
//! another thread wakes this one through an eventfd.
//!
//! A source remembers which directions were reported ready. A read or
//! write is tried while its direction is ready; `EAGAIN` clears it, and so
//! does a short read (a pipe or stream socket then holds nothing more, and
//! whatever arrives later comes with an event of its own). One task waits
//! on each direction of a source at a time: the last to wait is woken.
//!
//! Elsewhere [`Source`] is async-io's `Async` and [`block_on`] smol's.

#[cfg(target_os = "linux")]
pub use epoll::{block_on, expect_events_while, turn, Source};
#[cfg(not(target_os = "linux"))]
pub use fallback::{block_on, expect_events_while, turn, Source};

use std::io::{self, IoSlice};
use std::os::fd::AsFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use smol::io::AsyncWrite;

/// An owned source writes through `&Source` (as async-io's `Async` does).
impl<T: AsFd> AsyncWrite for Source<T>
where
    for<'a> &'a Source<T>: AsyncWrite,
{
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut &*self).poll_write(cx, buf)
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
        Pin::new(&mut &*self).poll_write_vectored(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut &*self).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut &*self).poll_close(cx)
    }
}

#[cfg(target_os = "linux")]
mod epoll {
    use std::cell::{Cell, RefCell};
    use std::future::{poll_fn, Future};
    use std::io::{self, IoSlice, Read, Write};
    use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::pin::{pin, Pin};
    use std::rc::Rc;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::Arc;
    use std::task::{ready, Context, Poll, Wake, Waker};
    use std::time::Instant;

    use smol::io::{AsyncRead, AsyncWrite};

    use crate::process::spin::Spin;

    const READ: u8 = 1;
    const WRITE: u8 = 2;
    /// A direction's end (hang-up or error) was reported: it stays ready,
    /// since that event does not come again.
    const fn ended(dir: u8) -> u8 {
        dir << 2
    }
    /// The eventfd's key (a source's key is its generation and slot).
    const SIGNAL: u64 = u64::MAX;
    const EVENTS: usize = 64;

    fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }

    /// A source's place; `gen` grows when it is released, so events keyed
    /// for an earlier source in the same place are ignored.
    #[derive(Default)]
    struct Slot {
        gen: u32,
        /// Directions reported ready and not found empty since.
        ready: u8,
        reader: Option<Waker>,
        writer: Option<Waker>,
    }

    impl Slot {
        fn key(&self, index: usize) -> u64 {
            (u64::from(self.gen) << 32) | index as u64
        }

        /// Marks what the event `flags` reports ready (or ended) and hands
        /// back the tasks waiting on it.
        fn on_event(&mut self, flags: libc::c_int) -> [Option<Waker>; 2] {
            let gone = flags & (libc::EPOLLHUP | libc::EPOLLERR) != 0;
            if gone || flags & libc::EPOLLRDHUP != 0 {
                self.ready |= ended(READ);
            }
            if gone {
                self.ready |= ended(WRITE);
            }
            let mut woken = [None, None];
            if gone || flags & (libc::EPOLLIN | libc::EPOLLRDHUP) != 0 {
                self.ready |= READ;
                woken[0] = self.reader.take();
            }
            if gone || flags & libc::EPOLLOUT != 0 {
                self.ready |= WRITE;
                woken[1] = self.writer.take();
            }
            woken
        }
    }

    /// Wakes [`block_on`]: from this thread by a flag, from another (while
    /// it sleeps in `epoll_wait`) through the eventfd too.
    struct Signal {
        fd: OwnedFd,
        woken: AtomicBool,
        asleep: AtomicBool,
    }

    impl Wake for Signal {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref()
        }

        fn wake_by_ref(self: &Arc<Self>) {
            // SeqCst on both sides: either the sleeper sees `woken`, or
            // this sees `asleep` and writes.
            if !self.woken.swap(true, SeqCst) && self.asleep.load(SeqCst) {
                let one = 1u64.to_ne_bytes();
                // SAFETY: writes 8 bytes from a live array to our eventfd.
                unsafe { libc::write(self.fd.as_raw_fd(), one.as_ptr().cast(), 8) };
            }
        }
    }

    struct Reactor {
        epoll: OwnedFd,
        signal: Arc<Signal>,
        slots: RefCell<Vec<Slot>>,
        free: RefCell<Vec<usize>>,
        /// Tasks waiting for the reactor's next turn ([`turn`]).
        deferred: RefCell<Vec<Waker>>,
        /// Whether [`block_on`] runs on this thread (sources wait on it).
        driven: Cell<bool>,
        /// The look for events before a sleep ([`Spin`]), and what says
        /// events are expected soon ([`expect_events_while`]).
        spin: Cell<Spin>,
        busy: RefCell<Option<Box<dyn Fn() -> bool>>>,
    }

    thread_local! {
        static CURRENT: RefCell<Option<Rc<Reactor>>> = const { RefCell::new(None) };
    }

    impl Reactor {
        /// This thread's reactor, made on first use.
        fn current() -> io::Result<Rc<Reactor>> {
            CURRENT.with(|c| {
                if let Some(r) = &*c.borrow() {
                    return Ok(r.clone());
                }
                let r = Rc::new(Reactor::new()?);
                *c.borrow_mut() = Some(r.clone());
                Ok(r)
            })
        }

        fn new() -> io::Result<Reactor> {
            // SAFETY: plain calls; each returned descriptor is new and owned here.
            let epoll = unsafe { OwnedFd::from_raw_fd(cvt(libc::epoll_create1(libc::EPOLL_CLOEXEC))?) };
            // SAFETY: as above, for the wake-up eventfd.
            let fd = unsafe { OwnedFd::from_raw_fd(cvt(libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK))?) };
            let r = Reactor {
                epoll,
                signal: Arc::new(Signal { fd, woken: AtomicBool::new(false), asleep: AtomicBool::new(false) }),
                slots: RefCell::new(Vec::new()),
                free: RefCell::new(Vec::new()),
                deferred: RefCell::new(Vec::new()),
                driven: Cell::new(false),
                spin: Cell::new(Spin::new(std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))),
                busy: RefCell::new(None),
            };
            r.ctl(libc::EPOLL_CTL_ADD, r.signal.fd.as_raw_fd(), libc::EPOLLIN | libc::EPOLLET, SIGNAL)?;
            Ok(r)
        }

        fn ctl(&self, op: libc::c_int, fd: RawFd, events: libc::c_int, key: u64) -> io::Result<()> {
            let mut ev = libc::epoll_event { events: events as u32, u64: key };
            // SAFETY: `ev` is a valid epoll_event; the kernel copies it.
            cvt(unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd, &mut ev) }).map(drop)
        }

        fn register(&self, fd: RawFd) -> io::Result<usize> {
            let mut slots = self.slots.borrow_mut();
            let index = self.free.borrow_mut().pop().unwrap_or_else(|| {
                slots.push(Slot::default());
                slots.len() - 1
            });
            let slot = &mut slots[index];
            // Tried at once: an event only reports what changes.
            *slot = Slot { gen: slot.gen, ready: READ | WRITE, ..Slot::default() };
            let events = libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET;
            if let Err(e) = self.ctl(libc::EPOLL_CTL_ADD, fd, events, slot.key(index)) {
                drop(slots);
                self.release(index);
                return Err(e);
            }
            Ok(index)
        }

        fn release(&self, index: usize) {
            let slot = &mut self.slots.borrow_mut()[index];
            // A later source in this slot ignores events keyed for this one.
            *slot = Slot { gen: slot.gen.wrapping_add(1), ..Slot::default() };
            self.free.borrow_mut().push(index);
        }

        /// `epoll_wait` into `events`. Before a sleep (`timeout` -1) while
        /// events are expected soon, a look for them without one ([`Spin`]);
        /// an error ends it as an event does.
        fn poll(&self, events: &mut [std::mem::MaybeUninit<libc::epoll_event>; EVENTS], timeout: libc::c_int) -> libc::c_int {
            let epoll = self.epoll.as_raw_fd();
            // SAFETY: the kernel writes at most EVENTS entries into `events`.
            let mut poll = |timeout| unsafe { libc::epoll_wait(epoll, events.as_mut_ptr().cast(), EVENTS as libc::c_int, timeout) };
            let look = match timeout {
                -1 => self.spin.get().look(|| self.busy.borrow().as_ref().is_some_and(|busy| busy())),
                _ => None,
            };
            let Some(limit) = look else {
                return poll(timeout);
            };
            let began = Instant::now();
            let mut n = 0;
            while n == 0 && began.elapsed() < limit {
                n = poll(0);
            }
            if n == 0 {
                n = poll(timeout);
            }
            let mut spin = self.spin.get();
            spin.waited(began.elapsed());
            self.spin.set(spin);
            n
        }

        /// Waits for events (`block`: until one comes or the thread is
        /// woken) and wakes the tasks waiting on them, then those waiting
        /// for a turn.
        fn wait(&self, block: bool) {
            let s = &self.signal;
            let mut timeout = 0;
            // A task waiting for a turn is woken after this pass, events or not.
            if block && self.deferred.borrow().is_empty() {
                s.asleep.store(true, SeqCst);
                if !s.woken.load(SeqCst) {
                    timeout = -1;
                }
            }
            // Not zeroed (768 bytes a wait): only what the kernel wrote is read.
            let mut events = [const { std::mem::MaybeUninit::<libc::epoll_event>::uninit() }; EVENTS];
            let n = self.poll(&mut events, timeout);
            s.asleep.store(false, SeqCst);
            // An error is EINTR (a signal): the caller goes round again.
            let written = events.get(..usize::try_from(n).unwrap_or(0)).unwrap_or(&[]);
            // SAFETY: epoll_wait initialized the first `n` entries.
            for ev in written.iter().map(|e| unsafe { e.assume_init_ref() }) {
                let (key, flags) = (ev.u64, ev.events as libc::c_int);
                if key == SIGNAL {
                    let mut count = [0u8; 8];
                    // SAFETY: reads at most 8 bytes into `count`.
                    unsafe { libc::read(s.fd.as_raw_fd(), count.as_mut_ptr().cast(), 8) };
                    continue;
                }
                let index = (key & u64::from(u32::MAX)) as usize;
                let woken = match self.slots.borrow_mut().get_mut(index) {
                    Some(slot) if slot.key(index) == key => slot.on_event(flags),
                    _ => continue,
                };
                woken.into_iter().flatten().for_each(Waker::wake);
            }
            let turn = std::mem::take(&mut *self.deferred.borrow_mut());
            turn.into_iter().for_each(Waker::wake);
        }
    }

    /// While `busy` (when given) says so, this thread's reactor expects
    /// events soon, and looks for them a while before it sleeps ([`Spin`]).
    pub fn expect_events_while(busy: Option<Box<dyn Fn() -> bool>>) {
        if let Ok(r) = Reactor::current() {
            *r.busy.borrow_mut() = busy;
        }
    }

    /// Runs `fut` to completion on this thread, waiting on its reactor
    /// while no task is ready.
    pub fn block_on<T>(fut: impl Future<Output = T>) -> T {
        let Ok(r) = Reactor::current() else {
            // No epoll set for this thread: no source can be made on it either.
            return smol::block_on(fut);
        };
        let outer = r.driven.replace(true);
        let signal = r.signal.clone();
        let waker = Waker::from(signal.clone());
        let cx = &mut Context::from_waker(&waker);
        let mut fut = pin!(fut);
        let out = loop {
            signal.woken.store(false, SeqCst);
            if let Poll::Ready(t) = fut.as_mut().poll(cx) {
                break t;
            }
            // Woken meanwhile (a task yielded, or another thread): only
            // look for events, without sleeping.
            r.wait(!signal.woken.load(SeqCst));
        };
        r.driven.set(outer);
        out
    }

    /// Completes after the reactor's next turn: the tasks whose descriptors
    /// are ready by then run first, so a busy connection shares the thread
    /// (a plain yield would not do: the executor runs ready tasks before it
    /// returns to the reactor).
    pub async fn turn() {
        let mut asked = false;
        poll_fn(|cx| {
            if asked {
                return Poll::Ready(());
            }
            asked = true;
            match Reactor::current() {
                Ok(r) if r.driven.get() => {
                    r.deferred.borrow_mut().push(cx.waker().clone());
                    Poll::Pending
                }
                _ => Poll::Ready(()),
            }
        })
        .await
    }

    /// A descriptor registered with this thread's reactor (made non-blocking).
    pub struct Source<T: AsFd> {
        reactor: Rc<Reactor>,
        index: usize,
        io: T,
    }

    impl<T: AsFd> Source<T> {
        pub fn new(io: T) -> io::Result<Source<T>> {
            let fd = io.as_fd().as_raw_fd();
            // SAFETY: F_GETFL/F_SETFL on a descriptor `io` owns.
            let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
            if flags & libc::O_NONBLOCK == 0 {
                // SAFETY: as above.
                cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) })?;
            }
            let reactor = Reactor::current()?;
            let index = reactor.register(fd)?;
            Ok(Source { reactor, index, io })
        }

        pub fn get_ref(&self) -> &T {
            &self.io
        }

        fn poll_ready(&self, dir: u8, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            debug_assert!(self.reactor.driven.get(), "a source polled outside reactor::block_on");
            let mut slots = self.reactor.slots.borrow_mut();
            let slot = &mut slots[self.index];
            if slot.ready & dir != 0 {
                return Poll::Ready(Ok(()));
            }
            let waiting = if dir == READ { &mut slot.reader } else { &mut slot.writer };
            if !waiting.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *waiting = Some(cx.waker().clone());
            }
            Poll::Pending
        }

        /// Found empty (or full): wait for the next event, unless the end
        /// of this direction was reported (its event came with the bytes
        /// just read, and does not come again).
        fn clear(&self, dir: u8) {
            let slot = &mut self.reactor.slots.borrow_mut()[self.index];
            if slot.ready & ended(dir) == 0 {
                slot.ready &= !dir;
            }
        }

        fn poll_with<R>(&self, dir: u8, cx: &mut Context<'_>, mut op: impl FnMut(&T) -> io::Result<R>) -> Poll<io::Result<R>> {
            loop {
                ready!(self.poll_ready(dir, cx))?;
                match op(&self.io) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.clear(dir),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    r => return Poll::Ready(r),
                }
            }
        }

        /// Runs `op` (a read of some kind) until it does not block.
        pub async fn read_with<R>(&self, mut op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
            poll_fn(|cx| self.poll_with(READ, cx, &mut op)).await
        }
    }

    impl<T: AsFd> Source<T>
    where
        for<'a> &'a T: Read,
    {
        fn poll_read_ref(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
            let n = ready!(self.poll_with(READ, cx, |mut io| io.read(buf)))?;
            // Short: all there was (an end of input stays readable).
            if n > 0 && n < buf.len() {
                self.clear(READ);
            }
            Poll::Ready(Ok(n))
        }

        pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
            poll_fn(|cx| self.poll_read_ref(cx, buf)).await
        }
    }

    impl<T: AsFd> Drop for Source<T> {
        fn drop(&mut self) {
            // Before `io` closes the descriptor; a copy of it elsewhere
            // would otherwise keep it in the set.
            let _ = self.reactor.ctl(libc::EPOLL_CTL_DEL, self.io.as_fd().as_raw_fd(), 0, 0);
            self.reactor.release(self.index);
        }
    }

    impl<T: AsFd> AsyncRead for Source<T>
    where
        for<'a> &'a T: Read,
    {
        fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
            self.poll_read_ref(cx, buf)
        }
    }

    impl<T: AsFd> AsyncWrite for &Source<T>
    where
        for<'a> &'a T: Write,
    {
        fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            self.poll_with(WRITE, cx, |mut io| io.write(buf))
        }

        fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
            self.poll_with(WRITE, cx, |mut io| io.write_vectored(bufs))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready((&self.io).flush())
        }

        fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.poll_flush(cx)
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod fallback {
    use std::io::{self, IoSlice, Read, Write};
    use std::os::fd::AsFd;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use async_io::Async;
    use smol::io::{AsyncRead, AsyncReadExt as _, AsyncWrite};

    pub use smol::block_on;

    pub async fn turn() {
        smol::future::yield_now().await
    }

    /// async-io's reactor sleeps at once.
    pub fn expect_events_while(_: Option<Box<dyn Fn() -> bool>>) {}

    pub struct Source<T>(Async<T>);

    impl<T: AsFd> Source<T> {
        pub fn new(io: T) -> io::Result<Source<T>> {
            Async::new(io).map(Source)
        }

        pub fn get_ref(&self) -> &T {
            self.0.get_ref()
        }

        pub async fn read_with<R>(&self, op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
            self.0.read_with(op).await
        }
    }

    impl<T> Source<T>
    where
        for<'a> &'a T: Read,
    {
        pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
            (&self.0).read(buf).await
        }
    }

    impl<T> AsyncRead for Source<T>
    where
        for<'a> &'a T: Read,
    {
        fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
            Pin::new(&mut &self.0).poll_read(cx, buf)
        }
    }

    impl<T> AsyncWrite for &Source<T>
    where
        for<'a> &'a T: Write,
    {
        fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            Pin::new(&mut &self.0).poll_write(cx, buf)
        }

        fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
            Pin::new(&mut &self.0).poll_write_vectored(cx, bufs)
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut &self.0).poll_flush(cx)
        }

        fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut &self.0).poll_close(cx)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smol::io::{AsyncReadExt, AsyncWriteExt};
    use std::fs::File;
    use std::io::Write;
    use std::time::Duration;

    #[test]
    fn reads_what_arrives_in_any_chunking_and_then_the_end() {
        let (r, mut w) = std::io::pipe().unwrap();
        let mut r = Source::new(File::from(std::os::fd::OwnedFd::from(r))).unwrap();
        block_on(async {
            let mut buf = [0u8; 4];
            w.write_all(b"abcdef").unwrap();
            // A full read: the rest comes without a wait.
            assert_eq!(AsyncReadExt::read(&mut r, &mut buf).await.unwrap(), 4);
            assert_eq!(AsyncReadExt::read(&mut r, &mut buf).await.unwrap(), 2);
            assert_eq!(&buf[..2], b"ef");
            // Drained: the next read waits for the writer, on another thread.
            let writer = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                w.write_all(b"g").unwrap();
            });
            assert_eq!(r.read(&mut buf).await.unwrap(), 1);
            assert_eq!(buf[0], b'g');
            writer.join().unwrap();
            // The writer is gone: end of input, and it stays the end.
            assert_eq!(r.read(&mut buf).await.unwrap(), 0);
            assert_eq!(r.read(&mut buf).await.unwrap(), 0);
        });
    }

    #[test]
    fn the_end_reported_with_the_last_bytes_stays_readable() {
        let (r, mut w) = std::io::pipe().unwrap();
        let r = Source::new(File::from(std::os::fd::OwnedFd::from(r))).unwrap();
        block_on(async {
            let mut buf = [0u8; 4];
            // Found empty: the next read waits for an event.
            let empty = smol::future::poll_once(r.read(&mut buf)).await;
            assert!(empty.is_none());
            // Bytes and the hang-up, delivered as one event.
            w.write_all(b"g").unwrap();
            drop(w);
            assert_eq!(r.read(&mut buf).await.unwrap(), 1);
            // A short read, but the end was reported: no event will come.
            assert_eq!(r.read(&mut buf).await.unwrap(), 0);
        });
    }

    #[test]
    fn a_full_pipe_takes_the_rest_once_read_and_timers_wake_the_thread() {
        let (r, w) = std::io::pipe().unwrap();
        let r = Source::new(File::from(std::os::fd::OwnedFd::from(r))).unwrap();
        let w = Source::new(File::from(std::os::fd::OwnedFd::from(w))).unwrap();
        const SENT: usize = 1 << 20;
        let ex = crate::process::exec::Executor::new();
        let got = block_on(ex.run(async {
            let sent = vec![7u8; SENT];
            let writer = ex.spawn(async move {
                (&w).write_all(&sent).await.unwrap();
                drop(w);
            });
            let mut got = Vec::new();
            let mut buf = vec![0u8; 4096];
            loop {
                // A timer of async-io's, whose thread wakes this one.
                async_io::Timer::after(Duration::from_micros(50)).await;
                match r.read(&mut buf).await.unwrap() {
                    0 => break,
                    n => got.extend_from_slice(&buf[..n]),
                }
            }
            writer.await;
            got
        }));
        assert_eq!(got.len(), SENT);
    }

    #[test]
    fn a_turn_comes_with_nothing_else_to_do() {
        block_on(turn());
    }

    #[test]
    fn a_turn_lets_ready_sources_go_first() {
        let (r, mut w) = std::io::pipe().unwrap();
        let r = Source::new(File::from(std::os::fd::OwnedFd::from(r))).unwrap();
        let order = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let ex = crate::process::exec::Executor::new();
        block_on(ex.run(async {
            let o = order.clone();
            let reader = ex.spawn(async move {
                let mut buf = [0u8; 8];
                r.read(&mut buf).await.unwrap();
                o.borrow_mut().push("read");
            });
            // The reader waits on the empty pipe first.
            smol::future::yield_now().await;
            let o = order.clone();
            let turner = ex.spawn(async move {
                w.write_all(b"x").unwrap();
                turn().await;
                o.borrow_mut().push("turned");
            });
            reader.await;
            turner.await;
        }));
        assert_eq!(*order.borrow(), ["read", "turned"]);
    }
}
