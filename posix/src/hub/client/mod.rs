//! Downstream connections: what each client has seen (its revision,
//! capabilities, which lists it has read), what the hub owes it on the way
//! out, and the messages that come from it. The server side of the
//! handshake is `handshake` (methods of [`Clients`] answering with
//! effects); messages toward clients are written by `super::downward`.
//!
//! Decisions (see the requirement rows named in the tests):
//! - `initialize`: the client's version is echoed when the hub speaks it, else
//!   the latest legacy revision is offered (`lifecycle-server-echoes-supported-version`,
//!   `lifecycle-server-counteroffers-latest`). While upstreams are still
//!   starting the answer is held (up to `startup_wait_ms`) so the capabilities
//!   cover them; they are the union of what upstreams offer.
//! - A legacy request before `initialize` other than `ping` is refused
//!   (`lifecycle-initialization-first-interaction`,
//!   `lifecycle-client-no-requests-before-init-response`): the session has no
//!   revision yet, so nothing could be shaped for it. Modern (2026-07-28)
//!   requests carry their revision and need no handshake.
//! - A JSON-RPC batch is taken on a session negotiated at 2025-03-26, the only
//!   revision that has them, and answered with one array once every request
//!   in it is answered (`messages-batch-may-send-must-receive`,
//!   `stdio-message-may-be-batch`); on any other revision it is refused.
//! - Unsolicited notifications (list_changed, log messages, resource updates)
//!   go to a client only after it has read a list: the oldest Python SDK
//!   client deadlocks on one that arrives before its first `tools/list`.
//! - What a session keeps of its `initialize` is bounded ([`KEPT_LIMITS`]):
//!   one over a limit is refused with -32602 naming it, and the client is
//!   forgotten (an HTTP session is not opened), so a client cannot make mcpx
//!   hold megabytes per session.
//! - What a legacy session needs to go on is a value ([`Snapshot`]), so that
//!   a replica can take over the session of one that is gone: the hub says
//!   when it changes (`Output::SessionChanged`), gives it
//!   (`Hub::client_snapshot`) and makes a client of it (`Hub::adopt_client`).

use std::collections::{BTreeMap, HashMap, VecDeque};

use mcpx_core::error::PeerCaps;
#[cfg(feature = "cluster")]
use mcpx_core::revision;
use serde_json::{json, Value};

#[cfg(feature = "cluster")]
use super::catalog::Channel;
use super::request::ReqCtx;
use super::tasks;
use super::shape::{Rev, RevExt};
use super::tracked::Tracked;
use super::wire;
use super::{About, ClientId, IdKey, Output};

mod handshake;
mod inbound;
pub(super) use handshake::{Effect, Offer};

pub struct Client {
    /// Where the client is in its life, and what that stage knows.
    pub(in crate::hub) stage: Stage,
    /// Per channel: has read the list (first page) at least once.
    pub(in crate::hub) listed: [bool; 3],
    /// Per channel: fingerprint of the list as last shown or announced.
    pub(in crate::hub) known_fp: [u64; 3],
    /// Subscribed resource URIs (exposed).
    pub(in crate::hub) subs: usize,
    /// The level of its last `logging/setLevel`; `None`: it sent none.
    pub(in crate::hub) log_level: Option<&'static str>,
    pub(in crate::hub) connected_ms: u64,
    /// Bound into `requestState` tokens (see `Input::ClientPrincipal`).
    pub(in crate::hub) principal: Vec<u8>,
    /// Ids of the client's requests not yet answered (at most
    /// [`MAX_OPEN`]): what a runtime waits for at end of input, and what a
    /// transport checks a new request's id against.
    /// Each with its policy record's handle (`tracked`). Private to this
    /// module, which changes it only where it keeps the count of all
    /// clients' open requests ([`Clients::open_requests`]).
    open: HashMap<IdKey, Tracked>,
    /// JSON-RPC batches with requests still unanswered.
    pub(in crate::hub) batches: Vec<PendingBatch>,
}

/// A client's era and handshake, decided once: by its `initialize`
/// (legacy), or by a first 2026-07-28 request or the transport's word
/// (modern). Only a legacy session has a negotiated revision, capabilities
/// and `clientInfo`; a modern client's come with each request.
pub(super) enum Stage {
    /// Connected; neither `initialize` nor a 2026-07-28 request yet.
    New,
    Legacy(Session),
    Modern,
}

impl Stage {
    /// The revision to shape for: the negotiated one, else the latest
    /// legacy one.
    pub(in crate::hub) fn rev(&self) -> Rev {
        match self {
            Stage::Legacy(s) => s.rev,
            _ => Rev::LATEST_LEGACY,
        }
    }

    pub(in crate::hub) fn is_modern(&self) -> bool {
        matches!(self, Stage::Modern)
    }
}

/// What a legacy client's `initialize` settled, and where its handshake is.
pub(super) struct Session {
    pub rev: Rev,
    pub caps: Value,
    pub info: Value,
    pub step: Step,
}

/// The legacy handshake after `initialize`.
pub(super) enum Step {
    /// The answer is held while upstreams start (the client's raw id);
    /// `ready`: `notifications/initialized` came early all the same.
    Held { id: Vec<u8>, ready: bool },
    /// Answered; requests to the client wait here for
    /// `notifications/initialized`
    /// (requirement: lifecycle-server-no-requests-before-initialized).
    Answered(Vec<(Vec<u8>, About)>),
    /// `notifications/initialized` came.
    Ready,
}

/// The connected clients: their ids, the cap on how many, and what the hub
/// owes each on the way out (its open requests, the batches waiting for
/// answers, the requests held until its handshake ends).
pub struct Clients {
    map: BTreeMap<ClientId, Client>,
    next: ClientId,
    max: usize,
    /// Requests already answered with a task the hub made while the call
    /// waited (`approvals`): their own answer, when it comes, is that
    /// task's outcome, never a second answer to the client.
    to_task: HashMap<(ClientId, IdKey), String>,
    /// Answers taken for their tasks, for the hub to settle
    /// ([`Clients::take_task_answers`]).
    task_answers: Vec<(String, Vec<u8>)>,
    /// An `initialize` may be held: set when one is, cleared when the held
    /// ones are answered ([`Clients::any_held`], which the hub asks after
    /// every message, reads this instead of every client).
    held: bool,
    /// The clients' open requests, all of them: what the runtime asks
    /// before every sleep ([`Clients::open_requests`]).
    open: usize,
}

impl Clients {
    pub(in crate::hub) fn new(max: usize) -> Clients {
        Clients { map: BTreeMap::new(), next: 1, max, to_task: HashMap::new(), task_answers: Vec::new(), held: false, open: 0 }
    }

    /// A new client, or `Err` with its id spent when `max` are connected.
    pub(in crate::hub) fn connect(&mut self, now_ms: u64) -> Result<ClientId, ClientId> {
        let c = self.next;
        self.next += 1;
        if self.map.len() >= self.max {
            return Err(c);
        }
        self.map.insert(c, Client::new(now_ms));
        Ok(c)
    }

    pub(in crate::hub) fn max(&self) -> usize {
        self.max
    }

    pub(in crate::hub) fn get(&self, c: &ClientId) -> Option<&Client> {
        self.map.get(c)
    }

    pub(in crate::hub) fn get_mut(&mut self, c: &ClientId) -> Option<&mut Client> {
        self.map.get_mut(c)
    }

    /// The policy principal of client `c` (`""` once it is gone).
    pub(in crate::hub) fn principal_name(&self, c: ClientId) -> &str {
        self.map.get(&c).map_or("", |cl| super::policy::principal_name(&cl.principal))
    }

    /// What client `c` declared that the error table depends on.
    pub(in crate::hub) fn peer_caps(&self, c: ClientId) -> PeerCaps {
        let url_elicitation = self.get(&c).and_then(|cl| cl.caps()).is_some_and(|caps| caps.pointer("/elicitation/url").is_some());
        PeerCaps { url_elicitation }
    }

    /// The request context a 2026-07-28 upstream gets in `_meta` for
    /// client `c`'s request (`ctx`: a modern client's own; `task`: the
    /// upstream is asked to run it as a task): the hub's revision, the
    /// capabilities it relays, its `clientInfo`, and the log level (the
    /// request's own; for a legacy client that set one with
    /// `logging/setLevel`, the last one set, `legacy_level`: modern
    /// servers log per request).
    pub(in crate::hub) fn upstream_context(&self, c: ClientId, ctx: Option<&ReqCtx>, task: bool, opts: &super::HubOptions, legacy_level: Option<&str>) -> serde_json::Map<String, Value> {
        let mut caps = self.caps_for_upstream(c, ctx, opts.roots.is_some());
        if let (true, Some(o)) = (task, caps.as_object_mut()) {
            super::apps::add_extension(o, tasks::EXT, json!({}));
        }
        let mut meta = super::modern::upstream_meta(opts, caps);
        let level = match ctx {
            Some(x) => x.log_level,
            None => self.get(&c).filter(|cl| cl.log_level.is_some()).and(legacy_level).and_then(super::request::level_index),
        };
        if let Some(l) = level {
            meta.insert(mcpx_core::meta::LOG_LEVEL_KEY.into(), json!(mcpx_core::meta::LOG_LEVELS[l]));
        }
        meta
    }

    /// Client capabilities the hub declares to a modern upstream on behalf
    /// of client `c` (whose request has context `ctx` when modern): what the
    /// hub can satisfy for it, i.e. what the client declared of sampling,
    /// elicitation and roots (roots always when the configuration gives
    /// them: `roots_configured`).
    fn caps_for_upstream(&self, c: ClientId, ctx: Option<&ReqCtx>, roots_configured: bool) -> Value {
        let declared = match ctx {
            Some(x) => x.caps.clone(),
            None => self.get(&c).map(|cl| {
                let mut caps = cl.caps_value();
                let f = cl.rev().features();
                if !f.elicitation {
                    if let Some(o) = caps.as_object_mut() {
                        o.remove("elicitation");
                    }
                }
                caps
            }).unwrap_or_else(|| json!({})),
        };
        let mut out = serde_json::Map::new();
        for k in ["sampling", "elicitation", "roots"] {
            if let Some(v) = declared.get(k).filter(|v| v.is_object()) {
                let mut v = v.clone();
                if k == "roots" {
                    v = json!({});
                }
                out.insert(k.into(), v);
            }
        }
        if roots_configured {
            out.insert("roots".into(), json!({}));
        }
        // The tasks extension, for an upstream that may answer with a task (`tasks::relay`).
        if ctx.is_some_and(|x| tasks::declared(&x.caps)) {
            super::apps::add_extension(&mut out, tasks::EXT, json!({}));
        }
        // MCP Apps, which mcpx answers for every client (`apps`).
        super::apps::declare(&mut out);
        Value::Object(out)
    }

    pub(in crate::hub) fn contains_key(&self, c: &ClientId) -> bool {
        self.map.contains_key(c)
    }

    pub(in crate::hub) fn remove(&mut self, c: &ClientId) -> Option<Client> {
        let cl = self.map.remove(c)?;
        self.open -= cl.open.len();
        Some(cl)
    }

    pub(in crate::hub) fn keys(&self) -> impl Iterator<Item = &ClientId> {
        self.map.keys()
    }

    pub(in crate::hub) fn iter(&self) -> impl Iterator<Item = (&ClientId, &Client)> {
        self.map.iter()
    }

    /// Each client as `mcpx status` shows it; `listens` counts a client's
    /// open `subscriptions/listen` streams.
    pub(in crate::hub) fn status(&self, listens: impl Fn(ClientId) -> usize) -> Vec<Value> {
        self.map
            .iter()
            .map(|(&id, c)| {
                json!({
                    "id": id,
                    "revision": c.session().map(|s| s.rev.as_str()),
                    "era": c.era_name(),
                    "listens": listens(id),
                    "clientInfo": c.session().map(|s| &s.info),
                    "initialized": c.initialized(),
                    "subscriptions": c.subs,
                    "connectedMs": c.connected_ms,
                })
            })
            .collect()
    }

    /// Queues a message for client `c`, saying what it is. A reply (its
    /// request closed already, [`Clients::close`]) waits for the rest of
    /// its batch when it is part of one.
    pub(in crate::hub) fn emit(&mut self, out: &mut VecDeque<Output>, c: ClientId, mut bytes: Vec<u8>, about: About) {
        // Only calls held for approval are answered with a task early.
        if let (About::Reply { id: Some(r), .. }, true) = (&about, cfg!(feature = "consent") && !self.to_task.is_empty()) {
            if let Some(task) = self.to_task.remove(&(c, IdKey::new(&bytes[r.clone()]))) {
                self.task_answers.push((task, bytes));
                return;
            }
        }
        let Some(cl) = self.map.get_mut(&c) else { return };
        if let About::Reply { id: Some(r), .. } = &about {
            let id = IdKey::new(&bytes[r.clone()]);
            match cl.batch_take(out, c, &id, Some(bytes)) {
                Some(b) => bytes = b,
                None => return,
            }
        }
        out.push_back(Output::ToClient(c, bytes, about));
    }

    /// The policy record's handle of client `c`'s open request `id`.
    pub(in crate::hub) fn tracked(&self, c: ClientId, id: &[u8]) -> Option<Tracked> {
        self.map.get(&c)?.open.get(id).copied()
    }

    /// Client `c`'s request `id` is answered: it leaves the open set,
    /// giving its record's handle (`None`: the set did not have it).
    pub(in crate::hub) fn close(&mut self, c: ClientId, id: &[u8]) -> Option<Tracked> {
        let t = self.map.get_mut(&c)?.open.remove(id)?;
        self.open -= 1;
        Some(t)
    }

    /// Client `c`'s request `id` was answered with task `task`: its own
    /// answer is the task's outcome ([`Clients::take_task_answers`]).
    pub(in crate::hub) fn answer_into_task(&mut self, c: ClientId, id: &[u8], task: String) {
        self.to_task.insert((c, IdKey::new(id)), task);
    }

    /// The task client `c`'s request `id` was answered with, while its
    /// answer is still to come.
    pub(in crate::hub) fn answers_into(&self, c: ClientId, id: &[u8]) -> Option<&str> {
        if cfg!(not(feature = "consent")) || self.to_task.is_empty() {
            return None;
        }
        self.to_task.get(&(c, IdKey::new(id))).map(String::as_str)
    }

    /// Request `id` of client `c` is its task's call now: its answer comes
    /// to the task some other way.
    pub(in crate::hub) fn answered_into(&mut self, c: ClientId, id: &[u8]) {
        if cfg!(not(feature = "consent")) || self.to_task.is_empty() {
            return;
        }
        self.to_task.remove(&(c, IdKey::new(id)));
    }

    /// The answers taken for their tasks since the last call: (task, the
    /// answer as it would have gone to the client).
    pub(in crate::hub) fn take_task_answers(&mut self) -> Vec<(String, Vec<u8>)> {
        std::mem::take(&mut self.task_answers)
    }

    /// A request to client `c`: held while the client has had its
    /// `initialize` answered but has not yet sent
    /// `notifications/initialized`
    /// (requirement: lifecycle-server-no-requests-before-initialized).
    pub(in crate::hub) fn request(&mut self, out: &mut VecDeque<Output>, c: ClientId, bytes: Vec<u8>, about: About) {
        if let Some(Stage::Legacy(Session { step: Step::Answered(held), .. })) = self.map.get_mut(&c).map(|cl| &mut cl.stage) {
            held.push((bytes, about));
            return;
        }
        self.emit(out, c, bytes, about);
    }

    /// Request `id` of client `c` will get no answer (cancelled): its
    /// batch does not wait for one.
    pub(in crate::hub) fn unanswered(&mut self, out: &mut VecDeque<Output>, c: ClientId, id: &IdKey) {
        if let Some(cl) = self.map.get_mut(&c) {
            cl.batch_take(out, c, id, None);
        }
    }
}

/// What the runtime may ask about the clients (`Hub::clients`).
impl Clients {
    /// Requests of all clients not answered yet (what a shutdown waits for).
    pub fn open_requests(&self) -> usize {
        self.open
    }

    /// How many of client `c`'s requests are not answered yet. (Test observer.)
    #[cfg(test)]
    pub fn open_requests_of(&self, c: ClientId) -> usize {
        self.map.get(&c).map_or(0, |cl| cl.open.len())
    }

    /// Is a request of client `c` with this id (raw JSON) still unanswered?
    pub fn request_open(&self, c: ClientId, id: &[u8]) -> bool {
        self.map.get(&c).is_some_and(|cl| cl.open.contains_key(id))
    }

    /// Is client `c`'s `initialize` held (waiting for upstreams to start)?
    /// A stream transport holds the client's next messages meanwhile.
    pub fn initializing(&self, c: ClientId) -> bool {
        self.map.get(&c).is_some_and(Client::held_init)
    }

    /// Has client `c` spoken the modern era (per-request `_meta`) rather than
    /// `initialize`?
    pub fn is_modern(&self, c: ClientId) -> bool {
        self.map.get(&c).is_some_and(Client::is_modern)
    }

    /// The revision negotiated with client `c` (`None` before its
    /// `initialize`, or for an unknown client). (Test observer: runtimes
    /// learn it from `Output::ClientInitialized`.)
    #[cfg(test)]
    pub fn revision(&self, c: ClientId) -> Option<&'static str> {
        self.map.get(&c)?.session().map(|s| s.rev.as_str())
    }
}

impl std::ops::Index<&ClientId> for Clients {
    type Output = Client;
    fn index(&self, c: &ClientId) -> &Client {
        &self.map[c]
    }
}

/// The answers to one batch of a client's, held until its last request is
/// answered (then written as one array, [`About::Batch`]).
pub(super) struct PendingBatch {
    /// Ids of the batch's requests not yet answered (twice if sent twice).
    waiting: Vec<IdKey>,
    /// The answers so far, in the order they came.
    answers: Vec<Vec<u8>>,
}

/// The most a session keeps of each `initialize` parameter, in bytes as
/// the client sent it: `clientInfo` (a name, a version, a title and a few
/// icons fit) and `capabilities`.
pub(super) const KEPT_LIMITS: [(&str, usize); 2] = [("clientInfo", 4 << 10), ("capabilities", 16 << 10)];

/// Requests tracked per client in [`Client::open`]; past this many the
/// newest are not tracked (they are still served).
pub(super) const MAX_OPEN: usize = 4096;

/// What a legacy session needs to go on where its replica is gone (issue
/// 25): what its `initialize` settled (revision, capabilities and
/// `clientInfo`, within [`KEPT_LIMITS`]), whose it is, whether
/// `notifications/initialized` came, the log level it asked for, the
/// resources it subscribed to (exposed URIs) and which lists it has read
/// (so that list_changed notifications keep coming). Requests in flight are
/// not in it: they are lost with their replica. (Replicas share it through
/// Redis: feature `cluster`.)
#[cfg(feature = "cluster")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub rev: Rev,
    pub caps: Value,
    pub info: Value,
    pub principal: Vec<u8>,
    pub ready: bool,
    pub log_level: Option<&'static str>,
    pub listed: [bool; 3],
    pub subscriptions: Vec<String>,
}

#[cfg(feature = "cluster")]
impl Snapshot {
    /// The JSON a store keeps.
    pub fn to_json(&self) -> Value {
        let listed: Vec<&str> = Channel::ALL.iter().filter(|ch| self.listed[ch.idx()]).map(|ch| ch.name()).collect();
        json!({
            "protocolVersion": self.rev.as_str(),
            "capabilities": self.caps,
            "clientInfo": self.info,
            "principal": crate::bytes::hex::hex(&self.principal),
            "initialized": self.ready,
            "logLevel": self.log_level,
            "listed": listed,
            "subscriptions": self.subscriptions,
        })
    }

    /// What [`Snapshot::to_json`] wrote; why not when it is not that.
    pub fn from_json(v: &Value) -> Result<Snapshot, String> {
        let field = |k: &str| v.get(k).ok_or_else(|| format!("no \"{k}\""));
        let text = |k: &str| field(k)?.as_str().ok_or_else(|| format!("\"{k}\" is not a string"));
        let strings = |k: &str| -> Result<Vec<&str>, String> {
            let a = field(k)?.as_array().ok_or_else(|| format!("\"{k}\" is not an array"))?;
            a.iter().map(|x| x.as_str().ok_or_else(|| format!("\"{k}\" holds a non-string"))).collect()
        };
        let rev = Rev::parse(text("protocolVersion")?).filter(|r| r.era() == revision::Era::Legacy).ok_or("not a legacy protocolVersion")?;
        let caps = field("capabilities")?.clone();
        if !caps.is_object() {
            return Err("\"capabilities\" is not an object".into());
        }
        let log_level = match field("logLevel")? {
            Value::Null => None,
            l => Some(*mcpx_core::meta::LOG_LEVELS.iter().find(|x| l.as_str() == Some(**x)).ok_or("an unknown \"logLevel\"")?),
        };
        let mut listed = [false; 3];
        for name in strings("listed")? {
            let ch = Channel::ALL.into_iter().find(|ch| ch.name() == name).ok_or_else(|| format!("an unknown list {name:?}"))?;
            listed[ch.idx()] = true;
        }
        Ok(Snapshot {
            rev,
            caps,
            info: field("clientInfo")?.clone(),
            principal: crate::bytes::hex::unhex(text("principal")?).ok_or("\"principal\" is not hex")?,
            ready: field("initialized")?.as_bool().ok_or("\"initialized\" is not a boolean")?,
            log_level,
            listed,
            subscriptions: strings("subscriptions")?.into_iter().map(String::from).collect(),
        })
    }
}

impl Client {
    fn new(connected_ms: u64) -> Client {
        Client {
            stage: Stage::New,
            listed: [false; 3],
            known_fp: [0; 3],
            subs: 0,
            log_level: None,
            connected_ms,
            principal: b"mcpx-local".to_vec(),
            open: HashMap::new(),
            batches: Vec::new(),
        }
    }

    /// The legacy session, once `initialize` came.
    pub(in crate::hub) fn session(&self) -> Option<&Session> {
        match &self.stage {
            Stage::Legacy(s) => Some(s),
            _ => None,
        }
    }

    /// The revision to shape for: the negotiated one, else the latest
    /// legacy one.
    pub(in crate::hub) fn rev(&self) -> Rev {
        self.stage.rev()
    }

    /// The capabilities its `initialize` declared (legacy only).
    pub(in crate::hub) fn caps(&self) -> Option<&Value> {
        self.session().map(|s| &s.caps)
    }

    /// A copy of those capabilities; `{}` without them.
    pub(in crate::hub) fn caps_value(&self) -> Value {
        self.caps().cloned().unwrap_or_else(|| json!({}))
    }

    pub(in crate::hub) fn is_modern(&self) -> bool {
        self.stage.is_modern()
    }

    /// A 2026-07-28 request came: it decides a new client's era (a legacy
    /// session stays legacy).
    pub(in crate::hub) fn spoke_modern(&mut self) {
        if matches!(self.stage, Stage::New) {
            self.stage = Stage::Modern;
        }
    }

    /// Its era as `/status` names it.
    pub(in crate::hub) fn era_name(&self) -> &'static str {
        match self.stage {
            Stage::New => "unknown",
            Stage::Legacy(_) => "legacy",
            Stage::Modern => "modern",
        }
    }

    /// Has its `initialize` been answered?
    pub(in crate::hub) fn initialized(&self) -> bool {
        self.session().is_some_and(|s| !matches!(s.step, Step::Held { .. }))
    }

    /// Is its `initialize` held while upstreams start?
    pub(in crate::hub) fn held_init(&self) -> bool {
        self.session().is_some_and(|s| matches!(s.step, Step::Held { .. }))
    }

    /// May this client get notifications it did not ask for?
    pub(in crate::hub) fn may_notify(&self) -> bool {
        self.listed.iter().any(|l| *l) || self.log_level.is_some()
    }

    /// Request `id` is answered with `answer`, or (`None`) will not be
    /// (cancelled): the batch waiting for it takes it, and is written once
    /// nothing in it waits any more. The answer comes back when no batch
    /// waits for it.
    fn batch_take(&mut self, out: &mut VecDeque<Output>, c: ClientId, id: &IdKey, answer: Option<Vec<u8>>) -> Option<Vec<u8>> {
        let found = self.batches.iter().enumerate().find_map(|(i, b)| Some(i).zip(b.waiting.iter().position(|w| w == id)));
        let Some((i, w)) = found else { return answer };
        let b = &mut self.batches[i];
        b.waiting.swap_remove(w);
        b.answers.extend(answer);
        if b.waiting.is_empty() {
            let b = self.batches.remove(i);
            if !b.answers.is_empty() {
                out.push_back(Output::ToClient(c, wire::batch_array(&b.answers), About::Batch));
            }
        }
        None
    }
}
