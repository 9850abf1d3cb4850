//! The pipeline's *approve* stage (`stages::approve`, `approvals`): a call
//! a rule covers runs only once a person approved that exact call; a
//! denial, a timeout or nobody to ask is a tool error, never a transport
//! error; approvals are bound to the principal, tool and arguments.

use super::*;
use crate::bytes::hex::hex;
use crate::hub::approvals::Decider;
use crate::policy::approval::{args_digest, shown_args, Format, NOTICE_TEXT};

/// `who` decides waiting call `n` on the page, as the page does: only a
/// call `who` may see is decided. Was it?
fn decide(p: &mut Pair, who: Decider<'_>, n: u64, approve: bool) -> bool {
    let known = p.hub.approvals().visible(who).iter().any(|w| w["id"] == n);
    p.hub.handle(Input::ApprovalDecided { who, n, approve }, p.now);
    p.pump();
    known
}

fn with_policy(policy: Value) -> HubOptions {
    let src = json!({ "mcpServers": {}, "policy": policy }).to_string();
    let env = |_: &str| None;
    let cfg = crate::config::parse(&src, "mcpx.json", std::path::Path::new("/cfg"), &env)
        .expect("a valid policy");
    HubOptions {
        policy: cfg.policy,
        startup_wait_ms: 0,
        ..HubOptions::default()
    }
}

fn call(p: &mut Pair, c: ClientId, id: u64, name: &str, args: Value) {
    p.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": name, "arguments": args } }));
}

fn files() -> Pair {
    let opts = with_policy(
        json!({ "approve": ["files/delete_*"], "approvals": { "timeoutMs": 60000, "approvers": ["admin"] } }),
    );
    Pair::with(
        vec![("files", Fake::tools(&["delete_file", "read_file"]))],
        opts,
    )
}

const ELICITS: fn() -> Value = || json!({ "elicitation": { "form": {} } });

// covers: tools-human-in-loop-deny, tools-client-sec
#[test]
fn the_callers_user_is_shown_the_exact_call_and_its_yes_runs_it_once() {
    let mut p = files();
    let c = p.client("2025-06-18", ELICITS());
    // A call no rule covers runs at once.
    call(&mut p, c, 1, "files__read_file", json!({ "path": "/a" }));
    assert_eq!(p.take_up(0)["params"]["name"], "read_file");

    call(
        &mut p,
        c,
        2,
        "files__delete_file",
        json!({ "path": "/etc/passwd" }),
    );
    assert!(
        p.up_quiet(0),
        "nothing reaches the server before the decision"
    );
    let ask = p.take(c);
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let message = ask["params"]["message"].as_str().unwrap();
    for shown in [
        "server: files",
        "tool: delete_file",
        "\"path\": \"/etc/passwd\"",
        "arguments sha256: ",
        "the delete_file tool",
        "asked by: stdio",
    ] {
        assert!(message.contains(shown), "{shown:?} not in {message}");
    }
    p.send(c, json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "accept", "content": { "approve": true } } }));
    let up = p.take_up(0);
    assert_eq!(
        (up["params"]["name"].as_str(), &up["params"]["arguments"]),
        (Some("delete_file"), &json!({ "path": "/etc/passwd" }))
    );
    // Once: the same call again is asked again.
    call(
        &mut p,
        c,
        3,
        "files__delete_file",
        json!({ "path": "/etc/passwd" }),
    );
    assert_eq!(p.take(c)["method"], "elicitation/create");
    assert!(p.up_quiet(0));
}

#[test]
fn a_no_a_timeout_or_nobody_to_ask_is_a_tool_error_the_model_can_read() {
    let mut p = files();
    let c = p.client("2025-06-18", ELICITS());
    call(&mut p, c, 1, "files__delete_file", json!({ "path": "/a" }));
    let ask = p.take(c);
    p.send(
        c,
        json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "decline" } }),
    );
    let r = p.take(c);
    assert_eq!(r["id"], 1);
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("declined this call"),
        "{r}"
    );

    call(&mut p, c, 2, "files__delete_file", json!({ "path": "/a" }));
    p.take(c);
    p.advance(60_000);
    // The question is withdrawn, then the call answered.
    assert_eq!(p.take(c)["method"], "notifications/cancelled");
    let r = p.take(c);
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Nobody approved this call within 60 s"),
        "{r}"
    );

    // A client that cannot be asked, and no page: declined at once.
    let plain = p.client("2025-06-18", json!({}));
    call(
        &mut p,
        plain,
        3,
        "files__delete_file",
        json!({ "path": "/a" }),
    );
    let r = p.take(plain);
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("nobody could be asked"),
        "{r}"
    );
    assert!(p.up_quiet(0));
}

#[test]
fn on_the_page_each_principal_sees_its_own_calls_and_an_approver_all() {
    let mut p = files();
    p.hub.handle(Input::ApprovalPage(true), p.now);
    let alice = p.client("2025-06-18", json!({}));
    p.hub
        .handle(Input::ClientPrincipal(alice, b"token:alice"), p.now);
    let bob = p.client("2025-06-18", json!({}));
    p.hub
        .handle(Input::ClientPrincipal(bob, b"token:bob"), p.now);
    call(
        &mut p,
        alice,
        1,
        "files__delete_file",
        json!({ "path": "/alice" }),
    );
    call(
        &mut p,
        bob,
        1,
        "files__delete_file",
        json!({ "path": "/bob" }),
    );
    let waiting = |p: &Pair, who: &str| {
        p.hub
            .approvals()
            .visible(Decider::Principal(format!("token:{who}").as_bytes()))
            .iter()
            .map(|w| w["principal"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(waiting(&p, "alice"), ["alice"]);
    assert_eq!(waiting(&p, "bob"), ["bob"]);
    assert_eq!(waiting(&p, "admin"), ["alice", "bob"]);
    let alices = p.hub.approvals().visible(Decider::Principal(b"token:alice"))[0]["id"]
        .as_u64()
        .unwrap();
    // Bob cannot decide alice's call, nor tell it exists.
    assert!(!decide(&mut p, Decider::Principal(b"token:bob"), alices, true));
    assert!(p.up_quiet(0));
    assert!(decide(&mut p, Decider::Principal(b"token:admin"), alices, true));
    assert_eq!(p.take_up(0)["params"]["arguments"]["path"], "/alice");
    assert!(p.up_quiet(0), "bob's call still waits");
    // A cancel withdraws bob's.
    p.send(bob, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } }));
    assert!(waiting(&p, "admin").is_empty());
}

#[test]
fn a_notify_hook_is_given_the_call_and_its_one_time_link() {
    let opts = with_policy(
        json!({ "approve": [{ "tools": ["files/*"], "via": ["page"] }], "approvals": { "notify": { "command": ["notify-me", "--now"] } } }),
    );
    let mut p = Pair::with(vec![("files", Fake::tools(&["delete_file"]))], opts);
    p.hub.handle(Input::ApprovalPage(true), p.now);
    let c = p.client("2025-06-18", ELICITS());
    call(&mut p, c, 1, "files__delete_file", json!({ "path": "/a" }));
    assert!(p.client_quiet(c), "the rule asks the page only");
    let (to, notice) = p.notices.pop().expect("the hook is told");
    assert_eq!(to, Carrier::Command(vec!["notify-me".into(), "--now".into()]));
    let key = notice.path.split("key=").nth(1).unwrap();
    // Without a linkBase the link is the path.
    assert_eq!(notice.link, notice.path);
    assert_eq!(notice.tool, "delete_file");
    assert!(notice.text.contains("\"path\": \"/a\""));
    let n = notice.id;
    // The link decides once; a wrong key nothing.
    assert!(!decide(&mut p, Decider::Link("not-the-key"), n, true));
    assert!(p.client_quiet(c));
    assert!(decide(&mut p, Decider::Link(key), n, false));
    assert_eq!(p.take(c)["result"]["isError"], true);
    assert!(!decide(&mut p, Decider::Link(key), n, true));
}

#[test]
fn a_posted_notice_has_the_call_and_the_whole_link_and_its_text_fits_ntfy() {
    let notify = json!({ "url": "https://ntfy.sh/mcpx-test", "format": "ntfy", "linkBase": "https://mcpx.example.net" });
    let opts = with_policy(json!({ "approve": [{ "tools": ["files/*"], "via": ["page"] }], "approvals": { "notify": notify } }));
    let mut p = Pair::with(vec![("files", Fake::tools(&["delete_file"]))], opts);
    p.hub.handle(Input::ApprovalPage(true), p.now);
    let c = p.client("2025-06-18", ELICITS());
    // Arguments far longer than a notification: many long strings, each cut
    // on the page's rules, and the whole then cut to fit.
    let many: Vec<String> = (0..100).map(|i| format!("{i} {}", "é".repeat(300))).collect();
    let args = json!({ "paths": many });
    call(&mut p, c, 1, "files__delete_file", args.clone());
    let (to, n) = p.notices.pop().expect("the hook is told");
    assert!(matches!(&to, Carrier::Post(post) if post.url == "https://ntfy.sh/mcpx-test" && post.format == Format::Ntfy), "{to:?}");
    let (num, key) = n.path.strip_prefix("/approvals/").and_then(|p| p.split_once("?key=")).unwrap();
    assert_eq!(num, n.id.to_string());
    assert_eq!(key.len(), 32, "128 bits, hex");
    assert_eq!(n.link, format!("https://mcpx.example.net/approvals/{}?key={key}", n.id));
    assert_eq!((n.server.as_str(), n.tool.as_str(), n.principal.as_str()), ("files", "delete_file", "stdio"));
    assert_eq!(n.sha256, hex(&args_digest(&args)));
    assert_eq!(n.title, "stdio asks to run files/delete_file");
    assert_eq!(n.arguments, shown_args(&args));
    // The text: who asks, the arguments cut, and the link, never cut.
    assert!(n.text.len() <= NOTICE_TEXT, "{}", n.text.len());
    assert!(n.text.starts_with(&format!("stdio asks to run files/delete_file (arguments sha256 {}):\n{{", &n.sha256[..16])), "{}", n.text);
    assert!(n.text.contains("… (cut: the arguments are longer; their digest is above)"), "{}", n.text);
    assert!(n.text.ends_with(&format!("\n\nApprove or deny: {}", n.link)), "{}", n.text);
    // The link is the page's: it decides the call.
    assert!(decide(&mut p, Decider::Link(key), n.id, true));
    assert_eq!(p.take_up(0)["params"]["arguments"], args);
}

// covers: tools-human-in-loop-deny, mrtr-requeststate-replay-fields, mrtr-single-use-enforced
#[test]
fn a_modern_client_is_asked_in_an_input_round_bound_to_the_exact_call() {
    let mut p = files();
    let c = p.connect();
    let caps = json!({ "elicitation": {} });
    let call = |path: &str, state: Option<&str>| {
        let mut params = json!({ "name": "files__delete_file", "arguments": { "path": path } });
        if let Some(s) = state {
            params["inputResponses"] = json!({ "mcpx-approval": { "action": "accept", "content": { "approve": true } } });
            params["requestState"] = json!(s);
        }
        params
    };
    let r = p.mreq(c, json!(1), "tools/call", call("/a", None), &caps);
    schema_check("2026-07-28", "InputRequiredResult", &r["result"]);
    let ask = &r["result"]["inputRequests"]["mcpx-approval"];
    assert_eq!(ask["method"], "elicitation/create", "{r}");
    assert!(ask["params"]["message"].as_str().unwrap().contains("\"path\": \"/a\""), "{r}");
    let state = r["result"]["requestState"].as_str().unwrap().to_string();
    assert!(p.up_quiet(0));
    // The yes is for that call only: other arguments with it are refused.
    let r = p.mreq(c, json!(2), "tools/call", call("/b", Some(&state)), &caps);
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(p.up_quiet(0));
    // The exact call with the yes runs it, once.
    p.msend(c, json!(3), "tools/call", call("/a", Some(&state)), &caps);
    let up = p.take_up(0);
    assert_eq!(up["params"]["arguments"], json!({ "path": "/a" }));
    assert!(up["params"].get("requestState").is_none() && up["params"].get("inputResponses").is_none(), "{up}");
    let r = p.mreq(c, json!(4), "tools/call", call("/a", Some(&state)), &caps);
    assert_eq!(r["error"]["code"], -32602, "{r}");
    // Without elicitation on the request and no page, nobody can be asked.
    let r = p.mreq(c, json!(5), "tools/call", call("/a", None), &json!({}));
    assert_eq!((r["result"]["isError"].clone(), r["result"]["resultType"].clone()), (json!(true), json!("complete")), "{r}");
}

#[test]
fn a_call_with_a_progress_token_hears_that_it_still_waits() {
    let mut p = files();
    let c = p.client("2025-06-18", ELICITS());
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "files__delete_file", "arguments": { "path": "/a" }, "_meta": { "progressToken": "t-1" } } }));
    assert_eq!(p.take(c)["method"], "elicitation/create");
    p.advance(10_000);
    let beat = p.take(c);
    assert_eq!((beat["method"].as_str(), &beat["params"]["progressToken"], &beat["params"]["progress"]), (Some("notifications/progress"), &json!("t-1"), &json!(1)), "{beat}");
    assert!(beat["params"]["message"].as_str().unwrap().contains("waiting for a person to approve this call (10 s so far)"), "{beat}");
    p.advance(10_000);
    assert_eq!(p.take(c)["params"]["progress"], 2);
}

/// A 2025-11-25 client that declared tasks and form elicitation.
fn task_client(p: &mut Pair) -> ClientId {
    p.client("2025-11-25", json!({ "tasks": {}, "elicitation": { "form": {} } }))
}

const RELATED: &str = "io.modelcontextprotocol/related-task";

// covers: tasks-input-required-move, tasks-input-request-related-task, elicitation-task-related-id-shared
#[test]
fn a_call_asked_as_a_task_gets_its_task_at_once_input_required_while_its_user_decides() {
    let mut p = files();
    let c = task_client(&mut p);
    let params = json!({ "name": "files__delete_file", "arguments": { "path": "/a" }, "task": { "ttl": 60_000 } });
    let created = p.request(c, json!(1), "tools/call", params.clone());
    schema_check("2025-11-25", "CreateTaskResult", &created["result"]);
    let task = created["result"]["task"]["taskId"].as_str().unwrap().to_string();
    assert_eq!(created["result"]["task"]["status"], "input_required", "{created}");
    let ask = p.take(c);
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["_meta"][RELATED]["taskId"], task.as_str(), "the question names the task: {ask}");
    assert!(p.up_quiet(0), "nothing runs before the decision");
    let got = p.request(c, json!(2), "tasks/get", json!({ "taskId": task }));
    assert_eq!(got["result"]["status"], "input_required", "{got}");

    p.send(c, json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "accept", "content": { "approve": true } } }));
    let up = p.take_up(0);
    assert_eq!(up["params"]["name"], "delete_file");
    assert!(up["params"].get("task").is_none(), "mcpx runs the task: {up}");
    let status = p.take(c);
    assert_eq!((status["method"].as_str(), status["params"]["status"].as_str()), (Some("notifications/tasks/status"), Some("working")), "{status}");
    assert!(p.client_quiet(c), "no second answer to the call");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [{ "type": "text", "text": "deleted" }] } }));
    assert_eq!(p.take(c)["params"]["status"], "completed");
    let result = p.request(c, json!(3), "tasks/result", json!({ "taskId": task }));
    assert_eq!(result["result"]["content"][0]["text"], "deleted", "{result}");

    // Declined: the task completes with the tool error, and nothing runs.
    let created = p.request(c, json!(4), "tools/call", params);
    let task = created["result"]["task"]["taskId"].as_str().unwrap().to_string();
    let ask = p.take(c);
    p.send(c, json!({ "jsonrpc": "2.0", "id": ask["id"], "result": { "action": "decline" } }));
    // A tool error is a failed 2025-11-25 task, its message the error's.
    let status = p.take(c);
    assert_eq!(status["params"]["status"], "failed", "{status}");
    assert!(status["params"]["statusMessage"].as_str().unwrap().contains("declined this call"), "{status}");
    assert!(p.client_quiet(c) && p.up_quiet(0));
    let result = p.request(c, json!(5), "tasks/result", json!({ "taskId": task }));
    assert_eq!(result["result"]["isError"], true, "{result}");
    assert!(result["result"]["content"][0]["text"].as_str().unwrap().contains("declined this call"), "{result}");
}

#[test]
fn a_waiting_task_cancelled_withdraws_its_question_and_one_for_the_page_is_working() {
    let opts = with_policy(json!({ "approve": [{ "tools": ["files/delete_*"], "via": ["page"] }], "approvals": { "timeoutMs": 60000 } }));
    let mut p = Pair::with(vec![("files", Fake::tools(&["delete_file"]))], opts);
    p.hub.handle(Input::ApprovalPage(true), p.now);
    let c = task_client(&mut p);
    let params = json!({ "name": "files__delete_file", "arguments": { "path": "/a" }, "task": {} });
    let created = p.request(c, json!(1), "tools/call", params.clone());
    assert_eq!(created["result"]["task"]["status"], "working", "the page decides: {created}");
    assert!(created["result"]["task"]["statusMessage"].as_str().unwrap().contains("approvals page"), "{created}");
    let task = created["result"]["task"]["taskId"].as_str().unwrap().to_string();
    assert_eq!(p.hub.approvals().len(), 1);
    let cancelled = p.request(c, json!(2), "tasks/cancel", json!({ "taskId": task }));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(p.take(c)["method"], "notifications/tasks/status");
    assert_eq!(p.hub.approvals().len(), 0, "the call waits no longer");
    assert!(p.up_quiet(0));

    // Approved on the page, it runs as its task.
    let created = p.request(c, json!(3), "tools/call", params);
    let task = created["result"]["task"]["taskId"].as_str().unwrap().to_string();
    let n = p.hub.approvals().visible(Decider::Principal(b"mcpx-local"))[0]["id"].as_u64().unwrap();
    assert!(decide(&mut p, Decider::Principal(b"mcpx-local"), n, true));
    let up = p.take_up(0);
    assert_eq!(up["params"]["name"], "delete_file");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [{ "type": "text", "text": "deleted" }] } }));
    let statuses: Vec<Value> = std::iter::from_fn(|| (!p.client_quiet(c)).then(|| p.take(c))).map(|m| m["params"]["status"].clone()).collect();
    assert_eq!(statuses, [json!("working"), json!("completed")]);
    let got = p.request(c, json!(4), "tasks/get", json!({ "taskId": task }));
    assert_eq!(got["result"]["status"], "completed", "{got}");
}
