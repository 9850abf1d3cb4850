//! MCP Apps (`io.modelcontextprotocol/ui`) through mcpx, with real app
//! servers from npm: `@modelcontextprotocol/server-basic-vanillajs` and
//! `server-basic-preact` (both serve `ui://get-time/mcp-app.html` and a
//! `get-time` tool: colliding URIs and names) and `server-system-monitor`
//! (whose app polls `poll-system-stats`, a tool for apps alone), behind one
//! hub. The host is tests/drivers/apps_host.mjs: the TypeScript SDK v2
//! client with ext-apps' AppBridge, each app rendered in headless Chromium.

use std::time::Duration;

use mcpx_tests::*;
use serde_json::{json, Value};

const CLOCK: &str = "ui://clock/get-time/mcp-app.html";
const CLOCK2: &str = "ui://clock2/get-time/mcp-app.html";
const MONITOR: &str = "ui://monitor/system-monitor/mcp-app.html";

fn app_server(name: &str, pkg: &str) -> Upstream {
    let js = node_package(pkg, "dist/index.js");
    Upstream { name: name.into(), cmd: Cmd::new(node(), &[js.to_str().unwrap(), "--stdio"]) }
}

fn hub() -> Hub {
    HubConfig::new()
        .upstream(app_server("clock", "@modelcontextprotocol/server-basic-vanillajs"))
        .upstream(app_server("clock2", "@modelcontextprotocol/server-basic-preact"))
        .upstream(app_server("monitor", "@modelcontextprotocol/server-system-monitor"))
        .write()
}

/// The host's report, against the hub at `url` or (`None`) `hub` on stdio.
fn host(hub: &Hub, url: Option<&str>, args: &[&str]) -> Value {
    let profile = TempDir::new();
    let mut argv = vec![node().to_string_lossy().into_owned(), driver("apps_host.mjs").to_string_lossy().into_owned()];
    if !args.contains(&"--plain") {
        argv.push(chromium().to_string_lossy().into_owned());
        argv.push(profile.path().to_string_lossy().into_owned());
    }
    argv.extend(args.iter().map(|s| s.to_string()));
    match url {
        Some(u) => argv.extend(["--url".to_string(), u.to_string()]),
        None => {
            argv.push("--".into());
            argv.push(mcpx().to_string_lossy().into_owned());
            argv.extend(["serve", "--config", hub.config.to_str().unwrap()].map(String::from));
        }
    }
    let r = run_argv(&argv, Duration::from_secs(120));
    assert!(!r.timed_out && r.code == Some(0) && r.json.is_object(), "apps_host failed ({:?}): {argv:?}\n{}\n{}", r.code, r.stdout, r.stderr);
    r.json
}

fn names(report: &Value) -> Vec<&str> {
    report["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect()
}

/// What an app host must see of the three servers, in era `mode`.
fn check_host(r: &Value, mode: &str) {
    let era = if mode == "legacy" { "2025-11-25" } else { mode };
    assert_eq!(r["protocol"], era, "{r}");
    assert!(r["extensions"]["io.modelcontextprotocol/ui"].is_object(), "mcpx offers the extension to an app host: {r}");
    assert_eq!(names(r), ["clock__get-time", "clock2__get-time", "monitor__get-system-info", "monitor__poll-system-stats"], "{r}");
    let tools = r["tools"].as_array().unwrap();
    assert_eq!(tools[0]["resourceUri"], CLOCK, "{r}");
    assert_eq!(tools[1]["resourceUri"], CLOCK2, "the same ui:// URI of two servers, two URIs: {r}");
    assert_eq!(tools[2]["resourceUri"], MONITOR, "{r}");
    assert_eq!(tools[3]["visibility"], json!(["app"]), "an app host sees the tool for apps, with its visibility: {r}");
    // Each URI reads its own server's app: the contents under the URI asked for.
    for uri in [CLOCK, CLOCK2, MONITOR] {
        let read = &r["reads"][uri];
        assert_eq!(read["uri"], uri, "{r}");
        assert_eq!(read["mimeType"], "text/html;profile=mcp-app", "{r}");
        assert!(read["bytes"].as_u64().unwrap() > 10_000, "{r}");
    }
    // Every app ran in Chromium and said hello to its bridge.
    let apps: Vec<(&str, &str)> = r["apps"].as_array().unwrap().iter().map(|a| {
        assert_eq!(a["initialized"], true, "{a}");
        (a["uri"].as_str().unwrap(), a["appInfo"]["name"].as_str().unwrap_or(""))
    }).collect();
    assert_eq!(apps, [(CLOCK, "Get Time App"), (CLOCK2, "Get Time App"), (MONITOR, "System Monitor")], "{r}");
    // The monitor's app polled its server through the host and mcpx, by its
    // server's own name for a tool it alone may call.
    assert_eq!(r["complete"], true, "{r}");
    let polls: Vec<&Value> = r["calls"].as_array().unwrap().iter().filter(|c| c["name"] == "poll-system-stats").collect();
    assert!(!polls.is_empty() && polls.iter().all(|c| c["ok"] == true), "{r}");
    // `get-time` is both clocks' own name: refused, naming both, no guess.
    assert_eq!(r["ownName"]["data"]["candidates"], json!(["clock__get-time", "clock2__get-time"]), "{r}");
}

// covers: ext-apps-ui-uri-scheme, ext-apps-resource-exists, ext-apps-visibility-app-callable, ext-apps-negotiated
#[test]
fn apps_of_two_colliding_servers_and_a_monitor_render_and_call_back_over_http_in_both_eras() {
    let hub = hub();
    let server = hub.serve_http();
    for mode in ["legacy", "2026-07-28"] {
        let r = host(&hub, Some(&server.url), &["--mode", mode, "--wait-call", "poll-system-stats"]);
        check_host(&r, mode);
    }
}

#[test]
fn apps_render_and_call_back_over_stdio() {
    let hub = hub();
    let r = host(&hub, None, &["--wait-call", "poll-system-stats"]);
    check_host(&r, "legacy");
}

// covers: ext-apps-visibility-model-list
#[test]
fn a_client_without_the_extension_is_a_models_and_never_sees_the_tool_for_apps() {
    let hub = hub();
    let server = hub.serve_http();
    for mode in ["legacy", "2026-07-28"] {
        let r = host(&hub, Some(&server.url), &["--plain", "--mode", mode]);
        assert!(r["extensions"].is_null(), "{r}");
        assert_eq!(names(&r), ["clock__get-time", "clock2__get-time", "monitor__get-system-info"], "{mode}: {r}");
    }
}
