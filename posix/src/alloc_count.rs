//! A counting global allocator for bench builds (`--features count-alloc`):
//! counts allocations and bytes requested, and prints the totals to stderr
//! as `mcpx-alloc: allocs=N frees=N bytes=N` on SIGUSR2. Never in a
//! release build of mcpx: the bench builds it as its own binary.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static FREES: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

#[global_allocator]
static GLOBAL: Counting = Counting;

// SAFETY: forwards to the system allocator; only adds relaxed counters.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        // SAFETY: the caller's contract for `layout` is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        FREES.fetch_add(1, Relaxed);
        // SAFETY: `ptr` came from `System` through this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(new_size as u64, Relaxed);
        // SAFETY: as in `dealloc`; `new_size` is the caller's, unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// (allocations including reallocations, frees, bytes requested) so far.
pub fn counts() -> (u64, u64, u64) {
    (
        ALLOCS.load(Relaxed),
        FREES.load(Relaxed),
        BYTES.load(Relaxed),
    )
}

extern "C" fn on_signal(_sig: libc::c_int) {
    // Async-signal-safe: no allocation, no locks, one write(2).
    let mut line = [0u8; 128];
    let mut n = 0;
    let mut put = |s: &[u8]| {
        let end = (n + s.len()).min(line.len());
        line[n..end].copy_from_slice(&s[..end - n]);
        n = end;
    };
    let (a, f, b) = counts();
    let mut d = [0u8; 20];
    put(b"mcpx-alloc: allocs=");
    put(mcpx_core::decimal::u64(a, &mut d));
    put(b" frees=");
    put(mcpx_core::decimal::u64(f, &mut d));
    put(b" bytes=");
    put(mcpx_core::decimal::u64(b, &mut d));
    put(b"\n");
    // SAFETY: `line[..n]` is initialised and outlives the call; write(2)
    // only reads it.
    unsafe {
        libc::write(2, line.as_ptr().cast(), n);
    }
}

/// Installs the SIGUSR2 handler.
pub fn install() {
    let handler: extern "C" fn(libc::c_int) = on_signal;
    // SAFETY: `handler` is async-signal-safe (no allocation, no locks, one
    // write(2)) and lives for the whole program.
    unsafe {
        libc::signal(libc::SIGUSR2, handler as libc::sighandler_t);
    }
}
