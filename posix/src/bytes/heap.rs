//! Large buffers go back to the system when they are freed.
//!
//! glibc's malloc gives an allocation over its mmap threshold (128 KiB at
//! first) a mapping of its own, unmapped on free, but each such free raises
//! the threshold to that block's size (up to 32 MiB). After the first large
//! message, later ones of the same size come from the heap, whose freed
//! pages stay resident: after bursts of 10 MB requests mcpx's RSS stayed at
//! its peak with every socket closed. Setting the threshold fixes it (glibc
//! then stops moving it), so every buffer of [`LARGE`] or more is returned
//! when freed. musl (the edge build) unmaps large blocks on its own.

/// Smallest allocation that gets a mapping of its own: above the 64 KiB
/// line buffers and read chunks in steady use, below any large message.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const LARGE: usize = 256 << 10;

/// Sets the allocator up as above; call once, before other threads start.
pub fn give_large_buffers_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only tunes the allocator; its arguments are plain ints.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, LARGE as libc::c_int);
    }
}
