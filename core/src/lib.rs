//! mcpx-core: the sans-IO protocol core of mcpx.
//!
//! Bytes in, bytes and events out. No clock, socket, thread, allocator or global
//! RNG: time (`now_ms`) and randomness are passed in by the caller, and every
//! capacity is a const generic or a `heapless` type whose overflow is a typed
//! error, never a panic.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

pub mod frame;
