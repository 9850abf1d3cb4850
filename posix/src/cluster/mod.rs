//! Replicas behind a load balancer (issue #16): the shared state in Redis
//! ([`store`]) and the authenticated hop between replicas.

pub mod store;
#[cfg(test)]
pub mod test_redis;
