//! Deterministic pair tests: a fake client and scripted fake upstreams drive the
//! hub directly (no processes, no clock: `now` is advanced by hand). Requirement
//! rows are named in `// row:` comments above the tests that cover them.

use std::collections::{HashMap, VecDeque};

use serde_json::{json, Value};

use super::*;
use crate::policy::approval::{Carrier, Notice};

mod approvals;
#[cfg(feature = "apps")]
mod apps;
#[cfg(feature = "skills")]
mod skills;
mod modern;
mod isolation;
mod lazy;
mod naming;
mod oversize;
mod parse_once;
mod pins;
mod policy;
mod stages;
mod reload;
mod restarts;
mod cluster;
mod rows_base;
mod rows_primitives;
mod routing;
mod session_keeps;
mod sim;
mod rows_relay;
mod tasks;
mod tasks_restart;
mod tasks_rows;
mod wire_details;
#[cfg(feature = "traces")]
mod traces;

/// A scripted upstream: answers `initialize` and list requests by itself;
/// everything else waits in `Pair::up` for the test.
#[derive(Clone)]
struct Fake {
    rev: &'static str,
    caps: Value,
    tools: Vec<Value>,
    resources: Vec<Value>,
    templates: Vec<Value>,
    prompts: Vec<Value>,
    /// Items per page of its own lists.
    page: usize,
    instructions: Option<&'static str>,
    /// Answers `resources/templates/list` with -32601 (a server without templates).
    no_templates: bool,
}

impl Fake {
    fn tools(names: &[&str]) -> Fake {
        Fake {
            rev: "2025-11-25",
            caps: json!({ "tools": { "listChanged": true } }),
            tools: names.iter().map(|n| tool(n)).collect(),
            resources: vec![],
            templates: vec![],
            prompts: vec![],
            page: 100,
            instructions: None,
            no_templates: false,
        }
    }
}

fn tool(name: &str) -> Value {
    json!({ "name": name, "description": format!("the {name} tool"), "inputSchema": { "type": "object" } })
}

struct Pair {
    hub: Hub,
    now: u64,
    fakes: Vec<Option<Fake>>,
    /// Messages to clients, parsed, and their raw bytes.
    cl: HashMap<ClientId, VecDeque<(Value, Vec<u8>)>>,
    /// Messages to upstreams the fakes did not handle.
    up: HashMap<UpstreamId, VecDeque<Value>>,
    restarts: Vec<(UpstreamId, &'static str)>,
    /// `Power` requests (lazy start, idle stop).
    power: Vec<(UpstreamId, Power)>,
    /// `ListsRead` reports.
    lists_read: Vec<UpstreamId>,
    closed: Vec<ClientId>,
    /// `ClientInitialized` events.
    initialized: Vec<(ClientId, mcpx_core::revision::Revision)>,
    /// `SessionChanged` events.
    changed: Vec<ClientId>,
    logs: Vec<(Level, String)>,
    /// `SaveTasks` contents, oldest first.
    saved: Vec<Vec<u8>>,
    /// `SavePins` contents, oldest first.
    pins_saved: Vec<Vec<u8>>,
    /// Progress tokens (raw JSON) that may arrive related to no request:
    /// a task's, after its request was answered with the task.
    task_tokens: Vec<Value>,
    /// Every message to an upstream, parsed, with what the hub said it is.
    upward: Vec<(UpstreamId, Value, Upward)>,
    /// Questions for the shared store (`shared`), oldest first.
    asks: VecDeque<shared::Ask>,
    /// `Forward`s to other replicas: (client, request id, msg, principal, to).
    forwards: Vec<(ClientId, Vec<u8>, Vec<u8>, Vec<u8>, ReplicaId)>,
    /// What the hub asked to tell the notify hook (`Output::Notify`).
    notices: Vec<(Carrier, Notice)>,
}

fn specs(names: &[&str]) -> Vec<UpstreamSpec> {
    names.iter().map(|n| UpstreamSpec::new(n)).collect()
}

/// Specs allowing the legacy revisions only: the hub sends `initialize` first
/// (no `server/discover` probe).
fn legacy_specs(names: &[&str]) -> Vec<UpstreamSpec> {
    let mut v = specs(names);
    for s in &mut v {
        s.revisions = ALL_REVS.iter().map(|r| r.to_string()).collect();
    }
    v
}

impl Pair {
    fn new(specs: Vec<UpstreamSpec>, mut opts: HubOptions) -> Pair {
        let n = specs.len();
        // Input requests are answered at once unless a test asks for the
        // coalescing window (see `input_requests_made_together_travel_together`).
        if opts.input_coalesce_ms == DEFAULT_INPUT_COALESCE_MS {
            opts.input_coalesce_ms = 0;
        }
        Pair {
            hub: Hub::new(specs, opts).expect("valid config"),
            now: 1000,
            fakes: vec![None; n],
            cl: HashMap::new(),
            up: HashMap::new(),
            restarts: vec![],
            power: vec![],
            lists_read: vec![],
            closed: vec![],
            initialized: vec![],
            changed: vec![],
            logs: vec![],
            saved: vec![],
            pins_saved: vec![],
            task_tokens: vec![],
            upward: vec![],
            asks: VecDeque::new(),
            forwards: vec![],
            notices: vec![],
        }
    }

    /// A hub with upstreams `fakes` started and ready.
    fn with(fakes: Vec<(&str, Fake)>, opts: HubOptions) -> Pair {
        let names: Vec<&str> = fakes.iter().map(|f| f.0).collect();
        let mut p = Pair::new(specs(&names), opts);
        for (u, (_, f)) in fakes.into_iter().enumerate() {
            p.start(u, f);
        }
        p
    }

    fn start(&mut self, u: UpstreamId, f: Fake) {
        if self.fakes.len() <= u {
            self.fakes.resize(u + 1, None); // an instance slot (`isolation`)
        }
        self.fakes[u] = Some(f);
        self.hub.handle(Input::UpstreamStarted(u), self.now);
        self.pump();
    }

    fn pump(&mut self) {
        loop {
            let mut replies: Vec<(UpstreamId, Value)> = Vec::new();
            while let Some(o) = self.hub.poll_output() {
                match o {
                    Output::ToClient(c, b, about) => {
                        let v: Value = serde_json::from_slice(&b).expect("hub sends JSON to clients");
                        check_about(&v, &b, &about, &self.task_tokens);
                        self.cl.entry(c).or_default().push_back((v, b));
                    }
                    Output::ClientInitialized(c, rev) => self.initialized.push((c, rev)),
                    Output::SessionChanged(c) => self.changed.push(c),
                    Output::ToUpstream(u, b, about) => {
                        let v: Value = serde_json::from_slice(&b).expect("hub sends JSON to upstreams");
                        check_upward(&v, &about, self.hub.ups[u].takes_headers());
                        self.upward.push((u, v.clone(), about));
                        match self.fakes.get(u).and_then(Option::as_ref).and_then(|f| f.answer(&v)) {
                            Some(Some(r)) => replies.push((u, r)),
                            Some(None) => {}
                            None => self.up.entry(u).or_default().push_back(v),
                        }
                    }
                    Output::RestartUpstream(u, why) => self.restarts.push((u, why)),
                    Output::Power(u, p) => self.power.push((u, p)),
                    Output::ListsRead(u) => self.lists_read.push(u),
                    Output::CloseClient(c) => self.closed.push(c),
                    Output::Log(l, s) => self.logs.push((l, s)),
                    Output::SaveTasks(b) => self.saved.push(b),
                    Output::SavePins(b) => self.pins_saved.push(b),
                    Output::Shared(a) => self.asks.push_back(a),
                    Output::Forward { client, request, msg, principal, to, .. } => self.forwards.push((client, request.bytes().to_vec(), msg, principal, to)),
                    #[cfg(feature = "consent")]
                    Output::Notify(n) => self.notices.push(*n),
                }
            }
            if replies.is_empty() {
                return;
            }
            for (u, r) in replies {
                self.hub.handle(Input::UpstreamMessage { up: u, msg: r.to_string().as_bytes(), on: None }, self.now);
            }
        }
    }

    fn connect(&mut self) -> ClientId {
        let c = self.hub.client_connected(self.now);
        self.pump();
        c
    }

    /// A client initialized on `rev` with `caps`.
    fn client(&mut self, rev: &str, caps: Value) -> ClientId {
        let c = self.connect();
        let init = self.request(c, json!(0), "initialize", json!({ "protocolVersion": rev, "capabilities": caps, "clientInfo": { "name": "test", "version": "1" } }));
        assert_eq!(init["result"]["protocolVersion"], rev, "{init}");
        self.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        c
    }

    fn send_raw(&mut self, c: ClientId, b: &[u8]) {
        self.hub.handle(Input::ClientMessage(c, b), self.now);
        self.pump();
    }

    fn send(&mut self, c: ClientId, v: Value) {
        self.send_raw(c, v.to_string().as_bytes());
    }

    /// Sends a request and returns the one message the client got back.
    fn request(&mut self, c: ClientId, id: Value, method: &str, params: Value) -> Value {
        self.send(c, json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        self.take(c)
    }

    fn take(&mut self, c: ClientId) -> Value {
        self.take_raw(c).0
    }

    fn take_raw(&mut self, c: ClientId) -> (Value, Vec<u8>) {
        self.cl.get_mut(&c).and_then(VecDeque::pop_front).expect("a message to the client")
    }

    fn client_quiet(&self, c: ClientId) -> bool {
        self.cl.get(&c).is_none_or(VecDeque::is_empty)
    }

    fn take_up(&mut self, u: UpstreamId) -> Value {
        self.up.get_mut(&u).and_then(VecDeque::pop_front).expect("a message to the upstream")
    }

    fn up_quiet(&self, u: UpstreamId) -> bool {
        self.up.get(&u).is_none_or(VecDeque::is_empty)
    }

    fn upstream_says(&mut self, u: UpstreamId, v: Value) {
        self.hub.handle(Input::UpstreamMessage { up: u, msg: v.to_string().as_bytes(), on: None }, self.now);
        self.pump();
    }

    /// `v` from HTTP upstream `u`, on the response stream of the hub's request `request`.
    fn upstream_says_on(&mut self, u: UpstreamId, v: Value, request: &Value) {
        self.hub.handle(Input::UpstreamMessage { up: u, msg: v.to_string().as_bytes(), on: Some(request.to_string().as_bytes()) }, self.now);
        self.pump();
    }

    fn advance(&mut self, ms: u64) {
        self.now += ms;
        self.hub.handle(Input::Tick, self.now);
        self.pump();
    }

    /// Every item of a list, following the hub's cursors.
    fn list_all(&mut self, c: ClientId, method: &str, key: &str) -> Vec<Value> {
        let mut out = vec![];
        let mut cursor: Option<String> = None;
        for i in 0..100 {
            let params = match &cursor {
                Some(cu) => json!({ "cursor": cu }),
                None => json!({}),
            };
            let r = self.request(c, json!(format!("list-{i}")), method, params);
            out.extend(r["result"][key].as_array().expect("items").iter().cloned());
            match r["result"]["nextCursor"].as_str() {
                Some(cu) => cursor = Some(cu.to_string()),
                None => return out,
            }
        }
        panic!("endless pagination");
    }

    fn names(&mut self, c: ClientId) -> Vec<String> {
        self.list_all(c, "tools/list", "tools").iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    }
}

impl Fake {
    /// `None`: not for the fake; `Some(None)`: consumed silently; `Some(Some(r))`: its answer.
    fn answer(&self, v: &Value) -> Option<Option<Value>> {
        let method = v.get("method").and_then(Value::as_str)?;
        let id = v.get("id").cloned();
        let page = |items: &Vec<Value>, key: &str| {
            let start: usize = v.pointer("/params/cursor").and_then(Value::as_str).map_or(0, |c| c.trim_start_matches('c').parse().unwrap());
            let end = (start + self.page).min(items.len());
            let mut r = json!({ key: items[start..end].to_vec() });
            if end < items.len() {
                r["nextCursor"] = json!(format!("c{end}"));
            }
            r
        };
        let modern = self.rev == "2026-07-28";
        let result = match method {
            "server/discover" if !modern => {
                return Some(Some(json!({ "jsonrpc": "2.0", "id": id?, "error": { "code": -32601, "message": "Method not found" } })));
            }
            "server/discover" => json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": self.caps,
                "ttlMs": 1000,
                "cacheScope": "public",
                "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "fake", "version": "0" } },
            }),
            "subscriptions/listen" if modern => return Some(None),
            "initialize" => {
                let mut r = json!({ "protocolVersion": self.rev, "capabilities": self.caps, "serverInfo": { "name": "fake", "version": "0" } });
                if let Some(i) = self.instructions {
                    r["instructions"] = json!(i);
                }
                r
            }
            "notifications/initialized" => return Some(None),
            "tools/list" => page(&self.tools, "tools"),
            "resources/list" => page(&self.resources, "resources"),
            "resources/templates/list" if self.no_templates => {
                return Some(Some(json!({ "jsonrpc": "2.0", "id": id?, "error": { "code": -32601, "message": "Method not found" } })));
            }
            "resources/templates/list" => page(&self.templates, "resourceTemplates"),
            "prompts/list" => page(&self.prompts, "prompts"),
            _ => return None,
        };
        let mut result = result;
        if modern && method.ends_with("/list") {
            result["resultType"] = json!("complete");
            result["ttlMs"] = json!(5000);
            result["cacheScope"] = json!("public");
        }
        Some(Some(json!({ "jsonrpc": "2.0", "id": id?, "result": result })))
    }
}

/// The capabilities mcpx declares to a 2026-07-28 upstream for a client
/// that declared `caps`: those, and MCP Apps, which mcpx answers for it.
fn relayed_caps(mut caps: Value) -> Value {
    caps["extensions"]["io.modelcontextprotocol/ui"] = json!({ "mimeTypes": ["text/html;profile=mcp-app"] });
    caps
}

/// Validates `instance` against definition `def` of `rev`'s schema.json, found
/// in `$MCPX_SPEC_DIR` or else beside the repository (`../shared/spec`).
fn schema_check(rev: &str, def: &str, instance: &Value) {
    let dir = std::env::var("MCPX_SPEC_DIR").unwrap_or_else(|_| format!("{}/../../shared/spec", env!("CARGO_MANIFEST_DIR")));
    let path = format!("{dir}/{rev}/schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("schema for {rev} missing ({path}): {e}"));
    let mut schema: Value = serde_json::from_str(&text).expect("schema is JSON");
    let key = if schema.get("$defs").is_some() { "$defs" } else { "definitions" };
    assert!(schema[key].get(def).is_some(), "{rev} has no definition {def}");
    schema["$ref"] = json!(format!("#/{key}/{def}"));
    let v = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = v.iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{rev} {def}: {errors:?}\n{instance}");
}

fn err_code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("an error: {v}"))
}

const ALL_REVS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

// ---------------------------------------------------------------- handshake

// row: lifecycle-server-echoes-supported-version
// row: lifecycle-server-responds-caps-and-info
// row: lifecycle-implementation-name-version-required
#[test]
fn client_handshake_echoes_each_supported_revision() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    for rev in ALL_REVS {
        let c = p.connect();
        let r = p.request(c, json!(1), "initialize", json!({ "protocolVersion": rev, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }));
        assert_eq!(r["result"]["protocolVersion"], rev);
        assert_eq!(p.hub.clients().revision(c), Some(rev));
        assert_eq!(r["result"]["serverInfo"]["name"], "mcpx");
        assert!(r["result"]["instructions"].as_str().unwrap().contains("fs fs__: ready"));
        schema_check(rev, "JSONRPCResponse", &r);
        schema_check(rev, "InitializeResult", &r["result"]);
    }
}

// row: lifecycle-server-counteroffers-version
// row: lifecycle-server-counteroffers-latest
#[test]
fn client_handshake_counteroffers_latest_for_unknown_versions() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    for asked in ["2026-07-28", "1999-01-01", ""] {
        let c = p.connect();
        let r = p.request(c, json!(1), "initialize", json!({ "protocolVersion": asked, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }));
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    }
}

// row: tools-declare-capability
// row: resources-declare-capability
// row: prompts-declare-capability
// row: completion-declare-capability
// row: logging-declare-capability
#[test]
fn capabilities_are_the_union_of_the_upstreams() {
    let mut a = Fake::tools(&["x"]);
    a.caps = json!({ "tools": {}, "logging": {} });
    let mut b = Fake::tools(&[]);
    b.caps = json!({ "prompts": {}, "completions": {} });
    let mut p = Pair::with(vec![("a", a), ("b", b)], HubOptions::default());
    let c = p.connect();
    let r = p.request(c, json!(1), "initialize", json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }));
    let caps = &r["result"]["capabilities"];
    assert_eq!(caps["tools"], json!({ "listChanged": true }));
    assert_eq!(caps["prompts"], json!({ "listChanged": true }));
    assert_eq!(caps["logging"], json!({}));
    assert_eq!(caps["completions"], json!({}));
    assert!(caps.get("resources").is_none(), "no upstream has resources: {caps}");
    // 2024-11-05 has no completions capability.
    let c = p.connect();
    let r = p.request(c, json!(1), "initialize", json!({ "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }));
    assert!(r["result"]["capabilities"].get("completions").is_none());
}

#[test]
fn initialize_is_held_until_upstreams_have_started() {
    let mut p = Pair::new(legacy_specs(&["a", "b"]), HubOptions::default());
    p.fakes[0] = Some(Fake::tools(&["x"]));
    p.fakes[1] = Some(Fake::tools(&["y"]));
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.hub.handle(Input::UpstreamStarted(1), p.now);
    // Upstream b is slow: hold its initialize answer by taking the fake away.
    p.fakes[1] = None;
    p.pump();
    let c = p.connect();
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } }));
    assert!(p.client_quiet(c), "held while b starts");
    // The hub alone tracks what is unanswered: the runtime asks it.
    assert!(p.hub.clients().initializing(c) && p.hub.clients().request_open(c, b"1"));
    assert_eq!((p.hub.clients().open_requests_of(c), p.initialized.len()), (1, 0));
    let init = p.take_up(1);
    assert_eq!(init["method"], "initialize");
    p.fakes[1] = Some(Fake::tools(&["y"]));
    let answer = p.fakes[1].as_ref().unwrap().answer(&init).unwrap().unwrap();
    p.upstream_says(1, answer);
    let r = p.take(c);
    assert_eq!(r["id"], 1);
    assert!(!p.hub.clients().initializing(c) && !p.hub.clients().request_open(c, b"1"));
    assert_eq!(p.initialized, [(c, mcpx_core::revision::Revision::V2025_11_25)]);
    assert_eq!(p.names(c), ["a__x", "b__y"]);
}

#[test]
fn initialize_is_answered_after_the_startup_wait() {
    let mut p = Pair::new(legacy_specs(&["slow"]), HubOptions { startup_wait_ms: 5000, ..HubOptions::default() });
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    let c = p.connect();
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } }));
    assert!(p.client_quiet(c));
    assert_eq!(p.hub.next_deadline(), Some(1000 + 5000));
    p.advance(5000);
    assert_eq!(p.take(c)["result"]["protocolVersion"], "2025-11-25");
}

// row: lifecycle-client-sends-initialize
// row: lifecycle-client-sends-latest-version
// row: lifecycle-client-sends-initialized-after-init
#[test]
fn upstream_handshake_offers_the_newest_allowed_revision() {
    let mut spec = UpstreamSpec::new("old");
    spec.revisions = vec!["2024-11-05".into(), "2025-03-26".into()];
    let mut p = Pair::new(vec![spec, legacy_specs(&["new"]).remove(0)], HubOptions::default());
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.hub.handle(Input::UpstreamStarted(1), p.now);
    p.pump();
    let a = p.take_up(0);
    let b = p.take_up(1);
    assert_eq!(a["params"]["protocolVersion"], "2025-03-26");
    assert_eq!(b["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(a["params"]["clientInfo"]["name"], "mcpx");
    schema_check("2025-03-26", "InitializeRequest", &a);
    schema_check("2025-11-25", "InitializeRequest", &b);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": a["id"], "result": { "protocolVersion": "2025-03-26", "capabilities": {}, "serverInfo": { "name": "o", "version": "1" } } }));
    assert_eq!(p.take_up(0)["method"], "notifications/initialized");
    assert_eq!(p.hub.status()["upstreams"][0]["state"], "ready");
    assert_eq!(p.hub.status()["upstreams"][0]["revision"], "2025-03-26");
}

// row: lifecycle-client-disconnects-on-unsupported-version
#[test]
fn upstream_answering_an_unsupported_revision_is_restarted() {
    let mut p = Pair::new(legacy_specs(&["odd"]), HubOptions::default());
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    let init = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": init["id"], "result": { "protocolVersion": "2099-01-01", "capabilities": { "tools": {} }, "serverInfo": { "name": "o", "version": "1" } } }));
    assert_eq!(p.restarts, vec![(0, "unsupported protocol version")]);
    assert!(p.up_quiet(0), "no initialized notification, no lists");
    let st = p.hub.status();
    assert_eq!(st["upstreams"][0]["state"], "failed");
    assert!(st["upstreams"][0]["lastError"].as_str().unwrap().contains("2099-01-01"));
}

// row: lifecycle-cancel-not-initialize
// row: cancellation-client-must-not-cancel-initialize
#[test]
fn upstream_initialize_timeout_restarts_without_cancelling() {
    let mut p = Pair::new(legacy_specs(&["mute"]), HubOptions { init_timeout_ms: 3000, ..HubOptions::default() });
    p.hub.handle(Input::UpstreamStarted(0), p.now);
    p.pump();
    assert_eq!(p.take_up(0)["method"], "initialize");
    assert_eq!(p.hub.next_deadline(), Some(4000));
    p.advance(2999);
    assert!(p.restarts.is_empty());
    p.advance(1);
    assert_eq!(p.restarts, vec![(0, "initialize timed out")]);
    assert!(p.up_quiet(0), "initialize is never cancelled");
}

// row: ping-receiver-responds-promptly-empty
#[test]
fn pings_are_answered_both_ways() {
    let mut p = Pair::with(vec![("a", Fake::tools(&["x"]))], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    let r = p.request(c, json!("p"), "ping", json!({}));
    assert_eq!(r, json!({ "jsonrpc": "2.0", "id": "p", "result": {} }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "up-ping", "method": "ping" }));
    assert_eq!(p.take_up(0), json!({ "jsonrpc": "2.0", "id": "up-ping", "result": {} }));
}

// ---------------------------------------------------------------- aggregation

// row: pagination-no-fixed-page-size
// row: pagination-stable-cursors
// row: pagination-cursor-opaque
// row: tools-list-deterministic-order
#[test]
fn aggregation_follows_pagination_on_both_sides() {
    let mut a = Fake::tools(&["read", "write", "stat", "list", "move"]);
    a.page = 2; // the hub must follow this upstream's nextCursor
    let mut b = Fake::tools(&["search", "fetch", "open"]);
    b.page = 1;
    let mut p = Pair::with(vec![("fs", a), ("web", b)], HubOptions { page_size: 3, ..HubOptions::default() });
    let c = p.client("2025-11-25", json!({}));
    let first = p.request(c, json!(1), "tools/list", json!({}));
    assert_eq!(first["result"]["tools"].as_array().unwrap().len(), 3);
    let cursor = first["result"]["nextCursor"].as_str().unwrap().to_string();
    schema_check("2025-11-25", "ListToolsResult", &first["result"]);
    // The same cursor gives the same page (stable while the list is).
    let again1 = p.request(c, json!(2), "tools/list", json!({ "cursor": cursor }));
    let again2 = p.request(c, json!(3), "tools/list", json!({ "cursor": cursor }));
    assert_eq!(again1["result"], again2["result"]);
    assert_eq!(
        p.names(c),
        ["fs__read", "fs__write", "fs__stat", "fs__list", "fs__move", "web__search", "web__fetch", "web__open"]
    );
    let st = p.hub.status();
    assert_eq!(st["upstreams"][0]["tools"], 5);
    assert_eq!(st["upstreams"][1]["tools"], 3);
}

// row: pagination-invalid-cursor-32602
// row: pagination-invalid-cursor-graceful
#[test]
fn forged_or_foreign_cursors_are_invalid_params() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["a", "b", "c"]))], HubOptions { page_size: 1, ..HubOptions::default() });
    let c = p.client("2025-11-25", json!({}));
    let r = p.request(c, json!(1), "tools/list", json!({}));
    let good = r["result"]["nextCursor"].as_str().unwrap().to_string();
    let mut forged = good.clone().into_bytes();
    forged[8] = if forged[8] == b'A' { b'B' } else { b'A' };
    for bad in [json!(String::from_utf8(forged).unwrap()), json!("nonsense"), json!(""), json!(7)] {
        let r = p.request(c, json!(2), "tools/list", json!({ "cursor": bad }));
        assert_eq!(err_code(&r), -32602, "{bad}: {r}");
        assert_eq!(r["id"], 2);
    }
    // A tools cursor is not a prompts cursor.
    let r = p.request(c, json!(3), "prompts/list", json!({ "cursor": good }));
    assert_eq!(err_code(&r), -32602);
}

#[test]
fn names_are_valid_unique_and_shortened() {
    let long = "a_very_long_tool_name_that_goes_on_and_on_and_on_past_the_limit_of_64";
    let mut p = Pair::with(
        vec![("one", Fake::tools(&["echo", "dotted.name", long])), ("two", Fake::tools(&["echo"]))],
        HubOptions::default(),
    );
    let c = p.client("2025-11-25", json!({}));
    let names = p.names(c);
    assert_eq!(names[0], "one__echo");
    assert!(names[1].starts_with("one__dotted_name_") && names[1].len() == "one__dotted_name_".len() + 8, "{names:?}");
    assert_eq!(names[2].len(), 64);
    assert_eq!(names[3], "two__echo");
    for n in &names {
        assert!(mcpx_core::names::is_valid(n), "{n}");
    }
    // The shortened and the hashed names route back to the upstream's names.
    for (i, orig) in [(1, "dotted.name"), (2, long)] {
        p.send(c, json!({ "jsonrpc": "2.0", "id": i, "method": "tools/call", "params": { "name": names[i], "arguments": {} } }));
        assert_eq!(p.take_up(0)["params"]["name"], orig);
    }
}

#[test]
fn unprefixed_servers_sharing_a_tool_name_get_distinct_names() {
    let mut s = specs(&["a", "b"]);
    s[0].prefix = String::new();
    s[1].prefix = String::new();
    let mut p = Pair::new(s, HubOptions::default());
    p.start(0, Fake::tools(&["echo", "only_a"]));
    p.start(1, Fake::tools(&["echo"]));
    let c = p.client("2025-11-25", json!({}));
    let names = p.names(c);
    assert_eq!(names[..2], ["echo", "only_a"]);
    assert!(names[2].starts_with("echo_") && names[2] != "echo", "{names:?}");
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": names[2] } }));
    let call = p.take_up(1);
    assert_eq!(call["params"]["name"], "echo");
}

#[test]
fn config_errors() {
    let e = |s: Vec<UpstreamSpec>, o: HubOptions| Hub::new(s, o).err().expect("refused");
    assert_eq!(e(specs(&["a", "a"]), HubOptions::default()), ConfigError::DuplicateName("a".into()));
    let mut s = specs(&["a.b", "a_b"]);
    s[0].prefix = "a.b".into();
    s[1].prefix = "a.b".into();
    assert!(matches!(e(s, HubOptions::default()), ConfigError::PrefixCollision(..)));
    assert!(matches!(e(specs(&["a"]), HubOptions { separator: "::".into(), ..HubOptions::default() }), ConfigError::BadSeparator(_)));
    let mut s = specs(&["a"]);
    s[0].revisions = vec!["2025-13-01".into()];
    assert!(matches!(e(s, HubOptions::default()), ConfigError::UnknownRevision { .. }));
    let mut s = specs(&["a"]);
    s[0].revisions = vec!["2026-07-28".into()];
    assert!(Hub::new(s, HubOptions::default()).is_ok(), "modern-only upstreams are fine");
    assert_eq!(e(specs(&[""]), HubOptions::default()), ConfigError::EmptyName);
}

#[test]
fn tool_allow_and_deny_filters() {
    let mut s = specs(&["fs"]);
    s[0].tools_allow = vec!["read_*".into(), "stat".into()];
    s[0].tools_deny = vec!["*_secret".into()];
    let mut p = Pair::new(s, HubOptions::default());
    p.start(0, Fake::tools(&["read_file", "read_secret", "stat", "write_file"]));
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["fs__read_file", "fs__stat"]);
    let r = p.request(c, json!(1), "tools/call", json!({ "name": "fs__write_file" }));
    assert_eq!(err_code(&r), -32602);
}

// ---------------------------------------------------------------- routing

// row: messages-response-same-id
// row: messages-request-id-string-or-integer
#[test]
fn calls_are_routed_with_ids_restored_byte_for_byte() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"])), ("web", Fake::tools(&["fetch"]))], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    let ids: [&str; 4] = ["\"abc \\\"q\\\" \\u00e9\"", "123456789012345678901234567890", "-7", "0"];
    for (i, raw_id) in ids.iter().enumerate() {
        let (tool, u) = if i % 2 == 0 { ("fs__read", 0) } else { ("web__fetch", 1) };
        let msg = format!(r#"{{"jsonrpc":"2.0","id":{raw_id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"n":123456789012345678901234567890}}}}}}"#);
        p.send_raw(c, msg.as_bytes());
        let up = p.take_up(u);
        assert_eq!(up["method"], "tools/call");
        assert_eq!(up["params"]["name"], tool.split("__").nth(1).unwrap());
        assert!(up["id"].is_u64(), "fresh integer ids upstream: {up}");
        p.upstream_says(u, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [{ "type": "text", "text": "ok" }] } }));
        let (v, raw) = p.take_raw(c);
        let expect = format!("\"id\":{raw_id},");
        assert!(String::from_utf8_lossy(&raw).contains(&expect), "{}", String::from_utf8_lossy(&raw));
        assert_eq!(v["result"]["content"][0]["text"], "ok");
        schema_check("2025-11-25", "JSONRPCResultResponse", &v);
    }
}

#[test]
fn arguments_are_forwarded_untouched() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    let msg = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs__read","arguments":{"big":123456789012345678901234567890,"s":"\u00e9"}}}"#;
    p.send_raw(c, msg);
    // Inspect raw bytes: the argument object is copied as is.
    let up = p.take_up(0);
    assert_eq!(up["params"]["arguments"]["s"], "é");
    // (serde_json parses the big number as a float in the harness; the hub
    // itself never parsed it: see the byte check below.)
    let mut hub = Hub::new(legacy_specs(&["fs"]), HubOptions::default()).unwrap();
    hub.handle(Input::UpstreamStarted(0), 0);
    let init = loop {
        match hub.poll_output() {
            Some(Output::ToUpstream(0, b, _)) => break b,
            Some(_) => continue,
            None => panic!("no initialize"),
        }
    };
    let init: Value = serde_json::from_slice(&init).unwrap();
    let ans = json!({ "jsonrpc": "2.0", "id": init["id"], "result": { "protocolVersion": "2025-11-25", "capabilities": { "tools": {} }, "serverInfo": { "name": "f", "version": "1" } } });
    hub.handle(Input::UpstreamMessage { up: 0, msg: ans.to_string().as_bytes(), on: None }, 0);
    hub.handle(Input::UpstreamMessage { up: 0, msg: br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"read","inputSchema":{"type":"object"}}]}}"#, on: None }, 0);
    let c = hub.client_connected(0);
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    hub.handle(Input::ClientMessage(c, init.to_string().as_bytes()), 0);
    hub.handle(Input::ClientMessage(c, msg), 0);
    let mut found = false;
    while let Some(o) = hub.poll_output() {
        if let Output::ToUpstream(0, b, _) = o {
            let s = String::from_utf8(b).unwrap();
            if s.contains("tools/call") {
                assert!(s.contains(r#""arguments":{"big":123456789012345678901234567890,"s":"\u00e9"}"#), "{s}");
                found = true;
            }
        }
    }
    assert!(found);
}

// row: tools-error-unknown-tool-protocol
// row: tools-result-lookup-errors-protocol
// row: prompts-errors-32602-32603
// row: resources-not-found-32002
#[test]
fn unknown_names_get_the_right_errors() {
    let mut f = Fake::tools(&["read"]);
    f.caps = json!({ "tools": {}, "prompts": {} });
    f.prompts = vec![json!({ "name": "greet" })];
    let mut g = Fake::tools(&[]);
    g.caps = json!({ "resources": {} });
    let mut p = Pair::with(vec![("fs", f), ("b", g.clone()), ("c", g)], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    let r = p.request(c, json!(1), "tools/call", json!({ "name": "nope" }));
    assert_eq!(err_code(&r), -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("nope"));
    schema_check("2025-11-25", "JSONRPCErrorResponse", &r);
    let r = p.request(c, json!(2), "prompts/get", json!({ "name": "nope" }));
    assert_eq!(err_code(&r), -32602);
    let r = p.request(c, json!(3), "resources/read", json!({ "uri": "file:///nowhere" }));
    assert_eq!(err_code(&r), -32002);
    let r = p.request(c, json!(4), "tools/call", json!({}));
    assert_eq!(err_code(&r), -32602);
}

// row: prompts-list-changed-notify
#[test]
fn prompts_and_completions_are_routed() {
    let mut f = Fake::tools(&[]);
    f.caps = json!({ "prompts": {}, "completions": {} });
    f.prompts = vec![json!({ "name": "greet", "title": "Greeting", "arguments": [{ "name": "who", "title": "Who" }] })];
    let mut p = Pair::with(vec![("p", f)], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    let list = p.list_all(c, "prompts/list", "prompts");
    assert_eq!(list[0]["name"], "p__greet");
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": { "name": "p__greet", "arguments": { "who": "x" } } }));
    let up = p.take_up(0);
    assert_eq!(up["params"]["name"], "greet");
    p.send(c, json!({ "jsonrpc": "2.0", "id": 2, "method": "completion/complete", "params": { "ref": { "type": "ref/prompt", "name": "p__greet" }, "argument": { "name": "who", "value": "a" } } }));
    let up = p.take_up(0);
    assert_eq!(up["method"], "completion/complete");
    assert_eq!(up["params"]["ref"]["name"], "greet");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "completion": { "values": ["alice"] } } }));
    let r = p.take(c);
    assert_eq!(r["id"], 2);
    schema_check("2025-11-25", "CompleteResult", &r["result"]);
    // 2025-03-26 clients do not see prompt titles.
    let old = p.client("2025-03-26", json!({}));
    let list = p.list_all(old, "prompts/list", "prompts");
    assert!(list[0].get("title").is_none() && list[0]["arguments"][0].get("title").is_none());
    schema_check("2025-03-26", "ListPromptsResult", &json!({ "prompts": list }));
}

#[test]
fn resources_keep_their_uris_and_duplicates_are_namespaced() {
    let mut a = Fake::tools(&[]);
    a.caps = json!({ "resources": { "subscribe": true } });
    a.resources = vec![json!({ "uri": "file:///readme", "name": "readme" }), json!({ "uri": "mem://a", "name": "a" })];
    a.templates = vec![json!({ "uriTemplate": "db://a/{table}", "name": "tables" })];
    let mut b = a.clone();
    b.resources = vec![json!({ "uri": "file:///readme", "name": "readme" })];
    b.templates = vec![json!({ "uriTemplate": "gh://{owner}/{repo}", "name": "repos" })];
    let mut p = Pair::with(vec![("a", a), ("b", b)], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    let res = p.list_all(c, "resources/list", "resources");
    let uris: Vec<&str> = res.iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, ["file:///readme", "mem://a", "mcpx://b/file:///readme"]);
    let t = p.list_all(c, "resources/templates/list", "resourceTemplates");
    assert_eq!(t.len(), 2);
    // Each URI goes to its server, with the upstream's own URI.
    for (uri, u, orig) in [
        ("file:///readme", 0, "file:///readme"),
        ("mcpx://b/file:///readme", 1, "file:///readme"),
        ("db://a/users", 0, "db://a/users"),
        ("gh://me/mcpx", 1, "gh://me/mcpx"),
    ] {
        p.send(c, json!({ "jsonrpc": "2.0", "id": uri, "method": "resources/read", "params": { "uri": uri } }));
        let up = p.take_up(u);
        assert_eq!(up["params"]["uri"], orig, "{uri}");
        p.upstream_says(u, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "contents": [{ "uri": orig, "text": "x" }] } }));
        let r = p.take(c);
        assert_eq!(r["id"], uri);
        assert_eq!(r["result"]["contents"][0]["uri"], uri, "contents carry the URI the client asked for");
    }
}

// ---------------------------------------------------------------- progress, cancellation, timeouts

/// A hub with one tools upstream "fs" (timeout 10 s, hard max 25 s) and a client.
fn one(rev: &str, caps: Value) -> (Pair, ClientId) {
    let mut s = specs(&["fs"]);
    s[0].timeout_ms = 10_000;
    let mut p = Pair::new(s, HubOptions { max_timeout_ms: 25_000, ..HubOptions::default() });
    p.start(0, Fake::tools(&["read", "slow"]));
    let c = p.client(rev, caps);
    (p, c)
}

// row: progress-token-unique-sender
// row: progress-only-active-tokens
#[test]
fn progress_tokens_are_unique_upstream_and_mapped_back() {
    let (mut p, c) = one("2025-11-25", json!({}));
    let c2 = p.client("2025-11-25", json!({}));
    // Two clients use the same token: the upstream sees two distinct ones.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__slow", "_meta": { "progressToken": "tok" } } }));
    p.send(c2, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__slow", "_meta": { "progressToken": "tok" } } }));
    let a = p.take_up(0);
    let b = p.take_up(0);
    let (ta, tb) = (a["params"]["_meta"]["progressToken"].clone(), b["params"]["_meta"]["progressToken"].clone());
    assert_ne!(ta, tb);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": tb, "progress": 1, "total": 2, "message": "half" } }));
    assert!(p.client_quiet(c));
    let n = p.take(c2);
    assert_eq!(n, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": "tok", "progress": 1, "total": 2, "message": "half" } }));
    schema_check("2025-11-25", "ProgressNotification", &n);
    // A 2024-11-05 client gets no progress message.
    let old = p.client("2024-11-05", json!({}));
    p.send(old, json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": { "name": "fs__slow", "_meta": { "progressToken": 42 } } }));
    let o = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": o["params"]["_meta"]["progressToken"], "progress": 5, "message": "x" } }));
    let n = p.take(old);
    assert_eq!(n["params"], json!({ "progressToken": 42, "progress": 5 }));
    schema_check("2024-11-05", "ProgressNotification", &n);
    // After the answer the token is dead.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": a["id"], "result": { "content": [] } }));
    assert_eq!(p.take(c)["id"], 1);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": ta, "progress": 3 } }));
    assert!(p.client_quiet(c));
}

// row: cancellation-ref-same-direction-in-progress
// row: cancellation-sender-ignore-late-response
// row: cancellation-handle-races
#[test]
fn client_cancellation_reaches_only_the_right_upstream_request() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"])), ("web", Fake::tools(&["fetch"]))], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    p.send(c, json!({ "jsonrpc": "2.0", "id": "x", "method": "tools/call", "params": { "name": "web__fetch" } }));
    let up = p.take_up(1);
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "x", "reason": "user" } }));
    let cancel = p.take_up(1);
    assert_eq!(cancel, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": up["id"], "reason": "user" } }));
    assert!(p.up_quiet(0), "never broadcast");
    // A late answer is dropped; a second cancel is ignored.
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    assert!(p.client_quiet(c));
    p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": "x" } }));
    assert!(p.up_quiet(1));
    assert_eq!(p.hub.status()["pending"], 0);
}

// row: lifecycle-timeouts-establish
// row: lifecycle-timeouts-cancel-on-expiry
// row: lifecycle-timeouts-max-regardless-of-progress
#[test]
fn timeouts_cancel_upstream_and_name_the_server() {
    let (mut p, c) = one("2025-11-25", json!({}));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": { "name": "fs__slow", "_meta": { "progressToken": 1 } } }));
    let up = p.take_up(0);
    assert_eq!(p.hub.next_deadline(), Some(p.now + 10_000));
    // Progress resets the clock ...
    p.advance(9_000);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": up["params"]["_meta"]["progressToken"], "progress": 1 } }));
    p.take(c);
    p.advance(9_000);
    assert!(p.client_quiet(c), "18 s after the call, 9 s after progress: still waiting");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": up["params"]["_meta"]["progressToken"], "progress": 2 } }));
    p.take(c);
    // ... but never past the hard maximum (25 s).
    p.advance(7_000);
    let e = p.take(c);
    assert_eq!(e["id"], 5);
    assert_eq!(err_code(&e), -32603);
    let msg = e["error"]["message"].as_str().unwrap();
    assert!(msg.contains("'fs'") && msg.contains("25000 ms"), "{msg}");
    let cancel = p.take_up(0);
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], up["id"]);
    assert_eq!(p.hub.next_deadline(), None);
    // Plain timeout without progress.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": { "name": "fs__read" } }));
    p.take_up(0);
    p.advance(10_000);
    let e = p.take(c);
    assert!(e["error"]["message"].as_str().unwrap().contains("10000 ms"));
    schema_check("2025-11-25", "JSONRPCErrorResponse", &e);
}

// ---------------------------------------------------------------- relays

// row: elicitation-client-show-requesting-server
#[test]
fn elicitation_is_relayed_with_the_server_named() {
    let (mut p, c) = one("2025-11-25", json!({ "elicitation": {} }));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
    p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": { "mode": "form", "message": "Which file?", "requestedSchema": { "type": "object", "properties": { "f": { "type": "string" } } } } }));
    let q = p.take(c);
    assert_eq!(q["method"], "elicitation/create");
    assert_eq!(q["params"]["message"], "[fs] Which file?");
    schema_check("2025-11-25", "ElicitRequest", &q);
    p.send(c, json!({ "jsonrpc": "2.0", "id": q["id"], "result": { "action": "accept", "content": { "f": "a.txt" } } }));
    assert_eq!(p.take_up(0), json!({ "jsonrpc": "2.0", "id": "e1", "result": { "action": "accept", "content": { "f": "a.txt" } } }));
}

#[test]
fn elicitation_for_2025_06_18_has_no_mode_and_url_mode_is_refused() {
    let (mut p, c) = one("2025-06-18", json!({ "elicitation": {} }));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
    p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 7, "method": "elicitation/create", "params": { "mode": "form", "message": "Name?", "requestedSchema": { "type": "object", "properties": {} } } }));
    let q = p.take(c);
    assert!(q["params"].get("mode").is_none(), "{q}");
    schema_check("2025-06-18", "ElicitRequest", &q);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 8, "method": "elicitation/create", "params": { "mode": "url", "message": "Log in", "url": "https://x", "elicitationId": "e" } }));
    let e = p.take_up(0);
    assert_eq!(e["id"], 8);
    assert_eq!(err_code(&e), -32601);
}

// row: roots-client-return-jsonrpc-errors
#[test]
fn requests_the_client_did_not_declare_are_refused_to_the_upstream() {
    let (mut p, c) = one("2025-11-25", json!({}));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
    p.take_up(0);
    for (i, m) in ["sampling/createMessage", "elicitation/create", "roots/list"].iter().enumerate() {
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": i, "method": m, "params": { "message": "x", "messages": [], "maxTokens": 1 } }));
        let e = p.take_up(0);
        assert_eq!(e["id"], i);
        assert_eq!(err_code(&e), -32601, "{m}");
    }
    assert!(p.client_quiet(c));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/list" }));
    assert_eq!(err_code(&p.take_up(0)), -32601);
}

#[test]
fn sampling_is_relayed_to_the_calling_client_and_cancellable() {
    let (mut p, c) = one("2025-11-25", json!({ "sampling": {} }));
    let other = p.client("2025-11-25", json!({ "sampling": {} }));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
    p.take_up(0);
    let params = json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": "hi" } }], "maxTokens": 10 });
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 77, "method": "sampling/createMessage", "params": params }));
    let q = p.take(c);
    assert!(p.client_quiet(other));
    schema_check("2025-11-25", "CreateMessageRequest", &q);
    // The upstream gives up: the client is told, by the client-side id.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 77 } }));
    let n = p.take(c);
    assert_eq!(n["method"], "notifications/cancelled");
    assert_eq!(n["params"]["requestId"], q["id"]);
    // A second one is answered with an error by the client.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 78, "method": "sampling/createMessage", "params": params }));
    let q = p.take(c);
    p.send(c, json!({ "jsonrpc": "2.0", "id": q["id"], "error": { "code": -1, "message": "User rejected" } }));
    assert_eq!(p.take_up(0), json!({ "jsonrpc": "2.0", "id": 78, "error": { "code": -1, "message": "User rejected" } }));
}

#[test]
fn relayed_requests_time_out() {
    let mut s = specs(&["fs"]);
    s[0].timeout_ms = 1_000_000;
    let mut p = Pair::new(s, HubOptions { relay_timeout_ms: 2_000, ..HubOptions::default() });
    p.start(0, Fake::tools(&["read"]));
    let c = p.client("2025-11-25", json!({ "roots": {} }));
    // No call in flight and the client has not listed yet: refused, not sent.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 2, "method": "roots/list" }));
    assert_eq!(p.take_up(0)["id"], 2);
    assert!(p.client_quiet(c));
    p.names(c);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 3, "method": "roots/list" }));
    let q = p.take(c);
    assert_eq!(q["method"], "roots/list");
    p.advance(2_000);
    let e = p.take_up(0);
    assert_eq!(e["id"], 3);
    assert!(e["error"]["message"].as_str().unwrap().contains("2000 ms"));
    assert_eq!(p.take(c)["method"], "notifications/cancelled");
}

#[test]
fn roots_from_the_configuration() {
    let mut p = Pair::new(specs(&["fs"]), HubOptions { roots: Some(json!([{ "uri": "file:///work", "name": "work" }])), ..HubOptions::default() });
    p.start(0, Fake::tools(&["read"]));
    let c = p.client("2025-11-25", json!({ "roots": { "listChanged": true } }));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "r", "method": "roots/list" }));
    let r = p.take_up(0);
    assert_eq!(r, json!({ "jsonrpc": "2.0", "id": "r", "result": { "roots": [{ "uri": "file:///work", "name": "work" }] } }));
    schema_check("2025-11-25", "ListRootsResult", &r["result"]);
    assert!(p.client_quiet(c));
}

// ---------------------------------------------------------------- list_changed, exits

// row: tools-list-changed-notify
// row: tools-list-changed-means-emit
#[test]
fn list_changed_only_after_listing_and_only_on_a_real_change() {
    let mut p = Pair::new(specs(&["a", "b"]), HubOptions { startup_wait_ms: 0, ..HubOptions::default() });
    p.start(0, Fake::tools(&["x"]));
    let c = p.client("2024-11-05", json!({}));
    // b comes up before the client listed: nothing unsolicited (old SDK deadlock).
    p.start(1, Fake::tools(&["y"]));
    assert!(p.client_quiet(c));
    assert_eq!(p.names(c), ["a__x", "b__y"]);
    // a re-lists the same tools: no change, no notification.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    assert!(p.client_quiet(c));
    // a changes a field this 2024-11-05 client cannot see (title): still nothing.
    p.fakes[0].as_mut().unwrap().tools[0]["title"] = json!("X!");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    assert!(p.client_quiet(c));
    // A 2025-06-18 client that listed does see it.
    let c2 = p.client("2025-06-18", json!({}));
    p.names(c2);
    p.fakes[0].as_mut().unwrap().tools[0]["title"] = json!("X!!");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    assert_eq!(p.take(c2), json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    assert!(p.client_quiet(c));
    // A real change reaches both, once.
    p.fakes[0].as_mut().unwrap().tools.push(tool("z"));
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    assert_eq!(p.take(c)["method"], "notifications/tools/list_changed");
    assert_eq!(p.take(c2)["method"], "notifications/tools/list_changed");
    assert!(p.client_quiet(c) && p.client_quiet(c2));
    assert_eq!(p.names(c), ["a__x", "a__z", "b__y"]);
    // A client that never listed is never told.
    let silent = p.client("2025-11-25", json!({}));
    p.fakes[0].as_mut().unwrap().tools.pop();
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    assert!(p.client_quiet(silent));
    assert_eq!(p.take(c)["method"], "notifications/tools/list_changed");
}

#[test]
fn an_upstream_exiting_mid_call_fails_the_call_and_comes_back() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"])), ("web", Fake::tools(&["fetch"]))], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["fs__read", "web__fetch"]);
    p.send(c, json!({ "jsonrpc": "2.0", "id": "call-1", "method": "tools/call", "params": { "name": "web__fetch" } }));
    p.take_up(1);
    p.hub.handle(Input::UpstreamExited { up: 1, reason: "exit status 1", stderr_tail: "Traceback ...\nValueError: boom", next: Next::Now }, p.now);
    p.pump();
    let e = p.take(c);
    assert_eq!(e["id"], "call-1");
    assert!(e["error"]["message"].as_str().unwrap().contains("'web'"), "{e}");
    // Its tools stay listed while it restarts (no list change to announce).
    assert!(p.client_quiet(c));
    assert_eq!(p.names(c), ["fs__read", "web__fetch"]);
    let st = p.hub.status();
    assert_eq!(st["upstreams"][1]["state"], "down");
    assert!(st["upstreams"][1]["lastError"].as_str().unwrap().contains("ValueError: boom"));
    // While it is down a call says so, not "unknown tool".
    let r = p.request(c, json!(2), "tools/call", json!({ "name": "web__fetch" }));
    assert_eq!(err_code(&r), -32603);
    assert!(r["error"]["message"].as_str().unwrap().contains("server 'web' is restarting"), "{r}");
    // It comes back with the same tools: nothing changed for the client.
    p.start(1, Fake::tools(&["fetch"]));
    assert!(p.client_quiet(c));
    assert_eq!(p.names(c), ["fs__read", "web__fetch"]);
    assert_eq!(p.hub.status()["upstreams"][1]["restarts"], 1);
    p.send(c, json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "web__fetch" } }));
    let up = p.take_up(1);
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    assert_eq!(p.take(c)["id"], 3);
}

// ---------------------------------------------------------------- shaping

fn call_returning(rev: &str, result: Value) -> Value {
    let (mut p, c) = one(rev, json!({}));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
    let up = p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": result }));
    let r = p.take(c);
    schema_check(rev, "CallToolResult", &r["result"]);
    r["result"].clone()
}

#[test]
fn results_are_shaped_for_older_clients() {
    let rich = json!({
        "content": [
            { "type": "text", "text": "t", "_meta": { "k": 1 } },
            { "type": "audio", "data": "AAAA", "mimeType": "audio/wav" },
            { "type": "resource_link", "uri": "file:///a", "name": "a", "title": "A" },
        ],
        "structuredContent": { "n": 1 },
    });
    // 2025-11-25: untouched.
    assert_eq!(call_returning("2025-11-25", rich.clone()), rich);
    // 2025-06-18: untouched too (it has all of these).
    assert_eq!(call_returning("2025-06-18", rich.clone()), rich);
    // 2025-03-26: no resource_link, no structuredContent, no _meta on blocks.
    let r = call_returning("2025-03-26", rich.clone());
    assert!(r.get("structuredContent").is_none());
    assert_eq!(r["content"][0], json!({ "type": "text", "text": "t" }));
    assert_eq!(r["content"][1]["type"], "audio");
    assert_eq!(r["content"][2]["type"], "text");
    assert!(r["content"][2]["text"].as_str().unwrap().contains("file:///a"));
    // 2024-11-05: no audio either.
    let r = call_returning("2024-11-05", rich);
    assert_eq!(r["content"][1]["type"], "text");
    assert!(r["content"][1]["text"].as_str().unwrap().contains("audio/wav"));
    // structuredContent-only results become text.
    let r = call_returning("2025-03-26", json!({ "content": [], "structuredContent": { "n": 1 } }));
    assert_eq!(r, json!({ "content": [{ "type": "text", "text": "{\"n\":1}" }] }));
}

#[test]
fn lists_are_shaped_for_older_clients() {
    let mut f = Fake::tools(&[]);
    f.tools = vec![json!({
        "name": "t", "title": "T", "icons": [{ "src": "https://i" }], "inputSchema": { "type": "object" },
        "outputSchema": { "type": "object" }, "annotations": { "readOnlyHint": true }, "execution": { "taskSupport": "optional" }, "_meta": { "a": 1 },
    })];
    // Shaping only: a trusted server, whose annotations are passed as they
    // are (the marks on untrusted ones: tests/policy.rs).
    let mut s = specs(&["s"]);
    s[0].trusted = true;
    let mut p = Pair::new(s, HubOptions::default());
    p.start(0, f);
    let expect = [
        ("2024-11-05", vec!["description", "inputSchema", "name"]),
        ("2025-03-26", vec!["annotations", "inputSchema", "name"]),
        ("2025-06-18", vec!["_meta", "annotations", "inputSchema", "name", "outputSchema", "title"]),
        ("2025-11-25", vec!["_meta", "annotations", "execution", "icons", "inputSchema", "name", "outputSchema", "title"]),
    ];
    for (rev, keys) in expect {
        let c = p.client(rev, json!({}));
        let r = p.request(c, json!(1), "tools/list", json!({}));
        schema_check(rev, "ListToolsResult", &r["result"]);
        let got: Vec<String> = r["result"]["tools"][0].as_object().unwrap().keys().cloned().collect();
        let want: Vec<String> = keys.iter().filter(|k| **k != "description").map(|k| k.to_string()).collect();
        assert_eq!(got, want, "{rev}");
    }
}

// ---------------------------------------------------------------- bad input

// row: messages-error-response-same-id-unless-unreadable
// row: messages-notification-no-response
// row: errors-error-has-code-and-message
#[test]
fn bad_input_gets_json_rpc_errors_and_the_session_goes_on() {
    let (mut p, c) = one("2025-11-25", json!({}));
    p.send_raw(c, b"{not json");
    let e = p.take(c);
    assert_eq!(err_code(&e), -32700);
    assert!(e.get("id").is_none(), "2025-11-25: unreadable id left out");
    schema_check("2025-11-25", "JSONRPCErrorResponse", &e);
    p.send_raw(c, br#"{"jsonrpc":"2.0","id":4,"method":7}"#);
    let e = p.take(c);
    assert_eq!((err_code(&e), e["id"].clone()), (-32600, json!(4)));
    p.send_raw(c, br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
    assert_eq!(err_code(&p.take(c)), -32600);
    p.send_raw(c, br#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#);
    assert_eq!(err_code(&p.take(c)), -32600);
    // An invalid notification is not answered.
    p.send_raw(c, br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}"#);
    assert!(p.client_quiet(c));
    let e = p.request(c, json!(5), "tools/frobnicate", json!({}));
    assert_eq!((err_code(&e), e["id"].clone()), (-32601, json!(5)));
    p.hub.handle(Input::ClientFrameTooLarge(c, &Oversize { len: 20_000_000, max: 16 << 20, limit: "the limit", head: b"", tail: b"" }), p.now);
    p.pump();
    let e = p.take(c);
    assert_eq!(err_code(&e), -32600);
    assert!(e["error"]["message"].as_str().unwrap().contains("20000000"));
    // Still serving.
    assert_eq!(p.request(c, json!(6), "ping", json!({}))["result"], json!({}));
    // Older clients get `"id": null`.
    let old = p.client("2025-03-26", json!({}));
    p.send_raw(old, b"]");
    let e = p.take(old);
    assert_eq!(e["id"], Value::Null);
    assert_eq!(err_code(&e), -32700);
}

// Issue 12 item 12 reverses what this test asserted before (requests
// before initialize were served): they are refused, ping aside.
// row: lifecycle-initialization-first-interaction
#[test]
fn requests_before_initialize_are_refused() {
    let (mut p, _) = one("2025-11-25", json!({}));
    let c = p.connect();
    let r = p.request(c, json!(1), "tools/list", json!({}));
    assert_eq!(err_code(&r), -32600, "{r}");
}

#[test]
fn tables_are_bounded() {
    let mut s = specs(&["fs"]);
    s[0].timeout_ms = 1000;
    let mut p = Pair::new(s, HubOptions { max_pending: 3, max_clients: 2, ..HubOptions::default() });
    p.start(0, Fake::tools(&["read"]));
    let c = p.client("2025-11-25", json!({}));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": { "name": "fs__read" } }));
    // A duplicate in-flight id is refused rather than overwriting the first.
    let e = p.request(c, json!(0), "tools/call", json!({ "name": "fs__read" }));
    assert_eq!(err_code(&e), -32600);
    for i in 1..3 {
        p.send(c, json!({ "jsonrpc": "2.0", "id": i, "method": "tools/call", "params": { "name": "fs__read" } }));
    }
    let e = p.request(c, json!(3), "tools/call", json!({ "name": "fs__read" }));
    assert_eq!(err_code(&e), -32603);
    assert!(e["error"]["message"].as_str().unwrap().contains("limit"));
    p.advance(1000);
    assert_eq!(p.hub.status()["pending"], 0, "timeouts free every entry");
    let _second = p.connect();
    let third = p.connect();
    assert_eq!(p.closed, vec![third]);
}

// ---------------------------------------------------------------- subscriptions, logging

// row: resources-subscribe-rpc
// row: resources-unsubscribe-follows-subscribe
#[test]
fn resource_updates_reach_subscribers_only() {
    let mut f = Fake::tools(&[]);
    f.caps = json!({ "resources": { "subscribe": true } });
    f.resources = vec![json!({ "uri": "mem://a", "name": "a" })];
    let mut p = Pair::with(vec![("m", f)], HubOptions::default());
    let c1 = p.client("2025-11-25", json!({}));
    let c2 = p.client("2025-11-25", json!({}));
    p.list_all(c1, "resources/list", "resources");
    p.list_all(c2, "resources/list", "resources");
    p.send(c1, json!({ "jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": { "uri": "mem://a" } }));
    let s = p.take_up(0);
    assert_eq!(s["method"], "resources/subscribe");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": s["id"], "result": {} }));
    assert_eq!(p.take(c1)["id"], 1);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": "mem://a" } }));
    let n = p.take(c1);
    assert_eq!(n["params"]["uri"], "mem://a");
    schema_check("2025-11-25", "ResourceUpdatedNotification", &n);
    assert!(p.client_quiet(c2));
    // The second subscriber is answered by the hub; the upstream keeps one subscription.
    assert_eq!(p.request(c2, json!(2), "resources/subscribe", json!({ "uri": "mem://a" }))["result"], json!({}));
    assert!(p.up_quiet(0));
    assert_eq!(p.request(c1, json!(3), "resources/unsubscribe", json!({ "uri": "mem://a" }))["result"], json!({}));
    assert!(p.up_quiet(0));
    // The last one leaving (by disconnecting) unsubscribes upstream.
    p.hub.handle(Input::ClientDisconnected(c2), p.now);
    p.pump();
    assert_eq!(p.take_up(0)["method"], "resources/unsubscribe");
}

#[test]
fn subscribing_to_a_server_without_subscriptions_is_refused() {
    let mut f = Fake::tools(&[]);
    f.caps = json!({ "resources": {} });
    f.resources = vec![json!({ "uri": "mem://a", "name": "a" })];
    let mut p = Pair::with(vec![("m", f)], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    let r = p.request(c, json!(1), "resources/subscribe", json!({ "uri": "mem://a" }));
    assert_eq!(err_code(&r), -32601);
    assert!(r["error"]["message"].as_str().unwrap().contains("'m'"));
    assert!(p.up_quiet(0));
}

#[test]
fn a_client_leaving_cancels_its_calls() {
    let (mut p, c) = one("2025-11-25", json!({}));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__slow" } }));
    let up = p.take_up(0);
    p.hub.handle(Input::ClientDisconnected(c), p.now);
    p.pump();
    let n = p.take_up(0);
    assert_eq!(n["method"], "notifications/cancelled");
    assert_eq!(n["params"]["requestId"], up["id"]);
    assert_eq!(p.hub.status()["pending"], 0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    assert!(p.cl.get(&c).is_none_or(VecDeque::is_empty));
}

// row: logging-client-may-setlevel
#[test]
fn set_level_fans_out_and_logs_are_prefixed() {
    let mut a = Fake::tools(&["x"]);
    a.caps = json!({ "tools": {}, "logging": {} });
    let b = Fake::tools(&["y"]);
    let mut p = Pair::with(vec![("a", a), ("b", b)], HubOptions::default());
    let c = p.client("2025-11-25", json!({}));
    // Not before the client asked or listed.
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": { "level": "info", "data": "early" } }));
    assert!(p.client_quiet(c));
    let r = p.request(c, json!(1), "logging/setLevel", json!({ "level": "debug" }));
    assert_eq!(r["result"], json!({}));
    let s = p.take_up(0);
    assert_eq!(s["params"]["level"], "debug");
    assert!(p.up_quiet(1), "b has no logging");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": s["id"], "result": {} }));
    assert!(p.client_quiet(c), "answered once");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": { "level": "info", "logger": "db", "data": "hello" } }));
    let n = p.take(c);
    assert_eq!(n["params"]["logger"], "a/db");
    schema_check("2025-11-25", "LoggingMessageNotification", &n);
    assert_eq!(err_code(&p.request(c, json!(2), "logging/setLevel", json!({ "level": "loud" }))), -32602);
}

#[test]
fn results_pass_through_as_the_upstreams_bytes() {
    let (mut p, c) = one("2025-11-25", json!({}));
    p.send(c, json!({ "jsonrpc": "2.0", "id": "k", "method": "tools/call", "params": { "name": "fs__read", "arguments": { "path": "/x" } } }));
    let up = p.take_up(0);
    schema_check("2025-11-25", "CallToolRequest", &up);
    let result = r#"{ "isError" : false,"content":[ {"type":"text","text":"a\u0041"} ] }"#;
    let msg = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#, up["id"]);
    p.hub.handle(Input::UpstreamMessage { up: 0, msg: msg.as_bytes(), on: None }, p.now);
    p.pump();
    let (_, raw) = p.take_raw(c);
    assert_eq!(String::from_utf8(raw).unwrap(), format!(r#"{{"jsonrpc":"2.0","id":"k","result":{result}}}"#));
}

#[test]
fn an_older_upstream_serves_a_newer_client() {
    let mut f = Fake::tools(&["t"]);
    f.rev = "2024-11-05";
    let mut s = specs(&["old"]);
    s[0].revisions = vec!["2024-11-05".into()];
    let mut p = Pair::new(s, HubOptions::default());
    p.start(0, f);
    assert_eq!(p.hub.status()["upstreams"][0]["revision"], "2024-11-05");
    let c = p.client("2025-11-25", json!({}));
    assert_eq!(p.names(c), ["old__t"]);
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "old__t" } }));
    let up = p.take_up(0);
    schema_check("2024-11-05", "CallToolRequest", &up);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [{ "type": "text", "text": "hi" }] } }));
    let r = p.take(c);
    schema_check("2025-11-25", "CallToolResult", &r["result"]);
}

#[test]
fn upstream_errors_pass_through_with_codes_the_client_knows() {
    for (rev, want) in [("2025-11-25", -32042), ("2025-06-18", -32603)] {
        // (URL elicitations, which -32042 carries, go to clients declaring URL mode)
        let (mut p, c) = one(rev, json!({ "elicitation": { "url": {} } }));
        p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__read" } }));
        let up = p.take_up(0);
        let msg = format!(r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32042,"message":"URL elicitation required","data":{{"x":1}}}}}}"#, up["id"]);
        p.hub.handle(Input::UpstreamMessage { up: 0, msg: msg.as_bytes(), on: None }, p.now);
        p.pump();
        let e = p.take(c);
        assert_eq!((err_code(&e), e["error"]["data"].clone()), (want, json!({ "x": 1 })), "{rev}");
    }
}

#[test]
fn relayed_answers_are_shaped_for_the_upstream() {
    let mut f = Fake::tools(&["t"]);
    f.rev = "2024-11-05";
    let mut p = Pair::with(vec![("old", f)], HubOptions::default());
    let c = p.client("2025-11-25", json!({ "sampling": {} }));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "old__t" } }));
    p.take_up(0);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": 5, "method": "sampling/createMessage", "params": { "messages": [], "maxTokens": 5 } }));
    let q = p.take(c);
    p.send(c, json!({ "jsonrpc": "2.0", "id": q["id"], "result": { "role": "assistant", "model": "m", "content": { "type": "audio", "data": "AA==", "mimeType": "audio/ogg" } } }));
    let a = p.take_up(0);
    assert_eq!(a["result"]["content"]["type"], "text");
    schema_check("2024-11-05", "CreateMessageResult", &a["result"]);
}

// row: progress-receiver-may-send
#[test]
fn progress_keeps_a_call_alive_even_without_a_client_token() {
    let (mut p, c) = one("2025-11-25", json!({}));
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "fs__slow" } }));
    let up = p.take_up(0);
    let token = up["params"]["_meta"]["progressToken"].clone();
    assert!(token.is_u64(), "{up}");
    p.advance(9_000);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": token, "progress": 1 } }));
    assert!(p.client_quiet(c), "progress nobody asked for stops at the hub");
    p.advance(9_000);
    assert!(p.client_quiet(c), "still alive 18 s in");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "content": [] } }));
    assert_eq!(p.take(c)["id"], 1);
    // Also for a request without params.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/read" }));
    assert_eq!(err_code(&p.take(c)), -32602);
}

#[test]
fn forwarded_requests_fit_the_upstreams_schema() {
    for rev in ALL_REVS {
        let mut f = Fake::tools(&["t"]);
        f.rev = rev;
        f.caps = json!({ "tools": {}, "prompts": {}, "resources": { "subscribe": true } });
        f.prompts = vec![json!({ "name": "p" })];
        f.resources = vec![json!({ "uri": "mem://r", "name": "r" })];
        let mut p = Pair::with(vec![("s", f)], HubOptions::default());
        let c = p.client("2025-11-25", json!({}));
        let calls = [
            ("tools/call", json!({ "name": "s__t", "arguments": {} }), "CallToolRequest"),
            ("prompts/get", json!({ "name": "s__p" }), "GetPromptRequest"),
            ("resources/read", json!({ "uri": "mem://r" }), "ReadResourceRequest"),
            ("resources/subscribe", json!({ "uri": "mem://r" }), "SubscribeRequest"),
            ("completion/complete", json!({ "ref": { "type": "ref/prompt", "name": "s__p" }, "argument": { "name": "a", "value": "" } }), "CompleteRequest"),
        ];
        for (i, (method, params, def)) in calls.into_iter().enumerate() {
            p.send(c, json!({ "jsonrpc": "2.0", "id": i, "method": method, "params": params }));
            let up = p.take_up(0);
            schema_check(rev, def, &up);
        }
    }
}

#[test]
fn everything_a_client_gets_fits_its_revisions_schema() {
    for rev in ALL_REVS {
        let mut f = Fake::tools(&[]);
        f.caps = json!({ "tools": { "listChanged": true }, "prompts": {}, "resources": { "subscribe": true }, "logging": {}, "completions": {} });
        f.tools = vec![json!({
            "name": "t", "title": "T", "icons": [{ "src": "https://i/x.png" }], "inputSchema": { "type": "object" },
            "outputSchema": { "type": "object" }, "annotations": { "readOnlyHint": true }, "execution": { "taskSupport": "optional" }, "_meta": { "a": 1 },
        })];
        f.prompts = vec![json!({ "name": "p", "title": "P", "arguments": [{ "name": "a", "title": "A" }] })];
        f.resources = vec![json!({ "uri": "mem://r", "name": "r", "title": "R", "annotations": { "lastModified": "2025-01-01T00:00:00Z" } })];
        f.templates = vec![json!({ "uriTemplate": "mem://t/{x}", "name": "t", "title": "T" })];
        f.instructions = Some("Use t.");
        let mut p = Pair::with(vec![("s", f)], HubOptions::default());
        let c = p.client(rev, json!({ "sampling": {}, "elicitation": {}, "roots": {} }));
        for (m, params) in [
            ("tools/list", json!({})),
            ("prompts/list", json!({})),
            ("resources/list", json!({})),
            ("resources/templates/list", json!({})),
            ("logging/setLevel", json!({ "level": "info" })),
            ("ping", json!({})),
            ("nope", json!({})),
        ] {
            p.send(c, json!({ "jsonrpc": "2.0", "id": m, "method": m, "params": params }));
        }
        p.send_raw(c, b"{bad");
        p.send(c, json!({ "jsonrpc": "2.0", "id": "call", "method": "tools/call", "params": { "name": "s__t", "_meta": { "progressToken": "pt" } } }));
        let mut call = p.take_up(0);
        while call["method"] != "tools/call" {
            call = p.take_up(0);
        }
        let token = call["params"]["_meta"]["progressToken"].clone();
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "progressToken": token, "progress": 1, "total": 2, "message": "m" } }));
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/message", "params": { "level": "info", "logger": "l", "data": { "k": "v" } } }));
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": { "messages": [{ "role": "user", "content": { "type": "text", "text": "q" } }], "maxTokens": 3 } }));
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": { "mode": "form", "message": "m", "requestedSchema": { "type": "object", "properties": {} } } }));
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": "r1", "method": "roots/list" }));
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": call["id"], "result": {
            "content": [
                { "type": "text", "text": "t", "_meta": { "k": 1 }, "annotations": { "audience": ["user"], "lastModified": "2025-01-01T00:00:00Z" } },
                { "type": "audio", "data": "AAAA", "mimeType": "audio/wav" },
                { "type": "resource_link", "uri": "mem://r", "name": "r", "title": "R" },
                { "type": "resource", "resource": { "uri": "mem://r", "text": "x", "_meta": { "z": 1 } } },
            ],
            "structuredContent": { "n": 1 },
        } }));
        p.fakes[0].as_mut().unwrap().tools.push(tool("u"));
        p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
        let mut n = 0;
        while let Some((v, _)) = p.cl.get_mut(&c).and_then(VecDeque::pop_front) {
            n += 1;
            // Before 2025-11-25 no id can satisfy the schema for an unreadable
            // request; JSON-RPC 2.0 says `null` (requirements: conflict C4).
            if v["id"].is_null() && v.get("error").is_some() && rev < "2025-11-25" {
                assert_eq!(err_code(&v), -32700);
                continue;
            }
            schema_check(rev, "JSONRPCMessage", &v);
            let def = match v["id"].as_str() {
                Some("tools/list") => Some("ListToolsResult"),
                Some("prompts/list") => Some("ListPromptsResult"),
                Some("resources/list") => Some("ListResourcesResult"),
                Some("resources/templates/list") => Some("ListResourceTemplatesResult"),
                Some("call") => Some("CallToolResult"),
                _ => None,
            };
            if let Some(def) = def {
                schema_check(rev, def, &v["result"]);
            }
            let method = v["method"].as_str().unwrap_or("");
            let def = match method {
                "sampling/createMessage" => Some("CreateMessageRequest"),
                "elicitation/create" => Some("ElicitRequest"),
                "roots/list" => Some("ListRootsRequest"),
                "notifications/progress" => Some("ProgressNotification"),
                "notifications/message" => Some("LoggingMessageNotification"),
                "notifications/tools/list_changed" => Some("ToolListChangedNotification"),
                _ => None,
            };
            if let Some(def) = def {
                schema_check(rev, def, &v);
            }
        }
        // 7 answers, 1 parse error, progress, log, sampling, (elicitation), roots, call, list_changed
        let elicit = usize::from(rev >= "2025-06-18");
        assert_eq!(n, 14 + elicit, "{rev}");
    }
}

// row: ping-periodic-pings
// row: ping-timeout-is-connection-failure
#[test]
fn silent_upstreams_are_pinged_and_restarted_when_hung() {
    let mut s = specs(&["fs"]);
    s[0].timeout_ms = 5_000;
    let mut p = Pair::new(s, HubOptions { ping_interval_ms: 30_000, ..HubOptions::default() });
    p.start(0, Fake::tools(&["read"]));
    assert_eq!(p.hub.next_deadline(), Some(p.now + 30_000));
    p.advance(30_000);
    let ping = p.take_up(0);
    assert_eq!(ping["method"], "ping");
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": ping["id"], "result": {} }));
    assert!(p.restarts.is_empty());
    p.advance(30_000);
    assert_eq!(p.take_up(0)["method"], "ping");
    p.advance(5_000);
    assert_eq!(p.restarts, vec![(0, "ping timed out")]);
    assert_eq!(p.hub.status()["upstreams"][0]["state"], "failed");
}

#[test]
fn upstream_garbage_is_counted_and_logged() {
    let (mut p, c) = one("2025-11-25", json!({}));
    p.hub.handle(Input::UpstreamGarbage(0, "a line of 20000000 bytes"), p.now);
    p.hub.handle(Input::UpstreamMessage { up: 0, msg: b"Starting server...", on: None }, p.now);
    p.pump();
    assert_eq!(p.hub.status()["upstreams"][0]["garbageLines"], 2);
    assert!(p.logs.iter().any(|(l, m)| *l == Level::Warn && m.contains("'fs'") && m.contains("20000000")));
    assert!(p.client_quiet(c));
    assert_eq!(p.names(c), ["fs__read", "fs__slow"], "still serving");
}

    #[test]
    fn id_keys_are_found_by_their_raw_bytes_short_or_long() {
        let long = format!("\"{}\"", "x".repeat(40));
        let ids: [&[u8]; 5] = [b"1", b"\"a\"", b"12345678901234567890", b"\"exactly-22-bytes-id!\"", long.as_bytes()];
        let mut set = std::collections::HashSet::new();
        for id in ids {
            assert!(set.insert(super::IdKey::new(id)));
        }
        assert!(matches!(super::IdKey::new(ids[3]), super::IdKey::Inline(..)) && matches!(super::IdKey::new(long.as_bytes()), super::IdKey::Heap(_)));
        for id in ids {
            assert!(set.contains(id), "{}", String::from_utf8_lossy(id));
        }
        assert!(!set.contains(&b"2"[..]) && !set.contains(&b"1 "[..]));
        for id in ids {
            assert!(set.remove(id));
        }
        assert!(set.is_empty());
    }

/// Every message to a client says truly what it is: a reply names the id it
/// answers (as its span in the bytes), progress names its request.
/// What the hub says of a message to an upstream is what the message is:
/// kind, id, method, and the 2026-07-28 headers exactly for the requests
/// whose `_meta` names that revision to a remote server (`remote`: HTTP
/// headers), mirroring method and name.
fn check_upward(v: &Value, about: &Upward, remote: bool) {
    let method = v["method"].as_str().and_then(mcpx_core::method::Method::known);
    match about {
        Upward::Request { id, method: m, modern, .. } => {
            assert_eq!(serde_json::from_slice::<Value>(id.bytes()).ok().as_ref(), v.get("id").filter(|_| v.get("method").is_some()), "{v}");
            // The header's trace context is the one in `_meta`.
            #[cfg(feature = "traces")]
            if let Upward::Request { traceparent: Some(t), .. } = about {
                assert_eq!(v["params"]["_meta"]["traceparent"].as_str().map(str::as_bytes), Some(t.bytes()), "{v}");
            }
            assert_eq!(*m, method, "{v}");
            let is_modern = remote && v["params"]["_meta"][mcpx_core::meta::PROTOCOL_VERSION_KEY] == "2026-07-28";
            assert_eq!(modern.is_some(), is_modern, "modern headers exactly for a modern request to a remote server: {v} {modern:?}");
            let header = |n: &str| modern.as_ref()?.iter().find(|(k, _)| k == n).map(|(_, v)| String::from_utf8(v.clone()).unwrap());
            if is_modern {
                assert_eq!(header("mcp-method").as_deref(), v["method"].as_str(), "{v}");
                let name = mcpx_core::headers::name_source(v["method"].as_str().unwrap()).and_then(|s| v["params"][s.field()].as_str());
                if name.is_some_and(|n| n.is_ascii()) {
                    assert_eq!(header("mcp-name").as_deref(), name, "{v}");
                }
            }
        }
        Upward::Notification { method: m } => {
            assert!(v.get("id").is_none() && *m == method && m.is_some(), "{v} {about:?}");
        }
        Upward::Answer => assert!(v.get("method").is_none() && (v.get("result").is_some() || v.get("error").is_some()), "{v}"),
    }
}

fn check_about(v: &Value, b: &[u8], about: &super::About, task_tokens: &[Value]) {
    use super::About;
    let is_reply = v.get("result").is_some() || v.get("error").is_some();
    match about {
        About::Reply { id, outcome } => {
            assert!(is_reply, "a reply that is none: {v}");
            // The outcome the hub states is what the bytes say.
            let said = match (v.pointer("/error/code").and_then(Value::as_i64), v.pointer("/result/isError")) {
                (Some(code), _) => super::Outcome::Error { code, retry_after_s: v.pointer("/error/data/retryAfterMs").and_then(Value::as_u64).filter(|_| matches!(outcome, super::Outcome::Error { retry_after_s: Some(_), .. })).map(|ms| ms.div_ceil(1000).max(1)) },
                (None, Some(Value::Bool(true))) => super::Outcome::ToolError,
                (None, _) => super::Outcome::Result,
            };
            assert_eq!(*outcome, said, "the stated outcome of {v}");
            match (id, v.get("id")) {
                (Some(r), Some(want)) => {
                    let got: Value = serde_json::from_slice(&b[r.clone()]).expect("id span is JSON");
                    assert_eq!(&got, want, "reply id span in {v}");
                }
                (None, None) | (None, Some(Value::Null)) => {}
                (id, want) => panic!("reply id {id:?} vs {want:?} in {v}"),
            }
        }
        About::Batch => {
            let answers = v.as_array().unwrap_or_else(|| panic!("a batch answer that is no array: {v}"));
            assert!(!answers.is_empty() && answers.iter().all(|a| a.get("result").is_some() || a.get("error").is_some()), "{v}");
        }
        About::Request { id } => {
            assert!(!is_reply && v.get("method").is_some(), "not a request: {v}");
            let got: Value = serde_json::from_slice(&b[id.clone()]).expect("id span is JSON");
            assert_eq!(&got, &v["id"], "request id span in {v}");
        }
        About::Notification { unsolicited, related } => {
            assert!(v.get("id").is_none() && v.get("method").is_some(), "not a notification: {v}");
            let method = v["method"].as_str().unwrap_or("");
            assert_eq!(*unsolicited, method.ends_with("/list_changed") || method == "notifications/resources/updated", "{v}");
            if method == "notifications/progress" {
                assert!(related.is_some() || task_tokens.contains(&v["params"]["progressToken"]), "progress without its request: {v}");
            }
        }
    }
}

/// Integers wider than 64 bits pass byte for byte, in a client's id and in
/// a result the hub reshapes for an older revision.
#[test]
fn integers_beyond_64_bits_pass_byte_exact_through_reshaping() {
    let mut p = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    let c = p.client("2024-11-05", json!({}));
    let big = "123456789012345678901234567890";
    p.send_raw(c, format!(r#"{{"jsonrpc":"2.0","id":{big},"method":"tools/call","params":{{"name":"fs__read","arguments":{{}}}}}}"#).as_bytes());
    let sent = p.take_up(0);
    let answer = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[{{"type":"text","text":"t","_meta":{{"k":{big}}}}}],"structuredContent":{{"n":{big}}},"n":-{big}}}}}"#, sent["id"]);
    p.hub.handle(Input::UpstreamMessage { up: 0, msg: answer.as_bytes(), on: None }, p.now);
    p.pump();
    let (_, raw) = p.take_raw(c);
    let raw = String::from_utf8(raw).unwrap();
    assert_eq!(raw, format!(r#"{{"jsonrpc":"2.0","id":{big},"result":{{"content":[{{"type":"text","text":"t"}}],"n":-{big}}}}}"#));
}

/// A server with resources but no templates answers their list with
/// "Method not found": said at debug, not warned; another failure still warns.
#[test]
fn a_server_without_templates_is_not_warned_about() {
    let mut f = Fake::tools(&["read"]);
    f.caps = json!({ "tools": {}, "resources": {} });
    f.resources = vec![json!({ "uri": "file:///a", "name": "a" })];
    f.no_templates = true;
    let p = Pair::with(vec![("fs", f)], HubOptions::default());
    let about = |l: &Level| p.logs.iter().filter(|(lv, s)| lv == l && s.contains("resources/templates/list")).count();
    assert_eq!(about(&Level::Warn), 0, "{:?}", p.logs);
    assert_eq!(about(&Level::Debug), 1, "{:?}", p.logs);
}
