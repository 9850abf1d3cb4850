//! PKCE (RFC 7636) with S256, and the other random values of a flow.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use nanorand::Rng as _;
use sha2::{Digest, Sha256};

/// 32 random bytes in base64url: a code verifier (43 characters, within
/// RFC 7636's 43..128), a `state` or a JWT id.
pub fn random_token(rng: &mut nanorand::ChaCha20) -> String {
    let mut bytes = [0u8; 32];
    rng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// `BASE64URL(SHA256(verifier))`.
// Requirement: authz-pkce-verify-s256
pub fn s256_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    // covers: authz-pkce, authz-pkce-verify-s256
    #[test]
    fn s256_matches_rfc7636_appendix_b() {
        assert_eq!(s256_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        let mut rng = nanorand::ChaCha20::new();
        let (a, b) = (random_token(&mut rng), random_token(&mut rng));
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
    }
}
