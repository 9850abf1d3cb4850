//! OAuth 2.0 Token Exchange (RFC 8693) for `"tokenExchange"` servers: a
//! principal's instance of the server gets its token by exchanging the
//! principal's own access token to mcpx (the subject token, verified by the
//! HTTP listener: `http::auth`) at the server's authorization server for
//! one meant for the server (its RFC 8707 `resource`, and the configured
//! `audience`), authenticating as the configured client.
//!
//! [`Exchanges`] holds, in memory only and only while a configured server
//! exchanges tokens, each principal's latest verified token to mcpx and
//! the tokens exchanged for it, per (principal, server
//! URL, audience), until they expire: an instance exchanges again when its
//! token is within the refresh margin of its expiry, or when the server
//! answers 401. Nothing here is written to the token store or logged, and
//! the subject token goes nowhere but to the token endpoint. A failed
//! exchange (no subject token, `invalid_grant`, the authorization server
//! unreachable) fails the request: there is no other token to fall back to.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;

use super::discovery::{self, Challenge};
use super::error::Error;
use super::store::ServerTokens;
use super::token::{self, Grant};
use super::{expiring, now_s, Authorizer, Discovered};
use crate::bytes::ct_eq;

/// Subject tokens, and exchanged tokens, held at most (each).
const MAX_HELD: usize = 4096;

/// Whose exchanged token, for which server URL and `audience`.
pub(super) type Key = (String, String, Option<String>);

/// A principal's latest verified access token to mcpx.
struct Subject {
    token: String,
    expires_at: Option<u64>,
}

/// Shared by the HTTP listener (which hands over each verified token) and
/// every instance of a `"tokenExchange"` server.
#[derive(Default)]
pub struct Exchanges {
    /// Does a configured server exchange tokens? Nothing is kept otherwise.
    wanted: Cell<bool>,
    subjects: RefCell<HashMap<String, Subject>>,
    issued: RefCell<HashMap<Key, ServerTokens>>,
}

impl fmt::Debug for Exchanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Exchanges({} principals, {} tokens)", self.subjects.borrow().len(), self.issued.borrow().len())
    }
}

impl Exchanges {
    /// Whether a server of the config (at start, or a reload's) exchanges
    /// tokens; when none does any more, what was held goes.
    pub fn set_wanted(&self, on: bool) {
        self.wanted.set(on);
        if !on {
            self.subjects.borrow_mut().clear();
            self.issued.borrow_mut().clear();
        }
    }

    /// The HTTP listener accepted `token` from `principal` (its signature,
    /// issuer, audience mcpx and expiry checked), good until `expires_at`:
    /// the subject token of that principal's next exchanges.
    pub fn accepted(&self, principal: &str, token: &str, expires_at: Option<u64>) {
        if !self.wanted.get() {
            return;
        }
        let mut subjects = self.subjects.borrow_mut();
        if subjects.get(principal).is_some_and(|s| ct_eq(s.token.as_bytes(), token.as_bytes())) {
            return;
        }
        make_room(&mut subjects, |s| s.expires_at);
        subjects.insert(principal.to_string(), Subject { token: token.to_string(), expires_at });
    }

    /// `principal`'s subject token, unless it has expired.
    fn subject(&self, principal: &str) -> Option<String> {
        let now = now_s();
        self.subjects.borrow().get(principal).filter(|s| s.expires_at.is_none_or(|e| e > now)).map(|s| s.token.clone())
    }

    /// The tokens exchanged for `key`, if any.
    pub(super) fn held(&self, key: &Key) -> Option<ServerTokens> {
        self.issued.borrow().get(key).cloned()
    }

    /// Keeps the tokens exchanged for `key` (in place of earlier ones).
    pub(super) fn keep(&self, key: Key, t: ServerTokens) {
        let mut issued = self.issued.borrow_mut();
        make_room(&mut issued, |t| t.expires_at);
        issued.insert(key, t);
    }
}

/// Drops what has expired from `m`, then, at [`MAX_HELD`], one more entry.
fn make_room<K: Clone + Eq + Hash, V>(m: &mut HashMap<K, V>, expires_at: impl Fn(&V) -> Option<u64>) {
    let now = now_s();
    m.retain(|_, v| expires_at(v).is_none_or(|e| e > now));
    if m.len() >= MAX_HELD {
        if let Some(k) = m.keys().next().cloned() {
            m.remove(&k);
        }
    }
}

impl Authorizer {
    /// Where this instance's exchanged tokens are held.
    pub(super) fn exchange_key(&self, principal: &str) -> Key {
        let audience = self.spec.token_exchange.as_ref().and_then(|x| x.audience.clone());
        (principal.to_string(), self.server.to_string(), audience)
    }

    /// Before a request: an exchange when no held token lasts beyond the
    /// refresh margin. Err: none could be had; the request is not sent.
    pub(super) async fn exchange_if_due(&self) -> Result<(), Error> {
        let due = |t: Option<ServerTokens>| t.is_none_or(|t| expiring(&t));
        if !due(self.tokens()) {
            return Ok(());
        }
        let _g = self.busy.lock().await;
        if !due(self.tokens()) {
            return Ok(()); // exchanged meanwhile
        }
        let d = self.discover(&Challenge::default(), None).await.map_err(|e| Error::Exchange(Box::new(e)))?;
        let scopes = discovery::select_scopes(&Challenge::default(), d.prm.as_ref(), &self.spec.scopes);
        self.obtain(&d, scopes).await
    }

    /// RFC 8693: `principal`'s subject token (from `exchanges`) exchanged
    /// for a token for this server, as the configured client.
    pub(super) async fn token_exchange(&self, d: &Discovered, principal: &str, exchanges: &Exchanges, scopes: &[String]) -> Result<ServerTokens, Error> {
        // Requirement: authz-no-token-passthrough (the principal's token to mcpx goes only to the authorization server, as the subject of the exchange; upstream goes the token it issues for the server)
        let subject = exchanges.subject(principal).ok_or_else(|| Error::NoSubjectToken { principal: principal.to_string() })?;
        let failed = |e| Error::Exchange(Box::new(e));
        let client = self.client_identity(&d.meta, None).await.map_err(failed)?;
        let audience = self.exchange_key(principal).2;
        let grant = Grant::TokenExchange { subject_token: &subject, audience: audience.as_deref() };
        let t = self.token_request(d, &grant, &client, scopes).await.map_err(failed)?;
        // No refresh token is kept: an expired exchanged token is exchanged again.
        Ok(self.record(d, &client, token::Tokens { refresh_token: None, ..t }, None))
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_held_per_principal_while_wanted_and_until_they_expire() {
        let x = Exchanges::default();
        x.accepted("alice", "t-a", None);
        assert_eq!(x.subject("alice"), None, "no server exchanges tokens: nothing is kept");
        x.set_wanted(true);
        x.accepted("alice", "t-a", Some(now_s() + 60));
        x.accepted("bob", "t-b", Some(now_s() - 1));
        assert_eq!(x.subject("alice").as_deref(), Some("t-a"));
        assert_eq!(x.subject("bob"), None, "expired");
        x.accepted("alice", "t-a2", None);
        assert_eq!(x.subject("alice").as_deref(), Some("t-a2"), "the latest one");
        let key = |p: &str| (p.to_string(), "https://s.example/mcp".to_string(), None);
        x.keep(key("alice"), ServerTokens { access_token: "x-a".into(), ..ServerTokens::default() });
        assert_eq!(x.held(&key("alice")).map(|t| t.access_token).as_deref(), Some("x-a"));
        assert_eq!(x.held(&key("bob")), None, "bob never gets alice's");
        assert!(!format!("{x:?}").contains("t-a2") && !format!("{x:?}").contains("x-a"), "no token in Debug");
        x.set_wanted(false);
        assert_eq!((x.subject("alice"), x.held(&key("alice"))), (None, None));
    }
}
