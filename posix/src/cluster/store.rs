//! The shared state of replicas in Redis (or Valkey, same protocol): the
//! executor of the hub's shared-state asks. Three operations, each one
//! round trip, each bounded by [`OP_TIMEOUT`]:
//!
//! - a single-use nonce: `SET mcpx:n:NONCE 1 NX PX ttl` (granted when the
//!   key was not there, so a `requestState` used on one replica is refused
//!   on every other);
//! - a token bucket: one Lua script (`EVALSHA`, `EVAL` when Redis does not
//!   know it yet), atomic on the Redis side, so every replica draws from the
//!   same bucket;
//! - a put with expiry: `SET mcpx:k:KEY VALUE PX ttl`.
//!
//! One multiplexed connection per replica. When it is lost (or an ask times
//! out), every ask in flight and every ask until a new connection is up
//! fails with [`Unavailable`], at once: nothing waits for Redis longer than
//! [`OP_TIMEOUT`], and an unanswered nonce claim is never taken for a
//! grant. Connection attempts are spaced by the project's backoff
//! (doubling up to [`RECONNECT`]'s max); an attempt is made by the first ask
//! after the delay.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, FromRedisValue, RedisError, RedisResult};
use smol::future::FutureExt as _;
use smol::lock::Mutex;
use smol::Timer;

use crate::backoff::{Backoff, Policy};

/// The bound of one ask, connecting included.
pub const OP_TIMEOUT: Duration = Duration::from_millis(500);

/// The spacing of connection attempts after a failed one.
const RECONNECT: Policy = Policy {
    min: Duration::from_millis(100),
    max: Duration::from_secs(5),
    stable_after: Duration::from_secs(10),
    max_restarts: u32::MAX,
};

/// Prefixes of mcpx's keys, so a Redis database can be shared with others.
const NONCE_PREFIX: &str = "mcpx:n:";
const BUCKET_PREFIX: &str = "mcpx:b:";
const KEY_PREFIX: &str = "mcpx:k:";

/// The token bucket: KEYS[1] a hash {t: tokens, at: ms of the last refill};
/// ARGV capacity, refill per second, now (ms). Returns 1 when a token was
/// taken. The key expires once the bucket would be full again, so idle
/// buckets do not accumulate.
const BUCKET_LUA: &str = r#"
local cap = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local s = redis.call('HMGET', KEYS[1], 't', 'at')
local tokens = tonumber(s[1])
local at = tonumber(s[2])
if tokens == nil or at == nil then
  tokens = cap
  at = now
end
if now > at then
  tokens = math.min(cap, tokens + (now - at) * rate / 1000)
  at = now
end
local ok = 0
if tokens >= 1 then
  tokens = tokens - 1
  ok = 1
end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'at', tostring(at))
local full_ms = math.ceil((cap - tokens) * 1000 / math.max(rate, 0.001)) + 1000
redis.call('PEXPIRE', KEYS[1], full_ms)
return ok
"#;

/// Redis could not be asked: the reason, for the affected request's error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The state of the one connection.
enum Link {
    Up { conn: MultiplexedConnection, since: Instant, generation: u64 },
    /// No connection; the next attempt not before `retry_at`.
    Down { retry_at: Instant, reason: String },
}

/// A bad `state.url`.
#[derive(Debug)]
pub struct BadUrl(pub String);

/// The shared-state store of one replica.
pub struct Store {
    client: redis::Client,
    /// The URL without credentials, for messages.
    shown: String,
    link: RefCell<Link>,
    generations: Cell<u64>,
    backoff: RefCell<Backoff>,
    /// One connection attempt at a time.
    connecting: Mutex<()>,
    bucket: redis::Script,
}

impl Store {
    /// A store for `url` (`redis://[user:password@]host:port/db`); connects
    /// on the first ask.
    pub fn new(url: &str) -> Result<Store, BadUrl> {
        let client = redis::Client::open(url).map_err(|e| BadUrl(format!("state.url: {e}")))?;
        Ok(Store {
            client,
            shown: without_credentials(url),
            link: RefCell::new(Link::Down { retry_at: Instant::now(), reason: "not connected yet".into() }),
            generations: Cell::new(0),
            backoff: RefCell::new(Backoff::new(&RECONNECT)),
            connecting: Mutex::new(()),
            bucket: redis::Script::new(BUCKET_LUA),
        })
    }

    /// Claims single-use `nonce` for `ttl_ms`: `Ok(true)` for the first
    /// claim anywhere, `Ok(false)` for every later one.
    pub async fn claim_nonce(&self, nonce: &str, ttl_ms: u64) -> Result<bool, Unavailable> {
        let key = format!("{NONCE_PREFIX}{nonce}");
        let set: Option<String> = self
            .ask(|mut c| async move {
                redis::cmd("SET").arg(key).arg(1).arg("NX").arg("PX").arg(ttl_ms.max(1)).query_async(&mut c).await
            })
            .await?;
        Ok(set.is_some())
    }

    /// Takes one token of `bucket` (refilled at `refill_per_s` up to
    /// `capacity`, as of `now_ms`): `Ok(true)` when there was one.
    pub async fn take_token(
        &self,
        bucket: &str,
        capacity: u32,
        refill_per_s: f64,
        now_ms: u64,
    ) -> Result<bool, Unavailable> {
        let key = format!("{BUCKET_PREFIX}{bucket}");
        let took: i64 = self
            .ask(|mut c| async move {
                self.bucket.key(key).arg(capacity).arg(refill_per_s).arg(now_ms).invoke_async(&mut c).await
            })
            .await?;
        Ok(took == 1)
    }

    /// Stores `value` under `key` for `ttl_ms`.
    pub async fn put(&self, key: &str, value: &[u8], ttl_ms: u64) -> Result<(), Unavailable> {
        let key = format!("{KEY_PREFIX}{key}");
        let value = value.to_vec();
        let _: () = self
            .ask(|mut c| async move {
                redis::cmd("SET").arg(key).arg(value).arg("PX").arg(ttl_ms.max(1)).query_async(&mut c).await
            })
            .await?;
        Ok(())
    }

    /// Runs `f` on the connection (connecting first if needed), within
    /// [`OP_TIMEOUT`]. A failure or a timeout drops the connection, so the
    /// asks after it reconnect rather than wait on a dead socket.
    async fn ask<T, F, Fut>(&self, f: F) -> Result<T, Unavailable>
    where
        T: FromRedisValue,
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let generation = Cell::new(None);
        let work = async {
            let (conn, g) = self.connection().await?;
            generation.set(Some(g));
            f(conn).await.map_err(|e| self.lost(g, &e))
        };
        let timeout = async {
            Timer::after(OP_TIMEOUT).await;
            let reason = format!("no answer within {} ms", OP_TIMEOUT.as_millis());
            if let Some(g) = generation.get() {
                self.drop_link(g, &reason);
            }
            Err(Unavailable(format!("shared state (Redis at {}): {reason}", self.shown)))
        };
        work.or(timeout).await
    }

    /// The live connection and its generation, or a new one.
    async fn connection(&self) -> Result<(MultiplexedConnection, u64), Unavailable> {
        if let Some(up) = self.up() {
            return Ok(up);
        }
        let _one = self.connecting.lock().await;
        if let Some(up) = self.up() {
            return Ok(up);
        }
        if let Link::Down { retry_at, reason } = &*self.link.borrow() {
            let now = Instant::now();
            if now < *retry_at {
                return Err(Unavailable(format!(
                    "shared state (Redis at {}) unavailable: {reason}; next connection attempt in {} ms",
                    self.shown,
                    (*retry_at - now).as_millis()
                )));
            }
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(OP_TIMEOUT))
            .set_response_timeout(Some(OP_TIMEOUT));
        match self.client.get_multiplexed_async_connection_with_config(&config).await {
            Ok(conn) => {
                let generation = self.generations.get() + 1;
                self.generations.set(generation);
                *self.link.borrow_mut() = Link::Up { conn: conn.clone(), since: Instant::now(), generation };
                info!("shared state: connected to Redis at {}", self.shown);
                Ok((conn, generation))
            }
            Err(e) => {
                let delay = self.backoff.borrow_mut().delay(Instant::now());
                let reason = format!("cannot connect: {e}");
                *self.link.borrow_mut() = Link::Down { retry_at: Instant::now() + delay, reason: reason.clone() };
                Err(Unavailable(format!("shared state (Redis at {}) unavailable: {reason}", self.shown)))
            }
        }
    }

    fn up(&self) -> Option<(MultiplexedConnection, u64)> {
        match &*self.link.borrow() {
            Link::Up { conn, generation, .. } => Some((conn.clone(), *generation)),
            Link::Down { .. } => None,
        }
    }

    /// An ask on connection `generation` failed with `e`.
    fn lost(&self, generation: u64, e: &RedisError) -> Unavailable {
        let reason = e.to_string();
        if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_unrecoverable_error() {
            self.drop_link(generation, &reason);
        }
        Unavailable(format!("shared state (Redis at {}): {reason}", self.shown))
    }

    /// Drops connection `generation` (if it is still the live one); the
    /// next ask reconnects at once, or after the backoff delay when the
    /// connection had not lasted.
    fn drop_link(&self, generation: u64, reason: &str) {
        let mut link = self.link.borrow_mut();
        let Link::Up { since, generation: live, .. } = &*link else { return };
        if *live != generation {
            return;
        }
        let since = *since;
        let mut backoff = self.backoff.borrow_mut();
        let retry_at = if since.elapsed() >= RECONNECT.stable_after {
            backoff.reset();
            Instant::now()
        } else {
            Instant::now() + backoff.delay(since)
        };
        warn!("shared state: lost Redis at {}: {reason}", self.shown);
        *link = Link::Down { retry_at, reason: format!("connection lost: {reason}") };
    }
}

/// `url` with any `user:password@` left out.
fn without_credentials(url: &str) -> String {
    match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, _)), Some(at)) => format!("{scheme}://{}", &url[at + 1..]),
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests;
