//! mcpx-core: the sans-IO protocol core of mcpx.
//!
//! Bytes in, bytes and events out. No clock, socket, thread, allocator or global
//! RNG: time (`now_ms`) and randomness are passed in by the caller, and every
//! capacity is a const generic, a `heapless` type or caller-provided storage whose
//! overflow is a typed error, never a panic.
//!
//! # Layers
//!
//! A module imports only modules below it. The message path, from the bottom:
//! [`json`] (the span scanner and [`json::Overflow`], every writer's error),
//! [`method`], [`revision`] (revisions, eras, the feature table; the era rule
//! reads a message through [`revision::EraSignals`]), [`error`] (the code
//! table), [`rewrite`] (writers and splicing), [`meta::keys`], [`envelope`]
//! (the checked view), then [`meta`] (a modern request's `_meta` checked).
//!
//! # Why no `serde-json-core`
//!
//! Core reads JSON with one tool, the span scanner in [`json`], and no typed
//! deserializer. The small fixed structures it reads (`initialize` params,
//! the 2026-07-28 `_meta` keys, a request's `name`/`uri`/`cursor`) sit inside
//! a message the envelope has already scanned once, so they are spans of that
//! view; a typed parse would scan the same bytes a second time. They must
//! also pass byte for byte: ids and numbers of any width (a 30-digit id is
//! valid JSON-RPC), escaped strings, and objects such as `capabilities` that
//! are forwarded unchanged, none of which a struct of `&str`, `i64` and `f64`
//! fields can hold. The other candidates hold no JSON at all: `requestState`
//! tokens ([`request_state`]) and list cursors ([`cursor`]) are base64 of a
//! binary layout, header values ([`headers`]) are HTTP field text, and the
//! `x-mcp-header` rule is a walk over a whole `inputSchema` document rather
//! than a fixed shape. A second JSON parser would only add code to the edge
//! build and a second parser to fuzz.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

pub mod clipped;
pub mod cursor;
pub mod decimal;
pub mod envelope;
pub mod error;
pub mod frame;
pub mod headers;
pub mod io;
pub mod json;
pub mod meta;
pub mod method;
pub mod names;
pub mod request_state;
pub mod revision;
pub mod rewrite;
pub mod task;
pub mod trace_context;
