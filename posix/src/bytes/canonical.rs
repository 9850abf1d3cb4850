//! JSON in canonical form: object keys sorted at every level, no
//! whitespace. The same value written differently has the same bytes: what
//! digests are taken of (a `requestState`'s bound params, a pinned
//! definition, an approved call's arguments).

use serde_json::Value;

/// `v` in canonical form.
pub fn canonical(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write(v, &mut out);
    out
}

fn write(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(&serde_json::to_vec(k).unwrap_or_default());
                out.push(b':');
                write(&m[k], out);
            }
            out.push(b'}');
        }
        Value::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(x, out);
            }
            out.push(b']');
        }
        other => out.extend_from_slice(&serde_json::to_vec(other).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_at_every_level_and_nothing_else_changes() {
        assert_eq!(canonical(&json!({ "b": [1, { "z": 1, "a": 2 }], "a": "x" })), br#"{"a":"x","b":[1,{"a":2,"z":1}]}"#);
        let spaced: Value = serde_json::from_str(r#"{ "a" : [ 2 , 1 ] , "s" : "\u00e9" }"#).unwrap();
        assert_eq!(canonical(&spaced), "{\"a\":[2,1],\"s\":\"é\"}".as_bytes());
        assert_eq!(canonical(&Value::Null), b"null");
    }
}
