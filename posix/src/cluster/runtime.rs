//! The runtime side of a replica: executes the hub's `Output::Shared` in
//! the store and its `Output::Forward` over the hop, each as its own task,
//! and gives the answers back to the hub (`Input::SharedAnswered`,
//! `Input::ForwardDone`). Every job is bounded in time (the store's
//! `OP_TIMEOUT`, the hop's timeouts), and at most [`MAX_IN_FLIGHT`] run at
//! once: beyond that a job is answered at once as unavailable.

use std::cell::Cell;
use std::rc::Rc;

use smol::channel::Receiver;

use super::forward::Hop;
use crate::config::ClusterSettings;
use crate::hub::Input;
use crate::hub::shared::{Answer, Ask};
use crate::process::exec::Executor;
use crate::serve::cluster_jobs::{refuse, Job, MAX_IN_FLIGHT};
use crate::serve::runtime::Runtime;

/// The store and the hop of this replica.
pub struct Cluster {
    #[cfg(feature = "cluster")]
    store: Option<Rc<super::store::Store>>,
    hop: Option<Rc<Hop>>,
    in_flight: Cell<usize>,
}

impl Cluster {
    /// From the settings; `None` when neither a store nor a cluster is
    /// configured (one mcpx, state in memory).
    pub fn new(s: &ClusterSettings) -> Result<Option<Cluster>, String> {
        #[cfg(feature = "cluster")]
        let store = match &s.state_url {
            Some(url) => Some(Rc::new(super::store::Store::new(url, &value_key(s)).map_err(|e| e.0)?)),
            None => None,
        };
        #[cfg(not(feature = "cluster"))]
        if s.state_url.is_some() {
            return Err("state.url: this mcpx is built without the Redis store (cargo feature `cluster` of mcpx-posix)".into());
        }
        let hop = match (&s.replica, &s.state_key) {
            (Some(me), Some(key)) => Some(Rc::new(Hop::new(me, &key.0, &s.peers)?)),
            _ => None,
        };
        #[cfg(feature = "cluster")]
        let any = store.is_some() || hop.is_some();
        #[cfg(not(feature = "cluster"))]
        let any = hop.is_some();
        Ok(any.then(|| Cluster {
            #[cfg(feature = "cluster")]
            store,
            hop,
            in_flight: Cell::new(0),
        }))
    }

    /// The shared-state store (`state.url`), for the runtime's own use
    /// (the session directory, the shared lists) beside the hub's asks.
    #[cfg(feature = "cluster")]
    pub fn store(&self) -> Option<Rc<super::store::Store>> {
        self.store.clone()
    }

    /// The legacy session directory, for an HTTP listener whose sessions
    /// expire after `idle_ms`: with a store and a hop (a replica id and the
    /// shared key).
    #[cfg(feature = "cluster")]
    pub fn directory(&self, idle_ms: u64) -> Option<super::directory::Directory> {
        Some(super::directory::Directory::new(self.store()?, self.hop.clone()?, idle_ms))
    }

    /// Is a shared-state store configured (`state.url`)?
    pub fn has_store(&self) -> bool {
        #[cfg(feature = "cluster")]
        return self.store.is_some();
        #[cfg(not(feature = "cluster"))]
        false
    }

    /// The values of `keys` in the shared store, in one round trip (within
    /// the store's timeout); `None` without a store.
    pub async fn get_all(&self, keys: &[String]) -> Option<Result<Vec<Option<Vec<u8>>>, String>> {
        #[cfg(feature = "cluster")]
        if let Some(store) = &self.store {
            return Some(store.get_all(keys).await.map_err(|e| e.0));
        }
        let _ = keys;
        None
    }

    /// Runs the jobs the runtime queues (`Runtime::cluster_job`), each as a
    /// task of `ex`, until the queue closes.
    pub async fn run(self: Rc<Cluster>, ex: Rc<Executor>, rt: Rc<Runtime>, jobs: Receiver<Job>) {
        while let Ok(job) = jobs.recv().await {
            self.start(&ex, &rt, job);
        }
    }

    /// Runs `job` as a task of `ex`; answers it at once when too many run.
    fn start(self: &Rc<Cluster>, ex: &Executor, rt: &Rc<Runtime>, job: Job) {
        if self.in_flight.get() >= MAX_IN_FLIGHT {
            let why = format!("too many shared-state and hop requests in flight (at most {MAX_IN_FLIGHT})");
            finish(rt, job, Answer::Unavailable(why.clone()), Err(why));
            return;
        }
        self.in_flight.set(self.in_flight.get() + 1);
        let (cl, rt) = (self.clone(), rt.clone());
        ex.spawn(async move {
            cl.work(&rt, job).await;
            cl.in_flight.set(cl.in_flight.get() - 1);
        })
        .detach();
    }

    async fn work(&self, rt: &Rc<Runtime>, job: Job) {
        match job {
            Job::Ask(ask) => {
                let answer = self.execute(&ask).await;
                if ask.ticket != 0 {
                    rt.feed(|hub, now| hub.handle(Input::SharedAnswered { ticket: ask.ticket, answer }, now));
                } else if let Answer::Unavailable(why) = answer {
                    warn!("shared state: {why}");
                }
            }
            Job::Forward { client, request, msg, principal, to, traceparent } => {
                let result = match &self.hop {
                    Some(hop) => {
                        let mut headers = rt.modern_headers(&msg);
                        // The trace goes on there, this replica's span its parent.
                        headers.extend(traceparent.map(|t| ("traceparent".to_string(), t.bytes().to_vec())));
                        let deliver = |m: Vec<u8>| rt.deliver_forwarded(client, &request, m);
                        hop.forward(&to, &msg, &principal, &headers, &deliver).await
                    }
                    None => Err("this replica has no hop to others (needs cluster.replica and the shared state key)".to_string()),
                };
                if let Err(why) = &result {
                    warn!("cluster hop: {why}");
                }
                rt.feed(|hub, now| hub.handle(Input::ForwardDone { client, request: request.bytes(), result }, now));
            }
        }
    }

    async fn execute(&self, ask: &Ask) -> Answer {
        #[cfg(feature = "cluster")]
        if let Some(store) = &self.store {
            return store.execute(&ask.op).await;
        }
        let _ = ask;
        Answer::Unavailable("no shared state store is configured (\"state\": {\"url\"})".into())
    }
}

/// The key the store's values are sealed with: the shared state key; one
/// of this process's own without it (with a warning: then no other mcpx's
/// values verify here).
#[cfg(feature = "cluster")]
fn value_key(s: &ClusterSettings) -> [u8; 32] {
    if let Some(k) = &s.state_key {
        return k.0;
    }
    warn!("shared state: no shared state key (MCPX_STATE_KEY or state.keyFile): values kept in Redis are sealed with a key of this process, so listings and records other mcpx processes keep there are ignored here; give every replica the same key to share them");
    let mut k = [0u8; 32];
    nanorand::Rng::fill_bytes(&mut nanorand::ChaCha20::new(), &mut k);
    k
}

/// The receiving side of the hop for the HTTP listener: with a replica id
/// and the shared key (and so a cluster).
pub fn hop_config(s: &ClusterSettings) -> Option<crate::http::cluster_hop::HopConfig> {
    let key = s.state_key.as_ref().filter(|_| s.replica.is_some())?;
    let peers = s.peers.iter().map(|(id, _)| id.clone()).collect();
    Some(crate::http::cluster_hop::HopConfig::new(super::hop_auth::HopKey::derive(&key.0), peers))
}

/// Answers `job` without running it.
fn finish(rt: &Runtime, job: Job, answer: Answer, result: Result<(), String>) {
    rt.feed(|hub, now| refuse(hub, job, answer, result, now));
}
