//! mcpx-core: the sans-IO protocol core of mcpx.
//!
//! Bytes in, bytes and events out. No clock, socket, thread, allocator or global
//! RNG: time (`now_ms`) and randomness are passed in by the caller, and every
//! capacity is a const generic, a `heapless` type or caller-provided storage whose
//! overflow is a typed error, never a panic.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

pub mod cursor;
pub mod envelope;
pub mod error;
pub mod frame;
pub mod headers;
pub mod json;
pub mod meta;
pub mod method;
pub mod names;
pub mod request_state;
pub mod revision;
pub mod rewrite;
