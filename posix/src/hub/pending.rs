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
//!
//! What the hub asks after every message (the next deadline; does a server
//! have a client's call, or a ping, in flight) is kept beside the table as
//! it changes, so that asking costs the same with one request in flight as
//! with thousands: one client's many slow calls do not make every other
//! message slower.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
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
    /// Every request's deadline, earliest on top. An entry whose request
    /// has gone or has another deadline now is stale: it leaves when it
    /// reaches the top (so the top is never stale), and all of them when
    /// they outnumber the requests ([`Pending::settle`]).
    deadlines: BinaryHeap<Reverse<(u64, UpstreamId, u64)>>,
    /// Per server: its clients' calls in flight or held ([`Pending::busy`])
    /// and its pings in flight ([`Pending::pinging`]).
    counts: Vec<Counts>,
}

/// What [`Pending`] counts of one server's requests.
#[derive(Clone, Copy, Default)]
struct Counts {
    calls: u32,
    pings: u32,
}

impl Counts {
    /// The count `origin` falls under, if any.
    fn of(&mut self, origin: &Origin) -> Option<&mut u32> {
        match origin {
            Origin::Client { .. } | Origin::Held(_) => Some(&mut self.calls),
            Origin::Ping => Some(&mut self.pings),
            _ => None,
        }
    }
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
        if self.counts.len() <= u {
            self.counts.resize(u + 1, Counts::default());
        }
        if let Some(n) = self.counts[u].of(&f.origin) {
            *n += 1;
        }
        let deadline = f.deadline;
        self.map.insert((u, id), f);
        self.keep(u, id, deadline);
    }

    /// Puts deadline `deadline` of request `id` to `u` on the heap. Once
    /// the stale entries outnumber the requests, the heap is rebuilt from
    /// the table ([`Pending::compact`]), which keeps it within twice the
    /// table, each request costing O(log n) in all. A new top is never
    /// stale.
    fn keep(&mut self, u: UpstreamId, id: u64, deadline: u64) {
        self.deadlines.push(Reverse((deadline, u, id)));
        self.compact();
    }

    /// Rebuilds the heap from the table when it holds more than twice as
    /// many entries (and a few).
    fn compact(&mut self) {
        if self.deadlines.len() > 2 * self.map.len() + 32 {
            self.deadlines.clear();
            self.deadlines.extend(self.map.iter().map(|(&(u, id), f)| Reverse((f.deadline, u, id))));
        }
    }

    /// Request `id` to `u`, in flight, has deadline `deadline` now: the
    /// entry of its old one, maybe the top, is stale.
    fn moved(&mut self, u: UpstreamId, id: u64, deadline: u64) {
        self.deadlines.push(Reverse((deadline, u, id)));
        self.settle();
    }

    /// Drops stale deadlines from the top (all of them, when they
    /// outnumber the requests).
    fn settle(&mut self) {
        self.compact();
        while let Some(&Reverse((d, u, id))) = self.deadlines.peek() {
            if self.map.get(&(u, id)).is_some_and(|f| f.deadline == d) {
                break;
            }
            self.deadlines.pop();
        }
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
        if let Some(n) = self.counts.get_mut(u).and_then(|c| c.of(&f.origin)) {
            *n -= 1;
        }
        self.settle();
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
        let deadline = f.deadline;
        self.moved(u, id, deadline);
        self.map.get(&(u, id)).map(|f| &f.origin)
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
        let deadline = f.deadline;
        self.moved(u, id, deadline);
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
            self.moved(u, id, until);
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
        self.deadlines.peek().map(|Reverse((d, ..))| *d)
    }

    /// Does a client wait on `u` (a call in flight or held for a retry)?
    pub fn busy(&self, u: UpstreamId) -> bool {
        self.counts.get(u).is_some_and(|c| c.calls > 0)
    }

    /// Is a health-check ping to `u` in flight?
    pub fn pinging(&self, u: UpstreamId) -> bool {
        self.counts.get(u).is_some_and(|c| c.pings > 0)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn client(c: ClientId, id: u64) -> Origin {
        Origin::Client {
            client: c,
            id: IdKey::new(id.to_string().as_bytes()),
            progress: None,
            method: Called::new("tools/call"),
            renamed_uri: None,
            modern: None,
            sent: None,
        }
    }

    /// What the kept answers must equal: the table read whole.
    fn check(p: &Pending, ups: usize) {
        assert_eq!(p.next_deadline(), p.map.values().map(|f| f.deadline).min());
        for u in 0..ups {
            let calls = p.map.iter().any(|(k, f)| k.0 == u && matches!(f.origin, Origin::Client { .. } | Origin::Held(_)));
            let pings = p.map.iter().any(|(k, f)| k.0 == u && matches!(f.origin, Origin::Ping));
            assert_eq!((p.busy(u), p.pinging(u)), (calls, pings), "server {u}");
        }
        assert!(p.deadlines.len() <= 2 * p.map.len() + 33, "{} deadlines kept for {} requests", p.deadlines.len(), p.map.len());
    }

    #[test]
    fn the_next_deadline_and_each_servers_calls_and_pings_follow_every_change() {
        let mut p = Pending::default();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let ups = 4;
        let mut ids = 0u64;
        for now in 0..20_000u64 {
            let u = next(ups as u64) as usize;
            let open: Vec<(UpstreamId, u64)> = p.map.keys().copied().collect();
            let pick = |r: u64| open.get(r as usize % open.len().max(1)).copied();
            match next(9) {
                0..=2 => {
                    ids += 1;
                    p.open_call(u, ids, client(next(3), ids), now, 1 + next(500), 1_000);
                }
                3 => {
                    ids += 1;
                    let origin = if next(2) == 0 { Origin::Ping } else { Origin::Fire };
                    p.open_own(u, ids, origin, now, 1 + next(300), 1_000);
                }
                4 | 5 => {
                    if let Some((u, id)) = pick(next(1 << 20)) {
                        p.take(u, id);
                    }
                }
                6 => {
                    if let Some((u, id)) = pick(next(1 << 20)) {
                        p.progressed(u, id, now);
                    }
                }
                7 => {
                    if let Some((u, id)) = pick(next(1 << 20)) {
                        match next(3) {
                            0 => p.hold(u, id, id, now + next(800)),
                            1 => drop(p.make_task(u, id, format!("t{id}"))),
                            _ => drop(p.set_origin(u, id, Origin::Ping)),
                        }
                    }
                }
                _ => {
                    for (u, id) in p.expired(now) {
                        if let Some(f) = p.take(u, id) {
                            if next(4) == 0 {
                                p.keep_until(u, id, f, now + 50);
                            }
                        }
                    }
                }
            }
            check(&p, ups);
        }
        // Answered in the order sent, with one request held open all along:
        // what is kept stays within twice the table.
        p.open_own(0, ids + 1, Origin::Fire, 20_000, 1_000_000, 1_000_000);
        for id in ids + 2..ids + 5_000 {
            p.open_call(1, id, client(1, id), 20_000, 60_000, 60_000);
            p.take(1, id);
        }
        check(&p, ups);
    }
}
