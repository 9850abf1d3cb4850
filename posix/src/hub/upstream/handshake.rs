//! The client side of the handshake with one upstream: the `server/discover`
//! probe, its fallback to `initialize` and the late probe (see the module
//! docs above), up to `Ready` or a failed start. Each step changes the
//! link and answers with the [`Effect`]s the hub applies in order.

use mcpx_core::error::ErrorCode;
use mcpx_core::meta;
use mcpx_core::method::Method;
use mcpx_core::revision::{self, Era, Feature, Revisions};
use serde_json::{json, Value};

use super::super::pending::{Fwd, Origin};
use super::super::request::MODERN;
use super::super::wire::Msg;
use super::super::{HubOptions, Level, UpstreamId};
use super::{Effect, LateProbe, State, Upstream, Upstreams};

impl Upstreams {
    /// `u`'s process is up: a process it replaced without an exit is gone,
    /// and the handshake begins (the probe, or `initialize` for a server
    /// known to be legacy or allowed no modern revision).
    pub(in crate::hub) fn on_started(&mut self, u: UpstreamId, now: u64, opts: &HubOptions) -> Vec<Effect> {
        let mut fx = Vec::new();
        let Some(up) = self.0.get_mut(u).filter(|up| !matches!(up.state, State::Removed | State::Replacing)) else { return fx };
        if !matches!(up.state, State::Down { .. } | State::GaveUp { .. } | State::Asleep { .. }) {
            fx.push(up.gone(u, "restarted"));
        }
        up.state = State::Initializing;
        up.starts += 1;
        up.last_start_ms = now;
        up.last_heard_ms = now;
        up.rev = None;
        up.listen = None;
        up.level_sent = None;
        up.reprobed = false;
        up.late = None;
        // Requirement: versioning-dual-era-client-probe-discover-first-stdio, versioning-era-cache
        let probe = up.allowed.contains(&MODERN) && up.era_cache != Some(Era::Legacy);
        if probe {
            let t = if up.patient { opts.init_timeout_ms } else { opts.probe_timeout_ms };
            fx.push(Effect::Send { u, method: Method::ServerDiscover, params: None, origin: Origin::Discover, timeout: t });
        } else {
            up.send_initialize(u, None, opts, &mut fx);
        }
        fx
    }

    /// The answer `m` to the `server/discover` probe: modern when it lists
    /// 2026-07-28, else (any error, any other answer) `initialize`.
    pub(in crate::hub) fn on_discover_answer(&mut self, u: UpstreamId, m: &Msg, opts: &HubOptions) -> Vec<Effect> {
        let mut fx = Vec::new();
        self.0[u].discover_answered(u, m, opts, &mut fx);
        fx
    }

    /// The answer `m` to `initialize`.
    pub(in crate::hub) fn on_initialize_answer(&mut self, u: UpstreamId, m: &Msg) -> Vec<Effect> {
        let mut fx = Vec::new();
        self.0[u].initialize_answered(u, m, &mut fx);
        fx
    }

    /// The probe `f` (request `id`, `waited` ms) got no answer in time:
    /// `initialize` now, the probe kept open as long as start-up may take;
    /// or, when that late window closed too, `initialize` decides.
    pub(in crate::hub) fn on_probe_timeout(&mut self, u: UpstreamId, id: u64, f: Fwd, now: u64, opts: &HubOptions) -> Vec<Effect> {
        let mut fx = Vec::new();
        let up = &mut self.0[u];
        if let Some(LateProbe::Waiting { id: late, .. }) = up.late {
            if late == id {
                up.late_discover_answered(u, None, &mut fx);
                return fx;
            }
        }
        let sent_ms = f.sent_ms();
        let waited = now.saturating_sub(sent_ms);
        // Requirement: versioning-dual-era-client-probe-discover-first-stdio (fall back on a timeout)
        // The usual way a slow 2026-07-28 server's era is learned: said once
        // it is known (`era_learned_late`), not as a fault on the way.
        fx.push(Effect::Log(Level::Debug, format!("server '{}' did not answer server/discover within {waited} ms; trying initialize", up.spec.name)));
        up.era_cache = Some(Era::Legacy);
        let until = sent_ms + opts.init_timeout_ms;
        if until > now {
            fx.push(Effect::KeepOpen { u, id, f, until });
            up.late = Some(LateProbe::Waiting { id, refused: None });
        }
        up.send_initialize(u, None, opts, &mut fx);
        fx
    }

    /// `u` did not answer `initialize` within `init_timeout_ms`: its start
    /// failed (no `notifications/cancelled` for it).
    pub(in crate::hub) fn on_initialize_timeout(&mut self, u: UpstreamId, opts: &HubOptions) -> Vec<Effect> {
        // Requirement: lifecycle-cancel-not-initialize (no notifications/cancelled)
        let why = format!("did not answer initialize within {} ms", opts.init_timeout_ms);
        let up = &mut self.0[u];
        let fx = vec![Effect::Log(Level::Error, format!("server '{}' {why}", up.spec.name)), Effect::Restart(u, "initialize timed out")];
        up.last_error = Some(why);
        up.state = State::Failed;
        up.settled = true;
        fx
    }

    /// `u` did not answer a health-check ping within `waited` ms: restarted.
    pub(in crate::hub) fn on_ping_timeout(&mut self, u: UpstreamId, waited: u64) -> Vec<Effect> {
        // Requirement: ping-timeout-is-connection-failure
        let why = format!("did not answer ping within {waited} ms");
        let up = &mut self.0[u];
        let fx = vec![Effect::Log(Level::Error, format!("server '{}' {why}; restarting it", up.spec.name)), Effect::Restart(u, "ping timed out")];
        up.last_error = Some(why);
        up.state = State::Failed;
        fx
    }
}

impl Upstream {
    /// Sends `initialize`, offering the newest legacy revision allowed and,
    /// when `listed` is given, also in that list (an upstream's `supported`).
    fn send_initialize(&mut self, u: UpstreamId, listed: Option<&[String]>, opts: &HubOptions, fx: &mut Vec<Effect>) {
        let pick = self.allowed.iter().rev().copied().find(|r| r.era() == Era::Legacy && listed.is_none_or(|l| l.iter().any(|s| s == r.as_str())));
        let Some(rev) = pick else {
            let why = match listed {
                Some(l) => format!("answered server/discover with UnsupportedProtocolVersionError (supported: {}); none of them is allowed with it", l.join(", ")),
                None => "answered server/discover without 2026-07-28, and no legacy revision is allowed with it".to_string(),
            };
            return self.start_failed(u, why, "no common protocol revision", fx);
        };
        let elicitation = if rev.supports(Feature::ElicitationUrlMode) { json!({ "form": {}, "url": {} }) } else { json!({}) };
        // Tool use in sampling is relayed to clients that declare it (and
        // refused to the upstream otherwise), like URL elicitation.
        let sampling = if rev.supports(Feature::SamplingTools) { json!({ "tools": {} }) } else { json!({}) };
        let mut caps = json!({ "roots": { "listChanged": true }, "sampling": sampling, "elicitation": elicitation });
        if let Some(o) = caps.as_object_mut() {
            super::super::apps::declare(o);
        }
        let params = json!({
            "protocolVersion": rev.as_str(),
            "capabilities": caps,
            "clientInfo": { "name": opts.server_name, "version": opts.server_version },
        });
        let params = Some(serde_json::to_vec(&params).unwrap_or_default());
        fx.push(Effect::Send { u, method: Method::Initialize, params, origin: Origin::Initialize, timeout: opts.init_timeout_ms });
    }

    fn discover_answered(&mut self, u: UpstreamId, m: &Msg, opts: &HubOptions, fx: &mut Vec<Effect>) {
        let name = &self.spec.name;
        let v: Value = m.result_bytes().and_then(|r| serde_json::from_slice(r).ok()).unwrap_or(Value::Null);
        let modern = v.get("supportedVersions").and_then(Value::as_array).is_some_and(|a| a.iter().any(|x| x.as_str() == Some(MODERN.as_str()))) && self.allowed.contains(&MODERN);
        if let Some(LateProbe::Waiting { id, .. }) = self.late {
            if m.id_u64() == Some(id) {
                return self.late_discover_answered(u, modern.then_some(v), fx);
            }
        }
        if modern {
            return self.become_modern(u, &v, fx);
        }
        let err: Value = m.error_bytes().and_then(|e| serde_json::from_slice(e).ok()).unwrap_or(Value::Null);
        let code = err.get("code").and_then(Value::as_i64).and_then(ErrorCode::from_code);
        // Requirement: versioning-fallback-not-keyed-to-one-code: any
        // error but a modern server's UnsupportedProtocolVersionError is
        // the expected answer of a legacy server.
        if m.error_bytes().is_some() && code != Some(ErrorCode::UnsupportedProtocolVersion) {
            fx.push(Effect::Log(Level::Debug, format!("server '{name}' is a legacy server; using initialize")));
            self.era_cache = Some(Era::Legacy);
            return self.send_initialize(u, None, opts, fx);
        }
        let why = match m.error_bytes() {
            Some(e) => format!("answered server/discover with an error ({})", String::from_utf8_lossy(e)),
            None => "does not list 2026-07-28 in supportedVersions".to_string(),
        };
        // Requirement: stdio-no-fallback-on-modern-error: an
        // UnsupportedProtocolVersionError is a modern server's answer; only
        // a version it lists is used, so `initialize` only with a listed
        // legacy revision, never as a blind fallback.
        if code == Some(ErrorCode::UnsupportedProtocolVersion) {
            if let Some(list) = err.pointer("/data/supported").and_then(Value::as_array) {
                let list: Vec<String> = list.iter().filter_map(Value::as_str).map(str::to_string).collect();
                // Requirement: versioning-client-retry-with-supported: a
                // version both sides speak is retried, the modern one first.
                if list.iter().any(|s| s == MODERN.as_str()) && self.allowed.contains(&MODERN) && !self.reprobed {
                    self.reprobed = true;
                    fx.push(Effect::Log(Level::Info, format!("server '{name}' {why}; retrying server/discover with {}", MODERN.as_str())));
                    fx.push(Effect::Send { u, method: Method::ServerDiscover, params: None, origin: Origin::Discover, timeout: opts.probe_timeout_ms });
                    return;
                }
                fx.push(Effect::Log(Level::Info, format!("server '{name}' {why}; choosing from its supported versions")));
                self.era_cache = None;
                return self.send_initialize(u, Some(&list), opts, fx);
            }
        }
        fx.push(Effect::Log(Level::Info, format!("server '{name}' {why}; using initialize")));
        self.era_cache = Some(Era::Legacy);
        self.send_initialize(u, None, opts, fx)
    }

    /// The probe's answer after the fallback to `initialize` (`modern`: its
    /// DiscoverResult when it lists 2026-07-28; `None`: none came in time).
    fn late_discover_answered(&mut self, u: UpstreamId, modern: Option<Value>, fx: &mut Vec<Effect>) {
        let Some(LateProbe::Waiting { refused, .. }) = self.late.take() else { return };
        let name = &self.spec.name;
        match (modern, refused) {
            _ if self.state != State::Initializing => {
                fx.push(Effect::Log(Level::Debug, format!("server '{name}' answered server/discover late, after initialize; ignored")));
            }
            (Some(v), Some(_)) => {
                fx.push(era_learned_late(name));
                self.become_modern(u, &v, fx);
            }
            (Some(v), None) => self.late = Some(LateProbe::Modern(v)),
            (None, Some((why, short))) => {
                // Requirement: the next start does not repeat this sequence unchanged.
                self.patient = true;
                self.initialize_refused(u, why, short, fx);
            }
            (None, None) => {}
        }
    }

    /// Spoken to in 2026-07-28 from its DiscoverResult `v`.
    fn become_modern(&mut self, u: UpstreamId, v: &Value, fx: &mut Vec<Effect>) {
        self.late = None;
        self.patient = false;
        self.era_cache = Some(Era::Modern);
        self.rev = Some(MODERN);
        self.caps = Some(v.get("capabilities").cloned().filter(Value::is_object).unwrap_or_else(|| json!({})));
        self.info = v.pointer(&format!("/_meta/{}", meta::SERVER_INFO_KEY.replace('/', "~1"))).cloned().unwrap_or(Value::Null);
        self.instructions = v.get("instructions").and_then(Value::as_str).map(str::to_string);
        self.state = State::Ready;
        self.last_error = None;
        fx.push(Effect::Log(Level::Info, format!("server '{}' ready ({})", self.spec.name, MODERN.as_str())));
        fx.push(Effect::Ready(u));
    }

    /// Failed to come up (`why`): `Failed`, and restarted.
    fn start_failed(&mut self, u: UpstreamId, why: String, short: &'static str, fx: &mut Vec<Effect>) {
        fx.push(Effect::Log(Level::Error, format!("server '{}': {why}", self.spec.name)));
        self.last_error = Some(why);
        self.state = State::Failed;
        self.settled = true;
        fx.push(Effect::Restart(u, short));
        fx.push(Effect::Settled);
    }

    /// Its answer to `initialize` is of no use (`why`): a late modern
    /// answer to the probe wins, a probe still open is waited for, else the
    /// start failed.
    fn initialize_refused(&mut self, u: UpstreamId, why: String, short: &'static str, fx: &mut Vec<Effect>) {
        match self.late.take() {
            Some(LateProbe::Modern(v)) => {
                fx.push(era_learned_late(&self.spec.name));
                return self.become_modern(u, &v, fx);
            }
            Some(LateProbe::Waiting { id, refused: None }) => {
                fx.push(Effect::Log(Level::Debug, format!("server '{}' {why}; waiting for its answer to server/discover", self.spec.name)));
                self.late = Some(LateProbe::Waiting { id, refused: Some((why, short)) });
                return;
            }
            _ => {}
        }
        // The era assumption may be wrong: probe again on the next start.
        self.era_cache = None;
        self.start_failed(u, why, short, fx);
    }

    fn initialize_answered(&mut self, u: UpstreamId, m: &Msg, fx: &mut Vec<Effect>) {
        let Some(res) = m.result_bytes() else {
            let e = String::from_utf8_lossy(m.error_bytes().unwrap_or_default());
            return self.initialize_refused(u, format!("initialize failed: {e}"), "initialize failed", fx);
        };
        let v: Value = serde_json::from_slice(res).unwrap_or(Value::Null);
        let pv = v.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
        let allowed: Revisions = self.allowed.iter().copied().collect();
        let Ok(rev) = revision::negotiate_client(pv, allowed) else {
            // Requirement: lifecycle-client-disconnects-on-unsupported-version
            return self.initialize_refused(u, format!("answered initialize with protocol version '{pv}', which mcpx does not speak with it"), "unsupported protocol version", fx);
        };
        self.patient = false;
        self.rev = Some(rev);
        self.caps = Some(v.get("capabilities").cloned().filter(Value::is_object).unwrap_or_else(|| json!({})));
        self.info = v.get("serverInfo").cloned().unwrap_or(Value::Null);
        self.instructions = v.get("instructions").and_then(Value::as_str).map(str::to_string);
        self.state = State::Ready;
        self.last_error = None;
        fx.push(Effect::Initialized(u));
        fx.push(Effect::Log(Level::Info, format!("server '{}' ready ({})", self.spec.name, rev.as_str())));
        fx.push(Effect::Ready(u));
    }
}

/// A slow 2026-07-28 server's first start, said once: its answer to
/// `server/discover` came after the probe's wait, and `initialize` was
/// refused meanwhile, as such a server refuses it.
fn era_learned_late(name: &str) -> Effect {
    Effect::Log(Level::Info, format!("server '{name}' speaks {} (learned from its late answer to server/discover)", MODERN.as_str()))
}
