//! Loopback tests that several clients share the server fairly: one
//! connection cannot hold the thread, one principal cannot fill a shared
//! table for the others. Reuses the helpers of `tests`.

use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

/// Milliseconds of one `GET /health` on a fresh connection.
fn health_ms(addr: SocketAddr) -> f64 {
    let began = Instant::now();
    let r = request(addr, "GET", "/health", &[], b"");
    assert_eq!(r.status, 200);
    began.elapsed().as_secs_f64() * 1000.0
}

fn p99(mut ms: Vec<f64>) -> f64 {
    ms.sort_by(f64::total_cmp);
    ms[(ms.len() * 99 / 100).min(ms.len() - 1)]
}

/// Sends a chunked POST body made of 1-byte chunks as fast as the socket
/// takes it, for `for_ms`; then ends the body. The socket always has data.
fn trickle(addr: SocketAddr, for_ms: u64, done: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut s = connect(addr);
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        );
        s.write_all(head.as_bytes()).unwrap();
        let block = b"1\r\n \r\n".repeat(10_000);
        let until = Instant::now() + Duration::from_millis(for_ms);
        while Instant::now() < until {
            if s.write_all(&block).is_err() {
                break;
            }
        }
        done.store(true, Ordering::SeqCst);
        let _ = s.write_all(b"0\r\n\r\n");
        let _ = read_resp(&mut s, &mut Vec::new());
    })
}

// Issue 11 item 4: before the fix the trickling connection held the thread
// until its body was complete, and no `/health` was answered meanwhile.
#[test]
fn a_trickled_upload_does_not_freeze_other_clients() {
    let t = start(|c| c.limits.max_body = 64 << 20);
    let sid = init(t.addr);
    let baseline: Vec<f64> = (0..40).map(|_| health_ms(t.addr)).collect();
    let base = p99(baseline);
    let done = Arc::new(AtomicBool::new(false));
    let up = trickle(t.addr, 2500, done.clone());
    std::thread::sleep(Duration::from_millis(200));
    let mut during = Vec::new();
    let mut calls = 0;
    while !done.load(Ordering::SeqCst) && during.len() < 400 {
        let ms = health_ms(t.addr);
        if done.load(Ordering::SeqCst) {
            break;
        }
        during.push(ms);
        if during.len() % 10 == 0 {
            let r = post(t.addr, Some(&sid), &call(during.len() as u64, "echo", json!({ "text": "still here" })));
            assert_eq!(r.status, 200, "{}", r.text());
            assert_eq!(r.json()["result"]["content"][0]["text"], "still here");
            calls += 1;
        }
    }
    up.join().unwrap();
    let n = during.len();
    let trickling = if n > 0 { p99(during) } else { f64::INFINITY };
    println!("/health p99: {base:.2} ms idle, {trickling:.2} ms while one connection trickles ({n} samples, {calls} calls)");
    assert!(n >= 20 && calls >= 2, "only {n} /health and {calls} calls answered while one upload trickled");
    assert!(trickling < base * 50.0 + 250.0, "/health p99 {trickling:.2} ms while trickling vs {base:.2} ms idle");
}

fn with_tokens(c: &mut HttpConfig, names: &[&str]) {
    c.auth.tokens = names.iter().map(|n| (n.to_string(), format!("token-of-{n}"))).collect();
}

/// `initialize` as principal `who` (a named token); the raw response.
fn init_as(addr: SocketAddr, who: &str) -> Resp {
    let bearer = format!("Bearer token-of-{who}");
    let body = serde_json::to_vec(&initialize_body("2025-11-25")).unwrap();
    request(addr, "POST", "/mcp", &[ACCEPT, JSON, ("Authorization", &bearer)], &body)
}

fn sid_of(r: &Resp) -> String {
    assert_eq!(r.status, 200, "{}", r.text());
    r.header("mcp-session-id").expect("a session id").to_string()
}

/// Opens `sid`'s GET stream as `who` and waits until it is open: the
/// session is busy from then on.
fn busy(addr: SocketAddr, who: &str, sid: &str) -> TcpStream {
    let bearer = format!("Bearer token-of-{who}");
    let mut g = connect(addr);
    let hs = [("Accept", "text/event-stream"), ("Mcp-Session-Id", sid), ("Authorization", &bearer)];
    write_req(&mut g, addr, "GET", "/mcp", &hs, b"");
    let head = read_until(&mut g, "\r\n\r\n", Duration::from_secs(5));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    g
}

// Issue 11 item 3: sessions abandoned right after `initialize` used to fill
// the table for everyone until they expired (30 minutes by default).
#[test]
fn abandoned_sessions_make_room_instead_of_locking_everyone_out() {
    let t = start(|c| {
        c.limits.max_sessions = 8;
        with_tokens(c, &["mallory", "alice"]);
    });
    let mut s = connect(t.addr);
    let mut buf = Vec::new();
    let body = serde_json::to_vec(&initialize_body("2025-11-25")).unwrap();
    let hs = [ACCEPT, JSON, ("Authorization", "Bearer token-of-mallory")];
    for _ in 0..100 {
        write_req(&mut s, t.addr, "POST", "/mcp", &hs, &body);
        assert_eq!(read_resp(&mut s, &mut buf).status, 200, "a new session evicts the oldest idle one");
    }
    let st = status_json_as(t.addr, "alice");
    assert_eq!(st["http"]["sessions"], 4, "mallory holds her share, half the cap: {}", st["http"]);
    let alice = sid_of(&init_as(t.addr, "alice"));
    let r = post_as(t.addr, "alice", &alice, &call(1, "echo", json!({ "text": "hi" })));
    assert_eq!(r.json()["result"]["content"][0]["text"], "hi");
}

fn status_json_as(addr: SocketAddr, who: &str) -> Value {
    let bearer = format!("Bearer token-of-{who}");
    request(addr, "GET", "/status", &[("Authorization", &bearer)], b"").json()
}

fn post_as(addr: SocketAddr, who: &str, sid: &str, body: &Value) -> Resp {
    let bearer = format!("Bearer token-of-{who}");
    let hs = [ACCEPT, JSON, ("Mcp-Session-Id", sid), ("Authorization", &bearer)];
    request(addr, "POST", "/mcp", &hs, &serde_json::to_vec(body).unwrap())
}

// Issue 11 item 3: a principal at its share is refused with 429 naming its
// share; at the global cap an idle session of another principal makes room;
// only when every session is busy is a new one refused, 503.
#[test]
fn session_caps_name_the_limit_and_whose_share() {
    let t = start(|c| {
        c.limits.max_sessions = 2;
        with_tokens(c, &["alice", "bob", "carol"]);
    });
    let a = sid_of(&init_as(t.addr, "alice"));
    let _a_stream = busy(t.addr, "alice", &a);
    let r = init_as(t.addr, "alice");
    refused(&r, 429, "\"token:alice\" holds its share of 1", "http.maxSessions (per principal)");
    let b = sid_of(&init_as(t.addr, "bob"));
    // The cap is full (alice busy, bob idle): carol's session ends bob's.
    let c = sid_of(&init_as(t.addr, "carol"));
    let r = post_as(t.addr, "bob", &b, &json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }));
    assert_eq!(r.status, 404, "bob's idle session made room: {}", r.text());
    let _c_stream = busy(t.addr, "carol", &c);
    refused(&init_as(t.addr, "bob"), 503, "all 2 are in use", "http.maxSessions");
}

/// `r` is a session refusal: `status`, `Retry-After`, a message saying
/// `why` and `data.limit` naming the limit.
fn refused(r: &Resp, status: u16, why: &str, limit: &str) {
    assert_eq!(r.status, status, "{}", r.text());
    assert_eq!(r.header("retry-after"), Some("5"));
    let e = &r.json()["error"];
    assert!(e["message"].as_str().unwrap().contains(why), "{e}");
    assert_eq!(e["data"]["limit"], limit);
}

/// A modern `tools/call` of the fake's `sample` as principal `who`: with
/// `state`, the retry answering its sampling request.
fn sample_as(addr: SocketAddr, who: &str, id: u64, state: Option<(&str, &str)>) -> Resp {
    let bearer = format!("Bearer token-of-{who}");
    let mut params = json!({ "name": "sample", "arguments": {} });
    if let Some((key, state)) = state {
        let answer = json!({ "role": "assistant", "content": { "type": "text", "text": "hello" }, "model": "m" });
        params["inputResponses"] = json!({ key: answer });
        params["requestState"] = json!(state);
    }
    let body = modern_body(json!(id), "tools/call", params, json!({ "sampling": {} }));
    modern_post(addr, &body, &[("Authorization", &bearer)])
}

/// The key and `requestState` of an `input_required` answer.
fn input_required(r: &Resp) -> (String, String) {
    let v = response_of(r);
    assert_eq!(v["result"]["resultType"], "input_required", "{v}");
    let key = v["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    (key, v["result"]["requestState"].as_str().unwrap().to_string())
}

// Issue 11 item 3: the requestState single-use set through the listener. A
// principal that has redeemed its share (an eighth of 4,096) within the
// input TTL gets 429 with `Retry-After` and an error naming the limit; its
// token stays unused, and another principal's retry is served. Before, the
// set was one for all: 4,096 redeems of one client refused everyone.
// covers: mrtr-single-use-enforced
#[test]
fn a_principal_at_its_replay_share_gets_429_and_others_continue() {
    let t = start_with(|c| with_tokens(c, &["mallory", "alice"]), None, |o| {
        // The rate limits and the coalescing window would pace this loop;
        // they are not what is tested.
        o.policy.rate_limits = crate::policy::ratelimit::RateLimitConfig { tool_calls: Default::default(), server_requests: Default::default(), ..Default::default() };
        o.input_coalesce_ms = 0;
    });
    let share = 4096 / 8;
    for id in 1..=share {
        let (key, state) = input_required(&sample_as(t.addr, "mallory", id, None));
        let r = sample_as(t.addr, "mallory", id, Some((&key, &state)));
        assert_eq!(response_of(&r)["result"]["content"][0]["text"], "sampled: hello", "redeem {id}: {}", r.text());
    }
    // Mallory's share is full; Alice's continuation is served (the fake
    // upstream holds one sampling call at a time: Alice's goes first).
    let alice = input_required(&sample_as(t.addr, "alice", 1, None));
    let r = sample_as(t.addr, "alice", 1, Some((&alice.0, &alice.1)));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(response_of(&r)["result"]["content"][0]["text"], "sampled: hello", "{}", r.text());
    let (key, state) = input_required(&sample_as(t.addr, "mallory", 0, None));
    let r = sample_as(t.addr, "mallory", 0, Some((&key, &state)));
    assert_eq!(r.status, 429, "{}", r.text());
    let secs: u64 = r.header("retry-after").expect("Retry-After").parse().unwrap();
    assert!((1..=300).contains(&secs), "Retry-After {secs} within the input TTL");
    let e = response_of(&r);
    assert_eq!(e["error"]["code"], -32600, "{e}");
    let msg = e["error"]["message"].as_str().unwrap();
    assert!(msg.contains("requestState.singleUsePerPrincipal") && msg.contains("512 of 4096"), "{msg}");
}
