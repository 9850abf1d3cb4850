//! What the `mcpx` end-to-end tests share.

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{self, Receiver};

/// The binary under test.
pub const MCPX: &str = env!("CARGO_BIN_EXE_mcpx");

/// The lines of `r` (a child's stdout or stderr), read on a thread of their own.
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
