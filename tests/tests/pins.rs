//! Pinning of tool definitions (README: "Pinning tools"), through the real
//! binary over HTTP with the Python SDK's client, against
//! `py_pin_server.py` (FastMCP, mcp 1.30.0), whose tools change when asked:
//! with `"pin": "hide"` a rug pull (a description gaining a tag character
//! and an `<IMPORTANT>` block) leaves the list and is unknown to calls,
//! `/status` shows the diff and the findings, `mcpx pin accept` brings it
//! back; a tool that appears later and a rename are held back too. Trust
//! on first use holds across a restart; a lock file shipped with the
//! config is the only trust of another hub; with replicas sharing the
//! pins through Redis, what one pinned first is the trust of another, and
//! an accept on one reaches the other. Over stdio and HTTP, clients of
//! both eras (the Python SDK 1.30 and 2.3 in 2026-07-28 mode, the
//! TypeScript SDK v2 in 2026-07-28 mode) see the changes held back.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::{json, Value};

fn pin_server() -> Upstream {
    let script = driver("py_pin_server.py");
    Upstream { name: "pin".into(), cmd: Cmd::new(python("1.30.0"), &[script.to_str().unwrap()]) }
}

/// The pin server, its changes kept in the file `changes`: every process of
/// it lists the definitions as changed so far (`PIN_SERVER_CHANGES`).
fn pin_server_sharing(changes: &Path) -> Upstream {
    let (script, python) = (driver("py_pin_server.py"), python("1.30.0"));
    let env = format!("PIN_SERVER_CHANGES={}", changes.display());
    Upstream { name: "pin".into(), cmd: Cmd::new("env", &[&env, python.to_str().unwrap(), script.to_str().unwrap()]) }
}

fn script(url: &str, steps: Value) {
    Client::Py("1.30.0").run_url(&["script", &steps.to_string()], url).assert_ok();
}

fn list(expect: &[&str], absent: &[&str]) -> Value {
    json!({"op": "list_tools", "expect_tools": expect, "expect_absent": absent, "retry_for": 15})
}

fn call(tool: &str, args: Value, expect: &str, text: &str) -> Value {
    json!({"op": "call", "tool": tool, "args": args, "expect": expect, "expect_text": text})
}

fn wait_file(p: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !p.exists() {
        assert!(Instant::now() < deadline, "the client never reached {}", p.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `mcpx ARGS --config CONFIG` with the hub's state folder: its stdout.
fn mcpx_pin(hub: &Hub, state: &Path, args: &[&str]) -> String {
    let out = Command::new(mcpx()).args(args).arg("--config").arg(&hub.config).env("XDG_STATE_HOME", state).output().expect("run mcpx");
    assert!(out.status.success(), "mcpx {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn change<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["pins"]["changes"].as_array().and_then(|a| a.iter().find(|c| c["name"] == name)).unwrap_or_else(|| panic!("no change {name} in {status:#}"))
}

#[test]
fn a_rug_pull_is_hidden_shown_on_status_and_accepted() {
    let hub = HubConfig::new().upstream(pin_server()).set("policy", json!({"pin": "hide"})).write();
    let state = TempDir::new();
    let server = hub.serve_http_with_state(state.path());
    let status_url = server.url.replace("/mcp", "/status");
    let (hidden, accepted, done) = (state.path().join("hidden"), state.path().join("accepted"), state.path().join("done"));
    let p = |f: &Path| f.to_str().unwrap().to_string();
    let steps = json!([
        list(&["pin__add", "pin__sub", "pin__mutate"], &[]),
        call("pin__mutate", json!({"what": "describe"}), "ok", "mutated describe"),
        list(&["pin__sub"], &["pin__add"]),
        call("pin__add", json!({"a": 1, "b": 2}), "error", "Unknown tool: pin__add"),
        {"op": "signal", "path": p(&hidden)},
        {"op": "wait_file", "path": p(&accepted), "timeout": 60},
        list(&["pin__add", "pin__sub"], &[]),
        call("pin__add", json!({"a": 1, "b": 2}), "ok", "3"),
        call("pin__mutate", json!({"what": "new"}), "ok", "mutated new"),
        call("pin__mutate", json!({"what": "rename"}), "ok", "mutated rename"),
        list(&["pin__add"], &["pin__extra", "pin__sub", "pin__subtract"]),
        {"op": "signal", "path": p(&done)},
    ]);
    let url = server.url.clone();
    let client = std::thread::spawn(move || Client::Py("1.30.0").run_url(&["script", &steps.to_string()], &url));

    wait_file(&hidden);
    let status = http(&status_url, &[], None).json;
    let add = change(&status, "add");
    assert_eq!((add["change"].clone(), add["hidden"].clone()), (json!("changed"), json!(true)), "{status:#}");
    assert_eq!(add["diff"][0]["field"], "description", "{add}");
    assert_eq!(add["diff"][0]["before"], "Adds two numbers.", "{add}");
    let findings = add["findings"].to_string();
    assert!(findings.contains("Unicode tag characters at /description") && findings.contains("<important>"), "{findings}");
    let metrics = http(&server.url.replace("/mcp", "/metrics"), &[], None).text;
    assert!(metrics.contains("mcpx_pin_changes_total{server=\"pin\",kind=\"tools\"} 1"), "{metrics}");
    assert!(metrics.contains("mcpx_pin_findings_total{server=\"pin\",finding=\"tag\"} 1"), "{metrics}");
    assert!(mcpx_pin(&hub, state.path(), &["pin", "accept", "add"]).contains("accepted pin/add"));
    std::fs::write(&accepted, "").unwrap();

    wait_file(&done);
    let status = http(&status_url, &[], None).json;
    assert_eq!(change(&status, "extra")["change"], "new", "{status:#}");
    let renamed = change(&status, "subtract");
    assert_eq!((renamed["change"].clone(), renamed["renamedFrom"].clone()), (json!("renamed"), json!("sub")), "{renamed}");
    assert!(status["pins"]["changes"].as_array().is_some_and(|a| a.len() == 2), "add was accepted: {status:#}");
    let r = client.join().unwrap();
    r.assert_ok();

    // The pins as a lock file: add as accepted, sub and mutate.
    let lock = hub.dir().join("pins.lock.json");
    assert!(mcpx_pin(&hub, state.path(), &["pin", lock.to_str().unwrap()]).contains("3 definitions pinned"));
    let file: Value = serde_json::from_slice(&std::fs::read(&lock).unwrap()).unwrap();
    let names: Vec<&str> = file["pins"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names, ["add", "mutate", "sub"]);
    assert!(file["pins"][0]["definition"]["description"].as_str().unwrap().contains("<IMPORTANT>"), "accepted as it is now");
}

/// On a listener with named tokens, the status page offers the approver
/// (`policy.approvals.approvers`) an Accept button for each change, and
/// its form (`POST /status`, `accept=SERVER/NAME`) trusts the change: the
/// tool is listed again. bob, who is no approver, gets no button, and his
/// post of the same form changes nothing.
#[test]
fn an_approver_accepts_a_change_with_the_status_pages_button_and_nobody_else_can() {
    let (alice, bob) = ("alice-token", "bob-token");
    let hub = HubConfig::new()
        .upstream(pin_server())
        .set("policy", json!({"pin": "hide", "approvals": {"approvers": ["alice"]}}))
        .set("auth", json!({"tokens": {"alice": alice, "bob": bob}}))
        .write();
    let state = TempDir::new();
    let server = hub.serve_http_with_state(state.path());
    let base = server.url.replace("/mcp", "");
    let as_alice = format!("Authorization: Bearer {alice}");
    let run = |steps: Value| {
        Client::Py("1.30.0").run_url(&["--header", &as_alice, "script", &steps.to_string()], &server.url).assert_ok();
    };
    run(json!([
        list(&["pin__add", "pin__sub", "pin__mutate"], &[]),
        call("pin__mutate", json!({"what": "describe"}), "ok", "mutated describe"),
        list(&["pin__sub"], &["pin__add"]),
    ]));
    let page = |token: &str| http(&format!("{base}/status"), &[("Authorization", &format!("Bearer {token}")), ("Accept", "text/html")], None).text;
    let button = "<form method=\"post\" action=\"/status\"><input type=\"hidden\" name=\"accept\" value=\"pin/add\"><button>Accept pin/add</button></form>";
    assert!(page(alice).contains(button), "{}", page(alice));
    assert!(page(bob).contains("data-change=\"pin/add\"") && !page(bob).contains("<button"), "{}", page(bob));
    // The form as a browser posts it: `/` encoded, same origin.
    let accept = |token: &str| {
        let h = [("Authorization", format!("Bearer {token}")), ("Content-Type", "application/x-www-form-urlencoded".into()), ("Origin", base.clone())];
        let h: Vec<(&str, &str)> = h.iter().map(|(a, b)| (*a, b.as_str())).collect();
        http_request(&format!("{base}/status"), "POST", &h, b"accept=pin%2Fadd")
    };
    let r = accept(bob);
    assert_eq!(r.status, 303, "{}", r.text);
    let status = http(&format!("{base}/status"), &[("Authorization", &format!("Bearer {bob}"))], None).json;
    assert_eq!(change(&status, "add")["hidden"], true, "bob is no approver: {status:#}");
    let r = accept(alice);
    assert_eq!((r.status, r.header("location")), (303, Some("/status")), "{}", r.text);
    run(json!([
        list(&["pin__add", "pin__sub"], &[]),
        call("pin__add", json!({"a": 1, "b": 2}), "ok", "3"),
    ]));
    let status = http(&format!("{base}/status"), &[("Authorization", &format!("Bearer {alice}"))], None).json;
    assert_eq!(status["pins"]["changes"], json!([]), "{status:#}");
}

/// A lock file written from one hub's pins is the only trust of another
/// started afresh with it (its own state folder empty): what it pins is
/// listed from the first listing on, a definition that then changes is
/// held back.
#[test]
fn a_lock_file_shipped_with_the_config_is_trusted_across_a_restart() {
    // The first hub pins on first use; its pins become the lock file.
    let first = HubConfig::new().upstream(pin_server()).set("policy", json!({"pin": "warn"})).write();
    let state = TempDir::new();
    {
        let server = first.serve_http_with_state(state.path());
        let steps = json!([list(&["pin__add", "pin__sub", "pin__mutate"], &[])]);
        Client::Py("1.30.0").run_url(&["script", &steps.to_string()], &server.url).assert_ok();
    }
    let lock = first.dir().join("pins.lock.json");
    assert!(mcpx_pin(&first, state.path(), &["pin", lock.to_str().unwrap()]).contains("3 definitions pinned"));

    // Another hub, nothing in its state folder, the lock file in its config.
    let second = HubConfig::new().upstream(pin_server()).set("policy", json!({"pin": {"mode": "hide", "lockFile": lock}})).write();
    let fresh = TempDir::new();
    let server = second.serve_http_with_state(fresh.path());
    let steps = json!([
        list(&["pin__add", "pin__sub", "pin__mutate"], &[]),
        call("pin__mutate", json!({"what": "describe"}), "ok", "mutated describe"),
        list(&["pin__sub", "pin__mutate"], &["pin__add"]),
        call("pin__add", json!({"a": 1, "b": 2}), "error", "Unknown tool: pin__add"),
    ]);
    Client::Py("1.30.0").run_url(&["script", &steps.to_string()], &server.url).assert_ok();
    let status = http(&server.url.replace("/mcp", "/status"), &[], None).json;
    let add = change(&status, "add");
    assert_eq!((add["change"].clone(), add["hidden"].clone()), (json!("changed"), json!(true)), "{status:#}");
    assert_eq!(status["pins"]["lockFile"], json!(lock.display().to_string()), "{status:#}");
}

/// Trust on first use is kept in the state folder: mcpx restarted after
/// the server's definition changed (while it was down) holds it back.
#[test]
fn trust_on_first_use_holds_across_a_restart() {
    let dir = TempDir::new();
    let changes = dir.path().join("changes");
    let hub = HubConfig::new().upstream(pin_server_sharing(&changes)).set("policy", json!({"pin": "hide"})).write();
    let state = TempDir::new();
    let mut server = hub.serve_http_with_state(state.path());
    script(&server.url, json!([list(&["pin__add", "pin__sub", "pin__mutate"], &[])]));
    server.kill();
    std::fs::write(&changes, "describe\n").unwrap();
    server.restart();
    script(&server.url, json!([
        list(&["pin__sub", "pin__mutate"], &["pin__add"]),
        call("pin__add", json!({"a": 1, "b": 2}), "error", "Unknown tool: pin__add"),
    ]));
    let status = http(&server.url.replace("/mcp", "/status"), &[], None).json;
    let add = change(&status, "add");
    assert_eq!((add["change"].clone(), add["hidden"].clone()), (json!("changed"), json!(true)), "{status:#}");
    assert_eq!(add["diff"][0]["before"], "Adds two numbers.", "{add}");
}

/// Two replicas sharing the pins through Redis (`state.url` and the same
/// key), each with its own state folder and its own process of the
/// server: what A pinned on first use is B's trust, though B never listed
/// before; the server's rug pull is held back on B from its first listing;
/// `mcpx pin accept` on A's state folder lists it on B.
#[test]
fn replicas_share_pins_a_rug_pull_is_held_back_on_a_replica_that_never_listed_until_accepted_on_another() {
    let (_redis, port) = redis_server();
    let dir = TempDir::new();
    let key = dir.path().join("state.key");
    std::fs::write(&key, "2a".repeat(32)).unwrap();
    let changes = dir.path().join("changes");
    let replica = || {
        HubConfig::new()
            .upstream(pin_server_sharing(&changes))
            .set("policy", json!({"pin": "hide"}))
            .set("state", json!({"url": format!("redis://127.0.0.1:{port}/0"), "keyFile": key}))
            .write()
    };
    let (hub_a, hub_b) = (replica(), replica());
    let (state_a, state_b) = (TempDir::new(), TempDir::new());
    let a = hub_a.serve_http_with_state(state_a.path());
    // A lists first: pinned for every replica. Then the server changes add
    // (its processes behind both replicas), which A holds back.
    script(&a.url, json!([
        list(&["pin__add", "pin__sub", "pin__mutate"], &[]),
        call("pin__mutate", json!({"what": "describe"}), "ok", "mutated describe"),
        list(&["pin__sub", "pin__mutate"], &["pin__add"]),
    ]));
    // B starts now: its first listing has the changed add, and A's pins.
    let b = hub_b.serve_http_with_state(state_b.path());
    script(&b.url, json!([
        list(&["pin__sub", "pin__mutate"], &["pin__add"]),
        call("pin__add", json!({"a": 1, "b": 2}), "error", "Unknown tool: pin__add"),
    ]));
    let status_b = b.url.replace("/mcp", "/status");
    let status = http(&status_b, &[], None).json;
    let add = change(&status, "add");
    assert_eq!((add["change"].clone(), add["hidden"].clone()), (json!("changed"), json!(true)), "{status:#}");
    assert_eq!(add["diff"][0]["before"], "Adds two numbers.", "A's pin: {add}");
    assert_eq!(status["pins"]["pinned"], 3, "{status:#}");
    // Accepted on A's state folder: listed on B within a poll.
    assert!(mcpx_pin(&hub_a, state_a.path(), &["pin", "accept", "add"]).contains("accepted pin/add"));
    script(&b.url, json!([
        list(&["pin__add", "pin__sub", "pin__mutate"], &[]),
        call("pin__add", json!({"a": 1, "b": 2}), "ok", "3"),
    ]));
    assert_eq!(http(&status_b, &[], None).json["pins"]["changes"], json!([]));
    // B's state folder holds the shared pins: `mcpx pin` there writes them as a lock file.
    let lock = hub_b.dir().join("pins.lock.json");
    assert!(mcpx_pin(&hub_b, state_b.path(), &["pin", lock.to_str().unwrap()]).contains("3 definitions pinned"));
    let file: Value = serde_json::from_slice(&std::fs::read(&lock).unwrap()).unwrap();
    assert!(file["pins"][0]["definition"]["description"].as_str().unwrap().contains("<IMPORTANT>"), "add as accepted on A: {file}");
}

/// `client` over stdio (or Streamable HTTP): the first listing is
/// trusted, then each change is held back. (Lists carry no caching hint here: a 2026-07-28 client keeps
/// a list for its `ttlMs` and hears of changes only on a listen stream,
/// which the driver does not open; a call is refused either way.)
fn changes_are_held_back(client: Client, http: bool) {
    let hub = HubConfig::new().upstream(pin_server()).set("policy", json!({"pin": "hide"})).set("cacheTtlMs", json!(0)).write();
    let steps = json!([
        list(&["pin__add", "pin__sub", "pin__mutate"], &[]),
        call("pin__add", json!({"a": 1, "b": 2}), "ok", "3"),
        call("pin__mutate", json!({"what": "describe"}), "ok", "mutated describe"),
        list(&["pin__sub"], &["pin__add"]),
        call("pin__add", json!({"a": 1, "b": 2}), "error", "Unknown tool: pin__add"),
        call("pin__mutate", json!({"what": "new"}), "ok", "mutated new"),
        call("pin__mutate", json!({"what": "rename"}), "ok", "mutated rename"),
        list(&["pin__mutate"], &["pin__add", "pin__extra", "pin__sub", "pin__subtract"]),
        call("pin__subtract", json!({"a": 3, "b": 1}), "error", "Unknown tool: pin__subtract"),
    ]);
    let steps = steps.to_string();
    let report = if http { client.run_url(&["script", &steps], &hub.serve_http().url) } else { client.run(&["script", &steps], &hub.serve()) };
    report.assert_ok();
}

#[test]
fn py_1_30_0_on_stdio_sees_changes_held_back() {
    changes_are_held_back(Client::Py("1.30.0"), false);
}

#[test]
fn py_2_3_0_in_2026_07_28_on_stdio_sees_changes_held_back() {
    changes_are_held_back(Client::Py2Mode("2026-07-28"), false);
}

#[test]
fn ts_v2_in_2026_07_28_over_http_sees_changes_held_back() {
    changes_are_held_back(Client::TsV2("2026-07-28"), true);
}
