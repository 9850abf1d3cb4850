//! The `subscriptions/listen` streams of modern clients, and the modern
//! requests that wait for startup to settle: state of their own, answering
//! with [`Effect`]s that the hub applies in order (`Hub::apply_listens`).
//! What a step needs of the rest of the hub (the capabilities offered, who
//! may be reached, what a principal sees) comes in as plain values.

use std::collections::{BTreeMap, VecDeque};

use mcpx_core::error::ErrorCode;
use mcpx_core::method::Method;
use mcpx_core::meta::SUBSCRIPTION_ID_KEY;
use serde_json::{json, Map, Value};

use super::super::catalog::Channel;
use super::super::request::Refusal;
use super::super::{ClientId, HubOptions};

/// One open `subscriptions/listen` stream.
#[derive(Clone, Debug)]
struct Listen {
    /// The listen request's id, raw JSON: the subscription id.
    id: Vec<u8>,
    tools: bool,
    prompts: bool,
    resources: bool,
    /// Exposed resource URIs subscribed to.
    uris: Vec<String>,
    /// Task ids agreed (`notifications/tasks`; tasks extension).
    task_ids: Vec<String>,
    /// Fingerprints of what its principal sees per channel, as last told
    /// (with per-principal catalogs; `stages::authorize`).
    fps: [u64; 3],
}

impl Listen {
    fn wants(&self, ch: Channel) -> bool {
        match ch {
            Channel::Tools => self.tools,
            Channel::Prompts => self.prompts,
            Channel::Resources => self.resources,
        }
    }
}

/// What the listen streams ask the hub to do.
pub(in crate::hub) enum Effect {
    /// A notification to a client (its params written).
    Notify(ClientId, Method<'static>, Vec<u8>),
    /// The result answering a client's request (its id, raw JSON).
    Answer(ClientId, Vec<u8>, Vec<u8>),
    /// Client `c` wants exposed resource URI `uri` / no longer does.
    Subscribe(ClientId, String),
    Unsubscribe(ClientId, String),
}

/// `params` of a notification on listen stream `id`, tagged with it
/// (`subscriptions-tag-every-notification`).
fn tagged(params: &Value, id: &[u8]) -> Vec<u8> {
    let mut p = params.clone();
    let idv: Value = serde_json::from_slice(id).unwrap_or(Value::Null);
    p["_meta"] = json!({ SUBSCRIPTION_ID_KEY: idv });
    serde_json::to_vec(&p).unwrap_or_default()
}

/// What a new listen stream was granted, as the hub decided it.
pub(in crate::hub) struct Grant {
    /// The capabilities the hub offers (the union of the upstreams').
    pub caps: Map<String, Value>,
    /// The exposed URIs asked for that may be subscribed to.
    pub uris: Vec<String>,
    /// The task ids agreed (`None`: none were asked for).
    pub task_ids: Option<Vec<String>>,
    /// What the client's principal sees now, per channel.
    pub fps: [u64; 3],
}

/// The listen streams of every client, and the early modern requests.
pub(in crate::hub) struct Listens {
    by_client: BTreeMap<ClientId, Vec<Listen>>,
    /// Modern requests that came while upstreams were still starting:
    /// served once startup has settled, as a legacy client's `initialize`
    /// is held.
    early: VecDeque<(ClientId, Vec<u8>)>,
    max_listens: usize,
    max_early: usize,
}

impl Listens {
    pub fn new(opts: &HubOptions) -> Listens {
        Listens { by_client: BTreeMap::new(), early: VecDeque::new(), max_listens: opts.max_subscriptions, max_early: opts.max_pending }
    }

    /// Keeps client `c`'s modern request `raw` until startup settles;
    /// false when too many wait already.
    pub fn hold(&mut self, c: ClientId, raw: &[u8]) -> bool {
        if self.early.len() >= self.max_early {
            return false;
        }
        self.early.push_back((c, raw.to_vec()));
        true
    }

    /// The next request that waited for startup, in order.
    pub fn next_early(&mut self) -> Option<(ClientId, Vec<u8>)> {
        self.early.pop_front()
    }

    pub fn any_early(&self) -> bool {
        !self.early.is_empty()
    }

    /// How many streams client `c` has open.
    pub fn count(&self, c: ClientId) -> usize {
        self.by_client.get(&c).map_or(0, Vec::len)
    }

    /// Does a stream of client `c` want exposed `uri`?
    pub fn wants_uri(&self, c: ClientId, uri: &str) -> bool {
        self.by_client.get(&c).is_some_and(|ls| ls.iter().any(|l| l.uris.iter().any(|x| x == uri)))
    }

    /// May client `c` open a stream with id `id`?
    pub fn may_open(&self, c: ClientId, id: &[u8]) -> Result<(), Refusal> {
        let open = self.by_client.get(&c).map_or(&[][..], Vec::as_slice);
        if open.iter().any(|l| l.id == id) {
            return Err(Refusal(ErrorCode::InvalidRequest, "Invalid request: a subscription with this id is already open".into(), None));
        }
        if open.len() >= self.max_listens {
            let msg = format!("this client has {} open subscriptions (mcpx's limit); end one first", self.max_listens);
            return Err(Refusal(ErrorCode::InternalError, msg, None));
        }
        Ok(())
    }

    /// Opens stream `id` of client `c` with notifications filter `filter`
    /// (checked by [`Listens::may_open`]) and what the hub granted: it is
    /// acknowledged first with the agreed subset, then its URIs are
    /// subscribed to.
    pub fn open(&mut self, c: ClientId, id: &[u8], filter: &Value, g: Grant) -> Vec<Effect> {
        let asked = |k: &str| filter.get(k) == Some(&Value::Bool(true));
        // Requirement: subscriptions-ack-reports-agreed-subset, subscriptions-only-requested-types
        let listen = Listen {
            id: id.to_vec(),
            tools: asked("toolsListChanged") && g.caps.contains_key("tools"),
            prompts: asked("promptsListChanged") && g.caps.contains_key("prompts"),
            resources: asked("resourcesListChanged") && g.caps.contains_key("resources"),
            uris: g.uris,
            task_ids: g.task_ids.clone().unwrap_or_default(),
            fps: g.fps,
        };
        let mut agreed = Map::new();
        for (k, on) in [("toolsListChanged", listen.tools), ("promptsListChanged", listen.prompts), ("resourcesListChanged", listen.resources)] {
            if on {
                agreed.insert(k.into(), json!(true));
            }
        }
        if filter.get("resourceSubscriptions").is_some_and(Value::is_array) {
            agreed.insert("resourceSubscriptions".into(), json!(listen.uris));
        }
        if let Some(ids) = g.task_ids {
            agreed.insert("taskIds".into(), json!(ids));
        }
        // Requirement: subscriptions-ack-first-with-id
        let idv: Value = serde_json::from_slice(id).unwrap_or(Value::Null);
        let ack = json!({ "_meta": { SUBSCRIPTION_ID_KEY: idv }, "notifications": agreed });
        let mut fx = vec![Effect::Notify(c, Method::SubscriptionsAcknowledged, serde_json::to_vec(&ack).unwrap_or_default())];
        fx.extend(listen.uris.iter().map(|uri| Effect::Subscribe(c, uri.clone())));
        self.by_client.entry(c).or_default().push(listen);
        fx
    }

    /// Ends stream `id` of client `c` (the client cancelled it); `None`
    /// when there was none.
    pub fn end(&mut self, c: ClientId, id: &[u8]) -> Option<Vec<Effect>> {
        let open = self.by_client.get_mut(&c)?;
        let i = open.iter().position(|l| l.id == id)?;
        let l = open.remove(i);
        Some(l.uris.into_iter().map(|uri| Effect::Unsubscribe(c, uri)).collect())
    }

    /// Graceful end of every stream (mcpx is shutting down): each listen
    /// request is answered (`opts`: the `serverInfo` its result carries).
    pub fn end_every(&mut self, opts: &HubOptions) -> Vec<Effect> {
        let mut fx = Vec::new();
        for (c, l) in std::mem::take(&mut self.by_client).into_iter().flat_map(|(c, ls)| ls.into_iter().map(move |l| (c, l))) {
            // Requirement: subscriptions-server-teardown-respond, subscriptions-listen-result-meta
            let idv: Value = serde_json::from_slice(&l.id).unwrap_or(Value::Null);
            let v = json!({ "_meta": { SUBSCRIPTION_ID_KEY: idv } });
            fx.push(Effect::Answer(c, l.id.clone(), super::stamped(opts, &serde_json::to_vec(&v).unwrap_or_default(), None)));
            // Requirement: cancellation-server-must-send-cancelled-on-listen-teardown, cancellation-server-only-for-listen
            let p = json!({ "requestId": idv, "reason": "mcpx is shutting down" });
            fx.push(Effect::Notify(c, Method::Cancelled, serde_json::to_vec(&p).unwrap_or_default()));
            fx.extend(l.uris.into_iter().map(|uri| Effect::Unsubscribe(c, uri)));
        }
        fx
    }

    /// Client `c` is gone, and its streams with it.
    pub fn client_gone(&mut self, c: ClientId) {
        self.by_client.remove(&c);
    }

    /// The clients with a stream that wants `ch`.
    pub fn wanting(&self, ch: Channel) -> Vec<ClientId> {
        self.by_client.iter().filter(|(_, ls)| ls.iter().any(|l| l.wants(ch))).map(|(c, _)| *c).collect()
    }

    /// A list changed: every stream that asked for it is told, tagged.
    /// `seen`: with per-principal catalogs, what each client of
    /// [`Listens::wanting`] sees on `ch` now; only a stream whose view
    /// changed is told (`stages::authorize`).
    pub fn list_changed(&mut self, ch: Channel, seen: Option<&[(ClientId, u64)]>) -> Vec<Effect> {
        let mut fx = Vec::new();
        for (c, ls) in self.by_client.iter_mut() {
            let fp = seen.map(|s| s.iter().find(|(x, _)| x == c).map(|(_, fp)| *fp));
            for l in ls.iter_mut().filter(|l| l.wants(ch)) {
                match fp {
                    Some(None) => continue,
                    Some(Some(fp)) if std::mem::replace(&mut l.fps[ch.idx()], fp) == fp => continue,
                    _ => {}
                }
                // Requirement: subscriptions-tag-every-notification
                fx.push(Effect::Notify(*c, ch.notification(), tagged(&json!({}), &l.id)));
            }
        }
        fx
    }

    /// A resource at exposed `uri` was updated: the streams subscribed to
    /// it are told, tagged, when their client `reach`es (an isolated
    /// instance: its owner's only).
    pub fn updated(&self, uri: &str, params: &Value, reach: impl Fn(ClientId) -> bool) -> Vec<Effect> {
        let mut fx = Vec::new();
        for (c, ls) in self.by_client.iter().filter(|(c, _)| reach(**c)) {
            for l in ls.iter().filter(|l| l.uris.iter().any(|x| x == uri)) {
                fx.push(Effect::Notify(*c, Method::ResourcesUpdated, tagged(params, &l.id)));
            }
        }
        fx
    }

    /// Task `id` changed: the streams of clients `of` the owner that agreed
    /// to it get `notifications/tasks` with the whole task, as `tasks/get`
    /// gives it, tagged.
    pub fn task(&self, id: &str, task: &Value, of: impl Fn(ClientId) -> bool) -> Vec<Effect> {
        let mut fx = Vec::new();
        for (c, ls) in self.by_client.iter().filter(|(c, _)| of(**c)) {
            for l in ls.iter().filter(|l| l.task_ids.iter().any(|t| t == id)) {
                fx.push(Effect::Notify(*c, Method::Tasks, tagged(task, &l.id)));
            }
        }
        fx
    }
}
