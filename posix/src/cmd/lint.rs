//! The vetting of a config that `serve` accepts (`mcpx serve --check`,
//! and what `mcpx add` and `import` write): entries that refer to mcpx's
//! own secrets, option-like packages, commands that are not there. Part of
//! the desktop build (feature `cli`, as the config helpers).

use std::path::Path;

use serde_json::Value;

use super::vet::{self, OwnSecrets};
use crate::config::{self, Config};

/// What [`lint`] found, `file:line:col: message` each.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Lint {
    /// `serve --check` refuses the config (and `mcpx add` and `import` do
    /// not write it), a command not in this `PATH` included: this is the
    /// environment it checks.
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

/// The vetting rules (`vet`) on a config `serve` accepts: a server entry
/// that refers to mcpx's own secrets or runs a package runner with an
/// option where the package goes is an error (`serve` still runs it: a
/// hand-over written on purpose keeps working); a local server's command
/// that does not exist (an absolute path, or a name not in this `PATH`) is
/// an error.
pub fn lint(cfg: &Config) -> Lint {
    let mut out = Lint::default();
    let Ok(root) = serde_json::from_str::<Value>(&cfg.text) else { return out };
    let at = |p: &crate::bytes::jsonpos::Path| cfg.position(p).unwrap_or_else(|| cfg.source.to_string());
    let own = OwnSecrets::of(&root);
    let servers = crate::bytes::jsonpos::Path::root().key("mcpServers");
    if let Some(entries) = root.get("mcpServers").and_then(Value::as_object) {
        for (name, entry) in entries {
            for (p, fault) in own.refs_in(&servers.key(name), entry) {
                out.errors.push(format!("{}: {p}: {fault}", at(&p)));
            }
        }
    }
    let path_env = config::process_env("PATH").unwrap_or_default();
    for s in cfg.servers.iter().filter(|s| s.remote.is_none()) {
        let entry = servers.key(&s.name);
        if let Err((i, fault)) = vet::runner_package(&s.command, &s.args) {
            let p = entry.key("args").idx(i);
            out.errors.push(format!("{}: {p}: {fault}", at(&p)));
        }
        let path = s.env.iter().find(|(k, _)| k == "PATH").map_or(path_env.as_str(), |(_, v)| v.as_str());
        let cwd = s.cwd.as_deref().unwrap_or(Path::new("."));
        if let Some(fault) = vet::command_fault(&s.command, path, cwd, &runnable) {
            let p = entry.key("command");
            out.errors.push(format!("{}: {p}: server '{}': {fault}", at(&p), s.name));
        }
    }
    out
}

/// Whether `p` is a file this user may execute.
fn runnable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
