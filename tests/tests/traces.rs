//! OpenTelemetry traces through the real binary: a trace started by a real
//! SDK client (the MCP Python SDK over Streamable HTTP, with a `traceparent`
//! header on every request and `_meta.traceparent` on one call), continued
//! by real servers (FastMCP, on stdio and over Streamable HTTP, which report
//! the trace context they received), and exported by mcpx over OTLP/HTTP to
//! a receiver that parses every export with the OpenTelemetry protocol's
//! own classes (`opentelemetry-proto`, tests/drivers/otlp_receiver.py).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::{json, Value};

/// The client's context in `_meta` of its first call.
const META_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const META_PARENT: &str = "00f067aa0ba902b7";
/// The client's context in the HTTP header of every request.
const HEADER_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const HEADER_PARENT: &str = "b7ad6b7169203331";

/// The receiver, its port, and the lines it prints (one span or error each).
struct Receiver {
    child: Child,
    port: u16,
    lines: mpsc::Receiver<Value>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn receiver() -> Receiver {
    let python = repo_root().join(".peers/py/otel/bin/python");
    assert!(python.exists(), "opentelemetry-proto is not installed: run tests/peers/install.sh ({} missing)", python.display());
    let mut child = Command::new(python)
        .arg(driver("otlp_receiver.py"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the OTLP receiver");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).expect("the receiver's port");
    let port = first.trim().parse().unwrap_or_else(|_| panic!("the receiver printed {first:?}, not its port"));
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                if tx.send(v).is_err() {
                    return;
                }
            }
        }
    });
    Receiver { child, port, lines }
}

/// The spans received until `done` says they are enough (at most 20 s);
/// an export the receiver could not parse fails the test.
fn spans_until(r: &Receiver, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let mut spans = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done(&spans) {
        let left = deadline.saturating_duration_since(Instant::now());
        match r.lines.recv_timeout(left) {
            Ok(v) if v.get("error").is_some() => panic!("the receiver refused an export of mcpx: {v}"),
            Ok(v) => spans.push(v),
            Err(_) => panic!("the receiver did not get the spans expected within 20 s; got {spans:#?}"),
        }
    }
    spans
}

fn trace_server(name: &str) -> Cmd {
    Cmd::new(python("1.30.0"), &[driver("py_trace_server.py").to_str().unwrap(), "--name", name])
}

fn span<'a>(spans: &'a [Value], trace: &str, name: &str, kind: i64) -> Option<&'a Value> {
    spans.iter().map(|v| &v["span"]).find(|s| s["traceId"] == trace && s["name"] == name && s["kind"] == kind)
}

/// The traceparent an upstream got, split: (trace id, parent id, flags).
fn parts(tp: &str) -> (String, String, String) {
    let p: Vec<&str> = tp.split('-').collect();
    assert_eq!(p.len(), 4, "{tp}");
    assert_eq!(p[0], "00", "{tp}");
    (p[1].to_string(), p[2].to_string(), p[3].to_string())
}

#[test]
fn a_trace_crosses_client_mcpx_and_servers_and_reaches_the_collector() {
    let rx = receiver();
    let remote_port = free_port();
    let script = driver("py_trace_server.py");
    let remote_cmd = Cmd::new(python("1.30.0"), &[script.to_str().unwrap(), "--name", "web", "--http", &remote_port.to_string()]);
    let remote = HttpServer::start(&remote_cmd, remote_port, "/mcp");
    let hub = HubConfig::new()
        .upstream(Upstream { name: "local".into(), cmd: trace_server("local") })
        .remote("web", json!({ "url": remote.url }))
        .set("traces", json!({ "endpoint": format!("http://127.0.0.1:{}", rx.port), "serviceName": "mcpx-e2e" }))
        .write();
    let server = hub.serve_http();

    // The SDK client: a traceparent header on every request; the first call
    // also carries the context in `_meta` (which wins), the second not.
    let header = format!("00-{HEADER_TRACE}-{HEADER_PARENT}-01");
    let calls = json!([
        { "tool": "local__trace_seen", "meta": { "traceparent": format!("00-{META_TRACE}-{META_PARENT}-01"), "tracestate": "congo=t61rcWkgMzE" } },
        { "tool": "web__trace_seen", "meta": null },
    ]);
    let out = Command::new(python("1.30.0"))
        .args([driver("py_trace_client.py").to_str().unwrap(), &server.url, &header, &calls.to_string()])
        .output()
        .expect("run the SDK client");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("client said {:?} ({e}); stderr {}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)));
    assert!(out.status.success() && report["error"].is_null(), "{report}");
    let seen: Vec<Value> = report["results"].as_array().unwrap().iter().map(|t| serde_json::from_str(t.as_str().unwrap()).unwrap()).collect();

    // The stdio server got the client's trace with a new parent (mcpx's
    // span of the call) and the client's tracestate.
    let (t, local_parent, flags) = parts(seen[0]["meta"].as_str().unwrap_or_else(|| panic!("no _meta.traceparent upstream: {}", seen[0])));
    assert_eq!((t.as_str(), flags.as_str()), (META_TRACE, "01"));
    assert_ne!(local_parent, META_PARENT);
    assert_eq!(seen[0]["tracestate"], "congo=t61rcWkgMzE");
    // The remote server got the header's trace, in `_meta` and as its own
    // header, the same.
    let web_tp = seen[1]["meta"].as_str().unwrap_or_else(|| panic!("no _meta.traceparent upstream: {}", seen[1]));
    assert_eq!(seen[1]["header"].as_str(), Some(web_tp), "{}", seen[1]);
    let (t, web_parent, _) = parts(web_tp);
    assert_eq!(t, HEADER_TRACE);
    assert_ne!(web_parent, HEADER_PARENT);

    // The collector gets both calls' SERVER and CLIENT spans.
    let spans = spans_until(&rx, |s| {
        span(s, META_TRACE, "tools/call local__trace_seen", 3).is_some()
            && span(s, META_TRACE, "tools/call local__trace_seen", 2).is_some()
            && span(s, HEADER_TRACE, "tools/call web__trace_seen", 3).is_some()
            && span(s, HEADER_TRACE, "tools/call web__trace_seen", 2).is_some()
            && span(s, HEADER_TRACE, "initialize", 2).is_some()
    });
    for v in &spans {
        assert_eq!(v["resource"]["service.name"], "mcpx-e2e", "{v}");
    }
    for (trace, tool, parent, seen_parent, transport) in [
        (META_TRACE, "local__trace_seen", META_PARENT, &local_parent, "stdio"),
        (HEADER_TRACE, "web__trace_seen", HEADER_PARENT, &web_parent, "http"),
    ] {
        let srv = span(&spans, trace, &format!("tools/call {tool}"), 2).unwrap();
        let cli = span(&spans, trace, &format!("tools/call {tool}"), 3).unwrap();
        // client → mcpx's server span → mcpx's client span → the server.
        assert_eq!(srv["parentSpanId"], parent, "{srv}");
        assert_eq!(cli["parentSpanId"], srv["spanId"], "{cli}");
        assert_eq!(&cli["spanId"], seen_parent.as_str(), "the upstream's parent is mcpx's span of the call: {cli}");
        let a = &srv["attributes"];
        assert_eq!(a["mcp.method.name"], "tools/call", "{srv}");
        assert_eq!(a["gen_ai.tool.name"], tool, "{srv}");
        assert_eq!(a["gen_ai.operation.name"], "execute_tool", "{srv}");
        assert!(a["jsonrpc.request.id"].is_string(), "{srv}");
        assert!(a["mcp.session.id"].as_str().is_some_and(|s| s.len() == 32), "{srv}");
        assert!(a.get("error.type").is_none(), "{srv}");
        let b = &cli["attributes"];
        assert_eq!(b["mcpx.upstream.transport"], transport, "{cli}");
        assert_eq!(b["mcpx.upstream.name"], if transport == "http" { "web" } else { "local" }, "{cli}");
        assert!(b["mcp.protocol.version"].as_str().is_some_and(|v| v.starts_with("20")), "{cli}");
        // Times are Unix nanoseconds of now, the call within the request.
        let now_ns = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as f64;
        let start = srv["start"].as_f64().unwrap();
        assert!((now_ns - start).abs() < 120e9, "{srv}");
        assert!(srv["start"].as_u64() <= cli["start"].as_u64() && cli["end"].as_u64() <= srv["end"].as_u64(), "{srv} {cli}");
    }
    // The header's trace also has the client's initialize, a child of the
    // client's span.
    let init = span(&spans, HEADER_TRACE, "initialize", 2).unwrap();
    assert_eq!(init["parentSpanId"], HEADER_PARENT, "{init}");

    // /metrics counts what was exported, and nothing dropped.
    let base = server.url.trim_end_matches("/mcp").to_string();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let m = http(&format!("{base}/metrics"), &[], None);
        assert_eq!(m.status, 200, "{}", m.text);
        let exported = m.text.lines().find_map(|l| l.strip_prefix("mcpx_trace_spans_total{outcome=\"exported\"} ")).and_then(|n| n.parse::<f64>().ok()).unwrap_or(0.0);
        assert!(m.text.contains("mcpx_trace_spans_total{outcome=\"dropped\"} 0"), "{}", m.text);
        if exported >= 4.0 {
            break;
        }
        assert!(Instant::now() < deadline, "exported spans not counted: {}", m.text);
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn without_traces_nothing_is_added_to_what_upstreams_get() {
    let hub = HubConfig::new().upstream(Upstream { name: "local".into(), cmd: trace_server("local") }).write();
    let server = hub.serve_http();
    let header = format!("00-{HEADER_TRACE}-{HEADER_PARENT}-01");
    let calls = json!([
        { "tool": "local__trace_seen", "meta": null },
        { "tool": "local__trace_seen", "meta": { "traceparent": format!("00-{META_TRACE}-{META_PARENT}-01") } },
    ]);
    let out = Command::new(python("1.30.0"))
        .args([driver("py_trace_client.py").to_str().unwrap(), &server.url, &header, &calls.to_string()])
        .output()
        .expect("run the SDK client");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["error"].is_null(), "{report}");
    let seen: Vec<Value> = report["results"].as_array().unwrap().iter().map(|t| serde_json::from_str(t.as_str().unwrap()).unwrap()).collect();
    // Off: the header is not turned into `_meta`; a client's `_meta` passes as it came.
    assert!(seen[0]["meta"].is_null(), "{}", seen[0]);
    assert_eq!(seen[1]["meta"].as_str(), Some(format!("00-{META_TRACE}-{META_PARENT}-01").as_str()));
    let m = http(&format!("{}/metrics", server.url.trim_end_matches("/mcp")), &[], None);
    assert!(!m.text.contains("mcpx_trace_spans_total{"), "{}", m.text);
}

// A call whose arguments are validated, that waits for the user's approval,
// then for the user's answer to the server's question: the validation, the
// wait and the input round reach the collector as spans of their own, the
// round under mcpx's span of the call.
#[test]
fn validation_an_approval_wait_and_an_input_round_are_spans_in_the_trace() {
    let rx = receiver();
    let hub = HubConfig::new()
        .upstream(Upstream { name: "local".into(), cmd: trace_server("local") })
        .set("policy", json!({ "approve": ["local/ask_name"], "approvals": { "timeoutMs": 30000 }, "validate": { "servers": ["local"] } }))
        .set("traces", json!({ "endpoint": format!("http://127.0.0.1:{}", rx.port) }))
        .write();
    let server = hub.serve_http();
    let header = format!("00-{HEADER_TRACE}-{HEADER_PARENT}-01");
    let calls = json!([{ "tool": "local__ask_name", "meta": null }]);
    let out = Command::new(python("1.30.0"))
        .args([driver("py_trace_client.py").to_str().unwrap(), &server.url, &header, &calls.to_string()])
        .output()
        .expect("run the SDK client");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("client said {:?} ({e}); stderr {}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)));
    assert_eq!(report["results"], json!(["hello Ada"]), "{report}");

    let name = "tools/call local__ask_name";
    let spans = spans_until(&rx, |s| span(s, HEADER_TRACE, name, 2).is_some() && span(s, HEADER_TRACE, "approval", 1).is_some() && span(s, HEADER_TRACE, "elicitation/create", 3).is_some() && span(s, HEADER_TRACE, "validate", 1).is_some());
    let srv = span(&spans, HEADER_TRACE, name, 2).unwrap();
    let call = span(&spans, HEADER_TRACE, name, 3).unwrap();
    let wait = span(&spans, HEADER_TRACE, "approval", 1).unwrap();
    let round = span(&spans, HEADER_TRACE, "elicitation/create", 3).unwrap();
    assert_eq!(wait["parentSpanId"], srv["spanId"], "{wait}");
    assert_eq!(wait["attributes"]["mcpx.wait"], "approval", "{wait}");
    let valid = span(&spans, HEADER_TRACE, "validate", 1).unwrap();
    assert_eq!(valid["parentSpanId"], srv["spanId"], "{valid}");
    assert_eq!(valid["attributes"]["mcpx.stage"], "validate", "{valid}");
    assert!(valid["status"].get("code").is_none_or(|c| c != 2), "the arguments are valid: {valid}");
    assert_eq!(call["parentSpanId"], srv["spanId"], "{call}");
    assert_eq!(round["parentSpanId"], call["spanId"], "{round}");
    assert_eq!(round["attributes"]["mcp.method.name"], "elicitation/create", "{round}");
    let t = |s: &Value, k: &str| s[k].as_u64().unwrap_or_else(|| panic!("no {k}: {s}"));
    // Validation, then the approval, before the call; the round inside it.
    assert!(t(srv, "start") <= t(valid, "start") && t(valid, "start") <= t(valid, "end") && t(valid, "start") <= t(wait, "start"), "{valid} {wait}");
    assert!(t(srv, "start") <= t(wait, "start") && t(wait, "end") <= t(call, "start"), "{wait} {call}");
    assert!(t(call, "start") <= t(round, "start") && t(round, "end") <= t(call, "end"), "{call} {round}");
}

// A 2025-11-25 client's call made as a task (mcpx runs it: the FastMCP
// server knows no tasks): the task reaches the collector as a span of its
// own, under the request that created it, ending when the task completes.
#[test]
fn a_task_is_a_span_in_the_trace() {
    let rx = receiver();
    let hub = HubConfig::new()
        .upstream(Upstream { name: "local".into(), cmd: trace_server("local") })
        .set("traces", json!({ "endpoint": format!("http://127.0.0.1:{}", rx.port) }))
        .write();
    let mut s = RawSession::spawn(&hub.serve());
    s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"tasks": {}}, "clientInfo": {"name": "traces-test", "version": "1"}}}));
    s.response_to(1, Duration::from_secs(20));
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let tp = format!("00-{META_TRACE}-{META_PARENT}-01");
    s.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "local__trace_seen", "arguments": {}, "task": {"ttl": 60000}, "_meta": {"traceparent": tp}}}));
    let created = s.response_to(2, Duration::from_secs(20));
    let task = created["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("not a task: {created}")).to_string();
    let name = "tools/call local__trace_seen";
    let spans = spans_until(&rx, |sp| span(sp, META_TRACE, &format!("task {name}"), 1).is_some());
    let srv = span(&spans, META_TRACE, name, 2).unwrap_or_else(|| panic!("{spans:#?}"));
    let t = span(&spans, META_TRACE, &format!("task {name}"), 1).unwrap();
    assert_eq!(t["parentSpanId"], srv["spanId"], "{t}");
    assert_eq!(t["attributes"]["mcpx.task.id"], task.as_str(), "{t}");
    assert_eq!(t["attributes"]["mcpx.task.status"], "completed", "{t}");
    assert!(t["attributes"].get("error.type").is_none(), "{t}");
    assert!(srv["end"].as_u64() <= t["end"].as_u64(), "the task outlives its request: {srv} {t}");
    s.finish();
}

// Two replicas sharing a real Redis: an input round started on r1 and
// completed through r2, which forwards the retry over the hop to r1 (the
// call's owner). One trace: the client's, through r2's span of the retry
// into r1's, each replica exporting its own spans.
#[test]
fn a_request_forwarded_to_another_replica_continues_the_trace_there() {
    let rx = receiver();
    let dir = TempDir::new();
    std::fs::write(dir.path().join("state.key"), "2a".repeat(32)).unwrap();
    let (_redis, redis_port) = redis_server();
    let ports = [free_port(), free_port()];
    let demo = example_server_cmd("demo");
    let replicas: Vec<HttpServer> = (0..2)
        .map(|i| {
            let cfg = json!({
                // demo speaks 2025-11-25 with mcpx: its question waits in
                // the replica that holds the call.
                "mcpServers": {"demo": {"command": demo.program, "args": demo.args, "revisions": ["2025-11-25"]}},
                "state": {"url": format!("redis://127.0.0.1:{redis_port}/0"), "keyFile": dir.path().join("state.key")},
                "cluster": {"replica": format!("r{}", i + 1), "peers": {format!("r{}", 2 - i): format!("http://127.0.0.1:{}", ports[1 - i])}},
                "traces": {"endpoint": format!("http://127.0.0.1:{}", rx.port), "serviceName": format!("mcpx-r{}", i + 1)},
            });
            let path = dir.path().join(format!("r{}.json", i + 1));
            std::fs::write(&path, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
            let addr = format!("127.0.0.1:{}", ports[i]);
            HttpServer::start(&Cmd::new(mcpx(), &["serve", "--http", &addr, "--config", &path.to_string_lossy()]), ports[i], "/mcp")
        })
        .collect();
    let tp = format!("00-{META_TRACE}-{META_PARENT}-01");
    let ask = |id: i64, more: Value| {
        let mut params = json!({"name": "demo__ask_user", "arguments": {"message": "Which replica?"}});
        for (k, v) in more.as_object().unwrap() {
            params[k] = v.clone();
        }
        let mut msg = modern_request(id, "tools/call", params, json!({"elicitation": {"form": {}}}));
        msg["params"]["_meta"]["traceparent"] = json!(tp);
        msg
    };
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "demo__ask_user")];
    // Wait for r1's demo, then start the round there.
    let deadline = Instant::now() + Duration::from_secs(20);
    let first = loop {
        let r = post(&replicas[0].url, &headers, &ask(1, json!({})));
        if r.json["result"]["resultType"] == "input_required" {
            break r.json;
        }
        assert!(Instant::now() < deadline, "no input round from r1: {} {}", r.status, r.text);
        std::thread::sleep(Duration::from_millis(200));
    };
    let key = first["result"]["inputRequests"].as_object().and_then(|m| m.keys().next().cloned()).unwrap();
    let retry = ask(2, json!({"inputResponses": {key: {"action": "accept", "content": {"answer": "yes"}}}, "requestState": first["result"]["requestState"]}));
    let r = post(&replicas[1].url, &headers, &retry);
    assert!(r.json["result"]["content"].is_array() && r.json["result"]["resultType"] != "input_required", "the retry through r2: {} {}", r.status, r.text);

    let name = "tools/call demo__ask_user";
    let of = |s: &Value, svc: &str| s["resource"]["service.name"] == svc;
    let spans = spans_until(&rx, |s| {
        s.iter().filter(|v| v["span"]["traceId"] == META_TRACE && v["span"]["name"] == name && v["span"]["kind"] == 2).count() >= 3
    });
    let servers: Vec<&Value> = spans.iter().filter(|v| v["span"]["traceId"] == META_TRACE && v["span"]["name"] == name && v["span"]["kind"] == 2).collect();
    // r2's span of the retry is the client's child; r1's span of the
    // forwarded retry is r2's.
    let r2 = servers.iter().find(|v| of(v, "mcpx-r2")).unwrap_or_else(|| panic!("no span of r2: {servers:#?}"));
    assert_eq!(r2["span"]["parentSpanId"], META_PARENT, "{r2}");
    let forwarded = servers.iter().find(|v| of(v, "mcpx-r1") && v["span"]["parentSpanId"] == r2["span"]["spanId"]);
    assert!(forwarded.is_some(), "r1 continues r2's span of the retry: {servers:#?}");
    drop(replicas);
}
