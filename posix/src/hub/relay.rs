//! Server→client requests: an upstream asks for input (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`) and the hub relays it to a client.
//!
//! This is the one place that knows how an upstream's need for input reaches a
//! client. For a legacy client it is a wire request with a fresh id (the hub's,
//! unique per hub) whose answer goes back to the upstream under the upstream's
//! original id, byte for byte. A modern (2026-07-28) client gets an
//! `InputRequiredResult` instead, and the reverse happens towards modern
//! upstreams. All four era pairs:
//!
//! - legacy client, legacy upstream: the wire request above.
//! - modern client, legacy upstream: the upstream's request parks the call
//!   ([`Held`]): the client's request is answered `input_required` with the
//!   request under a key unique in the call (`<server>-<n>`) and a
//!   `requestState` sealed by `mcpx_core::request_state` (principal, expiry
//!   `input_ttl_ms`, method, digest of the salient params, nonce; inner state
//!   = the held call's handle). The upstream call stays open (bounded by
//!   `max_relays` held calls in all, an eighth of them per principal
//!   ([`HeldCalls`]), and `input_ttl_ms`) until the retry brings
//!   `inputResponses`, on any connection of the same principal; then the
//!   upstream's requests are answered with them and the call is the retry's.
//!   Requests the upstream makes together (within `input_coalesce_ms`) go in
//!   one round; those it makes while held, and those the retry left
//!   unanswered, in the next. Only what the request's capabilities declare is
//!   asked; the rest is refused to the upstream when the round ends, and a
//!   round with nothing the client can give is -32021 (with
//!   `requiredCapabilities`) to the client and a cancellation upstream. A state that fails any check
//!   (signature, expiry, principal, method, params, single use) is -32602
//!   naming the check, and nothing reaches the upstream.
//! - modern client, modern upstream: the upstream's `InputRequiredResult`
//!   passes through with the hub's sealed state wrapping the upstream's
//!   `requestState` (inner state); the retry is forwarded with the upstream's
//!   own state restored.
//! - legacy client, modern upstream: each of the upstream's `inputRequests`
//!   becomes a wire request to the client (fresh ids, [`Collect`]); once all
//!   are answered the call is retried upstream with a new id, the answers as
//!   `inputResponses` and the upstream's `requestState` echoed exactly.
//!
//! Which client: only one the wire names, never a guess ([`Relays::cause_of`]).
//! The creator of the task its `related-task` `_meta` names (a task the
//! upstream runs for a client); else the call on whose HTTP response stream
//! the request came (the remote transport tells), else the call whose
//! progress token it carries; else the one caller
//! with calls live at that upstream; else the one principal with calls held
//! there for a retry (a held call is its own conversation, resumed only by
//! its `requestState`); with no call at all, the only initialized client, if
//! there is exactly one. When several callers qualify and nothing names one
//! (legacy stdio has no other link between a server's request and the call
//! it serves), nobody is asked: the upstream gets an error saying why and a
//! warning is logged. Only what that client declared in its capabilities is
//! relayed; otherwise the upstream gets an error at
//! once. Roots may come from the configuration (`HubOptions::roots`) instead.

use mcpx_core::error::ErrorCode;
use mcpx_core::method::Method;
use std::collections::HashMap;

use mcpx_core::request_state::{self as rs, Binding, Keys, ReplaySet, Seeded};
use serde_json::{json, Map, Value};

use super::request::{ReqCtx, MODERN};
use super::pending::{Called, Origin, Pending};
use crate::policy::ratelimit::{Quota, QuotaRefusal};
use super::shape::{self, RevExt};
use super::earliest::Earliest;
use super::wire::{self, Msg};
use super::trace::{asker, Asker};
use super::upstream::Upstream;
use super::{ClientId, HubOptions, IdKey, Level, UpstreamId, UpstreamSpec};

/// Tokens redeemed within one `input_ttl_ms` that the replay set remembers.
const REPLAY_CAP: usize = 4096;

/// Of which one principal may hold this many (issue 11 item 3: one client
/// must not lock the others out of their retries).
const REPLAY_SHARE: usize = REPLAY_CAP / 8;

/// URL elicitations relayed to legacy clients whose completion notice may
/// still come (the oldest are forgotten first).
const URL_ELICITATIONS_CAP: usize = 1024;

/// Inner state tags of the hub's `requestState`.
const INNER_HELD: u8 = 1;
const INNER_UPSTREAM_STATE: u8 = 2;
const INNER_UPSTREAM_NO_STATE: u8 = 3;
/// The elicitation schemas whose answers are checked (`policy`), a 4-byte
/// length and the JSON, before one of the two above.
const INNER_CHECKED: u8 = 4;
/// The replica that minted a state for a round of a server running on it
/// (a 1-byte length and its id), before one of the above: that server's own
/// `requestState` opens with it only, so a retry reaching another replica
/// is forwarded there (`shared`), which claims the nonce.
const INNER_ON_REPLICA: u8 = 5;
/// A modern client's call that waits for its user's approval
/// (`approvals`): the retry's `inputResponses` carry the decision.
pub(super) const INNER_APPROVAL: u8 = 6;
/// A modern client's call that waited for its principal to authorize a
/// server (`url_ask`): the retry is routed anew.
#[cfg(feature = "secrets")]
pub(super) const INNER_AUTHORIZE: u8 = 7;

/// A `requestState` that verified, not yet used ([`Relays::claim_state`]).
#[derive(Clone, Debug)]
pub(super) struct Verified {
    pub inner: Vec<u8>,
    key_id: u8,
    expires_at_ms: u64,
    pub nonce: [u8; rs::NONCE_LEN],
}

/// One request of an upstream for input, waiting for a modern client.
#[derive(Clone, Debug)]
pub(super) struct Ask {
    /// Its key in `inputRequests`.
    pub key: String,
    /// The upstream's request id, raw JSON.
    pub up_id: Vec<u8>,
    pub method: String,
    /// Params as the modern client sees them.
    pub params: Value,
    /// Sent to the client in an `InputRequiredResult` already.
    pub asked: bool,
    /// The client's request does not declare what it needs: never asked;
    /// the upstream gets an error when the round ends.
    pub refused: Option<Missing>,
}

/// An upstream call held for a modern client's retry.
#[derive(Clone, Debug)]
pub(super) struct Held {
    pub up: UpstreamId,
    /// The principal of the request answered last: only its retry brings
    /// the call back, so a held call waiting for it is that principal's
    /// conversation ([`Relays::cause_of`]).
    pub principal: Vec<u8>,
    /// The hub's id of the call upstream.
    pub call: u64,
    /// The client's method and renamed URI, restored on the retry.
    pub method: String,
    pub renamed_uri: Option<(String, String)>,
    pub asks: Vec<Ask>,
    /// Capabilities of the request that was answered last.
    pub caps: Value,
    /// The upstream's final answer, when it came before the retry: given
    /// to the retry (until `deadline`).
    pub done: Option<Vec<u8>>,
    pub deadline: Option<u64>,
    /// The client request to answer `input_required` once the coalescing
    /// window (`due`) has passed, so that requests the upstream makes at
    /// once travel in one round.
    answer_to: Option<Waiting>,
    due: u64,
}

/// A modern client's request waiting for its `input_required` answer.
#[derive(Clone, Debug)]
struct Waiting {
    client: ClientId,
    id: Vec<u8>,
    progress: Option<Vec<u8>>,
    ctx: Box<ReqCtx>,
}

/// A legacy client's call whose modern upstream asked for input: the wire
/// requests relayed to the client, and their answers so far.
#[derive(Clone, Debug)]
pub(super) struct Collect {
    pub up: UpstreamId,
    pub client: ClientId,
    pub id: Vec<u8>,
    pub progress: Option<Vec<u8>>,
    pub method: String,
    pub renamed_uri: Option<(String, String)>,
    /// Params as last sent upstream.
    pub sent: Vec<u8>,
    /// The upstream's `requestState`, echoed exactly.
    pub state: Option<String>,
    pub waiting: usize,
    pub responses: Map<String, Value>,
}

/// One relayed request.
#[derive(Clone, Debug)]
pub(super) struct Relayed {
    pub up: UpstreamId,
    /// The upstream's id, raw JSON (empty for a `Collect` part).
    pub up_id: Vec<u8>,
    pub method: String,
    pub deadline: u64,
    /// Part of a `Collect`: (its handle, the input request's key).
    pub collect: Option<(u64, String)>,
}

/// One principal may hold this fraction of `max_relays` calls for retries
/// (issue 11 item 3: one client must not lock the others out).
const HELD_SHARE_DIVISOR: usize = 8;

/// Calls held for modern clients' retries, bounded by `max_relays` in all
/// and by a share per principal: taking a place and giving it back happen
/// here only, so the counts cannot drift.
pub(super) struct HeldCalls {
    map: HashMap<u64, Held>,
    quota: Quota,
    /// When the first of them is due or expires (forgotten by each change).
    next: Earliest,
}

impl HeldCalls {
    fn new(max_relays: usize) -> HeldCalls {
        let share = (max_relays / HELD_SHARE_DIVISOR).max(1);
        HeldCalls { map: HashMap::new(), quota: Quota::new("held calls (requests waiting for a client's retry)", max_relays, share), next: Earliest::default() }
    }

    /// Holds `held` under `h`, if its principal has a place left.
    fn insert(&mut self, h: u64, held: Held) -> Result<(), (Held, QuotaRefusal)> {
        if let Err(e) = self.quota.acquire(&String::from_utf8_lossy(&held.principal)) {
            return Err((held, e));
        }
        self.next.forget();
        self.map.insert(h, held);
        Ok(())
    }

    fn remove(&mut self, h: &u64) -> Option<Held> {
        let held = self.map.remove(h)?;
        self.next.forget();
        self.quota.release(&String::from_utf8_lossy(&held.principal));
        Some(held)
    }

    pub fn get(&self, h: &u64) -> Option<&Held> {
        self.map.get(h)
    }

    fn get_mut(&mut self, h: &u64) -> Option<&mut Held> {
        self.next.forget();
        self.map.get_mut(h)
    }

    pub fn len(&self) -> usize {
        debug_assert_eq!(self.quota.total(), self.map.len(), "every held call holds one place, no place outlives its call");
        self.map.len()
    }

    fn iter(&self) -> impl Iterator<Item = (&u64, &Held)> {
        self.map.iter()
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut Held> {
        self.next.forget();
        self.map.values_mut()
    }

    /// When the first held call is due (its `input_required` answer) or
    /// expires (its final answer kept for the retry).
    fn next_deadline(&self) -> Option<u64> {
        self.next.get(|| self.map.values().filter_map(|h| if h.answer_to.is_some() { Some(h.due) } else { h.deadline }).min())
    }
}

/// The relayed requests, by (client, relay id), with the earliest of their
/// deadlines kept until one comes or goes (a request's deadline does not
/// change); read through `Deref`, changed only here.
#[derive(Default)]
pub(super) struct RelayedMap {
    map: HashMap<(ClientId, u64), Relayed>,
    next: Earliest,
}

impl RelayedMap {
    fn insert(&mut self, k: (ClientId, u64), r: Relayed) {
        self.next.forget();
        self.map.insert(k, r);
    }

    fn remove(&mut self, k: &(ClientId, u64)) -> Option<Relayed> {
        let r = self.map.remove(k)?;
        self.next.forget();
        Some(r)
    }

    fn next_deadline(&self) -> Option<u64> {
        self.next.get(|| self.map.values().map(|r| r.deadline).min())
    }
}

impl std::ops::Deref for RelayedMap {
    type Target = HashMap<(ClientId, u64), Relayed>;

    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

pub(super) struct Relays {
    map: RelayedMap,
    next_id: u64,
    pub held: HeldCalls,
    next_held: u64,
    next_key: u64,
    collects: HashMap<u64, Collect>,
    keys: Keys,
    seeded: Seeded,
    replay: Box<ReplaySet<REPLAY_CAP>>,
    /// URL elicitations relayed to legacy clients: (upstream, its
    /// `elicitationId`, the client asked), oldest first.
    urls: std::collections::VecDeque<(UpstreamId, String, ClientId)>,
    set: Settings,
}

impl Relays {
    pub fn new(opts: &HubOptions) -> Relays {
        // Replicas share the sealing key (`MCPX_STATE_KEY`), so a state one
        // sealed verifies on another; each draws its nonces from its own
        // seed and its replica id, so two never mint the same nonce.
        let key_seed = opts.cluster.state_key.unwrap_or(opts.secret_seed);
        let keys = Keys::new(Seeded::new(key_seed).key(1), None).expect("one key");
        let mut nonce_seed = opts.secret_seed.to_vec();
        if let Some(r) = &opts.cluster.replica {
            nonce_seed.extend_from_slice(b"mcpx/replica\0");
            nonce_seed.extend_from_slice(r.as_bytes());
        }
        let seeded = Seeded::new(rs::digest(&nonce_seed));
        Relays {
            map: RelayedMap::default(),
            next_id: 0,
            held: HeldCalls::new(opts.max_relays),
            next_held: 0,
            next_key: 0,
            collects: HashMap::new(),
            keys,
            seeded,
            replay: Box::new(ReplaySet::with_share(REPLAY_SHARE)),
            urls: std::collections::VecDeque::new(),
            set: Settings::of(opts),
        }
    }
    pub fn len(&self) -> usize {
        self.map.len() + self.held.len()
    }
    /// Input requests of each upstream waiting for a client: relayed to
    /// one, or held for a modern client's retry.
    #[cfg(feature = "activity")]
    pub fn waiting(&self) -> HashMap<UpstreamId, usize> {
        let mut n = HashMap::new();
        for up in self.map.values().map(|r| r.up).chain(self.held.iter().map(|(_, h)| h.up)) {
            *n.entry(up).or_default() += 1;
        }
        n
    }
    pub fn next_deadline(&self) -> Option<u64> {
        self.map.next_deadline().into_iter().chain(self.held.next_deadline()).min()
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

/// The call an upstream's request for input serves ([`Relays::cause_of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    Call(u64),
    /// The connection that created the task the request relates to.
    Task(ClientId),
    /// No client call is in flight to that upstream.
    None,
    /// This many callers have calls there and nothing names one.
    Several(usize),
}

/// What the wire says about which call a server request serves; each is
/// exact, none a guess.
#[derive(Clone, Debug, Default)]
pub(super) struct Link {
    /// The hub's request on whose HTTP response stream it came (the
    /// transport says so: `Input::UpstreamMessage`).
    stream: Option<u64>,
    /// The progress token it carries (the token the hub sends is the
    /// call's upstream id).
    progress: Option<u64>,
    /// The upstream's task id of its `related-task` `_meta`.
    pub task: Option<String>,
}

impl Link {
    fn of(m: &Msg, stream: Option<u64>) -> Link {
        let progress = m.env.progress_token().and_then(|t| wire::id_u64(t.bytes()));
        Link { stream, progress, task: m.related_task_id() }
    }
}

/// Who a call to an upstream serves, for telling callers apart.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Caller {
    Client(ClientId),
    /// A held call waiting for its retry, which any connection of this
    /// principal may bring.
    Principal(Vec<u8>),
}

/// The call of the one caller among `calls` (its latest), or why not.
fn one_caller(calls: &[(u64, u64, Caller)]) -> Cause {
    let mut who: Vec<&Caller> = calls.iter().map(|c| &c.2).collect();
    who.sort_unstable();
    who.dedup();
    match who.len() {
        0 => Cause::None,
        1 => calls.iter().map(|c| (c.1, c.0)).max().map_or(Cause::None, |(_, id)| Cause::Call(id)),
        n => Cause::Several(n),
    }
}

/// Methods an upstream may ask of a client.
const RELAYED: [(&str, &str); 3] =
    [("sampling/createMessage", "sampling"), ("elicitation/create", "elicitation"), ("roots/list", "roots")];

/// A capability a request for input needs that the client did not declare.
#[derive(Clone, Debug)]
pub(super) struct Missing {
    pub why: String,
    /// As `ClientCapabilities`, for `MissingRequiredClientCapabilityError`.
    pub required: Value,
}

/// Whether a client with capabilities `caps` may be asked `method` with
/// `params`; else what is missing.
fn declared(method: &str, params: &Value, caps: &Value) -> Result<(), Missing> {
    let missing = |why: String, required: Value| Err(Missing { why, required });
    let Some(cap) = RELAYED.iter().find(|(x, _)| *x == method).map(|(_, c)| *c) else {
        return missing(format!("'{method}' cannot be asked of a client"), json!({}));
    };
    let Some(declared) = caps.get(cap).filter(|v| !v.is_null()) else {
        return missing(format!("the client does not support {cap} (not in its capabilities)"), json!({ cap: {} }));
    };
    if method == "elicitation/create" {
        let mode = params.get("mode").and_then(Value::as_str).unwrap_or("form");
        let url_ok = declared.get("url").is_some();
        let form_ok = declared.get("form").is_some() || declared.get("url").is_none();
        if (mode == "url" && !url_ok) || (mode == "form" && !form_ok) {
            return missing(format!("the client does not support {mode} elicitation"), json!({ "elicitation": { mode: {} } }));
        }
    }
    let tool_use = params.get("tools").is_some() || params.get("toolChoice").is_some();
    if method == "sampling/createMessage" && tool_use && declared.get("tools").is_none() {
        return missing("the client does not support tool use in sampling".to_string(), json!({ "sampling": { "tools": {} } }));
    }
    Ok(())
}

/// Sampling params for a client with `caps`: `includeContext` other than
/// "none" only if it declared `sampling.context` (else omitted, which means
/// "none").
// Requirement: sampling-server-includecontext-only-with-context-capability
fn context_for(method: &str, mut params: Value, caps: &Value) -> Value {
    if method == "sampling/createMessage" && caps.pointer("/sampling/context").is_none() {
        if let Some(o) = params.as_object_mut() {
            if o.get("includeContext").is_some_and(|v| v != "none") {
                o.remove("includeContext");
            }
        }
    }
    params
}

/// Merges `b` into `a` (objects, recursively).
fn merge(a: &mut Value, b: &Value) {
    match (a.as_object_mut(), b.as_object()) {
        (Some(ao), Some(bo)) => {
            for (k, v) in bo {
                merge(ao.entry(k.clone()).or_insert_with(|| json!({})), v);
            }
        }
        _ => *a = b.clone(),
    }
}

/// What a relay step asks of the rest of the hub, in the order the outputs
/// must go out (the hub applies them in one place: `Hub::apply_relay`).
pub(super) enum Effect<'m> {
    Log(Level, String),
    /// An answer (result or error, these bytes) to one of the upstream's requests.
    ToUpstream(UpstreamId, Vec<u8>),
    /// A notification to the upstream (method, params).
    NotifyUpstream(UpstreamId, Method<'static>, Vec<u8>),
    /// The hub no longer waits for its call to the upstream.
    CancelCall { up: UpstreamId, call: u64, why: String },
    /// The hub's call to the upstream is forgotten (its client was answered).
    Forget(UpstreamId, u64),
    /// The hub's call to the upstream waits for held call `h`'s retry.
    Hold { up: UpstreamId, call: u64, h: u64, until: u64 },
    /// The hub's call to the upstream continues as the retry of `origin`.
    Resume { up: UpstreamId, call: u64, origin: Origin },
    /// A request to the client under the hub's id; `cause`: the client's
    /// request it is asked for, when known (an input round, traced).
    AskClient { client: ClientId, hid: u64, method: String, params: Vec<u8>, cause: Asker },
    /// Upstream request `msg` for a client, once policy admits it and no
    /// task takes it as its own input; then `Relays::relay_to_client`.
    Admit { up: UpstreamId, msg: &'m Msg<'m>, link: Link },
    /// Upstream `u`'s request to client `c` (for its request `cause`, when
    /// known) as a wire request, once its related task is renamed; then
    /// `Relays::relay_request_to`.
    RelayTo(ClientId, UpstreamId, &'m Msg<'m>, Asker),
    /// The retry `msg`, routed again with the upstream's own state.
    Route { client: ClientId, msg: &'m Msg<'m>, upstream_state: Option<Option<String>>, ctx: ReqCtx },
    /// The retry `msg` of a call that asked its user for approval, with
    /// the answers (`approvals`).
    Approval { client: ClientId, msg: &'m Msg<'m>, ctx: ReqCtx, responses: Option<Value> },
    /// The retry `msg`'s `inputResponses`, checked against `schemas`
    /// (`policy`) before it resumes with `inner`.
    Check { client: ClientId, msg: &'m Msg<'m>, id: Vec<u8>, ctx: ReqCtx, schemas: Value, inner: Vec<u8>, responses: Option<Value> },
    /// A notification to the client.
    NotifyClient(ClientId, Method<'static>, Value),
    /// An error for the client's request `id`.
    AnswerError { client: ClientId, id: Vec<u8>, code: ErrorCode, msg: String, data: Option<Value> },
    /// An `InputRequiredResult` for the client's request `id` (stamped as
    /// every modern result).
    InputRequired { client: ClientId, id: Vec<u8>, result: Value },
    /// The upstream's answer for the call of `origin`.
    Answer(UpstreamId, Origin, &'m Msg<'m>),
    /// The upstream's answer kept for a retry, raw.
    AnswerKept(UpstreamId, Origin, Vec<u8>),
    /// The call of `origin` sent to the upstream again with a new id: `body`
    /// gets that id as its progress token ([`with_progress`]).
    Retry { up: UpstreamId, origin: Origin, method: String, body: Vec<u8> },
}

/// `params` of a retried call with its new upstream id as progress token.
pub(super) fn with_progress(params: &[u8], up_id: u64) -> Vec<u8> {
    let mut meta = Map::new();
    meta.insert("progressToken".into(), json!(up_id));
    wire::set_meta(params, &meta, |_| false)
}

/// What the hub's options say about relays, kept by [`Relays`].
struct Settings {
    max_relays: usize,
    relay_timeout_ms: u64,
    input_ttl_ms: u64,
    input_coalesce_ms: u64,
    /// Unix time (ms) at the hub's clock zero, for the state clock.
    epoch_ms: u64,
    replica: Option<String>,
    roots: Option<Value>,
}

impl Settings {
    fn of(opts: &HubOptions) -> Settings {
        Settings {
            max_relays: opts.max_relays,
            relay_timeout_ms: opts.relay_timeout_ms,
            input_ttl_ms: opts.input_ttl_ms,
            input_coalesce_ms: opts.input_coalesce_ms,
            epoch_ms: opts.tasks.epoch_ms,
            replica: opts.cluster.replica.clone(),
            roots: opts.roots.clone(),
        }
    }
}

/// Refuses upstream `u`'s request `id` with an error and a log line.
fn refuse_at(fx: &mut Vec<Effect<'_>>, level: Level, server: &str, u: UpstreamId, id: &[u8], method: &str, code: ErrorCode, why: String) {
    fx.push(Effect::Log(level, format!("server '{server}': {method} refused: {why}")));
    fx.push(Effect::ToUpstream(u, wire::error(Some(id), code, &why, None)));
}

// ------------------------------------------------ the sealed state

impl Relays {
    /// The clock of `requestState` expiry: Unix time (ms), so that replicas
    /// (each with its own monotonic clock) agree on it; `now` is the hub's.
    fn state_clock(&self, now: u64) -> u64 {
        self.set.epoch_ms.saturating_add(now)
    }

    /// A `requestState` for `method`, bound to the request in `ctx`.
    pub fn seal(&mut self, method: &str, ctx: &ReqCtx, inner: &[u8], now: u64) -> Result<String, String> {
        let salient = ctx.salient.canonical();
        let b = Binding { principal: &ctx.principal, method, params: &salient };
        let nonce = self.seeded.nonce();
        let mut out = vec![0u8; rs::sealed_len(method.len(), inner.len())];
        let now = self.state_clock(now);
        self.keys.seal(&b, inner, &nonce, now, self.set.input_ttl_ms, &mut out).map(str::to_string).map_err(|e| format!("mcpx cannot carry this request's state: {e}"))
    }

    /// Checks a client's `requestState` (all but single use, which
    /// [`Relays::claim_state`] or the shared store's claim decides), or says
    /// which check failed.
    pub fn verify_state(&self, token: &str, method: &str, ctx: &ReqCtx, now: u64) -> Result<Verified, rs::OpenError> {
        // Requirement: mrtr-requeststate-attacker-controlled, mrtr-requeststate-replay-fields
        let salient = ctx.salient.canonical();
        let b = Binding { principal: &ctx.principal, method, params: &salient };
        let mut scratch = vec![0u8; token.len() + 4];
        let o = self.keys.verify(token, &b, self.state_clock(now), &mut scratch)?;
        Ok(Verified { inner: o.inner.to_vec(), key_id: o.key_id, expires_at_ms: o.expires_at_ms, nonce: o.nonce })
    }

    /// Uses verified state `v` of principal `principal` in this hub's
    /// single-use set: once only.
    // Requirement: mrtr-single-use-enforced
    pub fn claim_state(&mut self, v: &Verified, principal: &[u8], now: u64) -> Result<(), rs::OpenError> {
        let opened = rs::Opened { inner: &[], key_id: v.key_id, expires_at_ms: v.expires_at_ms, nonce: v.nonce };
        let now = self.state_clock(now);
        self.replay.claim(&opened, principal, now)
    }

    /// How long the single-use claim of `v` must last (ms).
    pub fn claim_ttl_ms(&self, v: &Verified, now: u64) -> u64 {
        v.expires_at_ms.saturating_sub(self.state_clock(now)).max(1)
    }

    /// The replica holding the call that state `inner` continues, when it
    /// is not this one.
    pub fn held_elsewhere(&self, inner: &[u8]) -> Option<String> {
        let owner = match inner.split_first() {
            Some((&INNER_HELD, rest)) => rest.get(8..)?,
            Some((&INNER_ON_REPLICA, rest)) => on_replica(rest)?.0,
            _ => return None,
        };
        let me = self.set.replica.as_deref().unwrap_or_default();
        (!owner.is_empty() && owner != me.as_bytes()).then(|| String::from_utf8_lossy(owner).into_owned())
    }

    /// The error for a retry whose `requestState` did not open (`e`): nothing
    /// reaches the upstream. A full share of the single-use set is a limit,
    /// not a bad token: the token stays good, and the client learns the
    /// limit and when a retry can succeed (over HTTP 429 + `Retry-After`).
    pub fn state_refusal(&self, e: rs::OpenError, now: u64) -> (ErrorCode, String, Option<Value>) {
        match e {
            rs::OpenError::ReplayShareFull { share, frees_at_ms } => {
                let r = crate::policy::ratelimit::Refusal {
                    limit: format!("requestState.singleUsePerPrincipal ({share} of {REPLAY_CAP} within inputTtlMs)"),
                    retry_after_ms: frees_at_ms.saturating_sub(self.state_clock(now)),
                };
                let msg = format!("limit {} reached: {e}; retry after {} ms (this requestState stays valid until then; nothing was sent to the server)", r.limit, r.retry_after_ms);
                (crate::policy::ratelimit::Refusal::CODE, msg, Some(r.data()))
            }
            e => (ErrorCode::InvalidParams, format!("Invalid params: {e}; nothing was sent to the server. Send the request again without requestState to start over"), None),
        }
    }

    /// A key for an input request: the server's name and a number unique
    /// in the hub, so keys never repeat within a call, across its rounds.
    pub fn new_key(&mut self, server: &str) -> String {
        self.next_key += 1;
        format!("{}-{}", mcpx_core::names::segment(server).as_str(), self.next_key)
    }
}

// ------------------------------------------------ rounds, answers and endings

impl Relays {
    /// The coalescing window of held call `h` has passed: its client gets
    /// the `InputRequiredResult` asking everything outstanding.
    fn answer_held<'m>(&mut self, fx: &mut Vec<Effect<'m>>, ups: &[Upstream], h: u64, now: u64) {
        let Some(held) = self.held.get_mut(&h) else { return };
        let Some(w) = held.answer_to.take() else { return };
        let (u, call) = (held.up, held.call);
        if held.asks.iter().all(|a| a.refused.is_some()) {
            // Nothing the client can give: the call needs a capability it did
            // not declare. The upstream's requests are refused, the call is
            // cancelled and the client told what to declare.
            // Requirement: errors-missing-required-client-capability
            let held = self.held.remove(&h).expect("held");
            let server = &ups[u].spec.name;
            let mut required = json!({});
            let mut why = Vec::new();
            for a in held.asks {
                let miss = a.refused.expect("refused");
                merge(&mut required, &miss.required);
                why.push(miss.why.clone());
                refuse_at(fx, Level::Info, server, u, &a.up_id, &a.method, ErrorCode::MethodNotFound, miss.why);
            }
            fx.push(Effect::Forget(u, call));
            fx.push(Effect::CancelCall { up: u, call, why: "the client lacks a capability the call needs".into() });
            let msg = format!("Missing required client capability: server '{server}' needs {} for this request ({}); declare it in io.modelcontextprotocol/clientCapabilities", required, why.join("; "));
            let data = json!({ "requiredCapabilities": required });
            fx.push(Effect::AnswerError { client: w.client, id: w.id, code: ErrorCode::MissingRequiredClientCapability, msg, data: Some(data) });
            return;
        }
        let method = held.method.clone();
        let mut inner = vec![INNER_HELD];
        inner.extend_from_slice(&h.to_be_bytes());
        // The call is held here: a retry that reaches another replica is
        // forwarded to this one (`shared`).
        inner.extend_from_slice(self.set.replica.as_deref().unwrap_or_default().as_bytes());
        let state = match self.seal(&method, &w.ctx, &inner, now) {
            Ok(s) => s,
            Err(why) => {
                let held = self.held.remove(&h).expect("held");
                for a in held.asks {
                    fx.push(Effect::ToUpstream(u, wire::error(Some(&a.up_id), ErrorCode::InternalError, &why, None)));
                }
                fx.push(Effect::CancelCall { up: u, call, why: why.clone() });
                fx.push(Effect::Forget(u, call));
                fx.push(Effect::AnswerError { client: w.client, id: w.id, code: ErrorCode::InternalError, msg: why, data: None });
                return;
            }
        };
        let held = self.held.get_mut(&h).expect("held");
        let mut requests = Map::new();
        for a in held.asks.iter_mut().filter(|a| a.refused.is_none()) {
            a.asked = true;
            requests.insert(a.key.clone(), json!({ "method": a.method, "params": a.params }));
        }
        // Requirement: mrtr-at-least-one-field, caching-input-required-no-hints
        let result = json!({ "resultType": "input_required", "inputRequests": requests, "requestState": state });
        fx.push(Effect::InputRequired { client: w.client, id: w.id, result });
    }

    /// Every input request of a `Collect` is answered: the call is retried
    /// upstream with a new id, the answers and the upstream's state.
    pub fn retry_collected(&mut self, fx: &mut Vec<Effect<'_>>, ups: &[Upstream], handle: u64) {
        let Some(col) = self.collects.remove(&handle) else { return };
        let u = col.up;
        if !ups[u].is_ready() {
            let msg = format!("server '{}' is not running; try again later", ups[u].spec.name);
            fx.push(Effect::AnswerError { client: col.client, id: col.id, code: ErrorCode::InternalError, msg, data: None });
            return;
        }
        let responses = serde_json::to_vec(&Value::Object(col.responses)).unwrap_or_default();
        let mut append: Vec<(&str, Vec<u8>)> = vec![("inputResponses", responses)];
        if let Some(s) = &col.state {
            // Requirement: mrtr-client-echo-state
            append.push(("requestState", wire::quote(s)));
        }
        let body = wire::edit_object(&col.sent, 0..col.sent.len(), |k, _| if k == "inputResponses" || k == "requestState" { wire::Edit::Drop } else { wire::Edit::Keep }, &append);
        let origin = Origin::Client { client: col.client, id: IdKey::new(&col.id), progress: col.progress, method: Called::new(&col.method), renamed_uri: col.renamed_uri, modern: None, sent: None };
        // Requirement: mrtr-new-id-on-retry
        fx.push(Effect::Retry { up: u, origin, method: col.method, body });
    }

    fn fail_collect(&mut self, fx: &mut Vec<Effect<'_>>, ups: &[Upstream], handle: u64, why: &str) {
        let Some(col) = self.collects.remove(&handle) else { return };
        let keys: Vec<(ClientId, u64)> = self.map.iter().filter(|(_, r)| r.collect.as_ref().is_some_and(|x| x.0 == handle)).map(|(k, _)| *k).collect();
        for k in keys {
            self.map.remove(&k);
            fx.push(Effect::NotifyClient(k.0, Method::Cancelled, json!({ "requestId": k.1, "reason": why })));
        }
        let server = ups[col.up].spec.name.clone();
        let msg = format!("server '{server}' asked for input that did not arrive: {why}");
        fx.push(Effect::AnswerError { client: col.client, id: col.id, code: ErrorCode::InternalError, msg, data: Some(json!({ "server": server })) });
    }

    /// A response from client `c`: the answer to a relayed request.
    pub fn on_client_response(&mut self, ups: &[Upstream], c: ClientId, m: &Msg) -> Vec<Effect<'static>> {
        let mut fx = Vec::new();
        let Some(hid) = m.id_u64() else { return fx };
        let Some(r) = self.map.remove(&(c, hid)) else {
            fx.push(Effect::Log(Level::Debug, format!("client {c}: answer to unknown or expired request {hid} ignored")));
            return fx;
        };
        let up_rev = ups[r.up].rev.unwrap_or(shape::Rev::LATEST_LEGACY);
        if let Some((handle, key)) = r.collect {
            match m.result_bytes() {
                Some(res) => {
                    let shaped = m.env.result().and_then(|v| shape::result_view(&r.method, v, up_rev)).unwrap_or_else(|| res.to_vec());
                    let v: Value = serde_json::from_slice(&shaped).unwrap_or_else(|_| json!({}));
                    let Some(col) = self.collects.get_mut(&handle) else { return fx };
                    col.responses.insert(key, v);
                    col.waiting = col.waiting.saturating_sub(1);
                    if col.waiting == 0 {
                        self.retry_collected(&mut fx, ups, handle);
                    }
                }
                None => {
                    let e = String::from_utf8_lossy(m.error_bytes().unwrap_or_default()).into_owned();
                    self.fail_collect(&mut fx, ups, handle, &format!("the client answered {} with an error: {e}", r.method));
                }
            }
            return fx;
        }
        let out = match (m.result_bytes(), m.error_bytes()) {
            (Some(res), _) => match m.env.result().and_then(|v| shape::result_view(&r.method, v, up_rev)) {
                Some(shaped) => wire::result(&r.up_id, &shaped),
                None => wire::result(&r.up_id, res),
            },
            (None, Some(err)) => wire::error_raw(Some(&r.up_id), err),
            _ => return fx,
        };
        if ups[r.up].is_up() {
            fx.push(Effect::ToUpstream(r.up, out));
        }
        fx
    }

    /// The upstream cancelled a request it had sent us.
    pub fn cancelled_by_upstream(&mut self, u: UpstreamId, up_id: &[u8], reason: Option<&str>) -> Vec<Effect<'static>> {
        let mut fx = Vec::new();
        if let Some(k) = self.find_upstream(u, up_id) {
            self.map.remove(&k);
            let mut p = json!({ "requestId": k.1 });
            if let Some(r) = reason {
                p["reason"] = Value::String(r.to_string());
            }
            fx.push(Effect::NotifyClient(k.0, Method::Cancelled, p));
        }
        for held in self.held.values_mut().filter(|h| h.up == u) {
            held.asks.retain(|a| a.up_id != up_id);
        }
        fx
    }

    /// The client cancelled a request the hub relayed to it: tell the upstream.
    pub fn cancelled_by_client(&mut self, ups: &[Upstream], c: ClientId, hid: u64, reason: Option<&str>) -> Vec<Effect<'static>> {
        let mut fx = Vec::new();
        let Some(r) = self.map.get(&(c, hid)) else { return fx };
        if let Some(handle) = r.collect.as_ref().map(|x| x.0) {
            self.fail_collect(&mut fx, ups, handle, reason.unwrap_or("the client cancelled it"));
            return fx;
        }
        let r = self.map.remove(&(c, hid)).expect("relayed");
        if ups[r.up].is_up() {
            let mut p = json!({});
            let idv: Value = serde_json::from_slice(&r.up_id).unwrap_or(Value::Null);
            p["requestId"] = idv;
            if let Some(x) = reason {
                p["reason"] = Value::String(x.to_string());
            }
            fx.push(Effect::NotifyUpstream(r.up, Method::Cancelled, serde_json::to_vec(&p).unwrap_or_default()));
        }
        fx
    }

    /// Relayed requests past their deadline: the upstream gets an error, the
    /// client a cancellation. Held calls whose coalescing window passed get
    /// their round; those answered upstream whose retry never came go.
    pub fn tick(&mut self, ups: &[Upstream], now: u64) -> Vec<Effect<'static>> {
        let mut fx = Vec::new();
        let over: Vec<u64> = self.held.iter().filter(|(_, x)| x.done.is_some() && x.deadline.is_some_and(|d| d <= now)).map(|(k, _)| *k).collect();
        for h in over {
            self.held.remove(&h);
        }
        let mut due: Vec<u64> = self.held.iter().filter(|(_, x)| x.answer_to.is_some() && x.due <= now).map(|(k, _)| *k).collect();
        due.sort();
        for h in due {
            self.answer_held(&mut fx, ups, h, now);
        }
        for k in self.expired(now) {
            let Some(r) = self.map.get(&k).cloned() else { continue };
            let msg = format!("the client did not answer {} within {} ms", r.method, self.set.relay_timeout_ms);
            if let Some((handle, _)) = r.collect {
                self.fail_collect(&mut fx, ups, handle, &msg);
                continue;
            }
            self.map.remove(&k);
            if ups[r.up].is_up() {
                fx.push(Effect::ToUpstream(r.up, wire::error(Some(&r.up_id), ErrorCode::InternalError, &msg, None)));
            }
            fx.push(Effect::NotifyClient(k.0, Method::Cancelled, json!({ "requestId": k.1, "reason": msg })));
        }
        fx
    }

    /// A held call's upstream gave its final answer `m` before the retry
    /// came: kept for the retry (its pending requests for input are moot).
    pub fn held_answered<'m>(&mut self, ups: &[Upstream], h: u64, m: &'m Msg<'m>, now: u64) -> Vec<Effect<'m>> {
        let mut fx = Vec::new();
        if let Some(w) = self.held.get_mut(&h).and_then(|x| x.answer_to.take()) {
            // Within the coalescing window: the client gets the answer itself;
            // requests it was not asked are refused.
            let held = self.held.remove(&h).expect("held");
            for a in held.asks.iter().filter(|a| a.refused.is_some()) {
                let why = a.refused.as_ref().map(|x| x.why.clone()).unwrap_or_default();
                refuse_at(&mut fx, Level::Info, &ups[held.up].spec.name, held.up, &a.up_id, &a.method, ErrorCode::MethodNotFound, why);
            }
            let origin = Origin::Client { client: w.client, id: IdKey::new(&w.id), progress: w.progress, method: Called::new(&held.method), renamed_uri: held.renamed_uri, modern: Some(w.ctx), sent: None };
            fx.push(Effect::Answer(held.up, origin, m));
            return fx;
        }
        if let Some(held) = self.held.get_mut(&h) {
            held.asks.clear();
            held.done = Some(m.env.bytes().to_vec());
            held.deadline = Some(now + self.set.input_ttl_ms);
        }
        fx
    }

    /// A held call ran out of time waiting for the client's retry: the
    /// upstream's requests get an error and the call is cancelled.
    pub fn held_expired(&mut self, u: UpstreamId, call: u64, h: u64) -> Vec<Effect<'static>> {
        let why = format!("the client did not retry within {} ms", self.set.input_ttl_ms);
        let mut fx = Vec::new();
        if let Some(held) = self.held.remove(&h) {
            for a in held.asks {
                fx.push(Effect::ToUpstream(u, wire::error(Some(&a.up_id), ErrorCode::InternalError, &why, None)));
            }
        }
        fx.push(Effect::CancelCall { up: u, call, why });
        fx
    }

    /// Drops relays of a gone client (upstreams get an error).
    pub fn drop_client(&mut self, ups: &[Upstream], c: ClientId) -> Vec<Effect<'static>> {
        let mut fx = Vec::new();
        let keys: Vec<_> = self.map.keys().filter(|k| k.0 == c).copied().collect();
        for k in keys {
            if let Some(r) = self.map.remove(&k) {
                if r.collect.is_some() {
                    continue;
                }
                if ups[r.up].is_up() {
                    fx.push(Effect::ToUpstream(r.up, wire::error(Some(&r.up_id), ErrorCode::InternalError, "the client disconnected", None)));
                }
            }
        }
        self.collects.retain(|_, col| col.client != c);
        self.urls.retain(|x| x.2 != c);
        fx
    }

    /// Drops relays of gone upstream `u`, named `server` (their clients are told).
    pub fn drop_upstream(&mut self, u: UpstreamId, server: &str) -> Vec<Effect<'static>> {
        let mut fx = Vec::new();
        self.urls.retain(|x| x.0 != u);
        let reason = format!("server '{server}' exited");
        let keys: Vec<_> = self.map.iter().filter(|(_, r)| r.up == u).map(|(k, _)| *k).collect();
        for k in keys {
            self.map.remove(&k);
            fx.push(Effect::NotifyClient(k.0, Method::Cancelled, json!({ "requestId": k.1, "reason": reason })));
        }
        let gone_held: Vec<u64> = self.held.iter().filter(|(_, h)| h.up == u).map(|(k, _)| *k).collect();
        for h in gone_held {
            if let Some(Some(w)) = self.held.remove(&h).map(|x| x.answer_to) {
                fx.push(Effect::AnswerError { client: w.client, id: w.id, code: ErrorCode::InternalError, msg: reason.clone(), data: None });
            }
        }
        let gone: Vec<u64> = self.collects.iter().filter(|(_, col)| col.up == u).map(|(k, _)| *k).collect();
        for handle in gone {
            if let Some(col) = self.collects.remove(&handle) {
                fx.push(Effect::AnswerError { client: col.client, id: col.id, code: ErrorCode::InternalError, msg: reason.clone(), data: None });
            }
        }
        fx
    }
}

// ------------------------------------------------ URL elicitations, roots, modern upstreams

impl Relays {
    /// Upstream `u`'s `notifications/elicitation/complete`: to the client its
    /// URL elicitation went to, once, if that client takes URL elicitations
    /// (`url_ok`); unknown or finished ids are dropped.
    pub fn elicitation_complete(&mut self, u: UpstreamId, m: &Msg, url_ok: impl Fn(ClientId) -> bool) -> Vec<Effect<'static>> {
        // Requirement: elicitation-complete-only-to-initiating-client
        let p = m.params_value();
        let Some(eid) = p.get("elicitationId").and_then(Value::as_str) else { return Vec::new() };
        let Some(i) = self.urls.iter().position(|(x, e, _)| *x == u && e == eid) else { return Vec::new() };
        let Some((_, _, c)) = self.urls.remove(i) else { return Vec::new() };
        let mut out = p.clone();
        if let Some(o) = out.as_object_mut() {
            o.remove("_meta");
        }
        if url_ok(c) {
            return vec![Effect::NotifyClient(c, Method::ElicitationComplete, out)];
        }
        Vec::new()
    }

    fn remember_url(&mut self, u: UpstreamId, params: &Value, c: ClientId) {
        if params.get("mode").and_then(Value::as_str) != Some("url") {
            return;
        }
        let Some(eid) = params.get("elicitationId").and_then(Value::as_str) else { return };
        if self.urls.len() >= URL_ELICITATIONS_CAP {
            self.urls.pop_front();
        }
        self.urls.push_back((u, eid.to_string(), c));
    }

    /// The configured roots (`HubOptions::roots`), if any, as a `roots/list` result.
    fn configured_roots(&self) -> Option<Value> {
        Some(match self.set.roots.clone()? {
            Value::Array(a) => json!({ "roots": a }),
            v => v,
        })
    }

    /// A modern upstream (`spec`) answered call `cid` of modern client `c`
    /// with an `InputRequiredResult`: passed on with the hub's state around
    /// its own. `schemas`: the elicitation schemas the answers are checked
    /// against (`policy`).
    #[allow(clippy::too_many_arguments)]
    pub fn wrap_input_required(&mut self, spec: &UpstreamSpec, c: ClientId, cid: &[u8], method: &str, ctx: &ReqCtx, mut v: Value, schemas: Option<Value>, now: u64) -> Vec<Effect<'static>> {
        let mut fx = Vec::new();
        let server = &spec.name;
        let mut inner = Vec::new();
        match v.get("requestState").and_then(Value::as_str) {
            Some(s) => {
                inner.push(INNER_UPSTREAM_STATE);
                inner.extend_from_slice(s.as_bytes());
            }
            None => inner.push(INNER_UPSTREAM_NO_STATE),
        }
        // The answers come back in the retry, to this server's own state:
        // the schemas they are checked against travel sealed with it.
        let pin = pinned_to(self.set.replica.as_deref(), spec.remote);
        let checked = schemas.map(|schemas| {
            let schemas = serde_json::to_vec(&schemas).unwrap_or_default();
            let mut with = pin.clone();
            with.push(INNER_CHECKED);
            with.extend_from_slice(&(schemas.len() as u32).to_be_bytes());
            with.extend_from_slice(&schemas);
            with.extend_from_slice(&inner);
            with
        });
        let inner = [pin, inner].concat();
        let sealed = match checked.map(|with| self.seal(method, ctx, &with, now)) {
            Some(Ok(s)) => Ok(s),
            Some(Err(why)) => {
                fx.push(Effect::Log(Level::Warn, format!("server '{server}': elicitation answers of this round are not checked: {why}")));
                self.seal(method, ctx, &inner, now)
            }
            None => self.seal(method, ctx, &inner, now),
        };
        let state = match sealed {
            Ok(s) => s,
            Err(why) => {
                fx.push(Effect::AnswerError { client: c, id: cid.to_vec(), code: ErrorCode::InternalError, msg: why, data: None });
                return fx;
            }
        };
        if let Some(reqs) = v.get_mut("inputRequests").and_then(Value::as_object_mut) {
            for r in reqs.values_mut() {
                let m = r.get("method").and_then(Value::as_str).unwrap_or("").to_string();
                if let Some(p) = r.get_mut("params") {
                    if m == "elicitation/create" {
                        // Requirement: elicitation-client-show-requesting-server
                        let text = p.get("message").and_then(Value::as_str).unwrap_or("").to_string();
                        p["message"] = Value::String(format!("[{server}] {text}"));
                    }
                    if let Ok(shaped) = shape::input_request(&m, p.take(), &shape::Features::of(MODERN)) {
                        *p = shaped;
                    }
                }
            }
        }
        v["requestState"] = Value::String(state);
        if let Some(o) = v.as_object_mut() {
            o.remove("ttlMs");
            o.remove("cacheScope");
        }
        fx.push(Effect::InputRequired { client: c, id: cid.to_vec(), result: v });
        fx
    }

    /// A modern upstream answered a legacy client's call with an
    /// `InputRequiredResult`: its input requests go to the client (of
    /// revision and capabilities `peer`, if still connected) as wire
    /// requests; the answers make the retry.
    pub fn collect_input_required(&mut self, ups: &[Upstream], peer: Option<(shape::Rev, Value)>, mut col: Collect, v: Value, now: u64) -> Vec<Effect<'static>> {
        let mut fx = Vec::new();
        let c = col.client;
        let server = ups[col.up].spec.name.clone();
        col.state = v.get("requestState").and_then(Value::as_str).map(str::to_string);
        col.responses = Map::new();
        col.waiting = 0;
        let Some((rev, caps)) = peer else { return fx };
        let reqs: Vec<(String, Value)> = v.get("inputRequests").and_then(Value::as_object).map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect()).unwrap_or_default();
        let mut sends = Vec::new();
        for (key, r) in reqs {
            let method = r.get("method").and_then(Value::as_str).unwrap_or("").to_string();
            let mut params = context_for(&method, r.get("params").cloned().unwrap_or_else(|| json!({})), &caps);
            if method == "roots/list" {
                if let Some(roots) = self.configured_roots() {
                    col.responses.insert(key, roots);
                    continue;
                }
            }
            let checked = declared(&method, &params, &caps).map_err(|m| m.why).and_then(|()| {
                if method == "elicitation/create" {
                    let text = params.get("message").and_then(Value::as_str).unwrap_or("").to_string();
                    params["message"] = Value::String(format!("[{server}] {text}"));
                }
                shape::relayed_request(&method, params, &rev.features()).map_err(str::to_string)
            });
            match checked {
                Ok(mut p) => {
                    // Requirement: elicitation-url-request-shape-with-id
                    // (a modern upstream's URL request has no id; 2025-11-25 needs one)
                    if method == "elicitation/create" && p.get("mode").and_then(Value::as_str) == Some("url") && p.get("elicitationId").is_none() && rev.supports(mcpx_core::revision::Feature::ElicitationUrlMode) {
                        self.next_key += 1;
                        p["elicitationId"] = Value::String(format!("mcpx-{}", self.next_key));
                    }
                    sends.push((key, method, p))
                }
                Err(why) => {
                    let msg = format!("server '{server}' needs input the client cannot give: {why}");
                    fx.push(Effect::AnswerError { client: c, id: col.id, code: ErrorCode::InternalError, msg, data: Some(json!({ "server": server })) });
                    return fx;
                }
            }
        }
        if self.len() + sends.len() > self.set.max_relays {
            let msg = format!("mcpx has {} requests waiting on clients (its limit)", self.set.max_relays);
            fx.push(Effect::AnswerError { client: c, id: col.id, code: ErrorCode::InternalError, msg, data: None });
            return fx;
        }
        self.next_held += 1;
        let handle = self.next_held;
        let deadline = now + self.set.relay_timeout_ms;
        col.waiting = sends.len();
        let up = col.up;
        let done = sends.is_empty();
        let asker = asker(&col.id);
        self.collects.insert(handle, col);
        for (key, method, p) in sends {
            self.next_id += 1;
            let hid = self.next_id;
            self.map.insert((c, hid), Relayed { up, up_id: Vec::new(), method: method.clone(), deadline, collect: Some((handle, key)) });
            fx.push(Effect::AskClient { client: c, hid, method, params: serde_json::to_vec(&p).unwrap_or_default(), cause: asker.clone() });
        }
        if done {
            self.retry_collected(&mut fx, ups, handle);
        }
        fx
    }
}

/// Upstream request `m` of server `server` as an input request for a modern
/// client: its params as the client sees them.
pub(super) fn input_request(server: &str, m: &Msg) -> Result<Value, String> {
    let mut params = m.params_value();
    if m.call == Method::ElicitationCreate {
        let text = params.get("message").and_then(Value::as_str).unwrap_or("").to_string();
        params["message"] = Value::String(format!("[{server}] {text}"));
    }
    shape::input_request(&m.method, params, &shape::Features::of(MODERN)).map_err(str::to_string)
}

// ------------------------------------------------ modern client, legacy upstream

impl Relays {
    /// The first request for input during modern call `call` to `u`: the
    /// call is held and the client answered `input_required`.
    pub fn park(&mut self, ups: &[Upstream], pending: &Pending, u: UpstreamId, call: u64, m: &Msg, now: u64) -> Vec<Effect<'static>> {
        let mut fx = Vec::new();
        let up_id = m.id_bytes().unwrap_or(b"null").to_vec();
        let Some(Origin::Client { client, id: cid, progress, method, renamed_uri, modern: Some(ctx), .. }) = pending.origin(u, call).cloned() else { return fx };
        let server = &ups[u].spec.name;
        let params = match input_request(server, m) {
            Ok(p) => p,
            Err(why) => {
                refuse_at(&mut fx, Level::Info, server, u, &up_id, &m.method, ErrorCode::MethodNotFound, why);
                return fx;
            }
        };
        let params = context_for(&m.method, params, &ctx.caps);
        // Requirement: mrtr-only-declared-capabilities (an undeclared one is never asked)
        let refused = declared(&m.method, &params, &ctx.caps).err();
        let mut held = Held { up: u, principal: ctx.principal.clone(), call, method: method.to_string(), renamed_uri, asks: Vec::new(), caps: ctx.caps.clone(), done: None, deadline: None, answer_to: None, due: 0 };
        let key = self.new_key(server);
        held.asks.push(Ask { key, up_id, method: m.method.to_string(), params, asked: false, refused });
        if self.len() >= self.set.max_relays {
            let limit = format!("limit of requests waiting on clients reached: all {} are in use; retry later", self.set.max_relays);
            self.refuse_hold(&mut fx, server, client, &cid, held, &limit);
            return fx;
        }
        self.hold(&mut fx, ups, client, &cid, progress, held, &ctx, now);
        fx
    }

    /// Holds `held`'s call and answers the client's request `cid` with an
    /// `InputRequiredResult` asking everything outstanding.
    #[allow(clippy::too_many_arguments)]
    fn hold(&mut self, fx: &mut Vec<Effect<'_>>, ups: &[Upstream], c: ClientId, cid: &[u8], progress: Option<Vec<u8>>, mut held: Held, ctx: &ReqCtx, now: u64) {
        self.next_held += 1;
        let h = self.next_held;
        let (u, call) = (held.up, held.call);
        held.principal = ctx.principal.clone();
        held.answer_to = Some(Waiting { client: c, id: cid.to_vec(), progress, ctx: Box::new(ctx.clone()) });
        held.due = now + self.set.input_coalesce_ms;
        if let Err((held, limit)) = self.held.insert(h, held) {
            return self.refuse_hold(fx, &ups[u].spec.name, c, cid, held, &limit.to_string());
        }
        fx.push(Effect::Hold { up: u, call, h, until: now + self.set.input_ttl_ms });
        if self.set.input_coalesce_ms == 0 {
            self.answer_held(fx, ups, h, now);
        }
    }

    /// A call that cannot be held (its principal's share or the global cap
    /// of held calls is used up): the client is told that limit, the
    /// upstream's requests get the same reason and the call is cancelled.
    fn refuse_hold(&mut self, fx: &mut Vec<Effect<'_>>, server: &str, c: ClientId, cid: &[u8], held: Held, limit: &str) {
        let why = format!("mcpx cannot hold this call for the client's input: {limit}");
        for a in &held.asks {
            refuse_at(fx, Level::Info, server, held.up, &a.up_id, &a.method, ErrorCode::InternalError, why.clone());
        }
        fx.push(Effect::Forget(held.up, held.call));
        fx.push(Effect::CancelCall { up: held.up, call: held.call, why: why.clone() });
        fx.push(Effect::AnswerError { client: c, id: cid.to_vec(), code: ErrorCode::InternalError, msg: why, data: None });
    }

    /// Another request for input from held call `h`'s upstream `u`: asked
    /// in the next round.
    pub fn held_add(&mut self, server: &str, h: u64, u: UpstreamId, m: &Msg) -> Vec<Effect<'static>> {
        let mut fx = Vec::new();
        let up_id = m.id_bytes().unwrap_or(b"null").to_vec();
        let Some(caps) = self.held.get(&h).map(|x| x.caps.clone()) else { return fx };
        match input_request(server, m) {
            Ok(params) => {
                let key = self.new_key(server);
                let params = context_for(&m.method, params, &caps);
                let refused = declared(&m.method, &params, &caps).err();
                if let Some(held) = self.held.get_mut(&h) {
                    held.asks.push(Ask { key, up_id, method: m.method.to_string(), params, asked: false, refused });
                }
            }
            Err(why) => refuse_at(&mut fx, Level::Info, server, u, &up_id, &m.method, ErrorCode::MethodNotFound, why),
        }
        fx
    }

    /// The retry of held call `h`: the upstream's requests are answered
    /// with the client's `inputResponses` and the call continues as the
    /// retry.
    #[allow(clippy::too_many_arguments)]
    pub fn resume_held(&mut self, ups: &[Upstream], pending: &Pending, c: ClientId, m: &Msg, id: &[u8], ctx: ReqCtx, h: u64, responses: Value, now: u64) -> Vec<Effect<'static>> {
        let mut fx = Vec::new();
        let gone = "Invalid params: requestState refers to a request mcpx no longer holds (it timed out or its server restarted); send the request again without requestState";
        let refuse = |code, msg: &str| vec![Effect::AnswerError { client: c, id: id.to_vec(), code, msg: msg.to_string(), data: None }];
        let Some(peek) = self.held.get(&h) else {
            return refuse(ErrorCode::InvalidParams, gone);
        };
        if peek.done.is_none() && pending.client_has(c, id) {
            return refuse(ErrorCode::InvalidRequest, "Invalid request: this id is already used by a request in flight");
        }
        let Some(mut held) = self.held.remove(&h) else { return fx };
        let (u, call) = (held.up, held.call);
        if let Some(done) = held.done.take() {
            let origin = Origin::Client { client: c, id: IdKey::new(id), progress: None, method: Called::new(&held.method), renamed_uri: held.renamed_uri.clone(), modern: Some(Box::new(ctx)), sent: None };
            fx.push(Effect::AnswerKept(u, origin, done));
            return fx;
        }
        if !matches!(pending.origin(u, call), Some(Origin::Held(x)) if *x == h) {
            return refuse(ErrorCode::InvalidParams, gone);
        }
        let server = &ups[u].spec.name;
        let up_rev = ups[u].rev.unwrap_or(shape::Rev::LATEST_LEGACY);
        let mut remaining = Vec::new();
        for a in std::mem::take(&mut held.asks) {
            if let Some(miss) = a.refused {
                refuse_at(&mut fx, Level::Info, server, u, &a.up_id, &a.method, ErrorCode::MethodNotFound, miss.why);
                continue;
            }
            // Requirement: mrtr-server-validate-responses (unknown keys ignored; a missing or malformed answer is asked again)
            match responses.get(&a.key).filter(|r| r.is_object() && a.asked) {
                Some(r) => {
                    let raw = serde_json::to_vec(r).unwrap_or_default();
                    let out = shape::result(&a.method, &raw, up_rev).unwrap_or(raw);
                    fx.push(Effect::ToUpstream(u, wire::result(&a.up_id, &out)));
                }
                None => remaining.push(a),
            }
        }
        let progress = m.env.progress_token().map(|t| t.bytes().to_vec());
        let progress_again = progress.clone();
        let origin = Origin::Client { client: c, id: IdKey::new(id), progress, method: Called::new(&held.method), renamed_uri: held.renamed_uri.clone(), modern: Some(Box::new(ctx.clone())), sent: None };
        fx.push(Effect::Resume { up: u, call, origin });
        // Requests still unanswered are asked again, if this request declares them.
        held.caps = ctx.caps.clone();
        let mut again = Vec::new();
        for mut a in remaining {
            a.asked = false;
            a.refused = declared(&a.method, &a.params, &ctx.caps).err();
            again.push(a);
        }
        if !again.is_empty() {
            held.asks = again;
            self.hold(&mut fx, ups, c, id, progress_again, held, &ctx, now);
        }
        fx
    }
}

/// Whether the elicitation mode of `m` is one the hub declared to an
/// upstream of revision `rev` at initialize (form always; url from 2025-11-25).
fn mode_offered(rev: Option<shape::Rev>, m: &Msg) -> bool {
    match m.params_value().get("mode").and_then(Value::as_str).unwrap_or("form") {
        "form" => true,
        "url" => rev.is_some_and(|r| r.supports(mcpx_core::revision::Feature::ElicitationUrlMode)),
        _ => false,
    }
}

/// Refuses upstream `u`'s request `id` with an error and a log line at
/// `Info` (what other subsystems refuse goes this way too).
pub(super) fn refuse(server: &str, u: UpstreamId, id: &[u8], method: &str, code: ErrorCode, why: String) -> Vec<Effect<'static>> {
    let mut fx = Vec::new();
    refuse_at(&mut fx, Level::Info, server, u, id, method, code, why);
    fx
}

// ------------------------------------------------ which client

impl Relays {
    /// A request `m` from upstream `u`; `stream`: the hub's request on whose
    /// response stream it came, if the transport has such streams.
    pub fn on_upstream_request<'m>(&self, ups: &[Upstream], u: UpstreamId, m: &'m Msg<'m>, stream: Option<u64>) -> Vec<Effect<'m>> {
        let id = m.id_bytes().unwrap_or(b"null");
        use Method::*;
        match m.call {
            Ping => vec![Effect::ToUpstream(u, wire::result(id, b"{}"))],
            RootsList if self.set.roots.is_some() => {
                let roots = self.configured_roots().unwrap_or_else(|| json!({ "roots": [] }));
                vec![Effect::ToUpstream(u, wire::result(id, &serde_json::to_vec(&roots).unwrap_or_default()))]
            }
            // Requirement: elicitation-client-32602-on-undeclared-mode
            ElicitationCreate if !mode_offered(ups[u].rev, m) => {
                let mode = m.params_value().get("mode").and_then(Value::as_str).unwrap_or("form").to_string();
                refuse(&ups[u].spec.name, u, id, &m.method, ErrorCode::InvalidParams, format!("elicitation mode '{mode}' was not declared to this server"))
            }
            // Policy admits it first, and a task the upstream runs takes its
            // own input (`tasks::legacy`); then `relay_to_client`.
            SamplingCreateMessage | ElicitationCreate | RootsList => vec![Effect::Admit { up: u, msg: m, link: Link::of(m, stream) }],
            _ => {
                let msg = format!("mcpx does not handle '{}' requests from servers", m.method);
                vec![Effect::ToUpstream(u, wire::error(Some(id), ErrorCode::MethodNotFound, &msg, None))]
            }
        }
    }

    /// Which call to `u` an upstream's request for input serves, as far as
    /// the wire says; never a guess between callers. `owner`: the creator
    /// of the task its `related-task` `_meta` names, if the hub relays that
    /// task (`tasks`).
    ///
    /// 0. The task its `related-task` `_meta` names, when the upstream runs
    ///    that task for a client (rows elicitation-task-related-id-shared,
    ///    tasks-input-request-related-task): its creator. A task id the hub
    ///    does not know names nobody.
    /// 1. The call on whose HTTP response stream it came (row
    ///    streamable-http-post-sse-may-carry-requests: requests there relate
    ///    to the originating request), else the call whose progress token it
    ///    carries. A stream or token naming no client call (the hub's own
    ///    request, an answered one) names nobody: the rules below decide.
    /// 2. Else the latest call of the one caller with calls *live* there: in
    ///    flight, or held and still within their coalescing window (requests
    ///    a tool makes at once). A single caller is knowable, not a guess
    ///    (rows streamable-http-post-sse-may-carry-requests, streamable-http-sse-notifications-must-relate):
    ///    nobody else could be asked.
    /// 3. Else the latest held call of the one principal with held calls
    ///    waiting for their retry (asked in its next round).
    ///
    /// A held call whose round went out counts as its own conversation, not
    /// as a live caller: its tool waits on what it asked, and only a retry
    /// with that call's `requestState` resumes it. (Counting it made one
    /// client look like several as soon as a call was left held.)
    fn cause_of(&self, pending: &Pending, owner: Option<ClientId>, u: UpstreamId, link: &Link) -> Cause {
        if let Some(creator) = owner {
            return Cause::Task(creator);
        }
        for t in [link.stream, link.progress].into_iter().flatten() {
            if pending.calls_to(u).any(|(id, ..)| id == t) {
                return Cause::Call(t);
            }
        }
        let (mut live, mut waiting) = (Vec::new(), Vec::new());
        for (id, sent, origin) in pending.calls_to(u) {
            match origin {
                Origin::Client { client, .. } => live.push((id, sent, Caller::Client(*client))),
                Origin::Held(h) => match self.held.get(h) {
                    Some(Held { answer_to: Some(w), .. }) => live.push((id, sent, Caller::Client(w.client))),
                    Some(held) => waiting.push((id, sent, Caller::Principal(held.principal.clone()))),
                    None => {}
                },
                _ => {}
            }
        }
        match one_caller(&live) {
            Cause::None => one_caller(&waiting),
            cause => cause,
        }
    }

    /// The client whose call a server request of `u` belongs to, when the
    /// wire names one (for its rate limit; routing is `relay_to_client`).
    pub fn cause_client(&self, pending: &Pending, owner: Option<ClientId>, u: UpstreamId, link: &Link) -> Option<ClientId> {
        let call = match self.cause_of(pending, owner, u, link) {
            Cause::Call(call) => call,
            Cause::Task(c) => return Some(c),
            _ => return None,
        };
        match pending.origin(u, call)? {
            Origin::Client { client, .. } => Some(*client),
            Origin::Held(h) => self.held.get(h)?.answer_to.as_ref().map(|w| w.client),
            _ => None,
        }
    }

    /// Upstream `u`'s request `m` for input, admitted: to the client the
    /// wire names. `modern`: whether a connected client speaks the modern
    /// era (`None`: not connected). `alone`: the clients `u` may reach on
    /// its own, initialized and past their first list (`isolation`), for a
    /// request no call names.
    #[allow(clippy::too_many_arguments)]
    pub fn relay_to_client<'m>(&mut self, ups: &[Upstream], pending: &Pending, modern: impl Fn(ClientId) -> Option<bool>, owner: Option<ClientId>, alone: &[ClientId], u: UpstreamId, m: &'m Msg<'m>, link: &Link, now: u64) -> Vec<Effect<'m>> {
        let id = m.id_bytes().unwrap_or(b"null").to_vec();
        let method = m.method.to_string();
        let server = &ups[u].spec.name;
        let mut cause = Asker::default();
        let target = match self.cause_of(pending, owner, u, link) {
            // A modern client's call in flight (or held) gets it the modern way.
            Cause::Call(call) => match pending.origin(u, call) {
                Some(Origin::Held(h)) => return self.held_add(server, *h, u, m),
                Some(Origin::Client { modern: Some(_), .. }) => return self.park(ups, pending, u, call, m, now),
                Some(Origin::Client { client, id, .. }) => {
                    cause = asker(id.bytes());
                    Some(*client).filter(|c| modern(*c).is_some())
                }
                _ => None,
            },
            // A task's own question: its creator's, or nobody's.
            Cause::Task(c) => {
                let why = match modern(c) {
                    Some(false) => None,
                    Some(_) => Some(format!("the client of the task this {method} relates to speaks {} and takes a task's input only through tasks/get", MODERN.as_str())),
                    None => Some(format!("the client that started the task this {method} relates to is gone")),
                };
                if let Some(why) = why {
                    return refuse(server, u, &id, &method, ErrorCode::InternalError, why);
                }
                Some(c)
            }
            // No call: the only client, as nobody else could be asked. Not one
            // that has not read a list yet: the oldest SDK clients hang on a
            // message they did not ask for before that.
            // An instance's only client of its owner (`isolation`).
            Cause::None => match alone {
                [only] => Some(*only),
                _ => None,
            },
            Cause::Several(n) => {
                // Never a guess: another client's user must not see this prompt.
                let why = format!("mcpx cannot tell which of its clients this {method} is for: {n} have calls in flight to server '{server}' and the request names none of them; give the server one client, or set \"isolation\": \"client\" on it");
                let mut fx = Vec::new();
                refuse_at(&mut fx, Level::Warn, server, u, &id, &method, ErrorCode::InternalError, why);
                return fx;
            }
        };
        match target {
            Some(c) => vec![Effect::RelayTo(c, u, m, cause)],
            None => refuse(server, u, &id, &method, ErrorCode::InternalError, format!("no client connected to mcpx can answer {method}")),
        }
    }

    /// Upstream `u`'s request `m`, to legacy client `c` (of revision and
    /// capabilities `peer`) as a wire request; `params`: its params, the
    /// related task renamed (`tasks`).
    #[allow(clippy::too_many_arguments)]
    pub fn relay_request_to(&mut self, ups: &[Upstream], c: ClientId, peer: (shape::Rev, Value), u: UpstreamId, m: &Msg, params: Value, cause: Asker, now: u64) -> Vec<Effect<'static>> {
        let id = m.id_bytes().unwrap_or(b"null").to_vec();
        let method = m.method.to_string();
        let server = &ups[u].spec.name;
        if self.len() >= self.set.max_relays {
            let why = format!("mcpx has {} requests waiting on clients (its limit)", self.set.max_relays);
            return refuse(server, u, &id, &method, ErrorCode::InternalError, why);
        }
        let (rev, caps) = peer;
        let mut params = context_for(&method, params, &caps);
        if let Err(miss) = declared(&method, &params, &caps) {
            return refuse(server, u, &id, &method, ErrorCode::MethodNotFound, miss.why);
        }
        if method == "elicitation/create" {
            // Requirement: elicitation-client-show-requesting-server
            let text = params.get("message").and_then(Value::as_str).unwrap_or("").to_string();
            params["message"] = Value::String(format!("[{server}] {text}"));
        }
        let params = match shape::relayed_request(&method, params, &rev.features()) {
            Ok(p) => p,
            Err(why) => return refuse(server, u, &id, &method, ErrorCode::MethodNotFound, why.to_string()),
        };
        self.next_id += 1;
        let hid = self.next_id;
        let deadline = now + self.set.relay_timeout_ms;
        self.map.insert((c, hid), Relayed { up: u, up_id: id, method: method.clone(), deadline, collect: None });
        self.remember_url(u, &params, c);
        let body = serde_json::to_vec(&params).unwrap_or_default();
        vec![Effect::AskClient { client: c, hid, method, params: body, cause }]
    }

    /// A retry whose `requestState` opened to `inner`.
    #[allow(clippy::too_many_arguments)]
    pub fn resume<'m>(&mut self, ups: &[Upstream], pending: &Pending, c: ClientId, m: &'m Msg<'m>, id: &[u8], ctx: ReqCtx, inner: &[u8], responses: Option<Value>, now: u64) -> Vec<Effect<'m>> {
        let malformed = || vec![Effect::AnswerError { client: c, id: id.to_vec(), code: ErrorCode::InvalidParams, msg: "Invalid params: requestState is malformed".into(), data: None }];
        match inner.split_first() {
            Some((&INNER_HELD, h)) if h.len() >= 8 => {
                let h = u64::from_be_bytes(h[..8].try_into().expect("8 bytes"));
                self.resume_held(ups, pending, c, m, id, ctx, h, responses.unwrap_or_else(|| json!({})), now)
            }
            Some((&INNER_UPSTREAM_STATE, s)) => {
                let s = String::from_utf8_lossy(s).into_owned();
                vec![Effect::Route { client: c, msg: m, upstream_state: Some(Some(s)), ctx }]
            }
            Some((&INNER_UPSTREAM_NO_STATE, _)) => vec![Effect::Route { client: c, msg: m, upstream_state: Some(None), ctx }],
            Some((&INNER_APPROVAL, _)) => vec![Effect::Approval { client: c, msg: m, ctx, responses }],
            #[cfg(feature = "secrets")]
            Some((&INNER_AUTHORIZE, _)) => vec![Effect::Route { client: c, msg: m, upstream_state: None, ctx }],
            Some((&INNER_ON_REPLICA, rest)) if on_replica(rest).is_some() => {
                let inner = on_replica(rest).map(|(_, inner)| inner.to_vec()).unwrap_or_default();
                self.resume(ups, pending, c, m, id, ctx, &inner, responses, now)
            }
            Some((&INNER_CHECKED, rest)) if rest.len() >= 4 => {
                let (len, rest) = rest.split_at(4);
                let len = u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize;
                let Some((schemas, inner)) = (len <= rest.len()).then(|| rest.split_at(len)) else { return malformed() };
                let schemas: Value = serde_json::from_slice(schemas).unwrap_or(Value::Null);
                // Requirement: elicitation-server-validate-received-data (for the server, which gets only valid answers)
                vec![Effect::Check { client: c, msg: m, id: id.to_vec(), ctx, schemas, inner: inner.to_vec(), responses }]
            }
            _ => malformed(),
        }
    }
}

/// The [`INNER_ON_REPLICA`] prefix of a state for a round of a server on
/// replica `me`: its id when the server runs there (a `remote` one is
/// reached by every replica: its state opens anywhere); empty otherwise.
fn pinned_to(me: Option<&str>, remote: bool) -> Vec<u8> {
    match me {
        Some(me) if !remote => [&[INNER_ON_REPLICA, me.len() as u8], me.as_bytes()].concat(),
        _ => Vec::new(),
    }
}

/// An [`INNER_ON_REPLICA`] state's replica id and the inner state after it.
fn on_replica(rest: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&n, rest) = rest.split_first()?;
    (rest.len() >= n as usize).then(|| rest.split_at(n as usize))
}
