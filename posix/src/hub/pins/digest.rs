//! The digest of a definition: SHA-256 over the canonical JSON (keys
//! sorted, no spaces) of the members of an item that reach the model.
//! Anything else a server lists (icons, a resource's size) may change
//! without a change of the pin.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::bytes::canonical::canonical;
use crate::bytes::hex::hex;

use super::super::catalog::Kind;

/// The members of a `k` item that reach the model (and `_meta`, which may
/// change how a client uses it).
pub(super) fn fields(k: Kind) -> &'static [&'static str] {
    match k {
        Kind::Tools => &["name", "title", "description", "inputSchema", "outputSchema", "annotations", "execution", "_meta"],
        Kind::Prompts => &["name", "title", "description", "arguments", "_meta"],
        Kind::Templates => &["uriTemplate", "name", "title", "description", "mimeType", "annotations", "_meta"],
        Kind::Resources => &["uri", "name", "title", "description", "mimeType", "annotations", "_meta"],
    }
}

/// The members of `item` that count, as one object.
pub(super) fn pinned_part(k: Kind, item: &Value) -> Value {
    let mut out = Map::new();
    for f in fields(k) {
        if let Some(v) = item.get(*f) {
            out.insert((*f).to_string(), v.clone());
        }
    }
    Value::Object(out)
}

/// `"sha256:<hex>"` of the definition `item` of kind `k`.
pub(super) fn of(k: Kind, item: &Value) -> String {
    hex_digest(&pinned_part(k, item))
}

/// The digest of the definition without its names: equal for a renamed item.
pub(super) fn body(k: Kind, item: &Value) -> String {
    let mut part = pinned_part(k, item);
    if let Some(o) = part.as_object_mut() {
        o.remove("name");
        o.remove(k.key_field());
    }
    hex_digest(&part)
}

/// The members that differ between definitions `a` and `b`, in the order of [`fields`].
pub(super) fn changed_fields(k: Kind, a: &Value, b: &Value) -> Vec<&'static str> {
    fields(k).iter().copied().filter(|f| a.get(*f) != b.get(*f)).collect()
}

fn hex_digest(v: &Value) -> String {
    format!("sha256:{}", hex(&Sha256::digest(canonical(v))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_changes_the_digest() {
        let base = json!({"name": "t", "description": "adds", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}});
        // (case, edited item, same digest?, same body?)
        let cases: &[(&str, Value, bool, bool)] = &[
            ("keys reordered", json!({"inputSchema": {"properties": {"a": {"type": "number"}}, "type": "object"}, "description": "adds", "name": "t"}), true, true),
            ("icons are not pinned", json!({"name": "t", "description": "adds", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}, "icons": [{"src": "x"}]}), true, true),
            ("description", json!({"name": "t", "description": "adds. <IMPORTANT>", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}}), false, false),
            ("schema", json!({"name": "t", "description": "adds", "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}}}), false, false),
            ("annotations", json!({"name": "t", "description": "adds", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}, "annotations": {"readOnlyHint": true}}), false, false),
            ("_meta", json!({"name": "t", "description": "adds", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}, "_meta": {"x": 1}}), false, false),
            ("renamed", json!({"name": "u", "description": "adds", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}}), false, true),
        ];
        for (case, item, same, same_body) in cases {
            assert_eq!(of(Kind::Tools, item) == of(Kind::Tools, &base), *same, "{case}");
            assert_eq!(body(Kind::Tools, item) == body(Kind::Tools, &base), *same_body, "{case}");
        }
        assert!(of(Kind::Tools, &base).starts_with("sha256:") && of(Kind::Tools, &base).len() == 7 + 64);
    }

    #[test]
    fn changed_fields_name_what_differs() {
        let a = json!({"name": "t", "description": "a", "inputSchema": {"type": "object"}});
        let b = json!({"name": "t", "description": "b", "inputSchema": {"type": "object"}, "annotations": {}});
        assert_eq!(changed_fields(Kind::Tools, &a, &b), ["description", "annotations"]);
        let p = json!({"name": "p", "arguments": [{"name": "x"}]});
        assert_eq!(changed_fields(Kind::Prompts, &p, &json!({"name": "p"})), ["arguments"]);
    }
}
