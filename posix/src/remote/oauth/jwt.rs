//! Private-key JWT client assertions (RFC 7523 §2.2) for the
//! client-credentials grant: ES256 (P-256) or RS256 keys in PKCS#8 PEM.

use std::fmt;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;

/// The signing algorithms mcpx offers.
pub const ALGS: &[&str] = &["ES256", "RS256"];

/// Why a key cannot be loaded or cannot sign.
#[derive(Debug)]
pub enum KeyError {
    UnsupportedAlg(String),
    NoPkcs8Block,
    NoEndLine,
    Base64(base64::DecodeError),
    #[cfg(feature = "oauth-jwt")]
    Rejected { alg: &'static str, err: ring::error::KeyRejected },
    #[cfg(feature = "oauth-jwt")]
    Signing { alg: &'static str },
    /// Built without the `oauth-jwt` feature.
    #[cfg(not(feature = "oauth-jwt"))]
    NotBuilt,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::UnsupportedAlg(alg) => write!(f, "signingAlg {alg:?} is not supported (use ES256 or RS256)"),
            KeyError::NoPkcs8Block => f.write_str("no \"BEGIN PRIVATE KEY\" (PKCS#8) block in the file"),
            KeyError::NoEndLine => f.write_str("the PRIVATE KEY block has no END line"),
            KeyError::Base64(e) => write!(f, "the PRIVATE KEY block is not valid base64: {e}"),
            #[cfg(feature = "oauth-jwt")]
            KeyError::Rejected { alg: "ES256", err } => write!(f, "not a P-256 PKCS#8 key for ES256: {err}"),
            #[cfg(feature = "oauth-jwt")]
            KeyError::Rejected { alg, err } => write!(f, "not an RSA PKCS#8 key for {alg}: {err}"),
            #[cfg(feature = "oauth-jwt")]
            KeyError::Signing { alg } => write!(f, "{alg} signing failed"),
            #[cfg(not(feature = "oauth-jwt"))]
            KeyError::NotBuilt => f.write_str("this mcpx was built without private-key JWT support (cargo feature `oauth-jwt`)"),
        }
    }
}

impl std::error::Error for KeyError {}

/// A key loaded from `privateKeyFile`.
pub struct SigningKey {
    alg: &'static str,
    #[cfg(feature = "oauth-jwt")]
    key: Key,
}

#[cfg(feature = "oauth-jwt")]
enum Key {
    Es256(ring::signature::EcdsaKeyPair),
    Rs256(ring::signature::RsaKeyPair),
}

/// The DER of the first `-----BEGIN PRIVATE KEY-----` block.
fn pkcs8_der(pem: &str) -> Result<Vec<u8>, KeyError> {
    let start = pem.find("-----BEGIN PRIVATE KEY-----").ok_or(KeyError::NoPkcs8Block)?;
    let body = &pem[start + "-----BEGIN PRIVATE KEY-----".len()..];
    let end = body.find("-----END PRIVATE KEY-----").ok_or(KeyError::NoEndLine)?;
    let b64: String = body[..end].chars().filter(|c| !c.is_whitespace()).collect();
    STANDARD.decode(b64).map_err(KeyError::Base64)
}

impl SigningKey {
    /// Loads a PKCS#8 PEM key for `alg` (`ES256` or `RS256`).
    pub fn from_pem(pem: &str, alg: &str) -> Result<SigningKey, KeyError> {
        let alg = *ALGS.iter().find(|a| **a == alg).ok_or_else(|| KeyError::UnsupportedAlg(alg.to_string()))?;
        let der = pkcs8_der(pem)?;
        #[cfg(feature = "oauth-jwt")]
        {
            use ring::signature::{EcdsaKeyPair, RsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
            let key = match alg {
                "ES256" => Key::Es256(
                    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &ring::rand::SystemRandom::new())
                        .map_err(|err| KeyError::Rejected { alg, err })?,
                ),
                _ => Key::Rs256(RsaKeyPair::from_pkcs8(&der).map_err(|err| KeyError::Rejected { alg, err })?),
            };
            Ok(SigningKey { alg, key })
        }
        #[cfg(not(feature = "oauth-jwt"))]
        {
            let _ = (der, alg);
            Err(KeyError::NotBuilt)
        }
    }

    /// A signed assertion: `iss` = `sub` = the client id, `aud` the
    /// authorization server, valid for five minutes from `now_s`.
    pub fn assertion(&self, client_id: &str, audience: &str, now_s: u64, jti: &str) -> Result<String, KeyError> {
        let header = serde_json::json!({"alg": self.alg, "typ": "JWT"});
        let claims = serde_json::json!({
            "iss": client_id, "sub": client_id, "aud": audience,
            "iat": now_s, "exp": now_s + 300, "jti": jti,
        });
        let input = format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let sig = self.sign(input.as_bytes())?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig)))
    }

    #[cfg(feature = "oauth-jwt")]
    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, KeyError> {
        let rng = ring::rand::SystemRandom::new();
        let failed = |_| KeyError::Signing { alg: self.alg };
        match &self.key {
            Key::Es256(k) => k.sign(&rng, msg).map(|s| s.as_ref().to_vec()).map_err(failed),
            Key::Rs256(k) => {
                let mut sig = vec![0u8; k.public().modulus_len()];
                k.sign(&ring::signature::RSA_PKCS1_SHA256, &rng, msg, &mut sig).map_err(failed)?;
                Ok(sig)
            }
        }
    }

    #[cfg(not(feature = "oauth-jwt"))]
    fn sign(&self, _msg: &[u8]) -> Result<Vec<u8>, KeyError> {
        Err(KeyError::NotBuilt)
    }
}

#[cfg(all(test, feature = "oauth-jwt"))]
mod tests {
    use super::*;

    // A P-256 key, made for this test only.
    fn es256_pem() -> String {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        key.serialize_pem()
    }

    #[test]
    fn es256_assertion_verifies() {
        let pem = es256_pem();
        let k = SigningKey::from_pem(&pem, "ES256").unwrap();
        let jwt = k.assertion("cid", "http://as", 1000, "j1").unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims, serde_json::json!({"iss": "cid", "sub": "cid", "aud": "http://as", "iat": 1000, "exp": 1300, "jti": "j1"}));
        let pair = rcgen::KeyPair::from_pem(&pem).unwrap();
        let public = ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, pair.public_key_raw());
        let sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        public.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig).unwrap();
        assert!(SigningKey::from_pem(&pem, "RS256").is_err());
        assert!(SigningKey::from_pem(&pem, "HS256").err().unwrap().to_string().contains("not supported"));
        assert!(SigningKey::from_pem("nothing", "ES256").err().unwrap().to_string().contains("PKCS#8"));
    }
}
