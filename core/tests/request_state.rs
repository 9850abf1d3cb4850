//! Signed single-use requestState tokens.

use mcpx_core::request_state::*;
use proptest::prelude::*;

const NOW: u64 = 1_700_000_000_000;
const TTL: u64 = 60_000;

fn keys() -> Keys {
    Keys::new(Key::new(2, [0x22; 32]), Some(Key::new(1, [0x11; 32]))).unwrap()
}

fn binding() -> Binding<'static> {
    Binding { principal: b"user:alice", method: "tools/call", params: br#"{"name":"deploy","arguments":{"env":"prod"}}"# }
}

fn seal_with(keys: &Keys, b: &Binding<'_>, inner: &[u8], nonce: u8) -> String {
    let mut out = vec![0u8; sealed_len(b.method.len(), inner.len())];
    keys.seal(b, inner, &[nonce; NONCE_LEN], NOW, TTL, &mut out).unwrap().to_owned()
}

fn open_with<const N: usize>(
    keys: &Keys,
    token: &str,
    b: &Binding<'_>,
    now: u64,
    replay: &mut ReplaySet<N>,
) -> Result<Vec<u8>, OpenError> {
    let mut scratch = vec![0u8; token.len()];
    keys.open(token, b, now, replay, &mut scratch).map(|o| o.inner.to_vec())
}

fn open_fresh(token: &str, b: &Binding<'_>, now: u64) -> Result<Vec<u8>, OpenError> {
    open_with(&keys(), token, b, now, &mut ReplaySet::<4>::new())
}

// row: mrtr-requeststate-attacker-controlled
#[test]
fn seal_then_open() {
    let token = seal_with(&keys(), &binding(), b"upstream-state", 7);
    assert!(token.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'), "base64url, no padding");
    assert_eq!(token.len(), sealed_len("tools/call".len(), 14));
    let mut replay = ReplaySet::<4>::new();
    let mut scratch = [0u8; 512];
    let opened = keys().open(&token, &binding(), NOW + 1, &mut replay, &mut scratch).unwrap();
    assert_eq!(opened.inner, b"upstream-state");
    assert_eq!(opened.key_id, 2);
    assert_eq!(opened.expires_at_ms, NOW + TTL);
    assert_eq!(opened.nonce, [7; NONCE_LEN]);
    assert_eq!(replay.len(), 1);
    // Empty inner state and empty params are fine too.
    let b = Binding { principal: b"", method: "prompts/get", params: b"" };
    assert_eq!(open_fresh(&seal_with(&keys(), &b, b"", 1), &b, NOW), Ok(vec![]));
}

/// The layout and MAC pinned against an independent implementation
/// (Python's `hmac`/`hashlib` over the documented layout).
#[test]
fn known_answer() {
    let token = seal_with(&keys(), &binding(), b"upstream-state", 7);
    assert_eq!(
        token,
        "AQIAAAGLz-ZSYAcHBwcHBwcHBwcHBwcHBwfavR2401qxMQYnT2Hxv5d4Eszk9HexUBTPOPt5bFCkxMbeQ6vpg3Scv_bWpxSwHRfpkI_xlqFFt_nM8LH3At1xCnRvb2xzL2NhbGwADnVwc3RyZWFtLXN0YXRlFVyRB2HaTDBonnTNMQKlvZFzkdzhVcTUh8OmSYqU6xc"
    );
}

#[test]
fn seal_limits_are_typed() {
    let k = keys();
    let long_method = "m".repeat(MAX_METHOD_LEN + 1);
    let b = Binding { method: &long_method, ..binding() };
    let mut out = vec![0u8; 1 << 18];
    assert_eq!(k.seal(&b, b"", &[0; NONCE_LEN], NOW, TTL, &mut out), Err(SealError::MethodTooLong));
    let big = vec![0u8; MAX_INNER_LEN + 1];
    assert_eq!(k.seal(&binding(), &big, &[0; NONCE_LEN], NOW, TTL, &mut out), Err(SealError::InnerTooLong));
    let needed = sealed_len(10, 3);
    assert_eq!(k.seal(&binding(), b"abc", &[0; NONCE_LEN], NOW, TTL, &mut [0u8; 8]), Err(SealError::Overflow { needed }));
    // The largest token still seals and opens.
    let max = vec![0xAB; MAX_INNER_LEN];
    let token = k.seal(&binding(), &max, &[0; NONCE_LEN], NOW, TTL, &mut out).unwrap().to_owned();
    assert_eq!(open_fresh(&token, &binding(), NOW), Ok(max));
}

// row: mrtr-requeststate-replay-fields
#[test]
fn binding_mismatches_are_rejected() {
    let token = seal_with(&keys(), &binding(), b"s", 1);
    let other_principal = Binding { principal: b"user:mallory", ..binding() };
    let other_method = Binding { method: "prompts/get", ..binding() };
    let other_params = Binding { params: br#"{"name":"deploy","arguments":{"env":"dev"}}"#, ..binding() };
    assert_eq!(open_fresh(&token, &other_principal, NOW), Err(OpenError::PrincipalMismatch));
    assert_eq!(open_fresh(&token, &other_method, NOW), Err(OpenError::MethodMismatch));
    assert_eq!(open_fresh(&token, &other_params, NOW), Err(OpenError::ParamsMismatch));
    assert_eq!(open_fresh(&token, &binding(), NOW), Ok(b"s".to_vec()));
}

// Expiry.
// row: mrtr-requeststate-replay-fields
#[test]
fn expiry() {
    let token = seal_with(&keys(), &binding(), b"s", 1);
    assert!(open_fresh(&token, &binding(), NOW + TTL - 1).is_ok());
    assert_eq!(open_fresh(&token, &binding(), NOW + TTL), Err(OpenError::Expired));
    assert_eq!(open_fresh(&token, &binding(), u64::MAX), Err(OpenError::Expired));
    // A TTL past the end of time saturates instead of wrapping.
    let mut out = [0u8; 256];
    let t = keys().seal(&binding(), b"", &[0; NONCE_LEN], u64::MAX - 1, u64::MAX, &mut out).unwrap().to_owned();
    assert!(open_fresh(&t, &binding(), u64::MAX - 1).is_ok());
}

// row: mrtr-single-use-enforced
#[test]
fn a_token_opens_once() {
    let k = keys();
    let token = seal_with(&k, &binding(), b"s", 1);
    let mut replay = ReplaySet::<4>::new();
    assert!(open_with(&k, &token, &binding(), NOW, &mut replay).is_ok());
    assert_eq!(open_with(&k, &token, &binding(), NOW + 1, &mut replay), Err(OpenError::Replayed));
    // A rejected attempt does not burn the token.
    let fresh = seal_with(&k, &binding(), b"s", 2);
    let wrong = Binding { principal: b"user:mallory", ..binding() };
    assert_eq!(open_with(&k, &fresh, &wrong, NOW, &mut replay), Err(OpenError::PrincipalMismatch));
    assert!(open_with(&k, &fresh, &binding(), NOW, &mut replay).is_ok());
}

// Verification and the single-use claim apart (replicas claim in a shared
// store): verify checks everything but single use and records nothing; the
// claim is what makes a token used, once.
// covers: mrtr-single-use-enforced, mrtr-requeststate-attacker-controlled
#[test]
fn verify_does_not_claim_and_a_claim_counts_once() {
    let k = keys();
    let token = seal_with(&k, &binding(), b"s", 3);
    let mut scratch = vec![0u8; token.len()];
    let mut replay = ReplaySet::<4>::new();
    for _ in 0..2 {
        let v = k.verify(&token, &binding(), NOW, &mut scratch).unwrap();
        assert_eq!((v.inner, v.nonce), (&b"s"[..], [3; NONCE_LEN]));
    }
    assert!(replay.is_empty(), "verify records nothing");
    let v = k.verify(&token, &binding(), NOW, &mut scratch).unwrap();
    assert_eq!(replay.claim(&v, binding().principal, NOW), Ok(()));
    assert_eq!(replay.claim(&v, binding().principal, NOW + 1), Err(OpenError::Replayed));
    // A claimed token no longer opens, and verify still rejects what open rejects.
    assert_eq!(open_with(&k, &token, &binding(), NOW + 1, &mut replay), Err(OpenError::Replayed));
    let wrong = Binding { principal: b"user:mallory", ..binding() };
    assert_eq!(k.verify(&token, &wrong, NOW, &mut scratch).err(), Some(OpenError::PrincipalMismatch));
    let mut forged = token.clone().into_bytes();
    forged[20] = if forged[20] == b'A' { b'B' } else { b'A' };
    assert_eq!(k.verify(std::str::from_utf8(&forged).unwrap(), &binding(), NOW, &mut scratch).err(), Some(OpenError::BadSignature));
}

// The bounded replay set.
// row: mrtr-single-use-enforced
#[test]
fn replay_set_at_capacity_fails_closed_then_evicts_expired() {
    let k = keys();
    let mut replay = ReplaySet::<2>::new();
    assert!(replay.is_empty());
    let t: Vec<String> = (1..=4).map(|n| seal_with(&k, &binding(), b"", n)).collect();
    assert!(open_with(&k, &t[0], &binding(), NOW, &mut replay).is_ok());
    assert!(open_with(&k, &t[1], &binding(), NOW, &mut replay).is_ok());
    assert_eq!(open_with(&k, &t[2], &binding(), NOW + 1, &mut replay), Err(OpenError::ReplaySetFull));
    assert_eq!(replay.len(), 2);
    // Tokens minted later expire later: once the first two have expired,
    // their entries make room and the refused token is still good.
    let later = |n| {
        let mut out = [0u8; 256];
        k.seal(&binding(), b"", &[n; NONCE_LEN], NOW + TTL, TTL, &mut out).unwrap().to_owned()
    };
    let (t5, t6) = (later(5), later(6));
    assert!(open_with(&k, &t5, &binding(), NOW + TTL, &mut replay).is_ok());
    assert_eq!(replay.len(), 1);
    assert!(open_with(&k, &t6, &binding(), NOW + TTL, &mut replay).is_ok());
    assert_eq!(open_with(&k, &t5, &binding(), NOW + TTL + 1, &mut replay), Err(OpenError::Replayed));
    assert_eq!(open_with(&k, &t[3], &binding(), NOW + TTL, &mut replay), Err(OpenError::Expired));
}

// Issue 11 item 3: one principal fills its share, the others still redeem;
// a refused token stays good once the principal's entries expire.
// row: mrtr-single-use-enforced
#[test]
fn one_principal_cannot_fill_the_replay_set_for_the_others() {
    let k = keys();
    let mut replay = ReplaySet::<6>::with_share(2);
    let who = |p: &'static [u8]| Binding { principal: p, ..binding() };
    let (a, b) = (who(b"user:alice"), who(b"user:bob"));
    let mut nonce = 0u8;
    let mut mint = |b: &Binding<'_>| {
        nonce += 1;
        seal_with(&k, b, b"", nonce)
    };
    assert!(open_with(&k, &mint(&a), &a, NOW, &mut replay).is_ok());
    assert!(open_with(&k, &mint(&a), &a, NOW, &mut replay).is_ok());
    let refused = mint(&a);
    assert_eq!(open_with(&k, &refused, &a, NOW, &mut replay), Err(OpenError::ReplayShareFull { share: 2, frees_at_ms: NOW + TTL }));
    assert!(OpenError::ReplayShareFull { share: 2, frees_at_ms: 0 }.to_string().contains("its share"));
    assert!(open_with(&k, &mint(&b), &b, NOW, &mut replay).is_ok());
    assert!(open_with(&k, &mint(&b), &b, NOW, &mut replay).is_ok());
    assert_eq!(open_with(&k, &mint(&b), &b, NOW, &mut replay), Err(OpenError::ReplayShareFull { share: 2, frees_at_ms: NOW + TTL }));
    // The global cap still holds: three principals at their share fill it.
    let c = who(b"user:carol");
    assert!(open_with(&k, &mint(&c), &c, NOW, &mut replay).is_ok());
    assert!(open_with(&k, &mint(&c), &c, NOW, &mut replay).is_ok());
    let d = who(b"user:dave");
    assert_eq!(open_with(&k, &mint(&d), &d, NOW, &mut replay), Err(OpenError::ReplaySetFull));
    assert_eq!(replay.len(), 6);
    // Alice's refused token was not burned: it opens (once) after her
    // entries expire, bounded by its own expiry.
    let later = NOW + TTL - 1;
    assert_eq!(open_with(&k, &refused, &a, later, &mut replay), Err(OpenError::ReplayShareFull { share: 2, frees_at_ms: NOW + TTL }));
    let mut out = [0u8; 256];
    let fresh_a = k.seal(&a, b"", &[200; NONCE_LEN], NOW + TTL, TTL, &mut out).unwrap().to_owned();
    assert!(open_with(&k, &fresh_a, &a, NOW + TTL, &mut replay).is_ok());
    assert_eq!(open_with(&k, &fresh_a, &a, NOW + TTL, &mut replay), Err(OpenError::Replayed));
}

#[test]
fn rotation() {
    let old = Keys::new(Key::new(1, [0x11; 32]), None).unwrap();
    let by_old = seal_with(&old, &binding(), b"s", 1);
    let mut k = old.clone();
    let next = Key::new(2, [0x22; 32]);
    assert_eq!(next.id(), 2);
    k.rotate(next).unwrap();
    let by_new = seal_with(&k, &binding(), b"s", 2);
    // The previous key still opens its tokens; new tokens use the new key.
    let mut replay = ReplaySet::<8>::new();
    let mut scratch = [0u8; 256];
    assert_eq!(k.open(&by_old, &binding(), NOW, &mut replay, &mut scratch).map(|o| o.key_id), Ok(1));
    assert_eq!(k.open(&by_new, &binding(), NOW, &mut replay, &mut scratch).map(|o| o.key_id), Ok(2));
    // The old-only keys do not know the new key.
    assert_eq!(open_with(&old, &by_new, &binding(), NOW, &mut ReplaySet::<1>::new()), Err(OpenError::UnknownKey));
    // A second rotation retires key 1.
    k.rotate(Key::new(3, [0x33; 32])).unwrap();
    assert_eq!(open_with(&k, &by_old, &binding(), NOW, &mut ReplaySet::<1>::new()), Err(OpenError::UnknownKey));
    assert!(open_with(&k, &seal_with(&keys(), &binding(), b"", 9), &binding(), NOW, &mut ReplaySet::<1>::new()).is_ok());
    // Same id, different secret: the MAC fails.
    let impostor = Keys::new(Key::new(2, [0x99; 32]), None).unwrap();
    assert_eq!(open_fresh(&seal_with(&impostor, &binding(), b"", 1), &binding(), NOW), Err(OpenError::BadSignature));
    // Ids must differ.
    assert_eq!(Keys::new(Key::new(4, [0; 32]), Some(Key::new(4, [1; 32]))).unwrap_err(), DuplicateKeyId(4));
    assert_eq!(k.rotate(Key::new(3, [0x44; 32])), Err(DuplicateKeyId(3)));
}

#[test]
fn malformed_and_foreign_tokens() {
    let token = seal_with(&keys(), &binding(), b"s", 1);
    for bad in ["", "A", "AAAA", "not a token!", "eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0", &format!("{token}="), &token[..token.len() - 1]] {
        assert!(
            matches!(open_fresh(bad, &binding(), NOW), Err(OpenError::Malformed | OpenError::UnsupportedVersion | OpenError::UnknownKey)),
            "{bad:?}"
        );
    }
    let mut scratch = [0u8; 8];
    let got = keys().open(&token, &binding(), NOW, &mut ReplaySet::<1>::new(), &mut scratch);
    assert!(matches!(got, Err(OpenError::Overflow { needed }) if needed > 8));
    assert_eq!(
        OpenError::ReplaySetFull.to_string(),
        "too many requestStates in flight; retry later"
    );
    // Debug never shows the secret.
    assert_eq!(format!("{:?}", Key::new(5, [0xAA; 32])), "Key { id: 5, .. }");
}

proptest! {
    // Any altered byte is rejected.
    // row: mrtr-requeststate-attacker-controlled
    #[test]
    fn flipping_any_byte_is_rejected(pos in any::<prop::sample::Index>(), flip in 1u8..=255, inner in proptest::collection::vec(any::<u8>(), 0..40)) {
        let token = seal_with(&keys(), &binding(), &inner, 3);
        let mut bytes = token.into_bytes();
        let i = pos.index(bytes.len());
        bytes[i] ^= flip;
        let tampered = String::from_utf8_lossy(&bytes).into_owned();
        prop_assert!(open_fresh(&tampered, &binding(), NOW).is_err());
    }

    // The same, on the decoded layout: re-encoded with any byte changed.
    #[test]
    fn altering_any_layout_byte_is_rejected(pos in any::<prop::sample::Index>(), flip in 1u8..=255) {
        use base64::Engine as _;
        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let token = seal_with(&keys(), &binding(), b"inner", 3);
        let mut raw = vec![0u8; token.len()];
        let n = engine.decode_slice(&token, &mut raw).unwrap();
        raw.truncate(n);
        let i = pos.index(raw.len());
        raw[i] ^= flip;
        let mut tampered = vec![0u8; token.len()];
        let n = engine.encode_slice(&raw, &mut tampered).unwrap();
        let tampered = String::from_utf8(tampered[..n].to_vec()).unwrap();
        prop_assert!(open_fresh(&tampered, &binding(), NOW).is_err());
    }

    #[test]
    fn round_trip(principal in any::<Vec<u8>>(), method in "[a-z/]{0,40}", params in any::<Vec<u8>>(), inner in any::<Vec<u8>>(), nonce in any::<[u8; NONCE_LEN]>()) {
        let b = Binding { principal: &principal, method: &method, params: &params };
        let mut out = vec![0u8; sealed_len(method.len(), inner.len())];
        let token = keys().seal(&b, &inner, &nonce, NOW, TTL, &mut out).unwrap().to_owned();
        let mut replay = ReplaySet::<1>::new();
        prop_assert_eq!(open_with(&keys(), &token, &b, NOW, &mut replay), Ok(inner));
        prop_assert_eq!(open_with(&keys(), &token, &b, NOW, &mut replay), Err(OpenError::Replayed));
    }

    #[test]
    fn no_panic_on_any_token(token in "[A-Za-z0-9_=+/-]{0,300}", scratch_len in 0usize..400) {
        let mut scratch = vec![0u8; scratch_len];
        let _ = keys().open(&token, &binding(), NOW, &mut ReplaySet::<2>::new(), &mut scratch);
    }
}

#[test]
fn seeded_keys_are_stable_and_nonces_fresh() {
    let mut a = Seeded::new([7; 32]);
    let b = Seeded::new([7; 32]);
    let c = Seeded::new([8; 32]);
    let keys_a = Keys::new(a.key(1), None).unwrap();
    let keys_b = Keys::new(b.key(1), None).unwrap();
    let keys_c = Keys::new(c.key(1), None).unwrap();
    let n1 = a.nonce();
    let n2 = a.nonce();
    assert_ne!(n1, n2);
    let mut out = vec![0u8; sealed_len(binding().method.len(), 1)];
    let token = keys_a.seal(&binding(), b"x", &n1, NOW, TTL, &mut out).unwrap().to_owned();
    assert_eq!(open_with(&keys_b, &token, &binding(), NOW, &mut ReplaySet::<4>::new()), Ok(b"x".to_vec()));
    assert_eq!(open_with(&keys_c, &token, &binding(), NOW, &mut ReplaySet::<4>::new()), Err(OpenError::BadSignature));
    assert_eq!(digest(b"abc").len(), 32);
}
