//! An upstream that is down: its tools stay listed and calls to them say
//! what it is doing (restarting, and when to retry; given up, and why).

use std::time::Duration;

use serde_json::json;

use super::*;

fn down_with(next: Next) -> (Pair, ClientId) {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"])), ("web", Fake::tools(&["fetch"]))], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["fs__read", "web__fetch"]);
    p.hub.handle(Input::UpstreamExited { up: 1, reason: "exited with status 1", stderr_tail: "ImportError: no module named x", next }, p.now);
    p.pump();
    (p, c)
}

// covers: stdio-client-restart-crashed-server
#[test]
fn a_call_during_the_restart_backoff_says_when_to_retry() {
    let (mut p, c) = down_with(Next::After(Duration::from_millis(2500)));
    assert!(p.client_quiet(c), "no list change while it restarts");
    assert_eq!(p.names(c), ["fs__read", "web__fetch"]);
    let r = p.request(c, json!(1), "tools/call", json!({ "name": "web__fetch" }));
    assert_eq!(err_code(&r), -32603, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.starts_with("server 'web' is restarting, retry in 3 s"), "{msg}");
    assert!(msg.contains("ImportError"), "the last error is named: {msg}");
    assert_eq!(r["error"]["data"], json!({ "server": "web", "state": "restarting", "retryAfterMs": 2500 }));
    assert_eq!(p.hub.status()["upstreams"][1]["retryInMs"], 2500);
    // The time left shrinks as time passes.
    p.advance(1600);
    let r = p.request(c, json!(2), "tools/call", json!({ "name": "web__fetch" }));
    assert!(r["error"]["message"].as_str().unwrap().starts_with("server 'web' is restarting, retry in 1 s"), "{r}");
    assert_eq!(r["error"]["data"]["retryAfterMs"], 900);
    // The other server is not affected.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "fs__read" } }));
    assert_eq!(p.take_up(0)["method"], "tools/call");
    // While it starts again, calls are told so; once ready they go through.
    assert!(p.fakes[1].is_some());
    p.hub.handle(Input::UpstreamStarted(1), p.now);
    let r = p.request(c, json!(4), "tools/call", json!({ "name": "web__fetch" }));
    assert_eq!(r["error"]["data"]["state"], "starting", "{r}");
    // (The fake upstream has answered the handshake meanwhile.)
    p.send(c, json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": { "name": "web__fetch" } }));
    assert_eq!(p.take_up(1)["params"]["name"], "fetch");
    assert!(p.hub.status()["upstreams"][1]["retryInMs"].is_null());
}

// covers: stdio-client-restart-crashed-server
#[test]
fn a_given_up_server_says_so_in_calls_and_status_until_it_starts_again() {
    let (mut p, c) = down_with(Next::GaveUp { attempts: 11 });
    assert_eq!(p.names(c), ["fs__read", "web__fetch"]);
    let r = p.request(c, json!(1), "tools/call", json!({ "name": "web__fetch" }));
    assert_eq!(err_code(&r), -32603, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.starts_with("server 'web' is stopped after 11 failed starts: exited with status 1"), "{msg}");
    assert_eq!(r["error"]["data"]["state"], "stopped");
    assert_eq!(r["error"]["data"]["attempts"], 11);
    let st = &p.hub.status()["upstreams"][1];
    assert_eq!(st["state"], "failed");
    assert_eq!(st["gaveUpAfter"], 11);
    assert!(st["lastError"].as_str().unwrap().contains("ImportError"), "{st}");
    assert!(st["retryInMs"].is_null());
    // A restart asked for: it is up again, and no longer given up.
    p.start(1, Fake::tools(&["fetch"]));
    let st = &p.hub.status()["upstreams"][1];
    assert_eq!((st["state"].clone(), st["gaveUpAfter"].clone()), (json!("ready"), Value::Null));
}

#[test]
fn tools_a_restarted_server_no_longer_offers_leave_the_list() {
    let (mut p, c) = down_with(Next::Now);
    // It comes back without the tools capability.
    let mut bare = Fake::tools(&[]);
    bare.caps = json!({});
    p.start(1, bare);
    assert_eq!(p.take(c)["method"], "notifications/tools/list_changed");
    assert_eq!(p.names(c), ["fs__read"]);
    let r = p.request(c, json!(1), "tools/call", json!({ "name": "web__fetch" }));
    assert_eq!(err_code(&r), -32602, "{r}");
}

/// The restart count is the restart loop's: a server whose command never
/// started counts each new attempt the loop logs ("attempt N of M"); one
/// that sleeps when idle and wakes counts none.
#[test]
fn restarts_are_the_loops_new_attempts_and_never_a_wake() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"])), ("web", Fake::tools(&["fetch"]))], HubOptions::default());
    let restarts = |p: &Pair| p.hub.status()["upstreams"][1]["restarts"].clone();
    assert_eq!(restarts(&p), 0);
    // Never up: 6 failed spawns, each followed by another attempt (the 7th
    // is "attempt 7 of 11" in the log), then one asked-for restart.
    for _ in 0..6 {
        let failed = Input::UpstreamExited { up: 1, reason: "could not start: No such file or directory", stderr_tail: "", next: Next::After(Duration::from_millis(250)) };
        p.hub.handle(failed, p.now);
    }
    assert_eq!(restarts(&p), 6);
    p.hub.handle(Input::UpstreamExited { up: 1, reason: "restart asked", stderr_tail: "", next: Next::Now }, p.now);
    assert_eq!(restarts(&p), 7);
    // Given up or stopped: no attempt follows, none counted.
    p.hub.handle(Input::UpstreamExited { up: 1, reason: "failed", stderr_tail: "", next: Next::GaveUp { attempts: 11 } }, p.now);
    p.hub.handle(Input::UpstreamExited { up: 1, reason: "stopped", stderr_tail: "", next: Next::Stop }, p.now);
    assert_eq!(restarts(&p), 7);
    assert_eq!(p.hub.status()["upstreams"][1]["starts"], 1, "the one start of the pair");
}
