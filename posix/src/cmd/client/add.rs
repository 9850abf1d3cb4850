//! `mcpx add` and `mcpx remove`: one server entry in or out of the config
//! file, edited in place.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::edit::{self, Entry, Verdict};
use super::{get, registry, term, Failure};
use crate::cli::{AddArgs, AddSource};
use crate::config;

/// Largest `server.json` read.
const MAX_SERVER_JSON: usize = 1 << 20;

pub fn add(args: AddArgs) -> Result<(), Failure> {
    let path = edit::target_file(args.config.as_deref());
    let (name, entry, to_set) = match args.source {
        AddSource::Command { command, args: argv } => {
            let mut e = Entry::default();
            e.set("command", json!(command));
            e.set("args", json!(argv));
            if !args.env.is_empty() {
                e.set("env", Value::Object(pairs(args.env)));
            }
            (args.name.expect("the parser requires it"), e, Vec::new())
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
            (args.name.expect("the parser requires it"), e, Vec::new())
        }
        AddSource::Registry { from, remote } => {
            let server = read_server_json(&from)?;
            let on_terminal = term::stdin_is_terminal();
            let mut ask = |q: &str| on_terminal.then(|| smol::block_on(term::ask(q.to_string()))).flatten();
            let r = registry::resolve(&server, remote, &config::process_env, &mut ask).map_err(|e| Failure::Failed(format!("{from}: {e}")))?;
            (args.name.unwrap_or(r.name), r.entry, r.to_set)
        }
    };
    let old = read_existing(&path)?;
    let replaced = match &old {
        Some(text) => edit::has_server(text, &name).map_err(|e| Failure::Failed(format!("{}: {e}", path.display())))?,
        None => false,
    };
    if replaced && !args.force {
        return Err(Failure::Failed(format!("{}: a server named {name:?} is already there (--force replaces it)", path.display())));
    }
    let text = match &old {
        Some(t) => edit::upsert_server(t, &name, &entry).map_err(|e| Failure::Failed(format!("{}: {e}", path.display())))?,
        None => edit::new_config(&[(name.clone(), entry)]),
    };
    save(&path, old.as_deref(), &text)?;
    println!("{} server {name} in {}", if replaced { "replaced" } else { "added" }, path.display());
    if !to_set.is_empty() {
        eprintln!("set {} in the environment of `mcpx serve` (the config refers to them as ${{NAME}})", to_set.join(", "));
    }
    Ok(())
}

pub fn remove(config: Option<&Path>, name: &str) -> Result<(), Failure> {
    let path = edit::target_file(config);
    let old = read_existing(&path)?.ok_or_else(|| Failure::Failed(format!("{}: no such config file", path.display())))?;
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
pub fn read_existing(path: &Path) -> Result<Option<String>, Failure> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Failure::Failed(format!("cannot read {}: {e}", path.display()))),
    }
}

/// Writes `text` unless it makes a valid config invalid (a config that was
/// invalid before is written with a warning: the user may be fixing it).
pub fn save(path: &Path, old: Option<&str>, text: &str) -> Result<(), Failure> {
    match edit::validate(text, path) {
        Verdict::Valid => {}
        Verdict::Invalid(e) if old.is_none_or(|o| edit::validate(o, path) == Verdict::Valid) => {
            return Err(Failure::Failed(format!("not written: the config would be invalid:\n{e}")));
        }
        Verdict::Invalid(e) => eprintln!("warning: the config has problems (it had them before):\n{e}"),
        Verdict::Unsure { unset, problems } => {
            eprintln!("warning: with {} unset, `mcpx serve` would refuse the config:\n{problems}", unset.join(", "))
        }
    }
    edit::write(path, text).map_err(Failure::Failed)
}

/// A `server.json` from a file or an http(s) URL.
fn read_server_json(from: &str) -> Result<Value, Failure> {
    let bytes = if from.starts_with("http://") || from.starts_with("https://") {
        let (status, body) = smol::block_on(get::get(from, &[], MAX_SERVER_JSON, Duration::from_secs(30)))
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
