//! The conformance matrix file: one entry per requirement row with its status.
//!
//! Humans maintain `n/a` and `gap` entries and their reasons; the test lists
//! of `covered` entries are derived from the claim comments in the test
//! sources by `update` (a gap claimed by a test becomes covered, a covered row
//! no test claims any more falls back to a gap), and `check` fails when the
//! file differs from what `update` would write.

use super::junit::{Outcome, Results};
use super::reqs::Req;
use super::scan::Scan;
use super::toml::{self, Value};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Covered,
    Gap,
    NotApplicable,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Covered => "covered",
            Status::Gap => "gap",
            Status::NotApplicable => "n/a",
        }
    }
    fn parse(s: &str) -> Option<Status> {
        match s {
            "covered" => Some(Status::Covered),
            "gap" => Some(Status::Gap),
            "n/a" => Some(Status::NotApplicable),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub id: String,
    pub status: Status,
    /// A key of `na-reasons` (status n/a) or `gap-reasons` (status gap).
    pub reason: Option<String>,
    pub note: Option<String>,
    pub tests: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Matrix {
    pub na_reasons: Vec<(String, String)>,
    pub gap_reasons: Vec<(String, String)>,
    pub rows: Vec<Entry>,
}

/// The reason a gap gets when nothing else is known.
pub const UNTESTED: &str = "untested";

impl Matrix {
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.rows.iter().find(|e| e.id == id)
    }

    pub fn reason_text(&self, status: Status, key: &str) -> Option<&str> {
        let list = match status {
            Status::NotApplicable => &self.na_reasons,
            Status::Gap => &self.gap_reasons,
            Status::Covered => return None,
        };
        list.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    pub fn parse(text: &str) -> Result<Matrix, String> {
        let doc = toml::parse(text)?;
        let mut m = Matrix::default();
        for (table, out) in [
            ("na-reasons", &mut m.na_reasons),
            ("gap-reasons", &mut m.gap_reasons),
        ] {
            if let Some(t) = toml::get(&doc, table) {
                for (k, v) in t.as_table().ok_or(format!("{table} is not a table"))? {
                    let s = v.as_str().ok_or(format!("{table}.{k} is not a string"))?;
                    out.push((k.clone(), s.to_string()));
                }
            }
        }
        let rows = toml::get(&doc, "rows")
            .and_then(Value::as_table)
            .ok_or("no [rows] table")?;
        for (id, v) in rows {
            let t = v.as_table().ok_or(format!("rows.{id} is not a table"))?;
            for (k, _) in t {
                if !matches!(k.as_str(), "status" | "reason" | "note" | "tests") {
                    return Err(format!("rows.{id}: unknown key {k}"));
                }
            }
            let status_s = toml::get(t, "status")
                .and_then(Value::as_str)
                .ok_or(format!("rows.{id}: no status"))?;
            let status = Status::parse(status_s).ok_or(format!(
                "rows.{id}: status {status_s:?} is not covered, gap or n/a"
            ))?;
            let s = |k: &str| -> Result<Option<String>, String> {
                match toml::get(t, k) {
                    None => Ok(None),
                    Some(Value::Str(s)) => Ok(Some(s.clone())),
                    Some(_) => Err(format!("rows.{id}.{k} is not a string")),
                }
            };
            let tests = match toml::get(t, "tests") {
                None => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .map(str::to_string)
                            .ok_or(format!("rows.{id}.tests: not a string"))
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(format!("rows.{id}.tests is not an array")),
            };
            m.rows.push(Entry {
                id: id.clone(),
                status,
                reason: s("reason")?,
                note: s("note")?,
                tests,
            });
        }
        Ok(m)
    }

    /// Writes the file in canonical form: rows in the order of `reqs`, under
    /// the section headings of the requirement file; unknown rows dropped.
    pub fn render(&self, reqs: &[Req]) -> String {
        let mut out = String::from(HEADER);
        for (title, list) in [
            ("na-reasons", &self.na_reasons),
            ("gap-reasons", &self.gap_reasons),
        ] {
            out.push_str(&format!("\n[{title}]\n"));
            for (k, v) in list {
                out.push_str(&format!("{} = {}\n", toml::key(k), toml::quote(v)));
            }
        }
        out.push_str("\n[rows]\n");
        let mut section = "";
        for r in reqs {
            let Some(e) = self.get(&r.id) else { continue };
            if r.section != section {
                section = &r.section;
                out.push_str(&format!("\n# {section}\n"));
            }
            let mut fields = vec![format!("status = {}", toml::quote(e.status.as_str()))];
            if let Some(reason) = &e.reason {
                fields.push(format!("reason = {}", toml::quote(reason)));
            }
            if !e.tests.is_empty() {
                let t: Vec<String> = e.tests.iter().map(|t| toml::quote(t)).collect();
                fields.push(format!("tests = [{}]", t.join(", ")));
            }
            if let Some(note) = &e.note {
                fields.push(format!("note = {}", toml::quote(note)));
            }
            out.push_str(&format!(
                "{} = {{ {} }}\n",
                toml::key(&e.id),
                fields.join(", ")
            ));
        }
        out
    }
}

const HEADER: &str = "\
# The conformance matrix of mcpx: one entry per row of the shared requirement
# list (requirements/mcp-normative-requirements.md in the shared folder beside
# the repository), in the order of that file.
#
# status = \"covered\": tests claim the row. Their list is derived from the
#   `// covers: <row-id>` / `// row: <row-id>` comments above #[test] fns by
#   `cargo run -p mcpx-tests --bin conformance -- update`; do not edit it.
#   Each test is named as cargo-nextest reports it: \"<binary-id> <test path>\".
# status = \"gap\": applies to mcpx, not (yet) met or not (yet) tested; the
#   reason is a key of [gap-reasons].
# status = \"n/a\": binds no part of mcpx; the reason is a key of [na-reasons].
# note: optional one-line remark kept by `update`.
#
# `conformance check --junit target/nextest/ci/junit.xml` fails when this file
# is out of date, names an unknown row or misses one, when a covered row's test
# did not run and pass, and when a test claims a gap or n/a row.
# Rules and classification policy: tests/conformance/README.md.
";

/// Row id → sorted, de-duplicated tests claiming it.
pub fn claims_by_row(scan: &Scan) -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for c in &scan.claims {
        for r in &c.rows {
            map.entry(r.clone()).or_default().insert(c.test.clone());
        }
    }
    map.into_iter()
        .map(|(k, v)| (k, v.into_iter().collect()))
        .collect()
}

/// What `update` writes: the matrix with the test lists re-derived.
/// Returns the new matrix and notes on what changed.
pub fn derive(m: &Matrix, reqs: &[Req], scan: &Scan) -> (Matrix, Vec<String>) {
    let claims = claims_by_row(scan);
    let mut notes = Vec::new();
    let mut out = Matrix {
        na_reasons: m.na_reasons.clone(),
        gap_reasons: m.gap_reasons.clone(),
        rows: Vec::new(),
    };
    for r in reqs {
        let claimed = claims.get(&r.id).cloned().unwrap_or_default();
        let e = match m.get(&r.id) {
            None => {
                notes.push(format!("{}: new row, added as gap ({UNTESTED})", r.id));
                Entry {
                    id: r.id.clone(),
                    status: Status::Gap,
                    reason: Some(UNTESTED.into()),
                    note: None,
                    tests: vec![],
                }
            }
            Some(e) => e.clone(),
        };
        let e = match e.status {
            Status::NotApplicable => {
                if !claimed.is_empty() {
                    notes.push(format!("{}: n/a but claimed by {}; left as n/a (fix the classification or the claim)", r.id, claimed.join(", ")));
                }
                Entry { tests: vec![], ..e }
            }
            _ if !claimed.is_empty() => {
                if e.status == Status::Gap {
                    notes.push(format!(
                        "{}: gap ({}) now covered by {}",
                        r.id,
                        e.reason.as_deref().unwrap_or("?"),
                        claimed.join(", ")
                    ));
                }
                Entry {
                    status: Status::Covered,
                    reason: None,
                    tests: claimed,
                    ..e
                }
            }
            Status::Covered => {
                notes.push(format!(
                    "{}: no test claims it any more, back to gap ({UNTESTED})",
                    r.id
                ));
                Entry {
                    status: Status::Gap,
                    reason: Some(UNTESTED.into()),
                    tests: vec![],
                    ..e
                }
            }
            Status::Gap => Entry { tests: vec![], ..e },
        };
        out.rows.push(e);
    }
    for e in &m.rows {
        if !reqs.iter().any(|r| r.id == e.id) {
            notes.push(format!(
                "{}: not a row of the requirement list, dropped",
                e.id
            ));
        }
    }
    (out, notes)
}

/// The outcome of a claimed test: its own testcase, or, for a fn that
/// expands into several test cases (parameterised test macros name them
/// `<fn>::<case>`), the worst outcome of those cases.
pub fn outcome(junit: &Results, test: &str) -> Option<Outcome> {
    if let Some(o) = junit.get(test) {
        return Some(*o);
    }
    let prefix = format!("{test}::");
    let rank = |o: &Outcome| match o {
        Outcome::Passed => 0,
        Outcome::Skipped => 1,
        Outcome::Failed => 2,
    };
    junit
        .range(prefix.clone()..)
        .take_while(|(k, _)| k.starts_with(&prefix))
        .map(|(_, o)| *o)
        .max_by_key(rank)
}

/// Every reason the matrix fails the check, one line each.
pub fn check(m: &Matrix, reqs: &[Req], scan: &Scan, junit: &Results) -> Vec<String> {
    let mut fails = Vec::new();
    let known: BTreeSet<&str> = reqs.iter().map(|r| r.id.as_str()).collect();
    let mut seen = BTreeSet::new();
    for e in &m.rows {
        if !seen.insert(e.id.as_str()) {
            fails.push(format!("{}: listed twice in the matrix", e.id));
        }
        if !known.contains(e.id.as_str()) {
            fails.push(format!(
                "{}: unknown row id (not in the requirement list)",
                e.id
            ));
        }
    }
    for r in reqs {
        if m.get(&r.id).is_none() {
            fails.push(format!("{}: row missing from the matrix", r.id));
        }
    }
    for e in &m.rows {
        match (e.status, &e.reason) {
            (Status::Covered, Some(_)) => {
                fails.push(format!("{}: covered rows take no reason", e.id))
            }
            (Status::Covered, None) if e.tests.is_empty() => {
                fails.push(format!("{}: covered but names no test", e.id))
            }
            (Status::Gap | Status::NotApplicable, None) => {
                fails.push(format!("{}: {} without a reason", e.id, e.status.as_str()))
            }
            (s @ (Status::Gap | Status::NotApplicable), Some(k))
                if m.reason_text(s, k).is_none() =>
            {
                let table = if s == Status::Gap {
                    "gap-reasons"
                } else {
                    "na-reasons"
                };
                fails.push(format!("{}: reason {k:?} is not a key of [{table}]", e.id))
            }
            _ => {}
        }
        if e.status != Status::Covered && !e.tests.is_empty() {
            fails.push(format!("{}: only covered rows list tests", e.id));
        }
        for t in &e.tests {
            match outcome(junit, t) {
                None => fails.push(format!(
                    "{}: test {t} did not run (not in the JUnit report)",
                    e.id
                )),
                Some(Outcome::Failed) => fails.push(format!("{}: test {t} failed", e.id)),
                Some(Outcome::Skipped) => fails.push(format!("{}: test {t} was skipped", e.id)),
                Some(Outcome::Passed) => {}
            }
        }
    }
    for p in &scan.problems {
        fails.push(p.clone());
    }
    let claims = claims_by_row(scan);
    for c in &scan.claims {
        for r in &c.rows {
            if !known.contains(r.as_str()) {
                fails.push(format!(
                    "{}:{}: {} claims unknown row id {r}",
                    c.file.display(),
                    c.line,
                    c.test
                ));
            }
        }
    }
    for (row, tests) in &claims {
        let Some(e) = m.get(row) else { continue };
        let passing: Vec<&str> = tests
            .iter()
            .filter(|t| outcome(junit, t) == Some(Outcome::Passed))
            .map(String::as_str)
            .collect();
        let passed_note = if passing.is_empty() {
            String::new()
        } else {
            format!(" ({} passed)", passing.join(", "))
        };
        match e.status {
            Status::Gap => fails.push(format!("{row}: marked gap but claimed by {}{passed_note}: stale gap, run `conformance update`", tests.join(", "))),
            Status::NotApplicable => fails.push(format!("{row}: marked n/a but claimed by {}{passed_note}: fix the classification or the claim", tests.join(", "))),
            Status::Covered if e.tests != *tests => {
                fails.push(format!("{row}: matrix lists {:?}, claims are {:?}: out of date, run `conformance update`", e.tests, tests))
            }
            Status::Covered => {}
        }
    }
    for e in &m.rows {
        if e.status == Status::Covered && !e.tests.is_empty() && !claims.contains_key(&e.id) {
            fails.push(format!(
                "{}: covered but no test claims it any more: run `conformance update`",
                e.id
            ));
        }
    }
    fails
}

#[cfg(test)]
mod tests {
    use super::super::reqs;
    use super::super::scan::Claim;
    use super::*;
    use std::path::PathBuf;

    const REQS: &str = "Section A\n| id | revs | side | level | area | quote | url | s | c | changes |\n|---|---|---|---|---|---|---|---|---|---|\n| r-cov | 2025-11-25 | server | MUST | a | q | https://u | | | |\n| r-gap | 2025-11-25 | client | SHOULD | a | q | https://u | | | |\n| r-na | 2026-07-28 | auth-server | MUST | a | q | https://u | | | |\n";

    const MATRIX: &str = "[na-reasons]\nauth-server = \"AS duty\"\n[gap-reasons]\nuntested = \"no test yet\"\n[rows]\nr-cov = { status = \"covered\", tests = [\"p::e2e a::t1\"] }\nr-gap = { status = \"gap\", reason = \"untested\", note = \"see x\" }\nr-na = { status = \"n/a\", reason = \"auth-server\" }\n";

    fn reqs() -> Vec<Req> {
        reqs::parse(REQS).unwrap().reqs
    }

    fn scan(claims: &[(&str, &[&str])]) -> Scan {
        let mut s = Scan::default();
        for (t, rows) in claims {
            s.tests.insert(t.to_string());
            s.claims.push(Claim {
                test: t.to_string(),
                rows: rows.iter().map(|r| r.to_string()).collect(),
                file: PathBuf::from("f.rs"),
                line: 1,
            });
        }
        s
    }

    fn junit(pairs: &[(&str, Outcome)]) -> Results {
        pairs.iter().map(|(t, o)| (t.to_string(), *o)).collect()
    }

    fn run(matrix: &str, claims: &[(&str, &[&str])], results: &[(&str, Outcome)]) -> Vec<String> {
        check(
            &Matrix::parse(matrix).unwrap(),
            &reqs(),
            &scan(claims),
            &junit(results),
        )
    }

    const OK_CLAIMS: &[(&str, &[&str])] = &[("p::e2e a::t1", &["r-cov"])];

    #[test]
    fn clean_matrix_passes_and_round_trips() {
        assert_eq!(
            run(MATRIX, OK_CLAIMS, &[("p::e2e a::t1", Outcome::Passed)]),
            Vec::<String>::new()
        );
        let m = Matrix::parse(MATRIX).unwrap();
        let text = m.render(&reqs());
        assert!(text.contains("# Section A"));
        assert_eq!(Matrix::parse(&text).unwrap(), m);
        let (d, notes) = derive(&m, &reqs(), &scan(OK_CLAIMS));
        assert_eq!(d, m);
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn missing_and_unknown_rows_fail() {
        let f = run(
            &MATRIX.replace("r-na = ", "r-zz = "),
            OK_CLAIMS,
            &[("p::e2e a::t1", Outcome::Passed)],
        );
        assert!(
            f.iter().any(|l| l.contains("r-zz: unknown row id")),
            "{f:?}"
        );
        assert!(f.iter().any(|l| l.contains("r-na: row missing")), "{f:?}");
    }

    #[test]
    fn covered_test_must_run_and_pass() {
        let f = run(MATRIX, OK_CLAIMS, &[]);
        assert!(f.iter().any(|l| l.contains("did not run")), "{f:?}");
        let f = run(MATRIX, OK_CLAIMS, &[("p::e2e a::t1", Outcome::Failed)]);
        assert!(f.iter().any(|l| l.contains("failed")), "{f:?}");
        let f = run(MATRIX, OK_CLAIMS, &[("p::e2e a::t1", Outcome::Skipped)]);
        assert!(f.iter().any(|l| l.contains("skipped")), "{f:?}");
    }

    #[test]
    fn parameterised_cases_count_for_their_fn() {
        let ok = run(
            MATRIX,
            OK_CLAIMS,
            &[
                ("p::e2e a::t1::case_1", Outcome::Passed),
                ("p::e2e a::t1::case_2", Outcome::Passed),
            ],
        );
        assert_eq!(ok, Vec::<String>::new());
        let f = run(
            MATRIX,
            OK_CLAIMS,
            &[
                ("p::e2e a::t1::case_1", Outcome::Passed),
                ("p::e2e a::t1::case_2", Outcome::Failed),
            ],
        );
        assert!(f.iter().any(|l| l.contains("failed")), "{f:?}");
        // A test whose name only starts like the claimed one does not count.
        let f = run(MATRIX, OK_CLAIMS, &[("p::e2e a::t10", Outcome::Passed)]);
        assert!(f.iter().any(|l| l.contains("did not run")), "{f:?}");
    }

    #[test]
    fn covered_test_that_does_not_exist_fails() {
        // The matrix names a test no source claims (renamed or deleted).
        let f = run(MATRIX, &[], &[("p::e2e a::t1", Outcome::Passed)]);
        assert!(f.iter().any(|l| l.contains("no test claims it")), "{f:?}");
    }

    #[test]
    fn claimed_gap_or_na_fails() {
        let claims: &[(&str, &[&str])] = &[
            ("p::e2e a::t1", &["r-cov"]),
            ("p::e2e a::t2", &["r-gap", "r-na"]),
        ];
        let f = run(
            MATRIX,
            claims,
            &[
                ("p::e2e a::t1", Outcome::Passed),
                ("p::e2e a::t2", Outcome::Passed),
            ],
        );
        assert!(
            f.iter()
                .any(|l| l.starts_with("r-gap: marked gap") && l.contains("stale gap")),
            "{f:?}"
        );
        assert!(f.iter().any(|l| l.starts_with("r-na: marked n/a")), "{f:?}");
    }

    #[test]
    fn extra_claim_on_covered_row_means_out_of_date() {
        let claims: &[(&str, &[&str])] =
            &[("p::e2e a::t1", &["r-cov"]), ("p::e2e a::t3", &["r-cov"])];
        let f = run(
            MATRIX,
            claims,
            &[
                ("p::e2e a::t1", Outcome::Passed),
                ("p::e2e a::t3", Outcome::Passed),
            ],
        );
        assert!(f.iter().any(|l| l.contains("out of date")), "{f:?}");
    }

    #[test]
    fn unknown_claims_reasons_and_dangling_comments_fail() {
        let claims: &[(&str, &[&str])] = &[("p::e2e a::t1", &["r-cov", "r-nope"])];
        let mut s = scan(claims);
        s.problems
            .push("f.rs:3: claim of r-gap is not directly above a test fn".into());
        let m = Matrix::parse(&MATRIX.replace("reason = \"untested\"", "reason = \"whatever\""))
            .unwrap();
        let f = check(
            &m,
            &reqs(),
            &s,
            &junit(&[("p::e2e a::t1", Outcome::Passed)]),
        );
        assert!(
            f.iter().any(|l| l.contains("unknown row id r-nope")),
            "{f:?}"
        );
        assert!(
            f.iter().any(|l| l.contains("\"whatever\" is not a key")),
            "{f:?}"
        );
        assert!(f.iter().any(|l| l.contains("not directly above")), "{f:?}");
    }

    #[test]
    fn bad_entries_fail_to_parse_or_check() {
        assert!(Matrix::parse("[rows]\nr = { status = \"done\" }\n").is_err());
        assert!(Matrix::parse("[rows]\nr = { status = \"gap\", why = \"x\" }\n").is_err());
        let f = run(
            &MATRIX.replace(
                "r-na = { status = \"n/a\", reason = \"auth-server\" }",
                "r-na = { status = \"n/a\" }",
            ),
            OK_CLAIMS,
            &[("p::e2e a::t1", Outcome::Passed)],
        );
        assert!(
            f.iter().any(|l| l.contains("n/a without a reason")),
            "{f:?}"
        );
    }

    #[test]
    fn update_derives_test_lists() {
        let m = Matrix::parse(MATRIX).unwrap();
        // t1 moved from r-cov to r-gap; r-na claimed (kept n/a); a row is missing.
        let claims: &[(&str, &[&str])] = &[("p::e2e a::t1", &["r-gap", "r-na"])];
        let mut short = m.clone();
        short.rows.retain(|e| e.id != "r-na");
        let (d, notes) = derive(&short, &reqs(), &scan(claims));
        let cov = d.get("r-cov").unwrap();
        assert_eq!(
            (cov.status, cov.reason.as_deref()),
            (Status::Gap, Some(UNTESTED))
        );
        let gap = d.get("r-gap").unwrap();
        assert_eq!(
            (gap.status, gap.tests.clone(), gap.note.as_deref()),
            (
                Status::Covered,
                vec!["p::e2e a::t1".to_string()],
                Some("see x")
            )
        );
        // A row new to the matrix that a test already claims is covered at once.
        assert_eq!(d.get("r-na").unwrap().status, Status::Covered);
        assert_eq!(notes.len(), 4, "{notes:?}");
        let (d2, notes2) = derive(&m, &reqs(), &scan(claims));
        assert_eq!(d2.get("r-na").unwrap().status, Status::NotApplicable);
        assert!(notes2.iter().any(|n| n.contains("n/a but claimed")));
    }
}
