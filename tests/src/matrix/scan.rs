//! Finds the tests of the workspace and the requirement rows they claim.
//!
//! A claim is a line comment `// covers: <row-id>, <row-id>` or
//! `// row: <row-id>` in the block of comment and attribute lines directly
//! above a test fn (`#[test]`, `#[<path>::test]`, or a `#[test]` fn inside
//! `proptest!`). A test is named the way cargo-nextest names it:
//! `<binary-id> <module path>::<fn>` where the binary id is `<package>` for a
//! library, `<package>::bin/<name>` for a binary and `<package>::<name>` for
//! an integration test. Module paths follow `mod` declarations from each
//! target's root file, so a file shared by several test binaries yields one
//! test per binary, as nextest would list it.

use super::toml::{self, Value};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub binary_id: String,
    pub root: PathBuf,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// `<binary-id> <path>::<fn>`.
    pub test: String,
    pub rows: Vec<String>,
    pub file: PathBuf,
    pub line: usize,
}

#[derive(Clone, Debug, Default)]
pub struct Scan {
    pub claims: Vec<Claim>,
    /// Every test found, claiming or not.
    pub tests: BTreeSet<String>,
    /// Claim comments not followed by a test fn, and unreadable files.
    pub problems: Vec<String>,
}

fn read_toml(path: &Path) -> Result<toml::Table, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    toml::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn auto_off(t: &toml::Table, key: &str) -> bool {
    toml::get_path(t, &["package", key]) == Some(&Value::Bool(false))
}

/// `.rs` files directly in `dir` and `dir/<name>/main.rs`, as Cargo's target
/// auto-discovery finds them.
fn discover(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir(dir) else {
        return out;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_file() && p.extension().is_some_and(|e| e == "rs") {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            out.push((name, p));
        } else if p.is_dir() && p.join("main.rs").is_file() {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            out.push((name, p.join("main.rs")));
        }
    }
    out
}

/// The test-bearing targets of one package: lib, bins and integration tests.
pub fn package_targets(pkg_dir: &Path) -> Result<Vec<Target>, String> {
    let manifest = read_toml(&pkg_dir.join("Cargo.toml"))?;
    let Some(name) = toml::get_path(&manifest, &["package", "name"]).and_then(Value::as_str) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let lib = toml::get_path(&manifest, &["lib", "path"])
        .and_then(Value::as_str)
        .map(|p| pkg_dir.join(p))
        .unwrap_or_else(|| pkg_dir.join("src/lib.rs"));
    if lib.is_file() && toml::get_path(&manifest, &["lib", "test"]) != Some(&Value::Bool(false)) {
        out.push(Target {
            binary_id: name.to_string(),
            root: lib,
        });
    }
    for (kind, auto_key, default_dir) in [
        ("bin", "autobins", "src/bin"),
        ("test", "autotests", "tests"),
    ] {
        let mut found: Vec<(String, PathBuf)> = Vec::new();
        if let Some(items) = toml::get(&manifest, kind).and_then(Value::as_array) {
            for item in items.iter().filter_map(Value::as_table) {
                let Some(tname) = toml::get(item, "name").and_then(Value::as_str) else {
                    continue;
                };
                if toml::get(item, "test") == Some(&Value::Bool(false)) {
                    continue;
                }
                let path = match toml::get(item, "path").and_then(Value::as_str) {
                    Some(p) => pkg_dir.join(p),
                    None if kind == "bin" && tname == name => pkg_dir.join("src/main.rs"),
                    None => pkg_dir.join(default_dir).join(format!("{tname}.rs")),
                };
                found.push((tname.to_string(), path));
            }
        }
        if !auto_off(&manifest, auto_key) {
            let mut auto = discover(&pkg_dir.join(default_dir));
            if kind == "bin" && pkg_dir.join("src/main.rs").is_file() {
                auto.insert(0, (name.to_string(), pkg_dir.join("src/main.rs")));
            }
            for (n, p) in auto {
                // An explicit entry with the same name or path replaces the auto one.
                if !found
                    .iter()
                    .any(|(fname, fpath)| *fname == n || *fpath == p)
                {
                    found.push((n, p));
                }
            }
        }
        for (tname, path) in found {
            if !path.is_file() {
                continue;
            }
            let binary_id = if kind == "bin" {
                format!("{name}::bin/{tname}")
            } else {
                format!("{name}::{tname}")
            };
            out.push(Target {
                binary_id,
                root: path,
            });
        }
    }
    Ok(out)
}

/// Every target of every workspace member.
pub fn workspace_targets(root: &Path) -> Result<Vec<Target>, String> {
    let manifest = read_toml(&root.join("Cargo.toml"))?;
    let members = toml::get_path(&manifest, &["workspace", "members"])
        .and_then(Value::as_array)
        .ok_or("Cargo.toml has no workspace.members")?;
    let mut out = Vec::new();
    for m in members.iter().filter_map(Value::as_str) {
        out.extend(package_targets(&root.join(m))?);
    }
    if toml::get(&manifest, "package").is_some() {
        out.extend(package_targets(root)?);
    }
    Ok(out)
}

/// One line with string and comment contents removed (`code`), and the text
/// of a `//` comment when the line holds nothing else.
#[derive(Debug, Default, PartialEq)]
pub struct Line {
    pub code: String,
    pub comment: Option<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum St {
    Code,
    Block(u32),
    Str,
    RawStr(usize),
}

/// Splits Rust source into lines of code with strings, chars and comments
/// blanked, which is enough to count braces and read `mod`, `fn` and
/// attributes reliably.
pub fn lex(src: &str) -> Vec<Line> {
    let mut out = Vec::new();
    let mut st = St::Code;
    for raw in src.lines() {
        let b: Vec<char> = raw.chars().collect();
        let mut code = String::new();
        let mut comment = None;
        let mut i = 0;
        while i < b.len() {
            match st {
                St::Block(depth) => {
                    if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                        st = if depth == 1 {
                            St::Code
                        } else {
                            St::Block(depth - 1)
                        };
                        i += 2;
                    } else if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                        st = St::Block(depth + 1);
                        i += 2;
                    } else {
                        i += 1;
                    }
                }
                St::Str => {
                    if b[i] == '\\' {
                        i += 2;
                    } else {
                        if b[i] == '"' {
                            st = St::Code;
                            code.push('"');
                        }
                        i += 1;
                    }
                }
                St::RawStr(hashes) => {
                    if b[i] == '"'
                        && b[i + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|c| **c == '#')
                            .count()
                            == hashes
                    {
                        st = St::Code;
                        code.push('"');
                        i += 1 + hashes;
                    } else {
                        i += 1;
                    }
                }
                St::Code => {
                    let c = b[i];
                    if c == '/' && b.get(i + 1) == Some(&'/') {
                        if code.trim().is_empty() {
                            comment = Some(b[i..].iter().collect::<String>());
                        }
                        break;
                    } else if c == '/' && b.get(i + 1) == Some(&'*') {
                        st = St::Block(1);
                        i += 2;
                    } else if c == '"' {
                        st = St::Str;
                        code.push('"');
                        i += 1;
                    } else if (c == 'r' || (c == 'b' && b.get(i + 1) == Some(&'r')))
                        && !prev_is_ident(&b, i)
                        && raw_string_start(&b, if c == 'b' { i + 1 } else { i }).is_some()
                    {
                        let at = if c == 'b' { i + 1 } else { i };
                        let hashes = raw_string_start(&b, at).unwrap();
                        st = St::RawStr(hashes);
                        code.push('"');
                        i = at + 2 + hashes;
                    } else if c == '\'' {
                        // A char literal, or a lifetime / label.
                        if b.get(i + 1) == Some(&'\\') {
                            let mut j = i + 2;
                            while j < b.len() && b[j] != '\'' {
                                j += 1;
                            }
                            code.push_str("' '");
                            i = j + 1;
                        } else if b.get(i + 2) == Some(&'\'') {
                            code.push_str("' '");
                            i += 3;
                        } else {
                            code.push('\'');
                            i += 1;
                        }
                    } else {
                        code.push(c);
                        i += 1;
                    }
                }
            }
        }
        out.push(Line { code, comment });
    }
    out
}

fn prev_is_ident(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// At `r` of `r"`, `r#"`…: the number of hashes.
fn raw_string_start(b: &[char], i: usize) -> Option<usize> {
    if b.get(i) != Some(&'r') {
        return None;
    }
    let mut j = i + 1;
    while b.get(j) == Some(&'#') {
        j += 1;
    }
    (b.get(j) == Some(&'"')).then_some(j - i - 1)
}

/// Row ids named by a claim comment, if the comment is one.
pub fn claim_ids(comment: &str) -> Option<Vec<String>> {
    let body = comment
        .trim_start_matches('/')
        .trim_start_matches('!')
        .trim();
    let rest = body
        .strip_prefix("covers:")
        .or_else(|| body.strip_prefix("row:"))?;
    Some(
        rest.split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
            .map(|s| s.trim_matches('`').to_string())
            .collect(),
    )
}

fn is_test_attr(code: &str) -> bool {
    let t = code.trim();
    let Some(inner) = t.strip_prefix("#[") else {
        return false;
    };
    let path: String = inner
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    path == "test" || path.ends_with("::test")
}

/// The name of a fn declared on this line, if any.
fn fn_name(code: &str) -> Option<String> {
    let mut words = code
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty());
    while let Some(w) = words.next() {
        match w {
            "pub" | "crate" | "super" | "self" | "in" | "async" | "unsafe" | "const" | "extern" => {
                continue
            }
            "fn" => return words.next().map(str::to_string),
            _ => return None,
        }
    }
    None
}

/// `mod name;` or `mod name {` on this line: (name, inline).
fn mod_decl(code: &str) -> Option<(String, bool)> {
    let t = code.trim();
    let t = t
        .strip_prefix("pub(crate) ")
        .or_else(|| t.strip_prefix("pub(super) "))
        .or_else(|| t.strip_prefix("pub "))
        .unwrap_or(t);
    let rest = t.strip_prefix("mod ")?;
    let name: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let after = rest.trim_start()[name.len()..].trim_start();
    if name.is_empty() {
        return None;
    }
    if after.starts_with(';') {
        Some((name, false))
    } else if after.starts_with('{') {
        Some((name, true))
    } else {
        None
    }
}

fn path_attr(code: &str) -> Option<String> {
    let t = code
        .trim()
        .strip_prefix("#[path")?
        .trim_start()
        .strip_prefix('=')?;
    // The lexer blanked the string; the caller passes the raw line instead.
    let start = t.find('"')? + 1;
    let end = t[start..].find('"')? + start;
    Some(t[start..end].to_string())
}

struct Walker<'a> {
    binary_id: &'a str,
    scan: &'a mut Scan,
    /// Files on the current mod chain, to stop on cycles.
    stack: Vec<PathBuf>,
}

impl Walker<'_> {
    /// Scans `file`, whose items live at module path `modpath`; `dir` is where
    /// its child modules' files are looked up.
    fn file(&mut self, file: &Path, modpath: &[String], dir: &Path) {
        if self.stack.iter().any(|p| p == file) || self.stack.len() > 64 {
            return;
        }
        let src = match fs::read_to_string(file) {
            Ok(s) => s,
            Err(e) => {
                self.scan.problems.push(format!("{}: {e}", file.display()));
                return;
            }
        };
        self.stack.push(file.to_path_buf());
        let raw: Vec<&str> = src.lines().collect();
        let lines = lex(&src);
        // Inline module scopes: (brace depth at which the scope closes, name).
        let mut scopes: Vec<(i64, String)> = Vec::new();
        let mut depth: i64 = 0;
        let mut pending: Vec<String> = Vec::new();
        let mut pending_line = 0;
        let mut saw_test = false;
        let mut path_override: Option<String> = None;
        for (n, line) in lines.iter().enumerate() {
            let code = line.code.trim();
            if let Some(c) = &line.comment {
                if let Some(ids) = claim_ids(c) {
                    if pending.is_empty() {
                        pending_line = n + 1;
                    }
                    pending.extend(ids);
                }
                continue;
            }
            if code.starts_with("#[") || code.starts_with("#![") {
                if is_test_attr(code) {
                    saw_test = true;
                }
                if let Some(p) = path_attr(raw[n]) {
                    path_override = Some(p);
                }
            } else if code.is_empty() {
                self.drop_pending(&mut pending, file, pending_line);
                saw_test = false;
            } else if let Some(name) = fn_name(code).filter(|_| saw_test) {
                let mut full: Vec<&str> = modpath.iter().map(String::as_str).collect();
                full.extend(scopes.iter().map(|(_, s)| s.as_str()));
                full.push(&name);
                let test = format!("{} {}", self.binary_id, full.join("::"));
                self.scan.tests.insert(test.clone());
                if !pending.is_empty() {
                    self.scan.claims.push(Claim {
                        test,
                        rows: std::mem::take(&mut pending),
                        file: file.to_path_buf(),
                        line: pending_line,
                    });
                }
                saw_test = false;
                path_override = None;
            } else {
                if let Some((name, inline)) = mod_decl(code) {
                    let mut sub_dir = dir.to_path_buf();
                    for (_, s) in &scopes {
                        sub_dir.push(s);
                    }
                    if inline {
                        scopes.push((depth + 1, name.clone()));
                    } else {
                        let child = match path_override.take() {
                            Some(p) => {
                                let base = file.parent().unwrap_or(Path::new("."));
                                let mut b = base.to_path_buf();
                                for (_, s) in &scopes {
                                    b.push(s);
                                }
                                b.join(p)
                            }
                            None => {
                                let a = sub_dir.join(format!("{name}.rs"));
                                if a.is_file() {
                                    a
                                } else {
                                    sub_dir.join(&name).join("mod.rs")
                                }
                            }
                        };
                        let mut child_path: Vec<String> = modpath.to_vec();
                        child_path.extend(scopes.iter().map(|(_, s)| s.clone()));
                        child_path.push(name.clone());
                        let child_dir = match child.file_name().and_then(|f| f.to_str()) {
                            Some("mod.rs") => child.parent().unwrap().to_path_buf(),
                            _ => child.with_extension(""),
                        };
                        if child.is_file() {
                            self.file(&child, &child_path, &child_dir);
                        }
                    }
                }
                self.drop_pending(&mut pending, file, pending_line);
                saw_test = false;
                path_override = None;
            }
            for c in line.code.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        while scopes.last().is_some_and(|(d, _)| *d > depth) {
                            scopes.pop();
                        }
                    }
                    _ => {}
                }
            }
        }
        self.drop_pending(&mut pending, file, pending_line);
        self.stack.pop();
    }

    fn drop_pending(&mut self, pending: &mut Vec<String>, file: &Path, line: usize) {
        if !pending.is_empty() {
            self.scan.problems.push(format!(
                "{}:{line}: claim of {} is not directly above a test fn",
                file.display(),
                pending.join(", ")
            ));
            pending.clear();
        }
    }
}

/// Scans one target from its root file.
pub fn scan_target(t: &Target, scan: &mut Scan) {
    let dir = t.root.parent().unwrap_or(Path::new(".")).to_path_buf();
    // A bin or test root that is not main.rs/lib.rs/mod.rs still looks up its
    // modules beside itself (Cargo treats every target root like mod.rs).
    let mut w = Walker {
        binary_id: &t.binary_id,
        scan,
        stack: Vec::new(),
    };
    w.file(&t.root, &[], &dir);
}

pub fn scan_workspace(root: &Path) -> Result<Scan, String> {
    let mut scan = Scan::default();
    for t in workspace_targets(root)? {
        scan_target(&t, &mut scan);
    }
    // Paths in messages relative to the workspace root.
    for p in &mut scan.problems {
        if let Some(rest) = p.strip_prefix(&format!("{}/", root.display())) {
            *p = rest.to_string();
        }
    }
    for c in &mut scan.claims {
        if let Ok(rel) = c.file.strip_prefix(root) {
            c.file = rel.to_path_buf();
        }
    }
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("conformance-scan-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    #[test]
    fn lexer_blanks_strings_and_comments() {
        let l = lex("let s = \"{ // }\"; let c = '{'; let r = r#\"}\"#; 'a: loop {} /* { */\n// covers: x\n  x = 1; // tail");
        assert_eq!(l[0].code.matches('{').count(), 1);
        assert_eq!(l[0].code.matches('}').count(), 1);
        assert_eq!(l[1].comment.as_deref(), Some("// covers: x"));
        assert_eq!(l[2].comment, None);
    }

    #[test]
    fn claim_comment_forms() {
        assert_eq!(
            claim_ids("// covers: a-b, c"),
            Some(vec!["a-b".into(), "c".into()])
        );
        assert_eq!(claim_ids("// row: `a`"), Some(vec!["a".into()]));
        assert_eq!(
            claim_ids("/// covers: a b"),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(claim_ids("// this covers: nothing"), None);
    }

    #[test]
    fn finds_claims_through_module_tree() {
        let d = tmpdir("tree");
        write(&d, "Cargo.toml", "[workspace]\nmembers = [\"p\"]\n");
        write(
            &d,
            "p/Cargo.toml",
            "[package]\nname = \"p\"\n[[bin]]\nname = \"tool\"\npath = \"src/bin/tool.rs\"\n",
        );
        write(
            &d,
            "p/src/lib.rs",
            "mod a;\n#[cfg(test)]\nmod tests {\n    // covers: r1, r2\n    #[test]\n    fn t1() { let x = \"}\"; }\n\n    // row: r3\n    #[tokio::test]\n    #[ignore]\n    async fn t2() {}\n}\n// covers: r9\nfn not_a_test() {}\n",
        );
        write(&d, "p/src/a.rs", "mod b {\n  proptest! {\n    // covers: r4\n    #[test]\n    fn prop(x in 0..1u8) {}\n  }\n}\n#[test]\nfn plain() {}\n");
        write(
            &d,
            "p/src/bin/tool.rs",
            "#[path = \"../shared/m.rs\"]\nmod m;\n",
        );
        write(
            &d,
            "p/src/shared/m.rs",
            "// covers: r5\n#[test]\nfn shared() {}\n",
        );
        write(&d, "p/tests/e2e.rs", "mod common;\n");
        write(&d, "p/tests/common/mod.rs", "pub mod deep;\n");
        write(
            &d,
            "p/tests/common/deep.rs",
            "// covers: r6\n\n#[test]\nfn gap_line() {}\n",
        );
        let s = scan_workspace(&d).unwrap();
        let claims: Vec<(String, Vec<String>)> = s
            .claims
            .iter()
            .map(|c| (c.test.clone(), c.rows.clone()))
            .collect();
        assert!(claims.contains(&("p tests::t1".into(), vec!["r1".into(), "r2".into()])));
        assert!(claims.contains(&("p tests::t2".into(), vec!["r3".into()])));
        assert!(claims.contains(&("p a::b::prop".into(), vec!["r4".into()])));
        assert!(claims.contains(&("p::bin/tool m::shared".into(), vec!["r5".into()])));
        assert_eq!(claims.len(), 4, "{claims:?}");
        assert!(s.tests.contains("p a::plain"));
        assert!(s.tests.contains("p::e2e common::deep::gap_line"));
        // r9 (not a test) and r6 (blank line between) are dangling.
        assert_eq!(s.problems.len(), 2, "{:?}", s.problems);
        assert!(s.problems.iter().any(|p| p.contains("r9")));
        assert!(s.problems.iter().any(|p| p.contains("r6")));
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn target_discovery() {
        let d = tmpdir("targets");
        write(&d, "Cargo.toml", "[package]\nname = \"q\"\nautotests = false\n[[test]]\nname = \"only\"\npath = \"tests/only.rs\"\n");
        write(&d, "src/main.rs", "");
        write(&d, "src/bin/x/main.rs", "");
        write(&d, "tests/only.rs", "");
        write(&d, "tests/other.rs", "");
        let ids: Vec<String> = package_targets(&d)
            .unwrap()
            .into_iter()
            .map(|t| t.binary_id)
            .collect();
        assert_eq!(ids, vec!["q::bin/q", "q::bin/x", "q::only"]);
        let _ = fs::remove_dir_all(&d);
    }
}
