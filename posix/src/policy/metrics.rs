//! Metrics: counters, gauges and fixed-bucket histograms with labels,
//! rendered in the Prometheus text exposition format 0.0.4 (`HELP`/`TYPE`
//! lines, escaped label values, `_bucket{le=..}`/`_sum`/`_count`).
//!
//! Sans-IO: the hub updates a [`Registry`] (through [`HubMetrics`]) and the
//! HTTP listener serves [`Registry::render`] at `/metrics` with the
//! content type [`CONTENT_TYPE`] (and [`Registry::to_json`] in `/status`).
//!
//! Label sets are bounded: a family holds at most `max_series` series;
//! past that, new label sets are counted in one series whose every label
//! is `"_other"`, so a client sending made-up names cannot grow the table.

use std::fmt::Write;

/// The `Content-Type` of [`Registry::render`]'s output.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The label value of the overflow series.
pub const OTHER: &str = "_other";

/// Labels a family may have at most.
const MAX_LABELS: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Counter,
    Gauge,
    /// Upper bounds, ascending; `+Inf` is implied.
    Histogram(&'static [f64]),
}

/// A family registered in a [`Registry`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FamilyId(usize);

#[derive(Clone, Debug)]
enum Series {
    Value(f64),
    /// Per-bucket (not cumulative) counts, the `+Inf` bucket last.
    Histogram { counts: Vec<u64>, sum: f64 },
}

#[derive(Clone, Debug)]
struct Family {
    name: &'static str,
    help: &'static str,
    kind: Kind,
    labels: &'static [&'static str],
    series: Table,
}

#[derive(Clone, Debug)]
pub struct Registry {
    families: Vec<Family>,
    max_series: usize,
}

/// A family's series in the order of their label values (as a sorted
/// map keeps them), found by a binary search on the caller's values, which
/// are copied in once, when their series is made.
#[derive(Clone, Debug, Default)]
struct Table {
    series: Vec<(Vec<String>, Series)>,
}

impl Table {
    /// Where the series of `values` is, or would go.
    fn find(&self, values: &[&str]) -> Result<usize, usize> {
        self.series.binary_search_by(|(k, _)| k.iter().map(String::as_str).cmp(values.iter().copied()))
    }

    fn get(&self, values: &[&str]) -> Option<&Series> {
        self.find(values).ok().map(|i| &self.series[i].1)
    }

    /// The series at `found` (of [`Table::find`]), made by `new` if there
    /// was none.
    fn at(&mut self, found: Result<usize, usize>, values: &[&str], new: impl FnOnce() -> Series) -> &mut Series {
        let i = found.unwrap_or_else(|i| {
            self.series.insert(i, (values.iter().map(|v| v.to_string()).collect(), new()));
            i
        });
        &mut self.series[i].1
    }

    fn len(&self) -> usize {
        self.series.len()
    }

    fn iter(&self) -> impl Iterator<Item = (&Vec<String>, &Series)> {
        self.series.iter().map(|(k, s)| (k, s))
    }

    /// Removes the series whose label `at` is `value`.
    fn remove(&mut self, at: usize, value: &str) {
        self.series.retain(|(k, _)| k.get(at).is_none_or(|v| v != value));
    }
}

impl Registry {
    pub fn new(max_series: usize) -> Self {
        Registry { families: Vec::new(), max_series: max_series.max(1) }
    }

    pub fn register(&mut self, name: &'static str, help: &'static str, kind: Kind, labels: &'static [&'static str]) -> FamilyId {
        debug_assert!(!self.families.iter().any(|f| f.name == name), "{name} registered twice");
        assert!(labels.len() <= MAX_LABELS, "{name}: more than {MAX_LABELS} labels");
        self.families.push(Family { name, help, kind, labels, series: Table::default() });
        FamilyId(self.families.len() - 1)
    }

    /// Adds `by` to a counter or gauge.
    pub fn add(&mut self, id: FamilyId, values: &[&str], by: f64) {
        self.update(id, values, |s| {
            if let Series::Value(v) = s {
                *v += by;
            }
        });
    }

    /// Sets a gauge (or a counter kept elsewhere, e.g. dropped audit lines).
    pub fn set(&mut self, id: FamilyId, values: &[&str], to: f64) {
        self.update(id, values, |s| {
            if let Series::Value(v) = s {
                *v = to;
            }
        });
    }

    /// Removes the series whose label `at` is `value`.
    pub fn remove(&mut self, id: FamilyId, at: usize, value: &str) {
        self.families[id.0].series.remove(at, value);
    }

    /// Records one observation in a histogram.
    pub fn observe(&mut self, id: FamilyId, values: &[&str], x: f64) {
        let Kind::Histogram(bounds) = self.families[id.0].kind else { return };
        self.update(id, values, |s| {
            if let Series::Histogram { counts, sum } = s {
                let i = bounds.iter().position(|b| x <= *b).unwrap_or(bounds.len());
                counts[i] += 1;
                *sum += x;
            }
        });
    }

    /// Adds `counts` (per bucket, `+Inf` last) and their `sum` to a histogram.
    fn merge(&mut self, id: FamilyId, values: &[&str], counts: &[u64], sum: f64) {
        self.update(id, values, |s| {
            if let Series::Histogram { counts: mine, sum: total } = s {
                mine.iter_mut().zip(counts).for_each(|(m, n)| *m += n);
                *total += sum;
            }
        });
    }

    /// Applies `op` to the series of `values`, created on first use (the
    /// overflow series past `max_series`); nothing for a wrong number of
    /// values.
    fn update(&mut self, id: FamilyId, values: &[&str], op: impl FnOnce(&mut Series)) {
        let max = self.max_series;
        let f = &mut self.families[id.0];
        debug_assert_eq!(values.len(), f.labels.len(), "labels of {}", f.name);
        if values.len() != f.labels.len() {
            return;
        }
        let kind = f.kind;
        let new = move || match kind {
            Kind::Histogram(b) => Series::Histogram { counts: vec![0; b.len() + 1], sum: 0.0 },
            _ => Series::Value(0.0),
        };
        let (found, values) = match f.series.find(values) {
            Err(_) if f.series.len() >= max => {
                let overflow = &[OTHER; MAX_LABELS][..values.len()];
                (f.series.find(overflow), overflow)
            }
            found => (found, values),
        };
        op(f.series.at(found, values, new));
    }

    /// A counter's or gauge's value (tests and `/status`).
    pub fn value(&self, id: FamilyId, values: &[&str]) -> Option<f64> {
        match self.families[id.0].series.get(values)? {
            Series::Value(v) => Some(*v),
            Series::Histogram { .. } => None,
        }
    }

    /// Every family as JSON, for `/status`: `{name: [{"labels": {..},
    /// "value": n}]}`, histograms with `count`, `sum` and cumulative
    /// `buckets` of `[le, count]` instead of `value`.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::{json, Map, Value};
        let mut out = Map::new();
        for f in &self.families {
            let series = f.series.iter().map(|(values, s)| {
                let labels: Map<String, Value> = f.labels.iter().zip(values).map(|(k, v)| (k.to_string(), Value::from(v.as_str()))).collect();
                match (s, f.kind) {
                    (Series::Histogram { counts, sum }, Kind::Histogram(bounds)) => {
                        let mut cumulative = 0;
                        let buckets: Vec<Value> = counts
                            .iter()
                            .enumerate()
                            .map(|(i, c)| {
                                cumulative += c;
                                json!([bounds.get(i).map_or(Value::from("+Inf"), |b| json!(b)), cumulative])
                            })
                            .collect();
                        json!({"labels": labels, "count": cumulative, "sum": sum, "buckets": buckets})
                    }
                    (Series::Value(v), _) => json!({"labels": labels, "value": v}),
                    (Series::Histogram { .. }, _) => Value::Null,
                }
            });
            out.insert(f.name.to_string(), Value::Array(series.collect()));
        }
        Value::Object(out)
    }

    /// The text exposition of every family.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for f in &self.families {
            let kind = match f.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Histogram(_) => "histogram",
            };
            let _ = writeln!(out, "# HELP {} {}", f.name, escape(f.help, false));
            let _ = writeln!(out, "# TYPE {} {kind}", f.name);
            for (values, s) in f.series.iter() {
                let labels = |extra: Option<(&str, &str)>| {
                    let mut pairs: Vec<String> =
                        f.labels.iter().zip(values).map(|(k, v)| format!("{k}=\"{}\"", escape(v, true))).collect();
                    if let Some((k, v)) = extra {
                        pairs.push(format!("{k}=\"{v}\""));
                    }
                    if pairs.is_empty() {
                        String::new()
                    } else {
                        format!("{{{}}}", pairs.join(","))
                    }
                };
                match (s, f.kind) {
                    (Series::Value(v), _) => {
                        let _ = writeln!(out, "{}{} {}", f.name, labels(None), number(*v));
                    }
                    (Series::Histogram { counts, sum }, Kind::Histogram(bounds)) => {
                        let mut cumulative = 0;
                        for (i, c) in counts.iter().enumerate() {
                            cumulative += c;
                            let le = bounds.get(i).map_or("+Inf".to_string(), |b| number(*b));
                            let _ = writeln!(out, "{}_bucket{} {cumulative}", f.name, labels(Some(("le", &le))));
                        }
                        let _ = writeln!(out, "{}_sum{} {}", f.name, labels(None), number(*sum));
                        let _ = writeln!(out, "{}_count{} {cumulative}", f.name, labels(None));
                    }
                    (Series::Histogram { .. }, _) => {}
                }
            }
        }
        out
    }
}

/// Escapes `\` and newlines (HELP text), and `"` too in label values.
fn escape(s: &str, quote: bool) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '"' if quote => o.push_str("\\\""),
            c => o.push(c),
        }
    }
    o
}

/// A sample value: Go's float syntax (`+Inf`, `-Inf`, `NaN`).
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// Latency buckets, seconds.
pub const LATENCY_BUCKETS: &[f64] = &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// How a request ended, as the `outcome` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Result,
    ToolError,
    Error,
    Refused,
}

impl Outcome {
    const ALL: [Outcome; 4] = [Outcome::Result, Outcome::ToolError, Outcome::Error, Outcome::Refused];

    pub const fn label(self) -> &'static str {
        match self {
            Outcome::Result => "result",
            Outcome::ToolError => "tool_error",
            Outcome::Error => "error",
            Outcome::Refused => "refused",
        }
    }
}

/// Methods counted by name; anything else (a client's made-up method) is
/// counted as `"other"`.
const METHODS: &[&str] = &[
    "initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list",
    "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe",
    "completion/complete", "logging/setLevel", "sampling/createMessage", "elicitation/create", "roots/list",
    "server/discover", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel",
    #[cfg(feature = "skills")]
    "skills/list",
    #[cfg(feature = "skills")]
    "skills/get",
    #[cfg(feature = "skills")]
    "resources/directory/read",
];

/// The hub's metric families.
#[derive(Debug)]
pub struct HubMetrics {
    /// Request figures reach it from `unread` when it is read
    /// ([`HubMetrics::read`], [`HubMetrics::to_json`]).
    pub registry: Registry,
    answered: Answered,
    /// Per server (the last few answering), figures not in `registry` yet.
    unread: Vec<Unread>,
    refusals: FamilyId,
    upstream_up: FamilyId,
    restarts: FamilyId,
    sessions: FamilyId,
    connections: FamilyId,
    queue_depth: FamilyId,
    audit_dropped: FamilyId,
    notifications_dropped: FamilyId,
    pin_changes: FamilyId,
    pin_findings: FamilyId,
    #[cfg(feature = "traces")]
    trace_spans: FamilyId,
    #[cfg(feature = "skills")]
    skill_mismatches: FamilyId,
}

/// The families every answered request adds to.
#[derive(Clone, Copy, Debug)]
struct Answered {
    requests: FamilyId,
    latency: FamilyId,
    bytes: FamilyId,
    #[cfg(feature = "secrets")]
    identities: FamilyId,
}

/// Servers whose answered requests are counted apart at once; a further
/// one moves their counts into the registry first.
const UNREAD_SERVERS: usize = 8;

/// Identities a server is reached as (`upstream_identity`).
#[cfg(feature = "secrets")]
const IDENTITIES: [&str; 2] = ["principal", "server"];

/// One server's answered requests not yet added to the registry: a request
/// adds to these arrays (no series looked up by its labels per request).
#[derive(Clone, Debug)]
struct Unread {
    server: String,
    /// By method (`METHODS`, then `"other"`) and outcome (`Outcome::ALL`).
    requests: Vec<[u64; 4]>,
    /// Per latency bucket, `+Inf` last, and their sum in seconds.
    latency: Vec<u64>,
    latency_sum: f64,
    /// In, out.
    bytes: [u64; 2],
    #[cfg(feature = "secrets")]
    identities: [u64; IDENTITIES.len()],
}

impl Unread {
    fn new(server: &str) -> Unread {
        Unread {
            server: server.to_string(),
            requests: vec![[0; 4]; METHODS.len() + 1],
            latency: vec![0; LATENCY_BUCKETS.len() + 1],
            latency_sum: 0.0,
            bytes: [0; 2],
            #[cfg(feature = "secrets")]
            identities: [0; IDENTITIES.len()],
        }
    }

    /// Adds these counts to `r` (series made only for counts there are).
    fn add_to(&self, r: &mut Registry, f: Answered) {
        let server = self.server.as_str();
        let methods = METHODS.iter().chain(["other"].iter());
        for (method, counts) in methods.zip(&self.requests) {
            for (outcome, n) in Outcome::ALL.iter().zip(counts).filter(|(_, n)| **n > 0) {
                r.add(f.requests, &[method, server, outcome.label()], *n as f64);
            }
        }
        if self.latency.iter().any(|n| *n > 0) {
            r.merge(f.latency, &[server], &self.latency, self.latency_sum);
            r.add(f.bytes, &[server, "in"], self.bytes[0] as f64);
            r.add(f.bytes, &[server, "out"], self.bytes[1] as f64);
        }
        #[cfg(feature = "secrets")]
        for (identity, n) in IDENTITIES.iter().zip(self.identities).filter(|(_, n)| *n > 0) {
            r.add(f.identities, &[server, identity], n as f64);
        }
    }

    fn clear(&mut self) {
        self.requests.fill([0; 4]);
        self.latency.fill(0);
        self.latency_sum = 0.0;
        self.bytes = [0; 2];
        #[cfg(feature = "secrets")]
        {
            self.identities = [0; IDENTITIES.len()];
        }
    }
}

impl HubMetrics {
    pub fn new(max_series: usize) -> Self {
        let mut r = Registry::new(max_series);
        let answered = Answered {
            requests: r.register("mcpx_requests_total", "Requests answered, by method, server and outcome.", Kind::Counter, &["method", "server", "outcome"]),
            latency: r.register("mcpx_request_duration_seconds", "Time from a request's arrival to its answer, per server.", Kind::Histogram(LATENCY_BUCKETS), &["server"]),
            bytes: r.register("mcpx_bytes_total", "Message bytes, per server and direction (in: from clients, out: to clients).", Kind::Counter, &["server", "direction"]),
            #[cfg(feature = "secrets")]
            identities: r.register("mcpx_upstream_identity_requests_total", "Requests answered by a server, per server and the identity it was reached with: principal (the caller's own credentials: per-principal secrets or OAuth) or server (the one the config gives every caller).", Kind::Counter, &["server", "identity"]),
        };
        HubMetrics {
            answered,
            unread: Vec::new(),
            refusals: r.register("mcpx_refusals_total", "Requests refused by a policy limit, per limit.", Kind::Counter, &["limit"]),
            upstream_up: r.register("mcpx_upstream_up", "1 when the upstream server is ready, else 0.", Kind::Gauge, &["server"]),
            restarts: r.register("mcpx_upstream_restarts_total", "Restarts of the upstream server.", Kind::Counter, &["server"]),
            sessions: r.register("mcpx_sessions", "Open client sessions.", Kind::Gauge, &[]),
            connections: r.register("mcpx_connections", "Open client connections.", Kind::Gauge, &[]),
            queue_depth: r.register("mcpx_queue_depth", "Messages waiting, per queue.", Kind::Gauge, &["queue"]),
            audit_dropped: r.register("mcpx_audit_dropped_lines_total", "Audit lines dropped because the writer fell behind.", Kind::Counter, &[]),
            notifications_dropped: r.register("mcpx_notifications_dropped_total", "Upstream notifications dropped over a per-request cap, per server and kind.", Kind::Counter, &["server", "kind"]),
            pin_changes: r.register("mcpx_pin_changes_total", "Definitions that differ from their pin (changed, new, renamed), per server and list.", Kind::Counter, &["server", "kind"]),
            pin_findings: r.register("mcpx_pin_findings_total", "Findings of the inspection of definitions, per server and finding.", Kind::Counter, &["server", "finding"]),
            #[cfg(feature = "traces")]
            trace_spans: r.register("mcpx_trace_spans_total", "Finished trace spans: exported, failed (the export failed) or dropped (the queue was full, or too many requests were traced at once).", Kind::Counter, &["outcome"]),
            #[cfg(feature = "skills")]
            skill_mismatches: r.register("mcpx_skill_digest_mismatches_total", "Reads of a skill's file refused because its bytes differ from the digest or size its server published, per server.", Kind::Counter, &["server"]),
            registry: r,
        }
    }

    pub fn pin_changed(&mut self, server: &str, kind: &str) {
        self.registry.add(self.pin_changes, &[server, kind], 1.0);
    }

    #[cfg(feature = "skills")]
    pub fn skill_mismatch(&mut self, server: &str) {
        self.registry.add(self.skill_mismatches, &[server], 1.0);
    }

    pub fn pin_finding(&mut self, server: &str, finding: &str) {
        self.registry.add(self.pin_findings, &[server, finding], 1.0);
    }

    /// One answered request: counts, latency, bytes.
    pub fn request(&mut self, method: &str, server: &str, outcome: Outcome, duration_ms: u64, bytes_in: u64, bytes_out: u64) {
        let method = METHODS.iter().position(|m| *m == method).unwrap_or(METHODS.len());
        let seconds = duration_ms as f64 / 1000.0;
        let u = self.unread_of(server);
        u.requests[method][outcome as usize] += 1;
        u.latency[LATENCY_BUCKETS.iter().position(|b| seconds <= *b).unwrap_or(LATENCY_BUCKETS.len())] += 1;
        u.latency_sum += seconds;
        u.bytes[0] += bytes_in;
        u.bytes[1] += bytes_out;
    }

    /// One answered request of `server`, reached as `identity` (`principal` or `server`).
    #[cfg(feature = "secrets")]
    pub fn upstream_identity(&mut self, server: &str, identity: &str) {
        match IDENTITIES.iter().position(|i| *i == identity) {
            Some(i) => self.unread_of(server).identities[i] += 1,
            None => self.registry.add(self.answered.identities, &[server, identity], 1.0),
        }
    }

    /// The unread counts of `server` (the counts of all moved into the
    /// registry first when there is no room for another server).
    fn unread_of(&mut self, server: &str) -> &mut Unread {
        let i = match self.unread.iter().position(|u| u.server == server) {
            Some(i) => i,
            None => {
                if self.unread.len() >= UNREAD_SERVERS {
                    self.flush();
                    self.unread.clear();
                }
                self.unread.push(Unread::new(server));
                self.unread.len() - 1
            }
        };
        &mut self.unread[i]
    }

    /// Moves the unread counts into the registry.
    fn flush(&mut self) {
        for u in &mut self.unread {
            u.add_to(&mut self.registry, self.answered);
            u.clear();
        }
    }

    /// The registry with every request counted.
    pub fn read(&mut self) -> &Registry {
        self.flush();
        &self.registry
    }

    /// [`Registry::to_json`] with every request counted, and what `more`
    /// adds of counts kept elsewhere (on a copy: the status page reads
    /// without changing anything).
    pub fn to_json(&self, more: impl FnOnce(&mut Registry)) -> serde_json::Value {
        let mut r = self.registry.clone();
        for u in &self.unread {
            u.add_to(&mut r, self.answered);
        }
        more(&mut r);
        r.to_json()
    }

    pub fn refused(&mut self, limit: &str) {
        self.registry.add(self.refusals, &[limit], 1.0);
    }

    /// A `progress` or `log` notification dropped over its request's cap.
    pub fn notification_dropped(&mut self, server: &str, kind: &str) {
        self.registry.add(self.notifications_dropped, &[server, kind], 1.0);
    }

    pub fn upstream(&mut self, server: &str, up: bool, restarts: u64) {
        self.registry.set(self.upstream_up, &[server], if up { 1.0 } else { 0.0 });
        self.registry.set(self.restarts, &[server], restarts as f64);
    }

    /// Sessions, connections and queue depths, sampled when `/metrics` is served.
    pub fn load(&mut self, sessions: usize, connections: usize, queues: &[(&str, usize)]) {
        self.registry.set(self.sessions, &[], sessions as f64);
        self.registry.set(self.connections, &[], connections as f64);
        for (q, n) in queues {
            self.registry.set(self.queue_depth, &[q], *n as f64);
        }
    }

    /// The tracer's counts of spans (`"traces"`).
    #[cfg(feature = "traces")]
    pub fn trace_counts(&mut self, dropped: u64, exported: u64, failed: u64) {
        for (outcome, n) in [("dropped", dropped), ("exported", exported), ("failed", failed)] {
            self.registry.set(self.trace_spans, &[outcome], n as f64);
        }
    }

    pub fn audit_dropped(&mut self, n: u64) {
        self.registry.set(self.audit_dropped, &[], n as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use std::io::Write as _;
    use std::process::{Command, Stdio};

    /// Parses `text` with prometheus_client's parser (the pinned venv of
    /// tests/peers/python/prom.txt): families as
    /// `[name, type, help, [[sample, labels, value], ..]]`.
    fn parse_with_prometheus_client(text: &str) -> Value {
        let py = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.peers/py/prom/bin/python");
        assert!(py.exists(), "{} missing: run `bash tests/peers/install.sh`", py.display());
        let script = r#"
import json, math, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for f in text_string_to_metric_families(sys.stdin.read()):
    out.append([f.name, f.type, f.documentation,
                [[s.name, s.labels, "+Inf" if s.value == math.inf else float(s.value)] for s in f.samples]])
print(json.dumps(out))
"#;
        let mut child = Command::new(py)
            .args(["-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start python");
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "prometheus_client rejected the exposition:\n{}\n{text}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    #[test]
    fn the_exposition_parses_with_prometheus_client_and_the_numbers_match() {
        let mut m = HubMetrics::new(100);
        m.request("tools/call", "gh", Outcome::Result, 3, 100, 400);
        m.request("tools/call", "gh", Outcome::Result, 70, 50, 60);
        m.request("tools/call", "gh", Outcome::ToolError, 2000, 1, 2);
        m.request("no/such", "fs", Outcome::Error, 0, 5, 6);
        m.refused("policy.rateLimits.toolCalls.perTool[\"gh__*\"] (1/min)");
        m.upstream("gh", true, 2);
        m.load(3, 4, &[("gh", 7)]);
        m.audit_dropped(9);
        let text = m.read().render();
        let fams = parse_with_prometheus_client(&text);
        let fam = |name: &str| fams.as_array().unwrap().iter().find(|f| f[0] == name).unwrap_or_else(|| panic!("{name} missing in {fams}")).clone();

        let req = fam("mcpx_requests");
        assert_eq!(req[1], "counter");
        assert_eq!(req[2], "Requests answered, by method, server and outcome.");
        let samples = req[3].as_array().unwrap();
        assert_eq!(samples.len(), 3);
        assert!(samples.contains(&json!(["mcpx_requests_total", {"method": "tools/call", "server": "gh", "outcome": "result"}, 2.0])));
        assert!(samples.contains(&json!(["mcpx_requests_total", {"method": "other", "server": "fs", "outcome": "error"}, 1.0])));

        let lat = fam("mcpx_request_duration_seconds");
        assert_eq!(lat[1], "histogram");
        let gh: Vec<&Value> = lat[3].as_array().unwrap().iter().filter(|s| s[1]["server"] == "gh").collect();
        let bucket = |le: &str| gh.iter().find(|s| s[0] == "mcpx_request_duration_seconds_bucket" && s[1]["le"] == le).unwrap()[2].clone();
        assert_eq!(bucket("0.005"), 1.0);
        assert_eq!(bucket("0.1"), 2.0);
        assert_eq!(bucket("1"), 2.0);
        assert_eq!(bucket("2.5"), 3.0);
        assert_eq!(bucket("+Inf"), 3.0);
        let sum = gh.iter().find(|s| s[0] == "mcpx_request_duration_seconds_sum").unwrap()[2].as_f64().unwrap();
        assert!((sum - 2.073).abs() < 1e-9, "{sum}");
        assert!(gh.iter().any(|s| s[0] == "mcpx_request_duration_seconds_count" && s[2] == 3.0));

        assert!(fam("mcpx_bytes")[3].as_array().unwrap().contains(&json!(["mcpx_bytes_total", {"server": "gh", "direction": "in"}, 151.0])));
        assert_eq!(fam("mcpx_refusals")[3][0][1]["limit"], "policy.rateLimits.toolCalls.perTool[\"gh__*\"] (1/min)");
        assert_eq!(fam("mcpx_upstream_up")[3][0][2], 1.0);
        assert_eq!(fam("mcpx_upstream_restarts")[3][0][2], 2.0);
        assert_eq!(fam("mcpx_sessions")[3], json!([["mcpx_sessions", {}, 3.0]]));
        assert_eq!(fam("mcpx_queue_depth")[3], json!([["mcpx_queue_depth", {"queue": "gh"}, 7.0]]));
        assert_eq!(fam("mcpx_audit_dropped_lines")[3][0][2], 9.0);
    }

    #[test]
    fn help_and_label_values_are_escaped() {
        let mut r = Registry::new(10);
        let g = r.register("t_gauge", "Back\\slash and\nnewline.", Kind::Gauge, &["v"]);
        r.set(g, &["quo\"te \\ new\nline"], -1.5);
        let c = r.register("t_inf", "x", Kind::Gauge, &[]);
        r.set(c, &[], f64::INFINITY);
        let text = r.render();
        assert!(text.contains("# HELP t_gauge Back\\\\slash and\\nnewline.\n"), "{text}");
        assert!(text.contains("t_gauge{v=\"quo\\\"te \\\\ new\\nline\"} -1.5\n"), "{text}");
        assert!(text.contains("t_inf +Inf\n"), "{text}");
        let fams = parse_with_prometheus_client(&text);
        assert_eq!(fams[0][2], "Back\\slash and\nnewline.");
        assert_eq!(fams[0][3][0], json!(["t_gauge", {"v": "quo\"te \\ new\nline"}, -1.5]));
        assert_eq!(fams[1][3][0][2], "+Inf");
    }

    #[test]
    fn the_status_json_has_the_same_numbers() {
        let mut m = HubMetrics::new(100);
        m.request("tools/call", "gh", Outcome::Result, 3, 100, 400);
        m.request("tools/call", "gh", Outcome::Result, 700, 1, 1);
        m.load(2, 0, &[]);
        let j = m.to_json(|_| {});
        assert_eq!(j["mcpx_requests_total"], json!([{"labels": {"method": "tools/call", "server": "gh", "outcome": "result"}, "value": 2.0}]));
        assert_eq!(j["mcpx_sessions"], json!([{"labels": {}, "value": 2.0}]));
        let h = &j["mcpx_request_duration_seconds"][0];
        assert_eq!((h["count"].as_u64(), h["labels"]["server"].as_str()), (Some(2), Some("gh")));
        assert!((h["sum"].as_f64().unwrap() - 0.703).abs() < 1e-9);
        assert_eq!(h["buckets"][0], json!([0.005, 1]));
        assert_eq!(h["buckets"][7], json!([1.0, 2]));
        assert_eq!(h["buckets"][LATENCY_BUCKETS.len()], json!(["+Inf", 2]));
        assert_eq!(j["mcpx_upstream_up"], json!([]));
    }

    #[test]
    fn label_sets_are_bounded() {
        let mut r = Registry::new(3);
        let c = r.register("t_total", "x", Kind::Counter, &["server"]);
        for i in 0..1000 {
            r.add(c, &[&format!("s{i}")], 1.0);
        }
        r.add(c, &["s0"], 1.0);
        assert_eq!(r.value(c, &["s0"]), Some(2.0));
        assert_eq!(r.value(c, &[OTHER]), Some(997.0));
        assert_eq!(r.render().lines().filter(|l| !l.starts_with('#')).count(), 4);
        // Made-up methods do not make series either.
        let mut m = HubMetrics::new(100);
        for i in 0..50 {
            m.request(&format!("x/{i}"), "s", Outcome::Error, 1, 0, 0);
        }
        let requests = m.answered.requests;
        assert_eq!(m.read().value(requests, &["other", "s", "error"]), Some(50.0));
    }

    #[test]
    fn requests_counted_apart_reach_the_registry_whenever_it_is_read() {
        let mut m = HubMetrics::new(1000);
        let servers: Vec<String> = (0..=UNREAD_SERVERS * 2).map(|i| format!("s{i}")).collect();
        for _ in 0..3 {
            for s in &servers {
                m.request("tools/call", s, Outcome::Result, 20, 10, 100);
                #[cfg(feature = "secrets")]
                m.upstream_identity(s, "principal");
            }
        }
        // The status page's copy counts them all, twice the same.
        for _ in 0..2 {
            let j = m.to_json(|_| {});
            let calls = j["mcpx_requests_total"].as_array().unwrap();
            assert_eq!(calls.len(), servers.len());
            assert!(calls.iter().all(|c| c["value"] == 3.0), "{calls:?}");
        }
        let a = m.answered;
        for _ in 0..2 {
            let r = m.read();
            for s in &servers {
                assert_eq!(r.value(a.requests, &["tools/call", s, "result"]), Some(3.0), "{s}");
                assert_eq!(r.value(a.bytes, &[s, "in"]), Some(30.0), "{s}");
                assert_eq!(r.value(a.bytes, &[s, "out"]), Some(300.0), "{s}");
                #[cfg(feature = "secrets")]
                assert_eq!(r.value(a.identities, &[s, "principal"]), Some(3.0), "{s}");
            }
            let text = r.render();
            assert!(text.contains("mcpx_request_duration_seconds_count{server=\"s0\"} 3\n"), "{text}");
            assert!(text.contains("mcpx_request_duration_seconds_bucket{server=\"s16\",le=\"0.025\"} 3\n"), "{text}");
        }
    }

    #[test]
    fn series_are_found_whatever_the_order_they_were_made_in_and_listed_in_order() {
        let mut r = Registry::new(100);
        let c = r.register("t_bytes_total", "x", Kind::Counter, &["server", "direction"]);
        // Made out of order, each found again after its neighbours and after series far off.
        for by in [1.0, 2.0, 3.0] {
            for server in ["b", "a", "c"] {
                for direction in ["out", "in"] {
                    r.add(c, &[server, direction], by);
                }
                r.add(c, &["a", "in"], 0.0);
            }
        }
        r.remove(c, 0, "c");
        r.add(c, &["b", "in"], 10.0);
        let text = r.render();
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines,
            [
                "t_bytes_total{server=\"a\",direction=\"in\"} 6",
                "t_bytes_total{server=\"a\",direction=\"out\"} 6",
                "t_bytes_total{server=\"b\",direction=\"in\"} 16",
                "t_bytes_total{server=\"b\",direction=\"out\"} 6",
            ]
        );
        assert_eq!(r.value(c, &["c", "in"]), None);
        assert_eq!(r.value(c, &["b"]), None);
    }
}
