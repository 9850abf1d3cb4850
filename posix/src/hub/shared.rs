//! State shared between mcpx replicas (issue 16), asked quinn-style.
//!
//! A single mcpx keeps everything in memory and answers itself. Several
//! replicas behind one load balancer share a few things through a store
//! (Redis or Valkey: `"state": {"url": ..}`), which the hub cannot reach
//! itself (sans-IO): it asks the runtime with [`Output::Shared`]`(`[`Ask`]`)`
//! and the runtime answers with [`Hub::shared_answered`] under the ask's
//! ticket. What is asked:
//!
//! - [`Op::ClaimNonce`]: the single-use set of `requestState` nonces
//!   (`SET key 1 NX PX ttl`: granted the first time, refused after), so a
//!   state redeemed on one replica is refused on every other
//!   (mrtr-single-use-enforced).
//! - [`Op::TakeTokens`]: one token of each rate-limit bucket, all or none,
//!   on the store's clock (the replicas' clocks are not one clock).
//! - [`Op::Put`] (ticket 0, nobody waits): each task's record (its owner
//!   replica and its mapping: principal, upstream server and the
//!   upstream's task id, as in the task state file), and [`Op::Get`] to
//!   read it back when the owner is gone: a task a remote server runs is
//!   taken over by the replica asked about it (any replica reaches that
//!   server), any other is answered `failed`, its result lost with the
//!   replica.
//!
//! The request that needs an answer is parked until it comes; an
//! [`Answer::Unavailable`], or no answer within
//! [`ClusterOptions::answer_timeout_ms`], is a clear error to that request,
//! and a `requestState` that cannot be checked is refused, never accepted.
//!
//! Ownership: a replica that holds an upstream call for a client's retry
//! (a legacy upstream waiting for input), or whose own server process
//! minted the upstream `requestState` of a round (a 2026-07-28 server that
//! is not remote), names itself inside the sealed state; a task id names the replica that runs the task. A request for
//! something another replica owns is [`Output::Forward`]ed to it: the
//! runtime sends the client's request over the internal hop to that
//! replica, which serves it as a client of the same principal (its
//! runtime sets it, `Hub::set_client_principal`), and streams its answer
//! back.
//!
//! [`Output::Shared`]: super::Output::Shared
//! [`Output::Forward`]: super::Output::Forward
//! [`Hub::shared_answered`]: super::Hub::shared_answered

use std::collections::HashMap;
use std::fmt;

use mcpx_core::error::ErrorCode;
use mcpx_core::request_state::{OpenError, NONCE_LEN};
use serde_json::Value;

use super::request::{Refusal, ReqCtx};
use super::wire::{self, Msg};
use super::{ClientId, Hub, IdKey, Level, Output};

pub use super::replica::{valid_replica_id, ReplicaId, MAX_REPLICA_LEN};

/// Default of [`ClusterOptions::answer_timeout_ms`].
pub const DEFAULT_ANSWER_TIMEOUT_MS: u64 = 1_000;

/// How this hub takes part in a cluster. The default: alone, state in
/// memory, as a single mcpx always was.
#[derive(Clone)]
pub struct ClusterOptions {
    /// This replica's id; `None`: not in a cluster (nothing is forwarded).
    pub replica: Option<ReplicaId>,
    /// The other replicas this one can forward to (`cluster.peers`).
    pub peers: Vec<ReplicaId>,
    /// `state.url` is set: the single-use set and the rate-limit buckets are
    /// the store's, asked through [`Output::Shared`](super::Output::Shared).
    pub shared: bool,
    /// The `requestState` sealing key every replica shares
    /// (`MCPX_STATE_KEY` or `state.keyFile`); `None`: derived from
    /// `HubOptions::secret_seed`, this process's own.
    pub state_key: Option<[u8; 32]>,
    /// How long a parked request waits for [`Answer`] (ms).
    pub answer_timeout_ms: u64,
}

impl Default for ClusterOptions {
    fn default() -> ClusterOptions {
        ClusterOptions { replica: None, peers: Vec::new(), shared: false, state_key: None, answer_timeout_ms: DEFAULT_ANSWER_TIMEOUT_MS }
    }
}

// The key is a secret: never in a log.
impl fmt::Debug for ClusterOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterOptions")
            .field("replica", &self.replica)
            .field("peers", &self.peers)
            .field("shared", &self.shared)
            .field("state_key", &self.state_key.map(|_| "<set>"))
            .field("answer_timeout_ms", &self.answer_timeout_ms)
            .finish()
    }
}

/// A question for the shared store; answer it with
/// [`Hub::shared_answered`](super::Hub::shared_answered)`(ticket, ..)`.
/// Ticket 0: fire and forget, no answer wanted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ask {
    pub ticket: u64,
    pub op: Op,
}

/// What to do in the store. [`Op::key`] names the store key(s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Record `nonce` for `ttl_ms` if it is not recorded yet:
    /// [`Answer::Granted`] the first time, [`Answer::Refused`] after.
    ClaimNonce { nonce: [u8; NONCE_LEN], ttl_ms: u64 },
    /// Take one token of every bucket, atomically, or none: granted when
    /// each has one, else refused with the longest wait. A bucket not in
    /// the store starts full.
    TakeTokens { buckets: Vec<Bucket> },
    /// Set `key` to `value` for `ttl_ms` (0: no expiry).
    Put { key: String, value: Vec<u8>, ttl_ms: u64 },
    /// The value of `key`: [`Answer::Value`].
    Get { key: String },
}

/// One rate-limit bucket as the store keeps it (defined by the rate limiter).
pub use crate::policy::ratelimit::SharedBucket as Bucket;

/// The store's answer to an [`Ask`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "cluster"), allow(dead_code))] // without the Redis store only `Unavailable` is made
pub enum Answer {
    Granted,
    /// A nonce already claimed, a bucket empty (`retry_after_ms`: until it
    /// has a token again; 0 for a nonce).
    Refused { retry_after_ms: u64 },
    /// The store could not be asked (connection lost, timeout, error): the
    /// reason, for the request's error.
    Unavailable(String),
    /// What [`Op::Get`] read: `None` when the key is not there.
    Value(Option<Vec<u8>>),
}

impl Answer {
    /// Why an answer that is no grant or refusal fails the request.
    fn failure(self) -> String {
        match self {
            Answer::Unavailable(why) => why,
            _ => "it answered another question".to_string(),
        }
    }
}

/// Prefix of every store key mcpx writes.
pub const KEY_PREFIX: &str = "mcpx:";

#[cfg(feature = "cluster")]
impl Op {
    /// The store key of a nonce claim or a put; for buckets see
    /// [`Bucket::key`].
    pub fn key(&self) -> Option<String> {
        match self {
            Op::ClaimNonce { nonce, .. } => Some(format!("{KEY_PREFIX}nonce:{}", hex(nonce))),
            Op::Put { key, .. } | Op::Get { key } => Some(key.clone()),
            Op::TakeTokens { .. } => None,
        }
    }
}

impl Bucket {
    /// The store key of this bucket.
    pub fn key(&self) -> String {
        format!("{KEY_PREFIX}bucket:{}", self.name)
    }
}

/// The store key under which the owner of task `id` is published.
pub fn task_key(id: &str) -> String {
    format!("{KEY_PREFIX}task:{id}")
}

/// The store key of server `name`'s cached lists (its name in hex, so any
/// name is a safe key).
pub fn lists_key(name: &str) -> String {
    format!("{KEY_PREFIX}lists:{}", hex(name.as_bytes()))
}

/// `bytes` as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes [`hex`] wrote as `s`; `None` for anything else.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}


/// What the hub waits for from the store, and the forwards in flight.
#[derive(Default)]
pub(super) struct Shared {
    next_ticket: u64,
    waiting: HashMap<u64, Waiter>,
    forwards: HashMap<(ClientId, IdKey), Forwarded>,
    /// Set when routing a request asked the store for its rate limits
    /// ([`Hub::admit_shared`]): the ticket it now waits for.
    parking: Option<u64>,
    /// Buckets the store granted to a request routed again.
    granted: HashMap<(ClientId, IdKey), Vec<String>>,
}

/// A client request parked until the store answers.
struct Waiter {
    client: ClientId,
    id: Vec<u8>,
    deadline: u64,
    wait: Wait,
}

enum Wait {
    /// A retry whose `requestState` verified: its nonce's claim.
    Claim { msg: Vec<u8>, ctx: ReqCtx, inner: Vec<u8>, responses: Option<Value> },
    /// A request's rate-limit buckets (`limits`: their config names). `msg`
    /// and `ctx`: what to route again once granted (set when routing gave
    /// up on it, [`Hub::route_or_park`]).
    Admit { msg: Vec<u8>, ctx: Option<ReqCtx>, buckets: Vec<String>, limits: String },
    /// The record of a task whose owner could not answer `why`.
    Adopt { task: ForwardedTask, why: String },
}

/// What a forwarded request continues, for its error.
#[derive(Clone, Debug)]
enum Forwarded {
    State(ReplicaId),
    Task(ForwardedTask),
}

impl Forwarded {
    fn to(&self) -> &ReplicaId {
        match self {
            Forwarded::State(to) | Forwarded::Task(ForwardedTask { to, .. }) => to,
        }
    }
}

/// A `tasks/*` request forwarded to the replica running its task.
#[derive(Clone, Debug)]
struct ForwardedTask {
    to: ReplicaId,
    task: String,
    /// The client's request, to serve here should this replica take the
    /// task over.
    msg: Vec<u8>,
    /// Its record was read already (a request follows at most one record
    /// to a new owner).
    looked_up: bool,
}

impl Hub {
    /// A modern retry carrying `requestState` `token`: verified here, then
    /// continued here (used once: in the store when one is shared, else in
    /// this hub's set), or forwarded to the replica holding its call,
    /// which makes the claim itself.
    pub(super) fn redeem_state(&mut self, c: ClientId, m: &Msg, id: &[u8], ctx: ReqCtx, token: &str, responses: Option<Value>) {
        let v = match self.verify_state(token, &m.method, &ctx) {
            Ok(v) => v,
            Err(e) => return self.refuse_state(c, id, e),
        };
        if let Some(to) = self.held_elsewhere(&v.inner) {
            return self.forward_to_owner(c, m.env.bytes(), id, &ctx.principal, Forwarded::State(to));
        }
        if self.opts.cluster.shared {
            let op = Op::ClaimNonce { nonce: v.nonce, ttl_ms: self.claim_ttl_ms(&v) };
            let wait = Wait::Claim { msg: m.env.bytes().to_vec(), ctx, inner: v.inner, responses };
            return self.ask_for(c, id, op, wait);
        }
        match self.claim_state(&v, &ctx.principal) {
            Ok(()) => self.resume(c, m, id, ctx, &v.inner, responses),
            Err(e) => self.refuse_state(c, id, e),
        }
    }

    fn refuse_state(&mut self, c: ClientId, id: &[u8], e: OpenError) {
        let (code, msg, data) = self.state_refusal(e);
        self.answer_error(c, Some(id), code, &msg, data);
    }

    /// A modern `tasks/*` request naming a task another replica runs:
    /// forwarded to it (true), else false.
    pub(super) fn task_elsewhere(&mut self, c: ClientId, m: &Msg, id: &[u8], principal: &[u8]) -> bool {
        let Some(me) = self.opts.cluster.replica.as_deref() else { return false };
        let Some(task) = m.param(&["taskId"]).and_then(|r| wire::string_at(m.raw, r)) else { return false };
        // A task taken over from a replica that is gone is this one's now.
        if self.tasks.has(&task) {
            return false;
        }
        let Some(owner) = super::tasks::owner(&task).filter(|o| *o != me) else { return false };
        let to = owner.to_string();
        let what = ForwardedTask { to, task, msg: m.env.bytes().to_vec(), looked_up: false };
        self.forward_to_owner(c, m.env.bytes(), id, principal, Forwarded::Task(what));
        true
    }

    /// Sends client `c`'s request `msg` to the replica that owns what it
    /// continues, or answers why it cannot.
    fn forward_to_owner(&mut self, c: ClientId, msg: &[u8], id: &[u8], principal: &[u8], what: Forwarded) {
        let to = what.to().clone();
        if !self.opts.cluster.peers.contains(&to) {
            return self.answer_unforwarded(c, id, &what, "is not among this replica's peers (cluster.peers)");
        }
        if self.shared.forwards.len() >= self.opts.max_pending {
            let msg = format!("mcpx is at its limit of {} requests in flight (maxPending); retry later", self.opts.max_pending);
            return self.answer_error(c, Some(id), ErrorCode::InternalError, &msg, None);
        }
        self.shared.forwards.insert((c, IdKey::new(id)), what);
        self.out.push_back(Output::Forward { client: c, request: IdKey::new(id), msg: msg.to_vec(), principal: principal.to_vec(), to });
    }

    /// The start-over error of a request whose owner cannot serve it.
    fn answer_unforwarded(&mut self, c: ClientId, id: &[u8], what: &Forwarded, why: &str) {
        // Requirement: mrtr-requeststate-attacker-controlled (a state that cannot be resumed is refused, never guessed at)
        let msg = match what {
            Forwarded::State(to) => format!("Invalid params: requestState refers to a request held by mcpx replica '{to}', which {why}; nothing was sent to the server. Send the request again without requestState to start over"),
            Forwarded::Task(t) => format!("Invalid params: the task is run by mcpx replica '{}', which {why}; its outcome cannot be fetched through this replica", t.to),
        };
        self.answer_error(c, Some(id), ErrorCode::InvalidParams, &msg, None);
    }

    pub(super) fn on_forward_done(&mut self, c: ClientId, request: &[u8], result: Result<(), String>) {
        let Some(what) = self.shared.forwards.remove(&(c, IdKey::new(request))) else { return };
        match result {
            Ok(()) => {
                // The owner's answer went to the client: the request is closed.
                if let Some(cl) = self.clients.get_mut(&c) {
                    cl.open.remove(request);
                }
            }
            // The owner is gone: the task's record tells whether this
            // replica can take it over.
            Err(why) => match what {
                Forwarded::Task(task) if self.opts.cluster.shared && !task.looked_up => {
                    let op = Op::Get { key: task_key(&task.task) };
                    self.ask_for(c, request, op, Wait::Adopt { task, why });
                }
                what => self.answer_unforwarded(c, request, &what, &format!("could not answer ({why})")),
            },
        }
    }

    /// Parks client `c`'s request `id` until the store answers `op`.
    fn ask_for(&mut self, c: ClientId, id: &[u8], op: Op, wait: Wait) {
        if let Err(msg) = self.ask_ticket(c, id, op, wait) {
            self.answer_error(c, Some(id), ErrorCode::InternalError, &msg, None);
        }
    }

    /// Asks `op` for client `c`'s request `id`, parked as `wait`: its
    /// ticket, or (over the cap of parked requests) the error to answer.
    fn ask_ticket(&mut self, c: ClientId, id: &[u8], op: Op, wait: Wait) -> Result<u64, String> {
        if self.shared.waiting.len() >= self.opts.max_pending {
            return Err(format!("mcpx is at its limit of {} requests waiting for its shared state store (maxPending); retry later", self.opts.max_pending));
        }
        self.shared.next_ticket += 1;
        let ticket = self.shared.next_ticket;
        let deadline = self.now_ms.saturating_add(self.opts.cluster.answer_timeout_ms.max(1));
        self.shared.waiting.insert(ticket, Waiter { client: c, id: id.to_vec(), deadline, wait });
        self.out.push_back(Output::Shared(Ask { ticket, op }));
        Ok(ticket)
    }

    pub(super) fn on_shared_answered(&mut self, ticket: u64, answer: Answer) {
        let Some(w) = self.shared.waiting.remove(&ticket) else { return };
        if !self.clients.contains_key(&w.client) {
            return;
        }
        self.store_answered(w, answer);
    }

    fn store_answered(&mut self, w: Waiter, answer: Answer) {
        let Waiter { client: c, id, wait, .. } = w;
        match (wait, answer) {
            (Wait::Adopt { task, why }, Answer::Value(Some(v))) => self.adopt_task(c, &id, task, &why, &v),
            (Wait::Adopt { task, why }, answer) => {
                let more = match answer {
                    Answer::Value(None) => "the shared state store has no record of it (ended, expired or unknown)".to_string(),
                    a => format!("the shared state store could not be asked for its record ({})", a.failure()),
                };
                self.answer_unforwarded(c, &id, &Forwarded::Task(task), &format!("could not answer ({why}), and {more}"));
            }
            (Wait::Claim { msg, ctx, inner, responses }, Answer::Granted) => {
                if let Ok(m) = wire::parse(&msg) {
                    self.resume(c, &m, &id, ctx, &inner, responses);
                }
            }
            // Requirement: mrtr-single-use-enforced (used on any replica: refused on every other)
            (Wait::Claim { .. }, Answer::Refused { .. }) => self.refuse_state(c, &id, OpenError::Replayed),
            (Wait::Claim { .. }, a @ (Answer::Unavailable(_) | Answer::Value(_))) => {
                let why = a.failure();
                let msg = format!("mcpx could not ask its shared state store ({why}), so this requestState could not be checked for single use: it was refused, not accepted, and nothing was sent to the server. Send the same request again later (should that be refused as already used, send it without requestState to start over)");
                self.answer_error(c, Some(&id), ErrorCode::InternalError, &msg, None);
            }
            (Wait::Admit { msg, ctx, buckets, .. }, Answer::Granted) => {
                // Routed again, as it came: these buckets are not asked twice.
                self.shared.granted.insert((c, IdKey::new(&id)), buckets);
                match ctx {
                    Some(ctx) => self.route_normalized(c, &msg, ctx),
                    None => {
                        if let Ok(m) = wire::parse(&msg) {
                            self.on_client_request(c, &m);
                        }
                    }
                }
            }
            (Wait::Admit { limits, .. }, Answer::Refused { retry_after_ms }) => {
                let r = crate::policy::ratelimit::Refusal { limit: limits, retry_after_ms };
                self.policy_refused_shared(c, &id, &r);
                self.answer_error(c, Some(&id), crate::policy::ratelimit::Refusal::CODE, &format!("{r} (a limit the replicas share)"), Some(r.data()));
            }
            (Wait::Admit { .. }, a @ (Answer::Unavailable(_) | Answer::Value(_))) => {
                let why = a.failure();
                let msg = format!("mcpx could not ask its shared state store ({why}), so this request's rate limits could not be checked: it was refused and nothing was sent to the server; retry later");
                self.answer_error(c, Some(&id), ErrorCode::InternalError, &msg, None);
            }
        }
    }

    /// Requests whose store answer is overdue get the store's error: never
    /// a hang.
    pub(super) fn shared_tick(&mut self) {
        let now = self.now_ms;
        let mut due: Vec<u64> = self.shared.waiting.iter().filter(|(_, w)| w.deadline <= now).map(|(t, _)| *t).collect();
        due.sort_unstable();
        let bound = self.opts.cluster.answer_timeout_ms;
        for t in due {
            let Some(w) = self.shared.waiting.remove(&t) else { continue };
            if self.clients.contains_key(&w.client) {
                self.store_answered(w, Answer::Unavailable(format!("it did not answer within {bound} ms")));
            }
        }
    }

    pub(super) fn shared_deadline(&self) -> Option<u64> {
        self.shared.waiting.values().map(|w| w.deadline).min()
    }

    /// Task `id` runs here: its owner (this replica) and record (the task
    /// state file's) published in the store until it expires, for another
    /// replica to take over should this one be gone; nobody waits for it.
    pub(super) fn publish_task(&mut self, id: &str) {
        let Some(me) = self.opts.cluster.replica.as_ref().filter(|_| self.opts.cluster.shared) else { return };
        let Some((record, ttl_ms)) = self.tasks.record_now(id, &super::task_ups(&self.ups), self.now_ms) else { return };
        let value = serde_json::to_vec(&serde_json::json!({ "owner": me, "task": record })).unwrap_or_default();
        let op = Op::Put { key: task_key(id), value, ttl_ms };
        self.out.push_back(Output::Shared(Ask { ticket: 0, op }));
    }

    /// The record `v` of task `t.task`, whose owner `t.to` could not answer
    /// (`why`): the task is taken over here (answered as if it had always
    /// run here) unless another replica took it over already (then the
    /// request goes there).
    fn adopt_task(&mut self, c: ClientId, id: &[u8], mut t: ForwardedTask, why: &str, v: &[u8]) {
        let read = serde_json::from_slice::<Value>(v).ok().and_then(|mut v| Some((v.get("owner")?.as_str()?.to_string(), v.get_mut("task")?.take())));
        let Some((owner, record)) = read else {
            let why = format!("could not answer ({why}), and the task's record in the shared state store is unreadable");
            return self.answer_unforwarded(c, id, &Forwarded::Task(t), &why);
        };
        t.looked_up = true;
        if owner != t.to && self.opts.cluster.replica.as_ref() != Some(&owner) {
            let principal = self.clients.get(&c).map(|cl| cl.principal.clone()).unwrap_or_default();
            let msg = std::mem::take(&mut t.msg);
            t.to = owner;
            return self.forward_to_owner(c, &msg, id, &principal, Forwarded::Task(t));
        }
        if self.tasks.restore_one(&record, &super::task_ups(&self.ups), self.now_ms, Some(&t.to)).is_none() {
            let why = format!("could not answer ({why}), and its task cannot be taken over here (expired, of a server not configured here, or over the task limit)");
            return self.answer_unforwarded(c, id, &Forwarded::Task(t), &why);
        }
        self.log(Level::Warn, format!("task {} taken over from mcpx replica '{}', which could not answer ({why})", t.task, t.to));
        let fx = self.tasks.taken_over(t.task.clone(), &super::task_ups(&self.ups), self.now_ms);
        self.apply_task_effects(fx);
        if let Ok(m) = wire::parse(&t.msg) {
            self.on_modern_request(c, &m);
        }
    }

    /// Client `c` is gone: nothing of it waits for the store or a replica.
    pub(super) fn shared_drop_client(&mut self, c: ClientId) {
        self.shared.waiting.retain(|_, w| w.client != c);
        self.shared.forwards.retain(|(fc, _), _| *fc != c);
        self.shared.granted.retain(|(gc, _), _| *gc != c);
    }

    /// Routes request `m` of client `c`; a request that now waits for the
    /// store's rate limits ([`Hub::admit_shared`]) is parked, not refused.
    pub(super) fn route_or_park(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>) -> Result<(), Refusal> {
        let r = self.route(c, m, ctx);
        let id = IdKey::new(m.id_bytes().unwrap_or(b"null"));
        let parked = self.shared.parking.take();
        self.shared.granted.remove(&(c, id));
        match parked.and_then(|t| self.shared.waiting.get_mut(&t)) {
            Some(Waiter { wait: Wait::Admit { msg, ctx: parked_ctx, .. }, .. }) if r.is_err() => {
                *msg = m.env.bytes().to_vec();
                *parked_ctx = ctx.cloned();
                Ok(())
            }
            _ => r,
        }
    }

    /// With a shared store, the per-principal limit of client `c`'s
    /// request `id` (`limit`: its name for errors) is taken in the store,
    /// so it holds across the replicas. Granted already (the request routed
    /// again): `Ok`. Else the store is asked and `Err` stops the routing:
    /// the request waits ([`Hub::route_or_park`]).
    pub(super) fn admit_shared(&mut self, c: ClientId, id: &[u8], bucket: Bucket, limit: String) -> Result<(), Refusal> {
        let key = (c, IdKey::new(id));
        if self.shared.granted.get(&key).is_some_and(|g| g.contains(&bucket.name)) {
            return Ok(());
        }
        let mut names = self.shared.granted.get(&key).cloned().unwrap_or_default();
        names.push(bucket.name.clone());
        let wait = Wait::Admit { msg: Vec::new(), ctx: None, buckets: names, limits: limit };
        match self.ask_ticket(c, id, Op::TakeTokens { buckets: vec![bucket] }, wait) {
            Ok(ticket) => {
                self.shared.parking = Some(ticket);
                // Not an answer: `route_or_park` parks the request instead.
                Err(Refusal(ErrorCode::InternalError, "waiting for the shared state store".to_string(), None))
            }
            Err(msg) => Err(Refusal(ErrorCode::InternalError, msg, None)),
        }
    }
}
