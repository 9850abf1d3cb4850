//! The legacy session directory (http/session_dir.rs, cluster/directory.rs)
//! against a real redis-server: replicas on loopback, each a listener with
//! its own hub and fake upstream, sharing Redis and the hop key. Reuses the
//! helpers of `tests`.

use super::*;
use crate::cluster::directory::{key, Directory};
use crate::cluster::forward::Hop;
use crate::cluster::hop_auth::{self, HopKey, Route};
use crate::cluster::store::Store;
use crate::cluster::test_redis::Redis;

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
    smol::block_on(store.get(&key(sid))).unwrap().map(|v| String::from_utf8(v).unwrap())
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
    let put = |sid: &str, owner: &str| smol::block_on(store.put(&key(sid), owner.as_bytes(), 60_000)).unwrap();
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
