//! The last lists of servers, kept on disk so that mcpx knows their tools
//! at its next start before they are up (a lazy one's without starting it): one JSON file per server
//! in `$XDG_STATE_HOME/mcpx/lists/` (else `~/.local/state/mcpx/lists/`),
//! written when its lists are read, when it is stopped for being idle and
//! when mcpx stops. An entry (`{"server", "source", "lists"}`, the same in
//! the shared store, see `shared_lists`) whose server now runs something
//! else (another command, arguments or URL) or filters its tools otherwise
//! is not used.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::config::{EnvLookup, ServerConfig};

/// The folder of the cache files, if the environment names one.
pub fn dir(env: EnvLookup<'_>) -> Option<PathBuf> {
    Some(crate::config::state_dir(env)?.join("lists"))
}

/// What the server runs and which of its tools are kept (the lists are
/// kept filtered): an entry is for this only.
fn source(s: &ServerConfig) -> Value {
    let mut v = match &s.remote {
        Some(r) => json!({ "url": r.url }),
        None => json!({ "command": s.command, "args": s.args }),
    };
    if !(s.tools_allow.is_empty() && s.tools_deny.is_empty()) {
        v["tools"] = json!({ "allow": s.tools_allow, "deny": s.tools_deny });
    }
    v
}

/// Do `a` and `b` run the same thing, filtered alike (lists of one are the other's)?
pub fn same_source(a: &ServerConfig, b: &ServerConfig) -> bool {
    source(a) == source(b)
}

/// The entry of server `s` with its `lists`, as stored.
pub fn entry(s: &ServerConfig, lists: &Value) -> Vec<u8> {
    serde_json::to_vec(&json!({ "server": s.name, "source": source(s), "lists": lists })).unwrap_or_default()
}

/// The lists in a stored `entry`, if it is one of server `s` as it runs now.
pub fn lists_in(entry: &[u8], s: &ServerConfig) -> Option<Value> {
    let mut v: Value = serde_json::from_slice(entry).ok()?;
    if v.get("server").and_then(Value::as_str) != Some(&s.name) || v.get("source") != Some(&source(s)) {
        return None;
    }
    Some(v.get_mut("lists")?.take()).filter(Value::is_object)
}

/// The file of server `name`: its name in hex, so any name is a safe file name.
fn file(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{}.json", crate::bytes::hex::hex(name.as_bytes())))
}

/// Server `s`'s lists as last saved, if they are for what it runs now.
pub fn load(dir: &Path, s: &ServerConfig) -> Option<Value> {
    lists_in(&std::fs::read(file(dir, &s.name)).ok()?, s)
}

/// Saves server `name`'s [`entry`] (written beside, then renamed over).
pub fn save(dir: &Path, name: &str, entry: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let path = file(dir, name);
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, entry)?;
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
        save(&dir, &s.name, &entry(&s, &lists)).unwrap();
        assert_eq!(load(&dir, &s), Some(lists));
        // Another command line: the cache is not for it.
        assert_eq!(load(&dir, &server("a/b c", &["y"])), None);
        assert_eq!(load(&dir, &server("other", &["x"])), None);
        // Other tools kept: the lists were filtered otherwise.
        let mut filtered = s.clone();
        filtered.tools_deny = vec!["t".into()];
        assert_eq!(load(&dir, &filtered), None);
        // An entry stored under another server's name is not this one's.
        assert_eq!(lists_in(&entry(&server("other", &["x"]), &json!({})), &s), None);
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
