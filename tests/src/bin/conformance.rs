//! The conformance matrix of mcpx: every row of the shared requirement list,
//! its status computed from the tests.
//!
//! ```text
//! conformance check --junit target/nextest/ci/junit.xml
//! conformance update
//! conformance docs [--results target/conformance] [--out docs/conformance.md]
//! ```
//! Common options: `--root DIR` (the workspace; default: the nearest parent of
//! the current directory whose Cargo.toml has a [workspace]) and
//! `--requirements FILE` (default: `$MCPX_SHARED/requirements/mcp-normative-requirements.md`,
//! MCPX_SHARED defaulting to the `shared` folder beside the workspace). The
//! rows of the official extensions that list does not carry yet follow it,
//! from `tests/conformance/extensions.md`.
//!
//! See `tests/conformance/matrix.toml` for the file's rules.

#[path = "../matrix/mod.rs"]
mod matrix;

use matrix::{docs, junit, model, reqs, scan, suite};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: conformance <check --junit PATH | update | docs [--results DIR] [--out PATH]> [--root DIR] [--requirements FILE]";

struct Opts {
    cmd: String,
    root: PathBuf,
    requirements: PathBuf,
    junit: Option<PathBuf>,
    results: Option<PathBuf>,
    out: Option<PathBuf>,
}

fn find_root() -> Result<PathBuf, String> {
    let mut dir = std::env::current_dir().map_err(|e| e.to_string())?;
    loop {
        let manifest = dir.join("Cargo.toml");
        if let Ok(text) = std::fs::read_to_string(&manifest) {
            if text.lines().any(|l| l.trim() == "[workspace]") {
                return Ok(dir);
            }
        }
        if !dir.pop() {
            return Err("no workspace Cargo.toml above the current directory; pass --root".into());
        }
    }
}

fn parse_args() -> Result<Opts, String> {
    let mut args = std::env::args().skip(1);
    let cmd = args.next().ok_or(USAGE)?;
    let (mut root, mut requirements, mut junit, mut results, mut out) =
        (None, None, None, None, None);
    while let Some(a) = args.next() {
        let mut val = || {
            args.next()
                .map(PathBuf::from)
                .ok_or(format!("{a} needs a value"))
        };
        match a.as_str() {
            "--root" => root = Some(val()?),
            "--requirements" => requirements = Some(val()?),
            "--junit" => junit = Some(val()?),
            "--results" => results = Some(val()?),
            "--out" => out = Some(val()?),
            _ => return Err(format!("unknown argument {a}\n{USAGE}")),
        }
    }
    let root = match root {
        Some(r) => r,
        None => find_root()?,
    };
    let requirements = requirements.unwrap_or_else(|| {
        let shared = std::env::var_os("MCPX_SHARED")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("..").join("shared"));
        shared
            .join("requirements")
            .join("mcp-normative-requirements.md")
    });
    Ok(Opts {
        cmd,
        root,
        requirements,
        junit,
        results,
        out,
    })
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn extensions_path(root: &Path) -> PathBuf {
    root.join("tests").join("conformance").join("extensions.md")
}

fn matrix_path(root: &Path) -> PathBuf {
    root.join("tests").join("conformance").join("matrix.toml")
}

fn run() -> Result<bool, String> {
    let o = parse_args()?;
    // The shared list, then the extension rows it does not carry yet.
    let ext = extensions_path(&o.root);
    let text = format!("{}\n{}", read(&o.requirements)?, read(&ext)?);
    let parsed = reqs::parse(&text)
        .map_err(|e| format!("{} + {}: {e}", o.requirements.display(), ext.display()))?;
    let reqs = parsed.reqs;
    let mpath = matrix_path(&o.root);
    let matrix =
        model::Matrix::parse(&read(&mpath)?).map_err(|e| format!("{}: {e}", mpath.display()))?;
    match o.cmd.as_str() {
        "check" => {
            let jpath = o
                .junit
                .ok_or("check needs --junit PATH (nextest's JUnit report)")?;
            let results =
                junit::parse(&read(&jpath)?).map_err(|e| format!("{}: {e}", jpath.display()))?;
            let scan = scan::scan_workspace(&o.root)?;
            let fails = model::check(&matrix, &reqs, &scan, &results);
            for w in &parsed.warnings {
                eprintln!("note: requirement list: {w}");
            }
            let count = |s| matrix.rows.iter().filter(|e| e.status == s).count();
            println!(
                "conformance matrix: {} rows ({} covered, {} gap, {} n/a); {} tests, {} claims, {} results in the report",
                reqs.len(),
                count(model::Status::Covered),
                count(model::Status::Gap),
                count(model::Status::NotApplicable),
                scan.tests.len(),
                scan.claims.len(),
                results.len()
            );
            // Informational: a test the scanner found that did not run (filtered
            // out, or a scanner blind spot), and a claimed test the report lacks,
            // are failures only when a covered row names it.
            let unreported = scan
                .tests
                .iter()
                .filter(|t| !results.contains_key(*t))
                .count();
            if unreported > 0 {
                println!("note: {unreported} test(s) found in the sources are not in the report");
            }
            for f in &fails {
                println!("FAIL {f}");
            }
            if fails.is_empty() {
                println!("conformance matrix: ok");
            } else {
                println!("conformance matrix: {} problem(s)", fails.len());
            }
            Ok(fails.is_empty())
        }
        "update" => {
            let scan = scan::scan_workspace(&o.root)?;
            for p in &scan.problems {
                eprintln!("warning: {p}");
            }
            let (new, notes) = model::derive(&matrix, &reqs, &scan);
            for n in &notes {
                println!("{n}");
            }
            let text = new.render(&reqs);
            if text != read(&mpath)? {
                std::fs::write(&mpath, text).map_err(|e| format!("{}: {e}", mpath.display()))?;
                println!(
                    "wrote {}",
                    mpath.strip_prefix(&o.root).unwrap_or(&mpath).display()
                );
            } else {
                println!("matrix up to date");
            }
            Ok(true)
        }
        "docs" => {
            let rdir = o
                .results
                .unwrap_or_else(|| o.root.join("target").join("conformance"));
            let mut results = docs::SuiteResults::new();
            for set in suite::SETS {
                for leg in suite::LEGS {
                    results.insert(
                        (set.to_string(), leg.to_string()),
                        suite::read_run(&rdir.join(set).join(leg))?,
                    );
                }
            }
            let text = docs::render(&reqs, &matrix, &results, &parsed.warnings);
            let out = o
                .out
                .unwrap_or_else(|| o.root.join("docs").join("conformance.md"));
            std::fs::write(&out, text).map_err(|e| format!("{}: {e}", out.display()))?;
            println!(
                "wrote {}",
                out.strip_prefix(&o.root).unwrap_or(&out).display()
            );
            Ok(true)
        }
        _ => Err(USAGE.into()),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("conformance: {e}");
            ExitCode::from(2)
        }
    }
}
