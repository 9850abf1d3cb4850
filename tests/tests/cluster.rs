//! Replicas behind a load balancer (issue 16): Redis, three `mcpx serve
//! --http` replicas sharing a state key, and HAProxy with the shipped
//! deploy/cluster/haproxy.cfg.in, all on free loopback ports, started and
//! stopped by the test (redis-server and haproxy from Debian: a missing one
//! fails the test; .ci/run installs them).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::{json, Value};

/// Redis, the replicas, HAProxy; everything is killed on drop.
struct Cluster {
    _dir: TempDir,
    redis: HttpServer,
    redis_port: u16,
    replicas: Vec<HttpServer>,
    _haproxy: HttpServer,
    /// The MCP endpoint through HAProxy.
    front: String,
    /// A tool of each upstream, listed once the replica is ready.
    ready_tools: Vec<String>,
}

fn replica_config(dir: &Path, i: usize, ports: &[u16], redis: u16, upstreams: &[(&str, Cmd)]) -> std::path::PathBuf {
    let servers: serde_json::Map<String, Value> =
        upstreams.iter().map(|(name, cmd)| (name.to_string(), json!({"command": cmd.program, "args": cmd.args}))).collect();
    let peers: serde_json::Map<String, Value> = (0..ports.len())
        .filter(|&j| j != i)
        .map(|j| (format!("r{}", j + 1), json!(format!("http://127.0.0.1:{}", ports[j]))))
        .collect();
    let cfg = json!({
        "mcpServers": servers,
        "state": {"url": format!("redis://127.0.0.1:{redis}/0"), "keyFile": dir.join("state.key")},
        "cluster": {"replica": format!("r{}", i + 1), "peers": peers},
    });
    let path = dir.join(format!("r{}.json", i + 1));
    std::fs::write(&path, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
    path
}

fn start_cluster() -> Cluster {
    start_cluster_with(&[("demo", example_server_cmd("demo"))])
}

fn start_cluster_with(upstreams: &[(&str, Cmd)]) -> Cluster {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("state.key"), "2a".repeat(32)).unwrap();
    let (redis, redis_port) = redis_server();
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let replicas = (0..3)
        .map(|i| {
            let cfg = replica_config(dir.path(), i, &ports, redis_port, upstreams);
            let addr = format!("127.0.0.1:{}", ports[i]);
            HttpServer::start(&Cmd::new(mcpx(), &["serve", "--http", &addr, "--config", &cfg.to_string_lossy()]), ports[i], "/mcp")
        })
        .collect();
    let front = free_port();
    let template = std::fs::read_to_string(repo_root().join("deploy/cluster/haproxy.cfg.in")).unwrap();
    let haproxy_cfg = template
        .replace("@PORT@", &front.to_string())
        .replace("@R1@", &ports[0].to_string())
        .replace("@R2@", &ports[1].to_string())
        .replace("@R3@", &ports[2].to_string());
    let cfg_path = dir.path().join("haproxy.cfg");
    std::fs::write(&cfg_path, haproxy_cfg).unwrap();
    let haproxy = HttpServer::start(&Cmd::new("haproxy", &["-db", "-f", &cfg_path.to_string_lossy()]), front, "/mcp");
    let ready_tools = upstreams.iter().map(|(name, _)| format!("{name}__{}", if *name == "py" { "ask_user" } else { "greet" })).collect();
    let c = Cluster { _dir: dir, redis, redis_port, replicas, _haproxy: haproxy, front: format!("http://127.0.0.1:{front}/mcp"), ready_tools };
    for r in &c.replicas {
        c.wait_ready(r);
    }
    c
}

impl Cluster {
    /// Waits (at most 20 s) until replica `r` lists every upstream's tools, then for
    /// HAProxy's health check to have seen it (checks every 500 ms).
    fn wait_ready(&self, r: &HttpServer) {
        let t0 = Instant::now();
        loop {
            let got = post(&r.url, &modern_headers("tools/list", None), &modern_request(1, "tools/list", json!({}), json!({})));
            if self.ready_tools.iter().all(|t| got.text.contains(t.as_str())) {
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "replica {} not ready: {} {}", r.url, got.status, got.text);
            thread::sleep(Duration::from_millis(100));
        }
        thread::sleep(Duration::from_millis(1200));
    }
}

fn modern_headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method)];
    if let Some(n) = name {
        h.push(("Mcp-Name", n));
    }
    h
}

/// A modern `demo__greet` call through `url`: its answer text, or why not.
fn modern_greet(url: &str, id: i64, who: &str) -> Result<String, String> {
    let msg = modern_request(id, "tools/call", json!({"name": "demo__greet", "arguments": {"name": who}}), json!({}));
    let r = post(url, &modern_headers("tools/call", Some("demo__greet")), &msg);
    match r.json.pointer("/result/content/0/text").and_then(Value::as_str) {
        Some(t) if r.status == 200 => Ok(t.to_string()),
        _ => Err(format!("{} {}", r.status, r.text)),
    }
}

/// A legacy session opened through `url`: its `Mcp-Session-Id`.
fn legacy_session(url: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cluster-test", "version": "1"}}});
    let r = post(url, &[], &init);
    assert_eq!(r.status, 200, "initialize: {}", r.text);
    let sid = r.header("mcp-session-id").expect("a session id").to_string();
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = post(url, &[("Mcp-Session-Id", &sid), ("MCP-Protocol-Version", "2025-11-25")], &done);
    assert_eq!(r.status, 202, "initialized: {}", r.text);
    sid
}

/// `tools/list` in legacy session `sid` through `url`: the status.
fn legacy_list(url: &str, sid: &str) -> u16 {
    let msg = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let r = post(url, &[("Mcp-Session-Id", sid), ("MCP-Protocol-Version", "2025-11-25")], &msg);
    assert!(r.status != 200 || r.text.contains("demo__greet"), "{}", r.text);
    r.status
}

/// The replica the session directory in Redis names for `sid` (index).
fn listed_owner(c: &Cluster, sid: &str) -> Option<usize> {
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &c.redis_port.to_string(), "GET", &format!("mcpx:session:{sid}")])
        .output()
        .expect("redis-cli (comes with redis-server)");
    // The value is sealed (`v1.<MAC>.<replica id>`).
    let value = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let id = value.rsplit('.').next().unwrap_or_default();
    id.strip_prefix('r').and_then(|n| n.parse::<usize>().ok()).map(|n| n - 1)
}

/// Which replica owns session `sid`: the one the directory names; every
/// replica serves the session (the others pass it on to the owner).
fn owner(c: &Cluster, sid: &str) -> usize {
    let owner = listed_owner(c, sid).expect("the session is in the directory");
    let statuses: Vec<u16> = c.replicas.iter().map(|r| legacy_list(&r.url, sid)).collect();
    assert_eq!(statuses, [200; 3], "every replica serves the session (through its owner)");
    owner
}

/// The SDK clients of [`sdk_load`]: Python and TypeScript, each in the
/// 2026-07-28 era and with a legacy session.
const LOAD_CLIENTS: [Client; 4] = [Client::Py2Mode("2026-07-28"), Client::Py("1.30.0"), Client::TsV2("2026-07-28"), Client::TsV1];

/// SDK clients through HAProxy at once: `n` of each of [`LOAD_CLIENTS`],
/// each one call.
fn sdk_load(url: &str, n: usize, tag: &str) {
    sdk_load_of(&LOAD_CLIENTS, url, n, tag);
}

/// SDK clients through `url` at once: `n` of each of `clients`, each one
/// call (its own session for a legacy client).
fn sdk_load_of(clients: &'static [Client], url: &str, n: usize, tag: &str) {
    let runs: Vec<_> = (0..clients.len() * n)
        .map(|i| {
            let url = url.to_string();
            let name = format!("{tag}{i}");
            thread::spawn(move || {
                let client = clients[i % clients.len()];
                let args = json!({"name": name}).to_string();
                let want = format!("Hello, {name}!");
                let r = client.run_url(&["--prefix", "demo__", "--expect-text", &want, "call", "greet", &args], &url);
                (i, r.code == Some(0) && r.json["ok"] == true, r.to_string())
            })
        })
        .collect();
    for h in runs {
        let (i, ok, report) = h.join().unwrap();
        assert!(ok, "SDK client {i} ({:?}, {tag}) through {url}: {report}", clients[i % clients.len()]);
    }
}

#[test]
fn a_replica_killed_and_restarted_under_load() {
    let mut c = start_cluster();
    // Every call answered, modern ones spread over the replicas.
    sdk_load(&c.front, 2, "before");
    for i in 0..6 {
        assert_eq!(modern_greet(&c.front, i, "m").as_deref(), Ok("Hello, m!"));
    }
    // A legacy session lives on one replica; the others pass its requests on.
    let sid = legacy_session(&c.front);
    let victim = owner(&c, &sid);
    assert_eq!(legacy_list(&c.front, &sid), 200, "HAProxy sticks to the session's replica");

    // Modern callers keep calling while the session's replica dies. The
    // one call that replica was answering when it died may be cut off
    // (HAProxy's 502: a POST is not retried once sent); every other call
    // is answered by the others.
    let front = c.front.clone();
    let callers = thread::spawn(move || {
        let t0 = Instant::now();
        let (mut answered, mut cut) = (0, Vec::new());
        for i in 0..40 {
            match modern_greet(&front, 100 + i, "during") {
                Ok(_) => answered += 1,
                Err(e) if e.starts_with("502 ") && cut.is_empty() => cut.push(i),
                Err(e) => return Err(format!("call {i} failed: {e} (cut off before: {cut:?})")),
            }
            thread::sleep(Duration::from_millis(50));
        }
        Ok::<_, String>((answered + cut.len(), t0.elapsed()))
    });
    thread::sleep(Duration::from_millis(300));
    c.replicas[victim].kill();
    let sdk_during = {
        let front = c.front.clone();
        thread::spawn(move || sdk_load(&front, 1, "during"))
    };
    let (answered, took) = callers.join().unwrap().expect("modern calls keep succeeding through the other replicas");
    assert_eq!(answered, 40);
    assert!(took < Duration::from_secs(30), "nothing hangs: {took:?}");
    sdk_during.join().expect("SDK clients during the kill");

    // The dead replica's session goes on through HAProxy: a live replica
    // takes it over (same id, no new initialize), at once. New sessions
    // open on the live replicas.
    let t0 = Instant::now();
    assert_eq!(legacy_list(&c.front, &sid), 200, "a session of the dead replica, taken over");
    assert!(t0.elapsed() < Duration::from_secs(5), "taken over at once: {:?}", t0.elapsed());
    assert_ne!(owner_among(&c, &sid, victim), victim);
    let again = legacy_session(&c.front);
    assert_eq!(legacy_list(&c.front, &again), 200);
    assert_ne!(owner_among(&c, &again, victim), victim);

    // Restarted, it rejoins: round robin gives it new sessions again.
    c.replicas[victim].restart();
    c.wait_ready(&c.replicas[victim]);
    let owners: Vec<usize> = (0..3).map(|_| owner(&c, &legacy_session(&c.front))).collect();
    assert!(owners.contains(&victim), "the restarted replica gets sessions again: {owners:?}");
    sdk_load(&c.front, 1, "after");
}

/// [`owner`] while replica `dead` is down (it is not asked).
fn owner_among(c: &Cluster, sid: &str, dead: usize) -> usize {
    let owner = listed_owner(c, sid).expect("the session is in the directory");
    let live: Vec<usize> = (0..3).filter(|&i| i != dead).collect();
    assert!(live.iter().all(|&i| legacy_list(&c.replicas[i].url, sid) == 200), "every live replica serves the new session");
    owner
}

#[test]
fn the_hop_refuses_what_is_not_signed_by_a_replica() {
    let c = start_cluster();
    let msg = modern_request(1, "tools/call", json!({"name": "demo__greet", "arguments": {"name": "x"}}), json!({}));
    let hop = c.replicas[0].url.replace("/mcp", "/.mcpx/hop");
    let r = post(&hop, &modern_headers("tools/call", Some("demo__greet")), &msg);
    assert_eq!(r.status, 401, "{}", r.text);
    assert!(r.text.contains("internal hop between mcpx replicas"), "{}", r.text);
    let forged = [
        ("mcpx-hop-from", "r2"),
        ("mcpx-hop-time", "1"),
        ("mcpx-hop-nonce", "AAAAAAAAAAAAAAAAAAAAAA"),
        ("mcpx-hop-principal", "YW5vbnltb3Vz"),
        ("mcpx-hop-mac", "AAAA"),
    ];
    let r = post(&hop, &forged, &msg);
    assert_eq!(r.status, 403, "{}", r.text);
    // Through HAProxy too: the hop is no way around a replica's checks.
    let r = post(&c.front.replace("/mcp", "/.mcpx/hop"), &[], &msg);
    assert_eq!(r.status, 401, "{}", r.text);
}

/// A 2026-07-28 `py__ask_user` call (a legacy upstream that elicits):
/// with `retry` = (input key, requestState) it is the completion.
fn ask_user(id: i64, retry: Option<(&str, &str)>) -> Value {
    let mut params = json!({"name": "py__ask_user", "arguments": {"question": "which replica?"}});
    if let Some((key, state)) = retry {
        params["inputResponses"] = json!({key: {"action": "accept", "content": {"answer": "any of them"}}});
        params["requestState"] = json!(state);
    }
    modern_request(id, "tools/call", params, json!({"elicitation": {}}))
}

fn post_ask(url: &str, msg: &Value) -> Resp {
    post(url, &modern_headers("tools/call", Some("py__ask_user")), msg)
}

/// Starts an elicitation through `url`: (input key, requestState).
fn input_required(url: &str, id: i64) -> (String, String) {
    let r = post_ask(url, &ask_user(id, None));
    let v = &r.json["result"];
    assert_eq!(v["resultType"], "input_required", "{} {}", r.status, r.text);
    let key = v["inputRequests"].as_object().and_then(|o| o.keys().next().cloned()).expect("an input request");
    (key, v["requestState"].as_str().expect("a requestState").to_string())
}

fn error_text(r: &Resp) -> String {
    r.json["error"]["message"].as_str().unwrap_or_default().to_string()
}

// covers: mrtr-single-use-enforced
#[test]
fn a_request_state_is_completed_on_its_owner_and_refused_when_replayed_anywhere() {
    let c = start_cluster_with(&[("demo", example_server_cmd("demo")), ("py", py_server_cmd("py"))]);
    let [r1, r2, r3] = [&c.replicas[0].url, &c.replicas[1].url, &c.replicas[2].url];
    // Obtained through replica 1, whose upstream call waits for the answer.
    let (key, state) = input_required(r1, 1);
    // Completed through replica 2: forwarded to replica 1, which owns it.
    let t0 = Instant::now();
    let r = post_ask(r2, &ask_user(2, Some((&key, &state))));
    assert_eq!(r.json.pointer("/result/content/0/text").and_then(Value::as_str), Some("user answered: any of them"), "{} {}", r.status, r.text);
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    // Replayed through replica 3 (and 1, and 2): refused.
    for url in [r3, r1, r2] {
        let r = post_ask(url, &ask_user(3, Some((&key, &state))));
        assert!(r.json.get("error").is_some() && r.status >= 400, "a replay through {url} must be refused: {} {}", r.status, r.text);
    }
}

#[test]
fn redis_stopped_in_the_middle_gives_clear_errors_refuses_replays_and_recovers() {
    let mut c = start_cluster_with(&[("demo", example_server_cmd("demo")), ("py", py_server_cmd("py"))]);
    let [r1, r2] = [c.replicas[0].url.clone(), c.replicas[1].url.clone()];
    let (key, state) = input_required(&r1, 1);
    let done = post_ask(&r2, &ask_user(2, Some((&key, &state))));
    assert!(done.json.get("result").is_some(), "{}", done.text);
    let (key2, state2) = input_required(&r1, 3);

    c.redis.kill();
    // Affected requests: a clear error, at once; a replay is refused.
    let t0 = Instant::now();
    let r = post_ask(&r2, &ask_user(4, Some((&key, &state))));
    assert!(r.json.get("error").is_some(), "a replay while Redis is away must be refused: {}", r.text);
    let r = post_ask(&r2, &ask_user(5, Some((&key2, &state2))));
    assert!(r.json.get("error").is_some(), "an unchecked state is refused, not accepted: {}", r.text);
    let why = error_text(&r).to_ascii_lowercase();
    assert!(why.contains("redis") || why.contains("shared state"), "the error says why: {}", r.text);
    assert!(t0.elapsed() < Duration::from_secs(5), "nothing hangs: {:?}", t0.elapsed());

    // Redis back (empty): service resumes; a new elicitation round trip
    // across replicas works, and a replay is refused again.
    c.redis.restart();
    let t0 = Instant::now();
    let (key3, state3) = loop {
        let r = post_ask(&r1, &ask_user(6, None));
        if r.json.pointer("/result/resultType") == Some(&json!("input_required")) {
            let v = &r.json["result"];
            break (v["inputRequests"].as_object().unwrap().keys().next().unwrap().clone(), v["requestState"].as_str().unwrap().to_string());
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "no recovery after Redis came back: {}", r.text);
        thread::sleep(Duration::from_millis(200));
    };
    let r = post_ask(&r2, &ask_user(7, Some((&key3, &state3))));
    assert_eq!(r.json.pointer("/result/content/0/text").and_then(Value::as_str), Some("user answered: any of them"), "{}", r.text);
    let r = post_ask(&c.replicas[2].url, &ask_user(8, Some((&key3, &state3))));
    assert!(r.json.get("error").is_some(), "replay after recovery: {}", r.text);
}

/// The headers of a request in legacy session `sid`.
fn in_session(sid: &str) -> [(&str, &str); 2] {
    [("Mcp-Session-Id", sid), ("MCP-Protocol-Version", "2025-11-25")]
}

/// A request without a body (`DELETE`, or a `GET` stream's head) on a new
/// connection to `url`; the connection, the request sent.
fn send_bare(url: &str, method: &str, headers: &[(&str, &str)]) -> TcpStream {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let mut s = TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\n");
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    s.write_all(format!("{head}\r\n").as_bytes()).unwrap();
    s
}

/// Reads `s` until `needle` shows up or `limit` passes; all it read.
fn read_until(s: &mut TcpStream, needle: &str, limit: Duration) -> String {
    let t0 = Instant::now();
    let (mut all, mut buf) = (Vec::new(), [0u8; 16384]);
    while t0.elapsed() < limit && !String::from_utf8_lossy(&all).contains(needle) {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => all.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
    }
    String::from_utf8_lossy(&all).into_owned()
}

/// A legacy `tools/call` of `tool` in session `sid` through `url`.
fn legacy_call(url: &str, sid: &str, id: i64, tool: &str, args: Value, meta: Value) -> Resp {
    let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args, "_meta": meta}});
    post(url, &in_session(sid), &msg)
}

// covers: streamable-http-server-json-or-sse-for-request, streamable-http-client-delete-session, streamable-http-server-404-terminated-session
#[test]
fn a_legacy_session_opened_on_one_replica_is_served_through_the_others_until_it_ends() {
    let c = start_cluster();
    let [r1, r2, r3] = [&c.replicas[0].url, &c.replicas[1].url, &c.replicas[2].url];
    // Opened on replica 1 directly, not through HAProxy.
    let sid = legacy_session(r1);
    assert_eq!(listed_owner(&c, &sid), Some(0), "published before the initialize answer");
    // A JSON answer through replica 2.
    let r = legacy_call(r2, &sid, 10, "demo__greet", json!({"name": "via r2"}), json!({}));
    assert_eq!((r.status, r.header("content-type")), (200, Some("application/json")), "{}", r.text);
    assert_eq!(r.json.pointer("/result/content/0/text").and_then(Value::as_str), Some("Hello, via r2!"), "{}", r.text);
    // An SSE answer (progress, then the result) through replica 3.
    let r = legacy_call(r3, &sid, 11, "demo__slow", json!({"seconds": 0.3, "steps": 3}), json!({"progressToken": "p"}));
    assert_eq!((r.status, r.header("content-type")), (200, Some("text/event-stream")), "{}", r.text);
    assert_eq!(r.text.matches("notifications/progress").count(), 3, "{}", r.text);
    assert!(r.json.pointer("/result/content/0/text").is_some(), "{}", r.text);
    // The GET stream through replica 2 gets the session's notification.
    assert_eq!(legacy_list(r3, &sid), 200);
    let mut get = send_bare(r2, "GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &sid)]);
    let head = read_until(&mut get, "\r\n\r\n", Duration::from_secs(3));
    assert!(head.starts_with("HTTP/1.1 200") && head.contains("text/event-stream"), "{head}");
    let r = legacy_call(r3, &sid, 12, "demo__toggle_tool", json!({}), json!({}));
    assert_eq!(r.status, 200, "{}", r.text);
    let got = read_until(&mut get, "list_changed", Duration::from_secs(5));
    assert!(got.contains("notifications/tools/list_changed"), "the GET stream through replica 2: {got}");
    // DELETE through replica 3 ends it: 404 everywhere, out of the directory.
    let mut del = send_bare(r3, "DELETE", &in_session(&sid));
    let answer = read_until(&mut del, "\r\n\r\n", Duration::from_secs(3));
    assert!(answer.starts_with("HTTP/1.1 204"), "{answer}");
    for url in [r1, r2, r3] {
        assert_eq!(legacy_list(url, &sid), 404, "{url}");
    }
    assert_eq!(listed_owner(&c, &sid), None);
}

/// `redis-cli` on the cluster's Redis: what it printed.
fn redis_cli(c: &Cluster, args: &[&str]) -> String {
    let out = std::process::Command::new("redis-cli").arg("-p").arg(c.redis_port.to_string()).args(args).output().expect("redis-cli (comes with redis-server)");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The state legacy session `sid` keeps in Redis (sealed: `v1.<MAC>.<JSON>`).
fn kept_state(c: &Cluster, sid: &str) -> String {
    redis_cli(c, &["GET", &format!("mcpx:session-state:{sid}")])
}

/// Waits (at most 5 s) until `sid`'s state in Redis holds each of `parts`.
fn wait_kept(c: &Cluster, sid: &str, parts: &[&str]) {
    let t0 = Instant::now();
    while !parts.iter().all(|p| kept_state(c, sid).contains(p)) {
        assert!(t0.elapsed() < Duration::from_secs(5), "{sid}'s state lacks one of {parts:?}: {}", kept_state(c, sid));
        thread::sleep(Duration::from_millis(50));
    }
}

/// A legacy request in session `sid` through `url`.
fn legacy_request(url: &str, sid: &str, id: i64, method: &str, params: Value) -> Resp {
    post(url, &in_session(sid), &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

// covers: streamable-http-server-404-terminated-session
#[test]
fn a_legacy_session_of_a_killed_replica_is_taken_over_with_its_subscription_and_log_level() {
    let mut c = start_cluster();
    let [r1, r2, r3] = [c.replicas[0].url.clone(), c.replicas[1].url.clone(), c.replicas[2].url.clone()];
    // On replica 1: a session that read its tools, subscribed to a resource
    // and asked for logs; and two more whose state is tampered with below.
    let sid = legacy_session(&r1);
    let (unsealed, moved) = (legacy_session(&r1), legacy_session(&r1));
    assert_eq!(legacy_list(&r1, &sid), 200);
    let r = legacy_request(&r1, &sid, 3, "resources/subscribe", json!({"uri": "test://watched-resource"}));
    assert_eq!(r.status, 200, "{}", r.text);
    let r = legacy_request(&r1, &sid, 4, "logging/setLevel", json!({"level": "info"}));
    assert_eq!(r.status, 200, "{}", r.text);
    wait_kept(&c, &sid, &[r#""logLevel":"info""#, "test://watched-resource", r#""listed":["tools"]"#]);
    for other in [&unsealed, &moved] {
        wait_kept(&c, other, &[r#""initialized":true"#]);
    }
    c.replicas[0].kill();

    // Tampered with in Redis: written without the state key, or another
    // session's state moved under this one's key. Not taken over: 404, and
    // the entry goes.
    redis_cli(&c, &["SET", &format!("mcpx:session-state:{unsealed}"), r#"{"protocolVersion":"2025-11-25"}"#]);
    redis_cli(&c, &["COPY", &format!("mcpx:session-state:{sid}"), &format!("mcpx:session-state:{moved}"), "REPLACE"]);
    for bad in [&unsealed, &moved] {
        assert_eq!(legacy_list(&r2, bad), 404, "{bad}");
        assert_eq!(listed_owner(&c, bad), None);
    }

    // The session itself goes on through replica 2, under its id, at once.
    let t0 = Instant::now();
    assert_eq!(legacy_list(&r2, &sid), 200, "taken over");
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert_eq!(listed_owner(&c, &sid), Some(1), "the entry names replica 2 now");
    // Its subscription: replica 2's server has a subscriber to notify.
    let r = legacy_call(&r2, &sid, 5, "demo__update_resource", json!({}), json!({}));
    assert!(r.text.contains("notified subscribers") && r.text.contains("notifications/resources/updated"), "{}", r.text);
    // Its log level: a log message comes with the call (through replica 3,
    // which passes it on to the new owner).
    let r = legacy_call(&r3, &sid, 6, "demo__test_logging_tool", json!({}), json!({}));
    assert!(r.text.contains("notifications/message") && r.text.contains("test_logging_tool was called"), "{}", r.text);
    // Ended by DELETE: 404 everywhere, out of Redis.
    let mut del = send_bare(&r3, "DELETE", &in_session(&sid));
    assert!(read_until(&mut del, "\r\n\r\n", Duration::from_secs(3)).starts_with("HTTP/1.1 204"));
    for url in [&r2, &r3] {
        assert_eq!(legacy_list(url, &sid), 404, "{url}");
    }
    assert_eq!((listed_owner(&c, &sid), kept_state(&c, &sid)), (None, String::new()));
}

/// nginx (Debian's) with the shipped deploy/cluster/nginx.conf in front of
/// `c`'s replicas, on a free port; its files in `dir`. The MCP URL.
fn nginx_front(c: &Cluster, dir: &TempDir) -> (HttpServer, String) {
    let port = free_port();
    let mut conf = std::fs::read_to_string(repo_root().join("deploy/cluster/nginx.conf")).unwrap().replace("127.0.0.1:7400", &format!("127.0.0.1:{port}"));
    for (i, r) in c.replicas.iter().enumerate() {
        let at = r.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
        conf = conf.replace(&format!("127.0.0.1:740{}", i + 1), &at);
    }
    let d = dir.path().to_string_lossy().into_owned();
    std::fs::write(dir.path().join("mcpx.conf"), conf).unwrap();
    let temps: String = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].iter().map(|t| format!("    {t}_temp_path {d}/{t};\n")).collect();
    let main = format!("pid {d}/nginx.pid;\nerror_log stderr;\nevents {{}}\nhttp {{\n    access_log off;\n{temps}    include {d}/mcpx.conf;\n}}\n");
    let main_path = dir.path().join("nginx.conf");
    std::fs::write(&main_path, main).unwrap();
    let cmd = Cmd::new("nginx", &["-e", "stderr", "-p", &d, "-c", &main_path.to_string_lossy(), "-g", "daemon off;"]);
    (HttpServer::start(&cmd, port, "/mcp"), format!("http://127.0.0.1:{port}/mcp"))
}

#[test]
fn nginx_open_source_hashing_on_the_session_id_serves_legacy_clients_on_three_replicas() {
    let c = start_cluster();
    let dir = TempDir::new();
    let (_nginx, front) = nginx_front(&c, &dir);
    // `initialize` lands on any replica, the session's later requests on
    // the one its id hashes to: wherever that is, every call is answered.
    for s in 0..6 {
        let sid = legacy_session(&front);
        for i in 0..3 {
            let r = legacy_call(&front, &sid, 20 + i, "demo__greet", json!({"name": format!("s{s}")}), json!({}));
            assert_eq!(r.json.pointer("/result/content/0/text").and_then(Value::as_str), Some(format!("Hello, s{s}!").as_str()), "session {s}: {} {}", r.status, r.text);
        }
    }
    // Legacy SDK clients at once, each its own session through nginx.
    sdk_load_of(&LEGACY_CLIENTS, &front, 2, "nginx");
}

/// Legacy-era SDK clients (each opens a session).
const LEGACY_CLIENTS: [Client; 4] = [Client::Py("1.30.0"), Client::Py("1.9.4"), Client::Py2Mode("legacy"), Client::TsV1];

#[test]
fn a_replica_shut_down_takes_its_sessions_out_of_the_directory() {
    let mut c = start_cluster();
    let sid = legacy_session(&c.replicas[2].url);
    assert_eq!(listed_owner(&c, &sid), Some(2));
    assert!(c.replicas[2].terminate(Duration::from_secs(10)), "replica 3 exits on SIGTERM");
    assert_eq!(listed_owner(&c, &sid), None, "its session's entry went with it");
    assert_eq!(legacy_list(&c.replicas[0].url, &sid), 404);
}

/// The sessions the directory lists: (session id, replica index).
fn listed_sessions(c: &Cluster) -> Vec<(String, usize)> {
    let out = std::process::Command::new("redis-cli").args(["-p", &c.redis_port.to_string(), "--raw", "KEYS", "mcpx:session:*"]).output().unwrap();
    let keys = String::from_utf8_lossy(&out.stdout).into_owned();
    keys.lines()
        .filter_map(|k| k.trim().strip_prefix("mcpx:session:"))
        .map(|sid| (sid.to_string(), listed_owner(c, sid).expect("an owner")))
        .collect()
}

#[test]
fn a_python_sdk_client_whose_sessions_replica_dies_goes_on_in_its_session() {
    let mut c = start_cluster();
    let dir = TempDir::new();
    let [ready, go, done, end] = ["ready", "go", "done", "end"].map(|f| dir.path().join(f));
    let steps = json!([
        {"op": "call", "tool": "greet", "args": {"name": "before"}, "expect_text": "Hello, before!"},
        {"op": "signal", "path": ready},
        {"op": "wait_file", "path": go, "timeout": 30},
        {"op": "call", "tool": "greet", "args": {"name": "after"}, "expect_text": "Hello, after!"},
        {"op": "signal", "path": done},
        {"op": "wait_file", "path": end, "timeout": 30},
    ]);
    let front = c.front.clone();
    let run = thread::spawn(move || Client::Py("1.30.0").run_url(&["--prefix", "demo__", "script", &steps.to_string()], &front));
    let t0 = Instant::now();
    while !ready.exists() {
        assert!(t0.elapsed() < Duration::from_secs(60), "the client did not get its first answer");
        thread::sleep(Duration::from_millis(50));
    }
    // The client's session, through HAProxy, on one replica: that one dies.
    let listed = listed_sessions(&c);
    assert_eq!(listed.len(), 1, "{listed:?}");
    let (sid, owner) = listed[0].clone();
    c.replicas[owner].kill();
    std::fs::write(&go, "").unwrap();
    let t0 = Instant::now();
    while !done.exists() && !run.is_finished() {
        assert!(t0.elapsed() < Duration::from_secs(30), "the call after the death did not come back");
        thread::sleep(Duration::from_millis(50));
    }
    // Its session, still: taken over by another replica.
    assert_eq!(listed_sessions(&c).into_iter().map(|(s, _)| s).collect::<Vec<_>>(), std::slice::from_ref(&sid), "no new session");
    assert_ne!(listed_owner(&c, &sid), Some(owner), "another replica took the session over");
    std::fs::write(&end, "").unwrap();
    let report = run.join().unwrap();
    assert!(report.code == Some(0) && report.json["ok"] == true, "the call after the death is answered in the same session: {report}");
}

/// Scripts of legacy SDK clients through `front`, the replicas holding
/// their sessions killed twice: between two calls, then during a call (a
/// slow one, with progress, so that its answer streams). The call cut off
/// gets an error; every other call, before and after, is answered, in the
/// session the client opened. The replicas killed are started again.
fn legacy_sdk_sessions_outlive_their_replicas(c: &mut Cluster, front: &str) {
    let clients = [Client::Py2Mode("legacy"), Client::TsV1];
    let dir = TempDir::new();
    let file = |name: &str, i: usize| dir.path().join(format!("{name}{i}"));
    let before: Vec<String> = listed_sessions(c).into_iter().map(|(sid, _)| sid).collect();
    let runs: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, client)| {
            let steps = json!([
                {"op": "call", "tool": "greet", "args": {"name": "before"}, "expect_text": "Hello, before!"},
                {"op": "signal", "path": file("ready", i)},
                {"op": "wait_file", "path": file("go", i), "timeout": 60},
                {"op": "call", "tool": "greet", "args": {"name": "between"}, "expect_text": "Hello, between!"},
                {"op": "signal", "path": file("steady", i)},
                {"op": "wait_file", "path": file("slow", i), "timeout": 60},
                {"op": "call", "tool": "slow", "args": {"seconds": 4, "steps": 8}, "progress": true, "expect": "error"},
                {"op": "call", "tool": "greet", "args": {"name": "after"}, "expect_text": "Hello, after!"},
            ]);
            let (client, front) = (*client, front.to_string());
            thread::spawn(move || client.run_url(&["--prefix", "demo__", "script", &steps.to_string()], &front))
        })
        .collect();
    let wait_all = |name: &str| {
        let t0 = Instant::now();
        while !(0..clients.len()).all(|i| file(name, i).exists()) {
            assert!(t0.elapsed() < Duration::from_secs(60), "the clients did not all reach {name}");
            thread::sleep(Duration::from_millis(50));
        }
    };
    let go = |name: &str| (0..clients.len()).for_each(|i| std::fs::write(file(name, i), "").unwrap());
    // Their sessions' replicas (at most two of the three) die between calls.
    wait_all("ready");
    let sids: Vec<String> = listed_sessions(c).into_iter().map(|(sid, _)| sid).filter(|s| !before.contains(s)).collect();
    assert_eq!(sids.len(), clients.len(), "one session per client");
    let owners = |c: &Cluster| -> Vec<usize> {
        let mut o: Vec<usize> = sids.iter().map(|sid| listed_owner(c, sid).expect("listed")).collect();
        o.sort();
        o.dedup();
        o
    };
    let first = owners(c);
    for &r in &first {
        c.replicas[r].kill();
    }
    go("go");
    // Back with every replica; then the replicas that took the sessions
    // over die while a call is in flight in each.
    wait_all("steady");
    for &r in &first {
        c.replicas[r].restart();
        c.wait_ready(&c.replicas[r]);
    }
    let second = owners(c);
    assert!(second.iter().all(|r| !first.contains(r)), "taken over by the live replicas: {first:?} then {second:?}");
    go("slow");
    thread::sleep(Duration::from_millis(1500));
    for &r in &second {
        c.replicas[r].kill();
    }
    for (h, client) in runs.into_iter().zip(clients) {
        let report = h.join().unwrap();
        assert!(report.code == Some(0) && report.json["ok"] == true, "{client:?} through {front}: {report}");
        // The error says why: the SDKs come back for the call's stream,
        // and the replica that took the session over answers it.
        let cut = &report.json["steps"][6]["result"]["jsonrpc_error"]["message"];
        assert!(cut.as_str().is_some_and(|m| m.contains("is gone: its answer is lost")), "{client:?} through {front}: {cut}");
    }
    for &r in &second {
        c.replicas[r].restart();
        c.wait_ready(&c.replicas[r]);
    }
}

#[test]
fn legacy_sdk_clients_go_on_when_their_replica_dies_through_haproxy_and_nginx() {
    let mut c = start_cluster();
    let front = c.front.clone();
    legacy_sdk_sessions_outlive_their_replicas(&mut c, &front);
    let dir = TempDir::new();
    let (_nginx, front) = nginx_front(&c, &dir);
    legacy_sdk_sessions_outlive_their_replicas(&mut c, &front);
}
