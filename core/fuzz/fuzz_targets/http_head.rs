//! HTTP/1.1 request and response heads: never a panic, a head length inside
//! the input, and body framing decided for every head that parses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx_core::frame::http::{parse_request, parse_response, Status};

const MAX_HEAD: usize = 8 * 1024;

fuzz_target!(|data: &[u8]| {
    if let Ok(Status::Complete((head, len))) = parse_request::<16>(data, MAX_HEAD) {
        assert!(len <= data.len() && len <= MAX_HEAD);
        let _ = head.framing();
        let _ = head.keep_alive();
        for h in head.headers.iter() {
            assert_eq!(head.headers.get(h.name).is_some(), true);
        }
        let _ = head.headers.list_elements("accept").count();
        let _ = head.headers.has_token("connection", "close");
    }
    if let Ok(Status::Complete((head, len))) = parse_response::<16>(data, MAX_HEAD) {
        assert!(len <= data.len() && len <= MAX_HEAD);
        for method in ["GET", "HEAD", "POST"] {
            let _ = head.framing(method);
        }
        let _ = head.keep_alive();
    }
});
