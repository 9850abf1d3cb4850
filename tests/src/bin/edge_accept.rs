//! `edge-accept EDGE_BINARY [RUNNER ARG...]`: the stdio hub's acceptance
//! subset, run against a built `mcpx-edge` the way a board runs it. With a
//! runner (`qemu-aarch64-static`, `qemu-arm-static`), the hub and its `board`
//! upstream run under it: ARM code under qemu user emulation.
//!
//! One client on the hub's stdio, two upstreams: `board`, the edge binary's
//! own demo server (under the runner too), and `fx`, the desktop `mcpx
//! example-server` (native: the fixtures with input requests, a crash and a
//! slow tool are not in the edge build). In order: the handshake and both
//! servers' tools listed, a tool call to each, an input request (elicitation)
//! relayed from `fx` to the client and its answer back, `fx` crashing
//! mid-call (the call ends with an error) and restarted (a call succeeds
//! again), and SIGTERM while a call is in flight (it is answered, then the
//! hub exits 0). Exits 1 at the first step that fails, with the hub's log.
//! `edge/accept.sh` runs it for each target.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::{json, Value};

/// Emulated ARM is slow; nothing here waits this long when it works.
const WAIT: Duration = Duration::from_secs(60);

struct Run {
    session: RawSession,
}

impl Run {
    fn fail(&mut self, what: &str) -> ! {
        eprintln!("edge-accept: FAILED: {what}\n--- the hub's log ---\n{}", self.session.finish());
        std::process::exit(1);
    }

    fn check(&mut self, ok: bool, what: &str) {
        if ok {
            eprintln!("edge-accept: ok: {what}");
        } else {
            self.fail(what);
        }
    }

    fn call(&mut self, tool: &str, args: Value) -> i64 {
        self.session.request("tools/call", json!({"name": tool, "arguments": args}))
    }

    /// The response to `id` within [`WAIT`], answering an elicitation with
    /// `answer` if one comes first; `(response, elicitations seen)`.
    fn answer_of(&mut self, id: i64, answer: &str) -> (Value, usize) {
        let deadline = Instant::now() + WAIT;
        let mut asked = 0;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(msg) = self.session.next_message(left) else {
                self.fail(&format!("no response to request {id} within {WAIT:?}"));
            };
            match (msg.get("method").and_then(Value::as_str), msg.get("id")) {
                (Some("elicitation/create"), Some(rid)) => {
                    asked += 1;
                    let rid = rid.clone();
                    self.session.send(&json!({"jsonrpc": "2.0", "id": rid,
                        "result": {"action": "accept", "content": {"answer": answer}}}));
                }
                (Some(_), Some(rid)) => {
                    let rid = rid.clone();
                    self.session.send(&json!({"jsonrpc": "2.0", "id": rid, "result": {}}));
                }
                (Some(_), None) => {}
                (None, Some(rid)) if *rid == json!(id) => return (msg, asked),
                (None, _) => {}
            }
        }
    }
}

fn text_of(r: &Value) -> String {
    texts(&r["result"]["content"])
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(edge) = args.next() else {
        eprintln!("usage: edge-accept EDGE_BINARY [RUNNER ARG...]");
        std::process::exit(2);
    };
    let edge = std::fs::canonicalize(&edge).unwrap_or_else(|e| panic!("{edge}: {e}"));
    let runner: Vec<String> = args.collect();
    // The edge binary with `rest`, under the runner when there is one.
    let edge_cmd = |rest: &[&str]| -> Cmd {
        let mut argv: Vec<String> = runner.clone();
        argv.push(edge.to_string_lossy().into_owned());
        argv.extend(rest.iter().map(|s| s.to_string()));
        let program = PathBuf::from(argv.remove(0));
        Cmd { program, args: argv }
    };
    let hub = HubConfig::new()
        .upstream(Upstream { name: "board".into(), cmd: edge_cmd(&["example-server", "--demo"]) })
        .upstream(example_server("fx"))
        .write();
    let config = hub.config.to_string_lossy().into_owned();
    let serve = edge_cmd(&["serve", "--config", &config]);
    eprintln!("edge-accept: {} {}", serve.program.display(), serve.args.join(" "));
    let mut run = Run { session: RawSession::spawn(&serve) };

    // The handshake, as a client that takes input requests.
    let id = run.session.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
               "clientInfo": {"name": "edge-accept", "version": "1.0.0"}}),
    );
    let (init, _) = run.answer_of(id, "");
    let rev = init["result"]["protocolVersion"].clone();
    run.check(rev == json!("2025-06-18"), &format!("initialize answered at 2025-06-18 ({rev})"));
    run.session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    // Both servers' tools (the hub may still be starting one: ask again).
    let want = ["board__echo", "fx__ask_user", "fx__crash", "fx__slow", "fx__echo"];
    let deadline = Instant::now() + WAIT;
    let names = loop {
        let id = run.session.request("tools/list", json!({}));
        let (r, _) = run.answer_of(id, "");
        let names: Vec<String> = r["result"]["tools"]
            .as_array()
            .map(|t| t.iter().filter_map(|t| t["name"].as_str().map(String::from)).collect())
            .unwrap_or_default();
        if want.iter().all(|w| names.iter().any(|n| n == w)) || Instant::now() >= deadline {
            break names;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    run.check(
        want.iter().all(|w| names.iter().any(|n| n == w)),
        &format!("tools/list has both servers' tools ({})", names.len()),
    );

    // A call to each upstream.
    let id = run.call("board__echo", json!({"text": "from the board"}));
    let (r, _) = run.answer_of(id, "");
    run.check(text_of(&r).contains("from the board"), "tools/call to the board's own server");
    let id = run.call("fx__echo", json!({"text": "from fx"}));
    let (r, _) = run.answer_of(id, "");
    run.check(text_of(&r).contains("from fx"), "tools/call to the second server");

    // An input request relayed to the client and its answer back.
    let id = run.call("fx__ask_user", json!({"message": "Which board?"}));
    let (r, asked) = run.answer_of(id, "armv7 router");
    run.check(asked == 1, &format!("the server's elicitation/create relayed to the client ({asked})"));
    run.check(text_of(&r).contains("armv7 router"), "the client's answer reached the server and its result came back");

    // A crash mid-call ends the call; the server is restarted.
    let id = run.call("fx__crash", json!({}));
    let (r, _) = run.answer_of(id, "");
    let failed = r.get("error").is_some() || r["result"]["isError"] == json!(true);
    run.check(failed, "a call whose server crashes ends with an error");
    let deadline = Instant::now() + WAIT;
    let restarted = loop {
        let id = run.call("fx__echo", json!({"text": "after the restart"}));
        let (r, _) = run.answer_of(id, "");
        if text_of(&r).contains("after the restart") {
            break true;
        }
        if Instant::now() >= deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    run.check(restarted, "the crashed server restarted and answers again");
    let id = run.call("board__echo", json!({"text": "still here"}));
    let (r, _) = run.answer_of(id, "");
    run.check(text_of(&r).contains("still here"), "the other server served on meanwhile");

    // SIGTERM with a call in flight: answered, then a clean exit.
    let id = run.call("fx__slow", json!({"seconds": 2}));
    std::thread::sleep(Duration::from_millis(500));
    run.session.terminate();
    let (r, _) = run.answer_of(id, "");
    run.check(r.get("result").is_some() && r["result"]["isError"] != json!(true), "SIGTERM: the call in flight is answered");
    let status = run.session.wait_exit(WAIT);
    run.check(status.is_some_and(|s| s.success()), &format!("SIGTERM: the hub exits 0 ({status:?})"));
    eprintln!("edge-accept: all steps passed");
}
