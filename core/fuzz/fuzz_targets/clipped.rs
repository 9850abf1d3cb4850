//! Reading a clipped message's edges: any head and tail give an answer
//! without panicking, and a reply id or request id found is valid JSON
//! lying inside the bytes given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx_core::clipped::{classify, Clipped};
use mcpx_core::json;

fuzz_target!(|data: &[u8]| {
    // The first byte says where the head ends and the tail begins.
    let Some((cut, rest)) = data.split_first() else { return };
    let (head, tail) = rest.split_at(usize::from(*cut).min(rest.len()));
    let id = match classify(head, tail) {
        Clipped::Reply { id } | Clipped::Request { id: Some(id) } => id,
        _ => return,
    };
    assert!(json::parse(id).is_ok(), "{id:?}");
    let inside = |edge: &[u8]| edge.as_ptr_range().contains(&id.as_ptr());
    assert!(inside(head) || inside(tail));
});
