//! Which environment variables a server's process gets.
//!
//! - mcpx's own variables (every `MCPX_*`, such as `MCPX_TOKEN` and
//!   `MCPX_STATE_KEY`) and the variables the config reads for mcpx itself
//!   (`"auth"`, remote servers' `"headers"`, ...) never reach a child
//!   through inheritance;
//! - `"inheritEnv": true` (the default) passes the rest of mcpx's environment;
//!   `"inheritEnv": false` passes only [`BASE`] and the variables matching the
//!   server's `"envAllow"` patterns (`*` matches any run of characters);
//! - the server's own `"env"` is set last and always applies, so a secret the
//!   user hands to one server on purpose (`"env": {"T": "${MCPX_TOKEN}"}`) does.

use std::ffi::{OsStr, OsString};

use mcpx_core::names::glob_match;

/// What `"inheritEnv": false` still passes: what programs need to find
/// their tools, their home, a temporary folder, and to speak the user's
/// language.
pub const BASE: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_*", "TZ", "TMPDIR"];

/// The prefix of the variables that are mcpx's own.
const OWN_PREFIX: &str = "MCPX_";

/// A server's environment policy, from its config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Pass mcpx's environment (minus secrets) rather than [`BASE`] only.
    pub inherit: bool,
    /// Patterns of more variables to pass when `inherit` is false.
    pub allow: Vec<String>,
    /// Variables the config reads as secrets, never inherited.
    pub secrets: Vec<String>,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy { inherit: true, allow: Vec::new(), secrets: Vec::new() }
    }
}

impl Policy {
    /// Whether the inherited variable `name` reaches the child.
    pub fn passes(&self, name: &OsStr) -> bool {
        // A name that is not UTF-8 cannot match a pattern; pass it only
        // when everything is inherited (it cannot be a secret we know of).
        let Some(name) = name.to_str() else { return self.inherit };
        if name.starts_with(OWN_PREFIX) || self.secrets.iter().any(|s| s == name) {
            return false;
        }
        self.inherit || BASE.iter().copied().chain(self.allow.iter().map(String::as_str)).any(|p| glob_match(p, name))
    }

    /// The child's whole environment: what passes of `parent`, then `own`.
    pub fn child_env(
        &self,
        parent: impl IntoIterator<Item = (OsString, OsString)>,
        own: &[(String, String)],
    ) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = parent
            .into_iter()
            .filter(|(k, _)| self.passes(k) && !own.iter().any(|(o, _)| OsStr::new(o) == k))
            .collect();
        env.extend(own.iter().map(|(k, v)| (k.into(), v.into())));
        env
    }
}

/// The names of the variables `${NAME}` / `${NAME:-default}` in `s` refers to.
pub fn referenced_vars(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        // `$${` is a literal `${`.
        let escaped = rest[..i].ends_with('$');
        rest = &rest[i + 2..];
        if escaped {
            continue;
        }
        let end = rest.find(['}', ':']).unwrap_or(rest.len());
        if end > 0 {
            out.push(rest[..end].to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    fn names(v: &[(OsString, OsString)]) -> Vec<String> {
        v.iter().map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy())).collect()
    }

    fn parent() -> Vec<(OsString, OsString)> {
        env(&[
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("LC_ALL", "C"),
            ("MCPX_TOKEN", "s3cret"),
            ("MCPX_STATE_KEY", "k"),
            ("AUTH_TOKEN", "t"),
            ("GITHUB_TOKEN", "g"),
            ("EDITOR", "vi"),
        ])
    }

    #[test]
    fn mcpx_secrets_are_never_inherited() {
        let p = Policy { secrets: vec!["AUTH_TOKEN".into()], ..Policy::default() };
        let e = p.child_env(parent(), &[("X".into(), "1".into())]);
        assert_eq!(names(&e), ["PATH=/bin", "HOME=/h", "LC_ALL=C", "GITHUB_TOKEN=g", "EDITOR=vi", "X=1"]);
    }

    #[test]
    fn without_inheritance_only_the_base_and_the_allow_list_pass() {
        let p = Policy { inherit: false, allow: vec!["GITHUB_*".into(), "MCPX_*".into()], secrets: vec![] };
        let e = p.child_env(parent(), &[]);
        // An allow pattern cannot let mcpx's own variables through.
        assert_eq!(names(&e), ["PATH=/bin", "HOME=/h", "LC_ALL=C", "GITHUB_TOKEN=g"]);
    }

    #[test]
    fn the_servers_own_env_always_applies_and_wins() {
        let p = Policy { inherit: false, ..Policy::default() };
        let own = [("PATH".to_string(), "/opt".to_string()), ("T".to_string(), "s3cret".to_string())];
        assert_eq!(names(&p.child_env(parent(), &own)), ["HOME=/h", "LC_ALL=C", "PATH=/opt", "T=s3cret"]);
    }

    #[test]
    fn referenced_variables() {
        assert_eq!(referenced_vars("Bearer ${TOKEN}"), ["TOKEN"]);
        assert_eq!(referenced_vars("${A:-x}-${B}$${C}"), ["A", "B"]);
        assert!(referenced_vars("plain $HOME").is_empty());
    }
}
