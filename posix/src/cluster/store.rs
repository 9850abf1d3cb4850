//! The shared state of replicas in Redis (or Valkey, same protocol): the
//! executor of the hub's shared-state asks. Each operation is one
//! round trip, each bounded by [`OP_TIMEOUT`]:
//!
//! - a single-use nonce: `SET KEY 1 NX PX ttl` (granted when the key was
//!   not there, so a `requestState` used on one replica is refused on every
//!   other; row mrtr-single-use-enforced);
//! - token buckets, all or none: one Lua script (`EVALSHA`, `EVAL` when
//!   Redis does not know it yet), atomic on the Redis side and on its clock,
//!   so every replica draws from the same buckets;
//! - a put: `SET KEY VALUE [PX ttl]`;
//! - for the runtime's own use (not the hub's): a get of several keys at
//!   once (one round trip), and, each one Lua script, a delete only while a
//!   key still holds a value and a put only while a key (the same or
//!   another) holds one: a compare-and-set;
//! - for a value every replica edits (the shared pins), a read that
//!   answers "the same" without fetching the value while it still holds the
//!   one known (its MAC, and its length, are compared in Redis), and a
//!   compare-and-set on whatever the read found: nothing, that value, or
//!   one that does not verify (replaced, having been ignored).
//!
//! The key names are the hub's (`hub::shared`). Every value is sealed when
//! put and checked when got ([`super::sealed`]): a get fetches only values
//! within their kind's bound (one Lua script asks each length first), and
//! one that is too large or does not verify is ignored, as if absent, with
//! a warning naming its key (once per key).
//!
//! One multiplexed connection per replica. When it is lost (or an ask times
//! out), every ask in flight and every ask until a new connection is up
//! fails with [`Answer::Unavailable`], at once: nothing waits for Redis longer than
//! [`OP_TIMEOUT`], and an unanswered nonce claim is never taken for a
//! grant. Connection attempts are spaced by the project's backoff
//! (doubling up to [`RECONNECT`]'s max); an attempt is made by the first ask
//! after the delay.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::future::Future;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, FromRedisValue, RedisError, RedisResult, Value};
use smol::future::FutureExt as _;
use smol::lock::Mutex;
use smol::Timer;

use super::sealed::{self, Rejected, ValueKey};
use crate::servers::backoff::{Backoff, Policy};
use crate::hub::shared::{Answer, Bucket, Op};

/// The bound of one ask, connecting included.
pub const OP_TIMEOUT: Duration = Duration::from_millis(500);

/// The spacing of connection attempts after a failed one.
const RECONNECT: Policy = Policy {
    min: Duration::from_millis(100),
    max: Duration::from_secs(5),
    stable_after: Duration::from_secs(10),
    max_restarts: u32::MAX,
};

/// The token buckets, all or none: KEYS the buckets (hashes {t: tokens,
/// at: ms of the last refill}); ARGV capacity and period (ms) of each, in
/// KEYS' order. On Redis's clock (`TIME`), since the replicas' clocks are
/// not one clock. Returns {1, 0} when a token was taken from each, else
/// {0, ms until the emptiest has one again} and nothing is taken. A bucket
/// expires once it would be full again, so idle buckets do not accumulate.
const BUCKETS_LUA: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = #KEYS
local tokens = {}
local wait = 0
for i = 1, n do
  local cap = tonumber(ARGV[2 * i - 1])
  local period = math.max(tonumber(ARGV[2 * i]), 1)
  local s = redis.call('HMGET', KEYS[i], 't', 'at')
  local have = tonumber(s[1])
  local at = tonumber(s[2])
  if have == nil or at == nil then
    have = cap
  elseif now > at then
    have = math.min(cap, have + (now - at) * cap / period)
  end
  tokens[i] = have
  if have < 1 then
    wait = math.max(wait, math.ceil((1 - have) * period / math.max(cap, 1)))
  end
end
if wait > 0 then
  return {0, wait}
end
for i = 1, n do
  local cap = tonumber(ARGV[2 * i - 1])
  local period = math.max(tonumber(ARGV[2 * i]), 1)
  local left = tokens[i] - 1
  redis.call('HSET', KEYS[i], 't', tostring(left), 'at', tostring(now))
  redis.call('PEXPIRE', KEYS[i], math.ceil((cap - left) * period / math.max(cap, 1)) + 1000)
end
return {1, 0}
"#;

/// The values of KEYS within their bounds (ARGV, in KEYS' order): each a
/// string, nil when absent, or its length when over the bound (not
/// fetched), -1 when it is not a string.
const GET_BOUNDED_LUA: &str = r#"
local out = {}
for i = 1, #KEYS do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t == 'none' then
    out[i] = false
  elseif t ~= 'string' then
    out[i] = -1
  else
    local n = redis.call('STRLEN', KEYS[i])
    if n > tonumber(ARGV[i]) then
      out[i] = n
    else
      out[i] = redis.call('GET', KEYS[i])
    end
  end
end
return out
"#;

/// Keys whose rejected value is remembered as warned about, at most;
/// beyond, rejections are only counted.
const MAX_WARNED: usize = 1024;

/// Deletes KEYS (all of them) only while KEYS[1] holds ARGV[1]; 1 when it
/// did.
const DELETE_IF_LUA: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', unpack(KEYS))
  return 1
end
return 0
"#;

/// Sets KEYS[2] to ARGV[2] for ARGV[3] ms only while KEYS[1] holds ARGV[1]
/// (KEYS[1] may be KEYS[2]: a compare-and-set); 1 when it did.
const PUT_IF_LUA: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
"#;

/// The key's value (KEYS[1]) unless it holds the one known: ARGV[1] is the
/// bound (stored), ARGV[2] the start of the value known as stored (its tag
/// and MAC; '' for none) and ARGV[3] its length. {0}: absent; {1}: the one
/// known; {2, value}; {3, length}: over the bound (not fetched); {4}: not
/// a string.
const READ_LUA: &str = r#"
local t = redis.call('TYPE', KEYS[1])['ok']
if t == 'none' then
  return {0}
end
if t ~= 'string' then
  return {4}
end
local n = redis.call('STRLEN', KEYS[1])
if ARGV[2] ~= '' and n == tonumber(ARGV[3]) and redis.call('GETRANGE', KEYS[1], 0, #ARGV[2] - 1) == ARGV[2] then
  return {1}
end
if n > tonumber(ARGV[1]) then
  return {3, n}
end
return {2, redis.call('GET', KEYS[1])}
"#;

/// Sets KEYS[1] to ARGV[3] (no expiry) only while it holds what a read
/// found: ARGV[1] 'absent' (nothing), 'value' (ARGV[2], as stored) or
/// 'over' (a value over the bound ARGV[2], or not a string); 1 when it did.
const SWAP_LUA: &str = r#"
local t = redis.call('TYPE', KEYS[1])['ok']
local ok = false
if ARGV[1] == 'absent' then
  ok = t == 'none'
elseif ARGV[1] == 'value' then
  ok = t == 'string' and redis.call('GET', KEYS[1]) == ARGV[2]
else
  ok = t ~= 'none' and (t ~= 'string' or redis.call('STRLEN', KEYS[1]) > tonumber(ARGV[2]))
end
if ok then
  redis.call('SET', KEYS[1], ARGV[3])
  return 1
end
return 0
"#;

/// What a key held when read ([`Store::read`]): the expectation of a
/// [`Store::swap`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Held {
    Absent,
    /// A value a replica sealed, opened.
    Value(Vec<u8>),
    /// One that does not verify (ignored, with a warning), as stored;
    /// `None` when it was not fetched (over the bound, or not a string).
    Rejected(Option<Vec<u8>>),
}

/// What [`Store::read`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    /// The value known, still.
    Same,
    Now(Held),
}

/// Redis could not be asked: the reason, for the affected request's error
/// ([`Answer::Unavailable`]).
#[derive(Debug)]
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
    buckets: redis::Script,
    delete_if: redis::Script,
    put_if: redis::Script,
    get_bounded: redis::Script,
    read: redis::Script,
    swap: redis::Script,
    /// Seals and checks the values.
    seal: ValueKey,
    /// The keys whose value was rejected and warned about.
    warned: RefCell<HashSet<String>>,
    /// Values rejected so far.
    rejected: Cell<u64>,
}

impl Store {
    /// A store for `url` (`redis://[user:password@]host:port/db`) whose
    /// values are sealed under `state_key` (the replicas' shared key);
    /// connects on the first ask.
    pub fn new(url: &str, state_key: &[u8; 32]) -> Result<Store, BadUrl> {
        let client = redis::Client::open(url).map_err(|e| BadUrl(format!("state.url: {e}")))?;
        Ok(Store {
            client,
            shown: without_credentials(url),
            link: RefCell::new(Link::Down { retry_at: Instant::now(), reason: "not connected yet".into() }),
            generations: Cell::new(0),
            backoff: RefCell::new(Backoff::new(&RECONNECT)),
            connecting: Mutex::new(()),
            buckets: redis::Script::new(BUCKETS_LUA),
            delete_if: redis::Script::new(DELETE_IF_LUA),
            put_if: redis::Script::new(PUT_IF_LUA),
            get_bounded: redis::Script::new(GET_BOUNDED_LUA),
            read: redis::Script::new(READ_LUA),
            swap: redis::Script::new(SWAP_LUA),
            seal: ValueKey::derive(state_key),
            warned: RefCell::new(HashSet::new()),
            rejected: Cell::new(0),
        })
    }

    /// Executes one ask of the hub.
    pub async fn execute(&self, op: &Op) -> Answer {
        let done = match op {
            Op::ClaimNonce { ttl_ms, .. } => {
                let key = op.key().unwrap_or_default();
                self.claim(key, *ttl_ms).await.map(|first| if first { Answer::Granted } else { Answer::Refused { retry_after_ms: 0 } })
            }
            Op::TakeTokens { buckets } => self.take_tokens(buckets).await,
            Op::Put { key, value, ttl_ms } => self.put(key, value, *ttl_ms).await.map(|()| Answer::Granted),
            Op::Get { key } => self.get(key).await.map(Answer::Value),
        };
        done.unwrap_or_else(|Unavailable(why)| Answer::Unavailable(why))
    }

    /// `SET key 1 NX PX ttl`: true for the first claim anywhere.
    async fn claim(&self, key: String, ttl_ms: u64) -> Result<bool, Unavailable> {
        let set: Option<String> = self
            .ask(|mut c| async move {
                redis::cmd("SET").arg(key).arg(1).arg("NX").arg("PX").arg(ttl_ms.max(1)).query_async(&mut c).await
            })
            .await?;
        Ok(set.is_some())
    }

    /// One token of each bucket, or none.
    async fn take_tokens(&self, buckets: &[Bucket]) -> Result<Answer, Unavailable> {
        if buckets.is_empty() {
            return Ok(Answer::Granted);
        }
        let (took, wait): (i64, u64) = self
            .ask(|mut c| async move {
                let mut call = self.buckets.prepare_invoke();
                for b in buckets {
                    call.key(b.key()).arg(b.capacity).arg(b.period_ms);
                }
                call.invoke_async(&mut c).await
            })
            .await?;
        Ok(if took == 1 { Answer::Granted } else { Answer::Refused { retry_after_ms: wait } })
    }

    /// The value of `key`: `None` when it is not there, or not one a
    /// replica sealed (then ignored with a warning).
    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, Unavailable> {
        let mut got = self.get_all(std::slice::from_ref(&key.to_string())).await?;
        Ok(got.pop().flatten())
    }

    /// Deletes `key`, and the keys `with` it, if `key` still holds `value`
    /// (not one another replica put since); true when it did.
    pub async fn delete_if(&self, key: &str, value: &[u8], with: &[&str]) -> Result<bool, Unavailable> {
        let Ok(sealed) = self.seal.seal(key, value) else { return Ok(false) };
        let gone: i64 = self
            .ask(|mut c| async move {
                let mut call = self.delete_if.prepare_invoke();
                call.key(key);
                for k in with {
                    call.key(*k);
                }
                call.arg(sealed).invoke_async(&mut c).await
            })
            .await?;
        Ok(gone == 1)
    }

    /// Sets `key` to `value` for `ttl_ms` if `guard` (the same key, or
    /// another) still holds `expected`; true when it did. With `guard` =
    /// `key`, a compare-and-set: of two replicas swapping the same value,
    /// one does. A value over its kind's bound is not written (false, and
    /// a warning).
    pub async fn put_if(&self, guard: &str, expected: &[u8], key: &str, value: &[u8], ttl_ms: u64) -> Result<bool, Unavailable> {
        let (Ok(expected), Some(value)) = (self.seal.seal(guard, expected), self.sealed_or_warn(key, value)) else { return Ok(false) };
        let set: i64 = self
            .ask(|mut c| async move {
                self.put_if.key(guard).key(key).arg(expected).arg(value).arg(ttl_ms.max(1)).invoke_async(&mut c).await
            })
            .await?;
        Ok(set == 1)
    }

    /// Each key's value, in one round trip: `None` where it is not there,
    /// or is not one a replica sealed (ignored with a warning).
    pub async fn get_all(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, Unavailable> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let got: Vec<Value> = self
            .ask(|mut c| async move {
                let mut call = self.get_bounded.prepare_invoke();
                for k in keys {
                    call.key(k).arg(sealed::max_stored(k));
                }
                call.invoke_async(&mut c).await
            })
            .await?;
        Ok(keys.iter().zip(got).map(|(k, v)| self.opened(k, v)).collect())
    }

    /// What `key` holds, unless it still holds `known` (a value read or
    /// written before: [`Read::Same`], and the value is not fetched). A
    /// value that does not verify is ignored with a warning, as by a get.
    pub async fn read(&self, key: &str, known: Option<&[u8]>) -> Result<Read, Unavailable> {
        let max = sealed::max_stored(key);
        let (head, len) = match known.map(|v| self.seal.seal(key, v)) {
            Some(Ok(stored)) => (stored[..sealed::OVERHEAD].to_vec(), stored.len()),
            _ => (Vec::new(), 0),
        };
        let got: Vec<Value> = self
            .ask(|mut c| async move { self.read.key(key).arg(max).arg(head).arg(len).invoke_async(&mut c).await })
            .await?;
        let held = match got.as_slice() {
            [Value::Int(0)] => Held::Absent,
            [Value::Int(1)] => return Ok(Read::Same),
            [Value::Int(2), Value::BulkString(stored)] => match self.seal.open(key, stored) {
                Ok(v) => Held::Value(v.to_vec()),
                Err(why) => {
                    self.reject(key, &why);
                    Held::Rejected(Some(stored.clone()))
                }
            },
            other => {
                let why = match other {
                    [Value::Int(3), Value::Int(n)] => Rejected::TooLarge { len: *n as usize, max: max.saturating_sub(sealed::OVERHEAD) },
                    _ => Rejected::NotAString,
                };
                self.reject(key, &why);
                Held::Rejected(None)
            }
        };
        Ok(Read::Now(held))
    }

    /// Sets `key` to `value` (no expiry) if it still holds what a read
    /// found (`held`); true when it did. A value over its kind's bound is
    /// not written (false, and a warning).
    pub async fn swap(&self, key: &str, held: &Held, value: &[u8]) -> Result<bool, Unavailable> {
        let Some(value) = self.sealed_or_warn(key, value) else { return Ok(false) };
        let (was, expected) = match held {
            Held::Absent => ("absent", Vec::new()),
            Held::Value(v) => match self.seal.seal(key, v) {
                Ok(stored) => ("value", stored),
                Err(_) => return Ok(false),
            },
            Held::Rejected(Some(stored)) => ("value", stored.clone()),
            Held::Rejected(None) => ("over", sealed::max_stored(key).to_string().into_bytes()),
        };
        let set: i64 = self
            .ask(|mut c| async move { self.swap.key(key).arg(was).arg(expected).arg(value).invoke_async(&mut c).await })
            .await?;
        Ok(set == 1)
    }

    /// Values rejected so far (read as absent).
    #[cfg(test)]
    pub fn rejected(&self) -> u64 {
        self.rejected.get()
    }

    /// What `key` held (`v`, as the bounded get answered), if it verifies.
    fn opened(&self, key: &str, v: Value) -> Option<Vec<u8>> {
        let checked = match v {
            Value::Nil => return None,
            Value::BulkString(stored) => self.seal.open(key, &stored).map(<[u8]>::to_vec),
            Value::Int(n) if n >= 0 => Err(Rejected::TooLarge { len: n as usize, max: sealed::max_stored(key).saturating_sub(sealed::OVERHEAD) }),
            _ => Err(Rejected::NotAString),
        };
        checked.map_err(|why| self.reject(key, &why)).ok()
    }

    /// A value under `key` is ignored for `why`: counted, and warned about
    /// once per key.
    fn reject(&self, key: &str, why: &Rejected) {
        self.rejected.set(self.rejected.get() + 1);
        let mut warned = self.warned.borrow_mut();
        if warned.len() < MAX_WARNED && warned.insert(key.to_string()) {
            let n = self.rejected.get();
            warn!("shared state: the value of {key} in Redis is ignored, as if absent: {why} ({n} values rejected so far)");
        }
    }

    /// `SET key value [PX ttl]` (no expiry for ttl 0), `value` sealed. One
    /// over its kind's bound is not written (a warning says so).
    pub async fn put(&self, key: &str, value: &[u8], ttl_ms: u64) -> Result<(), Unavailable> {
        let Some(value) = self.sealed_or_warn(key, value) else { return Ok(()) };
        let key = key.to_string();
        self.ask(|mut c| async move {
            let mut set = redis::cmd("SET");
            set.arg(key).arg(value);
            if ttl_ms > 0 {
                set.arg("PX").arg(ttl_ms);
            }
            set.query_async(&mut c).await
        })
        .await
    }

    /// `value` sealed for `key`; `None` (and a warning) when it cannot be.
    fn sealed_or_warn(&self, key: &str, value: &[u8]) -> Option<Vec<u8>> {
        self.seal.seal(key, value).map_err(|why| warn!("shared state: {key} is not written to Redis: {why}")).ok()
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


/// Each principal's own tokens (`"perPrincipal"` servers), kept here when
/// replicas share state: every replica's calls of a person go with them.
#[cfg(feature = "secrets")]
impl crate::remote::oauth::kept::Shared for Store {
    fn get<'a>(&'a self, key: &'a str) -> crate::remote::oauth::kept::Answer<'a, Option<Vec<u8>>> {
        Box::pin(async move { Store::get(self, key).await.map_err(|Unavailable(why)| why) })
    }

    fn put<'a>(&'a self, key: &'a str, value: &'a [u8]) -> crate::remote::oauth::kept::Answer<'a, ()> {
        Box::pin(async move { Store::put(self, key, value, 0).await.map_err(|Unavailable(why)| why) })
    }

    fn delete<'a>(&'a self, key: &'a str) -> crate::remote::oauth::kept::Answer<'a, bool> {
        Box::pin(async move {
            let Some(value) = Store::get(self, key).await.map_err(|Unavailable(why)| why)? else { return Ok(false) };
            self.delete_if(key, &value, &[]).await.map_err(|Unavailable(why)| why)
        })
    }
}

#[cfg(test)]
mod tests;
