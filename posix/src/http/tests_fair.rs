//! Loopback tests that several clients share the server fairly: one
//! connection cannot hold the thread, one principal cannot fill a shared
//! table for the others. Reuses the helpers of `tests`.

use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

/// Milliseconds of one `GET /health` on a fresh connection.
fn health_ms(addr: SocketAddr) -> f64 {
    let began = Instant::now();
    let r = request(addr, "GET", "/health", &[], b"");
    assert_eq!(r.status, 200);
    began.elapsed().as_secs_f64() * 1000.0
}

fn p99(mut ms: Vec<f64>) -> f64 {
    ms.sort_by(f64::total_cmp);
    ms[(ms.len() * 99 / 100).min(ms.len() - 1)]
}

/// Sends a chunked POST body made of 1-byte chunks as fast as the socket
/// takes it, for `for_ms`; then ends the body. The socket always has data.
fn trickle(addr: SocketAddr, for_ms: u64, done: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut s = connect(addr);
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        );
        s.write_all(head.as_bytes()).unwrap();
        let block = b"1\r\n \r\n".repeat(10_000);
        let until = Instant::now() + Duration::from_millis(for_ms);
        while Instant::now() < until {
            if s.write_all(&block).is_err() {
                break;
            }
        }
        done.store(true, Ordering::SeqCst);
        let _ = s.write_all(b"0\r\n\r\n");
        let _ = read_resp(&mut s, &mut Vec::new());
    })
}

// Issue 11 item 4: before the fix the trickling connection held the thread
// until its body was complete, and no `/health` was answered meanwhile.
#[test]
fn a_trickled_upload_does_not_freeze_other_clients() {
    let t = start(|c| c.limits.max_body = 64 << 20);
    let sid = init(t.addr);
    let baseline: Vec<f64> = (0..40).map(|_| health_ms(t.addr)).collect();
    let base = p99(baseline);
    let done = Arc::new(AtomicBool::new(false));
    let up = trickle(t.addr, 2500, done.clone());
    std::thread::sleep(Duration::from_millis(200));
    let mut during = Vec::new();
    let mut calls = 0;
    while !done.load(Ordering::SeqCst) && during.len() < 400 {
        let ms = health_ms(t.addr);
        if done.load(Ordering::SeqCst) {
            break;
        }
        during.push(ms);
        if during.len() % 10 == 0 {
            let r = post(t.addr, Some(&sid), &call(during.len() as u64, "echo", json!({ "text": "still here" })));
            assert_eq!(r.status, 200, "{}", r.text());
            assert_eq!(r.json()["result"]["content"][0]["text"], "still here");
            calls += 1;
        }
    }
    up.join().unwrap();
    let n = during.len();
    let trickling = if n > 0 { p99(during) } else { f64::INFINITY };
    println!("/health p99: {base:.2} ms idle, {trickling:.2} ms while one connection trickles ({n} samples, {calls} calls)");
    assert!(n >= 20 && calls >= 2, "only {n} /health and {calls} calls answered while one upload trickled");
    assert!(trickling < base * 50.0 + 250.0, "/health p99 {trickling:.2} ms while trickling vs {base:.2} ms idle");
}
