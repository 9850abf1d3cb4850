//! The bare byte relay: spawns a command and copies stdin → its stdin and
//! its stdout → stdout, chunk by chunk, without looking at the bytes. It is
//! the floor for any process hop (two extra pipe copies and wake-ups).

use std::io::{Read, Write};
use std::process::{Command, Stdio};

pub fn main(args: &[String]) -> i32 {
    let args = match args.first().map(String::as_str) {
        Some("--") => &args[1..],
        _ => args,
    };
    let Some((program, rest)) = args.split_first() else {
        eprintln!("relay: usage: relay -- COMMAND [ARGS...]");
        return 2;
    };
    let mut child = match Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("relay: cannot start `{program}`: {e}");
            return 1;
        }
    };
    let mut to_child = child.stdin.take().expect("piped stdin");
    let mut from_child = child.stdout.take().expect("piped stdout");
    std::thread::spawn(move || {
        let mut stdin = super::sys::stdin_file();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to_child.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        // Dropping `to_child` closes the child's stdin.
    });
    let mut stdout = super::sys::stdout_file();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match from_child.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if stdout.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    0
}
