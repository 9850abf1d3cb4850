//! The JSON span scanner: any input either fails with an offset inside the
//! buffer or yields a value whose spans, members and strings stay in bounds
//! and agree with `skip_value`; the top-level lookup made during the scan
//! (`parse_lookup`) agrees with one made afterwards, and so do the members
//! of members handed out during the scan (`parse_members`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx_core::json::{self, JsonValue, Kind};

fn walk(v: JsonValue<'_>, depth: usize) {
    let bytes = v.bytes();
    assert!(!bytes.is_empty());
    let span = v.span();
    assert_eq!(span.slice(v.buf()), bytes);
    match v.kind() {
        Kind::Object => {
            for m in v.members() {
                let _ = m.key.decoded().count();
                walk(m.value, depth + 1);
            }
        }
        Kind::Array => v.elements().for_each(|e| walk(e, depth + 1)),
        Kind::String => {
            let s = v.as_str().expect("a string value has a string");
            let mut out = vec![0u8; s.decoded_len()];
            let text = s.unescape_into(&mut out).expect("decoded_len is enough");
            assert_eq!(text.len(), s.decoded_len());
            assert!(s.eq_str(text));
        }
        Kind::Number => {
            let _ = v.as_i64();
            let _ = v.is_integer();
        }
        Kind::Bool | Kind::Null => {}
    }
    assert!(depth <= json::MAX_DEPTH);
}

fuzz_target!(|data: &[u8]| {
    match json::parse(data) {
        Ok(v) => {
            let again = json::skip_value(data, v.span().start).expect("a parsed value skips");
            assert_eq!(again.span(), v.span());
            // The lookup made during the scan is the one made by walking after it.
            let keys = ["a", "id", "", "\u{e9}"];
            let (scanned, found) = json::parse_lookup(data, keys).expect("a parsed value parses");
            assert_eq!(scanned, v);
            assert_eq!(found, v.lookup(keys));
            // So are the members of members handed out during the scan.
            let key = |k: json::JsonStr<'_>| k.decoded().collect::<Vec<u8>>();
            let mut seen = Vec::new();
            json::parse_members(data, &mut |parent, m| seen.push((parent.map(key), m.key_span, m.value))).expect("a parsed value parses");
            let mut walked = Vec::new();
            for m in v.members() {
                if m.value.kind() == json::Kind::Object {
                    walked.extend(m.value.members().map(|inner| (Some(key(m.key)), inner.key_span, inner.value)));
                }
                walked.push((None, m.key_span, m.value));
            }
            assert_eq!(seen, walked);
            walk(v, 0);
        }
        Err(e) => assert!(e.offset <= data.len(), "{e:?} past {}", data.len()),
    }
});
