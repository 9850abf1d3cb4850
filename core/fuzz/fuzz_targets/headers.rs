//! The 2026 header codec: received values parse or fail cleanly, and any
//! text encoded by `encode_value` parses and decodes back to itself; the
//! number reader and the inputSchema walker never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx_core::headers::{
    encode_value, encoded_len, parse_safe_integer, validate_input_schema, HeaderValue, MAX_SAFE_INTEGER,
};

fuzz_target!(|data: &[u8]| {
    for parsed in [HeaderValue::parse(data), HeaderValue::parse_plain(data)] {
        if let Ok(v) = parsed {
            let mut out = vec![0u8; v.decoded_len()];
            if let Ok(text) = v.decode(&mut out) {
                assert_eq!(text.len(), v.decoded_len());
            }
            assert_eq!(v.bytes().count(), v.decoded_len());
        }
    }
    if let Some(i) = parse_safe_integer(data.iter().copied()) {
        assert!(i.abs() <= MAX_SAFE_INTEGER);
    }
    let _ = validate_input_schema(data);

    if let Ok(text) = core::str::from_utf8(data) {
        let mut out = vec![0u8; encoded_len(text)];
        let encoded = encode_value(text, &mut out).expect("encoded_len is enough");
        let v = HeaderValue::parse(encoded.as_bytes()).expect("an encoded value parses");
        let mut back = vec![0u8; v.decoded_len()];
        assert_eq!(v.decode(&mut back).expect("decodes"), text);
    }
});
