//! The legacy session directory (http/session_dir.rs, cluster/directory.rs)
//! against a real redis-server: replicas on loopback, each a listener with
//! its own hub and fake upstream, sharing Redis and the hop key. Reuses the
//! helpers of `tests`.

use super::*;
use crate::cluster::directory::{key, state_key, Directory};
use crate::cluster::forward::Hop;
use crate::cluster::hop_auth::{self, HopKey, Route};
use crate::cluster::store::Store;
use crate::cluster::test_redis::Redis;
use crate::hub::Snapshot;

const KEY: [u8; 32] = [42; 32];

/// A loopback address nothing listens on yet.
fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

/// Replica `me` on `addr` with Redis at `redis` and the other replicas
/// `peers`; principals alice (token `ta`) and bob (`tb`).
fn replica(me: &str, addr: SocketAddr, redis: &str, peers: &[(&str, SocketAddr)], idle_ms: u64) -> TestServer {
    let (me, redis) = (me.to_string(), redis.to_string());
    let peers: Vec<(String, String)> = peers.iter().map(|(id, a)| (id.to_string(), format!("http://{a}"))).collect();
    let ids: Vec<String> = peers.iter().map(|(id, _)| id.clone()).collect();
    let configure = move |c: &mut HttpConfig| {
        c.addr = addr;
        c.limits.session_idle_ms = idle_ms;
        c.limits.sse_keepalive_ms = 300;
        c.auth.tokens = vec![("alice".into(), "ta".into()), ("bob".into(), "tb".into())];
        c.hop = Some(cluster_hop::HopConfig::new(HopKey::derive(&KEY), ids));
    };
    start_full(configure, None, |_| {}, move |http| {
        let store = Rc::new(Store::new(&redis, &KEY).unwrap());
        let hop = Rc::new(Hop::new(&me, &KEY, &peers).unwrap());
        http.use_directory(Directory::new(store, hop, idle_ms));
    })
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// A request in session `sid` as the principal of `token`.
fn in_session(addr: SocketAddr, method: &str, sid: &str, token: &str, body: Option<&Value>) -> Resp {
    let auth = bearer(token);
    let hs = [ACCEPT, JSON, ("Mcp-Session-Id", sid), ("MCP-Protocol-Version", "2025-11-25"), ("Authorization", &auth)];
    let body = body.map(|b| serde_json::to_vec(b).unwrap()).unwrap_or_default();
    request(addr, method, "/mcp", &hs, &body)
}

/// initialize + initialized as the principal of `token`: the session id.
fn init_as(addr: SocketAddr, token: &str) -> String {
    let auth = bearer(token);
    let body = serde_json::to_vec(&initialize_body("2025-11-25")).unwrap();
    let r = request(addr, "POST", "/mcp", &[ACCEPT, JSON, ("Authorization", &auth)], &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let sid = r.header("mcp-session-id").expect("a session id").to_string();
    let done = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(in_session(addr, "POST", &sid, token, Some(&done)).status, 202);
    sid
}

/// The directory as Redis has it: who owns `sid`.
fn owner_of(store: &Store, sid: &str) -> Option<String> {
    crate::process::reactor::block_on(store.get(&key(sid))).unwrap().map(|v| String::from_utf8(v).unwrap())
}

/// Milliseconds `sid`'s entry has left (redis-cli, which comes with redis-server).
fn pttl(redis: &Redis, sid: &str) -> i64 {
    let out = std::process::Command::new("redis-cli").args(["-p", &redis.port.to_string(), "PTTL", &key(sid)]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Polls (every 50 ms, at most `limit`) until `f` holds.
fn eventually(limit: Duration, what: &str, f: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < limit, "not within {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_legacy_session_is_published_refreshed_while_used_and_forgotten_when_it_ends() {
    let redis = Redis::start();
    let store = Store::new(&redis.url(), &KEY).unwrap();
    // Sessions idle for 1 s expire: entries live 2 s unless refreshed.
    let r1 = replica("r1", free_addr(), &redis.url(), &[], 1000);
    let sid = init_as(r1.addr, "ta");
    assert_eq!(owner_of(&store, &sid).as_deref(), Some("r1"), "published before the initialize answer");
    let left = pttl(&redis, &sid);
    assert!(left > 1500 && left <= 2000, "the TTL is the idle expiry and as much again: {left}");
    // Requests within the first half of the TTL do not refresh it (no
    // Redis round trip per request).
    for i in 0..5 {
        let r = in_session(r1.addr, "POST", &sid, "ta", Some(&json!({ "jsonrpc": "2.0", "id": 10 + i, "method": "tools/list" })));
        assert_eq!(r.status, 200);
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(pttl(&redis, &sid) < left - 250, "not refreshed by each request");
    // An open GET stream keeps the session in use: its entry is refreshed
    // and outlives its first TTL.
    let auth = bearer("ta");
    let mut g = connect(r1.addr);
    write_req(&mut g, r1.addr, "GET", "/mcp", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &sid), ("Authorization", &auth)], b"");
    assert!(read_until(&mut g, ": keep-alive", Duration::from_secs(3)).starts_with("HTTP/1.1 200"));
    std::thread::sleep(Duration::from_millis(2600));
    assert_eq!(owner_of(&store, &sid).as_deref(), Some("r1"), "refreshed while the stream is open");
    // Stream closed, the session idles out (1 s): its entry goes.
    drop(g);
    eventually(Duration::from_secs(4), "the idle session's entry deleted", || owner_of(&store, &sid).is_none());
    assert_eq!(in_session(r1.addr, "POST", &sid, "ta", Some(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }))).status, 404);
    // DELETE: the entry goes at once.
    let sid = init_as(r1.addr, "ta");
    assert_eq!(in_session(r1.addr, "DELETE", &sid, "ta", None).status, 204);
    eventually(Duration::from_millis(500), "the deleted session's entry deleted", || owner_of(&store, &sid).is_none());
}

/// Two replicas that know each other.
fn pair(redis: &Redis) -> (TestServer, TestServer) {
    let (a1, a2) = (free_addr(), free_addr());
    let r1 = replica("r1", a1, &redis.url(), &[("r2", a2)], 60_000);
    let r2 = replica("r2", a2, &redis.url(), &[("r1", a1)], 60_000);
    (r1, r2)
}

// covers: streamable-http-server-json-or-sse-for-request, streamable-http-client-delete-session
#[test]
fn a_session_used_through_another_replica_is_served_by_its_owner_and_never_by_a_second_client() {
    let redis = Redis::start();
    let store = Store::new(&redis.url(), &KEY).unwrap();
    let (r1, r2) = pair(&redis);
    let sid = init_as(r1.addr, "ta");
    // A JSON answer, relayed.
    let r = in_session(r2.addr, "POST", &sid, "ta", Some(&call(5, "echo", json!({ "text": "via r2" }))));
    assert_eq!((r.status, r.header("content-type")), (200, Some("application/json")), "{}", r.text());
    assert_eq!(r.json()["result"]["content"][0]["text"], "via r2", "{}", r.text());
    assert!(r1.seen.lock().unwrap().iter().any(|m| m == "tools/call"), "the owner's upstream served it");
    assert!(r2.seen.lock().unwrap().iter().all(|m| m != "tools/call"), "not the receiving replica's");
    // An SSE answer (progress before the result), streamed through.
    let body = json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
        "name": "progress", "arguments": {}, "_meta": { "progressToken": "p" } } });
    let r = in_session(r2.addr, "POST", &sid, "ta", Some(&body));
    assert_eq!((r.status, r.header("content-type")), (200, Some("text/event-stream")), "{}", r.text());
    let ev = r.events();
    assert_eq!(ev.iter().filter(|e| e["method"] == "notifications/progress").count(), 3, "{ev:?}");
    assert_eq!(ev.last().unwrap()["result"]["content"][0]["text"], "progress done");
    // The GET stream through r2 carries the session's notification (of a
    // list the client has seen).
    let list = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/list" });
    assert_eq!(in_session(r2.addr, "POST", &sid, "ta", Some(&list)).status, 200);
    let auth = bearer("ta");
    let mut g = connect(r2.addr);
    write_req(&mut g, r2.addr, "GET", "/mcp", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &sid), ("Authorization", &auth)], b"");
    assert!(read_until(&mut g, ": keep-alive", Duration::from_secs(3)).starts_with("HTTP/1.1 200"));
    let r = in_session(r2.addr, "POST", &sid, "ta", Some(&call(17, "notify", json!({}))));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(read_until(&mut g, "list_changed", Duration::from_secs(3)).contains("notifications/tools/list_changed"));
    // A second client (bob) with the first's session id: unknown, on
    // either replica, and nothing reached the upstream.
    let calls = r1.seen.lock().unwrap().len();
    for at in [r2.addr, r1.addr] {
        let r = in_session(at, "POST", &sid, "tb", Some(&call(8, "echo", json!({ "text": "bob" }))));
        assert_eq!(r.status, 404, "{}", r.text());
    }
    assert_eq!(r1.seen.lock().unwrap().len(), calls);
    // DELETE through r2 ends it on r1: then 404 everywhere, the entry gone.
    let r = in_session(r2.addr, "DELETE", &sid, "ta", None);
    assert_eq!(r.status, 204, "{}", r.text());
    for at in [r1.addr, r2.addr] {
        assert_eq!(in_session(at, "POST", &sid, "ta", Some(&call(9, "echo", json!({ "text": "x" })))).status, 404);
    }
    eventually(Duration::from_millis(500), "the entry deleted", || owner_of(&store, &sid).is_none());
}

#[test]
fn a_2024_11_05_session_takes_its_posts_through_another_replica() {
    let redis = Redis::start();
    let (r1, r2) = pair(&redis);
    let auth = bearer("ta");
    let mut g = connect(r1.addr);
    write_req(&mut g, r1.addr, "GET", "/sse", &[("Accept", "text/event-stream"), ("Authorization", &auth)], b"");
    let got = read_until(&mut g, "sessionId=", Duration::from_secs(3));
    let got = got + &read_until(&mut g, "\n\n", Duration::from_millis(300));
    let endpoint = got.lines().find_map(|l| l.strip_prefix("data: ")).unwrap().to_string();
    let post_via = |addr, body: &Value| request(addr, "POST", &endpoint, &[JSON, ("Authorization", &auth)], &serde_json::to_vec(body).unwrap());
    assert_eq!(post_via(r2.addr, &initialize_body("2024-11-05")).status, 202);
    assert!(read_until(&mut g, "protocolVersion", Duration::from_secs(5)).contains("\"2024-11-05\""));
    assert_eq!(post_via(r2.addr, &json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" })).status, 202);
    assert!(read_until(&mut g, "\"echo\"", Duration::from_secs(5)).contains("\"id\":2"));
}

// covers: streamable-http-server-404-terminated-session
#[test]
fn a_session_whose_owner_is_gone_or_lost_it_is_404_and_its_entry_dropped() {
    let redis = Redis::start();
    let store = Store::new(&redis.url(), &KEY).unwrap();
    let (a1, a2, dead) = (free_addr(), free_addr(), free_addr());
    let r1 = replica("r1", a1, &redis.url(), &[("r2", a2), ("r3", dead)], 60_000);
    let _r2 = replica("r2", a2, &redis.url(), &[("r1", a1), ("r3", dead)], 60_000);
    let put = |sid: &str, owner: &str| crate::process::reactor::block_on(store.put(&key(sid), owner.as_bytes(), 60_000)).unwrap();
    let list = |sid: &str| in_session(r1.addr, "POST", sid, "ta", Some(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" })));
    // Owned by a replica that does not answer: 404 within the connect
    // timeout, and the stale entry goes.
    put("d0d0", "r3");
    let t0 = Instant::now();
    assert_eq!(list("d0d0").status, 404);
    assert!(t0.elapsed() < Duration::from_millis(1500), "{:?}", t0.elapsed());
    assert_eq!(owner_of(&store, "d0d0"), None);
    // Owned by r2, which no longer has it (restarted): its 404, and the entry goes.
    put("e0e0", "r2");
    let r = list("e0e0");
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(owner_of(&store, "e0e0"), None);
    // Owned by a replica that is not among the peers: 404, the entry is not ours to drop.
    put("f0f0", "r9");
    assert_eq!(list("f0f0").status, 404);
    assert_eq!(owner_of(&store, "f0f0").as_deref(), Some("r9"));
    // No entry at all: 404.
    assert_eq!(list("abab").status, 404);
}

#[test]
fn redis_away_at_lookup_is_503_with_retry_after_and_sessions_still_open() {
    let mut redis = Redis::start();
    let (r1, r2) = pair(&redis);
    let sid = init_as(r1.addr, "ta");
    redis.stop();
    // The session may be alive on its replica: not a 404, a "not now".
    let r = in_session(r2.addr, "POST", &sid, "ta", Some(&call(1, "echo", json!({ "text": "x" }))));
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.header("retry-after").is_some_and(|s| s.parse::<u64>().is_ok()));
    let why = r.json()["error"]["message"].as_str().unwrap_or_default().to_string();
    assert!(why.contains("Redis") && why.contains("replica holds this session"), "{why}");
    // Its own replica serves it; a new session opens without its entry.
    assert_eq!(in_session(r1.addr, "POST", &sid, "ta", Some(&call(2, "echo", json!({ "text": "x" })))).status, 200);
    let other = init_as(r2.addr, "ta");
    assert_eq!(in_session(r2.addr, "POST", &other, "ta", Some(&call(3, "echo", json!({ "text": "y" })))).status, 200);
    // Redis back, empty (no persistence): lookups answer again; the entry
    // is gone with the old Redis, so the other replica says 404.
    redis.restart();
    let store = Store::new(&redis.url(), &KEY).unwrap();
    assert_eq!(owner_of(&store, &sid), None);
    let status = || in_session(r2.addr, "POST", &sid, "ta", Some(&call(4, "echo", json!({ "text": "x" })))).status;
    eventually(Duration::from_secs(6), "lookups answer again", || status() == 404);
}

#[test]
fn a_relayed_request_signed_for_another_session_or_method_is_403() {
    let redis = Redis::start();
    let (r1, _r2) = pair(&redis);
    let sid = init_as(r1.addr, "ta");
    let other = init_as(r1.addr, "ta");
    let body = serde_json::to_vec(&call(4, "echo", json!({ "text": "forged" }))).unwrap();
    let k = HopKey::derive(&KEY);
    // Signed for `sid`'s POST; sent in `session`, its method header `method`.
    let send = |session: &str, method: &str| {
        let route = Route { method: "POST", target: "/mcp" };
        let relayed = [ACCEPT, JSON, ("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
        let fields: Vec<hop_auth::Field<'_>> = relayed.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())).collect();
        // One nonce: only a hop that checks out is remembered.
        let nonce = [9; hop_auth::NONCE_LEN];
        let what = hop_auth::Signed { from: "r2", time_ms: hop_auth::unix_ms(), nonce: &nonce, principal: b"token:alice", route, fields: &fields, body: &body };
        let signed = k.sign(&what);
        let mut signed: Vec<(&str, String)> = signed.iter().map(|(n, v)| (*n, String::from_utf8(v.clone()).unwrap())).collect();
        for (n, v) in signed.iter_mut() {
            if *n == hop_auth::METHOD {
                *v = method.to_string();
            }
        }
        let mut hs = vec![ACCEPT, JSON, ("Mcp-Session-Id", session), ("MCP-Protocol-Version", "2025-11-25")];
        hs.extend(signed.iter().map(|(n, v)| (*n, v.as_str())));
        request(r1.addr, "POST", hop_auth::PATH, &hs, &body)
    };
    let r = send(&other, "POST");
    assert_eq!(r.status, 403, "another session under the signature: {}", r.text());
    let r = send(&sid, "DELETE");
    assert_eq!(r.status, 403, "another method under the signature: {}", r.text());
    assert_eq!(in_session(r1.addr, "POST", &other, "ta", Some(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }))).status, 200);
    // Signed as it is sent: served as alice's request in her session.
    let r = send(&sid, "POST");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["result"]["content"][0]["text"], "forged");
}

/// What session `sid` of replica `owner` kept, as that replica wrote it
/// (then went away): `principal`'s, initialized on 2025-11-25, its tools
/// read, logs asked at `warning`.
fn kept_by(store: &Store, sid: &str, owner: &str, principal: &[u8]) {
    let s = Snapshot {
        rev: mcpx_core::revision::Revision::V2025_11_25,
        caps: json!({}),
        info: json!({ "name": "t", "version": "1" }),
        principal: principal.to_vec(),
        ready: true,
        log_level: Some("warning"),
        listed: [true, false, false],
        subscriptions: vec![],
    };
    crate::process::reactor::block_on(async {
        store.put(&key(sid), owner.as_bytes(), 60_000).await.unwrap();
        store.put(&state_key(sid), &serde_json::to_vec(&s.to_json()).unwrap(), 60_000).await.unwrap();
    });
}

/// Two replicas that know each other and a third, `r3`, that is gone.
fn pair_and_a_dead_one(redis: &Redis) -> (TestServer, TestServer) {
    let (a1, a2, dead) = (free_addr(), free_addr(), free_addr());
    let r1 = replica("r1", a1, &redis.url(), &[("r2", a2), ("r3", dead)], 60_000);
    let r2 = replica("r2", a2, &redis.url(), &[("r1", a1), ("r3", dead)], 60_000);
    (r1, r2)
}

/// A GET of `sid`'s stream as alice, resuming after `last`: what came
/// within a second.
fn resume_as_alice(addr: SocketAddr, sid: &str, last: &str) -> String {
    let auth = bearer("ta");
    let mut g = connect(addr);
    write_req(&mut g, addr, "GET", "/mcp", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", sid), ("Last-Event-ID", last), ("Authorization", &auth)], b"");
    read_until(&mut g, "\r\n0\r\n\r\n", Duration::from_secs(1))
}

// covers: streamable-http-server-no-cross-stream-replay, streamable-http-event-id-unique
#[test]
fn a_session_whose_owner_is_gone_is_taken_over_by_one_replica_with_what_it_kept() {
    let redis = Redis::start();
    let store = Store::new(&redis.url(), &KEY).unwrap();
    let (r1, r2) = pair_and_a_dead_one(&redis);
    let sid = "a1a1a1a1";
    kept_by(&store, sid, "r3", b"token:alice");
    // Its next requests come to both replicas at once: one takes it over,
    // the other passes its request on to that one; both are answered.
    let list = |addr: SocketAddr, id: u64| in_session(addr, "POST", sid, "ta", Some(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list" })));
    let other = std::thread::spawn(move || list(r2.addr, 2).status);
    let r = list(r1.addr, 1);
    assert_eq!((r.status, other.join().unwrap()), (200, 200), "{}", r.text());
    assert!(r.text().contains("\"echo\""), "served without a new initialize: {}", r.text());
    let owner = owner_of(&store, sid).expect("an entry");
    let (adopter, relayer) = if owner == "r1" { (&r1, &r2) } else { (&r2, &r1) };
    // The new owner's upstream was asked the session's log level; the
    // state is the new owner's to write.
    assert!(adopter.seen.lock().unwrap().iter().any(|m| m == "logging/setLevel"));
    assert!(relayer.seen.lock().unwrap().iter().all(|m| m != "logging/setLevel" && m != "tools/call"));
    let r = in_session(relayer.addr, "POST", sid, "ta", Some(&call(3, "echo", json!({ "text": "after" }))));
    assert_eq!(r.json()["result"]["content"][0]["text"], "after", "{}", r.text());
    let state = crate::process::reactor::block_on(store.get(&state_key(sid))).unwrap().expect("its state");
    assert_eq!(serde_json::from_slice::<Value>(&state).unwrap()["logLevel"], "warning");
    // A POST's stream on the gone replica (request 31): its answer is lost;
    // the client coming back for it gets an error for the request, once,
    // then 410.
    let got = resume_as_alice(adopter.addr, sid, "77.3331-0");
    assert!(got.starts_with("HTTP/1.1 200") && got.contains("\"id\":31") && got.contains("replica \\\"r3\\\""), "{got}");
    assert!(got.contains("is gone: its answer is lost"), "{got}");
    assert!(resume_as_alice(adopter.addr, sid, "77.3331-0").starts_with("HTTP/1.1 410"));
    assert!(resume_as_alice(adopter.addr, sid, "78.-2").starts_with("HTTP/1.1 410"), "a request not named: 410");
    // The gone replica's standalone stream: a new one here.
    let got = resume_as_alice(adopter.addr, sid, "76-5");
    assert!(got.starts_with("HTTP/1.1 200") && got.contains("text/event-stream") && !got.contains("\"id\""), "{got}");
}

#[test]
fn a_gone_replicas_session_whose_state_is_forged_or_another_principals_is_not_taken_over() {
    let redis = Redis::start();
    let store = Store::new(&redis.url(), &KEY).unwrap();
    let (r1, _r2) = pair_and_a_dead_one(&redis);
    let list = |sid: &str, token: &str| in_session(r1.addr, "POST", sid, token, Some(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }))).status;
    // Written without the shared key: unsealed, or sealed under another key.
    kept_by(&store, "b1b1", "r3", b"token:alice");
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &redis.port.to_string(), "SET", &state_key("b1b1"), r#"{"protocolVersion":"2025-11-25"}"#])
        .output()
        .unwrap();
    assert!(out.status.success());
    kept_by(&store, "b2b2", "r3", b"token:alice");
    kept_by(&Store::new(&redis.url(), &[7; 32]).unwrap(), "b2b2", "r3", b"token:alice");
    for sid in ["b1b1", "b2b2"] {
        assert_eq!(list(sid, "ta"), 404, "{sid}");
        assert_eq!(owner_of(&store, sid), None, "{sid}: the entry goes with the session");
    }
    // Bob's session, asked for by alice: 404, and it stays bob's to go on with.
    kept_by(&store, "b3b3", "r3", b"token:bob");
    assert_eq!(list("b3b3", "ta"), 404);
    assert_eq!(owner_of(&store, "b3b3").as_deref(), Some("r3"));
    assert_eq!(list("b3b3", "tb"), 200);
    assert_eq!(owner_of(&store, "b3b3").as_deref(), Some("r1"));
    // A DELETE does not take a session over: it ends with its replica.
    kept_by(&store, "b4b4", "r3", b"token:alice");
    assert_eq!(in_session(r1.addr, "DELETE", "b4b4", "ta", None).status, 404);
    assert_eq!(owner_of(&store, "b4b4"), None);
    assert_eq!(crate::process::reactor::block_on(store.get(&state_key("b4b4"))).unwrap(), None, "its state goes with its entry");
}

#[test]
fn a_session_keeps_its_state_beside_its_entry_until_it_ends() {
    let redis = Redis::start();
    let store = Store::new(&redis.url(), &KEY).unwrap();
    let (r1, _r2) = pair(&redis);
    let sid = init_as(r1.addr, "ta");
    let state = || crate::process::reactor::block_on(store.get(&state_key(&sid))).unwrap().map(|v| serde_json::from_slice::<Value>(&v).unwrap());
    eventually(Duration::from_secs(2), "its state written", || state().is_some_and(|s| s["initialized"] == true));
    let s = state().unwrap();
    assert_eq!((s["protocolVersion"].clone(), s["principal"].clone()), (json!("2025-11-25"), json!(crate::bytes::hex::hex(b"token:alice"))));
    let set = json!({ "jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": { "level": "error" } });
    assert_eq!(in_session(r1.addr, "POST", &sid, "ta", Some(&set)).status, 200);
    eventually(Duration::from_secs(2), "the level kept", || state().is_some_and(|s| s["logLevel"] == "error"));
    assert_eq!(in_session(r1.addr, "DELETE", &sid, "ta", None).status, 204);
    eventually(Duration::from_secs(2), "entry and state gone", || state().is_none() && owner_of(&store, &sid).is_none());
}
