//! Lazy start and idle stop: a server may stay stopped until a client
//! uses it, and be stopped again after it has been idle.
//!
//! A sleeping server (`State::Asleep`) keeps what it offered in the catalog:
//! its last listing, given by the runtime from its caches (the disk, the
//! replicas' shared store: [`Hub::seed_lists`]) or kept when the hub put it
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
//! again once it listed ([`Hub::unlisted_owner`]). A request that cannot
//! wait is told the server is starting or restarting, and when to retry.
//! A ready server with `idle_ms` set and no client request in flight to it
//! for that long is put to sleep (`Power::Stop`); the exit of its process
//! that follows keeps its catalog.

use mcpx_core::error::ErrorCode;
use mcpx_core::names;
use serde_json::{json, Value};

use super::catalog::Kind;
use super::upstream::State;
use super::request::ReqCtx;
use super::wire::Msg;
use super::{ClientId, Hub, Level, Output, UpstreamId};

/// What the hub asks the runtime to do with a server's process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Power {
    /// Start it (a request is waiting for it); then `upstream_started`.
    Start,
    /// Stop it (idle); then `upstream_exited`. Save its lists first
    /// ([`Hub::upstream_lists`]) to know its tools at the next start of mcpx.
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

impl Hub {
    /// Every request forwarded to `u` comes here first: the use is noted
    /// (idle stop; its answer is noted too); when `u` sleeps, the request is
    /// parked and `u` woken, and the answer is true. So is it while a start
    /// of `u` is awaited (woken, restarting with a changed entry, or first
    /// started with its lists known from the runtime: [`Hub::seed_lists`])
    /// until it is up or fails.
    pub(super) fn park_if_asleep(&mut self, u: UpstreamId, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>) -> bool {
        self.ups[u].last_used_ms = self.now_ms;
        let asleep = self.ups[u].is_asleep();
        let starting = self.ups[u].start_awaited && matches!(self.ups[u].state, State::Down { .. } | State::Initializing | State::Replacing);
        if !asleep && !starting {
            return false;
        }
        self.park_for_start(u, c, m, ctx)
    }

    /// Parks request `m` until `u` is up (or its `timeout_ms` passed),
    /// waking `u` if it sleeps; false at the cap (`max_pending`).
    pub(super) fn park_for_start(&mut self, u: UpstreamId, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>) -> bool {
        if self.parked.len() >= self.opts.max_pending {
            return false; // answered as for any server that is not running
        }
        let waking = self.parked_for(u);
        let deadline = self.now_ms + self.ups[u].spec.timeout_ms;
        if let State::Down { retry_at_ms: Some(at) } = self.ups[u].state {
            if at > deadline {
                return false; // told when it restarts instead
            }
        }
        let id = m.id_bytes().unwrap_or(b"null").to_vec();
        self.parked.push(Parked { u, c, raw: m.env.bytes().to_vec(), id, deadline, ctx: ctx.cloned() });
        if self.ups[u].is_asleep() && !waking {
            let name = self.ups[u].spec.name.clone();
            self.log(Level::Info, format!("server '{name}': starting it for a request (lazy start)"));
            self.ups[u].start_awaited = true;
            self.out.push_back(Output::Power(u, Power::Start));
        }
        true
    }

    /// The configured server not listed yet (its first start, nothing
    /// cached) that a tool named `name` would be of: one whose prefix it
    /// starts with, else one without a prefix. A call for such a name waits
    /// for that server ([`Hub::park_for_start`]) and is routed again once it
    /// listed, or is told it is starting (`stages`).
    pub(super) fn unlisted_owner(&self, name: &str) -> Option<UpstreamId> {
        let sep = &self.opts.separator;
        let legacy = names::legacy_separator(sep);
        let unlisted = || (0..self.ups.len()).filter(|&u| {
            let up = &self.ups[u];
            up.caps.is_none() && !matches!(up.state, State::Removed | State::Ready) && !self.is_instance(u)
        });
        let prefixed = unlisted().filter(|&u| !self.ups[u].spec.prefix.is_empty()).find(|&u| {
            let e = names::expose_detail(&self.ups[u].spec.prefix, legacy, "", 0);
            name.starts_with(e.applied_prefix()) || names::respell(&e, sep).is_some_and(|d| name.starts_with(d.applied_prefix()))
        });
        prefixed.or_else(|| unlisted().find(|&u| self.ups[u].spec.prefix.is_empty()))
    }

    /// Are requests parked for `u`?
    pub(super) fn parked_for(&self, u: UpstreamId) -> bool {
        self.parked.iter().any(|p| p.u == u)
    }

    /// Takes the parked requests `which` selects out of the table.
    fn take_parked(&mut self, which: impl Fn(&Parked) -> bool) -> Vec<Parked> {
        let (taken, rest) = std::mem::take(&mut self.parked).into_iter().partition(which);
        self.parked = rest;
        taken
    }

    /// `u` is up with its lists read: its parked requests are served.
    pub(super) fn release_parked(&mut self, u: UpstreamId) {
        for p in self.take_parked(|p| p.u == u) {
            if !self.clients.contains_key(&p.c) {
                continue;
            }
            match p.ctx {
                None => self.on_client_message(p.c, &p.raw),
                Some(ctx) => self.route_normalized(p.c, &p.raw, ctx),
            }
        }
    }

    /// Parked requests of `u` are answered with an error saying `why`.
    fn fail_parked(&mut self, u: UpstreamId, why: &str) {
        let name = self.ups[u].spec.name.clone();
        for p in self.take_parked(|p| p.u == u) {
            let msg = format!("server '{name}' {why}");
            self.answer_error(p.c, Some(&p.id), ErrorCode::InternalError, &msg, Some(json!({ "server": name })));
        }
    }

    /// A start the hub awaited failed (the process exited before it was up);
    /// requests from now on are not parked for it.
    pub(super) fn wake_failed(&mut self, u: UpstreamId, reason: &str) {
        self.ups[u].start_awaited = false;
        if self.parked_for(u) {
            self.fail_parked(u, &format!("could not be started ({reason})"));
        }
    }

    /// Time passed: parked requests past their deadline fail; idle servers sleep.
    pub(super) fn lazy_tick(&mut self) {
        let now = self.now_ms;
        for p in self.take_parked(|p| p.deadline <= now) {
            let name = self.ups[p.u].spec.name.clone();
            let t = self.ups[p.u].spec.timeout_ms;
            let msg = format!("server '{name}' did not start within {t} ms (its timeoutMs); try again later");
            self.answer_error(p.c, Some(&p.id), ErrorCode::InternalError, &msg, Some(json!({ "server": name, "timeoutMs": t })));
        }
        for u in 0..self.ups.len() {
            if self.idle_due(u).is_some_and(|at| at <= now) {
                let name = self.ups[u].spec.name.clone();
                let idle = self.ups[u].spec.idle_ms;
                self.log(Level::Info, format!("server '{name}': idle for {idle} ms; stopping it until it is used"));
                if self.ups[u].stop_to_sleep() {
                    self.out.push_back(Output::Power(u, Power::Stop));
                }
            }
        }
    }

    /// When `u` is to be put to sleep, if it may be.
    fn idle_due(&self, u: UpstreamId) -> Option<u64> {
        let up = &self.ups[u];
        let idle = up.spec.idle_ms;
        if idle == 0 || !up.is_ready() || !up.settled || self.pending.busy(u) {
            return None;
        }
        Some(up.last_used_ms.max(up.last_start_ms) + idle)
    }

    pub(super) fn lazy_deadline(&self) -> Option<u64> {
        let parked = self.parked.iter().map(|p| p.deadline).min();
        let idle = (0..self.ups.len()).filter_map(|u| self.idle_due(u)).min();
        parked.into_iter().chain(idle).min()
    }

    /// The lists a server offered when it last ran (from the runtime's
    /// caches, as [`Hub::upstream_lists`] gave them): known at once. A lazy
    /// server sleeps until it is used; another is being started, and the
    /// requests for it wait for that start. Ignored once `u` was started.
    pub(super) fn on_seed_lists(&mut self, u: UpstreamId, v: &Value, hold: bool) {
        let Some(up) = self.ups.get_mut(u) else { return };
        if !matches!(up.state, State::Down { .. }) || up.starts > 0 {
            return;
        }
        if up.spec.lazy {
            up.state = State::Asleep { stopping: false };
        } else {
            up.start_awaited = true;
        }
        up.settled = up.spec.lazy || !hold;
        up.caps = v.get("capabilities").cloned().filter(Value::is_object);
        up.instructions = v.get("instructions").and_then(Value::as_str).map(String::from);
        for k in Kind::ALL {
            let items = v.get(k.result_key()).and_then(Value::as_array).cloned().unwrap_or_default();
            self.set_items(u, k, items);
        }
        // Settled: requests held for the startup may go now.
        self.release_held_inits();
    }

    /// What `u` offers (capabilities, instructions, each list as listed and
    /// filtered), for the runtime's cache; `None` before it was ever listed.
    pub(super) fn lists_json(&self, u: UpstreamId) -> Option<Value> {
        let up = self.ups.get(u)?;
        let caps = up.caps.clone()?;
        let mut v = json!({ "capabilities": caps, "instructions": up.instructions });
        for k in Kind::ALL {
            v[k.result_key()] = Value::Array(self.catalog.items(u, k).to_vec());
        }
        Some(v)
    }
}
