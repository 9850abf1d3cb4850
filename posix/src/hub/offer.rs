//! What the hub offers clients in a handshake answer (a legacy
//! `initialize`, a modern `server/discover`), read from its upstreams as
//! they are now: the union of their capabilities, and the instructions
//! naming them (with their prefixes as the catalog applies them).

use mcpx_core::names;
use serde_json::{json, Map, Value};

use super::{apps, skills};
use super::catalog::Catalog;
use super::shape;
use super::upstream::Upstreams;

impl Upstreams {
    /// What the hub offers clients: the union of what its upstreams offered
    /// when they last initialized. Lists always announce `listChanged` (the
    /// hub's lists change as upstreams come and go). With no upstream ever
    /// initialized, `tools` is offered so the client asks later.
    pub(in crate::hub) fn capabilities(&self) -> Map<String, Value> {
        let mut caps = Map::new();
        let known: Vec<&Value> = self.iter().filter_map(|u| u.caps.as_ref()).collect();
        let has = |k: &str| known.iter().any(|c| c.get(k).is_some_and(|v| !v.is_null()));
        if has("tools") || known.is_empty() {
            caps.insert("tools".into(), json!({ "listChanged": true }));
        }
        if has("resources") {
            let sub = known.iter().any(|c| c.pointer("/resources/subscribe") == Some(&Value::Bool(true)));
            let mut r = json!({ "listChanged": true });
            if sub {
                r["subscribe"] = Value::Bool(true);
            }
            caps.insert("resources".into(), r);
        }
        // Skills are shown as prompts to clients without the extension.
        if has("prompts") || self.iter().any(|u| skills::declared(u.caps.as_ref()).is_some()) {
            caps.insert("prompts".into(), json!({ "listChanged": true }));
        }
        if has("logging") {
            caps.insert("logging".into(), json!({}));
        }
        if has("completions") {
            caps.insert("completions".into(), json!({}));
        }
        caps
    }

    /// [`Upstreams::capabilities`] for a client that declared `declared`:
    /// with MCP Apps for an app host when an upstream serves apps (announces
    /// the extension, or lists a UI resource or a tool linking one), and
    /// with Skills when an upstream declared them (`skills::offer`).
    pub(in crate::hub) fn capabilities_for(&self, catalog: &Catalog, declared: &Value) -> Map<String, Value> {
        let mut caps = self.capabilities();
        if cfg!(feature = "apps") && apps::declared(declared) && (catalog.serves_apps() || self.iter().any(|u| apps::declared(u.caps.as_ref().unwrap_or(&Value::Null)))) {
            apps::add_extension(&mut caps, apps::EXT, json!({}));
        }
        skills::offer(&mut caps, self.iter().map(|u| skills::declared(u.caps.as_ref())));
        caps
    }

    /// The `instructions` for a client with features `f`: the separator and
    /// prefixes as that client's names have them.
    pub(in crate::hub) fn instructions(&self, catalog: &Catalog, sep: &str, f: &shape::Features) -> String {
        let legacy = names::legacy_separator(sep);
        let shown_sep = if f.dotted_names { sep } else { legacy };
        let mut s = format!(
            "This is mcpx, a hub serving the tools, resources and prompts of {} MCP server(s). \
             Names are prefixed with the server's prefix and '{shown_sep}'.\n",
            self.iter().filter(|u| !u.is_removed()).count(),
        );
        for (i, u) in self.iter().enumerate().filter(|(_, u)| !u.is_removed()) {
            // The prefixes as applied to its names (a long one is shortened
            // on long names; invalid characters are replaced).
            let mut applied = catalog.applied_prefixes(i, f);
            let fallback = names::expose_detail(&u.spec.prefix, legacy, "", 0);
            let fallback = names::respell(&fallback, shown_sep).unwrap_or(fallback);
            if applied.is_empty() {
                applied.push(fallback.applied_prefix());
            }
            let prefix = if u.spec.prefix.is_empty() { "(unprefixed)".to_string() } else { applied.join(" or ") };
            s.push_str(&format!("- {} {}: {}", u.spec.name, prefix, u.state_name()));
            if let Some(i) = u.instructions.as_deref().filter(|i| !i.trim().is_empty()) {
                // The server's words, never mcpx's (tools-annotations-untrusted).
                let short: String = i.trim().chars().take(2000).collect();
                let vetted = if u.spec.trusted { "" } else { " (not verified by mcpx)" };
                s.push_str(&format!("\n  Instructions from server '{}'{vetted}:\n  {}", u.spec.name, short.replace('\n', "\n  ")));
            }
            s.push('\n');
        }
        s
    }
}
