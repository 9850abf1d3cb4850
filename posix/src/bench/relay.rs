//! The bare byte relay, the floor of every process hop: spawns a command
//! and copies stdin → its stdin and its stdout → stdout on two blocking
//! threads, without looking at the bytes. `std::io::copy` is the plainest
//! copy there is (between pipes on Linux it moves the bytes in the kernel).

use std::io;
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
    let (Some(mut to_child), Some(mut from_child)) = (child.stdin.take(), child.stdout.take())
    else {
        eprintln!("relay: `{program}` has no pipes");
        return 1;
    };
    // Dropping `to_child` at the end of the thread closes the child's stdin.
    std::thread::spawn(move || io::copy(&mut io::stdin().lock(), &mut to_child));
    let _ = io::copy(&mut from_child, &mut io::stdout().lock());
    let _ = child.kill();
    let _ = child.wait();
    0
}
