//! Pair tests of MCP Apps (`io.modelcontextprotocol/ui`) through the hub:
//! two servers whose apps share a `ui://` URI and a tool name, and a
//! server with a tool for apps alone, seen by app hosts and by other
//! clients of every era.

use serde_json::{json, Value};

use super::modern::with_meta;
use super::*;

const UI: &str = "io.modelcontextprotocol/ui";
const URI: &str = "ui://get-time/mcp-app.html";
const MIME: &str = "text/html;profile=mcp-app";
const MODERN: &str = "2026-07-28";

fn host_caps() -> Value {
    json!({ "extensions": { UI: { "mimeTypes": [MIME] } } })
}

/// An app server like the ext-apps examples: tool `get-time` linking
/// `ui://get-time/mcp-app.html`, which it lists unless `unlisted` (the
/// extension lets a server leave its UI resources out of the list).
fn clock(unlisted: bool) -> Fake {
    let mut f = Fake::tools(&[]);
    f.caps = json!({ "tools": { "listChanged": true }, "resources": { "subscribe": true } });
    f.tools = vec![json!({ "name": "get-time", "inputSchema": { "type": "object" }, "_meta": { "ui": { "resourceUri": URI }, "ui/resourceUri": URI } })];
    if !unlisted {
        f.resources = vec![json!({ "uri": URI, "name": URI, "mimeType": MIME, "_meta": { "ui": { "prefersBorder": true } } })];
    }
    f
}

/// A server with `poll` for its app alone and `show` for both.
fn monitor() -> Fake {
    let mut f = Fake::tools(&[]);
    let link = |vis: Value| json!({ "ui": { "resourceUri": "ui://system-monitor/mcp-app.html", "visibility": vis } });
    f.tools = vec![
        json!({ "name": "show", "inputSchema": { "type": "object" }, "_meta": link(json!(["model", "app"])) }),
        json!({ "name": "poll", "inputSchema": { "type": "object" }, "_meta": link(json!(["app"])) }),
    ];
    f
}

fn names_of(tools: &[Value]) -> Vec<&str> {
    tools.iter().map(|t| t["name"].as_str().unwrap()).collect()
}

/// `m` of client `c` reaches upstream `u` as `want`: answered with `result`, returned to the client.
fn through(p: &mut Pair, c: ClientId, u: UpstreamId, m: Value, result: Value) -> (Value, Value) {
    p.send(c, m);
    let up = p.take_up(u);
    p.upstream_says(u, json!({ "jsonrpc": "2.0", "id": up["id"], "result": result }));
    (up, p.take(c))
}

// covers: ext-apps-ui-uri-scheme, ext-apps-resource-exists
#[test]
fn two_servers_apps_keep_ui_uris_that_never_collide_and_route_back() {
    let mut p = Pair::with(vec![("clock", clock(false)), ("clock2", clock(true))], HubOptions::default());
    let c = p.client("2025-11-25", host_caps());
    let tools = p.list_all(c, "tools/list", "tools");
    assert_eq!(names_of(&tools), ["clock__get-time", "clock2__get-time"]);
    for (t, shown) in tools.iter().zip(["ui://clock/get-time/mcp-app.html", "ui://clock2/get-time/mcp-app.html"]) {
        assert_eq!(t["_meta"]["ui"]["resourceUri"], shown, "{t}");
        assert_eq!(t["_meta"]["ui/resourceUri"], shown, "the deprecated key too: {t}");
    }
    let res = p.list_all(c, "resources/list", "resources");
    assert_eq!(res.len(), 1);
    assert_eq!(res[0]["uri"], "ui://clock/get-time/mcp-app.html");
    assert_eq!(res[0]["_meta"]["ui"]["prefersBorder"], true);
    // Each read reaches its own server, listed or not, with the server's URI;
    // the contents come back under the URI the client knows, `_meta.ui` as is.
    for (u, shown) in [(0, "ui://clock/get-time/mcp-app.html"), (1, "ui://clock2/get-time/mcp-app.html")] {
        let contents = json!({ "contents": [{ "uri": URI, "mimeType": MIME, "text": "<!doctype html><p>ui://get-time</p>", "_meta": { "ui": { "csp": { "connectDomains": ["https://api.example"] } } } }] });
        let (up, r) = through(&mut p, c, u, json!({ "jsonrpc": "2.0", "id": u, "method": "resources/read", "params": { "uri": shown } }), contents);
        assert_eq!(up["params"]["uri"], URI, "{up}");
        let got = &r["result"]["contents"][0];
        assert_eq!(got["uri"], shown, "{r}");
        assert_eq!(got["text"], "<!doctype html><p>ui://get-time</p>", "the resource's bytes are the server's");
        assert_eq!(got["_meta"]["ui"]["csp"]["connectDomains"][0], "https://api.example");
    }
    // A tool's result links the app by the URI the client can read.
    let result = json!({ "content": [{ "type": "resource_link", "uri": URI, "name": "app" }], "_meta": { "ui": { "resourceUri": URI } } });
    let (_, r) = through(&mut p, c, 1, json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": { "name": "clock2__get-time", "arguments": {} } }), result);
    assert_eq!(r["result"]["content"][0]["uri"], "ui://clock2/get-time/mcp-app.html", "{r}");
    assert_eq!(r["result"]["_meta"]["ui"]["resourceUri"], "ui://clock2/get-time/mcp-app.html");
    // A UI URI naming no server is no resource.
    let r = p.request(c, json!(10), "resources/read", json!({ "uri": "ui://nobody/get-time/mcp-app.html" }));
    assert_eq!(err_code(&r), -32002, "{r}");
    let r = p.request(c, json!(11), "resources/read", json!({ "uri": URI }));
    assert_eq!(err_code(&r), -32002, "the server's own URI names server 'get-time', which is not configured: {r}");
}

#[test]
fn an_unlisted_ui_resource_updates_its_subscribers_under_its_shown_uri() {
    let mut p = Pair::with(vec![("clock", clock(false)), ("clock2", clock(true))], HubOptions::default());
    let c = p.client("2025-11-25", host_caps());
    let shown = "ui://clock2/get-time/mcp-app.html";
    let (up, r) = through(&mut p, c, 1, json!({ "jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": { "uri": shown } }), json!({}));
    assert_eq!(up["params"]["uri"], URI);
    assert!(r.get("result").is_some(), "{r}");
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": URI } }));
    let n = p.take(c);
    assert_eq!(n["method"], "notifications/resources/updated");
    assert_eq!(n["params"]["uri"], shown, "{n}");
}

// covers: ext-apps-visibility-model-list, ext-apps-visibility-app-callable
#[test]
fn tools_for_apps_alone_are_listed_and_called_by_app_hosts_only_in_every_era() {
    let mut p = Pair::with(vec![("mon", monitor())], HubOptions::default());
    for rev in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let host = p.client(rev, host_caps());
        let model = p.client(rev, json!({}));
        assert_eq!(p.names(host), ["mon__show", "mon__poll"], "{rev}");
        assert_eq!(p.names(model), ["mon__show"], "{rev}: a client without the extension is the model's");
        let r = p.request(model, json!(1), "tools/call", json!({ "name": "mon__poll", "arguments": {} }));
        assert_eq!(err_code(&r), -32602, "{rev}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("Unknown tool"), "{r}");
        p.send(host, json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "mon__poll", "arguments": {} } }));
        assert_eq!(p.take_up(0)["params"]["name"], "poll", "{rev}");
    }
    // The 2026-07-28 era: each request declares its own capabilities.
    let c = p.connect();
    p.msend(c, json!(3), "tools/list", json!({}), &host_caps());
    assert_eq!(names_of(p.take(c)["result"]["tools"].as_array().unwrap()), ["mon__show", "mon__poll"]);
    p.msend(c, json!(4), "tools/list", json!({}), &json!({}));
    assert_eq!(names_of(p.take(c)["result"]["tools"].as_array().unwrap()), ["mon__show"]);
    p.msend(c, json!(5), "tools/call", json!({ "name": "mon__poll", "arguments": {} }), &json!({}));
    assert_eq!(err_code(&p.take(c)), -32602);
    p.send(c, json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": with_meta(json!({ "name": "mon__poll", "arguments": {} }), &host_caps()) }));
    assert_eq!(p.take_up(0)["params"]["name"], "poll");
}

#[test]
fn an_apps_own_tool_name_reaches_its_server_and_a_shared_one_is_refused_naming_both() {
    let mut p = Pair::with(vec![("clock", clock(false)), ("clock2", clock(true)), ("mon", monitor())], HubOptions::default());
    let host = p.client("2025-11-25", host_caps());
    let model = p.client("2025-11-25", json!({}));
    p.send(host, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "poll", "arguments": {} } }));
    assert_eq!(p.take_up(2)["params"]["name"], "poll", "the monitor's app calls its server's own name");
    let r = p.request(host, json!(2), "tools/call", json!({ "name": "get-time", "arguments": {} }));
    assert_eq!(err_code(&r), -32602, "{r}");
    assert_eq!(r["error"]["data"]["candidates"], json!(["clock__get-time", "clock2__get-time"]), "{r}");
    assert!(p.up_quiet(0) && p.up_quiet(1), "no server guessed");
    let r = p.request(model, json!(3), "tools/call", json!({ "name": "poll", "arguments": {} }));
    assert!(r["error"]["message"].as_str().unwrap().contains("Unknown tool"), "only an app host calls by a server's own name: {r}");
}

// covers: ext-apps-negotiated, ext-apps-client-mimetypes
#[test]
fn the_extension_is_offered_to_app_hosts_when_a_server_serves_apps_and_declared_upstream() {
    let mut p = Pair::with(vec![("mon", monitor())], HubOptions::default());
    let ask = |p: &mut Pair, caps: Value| {
        let c = p.connect();
        p.request(c, json!(0), "initialize", json!({ "protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": { "name": "t", "version": "1" } }))
    };
    let r = ask(&mut p, host_caps());
    assert!(r["result"]["capabilities"]["extensions"][UI].is_object(), "{r}");
    let r = ask(&mut p, json!({}));
    assert!(r["result"]["capabilities"].get("extensions").is_none(), "{r}");
    let c = p.connect();
    p.msend(c, json!(1), "server/discover", json!({}), &host_caps());
    let d = p.take(c);
    assert!(d["result"]["capabilities"]["extensions"][UI].is_object(), "{d}");
    // No server with apps: nothing to offer.
    let mut plain = Pair::with(vec![("fs", Fake::tools(&["read"]))], HubOptions::default());
    let r = ask(&mut plain, host_caps());
    assert!(r["result"]["capabilities"].get("extensions").is_none(), "{r}");
    // mcpx declares the extension to its upstreams.
    let mut q = Pair::new(legacy_specs(&["fs"]), HubOptions::default());
    q.hub.handle(Input::UpstreamStarted(0), q.now);
    q.pump();
    let init = q.take_up(0);
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["params"]["capabilities"]["extensions"][UI]["mimeTypes"], json!([MIME]), "{init}");
}

// Caching: a UI resource's read keeps the server's caching hints for a
// 2026-07-28 host (`ttlMs`, `cacheScope`, as the server said them); a
// changed template reaches the hosts: the server's `resources/list_changed`
// is passed on and the new list shows the new `ui://` URI rewritten, and
// the server's `resources/updated` of a read template reaches its
// subscriber under the URI the host knows.
// covers: ext-apps-ui-uri-scheme
#[test]
fn ui_resources_keep_their_caching_hints_and_changed_templates_reach_the_hosts() {
    let mut f = clock(false);
    f.rev = MODERN;
    let mut p = Pair::with(vec![("clock", f), ("clock2", clock(false))], HubOptions::default());
    let m = p.connect();
    let shown = "ui://clock/get-time/mcp-app.html";
    p.msend(m, json!(1), "resources/read", json!({ "uri": shown }), &host_caps());
    let up = p.take_up(0);
    assert_eq!(up["params"]["uri"], URI, "{up}");
    let contents = json!([{ "uri": URI, "mimeType": MIME, "text": "<!doctype html><p>v1</p>" }]);
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "id": up["id"], "result": { "contents": contents, "ttlMs": 60000, "cacheScope": "public", "resultType": "complete" } }));
    let r = p.take(m);
    assert_eq!((&r["result"]["ttlMs"], &r["result"]["cacheScope"]), (&json!(60000), &json!("public")), "the server's hints: {r}");
    assert_eq!(r["result"]["contents"][0]["uri"], shown);
    schema_check(MODERN, "ReadResourceResult", &r["result"]);

    // A legacy host lists, reads and subscribes to clock2's template.
    let h = p.client("2025-11-25", host_caps());
    let before = p.list_all(h, "resources/list", "resources");
    assert!(before.iter().any(|r| r["uri"] == "ui://clock2/get-time/mcp-app.html"), "{before:?}");
    let (_, r) = through(&mut p, h, 1, json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": { "uri": "ui://clock2/get-time/mcp-app.html" } }), json!({}));
    assert!(r.get("result").is_some(), "{r}");
    // The template changes: its contents (updated) and its list (a second app).
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": URI } }));
    let n = p.take(h);
    assert_eq!((n["method"].as_str(), n["params"]["uri"].as_str()), (Some("notifications/resources/updated"), Some("ui://clock2/get-time/mcp-app.html")), "{n}");
    p.fakes[1].as_mut().unwrap().resources.push(json!({ "uri": "ui://get-date/mcp-app.html", "name": "date", "mimeType": MIME }));
    p.upstream_says(1, json!({ "jsonrpc": "2.0", "method": "notifications/resources/list_changed" }));
    assert_eq!(p.take(h)["method"], "notifications/resources/list_changed");
    let after = p.list_all(h, "resources/list", "resources");
    assert!(after.iter().any(|r| r["uri"] == "ui://clock2/get-date/mcp-app.html"), "the new template under its shown URI: {after:?}");
}
