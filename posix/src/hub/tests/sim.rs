//! A seeded simulation of the hub state machine (issue 11): legacy clients
//! and modern connections of two principals share one legacy upstream whose
//! tool asks for input, in random interleavings of calls, final answers,
//! requests for input (some naming their call by progress token, some
//! arriving on the call's own HTTP response stream), answers
//! to them, retries, abandoned held calls, cancellations, disconnections,
//! timeouts and crashes. After each seed:
//!
//! - every client request got exactly one answer (at most one when the
//!   client cancelled it or left before it came);
//! - no request for input reached a client whose call did not make it;
//! - every table (pending, held calls, relays) is empty again.
//!
//! The upstream's tool is sequential, like an SDK tool awaiting its
//! `elicit()`: a call waiting on its own request for input makes no other
//! (the routing relies on that: `relay::Relays::cause_of`).
//!
//! `MCPX_SIM_SEEDS=n` runs `n` seeds instead of the default.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::*;

const DEFAULT_SEEDS: u64 = 1000;
const STEPS: usize = 40;
const PRINCIPALS: [&[u8]; 2] = [b"alice", b"bob"];
const CAPS: &str = r#"{ "sampling": {}, "elicitation": {} }"#;

/// xorshift64*: enough for choosing steps, and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A call as the upstream sees it.
struct UpCall {
    id: Value,
    tag: String,
    token: Option<Value>,
    /// Its request for input not yet answered: the tool waits on it.
    asking: Option<String>,
}

/// A client request whose answers are counted.
struct Req {
    client: ClientId,
    id: Value,
    answers: usize,
    /// Cancelled by its client, or its client left: at most one answer.
    exempt: bool,
}

/// An `InputRequiredResult` a modern client may retry.
struct Retry {
    principal: &'static [u8],
    tag: String,
    state: String,
    asks: Vec<(String, String)>,
}

struct Sim {
    p: Pair,
    rng: Rng,
    legacy: Vec<ClientId>,
    /// Modern connections (one per request, like HTTP POSTs): the tag of their call.
    modern: HashMap<ClientId, String>,
    /// Which legacy client made the call of each tag.
    legacy_tags: HashMap<String, ClientId>,
    reqs: Vec<Req>,
    calls: Vec<UpCall>,
    /// Requests for input legacy clients got and have not answered.
    relayed: Vec<(ClientId, Value, String)>,
    retries: Vec<Retry>,
    next: u64,
}

/// The tag a message for input carries (`<<tN>>`).
fn tag_in(v: &Value) -> Option<String> {
    let s = v.to_string();
    let a = s.find("<<")? + 2;
    let b = a + s[a..].find(">>")?;
    Some(s[a..b].to_string())
}

fn ask_params(method: &str, tag: &str) -> Value {
    match method {
        "elicitation/create" => json!({ "mode": "form", "message": format!("confirm <<{tag}>>"), "requestedSchema": { "type": "object", "properties": {} } }),
        _ => json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": format!("prompt <<{tag}>>") } }], "maxTokens": 5 }),
    }
}

fn answer(method: &str) -> Value {
    match method {
        "elicitation/create" => json!({ "action": "decline" }),
        _ => json!({ "role": "assistant", "content": { "type": "text", "text": "ok" }, "model": "m", "stopReason": "endTurn" }),
    }
}

impl Sim {
    fn new(seed: u64) -> Sim {
        let mut s = legacy_specs(&["fs"]);
        s[0].timeout_ms = 10_000;
        let opts = HubOptions { max_timeout_ms: 25_000, relay_timeout_ms: 15_000, input_ttl_ms: 60_000, ..HubOptions::default() };
        let mut p = Pair::new(s, opts);
        p.start(0, Fake::tools(&["read"]));
        let caps: Value = serde_json::from_str(CAPS).expect("caps");
        let legacy = vec![p.client("2025-11-25", caps.clone()), p.client("2025-06-18", caps)];
        let rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        Sim { p, rng, legacy, modern: HashMap::new(), legacy_tags: HashMap::new(), reqs: Vec::new(), calls: Vec::new(), relayed: Vec::new(), retries: Vec::new(), next: 0 }
    }

    fn fresh(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    fn step(&mut self) {
        match self.rng.below(12) {
            0 | 1 => self.legacy_call(),
            2 => self.modern_call(None),
            3 => self.retry(),
            4 | 5 => self.upstream_asks(),
            6 => self.upstream_answers(),
            7 => self.client_answers(),
            8 => self.legacy_cancels(),
            9 => {
                let ms = if self.rng.chance(20) { 11_000 + self.rng.below(60_000) as u64 } else { 1 + self.rng.below(50) as u64 };
                self.p.advance(ms);
            }
            10 if self.rng.chance(15) => self.crash(),
            10 => self.modern_leaves(),
            _ if self.rng.chance(10) => self.legacy_leaves(),
            _ => self.upstream_asks(),
        }
        self.observe();
    }

    fn legacy_call(&mut self) {
        let c = self.legacy[self.rng.below(self.legacy.len())];
        let n = self.fresh();
        let tag = format!("t{n}");
        let mut params = json!({ "name": "fs__read", "arguments": { "tag": tag } });
        if self.rng.chance(50) {
            params["_meta"] = json!({ "progressToken": format!("p{n}") });
        }
        self.legacy_tags.insert(tag, c);
        self.reqs.push(Req { client: c, id: json!(n), answers: 0, exempt: false });
        self.p.send(c, json!({ "jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params }));
    }

    /// A modern request on a new connection: a first call, or `retry`.
    fn modern_call(&mut self, retry: Option<Retry>) {
        let caps: Value = serde_json::from_str(CAPS).expect("caps");
        let m = self.p.connect();
        let (principal, tag, extra) = match retry {
            Some(r) => {
                // Now and then another principal tries it: refused, still one answer.
                let principal = if self.rng.chance(10) { PRINCIPALS[self.rng.below(2)] } else { r.principal };
                let responses: serde_json::Map<String, Value> = r.asks.iter().filter(|_| self.rng.chance(85)).map(|(k, method)| (k.clone(), answer(method))).collect();
                (principal, r.tag, Some((responses, r.state)))
            }
            None => (PRINCIPALS[self.rng.below(2)], format!("t{}", self.fresh()), None),
        };
        self.p.hub.handle(Input::ClientPrincipal(m, principal), self.p.now);
        let mut params = json!({ "name": "fs__read", "arguments": { "tag": tag } });
        if let Some((responses, state)) = extra {
            params["inputResponses"] = Value::Object(responses);
            params["requestState"] = json!(state);
        }
        self.modern.insert(m, tag);
        self.reqs.push(Req { client: m, id: json!(1), answers: 0, exempt: false });
        self.p.modern_call(m, json!(1), params, &caps);
    }

    fn retry(&mut self) {
        if self.retries.is_empty() {
            return self.modern_call(None);
        }
        let r = self.retries.swap_remove(self.rng.below(self.retries.len()));
        self.modern_call(Some(r));
    }

    fn upstream_asks(&mut self) {
        let free: Vec<usize> = (0..self.calls.len()).filter(|i| self.calls[*i].asking.is_none()).collect();
        if free.is_empty() {
            return;
        }
        let i = free[self.rng.below(free.len())];
        let id = format!("ask-{}", self.fresh());
        let method = if self.rng.chance(50) { "elicitation/create" } else { "sampling/createMessage" };
        let mut params = ask_params(method, &self.calls[i].tag);
        if let Some(t) = self.calls[i].token.clone().filter(|_| self.rng.chance(50)) {
            params["_meta"] = json!({ "progressToken": t });
        }
        self.calls[i].asking = Some(id.clone());
        let ask = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        // As an HTTP upstream does: on the response stream of the call it serves.
        if self.rng.chance(30) {
            let call = self.calls[i].id.clone();
            self.p.upstream_says_on(0, ask, &call);
        } else {
            self.p.upstream_says(0, ask);
        }
    }

    fn upstream_answers(&mut self) {
        let free: Vec<usize> = (0..self.calls.len()).filter(|i| self.calls[*i].asking.is_none()).collect();
        if free.is_empty() {
            return;
        }
        let call = self.calls.swap_remove(free[self.rng.below(free.len())]);
        self.p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call.id, "result": { "content": [{ "type": "text", "text": call.tag }] } }));
    }

    fn client_answers(&mut self) {
        if self.relayed.is_empty() {
            return;
        }
        let (c, id, method) = self.relayed.swap_remove(self.rng.below(self.relayed.len()));
        let msg = if self.rng.chance(80) {
            json!({ "jsonrpc": "2.0", "id": id, "result": answer(&method) })
        } else {
            json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -1, "message": "user declined" } })
        };
        self.p.send(c, msg);
    }

    fn legacy_cancels(&mut self) {
        let open: Vec<usize> = (0..self.reqs.len()).filter(|i| self.reqs[*i].answers == 0 && self.legacy.contains(&self.reqs[*i].client)).collect();
        if open.is_empty() {
            return;
        }
        let r = &mut self.reqs[open[self.rng.below(open.len())]];
        r.exempt = true;
        let (c, id) = (r.client, r.id.clone());
        self.p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": id, "reason": "changed my mind" } }));
    }

    /// A modern connection closes before its answer (row streamable-http-close-is-cancel).
    fn modern_leaves(&mut self) {
        let mut open: Vec<ClientId> = self.modern.keys().copied().collect();
        open.sort_unstable();
        if open.is_empty() {
            return;
        }
        let m = open[self.rng.below(open.len())];
        self.leave(m);
    }

    fn legacy_leaves(&mut self) {
        let i = self.rng.below(self.legacy.len());
        let c = self.legacy[i];
        self.leave(c);
        self.relayed.retain(|r| r.0 != c);
        let caps: Value = serde_json::from_str(CAPS).expect("caps");
        self.legacy[i] = self.p.client("2025-11-25", caps);
    }

    fn leave(&mut self, c: ClientId) {
        for r in self.reqs.iter_mut().filter(|r| r.client == c) {
            r.exempt = true;
        }
        self.modern.remove(&c);
        self.p.hub.handle(Input::ClientDisconnected(c), self.p.now);
        self.p.pump();
    }

    fn crash(&mut self) {
        self.calls.clear();
        self.p.hub.handle(Input::UpstreamExited { up: 0, reason: "exit 1", stderr_tail: "", next: Next::Now }, self.p.now);
        self.p.pump();
        self.p.start(0, Fake::tools(&["read"]));
    }

    /// Takes every message the hub sent and checks where it went.
    fn observe(&mut self) {
        while let Some(v) = self.p.up.get_mut(&0).and_then(VecDeque::pop_front) {
            self.upstream_got(v);
        }
        // The count the runtime asks before every sleep is every client's.
        let cls = self.p.hub.clients();
        assert_eq!(cls.open_requests(), cls.keys().map(|c| cls.open_requests_of(*c)).sum::<usize>());
        let mut clients: Vec<ClientId> = self.p.cl.keys().copied().collect();
        clients.sort_unstable();
        for c in clients {
            while let Some((v, _)) = self.p.cl.get_mut(&c).and_then(VecDeque::pop_front) {
                self.client_got(c, v);
            }
        }
    }

    fn upstream_got(&mut self, v: Value) {
        match v["method"].as_str() {
            Some("tools/call") => {
                let tag = v["params"]["arguments"]["tag"].as_str().expect("the call's tag").to_string();
                let token = v["params"]["_meta"].get("progressToken").cloned();
                self.calls.push(UpCall { id: v["id"].clone(), tag, token, asking: None });
            }
            Some("notifications/cancelled") => self.calls.retain(|c| c.id != v["params"]["requestId"]),
            Some(_) => {}
            // The answer to a request for input: its call goes on.
            None => {
                for c in self.calls.iter_mut().filter(|c| c.asking.as_deref() == v["id"].as_str()) {
                    c.asking = None;
                }
            }
        }
    }

    fn client_got(&mut self, c: ClientId, v: Value) {
        if let Some(method) = v["method"].as_str() {
            if v.get("id").is_none() {
                if method == "notifications/cancelled" {
                    self.relayed.retain(|r| !(r.0 == c && r.1 == v["params"]["requestId"]));
                }
                return;
            }
            // A request for input: only to the legacy client whose call made it.
            let tag = tag_in(&v["params"]).expect("a tagged request");
            assert_eq!(self.legacy_tags.get(&tag), Some(&c), "{method} of call {tag} reached client {c}: {v}");
            self.relayed.push((c, v["id"].clone(), method.to_string()));
            return;
        }
        let r = self.reqs.iter_mut().find(|r| r.client == c && r.id == v["id"]).unwrap_or_else(|| panic!("client {c} got an answer to nothing it asked: {v}"));
        r.answers += 1;
        assert!(r.answers == 1, "client {c} got a second answer to {}: {v}", r.id);
        let Some(tag) = self.modern.remove(&c) else { return };
        if v["result"]["resultType"] == "input_required" {
            let asks: Vec<(String, String)> = v["result"]["inputRequests"].as_object().expect("inputRequests").iter().map(|(k, q)| (k.clone(), q["method"].as_str().unwrap_or("").to_string())).collect();
            for (_, q) in v["result"]["inputRequests"].as_object().expect("inputRequests") {
                assert_eq!(tag_in(q).as_deref(), Some(&*tag), "a request for input of another call reached modern client {c}: {v}");
            }
            let principal = PRINCIPALS.iter().find(|p| self.p.hub.clients.get(&c).is_some_and(|cl| cl.principal == **p)).copied().unwrap_or(PRINCIPALS[0]);
            let state = v["result"]["requestState"].as_str().expect("requestState").to_string();
            if self.rng.chance(80) {
                self.retries.push(Retry { principal, tag, state, asks });
            }
        }
        // Its answer came: the connection ends, as a modern HTTP POST does.
        self.p.hub.handle(Input::ClientDisconnected(c), self.p.now);
        self.p.pump();
    }

    /// Everything still open ends: the upstream finishes its calls, clients
    /// answer what they were asked, and time runs past every deadline.
    fn finish(&mut self) {
        self.retries.clear();
        for _ in 0..20 {
            while let Some((c, id, method)) = self.relayed.pop() {
                self.p.send(c, json!({ "jsonrpc": "2.0", "id": id, "result": answer(&method) }));
                self.observe();
            }
            while let Some(i) = (0..self.calls.len()).find(|i| self.calls[*i].asking.is_none()) {
                let call = self.calls.swap_remove(i);
                self.p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call.id, "result": { "content": [] } }));
                self.observe();
            }
            if self.calls.is_empty() && self.relayed.is_empty() && self.p.hub.pending.len() == 0 && self.p.hub.relays.len() == 0 {
                break;
            }
            self.p.advance(100_000);
            self.observe();
        }
    }

    fn check(&self, seed: u64) {
        for r in &self.reqs {
            assert!(r.answers == 1 || (r.exempt && r.answers == 0), "seed {seed}: client {} request {} got {} answers", r.client, r.id, r.answers);
        }
        assert_eq!(self.p.hub.pending.len(), 0, "seed {seed}: requests still pending upstream");
        assert_eq!(self.p.hub.relays.len(), 0, "seed {seed}: relays or held calls left");
    }
}

// covers: messages-response-same-id, mrtr-no-cross-request-use, streamable-http-post-sse-may-carry-requests
#[test]
fn seeded_interleavings_keep_every_invariant() {
    let seeds = std::env::var("MCPX_SIM_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(DEFAULT_SEEDS);
    for seed in 0..seeds {
        let mut sim = Sim::new(seed);
        for _ in 0..STEPS {
            sim.step();
        }
        sim.finish();
        sim.check(seed);
    }
}
