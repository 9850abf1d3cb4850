//! Where mcpx looks things up on this host: the environment (as a function,
//! so tests need not touch the process's) and the state folder.

use std::path::PathBuf;

/// Where to find the environment (a function so tests need not touch the
/// process environment).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The real process environment.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
}

/// mcpx's state folder: `$XDG_STATE_HOME/mcpx/`, else
/// `~/.local/state/mcpx/` (list caches, OAuth tokens, tasks); `None` when
/// the environment names neither.
pub fn state_dir(env: EnvLookup<'_>) -> Option<PathBuf> {
    let nonempty = |k: &str| env(k).filter(|v| !v.is_empty());
    let state = match nonempty("XDG_STATE_HOME") {
        Some(x) => PathBuf::from(x),
        None => PathBuf::from(nonempty("HOME")?).join(".local").join("state"),
    };
    Some(state.join("mcpx"))
}
