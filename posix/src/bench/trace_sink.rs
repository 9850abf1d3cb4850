//! The OTLP/HTTP endpoint of `--policy traces`: accepts every export the
//! hub POSTs (reads it whole, answers 200) and counts them, so the hub's
//! tracing is measured with its export and no collector's cost.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Exports received.
static EXPORTS: AtomicU64 = AtomicU64::new(0);

/// The sink's URL (`http://127.0.0.1:PORT`), started on first use.
pub fn url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port for the trace sink");
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                std::thread::spawn(move || receive(conn));
            }
        });
        format!("http://127.0.0.1:{port}")
    })
}

/// Exports received so far.
pub fn exports() -> u64 {
    EXPORTS.load(Ordering::Relaxed)
}

/// Reads one request (its head and `Content-Length` body) and answers 200.
fn receive(conn: TcpStream) {
    let Ok(mut out) = conn.try_clone() else { return };
    let mut r = BufReader::new(conn);
    let mut length = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((name, value)) = l.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    if std::io::copy(&mut r.by_ref().take(length as u64), &mut std::io::sink()).is_ok() {
        EXPORTS.fetch_add(1, Ordering::Relaxed);
        let _ = out.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    }
}
