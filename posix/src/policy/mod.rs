//! Policy: rate limits, per-principal catalogs, argument validation, the
//! audit log, metrics and tool search (issue 17). Placeholder doc; see below.

pub mod audit;
pub mod catalog_acl;
pub mod metrics;
pub mod ratelimit;
pub mod search;
#[cfg(feature = "validate")]
pub mod validate;
