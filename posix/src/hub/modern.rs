//! The modern era (2026-07-28) on the client-facing side: which requests are
//! modern, their per-request `_meta`, `server/discover`, caching hints,
//! `resultType` and `serverInfo` on every result, per-request log levels and
//! `subscriptions/listen` streams.
//!
//! Decisions:
//! - Era per request (`versioning-dual-era-server-selects-by-opening`): a
//!   request carrying `_meta["io.modelcontextprotocol/protocolVersion"]`, and
//!   every `server/discover`, is modern; a client that has never sent
//!   `initialize` and has once been modern stays modern (a request of its
//!   without `_meta` is refused with -32602). Both eras are served on one
//!   connection at once (`versioning-dual-era-both-concurrently`).
//! - A modern request is normalized at ingress into the legacy form the rest
//!   of the hub routes (the `io.modelcontextprotocol/*` `_meta` keys,
//!   `inputResponses` and `requestState` removed) and its per-request context
//!   ([`ReqCtx`]: capabilities, log level, principal, salient params) rides
//!   with it in `pending`. Capabilities are never remembered across requests.
//! - Caching hints: lists and `server/discover` get the aggregate of the
//!   upstreams' hints (the smallest `ttlMs`, `public` only when every one says
//!   so); upstreams without hints count as `HubOptions::cache_ttl_ms` /
//!   `cache_public` (lists are read again on `list_changed`).
//!   `resources/read` gets its upstream's hints; a read of a server that
//!   gives none is [`NOT_CACHEABLE`], so a client never re-reads an old
//!   answer right after changing it (`tools/call` and `prompts/get` carry
//!   no hints at all in the 2026-07-28 schema).
//! - `subscriptions/listen`: any number of streams per client (up to
//!   `max_subscriptions`), acknowledged first with the agreed subset, every
//!   notification tagged with the listen request's id; a client's
//!   `notifications/cancelled` ends one; `Hub::shutdown` answers them all.

use mcpx_core::error::ErrorCode;
use mcpx_core::error::PeerCaps;
use mcpx_core::method::Method;
use mcpx_core::meta::{self, validate_request_meta, SERVER_INFO_KEY, SUBSCRIPTION_ID_KEY};
use mcpx_core::revision::{self, Era, Revision};
use mcpx_core::json::{JsonValue, Kind as JsonKind};
use mcpx_core::rewrite::Splice;
use serde_json::{json, Map, Value};

use super::catalog::{Channel, Kind};
use super::request::{level_index, ReqCtx, MODERN};
use super::shape;
use super::wire::{self, Edit, Msg};
use super::{ClientId, Hub, UpstreamId};

/// Hints on a read of a server that gives none: `ttlMs: 0` is "immediately
/// stale" (`caching-ttl-zero-stale`), private.
pub(super) const NOT_CACHEABLE: (u64, bool) = (0, false);

/// One open `subscriptions/listen` stream.
#[derive(Clone, Debug)]
pub(super) struct Listen {
    /// The listen request's id, raw JSON: the subscription id.
    pub id: Vec<u8>,
    pub tools: bool,
    pub prompts: bool,
    pub resources: bool,
    /// Exposed resource URIs subscribed to.
    pub uris: Vec<String>,
    /// Task ids agreed (`notifications/tasks`; tasks extension).
    pub task_ids: Vec<String>,
    /// Fingerprints of what its principal sees per channel, as last told
    /// (with per-principal catalogs; `Hub::listen_sees`).
    pub fps: [u64; 3],
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

/// `params` of a notification on listen stream `id`, tagged with it
/// (`subscriptions-tag-every-notification`).
fn tagged(params: &Value, id: &[u8]) -> Vec<u8> {
    let mut p = params.clone();
    let idv: Value = serde_json::from_slice(id).unwrap_or(Value::Null);
    p["_meta"] = json!({ SUBSCRIPTION_ID_KEY: idv });
    serde_json::to_vec(&p).unwrap_or_default()
}

/// The salient params of request `m`, whose `requestState` must match on
/// the retry: the method's identifying params, canonical (key order is the
/// client's to change, so they are read as a value; only these methods'
/// params are).
fn salient(m: &Msg) -> Vec<u8> {
    let p = match m.call {
        Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead => m.params_value(),
        _ => Value::Null,
    };
    let v = match m.call {
        Method::ToolsCall | Method::PromptsGet => json!({
            "name": p.get("name").cloned().unwrap_or(Value::Null),
            "arguments": p.get("arguments").cloned().unwrap_or_else(|| json!({})),
        }),
        Method::ResourcesRead => json!({ "uri": p.get("uri").cloned().unwrap_or(Value::Null) }),
        _ => Value::Null,
    };
    wire::canonical(&v)
}

impl Hub {
    /// Is request `m` of client `c` served in the modern era?
    pub(super) fn is_modern_request(&self, c: ClientId, m: &Msg) -> bool {
        let modern_connection = self.clients.get(&c).is_some_and(|cl| cl.is_modern());
        let hints = revision::EraHints { modern_connection, ..Default::default() };
        revision::request_era(Some(&m.env), hints) == Era::Modern
    }

    /// `result` / `error` shaping for a modern client.
    fn modern_error(&mut self, c: ClientId, id: &[u8], code: ErrorCode, msg: &str, data: Option<Value>) {
        let code = code.for_peer(MODERN, PeerCaps::default());
        self.downward().error(c, Some(id), code, msg, data);
    }

    /// Result `res` (a JSON object) for a modern client: `resultType`
    /// (`"complete"` when it has none), the hub's `serverInfo` in `_meta`
    /// and, when given, caching hints, spliced into the bytes: every other
    /// byte (ids, numbers of any size) passes as it is. Anything but an
    /// object is returned unchanged.
    pub(super) fn stamped(&self, res: &[u8], hints: Option<(u64, bool)>) -> Vec<u8> {
        match mcpx_core::json::parse(res) {
            Ok(v) if v.kind() == JsonKind::Object => self.stamped_view(&v, hints),
            _ => res.to_vec(),
        }
    }

    /// [`Hub::stamped`] of the object `res` (a view whose bytes are the result).
    pub(super) fn stamped_view(&self, res: &JsonValue<'_>, hints: Option<(u64, bool)>) -> Vec<u8> {
        let info = serde_json::to_vec(&json!({ "name": self.opts.server_name, "version": self.opts.server_version })).unwrap_or_default();
        let ttl = hints.map(|(t, _)| t.to_string());
        let scope: &[u8] = if hints.is_some_and(|(_, public)| public) { b"\"public\"" } else { b"\"private\"" };
        // Members present are replaced in place; absent ones are written
        // together as one insertion (core's `insert_member` takes one per
        // object).
        let mut splices = Vec::with_capacity(4);
        let mut added: Vec<u8> = Vec::new();
        let mut add = |key: &str, value: &[u8]| {
            added.extend_from_slice(&wire::quote(key));
            added.push(b':');
            added.extend_from_slice(value);
            added.push(b',');
        };
        if !res.get("resultType").is_some_and(|v| v.kind() == JsonKind::String) {
            match res.get("resultType") {
                Some(v) => splices.push(Splice::raw(v.span(), b"\"complete\"")),
                None => add("resultType", b"\"complete\""),
            }
        }
        let meta = res.get("_meta");
        let info_meta;
        match meta {
            Some(m) if m.kind() == JsonKind::Object => splices.push(Splice::set_member(&m, SERVER_INFO_KEY, &info)),
            _ => {
                let mut o = wire::quote(SERVER_INFO_KEY);
                o.push(b':');
                o.extend_from_slice(&info);
                info_meta = [b"{".as_slice(), &o, b"}"].concat();
                match meta {
                    Some(m) => splices.push(Splice::raw(m.span(), &info_meta)),
                    None => add("_meta", &info_meta),
                }
            }
        }
        if let Some(ttl) = &ttl {
            for (k, v) in [("ttlMs", ttl.as_bytes()), ("cacheScope", scope)] {
                match res.get(k) {
                    Some(old) => splices.push(Splice::raw(old.span(), v)),
                    None => add(k, v),
                }
            }
        }
        let at = res.span().start + 1;
        if !added.is_empty() {
            if res.members().next().is_none() {
                added.pop(); // no comma before the closing brace
            }
            splices.push(Splice::raw(mcpx_core::json::Span::new(at, at), &added));
        }
        wire::splice_within(res, &mut splices)
    }

    /// [`Hub::stamped`] for a result the hub built as a value (task bodies,
    /// input requests): the one rule, applied to its bytes.
    pub(super) fn stamp(&self, v: &mut Value, hints: Option<(u64, bool)>) {
        let bytes = serde_json::to_vec(v).unwrap_or_default();
        if let Ok(s) = serde_json::from_slice(&self.stamped(&bytes, hints)) {
            *v = s;
        }
    }

    /// The hints of upstream `u` for list `k` (or its reads, `None`).
    pub(super) fn up_hints(&self, u: UpstreamId, k: Option<Kind>) -> (u64, bool) {
        match k {
            Some(k) => self.ups[u].hints[k.idx()].unwrap_or((self.opts.cache_ttl_ms, self.opts.cache_public)),
            None => self.ups[u].read_hints.unwrap_or(NOT_CACHEABLE),
        }
    }

    /// Aggregate hints over the ready upstreams for `kinds` (all lists when empty).
    pub(super) fn agg_hints(&self, kinds: &[Kind]) -> (u64, bool) {
        let kinds: Vec<Kind> = if kinds.is_empty() { Kind::ALL.to_vec() } else { kinds.to_vec() };
        let mut ttl: Option<u64> = None;
        let mut public = true;
        for u in 0..self.ups.len() {
            if !self.ups[u].is_ready() {
                continue;
            }
            for k in &kinds {
                if !self.ups[u].has_cap(k.capability()) {
                    continue;
                }
                let (t, p) = self.up_hints(u, Some(*k));
                ttl = Some(ttl.map_or(t, |x| x.min(t)));
                public &= p;
            }
        }
        match ttl {
            Some(t) => (t, public),
            None => (self.opts.cache_ttl_ms, self.opts.cache_public),
        }
    }

    /// A modern request from client `c`.
    pub(super) fn on_modern_request(&mut self, c: ClientId, m: &Msg) {
        if !self.startup_settled() && self.early.len() < self.opts.max_pending {
            // No handshake to hold: the request itself waits (up to
            // `startup_wait_ms`) so that what it sees covers every upstream.
            self.early.push_back((c, m.env.bytes().to_vec()));
            return;
        }
        let id = m.id_bytes().unwrap_or(b"null").to_vec();
        let supported = self.opts.client_revisions;
        let rm = match validate_request_meta(&m.env, supported) {
            Ok(rm) => rm,
            Err(e) => {
                // Requirement: meta-server-rejects-missing-required-field, versioning-server-unsupported-version-error
                let mut buf = vec![0u8; 512];
                let n = loop {
                    match e.write_response(Some(&id), supported, &mut buf) {
                        Ok(n) => break n,
                        Err(o) => buf.resize(o.needed, 0),
                    }
                };
                buf.truncate(n);
                let outcome = super::Outcome::Error { code: i64::from(e.error_code().code()), retry_after_s: None };
                return self.downward().reply(c, Some(&id), buf, outcome);
            }
        };
        let caps: Value = serde_json::from_slice(rm.client_capabilities.bytes()).unwrap_or_else(|_| json!({}));
        let log_level = rm.log_level.and_then(|v| v.as_str()).and_then(|s| meta::LOG_LEVELS.iter().position(|l| s.eq_str(l)));
        let Some(cl) = self.clients.get_mut(&c) else { return };
        cl.spoke_modern();
        let principal = cl.principal.clone();
        let ctx = ReqCtx { caps, log_level, principal, salient: salient(m) };
        use Method::*;
        match m.call {
            ServerDiscover => self.discover(c, &id, super::tasks::declared(&ctx.caps)),
            // A task another replica runs is its to answer (`shared`).
            TasksGet | TasksUpdate | TasksCancel if self.task_elsewhere(c, m, &id, &ctx.principal) => {}
            // Requirement: versioning-dual-era-server-selects-by-opening (conformance: legacy-only methods are -32601 on a modern request)
            Initialize | Ping | LoggingSetLevel | ResourcesSubscribe | ResourcesUnsubscribe => self.legacy_only(c, m, &id),
            SubscriptionsListen => self.listen(c, &id, &m.params_value(), &ctx),
            ToolsCall | PromptsGet | ResourcesRead => self.modern_call(c, m, &id, ctx),
            ToolsList | ResourcesList | ResourcesTemplatesList | PromptsList | CompletionComplete => self.route_modern(c, m, None, ctx),
            TasksGet | TasksUpdate | TasksCancel if super::tasks::declared(&ctx.caps) && self.tasks.upstream_of(m, &ctx.principal, &super::task_ups(&self.ups)).is_some() => self.route_modern(c, m, Some(None), ctx),
            TasksGet | TasksUpdate | TasksCancel => self.modern_task_request(c, m, &id, &ctx),
            _ => self.modern_error(c, &id, ErrorCode::MethodNotFound, &format!("Method not found: {}", m.method), None),
        }
    }

    /// A method of the legacy session, on a modern request: -32601.
    fn legacy_only(&mut self, c: ClientId, m: &Msg, id: &[u8]) {
        let msg = format!("Method not found: {} is not part of protocol revision {} (it belongs to the initialize-based session)", m.method, MODERN.as_str());
        self.modern_error(c, id, ErrorCode::MethodNotFound, &msg, None);
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel` of a task the hub runs.
    fn modern_task_request(&mut self, c: ClientId, m: &Msg, id: &[u8], ctx: &ReqCtx) {
        if let Err(super::request::Refusal(code, msg, data)) = self.task_request(c, id, m, Some(ctx)) {
            self.modern_error(c, id, code, &msg, data);
        }
    }

    /// Serves the modern requests that waited for startup, in order.
    pub(super) fn release_early(&mut self) {
        if !self.startup_settled() {
            return;
        }
        while let Some((c, raw)) = self.early.pop_front() {
            if self.clients.contains_key(&c) {
                if let Ok(m) = wire::parse(&raw) {
                    self.on_modern_request(c, &m);
                }
            }
        }
    }

    /// `tools/call`, `prompts/get`, `resources/read`: a first request, or a
    /// retry carrying `requestState` / `inputResponses` (see `relay`).
    fn modern_call(&mut self, c: ClientId, m: &Msg, id: &[u8], ctx: ReqCtx) {
        // Read from the view: a first request (nearly all) has neither member.
        let member = |k: &str| m.env.params().and_then(|p| p.get(k));
        let responses = member("inputResponses");
        if responses.is_some_and(|r| r.kind() != JsonKind::Object) {
            return self.modern_error(c, id, ErrorCode::InvalidParams, "Invalid params: inputResponses must be an object mapping each input request's key to its result", None);
        }
        // The relay keeps a retry's answers as a value.
        let responses = responses.and_then(|r| serde_json::from_slice::<Value>(r.bytes()).ok());
        match member("requestState") {
            // A first request is routed from its view (`_meta`'s request
            // context is left out where it is forwarded: `wire::upstream_params`).
            None if responses.is_none() => self.route_view(c, m, ctx),
            None => self.route_modern(c, m, None, ctx),
            Some(s) if s.kind() == JsonKind::String => {
                let Some(state) = s.as_str().and_then(|s| String::from_utf8(s.decoded().collect()).ok()) else {
                    return self.modern_error(c, id, ErrorCode::InvalidParams, "Invalid params: requestState must be a string", None);
                };
                self.redeem_state(c, m, id, ctx, &state, responses)
            }
            Some(_) => self.modern_error(c, id, ErrorCode::InvalidParams, "Invalid params: requestState must be a string", None),
        }
    }

    /// Normalizes modern request `m` into the legacy form and routes it with
    /// its context. `upstream_state`: for a retry to a modern upstream, the
    /// `inputResponses` are kept and `requestState` set to this (`Some(None)`:
    /// removed); `None`: both removed.
    pub(super) fn route_modern(&mut self, c: ClientId, m: &Msg, upstream_state: Option<Option<String>>, ctx: ReqCtx) {
        let id = m.id_bytes().unwrap_or(b"null").to_vec();
        let params = match m.params.clone() {
            Some(p) => {
                let raw = &m.raw[p];
                let keep_input = upstream_state.is_some();
                let state = upstream_state.clone().flatten().map(|s| wire::quote(&s));
                let stripped = wire::edit_object(
                    raw,
                    0..raw.len(),
                    |k, _| match k {
                        "inputResponses" if keep_input => Edit::Keep,
                        "inputResponses" => Edit::Drop,
                        "requestState" => match &state {
                            Some(s) => Edit::Replace(s.clone()),
                            None => Edit::Drop,
                        },
                        _ => Edit::Keep,
                    },
                    &[],
                );
                stripped
            }
            None => b"{}".to_vec(),
        };
        self.route_normalized(c, &wire::request_raw(&id, &m.method, Some(&params)), ctx);
    }

    /// Routes modern request `bytes`, already normalized, with its context
    /// (also once more when it waited for its server to start, `lazy`).
    pub(super) fn route_normalized(&mut self, c: ClientId, bytes: &[u8], ctx: ReqCtx) {
        let Ok(m) = wire::parse(bytes) else { return };
        self.route_view(c, &m, ctx);
    }

    /// Routes modern request `m` with its context.
    fn route_view(&mut self, c: ClientId, m: &Msg, ctx: ReqCtx) {
        let routed = self.route(c, m, Some(&ctx));
        if let Err(super::request::Refusal(code, msg, data)) = self.shared.routed(c, m, Some(&ctx), routed) {
            self.modern_error(c, m.id_bytes().unwrap_or(b"null"), code, &msg, data);
        }
    }

    /// `server/discover`.
    /// `tasks`: the request declared the tasks extension, which mcpx serves.
    fn discover(&mut self, c: ClientId, id: &[u8], tasks: bool) {
        // Requirement: versioning-server-must-implement-discover, discover-supportedversions, discover-capabilities, discover-serverinfo-in-meta, discover-cacheable, discover-resulttype
        let versions: Vec<&str> = self.opts.client_revisions.iter().rev().map(Revision::as_str).collect();
        let f = shape::Features::of(MODERN);
        let mut caps = shape::server_capabilities(self.ups.capabilities(), &f);
        // Requirement: ext-tasks-server-advertise-discover
        if tasks {
            caps.insert("extensions".into(), json!({ super::tasks::EXT: {} }));
        }
        let v = json!({
            "supportedVersions": versions,
            "capabilities": caps,
            "instructions": self.ups.instructions(&self.catalog, &self.opts.separator, &f),
        });
        let hints = self.agg_hints(&[]);
        let out = self.stamped(&serde_json::to_vec(&v).unwrap_or_default(), Some(hints));
        self.downward().result(c, id, &out);
    }

    /// List page `page` for a modern client, with its result members.
    pub(super) fn stamped_list(&self, page: &[u8], k: Kind) -> Vec<u8> {
        let hints = self.agg_hints(&[k]);
        self.stamped(page, Some(hints))
    }

    /// `subscriptions/listen`.
    fn listen(&mut self, c: ClientId, id: &[u8], p: &Value, ctx: &ReqCtx) {
        let Some(filter) = p.get("notifications").filter(|f| f.is_object()) else {
            return self.modern_error(c, id, ErrorCode::InvalidParams, "Invalid params: subscriptions/listen needs a \"notifications\" object", None);
        };
        let cl = &self.clients[&c];
        if cl.listens.iter().any(|l| l.id == id) {
            return self.modern_error(c, id, ErrorCode::InvalidRequest, "Invalid request: a subscription with this id is already open", None);
        }
        if cl.listens.len() >= self.opts.max_subscriptions {
            let msg = format!("this client has {} open subscriptions (mcpx's limit); end one first", self.opts.max_subscriptions);
            return self.modern_error(c, id, ErrorCode::InternalError, &msg, None);
        }
        // Tasks extension: `taskIds` needs the extension declared on this request.
        let task_ids = match filter.get("taskIds") {
            None => None,
            Some(Value::Array(ids)) if super::tasks::declared(&ctx.caps) => {
                let asked: Vec<String> = ids.iter().filter_map(Value::as_str).map(str::to_string).collect();
                Some(self.tasks.listenable(&ctx.principal, &asked, &super::task_ups(&self.ups)))
            }
            Some(Value::Array(_)) => {
                let super::request::Refusal(code, msg, data) = super::tasks::missing_extension("subscriptions/listen with taskIds");
                return self.modern_error(c, id, code, &msg, data);
            }
            Some(_) => return self.modern_error(c, id, ErrorCode::InvalidParams, "Invalid params: notifications.taskIds must be an array of task ids", None),
        };
        let caps = self.ups.capabilities();
        let asked = |k: &str| filter.get(k) == Some(&Value::Bool(true));
        // Requirement: subscriptions-ack-reports-agreed-subset, subscriptions-only-requested-types
        let listen = Listen {
            id: id.to_vec(),
            tools: asked("toolsListChanged") && caps.contains_key("tools"),
            prompts: asked("promptsListChanged") && caps.contains_key("prompts"),
            resources: asked("resourcesListChanged") && caps.contains_key("resources"),
            uris: Vec::new(),
            task_ids: task_ids.clone().unwrap_or_default(),
            fps: self.listen_fingerprints(c),
        };
        let mut agreed = Map::new();
        for (k, on) in [("toolsListChanged", listen.tools), ("promptsListChanged", listen.prompts), ("resourcesListChanged", listen.resources)] {
            if on {
                agreed.insert(k.into(), json!(true));
            }
        }
        let mut uris = Vec::new();
        if let Some(list) = filter.get("resourceSubscriptions").and_then(Value::as_array) {
            for uri in list.iter().filter_map(Value::as_str) {
                if let Some(u) = self.subscribable(c, uri) {
                    uris.push((uri.to_string(), u));
                }
            }
        }
        if filter.get("resourceSubscriptions").is_some_and(Value::is_array) {
            agreed.insert("resourceSubscriptions".into(), json!(uris.iter().map(|x| x.0.clone()).collect::<Vec<_>>()));
        }
        if let Some(ids) = task_ids {
            agreed.insert("taskIds".into(), json!(ids));
        }
        let mut listen = listen;
        listen.uris = uris.iter().map(|x| x.0.clone()).collect();
        if let Some(cl) = self.clients.get_mut(&c) {
            cl.listens.push(listen);
        }
        // Requirement: subscriptions-ack-first-with-id
        let idv: Value = serde_json::from_slice(id).unwrap_or(Value::Null);
        let ack = json!({ "_meta": { SUBSCRIPTION_ID_KEY: idv }, "notifications": agreed });
        self.downward().notification(c, Method::SubscriptionsAcknowledged, Some(&serde_json::to_vec(&ack).unwrap_or_default()));
        for (uri, _) in uris {
            self.subscribe_uri(c, &uri);
        }
    }

    /// The upstream serving resource `uri`, when it can notify its updates
    /// and client `c` may see it (`stages::authorize`).
    fn subscribable(&self, c: ClientId, uri: &str) -> Option<UpstreamId> {
        let (u, _) = self.route_uri(uri).filter(|(u, _)| self.server_visible(c, *u))?;
        let sub = self.ups[u].caps.as_ref().and_then(|c| c.pointer("/resources/subscribe")) == Some(&Value::Bool(true));
        sub.then_some(u)
    }

    /// Ends listen stream `id` of client `c` (the client cancelled it); true
    /// when there was one.
    pub(super) fn end_listen(&mut self, c: ClientId, id: &[u8]) -> bool {
        let Some(cl) = self.clients.get_mut(&c) else { return false };
        let Some(i) = cl.listens.iter().position(|l| l.id == id) else { return false };
        let l = cl.listens.remove(i);
        for uri in l.uris {
            self.unsubscribe_uri(c, &uri);
        }
        true
    }

    /// Graceful end of every listen stream of `c`: each listen request is
    /// answered.
    pub(super) fn end_listens(&mut self, c: ClientId) {
        let Some(cl) = self.clients.get_mut(&c) else { return };
        let listens = std::mem::take(&mut cl.listens);
        for l in listens {
            // Requirement: subscriptions-server-teardown-respond, subscriptions-listen-result-meta
            let idv: Value = serde_json::from_slice(&l.id).unwrap_or(Value::Null);
            let v = json!({ "_meta": { SUBSCRIPTION_ID_KEY: idv } });
            let out = self.stamped(&serde_json::to_vec(&v).unwrap_or_default(), None);
            self.downward().result(c, &l.id, &out);
            // Requirement: cancellation-server-must-send-cancelled-on-listen-teardown, cancellation-server-only-for-listen
            let p = json!({ "requestId": idv, "reason": "mcpx is shutting down" });
            self.downward().notification(c, Method::Cancelled, Some(&serde_json::to_vec(&p).unwrap_or_default()));
            for uri in l.uris {
                self.unsubscribe_uri(c, &uri);
            }
        }
    }

    /// A list changed: every listen stream that asked for it is told, tagged.
    pub(super) fn notify_listens(&mut self, ch: Channel) {
        let mut out = Vec::new();
        for (c, cl) in self.clients.iter() {
            for (i, l) in cl.listens.iter().enumerate().filter(|(_, l)| l.wants(ch)) {
                out.push((*c, i, l.id.clone()));
            }
        }
        for (c, i, id) in out {
            // Only a principal whose view changed is told (stages::authorize).
            if !self.listen_sees(c, i, ch) {
                continue;
            }
            // Requirement: subscriptions-tag-every-notification
            self.downward().notification(c, ch.notification(), Some(&tagged(&json!({}), &id)));
        }
    }

    /// A resource of upstream `u` was updated: listen streams subscribed to
    /// its exposed URI are told, tagged, when `u` may reach their client
    /// (an isolated instance: its owner's only). Returns the clients reached.
    pub(super) fn notify_listens_updated(&mut self, u: UpstreamId, exposed: &str, params: &Value) -> Vec<ClientId> {
        let mut out = Vec::new();
        for (c, cl) in self.clients.iter().filter(|(c, _)| self.starts.may_reach(u, **c, &self.clients)) {
            for l in cl.listens.iter().filter(|l| l.uris.iter().any(|x| x == exposed)) {
                out.push((*c, l.id.clone()));
            }
        }
        let mut reached = Vec::new();
        for (c, id) in out {
            self.downward().notification(c, Method::ResourcesUpdated, Some(&tagged(params, &id)));
            reached.push(c);
        }
        reached
    }

    /// Task `id` of principal `owner` changed: the owner's listen streams
    /// that agreed to it get `notifications/tasks` with the whole task, as
    /// `tasks/get` gives it, tagged.
    pub(super) fn notify_listens_task(&mut self, owner: &[u8], id: &str, task: &Value) {
        let mut out = Vec::new();
        for (c, cl) in self.clients.iter().filter(|(_, cl)| cl.principal == owner) {
            for l in cl.listens.iter().filter(|l| l.task_ids.iter().any(|t| t == id)) {
                out.push((*c, l.id.clone()));
            }
        }
        for (c, sub) in out {
            self.downward().notification(c, Method::Tasks, Some(&tagged(task, &sub)));
        }
    }

    /// A log message of upstream `u` for modern clients: only those with a
    /// request to `u` in flight whose `logLevel` admits it (and, for an
    /// isolated instance, of its owner).
    pub(super) fn modern_logs(&mut self, u: UpstreamId, p: &Value) {
        // Requirement: meta-loglevel-per-request (no logLevel → no log notifications)
        let level = p.get("level").and_then(Value::as_str).and_then(level_index).unwrap_or(0);
        let mut to: Vec<ClientId> = self.pending.modern_log_clients(u, level);
        to.retain(|c| self.starts.may_reach(u, *c, &self.clients));
        to.sort();
        to.dedup();
        for c in to {
            self.downward().notification(c, Method::LogMessage, Some(&serde_json::to_vec(p).unwrap_or_default()));
        }
    }
}
