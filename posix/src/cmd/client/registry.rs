//! An MCP Registry `server.json` (schema 2025-12-11) turned into a config
//! entry.
//!
//! - `packages[]`: `registryType` npm → `npx -y IDENTIFIER@VERSION`, pypi →
//!   `uvx IDENTIFIER==VERSION`, oci → `docker run -i --rm … IMAGE` (each
//!   environment variable passed in with `-e NAME`); `runtimeHint` names the
//!   program, `runtimeArguments` go before the package and
//!   `packageArguments` after it. Only stdio packages are run.
//! - `remotes[]`: a `streamable-http` (else `sse`) endpoint, its URL
//!   `{variables}` filled in, its `headers` set.
//!
//! Inputs (arguments, variables, environment variables, headers) take their
//! `value` (with `{name}` replaced from `variables`), else their `default`.
//! A secret (`isSecret`) is written as a `${NAME}` reference, never as a
//! value; an environment variable without a value refers to the user's
//! environment (`${NAME}`, `${NAME:-default}`). A required value that is
//! still missing is asked for on the terminal when there is one; without
//! one it becomes a `${NAME}` reference and NAME is reported as to be set.

use serde_json::{json, Map, Value};

use super::edit::Entry;

/// How a value the user must give is obtained: the answer, or `None`
/// when there is no one to ask.
pub type Ask<'a> = &'a mut dyn FnMut(&str) -> Option<String>;

/// What a `server.json` becomes.
#[derive(Debug, PartialEq)]
pub struct Resolved {
    /// A config name from the server's name (`io.github.user/weather` → `weather`).
    pub name: String,
    pub entry: Entry,
    /// Variables the entry refers to that must be set before `serve`, sorted.
    pub to_set: Vec<String>,
}

/// Turns `server` into an entry: its first runnable package, or (with
/// `remote`, or when it has no package) its first remote.
pub fn resolve(server: &Value, remote: bool, env: &dyn Fn(&str) -> Option<String>, ask: Ask<'_>) -> Result<Resolved, String> {
    let full_name = server.get("name").and_then(Value::as_str).ok_or("the server.json has no \"name\"")?;
    let name = config_name(full_name);
    let mut cx = Inputs { env, ask, to_set: Vec::new() };
    let packages = array(server, "packages");
    let remotes = array(server, "remotes");
    let entry = if remote || packages.is_empty() {
        let r = pick_remote(remotes).ok_or_else(|| format!("{full_name} has no remote endpoint (remotes[] with streamable-http or sse)"))?;
        cx.remote(r)?
    } else {
        let mut refusals = Vec::new();
        let mut found = None;
        for (i, p) in packages.iter().enumerate() {
            match package_command(p) {
                Ok(kind) => {
                    found = Some((p, kind));
                    break;
                }
                Err(e) => refusals.push(format!("packages[{i}]: {e}")),
            }
        }
        match found {
            Some((p, kind)) => cx.package(p, kind)?,
            None if pick_remote(remotes).is_some() => cx.remote(pick_remote(remotes).expect("checked"))?,
            None => return Err(format!("{full_name}: no package mcpx can run ({})", refusals.join("; "))),
        }
    };
    let mut to_set = cx.to_set;
    to_set.sort();
    Ok(Resolved { name, entry, to_set })
}

fn array<'v>(v: &'v Value, key: &str) -> &'v [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn str_at<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool) == Some(true)
}

/// The last part of a reverse-DNS name, in the characters a config name
/// and prefix may use.
fn config_name(full: &str) -> String {
    let last = full.rsplit('/').next().unwrap_or(full);
    let clean: String =
        last.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') { c } else { '-' }).collect();
    clean.chars().take(crate::config::MAX_NAME_LEN).collect()
}

/// `GITHUB_TOKEN` from `--github-token`, `X-Api-Key`, `api key`.
pub(super) fn var_name(label: &str) -> String {
    let s: String = label.trim_start_matches('-').chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    if s.is_empty() {
        "VALUE".into()
    } else {
        s
    }
}

/// How a package is run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Runner {
    Npx,
    Uvx,
    Docker,
}

fn package_command(p: &Value) -> Result<Runner, String> {
    let transport = p.get("transport").and_then(|t| str_at(t, "type")).unwrap_or("stdio");
    if transport != "stdio" {
        return Err(format!("transport {transport:?}: a package that serves HTTP itself is not supported (use its remote, if any)"));
    }
    match str_at(p, "registryType") {
        Some("npm") => Ok(Runner::Npx),
        Some("pypi") => Ok(Runner::Uvx),
        Some("oci") => Ok(Runner::Docker),
        Some(other) => Err(format!("registryType {other:?} is not supported (npm, pypi and oci are)")),
        None => Err("no registryType".into()),
    }
}

/// The remote to use: the first streamable-http one, else the first sse one.
fn pick_remote(remotes: &[Value]) -> Option<&Value> {
    let of = |t: &str| remotes.iter().find(|r| str_at(r, "type") == Some(t));
    of("streamable-http").or_else(|| of("sse"))
}

struct Inputs<'a, 'b> {
    env: &'a dyn Fn(&str) -> Option<String>,
    ask: Ask<'b>,
    to_set: Vec<String>,
}

impl Inputs<'_, '_> {
    /// `${VAR}`, noted as to be set.
    fn reference(&mut self, var: &str) -> String {
        if !self.to_set.iter().any(|v| v == var) {
            self.to_set.push(var.to_string());
        }
        format!("${{{var}}}")
    }

    /// The value of an input (an argument, variable, header or environment
    /// variable); `var` names it as an environment variable, `env_default`
    /// makes a missing value a reference to the user's environment.
    fn value(&mut self, inp: &Value, var: &str, label: &str, env_default: bool) -> Result<Option<String>, String> {
        if let Some(v) = str_at(inp, "value") {
            return self.fill(v, inp.get("variables")).map(Some);
        }
        let (required, default, set) = (flag(inp, "isRequired"), str_at(inp, "default"), (self.env)(var).is_some());
        if flag(inp, "isSecret") {
            // Never the secret itself in the file: a reference to the environment.
            return Ok(match (set, required) {
                (true, _) => Some(format!("${{{var}}}")),
                (false, true) => Some(self.reference(var)),
                (false, false) => None,
            });
        }
        match (env_default, set, default) {
            (true, true, None) => return Ok(Some(format!("${{{var}}}"))),
            (true, _, Some(d)) => return Ok(Some(format!("${{{var}:-{d}}}"))),
            (false, _, Some(d)) => return Ok(Some(d.to_string())),
            _ => {}
        }
        if !required {
            return Ok(None);
        }
        let description = str_at(inp, "description").map(|d| format!(" ({d})")).unwrap_or_default();
        let choices: Vec<&str> = array(inp, "choices").iter().filter_map(Value::as_str).collect();
        let hint = if choices.is_empty() { String::new() } else { format!(" [{}]", choices.join("/")) };
        match (self.ask)(&format!("{label}{description}{hint}: ")) {
            Some(a) if !a.trim().is_empty() => {
                let a = a.trim();
                if !choices.is_empty() && !choices.contains(&a) {
                    return Err(format!("{label}: {a:?} is not one of {}", choices.join(", ")));
                }
                Ok(Some(a.to_string()))
            }
            _ => Ok(Some(self.reference(var))),
        }
    }

    /// `template` with each `{name}` replaced by variable `name`'s value;
    /// an unknown `{name}` stays as it is.
    fn fill(&mut self, template: &str, vars: Option<&Value>) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let Some(len) = rest[open..].find('}') else { break };
            let key = &rest[open + 1..open + len];
            out.push_str(&rest[..open]);
            match vars.and_then(|v| v.get(key)) {
                Some(var) => match self.value(var, &var_name(key), key, false)? {
                    Some(v) => out.push_str(&v),
                    None => return Err(format!("variable {key:?} has no value")),
                },
                None => out.push_str(&rest[open..=open + len]),
            }
            rest = &rest[open + len + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// `runtimeArguments` or `packageArguments` as argv.
    fn arguments(&mut self, list: &[Value]) -> Result<Vec<String>, String> {
        let mut argv = Vec::new();
        for a in list {
            match str_at(a, "type") {
                Some("named") => {
                    let flag_name = str_at(a, "name").ok_or("a named argument has no \"name\"")?;
                    if let Some(v) = self.value(a, &var_name(flag_name), flag_name, false)? {
                        argv.extend([flag_name.to_string(), v]);
                    }
                }
                _ => {
                    let label = str_at(a, "valueHint").unwrap_or("argument");
                    if let Some(v) = self.value(a, &var_name(label), label, false)? {
                        argv.push(v);
                    }
                }
            }
        }
        Ok(argv)
    }

    /// `environmentVariables` or `headers`: name → value.
    fn key_values(&mut self, list: &[Value], env_default: bool) -> Result<Map<String, Value>, String> {
        let mut out = Map::new();
        for kv in list {
            let name = str_at(kv, "name").ok_or("an environment variable or header has no \"name\"")?;
            if let Some(v) = self.value(kv, &var_name(name), name, env_default)? {
                out.insert(name.to_string(), json!(v));
            }
        }
        Ok(out)
    }

    fn package(&mut self, p: &Value, runner: Runner) -> Result<Entry, String> {
        let id = str_at(p, "identifier").ok_or("the package has no \"identifier\"")?;
        let version = str_at(p, "version").filter(|v| !v.is_empty());
        let env = self.key_values(array(p, "environmentVariables"), true)?;
        let runtime = self.arguments(array(p, "runtimeArguments"))?;
        let default = match runner {
            Runner::Npx => "npx",
            Runner::Uvx => "uvx",
            Runner::Docker => "docker",
        };
        let program = str_at(p, "runtimeHint").unwrap_or(default);
        // What the runner itself needs: npx must not ask before installing,
        // docker must keep stdin open and clean up.
        let mut args: Vec<String> = match (runner, program) {
            (Runner::Npx, "npx") if !runtime.iter().any(|a| a == "-y" || a == "--yes") => vec!["-y".into()],
            (Runner::Docker, "docker" | "podman") => vec!["run".into(), "-i".into(), "--rm".into()],
            _ => Vec::new(),
        };
        args.extend(runtime);
        match (runner, version) {
            (Runner::Npx, Some(v)) => args.push(format!("{id}@{v}")),
            (Runner::Uvx, Some(v)) => args.push(format!("{id}=={v}")),
            (Runner::Docker, v) => {
                for name in env.keys() {
                    args.extend(["-e".to_string(), name.clone()]);
                }
                let tagged = id.contains('@') || id.rsplit('/').next().is_some_and(|last| last.contains(':'));
                args.push(match v {
                    Some(v) if !tagged => format!("{id}:{v}"),
                    _ => id.to_string(),
                });
            }
            (_, None) => args.push(id.to_string()),
        }
        args.extend(self.arguments(array(p, "packageArguments"))?);
        let mut e = Entry::default();
        e.set("command", json!(program));
        e.set("args", json!(args));
        if !env.is_empty() {
            e.set("env", Value::Object(env));
        }
        Ok(e)
    }

    fn remote(&mut self, r: &Value) -> Result<Entry, String> {
        let url = str_at(r, "url").ok_or("the remote has no \"url\"")?;
        let url = self.fill(url, r.get("variables"))?;
        let headers = self.key_values(array(r, "headers"), false)?;
        let mut e = Entry::default();
        e.set("url", json!(url));
        e.set("type", json!(if str_at(r, "type") == Some("sse") { "sse" } else { "http" }));
        if !headers.is_empty() {
            e.set("headers", Value::Object(headers));
        }
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(server: Value, remote: bool, env: &[(&str, &str)], answers: &[&str]) -> Result<Resolved, String> {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let lookup = move |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let mut answers = answers.iter().map(|s| s.to_string());
        let mut asked = Vec::new();
        let mut ask = |q: &str| {
            asked.push(q.to_string());
            answers.next()
        };
        resolve(&server, remote, &lookup, &mut ask)
    }

    fn fields(e: &Entry) -> Value {
        Value::Object(e.0.iter().cloned().collect())
    }

    #[test]
    fn npm_package_with_arguments_and_environment() {
        let s = json!({"name": "io.github.acme/weather", "packages": [{
            "registryType": "npm", "identifier": "@acme/weather", "version": "1.2.3",
            "transport": {"type": "stdio"},
            "runtimeArguments": [{"type": "named", "name": "--node-options", "value": "--max-old-space-size=256"}],
            "packageArguments": [
                {"type": "positional", "valueHint": "city", "isRequired": true},
                {"type": "named", "name": "--units", "default": "metric"},
                {"type": "named", "name": "--verbose"}
            ],
            "environmentVariables": [
                {"name": "WEATHER_API_KEY", "isRequired": true, "isSecret": true},
                {"name": "WEATHER_REGION", "default": "eu"},
                {"name": "WEATHER_DEBUG"}
            ]
        }]});
        let r = run(s.clone(), false, &[], &["Paris"]).unwrap();
        assert_eq!(r.name, "weather");
        assert_eq!(
            fields(&r.entry),
            json!({"command": "npx",
                   "args": ["-y", "--node-options", "--max-old-space-size=256", "@acme/weather@1.2.3", "Paris", "--units", "metric"],
                   "env": {"WEATHER_API_KEY": "${WEATHER_API_KEY}", "WEATHER_REGION": "${WEATHER_REGION:-eu}"}})
        );
        assert_eq!(r.to_set, ["WEATHER_API_KEY"]);
        // No terminal: the missing value becomes a reference to be set.
        let r = run(s, false, &[("WEATHER_API_KEY", "k"), ("WEATHER_DEBUG", "1")], &[]).unwrap();
        assert_eq!(fields(&r.entry)["args"][4], "${CITY}");
        assert_eq!(fields(&r.entry)["env"]["WEATHER_DEBUG"], "${WEATHER_DEBUG}");
        assert_eq!(r.to_set, ["CITY"]);
    }

    #[test]
    fn pypi_and_oci_packages() {
        let py = json!({"name": "io.github.acme/py-tool", "packages": [{
            "registryType": "pypi", "identifier": "acme-tool", "version": "0.4.0", "runtimeHint": "uvx",
            "transport": {"type": "stdio"},
            "packageArguments": [{"type": "positional", "value": "--root={dir}", "variables": {"dir": {"default": "/srv"}}}]
        }]});
        assert_eq!(fields(&run(py, false, &[], &[]).unwrap().entry), json!({"command": "uvx", "args": ["acme-tool==0.4.0", "--root=/srv"]}));
        let bun = json!({"name": "a/b", "packages": [{"registryType": "npm", "identifier": "b", "version": "1.0.0", "runtimeHint": "bunx", "transport": {"type": "stdio"}}]});
        assert_eq!(fields(&run(bun, false, &[], &[]).unwrap().entry), json!({"command": "bunx", "args": ["b@1.0.0"]}));
        let oci = json!({"name": "io.github.acme/db", "packages": [{
            "registryType": "oci", "identifier": "ghcr.io/acme/db-mcp", "version": "2.0.0",
            "transport": {"type": "stdio"},
            "runtimeArguments": [{"type": "named", "name": "-v", "value": "{data}:/data", "variables": {"data": {"isRequired": true}}}],
            "environmentVariables": [{"name": "DB_PASSWORD", "isSecret": true, "isRequired": true}]
        }]});
        let r = run(oci, false, &[], &["/var/db"]).unwrap();
        assert_eq!(
            fields(&r.entry),
            json!({"command": "docker",
                   "args": ["run", "-i", "--rm", "-v", "/var/db:/data", "-e", "DB_PASSWORD", "ghcr.io/acme/db-mcp:2.0.0"],
                   "env": {"DB_PASSWORD": "${DB_PASSWORD}"}})
        );
    }

    #[test]
    fn remotes_and_refusals() {
        let s = json!({"name": "com.example/api", "packages": [{"registryType": "nuget", "identifier": "X", "transport": {"type": "stdio"}}],
            "remotes": [
                {"type": "sse", "url": "https://example.com/sse"},
                {"type": "streamable-http", "url": "https://{tenant}.example.com/mcp",
                 "variables": {"tenant": {"isRequired": true, "choices": ["eu", "us"]}},
                 "headers": [{"name": "Authorization", "value": "Bearer {token}", "variables": {"token": {"isSecret": true, "isRequired": true}}},
                             {"name": "X-Client", "value": "mcpx"}]}
            ]});
        let r = run(s.clone(), false, &[], &["eu"]).unwrap();
        assert_eq!(
            fields(&r.entry),
            json!({"url": "https://eu.example.com/mcp", "type": "http",
                   "headers": {"Authorization": "Bearer ${TOKEN}", "X-Client": "mcpx"}})
        );
        assert_eq!(r.to_set, ["TOKEN"]);
        assert!(run(s.clone(), false, &[], &["asia"]).unwrap_err().contains("not one of eu, us"));
        let no_remote = json!({"name": "a/b", "packages": [{"registryType": "cargo", "identifier": "x", "transport": {"type": "stdio"}}]});
        assert_eq!(
            run(no_remote.clone(), false, &[], &[]).unwrap_err(),
            "a/b: no package mcpx can run (packages[0]: registryType \"cargo\" is not supported (npm, pypi and oci are))"
        );
        assert!(run(no_remote, true, &[], &[]).unwrap_err().contains("no remote endpoint"));
        assert_eq!(config_name("io.github.user/my server!"), "my-server-");
        assert_eq!(var_name("--api-key"), "API_KEY");
    }
}
