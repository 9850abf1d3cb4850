use super::*;

fn auth(token: Option<&str>, tokens: &[(&str, &str)]) -> Authenticator {
    let mut cfg = HttpConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.token = token.map(str::to_string);
    cfg.auth.tokens = tokens.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    Authenticator::new(&cfg)
}

fn who(a: &Authenticator, header: Option<&[u8]>) -> Result<Principal, Reject> {
    crate::process::reactor::block_on(a.authenticate(header.into_iter(), None, 0))
}

/// Two `Authorization` fields: one refusal, whatever their order and
/// values, before any credential is compared.
#[test]
fn one_authorization_field_at_most() {
    const TWO: Reject = Reject::BadRequest("Bad request: more than one Authorization header field");
    let (good, bad): (&[u8], &[u8]) = (b"Bearer s3cret", b"Bearer wrong");
    // (the fields, in order; what is read of them)
    type Row<'a> = (&'a [&'a [u8]], Result<Option<&'a [u8]>, Reject>);
    let table: [Row; 7] = [
        (&[], Ok(None)),
        (&[good], Ok(Some(good))),
        (&[bad], Ok(Some(bad))),
        (&[good, bad], Err(TWO)),
        (&[bad, good], Err(TWO)),
        (&[good, good], Err(TWO)),
        (&[b"", good, bad], Err(TWO)),
    ];
    for (fields, want) in table {
        assert_eq!(one_authorization(fields.iter().copied()), want, "{fields:?}");
    }
    // Through authenticate: the same refusal with a token configured or not.
    for a in [auth(Some("s3cret"), &[]), auth(None, &[])] {
        for fields in [[good, bad], [bad, good]] {
            assert_eq!(crate::process::reactor::block_on(a.authenticate(fields.into_iter(), None, 0)), Err(TWO));
        }
    }
}

// covers: streamable-http-server-authenticate
#[test]
fn bearer_tokens() {
    let a = auth(Some("s3cret"), &[]);
    assert!(who(&a, Some(b"Bearer s3cret")).is_ok());
    assert!(who(&a, Some(b"bearer  s3cret ")).is_ok());
    for bad in [&b"Bearer s3cre"[..], b"Bearer s3cretX", b"Basic s3cret", b"Bearers3cret", b"", b"Bearer "] {
        assert!(matches!(who(&a, Some(bad)), Err(Reject::Unauthorized { .. })), "{bad:?}");
    }
    assert_eq!(who(&a, None), Err(Reject::Unauthorized { invalid: false, why: "send Authorization: Bearer <token>".into() }));
    assert!(ct_eq(b"", b""));
    assert!(!ct_eq(b"a", b""));
    assert!(!ct_eq(b"", b"\xff"));
}

#[test]
fn each_static_token_names_its_principal() {
    let a = auth(Some("single"), &[("alice", "tok-a"), ("bob", "tok-b")]);
    let alice = who(&a, Some(b"Bearer tok-a")).unwrap();
    let bob = who(&a, Some(b"Bearer tok-b")).unwrap();
    let single = who(&a, Some(b"Bearer single")).unwrap();
    assert_eq!(alice.bytes(), b"token:alice");
    assert_eq!(bob.bytes(), b"token:bob");
    assert_eq!(single.bytes(), b"bearer");
    // None of them is the stdio client's principal.
    for p in [&alice, &bob, &single] {
        assert_ne!(p.bytes(), b"mcpx-local");
    }
    assert!(who(&a, Some(b"Bearer tok-c")).is_err());
}

/// An `Authorization` value an open listener does not check is no
/// identity: every client of it is the one principal `anonymous`, so that
/// rotating values neither buys a new share of any cap nor a way out of
/// a rate limit.
#[test]
fn an_open_endpoint_gives_every_client_the_one_anonymous_principal() {
    let a = auth(None, &[]);
    let none = who(&a, None).unwrap();
    for header in [&b"Bearer x"[..], b"Bearer y", b"Basic eDp5", b""] {
        assert_eq!(who(&a, Some(header)).unwrap(), none, "{:?}", String::from_utf8_lossy(header));
    }
    assert_eq!(none.bytes(), crate::hub::ANONYMOUS_PRINCIPAL);
    assert_ne!(none.bytes(), b"mcpx-local");
}

#[test]
fn a_named_token_is_not_also_the_bearer_token() {
    let s = AuthSettings { tokens: vec![("a".into(), "x".into()), ("b".into(), "y".into())], oauth: None };
    assert!(s.check(Some("z")).is_ok());
    assert!(s.check(Some("y")).unwrap_err().contains("'b' has the same token as --token"));
}

/// The OAuth settings of the unit tests (also `oauth::tests`).
pub(super) fn oauth() -> OAuthSettings {
    OAuthSettings {
        issuer: "https://as.example.com".into(),
        audience: "https://hub.example.com/mcp".into(),
        scopes: vec!["mcp:tools".into(), "mcp:read".into()],
        ..OAuthSettings::default()
    }
}

// covers: authz-prm-lists-authorization-servers
#[test]
fn protected_resource_metadata_where_and_what() {
    let o = oauth();
    assert!(prm::serves(&o, "/.well-known/oauth-protected-resource"));
    assert!(prm::serves(&o, "/.well-known/oauth-protected-resource/mcp"));
    assert!(!prm::serves(&o, "/.well-known/oauth-protected-resource/other"));
    assert_eq!(prm::metadata_url(&o), "https://hub.example.com/.well-known/oauth-protected-resource/mcp");
    let doc = prm::document(&o);
    assert_eq!(doc["resource"], "https://hub.example.com/mcp");
    assert_eq!(doc["authorization_servers"], serde_json::json!(["https://as.example.com"]));
    assert_eq!(doc["scopes_supported"], serde_json::json!(["mcp:tools", "mcp:read"]));
}

// covers: authz-401-www-authenticate, authz-insufficient-scope-403, authz-all-scopes-single-challenge
#[test]
fn challenges() {
    let o = oauth();
    let m = "resource_metadata=\"https://hub.example.com/.well-known/oauth-protected-resource/mcp\"";
    assert_eq!(prm::challenge(Some(&o), None, None), format!("Bearer {m}, scope=\"mcp:tools mcp:read\""));
    assert_eq!(
        prm::challenge(Some(&o), Some(("insufficient_scope", "lacks \"b\"")), Some(&o.scopes)),
        format!("Bearer {m}, scope=\"mcp:tools mcp:read\", error=\"insufficient_scope\", error_description=\"lacks 'b'\"")
    );
    assert_eq!(prm::challenge(None, Some(("invalid_token", "no")), None), "Bearer realm=\"mcpx\", error=\"invalid_token\", error_description=\"no\"");
}

#[cfg(feature = "oauth")]
#[test]
fn oauth_settings_are_checked() {
    let ok = |o: OAuthSettings| AuthSettings { tokens: Vec::new(), oauth: Some(o) }.check(None);
    assert!(ok(oauth()).is_ok());
    let mut o = oauth();
    o.audience = "hub.example.com/mcp".into();
    assert!(ok(o).unwrap_err().contains("audience"));
    let mut o = oauth();
    o.audience = "https://hub.example.com/mcp?x=1".into();
    assert!(ok(o).unwrap_err().contains("query"));
    let mut o = oauth();
    o.jwks_url = Some("http://keys.example.com/jwks".into());
    assert!(ok(o).unwrap_err().contains("https"));
    let mut o = oauth();
    o.introspection_url = Some("http://127.0.0.1:9/introspect".into());
    assert!(ok(o).is_ok(), "http on loopback is fine");
    let mut o = oauth();
    o.client_secret = Some("s".into());
    assert!(ok(o).unwrap_err().contains("clientId"));
}

fn config(src: &str) -> Result<crate::config::Config, String> {
    let env = |name: &str| (name == "ALICE_TOKEN").then(|| "tok-a".to_string());
    crate::config::parse(src, "cfg.json", std::path::Path::new("/etc/mcpx"), &env).map_err(|e| e.to_string())
}

#[test]
fn the_auth_section_of_the_config() {
    let c = config(r#"{"mcpServers": {}, "auth": {"bearer": "b", "tokens": {"alice": "${ALICE_TOKEN}", "bob": "tok-b"},
        "oauth": {"issuer": "https://as.example.com", "audience": "https://hub.example.com/mcp", "scopes": ["a"],
                  "jwksUrl": "https://as.example.com/jwks", "introspectionUrl": "https://as.example.com/i",
                  "clientId": "hub", "clientSecret": "s"}}}"#)
    .unwrap();
    let a = &c.http.auth;
    assert_eq!(c.http.bearer.as_deref(), Some("b"));
    assert_eq!(a.tokens, [("alice".to_string(), "tok-a".to_string()), ("bob".to_string(), "tok-b".to_string())]);
    let o = a.oauth.as_ref().unwrap();
    assert_eq!((o.issuer.as_str(), o.audience.as_str(), o.scopes.as_slice()), ("https://as.example.com", "https://hub.example.com/mcp", &["a".to_string()][..]));
    assert_eq!((o.jwks_url.as_deref(), o.introspection_url.as_deref()), (Some("https://as.example.com/jwks"), Some("https://as.example.com/i")));
    assert_eq!((o.client_id.as_deref(), o.client_secret.as_deref()), (Some("hub"), Some("s")));
    let e = config(r#"{"mcpServers": {}, "auth": {"tokens": {"alice": "x", "bob": "x", "carol": ""}}}"#).unwrap_err();
    assert!(e.contains("auth.tokens.bob: the same token as another principal") && e.contains("auth.tokens.carol: the token is empty"), "{e}");
    let e = config(r#"{"mcpServers": {}, "auth": {"oauth": {"issuer": "https://as.example.com"}}}"#).unwrap_err();
    assert!(e.contains("\"audience\" is required"), "{e}");
    let e = config(r#"{"mcpServers": {}, "auth": {"tokens": ["x"]}}"#).unwrap_err();
    assert!(e.contains("expected an object like"), "{e}");
}
