//! The operator's commands (issue 28) through the real binary: `mcpx
//! restart NAME` restarts one server of a running hub at once, a server
//! the restart loop gave up on included, for operators only; `mcpx disable
//! NAME` and `mcpx enable NAME` edit the config file, and the running hub's
//! reload stops and starts the server (`/status` shows it disabled).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);

/// `mcpx args` with `env`: exit code, stdout, stderr.
fn mcpx_run(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(mcpx());
    cmd.args(args).env_remove("MCPX_TOKEN").env_remove("MCPX_URL").env_remove("MCPX_LOG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

/// `/status` of the hub at `base` (with `token`, if any), until `ok` holds.
fn status_when(base: &str, token: Option<&str>, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    let deadline = Instant::now() + WAIT;
    loop {
        let st = http(&format!("{base}/status"), &headers, None).json;
        if ok(&st) {
            return st;
        }
        assert!(Instant::now() < deadline, "{what}: {st:#}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn server<'a>(st: &'a Value, name: &str) -> &'a Value {
    st["upstreams"].as_array().and_then(|a| a.iter().find(|u| u["name"] == name)).unwrap_or(&Value::Null)
}

/// A server that fails until the file `flag` exists, then is the example server.
fn flaky_entry(flag: &Path) -> Value {
    let script = format!("test -f '{}' && exec '{}' example-server --name flaky; exit 1", flag.display(), mcpx().display());
    json!({ "command": "/bin/sh", "args": ["-c", script], "maxRestarts": 1 })
}

#[test]
fn restart_is_immediate_wakes_a_server_given_up_and_is_for_operators_only() {
    let dir = TempDir::new();
    let flag = dir.path().join("fixed");
    let demo = example_server_cmd("demo");
    let config = json!({
        "mcpServers": { "demo": { "command": demo.program, "args": demo.args }, "flaky": flaky_entry(&flag) },
        "auth": { "tokens": { "alice": "alice-token", "bob": "bob-token" }, "operators": ["token:alice"] }
    });
    let path = dir.path().join("mcpx.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let _hub = HttpServer::start(&Cmd::new(mcpx(), &["serve", "--config", path.to_str().unwrap(), "--http", &addr]), port, "/mcp");
    let base = format!("http://{addr}");
    let url = format!("{base}/mcp");

    // The restart loop gives flaky up after 2 attempts.
    status_when(&base, Some("bob-token"), "flaky given up", |st| server(st, "flaky")["gaveUpAfter"] == 2);
    std::fs::write(&flag, "").unwrap();

    // Not without a token, not for a principal that is no operator.
    let (code, _, err) = mcpx_run(&["restart", "flaky", "--url", &url], &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("HTTP 401"), "{err}");
    let (code, _, err) = mcpx_run(&["restart", "flaky", "--url", &url, "--token", "bob-token"], &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("takes an operator's token"), "{err}");
    assert_eq!(server(&status_when(&base, Some("bob-token"), "still given up", |_| true), "flaky")["state"], "failed");

    // An operator's restart starts it again at once (MCPX_URL and MCPX_TOKEN as for the other commands).
    let t0 = Instant::now();
    let (code, out, err) = mcpx_run(&["restart", "flaky"], &[("MCPX_URL", &url), ("MCPX_TOKEN", "alice-token")]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim(), "restarting server flaky");
    status_when(&base, Some("alice-token"), "flaky ready after the restart", |st| server(st, "flaky")["state"] == "ready");
    assert!(t0.elapsed() < Duration::from_secs(10), "took {:?}", t0.elapsed());

    // A running server restarts too, and is ready again.
    let before = server(&status_when(&base, Some("alice-token"), "demo ready", |st| server(st, "demo")["state"] == "ready"), "demo")["starts"].clone();
    let (code, _, err) = mcpx_run(&["restart", "demo", "--url", &url, "--token", "alice-token"], &[]);
    assert_eq!(code, Some(0), "{err}");
    status_when(&base, Some("alice-token"), "demo started again", |st| {
        let d = server(st, "demo");
        d["state"] == "ready" && d["starts"].as_u64() > before.as_u64()
    });

    // A name it does not have.
    let (code, _, err) = mcpx_run(&["restart", "nope", "--url", &url, "--token", "alice-token"], &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("no server named 'nope'"), "{err}");
    // Without a running hub to reach.
    let (code, _, err) = mcpx_run(&["restart", "demo"], &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("give its --url"), "{err}");
}

#[test]
fn disable_and_enable_stop_and_start_a_server_through_the_reload() {
    let hub = HubConfig::new().upstream(example_server("demo")).upstream(example_server("extra")).write();
    let cfg = hub.config.to_str().unwrap();
    let written = std::fs::read_to_string(&hub.config).unwrap();
    let served = hub.serve_http();
    let base = served.url.trim_end_matches("/mcp").to_string();
    let tools = || mcpx_run(&["tools", "--url", &served.url], &[]).1;
    status_when(&base, None, "both ready", |st| server(st, "extra")["state"] == "ready" && server(st, "demo")["state"] == "ready");
    assert!(tools().contains("extra__echo"));

    let (code, out, err) = mcpx_run(&["disable", "extra", "--config", cfg], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("disabled server extra"), "{out}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&hub.config).unwrap()).unwrap();
    assert_eq!(v["mcpServers"]["extra"]["disabled"], true);
    let st = status_when(&base, None, "extra disabled", |st| server(st, "extra")["state"] == "disabled");
    assert_eq!(server(&st, "demo")["state"], "ready");
    assert!(!tools().contains("extra__"), "{}", tools());
    let (code, out, err) = mcpx_run(&["serve", "--check", "--config", cfg], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("(1 server(s), 1 disabled: extra)"), "{out}");
    // Said once more: nothing to do.
    let (code, out, _) = mcpx_run(&["disable", "extra", "--config", cfg], &[]);
    assert_eq!((code, out.trim()), (Some(0), format!("server extra is disabled already in {cfg}").as_str()));

    let (code, _, err) = mcpx_run(&["enable", "extra", "--config", cfg], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read_to_string(&hub.config).unwrap(), written, "enable gives the file back");
    status_when(&base, None, "extra enabled", |st| server(st, "extra")["state"] == "ready");
    assert!(tools().contains("extra__echo"));

    let (code, _, err) = mcpx_run(&["disable", "nope", "--config", cfg], &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("no server named \"nope\""), "{err}");
}
