//! The pin file: what is trusted, and what changed since. The hub keeps
//! one in the state folder (written through `Output::SavePins`); `mcpx pin`
//! copies its pins into a lock file, and `mcpx pin accept` moves a change
//! into the pins (the running hub reads the files again when they change).
//!
//! ```json
//! {"version": 1,
//!  "pins": [{"server", "kind", "name", "digest", "definition"}],
//!  "seen": [{"server", "kind"}],
//!  "changes": [{"server", "kind", "name", "digest", "definition", "renamedFrom",
//!               "previous", "findings", "hidden"}]}
//! ```
//! `kind` is `"tools"`, `"prompts"` or `"resourceTemplates"`; arrays are
//! sorted, so a lock file diffs well under version control.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::super::catalog::Kind;

/// The kinds whose definitions are pinned.
pub(super) const PINNED: [Kind; 3] = [Kind::Tools, Kind::Prompts, Kind::Templates];

/// One definition: a server's item of a kind, by its own name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Key {
    pub server: String,
    pub kind: Kind,
    pub name: String,
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.server, self.name)
    }
}

/// A trusted definition.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Pin {
    pub digest: String,
    pub item: Value,
}

/// A definition not trusted (yet): changed, new, renamed, or with findings.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Change {
    pub digest: String,
    pub item: Value,
    /// The trusted definition it replaces (its own name's, or the one it
    /// was renamed from), if any.
    pub previous: Option<(String, Value)>,
    /// The inspection's findings, as sentences.
    pub findings: Vec<String>,
    /// Quarantined out of sight (else listed with a warning).
    pub hidden: bool,
}

/// Why a pin file cannot be used.
#[derive(Debug, PartialEq, Eq)]
pub enum FileError {
    Json(String),
    Version(Value),
    /// An entry without one of its members, or with a kind not pinned.
    Entry(&'static str, usize),
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileError::Json(e) => write!(f, "not JSON: {e}"),
            FileError::Version(v) => write!(f, "version {v} is not 1"),
            FileError::Entry(list, i) => write!(f, "{list}[{i}] is not a valid entry"),
        }
    }
}

/// The contents of a pin file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PinFile {
    pub(super) pins: BTreeMap<Key, Pin>,
    /// (server, kind) listed at least once: later items are changes.
    pub(super) seen: BTreeSet<(String, Kind)>,
    pub(super) changes: BTreeMap<Key, Change>,
}

fn kind_of(s: &str) -> Option<Kind> {
    PINNED.into_iter().find(|k| k.result_key() == s)
}

fn key_of(e: &Value) -> Option<Key> {
    let s = |f: &str| e.get(f).and_then(Value::as_str);
    Some(Key { server: s("server")?.to_string(), kind: kind_of(s("kind")?)?, name: s("name")?.to_string() })
}

// `mcpx pin` edits the files with the methods it alone uses.
#[cfg_attr(not(feature = "consent"), allow(dead_code))]
impl PinFile {
    pub fn parse(bytes: &[u8]) -> Result<PinFile, FileError> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| FileError::Json(e.to_string()))?;
        match v.get("version") {
            Some(n) if n == 1 => {}
            other => return Err(FileError::Version(other.cloned().unwrap_or(Value::Null))),
        }
        let list = |name: &str| v.get(name).and_then(Value::as_array).cloned().unwrap_or_default();
        let mut out = PinFile::default();
        for (i, e) in list("pins").iter().enumerate() {
            let (Some(key), Some(digest), Some(item)) = (key_of(e), e.get("digest").and_then(Value::as_str), e.get("definition")) else {
                return Err(FileError::Entry("pins", i));
            };
            out.pins.insert(key, Pin { digest: digest.to_string(), item: item.clone() });
        }
        for (i, e) in list("seen").iter().enumerate() {
            let (Some(server), Some(kind)) = (e.get("server").and_then(Value::as_str), e.get("kind").and_then(Value::as_str).and_then(kind_of)) else {
                return Err(FileError::Entry("seen", i));
            };
            out.seen.insert((server.to_string(), kind));
        }
        for (i, e) in list("changes").iter().enumerate() {
            let (Some(key), Some(digest), Some(item)) = (key_of(e), e.get("digest").and_then(Value::as_str), e.get("definition")) else {
                return Err(FileError::Entry("changes", i));
            };
            let previous = match (e.get("renamedFrom").and_then(Value::as_str), e.get("previous")) {
                (from, Some(p)) if !p.is_null() => Some((from.unwrap_or(&key.name).to_string(), p.clone())),
                _ => None,
            };
            let findings = e.get("findings").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default();
            let hidden = e.get("hidden").and_then(Value::as_bool).unwrap_or(false);
            out.changes.insert(key, Change { digest: digest.to_string(), item: item.clone(), previous, findings, hidden });
        }
        Ok(out)
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let entry = |k: &Key| json!({ "server": k.server, "kind": k.kind.result_key(), "name": k.name });
        let pins: Vec<Value> = self.pins.iter().map(|(k, p)| {
            let mut e = entry(k);
            e["digest"] = json!(p.digest);
            e["definition"] = p.item.clone();
            e
        }).collect();
        let seen: Vec<Value> = self.seen.iter().map(|(s, k)| json!({ "server": s, "kind": k.result_key() })).collect();
        let changes: Vec<Value> = self.changes.iter().map(|(k, c)| {
            let mut e = entry(k);
            e["digest"] = json!(c.digest);
            e["definition"] = c.item.clone();
            e["renamedFrom"] = json!(c.previous.as_ref().map(|(n, _)| n).filter(|n| **n != k.name));
            e["previous"] = c.previous.as_ref().map_or(Value::Null, |(_, p)| p.clone());
            e["findings"] = json!(c.findings);
            e["hidden"] = json!(c.hidden);
            e
        }).collect();
        let mut out = serde_json::to_vec_pretty(&json!({ "version": 1, "pins": pins, "seen": seen, "changes": changes })).unwrap_or_default();
        out.push(b'\n');
        out
    }

    /// The changes `name` names: `server/name`, or a name only one server's
    /// changes have.
    pub fn named(&self, name: &str) -> Result<Vec<String>, String> {
        let keys: Vec<&Key> = self.changes.keys().filter(|k| k.to_string() == name).collect();
        let keys = if keys.is_empty() { self.changes.keys().filter(|k| k.name == name).collect() } else { keys };
        let servers: BTreeSet<&str> = keys.iter().map(|k| k.server.as_str()).collect();
        match servers.len() {
            0 => Err(format!("no change named '{name}' (see the \"pins\" part of `mcpx status`)")),
            1 => Ok(keys.iter().map(|k| k.to_string()).collect()),
            _ => Err(format!("'{name}' changed on several servers ({}): name one as SERVER/NAME", servers.into_iter().collect::<Vec<_>>().join(", "))),
        }
    }

    /// Trusts the changes `name` names ([`PinFile::named`]) as they are now:
    /// their keys, as `server/name`.
    pub fn accept(&mut self, name: &str) -> Result<Vec<String>, String> {
        let named = self.named(name)?;
        let keys: Vec<Key> = self.changes.keys().filter(|k| named.contains(&k.to_string())).cloned().collect();
        for k in &keys {
            if let Some(c) = self.changes.remove(k) {
                self.seen.insert((k.server.clone(), k.kind));
                self.pins.insert(k.clone(), Pin { digest: c.digest, item: c.item });
            }
        }
        Ok(named)
    }

    /// Copies the pins of `from` named by `keys` (`server/name`) into this one.
    pub fn take_pins(&mut self, from: &PinFile, keys: &[String]) {
        for (k, p) in from.pins.iter().filter(|(k, _)| keys.contains(&k.to_string())) {
            self.pins.insert(k.clone(), p.clone());
        }
    }

    /// Only the pins: a lock file.
    pub fn lock(&self) -> PinFile {
        PinFile { pins: self.pins.clone(), ..Default::default() }
    }

    /// Number of pins.
    pub fn pinned(&self) -> usize {
        self.pins.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> PinFile {
        let mut f = PinFile::default();
        let key = |s: &str, n: &str| Key { server: s.into(), kind: Kind::Tools, name: n.into() };
        f.pins.insert(key("a", "t"), Pin { digest: "sha256:1".into(), item: json!({"name": "t"}) });
        f.seen.insert(("a".into(), Kind::Tools));
        f.changes.insert(key("a", "u"), Change { digest: "sha256:2".into(), item: json!({"name": "u"}), previous: Some(("t".into(), json!({"name": "t"}))), findings: vec!["x".into()], hidden: true });
        f.changes.insert(key("b", "u"), Change { digest: "sha256:3".into(), item: json!({"name": "u"}), previous: None, findings: vec![], hidden: false });
        f
    }

    #[test]
    fn a_file_reads_back_as_written() {
        let f = sample();
        assert_eq!(PinFile::parse(&f.to_bytes()), Ok(f));
        let cases: &[(&str, FileError)] = &[
            ("{", FileError::Json("EOF while parsing an object at line 1 column 1".into())),
            (r#"{"version": 2}"#, FileError::Version(json!(2))),
            (r#"{"version": 1, "pins": [{"server": "a", "kind": "resources", "name": "x", "digest": "d", "definition": {}}]}"#, FileError::Entry("pins", 0)),
        ];
        for (text, want) in cases {
            assert_eq!(PinFile::parse(text.as_bytes()).unwrap_err(), *want, "{text}");
        }
    }

    #[test]
    fn accept_moves_named_changes_into_the_pins() {
        let mut f = sample();
        assert!(f.accept("u").unwrap_err().contains("several servers (a, b)"));
        assert!(f.accept("nope").unwrap_err().contains("no change named 'nope'"));
        assert_eq!(f.accept("a/u"), Ok(vec!["a/u".to_string()]));
        assert_eq!(f.pins.len(), 2);
        assert_eq!(f.accept("u"), Ok(vec!["b/u".to_string()]));
        assert!(f.changes.is_empty() && f.seen.contains(&("b".to_string(), Kind::Tools)));
        let mut lock = PinFile::default();
        lock.take_pins(&f, &["b/u".to_string()]);
        assert_eq!(lock.pinned(), 1);
        assert_eq!(f.lock().pinned(), 3);
    }
}
