use serde_json::json;

use super::super::tests::oauth as settings;
use super::*;

const NOW: u64 = 1_800_000_000;

fn good() -> Value {
    json!({ "iss": "https://as.example.com", "aud": "https://hub.example.com/mcp", "sub": "alice",
            "exp": NOW + 60, "scope": "mcp:tools mcp:read" })
}

fn with(k: &str, v: Value) -> Value {
    let mut c = good();
    c[k] = v;
    c
}

fn why(r: Result<Principal, Reject>) -> String {
    match r {
        Err(Reject::Unauthorized { invalid: true, why }) => why,
        other => panic!("expected invalid_token, got {other:?}"),
    }
}

// covers: authz-server-validates-audience, authz-server-validates-token
#[test]
fn claims_are_checked_with_mcpx_s_clock() {
    let s = settings();
    let p = check_claims(&s, &good(), NOW, true).unwrap();
    assert_eq!(p.bytes(), b"oauth:https://as.example.com alice");
    // aud: a string or a list holding the audience; nothing else.
    assert!(check_claims(&s, &with("aud", json!(["x", "https://hub.example.com/mcp"])), NOW, true).is_ok());
    assert!(why(check_claims(&s, &with("aud", json!("https://hub.example.com/mcp/")), NOW, true)).contains("audience"));
    assert!(why(check_claims(&s, &with("aud", json!(null)), NOW, true)).contains("audience"));
    assert!(why(check_claims(&s, &with("iss", json!("https://evil.example")), NOW, true)).contains("issued by"));
    // Expiry, with the leeway; a JWT needs exp, an introspected token not.
    assert!(check_claims(&s, &with("exp", json!(NOW - LEEWAY_S + 1)), NOW, true).is_ok());
    assert!(why(check_claims(&s, &with("exp", json!(NOW - LEEWAY_S)), NOW, true)).contains("expired"));
    let mut no_exp = good();
    no_exp.as_object_mut().unwrap().remove("exp");
    assert!(why(check_claims(&s, &no_exp, NOW, true)).contains("no expiry"));
    assert!(check_claims(&s, &no_exp, NOW, false).is_ok());
    assert!(why(check_claims(&s, &with("nbf", json!(NOW + LEEWAY_S + 1)), NOW, true)).contains("not valid yet"));
    // The client stands in for a missing subject.
    let mut client = with("client_id", json!("svc"));
    client.as_object_mut().unwrap().remove("sub");
    assert_eq!(check_claims(&s, &client, NOW, true).unwrap().bytes(), b"oauth:https://as.example.com svc");
    client.as_object_mut().unwrap().remove("client_id");
    assert!(why(check_claims(&s, &client, NOW, true)).contains("neither"));
}

/// NumericDates (RFC 7519 §2): numbers, fractional ones too, for both
/// kinds of token; anything else refuses the token instead of being
/// ignored. `jwt`: the claims of a JWT (else an introspection answer).
// covers: authz-server-validates-token
#[test]
fn numeric_dates_are_numbers_possibly_fractional() {
    let s = settings();
    let (now, lee) = (NOW as f64, LEEWAY_S as f64);
    // (claim, value, accepted, else the refusal names)
    let table: [(&str, Value, Result<(), &str>); 16] = [
        ("exp", json!(now + 60.5), Ok(())),
        ("exp", json!(now - lee + 0.5), Ok(())),
        ("exp", json!(now - lee - 0.5), Err("expired")),
        ("exp", json!(now - 3600.25), Err("expired")),
        ("exp", json!(1e300), Ok(())),
        ("exp", json!((NOW + 60).to_string()), Err("exp is a string")),
        ("exp", json!("0"), Err("exp is a string")),
        ("exp", json!(null), Err("exp is null")),
        ("exp", json!(true), Err("exp is a boolean")),
        ("exp", json!([NOW + 60]), Err("exp is a list")),
        ("nbf", json!(now + lee + 1.5), Err("not valid yet")),
        ("nbf", json!(now + lee - 0.5), Ok(())),
        ("nbf", json!((NOW + 3600).to_string()), Err("nbf is a string")),
        ("nbf", json!({}), Err("nbf is an object")),
        ("iat", json!(now - 0.25), Ok(())),
        ("iat", json!("yesterday"), Err("iat is a string")),
    ];
    for (claim, value, want) in table {
        for jwt in [true, false] {
            let got = check_claims(&s, &with(claim, value.clone()), NOW, jwt);
            match want {
                Ok(()) => assert!(got.is_ok(), "{claim}={value} (jwt {jwt}): {got:?}"),
                Err(w) => assert!(why(got).contains(w), "{claim}={value} (jwt {jwt}): should name {w:?}"),
            }
        }
    }
}

/// An empty subject is no subject: the client stands in, as for a missing one.
#[test]
fn an_empty_subject_falls_back_to_the_client() {
    let s = settings();
    let mut c = with("sub", json!(""));
    c["client_id"] = json!("svc");
    assert_eq!(check_claims(&s, &c, NOW, true).unwrap().bytes(), b"oauth:https://as.example.com svc");
    c["client_id"] = json!("");
    assert!(why(check_claims(&s, &c, NOW, false)).contains("neither"));
}

// covers: authz-insufficient-scope-403, authz-server-scope-hierarchy
#[test]
fn scopes_every_one_or_a_broader_one() {
    let s = settings();
    assert!(check_claims(&s, &with("scp", json!(["mcp:tools", "mcp:read"])), NOW, true).is_ok());
    assert!(check_claims(&s, &with("scope", json!("mcp")), NOW, true).is_ok());
    match check_claims(&s, &with("scope", json!("mcp:tools mcp:readx")), NOW, true) {
        Err(Reject::InsufficientScope { need, why }) => {
            assert_eq!(need, s.scopes, "the challenge names every scope the request needs");
            assert!(why.ends_with("mcp:read"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert!(covers("files", "files:read:all"));
    assert!(!covers("files", "filesystem"));
    assert!(!covers("files:read", "files"));
}

#[test]
fn where_the_issuer_metadata_is_looked_for() {
    assert_eq!(
        metadata_urls("https://as.example.com/").unwrap(),
        ["https://as.example.com/.well-known/oauth-authorization-server", "https://as.example.com/.well-known/openid-configuration"]
    );
    assert_eq!(
        metadata_urls("https://as.example.com/tenant1").unwrap(),
        [
            "https://as.example.com/.well-known/oauth-authorization-server/tenant1",
            "https://as.example.com/.well-known/openid-configuration/tenant1",
            "https://as.example.com/tenant1/.well-known/openid-configuration",
        ]
    );
    assert_eq!(encode_component("a b+c/é"), "a%20b%2Bc%2F%C3%A9");
}

/// An ES256 key pair: (PKCS#8 DER, public JWK with `kid`).
fn key(kid: &str) -> (Vec<u8>, Value) {
    use base64::Engine as _;
    let kp = rcgen::KeyPair::generate().unwrap();
    let point = kp.public_key_raw();
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let jwk = json!({ "kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "x": b64(&point[1..33]), "y": b64(&point[33..65]) });
    (kp.serialize_der(), jwk)
}

fn sign(der: &[u8], kid: Option<&str>, alg: Algorithm, claims: &Value) -> String {
    let mut h = jsonwebtoken::Header::new(alg);
    h.kid = kid.map(str::to_string);
    jsonwebtoken::encode(&h, claims, &jsonwebtoken::EncodingKey::from_ec_der(der)).unwrap()
}

fn verifier(jwks: &[Value]) -> Verifier {
    let v = Verifier::new(OAuthSettings { jwks_url: Some("http://127.0.0.1:9/jwks".into()), ..settings() });
    {
        let mut k = v.keys.borrow_mut();
        k.set = jwks.iter().map(|j| serde_json::from_value(j.clone()).unwrap()).collect();
        // As if just fetched: no refetch is due.
        k.fetched_s = Some(NOW);
    }
    v
}

// covers: authz-accept-only-own-tokens
#[test]
fn jwts_verify_with_a_published_key_only() {
    let (der, jwk) = key("k1");
    let (other, _) = key("k2");
    let v = verifier(&[jwk]);
    let verify = |t: String| crate::process::reactor::block_on(v.verify(t.as_bytes(), None, NOW)).map(|(who, _)| who);
    assert_eq!(verify(sign(&der, Some("k1"), Algorithm::ES256, &good())).unwrap().bytes(), b"oauth:https://as.example.com alice");
    // With its expiry (the subject token of a token exchange is held until then).
    assert_eq!(crate::process::reactor::block_on(v.verify(sign(&der, Some("k1"), Algorithm::ES256, &good()).as_bytes(), None, NOW)).unwrap().1, Some(NOW + 60));
    // Without kid, the only key.
    assert!(verify(sign(&der, None, Algorithm::ES256, &good())).is_ok());
    // Signed by another key under a published kid, or an unpublished kid.
    assert!(why(verify(sign(&other, Some("k1"), Algorithm::ES256, &good()))).contains("signature"));
    assert!(why(verify(sign(&other, Some("k2"), Algorithm::ES256, &good()))).contains("does not publish"));
    // A symmetric algorithm is never accepted.
    let hs = jsonwebtoken::encode(&jsonwebtoken::Header::new(Algorithm::HS256), &good(), &jsonwebtoken::EncodingKey::from_secret(b"k")).unwrap();
    assert!(why(verify(hs)).contains("does not accept"));
    // A token of the right key but for another audience.
    assert!(why(verify(sign(&der, Some("k1"), Algorithm::ES256, &with("aud", json!("https://x.example/mcp"))))).contains("audience"));
    // Not a JWT, and no introspection configured.
    assert!(why(verify("opaque".into())).contains("introspectionUrl"));
}

/// A JWT header with `crit` is refused (RFC 7515 §4.1.11: mcpx understands
/// no extension), even signed with a published key.
#[test]
fn a_critical_header_extension_is_refused() {
    use base64::Engine as _;
    let (der, jwk) = key("k1");
    let v = verifier(&[jwk]);
    let verify = |t: String| crate::process::reactor::block_on(v.verify(t.as_bytes(), None, NOW)).map(|(who, _)| who);
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    for crit in [json!(["exp"]), json!(["http://example.com/x"]), json!([]), json!("b64")] {
        let header = json!({"alg": "ES256", "kid": "k1", "typ": "JWT", "crit": crit, "http://example.com/x": true, "b64": true});
        let input = format!("{}.{}", b64(header.to_string().as_bytes()), b64(good().to_string().as_bytes()));
        let sig = jsonwebtoken::crypto::sign(input.as_bytes(), &jsonwebtoken::EncodingKey::from_ec_der(&der), Algorithm::ES256).unwrap();
        assert!(why(verify(format!("{input}.{sig}"))).contains("crit"), "crit {crit}");
        // The same header without crit verifies: only crit is refused.
        let plain = json!({"alg": "ES256", "kid": "k1", "typ": "JWT"});
        let input = format!("{}.{}", b64(plain.to_string().as_bytes()), b64(good().to_string().as_bytes()));
        let sig = jsonwebtoken::crypto::sign(input.as_bytes(), &jsonwebtoken::EncodingKey::from_ec_der(&der), Algorithm::ES256).unwrap();
        assert!(verify(format!("{input}.{sig}")).is_ok());
    }
    // A fractional exp in a signed JWT is a valid NumericDate.
    assert!(verify(sign(&der, Some("k1"), Algorithm::ES256, &with("exp", json!(NOW as f64 + 60.5)))).is_ok());
    assert!(why(verify(sign(&der, Some("k1"), Algorithm::ES256, &with("nbf", json!(NOW as f64 + 3600.5))))).contains("not valid yet"));
    assert!(why(verify(sign(&der, Some("k1"), Algorithm::ES256, &with("nbf", json!("0"))))).contains("nbf is a string"));
}

#[test]
fn encryption_keys_never_verify() {
    let (der, mut jwk) = key("k1");
    jwk["use"] = json!("enc");
    let v = verifier(&[jwk]);
    let r = crate::process::reactor::block_on(v.verify(sign(&der, Some("k1"), Algorithm::ES256, &good()).as_bytes(), None, NOW)).map(|(who, _)| who);
    assert!(why(r).contains("does not publish"));
}

#[test]
fn unreachable_keys_are_a_503_not_a_401() {
    let (der, _) = key("k1");
    let v = verifier(&[]);
    v.keys.borrow_mut().error = Some("connection refused".into());
    match crate::process::reactor::block_on(v.verify(sign(&der, Some("k1"), Algorithm::ES256, &good()).as_bytes(), None, NOW)) {
        Err(Reject::Unavailable(why)) => assert!(why.contains("connection refused"), "{why}"),
        other => panic!("{other:?}"),
    }
}
