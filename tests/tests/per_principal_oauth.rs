//! Each person's own authorization upstream (issue 29): a remote server
//! with `"oauth": {"perPrincipal": true}` behind mcpx, protected by a real
//! OpenID provider (oidc-provider 9.13.3 from npm, its dev login form: the
//! login name is the subject) in front of a protected FastMCP server
//! (Python SDK 1.30.0, JWT access tokens checked against the provider's
//! keys, audience the server's URL; its `whoami` tool reports the subject
//! of the token that carried the call).
//!
//! The operator logs in once (`mcpx auth login`, its browser a cookie-
//! keeping walker without script): the template lists the tools. Then each
//! principal (mcpx bearer tokens) calling a tool is asked to authorize:
//! alice over 2025-11-25 with URL elicitation gets -32042 and, once her
//! browser came back, `notifications/elicitation/complete` on her stream;
//! bob over 2026-07-28 gets an input round; carol, who declared no URL
//! elicitation, a tool error with the link. Each opens mcpx's page signed
//! in as themselves, logs in at the provider, and their next call reaches
//! the server as their own subject. Another's link, a forged callback and a
//! denied authorization are refused.

use std::time::Duration;

use mcpx_tests::*;
use serde_json::{json, Value};

const TOKENS: [(&str, &str); 6] = [
    ("alice", "tok-alice-0123456789"),
    ("bob", "tok-bob-0123456789"),
    ("carol", "tok-carol-0123456789"),
    ("dave", "tok-dave-0123456789"),
    ("erin", "tok-erin-0123456789"),
    ("frank", "tok-frank-0123456789"),
];

fn token(who: &str) -> &'static str {
    TOKENS.iter().find(|(n, _)| *n == who).map(|(_, t)| *t).unwrap()
}

/// A 2025-11-25 session of `who` declaring `caps`: its session id.
fn session(url: &str, who: &str, caps: Value) -> String {
    bearer_session(url, token(who), caps)
}

fn call(url: &str, who: &str, sid: &str, tool: &str) -> Value {
    bearer_call(url, token(who), sid, tool)
}

/// `browser_login.mjs`: opens `link` signed in to mcpx with `who`'s token,
/// logs in at the provider as `login`; its JSON report.
fn browser(link: &str, who: &str, login: &str) -> Report {
    let argv: Vec<String> = [node().to_str().unwrap(), driver("browser_login.mjs").to_str().unwrap(), link, "--login", login, "--token", token(who)]
        .iter()
        .map(|s| s.to_string())
        .collect();
    run_argv(&argv, Duration::from_secs(40))
}

/// The provider, the protected server, and mcpx in front of it with the
/// operator logged in.
struct Setup {
    public: String,
    issuer: String,
    env: String,
    config: String,
    state: std::path::PathBuf,
    upstream: HttpServer,
    hub: HttpServer,
    _as: HttpServer,
    _config: Hub,
}

/// The state key (a key file: `"state": {"keyFile"}`), with which each
/// principal's tokens are kept encrypted.
const STATE_KEY: &str = "5f1c0a9e7d3b2c4a6e8f0d1b3c5a7e9f2d4b6a8c0e1f3a5b7c9d0e2f4a6b8c1d";

/// A config for mcpx at `public` in front of `upstream`; with `redis`, its
/// state in that Redis; with `dcr`, no client id: mcpx registers itself.
fn hub_config(public: &str, upstream: &str, redis: Option<u16>, dcr: bool) -> Hub {
    let tokens: serde_json::Map<String, Value> = TOKENS.iter().map(|(n, t)| (n.to_string(), json!(t))).collect();
    let mut state = json!({ "keyFile": "state.key" });
    if let Some(port) = redis {
        state["url"] = json!(format!("redis://127.0.0.1:{port}/0"));
    }
    let mut oauth = json!({ "clientId": "mcpx", "perPrincipal": true, "publicUrl": public });
    if dcr {
        oauth.as_object_mut().unwrap().remove("clientId");
    }
    let hub = HubConfig::new()
        .remote("gh", json!({ "url": upstream, "isolation": "client", "oauth": oauth }))
        .set("auth", json!({ "tokens": tokens }))
        .set("policy", json!({ "audit": { "file": "audit.jsonl" } }))
        .set("state", state)
        .write();
    std::fs::write(hub.dir().join("state.key"), STATE_KEY).unwrap();
    hub
}

/// `mcpx serve --http` of `config` at `port`, its state under `env`.
fn serve(env: &str, config: &str, port: u16) -> HttpServer {
    let addr = format!("127.0.0.1:{port}");
    HttpServer::start(&Cmd::new("env", &[env, mcpx().to_str().unwrap(), "serve", "--config", config, "--http", &addr]), port, "/mcp")
}

impl Setup {
    fn start() -> Setup {
        Setup::start_with(None, &["--access-ttl", "32"], false)
    }

    /// With `redis`: the first replica of several sharing that Redis;
    /// `provider`: the provider's options past its port and redirects;
    /// `dcr`: mcpx registers itself (Dynamic Client Registration).
    fn start_with(redis: Option<u16>, provider: &[&str], dcr: bool) -> Setup {
        let (as_port, up_port, hub_port) = (free_port(), free_port(), free_port());
        let public = format!("http://127.0.0.1:{hub_port}");
        let issuer = format!("http://127.0.0.1:{as_port}");
        let callback = format!("{public}/oauth/callback");
        let mut as_args = vec![driver("oidc_as.mjs").to_str().unwrap().to_string(), "--port".into(), as_port.to_string(), "--redirect".into(), callback];
        as_args.extend(["--redirect".into(), "http://127.0.0.1/callback".into()]);
        as_args.extend(provider.iter().map(|a| a.to_string()));
        // A second replica's callback: a loopback redirect URI matches on any
        // port (RFC 8252 §7.3), so its port is taken only when it starts.
        as_args.extend(["--redirect".into(), "http://127.0.0.1/oauth/callback".into()]);
        let as_args: Vec<&str> = as_args.iter().map(String::as_str).collect();
        let _as = HttpServer::start(&Cmd::new(node(), &as_args), as_port, "");
        let up_cmd = Cmd::new(python("1.30.0"), &[driver("py_protected_server.py").to_str().unwrap(), "--port", &up_port.to_string(), "--issuer", &issuer]);
        let upstream = HttpServer::start(&up_cmd, up_port, "/mcp");

        let hub = hub_config(&public, &upstream.url, redis, dcr);
        let state = hub.dir().join("state");
        let config = hub.config.to_str().unwrap().to_string();
        let env = format!("XDG_STATE_HOME={}", state.display());

        // The operator logs in once: the template lists the server's tools.
        let open_with = format!("{} {} --login operator", node().display(), driver("browser_login.mjs").display());
        let login: Vec<String> = ["env", &env, mcpx().to_str().unwrap(), "auth", "login", "gh", "--config", &config, "--open-with", &open_with].iter().map(|s| s.to_string()).collect();
        let r = run_argv(&login, Duration::from_secs(60));
        assert_eq!(r.code, Some(0), "auth login: {}\n{}", r.stdout, r.stderr);

        let server = serve(&env, &config, hub_port);
        Setup { public, issuer, env, config, state, upstream, hub: server, _as, _config: hub }
    }

    /// Another replica sharing the first's Redis, state folder and key, at
    /// its own address (a person's link and callback come back to the
    /// replica that made the link): it, its public URL and its config.
    fn second_replica(&self, redis: u16) -> (HttpServer, String, Hub) {
        let port = free_port();
        let public = format!("http://127.0.0.1:{port}");
        let hub = hub_config(&public, &self.upstream.url, Some(redis), false);
        (serve(&self.env, hub.config.to_str().unwrap(), port), public, hub)
    }

    /// The browser command the SDK drivers run (the URL last): signs in to
    /// mcpx with `who`'s token and logs in at the provider as `who`.
    fn browser_cmd(who: &str) -> String {
        format!("{} {} --login {who} --token {}", node().display(), driver("browser_login.mjs").display(), token(who))
    }
}

fn text(r: &Value) -> String {
    r["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("a text result: {r}")).to_string()
}

// covers: authz-no-token-passthrough, elicitation-server-may-return-url-required-error, elicitation-url-required-error-url-mode-with-id, elicitation-complete-only-to-initiating-client, elicitation-complete-must-carry-id, elicitation-url-verify-opening-user, elicitation-url-same-user-start-and-complete
#[test]
fn each_principal_authorizes_in_its_own_browser_and_calls_as_itself() {
    // Access tokens last 32 s: 2 s later they are within the 30 s mcpx refreshes ahead of expiry.
    let setup = Setup::start();
    let (public, issuer, callback, url, upstream, state, env, config) =
        (&setup.public, &setup.issuer, format!("{}/oauth/callback", setup.public), &setup.hub.url, &setup.upstream, &setup.state, &setup.env, &setup.config);

    // alice, 2025-11-25 with URL elicitation: -32042 naming mcpx's page.
    let a = session(url, "alice", json!({ "elicitation": { "form": {}, "url": {} } }));
    let r = call(url, "alice", &a, "gh__whoami");
    assert_eq!(r["error"]["code"], -32042, "{r}");
    let e = &r["error"]["data"]["elicitations"][0];
    let (link, eid) = (e["url"].as_str().unwrap().to_string(), e["elicitationId"].as_str().unwrap().to_string());
    assert_eq!(e["mode"], "url");
    assert!(link.starts_with(&format!("{public}/connect/")), "{link}");
    assert!(!link.contains("alice") && !link.contains(issuer.as_str()), "the link names neither the user nor the provider: {link}");

    // bob's browser cannot use alice's link; a forged callback is refused.
    let b = browser(&link, "bob", "bob");
    assert_eq!(b.json["status"], 403, "{}", b.stdout);
    let forged = http(&format!("{callback}?state=forged&code=x&iss={issuer}"), &[], None);
    assert_eq!(forged.status, 400, "{}", forged.text);

    // alice's GET stream (open before her browser comes back) hears the completion.
    let stream = {
        let auth = format!("Bearer {}", token("alice"));
        let h = [("Authorization", auth.as_str()), ("Mcp-Session-Id", a.as_str()), ("MCP-Protocol-Version", "2025-11-25"), ("Accept", "text/event-stream")];
        let limit = Duration::from_secs(30);
        let lines = open_sse(url, &h, limit);
        std::thread::spawn(move || read_sse_until(lines, "notifications/elicitation/complete", limit))
    };
    let done = browser(&link, "alice", "alice");
    assert_eq!(done.json["status"], 200, "{}\n{}", done.stdout, done.stderr);
    assert!(done.json["body"].as_str().unwrap_or("").contains("<title>mcpx: Authorized</title>"), "{}", done.stdout);
    let note = stream.join().unwrap().expect("notifications/elicitation/complete on alice's stream");
    assert_eq!(note["params"]["elicitationId"], eid.as_str());
    // The link is used up.
    assert_eq!(browser(&link, "alice", "alice").json["status"], 404);

    let up_aud = format!("aud={}", upstream.url);
    assert_eq!(text(&call(url, "alice", &a, "gh__whoami")), format!("sub=alice {up_aud}"));
    let authorized = std::time::Instant::now();

    // bob, 2026-07-28 with URL elicitation: an input round, then his retry.
    let caps = json!({ "elicitation": { "url": {} } });
    let msg = modern_request(1, "tools/call", json!({ "name": "gh__whoami", "arguments": {} }), caps.clone());
    let r = post_modern(url, token("bob"), &msg);
    let res = &r["result"];
    assert_eq!(res["resultType"], "input_required", "{r}");
    let ask = &res["inputRequests"]["mcpx-authorize"];
    assert_eq!((ask["method"].as_str(), ask["params"]["mode"].as_str()), (Some("elicitation/create"), Some("url")), "{r}");
    assert!(ask["params"].get("elicitationId").is_none(), "no elicitationId in 2026-07-28: {ask}");
    let link = ask["params"]["url"].as_str().unwrap();
    assert_eq!(browser(link, "bob", "bob").json["status"], 200);
    let mut params = json!({ "name": "gh__whoami", "arguments": {}, "requestState": res["requestState"],
        "inputResponses": { "mcpx-authorize": { "action": "accept" } } });
    params["_meta"] = msg["params"]["_meta"].clone();
    let retry = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params });
    let r = post_modern(url, token("bob"), &retry);
    assert_eq!(r["result"]["content"][0]["text"], format!("sub=bob {up_aud}"), "{r}");

    // carol declared no URL elicitation: a tool error with the link. She
    // denies at the provider: refused, and she is asked again.
    let c = session(url, "carol", json!({}));
    let r = call(url, "carol", &c, "gh__whoami");
    assert_eq!(r["result"]["isError"], true, "{r}");
    let said = text(&r);
    let link = said.split_whitespace().find(|w| w.starts_with(&format!("{public}/connect/"))).expect("the link in the text").to_string();
    let denied = browser(&link, "carol", "deny");
    assert_eq!(denied.json["status"], 400, "{}", denied.stdout);
    assert!(denied.json["body"].as_str().unwrap_or("").contains("<title>mcpx: Not authorized</title>"), "{}", denied.stdout);
    let r = call(url, "carol", &c, "gh__whoami");
    assert_eq!(r["result"]["isError"], true, "asked again: {r}");

    // Each call went with its own principal's token; the provider issued
    // them for the server's URL only; nothing of a client's token to mcpx went up.
    let log = http(&format!("{issuer}/test/log"), &[], None).json;
    let subs: Vec<&str> = log.as_array().unwrap().iter().filter_map(|g| g["sub"].as_str()).collect();
    for who in ["operator", "alice", "bob"] {
        assert!(subs.contains(&who), "{who}: {log}");
    }
    assert!(!subs.contains(&"carol") && !subs.contains(&"deny"), "{log}");
    for g in log.as_array().unwrap() {
        assert_eq!(g["aud"], upstream.url.as_str(), "{g}");
    }
    // The audit lines say whose identity reached the server, never a token.
    let audit = std::fs::read_to_string(setup._config.dir().join("audit.jsonl")).unwrap();
    let lines: Vec<Value> = audit.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let bobs = lines.iter().find(|l| l["principal"] == "bob" && l["outcome"] == "result" && l["name"] == "gh__whoami").expect("bob's call audited");
    assert_eq!(bobs["upstreamIdentity"], "principal", "{bobs}");
    assert!(!audit.contains("eyJ") && !audit.contains("tok-"), "no token in the audit log");
    // So do the metrics, per server.
    let auth = format!("Bearer {}", token("bob"));
    let metrics = http(&url.replace("/mcp", "/metrics"), &[("Authorization", &auth)], None);
    assert_eq!(metrics.status, 200, "{}", metrics.text);
    let served = metrics.text.lines().find(|l| l.starts_with("mcpx_upstream_identity_requests_total{server=\"gh\",identity=\"principal\"}"));
    assert!(served.and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok()).is_some_and(|n| n >= 2.0), "{}", metrics.text);
    assert!(!metrics.text.contains("identity=\"server\""), "gh is reached only as each principal: {}", metrics.text);

    // The token store keeps each principal's apart, owner-only, encrypted
    // with the state key (the operator's own login stays readable to `mcpx auth status`).
    let store = std::fs::read_to_string(state.join("mcpx/oauth-tokens.json")).unwrap();
    let v: Value = serde_json::from_str(&store).unwrap();
    for who in ["alice", "bob"] {
        let kept = v["principals"][who]["gh"].as_str().unwrap_or_else(|| panic!("{who}'s tokens kept: {v}"));
        assert!(kept.starts_with("v1.") && !kept.contains("eyJ"), "{kept}");
    }
    let principals = v["principals"].to_string();
    assert!(!principals.contains("accessToken") && !principals.contains("eyJ") && !principals.contains("refresh"), "{principals}");
    assert!(v["principals"].get("carol").is_none());
    assert!(!store.contains("tok-alice"), "a client's token to mcpx is never kept or sent up");

    // Close to expiry, alice's token is refreshed before her call.
    std::thread::sleep(Duration::from_secs(3).saturating_sub(authorized.elapsed()));
    assert_eq!(text(&call(url, "alice", &a, "gh__whoami")), format!("sub=alice {up_aud}"));
    let log = http(&format!("{issuer}/test/log"), &[], None).json;
    assert!(log.as_array().unwrap().iter().any(|g| g["grant_type"] == "refresh_token" && g["sub"] == "alice"), "a refresh for alice: {log}");

    // `mcpx auth logout gh --principal alice` forgets hers only.
    let logout: Vec<String> = ["env", env, mcpx().to_str().unwrap(), "auth", "logout", "gh", "--principal", "alice", "--config", config].iter().map(|s| s.to_string()).collect();
    let r = run_argv(&logout, Duration::from_secs(20));
    assert!(r.stdout.contains("logged out for principal 'alice'"), "{}\n{}", r.stdout, r.stderr);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(state.join("mcpx/oauth-tokens.json")).unwrap()).unwrap();
    assert!(v["principals"]["alice"].get("gh").is_none() && v["principals"]["bob"]["gh"].is_string(), "{v}");
    // The running hub asks her again at her next call; bob goes on as himself.
    let r = call(url, "alice", &a, "gh__whoami");
    assert_eq!(r["error"]["code"], -32042, "asked again after the logout: {r}");
    let r = post_modern(url, token("bob"), &modern_request(3, "tools/call", json!({ "name": "gh__whoami", "arguments": {} }), caps.clone()));
    assert_eq!(r["result"]["content"][0]["text"], format!("sub=bob {up_aud}"), "{r}");

    // On the status page each principal sees its own authorizations only,
    // and revokes one with its button: bob is asked again at his next call.
    let status = url.replace("/mcp", "/status");
    let mine = |who: &str| {
        let auth = format!("Bearer {}", token(who));
        let r = http(&format!("{status}?format=json"), &[("Authorization", &auth)], None);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json["authorizations"].clone()
    };
    let bobs = mine("bob");
    assert_eq!(bobs.as_array().map(|a| a.iter().map(|x| x["server"].clone()).collect::<Vec<_>>()), Some(vec![json!("gh")]), "{bobs}");
    assert_eq!(mine("alice"), json!([]), "alice logged out; bob's are not hers to see");
    let auth = format!("Bearer {}", token("bob"));
    let form = |body: &str| {
        let h = [("Authorization", auth.as_str()), ("Content-Type", "application/x-www-form-urlencoded"), ("Origin", public.as_str())];
        http_request(&status, "POST", &h, body.as_bytes())
    };
    let r = form("revoke=nope");
    assert_eq!(r.status, 400, "{}", r.text);
    let page = http(&status, &[("Authorization", auth.as_str()), ("Accept", "text/html")], None);
    assert!(page.text.contains("<button>Revoke gh</button>"), "{}", page.text);
    let r = form("revoke=gh");
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(mine("bob"), json!([]));
    let r = post_modern(url, token("bob"), &modern_request(4, "tools/call", json!({ "name": "gh__whoami", "arguments": {} }), caps));
    assert_eq!(r["result"]["resultType"], "input_required", "asked again after revoking: {r}");
}

/// A principal's token that expires with no refresh token (the provider
/// issues none): once the server refuses it, the principal is asked to
/// authorize again, not served with anyone else's; authorized again, the
/// call goes through as them. No client id is configured: mcpx registers
/// itself for the principals' flows (a web client coming back to its
/// callback), apart from the operator's (a native one, loopback).
#[test]
fn an_expired_token_without_refresh_asks_its_principal_again() {
    let setup = Setup::start_with(None, &["--access-ttl", "2", "--no-refresh"], true);
    let (url, up_aud) = (&setup.hub.url, format!("aud={}", setup.upstream.url));
    let s = session(url, "alice", json!({ "elicitation": { "url": {} } }));
    let link = asked_link(&call(url, "alice", &s, "gh__whoami"));
    assert_eq!(browser(&link, "alice", "alice").json["status"], 200);
    assert_eq!(text(&call(url, "alice", &s, "gh__whoami")), format!("sub=alice {up_aud}"));
    std::thread::sleep(Duration::from_millis(3_000));
    let link = asked_link(&call(url, "alice", &s, "gh__whoami"));
    assert_eq!(browser(&link, "alice", "alice").json["status"], 200);
    assert_eq!(text(&call(url, "alice", &s, "gh__whoami")), format!("sub=alice {up_aud}"));
    let log = http(&format!("{}/test/log", setup.issuer), &[], None).json;
    let alice: Vec<&Value> = log.as_array().unwrap().iter().filter(|g| g["sub"] == "alice").collect();
    assert_eq!(alice.len(), 2, "authorized twice, nothing refreshed: {log}");
    assert!(alice.iter().all(|g| g["grant_type"] == "authorization_code" && g["refresh_token"] == false), "{log}");
    let clients: std::collections::BTreeSet<&str> = log.as_array().unwrap().iter().filter_map(|g| g["client_id"].as_str()).collect();
    assert_eq!(clients.len(), 2, "the operator's registration and the principals' flows': {log}");
    assert!(!clients.contains("mcpx"), "{log}");
}

/// The link a -32042 error `r` asks to open.
fn asked_link(r: &Value) -> String {
    assert_eq!(r["error"]["code"], -32042, "{r}");
    r["error"]["data"]["elicitations"][0]["url"].as_str().unwrap().to_string()
}

/// Two replicas sharing Redis and the state key: each principal's tokens
/// are kept there, encrypted (and sealed, as every value there is). A person
/// who authorized through one replica calls as themselves through the
/// other; bob is asked for his own and never given alice's; a logout holds
/// on both.
#[test]
fn replicas_sharing_redis_keep_each_principals_tokens_for_all() {
    let (_redis, redis_port) = redis_server();
    let setup = Setup::start_with(Some(redis_port), &[], false);
    let (second, second_public, second_config) = setup.second_replica(redis_port);
    let (a, b) = (&setup.hub.url, &second.url);
    let up_aud = format!("aud={}", setup.upstream.url);
    let caps = json!({ "elicitation": { "form": {}, "url": {} } });

    // `who` authorizes through the replica at `url` (its links at `public`)
    // and calls as itself there: that session.
    let authorize = |url: &str, public: &str, who: &str| {
        let s = session(url, who, caps.clone());
        let link = asked_link(&call(url, who, &s, "gh__whoami"));
        assert!(link.starts_with(&format!("{public}/connect/")), "{link}");
        assert_eq!(browser(&link, who, who).json["status"], 200);
        assert_eq!(text(&call(url, who, &s, "gh__whoami")), format!("sub={who} {up_aud}"));
        s
    };
    // A new session of `who` on the replica at `url`, calling as itself at once, not asked.
    let already = |url: &str, who: &str| {
        let s = session(url, who, caps.clone());
        assert_eq!(text(&call(url, who, &s, "gh__whoami")), format!("sub={who} {up_aud}"));
        s
    };
    // alice authorizes through replica A and is herself through B; bob
    // through B is asked for his own (never given alice's), and is himself through A.
    let alice_a = authorize(a, &setup.public, "alice");
    let alice_b = already(b, "alice");
    authorize(b, &second_public, "bob");
    let bob_a = already(a, "bob");

    // Kept in Redis, not in the file; no token readable there.
    let redis_get = |key: &str| {
        let out = std::process::Command::new("redis-cli").args(["-p", &redis_port.to_string(), "--raw", "GET", key]).output().expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    for who in ["alice", "bob"] {
        let kept = redis_get(&format!("mcpx:oauth-tokens:gh:{who}"));
        assert!(kept.starts_with("v1.") && kept.len() > 100, "{who}: {kept:?}");
        assert!(!kept.contains("eyJ") && !kept.contains("accessToken"), "{who}'s tokens are encrypted: {kept}");
    }
    let file: Value = serde_json::from_str(&std::fs::read_to_string(setup.state.join("mcpx/oauth-tokens.json")).unwrap()).unwrap();
    assert!(file.get("principals").is_none(), "{file}");

    // The provider issued alice's and bob's once each, for the server only.
    let log = http(&format!("{}/test/log", setup.issuer), &[], None).json;
    let codes = |who: &str| log.as_array().unwrap().iter().filter(|g| g["sub"] == who && g["grant_type"] == "authorization_code").count();
    assert_eq!((codes("alice"), codes("bob")), (1, 1), "{log}");

    // `mcpx auth logout gh --principal alice` (B's config): both replicas ask her again; bob goes on.
    let logout: Vec<String> = ["env", &setup.env, mcpx().to_str().unwrap(), "auth", "logout", "gh", "--principal", "alice", "--config", second_config.config.to_str().unwrap()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let r = run_argv(&logout, Duration::from_secs(20));
    assert!(r.stdout.contains("logged out for principal 'alice' (tokens removed from the shared state store)"), "{}\n{}", r.stdout, r.stderr);
    assert_eq!(redis_get("mcpx:oauth-tokens:gh:alice"), "");
    asked_link(&call(a, "alice", &alice_a, "gh__whoami"));
    asked_link(&call(b, "alice", &alice_b, "gh__whoami"));
    assert_eq!(text(&call(a, "bob", &bob_a, "gh__whoami")), format!("sub=bob {up_aud}"));
}

// `mcpx auth logout NAME --principal P` run by hand asks a shared store
// that does not answer again (one ask gives up after 500 ms) for up to 5 s:
// a Redis starting a moment later answers it; one that stays away fails it
// with a line naming the store.
#[test]
fn a_logout_waits_for_a_restarting_redis_and_names_one_that_stays_away() {
    let port = free_port();
    let hub = hub_config("http://127.0.0.1:9", "http://127.0.0.1:9/mcp", Some(port), false);
    let argv: Vec<String> = ["env", &format!("XDG_STATE_HOME={}", hub.dir().join("state").display()), mcpx().to_str().unwrap(), "auth", "logout", "gh", "--principal", "alice", "--config", hub.config.to_str().unwrap()]
        .iter()
        .map(|s| s.to_string())
        .collect();

    let t0 = std::time::Instant::now();
    let away = run_argv(&argv, Duration::from_secs(30));
    assert_eq!(away.code, Some(1), "{}\n{}", away.stdout, away.stderr);
    assert!(away.stderr.contains("the shared state store keeps the principals' tokens and is unavailable"), "{}", away.stderr);
    assert_eq!(away.stderr.matches("asking again for up to 5 s").count(), 1, "{}", away.stderr);
    assert!(t0.elapsed() >= Duration::from_secs(5), "gave up after {:?}", t0.elapsed());

    let later = {
        let argv = argv.clone();
        std::thread::spawn(move || run_argv(&argv, Duration::from_secs(30)))
    };
    std::thread::sleep(Duration::from_millis(1500));
    let args = ["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
    let _redis = HttpServer::start(&Cmd::new("redis-server", &args), port, "");
    let r = later.join().unwrap();
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("gh: was not logged in for principal 'alice'"), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("asking again for up to 5 s"), "it waited: {}", r.stderr);
}

type SseLines = std::io::Lines<std::io::BufReader<std::net::TcpStream>>;

/// The SSE stream of a GET to `url`, its response head read (200), each
/// read given up after `limit`: its lines.
fn open_sse(url: &str, headers: &[(&str, &str)], limit: Duration) -> SseLines {
    use std::io::{BufRead, BufReader, Write};
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut s = std::net::TcpStream::connect(authority).expect("connect for the GET stream");
    s.set_read_timeout(Some(limit)).unwrap();
    let mut head = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\n");
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    let mut lines = BufReader::new(s).lines();
    let status = lines.next().expect("a status line").expect("the GET stream's head");
    assert!(status.starts_with("HTTP/1.1 200"), "the GET stream: {status}");
    while !lines.next().expect("the GET stream's head").expect("the GET stream's head").is_empty() {}
    lines
}

/// Reads `lines` until a message with `method` (or `limit`, or a read
/// times out): that message.
fn read_sse_until(mut lines: SseLines, method: &str, limit: Duration) -> Option<Value> {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        let line = lines.next()?.ok()?;
        if let Some(v) = line.strip_prefix("data:").and_then(|d| serde_json::from_str::<Value>(d.trim()).ok()) {
            if v["method"] == method {
                return Some(v);
            }
        }
    }
    None
}

/// Runs an SDK driver for `who`: its JSON report.
fn sdk(program: &std::path::Path, script: &str, url: &str, who: &str, extra: &[&str]) -> Report {
    let mut argv: Vec<String> = [program.to_str().unwrap(), driver(script).to_str().unwrap(), url, token(who), "gh__whoami", "--browser", &Setup::browser_cmd(who)]
        .iter()
        .map(|s| s.to_string())
        .collect();
    argv.extend(extra.iter().map(|s| s.to_string()));
    run_argv(&argv, Duration::from_secs(90))
}

// The official SDKs as clients, each its own person: the Python SDK 1.30.0
// over 2025-11-25 (-32042, the completion notification, its retry), the
// Python SDK 2.3.0 and the TypeScript SDK 2.4.0 over 2026-07-28 (an input
// round whose URL elicitation their handler opens, their own retry).
// covers: elicitation-server-may-return-url-required-error, elicitation-complete-must-carry-id
#[test]
fn the_official_sdks_authorize_through_url_elicitation() {
    let setup = Setup::start();
    let url = &setup.hub.url;
    let aud = format!("aud={}", setup.upstream.url);

    let r = sdk(&python("1.30.0"), "py_url_client.py", url, "dave", &[]);
    assert_eq!(r.json["ok"], true, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.json["asked"]["code"], -32042, "{}", r.stdout);
    assert!(r.json["asked"]["url"].as_str().unwrap().starts_with(&format!("{}/connect/", setup.public)), "{}", r.stdout);
    assert_eq!(r.json["completed"], true, "notifications/elicitation/complete reached it: {}", r.stdout);
    assert_eq!(r.json["text"], format!("sub=dave {aud}"), "{}", r.stdout);

    let r = sdk(&python("2.3.0"), "py_url_client.py", url, "erin", &["--mode", "2026-07-28"]);
    assert_eq!(r.json["ok"], true, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.json["asked"]["mode"], "url", "{}", r.stdout);
    assert_eq!(r.json["text"], format!("sub=erin {aud}"), "{}", r.stdout);

    let r = sdk(&node(), "ts_url_client.mjs", url, "frank", &[]);
    assert_eq!(r.json["ok"], true, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.json["asked"][0]["mode"], "url", "{}", r.stdout);
    assert_eq!(r.json["text"], format!("sub=frank {aud}"), "{}", r.stdout);
}
