//! Exposed names a client can read: a long prefix is shortened before the
//! tool's own name, every changed name is logged once, and the instructions
//! give the prefixes as applied.

use serde_json::json;

use super::*;

const LONG: &str = "git_repository_tools_for_the_monorepo_of_the_whole_company_inc";

fn long_prefixed() -> (Pair, ClientId) {
    let mut s = specs(&["git", "fs"]);
    s[0].prefix = LONG.to_string();
    let mut p = Pair::new(s, HubOptions::default());
    p.start(0, Fake::tools(&["git_status", "git_log"]));
    p.start(1, Fake::tools(&["read"]));
    let c = p.client("2025-11-25", json!({}));
    (p, c)
}

// covers: tools-aggregator-disambiguate, tools-name-unique-in-server
#[test]
fn a_long_prefix_is_shortened_before_the_tools_name_and_logged_once() {
    let (mut p, c) = long_prefixed();
    let names = p.names(c);
    // Each exposed name still says which tool it is.
    let status = names.iter().find(|n| n.contains("__git_status_")).unwrap_or_else(|| panic!("{names:?}")).clone();
    let log = names.iter().find(|n| n.contains("__git_log_")).unwrap_or_else(|| panic!("{names:?}")).clone();
    assert!(status.starts_with("git_repository_") && status.len() <= 64, "{status}");
    assert_eq!(names[2], "fs__read");
    let renamed: Vec<&String> = p.logs.iter().map(|(_, l)| l).filter(|l| l.contains("is exposed as")).collect();
    assert_eq!(renamed.len(), 2, "{:?}", p.logs);
    assert!(renamed[0].starts_with(&format!("server 'git': tool 'git_status' is exposed as '{status}'")), "{}", renamed[0]);
    assert!(renamed[0].contains("over 64 characters"), "{}", renamed[0]);
    // Listed again unchanged: nothing new to say.
    p.logs.clear();
    p.upstream_says(0, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
    assert!(!p.logs.iter().any(|(_, l)| l.contains("is exposed as")), "{:?}", p.logs);
    // The calls route back to the upstream's own names.
    p.send(c, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": log } }));
    assert_eq!(p.take_up(0)["params"]["name"], "git_log");
}

#[test]
fn the_instructions_give_the_prefix_as_applied() {
    let (mut p, _) = long_prefixed();
    let c = p.connect();
    let init = p.request(c, json!(0), "initialize", json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }));
    let text = init["result"]["instructions"].as_str().unwrap().to_string();
    let names = {
        p.send(c, json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        p.names(c)
    };
    let applied = &names[0][..names[0].find("__git_").unwrap() + 2];
    assert!(applied.len() < LONG.len() + 2, "{applied}");
    assert!(text.contains(&format!("- git {applied}: ready")), "{text}");
    assert!(!text.contains(LONG), "the configured prefix is not what names start with: {text}");
    assert!(text.contains("- fs fs__: ready"), "{text}");
}
