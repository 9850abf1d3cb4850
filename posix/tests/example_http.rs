//! `mcpx example-server --http` end to end: the real binary, raw HTTP/1.1
//! clients in front.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

mod support;
use support::flood::Flood;
use support::MCPX;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The example server on a free loopback port, accepting connections.
fn example_http() -> (Server, String) {
    let addr = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let child = Command::new(MCPX)
        .args(["example-server", "--http", &addr])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(&addr).is_err() {
        assert!(Instant::now() < deadline, "example-server never listened on {addr}");
        std::thread::sleep(Duration::from_millis(20));
    }
    (server, addr)
}

fn initialize() -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
}

#[test]
fn a_client_that_does_not_read_its_404s_leaves_sessions_to_the_others() {
    let (mut server, addr) = example_http();
    // Client A posts to a session that does not exist, again and again on
    // one connection, and never reads the 404s: the server's writes to it
    // fill the socket and wait.
    let a = Flood::until_backed_up(&addr, "2025-06-18");
    // Client B starts a session meanwhile.
    let (status, head, answer) = support::post(&addr, &[], &initialize());
    assert_eq!(status, 200, "B's initialize while A does not read: {head}\n{answer}");
    assert!(head.to_ascii_lowercase().contains("mcp-session-id:"), "{head}");
    assert!(server.0.try_wait().unwrap().is_none(), "the server left");
    a.end();
}
