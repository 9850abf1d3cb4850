//! The stdio load generator: one MCP client on a child's stdin/stdout,
//! sequential or with a fixed number of requests in flight.

use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::os::fd::AsRawFd;
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
    append_call(out, id, tool, text);
}

/// [`call_body`] after what `out` holds already.
fn append_call(out: &mut Vec<u8>, id: u64, tool: &str, text: &[u8]) {
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

/// The error of a read that found the server's stdout closed.
fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed its stdout")
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
                return Err(closed());
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
                    return Err(closed());
                }
                lat.push(t.elapsed().as_nanos() as u64);
                if !check_echo(line, text.len()) {
                    errors += 1;
                }
            }
        } else {
            let mut w = Windowed::new(base, n, &tool, text);
            w.run(tx, rx, window, t0)?;
            lat = w.lat;
            errors = w.errors;
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

/// A window of calls kept full by one thread: an answer read is at once
/// replaced by the next call, written without blocking, so exactly
/// `window` calls are in flight whatever the target's speed. (A writer
/// and a reader thread handing credits to each other kept fewer in flight
/// behind a faster target, whose latencies then came from a smaller
/// window than a slower target's.) A call's latency runs from the moment
/// its slot is free to the end of its answer's line, so the time its
/// bytes wait for the pipe counts too.
struct Windowed<'a> {
    base: u64,
    n: usize,
    tool: &'a str,
    text: &'a [u8],
    /// When each call was issued, in ns since the run's start.
    sent: Vec<u64>,
    lat: Vec<u64>,
    errors: u64,
    /// Lines read so far: answers, and anything else, counted as errors.
    lines: usize,
    /// Calls issued so far.
    issued: usize,
    /// Bytes to write; `out[written..]` is still to go.
    out: Vec<u8>,
    written: usize,
}

impl<'a> Windowed<'a> {
    fn new(base: u64, n: usize, tool: &'a str, text: &'a [u8]) -> Self {
        Windowed {
            base,
            n,
            tool,
            text,
            sent: vec![0; n],
            lat: Vec::with_capacity(n),
            errors: 0,
            lines: 0,
            issued: 0,
            out: Vec::with_capacity((text.len() + 200) * 2),
            written: 0,
        }
    }

    fn issue(&mut self, now: u64) {
        if self.issued == self.n {
            return;
        }
        if self.written == self.out.len() {
            self.out.clear();
            self.written = 0;
        }
        append_call(&mut self.out, self.base + self.issued as u64, self.tool, self.text);
        self.out.push(b'\n');
        self.sent[self.issued] = now;
        self.issued += 1;
    }

    fn answered(&mut self, line: &[u8], now: u64) {
        self.lines += 1;
        match member(line, "id").and_then(as_u64) {
            Some(id) if id >= self.base && id < self.base + self.n as u64 => {
                self.lat.push(now.saturating_sub(self.sent[(id - self.base) as usize]));
                if !check_echo(line, self.text.len()) {
                    self.errors += 1;
                }
            }
            _ => self.errors += 1,
        }
    }

    /// Writes what is queued, as far as the pipe takes it now.
    fn flush(&mut self, tx: &mut ChildStdin) -> io::Result<()> {
        if self.written < self.out.len() {
            match tx.write(&self.out[self.written..]) {
                Ok(k) => self.written += k,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn run(&mut self, tx: &mut ChildStdin, rx: &mut BufReader<ChildStdout>, window: usize, t0: Instant) -> io::Result<()> {
        let (wfd, rfd) = (tx.as_raw_fd(), rx.get_ref().as_raw_fd());
        let _nb = (NonBlocking::set(wfd)?, NonBlocking::set(rfd)?);
        let mut inbuf: Vec<u8> = rx.buffer().to_vec();
        rx.consume(inbuf.len());
        let mut chunk = vec![0u8; 1 << 17];
        let stamp = || t0.elapsed().as_nanos() as u64;
        let now = stamp();
        for _ in 0..window.min(self.n) {
            self.issue(now);
        }
        while self.lines < self.n {
            let pending = self.written < self.out.len();
            let mut fds = [
                libc::pollfd { fd: rfd, events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: wfd, events: if pending { libc::POLLOUT } else { 0 }, revents: 0 },
            ];
            // SAFETY: `fds` is a valid array of two pollfd for the call's length.
            if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if fds[1].revents != 0 {
                self.flush(tx)?;
            }
            if fds[0].revents == 0 {
                continue;
            }
            match io::Read::read(rx.get_mut(), &mut chunk) {
                Ok(0) => return Err(closed()),
                Ok(k) => inbuf.extend_from_slice(&chunk[..k]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
            let now = stamp();
            let mut start = 0;
            while self.lines < self.n {
                let Some(nl) = inbuf[start..].iter().position(|&b| b == b'\n') else { break };
                self.answered(&inbuf[start..start + nl], now);
                self.issue(now);
                start += nl + 1;
            }
            inbuf.drain(..start);
            self.flush(tx)?;
        }
        Ok(())
    }
}

/// O_NONBLOCK on a descriptor while this lives.
struct NonBlocking(i32, i32);

impl NonBlocking {
    fn set(fd: i32) -> io::Result<NonBlocking> {
        // SAFETY: fcntl(2) on a descriptor this process owns, plain integers.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        // SAFETY: as above.
        if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(NonBlocking(fd, flags))
    }
}

impl Drop for NonBlocking {
    fn drop(&mut self) {
        // SAFETY: restores the flags read in `set` on the same descriptor.
        unsafe { libc::fcntl(self.0, libc::F_SETFL, self.1) };
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
