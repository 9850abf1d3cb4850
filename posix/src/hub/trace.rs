//! OpenTelemetry spans of the requests that cross the hub (`"traces"`).
//!
//! One span of kind SERVER per client request, from its arrival to the
//! hub's answer (`Downward::reply`, the one writer of answers), and one of
//! kind CLIENT per call it causes to an upstream (a child of the first),
//! each named and attributed as the OpenTelemetry semantic conventions for
//! MCP say: `{mcp.method.name} {target}` (the tool or prompt name),
//! `mcp.method.name`, `jsonrpc.request.id`, `mcp.session.id`,
//! `mcp.protocol.version`, `gen_ai.tool.name` and `gen_ai.operation.name`
//! (`execute_tool`) for `tools/call`, `gen_ai.prompt.name`,
//! `mcp.resource.uri`, `error.type` (the JSON-RPC code, or `tool_error`)
//! and, on the upstream's span, the server's name, transport and revision.
//!
//! The trace is the client's when it sent W3C trace context: in the
//! request's `_meta` (`traceparent`, `tracestate`, as the SDKs'
//! instrumentation writes them), else in the HTTP request's headers (the
//! transport hands them over, `Input::ClientTrace`). Otherwise a new trace
//! starts, sampled at the configured ratio; a caller's decision (its
//! `sampled` flag) is followed. The upstream gets the trace with the
//! hub's CLIENT span as its parent, in `_meta` (every upstream) and as
//! the `traceparent` header (remote ones, `Upward::Request`).
//!
//! Sans-IO: time is the hub's `now_ms`, span ids come from a WyRand seeded
//! by the hub's secret seed. Finished spans wait in a bounded buffer that
//! the runtime drains (`Hub::trace`, `Trace::take`) and exports; a span that finds
//! it full is dropped and counted, and so is a request over the cap of
//! open spans. Without `"traces"` nothing here is built: the hub holds a
//! `None`, and every hook returns at its first line.

use std::collections::HashMap;

use mcpx_core::trace_context::{TraceParent, LEN, SAMPLED};
use nanorand::{Rng as _, WyRand};

use super::wire::Msg;
use super::{ClientId, IdKey, Outcome};

/// `"traces"` as the hub needs it (the endpoint and the service name are
/// the exporter's, in the runtime).
#[derive(Clone, Debug, PartialEq)]
pub struct TraceOptions {
    /// Of the traces that start here, the share recorded (0.0 to 1.0).
    pub sample_ratio: f64,
    /// Finished spans waiting for the exporter; past it they are dropped.
    pub max_queue: usize,
}

impl Default for TraceOptions {
    fn default() -> TraceOptions {
        TraceOptions { sample_ratio: 1.0, max_queue: DEFAULT_MAX_QUEUE }
    }
}

/// Default of [`TraceOptions::max_queue`].
pub const DEFAULT_MAX_QUEUE: usize = 2048;
/// Requests traced at once; a request past it is not traced (counted as dropped).
const MAX_OPEN: usize = 8192;
/// Child spans recorded per request (input rounds retry a call).
const MAX_CHILDREN: usize = 16;
/// Tasks traced at once; one past it is not traced (counted as dropped).
const MAX_TASKS: usize = 1024;
/// `tracestate` kept from a caller, in bytes (the specification's 32
/// members of at most 256 bytes fit 512 in practice).
const MAX_TRACESTATE: usize = 512;

/// A span's kind (OTLP's numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanKind {
    Internal = 1,
    Server = 2,
    Client = 3,
}

/// What a request can wait for before it goes upstream: each a span of
/// its own (kind INTERNAL, a child of the request's), from the stage that
/// parks it until the request moves on (it is forwarded, waits for
/// something else, or is answered).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wait {
    /// The shared store's answer to the principal's rate limit (replicas).
    Admission,
    /// A person's approval of the call (`policy.approve`).
    Approval,
    /// The server's start (lazy start, an idle one woken).
    Start,
}

impl Wait {
    fn name(self) -> &'static str {
        match self {
            Wait::Admission => "admission",
            Wait::Approval => "approval",
            Wait::Start => "server start",
        }
    }
}

/// An attribute's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attr {
    Str(String),
}

/// A finished span, for the exporter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent: Option<[u8; 8]>,
    pub tracestate: Option<String>,
    pub name: String,
    pub kind: SpanKind,
    /// On the hub's clock (`now_ms`); the exporter maps it to Unix time.
    pub start_ms: u64,
    pub end_ms: u64,
    /// Its length when measured finer than the hub's clock (a stage that
    /// takes microseconds, as validation); else `end_ms - start_ms`.
    pub length_ns: Option<u64>,
    pub attrs: Vec<(&'static str, Attr)>,
    /// Status error with this description; `None`: unset (OK).
    pub error: Option<String>,
    /// Events during the span (name, time).
    pub events: Vec<(&'static str, u64)>,
}

impl Span {
    pub fn attr(&self, key: &str) -> Option<&Attr> {
        self.attrs.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

/// What the transport saw of a client's next requests (one HTTP POST's).
#[derive(Default)]
struct Incoming {
    parent: Option<TraceParent>,
    tracestate: Option<String>,
    session: Option<String>,
    /// From another replica: `parent` wins over `_meta`'s.
    hop: bool,
}

/// A request being traced: its span and its children's.
struct Open {
    span: Span,
    children: Vec<Child>,
}

/// A child span and what it is of the request.
struct Child {
    span: Span,
    role: Role,
    /// Still going: it ends with the request if nothing ends it before.
    open: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A call to an upstream (CLIENT).
    Call,
    Wait,
    /// A server's request for input relayed to the client (CLIENT), by
    /// the hub's id of it.
    Round(u64),
    /// A stage that ran without waiting (validation), measured.
    Stage,
}

/// The trace context an upstream gets for one call: `traceparent` (its
/// parent is the hub's CLIENT span) and the caller's `tracestate`.
pub(super) struct Outgoing {
    pub traceparent: [u8; LEN],
    pub tracestate: Option<String>,
}

impl Outgoing {
    /// The `_meta` members (key, raw JSON) of the forwarded request.
    pub fn meta(&self) -> Vec<(&'static str, Vec<u8>)> {
        let mut m = vec![("traceparent", [&b"\""[..], &self.traceparent, b"\""].concat())];
        m.extend(self.tracestate.as_ref().map(|s| ("tracestate", serde_json::to_vec(s).unwrap_or_default())));
        m
    }

    /// The `traceparent` header for a remote server.
    pub fn header(&self) -> super::TraceHeader {
        super::TraceHeader(Box::new(self.traceparent))
    }
}

/// The client's request that an input request is asked for, kept for its
/// span ([`Trace::round`]); `()` in a build without `traces`.
pub(super) type Asker = Option<IdKey>;

/// The [`Asker`] of the client's request `id`.
pub(super) fn asker(id: &[u8]) -> Asker {
    Some(IdKey::new(id))
}

/// The hub's tracer; `None` inside when `"traces"` is off. The runtime
/// reaches it through `Hub::trace` for what is its: [`Trace::on`],
/// [`Trace::take`], [`Trace::exported`]; the rest is the hub's.
#[derive(Default)]
pub struct Trace(Option<Box<Tracer>>);

struct Tracer {
    /// Sampled when a draw is below this (`u64::MAX`: always).
    threshold: u64,
    max_queue: usize,
    rng: WyRand,
    open: HashMap<(ClientId, IdKey), Open>,
    /// The spans of tasks not ended yet, by task id.
    tasks: HashMap<String, Span>,
    next: Option<(ClientId, Incoming)>,
    done: Vec<Span>,
    dropped: u64,
    exported: u64,
    failed: u64,
}

/// Counts for `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceCounts {
    pub dropped: u64,
    pub exported: u64,
    pub failed: u64,
}

fn text(v: mcpx_core::json::JsonValue<'_>) -> Option<String> {
    String::from_utf8(v.as_str()?.decoded().collect()).ok()
}

impl Trace {
    pub(super) fn new(opts: Option<&TraceOptions>, seed: [u8; 32]) -> Trace {
        let Some(o) = opts else { return Trace(None) };
        let r = o.sample_ratio.clamp(0.0, 1.0);
        let threshold = if r >= 1.0 { u64::MAX } else { (r * u64::MAX as f64) as u64 };
        // Its own stream, apart from the other uses of the seed.
        let mut s = [0u8; 8];
        s.copy_from_slice(&seed[8..16]);
        let rng = WyRand::new_seed(u64::from_le_bytes(s) ^ 0x7472_6163_6573_0001);
        Trace(Some(Box::new(Tracer {
            threshold,
            max_queue: o.max_queue.max(1),
            rng,
            open: HashMap::new(),
            tasks: HashMap::new(),
            next: None,
            done: Vec::new(),
            dropped: 0,
            exported: 0,
            failed: 0,
        })))
    }

    /// Is tracing on?
    pub fn on(&self) -> bool {
        self.0.is_some()
    }

    /// The transport's trace context and session for client `c`'s next
    /// requests (HTTP headers; `Input::ClientTrace`).
    pub(super) fn transport(&mut self, c: ClientId, traceparent: Option<&[u8]>, tracestate: Option<&[u8]>, session: Option<&str>, hop: bool) {
        let Some(t) = &mut self.0 else { return };
        let parent = traceparent.and_then(TraceParent::parse);
        let tracestate = tracestate.filter(|s| parent.is_some() && !s.is_empty() && s.len() <= MAX_TRACESTATE).and_then(|s| std::str::from_utf8(s).ok()).map(str::to_string);
        t.next = Some((c, Incoming { parent, tracestate, session: session.map(str::to_string), hop }));
    }

    /// Client `c`'s request `m` arrived (`rev`: the revision it speaks).
    pub(super) fn request(&mut self, c: ClientId, m: &Msg<'_>, rev: Option<&str>, now: u64) {
        let Some(t) = &mut self.0 else { return };
        t.request(c, m, rev, now);
    }

    /// Client `c`'s request `id` is forwarded as the hub's request `up_id`
    /// to the upstream `up` says (its name, whether it is remote, the
    /// revision spoken with it): the trace context to send with it, when
    /// traced.
    pub(super) fn call<'s>(&mut self, c: ClientId, id: &[u8], up_id: u64, up: impl FnOnce() -> (&'s str, bool, Option<&'static str>), now: u64) -> Option<Outgoing> {
        let t = self.0.as_mut()?;
        let (server, remote, rev) = up();
        let span_id = t.id8();
        let o = t.open.get_mut(&(c, IdKey::new(id)))?;
        if o.children.len() >= MAX_CHILDREN {
            return None;
        }
        // Forwarded: whatever it waited for is over.
        o.end_waits(now);
        let (trace_id, tracestate) = (o.span.trace_id, o.span.tracestate.clone());
        let target = match o.span.attr("gen_ai.tool.name").or(o.span.attr("gen_ai.prompt.name")) {
            Some(_) => o.span.name.clone(),
            None => o.span.attr("mcp.method.name").map(|Attr::Str(s)| s.clone()).unwrap_or_default(),
        };
        let mut attrs: Vec<(&'static str, Attr)> = o.span.attrs.iter().filter(|(k, _)| matches!(*k, "mcp.method.name" | "gen_ai.tool.name" | "gen_ai.operation.name" | "gen_ai.prompt.name" | "mcp.resource.uri")).cloned().collect();
        attrs.push(("jsonrpc.request.id", Attr::Str(up_id.to_string())));
        attrs.push(("mcpx.upstream.name", Attr::Str(server.to_string())));
        attrs.push(("mcpx.upstream.transport", Attr::Str(if remote { "http" } else { "stdio" }.into())));
        attrs.push(("network.transport", Attr::Str(if remote { "tcp" } else { "pipe" }.into())));
        if let Some(r) = rev {
            attrs.push(("mcp.protocol.version", Attr::Str(r.to_string())));
        }
        o.push(Role::Call, child(&o.span, span_id, target, SpanKind::Client, attrs, now));
        let mut traceparent = [0u8; LEN];
        TraceParent::write(&trace_id, &span_id, SAMPLED, &mut traceparent);
        Some(Outgoing { traceparent, tracestate })
    }

    /// Client `c`'s request `id` waits for `wait` from now (one wait at a
    /// time: the one before it is over).
    pub(super) fn wait(&mut self, c: ClientId, id: &[u8], wait: Wait, now: u64) {
        let Some(t) = &mut self.0 else { return };
        let span_id = t.id8();
        let Some(o) = t.open.get_mut(&(c, IdKey::new(id))) else { return };
        if o.children.len() >= MAX_CHILDREN || o.children.iter().any(|ch| ch.open && ch.role == Role::Wait && ch.span.name == wait.name()) {
            return;
        }
        o.end_waits(now);
        let attrs = vec![("mcpx.wait", Attr::Str(wait.name().into()))];
        o.push(Role::Wait, child(&o.span, span_id, wait.name().into(), SpanKind::Internal, attrs, now));
    }

    /// Client `c`'s request `id` passed the stage `name` in `took`
    /// (`refused`: the stage refused it, with this error code): a span of
    /// kind INTERNAL, a child of the request's, with the measured length.
    pub(super) fn stage(&mut self, c: ClientId, id: &[u8], name: &'static str, took: std::time::Duration, refused: Option<i64>, now: u64) {
        let Some(t) = &mut self.0 else { return };
        let span_id = t.id8();
        let Some(o) = t.open.get_mut(&(c, IdKey::new(id))) else { return };
        if o.children.len() >= MAX_CHILDREN {
            return;
        }
        let mut span = child(&o.span, span_id, name.into(), SpanKind::Internal, vec![("mcpx.stage", Attr::Str(name.into()))], now);
        span.length_ns = Some(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
        if let Some(code) = refused {
            span.attrs.push(("error.type", Attr::Str(code.to_string())));
            span.error = Some(format!("refused by {name}: JSON-RPC error {code}"));
        }
        o.children.push(Child { span, role: Role::Stage, open: false });
    }

    /// The hub asks client `c` (its request `hid`) for input an upstream
    /// needs for `c`'s request `cause`: an input round, a child of the
    /// call that asked, until the client answers ([`Trace::round_answered`]).
    pub(super) fn round(&mut self, c: ClientId, cause: &Asker, hid: u64, method: &str, now: u64) {
        let (Some(t), Some(cause)) = (&mut self.0, cause) else { return };
        let span_id = t.id8();
        let Some(o) = t.open.get_mut(&(c, cause.clone())) else { return };
        if o.children.len() >= MAX_CHILDREN {
            return;
        }
        let parent = o.children.iter().rev().find(|ch| ch.role == Role::Call).map_or(&o.span, |ch| &ch.span);
        let attrs = vec![("mcp.method.name", Attr::Str(method.into())), ("jsonrpc.request.id", Attr::Str(hid.to_string()))];
        let span = child(parent, span_id, method.into(), SpanKind::Client, attrs, now);
        o.push(Role::Round(hid), span);
    }

    /// Client `c` answered the hub's request `hid` (`error`: with an
    /// error, its code): the input round's end.
    pub(super) fn round_answered(&mut self, c: ClientId, hid: u64, error: Option<i64>, now: u64) {
        let Some(t) = &mut self.0 else { return };
        let round = t.open.iter_mut().filter(|(k, _)| k.0 == c).flat_map(|(_, o)| o.children.iter_mut()).find(|ch| ch.open && ch.role == Role::Round(hid));
        if let Some(ch) = round {
            ch.open = false;
            ch.span.end_ms = now;
            if let Some(code) = error {
                ch.span.attrs.push(("error.type", Attr::Str(code.to_string())));
                ch.span.error = Some(format!("JSON-RPC error {code}"));
            }
        }
    }

    /// Client `c`'s request `id` was answered, saying `outcome`: its span
    /// and its calls' end.
    pub(super) fn answered(&mut self, c: ClientId, id: Option<&[u8]>, outcome: Outcome, now: u64) {
        let Some(t) = &mut self.0 else { return };
        let Some(o) = id.and_then(|id| t.open.remove(&(c, IdKey::new(id)))) else { return };
        let error = match outcome {
            Outcome::Result => None,
            Outcome::ToolError => Some(("tool_error".to_string(), "the tool answered isError: true".to_string())),
            Outcome::Error { code, .. } => Some((code.to_string(), format!("JSON-RPC error {code}"))),
        };
        t.finish(o, now, error);
    }

    /// Task `task` started for client `started_by`'s request (a span of
    /// kind INTERNAL under the request's, until the task ends), or its
    /// status is now `status` (`None`: it expired): a final one ends the
    /// span (an error unless completed), `input_required` is an event.
    pub(super) fn task(&mut self, task: &str, started_by: Option<(ClientId, Vec<u8>)>, status: Option<&str>, now: u64) {
        let Some(t) = &mut self.0 else { return };
        if let Some((c, rid)) = started_by {
            let span_id = t.id8();
            let Some(o) = t.open.get(&(c, IdKey::new(&rid))) else { return };
            if t.tasks.len() >= MAX_TASKS {
                t.dropped += 1;
                return;
            }
            let attrs = vec![("mcpx.task.id", Attr::Str(task.to_string()))];
            let span = child(&o.span, span_id, format!("task {}", o.span.name), SpanKind::Internal, attrs, now);
            t.tasks.insert(task.to_string(), span);
        }
        let Some(span) = t.tasks.get_mut(task) else { return };
        match status {
            Some("working") => {}
            Some("input_required") => span.events.push(("input_required", now)),
            Some(end) => {
                let mut span = t.tasks.remove(task).expect("just found");
                span.end_ms = now;
                span.attrs.push(("mcpx.task.status", Attr::Str(end.to_string())));
                if end != "completed" {
                    span.attrs.push(("error.type", Attr::Str(end.to_string())));
                    span.error = Some(format!("the task ended {end}"));
                }
                t.queue(span);
            }
            None => {
                let mut span = t.tasks.remove(task).expect("just found");
                span.end_ms = now;
                span.attrs.push(("error.type", Attr::Str("expired".into())));
                span.error = Some("the task's ttl ran out before it ended".into());
                t.queue(span);
            }
        }
    }

    /// Client `c` is gone: what it waited for ends unanswered.
    pub(super) fn client_gone(&mut self, c: ClientId, now: u64) {
        let Some(t) = &mut self.0 else { return };
        if t.next.as_ref().is_some_and(|(n, _)| *n == c) {
            t.next = None;
        }
        let keys: Vec<_> = t.open.keys().filter(|k| k.0 == c).cloned().collect();
        for k in keys {
            if let Some(o) = t.open.remove(&k) {
                t.finish(o, now, Some(("cancelled".into(), "the client went away before the answer".into())));
            }
        }
    }

    /// The context that continues client `c`'s open request `id`
    /// elsewhere (another replica, `Output::Forward`): its span as the
    /// parent; `None` when it is not traced.
    pub(super) fn context(&self, c: ClientId, id: &[u8]) -> Option<super::TraceHeader> {
        let o = self.0.as_ref()?.open.get(&(c, IdKey::new(id)))?;
        let mut tp = [0u8; LEN];
        TraceParent::write(&o.span.trace_id, &o.span.span_id, SAMPLED, &mut tp);
        Some(super::TraceHeader(Box::new(tp)))
    }

    /// The finished spans, for the exporter.
    pub fn take(&mut self) -> Vec<Span> {
        self.0.as_mut().map(|t| std::mem::take(&mut t.done)).unwrap_or_default()
    }

    /// The exporter sent `n` spans taken with [`Trace::take`] (`ok`), or
    /// failed to: counted for `/metrics`.
    pub fn exported(&mut self, n: usize, ok: bool) {
        let Some(t) = &mut self.0 else { return };
        match ok {
            true => t.exported += n as u64,
            false => t.failed += n as u64,
        }
    }

    pub(super) fn counts(&self) -> Option<TraceCounts> {
        self.0.as_ref().map(|t| TraceCounts { dropped: t.dropped, exported: t.exported, failed: t.failed })
    }
}

impl Tracer {
    fn id8(&mut self) -> [u8; 8] {
        loop {
            let v = self.rng.generate::<u64>();
            if v != 0 {
                return v.to_le_bytes();
            }
        }
    }

    fn id16(&mut self) -> [u8; 16] {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&self.id8());
        id[8..].copy_from_slice(&self.rng.generate::<u64>().to_le_bytes());
        id
    }

    fn request(&mut self, c: ClientId, m: &Msg<'_>, rev: Option<&str>, now: u64) {
        let Some(id) = m.id_bytes() else { return };
        let incoming = self.next.as_ref().filter(|(n, _)| *n == c).map(|(_, i)| i);
        // The request's own `_meta` first, then the transport's headers.
        let meta = m.env.meta();
        // A context from another replica's span beats the client's own.
        let from_meta = meta.and_then(|mt| mt.get("traceparent")).and_then(text).and_then(|s| TraceParent::parse(s.as_bytes())).filter(|_| !incoming.is_some_and(|i| i.hop && i.parent.is_some()));
        let (parent, tracestate) = match from_meta {
            Some(p) => (Some(p), meta.and_then(|mt| mt.get("tracestate")).and_then(text).filter(|s| !s.is_empty() && s.len() <= MAX_TRACESTATE)),
            None => (incoming.and_then(|i| i.parent), incoming.and_then(|i| i.tracestate.clone())),
        };
        let sampled = match parent {
            Some(p) => p.sampled(),
            None => self.threshold == u64::MAX || self.rng.generate::<u64>() < self.threshold,
        };
        if !sampled {
            return;
        }
        if self.open.len() >= MAX_OPEN {
            self.dropped += 1;
            return;
        }
        let method = m.method.to_string();
        let mut attrs = vec![("mcp.method.name", Attr::Str(method.clone())), ("jsonrpc.request.id", Attr::Str(String::from_utf8_lossy(id).trim_matches('"').to_string()))];
        let mut name = method.clone();
        let param = |k: &str| m.env.params().and_then(|p| p.get(k)).and_then(text);
        match method.as_str() {
            "tools/call" => {
                if let Some(tool) = param("name") {
                    name = format!("{method} {tool}");
                    attrs.push(("gen_ai.tool.name", Attr::Str(tool)));
                }
                attrs.push(("gen_ai.operation.name", Attr::Str("execute_tool".into())));
            }
            "prompts/get" => {
                if let Some(p) = param("name") {
                    name = format!("{method} {p}");
                    attrs.push(("gen_ai.prompt.name", Attr::Str(p)));
                }
            }
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
                if let Some(uri) = param("uri") {
                    attrs.push(("mcp.resource.uri", Attr::Str(uri)));
                }
            }
            _ => {}
        }
        if let Some(s) = incoming.and_then(|i| i.session.clone()) {
            attrs.push(("mcp.session.id", Attr::Str(s)));
        }
        if let Some(r) = rev {
            attrs.push(("mcp.protocol.version", Attr::Str(r.to_string())));
        }
        let trace_id = match parent {
            Some(p) => p.trace_id,
            None => self.id16(),
        };
        let span = Span {
            trace_id,
            span_id: self.id8(),
            parent: parent.map(|p| p.parent_id),
            tracestate,
            name,
            kind: SpanKind::Server,
            start_ms: now,
            end_ms: now,
            length_ns: None,
            attrs,
            error: None,
            events: Vec::new(),
        };
        // A request id used again while the first is open: the first one
        // is answered by the hub as a duplicate; keep tracing the first.
        self.open.entry((c, IdKey::new(id))).or_insert(Open { span, children: Vec::new() });
    }

    fn finish(&mut self, o: Open, now: u64, error: Option<(String, String)>) {
        let Open { mut span, children } = o;
        span.end_ms = now;
        if let Some((ty, msg)) = &error {
            span.attrs.push(("error.type", Attr::Str(ty.clone())));
            span.error = Some(msg.clone());
        }
        // What is still going ends with the request: a call shares its
        // outcome, a wait or a round was cut short by it.
        for Child { mut span, role, open } in children {
            if open {
                span.end_ms = now;
                if let Some((ty, msg)) = error.as_ref().filter(|_| role == Role::Call) {
                    span.attrs.push(("error.type", Attr::Str(ty.clone())));
                    span.error = Some(msg.clone());
                }
            }
            self.queue(span);
        }
        self.queue(span);
    }

    fn queue(&mut self, span: Span) {
        if self.done.len() >= self.max_queue {
            self.dropped += 1;
        } else {
            self.done.push(span);
        }
    }
}

impl Open {
    fn push(&mut self, role: Role, span: Span) {
        self.children.push(Child { span, role, open: true });
    }

    /// The request moves on: what it waited for is over.
    fn end_waits(&mut self, now: u64) {
        for ch in self.children.iter_mut().filter(|ch| ch.open && ch.role == Role::Wait) {
            ch.open = false;
            ch.span.end_ms = now;
        }
    }
}

/// A child span of `parent` starting `now`.
fn child(parent: &Span, span_id: [u8; 8], name: String, kind: SpanKind, attrs: Vec<(&'static str, Attr)>, now: u64) -> Span {
    Span { trace_id: parent.trace_id, span_id, parent: Some(parent.span_id), tracestate: parent.tracestate.clone(), name, kind, start_ms: now, end_ms: now, length_ns: None, attrs, error: None, events: Vec::new() }
}
