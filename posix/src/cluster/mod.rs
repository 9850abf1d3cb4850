//! Replicas behind a load balancer (issue #16): the shared state in Redis
//! ([`store`], feature `cluster`), the authenticated hop between replicas
//! ([`hop_auth`]; its route is `http::cluster_hop`, its client [`forward`]),
//! the legacy session directory in the store (`directory`); each value in
//! the store sealed and bounded ([`sealed`]).

#[cfg(feature = "cluster")]
pub mod directory;
pub mod forward;
pub mod hop_auth;
pub mod runtime;
#[cfg(feature = "cluster")]
pub mod sealed;
#[cfg(feature = "cluster")]
pub mod store;
#[cfg(all(test, feature = "cluster"))]
pub mod test_redis;
