//! The parse of one config file in progress: its text, where it is, the
//! environment, and the problems found so far; with the readers of plain
//! values every block uses.

use std::path::{Path as FsPath, PathBuf};

use serde_json::{Map, Value};

use super::error::{ExpandError, Problem, ProblemKind};
use super::expand::{expand, expand_keeping_secrets};
use crate::host::dirs::EnvLookup;
use crate::bytes::jsonpos::{self, Path};

/// A JSON object of the config.
pub(super) type Object = Map<String, Value>;

/// "a string", "an array", ... for messages.
pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(super) struct Ctx<'a> {
    pub(super) src: &'a str,
    pub(super) file: &'a str,
    pub(super) base: &'a FsPath,
    pub(super) env: EnvLookup<'a>,
    pub(super) errors: Vec<Problem>,
    pub(super) warnings: Vec<Problem>,
}

impl Ctx<'_> {
    fn problem(&self, at: &Path, msg: String) -> Problem {
        let line = jsonpos::locate(self.src, at).map(|o| jsonpos::line_col(self.src, o));
        Problem { file: self.file.to_string(), line, kind: ProblemKind::Key { path: at.clone(), msg } }
    }
    pub(super) fn err(&mut self, at: &Path, msg: impl Into<String>) {
        let p = self.problem(at, msg.into());
        self.errors.push(p);
    }
    pub(super) fn warn(&mut self, at: &Path, msg: impl Into<String>) {
        let p = self.problem(at, msg.into());
        self.warnings.push(p);
    }

    pub(super) fn unknown_keys(&mut self, at: &Path, obj: &Object, known: &[&str]) {
        for k in obj.keys() {
            if !known.contains(&k.as_str()) {
                self.warn(
                    &at.key(k),
                    format!("unknown key {k:?} ignored (known keys here: {})", known.join(", ")),
                );
            }
        }
    }

    /// A block that may be absent or `null`; anything but an object is an
    /// error ("expected an object like `example`", when one is given).
    pub(super) fn block<'v>(&mut self, at: &Path, v: Option<&'v Value>, example: &str) -> Option<&'v Object> {
        match v {
            None | Some(Value::Null) => None,
            Some(v) => self.object(at, v, example),
        }
    }

    /// An object ("expected an object like `example`", when one is given).
    pub(super) fn object<'v>(&mut self, at: &Path, v: &'v Value, example: &str) -> Option<&'v Object> {
        match v {
            Value::Object(o) => Some(o),
            other if example.is_empty() => {
                self.err(at, format!("expected an object, found {}", type_name(other)));
                None
            }
            other => {
                self.err(at, format!("expected an object like {example}, found {}", type_name(other)));
                None
            }
        }
    }

    pub(super) fn positive(&mut self, at: &Path, v: &Value) -> Option<u64> {
        match v.as_u64() {
            Some(n) if n > 0 => Some(n),
            _ => {
                self.err(at, format!("expected a positive whole number, found {v}"));
                None
            }
        }
    }

    pub(super) fn string(&mut self, at: &Path, v: &Value) -> Option<String> {
        self.string_with(at, v, expand)
    }

    /// A server's `env` or header value: [`Ctx::string`], its
    /// `${secret:NAME}` references kept for the instance that resolves them.
    pub(super) fn string_keeping_secrets(&mut self, at: &Path, v: &Value) -> Option<String> {
        self.string_with(at, v, expand_keeping_secrets)
    }

    fn string_with(&mut self, at: &Path, v: &Value, expand: fn(&str, EnvLookup<'_>) -> Result<String, ExpandError>) -> Option<String> {
        match v {
            Value::String(s) => match expand(s, self.env) {
                Ok(s) => Some(s),
                Err(e) => {
                    self.err(at, e.to_string());
                    None
                }
            },
            other => {
                self.err(at, format!("expected a string, found {}", type_name(other)));
                None
            }
        }
    }

    pub(super) fn strings(&mut self, at: &Path, v: &Value) -> Option<Vec<String>> {
        let Value::Array(items) = v else {
            self.err(at, format!("expected an array of strings, found {}", type_name(v)));
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match self.string(&at.idx(i), item) {
                Some(s) => out.push(s),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    pub(super) fn bool(&mut self, at: &Path, v: &Value) -> Option<bool> {
        match v {
            Value::Bool(b) => Some(*b),
            other => {
                self.err(at, format!("expected true or false, found {}", type_name(other)));
                None
            }
        }
    }

    /// `~` and `~/…` to `$HOME`, relative paths against the config's folder.
    pub(super) fn path(&mut self, at: &Path, s: &str) -> Option<PathBuf> {
        let p = if s == "~" || s.starts_with("~/") {
            match (self.env)("HOME").filter(|h| !h.is_empty()) {
                Some(h) => PathBuf::from(h).join(s.trim_start_matches('~').trim_start_matches('/')),
                None => {
                    self.err(at, "`~` used but HOME is not set");
                    return None;
                }
            }
        } else {
            PathBuf::from(s)
        };
        Some(if p.is_absolute() { p } else { self.base.join(p) })
    }

    /// The keys of the object at `at` in the file's order (serde_json
    /// keeps neither order nor duplicates), with their offsets.
    pub(super) fn keys_in_order(&self, at: &Path) -> Vec<(String, usize)> {
        jsonpos::keys(self.src, at).unwrap_or_default()
    }
}
