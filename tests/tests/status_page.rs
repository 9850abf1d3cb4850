//! `GET /status` of `mcpx serve --http`: JSON for programs, an HTML page for
//! browsers, behind the listener's Host/Origin checks and token; and the page
//! as headless Chromium (Debian `chromium`) shows it, against a hub with one
//! healthy server and one that crashes at once with `<script>` on its stderr.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::{json, Value};

/// What a browser sends when it navigates to a page.
const BROWSER_ACCEPT: &str =
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
/// What the crashing server writes to stderr before it exits.
const INJECTED: &str = "<script>document.title='pwned'</script><b>bold</b>";
/// The same, as the page must show it (text, escaped in the DOM).
const INJECTED_AS_TEXT: &str =
    "&lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;";

struct Response {
    status: u16,
    head: String,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n\n{}", self.head, self.body))
    }
}

/// One request on a fresh connection (`Connection: close`), read to its end.
fn request(server: &HttpServer, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Response {
    request_at(&server.url, method, path, headers, body)
}

/// [`request`] to the server at `url`.
fn request_at(url: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Response {
    let port = url.split(':').nth(2).and_then(|p| p.split('/').next()).unwrap();
    let mut s = TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read the response");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Response { status, head: head.to_string(), body: body.to_string() }
}

fn get(server: &HttpServer, path: &str, headers: &[(&str, &str)]) -> Response {
    request(server, "GET", path, headers, "")
}

/// Opens a Streamable HTTP session of revision `rev` (left open); its id.
fn open_session(server: &HttpServer, rev: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": rev, "capabilities": {}, "clientInfo": {"name": "status-page-test", "version": "1"}}});
    let headers = [("Accept", "application/json, text/event-stream"), ("Content-Type", "application/json")];
    let r = request(server, "POST", "/mcp", &headers, &init.to_string());
    assert_eq!(r.status, 200, "{}\n{}", r.head, r.body);
    r.header("mcp-session-id").unwrap_or_else(|| panic!("no session id: {}", r.head)).to_string()
}

/// A server that exits at once with `INJECTED` on its stderr.
fn crashing(name: &str) -> Upstream {
    let script = format!("echo \"{INJECTED}\" >&2; exit 3");
    Upstream { name: name.into(), cmd: Cmd::new("/bin/sh", &["-c", &script]) }
}

/// `demo` (healthy) and `crashy` (exits at once), served over HTTP, with
/// these top-level config keys.
fn hub(extra: &[(&str, Value)]) -> (Hub, HttpServer) {
    let hub = config(extra);
    let server = hub.serve_http();
    (hub, server)
}

/// The config file of [`hub`].
fn config(extra: &[(&str, Value)]) -> Hub {
    let mut cfg = HubConfig::new().upstream(example_server("demo")).upstream(crashing("crashy"));
    for (k, v) in extra {
        cfg = cfg.set(k, v.clone());
    }
    cfg.write()
}

fn upstream<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["upstreams"]
        .as_array()
        .and_then(|a| a.iter().find(|u| u["name"] == name))
        .unwrap_or_else(|| panic!("no upstream {name} in {status:#}"))
}

/// Polls the JSON status (at most 30 s) until `demo` is ready and `crashy`
/// has been restarted at least twice with its stderr in its last error.
fn settled(server: &HttpServer, headers: &[(&str, &str)]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v = get(server, "/status", headers).json();
        let demo = upstream(&v, "demo");
        let crashy = upstream(&v, "crashy");
        let crashed = crashy["restarts"].as_u64().unwrap_or(0) >= 2
            && crashy["lastError"].as_str().is_some_and(|e| e.contains(INJECTED));
        if demo["state"] == "ready" && crashed {
            return v;
        }
        assert!(Instant::now() < deadline, "the hub did not settle in 30 s: {v:#}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn programs_get_json_and_browsers_html() {
    let (_hub, server) = hub(&[]);
    let v = settled(&server, &[]);
    // curl and scripts: JSON, as before, now with uptime, build and refusals.
    for accept in [None, Some("*/*"), Some("application/json")] {
        let headers: Vec<(&str, &str)> = accept.map(|a| ("Accept", a)).into_iter().collect();
        let r = get(&server, "/status", &headers);
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), Some("application/json"), "{}", r.head);
        assert_eq!(r.header("vary"), Some("Accept"));
        assert!(r.json()["upstreams"].is_array());
    }
    assert!(v["uptimeMs"].as_u64().is_some(), "{v:#}");
    assert!(v["build"]["version"].is_string(), "{v:#}");
    assert!(v["http"]["refusals"]["total"].is_u64(), "{v:#}");

    let r = get(&server, "/status", &[("Accept", BROWSER_ACCEPT)]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"), "{}", r.head);
    let csp = r.header("content-security-policy").unwrap_or("");
    assert!(csp.starts_with("default-src 'none'"), "{}", r.head);
    assert!(r.body.starts_with("<!doctype html>"), "{}", r.body);
    assert!(r.body.contains("data-name=\"demo\" data-state=\"ready\""), "{}", r.body);
    assert!(!r.body.contains("<script"), "{}", r.body);

    // ?format= overrides Accept both ways; an unknown one is refused.
    let r = get(&server, "/status?format=json", &[("Accept", BROWSER_ACCEPT)]);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let r = get(&server, "/status?format=html", &[]);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let r = get(&server, "/status?format=yaml", &[("Accept", BROWSER_ACCEPT)]);
    assert_eq!(r.status, 400);
    assert!(r.body.contains("?format=json or ?format=html"), "{}", r.body);
    // That refusal is now among the recent ones.
    let v = get(&server, "/status", &[]).json();
    let recent = &v["http"]["refusals"]["recent"][0];
    assert_eq!(recent["status"], 400, "{v:#}");
    assert!(recent["message"].as_str().unwrap().contains("'yaml'"), "{v:#}");
}

// covers: streamable-http-server-validate-origin, streamable-http-server-403-invalid-origin, streamable-http-server-authenticate
#[test]
fn the_page_is_behind_the_origin_check_and_the_token() {
    let token = "status-page-token";
    let (_hub, server) = hub(&[("auth", json!({ "bearer": token }))]);
    let bearer = format!("Bearer {token}");
    let auth = [("Authorization", bearer.as_str()), ("Accept", BROWSER_ACCEPT)];
    // Without the token: refused, and no server detail leaks; a browser
    // is sent to the sign-in form, a program gets the 401.
    let r = get(&server, "/status", &[("Accept", BROWSER_ACCEPT)]);
    assert_eq!((r.status, r.header("location")), (303, Some("/signin?next=/status")), "{}", r.head);
    assert!(!r.body.contains("crashy"), "{}", r.body);
    let r = get(&server, "/status", &[]);
    assert_eq!(r.status, 401, "{}", r.head);
    assert!(!r.body.contains("crashy"), "{}", r.body);
    let r = get(&server, "/status?format=html", &[("Authorization", "Bearer wrong")]);
    assert_eq!(r.status, 401);
    // A page of another site cannot read it through the user's browser.
    let evil = "http://evil.example";
    let r = get(&server, "/status", &[auth[0], auth[1], ("Origin", evil)]);
    assert_eq!(r.status, 403, "{}", r.head);
    assert!(!r.body.contains("crashy"), "{}", r.body);
    // With the token: the page, listing those refusals.
    let r = get(&server, "/status", &auth);
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(r.body.contains("data-name=\"crashy\""), "{}", r.body);
    assert!(r.body.contains("Unauthorized: send Authorization: Bearer"), "{}", r.body);
    assert!(r.body.contains("Forbidden: Origin &#39;http://evil.example&#39; is not allowed"), "{}", r.body);
    assert!(r.body.contains("401 × 2"), "{}", r.body);
}

// ------------------------------------------------------------------ Chromium

/// Runs headless Chromium on `url` with `args` (a fresh profile each time,
/// nothing reaching beyond loopback) and returns its stdout.
fn headless(url: &str, args: &[String]) -> String {
    let profile = TempDir::new();
    let mut argv = vec![
        chromium().to_string_lossy().into_owned(),
        "--headless".into(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--disable-quic".into(),
        "--disable-dev-shm-usage".into(),
        "--no-first-run".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--hide-scrollbars".into(),
        format!("--user-data-dir={}", profile.path().display()),
    ];
    argv.extend(args.iter().cloned());
    argv.push(url.into());
    let r = run_argv(&argv, Duration::from_secs(90));
    assert!(!r.timed_out && r.code == Some(0), "chromium failed ({:?}): {argv:?}\n{}", r.code, r.stderr);
    r.stdout
}

/// Types each (field, text) of `typed` into the page at `url` in headless
/// Chromium, then clicks the element `selector` (tests/drivers/cdp_click.mjs,
/// over the DevTools protocol) and returns the page the click led to.
fn click(url: &str, typed: &[(&str, &str)], selector: &str) -> String {
    click_then(url, typed, selector, None)
}

/// [`click`], then (`then`) a click on that element of the page it led to
/// (`CDP_THEN`); the page that second click led to.
fn click_then(url: &str, typed: &[(&str, &str)], selector: &str, then: Option<&str>) -> String {
    let profile = TempDir::new();
    let mut argv = vec![
        "env".to_string(),
        format!("CDP_THEN={}", then.unwrap_or("")),
        node().to_string_lossy().into_owned(),
        driver("cdp_click.mjs").to_string_lossy().into_owned(),
        chromium().to_string_lossy().into_owned(),
        profile.path().display().to_string(),
        url.to_string(),
        selector.to_string(),
    ];
    argv.extend(typed.iter().flat_map(|(f, t)| [f.to_string(), t.to_string()]));
    let r = run_argv(&argv, Duration::from_secs(90));
    assert!(!r.timed_out && r.code == Some(0), "the click failed ({:?}): {argv:?}\n{}", r.code, r.stderr);
    r.stdout
}

/// Width and height of a PNG file, from its IHDR chunk.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(png.len() > 24 && png.starts_with(b"\x89PNG\r\n\x1a\n") && &png[12..16] == b"IHDR", "not a PNG");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&png[16..20]), be(&png[20..24]))
}

/// Takes a `w`×`h` screenshot of `url` into `file` and checks it is a
/// picture of that size with content (a blank page compresses to ~1 KiB).
fn screenshot(url: &str, file: &Path, (w, h): (u32, u32)) {
    let _ = std::fs::remove_file(file);
    headless(url, &[format!("--screenshot={}", file.display()), format!("--window-size={w},{h}")]);
    let png = std::fs::read(file).unwrap_or_else(|e| panic!("no screenshot at {}: {e}", file.display()));
    assert_eq!(png_size(&png), (w, h), "{}", file.display());
    assert!(png.len() > 20_000, "{} is {} bytes: an empty page?", file.display(), png.len());
}

/// The `<article>` of server `name` in the dumped DOM.
fn card<'a>(dom: &'a str, name: &str) -> &'a str {
    let start = dom.find(&format!("data-name=\"{name}\"")).unwrap_or_else(|| panic!("no card for {name}:\n{dom}"));
    let end = dom[start..].find("</article>").map_or(dom.len(), |e| start + e);
    &dom[start..end]
}

#[test]
fn chromium_shows_the_healthy_and_the_crashing_server() {
    let _ = chromium(); // before anything starts: fail at once without it
    let (_hub, server) = hub(&[]);
    let status = settled(&server, &[]);
    let demo = upstream(&status, "demo");
    let tools = demo["tools"].as_u64().unwrap();
    assert!(tools > 0, "{status:#}");
    let revision = format!("{} ({})", demo["revision"].as_str().unwrap(), demo["era"].as_str().unwrap());
    // A refusal whose message quotes what a client sent.
    let r = get(&server, "/status", &[("Origin", "http://evil.example/<img src=x onerror=alert(1)>")]);
    assert_eq!(r.status, 403);
    let sid = open_session(&server, "2025-06-18");
    // A tool call, for the activity's sparklines.
    let h = [
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    for body in [json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "demo__echo", "arguments": {"text": "hi"}}})] {
        let r = request(&server, "POST", "/mcp", &h, &body.to_string());
        assert!(r.status == 202 || r.body.contains("hi"), "{}\n{}", r.head, r.body);
    }

    let url = server.url.replace("/mcp", "/status");
    let dom = headless(&url, &["--dump-dom".to_string()]);
    let activity = dom.split("data-name=\"demo\"><th>demo</th>").nth(1).unwrap_or_else(|| panic!("no activity row: {dom}"));
    assert!(activity.contains("<svg class=\"spark req\"") && activity.contains("<polyline"), "{activity}");
    assert!(dom.contains("<td>demo/demo__echo</td><td>result</td>"), "{dom}");
    assert!(dom.contains("<title>mcpx: 1 of 2 servers ready</title>"), "{dom}");

    let demo = card(&dom, "demo");
    assert!(demo.contains("data-state=\"ready\""), "{demo}");
    assert!(demo.contains("<span class=\"badge state\">ready</span>"), "{demo}");
    assert!(demo.contains(&format!("<dd class=\"tools\">{tools}</dd>")), "{demo}");
    assert!(demo.contains(&format!("<dd>{revision}</dd>")), "{demo}");

    let crashy = card(&dom, "crashy");
    // Between two restarts it is down; while its next start runs it is
    // starting, and having never listed, its tools are not known.
    assert!(
        crashy.contains("<span class=\"badge state\">down · restarting</span>")
            || crashy.contains("<span class=\"badge state\">starting · tools not known yet</span>"),
        "{crashy}"
    );
    assert!(crashy.contains("<span class=\"last-error\">exited with status 3</span>"), "{crashy}");
    let restarts: u64 = crashy
        .split("<dd class=\"restarts\">")
        .nth(1)
        .and_then(|s| s.split('<').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no restart count: {crashy}"));
    assert!(restarts >= 2, "{crashy}");
    // The stderr tail is shown as text: no element came out of it.
    assert!(crashy.contains(&format!("<pre class=\"stderr\">{INJECTED_AS_TEXT}</pre>")), "{crashy}");
    assert!(!dom.contains("<script") && !dom.contains("<b>bold") && !dom.contains("<img"), "{dom}");
    assert!(dom.contains("http://evil.example/&lt;img src=x onerror=alert(1)&gt;"), "{dom}");
    assert!(dom.contains("<dd id=\"build\">mcpx "), "{dom}");
    assert!(dom.contains("<tr><td>2025-06-18</td><td>1</td></tr>"), "{dom}");

    // Phone and desktop widths; kept under target/tmp to look at.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    screenshot(&url, &dir.join("status-page-phone.png"), (412, 1400));
    screenshot(&url, &dir.join("status-page-desktop.png"), (1280, 900));
}

// covers: tools-human-in-loop-deny, tools-client-sec
#[test]
fn a_call_waiting_for_approval_is_shown_by_chromium_and_decided_by_its_form() {
    let _ = chromium();
    let dir = TempDir::new();
    let told = dir.path().join("told");
    let hook = format!("printf '%s' \"$MCPX_APPROVAL_PATH\" > {}", told.display());
    let policy = json!({ "approve": [{ "tools": ["demo/echo"], "via": ["page"] }],
                         "approvals": { "notify": { "command": ["/bin/sh", "-c", hook] } } });
    let (_hub, server) = hub(&[("policy", policy)]);
    let _ = settled(&server, &[]);
    let sid = open_session(&server, "2025-06-18");
    let headers = |sid: &str| {
        let accept = ("Accept".to_string(), "application/json, text/event-stream".to_string());
        vec![accept, ("Content-Type".into(), "application/json".into()), ("Mcp-Session-Id".into(), sid.to_string()), ("MCP-Protocol-Version".into(), "2025-06-18".into())]
    };
    let h = headers(&sid);
    let h: Vec<(&str, &str)> = h.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let r = request(&server, "POST", "/mcp", &h, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    assert_eq!(r.status, 202, "{}", r.head);

    // The call waits: nothing answers it until someone decides.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "demo__echo", "arguments": {"text": "<img src=x onerror=alert(1)>"}}});
    let url = server.url.clone();
    let waiting = std::thread::spawn(move || {
        let h = headers(&sid);
        let h: Vec<(&str, &str)> = h.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        request_at(&url, "POST", "/mcp", &h, &call.to_string())
    });
    let start = Instant::now();
    while !told.exists() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let path = std::fs::read_to_string(&told).expect("the notify hook ran with the link");
    let (n, key) = path.strip_prefix("/approvals/").and_then(|p| p.split_once("?key=")).unwrap_or_else(|| panic!("{path}"));
    // The list is the caller's (anonymous on this open listener) to see.
    let list = get(&server, "/approvals?format=json", &[]).json();
    assert_eq!(list["waiting"][0]["tool"], "echo", "{list}");

    // The link, as a phone's browser opens it: the exact call, as text.
    let base = server.url.replace("/mcp", "");
    let dom = headless(&format!("{base}{path}"), &["--dump-dom".to_string()]);
    assert!(dom.contains("<h2>demo / echo</h2>"), "{dom}");
    assert!(dom.contains("&lt;img src=x onerror=alert(1)&gt;") && !dom.contains("<img"), "{dom}");
    assert!(dom.contains(&format!("action=\"/approvals/{n}\"")), "{dom}");
    screenshot(&format!("{base}{path}"), &dir.path().join("approval.png"), (412, 915));

    // A wrong key decides nothing.
    let form = [("Content-Type", "application/x-www-form-urlencoded"), ("Origin", base.as_str())];
    let decide = |key: &str| request(&server, "POST", &format!("/approvals/{n}"), &form, &format!("key={key}&decision=approve"));
    let r = decide("00");
    assert_eq!(r.status, 404, "{}", r.body);
    // A person's click on Approve, in the browser: it posts the form itself.
    let page = click(&format!("{base}{path}"), &[], "button[value=approve]");
    assert!(page.contains("Approved: the call runs now."), "{page}");
    let answer = waiting.join().unwrap();
    assert!(answer.body.contains("<img src=x onerror=alert(1)>"), "the echo ran: {}", answer.body);
    // Once: the link is spent.
    let r = decide(key);
    assert_eq!(r.status, 404, "{}", r.body);
}

// ------------------------------------------------------------------ sign-in

/// `mcpx serve` of `hub` over HTTP with its log (stderr) in a file of the
/// hub's folder: the server and that file.
fn serve_logged(hub: &Hub) -> (HttpServer, PathBuf) {
    let log = hub.dir().join("hub.log");
    let port = free_port();
    let script = format!("exec \"$0\" serve --config '{}' --http 127.0.0.1:{port} 2>'{}'", hub.config.display(), log.display());
    let server = HttpServer::start(&Cmd::new("/bin/sh", &["-c", &script, mcpx().to_str().unwrap()]), port, "/mcp");
    (server, log)
}

const ALICE: &str = "alice-status-token";
const BOB: &str = "bob-mcp-only-token";

/// The hub of [`hub`] behind named tokens for alice and bob; alice has the
/// status role (`http.statusPrincipals`), bob does not.
fn signed_hub() -> (Hub, HttpServer) {
    hub(&[("auth", json!({ "tokens": { "alice": ALICE, "bob": BOB } })), ("http", json!({ "statusPrincipals": ["alice", "ops-*"] }))])
}

/// `POST /signin` with this form body.
fn sign_in(server: &HttpServer, form: &str) -> Response {
    request(server, "POST", "/signin", &[("Content-Type", "application/x-www-form-urlencoded")], form)
}

/// The `mcpx_session=...` pair of a sign-in's `Set-Cookie`.
fn session_cookie(r: &Response) -> String {
    let set = r.header("set-cookie").unwrap_or_else(|| panic!("no cookie: {}", r.head));
    set.split(';').next().unwrap().to_string()
}

// covers: streamable-http-server-authenticate
#[test]
fn chromium_is_sent_to_the_sign_in_form_and_signs_in_with_a_token() {
    let _ = chromium();
    let (_hub, server) = signed_hub();
    let _ = settled(&server, &[("Authorization", &format!("Bearer {ALICE}"))]);
    let url = server.url.replace("/mcp", "/status");
    // No credentials: the form, which comes back to /status.
    let dom = headless(&url, &["--dump-dom".to_string()]);
    assert!(dom.contains("<title>mcpx: sign in</title>"), "{dom}");
    assert!(dom.contains("<form method=\"post\" action=\"/signin\">"), "{dom}");
    assert!(dom.contains("name=\"next\" value=\"/status\""), "{dom}");
    assert!(!dom.contains("crashy") && !dom.contains("<script"), "{dom}");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    screenshot(&url, &dir.join("signin-phone.png"), (412, 915));
    // A person types alice's token and presses the button: the browser
    // posts the form, keeps the cookie, follows the 303 to /status.
    let page = click(&url, &[("#token", ALICE)], "button[type=submit]");
    assert!(page.contains("<h1>mcpx status</h1>"), "{page}");
    assert!(page.contains("data-name=\"demo\" data-state=\"ready\""), "{page}");
    // Bob's token is good for MCP, not for these pages.
    let page = click(&url, &[("#token", BOB)], "button[type=submit]");
    assert!(page.contains("Principal 'bob' may not open the status pages"), "{page}");
    assert!(!page.contains("data-name=\"demo\""), "{page}");
}

#[test]
fn an_operator_restarts_a_server_with_the_pages_button_and_no_one_else_gets_one() {
    let _ = chromium();
    let auth = json!({ "tokens": { "alice": ALICE, "bob": BOB }, "operators": ["token:alice"] });
    let (_hub, server) = hub(&[("auth", auth), ("http", json!({ "statusPrincipals": ["alice", "bob"] }))]);
    let bearer = format!("Bearer {ALICE}");
    let json = [("Authorization", bearer.as_str()), ("Accept", "application/json")];
    let starts = upstream(&settled(&server, &json), "demo")["starts"].as_u64().unwrap();
    let url = server.url.replace("/mcp", "/status");
    // Bob may open the page, and is no operator: no button.
    let page = click(&url, &[("#token", BOB)], "button[type=submit]");
    assert!(page.contains("data-name=\"demo\"") && !page.contains("name=\"restart\""), "{page}");
    // Alice signs in and presses Restart demo: back on the page, demo starts again.
    let page = click_then(&url, &[("#token", ALICE)], "button[type=submit]", Some("form.restart input[value=demo] + button"));
    assert!(page.contains("<h1>mcpx status</h1>") && page.contains("<button>Restart demo</button>"), "{page}");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let demo = upstream(&get(&server, "/status", &json).json(), "demo").clone();
        if demo["state"] == "ready" && demo["starts"].as_u64().unwrap() > starts {
            break;
        }
        assert!(Instant::now() < deadline, "demo was not started again: {demo}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Bob's cookie posting the form himself: refused, nothing restarted.
    let cookie = session_cookie(&sign_in(&server, &format!("token={BOB}")));
    let form = [("Cookie", cookie.as_str()), ("Content-Type", "application/x-www-form-urlencoded")];
    let r = request(&server, "POST", "/status", &form, "restart=demo");
    assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
    assert!(r.body.contains("takes an operator's token"), "{}", r.body);
}

#[test]
fn an_operator_disables_and_enables_a_server_with_the_pages_buttons_and_no_one_else_may() {
    let _ = chromium();
    let auth = json!({ "tokens": { "alice": ALICE, "bob": BOB }, "operators": ["token:alice"] });
    let hub = config(&[("auth", auth), ("http", json!({ "statusPrincipals": ["alice", "bob"] }))]);
    // The hub's log, to see what it says of the edit.
    let (server, log) = serve_logged(&hub);
    let (alice, bob) = (format!("Bearer {ALICE}"), format!("Bearer {BOB}"));
    let json = [("Authorization", alice.as_str()), ("Accept", "application/json")];
    let _ = settled(&server, &json);
    let written = std::fs::read_to_string(&hub.config).unwrap();
    let demo_on_disk = || serde_json::from_str::<Value>(&std::fs::read_to_string(&hub.config).unwrap()).unwrap()["mcpServers"]["demo"].clone();
    let demo_becomes = |state: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let demo = upstream(&get(&server, "/status", &json).json(), "demo").clone();
            if demo["state"] == state {
                break;
            }
            assert!(Instant::now() < deadline, "demo did not become {state}: {demo}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    // Alice signs in and presses Disable demo: back on the page; the file
    // says so, and the hub reloads it at once.
    let url = server.url.replace("/mcp", "/status");
    let page = click_then(&url, &[("#token", ALICE)], "button[type=submit]", Some("form.disable input[value=demo] + button"));
    assert!(page.contains("<h1>mcpx status</h1>"), "{page}");
    assert_eq!(demo_on_disk()["disabled"], true, "{}", std::fs::read_to_string(&hub.config).unwrap());
    demo_becomes("disabled");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains(&format!("http: operator 'alice' disabled server 'demo' in {}", hub.config.display())), "{logged}");
    assert!(logged.contains("reloading the config (asked for)"), "{logged}");
    // Its card has the Enable button now; the form it posts brings demo back,
    // and the file as it was written.
    let html = get(&server, "/status", &[("Authorization", alice.as_str()), ("Accept", BROWSER_ACCEPT)]).body;
    assert!(card(&html, "demo").contains("<input type=\"hidden\" name=\"enable\" value=\"demo\"><button>Enable demo</button>"), "{html}");
    let post = |bearer: &str, form: &str| {
        request(&server, "POST", "/status", &[("Authorization", bearer), ("Content-Type", "application/x-www-form-urlencoded")], form)
    };
    let r = post(&alice, "enable=demo");
    assert_eq!((r.status, r.header("location")), (303, Some("/status")), "{}\n{}", r.head, r.body);
    assert!(demo_on_disk().get("disabled").is_none(), "{}", std::fs::read_to_string(&hub.config).unwrap());
    assert_eq!(std::fs::read_to_string(&hub.config).unwrap(), written);
    demo_becomes("ready");
    // Bob is no operator: refused, the file untouched; no server of the
    // file by that name: 404.
    for form in ["disable=demo", "enable=demo"] {
        let r = post(&bob, form);
        assert_eq!(r.status, 403, "{}\n{}", r.head, r.body);
        assert!(r.body.contains("takes an operator's token"), "{}", r.body);
    }
    let r = post(&alice, "disable=nope");
    assert_eq!(r.status, 404, "{}\n{}", r.head, r.body);
    assert!(r.body.contains("has no server named 'nope'"), "{}", r.body);
    assert_eq!(std::fs::read_to_string(&hub.config).unwrap(), written);
}

// covers: streamable-http-server-authenticate
#[test]
fn the_sign_in_cookie_opens_the_status_pages_only() {
    let (_hub, server) = signed_hub();
    let json = [("Accept", "application/json")];
    // Wrong token, or one without the status role: no cookie.
    let r = sign_in(&server, "token=nope&next=/status");
    assert_eq!(r.status, 401, "{}", r.head);
    assert!(r.header("set-cookie").is_none() && r.body.contains("That token is not valid."), "{}\n{}", r.head, r.body);
    let r = sign_in(&server, &format!("token={BOB}"));
    assert_eq!(r.status, 403, "{}", r.head);
    assert!(r.header("set-cookie").is_none(), "{}", r.head);
    // Alice's: a cookie (no token in it), and back to a page of this
    // origin whatever next asked for.
    for (next, to) in [("%2Fapprovals", "/approvals"), ("//evil.example/status", "/status"), ("http%3A%2F%2Fevil.example", "/status")] {
        let r = sign_in(&server, &format!("token={ALICE}&next={next}"));
        assert_eq!((r.status, r.header("location")), (303, Some(to)), "{}", r.head);
    }
    let r = sign_in(&server, &format!("token={ALICE}"));
    let set = r.header("set-cookie").unwrap();
    assert!(set.ends_with("; Path=/; HttpOnly; SameSite=Strict; Max-Age=28800"), "{set}");
    assert!(!set.contains(ALICE), "{set}");
    let cookie = session_cookie(&r);
    let with = |extra: (&'static str, &'static str)| vec![("Cookie", cookie.as_str()), extra];
    // It opens /status, as JSON and as the page.
    let r = get(&server, "/status", &with(json[0]));
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(r.json()["upstreams"].is_array());
    let r = get(&server, "/status", &with(("Accept", BROWSER_ACCEPT)));
    assert!(r.status == 200 && r.body.contains("data-name=\"demo\""), "{}\n{}", r.head, r.body);
    // Nothing else: /metrics, and the MCP endpoint, which stays bearer-only.
    let r = get(&server, "/metrics", &with(json[0]));
    assert_eq!(r.status, 401, "{}", r.head);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cookie", "version": "1"}}});
    let mcp = [("Cookie", cookie.as_str()), ("Accept", "application/json, text/event-stream"), ("Content-Type", "application/json")];
    let r = request(&server, "POST", "/mcp", &mcp, &init.to_string());
    assert_eq!(r.status, 401, "{}", r.head);
    // A cookie altered (another principal, a later end) is no credential:
    // a browser is sent to the form, a program gets the 401.
    let (exp, rest) = cookie["mcpx_session=".len()..].split_once('.').unwrap();
    let forged = [
        format!("mcpx_session={}.{rest}", exp.parse::<u64>().unwrap() + 3600),
        format!("mcpx_session={exp}.dG9rZW46Ym9i.{}", rest.split_once('.').unwrap().1),
        "mcpx_session=1.dG9rZW46YWxpY2U.AAAA".to_string(),
    ];
    for f in &forged {
        let r = get(&server, "/status", &[("Cookie", f), ("Accept", BROWSER_ACCEPT)]);
        assert_eq!((r.status, r.header("location")), (303, Some("/signin?next=/status")), "{f}: {}", r.head);
        let r = get(&server, "/status", &[("Cookie", f)]);
        assert_eq!(r.status, 401, "{f}: {}", r.head);
    }
    // Headers work as before, bob's included; a bearer header wins over a cookie.
    let bob = format!("Bearer {BOB}");
    assert_eq!(get(&server, "/status", &[("Authorization", &bob)]).status, 200);
    assert_eq!(get(&server, "/status", &[("Authorization", "Bearer wrong"), ("Cookie", &cookie)]).status, 401);
    // Signing out clears it.
    let r = request(&server, "POST", "/signout", &[("Cookie", &cookie)], "");
    assert_eq!((r.status, r.header("location")), (303, Some("/signin")), "{}", r.head);
    assert!(r.header("set-cookie").unwrap().starts_with("mcpx_session=; ") && r.header("set-cookie").unwrap().contains("Max-Age=0"), "{}", r.head);
}

/// A cookie past its end (`http.signinTtlMs`, 3 s here) is no credential:
/// a browser is sent back to the form, a program gets 401.
#[test]
fn an_expired_sign_in_cookie_sends_the_browser_back_to_the_form() {
    let (_hub, server) = hub(&[("auth", json!({ "tokens": { "alice": ALICE } })), ("http", json!({ "statusPrincipals": ["alice"], "signinTtlMs": 3000 }))]);
    let r = sign_in(&server, &format!("token={ALICE}"));
    let signed_in = Instant::now();
    assert!(r.header("set-cookie").is_some_and(|c| c.ends_with("; Max-Age=3")), "{}", r.head);
    let cookie = session_cookie(&r);
    let page = [("Cookie", cookie.as_str()), ("Accept", BROWSER_ACCEPT)];
    let r = get(&server, "/status", &page);
    assert!(r.status == 200 && r.body.contains("<h1>mcpx status</h1>"), "{}\n{}", r.head, r.body);
    // Its end is in whole seconds: past within 3 s of the sign-in, 4 s to be sure.
    std::thread::sleep(Duration::from_secs(4).saturating_sub(signed_in.elapsed()));
    let r = get(&server, "/status", &page);
    assert_eq!((r.status, r.header("location")), (303, Some("/signin?next=/status")), "{}", r.head);
    let r = get(&server, "/status", &[("Cookie", cookie.as_str())]);
    assert_eq!(r.status, 401, "{}", r.head);
    assert!(r.body.contains("the sign-in cookie is expired"), "{}", r.body);
}

/// Rewrites the config file at `path` as `edit` says, the way editors save
/// (a new file renamed over it): the running hub reloads it.
fn rewrite_config(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut cfg: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut cfg);
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// A reload that moves the status role applies without a restart: alice's
/// cookie, issued while she had the role, opens nothing once the reload
/// took it from her (the role is checked on every request), and bob, who
/// was given it, signs in.
#[test]
fn a_reload_moves_the_status_role_and_an_earlier_cookie_loses_it() {
    let hub = config(&[("auth", json!({ "tokens": { "alice": ALICE, "bob": BOB } })), ("http", json!({ "statusPrincipals": ["alice"] }))]);
    let (server, log) = serve_logged(&hub);
    let page = |cookie: &str, accept: &str| get(&server, "/status", &[("Cookie", cookie), ("Accept", accept)]);
    let alice = session_cookie(&sign_in(&server, &format!("token={ALICE}")));
    let r = page(&alice, BROWSER_ACCEPT);
    assert!(r.status == 200 && r.body.contains("<h1>mcpx status</h1>"), "{}\n{}", r.head, r.body);
    assert_eq!(sign_in(&server, &format!("token={BOB}")).status, 403);
    // The role goes to bob in the file; the hub reloads it within a second.
    rewrite_config(&hub.config, |cfg| cfg["http"]["statusPrincipals"] = json!(["bob"]));
    let bob_bearer = format!("Bearer {BOB}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let config = loop {
        let config = get(&server, "/status", &[("Authorization", &bob_bearer), ("Accept", "application/json")]).json()["config"].clone();
        if config["reloads"] == 1 {
            break config;
        }
        assert!(Instant::now() < deadline, "the config was not reloaded: {config}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(config["notApplied"], json!([]), "{config}");
    // Alice's cookie: a browser is sent to the form, a program gets 401.
    let r = page(&alice, BROWSER_ACCEPT);
    assert_eq!((r.status, r.header("location")), (303, Some("/signin?next=/status")), "{}", r.head);
    let r = page(&alice, "application/json");
    assert_eq!(r.status, 401, "{}", r.head);
    assert!(r.body.contains("no status role any more"), "{}", r.body);
    // Alice may not sign in again; bob may, and his cookie opens the page.
    assert_eq!(sign_in(&server, &format!("token={ALICE}")).status, 403);
    let bob = session_cookie(&sign_in(&server, &format!("token={BOB}")));
    let r = page(&bob, BROWSER_ACCEPT);
    assert!(r.status == 200 && r.body.contains("<h1>mcpx status</h1>"), "{}\n{}", r.head, r.body);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("config reloaded: the sign-in settings (http.statusPrincipals, http.signinTtlMs) applied"), "{logged}");
    assert!(!logged.contains("not applied until mcpx restarts"), "{logged}");
}

// ------------------------------------------------------------------ views by principal

/// Opens a session as the principal of `token`, calling itself `name`, and
/// sends `notifications/initialized`; its headers for what follows.
fn session_as(server: &HttpServer, token: &str, name: &str) -> Vec<(String, String)> {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}});
    let mut h = vec![
        ("Authorization".to_string(), format!("Bearer {token}")),
        ("Accept".into(), "application/json, text/event-stream".into()),
        ("Content-Type".into(), "application/json".into()),
    ];
    let post = |h: &[(String, String)], body: &Value| {
        let h: Vec<(&str, &str)> = h.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        request(server, "POST", "/mcp", &h, &body.to_string())
    };
    let r = post(&h, &init);
    assert_eq!(r.status, 200, "{}\n{}", r.head, r.body);
    h.push(("Mcp-Session-Id".into(), r.header("mcp-session-id").unwrap().to_string()));
    h.push(("MCP-Protocol-Version".into(), "2025-06-18".into()));
    let r = post(&h, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_eq!(r.status, 202, "{}", r.head);
    h
}

#[test]
fn client_names_and_instance_owners_are_shown_by_principal() {
    let notes = example_server_cmd("notes");
    let tokens = json!({ "alice": "alice-t", "bob": "bob-t", "ops": "ops-t" });
    let hub = HubConfig::new()
        .remote("notes", json!({ "command": notes.program, "args": notes.args, "isolation": "client" }))
        .set("auth", json!({ "tokens": tokens }))
        .set("http", json!({ "statusPrincipals": ["ops"] }))
        .write();
    let server = hub.serve_http();
    let alice = session_as(&server, "alice-t", "alice-laptop");
    let _bob = session_as(&server, "bob-t", "bob-phone");
    // Alice's call starts her instance of notes.
    let h: Vec<(&str, &str)> = alice.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "notes__echo", "arguments": {"text": "hi"}}});
    let r = request(&server, "POST", "/mcp", &h, &call.to_string());
    assert!(r.status == 200 && r.body.contains("hi"), "{}\n{}", r.head, r.body);
    let view = |token: &str| {
        let v = get(&server, "/status", &[("Authorization", &format!("Bearer {token}"))]).json();
        let names: Vec<String> = v["clients"].as_array().unwrap().iter().filter_map(|c| c["clientInfo"]["name"].as_str().map(String::from)).collect();
        let instances: Vec<Value> = v["upstreams"].as_array().unwrap().iter().filter(|u| !u["instanceOf"].is_null()).cloned().collect();
        assert_eq!(v["clients"].as_array().unwrap().len(), 2, "every session is listed: {v:#}");
        assert_eq!(instances.len(), 1, "{v:#}");
        (names, instances[0].get("owner").cloned())
    };
    // (viewer, client names seen, instance owner seen)
    let table = [
        ("alice-t", vec!["alice-laptop"], Some(json!("alice"))),
        ("bob-t", vec!["bob-phone"], None),
        ("ops-t", vec![], Some(json!("alice"))),
    ];
    for (token, names, owner) in table {
        assert_eq!(view(token), (names.into_iter().map(String::from).collect(), owner), "as {token}");
    }
}

#[test]
fn mcpx_status_shows_the_line_that_explains_an_exit_and_restarts_without_a_start() {
    // A traceback longer than the hub keeps, ending in the line that says why.
    let frames: String = (0..40).map(|i| format!("  File \"/srv/app/module_{i:02}.py\", line {i}, in handler_{i:02}\\n")).collect();
    let script = format!("printf 'Traceback (most recent call last):\\n{frames}AttributeError: '\\''NoneType'\\'' object has no attribute '\\''load'\\''\\n' >&2; exit 1");
    let hub = HubConfig::new()
        .upstream(Upstream { name: "broken".into(), cmd: Cmd::new("/bin/sh", &["-c", &script]) })
        .upstream(Upstream { name: "missing".into(), cmd: Cmd::new("/nonexistent/mcpx-test-server", &[]) })
        .set("auth", json!({ "bearer": "t" }))
        .write();
    let server = hub.serve_http();
    let auth = [("Authorization", "Bearer t")];
    let deadline = Instant::now() + Duration::from_secs(30);
    let v = loop {
        let v = get(&server, "/status", &auth).json();
        let (broken, missing) = (upstream(&v, "broken"), upstream(&v, "missing"));
        if broken["lastError"].is_string() && missing["restarts"].as_u64() >= Some(3) {
            break v;
        }
        assert!(Instant::now() < deadline, "no restarts in 30 s: {v:#}");
        std::thread::sleep(Duration::from_millis(200));
    };
    // Never started, yet restarted as often as the loop tried again.
    let missing = upstream(&v, "missing");
    assert_eq!(missing["starts"], 0, "{missing:#}");
    // The kept stderr starts at a line and ends with the explaining one.
    let err = upstream(&v, "broken")["lastError"].as_str().unwrap().to_string();
    let (reason, tail) = err.split_once("; stderr: ").unwrap_or_else(|| panic!("{err}"));
    assert_eq!(reason, "exited with status 1");
    assert!(tail.starts_with("  File \"/srv/app/module_") && tail.chars().count() <= 500, "{tail}");
    assert!(tail.ends_with("AttributeError: 'NoneType' object has no attribute 'load'"), "{tail}");
    // mcpx status: that line on the server's row.
    let argv = [mcpx().to_string_lossy().into_owned(), "status".into(), "--url".into(), server.url.clone(), "--token".into(), "t".into()];
    let r = run_argv(&argv, Duration::from_secs(30));
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let row = r.stdout.lines().find(|l| l.starts_with("broken ")).unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(row.ends_with("exited with status 1: AttributeError: 'NoneType' object has no attribute 'load'"), "{row}");
    let row = r.stdout.lines().find(|l| l.starts_with("missing ")).unwrap_or_else(|| panic!("{}", r.stdout));
    let restarts: u64 = row.split_whitespace().nth(4).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{row}"));
    assert!(restarts >= 3, "{row}");
}

// ------------------------------------------------------------------ activity

// The page's activity: each server's last minutes and the last tool calls,
// the calls shown to their own principal and to the status role only.
#[test]
fn activity_counts_each_servers_calls_and_shows_each_principal_its_own() {
    let tokens = json!({ "alice": "alice-t", "bob": "bob-t", "ops": "ops-t" });
    // demo speaks 2025-11-25 with mcpx: its input requests are the hub's to
    // hold for a 2026-07-28 client's retry.
    let demo = example_server_cmd("demo");
    let hub = HubConfig::new()
        .remote("demo", json!({ "command": demo.program, "args": demo.args, "revisions": ["2025-11-25"] }))
        .set("auth", json!({ "tokens": tokens }))
        .set("http", json!({ "statusPrincipals": ["ops"] }))
        .write();
    let server = hub.serve_http();
    let call = |who: &[(String, String)], id: u64, tool: &str| {
        let h: Vec<(&str, &str)> = who.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {"text": "hi"}}});
        let r = request(&server, "POST", "/mcp", &h, &body.to_string());
        assert_eq!(r.status, 200, "{}\n{}", r.head, r.body);
    };
    let alice = session_as(&server, "alice-t", "alice-laptop");
    let bob = session_as(&server, "bob-t", "bob-phone");
    call(&alice, 2, "demo__echo");
    call(&alice, 3, "demo__echo");
    call(&bob, 2, "demo__test_error_handling");
    let status = |token: &str| get(&server, "/status", &[("Authorization", &format!("Bearer {token}"))]).json();

    let v = status("ops-t");
    let minutes = v["activity"]["minutes"]["demo"].as_array().unwrap_or_else(|| panic!("no activity for demo: {v:#}"));
    assert_eq!(minutes.len(), 15, "{v:#}");
    // Summed over the minutes, as the calls may straddle one's end.
    let sum = |k: &str| minutes.iter().map(|m| m[k].as_u64().unwrap_or(0)).sum::<u64>();
    assert!(sum("requests") >= 3 && sum("errors") >= 1, "{v:#}");
    assert!(minutes.iter().any(|m| m["p99Ms"].as_u64().is_some()), "{v:#}");
    let calls = |v: &Value| -> Vec<(String, String, String)> {
        v["activity"]["lastCalls"].as_array().unwrap().iter().map(|c| {
            (c["principal"].as_str().unwrap().into(), c["tool"].as_str().unwrap().into(), c["outcome"].as_str().unwrap().into())
        }).collect()
    };
    let (a, b) = (
        ("alice".to_string(), "demo__echo".to_string(), "result".to_string()),
        ("bob".to_string(), "demo__test_error_handling".to_string(), "tool_error".to_string()),
    );
    assert_eq!(calls(&v), [b.clone(), a.clone(), a.clone()], "the status role sees every call, newest first");
    assert_eq!(calls(&status("alice-t")), [a.clone(), a], "alice sees her own");
    assert_eq!(calls(&status("bob-t")), [b], "bob sees his own");
    // A 2026-07-28 call waiting for its user's answer: an input request of
    // demo's, held for the retry, is waiting until it comes.
    let ask = |more: Value| {
        let mut params = json!({"name": "demo__ask_user", "arguments": {"message": "Delete everything?"}});
        for (k, v) in more.as_object().unwrap() {
            params[k] = v.clone();
        }
        post_modern(&server.url, "alice-t", &modern_request(9, "tools/call", params, json!({"elicitation": {"form": {}}})))
    };
    let first = ask(json!({}));
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert_eq!(status("ops-t")["activity"]["waiting"], json!({"demo": 1}));
    let key = first["result"]["inputRequests"].as_object().and_then(|m| m.keys().next().cloned()).unwrap();
    let answer = json!({"action": "accept", "content": {"answer": "yes"}});
    let done = ask(json!({"inputResponses": {key: answer}, "requestState": first["result"]["requestState"]}));
    assert!(done["result"]["resultType"] != "input_required", "{done}");
    assert_eq!(status("ops-t")["activity"]["waiting"], json!({}));

    // Bob's page: the sparklines and his call only.
    let page = get(&server, "/status", &[("Accept", BROWSER_ACCEPT), ("Authorization", "Bearer bob-t")]);
    assert_eq!(page.status, 200, "{}\n{}", page.head, page.body);
    assert_eq!(page.body.matches("<svg class=\"spark").count(), 3, "{}", page.body);
    assert!(page.body.contains("<td class=\"waiting\">0</td>"), "{}", page.body);
    let last = page.body.split("id=\"last-calls\"").nth(1).unwrap_or_else(|| panic!("no last calls: {}", page.body));
    assert!(last.contains("demo/demo__test_error_handling") && !last.contains("demo__echo"), "{last}");
}
