//! Resources, resource templates and their completion.

use super::content::PNG_1X1;
use mcpx_core::revision::{Feature, Revision};

use super::wire::{is_modern, RpcError, INVALID_PARAMS, RESOURCE_NOT_FOUND_LEGACY};
use serde_json::{json, Map, Value};

pub const STATIC_TEXT: &str = "test://static-text";
pub const STATIC_BINARY: &str = "test://static-binary";
pub const WATCHED: &str = "test://watched-resource";
pub const TEMPLATE: &str = "test://template/{id}/data";

struct Res {
    uri: &'static str,
    name: &'static str,
    title: &'static str,
    description: &'static str,
    mime: &'static str,
}

static RESOURCES: &[Res] = &[
    Res {
        uri: STATIC_TEXT,
        name: "static-text",
        title: "Static text",
        description: "A static text resource for testing",
        mime: "text/plain",
    },
    Res {
        uri: STATIC_BINARY,
        name: "static-binary",
        title: "Static binary",
        description: "A static binary resource (a PNG image) for testing",
        mime: "image/png",
    },
    Res {
        uri: WATCHED,
        name: "watched-resource",
        title: "Watched resource",
        description:
            "A resource that changes (call the update_resource tool); subscribe to get notified",
        mime: "text/plain",
    },
];

pub fn list(rev: Revision) -> Vec<Value> {
    RESOURCES
        .iter()
        .map(|r| {
            let mut o = Map::new();
            o.insert("uri".into(), r.uri.into());
            o.insert("name".into(), r.name.into());
            if rev.supports(Feature::Title) {
                o.insert("title".into(), r.title.into());
            }
            o.insert("description".into(), r.description.into());
            o.insert("mimeType".into(), r.mime.into());
            Value::Object(o)
        })
        .collect()
}

pub fn templates(rev: Revision) -> Vec<Value> {
    let mut t = json!({
        "uriTemplate": TEMPLATE,
        "name": "template",
        "description": "A resource template with an {id} parameter",
        "mimeType": "application/json"
    });
    if rev.supports(Feature::Title) {
        t["title"] = "Data by id".into();
    }
    vec![t]
}

/// The `{id}` of a URI matching the template.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix("test://template/")?
        .strip_suffix("/data")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// Does the URI name a resource this server has (for subscriptions)?
pub fn exists(uri: &str) -> bool {
    RESOURCES.iter().any(|r| r.uri == uri) || template_id(uri).is_some()
}

pub fn not_found(uri: &str, rev: Revision) -> RpcError {
    // 2026-07-28 (SEP-2164) uses invalid params; older revisions document -32002.
    let code = if is_modern(rev) {
        INVALID_PARAMS
    } else {
        RESOURCE_NOT_FOUND_LEGACY
    };
    RpcError::new(code, format!("resource not found: {uri}")).with_data(json!({"uri": uri}))
}

/// `resources/read`. `watched_version` counts updates of the watched resource.
pub fn read(uri: &str, rev: Revision, watched_version: u64) -> Result<Value, RpcError> {
    let content = match uri {
        STATIC_TEXT => {
            json!({"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."})
        }
        STATIC_BINARY => json!({"uri": uri, "mimeType": "image/png", "blob": PNG_1X1}),
        WATCHED => json!({"uri": uri, "mimeType": "text/plain",
            "text": format!("Watched resource content, version {watched_version}.")}),
        _ => match template_id(uri) {
            Some(id) => json!({"uri": uri, "mimeType": "application/json",
                "text": json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string()}),
            None => return Err(not_found(uri, rev)),
        },
    };
    Ok(json!({ "contents": [content] }))
}

/// Completion values for the template's `{id}` variable.
pub fn complete_template(uri: &str, arg: &str, value: &str) -> Option<Vec<String>> {
    if uri != TEMPLATE || arg != "id" {
        return None;
    }
    let ids = ["1", "2", "3", "42", "123"];
    Some(
        ids.iter()
            .filter(|i| i.starts_with(value))
            .map(|s| s.to_string())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads() {
        let r = read(STATIC_TEXT, Revision::V2025_11_25, 0).unwrap();
        assert_eq!(r["contents"][0]["mimeType"], "text/plain");
        let r = read(STATIC_BINARY, Revision::V2025_11_25, 0).unwrap();
        assert!(r["contents"][0]["blob"].as_str().unwrap().len() > 10);
        let r = read("test://template/123/data", Revision::V2025_11_25, 0).unwrap();
        assert!(r["contents"][0]["text"].as_str().unwrap().contains("123"));
        let e = read("test://nonexistent", Revision::V2026_07_28, 0).unwrap_err();
        assert_eq!(e.code, INVALID_PARAMS);
        assert_eq!(e.data.unwrap()["uri"], "test://nonexistent");
        assert_eq!(
            read("test://nope", Revision::V2025_11_25, 0).unwrap_err().code,
            -32002
        );
        assert!(read("test://template//data", Revision::V2025_11_25, 0).is_err());
    }

    #[test]
    fn listing() {
        assert!(list(Revision::V2024_11_05)
            .iter()
            .all(|r| r.get("title").is_none()));
        assert!(list(Revision::V2025_11_25)
            .iter()
            .all(|r| r.get("title").is_some()));
        assert!(exists(WATCHED) && exists("test://template/9/data") && !exists("x://y"));
        assert_eq!(
            complete_template(TEMPLATE, "id", "1").unwrap(),
            vec!["1", "123"]
        );
    }
}
