//! What the hub's ingress costs for one 64 KiB message: `Envelope::parse`
//! (validation and the envelope's member lookup) of a `tools/call` request
//! and of its answer, ASCII and UTF-8 text, repeated N times.
//!
//!   cargo run --release -p mcpx-core --example scan_64k -- [N [WHICH]]
//!
//! Seconds depend on the machine's load; instruction counts do not:
//! `valgrind --tool=callgrind` of N=10 minus N=0, divided by 10, with WHICH
//! (0 request, 1 answer, 2 UTF-8 answer) selecting one message.
use mcpx_core::envelope::Envelope;
use std::hint::black_box;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let only: Option<usize> = args.next().and_then(|s| s.parse().ok());
    let text = "x".repeat(65536);
    let utf = "é€x".repeat(65536 / 6);
    let request = |t: &str| format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{t}"}}}}}}"#);
    let answer = |t: &str| format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"{t}"}}]}}}}"#);
    let messages = [("request, 64 KiB ASCII", request(&text)), ("answer, 64 KiB ASCII", answer(&text)), ("answer, 64 KiB UTF-8", answer(&utf))];
    for (i, (name, m)) in messages.iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        let t = std::time::Instant::now();
        for _ in 0..n {
            let e = Envelope::parse(black_box(m.as_bytes())).expect("a valid message");
            black_box(e.result().or(e.params()));
        }
        let per = t.elapsed().as_nanos() as f64 / n.max(1) as f64;
        println!("{name}: {:.1} µs per Envelope::parse", per / 1000.0);
    }
}
