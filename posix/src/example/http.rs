//! `mcpx example-server --http ADDR`: the same server over Streamable HTTP
//! (POST `/mcp`, loopback addresses only), so the conformance suite's server
//! scenarios can run against the example server itself, with no mcpx hub in
//! between.
//!
//! One [`Backend`] (a [`Server`] and the router of its output) serves every
//! request without a session (the stateless 2026-07-28 era); each legacy
//! session (`initialize`, then `Mcp-Session-Id`) gets a backend of its own.
//! Request ids are replaced by ids unique per backend, so concurrent clients
//! cannot collide, and the client's id is restored on the way out. A response
//! goes to the POST that made the request; a notification naming a request
//! (a listen stream's subscription id) to that request's POST; any other
//! notification or server→client request to the most recent open POST of the
//! backend that accepts SSE. With no such POST a notification is dropped and
//! a request waits for the next one (a task's input request reaches the
//! client on its `tasks/result` stream: row tasks-sse-any-stream).
//!
//! A 2026-07-28 POST's `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`
//! headers must match its body (row streamable-http-header-mismatch-400-jsonrpc);
//! its errors get the HTTP status of their code.

use super::server::{Out, Server};
use super::wire::{error_response, RpcError, INVALID_REQUEST, PARSE_ERROR};
use super::{flow, Config};
use mcpx_core::headers::{self, HeaderField, ParamValue};
use mcpx_core::meta::{PROTOCOL_VERSION_KEY, SUBSCRIPTION_ID_KEY};
use mcpx_core::revision::Revision;
use serde_json::{json, Value};
use smol::channel::{unbounded, Receiver, Sender};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::{TcpListener, TcpStream};
use crate::process::exec::Executor;
use smol::Timer;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

/// Longest accepted request head (request line and headers).
const MAX_HEAD: usize = 64 << 10;
/// Idle keep-alive connections are closed after this long.
const IDLE: Duration = Duration::from_secs(60);
/// Legacy sessions kept at most; the oldest is dropped to make room.
const MAX_SESSIONS: usize = 256;
/// Server→client requests kept per backend until a POST can carry them;
/// more are dropped (their waiter then times out).
const MAX_QUEUED: usize = 64;

/// What reaches a waiting POST.
enum Delivery {
    /// The answer to its request (the client's id restored).
    Response(Value),
    /// A notification or server→client request to stream before it.
    Message(Value),
}

struct Exchange {
    client_id: Value,
    sse: bool,
    tx: Sender<Delivery>,
}

/// A [`Server`] and the POSTs waiting on it.
struct Backend {
    srv: Rc<Server>,
    next: RefCell<u64>,
    /// Open exchanges by the number in their internal id (`http-N`).
    open: RefCell<BTreeMap<u64, Exchange>>,
    /// Server→client requests no open POST could carry yet.
    queued: RefCell<Vec<Value>>,
}

fn internal_id(n: u64) -> Value {
    Value::String(format!("http-{n}"))
}

fn exchange_number(id: &Value) -> Option<u64> {
    id.as_str()?.strip_prefix("http-")?.parse().ok()
}

impl Backend {
    fn start(cfg: &Config, ex: &Rc<Executor>) -> Rc<Backend> {
        let (tx, rx) = smol::channel::bounded::<Out>(super::OUT_QUEUE);
        let srv = Server::new(cfg.clone(), tx, ex.clone(), flow::StateKey::random());
        let b = Rc::new(Backend {
            srv,
            next: RefCell::new(0),
            open: RefCell::new(BTreeMap::new()),
            queued: RefCell::new(Vec::new()),
        });
        ex.spawn(route(Rc::downgrade(&b), rx)).detach();
        b
    }

    fn open(&self, client_id: Value, sse: bool) -> (u64, Receiver<Delivery>) {
        let n = {
            let mut next = self.next.borrow_mut();
            *next += 1;
            *next
        };
        let (tx, rx) = unbounded();
        if sse {
            for m in self.queued.borrow_mut().drain(..) {
                let _ = tx.try_send(Delivery::Message(m));
            }
        }
        self.open.borrow_mut().insert(n, Exchange { client_id, sse, tx });
        (n, rx)
    }

    /// The internal id of the open request the client calls `client_id`.
    fn internal_of(&self, client_id: &Value) -> Option<Value> {
        self.open
            .borrow()
            .iter()
            .find(|(_, e)| &e.client_id == client_id)
            .map(|(n, _)| internal_id(*n))
    }

    fn deliver(&self, mut v: Value) {
        let open = self.open.borrow();
        let is_response = v.get("method").is_none();
        if is_response {
            let Some(n) = v.get("id").and_then(exchange_number) else { return };
            if let Some(e) = open.get(&n) {
                v["id"] = e.client_id.clone();
                let _ = e.tx.try_send(Delivery::Response(v));
            }
            return;
        }
        let sub = v
            .pointer_mut(&format!("/params/_meta/{}", SUBSCRIPTION_ID_KEY.replace('/', "~1")))
            .and_then(|s| Some((exchange_number(s)?, s)));
        let target = match sub {
            Some((n, slot)) => open.get(&n).inspect(|e| *slot = e.client_id.clone()),
            None => open.values().rev().find(|e| e.sse),
        };
        match target {
            Some(e) => {
                let _ = e.tx.try_send(Delivery::Message(v));
            }
            None if v.get("id").is_some() => {
                let mut q = self.queued.borrow_mut();
                if q.len() < MAX_QUEUED {
                    q.push(v);
                }
            }
            None => {}
        }
    }
}

async fn route(b: std::rc::Weak<Backend>, rx: Receiver<Out>) {
    while let Ok(m) = rx.recv().await {
        match m {
            Out::Flush(ack) => {
                let _ = ack.try_send(());
            }
            Out::Line(s) => {
                let Some(b) = b.upgrade() else { return };
                match serde_json::from_str::<Value>(&s) {
                    Ok(Value::Array(items)) => items.into_iter().for_each(|v| b.deliver(v)),
                    Ok(v) => b.deliver(v),
                    Err(_) => {}
                }
            }
        }
    }
}

struct Front {
    cfg: Config,
    ex: Rc<Executor>,
    stateless: Rc<Backend>,
    /// Legacy sessions by `Mcp-Session-Id`, with their creation order.
    sessions: RefCell<(HashMap<String, Rc<Backend>>, Vec<String>)>,
}

/// A parsed request head and its body.
struct Request {
    method: String,
    path: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    keep_alive: bool,
}

impl Request {
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
    fn header_str(&self, name: &str) -> Option<&str> {
        self.header(name).and_then(|v| std::str::from_utf8(v).ok())
    }
    fn accepts_sse(&self) -> bool {
        self.header_str("accept")
            .is_some_and(|a| a.contains("text/event-stream"))
    }
}

/// Why a request could not be read.
enum ReadError {
    Closed,
    Bad(u16, String),
}

struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    async fn fill(&mut self) -> Result<(), ReadError> {
        let mut chunk = [0u8; 16 << 10];
        let n = smol::future::or(async { self.stream.read(&mut chunk).await.ok() }, async {
            Timer::after(IDLE).await;
            None
        })
        .await
        .filter(|n| *n > 0)
        .ok_or(ReadError::Closed)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    async fn read_request(&mut self, max_body: usize) -> Result<Request, ReadError> {
        let bad = |m: &str| ReadError::Bad(400, m.to_string());
        let end = loop {
            if let Some(p) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
            if self.buf.len() > MAX_HEAD {
                return Err(ReadError::Bad(431, format!("request head over {MAX_HEAD} bytes")));
            }
            self.fill().await?;
        };
        let head = String::from_utf8(self.buf[..end].to_vec()).map_err(|_| bad("head is not UTF-8"))?;
        self.buf.drain(..end + 4);
        let mut lines = head.split("\r\n");
        let mut first = lines.next().unwrap_or("").split(' ');
        let (method, target, version) = match (first.next(), first.next(), first.next()) {
            (Some(m), Some(t), Some(v)) if v.starts_with("HTTP/1.") => (m, t, v),
            _ => return Err(bad("malformed request line")),
        };
        let mut headers = Vec::new();
        for l in lines {
            let (n, v) = l.split_once(':').ok_or_else(|| bad("malformed header line"))?;
            headers.push((n.trim().to_string(), v.trim().as_bytes().to_vec()));
        }
        let mut req = Request {
            method: method.to_string(),
            path: target.split('?').next().unwrap_or("").to_string(),
            keep_alive: version == "HTTP/1.1",
            headers,
            body: Vec::new(),
        };
        if let Some(c) = req.header_str("connection") {
            req.keep_alive = !c.eq_ignore_ascii_case("close");
        }
        if req.header("transfer-encoding").is_some() {
            return Err(ReadError::Bad(411, "send the body with Content-Length".into()));
        }
        let len = match req.header_str("content-length") {
            None => 0,
            Some(v) => v.parse::<usize>().map_err(|_| bad("invalid Content-Length"))?,
        };
        if len > max_body {
            return Err(ReadError::Bad(413, format!("body over {max_body} bytes")));
        }
        while self.buf.len() < len {
            self.fill().await?;
        }
        req.body = self.buf.drain(..len).collect();
        Ok(req)
    }

    async fn respond(
        &mut self,
        status: u16,
        extra: &[(&str, &str)],
        body: Option<&Value>,
    ) -> std::io::Result<()> {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
        if !body.is_empty() {
            head.push_str("Content-Type: application/json\r\n");
        }
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        self.stream.write_all(head.as_bytes()).await?;
        self.stream.write_all(body.as_bytes()).await?;
        self.stream.flush().await
    }

    async fn sse_event(&mut self, v: &Value) -> std::io::Result<()> {
        let ev = format!("event: message\ndata: {v}\n\n");
        self.stream.write_all(ev.as_bytes()).await?;
        self.stream.flush().await
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        _ => "Error",
    }
}

/// Serve `cfg` on `addr` until the process is stopped.
pub async fn serve(cfg: Config, ex: Rc<Executor>, addr: SocketAddr) -> i32 {
    let listener = match TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("mcpx example-server: listening on {addr}: {e}");
            return 1;
        }
    };
    eprintln!("mcpx example-server: serving http://{addr}/mcp");
    let front = Rc::new(Front {
        stateless: Backend::start(&cfg, &ex),
        cfg,
        ex: ex.clone(),
        sessions: RefCell::new((HashMap::new(), Vec::new())),
    });
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let f = front.clone();
                ex.spawn(async move {
                    let mut conn = Conn { stream, buf: Vec::new() };
                    f.connection(&mut conn).await
                })
                .detach();
            }
            Err(e) => {
                eprintln!("mcpx example-server: accept: {e}");
                Timer::after(Duration::from_millis(100)).await;
            }
        }
    }
}

/// An error answer: a JSON-RPC error object with `status`.
fn rpc_refusal(status: u16, id: &Value, code: i64, msg: impl Into<String>) -> (u16, Value) {
    (status, error_response(id, &RpcError::new(code, msg)))
}

impl Front {
    async fn connection(&self, conn: &mut Conn) {
        loop {
            let req = match conn.read_request(self.cfg.max_line).await {
                Ok(r) => r,
                Err(ReadError::Closed) => return,
                Err(ReadError::Bad(status, msg)) => {
                    let body = json!({"error": msg});
                    let _ = conn.respond(status, &[("Connection", "close")], Some(&body)).await;
                    return;
                }
            };
            let keep = req.keep_alive;
            match self.request(conn, req).await {
                Ok(true) if keep => {}
                _ => return,
            }
        }
    }

    /// Answer one request; `Ok(true)` when the connection may carry another.
    async fn request(&self, conn: &mut Conn, req: Request) -> std::io::Result<bool> {
        // Only pages and names of this machine (DNS rebinding).
        let foreign = [("origin", req.header_str("origin")), ("host", req.header_str("host"))]
            .into_iter()
            .find(|(_, v)| v.is_some_and(|v| !loopback_authority(v)));
        if let Some((name, Some(v))) = foreign {
            let body = json!({"error": format!("{name} {v} is not allowed: this server answers loopback only")});
            conn.respond(403, &[], Some(&body)).await?;
            return Ok(true);
        }
        if req.path != "/mcp" {
            conn.respond(404, &[], Some(&json!({"error": "not found: use /mcp"}))).await?;
            return Ok(true);
        }
        let session = req.header_str("mcp-session-id").map(str::to_string);
        match req.method.as_str() {
            "POST" => self.post(conn, req, session).await,
            "DELETE" => {
                let status = match session.and_then(|s| self.end_session(&s)) {
                    Some(()) => 200,
                    None => 404,
                };
                conn.respond(status, &[], None).await?;
                Ok(true)
            }
            _ => {
                let body = json!({"error": "this server answers POST (and DELETE of a session) only"});
                conn.respond(405, &[("Allow", "POST, DELETE")], Some(&body)).await?;
                Ok(true)
            }
        }
    }

    fn end_session(&self, id: &str) -> Option<()> {
        let mut s = self.sessions.borrow_mut();
        let b = s.0.remove(id)?;
        s.1.retain(|x| x != id);
        b.srv.abandon_client_requests();
        Some(())
    }

    fn add_session(&self, b: Rc<Backend>) -> String {
        let id = super::wire::random_id();
        let oldest = {
            let s = self.sessions.borrow();
            (s.1.len() >= MAX_SESSIONS).then(|| s.1[0].clone())
        };
        if let Some(o) = oldest {
            self.end_session(&o);
        }
        let mut s = self.sessions.borrow_mut();
        s.0.insert(id.clone(), b);
        s.1.push(id.clone());
        id
    }

    async fn post(
        &self,
        conn: &mut Conn,
        req: Request,
        session: Option<String>,
    ) -> std::io::Result<bool> {
        let msg: Value = match serde_json::from_slice(&req.body) {
            Ok(v) => v,
            Err(e) => {
                let (s, b) = rpc_refusal(400, &Value::Null, PARSE_ERROR, format!("parse error: {e}"));
                conn.respond(s, &[], Some(&b)).await?;
                return Ok(true);
            }
        };
        if !msg.is_object() {
            let (s, b) = rpc_refusal(
                400,
                &Value::Null,
                INVALID_REQUEST,
                "send one JSON-RPC message per POST (no batches over HTTP)",
            );
            conn.respond(s, &[], Some(&b)).await?;
            return Ok(true);
        }
        let backend = match &session {
            Some(id) => {
                // Looked up before the 404 is written: a client slow to read
                // it must not hold the sessions borrowed while another
                // client starts or ends one.
                let found = self.sessions.borrow().0.get(id).cloned();
                match found {
                    Some(b) => b,
                    None => {
                        let (s, b) = rpc_refusal(404, &Value::Null, INVALID_REQUEST, "unknown or ended session");
                        conn.respond(s, &[], Some(&b)).await?;
                        return Ok(true);
                    }
                }
            }
            None if msg.get("method").and_then(Value::as_str) == Some("initialize") => {
                Backend::start(&self.cfg, &self.ex)
            }
            None => self.stateless.clone(),
        };
        let (Some(method), Some(id)) = (msg.get("method").and_then(Value::as_str), msg.get("id"))
        else {
            // A notification or a response to one of the server's requests.
            let mut msg = msg;
            if msg.get("method").and_then(Value::as_str) == Some("notifications/cancelled") {
                if let Some(r) = msg.pointer("/params/requestId").and_then(|c| backend.internal_of(c)) {
                    msg["params"]["requestId"] = r;
                }
            }
            backend.srv.on_line(msg.to_string().as_bytes()).await;
            conn.respond(202, &[], None).await?;
            return Ok(true);
        };
        let method = method.to_string();
        let client_id = id.clone();
        let modern = msg
            .pointer(&format!("/params/_meta/{}", PROTOCOL_VERSION_KEY.replace('/', "~1")))
            .and_then(Value::as_str)
            .and_then(Revision::parse)
            .is_some_and(super::wire::is_modern);
        if modern && session.is_none() {
            if let Err(e) = check_headers(&req, &msg, &method) {
                let (s, b) = rpc_refusal(
                    headers::HeaderMismatch::HTTP_STATUS,
                    &client_id,
                    headers::HeaderMismatch::CODE.into(),
                    e,
                );
                conn.respond(s, &[], Some(&b)).await?;
                return Ok(true);
            }
        }
        let (n, rx) = backend.open(client_id, req.accepts_sse());
        let mut msg = msg;
        msg["id"] = internal_id(n);
        backend.srv.on_line(msg.to_string().as_bytes()).await;
        let r = self
            .await_answer(conn, &backend, rx, modern, &method, session.is_none())
            .await;
        backend.open.borrow_mut().remove(&n);
        if r.is_err() && modern {
            // The client went away: stop the work (2026-07-28 cancels by disconnect).
            let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": internal_id(n)}});
            backend.srv.on_line(cancel.to_string().as_bytes()).await;
        }
        r
    }

    /// Stream what comes for the request until its answer; the answer
    /// decides the status (and, for a new session, its id).
    async fn await_answer(
        &self,
        conn: &mut Conn,
        backend: &Rc<Backend>,
        rx: Receiver<Delivery>,
        modern: bool,
        method: &str,
        sessionless: bool,
    ) -> std::io::Result<bool> {
        let mut streaming = false;
        while let Ok(d) = rx.recv().await {
            match d {
                Delivery::Message(m) => {
                    if !streaming {
                        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                                    Cache-Control: no-cache\r\nConnection: close\r\n\r\n";
                        conn.stream.write_all(head.as_bytes()).await?;
                        streaming = true;
                    }
                    conn.sse_event(&m).await?;
                }
                Delivery::Response(v) => {
                    if streaming {
                        conn.sse_event(&v).await?;
                        return Ok(false);
                    }
                    let code = v.pointer("/error/code").and_then(Value::as_i64);
                    let status = match code {
                        Some(c) if modern => mcpx_core::error::http_status(c),
                        _ => 200,
                    };
                    let sid = (sessionless && method == "initialize" && code.is_none())
                        .then(|| self.add_session(backend.clone()));
                    let extra: Vec<(&str, &str)> =
                        sid.iter().map(|s| ("Mcp-Session-Id", s.as_str())).collect();
                    conn.respond(status, &extra, Some(&v)).await?;
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}

/// An `Origin` (`http://host:port`) or `Host` (`host:port`) of this machine.
fn loopback_authority(v: &str) -> bool {
    let authority = v
        .strip_prefix("http://")
        .or_else(|| v.strip_prefix("https://"))
        .unwrap_or(v);
    let host = match authority.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => authority,
    };
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

fn text(v: Option<&Value>) -> Option<ParamValue<'_>> {
    v.and_then(Value::as_str).map(ParamValue::Str)
}

/// The 2026-07-28 routing headers against the body.
fn check_headers(req: &Request, msg: &Value, method: &str) -> Result<(), String> {
    let params = msg.get("params");
    let version = params
        .and_then(|p| p.pointer(&format!("/_meta/{}", PROTOCOL_VERSION_KEY.replace('/', "~1"))));
    let name = headers::name_source(method).and_then(|s| params?.get(s.field()));
    let checks = [
        (HeaderField::ProtocolVersion, headers::MCP_PROTOCOL_VERSION, text(version)),
        (HeaderField::Method, headers::MCP_METHOD, Some(ParamValue::Str(method))),
        (HeaderField::Name, headers::MCP_NAME, text(name)),
    ];
    for (field, header, body) in checks {
        headers::check(field, req.header(header), body).map_err(|e| e.to_string())?;
    }
    Ok(())
}
