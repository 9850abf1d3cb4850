//! The task state file of `mcpx serve --http`: where the hub's tasks are
//! kept across a restart (the records themselves: `hub::tasks::persist`).
//!
//! One file per HTTP listener and config, in `<state>/tasks/` (the state
//! folder of `config::state_dir`): the address a client comes back to after
//! a restart and the servers the tasks ran on name it, and no two running
//! mcpx can listen on one address, so none writes over another's file. A
//! hub without an HTTP listener keeps no tasks across a restart: its one
//! stdio client goes with it.

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use crate::config::{self, EnvLookup, Source};
use crate::hub::TASK_STATE_MAX;

/// The state file of the hub listening on `addr` with the config from `source`.
pub fn path(env: EnvLookup<'_>, source: &Source, addr: SocketAddr) -> Option<PathBuf> {
    Some(config::state_dir(env)?.join("tasks").join(file_name(&format!("{addr}\n{}", config_name(source)))))
}

/// The config file `source` names, as one line.
pub fn config_name(source: &Source) -> String {
    match source {
        Source::File(p) => std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()).display().to_string(),
        Source::BuiltIn => "built-in".to_string(),
    }
}

/// A state file's name for `what` (a digest: any text is a safe name).
pub fn file_name(what: &str) -> String {
    let key = mcpx_core::request_state::digest(what.as_bytes());
    let name: String = key[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{name}.json")
}

/// The file's content, if there is one (at most `TASK_STATE_MAX` + 1
/// bytes are read: the hub refuses a larger one).
pub fn load(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    f.take(TASK_STATE_MAX as u64 + 1).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// Writes `bytes` as the file: beside it first (0600: it names principals),
/// then renamed over it, so a crash leaves the old file or the new one.
pub fn save(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
    f.write_all(bytes)?;
    drop(f);
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_per_listener_and_config_in_the_state_folder() {
        let env = |k: &str| (k == "XDG_STATE_HOME").then(|| "/s".to_string());
        let a: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:8081".parse().unwrap();
        let p = path(&env, &Source::BuiltIn, a).unwrap();
        assert!(p.starts_with("/s/mcpx/tasks"), "{p:?}");
        assert_eq!(path(&env, &Source::BuiltIn, a), Some(p.clone()));
        assert_ne!(path(&env, &Source::BuiltIn, b), Some(p.clone()));
        assert_ne!(path(&env, &Source::File("/c/mcpx.json".into()), a), Some(p));
        assert_eq!(path(&|_: &str| None, &Source::BuiltIn, a), None);
    }

    #[test]
    fn saved_bytes_load_back_and_a_missing_file_is_none() {
        let dir = std::env::temp_dir().join(format!("mcpx-task-store-{}", std::process::id()));
        let p = dir.join("tasks").join("x.json");
        assert_eq!(load(&p).unwrap(), None);
        save(&p, b"{\"version\":1}").unwrap();
        save(&p, b"{\"version\":1,\"tasks\":[]}").unwrap();
        assert_eq!(load(&p).unwrap().as_deref(), Some(&b"{\"version\":1,\"tasks\":[]}"[..]));
        assert!(!p.with_extension("tmp").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
