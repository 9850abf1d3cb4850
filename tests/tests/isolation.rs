//! `"isolation": "client"` (issue 11 item 1): one instance of a stdio server
//! per client, so each client's question from it is its own. Real SDK
//! clients (Python SDK 1.30.0) over Streamable HTTP at once, sharing the
//! Python SDK server `py_server.py`.

use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::{json, Value};

/// Server `py` (py_server.py) with the extra config keys `keys`.
fn py_with(keys: Value) -> Hub {
    let cmd = py_server_cmd("py");
    let mut entry = json!({"command": cmd.program, "args": cmd.args});
    for (k, v) in keys.as_object().unwrap() {
        entry[k] = v.clone();
    }
    HubConfig::new().remote("py", entry).write()
}

/// The elicitation questions the server asked of a client, as its driver reported.
fn questions(r: &Report) -> Vec<String> {
    r.json["server_requests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|q| q["method"] == "elicitation/create")
        .map(|q| q["params"]["message"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Two clients at once each call a tool that asks their own question after
/// a pause, so both calls are in flight when each question comes.
fn two_askers(url: &str) -> [Report; 2] {
    let run = |who: &'static str, url: String| {
        std::thread::spawn(move || {
            let steps = json!([
                {"op": "list_tools", "expect_tools": ["py__ask_user_after"], "retry_for": 30},
                {"op": "call", "tool": "py__ask_user_after", "args": {"question": format!("Delete all of {who}'s files?"), "delay": 5}, "expect": "any"}
            ]);
            Client::Py("1.30.0").run_url(&["script", &steps.to_string()], &url)
        })
    };
    let a = run("A", url.to_string());
    let b = run("B", url.to_string());
    [a.join().expect("client A"), b.join().expect("client B")]
}

// covers: streamable-http-post-sse-may-carry-requests
#[test]
fn with_isolation_each_client_gets_its_own_question_and_answer() {
    let hub = py_with(json!({"isolation": "client"}));
    let http = hub.serve_http();
    for (r, who) in two_askers(&http.url).iter().zip(["A", "B"]) {
        r.assert_ok();
        let mine = format!("Delete all of {who}'s files?");
        r.check(questions(r).len() == 1 && questions(r)[0].contains(&mine), &format!("client {who} should be asked its own question only: {:?}", questions(r)));
        let text = texts(&r.step(1)["result"]);
        r.check(text.contains("user answered: mcpx-elicited-answer"), &format!("client {who}'s tool should get its answer: {text}"));
    }
}

// The same two clients with the server shared: nothing on the wire says
// whose question it is, so mcpx asks neither (what isolation is for).
#[test]
fn shared_the_same_questions_are_refused_as_ambiguous() {
    let hub = py_with(json!({}));
    let http = hub.serve_http();
    let reports = two_askers(&http.url);
    let refused = reports.iter().filter(|r| texts(&r.step(1)["result"]).contains("cannot tell which of its clients")).count();
    for r in &reports {
        r.assert_ok();
        r.check(questions(r).iter().all(|q| !q.contains(if q.contains("A's") { "B's" } else { "A's" })), "a question reached the wrong client");
    }
    assert!(refused >= 1, "with both calls in flight at least the first question is refused: {reports:?}");
}

/// `/status` of the hub.
fn status(http: &HttpServer) -> Value {
    let url = http.url.replace("/mcp", "/status");
    http_get_json(&url)
}

fn http_get_json(url: &str) -> Value {
    let r = mcpx_tests::http(url, &[("Accept", "application/json")], None);
    assert_eq!(r.status, 200, "{}", r.text);
    r.json
}

/// The instances of server 0 in `/status`.
fn instances(st: &Value) -> Vec<Value> {
    st["upstreams"].as_array().unwrap().iter().filter(|u| u["instanceOf"] == 0).cloned().collect()
}

#[test]
fn past_max_instances_a_client_is_refused_naming_the_limit() {
    let hub = py_with(json!({"isolation": "client", "maxInstances": 1}));
    let http = hub.serve_http();
    let url = http.url.clone();
    // A holds the only instance while its slow call runs.
    let a = std::thread::spawn(move || {
        let steps = json!([
            {"op": "list_tools", "expect_tools": ["py__slow"], "retry_for": 30},
            {"op": "call", "tool": "py__slow", "args": {"steps": 16, "delay": 0.5}, "expect_text": "slow done"}
        ]);
        Client::Py("1.30.0").run_url(&["script", &steps.to_string()], &url)
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while instances(&status(&http)).iter().all(|i| i["state"] != "ready") {
        assert!(Instant::now() < deadline, "A's instance did not start: {}", status(&http));
        std::thread::sleep(Duration::from_millis(200));
    }
    let steps = json!([
        {"op": "list_tools", "expect_tools": ["py__greet"], "retry_for": 30},
        {"op": "call", "tool": "py__greet", "args": {"name": "B"}, "expect": "error"}
    ]);
    let b = Client::Py("1.30.0").run_url(&["script", &steps.to_string()], &http.url);
    b.assert_ok();
    let why = texts(b.step(1));
    b.check(why.contains("'py'") && why.contains("maxInstances"), &format!("the refusal should name the server and the limit: {why}"));
    a.join().expect("client A").assert_ok();
}

#[test]
fn an_instance_stops_after_its_client_has_gone() {
    let hub = py_with(json!({"isolation": "client"}));
    let http = hub.serve_http();
    let steps = json!([
        {"op": "list_tools", "expect_tools": ["py__greet"], "retry_for": 30},
        {"op": "call", "tool": "py__greet", "args": {"name": "A"}, "expect_text": "Hello, A!"}
    ]);
    Client::Py("1.30.0").run_url(&["script", &steps.to_string()], &http.url).assert_ok();
    let st = status(&http);
    assert_eq!(instances(&st).len(), 1, "one instance for the one client: {st}");
    // The client ended its session: its instance stops once it lingered (5 s).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let st = status(&http);
        if instances(&st)[0]["state"] == "asleep" {
            break;
        }
        assert!(Instant::now() < deadline, "the instance still runs 30 s after its client left: {st}");
        std::thread::sleep(Duration::from_millis(250));
    }
    // The server itself (the template) still serves the catalog.
    assert_eq!(status(&http)["upstreams"][0]["state"], "ready");
    // The next client's call starts an instance again, in the freed slot.
    let steps = json!([
        {"op": "list_tools", "expect_tools": ["py__greet"], "retry_for": 30},
        {"op": "call", "tool": "py__greet", "args": {"name": "B"}, "expect_text": "Hello, B!", "retry_for": 10}
    ]);
    Client::Py("1.30.0").run_url(&["script", &steps.to_string()], &http.url).assert_ok();
    let st = status(&http);
    assert_eq!(instances(&st).len(), 1, "the stopped instance's slot is used again: {st}");
}
