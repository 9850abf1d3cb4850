use super::*;

fn auth(token: Option<&str>, tokens: &[(&str, &str)]) -> Authenticator {
    let mut cfg = HttpConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.token = token.map(str::to_string);
    cfg.auth.tokens = tokens.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    Authenticator::new(&cfg)
}

fn who(a: &Authenticator, header: Option<&[u8]>) -> Result<Principal, Reject> {
    smol::block_on(a.authenticate(header, 0))
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

#[test]
fn an_open_endpoint_gives_anonymous_principals() {
    let a = auth(None, &[]);
    let none = who(&a, None).unwrap();
    let x = who(&a, Some(b"Bearer x")).unwrap();
    let y = who(&a, Some(b"Bearer y")).unwrap();
    assert_ne!(none, x);
    assert_ne!(x, y);
    assert_eq!(x, who(&a, Some(b"Bearer x")).unwrap());
    assert_ne!(none.bytes(), b"mcpx-local");
}

#[test]
fn settings_refuse_empty_and_shared_tokens() {
    let s = |tokens: &[(&str, &str)]| AuthSettings { tokens: tokens.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect(), oauth: None };
    assert!(s(&[("a", "x"), ("b", "y")]).check().is_ok());
    assert!(s(&[("a", "")]).check().unwrap_err().contains("'a' is empty"));
    assert!(s(&[("a", "x"), ("b", "x")]).check().unwrap_err().contains("same token"));
}
