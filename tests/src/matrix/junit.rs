//! Reader of the JUnit XML that cargo-nextest writes: one `<testsuite>` per
//! test binary (its name is the binary id), one `<testcase>` per test run,
//! `classname` = binary id, `name` = the test's path. A testcase passed when it
//! has no `<failure>`, `<error>` or `<skipped>` child; `<flakyFailure>` /
//! `<flakyError>` children mean it passed on a retry, which counts as passed.

use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    Failed,
    Skipped,
}

/// Test id (`<binary-id> <test name>`) → outcome. A test reported twice
/// keeps its worst outcome.
pub type Results = BTreeMap<String, Outcome>;

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        let end = after.find(';').unwrap_or(0);
        let ent = &after[1..end.max(1)];
        let rep = match ent {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ if ent.starts_with("#x") => u32::from_str_radix(&ent[2..], 16)
                .ok()
                .and_then(char::from_u32),
            _ if ent.starts_with('#') => ent[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match (rep, end) {
            (Some(c), e) if e > 0 => {
                out.push(c);
                rest = &after[e + 1..];
            }
            _ => {
                out.push('&');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Attributes of a start tag's inner text (`name a="1" b='2'`).
fn attrs(tag: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = tag.trim_start_matches(|c: char| !c.is_whitespace());
    loop {
        rest = rest.trim_start();
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].trim().to_string();
        let after = rest[eq + 1..].trim_start();
        let Some(q) = after.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            break;
        };
        let Some(close) = after[1..].find(q) else {
            break;
        };
        out.insert(key, unescape(&after[1..1 + close]));
        rest = &after[close + 2..];
    }
    out
}

enum Tok<'a> {
    Open(&'a str, bool),
    Close(&'a str),
}

/// Start and end tags in document order; text, comments, CDATA, processing
/// instructions and doctypes are skipped.
fn tags(xml: &str) -> Result<Vec<Tok<'_>>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(off) = xml[i..].find('<') {
        let s = i + off;
        let rest = &xml[s..];
        let skip_to = |end: &str| {
            rest.find(end)
                .map(|e| s + e + end.len())
                .ok_or_else(|| format!("unterminated markup at byte {s}"))
        };
        if rest.starts_with("<!--") {
            i = skip_to("-->")?;
        } else if rest.starts_with("<![CDATA[") {
            i = skip_to("]]>")?;
        } else if rest.starts_with("<?") {
            i = skip_to("?>")?;
        } else if rest.starts_with("<!") {
            i = skip_to(">")?;
        } else {
            // '>' may not appear unescaped inside attribute values in what
            // nextest writes, but skip quoted text to be safe.
            let b = rest.as_bytes();
            let mut j = 1;
            let mut q: Option<u8> = None;
            while j < b.len() {
                match (q, b[j]) {
                    (None, b'"' | b'\'') => q = Some(b[j]),
                    (Some(c), x) if c == x => q = None,
                    (None, b'>') => break,
                    _ => {}
                }
                j += 1;
            }
            if j >= b.len() {
                return Err(format!("unterminated tag at byte {s}"));
            }
            let inner = &rest[1..j];
            if let Some(name) = inner.strip_prefix('/') {
                out.push(Tok::Close(name.trim()));
            } else {
                let self_closing = inner.ends_with('/');
                out.push(Tok::Open(inner.trim_end_matches('/'), self_closing));
            }
            i = s + j + 1;
        }
    }
    Ok(out)
}

fn tag_name(inner: &str) -> &str {
    inner.split_whitespace().next().unwrap_or("")
}

pub fn parse(xml: &str) -> Result<Results, String> {
    let mut results = Results::new();
    let mut suite: Option<String> = None;
    // The open testcase: (id, outcome, depth below it).
    let mut case: Option<(String, Outcome)> = None;
    let mut depth_in_case = 0usize;
    let mut saw_root = false;
    for t in tags(xml)? {
        match t {
            Tok::Open(inner, self_closing) => {
                let name = tag_name(inner);
                if let Some((_, outcome)) = case.as_mut() {
                    if depth_in_case == 0 {
                        match name {
                            "failure" | "error" => *outcome = Outcome::Failed,
                            "skipped" if *outcome == Outcome::Passed => *outcome = Outcome::Skipped,
                            _ => {}
                        }
                    }
                    if !self_closing {
                        depth_in_case += 1;
                    }
                    continue;
                }
                match name {
                    "testsuites" => saw_root = true,
                    "testsuite" => {
                        saw_root = true;
                        suite = attrs(inner).get("name").cloned();
                    }
                    "testcase" => {
                        let a = attrs(inner);
                        let test = a.get("name").ok_or("testcase without name")?;
                        let class = a
                            .get("classname")
                            .cloned()
                            .or_else(|| suite.clone())
                            .ok_or("testcase without binary id")?;
                        let id = format!("{class} {test}");
                        if self_closing {
                            record(&mut results, id, Outcome::Passed);
                        } else {
                            case = Some((id, Outcome::Passed));
                            depth_in_case = 0;
                        }
                    }
                    _ => {}
                }
            }
            Tok::Close(name) => {
                if case.is_some() {
                    if depth_in_case > 0 {
                        depth_in_case -= 1;
                    } else if name == "testcase" {
                        let (id, outcome) = case.take().unwrap();
                        record(&mut results, id, outcome);
                    }
                } else if name == "testsuite" {
                    suite = None;
                }
            }
        }
    }
    if !saw_root {
        return Err("not a JUnit report: no <testsuites> or <testsuite>".into());
    }
    if case.is_some() {
        return Err("unterminated <testcase>".into());
    }
    Ok(results)
}

fn record(results: &mut Results, id: String, outcome: Outcome) {
    let rank = |o: Outcome| match o {
        Outcome::Passed => 0,
        Outcome::Skipped => 1,
        Outcome::Failed => 2,
    };
    let e = results.entry(id).or_insert(outcome);
    if rank(outcome) > rank(*e) {
        *e = outcome;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="nextest-run" tests="5" failures="1" errors="0" uuid="x" timestamp="t" time="1">
  <testsuite name="mcpx-tests::e2e" tests="4" disabled="0" errors="0" failures="1">
    <testcase name="lifecycle::init_ok" classname="mcpx-tests::e2e" timestamp="t" time="0.1">
    </testcase>
    <testcase name="lifecycle::bad" classname="mcpx-tests::e2e" timestamp="t" time="0.1">
      <failure type="test failure">thread panicked &lt;failure&gt;</failure>
      <system-out><![CDATA[<error>not a tag</error>]]></system-out>
    </testcase>
    <testcase name="flaky" classname="mcpx-tests::e2e" time="0.1"><flakyFailure type="x">once</flakyFailure></testcase>
    <testcase name="a&amp;b" classname="mcpx-tests::e2e" time="0"/>
  </testsuite>
  <testsuite name="mcpx-core" tests="1">
    <testcase name="envelope::tests::skip" time="0"><skipped/></testcase>
  </testsuite>
</testsuites>
"#;

    #[test]
    fn reads_nextest_report() {
        let r = parse(SAMPLE).unwrap();
        assert_eq!(
            r.get("mcpx-tests::e2e lifecycle::init_ok"),
            Some(&Outcome::Passed)
        );
        assert_eq!(
            r.get("mcpx-tests::e2e lifecycle::bad"),
            Some(&Outcome::Failed)
        );
        assert_eq!(r.get("mcpx-tests::e2e flaky"), Some(&Outcome::Passed));
        assert_eq!(r.get("mcpx-tests::e2e a&b"), Some(&Outcome::Passed));
        assert_eq!(
            r.get("mcpx-core envelope::tests::skip"),
            Some(&Outcome::Skipped)
        );
        assert_eq!(r.len(), 5);
    }

    #[test]
    fn rejects_non_junit() {
        assert!(parse("<html></html>").is_err());
        assert!(parse("<testsuites><testcase name=\"x\" classname=\"c\">").is_err());
    }
}
