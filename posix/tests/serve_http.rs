//! `mcpx serve --http` end to end: the real binary, a small `sh` MCP server
//! behind it, a blocking HTTP/1.1 client in front.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

mod support;
use support::MCPX;

const FAKE: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}\n' "$id";;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"hello","inputSchema":{"type":"object"}}]}}\n' "$id";;
    *'"method":"tools/call"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"hello over http"}]}}\n' "$id";;
  esac
done
"#;

struct Mcpx {
    child: Child,
    dir: PathBuf,
    stderr: mpsc::Receiver<String>,
}

impl Drop for Mcpx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start(test: &str, args: &[&str]) -> Mcpx {
    start_with(test, args, Stdio::null())
}

fn start_with(test: &str, args: &[&str], stdin: Stdio) -> Mcpx {
    let dir = std::env::temp_dir().join(format!("mcpx-http-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("fake.sh"), FAKE).unwrap();
    let cfg = json!({ "mcpServers": { "fake": { "command": "sh", "args": [dir.join("fake.sh")], "prefix": "" } } });
    std::fs::write(dir.join("mcpx.json"), cfg.to_string()).unwrap();
    let mut child = Command::new(MCPX)
        .arg("serve")
        .args(args)
        .current_dir(&dir)
        .env("HOME", &dir)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("MCPX_LOG")
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = support::lines(child.stderr.take().unwrap());
    Mcpx { child, dir, stderr }
}

impl Mcpx {
    /// The address from "serving MCP over HTTP at http://ADDR/mcp".
    fn addr(&self) -> String {
        loop {
            let line = self
                .stderr
                .recv_timeout(Duration::from_secs(10))
                .expect("the listening line");
            if let Some(rest) = line.split("serving MCP over HTTP at http://").nth(1) {
                return rest.trim_end_matches("/mcp").to_string();
            }
        }
    }
}

/// [`support::post`] with the body read as JSON (`null` when it is not).
fn post(addr: &str, headers: &[(&str, &str)], body: &Value) -> (u16, String, Value) {
    let (status, head, body) = support::post(addr, headers, body);
    (status, head, serde_json::from_str(&body).unwrap_or(Value::Null))
}

// covers: streamable-http-server-bind-localhost
#[test]
fn serves_mcp_over_http_and_stops_on_sigterm() {
    let mut m = start("serve", &["--http", "127.0.0.1:0"]);
    let addr = m.addr();
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let (status, head, v) = post(&addr, &[], &init);
    assert_eq!(status, 200, "{head}");
    assert_eq!(v["result"]["protocolVersion"], "2025-11-25");
    let sid = head
        .lines()
        .find_map(|l| l.strip_prefix("Mcp-Session-Id: "))
        .expect("a session id")
        .to_string();
    let hs = [
        ("Mcp-Session-Id", sid.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let (status, _, _) = post(
        &addr,
        &hs,
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    );
    assert_eq!(status, 202);
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "hello", "arguments": {} } });
    let (status, _, v) = post(&addr, &hs, &call);
    assert_eq!(status, 200);
    assert_eq!(v["result"]["content"][0]["text"], "hello over http");
    let pid = m.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    for _ in 0..500 {
        if let Some(st) = m.child.try_wait().unwrap() {
            assert_eq!(st.code(), Some(0));
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("mcpx did not exit after SIGTERM");
}

#[test]
fn a_public_address_without_a_token_is_refused() {
    let mut m = start("public", &["--http", "0.0.0.0:0"]);
    let st = m.child.wait().unwrap();
    assert_eq!(st.code(), Some(1));
    // Up to the end of its stderr: the reader thread may still be passing lines on.
    let err: Vec<String> = std::iter::from_fn(|| m.stderr.recv_timeout(Duration::from_secs(5)).ok()).collect();
    assert!(
        err.iter().any(|l| l.contains("--insecure-no-auth")),
        "{err:?}"
    );
}

#[test]
fn stdio_and_http_together() {
    let mut m = start_with(
        "both",
        &["--http", "127.0.0.1:0", "--stdio"],
        Stdio::piped(),
    );
    let addr = m.addr();
    let mut stdin = m.child.stdin.take().unwrap();
    let stdout = m.child.stdout.take().unwrap();
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    writeln!(stdin, "{init}").unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["result"]["protocolVersion"], "2025-06-18");
    let (status, _, v) = post(&addr, &[], &init);
    assert_eq!(status, 200);
    assert_eq!(v["result"]["protocolVersion"], "2025-06-18");
    // End of stdin ends mcpx, HTTP or not.
    drop(stdin);
    for _ in 0..500 {
        if let Some(st) = m.child.try_wait().unwrap() {
            assert_eq!(st.code(), Some(0));
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("mcpx did not exit at end of stdin");
}
