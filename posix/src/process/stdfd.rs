//! Async handles on the process's own stdin and stdout, for `mcpx serve`
//! and the example server.
//!
//! Pipes and stream sockets are switched to `O_NONBLOCK` and polled by the
//! thread's [`reactor`](super::reactor): no helper thread, no context
//! switch per message.
//! Anything else (files, terminals) goes through a blocking helper thread
//! (`smol::Unblock`), as does a pipe or socket that is also stderr: log
//! lines are written with plain blocking writes and must not meet `EAGAIN`.
//!
//! `O_NONBLOCK` is a flag of the open file description, which the parent
//! (and any other process holding the same pipe or socket) shares. The
//! flags found at start are put back when the [`Restore`] guard is dropped,
//! so keep it alive until the handles are no longer used, and drop it before
//! the process exits. (A process that exits without dropping it, e.g. on a
//! crash, leaves the description non-blocking; for a pipe or socket only its
//! other holders of this same end would notice.)

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};

use smol::io::{AsyncRead, AsyncWrite};

use super::reactor::Source;

pub type Input = Box<dyn AsyncRead + Unpin>;
pub type Output = Box<dyn AsyncWrite + Unpin>;

/// Puts back the file status flags of the descriptors made non-blocking.
#[must_use = "dropping it restores blocking mode at once"]
pub struct Restore(Vec<(RawFd, libc::c_int)>);

impl Drop for Restore {
    fn drop(&mut self) {
        for (fd, flags) in self.0.drain(..) {
            // SAFETY: F_SETFL on stdin/stdout, which stay open for the
            // process's lifetime; a failure leaves the flags as they are.
            unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
        }
    }
}

/// The handles, and the guard that restores their flags.
pub struct Stdio {
    pub input: Input,
    pub output: Output,
    pub restore: Restore,
}

/// stdin and stdout as async handles; `cap` sizes the helper thread's
/// buffers (and the write buffer, with `buffer_output`, when polled).
pub fn stdio(cap: usize, buffer_output: bool) -> Stdio {
    let mut restore = Restore(Vec::new());
    let input: Input = match pollable(std::io::stdin().as_fd(), &mut restore).map(Source::new) {
        Some(Ok(r)) => Box::new(r),
        _ => Box::new(smol::Unblock::with_capacity(cap, std::io::stdin())),
    };
    let output: Output = match pollable(std::io::stdout().as_fd(), &mut restore).map(Source::new) {
        Some(Ok(a)) if buffer_output => Box::new(smol::io::BufWriter::with_capacity(cap, a)),
        Some(Ok(a)) => Box::new(a),
        _ => Box::new(smol::Unblock::with_capacity(cap, std::io::stdout())),
    };
    Stdio { input, output, restore }
}

fn stream_socket(fd: BorrowedFd<'_>) -> bool {
    let mut kind: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: SO_TYPE writes one c_int into `kind`, whose size `len` gives.
    let r = unsafe { libc::getsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TYPE, (&mut kind as *mut libc::c_int).cast(), &mut len) };
    r == 0 && kind == libc::SOCK_STREAM
}

fn meta(fd: BorrowedFd<'_>) -> Option<std::fs::Metadata> {
    File::from(fd.try_clone_to_owned().ok()?).metadata().ok()
}

/// A copy of `fd` for the reactor to poll, if it is a pipe or stream
/// socket that is not also stderr; its original flags go to `restore`.
fn pollable(fd: BorrowedFd<'_>, restore: &mut Restore) -> Option<File> {
    let m = meta(fd)?;
    let t = m.file_type();
    // A datagram socket may hold more after a short read, which the
    // reactor takes for drained.
    if !(t.is_fifo() || t.is_socket() && stream_socket(fd)) {
        return None;
    }
    if meta(std::io::stderr().as_fd()).is_some_and(|e| (e.dev(), e.ino()) == (m.dev(), m.ino())) {
        return None;
    }
    let raw = fd.as_raw_fd();
    // SAFETY: F_GETFL on a descriptor borrowed for this call.
    let flags = unsafe { libc::fcntl(raw, libc::F_GETFL) };
    if flags < 0 {
        return None;
    }
    let file = File::from(fd.try_clone_to_owned().ok()?);
    restore.0.push((raw, flags));
    // A large message passes in one read or write, as on a server's pipes
    // (the pipe's size is not put back: more room changes nothing for
    // its other holders).
    #[cfg(target_os = "linux")]
    if t.is_fifo() {
        super::pipe_size::widen(&file);
    }
    Some(file)
}
