//! The `"policy"` config block (parsed in `crate::config`).

use std::path::{Path, PathBuf};

use crate::config;
use crate::policy::{OutputCheck, PolicyConfig};
use crate::policy::catalog_acl::Pattern;
use crate::policy::ratelimit::{Rate, RateLimitConfig};

fn env(name: &str) -> Option<String> {
    match name {
        "HOME" => Some("/home/u".to_string()),
        "NTFY_TOKEN" => Some("tk_secret".to_string()),
        _ => None,
    }
}

fn parse(policy: &str) -> Result<config::Config, String> {
    let src = format!("{{\n  \"mcpServers\": {{}},\n  \"policy\": {policy}\n}}\n");
    config::parse(&src, "mcpx.json", Path::new("/cfg"), &env).map_err(|e| e.to_string())
}

fn rate(s: &str) -> Option<Rate> {
    Some(Rate::parse(s).unwrap())
}

#[test]
fn no_policy_key_means_the_defaults() {
    let c = parse("null").unwrap();
    assert_eq!(c.policy, PolicyConfig::default());
    assert_eq!(c.policy.rate_limits, RateLimitConfig::default());
    assert!(c.policy.metrics && c.policy.validate.is_none() && c.policy.audit.is_none());
}

#[test]
fn every_key_is_read() {
    let c = parse(
        r#"{
    "rateLimits": {
      "toolCalls": {"perPrincipal": "10/s", "perServer": null, "perTool": {"gh__z*": "1/min", "gh__*": "5/s"}},
      "completions": {"perPrincipal": "2/s"},
      "serverRequests": {"perServer": "3/250ms"},
      "progressPerRequest": 50, "logsPerRequest": null, "maxBuckets": 64
    },
    "catalogs": {
      "alice": {"allow": ["github", "fs/read_*"], "deny": ["github/delete_*"]},
      "*": {"toolSearch": true}
    },
    "validate": {"servers": ["gh*"], "elicitation": false, "output": "refuse"},
    "audit": {"file": "~/audit.jsonl", "maxBytes": 1000, "files": 3, "arguments": true, "redact": ["token"], "queue": 8},
    "metrics": false
  }"#,
    )
    .unwrap();
    let p = &c.policy;
    let r = &p.rate_limits;
    assert_eq!(r.tool_calls.per_principal, rate("10/s"));
    assert_eq!(r.tool_calls.per_server, None);
    // File order, not sorted: "gh__z*" must stay first to ever match.
    assert_eq!(r.tool_calls.per_tool, [("gh__z*".to_string(), Rate::parse("1/min").unwrap()), ("gh__*".to_string(), Rate::parse("5/s").unwrap())]);
    assert_eq!(r.completions.per_principal, rate("2/s"));
    assert_eq!(r.server_requests.per_server, rate("3/250ms"));
    assert_eq!((r.progress_per_request, r.logs_per_request, r.max_buckets), (Some(50), None, 64));

    let alice = p.catalogs.of("alice").unwrap();
    assert_eq!(alice.allow, [Pattern::parse("github").unwrap(), Pattern::parse("fs/read_*").unwrap()]);
    assert!(!p.catalogs.visible("alice", "github", "delete_repo"));
    assert!(p.catalogs.tool_search("bob") && !p.catalogs.tool_search("alice"));

    let v = p.validate.as_ref().unwrap();
    assert_eq!((v.servers.as_slice(), v.arguments, v.elicitation, v.output), (&["gh*".to_string()][..], true, false, OutputCheck::Refuse));

    let a = p.audit.as_ref().unwrap();
    assert_eq!(a.file, Some(PathBuf::from("/home/u/audit.jsonl")));
    assert_eq!((a.max_bytes, a.files, a.queue), (1000, 3, 8));
    assert!(a.content.arguments && a.content.redact == ["token"]);
    assert!(!p.metrics);
    // Enforced: no warning.
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}

#[test]
fn switches() {
    let c = parse(r#"{"rateLimits": false, "validate": true, "audit": {"file": "stderr"}}"#).unwrap();
    assert_eq!(c.policy.rate_limits, RateLimitConfig::off());
    let v = c.policy.validate.unwrap();
    assert!(v.arguments && v.elicitation && v.output == OutputCheck::Log && v.servers == ["*"]);
    let a = c.policy.audit.unwrap();
    assert_eq!((a.file, a.files, a.content.arguments), (None, 5, false));
}

#[test]
fn errors_point_at_the_line_and_column() {
    let e = parse(
        r#"{
    "rateLimits": {"toolCalls": {"perPrincipal": "10 per second"}},
    "catalogs": {"bob": {"allow": ["a/b/c"]}},
    "validate": {"output": "shout"},
    "audit": {"files": 0}
  }"#,
    )
    .unwrap_err();
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 5, "{e}");
    assert!(lines[0].starts_with("mcpx.json:4:34: ") && lines[0].contains("\"10 per second\" is not a rate like \"20/s\""), "{e}");
    assert!(lines[1].starts_with("mcpx.json:5:36: ") && lines[1].contains("\"a/b/c\" is not a pattern"), "{e}");
    assert!(lines[2].starts_with("mcpx.json:6:18: ") && lines[2].contains("\"shout\" is not \"off\", \"log\" or \"refuse\""), "{e}");
    assert!(lines.iter().any(|l| l.contains("missing \"file\"")), "{e}");
    assert!(lines.iter().any(|l| l.contains("files: expected a positive whole number, found 0")), "{e}");
    let e = parse(r#"{"rateLimits": {"toolCalls": {"perPrincipal": "0/s"}}}"#).unwrap_err();
    assert!(e.contains("use null to turn a limit off"), "{e}");
    let c = parse(r#"{"limits": {}}"#).unwrap();
    assert!(c.warnings.iter().any(|w| w.to_string().contains("unknown key \"limits\" ignored")), "{:?}", c.warnings);
}

#[test]
fn pin_is_one_line_or_an_object() {
    use crate::policy::{PinSettings, Quarantine};
    let cases: &[(&str, Option<PinSettings>)] = &[
        ("false", None),
        (r#""warn""#, Some(PinSettings { mode: Quarantine::Warn, findings: Quarantine::Warn, lock_file: None })),
        (r#""hide""#, Some(PinSettings { mode: Quarantine::Hide, findings: Quarantine::Hide, lock_file: None })),
        (
            r#"{"mode": "hide", "findings": "warn", "lockFile": "~/pins.json"}"#,
            Some(PinSettings { mode: Quarantine::Hide, findings: Quarantine::Warn, lock_file: Some(PathBuf::from("/home/u/pins.json")) }),
        ),
        (r#"{"lockFile": "pins.json"}"#, Some(PinSettings { mode: Quarantine::Warn, findings: Quarantine::Warn, lock_file: Some(PathBuf::from("/cfg/pins.json")) })),
    ];
    for (pin, want) in cases {
        let c = parse(&format!(r#"{{"pin": {pin}}}"#)).unwrap();
        assert_eq!(&c.policy.pin, want, "{pin}");
    }
    let e = parse(r#"{"pin": "ask"}"#).unwrap_err();
    assert!(e.contains("\"ask\" is not \"warn\", \"approve\" or \"hide\""), "{e}");
    assert_eq!(parse(r#"{"pin": "approve"}"#).unwrap().policy.pin.map(|p| p.mode), Some(Quarantine::Approve));
}

#[test]
fn approve_rules_and_their_errors_point_at_the_line() {
    use crate::policy::approval::{Carrier, Notify, Via};
    let c = parse(r#"{"approve": ["files/delete_*", {"annotations": ["destructiveHint"], "via": ["page"], "rememberMs": 60000}],
                      "approvals": {"timeoutMs": 30000, "approvers": ["alice"], "notify": {"command": ["ntfy-send", "--now"]}}}"#)
    .unwrap();
    let a = &c.policy.approvals;
    assert_eq!(a.rules.len(), 2);
    assert_eq!(a.rules[0].tools, [Pattern::parse("files/delete_*").unwrap()]);
    assert_eq!((a.rules[1].via.as_slice(), a.rules[1].remember_ms), ([Via::Page].as_slice(), 60_000));
    assert_eq!((a.timeout_ms, a.approvers.as_slice()), (30_000, ["alice".to_string()].as_slice()));
    assert_eq!(a.notify, Some(Notify { carrier: Carrier::Command(vec!["ntfy-send".into(), "--now".into()]), link_base: None }));
    // (policy, what the error says): each at its line of the file.
    let bad = [
        (r#"{"approve": "files/*"}"#, "mcpx.json:3:14: policy.approve: expected an array like"),
        (r#"{"approve": ["files"]}"#, ""),
        (r#"{"approve": ["/x"]}"#, "\"/x\" is not a pattern"),
        (r#"{"approve": [{"via": ["page"]}]}"#, "a rule needs \"tools\" patterns or \"annotations\""),
        (r#"{"approve": [{"annotations": ["readOnlyHint"]}]}"#, "\"readOnlyHint\" is not one of [\"destructiveHint\", \"openWorldHint\"] (annotations can require approval, never waive it)"),
        (r#"{"approve": [{"tools": ["a/*"], "via": ["email"]}]}"#, "\"email\" is not \"client\" or \"page\""),
        (r#"{"approvals": {"notify": {"command": []}}}"#, "expected a command and its arguments"),
        (r#"{"approvals": {"timeoutMs": 0}}"#, "expected a positive whole number"),
    ];
    for (policy, want) in bad {
        match parse(policy) {
            Ok(_) if want.is_empty() => {}
            Ok(_) => panic!("{policy} parsed"),
            Err(e) => assert!(!want.is_empty() && e.contains(want) && e.contains("mcpx.json:3:"), "{policy}: {e}"),
        }
    }
}

#[test]
fn a_notify_hook_is_a_command_or_a_url_and_its_link_can_be_absolute() {
    use crate::policy::approval::{Carrier, Format, Notify, Post};
    let notify = |n: &str| parse(&format!(r#"{{"approvals": {{"notify": {n}}}}}"#));
    let c = notify(r#"{"url": "https://ntfy.sh/mcpx-test", "format": "ntfy", "headers": {"Authorization": "Bearer ${NTFY_TOKEN}", "Priority": "high"}, "linkBase": "https://mcpx.example.net/"}"#).unwrap();
    let post = Post {
        url: "https://ntfy.sh/mcpx-test".into(),
        format: Format::Ntfy,
        headers: vec![("Authorization".into(), "Bearer tk_secret".into()), ("Priority".into(), "high".into())],
    };
    assert_eq!(c.policy.approvals.notify, Some(Notify { carrier: Carrier::Post(post), link_base: Some("https://mcpx.example.net".into()) }));
    // JSON is the default format; plain http (a LAN receiver) too, with a warning off loopback.
    let c = notify(r#"{"url": "http://127.0.0.1:9000/hook"}"#).unwrap();
    assert!(matches!(&c.policy.approvals.notify, Some(Notify { carrier: Carrier::Post(Post { format: Format::Json, .. }), link_base: None })));
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let c = notify(r#"{"url": "http://192.168.1.5/hook"}"#).unwrap();
    assert!(c.warnings.iter().any(|w| w.to_string().contains("travels unencrypted")), "{:?}", c.warnings);
    // A link base under a path keeps it.
    let c = notify(r#"{"command": ["notify-me"], "linkBase": "http://192.168.1.10:8765/mcpx"}"#).unwrap();
    assert_eq!(c.policy.approvals.notify.unwrap().link_base.as_deref(), Some("http://192.168.1.10:8765/mcpx"));
    // (notify, what the error says)
    let bad = [
        (r#"{"command": ["x"], "url": "https://ntfy.sh/t"}"#, "give \"command\" or \"url\", not both"),
        (r#"{}"#, "expected {\"url\": \"https://ntfy.sh/TOPIC\", \"format\": \"ntfy\"} or {\"command\""),
        (r#"{"linkBase": "https://mcpx.example.net"}"#, "expected {\"url\""),
        (r#"{"url": "ntfy.sh/topic"}"#, "not an absolute URL"),
        (r#"{"url": "ftp://ntfy.sh/topic"}"#, "unsupported URL scheme \"ftp\""),
        (r#"{"url": "https://me:pw@ntfy.sh/topic"}"#, "user info in the URL is not supported: put credentials in \"headers\""),
        (r#"{"url": "https://ntfy.sh/a b"}"#, "policy.approvals.notify.url"),
        (r#"{"url": "https://ntfy.sh/t", "format": "xml"}"#, "\"xml\" is not \"json\" or \"ntfy\""),
        (r#"{"url": "https://ntfy.sh/t", "headers": {"Content-Type": "text/plain"}}"#, "header \"Content-Type\" is set by mcpx itself"),
        (r#"{"url": "https://ntfy.sh/t", "headers": {"X-Token": "${UNSET_TOKEN}"}}"#, "UNSET_TOKEN"),
        (r#"{"command": ["x"], "format": "ntfy"}"#, "\"format\" goes with \"url\""),
        (r#"{"url": "https://ntfy.sh/t", "linkBase": "/approvals"}"#, "expected the URL an approver's browser reaches this hub at"),
        (r#"{"url": "https://ntfy.sh/t", "linkBase": "https://mcpx.example.net/?a=1"}"#, "(no query or fragment)"),
    ];
    for (n, want) in bad {
        match notify(n) {
            Ok(_) => panic!("{n} parsed"),
            Err(e) => assert!(e.contains(want) && e.contains("policy.approvals.notify"), "{n}: {e}"),
        }
    }
}

#[test]
fn a_link_base_the_listener_would_refuse_is_warned_about() {
    let cfg = |http: &str| {
        let src = format!(r#"{{"mcpServers": {{}}, {http} "policy": {{"approvals": {{"notify": {{"command": ["x"], "linkBase": "https://mcpx.example.net"}}}}}}}}"#);
        config::parse(&src, "mcpx.json", Path::new("/cfg"), &env).unwrap()
    };
    let refused = |c: &config::Config| c.warnings.iter().any(|w| w.to_string().contains("post from https://mcpx.example.net, which the listener refuses"));
    assert!(refused(&cfg("")));
    assert!(!refused(&cfg(r#""http": {"allowedOrigins": ["https://mcpx.example.net"]},"#)));
}
