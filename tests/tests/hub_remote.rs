//! Real SDK clients through `mcpx serve` to remote upstreams: server-everything
//! (npm) in its Streamable HTTP and HTTP+SSE modes and py_server.py (FastMCP)
//! over Streamable HTTP, HTTP+SSE and HTTPS, each on 127.0.0.1 with a free
//! port, next to `mcpx example-server` as the local upstream `demo`.
//!
//! Each test runs one client session through the hub: the tools of every
//! upstream are listed under their prefixes, each is called, progress and a
//! server-to-client request come back through the remote transport, then one
//! remote server is killed (its tools go, `demo` keeps serving) and restarted
//! on the same port (its tools come back); both changes are notified
//! (`tools/list_changed`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::{json, Value};

/// What a test does with one upstream: a call and its expected text, a call
/// with progress, and a call that sends a request back to the client.
struct Checks {
    /// The upstream's name in the config (its tools' prefix).
    name: &'static str,
    call: (&'static str, Value, &'static str),
    progress: (&'static str, Value),
    relay: (&'static str, Value, &'static str),
}

/// server-everything: get-sum, trigger-long-running-operation, and sampling.
fn everything_checks(name: &'static str) -> Checks {
    Checks {
        name,
        call: (
            "get-sum",
            json!({"a": 2, "b": 3}),
            "The sum of 2 and 3 is 5.",
        ),
        progress: (
            "trigger-long-running-operation",
            json!({"duration": 1, "steps": 4}),
        ),
        relay: (
            "trigger-sampling-request",
            json!({"prompt": "hi"}),
            "mcpx-test-model",
        ),
    }
}

/// py_server.py: greet, slow, and elicitation (`ask_user`), or sampling
/// (`ask_model`) for SDKs without elicitation.
fn py_checks(name: &'static str, elicitation: bool) -> Checks {
    let relay = if elicitation {
        ("ask_user", json!({}), "user answered: mcpx-elicited-answer")
    } else {
        ("ask_model", json!({}), "model said: mcpx-sampled-answer")
    };
    Checks {
        name,
        call: ("greet", json!({"name": "remote"}), "Hello, remote!"),
        progress: ("slow", json!({"steps": 3, "delay": 0.1})),
        relay,
    }
}

fn tool(c: &Checks, t: &str) -> String {
    format!("{}__{t}", c.name)
}

/// How the client reaches the hub.
enum Via<'a> {
    Stdio(&'a Hub),
    Http(&'a HttpServer),
}

/// The whole session: `ups` (remote upstreams, all configured besides
/// `demo`) are listed, called, report progress and relay a request; then
/// `victim` (one of `ups`, served by `server`) is killed and restarted.
fn session(client: Client, via: Via, ups: &[Checks], victim: usize, server: &mut HttpServer) {
    let signals = TempDir::new();
    let killed = signals.path().join("kill-now");
    let gone = signals.path().join("restart-now");
    let v = &ups[victim];
    let victim_tool = tool(v, v.call.0);
    let others: Vec<String> = std::iter::once("demo__echo".to_string())
        .chain(
            ups.iter()
                .enumerate()
                .filter(|(i, _)| *i != victim)
                .map(|(_, c)| tool(c, c.call.0)),
        )
        .collect();

    let mut steps = vec![json!({
        "op": "list_tools",
        "expect_tools": ups.iter().map(|c| tool(c, c.call.0)).chain(["demo__echo".to_string()]).collect::<Vec<_>>(),
        "expect_absent": ups.iter().map(|c| c.call.0).collect::<Vec<_>>(),
    })];
    steps.push(json!({"op": "call", "tool": "demo__echo", "args": {"text": "local"}, "expect_text": "local"}));
    let mut progress_steps = Vec::new();
    for c in ups {
        steps.push(json!({"op": "call", "tool": tool(c, c.call.0), "args": c.call.1, "expect_text": c.call.2}));
        progress_steps.push((c.name, steps.len()));
        steps.push(json!({"op": "call", "tool": tool(c, c.progress.0), "args": c.progress.1, "progress": true}));
        steps.push(json!({"op": "call", "tool": tool(c, c.relay.0), "args": c.relay.1, "expect_text": c.relay.2}));
    }
    // The test kills the victim when it sees `killed`, restarts it when it sees `gone`.
    steps.extend([
        json!({"op": "signal", "path": killed}),
        // The victim's calls fail (saying it is restarting) while its tools
        // stay listed (issue "Nothing dropped in silence", item 8)...
        json!({"op": "call", "tool": victim_tool, "args": v.call.1, "expect": "error", "retry_for": 30}),
        json!({"op": "list_tools", "expect_tools": others.iter().chain([&victim_tool]).collect::<Vec<_>>()}),
        json!({"op": "call", "tool": "demo__echo", "args": {"text": "still serving"}, "expect_text": "still serving"}),
        json!({"op": "signal", "path": gone}),
        // ...and answer again once it is back.
        json!({"op": "call", "tool": victim_tool, "args": v.call.1, "expect_text": v.call.2, "retry_for": 40}),
        json!({"op": "list_tools", "expect_tools": others}),
    ]);
    let script = Value::Array(steps).to_string();

    let driver = {
        let (hub_cmd, url) = match via {
            Via::Stdio(hub) => (Some(hub.serve()), None),
            Via::Http(http) => (None, Some(http.url.clone())),
        };
        std::thread::spawn(move || match (hub_cmd, url) {
            (Some(cmd), _) => client.run(&["script", &script], &cmd),
            (None, Some(url)) => client.run_url(&["script", &script], &url),
            _ => unreachable!(),
        })
    };
    // Bounded by the driver: it ends (at the latest by its own timeout)
    // whether or not it ever signals.
    let wait_for = |p: &Path| {
        while !p.exists() && !driver.is_finished() {
            std::thread::sleep(Duration::from_millis(50));
        }
        p.exists()
    };
    if wait_for(&killed) {
        server.kill();
        if wait_for(&gone) {
            server.restart();
        }
    }
    let r = driver.join().expect("driver thread");
    r.assert_ok();
    // At least one: server-everything may send its last one after the result,
    // and TS SDK v1 drops one that arrives together with the result.
    for (name, i) in progress_steps {
        let values: Vec<f64> = r.step(i)["progress"]
            .as_array()
            .map(|a| a.iter().filter_map(|p| p["progress"].as_f64()).collect())
            .unwrap_or_default();
        r.check(
            !values.is_empty(),
            &format!("no progress notification from {name} (step {i})"),
        );
        r.check(
            values.windows(2).all(|w| w[0] < w[1]),
            &format!("progress from {name} not increasing: {values:?}"),
        );
    }
}

/// A hub of `demo` (local) and the given remote servers.
fn hub(remotes: &[(&str, Value)]) -> Hub {
    remotes
        .iter()
        .fold(
            HubConfig::new().upstream(example_server("demo")),
            |h, (n, e)| h.remote(n, e.clone()),
        )
        .write()
}

// ---- Streamable HTTP --------------------------------------------------------------

fn streamable_http(client: Client, elicitation: bool, victim: usize) {
    let mut servers = [
        everything_remote(Transport::StreamableHttp),
        py_server_remote("py", Transport::StreamableHttp, None),
    ];
    let hub = hub(&[
        ("everything", json!({"url": servers[0].url, "type": "http"})),
        ("py", json!({"url": servers[1].url})),
    ]);
    let ups = [
        everything_checks("everything"),
        py_checks("py", elicitation),
    ];
    session(client, Via::Stdio(&hub), &ups, victim, &mut servers[victim]);
}

// covers: streamable-http-client-post-every-message, streamable-http-client-accept-both, streamable-http-client-echoes-session
#[test]
fn streamable_http_py_1_30_0() {
    streamable_http(Client::Py("1.30.0"), true, 1);
}

// covers: streamable-http-client-post-every-message, streamable-http-client-accept-both, streamable-http-client-echoes-session
#[test]
fn streamable_http_ts_v1() {
    // server-everything answers a request with an unknown session id with 400,
    // not 404: its restart is found by the lost standalone stream.
    streamable_http(Client::TsV1, true, 0);
}

// covers: streamable-http-server-json-or-sse-for-request, streamable-http-client-post-every-message, streamable-http-client-echoes-session
#[test]
fn streamable_http_py_1_9_4_over_mcpx_http() {
    // The client reaches mcpx over HTTP too; 1.9.4 has no elicitation.
    let mut servers = [
        everything_remote(Transport::StreamableHttp),
        py_server_remote("py", Transport::StreamableHttp, None),
    ];
    let hub = hub(&[
        ("everything", json!({"url": servers[0].url})),
        ("py", json!({"url": servers[1].url})),
    ]);
    let http = hub.serve_http();
    let ups = [everything_checks("everything"), py_checks("py", false)];
    session(
        Client::Py("1.9.4"),
        Via::Http(&http),
        &ups,
        1,
        &mut servers[1],
    );
}

// ---- HTTP+SSE (2024-11-05) ------------------------------------------------------------

fn http_sse(client: Client, victim: usize) {
    let mut servers = [
        everything_remote(Transport::Sse),
        py_server_remote("py", Transport::Sse, None),
    ];
    // server-everything is pinned to HTTP+SSE; py_server is found to speak it
    // when it refuses the Streamable HTTP initialize POST (405).
    let hub = hub(&[
        ("everything", json!({"url": servers[0].url, "type": "sse"})),
        ("py", json!({"url": servers[1].url})),
    ]);
    let ups = [everything_checks("everything"), py_checks("py", true)];
    session(client, Via::Stdio(&hub), &ups, victim, &mut servers[victim]);
}

// covers: http-sse-client-post-to-endpoint, http-sse-client-backcompat-probe-400-404-405
#[test]
fn http_sse_py_1_30_0() {
    http_sse(Client::Py("1.30.0"), 0);
}

// covers: http-sse-client-post-to-endpoint, http-sse-client-backcompat-probe-400-404-405
#[test]
fn http_sse_ts_v1() {
    http_sse(Client::TsV1, 1);
}

// ---- HTTPS -----------------------------------------------------------------------------

/// A CA and a certificate for 127.0.0.1 and localhost signed by it, made
/// afresh: (`ca.pem`, `cert.pem`, `key.pem`) in `dir`.
fn make_certs(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "mcpx e2e test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
    let paths = (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    );
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

// covers: streamable-http-client-post-every-message, streamable-http-client-echoes-session
#[test]
fn https_with_ca_file_py_1_30_0() {
    let dir = TempDir::new();
    let (_, cert, key) = make_certs(dir.path());
    let mut server = py_server_remote("py", Transport::StreamableHttp, Some((&cert, &key)));
    assert!(
        server.url.starts_with("https://127.0.0.1:"),
        "{}",
        server.url
    );
    // caFile relative to the config file's folder.
    let hub = HubConfig::new()
        .upstream(example_server("demo"))
        .remote("py", json!({"url": server.url, "caFile": "ca.pem"}))
        .write_in(dir);
    session(
        Client::Py("1.30.0"),
        Via::Stdio(&hub),
        &[py_checks("py", true)],
        0,
        &mut server,
    );
}

#[test]
fn https_without_ca_file_stays_down_and_says_why() {
    let dir = TempDir::new();
    let (_, cert, key) = make_certs(dir.path());
    let server = py_server_remote("py", Transport::StreamableHttp, Some((&cert, &key)));
    let hub = HubConfig::new()
        .upstream(example_server("demo"))
        .remote("py", json!({"url": server.url}))
        .write_in(dir);
    let t0 = Instant::now();
    let r = Client::Py("1.30.0").script(
        json!([
            {"op": "call", "tool": "demo__echo", "args": {"text": "local"}, "expect_text": "local"},
            {"op": "sleep", "seconds": 1},
            {"op": "list_tools", "expect_tools": ["demo__echo"], "expect_absent": ["py__greet"]},
            {"op": "call", "tool": "py__greet", "args": {"name": "x"}, "expect": "error"}
        ]),
        &hub.serve(),
    );
    r.assert_ok();
    // mcpx's log (its stderr reaches the driver's) names the server, the TLS
    // failure and the fix.
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains("'py'") && l.contains("TLS handshake"))
        .unwrap_or_else(|| panic!("no log line about py's TLS failure\n{r}"));
    r.check(
        line.contains("caFile") && line.contains("UnknownIssuer"),
        &format!("the log line should name the unknown issuer and caFile: {line}"),
    );
    assert!(t0.elapsed() < Duration::from_secs(60));
}

// ---- credentials ---------------------------------------------------------------------

// covers: authz-no-token-passthrough
#[test]
fn client_token_stays_with_mcpx_py_1_30_0() {
    // The client authenticates to mcpx's HTTP listener with its own bearer
    // token; each remote server gets only what its config entry says.
    let py = py_server_remote("py", Transport::StreamableHttp, None);
    let bare = py_server_remote("bare", Transport::Sse, None);
    let hub = HubConfig::new()
        .upstream(example_server("demo"))
        .remote(
            "py",
            json!({"url": py.url, "headers": {"Authorization": "Bearer upstream-secret"}}),
        )
        .remote("bare", json!({"url": bare.url}))
        .set("auth", json!({"bearer": "client-secret"}))
        .write();
    let http = hub.serve_http();
    let steps = json!([
        {"op": "call", "tool": "demo__echo", "args": {"text": "local"}, "expect_text": "local"},
        {"op": "call", "tool": "py__auth_header", "expect_text": "authorization: Bearer upstream-secret"},
        {"op": "call", "tool": "bare__auth_header", "expect_text": "authorization: (none)"}
    ]);
    let r = Client::Py("1.30.0").run_url(
        &[
            "--header",
            "Authorization: Bearer client-secret",
            "script",
            &steps.to_string(),
        ],
        &http.url,
    );
    r.assert_ok();
    r.check(
        !texts(&r.json["steps"]).contains("client-secret"),
        "the client's token reached an upstream",
    );
    // Without the token, mcpx's listener refuses the client.
    let r = Client::Py("1.30.0").run_url(&["list"], &http.url);
    r.check(
        r.code == Some(1) && r.json["failures"].to_string().contains("401"),
        "a client without the token should be refused with 401",
    );
}
