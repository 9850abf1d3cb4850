//! The share against a real redis-server: two replicas' runtimes (hubs
//! that pin, no state folder), their shares synced by hand.

use std::rc::Rc;

use serde_json::Value;

use super::*;
use crate::cluster::test_redis::Redis;
use crate::hub::{Hub, HubOptions, Input};
use crate::serve::runtime::Runtime;
use crate::policy::{PinSettings, Quarantine};

/// The replicas' shared state key.
const KEY: [u8; 32] = [6; 32];

fn replica(redis: &Redis) -> (Rc<Runtime>, PinShare) {
    let mut opts = HubOptions::default();
    opts.policy.pin = Some(PinSettings { mode: Quarantine::Hide, findings: Quarantine::Hide, lock_file: None });
    let (rt, _) = Runtime::new(Hub::new(Vec::new(), opts).unwrap(), Vec::new()).unwrap();
    (rt, PinShare::new(Rc::new(Store::new(&redis.url(), &KEY).unwrap()), false))
}

/// A pin file pinning server a's tools `names`.
fn pinned(names: &[&str]) -> Vec<u8> {
    let pins: Vec<Value> = names.iter().map(|n| serde_json::json!({"server": "a", "kind": "tools", "name": n, "digest": format!("sha256:{n}"), "definition": {"name": n}})).collect();
    serde_json::to_vec(&serde_json::json!({"version": 1, "pins": pins, "seen": [{"server": "a", "kind": "tools"}], "changes": []})).unwrap()
}

/// The hub trusts server a's tools `names` (as after a first use), and saves them.
fn pin(rt: &Runtime, share: &PinShare, names: &[&str]) {
    rt.feed(|h, now| h.handle(Input::PinFiles { state: Some(&pinned(names)), lock: None }, now));
    share.hub_saved(rt, &pinned(names));
}

fn hub_pins(rt: &Runtime) -> Value {
    rt.hub().status()["pins"]["pinned"].clone()
}

fn set(redis: &Redis, value: Vec<u8>) {
    let mut c = redis::Client::open(redis.url()).unwrap().get_connection().unwrap();
    redis::cmd("SET").arg(PINS_KEY).arg(value).exec(&mut c).unwrap();
}

#[test]
fn pins_saved_on_one_replica_are_trusted_on_another_and_an_unusable_value_changes_nothing() {
    let redis = Redis::start();
    let (ra, a) = replica(&redis);
    let (rb, b) = replica(&redis);
    crate::process::reactor::block_on(async {
        pin(&ra, &a, &["t"]);
        a.sync().await;
        b.sync().await;
        b.apply(&*rb);
        assert_eq!(hub_pins(&rb), 1, "A's pin, trusted on B");
        // B pins u: the union, on A at its next poll.
        pin(&rb, &b, &["t", "u"]);
        b.sync().await;
        a.sync().await;
        a.apply(&*ra);
        assert_eq!(hub_pins(&ra), 2);
        // Whoever writes to Redis without the key: ignored with a warning
        // (counted by the store), the pins stay, and are written over it.
        for (i, (case, value)) in [("unsealed", pinned(&["t", "u", "evil"])), ("8 MiB", vec![b'{'; 8 << 20])].into_iter().enumerate() {
            set(&redis, value);
            b.sync().await;
            b.apply(&*rb);
            assert_eq!(b.store.rejected(), i as u64 + 1, "{case}: warned about");
            assert_eq!(hub_pins(&rb), 2, "{case}: B's pins stay in force");
            let stored = Store::new(&redis.url(), &KEY).unwrap().read(PINS_KEY, None).await.unwrap();
            let Read::Now(Held::Value(v)) = stored else { panic!("{case}: {stored:?}") };
            assert_eq!(PinFile::parse(&v).unwrap().pinned(), 2, "{case}: B's pins written over it");
            a.sync().await;
            a.apply(&*ra);
            assert_eq!(hub_pins(&ra), 2, "{case}");
        }
        // A sealed value that is not a pin file: the same.
        let sealed = sealed::ValueKey::derive(&KEY).seal(PINS_KEY, b"[1, 2]").unwrap();
        set(&redis, sealed);
        a.sync().await;
        assert!(a.bad.get(), "warned about");
        assert_eq!(hub_pins(&ra), 2);
        b.sync().await;
        assert!(!b.rules.borrow().pending());
    });
}

#[test]
fn without_redis_the_pins_stay_and_are_written_once_it_answers() {
    let mut redis = Redis::start();
    let (ra, a) = replica(&redis);
    let (rb, b) = replica(&redis);
    crate::process::reactor::block_on(async {
        redis.stop();
        pin(&ra, &a, &["t"]);
        a.sync().await;
        assert!(a.down.get() && a.rules.borrow().pending());
        redis.restart();
        // The store reconnects within its backoff.
        let t0 = std::time::Instant::now();
        while a.rules.borrow().pending() {
            assert!(t0.elapsed() < std::time::Duration::from_secs(8), "not written");
            smol::Timer::after(std::time::Duration::from_millis(100)).await;
            a.sync().await;
        }
        b.sync().await;
        b.apply(&*rb);
        assert_eq!(hub_pins(&rb), 1);
    });
}
