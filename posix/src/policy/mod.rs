//! Policy (issue 17): rate limits, per-principal catalogs, argument
//! validation, the audit log, metrics and tool search — as sans-IO parts
//! (time is the caller's `now_ms`, tables are bounded) the hub calls at
//! fixed points. The config is `"policy"`, mapped into [`PolicyConfig`] by `crate::config`.
//!
//! **Status: wired** — every call is in `crate::hub::policy` (one call
//! line at each point below), except the quotas of point 7. The hub holds
//! one [`Policy`] (built from the config by
//! `Policy::new`).
//! "Principal" is the client's identity: `"stdio"` for the stdio client,
//! the static token's name (or, later, the OAuth subject) over HTTP.
//!
//! 1. **On list answers** (`tools/list` of an upstream, when the aggregated
//!    catalog is rebuilt): [`validate::Validators::listed`] with the
//!    server's tools (original names) — compiles changed schemas, logs the
//!    unusable ones. When answering a client's `tools/list`:
//!    [`catalog_acl::Catalogs::retain_visible`] for its principal (after the
//!    per-server `tools.allow/deny`), and if
//!    [`catalog_acl::Catalogs::tool_search`] is set, answer
//!    [`search::meta_tools`] instead (an [`search::Index`] per principal,
//!    rebuilt when that principal's visible list changes). A
//!    `notifications/tools/list_changed` goes only to principals for whom a
//!    visible tool changed.
//! 2. **On a client's `tools/call`, before forwarding**, in this order:
//!    resolve the exposed name; a meta-tool call ([`search::MetaCall::parse`])
//!    is answered locally (search/describe) or replaced by the named tool's
//!    call (`mcpx_call_tool`), which then goes through every step below;
//!    a tool not [`catalog_acl::Catalogs::visible`] to the principal is
//!    answered exactly as an unknown tool; then
//!    [`ratelimit::RateLimiter::check`] with [`ratelimit::Class::ToolCall`]
//!    (a [`ratelimit::Refusal`] becomes the JSON-RPC error
//!    `Refusal::CODE` with the refusal as message and `data`, over HTTP
//!    status 429 with `Retry-After: Refusal::retry_after_secs`; nothing is
//!    sent upstream); then [`validate::Validators::check_arguments`] when
//!    `validate.arguments` covers the server (a [`validate::Failure`] is the
//!    JSON-RPC error `Failure::CODE`). `completion/complete` takes the same
//!    rate-limit step with [`ratelimit::Class::Completion`].
//! 3. **On an upstream's server→client request** (`sampling/createMessage`,
//!    `elicitation/create`, `roots/list`) before relaying:
//!    [`ratelimit::RateLimiter::check`] with
//!    [`ratelimit::Class::ServerRequest`] (principal: the client it goes
//!    to; tool: the call it belongs to, if known); a refusal is the error
//!    answer to the upstream. On the answer the upstream gets (the
//!    client's, relayed or from a 2026-07-28 retry's `inputResponses`):
//!    [`validate::Validators::check_once`] of an accepted elicitation's
//!    content against the `requestedSchema` (an invalid one becomes the
//!    error -32602 to the upstream: a client's answer cannot be answered).
//! 4. **On each upstream notification with a progress token or a related
//!    request** (`notifications/progress` for its request;
//!    `notifications/message` for every client request to that upstream in
//!    flight, as the wire names none): [`ratelimit::NotificationBudget::admit`]
//!    on the budget kept per upstream request; over the cap the notification
//!    is dropped (a log message once all of those requests are over it; log
//!    once when `Dropped::first`, counted by
//!    [`metrics::HubMetrics::notification_dropped`]).
//! 5. **On a tool result**: [`validate::Validators::check_structured`] per
//!    `validate.output` (log, or replace by a tool error).
//! 6. **On every terminal outcome** (result, tool error, JSON-RPC error,
//!    refusal, timeout) of a tool call, prompt get, resource read and relayed
//!    sampling/elicitation: fill an [`audit::Record`] and
//!    [`audit::Writer::push`] its line (never blocks); and
//!    [`metrics::HubMetrics::request`] (plus `refused` for refusals). Upstream
//!    state changes call `HubMetrics::upstream`; `/metrics` samples
//!    `HubMetrics::load` and `audit_dropped`, then serves
//!    [`metrics::Registry::render`] behind the same auth as `/mcp`.
//! 7. **Shared tables** (held calls, the requestState single-use set,
//!    sessions): take a [`ratelimit::Quota`] unit per principal before
//!    inserting, release it on removal; its refusal names the limit.

#[cfg(feature = "activity")]
pub mod activity;
pub mod approval;
pub mod audit;
#[cfg(feature = "activity")]
pub mod callers;
pub mod catalog_acl;
pub mod metrics;
mod options;
pub mod ratelimit;
pub mod search;
mod state;
#[cfg(feature = "validate")]
pub mod validate;

pub use options::{AuditSettings, OutputCheck, PinSettings, PolicyConfig, Quarantine, UntrustedAnnotations, ValidateSettings};
pub use state::Policy;

#[cfg(test)]
mod config_tests;
