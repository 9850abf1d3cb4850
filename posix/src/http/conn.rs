//! One TCP connection: reading request heads and bodies under the limits,
//! writing responses. The `listener` handles a connection's requests one
//! after the other, so pipelined requests are answered in order; bytes
//! after a body stay in the buffer for the next head.

use std::cell::RefCell;
use std::io::{self, IoSlice};
use std::net::{Shutdown, TcpStream};
use std::rc::Rc;
use std::time::{Duration, Instant};

use async_io::Timer;
use mcpx_core::frame::http::{
    parse_request, write_chunk_header, write_response_head, BodyFraming, Chunk, ChunkedDecoder, ChunkedError, Header, Status,
    CHUNK_END,
};
use mcpx_core::error::ErrorCode;
use smol::future;
use smol::io::AsyncWriteExt;

use super::decide::Refusal;
use crate::process::reactor::{self, Source};
use super::limits::{Limits, MAX_HEADERS};
use super::mailbox::{self, Item};
use super::refusals::Refusals;
use super::request::Request;
use crate::hub::Level;

/// Why a body could not be read.
enum BodyError {
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

/// Most header fields a response of [`Conn::respond`] has.
const MAX_RESPONSE_FIELDS: usize = 16;

/// Most pieces one write takes at once (a chunk header, an event, its end).
const MAX_PARTS: usize = 4;

/// Bytes asked of the socket per read of a head (or of the rest of a
/// chunked body): the buffer is zeroed that far before each read.
const READ_BYTES: usize = 4 << 10;

/// Bodies up to this size are read into a buffer the connection keeps for
/// its next request; larger ones get their own, freed with the message.
const KEPT_BODY: usize = 16 << 10;

/// What the connections of a listener share: its limits, its clock, its
/// log and its recent refusals.
pub(crate) struct Common {
    pub limits: Limits,
    started: Instant,
    log: Rc<dyn Fn(Level, String)>,
    /// The last requests refused, for `GET /status`.
    pub refusals: RefCell<Refusals>,
}

impl Common {
    pub fn new(limits: Limits, log: Rc<dyn Fn(Level, String)>) -> Common {
        Common { limits, started: Instant::now(), log, refusals: RefCell::default() }
    }

    /// Milliseconds since the server started (for session idleness and
    /// refusals only; the hub gets the runtime's clock through `feed`).
    pub fn now(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    pub fn log(&self, level: Level, msg: String) {
        (self.log)(level, msg)
    }

    /// Keeps a refusal of the listener's own among the recent ones.
    pub fn refused(&self, status: u16, msg: &str) {
        let now = self.now();
        self.refusals.borrow_mut().record(now, status, msg);
    }
}

pub(crate) struct Conn {
    pub stream: Source<TcpStream>,
    pub buf: Vec<u8>,
    pub common: Rc<Common>,
    /// The address of the other end, when the socket tells.
    pub peer: Option<std::net::IpAddr>,
    /// The request being answered allows the connection to persist.
    pub persist: bool,
    /// The request being answered has a body not read yet: answered so,
    /// the connection closes after the answer (`decide::keep_connection`),
    /// and the answer says `Connection: close` (RFC 9112 §9.6), so the
    /// client does not send its next request on it.
    pub body_pending: bool,
    /// Bytes read since this connection last yielded the thread.
    pub unyielded: usize,
    /// Every deadline of the connection.
    pub alarm: Alarm,
    /// The last request's head buffers, for the next request.
    pub spare_head: Option<Request>,
    /// A small body's buffer, for the next request's body.
    spare_body: Vec<u8>,
    /// The buffer response heads are written into.
    out: Vec<u8>,
    /// The last exchange's queue, for the next (see `mailbox`).
    pub spare_queue: Option<mailbox::Receiver>,
}

/// The one timer of a connection, for all its deadlines (head, idle, body,
/// write, keep-alive): set again only when a deadline comes before the one
/// it is set for, or when it fires before the deadline awaited. A timer
/// made per read or write would cost the reactor an insertion, a wake-up
/// and a removal each time, i.e. several per request.
pub(crate) struct Alarm {
    timer: Timer,
    /// When the timer fires; `None` once it has.
    at: Option<Instant>,
}

impl Alarm {
    fn new() -> Alarm {
        Alarm { timer: Timer::never(), at: None }
    }

    /// Completes at `deadline` (or after it).
    pub async fn until(&mut self, deadline: Instant) {
        loop {
            if self.at.is_none_or(|at| deadline < at) {
                self.timer.set_at(deadline);
                self.at = Some(deadline);
            }
            (&mut self.timer).await;
            self.at = None;
            if Instant::now() >= deadline {
                return;
            }
        }
    }

    /// `Err(TimedOut)` at `deadline`.
    async fn expire<T>(&mut self, deadline: Instant, what: &'static str) -> io::Result<T> {
        self.until(deadline).await;
        Err(io::Error::new(io::ErrorKind::TimedOut, what))
    }
}

/// What woke a stream's task.
pub(crate) enum Wake {
    /// A message (or `None`: the queue closed — session ended or exchange done).
    Item(Option<Item>),
    /// The peer closed the connection.
    PeerGone,
    /// Time for a keep-alive.
    Tick,
}

fn deadline(ms: u64) -> Instant {
    Instant::now() + Duration::from_millis(ms)
}

/// Reads up to `want` more bytes into `buf` (grown for them, zeroed that
/// far), before `until`. `Ok(0)`: the peer closed. Every [`SLICE_BYTES`]
/// it first lets the reactor take a turn: a busy socket then shares the
/// thread with the other connections, the stdio client and the hub.
async fn read_into(
    stream: &Source<TcpStream>,
    alarm: &mut Alarm,
    unyielded: &mut usize,
    buf: &mut Vec<u8>,
    want: usize,
    until: Instant,
) -> io::Result<usize> {
    if *unyielded >= SLICE_BYTES {
        *unyielded = 0;
        reactor::turn().await;
    }
    // Not cancelled midway by its callers (only by the deadline, handled
    // below), so the room made here is always cut back to what was read.
    let start = buf.len();
    buf.resize(start + want, 0);
    let room = &mut buf[start..];
    let read = stream.read(room);
    let r = future::or(read, alarm.expire(until, "timed out")).await;
    let n = *r.as_ref().unwrap_or(&0);
    buf.truncate(start + n);
    *unyielded += n;
    r
}

/// Writes all of `parts`, in order, before `until`: in one vectored write
/// when the socket takes them (a body is never copied into a response).
async fn write_parts(stream: &Source<TcpStream>, alarm: &mut Alarm, parts: &[&[u8]], until: Instant) -> io::Result<()> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut done = 0;
    while done < total {
        let mut slices = [IoSlice::new(&[]); MAX_PARTS];
        let mut k = 0;
        let mut skip = done;
        for p in parts {
            if skip >= p.len() {
                skip -= p.len();
                continue;
            }
            if let Some(slot) = slices.get_mut(k) {
                *slot = IoSlice::new(&p[skip..]);
                k += 1;
            }
            skip = 0;
        }
        let mut s = stream;
        let w = s.write_vectored(&slices[..k]);
        let n = future::or(w, alarm.expire(until, "the peer does not read")).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        done += n;
    }
    Ok(())
}

/// Waits for bytes from the peer while a response is pending; false when
/// the peer is gone. Pipelined bytes are kept (up to one head).
async fn peer_alive(stream: &Source<TcpStream>, buf: &mut Vec<u8>, cap: usize) -> bool {
    // Pipelined bytes are buffered up to one head; past that the peer is
    // left to TCP flow control until the answer is written.
    if buf.len() >= cap {
        return future::pending().await;
    }
    // A stack buffer, not `buf`'s room: this read is dropped whenever the
    // answer comes first, and must then leave `buf` as it was.
    let mut tmp = [0u8; READ_BYTES];
    match stream.read(&mut tmp).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&tmp[..n]);
            true
        }
    }
}

impl Conn {
    pub fn new(stream: Source<TcpStream>, common: Rc<Common>) -> Conn {
        let peer = stream.get_ref().peer_addr().ok().map(|a| a.ip());
        Conn {
            stream,
            buf: Vec::new(),
            common,
            peer,
            persist: true,
            body_pending: false,
            unyielded: 0,
            alarm: Alarm::new(),
            spare_head: None,
            spare_body: Vec::new(),
            out: Vec::new(),
            spare_queue: None,
        }
    }

    /// Reads more bytes into `buf` before `until`. `Ok(0)`: the peer closed.
    async fn fill(&mut self, until: Instant) -> io::Result<usize> {
        read_into(&self.stream, &mut self.alarm, &mut self.unyielded, &mut self.buf, READ_BYTES, until).await
    }

    /// The next request head. `Ok(None)`: the peer closed or was too slow
    /// (the head must be complete `head_timeout` after its first byte, or
    /// after accept for the first request; a kept-alive connection may idle
    /// `idle_timeout` between requests). `Err`: a status to answer, then close.
    pub async fn read_head(&mut self, first: bool) -> Result<Option<Request>, (u16, String)> {
        let lim = &self.common.limits;
        let (head_timeout, idle_timeout, max_head) = (lim.head_timeout_ms, lim.idle_timeout_ms, lim.max_head);
        let mut head_deadline = first.then(|| deadline(head_timeout));
        let idle_deadline = deadline(idle_timeout);
        loop {
            if !self.buf.is_empty() {
                let parsed = match parse_request::<MAX_HEADERS>(&self.buf, max_head) {
                    Ok(Status::Complete((head, len))) => {
                        let framing = head.framing();
                        let req = Request::new(&self.buf, &head, framing.unwrap_or(BodyFraming::None), self.spare_head.take());
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
                                "Request header fields too large: at most {MAX_HEADERS} fields and {max_head} bytes"
                            ),
                            _ => "Bad request: malformed HTTP request head".to_string(),
                        };
                        return Err((e.status(), what));
                    }
                }
                if head_deadline.is_none() {
                    head_deadline = Some(deadline(head_timeout));
                }
            }
            match self.fill(head_deadline.unwrap_or(idle_deadline)).await {
                Ok(0) | Err(_) => return Ok(None),
                Ok(_) => {}
            }
        }
    }

    /// Reads the request's body; answers 413 (over the cap) or 400 (malformed
    /// chunked coding) itself before the close (`Err` then carries keep-alive).
    pub async fn body(&mut self, req: &mut Request) -> Result<Vec<u8>, bool> {
        match self.read_body(req).await {
            Ok(b) => Ok(b),
            Err(BodyError::TooLarge(n)) => {
                let max = self.common.limits.max_body;
                let msg = format!("Payload too large: the body is {n} bytes or more, over mcpx's limit of {max} bytes");
                Err(self.error(413, None, ErrorCode::InvalidRequest, &msg, None, false).await)
            }
            // RFC 9112 §7.1: a body that is not valid chunked coding is a bad
            // request; answer before closing, so the client sees why.
            Err(BodyError::Malformed(e)) => {
                let msg = format!("Bad request: malformed chunked body ({e:?})");
                Err(self.error(400, None, ErrorCode::InvalidRequest, &msg, None, false).await)
            }
            Err(BodyError::Broken) => Err(false),
        }
    }

    /// Reads the request's body under the size limit (decided from
    /// Content-Length before reading; while reading for chunked bodies).
    /// A Content-Length body is read into one buffer of its size: what came
    /// with the head is moved there, the rest is read into it directly.
    async fn read_body(&mut self, req: &mut Request) -> Result<Vec<u8>, BodyError> {
        let max = self.common.limits.max_body;
        let until = deadline(self.common.limits.body_timeout_ms);
        req.body_read = true;
        self.body_pending = false;
        if let Some(body) = req.take_preread() {
            return Ok(body);
        }
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
                let mut body = if n <= KEPT_BODY { std::mem::take(&mut self.spare_body) } else { Vec::new() };
                body.clear();
                // The body's own size, not the doubling growth's (up to 2x):
                // it is handed on whole and freed with the message.
                body.reserve_exact(n);
                let have = n.min(self.buf.len());
                body.extend_from_slice(&self.buf[..have]);
                self.buf.drain(..have);
                while body.len() < n {
                    let want = n - body.len();
                    match read_into(&self.stream, &mut self.alarm, &mut self.unyielded, &mut body, want, until).await {
                        Ok(0) | Err(_) => return Err(BodyError::Broken),
                        Ok(_) => {}
                    }
                }
                Ok(body)
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

    /// Takes back the body of a request once answered, to read the next
    /// small body into.
    pub fn recycle_body(&mut self, body: Vec<u8>) {
        if body.capacity() <= KEPT_BODY && body.capacity() > self.spare_body.capacity() {
            self.spare_body = body;
        }
    }

    /// A queue of `cap` messages for an exchange or stream: the last one's
    /// again when nothing of its use is left.
    pub fn queue(&mut self, cap: usize) -> (mailbox::Sender, mailbox::Receiver) {
        self.spare_queue.take().and_then(|q| q.reuse(cap)).unwrap_or_else(|| mailbox::queue(cap))
    }

    /// Writes all of `bytes` within the write timeout.
    pub async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        let until = deadline(self.common.limits.write_timeout_ms);
        write_parts(&self.stream, &mut self.alarm, &[bytes], until).await
    }

    /// Writes a block that `build` writes into the connection's buffer of
    /// `need` bytes (returning its length, `None` when it cannot), framed as
    /// a chunk when `chunked`: one vectored write, no copy of the block.
    pub async fn write_block(&mut self, chunked: bool, need: usize, build: impl FnOnce(&mut [u8]) -> Option<usize>) -> bool {
        let mut out = std::mem::take(&mut self.out);
        out.resize(need, 0);
        let until = deadline(self.common.limits.write_timeout_ms);
        let mut h = [0u8; 24];
        let ok = match build(&mut out) {
            Some(n) if !chunked => write_parts(&self.stream, &mut self.alarm, &[&out[..n]], until).await.is_ok(),
            Some(n) => match write_chunk_header(n, &mut h) {
                Ok(k) => write_parts(&self.stream, &mut self.alarm, &[&h[..k], &out[..n], CHUNK_END], until).await.is_ok(),
                Err(_) => false,
            },
            None => false,
        };
        self.keep_out(out);
        ok
    }

    /// Keeps the buffer for the next head or event, unless a large message grew it.
    fn keep_out(&mut self, out: Vec<u8>) {
        if out.capacity() <= KEPT_BODY {
            self.out = out;
        }
    }

    /// Writes a whole response with a Content-Length body: the head and the
    /// body in one vectored write.
    pub async fn respond(
        &mut self,
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
        keep: bool,
    ) -> bool {
        let keep = keep && self.persist && !self.body_pending;
        let mut hs = [Header { name: "", value: b"" }; MAX_RESPONSE_FIELDS];
        if headers.len() >= MAX_RESPONSE_FIELDS {
            return false;
        }
        for (h, (n, v)) in hs.iter_mut().zip(headers) {
            *h = Header { name: n, value: v.as_bytes() };
        }
        let mut k = headers.len();
        if !keep {
            hs[k] = Header { name: "Connection", value: b"close" };
            k += 1;
        }
        let cap = 256 + headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum::<usize>();
        let mut out = std::mem::take(&mut self.out);
        out.resize(cap, 0);
        let written = match write_response_head(status, &hs[..k], BodyFraming::Length(body.len() as u64), &mut out) {
            Ok(n) => {
                let until = deadline(self.common.limits.write_timeout_ms);
                write_parts(&self.stream, &mut self.alarm, &[&out[..n], body], until).await.is_ok()
            }
            Err(_) => false,
        };
        self.keep_out(out);
        written && keep
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

    /// [`Conn::error`] with extra response headers (`Retry-After`).
    #[allow(clippy::too_many_arguments)]
    async fn error_with(
        &mut self,
        status: u16,
        extra: &[(&str, &str)],
        id: Option<&[u8]>,
        code: ErrorCode,
        msg: &str,
        data: Option<&[u8]>,
        keep: bool,
    ) -> bool {
        self.common.refused(status, msg);
        let body = crate::bytes::written::error(id, code, msg, data);
        let mut hs: Vec<(&str, &str)> = vec![("Content-Type", "application/json")];
        hs.extend_from_slice(extra);
        if status == 401 {
            hs.push(("WWW-Authenticate", "Bearer realm=\"mcpx\""));
        }
        self.respond(status, &hs, &body, keep).await
    }

    /// Answers a request the listener refused (`decide`), keeping the
    /// connection.
    pub async fn refuse(&mut self, r: &Refusal<'_>) -> bool {
        let retry = r.retry_after_s.map(|s| s.to_string());
        let extra = retry.as_deref().map(|s| ("Retry-After", s));
        let data = r.data.as_deref().map(str::as_bytes);
        self.error_with(r.status, extra.as_slice(), r.id, r.code, &r.message, data, true).await
    }

    /// An Invalid Request error (-32600) with no id or data, keeping the
    /// connection: how the transport refuses a request it cannot take.
    pub async fn reject(&mut self, status: u16, msg: &str) -> bool {
        self.error(status, None, ErrorCode::InvalidRequest, msg, None, true).await
    }

    /// A 405 naming the methods the target allows.
    pub async fn method_not_allowed(&mut self, allow: &str) -> bool {
        let body = crate::bytes::written::error(None, ErrorCode::InvalidRequest, "Method not allowed", None);
        self.respond(405, &[("Allow", allow), ("Content-Type", "application/json")], &body, true).await
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

    /// Waits for the next message of `rx`, the peer's close, or `ping_at`
    /// (the stream's keep-alive time), whichever comes first.
    pub async fn wait(&mut self, rx: &mailbox::Receiver, ping_at: Instant) -> Wake {
        let cap = self.common.limits.max_head;
        let (stream, buf, alarm) = (&self.stream, &mut self.buf, &mut self.alarm);
        let item = async { Wake::Item(rx.recv().await) };
        let peer = async {
            loop {
                if !peer_alive(stream, buf, cap).await {
                    return Wake::PeerGone;
                }
            }
        };
        let tick = async {
            alarm.until(ping_at).await;
            Wake::Tick
        };
        future::or(item, future::or(peer, tick)).await
    }
}
