//! requestState tokens: opening any string fails cleanly (never a panic,
//! never accepted without the key), and a sealed token opens exactly once,
//! for its binding only.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx_core::request_state::{sealed_len, Binding, Key, Keys, OpenError, ReplaySet};

const NOW: u64 = 1_000_000;

fuzz_target!(|data: &[u8]| {
    let keys = Keys::new(Key::new(1, [7; 32]), Some(Key::new(2, [9; 32]))).expect("distinct ids");
    let binding = Binding { principal: b"p", method: "tools/call", params: b"{}" };
    let mut replay = ReplaySet::<4>::new();
    let mut scratch = vec![0u8; sealed_len(255, 65535)];
    if let Ok(token) = core::str::from_utf8(data) {
        match keys.open(token, &binding, NOW, &mut replay, &mut scratch) {
            // Only a forged MAC could get here.
            Ok(opened) => panic!("opened an unsealed token: {opened:?}"),
            Err(OpenError::Overflow { .. }) => panic!("scratch of sealed_len must suffice"),
            Err(_) => {}
        }
    }

    // Seal the input as inner state, bound to a method cut from its head.
    let split = data.first().map_or(0, |&b| usize::from(b) % 8).min(data.len());
    let (method, inner) = data.split_at(split);
    let Ok(method) = core::str::from_utf8(method) else { return };
    let bound = Binding { principal: b"p", method, params: inner };
    let mut out = vec![0u8; sealed_len(method.len(), inner.len())];
    let token = match keys.seal(&bound, inner, &[3; 16], NOW, 1000, &mut out) {
        Ok(t) => t.to_string(),
        Err(_) => return,
    };
    let other = Binding { principal: b"q", ..bound };
    assert!(keys.open(&token, &other, NOW, &mut replay, &mut scratch).is_err());
    assert!(keys.open(&token, &bound, NOW + 1000, &mut replay, &mut scratch).is_err());
    let opened = keys.open(&token, &bound, NOW, &mut replay, &mut scratch).expect("opens");
    assert_eq!(opened.inner, inner);
    assert_eq!(opened.key_id, 1);
    assert_eq!(
        keys.open(&token, &bound, NOW, &mut replay, &mut scratch),
        Err(OpenError::Replayed)
    );
});
