//! Running the official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! pinned in `tests/peers/`) and reading its results: shared by
//! `tests/conformance_suite.rs` and `tests/conformance_auth.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::{driver, mcpx, node, repo_root, run_argv};

/// The suite gives a client 30 s per scenario; this is the hard limit.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(90);
/// One forced server scenario takes seconds; this is the hard limit.
const SERVER_SCENARIO_TIMEOUT: Duration = Duration::from_secs(120);

pub fn suite_package() -> PathBuf {
    let dir = repo_root().join(".peers/node/node_modules/@modelcontextprotocol/conformance");
    assert!(
        dir.join("dist/index.js").exists(),
        "the conformance suite is not installed (looked in {}).\n\
         Install the pinned test peers first: bash tests/peers/install.sh",
        dir.display()
    );
    dir
}

/// One scenario's result: the statuses of its checks, by check id.
#[derive(Clone, Debug, Default)]
pub struct ScenarioResult {
    pub timestamp: String,
    pub success: usize,
    pub failure: Vec<String>,
    pub warning: Vec<String>,
    pub other: usize,
}

/// `12 success, 0 failure, 1 warning, 0 other [warnings: id]`: how every
/// leg prints a scenario.
impl std::fmt::Display for ScenarioResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} success, {} failure, {} warning, {} other", self.success, self.failure.len(), self.warning.len(), self.other)?;
        if !self.warning.is_empty() {
            write!(f, " [warnings: {}]", self.warning.join(", "))?;
        }
        Ok(())
    }
}

/// The suite's last tally line of `output` starting with `prefix`
/// (`Passed:` of a client run, `Total:` of a server run).
pub fn suite_tally<'a>(output: &'a str, prefix: &str) -> std::borrow::Cow<'a, str> {
    match output.lines().rev().find(|l| l.starts_with(prefix)) {
        Some(l) => l.into(),
        None => format!("{prefix} (not printed)").into(),
    }
}

/// Every `<leg>-<scenario>-<timestamp>/checks.json` under `dir`, by scenario
/// (the newest run of a scenario wins); only scenario `only` when given
/// (other tests may be writing other scenarios' results beside it).
pub fn read_results(
    dir: &Path,
    leg_prefix: &str,
    only: Option<&str>,
) -> BTreeMap<String, ScenarioResult> {
    let mut out: BTreeMap<String, ScenarioResult> = BTreeMap::new();
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("the suite wrote no results to {}: {e}", dir.display()));
    for ent in entries.flatten() {
        let file = ent.path().join("checks.json");
        if !file.is_file() {
            continue;
        }
        let dname = ent.file_name().to_string_lossy().into_owned();
        // `<leg>-<scenario>-<ISO timestamp with : and . as ->` (24 characters).
        const TS: usize = "2026-08-07T12-00-00-000Z".len();
        assert!(
            dname.len() > TS + 1 + leg_prefix.len(),
            "unexpected result directory {dname}"
        );
        let (head, ts) = dname.split_at(dname.len() - TS);
        let scenario = head
            .strip_suffix('-')
            .and_then(|h| h.strip_prefix(leg_prefix))
            .unwrap_or_else(|| panic!("unexpected result directory {dname}"))
            .to_string();
        if only.is_some_and(|o| o != scenario) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let checks: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: not JSON: {e}", file.display()));
        let mut r = ScenarioResult {
            timestamp: ts.to_string(),
            ..Default::default()
        };
        for c in checks.as_array().expect("checks.json is an array") {
            let id = c["id"].as_str().unwrap_or("?").to_string();
            match c["status"].as_str().unwrap_or("") {
                "SUCCESS" => r.success += 1,
                "FAILURE" => r.failure.push(format!(
                    "{id}: {}",
                    c["errorMessage"].as_str().unwrap_or("")
                )),
                "WARNING" => r.warning.push(id),
                _ => r.other += 1,
            }
        }
        if out
            .get(&scenario)
            .is_none_or(|old| old.timestamp < r.timestamp)
        {
            out.insert(scenario, r);
        }
    }
    out
}

pub fn tail_of(s: &str, n: usize) -> &str {
    let mut i = s.len().saturating_sub(n);
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

/// Runs client scenario `scenario` of requirement set `set` with mcpx as the
/// client (through the driver `tests/drivers/<driver_file>`), leaving the
/// result in `target/conformance/<set>/<leg>/<scenario>-<timestamp>/` (older results
/// of this scenario are removed first), asserts that it passed, and returns
/// that folder (`checks.json`, the client's `stderr.txt`). `extra` goes on
/// the suite's command line (`--force` for an extension's scenario, which is
/// on no revision's timeline).
pub fn run_client_leg(set: &str, leg: &str, scenario: &str, driver_file: &str, extra: &[&str]) -> PathBuf {
    let pkg = suite_package();
    let out = repo_root()
        .join("target/conformance")
        .join(set)
        .join(leg);
    // `auth/x` lands in `auth/x-<timestamp>/`.
    let (sub, base) = scenario.rsplit_once('/').unwrap_or(("", scenario));
    let dir = out.join(sub);
    std::fs::create_dir_all(&dir).unwrap();
    for ent in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = ent.file_name().to_string_lossy().into_owned();
        let ts = "2026-08-07T12-00-00-000Z".len();
        if name.len() == base.len() + 1 + ts && name.starts_with(&format!("{base}-")) {
            let _ = std::fs::remove_dir_all(ent.path());
        }
    }
    let s = |p: &Path| p.to_string_lossy().into_owned();
    // The suite splits the command at spaces and appends the test server's URL.
    let command = [s(&node()), s(&driver(driver_file)), s(mcpx())];
    assert!(
        command.iter().all(|p| !p.contains(' ')),
        "the suite splits --command at spaces; these paths must have none: {command:?}"
    );
    let argv = vec![
        s(&node()),
        s(&pkg.join("dist/index.js")),
        "client".into(),
        "--command".into(),
        command.join(" "),
        "--scenario".into(),
        scenario.into(),
        "--spec-version".into(),
        set.into(),
        "-o".into(),
        s(&out),
    ];
    let argv: Vec<String> = argv.into_iter().chain(extra.iter().map(|e| e.to_string())).collect();
    let run = run_argv(&argv, CLIENT_TIMEOUT);
    let results = read_results(&dir, "", Some(base));
    let r = results.get(base);
    let tally = suite_tally(&run.stderr, "Passed:");
    println!(
        "conformance suite, {set} client scenario {scenario} with mcpx as the client: {tally}; suite exit {:?}",
        run.code
    );
    if let Some(r) = r {
        println!("  {r}");
    }
    let passed = r.is_some_and(|r| r.failure.is_empty() && r.warning.is_empty() && r.success > 0);
    assert!(
        passed && run.code == Some(0),
        "conformance suite client scenario {scenario} ({set}) with mcpx as the client: exit {:?}{}\n{}\n\nsuite stderr (tail):\n{}\nstdout:\n{}",
        run.code,
        if run.timed_out { " (killed: timeout)" } else { "" },
        match r {
            None => "no result was written".to_string(),
            Some(r) => format!("failures: {:?}; warnings: {:?}; successes: {}", r.failure, r.warning, r.success),
        },
        tail_of(&run.stderr, 8000),
        tail_of(&run.stdout, 2000),
    );
    dir.join(format!("{base}-{}", r.map(|r| r.timestamp.as_str()).unwrap_or_default()))
}

/// The extension tasks scenarios (`tasks-*`, SEP-2663) of the pinned suite:
/// on no revision's timeline, so they run one at a time with `--force`.
pub const TASKS_SCENARIOS: [&str; 10] = [
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
];

/// Runs server scenario `scenario` at 2026-07-28 with `--force` against
/// `url`, leaving its result in `out` (emptied first), and returns it
/// (panics, with the suite's output, when it left none).
pub fn run_forced_server_scenario(url: &str, scenario: &str, out: &Path) -> ScenarioResult {
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out).unwrap();
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let argv = vec![
        s(&node()),
        s(&suite_package().join("dist/index.js")),
        "server".into(),
        "--url".into(),
        url.into(),
        "--scenario".into(),
        scenario.into(),
        "--spec-version".into(),
        "2026-07-28".into(),
        "--force".into(),
        "-o".into(),
        s(out),
    ];
    let run = run_argv(&argv, SERVER_SCENARIO_TIMEOUT);
    let results = read_results(out, "server-", Some(scenario));
    let r = results.get(scenario).cloned().unwrap_or_else(|| {
        panic!(
            "{scenario} left no result (exit {:?}{}); stdout:\n{}\nstderr:\n{}",
            run.code,
            if run.timed_out { ", killed: timeout" } else { "" },
            tail_of(&run.stdout, 4000),
            tail_of(&run.stderr, 4000)
        )
    });
    println!("{scenario} against {url}: {r}");
    r
}

/// `tests/drivers/ts_task_client.mjs`: the TypeScript SDK 1.32.2's
/// experimental tasks client calls `tool` with `args` as a 2025-11-25 task
/// against the stdio server `server`; its one-line report (panics without one,
/// or when the driver failed).
pub fn sdk_task_call(tool: &str, args: Value, server: &crate::Cmd) -> Value {
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let mut argv = vec![s(&node()), s(&driver("ts_task_client.mjs")), tool.to_string(), args.to_string(), "--".into()];
    argv.push(s(&server.program));
    argv.extend(server.args.iter().cloned());
    let run = run_argv(&argv, Duration::from_secs(60));
    let line = run.stdout.lines().last().unwrap_or("");
    let report: Value = serde_json::from_str(line).unwrap_or_else(|e| {
        panic!("no report from the driver ({e}); exit {:?}\nstdout:\n{}\nstderr:\n{}", run.code, run.stdout, run.stderr)
    });
    assert_eq!(run.code, Some(0), "{report}\nstderr:\n{}", tail_of(&run.stderr, 4000));
    report
}
