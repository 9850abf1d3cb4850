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
use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use serde_json::{json, Value};

use crate::policy::ratelimit::{self, Notification, NotificationBudget};
use crate::policy::search::{self, Index, MetaCall};
use crate::policy::{audit, metrics, OutputCheck, Policy, UntrustedAnnotations};

use super::catalog::{Entry, Kind};
use super::request::Refusal;
use super::pending::Pending;
use super::shape::{self, Rev, RevExt};
use super::tracked::{Records, Tracked};
use super::wire::{self, Msg};
use super::Level;
use super::{ClientId, ConfigError, HubOptions, UpstreamId, UpstreamSpec};

/// The `_meta` key carrying an untrusted server's name on its tools
/// (`tools-annotations-untrusted`).
pub(super) const PROVENANCE_KEY: &str = "io.github.mcpx/provenance";

/// The policy principal of a hub client: `"stdio"` for the stdio client,
/// a static token's name, else the HTTP layer's principal as it is.
pub(crate) fn principal_name(bound: &[u8]) -> &str {
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
#[derive(Default)]
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
    /// The decision on it, when it needed approval (`stages::approve`).
    approval: Option<String>,
    /// Its server ran it with the principal's own credentials.
    #[cfg(feature = "secrets")]
    own_credentials: bool,
}

/// The name, or URI, a tracked request `m` asks for, written into `out`
/// (whose room is reused: no allocation unless the name is escaped).
fn asked_into(m: &Msg, out: &mut String) {
    out.clear();
    let at: &[&[&str]] = match m.call {
        Method::ResourcesRead => &[&["uri"]],
        Method::CompletionComplete => &[&["ref", "name"], &["ref", "uri"]],
        _ => &[&["name"]],
    };
    if let Some(asked) = at.iter().find_map(|path| m.param(path)).and_then(|r| wire::str_at(m.raw, r)) {
        out.push_str(&asked);
    }
}

/// Relayed requests that get an audit line.
fn audited_relay(m: Method<'_>) -> bool {
    matches!(m, Method::SamplingCreateMessage | Method::ElicitationCreate)
}

/// Methods that get an audit line and a metric sample.
fn tracked(m: Method<'_>) -> bool {
    matches!(m, Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead | Method::CompletionComplete)
}

/// Where a finished request is written: metrics, audit, the status
/// page's activity, the debug line (borrowed from [`HubPolicy`] beside its
/// open records).
struct Books<'a> {
    p: &'a mut Policy,
    /// Unix ms at hub time 0, for audit timestamps.
    epoch_ms: u64,
    log_calls: bool,
    #[cfg(feature = "activity")]
    activity: &'a mut crate::policy::activity::Activity,
}

impl Books<'_> {
    /// The metric sample and audit line of tracked request `o`; its debug
    /// line to log (while calls are logged).
    fn record(&mut self, o: &Open, outcome: audit::Outcome<'_>, bytes_out: u64, now: u64) -> Option<Line> {
        let duration_ms = now.saturating_sub(o.start_ms);
        // Which identity reached the server: each principal's own credentials or the server's one.
        #[cfg(feature = "secrets")]
        let upstream_identity = (!o.server.is_empty()).then_some(if o.own_credentials { "principal" } else { "server" });
        if let Some(m) = &mut self.p.metrics {
            m.request(o.method, &o.server, metrics_outcome(&outcome), duration_ms, o.bytes_in, bytes_out);
            #[cfg(feature = "secrets")]
            if let Some(identity) = upstream_identity {
                m.upstream_identity(&o.server, identity);
            }
            #[cfg(feature = "activity")]
            if let Some(callers) = self.p.callers.as_mut().filter(|_| o.method == "tools/call") {
                // A name no visible tool has is the client's own: it earns no series.
                let tool = if o.server.is_empty() { crate::policy::callers::UNKNOWN } else { &o.name };
                callers.count(&mut m.registry, tool, &o.principal, metrics_outcome(&outcome));
            }
        }
        let record = audit::Record {
            time_ms: self.epoch_ms + o.start_ms,
            method: o.method,
            principal: &o.principal,
            client_revision: o.revision,
            server: &o.server,
            name: &o.name,
            original_name: &o.original,
            arguments: o.arguments.as_deref(),
            outcome,
            stage: o.stage,
            approval: o.approval.as_deref(),
            #[cfg(feature = "secrets")]
            upstream_identity,
            duration_ms,
            bytes_in: o.bytes_in,
            bytes_out,
        };
        #[cfg(feature = "activity")]
        {
            use crate::policy::activity::Call;
            let error = !matches!(record.outcome, audit::Outcome::Result);
            let call = (o.method == "tools/call").then(|| Call { time_ms: record.time_ms, principal: o.principal.as_str(), server: o.server.as_str(), tool: o.name.as_str(), outcome: metrics_outcome(&record.outcome).label(), duration_ms });
            self.activity.record(&o.server, error, duration_ms, now, call);
        }
        self.p.audit(&record);
        self.log_calls.then(|| (Level::Debug, record.summary()))
    }
}

/// The policy state of the hub.
pub(super) struct HubPolicy {
    pub(super) p: Policy,
    /// Per-principal catalogs are configured.
    pub(super) restricts: bool,
    untrusted: UntrustedAnnotations,
    /// Open tracked requests (bounded by `cap`; the oldest is dropped).
    open: Records<Open>,
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
    /// Each server's last minutes and the last tool calls (the page's).
    #[cfg(feature = "activity")]
    activity: crate::policy::activity::Activity,
}

impl HubPolicy {
    pub fn new(opts: &HubOptions) -> Result<HubPolicy, ConfigError> {
        let p = Policy::new(&opts.policy).map_err(|e| ConfigError::Audit(e.to_string()))?;
        let epoch_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let cap = opts.max_pending.saturating_mul(2).max(16);
        Ok(HubPolicy {
            restricts: !p.catalogs.entries.is_empty(),
            untrusted: opts.policy.untrusted_annotations,
            p,
            open: Records::new(cap),
            cap,
            epoch_ms,
            indexes: HashMap::new(),
            budgets: HashMap::new(),
            relays: HashMap::new(),
            log_calls: false,
            #[cfg(feature = "activity")]
            activity: Default::default(),
        })
    }

    /// Are tool calls remembered until their answer (audit, metrics, or
    /// output validation need the call's names then)?
    fn tracking(&self) -> bool {
        self.log_calls || self.p.audit.is_some() || self.p.metrics.is_some() || self.p.validate.as_ref().is_some_and(|v| v.output != OutputCheck::Off)
    }

    /// The Prometheus text of the metrics (`None` with `"metrics": false`):
    /// each upstream's (name, up, restarts), the load and the queues.
    pub fn metrics_text<'a>(&mut self, upstreams: impl Iterator<Item = (&'a str, bool, u64)>, sessions: usize, connections: usize, queues: &[(&str, usize)]) -> Option<String> {
        let m = self.p.metrics.as_mut()?;
        for (name, up, restarts) in upstreams {
            m.upstream(name, up, restarts);
        }
        m.load(sessions, connections, queues);
        #[cfg(feature = "activity")]
        if let Some(c) = &mut self.p.callers {
            c.flush(&mut m.registry);
        }
        Some(m.read().render())
    }

    /// The tracer's counts, sampled when `/metrics` is served.
    #[cfg(feature = "traces")]
    pub fn trace_counts(&mut self, n: super::trace::TraceCounts) {
        if let Some(m) = &mut self.p.metrics {
            m.trace_counts(n.dropped, n.exported, n.failed);
        }
    }

    /// A pinned definition of `server` changed (`kind`: its list).
    pub fn pin_changed(&mut self, server: &str, kind: &str) {
        if let Some(m) = &mut self.p.metrics {
            m.pin_changed(server, kind);
        }
    }

    /// A read of `server`'s skill file did not match its manifest (`skills`).
    #[cfg(feature = "skills")]
    pub fn skill_mismatch(&mut self, server: &str) {
        if let Some(m) = &mut self.p.metrics {
            m.skill_mismatch(server);
        }
    }

    /// The inspection of a definition of `server` found `finding`.
    pub fn pin_finding(&mut self, server: &str, finding: &str) {
        if let Some(m) = &mut self.p.metrics {
            m.pin_finding(server, finding);
        }
    }

    pub fn metrics_json(&self) -> Option<Value> {
        self.p.metrics.as_ref().map(|m| {
            m.to_json(|#[cfg_attr(not(feature = "activity"), allow(unused_variables))] r| {
                #[cfg(feature = "activity")]
                if let Some(c) = &self.p.callers {
                    c.add_unread(r);
                }
            })
        })
    }

    /// Each server's last minutes and the last tool calls, at `now`.
    #[cfg(feature = "activity")]
    pub fn activity_json(&self, now: u64) -> Value {
        self.activity.to_json(now)
    }
}

/// A `tools/call` after the meta-tools: the exposed name to call, and the
/// edit of the message that makes it a plain call of that tool.
pub(super) struct ToolCall<'m> {
    /// As the message spells it (borrowed from it unless escaped), or the
    /// name the catalog lists it under.
    pub name: Cow<'m, str>,
    name_at: Range<usize>,
    /// `mcpx_call_tool`: the outer `arguments` replaced by the inner ones.
    arguments: Option<(Range<usize>, Vec<u8>)>,
}

impl ToolCall<'_> {
    /// The call's arguments as sent upstream (the inner ones of a
    /// meta-tool's call), raw JSON; `None`: none given.
    pub fn arguments<'a>(&'a self, m: &'a Msg) -> Option<&'a [u8]> {
        match &self.arguments {
            Some((_, inner)) => Some(inner.as_slice()),
            None => m.param(&["arguments"]).map(|r| &m.raw[r]),
        }
    }

    /// `send` with the edits forwarding this call to the upstream's tool
    /// `original` (on the stack: the name is written as it is forwarded).
    pub fn forwarded<R>(&self, original: &str, send: impl FnOnce(&mut [(Range<usize>, wire::With<'_>)]) -> R) -> R {
        let name = (self.name_at.clone(), wire::With::Str(original));
        match &self.arguments {
            Some((r, inner)) => send(&mut [name, (r.clone(), wire::With::Raw(inner))]),
            None => send(&mut [name]),
        }
    }
}

/// A line for mcpx's log that a policy call asks the hub to write (before
/// what the hub writes next).
pub(super) type Line = (Level, String);

/// What policy knows of an upstream server: its configured name, and
/// whether its tool annotations are trusted.
#[derive(Clone, Copy)]
pub(super) struct Server<'a> {
    pub name: &'a str,
    pub trusted: bool,
}

impl<'a> Server<'a> {
    pub fn of(spec: &'a UpstreamSpec) -> Server<'a> {
        Server { name: &spec.name, trusted: spec.trusted }
    }
}

/// Who a tracked request is from or for: its principal and the revision
/// its audit line names.
#[derive(Clone, Copy)]
pub(super) struct Who<'a> {
    pub principal: &'a str,
    pub revision: &'static str,
}

/// A `tools/call` of a tool-search client, after the meta-tools.
pub(super) enum MetaTool<'m> {
    /// A call to forward (a plain one, or one through `mcpx_call_tool`).
    Call(ToolCall<'m>),
    /// A meta-tool answered here (`tool`: its name, for the rate limits),
    /// or the reason its arguments are wrong.
    Here { tool: String, asked: Result<Meta, String> },
}

/// A meta-tool call answered by the hub.
pub(super) enum Meta {
    Search { query: String, limit: usize },
    Describe { name: String },
}

/// The tools a tool-search client's index is built from: the catalog's
/// tools view, its generation, and the upstream servers by id.
pub(super) struct ToolsView<'a, S> {
    pub entries: &'a [Entry],
    pub generation: u32,
    pub server: S,
}

/// An upstream's notification under the per-request caps: `admitted` or
/// dropped, and the warnings to log (a request's first drop).
pub(super) struct Capped {
    pub admitted: bool,
    pub warns: Vec<Line>,
}

impl HubPolicy {
    /// Does `principal` get the tool-search meta-tools instead of the list?
    pub fn tool_search(&self, principal: &str) -> bool {
        self.restricts && self.p.catalogs.tool_search(principal)
    }

    /// May `principal` see tool `original` of `server`?
    pub fn tool_visible(&self, principal: &str, server: &str, original: &str) -> bool {
        !self.restricts || self.p.catalogs.visible(principal, server, original)
    }

    /// May `principal` see the prompts, resources and templates of `server`?
    pub fn server_visible(&self, principal: &str, server: &str) -> bool {
        !self.restricts || self.p.catalogs.server_visible(principal, server)
    }

    /// The tool-search meta-tools, for a principal listed those instead of
    /// its tools.
    pub fn meta_listing(&self, principal: &str, k: Kind, rev: Rev) -> Option<Vec<Value>> {
        if k != Kind::Tools || !self.tool_search(principal) {
            return None;
        }
        let Value::Array(tools) = search::meta_tools() else { return None };
        Some(tools.iter().map(|t| shape::item(t, &rev.features())).collect())
    }

    /// Catalog entry `e` of `server` as a client on `rev` is listed it.
    pub fn listed_item(&self, e: &Entry, server: Server<'_>, rev: Rev) -> Value {
        let f = rev.features();
        let mut item = e.listed(&f);
        self.mark_trust(server, &mut item, f.item_meta);
        item
    }

    /// An untrusted server's tool annotations carry its name in `_meta`, or
    /// are removed: when so configured, and for a revision whose items
    /// have no `_meta` (requirement: tools-annotations-untrusted).
    fn mark_trust(&self, server: Server<'_>, item: &mut Value, has_meta: bool) {
        if server.trusted || item.get("annotations").is_none() {
            return;
        }
        let Some(o) = item.as_object_mut() else { return };
        if self.untrusted == UntrustedAnnotations::Remove || !has_meta {
            o.remove("annotations");
            return;
        }
        if let Some(m) = o.entry("_meta").or_insert_with(|| json!({})).as_object_mut() {
            m.insert(PROVENANCE_KEY.into(), json!({ "server": server.name, "trusted": false }));
        }
    }

    /// Step 1 of a `tools/call` of `principal`: a meta-tool call of a
    /// tool-search client is answered here ([`MetaTool::Here`]) or turned
    /// into the call of the tool it names.
    pub fn tool_call<'p, 'm>(&self, principal: impl FnOnce() -> &'p str, m: &Msg, name_at: Range<usize>, name: Cow<'m, str>) -> MetaTool<'m> {
        let plain = ToolCall { name, name_at, arguments: None };
        if !self.restricts || !plain.name.starts_with("mcpx_") || !self.tool_search(principal()) {
            return MetaTool::Call(plain);
        }
        let args = m.param(&["arguments"]).and_then(|r| serde_json::from_slice::<Value>(&m.raw[r]).ok()).unwrap_or_else(|| json!({}));
        let asked = match MetaCall::parse(&plain.name, &args) {
            None => return MetaTool::Call(plain),
            Some(Ok(MetaCall::Call { name, .. })) => {
                let inner = m.param(&["arguments", "arguments"]).map_or_else(|| b"{}".to_vec(), |r| m.raw[r].to_vec());
                let outer = m.param(&["arguments"]).expect("parsed above");
                return MetaTool::Call(ToolCall { name: Cow::Owned(name.to_string()), name_at: plain.name_at, arguments: Some((outer, inner)) });
            }
            Some(Ok(MetaCall::Search { query, limit })) => Ok(Meta::Search { query: query.to_string(), limit }),
            Some(Ok(MetaCall::Describe { name })) => Ok(Meta::Describe { name: name.to_string() }),
            Some(Err(why)) => Err(why),
        };
        MetaTool::Here { tool: plain.name.into_owned(), asked }
    }

    /// The result of a meta-tool answered here for `principal` (after its
    /// rate limits), over the tools it may see.
    pub fn meta_answer<'s>(&mut self, principal: &str, asked: Result<Meta, String>, tools: ToolsView<'_, impl Fn(UpstreamId) -> Server<'s>>) -> Result<Vec<u8>, Refusal> {
        let asked = asked.map_err(|why| Refusal(ErrorCode::InvalidParams, format!("Invalid params: {why}"), None))?;
        let index = self.search_index(principal, tools);
        let result = match asked {
            Meta::Search { query, limit } => index.result(&index.search(&query, limit)),
            Meta::Describe { name } => match index.describe(&name) {
                Some(tool) => json!({ "content": [{ "type": "text", "text": tool.to_string() }], "structuredContent": tool }),
                None => json!({ "content": [{ "type": "text", "text": format!("Unknown tool: {name} (search with {})", search::SEARCH) }], "isError": true }),
            },
        };
        Ok(serde_json::to_vec(&result).unwrap_or_default())
    }

    /// The tool-search index of `principal`'s catalog, rebuilt when the
    /// tools changed.
    fn search_index<'s>(&mut self, principal: &str, tools: ToolsView<'_, impl Fn(UpstreamId) -> Server<'s>>) -> &Index {
        let entry = self.p.catalogs.index_of(principal).unwrap_or(usize::MAX);
        if self.indexes.get(&entry).is_none_or(|(g, _)| *g != tools.generation) {
            let items: Vec<Value> = tools
                .entries
                .iter()
                .filter(|e| self.tool_visible(principal, (tools.server)(e.up).name, &e.original))
                .map(|e| {
                    let mut item = e.item.clone();
                    self.mark_trust((tools.server)(e.up), &mut item, true);
                    item
                })
                .collect();
            self.indexes.insert(entry, (tools.generation, Index::new(&items)));
        }
        &self.indexes[&entry].1
    }

    /// Stage *validate* of a `tools/call` to tool `original` of `server`:
    /// its arguments against the tool's `inputSchema`.
    #[cfg(feature = "validate")]
    pub fn check_arguments(&self, m: &Msg, call: &ToolCall, server: &str, original: &str) -> Result<(), Refusal> {
        if !self.validates_arguments(server) {
            return Ok(());
        }
        // Requirement: tools-server-sec-validate-inputs
        let args = call.arguments(m).and_then(|b| serde_json::from_slice::<Value>(b).ok()).unwrap_or_else(|| json!({}));
        self.p.validators.check_arguments(server, original, &args).map_err(|f| {
            Refusal(crate::policy::validate::Failure::CODE, format!("{}: {f}", call.name), Some(f.data()))
        })
    }

    #[cfg(not(feature = "validate"))]
    pub fn check_arguments(&self, _: &Msg, _: &ToolCall, _: &str, _: &str) -> Result<(), Refusal> {
        Ok(())
    }

    /// Are `server`'s tool calls' arguments validated (stage *validate*)?
    #[cfg(feature = "validate")]
    pub fn validates_arguments(&self, server: &str) -> bool {
        self.p.validate.as_ref().is_some_and(|v| v.arguments) && self.p.validates(server)
    }

    #[cfg(all(not(feature = "validate"), feature = "traces"))]
    pub fn validates_arguments(&self, _: &str) -> bool {
        false
    }

    /// A tool result `res` for client `c`'s call `id`: its
    /// `structuredContent` against the tool's `outputSchema` when validated.
    /// A mismatch is a warning to log, and (`"output": "refuse"`) the
    /// result to send instead: a tool error naming it.
    #[cfg(feature = "validate")]
    pub fn check_output(&self, tracked: impl FnOnce() -> Option<Tracked>, res: &[u8]) -> Option<(Line, Option<Vec<u8>>)> {
        let check = self.p.validate.as_ref().map_or(OutputCheck::Off, |v| v.output);
        if check == OutputCheck::Off {
            return None;
        }
        let o = self.open.get(tracked()?)?;
        if !self.p.validates(&o.server) {
            return None;
        }
        let r = wire::find(res, 0..res.len(), &["structuredContent"])?;
        let content: Value = serde_json::from_slice(&res[r]).ok()?;
        let f = self.p.validators.check_structured(&o.server, &o.original, &content).err()?;
        let msg = format!("server '{}': tool '{}' returned {f}", o.server, o.original);
        let instead = (check == OutputCheck::Refuse).then(|| serde_json::to_vec(&json!({ "content": [{ "type": "text", "text": msg }], "isError": true })).unwrap_or_default());
        Some(((Level::Warn, msg), instead))
    }

    #[cfg(not(feature = "validate"))]
    pub fn check_output(&self, _: impl FnOnce() -> Option<Tracked>, _: &[u8]) -> Option<(Line, Option<Vec<u8>>)> {
        None
    }

    /// `server` listed `k` (`items`): its tools' schemas compiled when
    /// validated; the warnings about schemas that cannot be.
    pub fn listed(&mut self, server: &str, k: Kind, items: &[Value]) -> Vec<Line> {
        #[cfg(feature = "validate")]
        if k == Kind::Tools && self.p.validates(server) {
            let problems = self.p.validators.listed(server, items);
            return problems.into_iter().map(|(tool, target, e)| (Level::Warn, format!("server '{server}': tool '{tool}': its {} {e}; its calls will be refused", target.schema_key()))).collect();
        }
        let _ = (server, k, items);
        Vec::new()
    }

    /// A sampling, elicitation or roots request `m` of upstream `u`
    /// (`server`), before it is relayed, with the verdict `limited` of its
    /// rate limits (principal: the client it goes to, `who`, when known).
    /// The refusal's text is the error `u` gets, and it is audited; an
    /// admitted request is tracked until `u`'s answer.
    pub fn server_request(&mut self, u: UpstreamId, server: &str, who: Option<Who<'_>>, m: &Msg, limited: Result<(), ratelimit::Refusal>, now: u64) -> Result<(), (String, Option<Line>)> {
        let Some(method) = Some(m.call).filter(|c| audited_relay(*c)).and_then(|c| c.name()) else { return limited.map_err(|r| (r.to_string(), None)) };
        let audited = self.p.audit.is_some() || self.p.metrics.is_some();
        let validated = m.call == Method::ElicitationCreate && self.p.validate.as_ref().is_some_and(|v| v.elicitation) && self.p.validates(server);
        if !audited && !validated {
            return limited.map_err(|r| (r.to_string(), None));
        }
        let open = Open {
            start_ms: now,
            method,
            principal: who.map_or("", |w| w.principal).to_string(),
            revision: who.map_or("", |w| w.revision),
            server: server.to_string(),
            name: String::new(),
            original: String::new(),
            arguments: None,
            bytes_in: m.raw.len() as u64,
            refused: None,
            stage: None,
            approval: None,
            #[cfg(feature = "secrets")]
            own_credentials: false,
        };
        let schema = validated.then(|| m.param(&["requestedSchema"]).and_then(|r| serde_json::from_slice(&m.raw[r]).ok())).flatten();
        match limited {
            Ok(()) => {
                if self.relays.len() >= self.cap {
                    if let Some(k) = self.relays.iter().min_by_key(|(_, (o, _))| o.start_ms).map(|(k, _)| k.clone()) {
                        self.relays.remove(&k);
                    }
                }
                self.relays.insert((u, m.id_bytes().unwrap_or(b"null").to_vec()), (open, schema));
                Ok(())
            }
            Err(refusal) => {
                let line = self.books().1.record(&open, audit::Outcome::Refused { limit: &refusal.limit }, 0, now);
                Err((refusal.to_string(), line))
            }
        }
    }

    /// `bytes` go to upstream `u`: when they answer a tracked relayed
    /// request, it gets its audit line, and an elicitation's accepted
    /// content is checked against its `requestedSchema` — an invalid one
    /// is replaced by an error naming the failing property (a valid one
    /// passes as it is). Only looked into while a relay of `u` is open.
    /// The bytes to send, and the lines to log.
    pub fn answer_upstream(&mut self, u: UpstreamId, bytes: Vec<u8>, now: u64) -> (Vec<u8>, Vec<Line>) {
        if self.relays.is_empty() {
            return (bytes, Vec::new());
        }
        let all = 0..bytes.len();
        if wire::find(&bytes, all.clone(), &["method"]).is_some() {
            return (bytes, Vec::new());
        }
        let Some(id) = wire::find(&bytes, all.clone(), &["id"]) else { return (bytes, Vec::new()) };
        let Some((open, schema)) = self.relays.remove(&(u, bytes[id.clone()].to_vec())) else { return (bytes, Vec::new()) };
        let mut lines = Vec::new();
        let bytes = match schema.and_then(|schema| self.check_elicitation_answer(&open.server, &schema, &bytes)) {
            Some((line, error)) => {
                lines.push(line);
                wire::error(Some(&bytes[id]), error.0, &error.1, error.2)
            }
            None => bytes,
        };
        let code = wire::find(&bytes, all, &["error", "code"]).and_then(|r| std::str::from_utf8(&bytes[r]).ok()?.parse::<i64>().ok());
        let outcome = code.map_or(audit::Outcome::Result, |code| audit::Outcome::Error { code });
        lines.extend(self.books().1.record(&open, outcome, bytes.len() as u64, now));
        (bytes, lines)
    }

    /// The error an elicitation answer `bytes` to `server` gets instead (and
    /// the warning to log), if its accepted content breaks the
    /// `requestedSchema` `schema`.
    #[cfg(feature = "validate")]
    fn check_elicitation_answer(&self, server: &str, schema: &Value, bytes: &[u8]) -> Option<(Line, Refusal)> {
        let all = 0..bytes.len();
        if wire::find(bytes, all.clone(), &["result", "action"]).is_none_or(|r| &bytes[r] != b"\"accept\"") {
            return None;
        }
        let content = wire::find(bytes, all, &["result", "content"]).and_then(|r| serde_json::from_slice(&bytes[r]).ok()).unwrap_or_else(|| json!({}));
        self.check_accepted(schema, &content).map(|f| elicitation_refusal(&format!("the client's answer to server '{server}'"), f))
    }

    /// The elicitation schemas of a 2026-07-28 `server`'s `inputRequests`
    /// whose answers are checked (`"validate": {"elicitation": true}` for
    /// it): `{"server", "schemas": {key: requestedSchema}}`, or `None`.
    #[cfg(feature = "validate")]
    pub fn elicitation_schemas(&self, server: &str, requests: &Value) -> Option<Value> {
        if !(self.p.validate.as_ref().is_some_and(|v| v.elicitation) && self.p.validates(server)) {
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

    /// The error a retry gets instead of reaching its server (and the
    /// warning to log) when one of its `inputResponses` accepts content
    /// that breaks the requestedSchema it answers (`schemas` from
    /// [`Self::elicitation_schemas`]).
    #[cfg(feature = "validate")]
    pub fn check_input_responses(&self, schemas: &Value, responses: Option<&Value>) -> Option<(Line, Refusal)> {
        let server = schemas.get("server").and_then(Value::as_str).unwrap_or_default();
        for (key, schema) in schemas.get("schemas").and_then(Value::as_object)? {
            let Some(answer) = responses.and_then(|r| r.get(key)) else { continue };
            if answer.get("action").and_then(Value::as_str) != Some("accept") {
                continue;
            }
            let content = answer.get("content").cloned().unwrap_or_else(|| json!({}));
            if let Some(f) = self.check_accepted(schema, &content) {
                let what = format!("inputResponses.{key}, the client's answer to server '{server}',");
                let (line, Refusal(code, msg, data)) = elicitation_refusal(&what, f);
                let msg = format!("Invalid params: {msg}; nothing was sent to the server. Send the request again without requestState to start over");
                return Some((line, Refusal(code, msg, data)));
            }
        }
        None
    }

    /// Where accepted elicitation `content` breaks `schema`.
    // Requirement: elicitation-both-validate-against-schema, elicitation-client-validate-responses
    #[cfg(feature = "validate")]
    fn check_accepted(&self, schema: &Value, content: &Value) -> Option<crate::policy::validate::Failure> {
        self.p.validators.check_once(crate::policy::validate::Target::ElicitationAnswer, schema, content).err()
    }

    #[cfg(not(feature = "validate"))]
    fn check_elicitation_answer(&self, _: &str, _: &Value, _: &[u8]) -> Option<(Line, Refusal)> {
        None
    }

    #[cfg(not(feature = "validate"))]
    pub fn elicitation_schemas(&self, _: &str, _: &Value) -> Option<Value> {
        None
    }

    #[cfg(not(feature = "validate"))]
    pub fn check_input_responses(&self, _: &Value, _: Option<&Value>) -> Option<(Line, Refusal)> {
        None
    }

    /// A progress notification of upstream `u` (`server`) for its request
    /// `id`: within `progressPerRequest`, or dropped.
    pub fn admit_progress(&mut self, u: UpstreamId, server: &str, id: u64, pending: &Pending) -> Capped {
        if self.p.limiter.config().progress_per_request.is_none() {
            return Capped { admitted: true, warns: Vec::new() };
        }
        let (admitted, warn) = self.admit_notification(u, server, id, Notification::Progress, pending);
        self.notification_verdict(server, Notification::Progress, Capped { admitted, warns: warn.into_iter().collect() })
    }

    /// A log message of upstream `u` (`server`). The wire does not say
    /// which request it is about, so it counts against every client
    /// request of `u` in flight, and is dropped once all of them are over
    /// `logsPerRequest` (`logging-impl-validate-control`). A message while
    /// none is in flight is no request's and is not capped here.
    pub fn admit_log(&mut self, u: UpstreamId, server: &str, pending: &Pending) -> Capped {
        if self.p.limiter.config().logs_per_request.is_none() {
            return Capped { admitted: true, warns: Vec::new() };
        }
        let ids: Vec<u64> = pending.calls_to(u).map(|(id, _, _)| id).collect();
        let mut capped = Capped { admitted: ids.is_empty(), warns: Vec::new() };
        for id in ids {
            let (admitted, warn) = self.admit_notification(u, server, id, Notification::Log, pending);
            capped.admitted |= admitted;
            capped.warns.extend(warn);
        }
        self.notification_verdict(server, Notification::Log, capped)
    }

    /// Counts one notification of `kind` against `u`'s request `id`: false
    /// when over its cap, with a warning the first time for the request.
    fn admit_notification(&mut self, u: UpstreamId, server: &str, id: u64, kind: Notification, pending: &Pending) -> (bool, Option<Line>) {
        if self.budgets.len() >= self.cap {
            // Requests no longer pending need no count (ids never repeat).
            self.budgets.retain(|(u, id), _| pending.contains(*u, *id));
        }
        let cfg = self.p.limiter.config();
        let Err(d) = self.budgets.entry((u, id)).or_default().admit(kind, cfg) else { return (true, None) };
        let what = notification_label(kind);
        (false, d.first.then(|| (Level::Warn, format!("server '{server}': {what} notifications of one request over {}; the rest is dropped", d.limit))))
    }

    /// A dropped notification is counted in the metrics; `capped` as is.
    fn notification_verdict(&mut self, server: &str, kind: Notification, capped: Capped) -> Capped {
        if let (false, Some(m)) = (capped.admitted, &mut self.p.metrics) {
            m.notification_dropped(server, notification_label(kind));
        }
        capped
    }

    /// Request `m` of client `c` arrives, before it is routed; `who`: its
    /// principal and the revision its line names. A tracked one gets its
    /// record, whose handle the client's open set keeps
    /// ([`Tracked::NONE`]: not tracked).
    pub fn begin<'w>(&mut self, c: ClientId, m: &Msg, now: u64, who: impl FnOnce() -> Who<'w>) -> Tracked {
        let Some(method) = Some(m.call).filter(|c| tracked(*c)).and_then(|c| c.name()) else { return Tracked::NONE };
        if !self.tracking() {
            return Tracked::NONE;
        }
        let Some(id) = m.id_bytes() else { return Tracked::NONE };
        let who = who();
        // Kept for the audit line's digest only: metrics alone need no copy.
        let audited = self.p.audit.is_some() && m.call == Method::ToolsCall;
        let arguments = audited.then(|| m.param(&["arguments"]).map_or_else(|| b"{}".to_vec(), |r| m.raw[r].to_vec()));
        // A closed record, filled in its slot: its strings' room reused.
        let (t, open) = self.open.open(c, id);
        // Every field, named (a new one cannot be left from the last record).
        let Open { start_ms, method: m_name, principal, revision, server, name, original, arguments: args, bytes_in, refused, stage, approval, #[cfg(feature = "secrets")] own_credentials } = open;
        (*start_ms, *m_name, *revision, *bytes_in) = (now, method, who.revision, m.raw.len() as u64);
        who.principal.clone_into(principal);
        server.clear();
        // What was asked, so that a refusal's line names it; the exposed
        // name once resolved (`resolved`).
        asked_into(m, name);
        original.clear();
        (*args, *refused, *stage, *approval) = (arguments, None, None, None);
        #[cfg(feature = "secrets")]
        {
            *own_credentials = false;
        }
        t
    }

    /// The open record of client `c`'s request `id`.
    fn open_of(&mut self, c: ClientId, id: &[u8]) -> Option<&mut Open> {
        let t = self.open.find(c, id)?;
        self.open.get_mut(t)
    }

    /// Request `id` of client `c` was refused by `limit` (stage *admit*).
    pub fn refused_by(&mut self, c: ClientId, id: &[u8], limit: &str) {
        if let Some(o) = self.open_of(c, id) {
            o.refused = Some(limit.to_string());
        }
    }

    /// Request `id` of client `c` was refused at `stage`: its audit line
    /// names the stage.
    pub fn refused_at(&mut self, c: ClientId, id: &[u8], stage: audit::Stage) {
        if let Some(o) = self.open_of(c, id) {
            o.stage = Some(stage);
        }
    }

    /// The decision on request `id` of client `c`, which needed approval,
    /// for its audit line.
    pub fn approval(&mut self, c: ClientId, id: &[u8], note: String) {
        if let Some(o) = self.open_of(c, id) {
            o.approval = Some(note);
        }
    }

    /// A tracked request was resolved to `original` of server `up`,
    /// exposed as `name`.
    pub fn resolved(&mut self, c: ClientId, m: &Msg, up: &super::UpstreamSpec, name: &str, original: &str) {
        let Some(id) = m.id_bytes() else { return };
        if let Some(o) = self.open_of(c, id) {
            up.name.clone_into(&mut o.server);
            #[cfg(feature = "secrets")]
            {
                o.own_credentials = up.own_credentials;
            }
            name.clone_into(&mut o.name);
            original.clone_into(&mut o.original);
        }
    }

    /// The answer (`len` bytes, saying `outcome`) to client `c`'s request
    /// `id` is written, `closed` from the client's open set (`None`: the
    /// set did not have it): a tracked request gets its audit line and
    /// metric sample, from what the hub knows of the answer (its bytes are
    /// not read again); the debug line to log, if any.
    pub fn answered(&mut self, c: ClientId, id: Option<&[u8]>, closed: Option<Tracked>, len: usize, outcome: super::Outcome, now: u64) -> Option<Line> {
        if self.open.is_empty() {
            return None;
        }
        let t = closed.or_else(|| id.and_then(|id| self.open.find(c, id)))?;
        let (open, mut books) = self.books();
        let o = open.close(t)?;
        let outcome = match (&o.refused, outcome) {
            (Some(limit), _) => audit::Outcome::Refused { limit },
            (None, super::Outcome::Error { code, .. }) => audit::Outcome::Error { code },
            (None, super::Outcome::ToolError) => audit::Outcome::ToolError,
            (None, super::Outcome::Result) => audit::Outcome::Result,
        };
        let line = books.record(o, outcome, len as u64, now);
        // Its slot keeps the strings' room, not the arguments.
        o.arguments = None;
        line
    }

    /// The open records, and what a finished one is written into.
    fn books(&mut self) -> (&mut Records<Open>, Books<'_>) {
        let books = Books {
            p: &mut self.p,
            epoch_ms: self.epoch_ms,
            log_calls: self.log_calls,
            #[cfg(feature = "activity")]
            activity: &mut self.activity,
        };
        (&mut self.open, books)
    }

    /// Log one `debug` line per call, relayed sampling and elicitation
    /// request (the runtime turns it on while its log level is debug).
    pub fn set_call_log(&mut self, on: bool) {
        self.log_calls = on;
    }

    /// Tracked request `t` was answered elsewhere (another replica): its
    /// record goes without a line here.
    pub fn forget(&mut self, t: Tracked) {
        if let Some(o) = self.open.close(t) {
            o.arguments = None;
        }
    }

    /// Client `c` is gone: forget its tracked requests.
    pub fn client_gone(&mut self, c: ClientId) {
        self.open.forget_client(c, |o| o.arguments = None);
    }
}

/// The refusal of an elicitation answer (`what`) that broke its schema,
/// and the warning naming it.
#[cfg(feature = "validate")]
fn elicitation_refusal(what: &str, f: crate::policy::validate::Failure) -> (Line, Refusal) {
    let msg = format!("{what} broke its requestedSchema: {f}");
    ((Level::Warn, msg.clone()), Refusal(crate::policy::validate::Failure::CODE, msg, Some(f.data())))
}
