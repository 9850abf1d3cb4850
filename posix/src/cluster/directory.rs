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

    /// `sid` ended here: its entry goes (unless another replica's by now).
    pub async fn forget(&self, sid: &str) -> Result<(), Unavailable> {
        self.forget_if(sid, self.hop.me()).await
    }

    /// Drops the entry of `sid` if it still names `owner` (a replica that
    /// is gone, or that no longer has the session).
    pub async fn forget_if(&self, sid: &str, owner: &str) -> Result<(), Unavailable> {
        self.store.delete_if(&key(sid), owner.as_bytes()).await.map(|_| ())
    }
}
