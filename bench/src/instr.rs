//! `--only instr`: instructions per forwarded call, counted by callgrind.
//! Host-only (it drives valgrind), so it lives here and not in
//! `mcpx_posix::bench`, which the edge binary carries.
//!
//! For each payload, `mcpx serve --config` with the echo upstream runs
//! twice under `valgrind --tool=callgrind --trace-children=no` (the
//! upstream runs natively): the same warm-up, then N1 and N2 sequential
//! `tools/call`s. The hub's total instructions (the `totals:` line of its
//! callgrind file) differ by what N2 − N1 calls cost, so start-up, warm-up
//! and shutdown cancel out. With `--policy` other than off, the 16 B calls
//! are counted under that policy too: what it adds to a call, as a figure
//! that does not move with the load (the CPU-time ratio of the stdio rows
//! spreads by more than the bound it is judged by). Instruction counts do
//! not depend on the load of
//! the machine; they do depend on how the hub's threads and the upstream
//! interleave (valgrind runs one thread at a time, and slowly), which the
//! difference does not cancel: compare builds by this figure, not with
//! wall-clock figures.
//!
//! Valgrind 3.19 does not know pidfd_open (the hub's child watching falls
//! back to SIGCHLD) and cannot re-execute /proc/self/exe (the hub's
//! watcher process does not start, and the hub warns once per upstream):
//! neither is on the path of a call.

use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use mcpx_posix::bench::stdio::Peer;
use mcpx_posix::bench::Policy;

/// Calls left in flight for the held row.
pub const HELD: usize = 2_000;

/// Bound of the held row over the 16 B row with none held.
const HELD_BOUND: f64 = 1.1;

/// One payload's figure under one policy, with `held` calls in flight.
pub struct Row {
    pub payload: usize,
    pub policy: Policy,
    pub held: usize,
    /// (calls, instructions) of the two runs.
    pub runs: [(usize, u64); 2],
}

impl Row {
    pub fn per_call(&self) -> f64 {
        let [(n1, i1), (n2, i2)] = self.runs;
        (i2 as f64 - i1 as f64) / (n2 - n1) as f64
    }
}

/// (payload, warm-up calls, N1, N2).
const PLAN: [(usize, usize, usize, usize); 2] = [(16, 200, 200, 1200), (64 * 1024, 50, 100, 600)];

/// The valgrind in PATH, or why there is none.
fn valgrind_version() -> Result<String, String> {
    let out = Command::new("valgrind")
        .arg("--version")
        .output()
        .map_err(|e| {
            format!("valgrind not found ({e}): install it (e.g. apt-get install valgrind)")
        })?;
    if !out.status.success() {
        return Err(format!("`valgrind --version` failed ({})", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The target of the instructions a policy adds to a 16 B call (issue 24's
/// "the default policy ≤ 1.1× the hub CPU with policy off").
pub const POLICY_BOUND: f64 = 1.1;

/// Measures `hub` (an mcpx command) with the echo upstream `echo`, with
/// the policy off, and the 16 B calls under `policy` too.
pub fn measure(
    hub: &[String],
    echo: &[String],
    policy: Policy,
    verbose: bool,
) -> Result<(String, Vec<Row>), String> {
    let version = valgrind_version()?;
    let dir = std::env::temp_dir().join(format!("mcpx-bench-instr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let result = (|| {
        let plan = PLAN.iter().map(|p| (Policy::Off, *p, 0));
        let with = PLAN.iter().filter(|p| p.0 == 16 && policy != Policy::Off).map(|p| (policy, *p, 0));
        let held = PLAN.iter().filter(|p| p.0 == 16).map(|p| (Policy::Off, *p, HELD));
        let mut rows = Vec::new();
        for (policy, (payload, warm, n1, n2), held) in plan.chain(with).chain(held) {
            let config = dir.join(format!("config-{}.json", policy.name()));
            let doc = serde_json::json!({
                "mcpServers": {"u1": {"command": echo[0], "args": &echo[1..], "prefix": ""}},
                "logLevel": "warn",
                "policy": policy.block(&dir.join("audit.log")),
            });
            std::fs::write(&config, doc.to_string())
                .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
            let mut runs = [(0, 0); 2];
            for (slot, n) in runs.iter_mut().zip([n1, n2]) {
                if verbose {
                    eprintln!("bench: instr {payload} B, policy {}, {held} held: {warm} + {n} calls under callgrind", policy.name());
                }
                let ir = run_once(hub, &config, &dir, payload, held, warm, n)
                    .map_err(|e| format!("{payload} B, {n} calls: {e}"))?;
                *slot = (n, ir);
            }
            let row = Row { payload, policy, held, runs };
            if row.runs[1].1 <= row.runs[0].1 {
                return Err(format!(
                    "{payload} B: {} calls counted {} instructions, {} calls {}: not a figure",
                    n2, row.runs[1].1, n1, row.runs[0].1
                ));
            }
            rows.push(row);
        }
        Ok(rows)
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result.map(|rows| (version, rows))
}

/// One run under callgrind: the hub's total instructions.
fn run_once(
    hub: &[String],
    config: &Path,
    dir: &Path,
    payload: usize,
    held: usize,
    warm: usize,
    n: usize,
) -> Result<u64, String> {
    let log = dir.join(format!("valgrind-{payload}-{n}.log"));
    let stderr =
        std::fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let out_pattern = dir.join("callgrind.out.%p");
    let cmd: Vec<String> = ["valgrind", "--tool=callgrind", "--trace-children=no"]
        .into_iter()
        .map(String::from)
        .chain([format!("--callgrind-out-file={}", out_pattern.display())])
        .chain(hub.iter().cloned())
        .chain([
            "serve".into(),
            "--config".into(),
            config.to_string_lossy().into_owned(),
        ])
        .collect();
    let tail = || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    };
    let mut peer = Peer::spawn(&cmd, Stdio::from(stderr)).map_err(|e| e.to_string())?;
    let pid = peer.pid();
    let text = vec![b'x'; payload];
    let calls = (|| -> io::Result<u64> {
        peer.handshake()?;
        let ids = peer.send_calls(held, "hold", "{}")?;
        let a = peer.load(warm, 1, &text)?;
        let b = peer.load(n, 1, &text)?;
        // Else the hub, at the end of its input, would wait for them.
        peer.cancel(ids)?;
        Ok(a.errors + b.errors)
    })();
    // Under valgrind the hub needs a while to stop its upstream and leave;
    // killed, it would write no counts.
    let status = peer.close_within(Duration::from_secs(120));
    match calls {
        Err(e) => return Err(format!("{e}; valgrind's log ends:\n{}", tail())),
        Ok(bad) if bad > 0 => return Err(format!("{bad} bad answers")),
        Ok(_) => {}
    }
    match status {
        None => {
            return Err("the hub did not leave within 120 s of its stdin closing (killed)".into())
        }
        Some(s) if !s.success() => {
            return Err(format!(
                "the hub under valgrind exited with {s}; valgrind's log ends:\n{}",
                tail()
            ))
        }
        Some(_) => {}
    }
    let out = dir.join(format!("callgrind.out.{pid}"));
    let counts = std::fs::read_to_string(&out).map_err(|e| {
        format!(
            "no callgrind output {} ({e}); valgrind's log ends:\n{}",
            out.display(),
            tail()
        )
    })?;
    let _ = std::fs::remove_file(&out);
    total(&counts).ok_or_else(|| format!("no `totals:` or `summary:` line in {}", out.display()))
}

/// The instruction total of a callgrind output file (the first event, Ir).
fn total(counts: &str) -> Option<u64> {
    let find = |key: &str| {
        counts
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    };
    find("totals:").or_else(|| find("summary:"))
}

fn payload_name(len: usize) -> String {
    if len >= 1024 {
        format!("{} KiB", len / 1024)
    } else {
        format!("{len} B")
    }
}

/// The printed table.
pub fn table(hub: &str, version: &str, rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "instructions per forwarded call: {hub} serve under callgrind ({version}), sequential calls, (Ir(N2) − Ir(N1)) ÷ (N2 − N1)"
    );
    let _ = writeln!(
        out,
        "  payload  policy   held  N1 / N2     Ir(N1)         Ir(N2)         Ir per call"
    );
    for r in rows {
        let [(n1, i1), (n2, i2)] = r.runs;
        let _ = writeln!(
            out,
            "  {:<7}  {:<7}  {:>4}  {:>4} / {:<4}  {:>13}  {:>13}  {:>11.0}",
            payload_name(r.payload),
            r.policy.name(),
            r.held,
            n1,
            n2,
            i1,
            i2,
            r.per_call()
        );
    }
    if let Some((policy, ratio)) = policy_ratio(rows) {
        let verdict = if ratio <= POLICY_BOUND { "met" } else { "MISSED" };
        let _ = writeln!(
            out,
            "  instructions with the {} policy ÷ without (16 B, sequential): {ratio:.2}× (bound ≤ {POLICY_BOUND}×): {verdict}",
            policy.name()
        );
    }
    if let Some(ratio) = held_ratio(rows) {
        let verdict = if ratio <= HELD_BOUND { "met" } else { "MISSED" };
        let _ = writeln!(
            out,
            "  instructions with {HELD} calls held ÷ without (16 B, sequential): {ratio:.2}× (bound ≤ {HELD_BOUND}×): {verdict}"
        );
    }
    out
}

/// The 16 B row with none held and the policy off.
fn base(rows: &[Row]) -> Option<&Row> {
    rows.iter().find(|r| r.payload == 16 && r.policy == Policy::Off && r.held == 0)
}

/// The held row's figure over the 16 B row with none held.
pub fn held_ratio(rows: &[Row]) -> Option<f64> {
    let held = rows.iter().find(|r| r.held > 0)?;
    Some(held.per_call() / base(rows)?.per_call())
}

/// The policy the 16 B calls were also counted under, and its figure over
/// the one with the policy off.
pub fn policy_ratio(rows: &[Row]) -> Option<(Policy, f64)> {
    let with = rows.iter().find(|r| r.payload == 16 && r.policy != Policy::Off && r.held == 0)?;
    let off = base(rows)?;
    Some((with.policy, with.per_call() / off.per_call()))
}

/// Writes the rows to the JSON `path`: added to what the other sections
/// wrote there in this run (`append`), or a new file.
pub fn write_json(
    path: &Path,
    append: bool,
    hub: &str,
    version: &str,
    rows: &[Row],
) -> Result<(), String> {
    let mut doc: serde_json::Value = if append {
        let b = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_slice(&b).map_err(|e| format!("{}: {e}", path.display()))?
    } else {
        serde_json::json!({"rows": []})
    };
    let new: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "section": "instr", "target": "mcpx serve", "payload_bytes": r.payload, "in_flight": 1, "policy": r.policy.name(), "held": r.held,
                "hub": hub, "valgrind": version,
                "median": {"instructions_per_call": r.per_call()},
                "rounds": r.runs.iter().map(|&(n, ir)| serde_json::json!({"calls": n, "instructions": ir})).collect::<Vec<_>>(),
            })
        })
        .collect();
    match doc.get_mut("rows").and_then(|v| v.as_array_mut()) {
        Some(a) => a.extend(new),
        None => doc["rows"] = serde_json::Value::Array(new),
    }
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n";
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn total_reads_totals_then_summary() {
        assert_eq!(
            super::total("events: Ir\nsummary: 12\nfl=x\ntotals: 34\n"),
            Some(34)
        );
        assert_eq!(super::total("events: Ir\nsummary: 12 3\n"), Some(12));
        assert_eq!(super::total("events: Ir\n"), None);
    }

    #[test]
    fn the_policy_row_is_judged_against_the_16_b_row_with_the_policy_off() {
        use super::{policy_ratio, table, Policy, Row};
        let row = |payload, policy, ir: u64| Row { payload, policy, held: 0, runs: [(200, 1_000), (1_200, 1_000 + ir * 1_000)] };
        let mut rows = vec![row(16, Policy::Off, 20_000), row(65_536, Policy::Off, 400_000)];
        assert!(policy_ratio(&rows).is_none(), "no policy row: no ratio");
        assert!(!table("mcpx", "v", &rows).contains("policy ÷"));
        rows.push(row(16, Policy::Default, 22_000));
        assert_eq!(policy_ratio(&rows), Some((Policy::Default, 1.1)));
        assert!(table("mcpx", "v", &rows).contains("default policy ÷ without (16 B, sequential): 1.10× (bound ≤ 1.1×): met"));
        rows[2] = row(16, Policy::Default, 23_000);
        assert!(table("mcpx", "v", &rows).contains(": 1.15× (bound ≤ 1.1×): MISSED"));
    }

    #[test]
    fn the_held_row_is_judged_against_the_16_b_row_with_none_held() {
        use super::{held_ratio, policy_ratio, table, Policy, Row, HELD};
        let row = |policy, held, ir: u64| Row { payload: 16, policy, held, runs: [(200, 1_000), (1_200, 1_000 + ir * 1_000)] };
        let mut rows = vec![row(Policy::Off, 0, 20_000), row(Policy::Default, 0, 21_000)];
        assert!(held_ratio(&rows).is_none());
        rows.push(row(Policy::Off, HELD, 30_000));
        assert_eq!(held_ratio(&rows), Some(1.5));
        assert_eq!(policy_ratio(&rows), Some((Policy::Default, 1.05)), "the held row is not the policy's");
        assert!(table("mcpx", "v", &rows).contains(&format!("with {HELD} calls held ÷ without (16 B, sequential): 1.50× (bound ≤ 1.1×): MISSED")));
        rows[2] = row(Policy::Off, HELD, 20_400);
        assert!(table("mcpx", "v", &rows).contains(": 1.02× (bound ≤ 1.1×): met"));
    }
}
