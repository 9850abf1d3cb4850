//! Where the lists of servers are kept, so that a server's tools are known
//! before it is up (a lazy one's without starting it): the disk [`cache`] of this mcpx and, with
//! `"state": {"url"}`, the shared store of all replicas (key
//! `mcpx:lists:<name in hex>`, the same entry as the disk file, expiring
//! after [`SHARED_TTL_MS`] unless kept again).
//!
//! Kept whenever a server's lists are read (`Output::ListsRead`: at each
//! start, and after a re-read that changed them), at an idle stop and at
//! shutdown: in the store and on disk, for every server.
//! Known at start: from the store first, in one round trip for all
//! servers; for a server without a stored entry (or without an answer
//! within the store's timeout, with a warning) from the disk; without
//! either, a lazy server is started once to learn them. A server that is
//! not lazy starts anyway; known lists let mcpx list it before it is up
//! (a slow start, another replica's), and its calls wait for it (`hub::starts::lazy`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

use serde_json::Value;

use super::cache;
use crate::cluster::runtime::Cluster;
use crate::serve::cluster_jobs::Job;
use crate::config::{EnvLookup, ServerConfig};
use crate::hub::shared::{lists_key, Ask, Op};
use crate::serve::runtime::Runtime;

/// How long a shared entry lives unless kept again: a day.
pub const SHARED_TTL_MS: u64 = 24 * 60 * 60 * 1000;

/// Where a server's lists were known from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whence {
    Shared,
    Disk,
}

/// The places lists are kept in.
pub struct Lists {
    dir: Option<PathBuf>,
    cluster: Option<Rc<Cluster>>,
}

impl Lists {
    /// The disk cache `env` names, and the store of `cluster`.
    pub fn new(env: EnvLookup<'_>, cluster: Option<Rc<Cluster>>) -> Lists {
        Lists { dir: cache::dir(env), cluster: cluster.filter(|c| c.has_store()) }
    }

    /// The lists known of `servers`, by name.
    pub async fn known<'a>(&self, servers: impl Iterator<Item = &'a ServerConfig>) -> HashMap<String, (Value, Whence)> {
        let servers: Vec<&ServerConfig> = servers.collect();
        let mut known = HashMap::new();
        if let (Some(cl), false) = (&self.cluster, servers.is_empty()) {
            let keys: Vec<String> = servers.iter().map(|s| lists_key(&s.name)).collect();
            match cl.get_all(&keys).await {
                Some(Ok(values)) => {
                    for (s, v) in servers.iter().zip(values) {
                        if let Some(lists) = v.and_then(|v| cache::lists_in(&v, s)) {
                            known.insert(s.name.clone(), (lists, Whence::Shared));
                        }
                    }
                }
                Some(Err(why)) => warn!("servers' lists are not read from the shared state ({why}); lazy servers' from the disk cache"),
                None => {}
            }
        }
        if let Some(dir) = &self.dir {
            for s in servers {
                if !known.contains_key(&s.name) {
                    if let Some(lists) = cache::load(dir, s) {
                        known.insert(s.name.clone(), (lists, Whence::Disk));
                    }
                }
            }
        }
        known
    }

    /// Keeps server `s`'s `lists`: in the shared store (a put that nobody
    /// waits for, bounded as every store operation) and on disk.
    pub fn keep(&self, rt: &Runtime, s: &ServerConfig, lists: &Value) {
        let entry = cache::entry(s, lists);
        if self.cluster.is_some() {
            let op = Op::Put { key: lists_key(&s.name), value: entry.clone(), ttl_ms: SHARED_TTL_MS };
            rt.cluster_job(Job::Ask(Ask { ticket: 0, op }));
        }
        if let Some(dir) = &self.dir {
            if let Err(e) = cache::save(dir, &s.name, &entry) {
                warn!("server {}: cannot keep its lists in {}: {e}", s.name, dir.display());
            }
        }
    }
}

#[cfg(all(test, feature = "cluster"))]
mod tests;
