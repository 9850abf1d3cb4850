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
//! - [`Op::Put`] (ticket 0, nobody waits): task ownership, the legacy
//!   session directory, for status and operations to read.
//!
//! The request that needs an answer is parked until it comes; an
//! [`Answer::Unavailable`], or no answer within
//! [`ClusterOptions::answer_timeout_ms`], is a clear error to that request,
//! and a `requestState` that cannot be checked is refused, never accepted.
//!
//! Ownership: a replica that holds an upstream call for a client's retry
//! (a legacy upstream waiting for input) names itself inside the sealed
//! state; a task id names the replica that runs the task. A request for
//! something another replica owns is [`Output::Forward`]ed to it: the
//! runtime sends the client's request over the internal hop to that
//! replica, which serves it as a client of the same principal
//! ([`Hub::client_connected_as`]), and streams its answer back.
//!
//! [`Output::Shared`]: super::Output::Shared
//! [`Output::Forward`]: super::Output::Forward
//! [`Hub::shared_answered`]: super::Hub::shared_answered
//! [`Hub::client_connected_as`]: super::Hub::client_connected_as

use std::fmt;

use mcpx_core::request_state::NONCE_LEN;

/// The id of one replica (`cluster.replica`, `MCPX_REPLICA`): 1 to 32 of
/// `A-Z a-z 0-9 _ -` ([`valid_replica_id`]).
pub type ReplicaId = String;

/// Longest replica id.
pub const MAX_REPLICA_LEN: usize = 32;

/// Is `id` a usable replica id? (It is written into task ids and sealed
/// states, after a `.` that it may not contain.)
pub fn valid_replica_id(id: &str) -> bool {
    (1..=MAX_REPLICA_LEN).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

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
}

/// One rate-limit bucket: `capacity` tokens that refill evenly over
/// `period_ms` (the limit `capacity/period`, e.g. `20/s`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// Unique per limit and scope, e.g. `toolCalls.perPrincipal:alice`.
    pub name: String,
    pub capacity: u32,
    pub period_ms: u64,
}

/// The store's answer to an [`Ask`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Granted,
    /// A nonce already claimed, a bucket empty (`retry_after_ms`: until it
    /// has a token again; 0 for a nonce).
    Refused { retry_after_ms: u64 },
    /// The store could not be asked (connection lost, timeout, error): the
    /// reason, for the request's error.
    Unavailable(String),
}

/// Prefix of every store key mcpx writes.
pub const KEY_PREFIX: &str = "mcpx:";

impl Op {
    /// The store key of a nonce claim or a put; for buckets see
    /// [`Bucket::key`].
    pub fn key(&self) -> Option<String> {
        match self {
            Op::ClaimNonce { nonce, .. } => Some(format!("{KEY_PREFIX}nonce:{}", hex(nonce))),
            Op::Put { key, .. } => Some(key.clone()),
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

/// The store key under which the owner of legacy session `id` (its
/// `Mcp-Session-Id`) is published.
pub fn session_key(id: &str) -> String {
    format!("{KEY_PREFIX}session:{id}")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl super::Hub {
    pub(super) fn on_shared_answered(&mut self, _ticket: u64, _answer: Answer) {}

    pub(super) fn on_forward_done(&mut self, _c: super::ClientId, _request: &[u8], _result: Result<(), String>) {}
}
