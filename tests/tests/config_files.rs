//! Files named by the config (issue 25, item 7): a FIFO nobody writes, a
//! device such as `/dev/zero` or a file too large as a remote's `caFile` or
//! as `state.keyFile` is refused on a reload with an error naming the file,
//! while `/health` keeps answering and the running config stays; at start,
//! the same refusal ends `serve` with the error.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::{json, Value};

/// A FIFO at `path` that nobody writes.
fn fifo(path: &Path) -> PathBuf {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
    path.to_path_buf()
}

/// A sparse regular file of 2 MiB (over the 1 MiB bound).
fn too_large(path: &Path) -> PathBuf {
    std::fs::File::create(path).unwrap().set_len(2 << 20).unwrap();
    path.to_path_buf()
}

fn write_config(path: &Path, cfg: &Value) {
    // Written through a rename, so the file watch sees a new file at once.
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(cfg).unwrap()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

struct Serving {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path, config: &Path) -> Serving {
    let port = free_port();
    let log = dir.join("serve.log");
    let child = Command::new(mcpx())
        .args(["serve", "--config", config.to_str().unwrap(), "--http", &format!("127.0.0.1:{port}")])
        .env_remove("MCPX_STATE_KEY")
        .env_remove("MCPX_STATE_URL")
        .env_remove("MCPX_REPLICA")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let s = Serving { child, port, log };
    let t0 = Instant::now();
    while s.health(Duration::from_secs(1)).is_none() {
        assert!(t0.elapsed() < Duration::from_secs(20), "mcpx did not come up:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    s
}

impl Serving {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// GET `path` within `limit`: the body, `None` when no full answer came.
    fn get(&self, path: &str, limit: Duration) -> Option<String> {
        let mut s = TcpStream::connect_timeout(&([127, 0, 0, 1], self.port).into(), limit).ok()?;
        s.set_read_timeout(Some(limit)).unwrap();
        let req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).ok()?;
        let mut raw = String::new();
        s.read_to_string(&mut raw).ok()?;
        raw.starts_with("HTTP/1.1 200").then(|| raw.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string())
    }

    fn health(&self, limit: Duration) -> Option<String> {
        self.get("/health", limit)
    }

    /// While the reload of a config naming `file` runs: `/health` answers
    /// within 1 s every time, until the log refuses the config saying `why`
    /// about `file`; the old config's server count stays in `/status`.
    fn refuses_without_stopping(&self, file: &Path, why: &str) {
        let want = file.display().to_string();
        let t0 = Instant::now();
        loop {
            let asked = Instant::now();
            assert!(self.health(Duration::from_secs(1)).is_some(), "/health did not answer within 1 s; log:\n{}", self.log());
            assert!(asked.elapsed() < Duration::from_secs(1), "/health took {:?}", asked.elapsed());
            let log = self.log();
            if log.contains("config refused; still serving the one loaded before") {
                assert!(log.lines().any(|l| l.contains(&want) && l.contains(why)), "no error naming {want} ({why}):\n{log}");
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(15), "the reload was not refused:\n{log}");
            std::thread::sleep(Duration::from_millis(100));
        }
        let status: Value = serde_json::from_str(&self.get("/status", Duration::from_secs(2)).expect("/status")).unwrap();
        assert_eq!(status["config"]["servers"], 1, "{status:#}");
        assert!(status["config"]["refused"].as_str().is_some_and(|r| r.contains(&want)), "{status:#}");
    }
}

fn base_config() -> Value {
    json!({"mcpServers": {"demo": {"command": mcpx().to_str().unwrap(), "args": ["example-server", "--demo"]}}})
}

fn with_remote_ca(ca_file: &Path) -> Value {
    let mut cfg = base_config();
    cfg["mcpServers"]["far"] = json!({"url": "https://127.0.0.1:9/mcp", "caFile": ca_file});
    cfg
}

fn with_state_key(key_file: &Path) -> Value {
    let mut cfg = base_config();
    cfg["state"] = json!({"url": "redis://127.0.0.1:9/0", "keyFile": key_file});
    cfg
}

#[test]
fn a_reload_naming_a_fifo_a_device_or_a_huge_file_is_refused_while_serving() {
    let dir = TempDir::new();
    let config = dir.path().join("mcpx.json");
    write_config(&config, &base_config());
    let s = serve(dir.path(), &config);
    let fifo = fifo(&dir.path().join("ca.fifo"));
    let big = too_large(&dir.path().join("big.pem"));
    let cases = [
        (with_remote_ca(&fifo), fifo.clone(), "it is a FIFO (named pipe), not a regular file"),
        (with_state_key(&fifo), fifo.clone(), "it is a FIFO (named pipe), not a regular file"),
        (with_remote_ca(Path::new("/dev/zero")), PathBuf::from("/dev/zero"), "it is a device, not a regular file"),
        (with_state_key(&big), big.clone(), "larger than 1024 KiB"),
    ];
    for (n, (cfg, file, why)) in cases.into_iter().enumerate() {
        // Each time a different log to look at: start from an empty one.
        std::fs::write(&s.log, "").unwrap();
        write_config(&config, &cfg);
        if n % 2 == 1 {
            // SIGHUP too (the file watch would see it as well).
            let _ = Command::new("kill").args(["-HUP", &s.child.id().to_string()]).status();
        }
        s.refuses_without_stopping(&file, why);
    }
}

#[test]
fn start_fails_on_a_fifo_or_a_device_naming_it() {
    let dir = TempDir::new();
    let config = dir.path().join("mcpx.json");
    let fifo = fifo(&dir.path().join("key.fifo"));
    for (cfg, file, why) in [
        (with_state_key(&fifo), fifo.clone(), "FIFO"),
        (with_remote_ca(Path::new("/dev/zero")), PathBuf::from("/dev/zero"), "device"),
    ] {
        write_config(&config, &cfg);
        let mut child = Command::new(mcpx())
            .args(["serve", "--config", config.to_str().unwrap()])
            .env_remove("MCPX_STATE_KEY")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        let code = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st.code();
            }
            if t0.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                panic!("serve did not end on {}", file.display());
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert_eq!(code, Some(1), "{err}");
        assert!(err.contains(&file.display().to_string()) && err.contains(why), "{err}");
    }
}
