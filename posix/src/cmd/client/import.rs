//! `mcpx import`: the servers other MCP clients are configured with, merged
//! into the mcpx config.
//!
//! Read from their usual files under `$HOME` (Linux and macOS locations)
//! and in the current folder:
//! - Claude Desktop: `~/.config/Claude/claude_desktop_config.json`,
//!   `~/Library/Application Support/Claude/claude_desktop_config.json`
//! - Claude Code: `~/.claude.json` (user scope, and the current folder's
//!   entry under `projects`), `./.mcp.json`
//! - Cursor: `~/.cursor/mcp.json`, `./.cursor/mcp.json`
//! - VS Code: `./.vscode/mcp.json` and the user `mcp.json` (key `servers`),
//!   the user `settings.json` (`mcp.servers`), under `~/.config/Code/User`
//!   or `~/Library/Application Support/Code/User`
//! - Windsurf: `~/.codeium/windsurf/mcp_config.json`
//!
//! Entries keep `command`, `args`, `env`, `cwd`, `url` (Windsurf's
//! `serverUrl`), `headers`, `type` and `disabled`. `${env:VAR}` becomes
//! mcpx's `${VAR}`; `${workspaceFolder}` the current folder; a VS Code
//! `${input:ID}` (asked by VS Code) becomes `${ID}`, to be set; Claude
//! Code's own `${VAR}` and `${VAR:-default}` stay. Everything else is
//! copied literally (`vet::literal`). An entry `serve --check` would refuse
//! (a reference to mcpx's own secrets, a runner with an option for its
//! package) is skipped, saying why; a literal value that looks like a
//! secret is warned about. The servers are shown and written after a yes
//! (or `--yes`), with what else `serve --check` says (a variable to set, a
//! program to install) as a warning: unlike `add`, import moves a setup
//! that runs elsewhere, to be completed here.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::add::{confirm, read_existing};
use super::edit::{self, Entry};
use super::Failure;
use crate::cmd::cli::ImportArgs;
use crate::cmd::vet::{self, OwnSecrets};

struct Source {
    client: &'static str,
    path: PathBuf,
    /// Where the servers object is in the file.
    key: Vec<String>,
}

impl Source {
    /// Whether the client expands `${VAR}` itself (Claude Code), so that
    /// such a reference means the user's environment there as in mcpx.
    fn expands_vars(&self) -> bool {
        self.client == "Claude Code"
    }
}

fn sources(home: &Path, cwd: &Path) -> Vec<Source> {
    let src = |client, path: PathBuf, key: &[&str]| Source { client, path, key: key.iter().map(|k| k.to_string()).collect() };
    const SERVERS: &[&str] = &["mcpServers"];
    let mac = home.join("Library/Application Support");
    let here = cwd.display().to_string();
    let mut out = vec![
        src("Claude Desktop", home.join(".config/Claude/claude_desktop_config.json"), SERVERS),
        src("Claude Desktop", mac.join("Claude/claude_desktop_config.json"), SERVERS),
        src("Claude Code", home.join(".claude.json"), SERVERS),
        src("Claude Code", home.join(".claude.json"), &["projects", &here, "mcpServers"]),
        src("Claude Code", cwd.join(".mcp.json"), SERVERS),
        src("Cursor", home.join(".cursor/mcp.json"), SERVERS),
        src("Cursor", cwd.join(".cursor/mcp.json"), SERVERS),
        src("VS Code", cwd.join(".vscode/mcp.json"), &["servers"]),
    ];
    for user in [home.join(".config/Code/User"), mac.join("Code/User")] {
        out.push(src("VS Code", user.join("mcp.json"), &["servers"]));
        out.push(src("VS Code", user.join("settings.json"), &["mcp", "servers"]));
    }
    out.push(src("Windsurf", home.join(".codeium/windsurf/mcp_config.json"), SERVERS));
    out
}

/// JSON with comments and trailing commas (VS Code's files) as plain JSON.
fn strip_jsonc(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' && i + 1 < b.len() {
                out.push_str(&src[i..i + 2]);
                i += 2;
                continue;
            }
            in_str = c != b'"';
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            i = src[i..].find('\n').map_or(b.len(), |n| i + n);
            continue;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i = src[i + 2..].find("*/").map_or(b.len(), |n| i + n + 4);
            continue;
        } else if c == b',' {
            let next = src[i + 1..].trim_start();
            if next.starts_with('}') || next.starts_with(']') {
                i += 1;
                continue;
            }
        } else if c == b'"' {
            in_str = true;
        }
        let ch = src[i..].chars().next().expect("i is on a char boundary");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// One string of a client's config in mcpx's `${VAR}` syntax: the
/// client's references translated (its own `${VAR}` kept when
/// `expands_vars`), the rest literal.
fn translate(s: &str, cwd: &Path, expands_vars: bool, to_set: &mut Vec<String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(open) = rest.find("${") {
        let Some(len) = rest[open..].find('}') else { break };
        out.push_str(&vet::literal(&rest[..open]));
        let inner = &rest[open + 2..open + len];
        let is_var = |name: &str| vet::variable_name(name).is_ok();
        if let Some(var) = inner.strip_prefix("env:") {
            out.push_str(&format!("${{{var}}}"));
        } else if let Some(id) = inner.strip_prefix("input:") {
            let var = super::registry::var_name(id);
            if !to_set.contains(&var) {
                to_set.push(var.clone());
            }
            out.push_str(&format!("${{{var}}}"));
        } else if inner == "workspaceFolder" {
            out.push_str(&vet::literal(&cwd.display().to_string()));
        } else if expands_vars && is_var(inner.split(":-").next().unwrap_or(inner)) {
            out.push_str(&rest[open..=open + len]);
        } else {
            out.push_str(&vet::literal(&rest[open..=open + len]));
        }
        rest = &rest[open + len + 1..];
    }
    out.push_str(&vet::literal(rest));
    out
}

fn translate_all(v: &Value, cwd: &Path, expands_vars: bool, to_set: &mut Vec<String>) -> Value {
    match v {
        Value::String(s) => json!(translate(s, cwd, expands_vars, to_set)),
        Value::Array(a) => Value::Array(a.iter().map(|x| translate_all(x, cwd, expands_vars, to_set)).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), translate_all(x, cwd, expands_vars, to_set))).collect()),
        other => other.clone(),
    }
}

/// A client's server entry as an mcpx entry.
fn convert(v: &Value, cwd: &Path, expands_vars: bool, to_set: &mut Vec<String>) -> Result<Entry, String> {
    let v = translate_all(v, cwd, expands_vars, to_set);
    let obj = v.as_object().ok_or("not an object")?;
    let mut e = Entry::default();
    let url = obj.get("url").or_else(|| obj.get("serverUrl"));
    match (obj.get("command"), url) {
        (Some(c), _) => {
            e.set("command", c.clone());
            for k in ["args", "env", "cwd"] {
                if let Some(x) = obj.get(k) {
                    e.set(k, x.clone());
                }
            }
        }
        (None, Some(u)) => {
            e.set("url", u.clone());
            match obj.get("type").and_then(Value::as_str) {
                Some("sse") => e.set("type", json!("sse")),
                Some("http" | "streamable-http" | "streamableHttp") => e.set("type", json!("http")),
                _ => {}
            }
            if let Some(h) = obj.get("headers") {
                e.set("headers", h.clone());
            }
        }
        (None, None) => return Err("neither \"command\" nor \"url\"".into()),
    }
    if let Some(d) = obj.get("disabled") {
        e.set("disabled", d.clone());
    }
    Ok(e)
}

/// Everything found: (name, entry, where from), and notes on what was skipped.
fn collect(home: &Path, cwd: &Path, to_set: &mut Vec<String>) -> (Vec<(String, Entry, String)>, Vec<String>) {
    let (mut found, mut notes) = (Vec::new(), Vec::new());
    for s in sources(home, cwd) {
        let Ok(text) = std::fs::read_to_string(&s.path) else { continue };
        let from = format!("{} ({})", s.client, s.path.display());
        let doc: Value = match serde_json::from_str(&strip_jsonc(&text)) {
            Ok(v) => v,
            Err(e) => {
                notes.push(format!("skipped {from}: not JSON ({e})"));
                continue;
            }
        };
        let Some(servers) = s.key.iter().try_fold(&doc, |v, k| v.get(k.as_str())).and_then(Value::as_object) else { continue };
        for (name, v) in servers {
            match convert(v, cwd, s.expands_vars(), to_set) {
                Ok(e) => found.push((name.clone(), e, from.clone())),
                Err(why) => notes.push(format!("skipped {name} from {from}: {why}")),
            }
        }
    }
    (found, notes)
}

pub fn run(args: ImportArgs) -> Result<(), Failure> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from).ok_or_else(|| Failure::Failed("HOME is not set".into()))?;
    let cwd = std::env::current_dir().map_err(|e| Failure::Failed(format!("no current folder: {e}")))?;
    let path = edit::target_file(args.config.as_deref());
    let old = read_existing(&path).map_err(Failure::Failed)?;
    let mut to_set = Vec::new();
    let (found, mut notes) = collect(&home, &cwd, &mut to_set);
    let mut text = old.clone().unwrap_or_else(|| edit::new_config(&[]));
    let own = OwnSecrets::of(&old.as_deref().and_then(|t| serde_json::from_str(t).ok()).unwrap_or(Value::Null));
    let mut added: Vec<(String, String)> = Vec::new();
    let mut warnings = Vec::new();
    let bad = |e: String| Failure::Failed(format!("{}: {e}", path.display()));
    for (name, entry, from) in found {
        if let Some((_, first)) = added.iter().find(|(n, _)| *n == name) {
            notes.push(format!("skipped {name} from {from}: already taken from {first}"));
            continue;
        }
        if edit::has_server(&text, &name).map_err(bad)? && !args.force {
            notes.push(format!("skipped {name} from {from}: already in {} (--force replaces it)", path.display()));
            continue;
        }
        if let Some(why) = refusal(&own, &name, &entry) {
            notes.push(format!("skipped {name} from {from}: {why}"));
            continue;
        }
        warnings.extend(literal_secrets(&entry).into_iter().map(|(what, key)| {
            format!(
                "warning: {name} from {from}: {what} {key} holds what looks like a secret, copied as it is; \
                 better write \"{key}\": \"${{{var}}}\" and set {var} in the environment of `mcpx serve`",
                var = super::registry::var_name(&key)
            )
        }));
        text = edit::upsert_server(&text, &name, &entry).map_err(bad)?;
        added.push((name, from));
    }
    for n in notes.iter().chain(&warnings) {
        eprintln!("{n}");
    }
    if added.is_empty() {
        eprintln!("no servers to import (looked for Claude Desktop, Claude Code, Cursor, VS Code and Windsurf configs)");
        return Ok(());
    }
    if args.dry_run {
        print!("{text}");
    } else {
        let names: Vec<&str> = added.iter().map(|(n, _)| n.as_str()).collect();
        eprintln!("servers to import: {} (`--dry-run` prints the whole config)", names.join(", "));
        confirm(&format!("Write them to {}?", path.display()), args.yes)?;
        // Servers that run in another client may need variables set or
        // programs installed here first: written, with what `serve --check`
        // says until then.
        match edit::validate(&text, &path) {
            Ok(warnings) => warnings.iter().for_each(|w| eprintln!("warning: {w}")),
            Err(e) => eprintln!("warning: `mcpx serve --check` refuses the config until this is done:\n{e}"),
        }
        edit::write(&path, &text).map_err(Failure::Failed)?;
    }
    for (name, from) in &added {
        eprintln!("{} {name} from {from}", if args.dry_run { "would import" } else { "imported" });
    }
    if !to_set.is_empty() {
        eprintln!("set {} in the environment of `mcpx serve` (the config refers to them as ${{NAME}})", to_set.join(", "));
    }
    Ok(())
}

/// Why `serve --check` would refuse the entry, if it would.
fn refusal(own: &OwnSecrets, name: &str, entry: &Entry) -> Option<String> {
    let at = crate::bytes::jsonpos::Path::root().key("mcpServers").key(name);
    vet::entry_fault(own, &at, &Value::Object(entry.0.iter().cloned().collect()))
}

/// The `env` and `headers` members whose literal value looks like a
/// secret: ("env" or "header", name).
fn literal_secrets(entry: &Entry) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for (key, what) in [("env", "env"), ("headers", "header")] {
        let Some((_, Value::Object(m))) = entry.0.iter().find(|(k, _)| k == key) else { continue };
        out.extend(m.iter().filter(|(k, v)| v.as_str().is_some_and(|v| vet::looks_secret(k, v))).map(|(k, _)| (what, k.clone())));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonc_comments_and_trailing_commas() {
        let src = "{\n // a comment\n \"a\": \"http://x\", /* block */ \"b\": [1, 2,],\n \"c\": \"// not a comment\",\n}";
        let v: Value = serde_json::from_str(&strip_jsonc(src)).unwrap();
        assert_eq!(v, json!({"a": "http://x", "b": [1, 2], "c": "// not a comment"}));
    }

    #[test]
    fn claude_codes_project_scope_is_the_current_folders() {
        let home = std::env::temp_dir().join(format!("mcpx-import-test-{}", std::process::id()));
        let cwd = home.join("src/app");
        std::fs::create_dir_all(&cwd).unwrap();
        let doc = json!({"mcpServers": {"user": {"command": "u"}},
                         "projects": {cwd.display().to_string(): {"mcpServers": {"local": {"command": "l"}}},
                                      "/elsewhere": {"mcpServers": {"other": {"command": "o"}}}}});
        std::fs::write(home.join(".claude.json"), doc.to_string()).unwrap();
        let (found, notes) = collect(&home, &cwd, &mut Vec::new());
        std::fs::remove_dir_all(&home).unwrap();
        let names: Vec<&str> = found.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!((names, notes), (vec!["user", "local"], vec![]));
    }

    #[test]
    fn entries_in_mcpx_form() {
        let cwd = Path::new("/work/proj");
        let mut to_set = Vec::new();
        let vs = json!({"type": "stdio", "command": "node", "args": ["${workspaceFolder}/s.js"],
                        "env": {"KEY": "${input:api-key}", "HOME_DIR": "${env:HOME}"}, "envFile": "x"});
        let e = convert(&vs, cwd, false, &mut to_set).unwrap();
        assert_eq!(
            Value::Object(e.0.into_iter().collect()),
            json!({"command": "node", "args": ["/work/proj/s.js"], "env": {"KEY": "${API_KEY}", "HOME_DIR": "${HOME}"}})
        );
        assert_eq!(to_set, ["API_KEY"]);
        let ws = json!({"serverUrl": "https://x/mcp", "headers": {"A": "b"}, "disabled": true});
        let e = convert(&ws, cwd, false, &mut to_set).unwrap();
        assert_eq!(e.0.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["url", "headers", "disabled"]);
        let cc = json!({"type": "http", "url": "https://y/mcp"});
        assert_eq!(convert(&cc, cwd, true, &mut to_set).unwrap().0[1], ("type".to_string(), json!("http")));
        assert!(convert(&json!({"args": []}), cwd, false, &mut to_set).is_err());
    }

    #[test]
    fn a_clients_values_are_literal_but_its_references() {
        let cwd = Path::new("/p/${X}");
        let cases: &[(&str, bool, &str)] = &[
            ("${env:GITHUB_TOKEN}", false, "${GITHUB_TOKEN}"),
            ("${MCPX_TOKEN}", false, "$${MCPX_TOKEN}"),
            ("${MCPX_TOKEN}", true, "${MCPX_TOKEN}"),
            ("${API_KEY:-none}", true, "${API_KEY:-none}"),
            ("${not a var}", true, "$${not a var}"),
            ("a $${b} ${c", false, "a $$${b} $${c"),
            ("${workspaceFolder}/s.js", false, "/p/$${X}/s.js"),
            ("price: $5", false, "price: $5"),
        ];
        for (s, claude_code, want) in cases {
            assert_eq!(translate(s, cwd, *claude_code, &mut Vec::new()), *want, "{s}");
        }
    }

    #[test]
    fn entries_serve_check_would_refuse_are_skipped_and_literal_secrets_named() {
        let own = OwnSecrets::of(&json!({"auth": {"tokens": {"alice": "${ALICE_TOKEN}"}}}));
        let entry = |v: Value| Entry(v.as_object().unwrap().clone().into_iter().collect());
        let cases: &[(Value, Option<&str>)] = &[
            (json!({"command": "npx", "args": ["-y", "@a/b"], "env": {"T": "${GITHUB_TOKEN}"}}), None),
            (json!({"command": "npx", "args": ["-y", "@a/b"], "env": {"T": "${MCPX_TOKEN}"}}), Some("mcpServers.s.env.T: refers to ${MCPX_TOKEN}")),
            (json!({"url": "https://x/mcp", "headers": {"A": "Bearer ${ALICE_TOKEN}"}}), Some("mcpServers.s.headers.A: refers to ${ALICE_TOKEN}")),
            (json!({"command": "npx", "args": ["-y", "--call=id"]}), Some("mcpServers.s.args[1]: package \"--call=id\" starts with `-`")),
        ];
        for (v, want) in cases {
            let got = refusal(&own, "s", &entry(v.clone()));
            match want {
                None => assert_eq!(got, None, "{v}"),
                Some(w) => assert!(got.as_deref().is_some_and(|g| g.starts_with(w)), "{v}: {got:?}"),
            }
        }
        let e = entry(json!({"command": "x", "env": {"GITHUB_TOKEN": "ghp_123", "LEVEL": "debug", "REF": "${K}"},
                             "headers": {"Authorization": "Bearer abc"}}));
        assert_eq!(literal_secrets(&e), [("env", "GITHUB_TOKEN".to_string()), ("header", "Authorization".to_string())]);
    }
}
