//! `"roots"`: the folders (or URIs) offered to servers as roots.

use std::path::Path as FsPath;

use serde_json::Value;

use super::ctx::{type_name, Ctx};
use crate::bytes::jsonpos::Path;

/// One root: its URI (`file://` for a path) and an optional name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    pub uri: String,
    pub name: Option<String>,
}

/// `"roots"`: paths (relative to the config's folder, or `~/`), URIs, or
/// `{"uri", "name"}` objects.
pub(super) fn parse_roots(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Vec<Root> {
    let Value::Array(items) = v else {
        cx.err(at, format!("expected an array of paths or {{\"uri\", \"name\"}} objects, found {}", type_name(v)));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let iat = at.idx(i);
        let (raw, name) = match item {
            Value::String(_) => match cx.string(&iat, item) {
                Some(s) => (s, None),
                None => continue,
            },
            Value::Object(o) => {
                cx.unknown_keys(&iat, o, &["uri", "name"]);
                let Some(u) = o.get("uri") else {
                    cx.err(&iat, "a root object needs \"uri\"");
                    continue;
                };
                let Some(u) = cx.string(&iat.key("uri"), u) else { continue };
                let name = match o.get("name") {
                    Some(n) => cx.string(&iat.key("name"), n),
                    None => None,
                };
                (u, name)
            }
            other => {
                cx.err(&iat, format!("expected a path, a URI or an object, found {}", type_name(other)));
                continue;
            }
        };
        let uri = if raw.contains("://") {
            raw
        } else {
            match cx.path(&iat, &raw) {
                Some(p) => file_uri(&p),
                None => continue,
            }
        };
        out.push(Root { uri, name });
    }
    out
}

/// `file://` URI of an absolute path, percent-encoding what URIs do not allow.
pub fn file_uri(p: &FsPath) -> String {
    let mut out = String::from("file://");
    for b in p.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
