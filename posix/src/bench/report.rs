//! Results: medians across rounds, the printed table, the JSON, and the
//! verdicts against the project's targets.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{Plan, CLIENTS, PAYLOADS, WINDOWS};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Section {
    Stdio,
    Http,
    Footprint,
    Alloc,
}

impl Section {
    fn name(self) -> &'static str {
        match self {
            Section::Stdio => "stdio",
            Section::Http => "http",
            Section::Footprint => "footprint",
            Section::Alloc => "alloc",
        }
    }
}

/// One row: section, target, payload bytes, and requests in flight
/// (stdio), clients (HTTP) or upstreams (footprint).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub section: Section,
    pub target: String,
    pub payload: usize,
    pub conc: usize,
}

impl Key {
    pub fn stdio(target: &str, payload: usize, window: usize) -> Key {
        Key {
            section: Section::Stdio,
            target: target.into(),
            payload,
            conc: window,
        }
    }
    pub fn http(target: &str, payload: usize, clients: usize) -> Key {
        Key {
            section: Section::Http,
            target: target.into(),
            payload,
            conc: clients,
        }
    }
    /// `upstreams == 0`: the upstream alone (the start-up floor).
    pub fn footprint(upstreams: usize) -> Key {
        let target = if upstreams == 0 {
            "upstream alone"
        } else {
            "mcpx serve"
        };
        Key {
            section: Section::Footprint,
            target: target.into(),
            payload: 0,
            conc: upstreams,
        }
    }
    pub fn alloc(payload: usize) -> Key {
        Key {
            section: Section::Alloc,
            target: "mcpx serve".into(),
            payload,
            conc: 1,
        }
    }
}

/// What one run of one row measured. Every field is optional: rows fill
/// what applies to them.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    pub requests: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub rps: Option<f64>,
    pub cpu_us_per_req: Option<f64>,
    /// CPU of the load generator itself (HTTP rows), to show it is not the bottleneck.
    pub client_cpu_us_per_req: Option<f64>,
    /// Peak RSS (VmHWM) for load rows; RSS after load for footprint rows.
    pub rss_kib: Option<u64>,
    pub rss_idle_kib: Option<u64>,
    pub hwm_kib: Option<u64>,
    pub start_init_ms: Option<f64>,
    pub start_call_ms: Option<f64>,
    pub allocs_per_req: Option<f64>,
    pub alloc_bytes_per_req: Option<f64>,
    pub errors: u64,
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

impl Metrics {
    pub fn from_latencies(lat_ns: &[u64], elapsed_ns: u64, errors: u64) -> Metrics {
        let mut s = lat_ns.to_vec();
        s.sort_unstable();
        Metrics {
            requests: Some(s.len() as f64),
            p50_us: Some(percentile(&s, 0.50) / 1e3),
            p99_us: Some(percentile(&s, 0.99) / 1e3),
            rps: Some(s.len() as f64 * 1e9 / elapsed_ns.max(1) as f64),
            errors,
            ..Metrics::default()
        }
    }

    fn median_of(runs: &[Metrics]) -> Metrics {
        let f = |g: &dyn Fn(&Metrics) -> Option<f64>| median(runs.iter().filter_map(g).collect());
        let k = |g: &dyn Fn(&Metrics) -> Option<u64>| {
            median(runs.iter().filter_map(|m| g(m).map(|v| v as f64)).collect()).map(|v| v as u64)
        };
        Metrics {
            requests: f(&|m| m.requests),
            p50_us: f(&|m| m.p50_us),
            p99_us: f(&|m| m.p99_us),
            rps: f(&|m| m.rps),
            cpu_us_per_req: f(&|m| m.cpu_us_per_req),
            client_cpu_us_per_req: f(&|m| m.client_cpu_us_per_req),
            rss_kib: k(&|m| m.rss_kib),
            rss_idle_kib: k(&|m| m.rss_idle_kib),
            hwm_kib: k(&|m| m.hwm_kib),
            start_init_ms: f(&|m| m.start_init_ms),
            start_call_ms: f(&|m| m.start_call_ms),
            allocs_per_req: f(&|m| m.allocs_per_req),
            alloc_bytes_per_req: f(&|m| m.alloc_bytes_per_req),
            errors: runs.iter().map(|m| m.errors).sum(),
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "requests": self.requests, "p50_us": self.p50_us, "p99_us": self.p99_us,
            "req_per_s": self.rps, "cpu_us_per_req": self.cpu_us_per_req,
            "client_cpu_us_per_req": self.client_cpu_us_per_req,
            "rss_kib": self.rss_kib, "rss_idle_kib": self.rss_idle_kib, "hwm_kib": self.hwm_kib,
            "start_to_initialize_ms": self.start_init_ms, "start_to_first_call_ms": self.start_call_ms,
            "allocs_per_call": self.allocs_per_req, "alloc_bytes_per_call": self.alloc_bytes_per_req,
            "bad_answers": self.errors,
        })
    }
}

pub struct Report {
    rounds: usize,
    quick: bool,
    upstream: String,
    peers: Vec<(String, String)>,
    runs: BTreeMap<Key, Vec<(usize, Metrics)>>,
    failures: BTreeMap<Key, String>,
    sizes: Vec<(String, PathBuf, Option<u64>)>,
}

const MCPX_HTTP: &str = "mcpx serve --http";

fn payload_name(len: usize) -> String {
    if len >= 1024 {
        format!("{} KiB", len / 1024)
    } else {
        format!("{len} B")
    }
}

fn num(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(v) => format!("{v:.digits$}"),
        None => "–".into(),
    }
}

fn mib(kib: Option<u64>) -> String {
    num(kib.map(|k| k as f64 / 1024.0), 1)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "–".into(),
    }
}

fn rps(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 10_000.0 => format!("{:.1}k", v / 1e3),
        Some(v) if v >= 1000.0 => format!("{:.2}k", v / 1e3),
        Some(v) => format!("{v:.0}"),
        None => "–".into(),
    }
}

/// A plain text table with right-aligned columns after the first `left`.
struct Table {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
    left: usize,
}

impl Table {
    fn new(head: &[&str], left: usize) -> Table {
        Table {
            head: head.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            left,
        }
    }
    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
    fn render(&self, out: &mut String) {
        let n = self.head.len();
        let mut w = vec![0; n];
        // Short rows (a failure's reason after the key cells) do not widen columns.
        for r in std::iter::once(&self.head).chain(self.rows.iter().filter(|r| r.len() >= n - 1)) {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        for r in std::iter::once(&self.head).chain(self.rows.iter()) {
            let mut line = String::new();
            for (i, c) in r.iter().enumerate() {
                let pad = w
                    .get(i)
                    .copied()
                    .unwrap_or(0)
                    .saturating_sub(c.chars().count());
                if i + 1 == r.len() && r.len() < n - 1 {
                    line.push_str(c);
                } else if i < self.left || i >= n {
                    line.push_str(c);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(c);
                }
                line.push_str("  ");
            }
            let _ = writeln!(out, "  {}", line.trim_end());
        }
    }
}

impl Report {
    pub fn new(plan: &Plan) -> Report {
        Report {
            rounds: plan.rounds,
            quick: plan.quick,
            upstream: plan.upstream_name().to_string(),
            peers: plan
                .peers
                .iter()
                .map(|p| (p.name.clone(), p.note.clone()))
                .collect(),
            runs: BTreeMap::new(),
            failures: BTreeMap::new(),
            sizes: Vec::new(),
        }
    }

    pub fn add(&mut self, key: Key, round: usize, m: Metrics) {
        self.runs.entry(key).or_default().push((round, m));
    }

    pub fn fail(&mut self, key: Key, why: String) {
        self.failures.entry(key).or_insert(why);
    }

    pub fn size(&mut self, name: &str, path: &Path) {
        let len = std::fs::metadata(path).ok().map(|m| m.len());
        // Shown relative to the working directory when under it.
        let shown = std::env::current_dir()
            .ok()
            .and_then(|d| path.strip_prefix(d).ok().map(Path::to_path_buf))
            .unwrap_or_else(|| path.to_path_buf());
        self.sizes.push((name.to_string(), shown, len));
    }

    fn get(&self, key: &Key) -> Option<Metrics> {
        let runs: Vec<Metrics> = self.runs.get(key)?.iter().map(|(_, m)| m.clone()).collect();
        (!runs.is_empty()).then(|| Metrics::median_of(&runs))
    }

    fn why(&self, key: &Key) -> String {
        self.failures
            .get(key)
            .cloned()
            .unwrap_or_else(|| "not run".into())
    }

    fn http_targets(&self) -> Vec<String> {
        std::iter::once(MCPX_HTTP.to_string())
            .chain(self.peers.iter().map(|p| p.0.clone()))
            .collect()
    }

    /// The best peer's req/s for a (payload, clients) cell.
    fn best_peer(&self, payload: usize, clients: usize) -> Option<(String, f64)> {
        self.peers
            .iter()
            .filter_map(|(name, _)| {
                self.get(&Key::http(name, payload, clients))
                    .and_then(|m| m.rps)
                    .map(|r| (name.clone(), r))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\nmcpx bench — medians of {} round(s){}; upstream: {}\n",
            self.rounds,
            if self.quick {
                " (quick: rough numbers)"
            } else {
                ""
            },
            self.upstream
        );
        // stdio
        if self
            .runs
            .keys()
            .chain(self.failures.keys())
            .any(|k| k.section == super::report::Section::Stdio)
        {
            let _ = writeln!(out, "stdio hop: tools/call echo through each target (CPU: the relay's or hub's process only)");
            let mut t = Table::new(
                &[
                    "payload",
                    "in flight",
                    "target",
                    "p50 µs",
                    "p99 µs",
                    "req/s",
                    "CPU µs/req",
                    "p50 ÷ relay",
                    "req/s ÷ direct",
                ],
                3,
            );
            for &p in &PAYLOADS {
                for &w in &WINDOWS {
                    let relay = self.get(&Key::stdio("byte relay", p, w));
                    let direct = self.get(&Key::stdio("direct", p, w));
                    for target in ["direct", "byte relay", "mcpx serve"] {
                        let key = Key::stdio(target, p, w);
                        let mut cells = vec![payload_name(p), w.to_string(), target.to_string()];
                        match self.get(&key) {
                            Some(m) => cells.extend([
                                num(m.p50_us, 1),
                                num(m.p99_us, 1),
                                rps(m.rps),
                                num(m.cpu_us_per_req, 1),
                                ratio(m.p50_us, relay.as_ref().and_then(|r| r.p50_us)),
                                ratio(m.rps, direct.as_ref().and_then(|r| r.rps)),
                                bad(m.errors),
                            ]),
                            None => cells.push(self.why(&key)),
                        }
                        t.row(cells);
                    }
                }
            }
            t.render(&mut out);
            out.push('\n');
        }
        // HTTP
        if self
            .runs
            .keys()
            .chain(self.failures.keys())
            .any(|k| k.section == Section::Http)
        {
            let _ = writeln!(out, "HTTP bridge: keep-alive clients, one session each, POST tools/call echo (CPU, RSS: the bridge process only)");
            let mut t = Table::new(
                &[
                    "payload",
                    "clients",
                    "bridge",
                    "p50 µs",
                    "p99 µs",
                    "req/s",
                    "CPU µs/req",
                    "peak RSS MiB",
                    "mcpx req/s ÷ this",
                    "client CPU µs/req",
                ],
                3,
            );
            for &p in &PAYLOADS {
                for &c in &CLIENTS {
                    let mcpx = self.get(&Key::http(MCPX_HTTP, p, c));
                    for target in self.http_targets() {
                        let key = Key::http(&target, p, c);
                        let mut cells = vec![payload_name(p), c.to_string(), target.clone()];
                        match self.get(&key) {
                            Some(m) => cells.extend([
                                num(m.p50_us, 0),
                                num(m.p99_us, 0),
                                rps(m.rps),
                                num(m.cpu_us_per_req, 1),
                                mib(m.rss_kib),
                                ratio(mcpx.as_ref().and_then(|x| x.rps), m.rps),
                                num(m.client_cpu_us_per_req, 1),
                                bad(m.errors),
                            ]),
                            None => cells.push(self.why(&key)),
                        }
                        t.row(cells);
                    }
                }
            }
            t.render(&mut out);
            if !self.peers.is_empty() {
                let notes: Vec<String> =
                    self.peers.iter().map(|(n, v)| format!("{n} {v}")).collect();
                let _ = writeln!(out, "  peers: {}", notes.join("; "));
            }
            out.push('\n');
        }
        // Footprint
        if self
            .runs
            .keys()
            .chain(self.failures.keys())
            .any(|k| k.section == Section::Footprint)
        {
            let _ = writeln!(
                out,
                "footprint: mcpx serve on stdio with N upstreams (RSS of the hub process only)"
            );
            let mut t = Table::new(
                &[
                    "upstreams",
                    "process",
                    "start→initialize ms",
                    "start→first call ms",
                    "RSS idle MiB",
                    "RSS after load MiB",
                    "peak RSS MiB",
                ],
                2,
            );
            for n in [0usize, 1, 8] {
                let key = Key::footprint(n);
                let mut cells = vec![
                    if n == 0 { "–".into() } else { n.to_string() },
                    key.target.clone(),
                ];
                match self.get(&key) {
                    Some(m) => cells.extend([
                        num(m.start_init_ms, 2),
                        num(m.start_call_ms, 2),
                        mib(m.rss_idle_kib.or(if n == 0 { m.rss_kib } else { None })),
                        mib(if n == 0 { None } else { m.rss_kib }),
                        mib(m.hwm_kib),
                    ]),
                    None => cells.push(self.why(&key)),
                }
                t.row(cells);
            }
            t.render(&mut out);
            if !self.sizes.is_empty() {
                let mut t = Table::new(&["binary", "bytes", "MiB", "path"], 1);
                for (name, path, len) in &self.sizes {
                    let mut cells = vec![name.clone()];
                    match len {
                        Some(l) => cells.extend([
                            l.to_string(),
                            format!("{:.2}", *l as f64 / 1048576.0),
                            path.display().to_string(),
                        ]),
                        None => cells.extend([
                            "–".into(),
                            "–".into(),
                            format!("not built ({})", path.display()),
                        ]),
                    }
                    t.row(cells);
                }
                out.push('\n');
                t.render(&mut out);
            }
            out.push('\n');
        }
        // Allocations
        if self
            .runs
            .keys()
            .chain(self.failures.keys())
            .any(|k| k.section == Section::Alloc)
        {
            let _ = writeln!(out, "hot path allocations: mcpx serve (count-alloc build), sequential calls in steady state");
            let mut t = Table::new(&["payload", "allocs per call", "bytes per call"], 1);
            for &p in &PAYLOADS {
                let key = Key::alloc(p);
                let mut cells = vec![payload_name(p)];
                match self.get(&key) {
                    Some(m) => {
                        cells.extend([num(m.allocs_per_req, 2), num(m.alloc_bytes_per_req, 0)])
                    }
                    None => cells.push(self.why(&key)),
                }
                t.row(cells);
            }
            t.render(&mut out);
            out.push('\n');
        }
        // Targets
        let verdicts = self.verdicts();
        if !verdicts.is_empty() {
            let _ = writeln!(out, "targets");
            let mut t = Table::new(&["target", "measured", "verdict"], 3);
            for v in &verdicts {
                t.row(vec![v.0.clone(), v.1.clone(), v.2.to_string()]);
            }
            t.render(&mut out);
        }
        out
    }

    /// (target, measured, verdict) for each target there is data for.
    fn verdicts(&self) -> Vec<(String, String, &'static str)> {
        let mut v = Vec::new();
        let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
        let small = PAYLOADS[0];
        for &w in &[1usize, 16] {
            if let (Some(h), Some(r)) = (
                self.get(&Key::stdio("mcpx serve", small, w)),
                self.get(&Key::stdio("byte relay", small, w)),
            ) {
                if let (Some(h), Some(r)) = (h.p50_us, r.p50_us) {
                    v.push((
                        format!("stdio p50 ≤ 1.2× relay (16 B, {w} in flight)"),
                        format!("{:.2}×", h / r),
                        verdict(h <= 1.2 * r),
                    ));
                }
            }
        }
        for &w in &[1usize, 16] {
            if let Some(c) = self
                .get(&Key::stdio("mcpx serve", small, w))
                .and_then(|m| m.cpu_us_per_req)
            {
                v.push((
                    format!("hub CPU ≤ 10 µs per call (stdio 16 B, {w} in flight)"),
                    format!("{c:.1} µs"),
                    verdict(c <= 10.0),
                ));
            }
        }
        if let Some(m) = self.get(&Key::http(MCPX_HTTP, small, 8)) {
            if let Some(c) = m.cpu_us_per_req {
                v.push((
                    "HTTP hub CPU ≤ 35 µs per request (16 B, 8 clients)".into(),
                    format!("{c:.1} µs"),
                    verdict(c <= 35.0),
                ));
            }
            if let (Some(r), Some((peer, best))) = (m.rps, self.best_peer(small, 8)) {
                v.push((
                    "HTTP req/s ≥ 10× best peer (16 B, 8 clients)".into(),
                    format!(
                        "{:.1}× ({} vs {peer} {})",
                        r / best,
                        rps(Some(r)),
                        rps(Some(best))
                    ),
                    verdict(r >= 10.0 * best),
                ));
            }
        }
        if let Some(k) = self.get(&Key::footprint(8)).and_then(|m| m.rss_idle_kib) {
            v.push((
                "RSS ≤ 4 MiB idle with 8 upstreams".into(),
                format!("{:.2} MiB", k as f64 / 1024.0),
                verdict(k <= 4096),
            ));
        }
        for &p in &PAYLOADS {
            if let Some(k) = self
                .get(&Key::http(MCPX_HTTP, p, 64))
                .and_then(|m| m.rss_kib)
            {
                v.push((
                    format!(
                        "RSS ≤ 16 MiB under 64 HTTP clients (peak, {})",
                        payload_name(p)
                    ),
                    format!("{:.2} MiB", k as f64 / 1024.0),
                    verdict(k <= 16384),
                ));
            }
        }
        if let Some(ms) = self.get(&Key::footprint(1)).and_then(|m| m.start_init_ms) {
            v.push((
                "start-up ≤ 10 ms (spawn → initialize answered, 1 upstream)".into(),
                format!("{ms:.2} ms"),
                verdict(ms <= 10.0),
            ));
        }
        if let Some(a) = self.get(&Key::alloc(small)).and_then(|m| m.allocs_per_req) {
            v.push((
                "0 allocations per forwarded call (stdio, 16 B)".into(),
                format!("{a:.2}"),
                verdict(a < 0.01),
            ));
        }
        v
    }

    pub fn json(&self) -> String {
        let mut rows = Vec::new();
        let keys: std::collections::BTreeSet<&Key> =
            self.runs.keys().chain(self.failures.keys()).collect();
        for key in keys {
            let mut row = json!({
                "section": key.section.name(), "target": key.target, "payload_bytes": key.payload,
            });
            let conc = match key.section {
                Section::Stdio => "in_flight",
                Section::Http => "clients",
                Section::Footprint => "upstreams",
                Section::Alloc => "in_flight",
            };
            row[conc] = json!(key.conc);
            if let Some(m) = self.get(key) {
                row["median"] = m.to_json();
                row["rounds"] = Value::Array(
                    self.runs[key]
                        .iter()
                        .map(|(r, m)| {
                            let mut j = m.to_json();
                            j["round"] = json!(r + 1);
                            j
                        })
                        .collect(),
                );
            }
            if let Some(why) = self.failures.get(key) {
                row["error"] = json!(why);
            }
            rows.push(row);
        }
        let doc = json!({
            "rounds": self.rounds,
            "quick": self.quick,
            "upstream": self.upstream,
            "peers": self.peers.iter().map(|(n, v)| json!({"name": n, "version": v})).collect::<Vec<_>>(),
            "rows": rows,
            "sizes": self.sizes.iter().map(|(n, p, l)| json!({"name": n, "path": p.display().to_string(), "bytes": l})).collect::<Vec<_>>(),
            "targets": self.verdicts().iter().map(|(t, m, v)| json!({"target": t, "measured": m, "verdict": v})).collect::<Vec<_>>(),
        });
        serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
    }
}

fn bad(errors: u64) -> String {
    if errors == 0 {
        String::new()
    } else {
        format!("({errors} bad answers)")
    }
}
