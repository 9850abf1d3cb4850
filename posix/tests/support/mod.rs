//! What the `mcpx` end-to-end tests share.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

#[allow(dead_code)] // not every test binary uses it
pub mod flood;

/// The binary under test.
pub const MCPX: &str = env!("CARGO_BIN_EXE_mcpx");

/// The lines of `r` (a child's stdout or stderr), read on a thread of their own.
#[allow(dead_code)] // not every test binary uses it
pub fn lines(r: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// One JSON-RPC POST to `/mcp` at `addr` on a connection of its own
/// (`Connection: close`), with the extra `headers`: the status, the head and
/// the body as text (an SSE body as it came). Status 0 when the answer has
/// no complete head.
#[allow(dead_code)] // not every test binary uses it
pub fn post(addr: &str, headers: &[(&str, &str)], body: &serde_json::Value) -> (u16, String, String) {
    post_text(addr, headers, &body.to_string())
}

/// [`post`] of a body already written out (a large one is not built twice).
#[allow(dead_code)] // not every test binary uses it
pub fn post_text(addr: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out).into_owned();
    let Some((head, body)) = out.split_once("\r\n\r\n") else { return (0, out, String::new()) };
    let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

/// A scratch folder of a test (`mcpx-<name>-<pid>` in the temp folder),
/// removed when dropped.
#[allow(dead_code)] // not every test binary uses it
pub struct Scratch(pub PathBuf);

#[allow(dead_code)]
impl Scratch {
    /// An empty folder with `files` (name, text) written in it.
    pub fn create(name: &str, files: &[(&str, &str)]) -> Scratch {
        let d = std::env::temp_dir().join(format!("mcpx-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        for (f, text) in files {
            std::fs::write(d.join(f), text).unwrap();
        }
        Scratch(d)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// `mcpx` to run in this folder, as a new user would: HOME here, no
    /// XDG_CONFIG_HOME or MCPX_LOG, stdin and stdout piped.
    pub fn mcpx(&self) -> std::process::Command {
        use std::process::Stdio;
        let mut c = std::process::Command::new(MCPX);
        c.current_dir(&self.0)
            .env("HOME", &self.0)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("MCPX_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        c
    }

    /// Writes `cfg` as `mcpx.json`.
    pub fn config(&self, cfg: &serde_json::Value) -> PathBuf {
        let p = self.path("mcpx.json");
        std::fs::write(&p, serde_json::to_string_pretty(cfg).unwrap()).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether process `pid` runs (a zombie counts as gone).
#[allow(dead_code)] // not every test binary uses it
pub fn pid_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')),
        // SAFETY: signal 0 only checks that the process exists.
        Err(_) => unsafe { libc::kill(pid, 0) == 0 },
    }
}
