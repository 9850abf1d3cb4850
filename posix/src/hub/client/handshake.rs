//! The server side of a legacy client's handshake, as [`Clients`] methods:
//! `initialize` (answered, or held while upstreams start), the answers
//! held until startup settles, `notifications/initialized` (the requests
//! held for it are sent), the refusal of requests before `initialize`, and
//! a session's [`Snapshot`] and adoption. What the answer offers comes in
//! as plain values ([`Offer`]: the upstreams, the catalog, the options);
//! what is to be written comes back as [`Effect`]s, which the hub applies
//! in order (`Hub::apply_clients`).

use mcpx_core::error::ErrorCode;
use mcpx_core::method::Method;
use mcpx_core::revision;
use serde_json::{json, Value};

use super::{Clients, Session, Stage, Step, KEPT_LIMITS};
use crate::hub::catalog::Catalog;
use crate::hub::starts::Starts;
use crate::hub::upstream::Upstreams;
use crate::hub::request::Refusal;
use crate::hub::shape::{self, Rev, RevExt};
use crate::hub::wire;
use crate::hub::{tasks, About, ClientId, HubOptions, Output, NOT_READY_META};
#[cfg(feature = "cluster")]
use super::Snapshot;
#[cfg(feature = "cluster")]
use crate::hub::catalog::Channel;

/// What the handshake wants written, in order.
pub(in crate::hub) enum Effect {
    /// A result the hub wrote, answering request `id` of client `c`.
    Answer { c: ClientId, id: Vec<u8>, result: Vec<u8> },
    /// An error answering request `id` of client `c`.
    Refuse { c: ClientId, id: Option<Vec<u8>>, refusal: Refusal },
    /// A request to client `c` that waited for its handshake to end.
    Send(ClientId, Vec<u8>, About),
    /// Client `c` is forgotten and its connection closed.
    Drop(ClientId),
    /// An output as it is.
    Out(Output),
}

/// What the hub offers clients now: read for an `initialize` answer.
pub(in crate::hub) struct Offer<'h> {
    pub ups: &'h Upstreams,
    pub catalog: &'h Catalog,
    pub starts: &'h Starts,
    pub opts: &'h HubOptions,
}

impl Clients {
    /// `initialize` from client `c`: answered at once when `settled`
    /// (upstreams have had their chance to come up) or when it is a second
    /// one (its handshake kept), else held.
    pub(in crate::hub) fn initialize(&mut self, c: ClientId, m: &wire::Msg, offer: &Offer<'_>, settled: bool) -> Vec<Effect> {
        if let Some((field, len, max)) = KEPT_LIMITS.iter().find_map(|&(f, max)| m.param(&[f]).map(|r| (f, r.len(), max)).filter(|x| x.1 > max)) {
            let msg = format!("Invalid params: {field} is {len} bytes, over mcpx's limit of {max} bytes for what a session keeps; send a smaller one");
            let data = json!({ "field": field, "bytes": len, "limitBytes": max });
            let refusal = Refusal(ErrorCode::InvalidParams, msg, Some(data));
            return vec![Effect::Refuse { c, id: m.id_bytes().map(<[u8]>::to_vec), refusal }, Effect::Drop(c)];
        }
        let p = m.params_value();
        let asked = p.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
        // Requirement: lifecycle-server-echoes-supported-version, lifecycle-server-counteroffers-latest
        let rev = revision::negotiate_server(asked, offer.opts.client_revisions).unwrap_or(Rev::LATEST_LEGACY);
        let id = m.id_bytes().unwrap_or(b"null").to_vec();
        let Some(cl) = self.get_mut(&c) else { return Vec::new() };
        let caps = p.get("capabilities").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
        let info = p.get("clientInfo").cloned().unwrap_or(Value::Null);
        // A second `initialize` is answered at once, its handshake kept.
        let (step, again) = match std::mem::replace(&mut cl.stage, Stage::New) {
            Stage::Legacy(s) if !matches!(s.step, Step::Held { .. }) => (s.step, true),
            _ => (Step::Held { id: id.clone(), ready: false }, false),
        };
        cl.stage = Stage::Legacy(Session { rev, caps, info, step });
        let mut fx = Vec::new();
        if again || settled {
            self.answer_initialize(c, id, offer, &mut fx);
        } else {
            self.held = true;
        }
        fx
    }

    /// Startup has settled: the `initialize` requests held are answered.
    pub(in crate::hub) fn release_held(&mut self, offer: &Offer<'_>) -> Vec<Effect> {
        let held: Vec<(ClientId, Vec<u8>)> = self
            .iter()
            .filter_map(|(k, cl)| match &cl.session()?.step {
                Step::Held { id, .. } => Some((*k, id.clone())),
                _ => None,
            })
            .collect();
        let mut fx = Vec::new();
        for (c, id) in held {
            self.answer_initialize(c, id, offer, &mut fx);
        }
        self.held = false;
        fx
    }

    /// May an `initialize` be held while upstreams start? (True from the
    /// first one held until they are answered, even if its client left.)
    pub(in crate::hub) fn any_held(&self) -> bool {
        self.held
    }

    fn answer_initialize(&mut self, c: ClientId, id: Vec<u8>, offer: &Offer<'_>, fx: &mut Vec<Effect>) {
        let Some(cl) = self.get_mut(&c) else { return };
        let rev = cl.rev();
        let f = &rev.features();
        let mut caps = offer.ups.capabilities_for(offer.catalog, cl.caps().unwrap_or(&Value::Null));
        // Requirement: tasks-declare-capability
        if tasks::declared_legacy(rev, cl.caps()) {
            caps.insert("tasks".into(), tasks::capability());
        }
        let caps = shape::server_capabilities(caps, f);
        let info = shape::implementation(json!({ "name": offer.opts.server_name, "version": offer.opts.server_version }), f);
        let mut result = json!({
            "protocolVersion": rev.as_str(),
            "capabilities": caps,
            "serverInfo": info,
            "instructions": offer.ups.instructions(offer.catalog, &offer.opts.separator, f),
        });
        let waiting = offer.ups.not_ready(|u| offer.starts.is_instance(u));
        if !waiting.is_empty() {
            result["_meta"] = json!({ NOT_READY_META: waiting });
        }
        if let Stage::Legacy(s) = &mut cl.stage {
            if let Step::Held { ready, .. } = s.step {
                s.step = if ready { Step::Ready } else { Step::Answered(Vec::new()) };
            }
        }
        fx.push(Effect::Answer { c, id, result: serde_json::to_vec(&result).unwrap_or_default() });
        fx.push(Effect::Out(Output::ClientInitialized(c, rev)));
        fx.extend(self.session_changed(c).map(Effect::Out));
    }

    /// `notifications/initialized` from client `c`: the requests held
    /// until it are sent.
    pub(in crate::hub) fn initialized(&mut self, c: ClientId) -> Vec<Effect> {
        let Some(Stage::Legacy(s)) = self.get_mut(&c).map(|cl| &mut cl.stage) else { return Vec::new() };
        let held = match &mut s.step {
            Step::Ready => return Vec::new(),
            Step::Held { ready, .. } => {
                *ready = true;
                Vec::new()
            }
            Step::Answered(held) => std::mem::take(held),
        };
        if !matches!(s.step, Step::Held { .. }) {
            s.step = Step::Ready;
        }
        let mut fx: Vec<Effect> = held.into_iter().map(|(b, about)| Effect::Send(c, b, about)).collect();
        fx.extend(self.session_changed(c).map(Effect::Out));
        fx
    }

    /// What client `c`'s session keeps ([`Snapshot`]) changed: the output
    /// saying so, for a legacy session.
    pub(in crate::hub) fn session_changed(&self, c: ClientId) -> Option<Output> {
        self.get(&c).is_some_and(|cl| cl.session().is_some()).then_some(Output::SessionChanged(c))
    }

    /// A legacy request of a client that has not sent `initialize`: only
    /// `initialize` and `ping` are taken.
    /// Requirement: lifecycle-initialization-first-interaction, lifecycle-client-no-requests-before-init-response
    pub(in crate::hub) fn before_initialize(&self, c: ClientId, m: &wire::Msg) -> Result<(), Refusal> {
        let uninitialized = self.get(&c).is_some_and(|cl| cl.session().is_none());
        if !uninitialized || matches!(m.call, Method::Initialize | Method::Ping) {
            return Ok(());
        }
        let msg = format!("Invalid request: '{}' before initialize; send initialize first (only ping is answered before it)", m.method);
        Err(Refusal(ErrorCode::InvalidRequest, msg, None))
    }

    /// What legacy client `c`'s session keeps ([`Snapshot`]), once its
    /// `initialize` is answered; `subscriptions`: the resources it
    /// subscribed to (exposed URIs).
    #[cfg(feature = "cluster")]
    pub(in crate::hub) fn snapshot(&self, c: ClientId, subscriptions: impl FnOnce() -> Vec<String>) -> Option<Snapshot> {
        let cl = self.get(&c)?;
        let s = cl.session().filter(|_| cl.initialized())?;
        Some(Snapshot {
            rev: s.rev,
            caps: s.caps.clone(),
            info: s.info.clone(),
            principal: cl.principal.clone(),
            ready: matches!(s.step, Step::Ready),
            log_level: cl.log_level,
            listed: cl.listed,
            subscriptions: subscriptions(),
        })
    }

    /// Client `c` goes on from `s`: initialized as it was, with its
    /// principal, log level and the lists it read; `fingerprint`: of a
    /// list as the client sees it now.
    #[cfg(feature = "cluster")]
    pub(in crate::hub) fn adopt(&mut self, c: ClientId, s: &Snapshot, mut fingerprint: impl FnMut(Channel) -> u64) {
        let Some(cl) = self.get_mut(&c) else { return };
        let step = if s.ready { Step::Ready } else { Step::Answered(Vec::new()) };
        cl.stage = Stage::Legacy(Session { rev: s.rev, caps: s.caps.clone(), info: s.info.clone(), step });
        cl.principal = s.principal.clone();
        cl.listed = s.listed;
        cl.log_level = s.log_level;
        for ch in Channel::ALL.into_iter().filter(|ch| s.listed[ch.idx()]) {
            cl.known_fp[ch.idx()] = fingerprint(ch);
        }
    }
}
