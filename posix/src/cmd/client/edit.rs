//! The config file edited as text: one member of `mcpServers` added,
//! replaced or removed in place, so that key order, indentation and every
//! other byte of the file stay as the user wrote them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config;
use crate::bytes::jsonpos::{self, Object};

/// A server entry, its keys in the order they are written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Entry(pub Vec<(String, Value)>);

impl Entry {
    pub fn set(&mut self, key: &str, v: Value) {
        self.0.push((key.to_string(), v));
    }

    /// Pretty, starting at indentation `ind` with `unit` per level.
    fn render(&self, ind: &str, unit: &str) -> String {
        if self.0.is_empty() {
            return "{}".into();
        }
        let inner = format!("{ind}{unit}");
        let members: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| format!("{inner}{}: {}", Value::String(k.clone()), pretty(v, &inner, unit)))
            .collect();
        format!("{{\n{}\n{ind}}}", members.join(",\n"))
    }

    /// On one line.
    fn compact(&self) -> String {
        let members: Vec<String> = self.0.iter().map(|(k, v)| format!("{}: {v}", Value::String(k.clone()))).collect();
        format!("{{{}}}", members.join(", "))
    }
}

/// `v` pretty-printed with `unit` per level, its later lines at `ind`.
fn pretty(v: &Value, ind: &str, unit: &str) -> String {
    let two = serde_json::to_string_pretty(v).expect("a Value serializes");
    // Strings are escaped, so leading blanks are indentation only: two per level.
    let lines: Vec<String> = two
        .lines()
        .map(|l| {
            let body = l.trim_start_matches(' ');
            unit.repeat((l.len() - body.len()) / 2) + body
        })
        .collect();
    lines.join(&format!("\n{ind}"))
}

fn servers_path() -> jsonpos::Path {
    jsonpos::Path::root().key("mcpServers")
}

/// The indentation of the line `off` is on, if only blanks precede it there.
fn own_line_indent(src: &str, off: usize) -> Option<&str> {
    let start = src[..off].rfind('\n').map_or(0, |i| i + 1);
    let before = &src[start..off];
    before.chars().all(|c| c == ' ' || c == '\t').then_some(before)
}

/// The leading blanks of the line `off` is on.
fn line_indent(src: &str, off: usize) -> &str {
    let start = src[..off].rfind('\n').map_or(0, |i| i + 1);
    let line = &src[start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// One level of indentation as the file uses it (two spaces if it shows none).
fn indent_unit(src: &str) -> String {
    src.lines()
        .map(|l| &l[..l.len() - l.trim_start_matches([' ', '\t']).len()])
        .find(|ind| !ind.is_empty() && ind.len() <= 8)
        .unwrap_or("  ")
        .to_string()
}

/// Why the file cannot be edited.
fn not_json(src: &str) -> Option<String> {
    match serde_json::from_str::<Value>(src) {
        Ok(Value::Object(_)) => None,
        Ok(_) => Some("the config is not a JSON object".into()),
        Err(e) => Some(format!("the config is not valid JSON ({e}); fix it first")),
    }
}

/// The `mcpServers` object, if there is one; an error if it is not an object.
fn servers(src: &str) -> Result<Option<Object>, String> {
    if let Some(e) = not_json(src) {
        return Err(e);
    }
    match jsonpos::object(src, &servers_path()) {
        Some(o) => Ok(Some(o)),
        None if jsonpos::locate_value(src, &servers_path()).is_some() => Err("\"mcpServers\" is not an object".into()),
        None => Ok(None),
    }
}

/// Whether the config's `mcpServers` has `name`.
pub fn has_server(src: &str, name: &str) -> Result<bool, String> {
    Ok(servers(src)?.is_some_and(|o| o.members.iter().any(|m| m.key == name)))
}

/// `text` with the line ends `src` uses (JSON strings hold no raw line
/// breaks, so every `\n` in `text` is one).
fn line_ends_of(src: &str, text: String) -> String {
    if src.contains("\r\n") {
        text.replace('\n', "\r\n")
    } else {
        text
    }
}

/// `src` with member `key` appended to object `obj`.
fn insert_member(src: &str, obj: &Object, key: &str, value: &Entry) -> String {
    let unit = indent_unit(src);
    let k = Value::String(key.to_string());
    let (at, end, text) = match obj.members.last() {
        Some(last) => match own_line_indent(src, last.key_off) {
            Some(ind) => (last.val_end, last.val_end, format!(",\n{ind}{k}: {}", value.render(ind, &unit))),
            None => (last.val_end, last.val_end, format!(", {k}: {}", value.compact())),
        },
        None => {
            let outer = line_indent(src, obj.open);
            let inner = format!("{outer}{unit}");
            (obj.open + 1, obj.close, format!("\n{inner}{k}: {}\n{outer}", value.render(&inner, &unit)))
        }
    };
    format!("{}{}{}", &src[..at], line_ends_of(src, text), &src[end..])
}

/// `src` with server `name` set to `entry`: replaced where it is, or
/// appended to `mcpServers` (created when missing).
pub fn upsert_server(src: &str, name: &str, entry: &Entry) -> Result<String, String> {
    let Some(obj) = servers(src)? else {
        let top = jsonpos::object(src, &jsonpos::Path::root()).ok_or("the config is not a JSON object")?;
        let with_key = insert_member(src, &top, "mcpServers", &Entry::default());
        let obj = jsonpos::object(&with_key, &servers_path()).expect("just inserted");
        return Ok(insert_member(&with_key, &obj, name, entry));
    };
    match obj.members.iter().rev().find(|m| m.key == name) {
        Some(m) => {
            let ind = line_indent(src, m.key_off);
            let text = match own_line_indent(src, m.key_off) {
                Some(_) => entry.render(ind, &indent_unit(src)),
                None => entry.compact(),
            };
            Ok(format!("{}{}{}", &src[..m.val_off], line_ends_of(src, text), &src[m.val_end..]))
        }
        None => Ok(insert_member(src, &obj, name, entry)),
    }
}

/// `src` without server `name` (each copy of it); `None` if it has none.
pub fn remove_server(src: &str, name: &str) -> Result<Option<String>, String> {
    let mut text = src.to_string();
    let mut removed = false;
    while let Some(obj) = servers(&text)? {
        let Some(i) = obj.members.iter().position(|m| m.key == name) else { break };
        text.replace_range(member_span(&obj, i), "");
        removed = true;
    }
    Ok(removed.then_some(text))
}

/// The text that removing member `i` of `obj` removes: up to the next
/// member, else from the one before, else all inside the braces.
fn member_span(obj: &Object, i: usize) -> std::ops::Range<usize> {
    let ms = &obj.members;
    if i + 1 < ms.len() {
        ms[i].key_off..ms[i + 1].key_off
    } else if i > 0 {
        ms[i - 1].val_end..ms[i].val_end
    } else {
        obj.open + 1..obj.close
    }
}

/// `src` with server `name`'s `"disabled"` set to `true` (first in its
/// entry) or taken out; `None` when there is no such server.
pub fn set_disabled(src: &str, name: &str, disabled: bool) -> Result<Option<String>, String> {
    if !has_server(src, name)? {
        return Ok(None);
    }
    let entry = jsonpos::object(src, &servers_path().key(name)).ok_or_else(|| format!("server {name:?} is not an object"))?;
    let mut text = src.to_string();
    match (entry.members.iter().rposition(|m| m.key == "disabled"), disabled) {
        (Some(i), true) => text.replace_range(entry.members[i].val_off..entry.members[i].val_end, "true"),
        (Some(i), false) => text.replace_range(member_span(&entry, i), ""),
        (None, true) => match entry.members.first() {
            Some(first) => {
                let gap = own_line_indent(src, first.key_off).map_or(" ".to_string(), |ind| format!("\n{ind}"));
                text.insert_str(first.key_off, &line_ends_of(src, format!("\"disabled\": true,{gap}")));
            }
            None => text.replace_range(entry.open..=entry.close, "{\"disabled\": true}"),
        },
        (None, false) => {}
    }
    Ok(Some(text))
}

/// A new config file holding only `entries`.
pub fn new_config(entries: &[(String, Entry)]) -> String {
    let mut src = String::from("{\n  \"mcpServers\": {}\n}\n");
    for (name, e) in entries {
        src = upsert_server(&src, name, e).expect("a config this module wrote");
    }
    src
}

/// The file `add`, `remove` and `import` edit: `--config`, else the first
/// file `serve` would read, else the user's config (created).
pub fn target_file(explicit: Option<&Path>) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_path_buf();
    }
    let candidates = config::search_path(&config::process_env);
    candidates.iter().find(|p| p.is_file()).or(candidates.last()).cloned().unwrap_or_else(|| PathBuf::from("mcpx.json"))
}

/// Whether `serve --check` would accept the text, the environment as it
/// is (`cmd::verdict`, the one rule): its warnings, or why not.
pub fn validate(text: &str, path: &Path) -> Result<Vec<String>, String> {
    let base = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut cfg = config::parse(text, &path.display().to_string(), base, &config::process_env).map_err(|e| e.to_string())?;
    cfg.source = config::Source::File(path.to_path_buf());
    crate::cmd::verdict(&cfg)
}

/// Writes `text` to `path` through a temporary file in the same folder
/// (keeping the file's permissions), so a crash leaves the old or the new file.
pub fn write(path: &Path, text: &str) -> Result<(), String> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{file}.mcpx-{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot replace {}: {e}", path.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(cmd: &str) -> Entry {
        let mut e = Entry::default();
        e.set("command", json!(cmd));
        e.set("args", json!(["-y", "x"]));
        e
    }

    const SRC: &str = "{\n    \"logLevel\": \"info\",\n    \"mcpServers\": {\n        \"a\": {\"command\": \"a\"},\n        \"b\": {\n            \"command\": \"b\"\n        }\n    },\n    \"separator\": \"__\"\n}\n";

    #[test]
    fn appends_in_the_files_own_style() {
        let out = upsert_server(SRC, "c", &entry("npx")).unwrap();
        let want = SRC.replace(
            "            \"command\": \"b\"\n        }\n",
            "            \"command\": \"b\"\n        },\n        \"c\": {\n            \"command\": \"npx\",\n            \"args\": [\n                \"-y\",\n                \"x\"\n            ]\n        }\n",
        );
        assert_eq!(out, want);
        let compact = r#"{"mcpServers": {"a": {"command": "a"}}}"#;
        assert_eq!(
            upsert_server(compact, "b", &entry("b")).unwrap(),
            r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b", "args": ["-y","x"]}}}"#
        );
    }

    #[test]
    fn replaces_in_place_and_creates_what_is_missing() {
        let out = upsert_server(SRC, "a", &entry("z")).unwrap();
        assert!(out.starts_with("{\n    \"logLevel\": \"info\",\n    \"mcpServers\": {\n        \"a\": {\n            \"command\": \"z\","));
        assert_eq!(out.matches("\"a\"").count(), 1);
        let empty = "{\n  \"mcpServers\": {}\n}";
        assert_eq!(
            upsert_server(empty, "n", &Entry::default()).unwrap(),
            "{\n  \"mcpServers\": {\n    \"n\": {}\n  }\n}"
        );
        let none = "{\n\t\"logLevel\": \"debug\"\n}";
        assert_eq!(
            upsert_server(none, "n", &Entry::default()).unwrap(),
            "{\n\t\"logLevel\": \"debug\",\n\t\"mcpServers\": {\n\t\t\"n\": {}\n\t}\n}"
        );
        assert_eq!(upsert_server("[1]", "n", &Entry::default()), Err("the config is not a JSON object".into()));
        assert!(upsert_server("{\"mcpServers\": [] }", "n", &Entry::default()).unwrap_err().contains("not an object"));
        assert!(upsert_server("{", "n", &Entry::default()).unwrap_err().contains("not valid JSON"));
    }

    #[test]
    fn keeps_crlf_line_ends() {
        let src = SRC.replace('\n', "\r\n");
        let added = upsert_server(&src, "c", &entry("npx")).unwrap();
        assert_eq!(added, upsert_server(SRC, "c", &entry("npx")).unwrap().replace('\n', "\r\n"));
        assert_eq!(remove_server(&added, "c").unwrap().as_deref(), Some(src.as_str()));
    }

    #[test]
    fn removes_one_member_and_nothing_else() {
        let without_a = remove_server(SRC, "a").unwrap().unwrap();
        assert_eq!(without_a, SRC.replace("        \"a\": {\"command\": \"a\"},\n", ""));
        let without_b = remove_server(SRC, "b").unwrap().unwrap();
        assert_eq!(without_b, SRC.replace(",\n        \"b\": {\n            \"command\": \"b\"\n        }", ""));
        let only = remove_server(&without_b, "a").unwrap().unwrap();
        assert!(only.contains("\"mcpServers\": {},"));
        assert_eq!(remove_server(SRC, "zz").unwrap(), None);
        let dup = r#"{"mcpServers": {"a": 1, "b": 2, "a": 3}}"#;
        assert_eq!(remove_server(dup, "a").unwrap().unwrap(), r#"{"mcpServers": {"b": 2}}"#);
    }

    #[test]
    fn disables_and_enables_in_place() {
        let cases: &[(&str, &str, bool, Option<&str>)] = &[
            (SRC, "a", true, Some("        \"a\": {\"disabled\": true, \"command\": \"a\"},\n")),
            (SRC, "b", true, Some("        \"b\": {\n            \"disabled\": true,\n            \"command\": \"b\"\n        }\n")),
            (r#"{"mcpServers": {"e": {}}}"#, "e", true, Some(r#"{"mcpServers": {"e": {"disabled": true}}}"#)),
            (r#"{"mcpServers": {"e": {"disabled": false, "command": "x"}}}"#, "e", true, Some(r#"{"mcpServers": {"e": {"disabled": true, "command": "x"}}}"#)),
            (r#"{"mcpServers": {"e": {"command": "x", "disabled": true}}}"#, "e", false, Some(r#"{"mcpServers": {"e": {"command": "x"}}}"#)),
            (r#"{"mcpServers": {"e": {"command": "x"}}}"#, "e", false, Some(r#"{"mcpServers": {"e": {"command": "x"}}}"#)),
            (SRC, "zz", true, None),
        ];
        for (src, name, disabled, want) in cases {
            let got = set_disabled(src, name, *disabled).unwrap();
            match want {
                Some(w) if w.starts_with('{') => assert_eq!(got.as_deref(), Some(*w), "{name} {disabled}"),
                Some(w) => assert!(got.as_deref().unwrap().contains(w), "{name} {disabled}: {got:?}"),
                None => assert_eq!(got, None),
            }
        }
        // Enabling what disabling wrote gives the file back.
        for name in ["a", "b"] {
            let off = set_disabled(SRC, name, true).unwrap().unwrap();
            assert_eq!(set_disabled(&off, name, false).unwrap().as_deref(), Some(SRC), "{name}");
        }
    }

    #[test]
    fn add_then_remove_gives_the_file_back() {
        for src in [SRC, "{\"mcpServers\": {\"a\": {}}}", "{\n  \"mcpServers\": {\n    \"a\": {}\n  }\n}\n"] {
            let added = upsert_server(src, "new", &entry("n")).unwrap();
            assert_eq!(remove_server(&added, "new").unwrap().as_deref(), Some(src));
        }
    }
}
