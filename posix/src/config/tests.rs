//! The config file's parse, block by block.

use std::path::{Path as FsPath, PathBuf};

use super::cluster::StateKey;
use super::expand::expand;
use super::*;

fn env(name: &str) -> Option<String> {
    match name {
        "HOME" => Some("/home/u".into()),
        "TOKEN" => Some("t0k".into()),
        "EMPTY" => Some(String::new()),
        _ => None,
    }
}

fn ok(src: &str) -> Config {
    match parse(src, "cfg.json", FsPath::new("/etc/mcpx"), &env) {
        Ok(c) => c,
        Err(e) => panic!("unexpected error:\n{e}"),
    }
}

fn err(src: &str) -> String {
    match parse(src, "cfg.json", FsPath::new("/etc/mcpx"), &env) {
        Ok(c) => panic!("expected an error, got {c:?}"),
        Err(e) => e.to_string(),
    }
}

/// Parses with `vars` as the whole environment.
fn with_env(src: &str, vars: &[(&str, &str)]) -> Result<Config, String> {
    let lookup = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string());
    parse(src, "cfg.json", FsPath::new("/etc/mcpx"), &lookup).map_err(|e| e.to_string())
}

#[test]
fn state_and_cluster_settings() {
    let hex = "07".repeat(32);
    // Nothing configured: alone, and MCPX_STATE_KEY (even a bad one) means nothing.
    let c = with_env(r#"{"mcpServers": {}}"#, &[("MCPX_STATE_KEY", "junk")]).unwrap();
    assert_eq!(c.cluster, ClusterSettings::default());
    let o = c.cluster.hub_options();
    assert!(o.replica.is_none() && !o.shared && o.state_key.is_none());

    let cfg = r#"{"mcpServers": {}, "state": {"url": "redis://127.0.0.1:6379/0"},
            "cluster": {"replica": "r1", "peers": {"r2": "http://127.0.0.1:7402", "r3": "http://127.0.0.1:7403"}}}"#;
    let c = with_env(cfg, &[("MCPX_STATE_KEY", &hex)]).unwrap();
    assert_eq!(c.cluster.state_url.as_deref(), Some("redis://127.0.0.1:6379/0"));
    assert_eq!(c.cluster.peers, vec![("r2".to_string(), "http://127.0.0.1:7402".to_string()), ("r3".to_string(), "http://127.0.0.1:7403".to_string())]);
    let o = c.cluster.hub_options();
    assert_eq!((o.replica.as_deref(), o.peers.as_slice(), o.shared, o.state_key), (Some("r1"), &["r2".to_string(), "r3".to_string()][..], true, Some([7; 32])));
    assert!(!format!("{:?} {o:?}", c.cluster).contains("7, 7"), "the key never shows in Debug");
    // Base64 keys, and the environment before the file.
    let b64 = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc";
    let c = with_env(cfg, &[("MCPX_STATE_KEY", b64), ("MCPX_REPLICA", "r9"), ("MCPX_STATE_URL", "redis://10.0.0.1:6379/2")]).unwrap();
    assert_eq!((c.cluster.replica.as_deref(), c.cluster.state_url.as_deref(), c.cluster.state_key), (Some("r9"), Some("redis://10.0.0.1:6379/2"), Some(StateKey([7; 32]))));
    // One file for every replica: its peers name them all, MCPX_REPLICA says which this is, and it is skipped.
    let shared = r#"{"mcpServers": {}, "state": {"url": "redis://127.0.0.1:6379/0"},
            "cluster": {"peers": {"r1": "http://10.0.0.1:7402", "r2": "http://10.0.0.2:7402", "r3": "http://10.0.0.3:7402"}}}"#;
    for (me, others) in [("r1", ["r2", "r3"]), ("r2", ["r1", "r3"]), ("r3", ["r1", "r2"])] {
        let c = with_env(shared, &[("MCPX_STATE_KEY", &hex), ("MCPX_REPLICA", me)]).unwrap();
        let o = c.cluster.hub_options();
        assert_eq!((o.replica.as_deref(), o.peers.as_slice()), (Some(me), &others.map(String::from)[..]), "{me}");
    }
    let c = with_env(&cfg.replace("\"r2\": \"http", "\"r1\": \"http://127.0.0.1:7401\", \"r2\": \"http"), &[("MCPX_STATE_KEY", &hex)]).unwrap();
    assert_eq!(c.cluster.hub_options().peers, ["r2", "r3"], "cluster.replica is skipped in its own peers too");
    // A key file: hex text or 32 raw bytes.
    let dir = std::env::temp_dir().join(format!("mcpx-statekey-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in [("hex.key", format!("{hex}\n").into_bytes()), ("raw.key", vec![7u8; 32])] {
        let f = dir.join(name);
        std::fs::write(&f, bytes).unwrap();
        let src = format!(r#"{{"mcpServers": {{}}, "state": {{"url": "redis://h:1/0", "keyFile": {:?}}}, "cluster": {{"replica": "r1"}}}}"#, f.display().to_string());
        assert_eq!(with_env(&src, &[]).unwrap().cluster.state_key, Some(StateKey([7; 32])), "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();

    let bad = |src: &str, vars: &[(&str, &str)]| with_env(src, vars).expect_err("refused");
    assert!(bad(cfg, &[("MCPX_STATE_KEY", "abcd")]).contains("MCPX_STATE_KEY: the key is 3 bytes; it must be 32"), "a short key");
    assert!(bad(cfg, &[("MCPX_STATE_KEY", "not a key!")]).contains("MCPX_STATE_KEY: the key is neither 64 hex digits"), "not a key");
    assert!(bad(cfg, &[]).contains("replicas need one sealing key"));
    let e = bad(r#"{"mcpServers": {}, "cluster": {"replica": "r1"}}"#, &[("MCPX_STATE_KEY", &hex)]);
    assert!(e.contains("cfg.json:1:") && e.contains("cluster: replicas need shared state"), "{e}");
    assert!(bad(r#"{"mcpServers": {}, "state": {"url": "http://h/"}}"#, &[]).contains("state.url: \"http://h/\" is not a Redis URL"));
    assert!(bad(r#"{"mcpServers": {}, "state": {"url": "redis://h:1/0"}, "cluster": {"peers": {}}}"#, &[("MCPX_STATE_KEY", &hex)]).contains("cluster.replica: missing"));
    let e = bad(r#"{"mcpServers": {}, "state": {"url": "redis://h:1/0"}, "cluster": {"replica": "r.1", "peers": {"r 2": "http://x", "r3": "ftp://x", "r.1": "http://y"}}}"#, &[("MCPX_STATE_KEY", &hex)]);
    for want in ["cluster.replica: \"r.1\" is not a replica id", "\"r 2\" is not a replica id", "\"ftp://x\" is not an http://", "\"r.1\" is not a replica id"] {
        assert!(e.contains(want), "{want} in {e}");
    }
    // State alone (one mcpx, its state in Redis) needs no replica and no key.
    let c = with_env(r#"{"mcpServers": {}, "state": {"url": "redis://h:1/0"}}"#, &[]).unwrap();
    assert!(c.cluster.hub_options().shared && c.cluster.replica.is_none());
}

#[test]
fn claude_desktop_config() {
    let c = ok(r#"{
  "mcpServers": {
    "zeta": {"command": "npx", "args": ["-y", "@scope/server", "--token=${TOKEN}"],
             "env": {"B": "2", "A": "${TOKEN}"}},
    "alpha": {"command": "uvx", "args": ["mcp-server-fetch"], "cwd": "~/work"},
    "off": {"command": "x", "disabled": true}
  }
}"#);
    assert_eq!(c.servers.len(), 2);
    let z = &c.servers[0];
    assert_eq!(z.name, "zeta");
    assert_eq!(z.prefix, "zeta");
    assert_eq!(z.command, "npx");
    assert_eq!(z.args, ["-y", "@scope/server", "--token=t0k"]);
    assert_eq!(z.env, [("B".to_string(), "2".to_string()), ("A".to_string(), "t0k".to_string())]);
    assert_eq!(c.servers[1].name, "alpha");
    assert_eq!(c.servers[1].cwd, Some(PathBuf::from("/home/u/work")));
    assert_eq!(c.disabled, ["off"]);
    assert_eq!(c.separator, "__");
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}

#[test]
fn mcpx_keys() {
    let c = ok(r#"{
  "mcpServers": {
    "github": {"command": "gh-mcp", "timeoutMs": 5000, "prefix": "gh",
               "tools": {"allow": ["a", "b*"], "deny": ["b2"]}, "revisions": ["2025-06-18"],
               "cwd": "rel/dir"},
    "plain": {"command": "p", "prefix": ""}
  },
  "separator": "-",
  "roots": ["/srv/data", "~/src", {"uri": "file:///x", "name": "X"}, "a b"],
  "logLevel": "debug"
}"#);
    let g = &c.servers[0];
    assert_eq!(g.prefix, "gh");
    assert_eq!(g.timeout_ms, Some(5000));
    assert_eq!(g.tools_allow, ["a", "b*"]);
    assert_eq!(g.tools_deny, ["b2"]);
    assert_eq!(g.revisions, Some(vec!["2025-06-18".into()]));
    assert_eq!(g.cwd, Some(PathBuf::from("/etc/mcpx/rel/dir")));
    assert_eq!(c.servers[1].prefix, "");
    assert_eq!(c.separator, "-");
    assert_eq!(c.log_level, Some(Level::Debug));
    let uris: Vec<&str> = c.roots.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["file:///srv/data", "file:///home/u/src", "file:///x", "file:///etc/mcpx/a%20b"]);
    assert_eq!(c.roots[2].name.as_deref(), Some("X"));
}

#[test]
fn environment_and_restart_keys() {
    let c = ok(r#"{
  "mcpServers": {
    "a": {"command": "x", "env": {"G": "${HOME}"}},
    "b": {"command": "x", "inheritEnv": false, "maxRestarts": 0},
    "c": {"command": "x", "envAllow": ["GITHUB_*"], "maxRestarts": 3},
    "r": {"url": "https://h/mcp?k=${URL_KEY:-x}", "headers": {"Authorization": "Bearer ${API_KEY:-none}"}}
  },
  "auth": {"bearer": "${TOKEN}"}
}"#);
    let p: Vec<_> = c.servers.iter().map(|s| (s.env_policy.inherit, s.env_policy.allow.clone(), s.max_restarts)).collect();
    assert_eq!(
        p,
        [(true, vec![], 10), (false, vec![], 0), (false, vec!["GITHUB_*".to_string()], 3), (true, vec![], 10)]
    );
    // What the config reads as secrets is kept from every child.
    assert!(c.servers.iter().all(|s| s.env_policy.secrets == ["API_KEY", "TOKEN", "URL_KEY"]));

    let e = err(r#"{"mcpServers": {"a": {"command": "x", "inheritEnv": true, "envAllow": ["A"], "maxRestarts": -1}}}"#);
    assert!(e.contains("mcpServers.a.envAllow: an allow list needs \"inheritEnv\": false"), "{e}");
    assert!(e.contains("mcpServers.a.maxRestarts: expected a whole number from 0 to 1000, found -1"), "{e}");
    let e = err(r#"{"mcpServers": {"r": {"url": "https://h/mcp", "inheritEnv": false}}}"#);
    assert!(e.contains("mcpServers.r.inheritEnv: \"inheritEnv\" is for local servers"), "{e}");
}

#[cfg(feature = "signin")]
#[test]
fn status_principals() {
    let c = ok(r#"{"mcpServers": {}, "http": {"statusPrincipals": ["alice", "ops-*"]}}"#);
    assert_eq!(c.http.signin.status_principals, ["alice", "ops-*"]);
    assert!(ok(r#"{"mcpServers": {}}"#).http.signin.status_principals.is_empty(), "none by default: nobody signs in");
    let e = err(r#"{"mcpServers": {}, "http": {"statusPrincipals": "alice"}}"#);
    assert!(e.contains("http.statusPrincipals"), "{e}");
}

#[cfg(feature = "signin")]
#[test]
fn signin_ttl_is_whole_seconds_up_to_400_days() {
    let ttl = |v: &str| parse(&format!(r#"{{"mcpServers": {{}}, "http": {{"signinTtlMs": {v}}}}}"#), "cfg.json", FsPath::new("/etc/mcpx"), &env);
    assert_eq!(ok(r#"{"mcpServers": {}}"#).http.signin.ttl_s, 8 * 3600, "a working day by default");
    // (value, seconds or the error)
    let table: [(&str, Result<u64, &str>); 8] = [
        ("3600000", Ok(3600)),
        ("2000", Ok(2)),
        ("1500", Ok(2)),
        ("1", Ok(1)),
        ("34560000000", Ok(400 * 86_400)),
        ("34560000001", Err("http.signinTtlMs: expected milliseconds from 1 to 34560000000 (400 days, the most a browser keeps a cookie), found 34560000001")),
        ("0", Err("found 0")),
        ("\"1h\"", Err("found \"1h\"")),
    ];
    for (v, want) in table {
        match (ttl(v), want) {
            (Ok(c), Ok(s)) => assert_eq!(c.http.signin.ttl_s, s, "{v}"),
            (Err(e), Err(msg)) => assert!(e.to_string().contains(msg), "{v}: {e}"),
            (got, _) => panic!("{v}: {got:?}"),
        }
    }
}

#[test]
fn expansion() {
    assert_eq!(expand("a ${TOKEN} b", &env).unwrap(), "a t0k b");
    assert_eq!(expand("$${TOKEN}", &env).unwrap(), "${TOKEN}");
    assert_eq!(expand("$HOME $ 5$", &env).unwrap(), "$HOME $ 5$");
    assert_eq!(expand("${NOPE:-dflt}", &env).unwrap(), "dflt");
    assert_eq!(expand("${EMPTY:-dflt}", &env).unwrap(), "dflt");
    assert_eq!(expand("${EMPTY}", &env).unwrap(), "");
    assert_eq!(expand("${TOKEN:-x}${TOKEN}", &env).unwrap(), "t0kt0k");
    assert_eq!(
        expand("${NOPE}", &env).unwrap_err().to_string(),
        "environment variable NOPE is not set (referenced as `${NOPE}`; set it, or write `${NOPE:-default}`)"
    );
    assert_eq!(
        expand("x ${TOKEN", &env).unwrap_err().to_string(),
        "unterminated `${` in \"x ${TOKEN\" (write `$${` for a literal `${`)"
    );
    assert!(expand("${1X}", &env).unwrap_err().to_string().contains("`${1X}` is not a valid variable reference"));
}

#[test]
fn invalid_json_has_line_and_column() {
    let e = err("{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}");
    assert_eq!(e, "cfg.json:3:26: invalid JSON: trailing comma");
    let e = err("");
    assert!(e.starts_with("cfg.json:1:0: invalid JSON: EOF while parsing"), "{e}");
}

#[test]
fn unset_variable_names_it_and_where() {
    let e = err("{\"mcpServers\": {\n  \"a\": {\"command\": \"x\",\n    \"env\": {\"K\": \"${MISSING}\"}}}}");
    assert_eq!(
        e,
        "cfg.json:3:13: mcpServers.a.env.K: environment variable MISSING is not set (referenced as `${MISSING}`; set it, or write `${MISSING:-default}`)"
    );
}

#[test]
fn wrong_types() {
    let e = err("{\"mcpServers\": {\n  \"a\": {\"command\": \"x\",\n   \"args\": \"-y pkg\"}}}");
    assert_eq!(e, "cfg.json:3:4: mcpServers.a.args: expected an array of strings, found a string");
    let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\"ok\", 3]}}}");
    assert_eq!(e, "cfg.json:1:54: mcpServers.a.args[1]: expected a string, found a number");
    let e = err("{\"mcpServers\": {\"a\": {\"command\": [\"x\"]}}}");
    assert_eq!(e, "cfg.json:1:23: mcpServers.a.command: expected a string, found an array");
    let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": [\"A=1\"]}}}");
    assert_eq!(e, "cfg.json:1:39: mcpServers.a.env: expected an object of strings, found an array");
    let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": {\"A\": 1}}}}");
    assert_eq!(e, "cfg.json:1:47: mcpServers.a.env.A: expected a string, found a number");
    let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"disabled\": \"yes\"}}}");
    assert_eq!(e, "cfg.json:1:39: mcpServers.a.disabled: expected true or false, found a string");
    let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"timeoutMs\": -5}}}");
    assert_eq!(
        e,
        "cfg.json:1:39: mcpServers.a.timeoutMs: expected a positive whole number of milliseconds, found -5"
    );
    let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"tools\": [\"t\"]}}}");
    assert_eq!(
        e,
        "cfg.json:1:39: mcpServers.a.tools: expected an object {\"allow\": [...], \"deny\": [...]}, found an array"
    );
    let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"revisions\": [\"latest\"]}}}");
    assert_eq!(
        e,
        "cfg.json:1:53: mcpServers.a.revisions[0]: \"latest\" is not a protocol revision (like \"2025-06-18\")"
    );
    let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"revisions\": []}}}");
    assert_eq!(e, "cfg.json:1:39: mcpServers.a.revisions: must list at least one protocol revision, or be left out");
    let e = err("{\"mcpServers\": {\"a\": \"npx foo\"}}");
    assert_eq!(e, "cfg.json:1:17: mcpServers.a: expected an object with \"command\", found a string");
    let e = err("{\"mcpServers\": [\"a\"]}");
    assert_eq!(e, "cfg.json:1:2: mcpServers: expected an object of servers by name, found an array");
    let e = err("[1]");
    assert_eq!(e, "cfg.json:1:1: (top level): expected a JSON object with \"mcpServers\", found an array");
    let e = err("{\"mcpServers\": {}, \"logLevel\": \"loud\"}");
    assert_eq!(e, "cfg.json:1:20: logLevel: \"loud\" is not a log level (error, warn, info or debug)");
    let e = err("{\"mcpServers\": {}, \"separator\": \"\"}");
    assert_eq!(e, "cfg.json:1:20: separator: must not be empty");
    let e = err("{\"mcpServers\": {}, \"separator\": \"a:b\"}");
    assert_eq!(
        e,
        "cfg.json:1:20: separator: \"a:b\" may only use letters, digits, `_`, `-` and `.` (tool names allow no more)"
    );
    let e = err("{\"mcpServers\": {}, \"roots\": [true]}");
    assert_eq!(e, "cfg.json:1:30: roots[0]: expected a path, a URI or an object, found a boolean");
    let e = err("{\"mcpServers\": {}, \"roots\": [{\"name\": \"n\"}]}");
    assert_eq!(e, "cfg.json:1:30: roots[0]: a root object needs \"uri\"");
}

#[test]
fn missing_pieces() {
    assert_eq!(err("{}"), "cfg.json:1:1: (top level): missing \"mcpServers\" (an object of servers by name)");
    let e = err("{\"mcpServers\": {\"a\": {\"args\": []}}}");
    assert_eq!(e, "cfg.json:1:17: mcpServers.a: server \"a\" has no \"command\" (the program to run)");
    let e = err("{\"mcpServers\": {\"a\": {\"command\": \" \"}}}");
    assert_eq!(e, "cfg.json:1:23: mcpServers.a.command: must not be empty");
}

#[test]
fn isolation_is_shared_by_default_client_with_a_cap_for_a_local_or_remote_server() {
    use crate::hub::Isolation;
    let c = ok(r#"{"mcpServers": {
    "a": {"command": "x"},
    "b": {"command": "x", "isolation": "shared"},
    "c": {"command": "x", "isolation": "client"},
    "d": {"command": "x", "isolation": "client", "maxInstances": 2}
}}"#);
    let i: Vec<Isolation> = c.servers.iter().map(|s| s.isolation).collect();
    assert_eq!(i, [Isolation::Shared, Isolation::Shared, Isolation::Client { max: 8 }, Isolation::Client { max: 2 }]);
    // A remote server: one session per principal.
    let c = ok(r#"{"mcpServers": {"r": {"url": "https://h/mcp", "isolation": "client"}}}"#);
    assert_eq!(c.servers[0].isolation, Isolation::Client { max: 8 });
    let e = err(r#"{"mcpServers": {"a": {"command": "x", "isolation": "user"}}}"#);
    assert!(e.contains("mcpServers.a.isolation: \"user\" is not \"shared\" or \"client\""), "{e}");
    let e = err(r#"{"mcpServers": {"a": {"command": "x", "isolation": "client", "maxInstances": 0}}}"#);
    assert!(e.contains("mcpServers.a.maxInstances: expected a whole number from 1 to 256, found 0"), "{e}");
    let e = err(r#"{"mcpServers": {"a": {"command": "x", "maxInstances": 3}}}"#);
    assert!(e.contains("mcpServers.a.maxInstances: only applies with \"isolation\": \"client\""), "{e}");
}

#[test]
fn lazy_and_idle_stop_per_server_over_the_top_level_defaults() {
    let c = ok(r#"{
  "lazy": true, "idleStopMs": 60000,
  "mcpServers": {
    "a": {"command": "x"},
    "b": {"command": "x", "lazy": false, "idleStopMs": null},
    "c": {"url": "https://h/mcp", "idleStopMs": 5}
  }
}"#);
    let p: Vec<Power> = c.servers.iter().map(|s| s.power).collect();
    assert_eq!(
        p,
        [
            Power { lazy: true, idle_stop_ms: Some(60000) },
            Power { lazy: false, idle_stop_ms: None },
            Power { lazy: true, idle_stop_ms: Some(5) },
        ]
    );
    assert_eq!(ok(r#"{"mcpServers": {"a": {"command": "x"}}}"#).servers[0].power, Power::default());
    let e = err(r#"{"mcpServers": {"a": {"command": "x", "idleStopMs": 0}}}"#);
    assert_eq!(e, "cfg.json:1:39: mcpServers.a.idleStopMs: expected a positive whole number of milliseconds, found 0");
    let e = err(r#"{"lazy": "yes", "mcpServers": {}}"#);
    assert!(e.starts_with("cfg.json:1:2: lazy: "), "{e}");
}

#[test]
fn names_and_prefixes() {
    let e = err("{\"mcpServers\": {\"my server\": {\"command\": \"x\"}}}");
    assert_eq!(
        e,
        "cfg.json:1:17: [\"my server\"]: server name \"my server\" cannot prefix tool names (use letters, digits, `_`, `-`, `.`); rename it or set \"prefix\""
            .replace("[\"my server\"]", "mcpServers[\"my server\"]")
    );
    // A prefix makes such a name usable.
    let c = ok("{\"mcpServers\": {\"my server\": {\"command\": \"x\", \"prefix\": \"my\"}}}");
    assert_eq!(c.servers[0].prefix, "my");
    let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"prefix\": \"g h\"}}}");
    assert_eq!(e, "cfg.json:1:39: mcpServers.a.prefix: \"g h\" may only use letters, digits, `_`, `-`, `.`");
    let e = err("{\"mcpServers\": {\"a__b\": {\"command\": \"x\"}}}");
    assert_eq!(
        e,
        "cfg.json:1:17: mcpServers.a__b: prefix \"a__b\" contains the separator \"__\", so names could not be split back; set another \"prefix\" or \"separator\""
    );
    let e = err("{\"mcpServers\": {\"\": {\"command\": \"x\"}}}");
    assert_eq!(e, "cfg.json:1:17: mcpServers[\"\"]: server name must not be empty");
    let long = "x".repeat(65);
    let e = err(&format!("{{\"mcpServers\": {{\"{long}\": {{\"command\": \"x\"}}}}}}"));
    assert!(e.ends_with("server name is longer than 64 characters"), "{e}");
    let e = err("{\"mcpServers\": {\n \"a\": {\"command\": \"x\"},\n \"b\": {\"command\": \"y\", \"prefix\": \"a\"}}}");
    assert_eq!(
        e,
        "cfg.json:3:2: mcpServers.b: servers \"a\" and \"b\" both use the prefix \"a\"; give one a different \"prefix\""
    );
    let e = err("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"prefix\": \"\"}, \"b\": {\"command\": \"y\", \"prefix\": \"\"}}}");
    assert!(e.ends_with("servers \"a\" and \"b\" both have an empty prefix; give one a different \"prefix\""), "{e}");
    let e = err("{\"mcpServers\": {\n \"a\": {\"command\": \"x\"},\n \"a\": {\"command\": \"y\"}}}");
    assert_eq!(e, "cfg.json:3:2: mcpServers.a: duplicate server name");
}

#[test]
fn several_errors_reported_together() {
    let e = err("{\"mcpServers\": {\n \"a\": {\"args\": 1},\n \"b\": {\"command\": 2}}}");
    assert_eq!(
        e,
        "cfg.json:2:2: mcpServers.a: server \"a\" has no \"command\" (the program to run)\n\
             cfg.json:2:8: mcpServers.a.args: expected an array of strings, found a number\n\
             cfg.json:3:8: mcpServers.b.command: expected a string, found a number"
    );
}

#[test]
fn task_caps() {
    let c = ok(r#"{"mcpServers": {"a": {"command": "x"}}, "tasks": {"maxPerClient": 2, "maxResultBytes": 1000, "maxTtlMs": 60000}}"#);
    let mut o = crate::hub::TaskOptions::default();
    c.tasks.apply(&mut o);
    assert_eq!((o.max_live_per_principal, o.max_result_bytes, o.max_ttl_ms), (2, 1000, 60_000));
    assert_eq!(o.max_tasks, crate::hub::TaskOptions::default().max_tasks, "absent keys keep the defaults");
    let e = err(r#"{"mcpServers": {"a": {"command": "x"}}, "tasks": {"maxTasks": 0}}"#);
    assert!(e.contains("tasks.maxTasks: expected a positive whole number, found 0"), "{e}");
    let e = err(r#"{"mcpServers": {"a": {"command": "x"}}, "tasks": 5}"#);
    assert!(e.contains("tasks: expected an object"), "{e}");
}

#[test]
fn hub_hints_for_modern_clients() {
    let c = ok(r#"{"mcpServers": {"a": {"command": "x"}}, "cacheTtlMs": 0, "cachePublic": true, "inputTtlMs": 90000}"#);
    assert_eq!((c.cache_ttl_ms, c.cache_public, c.input_ttl_ms), (Some(0), Some(true), Some(90_000)));
    let c = ok(r#"{"mcpServers": {"a": {"command": "x"}}}"#);
    assert_eq!((c.cache_ttl_ms, c.cache_public, c.input_ttl_ms), (None, None, None));
    let e = err(r#"{"mcpServers": {"a": {"command": "x"}}, "cacheTtlMs": -1, "cachePublic": "yes", "inputTtlMs": 0}"#);
    assert!(e.contains("cacheTtlMs: expected a whole number of milliseconds, found -1"), "{e}");
    assert!(e.contains("inputTtlMs: expected a positive whole number of milliseconds, found 0"), "{e}");
    assert!(e.contains("cachePublic"), "{e}");
}

#[test]
fn shutdown_grace() {
    let c = ok(r#"{"mcpServers": {"a": {"command": "x"}}, "shutdownGraceMs": 2500}"#);
    assert_eq!(c.shutdown_grace_ms, Some(2500));
    assert_eq!(ok(r#"{"mcpServers": {"a": {"command": "x"}}}"#).shutdown_grace_ms, None);
    let e = err(r#"{"mcpServers": {"a": {"command": "x"}}, "shutdownGraceMs": "10s"}"#);
    assert!(e.contains("shutdownGraceMs: expected a whole number of milliseconds"), "{e}");
}

#[test]
fn warnings_for_unknown_keys_and_transports() {
    let c = ok(r#"{
  "mcpServers": {
    "ws": {"type": "websocket", "url": "ws://example.com/mcp"},
    "local": {"type": "stdio", "command": "x", "comand": "typo",
              "tools": {"allow": [], "block": []}}
  },
  "extra": 1
}"#);
    assert_eq!(c.servers.len(), 1);
    assert_eq!(c.servers[0].name, "local");
    assert!(c.servers[0].tools_allow.is_empty());
    assert_eq!(c.servers[0].remote, None);
    assert_eq!(
        c.warnings.iter().map(Problem::to_string).collect::<Vec<_>>(),
        [
            &format!("cfg.json:7:3: extra: unknown key \"extra\" ignored (known keys here: mcpServers, separator, roots, logLevel, auth, http, cacheTtlMs, cachePublic, inputTtlMs, shutdownGraceMs, startupWaitMs, policy, tasks, lazy, idleStopMs, state, cluster, secrets{})", if cfg!(feature = "traces") { ", traces" } else { "" }),
            "cfg.json:3:12: mcpServers.ws.type: transport \"websocket\" is not supported (use \"stdio\", \"http\" or \"sse\"); server \"ws\" is skipped",
            "cfg.json:4:48: mcpServers.local.comand: unknown key \"comand\" ignored (known keys here: command, args, env, cwd, disabled, timeoutMs, tools, prefix, revisions, url, headers, caFile, type, transport, inheritEnv, envAllow, maxRestarts, oauth, lazy, idleStopMs, trusted, isolation, maxInstances, required)",
            "cfg.json:5:38: mcpServers.local.tools.block: unknown key \"block\" ignored (known keys here: allow, deny)",
            "cfg.json:5:25: mcpServers.local.tools.allow: an empty allow list allows every tool; use \"deny\": [\"*\"] to hide them all",
        ]
    );
}

#[test]
fn remote_servers() {
    use crate::remote::Mode;
    let c = ok(r#"{
  "mcpServers": {
    "remote": {"url": "http://example.com/mcp", "timeoutMs": 5000, "prefix": "r",
               "headers": {"X-B": "2", "Authorization": "Bearer ${TOKEN}"}},
    "legacy": {"type": "sse", "url": "http://127.0.0.1:3001/sse"},
    "pinned": {"transport": "http", "url": "http://localhost/mcp"}
  }
}"#);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let r = c.servers[0].remote.as_ref().unwrap();
    assert_eq!(r.url, "http://example.com/mcp");
    assert_eq!(r.headers, [("X-B".to_string(), "2".to_string()), ("Authorization".into(), "Bearer t0k".into())]);
    assert_eq!((r.mode, r.ca_file.as_deref()), (Mode::Auto, None));
    assert_eq!((c.servers[0].timeout_ms, c.servers[0].prefix.as_str(), c.servers[0].command.as_str()), (Some(5000), "r", ""));
    assert_eq!(c.servers[1].remote.as_ref().unwrap().mode, Mode::Sse);
    assert_eq!(c.servers[2].remote.as_ref().unwrap().mode, Mode::StreamableHttp);
}

#[test]
fn oauth_blocks() {
    use crate::remote::oauth::{GrantKind, OAuthSpec};
    let c = ok(r#"{"mcpServers": {
            "a": {"url": "https://a.example/mcp", "oauth": {}},
            "b": {"url": "https://b.example/mcp", "oauth": {"clientId": "id", "clientSecret": "${TOKEN}", "scopes": ["r", "w"],
                  "grant": "client_credentials", "privateKeyFile": "k.pem", "signingAlg": "RS256", "openWith": "open -a X"}}}}"#);
    let o = |i: usize| c.servers[i].remote.as_ref().unwrap().oauth.clone().unwrap();
    let store = PathBuf::from("/home/u/.local/state/mcpx/oauth-tokens.json");
    assert_eq!(o(0), OAuthSpec { store: store.clone(), ..OAuthSpec::default() });
    let b = o(1);
    assert_eq!((b.client_id.as_deref(), b.client_secret.as_deref(), b.scopes.len()), (Some("id"), Some("t0k"), 2));
    assert_eq!((b.grant, b.private_key_file, b.signing_alg.as_deref()), (GrantKind::ClientCredentials, Some("/etc/mcpx/k.pem".into()), Some("RS256")));
    assert_eq!((b.open_with.as_deref(), b.store), (Some("open -a X"), store));

    let one = |oauth: &str| err(&format!(r#"{{"mcpServers": {{"s": {{"url": "https://x/", "oauth": {oauth}}}}}}}"#));
    assert!(one("true").contains("mcpServers.s.oauth: expected an object"));
    assert!(one(r#"{"grant": "password"}"#).contains("mcpServers.s.oauth.grant: unknown grant \"password\""));
    assert!(one(r#"{"grant": "client_credentials"}"#).contains("needs \"clientId\""));
    assert!(one(r#"{"clientSecret": "s"}"#).contains("\"clientSecret\" needs \"clientId\""));
    assert!(one(r#"{"clientMetadataUrl": "http://x/c.json"}"#).contains("must be https://"));
    assert!(one(r#"{"signingAlg": "HS256"}"#).contains("signingAlg \"HS256\" is not supported"));
    assert!(one(r#"{"privateKeyFile": "k.pem"}"#).contains("\"privateKeyFile\" is for \"grant\": \"client_credentials\""));
    assert!(one(r#"{"scopes": "a b"}"#).contains("mcpServers.s.oauth.scopes: expected an array of strings"));
    let e = err(r#"{"mcpServers": {"s": {"url": "https://x/", "headers": {"authorization": "Bearer t"}, "oauth": {}}}}"#);
    assert!(e.contains("mcpServers.s.oauth: header \"Authorization\" and \"oauth\" are both set"), "{e}");
    let e = err(r#"{"mcpServers": {"s": {"command": "x", "oauth": {}}}}"#);
    assert!(e.contains("mcpServers.s.oauth: \"oauth\" is for remote servers"), "{e}");
}

/// `"tokenExchange"` (feature `secrets` and `oauth`): each case is a
/// server's `"oauth"` block, its `"isolation"`, the listener's `"auth"`,
/// and what comes of it: the exchange's audience, or an error's text.
#[test]
fn token_exchange_blocks() {
    use crate::remote::oauth::TokenExchange;
    const RS: &str = r#"{"oauth": {"issuer": "https://as.example", "audience": "https://hub.example/mcp"}}"#;
    const STATIC: &str = r#"{"tokens": {"alice": "t-alice"}}"#;
    let on = cfg!(all(feature = "secrets", feature = "oauth"));
    let built = |r: Result<Option<&'static str>, &'static str>| if on { r } else { Err("built without token exchange (cargo features `secrets` and `oauth`)") };
    let cases: [(&str, &str, &str, Result<Option<&str>, &str>); 10] = [
        (r#"{"clientId": "mcpx", "clientSecret": "s", "tokenExchange": true}"#, "client", RS, built(Ok(None))),
        (r#"{"clientId": "mcpx", "tokenExchange": {"audience": "https://api.example"}}"#, "client", RS, built(Ok(Some("https://api.example")))),
        (r#"{"clientId": "mcpx", "tokenExchange": {}}"#, "client", RS, built(Ok(None))),
        (r#"{"clientId": "mcpx", "tokenExchange": true}"#, "client", STATIC, built(Err("mcpServers.s.oauth.tokenExchange: exchanges each principal's OAuth access token to mcpx, so the HTTP listener must authenticate with OAuth"))),
        (r#"{"clientId": "mcpx", "tokenExchange": true}"#, "shared", RS, built(Err("mcpServers.s.oauth: \"tokenExchange\" tokens are each principal's own: set \"isolation\": \"client\""))),
        (r#"{"tokenExchange": true}"#, "client", RS, Err("mcpServers.s.oauth.tokenExchange: \"tokenExchange\" needs \"clientId\"")),
        (r#"{"clientId": "mcpx", "tokenExchange": true, "perPrincipal": true, "publicUrl": "https://hub.example"}"#, "client", RS, built(Err("\"tokenExchange\" and \"perPrincipal\" are two ways to get each principal's own tokens: use one"))),
        (r#"{"clientId": "mcpx", "tokenExchange": "yes"}"#, "client", RS, Err("mcpServers.s.oauth.tokenExchange: expected true or an object like {\"audience\": \"https://api.example.com\"}, found a string")),
        (r#"{"clientId": "mcpx", "tokenExchange": {"audience": ""}}"#, "client", RS, Err("mcpServers.s.oauth.tokenExchange.audience: the audience is empty")),
        (r#"{"clientId": "mcpx", "tokenExchange": false}"#, "shared", STATIC, Ok(None)),
    ];
    for (oauth, isolation, auth, want) in cases {
        let src = format!(r#"{{"auth": {auth}, "mcpServers": {{"s": {{"url": "https://x.example/mcp", "isolation": "{isolation}", "oauth": {oauth}}}}}}}"#);
        match (parse(&src, "cfg.json", FsPath::new("/etc/mcpx"), &env), want) {
            (Ok(c), Ok(audience)) => {
                let x = c.servers[0].remote.as_ref().and_then(|r| r.oauth.as_ref()?.token_exchange.clone());
                let off = oauth.contains("false");
                assert_eq!(x, (!off).then(|| TokenExchange { audience: audience.map(str::to_string) }), "{oauth}");
                #[cfg(feature = "secrets")]
                assert_eq!(c.servers[0].own_credentials(), !off, "{oauth}");
            }
            (Err(e), Err(part)) => assert!(e.to_string().contains(part), "{oauth}: {e}"),
            (got, want) => panic!("{oauth} ({isolation}, {auth}): got {got:?}, expected {want:?}"),
        }
    }
}

#[test]
fn remote_server_errors() {
    let one = |server: &str| err(&format!(r#"{{"mcpServers": {{"s": {server}}}}}"#));
    let e = one(r#"{"url": "ftp://x/"}"#);
    assert!(e.contains("mcpServers.s.url: url \"ftp://x/\": unsupported URL scheme"), "{e}");
    let e = one(r#"{"url": "http://x/", "command": "y"}"#);
    assert!(e.contains("\"command\" and \"url\" both given"), "{e}");
    let e = one(r#"{"type": "sse"}"#);
    assert!(e.contains("a remote server needs a \"url\""), "{e}");
    let e = one(r#"{"url": "http://x/", "headers": {"Host": "y"}}"#);
    assert!(e.contains("mcpServers.s.headers: header \"Host\" is set by mcpx itself"), "{e}");
    let e = one(r#"{"url": "http://x/", "headers": {"X-A": "${NOPE}"}}"#);
    assert!(e.contains("NOPE is not set"), "{e}");
    let e = one(r#"{"url": "http://x/", "caFile": "ca.pem"}"#);
    assert!(e.contains("mcpServers.s.caFile: caFile is set but the url is http://"), "{e}");
    let e = one(r#"{"url": "http://x/", "args": ["a"]}"#);
    assert!(e.contains("mcpServers.s.args: \"args\" is for local servers"), "{e}");
    let e = one(r#"{"command": "x", "headers": {"A": "b"}}"#);
    assert!(e.contains("mcpServers.s.headers: \"headers\" is for remote servers"), "{e}");
    let e = one(r#"{"url": "https://x/", "caFile": "/nonexistent/ca.pem"}"#);
    #[cfg(feature = "tls")]
    assert!(e.contains("mcpServers.s.caFile: caFile /nonexistent/ca.pem: cannot read it"), "{e}");
    #[cfg(not(feature = "tls"))]
    assert!(e.contains("built without TLS support"), "{e}");
}

#[test]
fn disabled_servers_are_not_validated_further() {
    let c = ok("{\"mcpServers\": {\"a\": {\"disabled\": true}}}");
    assert!(c.servers.is_empty());
    assert_eq!(c.disabled, ["a"]);
}

#[test]
fn search_path_order() {
    let with_xdg = |n: &str| match n {
        "XDG_CONFIG_HOME" => Some("/x".to_string()),
        "HOME" => Some("/h".to_string()),
        _ => None,
    };
    assert_eq!(
        search_path(&with_xdg),
        [PathBuf::from("mcpx.json"), PathBuf::from("/x/mcpx/config.json")]
    );
    let home_only = |n: &str| (n == "HOME").then(|| "/h".to_string());
    assert_eq!(
        search_path(&home_only),
        [PathBuf::from("mcpx.json"), PathBuf::from("/h/.config/mcpx/config.json")]
    );
}

#[test]
fn load_reports_missing_explicit_file_and_uses_builtin_otherwise() {
    let e = load(Some(FsPath::new("/nonexistent/mcpx.json")), &env).unwrap_err().to_string();
    assert!(e.starts_with("/nonexistent/mcpx.json: cannot read config file: "), "{e}");
    let none = |_: &str| None;
    // The working directory of tests has no mcpx.json.
    let c = load(None, &none).unwrap();
    assert_eq!(c.source, Source::BuiltIn);
    let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["demo", "notes"]);
    assert_eq!(c.servers[0].args, ["example-server", "--demo", "--name", "demo"]);
}

#[test]
fn load_reads_a_file_and_resolves_paths_next_to_it() {
    let dir = std::env::temp_dir().join(format!("mcpx-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("config.json");
    std::fs::write(&f, r#"{"mcpServers": {"a": {"command": "x", "cwd": "sub"}}}"#).unwrap();
    let c = load(Some(&f), &env).unwrap();
    assert_eq!(c.source, Source::File(f.clone()));
    let at = Path::root().key("mcpServers").key("a").key("cwd");
    assert_eq!(c.position(&at), Some(format!("{}:1:39", f.display())));
    assert_eq!(c.servers[0].cwd, Some(dir.join("sub")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn problems_are_typed_with_their_key_path() {
    let e = parse(r#"{"mcpServers": {"a": {"command": "x", "timeoutMs": 0}}}"#, "cfg.json", FsPath::new("/etc/mcpx"), &env).unwrap_err();
    let at = crate::bytes::jsonpos::Path::root().key("mcpServers").key("a").key("timeoutMs");
    assert_eq!(
        e.0,
        [Problem {
            file: "cfg.json".into(),
            line: Some((1, 39)),
            kind: ProblemKind::Key { path: at, msg: "expected a positive whole number of milliseconds, found 0".into() },
        }]
    );
    assert_eq!(e.to_string(), "cfg.json:1:39: mcpServers.a.timeoutMs: expected a positive whole number of milliseconds, found 0");
    let e = parse("{", "cfg.json", FsPath::new("/etc/mcpx"), &env).unwrap_err();
    assert!(matches!(&e.0[..], [Problem { line: Some(_), kind: ProblemKind::Syntax(_), .. }]), "{e:?}");
    let e = load(Some(FsPath::new("/nonexistent/mcpx.json")), &env).unwrap_err();
    assert!(matches!(&e.0[..], [Problem { line: None, kind: ProblemKind::Unreadable(_), .. }]), "{e:?}");
    assert!(e.to_string().starts_with("/nonexistent/mcpx.json: cannot read config file: "), "{e}");
}

#[test]
fn required_servers_for_ready() {
    let c = ok(r#"{"mcpServers": {"a": {"command": "x", "required": true}, "b": {"command": "y"}}}"#);
    let req: Vec<(&str, bool)> = c.servers.iter().map(|s| (s.name.as_str(), s.required)).collect();
    assert_eq!(req, [("a", true), ("b", false)]);
    assert!(crate::serve::options::upstream_spec(&c.servers[0]).required);
    let e = with_env(r#"{"mcpServers": {"a": {"command": "x", "required": "yes"}}}"#, &[]).expect_err("refused");
    assert!(e.contains("mcpServers.a.required"), "{e}");
}

#[test]
fn traces_are_read_with_their_defaults_and_checked() {
    let c = ok(r#"{"mcpServers": {}, "traces": {"endpoint": "http://127.0.0.1:4318"}}"#);
    #[cfg(not(feature = "traces"))]
    assert!(c.warnings.iter().any(|w| w.to_string().contains("unknown key \"traces\"")));
    #[cfg(feature = "traces")]
    assert_eq!(ok(r#"{"mcpServers": {}}"#).traces, None);
    #[cfg(feature = "traces")]
    assert_eq!(
        c.traces,
        Some(TraceSettings { endpoint: "http://127.0.0.1:4318".into(), sample_ratio: 1.0, service_name: "mcpx".into(), max_queue: 2048, headers: vec![] })
    );
    #[cfg(feature = "traces")]
    {
        let c = ok(r#"{"mcpServers": {}, "traces": {"endpoint": "https://otel.example:4318/", "sampleRatio": 0.25, "serviceName": "gw", "maxQueue": 10, "headers": {"x-api-key": "k"}}}"#);
        let t = c.traces.unwrap();
        assert_eq!((t.sample_ratio, t.service_name.as_str(), t.max_queue), (0.25, "gw", 10));
        assert_eq!(t.headers, [("x-api-key".to_string(), "k".to_string())]);
        for (src, says) in [
            (r#"{"traces": {}}"#, "traces.endpoint: missing"),
            (r#"{"traces": {"endpoint": "ftp://x"}}"#, "is not an http:// or https:// URL"),
            (r#"{"traces": {"endpoint": "http://x:4318", "sampleRatio": 2}}"#, "traces.sampleRatio: expected a number from 0 to 1"),
            (r#"{"traces": {"endpoint": "http://x:4318", "maxQueue": 0}}"#, "traces.maxQueue"),
        ] {
            let src = src.replacen('{', r#"{"mcpServers": {}, "#, 1);
            let e = err(&src);
            assert!(e.contains(says), "{src}: {e}");
        }
    }
}

// `${secret:NAME}`: only in a server's env and headers, kept for the
// instance that resolves it; such a server runs per principal and needs
// the "secrets" file.
#[cfg(feature = "secrets")]
#[test]
fn per_principal_secrets_are_kept_in_env_and_headers_only_and_need_isolation_and_a_file() {
    let c = ok(r#"{"secrets": "s.json", "mcpServers": {
    "w": {"command": "x", "isolation": "client", "env": {"API_KEY": "${secret:API_KEY}", "LIT": "$${secret:X}"}},
    "r": {"url": "https://h/mcp", "isolation": "client", "headers": {"Authorization": "Bearer ${secret:TOKEN}"}}
}}"#);
    assert_eq!(c.secrets.as_deref(), Some(std::path::Path::new("/etc/mcpx/s.json")));
    assert_eq!(c.servers[0].env, [("API_KEY".to_string(), "${secret:API_KEY}".to_string()), ("LIT".to_string(), "$${secret:X}".to_string())]);
    assert_eq!(c.servers[0].secrets().collect::<Vec<_>>(), ["API_KEY"], "an escaped one is no reference");
    assert_eq!(c.servers[1].secrets().collect::<Vec<_>>(), ["TOKEN"]);
    let e = err(r#"{"secrets": "s.json", "mcpServers": {"w": {"command": "x", "env": {"K": "${secret:K}"}}}}"#);
    assert!(e.contains("mcpServers.w.env: uses a per-principal ${secret:...}: set \"isolation\": \"client\""), "{e}");
    let e = err(r#"{"mcpServers": {"w": {"command": "x", "isolation": "client", "env": {"K": "${secret:K}"}}}}"#);
    assert!(e.contains("mcpServers.w: names the per-principal secret K (`${secret:K}`), but no \"secrets\" file is configured"), "{e}");
    let e = err(r#"{"secrets": "s.json", "mcpServers": {"w": {"command": "${secret:K}"}}}"#);
    assert!(e.contains("mcpServers.w.command: `${secret:K}` names a per-principal secret, which only a server's \"env\" and \"headers\" can use"), "{e}");
    let e = err(r#"{"secrets": "s.json", "mcpServers": {"w": {"command": "x", "isolation": "client", "env": {"K": "${secret:bad-name}"}}}}"#);
    assert!(e.contains("is not a valid variable reference"), "{e}");
}

#[cfg(feature = "secrets")]
#[test]
fn secrets_resolve_per_instance_and_escapes_become_literal() {
    use super::expand::{resolve_secrets, secret_refs};
    let lookup = |k: &str| match k {
        "A" => Some("alpha"),
        _ => None,
    };
    for (kept, want) in [
        ("x", Ok("x")),
        ("${secret:A}", Ok("alpha")),
        ("Bearer ${secret:A}!", Ok("Bearer alpha!")),
        ("$${secret:A}", Ok("${secret:A}")),
        ("${HOME} ${secret:A}", Ok("${HOME} alpha")),
        ("${secret:B}", Err("B")),
    ] {
        assert_eq!(resolve_secrets(kept, lookup), want.map(str::to_string).map_err(str::to_string), "{kept}");
    }
    assert_eq!(secret_refs("${secret:A}-$${secret:B}-${secret:C}").collect::<Vec<_>>(), ["A", "C"]);
}

/// A "perPrincipal" server keeps each person's tokens encrypted with the
/// state key: one mcpx without shared state needs the key too.
#[cfg(feature = "secrets")]
#[test]
fn per_principal_tokens_need_the_state_key() {
    let cfg = r#"{"auth": {"tokens": {"alice": "tok-alice-0123456789"}}, "http": {"allowedHosts": ["hub.example"]},
        "mcpServers": {"gh": {"url": "https://gh.example/mcp", "isolation": "client",
            "oauth": {"perPrincipal": true, "publicUrl": "https://hub.example"}}}}"#;
    let e = with_env(cfg, &[]).unwrap_err();
    assert!(e.contains("\"perPrincipal\" servers keep each person's tokens encrypted with the state key: set MCPX_STATE_KEY"), "{e}");
    let c = with_env(cfg, &[("MCPX_STATE_KEY", &"07".repeat(32))]).unwrap();
    assert_eq!((c.cluster.state_key, c.cluster.state_url.as_deref(), c.cluster.replica.as_deref()), (Some(StateKey([7; 32])), None, None));
    // A bad key says what is wrong with it, once.
    let e = with_env(cfg, &[("MCPX_STATE_KEY", "junk")]).unwrap_err();
    assert!(e.contains("MCPX_STATE_KEY") && !e.contains("keep each person's tokens"), "{e}");
}
