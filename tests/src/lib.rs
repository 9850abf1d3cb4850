//! End-to-end tests live in tests/tests/*.rs; this crate only hosts them.
