//! Live config (issue 15): `mcpx serve` applies a changed config file while
//! one client session stays open and keeps calling, refuses a broken one,
//! and reloads on SIGHUP. Lazy start and idle stop, with their lists kept
//! on disk between runs.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);

/// Every version of the config file has this length (spaces at the end),
/// so that a rewrite in place can hide from the file watch (see the SIGHUP test).
const CONFIG_LEN: usize = 4096;

/// The config file's text: `demo` always, `extra` as given (its whole entry).
fn config_text(extra: Option<Value>) -> Vec<u8> {
    let demo = example_server_cmd("demo");
    let mut servers = json!({ "demo": { "command": demo.program, "args": demo.args } });
    if let Some(e) = extra {
        servers["extra"] = e;
    }
    let mut text = serde_json::to_vec_pretty(&json!({ "mcpServers": servers })).unwrap();
    assert!(text.len() < CONFIG_LEN);
    text.resize(CONFIG_LEN, b' ');
    text
}

/// Writes the config beside and renames it over, as editors save: the hub
/// never reads half a file.
fn write_config(path: &Path, extra: Option<Value>) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, config_text(extra)).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn extra_entry(tools_allow: Option<&[&str]>) -> Value {
    let cmd = example_server_cmd("extra");
    let mut e = json!({ "command": cmd.program, "args": cmd.args });
    if let Some(allow) = tools_allow {
        e["tools"] = json!({ "allow": allow });
    }
    e
}

/// `mcpx serve` on stdio (one session) and on HTTP (for `/status`).
struct Served {
    session: RawSession,
    port: u16,
    config: std::path::PathBuf,
    _dir: TempDir,
}

fn serve(extra: Option<Value>) -> Served {
    serve_with_state(extra, None)
}

/// [`serve`] with `XDG_STATE_HOME` set to `state` (where lazy servers'
/// lists are kept).
fn serve_with_state(extra: Option<Value>, state: Option<&Path>) -> Served {
    let dir = TempDir::new();
    let config = dir.path().join("mcpx.json");
    write_config(&config, extra);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let state = format!("XDG_STATE_HOME={}", state.map_or(dir.path(), |s| s).display());
    let mcpx = mcpx().to_str().unwrap();
    let cmd = Cmd::new("env", &[&state, mcpx, "serve", "--config", config.to_str().unwrap(), "--stdio", "--http", &addr]);
    let mut session = RawSession::spawn(&cmd);
    session.initialize("2025-11-25");
    Served { session, port, config, _dir: dir }
}

impl Served {
    fn status(&self) -> Value {
        let deadline = Instant::now() + WAIT;
        let mut s = loop {
            match TcpStream::connect(("127.0.0.1", self.port)) {
                Ok(s) => break s,
                Err(e) => {
                    assert!(Instant::now() < deadline, "no HTTP listener on {}: {e}", self.port);
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        };
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let req = format!(
            "GET /status HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
            self.port
        );
        s.write_all(req.as_bytes()).unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        let body = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        serde_json::from_str(body).unwrap_or_else(|e| panic!("/status is not JSON ({e}): {raw}"))
    }

    /// Polls `/status` (30 s at most) until `ok` holds; returns it.
    fn status_when(&self, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let st = self.status();
            if ok(&st) {
                return st;
            }
            assert!(Instant::now() < deadline, "{what}: {st:#}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn tools(&mut self) -> Vec<String> {
        let id = self.session.request("tools/list", json!({}));
        let r = self.session.response_to(id, WAIT);
        let tools = r["result"]["tools"].as_array().unwrap_or_else(|| panic!("tools/list: {r}"));
        tools.iter().filter_map(|t| t["name"].as_str().map(String::from)).collect()
    }

    /// A call to `demo`, which every reload leaves alone: it must answer.
    fn call_demo(&mut self, n: usize) {
        let text = format!("still here {n}");
        let id = self.session.request("tools/call", json!({ "name": "demo__echo", "arguments": { "text": text } }));
        let r = self.session.response_to(id, WAIT);
        assert!(texts(&r["result"]).contains(&text), "demo__echo across a reload: {r}");
    }

    /// Keeps calling `demo` until the tool list satisfies `ok` (30 s at most).
    fn calling_until(&mut self, what: &str, ok: impl Fn(&[String]) -> bool) -> Vec<String> {
        let deadline = Instant::now() + WAIT;
        for n in 0.. {
            self.call_demo(n);
            let tools = self.tools();
            if ok(&tools) {
                return tools;
            }
            assert!(Instant::now() < deadline, "{what}: tools are still {tools:?}; stderr:\n{}", self.session.finish());
            std::thread::sleep(Duration::from_millis(100));
        }
        unreachable!()
    }

    /// Starts a 10 s call to `extra__slow` and returns its id.
    fn slow_call_to_extra(&mut self) -> i64 {
        self.session.request("tools/call", json!({ "name": "extra__slow", "arguments": { "seconds": 10 } }))
    }

    /// The answer to `id`, which must be an error naming `extra` and `why`,
    /// well before the call's own 10 s.
    fn fails_saying(&mut self, id: i64, why: &str) {
        let t0 = Instant::now();
        let r = self.session.response_to(id, WAIT);
        let msg = r["error"]["message"].as_str().unwrap_or_else(|| panic!("an error: {r}"));
        assert!(msg.contains("'extra'") && msg.contains(why), "{r}");
        assert!(t0.elapsed() < Duration::from_secs(8), "answered only after {:?}", t0.elapsed());
    }
}

fn has(tools: &[String], name: &str) -> bool {
    tools.iter().any(|t| t == name)
}

// covers: tools-list-changed-notify
#[test]
fn a_session_stays_open_across_three_reloads_while_calling() {
    let mut s = serve(None);
    let first = s.calling_until("demo up", |t| has(t, "demo__echo"));
    assert!(!first.iter().any(|t| t.starts_with("extra__")), "{first:?}");

    // 1. Added: `extra` starts, the client is told, its tools appear.
    write_config(&s.config, Some(extra_entry(None)));
    let tools = s.calling_until("extra added", |t| has(t, "extra__echo") && has(t, "extra__slow"));
    assert!(has(&tools, "demo__echo"));
    assert_eq!(s.status()["config"]["reloads"], 1);

    // 2. Changed (only `echo` and `slow` allowed now): `extra` restarts with
    //    the new entry; its call in flight is answered at once, saying why.
    let slow = s.slow_call_to_extra();
    std::thread::sleep(Duration::from_millis(300));
    write_config(&s.config, Some(extra_entry(Some(&["echo", "slow"]))));
    s.fails_saying(slow, "its configuration changed");
    let tools = s.calling_until("extra changed", |t| {
        let extra: Vec<&String> = t.iter().filter(|n| n.starts_with("extra__")).collect();
        extra.len() == 2 && has(t, "extra__echo") && has(t, "extra__slow")
    });
    assert!(has(&tools, "demo__echo"));
    let id = s.session.request("tools/call", json!({ "name": "extra__echo", "arguments": { "text": "new" } }));
    assert!(texts(&s.session.response_to(id, WAIT)["result"]).contains("new"));

    // 3. Removed: `extra` stops; its call in flight is answered at once.
    let slow = s.slow_call_to_extra();
    std::thread::sleep(Duration::from_millis(300));
    write_config(&s.config, None);
    s.fails_saying(slow, "removed from the configuration");
    s.calling_until("extra removed", |t| !t.iter().any(|n| n.starts_with("extra__")));
    // The reload is done once the removed server's process has stopped.
    let st = s.status_when("the third reload is done", |st| st["config"]["reloads"] == 3);
    let names: Vec<&str> = st["upstreams"].as_array().unwrap().iter().filter_map(|u| u["name"].as_str()).collect();
    assert_eq!(names, ["demo"], "{st:#}");
    // The one session saw it all: the same client, never re-initialized.
    assert_eq!(st["clients"].as_array().map(|c| c.iter().filter(|c| c["initialized"] == true).count()), Some(1), "{st:#}");

    // The list changes were announced to the session.
    let stderr = s.session.finish();
    assert!(stderr.contains("config reloaded: added extra"), "{stderr}");
    assert!(stderr.contains("restarted extra"), "{stderr}");
    assert!(stderr.contains("removed extra"), "{stderr}");
    // One line for each server, saying what happens to it (issue 28).
    let about: Vec<&str> = stderr.lines().filter_map(|l| l.split_once("info: server extra: ").map(|(_, m)| m)).collect();
    assert_eq!(
        about,
        ["added to the configuration", "its configuration changed; restarting it with its new configuration", "removed from the configuration; stopping it"],
        "{stderr}"
    );
}

#[test]
fn list_changed_reaches_the_session_on_a_reload() {
    let mut s = serve(None);
    s.calling_until("demo up", |t| has(t, "demo__echo"));
    write_config(&s.config, Some(extra_entry(None)));
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let m = s.session.next_message(left).unwrap_or_else(|| panic!("no list_changed; stderr:\n{}", s.session.finish()));
        if m["method"] == "notifications/tools/list_changed" {
            break;
        }
    }
    assert!(has(&s.tools(), "extra__echo"));
}

/// `extra`'s entry, run under a shell that stays (ignoring SIGTERM) for
/// 30 s after the server ends: stopping it takes the hub's whole stop
/// sequence (its grace after stdin closes, again after SIGTERM, SIGKILL).
fn lingering_extra_entry() -> Value {
    let cmd = example_server_cmd("extra");
    let line = format!("trap '' TERM; '{}' {}; sleep 30", cmd.program.display(), cmd.args.join(" "));
    json!({ "command": "sh", "args": ["-c", line] })
}

#[test]
fn a_broken_config_is_refused_and_the_old_one_keeps_serving() {
    // `extra` is slow to stop, so the tools change while its stop still runs.
    let mut s = serve(Some(lingering_extra_entry()));
    s.calling_until("both up", |t| has(t, "demo__echo") && has(t, "extra__echo"));

    // Not JSON: refused whole, with the place of the error.
    std::fs::write(&s.config, "{\n  \"mcpServers\": {\n    \"demo\": {\"command\": \n").unwrap();
    let st = s.status_when("not refused", |st| st["config"]["refused"].is_string());
    let refused = st["config"]["refused"].as_str().unwrap().to_string();
    let file = s.config.display().to_string();
    let place = refused.strip_prefix(&format!("{file}:")).and_then(|r| r.split_once(": invalid JSON"));
    let line_col: Vec<&str> = place.map_or(vec![], |(at, _)| at.split(':').collect());
    assert!(
        line_col.len() == 2 && line_col.iter().all(|n| n.parse::<u32>().is_ok()),
        "file:line:col: invalid JSON ...: {refused}"
    );
    // Valid JSON the hub refuses (two servers, one prefix): refused too.
    let cmd = example_server_cmd("x");
    let clash = json!({ "mcpServers": {
        "demo": { "command": cmd.program, "args": cmd.args },
        "other": { "command": cmd.program, "args": cmd.args, "prefix": "demo" } } });
    std::fs::write(&s.config, serde_json::to_vec_pretty(&clash).unwrap()).unwrap();
    s.status_when("the prefix clash was not refused", |st| st["config"]["refused"].as_str().is_some_and(|r| r.contains("prefix")));
    // The old config still serves, both servers.
    let tools = s.calling_until("still serving", |t| has(t, "extra__echo"));
    assert!(has(&tools, "demo__echo"));
    let st = s.status();
    assert_eq!(st["config"]["reloads"], 0, "{st:#}");
    assert_eq!(st["upstreams"].as_array().map(Vec::len), Some(2), "{st:#}");
    // A good config again is taken, and the refusal is cleared at once,
    // while `extra` is still being stopped.
    write_config(&s.config, None);
    s.calling_until("fixed config applied", |t| !has(t, "extra__echo"));
    let st = s.status();
    assert!(st["config"]["refused"].is_null(), "{st:#}");
    let stderr = s.session.finish();
    assert!(stderr.contains(&format!("{}: invalid JSON", refused.split(": invalid JSON").next().unwrap())), "the log names the place: {stderr}");
    assert!(stderr.contains("config refused; still serving the one loaded before"), "{stderr}");
}

#[test]
fn sighup_reloads_without_ending_the_session() {
    let mut s = serve(None);
    s.calling_until("demo up", |t| has(t, "demo__echo"));
    // A change the file watch cannot see (same size, inode and mtime): only
    // SIGHUP brings it in.
    let before = std::fs::metadata(&s.config).unwrap().modified().unwrap();
    {
        let mut f = std::fs::OpenOptions::new().write(true).open(&s.config).unwrap();
        f.write_all(&config_text(Some(extra_entry(None)))).unwrap();
        f.set_modified(before).unwrap();
    }
    std::thread::sleep(Duration::from_millis(2500));
    assert!(!has(&s.tools(), "extra__echo"), "reloaded without SIGHUP although the file looks unchanged");
    let pid = s.session.pid().to_string();
    let kill = std::process::Command::new("kill").args(["-HUP", &pid]).status().unwrap();
    assert!(kill.success());
    s.calling_until("reloaded on SIGHUP", |t| has(t, "extra__echo"));
    assert_eq!(s.status()["config"]["reloads"], 1);
    let stderr = s.session.finish();
    assert!(stderr.contains("reloading the config (asked for)"), "{stderr}");
}

/// Server `name` in a `/status` snapshot (`null` when it is not there).
fn upstream_of(st: &Value, name: &str) -> Value {
    let found = st["upstreams"].as_array().and_then(|a| a.iter().find(|u| u["name"] == name));
    found.cloned().unwrap_or(Value::Null)
}

/// `extra`, started at its first use and stopped after 1.5 s without one.
fn lazy_extra() -> Value {
    let mut e = extra_entry(None);
    e["lazy"] = json!(true);
    e["idleStopMs"] = json!(1500);
    e
}

impl Served {
    fn upstream(&self, name: &str) -> Value {
        upstream_of(&self.status(), name)
    }

    /// Waits (30 s at most) until server `name` is in `state`; returns it.
    fn until_state(&self, name: &str, state: &str) -> Value {
        self.status_when(&format!("{name} is not {state}"), |st| upstream_of(st, name)["state"] == state);
        self.upstream(name)
    }

    fn echo(&mut self, tool: &str, text: &str) -> Value {
        let id = self.session.request("tools/call", json!({ "name": tool, "arguments": { "text": text } }));
        self.session.response_to(id, WAIT)
    }
}

#[test]
fn an_idle_server_stops_and_starts_again_on_its_next_call() {
    let state = TempDir::new();
    let mut s = serve_with_state(Some(lazy_extra()), Some(state.path()));
    // Its lists are not known yet: it runs once to learn them, then sleeps.
    s.calling_until("extra listed", |t| has(t, "extra__echo"));
    let asleep = s.until_state("extra", "asleep");
    assert_eq!(asleep["starts"], 1, "{asleep:#}");
    // Asleep, its tools are still listed; a call starts it and is answered.
    assert!(has(&s.tools(), "extra__echo"));
    let r = s.echo("extra__echo", "wake up");
    assert!(texts(&r["result"]).contains("wake up"), "{r}");
    let up = s.upstream("extra");
    assert_eq!((up["state"].as_str(), up["starts"].as_u64()), (Some("ready"), Some(2)), "{up:#}");
    // demo (not lazy, no idle stop) never sleeps.
    s.until_state("extra", "asleep");
    assert_eq!(s.upstream("demo")["state"], "ready");
    let stderr = s.session.finish();
    assert!(stderr.contains("idle for 1500 ms; stopping it until it is used"), "{stderr}");
    assert!(stderr.contains("starting it for a request (lazy start)"), "{stderr}");
}

#[test]
fn a_lazy_server_is_known_from_its_last_run_without_starting() {
    let state = TempDir::new();
    {
        let mut first = serve_with_state(Some(lazy_extra()), Some(state.path()));
        first.calling_until("extra listed", |t| has(t, "extra__echo"));
        first.until_state("extra", "asleep");
        first.session.finish();
    }
    let mut s = serve_with_state(Some(lazy_extra()), Some(state.path()));
    let up = s.upstream("extra");
    assert_eq!((up["state"].as_str(), up["starts"].as_u64()), (Some("asleep"), Some(0)), "{up:#}");
    let tools = s.tools();
    assert!(has(&tools, "extra__echo") && has(&tools, "demo__echo"), "{tools:?}");
    // The first call starts it and waits for it.
    let r = s.echo("extra__echo", "first use");
    assert!(texts(&r["result"]).contains("first use"), "{r}");
    assert_eq!(s.upstream("extra")["starts"], 1);
    // Another command line for it (the demo catalog: no `slow`): what was
    // kept is not used; it starts to be listed.
    let mut demo_catalog = lazy_extra();
    demo_catalog["args"].as_array_mut().unwrap().push(json!("--demo"));
    write_config(&s.config, Some(demo_catalog));
    s.calling_until("extra with the demo catalog", |t| has(t, "extra__current_time") && !has(t, "extra__slow"));
    let stderr = s.session.finish();
    assert!(stderr.contains("its lists are known from when it last ran"), "{stderr}");
    assert!(stderr.contains("lazy, but its lists are not known yet"), "{stderr}");
}
