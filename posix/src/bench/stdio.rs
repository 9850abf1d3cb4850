//! The stdio load generator: one MCP client on a child's stdin/stdout,
//! sequential or with a fixed number of requests in flight.

use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use super::json::{as_u64, member, str_inner};

pub const INIT_VERSION: &str = "2025-06-18";

pub fn initialize_body(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"{INIT_VERSION}","capabilities":{{}},"clientInfo":{{"name":"mcpx-bench","version":"{}"}}}}}}"#,
        env!("CARGO_PKG_VERSION")
    )
}

pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Writes a tools/call echo request with `text` (plain ASCII, no escapes).
pub fn call_body(out: &mut Vec<u8>, id: u64, tool: &str, text: &[u8]) {
    out.clear();
    let _ = write!(
        out,
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"text":""#
    );
    out.extend_from_slice(text);
    out.extend_from_slice(br#""}}}"#);
}

/// Checks an echo answer: a result whose first content text has `len` bytes.
pub fn check_echo(msg: &[u8], len: usize) -> bool {
    member(msg, "result")
        .and_then(|r| member(r, "content"))
        .map(|c| {
            // content: [{"type":"text","text":"..."}]: find the text member of the first item.
            let first = c
                .iter()
                .position(|&b| b == b'{')
                .map(|i| &c[i..])
                .unwrap_or(b"");
            let end = super::json::value_end(first, 0).unwrap_or(0);
            member(&first[..end], "text")
                .and_then(str_inner)
                .map(|t| t.len())
                == Some(len)
        })
        .unwrap_or(false)
}

pub struct Peer {
    pub child: Child,
    tx: ChildStdin,
    rx: BufReader<ChildStdout>,
    line: Vec<u8>,
    next_id: u64,
    pub tool: String,
}

/// What one load run measured.
pub struct Run {
    pub lat_ns: Vec<u64>,
    pub elapsed_ns: u64,
    pub errors: u64,
}

impl Peer {
    pub fn spawn(cmd: &[String], stderr: Stdio) -> io::Result<Self> {
        let (program, args) = cmd
            .split_first()
            .ok_or_else(|| io::Error::other("empty command"))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| io::Error::other(format!("cannot start `{program}`: {e}")))?;
        let tx = child.stdin.take().expect("piped");
        let rx = BufReader::with_capacity(1 << 17, child.stdout.take().expect("piped"));
        Ok(Peer {
            child,
            tx,
            rx,
            line: Vec::with_capacity(1 << 17),
            next_id: 1,
            tool: String::new(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send(&mut self, body: &[u8]) -> io::Result<()> {
        let mut v = Vec::with_capacity(body.len() + 1);
        v.extend_from_slice(body);
        v.push(b'\n');
        self.tx.write_all(&v)
    }

    /// Reads until the response to `id`; answers requests from the server
    /// with "method not found" and skips notifications.
    fn response(&mut self, id: u64) -> io::Result<Vec<u8>> {
        loop {
            self.line.clear();
            if self.rx.read_until(b'\n', &mut self.line)? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed its stdout",
                ));
            }
            let msg = &self.line[..];
            let mid = member(msg, "id");
            if member(msg, "method").is_some() {
                if let Some(mid) = mid {
                    let reply = crate::bytes::written::error(Some(mid), mcpx_core::error::ErrorCode::MethodNotFound, "not supported by the bench client", None);
                    self.send(&reply)?;
                }
                continue;
            }
            if mid.and_then(as_u64) == Some(id) {
                return Ok(self.line.clone());
            }
        }
    }

    pub fn request(&mut self, method: &str, params: &str) -> io::Result<Vec<u8>> {
        let id = self.next_id;
        self.next_id += 1;
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
        self.send(body.as_bytes())?;
        self.response(id)
    }

    /// initialize, notifications/initialized, tools/list: afterwards
    /// `tool` is the name of the first tool whose name ends in "echo".
    pub fn handshake(&mut self) -> io::Result<()> {
        self.initialize()?;
        self.initialized_and_list()
    }

    /// The initialize request alone.
    pub fn initialize(&mut self) -> io::Result<()> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(initialize_body(id).as_bytes())?;
        let r = self.response(id)?;
        if member(&r, "result").is_none() {
            return Err(io::Error::other(format!(
                "initialize failed: {}",
                String::from_utf8_lossy(&r).trim()
            )));
        }
        Ok(())
    }

    /// notifications/initialized, then tools/list to find the echo tool.
    pub fn initialized_and_list(&mut self) -> io::Result<()> {
        self.send(INITIALIZED.as_bytes())?;
        let list = self.request("tools/list", "{}")?;
        self.tool = echo_tool(&list).ok_or_else(|| {
            io::Error::other(format!(
                "no echo tool in tools/list: {}",
                String::from_utf8_lossy(&list).trim()
            ))
        })?;
        Ok(())
    }

    /// One echo call, checked.
    pub fn call(&mut self, text: &[u8]) -> io::Result<()> {
        let id = self.next_id;
        self.next_id += 1;
        let mut body = Vec::new();
        call_body(&mut body, id, &self.tool, text);
        body.push(b'\n');
        self.tx.write_all(&body)?;
        let r = self.response(id)?;
        if check_echo(&r, text.len()) {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "bad echo answer: {:.300}",
                String::from_utf8_lossy(&r)
            )))
        }
    }

    /// `n` calls of tool `tool` with `arguments` (JSON), sent without
    /// waiting for their answers (for calls left in flight): their ids. An
    /// answer to one during a later [`Peer::load`] counts as an error there.
    pub fn send_calls(&mut self, n: usize, tool: &str, arguments: &str) -> io::Result<std::ops::Range<u64>> {
        let ids = self.next_id..self.next_id + n as u64;
        self.next_id = ids.end;
        let mut out = Vec::new();
        for id in ids.clone() {
            let _ = writeln!(out, r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#);
        }
        self.tx.write_all(&out)?;
        Ok(ids)
    }

    /// Cancels the requests `ids` (`notifications/cancelled`).
    pub fn cancel(&mut self, ids: std::ops::Range<u64>) -> io::Result<()> {
        let mut out = Vec::new();
        for id in ids {
            let _ = writeln!(out, r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#);
        }
        self.tx.write_all(&out)
    }

    /// `n` echo calls with `window` in flight; latency per call.
    pub fn load(&mut self, n: usize, window: usize, text: &[u8]) -> io::Result<Run> {
        let base = self.next_id;
        self.next_id += n as u64;
        let t0 = Instant::now();
        let sent: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
        let mut lat = Vec::with_capacity(n);
        let mut errors = 0u64;
        let tool = self.tool.clone();
        let (tx, rx, line) = (&mut self.tx, &mut self.rx, &mut self.line);
        if window <= 1 {
            let mut body = Vec::with_capacity(text.len() + 200);
            for i in 0..n {
                call_body(&mut body, base + i as u64, &tool, text);
                body.push(b'\n');
                let t = Instant::now();
                tx.write_all(&body)?;
                line.clear();
                if rx.read_until(b'\n', line)? == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed its stdout",
                    ));
                }
                lat.push(t.elapsed().as_nanos() as u64);
                if !check_echo(line, text.len()) {
                    errors += 1;
                }
            }
        } else {
            let (credit_tx, credit_rx) = sync_channel::<()>(window);
            for _ in 0..window {
                let _ = credit_tx.send(());
            }
            let result: io::Result<()> = std::thread::scope(|s| {
                let sent = &sent;
                let reader = s.spawn(move || -> io::Result<(Vec<u64>, u64)> {
                    let mut lat = Vec::with_capacity(n);
                    let mut errors = 0;
                    for _ in 0..n {
                        line.clear();
                        if rx.read_until(b'\n', line)? == 0 {
                            return Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                "the server closed its stdout",
                            ));
                        }
                        let now = t0.elapsed().as_nanos() as u64;
                        match member(line, "id").and_then(as_u64) {
                            Some(id) if id >= base && id < base + n as u64 => {
                                lat.push(now.saturating_sub(
                                    sent[(id - base) as usize].load(Ordering::Relaxed),
                                ));
                                if !check_echo(line, text.len()) {
                                    errors += 1;
                                }
                            }
                            _ => errors += 1,
                        }
                        let _ = credit_tx.send(());
                    }
                    Ok((lat, errors))
                });
                let mut body = Vec::with_capacity(text.len() + 200);
                for (i, slot) in sent.iter().enumerate() {
                    if credit_rx.recv().is_err() {
                        break;
                    }
                    call_body(&mut body, base + i as u64, &tool, text);
                    body.push(b'\n');
                    slot.store(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    tx.write_all(&body)?;
                }
                let (l, e) = reader
                    .join()
                    .map_err(|_| io::Error::other("reader panicked"))??;
                lat = l;
                errors = e;
                Ok(())
            });
            result?;
        }
        Ok(Run {
            lat_ns: lat,
            elapsed_ns: t0.elapsed().as_nanos() as u64,
            errors,
        })
    }

    /// Closes stdin and waits a moment for the process to leave, then kills it.
    pub fn close(self) {
        self.close_within(std::time::Duration::from_millis(500));
    }

    /// Closes stdin and waits up to `grace` for the process to leave, then
    /// kills it. Its exit status if it left by itself.
    pub fn close_within(mut self, grace: std::time::Duration) -> Option<std::process::ExitStatus> {
        drop(self.tx);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        None
    }
}

/// The first tool name ending in "echo" in a tools/list response.
pub fn echo_tool(list: &[u8]) -> Option<String> {
    let tools = member(list, "result").and_then(|r| member(r, "tools"))?;
    let mut i = 1;
    while i < tools.len() {
        let start = i + tools[i..].iter().position(|&b| b == b'{')?;
        let end = super::json::value_end(tools, start)?;
        if let Some(name) = member(&tools[start..end], "name").and_then(str_inner) {
            if name.ends_with(b"echo") {
                return String::from_utf8(name.to_vec()).ok();
            }
        }
        i = end;
    }
    None
}
