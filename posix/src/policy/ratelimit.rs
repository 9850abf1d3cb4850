//! Token-bucket rate limits and per-principal quotas (sans-IO: the caller
//! passes `now_ms`; nothing here reads a clock).
//!
//! A [`RateLimiter`] holds one bucket per (class, scope): per principal, per
//! server, and per tool (each exposed name matching a `perTool` glob has its
//! own bucket; the first matching glob in config order applies). A request
//! is admitted only when every bucket that applies to it has a token; then
//! each gives one. A refused request takes nothing, so retrying after
//! [`Refusal::retry_after_ms`] succeeds unless others took the tokens first.
//!
//! The table is bounded by [`RateLimitConfig::max_buckets`]: a new bucket
//! past the cap evicts the least recently used *idle* bucket (one refilled
//! to full, whose loss changes nothing); when none is idle it evicts the
//! least recently used one, which at worst hands that key one fresh burst.
//! A new client is never refused because the table is full.
//!
//! [`NotificationBudget`] caps the progress and log notifications one
//! upstream request may send; [`Quota`] is a global cap with a per-principal
//! share for tables one client could otherwise fill (issue 11 item 3).

use std::fmt;

use mcpx_core::error::ErrorCode;
use mcpx_core::names::glob_match;

use crate::name_map::NameMap;

/// A table by principal, server or tool name; every table is capped.
type ByName<V> = NameMap<Box<str>, V>;

/// What is being limited.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// A client's `tools/call` (also through the tool-search meta-tool).
    ToolCall,
    /// A client's `completion/complete`.
    Completion,
    /// An upstream's `sampling/createMessage`, `elicitation/create` or
    /// `roots/list` sent through mcpx.
    ServerRequest,
    /// A client's `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`
    /// or `tasks/update` (`tasks-rate-limit`).
    TaskRequest,
}

impl Class {
    /// The config key of this class under `policy.rateLimits`.
    pub const fn key(self) -> &'static str {
        match self {
            Class::ToolCall => "toolCalls",
            Class::Completion => "completions",
            Class::ServerRequest => "serverRequests",
            Class::TaskRequest => "taskRequests",
        }
    }
}

/// `count` requests per `per_ms` milliseconds, with bursts of up to `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub count: u32,
    pub per_ms: u64,
}

impl Rate {
    /// Parses `"20/s"`, `"600/min"`, `"1000/h"` or `"5/250ms"` (a count,
    /// `/`, an optional whole number and a unit).
    pub fn parse(s: &str) -> Result<Rate, String> {
        let bad = || format!("{s:?} is not a rate like \"20/s\", \"600/min\", \"1000/h\" or \"5/250ms\"");
        let (count, per) = s.split_once('/').ok_or_else(bad)?;
        let count: u32 = count.trim().parse().map_err(|_| bad())?;
        let per = per.trim();
        let digits = per.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let n: u64 = if digits == 0 { 1 } else { per[..digits].parse().map_err(|_| bad())? };
        let unit_ms = match &per[digits..] {
            "ms" => 1,
            "s" => 1000,
            "min" => 60_000,
            "h" => 3_600_000,
            _ => return Err(bad()),
        };
        if count == 0 || n == 0 {
            return Err(format!("{s:?}: the count and the period must be positive (use null to turn a limit off)"));
        }
        Ok(Rate { count, per_ms: n.saturating_mul(unit_ms) })
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (n, unit) = match self.per_ms {
            ms if ms % 3_600_000 == 0 => (ms / 3_600_000, "h"),
            ms if ms % 60_000 == 0 => (ms / 60_000, "min"),
            ms if ms % 1000 == 0 => (ms / 1000, "s"),
            ms => (ms, "ms"),
        };
        if n == 1 {
            write!(f, "{}/{unit}", self.count)
        } else {
            write!(f, "{}/{n}{unit}", self.count)
        }
    }
}

/// The limits of one [`Class`]; `None` turns that dimension off.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassLimits {
    pub per_principal: Option<Rate>,
    pub per_server: Option<Rate>,
    /// Exposed-name globs (`*`), first match wins; each matching tool has
    /// its own bucket.
    pub per_tool: Vec<(String, Rate)>,
}

/// `policy.rateLimits`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateLimitConfig {
    pub tool_calls: ClassLimits,
    pub completions: ClassLimits,
    pub server_requests: ClassLimits,
    pub task_requests: ClassLimits,
    /// Progress notifications one upstream request may send.
    pub progress_per_request: Option<u32>,
    /// Log notifications (`notifications/message`) one upstream request may send.
    pub logs_per_request: Option<u32>,
    /// Cap of the bucket table.
    pub max_buckets: usize,
}

impl Default for RateLimitConfig {
    /// Limits no normal use reaches; they stop a runaway loop.
    fn default() -> Self {
        let r = |count, per_ms| Some(Rate { count, per_ms });
        RateLimitConfig {
            tool_calls: ClassLimits { per_principal: r(100, 1000), per_server: r(500, 1000), per_tool: Vec::new() },
            completions: ClassLimits { per_principal: r(50, 1000), per_server: None, per_tool: Vec::new() },
            server_requests: ClassLimits { per_principal: None, per_server: r(20, 1000), per_tool: Vec::new() },
            // Polling at a 100 ms interval is 10/s per task.
            task_requests: ClassLimits { per_principal: r(100, 1000), per_server: None, per_tool: Vec::new() },
            progress_per_request: Some(10_000),
            logs_per_request: Some(10_000),
            max_buckets: 4096,
        }
    }
}

impl RateLimitConfig {
    /// Everything off (`"rateLimits": false`).
    pub fn off() -> Self {
        RateLimitConfig {
            tool_calls: ClassLimits::default(),
            completions: ClassLimits::default(),
            server_requests: ClassLimits::default(),
            task_requests: ClassLimits::default(),
            progress_per_request: None,
            logs_per_request: None,
            max_buckets: 4096,
        }
    }

    pub fn class(&self, class: Class) -> &ClassLimits {
        match class {
            Class::ToolCall => &self.tool_calls,
            Class::Completion => &self.completions,
            Class::ServerRequest => &self.server_requests,
            Class::TaskRequest => &self.task_requests,
        }
    }
}

/// One request to admit. `tool` is the exposed name (empty when none, e.g.
/// a completion or a server request outside a tool call); `principal` is
/// the client the request comes from or goes to.
#[derive(Clone, Copy, Debug)]
pub struct Key<'a> {
    pub class: Class,
    pub principal: &'a str,
    pub server: &'a str,
    pub tool: &'a str,
}

/// A request refused by a limit: which one, and when to retry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The config path of the limit and its rate, e.g.
    /// `policy.rateLimits.toolCalls.perPrincipal (20/s)`.
    pub limit: String,
    /// Milliseconds until the request would be admitted (0 for caps that
    /// do not refill).
    pub retry_after_ms: u64,
}

impl Refusal {
    /// The JSON-RPC error code of a refusal: valid in every revision.
    pub const CODE: ErrorCode = ErrorCode::InvalidRequest;

    /// The HTTP `Retry-After` value (whole seconds, at least 1), sent with
    /// status 429.
    pub fn retry_after_secs(&self) -> u64 {
        self.retry_after_ms.div_ceil(1000).max(1)
    }

    /// The JSON-RPC error's `data`: `{"limit": .., "retryAfterMs": ..}`.
    pub fn data(&self) -> serde_json::Value {
        serde_json::json!({"limit": self.limit, "retryAfterMs": self.retry_after_ms})
    }
}

/// The limits whose refusals are [`Refusal`]s: the rate limits, and the
/// per-principal share of the requestState single-use set (`hub::relay`).
const HUB_LIMITS: [&str; 2] = ["policy.rateLimits.", "requestState.singleUsePerPrincipal "];

/// The `Retry-After` seconds of an error with `code` whose `data` has
/// `limit` and `retryAfterMs`: a [`Refusal`] of one of the hub's limits,
/// else `None`.
pub fn retry_after(code: i64, limit: Option<&str>, retry_after_ms: Option<u64>) -> Option<u64> {
    let ours = code == i64::from(Refusal::CODE.code()) && HUB_LIMITS.iter().any(|l| limit.is_some_and(|s| s.starts_with(l)));
    let ms = retry_after_ms.filter(|_| ours)?;
    Some(Refusal { limit: String::new(), retry_after_ms: ms }.retry_after_secs())
}

/// The JSON-RPC error message.
impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rate limit {} reached; retry after {} ms", self.limit, self.retry_after_ms)
    }
}

/// Which limits a check applies: per principal, the others, or both.
#[derive(Clone, Copy)]
struct Dims {
    principal: bool,
    rest: bool,
}

impl Dims {
    const ALL: Dims = Dims { principal: true, rest: true };
    const SHARED: Dims = Dims { principal: true, rest: false };
    const UNSHARED: Dims = Dims { principal: false, rest: true };
}

/// Which bucket of a class: a limit's dimension and the name it counts
/// (borrowed from the request: a bucket's name is copied in once, when the
/// bucket is made).
#[derive(Clone, Copy)]
struct Scope<'a> {
    dim: Dim,
    name: &'a str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Dim {
    Principal,
    Server,
    /// Index of the `perTool` glob (the name is the exposed tool's).
    Tool(usize),
}

/// One rate-limit bucket kept by a store the replicas share: `capacity`
/// tokens that refill evenly over `period_ms` (the limit `capacity/period`,
/// e.g. `20/s`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedBucket {
    /// Unique per limit and scope, e.g. `toolCalls.perPrincipal:alice`.
    pub name: String,
    pub capacity: u32,
    pub period_ms: u64,
}

/// A token bucket. One token is `rate.per_ms` units; it refills
/// `rate.count` units per millisecond, up to `rate.count` tokens, so all
/// arithmetic is in whole numbers.
#[derive(Clone, Debug)]
struct Bucket {
    rate: Rate,
    units: u64,
    refilled_ms: u64,
    used_ms: u64,
}

impl Bucket {
    fn full(rate: Rate, now_ms: u64) -> Bucket {
        Bucket { rate, units: Self::cap(rate), refilled_ms: now_ms, used_ms: now_ms }
    }
    fn cap(rate: Rate) -> u64 {
        u64::from(rate.count).saturating_mul(rate.per_ms)
    }
    fn refill(&mut self, now_ms: u64) {
        let dt = now_ms.saturating_sub(self.refilled_ms);
        self.units = self.units.saturating_add(dt.saturating_mul(u64::from(self.rate.count))).min(Self::cap(self.rate));
        self.refilled_ms = self.refilled_ms.max(now_ms);
    }
    /// Milliseconds until one token is there (0: now).
    fn wait_ms(&self) -> u64 {
        self.rate.per_ms.saturating_sub(self.units).div_ceil(u64::from(self.rate.count))
    }
    /// Takes a token if one is there: 0, or milliseconds until one is.
    fn take(&mut self) -> u64 {
        let wait = self.wait_ms();
        if wait == 0 {
            self.units -= self.rate.per_ms;
        }
        wait
    }
    fn idle(&self, now_ms: u64) -> bool {
        let mut b = self.clone();
        b.refill(now_ms);
        b.units >= Self::cap(b.rate)
    }
}

/// The buckets of [`RateLimitConfig`]; see the module doc.
#[derive(Debug)]
pub struct RateLimiter {
    cfg: RateLimitConfig,
    /// Per class and dimension (a handful: looked up by a scan), by name;
    /// `len` buckets in all.
    buckets: Vec<((Class, Dim), ByName<Bucket>)>,
    len: usize,
    evictions: u64,
}

impl RateLimiter {
    pub fn new(cfg: RateLimitConfig) -> Self {
        RateLimiter { cfg, buckets: Vec::new(), len: 0, evictions: 0 }
    }

    pub fn config(&self) -> &RateLimitConfig {
        &self.cfg
    }

    /// Admits `key` at `now_ms` (taking a token of each bucket that
    /// applies) or says which limit refuses it. With several refusing, the
    /// one with the longest wait is named.
    pub fn check(&mut self, key: Key<'_>, now_ms: u64) -> Result<(), Refusal> {
        self.check_of(key, now_ms, Dims::ALL)
    }

    /// [`RateLimiter::check`] of the per-server and per-tool limits only:
    /// those of a replica whose per-principal limits are shared
    /// ([`RateLimiter::shared_buckets`]).
    pub fn check_unshared(&mut self, key: Key<'_>, now_ms: u64) -> Result<(), Refusal> {
        self.check_of(key, now_ms, Dims::UNSHARED)
    }

    fn check_of(&mut self, key: Key<'_>, now_ms: u64, dims: Dims) -> Result<(), Refusal> {
        let applicable = self.applicable(key, dims);
        let mut longest: Option<(Scope<'_>, Rate, u64)> = None;
        let mut taken = [false; 3];
        for (slot, (scope, rate)) in applicable.iter().enumerate().filter_map(|(i, a)| Some((i, (*a)?))) {
            match self.take(key.class, scope, rate, now_ms) {
                0 => taken[slot] = true,
                wait if longest.is_none_or(|(_, _, w)| wait > w) => longest = Some((scope, rate, wait)),
                _ => {}
            }
        }
        let Some((scope, rate, wait)) = longest else { return Ok(()) };
        // A refused request takes no token: those taken go back.
        for (scope, rate) in applicable.iter().zip(taken).filter_map(|(a, took)| a.filter(|_| took)) {
            if let Some(b) = self.table(key.class, scope.dim).and_then(|m| m.get_mut(scope.name)) {
                b.units += rate.per_ms;
            }
        }
        Err(Refusal { limit: self.limit_name(key.class, scope, rate), retry_after_ms: wait })
    }

    /// The buckets of (class, dimension), if any was made.
    fn table(&mut self, class: Class, dim: Dim) -> Option<&mut ByName<Bucket>> {
        self.buckets.iter_mut().find(|(k, _)| *k == (class, dim)).map(|(_, m)| m)
    }

    /// The buckets that apply to `key` (at most three; nothing allocated
    /// when no limit applies).
    fn applicable<'k>(&self, key: Key<'k>, dims: Dims) -> [Option<(Scope<'k>, Rate)>; 3] {
        let limits = self.cfg.class(key.class);
        let tool_rule = match key.tool {
            "" => None,
            tool if dims.rest => limits.per_tool.iter().position(|(g, _)| glob_match(g, tool)),
            _ => None,
        };
        [
            limits.per_principal.filter(|_| dims.principal).map(|r| (Scope { dim: Dim::Principal, name: key.principal }, r)),
            limits.per_server.filter(|_| dims.rest).map(|r| (Scope { dim: Dim::Server, name: key.server }, r)),
            tool_rule.map(|i| (Scope { dim: Dim::Tool(i), name: key.tool }, limits.per_tool[i].1)),
        ]
    }

    /// `policy.rateLimits.toolCalls.perPrincipal (20/s)`.
    fn limit_name(&self, class: Class, scope: Scope<'_>, rate: Rate) -> String {
        let dim = match scope.dim {
            Dim::Principal => "perPrincipal".to_string(),
            Dim::Server => "perServer".to_string(),
            Dim::Tool(i) => format!("perTool[{:?}]", self.cfg.class(class).per_tool[i].0),
        };
        format!("policy.rateLimits.{}.{dim} ({rate})", class.key())
    }

    /// The per-principal bucket of `key` as a store shared by replicas
    /// keeps it (`hub::shared`: a principal's limit holds across the
    /// replicas; per-server and per-tool limits guard each replica's own
    /// servers, [`RateLimiter::check_unshared`]), with its limit's name for
    /// a refusal; `None` when no such limit applies. The bucket is named by
    /// its limit and principal, so replicas with one config share it.
    pub fn shared_bucket(&self, key: Key<'_>) -> Option<(SharedBucket, String)> {
        let [Some((scope, rate)), ..] = self.applicable(key, Dims::SHARED) else { return None };
        let name = format!("{}.perPrincipal.{rate}:{}", key.class.key(), key.principal);
        let bucket = SharedBucket { name, capacity: rate.count, period_ms: rate.per_ms };
        Some((bucket, self.limit_name(key.class, scope, rate)))
    }

    /// Buckets in the table (at most `max_buckets`).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Buckets evicted to make room so far.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// The bucket of (class, scope), refilled to `now_ms` and marked used
    /// (made, full, if there was none), gives a token if it has one: 0, or
    /// how long until it has one.
    fn take(&mut self, class: Class, scope: Scope<'_>, rate: Rate, now_ms: u64) -> u64 {
        if let Some(b) = self.table(class, scope.dim).and_then(|m| m.get_mut(scope.name)) {
            b.refill(now_ms);
            b.used_ms = b.used_ms.max(now_ms);
            return b.take();
        }
        if self.len >= self.cfg.max_buckets.max(1) {
            self.evict(now_ms);
        }
        self.len += 1;
        if self.table(class, scope.dim).is_none() {
            self.buckets.push(((class, scope.dim), ByName::default()));
        }
        let mut b = Bucket::full(rate, now_ms);
        let wait = b.take();
        if let Some(m) = self.table(class, scope.dim) {
            m.insert(scope.name.into(), b);
        }
        wait
    }

    /// Drops the least recently used idle bucket, or the least recently
    /// used one when none is idle (one pass over the table).
    fn evict(&mut self, now_ms: u64) {
        let victim = self
            .buckets
            .iter()
            .flat_map(|(kind, m)| m.iter().map(move |(name, b)| (kind, name, b)))
            .min_by_key(|(_, _, b)| (!b.idle(now_ms), b.used_ms))
            .map(|(kind, name, _)| (*kind, name.clone()));
        if let Some(((class, dim), name)) = victim {
            if let Some(m) = self.table(class, dim) {
                m.remove(&name);
            }
            self.len -= 1;
            self.evictions += 1;
        }
    }
}

/// Which per-request notification cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notification {
    Progress,
    Log,
}

/// The count of notifications one upstream request has sent; the hub keeps
/// one in each pending request's entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NotificationBudget {
    progress: u32,
    logs: u32,
}

/// A notification over its request's cap: drop it. `first` is set for the
/// first one dropped, so the hub can log once per request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    pub limit: String,
    pub first: bool,
}

impl NotificationBudget {
    /// Counts one notification of `kind`; `Err` when it is over the cap.
    pub fn admit(&mut self, kind: Notification, cfg: &RateLimitConfig) -> Result<(), Dropped> {
        let (n, cap, key) = match kind {
            Notification::Progress => (&mut self.progress, cfg.progress_per_request, "progressPerRequest"),
            Notification::Log => (&mut self.logs, cfg.logs_per_request, "logsPerRequest"),
        };
        *n = n.saturating_add(1);
        match cap {
            Some(cap) if *n > cap => Err(Dropped { limit: format!("policy.rateLimits.{key} ({cap})"), first: *n == cap + 1 }),
            _ => Ok(()),
        }
    }
}

/// A global cap with a per-principal share: for tables one client could
/// otherwise fill for everyone (held calls, the requestState single-use
/// set, sessions). Principals holding nothing take no space, so the table
/// is bounded by the global cap.
#[derive(Debug)]
pub struct Quota {
    name: &'static str,
    global: usize,
    share: usize,
    held: ByName<usize>,
    total: usize,
}

/// Why a [`Quota`] refused: the principal's share, or the global cap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuotaRefusal {
    Share { name: &'static str, principal: String, share: usize, global: usize },
    Global { name: &'static str, global: usize, principal: String, held: usize },
}

impl fmt::Display for QuotaRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QuotaRefusal::Share { name, principal, share, global } => write!(
                f,
                "limit of {name} reached: {principal:?} holds its share of {share} (of {global} for all clients); \
                 finish or cancel some first"
            ),
            QuotaRefusal::Global { name, global, principal, held } => write!(
                f,
                "limit of {name} reached: all {global} are in use ({principal:?} holds {held}); retry later"
            ),
        }
    }
}

impl Quota {
    /// `global` in all, at most `share` of them per principal (clamped to
    /// 1..=global).
    pub fn new(name: &'static str, global: usize, share: usize) -> Self {
        Quota { name, global, share: share.clamp(1, global.max(1)), held: ByName::default(), total: 0 }
    }

    /// Takes one unit for `principal`.
    pub fn acquire(&mut self, principal: &str) -> Result<(), QuotaRefusal> {
        let held = self.held(principal);
        if held >= self.share {
            return Err(QuotaRefusal::Share {
                name: self.name,
                principal: principal.to_string(),
                share: self.share,
                global: self.global,
            });
        }
        if self.total >= self.global {
            return Err(QuotaRefusal::Global { name: self.name, global: self.global, principal: principal.to_string(), held });
        }
        *self.held.entry(principal.into()).or_insert(0) += 1;
        self.total += 1;
        Ok(())
    }

    /// Gives back one unit of `principal` (no-op when it holds none).
    pub fn release(&mut self, principal: &str) {
        if let Some(n) = self.held.get_mut(principal) {
            *n -= 1;
            self.total -= 1;
            if *n == 0 {
                self.held.remove(principal);
            }
        }
    }

    pub fn held(&self, principal: &str) -> usize {
        self.held.get(principal).copied().unwrap_or(0)
    }

    pub fn total(&self) -> usize {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call<'a>(principal: &'a str, tool: &'a str) -> Key<'a> {
        Key { class: Class::ToolCall, principal, server: "s", tool }
    }

    fn only_principal(rate: &str) -> RateLimitConfig {
        let mut c = RateLimitConfig::off();
        c.tool_calls.per_principal = Some(Rate::parse(rate).unwrap());
        c
    }

    #[test]
    fn rates_parse_and_print() {
        assert_eq!(Rate::parse("20/s"), Ok(Rate { count: 20, per_ms: 1000 }));
        assert_eq!(Rate::parse("600/min"), Ok(Rate { count: 600, per_ms: 60_000 }));
        assert_eq!(Rate::parse("5/250ms"), Ok(Rate { count: 5, per_ms: 250 }));
        assert_eq!(Rate::parse(" 3 / 2h "), Ok(Rate { count: 3, per_ms: 7_200_000 }));
        for bad in ["20", "x/s", "20/sec", "0/s", "5/0s", "-1/s", "20/"] {
            assert!(Rate::parse(bad).is_err(), "{bad} accepted");
        }
        assert_eq!(Rate::parse("20/s").unwrap().to_string(), "20/s");
        assert_eq!(Rate::parse("5/250ms").unwrap().to_string(), "5/250ms");
        assert_eq!(Rate::parse("3/120s").unwrap().to_string(), "3/2min");
    }

    #[test]
    fn the_call_after_the_burst_is_refused_with_the_limit_and_the_wait() {
        let mut rl = RateLimiter::new(only_principal("3/s"));
        for _ in 0..3 {
            rl.check(call("alice", "t"), 10_000).unwrap();
        }
        let r = rl.check(call("alice", "t"), 10_000).unwrap_err();
        assert_eq!(r.limit, "policy.rateLimits.toolCalls.perPrincipal (3/s)");
        // One token every 333.3 ms.
        assert_eq!(r.retry_after_ms, 334);
        assert_eq!(r.retry_after_secs(), 1);
        assert_eq!(r.to_string(), "rate limit policy.rateLimits.toolCalls.perPrincipal (3/s) reached; retry after 334 ms");
        assert_eq!(r.data(), serde_json::json!({"limit": r.limit, "retryAfterMs": 334}));
        // Another principal has its own bucket.
        rl.check(call("bob", "t"), 10_000).unwrap();
        // Not yet at 333 ms, then at the promised time.
        assert!(rl.check(call("alice", "t"), 10_333).is_err());
        rl.check(call("alice", "t"), 10_334).unwrap();
        assert!(rl.check(call("alice", "t"), 10_334).is_err());
        // A whole idle period refills the burst, never more.
        for _ in 0..3 {
            rl.check(call("alice", "t"), 60_000).unwrap();
        }
        assert!(rl.check(call("alice", "t"), 60_000).is_err());
    }

    #[test]
    fn retry_after_seconds_round_up() {
        let r = |ms| Refusal { limit: String::new(), retry_after_ms: ms };
        assert_eq!(r(0).retry_after_secs(), 1);
        assert_eq!(r(1000).retry_after_secs(), 1);
        assert_eq!(r(1001).retry_after_secs(), 2);
        assert_eq!(r(59_999).retry_after_secs(), 60);
    }

    #[test]
    fn a_refused_request_takes_no_token_from_the_other_buckets() {
        let mut c = only_principal("10/s");
        c.tool_calls.per_server = Some(Rate::parse("2/s").unwrap());
        let mut rl = RateLimiter::new(c);
        rl.check(call("alice", "t"), 0).unwrap();
        rl.check(call("alice", "t"), 0).unwrap();
        let r = rl.check(call("alice", "t"), 0).unwrap_err();
        assert!(r.limit.starts_with("policy.rateLimits.toolCalls.perServer (2/s)"), "{}", r.limit);
        assert_eq!(r.retry_after_ms, 500);
        // Eight refused calls later alice's own bucket still has 8 tokens.
        for _ in 0..8 {
            assert!(rl.check(call("alice", "t"), 0).is_err());
        }
        let mut n = 0;
        for t in (1000..=4000).step_by(1000) {
            while rl.check(call("alice", "t"), t).is_ok() {
                n += 1;
            }
        }
        // 2/s on the server for 4 s, capped by alice's 10 tokens plus refill.
        assert_eq!(n, 8);
    }

    #[test]
    fn tool_globs_first_match_each_tool_its_own_bucket() {
        let mut c = RateLimitConfig::off();
        c.tool_calls.per_tool = vec![("gh__delete_*".into(), Rate::parse("1/min").unwrap()), ("gh__*".into(), Rate::parse("2/min").unwrap())];
        let mut rl = RateLimiter::new(c);
        rl.check(call("a", "gh__delete_repo"), 0).unwrap();
        let r = rl.check(call("b", "gh__delete_repo"), 0).unwrap_err();
        assert_eq!(r.limit, "policy.rateLimits.toolCalls.perTool[\"gh__delete_*\"] (1/min)");
        assert_eq!(r.retry_after_ms, 60_000);
        assert_eq!(r.retry_after_secs(), 60);
        rl.check(call("a", "gh__delete_branch"), 0).unwrap();
        rl.check(call("a", "gh__list"), 0).unwrap();
        rl.check(call("a", "gh__list"), 0).unwrap();
        assert!(rl.check(call("a", "gh__list"), 0).is_err());
        // Unmatched tools are unlimited.
        for _ in 0..100 {
            rl.check(call("a", "fs__read"), 0).unwrap();
        }
    }

    #[test]
    fn classes_are_separate_and_off_means_off() {
        let mut rl = RateLimiter::new(only_principal("1/h"));
        rl.check(call("a", "t"), 0).unwrap();
        assert!(rl.check(call("a", "t"), 0).is_err());
        for _ in 0..1000 {
            rl.check(Key { class: Class::Completion, principal: "a", server: "s", tool: "" }, 0).unwrap();
        }
        let mut off = RateLimiter::new(RateLimitConfig::off());
        for _ in 0..10_000 {
            off.check(call("a", "t"), 0).unwrap();
        }
        assert!(off.is_empty());
    }

    #[test]
    fn defaults_let_normal_use_through_and_stop_a_loop() {
        let mut rl = RateLimiter::new(RateLimitConfig::default());
        // Ten calls a second for a minute.
        for i in 0..600 {
            rl.check(call("a", "t"), i * 100).unwrap();
        }
        // A tight loop is stopped within the second.
        let refused = (0..1000).filter(|_| rl.check(call("a", "t"), 70_000).is_err()).count();
        assert_eq!(refused, 900);
        let sr = Key { class: Class::ServerRequest, principal: "a", server: "s", tool: "" };
        assert_eq!((0..30).filter(|_| rl.check(sr, 0).is_ok()).count(), 20);
    }

    #[test]
    fn the_table_is_capped_and_evicts_the_least_recently_used_idle_bucket() {
        let mut c = only_principal("2/s");
        c.max_buckets = 3;
        let mut rl = RateLimiter::new(c);
        // a and b busy (a token taken), c idle after its refill.
        rl.check(call("a", "t"), 0).unwrap();
        rl.check(call("c", "t"), 0).unwrap();
        rl.check(call("b", "t"), 400).unwrap();
        rl.check(call("a", "t"), 500).unwrap();
        // At 900: a is empty-ish and busy, b busy, c refilled at 500 → idle.
        rl.check(call("d", "t"), 900).unwrap();
        assert_eq!(rl.len(), 3);
        assert_eq!(rl.evictions(), 1);
        // a kept its state: its second token was taken at 500, so it has
        // 1.8 tokens at 900, and one more call makes it wait.
        rl.check(call("a", "t"), 900).unwrap();
        let r = rl.check(call("a", "t"), 900).unwrap_err();
        assert_eq!(r.retry_after_ms, 100);
        // With none idle, the least recently used goes (b, used at 400).
        rl.check(call("e", "t"), 900).unwrap();
        assert_eq!(rl.len(), 3);
        assert_eq!(rl.evictions(), 2);
        // A flood of new principals never grows the table past the cap.
        for i in 0..1000 {
            rl.check(call(&format!("p{i}"), "t"), 1000 + i).unwrap();
        }
        assert_eq!(rl.len(), 3);
    }

    #[test]
    fn notifications_are_capped_per_request() {
        let mut cfg = RateLimitConfig::off();
        cfg.progress_per_request = Some(2);
        let mut b = NotificationBudget::default();
        b.admit(Notification::Progress, &cfg).unwrap();
        b.admit(Notification::Progress, &cfg).unwrap();
        let d = b.admit(Notification::Progress, &cfg).unwrap_err();
        assert_eq!(d, Dropped { limit: "policy.rateLimits.progressPerRequest (2)".into(), first: true });
        assert!(!b.admit(Notification::Progress, &cfg).unwrap_err().first);
        // Logs are uncapped here; a new request starts from zero.
        for _ in 0..100 {
            b.admit(Notification::Log, &cfg).unwrap();
        }
        NotificationBudget::default().admit(Notification::Progress, &cfg).unwrap();
    }

    #[test]
    fn one_principal_cannot_take_the_whole_quota() {
        let mut q = Quota::new("held calls", 4, 2);
        q.acquire("a").unwrap();
        q.acquire("a").unwrap();
        let e = q.acquire("a").unwrap_err();
        assert_eq!(
            e.to_string(),
            "limit of held calls reached: \"a\" holds its share of 2 (of 4 for all clients); finish or cancel some first"
        );
        q.acquire("b").unwrap();
        q.acquire("c").unwrap();
        let e = q.acquire("d").unwrap_err();
        assert_eq!(e, QuotaRefusal::Global { name: "held calls", global: 4, principal: "d".into(), held: 0 });
        assert_eq!(e.to_string(), "limit of held calls reached: all 4 are in use (\"d\" holds 0); retry later");
        q.release("a");
        q.acquire("d").unwrap();
        assert_eq!((q.total(), q.held("a"), q.held("d")), (4, 1, 1));
        q.release("nobody");
        assert_eq!(q.total(), 4);
    }
}
