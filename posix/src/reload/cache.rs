//! The last lists of lazy servers, kept on disk so that mcpx knows their
//! tools at its next start without starting them: one JSON file per server
//! in `$XDG_STATE_HOME/mcpx/lists/` (else `~/.local/state/mcpx/lists/`),
//! written when a server is stopped for being idle and when mcpx stops. A
//! file whose server now runs something else (another command, arguments or
//! URL) is not used.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::config::{EnvLookup, ServerConfig};

/// The folder of the cache files, if the environment names one.
pub fn dir(env: EnvLookup<'_>) -> Option<PathBuf> {
    Some(crate::config::state_dir(env)?.join("lists"))
}

/// What the server runs: its cache is for this only.
fn source(s: &ServerConfig) -> Value {
    match &s.remote {
        Some(r) => json!({ "url": r.url }),
        None => json!({ "command": s.command, "args": s.args }),
    }
}

/// The file of server `name`: its name in hex, so any name is a safe file name.
fn file(dir: &Path, name: &str) -> PathBuf {
    let hex: String = name.bytes().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("{hex}.json"))
}

/// Server `s`'s lists as last saved, if they are for what it runs now.
pub fn load(dir: &Path, s: &ServerConfig) -> Option<Value> {
    let text = std::fs::read(file(dir, &s.name)).ok()?;
    let mut v: Value = serde_json::from_slice(&text).ok()?;
    if v.get("source") != Some(&source(s)) {
        return None;
    }
    Some(v.get_mut("lists")?.take())
}

/// Saves server `s`'s `lists` (written beside, then renamed over).
pub fn save(dir: &Path, s: &ServerConfig, lists: Value) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let path = file(dir, &s.name);
    let tmp = path.with_extension("tmp");
    let v = json!({ "server": s.name, "source": source(s), "lists": lists });
    std::fs::write(&tmp, serde_json::to_vec(&v).unwrap_or_default())?;
    std::fs::rename(&tmp, &path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str, args: &[&str]) -> ServerConfig {
        let mut s = crate::config::builtin_default().servers.remove(0);
        s.name = name.into();
        s.args = args.iter().map(|a| a.to_string()).collect();
        s
    }

    #[test]
    fn lists_come_back_for_the_same_server_only() {
        let dir = std::env::temp_dir().join(format!("mcpx-lists-{}", std::process::id()));
        let s = server("a/b c", &["x"]);
        assert_eq!(load(&dir, &s), None);
        let lists = json!({ "tools": [{ "name": "t" }] });
        save(&dir, &s, lists.clone()).unwrap();
        assert_eq!(load(&dir, &s), Some(lists));
        // Another command line: the cache is not for it.
        assert_eq!(load(&dir, &server("a/b c", &["y"])), None);
        assert_eq!(load(&dir, &server("other", &["x"])), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_folder_follows_xdg_state_home_then_home() {
        let env = |k: &str| (k == "XDG_STATE_HOME").then(|| "/s".to_string());
        assert_eq!(dir(&env), Some(PathBuf::from("/s/mcpx/lists")));
        let env = |k: &str| (k == "HOME").then(|| "/h".to_string());
        assert_eq!(dir(&env), Some(PathBuf::from("/h/.local/state/mcpx/lists")));
        assert_eq!(dir(&|_: &str| None), None);
    }
}
