//! State shared between mcpx replicas (issue 16), asked quinn-style.
//!
//! A single mcpx keeps everything in memory and answers itself. Several
//! replicas behind one load balancer share a few things through a store
//! (Redis or Valkey: `"state": {"url": ..}`), which the hub cannot reach
//! itself (sans-IO): it asks the runtime with [`Output::Shared`]`(`[`Ask`]`)`
//! and the runtime answers with [`Input::SharedAnswered`] under the ask's
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
//! runtime sets it, `Input::ClientPrincipal`), and streams its answer
//! back.
//!
//! [`Output::Shared`]: super::Output::Shared
//! [`Output::Forward`]: super::Output::Forward
//! [`Input::SharedAnswered`]: super::Input::SharedAnswered

use std::collections::HashMap;
use std::fmt;

use mcpx_core::error::ErrorCode;
use mcpx_core::request_state::{OpenError, NONCE_LEN};
use serde_json::Value;

use super::earliest::Earliest;
use super::request::{Refusal, ReqCtx};
use crate::bytes::hex::hex;
use super::wire::Msg;
use super::{ClientId, IdKey, Output};

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
/// [`Input::SharedAnswered`](super::Input::SharedAnswered)`(ticket, ..)`.
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

/// The store key of a remembered approval: of `principal` calling
/// `server`'s `tool` with the arguments of `digest` (all hashed: the key
/// names no one).
pub fn approval_key(principal: &str, server: &str, tool: &str, digest: &[u8; 32]) -> String {
    let mut what = Vec::with_capacity(principal.len() + server.len() + tool.len() + 35);
    for part in [principal.as_bytes(), server.as_bytes(), tool.as_bytes(), digest] {
        what.extend_from_slice(part);
        what.push(0);
    }
    format!("{KEY_PREFIX}approval:{}", hex(&mcpx_core::request_state::digest(&what)))
}

/// The store key under which replica `replica` announces the calls waiting
/// there for approval (`approvals::Approvals::announcement`).
pub fn waiting_key(replica: &str) -> String {
    format!("{KEY_PREFIX}approvals-waiting:{replica}")
}

/// The ticket of the announcement's write: its answer goes to the
/// approvals, not to a parked request (whose tickets count up from 1).
pub const ANNOUNCE_TICKET: u64 = u64::MAX;

/// How long an announcement outlives the last of its calls' expiry (each
/// expires within `policy.approvals.timeoutMs` of the write): a replica
/// that died leaves no list behind for longer.
pub const ANNOUNCE_SLACK_MS: u64 = 5_000;

/// The store key of server `name`'s cached lists (its name in hex, so any
/// name is a safe key).
pub fn lists_key(name: &str) -> String {
    format!("{KEY_PREFIX}lists:{}", hex(name.as_bytes()))
}

/// The store key of the pins every replica shares (`hub::pins::share`).
#[cfg(feature = "cluster")]
pub const PINS_KEY: &str = "mcpx:pins";



/// What the hub waits for from the store, and the forwards in flight.
#[derive(Default)]
pub(super) struct Shared {
    next_ticket: u64,
    waiting: HashMap<u64, Waiter>,
    /// The earliest of `waiting`'s deadlines, forgotten where `waiting`
    /// gains or loses a request (its deadlines never move).
    next: Earliest,
    forwards: HashMap<(ClientId, IdKey), Forwarded>,
    /// Set when routing a request asked the store for its rate limits
    /// ([`Shared::admit`]): the ticket it now waits for.
    parking: Option<u64>,
    /// Buckets the store granted to a request routed again.
    granted: HashMap<(ClientId, IdKey), Vec<String>>,
    /// What the store said of a call's remembered approval, for the call
    /// routed again: the approval's note, or none.
    #[cfg(feature = "consent")]
    approvals: HashMap<(ClientId, IdKey), Option<String>>,
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
    /// up on it, [`Shared::routed`]).
    Admit { msg: Vec<u8>, ctx: Option<ReqCtx>, buckets: Vec<String>, limits: String },
    /// The record of a task whose owner could not answer `why`.
    Adopt { task: ForwardedTask, why: String },
    /// A call's remembered approval; `msg` and `ctx`: the call, routed
    /// again with the answer ([`Shared::approval`]).
    #[cfg(feature = "consent")]
    Approval { msg: Vec<u8>, ctx: Option<ReqCtx> },
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
pub(super) struct ForwardedTask {
    to: ReplicaId,
    task: String,
    /// The client's request, to serve here should this replica take the
    /// task over.
    msg: Vec<u8>,
    /// Its record was read already (a request follows at most one record
    /// to a new owner).
    looked_up: bool,
}

/// What the shared state asks the hub to do, in order.
pub(super) enum Effect {
    /// Write this output: an ask for the store, a forward to a replica.
    Out(Output),
    /// Answer client `c`'s request `id` with this error.
    Refuse(ClientId, Vec<u8>, Refusal),
    /// Answer a retry whose `requestState` is refused as the relay words it.
    RefuseState(ClientId, Vec<u8>, OpenError),
    /// Continue retry `msg` (its nonce claimed in the store).
    Resume { c: ClientId, id: Vec<u8>, msg: Vec<u8>, ctx: ReqCtx, inner: Vec<u8>, responses: Option<Value> },
    /// Route request `msg` again (its rate limits granted in the store;
    /// `ctx`: a modern one's context).
    Route { c: ClientId, msg: Vec<u8>, ctx: Option<ReqCtx> },
    /// The store refused request `id` by this limit: audited and counted
    /// as a local refusal is (the answer follows).
    Limited(ClientId, Vec<u8>, crate::policy::ratelimit::Refusal),
    /// The owner's answer to forwarded request `id` reached the client:
    /// the request is closed.
    Closed(ClientId, Vec<u8>),
    /// Forward request `id` to the replica that now runs its task (the
    /// client's principal is the hub's to give).
    Forward(ClientId, Vec<u8>, ForwardedTask),
    /// Take task `task` over from its owner `from`, gone (`why`), from
    /// its `record`; then serve the request `msg`.
    TakeOver { c: ClientId, id: Vec<u8>, task: String, from: ReplicaId, why: String, record: Value, msg: Vec<u8> },
}

/// What the shared state acts under: the cluster options, the cap on
/// requests forwarded or parked (`maxPending`), and the hub's time.
#[derive(Clone, Copy)]
pub(super) struct At<'a> {
    pub cluster: &'a ClusterOptions,
    pub max_pending: usize,
    pub now: u64,
}

impl<'a> At<'a> {
    pub fn of(opts: &'a super::HubOptions, now: u64) -> At<'a> {
        At { cluster: &opts.cluster, max_pending: opts.max_pending, now }
    }
}

impl Effect {
    fn refuse(c: ClientId, id: &[u8], code: ErrorCode, msg: String) -> Effect {
        Effect::Refuse(c, id.to_vec(), Refusal(code, msg, None))
    }
}

impl Shared {
    /// A retry whose `requestState` verified, held by replica `to`:
    /// forwarded there, which makes the claim itself.
    pub fn forward_state(&mut self, c: ClientId, msg: &[u8], id: &[u8], principal: &[u8], to: ReplicaId, at: At<'_>) -> Effect {
        self.forward(c, msg, id, principal, Forwarded::State(to), at)
    }

    /// A retry whose `requestState` verified: its nonce claimed in the store
    /// (parked until it answers).
    pub fn claim(&mut self, c: ClientId, m: &Msg, id: &[u8], ctx: ReqCtx, claim: Op, inner: Vec<u8>, responses: Option<Value>, at: At<'_>) -> Effect {
        let wait = Wait::Claim { msg: m.env.bytes().to_vec(), ctx, inner, responses };
        self.ask_for(c, id, claim, wait, at)
    }

    /// A modern `tasks/*` request naming task `task`, which replica `to`
    /// runs: forwarded to it.
    pub fn forward_task(&mut self, c: ClientId, m: &Msg, id: &[u8], principal: &[u8], to: ReplicaId, task: String, at: At<'_>) -> Effect {
        let what = ForwardedTask { to, task, msg: m.env.bytes().to_vec(), looked_up: false };
        self.forward(c, m.env.bytes(), id, principal, Forwarded::Task(what), at)
    }

    /// Sends client `c`'s task request to the replica that now runs it.
    pub fn forward_again(&mut self, c: ClientId, id: &[u8], principal: &[u8], mut t: ForwardedTask, at: At<'_>) -> Effect {
        let msg = std::mem::take(&mut t.msg);
        self.forward(c, &msg, id, principal, Forwarded::Task(t), at)
    }

    /// Sends client `c`'s request `msg` to the replica that owns what it
    /// continues, or answers why it cannot.
    fn forward(&mut self, c: ClientId, msg: &[u8], id: &[u8], principal: &[u8], what: Forwarded, at: At<'_>) -> Effect {
        let to = what.to().clone();
        if !at.cluster.peers.contains(&to) {
            return unforwarded(c, id, &what, "is not among this replica's peers (cluster.peers)");
        }
        if self.forwards.len() >= at.max_pending {
            return Effect::refuse(c, id, ErrorCode::InternalError, format!("mcpx is at its limit of {} requests in flight (maxPending); retry later", at.max_pending));
        }
        self.forwards.insert((c, IdKey::new(id)), what);
        // The hub gives it the request's trace context (`Hub::apply_shared`).
        Effect::Out(Output::Forward { client: c, request: IdKey::new(id), msg: msg.to_vec(), principal: principal.to_vec(), to, traceparent: None })
    }

    /// The runtime finished forwarding client `c`'s request `request`.
    pub fn forward_done(&mut self, c: ClientId, request: &[u8], result: Result<(), String>, at: At<'_>) -> Option<Effect> {
        let what = self.forwards.remove(&(c, IdKey::new(request)))?;
        Some(match result {
            // The owner's answer went to the client: the request is closed.
            Ok(()) => Effect::Closed(c, request.to_vec()),
            // The owner is gone: the task's record tells whether this
            // replica can take it over.
            Err(why) => match what {
                Forwarded::Task(task) if at.cluster.shared && !task.looked_up => {
                    let op = Op::Get { key: task_key(&task.task) };
                    self.ask_for(c, request, op, Wait::Adopt { task, why }, at)
                }
                what => unforwarded(c, request, &what, &format!("could not answer ({why})")),
            },
        })
    }

    /// Parks client `c`'s request `id` until the store answers `op`.
    fn ask_for(&mut self, c: ClientId, id: &[u8], op: Op, wait: Wait, at: At<'_>) -> Effect {
        match self.ask_ticket(c, id, op, wait, at) {
            Ok((_, ask)) => Effect::Out(Output::Shared(ask)),
            Err(msg) => Effect::refuse(c, id, ErrorCode::InternalError, msg),
        }
    }

    /// Asks `op` for client `c`'s request `id`, parked as `wait`: its
    /// ticket and the ask, or (over the cap of parked requests) the error
    /// to answer.
    fn ask_ticket(&mut self, c: ClientId, id: &[u8], op: Op, wait: Wait, at: At<'_>) -> Result<(u64, Ask), String> {
        if self.waiting.len() >= at.max_pending {
            return Err(format!("mcpx is at its limit of {} requests waiting for its shared state store (maxPending); retry later", at.max_pending));
        }
        self.next_ticket += 1;
        let ticket = self.next_ticket;
        let deadline = at.now.saturating_add(at.cluster.answer_timeout_ms.max(1));
        self.waiting.insert(ticket, Waiter { client: c, id: id.to_vec(), deadline, wait });
        self.next.forget();
        Ok((ticket, Ask { ticket, op }))
    }

    /// The store answered `ticket`: what the request parked for it does
    /// (nothing when its client is gone, `live` says).
    pub fn answered(&mut self, ticket: u64, answer: Answer, cluster: &ClusterOptions, live: impl Fn(ClientId) -> bool) -> Vec<Effect> {
        let Some(w) = self.waiting.remove(&ticket) else { return Vec::new() };
        self.next.forget();
        if !live(w.client) {
            return Vec::new();
        }
        self.store_answered(w, answer, cluster)
    }

    fn store_answered(&mut self, w: Waiter, answer: Answer, cluster: &ClusterOptions) -> Vec<Effect> {
        let Waiter { client: c, id, wait, .. } = w;
        let refuse = |msg: String| vec![Effect::refuse(c, &id, ErrorCode::InternalError, msg)];
        match (wait, answer) {
            (Wait::Adopt { task, why }, Answer::Value(Some(v))) => vec![adopt(c, id, task, why, &v, cluster.replica.as_ref())],
            (Wait::Adopt { task, why }, answer) => {
                let more = match answer {
                    Answer::Value(None) => "the shared state store has no record of it (ended, expired or unknown)".to_string(),
                    a => format!("the shared state store could not be asked for its record ({})", a.failure()),
                };
                vec![unforwarded(c, &id, &Forwarded::Task(task), &format!("could not answer ({why}), and {more}"))]
            }
            (Wait::Claim { msg, ctx, inner, responses }, Answer::Granted) => vec![Effect::Resume { c, id, msg, ctx, inner, responses }],
            // Requirement: mrtr-single-use-enforced (used on any replica: refused on every other)
            (Wait::Claim { .. }, Answer::Refused { .. }) => vec![Effect::RefuseState(c, id, OpenError::Replayed)],
            (Wait::Claim { .. }, a @ (Answer::Unavailable(_) | Answer::Value(_))) => {
                let why = a.failure();
                refuse(format!("mcpx could not ask its shared state store ({why}), so this requestState could not be checked for single use: it was refused, not accepted, and nothing was sent to the server. Send the same request again later (should that be refused as already used, send it without requestState to start over)"))
            }
            (Wait::Admit { msg, ctx, buckets, .. }, Answer::Granted) => {
                // Routed again, as it came: these buckets are not asked twice.
                self.granted.insert((c, IdKey::new(&id)), buckets);
                vec![Effect::Route { c, msg, ctx }]
            }
            (Wait::Admit { limits, .. }, Answer::Refused { retry_after_ms }) => {
                let r = crate::policy::ratelimit::Refusal { limit: limits, retry_after_ms };
                let refusal = Refusal(crate::policy::ratelimit::Refusal::CODE, format!("{r} (a limit the replicas share)"), Some(r.data()));
                vec![Effect::Limited(c, id.clone(), r), Effect::Refuse(c, id, refusal)]
            }
            // No approval found, or none could be asked for: a person is asked.
            #[cfg(feature = "consent")]
            (Wait::Approval { msg, ctx }, answer) => {
                let note = match answer {
                    Answer::Value(Some(v)) => Some(String::from_utf8_lossy(&v).into_owned()),
                    _ => None,
                };
                self.approvals.insert((c, IdKey::new(&id)), note);
                vec![Effect::Route { c, msg, ctx }]
            }
            (Wait::Admit { .. }, a @ (Answer::Unavailable(_) | Answer::Value(_))) => {
                let why = a.failure();
                refuse(format!("mcpx could not ask its shared state store ({why}), so this request's rate limits could not be checked: it was refused and nothing was sent to the server; retry later"))
            }
        }
    }

    /// Requests whose store answer is overdue (at `now`) get the store's
    /// error: never a hang.
    pub fn tick(&mut self, now: u64, cluster: &ClusterOptions, live: impl Fn(ClientId) -> bool) -> Vec<Effect> {
        let mut due: Vec<u64> = self.waiting.iter().filter(|(_, w)| w.deadline <= now).map(|(t, _)| *t).collect();
        due.sort_unstable();
        let bound = cluster.answer_timeout_ms;
        let mut effects = Vec::new();
        if !due.is_empty() {
            self.next.forget();
        }
        for t in due {
            let Some(w) = self.waiting.remove(&t) else { continue };
            if live(w.client) {
                effects.extend(self.store_answered(w, Answer::Unavailable(format!("it did not answer within {bound} ms")), cluster));
            }
        }
        effects
    }

    pub fn deadline(&self) -> Option<u64> {
        self.next.get(|| self.waiting.values().map(|w| w.deadline).min())
    }

    /// Client `c` is gone: nothing of it waits for the store or a replica.
    pub fn drop_client(&mut self, c: ClientId) {
        self.waiting.retain(|_, w| w.client != c);
        self.next.forget();
        self.forwards.retain(|(fc, _), _| *fc != c);
        self.granted.retain(|(gc, _), _| *gc != c);
        #[cfg(feature = "consent")]
        self.approvals.retain(|(ac, _), _| *ac != c);
    }

    /// With a shared store, an approval remembered on any replica for
    /// client `c`'s call `m` (its `key`, [`approval_key`]): asked of the
    /// store (`Err`: the ask to write; the call waits and is routed again),
    /// then, routed again, what it said (`Ok`: the approval's audit note,
    /// or none). Over the cap of parked requests nothing is asked.
    #[cfg(feature = "consent")]
    pub fn approval(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>, key: String, at: At<'_>) -> Result<Option<String>, Effect> {
        let id = m.id_bytes().unwrap_or(b"null");
        if let Some(note) = self.approvals.remove(&(c, IdKey::new(id))) {
            return Ok(note);
        }
        let wait = Wait::Approval { msg: m.env.bytes().to_vec(), ctx: ctx.cloned() };
        match self.ask_ticket(c, id, Op::Get { key }, wait, at) {
            Ok((_, ask)) => Err(Effect::Out(Output::Shared(ask))),
            Err(_) => Ok(None),
        }
    }

    /// Routing client `c`'s request `m` ended with `routed`: a request that
    /// now waits for the store's rate limits ([`Shared::admit`]) is
    /// parked, not refused.
    pub fn routed(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>, routed: Result<(), Refusal>) -> Result<(), Refusal> {
        let parked = self.parking.take();
        // Without a shared store nothing is ever granted: no key to make.
        if !self.granted.is_empty() {
            self.granted.remove(&(c, IdKey::new(m.id_bytes().unwrap_or(b"null"))));
        }
        match parked.and_then(|t| self.waiting.get_mut(&t)) {
            Some(Waiter { wait: Wait::Admit { msg, ctx: parked_ctx, .. }, .. }) if routed.is_err() => {
                *msg = m.env.bytes().to_vec();
                *parked_ctx = ctx.cloned();
                Ok(())
            }
            _ => routed,
        }
    }

    /// With a shared store, the per-principal limit of client `c`'s
    /// request `id` (`limit`: its name for errors) is taken in the store,
    /// so it holds across the replicas. Granted already (the request routed
    /// again): `Ok`. Else the store is asked (the ask to write) and the
    /// refusal stops the routing: the request waits ([`Shared::routed`]).
    pub fn admit(&mut self, c: ClientId, id: &[u8], bucket: Bucket, limit: String, at: At<'_>) -> Result<(), (Refusal, Option<Effect>)> {
        let key = (c, IdKey::new(id));
        if self.granted.get(&key).is_some_and(|g| g.contains(&bucket.name)) {
            return Ok(());
        }
        let mut names = self.granted.get(&key).cloned().unwrap_or_default();
        names.push(bucket.name.clone());
        let wait = Wait::Admit { msg: Vec::new(), ctx: None, buckets: names, limits: limit };
        match self.ask_ticket(c, id, Op::TakeTokens { buckets: vec![bucket] }, wait, at) {
            Ok((ticket, ask)) => {
                self.parking = Some(ticket);
                // Not an answer: `routed` parks the request instead.
                Err((Refusal(ErrorCode::InternalError, "waiting for the shared state store".to_string(), None), Some(Effect::Out(Output::Shared(ask)))))
            }
            Err(msg) => Err((Refusal(ErrorCode::InternalError, msg, None), None)),
        }
    }
}

/// The ask that publishes task `id`'s owner `me` and `record` in the store
/// until it expires (`ttl_ms`), for another replica to take over should
/// this one be gone; nobody waits for it (ticket 0).
pub(super) fn publish(me: &ReplicaId, id: &str, record: Value, ttl_ms: u64) -> Ask {
    let value = serde_json::to_vec(&serde_json::json!({ "owner": me, "task": record })).unwrap_or_default();
    Ask { ticket: 0, op: Op::Put { key: task_key(id), value, ttl_ms } }
}

/// The start-over error of a request whose owner cannot serve it.
fn unforwarded(c: ClientId, id: &[u8], what: &Forwarded, why: &str) -> Effect {
    // Requirement: mrtr-requeststate-attacker-controlled (a state that cannot be resumed is refused, never guessed at)
    let msg = match what {
        Forwarded::State(to) => format!("Invalid params: requestState refers to a request held by mcpx replica '{to}', which {why}; nothing was sent to the server. Send the request again without requestState to start over"),
        Forwarded::Task(t) => return task_unforwarded(c, id, &t.to, why),
    };
    Effect::refuse(c, id, ErrorCode::InvalidParams, msg)
}

/// The record `v` of task `t.task`, whose owner `t.to` could not answer
/// (`why`): the task is taken over here (answered as if it had always run
/// here) unless another replica took it over already (then the request
/// goes there).
fn adopt(c: ClientId, id: Vec<u8>, mut t: ForwardedTask, why: String, v: &[u8], me: Option<&ReplicaId>) -> Effect {
    let read = serde_json::from_slice::<Value>(v).ok().and_then(|mut v| Some((v.get("owner")?.as_str()?.to_string(), v.get_mut("task")?.take())));
    let Some((owner, record)) = read else {
        let why = format!("could not answer ({why}), and the task's record in the shared state store is unreadable");
        return unforwarded(c, &id, &Forwarded::Task(t), &why);
    };
    t.looked_up = true;
    if owner != t.to && me != Some(&owner) {
        t.to = owner;
        return Effect::Forward(c, id, t);
    }
    Effect::TakeOver { c, id, task: t.task, from: t.to, why, record, msg: t.msg }
}

/// A task that cannot be taken over here from replica `from` (`why`):
/// its request's error.
pub(super) fn not_taken_over(c: ClientId, id: &[u8], from: &ReplicaId, why: &str) -> Effect {
    let why = format!("could not answer ({why}), and its task cannot be taken over here (expired, of a server not configured here, or over the task limit)");
    task_unforwarded(c, id, from, &why)
}

/// The error of a task request whose owner `to` cannot serve it (`why`).
fn task_unforwarded(c: ClientId, id: &[u8], to: &ReplicaId, why: &str) -> Effect {
    let msg = format!("Invalid params: the task is run by mcpx replica '{to}', which {why}; its outcome cannot be fetched through this replica");
    Effect::refuse(c, id, ErrorCode::InvalidParams, msg)
}
