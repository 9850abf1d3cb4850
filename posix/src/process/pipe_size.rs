//! Room in a server's stdin and stdout pipes, and in mcpx's own when they
//! are pipes, for a large message whole.
//!
//! A pipe holds 64 KiB by default: a message a little larger (a 64 KiB
//! payload with its envelope) took two writes and two reads, with the
//! writer put to sleep and woken between them. At [`BYTES`] it passes in
//! one of each. Pages are committed only as bytes wait in the pipe; the
//! size counts towards the user's pipe limit (`fs.pipe-user-pages-soft`),
//! at which the kernel refuses it and the pipe keeps its default.

use std::os::fd::AsRawFd;

/// The capacity asked for.
const BYTES: libc::c_int = 128 << 10;

/// Asks for [`BYTES`] of room in `pipe` (either end); a refusal is harmless.
pub fn widen(pipe: &impl AsRawFd) {
    // SAFETY: F_SETPIPE_SZ on a descriptor borrowed for this call; on
    // failure the pipe is left as it was.
    unsafe { libc::fcntl(pipe.as_raw_fd(), libc::F_SETPIPE_SZ, BYTES) };
}
