//! Results of the official MCP conformance suite, read from the `checks.json`
//! files its runs leave (`-o DIR` writes `DIR/<leg>-<scenario>-<timestamp>/checks.json`,
//! a JSON array of checks with `id`, `name`, `status`, …).
//!
//! Layout expected under the results root: one `-o` directory per run,
//! `<root>/<requirement set>/<leg>/`, e.g. `target/conformance/2025-11-25/server/`.
//! When a scenario appears more than once, the newest timestamp wins.
//!
//! A scenario passed when it has no FAILURE check and at least one SUCCESS
//! (the suite's tier scoring; WARNING, INFO and SKIPPED do not fail it).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

pub const SETS: [&str; 2] = ["2025-11-25", "2026-07-28"];
/// `server`: mcpx as the server, fronting `mcpx example-server` (every
/// revision); `server-legacy-upstream`: the same with the example server
/// restricted to the legacy revisions, so newer clients go through mcpx's
/// translation; `client`: mcpx as the client of the suite's test servers.
pub const LEGS: [&str; 3] = ["server", "server-legacy-upstream", "client"];

/// The scored server scenarios of each requirement set of
/// `@modelcontextprotocol/conformance@0.2.0-alpha.12` (identical in its
/// snapshot); everything else a `--requirements` run reports is not scored.
/// The client legs' scored lists are not recorded here.
pub fn scored(set: &str, leg: &str) -> Option<&'static [&'static str]> {
    const S2025: [&str; 30] = [
        "server-initialize",
        "logging-set-level",
        "ping",
        "completion-complete",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-with-logging",
        "tools-call-error",
        "tools-call-with-progress",
        "tools-call-sampling",
        "tools-call-elicitation",
        "elicitation-sep1034-defaults",
        "server-sse-multiple-streams",
        "elicitation-sep1330-enums",
        "resources-list",
        "resources-read-text",
        "resources-read-binary",
        "resources-templates-read",
        "resources-subscribe",
        "resources-unsubscribe",
        "prompts-list",
        "prompts-get-simple",
        "prompts-get-with-args",
        "prompts-get-embedded-resource",
        "prompts-get-with-image",
        "dns-rebinding-protection",
    ];
    const S2026: [&str; 37] = [
        "server-stateless",
        "completion-complete",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-error",
        "tools-call-with-progress",
        "server-sse-multiple-streams",
        "resources-list",
        "resources-read-text",
        "resources-read-binary",
        "resources-templates-read",
        "sep-2164-resource-not-found",
        "prompts-list",
        "prompts-get-simple",
        "prompts-get-with-args",
        "prompts-get-embedded-resource",
        "prompts-get-with-image",
        "dns-rebinding-protection",
        "caching",
        "input-required-result-basic-elicitation",
        "input-required-result-basic-sampling",
        "input-required-result-basic-list-roots",
        "input-required-result-request-state",
        "input-required-result-multiple-input-requests",
        "input-required-result-multi-round",
        "input-required-result-missing-input-response",
        "input-required-result-non-tool-request",
        "input-required-result-result-type",
        "input-required-result-unsupported-methods",
        "input-required-result-tampered-state",
        "input-required-result-capability-check",
        "input-required-result-ignore-extra-params",
        "input-required-result-validate-input",
    ];
    match (set, leg) {
        ("2025-11-25", "server" | "server-legacy-upstream") => Some(&S2025),
        ("2026-07-28", "server" | "server-legacy-upstream") => Some(&S2026),
        _ => None,
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scenario {
    pub name: String,
    pub timestamp: String,
    pub success: usize,
    pub failure: usize,
    pub warning: usize,
    pub other: usize,
    /// Ids of FAILURE checks, then of WARNING checks.
    pub failed_checks: Vec<String>,
    pub warned_checks: Vec<String>,
}

impl Scenario {
    pub fn passed(&self) -> bool {
        self.failure == 0 && self.success > 0
    }
}

/// Splits `server-tools-list-2026-08-07T12-00-00-000Z` into scenario and
/// timestamp, dropping a `server-`/`client-` prefix.
pub fn split_dir_name(name: &str) -> Option<(String, String)> {
    // The timestamp is an ISO date with ':' and '.' replaced by '-': 24 chars.
    const TS: usize = "2026-08-07T12-00-00-000Z".len();
    if name.len() <= TS + 1 {
        return None;
    }
    let (head, ts) = name.split_at(name.len() - TS);
    let b = ts.as_bytes();
    if b[10] != b'T' || !ts.ends_with('Z') || !ts[..4].bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let head = head.strip_suffix('-')?;
    let scen = head
        .strip_prefix("server-")
        .or_else(|| head.strip_prefix("client-"))
        .unwrap_or(head);
    Some((scen.to_string(), ts.to_string()))
}

pub fn read_checks(json: &str) -> Result<Scenario, String> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let arr = v.as_array().ok_or("checks.json is not an array")?;
    let mut s = Scenario::default();
    for c in arr {
        let id = c
            .get("id")
            .and_then(|x| x.as_str())
            .unwrap_or("?")
            .to_string();
        match c.get("status").and_then(|x| x.as_str()).unwrap_or("") {
            "SUCCESS" => s.success += 1,
            "FAILURE" => {
                s.failure += 1;
                s.failed_checks.push(id);
            }
            "WARNING" => {
                s.warning += 1;
                s.warned_checks.push(id);
            }
            _ => s.other += 1,
        }
    }
    Ok(s)
}

/// Scenarios of one run directory, by name; `None` when the directory does
/// not exist or holds no result (the run did not happen). A scenario named
/// `group/x` (the suite's `auth/*`) is read from `group/x-<timestamp>/`.
pub fn read_run(dir: &Path) -> Result<Option<Vec<Scenario>>, String> {
    let mut by_name: BTreeMap<String, Scenario> = BTreeMap::new();
    read_into(dir, "", &mut by_name)?;
    if by_name.is_empty() {
        return Ok(None);
    }
    Ok(Some(by_name.into_values().collect()))
}

fn read_into(dir: &Path, group: &str, by_name: &mut BTreeMap<String, Scenario>) -> Result<(), String> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Ok(());
    };
    for ent in rd.flatten() {
        let p = ent.path();
        let file = p.join("checks.json");
        let dname = ent.file_name().to_string_lossy().into_owned();
        if !file.is_file() {
            if group.is_empty() && p.is_dir() && split_dir_name(&dname).is_none() {
                read_into(&p, &format!("{dname}/"), by_name)?;
            }
            continue;
        }
        let (name, ts) = split_dir_name(&dname).unwrap_or((dname.clone(), String::new()));
        let name = format!("{group}{name}");
        let text = fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let mut s = read_checks(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        s.name = name.clone();
        s.timestamp = ts;
        let newer = match by_name.get(&name) {
            Some(old) => old.timestamp < s.timestamp,
            None => true,
        };
        if newer {
            by_name.insert(name, s);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scored_lists() {
        assert_eq!(scored("2025-11-25", "server").unwrap().len(), 30);
        assert_eq!(scored("2026-07-28", "server").unwrap().len(), 37);
        assert_eq!(
            scored("2025-11-25", "server-legacy-upstream")
                .unwrap()
                .len(),
            30
        );
        assert!(scored("2026-07-28", "client").is_none());
    }

    #[test]
    fn dir_names() {
        assert_eq!(
            split_dir_name("server-tools-call-image-2026-08-07T12-00-00-000Z"),
            Some(("tools-call-image".into(), "2026-08-07T12-00-00-000Z".into()))
        );
        assert_eq!(
            split_dir_name("initialize-2026-08-07T12-00-00-000Z")
                .unwrap()
                .0,
            "initialize"
        );
        assert_eq!(split_dir_name("notes"), None);
    }

    #[test]
    fn reads_runs_newest_wins() {
        let d = std::env::temp_dir().join(format!("conformance-suite-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        let put = |name: &str, json: &str| {
            fs::create_dir_all(d.join(name)).unwrap();
            fs::write(d.join(name).join("checks.json"), json).unwrap();
        };
        put(
            "server-ping-2026-08-07T12-00-00-000Z",
            r#"[{"id":"ping","status":"FAILURE"}]"#,
        );
        put(
            "server-ping-2026-08-07T13-00-00-000Z",
            r#"[{"id":"ping","status":"SUCCESS"},{"id":"wire-schema-valid","status":"SUCCESS"}]"#,
        );
        put(
            "server-caching-2026-08-07T12-00-00-000Z",
            r#"[{"id":"c","status":"WARNING"},{"id":"x","status":"INFO"}]"#,
        );
        put(
            "auth/metadata-default-2026-08-07T12-00-00-000Z",
            r#"[{"id":"token-request","status":"SUCCESS"}]"#,
        );
        let run = read_run(&d).unwrap().unwrap();
        let auth = run.iter().find(|s| s.name == "auth/metadata-default").expect("a grouped scenario");
        assert_eq!(auth.timestamp, "2026-08-07T12-00-00-000Z");
        let run: Vec<Scenario> = run.into_iter().filter(|s| !s.name.starts_with("auth/")).collect();
        assert_eq!(run.len(), 2);
        let caching = &run[0];
        assert_eq!(
            (
                caching.name.as_str(),
                caching.passed(),
                caching.warning,
                caching.other
            ),
            ("caching", false, 1, 1)
        );
        assert!(run[1].passed() && run[1].success == 2);
        assert_eq!(read_run(&d.join("absent")).unwrap(), None);
        let _ = fs::remove_dir_all(&d);
    }
}
