//! One TCP connection: reading request heads and bodies under the limits,
//! writing responses. Requests on a connection are handled one after the
//! other, so pipelined requests are answered in order; bytes after a body
//! stay in the buffer for the next head.

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::rc::Rc;
use std::time::{Duration, Instant};

use async_io::{Async, Timer};
use mcpx_core::frame::http::{
    parse_request, write_response_head, BodyFraming, Chunk, ChunkedDecoder, ChunkedError, Header, Status,
    Version,
};
use mcpx_core::error::ErrorCode;
use smol::future;
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::LocalExecutor;

use super::limits::MAX_HEADERS;
use super::routes;
use super::session::{self, Shared};
use crate::hub::Level;

/// A request head, owned, plus what is known about its body.
pub(crate) struct Request {
    pub method: String,
    /// Path without the query.
    pub path: String,
    pub query: String,
    pub version: Version,
    pub keep_alive: bool,
    headers: Vec<(String, Vec<u8>)>,
    pub framing: BodyFraming,
    pub body_read: bool,
}

impl Request {
    /// The first field named `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }

    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.header(name).and_then(|v| std::str::from_utf8(v).ok())
    }

    /// Does the (comma-separated) header list contain a media type starting with `ty`?
    pub fn accepts(&self, ty: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n == "accept")
            .any(|(_, v)| {
                String::from_utf8_lossy(v).split(',').any(|e| {
                    let e = e
                        .trim()
                        .split(';')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_ascii_lowercase();
                    e == ty
                        || e == "*/*"
                        || (e.ends_with("/*") && ty.starts_with(&e[..e.len() - 1]))
                })
            })
    }

    /// How many field lines named `name` (lowercase) the head has.
    pub fn header_count(&self, name: &str) -> usize {
        self.headers.iter().filter(|(n, _)| n == name).count()
    }

    pub fn headers_present(&self, name: &str) -> bool {
        self.header(name).is_some()
    }

    pub fn has_body(&self) -> bool {
        !matches!(self.framing, BodyFraming::None | BodyFraming::Length(0))
    }
}

/// Why a body could not be read.
pub(crate) enum BodyError {
    TooLarge(u64),
    /// A chunked body whose framing is not HTTP: 400, then close.
    Malformed(ChunkedError),
    /// A timeout or the peer gone: close without answering.
    Broken,
}

/// Bytes one connection may read before it lets the other tasks of the
/// single thread run (issue 11 item 4: a socket that always has data never
/// makes a read wait, so without this one upload holds the thread).
const SLICE_BYTES: usize = 64 << 10;

pub(crate) struct Conn {
    pub stream: Async<TcpStream>,
    pub buf: Vec<u8>,
    pub shared: Rc<Shared>,
    /// The request being answered allows the connection to persist.
    pub persist: bool,
    /// Bytes read since this connection last yielded the thread.
    pub unyielded: usize,
}

/// Decrements the connection count when a connection task ends.
struct ConnGuard(Rc<Shared>);

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.0.state.borrow_mut().conns -= 1;
    }
}

/// Counts a connection as busy while it handles a request (a shutdown
/// waits for none to be).
struct BusyGuard(Rc<Shared>);

impl BusyGuard {
    fn enter(shared: &Rc<Shared>) -> BusyGuard {
        shared.state.borrow_mut().busy += 1;
        BusyGuard(shared.clone())
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.state.borrow_mut().busy -= 1;
    }
}

/// The accept loop, the connections and the service task (session expiry,
/// refusals fed back to the hub), on one local executor.
pub(crate) async fn serve(shared: Rc<Shared>, listener: Async<TcpListener>) {
    let ex = Rc::new(LocalExecutor::new());
    let ex2 = ex.clone();
    ex.run(async move {
        ex2.spawn(service(shared.clone())).detach();
        loop {
            let stream = match listener.accept().await {
                Ok((s, _)) => s,
                Err(e) => {
                    shared.log(Level::Warn, format!("http: accept failed: {e}"));
                    Timer::after(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = stream.get_ref().set_nodelay(true);
            let over = {
                let mut st = shared.state.borrow_mut();
                st.conns += 1;
                st.conns > shared.cfg.limits.max_connections
            };
            let guard = ConnGuard(shared.clone());
            let conn = Conn {
                stream,
                buf: Vec::new(),
                shared: shared.clone(),
                persist: true,
                unyielded: 0,
            };
            if over {
                ex2.spawn(async move {
                    let _guard = guard;
                    let mut conn = conn;
                    let max = conn.shared.cfg.limits.max_connections;
                    let msg =
                        format!("mcpx has {max} HTTP connections open (its limit); retry later");
                    // Warn at most every 10 s; a flood would drown the log.
                    let now = conn.shared.now();
                    let warn = {
                        let mut st = conn.shared.state.borrow_mut();
                        let due = st.last_cap_warn.is_none_or(|t| now >= t + 10_000);
                        if due {
                            st.last_cap_warn = Some(now);
                        }
                        due
                    };
                    let level = if warn { Level::Warn } else { Level::Debug };
                    conn.shared.log(level, format!("http: {msg}"));
                    let _ = conn.error(503, None, ErrorCode::InternalError, &msg, None, false).await;
                    // Under a flood, close at once rather than hold sockets open.
                    if conn.shared.state.borrow().conns <= 2 * max {
                        conn.linger_close().await;
                    }
                })
                .detach();
            } else {
                ex2.spawn(async move {
                    let _guard = guard;
                    connection(conn).await;
                })
                .detach();
            }
        }
    })
    .await
}

/// Expires idle sessions and feeds refused relays back to the hub.
async fn service(shared: Rc<Shared>) {
    let period = Duration::from_millis((shared.cfg.limits.session_idle_ms / 2).clamp(10, 1000));
    loop {
        let _ = future::or(
            async { shared.wake_rx.recv().await.map(|_| ()).unwrap_or(()) },
            async {
                Timer::after(period).await;
            },
        )
        .await;
        loop {
            let next = shared.state.borrow_mut().hub_inbox.pop_front();
            let Some((c, msg)) = next else { break };
            shared.feed(c, &[&msg]);
        }
        session::expire(&shared);
    }
}

async fn connection(mut conn: Conn) {
    let mut first = true;
    loop {
        let req = match conn.read_head(first).await {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err((status, msg)) => {
                let _ = conn.error(status, None, ErrorCode::InvalidRequest, &msg, None, false).await;
                conn.linger_close().await;
                return;
            }
        };
        first = false;
        conn.persist = req.keep_alive;
        let busy = BusyGuard::enter(&conn.shared);
        let keep = routes::handle(&mut conn, req).await;
        drop(busy);
        if !keep {
            conn.linger_close().await;
            return;
        }
    }
}

fn deadline(ms: u64) -> Instant {
    Instant::now() + Duration::from_millis(ms)
}

impl Conn {
    /// Reads more bytes into `buf` before `until`. `Ok(0)`: the peer closed.
    /// Every [`SLICE_BYTES`] it first waits for the reactor to report the
    /// socket readable anew: a busy socket then shares the thread with the
    /// other connections, the stdio client and the hub (a plain yield would
    /// not do: the executors run ready tasks before polling for I/O again).
    async fn fill(&mut self, until: Instant) -> io::Result<usize> {
        let pause = self.unyielded >= SLICE_BYTES;
        if pause {
            self.unyielded = 0;
        }
        let mut tmp = [0u8; 16 << 10];
        let read = async {
            if pause {
                self.stream.readable().await?;
            }
            self.stream.read(&mut tmp).await
        };
        let timeout = async {
            Timer::at(until).await;
            Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"))
        };
        let n = future::or(read, timeout).await?;
        self.buf.extend_from_slice(&tmp[..n]);
        self.unyielded += n;
        Ok(n)
    }

    /// The next request head. `Ok(None)`: the peer closed or was too slow
    /// (the head must be complete `head_timeout` after its first byte, or
    /// after accept for the first request; a kept-alive connection may idle
    /// `idle_timeout` between requests). `Err`: a status to answer, then close.
    async fn read_head(&mut self, first: bool) -> Result<Option<Request>, (u16, String)> {
        let lim = self.shared.cfg.limits.clone();
        let mut head_deadline = first.then(|| deadline(lim.head_timeout_ms));
        let idle_deadline = deadline(lim.idle_timeout_ms);
        loop {
            if !self.buf.is_empty() {
                let parsed = match parse_request::<MAX_HEADERS>(&self.buf, lim.max_head) {
                    Ok(Status::Complete((head, len))) => {
                        let framing = head.framing();
                        let req = Request {
                            method: head.method.to_string(),
                            path: head.path.split('?').next().unwrap_or("").to_string(),
                            query: head
                                .path
                                .split_once('?')
                                .map(|(_, q)| q.to_string())
                                .unwrap_or_default(),
                            version: head.version,
                            keep_alive: head.keep_alive(),
                            headers: head
                                .headers
                                .iter()
                                .map(|h| (h.name.to_ascii_lowercase(), h.value.to_vec()))
                                .collect(),
                            framing: framing.unwrap_or(BodyFraming::None),
                            body_read: false,
                        };
                        Ok(Some((req, len, framing)))
                    }
                    Ok(Status::Partial) => Ok(None),
                    Err(e) => Err(e),
                };
                match parsed {
                    Ok(Some((req, len, framing))) => {
                        self.buf.drain(..len);
                        if let Err(e) = framing {
                            return Err((
                                e.status(),
                                format!("Bad request: unusable body framing ({e:?})"),
                            ));
                        }
                        return Ok(Some(req));
                    }
                    Ok(None) => {}
                    Err(e) => {
                        let what = match e.status() {
                            431 => format!(
                                "Request header fields too large: at most {MAX_HEADERS} fields and {} bytes",
                                lim.max_head
                            ),
                            _ => "Bad request: malformed HTTP request head".to_string(),
                        };
                        return Err((e.status(), what));
                    }
                }
                if head_deadline.is_none() {
                    head_deadline = Some(deadline(lim.head_timeout_ms));
                }
            }
            match self.fill(head_deadline.unwrap_or(idle_deadline)).await {
                Ok(0) | Err(_) => return Ok(None),
                Ok(_) => {}
            }
        }
    }

    /// Reads the request's body under the size limit (decided from
    /// Content-Length before reading; while reading for chunked bodies).
    pub async fn read_body(&mut self, req: &mut Request) -> Result<Vec<u8>, BodyError> {
        let max = self.shared.cfg.limits.max_body;
        let until = deadline(self.shared.cfg.limits.body_timeout_ms);
        req.body_read = true;
        if let BodyFraming::Length(n) = req.framing {
            if n > max as u64 {
                return Err(BodyError::TooLarge(n));
            }
        }
        if req.has_body()
            && req
                .header("expect")
                .is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"))
        {
            self.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                .await
                .map_err(|_| BodyError::Broken)?;
        }
        match req.framing {
            BodyFraming::None | BodyFraming::UntilClose => Ok(Vec::new()),
            BodyFraming::Length(n) => {
                let n = n as usize;
                // The body's own size, not the doubling growth's (up to 2x):
                // it is handed on whole and freed with the message.
                self.buf.reserve_exact(n.saturating_sub(self.buf.len()));
                while self.buf.len() < n {
                    match self.fill(until).await {
                        Ok(0) | Err(_) => return Err(BodyError::Broken),
                        Ok(_) => {}
                    }
                }
                let rest = self.buf.split_off(n);
                Ok(std::mem::replace(&mut self.buf, rest))
            }
            BodyFraming::Chunked => {
                let mut dec = ChunkedDecoder::new();
                let mut body = Vec::new();
                // Decoded up to `at`; the buffer is drained once per read, so
                // many tiny chunks cost linear time, not quadratic.
                let mut at = 0;
                loop {
                    let (used, chunk) = dec.decode(&self.buf[at..]).map_err(BodyError::Malformed)?;
                    at += used;
                    match chunk {
                        Chunk::Data(d) => {
                            if body.len() + d.len() > max {
                                return Err(BodyError::TooLarge((body.len() + d.len()) as u64));
                            }
                            body.extend_from_slice(d);
                        }
                        Chunk::End => {
                            self.buf.drain(..at);
                            return Ok(body);
                        }
                        Chunk::NeedMore => {
                            self.buf.drain(..at);
                            at = 0;
                            match self.fill(until).await {
                                Ok(0) | Err(_) => return Err(BodyError::Broken),
                                Ok(_) => {}
                            }
                        }
                    }
                }
            }
        }
    }

    /// Writes all of `bytes` within the write timeout.
    pub async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        let until = deadline(self.shared.cfg.limits.write_timeout_ms);
        let w = async { self.stream.write_all(bytes).await };
        let t = async {
            Timer::at(until).await;
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the peer does not read",
            ))
        };
        future::or(w, t).await
    }

    /// Writes a whole response with a Content-Length body.
    pub async fn respond(
        &mut self,
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
        keep: bool,
    ) -> bool {
        let keep = keep && self.persist;
        let mut hs: Vec<Header<'_>> = headers
            .iter()
            .map(|(n, v)| Header {
                name: n,
                value: v.as_bytes(),
            })
            .collect();
        if !keep {
            hs.push(Header {
                name: "Connection",
                value: b"close",
            });
        }
        let cap = 256
            + headers
                .iter()
                .map(|(n, v)| n.len() + v.len() + 4)
                .sum::<usize>();
        let mut out = vec![0u8; cap + body.len()];
        let Ok(n) = write_response_head(
            status,
            &hs,
            BodyFraming::Length(body.len() as u64),
            &mut out,
        ) else {
            return false;
        };
        out.truncate(n);
        out.extend_from_slice(body);
        self.write(&out).await.is_ok() && keep
    }

    /// A JSON-RPC error body with an HTTP status. `id` is the raw id to echo
    /// (omitted when `None`); `data` raw JSON. Kept among the listener's
    /// recent refusals (`GET /status`).
    pub async fn error(
        &mut self,
        status: u16,
        id: Option<&[u8]>,
        code: ErrorCode,
        msg: &str,
        data: Option<&[u8]>,
        keep: bool,
    ) -> bool {
        self.error_with(status, &[], id, code, msg, data, keep).await
    }

    /// [`Conn::error`] with extra response headers (e.g. `Retry-After`).
    #[allow(clippy::too_many_arguments)]
    pub async fn error_with(
        &mut self,
        status: u16,
        extra: &[(&str, &str)],
        id: Option<&[u8]>,
        code: ErrorCode,
        msg: &str,
        data: Option<&[u8]>,
        keep: bool,
    ) -> bool {
        let now = self.shared.now();
        self.shared.state.borrow_mut().refusals.record(now, status, msg);
        let body = crate::written::error(id, code, msg, data);
        let mut hs: Vec<(&str, &str)> = vec![("Content-Type", "application/json")];
        hs.extend_from_slice(extra);
        if status == 401 {
            hs.push(("WWW-Authenticate", "Bearer realm=\"mcpx\""));
        }
        self.respond(status, &hs, &body, keep).await
    }

    /// An Invalid Request error (-32600) with no id or data, keeping the
    /// connection: how the transport refuses a request it cannot take.
    pub async fn reject(&mut self, status: u16, msg: &str) -> bool {
        self.error(status, None, ErrorCode::InvalidRequest, msg, None, true).await
    }

    /// Closes gracefully: stops writing, then reads (and discards) what the
    /// peer still sends for a moment, so it sees the response rather than a reset.
    pub async fn linger_close(&mut self) {
        let _ = self.stream.flush().await;
        let _ = self.stream.get_ref().shutdown(Shutdown::Write);
        let until = deadline(1000);
        let mut total = 0usize;
        while total < (4 << 20) {
            self.buf.clear();
            match self.fill(until).await {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    }

    /// Waits for bytes from the peer while a response is pending; false when
    /// the peer is gone. Pipelined bytes are kept (up to one head).
    pub async fn peer_alive(&mut self) -> bool {
        // Pipelined bytes are buffered up to one head; past that the peer is
        // left to TCP flow control until the answer is written.
        let cap = self.shared.cfg.limits.max_head;
        if self.buf.len() >= cap {
            return future::pending().await;
        }
        let mut tmp = [0u8; 16 << 10];
        match self.stream.read(&mut tmp).await {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                true
            }
        }
    }
}

