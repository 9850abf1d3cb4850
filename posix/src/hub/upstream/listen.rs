//! The hub's `subscriptions/listen` stream to a modern upstream: list
//! changes it announces and the resources the hub's clients subscribed
//! to, opened when it is ready and again when the filter changes, it
//! ends gracefully or it times out.

use mcpx_core::method::Method;
use serde_json::{json, Value};

use super::super::pending::Origin;
use super::super::wire::Msg;
use super::super::{Level, UpstreamId};
use super::{Effect, Upstream, Upstreams};

impl Upstream {
    /// It takes a listen stream (modern, ready).
    pub(in crate::hub) fn listens(&self) -> bool {
        self.is_ready() && self.is_modern()
    }
}

impl Upstreams {
    /// Opens (or reopens, with the current filter) the hub's listen stream
    /// to `u` if it takes one; `uris`: the resources of it the hub's clients
    /// subscribed to. Answered within `timeout` ms.
    pub(in crate::hub) fn open_listen(&mut self, u: UpstreamId, uris: Vec<String>, timeout: u64) -> Vec<Effect> {
        let mut fx = Vec::new();
        let up = &mut self.0[u];
        if !up.listens() {
            return fx;
        }
        if let Some(old) = up.listen.take() {
            fx.push(Effect::Close { u, id: old, reason: "subscription replaced" });
        }
        let caps = up.caps.as_ref();
        let mut filter = serde_json::Map::new();
        for (cap, key) in [("tools", "toolsListChanged"), ("prompts", "promptsListChanged"), ("resources", "resourcesListChanged")] {
            if caps.and_then(|c| c.pointer(&format!("/{cap}/listChanged"))) == Some(&Value::Bool(true)) {
                filter.insert(key.into(), json!(true));
            }
        }
        if !uris.is_empty() {
            filter.insert("resourceSubscriptions".into(), json!(uris));
        }
        if !filter.is_empty() {
            let p = serde_json::to_vec(&json!({ "notifications": filter })).unwrap_or_default();
            fx.push(Effect::Send { u, method: Method::SubscriptionsListen, params: Some(p), origin: Origin::Listen, timeout });
        }
        fx
    }

    /// The hub's request `origin` to `u` went out (`sent`: its id) or not
    /// (the cap on requests in flight): a listen stream is known by its id,
    /// a list whose page was not asked for stops being read.
    pub(in crate::hub) fn sent(&mut self, u: UpstreamId, origin: &Origin, sent: Option<u64>) {
        let up = &mut self.0[u];
        match origin {
            Origin::Listen => up.listen = sent,
            Origin::List(k) if sent.is_none() => up.listing[k.idx()] = None,
            _ => {}
        }
    }

    /// `u` ended the hub's listen stream with `m` (a result: graceful, so
    /// it is opened again; an error: logged).
    pub(in crate::hub) fn on_listen_end(&mut self, u: UpstreamId, m: &Msg) -> Vec<Effect> {
        let up = &mut self.0[u];
        if m.id_u64().is_none() || m.id_u64() != up.listen {
            return Vec::new();
        }
        up.listen = None;
        match m.error_bytes() {
            Some(e) => vec![Effect::Log(Level::Info, format!("server '{}' ended the hub's subscriptions/listen with an error: {}", up.spec.name, String::from_utf8_lossy(e)))],
            None => vec![Effect::OpenListen(u)],
        }
    }

    /// The listen stream `id` to `u` reached its timeout: renewed.
    pub(in crate::hub) fn on_listen_timeout(&mut self, u: UpstreamId, id: u64) -> Vec<Effect> {
        self.0[u].listen = None;
        vec![Effect::Cancel { u, id, reason: "renewed" }, Effect::OpenListen(u)]
    }
}
