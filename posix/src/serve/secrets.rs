//! Each principal's own secrets (`"secrets": "FILE"`): a server whose
//! `env` or headers name `${secret:NAME}` runs one instance per principal
//! (`"isolation": "client"`, required by the config), and each instance
//! gets its owner's `NAME` from the file, read when the instance starts
//! (so a key added or changed applies at the next start, no reload):
//!
//! ```json
//! { "alice": { "API_KEY": "..." }, "bob": { "API_KEY": "..." }, "*": { "API_KEY": "..." } }
//! ```
//!
//! Principals by their policy names (`token:alice` is `alice`, the stdio
//! client `stdio`). `"*"` is for the server's template, the process that
//! lists its tools for everyone and never runs a call; without it, an
//! entry naming a secret is left out of the template's environment or
//! headers. An anonymous session has no secrets. The file must be readable
//! by its owner alone.

#[cfg(feature = "secrets")]
use std::{fs, os::unix::fs::PermissionsExt as _, path::Path};

#[cfg(feature = "secrets")]
use crate::config::{resolve_secrets, ServerConfig};
#[cfg(feature = "secrets")]
use crate::host::small_file;

/// Whose instance a server's process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum For<'a> {
    /// The template: lists for everyone, runs no call.
    Everyone,
    /// A principal, by its policy name.
    Principal(&'a str),
    /// An anonymous session.
    Anonymous,
}

/// Why an instance cannot start: what its caller is told (no path, nothing
/// of anyone else), and what the operator's log says.
#[cfg(feature = "secrets")]
#[derive(Debug, PartialEq, Eq)]
pub struct Refused {
    pub caller: String,
    pub log: String,
}

/// The secrets of one file: principal → name → value (checked by [`read`]).
#[cfg(feature = "secrets")]
type Secrets = serde_json::Map<String, serde_json::Value>;

/// Server `s` as it runs for `who`: every `${secret:NAME}` of its env and
/// headers replaced by `who`'s `NAME` from `file`.
#[cfg(feature = "secrets")]
pub fn resolve(s: &ServerConfig, file: Option<&Path>, who: For<'_>) -> Result<ServerConfig, Refused> {
    let name = &s.name;
    if who == For::Anonymous && (s.per_principal_oauth().is_some() || s.token_exchange().is_some()) {
        let caller = format!("server '{name}' acts as each person with their own authorization, and this session is anonymous: connect with a token of your own");
        return Err(Refused { log: format!("server '{name}': an anonymous session's instance not started (its tokens are per principal)"), caller });
    }
    let Some(first) = s.secrets().next() else { return Ok(s.clone()) };
    let principal = match who {
        For::Principal(p) => p,
        For::Everyone => "*",
        For::Anonymous => {
            let caller = format!("server '{name}' runs with each person's own credentials, and this session is anonymous: connect with a token of your own");
            return Err(Refused { log: format!("server '{name}': an anonymous session's instance not started (it needs secret {first})"), caller });
        }
    };
    let secrets = match file.map(read) {
        Some(Ok(all)) => all,
        Some(Err(e)) if who == For::Everyone => {
            warn!("server '{name}': {e}; its template lists without its secrets");
            Secrets::new()
        }
        Some(Err(e)) => {
            let caller = format!("server '{name}' runs with each person's own credentials, and mcpx cannot read them now: tell the operator");
            return Err(Refused { log: format!("server '{name}': {e}"), caller });
        }
        None => Secrets::new(),
    };
    let mine = secrets.get(principal);
    let lookup = |k: &str| mine.and_then(|m| m.get(k)).and_then(serde_json::Value::as_str);
    let mut out = s.clone();
    let fields = out.env.iter_mut().chain(out.remote.iter_mut().flat_map(|r| r.headers.iter_mut()));
    let mut missing = Vec::new();
    for (key, value) in fields {
        match resolve_secrets(value, lookup) {
            Ok(v) => *value = v,
            Err(secret) => missing.push((key.clone(), secret)),
        }
    }
    if missing.is_empty() {
        return Ok(out);
    }
    if who == For::Everyone {
        // The template lists without them.
        out.env.retain(|(k, _)| !missing.iter().any(|(m, _)| m == k));
        if let Some(r) = &mut out.remote {
            r.headers.retain(|(k, _)| !missing.iter().any(|(m, _)| m == k));
        }
        return Ok(out);
    }
    let secret = &missing[0].1;
    let file = file.map(|f| f.display().to_string()).unwrap_or_default();
    Err(Refused {
        caller: format!("server '{name}' runs with each person's own {secret}, and none is set for '{principal}': ask the operator to add yours"),
        log: format!("server '{name}': no secret {secret} for principal '{principal}' in {file}; its instance is not started"),
    })
}

/// The secrets file: owner-only, an object of principals, each an object
/// of strings.
#[cfg(feature = "secrets")]
fn read(path: &Path) -> Result<Secrets, String> {
    let shown = path.display();
    let mode = fs::metadata(path).map_err(|e| format!("secrets file {shown}: {e}"))?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(format!("secrets file {shown} can be read by others (mode {:o}); run `chmod 600 {shown}`", mode & 0o777));
    }
    let bytes = small_file::read(path).map_err(|e| format!("secrets file {shown}: {e}"))?;
    let strings = |v: &serde_json::Value| v.as_object().is_some_and(|m| m.values().all(serde_json::Value::is_string));
    match serde_json::from_slice(&bytes) {
        Ok(serde_json::Value::Object(all)) if all.values().all(strings) => Ok(all),
        _ => Err(format!("secrets file {shown} is not a JSON object of principals, each an object of strings")),
    }
}

#[cfg(all(test, feature = "secrets"))]
mod tests {
    use super::*;
    use crate::config::RemoteServer;

    fn server(env: &[(&str, &str)], headers: &[(&str, &str)]) -> ServerConfig {
        let mut s = crate::config::builtin_default().servers.remove(0);
        s.name = "w".into();
        s.env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        if !headers.is_empty() {
            let h = headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            s.remote = Some(RemoteServer { url: "https://w.example/mcp".into(), headers: h, ca_file: None, mode: Default::default(), oauth: None });
        }
        s
    }

    /// `text` as a secrets file of `mode`, in a folder of its own (`tag`).
    fn file(tag: &str, text: &str, mode: u32) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("mcpx-secrets-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        let p = d.join("secrets.json");
        fs::write(&p, text).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    const SECRETS: &str = r#"{ "alice": { "KEY": "a-key", "TOKEN": "a-tok" }, "bob": { "KEY": "b-key" }, "*": { "KEY": "list-key" } }"#;

    #[test]
    fn each_instance_gets_its_owners_secrets_and_nobody_elses() {
        let f = file("own", SECRETS, 0o600);
        let s = server(&[("API_KEY", "${secret:KEY}"), ("MODE", "x"), ("LIT", "$${secret:KEY}")], &[]);
        let env = |who| resolve(&s, Some(&f), who).map(|c| c.env);
        let pairs = |v: &[(&str, &str)]| v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
        assert_eq!(env(For::Principal("alice")), Ok(pairs(&[("API_KEY", "a-key"), ("MODE", "x"), ("LIT", "${secret:KEY}")])));
        assert_eq!(env(For::Principal("bob")), Ok(pairs(&[("API_KEY", "b-key"), ("MODE", "x"), ("LIT", "${secret:KEY}")])));
        assert_eq!(env(For::Everyone), Ok(pairs(&[("API_KEY", "list-key"), ("MODE", "x"), ("LIT", "${secret:KEY}")])));
        // carol has none: refused, naming only what she lacks.
        let e = resolve(&s, Some(&f), For::Principal("carol")).unwrap_err();
        assert_eq!(e.caller, "server 'w' runs with each person's own KEY, and none is set for 'carol': ask the operator to add yours");
        assert!(!e.caller.contains("a-key") && !e.caller.contains("alice") && !e.caller.contains("secrets.json"), "{e:?}");
        assert!(e.log.contains("secrets.json") && e.log.contains("'carol'"), "{e:?}");
        let e = resolve(&s, Some(&f), For::Anonymous).unwrap_err();
        assert!(e.caller.contains("anonymous") && e.caller.contains("token of your own"), "{e:?}");
    }

    #[test]
    fn headers_too_and_the_template_lists_without_what_it_lacks() {
        let f = file("headers", r#"{ "alice": { "TOKEN": "a-tok" } }"#, 0o400);
        let s = server(&[], &[("Authorization", "Bearer ${secret:TOKEN}"), ("X-Team", "red")]);
        let h = |who| resolve(&s, Some(&f), who).map(|c| c.remote.unwrap().headers);
        let pairs = |v: &[(&str, &str)]| v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
        assert_eq!(h(For::Principal("alice")), Ok(pairs(&[("Authorization", "Bearer a-tok"), ("X-Team", "red")])));
        assert_eq!(h(For::Everyone), Ok(pairs(&[("X-Team", "red")])), "no \"*\": the header is left out");
        assert!(resolve(&s, Some(&f), For::Principal("bob")).is_err());
    }

    #[test]
    fn a_file_others_can_read_or_that_is_not_principals_of_strings_is_refused() {
        let s = server(&[("API_KEY", "${secret:KEY}")], &[]);
        let f = file("exposed", SECRETS, 0o644);
        let e = resolve(&s, Some(&f), For::Principal("alice")).unwrap_err();
        assert!(e.log.contains("can be read by others (mode 644)") && e.log.contains("chmod 600"), "{e:?}");
        assert!(!e.caller.contains("secrets.json") && e.caller.contains("tell the operator"), "{e:?}");
        let f = file("shape", r#"{ "alice": { "KEY": 7 } }"#, 0o600);
        assert!(resolve(&s, Some(&f), For::Principal("alice")).unwrap_err().log.contains("each an object of strings"));
        // A server without secrets never reads the file.
        let plain = server(&[("MODE", "x")], &[]);
        assert_eq!(resolve(&plain, Some(std::path::Path::new("/nonexistent")), For::Anonymous), Ok(plain.clone()));
    }
}
