//! The HTTP load generator: MCP clients over Streamable HTTP, one blocking
//! keep-alive connection per client thread, each with its own session.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::json::{member, str_inner};
use super::stdio::{call_body, check_echo, initialize_body, INITIALIZED};

pub struct Client {
    stream: TcpStream,
    host: String,
    path: String,
    session: Option<String>,
    version: Option<String>,
    buf: Vec<u8>,
    req: Vec<u8>,
    body: Vec<u8>,
    next_id: u64,
    pub tool: String,
}

pub struct Response {
    pub status: u16,
    /// The JSON-RPC message: the body, or the data of the SSE event that
    /// carries a response.
    pub message: Vec<u8>,
}

fn find(h: &[u8], needle: &[u8]) -> Option<usize> {
    h.windows(needle.len()).position(|w| w == needle)
}

impl Client {
    pub fn connect(port: u16, path: &str) -> io::Result<Self> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Client {
            stream,
            host: format!("127.0.0.1:{port}"),
            path: path.to_string(),
            session: None,
            version: None,
            buf: Vec::with_capacity(1 << 17),
            req: Vec::with_capacity(1 << 17),
            body: Vec::with_capacity(1 << 17),
            next_id: 1,
            tool: String::new(),
        })
    }

    /// Sends `self.body` as a POST (or DELETE when `delete`) and reads the answer.
    fn exchange(&mut self, delete: bool) -> io::Result<Response> {
        self.req.clear();
        let method = if delete { "DELETE" } else { "POST" };
        let _ = write!(
            self.req,
            "{method} {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.path,
            self.host,
            if delete { 0 } else { self.body.len() }
        );
        if let Some(s) = &self.session {
            let _ = write!(self.req, "Mcp-Session-Id: {s}\r\n");
        }
        if let Some(v) = &self.version {
            let _ = write!(self.req, "MCP-Protocol-Version: {v}\r\n");
        }
        self.req.extend_from_slice(b"\r\n");
        if !delete {
            self.req.extend_from_slice(&self.body);
        }
        self.stream.write_all(&self.req)?;
        self.read_response()
    }

    fn fill(&mut self) -> io::Result<()> {
        let len = self.buf.len();
        self.buf.resize(len + (1 << 16), 0);
        let n = self.stream.read(&mut self.buf[len..])?;
        self.buf.truncate(len + n);
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        Ok(())
    }

    fn read_response(&mut self) -> io::Result<Response> {
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i + 4;
            }
            self.fill()?;
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let status: u16 = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io::Error::other("bad status line"))?;
        let (mut length, mut chunked, mut sse, mut close) = (None, false, false, false);
        for l in lines {
            let Some((k, v)) = l.split_once(':') else {
                continue;
            };
            let v = v.trim();
            match k.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = v.parse::<usize>().ok(),
                "transfer-encoding" => chunked = v.to_ascii_lowercase().contains("chunked"),
                "content-type" => sse = v.starts_with("text/event-stream"),
                "connection" => close = v.eq_ignore_ascii_case("close"),
                "mcp-session-id" => self.session = Some(v.to_string()),
                _ => {}
            }
        }
        self.buf.drain(..head_end);
        let mut body = Vec::new();
        if chunked {
            loop {
                let line_end = loop {
                    if let Some(i) = find(&self.buf, b"\r\n") {
                        break i;
                    }
                    self.fill()?;
                };
                let size_str = String::from_utf8_lossy(&self.buf[..line_end]).into_owned();
                let size =
                    usize::from_str_radix(size_str.split(';').next().unwrap_or("").trim(), 16)
                        .map_err(|_| io::Error::other("bad chunk size"))?;
                while self.buf.len() < line_end + 2 + size + 2 {
                    self.fill()?;
                }
                body.extend_from_slice(&self.buf[line_end + 2..line_end + 2 + size]);
                self.buf.drain(..line_end + 2 + size + 2);
                if size == 0 {
                    break;
                }
            }
        } else if let Some(n) = length {
            while self.buf.len() < n {
                self.fill()?;
            }
            body.extend_from_slice(&self.buf[..n]);
            self.buf.drain(..n);
        } else if close || status >= 200 {
            // Read to end of stream (connection: close or no framing).
            if status != 202 && status != 204 && status != 304 {
                while self.fill().is_ok() {
                    if sse && sse_response(&self.buf).is_some() {
                        break;
                    }
                }
                body = std::mem::take(&mut self.buf);
            }
        }
        let message = if sse {
            sse_response(&body).unwrap_or_default()
        } else {
            body
        };
        Ok(Response { status, message })
    }

    /// initialize (opening a session), notifications/initialized, tools/list.
    pub fn handshake(&mut self) -> io::Result<()> {
        self.body = initialize_body(0).into_bytes();
        let r = self.exchange(false)?;
        let result = member(&r.message, "result").ok_or_else(|| {
            io::Error::other(format!(
                "initialize: HTTP {} {:.300}",
                r.status,
                String::from_utf8_lossy(&r.message)
            ))
        })?;
        self.version = member(result, "protocolVersion")
            .and_then(str_inner)
            .map(|v| String::from_utf8_lossy(v).into_owned());
        self.body = INITIALIZED.as_bytes().to_vec();
        let r = self.exchange(false)?;
        if !(200..300).contains(&r.status) {
            return Err(io::Error::other(format!(
                "notifications/initialized: HTTP {}",
                r.status
            )));
        }
        self.body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#.to_vec();
        let r = self.exchange(false)?;
        self.tool = super::stdio::echo_tool(&r.message).ok_or_else(|| {
            io::Error::other(format!(
                "no echo tool in tools/list: HTTP {} {:.300}",
                r.status,
                String::from_utf8_lossy(&r.message)
            ))
        })?;
        self.next_id = 2;
        Ok(())
    }

    /// One checked echo call; returns its latency.
    pub fn call(&mut self, text: &[u8]) -> io::Result<(u64, bool)> {
        let id = self.next_id;
        self.next_id += 1;
        let mut body = std::mem::take(&mut self.body);
        call_body(&mut body, id, &self.tool, text);
        self.body = body;
        let t = Instant::now();
        let r = self.exchange(false)?;
        let ns = t.elapsed().as_nanos() as u64;
        Ok((ns, r.status == 200 && check_echo(&r.message, text.len())))
    }

    /// Ends the session (best effort).
    pub fn close(mut self) {
        if self.session.is_some() {
            let _ = self.exchange(true);
        }
    }
}

/// The data of the first SSE event in `body` that is a JSON-RPC response.
fn sse_response(body: &[u8]) -> Option<Vec<u8>> {
    let text = body;
    let mut data = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let end = text[i..].iter().position(|&b| b == b'\n').map(|p| i + p)?;
        let line = text[i..end].strip_suffix(b"\r").unwrap_or(&text[i..end]);
        i = end + 1;
        if line.is_empty() {
            if !data.is_empty()
                && (member(&data, "result").is_some() || member(&data, "error").is_some())
            {
                return Some(data);
            }
            data.clear();
        } else if let Some(d) = line.strip_prefix(b"data:") {
            if !data.is_empty() {
                data.push(b'\n');
            }
            data.extend_from_slice(d.strip_prefix(b" ").unwrap_or(d));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn sse_picks_the_response() {
        let b = b"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\r\n\r\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n";
        assert_eq!(
            super::sse_response(b).unwrap(),
            br#"{"jsonrpc":"2.0","id":3,"result":{}}"#
        );
    }
}
