//! The command-line client and config helpers, end to end: `mcpx tools`,
//! `call`, `prompts`, `status` against a running `mcpx serve --http` and
//! standalone; `add` / `remove` keeping the rest of a config byte for byte;
//! `add --from` on the shipped registry `server.json` files; `import` of
//! the shipped client configs; `serve --check`.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(60);

/// What one `mcpx` run gave.
struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Out {
    fn ok(&self) -> &Self {
        assert_eq!(self.code, Some(0), "expected success\nstdout: {}\nstderr: {}", self.stdout, self.stderr);
        self
    }
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }
}

/// Runs `program args` in `cwd` with `env` added (and HOME/XDG_CONFIG_HOME
/// pointed at `cwd`, so no real user config is read), stdin from `input`.
fn run_in(cwd: &Path, program: &Path, args: &[&str], env: &[(&str, &str)], input: &str) -> Out {
    let dir = TempDir::new();
    let (o, e, i) = (dir.path().join("out"), dir.path().join("err"), dir.path().join("in"));
    std::fs::write(&i, input).unwrap();
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env("XDG_CONFIG_HOME", cwd.join(".config"))
        .env_remove("MCPX_URL")
        .env_remove("MCPX_TOKEN")
        .env_remove("MCPX_LOG")
        .stdin(std::fs::File::open(&i).unwrap())
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap())
        .process_group(0);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
    let deadline = Instant::now() + LIMIT;
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{} {args:?} did not finish within {LIMIT:?}", program.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Anything the command started and left behind (it should leave nothing).
    kill_group_of(child.id());
    Out { code, stdout: std::fs::read_to_string(&o).unwrap(), stderr: std::fs::read_to_string(&e).unwrap() }
}

/// SIGKILL to process group `pgid`. The `--` matters: procps' `kill` reads
/// `-12345` without it as the option `-1`…, i.e. "every process".
fn kill_group_of(pgid: u32) {
    assert!(pgid > 1, "not a process group of ours: {pgid}");
    let _ = Command::new("kill").args(["-KILL", "--", &format!("-{pgid}")]).stderr(Stdio::null()).status();
}

fn mcpx_in(cwd: &Path, args: &[&str]) -> Out {
    run_in(cwd, mcpx(), args, &[], "")
}

/// A hub config of `n` example servers `d1`..`dn` (or one `demo`).
fn example_hub(names: &[&str]) -> Hub {
    names.iter().fold(HubConfig::new(), |h, n| h.upstream(example_server(n))).write()
}

fn names(list: &Value) -> Vec<String> {
    list.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

// ------------------------------------------------------------------ the client

#[test]
fn tools_call_prompts_and_status_against_a_running_hub() {
    let hub = example_hub(&["demo"]);
    let server = hub.serve_http();
    let dir = hub.dir();
    let url = server.url.as_str();

    let table = mcpx_in(dir, &["tools", "--url", url]);
    table.ok();
    let header = table.stdout.lines().next().unwrap();
    assert!(header.starts_with("TOOL") && header.contains("DESCRIPTION"), "{}", table.stdout);
    assert!(table.stdout.lines().any(|l| l.starts_with("demo__greet ") && l.contains("Hello")), "{}", table.stdout);

    let tools = mcpx_in(dir, &["tools", "--url", url, "--json"]).ok().json();
    let tools = names(&tools);
    assert!(tools.contains(&"demo__greet".to_string()) && tools.contains(&"demo__echo".to_string()), "{tools:?}");
    assert_eq!(tools.len(), table.stdout.lines().count() - 1, "the table has one row per tool");

    let call = mcpx_in(dir, &["call", "demo__greet", r#"{"name": "Ada"}"#, "--url", url]);
    assert_eq!(call.ok().stdout, "Hello, Ada!\n");
    let full = mcpx_in(dir, &["call", "demo__add", r#"{"a": 2, "b": 40}"#, "--url", url, "--json"]).ok().json();
    assert_eq!(full["content"][0]["text"], "42", "{full}");

    let prompts = mcpx_in(dir, &["prompts", "--url", url, "--json"]).ok().json();
    assert!(names(&prompts).contains(&"demo__test_simple_prompt".to_string()), "{prompts}");
    let resources = mcpx_in(dir, &["resources", "--url", url]).ok().stdout.clone();
    assert!(resources.lines().any(|l| l.starts_with("test://static-text ")), "{resources}");

    let status = mcpx_in(dir, &["status", "--url", url]).ok().stdout.clone();
    let row = status.lines().find(|l| l.starts_with("demo ")).unwrap_or_else(|| panic!("{status}"));
    assert!(row.contains("ready"), "{status}");
    let tools_cell = row.split_whitespace().nth(3).unwrap();
    assert_eq!(tools_cell, tools.len().to_string(), "{status}");
}

/// The client is a plain MCP client: the Python SDK's Streamable HTTP
/// server (which refuses requests outside an initialized session) answers it.
// covers: lifecycle-client-sends-initialize, lifecycle-client-sends-supported-version
#[test]
fn speaks_to_an_sdk_server_directly() {
    let server = py_server_http();
    let dir = TempDir::new();
    let tools = names(&mcpx_in(dir.path(), &["tools", "--url", &server.url, "--json", "--token", ""]).ok().json());
    assert!(tools.contains(&"greet".to_string()) && tools.contains(&"multiply".to_string()), "{tools:?}");
    let out = mcpx_in(dir.path(), &["call", "multiply", r#"{"a": 6, "b": 7}"#, "--url", &server.url]);
    assert_eq!(out.ok().stdout, "42\n");
}

#[test]
fn a_protected_hub_needs_the_token() {
    let hub = example_hub(&["demo"]);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let cmd = Cmd::new(mcpx(), &["serve", "--config", hub.config.to_str().unwrap(), "--http", &addr, "--token", "s3cret"]);
    let server = HttpServer::start(&cmd, port, "/mcp");
    let without = mcpx_in(hub.dir(), &["tools", "--url", &server.url]);
    assert_eq!(without.code, Some(2), "{}", without.stderr);
    assert!(without.stderr.contains("401") && without.stderr.contains("(the hub wants a token: give it with --token or MCPX_TOKEN)"), "{}", without.stderr);
    // The advice is for this hop, not an upstream's headers.
    assert!(!without.stderr.contains("headers") && !without.stderr.contains("is `mcpx serve --http` running there?"), "{}", without.stderr);
    // An empty token is none (`--token "$MCPX_TOKEN"` with the variable unset): the same 401, not a usage error.
    let empty = mcpx_in(hub.dir(), &["tools", "--url", &server.url, "--token", ""]);
    assert_eq!(empty.code, Some(2), "{}", empty.stderr);
    assert!(empty.stderr.contains("the hub wants a token"), "{}", empty.stderr);
    let wrong = mcpx_in(hub.dir(), &["tools", "--url", &server.url, "--token", "nope"]);
    assert_eq!(wrong.code, Some(2), "{}", wrong.stderr);
    assert!(wrong.stderr.contains("(the hub refused the token: check --token or MCPX_TOKEN)"), "{}", wrong.stderr);
    let with = run_in(hub.dir(), mcpx(), &["call", "demo__greet", r#"{"name":"T"}"#, "--url", &server.url], &[("MCPX_TOKEN", "s3cret")], "");
    assert_eq!(with.ok().stdout, "Hello, T!\n");
}

// covers: pagination-missing-nextcursor-end, pagination-support-both-flows, pagination-cursor-opaque
#[test]
fn standalone_runs_the_configured_servers_and_reads_every_page() {
    // Five example servers: more tools than the hub's page of 200.
    let hub = example_hub(&["d1", "d2", "d3", "d4", "d5"]);
    let cfg = hub.config.to_str().unwrap();
    let one = example_hub(&["d1"]);
    let per_server = names(&mcpx_in(one.dir(), &["tools", "--config", one.config.to_str().unwrap(), "--json"]).ok().json()).len();
    let all = names(&mcpx_in(hub.dir(), &["tools", "--config", cfg, "--json"]).ok().json());
    assert!(all.len() > 200, "{} tools: not enough to need a second page", all.len());
    assert_eq!(all.len(), 5 * per_server);
    let mut unique = all.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), all.len(), "a page was read twice");

    let sum = mcpx_in(hub.dir(), &["call", "d3__add", r#"{"a": 1, "b": 2}"#, "--config", cfg]);
    assert_eq!(sum.ok().stdout, "3\n");
    let status = mcpx_in(hub.dir(), &["status", "--config", cfg, "--json"]).ok().json();
    let states: Vec<&str> = status["upstreams"].as_array().unwrap().iter().map(|u| u["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["ready"; 5], "{status}");
}

#[test]
fn failures_have_their_exit_codes_and_say_why() {
    let hub = example_hub(&["demo"]);
    let (dir, cfg) = (hub.dir(), hub.config.to_str().unwrap());

    let tool_error = mcpx_in(dir, &["call", "demo__test_error_handling", "--config", cfg]);
    assert_eq!(tool_error.code, Some(1));
    assert!(tool_error.stderr.contains("tool demo__test_error_handling reported an error: This tool intentionally returns an error"), "{}", tool_error.stderr);

    let rpc_error = mcpx_in(dir, &["call", "nope", "--config", cfg]);
    assert_eq!(rpc_error.code, Some(1));
    assert!(rpc_error.stderr.contains("tools/call failed: error -32602"), "{}", rpc_error.stderr);

    let bad_args = mcpx_in(dir, &["call", "demo__greet", "[1]", "--config", cfg]);
    assert_eq!(bad_args.code, Some(2));
    assert!(bad_args.stderr.contains("must be a JSON object"), "{}", bad_args.stderr);

    let nobody = mcpx_in(dir, &["tools", "--url", &format!("http://127.0.0.1:{}/mcp", free_port())]);
    assert_eq!(nobody.code, Some(2));
    assert!(nobody.stderr.contains("unreachable") && nobody.stderr.contains("mcpx serve --http"), "{}", nobody.stderr);

    std::fs::write(dir.join("broken.json"), "{\n  \"mcpServers\": {\n    \"a\": {\"command\": 3}\n  }\n}\n").unwrap();
    let broken = mcpx_in(dir, &["tools", "--config", "broken.json"]);
    assert_eq!(broken.code, Some(2));
    assert!(broken.stderr.contains("broken.json:3:11") && broken.stderr.contains("mcpx serve --check"), "{}", broken.stderr);

    // A server's question with no terminal to put it on.
    let asked = mcpx_in(dir, &["call", "demo__ask_user", r#"{"question": "who?"}"#, "--config", cfg]);
    assert_eq!(asked.code, Some(1));
    assert!(asked.stderr.contains("stdin is not a terminal"), "{}", asked.stderr);
}

/// `script` runs a command on a pseudo-terminal (util-linux, always on Debian).
fn on_terminal(dir: &Path, mcpx_args: &[&str], input: &str) -> Out {
    let quoted: Vec<String> = std::iter::once(mcpx().display().to_string())
        .chain(mcpx_args.iter().map(|a| a.to_string()))
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let script = PathBuf::from("/usr/bin/script");
    assert!(script.exists(), "this test needs `script` (Debian package bsdutils / util-linux)");
    run_in(dir, &script, &["-qec", &quoted.join(" "), "/dev/null"], &[], input)
}

// covers: elicitation-client-declare-capability-at-initialize, elicitation-client-form-review-modify-responses, elicitation-client-decline-cancel-options, elicitation-client-show-requesting-server
#[test]
fn elicitation_and_progress_on_a_terminal() {
    let hub = example_hub(&["demo"]);
    let (dir, cfg) = (hub.dir(), hub.config.to_str().unwrap());
    let ask = ["call", "demo__ask_user", r#"{"question": "Who are you?"}"#, "--config", cfg];

    // Answer, edit the answer, then send.
    let edited = on_terminal(dir, &ask, "Ada\ne\nGrace\ns\n");
    edited.ok();
    assert!(edited.stdout.contains("[demo] Who are you?"), "{}", edited.stdout);
    assert!(edited.stdout.contains("(default \"Ada\")"), "{}", edited.stdout);
    assert!(edited.stdout.contains(r#"accept {"answer":"Grace"}"#), "{}", edited.stdout);

    let declined = on_terminal(dir, &ask, "Ada\nd\n");
    assert!(declined.ok().stdout.contains("User response: decline"), "{}", declined.stdout);

    let progress = on_terminal(dir, &["call", "demo__slow", r#"{"seconds": 1, "steps": 4}"#, "--config", cfg], "");
    progress.ok();
    assert!(progress.stdout.contains("[###############...............]  50% step 2 of 4"), "{:?}", progress.stdout);
    assert!(progress.stdout.contains("Finished after 1 s."), "{}", progress.stdout);
}

// ------------------------------------------------------------------ config helpers

const HAND_WRITTEN: &str = r#"{
    "logLevel": "warn",
    "mcpServers": {
        "zeta": { "command": "mcpx-example", "args": ["example-server"] },
        "alpha": {
            "command": "mcpx-example",
            "env": {"B": "2", "A": "1"}
        }
    },
    "separator": "__"
}
"#;

#[test]
fn add_and_remove_keep_the_rest_of_the_file() {
    let dir = TempDir::new();
    let cfg = dir.path().join("mcpx.json");
    std::fs::write(&cfg, HAND_WRITTEN).unwrap();
    let c = cfg.to_str().unwrap();

    let add_gh = ["add", "gh", "--config", c, "--env", "GITHUB_TOKEN=${GITHUB_TOKEN}", "--", "npx", "-y", "@modelcontextprotocol/server-github"];
    // Not written while the variable it refers to is unset (`serve --check` would refuse it).
    // The config as written is good here (its `mcpx-example` installed).
    let path = path_with_stubs(dir.path(), &["npx", "mcpx-example"]);
    let unset = Command::new(mcpx()).args(add_gh).current_dir(dir.path()).env_remove("GITHUB_TOKEN").env("PATH", &path).output().unwrap();
    let said = String::from_utf8_lossy(&unset.stderr);
    assert_eq!(unset.status.code(), Some(1), "{said}");
    assert!(said.contains("environment variable GITHUB_TOKEN is not set (referenced as `${GITHUB_TOKEN}`; set it"), "{said}");
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), HAND_WRITTEN);
    let added = run_in(dir.path(), mcpx(), &add_gh, &[("GITHUB_TOKEN", "t"), ("PATH", &path)], "");
    added.ok();
    let text = std::fs::read_to_string(&cfg).unwrap();
    let at = HAND_WRITTEN.find("\n    },\n    \"separator\"").unwrap();
    let want = format!(
        "{},\n        \"gh\": {{\n            \"command\": \"npx\",\n            \"args\": [\n                \"-y\",\n                \"@modelcontextprotocol/server-github\"\n            ],\n            \"env\": {{\n                \"GITHUB_TOKEN\": \"${{GITHUB_TOKEN}}\"\n            }}\n        }}{}",
        &HAND_WRITTEN[..at],
        &HAND_WRITTEN[at..]
    );
    assert_eq!(text, want);

    let again = mcpx_in(dir.path(), &["add", "gh", "--config", c, "--", "other"]);
    assert_eq!(again.code, Some(1));
    assert!(again.stderr.contains("already there (--force replaces it)"), "{}", again.stderr);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), want, "a refused add changed the file");

    let url = run_in(dir.path(), mcpx(), &["add", "gh", "--force", "--config", c, "--url", "https://api.example.com/mcp", "--header", "Authorization=Bearer ${TOKEN}"], &[("TOKEN", "t"), ("PATH", &path)], "");
    assert!(url.ok().stdout.contains("replaced server gh"), "{}", url.stdout);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    assert_eq!(v["mcpServers"]["gh"], json!({"url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}));

    run_in(dir.path(), mcpx(), &["remove", "gh", "--config", c], &[("PATH", &path)], "").ok();
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), HAND_WRITTEN, "add then remove must give the file back byte for byte");
    let missing = mcpx_in(dir.path(), &["remove", "gh", "--config", c]);
    assert_eq!(missing.code, Some(1));
    assert!(missing.stderr.contains("no server named \"gh\""), "{}", missing.stderr);

    // An entry the hub would refuse is not written.
    let bad = run_in(dir.path(), mcpx(), &["add", "x", "--config", c, "--url", "ftp://example.com"], &[("PATH", &path)], "");
    assert_eq!(bad.code, Some(1), "{}", bad.stderr);
    assert!(bad.stderr.contains("not written") && bad.stderr.contains("mcpServers.x"), "{}", bad.stderr);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), HAND_WRITTEN);

    // One whose variable is unset is not written either: it says which, and how to set it.
    let later = run_in(dir.path(), mcpx(), &["add", "later", "--config", c, "--url", "${LATER_URL}"], &[("PATH", &path)], "");
    assert_eq!(later.code, Some(1), "{}", later.stderr);
    assert!(later.stderr.contains("mcpServers.later.url: environment variable LATER_URL is not set (referenced as `${LATER_URL}`; set it"), "{}", later.stderr);
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), HAND_WRITTEN);

    // Without --config: the file `serve` would read (here ./mcpx.json), then a new user config.
    mcpx_in(dir.path(), &["add", "local", "--", "true"]).ok();
    assert!(std::fs::read_to_string(&cfg).unwrap().contains("\"local\""));
    let fresh = TempDir::new();
    mcpx_in(fresh.path(), &["add", "first", "--", "true"]).ok();
    let created = std::fs::read_to_string(fresh.path().join(".config/mcpx/config.json")).unwrap();
    assert_eq!(created, "{\n  \"mcpServers\": {\n    \"first\": {\n      \"command\": \"true\",\n      \"args\": []\n    }\n  }\n}\n");
}

/// `mcpx add` refuses what `serve --check` refuses, with its very message
/// (issue 28): a header whose `${VAR}` is unset (the README's `add api`),
/// a command that is not installed. Nothing is written.
#[test]
fn add_refuses_what_serve_check_refuses_in_its_words() {
    let dir = TempDir::new();
    let cfg = dir.path().join("mcpx.json");
    std::fs::write(&cfg, HAND_WRITTEN).unwrap();
    let path = path_with_stubs(dir.path(), &["mcpx-example"]);
    let env = [("PATH", path.as_str())];
    let cases: &[(&[&str], Value)] = &[
        (
            &["--url", "https://mcp.example.com/mcp", "--header", "Authorization=Bearer ${API_TOKEN_UNSET_HERE}"],
            json!({"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${API_TOKEN_UNSET_HERE}"}}),
        ),
        (&["--", "no-such-mcp-server-here"], json!({"command": "no-such-mcp-server-here", "args": []})),
    ];
    for (how, entry) in cases {
        let args: Vec<&str> = ["add", "api", "--config", "mcpx.json"].iter().chain(how.iter()).copied().collect();
        let add = run_in(dir.path(), mcpx(), &args, &env, "");
        assert_eq!(add.code, Some(1), "{how:?}: {}", add.stderr);
        assert_eq!(std::fs::read_to_string(&cfg).unwrap(), HAND_WRITTEN, "{how:?}");
        let mut v: Value = serde_json::from_str(HAND_WRITTEN).unwrap();
        v["mcpServers"]["api"] = entry.clone();
        std::fs::write(dir.path().join("check.json"), serde_json::to_string_pretty(&v).unwrap()).unwrap();
        let check = run_in(dir.path(), mcpx(), &["serve", "--check", "--config", "check.json"], &env, "");
        assert_eq!(check.code, Some(1), "{how:?}: {}", check.stderr);
        // The same message, past the `file:line:col: ` of each file.
        let said = |text: &str| text.lines().filter_map(|l| l.split_once(": mcpServers.").map(|(_, m)| m.to_string())).collect::<Vec<_>>();
        assert!(!said(&check.stderr).is_empty(), "{}", check.stderr);
        assert_eq!(said(&add.stderr), said(&check.stderr), "{how:?}\nadd: {}\ncheck: {}", add.stderr, check.stderr);
    }
}

#[test]
fn serve_check_validates_and_points_at_the_problem() {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("good.json"), HAND_WRITTEN).unwrap();
    let path = path_with_stubs(dir.path(), &["mcpx-example"]);
    let good = run_in(dir.path(), mcpx(), &["serve", "--check", "--config", "good.json"], &[("PATH", &path)], "");
    assert!(good.ok().stdout.contains("good.json: OK (2 server(s), 0 disabled)"), "{}", good.stdout);

    let clash = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\", \"prefix\": \"p\"},\n    \"b\": {\"command\": \"y\", \"prefix\": \"p\"}\n  }\n}\n";
    std::fs::write(dir.path().join("clash.json"), clash).unwrap();
    let out = mcpx_in(dir.path(), &["serve", "--check", "--config", "clash.json"]);
    assert_eq!(out.code, Some(1));
    assert!(out.stderr.starts_with("clash.json:4:"), "{}", out.stderr);
    assert!(out.stderr.contains("prefix"), "{}", out.stderr);

    std::fs::write(dir.path().join("syntax.json"), "{\n  \"mcpServers\": {,\n}").unwrap();
    let out = mcpx_in(dir.path(), &["serve", "--check", "--config", "syntax.json"]);
    assert_eq!(out.code, Some(1));
    assert!(out.stderr.starts_with("syntax.json:2:"), "{}", out.stderr);
}

// ------------------------------------------------------------------ registry and import

fn fixture(path: &str) -> PathBuf {
    repo_root().join("tests/fixtures").join(path)
}

/// `mcpx add --from FIXTURE [extra] --yes` into an empty folder must
/// refuse while the variables `to_set` are unset, naming the first; with
/// them set, write `want` as server `name`, which `serve --check` then
/// accepts. The folder, for more commands.
fn adds_from(file: &str, extra: &[&str], name: &str, want: Value, to_set: &[&str]) -> TempDir {
    let dir = TempDir::new();
    let from = fixture(&format!("registry/{file}"));
    let mut args = vec!["add", "--from", from.to_str().unwrap(), "--config", "mcpx.json", "--yes"];
    args.extend(extra);
    let path = path_with_stubs(dir.path(), &["npx", "uvx", "docker"]);
    let unset = run_in(dir.path(), mcpx(), &args, &[("PATH", &path)], "");
    assert_eq!(unset.code, Some(1), "{}", unset.stderr);
    assert!(unset.stderr.contains(&format!("environment variable {} is not set", to_set[0])), "{}", unset.stderr);
    assert!(!dir.path().join("mcpx.json").exists(), "written with {} unset", to_set[0]);

    let env: Vec<(&str, &str)> = to_set.iter().map(|v| (*v, "set-by-test")).chain([("PATH", path.as_str())]).collect();
    let out = run_in(dir.path(), mcpx(), &args, &env, "");
    out.ok();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("mcpx.json")).unwrap()).unwrap();
    assert_eq!(v["mcpServers"][name], want);
    run_in(dir.path(), mcpx(), &["serve", "--check", "--config", "mcpx.json"], &env, "").ok();
    dir
}

#[test]
fn add_from_an_npm_server_json() {
    let want = json!({
        "command": "npx",
        "args": ["-y", "@mcpx-fixtures/weather-mcp@1.4.2", "--units", "metric", "${CITY}"],
        "env": {"WEATHER_API_KEY": "${WEATHER_API_KEY}", "WEATHER_CACHE_DIR": "${WEATHER_CACHE_DIR:-/tmp/weather}"}
    });
    adds_from("npm.server.json", &[], "weather", want, &["CITY", "WEATHER_API_KEY"]);
}

#[test]
fn add_from_a_pypi_server_json_with_a_name_of_ones_own() {
    let want = json!({
        "command": "uvx",
        "args": ["mcpx-fixtures-notes==0.9.0", "--root", "/srv/notes", "--read-only", "true"],
        "env": {"NOTES_TOKEN": "${NOTES_TOKEN}"}
    });
    adds_from("pypi.server.json", &["my-notes"], "my-notes", want, &["NOTES_TOKEN"]);
}

#[test]
fn add_from_an_oci_server_json() {
    let want = json!({
        "command": "docker",
        "args": ["run", "-i", "--rm", "-e", "PGHOST", "-e", "PGPASSWORD",
                 "ghcr.io/mcpx-fixtures/postgres-mcp:2.1.0", "--max-rows", "500"],
        "env": {"PGHOST": "${PGHOST:-127.0.0.1}", "PGPASSWORD": "${PGPASSWORD}"}
    });
    adds_from("oci.server.json", &[], "postgres", want, &["PGPASSWORD"]);
}

#[test]
fn add_from_a_remote_server_json() {
    let want = json!({
        "url": "https://eu.tickets.example.com/mcp",
        "type": "http",
        "headers": {"Authorization": "Bearer ${API_TOKEN}", "X-Tickets-Client": "mcpx"}
    });
    let dir = adds_from("remote.server.json", &[], "tickets", want, &["API_TOKEN"]);
    // A package server's remote is not made up: asking for one that is not there fails.
    let none = mcpx_in(dir.path(), &["add", "--from", fixture("registry/npm.server.json").to_str().unwrap(), "--remote", "--config", "other.json"]);
    assert_eq!(none.code, Some(1));
    assert!(none.stderr.contains("has no remote endpoint"), "{}", none.stderr);
}

#[test]
fn import_reads_the_clients_configs() {
    let home = fixture("clients/home");
    let project = fixture("clients/project");
    let out_dir = TempDir::new();
    let cfg = out_dir.path().join("mcpx.json");
    let c = cfg.to_str().unwrap();
    let env = [("HOME", home.to_str().unwrap())];

    let dry = run_in(&project, mcpx(), &["import", "--config", c, "--dry-run"], &env, "");
    dry.ok();
    assert!(!cfg.exists(), "--dry-run wrote the file");
    let v: Value = serde_json::from_str(&dry.stdout).unwrap_or_else(|e| panic!("{e}: {}", dry.stdout));
    let servers = v["mcpServers"].as_object().unwrap();
    let got: Vec<&str> = servers.keys().map(String::as_str).collect();
    let mut want = vec!["filesystem", "memory", "sentry", "project-db", "linear", "git", "api", "tool", "time", "docs"];
    want.sort();
    let mut got_sorted = got.clone();
    got_sorted.sort();
    assert_eq!(got_sorted, want, "{}", dry.stdout);
    // The first client's entry wins; the later one is named as skipped.
    assert_eq!(servers["filesystem"]["args"][2], "/home/user/Documents");
    assert!(dry.stderr.contains("skipped filesystem from Claude Code"), "{}", dry.stderr);
    assert_eq!(servers["sentry"], json!({"url": "https://mcp.sentry.dev/mcp", "type": "http"}));
    assert_eq!(servers["git"]["env"]["GIT_AUTHOR"], "${USER}");
    assert_eq!(servers["api"]["headers"]["Authorization"], "Bearer ${API_TOKEN}");
    assert_eq!(servers["tool"]["args"][0], format!("{}/tools/server.js", project.display()));
    assert_eq!(servers["time"]["args"], json!(["mcp-server-time", "--local-timezone=Europe/Paris"]));
    assert_eq!(servers["docs"], json!({"url": "https://docs.example.com/mcp", "disabled": true}));
    assert!(dry.stderr.contains("set API_TOKEN"), "{}", dry.stderr);

    run_in(&project, mcpx(), &["import", "--config", c, "--yes"], &env, "").ok();
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&cfg).unwrap()).unwrap();
    assert_eq!(written, v, "the written config is what --dry-run printed");
    let again = run_in(&project, mcpx(), &["import", "--config", c, "--yes"], &env, "");
    again.ok();
    assert!(again.stderr.contains("skipped memory from Claude Desktop") && again.stderr.contains("already in"), "{}", again.stderr);
    let path = path_with_stubs(out_dir.path(), &["npx", "uvx", "node"]);
    let check = run_in(&project, mcpx(), &["serve", "--check", "--config", c], &[("API_TOKEN", "t"), ("USER", "u"), ("PATH", &path)], "");
    // Every command is there but the project's own `./bin/db-mcp` (not in the fixture): refused by name.
    assert_eq!(check.code, Some(1), "{}", check.stderr);
    assert_eq!(check.stderr.lines().count(), 1, "{}", check.stderr);
    assert!(check.stderr.contains("server 'project-db': command './bin/db-mcp' not found"), "{}", check.stderr);
}

#[test]
fn add_from_a_server_json_url() {
    let port = free_port();
    let dir = fixture("registry");
    let serve_files = Cmd::new(
        python("1.30.0"),
        &["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1", "--directory", dir.to_str().unwrap()],
    );
    let files = HttpServer::start(&serve_files, port, "");
    let out_dir = TempDir::new();
    let url = format!("{}/pypi.server.json", files.url);
    let path = path_with_stubs(out_dir.path(), &["uvx"]);
    run_in(out_dir.path(), mcpx(), &["add", "--from", &url, "--config", "mcpx.json", "--yes"], &[("NOTES_TOKEN", "t"), ("PATH", &path)], "").ok();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(out_dir.path().join("mcpx.json")).unwrap()).unwrap();
    assert_eq!(v["mcpServers"]["notes"]["command"], "uvx");
    let missing = mcpx_in(out_dir.path(), &["add", "--from", &format!("{}/nope.json", files.url), "--config", "mcpx.json"]);
    assert_eq!(missing.code, Some(2));
    assert!(missing.stderr.contains("HTTP 404"), "{}", missing.stderr);
}

#[test]
fn ctrl_c_cancels_the_call_and_closes_the_session() {
    let hub = example_hub(&["demo"]);
    let server = hub.serve_http();
    let mut call = Command::new(mcpx())
        .args(["call", "demo__slow", r#"{"seconds": 30}"#, "--url", &server.url])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let sessions = || {
        let status = mcpx_in(hub.dir(), &["status", "--url", &server.url, "--json"]).ok().json();
        status["http"]["sessions"].as_u64().unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while sessions() == 0 {
        assert!(Instant::now() < deadline, "the call's session never showed up");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    Command::new("kill").args(["-INT", "--", &call.id().to_string()]).status().unwrap();
    let code = loop {
        if let Some(s) = call.try_wait().unwrap() {
            break s.code();
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "Ctrl-C did not end the call");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(call.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("mcpx: interrupted"), "{err}");
    assert_eq!(sessions(), 0, "the interrupted client's session was not closed");
}

/// The standalone hub is mcpx itself: a config reading mcpx's own
/// variables (here the listener's token) still loads.
#[test]
fn the_standalone_hub_gets_mcpx_variables() {
    let hub = HubConfig::new().upstream(example_server("demo")).set("auth", json!({"bearer": "${MCPX_TOKEN}"})).write();
    let cfg = hub.config.to_str().unwrap();
    let without = mcpx_in(hub.dir(), &["tools", "--config", cfg]);
    assert_eq!(without.code, Some(2), "{}", without.stderr);
    assert!(without.stderr.contains("MCPX_TOKEN"), "{}", without.stderr);
    let with = run_in(hub.dir(), mcpx(), &["call", "demo__greet", r#"{"name": "Env"}"#, "--config", cfg], &[("MCPX_TOKEN", "t0k")], "");
    assert_eq!(with.ok().stdout, "Hello, Env!\n");
}
