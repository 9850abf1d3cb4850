//! The store against a real redis-server.

use std::time::{Duration, Instant};

use super::{Store, OP_TIMEOUT};
use crate::cluster::test_redis::Redis;

fn two_replicas(r: &Redis) -> (Store, Store) {
    (Store::new(&r.url()).unwrap(), Store::new(&r.url()).unwrap())
}

#[test]
fn a_nonce_is_granted_once_across_replicas() {
    let r = Redis::start();
    let (a, b) = two_replicas(&r);
    smol::block_on(async {
        assert_eq!(a.claim_nonce("n1", 60_000).await, Ok(true));
        assert_eq!(b.claim_nonce("n1", 60_000).await, Ok(false), "replayed on another replica");
        assert_eq!(a.claim_nonce("n1", 60_000).await, Ok(false), "replayed on the same replica");
        assert_eq!(b.claim_nonce("n2", 60_000).await, Ok(true));
    });
}

#[test]
fn a_nonce_expires_with_its_ttl() {
    let r = Redis::start();
    let s = Store::new(&r.url()).unwrap();
    smol::block_on(async {
        assert_eq!(s.claim_nonce("short", 50).await, Ok(true));
        assert_eq!(s.claim_nonce("short", 50).await, Ok(false));
        smol::Timer::after(Duration::from_millis(120)).await;
        assert_eq!(s.claim_nonce("short", 50).await, Ok(true), "the key should have expired");
    });
}

#[test]
fn the_token_bucket_is_shared_and_refills() {
    let r = Redis::start();
    let (a, b) = two_replicas(&r);
    smol::block_on(async {
        let t = 1_000_000;
        assert_eq!(a.take_token("alice", 2, 1.0, t).await, Ok(true));
        assert_eq!(b.take_token("alice", 2, 1.0, t).await, Ok(true));
        assert_eq!(a.take_token("alice", 2, 1.0, t + 10).await, Ok(false), "capacity 2 spent on two replicas");
        assert_eq!(b.take_token("bob", 2, 1.0, t + 10).await, Ok(true), "buckets are per key");
        // One token per second: after 1 s, one more (and only one).
        assert_eq!(b.take_token("alice", 2, 1.0, t + 1010).await, Ok(true));
        assert_eq!(a.take_token("alice", 2, 1.0, t + 1020).await, Ok(false));
        // Refill is capped at the capacity.
        assert_eq!(a.take_token("alice", 2, 1.0, t + 60_000).await, Ok(true));
        assert_eq!(a.take_token("alice", 2, 1.0, t + 60_000).await, Ok(true));
        assert_eq!(a.take_token("alice", 2, 1.0, t + 60_000).await, Ok(false));
    });
}

#[test]
fn put_stores_with_an_expiry() {
    let r = Redis::start();
    let s = Store::new(&r.url()).unwrap();
    smol::block_on(async { s.put("session:abc", b"replica-2", 30_000).await.unwrap() });
    let mut c = redis::Client::open(r.url()).unwrap().get_connection().unwrap();
    let v: Vec<u8> = redis::cmd("GET").arg("mcpx:k:session:abc").query(&mut c).unwrap();
    assert_eq!(v, b"replica-2");
    let ttl: i64 = redis::cmd("PTTL").arg("mcpx:k:session:abc").query(&mut c).unwrap();
    assert!(ttl > 0 && ttl <= 30_000, "PTTL {ttl}");
}

#[test]
fn redis_away_gives_fast_errors_never_a_grant_and_service_resumes() {
    let mut r = Redis::start();
    let s = Store::new(&r.url()).unwrap();
    smol::block_on(async {
        assert_eq!(s.claim_nonce("before", 60_000).await, Ok(true));
        r.stop();
        // In flight or next: a clear error, within the bound, never a grant.
        for i in 0..5 {
            let t0 = Instant::now();
            let got = s.claim_nonce(&format!("away{i}"), 60_000).await;
            assert!(t0.elapsed() < OP_TIMEOUT + Duration::from_millis(200), "took {:?}", t0.elapsed());
            let e = got.expect_err("Redis is down: no answer may be a grant");
            assert!(e.0.contains("Redis at redis://127.0.0.1:"), "{e}");
        }
        r.restart();
        // Reconnects within the backoff's bound (≤ 5 s between attempts;
        // a few attempts failed so far).
        let t0 = Instant::now();
        loop {
            match s.claim_nonce("after", 60_000).await {
                Ok(granted) => {
                    assert!(granted);
                    break;
                }
                Err(e) => assert!(t0.elapsed() < Duration::from_secs(8), "no reconnection: {e}"),
            }
            smol::Timer::after(Duration::from_millis(50)).await;
        }
    });
}

#[test]
fn an_unreachable_redis_fails_fast() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let s = Store::new(&format!("redis://127.0.0.1:{port}/0")).unwrap();
    smol::block_on(async {
        let t0 = Instant::now();
        let e = s.take_token("b", 1, 1.0, 0).await.unwrap_err();
        assert!(t0.elapsed() <= OP_TIMEOUT + Duration::from_millis(200));
        assert!(e.0.contains("cannot connect"), "{e}");
        // Within the backoff delay: refused at once, saying when the next
        // attempt is.
        let e = s.take_token("b", 1, 1.0, 0).await.unwrap_err();
        assert!(e.0.contains("next connection attempt"), "{e}");
    });
}

#[test]
fn a_bad_url_is_refused_up_front() {
    assert!(Store::new("http://example.org/").is_err());
    assert_eq!(super::without_credentials("redis://u:secret@h:1/0"), "redis://h:1/0");
}
