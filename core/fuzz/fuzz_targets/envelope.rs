//! The JSON-RPC envelope: any input is a message, a batch or an error whose
//! error response is valid JSON; every accessor of a message stays inside it;
//! a message parsed from bytes and one read from a scanned value agree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx_core::envelope::{Envelope, Kind, Message};
use mcpx_core::json;

fn check(env: &Envelope<'_>) {
    let msg = env.bytes();
    let within = |v: Option<json::JsonValue<'_>>| {
        if let Some(v) = v {
            let s = v.span();
            assert!(s.start >= env.span().start && s.end <= env.span().end);
        }
    };
    within(env.id());
    within(env.params());
    within(env.result());
    within(env.error());
    within(env.meta());
    within(env.name());
    within(env.cursor());
    within(env.uri());
    within(env.progress_token());
    match env.kind() {
        Kind::Request => assert!(env.id().is_some() && env.method().is_some()),
        Kind::Notification => assert!(env.id().is_none() && env.method().is_some()),
        Kind::Result => assert!(env.result().is_some()),
        Kind::Error => assert!(env.error().is_some()),
    }
    if let Some(m) = env.method_str() {
        assert!(env.method_is(m));
    }
    assert!(!msg.is_empty());
}

fuzz_target!(|data: &[u8]| {
    // The members read during the scan are those a walk after it reads.
    if let Ok(v) = json::parse(data) {
        assert_eq!(Envelope::parse(data), Envelope::from_value(v));
    }
    match Message::parse(data) {
        Ok(Message::Single(env)) => check(&env),
        Ok(Message::Batch(batch)) => {
            assert!(!batch.is_empty());
            for item in batch.elements() {
                match item {
                    Ok(env) => check(&env),
                    Err(e) => {
                        let _ = e.code();
                    }
                }
            }
        }
        Err(e) => {
            let mut out = vec![0u8; 256 + data.len()];
            let n = e.write_response(&mut out).expect("room for the id and message");
            json::parse(&out[..n]).expect("the error response is JSON");
            assert!(Envelope::parse(&out[..n]).is_ok(), "the error response is a message");
        }
    }
});
