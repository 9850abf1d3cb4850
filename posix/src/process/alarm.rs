//! An alarm clock one task sleeps on and any task may set: the hub's next
//! deadline, the orphan sweep. On Linux it is a timerfd the thread's
//! [`reactor`](super::reactor) polls, so setting it is one syscall and
//! async-io's timer table stays empty (async-io allocates on every poll
//! while that table holds a timer, which put four allocations on every
//! forwarded call); elsewhere an async-io `Timer` that a setter wakes to be
//! set again.

pub use imp::Alarm;

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::io::AsRawFd;
    use std::time::Instant;

    use crate::process::reactor::Source;

    pub struct Alarm {
        fd: Source<OwnedFd>,
    }

    impl Alarm {
        pub fn new() -> io::Result<Alarm> {
            // SAFETY: timerfd_create takes plain integers; the descriptor it
            // returns is new and owned here.
            let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `fd` is a descriptor this process just opened.
            Ok(Alarm { fd: Source::new(unsafe { OwnedFd::from_raw_fd(fd) })? })
        }

        /// Rings at `at` (at once when it is past), instead of when it was
        /// set to; `None`: never.
        pub fn set(&self, at: Option<Instant>) {
            let left = at.map(|at| at.saturating_duration_since(Instant::now()));
            // A zero it_value disarms: a time already past rings in 1 ns.
            let value = left.map_or(libc::timespec { tv_sec: 0, tv_nsec: 0 }, |d| libc::timespec {
                // Up to 68 years, which any time_t holds.
                tv_sec: d.as_secs().min(i32::MAX as u64) as _,
                // Under 10^9, which a 32-bit c_long (armv7) holds.
                tv_nsec: d.subsec_nanos().max(u32::from(d.is_zero())) as _,
            });
            let spec = libc::itimerspec { it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 }, it_value: value };
            // SAFETY: `spec` is a valid itimerspec; the descriptor is ours.
            unsafe { libc::timerfd_settime(self.fd.get_ref().as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        }

        /// Waits until it rings.
        pub async fn rung(&self) {
            let mut expirations = [0u8; 8];
            // SAFETY: reads at most 8 bytes into `expirations`.
            let read = |fd: &OwnedFd| match unsafe { libc::read(fd.as_raw_fd(), expirations.as_mut_ptr().cast(), 8) } {
                8 => Ok(()),
                _ => Err(io::Error::last_os_error()),
            };
            // `read_with` waits out WouldBlock; a timerfd read fails
            // otherwise only for a short buffer, which this is not.
            let _ = self.fd.read_with(read).await;
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::cell::Cell;
    use std::io;
    use std::time::Instant;

    use async_io::Timer;
    use smol::channel::{self, Receiver, Sender};
    use smol::future::FutureExt as _;

    pub struct Alarm {
        at: Cell<Option<Instant>>,
        moved: (Sender<()>, Receiver<()>),
    }

    impl Alarm {
        pub fn new() -> io::Result<Alarm> {
            Ok(Alarm { at: Cell::new(None), moved: channel::bounded(1) })
        }

        /// Rings at `at` (at once when it is past), instead of when it was
        /// set to; `None`: never.
        pub fn set(&self, at: Option<Instant>) {
            self.at.set(at);
            let _ = self.moved.0.try_send(());
        }

        /// Waits until it rings.
        pub async fn rung(&self) {
            loop {
                while self.moved.1.try_recv().is_ok() {}
                let at = self.at.get();
                let fire = async {
                    match at {
                        Some(at) => Timer::at(at).await,
                        None => smol::future::pending().await,
                    };
                    true
                };
                let moved = async {
                    let _ = self.moved.1.recv().await;
                    false
                };
                if fire.or(moved).await {
                    self.at.set(None);
                    return;
                }
            }
        }
    }
}
