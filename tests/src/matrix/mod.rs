//! The conformance matrix tool's modules (used by `src/bin/conformance.rs`).

pub mod docs;
pub mod junit;
pub mod model;
pub mod reqs;
pub mod scan;
pub mod suite;
pub mod toml;
