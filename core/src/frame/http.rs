//! HTTP/1.1 for the Streamable HTTP transport: message heads (parsed by
//! `httparse`), the body framing a head implies, the chunked transfer coding,
//! and head writers.
//!
//! Parsing is bounded twice: at most `H` header fields (a const generic) and at
//! most `max_head` bytes, both answered with 431 when exceeded. Framing follows
//! RFC 9112 §6, rejecting what could desynchronise a connection (request
//! smuggling): Content-Length together with Transfer-Encoding, differing
//! Content-Length values, Transfer-Encoding in HTTP/1.0, and any transfer
//! coding other than a single `chunked`.
use heapless::Vec;

use super::out::Out;
use super::{parse_decimal, WriteError};

/// HTTP version of a parsed head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
}

/// One header field: name as sent, value bytes without surrounding whitespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'b> {
    pub name: &'b str,
    pub value: &'b [u8],
}

/// The header fields of a head, at most `H`, in order; names compare
/// case-insensitively.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headers<'b, const H: usize> {
    list: Vec<Header<'b>, H>,
}

impl<'b, const H: usize> Headers<'b, H> {
    fn from_raw(raw: &[httparse::Header<'b>]) -> Self {
        let mut list = Vec::new();
        for h in raw {
            // httparse stops at `H` fields, so every push fits.
            let _ = list.push(Header { name: h.name, value: h.value });
        }
        Headers { list }
    }

    /// The first field named `name` (any case).
    pub fn get(&self, name: &str) -> Option<&'b [u8]> {
        self.get_all(name).next()
    }

    /// Every field named `name` (any case), in order.
    pub fn get_all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'b [u8]> + 's {
        self.list.iter().filter(move |h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value)
    }

    /// The non-empty, whitespace-trimmed elements of the comma-separated list
    /// formed by every field named `name` (RFC 9110 §5.3).
    pub fn list_elements<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'b [u8]> + 's {
        self.get_all(name).flat_map(|v| v.split(|&b| b == b',')).map(trim_ows).filter(|e| !e.is_empty())
    }

    /// True when the list named `name` contains `token` (any case), as in
    /// `Connection: close`.
    pub fn has_token(&self, name: &str, token: &str) -> bool {
        self.list_elements(name).any(|e| e.eq_ignore_ascii_case(token.as_bytes()))
    }

    /// All fields in order.
    pub fn iter(&self) -> core::slice::Iter<'_, Header<'b>> {
        self.list.iter()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// `v` without the optional whitespace (spaces and tabs, RFC 9110 OWS) at
/// either end.
pub fn trim_ows(v: &[u8]) -> &[u8] {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = v.iter().position(|b| !ows(b)).unwrap_or(v.len());
    let end = v.iter().rposition(|b| !ows(b)).map_or(start, |i| i + 1);
    v.get(start..end).unwrap_or(&[])
}

/// A head parsed so far: complete, or not all there yet (as httparse's
/// `Status`: needing more bytes is not an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status<T> {
    /// The head and its length.
    Complete(T),
    /// The head is not complete yet: read more and parse again.
    Partial,
}

impl<T> Status<T> {
    /// The complete value, if any.
    pub fn complete(self) -> Option<T> {
        match self {
            Status::Complete(t) => Some(t),
            Status::Partial => None,
        }
    }
}

/// Why a head could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadError {
    /// More than `H` header fields.
    TooManyHeaders,
    /// The head does not end within `max_head` bytes.
    TooLarge,
    /// Not an HTTP/1.x head.
    BadSyntax,
}

impl HeadError {
    /// The status to answer a request with: 431 for the size limits, 400
    /// otherwise.
    pub fn status(self) -> u16 {
        match self {
            HeadError::TooManyHeaders | HeadError::TooLarge => 431,
            HeadError::BadSyntax => 400,
        }
    }
}

/// How the body after a head is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    /// No body.
    None,
    /// Exactly this many bytes.
    Length(u64),
    /// The chunked transfer coding: decode with [`ChunkedDecoder`].
    Chunked,
    /// Everything until the peer closes the connection (responses only).
    UntilClose,
}

/// Why the body framing of a head is unusable. The connection must be closed
/// after answering (a request) or failing (a response).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FramingError {
    /// A Content-Length value is not a decimal number that fits in a `u64`.
    InvalidContentLength,
    /// Content-Length values differ.
    ConflictingContentLength,
    /// Both Content-Length and Transfer-Encoding: rejected as request smuggling.
    LengthWithTransferEncoding,
    /// Transfer-Encoding is anything but a single `chunked`.
    UnsupportedTransferCoding,
    /// Transfer-Encoding in an HTTP/1.0 message, whose framing is then unreliable.
    TransferEncodingInHttp10,
}

impl FramingError {
    /// The status to answer a request with: 501 for an unsupported coding, 400 otherwise.
    pub fn status(self) -> u16 {
        match self {
            FramingError::UnsupportedTransferCoding => 501,
            _ => 400,
        }
    }
}

/// A parsed request head; slices borrow the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead<'b, const H: usize> {
    pub method: &'b str,
    /// The request target as sent (origin form: path and query).
    pub path: &'b str,
    pub version: Version,
    pub headers: Headers<'b, H>,
}

/// A parsed response head; slices borrow the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead<'b, const H: usize> {
    pub status: u16,
    pub reason: &'b str,
    pub version: Version,
    pub headers: Headers<'b, H>,
}

/// Parses a request head at the start of `buf`; returns it and its length
/// (the body, if any, starts there), or [`Status::Partial`] when more bytes
/// are needed. At most `max_head` bytes are examined.
pub fn parse_request<'b, const H: usize>(
    buf: &'b [u8],
    max_head: usize,
) -> Result<Status<(RequestHead<'b, H>, usize)>, HeadError> {
    let mut raw = [httparse::EMPTY_HEADER; H];
    let mut req = httparse::Request::new(&mut raw);
    let Some(len) = head_len(req.parse(bounded(buf, max_head)), buf.len(), max_head)? else {
        return Ok(Status::Partial);
    };
    let head = RequestHead {
        method: req.method.ok_or(HeadError::BadSyntax)?,
        path: req.path.ok_or(HeadError::BadSyntax)?,
        version: version(req.version)?,
        headers: Headers::from_raw(req.headers),
    };
    Ok(Status::Complete((head, len)))
}

/// Parses a response head at the start of `buf`; returns it and its length,
/// or [`Status::Partial`]. At most `max_head` bytes are examined.
pub fn parse_response<'b, const H: usize>(
    buf: &'b [u8],
    max_head: usize,
) -> Result<Status<(ResponseHead<'b, H>, usize)>, HeadError> {
    let mut raw = [httparse::EMPTY_HEADER; H];
    let mut res = httparse::Response::new(&mut raw);
    let Some(len) = head_len(res.parse(bounded(buf, max_head)), buf.len(), max_head)? else {
        return Ok(Status::Partial);
    };
    let head = ResponseHead {
        status: res.code.ok_or(HeadError::BadSyntax)?,
        reason: res.reason.unwrap_or(""),
        version: version(res.version)?,
        headers: Headers::from_raw(res.headers),
    };
    Ok(Status::Complete((head, len)))
}

fn bounded(buf: &[u8], max_head: usize) -> &[u8] {
    buf.get(..max_head).unwrap_or(buf)
}

fn head_len(parsed: httparse::Result<usize>, available: usize, max_head: usize) -> Result<Option<usize>, HeadError> {
    match parsed {
        Ok(httparse::Status::Complete(len)) => Ok(Some(len)),
        Ok(httparse::Status::Partial) if available >= max_head => Err(HeadError::TooLarge),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => Err(HeadError::TooManyHeaders),
        Err(_) => Err(HeadError::BadSyntax),
    }
}

fn version(v: Option<u8>) -> Result<Version, HeadError> {
    match v {
        Some(0) => Ok(Version::Http10),
        Some(1) => Ok(Version::Http11),
        _ => Err(HeadError::BadSyntax),
    }
}

impl<'b, const H: usize> RequestHead<'b, H> {
    /// The first header field named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&'b [u8]> {
        self.headers.get(name)
    }

    /// The body framing: [`BodyFraming::None`] when neither Content-Length nor
    /// Transfer-Encoding is present.
    pub fn framing(&self) -> Result<BodyFraming, FramingError> {
        framing(self.version, &self.headers, BodyFraming::None)
    }

    /// Whether the connection stays open after this exchange: not after
    /// `Connection: close`, and for HTTP/1.0 only with `Connection: keep-alive`.
    pub fn keep_alive(&self) -> bool {
        keep_alive(self.version, &self.headers)
    }
}

impl<'b, const H: usize> ResponseHead<'b, H> {
    /// The first header field named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&'b [u8]> {
        self.headers.get(name)
    }

    /// The body framing of this response to a `request_method` request: none
    /// for HEAD, 1xx, 204, 304 and a 2xx to CONNECT, whatever the headers say;
    /// [`BodyFraming::UntilClose`] when neither Content-Length nor
    /// Transfer-Encoding is present.
    pub fn framing(&self, request_method: &str) -> Result<BodyFraming, FramingError> {
        let bodiless = request_method == "HEAD"
            || matches!(self.status, 100..=199 | 204 | 304)
            || (request_method == "CONNECT" && (200..300).contains(&self.status));
        if bodiless {
            return Ok(BodyFraming::None);
        }
        framing(self.version, &self.headers, BodyFraming::UntilClose)
    }

    /// Whether the connection stays open after this exchange: not after
    /// `Connection: close`, and for HTTP/1.0 only with `Connection: keep-alive`;
    /// a body framed [`BodyFraming::UntilClose`] ends it regardless.
    pub fn keep_alive(&self) -> bool {
        keep_alive(self.version, &self.headers)
    }
}

fn framing<const H: usize>(
    version: Version,
    headers: &Headers<'_, H>,
    absent: BodyFraming,
) -> Result<BodyFraming, FramingError> {
    let te = headers.get("transfer-encoding").is_some();
    let cl = headers.get("content-length").is_some();
    if te && cl {
        return Err(FramingError::LengthWithTransferEncoding);
    }
    if te {
        if version == Version::Http10 {
            return Err(FramingError::TransferEncodingInHttp10);
        }
        let mut codings = headers.list_elements("transfer-encoding");
        return match (codings.next(), codings.next()) {
            (Some(c), None) if c.eq_ignore_ascii_case(b"chunked") => Ok(BodyFraming::Chunked),
            _ => Err(FramingError::UnsupportedTransferCoding),
        };
    }
    if !cl {
        return Ok(absent);
    }
    let mut length = None;
    // An empty value has no elements and stays `None`: invalid.
    for element in headers.list_elements("content-length") {
        let n = parse_decimal(element).ok_or(FramingError::InvalidContentLength)?;
        if length.is_some_and(|l| l != n) {
            return Err(FramingError::ConflictingContentLength);
        }
        length = Some(n);
    }
    length.map(BodyFraming::Length).ok_or(FramingError::InvalidContentLength)
}

/// Persistence of a connection (RFC 9112 §9.3): `Connection: close` ends it;
/// otherwise HTTP/1.1 keeps it and HTTP/1.0 keeps it only with
/// `Connection: keep-alive`.
fn keep_alive<const H: usize>(version: Version, headers: &Headers<'_, H>) -> bool {
    !headers.has_token("connection", "close")
        && (version == Version::Http11 || headers.has_token("connection", "keep-alive"))
}

/// Longest chunk-size line (with extensions) or trailer line [`ChunkedDecoder`] accepts.
pub const MAX_CHUNK_LINE: usize = 4096;

/// Written after each chunk's data.
pub const CHUNK_END: &[u8] = b"\r\n";

/// The last chunk with an empty trailer section: ends a chunked body.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Writes a chunk-size line (`{len:x}\r\n`) for `len > 0` data bytes, which the
/// caller writes next, followed by [`CHUNK_END`]; end the body with
/// [`LAST_CHUNK`]. `len == 0` is [`WriteError::InvalidField`]: it would end the body.
pub fn write_chunk_header(len: usize, out: &mut [u8]) -> Result<usize, WriteError> {
    if len == 0 {
        return Err(WriteError::InvalidField);
    }
    let mut w = Out::new(out);
    w.put_num(len as u64, 16)?;
    w.put(b"\r\n")?;
    Ok(w.len())
}

/// One step of [`ChunkedDecoder::decode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk<'a> {
    /// Body bytes (a slice of the input).
    Data(&'a [u8]),
    /// All input was consumed; feed more.
    NeedMore,
    /// The body ended (last chunk and trailers consumed); input after it
    /// belongs to the next message.
    End,
}

/// Why a chunked body is malformed. The connection must be closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkedError {
    /// A chunk size is missing or not hexadecimal.
    BadSize,
    /// A chunk size does not fit in a `u64`.
    SizeOverflow,
    /// A chunk-size or trailer line exceeds [`MAX_CHUNK_LINE`].
    LineTooLong,
    /// A line does not end with CRLF, or chunk data is not followed by CRLF.
    BadLineEnding,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Size,
    /// Whitespace after the size, before `;` or the line end.
    SizeWs,
    Extension,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    TrailerStart,
    Trailer,
    TrailerLf,
    EndLf,
    Done,
}

/// Incremental decoder of the chunked transfer coding (RFC 9112 §7.1): chunk
/// extensions are ignored, trailer fields skipped, data handed out zero-copy.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    /// Size being read, then data bytes left in the current chunk.
    size: u64,
    digits: u8,
    /// Bytes in the current chunk-size or trailer line.
    line: usize,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl ChunkedDecoder {
    pub fn new() -> Self {
        ChunkedDecoder { state: State::Size, size: 0, digits: 0, line: 0 }
    }

    /// True once the body has ended.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Consumes framing bytes from `input` up to the next data, the end of the
    /// body, or the end of `input`; returns the bytes consumed (including any
    /// data returned) and what was found. After [`Chunk::End`] it consumes
    /// nothing. After an error the decoder must not be used again.
    pub fn decode<'a>(&mut self, input: &'a [u8]) -> Result<(usize, Chunk<'a>), ChunkedError> {
        use ChunkedError::*;
        for (i, &b) in input.iter().enumerate() {
            self.state = match self.state {
                State::Done => return Ok((i, Chunk::End)),
                State::Data => {
                    let rest = input.get(i..).unwrap_or(&[]);
                    let take = usize::try_from(self.size).map_or(rest.len(), |s| s.min(rest.len()));
                    self.size -= take as u64;
                    if self.size == 0 {
                        self.state = State::DataCr;
                    }
                    return Ok((i + take, Chunk::Data(rest.get(..take).unwrap_or(&[]))));
                }
                State::Size => match (b as char).to_digit(16) {
                    Some(_) if self.digits == 16 => return Err(SizeOverflow),
                    Some(d) => {
                        self.size = self.size << 4 | u64::from(d);
                        self.digits += 1;
                        self.count_line()?;
                        State::Size
                    }
                    None if self.digits == 0 => return Err(BadSize),
                    None => self.after_size(b)?,
                },
                State::SizeWs => self.after_size(b)?,
                State::Extension => match b {
                    b'\r' => State::SizeLf,
                    b'\n' => return Err(BadLineEnding),
                    _ => {
                        self.count_line()?;
                        State::Extension
                    }
                },
                State::SizeLf if b != b'\n' => return Err(BadLineEnding),
                State::SizeLf => {
                    self.line = 0;
                    self.digits = 0;
                    if self.size == 0 {
                        State::TrailerStart
                    } else {
                        State::Data
                    }
                }
                State::DataCr if b == b'\r' => State::DataLf,
                State::DataLf if b == b'\n' => State::Size,
                State::DataCr | State::DataLf => return Err(BadLineEnding),
                State::TrailerStart | State::Trailer => match b {
                    b'\r' if self.state == State::TrailerStart => State::EndLf,
                    b'\r' => State::TrailerLf,
                    b'\n' => return Err(BadLineEnding),
                    _ => {
                        self.count_line()?;
                        State::Trailer
                    }
                },
                State::TrailerLf if b == b'\n' => {
                    self.line = 0;
                    State::TrailerStart
                }
                State::EndLf if b == b'\n' => return Ok((i + 1, self.finish())),
                State::TrailerLf | State::EndLf => return Err(BadLineEnding),
            };
        }
        match self.state {
            State::Done => Ok((0, Chunk::End)),
            _ => Ok((input.len(), Chunk::NeedMore)),
        }
    }

    /// A byte after the size digits: optional whitespace, then an extension or the line end.
    fn after_size(&mut self, b: u8) -> Result<State, ChunkedError> {
        self.count_line()?;
        match b {
            b'\r' => Ok(State::SizeLf),
            b' ' | b'\t' => Ok(State::SizeWs),
            b'\n' => Err(ChunkedError::BadLineEnding),
            b';' => Ok(State::Extension),
            _ => Err(ChunkedError::BadSize),
        }
    }

    fn count_line(&mut self) -> Result<(), ChunkedError> {
        self.line += 1;
        if self.line > MAX_CHUNK_LINE {
            return Err(ChunkedError::LineTooLong);
        }
        Ok(())
    }

    fn finish(&mut self) -> Chunk<'static> {
        self.state = State::Done;
        Chunk::End
    }
}

/// Writes a response head: status line (with [`reason_phrase`]), `headers`,
/// the field that `body` implies (`content-length` for [`BodyFraming::Length`],
/// `transfer-encoding: chunked` for [`BodyFraming::Chunked`], nothing
/// otherwise), and the blank line.
///
/// Errors: [`WriteError::InvalidField`] for a status outside 100..=999, a
/// header name that is not a token, a value with CR, LF or NUL, or a
/// Content-Length/Transfer-Encoding header (say it with `body` instead);
/// [`WriteError::Overflow`] when `out` is too small.
pub fn write_response_head(
    status: u16,
    headers: &[Header<'_>],
    body: BodyFraming,
    out: &mut [u8],
) -> Result<usize, WriteError> {
    if !(100..=999).contains(&status) {
        return Err(WriteError::InvalidField);
    }
    let mut w = Out::new(out);
    w.put(b"HTTP/1.1 ")?;
    w.put_num(u64::from(status), 10)?;
    w.put(b" ")?;
    w.put(reason_phrase(status).as_bytes())?;
    w.put(b"\r\n")?;
    put_fields(&mut w, headers, body)?;
    Ok(w.len())
}

/// Writes an HTTP/1.1 request head: request line, `headers`, the field `body`
/// implies (as [`write_response_head`]) and the blank line. `method` must be a
/// token and `path` non-empty visible ASCII, else [`WriteError::InvalidField`].
pub fn write_request_head(
    method: &str,
    path: &str,
    headers: &[Header<'_>],
    body: BodyFraming,
    out: &mut [u8],
) -> Result<usize, WriteError> {
    if !is_token(method.as_bytes()) || path.is_empty() || !path.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(WriteError::InvalidField);
    }
    let mut w = Out::new(out);
    w.put(method.as_bytes())?;
    w.put(b" ")?;
    w.put(path.as_bytes())?;
    w.put(b" HTTP/1.1\r\n")?;
    put_fields(&mut w, headers, body)?;
    Ok(w.len())
}

fn put_fields(w: &mut Out<'_>, headers: &[Header<'_>], body: BodyFraming) -> Result<(), WriteError> {
    for h in headers {
        let framing = h.name.eq_ignore_ascii_case("content-length") || h.name.eq_ignore_ascii_case("transfer-encoding");
        if framing || !is_token(h.name.as_bytes()) || h.value.iter().any(|&b| matches!(b, b'\r' | b'\n' | 0)) {
            return Err(WriteError::InvalidField);
        }
        w.put(h.name.as_bytes())?;
        w.put(b": ")?;
        w.put(h.value)?;
        w.put(b"\r\n")?;
    }
    match body {
        BodyFraming::Length(n) => {
            w.put(b"content-length: ")?;
            w.put_num(n, 10)?;
            w.put(b"\r\n")?;
        }
        BodyFraming::Chunked => w.put(b"transfer-encoding: chunked\r\n")?,
        BodyFraming::None | BodyFraming::UntilClose => {}
    }
    w.put(b"\r\n")
}

/// RFC 9110 token: one or more tchar.
fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The reason phrase for the statuses mcpx sends; empty for others.
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::test_util::split;
    use proptest::prelude::*;
    use std::vec::Vec;

    const MAX: usize = 8192;

    fn req(s: &str) -> RequestHead<'_, 16> {
        parse_request::<16>(s.as_bytes(), MAX).unwrap().complete().unwrap().0
    }

    fn res(s: &str) -> ResponseHead<'_, 16> {
        parse_response::<16>(s.as_bytes(), MAX).unwrap().complete().unwrap().0
    }

    const POST: &str = "POST /mcp?x=1 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
        Accept: application/json\r\naccept: text/event-stream\r\nContent-Length: 2\r\n\r\n{}";

    #[test]
    fn parses_a_request_head_and_reports_its_length() {
        let (head, len) = parse_request::<16>(POST.as_bytes(), MAX).unwrap().complete().unwrap();
        assert_eq!((head.method, head.path, head.version), ("POST", "/mcp?x=1", Version::Http11));
        assert_eq!(&POST[len..], "{}");
        assert_eq!(head.headers.len(), 5);
        assert_eq!(head.headers.iter().next(), Some(&Header { name: "Host", value: b"localhost" }));
        assert_eq!(head.framing(), Ok(BodyFraming::Length(2)));
        assert!(head.keep_alive());
    }

    // row: streamable-http-header-names-case-insensitive
    #[test]
    fn header_lookup_ignores_name_case_and_repeats_are_kept() {
        let head = req(POST);
        assert_eq!(head.header("content-type"), Some(&b"application/json"[..]));
        assert_eq!(head.header("CONTENT-TYPE"), head.header("Content-Type"));
        assert_eq!(head.headers.get_all("ACCEPT").collect::<Vec<_>>(), [&b"application/json"[..], b"text/event-stream"]);
        assert_eq!(head.header("mcp-session-id"), None);
    }

    #[test]
    fn list_elements_span_fields_and_skip_empty_elements() {
        let head = req("GET / HTTP/1.1\r\nAccept: a, ,b\r\nAccept:\tc \r\n\r\n");
        assert_eq!(head.headers.list_elements("accept").collect::<Vec<_>>(), [&b"a"[..], b"b", b"c"]);
    }

    #[test]
    fn every_proper_prefix_is_incomplete() {
        let head_len = POST.len() - 2;
        for n in 0..head_len {
            assert_eq!(parse_request::<16>(&POST.as_bytes()[..n], MAX).map(|s| s.complete().map(|r| r.1)), Ok(None), "{n}");
        }
    }

    #[test]
    fn size_limits_answer_431() {
        let err = parse_request::<2>(POST.as_bytes(), MAX).unwrap_err();
        assert_eq!((err, err.status()), (HeadError::TooManyHeaders, 431));
        let err = parse_request::<16>(POST.as_bytes(), 40).unwrap_err();
        assert_eq!((err, err.status()), (HeadError::TooLarge, 431));
        // A partial head already at the limit cannot complete.
        assert_eq!(parse_request::<16>(&POST.as_bytes()[..40], 40).unwrap_err(), HeadError::TooLarge);
        assert!(matches!(parse_request::<16>(&POST.as_bytes()[..39], 40), Ok(Status::Partial)));
        // Exactly at the limit is fine.
        let head_len = POST.len() - 2;
        assert!(parse_request::<16>(POST.as_bytes(), head_len).unwrap().complete().is_some());
        assert_eq!(parse_request::<0>(b"GET / HTTP/1.1\r\n\r\n", MAX).map(|s| s.complete().map(|r| r.1)), Ok(Some(18)));
    }

    #[test]
    fn malformed_heads_answer_400() {
        for bad in [
            "GET / HTTP/2.0\r\n\r\n",
            "GET  / HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
            "\0GET / HTTP/1.1\r\n\r\n",
        ] {
            let err = parse_request::<16>(bad.as_bytes(), MAX).unwrap_err();
            assert_eq!((err, err.status()), (HeadError::BadSyntax, 400), "{bad:?}");
        }
        assert_eq!(parse_response::<16>(b"HTTP/1.1 20 OK\r\n\r\n", MAX).unwrap_err(), HeadError::BadSyntax);
    }

    #[test]
    fn request_framing() {
        let framing = |h: &str| req(&format!("POST / HTTP/1.1\r\n{h}\r\n")).framing();
        assert_eq!(framing(""), Ok(BodyFraming::None));
        assert_eq!(framing("Content-Length: 0\r\n"), Ok(BodyFraming::Length(0)));
        assert_eq!(framing("Content-Length: 5\r\ncontent-length: 5\r\n"), Ok(BodyFraming::Length(5)));
        assert_eq!(framing("Content-Length: 5, 5\r\n"), Ok(BodyFraming::Length(5)));
        assert_eq!(framing("Transfer-Encoding: Chunked\r\n"), Ok(BodyFraming::Chunked));
        assert_eq!(framing("Content-Length: 5\r\nContent-Length: 6\r\n"), Err(FramingError::ConflictingContentLength));
        assert_eq!(framing("Content-Length: 5, 6\r\n"), Err(FramingError::ConflictingContentLength));
        for bad in ["+5", "-1", "0x5", "5 5", "", "18446744073709551616"] {
            assert_eq!(framing(&format!("Content-Length: {bad}\r\n")), Err(FramingError::InvalidContentLength), "{bad}");
        }
        assert_eq!(framing("Content-Length: 18446744073709551615\r\n"), Ok(BodyFraming::Length(u64::MAX)));
        let smuggle = framing("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n").unwrap_err();
        assert_eq!((smuggle, smuggle.status()), (FramingError::LengthWithTransferEncoding, 400));
        for te in ["gzip, chunked", "chunked, chunked", "chunked\r\nTransfer-Encoding: gzip", "identity", ""] {
            let err = framing(&format!("Transfer-Encoding: {te}\r\n")).unwrap_err();
            assert_eq!((err, err.status()), (FramingError::UnsupportedTransferCoding, 501), "{te}");
        }
        let old = req("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(old.framing(), Err(FramingError::TransferEncodingInHttp10));
    }

    #[test]
    fn response_framing() {
        let r = res("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n");
        assert_eq!((r.status, r.reason), (200, "OK"));
        assert_eq!(r.framing("POST"), Ok(BodyFraming::UntilClose));
        assert_eq!(r.framing("HEAD"), Ok(BodyFraming::None));
        let chunked = res("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(chunked.framing("GET"), Ok(BodyFraming::Chunked));
        for status in ["100 Continue", "204 No Content", "304 Not Modified"] {
            let text = format!("HTTP/1.1 {status}\r\nContent-Length: 9\r\n\r\n");
            let r = res(&text);
            assert_eq!(r.framing("GET"), Ok(BodyFraming::None), "{status}");
        }
        assert_eq!(res("HTTP/1.1 200 OK\r\n\r\n").framing("CONNECT"), Ok(BodyFraming::None));
        let both = res("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(both.framing("GET"), Err(FramingError::LengthWithTransferEncoding));
        assert_eq!(res("HTTP/1.1 202 \r\nContent-Length: 0\r\n\r\n").framing("POST"), Ok(BodyFraming::Length(0)));
    }

    #[test]
    fn keep_alive_by_version_and_connection_tokens() {
        let ka = |v: &str, h: &str| req(&format!("GET / HTTP/{v}\r\n{h}\r\n")).keep_alive();
        assert!(ka("1.1", ""));
        assert!(!ka("1.1", "Connection: close\r\n"));
        assert!(!ka("1.1", "Connection: Upgrade, CLOSE\r\n"));
        assert!(!ka("1.0", ""));
        assert!(ka("1.0", "Connection: Keep-Alive\r\n"));
        assert!(!ka("1.0", "Connection: keep-alive\r\nConnection: close\r\n"));
        assert!(!res("HTTP/1.0 200 OK\r\n\r\n").keep_alive());
        assert!(res("HTTP/1.1 200 OK\r\n\r\n").keep_alive());
    }

    fn head_bytes(n: usize, out: &[u8]) -> &str {
        std::str::from_utf8(&out[..n]).unwrap()
    }

    #[test]
    fn writes_response_heads() {
        let mut out = [0u8; 256];
        let n = write_response_head(202, &[], BodyFraming::Length(0), &mut out).unwrap();
        assert_eq!(head_bytes(n, &out), "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n");
        let sse = [
            Header { name: "Content-Type", value: b"text/event-stream" },
            Header { name: "X-Accel-Buffering", value: b"no" },
        ];
        let n = write_response_head(200, &sse, BodyFraming::Chunked, &mut out).unwrap();
        assert_eq!(
            head_bytes(n, &out),
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Accel-Buffering: no\r\ntransfer-encoding: chunked\r\n\r\n"
        );
        let n = write_response_head(299, &[], BodyFraming::UntilClose, &mut out).unwrap();
        assert_eq!(head_bytes(n, &out), "HTTP/1.1 299 \r\n\r\n");
        let back = res(head_bytes(n, &out));
        assert_eq!((back.status, back.reason), (299, ""));
    }

    #[test]
    fn writes_request_heads() {
        let mut out = [0u8; 256];
        let hs = [Header { name: "Host", value: b"example.com" }, Header { name: "Mcp-Method", value: b"tools/call" }];
        let n = write_request_head("POST", "/mcp", &hs, BodyFraming::Length(42), &mut out).unwrap();
        let text = head_bytes(n, &out);
        assert_eq!(text, "POST /mcp HTTP/1.1\r\nHost: example.com\r\nMcp-Method: tools/call\r\ncontent-length: 42\r\n\r\n");
        assert_eq!(req(text).framing(), Ok(BodyFraming::Length(42)));
    }

    #[test]
    fn writers_reject_injection_and_report_overflow() {
        let mut out = [0u8; 256];
        let inval = Err(WriteError::InvalidField);
        let h = |name, value| [Header { name, value }];
        assert_eq!(write_response_head(200, &h("X", b"a\r\nSet-Cookie: x"), BodyFraming::None, &mut out), inval);
        assert_eq!(write_response_head(200, &h("X", b"a\0"), BodyFraming::None, &mut out), inval);
        assert_eq!(write_response_head(200, &h("Bad Name", b"a"), BodyFraming::None, &mut out), inval);
        assert_eq!(write_response_head(200, &h("", b"a"), BodyFraming::None, &mut out), inval);
        assert_eq!(write_response_head(200, &h("Content-Length", b"1"), BodyFraming::None, &mut out), inval);
        assert_eq!(write_response_head(200, &h("transfer-encoding", b"chunked"), BodyFraming::None, &mut out), inval);
        assert_eq!(write_response_head(1000, &[], BodyFraming::None, &mut out), inval);
        assert_eq!(write_response_head(99, &[], BodyFraming::None, &mut out), inval);
        assert_eq!(write_request_head("GET X", "/", &[], BodyFraming::None, &mut out), inval);
        assert_eq!(write_request_head("GET", "/a b", &[], BodyFraming::None, &mut out), inval);
        assert_eq!(write_request_head("GET", "", &[], BodyFraming::None, &mut out), inval);
        assert_eq!(write_response_head(200, &[], BodyFraming::Length(10), &mut out[..20]), Err(WriteError::Overflow));
    }

    #[test]
    fn chunk_header_and_terminator() {
        let mut out = [0u8; 32];
        let n = write_chunk_header(0x1a2b, &mut out).unwrap();
        assert_eq!(&out[..n], b"1a2b\r\n");
        assert_eq!(write_chunk_header(usize::MAX, &mut out[..4]), Err(WriteError::Overflow));
        assert_eq!(write_chunk_header(0, &mut out), Err(WriteError::InvalidField));
    }

    /// Decodes `reads` to the end: (body, bytes left after the end) or the error.
    fn dechunk(reads: &[&[u8]]) -> Result<(Vec<u8>, Vec<u8>), ChunkedError> {
        let mut d = ChunkedDecoder::new();
        let (mut body, mut rest) = (Vec::new(), Vec::new());
        for read in reads {
            let mut input = *read;
            loop {
                let (n, chunk) = d.decode(input)?;
                input = &input[n..];
                match chunk {
                    Chunk::Data(data) => body.extend_from_slice(data),
                    Chunk::NeedMore => {
                        assert!(input.is_empty());
                        break;
                    }
                    Chunk::End => {
                        assert!(d.is_done());
                        rest.extend_from_slice(input);
                        break;
                    }
                }
            }
        }
        assert!(d.is_done(), "body did not end");
        Ok((body, rest))
    }

    #[test]
    fn decodes_chunks_with_extensions_and_trailers() {
        let wire = b"5;name=\"v\"\r\nhello\r\n1 ; x\r\n \r\nA\r\n0123456789\r\n0\r\nExpires: never\r\nX: y\r\n\r\nNEXT";
        let (body, rest) = dechunk(&[wire]).unwrap();
        assert_eq!(body, b"hello 0123456789");
        assert_eq!(rest, b"NEXT");
        assert_eq!(dechunk(&[b"0\r\n\r\n"]).unwrap().0, b"");
    }

    #[test]
    fn end_is_sticky_and_consumes_nothing() {
        let mut d = ChunkedDecoder::new();
        assert_eq!(d.decode(b"0\r\n\r\nX"), Ok((5, Chunk::End)));
        assert_eq!(d.decode(b"X"), Ok((0, Chunk::End)));
        assert_eq!(d.decode(b""), Ok((0, Chunk::End)));
        assert_eq!(ChunkedDecoder::new().decode(b""), Ok((0, Chunk::NeedMore)));
    }

    #[test]
    fn malformed_chunked_bodies_are_typed_errors() {
        use ChunkedError::*;
        let cases: [(&[u8], ChunkedError); 12] = [
            (b"\r\n", BadSize),
            (b"g\r\n", BadSize),
            (b"-1\r\n", BadSize),
            (b"5 5\r\n", BadSize),
            (b"5\n", BadLineEnding),
            (b"5\r\r", BadLineEnding),
            (b"5\r\nhelloX", BadLineEnding),
            (b"5\r\nhello\r\r", BadLineEnding),
            (b"5;a\nb\r\n", BadLineEnding),
            (b"0\r\nX: y\n\r\n", BadLineEnding),
            (b"0\r\n\r\r", BadLineEnding),
            (b"10000000000000000\r\n", SizeOverflow),
        ];
        for (wire, err) in cases {
            assert_eq!(dechunk(&[wire]), Err(err), "{:?}", String::from_utf8_lossy(wire));
        }
        let max = ChunkedDecoder::new().decode(b"ffffffffffffffff\r\nab");
        assert_eq!(max, Ok((20, Chunk::Data(b"ab"))));
        let mut long_ext = b"1;".to_vec();
        long_ext.extend(vec![b'x'; MAX_CHUNK_LINE]);
        assert_eq!(dechunk(&[&long_ext]), Err(LineTooLong));
        let mut long_trailer = b"0\r\n".to_vec();
        long_trailer.extend(vec![b'x'; MAX_CHUNK_LINE + 1]);
        assert_eq!(dechunk(&[&long_trailer]), Err(LineTooLong));
    }

    fn chunked(body: &[u8], sizes: &[usize]) -> Vec<u8> {
        let mut wire = Vec::new();
        let mut rest = body;
        let mut sizes = sizes.iter().cycle();
        while !rest.is_empty() {
            let n = sizes.next().map_or(rest.len(), |s| (*s).clamp(1, rest.len()));
            let mut head = [0u8; 24];
            let h = write_chunk_header(n, &mut head).unwrap();
            wire.extend_from_slice(&head[..h]);
            wire.extend_from_slice(&rest[..n]);
            wire.extend_from_slice(CHUNK_END);
            rest = &rest[n..];
        }
        wire.extend_from_slice(LAST_CHUNK);
        wire
    }


    proptest! {
        #[test]
        fn chunked_decode_of_encode_under_any_split(
            body in prop::collection::vec(any::<u8>(), 0..300),
            sizes in prop::collection::vec(1usize..64, 1..6),
            cuts in prop::collection::vec(any::<usize>(), 0..20),
        ) {
            let mut wire = chunked(&body, &sizes);
            wire.extend_from_slice(b"GET / HTTP/1.1\r\n");
            let reads = split(&wire, &cuts);
            let reads: Vec<&[u8]> = reads.iter().map(|r| r.as_slice()).collect();
            let (got, rest) = dechunk(&reads).unwrap();
            prop_assert_eq!(got, body);
            prop_assert_eq!(rest, b"GET / HTTP/1.1\r\n".to_vec());
        }

        #[test]
        fn chunked_decoder_never_panics_and_is_split_independent(
            wire in prop::collection::vec(prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'0'), Just(b'a'), Just(b';'), any::<u8>()], 0..80),
            cuts in prop::collection::vec(any::<usize>(), 0..8),
        ) {
            let run = |reads: &[&[u8]]| -> Result<Vec<u8>, ChunkedError> {
                let mut d = ChunkedDecoder::new();
                let mut body = Vec::new();
                for read in reads {
                    let mut input = *read;
                    while !input.is_empty() && !d.is_done() {
                        let (n, chunk) = d.decode(input)?;
                        input = &input[n..];
                        if let Chunk::Data(data) = chunk {
                            body.extend_from_slice(data);
                        }
                    }
                }
                Ok(body)
            };
            let reads = split(&wire, &cuts);
            let reads: Vec<&[u8]> = reads.iter().map(|r| r.as_slice()).collect();
            prop_assert_eq!(run(&reads), run(&[&wire]));
        }

        #[test]
        fn request_heads_never_panic_and_prefixes_agree(
            raw in prop::collection::vec(prop_oneof![Just(b'\r'), Just(b'\n'), Just(b':'), Just(b' '), any::<u8>()], 0..120),
            max in 0usize..160,
        ) {
            let mut input = b"POST /mcp HTTP/1.1\r\n".to_vec();
            input.extend_from_slice(&raw);
            if let Ok(Status::Complete((head, n))) = parse_request::<4>(&input, max) {
                prop_assert!(n <= max);
                let _ = (head.framing(), head.keep_alive());
                // Any complete head parses the same from a buffer holding only it.
                prop_assert_eq!(parse_request::<4>(&input[..n], max).map(|s| s.complete().map(|r| r.1)), Ok(Some(n)));
            }
            let _ = parse_response::<4>(&raw, max).map(|s| s.complete().map(|(h, _)| (h.framing("GET"), h.keep_alive())));
        }

        #[test]
        fn written_heads_parse_back(
            headers in prop::collection::vec(("[A-Za-z][A-Za-z0-9-]{0,12}", "[ -~]{0,20}"), 0..6),
            len in any::<u64>(),
            status in 100u16..1000,
        ) {
            let headers: Vec<(String, String)> = headers
                .into_iter()
                .filter(|(n, _)| !n.eq_ignore_ascii_case("content-length") && !n.eq_ignore_ascii_case("transfer-encoding"))
                .collect();
            let hs: Vec<Header<'_>> = headers.iter().map(|(n, v)| Header { name: n, value: v.as_bytes() }).collect();
            let mut out = [0u8; 1024];
            let n = write_request_head("POST", "/mcp", &hs, BodyFraming::Length(len), &mut out).unwrap();
            let (head, parsed) = parse_request::<8>(&out[..n], MAX).unwrap().complete().unwrap();
            prop_assert_eq!(parsed, n);
            prop_assert_eq!(head.framing(), Ok(BodyFraming::Length(len)));
            for (h, (name, value)) in head.headers.iter().zip(&headers) {
                prop_assert_eq!(h.name, name.as_str());
                prop_assert_eq!(h.value, value.trim_matches(' ').as_bytes());
            }
            let mut out = [0u8; 1024];
            let n = write_response_head(status, &hs, BodyFraming::Chunked, &mut out).unwrap();
            let (head, _) = parse_response::<8>(&out[..n], MAX).unwrap().complete().unwrap();
            prop_assert_eq!(head.status, status);
            let bodiless = matches!(status, 100..=199 | 204 | 304);
            prop_assert_eq!(head.framing("GET"), Ok(if bodiless { BodyFraming::None } else { BodyFraming::Chunked }));
        }
    }
}
