//! Replicas sharing state (issue 16, `hub::shared`): hubs with one sealing
//! key, different replica ids and a fake store, shared between them, that
//! answers the hubs' `Ask`s as Redis would (`SET NX PX`, token buckets on
//! the store's clock). The internal hop is played by hand: a forwarded
//! request is fed to its owner as a client of the asserted principal.

use serde_json::{json, Value};

use super::modern::with_meta;
use super::*;
use crate::hub::shared::{Answer, Op};
use crate::policy::ratelimit::Rate;

const KEY: [u8; 32] = [7; 32];
/// One wall clock for every replica (the hubs' own clocks start anywhere).
const EPOCH_MS: u64 = 1_800_000_000_000;

fn caps() -> Value {
    json!({ "elicitation": { "form": {} }, "roots": {} })
}

fn modern_request(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": with_meta(params, &caps()) })
}

/// The store the replicas share.
#[derive(Default)]
struct Store {
    /// Claimed nonces' keys and their expiry (store clock).
    nonces: HashMap<String, u64>,
    /// Bucket key → (units, refilled at), as `ratelimit::Bucket` counts.
    buckets: HashMap<String, (u64, u64)>,
    puts: HashMap<String, Vec<u8>>,
    now_ms: u64,
    /// Answer `Unavailable` (the connection is lost).
    down: bool,
    /// Answer nothing, do nothing (the store hangs).
    silent: bool,
}

impl Store {
    fn answer(&mut self, op: &Op) -> Answer {
        if self.down {
            return Answer::Unavailable("connection refused".to_string());
        }
        match op {
            Op::ClaimNonce { ttl_ms, .. } => {
                let key = op.key().expect("a nonce has a key");
                let now = self.now_ms;
                if self.nonces.get(&key).is_some_and(|exp| *exp > now) {
                    return Answer::Refused { retry_after_ms: 0 };
                }
                self.nonces.insert(key, now + ttl_ms);
                Answer::Granted
            }
            Op::TakeTokens { buckets } => {
                let now = self.now_ms;
                let state: Vec<(u64, u64)> = buckets
                    .iter()
                    .map(|b| {
                        let cap = u64::from(b.capacity) * b.period_ms;
                        let (units, at) = self.buckets.get(&b.key()).copied().unwrap_or((cap, now));
                        ((units + (now - at) * u64::from(b.capacity)).min(cap), now)
                    })
                    .collect();
                let wait = buckets.iter().zip(&state).map(|(b, (units, _))| b.period_ms.saturating_sub(*units).div_ceil(u64::from(b.capacity))).max().unwrap_or(0);
                if wait > 0 {
                    return Answer::Refused { retry_after_ms: wait };
                }
                for (b, (units, at)) in buckets.iter().zip(state) {
                    self.buckets.insert(b.key(), (units - b.period_ms, at));
                }
                Answer::Granted
            }
            Op::Put { key, value, .. } => {
                self.puts.insert(key.clone(), value.clone());
                Answer::Granted
            }
            Op::Get { key } => Answer::Value(self.puts.get(key).cloned()),
        }
    }
}

impl Pair {
    /// Answers every question this hub asked the store, until it asks no more.
    fn serve(&mut self, store: &mut Store) {
        for _ in 0..100 {
            let Some(ask) = self.asks.pop_front() else { return };
            if store.silent {
                continue;
            }
            let answer = store.answer(&ask.op);
            if ask.ticket != 0 {
                self.hub.handle(Input::SharedAnswered { ticket: ask.ticket, answer }, self.now);
                self.pump();
            }
        }
        panic!("the hub keeps asking");
    }

    /// The internal hop: the forwarded request `msg` of `principal` served
    /// by this replica as a client of that principal; returns that client.
    fn hop(&mut self, store: &mut Store, principal: &[u8], msg: &[u8]) -> ClientId {
        let h = self.hub.client_connected(self.now);
        self.hub.handle(Input::ClientPrincipal(h, principal), self.now);
        self.send_raw(h, msg);
        self.serve(store);
        h
    }
}

fn opts(replica: &str, peers: &[&str]) -> HubOptions {
    let mut o = HubOptions::default();
    o.tasks.epoch_ms = EPOCH_MS;
    o.cluster = ClusterOptions {
        replica: Some(replica.to_string()),
        peers: peers.iter().map(|p| p.to_string()).collect(),
        shared: true,
        state_key: Some(KEY),
        ..ClusterOptions::default()
    };
    o
}

/// A replica with one legacy upstream `fs` (tool `ask`): its requests for
/// input hold the call on this replica.
fn legacy_replica(replica: &str, peers: &[&str]) -> Pair {
    Pair::with(vec![("fs", Fake::tools(&["ask"]))], opts(replica, peers))
}

/// A replica with one modern upstream `m` (tool `read`): its
/// `requestState` is carried, nothing is held.
fn modern_replica(replica: &str, peers: &[&str]) -> Pair {
    Pair::with(vec![("m", Fake::modern(&["read"]))], opts(replica, peers))
}

fn alice(p: &mut Pair) -> ClientId {
    let c = p.connect();
    p.hub.handle(Input::ClientPrincipal(c, b"user:alice"), p.now);
    c
}

fn ask_call(id: i64) -> Value {
    modern_request(id, "tools/call", json!({ "name": "fs__ask", "arguments": { "q": 1 } }))
}

fn ask_retry(id: i64, state: &str) -> Value {
    let answer = json!({ "action": "accept", "content": { "name": "Alice" } });
    modern_request(id, "tools/call", json!({ "name": "fs__ask", "arguments": { "q": 1 }, "inputResponses": { "fs-1": answer }, "requestState": state }))
}

/// A call on replica `p` whose legacy upstream asks for input: (the call
/// upstream, the `requestState` the client got).
fn held_state(p: &mut Pair, store: &mut Store, c: ClientId) -> (Value, String) {
    p.send(c, ask_call(1));
    p.serve(store);
    let call = p.take_up(0);
    let form = json!({ "mode": "form", "message": "Your name?", "requestedSchema": { "type": "object", "properties": { "name": { "type": "string" } } } });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "in-1", "method": "elicitation/create", "params": form }));
    let irr = p.take(c);
    let state = irr["result"]["requestState"].as_str().unwrap_or_else(|| panic!("input_required: {irr}")).to_string();
    (call, state)
}

fn error_message(v: &Value) -> String {
    v["error"]["message"].as_str().unwrap_or_else(|| panic!("an error: {v}")).to_string()
}

// A continuation whose upstream call replica 1 holds, retried through
// replica 2, is forwarded to replica 1 with the client's principal; replica
// 1 claims it, completes it, and the client's answer is the owner's. The
// same state replayed through replica 3 is forwarded to the owner too, and
// refused there.
// covers: mrtr-single-use-enforced, mrtr-requeststate-attacker-controlled, lifecycle-stateless-no-connection-reuse-required
#[test]
fn a_continuation_held_by_another_replica_is_forwarded_to_it_and_claimed_there_once() {
    let mut store = Store::default();
    let mut r1 = legacy_replica("r1", &["r2", "r3"]);
    let mut r2 = legacy_replica("r2", &["r1", "r3"]);
    let mut r3 = legacy_replica("r3", &["r1", "r2"]);
    let c1 = alice(&mut r1);
    let (call, state) = held_state(&mut r1, &mut store, c1);

    // Through replica 2: verified there, forwarded, nothing sent upstream or asked.
    let c2 = alice(&mut r2);
    let retry = ask_retry(2, &state);
    r2.send(c2, retry.clone());
    assert!(r2.asks.is_empty(), "the owner claims, not the forwarder: {:?}", r2.asks);
    assert!(r2.up_quiet(0) && r2.client_quiet(c2));
    let (fc, fid, msg, principal, to) = r2.forwards.pop().expect("a forward");
    assert_eq!((fc, fid.as_slice(), principal.as_slice(), to.as_str()), (c2, &b"2"[..], &b"user:alice"[..], "r1"));
    assert_eq!(serde_json::from_slice::<Value>(&msg).unwrap(), retry, "the client's own request travels");
    assert!(r2.hub.clients().request_open(c2, b"2"), "open until the runtime reports the forward done");

    // Replica 1 serves the hop: it claims the nonce in the store and resumes its held call.
    let h = r1.hop(&mut store, &principal, &msg);
    assert_eq!(store.nonces.len(), 1);
    let answer = r1.take_up(0);
    assert_eq!((answer["id"].clone(), answer["result"]["content"]["name"].clone()), (json!("in-1"), json!("Alice")));
    r1.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": { "content": [{ "type": "text", "text": "hi Alice" }] } }));
    let done = r1.take(h);
    assert_eq!((done["id"].clone(), done["result"]["content"][0]["text"].clone()), (json!(2), json!("hi Alice")), "{done}");
    r2.hub.handle(Input::ForwardDone { client: c2, request: b"2", result: Ok(()) }, r2.now);
    r2.pump();
    assert!(!r2.hub.clients().request_open(c2, b"2") && r2.client_quiet(c2), "the owner's answer was the answer");

    // Replayed through replica 3: forwarded to the owner, refused there.
    let c3 = alice(&mut r3);
    r3.send(c3, ask_retry(3, &state));
    let (_, _, msg, principal, to) = r3.forwards.pop().expect("a forward");
    assert_eq!(to, "r1");
    let h = r1.hop(&mut store, &principal, &msg);
    let refused = r1.take(h);
    assert_eq!(err_code(&refused), -32602, "{refused}");
    assert!(error_message(&refused).contains("already been used"), "{refused}");
    assert!(r1.up_quiet(0));
}

// The owner gone: no peer of that name, or the hop failed. The client gets
// the error to start over, never a hang.
// covers: mrtr-requeststate-attacker-controlled
#[test]
fn a_continuation_whose_owner_is_gone_is_answered_start_over() {
    let mut store = Store::default();
    let mut r1 = legacy_replica("r1", &["r2"]);
    let c1 = alice(&mut r1);
    let (_, state) = held_state(&mut r1, &mut store, c1);

    let mut lone = legacy_replica("r9", &[]);
    let c = alice(&mut lone);
    lone.send(c, ask_retry(2, &state));
    let r = lone.take(c);
    assert_eq!(err_code(&r), -32602, "{r}");
    let msg = error_message(&r);
    assert!(msg.contains("replica 'r1'") && msg.contains("not among this replica's peers") && msg.contains("without requestState to start over"), "{msg}");
    assert!(lone.forwards.is_empty() && lone.up_quiet(0));

    let mut r2 = legacy_replica("r2", &["r1"]);
    let c2 = alice(&mut r2);
    r2.send(c2, ask_retry(3, &state));
    assert_eq!(r2.forwards.len(), 1);
    r2.hub.handle(Input::ForwardDone { client: c2, request: b"3", result: Err("connection refused".to_string()) }, r2.now);
    r2.pump();
    let r = r2.take(c2);
    assert_eq!((r["id"].clone(), err_code(&r)), (json!(3), -32602), "{r}");
    let msg = error_message(&r);
    assert!(msg.contains("could not answer (connection refused)") && msg.contains("start over"), "{msg}");
    assert!(!r2.hub.clients().request_open(c2, b"3"));
    // A forged state naming another owner does not even verify.
    r2.send(c2, ask_retry(4, &format!("{state}x")));
    assert_eq!(err_code(&r2.take(c2)), -32602);
    assert!(r2.forwards.len() == 1, "nothing more forwarded");
}

/// A replica with one modern upstream `m` (tool `read`) that is a remote
/// server (a URL every replica reaches): its `requestState` opens there
/// whichever replica carries it.
fn remote_modern_replica(replica: &str, peers: &[&str]) -> Pair {
    remote_modern(opts(replica, peers))
}

fn remote_modern(opts: HubOptions) -> Pair {
    let mut specs = specs(&["m"]);
    specs[0].remote = true;
    let mut p = Pair::new(specs, opts);
    p.start(0, Fake::modern(&["read"]));
    p
}

/// Modern upstream `m` answers a call on `p` with its own requestState
/// `up-<id>`: the hub's state for it (nothing held).
fn carried_state(p: &mut Pair, store: &mut Store, c: ClientId, id: i64) -> String {
    p.send(c, modern_request(id, "tools/call", json!({ "name": "m__read", "arguments": {} })));
    p.serve(store);
    let up = p.take_up(0);
    let irr = json!({ "resultType": "input_required", "inputRequests": { "k1": { "method": "roots/list", "params": {} } }, "requestState": format!("up-{id}") });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": irr }));
    let r = p.take(c);
    r["result"]["requestState"].as_str().unwrap_or_else(|| panic!("{r}")).to_string()
}

/// Replicas r1 and r2 made by `replica`, alice a client of each, and the
/// state r1 minted for her call's round.
fn minted_on_r1(replica: fn(&str, &[&str]) -> Pair) -> (Store, [Pair; 2], [ClientId; 2], String) {
    let mut store = Store::default();
    let (mut r1, mut r2) = (replica("r1", &["r2"]), replica("r2", &["r1"]));
    let c1 = alice(&mut r1);
    let state = carried_state(&mut r1, &mut store, c1, 1);
    let c2 = alice(&mut r2);
    (store, [r1, r2], [c1, c2], state)
}

fn read_retry(id: i64, state: &str) -> Value {
    modern_request(id, "tools/call", json!({ "name": "m__read", "arguments": {}, "inputResponses": { "k1": { "roots": [] } }, "requestState": state }))
}

// A state minted by replica 1 (nothing held) for a remote server and
// redeemed through replica 2 is claimed in the store; the same token
// through replica 1 is refused by the store's answer, and nothing reaches
// its upstream.
// covers: mrtr-single-use-enforced, mrtr-requeststate-attacker-controlled
#[test]
fn a_carried_state_is_used_once_across_replicas() {
    let (mut store, [mut r1, mut r2], [c1, c2], state) = minted_on_r1(remote_modern_replica);
    r2.send(c2, read_retry(2, &state));
    assert!(r2.up_quiet(0), "parked until the store answers");
    assert!(matches!(r2.asks.front().map(|a| &a.op), Some(Op::ClaimNonce { .. })), "{:?}", r2.asks);
    r2.serve(&mut store);
    let up = r2.take_up(0);
    assert_eq!(up["params"]["requestState"], "up-1", "{up}");
    assert!(r2.forwards.is_empty());

    r1.send(c1, read_retry(3, &state));
    r1.serve(&mut store);
    let r = r1.take(c1);
    assert_eq!((r["id"].clone(), err_code(&r)), (json!(3), -32602), "{r}");
    assert!(error_message(&r).contains("already been used"), "{r}");
    assert!(r1.up_quiet(0));
}

// A 2026-07-28 server running on replica 1 (its own requestState opens
// there only): its round retried through replica 2 is forwarded to replica
// 1 without claiming the nonce, claimed and served there once; the retry
// sent again is refused as used, and nothing reaches replica 2's server.
// covers: mrtr-single-use-enforced
#[test]
fn a_local_modern_servers_round_retried_elsewhere_is_served_where_it_was_minted() {
    let (mut store, [mut r1, mut r2], [_, c2], state) = minted_on_r1(modern_replica);
    let retry = read_retry(2, &state);
    r2.send(c2, retry.clone());
    assert!(r2.asks.is_empty(), "the minter claims, not the forwarder: {:?}", r2.asks);
    assert!(r2.up_quiet(0));
    let (_, _, msg, principal, to) = r2.forwards.pop().expect("a forward");
    assert_eq!((to.as_str(), principal.as_slice()), ("r1", &b"user:alice"[..]));
    assert_eq!(serde_json::from_slice::<Value>(&msg).unwrap(), retry);

    let h = r1.hop(&mut store, &principal, &msg);
    assert_eq!(store.nonces.len(), 1, "claimed on replica 1");
    let up = r1.take_up(0);
    assert_eq!(up["params"]["requestState"], "up-1", "its own server gets its own state: {up}");
    assert!(r1.client_quiet(h));

    r2.send(c2, read_retry(3, &state));
    let (_, _, msg, principal, _) = r2.forwards.pop().expect("a forward");
    let h = r1.hop(&mut store, &principal, &msg);
    let r = r1.take(h);
    assert!(error_message(&r).contains("already been used"), "{r}");
    assert!(r1.up_quiet(0) && r2.up_quiet(0));
}

// The store unavailable or silent: the retry gets a clear error saying the
// state was refused, not accepted, within the bound; the token is not used,
// and works once the store is back.
// covers: mrtr-single-use-enforced
#[test]
fn a_state_the_store_cannot_check_is_refused_never_accepted() {
    let mut store = Store::default();
    let mut r1 = modern_replica("r1", &[]);
    let c = alice(&mut r1);
    let state = carried_state(&mut r1, &mut store, c, 1);
    store.down = true;

    r1.send(c, read_retry(2, &state));
    r1.serve(&mut store);
    let r = r1.take(c);
    assert_eq!((r["id"].clone(), err_code(&r)), (json!(2), -32603), "{r}");
    let msg = error_message(&r);
    assert!(msg.contains("connection refused") && msg.contains("refused, not accepted"), "{msg}");
    assert!(r1.up_quiet(0));

    store.down = false;
    store.silent = true;
    r1.send(c, read_retry(3, &state));
    let late = r1.asks.back().map(|a| a.ticket).expect("a claim asked");
    r1.serve(&mut store);
    assert!(r1.client_quiet(c) && r1.hub.clients().request_open(c, b"3"));
    let bound = r1.hub.next_deadline().expect("a deadline for the answer");
    assert!(bound <= r1.now + crate::hub::shared::DEFAULT_ANSWER_TIMEOUT_MS, "{bound}");
    r1.advance(crate::hub::shared::DEFAULT_ANSWER_TIMEOUT_MS);
    let r = r1.take(c);
    assert_eq!((r["id"].clone(), err_code(&r)), (json!(3), -32603), "{r}");
    assert!(error_message(&r).contains("did not answer within 1000 ms"), "{r}");
    // A late answer changes nothing.
    r1.hub.handle(Input::SharedAnswered { ticket: late, answer: Answer::Granted }, r1.now);
    r1.pump();
    assert!(r1.client_quiet(c) && r1.up_quiet(0));

    store.silent = false;
    r1.send(c, read_retry(4, &state));
    r1.serve(&mut store);
    assert_eq!(r1.take_up(0)["params"]["requestState"], "up-1", "not used by the failed attempts");
}

// One principal's rate limit holds across the replicas: its tokens are the
// store's, taken by whichever replica serves the call.
// covers: tools-server-sec-validate-inputs
#[test]
fn rate_limit_buckets_are_shared_by_the_replicas() {
    let mut store = Store::default();
    let limited = |replica: &str| {
        let mut o = opts(replica, &[]);
        o.policy.rate_limits.tool_calls.per_principal = Some(Rate { count: 2, per_ms: 60_000 });
        Pair::with(vec![("m", Fake::modern(&["read"]))], o)
    };
    let (mut r1, mut r2) = (limited("r1"), limited("r2"));
    let (a1, a2) = (alice(&mut r1), alice(&mut r2));
    let call = |id| modern_request(id, "tools/call", json!({ "name": "m__read", "arguments": {} }));
    for (p, c, id) in [(&mut r1, a1, 1), (&mut r2, a2, 2)] {
        p.send(c, call(id));
        assert!(p.up_quiet(0), "waits for the store's tokens");
        p.serve(&mut store);
        let up = p.take_up(0);
        assert_eq!(up["params"]["name"], "read");
    }
    // The third call of alice, on either replica, finds the shared bucket empty.
    r1.send(a1, call(3));
    r1.serve(&mut store);
    let r = r1.take(a1);
    assert_eq!((r["id"].clone(), err_code(&r)), (json!(3), -32600), "{r}");
    assert!(r["error"]["data"]["limit"].as_str().is_some_and(|l| l.starts_with("policy.rateLimits.toolCalls.perPrincipal (2/min)")), "{r}");
    assert!(r["error"]["data"]["retryAfterMs"].as_u64().is_some_and(|ms| ms > 0 && ms <= 30_000), "{r}");
    assert!(r1.up_quiet(0));
    // Another principal has its own bucket; time refills alice's.
    let b = r2.connect();
    r2.hub.handle(Input::ClientPrincipal(b, b"user:bob"), r2.now);
    r2.send(b, call(4));
    r2.serve(&mut store);
    assert_eq!(r2.take_up(0)["params"]["name"], "read");
    store.now_ms += 30_000;
    r2.send(a2, call(5));
    r2.serve(&mut store);
    assert_eq!(r2.take_up(0)["params"]["name"], "read");
    // The store unreachable: refused with a clear error.
    store.down = true;
    r2.send(a2, call(6));
    r2.serve(&mut store);
    let r = r2.take(a2);
    assert_eq!(err_code(&r), -32603, "{r}");
    assert!(error_message(&r).contains("rate limits could not be checked"), "{r}");
}

// A task runs on the replica that created it: its id names that replica,
// its owner is published, and a request about it through another replica
// is forwarded there.
// covers: tasks-id-string-receiver-unique
#[test]
fn a_task_is_served_by_the_replica_that_runs_it() {
    let mut store = Store::default();
    let mut r1 = legacy_replica("r1", &["r2"]);
    let mut r2 = legacy_replica("r2", &["r1"]);
    let tasks = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let c1 = alice(&mut r1);
    r1.send(c1, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": with_meta(json!({ "name": "fs__ask", "arguments": {} }), &tasks) }));
    r1.serve(&mut store);
    let created = r1.take(c1);
    let id = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {created}")).to_string();
    assert!(id.starts_with("mcpx-r1."), "{id}");
    r1.serve(&mut store);
    assert_eq!(published(&store, &id)["owner"], "r1");

    let c2 = alice(&mut r2);
    let get = json!({ "jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": with_meta(json!({ "taskId": id }), &tasks) });
    r2.send(c2, get.clone());
    let (_, fid, msg, principal, to) = r2.forwards.pop().expect("a forward");
    assert_eq!((fid.as_slice(), to.as_str()), (&b"2"[..], "r1"));
    let h = r1.hop(&mut store, &principal, &msg);
    let got = r1.take(h);
    assert_eq!((got["result"]["taskId"].clone(), got["result"]["status"].clone()), (json!(id), json!("working")), "{got}");
    // Its own tasks a replica answers itself (an unknown one: not found).
    r2.send(c2, json!({ "jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": with_meta(json!({ "taskId": "mcpx-r2.0123456789abcdef0123456789abcdef" }), &tasks) }));
    assert!(r2.forwards.is_empty());
    assert_eq!(err_code(&r2.take(c2)), -32602);
}

// Replicas started with the same secret seed and key still mint different
// nonces (the replica id is mixed in); every replica verifies the others'.
// covers: mrtr-requeststate-attacker-controlled
#[test]
fn replicas_with_one_seed_never_mint_the_same_state() {
    let same_seed = |replica: &str| {
        let mut o = opts(replica, &[]);
        o.secret_seed = [3; 32];
        // A remote server: its state is continued wherever it lands.
        remote_modern(o)
    };
    let (mut r1, mut r2) = (same_seed("r1"), same_seed("r2"));
    let (a1, a2) = (alice(&mut r1), alice(&mut r2));
    let mut store = Store::default();
    let (s1, s2) = (carried_state(&mut r1, &mut store, a1, 1), carried_state(&mut r2, &mut store, a2, 1));
    assert_ne!(s1, s2, "same request, same time, same seed: different states");
    r2.send(a2, read_retry(2, &s1));
    r2.serve(&mut store);
    assert_eq!(r2.take_up(0)["params"]["requestState"], "up-1", "r1's state verifies on r2");
}


/// The record of task `id` in the store.
fn published(store: &Store, id: &str) -> Value {
    let v = store.puts.get(&crate::hub::shared::task_key(id)).unwrap_or_else(|| panic!("task {id} is published"));
    serde_json::from_slice(v).expect("a JSON record")
}

fn tasks_ext() -> Value {
    json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } })
}

/// A replica with one modern upstream `m` (tool `job`, with the tasks
/// extension); `remote`: a server every replica reaches (a URL), else a
/// process of the replica's own.
fn tasks_replica(replica: &str, peers: &[&str], remote: bool) -> Pair {
    let mut spec = specs(&["m"]).remove(0);
    spec.remote = remote;
    let mut m = Fake::modern(&["job"]);
    m.caps["extensions"] = tasks_ext()["extensions"].clone();
    let mut p = Pair::new(vec![spec], opts(replica, peers));
    p.start(0, m);
    p
}

/// A task `m` runs as its `up-7`, created through `p` for `c`: the hub's id.
fn created_task(p: &mut Pair, store: &mut Store, c: ClientId) -> String {
    p.msend(c, json!(1), "tools/call", json!({ "name": "m__job" }), &tasks_ext());
    p.serve(store);
    let up = p.take_up(0);
    let task = json!({ "resultType": "task", "taskId": "up-7", "status": "working", "createdAt": "2027-01-15T08:00:00Z", "lastUpdatedAt": "2027-01-15T08:00:00Z", "ttlMs": 60_000, "pollIntervalMs": 100 });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": task }));
    p.serve(store);
    let created = p.take(c);
    created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {created}")).to_string()
}

/// `tasks/get` of task `id` through `p` for `c`, whose owner `to` cannot
/// be reached: the hop fails, and the store is asked for the record.
fn get_with_owner_gone(p: &mut Pair, store: &mut Store, c: ClientId, n: i64, id: &str, to: &str) {
    p.msend(c, json!(n), "tasks/get", json!({ "taskId": id }), &tasks_ext());
    p.serve(store);
    let (fc, fid, _, _, fto) = p.forwards.pop().expect("forwarded to the task's owner");
    assert_eq!(fto, to);
    p.hub.handle(Input::ForwardDone { client: fc, request: &fid, result: Err("connection refused".to_string()) }, p.now);
    p.pump();
    p.serve(store);
}

// A task a remote server runs outlives the replica that created it: the
// replica asked about it reads its record, takes it over (the remote
// server still holds it) and answers; other replicas are sent there. The
// task stays its principal's: bob learns nothing of it.
// covers: ext-tasks-client-persist-ids, tasks-bound-reject-foreign
#[test]
fn a_remote_servers_task_is_taken_over_when_its_replica_is_gone_and_stays_its_principals() {
    let mut store = Store::default();
    let mut r1 = tasks_replica("r1", &["r2"], true);
    let a1 = alice(&mut r1);
    let id = created_task(&mut r1, &mut store, a1);
    let rec = published(&store, &id);
    assert_eq!((rec["owner"].clone(), rec["task"]["upstream"].clone()), (json!("r1"), json!({ "server": "m", "taskId": "up-7", "followed": false })), "{rec}");
    drop(r1); // the replica is gone

    let mut r2 = tasks_replica("r2", &["r1", "r3"], true);
    let b2 = r2.connect();
    r2.hub.handle(Input::ClientPrincipal(b2, b"user:bob"), r2.now);
    get_with_owner_gone(&mut r2, &mut store, b2, 2, &id, "r1");
    assert_eq!(err_code(&r2.take(b2)), -32602, "not bob's task");
    assert!(r2.up_quiet(0), "nothing of it reached the server for bob");

    let a2 = alice(&mut r2);
    r2.msend(a2, json!(3), "tasks/get", json!({ "taskId": id }), &tasks_ext());
    r2.serve(&mut store);
    assert!(r2.forwards.is_empty(), "taken over: r2 answers it itself");
    let get = r2.take_up(0);
    assert_eq!((get["method"].clone(), get["params"]["taskId"].clone()), (json!("tasks/get"), json!("up-7")), "{get}");
    let done = json!({ "resultType": "complete", "taskId": "up-7", "status": "completed", "createdAt": "2027-01-15T08:00:00Z", "lastUpdatedAt": "2027-01-15T08:00:09Z", "ttlMs": 60_000, "result": { "content": [] } });
    r2.upstream_says(0, json!({ "jsonrpc": "2.0", "id": get["id"], "result": done }));
    let got = r2.take(a2);
    assert_eq!((got["result"]["taskId"].clone(), got["result"]["status"].clone()), (json!(id), json!("completed")), "{got}");
    assert_eq!(published(&store, &id)["owner"], "r2", "the store names the new owner");

    // A third replica asked: r1 fails, the record sends it on to r2.
    let mut r3 = tasks_replica("r3", &["r1", "r2"], true);
    let a3 = alice(&mut r3);
    get_with_owner_gone(&mut r3, &mut store, a3, 4, &id, "r1");
    let (_, fid, _, principal, to) = r3.forwards.pop().expect("sent on to the new owner");
    assert_eq!((fid.as_slice(), to.as_str(), principal.as_slice()), (&b"4"[..], "r2", &b"user:alice"[..]));
    // Should r2 fail too, r3 says so: a request follows one record only.
    r3.hub.handle(Input::ForwardDone { client: a3, request: &fid, result: Err("connection refused".to_string()) }, r3.now);
    r3.pump();
    let r = r3.take(a3);
    assert!(error_message(&r).contains("replica 'r2'"), "{r}");
}

// A task the gone replica ran on a process of its own (or ran itself) is
// lost with it: the replica asked answers it `failed`, saying so, never
// "not found" or a hang.
// covers: tasks-failed-status-message
#[test]
fn a_task_of_a_gone_replicas_own_process_reads_failed_saying_why() {
    let mut store = Store::default();
    let mut r1 = tasks_replica("r1", &["r2"], false);
    let a1 = alice(&mut r1);
    let id = created_task(&mut r1, &mut store, a1);
    let mut r2 = tasks_replica("r2", &["r1"], false);
    let a2 = alice(&mut r2);
    get_with_owner_gone(&mut r2, &mut store, a2, 2, &id, "r1");
    let got = r2.take(a2);
    assert_eq!((got["result"]["taskId"].clone(), got["result"]["status"].clone()), (json!(id), json!("failed")), "{got}");
    assert_eq!(got["result"]["statusMessage"], "mcpx replica 'r1' ran this task on its own process of server 'm' and is gone; its result is lost");
    assert!(r2.up_quiet(0), "r2's own process never had it");
}

// Without the record (expired, unknown) or the store, the client is told
// which replica runs the task and why it cannot be had here.
#[test]
fn a_gone_replicas_task_without_its_record_is_answered_clearly() {
    let mut store = Store::default();
    let mut r2 = tasks_replica("r2", &["r1"], true);
    let a2 = alice(&mut r2);
    let id = "mcpx-r1.0123456789abcdef0123456789abcdef";
    get_with_owner_gone(&mut r2, &mut store, a2, 2, id, "r1");
    let r = r2.take(a2);
    assert_eq!(err_code(&r), -32602, "{r}");
    assert!(error_message(&r).contains("no record of it"), "{r}");
    store.down = true;
    get_with_owner_gone(&mut r2, &mut store, a2, 3, id, "r1");
    let r = r2.take(a2);
    assert!(error_message(&r).contains("could not be asked for its record"), "{r}");
}

/// A replica whose calls of `m/read` need approval, remembered a minute.
fn approving_replica(replica: &str) -> Pair {
    let mut o = opts(replica, &[]);
    let src = json!({ "mcpServers": {}, "policy": { "approve": [{ "tools": ["m/read"], "rememberMs": 60_000 }] } }).to_string();
    o.policy = crate::config::parse(&src, "mcpx.json", std::path::Path::new("/cfg"), &|_: &str| None).expect("a valid policy").policy;
    Pair::with(vec![("m", Fake::modern(&["read"]))], o)
}

// An approval remembered on one replica (a 2026-07-28 client's user said
// yes in an input round) lets the same call by the same principal through
// on another, whose store lookup finds it; another argument set is asked.
// covers: tools-human-in-loop-deny
#[test]
fn an_approval_remembered_on_one_replica_holds_on_another() {
    let mut store = Store::default();
    let (mut r1, mut r2) = (approving_replica("r1"), approving_replica("r2"));
    let call = |id: i64, path: &str, extra: Value| {
        let mut params = json!({ "name": "m__read", "arguments": { "path": path } });
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        modern_request(id, "tools/call", params)
    };
    let c1 = alice(&mut r1);
    r1.send(c1, call(1, "/a", json!({})));
    r1.serve(&mut store);
    let irr = r1.take(c1);
    assert_eq!(irr["result"]["resultType"], "input_required", "{irr} {:?}", r1.asks);
    let yes = json!({ "mcpx-approval": { "action": "accept", "content": { "approve": true } } });
    r1.send(c1, call(2, "/a", json!({ "inputResponses": yes, "requestState": irr["result"]["requestState"] })));
    r1.serve(&mut store);
    assert_eq!(r1.take_up(0)["params"]["arguments"], json!({ "path": "/a" }));
    assert_eq!(store.puts.keys().filter(|k| k.starts_with("mcpx:approval:")).count(), 1, "remembered in the store: {:?}", store.puts.keys());

    // Replica 2 asks the store, finds it: the call runs without a question.
    let c2 = alice(&mut r2);
    r2.send(c2, call(3, "/a", json!({})));
    assert!(r2.up_quiet(0), "nothing runs before the store answered");
    r2.serve(&mut store);
    assert_eq!(r2.take_up(0)["params"]["arguments"], json!({ "path": "/a" }));
    assert!(r2.client_quiet(c2));
    // Other arguments, or another principal: asked.
    r2.send(c2, call(4, "/b", json!({})));
    r2.serve(&mut store);
    assert_eq!(r2.take(c2)["result"]["resultType"], "input_required");
    let bob = r2.connect();
    r2.hub.handle(Input::ClientPrincipal(bob, b"user:bob"), r2.now);
    r2.send(bob, call(5, "/a", json!({})));
    r2.serve(&mut store);
    assert_eq!(r2.take(bob)["result"]["resultType"], "input_required");
    assert!(r2.up_quiet(0));
}
