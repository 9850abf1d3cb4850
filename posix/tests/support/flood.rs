//! A client that posts to a session that does not exist, again and again on
//! one connection, and never reads the 404s, until its writes back up: the
//! server is then stuck writing to it. Shared by the example server's and
//! mcpx's fairness tests; the tests crate includes this file by its path,
//! since neither test crate can depend on the other.

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct Flood {
    conn: TcpStream,
    writer: JoinHandle<()>,
    /// Requests written before the writes stopped going through.
    pub sent: usize,
}

impl Flood {
    /// Floods `addr` with `tools/list` posts speaking `revision`, and
    /// returns once they back up (fails the test after 60 s).
    pub fn until_backed_up(addr: &str, revision: &str) -> Flood {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let req = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: none-such\r\nMCP-Protocol-Version: {revision}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let conn = TcpStream::connect(addr).unwrap();
        let sent = Arc::new(AtomicUsize::new(0));
        let writer = {
            let (mut conn, sent) = (conn.try_clone().unwrap(), sent.clone());
            std::thread::spawn(move || {
                while conn.write_all(req.as_bytes()).is_ok() {
                    sent.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut last = usize::MAX;
        loop {
            let now = sent.load(Ordering::Relaxed);
            if now == last && now > 0 {
                return Flood { conn, writer, sent: now };
            }
            assert!(Instant::now() < deadline, "client A's requests never backed up ({now} sent)");
            last = now;
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// Closes the connection; its writer ends.
    pub fn end(self) {
        let _ = self.conn.shutdown(Shutdown::Both);
        self.writer.join().unwrap();
    }
}
