//! Each person's own credentials upstream by OAuth 2.0 Token Exchange
//! (RFC 8693, issue 29): mcpx's HTTP listener is an OAuth resource server
//! of a real OpenID provider (oidc-provider 9.13.3 from npm), in front of a
//! protected FastMCP server (Python SDK 1.30.0: JWT access tokens of the
//! provider, audience exactly its own URL; its `whoami` tool reports `sub`
//! and `aud` of the token that carried the call; its `/test/seen` lists
//! every request to it with a digest and the claims of its token). The
//! server is configured with `"tokenExchange": true`: each principal's
//! instance exchanges the principal's access token to mcpx for one for the
//! server.
//!
//! RFC 8693 is not built into oidc-provider: the token-exchange grant is
//! ours, in the test driver (tests/drivers/oidc_as.mjs, registered through
//! oidc-provider's `registerGrantType`). It verifies the subject token
//! (signature with the provider's key, issuer, expiry, audience = mcpx) and
//! issues a JWT access token for the requested resource with the subject's
//! `sub`; each grant, issued or refused, is in its `/test/log`.
//!
//! Each person's token to mcpx is a real one of the provider: the
//! authorization code flow with PKCE of the provider's public client, the
//! person logging in on the provider's dev login form (a cookie-keeping
//! walker, browser_login.mjs), for mcpx's audience. The server's own entry
//! (the template, which lists the tools for everyone) authorizes with
//! client credentials, as the same confidential client.

use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use mcpx_tests::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The lifetime of an exchanged token: mcpx exchanges again once it is
/// within 30 s of its expiry, so a token lasts 10 s in mcpx's hands.
const EXCHANGE_TTL_S: u64 = 40;

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

fn sha256_hex(s: &str) -> String {
    Sha256::digest(s.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The claims of JWT `t`, unverified.
fn claims(t: &str) -> Value {
    let part = t.split('.').nth(1).expect("a JWT");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
}

/// `who`'s access token to mcpx (`audience`): the authorization code flow
/// with PKCE at `issuer`, logging in as `who`; the redirect goes to a
/// loopback port nobody listens on, where the walker stops with the code.
fn token_for(issuer: &str, audience: &str, who: &str) -> String {
    let verifier = format!("verifier-of-{who}-{}", "v".repeat(40));
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let redirect = "http://127.0.0.1:1/callback";
    let auth = format!(
        "{issuer}/auth?response_type=code&client_id=mcpx&redirect_uri={}&scope=mcp&resource={}&code_challenge={challenge}&code_challenge_method=S256&state=s-{who}",
        encode(redirect),
        encode(audience)
    );
    let argv: Vec<String> = [node().to_str().unwrap(), driver("browser_login.mjs").to_str().unwrap(), &auth, "--login", who].iter().map(|s| s.to_string()).collect();
    let r = run_argv(&argv, Duration::from_secs(40));
    let last = r.json["url"].as_str().unwrap_or_else(|| panic!("the walker's report: {}\n{}", r.stdout, r.stderr));
    let code = last.split(['?', '&']).find_map(|p| p.strip_prefix("code=")).unwrap_or_else(|| panic!("no code at {last}: {}", r.stdout));
    let form = format!("grant_type=authorization_code&client_id=mcpx&code={code}&redirect_uri={}&code_verifier={verifier}&resource={}", encode(redirect), encode(audience));
    let t = http_request(&format!("{issuer}/token"), "POST", &[("Content-Type", "application/x-www-form-urlencoded")], form.as_bytes());
    assert_eq!(t.status, 200, "{}", t.text);
    t.json["access_token"].as_str().expect("an access token").to_string()
}

/// Every `accessToken` in the token store's document `v`.
fn access_tokens(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x.as_str()) {
                    ("accessToken", Some(t)) => out.push(t.to_string()),
                    _ => access_tokens(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| access_tokens(x, out)),
        _ => {}
    }
}

fn text(r: &Value) -> String {
    r["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("a text result: {r}")).to_string()
}

/// The provider's token exchanges so far.
fn exchanges(issuer: &str) -> Vec<Value> {
    let log = http(&format!("{issuer}/test/log"), &[], None).json;
    log.as_array().unwrap().iter().filter(|g| g["grant_type"] == EXCHANGE).cloned().collect()
}

/// The requests the server has seen.
fn seen(upstream: &str) -> Vec<Value> {
    http(&upstream.replace("/mcp", "/test/seen"), &[], None).json.as_array().unwrap().clone()
}

// covers: authz-no-token-passthrough
#[test]
fn each_principal_reaches_the_server_with_its_own_exchanged_token() {
    let (as_port, up_port, hub_port) = (free_port(), free_port(), free_port());
    let issuer = format!("http://127.0.0.1:{as_port}");
    let audience = format!("http://127.0.0.1:{hub_port}/mcp");
    let (script, port, ttl) = (driver("oidc_as.mjs"), as_port.to_string(), EXCHANGE_TTL_S.to_string());
    let as_args = [
        script.to_str().unwrap(), "--port", &port, "--redirect", "http://127.0.0.1/callback",
        "--exchange-secret", "exchange-secret-0123", "--exchange-subject-aud", &audience, "--exchange-ttl", &ttl, "--refuse-exchange", "carol",
    ];
    let _as = HttpServer::start(&Cmd::new(node(), &as_args), as_port, "");
    let up_cmd = Cmd::new(python("1.30.0"), &[driver("py_protected_server.py").to_str().unwrap(), "--port", &up_port.to_string(), "--issuer", &issuer]);
    let upstream = HttpServer::start(&up_cmd, up_port, "/mcp");

    let hub = HubConfig::new()
        .remote("gh", json!({ "url": upstream.url, "isolation": "client",
            "oauth": { "clientId": "mcpx-exchange", "clientSecret": "exchange-secret-0123", "grant": "client_credentials", "tokenExchange": true } }))
        .set("auth", json!({ "oauth": { "issuer": issuer, "audience": audience }, "tokens": { "dave": "tok-dave-0123456789" } }))
        .set("policy", json!({ "audit": { "file": "audit.jsonl" } }))
        .write();
    let env = format!("XDG_STATE_HOME={}", hub.dir().join("state").display());
    let serve = Cmd::new("env", &[&env, mcpx().to_str().unwrap(), "serve", "--config", hub.config.to_str().unwrap(), "--http", &format!("127.0.0.1:{hub_port}")]);
    let server = HttpServer::start(&serve, hub_port, "/mcp");
    let url = &server.url;
    assert_eq!(url, &audience);
    let up_aud = format!("aud={}", upstream.url);

    // alice and bob log in at the provider: tokens for mcpx, not for the server.
    let (alice, bob, carol) = (token_for(&issuer, &audience, "alice"), token_for(&issuer, &audience, "bob"), token_for(&issuer, &audience, "carol"));
    for (t, who) in [(&alice, "alice"), (&bob, "bob")] {
        let c = claims(t);
        assert_eq!((c["sub"].as_str(), c["aud"].as_str()), (Some(who), Some(audience.as_str())), "{c}");
    }

    // Each calls as itself: the server sees its own subject, for its own audience.
    let a = bearer_session(url, &alice, json!({}));
    assert_eq!(text(&bearer_call(url, &alice, &a, "gh__whoami")), format!("sub=alice {up_aud}"));
    let exchanged_at = Instant::now();
    let b = bearer_session(url, &bob, json!({}));
    assert_eq!(text(&bearer_call(url, &bob, &b, "gh__whoami")), format!("sub=bob {up_aud}"));
    // A second call is served from the cache: no new exchange.
    assert_eq!(text(&bearer_call(url, &alice, &a, "gh__whoami")), format!("sub=alice {up_aud}"));
    assert_eq!(text(&bearer_call(url, &bob, &b, "gh__whoami")), format!("sub=bob {up_aud}"));
    assert!(exchanged_at.elapsed() < Duration::from_secs(EXCHANGE_TTL_S - 30), "too slow to see the cache at work");
    let x = exchanges(&issuer);
    let subs: Vec<&str> = x.iter().filter_map(|g| g["sub"].as_str()).collect();
    assert_eq!(subs, ["alice", "bob"], "one exchange per principal: {x:?}");
    // Each exchange: mcpx's client, the subject's token to mcpx (aud = mcpx,
    // never the server), a token for the server with the same subject.
    for g in &x {
        assert_eq!(g["client_id"], "mcpx-exchange", "{g}");
        assert_eq!(g["subject"]["aud"], audience.as_str(), "{g}");
        assert_eq!(g["subject"]["sub"], g["sub"], "{g}");
        assert_eq!(g["aud"], upstream.url.as_str(), "{g}");
        assert_eq!(g["scope"], "mcp", "{g}");
    }

    // carol's exchange is refused (invalid_grant): an error naming the
    // server and why; nothing reaches the server, no other token is used.
    // Her instance waits for her next call to try again, which is refused too.
    let before = seen(&upstream.url).len();
    let c = bearer_session(url, &carol, json!({}));
    let refused = |n: usize| {
        let r = bearer_call(url, &carol, &c, "gh__whoami");
        assert_eq!(r["error"]["message"], "server 'gh' could not be started (the token exchange (RFC 8693) for this principal failed: the token endpoint answered HTTP 400: invalid_grant: grant request is invalid)", "{r}");
        assert_eq!(r["error"]["data"]["server"], "gh", "{r}");
        std::thread::sleep(Duration::from_millis(1500));
        let refused: Vec<Value> = exchanges(&issuer).into_iter().filter(|g| g["error"].is_string()).collect();
        assert_eq!(refused.len(), n, "one exchange per call, no retries: {refused:?}");
        assert_eq!((refused[n - 1]["error"].as_str(), refused[n - 1]["subject"]["sub"].as_str()), (Some("invalid_grant"), Some("carol")));
    };
    refused(1);
    refused(2);
    let during: Vec<Value> = seen(&upstream.url).split_off(before);
    assert!(during.iter().all(|s| s["method"] != "POST"), "nothing of carol's reached the server: {during:?}");

    // dave signed in to mcpx with a static token: nothing to exchange.
    let d = bearer_session(url, "tok-dave-0123456789", json!({}));
    let r = bearer_call(url, "tok-dave-0123456789", &d, "gh__whoami");
    let said = r["error"]["message"].as_str().unwrap_or_default();
    assert!(said.starts_with("server 'gh' could not be started (principal 'dave' has no current OAuth access token to mcpx"), "{r}");
    assert_eq!(exchanges(&issuer).len(), 4, "no exchange without a subject token");

    // Once alice's exchanged token is within the margin of its expiry, her
    // next call exchanges again; bob's goes on with his.
    std::thread::sleep(Duration::from_secs(EXCHANGE_TTL_S - 29).saturating_sub(exchanged_at.elapsed()));
    assert_eq!(text(&bearer_call(url, &alice, &a, "gh__whoami")), format!("sub=alice {up_aud}"));
    let subs: Vec<String> = exchanges(&issuer).iter().filter_map(|g| g["sub"].as_str().map(str::to_string)).collect();
    assert_eq!(subs, ["alice", "bob", "alice"], "alice's token exchanged again");

    // The server never saw a token a client presented to mcpx: only tokens
    // for itself, each of alice, bob or the template's client.
    let all = seen(&upstream.url);
    let presented = [sha256_hex(&alice), sha256_hex(&bob), sha256_hex(&carol)];
    for s in &all {
        assert!(!presented.iter().any(|p| s["sha256"] == p.as_str()), "a client's token to mcpx reached the server: {s}");
        if s["sha256"].is_string() {
            assert_eq!(s["aud"], upstream.url.as_str(), "{s}");
            assert!(["alice", "bob", "mcpx-exchange"].contains(&s["sub"].as_str().unwrap_or_default()), "{s}");
        }
    }
    assert!(all.iter().any(|s| s["sub"] == "alice") && all.iter().any(|s| s["sub"] == "bob"));

    // Exchanged tokens stay in memory: the token store holds the template's
    // only; the audit says the server was reached as each principal.
    let store: Value = serde_json::from_str(&std::fs::read_to_string(hub.dir().join("state/mcpx/oauth-tokens.json")).unwrap()).unwrap();
    let mut stored = Vec::new();
    access_tokens(&store, &mut stored);
    let subs: Vec<Value> = stored.iter().map(|t| claims(t)["sub"].clone()).collect();
    assert_eq!(subs, [json!("mcpx-exchange")], "the template's token only: {store}");
    let audit = std::fs::read_to_string(hub.dir().join("audit.jsonl")).unwrap();
    let lines: Vec<Value> = audit.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let bobs = lines.iter().find(|l| l["outcome"] == "result" && l["name"] == "gh__whoami" && l["principal"].as_str().is_some_and(|p| p.ends_with(" bob"))).expect("bob's call audited");
    assert_eq!(bobs["upstreamIdentity"], "principal", "{bobs}");
    assert!(!audit.contains("eyJ"), "no token in the audit log");
}
