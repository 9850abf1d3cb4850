//! What each server did over the last minutes, for the status page: per
//! minute, its requests, their errors and their latency (p50, p99 from a
//! histogram of fixed buckets); and the last tool calls, from the same
//! records as the audit log. Bounded: [`MINUTES`] per server, the servers
//! a request was routed to (the configured ones), [`LAST_CALLS`] calls.
//! (The input requests waiting now are the hub's relays', added by
//! `Hub::status` as `waiting`.)

use std::collections::{BTreeMap, VecDeque};

use serde_json::{json, Value};

/// Minutes of activity kept per server (the page's sparklines).
pub const MINUTES: usize = 15;
/// Tool calls kept for the page.
pub const LAST_CALLS: usize = 20;
/// Servers kept (the configured ones; a name beyond this is not counted).
const MAX_SERVERS: usize = 256;
/// Upper bounds (ms) of the latency histogram's buckets; the last is open.
const BOUNDS: [u64; 15] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000];

#[derive(Clone, Debug, Default)]
struct Minute {
    /// Minutes since mcpx started.
    at: u64,
    requests: u32,
    errors: u32,
    latency: [u32; BOUNDS.len() + 1],
}

impl Minute {
    /// The latency under which fraction `q` of the requests finished: the
    /// upper bound of its bucket (the last bucket's lower one).
    fn quantile(&self, q: f64) -> Option<u64> {
        let n: u32 = self.latency.iter().sum();
        let rank = ((f64::from(n) * q).ceil() as u32).max(1);
        let mut seen = 0;
        for (i, c) in self.latency.iter().enumerate() {
            seen += c;
            if seen >= rank && n > 0 {
                return Some(BOUNDS.get(i).copied().unwrap_or(BOUNDS[BOUNDS.len() - 1]));
            }
        }
        None
    }
}

/// One tool call, as the page lists it (`S`: how its names are held).
#[derive(Clone, Debug)]
pub struct Call<S> {
    /// Unix ms of its arrival.
    pub time_ms: u64,
    pub principal: S,
    pub server: S,
    pub tool: S,
    pub outcome: &'static str,
    pub duration_ms: u64,
}

impl Call<&str> {
    /// Kept, in `into`'s buffers when it has some (the call it replaces).
    fn kept(&self, into: Option<Call<String>>) -> Call<String> {
        let mut c = into.unwrap_or_else(|| Call { time_ms: 0, principal: String::new(), server: String::new(), tool: String::new(), outcome: "", duration_ms: 0 });
        self.principal.clone_into(&mut c.principal);
        self.server.clone_into(&mut c.server);
        self.tool.clone_into(&mut c.tool);
        (c.time_ms, c.outcome, c.duration_ms) = (self.time_ms, self.outcome, self.duration_ms);
        c
    }
}

#[derive(Debug, Default)]
pub struct Activity {
    servers: BTreeMap<String, VecDeque<Minute>>,
    last: VecDeque<Call<String>>,
}

impl Activity {
    /// A request routed to `server` finished at `now_ms` (hub time) after
    /// `duration_ms`, an error or not; `call`: it was a tool call. Once
    /// the server and the last calls are there, nothing is allocated.
    pub fn record(&mut self, server: &str, error: bool, duration_ms: u64, now_ms: u64, call: Option<Call<&str>>) {
        if let Some(c) = call {
            let replaced = (self.last.len() == LAST_CALLS).then(|| self.last.pop_front()).flatten();
            self.last.push_back(c.kept(replaced));
        }
        if server.is_empty() {
            return;
        }
        // One search for a server already counted (every call but its first).
        if let Some(minutes) = self.servers.get_mut(server) {
            return count(minutes, error, duration_ms, now_ms);
        }
        if self.servers.len() < MAX_SERVERS {
            count(self.servers.entry(server.to_string()).or_default(), error, duration_ms, now_ms);
        }
    }

    /// For `/status` at `now_ms`: per server, the last [`MINUTES`] minutes,
    /// oldest first, a quiet minute as zeros (`p50Ms`/`p99Ms` null); and
    /// the last calls, newest first (whose may see them is the page's).
    pub fn to_json(&self, now_ms: u64) -> Value {
        let now = now_ms / 60_000;
        let servers: serde_json::Map<String, Value> = self.servers.iter().map(|(name, minutes)| {
            let series: Vec<Value> = (0..MINUTES as u64).rev().map(|ago| {
                let at = now.saturating_sub(ago);
                match minutes.iter().find(|m| m.at == at).filter(|_| ago <= now) {
                    Some(m) => json!({ "requests": m.requests, "errors": m.errors, "p50Ms": m.quantile(0.5), "p99Ms": m.quantile(0.99) }),
                    None => json!({ "requests": 0, "errors": 0, "p50Ms": null, "p99Ms": null }),
                }
            }).collect();
            (name.clone(), Value::Array(series))
        }).collect();
        let calls: Vec<Value> = self.last.iter().rev().map(|c| json!({
            "timeMs": c.time_ms, "principal": c.principal, "server": c.server, "tool": c.tool, "outcome": c.outcome, "durationMs": c.duration_ms,
        })).collect();
        json!({ "minutes": servers, "lastCalls": calls })
    }
}

/// A request of a server, finished at `now_ms` after `duration_ms`, an
/// error or not: counted in its minute.
fn count(minutes: &mut VecDeque<Minute>, error: bool, duration_ms: u64, now_ms: u64) {
    let at = now_ms / 60_000;
    if minutes.back().is_none_or(|m| m.at != at) {
        minutes.push_back(Minute { at, ..Minute::default() });
        while minutes.len() > MINUTES {
            minutes.pop_front();
        }
    }
    let Some(m) = minutes.back_mut() else { return };
    m.requests += 1;
    m.errors += u32::from(error);
    let bucket = BOUNDS.iter().position(|&b| duration_ms <= b).unwrap_or(BOUNDS.len());
    m.latency[bucket] += 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str) -> Option<Call<&str>> {
        Some(Call { time_ms: 1, principal: "alice", server: "s", tool, outcome: "result", duration_ms: 3 })
    }

    #[test]
    fn minutes_roll_and_quiet_ones_read_as_zero() {
        let mut a = Activity::default();
        for (ms, err, dur) in [(0, false, 3), (10_000, true, 40), (61_000, false, 700), (20 * 60_000, false, 1)] {
            a.record("s", err, dur, ms, None);
        }
        let v = a.to_json(20 * 60_000);
        let s = v["minutes"]["s"].as_array().unwrap();
        assert_eq!(s.len(), MINUTES);
        assert_eq!(s[MINUTES - 1], json!({ "requests": 1, "errors": 0, "p50Ms": 1, "p99Ms": 1 }), "this minute");
        assert!(s[..MINUTES - 1].iter().all(|m| m["requests"] == 0 && m["p50Ms"].is_null()), "minutes 0 and 1 are older than 15: {s:?}");
        let v = a.to_json(61_000);
        let s = v["minutes"]["s"].as_array().unwrap();
        assert_eq!(s[MINUTES - 2], json!({ "requests": 2, "errors": 1, "p50Ms": 5, "p99Ms": 50 }));
        assert_eq!(s[MINUTES - 1]["p99Ms"], 1_000);
    }

    #[test]
    fn quantiles_are_bucket_bounds() {
        let mut m = Minute::default();
        assert_eq!(m.quantile(0.5), None);
        m.latency[0] = 98;
        m.latency[BOUNDS.len()] = 2;
        assert_eq!((m.quantile(0.5), m.quantile(0.99)), (Some(1), Some(60_000)));
    }

    #[test]
    fn the_last_calls_are_kept_newest_first_and_bounded() {
        let mut a = Activity::default();
        for i in 0..LAST_CALLS + 5 {
            let tool = format!("t{i}");
            a.record("s", false, 3, 0, call(&tool));
        }
        let v = a.to_json(0);
        let calls = v["lastCalls"].as_array().unwrap();
        assert_eq!(calls.len(), LAST_CALLS);
        assert_eq!(calls[0]["tool"], format!("t{}", LAST_CALLS + 4));
        a.record("", false, 1, 0, None);
        assert!(a.to_json(0)["minutes"].get("").is_none(), "a request no server had is no server's");
    }
}
