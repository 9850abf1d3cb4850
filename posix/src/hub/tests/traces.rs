//! Spans of requests and their upstream calls (`trace`): what the tracer
//! records, the trace context it takes and passes on, sampling and its
//! bounds. Deterministic: the hub's clock and seed.

use serde_json::{json, Value};

use super::*;
use crate::hub::trace::{Attr, Span, SpanKind, TraceOptions};

const TP: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";

fn traced(ratio: f64, max_queue: usize) -> HubOptions {
    HubOptions { traces: Some(TraceOptions { sample_ratio: ratio, max_queue }), ..HubOptions::default() }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn attr<'s>(s: &'s Span, k: &str) -> Option<&'s str> {
    let Attr::Str(v) = s.attr(k)?;
    Some(v)
}

/// A `tools/call` of `name` by `c` with `meta`, answered by upstream `u`
/// with `answer` (a result or an error object); what the upstream got.
fn call(p: &mut Pair, c: ClientId, u: UpstreamId, name: &str, meta: Value, answer: Value) -> Value {
    p.send(c, json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": { "name": name, "arguments": {}, "_meta": meta } }));
    let up = p.take_up(u);
    let mut a = json!({ "jsonrpc": "2.0", "id": up["id"] });
    let key = if answer.get("code").is_some() { "error" } else { "result" };
    a[key] = answer;
    p.upstream_says(u, a);
    p.take(c);
    up
}

fn spans(p: &mut Pair) -> Vec<Span> {
    p.hub.trace().take()
}

#[test]
fn a_call_is_a_server_span_and_a_client_span_continuing_the_callers_trace() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], traced(1.0, 64));
    p.now = 5000;
    let c = p.client("2025-06-18", json!({}));
    p.hub.trace().take(); // its initialize's
    let up = call(&mut p, c, 0, "fs__read", json!({ "traceparent": TP, "tracestate": "congo=t61rcWkgMzE", "baggage": "a=1" }), json!({ "content": [] }));
    let s = spans(&mut p);
    assert_eq!(s.len(), 2, "{s:?}");
    let (client, server) = (&s[0], &s[1]);
    assert_eq!((server.kind, client.kind), (SpanKind::Server, SpanKind::Client));
    // One trace: the caller's; the server span's parent is the caller's span.
    assert_eq!(hex(&server.trace_id), TRACE_ID);
    assert_eq!(hex(&client.trace_id), TRACE_ID);
    assert_eq!(server.parent.map(|p| hex(&p)).as_deref(), Some("b7ad6b7169203331"));
    assert_eq!(client.parent, Some(server.span_id));
    assert_ne!(client.span_id, server.span_id);
    // The upstream gets the trace with the hub's client span as its parent,
    // the caller's tracestate, and the other keys as they were.
    let want = format!("00-{TRACE_ID}-{}-01", hex(&client.span_id));
    assert_eq!(up["params"]["_meta"]["traceparent"], want.as_str(), "{up}");
    assert_eq!(up["params"]["_meta"]["tracestate"], "congo=t61rcWkgMzE");
    assert_eq!(up["params"]["_meta"]["baggage"], "a=1");
    // Names and attributes of the semantic conventions.
    assert_eq!(server.name, "tools/call fs__read");
    assert_eq!(attr(server, "mcp.method.name"), Some("tools/call"));
    assert_eq!(attr(server, "gen_ai.tool.name"), Some("fs__read"));
    assert_eq!(attr(server, "gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(attr(server, "jsonrpc.request.id"), Some("7"));
    assert_eq!(attr(server, "mcp.protocol.version"), Some("2025-06-18"));
    assert_eq!(attr(client, "mcpx.upstream.name"), Some("fs"));
    assert_eq!(attr(client, "mcpx.upstream.transport"), Some("stdio"));
    assert_eq!(attr(client, "network.transport"), Some("pipe"));
    assert_eq!(attr(client, "jsonrpc.request.id"), up["id"].to_string().as_str().into());
    assert!(attr(client, "mcp.protocol.version").is_some());
    assert!(server.error.is_none() && client.error.is_none() && server.attr("error.type").is_none());
    assert_eq!((server.start_ms, server.end_ms), (5000, 5000));
    // Taken once.
    assert!(spans(&mut p).is_empty());
    let m = p.hub.metrics_text(0, 0).unwrap();
    assert!(m.contains("mcpx_trace_spans_total{outcome=\"dropped\"} 0"), "{m}");
}

#[test]
fn without_context_a_trace_starts_here_and_errors_say_their_type() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], traced(1.0, 64));
    let c = p.client("2025-06-18", json!({}));
    p.hub.trace().take(); // its initialize's
    let up = call(&mut p, c, 0, "fs__read", json!({}), json!({ "code": -32602, "message": "bad" }));
    let s = spans(&mut p);
    assert_eq!(s.len(), 2);
    let (client, server) = (&s[0], &s[1]);
    assert_eq!(server.parent, None);
    assert_eq!(client.trace_id, server.trace_id);
    assert_eq!(up["params"]["_meta"]["traceparent"], format!("00-{}-{}-01", hex(&server.trace_id), hex(&client.span_id)).as_str());
    for sp in [client, server] {
        assert_eq!(attr(sp, "error.type"), Some("-32602"), "{sp:?}");
        assert!(sp.error.is_some());
    }
    // A tool's own error is one too.
    call(&mut p, c, 0, "fs__read", json!({}), json!({ "content": [], "isError": true }));
    let s = spans(&mut p);
    assert_eq!(attr(&s[1], "error.type"), Some("tool_error"));
    // A request the hub answers itself is a span of its own.
    p.send(c, json!({ "jsonrpc": "2.0", "id": "l", "method": "tools/list" }));
    p.take(c);
    let s = spans(&mut p);
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].name.as_str(), attr(&s[0], "jsonrpc.request.id")), ("tools/list", Some("l")));
}

#[test]
fn the_transports_headers_are_the_parent_when_meta_has_none() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], traced(1.0, 64));
    let c = p.client("2025-06-18", json!({}));
    p.hub.trace().take(); // its initialize's
    let other = "00-11111111111111111111111111111111-2222222222222222-01";
    p.hub.handle(Input::ClientTrace { client: c, traceparent: Some(other.as_bytes()), tracestate: Some(b"k=v"), session: Some("abc"), hop: false }, p.now);
    let up = call(&mut p, c, 0, "fs__read", json!({}), json!({ "content": [] }));
    let s = spans(&mut p);
    assert_eq!(hex(&s[1].trace_id), "11111111111111111111111111111111");
    assert_eq!(s[1].parent.map(|p| hex(&p)).as_deref(), Some("2222222222222222"));
    assert_eq!(attr(&s[1], "mcp.session.id"), Some("abc"));
    assert_eq!(up["params"]["_meta"]["tracestate"], "k=v");
    // `_meta` wins over the headers.
    p.hub.handle(Input::ClientTrace { client: c, traceparent: Some(other.as_bytes()), tracestate: None, session: None, hop: false }, p.now);
    call(&mut p, c, 0, "fs__read", json!({ "traceparent": TP }), json!({ "content": [] }));
    assert_eq!(hex(&spans(&mut p)[1].trace_id), TRACE_ID);
    // A malformed header is no context: a new trace.
    p.hub.handle(Input::ClientTrace { client: c, traceparent: Some(b"00-xyz"), tracestate: None, session: None, hop: false }, p.now);
    call(&mut p, c, 0, "fs__read", json!({}), json!({ "content": [] }));
    assert_eq!(spans(&mut p)[1].parent, None);
}

#[test]
fn sampling_follows_the_caller_then_the_ratio() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], traced(0.0, 64));
    let c = p.client("2025-06-18", json!({}));
    p.hub.trace().take(); // its initialize's
    // Ratio 0: a trace that starts here is not recorded, nothing is added.
    let up = call(&mut p, c, 0, "fs__read", json!({}), json!({ "content": [] }));
    assert!(up["params"]["_meta"].get("traceparent").is_none(), "{up}");
    assert!(spans(&mut p).is_empty());
    // A sampled caller is followed whatever the ratio.
    call(&mut p, c, 0, "fs__read", json!({ "traceparent": TP }), json!({ "content": [] }));
    assert_eq!(spans(&mut p).len(), 2);
    // An unsampled one too: nothing recorded, its context passes as it came.
    let unsampled = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
    let up = call(&mut p, c, 0, "fs__read", json!({ "traceparent": unsampled }), json!({ "content": [] }));
    assert_eq!(up["params"]["_meta"]["traceparent"], unsampled);
    assert!(spans(&mut p).is_empty());
}

#[test]
fn a_full_queue_drops_spans_and_counts_them() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], traced(1.0, 3));
    let c = p.client("2025-06-18", json!({}));
    p.hub.trace().take(); // its initialize's
    for _ in 0..3 {
        call(&mut p, c, 0, "fs__read", json!({}), json!({ "content": [] }));
    }
    assert_eq!(spans(&mut p).len(), 3);
    p.hub.trace().exported(3, true);
    let m = p.hub.metrics_text(0, 0).unwrap();
    assert!(m.contains("mcpx_trace_spans_total{outcome=\"dropped\"} 3"), "{m}");
    assert!(m.contains("mcpx_trace_spans_total{outcome=\"exported\"} 3"), "{m}");
}

#[test]
fn a_client_gone_ends_its_spans_and_tracing_off_records_nothing() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], traced(1.0, 64));
    let c = p.client("2025-06-18", json!({}));
    p.hub.trace().take(); // its initialize's
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read", "arguments": {} } }));
    p.take_up(0);
    p.hub.handle(Input::ClientDisconnected(c), p.now);
    let s = spans(&mut p);
    assert_eq!(s.len(), 2);
    assert!(s.iter().all(|sp| attr(sp, "error.type") == Some("cancelled")));

    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    assert!(!p.hub.trace().on());
    let c = p.client("2025-06-18", json!({}));
    p.hub.trace().take(); // its initialize's
    let up = call(&mut p, c, 0, "fs__read", json!({}), json!({ "content": [] }));
    assert!(up["params"]["_meta"].get("traceparent").is_none());
    assert!(spans(&mut p).is_empty());
    assert!(!p.hub.metrics_text(0, 0).unwrap().contains("mcpx_trace_spans_total{"));
}

#[test]
fn a_remote_upstream_gets_the_trace_as_a_header_too() {
    let mut s = specs(&["web"]);
    s[0].remote = true;
    let mut p = Pair::new(s, traced(1.0, 64));
    p.start(0, Fake::tools(&["get"]));
    let c = p.client("2025-06-18", json!({}));
    p.hub.trace().take(); // its initialize's
    let up = call(&mut p, c, 0, "web__get", json!({ "traceparent": TP }), json!({ "content": [] }));
    let header = p.upward.iter().rev().find_map(|(_, v, about)| match about {
        Upward::Request { traceparent: Some(t), .. } if v["method"] == "tools/call" => Some(String::from_utf8(t.bytes().to_vec()).unwrap()),
        _ => None,
    });
    assert_eq!(header.as_deref(), up["params"]["_meta"]["traceparent"].as_str());
    let s = spans(&mut p);
    assert_eq!(attr(&s[0], "mcpx.upstream.transport"), Some("http"));
}

#[test]
fn another_replica_continues_the_trace_under_this_ones_span() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], traced(1.0, 64));
    let c = p.client("2025-06-18", json!({}));
    p.hub.trace().take();
    p.send(c, json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": { "name": "fs__read", "arguments": {}, "_meta": { "traceparent": TP } } }));
    let up = p.take_up(0);
    // What a Forward of this request carries: this span as the parent.
    let ctx = String::from_utf8(p.hub.trace().context(c, b"9").unwrap().bytes().to_vec()).unwrap();
    assert!(ctx.starts_with(&format!("00-{TRACE_ID}-")) && ctx.ends_with("-01"), "{ctx}");
    assert!(p.hub.trace().context(c, b"10").is_none());
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    p.take(c);
    let server = spans(&mut p).pop().unwrap();
    assert_eq!(&ctx[36..52], hex(&server.span_id));

    // On the replica that gets it, the hop's context wins over the
    // client's own in `_meta`.
    let mut q = Pair::with(vec![("fs", Fake::tools(&["read"]))], traced(1.0, 64));
    let d = q.client("2025-06-18", json!({}));
    q.hub.trace().take();
    q.hub.handle(Input::ClientTrace { client: d, traceparent: Some(ctx.as_bytes()), tracestate: None, session: None, hop: true }, q.now);
    call(&mut q, d, 0, "fs__read", json!({ "traceparent": TP }), json!({ "content": [] }));
    let s = spans(&mut q);
    assert_eq!(hex(&s[1].trace_id), TRACE_ID);
    assert_eq!(s[1].parent, Some(server.span_id));
}

/// The span named `name` of `s`.
fn named<'s>(s: &'s [Span], name: &str) -> &'s Span {
    s.iter().find(|x| x.name == name).unwrap_or_else(|| panic!("no span {name:?} in {s:#?}"))
}

// A call waiting for a person's approval, then for its user's answer to
// the server's question: the wait and the input round are spans of their
// own, the round a child of the call that asked.
#[cfg(feature = "consent")]
#[test]
fn an_approval_wait_and_an_input_round_are_spans_of_their_own() {
    let src = json!({ "mcpServers": {}, "policy": { "approve": ["fs/write"], "approvals": { "timeoutMs": 60000 } } }).to_string();
    let cfg = crate::config::parse(&src, "mcpx.json", std::path::Path::new("/cfg"), &|_: &str| None).expect("a valid policy");
    let opts = HubOptions { policy: cfg.policy, startup_wait_ms: 0, ..traced(1.0, 64) };
    let mut p = Pair::with(vec![("fs", Fake::tools(&["write"]))], opts);
    p.now = 1000;
    let c = p.client("2025-06-18", json!({ "elicitation": { "form": {} } }));
    p.hub.trace().take();
    p.send(c, json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": { "name": "fs__write", "arguments": {} } }));
    let ask = p.take(c);
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    p.now = 1500;
    p.send(c, json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "accept", "content": { "approve": true } } }));
    let up = p.take_up(0);
    assert_eq!(up["method"], "tools/call");
    p.now = 1700;
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": { "mode": "form", "message": "Which file?", "requestedSchema": { "type": "object", "properties": {} } } }));
    let q = p.take(c);
    p.now = 2000;
    p.send(c, json!({ "jsonrpc": "2.0", "id": q["id"], "result": { "action": "accept", "content": {} } }));
    assert_eq!(p.take_up(0)["id"], "e1");
    p.now = 2100;
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    assert_eq!(p.take(c)["id"], 7);

    let s = spans(&mut p);
    assert_eq!(s.len(), 4, "{s:#?}");
    let server = s.iter().find(|x| x.kind == SpanKind::Server).unwrap();
    let wait = named(&s, "approval");
    let round = named(&s, "elicitation/create");
    let call = s.iter().find(|x| x.kind == SpanKind::Client && x.name == "tools/call fs__write").unwrap();
    assert_eq!((server.kind, server.start_ms, server.end_ms), (SpanKind::Server, 1000, 2100));
    assert_eq!((wait.kind, wait.start_ms, wait.end_ms, wait.parent), (SpanKind::Internal, 1000, 1500, Some(server.span_id)));
    assert_eq!(attr(wait, "mcpx.wait"), Some("approval"));
    assert_eq!((call.start_ms, call.end_ms, call.parent), (1500, 2100, Some(server.span_id)));
    assert_eq!((round.kind, round.start_ms, round.end_ms, round.parent), (SpanKind::Client, 1700, 2000, Some(call.span_id)));
    assert_eq!(attr(round, "mcp.method.name"), Some("elicitation/create"));
    assert!(s.iter().all(|x| x.trace_id == server.trace_id && x.error.is_none()), "{s:#?}");
}

// A call to a sleeping server waits for its start; a client that leaves
// while its input round is open cuts the round short with its request.
#[test]
fn a_start_wait_is_a_span_and_an_open_round_ends_with_its_request() {
    let spec = UpstreamSpec { lazy: true, ..UpstreamSpec::new("z") };
    let mut p = Pair::new(vec![spec], traced(1.0, 64));
    p.hub.handle(Input::SeedLists { up: 0, lists: &json!({ "capabilities": { "tools": {} }, "tools": [tool("y")] }), hold: false }, p.now);
    p.pump();
    p.now = 1100;
    let c = p.client("2025-11-25", json!({ "elicitation": {} }));
    p.hub.trace().take();
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "z__y" } }));
    p.now = 1400;
    p.start(0, Fake::tools(&["y"]));
    let up = p.take_up(0);
    assert_eq!(up["method"], "tools/call");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": { "mode": "form", "message": "?", "requestedSchema": { "type": "object", "properties": {} } } }));
    assert_eq!(p.take(c)["method"], "elicitation/create");
    p.now = 1900;
    p.hub.handle(Input::ClientDisconnected(c), p.now);
    p.pump();
    let s = spans(&mut p);
    let server = s.iter().find(|x| x.kind == SpanKind::Server).unwrap();
    let wait = named(&s, "server start");
    let round = named(&s, "elicitation/create");
    assert_eq!((wait.kind, wait.start_ms, wait.end_ms, wait.parent), (SpanKind::Internal, 1100, 1400, Some(server.span_id)));
    assert_eq!((round.start_ms, round.end_ms), (1400, 1900));
    assert_eq!(attr(server, "error.type"), Some("cancelled"));
    assert!(round.error.is_none() && wait.error.is_none(), "a wait or round cut short is not the error: {s:#?}");
}

// A call made as a task: the task is a span of its own under the request
// that created it, until it ends (an error when it fails or expires).
#[test]
fn a_task_is_a_span_from_its_creation_to_its_end() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], traced(1.0, 64));
    p.now = 2000;
    let c = p.client("2025-11-25", json!({ "tasks": {} }));
    p.hub.trace().take();
    let created = p.request(c, json!(3), "tools/call", json!({ "name": "fs__read", "arguments": {}, "task": { "ttl": 60000 } }));
    let task = created["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_string();
    let up = p.take_up(0);
    // The request's spans are done; the task's is not.
    let s = spans(&mut p);
    let server = s.iter().find(|x| x.kind == SpanKind::Server).unwrap_or_else(|| panic!("{s:#?}"));
    assert!(s.iter().all(|x| !x.name.starts_with("task ")), "{s:#?}");
    p.now = 2600;
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [], "isError": true } }));
    let s = spans(&mut p);
    let t = named(&s, "task tools/call fs__read");
    assert_eq!((t.kind, t.start_ms, t.end_ms, t.parent, t.trace_id), (SpanKind::Internal, 2000, 2600, Some(server.span_id), server.trace_id));
    assert_eq!(attr(t, "mcpx.task.id"), Some(task.as_str()));
    assert_eq!((attr(t, "mcpx.task.status"), attr(t, "error.type")), (Some("failed"), Some("failed")));
    assert_eq!(p.take(c)["params"]["status"], "failed", "its status, to its creator");
    // Another that runs past its ttl.
    let created = p.request(c, json!(4), "tools/call", json!({ "name": "fs__read", "arguments": {}, "task": { "ttl": 1000 } }));
    assert!(created["result"]["task"]["taskId"].is_string(), "{created}");
    p.take_up(0);
    p.hub.trace().take();
    p.advance(1500);
    let s = spans(&mut p);
    let t = named(&s, "task tools/call fs__read");
    assert_eq!(attr(t, "error.type"), Some("expired"), "{s:#?}");
}

// Stage *validate* is a span of its own (INTERNAL, a child of the
// request's) with its measured length, and says when it refused the call;
// a server whose calls are not validated has none.
#[cfg(feature = "validate")]
#[test]
fn validation_is_a_measured_span_that_says_when_it_refused() {
    let opts = HubOptions { traces: traced(1.0, 64).traces, ..super::policy::with_policy(json!({ "validate": { "servers": ["a"] } })) };
    let mut f = Fake::tools(&["typed"]);
    f.tools[0]["inputSchema"] = json!({ "type": "object", "properties": { "count": { "type": "integer" } }, "required": ["count"] });
    let mut p = Pair::with(vec![("a", f), ("b", Fake::tools(&["free"]))], opts);
    let c = p.client("2025-11-25", json!({}));
    p.names(c);
    p.hub.trace().take();
    let r = p.request(c, json!(3), "tools/call", json!({ "name": "a__typed", "arguments": { "count": "three" } }));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let s = spans(&mut p);
    assert_eq!(s.len(), 2, "the request's and its validation's: {s:?}");
    let (v, req) = (named(&s, "validate"), named(&s, "tools/call a__typed"));
    assert_eq!((v.kind, v.parent, v.trace_id), (SpanKind::Internal, Some(req.span_id), req.trace_id));
    assert_eq!(attr(v, "mcpx.stage"), Some("validate"));
    assert_eq!(attr(v, "error.type"), Some("-32602"));
    assert!(v.error.as_deref().is_some_and(|e| e.contains("validate")), "{v:?}");
    assert!(v.length_ns.is_some(), "measured finer than the hub's clock: {v:?}");
    // Valid arguments: the span says nothing went wrong, and the call goes on.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": { "name": "a__typed", "arguments": { "count": 3 } } }));
    let up = p.take_up(0);
    assert_eq!(up["params"]["name"], "typed");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    p.take(c);
    let s = spans(&mut p);
    let v = named(&s, "validate");
    assert!(v.error.is_none() && v.attr("error.type").is_none() && v.length_ns.is_some(), "{v:?}");
    assert_eq!(s.len(), 3, "request, validation, upstream call: {s:?}");
    // Not validated: no span.
    call(&mut p, c, 1, "b__free", json!({}), json!({ "content": [] }));
    assert!(spans(&mut p).iter().all(|s| s.name != "validate"));
}
