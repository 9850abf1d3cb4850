//! Authentication of `mcpx serve --http` through the real binary.
//!
//! Principals: each HTTP session and each 2026-07-28 request carries its own
//! principal into the hub (a static token's name, an OAuth token's subject,
//! or the anonymous one), never the stdio client's, so a `requestState`
//! minted for one is refused to another and a session is only usable by the
//! principal that opened it (issue 11 item 2).
//!
//! OAuth resource server: mcpx protected by `py_oauth_as.py` (a test
//! authorization server on loopback), reached by the Python and TypeScript
//! SDK clients' own OAuth flows, and by hand-made tokens for the refusals.

use mcpx_tests::*;
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
const MODERN: &str = "2026-07-28";

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "mcpx-principal-test", "version": "1"},
    })
}

fn ask(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "demo__ask_user", "arguments": {"message": "Delete everything?"}, "_meta": meta()}})
}

/// The retry of `ask` with the answer and `state`.
fn retry(id: i64, first: &Value) -> Value {
    let r = &first["result"];
    assert_eq!(r["resultType"], "input_required", "not an input_required result: {first}");
    let key = r["inputRequests"].as_object().and_then(|m| m.keys().next().cloned()).expect("an input request");
    let answer = json!({"action": "accept", "content": {"answer": "yes"}});
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "demo__ask_user", "arguments": {"message": "Delete everything?"}, "_meta": meta(),
                      "inputResponses": {key: answer}, "requestState": r["requestState"]}})
}

fn modern_headers(auth: Option<&str>) -> Vec<(&str, &str)> {
    let mut h = vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"), ("Mcp-Name", "demo__ask_user")];
    if let Some(a) = auth {
        h.push(("Authorization", a));
    }
    h
}

/// Refused for the principal: -32602, nothing reached the server.
fn assert_refused(r: &Value, what: &str) {
    assert_eq!(r["error"]["code"], -32602, "{what}: the retry should be refused, got {r}");
    assert!(r["error"]["message"].as_str().unwrap_or("").contains("principal"), "{what}: the error should name the check: {r}");
}

/// `demo` (the example server), and `auth` in the config.
fn config(auth: Value) -> HubConfig {
    HubConfig::new().upstream(example_server("demo")).set("auth", auth)
}

/// `mcpx serve --stdio --http 127.0.0.1:PORT --log-level debug` of `cfg`, listening.
fn hub(port: u16, cfg: HubConfig) -> (Hub, RawSession) {
    let hub = cfg.write();
    let mut cmd = hub.serve();
    cmd.args.extend(["--http", &format!("127.0.0.1:{port}"), "--stdio", "--log-level", "debug"].map(String::from));
    let s = RawSession::spawn(&cmd);
    let deadline = std::time::Instant::now() + WAIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "mcpx did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    (hub, s)
}

/// The stdio client's held elicitation cannot be answered by an HTTP client
/// (a legacy session, or a 2026-07-28 request), and the reverse.
// covers: elicitation-server-state-bound-to-user, elicitation-state-not-session-id-alone
#[test]
fn a_held_request_of_stdio_is_refused_to_http_and_back() {
    let port = free_port();
    let (_hub, mut s) = hub(port, config(json!({})));
    let url = format!("http://127.0.0.1:{port}/mcp");
    // stdio: the first round of a modern call.
    s.send(&ask(1));
    let first = s.response_to(1, WAIT);
    // A legacy HTTP session retries it with the stdio client's state.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}}, "clientInfo": {"name": "mcpx-principal-test", "version": "1"}}});
    let r = post(&url, &[], &init);
    assert_eq!(r.status, 200);
    let sid = r.header("mcp-session-id").expect("a session id").to_string();
    let sh = [("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    post(&url, &sh, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let r = post(&url, &sh, &retry(2, &first)).json;
    assert_refused(&r, "a legacy HTTP session answering the stdio client's question");
    // A 2026-07-28 HTTP request, the same.
    let r = post(&url, &modern_headers(None), &retry(3, &first)).json;
    assert_refused(&r, "a 2026-07-28 HTTP request answering the stdio client's question");
    // The stdio client itself still can (the state was not used up).
    s.send(&retry(4, &first));
    let done = s.response_to(4, WAIT);
    assert_eq!(done["result"]["resultType"], "complete", "the stdio client's own retry: {done}");
    // The reverse: an HTTP request's state is refused to the stdio client.
    let first = post(&url, &modern_headers(None), &ask(5)).json;
    s.send(&retry(6, &first));
    assert_refused(&s.response_to(6, WAIT), "the stdio client answering an HTTP client's question");
}

/// Two named static tokens are two principals: alice's state is refused to
/// bob, and alice's session is unknown (404) to bob.
// covers: elicitation-server-stored-state-bound-to-user, streamable-http-server-authenticate
#[test]
fn named_tokens_are_separate_principals() {
    let port = free_port();
    let (_hub, _s) = hub(port, config(json!({"tokens": {"alice": "tok-alice", "bob": "tok-bob"}})));
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (alice, bob) = ("Bearer tok-alice", "Bearer tok-bob");
    assert_eq!(post(&url, &modern_headers(Some("Bearer tok-carol")), &ask(1)).status, 401, "an unknown token");
    states_stay_with_their_principal(&url, alice, bob);
    sessions_stay_with_their_principal(&url, alice, bob);
}

/// `alice`'s session id is worth nothing with `bob`'s credentials (404, as
/// an unknown session) and still works with hers.
fn sessions_stay_with_their_principal(url: &str, alice: &str, bob: &str) {
    // Sessions: alice's session id is worth nothing with bob's token.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "mcpx-principal-test", "version": "1"}}});
    let r = post(url, &[("Authorization", alice)], &init);
    assert_eq!(r.status, 200);
    let sid = r.header("mcp-session-id").expect("a session id").to_string();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let hs = |auth| [("Authorization", auth), ("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    assert_eq!(post(url, &hs(bob), &list).status, 404, "bob naming alice's session");
    let r = post(url, &hs(alice), &list);
    assert_eq!(r.status, 200, "alice's own session: {}", r.text);
    assert!(r.json["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{}", r.text);
}

/// `alice`'s question (a 2026-07-28 call held for input) cannot be
/// answered with `bob`'s credentials, and still can with hers.
fn states_stay_with_their_principal(url: &str, alice: &str, bob: &str) {
    let first = post(url, &modern_headers(Some(alice)), &ask(1));
    assert_eq!(first.status, 200, "{}", first.text);
    let r = post(url, &modern_headers(Some(bob)), &retry(2, &first.json)).json;
    assert_refused(&r, "bob answering alice's question");
    let r = post(url, &modern_headers(Some(alice)), &retry(3, &first.json)).json;
    assert_eq!(r["result"]["resultType"], "complete", "alice's own retry: {r}");
}

// ------------------------------------------------------------------ OAuth

const SCOPES: [&str; 2] = ["mcp:tools", "mcp:read"];

/// The test authorization server, and mcpx protected by it (`SCOPES`
/// required, introspection for opaque tokens) in front of `demo` and of
/// `bare`, a remote py_server.py configured without credentials.
struct Protected {
    issuer: String,
    url: String,
    s: RawSession,
    _hub: Hub,
    _as: HttpServer,
    _bare: HttpServer,
}

fn protected() -> Protected {
    let as_port = free_port();
    let issuer = format!("http://127.0.0.1:{as_port}");
    let script = driver("py_oauth_as.py");
    let cmd = Cmd::new(python("1.30.0"), &[script.to_str().unwrap(), "--port", &as_port.to_string()]);
    let as_ = HttpServer::start(&cmd, as_port, "");
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let oauth = json!({"oauth": {"issuer": issuer, "audience": url, "scopes": SCOPES, "introspectionUrl": format!("{issuer}/introspect")}});
    let bare = py_server_remote("bare", Transport::StreamableHttp, None);
    let (hub, s) = hub(port, config(oauth).remote("bare", json!({"url": bare.url})));
    Protected { issuer, url, s, _hub: hub, _as: as_, _bare: bare }
}

impl Protected {
    /// A token from the authorization server's test endpoint (`query`:
    /// aud, sub, scope, exp, kid, opaque).
    fn mint(&self, query: &str) -> String {
        let r = http(&format!("{}/mint?{query}", self.issuer), &[], None);
        assert_eq!(r.status, 200, "mint {query}: {}", r.text);
        r.text
    }

    /// A good token for mcpx, of subject `sub`.
    fn token(&self, sub: &str) -> String {
        self.mint(&format!("aud={}&sub={sub}&scope={}", self.url, SCOPES.join("%20")))
    }

    fn initialize(&self, token: &str) -> Resp {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
            "capabilities": {}, "clientInfo": {"name": "mcpx-oauth-test", "version": "1"}}});
        post(&self.url, &[("Authorization", &format!("Bearer {token}"))], &init)
    }

    /// Waits (at most `WAIT`) until the server behind mcpx is ready, so a
    /// client's first call finds its tools listed.
    fn wait_ready(&self) {
        let bearer = format!("Bearer {}", self.token("status"));
        let status = self.url.replace("/mcp", "/status");
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let v = http(&status, &[("Authorization", &bearer)], None).json;
            let ready = v["upstreams"].as_array().is_some_and(|a| a.iter().any(|u| u["name"] == "bare" && u["state"] == "ready"));
            if ready {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "the server behind mcpx did not get ready: {v}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn metadata_url(&self) -> String {
        self.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    }
}

/// 401 with a challenge naming the metadata and every scope; the metadata
/// at both well-known locations, without credentials.
// covers: authz-prm-lists-authorization-servers, authz-401-www-authenticate, authz-401-when-unauthorized
#[test]
fn the_protected_resource_metadata_and_the_401_challenge() {
    let p = protected();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
    let r = post(&p.url, &[], &init);
    assert_eq!(r.status, 401, "{}", r.text);
    let challenge = r.header("www-authenticate").expect("a WWW-Authenticate challenge");
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(challenge.contains(&format!("resource_metadata=\"{}\"", p.metadata_url())), "{challenge}");
    assert!(challenge.contains("scope=\"mcp:tools mcp:read\""), "{challenge}");
    let root = p.url.replace("/mcp", "/.well-known/oauth-protected-resource");
    for at in [p.metadata_url(), root] {
        let r = http(&at, &[], None);
        assert_eq!(r.status, 200, "{at}: {}", r.text);
        assert!(r.header("content-type").is_some_and(|c| c.starts_with("application/json")), "{at}");
        let doc = &r.json;
        // RFC 9728 §3.3: `resource` is the identifier the metadata URL was built from.
        assert_eq!(doc["resource"], p.url.as_str(), "{at}: {doc}");
        assert_eq!(doc["authorization_servers"], json!([p.issuer]), "{at}: {doc}");
        assert_eq!(doc["scopes_supported"], json!(SCOPES), "{at}: {doc}");
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]), "{at}: {doc}");
    }
    assert_eq!(http(&p.url.replace("/mcp", "/health"), &[], None).status, 200);
    assert_eq!(http(&p.url.replace("/mcp", "/status"), &[], None).status, 401);
}

/// Only tokens of the issuer, for mcpx, unexpired, with every scope (or a
/// broader one), signed with a published key or active at introspection.
// covers: authz-server-validates-token, authz-server-validates-audience, authz-accept-only-own-tokens, authz-error-status-codes
// covers: authz-insufficient-scope-403, authz-all-scopes-single-challenge, authz-server-scope-hierarchy
#[test]
fn access_tokens_are_checked_for_audience_expiry_scope_and_key() {
    let p = protected();
    let (aud, all) = (p.url.clone(), SCOPES.join("%20"));
    let ok = p.initialize(&p.token("alice"));
    assert_eq!(ok.status, 200, "a good token: {}", ok.text);
    assert!(ok.json["result"]["protocolVersion"].is_string(), "{}", ok.text);
    let refused = |token: String, what: &str, why: &str| {
        let r = p.initialize(&token);
        assert_eq!(r.status, 401, "{what}: {}", r.text);
        let c = r.header("www-authenticate").unwrap_or("");
        assert!(c.contains("error=\"invalid_token\"") && c.contains("resource_metadata="), "{what}: {c}");
        assert!(r.text.contains(why), "{what}: {}", r.text);
    };
    refused(p.mint(&format!("aud=https://other.example/mcp&scope={all}")), "another audience", "not meant for");
    refused(p.mint(&format!("aud={aud}&scope={all}&exp=-3600")), "expired", "expired");
    refused(p.mint(&format!("aud={aud}&scope={all}&kid=unpublished")), "an unpublished key", "key the issuer does not publish");
    refused(p.mint(&format!("aud=https://other.example/mcp&scope={all}&opaque=1")), "opaque, another audience", "not meant for");
    refused("0123456789abcdef".into(), "an opaque token the issuer does not know", "not active");
    refused("e30.e30.c2ln".into(), "a JWT that is not signed", "");
    // One scope of two: 403 naming both (one challenge for the operation).
    let r = p.initialize(&p.mint(&format!("aud={aud}&scope=mcp:tools")));
    assert_eq!(r.status, 403, "{}", r.text);
    let c = r.header("www-authenticate").unwrap_or("");
    assert!(c.contains("error=\"insufficient_scope\"") && c.contains("scope=\"mcp:tools mcp:read\"") && c.contains("resource_metadata="), "{c}");
    // A broader scope implies the narrower ones.
    assert_eq!(p.initialize(&p.mint(&format!("aud={aud}&scope=mcp"))).status, 200, "scope mcp covers mcp:tools and mcp:read");
    // An opaque token, introspected.
    assert_eq!(p.initialize(&p.mint(&format!("aud={aud}&scope={all}&opaque=1"))).status, 200, "an active opaque token");
}

/// Two OAuth subjects are two principals, for requestState and sessions.
// covers: elicitation-remote-user-id-from-authorization
#[test]
fn oauth_subjects_are_separate_principals() {
    let p = protected();
    let (alice, bob) = (format!("Bearer {}", p.token("alice")), format!("Bearer {}", p.token("bob")));
    states_stay_with_their_principal(&p.url, &alice, &bob);
    sessions_stay_with_their_principal(&p.url, &alice, &bob);
}

/// An SDK client's own OAuth flow (PRM discovery, registration, PKCE,
/// resource indicator) gets a token mcpx accepts; the token is asked for
/// mcpx's canonical URL, never reaches a server behind mcpx, and never
/// appears in mcpx's log.
fn sdk_flow(argv: Vec<String>) {
    let mut p = protected();
    p.wait_ready();
    let mut argv = argv;
    argv.extend([p.url.clone(), "bare__auth_header".into(), "{}".into()]);
    let r = run_argv(&argv, Duration::from_secs(120));
    r.assert_ok();
    r.check(r.json["text"] == "authorization: (none)", "the upstream must not get the client's token");
    r.check(strings(&r.json["tools"]).contains(&"demo__echo".to_string()), "the tools through mcpx");
    let log = http(&format!("{}/log", p.issuer), &[], None).json;
    let issued: Vec<&str> = log.as_array().into_iter().flatten().filter_map(|e| e["issued"].as_str()).collect();
    assert!(!issued.is_empty(), "the client got no token from the authorization server: {log}");
    assert!(log.as_array().into_iter().flatten().any(|e| e["resource"] == p.url.as_str()), "no token request for mcpx's resource: {log}");
    let stderr = p.s.finish();
    assert!(stderr.contains("http"), "mcpx's log should have been captured: {stderr}");
    for t in issued {
        assert!(!stderr.contains(t), "mcpx logged an access token:\n{stderr}");
    }
}

// covers: authz-401-www-authenticate, authz-no-token-passthrough, elicitation-no-token-passthrough
#[test]
fn oauth_flow_py_1_30_0() {
    sdk_flow(vec![python("1.30.0").to_string_lossy().into(), driver("py_oauth_client.py").to_string_lossy().into()]);
}

// covers: authz-401-www-authenticate, authz-no-token-passthrough, elicitation-no-token-passthrough
#[test]
fn oauth_flow_py_2_3_0() {
    sdk_flow(vec![python("2.3.0").to_string_lossy().into(), driver("py_oauth_client.py").to_string_lossy().into()]);
}

// covers: authz-401-www-authenticate, authz-no-token-passthrough, elicitation-no-token-passthrough
#[test]
fn oauth_flow_ts_v1() {
    sdk_flow(vec![node().to_string_lossy().into(), driver("ts_oauth_client.mjs").to_string_lossy().into(), "v1".into()]);
}

// covers: authz-401-www-authenticate, authz-no-token-passthrough, elicitation-no-token-passthrough
#[test]
fn oauth_flow_ts_v2() {
    sdk_flow(vec![node().to_string_lossy().into(), driver("ts_oauth_client.mjs").to_string_lossy().into(), "v2".into()]);
}

/// An RFC 7662 introspection endpoint on loopback that counts its calls:
/// tokens starting with `good` are active (for `audience`), any other is not.
struct Introspection {
    url: String,
    calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Introspection {
    fn start(audience: &str) -> Introspection {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/introspect", l.local_addr().unwrap());
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (count, issuer, audience) = (calls.clone(), url.replace("/introspect", ""), audience.to_string());
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
                let mut raw = Vec::new();
                let mut buf = [0u8; 4096];
                let body = loop {
                    let n = s.read(&mut buf).unwrap_or(0);
                    raw.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&raw).into_owned();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let len = head.lines().find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap_or(0)));
                        if n == 0 || body.len() >= len.unwrap_or(0) {
                            break body.to_string();
                        }
                    } else if n == 0 {
                        break String::new();
                    }
                };
                count.fetch_add(1, Ordering::SeqCst);
                let exp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 3600;
                let answer = if body.starts_with("token=good") {
                    json!({"active": true, "iss": issuer, "aud": audience, "sub": "gina", "exp": exp as f64 + 0.5})
                } else {
                    json!({"active": false})
                };
                let answer = answer.to_string();
                let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}", answer.len());
            }
        });
        Introspection { url, calls }
    }

    fn calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Bogus opaque tokens cannot make mcpx hammer the authorization server:
/// a token found inactive is answered from memory, a peer gets a small
/// share of introspections that find nothing (then 429 with Retry-After,
/// at once; the sign-in form too, saying when to try again), good tokens
/// cost no share; two `Authorization` fields are one 400 whatever their
/// order, before any token is checked (issue 25 items 8, 12).
#[test]
fn introspection_is_cached_when_negative_and_shared_per_peer() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let status = url.replace("/mcp", "/status");
    let is = Introspection::start(&url);
    let issuer = is.url.replace("/introspect", "");
    let oauth = json!({"oauth": {"issuer": issuer, "audience": url, "introspectionUrl": is.url}});
    let (_hub, _s) = hub(port, config(oauth));
    let get = |token: &str| http(&status, &[("Authorization", &format!("Bearer {token}"))], None);
    // Good tokens (fractional exp) pass, and never use up the share.
    for i in 0..30 {
        let r = get(&format!("good-{i}"));
        assert_eq!(r.status, 200, "good token {i}: {}", r.text);
    }
    assert_eq!(is.calls(), 30);
    // 100 bogus tokens, as fast as they come: a handful are asked about.
    let t0 = std::time::Instant::now();
    let mut statuses = std::collections::BTreeMap::new();
    for i in 0..100 {
        let r = get(&format!("bogus-{i}"));
        *statuses.entry(r.status).or_insert(0) += 1;
        match r.status {
            401 => assert!(r.text.contains("not active"), "{}", r.text),
            429 => {
                assert!(r.header("retry-after").and_then(|v| v.parse::<u64>().ok()).is_some_and(|s| s >= 1), "{:?}", r.headers);
                assert!(r.text.contains("retry in"), "{}", r.text);
            }
            other => panic!("bogus token {i}: {other} {}", r.text),
        }
    }
    let asked = is.calls() - 30;
    let allowed = 10 + t0.elapsed().as_secs() as usize + 1;
    assert!(asked <= allowed, "{asked} introspections for 100 bogus tokens in {:?} (at most {allowed}): {statuses:?}", t0.elapsed());
    assert!(statuses.get(&429).is_some_and(|n| *n > 50), "most were refused at once: {statuses:?}");
    // A token already found inactive: 401 from memory, no call.
    let before = is.calls();
    let r = get("bogus-0");
    assert_eq!(r.status, 401, "{}", r.text);
    assert_eq!(is.calls(), before, "a known inactive token was introspected again");
    // Two Authorization fields: the same 400 in either order, nothing asked.
    let two = |a: &str, b: &str| http(&status, &[("Authorization", a), ("Authorization", b)], None);
    let (x, y) = (two("Bearer good-x", "Bearer bogus-x"), two("Bearer bogus-x", "Bearer good-x"));
    assert_eq!((x.status, y.status), (400, 400), "{} / {}", x.text, y.text);
    assert_eq!(x.text, y.text);
    assert!(x.text.contains("more than one Authorization"), "{}", x.text);
    assert_eq!(is.calls(), before, "a head with two Authorization fields was checked");
    // Bogus tokens typed into the sign-in form share that share: once it
    // is used up (again), the form answers 429 with Retry-After and says
    // when to try again.
    let signin = url.replace("/mcp", "/signin");
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    let throttled = (0..30).map(|i| http_request(&signin, "POST", &form, format!("token=typed-{i}").as_bytes())).find(|r| r.status != 401);
    let r = throttled.expect("30 bogus sign-ins, none throttled");
    assert_eq!((r.status, r.header("content-type")), (429, Some("text/html; charset=utf-8")), "{}", r.text);
    let secs = r.header("retry-after").and_then(|v| v.parse::<u64>().ok());
    assert!(secs.is_some_and(|s| s >= 1), "{:?}", r.headers);
    assert!(r.text.contains(&format!("try again in {}s.", secs.unwrap())), "{}", r.text);
}

/// Resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).expect("VmRSS")
}

/// What a session keeps is bounded: an `initialize` with a 2 MiB
/// `clientInfo` is refused with -32602 naming the limit and opens no
/// session, 50 of them leave mcpx's memory flat; and `/status` shows a
/// client's name only to its own principal (issue 25 item 1).
#[test]
fn a_session_keeps_a_few_kib_and_only_its_owner_sees_its_client_name() {
    let port = free_port();
    let (_hub, s) = hub(port, config(json!({"tokens": {"alice": "tok-alice", "bob": "tok-bob"}})));
    let url = format!("http://127.0.0.1:{port}/mcp");
    let status = url.replace("/mcp", "/status");
    let (alice, bob) = ("Bearer tok-alice", "Bearer tok-bob");
    let init = |info: Value| json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": info}});
    let r = post(&url, &[("Authorization", alice)], &init(json!({"name": "alice-private-laptop", "version": "1"})));
    assert_eq!(r.status, 200, "{}", r.text);
    let huge = init(json!({"name": "x".repeat(2 << 20), "version": "1"}));
    let attempt = |i: usize| {
        let r = post(&url, &[("Authorization", bob)], &huge);
        assert_eq!(r.json["error"]["code"], -32602, "attempt {i}: {}", &r.text[..r.text.len().min(300)]);
        let msg = r.json["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains("clientInfo") && msg.contains("4096 bytes"), "{msg}");
        // No session was opened for it.
        if let Some(sid) = r.header("mcp-session-id") {
            let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
            let hs = [("Authorization", bob), ("Mcp-Session-Id", sid), ("MCP-Protocol-Version", "2025-11-25")];
            assert_eq!(post(&url, &hs, &list).status, 404, "the refused initialize's session exists");
        }
    };
    // Warm up the allocator, then 50 more: memory stays flat.
    for i in 0..5 {
        attempt(i);
    }
    let before = rss_kib(s.pid());
    for i in 5..55 {
        attempt(i);
    }
    let after = rss_kib(s.pid());
    assert!(after < before + 16 * 1024, "RSS grew from {before} KiB to {after} KiB over 50 refused initializes");
    let seen = |auth: &str| http(&status, &[("Authorization", auth)], None);
    let (by_alice, by_bob) = (seen(alice), seen(bob));
    assert_eq!((by_alice.status, by_bob.status), (200, 200));
    assert_eq!(by_bob.json["http"]["sessions"], 1, "only alice's session is open: {}", by_bob.text);
    assert!(by_alice.text.contains("alice-private-laptop"), "alice sees her own client: {}", by_alice.text);
    assert!(!by_bob.text.contains("alice-private-laptop"), "bob sees alice's client name: {}", by_bob.text);
    let revisions: Vec<&Value> = by_bob.json["clients"].as_array().unwrap().iter().map(|c| &c["revision"]).collect();
    assert!(revisions.contains(&&json!("2025-11-25")), "bob still sees the session counted by revision: {}", by_bob.text);
    let page = http(&format!("{status}?format=html"), &[("Authorization", bob)], None);
    assert_eq!(page.status, 200);
    assert!(!page.text.contains("alice-private-laptop"), "{}", page.text);
}
