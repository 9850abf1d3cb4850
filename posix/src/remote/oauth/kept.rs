//! Each principal's own tokens at rest (`"perPrincipal"` servers),
//! encrypted and authenticated: ChaCha20-Poly1305 under a key derived from
//! the state key, a fresh nonce each time, the principal and the server
//! bound in as associated data (a value moved to another principal's or
//! server's place does not open). Kept in the token store file's
//! `principals` section, or, when replicas share state, in the shared
//! store, so that a person's call on any replica goes with the tokens they
//! authorized on another, a refresh by one is used by all, and a logout
//! holds everywhere.
//!
//! A value that does not open (another key, tampered with, moved) is
//! ignored as if absent, with a warning: the principal is asked again.

#[cfg(feature = "cluster")]
use std::{future::Future, pin::Pin, rc::Rc};

use base64::Engine as _;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use ring::rand::{SecureRandom as _, SystemRandom};
use serde_json::Value;

use super::store::{ServerTokens, Store, StoreError};
use crate::bytes::mac_key::MacKey;

/// The derivation label of the key (from the state key).
const DOMAIN: &[u8] = b"mcpx principal tokens v1";
/// The version tag a kept value starts with.
const TAG: &str = "v1.";
/// The prefix of a principal's tokens in the shared store (`cluster::sealed`'s kind).
#[cfg(any(test, feature = "cluster"))]
pub const SHARED_PREFIX: &str = "mcpx:oauth-tokens:";

/// What a future of the shared store gives.
#[cfg(feature = "cluster")]
pub type Answer<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + 'a>>;

/// The replicas' shared store, as far as tokens need it (the cluster's
/// store implements it; every value is sealed there besides).
#[cfg(feature = "cluster")]
pub trait Shared {
    fn get<'a>(&'a self, key: &'a str) -> Answer<'a, Option<Vec<u8>>>;
    fn put<'a>(&'a self, key: &'a str, value: &'a [u8]) -> Answer<'a, ()>;
    /// Whether there was a value.
    fn delete<'a>(&'a self, key: &'a str) -> Answer<'a, bool>;
}

/// Where the values are kept.
pub enum Shelf {
    File(Store),
    #[cfg(feature = "cluster")]
    Shared(Rc<dyn Shared>),
}

pub struct Kept {
    key: LessSafeKey,
    shelf: Shelf,
    rng: SystemRandom,
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.shelf {
            Shelf::File(_) => "Kept(file)",
            #[cfg(feature = "cluster")]
            Shelf::Shared(_) => "Kept(shared)",
        })
    }
}

/// The key of `principal`'s tokens for `server` in the shared store.
#[cfg(feature = "cluster")]
pub fn shared_key(server: &str, principal: &str) -> String {
    format!("{SHARED_PREFIX}{server}:{principal}")
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

/// The associated data: where the value belongs.
fn place(server: &str, principal: &str) -> Vec<u8> {
    let mut ad = Vec::with_capacity(16 + server.len() + principal.len());
    for part in [server, principal] {
        ad.extend_from_slice(&(part.len() as u64).to_be_bytes());
        ad.extend_from_slice(part.as_bytes());
    }
    ad
}

impl Kept {
    pub fn new(state_key: &[u8; 32], shelf: Shelf) -> Kept {
        let k = MacKey::derive(state_key, DOMAIN);
        let key = LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, k.bytes()).expect("a 32-byte key"));
        Kept { key, shelf, rng: SystemRandom::new() }
    }

    /// The token store file, when the values are kept there.
    pub fn file(&self) -> Option<&Store> {
        match &self.shelf {
            Shelf::File(s) => Some(s),
            #[cfg(feature = "cluster")]
            Shelf::Shared(_) => None,
        }
    }

    fn seal(&self, server: &str, principal: &str, t: &ServerTokens) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).expect("the system's random source");
        let mut buf = serde_json::to_vec(&t.to_json()).unwrap_or_default();
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(place(server, principal)), &mut buf)
            .expect("within ChaCha20-Poly1305's length bound");
        let mut out = nonce.to_vec();
        out.append(&mut buf);
        format!("{TAG}{}", b64().encode(out))
    }

    fn open(&self, server: &str, principal: &str, kept: &[u8]) -> Option<ServerTokens> {
        let raw = kept.strip_prefix(TAG.as_bytes()).and_then(|b| b64().decode(b).ok())?;
        if raw.len() < NONCE_LEN {
            return None;
        }
        let (nonce, sealed) = raw.split_at(NONCE_LEN);
        let mut buf = sealed.to_vec();
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let plain = self.key.open_in_place(nonce, Aad::from(place(server, principal)), &mut buf).ok()?;
        serde_json::from_slice::<Value>(plain).ok().map(|v| ServerTokens::from_json(&v))
    }

    /// `principal`'s tokens for `server`, if kept (and they open).
    pub async fn get(&self, server: &str, principal: &str) -> Result<Option<ServerTokens>, StoreError> {
        let kept = match &self.shelf {
            Shelf::File(s) => s.principal_value(server, principal)?.map(String::into_bytes),
            #[cfg(feature = "cluster")]
            Shelf::Shared(s) => s.get(&shared_key(server, principal)).await.map_err(StoreError::Shared)?,
        };
        let Some(kept) = kept else { return Ok(None) };
        let opened = self.open(server, principal, &kept);
        if opened.is_none() {
            warn!("the kept tokens of principal '{principal}' for server {server} do not open (another state key, or altered): ignored, the principal is asked to authorize again");
        }
        Ok(opened)
    }

    pub async fn put(&self, server: &str, principal: &str, t: &ServerTokens) -> Result<(), StoreError> {
        let sealed = self.seal(server, principal, t);
        match &self.shelf {
            Shelf::File(s) => s.put_principal_value(server, principal, sealed),
            #[cfg(feature = "cluster")]
            Shelf::Shared(s) => s.put(&shared_key(server, principal), sealed.as_bytes()).await.map_err(StoreError::Shared),
        }
    }

    /// Forgets `principal`'s tokens for `server`; whether there were any.
    pub async fn remove(&self, server: &str, principal: &str) -> Result<bool, StoreError> {
        match &self.shelf {
            Shelf::File(s) => s.remove_tokens(server, Some(principal)),
            #[cfg(feature = "cluster")]
            Shelf::Shared(s) => s.delete(&shared_key(server, principal)).await.map_err(StoreError::Shared),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(tag: &str, key: u8) -> Kept {
        let dir = std::env::temp_dir().join(format!("mcpx-kept-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Kept::new(&[key; 32], Shelf::File(Store { path: dir.join("oauth-tokens.json") }))
    }

    fn tokens() -> ServerTokens {
        ServerTokens { url: "http://h/mcp".into(), access_token: "at-alice-secret".into(), refresh_token: Some("rt-secret".into()), ..Default::default() }
    }

    #[test]
    fn kept_encrypted_and_opened_in_their_own_place_only() {
        let k = kept("place", 7);
        let t = tokens();
        crate::process::reactor::block_on(k.put("gh", "alice", &t)).unwrap();
        let path = &k.file().unwrap().path;
        let text = std::fs::read_to_string(path).unwrap();
        assert!(!text.contains("secret") && !text.contains("accessToken"), "{text}");
        assert_eq!(crate::process::reactor::block_on(k.get("gh", "alice")).unwrap(), Some(t.clone()));
        assert_eq!(crate::process::reactor::block_on(k.get("gh", "bob")).unwrap(), None);
        // Moved to bob's place, or another server's: it does not open.
        let v: Value = serde_json::from_str(&text).unwrap();
        let sealed = v["principals"]["alice"]["gh"].as_str().unwrap().to_string();
        k.file().unwrap().put_principal_value("gh", "bob", sealed.clone()).unwrap();
        k.file().unwrap().put_principal_value("other", "alice", sealed.clone()).unwrap();
        assert_eq!(crate::process::reactor::block_on(k.get("gh", "bob")).unwrap(), None);
        assert_eq!(crate::process::reactor::block_on(k.get("other", "alice")).unwrap(), None);
        // Under another state key, or altered: it does not open either.
        let other = Kept::new(&[8; 32], Shelf::File(Store { path: path.clone() }));
        assert_eq!(crate::process::reactor::block_on(other.get("gh", "alice")).unwrap(), None);
        let mut altered = sealed.into_bytes();
        let last = altered.len() - 2;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        k.file().unwrap().put_principal_value("gh", "alice", String::from_utf8(altered).unwrap()).unwrap();
        assert_eq!(crate::process::reactor::block_on(k.get("gh", "alice")).unwrap(), None);
        // Each sealing has its own nonce.
        assert_ne!(k.seal("gh", "alice", &t), k.seal("gh", "alice", &t));
        assert!(crate::process::reactor::block_on(k.remove("gh", "bob")).unwrap());
        assert!(!crate::process::reactor::block_on(k.remove("gh", "bob")).unwrap());
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }
}
