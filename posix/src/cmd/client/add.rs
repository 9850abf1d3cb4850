//! `mcpx add` and `mcpx remove`: one server entry in or out of the config
//! file, edited in place.
//!
//! What `serve --check` would refuse is not written (`cmd::verdict`, its
//! message as it says it): an entry referring to mcpx's own secrets or
//! running a runner with an option for its package (`vet`, said before
//! anything else), one whose `${VAR}` is unset or whose command is not
//! installed, one the hub refuses. An entry from a `server.json` is shown
//! and written after a yes (or `--yes`).

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::edit::{self, Entry};
use super::{get, registry, term, Failure};
use crate::cmd::cli::{AddArgs, AddSource};
use crate::cmd::vet::{self, OwnSecrets};
use crate::config;
use crate::bytes::jsonpos;

/// Largest `server.json` read.
const MAX_SERVER_JSON: usize = 1 << 20;

pub fn add(args: AddArgs) -> Result<(), Failure> {
    let path = edit::target_file(args.config.as_deref());
    let mut from_file = None;
    let (name, entry) = match args.source {
        AddSource::Command { command, args: argv } => {
            let mut e = Entry::default();
            e.set("command", json!(command));
            e.set("args", json!(argv));
            if !args.env.is_empty() {
                e.set("env", Value::Object(pairs(args.env)));
            }
            (args.name.expect("the parser requires it"), e)
        }
        AddSource::Url { url, headers, transport } => {
            let mut e = Entry::default();
            e.set("url", json!(url));
            if let Some(t) = transport {
                e.set("type", json!(t));
            }
            if !headers.is_empty() {
                e.set("headers", Value::Object(pairs(headers)));
            }
            (args.name.expect("the parser requires it"), e)
        }
        AddSource::Registry { from, remote } => {
            let server = read_server_json(&from)?;
            let on_terminal = term::stdin_is_terminal();
            let mut ask = |q: &str| on_terminal.then(|| crate::process::reactor::block_on(term::ask(q.to_string()))).flatten();
            let r = registry::resolve(&server, remote, &config::process_env, &mut ask).map_err(|e| Failure::Failed(format!("{from}: {e}")))?;
            for n in &r.notes {
                eprintln!("note: {from}: {n}");
            }
            from_file = Some(from);
            (args.name.unwrap_or(r.name), r.entry)
        }
    };
    let old = read_existing(&path).map_err(Failure::Failed)?;
    vet_entry(old.as_deref(), &name, &entry).map_err(|e| Failure::Failed(format!("not written: {e}")))?;
    let replaced = match &old {
        Some(text) => edit::has_server(text, &name).map_err(|e| Failure::Failed(format!("{}: {e}", path.display())))?,
        None => false,
    };
    if replaced && !args.force {
        return Err(Failure::Failed(format!("{}: a server named {name:?} is already there (--force replaces it)", path.display())));
    }
    let text = match &old {
        Some(t) => edit::upsert_server(t, &name, &entry).map_err(|e| Failure::Failed(format!("{}: {e}", path.display())))?,
        None => edit::new_config(&[(name.clone(), entry.clone())]),
    };
    for w in admit(&path, old.as_deref(), &text).map_err(Failure::Failed)? {
        eprintln!("warning: {w}");
    }
    if let Some(from) = from_file {
        let shown = serde_json::to_string_pretty(&entry_value(&entry)).expect("a Value serializes");
        eprintln!("server {name} from {from}:\n{shown}");
        confirm(&format!("Write it to {}?", path.display()), args.yes)?;
    }
    edit::write(&path, &text).map_err(Failure::Failed)?;
    println!("{} server {name} in {}", if replaced { "replaced" } else { "added" }, path.display());
    Ok(())
}

fn entry_value(e: &Entry) -> Value {
    Value::Object(e.0.iter().cloned().collect())
}

/// What `serve --check` would refuse in `entry` itself, said first (it
/// holds no value worth checking further): a reference to mcpx's own
/// secrets (of the config `old`, if any), a runner with an option for its
/// package.
fn vet_entry(old: Option<&str>, name: &str, entry: &Entry) -> Result<(), String> {
    let root = old.and_then(|t| serde_json::from_str::<Value>(t).ok()).unwrap_or(Value::Null);
    let at = jsonpos::Path::root().key("mcpServers").key(name);
    vet::entry_fault(&OwnSecrets::of(&root), &at, &entry_value(entry)).map_or(Ok(()), Err)
}

/// Asks before writing what came from a file: `yes` (`--yes`), else a yes
/// on the terminal; with no terminal to ask on, not written.
pub fn confirm(question: &str, yes: bool) -> Result<(), Failure> {
    if yes {
        return Ok(());
    }
    if !term::stdin_is_terminal() {
        return Err(Failure::Failed("not written: there is no terminal to confirm it on; check it and run again with --yes".into()));
    }
    match crate::process::reactor::block_on(term::ask(format!("{question} [y/N] "))) {
        Some(a) if matches!(a.trim().to_ascii_lowercase().as_str(), "y" | "yes") => Ok(()),
        _ => Err(Failure::Failed("not written".into())),
    }
}

pub fn remove(config: Option<&Path>, name: &str) -> Result<(), Failure> {
    let path = edit::target_file(config);
    let old = read_existing(&path).map_err(Failure::Failed)?.ok_or_else(|| Failure::Failed(format!("{}: no such config file", path.display())))?;
    match edit::remove_server(&old, name).map_err(|e| Failure::Failed(format!("{}: {e}", path.display())))? {
        Some(text) => {
            edit::write(&path, &text).map_err(Failure::Failed)?;
            println!("removed server {name} from {}", path.display());
            Ok(())
        }
        None => Err(Failure::Failed(format!("{}: no server named {name:?}", path.display()))),
    }
}

fn pairs(kv: Vec<(String, String)>) -> Map<String, Value> {
    kv.into_iter().map(|(k, v)| (k, json!(v))).collect()
}

/// The file's text, `None` when it does not exist.
pub fn read_existing(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Writes `text` if [`admit`] lets it replace `old`; its warnings.
pub fn save(path: &Path, old: Option<&str>, text: &str) -> Result<Vec<String>, String> {
    let warnings = admit(path, old, text)?;
    edit::write(path, text)?;
    Ok(warnings)
}

/// Whether `text` may replace `old`: yes when `serve --check` accepts it
/// (with its warnings), no when it refuses it (said as it says it), unless
/// it refused `old` too (the user may be fixing it: a warning).
fn admit(path: &Path, old: Option<&str>, text: &str) -> Result<Vec<String>, String> {
    match edit::validate(text, path) {
        Ok(warnings) => Ok(warnings),
        Err(e) if old.is_none_or(|o| edit::validate(o, path).is_ok()) => {
            Err(format!("not written: `mcpx serve --check` would refuse it:\n{e}"))
        }
        Err(e) => Ok(vec![format!("the config has problems (it had them before):\n{e}")]),
    }
}

/// A `server.json` from a file or an http(s) URL.
fn read_server_json(from: &str) -> Result<Value, Failure> {
    let bytes = if from.starts_with("http://") || from.starts_with("https://") {
        let (status, body) = crate::process::reactor::block_on(get::get(from, &[], MAX_SERVER_JSON, Duration::from_secs(30)))
            .map_err(|e| Failure::Unreachable(format!("GET {from}: {e}")))?;
        if status != 200 {
            return Err(Failure::Unreachable(format!("GET {from}: HTTP {status}")));
        }
        body
    } else {
        std::fs::read(from).map_err(|e| Failure::Failed(format!("cannot read {from}: {e}")))?
    };
    serde_json::from_slice(&bytes).map_err(|e| Failure::Failed(format!("{from}: not JSON: {e}")))
}
