//! Server→client requests: an upstream asks for input (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`) and the hub relays it to a client.
//!
//! This is the one place that knows how an upstream's need for input reaches a
//! client. For a legacy client it is a wire request with a fresh id (the hub's,
//! unique per hub) whose answer goes back to the upstream under the upstream's
//! original id, byte for byte. A modern (2026-07-28) client will get an
//! `InputRequiredResult` instead; that translation belongs here too.
//!
//! Which client: the one whose request to that upstream was sent most recently
//! (legacy stdio has no other link between a server's request and the call it
//! serves); with no call in flight, the only initialized client, if there is
//! exactly one. Only what that client declared in its capabilities is relayed;
//! otherwise the upstream gets an error at once. Roots may come from the
//! configuration (`HubOptions::roots`) instead.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::shape::{self, RevExt};
use super::wire::{self, Msg};
use super::{ClientId, Hub, Level, Output, UpstreamId};

/// One relayed request.
#[derive(Clone, Debug)]
pub(super) struct Relayed {
    pub up: UpstreamId,
    /// The upstream's id, raw JSON.
    pub up_id: Vec<u8>,
    pub method: String,
    pub deadline: u64,
}

#[derive(Default)]
pub(super) struct Relays {
    map: HashMap<(ClientId, u64), Relayed>,
    next_id: u64,
}

impl Relays {
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn next_deadline(&self) -> Option<u64> {
        self.map.values().map(|r| r.deadline).min()
    }
    fn expired(&self, now: u64) -> Vec<(ClientId, u64)> {
        let mut v: Vec<_> = self.map.iter().filter(|(_, r)| r.deadline <= now).map(|(k, _)| *k).collect();
        v.sort();
        v
    }
    fn find_upstream(&self, u: UpstreamId, up_id: &[u8]) -> Option<(ClientId, u64)> {
        self.map.iter().find(|(_, r)| r.up == u && r.up_id == up_id).map(|(k, _)| *k)
    }
}

/// Methods an upstream may ask of a client.
const RELAYED: [(&str, &str); 3] =
    [("sampling/createMessage", "sampling"), ("elicitation/create", "elicitation"), ("roots/list", "roots")];

impl Hub {
    /// A request from upstream `u`.
    pub(super) fn on_upstream_request(&mut self, u: UpstreamId, m: &Msg) {
        let id = m.id_bytes().unwrap_or(b"null");
        match m.method.as_str() {
            "ping" => self.emit_upstream(u, wire::result(id, b"{}")),
            "roots/list" if self.opts.roots.is_some() => {
                let roots = match self.opts.roots.clone() {
                    Some(Value::Array(a)) => json!({ "roots": a }),
                    Some(v) => v,
                    None => json!({ "roots": [] }),
                };
                self.emit_upstream(u, wire::result(id, &serde_json::to_vec(&roots).unwrap_or_default()));
            }
            method if RELAYED.iter().any(|(m, _)| *m == method) => self.relay_to_client(u, m),
            method => {
                let msg = format!("mcpx does not handle '{method}' requests from servers");
                self.emit_upstream(u, wire::error(Some(id), -32601, &msg, None));
            }
        }
    }

    fn relay_to_client(&mut self, u: UpstreamId, m: &Msg) {
        let id = m.id_bytes().unwrap_or(b"null").to_vec();
        let method = m.method.clone();
        let server = self.ups[u].spec.name.clone();
        let cap = RELAYED.iter().find(|(x, _)| *x == method).map(|(_, c)| *c).unwrap_or("");
        let refuse = |hub: &mut Hub, code: i64, why: String| {
            hub.log(Level::Info, format!("server '{server}': {method} refused: {why}"));
            hub.emit_upstream(u, wire::error(Some(&id), code, &why, None));
        };
        let target = self.pending.latest_client_of(u).filter(|c| self.clients.contains_key(c)).or_else(|| {
            // Not to a client that has not read a list yet: the oldest SDK
            // clients hang on a message they did not ask for before that.
            let live: Vec<ClientId> = self.clients.iter().filter(|(_, c)| c.initialized && c.may_notify()).map(|(k, _)| *k).collect();
            match live[..] {
                [only] => Some(only),
                _ => None,
            }
        });
        let Some(c) = target else {
            return refuse(self, -32603, format!("no client connected to mcpx can answer {method}"));
        };
        if self.relays.len() >= self.opts.max_relays {
            return refuse(self, -32603, format!("mcpx has {} requests waiting on clients (its limit)", self.opts.max_relays));
        }
        let (rev, caps) = {
            let cl = &self.clients[&c];
            (cl.rev(), cl.caps.clone())
        };
        let declared = caps.get(cap).filter(|v| !v.is_null());
        let Some(declared) = declared else {
            return refuse(self, -32601, format!("the client does not support {cap} (not in its capabilities)"));
        };
        let mut params = m.params_value();
        if method == "elicitation/create" {
            // Requirement: elicitation-client-show-requesting-server
            let text = params.get("message").and_then(Value::as_str).unwrap_or("").to_string();
            params["message"] = Value::String(format!("[{server}] {text}"));
            let mode = params.get("mode").and_then(Value::as_str).unwrap_or("form");
            let url_ok = declared.get("url").is_some();
            let form_ok = declared.get("form").is_some() || declared.get("url").is_none();
            if (mode == "url" && !url_ok) || (mode == "form" && !form_ok) {
                return refuse(self, -32601, format!("the client does not support {mode} elicitation"));
            }
        }
        if method == "sampling/createMessage" && params.get("tools").is_some() && declared.get("tools").is_none() {
            return refuse(self, -32601, "the client does not support tool use in sampling".to_string());
        }
        let params = match shape::relayed_request(&method, params, &rev.features()) {
            Ok(p) => p,
            Err(why) => return refuse(self, -32601, why.to_string()),
        };
        self.relays.next_id += 1;
        let hid = self.relays.next_id;
        let deadline = self.now_ms + self.opts.relay_timeout_ms;
        self.relays.map.insert((c, hid), Relayed { up: u, up_id: id, method: method.clone(), deadline });
        let body = serde_json::to_vec(&params).unwrap_or_default();
        self.emit_client(c, wire::request(hid, &method, Some(&body)));
    }

    /// A response from client `c`: the answer to a relayed request.
    pub(super) fn on_client_response(&mut self, c: ClientId, m: &Msg) {
        let Some(hid) = m.id_u64() else { return };
        let Some(r) = self.relays.map.remove(&(c, hid)) else {
            self.log(Level::Debug, format!("client {c}: answer to unknown or expired request {hid} ignored"));
            return;
        };
        let up_rev = self.ups[r.up].rev.unwrap_or(shape::Rev::LATEST_LEGACY);
        let out = match (m.result_bytes(), m.error_bytes()) {
            (Some(res), _) => match shape::result(&r.method, res, up_rev) {
                Some(shaped) => wire::result(&r.up_id, &shaped),
                None => wire::result(&r.up_id, res),
            },
            (None, Some(err)) => wire::error_raw(Some(&r.up_id), err),
            _ => return,
        };
        if self.ups[r.up].is_up() {
            self.emit_upstream(r.up, out);
        }
    }

    /// The upstream cancelled a request it had sent us.
    pub(super) fn relay_cancelled_by_upstream(&mut self, u: UpstreamId, up_id: &[u8], reason: Option<&str>) {
        if let Some(k) = self.relays.find_upstream(u, up_id) {
            self.relays.map.remove(&k);
            let mut p = json!({ "requestId": k.1 });
            if let Some(r) = reason {
                p["reason"] = Value::String(r.to_string());
            }
            self.notify_client(k.0, "notifications/cancelled", &p);
        }
    }

    /// The client cancelled a request the hub relayed to it: tell the upstream.
    pub(super) fn relay_cancelled_by_client(&mut self, c: ClientId, hid: u64, reason: Option<&str>) {
        if let Some(r) = self.relays.map.remove(&(c, hid)) {
            if self.ups[r.up].is_up() {
                let mut p = json!({});
                let idv: Value = serde_json::from_slice(&r.up_id).unwrap_or(Value::Null);
                p["requestId"] = idv;
                if let Some(x) = reason {
                    p["reason"] = Value::String(x.to_string());
                }
                self.emit_upstream(r.up, wire::notification("notifications/cancelled", Some(&serde_json::to_vec(&p).unwrap_or_default())));
            }
        }
    }

    /// Relayed requests past their deadline: the upstream gets an error, the
    /// client a cancellation.
    pub(super) fn relay_tick(&mut self) {
        for k in self.relays.expired(self.now_ms) {
            let Some(r) = self.relays.map.remove(&k) else { continue };
            let msg = format!("the client did not answer {} within {} ms", r.method, self.opts.relay_timeout_ms);
            if self.ups[r.up].is_up() {
                self.emit_upstream(r.up, wire::error(Some(&r.up_id), -32603, &msg, None));
            }
            self.notify_client(k.0, "notifications/cancelled", &json!({ "requestId": k.1, "reason": msg }));
        }
    }

    /// Drops relays of a gone client (upstreams get an error) or a gone upstream.
    pub(super) fn relay_drop_client(&mut self, c: ClientId) {
        let keys: Vec<_> = self.relays.map.keys().filter(|k| k.0 == c).copied().collect();
        for k in keys {
            if let Some(r) = self.relays.map.remove(&k) {
                if self.ups[r.up].is_up() {
                    self.emit_upstream(r.up, wire::error(Some(&r.up_id), -32603, "the client disconnected", None));
                }
            }
        }
    }

    pub(super) fn relay_drop_upstream(&mut self, u: UpstreamId) {
        let keys: Vec<_> = self.relays.map.iter().filter(|(_, r)| r.up == u).map(|(k, _)| *k).collect();
        for k in keys {
            self.relays.map.remove(&k);
            let reason = format!("server '{}' exited", self.ups[u].spec.name);
            self.notify_client(k.0, "notifications/cancelled", &json!({ "requestId": k.1, "reason": reason }));
        }
    }

    pub(super) fn emit_upstream(&mut self, u: UpstreamId, bytes: Vec<u8>) {
        self.out.push_back(Output::ToUpstream(u, bytes));
    }
}
