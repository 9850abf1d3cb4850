//! Requests the hub sent to upstreams and is waiting on.
//!
//! Keyed by (upstream, the hub's id for it). A request forwarded for a client
//! remembers the client and its raw id (restored byte for byte) and the
//! client's raw progress token; the token sent upstream is the upstream id
//! itself, so it is unique per upstream and maps back without another table.
//! Bounded by `HubOptions::max_pending`.
//!
//! The table owns each request's clock: callers open a request (a client's
//! call or the hub's own), and say what happens to it (progress, held for
//! a client's retry, resumed, made a task, kept past its expiry); none sets
//! a deadline itself.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use mcpx_core::method::Method;

use super::catalog::Kind;
use super::request::ReqCtx;
use super::{ClientId, IdKey, UpstreamId};

/// Who is waiting for the answer.
#[derive(Clone, Debug)]
pub(super) enum Origin {
    /// Forwarded for a client.
    Client {
        client: ClientId,
        /// The client's id, raw JSON (inline when short).
        id: IdKey,
        /// The client's `_meta.progressToken`, raw JSON.
        progress: Option<Vec<u8>>,
        method: Called,
        /// (upstream URI, exposed URI) when the hub renamed a resource URI:
        /// URIs in the answer are renamed back.
        renamed_uri: Option<(String, String)>,
        /// The request came in the modern era: its per-request context.
        modern: Option<Box<ReqCtx>>,
        /// Params as sent to a modern upstream, for the retry after an
        /// `InputRequiredResult` the hub answers for a legacy client.
        sent: Option<Vec<u8>>,
    },
    /// A modern client's call, answered with an `InputRequiredResult`; the
    /// upstream call waits for the client's retry (`relay::Held` handle).
    Held(u64),
    /// A call the hub runs as a task of its own (`tasks`): the task's id.
    Task(String),
    /// A client's task-augmented call to a 2025-11-25 server, cancelled
    /// before the server answered: a task in the answer gets `tasks/cancel`
    /// (`tasks::legacy`).
    TaskCancelled,
    /// The hub's `server/discover` probe.
    Discover,
    /// The hub's `subscriptions/listen` stream to a modern upstream.
    Listen,
    /// The hub's own `initialize`.
    Initialize,
    /// The hub's own list request (one page).
    List(Kind),
    /// Fire and forget (subscribe after a restart, setLevel fan-out, ...).
    Fire,
    /// The hub's health-check `ping`.
    Ping,
}

/// The method of a client's request in flight: typed when the hub knows
/// it (nothing to copy), else its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Called {
    Known(Method<'static>),
    Other(String),
    /// A `prompts/get` of a prompt that shows a skill (`skills`), asked of
    /// its server as a `resources/read` of the skill's URI (as clients know
    /// it, held here).
    #[cfg(feature = "skills")]
    SkillPrompt(Box<str>),
}

impl Called {
    pub fn new(name: &str) -> Called {
        // Typed only where the type gives the name back (an alias stays text).
        match Method::known(name).filter(|m| m.name() == Some(name)) {
            Some(m) => Called::Known(m),
            None => Called::Other(name.to_string()),
        }
    }

    /// The method, when the hub knows it.
    pub fn known(&self) -> Option<Method<'static>> {
        match self {
            Called::Known(m) => Some(*m),
            Called::Other(_) => None,
            #[cfg(feature = "skills")]
            Called::SkillPrompt(_) => Some(Method::PromptsGet),
        }
    }
}

impl std::ops::Deref for Called {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            Called::Known(m) => m.name().unwrap_or_default(),
            Called::Other(s) => s,
            #[cfg(feature = "skills")]
            Called::SkillPrompt(_) => "prompts/get",
        }
    }
}

impl std::fmt::Display for Called {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

/// One request in flight: who waits, and its clock, which only [`Pending`]
/// moves (progress, a hold for a client's retry, a task, a retry).
#[derive(Clone, Debug)]
pub(super) struct Fwd {
    pub origin: Origin,
    /// When the hub gives up (reset by progress, never past `hard`).
    deadline: u64,
    hard: u64,
    /// The per-request timeout, for messages and for the progress reset.
    timeout: u64,
    sent_ms: u64,
}

impl Fwd {
    /// A call forwarded for a client: `timeout` per request (reset by
    /// progress), never past `max_timeout` from now.
    fn call(origin: Origin, now: u64, timeout: u64, max_timeout: u64) -> Fwd {
        let timeout = timeout.max(1);
        let hard = now + max_timeout.max(1);
        Fwd { origin, deadline: (now + timeout).min(hard), hard, timeout, sent_ms: now }
    }

    /// When it was sent (or resumed).
    pub fn sent_ms(&self) -> u64 {
        self.sent_ms
    }
}

/// Hashes the keys the hub makes itself (an upstream and the id it gave a
/// request): no peer chooses them, so they need no keyed hash against
/// flooding (a peer's answer only looks one up); a multiply spreads
/// consecutive ids over the table. Keys with a client's id in them keep
/// the standard keyed hash.
#[derive(Default)]
struct OwnKeys(u64);

impl Hasher for OwnKeys {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|&b| self.write_u64(u64::from(b)));
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

#[derive(Default)]
pub(super) struct Pending {
    map: HashMap<(UpstreamId, u64), Fwd, BuildHasherDefault<OwnKeys>>,
    /// (client, its request id) → the request serving it; short ids are
    /// kept inline, so a call in flight costs this index no allocation.
    by_client: HashMap<(ClientId, IdKey), (UpstreamId, u64)>,
}

impl Pending {
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether `max` requests are in flight.
    pub fn full(&self, max: usize) -> bool {
        self.map.len() >= max
    }

    /// Files `f` as request `id` to `u` (a key not in flight: ids are fresh
    /// per upstream, and a request is taken before it is filed again).
    fn insert(&mut self, u: UpstreamId, id: u64, f: Fwd) {
        if let Origin::Client { client, id: cid, .. } = &f.origin {
            self.by_client.insert((*client, cid.clone()), (u, id));
        }
        self.map.insert((u, id), f);
    }

    /// A call forwarded to `u` for a client (or retried for one), as
    /// request `id`: `timeout` per request (reset by progress), never past
    /// `max_timeout` from `now`.
    pub fn open_call(&mut self, u: UpstreamId, id: u64, origin: Origin, now: u64, timeout: u64, max_timeout: u64) {
        self.insert(u, id, Fwd::call(origin, now, timeout, max_timeout));
    }

    /// A request of the hub's own to `u`: given up after `timeout`
    /// (progress or not), at most `max_timeout`.
    pub fn open_own(&mut self, u: UpstreamId, id: u64, origin: Origin, now: u64, timeout: u64, max_timeout: u64) {
        let hard = now + timeout.max(1).min(max_timeout.max(1));
        self.insert(u, id, Fwd { origin, deadline: hard, hard, timeout, sent_ms: now });
    }

    /// Files `f`, taken on its expiry, again until `until` (progress or not).
    pub fn keep_until(&mut self, u: UpstreamId, id: u64, f: Fwd, until: u64) {
        self.insert(u, id, Fwd { deadline: until, hard: until, ..f });
    }

    /// Is this client id already waiting on an answer?
    pub fn client_has(&self, c: ClientId, id: &[u8]) -> bool {
        self.by_client.contains_key(&(c, IdKey::new(id)))
    }

    pub fn take(&mut self, u: UpstreamId, id: u64) -> Option<Fwd> {
        let f = self.map.remove(&(u, id))?;
        if let Origin::Client { client, id: cid, .. } = &f.origin {
            self.by_client.remove(&(*client, cid.clone()));
        }
        Some(f)
    }

    /// Takes request `id` to `u` when `keep` says so of who waits for it.
    pub fn take_if(&mut self, u: UpstreamId, id: u64, keep: impl FnOnce(&Origin) -> bool) -> Option<Fwd> {
        if !self.map.get(&(u, id)).is_some_and(|f| keep(&f.origin)) {
            return None;
        }
        self.take(u, id)
    }

    /// Who waits for request `id` to `u`.
    pub fn origin(&self, u: UpstreamId, id: u64) -> Option<&Origin> {
        self.map.get(&(u, id)).map(|f| &f.origin)
    }

    /// Is request `id` to `u` in flight?
    pub fn contains(&self, u: UpstreamId, id: u64) -> bool {
        self.map.contains_key(&(u, id))
    }

    /// Replaces who waits for a request in flight, keeping its clock;
    /// false when it is not in flight.
    pub fn set_origin(&mut self, u: UpstreamId, id: u64, origin: Origin) -> bool {
        let Some(mut f) = self.take(u, id) else { return false };
        f.origin = origin;
        self.insert(u, id, f);
        true
    }

    /// Progress on request `id` to `u` at `now`: its timeout starts again
    /// (never past its hard cap). Who waits for it, when it is in flight.
    pub fn progressed(&mut self, u: UpstreamId, id: u64, now: u64) -> Option<&Origin> {
        let f = self.map.get_mut(&(u, id))?;
        f.deadline = (now + f.timeout).min(f.hard);
        Some(&f.origin)
    }

    /// Call `id` to `u` becomes the hub's task `task`: it outlives the
    /// per-request timeout, not the hard cap. The client's progress token,
    /// when the call is in flight.
    pub fn make_task(&mut self, u: UpstreamId, id: u64, task: String) -> Option<Option<Vec<u8>>> {
        let progress = match &self.map.get(&(u, id))?.origin {
            Origin::Client { progress, .. } => progress.clone(),
            _ => None,
        };
        self.set_origin(u, id, Origin::Task(task));
        let f = self.map.get_mut(&(u, id))?;
        f.deadline = f.hard;
        Some(progress)
    }

    /// Call `id` to `u` is held (`relay` handle `h`) for a modern client's
    /// retry until `until`.
    pub fn hold(&mut self, u: UpstreamId, id: u64, h: u64, until: u64) {
        if !self.set_origin(u, id, Origin::Held(h)) {
            return;
        }
        if let Some(f) = self.map.get_mut(&(u, id)) {
            f.deadline = until;
            f.hard = f.hard.max(until);
        }
    }

    /// Held call `id` to `u` goes on for the client's retry (`origin`), as
    /// if sent `now`: `timeout` per request again, never past `max_timeout`.
    pub fn resume(&mut self, u: UpstreamId, id: u64, origin: Origin, now: u64, timeout: u64, max_timeout: u64) {
        if self.take(u, id).is_some() {
            self.open_call(u, id, origin, now, timeout, max_timeout);
        }
    }

    /// The upstream request serving this client request.
    pub fn by_client(&self, c: ClientId, id: &[u8]) -> Option<(UpstreamId, u64)> {
        self.by_client.get(&(c, IdKey::new(id))).copied()
    }

    /// Everything waiting on upstream `u`, oldest key first.
    pub fn drain_upstream(&mut self, u: UpstreamId) -> Vec<(u64, Fwd)> {
        self.drain_upstream_if(u, |_| true)
    }

    /// The calls in flight to `u` for clients, taken, oldest key first.
    #[cfg(feature = "secrets")]
    pub fn drain_client_calls_to(&mut self, u: UpstreamId) -> Vec<(u64, Fwd)> {
        self.drain_upstream_if(u, |o| matches!(o, Origin::Client { .. }))
    }

    fn drain_upstream_if(&mut self, u: UpstreamId, which: impl Fn(&Origin) -> bool) -> Vec<(u64, Fwd)> {
        let keys: Vec<u64> = self.map.iter().filter(|(k, f)| k.0 == u && which(&f.origin)).map(|(k, _)| k.1).collect();
        let mut out: Vec<(u64, Fwd)> = keys.into_iter().filter_map(|id| Some((id, self.take(u, id)?))).collect();
        out.sort_by_key(|(id, _)| *id);
        out
    }

    /// Everything a client is waiting on, taken, oldest key first.
    pub fn drain_client(&mut self, c: ClientId) -> Vec<(UpstreamId, u64, Fwd)> {
        self.drain_where(|k| k == c)
    }

    /// Everything every client is waiting on, taken: by client, each
    /// client's oldest key first.
    pub fn drain_clients(&mut self) -> Vec<(UpstreamId, u64, Fwd)> {
        self.drain_where(|_| true)
    }

    /// What the clients `which` picks wait on, taken: by client, each
    /// client's oldest key first.
    fn drain_where(&mut self, which: impl Fn(ClientId) -> bool) -> Vec<(UpstreamId, u64, Fwd)> {
        let mut keys: Vec<_> = self.by_client.iter().filter(|(k, _)| which(k.0)).map(|(k, v)| (k.0, *v)).collect();
        keys.sort();
        keys.into_iter().filter_map(|(_, (u, id))| Some((u, id, self.take(u, id)?))).collect()
    }

    /// Calls to `u` made for clients, in flight or held for a modern
    /// client's retry: (the hub's id, when sent, who is waiting).
    pub fn calls_to(&self, u: UpstreamId) -> impl Iterator<Item = (u64, u64, &Origin)> + '_ {
        self.map.iter().filter(move |(k, f)| k.0 == u && matches!(f.origin, Origin::Client { .. } | Origin::Held(_))).map(|(k, f)| (k.1, f.sent_ms, &f.origin))
    }

    /// Keys whose deadline is at or before `now`, oldest first.
    pub fn expired(&self, now: u64) -> Vec<(UpstreamId, u64)> {
        let mut v: Vec<_> = self.map.iter().filter(|(_, f)| f.deadline <= now).map(|(k, _)| *k).collect();
        v.sort();
        v
    }

    pub fn next_deadline(&self) -> Option<u64> {
        self.map.values().map(|f| f.deadline).min()
    }

    /// Does a client wait on `u` (a call in flight or held for a retry)?
    pub fn busy(&self, u: UpstreamId) -> bool {
        self.calls_to(u).next().is_some()
    }

    /// Is a health-check ping to `u` in flight?
    pub fn pinging(&self, u: UpstreamId) -> bool {
        self.map.iter().any(|(k, f)| k.0 == u && matches!(f.origin, Origin::Ping))
    }
}

impl Pending {
    /// Modern clients with a request to `u` in flight whose log level admits
    /// a message of level index `level`.
    pub fn modern_log_clients(&self, u: UpstreamId, level: usize) -> Vec<ClientId> {
        self.map
            .iter()
            .filter(|(k, _)| k.0 == u)
            .filter_map(|(_, f)| match &f.origin {
                Origin::Client { client, modern: Some(ctx), .. } if ctx.log_level.is_some_and(|l| level >= l) => Some(*client),
                _ => None,
            })
            .collect()
    }
}
