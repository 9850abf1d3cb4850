//! MCP Apps (`io.modelcontextprotocol/ui`, the ext-apps specification of
//! 2026-01-26) through the hub: many servers' apps behind one server.
//!
//! - **Names.** Server S's `ui://` URI `ui://<rest>` is shown as
//!   `ui://<S>/<rest>` (`scoped`): the scheme stays `ui://`, as the
//!   extension requires, and two servers' URIs never collide. A client's
//!   `ui://` URI is routed by its first segment alone, so a UI resource a
//!   server leaves out of `resources/list` (the extension allows that) is
//!   still read through the hub.
//! - **Rewrites.** Every place a UI URI appears: a tool's `_meta.ui` (and the
//!   deprecated `_meta["ui/resourceUri"]`) in `tools/list` and in
//!   `tools/call` results, resource links and embedded resources of a
//!   result, a resource's `uri` and `_meta.ui` in `resources/list` and in
//!   `resources/read` contents. Strings of `_meta.ui` that are not `ui://`
//!   URIs (the CSP's domains, permissions, `domain`, `prefersBorder`) pass
//!   unchanged; so do the resource's bytes.
//! - **Visibility.** A tool whose `_meta.ui.visibility` lacks `"model"` is
//!   for apps alone: a client that did not declare the extension is a
//!   model's, and neither lists nor calls it (`stages::Sight`). A client
//!   that declared it is an app host: it lists the tool with its
//!   visibility (the host keeps it from the model) and calls it for its app.
//! - **An app's own names.** An app calls its server's tools by the names
//!   the server gave them, which a hub prefixes: for a client that declared
//!   the extension, a tool name no tool is listed under is the upstream name
//!   of the one server that has it (`Catalog::by_original`); two servers
//!   with that name are refused, naming both (the hub cannot tell which
//!   app called).
//! - **Negotiation.** mcpx declares the extension to every upstream (it
//!   answers for its clients, and keeps app-only tools from the others), and
//!   offers it to a client that declared it when an upstream serves apps.
//!
//! Without the `apps` feature (mcpx-edge's plain build) mcpx neither
//! declares nor offers the extension, and passes tools and URIs as the
//! servers wrote them (a tool for apps alone is listed like any other).

use serde_json::{json, Map, Value};

/// The extension's identifier (`capabilities.extensions` key).
pub(super) const EXT: &str = "io.modelcontextprotocol/ui";

/// Adds extension `name` with `settings` to capabilities `caps`, beside any
/// other extension declared there.
pub(super) fn add_extension(caps: &mut Map<String, Value>, name: &str, settings: Value) {
    let ext = caps.entry("extensions").or_insert_with(|| json!({}));
    if !ext.is_object() {
        *ext = json!({});
    }
    if let Some(o) = ext.as_object_mut() {
        o.insert(name.into(), settings);
    }
}

#[cfg(feature = "apps")]
pub(super) use on::*;
#[cfg(not(feature = "apps"))]
pub(super) use off::*;

#[cfg(feature = "apps")]
mod on {
    use serde_json::{json, Map, Value};

    use super::super::scoped;
    use super::{add_extension, EXT};

    const SCHEME: &str = "ui://";
    /// The deprecated flat form of `_meta.ui.resourceUri`.
    const FLAT_KEY: &str = "ui/resourceUri";

    /// Declares the extension in capabilities `caps` mcpx sends upstream.
    pub(in crate::hub) fn declare(caps: &mut Map<String, Value>) {
        add_extension(caps, EXT, json!({ "mimeTypes": ["text/html;profile=mcp-app"] }));
    }

    /// Is `tool` for apps alone (`visibility` without `"model"`)?
    pub(in crate::hub) fn app_only(tool: &Value) -> bool {
        match tool.get("_meta").and_then(|m| m.get("ui")).and_then(|u| u.get("visibility")) {
            Some(Value::Array(v)) => !v.iter().any(|x| x.as_str() == Some("model")),
            _ => false,
        }
    }

    /// Did capabilities `caps` (a client's, or a server's) declare the extension?
    pub(in crate::hub) fn declared(caps: &Value) -> bool {
        caps.get("extensions").and_then(|e| e.get(EXT)).is_some_and(Value::is_object)
    }

    pub(in crate::hub) fn is_ui(uri: &str) -> bool {
        uri.starts_with(SCHEME)
    }

    /// `orig`, a `ui://` URI of server `server`, as clients see it (`scoped`).
    pub(in crate::hub) fn expose(server: &str, orig: &str) -> Option<String> {
        is_ui(orig).then(|| scoped::expose(server, orig)).flatten()
    }

    /// Does `item` (a tool, or a resource) belong to an app: a UI resource, or
    /// a tool linking one?
    pub(in crate::hub) fn of_app(item: &Value) -> bool {
        let meta = item.get("_meta");
        item.get("uri").and_then(Value::as_str).is_some_and(is_ui)
            || meta.and_then(|m| m.get("ui")).and_then(|u| u.get("resourceUri")).is_some()
            || meta.and_then(|m| m.get(FLAT_KEY)).is_some()
    }

    /// Shows the `ui://` URIs of `item`'s `_meta` (its `ui` member and the
    /// deprecated flat key) as clients see them (`server`'s).
    pub(in crate::hub) fn expose_meta(item: &mut Value, server: &str) {
        let Some(meta) = item.get_mut("_meta").and_then(Value::as_object_mut) else { return };
        for (k, v) in meta.iter_mut() {
            if k == "ui" || k == FLAT_KEY {
                expose_strings(v, server);
            }
        }
    }

    fn expose_strings(v: &mut Value, server: &str) {
        match v {
            Value::String(s) => {
                if let Some(e) = expose(server, s) {
                    *s = e;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| expose_strings(x, server)),
            Value::Object(o) => o.values_mut().for_each(|x| expose_strings(x, server)),
            _ => {}
        }
    }

    /// A `tools/call` or `resources/read` result `res` of server `server`,
    /// with its UI URIs shown as clients see them; `None` when it names none
    /// (most results: one scan of the bytes tells).
    pub(in crate::hub) fn exposed_result(res: &[u8], server: &str) -> Option<Vec<u8>> {
        // One searcher for every result, built once.
        static FINDER: std::sync::OnceLock<memchr::memmem::Finder<'static>> = std::sync::OnceLock::new();
        FINDER.get_or_init(|| memchr::memmem::Finder::new(SCHEME.as_bytes())).find(res)?;
        let mut v: Value = serde_json::from_slice(res).ok()?;
        let before = v.clone();
        expose_meta(&mut v, server);
        let uri = |it: &mut Value| {
            if let Some(Value::String(s)) = it.get_mut("uri") {
                if let Some(e) = expose(server, s) {
                    *s = e;
                }
            }
            expose_meta(it, server);
        };
        for list in ["content", "contents"] {
            let Some(Value::Array(items)) = v.get_mut(list) else { continue };
            for it in items {
                match it.get("type").and_then(Value::as_str) {
                    Some("resource") => {
                        if let Some(r) = it.get_mut("resource") {
                            uri(r);
                        }
                    }
                    // A resource link, or (`contents`) a resource's contents.
                    _ => uri(it),
                }
            }
        }
        (v != before).then(|| serde_json::to_vec(&v).unwrap_or_default())
    }
}

/// The same answers without the feature: no extension, URIs as they are.
#[cfg(not(feature = "apps"))]
mod off {
    use serde_json::{Map, Value};

    pub(in crate::hub) fn declare(_: &mut Map<String, Value>) {}
    pub(in crate::hub) fn declared(_: &Value) -> bool {
        false
    }
    pub(in crate::hub) fn is_ui(_: &str) -> bool {
        false
    }
    pub(in crate::hub) fn of_app(_: &Value) -> bool {
        false
    }
    pub(in crate::hub) fn app_only(_: &Value) -> bool {
        false
    }
    pub(in crate::hub) fn expose_meta(_: &mut Value, _: &str) {}
    pub(in crate::hub) fn exposed_result(_: &[u8], _: &str) -> Option<Vec<u8>> {
        None
    }
}

#[cfg(all(test, feature = "apps"))]
mod tests {
    use super::*;

    #[test]
    fn visibility_without_model_is_for_apps_alone() {
        let rows = [
            (json!({ "name": "t" }), false),
            (json!({ "name": "t", "_meta": { "ui": { "resourceUri": "ui://x/y" } } }), false),
            (json!({ "_meta": { "ui": { "visibility": ["model", "app"] } } }), false),
            (json!({ "_meta": { "ui": { "visibility": ["model"] } } }), false),
            (json!({ "_meta": { "ui": { "visibility": ["app"] } } }), true),
            (json!({ "_meta": { "ui": { "visibility": [] } } }), true),
        ];
        for (tool, want) in rows {
            assert_eq!(app_only(&tool), want, "{tool}");
        }
    }

    #[test]
    fn meta_ui_uris_change_and_nothing_else_does() {
        let mut tool = json!({
            "name": "get-time",
            "_meta": {
                "ui": { "resourceUri": "ui://get-time/app.html", "visibility": ["app"], "csp": { "connectDomains": ["https://api.example"] } },
                "ui/resourceUri": "ui://get-time/app.html",
                "other": "ui://left/alone"
            }
        });
        expose_meta(&mut tool, "clock");
        assert_eq!(tool["_meta"]["ui"]["resourceUri"], "ui://clock/get-time/app.html");
        assert_eq!(tool["_meta"]["ui/resourceUri"], "ui://clock/get-time/app.html");
        assert_eq!(tool["_meta"]["ui"]["csp"]["connectDomains"][0], "https://api.example");
        assert_eq!(tool["_meta"]["ui"]["visibility"][0], "app");
        assert_eq!(tool["_meta"]["other"], "ui://left/alone", "another key's strings are not the extension's");
    }

    #[test]
    fn results_show_links_embedded_resources_and_read_contents_namespaced() {
        let call = json!({
            "content": [
                { "type": "text", "text": "see ui://get-time/app.html" },
                { "type": "resource_link", "uri": "ui://get-time/app.html", "name": "app" },
                { "type": "resource", "resource": { "uri": "ui://get-time/app.html", "text": "<html>" } },
                { "type": "resource_link", "uri": "file:///tmp/x", "name": "x" }
            ],
            "_meta": { "ui": { "resourceUri": "ui://get-time/app.html" } }
        });
        let out: Value = serde_json::from_slice(&exposed_result(&serde_json::to_vec(&call).unwrap(), "clock").unwrap()).unwrap();
        assert_eq!(out["content"][0]["text"], "see ui://get-time/app.html", "text is the model's, never rewritten");
        assert_eq!(out["content"][1]["uri"], "ui://clock/get-time/app.html");
        assert_eq!(out["content"][2]["resource"]["uri"], "ui://clock/get-time/app.html");
        assert_eq!(out["content"][3]["uri"], "file:///tmp/x");
        assert_eq!(out["_meta"]["ui"]["resourceUri"], "ui://clock/get-time/app.html");
        let read = json!({ "contents": [{ "uri": "ui://get-time/app.html", "mimeType": "text/html;profile=mcp-app", "text": "<p>ui://get-time</p>", "_meta": { "ui": { "prefersBorder": true } } }] });
        let out: Value = serde_json::from_slice(&exposed_result(&serde_json::to_vec(&read).unwrap(), "clock").unwrap()).unwrap();
        assert_eq!(out["contents"][0]["uri"], "ui://clock/get-time/app.html");
        assert_eq!(out["contents"][0]["text"], "<p>ui://get-time</p>", "the resource's bytes are the server's");
        assert_eq!(out["contents"][0]["_meta"]["ui"]["prefersBorder"], true);
        assert_eq!(exposed_result(br#"{"content":[{"type":"text","text":"hi"}]}"#, "clock"), None, "no UI URI, no copy");
    }

    #[test]
    fn extensions_are_added_beside_the_others() {
        let mut caps = Map::new();
        add_extension(&mut caps, "io.modelcontextprotocol/tasks", json!({}));
        declare(&mut caps);
        assert!(caps["extensions"]["io.modelcontextprotocol/tasks"].is_object());
        assert!(declared(&Value::Object(caps)));
        assert!(!declared(&json!({ "extensions": { EXT: true } })));
    }
}
