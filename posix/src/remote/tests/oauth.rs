//! The transport with an `"oauth"` block, against a scripted server that is
//! both the protected MCP server and its authorization server.

use super::*;
use crate::remote::oauth::store::{ServerTokens, Store};
use crate::remote::oauth::{GrantKind, OAuthSpec};
use std::os::unix::fs::PermissionsExt as _;

fn temp_store(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpx-oauth-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("mcpx/oauth-tokens.json")
}

fn oauth_spec(url: &str, oauth: OAuthSpec) -> RemoteSpec {
    RemoteSpec { headers: vec![], oauth: Some(oauth), ..spec(url) }
}

fn form(body: &str) -> BTreeMap<String, String> {
    crate::remote::oauth::form::decode(body).into_iter().collect()
}

/// Serves the PRM and the authorization server metadata at the server's
/// origin; `mcp` answers the MCP endpoint, `token` the token endpoint.
fn protected(
    mcp: impl Fn(&Req, &str) -> Reply + Send + Sync + 'static,
    token: impl Fn(&BTreeMap<String, String>) -> String + Send + Sync + 'static,
) -> Server {
    protected_by("", "", mcp, token)
}

/// [`protected`] with the authorization server named `{origin}{prm_as}` in
/// the PRM, and its metadata (at every RFC 8414 location) saying its issuer
/// is `{origin}{issuer}`.
fn protected_by(
    prm_as: &'static str,
    issuer: &'static str,
    mcp: impl Fn(&Req, &str) -> Reply + Send + Sync + 'static,
    token: impl Fn(&BTreeMap<String, String>) -> String + Send + Sync + 'static,
) -> Server {
    let port = Arc::new(std::sync::atomic::AtomicU16::new(0));
    let p2 = port.clone();
    let srv = Server::start(move |req| {
        let origin = format!("http://127.0.0.1:{}", p2.load(std::sync::atomic::Ordering::SeqCst));
        match (req.method.as_str(), req.target.as_str()) {
            ("GET", "/.well-known/oauth-protected-resource/mcp") => Reply::Json(
                200,
                vec![],
                serde_json::json!({"resource": format!("{origin}/mcp"), "authorization_servers": [format!("{origin}{prm_as}")]}).to_string(),
            ),
            ("GET", t) if t.starts_with("/.well-known/oauth-authorization-server") => Reply::Json(
                200,
                vec![],
                serde_json::json!({"issuer": format!("{origin}{issuer}"), "authorization_endpoint": format!("{origin}/authorize"),
                    "token_endpoint": format!("{origin}/token"), "code_challenge_methods_supported": ["S256"],
                    "grant_types_supported": ["client_credentials", "refresh_token"]})
                .to_string(),
            ),
            ("POST", "/token") => Reply::Json(200, vec![], token(&form(&req.body))),
            ("POST", "/mcp") | ("GET", "/mcp") | ("DELETE", "/mcp") => {
                let challenge = format!(r#"Bearer resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp""#);
                mcp(req, &challenge)
            }
            _ => Reply::Status(404),
        }
    });
    port.store(srv.port, std::sync::atomic::Ordering::SeqCst);
    srv
}

fn unauthorized(challenge: &str) -> Reply {
    Reply::Json(401, vec![("www-authenticate", challenge.to_string())], r#"{"error":"invalid_token"}"#.into())
}

// A token that expires in the middle of a session is refreshed before the
// next request; a 403 insufficient_scope gets a token with the union of
// scopes and the request is sent again; a token the server stops accepting
// is replaced after discovery, which names the negotiated revision.
// covers: authz-refresh-tokens, authz-step-up, authz-bearer-header, authz-token-every-request, streamable-http-auth-discovery-version-header
#[test]
fn tokens_refresh_mid_session_step_up_and_rediscovery() {
    let stepped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let revoked = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (s2, r2) = (stepped.clone(), revoked.clone());
    let refreshes = std::sync::atomic::AtomicUsize::new(0);
    let srv = protected(
        move |req, ch| {
            let auth = req.header("authorization").unwrap_or("");
            match (req.method.as_str(), req.rpc_method().as_str(), auth) {
                (_, _, "") => unauthorized(ch),
                ("POST", "initialize", "Bearer at-1") => Reply::Json(200, vec![], init_result("2025-06-18")),
                ("POST", "notifications/initialized", "Bearer at-1") => Reply::Status(202),
                ("GET", _, _) => Reply::Status(405),
                ("POST", "tools/list", "Bearer at-2") => Reply::Json(200, vec![], tools_result(&req.rpc_id())),
                ("POST", "tools/call", "Bearer at-2") if !s2.swap(true, std::sync::atomic::Ordering::SeqCst) => Reply::Json(
                    403,
                    vec![("www-authenticate", format!(r#"Bearer error="insufficient_scope", scope="admin", resource_metadata="{}""#, ch.split('"').nth(1).unwrap()))],
                    "{}".into(),
                ),
                ("POST", "tools/call", "Bearer at-3") => {
                    Reply::Json(200, vec![], format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[]}}}}"#, req.rpc_id()))
                }
                ("POST", "tools/list", "Bearer at-3") if !r2.swap(true, std::sync::atomic::Ordering::SeqCst) => unauthorized(ch),
                ("POST", "tools/list", "Bearer at-4") => Reply::Json(200, vec![], tools_result(&req.rpc_id())),
                ("DELETE", _, _) => Reply::Status(204),
                _ => unauthorized(ch),
            }
        },
        move |f| {
            let (grant, scope) = (f.get("grant_type").map(String::as_str), f.get("scope").map(String::as_str));
            let first_refresh = || refreshes.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
            let (at, expires) = match (grant, f.get("refresh_token").map(String::as_str), scope) {
                (Some("client_credentials"), _, Some("base")) => ("at-1", 32),
                (Some("client_credentials"), _, Some("base admin")) => ("at-3", 3600),
                (Some("refresh_token"), Some("rt-1"), _) if first_refresh() => ("at-2", 3600),
                (Some("refresh_token"), Some("rt-1"), _) => ("at-4", 3600),
                _ => return r#"{"error":"invalid_grant"}"#.into(),
            };
            format!(r#"{{"access_token":"{at}","token_type":"Bearer","expires_in":{expires},"refresh_token":"rt-1","scope":"{}"}}"#, scope.unwrap_or("base"))
        },
    );
    let store = temp_store("refresh");
    let oauth = OAuthSpec {
        client_id: Some("cid".into()),
        client_secret: Some("sec".into()),
        scopes: vec!["base".into()],
        grant: GrantKind::ClientCredentials,
        store: store.clone(),
        ..OAuthSpec::default()
    };
    let url = srv.url.clone();
    let u2 = url.clone();
    run(Duration::from_secs(30), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, oauth_spec(&u2, oauth), fast(), log.clone(), None);
        handshake(&r, &log).await;
        // at-1 expires in 32 s: within the 30 s margin two seconds later.
        Timer::after(Duration::from_millis(2200)).await;
        r.put(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec()).unwrap();
        assert!(until(Duration::from_secs(5), || log.answer(1.into()).is_some()).await, "{:?}", log.all());
        assert!(log.answer(1.into()).unwrap().get("result").is_some(), "{:?}", log.all());
        r.put(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}"#.to_vec()).unwrap();
        assert!(until(Duration::from_secs(5), || log.answer(2.into()).is_some()).await, "{:?}", log.all());
        assert!(log.answer(2.into()).unwrap().get("result").is_some(), "{:?}", log.all());
        r.put(br#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#.to_vec()).unwrap();
        assert!(until(Duration::from_secs(5), || log.answer(3.into()).is_some()).await, "{:?}", log.all());
        assert!(log.answer(3.into()).unwrap().get("result").is_some(), "{:?}", log.all());
        r.shutdown();
        task.await;
        assert_eq!(log.count("exited"), 1, "{:?}", log.all());
    });
    let reqs = srv.requests();
    let tokens: Vec<BTreeMap<String, String>> = reqs.iter().filter(|q| q.target == "/token").map(|q| form(&q.body)).collect();
    let grants: Vec<&str> = tokens.iter().map(|f| f["grant_type"].as_str()).collect();
    assert_eq!(grants, ["client_credentials", "refresh_token", "client_credentials", "refresh_token"], "{reqs:?}");
    for (q, f) in reqs.iter().filter(|q| q.target == "/token").zip(&tokens) {
        // client_secret_basic (the metadata names no methods) and the resource of the PRM.
        assert_eq!(q.header("authorization"), Some("Basic Y2lkOnNlYw=="), "{q:?}");
        assert_eq!(f.get("resource").map(String::as_str), Some(url.as_str()), "{q:?}");
    }
    // Rediscovery after the 401 of a session names the negotiated revision.
    let prm: Vec<&Req> = reqs.iter().filter(|q| q.target.starts_with("/.well-known/oauth-protected-resource")).collect();
    assert_eq!(prm.last().unwrap().header("mcp-protocol-version"), Some("2025-06-18"), "{prm:?}");
    // The store keeps the last tokens, readable by the user only.
    let st = Store { path: store.clone() }.tokens("remote").unwrap().unwrap();
    assert_eq!((st.access_token.as_str(), st.url.as_str()), ("at-4", url.as_str()));
    assert_eq!(std::fs::metadata(&store).unwrap().permissions().mode() & 0o777, 0o600);
    let _ = std::fs::remove_dir_all(store.parent().unwrap().parent().unwrap());
}

// Without openWith a server that needs a person is not reached: the session
// ends with the command to run, and no token request is made. A token stored
// for another URL is not sent.
// covers: authz-client-sends-only-own-as-tokens
#[test]
fn a_server_that_needs_a_login_says_so() {
    let srv = protected(|_, ch| unauthorized(ch), |_| r#"{"error":"unexpected"}"#.into());
    let store = temp_store("login");
    // A token stored for another URL is not sent to this one.
    let other = ServerTokens { url: "http://127.0.0.1:1/mcp".into(), access_token: "foreign-token".into(), ..Default::default() };
    Store { path: store.clone() }.put_tokens("remote", &other).unwrap();
    let url = srv.url.clone();
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let oauth = OAuthSpec { store: store.clone(), ..OAuthSpec::default() };
        let (r, task) = spawn(&ex, 0, oauth_spec(&url, oauth), fast(), log.clone(), None);
        assert!(until(Duration::from_secs(5), || log.count("started") == 1).await, "{:?}", log.all());
        r.put(INIT.as_bytes().to_vec()).unwrap();
        assert!(until(Duration::from_secs(5), || log.count("exited") >= 1).await, "{:?}", log.all());
        assert!(log.all().iter().any(|e| e.starts_with("exited needs login: run `mcpx auth login remote`")), "{:?}", log.all());
        r.shutdown();
        task.await;
        let _ = std::fs::remove_dir_all(store.parent().unwrap().parent().unwrap());
    });
    let reqs = srv.requests();
    assert!(reqs.iter().all(|q| q.header("authorization").is_none()), "{reqs:?}");
    assert!(reqs.iter().all(|q| q.target != "/token" && q.target != "/register"), "{reqs:?}");
}

/// Connects to a server whose PRM names its authorization server
/// `{origin}{prm_as}` while the metadata says `{origin}{issuer}`, with the
/// client-credentials grant: the session's end, or None when it is up.
fn connect_through(prm_as: &'static str, issuer: &'static str, tag: &str) -> (Option<String>, Vec<Req>) {
    let srv = protected_by(
        prm_as,
        issuer,
        |req, ch| match (req.method.as_str(), req.rpc_method().as_str(), req.header("authorization")) {
            ("POST", "initialize", Some("Bearer at-1")) => Reply::Json(200, vec![], init_result("2025-06-18")),
            ("POST", "notifications/initialized", Some("Bearer at-1")) => Reply::Status(202),
            ("GET", _, Some("Bearer at-1")) => Reply::Status(405),
            ("DELETE", _, _) => Reply::Status(204),
            _ => unauthorized(ch),
        },
        |_| r#"{"access_token":"at-1","token_type":"Bearer","expires_in":3600}"#.into(),
    );
    let store = temp_store(tag);
    let oauth = OAuthSpec { client_id: Some("cid".into()), client_secret: Some("sec".into()), grant: GrantKind::ClientCredentials, store: store.clone(), ..OAuthSpec::default() };
    let url = srv.url.clone();
    let ended = Rc::new(std::cell::RefCell::new(None));
    let e2 = ended.clone();
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, oauth_spec(&url, oauth), fast(), log.clone(), None);
        assert!(until(Duration::from_secs(5), || log.count("started") == 1).await, "{:?}", log.all());
        r.put(INIT.as_bytes().to_vec()).unwrap();
        assert!(until(Duration::from_secs(5), || log.answer(0.into()).is_some() || log.count("exited") >= 1).await, "{:?}", log.all());
        *e2.borrow_mut() = log.all().into_iter().find(|e| e.starts_with("exited"));
        r.shutdown();
        task.await;
    });
    let _ = std::fs::remove_dir_all(store.parent().unwrap().parent().unwrap());
    let ended = ended.take();
    (ended, srv.requests())
}

// FastMCP writes `authorization_servers: ["http://127.0.0.1:9400/"]` for an
// authorization server whose issuer is `http://127.0.0.1:9400` (as Okta and
// Google write it), and the other way round: an empty path is `/`. Another
// path is another issuer, and its metadata is not used.
// covers: authz-client-validates-issuer-in-metadata
#[test]
fn an_issuer_with_an_empty_path_is_the_one_with_slash() {
    for (prm_as, issuer) in [("/", ""), ("", "/")] {
        let (ended, reqs) = connect_through(prm_as, issuer, "issuer-slash");
        assert_eq!(ended, None, "PRM {prm_as:?}, issuer {issuer:?}: {reqs:?}");
        assert!(reqs.iter().any(|q| q.target == "/token"), "{reqs:?}");
    }
    let (ended, reqs) = connect_through("/x", "/y", "issuer-path");
    let ended = ended.expect("the session ends");
    assert!(ended.contains("its issuer") && ended.contains("/y\" is not ") && ended.contains("/x\""), "{ended}");
    assert!(reqs.iter().all(|q| q.target != "/token"), "{reqs:?}");
}
