//! The hub: a pure, single-threaded MCP state machine.
//!
//! mcpx supervises local MCP servers ("upstreams", stdio children) and presents all
//! of them to MCP clients ("clients", downstream connections) as one MCP server.
//! This module is the heart of it, written sans-IO in the style of `quinn-proto`:
//! no I/O, no clock, no threads. The runtime feeds it framed messages and the
//! current time (`now_ms`, any monotonic millisecond clock) as [`Input`]s
//! to [`Hub::handle`], and drains [`Output`]s with [`Hub::poll_output`]
//! after every call.
//!
//! # Who owns what
//!
//! The `Hub` is a routing shell (this file: the one way in, `Hub::handle`
//! of an [`Input`], the tick, status; `router`: the dispatch per method and the glue between
//! subsystems). Each subsystem owns its tables and answers with effects
//! that one `Hub::apply_*` method carries out in order, so no subsystem
//! reaches into another's map:
//! - `client::Clients` — connections, their era and handshake
//!   (`Stage::New | Legacy(Session) | Modern`), open request ids;
//! - `upstream::Upstreams` — links to servers: start, handshake, listing,
//!   exits, reload, status;
//! - `pending::Pending` — requests forwarded and not yet answered;
//! - `relay::Relays` — requests from servers to clients, input rounds,
//!   sealed `requestState`;
//! - `tasks::Tasks`, `starts::Starts` (lazy starts, per-client instances),
//!   `modern::Listens` (listen streams, early 2026-07-28 requests),
//!   `subscriptions::Subscriptions` (resource subscriptions, the log level),
//!   `policy::HubPolicy` (limits, catalogs, audit, metrics; the record of
//!   each tracked request in `tracked::Records`, its handle kept in the
//!   client's open set), `shared::Shared` (state across replicas);
//! - `stages` — the request pipeline (identify, admit, authorize, validate,
//!   route, shape, observe) on a `Pipeline` of narrow borrows;
//! - `downward` / `upward` — one writer per kind of message each way.
//!
//! The runtime reads state through read-only views (`Hub::clients`,
//! `Hub::upstreams`, `Hub::starts`, `Hub::catalog`), and takes the
//! finished spans from the tracer (`Hub::trace`).
//!
//! # The one way a message travels
//!
//! ```text
//!  bytes ─► frame (runtime: stdio line, HTTP body, SSE event)
//!        ─► Envelope view (core, parsed once: kind, id, typed Method, spans, _meta keys)
//!        ─► Input::ClientMessage / ClientEnvelope / UpstreamMessage
//!        ─► era (core revision::request_era) ─► normalize a modern request (view + ReqCtx)
//!        ─► router ─► local answer | pending ─► Output::ToUpstream(u, bytes, Upward)
//!  upstream answer ─► view ─► pending ─► shape (byte splices, core Feature table)
//!        ─► Output::ToClient(c, bytes, About::Reply { id span })
//! ```
//!
//! - A stdio runtime hands the hub the framed bytes (`Input::ClientMessage`); the
//!   hub parses them once. A transport that had to parse a body itself (HTTP
//!   POST, batch elements) hands the hub its views (`Input::ClientEnvelope`), so
//!   the bytes are never parsed twice. Every later lookup is a span of the
//!   view (`wire::Msg::param`); messages are changed only by splicing bytes
//!   through core's `rewrite`.
//! - Outputs say what they are: [`About`] names the request a reply answers
//!   (the span of the client's own id in the bytes), the hub's id of a request
//!   to the client, and the request a progress notification reports on;
//!   [`Output::ClientInitialized`] reports an answered `initialize`; [`Upward`]
//!   says what a message to an upstream is (request and its id,
//!   notification, answer) and carries the 2026-07-28 headers of a modern
//!   request (`upward`). No runtime or transport reads hub output to route it.
//! - The hub alone tracks what is in flight: each client's open request ids
//!   (`Clients::open_requests`, `Clients::request_open`, `Clients::initializing`)
//!   and the pending table of forwarded requests.
//! - One writer per kind of message toward clients (`downward`), among
//!   them one error writer (`Downward::error`, over `crate::bytes::written::error` and
//!   core's `rewrite::write_error`), with typed codes from core's error table
//!   (`ErrorCode::for_peer`, revision- and capability-aware; `code_for` for
//!   an upstream's code passed on).
//!
//! Contract with the runtime:
//! - Every `*Message` input carries exactly one framed JSON-RPC message (one stdio
//!   line without its newline, or one HTTP body). Outputs carry one message each,
//!   without a trailing newline: the runtime frames them.
//! - After any call, drain `poll_output` until `None`, then arm a timer for
//!   `next_deadline()` and hand the hub `Input::Tick` when it fires.
//! - Process supervision (spawn, backoff, kill) is the runtime's. Call
//!   `Input::UpstreamStarted` each time a child is up (its stdin/stdout are open),
//!   `Input::UpstreamExited` each time it is gone. `Output::RestartUpstream` asks the
//!   runtime to kill and respawn a child the hub judged broken.
//! - The hub never blocks and every table in it is bounded (see [`HubOptions`]);
//!   at a cap the request in hand is answered with an error saying which limit.
//!
//! Decisions worth knowing (details in the module named):
//! - Exposed tool/prompt names: `prefix + separator + name`, made valid
//!   (`[A-Za-z0-9_-]{1,64}`) and unique by `mcpx_core::names` (`catalog`).
//! - Resource URIs are kept; a URI already exposed by an earlier server is shown
//!   as `mcpx://<server>/<uri>` and routed by that segment (`catalog`).
//! - Lists answered to clients are paginated with authenticated cursors
//!   (`mcpx_core::cursor`); a bad cursor is -32602 (`router`).
//! - Requests upstream get fresh integer ids and always a progress token (the
//!   same integer); client ids and tokens are restored byte for byte (`pending`).
//! - Timeouts: per server `timeout_ms`, reset by progress, capped by
//!   `max_timeout_ms`; on expiry the upstream gets `notifications/cancelled`
//!   and the client -32603 naming the server (`Hub::on_timeout`).
//! - Unsolicited notifications reach a client only after it read a list
//!   (`client`); server→client requests reach the client whose call is in
//!   flight, only if it declared the capability (`relay`).
//! - Egress shaping per revision from the core feature table (`shape`).
//!
//! Eras: both, on both sides. Clients: `initialize` selects the legacy era
//! (2024-11-05 … 2025-11-25) for the connection; a request with modern
//! per-request `_meta` (2026-07-28) is served statelessly (`modern`), on any
//! connection, at the same time. Upstreams: probed with `server/discover`
//! first, `initialize` on any other answer or a timeout; the era is cached per
//! upstream for the process (`upstream`). Everything that turns an upstream's
//! need for input into what the client's era understands, in all four
//! combinations (wire requests, `InputRequiredResult` with sealed
//! `requestState`), is `relay`; shaping per revision is `shape`.

pub mod approvals;
mod apps;
mod catalog;
mod client;
mod downward;
mod earliest;
mod input;
mod modern;
mod offer;
pub(crate) mod param_headers;
mod pending;
pub mod pins;
mod policy;
mod relay;
mod replica;
mod request;
mod router;
mod scoped;
mod skills;
mod shape;
mod stages;
mod subscriptions;
mod starts;
pub mod shared;
mod tasks;
mod tracked;
#[cfg(feature = "traces")]
pub mod trace;
#[cfg(not(feature = "traces"))]
#[path = "trace_off.rs"]
mod trace;
mod upstream;
mod upward;
#[cfg(feature = "secrets")]
mod url_ask;
mod wire;

#[cfg(test)]
mod tests;

use mcpx_core::error::ErrorCode;
use mcpx_core::method::Method;
use serde_json::{json, Value};
use std::collections::VecDeque;

use pending::{Fwd, Origin};

/// What the runtime's restart loop does after an upstream exited, as the
/// hub is told with the exit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Nothing: a shutdown was asked for.
    Stop,
    /// A new attempt at once (a restart was asked for).
    Now,
    /// A new attempt after this backoff delay.
    After(std::time::Duration),
    /// None until a restart is asked for: this many attempts failed in a row.
    GaveUp { attempts: u32 },
}

pub use input::Input;

#[cfg(feature = "cluster")]
pub use client::Snapshot;
pub use starts::{Isolation, Power, DEFAULT_MAX_INSTANCES};
#[cfg(feature = "secrets")]
pub use url_ask::UrlAsk;
pub use shared::{ClusterOptions, ReplicaId};
pub use tasks::{TaskOptions, TASK_STATE_MAX};
pub use wire::batch_array;
#[cfg(test)]
pub(crate) use upward::modern_headers;
#[cfg(any(feature = "signin", feature = "activity", feature = "cli"))]
pub(crate) use policy::principal_name;

/// The `_meta` key of an `initialize` result naming the servers that are
/// not ready yet (`[{"server", "state", "toolsKnown"}]`; absent when all are).
pub const NOT_READY_META: &str = "mcpx/notReady";

/// Index of an upstream in the configuration order (0-based). Stable for the
/// life of the server it names; a config reload may give the slot of a
/// removed server to a new one (`Hub::add_upstream`).
pub type UpstreamId = usize;

/// A downstream connection, as returned by [`Hub::client_connected`]. The stdio
/// transport has exactly one; HTTP will have one per session. Never reused.
pub type ClientId = u64;

/// A message over its transport's cap (from a client or an upstream),
/// skipped by the runtime: its size, the cap, and its first and last bytes.
#[derive(Clone, Copy, Debug)]
pub struct Oversize<'a> {
    pub len: usize,
    pub max: usize,
    /// The limit for people: "the 25165824-byte limit of one stdio
    /// message (...how to change it)".
    pub limit: &'a str,
    pub head: &'a [u8],
    pub tail: &'a [u8],
}

/// One configured upstream MCP server.
#[derive(Clone, Debug)]
pub struct UpstreamSpec {
    /// The server's name from the configuration: shown in errors, logs,
    /// `instructions`, elicitation messages, logger names and `status()`.
    pub name: String,
    /// Namespace for this server's tool and prompt names: exposed names are
    /// `prefix + separator + name` (then made valid, see `mcpx_core::names`).
    /// `""` exposes the names unprefixed.
    pub prefix: String,
    /// Tools to expose; empty = all. Entries are exact upstream tool names or
    /// simple globs with `*` (`read_*`, `*_file`, `*`).
    pub tools_allow: Vec<String>,
    /// Tools to hide; applied after `tools_allow`, same syntax.
    pub tools_deny: Vec<String>,
    /// Per-request timeout for requests sent to this server, in ms. A progress
    /// notification resets it, up to [`HubOptions::max_timeout_ms`] in total.
    pub timeout_ms: u64,
    /// Protocol revisions allowed with this server (`"2025-06-18"`, ...);
    /// empty = every revision the hub speaks. The hub offers the newest one.
    pub revisions: Vec<String>,
    /// Started at its first use, not with the hub: give its last lists with
    /// [`Input::SeedLists`] (see `lazy`).
    pub lazy: bool,
    /// Stopped (`Output::Power`) after this long without a request; 0 = never.
    pub idle_ms: u64,
    /// `"trusted"`: the server's tool annotations are passed on as mcpx's
    /// own; otherwise they carry their provenance in `_meta` (or are
    /// removed, per `policy.untrustedAnnotations`).
    pub trusted: bool,
    /// One process for every client, or one per client principal (see
    /// `isolation`).
    pub isolation: Isolation,
    /// A remote server (a URL): every replica of a cluster reaches the same
    /// one, so a task it runs outlives the replica that created it (see
    /// `shared`). A local process is each replica's own.
    pub remote: bool,
    /// `"required"`: `/ready` waits for it (`Hub::required_not_ready`).
    pub required: bool,
    /// Each principal's instance reaches the server with that principal's
    /// own credentials (`${secret:…}`, `"perPrincipal"` OAuth): said in the
    /// audit lines of its calls.
    #[cfg(feature = "secrets")]
    pub own_credentials: bool,
}

impl UpstreamSpec {
    /// A spec with the defaults: prefix = name, no filters, 60 s timeout, all
    /// revisions.
    pub fn new(name: &str) -> UpstreamSpec {
        UpstreamSpec {
            name: name.to_string(),
            prefix: name.to_string(),
            tools_allow: Vec::new(),
            tools_deny: Vec::new(),
            timeout_ms: 60_000,
            revisions: Vec::new(),
            lazy: false,
            idle_ms: 0,
            trusted: false,
            isolation: Isolation::Shared,
            remote: false,
            required: false,
            #[cfg(feature = "secrets")]
            own_credentials: false,
        }
    }
}

/// Hub-wide options. `HubOptions::default()` is a sensible configuration.
#[derive(Clone, Debug)]
pub struct HubOptions {
    /// Between prefix and name in exposed tool/prompt names. Default `"__"`.
    /// With a `.` in it, clients on revisions before 2025-11-25 (whose tool
    /// names have no `.`) get names with `"__"` instead.
    pub separator: String,
    /// `serverInfo.name` / `serverInfo.version` answered to clients.
    pub server_name: String,
    pub server_version: String,
    /// Roots to answer upstreams' `roots/list` with, instead of asking the
    /// client: either a `ListRootsResult` object (`{"roots":[...]}`) or an array
    /// of `Root`s. `None` = relay `roots/list` to the client.
    pub roots: Option<serde_json::Value>,
    /// Hard cap on the life of any forwarded request, progress or not (ms).
    pub max_timeout_ms: u64,
    /// How long an upstream may take to answer `initialize` before the hub
    /// asks for a restart (ms).
    pub init_timeout_ms: u64,
    /// How long a client's `initialize` may be held while upstreams are still
    /// starting, so that the capabilities answered cover them (ms; the
    /// config's `startupWaitMs`). A server slower than that is named in the
    /// answer ([`NOT_READY_META`]) and its calls wait for it (`lazy`).
    pub startup_wait_ms: u64,
    /// How long a client may take to answer a relayed request (sampling,
    /// elicitation, roots) before the upstream gets an error (ms).
    pub relay_timeout_ms: u64,
    /// Ping a ready upstream that has been silent this long (ms); no answer
    /// within its `timeout_ms` → `RestartUpstream`. 0 = never ping.
    pub ping_interval_ms: u64,
    /// Items per page in `tools/list` and friends answered to clients.
    pub page_size: usize,
    /// Caps: requests in flight (all clients and upstreams together), relayed
    /// server→client requests, connected clients, items per upstream list,
    /// subscriptions per client.
    pub max_pending: usize,
    pub max_relays: usize,
    pub max_clients: usize,
    pub max_list_items: usize,
    pub max_subscriptions: usize,
    /// Key for the integrity tag of pagination cursors; the runtime should set
    /// a random value per process so cursors cannot be forged.
    pub cursor_key: u64,
    /// Revisions served to clients (legacy ones by `initialize`, modern ones
    /// per request). Default: all.
    pub client_revisions: mcpx_core::revision::Revisions,
    /// 32 secret random bytes, drawn once per process: the `requestState`
    /// signing key and nonces derive from it
    /// (`mcpx_core::request_state::Seeded`). The default draws them from the
    /// operating system (`HubOptions::default` is the only place the hub
    /// touches randomness; the state machine takes the seed as input).
    pub secret_seed: [u8; 32],
    /// Life of a `requestState` handed to a modern client, and how long an
    /// upstream call waiting for that client's retry is held (ms).
    pub input_ttl_ms: u64,
    /// How long the hub waits, after a legacy upstream's first request for
    /// input during a modern client's call, for more requests before it
    /// answers `input_required` (ms): requests the upstream makes together
    /// are asked in one round. 0 = answer at once.
    pub input_coalesce_ms: u64,
    /// How long an upstream may take to answer the `server/discover` probe
    /// before the hub falls back to `initialize` (ms). SDK servers answer at
    /// once (a result, or -32601/-32602 when legacy); a server that ignores
    /// unknown requests costs this once per process (the era is cached).
    /// The probe stays open until `init_timeout_ms`: a late modern answer
    /// wins over a refused `initialize` (see `upstream`).
    pub probe_timeout_ms: u64,
    /// Caching hints for lists of upstreams that give none (legacy ones):
    /// `ttlMs`, and whether `cacheScope` is `public` (else `private`). Their
    /// `resources/read` results are not cacheable (`ttlMs` 0).
    pub cache_ttl_ms: u64,
    pub cache_public: bool,
    /// Caps and timings of the tasks mcpx runs itself (`tasks`).
    pub tasks: TaskOptions,
    /// `"policy"`: rate limits, per-principal catalogs, validation, audit,
    /// metrics (`crate::policy`). The default: the default limits and
    /// metrics, no audit, no validation.
    pub policy: crate::policy::PolicyConfig,
    /// Replicas and shared state (`"cluster"`, `"state"`; see `shared`).
    /// The default: alone, everything in memory.
    pub cluster: ClusterOptions,
    /// OpenTelemetry spans of requests (`"traces"`); `None`: off.
    #[cfg(feature = "traces")]
    pub traces: Option<trace::TraceOptions>,
}

impl Default for HubOptions {
    fn default() -> HubOptions {
        HubOptions {
            separator: "__".to_string(),
            server_name: "mcpx".to_string(),
            server_version: env!("CARGO_PKG_VERSION").to_string(),
            roots: None,
            max_timeout_ms: 600_000,
            init_timeout_ms: 30_000,
            startup_wait_ms: 10_000,
            relay_timeout_ms: 300_000,
            ping_interval_ms: 0,
            page_size: 200,
            max_pending: 4096,
            max_relays: 256,
            max_clients: 1024,
            max_list_items: 10_000,
            max_subscriptions: 1024,
            cursor_key: 0x6d63_7078_6375_7273,
            client_revisions: mcpx_core::revision::Revisions::ALL,
            secret_seed: os_seed(),
            input_ttl_ms: 300_000,
            probe_timeout_ms: 3_000,
            input_coalesce_ms: DEFAULT_INPUT_COALESCE_MS,
            cache_ttl_ms: 60_000,
            cache_public: false,
            tasks: TaskOptions::default(),
            policy: Default::default(),
            cluster: ClusterOptions::default(),
            #[cfg(feature = "traces")]
            traces: None,
        }
    }
}

/// Default of [`HubOptions::input_coalesce_ms`].
pub const DEFAULT_INPUT_COALESCE_MS: u64 = 20;

/// 32 bytes from the operating system's CSPRNG (`/dev/urandom`), or, where
/// that cannot be read, from the standard library's per-process random
/// hasher keys (themselves drawn from the operating system).
fn os_seed() -> [u8; 32] {
    use std::io::Read as _;
    let mut seed = [0u8; 32];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut seed)).is_ok() {
        return seed;
    }
    use std::hash::{BuildHasher as _, Hasher as _};
    for (i, chunk) in seed.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    seed
}

/// Why a configuration was refused by [`Hub::new`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// Two upstreams share a name.
    DuplicateName(String),
    /// Two upstreams' prefixes expose the same namespace (after the names were
    /// made valid), e.g. `a.b` and `a_b`.
    PrefixCollision(String, String),
    /// The separator is empty or has characters outside `[A-Za-z0-9_.-]`.
    BadSeparator(String),
    /// An upstream lists a revision the hub does not speak.
    UnknownRevision { server: String, revision: String },
    /// An upstream has an empty name.
    EmptyName,
    /// An upstream allows no revision the hub can speak with it.
    NoUsableRevision(String),
    /// A configured root is not a `file://` URI (or has no `uri`).
    BadRoot(String),
    /// The audit log cannot be opened (the path and the system's reason).
    Audit(String),
    /// A server to restart with a changed entry is not in the hub.
    NotRunning(String),
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::DuplicateName(n) => write!(f, "two servers are named '{n}': give each a unique name"),
            ConfigError::NotRunning(n) => write!(f, "server '{n}' is not running, so it cannot be restarted in its place"),
            ConfigError::PrefixCollision(a, b) => write!(f, "servers '{a}' and '{b}' would expose tools under the same prefix: set a distinct prefix for one of them"),
            ConfigError::BadSeparator(s) => write!(f, "separator '{s}' is not allowed: use one or more of A-Z a-z 0-9 _ - ."),
            ConfigError::UnknownRevision { server, revision } => write!(f, "server '{server}': unknown protocol revision '{revision}'"),
            ConfigError::EmptyName => write!(f, "a server has an empty name"),
            ConfigError::NoUsableRevision(n) => write!(f, "server '{n}': no protocol revision is allowed with it"),
            ConfigError::BadRoot(r) => write!(f, "root {r} is not a file:// URI"),
            ConfigError::Audit(why) => write!(f, "policy.audit: {why}"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Severity of an [`Output::Log`] line (for mcpx's own log, i.e. stderr).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

/// The reason of an `Output::RestartUpstream` an operator asked for
/// (`Input::RestartAsked`): no failure, said at `info`.
pub const RESTART_ASKED: &str = "an operator asked for it";

/// The principal of HTTP clients that sent no credential at all: shared by
/// all of them, so what must be one requestor's is bound to the session.
pub const ANONYMOUS_PRINCIPAL: &[u8] = b"anonymous";

/// The value at `path` (object keys) in `v`: `Value::pointer` without its
/// allocation per path segment, for the per-call path.
pub(crate) fn value_at<'a>(v: &'a serde_json::Value, path: &[&str]) -> Option<&'a serde_json::Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

/// A client's request id (its raw JSON bytes) as a map key: short ids
/// (nearly all) are stored inline, so tracking a request allocates nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdKey {
    Inline(u8, [u8; 22]),
    Heap(Box<[u8]>),
}

impl IdKey {
    pub fn new(id: &[u8]) -> IdKey {
        let mut b = [0u8; 22];
        match b.get_mut(..id.len()) {
            Some(dst) => {
                dst.copy_from_slice(id);
                IdKey::Inline(id.len() as u8, b)
            }
            None => IdKey::Heap(id.into()),
        }
    }

    /// The id's raw JSON bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            IdKey::Inline(n, b) => &b[..*n as usize],
            IdKey::Heap(b) => b,
        }
    }
}

impl std::ops::Deref for IdKey {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes()
    }
}

impl std::borrow::Borrow<[u8]> for IdKey {
    fn borrow(&self) -> &[u8] {
        self.bytes()
    }
}

// Hashes as the `[u8]` it borrows as, so lookups by `&[u8]` find it.
impl std::hash::Hash for IdKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.bytes().hash(h)
    }
}

/// What a message to a client is, so that no runtime reads its bytes to
/// route it (quinn-proto's `poll` events, not bytes to re-read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum About {
    /// The answer to the client's request whose id (the client's own bytes)
    /// is `msg[id]`; `None` when that request's id could not be read.
    /// `outcome`: what it says, known where it was written.
    Reply { id: Option<std::ops::Range<usize>>, outcome: Outcome },
    /// A request the client is to answer (sampling, elicitation, roots,
    /// ping), whose id (the hub's) is `msg[id]`.
    Request { id: std::ops::Range<usize> },
    /// A notification. `unsolicited`: a list change or resource update, not
    /// caused by any request; `related`: the client request it reports on
    /// (progress), to be delivered with that request's answer.
    Notification { unsolicited: bool, related: Option<IdKey> },
    /// The answers to a JSON-RPC batch of the client's (2025-03-26), one
    /// array written when the last of its requests is answered.
    Batch,
}

/// What an answer to a client's request says, known where the hub writes
/// it (from its own error, or the upstream's view), so that neither the
/// audit and metrics nor a transport read its bytes again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Result,
    /// A result with `isError: true`.
    ToolError,
    /// An error with this code; `retry_after_s`: a refusal by one of the
    /// hub's limits, and when to retry (HTTP `Retry-After`).
    Error { code: i64, retry_after_s: Option<u64> },
}

impl Outcome {
    /// The outcome of a result whose `isError` member is `is_error`.
    pub fn of_result(is_error: Option<mcpx_core::json::JsonValue<'_>>) -> Outcome {
        match is_error {
            Some(v) if v.bytes() == b"true" => Outcome::ToolError,
            _ => Outcome::Result,
        }
    }

    /// The outcome of an error object's view (`code`, `data.limit`,
    /// `data.retryAfterMs`).
    pub fn of_error(error: Option<mcpx_core::json::JsonValue<'_>>) -> Outcome {
        let field = |path: &[&str]| path.iter().try_fold(error?, |v, k| v.get(k));
        let number = |path: &[&str]| field(path).and_then(|v| std::str::from_utf8(v.bytes()).ok()?.parse::<i64>().ok());
        let code = number(&["code"]).unwrap_or(0);
        let limit = field(&["data", "limit"]).and_then(|v| v.as_str()).and_then(|s| s.as_str());
        let ms = number(&["data", "retryAfterMs"]).and_then(|n| u64::try_from(n).ok());
        Outcome::Error { code, retry_after_s: crate::policy::ratelimit::retry_after(code, limit, ms) }
    }
}

/// What a message to an upstream is, so that no transport reads its bytes
/// to learn it (as [`About`] for messages to clients). Built where the hub
/// writes the message (`upward`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Upward {
    /// A request of the hub's, whose id is `id` (its JSON bytes, as
    /// written); `method`: its method when known to core's table; `modern`:
    /// for a 2026-07-28 request to a remote server, the HTTP headers that
    /// revision requires (none for a process on stdio).
    /// `traceparent`: the W3C trace context of a traced request (its
    /// parent is the hub's span of the call), for a remote server's header
    /// (only in a build with `traces`).
    Request {
        id: IdKey,
        method: Option<mcpx_core::method::Method<'static>>,
        modern: Option<ModernHeaders>,
        #[cfg(feature = "traces")]
        traceparent: Option<TraceHeader>,
    },
    /// A notification (`method` as for a request).
    Notification { method: Option<mcpx_core::method::Method<'static>> },
    /// An answer (result or error) to one of the upstream's requests.
    Answer,
}

impl Upward {
    /// The id of a request; `None` for notifications and answers.
    pub fn request_id(&self) -> Option<&[u8]> {
        match self {
            Upward::Request { id, .. } => Some(id.bytes()),
            _ => None,
        }
    }

    /// Whether this is a request or notification of `method`.
    pub fn is(&self, method: mcpx_core::method::Method<'static>) -> bool {
        match self {
            Upward::Request { method: m, .. } | Upward::Notification { method: m } => *m == Some(method),
            Upward::Answer => false,
        }
    }
}

/// The `traceparent` of a traced request to an upstream, for a remote
/// server's header ([`Upward::Request`]), or to another replica
/// ([`Output::Forward`]); `TraceHeader::bytes`.
#[cfg(feature = "traces")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceHeader(pub Box<[u8; mcpx_core::trace_context::LEN]>);

/// Never made in a build without `traces`: nothing of it is compiled.
#[cfg(not(feature = "traces"))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceHeader {}

#[cfg(feature = "traces")]
impl TraceHeader {
    /// The header's value.
    pub fn bytes(&self) -> &[u8] {
        &self.0[..]
    }
}

#[cfg(not(feature = "traces"))]
impl TraceHeader {
    pub fn bytes(&self) -> &[u8] {
        match *self {}
    }
}

/// The 2026-07-28 HTTP headers of one modern request to an upstream
/// (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`), names
/// lowercased, values encoded by core's header codec.
pub type ModernHeaders = Vec<(String, Vec<u8>)>;

/// What the hub asks the runtime to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Write one message to a client; [`About`] says what it is.
    ToClient(ClientId, Vec<u8>, About),
    /// Client `c`'s `initialize` was answered: the session speaks this revision.
    ClientInitialized(ClientId, mcpx_core::revision::Revision),
    /// What legacy client `c`'s session keeps ([`Hub::client_snapshot`])
    /// changed: a runtime that keeps it elsewhere (a cluster's store)
    /// writes it again.
    SessionChanged(ClientId),
    /// Write one message to an upstream (a child's stdin, a remote
    /// server's transport); [`Upward`] says what it is.
    ToUpstream(UpstreamId, Vec<u8>, Upward),
    /// Kill and respawn this upstream (hung or broken); the reason is for logs.
    /// The runtime then reports `Input::UpstreamExited` and later `Input::UpstreamStarted`.
    RestartUpstream(UpstreamId, &'static str),
    /// Close this client connection (after writing what was queued before it).
    CloseClient(ClientId),
    /// Start or stop this upstream's process (lazy start, idle stop); the
    /// runtime then reports `Input::UpstreamStarted` / `Input::UpstreamExited` as usual.
    Power(UpstreamId, Power),
    /// Upstream `u`'s lists were read (at its start, or again after a
    /// change): the runtime may keep them ([`Hub::upstream_lists`]) for the
    /// next start and for other replicas. Given once per start and then
    /// only when they changed.
    ListsRead(UpstreamId),
    /// A line for mcpx's own log.
    Log(Level, String),
    /// The hub's tasks changed: write this as the task state file, before
    /// routing the outputs that follow (see `tasks::persist`).
    SaveTasks(Vec<u8>),
    /// The pins changed: write this as the pin file in the state folder
    /// (see `pins`).
    SavePins(Vec<u8>),
    /// Ask the shared store (`state.url`); answer with
    /// [`Input::SharedAnswered`] under the ask's ticket (none for ticket 0).
    Shared(shared::Ask),
    /// Client `client`'s request `request` (its id, raw JSON), whose bytes
    /// are `msg`, is for replica `to`, which owns what it continues: send
    /// `msg` over the internal hop as from `principal`, and write that
    /// replica's answer (and the notifications before it) to the client as
    /// this request's. Report the end with [`Input::ForwardDone`]; the hub
    /// sends nothing upstream for it. `traceparent`: the hop's header when
    /// the request is traced (this replica's span as the parent).
    Forward { client: ClientId, request: IdKey, msg: Vec<u8>, principal: Vec<u8>, to: ReplicaId, traceparent: Option<TraceHeader> },
    /// A call waits for the approvals page: tell the notify hook
    /// (`policy.approvals.notify`) of it over the carrier (run its command,
    /// or POST to its URL), not waiting for it; a failure is logged, never
    /// retried, and the call waits on regardless. Boxed: every output
    /// would be as large. Not in a build without `consent`.
    #[cfg(feature = "consent")]
    Notify(Box<(crate::policy::approval::Carrier, crate::policy::approval::Notice)>),
}

/// The hub state machine. See the module documentation.
pub struct Hub {
    opts: HubOptions,
    ups: upstream::Upstreams,
    clients: client::Clients,
    catalog: catalog::Catalog,
    pending: pending::Pending,
    relays: relay::Relays,
    /// Resource subscriptions and the last `logging/setLevel` from a client.
    subs: subscriptions::Subscriptions,
    tasks: tasks::Tasks,
    out: VecDeque<Output>,
    /// Time of the first `Input::UpstreamStarted`/`client_connected`, for the startup wait.
    started_ms: Option<u64>,
    now_ms: u64,
    /// Modern clients' listen streams, and their requests that came while
    /// upstreams were still starting (`modern`).
    listens: modern::Listens,
    /// Requests parked for a server's start, and the per-client instances
    /// of isolated servers (see `starts`).
    starts: starts::Starts,
    /// Set by the runtime (`Input::ConfigStatus`), shown in `status()`.
    config_status: serde_json::Value,
    /// Set by [`Input::Shutdown`]: new client requests are refused.
    draining: bool,
    /// Rate limits, catalogs, validation, audit and metrics (`policy`).
    policy: policy::HubPolicy,
    /// Requests waiting for the shared store or another replica (`shared`).
    shared: shared::Shared,
    /// Calls waiting for a person's approval (`approvals`).
    approvals: approvals::Approvals,
    /// The pinned definitions and what changed (`pins`).
    pins: pins::Pins,
    /// Spans of the requests, when `"traces"` is on (`trace`).
    trace: trace::Trace,
    /// The manifests of the skills that passed (`skills`).
    skills: skills::Skills,
    /// The URL elicitations legacy clients were told (`url_ask`).
    #[cfg(feature = "secrets")]
    told: url_ask::Told,
}

impl Hub {
    /// Checks the configuration and builds a hub with every upstream down.
    pub fn new(upstreams: Vec<UpstreamSpec>, opts: HubOptions) -> Result<Hub, ConfigError> {
        let ups = upstream::Upstreams::new(upstreams, &opts)?;
        let relays = relay::Relays::new(&opts);
        let tasks = tasks::Tasks::new(&opts);
        let policy = policy::HubPolicy::new(&opts)?;
        let starts = starts::Starts::new(&opts);
        let listens = modern::Listens::new(&opts);
        let announce = opts.cluster.replica.as_ref().filter(|_| opts.cluster.shared).map(|r| r.to_string());
        #[cfg(feature = "traces")]
        let (opts_traces, opts_seed) = (opts.traces.clone(), opts.secret_seed);
        let approvals = approvals::Approvals::new(&opts.policy.approvals, opts.secret_seed, opts.cluster.state_key.unwrap_or(opts.secret_seed), announce);
        Ok(Hub {
            approvals,
            pins: pins::Pins::new(opts.policy.pin.clone()),
            policy,
            catalog: catalog::Catalog::new(ups.len()),
            ups,
            clients: client::Clients::new(opts.max_clients),
            opts,
            pending: pending::Pending::default(),
            relays,
            subs: subscriptions::Subscriptions::default(),
            tasks,
            out: VecDeque::new(),
            started_ms: None,
            now_ms: 0,
            listens,
            starts,
            config_status: serde_json::Value::Null,
            draining: false,
            shared: Default::default(),
            #[cfg(feature = "traces")]
            trace: trace::Trace::new(opts_traces.as_ref(), opts_seed),
            skills: skills::Skills::default(),
            #[cfg(not(feature = "traces"))]
            trace: trace::Trace,
            #[cfg(feature = "secrets")]
            told: url_ask::Told::default(),
        })
    }

    /// A new downstream connection. Returns its id (never reused).
    /// Over `max_clients`, the connection is closed at once (`CloseClient`).
    pub fn client_connected(&mut self, now_ms: u64) -> ClientId {
        self.now(now_ms);
        match self.clients.connect(self.now_ms) {
            Ok(c) => c,
            Err(c) => {
                let msg = format!("mcpx refused a client connection: {} clients are connected (its limit)", self.clients.max());
                self.log(Level::Warn, msg);
                self.out.push_back(Output::CloseClient(c));
                c
            }
        }
    }

    /// A new client going on from `s`, the session of a replica that is
    /// gone: initialized as it was, its log level and subscriptions asked
    /// again of the upstreams (`logging/setLevel`, `resources/subscribe`),
    /// the lists it read taken as shown now. Over `max_clients` it is
    /// closed at once, as [`Hub::client_connected`] does.
    #[cfg(feature = "cluster")]
    pub fn adopt_client(&mut self, s: &Snapshot, now_ms: u64) -> ClientId {
        let c = self.client_connected(now_ms);
        if !self.clients.contains_key(&c) {
            return c;
        }
        let mut fps = [0; 3];
        for ch in catalog::Channel::ALL.into_iter().filter(|ch| s.listed[ch.idx()]) {
            fps[ch.idx()] = stages::Sight::of(&self.policy, &self.clients, &self.ups, c, None).fingerprint(&mut self.catalog, ch, s.rev);
        }
        self.clients.adopt(c, s, |ch| fps[ch.idx()]);
        // (A snapshot's level is one MCP names: it was read as one.)
        if let Some(Ok(fx)) = s.log_level.map(|level| self.subs.set_log_level(&self.ups, c, level)) {
            self.apply_subscriptions(fx);
        }
        for uri in s.subscriptions.iter().take(self.opts.max_subscriptions) {
            let fx = self.subs.resubscribe(&self.ups, &self.catalog, c, uri);
            self.apply_subscriptions(fx);
        }
        self.out.extend(self.clients.session_changed(c));
        c
    }

    /// Acts on what happened at `now_ms` (any monotonic millisecond clock):
    /// the one way in ([`Input`]). Drain [`Hub::poll_output`] after it.
    pub fn handle(&mut self, input: Input<'_>, now_ms: u64) {
        self.now(now_ms);
        match input {
            Input::ClientMessage(c, bytes) => self.on_client_message(c, bytes),
            Input::ClientEnvelope(c, env) => self.on_client_view(c, &wire::view(*env)),
            Input::ClientFrameTooLarge(c, big) => {
                if let Some((id, request::Refusal(code, msg, data))) = self.clients.too_large(c, big) {
                    self.downward().error(c, id, code, &msg, data);
                }
            }
            Input::ClientDisconnected(c) => self.on_client_disconnected(c),
            Input::ClientPrincipal(c, principal) => {
                if let Some(cl) = self.clients.get_mut(&c) {
                    cl.principal = principal.to_vec();
                }
            }
            Input::ClientModern(c) => {
                if let Some(cl) = self.clients.get_mut(&c) {
                    cl.stage = client::Stage::Modern;
                }
            }
            Input::UpstreamStarted(u) => {
                let fx = self.ups.on_started(u, self.now_ms, &self.opts);
                self.apply_upstream(fx);
            }
            Input::UpstreamMessage { up, msg, on } => self.on_upstream_message(up, msg, on.and_then(wire::id_u64)),
            Input::UpstreamExited { up, reason, stderr_tail, next } => {
                let fx = self.ups.on_exited(up, reason, stderr_tail, next, self.now_ms);
                self.apply_upstream(fx);
            }
            Input::UpstreamRefused { up, msg, why } => self.on_upstream_refused(up, msg, why),
            Input::UpstreamTooLarge { up, big, on } => self.on_upstream_too_large(up, big, on),
            Input::UpstreamGarbage(u, what) => {
                let fx = self.ups.on_garbage(u, what);
                self.apply_upstream(fx);
            }
            Input::Relist(u) => {
                let fx = self.ups.relist(u, &catalog::Kind::ALL, self.starts.is_instance(u));
                self.apply_upstream(fx);
            }
            #[cfg(feature = "secrets")]
            Input::AskedToAuthorize { up, ask } => {
                // Calls in flight to it (its principal's tokens went: a logout) are told now,
                // those parked for its start when it exits.
                for (_, f) in self.pending.drain_client_calls_to(up) {
                    if let Origin::Client { client, id, method, modern, .. } = f.origin {
                        self.ask_to_authorize(client, id.bytes(), &method, modern.map(|x| *x), &ask);
                    }
                }
                self.starts.asked(up, ask);
            }
            // Requirement: elicitation-complete-only-to-initiating-client, elicitation-complete-must-carry-id
            #[cfg(feature = "secrets")]
            // (Only clients that took URL elicitations were told one.)
            Input::Authorized(id) => {
                for c in self.told.take(id) {
                    self.downward().notify(c, Method::ElicitationComplete, &json!({ "elicitationId": id }));
                }
            }
            Input::UpstreamRemoved { up, why } => {
                let fx = self.ups.on_remove(up, why);
                self.apply_upstream(fx);
            }
            Input::SeedLists { up, lists, hold } => {
                if let Some(x) = self.ups.get_mut(up) {
                    let fx = starts::seed(x, up, lists, hold);
                    self.apply_starts(fx);
                }
            }
            Input::SharedAnswered { ticket: shared::ANNOUNCE_TICKET, answer } => {
                // A failed write is tried again with the next change or tick.
                let failed = matches!(answer, shared::Answer::Unavailable(_));
                self.approvals.announced(failed);
                if !failed {
                    // Nothing to do but announce what changed meanwhile.
                    self.apply_approvals(Vec::new());
                }
            }
            Input::SharedAnswered { ticket, answer } => {
                let clients = &self.clients;
                let effects = self.shared.answered(ticket, answer, &self.opts.cluster, |c| clients.contains_key(&c));
                self.apply_shared(effects);
            }
            Input::ForwardDone { client, request, result } => {
                let effect = self.shared.forward_done(client, request, result, shared::At::of(&self.opts, self.now_ms));
                self.apply_shared(effect.into_iter().collect());
            }
            Input::Tick => self.on_tick(),
            Input::Shutdown => {
                self.draining = true;
                let fx = self.listens.end_every(&self.opts);
                self.apply_listens(fx);
            }
            Input::AbandonRequests { grace_ms } => {
                for (u, id, f) in self.pending.drain_clients() {
                    let Origin::Client { client, id: cid, method, .. } = f.origin else { continue };
                    self.ups.cancel(&mut self.out, u, id, "mcpx is shutting down");
                    let name = self.ups[u].spec.name.clone();
                    let msg = format!("mcpx is shutting down: server '{name}' did not answer {method} within the {grace_ms} ms grace period");
                    self.downward().error(client, Some(&cid), ErrorCode::InternalError, &msg, Some(json!({ "server": name })));
                }
            }
            Input::ConfigStatus(v) => self.config_status = v,
            Input::CallLog(on) => self.policy.set_call_log(on),
            #[cfg(feature = "traces")]
            Input::ClientTrace { client, traceparent, tracestate, session, hop } => self.trace.transport(client, traceparent, tracestate, session, hop),
            #[cfg(feature = "cli")]
            Input::RestartAsked(u) => self.out.push_back(Output::RestartUpstream(u, RESTART_ASKED)),
            #[cfg(feature = "consent")]
            Input::ApprovalPage(on) => self.approvals.set_page(on),
            #[cfg(feature = "consent")]
            Input::ApprovalDecided { who, n, approve } => {
                // One `who` may not decide is not told apart from one decided.
                if let Ok(fx) = self.approvals.decide_on_page(who, n, approve, self.now_ms) {
                    self.apply_approvals(fx);
                }
            }
            Input::PinFiles { state, lock } => {
                let fx = self.pins.read(state, lock);
                self.apply_pins(fx);
            }
            #[cfg(feature = "consent")]
            Input::PinAccepted { who, name } => {
                let by = policy::principal_name(who);
                let fx = match self.approvals.is_approver(who) {
                    true => self.pins.accept(name).unwrap_or_else(|why| vec![pins::Effect::Log(Level::Warn, format!("pins: {by} could not accept '{name}' on the status page: {why}"))]),
                    false => vec![pins::Effect::Log(Level::Warn, format!("pins: {by}, who is no approver, asked to accept '{name}' on the status page; refused"))],
                };
                self.apply_pins(fx);
            }
        }
        // Answers the hub wrote to calls a task stands for (`approvals`).
        if cfg!(feature = "consent") {
            for (task, answer) in self.clients.take_task_answers() {
                let fx = self.tasks.answer_of_call(&task, &answer, self.now_ms);
                self.apply_task_effects(fx);
            }
        }
    }

    /// What legacy client `c`'s session needs to go on on another replica
    /// ([`Snapshot`]); `None` for an unknown or modern client, or before its
    /// `initialize` is answered.
    #[cfg(feature = "cluster")]
    pub fn client_snapshot(&self, c: ClientId) -> Option<Snapshot> {
        self.clients.snapshot(c, || self.subs.of_client(c))
    }

    /// Adds a server (a config reload): checked as [`Hub::new`] checks
    /// each one, against the servers there are. Returns its id, whose
    /// process the runtime then starts (`Input::UpstreamStarted` as usual). The id
    /// may be one a removed server had: start it only after that server's
    /// process is gone.
    pub fn add_upstream(&mut self, spec: UpstreamSpec, now_ms: u64) -> Result<UpstreamId, ConfigError> {
        self.now(now_ms);
        let (u, fx) = self.ups.on_add(spec, &self.opts)?;
        self.apply_upstream(fx);
        Ok(u)
    }

    /// Server `u`'s entry changed (a config reload) to `spec` (checked as
    /// [`Hub::add_upstream`] checks one): its requests in flight are
    /// answered with an error saying `why`, its instances go, and its
    /// tools stay listed while it restarts; requests for it wait for its
    /// new entry within its `timeout_ms`. Reports about its old process are
    /// ignored from now on: stop it (and its instances), then call
    /// [`Hub::upstream_replaced`].
    pub fn replace_upstream(&mut self, u: UpstreamId, spec: UpstreamSpec, why: &str, now_ms: u64) -> Result<(), ConfigError> {
        self.now(now_ms);
        let fx = self.ups.on_replace(u, spec, why, &self.catalog, &self.opts)?;
        self.apply_upstream(fx);
        self.skills.forget(u);
        Ok(())
    }

    /// The old process of server `u`, replaced, is gone: true when the
    /// runtime is to start its new entry now (`Input::UpstreamStarted` as usual),
    /// false when it sleeps until used (a lazy server whose lists are known
    /// and `current`: its new entry runs what they were listed from).
    pub fn upstream_replaced(&mut self, u: UpstreamId, current: bool, now_ms: u64) -> bool {
        self.now(now_ms);
        let waiting = self.starts.parked_for(u);
        self.ups.replaced(u, current, waiting, self.now_ms)
    }

    /// What upstream `u` offers (capabilities, instructions, its lists as
    /// listed and filtered), for the runtime to keep for a lazy start;
    /// `None` while it was never initialized.
    pub fn upstream_lists(&self, u: UpstreamId) -> Option<serde_json::Value> {
        starts::lists(u, self.ups.get(u)?, &self.catalog)
    }

    /// The earliest time at which `tick` has something to do, if any.
    pub fn next_deadline(&self) -> Option<u64> {
        [self.pending.next_deadline(), self.relays.next_deadline(), self.started_ms.filter(|_| self.clients.any_held() || self.listens.any_early()).map(|s| s + self.opts.startup_wait_ms), self.ups.next_ping(self.opts.ping_interval_ms, |u| self.pending.pinging(u)), self.starts.deadline(&self.ups, &self.clients, &|u| self.pending.busy(u)), self.tasks.deadline(), self.shared.deadline(), self.approvals.deadline()].into_iter().flatten().min()
    }

    /// The calls waiting for approval, to ask about (read only; the
    /// `/approvals` page shows [`approvals::Approvals::visible`]).
    #[cfg(feature = "consent")]
    pub fn approvals(&self) -> &approvals::Approvals {
        &self.approvals
    }

    /// The connected clients, to ask about (read only).
    pub fn clients(&self) -> &client::Clients {
        &self.clients
    }

    /// How many servers marked `"required"` are not ready (`/ready`): a
    /// lazy one asleep is ready (it starts on demand); instances are not counted.
    pub fn required_not_ready(&self) -> usize {
        self.ups.required_not_ready(|u| self.starts.is_instance(u))
    }

    /// The upstream slots, to ask about (read only).
    pub fn upstreams(&self) -> &upstream::Upstreams {
        &self.ups
    }

    /// The lazy starts and isolated servers' instances, to ask about (read
    /// only).
    pub fn starts(&self) -> &starts::Starts {
        &self.starts
    }

    /// The tools, prompts and resources as listed, to ask about (read only).
    pub fn catalog(&self) -> &catalog::Catalog {
        &self.catalog
    }

    /// The next thing for the runtime to do, in order.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// From now on the hub's tasks are saved (`Output::SaveTasks`) whenever
    /// one is created or ends; `saved` is the state file of the last run,
    /// if any (at most [`TASK_STATE_MAX`] bytes). Returns how many of its
    /// tasks came back (`tasks::persist`).
    pub fn restore_tasks(&mut self, saved: Option<&[u8]>, now_ms: u64) -> usize {
        let (restored, fx) = self.tasks.restore(saved, &task_ups(&self.ups), now_ms.max(self.now_ms));
        self.apply_task_effects(fx);
        let fx = self.tasks.refollow_ready(&task_ups(&self.ups), self.now_ms);
        self.apply_task_effects(fx);
        restored
    }

    /// What the tasks subsystem asked for, done in its order: each effect
    /// becomes the hub's own call (`tasks::Effect`).
    fn apply_task_effects(&mut self, fx: Vec<tasks::Effect>) {
        use tasks::Effect::*;
        for e in fx {
            match e {
                Answer { client, id, result, outcome } => {
                    let body = match result {
                        tasks::Reply::Bytes(b) => b,
                        tasks::Reply::Stamped(mut v) => {
                            modern::stamp(&self.opts, &mut v, None);
                            serde_json::to_vec(&v).unwrap_or_default()
                        }
                    };
                    self.downward().result_as(client, &id, &body, outcome);
                }
                AnswerRaw { client, id, error, outcome } => self.downward().raw_error(client, &id, &error, outcome),
                Refuse { client, id, refusal: request::Refusal(code, msg, data) } => self.downward().error(client, Some(&id), code, &msg, data),
                StatusToCreator { client, params } => {
                    if self.clients.get(&client).is_some_and(|cl| tasks::declared_legacy(cl.rev(), cl.caps())) {
                        self.downward().notification(client, mcpx_core::method::Method::TasksStatus, Some(&params));
                    }
                }
                NotifyListens { principal, id, task } => {
                    let clients = &self.clients;
                    let fx = self.listens.task(&id, &task, |c| clients.get(&c).is_some_and(|cl| cl.principal == principal));
                    self.apply_listens(fx);
                }
                Ask { u, method, params, task, timeout } => {
                    let origin = task.clone().map_or(pending::Origin::Fire, pending::Origin::Task);
                    let sent = self.send_upstream(u, method, Some(&params), origin, timeout);
                    if let Some(id) = task {
                        self.tasks.calling(&id, sent.map(|s| (u, s)));
                    }
                }
                ToUpstream { u, msg } => self.emit_upstream(u, msg),
                #[cfg(feature = "traces")]
                Traced { task, started_by, status } => self.trace.task(&task, started_by, status.map(|s| s.as_str()), self.now_ms),
                RefuseUpstream { u, id, method, code, why } => self.apply_relay(relay::refuse(&self.ups[u].spec.name, u, &id, &method, code, why)),
                EndCall { u, id, why } => {
                    self.pending.take(u, id);
                    if let Some(why) = why {
                        self.ups.cancel(&mut self.out, u, id, why);
                    }
                }
                Log(level, msg) => self.log(level, msg),
                Save => {
                    let (file, warning) = self.tasks.state_file(&task_ups(&self.ups));
                    if let Some(w) = warning {
                        self.log(Level::Warn, w);
                    }
                    self.out.push_back(Output::SaveTasks(file));
                }
                // Published for the other replicas, when they share a store.
                Publish(id) => {
                    let Some(me) = self.opts.cluster.replica.as_ref().filter(|_| self.opts.cluster.shared) else { continue };
                    let Some((record, ttl_ms)) = self.tasks.record_now(&id, &task_ups(&self.ups), self.now_ms) else { continue };
                    self.out.push_back(Output::Shared(shared::publish(me, &id, record, ttl_ms)));
                }
            }
        }
    }

    /// A JSON snapshot for `mcpx status` and logs: every upstream's state,
    /// negotiated revision, restarts, last error and tool count; the clients.
    pub fn status(&self) -> serde_json::Value {
        let starts = &self.starts;
        let mut v = json!({
            // Whose an instance is: the status role's view (feature `signin`).
            "upstreams": self.ups.status(self.now_ms, &self.catalog, |u| (starts.template_of(u), cfg!(feature = "signin").then(|| starts.owner_name(u, &self.clients)).flatten()), &self.config_status),
            "clients": self.clients.status(|c| self.listens.count(c)),
            "pending": self.pending.len(),
            "relays": self.relays.len(),
            "config": self.config_status,
            "tasks": self.tasks.status(),
            "approvalsWaiting": self.approvals.len(),
        });
        if let Some(m) = self.policy.metrics_json() {
            v["metrics"] = m;
        }
        if let Some(p) = self.pins.status() {
            v["pins"] = p;
        }
        #[cfg(feature = "activity")]
        {
            let mut waiting = std::collections::BTreeMap::<&str, usize>::new();
            for (u, n) in self.relays.waiting() {
                let u = starts.template_of(u).unwrap_or(u);
                *waiting.entry(&self.ups[u].spec.name).or_default() += n;
            }
            v["activity"] = self.policy.activity_json(self.now_ms);
            v["activity"]["waiting"] = json!(waiting);
        }
        v
    }

    fn now(&mut self, now_ms: u64) {
        if now_ms > self.now_ms {
            self.now_ms = now_ms;
        }
        if self.started_ms.is_none() {
            self.started_ms = Some(now_ms);
        }
    }

    /// Does what the upstreams asked, in order. (A `Vec`, as every
    /// applier takes: a generic one is compiled once per argument type.)
    fn apply_upstream(&mut self, effects: Vec<upstream::Effect>) {
        use pending::Origin;
        use upstream::Effect;
        for e in effects {
            match e {
                Effect::Send { u, method, params, origin, timeout } => {
                    let own = matches!(origin, Origin::List(_) | Origin::Listen).then(|| origin.clone());
                    let sent = self.send_upstream(u, method, params.as_deref(), origin, timeout);
                    if let Some(origin) = own {
                        self.ups.sent(u, &origin, sent);
                    }
                }
                Effect::Listed(u, k, items) => self.set_items(u, k, items, false),
                #[cfg(feature = "skills")]
                Effect::SkillsListed(u, entries) => self.skills.listed(u, &self.ups[u].spec.name, &entries),
                Effect::CheckSettled(u) => {
                    let catalog = &self.catalog;
                    let fx = self.ups.check_settled(u, self.starts.is_instance(u), |up| starts::lists(u, up, catalog));
                    self.apply_upstream(fx);
                }
                Effect::ListsRead(u) => self.out.push_back(Output::ListsRead(u)),
                Effect::Release(u) => {
                    let fx = self.starts.release(u);
                    self.apply_starts(fx);
                }
                Effect::Cancel { u, id, reason } => self.ups.cancel(&mut self.out, u, id, reason),
                Effect::Close { u, id, reason } => {
                    if self.pending.take(u, id).is_some() {
                        self.ups.cancel(&mut self.out, u, id, reason);
                    }
                }
                // With the resources of it the hub's clients subscribed to.
                Effect::OpenListen(u) if self.ups[u].listens() => {
                    let uris = self.subs.uris_of(&self.ups, &self.catalog, u);
                    let fx = self.ups.open_listen(u, uris, self.opts.max_timeout_ms);
                    self.apply_upstream(fx);
                }
                Effect::OpenListen(_) => {}
                Effect::Initialized(u) => upward::notification(&mut self.out, u, mcpx_core::method::Method::Initialized, None),
                Effect::Log(level, line) => self.log(level, line),
                Effect::Restart(u, short) => self.out.push_back(Output::RestartUpstream(u, short)),
                Effect::Settled => self.release_held_inits(),
                Effect::Ready(u) => {
                    let fx = self.ups.read_lists(u, self.starts.is_instance(u), &self.catalog);
                    self.apply_upstream(fx);
                    // Its tasks followed again, its subscriptions asked again.
                    let fx = self.tasks.refollow(&task_up(u, &self.ups[u]), self.now_ms);
                    self.apply_task_effects(fx);
                    let fx = self.subs.restore(&self.ups, &self.catalog, u);
                    self.apply_subscriptions(fx);
                    self.apply_upstream(vec![Effect::CheckSettled(u)]);
                }
                Effect::Gone { u, name, reason } => {
                    for (_, f) in self.pending.drain_upstream(u) {
                        match (f.origin, &reason) {
                            (Origin::Client { client, id, method, .. }, _) => {
                                let msg = match &reason {
                                    Some(r) => format!("server '{name}' exited before answering {method} ({r})"),
                                    None => format!("server '{name}' stopped before answering {method} (idle stop)"),
                                };
                                self.downward().error(client, Some(&id), ErrorCode::InternalError, &msg, Some(serde_json::json!({ "server": name })));
                            }
                            (Origin::Task(t), Some(r)) => {
                                let fx = self.tasks.lost(&t, format!("server '{name}' exited before the task finished ({r})"), self.now_ms);
                                self.apply_task_effects(fx);
                            }
                            _ => {}
                        }
                    }
                    let fx = self.relays.drop_upstream(u, &name);
                    self.apply_relay(fx);
                }
                Effect::WakeFailed(u, reason) => {
                    let fx = self.starts.wake_failed(&mut self.ups[u], u, &reason);
                    self.apply_starts(fx);
                }
                Effect::NewSlot => self.catalog.add_slot(),
                Effect::RemoveInstances(u, why) => {
                    let fx = self.starts.remove_instances(u, &why);
                    self.apply_starts(fx);
                }
                Effect::KeepOpen { u, id, f, until } => self.pending.keep_until(u, id, f, until),
            }
        }
    }

    fn log(&mut self, level: Level, msg: String) {
        self.out.push_back(Output::Log(level, msg));
    }

    /// The writers toward clients, over the output queue, the clients and
    /// the policy.
    fn downward(&mut self) -> downward::Downward<'_> {
        downward::Downward { out: &mut self.out, clients: &mut self.clients, policy: &mut self.policy, trace: &mut self.trace, now_ms: self.now_ms }
    }

    /// Client `c`'s request `id` (`method`, with its context when modern)
    /// needs its principal to authorize at `ask` first (`url_ask`).
    #[cfg(feature = "secrets")]
    fn ask_to_authorize(&mut self, c: ClientId, id: &[u8], method: &str, ctx: Option<request::ReqCtx>, ask: &url_ask::UrlAsk) {
        use url_ask::Asked;
        let Some(cl) = self.clients.get(&c) else { return };
        let caps = ctx.as_ref().map_or_else(|| cl.caps_value(), |x| x.caps.clone());
        let url_mode = cl.rev().supports(mcpx_core::revision::Feature::ElicitationUrlMode);
        match (url_ask::how(ask, method == "tools/call", ctx.is_some(), url_mode, &caps), ctx) {
            (Asked::Round(params), Some(ctx)) => match self.relays.seal(method, &ctx, &[relay::INNER_AUTHORIZE], self.now_ms) {
                Ok(state) => {
                    let mut result = json!({ "resultType": "input_required", "inputRequests": { url_ask::INPUT_KEY: { "method": "elicitation/create", "params": params } }, "requestState": state });
                    modern::stamp(&self.opts, &mut result, None);
                    self.downward().result(c, id, &serde_json::to_vec(&result).unwrap_or_default());
                }
                Err(why) => self.downward().error(c, Some(id), ErrorCode::InternalError, &why, None),
            },
            (Asked::Required(data), _) => {
                self.told.remember(&ask.id, c);
                self.downward().error(c, Some(id), ErrorCode::UrlElicitationRequired, "URL elicitation required: authorize first", Some(data));
            }
            (Asked::ToolError(text), ctx) => {
                let mut result = json!({ "content": [{ "type": "text", "text": text }], "isError": true });
                if ctx.is_some() {
                    modern::stamp(&self.opts, &mut result, None);
                }
                self.downward().result_as(c, id, &serde_json::to_vec(&result).unwrap_or_default(), Outcome::ToolError);
            }
            (Asked::Error(text), _) => {
                self.downward().error(c, Some(id), ErrorCode::InternalError, &text, Some(json!({ "url": ask.url })));
            }
            // A round goes to modern requests only (`how`).
            (Asked::Round(_), None) => {}
        }
    }

    /// The tracer (`"traces"`), for the runtime: whether tracing is on
    /// (the transport then hands over the trace context of HTTP requests,
    /// `Input::ClientTrace`), the finished spans to take for export, and
    /// what the exporter did with them ([`trace::Trace::exported`]).
    #[cfg(feature = "traces")]
    pub fn trace(&mut self) -> &mut trace::Trace {
        &mut self.trace
    }

    /// The Prometheus text for `/metrics` (`None` with `"metrics": false`).
    pub fn metrics_text(&mut self, sessions: usize, connections: usize) -> Option<String> {
        #[cfg(feature = "traces")]
        if let Some(n) = self.trace.counts() {
            self.policy.trace_counts(n);
        }
        let ups = self.ups.iter().map(|u| (u.spec.name.as_str(), u.is_ready(), u64::from(u.restarts)));
        let queues = [("pending", self.pending.len()), ("output", self.out.len())];
        self.policy.metrics_text(ups, sessions, connections, &queues)
    }

    /// Runs `step` of the request pipeline over the parts of the hub it
    /// borrows (`stages`), then does what it left to do, in order.
    fn stages<T>(&mut self, step: impl FnOnce(&mut stages::Pipeline<'_>) -> T) -> T {
        let mut p = stages::Pipeline {
            policy: &mut self.policy,
            shared: &mut self.shared,
            starts: &mut self.starts,
            upstreams: &mut self.ups,
            approvals: &mut self.approvals,
            pins: &self.pins,
            principals: &self.clients,
            catalog: &self.catalog,
            opts: &self.opts,
            now_ms: self.now_ms,
            #[cfg(feature = "traces")]
            traced: self.trace.on(),
            effects: Vec::new(),
        };
        let r = step(&mut p);
        for e in p.effects {
            match e {
                stages::Effect::Shared(e) => self.apply_shared(vec![e]),
                stages::Effect::Starts(fx) => self.apply_starts(fx),
                stages::Effect::Approvals(fx) => self.apply_approvals(fx),
                #[cfg(feature = "traces")]
                stages::Effect::Waits(c, id, wait) => self.trace.wait(c, &id, wait, self.now_ms),
                #[cfg(feature = "traces")]
                stages::Effect::Passed(c, id, stage, took, refused) => self.trace.stage(c, &id, stage, took, refused, self.now_ms),
            }
        }
        r
    }

    /// Does what a pins call asked for, in order (nothing is pinned
    /// without the consent feature: no effects).
    fn apply_pins(&mut self, fx: Vec<pins::Effect>) {
        if cfg!(not(feature = "consent")) {
            return;
        }
        for e in fx {
            match e {
                pins::Effect::Save(bytes) => self.out.push_back(Output::SavePins(bytes)),
                pins::Effect::Log(level, line) => self.log(level, line),
                pins::Effect::Changed { server, kind } => self.policy.pin_changed(&server, kind.result_key()),
                pins::Effect::Found { server, finding } => self.policy.pin_finding(&server, finding),
                pins::Effect::Relist { server, kind, items, cached } => {
                    if let Some(u) = self.ups.iter().position(|x| x.spec.name == server) {
                        let items = items.unwrap_or_else(|| self.catalog.items(u, kind).to_vec());
                        self.set_items(u, kind, items, cached);
                    }
                }
            }
        }
    }

    /// Writes the lines a policy call asked for, in order.
    fn apply_policy(&mut self, lines: impl IntoIterator<Item = policy::Line>) {
        for (level, msg) in lines {
            self.log(level, msg);
        }
    }

    /// Writes an answer (result or error, `bytes`) to one of `u`'s
    /// requests, after the policy's audit and elicitation-answer check of
    /// relayed requests (`policy`).
    fn emit_upstream(&mut self, u: UpstreamId, bytes: Vec<u8>) {
        let (bytes, lines) = self.policy.answer_upstream(u, bytes, self.now_ms);
        self.apply_policy(lines);
        upward::answer(&mut self.out, u, bytes);
    }

    /// Does what the client handshake answered (`client`), in order.
    fn apply_clients(&mut self, fx: Vec<client::Effect>) {
        use client::Effect;
        for e in fx {
            match e {
                Effect::Answer { c, id, result } => self.downward().result(c, &id, &result),
                Effect::Refuse { c, id, refusal: request::Refusal(code, msg, data) } => self.downward().error(c, id.as_deref(), code, &msg, data),
                Effect::Send(c, bytes, about) => self.downward().emit(c, bytes, about),
                Effect::Drop(c) => {
                    self.on_client_disconnected(c);
                    self.out.push_back(Output::CloseClient(c));
                }
                Effect::Out(o) => self.out.push_back(o),
            }
        }
    }

    /// Does what the starts subsystem answered (`starts`), in order.
    fn apply_starts(&mut self, fx: Vec<starts::Effect>) {
        use starts::Effect;
        for e in fx {
            match e {
                Effect::Log(level, line) => self.log(level, line),
                Effect::Start(u) => self.out.push_back(Output::Power(u, Power::Start)),
                #[cfg(feature = "traces")]
                Effect::Parked { c, id } => self.trace.wait(c, &id, trace::Wait::Start, self.now_ms),
                Effect::Sleep(u, line) => {
                    if self.ups[u].stop_to_sleep() {
                        self.log(Level::Info, line);
                        self.out.push_back(Output::Power(u, Power::Stop));
                    }
                }
                Effect::Serve { c, raw, ctx } if self.clients.contains_key(&c) => match ctx {
                    None => self.on_client_message(c, &raw),
                    Some(ctx) => self.route_normalized(c, &raw, ctx),
                },
                Effect::Serve { .. } => {}
                Effect::Fail { c, id, msg, data } => self.downward().error(c, Some(&id), ErrorCode::InternalError, &msg, Some(data)),
                #[cfg(feature = "secrets")]
                Effect::AskUrl { c, id, raw, ctx, ask } => {
                    let method = mcpx_core::envelope::Envelope::parse(&raw).ok().and_then(|e| e.method_str().map(str::to_string)).unwrap_or_default();
                    self.ask_to_authorize(c, &id, &method, ctx, &ask);
                }
                Effect::NewSlot(up) => {
                    self.ups.push(*up);
                    self.catalog.add_slot();
                }
                Effect::Remove(u, why) => {
                    let gone = self.ups.gone(u, &why);
                    self.apply_upstream(vec![gone]);
                    let up = &mut self.ups[u];
                    up.state = upstream::State::Removed;
                    up.settled = true;
                }
                Effect::Listed(u, k, items) => self.set_items(u, k, items, true),
                Effect::Settled => self.release_held_inits(),
            }
        }
    }

    /// Does what [`approvals::Approvals`] asked, in order.
    fn apply_approvals(&mut self, fx: Vec<approvals::Effect>) {
        use approvals::Effect;
        use shape::RevExt as _;
        // Without the feature nothing is held (`stages::approve`).
        if cfg!(not(feature = "consent")) {
            return;
        }
        for e in fx {
            match e {
                Effect::Ask { client, id, params } => self.downward().request(client, &id, "elicitation/create", &params),
                Effect::InputRequired { client, id, ctx, params } => match self.relays.seal("tools/call", &ctx, &[relay::INNER_APPROVAL], self.now_ms) {
                    Ok(state) => {
                        let mut result = json!({ "resultType": "input_required", "inputRequests": { approvals::INPUT_KEY: { "method": "elicitation/create", "params": params } }, "requestState": state });
                        modern::stamp(&self.opts, &mut result, None);
                        self.downward().result(client, &id, &serde_json::to_vec(&result).unwrap_or_default());
                    }
                    Err(why) => self.downward().error(client, Some(&id), ErrorCode::InternalError, &why, None),
                },
                Effect::Task { client, id, n, ttl_ms, ask } => match self.tasks.waiting(task_caller(client, &id, None, &self.clients), ttl_ms, ask.is_some(), self.now_ms) {
                    Ok((task, fx)) => {
                        self.approvals.bind_task(n, task.clone());
                        self.apply_task_effects(fx);
                        self.clients.answer_into_task(client, &id, task.clone());
                        if let Some((ask_id, mut params)) = ask {
                            params["_meta"] = json!({ mcpx_core::meta::RELATED_TASK_KEY: { "taskId": task } });
                            self.downward().request(client, &ask_id, "elicitation/create", &serde_json::to_vec(&params).unwrap_or_default());
                        }
                    }
                    Err(request::Refusal(code, msg, data)) => {
                        self.approvals.no_task(n);
                        self.downward().error(client, Some(&id), code, &msg, data);
                    }
                },
                Effect::Unask { client, id, reason } => {
                    let params = json!({ "requestId": serde_json::from_slice::<Value>(&id).unwrap_or(Value::Null), "reason": reason });
                    self.downward().notify(client, Method::Cancelled, &params);
                }
                Effect::Serve { client, raw, ctx } if self.clients.contains_key(&client) => match ctx {
                    None => self.on_client_message(client, &raw),
                    Some(ctx) => self.route_normalized(client, &raw, ctx),
                },
                Effect::Serve { .. } => {}
                Effect::Decline { client, id, text, note } => {
                    self.policy.approval(client, &id, note);
                    self.policy.refused_at(client, &id, crate::policy::audit::Stage::Approve);
                    let mut result = json!({ "content": [{ "type": "text", "text": text }], "isError": true });
                    if self.clients.is_modern(client) {
                        modern::stamp(&self.opts, &mut result, None);
                    }
                    self.downward().result_as(client, &id, &serde_json::to_vec(&result).unwrap_or_default(), Outcome::ToolError);
                }
                #[cfg(feature = "consent")]
                Effect::Notify(n) => self.out.push_back(Output::Notify(n)),
                Effect::Progress { client, id, token, progress, message } => {
                    let Some(f) = self.clients.get(&client).map(|cl| cl.rev().features()) else { continue };
                    let token: Value = serde_json::from_slice(&token).unwrap_or(Value::Null);
                    let mut v = json!({ "progressToken": token, "progress": progress, "message": message });
                    shape::notification_params(Method::Progress, &mut v, &f);
                    let body = serde_json::to_vec(&v).unwrap_or_default();
                    // On the call's own stream (HTTP), with its answer to come.
                    let about = About::Notification { unsolicited: false, related: Some(IdKey::new(&id)) };
                    self.downward().emit(client, wire::notification(Method::Progress, Some(&body)), about);
                }
                Effect::Remember { principal, server, tool, digest, ttl_ms, note } if self.opts.cluster.shared => {
                    let key = shared::approval_key(&principal, &server, &tool, &digest);
                    self.out.push_back(Output::Shared(shared::Ask { ticket: 0, op: shared::Op::Put { key, value: note.into_bytes(), ttl_ms } }));
                }
                Effect::Remember { .. } => {}
                Effect::Log(level, line) => self.log(level, line),
            }
        }
        // Tell the other replicas (through the store) which calls wait
        // here, when that changed (`approvals::Approvals::announcement`).
        if let (Some(value), Some(replica)) = (self.approvals.announcement(), &self.opts.cluster.replica) {
            let op = shared::Op::Put { key: shared::waiting_key(replica), value, ttl_ms: self.opts.policy.approvals.timeout_ms + shared::ANNOUNCE_SLACK_MS };
            self.out.push_back(Output::Shared(shared::Ask { ticket: shared::ANNOUNCE_TICKET, op }));
        }
    }
}

/// What the tasks subsystem knows of upstream `u` (`tasks::Up`).
fn task_up(u: UpstreamId, x: &upstream::Upstream) -> tasks::Up<'_> {
    let modern = x.is_modern();
    let (legacy_tasks, ext_tasks) = tasks::support(x.rev, modern, x.caps.as_ref());
    tasks::Up { id: u, name: &x.spec.name, modern, ready: x.is_ready(), legacy_tasks, ext_tasks, timeout_ms: x.spec.timeout_ms, rev: x.rev.unwrap_or(shape::Rev::LATEST_LEGACY), remote: x.spec.remote }
}

/// [`task_up`] of every upstream, by id.
fn task_ups(ups: &[upstream::Upstream]) -> Vec<tasks::Up<'_>> {
    ups.iter().enumerate().map(|(u, x)| task_up(u, x)).collect()
}

/// The owner of what client `c` asks for as a task (`tasks::Owner`): of a
/// modern request's principal, else of the connection's.
fn task_owner<'a>(c: ClientId, ctx: Option<&'a request::ReqCtx>, clients: &'a client::Clients) -> tasks::Owner<'a> {
    let principal = match ctx {
        Some(x) => &x.principal[..],
        None => clients.get(&c).map_or(&[][..], |cl| &cl.principal[..]),
    };
    tasks::Owner::of(c, principal, ctx.is_some())
}

/// Client `c`'s request `id` (`ctx`: a modern one's context), as the tasks
/// subsystem sees who asks (`tasks::Caller`).
fn task_caller<'a>(c: ClientId, id: &'a [u8], ctx: Option<&'a request::ReqCtx>, clients: &'a client::Clients) -> tasks::Caller<'a> {
    let rev = clients.get(&c).map_or(shape::Rev::LATEST_LEGACY, |cl| cl.rev());
    tasks::Caller { client: c, owner: task_owner(c, ctx, clients), id, rev, ctx }
}

/// The hub's clock and status: the tick and the deadline over every
/// subsystem, their status rows, and the hub's own upstream requests.
impl Hub {
    fn on_tick(&mut self) {
        for (u, id) in self.pending.expired(self.now_ms) {
            let Some(f) = self.pending.take(u, id) else { continue };
            self.on_timeout(u, id, f);
        }
        let fx = self.relays.tick(&self.ups, self.now_ms);
        self.apply_relay(fx);
        let fx = self.tasks.poll(&task_ups(&self.ups), self.now_ms);
        self.apply_task_effects(fx);
        let fx = self.tasks.expire(&task_ups(&self.ups), self.now_ms);
        self.apply_task_effects(fx);
        // Calls waiting for approval whose task expired wait no longer.
        let tasks = &self.tasks;
        let fx = self.approvals.withdraw_ended_tasks(|t| tasks.live(t));
        self.apply_approvals(fx);
        self.release_held_inits();
        let pending = &self.pending;
        let pings = self.ups.pings(self.now_ms, self.opts.ping_interval_ms, |u| pending.pinging(u));
        self.apply_upstream(pings);
        let fx = self.starts.tick(self.now_ms, &self.ups, &self.clients, &|u| self.pending.busy(u));
        self.apply_starts(fx);
        let clients = &self.clients;
        let effects = self.shared.tick(self.now_ms, &self.opts.cluster, |c| clients.contains_key(&c));
        self.apply_shared(effects);
        let fx = self.approvals.tick(self.now_ms);
        self.apply_approvals(fx);
    }

    fn on_timeout(&mut self, u: UpstreamId, id: u64, f: Fwd) {
        self.tasks.ask_done(u, id);
        let name = self.ups[u].spec.name.clone();
        let sent_ms = f.sent_ms();
        let waited = self.now_ms.saturating_sub(sent_ms);
        match f.origin {
            Origin::Initialize => {
                let fx = self.ups.on_initialize_timeout(u, &self.opts);
                self.apply_upstream(fx);
            }
            Origin::List(k) => {
                let fx = self.ups.on_list_timeout(u, k, id, waited, self.now_ms);
                self.apply_upstream(fx);
            }
            Origin::Fire => self.ups.cancel(&mut self.out, u, id, "timed out"),
            // No task id to cancel, and no notifications/cancelled for it.
            Origin::TaskCancelled => {}
            Origin::Held(h) => {
                let fx = self.relays.held_expired(u, id, h);
                self.apply_relay(fx)
            }
            Origin::Task(t) => {
                self.ups.cancel(&mut self.out, u, id, "timed out");
                let fx = self.tasks.lost(&t, format!("server '{name}' did not finish within {waited} ms (mcpx's max_timeout_ms); mcpx cancelled the request"), self.now_ms);
                self.apply_task_effects(fx);
            }
            Origin::Discover => {
                let fx = self.ups.on_probe_timeout(u, id, f, self.now_ms, &self.opts);
                self.apply_upstream(fx);
            }
            Origin::Listen => {
                let fx = self.ups.on_listen_timeout(u, id);
                self.apply_upstream(fx);
            }
            Origin::Ping => {
                let fx = self.ups.on_ping_timeout(u, waited);
                self.apply_upstream(fx);
            }
            Origin::Client { client, id: cid, method, .. } => {
                // Requirement: lifecycle-timeouts-cancel-on-expiry
                self.ups.cancel(&mut self.out, u, id, "timed out");
                let mut msg = format!("server '{name}' did not answer {method} within {waited} ms; mcpx cancelled the request");
                if let Some(what) = self.ups.clipped_since(u, sent_ms) {
                    msg.push_str(&format!(" ({what} meanwhile, dropped: it may have been the answer)"));
                }
                self.downward().error(client, Some(&cid), ErrorCode::InternalError, &msg, Some(json!({ "server": name, "timeoutMs": waited })));
            }
        }
    }
}
