//! Size limits end to end, against real server processes: a reply over the
//! stdio line cap is answered at once with an error naming the server and
//! the limit (the edge build's 1 MiB cap: a 700 KB text echoed twice), and
//! the server keeps serving; the same for a remote server's SSE event over
//! the same cap. A server that stops reading holds the stdio client once,
//! briefly, not for good.

use mcpx_tests::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Far below the hub's 60 s call timeout: an answer by then was not a timeout.
const AT_ONCE: Duration = Duration::from_secs(15);

/// `mcpx serve` for `hub` with `MCPX_LIMITS=frame=<frame>`, initialized.
fn session(hub: &Hub, frame: &str) -> RawSession {
    let serve = hub.serve();
    let mut args = vec![format!("MCPX_LIMITS=frame={frame}"), serve.program.to_string_lossy().into_owned()];
    args.extend(serve.args);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut s = RawSession::spawn(&Cmd::new("env", &args));
    s.initialize("2025-06-18");
    s
}

fn call(s: &mut RawSession, tool: &str, args: Value) -> (Value, Duration) {
    let t0 = Instant::now();
    let id = s.request("tools/call", json!({"name": tool, "arguments": args}));
    let r = s.response_to(id, Duration::from_secs(90));
    (r, t0.elapsed())
}

/// `r` cut short for a failure message (a wrongly delivered answer is large).
fn brief(r: &Value) -> String {
    r.to_string().chars().take(2000).collect()
}

/// The error for a reply over the cap: immediate, naming server and limit.
fn assert_over_cap(r: &Value, took: Duration, server: &str, limit: usize) {
    let r = &brief(r).parse::<Value>().unwrap_or_else(|_| panic!("not an error: {}", brief(r)));
    assert!(took < AT_ONCE, "answered after {took:?}, as a timeout would be: {r}");
    assert_eq!(r["error"]["code"], -32603, "{r}");
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.starts_with(&format!("server '{server}' answered tools/call with ")), "{msg}");
    assert!(msg.contains(&format!("over the {limit}-byte")) && msg.contains("MCPX_LIMITS=frame="), "{msg}");
    assert_eq!(r["error"]["data"]["limitBytes"], limit, "{r}");
    assert!(r["error"]["data"]["bytes"].as_u64().unwrap() > limit as u64, "{r}");
}

// covers: messages-error-response-same-id-unless-unreadable, lifecycle-prepared-for-error-cases
#[test]
fn a_reply_over_the_edge_cap_is_an_immediate_error_and_the_server_goes_on() {
    // FastMCP (Python SDK 1.30.0, the id first in its answers) under the
    // edge build's 1 MiB cap: `greet` answers with the text twice (content
    // and structuredContent), so a 700 KB name makes a 1.4 MB reply.
    let hub = HubConfig::new().upstream(py_server("py")).write();
    let mut s = session(&hub, "1M");
    let name = "t".repeat(700_000);
    let (r, took) = call(&mut s, "py__greet", json!({"name": name}));
    assert_over_cap(&r, took, "py", 1 << 20);
    let (r, _) = call(&mut s, "py__greet", json!({"name": "still here"}));
    assert!(texts(&r["result"]).contains("still here"), "{}", brief(&r));
    let err = s.finish();
    assert!(err.contains("over the 1048576-byte"), "the log names it too:\n{err}");
}

// covers: messages-error-response-same-id-unless-unreadable
#[test]
fn a_typescript_servers_reply_over_the_cap_is_found_by_its_last_bytes() {
    // The TypeScript SDK writes the id last: `{"result":…,"jsonrpc":"2.0","id":N}`.
    // server-everything's get-env answers with its environment: 300 KB here.
    let every = everything_cmd();
    let env: serde_json::Map<String, Value> = (0..3).map(|i| (format!("MCPX_BIG_{i}"), json!("e".repeat(100_000)))).collect();
    let hub = HubConfig::new()
        .remote("every", json!({"command": every.program, "args": every.args, "env": env}))
        .write();
    let mut s = session(&hub, "256K");
    let (r, took) = call(&mut s, "every__get-env", json!({}));
    assert_over_cap(&r, took, "every", 256 << 10);
    let (r, _) = call(&mut s, "every__echo", json!({"message": "after the big one"}));
    assert!(texts(&r["result"]).contains("after the big one"), "{}", brief(&r));
    s.finish();
}

// covers: messages-error-response-same-id-unless-unreadable, lifecycle-prepared-for-error-cases
#[test]
fn a_remote_servers_sse_reply_over_the_cap_is_an_immediate_error() {
    // FastMCP on Streamable HTTP answers a call with an SSE event on the
    // POST's stream; under a 1 MiB cap, `greet` with a 700 KB name (the text
    // twice in the reply) is over it.
    let server = py_server_remote("pyh", Transport::StreamableHttp, None);
    let hub = HubConfig::new().remote("pyh", json!({"url": server.url})).write();
    let mut s = session(&hub, "1M");
    let (r, took) = call(&mut s, "pyh__greet", json!({"name": "t".repeat(700_000)}));
    assert_over_cap(&r, took, "pyh", 1 << 20);
    assert!(r["error"]["message"].as_str().unwrap_or_default().contains("one message from a remote server"), "{}", brief(&r));
    // The session with the server goes on.
    let (r, _) = call(&mut s, "pyh__greet", json!({"name": "still here"}));
    assert!(texts(&r["result"]).contains("still here"), "{}", brief(&r));
    let err = s.finish();
    assert!(err.contains("over the 1048576-byte limit of one message from a remote server"), "the log names it too:\n{err}");
}

/// The child of `mcpx` (pid `parent`) started as `example-server --name NAME`.
fn example_child(parent: u32, name: &str) -> u32 {
    let want = format!("example-server\0--name\0{name}\0");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().nth(1)).and_then(|p| p.parse::<u32>().ok());
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if ppid == Some(parent) && String::from_utf8_lossy(&cmdline).ends_with(&want) {
                return pid;
            }
        }
        assert!(Instant::now() < deadline, "no child `example-server --name {name}` of {parent}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill").args([sig, &pid.to_string()]).status().unwrap().success();
    assert!(ok, "kill {sig} {pid}");
}

#[test]
fn a_server_that_stops_reading_holds_the_stdio_client_once_not_for_good() {
    // mcpx stops reading its stdio client while a pipe's worth of its
    // messages waits for a server; a server that takes nothing (stopped
    // here) holds the client once, briefly: the client's call to another
    // server is answered at once, and nothing queued for the stopped one is
    // lost once it reads again.
    let hub = HubConfig::new().upstream(example_server("stuck")).upstream(example_server("fine")).write();
    let mut s = session(&hub, "1M");
    let stuck = example_child(s.pid(), "stuck");
    signal(stuck, "-STOP");
    let big = "b".repeat(300_000);
    // The first is taken by the writer, which then waits on the full pipe;
    // the second and third stay queued: a pipe's worth in more than one
    // message that the writer does not take, which holds the client until
    // the hold's limit rings.
    let ids: Vec<_> = (0..3).map(|_| s.request("tools/call", json!({"name": "stuck__echo", "arguments": {"text": big}}))).collect();
    let (r, took) = call(&mut s, "fine__echo", json!({"text": "not held"}));
    signal(stuck, "-CONT");
    assert!(texts(&r["result"]).contains("not held"), "{}", brief(&r));
    assert!(took < AT_ONCE, "the call to the other server waited {took:?}");
    for id in ids {
        let r = s.response_to(id, Duration::from_secs(60));
        assert!(texts(&r["result"]).contains(&big), "{}", brief(&r));
    }
    s.finish();
}
