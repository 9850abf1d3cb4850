//! The store against a real redis-server.

use std::time::{Duration, Instant};

use super::{Held, Read, Store, OP_TIMEOUT};
use crate::cluster::test_redis::Redis;
use crate::hub::shared::{Answer, Bucket, Op, PINS_KEY};

/// The replicas' shared state key.
const KEY: [u8; 32] = [3; 32];

const REFUSED: Answer = Answer::Refused { retry_after_ms: 0 };

fn two_replicas(r: &Redis) -> (Store, Store) {
    (Store::new(&r.url(), &KEY).unwrap(), Store::new(&r.url(), &KEY).unwrap())
}

fn nonce(n: u8, ttl_ms: u64) -> Op {
    Op::ClaimNonce { nonce: [n; mcpx_core::request_state::NONCE_LEN], ttl_ms }
}

fn take(buckets: &[(&str, u32, u64)]) -> Op {
    let buckets = buckets.iter().map(|&(name, capacity, period_ms)| Bucket { name: name.into(), capacity, period_ms }).collect();
    Op::TakeTokens { buckets }
}

fn is_unavailable(a: &Answer) -> bool {
    matches!(a, Answer::Unavailable(why) if why.contains("Redis at redis://127.0.0.1:"))
}

#[test]
fn a_nonce_is_granted_once_across_replicas() {
    let r = Redis::start();
    let (a, b) = two_replicas(&r);
    crate::process::reactor::block_on(async {
        assert_eq!(a.execute(&nonce(1, 60_000)).await, Answer::Granted);
        assert_eq!(b.execute(&nonce(1, 60_000)).await, REFUSED, "replayed on another replica");
        assert_eq!(a.execute(&nonce(1, 60_000)).await, REFUSED, "replayed on the same replica");
        assert_eq!(b.execute(&nonce(2, 60_000)).await, Answer::Granted);
    });
}

#[test]
fn a_nonce_expires_with_its_ttl() {
    let r = Redis::start();
    let s = Store::new(&r.url(), &KEY).unwrap();
    crate::process::reactor::block_on(async {
        assert_eq!(s.execute(&nonce(3, 50)).await, Answer::Granted);
        assert_eq!(s.execute(&nonce(3, 50)).await, REFUSED);
        smol::Timer::after(Duration::from_millis(120)).await;
        assert_eq!(s.execute(&nonce(3, 50)).await, Answer::Granted, "the key should have expired");
    });
}

#[test]
fn token_buckets_are_shared_and_all_or_none() {
    let r = Redis::start();
    let (a, b) = two_replicas(&r);
    crate::process::reactor::block_on(async {
        let minute = 60_000;
        assert_eq!(a.execute(&take(&[("alice", 2, minute)])).await, Answer::Granted);
        assert_eq!(b.execute(&take(&[("alice", 2, minute)])).await, Answer::Granted);
        match a.execute(&take(&[("alice", 2, minute)])).await {
            // Two per minute: a token every 30 s.
            Answer::Refused { retry_after_ms } => assert!((29_000..=30_000).contains(&retry_after_ms), "{retry_after_ms}"),
            other => panic!("capacity 2 spent on two replicas, got {other:?}"),
        }
        // All or none: "tool" is not drawn from when "alice" is empty.
        assert!(matches!(b.execute(&take(&[("tool", 1, minute), ("alice", 2, minute)])).await, Answer::Refused { .. }));
        assert_eq!(b.execute(&take(&[("tool", 1, minute)])).await, Answer::Granted, "nothing was taken from tool");
        assert!(matches!(a.execute(&take(&[("tool", 1, minute)])).await, Answer::Refused { .. }));
        assert_eq!(a.execute(&take(&[])).await, Answer::Granted);
    });
}

#[test]
fn a_token_bucket_refills_over_its_period() {
    let r = Redis::start();
    let s = Store::new(&r.url(), &KEY).unwrap();
    crate::process::reactor::block_on(async {
        assert_eq!(s.execute(&take(&[("fast", 1, 100)])).await, Answer::Granted);
        match s.execute(&take(&[("fast", 1, 100)])).await {
            Answer::Refused { retry_after_ms } => assert!((1..=100).contains(&retry_after_ms), "{retry_after_ms}"),
            other => panic!("{other:?}"),
        }
        smol::Timer::after(Duration::from_millis(150)).await;
        assert_eq!(s.execute(&take(&[("fast", 1, 100)])).await, Answer::Granted);
    });
}

#[test]
fn put_stores_with_and_without_an_expiry() {
    let r = Redis::start();
    let s = Store::new(&r.url(), &KEY).unwrap();
    let put = |key: &str, ttl_ms| Op::Put { key: key.into(), value: b"replica-2".to_vec(), ttl_ms };
    crate::process::reactor::block_on(async {
        assert_eq!(s.execute(&put("mcpx:session:abc", 30_000)).await, Answer::Granted);
        assert_eq!(s.execute(&put("mcpx:task:t1", 0)).await, Answer::Granted);
    });
    let mut c = redis::Client::open(r.url()).unwrap().get_connection().unwrap();
    let v: Vec<u8> = redis::cmd("GET").arg("mcpx:session:abc").query(&mut c).unwrap();
    assert!(v.starts_with(b"v1.") && v.ends_with(b".replica-2"), "sealed: {}", String::from_utf8_lossy(&v));
    let got = crate::process::reactor::block_on(s.get("mcpx:session:abc")).unwrap();
    assert_eq!(got.as_deref(), Some(&b"replica-2"[..]));
    let ttl: i64 = redis::cmd("PTTL").arg("mcpx:session:abc").query(&mut c).unwrap();
    assert!(ttl > 0 && ttl <= 30_000, "PTTL {ttl}");
    let ttl: i64 = redis::cmd("PTTL").arg("mcpx:task:t1").query(&mut c).unwrap();
    assert_eq!(ttl, -1, "ttl 0 is no expiry");
}

/// What another writer put in Redis: read as absent, never believed; a
/// value over its kind's bound is not even fetched.
#[test]
fn values_that_do_not_verify_are_absent() {
    let r = Redis::start();
    let s = Store::new(&r.url(), &KEY).unwrap();
    let other_cluster = Store::new(&r.url(), &[4; 32]).unwrap();
    let mut c = redis::Client::open(r.url()).unwrap().get_connection().unwrap();
    let mut set = |k: &str, v: &[u8]| redis::cmd("SET").arg(k).arg(v).exec(&mut c).unwrap();
    let forged = br#"{"owner":"r1","task":{"principal":"746f6b656e3a626f62"}}"#;
    set("mcpx:task:plain", forged);
    set("mcpx:task:big", &vec![b'x'; 8 << 20]);
    let mut sealed_elsewhere = Vec::new();
    crate::process::reactor::block_on(async {
        s.put("mcpx:task:moved", forged, 0).await.unwrap();
        other_cluster.put("mcpx:task:other", forged, 0).await.unwrap();
        // A listing within the bound, sealed: read back; one over the bound
        // is not written.
        s.put("mcpx:lists:6f6b", b"{}", 0).await.unwrap();
        s.put("mcpx:lists:626967", &vec![b' '; (1 << 20) + 1], 0).await.unwrap();
        sealed_elsewhere = s.get_all(&["mcpx:task:moved".into()]).await.unwrap().remove(0).unwrap();
    });
    assert_eq!(sealed_elsewhere, forged);
    let stored: Vec<u8> = redis::cmd("GET").arg("mcpx:task:moved").query(&mut c).unwrap();
    redis::cmd("SET").arg("mcpx:task:copied").arg(stored).exec(&mut c).unwrap();
    redis::cmd("HSET").arg("mcpx:task:hash").arg("f").arg("v").exec(&mut c).unwrap();
    let keys: Vec<String> = ["plain", "big", "other", "copied", "hash", "absent"].iter().map(|k| format!("mcpx:task:{k}")).collect();
    let t0 = Instant::now();
    let got = crate::process::reactor::block_on(s.get_all(&keys)).unwrap();
    assert!(t0.elapsed() < OP_TIMEOUT, "{:?}", t0.elapsed());
    assert_eq!(got, vec![None; 6], "unsealed, 8 MiB, another cluster's key, moved from another key, not a string, absent");
    assert_eq!(crate::process::reactor::block_on(s.get("mcpx:task:plain")).unwrap(), None);
    assert_eq!(crate::process::reactor::block_on(s.get("mcpx:lists:6f6b")).unwrap().as_deref(), Some(&b"{}"[..]));
    let big: Option<Vec<u8>> = redis::cmd("GET").arg("mcpx:lists:626967").query(&mut c).unwrap();
    assert_eq!(big, None, "a listing over 1 MiB is not written");
}

#[test]
fn redis_away_gives_fast_errors_never_a_grant_and_service_resumes() {
    let mut r = Redis::start();
    let s = Store::new(&r.url(), &KEY).unwrap();
    crate::process::reactor::block_on(async {
        assert_eq!(s.execute(&nonce(1, 60_000)).await, Answer::Granted);
        r.stop();
        // In flight or next: a clear error, within the bound, never a grant
        // (not even of a nonce never seen).
        for i in 0..5 {
            let t0 = Instant::now();
            let got = s.execute(&nonce(10 + i, 60_000)).await;
            assert!(t0.elapsed() < OP_TIMEOUT + Duration::from_millis(200), "took {:?}", t0.elapsed());
            assert!(is_unavailable(&got), "Redis is down, got {got:?}");
        }
        r.restart();
        // Reconnects within the backoff's bound (a few attempts failed so far).
        let t0 = Instant::now();
        loop {
            let got = s.execute(&nonce(20, 60_000)).await;
            if got == Answer::Granted {
                break;
            }
            assert!(is_unavailable(&got), "{got:?}");
            assert!(t0.elapsed() < Duration::from_secs(8), "no reconnection: {got:?}");
            smol::Timer::after(Duration::from_millis(50)).await;
        }
    });
}

#[test]
fn an_unreachable_redis_fails_fast() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let s = Store::new(&format!("redis://127.0.0.1:{port}/0"), &KEY).unwrap();
    crate::process::reactor::block_on(async {
        let t0 = Instant::now();
        let got = s.execute(&take(&[("b", 1, 1000)])).await;
        assert!(t0.elapsed() <= OP_TIMEOUT + Duration::from_millis(200));
        assert!(matches!(&got, Answer::Unavailable(why) if why.contains("cannot connect")), "{got:?}");
        // Within the backoff delay: refused at once, saying when the next
        // attempt is.
        let got = s.execute(&nonce(1, 1000)).await;
        assert!(matches!(&got, Answer::Unavailable(why) if why.contains("next connection attempt")), "{got:?}");
    });
}

#[test]
fn a_bad_url_is_refused_up_front() {
    assert!(Store::new("http://example.org/", &KEY).is_err());
    assert_eq!(super::without_credentials("redis://u:secret@h:1/0"), "redis://h:1/0");
}

#[test]
fn a_value_put_by_one_replica_is_read_and_deleted_by_another_only_while_it_holds_that_value() {
    let r = Redis::start();
    let (a, b) = two_replicas(&r);
    crate::process::reactor::block_on(async {
        assert_eq!(b.get("mcpx:session:k").await.unwrap(), None);
        a.put("mcpx:session:k", b"r1", 60_000).await.unwrap();
        assert_eq!(b.get("mcpx:session:k").await.unwrap().as_deref(), Some(&b"r1"[..]));
        assert!(!b.delete_if("mcpx:session:k", b"r2", &[]).await.unwrap(), "not while it holds another value");
        assert!(b.delete_if("mcpx:session:k", b"r1", &[]).await.unwrap());
        assert_eq!(a.get("mcpx:session:k").await.unwrap(), None);
        a.put("mcpx:session:short", b"x", 50).await.unwrap();
        smol::Timer::after(Duration::from_millis(120)).await;
        assert_eq!(b.get("mcpx:session:short").await.unwrap(), None, "expired with its ttl");
    });
}

#[test]
fn a_compare_and_set_is_won_by_one_replica_and_a_guarded_put_needs_its_guard() {
    let r = Redis::start();
    let (a, b) = two_replicas(&r);
    let (entry, state) = ("mcpx:session:s", "mcpx:session-state:s");
    crate::process::reactor::block_on(async {
        a.put(entry, b"r1", 60_000).await.unwrap();
        // r1 is gone: two replicas take the entry over at once, one does.
        let (x, y) = smol::future::zip(a.put_if(entry, b"r1", entry, b"r2", 60_000), b.put_if(entry, b"r1", entry, b"r3", 60_000)).await;
        assert_ne!(x.unwrap(), y.unwrap(), "exactly one claim succeeds");
        let winner = a.get(entry).await.unwrap().unwrap();
        assert!(winner == b"r2" || winner == b"r3", "{winner:?}");
        // A value written only while the entry names its writer.
        assert!(!a.put_if(entry, b"r1", state, b"{}", 60_000).await.unwrap(), "not by the gone owner");
        assert_eq!(b.get(state).await.unwrap(), None);
        assert!(b.put_if(entry, &winner, state, b"{\"x\":1}", 60_000).await.unwrap());
        assert_eq!(a.get(state).await.unwrap().as_deref(), Some(&b"{\"x\":1}"[..]));
        // Both go together, only while the entry names the one deleting.
        assert!(!a.delete_if(entry, b"r1", &[state]).await.unwrap());
        assert!(a.get(state).await.unwrap().is_some());
        assert!(a.delete_if(entry, &winner, &[state]).await.unwrap());
        assert_eq!((b.get(entry).await.unwrap(), b.get(state).await.unwrap()), (None, None));
        // No entry at all: nothing to take over.
        assert!(!a.put_if(entry, b"r1", entry, b"r2", 60_000).await.unwrap());
        // Over its kind's bound: not written.
        a.put(entry, b"r1", 60_000).await.unwrap();
        assert!(!a.put_if(entry, b"r1", state, &vec![b'x'; (64 << 10) + 1], 60_000).await.unwrap());
    });
}

/// The read and compare-and-set of a value every replica edits (the pins):
/// "the same" without the value while it holds the one known; a swap
/// only onto what the read found, by one of two replicas at once.
#[test]
fn a_read_answers_the_same_and_a_swap_needs_what_the_read_found() {
    let r = Redis::start();
    let (a, b) = two_replicas(&r);
    crate::process::reactor::block_on(async {
        assert_eq!(a.read(PINS_KEY, None).await.unwrap(), Read::Now(Held::Absent));
        let (x, y) = smol::future::zip(a.swap(PINS_KEY, &Held::Absent, b"a1"), b.swap(PINS_KEY, &Held::Absent, b"b1")).await;
        assert_ne!(x.unwrap(), y.unwrap(), "one creates it");
        let Read::Now(Held::Value(v)) = b.read(PINS_KEY, None).await.unwrap() else { panic!("a value") };
        assert_eq!(a.read(PINS_KEY, Some(&v)).await.unwrap(), Read::Same);
        assert_eq!(a.read(PINS_KEY, Some(b"older")).await.unwrap(), Read::Now(Held::Value(v.clone())));
        let held = Held::Value(v.clone());
        let (x, y) = smol::future::zip(a.swap(PINS_KEY, &held, b"a2"), b.swap(PINS_KEY, &held, b"b2")).await;
        assert_ne!(x.unwrap(), y.unwrap(), "one swaps it");
        assert!(!a.swap(PINS_KEY, &held, b"a3").await.unwrap(), "not onto a value read before");
        assert!(!a.swap(PINS_KEY, &Held::Absent, b"a3").await.unwrap(), "not onto nothing");
        let Read::Now(now) = a.read(PINS_KEY, None).await.unwrap() else { panic!("a value") };
        assert!(!a.swap(PINS_KEY, &now, &vec![b'x'; (4 << 20) + 1]).await.unwrap(), "over the bound: not written");
        assert_eq!(b.read(PINS_KEY, None).await.unwrap(), Read::Now(now));
    });
    let mut c = redis::Client::open(r.url()).unwrap().get_connection().unwrap();
    let ttl: i64 = redis::cmd("PTTL").arg(PINS_KEY).query(&mut c).unwrap();
    assert_eq!(ttl, -1, "no expiry");
}

/// A value that does not verify is read as rejected (warned about once,
/// counted) and replaced by a swap onto it; not once a replica wrote a
/// valid one meanwhile.
#[test]
fn a_rejected_value_is_replaced_by_a_swap_onto_it() {
    let r = Redis::start();
    let s = Store::new(&r.url(), &KEY).unwrap();
    let mut c = redis::Client::open(r.url()).unwrap().get_connection().unwrap();
    // (case, how it is written, fetched?)
    let cases: &[(&str, fn(&mut redis::Connection), bool)] = &[
        ("unsealed", |c| redis::cmd("SET").arg(PINS_KEY).arg(r#"{"version":1,"pins":[]}"#).exec(c).unwrap(), true),
        ("sealed with another key", |c| {
            let v = crate::cluster::sealed::ValueKey::derive(&[9; 32]).seal(PINS_KEY, b"{}").unwrap();
            redis::cmd("SET").arg(PINS_KEY).arg(v).exec(c).unwrap()
        }, true),
        ("over the bound", |c| redis::cmd("SET").arg(PINS_KEY).arg(vec![b'x'; 5 << 20]).exec(c).unwrap(), false),
        ("not a string", |c| redis::cmd("HSET").arg(PINS_KEY).arg("f").arg("v").exec(c).unwrap(), false),
    ];
    for (i, (case, write, fetched)) in cases.iter().enumerate() {
        redis::cmd("DEL").arg(PINS_KEY).exec(&mut c).unwrap();
        write(&mut c);
        let t0 = Instant::now();
        let Read::Now(Held::Rejected(raw)) = crate::process::reactor::block_on(s.read(PINS_KEY, Some(b"mine"))).unwrap() else { panic!("{case}") };
        assert!(t0.elapsed() < OP_TIMEOUT, "{case}: {:?}", t0.elapsed());
        assert_eq!(raw.is_some(), *fetched, "{case}");
        assert_eq!(s.rejected(), i as u64 + 1, "{case}: counted");
        let held = Held::Rejected(raw);
        let other = Store::new(&r.url(), &KEY).unwrap();
        crate::process::reactor::block_on(async {
            assert!(s.swap(PINS_KEY, &held, b"mine").await.unwrap(), "{case}: replaced");
            assert_eq!(other.read(PINS_KEY, None).await.unwrap(), Read::Now(Held::Value(b"mine".to_vec())), "{case}");
            assert!(!other.swap(PINS_KEY, &held, b"theirs").await.unwrap(), "{case}: a valid value is not replaced");
        });
    }
}
