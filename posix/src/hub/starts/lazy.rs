//! Lazy start and idle stop: a server may stay stopped until a client
//! uses it, and be stopped again after it has been idle.
//!
//! A sleeping server (`State::Asleep`) keeps what it offered in the catalog:
//! its last listing, given by the runtime from its caches (the disk, the
//! replicas' shared store: `Input::SeedLists`) or kept when the hub put it
//! to sleep. The runtime keeps them when told (`Output::ListsRead`). A request
//! routed to it is parked and the hub asks the runtime to start it
//! (`Output::Power(u, Power::Start)`). Once it is up and its lists are read,
//! the parked requests are served as if they had just come; if it is not up
//! within the server's `timeout_ms`, each is answered with an error naming it.
//! Requests that come while the start is awaited are parked too; so are
//! those for a server that is not lazy whose lists the runtime gave before
//! its first start (from its disk cache or another replica): it is listed at
//! once, and a call waits for it rather than fail as an unknown tool; and
//! those for a server restarting with a changed entry (`Replacing`), whose
//! catalog is kept. A configured server is never unknown: a `tools/call`
//! for a name the catalog lacks waits for a server whose tools are not known
//! yet and whose prefix the name has (or that has none), and is routed
//! again once it listed ([`Starts::unlisted_owner`]). A request that cannot
//! wait is told the server is starting or restarting, and when to retry.
//! A ready server with `idle_ms` set and no client request in flight to it
//! for that long is put to sleep (`Power::Stop`); the exit of its process
//! that follows keeps its catalog.

use mcpx_core::names;
use serde_json::{json, Value};

use super::super::catalog::{Catalog, Kind};
use super::super::request::ReqCtx;
use super::super::upstream::{State, Upstream};
use super::super::wire::Msg;
use super::{ClientId, Effect, Level, Starts, UpstreamId};

/// What the hub asks the runtime to do with a server's process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Power {
    /// Start it (a request is waiting for it); then `Input::UpstreamStarted`.
    Start,
    /// Stop it (idle); then `Input::UpstreamExited`. Save its lists first
    /// (`Hub::upstream_lists`) to know its tools at the next start of mcpx.
    Stop,
}

/// A request waiting for its server to start.
pub(super) struct Parked {
    u: UpstreamId,
    c: ClientId,
    /// The message as the client sent it, served again once `u` is up.
    raw: Vec<u8>,
    id: Vec<u8>,
    deadline: u64,
    /// A modern request's context: `raw` is its normalized form, routed
    /// again with it (its `_meta` is gone).
    ctx: Option<ReqCtx>,
}

impl Starts {
    /// Every request forwarded to `u` (`up`) comes here first: the use is
    /// noted (idle stop; its answer is noted too); when `u` sleeps, the
    /// request is parked and `u` woken: `Some`, with what the hub does for
    /// it. So it is while a start of `u` is awaited (woken, restarting with
    /// a changed entry, or first started with its lists known from the
    /// runtime: [`seed`]) until it is up or fails. `None` (nothing to do, no
    /// allocation): the request goes on.
    pub(in crate::hub) fn park_if_asleep(&mut self, up: &mut Upstream, u: UpstreamId, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>, now: u64) -> Option<Vec<Effect>> {
        up.last_used_ms = now;
        let asleep = up.is_asleep();
        let starting = up.start_awaited && matches!(up.state, State::Down { .. } | State::Initializing | State::Replacing);
        if !asleep && !starting {
            return None;
        }
        self.park(up, u, c, m, ctx, now)
    }

    /// Parks request `m` until `u` (`up`) is up (or its `timeout_ms`
    /// passed), waking `u` if it sleeps; `None` at the cap (`max_pending`).
    pub(in crate::hub) fn park(&mut self, up: &mut Upstream, u: UpstreamId, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>, now: u64) -> Option<Vec<Effect>> {
        if self.parked.len() >= self.max_pending {
            return None; // answered as for any server that is not running
        }
        let waking = self.parked_for(u);
        let deadline = now + up.spec.timeout_ms;
        if let State::Down { retry_at_ms: Some(at) } = up.state {
            if at > deadline {
                return None; // told when it restarts instead
            }
        }
        let id = m.id_bytes().unwrap_or(b"null").to_vec();
        let mut fx = Vec::new();
        #[cfg(feature = "traces")]
        fx.push(Effect::Parked { c, id: id.clone() });
        self.parked.push(Parked { u, c, raw: m.env.bytes().to_vec(), id, deadline, ctx: ctx.cloned() });
        if up.is_asleep() && !waking {
            let name = &up.spec.name;
            fx.push(Effect::Log(Level::Info, format!("server '{name}': starting it for a request (lazy start)")));
            up.start_awaited = true;
            fx.push(Effect::Start(u));
        }
        Some(fx)
    }

    /// The configured server not listed yet (its first start, nothing
    /// cached) that a tool named `name` would be of: one whose prefix it
    /// starts with, else one without a prefix. A call for such a name waits
    /// for that server ([`Starts::park`]) and is routed again once it
    /// listed, or is told it is starting (`stages`).
    pub(in crate::hub) fn unlisted_owner(&self, name: &str, ups: &[Upstream]) -> Option<UpstreamId> {
        let sep = &self.separator;
        let legacy = names::legacy_separator(sep);
        let unlisted = || (0..ups.len()).filter(|&u| {
            let up = &ups[u];
            up.caps.is_none() && !matches!(up.state, State::Removed | State::Ready) && !self.is_instance(u)
        });
        let prefixed = unlisted().filter(|&u| !ups[u].spec.prefix.is_empty()).find(|&u| {
            let e = names::expose_detail(&ups[u].spec.prefix, legacy, "", 0);
            name.starts_with(e.applied_prefix()) || names::respell(&e, sep).is_some_and(|d| name.starts_with(d.applied_prefix()))
        });
        prefixed.or_else(|| unlisted().find(|&u| ups[u].spec.prefix.is_empty()))
    }

    /// Are requests parked for `u`?
    pub(in crate::hub) fn parked_for(&self, u: UpstreamId) -> bool {
        self.parked.iter().any(|p| p.u == u)
    }

    /// Takes the parked requests `which` selects out of the table.
    fn take_parked(&mut self, which: impl Fn(&Parked) -> bool) -> Vec<Parked> {
        let (taken, rest) = std::mem::take(&mut self.parked).into_iter().partition(which);
        self.parked = rest;
        taken
    }

    /// `u` is up with its lists read: its parked requests are served.
    pub(in crate::hub) fn release(&mut self, u: UpstreamId) -> Vec<Effect> {
        self.take_parked(|p| p.u == u).into_iter().map(|p| Effect::Serve { c: p.c, raw: p.raw, ctx: p.ctx }).collect()
    }

    /// Parked requests of `u` (named `name`) are answered with an error
    /// saying `why`.
    fn fail_parked(&mut self, u: UpstreamId, name: &str, why: &str) -> Vec<Effect> {
        let fail = |p: Parked| Effect::Fail { c: p.c, id: p.id, msg: format!("server '{name}' {why}"), data: json!({ "server": name }) };
        self.take_parked(|p| p.u == u).into_iter().map(fail).collect()
    }

    /// A start of `u` (`up`) the hub awaited failed (the process exited
    /// before it was up); requests from now on are not parked for it.
    pub(in crate::hub) fn wake_failed(&mut self, up: &mut Upstream, u: UpstreamId, reason: &str) -> Vec<Effect> {
        up.start_awaited = false;
        #[cfg(feature = "secrets")]
        if let Some(i) = self.asks.iter().position(|(x, _)| *x == u) {
            let (_, ask) = self.asks.swap_remove(i);
            // It sleeps: the next call starts it again, with the tokens or asking again.
            up.state = State::Asleep { stopping: false };
            let asked = |p: Parked| Effect::AskUrl { c: p.c, id: p.id, raw: p.raw, ctx: p.ctx, ask: ask.clone() };
            return self.take_parked(|p| p.u == u).into_iter().map(asked).collect();
        }
        self.fail_parked(u, &up.spec.name, &format!("could not be started ({reason})"))
    }

    /// Instance `u` cannot start until its principal authorizes at `ask`.
    #[cfg(feature = "secrets")]
    pub(in crate::hub) fn asked(&mut self, u: UpstreamId, ask: super::super::UrlAsk) {
        self.asks.retain(|(x, _)| *x != u);
        self.asks.push((u, ask));
    }

    /// Time passed: parked requests past their deadline fail; idle servers sleep.
    pub(super) fn lazy_tick(&mut self, now: u64, ups: &[Upstream], busy: &dyn Fn(UpstreamId) -> bool) -> Vec<Effect> {
        let mut fx: Vec<Effect> = self
            .take_parked(|p| p.deadline <= now)
            .into_iter()
            .map(|p| {
                let name = &ups[p.u].spec.name;
                let t = ups[p.u].spec.timeout_ms;
                let msg = format!("server '{name}' did not start within {t} ms (its timeoutMs); try again later");
                Effect::Fail { c: p.c, id: p.id, msg, data: json!({ "server": name, "timeoutMs": t }) }
            })
            .collect();
        for (u, up) in ups.iter().enumerate() {
            if idle_due(up, busy(u)).is_some_and(|at| at <= now) {
                let (name, idle) = (&up.spec.name, up.spec.idle_ms);
                fx.push(Effect::Sleep(u, format!("server '{name}': idle for {idle} ms; stopping it until it is used")));
            }
        }
        fx
    }

    pub(super) fn lazy_deadline(&self, ups: &[Upstream], busy: &dyn Fn(UpstreamId) -> bool) -> Option<u64> {
        let parked = self.parked.iter().map(|p| p.deadline).min();
        let idle = ups.iter().enumerate().filter_map(|(u, up)| idle_due(up, busy(u))).min();
        parked.into_iter().chain(idle).min()
    }
}

/// When `up` is to be put to sleep, if it may be (`busy`: a client
/// request to it is in flight).
fn idle_due(up: &Upstream, busy: bool) -> Option<u64> {
    let idle = up.spec.idle_ms;
    if idle == 0 || !up.is_ready() || !up.settled || busy {
        return None;
    }
    Some(up.last_used_ms.max(up.last_start_ms) + idle)
}

/// The lists server `u` (`up`) offered when it last ran (from the runtime's
/// caches, as [`lists`] gave them): known at once. A lazy server sleeps
/// until it is used; another is being started, and the requests for it
/// wait for that start. Ignored (nothing to do) once `u` was started.
pub(in crate::hub) fn seed(up: &mut Upstream, u: UpstreamId, v: &Value, hold: bool) -> Vec<Effect> {
    if !matches!(up.state, State::Down { .. }) || up.starts > 0 {
        return Vec::new();
    }
    if up.spec.lazy {
        up.state = State::Asleep { stopping: false };
    } else {
        up.start_awaited = true;
    }
    up.settled = up.spec.lazy || !hold;
    up.caps = v.get("capabilities").cloned().filter(Value::is_object);
    up.instructions = v.get("instructions").and_then(Value::as_str).map(String::from);
    let mut fx: Vec<Effect> = Kind::ALL
        .into_iter()
        .map(|k| Effect::Listed(u, k, v.get(k.result_key()).and_then(Value::as_array).cloned().unwrap_or_default()))
        .collect();
    // Settled: requests held for the startup may go now.
    fx.push(Effect::Settled);
    fx
}

/// What `u` (`up`) offers (capabilities, instructions, each list as listed
/// and filtered), for the runtime's cache; `None` before it was ever listed.
pub(in crate::hub) fn lists(u: UpstreamId, up: &Upstream, catalog: &Catalog) -> Option<Value> {
    let caps = up.caps.clone()?;
    let mut v = json!({ "capabilities": caps, "instructions": up.instructions });
    for k in Kind::ALL {
        v[k.result_key()] = Value::Array(catalog.items(u, k).to_vec());
    }
    Some(v)
}
