//! The shipped cluster example, deploy/cluster/start.sh (issue 28): Redis,
//! three replicas of one config and HAProxy on free loopback ports. A
//! replica killed is started again while the others serve every call
//! through HAProxy; SIGTERM to the script stops every process it started.
//! (redis-server and haproxy from Debian: a missing one fails the test.)

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcpx_tests::*;

const WAIT: Duration = Duration::from_secs(30);

/// The script, stopped (SIGKILL to its process group) if the test fails.
struct Script(Child);

impl Drop for Script {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", self.0.id())]).status();
        let _ = self.0.wait();
    }
}

fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// `mcpx call demo__echo` through `url`: its text.
fn echo(url: &str, text: &str) -> String {
    let out = Command::new(mcpx())
        .args(["call", "demo__echo", &format!(r#"{{"text": "{text}"}}"#), "--url", url, "--timeout", "20"])
        .env_remove("MCPX_TOKEN")
        .output()
        .unwrap();
    assert!(out.status.success(), "call: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn pid_in(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(format!("{name}.pid"))).unwrap_or_default().trim().to_string()
}

#[test]
fn a_killed_replica_comes_back_while_the_others_serve() {
    let dir = TempDir::new();
    let ports: Vec<u16> = (0..5).map(|_| free_port()).collect();
    let (front, redis, replicas) = (ports[0], ports[1], &ports[2..]);
    let replica_ports = replicas.iter().map(u16::to_string).collect::<Vec<_>>().join(" ");
    use std::os::unix::process::CommandExt as _;
    let mut child = Command::new("bash")
        .arg(repo_root().join("deploy/cluster/start.sh"))
        .args(["--mcpx", mcpx().to_str().unwrap(), "--dir", dir.path().to_str().unwrap()])
        .env("MCPX_FRONT_PORT", front.to_string())
        .env("MCPX_REDIS_PORT", redis.to_string())
        .env("MCPX_REPLICA_PORTS", &replica_ports)
        .env("MCPX_RESTART_DELAY", "1")
        .stdout(std::fs::File::create(dir.path().join("start.out")).unwrap())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let said = std::thread::spawn(move || BufReader::new(stderr).lines().map_while(Result::ok).collect::<Vec<_>>());
    let mut script = Script(child);
    let t0 = Instant::now();
    while !std::fs::read_to_string(dir.path().join("start.out")).unwrap_or_default().contains("cluster up") {
        assert!(t0.elapsed() < WAIT && script.0.try_wait().unwrap().is_none(), "the cluster did not come up; logs in {}", dir.path().display());
        std::thread::sleep(Duration::from_millis(100));
    }
    let url = format!("http://127.0.0.1:{front}/mcp");
    // The replicas share one config, each told which it is.
    let config = std::fs::read_to_string(dir.path().join("mcpx.json")).unwrap();
    assert!(config.contains("\"r1\"") && config.contains("\"r3\"") && !config.contains("\"replica\""), "{config}");
    assert_eq!(echo(&url, "hello"), "hello");

    let first = pid_in(dir.path(), "r2");
    let _ = Command::new("kill").args(["-KILL", &first]).status();
    // Every call meanwhile is served, by the two others.
    let t0 = Instant::now();
    for n in 0..6 {
        assert_eq!(echo(&url, &format!("still served {n}")), format!("still served {n}"));
    }
    // r2 comes back, a new process on its port.
    while !(listening(replicas[1]) && pid_in(dir.path(), "r2") != first) {
        assert!(t0.elapsed() < WAIT, "r2 did not come back; its log:\n{}", std::fs::read_to_string(dir.path().join("r2.log")).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(echo(&format!("http://127.0.0.1:{}/mcp", replicas[1]), "r2 again"), "r2 again");
    assert_eq!(echo(&url, "all three"), "all three");

    // SIGTERM stops it all.
    let _ = Command::new("kill").args(["-TERM", &script.0.id().to_string()]).status();
    let t0 = Instant::now();
    while script.0.try_wait().unwrap().is_none() {
        assert!(t0.elapsed() < WAIT, "start.sh did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
    let said = said.join().unwrap();
    assert!(std::fs::read_to_string(dir.path().join("start.out")).unwrap().contains("start.sh: stopped"));
    assert!(said.iter().any(|l| l.starts_with("start.sh: replica r2 ended (status 137)")), "{said:?}");
    assert!(said.iter().any(|l| l == "start.sh: replica r2 started again"), "{said:?}");
    assert!(!said.iter().any(|l| l.contains("r1") || l.contains("r3")), "only r2 was restarted: {said:?}");
    for port in ports {
        let t0 = Instant::now();
        while listening(port) {
            assert!(t0.elapsed() < Duration::from_secs(10), "port {port} still served after start.sh stopped");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
