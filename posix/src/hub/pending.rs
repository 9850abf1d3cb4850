//! Requests the hub sent to upstreams and is waiting on.
//!
//! Keyed by (upstream, the hub's id for it). A request forwarded for a client
//! remembers the client and its raw id (restored byte for byte) and the
//! client's raw progress token; the token sent upstream is the upstream id
//! itself, so it is unique per upstream and maps back without another table.
//! Bounded by `HubOptions::max_pending`.

use std::collections::HashMap;

use super::catalog::Kind;
use super::request::ReqCtx;
use super::{ClientId, IdKey, UpstreamId};

/// Who is waiting for the answer.
#[derive(Clone, Debug)]
pub(super) enum Origin {
    /// Forwarded for a client.
    Client {
        client: ClientId,
        /// The client's id, raw JSON.
        id: Vec<u8>,
        /// The client's `_meta.progressToken`, raw JSON.
        progress: Option<Vec<u8>>,
        method: String,
        /// (upstream URI, exposed URI) when the hub renamed a resource URI:
        /// URIs in the answer are renamed back.
        renamed_uri: Option<(String, String)>,
        /// The request came in the modern era: its per-request context.
        modern: Option<Box<ReqCtx>>,
        /// Params as sent to a modern upstream, for the retry after an
        /// `InputRequiredResult` the hub answers for a legacy client.
        sent: Option<Vec<u8>>,
    },
    /// A modern client's call, answered with an `InputRequiredResult`; the
    /// upstream call waits for the client's retry (`relay::Held` handle).
    Held(u64),
    /// A call the hub runs as a task of its own (`tasks`): the task's id.
    Task(String),
    /// A client's task-augmented call to a 2025-11-25 server, cancelled
    /// before the server answered: a task in the answer gets `tasks/cancel`
    /// (`tasks::legacy`).
    TaskCancelled,
    /// The hub's `server/discover` probe.
    Discover,
    /// The hub's `subscriptions/listen` stream to a modern upstream.
    Listen,
    /// The hub's own `initialize`.
    Initialize,
    /// The hub's own list request (one page).
    List(Kind),
    /// Fire and forget (subscribe after a restart, setLevel fan-out, ...).
    Fire,
    /// The hub's health-check `ping`.
    Ping,
}

#[derive(Clone, Debug)]
pub(super) struct Fwd {
    pub origin: Origin,
    /// When the hub gives up (reset by progress, never past `hard`).
    pub deadline: u64,
    pub hard: u64,
    /// The per-request timeout, for messages and for the progress reset.
    pub timeout: u64,
    pub sent_ms: u64,
}

#[derive(Default)]
pub(super) struct Pending {
    map: HashMap<(UpstreamId, u64), Fwd>,
    /// (client, its request id) → the request serving it; short ids are
    /// kept inline, so a call in flight costs this index no allocation.
    by_client: HashMap<(ClientId, IdKey), (UpstreamId, u64)>,
}

impl Pending {
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn insert(&mut self, u: UpstreamId, id: u64, f: Fwd) {
        if let Origin::Client { client, id: cid, .. } = &f.origin {
            self.by_client.insert((*client, IdKey::new(cid)), (u, id));
        }
        self.map.insert((u, id), f);
    }

    /// Is this client id already waiting on an answer?
    pub fn client_has(&self, c: ClientId, id: &[u8]) -> bool {
        self.by_client.contains_key(&(c, IdKey::new(id)))
    }

    pub fn take(&mut self, u: UpstreamId, id: u64) -> Option<Fwd> {
        let f = self.map.remove(&(u, id))?;
        if let Origin::Client { client, id: cid, .. } = &f.origin {
            self.by_client.remove(&(*client, IdKey::new(cid)));
        }
        Some(f)
    }

    pub fn get(&self, u: UpstreamId, id: u64) -> Option<&Fwd> {
        self.map.get(&(u, id))
    }

    /// Replaces the origin of a request in flight, keeping the client index right.
    pub fn set_origin(&mut self, u: UpstreamId, id: u64, origin: Origin) {
        let Some(mut f) = self.take(u, id) else { return };
        f.origin = origin;
        self.insert(u, id, f);
    }

    pub fn get_mut(&mut self, u: UpstreamId, id: u64) -> Option<&mut Fwd> {
        self.map.get_mut(&(u, id))
    }

    /// The upstream request serving this client request.
    pub fn by_client(&self, c: ClientId, id: &[u8]) -> Option<(UpstreamId, u64)> {
        self.by_client.get(&(c, IdKey::new(id))).copied()
    }

    /// Everything waiting on upstream `u`.
    pub fn drain_upstream(&mut self, u: UpstreamId) -> Vec<(u64, Fwd)> {
        let keys: Vec<u64> = self.map.keys().filter(|k| k.0 == u).map(|k| k.1).collect();
        let mut out: Vec<(u64, Fwd)> = keys.into_iter().filter_map(|id| Some((id, self.take(u, id)?))).collect();
        out.sort_by_key(|(id, _)| *id);
        out
    }

    /// Keys of everything a client is waiting on.
    pub fn of_client(&self, c: ClientId) -> Vec<(UpstreamId, u64)> {
        let mut v: Vec<_> = self.by_client.iter().filter(|(k, _)| k.0 == c).map(|(_, v)| *v).collect();
        v.sort();
        v
    }

    /// Calls to `u` made for clients, in flight or held for a modern
    /// client's retry: (the hub's id, when sent, who is waiting).
    pub fn calls_to(&self, u: UpstreamId) -> impl Iterator<Item = (u64, u64, &Origin)> + '_ {
        self.map.iter().filter(move |(k, f)| k.0 == u && matches!(f.origin, Origin::Client { .. } | Origin::Held(_))).map(|(k, f)| (k.1, f.sent_ms, &f.origin))
    }

    /// Keys whose deadline is at or before `now`, oldest first.
    pub fn expired(&self, now: u64) -> Vec<(UpstreamId, u64)> {
        let mut v: Vec<_> = self.map.iter().filter(|(_, f)| f.deadline <= now).map(|(k, _)| *k).collect();
        v.sort();
        v
    }

    pub fn next_deadline(&self) -> Option<u64> {
        self.map.values().map(|f| f.deadline).min()
    }

    /// Is a health-check ping to `u` in flight?
    pub fn pinging(&self, u: UpstreamId) -> bool {
        self.map.iter().any(|(k, f)| k.0 == u && matches!(f.origin, Origin::Ping))
    }
}

impl Pending {
    /// Modern clients with a request to `u` in flight whose log level admits
    /// a message of level index `level`.
    pub fn modern_log_clients(&self, u: UpstreamId, level: usize) -> Vec<ClientId> {
        self.map
            .iter()
            .filter(|(k, _)| k.0 == u)
            .filter_map(|(_, f)| match &f.origin {
                Origin::Client { client, modern: Some(ctx), .. } if ctx.log_level.is_some_and(|l| level >= l) => Some(*client),
                _ => None,
            })
            .collect()
    }
}
