//! The legacy session directory (issue #16): which replica owns which
//! legacy session (a Streamable HTTP `Mcp-Session-Id`, a 2024-11-05
//! `/messages?sessionId=`), as `mcpx:session:<sid>` -> replica id in the
//! shared store, so that a replica receiving a request for a session it
//! does not know passes it to the owner over the hop instead of answering
//! 404. The HTTP side decides when to publish, refresh, look up and forget
//! (`http::session_dir`); this is what each of those asks the store.
//!
//! An entry lives as long as its session may: [`Directory::ttl_ms`] is the
//! session idle expiry plus as much again, at most [`SLACK_MS`], refreshed while the session is
//! used (at most about once per half-TTL), deleted when it ends. A replica
//! restarted with the same id has lost its sessions: the entries naming it
//! expire by their TTL, or are dropped when it answers 404 for them.
//!
//! Beside each entry, what a Streamable HTTP session keeps
//! (`mcpx:session-state:<sid>`, issue 25), with the same TTL, written by
//! the owner only while the entry names it, and deleted with the entry: so
//! that when the owner is gone another replica can take the session over
//! ([`Directory::claim`], one compare-and-set: of two replicas trying, one
//! does).

use std::rc::Rc;

use super::forward::Hop;
use super::store::{Store, Unavailable};
use crate::hub::shared::KEY_PREFIX;

/// What an entry outlives its session's idle expiry by at most: the expiry
/// scan's period and a refresh that came late.
pub const SLACK_MS: u64 = 10_000;

/// The directory of one replica: the store, and the hop to the owners.
pub struct Directory {
    store: Rc<Store>,
    hop: Rc<Hop>,
    ttl_ms: u64,
}

/// The store key of session `sid`.
pub fn key(sid: &str) -> String {
    format!("{KEY_PREFIX}session:{sid}")
}

/// The store key of what session `sid` keeps.
pub fn state_key(sid: &str) -> String {
    format!("{KEY_PREFIX}session-state:{sid}")
}

impl Directory {
    /// With sessions that expire after `idle_ms` without use.
    pub fn new(store: Rc<Store>, hop: Rc<Hop>, idle_ms: u64) -> Directory {
        Directory { store, hop, ttl_ms: idle_ms.saturating_add(idle_ms.min(SLACK_MS)) }
    }

    /// How long an entry lives unless refreshed.
    pub fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }

    /// The hop to the other replicas.
    pub fn hop(&self) -> &Hop {
        &self.hop
    }

    /// Records (or refreshes) that this replica owns `sid`.
    pub async fn publish(&self, sid: &str) -> Result<(), Unavailable> {
        self.store.put(&key(sid), self.hop.me().as_bytes(), self.ttl_ms).await
    }

    /// The replica that owns `sid`, if any does.
    pub async fn owner(&self, sid: &str) -> Result<Option<String>, Unavailable> {
        let v = self.store.get(&key(sid)).await?;
        Ok(v.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// Writes what `sid` keeps, while the entry names this replica (not
    /// over the one that took it over); true when written.
    pub async fn keep(&self, sid: &str, state: &[u8]) -> Result<bool, Unavailable> {
        self.store.put_if(&key(sid), self.hop.me().as_bytes(), &state_key(sid), state, self.ttl_ms).await
    }

    /// What `sid` keeps, as its owner last wrote it.
    pub async fn kept(&self, sid: &str) -> Result<Option<Vec<u8>>, Unavailable> {
        self.store.get(&state_key(sid)).await
    }

    /// Takes `sid` over from `owner`, which is gone: true when its entry
    /// names this replica now; false when it no longer named `owner`
    /// (another replica took it over first, or it ended).
    pub async fn claim(&self, sid: &str, owner: &str) -> Result<bool, Unavailable> {
        let k = key(sid);
        self.store.put_if(&k, owner.as_bytes(), &k, self.hop.me().as_bytes(), self.ttl_ms).await
    }

    /// `sid` ended here: its entry and state go (unless another
    /// replica's by now).
    pub async fn forget(&self, sid: &str) -> Result<(), Unavailable> {
        self.forget_if(sid, self.hop.me()).await
    }

    /// The lists of calls waiting for approval the other replicas announced
    /// (`hub::approvals`), as each wrote it.
    #[cfg(feature = "consent")]
    pub async fn waiting_elsewhere(&self) -> Result<Vec<Vec<u8>>, Unavailable> {
        let keys: Vec<String> = self.hop.peers().map(crate::hub::shared::waiting_key).collect();
        Ok(self.store.get_all(&keys).await?.into_iter().flatten().collect())
    }

    /// Drops the entry and state of `sid` if the entry still names `owner`
    /// (a replica that is gone, or that no longer has the session).
    pub async fn forget_if(&self, sid: &str, owner: &str) -> Result<(), Unavailable> {
        self.store.delete_if(&key(sid), owner.as_bytes(), &[&state_key(sid)]).await.map(|_| ())
    }
}
