//! A minimal HTTP/1.1 client over [`Stream`]s: one request per call, heads
//! parsed and bodies de-framed by `mcpx_core::frame::http`, idle keep-alive
//! connections kept in a small pool.

use std::cell::RefCell;
use std::io;
use std::time::Duration;

use mcpx_core::frame::http::{self as h, BodyFraming, Chunk, ChunkedDecoder, Header, HeadError};
use smol::io::{AsyncReadExt, AsyncWriteExt};

use super::conn::{timeout, Connector, Stream};
use super::url::Url;

/// Header fields kept from a response head.
const MAX_HEADERS: usize = 64;
/// Read size from the socket.
const READ_CHUNK: usize = 16 * 1024;

/// Why a request failed.
#[derive(Debug)]
pub enum Error {
    /// No connection could be opened (resolution, connect, TLS handshake).
    Connect(io::Error),
    /// The exchange failed on an open connection.
    Io(io::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Connect(e) | Error::Io(e) => e.fmt(f),
        }
    }
}

/// Size and time limits of one exchange.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Longest response head.
    pub max_head: usize,
    /// How long the server may take to send the response head.
    pub head_timeout: Duration,
    /// How long a body may stay silent; `None`: forever (the GET stream).
    pub idle_timeout: Option<Duration>,
}

/// The parts of a response head the transport uses.
pub struct Response {
    pub status: u16,
    /// The media type, lowercased, without parameters (`application/json`).
    pub content_type: String,
    pub session_id: Option<Vec<u8>>,
    /// The challenge of a 401 or 403, for OAuth.
    pub www_authenticate: Option<Vec<u8>>,
    /// `Retry-After`, as sent (relayed by `http::session_dir`).
    #[cfg_attr(not(feature = "cluster"), allow(dead_code))]
    pub retry_after: Option<Vec<u8>>,
    pub body: Body,
}

/// The body of a response, de-framed.
pub struct Body {
    stream: Option<Stream>,
    rbuf: Vec<u8>,
    pos: usize,
    framing: BodyFraming,
    remaining: u64,
    chunked: ChunkedDecoder,
    done: bool,
    keep_alive: bool,
    idle: Option<Duration>,
}

impl Body {
    /// The next piece of body bytes, `None` at the end of the body.
    pub async fn next_chunk(&mut self) -> io::Result<Option<&[u8]>> {
        let range = loop {
            if self.done {
                break None;
            }
            if self.pos == self.rbuf.len() && !self.fill().await? {
                // End of stream.
                if matches!(self.framing, BodyFraming::UntilClose) {
                    self.done = true;
                    self.keep_alive = false;
                    break None;
                }
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection mid-body"));
            }
            let avail = self.rbuf.len() - self.pos;
            match self.framing {
                BodyFraming::None => {
                    self.done = true;
                }
                BodyFraming::Length(_) => {
                    let n = (avail as u64).min(self.remaining) as usize;
                    self.remaining -= n as u64;
                    self.done = self.remaining == 0;
                    let start = self.pos;
                    self.pos += n;
                    break Some(start..start + n);
                }
                BodyFraming::UntilClose => {
                    let start = self.pos;
                    self.pos = self.rbuf.len();
                    break Some(start..self.pos);
                }
                BodyFraming::Chunked => {
                    let input = &self.rbuf[self.pos..];
                    let (used, chunk) = self
                        .chunked
                        .decode(input)
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("bad chunked body: {e:?}")))?;
                    let start = self.pos;
                    self.pos += used;
                    match chunk {
                        Chunk::Data(d) => {
                            let s = start + used - d.len();
                            break Some(s..s + d.len());
                        }
                        Chunk::NeedMore => {}
                        Chunk::End => {
                            self.done = true;
                        }
                    }
                }
            }
        };
        Ok(range.map(|r| &self.rbuf[r]))
    }

    /// The whole body, failing if it exceeds `cap` bytes.
    pub async fn read_all(&mut self, cap: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(c) = self.next_chunk().await? {
            if out.len() + c.len() > cap {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("response body is over the {cap}-byte limit"),
                ));
            }
            out.extend_from_slice(c);
        }
        Ok(out)
    }

    /// Reads and drops up to `cap` bytes of what is left, so that the
    /// connection can be reused; false if the body was longer.
    pub async fn drain(&mut self, cap: usize) -> bool {
        let mut seen = 0;
        loop {
            match self.next_chunk().await {
                Ok(Some(c)) => {
                    seen += c.len();
                    if seen > cap {
                        return false;
                    }
                }
                Ok(None) => return true,
                Err(_) => return false,
            }
        }
    }

    /// Reads more bytes from the socket; false at end of stream.
    async fn fill(&mut self) -> io::Result<bool> {
        if self.pos == self.rbuf.len() {
            self.rbuf.clear();
            self.pos = 0;
        }
        let Some(stream) = self.stream.as_mut() else { return Ok(false) };
        let at = self.rbuf.len();
        self.rbuf.resize(at + READ_CHUNK, 0);
        let n = match self.idle {
            Some(d) => timeout(d, "waiting for the server's response", stream.read(&mut self.rbuf[at..])).await,
            None => stream.read(&mut self.rbuf[at..]).await,
        };
        let n = match n {
            Ok(n) => n,
            Err(e) => {
                self.rbuf.truncate(at);
                return Err(e);
            }
        };
        self.rbuf.truncate(at + n);
        Ok(n > 0)
    }

    /// The connection, if the body was read to its end and the server keeps it open.
    fn reusable(self) -> Option<Stream> {
        (self.done && self.keep_alive && self.pos == self.rbuf.len()).then_some(self.stream).flatten()
    }
}

/// One server's connections: opened by the connector, idle ones pooled.
pub struct Client {
    pub connector: Connector,
    pool: RefCell<Vec<Stream>>,
    max_idle: usize,
}

impl Client {
    pub fn new(connector: Connector, max_idle: usize) -> Client {
        Client { connector, pool: RefCell::new(Vec::new()), max_idle }
    }

    /// Opens a connection and keeps it for the next request (a reachability probe).
    pub async fn warm(&self, url: &Url) -> io::Result<()> {
        let s = self.connector.connect(url).await?;
        self.put(s);
        Ok(())
    }

    fn put(&self, s: Stream) {
        let mut pool = self.pool.borrow_mut();
        if pool.len() < self.max_idle {
            pool.push(s);
        }
    }

    /// Gives the connection of a finished response back to the pool.
    pub fn recycle(&self, body: Body) {
        if let Some(s) = body.reusable() {
            self.put(s);
        }
    }

    /// Closes every idle connection.
    pub fn clear(&self) {
        self.pool.borrow_mut().clear();
    }

    /// Sends one request and reads the response head. A pooled connection
    /// the server closed meanwhile is replaced by a new one, once.
    pub async fn request(
        &self,
        method: &str,
        url: &Url,
        headers: &[(&str, &[u8])],
        body: &[u8],
        limits: Limits,
        written: Option<&smol::channel::Sender<()>>,
    ) -> Result<Response, Error> {
        let mut fields: Vec<Header<'_>> = Vec::with_capacity(headers.len() + 1);
        let host = url.host_header();
        fields.push(Header { name: "host", value: host.as_bytes() });
        fields.extend(headers.iter().map(|(n, v)| Header { name: n, value: v }));
        let framing = if body.is_empty() && method != "POST" { BodyFraming::None } else { BodyFraming::Length(body.len() as u64) };
        let size = 64 + url.target.len() + fields.iter().map(|f| f.name.len() + f.value.len() + 4).sum::<usize>();
        let mut out = vec![0u8; size];
        let n = h::write_request_head(method, &url.target, &fields, framing, &mut out)
            .map_err(|e| Error::Io(io::Error::new(io::ErrorKind::InvalidInput, format!("cannot write the request head: {e:?}"))))?;
        out.truncate(n);
        out.extend_from_slice(body);

        let pooled = self.pool.borrow_mut().pop();
        if let Some(stream) = pooled {
            match self.exchange(stream, method, &out, limits, written).await {
                Ok(r) => return Ok(r),
                Err((e, fresh)) if !fresh => return Err(Error::Io(e)),
                Err(_) => {} // closed while idle: use a new connection
            }
        }
        let stream = self.connector.connect(url).await.map_err(Error::Connect)?;
        self.exchange(stream, method, &out, limits, written).await.map_err(|(e, _)| Error::Io(e))
    }

    /// Writes `req` and reads the head. On error, also says whether nothing
    /// at all came back (the request may be retried on another connection).
    async fn exchange(
        &self,
        mut stream: Stream,
        method: &str,
        req: &[u8],
        limits: Limits,
        written: Option<&smol::channel::Sender<()>>,
    ) -> Result<Response, (io::Error, bool)> {
        let mut rbuf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
        let read_head = async {
            if let Err(e) = async {
                stream.write_all(req).await?;
                stream.flush().await
            }
            .await
            {
                return Err((e, true));
            }
            if let Some(w) = written {
                let _ = w.try_send(());
            }
            loop {
                let at = rbuf.len();
                rbuf.resize(at + READ_CHUNK, 0);
                let n = stream.read(&mut rbuf[at..]).await;
                let n = match n {
                    Ok(n) => n,
                    Err(e) => {
                        rbuf.truncate(at);
                        return Err((e, at == 0));
                    }
                };
                rbuf.truncate(at + n);
                if n == 0 {
                    let e = io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection without a response");
                    return Err((e, at == 0));
                }
                let parsed = h::parse_response::<MAX_HEADERS>(&rbuf, limits.max_head).map(|s| s.complete().map(|(head, len)| (head.status, len)));
                match parsed {
                    Ok(Some((status, len))) if (100..200).contains(&status) => {
                        rbuf.drain(..len);
                        // Interim response: look for the final one after it.
                        if !rbuf.is_empty() {
                            if let Ok(r) = parse(&rbuf, method, limits) {
                                return Ok(r);
                            }
                        }
                    }
                    Ok(Some(_)) => return parse(&rbuf, method, limits).map_err(|e| (e, false)),
                    Ok(None) => {}
                    Err(e) => {
                        let what = match e {
                            HeadError::TooLarge => format!("response head is over the {}-byte limit", limits.max_head),
                            HeadError::TooManyHeaders => format!("response has more than {MAX_HEADERS} header fields"),
                            _ => "malformed response head (not HTTP/1.x)".to_string(),
                        };
                        return Err((io::Error::new(io::ErrorKind::InvalidData, what), false));
                    }
                }
            }
        };
        let head = {
            let d = limits.head_timeout;
            let timer = async {
                async_io::Timer::after(d).await;
                Err((
                    io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no response within {}", crate::log::line::show_duration(d)),
                    ),
                    false,
                ))
            };
            smol::future::or(read_head, timer).await
        };
        let (status, content_type, session_id, www_authenticate, retry_after, framing, keep_alive, len) = head?;
        rbuf.drain(..len);
        let remaining = match framing {
            BodyFraming::Length(n) => n,
            _ => 0,
        };
        let done = matches!(framing, BodyFraming::None | BodyFraming::Length(0));
        Ok(Response {
            status,
            content_type,
            session_id,
            www_authenticate,
            retry_after,
            body: Body {
                stream: Some(stream),
                rbuf,
                pos: 0,
                framing,
                remaining,
                chunked: ChunkedDecoder::new(),
                done,
                keep_alive: keep_alive && !matches!(framing, BodyFraming::UntilClose),
                idle: limits.idle_timeout,
            },
        })
    }
}

type Parsed = (u16, String, Option<Vec<u8>>, Option<Vec<u8>>, Option<Vec<u8>>, BodyFraming, bool, usize);

fn parse(buf: &[u8], method: &str, limits: Limits) -> io::Result<Parsed> {
    let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let (head, len) = match h::parse_response::<MAX_HEADERS>(buf, limits.max_head) {
        Ok(h::Status::Complete(x)) => x,
        Ok(h::Status::Partial) => return Err(bad("incomplete response head".into())),
        Err(e) => return Err(bad(format!("bad response head: {e:?}"))),
    };
    let framing = head.framing(method).map_err(|e| bad(format!("unusable response framing: {e:?}")))?;
    let content_type = head
        .header("content-type")
        .map(|v| {
            let v = String::from_utf8_lossy(v);
            v.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
        })
        .unwrap_or_default();
    let session_id = head.header("mcp-session-id").map(<[u8]>::to_vec);
    let www_authenticate = head.header("www-authenticate").map(<[u8]>::to_vec);
    let retry_after = head.header("retry-after").map(<[u8]>::to_vec);
    Ok((head.status, content_type, session_id, www_authenticate, retry_after, framing, head.keep_alive(), len))
}
