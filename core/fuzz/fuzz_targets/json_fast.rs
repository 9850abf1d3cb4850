//! The fast JSON string scan against the byte-wise reference: on any input
//! both accept the same value or fail with the same error at the same offset.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx_core::json;

fuzz_target!(|data: &[u8]| {
    assert_eq!(json::parse(data), json::reference::parse(data));
});
