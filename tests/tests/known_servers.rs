//! A configured server is never "unknown" (issue 24): while it starts
//! slower than clients' `initialize` hold, or restarts because its entry
//! changed, its tools are listed as last known and calls to it wait for
//! it; clients, `mcpx tools` and `/status` are told it is not ready.
//! The server is `mcpx example-server` behind `sh`, which sleeps `$DELAY`
//! seconds before starting it.

use std::path::Path;
use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);

/// Server `calc` (example-server), up `delay` seconds after it is started.
fn slow_calc(delay: &str) -> Value {
    let cmd = example_server_cmd("calc");
    let mut args = vec!["-c".to_string(), "sleep \"$DELAY\"; exec \"$0\" \"$@\"".to_string(), cmd.program.display().to_string()];
    args.extend(cmd.args);
    json!({ "command": "sh", "args": args, "env": { "DELAY": delay } })
}

/// Writes the config beside and renames it over, as editors save.
fn write_config(path: &Path, cfg: &Value) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(cfg).unwrap()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn status(port: u16) -> Value {
    http(&format!("http://127.0.0.1:{port}/status"), &[("Accept", "application/json")], None).json
}

/// `calc` in `/status`.
fn calc_status(port: u16) -> Value {
    let st = status(port);
    st["upstreams"].as_array().and_then(|a| a.iter().find(|u| u["name"] == "calc").cloned()).unwrap_or(Value::Null)
}

fn tools(s: &mut RawSession) -> Vec<String> {
    let id = s.request("tools/list", json!({}));
    let r = s.response_to(id, WAIT);
    r["result"]["tools"].as_array().unwrap_or_else(|| panic!("tools/list: {r}")).iter().filter_map(|t| t["name"].as_str().map(String::from)).collect()
}

#[test]
fn a_server_restarted_by_a_config_edit_stays_listed_and_its_calls_wait_for_it() {
    let dir = TempDir::new();
    let config = dir.path().join("mcpx.json");
    write_config(&config, &json!({ "mcpServers": { "calc": slow_calc("0") } }));
    let port = free_port();
    let (state, addr) = (format!("XDG_STATE_HOME={}", dir.path().display()), format!("127.0.0.1:{port}"));
    let cmd = Cmd::new("env", &[&state, mcpx().to_str().unwrap(), "serve", "--config", config.to_str().unwrap(), "--stdio", "--http", &addr]);
    let mut s = RawSession::spawn(&cmd);
    s.initialize("2025-11-25");
    let t0 = Instant::now();
    while !tools(&mut s).contains(&"calc__echo".to_string()) {
        assert!(t0.elapsed() < WAIT, "calc never listed");
        std::thread::sleep(Duration::from_millis(100));
    }

    // Its entry changes: it restarts, and now takes 1.5 s to come up.
    write_config(&config, &json!({ "mcpServers": { "calc": slow_calc("1.5") } }));
    // A client calls it ten times a second meanwhile.
    let (mut sent, mut answers, mut list_changed) = (Vec::new(), Vec::new(), 0);
    let mut read = |s: &mut RawSession, for_ms: u64, answers: &mut Vec<Value>| {
        let until = Instant::now() + Duration::from_millis(for_ms);
        while let Some(m) = s.next_message(until.saturating_duration_since(Instant::now())) {
            if m["method"] == "notifications/tools/list_changed" {
                list_changed += 1;
            } else if m.get("id").is_some() && m.get("method").is_none() {
                answers.push(m);
            }
        }
    };
    let t0 = Instant::now();
    let mut n = 0;
    while t0.elapsed() < Duration::from_secs(6) {
        n += 1;
        sent.push(s.request("tools/call", json!({ "name": "calc__echo", "arguments": { "text": format!("call {n}") } })));
        read(&mut s, 100, &mut answers);
    }
    let t1 = Instant::now();
    while answers.len() < sent.len() && t1.elapsed() < WAIT {
        read(&mut s, 200, &mut answers);
    }
    assert_eq!(answers.len(), sent.len(), "every call is answered: {answers:?}");
    let unknown: Vec<&Value> = answers.iter().filter(|a| a.to_string().contains("Unknown tool")).collect();
    assert!(unknown.is_empty(), "{} of {} calls were told 'Unknown tool': {unknown:?}", unknown.len(), answers.len());
    // Each call was served (waiting for the restart), or, if it was in
    // flight to the old process, told why it ended.
    let failed: Vec<&Value> = answers.iter().filter(|a| a.get("result").is_none()).collect();
    assert!(failed.iter().all(|a| a.to_string().contains("its configuration changed")), "{failed:?}");
    assert!(failed.len() <= 1, "{failed:?}");
    assert_eq!(list_changed, 0, "the same tools after the restart: no list_changed");
    // It did restart, in its place, while it was called.
    assert_eq!(status(port)["config"]["reloads"], 1);
    let calc = calc_status(port);
    assert_eq!(calc["starts"], 2, "{calc:#}");
    assert!(tools(&mut s).contains(&"calc__echo".to_string()));
}

#[test]
fn a_server_slower_than_the_initialize_hold_is_named_its_calls_wait_and_its_tools_are_known_next_time() {
    let dir = TempDir::new();
    let cfg = json!({ "mcpServers": { "demo": { "command": mcpx(), "args": ["example-server", "--demo"] }, "calc": slow_calc("6") }, "startupWaitMs": 1000 });
    let config = dir.path().join("mcpx.json");
    write_config(&config, &cfg);
    let port = free_port();
    let (state, addr) = (format!("XDG_STATE_HOME={}", dir.path().display()), format!("127.0.0.1:{port}"));
    let cmd = Cmd::new("env", &[&state, mcpx().to_str().unwrap(), "serve", "--config", config.to_str().unwrap(), "--http", &addr]);
    let mut server = HttpServer::start(&cmd, port, "/mcp");
    let url = server.url.clone();
    let mcpx_tools = || run_argv(&[mcpx().display().to_string(), "tools".into(), "--url".into(), url.clone()], WAIT);

    // `initialize` waits 1 s (startupWaitMs), not until calc is up; the
    // answer names calc as starting, and `mcpx tools` says so.
    let t0 = Instant::now();
    let first = mcpx_tools();
    assert!(t0.elapsed() < Duration::from_secs(4), "answered after {:?}", t0.elapsed());
    assert!(first.stdout.contains("demo__echo"), "{}", first.stdout);
    assert!(!first.stdout.contains("calc__"), "{}", first.stdout);
    assert!(first.stderr.contains("calc: starting (tools not known yet)"), "{}", first.stderr);
    let calc = calc_status(port);
    assert_eq!((calc["state"].as_str(), calc["toolsKnown"].as_bool()), (Some("starting"), Some(false)), "{calc:#}");

    // A call to calc is no unknown tool: it waits for calc and is served.
    let call = run_argv(&[mcpx().display().to_string(), "call".into(), "calc__echo".into(), r#"{"text": "waited"}"#.into(), "--url".into(), url.clone()], WAIT);
    assert!(call.stdout.contains("waited"), "stdout: {}\nstderr: {}", call.stdout, call.stderr);
    assert_eq!(calc_status(port)["state"], "ready");

    // The next start of mcpx knows calc's tools (kept on disk) and lists
    // them while calc starts again.
    server.restart();
    let t0 = Instant::now();
    let again = mcpx_tools();
    assert!(t0.elapsed() < Duration::from_secs(4), "answered after {:?}", t0.elapsed());
    assert!(again.stdout.contains("calc__echo") && again.stdout.contains("demo__echo"), "{}", again.stdout);
    assert!(again.stderr.contains("calc: starting (tools as last listed)"), "{}", again.stderr);
}
