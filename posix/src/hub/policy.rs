//! The hub's calls into [`crate::policy`], at the points its module doc
//! lists: per-principal catalogs and tool search on `tools/list` and
//! `tools/call`, rate limits before forwarding, argument validation, trust
//! marks on annotations, one audit line and metric sample per answered
//! tool call, prompt get, resource read, completion and relayed
//! sampling/elicitation, the elicitation-answer check, the per-request caps
//! on progress and log notifications, and per-principal `list_changed` on
//! listen streams.
//!
//! With no audit and `"metrics": false` nothing is tracked per request;
//! with no rate limit configured the limiter takes no bucket (the
//! "policy off" hot path is a few branches).

use mcpx_core::error::ErrorCode;
use mcpx_core::method::Method;
use std::collections::HashMap;
use std::ops::Range;

use serde_json::{json, Value};

use crate::policy::ratelimit::{Class, Notification, NotificationBudget};
use crate::policy::search::{self, Index, MetaCall};
use crate::policy::{audit, metrics, OutputCheck, Policy, UntrustedAnnotations};

use super::catalog::{Entry, Kind};
use super::request::Refusal;
use super::Level;
use super::shape::{self, Rev, RevExt};
use super::wire::{self, Msg};
use super::{ClientId, ConfigError, Hub, HubOptions, IdKey, UpstreamId};

/// The `_meta` key carrying an untrusted server's name on its tools
/// (`tools-annotations-untrusted`).
pub(super) const PROVENANCE_KEY: &str = "io.github.mcpx/provenance";

/// The policy principal of a hub client: `"stdio"` for the stdio client,
/// a static token's name, else the HTTP layer's principal as it is.
pub(super) fn principal_name(bound: &[u8]) -> &str {
    match bound {
        b"mcpx-local" => "stdio",
        p => {
            let s = std::str::from_utf8(p).unwrap_or("");
            s.strip_prefix("token:").unwrap_or(s)
        }
    }
}

/// The metric label and log word of a per-request notification cap.
fn notification_label(kind: Notification) -> &'static str {
    match kind {
        Notification::Progress => "progress",
        Notification::Log => "log",
    }
}

/// The metric label of an audited outcome.
fn metrics_outcome(o: &audit::Outcome<'_>) -> metrics::Outcome {
    match o {
        audit::Outcome::Result => metrics::Outcome::Result,
        audit::Outcome::ToolError => metrics::Outcome::ToolError,
        audit::Outcome::Error { .. } => metrics::Outcome::Error,
        audit::Outcome::Refused { .. } => metrics::Outcome::Refused,
    }
}

/// A request being audited or metered until its answer.
struct Open {
    start_ms: u64,
    method: &'static str,
    principal: String,
    revision: &'static str,
    server: String,
    name: String,
    original: String,
    arguments: Option<Vec<u8>>,
    bytes_in: u64,
    /// Refused by this limit (set before the refusal is answered).
    refused: Option<String>,
    /// The pipeline stage that refused it (`stages`).
    stage: Option<audit::Stage>,
}

/// The name, or URI, a tracked request `m` asks for.
fn asked(m: &Msg) -> String {
    let at: &[&[&str]] = match m.call {
        Method::ResourcesRead => &[&["uri"]],
        Method::CompletionComplete => &[&["ref", "name"], &["ref", "uri"]],
        _ => &[&["name"]],
    };
    at.iter().find_map(|path| m.param(path).and_then(|r| wire::string_at(m.raw, r))).unwrap_or_default()
}

/// Relayed requests that get an audit line.
fn audited_relay(m: Method<'_>) -> bool {
    matches!(m, Method::SamplingCreateMessage | Method::ElicitationCreate)
}

/// Methods that get an audit line and a metric sample.
fn tracked(m: Method<'_>) -> bool {
    matches!(m, Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead | Method::CompletionComplete)
}

/// The policy state of the hub.
pub(super) struct HubPolicy {
    pub(super) p: Policy,
    /// Per-principal catalogs are configured.
    pub(super) restricts: bool,
    untrusted: UntrustedAnnotations,
    /// Open tracked requests (bounded by `cap`; the oldest is dropped).
    open: HashMap<(ClientId, IdKey), Open>,
    cap: usize,
    /// Unix ms at hub time 0, for audit timestamps.
    epoch_ms: u64,
    /// Tool-search indexes per catalog entry: (tools generation, index).
    indexes: HashMap<usize, (u32, Index)>,
    /// Progress counts per upstream request (bounded by `cap`).
    budgets: HashMap<(UpstreamId, u64), NotificationBudget>,
    /// Relayed sampling/elicitation requests until the answer their
    /// upstream gets, by (upstream, its request id as raw JSON), with an
    /// elicitation's `requestedSchema` when its answers are validated;
    /// bounded by `cap` (the oldest is dropped).
    relays: HashMap<(UpstreamId, Vec<u8>), (Open, Option<Value>)>,
    /// One `debug` line per tracked request (while mcpx logs at debug).
    log_calls: bool,
}

impl HubPolicy {
    pub fn new(opts: &HubOptions) -> Result<HubPolicy, ConfigError> {
        let p = Policy::new(&opts.policy).map_err(|e| ConfigError::Audit(e.to_string()))?;
        let epoch_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        Ok(HubPolicy {
            restricts: !p.catalogs.entries.is_empty(),
            untrusted: opts.policy.untrusted_annotations,
            p,
            open: HashMap::new(),
            cap: opts.max_pending.saturating_mul(2).max(16),
            epoch_ms,
            indexes: HashMap::new(),
            budgets: HashMap::new(),
            relays: HashMap::new(),
            log_calls: false,
        })
    }

    /// Are tool calls remembered until their answer (audit, metrics, or
    /// output validation need the call's names then)?
    fn tracking(&self) -> bool {
        self.log_calls || self.p.audit.is_some() || self.p.metrics.is_some() || self.p.validate.as_ref().is_some_and(|v| v.output != OutputCheck::Off)
    }

    /// The Prometheus text of the metrics (`None` with `"metrics": false`).
    pub fn metrics_text(&mut self, sessions: usize, connections: usize, queues: &[(&str, usize)]) -> Option<String> {
        let m = self.p.metrics.as_mut()?;
        m.load(sessions, connections, queues);
        Some(m.registry.render())
    }

    pub fn metrics_json(&self) -> Option<Value> {
        self.p.metrics.as_ref().map(|m| m.registry.to_json())
    }
}

/// A `tools/call` after the meta-tools: the exposed name to call, and the
/// edit of the message that makes it a plain call of that tool.
pub(super) struct ToolCall {
    pub name: String,
    name_at: Range<usize>,
    /// `mcpx_call_tool`: the outer `arguments` replaced by the inner ones.
    arguments: Option<(Range<usize>, Vec<u8>)>,
}

impl ToolCall {
    /// The edits forwarding this call to the upstream's tool `original`.
    pub fn edits(self, original: &str) -> Vec<(Range<usize>, Vec<u8>)> {
        let mut e = vec![(self.name_at, wire::quote(original))];
        e.extend(self.arguments);
        e
    }
}

impl Hub {
    pub(super) fn policy_principal(&self, c: ClientId) -> &str {
        self.clients.get(&c).map_or("", |cl| principal_name(&cl.principal))
    }

    /// Does client `c` get the tool-search meta-tools instead of the list?
    pub(super) fn tool_search(&self, c: ClientId) -> bool {
        self.policy.restricts && self.policy.p.catalogs.tool_search(self.policy_principal(c))
    }

    /// The tool-search meta-tools, for a client listed those instead of
    /// its tools.
    pub(super) fn meta_listing(&self, c: ClientId, k: Kind, rev: Rev) -> Option<Vec<Value>> {
        if k != Kind::Tools || !self.tool_search(c) {
            return None;
        }
        let Value::Array(tools) = search::meta_tools() else { return None };
        Some(tools.iter().map(|t| shape::item(t, &rev.features())).collect())
    }

    /// Catalog entry `e` as a client on `rev` is listed it.
    pub(super) fn listed_item(&self, e: &Entry, rev: Rev) -> Value {
        let f = rev.features();
        let mut item = e.listed(&f);
        self.mark_trust(e, &mut item, f.item_meta);
        item
    }

    /// An untrusted server's tool annotations carry its name in `_meta`, or
    /// are removed: when so configured, and for a revision whose items
    /// have no `_meta` (requirement: tools-annotations-untrusted).
    fn mark_trust(&self, e: &Entry, item: &mut Value, has_meta: bool) {
        if self.ups[e.up].spec.trusted || item.get("annotations").is_none() {
            return;
        }
        let Some(o) = item.as_object_mut() else { return };
        if self.policy.untrusted == UntrustedAnnotations::Remove || !has_meta {
            o.remove("annotations");
            return;
        }
        if let Some(m) = o.entry("_meta").or_insert_with(|| json!({})).as_object_mut() {
            m.insert(PROVENANCE_KEY.into(), json!({ "server": self.ups[e.up].spec.name, "trusted": false }));
        }
    }

    /// Step 1 of a `tools/call`: a meta-tool call of a tool-search client
    /// is answered here (`None`) or turned into the call of the tool it
    /// names.
    pub(super) fn policy_meta_tool(&mut self, c: ClientId, m: &Msg, name_at: Range<usize>, name: String) -> Result<Option<ToolCall>, Refusal> {
        let plain = ToolCall { name, name_at, arguments: None };
        if !self.tool_search(c) || !plain.name.starts_with("mcpx_") {
            return Ok(Some(plain));
        }
        let args = m.param(&["arguments"]).and_then(|r| serde_json::from_slice::<Value>(&m.raw[r]).ok()).unwrap_or_else(|| json!({}));
        let Some(parsed) = MetaCall::parse(&plain.name, &args) else { return Ok(Some(plain)) };
        // A call through the meta-tool is admitted as the call of the tool
        // it names (`stages`); one answered here is admitted here.
        if !matches!(parsed, Ok(MetaCall::Call { .. })) {
            let id = m.id_bytes().unwrap_or(b"null");
            self.admit(c, id, Class::ToolCall, None, &plain.name)?;
        }
        let result = match parsed {
            Err(why) => return Err(Refusal(ErrorCode::InvalidParams, format!("Invalid params: {why}"), None)),
            Ok(MetaCall::Call { name, .. }) => {
                let inner = m.param(&["arguments", "arguments"]).map_or_else(|| b"{}".to_vec(), |r| m.raw[r].to_vec());
                let outer = m.param(&["arguments"]).expect("parsed above");
                return Ok(Some(ToolCall { name: name.to_string(), name_at: plain.name_at, arguments: Some((outer, inner)) }));
            }
            Ok(MetaCall::Search { query, limit }) => {
                let index = self.search_index(c);
                index.result(&index.search(query, limit))
            }
            Ok(MetaCall::Describe { name }) => match self.search_index(c).describe(name) {
                Some(tool) => json!({ "content": [{ "type": "text", "text": tool.to_string() }], "structuredContent": tool }),
                None => json!({ "content": [{ "type": "text", "text": format!("Unknown tool: {name} (search with {})", search::SEARCH) }], "isError": true }),
            },
        };
        self.answer_result(c, m.id_bytes().unwrap_or(b"null"), &serde_json::to_vec(&result).unwrap_or_default());
        Ok(None)
    }

    /// The tool-search index of client `c`'s catalog, rebuilt when the
    /// tools changed.
    fn search_index(&mut self, c: ClientId) -> &Index {
        let entry = self.policy.p.catalogs.index_of(self.policy_principal(c)).unwrap_or(usize::MAX);
        let generation = self.catalog.generation[Kind::Tools.idx()];
        if self.policy.indexes.get(&entry).is_none_or(|(g, _)| *g != generation) {
            let tools: Vec<Value> = self
                .visible_view(c, Kind::Tools)
                .into_iter()
                .map(|e| {
                    let mut item = e.item.clone();
                    self.mark_trust(e, &mut item, true);
                    item
                })
                .collect();
            self.policy.indexes.insert(entry, (generation, Index::new(&tools)));
        }
        &self.policy.indexes[&entry].1
    }

    /// Stage *validate* of a `tools/call` to tool `original` of `u`: its
    /// arguments against the tool's `inputSchema`.
    #[cfg(feature = "validate")]
    pub(super) fn check_arguments(&mut self, m: &Msg, call: &ToolCall, u: UpstreamId, original: &str) -> Result<(), Refusal> {
        let server = &self.ups[u].spec.name;
        if !self.policy.p.validate.as_ref().is_some_and(|v| v.arguments) || !self.policy.p.validates(server) {
            return Ok(());
        }
        let at = match &call.arguments {
            Some((_, inner)) => Some(inner.as_slice()),
            None => m.param(&["arguments"]).map(|r| &m.raw[r]),
        };
        // Requirement: tools-server-sec-validate-inputs
        let args = at.and_then(|b| serde_json::from_slice::<Value>(b).ok()).unwrap_or_else(|| json!({}));
        self.policy.p.validators.check_arguments(server, original, &args).map_err(|f| {
            Refusal(crate::policy::validate::Failure::CODE, format!("{}: {f}", call.name), Some(f.data()))
        })
    }

    #[cfg(not(feature = "validate"))]
    pub(super) fn check_arguments(&mut self, _: &Msg, _: &ToolCall, _: UpstreamId, _: &str) -> Result<(), Refusal> {
        Ok(())
    }

    /// A tool result `res` for client `c`'s call `id`: its
    /// `structuredContent` against the tool's `outputSchema` when validated;
    /// a mismatch is logged, or (`"output": "refuse"`) the result replaced
    /// by a tool error naming it.
    #[cfg(feature = "validate")]
    pub(super) fn policy_check_output(&mut self, c: ClientId, id: &[u8], res: &[u8]) -> Option<Vec<u8>> {
        let check = self.policy.p.validate.as_ref().map_or(OutputCheck::Off, |v| v.output);
        if check == OutputCheck::Off {
            return None;
        }
        let o = self.policy.open.get(&(c, IdKey::new(id)))?;
        if !self.policy.p.validates(&o.server) {
            return None;
        }
        let r = wire::find(res, 0..res.len(), &["structuredContent"])?;
        let content: Value = serde_json::from_slice(&res[r]).ok()?;
        let f = self.policy.p.validators.check_structured(&o.server, &o.original, &content).err()?;
        let msg = format!("server '{}': tool '{}' returned {f}", o.server, o.original);
        self.log(super::Level::Warn, msg.clone());
        (check == OutputCheck::Refuse).then(|| serde_json::to_vec(&json!({ "content": [{ "type": "text", "text": msg }], "isError": true })).unwrap_or_default())
    }

    #[cfg(not(feature = "validate"))]
    pub(super) fn policy_check_output(&mut self, _: ClientId, _: &[u8], _: &[u8]) -> Option<Vec<u8>> {
        None
    }

    /// Upstream `u` listed `k`: compile its tools' schemas when validated.
    pub(super) fn policy_listed(&mut self, u: UpstreamId, k: Kind) {
        #[cfg(feature = "validate")]
        if k == Kind::Tools && self.policy.p.validates(&self.ups[u].spec.name) {
            let server = self.ups[u].spec.name.clone();
            let problems = self.policy.p.validators.listed(&server, self.catalog.items(u, k));
            for (tool, target, e) in problems {
                self.log(super::Level::Warn, format!("server '{server}': tool '{tool}': its {} {e}; its calls will be refused", target.schema_key()));
            }
        }
        let _ = (u, k);
    }

    /// A sampling, elicitation or roots request `m` of upstream `u`, before
    /// it is relayed: its rate limits (principal: the client it goes to,
    /// `c`, when known). The refusal's text is the error `u` gets, and it
    /// is audited; an admitted request is tracked until `u`'s answer.
    pub(super) fn policy_admit_server_request(&mut self, u: UpstreamId, c: Option<ClientId>, m: &Msg) -> Result<(), String> {
        let r = self.limit(c, Class::ServerRequest, Some(u), "");
        let Some(method) = Some(m.call).filter(|c| audited_relay(*c)).and_then(|c| c.name()) else { return r.map_err(|r| r.to_string()) };
        let audited = self.policy.p.audit.is_some() || self.policy.p.metrics.is_some();
        let validated = m.call == Method::ElicitationCreate && self.policy.p.validate.as_ref().is_some_and(|v| v.elicitation) && self.policy.p.validates(&self.ups[u].spec.name);
        if !audited && !validated {
            return r.map_err(|r| r.to_string());
        }
        let cl = c.and_then(|c| self.clients.get(&c));
        let open = Open {
            start_ms: self.now_ms,
            method,
            principal: cl.map_or("", |cl| principal_name(&cl.principal)).to_string(),
            revision: cl.map_or("", |cl| if cl.is_modern() { super::request::MODERN.as_str() } else { cl.rev().as_str() }),
            server: self.ups[u].spec.name.clone(),
            name: String::new(),
            original: String::new(),
            arguments: None,
            bytes_in: m.raw.len() as u64,
            refused: None,
            stage: None,
        };
        let schema = validated.then(|| m.param(&["requestedSchema"]).and_then(|r| serde_json::from_slice(&m.raw[r]).ok())).flatten();
        match r {
            Ok(()) => {
                let relays = &mut self.policy.relays;
                if relays.len() >= self.policy.cap {
                    if let Some(k) = relays.iter().min_by_key(|(_, (o, _))| o.start_ms).map(|(k, _)| k.clone()) {
                        relays.remove(&k);
                    }
                }
                relays.insert((u, m.id_bytes().unwrap_or(b"null").to_vec()), (open, schema));
                Ok(())
            }
            Err(refusal) => {
                self.record(&open, audit::Outcome::Refused { limit: &refusal.limit }, 0);
                Err(refusal.to_string())
            }
        }
    }

    /// `bytes` go to upstream `u`: when they answer a tracked relayed
    /// request, it gets its audit line, and an elicitation's accepted
    /// content is checked against its `requestedSchema` — an invalid one
    /// is replaced by an error naming the failing property (a valid one
    /// passes as it is). Only looked into while a relay of `u` is open.
    pub(super) fn policy_to_upstream(&mut self, u: UpstreamId, bytes: Vec<u8>) -> Vec<u8> {
        if self.policy.relays.is_empty() {
            return bytes;
        }
        let all = 0..bytes.len();
        if wire::find(&bytes, all.clone(), &["method"]).is_some() {
            return bytes;
        }
        let Some(id) = wire::find(&bytes, all.clone(), &["id"]) else { return bytes };
        let Some((open, schema)) = self.policy.relays.remove(&(u, bytes[id.clone()].to_vec())) else { return bytes };
        let bytes = match schema.and_then(|schema| self.check_elicitation_answer(&open.server, &schema, &bytes)) {
            Some(error) => wire::error(Some(&bytes[id]), error.0, &error.1, error.2),
            None => bytes,
        };
        let code = wire::find(&bytes, all, &["error", "code"]).and_then(|r| std::str::from_utf8(&bytes[r]).ok()?.parse::<i64>().ok());
        let outcome = code.map_or(audit::Outcome::Result, |code| audit::Outcome::Error { code });
        self.record(&open, outcome, bytes.len() as u64);
        bytes
    }

    /// The error an elicitation answer `bytes` to `server` gets instead, if
    /// its accepted content breaks the `requestedSchema` `schema`.
    #[cfg(feature = "validate")]
    fn check_elicitation_answer(&mut self, server: &str, schema: &Value, bytes: &[u8]) -> Option<Refusal> {
        let all = 0..bytes.len();
        if wire::find(bytes, all.clone(), &["result", "action"]).is_none_or(|r| &bytes[r] != b"\"accept\"") {
            return None;
        }
        let content = wire::find(bytes, all, &["result", "content"]).and_then(|r| serde_json::from_slice(&bytes[r]).ok()).unwrap_or_else(|| json!({}));
        self.check_accepted(schema, &content).map(|f| self.elicitation_refusal(&format!("the client's answer to server '{server}'"), f))
    }

    /// The elicitation schemas of a 2026-07-28 server's `inputRequests`
    /// whose answers are checked (`"validate": {"elicitation": true}` for
    /// `u`): `{"server", "schemas": {key: requestedSchema}}`, or `None`.
    #[cfg(feature = "validate")]
    pub(super) fn policy_elicitation_schemas(&self, u: UpstreamId, requests: &Value) -> Option<Value> {
        let server = &self.ups[u].spec.name;
        if !(self.policy.p.validate.as_ref().is_some_and(|v| v.elicitation) && self.policy.p.validates(server)) {
            return None;
        }
        let schemas: serde_json::Map<String, Value> = requests
            .as_object()?
            .iter()
            .filter(|(_, r)| r.get("method").and_then(Value::as_str).and_then(Method::known) == Some(Method::ElicitationCreate))
            .filter_map(|(k, r)| Some((k.clone(), r.pointer("/params/requestedSchema")?.clone())))
            .collect();
        (!schemas.is_empty()).then(|| json!({ "server": server, "schemas": schemas }))
    }

    /// The error a retry gets instead of reaching its server when one of its
    /// `inputResponses` accepts content that breaks the requestedSchema it
    /// answers (`schemas` from [`Self::policy_elicitation_schemas`]).
    #[cfg(feature = "validate")]
    pub(super) fn policy_check_input_responses(&mut self, schemas: &Value, responses: Option<&Value>) -> Option<Refusal> {
        let server = schemas.get("server").and_then(Value::as_str).unwrap_or_default().to_string();
        for (key, schema) in schemas.get("schemas").and_then(Value::as_object)? {
            let Some(answer) = responses.and_then(|r| r.get(key)) else { continue };
            if answer.get("action").and_then(Value::as_str) != Some("accept") {
                continue;
            }
            let content = answer.get("content").cloned().unwrap_or_else(|| json!({}));
            if let Some(f) = self.check_accepted(schema, &content) {
                let what = format!("inputResponses.{key}, the client's answer to server '{server}',");
                let Refusal(code, msg, data) = self.elicitation_refusal(&what, f);
                let msg = format!("Invalid params: {msg}; nothing was sent to the server. Send the request again without requestState to start over");
                return Some(Refusal(code, msg, data));
            }
        }
        None
    }

    #[cfg(feature = "validate")]
    fn elicitation_refusal(&mut self, what: &str, f: crate::policy::validate::Failure) -> Refusal {
        let msg = format!("{what} broke its requestedSchema: {f}");
        self.log(super::Level::Warn, msg.clone());
        Refusal(crate::policy::validate::Failure::CODE, msg, Some(f.data()))
    }

    /// Where accepted elicitation `content` breaks `schema`.
    // Requirement: elicitation-both-validate-against-schema, elicitation-client-validate-responses
    #[cfg(feature = "validate")]
    fn check_accepted(&mut self, schema: &Value, content: &Value) -> Option<crate::policy::validate::Failure> {
        self.policy.p.validators.check_once(crate::policy::validate::Target::ElicitationAnswer, schema, content).err()
    }

    #[cfg(not(feature = "validate"))]
    fn check_elicitation_answer(&mut self, _: &str, _: &Value, _: &[u8]) -> Option<Refusal> {
        None
    }

    #[cfg(not(feature = "validate"))]
    pub(super) fn policy_elicitation_schemas(&self, _: UpstreamId, _: &Value) -> Option<Value> {
        None
    }

    #[cfg(not(feature = "validate"))]
    pub(super) fn policy_check_input_responses(&mut self, _: &Value, _: Option<&Value>) -> Option<Refusal> {
        None
    }

    /// A progress notification of upstream `u` for its request `id`: within
    /// `progressPerRequest`, or dropped.
    pub(super) fn policy_admit_progress(&mut self, u: UpstreamId, id: u64) -> bool {
        if self.policy.p.limiter.config().progress_per_request.is_none() {
            return true;
        }
        let admitted = self.admit_notification(u, id, Notification::Progress);
        self.notification_verdict(u, Notification::Progress, admitted)
    }

    /// A log message of upstream `u`. The wire does not say which request
    /// it is about, so it counts against every client request of `u` in
    /// flight, and is dropped once all of them are over `logsPerRequest`
    /// (`logging-impl-validate-control`). A message while none is in
    /// flight is no request's and is not capped here.
    pub(super) fn policy_admit_log(&mut self, u: UpstreamId) -> bool {
        if self.policy.p.limiter.config().logs_per_request.is_none() {
            return true;
        }
        let ids: Vec<u64> = self.pending.calls_to(u).map(|(id, _, _)| id).collect();
        let mut admitted = ids.is_empty();
        for id in ids {
            admitted |= self.admit_notification(u, id, Notification::Log);
        }
        self.notification_verdict(u, Notification::Log, admitted)
    }

    /// Counts one notification of `kind` against `u`'s request `id`: false
    /// when over its cap (logged once per request).
    fn admit_notification(&mut self, u: UpstreamId, id: u64, kind: Notification) -> bool {
        let budgets = &mut self.policy.budgets;
        if budgets.len() >= self.policy.cap {
            // Requests no longer pending need no count (ids never repeat).
            let pending = &self.pending;
            budgets.retain(|(u, id), _| pending.contains(*u, *id));
        }
        let cfg = self.policy.p.limiter.config();
        let Err(d) = budgets.entry((u, id)).or_default().admit(kind, cfg) else { return true };
        if d.first {
            let server = &self.ups[u].spec.name;
            let what = notification_label(kind);
            self.out.push_back(super::Output::Log(super::Level::Warn, format!("server '{server}': {what} notifications of one request over {}; the rest is dropped", d.limit)));
        }
        false
    }

    /// A dropped notification is counted in the metrics; `admitted` as is.
    fn notification_verdict(&mut self, u: UpstreamId, kind: Notification, admitted: bool) -> bool {
        if let (false, Some(m)) = (admitted, &mut self.policy.p.metrics) {
            m.notification_dropped(&self.ups[u].spec.name, notification_label(kind));
        }
        admitted
    }

    /// A tracked request arrives (before it is routed).
    pub(super) fn policy_begin(&mut self, c: ClientId, m: &Msg, modern: bool) {
        let Some(method) = Some(m.call).filter(|c| tracked(*c)).and_then(|c| c.name()) else { return };
        if !self.policy.tracking() {
            return;
        }
        let Some(id) = m.id_bytes() else { return };
        if self.policy.open.len() >= self.policy.cap {
            if let Some(k) = self.policy.open.iter().min_by_key(|(_, o)| o.start_ms).map(|(k, _)| k.clone()) {
                self.policy.open.remove(&k);
            }
        }
        let Some(cl) = self.clients.get(&c) else { return };
        let revision = if modern { super::request::MODERN.as_str() } else { cl.rev().as_str() };
        // Kept for the audit line's digest only: metrics alone need no copy.
        let audited = self.policy.p.audit.is_some() && m.call == Method::ToolsCall;
        let arguments = audited.then(|| m.param(&["arguments"]).map_or_else(|| b"{}".to_vec(), |r| m.raw[r].to_vec()));
        let open = Open {
            start_ms: self.now_ms,
            method,
            principal: principal_name(&cl.principal).to_string(),
            revision,
            server: String::new(),
            // What was asked, so that a refusal's line names it; the exposed
            // name once resolved (`policy_resolved`).
            name: asked(m),
            original: String::new(),
            arguments,
            bytes_in: m.raw.len() as u64,
            refused: None,
            stage: None,
        };
        self.policy.open.insert((c, IdKey::new(id)), open);
    }

    /// Request `id` of client `c` was refused by `limit` (stage *admit*).
    pub(super) fn policy_refused_by(&mut self, c: ClientId, id: &[u8], limit: &str) {
        if let Some(o) = self.policy.open.get_mut(&(c, IdKey::new(id))) {
            o.refused = Some(limit.to_string());
        }
    }

    /// Request `id` of client `c` was refused at `stage`: its audit line
    /// names the stage.
    pub(super) fn policy_refused_at(&mut self, c: ClientId, id: &[u8], stage: audit::Stage) {
        if let Some(o) = self.policy.open.get_mut(&(c, IdKey::new(id))) {
            o.stage = Some(stage);
        }
    }

    /// A tracked request was resolved to `original` of upstream `u`,
    /// exposed as `name`.
    pub(super) fn policy_resolved(&mut self, c: ClientId, m: &Msg, u: UpstreamId, name: &str, original: &str) {
        let Some(id) = m.id_bytes() else { return };
        if let Some(o) = self.policy.open.get_mut(&(c, IdKey::new(id))) {
            o.server.clone_from(&self.ups[u].spec.name);
            o.name = name.to_string();
            o.original = original.to_string();
        }
    }

    /// The answer (`len` bytes, saying `outcome`) to client `c`'s request
    /// `id` is written: a tracked request gets its audit line and metric
    /// sample, from what the hub knows of the answer (its bytes are not
    /// read again).
    pub(super) fn policy_answered(&mut self, c: ClientId, id: Option<&[u8]>, len: usize, outcome: super::Outcome) {
        if self.policy.open.is_empty() {
            return;
        }
        let Some(o) = id.and_then(|id| self.policy.open.remove(&(c, IdKey::new(id)))) else { return };
        let outcome = match (&o.refused, outcome) {
            (Some(limit), _) => audit::Outcome::Refused { limit },
            (None, super::Outcome::Error { code, .. }) => audit::Outcome::Error { code },
            (None, super::Outcome::ToolError) => audit::Outcome::ToolError,
            (None, super::Outcome::Result) => audit::Outcome::Result,
        };
        self.record(&o, outcome, len as u64);
    }

    /// The metric sample and audit line of tracked request `o`.
    fn record(&mut self, o: &Open, outcome: audit::Outcome<'_>, bytes_out: u64) {
        let duration_ms = self.now_ms.saturating_sub(o.start_ms);
        if let Some(m) = &mut self.policy.p.metrics {
            m.request(o.method, &o.server, metrics_outcome(&outcome), duration_ms, o.bytes_in, bytes_out);
        }
        let record = audit::Record {
            time_ms: self.policy.epoch_ms + o.start_ms,
            method: o.method,
            principal: &o.principal,
            client_revision: o.revision,
            server: &o.server,
            name: &o.name,
            original_name: &o.original,
            arguments: o.arguments.as_deref(),
            outcome,
            stage: o.stage,
            duration_ms,
            bytes_in: o.bytes_in,
            bytes_out,
        };
        self.policy.p.audit(&record);
        if self.policy.log_calls {
            let line = record.summary();
            self.log(Level::Debug, line);
        }
    }

    /// Log one `debug` line per call, relayed sampling and elicitation
    /// request (the runtime turns it on while its log level is debug).
    pub fn set_call_log(&mut self, on: bool) {
        self.policy.log_calls = on;
    }

    /// Client `c` is gone: forget its tracked requests.
    pub(super) fn policy_client_gone(&mut self, c: ClientId) {
        if !self.policy.open.is_empty() {
            self.policy.open.retain(|(x, _), _| *x != c);
        }
    }

    /// The Prometheus text for `/metrics` (`None` with `"metrics": false`).
    pub fn metrics_text(&mut self, sessions: usize, connections: usize) -> Option<String> {
        let ups: Vec<(String, bool, u64)> = self.ups.iter().map(|u| (u.spec.name.clone(), u.is_ready(), u64::from(u.starts.saturating_sub(1)))).collect();
        if let Some(m) = &mut self.policy.p.metrics {
            for (name, up, restarts) in &ups {
                m.upstream(name, *up, *restarts);
            }
        }
        let queues = [("pending", self.pending.len()), ("output", self.out.len())];
        self.policy.metrics_text(sessions, connections, &queues)
    }

    /// The metrics as JSON, for `/status`.
    pub(super) fn metrics_json(&self) -> Option<Value> {
        self.policy.metrics_json()
    }
}
