//! A MAC key for one use, derived from a secret (the shared state key, or
//! the process's own): HMAC-SHA256 of the use's label under the secret, so
//! no MAC of one use can stand for another's. Never printed.

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub type HmacSha256 = Hmac<Sha256>;

#[derive(Clone)]
pub struct MacKey([u8; 32]);

impl std::fmt::Debug for MacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MacKey(<secret>)")
    }
}

impl MacKey {
    /// The key of the use labelled `domain`, from `secret`.
    pub fn derive(secret: &[u8; 32], domain: &[u8]) -> MacKey {
        let mut m = HmacSha256::new_from_slice(secret).expect("HMAC takes any key length");
        m.update(domain);
        MacKey(m.finalize().into_bytes().into())
    }

    /// The key itself (to key another primitive: an AEAD; tests: it is
    /// not the secret).
    #[cfg(any(test, feature = "secrets"))]
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A MAC under this key, to be fed.
    pub fn mac(&self) -> HmacSha256 {
        HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key length")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_use_has_its_own_key_and_none_is_printed() {
        let tag = |k: &MacKey| k.mac().finalize().into_bytes().to_vec();
        let (a, b) = (MacKey::derive(&[1; 32], b"a"), MacKey::derive(&[1; 32], b"b"));
        assert_ne!(tag(&a), tag(&b));
        assert_eq!(tag(&a), tag(&MacKey::derive(&[1; 32], b"a")));
        assert_ne!(tag(&a), tag(&MacKey::derive(&[2; 32], b"a")));
        assert_eq!(format!("{a:?}"), "MacKey(<secret>)");
    }
}
