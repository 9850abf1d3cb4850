//! Property tests of the JSON scanner, the envelope view and splicing,
//! checked against serde_json.

use mcpx_core::envelope::{Envelope, Kind, Message};
use mcpx_core::json::{self, JsonValue, Kind as JsonKind};
use mcpx_core::rewrite::{splice, spliced_len, Splice};
use proptest::prelude::*;
use serde_json::{json, Value};

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Serializes `v`; with `ascii`, every non-ASCII character becomes a `\u`
/// escape (surrogate pairs for astral characters), which is valid because
/// non-ASCII only occurs inside strings.
fn render(v: &Value, pretty: bool, ascii: bool) -> String {
    let s = if pretty {
        serde_json::to_string_pretty(v).unwrap()
    } else {
        serde_json::to_string(v).unwrap()
    };
    if !ascii {
        return s;
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

/// Checks that the scanner's view of `v` agrees with serde_json's `want`,
/// recursively, including decoded keys and strings.
fn same_tree(v: JsonValue<'_>, want: &Value) {
    let reparsed: Value = serde_json::from_slice(v.bytes()).unwrap();
    assert_eq!(&reparsed, want);
    match want {
        Value::Null => assert_eq!(v.kind(), JsonKind::Null),
        Value::Bool(_) => assert_eq!(v.kind(), JsonKind::Bool),
        Value::Number(n) => {
            assert_eq!(v.kind(), JsonKind::Number);
            assert_eq!(v.is_integer(), n.is_i64() || n.is_u64());
            assert_eq!(v.as_i64(), n.as_i64());
        }
        Value::String(s) => {
            let js = v.as_str().unwrap();
            assert!(js.eq_str(s));
            let mut buf = vec![0u8; s.len()];
            assert_eq!(js.unescape_into(&mut buf).unwrap(), s);
            assert_eq!(js.decoded_len(), s.len());
        }
        Value::Array(items) => {
            let els: Vec<_> = v.elements().collect();
            assert_eq!(els.len(), items.len());
            for (e, w) in els.into_iter().zip(items) {
                same_tree(e, w);
            }
        }
        Value::Object(map) => {
            let ms: Vec<_> = v.members().collect();
            assert_eq!(ms.len(), map.len());
            for (m, (k, w)) in ms.into_iter().zip(map) {
                assert!(m.key.eq_str(k));
                assert_eq!(m.key_span.slice(v.buf())[0], b'"');
                same_tree(m.value, w);
            }
        }
    }
}

fn serde_accepts(b: &[u8]) -> Option<bool> {
    match serde_json::from_slice::<Value>(b) {
        Ok(_) => Some(true),
        // serde_json refuses numbers beyond f64 range and nesting beyond 127;
        // both are valid JSON, so those cases carry no verdict.
        Err(e) if e.to_string().contains("out of range") || e.to_string().contains("recursion") => {
            None
        }
        Err(_) => Some(false),
    }
}

/// Exercises every accessor on whatever parses.
fn poke(b: &[u8]) {
    if let Ok(v) = json::parse(b) {
        for m in v.members() {
            let _ = m.key.decoded().count();
        }
        let _ = v.elements().count();
        if let Some(s) = v.as_str() {
            let _ = s.unescape_into(&mut [0u8; 16]);
        }
    }
    match Message::parse(b) {
        Ok(Message::Batch(batch)) => {
            for e in batch.elements().flatten() {
                let _ = (e.id(), e.method(), e.name(), e.progress_token());
            }
        }
        Ok(Message::Single(e)) => {
            let _ = (
                e.id(),
                e.method_is("x"),
                e.cursor(),
                e.uri(),
                e.error_code(),
            );
        }
        Err(e) => {
            let _ = (e.code(), e.message(), e.id_bytes());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_panics_on_bytes(b in prop::collection::vec(any::<u8>(), 0..256)) {
        poke(&b);
    }

    #[test]
    fn never_panics_on_jsonish(s in r#"[\[\]{}:,"\\ 0-9.eE+\-tfnrulasx\u{e9}]{0,64}"#) {
        poke(s.as_bytes());
        if let Some(ok) = serde_accepts(s.as_bytes()) {
            prop_assert_eq!(json::parse(s.as_bytes()).is_ok(), ok, "{}", s);
        }
    }

    #[test]
    fn agrees_with_serde_on_values(v in arb_json(), pretty in any::<bool>(), ascii in any::<bool>()) {
        let text = render(&v, pretty, ascii);
        let parsed = json::parse(text.as_bytes());
        prop_assert!(parsed.is_ok(), "{:?} on {}", parsed, text);
        let parsed = parsed.unwrap();
        prop_assert_eq!(parsed.span().len(), text.len());
        same_tree(parsed, &v);
    }

    #[test]
    fn agrees_with_serde_on_mutations(v in arb_json(), at in any::<prop::sample::Index>(), byte in any::<u8>(), delete in any::<bool>()) {
        let mut b = render(&v, false, false).into_bytes();
        let i = at.index(b.len());
        if delete { b.remove(i); } else { b[i] = byte; }
        poke(&b);
        if let Some(ok) = serde_accepts(&b) {
            prop_assert_eq!(json::parse(&b).is_ok(), ok, "{}", String::from_utf8_lossy(&b));
        }
    }

    #[test]
    fn splice_id_round_trip(
        old_id in prop_oneof![any::<i64>().prop_map(Value::from), any::<String>().prop_map(Value::from)],
        new_id in prop_oneof![any::<i64>().prop_map(Value::from), any::<String>().prop_map(Value::from)],
        params in arb_json(),
        method in any::<String>(),
    ) {
        let mut params = match params { Value::Object(m) => Value::Object(m), other => serde_json::json!({"v": other}) };
        params.as_object_mut().unwrap().remove("_meta");
        let msg = serde_json::json!({"jsonrpc": "2.0", "id": old_id, "method": method, "params": params});
        let src = render(&msg, false, false);
        let env = Envelope::parse(src.as_bytes()).unwrap();
        prop_assert_eq!(env.kind(), Kind::Request);
        let new_raw = serde_json::to_vec(&new_id).unwrap();
        let splices = [Splice::raw(env.id().unwrap().span(), &new_raw)];
        let n = spliced_len(src.as_bytes(), &splices).unwrap();
        let mut out = vec![0u8; n];
        prop_assert_eq!(splice(src.as_bytes(), &splices, &mut out), Ok(n));
        let back = Envelope::parse(&out).unwrap();
        prop_assert_eq!(back.id_bytes(), Some(&new_raw[..]));
        let mut want = msg.clone();
        want["id"] = new_id;
        prop_assert_eq!(serde_json::from_slice::<Value>(&out).unwrap(), want);
        // Everything outside the id is byte-identical.
        let span = env.id().unwrap().span();
        prop_assert_eq!(&out[..span.start], &src.as_bytes()[..span.start]);
        prop_assert_eq!(&out[span.start + new_raw.len()..], &src.as_bytes()[span.end..]);
    }
}

fn opt(values: Vec<Value>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![Just(None), prop::sample::select(values).prop_map(Some)]
}

/// Message-like objects: every combination of plausible and broken members.
fn arb_message() -> impl Strategy<Value = Value> {
    (
        opt(vec![json!("2.0"), json!("1.0"), json!(2.0)]),
        opt(vec![
            json!(null),
            json!(7),
            json!(-1),
            json!(u64::MAX),
            json!("s"),
            json!(1.5),
            json!(true),
            json!({}),
        ]),
        opt(vec![json!("tools/call"), json!(""), json!(5)]),
        opt(vec![
            json!({}),
            json!({"name": "x", "_meta": {"progressToken": 1}}),
            json!({"_meta": 3}),
            json!([1]),
        ]),
        opt(vec![json!({}), json!(3)]),
        opt(vec![
            json!({"code": -1, "message": "m"}),
            json!({"code": "x", "message": "m"}),
            json!({"code": 1}),
        ]),
    )
        .prop_map(|(jsonrpc, id, method, params, result, error)| {
            let mut m = serde_json::Map::new();
            for (k, v) in [
                ("jsonrpc", jsonrpc),
                ("id", id),
                ("method", method),
                ("params", params),
                ("result", result),
                ("error", error),
            ] {
                if let Some(v) = v {
                    m.insert(k.into(), v);
                }
            }
            Value::Object(m)
        })
}

fn is_id(v: &Value) -> bool {
    v.is_string() || v.is_i64() || v.is_u64()
}

/// The envelope rules, restated over serde_json's view.
fn expected_kind(m: &Value) -> Option<Kind> {
    let id = m.get("id");
    let object = |k: &str| m.get(k).is_none_or(Value::is_object);
    if m.get("jsonrpc") != Some(&json!("2.0")) || !object("params") || !object("result") {
        return None;
    }
    match (m.get("method"), m.get("result"), m.get("error")) {
        (Some(method), None, None) => {
            let meta_ok = m
                .get("params")
                .and_then(|p| p.get("_meta"))
                .is_none_or(Value::is_object);
            if !method.is_string() || !meta_ok {
                None
            } else if id.is_none() {
                Some(Kind::Notification)
            } else {
                id.filter(|i| is_id(i)).map(|_| Kind::Request)
            }
        }
        (None, Some(_), None) => id.filter(|i| is_id(i)).map(|_| Kind::Result),
        (None, None, Some(e)) => {
            let error_ok = e["code"].is_i64() && e["message"].is_string();
            let id_ok = id.is_none_or(|i| i.is_null() || is_id(i));
            (error_ok && id_ok).then_some(Kind::Error)
        }
        _ => None,
    }
}

proptest! {
    // covers: messages-error-response-same-id-unless-unreadable
    #[test]
    fn envelope_follows_the_rules(m in arb_message()) {
        let text = serde_json::to_vec(&m).unwrap();
        let got = Envelope::parse(&text);
        match (expected_kind(&m), got) {
            (Some(kind), Ok(env)) => {
                prop_assert_eq!(env.kind(), kind);
                let id = env.id_bytes().map(|b| serde_json::from_slice::<Value>(b).unwrap());
                prop_assert_eq!(id.as_ref(), m.get("id").filter(|i| !i.is_null()));
            }
            (None, Err(err)) => {
                prop_assert!(err.code() == -32600 || err.code() == -32602);
                let echoed = err.id_bytes().map(|b| serde_json::from_slice::<Value>(b).unwrap());
                prop_assert_eq!(echoed.as_ref(), m.get("id").filter(|i| is_id(i)));
            }
            (want, got) => prop_assert!(false, "{} expected {:?}, got {:?}", m, want, got),
        }
    }
}

proptest! {
    #[test]
    fn splice_never_panics(
        src in prop::collection::vec(any::<u8>(), 0..64),
        spans in prop::collection::vec((0usize..80, 0usize..80, prop::collection::vec(any::<u8>(), 0..8)), 0..5),
        cap in 0usize..160,
    ) {
        let splices: Vec<_> = spans.iter().map(|(a, b, bytes)| Splice::raw(mcpx_core::json::Span::new(*a, *b), bytes)).collect();
        let mut out = vec![0u8; cap];
        match (spliced_len(&src, &splices), splice(&src, &splices, &mut out)) {
            (Ok(n), Ok(m)) => prop_assert_eq!(n, m),
            (Ok(n), Err(e)) => prop_assert_eq!(e, mcpx_core::rewrite::SpliceError::Overflow(mcpx_core::json::Overflow { needed: n })),
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (Err(_), Ok(_)) => prop_assert!(false),
        }
    }
}

fn apply(src: &[u8], s: Splice<'_>) -> Value {
    let mut out = vec![0u8; spliced_len(src, &[s]).unwrap()];
    splice(src, &[s], &mut out).unwrap();
    serde_json::from_slice(&out).unwrap()
}

proptest! {
    #[test]
    fn member_edits_agree_with_serde(
        members in prop::collection::vec((any::<String>(), arb_json()), 0..6),
        pick in any::<prop::sample::Index>(),
        new_key in any::<String>(),
        value in arb_json(),
        pretty in any::<bool>(),
        ascii in any::<bool>(),
    ) {
        let map: serde_json::Map<String, Value> = members.into_iter().collect();
        let orig = Value::Object(map.clone());
        let text = render(&orig, pretty, ascii);
        let obj = json::parse(text.as_bytes()).unwrap();
        let raw = serde_json::to_vec(&value).unwrap();
        // Set (replace or insert) a key, existing or not.
        let key = if map.is_empty() { new_key.clone() } else { map.keys().nth(pick.index(map.len())).unwrap().clone() };
        for k in [&key, &new_key] {
            let mut want = map.clone();
            want.insert(k.clone(), value.clone());
            prop_assert_eq!(apply(text.as_bytes(), Splice::set_member(&obj, k, &raw)), Value::Object(want));
        }
        // Remove a key.
        let mut want = map.clone();
        match want.remove(&key) {
            Some(_) => prop_assert_eq!(apply(text.as_bytes(), Splice::remove_member(&obj, &key).unwrap()), Value::Object(want)),
            None => prop_assert!(Splice::remove_member(&obj, &key).is_none()),
        }
    }
}
