//! Header codec of the 2026-07-28 Streamable HTTP transport.

use mcpx_core::headers::*;
use proptest::prelude::*;

fn enc(v: &str) -> String {
    let mut out = vec![0u8; encoded_len(v)];
    encode_value(v, &mut out).unwrap().to_owned()
}

fn dec(raw: &str) -> Result<String, ValueError> {
    let v = HeaderValue::parse(raw.as_bytes())?;
    let mut out = vec![0u8; v.decoded_len()];
    v.decode(&mut out).map(str::to_owned)
}

/// RFC 9110 field-value with the spec's byte set: VCHAR / SP / HTAB, no
/// leading or trailing whitespace.
fn is_field_value(v: &str) -> bool {
    let b = v.as_bytes();
    b.iter().all(|&c| (0x21..=0x7e).contains(&c) || c == b' ' || c == b'\t')
        && !matches!(b.first(), Some(b' ' | b'\t'))
        && !matches!(b.last(), Some(b' ' | b'\t'))
}

// The spec's encoding table, verbatim.
// row: streamable-http-param-value-encoding
#[test]
fn spec_encoding_examples() {
    for (original, encoded) in [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ] {
        assert_eq!(enc(original), encoded, "{original:?}");
        assert_eq!(dec(encoded).unwrap(), original);
    }
}

// The spec's Mcp-Name examples stay plain.
// row: streamable-http-mcp-name-base64
#[test]
fn spec_name_examples_are_plain() {
    for name in ["get_weather", "file:///projects/myapp/config.json", "execute_sql"] {
        assert!(!needs_sentinel(name));
        assert_eq!(enc(name), name);
    }
}

// row: streamable-http-param-value-encoding
#[test]
fn when_the_sentinel_is_used() {
    assert!(!needs_sentinel(""));
    assert!(!needs_sentinel("a b"));
    assert!(!needs_sentinel("~!@#$%^&*()"));
    assert!(needs_sentinel(" a"));
    assert!(needs_sentinel("a "));
    assert!(needs_sentinel("a\tb"), "HTAB is a control character");
    assert!(needs_sentinel("\u{7f}"));
    assert!(needs_sentinel("é"));
    assert!(needs_sentinel("=?base64??="));
    assert!(needs_sentinel("=?base64?="), "overlapping markers still look like a sentinel");
    assert!(!needs_sentinel("=?BASE64?x?="), "markers are case-sensitive");
    assert!(!needs_sentinel("=?base64?x"));
    assert_eq!(enc(""), "");
}

#[test]
fn encode_overflow_is_typed() {
    let mut small = [0u8; 4];
    assert_eq!(encode_value("us-west1", &mut small), Err(Overflow { needed: 8 }));
    assert_eq!(encode_value("é", &mut small), Err(Overflow { needed: 15 }));
    let mut exact = [0u8; 15];
    assert_eq!(encode_value("é", &mut exact), Ok("=?base64?w6k=?="));
}

// Type conversion.
// covers: streamable-http-param-value-encoding, tools-x-mcp-header-int-safe-range
#[test]
fn params_render_per_type() {
    let mut out = [0u8; 64];
    assert_eq!(encode_param(ParamValue::Str("x y"), &mut out), Ok("x y"));
    assert_eq!(encode_param(ParamValue::Int(42), &mut out), Ok("42"));
    assert_eq!(encode_param(ParamValue::Int(-7), &mut out), Ok("-7"));
    assert_eq!(encode_param(ParamValue::Number("42.0"), &mut out), Ok("42"));
    assert_eq!(encode_param(ParamValue::Number("-4.2e1"), &mut out), Ok("-42"));
    assert_eq!(encode_param(ParamValue::Bool(true), &mut out), Ok("true"));
    assert_eq!(encode_param(ParamValue::Bool(false), &mut out), Ok("false"));
    assert_eq!(encode_param(ParamValue::Int(MAX_SAFE_INTEGER), &mut out), Ok("9007199254740991"));
    assert_eq!(encode_param(ParamValue::Int(-MAX_SAFE_INTEGER), &mut out), Ok("-9007199254740991"));
    assert_eq!(encode_param(ParamValue::Int(MAX_SAFE_INTEGER + 1), &mut out), Err(EncodeError::NotSafeInteger));
    assert_eq!(encode_param(ParamValue::Int(i64::MIN), &mut out), Err(EncodeError::NotSafeInteger));
    assert_eq!(encode_param(ParamValue::Number("1.5"), &mut out), Err(EncodeError::NotSafeInteger));
    assert_eq!(
        encode_param(ParamValue::Int(42), &mut [0u8; 1]),
        Err(EncodeError::Overflow(Overflow { needed: 2 }))
    );
}

// row: streamable-http-numeric-compare
#[test]
fn exact_integer_reading() {
    let p = |s: &str| parse_safe_integer(s.bytes());
    for (text, want) in [
        ("42", 42),
        ("042", 42),
        ("42.0", 42),
        ("42.000000000000000000000000000000", 42),
        ("4.2e1", 42),
        ("4.2E+1", 42),
        ("420e-1", 42),
        ("0.042e3", 42),
        ("-0", 0),
        ("0e999999999999999999999", 0),
        ("-7", -7),
        ("9007199254740991", MAX_SAFE_INTEGER),
        ("-9007199254740991", -MAX_SAFE_INTEGER),
        ("9.007199254740991e15", MAX_SAFE_INTEGER),
        ("100000000000000", 100_000_000_000_000),
    ] {
        assert_eq!(p(text), Some(want), "{text}");
    }
    for text in [
        "", "-", "+42", "42.", ".5", "4 2", " 42", "42 ", "1e", "1e+", "0x2a", "42.5", "1e-1",
        "9007199254740992", "-9007199254740992", "1e16", "1e999999999999999999999", "NaN",
        "1000000000000000000000000000000000000001",
    ] {
        assert_eq!(p(text), None, "{text:?}");
    }
}

#[test]
fn decoding_rejects_bad_values() {
    assert_eq!(dec("=?base64?SGVsbG8?="), Err(ValueError::InvalidBase64), "padding required");
    assert_eq!(dec("=?base64?SGVsbG9=?="), Err(ValueError::InvalidBase64), "non-canonical bits");
    assert_eq!(dec("=?base64?SG==bG8s?="), Err(ValueError::InvalidBase64), "padding mid-value");
    assert_eq!(dec("=?base64?SGVs*G8s?="), Err(ValueError::InvalidBase64));
    assert_eq!(dec("=?base64?SGVs-G8s?="), Err(ValueError::InvalidBase64), "url-safe alphabet");
    assert_eq!(dec("=?base64?="), Err(ValueError::InvalidBase64));
    assert_eq!(dec("=?base64?/w==?="), Err(ValueError::InvalidUtf8));
    assert_eq!(dec("a\rb"), Err(ValueError::InvalidCharacter));
    assert_eq!(dec("a\0b"), Err(ValueError::InvalidCharacter));
    assert!(HeaderValue::parse(b"caf\xc3\xa9").is_err(), "obs-text is not accepted plain");
    assert_eq!(dec("=?base64??=").unwrap(), "");
    assert_eq!(dec("  plain\t ").unwrap(), "plain", "OWS is not part of the value");
    assert_eq!(dec("a\tb").unwrap(), "a\tb");
    let v = HeaderValue::parse(b"=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap();
    assert!(v.is_encoded());
    assert_eq!(v.decode(&mut [0u8; 4]), Err(ValueError::Overflow(Overflow { needed: 13 })));
    let plain = HeaderValue::parse_plain(b"=?base64?SGk=?=").unwrap();
    assert!(!plain.is_encoded(), "Mcp-Method never decodes");
}

// covers: streamable-http-header-names-case-insensitive
#[test]
fn param_header_names() {
    let mut out = [0u8; 32];
    assert_eq!(param_header_name("Region", &mut out), Ok("Mcp-Param-Region"));
    assert_eq!(param_header_name("Region", &mut [0u8; 3]), Err(Overflow { needed: 16 }));
    assert_eq!(param_header_suffix(b"mcp-param-region"), Some(&b"region"[..]));
    assert_eq!(param_header_suffix(b"MCP-PARAM-Region"), Some(&b"Region"[..]));
    assert_eq!(param_header_suffix(b"Mcp-Param-"), None);
    assert_eq!(param_header_suffix(b"Mcp-Name"), None);
    assert_eq!(name_source("tools/call"), Some(NameSource::Name));
    assert_eq!(name_source("prompts/get"), Some(NameSource::Name));
    assert_eq!(name_source("resources/read"), Some(NameSource::Uri));
    assert_eq!(name_source("tools/list"), None);
}

fn kind(r: Result<(), HeaderMismatch<'_>>) -> Option<MismatchKind> {
    r.err().map(|e| e.kind)
}

// The scenario table.
// covers: streamable-http-server-validates-param-headers, streamable-http-server-rejects-header-body-mismatch
#[test]
fn missing_and_unexpected_headers() {
    let f = HeaderField::Param("Region");
    let v = Some(ParamValue::Str("us-west1"));
    assert_eq!(check(f, Some(b"us-west1"), v), Ok(()));
    assert_eq!(check(f, None, None), Ok(()), "null/absent value: header not expected");
    assert_eq!(kind(check(f, None, v)), Some(MismatchKind::Missing));
    assert_eq!(kind(check(f, Some(b"us-west1"), None)), Some(MismatchKind::Unexpected));
    // A missing standard header.
    let e = check(HeaderField::Method, None, Some(ParamValue::Str("tools/call"))).unwrap_err();
    assert_eq!(e.kind, MismatchKind::Missing);
    assert_eq!(e.to_string(), "Header mismatch: required Mcp-Method header is missing");
}

// rows: streamable-http-server-decodes-before-compare, streamable-http-header-mismatch-400-jsonrpc
#[test]
fn values_are_decoded_then_compared() {
    let name = HeaderField::Name;
    assert_eq!(check(name, Some(b"=?base64?SGVsbG8sIOS4lueVjA==?="), Some(ParamValue::Str("Hello, 世界"))), Ok(()));
    assert_eq!(check(name, Some(b"=?base64?Z2V0X3dlYXRoZXI=?="), Some(ParamValue::Str("get_weather"))), Ok(()));
    let e = check(name, Some(b"foo"), Some(ParamValue::Str("bar"))).unwrap_err();
    assert_eq!(e.kind, MismatchKind::Differs);
    assert_eq!((HeaderMismatch::CODE, HeaderMismatch::HTTP_STATUS, mcpx_core::error::ErrorCode::HeaderMismatch.code()), (-32020, 400, -32020));
    assert_eq!(e.to_string(), "Header mismatch: Mcp-Name header value does not match the body value");
    // Header values are case-sensitive.
    assert_eq!(kind(check(name, Some(b"Get_weather"), Some(ParamValue::Str("get_weather")))), Some(MismatchKind::Differs));
    // Mcp-Method and MCP-Protocol-Version are never decoded.
    let b64_method = b"=?base64?dG9vbHMvY2FsbA==?=";
    assert_eq!(
        kind(check(HeaderField::Method, Some(b64_method), Some(ParamValue::Str("tools/call")))),
        Some(MismatchKind::Differs)
    );
    assert_eq!(
        check(HeaderField::ProtocolVersion, Some(b"2026-07-28"), Some(ParamValue::Str("2026-07-28"))),
        Ok(())
    );
    // A header with invalid characters is rejected.
    let e = check(HeaderField::Param("Text"), Some(b"a\nb"), Some(ParamValue::Str("a\nb"))).unwrap_err();
    assert_eq!(e.kind, MismatchKind::Malformed(ValueError::InvalidCharacter));
    assert_eq!(e.to_string(), "Header mismatch: Mcp-Param-Text header value contains invalid characters");
    assert_eq!(
        kind(check(name, Some(b"=?base64?!!!!?="), Some(ParamValue::Str("x")))),
        Some(MismatchKind::Malformed(ValueError::InvalidBase64))
    );
}

// row: streamable-http-numeric-compare
#[test]
fn integers_compare_numerically() {
    let f = HeaderField::Param("Limit");
    for header in ["42", "042", "42.0", "4.2e1", "=?base64?NDI=?="] {
        assert_eq!(check(f, Some(header.as_bytes()), Some(ParamValue::Int(42))), Ok(()), "{header}");
        assert_eq!(check(f, Some(header.as_bytes()), Some(ParamValue::Number("42.0"))), Ok(()), "{header}");
    }
    for header in ["43", "42.5", "forty-two", "", "+42"] {
        assert_eq!(kind(check(f, Some(header.as_bytes()), Some(ParamValue::Int(42)))), Some(MismatchKind::Differs));
    }
    assert_eq!(
        kind(check(f, Some(b"9007199254740992"), Some(ParamValue::Number("9007199254740992")))),
        Some(MismatchKind::NotSafeInteger)
    );
    // A string parameter is compared as a string.
    assert_eq!(kind(check(f, Some(b"042"), Some(ParamValue::Str("42")))), Some(MismatchKind::Differs));
}

#[test]
fn booleans_compare_as_lowercase_literals() {
    let f = HeaderField::Param("Dry");
    assert_eq!(check(f, Some(b"true"), Some(ParamValue::Bool(true))), Ok(()));
    assert_eq!(check(f, Some(b"false"), Some(ParamValue::Bool(false))), Ok(()));
    assert_eq!(kind(check(f, Some(b"True"), Some(ParamValue::Bool(true)))), Some(MismatchKind::Differs));
    assert_eq!(kind(check(f, Some(b"1"), Some(ParamValue::Bool(true)))), Some(MismatchKind::Differs));
}

fn rule(schema: &str) -> Option<Rule> {
    match validate_input_schema(schema.as_bytes()) {
        Err(SchemaError::Violation { rule, .. }) => Some(rule),
        Err(other) => panic!("{schema}: {other}"),
        Ok(_) => None,
    }
}

fn prop(extra: &str) -> String {
    format!(r#"{{"type":"object","properties":{{"p":{{{extra}}}}}}}"#)
}

// rows: tools-x-mcp-header-may, streamable-http-x-mcp-header-server-may — the spec's example.
#[test]
fn spec_schema_example_is_valid() {
    let schema = r#"{
      "type": "object",
      "properties": {
        "region": {
          "type": "string",
          "description": "The region to execute the query in",
          "x-mcp-header": "Region"
        },
        "query": {
          "type": "string",
          "description": "The SQL query to execute"
        }
      },
      "required": ["region", "query"]
    }"#;
    assert_eq!(validate_input_schema(schema.as_bytes()), Ok(1));
    assert_eq!(validate_input_schema(br#"{"type":"object"}"#), Ok(0));
    assert_eq!(validate_input_schema(b"true"), Ok(0));
}

// row: tools-x-mcp-header-not-empty
#[test]
fn annotation_must_be_a_non_empty_string() {
    assert_eq!(rule(&prop(r#""type":"string","x-mcp-header":"""#)), Some(Rule::Empty));
    assert_eq!(rule(&prop(r#""type":"string","x-mcp-header":7"#)), Some(Rule::NotAString));
    assert_eq!(rule(&prop(r#""type":"string","x-mcp-header":null"#)), Some(Rule::NotAString));
}

// rows: tools-x-mcp-header-tchar, tools-x-mcp-header-no-ctl
#[test]
fn annotation_must_be_a_token() {
    for ok in ["Region", "a1!#$%&'*+-.^_`|~", "X", r"Re\u0067ion"] {
        assert_eq!(rule(&prop(&format!(r#""type":"string","x-mcp-header":"{ok}""#))), None, "{ok}");
    }
    for bad in ["Re gion", "a:b", "a/b", "ä", "a\"b", "(x)", "a,b", "a@b", r"a\/b"] {
        let bad = bad.replace('"', "\\\"");
        assert_eq!(rule(&prop(&format!(r#""type":"string","x-mcp-header":"{bad}""#))), Some(Rule::NotToken), "{bad}");
    }
    for ctl in [r"a\rb", r"a\nb", r"a\tb", r"a\u0000", "a\u{7f}"] {
        assert_eq!(rule(&prop(&format!(r#""type":"string","x-mcp-header":"{ctl}""#))), Some(Rule::ControlCharacter), "{ctl}");
    }
}

// row: tools-x-mcp-header-unique-ci
#[test]
fn annotations_are_unique_case_insensitively() {
    let s = r#"{"properties":{
        "a":{"type":"string","x-mcp-header":"Region"},
        "b":{"type":"object","properties":{"c":{"type":"string","x-mcp-header":"rEGION"}}}}}"#;
    assert_eq!(rule(s), Some(Rule::Duplicate));
    let escaped = r#"{"properties":{
        "a":{"type":"string","x-mcp-header":"Region"},
        "b":{"type":"string","x-mcp-header":"\u0072egion"}}}"#;
    assert_eq!(rule(escaped), Some(Rule::Duplicate));
    let distinct = r#"{"properties":{
        "a":{"type":"string","x-mcp-header":"Region"},
        "b":{"type":"string","x-mcp-header":"Regions"}}}"#;
    assert_eq!(validate_input_schema(distinct.as_bytes()), Ok(2));
}

// row: tools-x-mcp-header-primitive-only
#[test]
fn annotation_only_on_primitive_types() {
    for ok in [r#""string""#, r#""integer""#, r#""boolean""#, r#"["string","null"]"#, r#"["integer","boolean"]"#] {
        assert_eq!(rule(&prop(&format!(r#""x-mcp-header":"H","type":{ok}"#))), None, "{ok}");
    }
    for bad in [r#""number""#, r#""object""#, r#""array""#, r#""null""#, r#"["null"]"#, r#"["string","number"]"#, "[]", "7", r#"[{"a":1}]"#] {
        assert_eq!(rule(&prop(&format!(r#""x-mcp-header":"H","type":{bad}"#))), Some(Rule::NotPrimitive), "{bad}");
    }
    assert_eq!(rule(&prop(r#""x-mcp-header":"H""#)), Some(Rule::NotPrimitive), "no type at all");
    assert_eq!(rule(&prop(r#""x-mcp-header":"H","type":"str\u0069ng""#)), None, "escaped type name");
}

// row: tools-x-mcp-header-statically-reachable
#[test]
fn annotation_only_on_statically_reachable_properties() {
    let nested = r#"{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":"integer","x-mcp-header":"Deep"}}}}}}}"#;
    assert_eq!(validate_input_schema(nested.as_bytes()), Ok(1));
    let p = r#"{"type":"string","x-mcp-header":"H"}"#;
    for bad in [
        r#"{"type":"string","x-mcp-header":"H"}"#.to_owned(),
        format!(r#"{{"type":"array","items":{p}}}"#),
        format!(r#"{{"type":"object","properties":{{"a":{{"type":"array","items":{p}}}}}}}"#),
        format!(r#"{{"oneOf":[{{"properties":{{"a":{p}}}}}]}}"#),
        format!(r#"{{"anyOf":[{{"properties":{{"a":{p}}}}}]}}"#),
        format!(r#"{{"allOf":[{{"properties":{{"a":{p}}}}}]}}"#),
        format!(r#"{{"not":{{"properties":{{"a":{p}}}}}}}"#),
        format!(r#"{{"if":{{"properties":{{"a":{p}}}}}}}"#),
        format!(r#"{{"then":{{"properties":{{"a":{p}}}}}}}"#),
        format!(r#"{{"$defs":{{"d":{{"properties":{{"a":{p}}}}}}}}}"#),
        format!(r#"{{"additionalProperties":{p}}}"#),
        format!(r#"{{"patternProperties":{{"^a":{p}}}}}"#),
        format!(r#"{{"properties":{{"a":{{"properties":{{"b":{{"items":{p}}}}}}}}}}}"#),
        format!(r#"{{"properties":{{"a":{{"type":"object","default":{p}}}}}}}"#),
    ] {
        assert_eq!(rule(&bad), Some(Rule::NotStaticallyReachable), "{bad}");
    }
    // A property *named* x-mcp-header is not an annotation.
    let named = r#"{"properties":{"x-mcp-header":{"type":"object","properties":{"x-mcp-header":{"type":"string"}}}}}"#;
    assert_eq!(validate_input_schema(named.as_bytes()), Ok(0));
    // An escaped keyword is still the keyword.
    let escaped = r#"{"properties":{"a":{"type":"string","x-mcp-h\u0065ader":"H"}}}"#;
    assert_eq!(validate_input_schema(escaped.as_bytes()), Ok(1));
    let escaped_items = r#"{"items":{"type":"string","x-mcp-h\u0065ader":"H"}}"#;
    assert_eq!(rule(escaped_items), Some(Rule::NotStaticallyReachable));
}

#[test]
fn schema_limits_and_malformed_input() {
    let deep = "[".repeat(MAX_SCHEMA_DEPTH + 1) + &"]".repeat(MAX_SCHEMA_DEPTH + 1);
    assert_eq!(validate_input_schema(deep.as_bytes()), Err(SchemaError::TooDeep));
    let ok_depth = "[".repeat(MAX_SCHEMA_DEPTH) + &"]".repeat(MAX_SCHEMA_DEPTH);
    assert_eq!(validate_input_schema(ok_depth.as_bytes()), Ok(0));
    let many: Vec<String> =
        (0..=MAX_ANNOTATIONS).map(|i| format!(r#""p{i}":{{"type":"string","x-mcp-header":"H{i}"}}"#)).collect();
    let schema = format!(r#"{{"properties":{{{}}}}}"#, many.join(","));
    assert_eq!(validate_input_schema(schema.as_bytes()), Err(SchemaError::TooManyAnnotations));
    for bad in ["", "{", r#"{"a"}"#, r#"{"a":}"#, r#"{"a":1,}"#, "[1 2]", r#""\x""#, "{} {}", "nope", "\"a\nb\""] {
        assert!(matches!(validate_input_schema(bad.as_bytes()), Err(SchemaError::Malformed { .. })), "{bad:?}");
    }
    let schema = prop(r#""type":"number","x-mcp-header":"H""#);
    let at = schema.find(r#""H""#).unwrap();
    let e = validate_input_schema(schema.as_bytes()).unwrap_err();
    assert_eq!(e, SchemaError::Violation { rule: Rule::NotPrimitive, at });
    assert_eq!(
        e.to_string(),
        format!("x-mcp-header is on a property whose type is not string, integer or boolean (at byte {at})")
    );
    assert_eq!(Rule::NotPrimitive.row(), "tools-x-mcp-header-primitive-only");
}

proptest! {
    // row: streamable-http-param-value-encoding
    #[test]
    fn round_trip(s in any::<String>()) {
        let e = enc(&s);
        prop_assert_eq!(e.len(), encoded_len(&s));
        prop_assert_eq!(dec(&e).unwrap(), s.clone());
        prop_assert_eq!(check(HeaderField::Param("P"), Some(e.as_bytes()), Some(ParamValue::Str(&s))), Ok(()));
    }

    #[test]
    fn round_trip_ascii_edges(s in "[ \t=?a-z0-9\\x00-\\x1f\\x7f]{0,24}") {
        let e = enc(&s);
        prop_assert_eq!(dec(&e).unwrap(), s);
    }

    #[test]
    fn encoded_values_are_field_values(s in any::<String>()) {
        let e = enc(&s);
        prop_assert!(is_field_value(&e), "{:?} -> {:?}", s, e);
        // Plain exactly when safe, and a plain value never reads as a sentinel.
        prop_assert_eq!(e == s, !needs_sentinel(&s));
        prop_assert_eq!(HeaderValue::parse(e.as_bytes()).unwrap().is_encoded(), needs_sentinel(&s));
    }

    #[test]
    fn integers_round_trip(i in -MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER) {
        let mut out = [0u8; 24];
        let e = encode_param(ParamValue::Int(i), &mut out).unwrap().to_owned();
        prop_assert_eq!(parse_safe_integer(e.bytes()), Some(i));
        prop_assert_eq!(check(HeaderField::Param("N"), Some(e.as_bytes()), Some(ParamValue::Int(i))), Ok(()));
        let float_form = format!("{i}.000");
        prop_assert_eq!(check(HeaderField::Param("N"), Some(e.as_bytes()), Some(ParamValue::Number(&float_form))), Ok(()));
    }

    #[test]
    fn no_panic_on_any_header(raw in proptest::collection::vec(any::<u8>(), 0..64), body in any::<String>()) {
        let _ = check(HeaderField::Name, Some(&raw), Some(ParamValue::Str(&body)));
        let _ = check(HeaderField::Param("N"), Some(&raw), Some(ParamValue::Number(&body)));
        let _ = parse_safe_integer(raw.iter().copied());
        if let Ok(v) = HeaderValue::parse(&raw) {
            let mut out = vec![0u8; v.decoded_len()];
            let _ = v.decode(&mut out);
            prop_assert_eq!(v.bytes().count(), v.decoded_len());
        }
    }

    #[test]
    fn no_panic_on_any_schema(raw in proptest::collection::vec(any::<u8>(), 0..128)) {
        let _ = validate_input_schema(&raw);
    }

    #[test]
    fn no_panic_on_schema_like_text(s in r#"[{}\[\]":,a-z\\ 0-9x-]{0,96}"#) {
        let _ = validate_input_schema(s.as_bytes());
        let with_keywords = s.replace('a', r#""x-mcp-header""#).replace('b', r#""properties""#);
        let _ = validate_input_schema(with_keywords.as_bytes());
    }
}
