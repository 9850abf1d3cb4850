//! Upstream connections: the client side of the handshake, listing, and what
//! an upstream says on its own (notifications, exits).
//!
//! Life of an upstream: `Down` → (`Input::UpstreamStarted`) `Initializing` → the hub
//! sends `initialize` offering the newest revision allowed for it → on a good
//! answer `notifications/initialized` and `Ready`, then the lists its
//! capabilities announce are read, following `nextCursor`. A version the hub
//! does not speak in the answer, an error answer or no answer within
//! `init_timeout_ms` → `Failed` and `Output::RestartUpstream`
//! (`lifecycle-client-disconnects-on-unsupported-version`).
//!
//! Era detection converges (a slow-starting server is not restarted in a
//! loop): the `server/discover` probe falls back to `initialize` after
//! `probe_timeout_ms`, but stays open until `init_timeout_ms` after it was
//! sent ([`LateProbe`]). A late modern answer wins over a refused
//! `initialize` (a server already serving 2026-07-28 refuses it); a refusal
//! that comes before the late answer waits for it. When both fail, the next
//! start waits the whole `init_timeout_ms` for the probe before `initialize`.
//! On exit requests in flight to it are answered with an error naming it;
//! what it offered stays in the catalog until it lists again (or comes up
//! without the capability), so a call meanwhile is told the server is
//! restarting and when to retry, or that it was given up
//! ([`Upstreams::unavailable`]).
//!
//! [`Upstreams`] owns the links and their life: the handshake
//! (`handshake`), reading lists (`listing`), exits and idle stops (`exit`),
//! a reload's changes (`reload`) and what is told about a server
//! (`status`). Each step changes the link and answers with [`Effect`]s
//! (send a request upward, log, restart it, give the catalog its items,
//! answer what was in flight to a process that went, ...) that
//! `Hub::apply_upstream` applies in order. Where upstream messages meet
//! the other subsystems is the hub's routing shell, not here: the dispatch
//! of answers and notifications to clients, relays and tasks, and the hub's
//! own requests as written upward (`router`); timeouts of requests in
//! flight and the tick over every subsystem (`Hub::on_tick`).

use std::collections::VecDeque;

use serde_json::{json, Value};

use mcpx_core::method::Method;
use mcpx_core::names;
use mcpx_core::revision::{Era, Revisions};


use super::catalog::{Kind, Naming};
use super::pending::{Fwd, Origin};
use super::shape::Rev;

mod exit;
mod handshake;
mod listen;
mod listing;
mod reload;
mod status;
use super::wire::{self, Msg};
use super::{ConfigError, HubOptions, Level, Output, UpstreamId, UpstreamSpec};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// Not running; started again at `retry_at_ms` (`None`: not known, as
    /// before the first start).
    Down { retry_at_ms: Option<u64> },
    Initializing,
    Ready,
    Failed,
    /// The restart loop gave up after this many failed attempts in a row;
    /// down until a restart is asked for or the config changes.
    GaveUp { attempts: u32 },
    /// Taken out of the configuration by a reload: a free slot, never
    /// started again (`Hub::add_upstream` may reuse it).
    Removed,
    /// Stopped until a request needs it, its catalog kept (see `lazy`);
    /// `stopping`: its process is being stopped, its exit expected.
    Asleep { stopping: bool },
    /// Its entry changed (a config reload): the old process is being
    /// stopped, reports about it are ignored, its catalog is kept and
    /// requests for it wait (`lazy`) until the new entry runs
    /// ([`Hub::on_upstream_replaced`]).
    Replacing,
}

/// The probe after its fallback to `initialize`: still awaited (with
/// `initialize`'s refusal, once it came), or answered late as modern.
enum LateProbe {
    Waiting { id: u64, refused: Option<(String, &'static str)> },
    Modern(Value),
}

/// A list being read page by page.
#[derive(Default)]
struct Listing {
    acc: Vec<Value>,
    pages: u32,
    /// A `list_changed` arrived meanwhile: read again when done.
    again: bool,
    /// Reading the prompts of a server with skills, past its own prompts:
    /// its `skills/list` entries so far (shown as prompts, `skills`).
    #[cfg(feature = "skills")]
    skills: Option<Vec<Value>>,
}

pub struct Upstream {
    pub(in crate::hub) spec: UpstreamSpec,
    /// Revisions allowed with this server, oldest first.
    pub(in crate::hub) allowed: Vec<Rev>,
    pub(in crate::hub) state: State,
    pub(in crate::hub) rev: Option<Rev>,
    /// Capabilities from its last successful `initialize` (kept while down).
    pub(in crate::hub) caps: Option<Value>,
    pub(in crate::hub) info: Value,
    pub(in crate::hub) instructions: Option<String>,
    next_id: u64,
    /// Processes started, wakes from idle included.
    pub(in crate::hub) starts: u32,
    /// New attempts the restart loop made after an attempt ended (it
    /// failed, or a restart was asked for): each one the loop logs as
    /// "restarting in … (attempt N of M)". Never a wake from idle.
    pub(in crate::hub) restarts: u32,
    pub(in crate::hub) last_error: Option<String>,
    pub(in crate::hub) garbage: u64,
    /// When it last wrote a message (for health-check pings).
    pub(in crate::hub) last_heard_ms: u64,
    /// Has had its chance at startup (ready with lists read, or failed).
    pub(in crate::hub) settled: bool,
    listing: [Option<Listing>; 4],
    /// Its era as last detected, kept for the life of the process
    /// (`versioning-era-cache`); `None`: probe with `server/discover`.
    pub(in crate::hub) era_cache: Option<Era>,
    /// The probe was already repeated after an UnsupportedProtocolVersionError
    /// naming 2026-07-28 (once per start, so a confused server cannot loop us).
    reprobed: bool,
    /// The probe after its fallback to `initialize` (this start only).
    late: Option<LateProbe>,
    /// The last start failed with the probe late and `initialize` refused:
    /// the next one gives the probe the whole `init_timeout_ms`.
    patient: bool,
    /// Caching hints of its last list results, per list kind, and of its
    /// last `resources/read`: (`ttlMs`, public).
    pub(in crate::hub) hints: [Option<(u64, bool)>; 4],
    pub(in crate::hub) read_hints: Option<(u64, bool)>,
    /// The hub's `subscriptions/listen` request to it (modern), by id.
    pub(in crate::hub) listen: Option<u64>,
    /// Index of the log level last set on it with `logging/setLevel` (legacy).
    pub(in crate::hub) level_sent: Option<usize>,
    /// When each list was last read (for its `ttlMs`).
    pub(in crate::hub) listed_ms: [u64; 4],
    /// When a request was last forwarded to it, and when it last started
    /// (for its idle stop).
    pub(in crate::hub) last_used_ms: u64,
    pub(in crate::hub) last_start_ms: u64,
    /// A digest of the lists last given as `Output::ListsRead` since it
    /// started (`None`: not yet this start).
    reported: Option<u64>,
    /// A start is awaited with its catalog known (see `lazy`): requests for
    /// it are parked until it is up or fails.
    pub(in crate::hub) start_awaited: bool,
    /// Its last message over the frame cap whose request could not be told
    /// (when, and what it was), named in the timeout errors of requests
    /// sent before it.
    clipped: Option<(u64, String)>,
}

impl Upstream {
    pub(in crate::hub) fn is_ready(&self) -> bool {
        self.state == State::Ready
    }
    /// Spoken to in the modern era (after a successful `server/discover`).
    pub(in crate::hub) fn is_modern(&self) -> bool {
        self.rev.is_some_and(|r| r.era() == Era::Modern)
    }
    /// Whether a modern request to it carries 2026-07-28's MCP headers
    /// (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`): HTTP headers, for a
    /// remote server; a process on stdio reads the body alone.
    // Requirement: streamable-http-standard-headers-required (a transport's rule)
    pub(in crate::hub) fn takes_headers(&self) -> bool {
        self.spec.remote
    }
    /// Its process is running (messages may be written to it).
    pub(in crate::hub) fn is_up(&self) -> bool {
        matches!(self.state, State::Initializing | State::Ready)
    }
    pub(in crate::hub) fn is_removed(&self) -> bool {
        self.state == State::Removed
    }
    pub(in crate::hub) fn is_asleep(&self) -> bool {
        matches!(self.state, State::Asleep { .. })
    }
    /// Puts it to sleep: true when its process ran and is to be stopped
    /// (its exit is then expected, not a failed start).
    pub(in crate::hub) fn stop_to_sleep(&mut self) -> bool {
        if self.is_asleep() {
            return false;
        }
        self.state = State::Asleep { stopping: true };
        true
    }
    /// The id of the next request to it (fresh per upstream; also the
    /// progress token it is given).
    pub(in crate::hub) fn next_request_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
    pub(in crate::hub) fn has_cap(&self, cap: &str) -> bool {
        self.is_ready() && self.caps.as_ref().and_then(|c| c.get(cap)).is_some_and(|v| !v.is_null())
    }
    /// Does the hub read its list `k`: one its capabilities announce, and
    /// the prompts of a server with skills (shown as prompts to clients
    /// without the extension, `skills`).
    pub(in crate::hub) fn lists(&self, k: Kind) -> bool {
        self.has_cap(k.capability()) || (k == Kind::Prompts && self.is_ready() && super::skills::declared(self.caps.as_ref()).is_some())
    }
    pub(in crate::hub) fn state_name(&self) -> &'static str {
        match self.state {
            State::Down { .. } => "down",
            State::Initializing => "starting",
            State::Ready => "ready",
            State::Failed | State::GaveUp { .. } => "failed",
            State::Removed => "removed",
            State::Asleep { .. } => "asleep",
            State::Replacing => "restarting",
        }
    }
    /// Its process went (`reason`): down, no list being read; what was in
    /// flight to it goes too.
    fn gone(&mut self, u: UpstreamId, reason: &str) -> Effect {
        self.state = State::Down { retry_at_ms: None };
        self.listing = Default::default();
        Effect::Gone { u, name: self.spec.name.clone(), reason: Some(reason.to_string()) }
    }
    fn tool_allowed(&self, name: &str) -> bool {
        let allow = self.spec.tools_allow.is_empty() || self.spec.tools_allow.iter().any(|p| names::glob_match(p, name));
        allow && !self.spec.tools_deny.iter().any(|p| names::glob_match(p, name))
    }
}

/// The configured upstreams, by id (configuration order; slots a reload
/// removed stay, free for the next added server). Ids are stable for the
/// life of the hub.
pub struct Upstreams(Vec<Upstream>);

impl Upstreams {
    /// Checks the configuration and gives every server a slot, down.
    pub(in crate::hub) fn new(specs: Vec<UpstreamSpec>, opts: &HubOptions) -> Result<Upstreams, ConfigError> {
        if opts.separator.is_empty() || !opts.separator.bytes().all(names::is_separator_byte) {
            return Err(ConfigError::BadSeparator(opts.separator.clone()));
        }
        // Requirement: roots-uri-must-be-file-scheme
        if let Some(roots) = &opts.roots {
            let list = roots.get("roots").unwrap_or(roots);
            let items = list.as_array().ok_or_else(|| ConfigError::BadRoot(list.to_string()))?;
            if let Some(bad) = items.iter().find(|r| !r.get("uri").and_then(Value::as_str).is_some_and(|u| u.starts_with("file://"))) {
                return Err(ConfigError::BadRoot(bad.to_string()));
            }
        }
        let mut out = Upstreams(Vec::new());
        for spec in specs {
            let up = check_spec(spec, &out.0, None, opts)?;
            out.0.push(up);
        }
        Ok(out)
    }

    /// Is `u` a slot still in the configuration?
    pub(in crate::hub) fn is_live(&self, u: UpstreamId) -> bool {
        self.0.get(u).is_some_and(|up| !up.is_removed())
    }

    /// A fresh id for a request to `u`.
    pub(in crate::hub) fn next_request_id(&mut self, u: UpstreamId) -> u64 {
        self.0[u].next_request_id()
    }

    /// Tells `u`, when it is up, that the hub no longer waits for its
    /// request `id` (`notifications/cancelled`, written to `out`).
    pub(in crate::hub) fn cancel(&self, out: &mut VecDeque<Output>, u: UpstreamId, id: u64, reason: &str) {
        if self.0[u].is_up() {
            let p = json!({ "requestId": id, "reason": reason });
            super::upward::notification(out, u, Method::Cancelled, Some(&serde_json::to_vec(&p).unwrap_or_default()));
        }
    }

    /// A new slot at the end (the catalog needs one too).
    pub(in crate::hub) fn push(&mut self, up: Upstream) -> UpstreamId {
        self.0.push(up);
        self.0.len() - 1
    }

    /// Checks `spec` against the live servers (but `replaced`'s own slot)
    /// and builds its upstream, down.
    pub(in crate::hub) fn check(&self, spec: UpstreamSpec, replaced: Option<UpstreamId>, opts: &HubOptions) -> Result<Upstream, ConfigError> {
        check_spec(spec, &self.0, replaced, opts)
    }

    /// Puts `up` in the first slot a removal freed, or a new one (`true`:
    /// a new slot, the catalog needs one too).
    pub(in crate::hub) fn add(&mut self, up: Upstream) -> (UpstreamId, bool) {
        match self.0.iter().position(Upstream::is_removed) {
            Some(free) => {
                self.0[free] = up;
                (free, false)
            }
            None => (self.push(up), true),
        }
    }

    /// Puts `up` in slot `u` in place of what was there.
    pub(in crate::hub) fn replace(&mut self, u: UpstreamId, up: Upstream) -> Upstream {
        std::mem::replace(&mut self.0[u], up)
    }

    /// How each server is named in the catalog (its name and prefix).
    pub(in crate::hub) fn naming(&self) -> Vec<Naming<'_>> {
        self.0.iter().map(|u| Naming { name: &u.spec.name, prefix: &u.spec.prefix }).collect()
    }

    /// A message from `u`, heard at `now`: its view; `Err` when it is to
    /// be dropped (`u` is not up; or it is no JSON-RPC message: counted,
    /// with the warning to log).
    pub(in crate::hub) fn heard<'b>(&mut self, u: UpstreamId, bytes: &'b [u8], now: u64) -> Result<Msg<'b>, Option<String>> {
        let Some(up) = self.0.get_mut(u).filter(|up| up.is_up()) else { return Err(None) };
        up.last_heard_ms = now;
        wire::parse(bytes).map_err(|e| {
            up.garbage += 1;
            Some(format!("server '{}' sent an invalid message: {}", up.spec.name, e.message))
        })
    }

    /// A message from `u` over its transport's cap was skipped: counted;
    /// the server's name, `None` when `u` is gone.
    pub(in crate::hub) fn oversized(&mut self, u: UpstreamId) -> Option<String> {
        let up = self.0.get_mut(u).filter(|up| !up.is_removed())?;
        up.garbage += 1;
        Some(up.spec.name.clone())
    }

    /// `u` wrote `what` (a message over its transport's cap, whose id could
    /// not be read) at `now`: a timeout after it names it.
    pub(in crate::hub) fn note_clipped(&mut self, u: UpstreamId, now: u64, what: String) {
        self.0[u].clipped = Some((now, what));
    }

    /// What `u` wrote over its cap since `since`, if anything: it may have
    /// been the answer a request timed out waiting for.
    pub(in crate::hub) fn clipped_since(&self, u: UpstreamId, since: u64) -> Option<&str> {
        self.0[u].clipped.as_ref().filter(|(at, _)| *at >= since).map(|(_, what)| what.as_str())
    }

    /// The upstream serving resource `uri` and its URI there (`catalog`'s
    /// routing), whoever asks.
    pub(in crate::hub) fn route_uri(&self, catalog: &super::catalog::Catalog, uri: &str) -> Option<(UpstreamId, String)> {
        let resource_ups: Vec<UpstreamId> = (0..self.len()).filter(|&u| self.0[u].has_cap("resources")).collect();
        catalog.route_uri(uri, &self.naming(), &resource_ups)
    }

    /// The replaced server `u`'s old process is gone: true when its new
    /// entry is to be started now; false when it sleeps until used (lazy,
    /// its lists known and `current`, for what its new entry runs, and no
    /// request `waiting` for it).
    pub(in crate::hub) fn replaced(&mut self, u: UpstreamId, current: bool, waiting: bool, now: u64) -> bool {
        let Some(up) = self.0.get_mut(u).filter(|up| up.state == State::Replacing) else { return false };
        if up.spec.lazy && current && up.caps.is_some() && !waiting {
            up.state = State::Asleep { stopping: false };
            up.start_awaited = false;
            return false;
        }
        up.state = State::Down { retry_at_ms: Some(now) };
        true
    }

    /// `u`'s process went (`reason`), see [`Upstream::gone`].
    pub(in crate::hub) fn gone(&mut self, u: UpstreamId, reason: &str) -> Effect {
        self.0[u].gone(u, reason)
    }

    /// `u` wrote something that is not a JSON-RPC message (`what`): counted
    /// and logged.
    pub(in crate::hub) fn on_garbage(&mut self, u: UpstreamId, what: &str) -> Vec<Effect> {
        let Some(up) = self.0.get_mut(u).filter(|up| !up.is_removed()) else { return Vec::new() };
        up.garbage += 1;
        vec![Effect::Log(Level::Warn, format!("server '{}' wrote something that is not a JSON-RPC message: {what}", up.spec.name))]
    }

    /// The legacy servers a health-check ping is for (ready, not already
    /// `pinging`): pings are every `every` ms of silence, none when 0.
    fn pingable(&self, every: u64, pinging: impl Fn(UpstreamId) -> bool) -> impl Iterator<Item = (UpstreamId, &Upstream)> {
        self.0.iter().enumerate().filter(move |(u, up)| every != 0 && up.is_ready() && !up.is_modern() && !pinging(*u))
    }

    /// When the next health-check ping is due, if pings are on.
    pub(in crate::hub) fn next_ping(&self, every: u64, pinging: impl Fn(UpstreamId) -> bool) -> Option<u64> {
        self.pingable(every, pinging).map(|(_, up)| up.last_heard_ms + every).min()
    }

    // Requirement: ping-periodic-pings
    // Requirement: ping-frequency-configurable
    /// The pings due at `now`.
    pub(in crate::hub) fn pings(&self, now: u64, every: u64, pinging: impl Fn(UpstreamId) -> bool) -> Vec<Effect> {
        self.pingable(every, pinging)
            .filter(|(_, up)| now >= up.last_heard_ms + every)
            .map(|(u, up)| Effect::Send { u, method: Method::Ping, params: None, origin: Origin::Ping, timeout: up.spec.timeout_ms })
            .collect()
    }

    /// The configured servers that are not ready (starting, restarting,
    /// failed; not those asleep, nor `instance` slots), as clients are told
    /// in `initialize` ([`super::NOT_READY_META`]): name, state, and whether
    /// their tools are known (listed as they last ran) or not yet.
    pub(in crate::hub) fn not_ready(&self, instance: impl Fn(UpstreamId) -> bool) -> Vec<Value> {
        let waiting = |(i, u): &(usize, &Upstream)| !matches!(u.state, State::Ready | State::Asleep { .. } | State::Removed) && !instance(*i);
        self.0.iter().enumerate().filter(waiting).map(|(_, u)| json!({ "server": u.spec.name, "state": u.state_name(), "toolsKnown": u.caps.is_some() })).collect()
    }

    /// How many of those are marked `"required"` (`/ready`).
    pub(in crate::hub) fn required_not_ready(&self, instance: impl Fn(UpstreamId) -> bool) -> usize {
        self.0.iter().enumerate().filter(|(i, u)| u.spec.required && !matches!(u.state, State::Ready | State::Asleep { .. } | State::Removed) && !instance(*i)).count()
    }
}

/// What the upstreams ask the hub to do, in order.
pub(super) enum Effect {
    /// Send request `method` with `params` (raw JSON; `None`: none) to
    /// upstream `u`, for `origin`, answered within `timeout` ms.
    Send { u: UpstreamId, method: Method<'static>, params: Option<Vec<u8>>, origin: Origin, timeout: u64 },
    /// Give the catalog `u`'s items of kind `k` (clients are told of a change).
    Listed(UpstreamId, Kind, Vec<Value>),
    /// The `skills/list` entries read with the prompts of `u` (`skills`).
    #[cfg(feature = "skills")]
    SkillsListed(UpstreamId, Vec<Value>),
    /// `u` may have settled: no list is being read any more.
    CheckSettled(UpstreamId),
    /// Tell the runtime `u`'s lists were read (`Output::ListsRead`).
    ListsRead(UpstreamId),
    /// `u` is up with its lists read: requests parked for its start go on.
    Release(UpstreamId),
    /// Tell `u` the hub no longer waits for its request `id`.
    Cancel { u: UpstreamId, id: u64, reason: &'static str },
    /// Close the hub's request `id` to `u`, if still open, telling it why.
    Close { u: UpstreamId, id: u64, reason: &'static str },
    /// (Re)open the hub's listen stream to `u` if it takes one, with the
    /// current filter ([`Upstreams::open_listen`]; also the subscriptions'
    /// ask when theirs change).
    OpenListen(UpstreamId),
    /// Tell `u` `notifications/initialized`.
    Initialized(UpstreamId),
    Log(Level, String),
    /// Its process is of no use: the runtime restarts it
    /// (`Output::RestartUpstream`, with this short reason).
    Restart(UpstreamId, &'static str),
    /// A server settled (its start failed or it is gone for now): clients
    /// held in `initialize` may go on.
    Settled,
    /// `u` is ready: its lists are read, what it had restored.
    Ready(UpstreamId),
    /// `u`'s process (server `name`) went, exiting (`reason`) or stopped
    /// idle (`None`): what was in flight to it is answered with an error
    /// saying so (tasks lost on an exit), relayed requests from it dropped.
    Gone { u: UpstreamId, name: String, reason: Option<String> },
    /// A start a request asked for did not come up (`reason`): requests
    /// parked for it fail.
    WakeFailed(UpstreamId, String),
    /// A server got a new slot: the catalog needs one too.
    NewSlot,
    /// Server `u`'s instances go (`isolation`), saying why.
    RemoveInstances(UpstreamId, String),
    /// Keep the hub's request `id` to `u` (expired, `f`) open until `until`.
    KeepOpen { u: UpstreamId, id: u64, f: Fwd, until: u64 },
}

/// What the runtime may ask about the upstreams (`Hub::upstreams`).
impl Upstreams {
    /// Is upstream `u` asleep (lazy start, idle stop)? A runtime acts on an
    /// `Output::Power` only while this still holds: a reload may have given
    /// the slot to another server meanwhile.
    pub fn asleep(&self, u: UpstreamId) -> bool {
        self.0.get(u).is_some_and(Upstream::is_asleep)
    }

    /// The slot of server `name` still configured, its own (not one of
    /// its `instance`s).
    #[cfg(feature = "cli")]
    pub fn named(&self, name: &str, instance: impl Fn(UpstreamId) -> bool) -> Option<UpstreamId> {
        (0..self.0.len()).find(|&u| !self.0[u].is_removed() && self.0[u].spec.name == name && !instance(u))
    }

    /// The revision spoken with upstream `u` (`None` while it is not ready).
    /// (Test observer.)
    #[cfg(test)]
    pub fn revision(&self, u: UpstreamId) -> Option<&'static str> {
        self.0.get(u)?.rev.map(|r| r.as_str())
    }
}

/// Read and changed in place as the slice of slots it is (ids are its
/// indices); slots come and go only through its own methods.
impl std::ops::Deref for Upstreams {
    type Target = [Upstream];
    fn deref(&self) -> &[Upstream] {
        &self.0
    }
}

impl std::ops::DerefMut for Upstreams {
    fn deref_mut(&mut self) -> &mut [Upstream] {
        &mut self.0
    }
}

/// Checks one server's spec against the others (`existing`, removed slots
/// and the slot `replaced` ignored) and builds its upstream, down.
fn check_spec(spec: UpstreamSpec, existing: &[Upstream], replaced: Option<UpstreamId>, opts: &HubOptions) -> Result<Upstream, ConfigError> {
    if spec.name.is_empty() {
        return Err(ConfigError::EmptyName);
    }
    let live = || existing.iter().enumerate().filter(|(i, u)| !u.is_removed() && Some(*i) != replaced).map(|(_, u)| u);
    if live().any(|u| u.spec.name == spec.name) {
        return Err(ConfigError::DuplicateName(spec.name));
    }
    if !spec.prefix.is_empty() {
        let sep = names::legacy_separator(&opts.separator);
        let mine = names::expose(&spec.prefix, sep, "", 0);
        if let Some(o) = live().find(|u| !u.spec.prefix.is_empty() && names::expose(&u.spec.prefix, sep, "", 0) == mine) {
            return Err(ConfigError::PrefixCollision(o.spec.name.clone(), spec.name));
        }
    }
    let mut allowed = Vec::new();
    for r in &spec.revisions {
        match Rev::parse(r) {
            Some(r) => allowed.push(r),
            None => return Err(ConfigError::UnknownRevision { server: spec.name.clone(), revision: r.clone() }),
        }
    }
    if spec.revisions.is_empty() {
        allowed = Revisions::ALL.iter().collect();
    }
    if allowed.is_empty() {
        return Err(ConfigError::NoUsableRevision(spec.name.clone()));
    }
    allowed.sort();
    allowed.dedup();
    Ok(fresh(spec, allowed))
}

/// A new slot for an instance of `template` (`isolation`): its spec, its
/// revisions and its era as last detected.
pub(super) fn instance_of(template: &Upstream) -> Upstream {
    let mut up = fresh(template.spec.clone(), template.allowed.clone());
    up.era_cache = template.era_cache;
    up
}

/// An upstream of `spec`, down.
fn fresh(spec: UpstreamSpec, allowed: Vec<Rev>) -> Upstream {
    Upstream {
        spec,
        allowed,
        state: State::Down { retry_at_ms: None },
        rev: None,
        caps: None,
        info: Value::Null,
        instructions: None,
        next_id: 0,
        starts: 0,
        restarts: 0,
        last_error: None,
        garbage: 0,
        last_heard_ms: 0,
        settled: false,
        listing: Default::default(),
        era_cache: None,
        reprobed: false,
        late: None,
        patient: false,
        hints: [None; 4],
        read_hints: None,
        listen: None,
        level_sent: None,
        listed_ms: [0; 4],
        last_used_ms: 0,
        last_start_ms: 0,
        clipped: None,
        reported: None,
        start_awaited: false,
    }
}
