//! Upstream connections: the client side of the handshake, listing, and what
//! an upstream says on its own (notifications, exits).
//!
//! Life of an upstream: `Down` → (`upstream_started`) `Initializing` → the hub
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
//! `Hub::apply_upstream` applies in order. What stays on the hub here is
//! where upstream messages meet the other subsystems: the dispatch of
//! answers and notifications to clients, relays and tasks, timeouts of
//! requests in flight, and the hub's own requests as written upward.

use mcpx_core::error::ErrorCode;
use serde_json::{json, Value};

use mcpx_core::clipped::{self, Clipped};
use mcpx_core::meta;
use mcpx_core::method::Method;
use mcpx_core::names;
use mcpx_core::revision::{Era, Revisions};

use super::request::MODERN;

use super::catalog::{Kind, Naming};
use super::request::Refusal;
use super::pending::{Fwd, Origin};
use super::shape::{Rev, RevExt};
use super::upward;

mod exit;
mod handshake;
mod listen;
mod listing;
mod reload;
mod status;
use super::wire::{self, Kind as MsgKind, Msg};
use super::{About, ClientId, ConfigError, Hub, HubOptions, IdKey, Level, Oversize, UpstreamId, UpstreamSpec};

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
}

pub(super) struct Upstream {
    pub spec: UpstreamSpec,
    /// Revisions allowed with this server, oldest first.
    pub allowed: Vec<Rev>,
    pub state: State,
    pub rev: Option<Rev>,
    /// Capabilities from its last successful `initialize` (kept while down).
    pub caps: Option<Value>,
    pub info: Value,
    pub instructions: Option<String>,
    next_id: u64,
    pub starts: u32,
    pub last_error: Option<String>,
    pub garbage: u64,
    /// When it last wrote a message (for health-check pings).
    pub last_heard_ms: u64,
    /// Has had its chance at startup (ready with lists read, or failed).
    pub settled: bool,
    listing: [Option<Listing>; 4],
    /// Its era as last detected, kept for the life of the process
    /// (`versioning-era-cache`); `None`: probe with `server/discover`.
    pub era_cache: Option<Era>,
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
    pub hints: [Option<(u64, bool)>; 4],
    pub read_hints: Option<(u64, bool)>,
    /// The hub's `subscriptions/listen` request to it (modern), by id.
    pub listen: Option<u64>,
    /// Index of the log level last set on it with `logging/setLevel` (legacy).
    pub level_sent: Option<usize>,
    /// When each list was last read (for its `ttlMs`).
    pub listed_ms: [u64; 4],
    /// When a request was last forwarded to it, and when it last started
    /// (for its idle stop).
    pub last_used_ms: u64,
    pub last_start_ms: u64,
    /// A digest of the lists last given as `Output::ListsRead` since it
    /// started (`None`: not yet this start).
    reported: Option<u64>,
    /// A start is awaited with its catalog known (see `lazy`): requests for
    /// it are parked until it is up or fails.
    pub start_awaited: bool,
    /// Its last message over the frame cap whose request could not be told
    /// (when, and what it was), named in the timeout errors of requests
    /// sent before it.
    clipped: Option<(u64, String)>,
}

impl Upstream {
    pub fn is_ready(&self) -> bool {
        self.state == State::Ready
    }
    /// Spoken to in the modern era (after a successful `server/discover`).
    pub fn is_modern(&self) -> bool {
        self.rev.is_some_and(|r| r.era() == Era::Modern)
    }
    /// Its process is running (messages may be written to it).
    pub fn is_up(&self) -> bool {
        matches!(self.state, State::Initializing | State::Ready)
    }
    pub fn is_removed(&self) -> bool {
        self.state == State::Removed
    }
    pub fn is_asleep(&self) -> bool {
        matches!(self.state, State::Asleep { .. })
    }
    /// Puts it to sleep: true when its process ran and is to be stopped
    /// (its exit is then expected, not a failed start).
    pub fn stop_to_sleep(&mut self) -> bool {
        if self.is_asleep() {
            return false;
        }
        self.state = State::Asleep { stopping: true };
        true
    }
    /// The id of the next request to it (fresh per upstream; also the
    /// progress token it is given).
    pub fn next_request_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
    pub fn has_cap(&self, cap: &str) -> bool {
        self.is_ready() && self.caps.as_ref().and_then(|c| c.get(cap)).is_some_and(|v| !v.is_null())
    }
    pub fn state_name(&self) -> &'static str {
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
pub(super) struct Upstreams(Vec<Upstream>);

impl Upstreams {
    /// Checks the configuration and gives every server a slot, down.
    pub fn new(specs: Vec<UpstreamSpec>, opts: &HubOptions) -> Result<Upstreams, ConfigError> {
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
    pub fn is_live(&self, u: UpstreamId) -> bool {
        self.0.get(u).is_some_and(|up| !up.is_removed())
    }

    /// A fresh id for a request to `u`.
    pub fn next_request_id(&mut self, u: UpstreamId) -> u64 {
        self.0[u].next_request_id()
    }

    /// A new slot at the end (the catalog needs one too).
    pub fn push(&mut self, up: Upstream) -> UpstreamId {
        self.0.push(up);
        self.0.len() - 1
    }

    /// Checks `spec` against the live servers (but `replaced`'s own slot)
    /// and builds its upstream, down.
    pub fn check(&self, spec: UpstreamSpec, replaced: Option<UpstreamId>, opts: &HubOptions) -> Result<Upstream, ConfigError> {
        check_spec(spec, &self.0, replaced, opts)
    }

    /// Puts `up` in the first slot a removal freed, or a new one (`true`:
    /// a new slot, the catalog needs one too).
    pub fn add(&mut self, up: Upstream) -> (UpstreamId, bool) {
        match self.0.iter().position(Upstream::is_removed) {
            Some(free) => {
                self.0[free] = up;
                (free, false)
            }
            None => (self.push(up), true),
        }
    }

    /// Puts `up` in slot `u` in place of what was there.
    pub fn replace(&mut self, u: UpstreamId, up: Upstream) -> Upstream {
        std::mem::replace(&mut self.0[u], up)
    }

    /// How each server is named in the catalog (its name and prefix).
    pub fn naming(&self) -> Vec<Naming<'_>> {
        self.0.iter().map(|u| Naming { name: &u.spec.name, prefix: &u.spec.prefix }).collect()
    }

    /// The upstream serving resource `uri` and its URI there (`catalog`'s
    /// routing), whoever asks.
    pub fn route_uri(&self, catalog: &super::catalog::Catalog, uri: &str) -> Option<(UpstreamId, String)> {
        let resource_ups: Vec<UpstreamId> = (0..self.len()).filter(|&u| self.0[u].has_cap("resources")).collect();
        catalog.route_uri(uri, &self.naming(), &resource_ups)
    }

    /// The replaced server `u`'s old process is gone: true when its new
    /// entry is to be started now; false when it sleeps until used (lazy,
    /// its lists known and `current`, for what its new entry runs, and no
    /// request `waiting` for it).
    pub fn replaced(&mut self, u: UpstreamId, current: bool, waiting: bool, now: u64) -> bool {
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
    pub fn gone(&mut self, u: UpstreamId, reason: &str) -> Effect {
        self.0[u].gone(u, reason)
    }

    /// `u` wrote something that is not a JSON-RPC message (`what`): counted
    /// and logged.
    pub fn on_garbage(&mut self, u: UpstreamId, what: &str) -> Vec<Effect> {
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
    pub fn next_ping(&self, every: u64, pinging: impl Fn(UpstreamId) -> bool) -> Option<u64> {
        self.pingable(every, pinging).map(|(_, up)| up.last_heard_ms + every).min()
    }

    // Requirement: ping-periodic-pings
    // Requirement: ping-frequency-configurable
    /// The pings due at `now`.
    pub fn pings(&self, now: u64, every: u64, pinging: impl Fn(UpstreamId) -> bool) -> Vec<Effect> {
        self.pingable(every, pinging)
            .filter(|(_, up)| now >= up.last_heard_ms + every)
            .map(|(u, up)| Effect::Send { u, method: Method::Ping, params: None, origin: Origin::Ping, timeout: up.spec.timeout_ms })
            .collect()
    }

    /// The configured servers that are not ready (starting, restarting,
    /// failed; not those asleep, nor `instance` slots), as clients are told
    /// in `initialize` ([`super::NOT_READY_META`]): name, state, and whether
    /// their tools are known (listed as they last ran) or not yet.
    pub fn not_ready(&self, instance: impl Fn(UpstreamId) -> bool) -> Vec<Value> {
        let waiting = |(i, u): &(usize, &Upstream)| !matches!(u.state, State::Ready | State::Asleep { .. } | State::Removed) && !instance(*i);
        self.0.iter().enumerate().filter(waiting).map(|(_, u)| json!({ "server": u.spec.name, "state": u.state_name(), "toolsKnown": u.caps.is_some() })).collect()
    }
}

/// What the upstreams ask the hub to do, in order.
pub(super) enum Effect {
    /// Send request `method` with `params` (raw JSON; `None`: none) to
    /// upstream `u`, for `origin`, answered within `timeout` ms.
    Send { u: UpstreamId, method: Method<'static>, params: Option<Vec<u8>>, origin: Origin, timeout: u64 },
    /// Give the catalog `u`'s items of kind `k` (clients are told of a change).
    Listed(UpstreamId, Kind, Vec<Value>),
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
    /// (Re)open the hub's listen stream to `u`.
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

impl Hub {
    /// Sends a request of the hub's own to `u`; returns its id, or `None` at the cap.
    pub(super) fn send_upstream(&mut self, u: UpstreamId, method: Method<'static>, params: Option<&[u8]>, origin: Origin, timeout: u64) -> Option<u64> {
        let name = method.name().unwrap_or_default();
        if self.pending.full(self.opts.max_pending) {
            let msg = format!("server '{}': {name} not sent: {} requests in flight (mcpx's limit)", self.ups[u].spec.name, self.opts.max_pending);
            self.log(Level::Warn, msg);
            return None;
        }
        let id = self.ups.next_request_id(u);
        self.pending.open_own(u, id, origin, self.now_ms, timeout, self.opts.max_timeout_ms);
        if self.ups[u].is_modern() || method == Method::ServerDiscover {
            // Requirement: meta-request-params-meta-required (every modern request carries _meta)
            // (with the client capabilities `params` declare, if any: `tasks` polls)
            let declared = params.and_then(|p| wire::find(p, 0..p.len(), &["_meta", meta::CLIENT_CAPABILITIES_KEY]).and_then(|r| serde_json::from_slice(&p[r]).ok()));
            let meta = self.modern_meta(declared.unwrap_or_else(|| json!({})));
            let p = wire::set_meta(params.unwrap_or(b"{}"), &meta, |_| false);
            let headers = upward::written_headers(name, Some(&p), &|tool| self.upstream_tool_schema(u, tool));
            upward::request(&mut self.out, u, id, name, Some(&p), Some(headers));
        } else {
            upward::request(&mut self.out, u, id, name, params, None);
        }
        Some(id)
    }

    /// The per-request `_meta` of a modern request the hub sends upstream.
    pub(super) fn modern_meta(&self, caps: Value) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert(meta::PROTOCOL_VERSION_KEY.into(), json!(MODERN.as_str()));
        m.insert(meta::CLIENT_CAPABILITIES_KEY.into(), caps);
        m.insert(meta::CLIENT_INFO_KEY.into(), json!({ "name": self.opts.server_name, "version": self.opts.server_version }));
        m
    }

    /// Opens (or reopens, with the current filter) the hub's listen stream
    /// to modern upstream `u` ([`Upstreams::open_listen`]), with the
    /// resources of it the hub's clients subscribed to.
    pub(super) fn open_listen(&mut self, u: UpstreamId) {
        if !self.ups[u].listens() {
            return;
        }
        let uris = self.subscribed_uris_of(u);
        let fx = self.ups.open_listen(u, uris, self.opts.max_timeout_ms);
        self.apply_upstream(fx);
    }

    /// `stream`: the hub's request on whose response stream it came, if any.
    pub(super) fn on_upstream_message(&mut self, u: UpstreamId, bytes: &[u8], stream: Option<u64>) {
        if u >= self.ups.len() || !self.ups[u].is_up() {
            return;
        }
        self.ups[u].last_heard_ms = self.now_ms;
        let m = match wire::parse(bytes) {
            Ok(m) => m,
            Err(e) => {
                self.ups[u].garbage += 1;
                let msg = format!("server '{}' sent an invalid message: {}", self.ups[u].spec.name, e.message);
                self.log(Level::Warn, msg);
                return;
            }
        };
        match m.kind {
            MsgKind::Request => {
                let fx = self.relays.on_upstream_request(&self.ups, u, &m, stream);
                self.apply_relay(fx)
            }
            MsgKind::Notification => self.on_upstream_notification(u, &m),
            MsgKind::Result | MsgKind::Error => {
                let Some((id, f)) = m.id_u64().and_then(|id| Some((id, self.pending.take(u, id)?))) else {
                    let msg = format!("server '{}': answer to an unknown or expired request ignored", self.ups[u].spec.name);
                    self.log(Level::Debug, msg);
                    return;
                };
                self.tasks.ask_done(u, id);
                match f.origin {
                    o @ Origin::Client { .. } => {
                        // An answer ends a use: the idle time counts from here.
                        self.ups[u].last_used_ms = self.now_ms;
                        self.answer_client(u, o, &m)
                    }
                    Origin::Held(h) => {
                        let fx = self.relays.held_answered(&self.ups, h, &m, self.now_ms);
                        self.apply_relay(fx)
                    }
                    Origin::Task(t) => {
                        let fx = self.tasks.answered(&super::task_up(u, &self.ups[u]), &t, &m, self.now_ms);
                        self.apply_task_effects(fx);
                    }
                    Origin::Discover => {
                        let fx = self.ups.on_discover_answer(u, &m, &self.opts);
                        self.apply_upstream(fx);
                    }
                    Origin::Listen => {
                        let fx = self.ups.on_listen_end(u, &m);
                        self.apply_upstream(fx);
                    }
                    Origin::Initialize => {
                        let fx = self.ups.on_initialize_answer(u, &m);
                        self.apply_upstream(fx);
                    }
                    Origin::List(k) => {
                        let fx = self.ups.on_list_page(u, k, &m, self.now_ms, self.starts.is_instance(u), &self.opts);
                        self.apply_upstream(fx);
                    }
                    Origin::TaskCancelled => {
                        let fx = self.tasks.cancelled_answered(&super::task_up(u, &self.ups[u]), &m);
                        self.apply_task_effects(fx);
                    }
                    Origin::Fire | Origin::Ping => {}
                }
            }
        }
    }

    /// Replaces `u`'s items of kind `k` in the catalog, announcing a change.
    pub(super) fn set_items(&mut self, u: UpstreamId, k: Kind, items: Vec<Value>) {
        let sep = self.opts.separator.clone();
        let naming: Vec<(String, String)> = self.ups.iter().map(|x| (x.spec.name.clone(), x.spec.prefix.clone())).collect();
        let naming: Vec<Naming> = naming.iter().map(|(n, p)| Naming { name: n, prefix: p }).collect();
        let (changed, renamed) = self.catalog.set(u, k, items, &naming, &sep);
        let lines = self.policy.listed(&self.ups[u].spec.name, k, self.catalog.items(u, k));
        self.apply_policy(lines);
        let server = &self.ups[u].spec.name;
        let lines: Vec<String> = renamed.iter().map(|r| {
            let why = match r.change {
                names::Change::Shortened => format!("prefix, separator and name are over {} characters", names::MAX_LEN),
                names::Change::Replaced => "it has characters outside [A-Za-z0-9_-]".to_string(),
                names::Change::Salted | names::Change::Kept => "another item has the same exposed name".to_string(),
            };
            format!("server '{server}': {} '{}' is exposed as '{}' ({why})", k.item_word(), r.original, r.exposed)
        }).collect();
        for l in lines {
            self.log(Level::Info, l);
        }
        if changed {
            self.announce(k.channel());
        }
    }

    fn on_upstream_notification(&mut self, u: UpstreamId, m: &Msg) {
        if let Some(r) = m.param(&["_meta", meta::SUBSCRIPTION_ID_KEY]) {
            // Requirement: subscriptions-stdio-client-correlate
            let current = self.ups[u].listen;
            if wire::id_u64(&m.raw[r]).is_none_or(|id| Some(id) != current) {
                return;
            }
        }
        use Method::*;
        match m.call {
            SubscriptionsAcknowledged => {}
            Progress => self.upstream_progress(u, m),
            TasksStatus => {
                let fx = self.tasks.status_from_upstream(&super::task_up(u, &self.ups[u]), &m.params_value(), self.now_ms);
                self.apply_task_effects(fx);
            }
            LogMessage => self.upstream_log(u, m),
            ToolsListChanged | PromptsListChanged | ResourcesListChanged => {
                let kinds: &[Kind] = match m.call {
                    ToolsListChanged => &[Kind::Tools],
                    PromptsListChanged => &[Kind::Prompts],
                    _ => &[Kind::Resources, Kind::Templates],
                };
                let fx = self.ups.relist(u, kinds, self.starts.is_instance(u));
                self.apply_upstream(fx);
            }
            ResourcesUpdated => self.upstream_resource_updated(u, m),
            ElicitationComplete => {
                let url_ok = |c: super::ClientId| self.clients.get(&c).is_some_and(|cl| cl.rev().supports(mcpx_core::revision::Feature::ElicitationUrlMode));
                let fx = self.relays.elicitation_complete(u, m, url_ok);
                self.apply_relay(fx)
            }
            Cancelled => self.upstream_cancelled(u, m),
            _ => {}
        }
    }

    /// `notifications/message` from upstream `u`: to the clients whose
    /// level admits it, the logger prefixed with the server's name.
    fn upstream_log(&mut self, u: UpstreamId, m: &Msg) {
        // Policy: the log cap per request (hub/policy.rs).
        let capped = self.policy.admit_log(u, &self.ups[u].spec.name, &self.pending);
        self.apply_policy(capped.warns);
        if !capped.admitted {
            return;
        }
        let mut p = m.params_value();
        let server = &self.ups[u].spec.name;
        let logger = match p.get("logger").and_then(Value::as_str) {
            Some(l) => format!("{server}/{l}"),
            None => server.clone(),
        };
        p["logger"] = Value::String(logger);
        self.modern_logs(u, &p);
        // Legacy clients get what the level they set admits (a modern
        // request may have lowered the upstream's level below it).
        let level = p.get("level").and_then(Value::as_str).and_then(super::request::level_index).unwrap_or(0);
        if self.log_level.as_deref().and_then(super::request::level_index).is_some_and(|l| level < l) {
            return;
        }
        let ids: Vec<_> = self.clients.iter().filter(|(k, c)| c.initialized() && c.may_notify() && self.starts.may_reach(u, **k, &self.clients)).map(|(k, _)| *k).collect();
        for c in ids {
            self.downward().notify(c, Method::LogMessage, &p);
        }
    }

    /// `notifications/resources/updated` from upstream `u`: to the
    /// subscribers of the URI (as clients see it).
    fn upstream_resource_updated(&mut self, u: UpstreamId, m: &Msg) {
        let p = m.params_value();
        let Some(uri) = p.get("uri").and_then(Value::as_str) else { return };
        let exposed = self.exposed_uri(u, uri);
        let mut out = p.clone();
        out["uri"] = Value::String(exposed.clone());
        if let Some(o) = out.as_object_mut() {
            o.remove("_meta");
        }
        let reached = self.notify_listens_updated(u, &exposed, &out);
        // Subscribers asked for these: no need to wait for a list.
        let to: Vec<ClientId> = self.subs.clients_of(&exposed).into_iter().filter(|c| !reached.contains(c) && self.starts.may_reach(u, *c, &self.clients)).collect();
        for c in to {
            self.downward().notify(c, Method::ResourcesUpdated, &out);
        }
    }

    /// `notifications/cancelled` from upstream `u`: of a request it relayed.
    fn upstream_cancelled(&mut self, u: UpstreamId, m: &Msg) {
        let Some(r) = m.param(&["requestId"]) else { return };
        let reason = m.param(&["reason"]).and_then(|r| wire::string_at(m.raw, r));
        let rid = m.raw[r].to_vec();
        // Requirement: cancellation-log-reasons
        let server = self.ups[u].spec.name.clone();
        self.log(Level::Debug, format!("server '{server}' cancelled its request {}: {}", String::from_utf8_lossy(&rid), reason.as_deref().unwrap_or("no reason given")));
        let fx = self.relays.cancelled_by_upstream(u, &rid, reason.as_deref());
        self.apply_relay(fx);
    }

    /// How a client sees upstream `u`'s resource URI.
    pub(super) fn exposed_uri(&self, u: UpstreamId, uri: &str) -> String {
        self.catalog.exposed_of(Kind::Resources, u, uri).map(str::to_string).unwrap_or_else(|| uri.to_string())
    }

    fn upstream_progress(&mut self, u: UpstreamId, m: &Msg) {
        let Some(p) = m.params.clone() else { return };
        let Some(tr) = m.param(&["progressToken"]) else { return };
        let Some(id) = wire::id_u64(&m.raw[tr.clone()]) else { return };
        let now = self.now_ms;
        // Requirement: lifecycle-timeouts-may-reset-on-progress, lifecycle-timeouts-max-regardless-of-progress
        let Some(origin) = self.pending.progressed(u, id, now) else { return };
        let (c, token, about) = match origin {
            Origin::Client { client, id: cid, progress: Some(token), .. } => (*client, token.clone(), About::Notification { unsolicited: false, related: Some(IdKey::new(cid)) }),
            // The request was answered with its task: progress is no
            // longer on its stream.
            Origin::Task(t) => {
                let t = t.clone();
                let Some((c, token)) = self.tasks.progress_to(&t).filter(|(c, _)| self.clients.contains_key(c)) else { return };
                (c, token, About::Notification { unsolicited: false, related: None })
            }
            _ => return,
        };
        // Policy: the progress cap per request (hub/policy.rs).
        let capped = self.policy.admit_progress(u, &self.ups[u].spec.name, id, &self.pending);
        self.apply_policy(capped.warns);
        if !capped.admitted {
            return;
        }
        let Some(cl) = self.clients.get(&c) else { return };
        let f = &cl.rev().features();
        let params = &m.raw[p.clone()];
        let body = if !f.progress_message && m.param(&["message"]).is_some() {
            let mut v: Value = serde_json::from_slice(params).unwrap_or(Value::Null);
            v["progressToken"] = serde_json::from_slice(&token).unwrap_or(Value::Null);
            super::shape::notification_params(Method::Progress, &mut v, f);
            serde_json::to_vec(&v).unwrap_or_default()
        } else {
            let rel = (tr.start - p.start)..(tr.end - p.start);
            wire::splice(params, vec![(rel, token)])
        };
        self.downward().emit(c, wire::notification(Method::Progress, Some(&body)), about);
    }

    /// The answer to a request for `u`'s tool while it is not ready
    /// ([`Upstreams::unavailable`]).
    pub(super) fn unavailable(&self, u: UpstreamId) -> Refusal {
        self.ups.unavailable(u, self.now_ms)
    }

    pub(super) fn on_upstream_refused(&mut self, u: UpstreamId, msg: &[u8], why: &str) {
        if u >= self.ups.len() {
            return;
        }
        let name = self.ups[u].spec.name.clone();
        let Ok(m) = wire::parse(msg) else { return };
        let Some(id) = m.id_u64().filter(|_| matches!(m.kind, MsgKind::Request)) else {
            self.log(Level::Warn, format!("server '{name}': message to it dropped: {why}"));
            return;
        };
        // Only client requests are failed here; the hub's own requests keep
        // their timeouts (and what they do on expiry).
        let Some(Fwd { origin: Origin::Client { client, id: cid, method, .. }, .. }) = self.pending.take_if(u, id, |o| matches!(o, Origin::Client { .. })) else {
            self.log(Level::Warn, format!("server '{name}': request to it dropped: {why}"));
            return;
        };
        let text = format!("server '{name}' cannot take {method} now: {why}");
        self.downward().error(client, Some(&cid), ErrorCode::InternalError, &text, Some(json!({ "server": name })));
    }

    /// A message from `u` over its transport's cap was skipped: the
    /// request it answers (read from its edges) is failed now, naming the
    /// size and the limit, instead of waiting for its timeout.
    pub(super) fn on_upstream_too_large(&mut self, u: UpstreamId, big: &Oversize<'_>, on: Option<&[u8]>) {
        if !self.ups.is_live(u) {
            return;
        }
        self.ups[u].garbage += 1;
        let name = self.ups[u].spec.name.clone();
        let Oversize { len, max, limit, .. } = *big;
        let data = || Some(json!({ "server": name, "bytes": len, "limitBytes": max }));
        let id = match clipped::classify(big.head, big.tail) {
            Clipped::Request { .. } => {
                let msg = format!("server '{name}' sent a request or notification of {len} bytes, over {limit}; dropped");
                return self.log(Level::Warn, msg);
            }
            c => c.answers(on).and_then(wire::id_u64),
        };
        let origin = id.and_then(|id| self.pending.origin(u, id));
        match (id, origin) {
            (Some(id), Some(Origin::Client { .. })) => {
                let Some(Fwd { origin: Origin::Client { client, id: cid, method, .. }, .. }) = self.pending.take(u, id) else { return };
                let text = format!("server '{name}' answered {method} with {len} bytes, over {limit}; the answer was dropped");
                self.log(Level::Warn, format!("{text} (request {id})"));
                self.downward().error(client, Some(&cid), ErrorCode::InternalError, &text, data());
            }
            (Some(id), Some(Origin::Task(_))) => {
                let Some(Fwd { origin: Origin::Task(t), .. }) = self.pending.take(u, id) else { return };
                let fx = self.tasks.lost(&t, format!("server '{name}' answered with {len} bytes, over {limit}; the answer was dropped"), self.now_ms);
                self.apply_task_effects(fx);
            }
            (Some(id), Some(_)) => {
                // The hub's own request (a list page, a probe): its timeout decides.
                self.log(Level::Warn, format!("server '{name}' answered mcpx's request {id} with {len} bytes, over {limit}; dropped"));
            }
            (Some(id), None) => {
                self.log(Level::Warn, format!("server '{name}' sent a {len}-byte answer to request {id}, which is not open, over {limit}; dropped"));
            }
            (None, _) => {
                let what = format!("server '{name}' wrote a message of {len} bytes, over {limit}");
                self.log(Level::Warn, format!("{what}; its id is not in its first or last bytes, so the request it answers gets its timeout"));
                self.ups[u].clipped = Some((self.now_ms, what));
            }
        }
    }

    pub(super) fn on_tick(&mut self) {
        for (u, id) in self.pending.expired(self.now_ms) {
            let Some(f) = self.pending.take(u, id) else { continue };
            self.on_timeout(u, id, f);
        }
        let fx = self.relays.tick(&self.ups, self.now_ms);
        self.apply_relay(fx);
        let fx = self.tasks.poll(&super::task_ups(&self.ups), self.now_ms);
        self.apply_task_effects(fx);
        let fx = self.tasks.expire(&super::task_ups(&self.ups), self.now_ms);
        self.apply_task_effects(fx);
        self.release_held_inits();
        let pending = &self.pending;
        let pings = self.ups.pings(self.now_ms, self.opts.ping_interval_ms, |u| pending.pinging(u));
        self.apply_upstream(pings);
        let fx = self.starts.tick(self.now_ms, &self.ups, &self.clients, &|u| self.pending.busy(u));
        self.apply_starts(fx);
        let clients = &self.clients;
        let effects = self.shared.tick(self.now_ms, &self.opts.cluster, |c| clients.contains_key(&c));
        self.apply_shared(effects);
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
            Origin::Fire => self.cancel_upstream(u, id, "timed out"),
            // No task id to cancel, and no notifications/cancelled for it.
            Origin::TaskCancelled => {}
            Origin::Held(h) => {
                let fx = self.relays.held_expired(u, id, h);
                self.apply_relay(fx)
            }
            Origin::Task(t) => {
                self.cancel_upstream(u, id, "timed out");
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
                self.cancel_upstream(u, id, "timed out");
                let mut msg = format!("server '{name}' did not answer {method} within {waited} ms; mcpx cancelled the request");
                if let Some((_, what)) = self.ups[u].clipped.as_ref().filter(|(at, _)| *at >= sent_ms) {
                    msg.push_str(&format!(" ({what} meanwhile, dropped: it may have been the answer)"));
                }
                self.downward().error(client, Some(&cid), ErrorCode::InternalError, &msg, Some(json!({ "server": name, "timeoutMs": waited })));
            }
        }
    }

    /// Tells `u` the hub no longer waits for its request `id`.
    pub(super) fn cancel_upstream(&mut self, u: UpstreamId, id: u64, reason: &str) {
        if self.ups[u].is_up() {
            let p = json!({ "requestId": id, "reason": reason });
            upward::notification(&mut self.out, u, Method::Cancelled, Some(&serde_json::to_vec(&p).unwrap_or_default()));
        }
    }

    pub(super) fn deadline(&self) -> Option<u64> {
        [self.pending.next_deadline(), self.relays.next_deadline(), self.held_init_deadline(), self.ups.next_ping(self.opts.ping_interval_ms, |u| self.pending.pinging(u)), self.starts.deadline(&self.ups, &self.clients, &|u| self.pending.busy(u)), self.tasks.deadline(), self.shared.deadline()].into_iter().flatten().min()
    }

    pub(super) fn status_json(&self) -> Value {
        let starts = &self.starts;
        let ups = self.ups.status(self.now_ms, &self.catalog, |u| starts.template_of(u));
        let clients: Vec<Value> = self
            .clients
            .iter()
            .map(|(id, c)| {
                json!({
                    "id": id,
                    "revision": c.session().map(|s| s.rev.as_str()),
                    "era": c.era_name(),
                    "listens": self.listens.count(*id),
                    "clientInfo": c.session().map(|s| &s.info),
                    "initialized": c.initialized(),
                    "subscriptions": c.subs,
                    "connectedMs": c.connected_ms,
                })
            })
            .collect();
        json!({
            "upstreams": ups,
            "clients": clients,
            "pending": self.pending.len(),
            "relays": self.relays.len(),
            "config": self.config_status,
            "tasks": self.tasks.status(),
        })
    }
}
