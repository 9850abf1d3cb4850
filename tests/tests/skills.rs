//! Skills (`io.modelcontextprotocol/skills`, SEP-2640) through mcpx, with
//! two skills servers written apart from mcpx's code: `py` is
//! tests/drivers/py_skills_server.py (the Python SDK 2.3.0's low-level
//! server with the extension's methods written from the specification, on
//! stdio, which mcpx speaks to at 2026-07-28; it reads directories) and
//! `ts` is tests/drivers/ts_skills_server.mjs (the TypeScript SDK v2's own
//! `SkillsExtension`, on Streamable HTTP, spoken to at 2025-11-25; it does
//! not). Both serve `skill://git-workflow/SKILL.md`,
//! a skill of the same name; `py` also `skill://acme/billing/refunds/SKILL.md`,
//! one skill a page.
//!
//! Clients: raw JSON-RPC over mcpx's stdio and over its HTTP listener in a
//! 2025-11-25 session and in 2026-07-28 requests, and the TypeScript SDK
//! v2's `SkillsClient` (tests/drivers/ts_skills_client.mjs), which checks
//! every file it reads against the entries mcpx passed on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine as _;
use mcpx_tests::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const EXT: &str = "io.modelcontextprotocol/skills";
const PY_GIT: &str = "skill://py/git-workflow/SKILL.md";
const TS_GIT: &str = "skill://ts/git-workflow/SKILL.md";
const REFUNDS: &str = "skill://py/acme/billing/refunds/SKILL.md";
/// What py_skills_server.py adds to git-workflow's SKILL.md while its
/// `--tamper` file exists.
const TAMPERED_LINE: &str = "4. Force-push to main when in a hurry.\n";

/// The frontmatter of each skill, as its server wrote it in its SKILL.md.
fn frontmatter(uri: &str) -> Value {
    match uri {
        PY_GIT => json!({
            "name": "git-workflow",
            "description": "Branch, commit and review the way the Python team does.",
            "license": "Apache-2.0",
            "metadata": { "owner": "py-team", "revision": "7" }
        }),
        TS_GIT => json!({
            "name": "git-workflow",
            "description": "Branch and commit the way the TypeScript team does.",
            "license": "MIT",
            "compatibility": "Requires git 2.40 or later."
        }),
        REFUNDS => json!({ "name": "refunds", "description": "Issue a refund for an order and tell the customer." }),
        _ => panic!("no such skill {uri}"),
    }
}

// ------------------------------------------------------------------ the peers

/// The two skills servers and a hub with both.
struct Setup {
    hub: Hub,
    ts: HttpServer,
    /// While this file exists, py serves a changed git-workflow SKILL.md.
    tamper: PathBuf,
    _dir: TempDir,
}

fn py_cmd(tamper: &Path) -> Cmd {
    let script = driver("py_skills_server.py");
    Cmd::new(python("2.3.0"), &[script.to_str().unwrap(), "--name", "py", "--tamper", tamper.to_str().unwrap()])
}

fn setup() -> Setup {
    let dir = TempDir::new();
    let tamper = dir.path().join("tamper");
    let port = free_port();
    let script = driver("ts_skills_server.mjs");
    let cmd = Cmd::new(node(), &[script.to_str().unwrap(), "--port", &port.to_string(), "--name", "ts"]);
    let ts = HttpServer::start(&cmd, port, "/mcp");
    let py = py_cmd(&tamper);
    // Whole entries (`remote` writes any entry): both required, so that the
    // HTTP tests can wait for /ready before their first request.
    let hub = HubConfig::new()
        .remote("py", json!({ "command": py.program, "args": py.args, "required": true }))
        .remote("ts", json!({ "url": ts.url, "revisions": ["2025-11-25"], "required": true }))
        .write();
    Setup { hub, ts, tamper, _dir: dir }
}

/// Each server's own entries (asked directly, without mcpx), by URI as
/// mcpx shows them: `skill://<server>/...`.
fn direct_entries(s: &Setup) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let mut py = RawSession::spawn(&py_cmd(&s.tamper));
    py.initialize("2025-11-25");
    let mut cursor: Option<String> = None;
    loop {
        let params = cursor.as_ref().map_or(json!({}), |c| json!({ "cursor": c }));
        let id = py.request("skills/list", params);
        let r = py.response_to(id, Duration::from_secs(30));
        for e in ok(&r, "py's skills/list")["skills"].as_array().unwrap() {
            out.insert(scoped(e, "py")["uri"].as_str().unwrap().to_string(), scoped(e, "py"));
        }
        match r["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    py.finish();
    let r = post(&s.ts.url, &[("MCP-Protocol-Version", "2025-11-25")], &json!({ "jsonrpc": "2.0", "id": 1, "method": "skills/list", "params": {} }));
    assert!(r.json["result"].get("nextCursor").is_none(), "ts has one page: {}", r.text);
    for e in ok(&r.json, "ts's skills/list")["skills"].as_array().unwrap() {
        out.insert(scoped(e, "ts")["uri"].as_str().unwrap().to_string(), scoped(e, "ts"));
    }
    assert_eq!(out.keys().collect::<Vec<_>>(), [REFUNDS, PY_GIT, TS_GIT], "what the servers serve");
    out
}

/// Skill entry `e` of `server` with its URIs as mcpx shows them.
fn scoped(e: &Value, server: &str) -> Value {
    let show = |u: &Value| Value::String(u.as_str().unwrap().replacen("skill://", &format!("skill://{server}/"), 1));
    let mut e = e.clone();
    e["uri"] = show(&e["uri"]);
    for f in e["resources"].as_array_mut().unwrap() {
        f["uri"] = show(&f["uri"]);
    }
    e
}

// ------------------------------------------------------------------ clients of mcpx

enum Via {
    Stdio(RawSession),
    /// A 2025-11-25 Streamable HTTP session.
    Session { url: String, sid: String },
    /// 2026-07-28 requests, each on its own.
    Modern { url: String },
}

struct Conn {
    via: Via,
    next: i64,
}

fn modern_caps() -> Value {
    json!({ "extensions": { EXT: {} } })
}

impl Conn {
    /// A 2025-11-25 client on mcpx's stdio; its `initialize` result.
    fn stdio(hub: &Hub) -> (Conn, Value) {
        let mut s = RawSession::spawn(&hub.serve());
        let init = s.initialize("2025-11-25");
        let said = init["instructions"].as_str().unwrap_or_default();
        assert!(said.contains("py py__: ready") && said.contains("ts ts__: ready"), "both servers up: {init}");
        (Conn { via: Via::Stdio(s), next: 1 }, init)
    }

    /// A 2025-11-25 session on mcpx's HTTP listener at `url`; its `initialize` result.
    fn session(url: &str) -> (Conn, Value) {
        let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "skills-test", "version": "1" } } });
        let r = post(url, &[], &init);
        assert_eq!(r.status, 200, "initialize: {}", r.text);
        let sid = r.header("mcp-session-id").expect("a session id").to_string();
        let h = [("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
        let n = post(url, &h, &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        assert_eq!(n.status, 202, "{}", n.text);
        let result = ok(&r.json, "initialize").clone();
        (Conn { via: Via::Session { url: url.into(), sid }, next: 1 }, result)
    }

    /// 2026-07-28 requests to mcpx's HTTP listener at `url`; its `server/discover` result.
    fn modern(url: &str) -> (Conn, Value) {
        let mut c = Conn { via: Via::Modern { url: url.into() }, next: 1 };
        let r = c.call("server/discover", json!({}));
        let result = ok(&r, "server/discover").clone();
        (c, result)
    }

    fn is_modern(&self) -> bool {
        matches!(self.via, Via::Modern { .. })
    }

    /// Request `method`: the whole JSON-RPC response.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        match &mut self.via {
            Via::Stdio(s) => {
                let id = s.request(method, params);
                s.response_to(id, Duration::from_secs(30))
            }
            Via::Session { url, sid } => {
                let h = [("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
                let r = post(url, &h, &json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
                assert!(r.json["id"] == id, "{method}: {} {}", r.status, r.text);
                r.json
            }
            Via::Modern { url } => {
                let msg = modern_request(id, method, params, modern_caps());
                let mut h = vec![("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method)];
                let uri = msg["params"]["uri"].as_str().map(str::to_string);
                if let (Some(u), "resources/read") = (&uri, method) {
                    h.push(("Mcp-Name", u));
                }
                let r = post(url, &h, &msg);
                assert!(r.json["id"] == id, "{method}: {} {}", r.status, r.text);
                r.json
            }
        }
    }
}

/// The result of response `r`, or a panic naming `what`.
fn ok<'a>(r: &'a Value, what: &str) -> &'a Value {
    match r.get("result") {
        Some(v) => v,
        None => panic!("{what}: no result: {r}"),
    }
}

/// The error code of response `r`, or a panic naming `what`.
fn err<'a>(r: &'a Value, code: i64, what: &str) -> &'a str {
    assert_eq!(r["error"]["code"], code, "{what}: {r}");
    r["error"]["message"].as_str().unwrap_or_default()
}

fn digest(b: &[u8]) -> String {
    let hex: String = Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect();
    format!("sha256:{hex}")
}

/// The bytes of one `contents` item: its text as UTF-8, its blob decoded.
fn bytes_of(c: &Value) -> Vec<u8> {
    match (c["text"].as_str(), c["blob"].as_str()) {
        (Some(t), _) => t.as_bytes().to_vec(),
        (None, Some(b)) => base64::engine::general_purpose::STANDARD.decode(b).expect("a base64 blob"),
        _ => panic!("neither text nor blob: {c}"),
    }
}

/// A 2026-07-28 answer's fields: complete, with the extension's cache fields.
fn check_modern(result: &Value, what: &str) {
    assert_eq!(result["resultType"], "complete", "{what}: {result}");
    assert!(result["ttlMs"].is_u64(), "{what}: ttlMs is required: {result}");
    assert!(matches!(result["cacheScope"].as_str(), Some("public" | "private")), "{what}: cacheScope is required: {result}");
}

/// Every page of `skills/list`: the entries, and how many pages.
fn list_all(c: &mut Conn) -> (Vec<Value>, usize) {
    let (mut skills, mut pages, mut cursor) = (Vec::new(), 0, None::<String>);
    loop {
        let r = c.call("skills/list", cursor.as_ref().map_or(json!({}), |c| json!({ "cursor": c })));
        let page = ok(&r, "skills/list");
        if c.is_modern() {
            check_modern(page, "skills/list");
        }
        skills.extend(page["skills"].as_array().expect("skills").iter().cloned());
        pages += 1;
        assert!(pages < 10, "skills/list does not end: {r}");
        match page.get("nextCursor") {
            Some(Value::String(n)) => cursor = Some(n.clone()),
            None => return (skills, pages),
            Some(other) => panic!("nextCursor is a string: {other}"),
        }
    }
}

// ------------------------------------------------------------------ the checks

/// What every client of mcpx must see of the two servers (`offer`: its
/// initialize or server/discover result; `direct`: the servers' own
/// entries). The entries listed, by URI.
fn check_skills(c: &mut Conn, offer: &Value, direct: &BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    // Offered, reading directories: ts's from its manifests (it reads none).
    assert_eq!(offer["capabilities"]["extensions"][EXT], json!({ "directoryRead": true }), "{offer}");

    // Listed page by page across both servers: py's two pages, then ts's.
    let (skills, pages) = list_all(c);
    assert!(pages >= 3, "py serves one skill a page and ts one page: {pages} pages");
    let listed: BTreeMap<String, Value> = skills.iter().map(|e| (e["uri"].as_str().unwrap().to_string(), e.clone())).collect();
    assert_eq!(listed.len(), skills.len(), "every skill once: {skills:#?}");
    // Both git-workflow skills, neither shadowing the other; each entry is
    // its server's, only the URIs scoped: frontmatter, digests and sizes unchanged.
    assert_eq!(&listed, direct, "the servers' entries, URIs scoped");
    for uri in [PY_GIT, TS_GIT, REFUNDS] {
        assert_eq!(listed[uri]["frontmatter"], frontmatter(uri), "{uri}: the frontmatter as its server wrote it");
    }
    assert_eq!(listed[PY_GIT]["frontmatter"]["name"], listed[TS_GIT]["frontmatter"]["name"]);

    // skills/get: each from its own server.
    for (uri, entry) in &listed {
        let r = c.call("skills/get", json!({ "uri": uri }));
        let got = ok(&r, "skills/get");
        assert_eq!(&got["skill"], entry, "{uri}");
        if c.is_modern() {
            check_modern(got, "skills/get");
            if uri.starts_with("skill://py/") {
                // py's own cache fields (ts, spoken to at 2025-11-25, sends none: mcpx's).
                assert_eq!((got["ttlMs"].clone(), got["cacheScope"].clone()), (json!(30000), json!("private")), "{uri}: {got}");
            }
        }
    }
    // A server's own cursor is not one of mcpx's.
    let r = c.call("skills/list", json!({ "cursor": "c2tpbGwtMQ==" }));
    err(&r, -32602, "py's raw cursor");
    // A skill no server serves: -32602 (the server's own URI, unscoped, too).
    for uri in ["skill://nobody/git-workflow/SKILL.md", "skill://git-workflow/SKILL.md", "skill://py/no-such-skill/SKILL.md", "skill://ts/no-such-skill/SKILL.md"] {
        let r = c.call("skills/get", json!({ "uri": uri }));
        err(&r, -32602, uri);
    }

    // Every file of every skill reads as its manifest says (the PNG is a blob).
    for (uri, entry) in &listed {
        for f in entry["resources"].as_array().unwrap() {
            let file = f["uri"].as_str().unwrap();
            let r = c.call("resources/read", json!({ "uri": file }));
            let contents = &ok(&r, file)["contents"];
            assert_eq!(contents.as_array().map(Vec::len), Some(1), "{r}");
            assert_eq!(contents[0]["uri"], file, "{r}");
            let b = bytes_of(&contents[0]);
            assert_eq!(b.len() as u64, f["size"].as_u64().unwrap(), "{file} of {uri}: size");
            assert_eq!(digest(&b), f["digest"].as_str().unwrap(), "{file} of {uri}: digest");
        }
    }
    let r = c.call("resources/read", json!({ "uri": PY_GIT }));
    assert!(bytes_of(&ok(&r, PY_GIT)["contents"][0]).starts_with(b"---\nname: git-workflow\n"), "{r}");
    let png = c.call("resources/read", json!({ "uri": "skill://py/git-workflow/assets/branches.png" }));
    assert!(ok(&png, "png")["contents"][0]["blob"].is_string(), "{png}");

    // Directories: py's, read through mcpx with its children's URIs scoped;
    // ts's are refused without asking ts.
    let r = c.call("resources/directory/read", json!({ "uri": "skill://py/git-workflow" }));
    let children: Vec<(&str, &str)> = ok(&r, "directory").get("resources").and_then(Value::as_array).expect("resources").iter()
        .map(|x| (x["uri"].as_str().unwrap(), x["mimeType"].as_str().unwrap())).collect();
    assert_eq!(children, [
        ("skill://py/git-workflow/SKILL.md", "text/markdown"),
        ("skill://py/git-workflow/assets", "inode/directory"),
        ("skill://py/git-workflow/references", "inode/directory"),
    ], "{r}");
    let r = c.call("resources/directory/read", json!({ "uri": "skill://py/git-workflow/references" }));
    let guide = &ok(&r, "directory")["resources"];
    assert_eq!(guide.as_array().map(Vec::len), Some(1), "{r}");
    assert_eq!(guide[0]["uri"], "skill://py/git-workflow/references/GUIDE.md");
    let manifest = listed[PY_GIT]["resources"].as_array().unwrap().iter().find(|f| f["uri"] == guide[0]["uri"]).unwrap();
    assert_eq!(guide[0]["size"], manifest["size"], "{r}");
    if c.is_modern() {
        check_modern(ok(&r, "directory"), "resources/directory/read");
    }
    let r = c.call("resources/directory/read", json!({ "uri": "skill://py/acme/billing" }));
    err(&r, -32602, "not a skill's directory: py's answer");
    // ts reads no directories: mcpx reads them from its manifest.
    let r = c.call("resources/directory/read", json!({ "uri": "skill://ts/git-workflow" }));
    let got: BTreeMap<String, bool> = ok(&r, "ts's directory").get("resources").and_then(Value::as_array).expect("resources").iter()
        .map(|x| (x["uri"].as_str().unwrap().to_string(), x["mimeType"] == "inode/directory")).collect();
    assert_eq!(got, manifest_children(&listed["skill://ts/git-workflow/SKILL.md"], "skill://ts/git-workflow"), "{r}");
    let r = c.call("resources/directory/read", json!({ "uri": "skill://ts/nothing" }));
    err(&r, -32602, "no skill of ts has that directory");
    listed
}

/// The direct children of directory `dir` as skill `entry`'s manifest
/// lists its files: each, whether it is a directory.
fn manifest_children(entry: &Value, dir: &str) -> BTreeMap<String, bool> {
    let mut out = BTreeMap::new();
    for f in entry["resources"].as_array().expect("a manifest") {
        let rest = f["uri"].as_str().unwrap().strip_prefix(&format!("{dir}/")).expect("under the skill's directory");
        match rest.split_once('/') {
            Some((d, _)) => out.insert(format!("{dir}/{d}"), true),
            None => out.insert(format!("{dir}/{rest}"), false),
        };
    }
    out
}

/// py changes git-workflow's SKILL.md under the digest `listed` published:
/// `reader`'s read is refused (-32603, naming skills/get), and counted on
/// `metrics` (a /metrics URL) if given; the other files still read; once
/// `refresher` (else `reader`) fetched the entry again (the new digest),
/// the read passes.
fn check_tampered(reader: &mut Conn, refresher: Option<&mut Conn>, s: &Setup, listed: &BTreeMap<String, Value>, metrics: Option<&str>) {
    let manifest = |e: &Value, name: &str| e["resources"].as_array().unwrap().iter().find(|f| f["uri"].as_str().unwrap().ends_with(name)).unwrap().clone();
    let old = manifest(&listed[PY_GIT], "/SKILL.md");
    std::fs::write(&s.tamper, "").unwrap();

    let refused = reader.call("resources/read", json!({ "uri": PY_GIT }));
    let msg = err(&refused, -32603, "a file changed under its published digest");
    assert!(msg.contains("skills/get"), "the client is told to fetch the skill again: {msg}");
    assert!(!refused.to_string().contains("Force-push"), "nothing of the changed bytes reaches the client: {refused}");
    let shown = |f: &Value| format!("{} ({} bytes)", f["digest"].as_str().unwrap(), f["size"]);
    assert_eq!(refused["error"]["data"]["server"], "py", "{refused}");
    assert_eq!(refused["error"]["data"]["published"], shown(&old), "{refused}");
    let mismatches = |url: &str| {
        let text = http(url, &[], None).text;
        text.lines().find(|l| l.starts_with("mcpx_skill_digest_mismatches_total{server=\"py\"}")).map(str::to_string).unwrap_or_else(|| panic!("no py mismatch count on /metrics:\n{text}"))
    };
    if let Some(url) = metrics {
        assert_eq!(mismatches(url), "mcpx_skill_digest_mismatches_total{server=\"py\"} 1");
    }
    // The skill's other files are what they were: they pass.
    let r = reader.call("resources/read", json!({ "uri": "skill://py/git-workflow/references/GUIDE.md" }));
    ok(&r, "GUIDE.md, unchanged");

    // skills/get publishes the new digest; mcpx keeps it.
    let r = match refresher {
        Some(other) => other.call("skills/get", json!({ "uri": PY_GIT })),
        None => reader.call("skills/get", json!({ "uri": PY_GIT })),
    };
    let fresh = &ok(&r, "skills/get after the change")["skill"];
    let new = manifest(fresh, "/SKILL.md");
    assert_ne!(new["digest"], old["digest"], "{fresh}");
    assert_eq!(new["size"].as_u64().unwrap(), old["size"].as_u64().unwrap() + TAMPERED_LINE.len() as u64, "{fresh}");
    assert_eq!(manifest(fresh, "/GUIDE.md"), manifest(&listed[PY_GIT], "/GUIDE.md"));
    let r = reader.call("resources/read", json!({ "uri": PY_GIT }));
    let b = bytes_of(&ok(&r, "the changed SKILL.md, once fetched again")["contents"][0]);
    assert!(b.ends_with(TAMPERED_LINE.as_bytes()), "{r}");
    assert_eq!(digest(&b), new["digest"].as_str().unwrap());
    assert_eq!(b.len() as u64, new["size"].as_u64().unwrap());
    assert_eq!(refused["error"]["data"]["served"], shown(&new), "what was refused is what py now publishes: {refused}");
    if let Some(url) = metrics {
        assert_eq!(mismatches(url), "mcpx_skill_digest_mismatches_total{server=\"py\"} 1", "counted once");
    }
}

/// Waits (30 s at most) until mcpx's HTTP listener at `url` reports every
/// required server ready.
fn wait_ready(url: &str) {
    let ready = url.replace("/mcp", "/ready");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = http(&ready, &[], None);
        if r.status == 200 {
            return;
        }
        assert!(Instant::now() < deadline, "the servers did not come up: {} {}", r.status, r.text);
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ------------------------------------------------------------------ tests

// covers: ext-skills-host-key-server-uri, ext-skills-names-no-shadow, ext-skills-list-pagination, ext-skills-host-verify-digest
// covers: ext-skills-get-unknown-32602, ext-skills-directory-read-gated, ext-skills-frontmatter-identical
#[test]
fn skills_of_two_servers_through_stdio_and_a_changed_file_refused_until_fetched_again() {
    let s = setup();
    let direct = direct_entries(&s);
    let (mut c, init) = Conn::stdio(&s.hub);
    let listed = check_skills(&mut c, &init, &direct);
    check_tampered(&mut c, None, &s, &listed, None);
    let Via::Stdio(session) = &mut c.via else { unreachable!() };
    let log = session.finish();
    let warned = "warn: server 'py' served skill://py/git-workflow/SKILL.md with sha256:";
    assert_eq!(log.matches(warned).count(), 1, "the refusal is logged, once:\n{log}");
}

// covers: ext-skills-host-key-server-uri, ext-skills-names-no-shadow, ext-skills-list-cacheable, ext-skills-result-type-complete
// covers: ext-skills-host-verify-digest, ext-skills-server-implements-methods
#[test]
fn skills_of_two_servers_over_http_in_both_eras_and_a_changed_file_counted_on_metrics() {
    let s = setup();
    let direct = direct_entries(&s);
    let server = s.hub.serve_http();
    wait_ready(&server.url);
    let (mut legacy, init) = Conn::session(&server.url);
    let listed = check_skills(&mut legacy, &init, &direct);
    let (mut modern, discover) = Conn::modern(&server.url);
    assert_eq!(check_skills(&mut modern, &discover, &direct), listed);
    // The manifests are the hub's, per server: what one client refreshed holds for the other.
    let metrics = server.url.replace("/mcp", "/metrics");
    check_tampered(&mut legacy, Some(&mut modern), &s, &listed, Some(&metrics));
}

/// The TypeScript SDK v2's SkillsClient through mcpx's HTTP listener in
/// era `mode`: its report (ts_skills_client.mjs).
fn sdk_host(url: &str, mode: &str) -> Value {
    let argv: Vec<String> = vec![
        node().to_string_lossy().into_owned(),
        driver("ts_skills_client.mjs").to_string_lossy().into_owned(),
        "--mode".into(),
        mode.into(),
        "--url".into(),
        url.into(),
    ];
    let r = run_argv(&argv, DRIVER_TIMEOUT);
    assert!(!r.timed_out && r.code == Some(0) && r.json.is_object(), "ts_skills_client failed ({:?}): {argv:?}\n{}\n{}", r.code, r.stdout, r.stderr);
    r.json
}

// covers: ext-skills-frontmatter-identical, ext-skills-host-verify-digest, ext-skills-get-unknown-32602
#[test]
fn the_sdk_skills_client_verifies_every_file_through_mcpx_in_both_eras() {
    let s = setup();
    let direct = direct_entries(&s);
    let server = s.hub.serve_http();
    wait_ready(&server.url);
    for mode in ["legacy", "2026-07-28"] {
        let r = sdk_host(&server.url, mode);
        assert_eq!(r["protocol"], if mode == "legacy" { "2025-11-25" } else { mode }, "{r}");
        assert_eq!((r["supported"].clone(), r["directoryRead"].clone()), (json!(true), json!(true)), "{r}");
        // Every skill's root directory, read by the SDK: py's at py, ts's from
        // its manifest (for py, the server's listing, compared the same way).
        for (root, children) in r["dirs"].as_object().expect("directories read") {
            let want = manifest_children(&direct[&format!("{root}/SKILL.md")], root);
            let got: BTreeMap<String, bool> = children.as_array().unwrap().iter().map(|x| (x["uri"].as_str().unwrap().to_string(), x["mimeType"] == "inode/directory")).collect();
            assert_eq!(got, want, "{mode}: {root}");
        }
        assert_eq!(r["dirs"].as_object().unwrap().len(), 3, "{r}");
        // The SDK refuses invalid entries and repeated URIs: none.
        assert_eq!(r["invalid"], json!([]), "{r}");
        let listed: BTreeMap<String, Value> = r["skills"].as_array().unwrap().iter().map(|e| (e["uri"].as_str().unwrap().to_string(), e.clone())).collect();
        assert_eq!(listed, direct, "{mode}");
        if mode == "legacy" {
            assert!(r["ttlMs"].is_null(), "{r}");
        } else {
            assert!(r["ttlMs"].is_u64() && r["cacheScope"].is_string(), "the first page's cache fields: {r}");
        }
        for (uri, entry) in &listed {
            // Every file read, and verified by the SDK against the entry.
            let files = r["files"][uri].as_array().unwrap_or_else(|| panic!("{uri} not read: {r}"));
            let want: Vec<&Value> = entry["resources"].as_array().unwrap().iter().map(|f| &f["uri"]).collect();
            assert_eq!(files.iter().map(|f| &f["uri"]).collect::<Vec<_>>(), want, "{uri}");
            for f in files {
                assert_eq!(f["verified"], true, "{mode} {uri}: {f}");
            }
            assert_eq!(files[0]["frontmatter"], frontmatter(uri), "SKILL.md's frontmatter, equal to the entry's: {r}");
            assert_eq!(&r["got"][uri], entry, "skills/get of {uri}");
        }
        assert_eq!(r["unknown"]["code"], -32602, "{r}");
    }
}

/// Clients that do not speak the extension, the official Python SDK at
/// 2024-11-05 (mcp 1.3.0) and 2025-06-18 (mcp 1.12.4) over stdio: each
/// skill is a prompt of its server, and getting it gives the SKILL.md that
/// server serves, byte for byte, with its origin said.
#[test]
fn clients_without_the_extension_read_each_skill_as_a_prompt_of_its_server() {
    let s = setup();
    let direct = direct_entries(&s);
    for client in [Client::Py("1.3.0"), Client::Py("1.12.4")] {
        let r = client.run(&["list"], &s.hub.serve());
        r.assert_ok();
        let prompts = strings(&r.json["prompts"]);
        for want in ["py__git-workflow", "ts__git-workflow", "py__refunds"] {
            r.check(prompts.iter().any(|p| p == want), &format!("{client:?}: prompt {want} missing from {prompts:?}"));
        }
        for (server, name) in [("py", "py__git-workflow"), ("ts", "ts__git-workflow")] {
            let r = client.run(&["prompt", name], &s.hub.serve());
            r.assert_ok();
            let msgs = &r.json["result"]["messages"];
            let shown = format!("skill://{server}/git-workflow/SKILL.md");
            let intro = msgs[0]["content"]["text"].as_str().unwrap_or_default();
            r.check(intro.contains(&format!("server '{server}'")) && intro.contains(&shown), &format!("{client:?}: the origin is said: {intro}"));
            let resource = &msgs[1]["content"]["resource"];
            r.check(resource["uri"] == shown.as_str(), &format!("{client:?}: {resource}"));
            let text = resource["text"].as_str().unwrap_or_default();
            let published = direct[&shown]["resources"].as_array().unwrap().iter().find(|f| f["uri"] == shown.as_str()).expect("SKILL.md in its manifest");
            r.check(published["digest"] == digest(text.as_bytes()).as_str() && published["size"] == text.len(), &format!("{client:?}: {name} is the SKILL.md {server} published: {published} vs {} bytes", text.len()));
        }
    }
}

// A skill at both of the extension's per-skill limits (512 files, 16 MiB
// in all, nearly all of it one binary file read as a base64 blob of about
// 21.3 MiB) passes whole and verified: through stdio, and over HTTP in
// both eras.
// covers: ext-skills-host-limits
#[test]
fn a_skill_at_the_extensions_limits_passes_whole_through_stdio_and_http() {
    let script = driver("py_skills_server.py");
    let py = Cmd::new(python("2.3.0"), &[script.to_str().unwrap(), "--name", "py", "--at-limits"]);
    let hub = HubConfig::new().remote("py", json!({ "command": py.program, "args": py.args, "required": true })).write();
    let check = |c: &mut Conn, how: &str| {
        let r = c.call("skills/get", json!({ "uri": "skill://py/limits/at-limits/SKILL.md" }));
        let files = ok(&r, how)["skill"]["resources"].as_array().unwrap_or_else(|| panic!("{how}: a manifest: {r}")).clone();
        assert_eq!(files.len(), 512, "{how}");
        assert_eq!(files.iter().map(|f| f["size"].as_u64().unwrap()).sum::<u64>(), 16 << 20, "{how}");
        let wanted = ["SKILL.md", "notes/n000.md", "notes/n509.md", "assets/big.bin"];
        for f in files.iter().filter(|f| wanted.iter().any(|w| f["uri"].as_str().unwrap().ends_with(w))) {
            let r = c.call("resources/read", json!({ "uri": f["uri"] }));
            let got = bytes_of(&ok(&r, how)["contents"][0]);
            assert_eq!(got.len() as u64, f["size"].as_u64().unwrap(), "{how}: {}", f["uri"]);
            assert_eq!(digest(&got), f["digest"].as_str().unwrap(), "{how}: {}", f["uri"]);
        }
    };
    let mut s = RawSession::spawn(&hub.serve());
    s.initialize("2025-11-25");
    check(&mut Conn { via: Via::Stdio(s), next: 1 }, "stdio");
    let server = hub.serve_http();
    wait_ready(&server.url);
    check(&mut Conn::session(&server.url).0, "HTTP session");
    check(&mut Conn::modern(&server.url).0, "HTTP, 2026-07-28");
}
