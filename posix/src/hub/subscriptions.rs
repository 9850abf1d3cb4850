//! Resource subscriptions and the hub's log level: which clients want
//! updates of which exposed URI, and the level a client asked for last.
//! The upstream is asked to subscribe for a URI's first subscriber and
//! told after its last; the level is replayed to upstreams that start
//! later. Steps answer with [`Effect`]s the hub carries out in order.

use std::collections::{BTreeMap, BTreeSet};

use mcpx_core::error::ErrorCode;
use mcpx_core::meta::LOG_LEVELS;
use mcpx_core::method::Method;
use serde_json::{json, Value};

use super::catalog::Catalog;
use super::request::{level_index, Refusal};
use super::upstream::{Upstream, Upstreams};
use super::{ClientId, UpstreamId};

/// What a subscription or log-level step wants done, in order.
pub(super) enum Effect {
    /// Upstream `u` now runs at this log level (recorded before it is told).
    LevelSent(UpstreamId, Option<usize>),
    /// A fire-and-forget request to upstream `u`, with its own timeout.
    Send(UpstreamId, Method<'static>, Vec<u8>),
    /// Opens (or reopens) modern upstream `u`'s listen stream.
    Listen(UpstreamId),
    /// Client `c` holds one subscription more (true) or fewer (false).
    Count(ClientId, bool),
    /// Client `c` asked for this log level (its session changes if it differs).
    ClientLevel(ClientId, &'static str),
    /// Client `c`'s session changed.
    SessionChanged(ClientId),
}

/// What to do with a client's `resources/subscribe|unsubscribe`.
pub(super) enum Verdict {
    /// Answer it with an empty result.
    Answer,
    /// Forward it to the upstream (its first subscriber or its last).
    Forward,
    /// Refuse it: the client holds as many subscriptions as it may.
    Full,
}

/// Exposed URI → clients, and the level asked for last.
#[derive(Default)]
pub(super) struct Subscriptions {
    by_uri: BTreeMap<String, BTreeSet<ClientId>>,
    level: Option<&'static str>,
}

/// Can upstream `up` notify updates of its resources (`resources.subscribe`)?
pub(super) fn notifies_updates(up: &Upstream) -> bool {
    up.caps.as_ref().and_then(|c| c.pointer("/resources/subscribe")) == Some(&Value::Bool(true))
}

/// Legacy upstream `u` is told log `level`.
fn set_level(fx: &mut Vec<Effect>, ups: &Upstreams, u: UpstreamId, level: &str) {
    if ups[u].is_modern() {
        return; // modern servers take the level per request
    }
    fx.push(Effect::LevelSent(u, level_index(level)));
    fx.push(Effect::Send(u, Method::LoggingSetLevel, serde_json::to_vec(&json!({ "level": level })).unwrap_or_default()));
}

/// A modern request with `logLevel` index `l` goes to legacy upstream
/// `u`: its process-wide level is lowered when needed so the request's
/// messages are sent at all (the hub filters them per request).
pub(super) fn lower_level_for(ups: &Upstreams, u: UpstreamId, l: usize) -> Vec<Effect> {
    let mut fx = Vec::new();
    if !(ups[u].is_modern() || !ups[u].has_cap("logging") || ups[u].level_sent.is_some_and(|x| x <= l)) {
        set_level(&mut fx, ups, u, mcpx_core::meta::LOG_LEVELS[l]);
    }
    fx
}

/// Tells `u` about a change of the hub's interest in its resource `orig`.
fn tell_upstream(fx: &mut Vec<Effect>, ups: &Upstreams, u: UpstreamId, orig: &str, on: bool) {
    if !ups[u].is_ready() {
        return;
    }
    if ups[u].is_modern() {
        // One reopened stream carries every change of a step.
        if !fx.iter().any(|e| matches!(e, Effect::Listen(x) if *x == u)) {
            fx.push(Effect::Listen(u));
        }
        return;
    }
    let method = if on { Method::ResourcesSubscribe } else { Method::ResourcesUnsubscribe };
    fx.push(Effect::Send(u, method, uri_params(orig)));
}

fn uri_params(orig: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({ "uri": orig })).unwrap_or_default()
}

impl Subscriptions {
    pub fn clients_of(&self, uri: &str) -> Vec<ClientId> {
        self.by_uri.get(uri).map(|s| s.iter().copied().collect()).unwrap_or_default()
    }
    pub fn of_client(&self, c: ClientId) -> Vec<String> {
        self.by_uri.iter().filter(|(_, s)| s.contains(&c)).map(|(u, _)| u.clone()).collect()
    }
    /// The log level a client asked for last.
    pub fn level(&self) -> Option<&'static str> {
        self.level
    }
    /// Adds; true when it is the URI's first subscriber.
    fn add(&mut self, uri: &str, c: ClientId) -> bool {
        let s = self.by_uri.entry(uri.to_string()).or_default();
        let first = s.is_empty();
        s.insert(c);
        first
    }
    /// Removes; true when the URI has no subscriber left (and had this one).
    fn remove(&mut self, uri: &str, c: ClientId) -> bool {
        let Some(s) = self.by_uri.get_mut(uri) else { return false };
        let had = s.remove(&c);
        if s.is_empty() {
            self.by_uri.remove(uri);
            return had;
        }
        false
    }
    fn has(&self, uri: &str, c: ClientId) -> bool {
        self.by_uri.get(uri).is_some_and(|s| s.contains(&c))
    }

    /// Client `c` asks for log messages at `asked` and up
    /// (`logging/setLevel`): the hub's level is the one asked last (each
    /// upstream has one), sent to every upstream that logs. A level
    /// MCP does not name is refused.
    pub fn set_log_level(&mut self, ups: &Upstreams, c: ClientId, asked: &str) -> Result<Vec<Effect>, Refusal> {
        // Requirement: logging-errors-setlevel
        let Some(&level) = LOG_LEVELS.iter().find(|l| **l == asked) else {
            return Err(Refusal(ErrorCode::InvalidParams, format!("Invalid params: unknown log level '{asked}'"), None));
        };
        self.level = Some(level);
        let mut fx = Vec::new();
        for u in (0..ups.len()).filter(|u| ups[*u].has_cap("logging")) {
            set_level(&mut fx, ups, u, level);
        }
        fx.push(Effect::ClientLevel(c, level));
        Ok(fx)
    }

    /// Client `c`'s `resources/subscribe` (`subscribe`) or
    /// `resources/unsubscribe` of exposed `uri` on upstream `u` (`full`: it
    /// holds as many subscriptions as it may): counted per client; the
    /// upstream is asked for the first subscriber and told after the last
    /// (a 2026-07-28 upstream: its listen stream opened instead).
    pub fn toggle(&mut self, ups: &Upstreams, c: ClientId, u: UpstreamId, uri: &str, subscribe: bool, full: bool) -> (Vec<Effect>, Verdict) {
        if self.has(uri, c) == subscribe {
            // Already (un)subscribed: nothing changes.
            return (Vec::new(), Verdict::Answer);
        }
        if subscribe && full {
            return (Vec::new(), Verdict::Full);
        }
        let upstream_told = if subscribe { self.add(uri, c) } else { self.remove(uri, c) };
        let mut fx = vec![Effect::Count(c, subscribe), Effect::SessionChanged(c)];
        if !upstream_told || ups[u].is_modern() {
            if ups[u].is_modern() {
                fx.push(Effect::Listen(u));
            }
            return (fx, Verdict::Answer);
        }
        (fx, Verdict::Forward)
    }

    /// Client `c` (a listen stream of it) subscribes to exposed `uri`; the
    /// upstream is asked for the first subscriber.
    pub fn subscribe(&mut self, ups: &Upstreams, catalog: &Catalog, c: ClientId, uri: &str) -> Vec<Effect> {
        let mut fx = Vec::new();
        if self.has(uri, c) || !self.add(uri, c) {
            return fx;
        }
        if let Some((u, orig)) = ups.route_uri(catalog, uri) {
            tell_upstream(&mut fx, ups, u, &orig, true);
        }
        fx
    }

    /// Client `c` (taken over from another replica) is subscribed to `uri`
    /// again, counted as its own `resources/subscribe` is.
    #[cfg(feature = "cluster")]
    pub fn resubscribe(&mut self, ups: &Upstreams, catalog: &Catalog, c: ClientId, uri: &str) -> Vec<Effect> {
        let mut fx = vec![Effect::Count(c, true)];
        fx.extend(self.subscribe(ups, catalog, c, uri));
        fx
    }

    /// Client `c` no longer wants `uri` (no stream of it does).
    pub fn unsubscribe(&mut self, ups: &Upstreams, catalog: &Catalog, c: ClientId, uri: &str) -> Vec<Effect> {
        let mut fx = Vec::new();
        if self.remove(uri, c) {
            if let Some((u, orig)) = ups.route_uri(catalog, uri) {
                tell_upstream(&mut fx, ups, u, &orig, false);
            }
        }
        fx
    }

    /// Resource URIs (the upstream's own) the hub's clients want updates of
    /// from `u`.
    pub fn uris_of(&self, ups: &Upstreams, catalog: &Catalog, u: UpstreamId) -> Vec<String> {
        self.by_uri.keys().filter_map(|uri| ups.route_uri(catalog, uri)).filter(|(to, _)| *to == u).map(|(_, o)| o).collect()
    }

    /// Upstream `u` became ready: the log level and the subscriptions of
    /// its resources are restored.
    pub fn restore(&self, ups: &Upstreams, catalog: &Catalog, u: UpstreamId) -> Vec<Effect> {
        let mut fx = Vec::new();
        if let Some(level) = self.level {
            if ups[u].has_cap("logging") {
                set_level(&mut fx, ups, u, level);
            }
        }
        if ups[u].is_modern() {
            fx.push(Effect::Listen(u));
            return fx;
        }
        for orig in self.uris_of(ups, catalog, u) {
            fx.push(Effect::Send(u, Method::ResourcesSubscribe, uri_params(&orig)));
        }
        fx
    }

    /// A gone client's subscriptions: unsubscribe upstream where it was the last.
    pub fn drop_client(&mut self, ups: &Upstreams, catalog: &Catalog, c: ClientId) -> Vec<Effect> {
        let mut fx = Vec::new();
        for uri in self.of_client(c) {
            if self.remove(&uri, c) {
                if let Some((u, orig)) = ups.route_uri(catalog, &uri) {
                    tell_upstream(&mut fx, ups, u, &orig, false);
                }
            }
        }
        fx
    }
}
