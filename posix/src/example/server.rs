//! Message dispatch, sessions, server→client requests and the async tools.

use super::content::{tool_error, tool_text};
use super::flow::{self, Kind, StateKey, Step};
use super::task_store::{self, Status as TaskStatus, TaskStore};
use super::tools::{self, Exec};
use super::wire::{
    self, classify, error_response, is_modern, notification, require_str, response, Incoming, RpcError,
    RpcResult, INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, UNSUPPORTED_VERSION,
};
use super::{prompts, resources, Config};
use async_io::Timer;
use mcpx_core::meta::{
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVELS, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
};
use mcpx_core::revision::{Feature, Revision, Revisions};
use serde_json::{json, Map, Value};
use smol::channel::{bounded, Receiver, Sender};
use smol::future::{self, Future};
use crate::process::exec::Executor;
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

/// Batches exist in 2025-03-26 (and JSON-RPC 2.0 under 2024-11-05); they
/// were removed in 2025-06-18 and never exist in the modern era.
const BATCHES: Revisions = Feature::Batch.revisions().with(Revision::V2024_11_05);

/// Requests handled concurrently at most; more are refused with an error.
const MAX_IN_FLIGHT: usize = 1024;
/// Legacy resource subscriptions kept at most.
const MAX_SUBSCRIPTIONS: usize = 1024;
/// How long a server→client request may stay unanswered.
const CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// What the writer receives.
pub enum Out {
    Line(String),
    /// Flush everything written so far, then acknowledge.
    Flush(Sender<()>),
}

/// A call's `arguments`: an object, `{}` when absent or null.
fn arguments(params: &Value) -> Result<Value, RpcError> {
    match params.get("arguments") {
        None | Some(Value::Null) => Ok(json!({})),
        Some(a @ Value::Object(_)) => Ok(a.clone()),
        Some(_) => Err(RpcError::invalid_params("\"arguments\" must be an object")),
    }
}

/// `_meta[key]`, which must be there and be what `pick` takes (`what`: "a
/// string", "an object").
fn required_meta<'a, T>(
    meta: &'a Map<String, Value>,
    key: &str,
    what: &str,
    pick: impl FnOnce(&'a Value) -> Option<T>,
) -> Result<T, RpcError> {
    let v = meta
        .get(key)
        .ok_or_else(|| RpcError::invalid_params(format!("missing \"_meta.{key}\"")))?;
    pick(v).ok_or_else(|| RpcError::invalid_params(format!("\"_meta.{key}\" must be {what}")))
}

fn log_level(s: &str) -> Option<u8> {
    LOG_LEVELS.iter().position(|l| *l == s).map(|p| p as u8)
}

/// Per-request context: the revision and client facts the request is served under.
#[derive(Clone)]
pub struct Ctx {
    pub id: Value,
    pub rev: Revision,
    /// Modern era (stateless, per-request `_meta`).
    pub modern: bool,
    pub caps: Rc<Value>,
    /// Minimum log level to emit; `None`: emit no logs.
    pub log_min: Option<u8>,
    pub progress: Option<Value>,
}

struct Session {
    rev: Revision,
    caps: Rc<Value>,
}

#[derive(Default)]
pub(super) struct State {
    session: Option<Session>,
    /// Set by `logging/setLevel`; no log messages are sent before that.
    log_min: Option<u8>,
    subscriptions: BTreeSet<String>,
    toggled: bool,
    watched_version: u64,
    next_id: u64,
    /// Our requests to the client awaiting an answer.
    pending: HashMap<u64, Sender<RpcResult>>,
    /// Client requests being handled by a task: cancel senders by id.
    in_flight: HashMap<String, Sender<()>>,
    /// Open modern `subscriptions/listen` requests: id → (id, agreed filter).
    listeners: HashMap<String, (Value, Value)>,
    /// Tasks (extension `io.modelcontextprotocol/tasks`).
    pub(super) tasks: TaskStore,
}

type LocalFuture = Pin<Box<dyn Future<Output = RpcResult>>>;

pub(super) enum Handled {
    Now(RpcResult),
    Later(LocalFuture),
}

pub struct Server {
    cfg: Config,
    out: Sender<Out>,
    pub(super) ex: Rc<Executor>,
    key: StateKey,
    pub(super) st: RefCell<State>,
}

impl Server {
    pub fn new(
        cfg: Config,
        out: Sender<Out>,
        ex: Rc<Executor>,
        key: StateKey,
    ) -> Rc<Server> {
        Rc::new(Server {
            cfg,
            out,
            ex,
            key,
            st: RefCell::new(State::default()),
        })
    }

    pub(super) fn key(&self) -> &StateKey {
        &self.key
    }

    pub(super) async fn send(&self, v: Value) {
        let _ = self.out.send(Out::Line(v.to_string())).await;
    }

    /// Requests still being worked on (open listen streams do not count).
    pub fn in_flight(&self) -> usize {
        let st = self.st.borrow();
        st.in_flight.len().saturating_sub(st.listeners.len())
    }

    /// Fail every request we sent to the client (it will never answer now).
    pub fn abandon_client_requests(&self) {
        let pending: Vec<_> = self.st.borrow_mut().pending.drain().collect();
        for (_, tx) in pending {
            let _ = tx.try_send(Err(RpcError::new(
                INTERNAL_ERROR,
                "the client closed the connection",
            )));
        }
    }

    /// One line of input (one JSON-RPC message or batch).
    pub async fn on_line(self: &Rc<Self>, line: &[u8]) {
        let v: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => {
                let err = RpcError::new(PARSE_ERROR, format!("parse error: {e}"));
                return self.send(error_response(&Value::Null, &err)).await;
            }
        };
        match v {
            Value::Array(items) if items.is_empty() => {
                let err = RpcError::new(INVALID_REQUEST, "empty batch");
                self.send(error_response(&Value::Null, &err)).await
            }
            Value::Array(_) if !self.batches_allowed() => {
                let err = RpcError::new(
                    INVALID_REQUEST,
                    "JSON-RPC batches are only supported in sessions of protocol revision 2025-03-26 \
                     or older; send one message per line",
                );
                self.send(error_response(&Value::Null, &err)).await
            }
            Value::Array(items) => {
                let srv = self.clone();
                self.ex
                    .spawn(async move { srv.on_batch(items).await })
                    .detach();
            }
            v => self.on_message(v).await,
        }
    }

    /// See [`BATCHES`].
    fn batches_allowed(&self) -> bool {
        self.st
            .borrow()
            .session
            .as_ref()
            .is_some_and(|s| BATCHES.contains(s.rev))
    }

    async fn on_batch(self: Rc<Self>, items: Vec<Value>) {
        let mut replies = Vec::new();
        for item in items {
            match classify(item) {
                Incoming::Request { id, method, params } => {
                    let r = match self.context(&id, &method, &params) {
                        Err(e) => Err(e),
                        Ok(ctx) => match self.handle(&ctx, &method, params) {
                            Handled::Now(r) => self.shape(&ctx, &method, r),
                            Handled::Later(f) => {
                                let r = f.await;
                                self.shape(&ctx, &method, r)
                            }
                        },
                    };
                    replies.push(response(&id, r));
                }
                Incoming::Notification { method, params } => {
                    self.on_notification(&method, &params).await
                }
                Incoming::Response { id, result } => self.on_response(&id, result),
                Incoming::Invalid { id, error } => replies.push(error_response(&id, &error)),
            }
        }
        if !replies.is_empty() {
            self.send(Value::Array(replies)).await;
        }
    }

    async fn on_message(self: &Rc<Self>, v: Value) {
        match classify(v) {
            Incoming::Request { id, method, params } => self.on_request(id, method, params).await,
            Incoming::Notification { method, params } => {
                self.on_notification(&method, &params).await
            }
            Incoming::Response { id, result } => self.on_response(&id, result),
            Incoming::Invalid { id, error } => self.send(error_response(&id, &error)).await,
        }
    }

    async fn on_request(self: &Rc<Self>, id: Value, method: String, params: Value) {
        let ctx = match self.context(&id, &method, &params) {
            Ok(c) => c,
            Err(e) => return self.send(error_response(&id, &e)).await,
        };
        match self.handle(&ctx, &method, params) {
            Handled::Now(r) => {
                let r = self.shape(&ctx, &method, r);
                self.send(response(&id, r)).await
            }
            Handled::Later(fut) => {
                let key = id.to_string();
                let (cancel_tx, cancel_rx) = bounded::<()>(1);
                let refused = {
                    let mut st = self.st.borrow_mut();
                    if st.in_flight.contains_key(&key) {
                        Some(RpcError::new(
                            INVALID_REQUEST,
                            format!("request id {key} is already in use"),
                        ))
                    } else if st.in_flight.len() >= MAX_IN_FLIGHT {
                        Some(RpcError::new(
                            INTERNAL_ERROR,
                            "too many requests in flight; retry later",
                        ))
                    } else {
                        st.in_flight.insert(key.clone(), cancel_tx);
                        None
                    }
                };
                if let Some(e) = refused {
                    return self.send(error_response(&id, &e)).await;
                }
                let srv = self.clone();
                self.ex
                    .spawn(async move {
                        let cancelled = async {
                            match cancel_rx.recv().await {
                                Ok(()) => None,
                                Err(_) => future::pending().await,
                            }
                        };
                        let r = future::or(async { Some(fut.await) }, cancelled).await;
                        srv.st.borrow_mut().in_flight.remove(&key);
                        // A cancelled request gets no response at all.
                        if let Some(r) = r {
                            let r = srv.shape(&ctx, &method, r);
                            srv.send(response(&ctx.id, r)).await;
                        }
                    })
                    .detach();
            }
        }
    }

    async fn on_notification(self: &Rc<Self>, method: &str, params: &Value) {
        match method {
            "notifications/cancelled" => {
                if let Some(id) = params.get("requestId") {
                    if let Some(tx) = self.st.borrow_mut().in_flight.remove(&id.to_string()) {
                        let _ = tx.try_send(());
                    }
                }
            }
            // Nothing to do for these; unknown notifications are ignored.
            "notifications/initialized"
            | "notifications/roots/list_changed"
            | "notifications/progress" => {}
            _ => {}
        }
    }

    fn on_response(&self, id: &Value, result: RpcResult) {
        let Some(n) = id.as_u64() else { return };
        if let Some(tx) = self.st.borrow_mut().pending.remove(&n) {
            let _ = tx.try_send(result);
        }
    }

    /// Work out which era and revision the request is served under.
    fn context(&self, id: &Value, method: &str, params: &Value) -> Result<Ctx, RpcError> {
        let meta = params.get("_meta");
        let progress = meta
            .and_then(|m| m.get("progressToken"))
            .filter(|t| t.is_string() || t.is_number())
            .cloned();
        // Modern when the request says so (a `_meta` protocol version that is
        // not a legacy revision), for server/discover, and for everything but a
        // plain `initialize` on a modern-only server.
        let version = meta.and_then(|m| m.get(PROTOCOL_VERSION_KEY));
        let legacy_version = version
            .and_then(Value::as_str)
            .and_then(Revision::parse)
            .is_some_and(|r| !is_modern(r));
        // `initialize` is modern (and so not found) only when it says so.
        let says_modern = version.is_some() && !legacy_version;
        let modern = self.cfg.modern()
            && (says_modern
                || (method != "initialize"
                    && (method == "server/discover" || self.cfg.newest_legacy().is_none())));
        if modern {
            return self.modern_context(id, params, progress);
        }
        let st = self.st.borrow();
        let (rev, caps) = match &st.session {
            Some(s) => (s.rev, s.caps.clone()),
            None => (
                self.cfg.newest_legacy().unwrap_or(Revision::LATEST_LEGACY),
                Rc::new(json!({})),
            ),
        };
        Ok(Ctx {
            id: id.clone(),
            rev,
            modern: false,
            caps,
            log_min: st.log_min,
            progress,
        })
    }

    fn modern_context(
        &self,
        id: &Value,
        params: &Value,
        progress: Option<Value>,
    ) -> Result<Ctx, RpcError> {
        let meta = match params.get("_meta") {
            Some(Value::Object(m)) => m,
            Some(_) => return Err(RpcError::invalid_params("\"_meta\" must be an object")),
            None => {
                return Err(RpcError::invalid_params(
                    "missing \"_meta\" (protocol version, client capabilities)",
                ))
            }
        };
        let version = required_meta(meta, PROTOCOL_VERSION_KEY, "a string", Value::as_str)?;
        let caps = required_meta(meta, CLIENT_CAPABILITIES_KEY, "an object", |v| v.is_object().then_some(v))?.clone();
        if let Some(info) = meta.get(CLIENT_INFO_KEY) {
            if !info.is_object() {
                return Err(RpcError::invalid_params(format!(
                    "\"_meta.{CLIENT_INFO_KEY}\" must be an object"
                )));
            }
        }
        let rev = match Revision::parse(version).filter(|r| is_modern(*r) && self.cfg.accepts(*r)) {
            Some(r) => r,
            None => {
                let supported = self.supported();
                return Err(RpcError::new(
                    UNSUPPORTED_VERSION,
                    format!("unsupported protocol version: {version}"),
                )
                .with_data(json!({"supported": supported, "requested": version})));
            }
        };
        let log_min =
            match meta.get(LOG_LEVEL_KEY) {
                None | Some(Value::Null) => None,
                Some(Value::String(l)) => Some(log_level(l).ok_or_else(|| {
                    RpcError::invalid_params(format!("unknown log level \"{l}\""))
                })?),
                Some(_) => return Err(RpcError::invalid_params("the log level must be a string")),
            };
        Ok(Ctx {
            id: id.clone(),
            rev,
            modern: true,
            caps: Rc::new(caps),
            log_min,
            progress,
        })
    }

    /// Every accepted revision, newest first (discover and -32022 errors).
    fn supported(&self) -> Vec<&'static str> {
        self.cfg
            .revisions
            .iter()
            .rev()
            .map(|r| r.as_str())
            .collect()
    }

    fn server_info(&self) -> Value {
        json!({"name": self.cfg.name, "version": env!("CARGO_PKG_VERSION"), "title": "mcpx example server"})
    }

    /// Add the fields a modern-era result needs: `resultType`, caching hints on
    /// lists and reads, and the server's identity in `_meta`.
    fn shape(&self, ctx: &Ctx, method: &str, r: RpcResult) -> RpcResult {
        let mut v = r?;
        if ctx.modern {
            if let Value::Object(o) = &mut v {
                o.entry("resultType").or_insert_with(|| "complete".into());
                // Lists that never change may be cached for a minute; the tool
                // list (toggle_tool) and reads (update_resource) may change at any time.
                let (ttl, scope) = match method {
                    "server/discover"
                    | "prompts/list"
                    | "resources/list"
                    | "resources/templates/list" => (60_000, "public"),
                    "tools/list" => (0, "public"),
                    "resources/read" => (0, "private"),
                    _ => (0, ""),
                };
                if !scope.is_empty() {
                    o.entry("ttlMs").or_insert_with(|| ttl.into());
                    o.entry("cacheScope").or_insert_with(|| scope.into());
                }
                if let Value::Object(m) = o.entry("_meta").or_insert_with(|| json!({})) {
                    m.entry(SERVER_INFO_KEY)
                        .or_insert_with(|| self.server_info());
                }
            }
        }
        Ok(v)
    }

    fn handle(self: &Rc<Self>, ctx: &Ctx, method: &str, params: Value) -> Handled {
        use Handled::Now;
        if ctx.modern {
            return match method {
                "server/discover" => Now(Ok(self.discover())),
                "subscriptions/listen" => self.listen(ctx, &params),
                "tasks/get" | "tasks/update" | "tasks/cancel" => {
                    Now(self.task_method(ctx, method, &params))
                }
                "tools/list"
                | "tools/call"
                | "prompts/list"
                | "prompts/get"
                | "resources/list"
                | "resources/templates/list"
                | "resources/read"
                | "completion/complete" => self.handle_common(ctx, method, params),
                _ => Now(Err(RpcError::method_not_found(method))),
            };
        }
        match method {
            "initialize" => Now(self.initialize(&params)),
            "ping" => Now(Ok(json!({}))),
            "logging/setLevel"
            | "tools/list"
            | "tools/call"
            | "prompts/list"
            | "prompts/get"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "completion/complete"
            | "tasks/get"
            | "tasks/result"
            | "tasks/list"
            | "tasks/cancel" => {
                if self.st.borrow().session.is_none() {
                    return Now(Err(RpcError::new(
                        INVALID_REQUEST,
                        "server not initialized: send initialize first",
                    )));
                }
                match method {
                    "logging/setLevel" => Now(self.set_level(&params)),
                    "resources/subscribe" | "resources/unsubscribe" => {
                        Now(self.subscribe(method, &params))
                    }
                    "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel" => {
                        self.core_task_method(ctx, method, &params)
                    }
                    _ => self.handle_common(ctx, method, params),
                }
            }
            _ => Now(Err(RpcError::method_not_found(method))),
        }
    }

    /// Methods both eras serve.
    fn handle_common(self: &Rc<Self>, ctx: &Ctx, method: &str, params: Value) -> Handled {
        use Handled::Now;
        let rev = ctx.rev;
        if self.cfg.demo || !cfg!(feature = "example-fixtures") {
            return Now(super::demo::handle(method, &params, rev));
        }
        match method {
            "tools/list" => {
                let toggled = self.st.borrow().toggled;
                Now(self.page("tools", tools::list(rev, toggled), &params))
            }
            "tools/call" => self.call_tool(ctx, params),
            "prompts/list" => Now(self.page("prompts", prompts::list(rev), &params)),
            "prompts/get" => self.get_prompt(ctx, params),
            "resources/list" => Now(self.page("resources", resources::list(rev), &params)),
            "resources/templates/list" => {
                Now(self.page("resourceTemplates", resources::templates(rev), &params))
            }
            "resources/read" => Now(require_str(&params, "uri")
                .and_then(|uri| resources::read(uri, rev, self.st.borrow().watched_version))),
            "completion/complete" => Now(prompts::complete(&params)),
            _ => Now(Err(RpcError::method_not_found(method))),
        }
    }

    pub(super) fn page(&self, key: &str, items: Vec<Value>, params: &Value) -> RpcResult {
        let start =
            match params.get("cursor") {
                None | Some(Value::Null) => 0,
                Some(Value::String(c)) => decode_cursor(c)
                    .filter(|&n| n <= items.len())
                    .ok_or_else(|| {
                        RpcError::invalid_params(format!(
                            "invalid cursor \"{c}\": pass back a nextCursor from this server"
                        ))
                    })?,
                Some(_) => return Err(RpcError::invalid_params("\"cursor\" must be a string")),
            };
        let end = start.saturating_add(self.cfg.page_size).min(items.len());
        let mut o = Map::new();
        if end < items.len() {
            o.insert("nextCursor".into(), encode_cursor(end).into());
        }
        let page: Vec<Value> = items.into_iter().skip(start).take(end - start).collect();
        o.insert(key.into(), page.into());
        Ok(Value::Object(o))
    }

    fn initialize(&self, params: &Value) -> RpcResult {
        let requested = require_str(params, "protocolVersion")?;
        if !params.get("capabilities").is_some_and(Value::is_object) {
            return Err(RpcError::invalid_params(
                "\"capabilities\" must be an object",
            ));
        }
        let rev = match Revision::parse(requested).filter(|r| !is_modern(*r) && self.cfg.accepts(*r)) {
            Some(r) => r,
            None => match self.cfg.newest_legacy() {
                Some(r) => r,
                None => {
                    let supported: Vec<&str> =
                        self.cfg.revisions.iter().map(Revision::as_str).collect();
                    return Err(RpcError::invalid_params(format!(
                        "unsupported protocol version {requested}; this server speaks only {}",
                        supported.join(", ")
                    ))
                    .with_data(json!({"supported": supported, "requested": requested})));
                }
            },
        };
        let mut st = self.st.borrow_mut();
        if st.session.is_some() {
            return Err(RpcError::new(INVALID_REQUEST, "already initialized"));
        }
        st.session = Some(Session {
            rev,
            caps: Rc::new(params["capabilities"].clone()),
        });
        let mut info = json!({"name": self.cfg.name, "version": env!("CARGO_PKG_VERSION")});
        if rev.supports(Feature::Title) {
            info["title"] = "mcpx example server".into();
        }
        Ok(json!({
            "protocolVersion": rev.as_str(),
            "capabilities": self.capabilities(rev),
            "serverInfo": info,
            "instructions": self.instructions()
        }))
    }

    fn instructions(&self) -> &'static str {
        // A build without the fixtures serves the demo only.
        if self.cfg.demo || cfg!(not(feature = "example-fixtures")) {
            super::demo::INSTRUCTIONS
        } else {
            "A built-in test server: conformance fixtures (test_*) plus echo, add, slow, ask_user, ask_model, list_roots, fail, crash and toggle_tool."
        }
    }

    fn capabilities(&self, rev: Revision) -> Value {
        let mut c = json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "logging": {},
        });
        if rev.supports(Feature::CompletionsCapability) {
            c["completions"] = json!({});
        }
        if rev.supports(Feature::CoreTasks) {
            c["tasks"] = task_store::core_capability();
        }
        if is_modern(rev) {
            c["extensions"] = json!({ task_store::EXT: {} });
        }
        c
    }

    fn discover(&self) -> Value {
        let rev = self
            .cfg
            .revisions
            .intersect(Revisions::MODERN)
            .latest()
            .unwrap_or(Revision::LATEST);
        let mut meta = Map::new();
        meta.insert(SERVER_INFO_KEY.into(), self.server_info());
        json!({
            "supportedVersions": self.supported(),
            "capabilities": self.capabilities(rev),
            "instructions": self.instructions(),
            "_meta": meta,
        })
    }

    fn set_level(&self, params: &Value) -> RpcResult {
        let l = require_str(params, "level")?;
        let n = log_level(l)
            .ok_or_else(|| RpcError::invalid_params(format!("unknown log level \"{l}\"")))?;
        self.st.borrow_mut().log_min = Some(n);
        Ok(json!({}))
    }

    fn subscribe(&self, method: &str, params: &Value) -> RpcResult {
        let uri = require_str(params, "uri")?;
        let mut st = self.st.borrow_mut();
        if method == "resources/subscribe" {
            if !resources::exists(uri) {
                return Err(resources::not_found(uri, Revision::LATEST_LEGACY));
            }
            if st.subscriptions.len() >= MAX_SUBSCRIPTIONS && !st.subscriptions.contains(uri) {
                return Err(RpcError::new(
                    INVALID_REQUEST,
                    format!("too many resource subscriptions (limit {MAX_SUBSCRIPTIONS}); unsubscribe some first"),
                ));
            }
            st.subscriptions.insert(uri.to_string());
        } else {
            st.subscriptions.remove(uri);
        }
        Ok(json!({}))
    }

    fn call_tool(self: &Rc<Self>, ctx: &Ctx, params: Value) -> Handled {
        use Handled::{Later, Now};
        let name = match require_str(&params, "name") {
            Ok(n) => n,
            Err(e) => return Now(Err(e)),
        };
        let args = match arguments(&params) {
            Ok(a) => a,
            Err(e) => return Now(Err(e)),
        };
        let toggled = self.st.borrow().toggled;
        let Some(spec) = tools::find(name, ctx.rev, toggled) else {
            return Now(Err(RpcError::invalid_params(format!(
                "unknown tool: {name}"
            ))));
        };
        if let Some(h) = self.call_task_tool(ctx, spec.name, &params, &args) {
            return h;
        }
        match spec.exec {
            Exec::Sync => Now(tools::call_sync(spec.name, &args, ctx.rev)),
            Exec::Flow if ctx.modern => Now(flow::modern_round(
                &self.key,
                Kind::Tool,
                spec.name,
                &params,
                &args,
                &ctx.caps,
                now_ms(),
            )),
            Exec::Flow => Later(Box::pin(self.clone().legacy_flow(
                ctx.clone(),
                Kind::Tool,
                spec.name,
                args,
                None,
            ))),
            Exec::Async => Later(Box::pin(self.clone().run_async(
                ctx.clone(),
                spec.name,
                args,
            ))),
        }
    }

    fn get_prompt(self: &Rc<Self>, ctx: &Ctx, params: Value) -> Handled {
        use Handled::{Later, Now};
        let name = match require_str(&params, "name") {
            Ok(n) => n.to_string(),
            Err(e) => return Now(Err(e)),
        };
        let args = match arguments(&params) {
            Ok(a) => a,
            Err(e) => return Now(Err(e)),
        };
        if !prompts::exists(&name, ctx.rev) {
            return Now(Err(RpcError::invalid_params(format!(
                "unknown prompt: {name}"
            ))));
        }
        if !flow::is_flow(Kind::Prompt, &name) {
            return Now(prompts::get(&name, &args));
        }
        if ctx.modern {
            Now(flow::modern_round(
                &self.key,
                Kind::Prompt,
                &name,
                &params,
                &args,
                &ctx.caps,
                now_ms(),
            ))
        } else {
            let name: &'static str = "test_input_required_result_prompt";
            Later(Box::pin(self.clone().legacy_flow(
                ctx.clone(),
                Kind::Prompt,
                name,
                args,
                None,
            )))
        }
    }

    /// Legacy era: gather input with real server→client requests.
    /// Run a flow with server→client requests. Inside 2025-11-25 task `task`,
    /// the task shows input_required while the requests are out, and they
    /// carry its related-task `_meta` (row tasks-input-request-related-task).
    pub(super) async fn legacy_flow(
        self: Rc<Self>,
        ctx: Ctx,
        kind: Kind,
        name: &'static str,
        args: Value,
        task: Option<String>,
    ) -> RpcResult {
        let mut got = flow::Gathered::new();
        for _ in 0..16 {
            match flow::step(kind, name, &args, &got, &ctx.caps) {
                Step::Done(r) => return r,
                Step::Need(reqs) => {
                    if let Some(r) = reqs.iter().find(|r| !flow::supports(&ctx.caps, r.method)) {
                        return flow::missing_capability(
                            kind,
                            name,
                            flow::capability_of(r.method),
                            false,
                        );
                    }
                    if let Some(id) = &task {
                        self.core_task_status(id, TaskStatus::InputRequired).await;
                    }
                    // Ask concurrently; each request is its own task so dropping
                    // this future (cancellation) drops them too.
                    let tasks: Vec<_> = reqs
                        .iter()
                        .map(|r| {
                            let mut params = r.params.clone();
                            if let (Some(id), Value::Object(p)) = (&task, &mut params) {
                                p.insert("_meta".into(), task_store::related(id));
                            }
                            self.ex.spawn(self.clone().client_request(r.method, params))
                        })
                        .collect();
                    for (r, t) in reqs.iter().zip(tasks) {
                        let answer = match t.await {
                            Ok(a) => a,
                            Err(e) => {
                                let msg = format!(
                                    "the client answered {} with error {}: {}",
                                    r.method, e.code, e.message
                                );
                                return if kind == Kind::Tool {
                                    Ok(tool_error(msg))
                                } else {
                                    Err(RpcError::new(INTERNAL_ERROR, msg))
                                };
                            }
                        };
                        if let Err(m) = flow::validate_answer(r.method, &answer) {
                            let msg = format!("invalid answer to {}: {m}", r.method);
                            return if kind == Kind::Tool {
                                Ok(tool_error(msg))
                            } else {
                                Err(RpcError::new(INTERNAL_ERROR, msg))
                            };
                        }
                        got.insert(r.key.to_string(), answer);
                    }
                    if let Some(id) = &task {
                        self.core_task_status(id, TaskStatus::Working).await;
                    }
                }
            }
        }
        Err(RpcError::new(INTERNAL_ERROR, "flow did not settle"))
    }

    /// Send a request to the client and wait for its answer.
    pub async fn client_request(self: Rc<Self>, method: &'static str, params: Value) -> RpcResult {
        let (tx, rx): (Sender<RpcResult>, Receiver<RpcResult>) = bounded(1);
        let id = {
            let mut st = self.st.borrow_mut();
            st.next_id += 1;
            let id = st.next_id;
            st.pending.insert(id, tx);
            id
        };
        let guard = PendingGuard {
            srv: self.clone(),
            id,
        };
        self.send(wire::request(id, method, params)).await;
        let answer = async {
            rx.recv()
                .await
                .unwrap_or_else(|_| Err(RpcError::new(INTERNAL_ERROR, "no answer")))
        };
        let timeout = async {
            Timer::after(CLIENT_REQUEST_TIMEOUT).await;
            Err(RpcError::new(
                INTERNAL_ERROR,
                format!("the client did not answer {method} in time"),
            ))
        };
        let r = future::or(answer, timeout).await;
        drop(guard);
        r
    }

    async fn log(&self, ctx: &Ctx, level: &str, data: Value) {
        let n = log_level(level).unwrap_or(1);
        if ctx.log_min.is_some_and(|min| n >= min) {
            self.send(notification(
                "notifications/message",
                json!({"level": level, "logger": "mcpx-example", "data": data}),
            ))
            .await;
        }
    }

    async fn progress(&self, ctx: &Ctx, progress: f64, total: f64, message: &str) {
        if let Some(tok) = &ctx.progress {
            let mut p = json!({"progressToken": tok, "progress": progress, "total": total});
            if ctx.rev.supports(Feature::ProgressMessage) {
                p["message"] = message.into();
            }
            self.send(notification("notifications/progress", p)).await;
        }
    }

    /// Let the last progress notification go out on its own before the
    /// result: some clients (TypeScript SDK 2.4) dispatch notifications a tick
    /// later than responses and drop progress that shares a read with the
    /// response it belongs to.
    async fn progress_settle(&self, ctx: &Ctx) {
        if ctx.progress.is_some() {
            Timer::after(Duration::from_millis(5)).await;
        }
    }

    /// `subscriptions/listen` (modern): acknowledge, then stay open until the
    /// client cancels it; matching notifications are tagged with its id.
    fn listen(self: &Rc<Self>, ctx: &Ctx, params: &Value) -> Handled {
        let filter = match params.get("notifications") {
            Some(Value::Object(f)) => f.clone(),
            _ => {
                return Handled::Now(Err(RpcError::invalid_params(
                    "\"notifications\" must be an object",
                )))
            }
        };
        // Agree to exactly the supported notification types the client asked for.
        let mut agreed = Map::new();
        for k in [
            "toolsListChanged",
            "promptsListChanged",
            "resourcesListChanged",
        ] {
            if filter.get(k) == Some(&Value::Bool(true)) {
                agreed.insert(k.into(), true.into());
            }
        }
        if let Some(uris) = filter.get("resourceSubscriptions") {
            let Some(list) = uris.as_array().filter(|l| l.iter().all(Value::is_string)) else {
                return Handled::Now(Err(RpcError::invalid_params(
                    "\"resourceSubscriptions\" must be an array of URIs",
                )));
            };
            agreed.insert("resourceSubscriptions".into(), list.clone().into());
        }
        let srv = self.clone();
        let id = ctx.id.clone();
        Handled::Later(Box::pin(async move {
            let ack = notification(
                "notifications/subscriptions/acknowledged",
                json!({"notifications": agreed, "_meta": {SUBSCRIPTION_ID_KEY: id}}),
            );
            srv.send(ack).await;
            let key = id.to_string();
            srv.st
                .borrow_mut()
                .listeners
                .insert(key.clone(), (id, Value::Object(agreed)));
            let _guard = ListenerGuard {
                srv: srv.clone(),
                key,
            };
            future::pending::<RpcResult>().await
        }))
    }

    /// Modern listeners that asked for `flag` (or, for resource updates, for `uri`).
    fn listeners_for(&self, flag: &str, uri: Option<&str>) -> Vec<Value> {
        self.st
            .borrow()
            .listeners
            .values()
            .filter(|(_, f)| match uri {
                None => f.get(flag) == Some(&Value::Bool(true)),
                Some(u) => f
                    .get("resourceSubscriptions")
                    .and_then(Value::as_array)
                    .is_some_and(|l| l.iter().any(|x| x.as_str() == Some(u))),
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Tell clients a list changed: the legacy session, and modern listeners
    /// that opted in.
    async fn list_changed(&self, what: &str) {
        let method = format!("notifications/{what}/list_changed");
        if self.st.borrow().session.is_some() {
            self.send(notification(&method, json!({}))).await;
        }
        for id in self.listeners_for(&format!("{what}ListChanged"), None) {
            self.send(notification(
                &method,
                json!({"_meta": {SUBSCRIPTION_ID_KEY: id}}),
            ))
            .await;
        }
    }

    async fn resource_updated(&self, uri: &str) -> usize {
        let legacy = {
            let st = self.st.borrow();
            st.session.is_some() && st.subscriptions.contains(uri)
        };
        let mut sent = 0;
        if legacy {
            self.send(notification(
                "notifications/resources/updated",
                json!({"uri": uri}),
            ))
            .await;
            sent += 1;
        }
        for id in self.listeners_for("", Some(uri)) {
            let p = json!({"uri": uri, "_meta": {SUBSCRIPTION_ID_KEY: id}});
            self.send(notification("notifications/resources/updated", p))
                .await;
            sent += 1;
        }
        sent
    }

    async fn run_async(self: Rc<Self>, ctx: Ctx, name: &'static str, args: Value) -> RpcResult {
        let sleep = |ms: u64| Timer::after(Duration::from_millis(ms));
        if let Some(work) = task_store::work_of(name, &args) {
            return work.await;
        }
        Ok(match name {
            "slow" => {
                let (secs, steps) = match (
                    tools::opt_num(&args, "seconds"),
                    tools::opt_num(&args, "steps"),
                ) {
                    (Ok(s), Ok(n)) => (
                        s.unwrap_or(2.0).clamp(0.0, 600.0),
                        n.unwrap_or(10.0).clamp(1.0, 1000.0) as u64,
                    ),
                    (Err(e), _) | (_, Err(e)) => return Ok(tool_error(e)),
                };
                let each = Duration::from_secs_f64(secs / steps as f64);
                for i in 1..=steps {
                    Timer::after(each).await;
                    self.progress(
                        &ctx,
                        i as f64,
                        steps as f64,
                        &format!("step {i} of {steps}"),
                    )
                    .await;
                }
                self.progress_settle(&ctx).await;
                tool_text(format!("Finished after {secs} s."))
            }
            "test_tool_with_progress" => {
                for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        sleep(50).await;
                    }
                    self.progress(&ctx, p, 100.0, &format!("{p}% done")).await;
                }
                self.progress_settle(&ctx).await;
                tool_text("Progress test completed.")
            }
            "test_tool_with_logging" => {
                for (i, m) in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                .into_iter()
                .enumerate()
                {
                    if i > 0 {
                        sleep(50).await;
                    }
                    self.log(&ctx, "info", m.into()).await;
                }
                tool_text("Logging test completed.")
            }
            "test_logging_tool" => {
                self.log(&ctx, "info", "test_logging_tool was called".into())
                    .await;
                tool_text("Logged one message (if the client asked for logs).")
            }
            "test_reconnection" => {
                sleep(100).await;
                tool_text("Reconnection test completed.")
            }
            "toggle_tool" => {
                let on = {
                    let mut st = self.st.borrow_mut();
                    st.toggled = !st.toggled;
                    st.toggled
                };
                self.list_changed("tools").await;
                tool_text(if on {
                    "dynamic_tool added."
                } else {
                    "dynamic_tool removed."
                })
            }
            "test_trigger_tool_change" => {
                self.list_changed("tools").await;
                tool_text("Sent notifications/tools/list_changed.")
            }
            "test_trigger_prompt_change" => {
                self.list_changed("prompts").await;
                tool_text("Sent notifications/prompts/list_changed.")
            }
            "update_resource" => {
                let uri = args
                    .get("uri")
                    .and_then(Value::as_str)
                    .unwrap_or(resources::WATCHED)
                    .to_string();
                if !resources::exists(&uri) {
                    return Ok(tool_error(format!("unknown resource: {uri}")));
                }
                if uri == resources::WATCHED {
                    self.st.borrow_mut().watched_version += 1;
                }
                let sent = self.resource_updated(&uri).await;
                tool_text(format!(
                    "Updated {uri}{}.",
                    if sent > 0 {
                        "; notified subscribers"
                    } else {
                        " (nobody subscribed)"
                    }
                ))
            }
            _ => {
                return Err(RpcError::new(
                    METHOD_NOT_FOUND,
                    format!("unknown tool: {name}"),
                ))
            }
        })
    }
}

/// Removes a server→client request from the pending table when its waiter goes
/// away; if it was never answered, tells the client to stop working on it.
struct PendingGuard {
    srv: Rc<Server>,
    id: u64,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        if self.srv.st.borrow_mut().pending.remove(&self.id).is_some() {
            let n = notification(
                "notifications/cancelled",
                json!({"requestId": self.id, "reason": "the request that needed this answer was cancelled or timed out"}),
            );
            let _ = self.srv.out.try_send(Out::Line(n.to_string()));
        }
    }
}

/// Drops a modern listener when its `subscriptions/listen` request ends.
struct ListenerGuard {
    srv: Rc<Server>,
    key: String,
}

impl Drop for ListenerGuard {
    fn drop(&mut self) {
        self.srv.st.borrow_mut().listeners.remove(&self.key);
    }
}

fn encode_cursor(n: usize) -> String {
    wire::base64(format!("mcpx-example:{n}").as_bytes())
}

fn decode_cursor(c: &str) -> Option<usize> {
    let b = wire::base64_decode(c)?;
    std::str::from_utf8(&b)
        .ok()?
        .strip_prefix("mcpx-example:")?
        .parse()
        .ok()
}

pub(super) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
