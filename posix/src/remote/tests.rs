//! The transport against scripted HTTP servers on 127.0.0.1 (std threads,
//! one per connection), with the test playing the hub.

use super::*;
use crate::servers::testing::{run, until, Log};

use std::io::{BufRead, BufReader, Read, Write};
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::sync::{Arc, Mutex as StdMutex};

/// One request as the scripted server saw it.
#[derive(Clone, Debug)]
struct Req {
    method: String,
    target: String,
    /// Lowercased names, in order.
    headers: Vec<(String, String)>,
    body: String,
    /// Which connection (accept order) it came on.
    conn: usize,
}

impl Req {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
    fn rpc_method(&self) -> String {
        self.json()["method"].as_str().unwrap_or("").to_string()
    }
    fn rpc_id(&self) -> serde_json::Value {
        self.json()["id"].clone()
    }
}

/// A scripted answer.
enum Reply {
    /// Status, extra headers, JSON body (Content-Length).
    Json(u16, Vec<(&'static str, String)>, String),
    /// 200 `text/event-stream`, chunked, written piece by piece (a piece
    /// `"<sleep N>"` waits N ms instead), then the connection is closed.
    Sse(Vec<(&'static str, String)>, Box<dyn Iterator<Item = String> + Send>),
    /// A bare status with an empty body.
    Status(u16),
    /// These bytes as they are, then the connection is closed.
    Raw(Vec<u8>),
    /// Read the request, then say nothing for this many ms and close.
    Silence(u64),
}

fn sse(pieces: Vec<String>) -> Reply {
    Reply::Sse(vec![], Box::new(pieces.into_iter()))
}

type Handler = dyn Fn(&Req) -> Reply + Send + Sync;

struct Server {
    url: String,
    port: u16,
    log: Arc<StdMutex<Vec<Req>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Server {
    fn start(handler: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> Server {
        Server::start_on(TcpListener::bind("127.0.0.1:0").unwrap(), Arc::new(handler), None)
    }

    fn start_on(listener: TcpListener, handler: Arc<Handler>, tls: Option<TlsCfg>) -> Server {
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(StdMutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (log2, stop2) = (log.clone(), stop.clone());
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            let mut n = 0;
            // Polled, so that `stop` can close the port.
            while !stop2.load(std::sync::atomic::Ordering::SeqCst) {
                let s = match listener.accept() {
                    Ok((s, _)) => s,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(2));
                        continue;
                    }
                    Err(_) => return,
                };
                s.set_nonblocking(false).unwrap();
                let (h, log, tls) = (handler.clone(), log2.clone(), tls.clone());
                std::thread::spawn(move || match tls {
                    None => serve_conn(s, n, &*h, &log),
                    Some(cfg) => serve_tls(s, n, &*h, &log, cfg),
                });
                n += 1;
            }
        });
        Server { url: format!("http://127.0.0.1:{port}/mcp"), port, log, stop }
    }

    /// Closes the port: new connections are refused.
    fn stop(&self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn requests(&self) -> Vec<Req> {
        self.log.lock().unwrap().iter().filter(|r| r.method != "TLS").cloned().collect()
    }
}

#[cfg(feature = "tls")]
type TlsCfg = Arc<rustls::ServerConfig>;
#[cfg(not(feature = "tls"))]
type TlsCfg = std::convert::Infallible;

#[cfg(not(feature = "tls"))]
fn serve_tls(_: std::net::TcpStream, _: usize, _: &Handler, _: &StdMutex<Vec<Req>>, cfg: TlsCfg) {
    match cfg {}
}

/// The TLS handshake, a note of the SNI name it carried, then HTTP.
#[cfg(feature = "tls")]
fn serve_tls(s: std::net::TcpStream, n: usize, h: &Handler, log: &StdMutex<Vec<Req>>, cfg: TlsCfg) {
    let conn = rustls::ServerConnection::new(cfg).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, s);
    if tls.conn.complete_io(&mut tls.sock).is_err() {
        return;
    }
    let sni = tls.conn.server_name().unwrap_or("").to_string();
    log.lock().unwrap().push(Req { method: "TLS".into(), target: sni, headers: vec![], body: String::new(), conn: n });
    serve_conn(tls, n, h, log)
}

fn serve_conn<S: Read + Write>(s: S, conn: usize, h: &Handler, log: &StdMutex<Vec<Req>>) {
    let mut r = BufReader::new(s);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, target) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
        let mut headers = Vec::new();
        loop {
            let mut l = String::new();
            if r.read_line(&mut l).unwrap_or(0) == 0 {
                return;
            }
            let l = l.trim_end();
            if l.is_empty() {
                break;
            }
            let (n, v) = l.split_once(':').unwrap();
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        let len: usize = headers.iter().find(|(n, _)| n == "content-length").map_or(0, |(_, v)| v.parse().unwrap());
        let mut body = vec![0u8; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let req = Req { method, target, headers, body: String::from_utf8(body).unwrap(), conn };
        log.lock().unwrap().push(req.clone());
        let s = r.get_mut();
        let keep = match h(&req) {
            Reply::Json(status, hs, body) => {
                let mut head = format!("HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n", body.len());
                for (n, v) in hs {
                    head.push_str(&format!("{n}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = s.write_all(head.as_bytes());
                let _ = s.write_all(body.as_bytes());
                true
            }
            Reply::Status(status) => {
                let _ = s.write_all(format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\n\r\n").as_bytes());
                true
            }
            Reply::Sse(hs, pieces) => {
                let mut head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n".to_string();
                for (n, v) in hs {
                    head.push_str(&format!("{n}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = s.write_all(head.as_bytes());
                let _ = s.flush();
                for p in pieces {
                    if let Some(ms) = p.strip_prefix("<sleep ").and_then(|t| t.strip_suffix('>')) {
                        std::thread::sleep(Duration::from_millis(ms.parse().unwrap()));
                        continue;
                    }
                    let _ = s.write_all(format!("{:x}\r\n{p}\r\n", p.len()).as_bytes());
                    let _ = s.flush();
                }
                let _ = s.write_all(b"0\r\n\r\n");
                let _ = s.flush();
                false
            }
            Reply::Raw(bytes) => {
                let _ = s.write_all(&bytes);
                false
            }
            Reply::Silence(ms) => {
                std::thread::sleep(Duration::from_millis(ms));
                false
            }
        };
        let _ = s.flush();
        if !keep {
            return;
        }
    }
}

fn spec(url: &str) -> RemoteSpec {
    RemoteSpec {
        name: "remote".into(),
        url: url.into(),
        headers: vec![("Authorization".into(), "Bearer s3cret".into())],
        ca_file: None,
        timeout_ms: 5_000,
        mode: Mode::Auto,
        oauth: None,
    }
}

fn fast() -> Options {
    Options {
        restart: crate::servers::backoff::Policy {
            min: Duration::from_millis(50),
            max: Duration::from_millis(200),
            ..Default::default()
        },
        sse_retry: Duration::from_millis(20),
        timeout_grace: Duration::ZERO,
        ..Options::default()
    }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpx","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn init_result(version: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":"{version}","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"t","version":"1"}}}}}}"#)
}

fn tools_result(id: &serde_json::Value) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[]}}}}"#)
}

/// What the hub says of `msg` when it sends it ([`Upward`]): a request
/// with its id, modern (with the 2026-07-28 headers the hub builds, from
/// `schema` for a tool call) when its `_meta` names that revision or it is
/// `server/discover`; a notification; an answer. The test plays the hub.
fn describe(msg: &[u8], schema: Option<&serde_json::Value>) -> Upward {
    // Bytes that are no message (a test of refusals): described as an answer.
    let Ok(env) = Envelope::parse(msg) else { return Upward::Answer };
    let method = env.method_str().and_then(Method::known);
    match env.kind() {
        Kind::Request => {
            let modern = env.protocol_version().and_then(|v| v.as_str()).is_some_and(|v| v.eq_str(V26)) || method == Some(Method::ServerDiscover);
            let headers = modern.then(|| crate::hub::modern_headers(env.method_str().unwrap(), env.params(), &|_| schema));
            Upward::Request { id: crate::hub::IdKey::new(env.id_bytes().unwrap()), method, modern: headers, #[cfg(feature = "traces")] traceparent: None }
        }
        Kind::Notification => Upward::Notification { method },
        _ => Upward::Answer,
    }
}

/// Sends as the hub does: the message with what it is.
trait AsHub {
    fn put(&self, msg: Vec<u8>) -> Result<(), (SendError, Vec<u8>)>;
}

impl AsHub for Remote {
    fn put(&self, msg: Vec<u8>) -> Result<(), (SendError, Vec<u8>)> {
        let about = describe(&msg, None);
        self.send(msg, about)
    }
}

/// Plays the hub's handshake: waits for `started`, sends initialize, waits
/// for its result, sends initialized.
async fn handshake(r: &Remote, log: &Log) {
    assert!(until(Duration::from_secs(5), || log.count("started") == 1).await, "{:?}", log.all());
    r.put(INIT.as_bytes().to_vec()).unwrap();
    assert!(until(Duration::from_secs(5), || log.answer(0.into()).is_some()).await, "{:?}", log.all());
    r.put(INITIALIZED.as_bytes().to_vec()).unwrap();
}

/// Only these header fields may reach a remote server.
const ALLOWED: &[&str] =
    &["host", "user-agent", "accept", "authorization", "content-type", "content-length", "mcp-session-id", "mcp-protocol-version", "last-event-id"];

// covers: streamable-http-client-post-every-message
// covers: streamable-http-client-accept-both
// covers: streamable-http-client-supports-json-and-sse
// covers: streamable-http-client-echoes-session
// covers: streamable-http-protocol-version-header-is-negotiated
// covers: lifecycle-http-protocol-version-header
// covers: streamable-http-sse-comment-keepalive
// covers: streamable-http-client-may-get
// covers: streamable-http-get-accept-sse
// covers: streamable-http-client-delete-session
// covers: streamable-http-post-body-single
#[test]
fn streamable_http_json_sse_session_version_and_delete() {
    let srv = Server::start(|req| match (req.method.as_str(), req.rpc_method().as_str()) {
        ("POST", "initialize") => Reply::Json(200, vec![("mcp-session-id", "sess-1".into())], init_result("2025-06-18")),
        ("POST", "notifications/initialized") => Reply::Status(202),
        ("GET", _) => Reply::Status(405),
        ("POST", "tools/list") => sse(
            vec![
                ": keep-alive comment\n\n".into(),
                "retry: 500\nid: ev-1\n".into(),
                // A server→client request first, split over two data lines.
                "data: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\n".into(),
                "data: \"method\":\"roots/list\"}\n\n".into(),
                "<sleep 50>".into(),
                format!("id: ev-2\ndata: {}\n\n", tools_result(&req.rpc_id())),
            ],
        ),
        ("POST", "tools/call") => Reply::Json(200, vec![], format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[]}}}}"#, req.rpc_id())),
        ("POST", "") => Reply::Status(202), // the hub's answer to roots/list
        ("DELETE", _) => Reply::Status(204),
        _ => Reply::Status(500),
    });
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, spec(&srv.url), fast(), log.clone(), None);
        handshake(&r, &log).await;
        r.put(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec()).unwrap();
        assert!(until(Duration::from_secs(5), || log.answer(1.into()).is_some()).await, "{:?}", log.all());
        let msgs = log.msgs();
        let srv_req = msgs.iter().find(|m| m["id"] == "srv-1").expect("server request delivered");
        assert_eq!(srv_req["method"], "roots/list");
        r.put(br#"{"jsonrpc":"2.0","id":"srv-1","result":{"roots":[]}}"#.to_vec()).unwrap();
        r.put(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}"#.to_vec()).unwrap();
        assert!(until(Duration::from_secs(5), || log.answer(2.into()).is_some()).await, "{:?}", log.all());
        assert!(until(Duration::from_secs(5), || srv.requests().iter().any(|q| q.method == "GET")).await);
        r.shutdown();
        task.await;
        assert_eq!(log.all().last().unwrap(), "exited stopped | ");
        assert_eq!(log.count("msg"), 4, "{:?}", log.all());

        let reqs = srv.requests();
        let kinds: Vec<String> = reqs.iter().map(|q| format!("{} {}", q.method, q.rpc_method())).collect();
        assert!(kinds.starts_with(&["POST initialize".into(), "POST notifications/initialized".into()]), "{kinds:?}");
        assert_eq!(kinds.last().unwrap(), "DELETE ");
        for q in &reqs {
            assert_eq!(q.target, "/mcp");
            assert_eq!(q.header("authorization"), Some("Bearer s3cret"), "{q:?}");
            for (n, _) in &q.headers {
                assert!(ALLOWED.contains(&n.as_str()), "header {n} sent upstream: {q:?}");
            }
            match q.method.as_str() {
                "POST" => {
                    assert_eq!(q.header("accept"), Some("application/json, text/event-stream"));
                    assert_eq!(q.header("content-type"), Some("application/json"));
                    assert!(q.json().is_object(), "one message per POST: {}", q.body);
                }
                "GET" => assert_eq!(q.header("accept"), Some("text/event-stream")),
                _ => {}
            }
            if q.rpc_method() == "initialize" {
                assert_eq!(q.header("mcp-session-id"), None);
                assert_eq!(q.header("mcp-protocol-version"), None);
            } else {
                assert_eq!(q.header("mcp-session-id"), Some("sess-1"), "{q:?}");
                assert_eq!(q.header("mcp-protocol-version"), Some("2025-06-18"), "{q:?}");
            }
        }
        // The answer to the server's request went back as a POST.
        assert!(reqs.iter().any(|q| q.method == "POST" && q.json()["id"] == "srv-1" && q.json()["result"].is_object()));
        // The GET came only after notifications/initialized was accepted.
        let get = reqs.iter().position(|q| q.method == "GET").unwrap();
        assert!(get > 1);
    });
}

// covers: streamable-http-client-reinit-on-404
#[test]
fn expired_session_reinitializes_once_and_retries() {
    let sessions = Arc::new(StdMutex::new(0u32));
    let s2 = sessions.clone();
    let srv = Server::start(move |req| {
        let mut n = s2.lock().unwrap();
        match (req.method.as_str(), req.rpc_method().as_str()) {
            ("POST", "initialize") => {
                *n += 1;
                Reply::Json(200, vec![("mcp-session-id", format!("sess-{n}"))], init_result("2025-03-26"))
            }
            ("GET", _) => Reply::Status(405),
            // The first session expires as soon as it is used for a request.
            (_, _) if req.header("mcp-session-id") == Some("sess-1") && req.rpc_method() == "tools/list" => Reply::Status(404),
            ("POST", "notifications/initialized") => Reply::Status(202),
            ("POST", "tools/list") => Reply::Json(200, vec![], tools_result(&req.rpc_id())),
            _ => Reply::Status(204),
        }
    });
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, spec(&srv.url), fast(), log.clone(), None);
        handshake(&r, &log).await;
        r.put(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#.to_vec()).unwrap();
        assert!(until(Duration::from_secs(5), || log.answer(7.into()).is_some()).await, "{:?}", log.all());
        assert!(log.answer(7.into()).unwrap()["result"].is_object());
        r.shutdown();
        task.await;
        // The hub saw one initialize result only, and no error.
        assert_eq!(log.msgs().iter().filter(|m| m["id"] == 0).count(), 1);
        let seq: Vec<String> = srv
            .requests()
            .iter()
            .filter(|q| q.method == "POST")
            .map(|q| format!("{} {}", q.rpc_method(), q.header("mcp-session-id").unwrap_or("-")))
            .collect();
        assert_eq!(
            seq,
            [
                "initialize -",
                "notifications/initialized sess-1",
                "tools/list sess-1",
                "initialize -",
                "notifications/initialized sess-2",
                "tools/list sess-2",
            ]
        );
        assert_eq!(srv.requests().last().unwrap().header("mcp-session-id"), Some("sess-2"));
    });
}

// covers: streamable-http-client-resume-with-last-event-id
// covers: streamable-http-client-polls-after-close
// covers: streamable-http-client-respects-retry
// covers: streamable-http-multiple-streams, tasks-sse-any-stream
#[test]
fn get_stream_and_cut_post_stream_resume_with_last_event_id() {
    let gets = Arc::new(StdMutex::new(Vec::<(Instant, Option<String>)>::new()));
    let g2 = gets.clone();
    let srv = Server::start(move |req| match (req.method.as_str(), req.rpc_method().as_str()) {
        ("POST", "initialize") => Reply::Json(200, vec![("mcp-session-id", "s".into())], init_result("2025-11-25")),
        ("POST", "notifications/initialized") => Reply::Status(202),
        // The POST stream is cut after a priming event, before the response.
        ("POST", "tools/list") => sse(vec!["id: post-1\nretry: 150\ndata:\n\n".into()]),
        ("GET", _) => {
            let last = req.header("last-event-id").map(str::to_string);
            g2.lock().unwrap().push((Instant::now(), last.clone()));
            match last.as_deref() {
                // The standalone stream: one notification, then closed.
                None => sse(
                    vec!["retry: 100\nid: get-1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n".into()],
                ),
                Some("post-1") => sse(vec![format!("id: post-2\ndata: {}\n\n", tools_result(&3.into()))]),
                // The standalone stream, resumed: stays quiet.
                Some(_) => sse(vec!["<sleep 3000>".into()]),
            }
        }
        _ => Reply::Status(202),
    });
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, spec(&srv.url), fast(), log.clone(), None);
        handshake(&r, &log).await;
        assert!(until(Duration::from_secs(5), || log.msgs().iter().any(|m| m["method"] == "notifications/tools/list_changed")).await);
        r.put(br#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#.to_vec()).unwrap();
        assert!(until(Duration::from_secs(5), || log.answer(3.into()).is_some()).await, "{:?}", log.all());
        assert!(until(Duration::from_secs(5), || gets.lock().unwrap().iter().any(|g| g.1.as_deref() == Some("get-1"))).await);
        r.shutdown();
        task.await;
        let gets = gets.lock().unwrap().clone();
        let first = gets.iter().find(|g| g.1.is_none()).unwrap().0;
        let resumed = gets.iter().find(|g| g.1.as_deref() == Some("get-1")).unwrap().0;
        assert!(resumed - first >= Duration::from_millis(100), "retry: 100 respected");
        assert!(gets.iter().any(|g| g.1.as_deref() == Some("post-1")), "{gets:?}");
    });
}

// covers: http-sse-client-backcompat-probe-400-404-405
// covers: http-sse-client-post-to-endpoint
#[test]
fn falls_back_to_http_sse_on_405() {
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let rx = Arc::new(StdMutex::new(rx));
    let srv = Server::start(move |req| match (req.method.as_str(), req.target.as_str()) {
        ("POST", "/mcp") => Reply::Status(405),
        ("GET", "/mcp") => {
            // The stream: the endpoint, then whatever the POSTs produce,
            // until the answer to tools/list.
            let rx = rx.clone();
            let first = std::iter::once("event: endpoint\ndata: /messages?sessionId=abc\n\n".to_string());
            let rest = std::iter::from_fn(move || {
                let m = rx.lock().unwrap().recv_timeout(Duration::from_secs(5)).ok()?;
                (m != "END").then(|| format!("event: message\ndata: {m}\n\n"))
            });
            Reply::Sse(vec![], Box::new(first.chain(rest)))
        }
        ("POST", "/messages?sessionId=abc") => {
            let m = req.json();
            if m["method"] == "initialize" {
                tx.send(init_result("2024-11-05")).unwrap();
            } else if m["method"] == "tools/list" {
                tx.send(tools_result(&m["id"])).unwrap();
                tx.send("END".into()).unwrap();
            }
            Reply::Status(202)
        }
        _ => Reply::Status(404),
    });
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, spec(&srv.url), fast(), log.clone(), None);
        assert!(until(Duration::from_secs(5), || log.count("started") == 1).await);
        r.put(INIT.as_bytes().to_vec()).unwrap();
        r.put(INITIALIZED.as_bytes().to_vec()).unwrap();
        r.put(br#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#.to_vec()).unwrap();
        assert!(until(Duration::from_secs(10), || log.answer(4.into()).is_some()).await, "{:?}", log.all());
        assert_eq!(log.answer(0.into()).unwrap()["result"]["protocolVersion"], "2024-11-05");
        // The stream's end ends the session; it is then tried again.
        assert!(until(Duration::from_secs(5), || log.count("exited") >= 1).await, "{:?}", log.all());
        r.shutdown();
        task.await;
        let reqs = srv.requests();
        let posts: Vec<&Req> = reqs.iter().filter(|q| q.target.starts_with("/messages")).collect();
        assert_eq!(posts.len(), 3);
        for q in &reqs {
            assert_eq!(q.header("authorization"), Some("Bearer s3cret"));
            assert_eq!(q.header("mcp-session-id"), None);
        }
    });
}

#[test]
fn refuses_an_endpoint_on_another_origin() {
    let srv = Server::start(move |req| match req.method.as_str() {
        "POST" => Reply::Status(404),
        _ => sse(vec!["event: endpoint\ndata: http://127.0.0.2:1/steal\n\n".into(), "<sleep 2000>".into()]),
    });
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, spec(&srv.url), fast(), log.clone(), None);
        assert!(until(Duration::from_secs(5), || log.count("started") == 1).await);
        r.put(INIT.as_bytes().to_vec()).unwrap();
        assert!(until(Duration::from_secs(5), || log.count("exited") == 1).await);
        r.shutdown();
        task.await;
        assert!(log.all().iter().any(|e| e.contains("another origin")), "{:?}", log.all());
        assert!(srv.requests().iter().all(|q| !q.target.contains("steal")));
    });
}

#[test]
fn slow_answers_time_out_and_http_errors_become_jsonrpc_errors() {
    let srv = Server::start(|req| match req.rpc_method().as_str() {
        "initialize" => Reply::Json(200, vec![], init_result("2025-06-18")),
        "notifications/initialized" => Reply::Status(202),
        "slow" => Reply::Silence(3000),
        "unauthorized" => Reply::Status(401),
        "rpcerror" => Reply::Json(
            400,
            vec![],
            format!(r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32602,"message":"bad"}}}}"#, req.rpc_id()),
        ),
        _ if req.method == "GET" => Reply::Status(405),
        _ => Reply::Status(500),
    });
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let mut s = spec(&srv.url);
        s.timeout_ms = 300;
        let (r, task) = spawn(&ex, 0, s, fast(), log.clone(), None);
        handshake(&r, &log).await;
        let t0 = Instant::now();
        r.put(br#"{"jsonrpc":"2.0","id":10,"method":"slow"}"#.to_vec()).unwrap();
        r.put(br#"{"jsonrpc":"2.0","id":11,"method":"unauthorized"}"#.to_vec()).unwrap();
        r.put(br#"{"jsonrpc":"2.0","id":12,"method":"rpcerror"}"#.to_vec()).unwrap();
        r.put(br#"{"jsonrpc":"2.0","id":13,"method":"other"}"#.to_vec()).unwrap();
        assert!(until(Duration::from_secs(5), || log.answer(10.into()).is_some()).await, "{:?}", log.all());
        let waited = t0.elapsed();
        assert!(waited >= Duration::from_millis(300) && waited < Duration::from_millis(2500), "{waited:?}");
        let msg = |id: i32| log.answer(id.into()).unwrap()["error"]["message"].as_str().unwrap_or("").to_string();
        assert!(msg(10).contains("server remote") && msg(10).contains("no response within"), "{}", msg(10));
        assert!(msg(11).contains("HTTP 401") && msg(11).contains("headers"), "{}", msg(11));
        assert_eq!(log.answer(12.into()).unwrap()["error"]["code"], -32602);
        assert!(msg(13).contains("HTTP 500"), "{}", msg(13));
        // None of this ends the session.
        assert_eq!(log.count("exited"), 0);
        r.shutdown();
        task.await;
    });
}

#[test]
fn connection_refused_is_retried_with_backoff_and_recovers() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let url = format!("http://127.0.0.1:{port}/mcp");
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let t0 = Instant::now();
        let (r, task) = spawn(&ex, 0, spec(&url), fast(), log.clone(), None);
        assert!(until(Duration::from_secs(5), || log.count("exited") >= 4).await);
        // 50 + 100 + 200 ms of backoff at least.
        assert!(t0.elapsed() >= Duration::from_millis(350), "{:?}", t0.elapsed());
        assert_eq!(log.count("started"), 0);
        assert!(log.all()[0].starts_with("exited unreachable: cannot connect to 127.0.0.1"), "{:?}", log.all());
        assert!(r.put(b"{}".to_vec()).is_err());
        // The server comes up: the next attempt starts a session.
        let Ok(listener) = TcpListener::bind(("127.0.0.1", port)) else { return };
        let _srv = Server::start_on(listener, Arc::new(|_: &Req| Reply::Status(202)), None);
        assert!(until(Duration::from_secs(5), || log.count("started") == 1).await);
        r.shutdown();
        task.await;
    });
}

#[test]
fn one_unreachable_server_does_not_affect_another() {
    let srv = Server::start(|req| match req.rpc_method().as_str() {
        "initialize" => Reply::Json(200, vec![], init_result("2025-06-18")),
        "tools/list" => Reply::Json(200, vec![], tools_result(&req.rpc_id())),
        _ if req.method == "GET" => Reply::Status(405),
        _ => Reply::Status(202),
    });
    let url = srv.url.clone();
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, spec(&url), fast(), log.clone(), None);
        handshake(&r, &log).await;
        // Nothing listens on port 1.
        let mut s = spec("http://127.0.0.1:1/mcp");
        s.name = "gone".into();
        let (r2, task2) = spawn(&ex, 1, s, fast(), log.clone(), None);
        assert!(until(Duration::from_secs(5), || log.count("exited") >= 1).await);
        // The first one is unaffected.
        r.put(br#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#.to_vec()).unwrap();
        assert!(until(Duration::from_secs(5), || log.answer(5.into()).is_some()).await, "{:?}", log.all());
        assert_eq!(log.count("started"), 1);
        r2.shutdown();
        task2.await;
        r.shutdown();
        task.await;
    });
}

#[test]
fn config_checks() {
    let mut s = spec("http://127.0.0.1:9/mcp");
    assert!(s.check().is_ok());
    s.headers = vec![("Mcp-Session-Id".into(), "x".into())];
    assert!(s.check().unwrap_err().to_string().contains("set by mcpx"));
    s.headers = vec![("X-Key".into(), "a\r\nInjected: 1".into())];
    assert!(s.check().unwrap_err().to_string().contains("line break"));
    s.headers = vec![("bad name".into(), "x".into())];
    assert!(s.check().is_err());
    s.headers = vec![];
    s.ca_file = Some("/nonexistent/ca.pem".into());
    assert!(s.check().unwrap_err().to_string().contains("https"));
    s.url = "https://127.0.0.1:9/mcp".into();
    #[cfg(feature = "tls")]
    assert!(s.check().unwrap_err().to_string().contains("caFile"));
    #[cfg(not(feature = "tls"))]
    assert!(s.check().unwrap_err().to_string().contains("without TLS"));
    s.url = "ftp://x/".into();
    assert!(s.check().unwrap_err().to_string().contains("scheme"));
}

#[cfg(feature = "tls")]
mod tls {
    use super::*;

    /// A CA named `ca_name` and a certificate for `localhost` signed by it.
    fn pki(ca_name: &str) -> (String, Arc<rustls::ServerConfig>) {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, ca_name);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["localhost".to_string()]).unwrap().signed_by(&key, &ca, &ca_key).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let cfg = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap();
        (ca.pem(), Arc::new(cfg))
    }

    /// A handshake in memory between a client trusting `roots` and `server`
    /// (whose certificate is for `localhost`); the client's error if any.
    fn handshake_with(roots: rustls::RootCertStore, server: Arc<rustls::ServerConfig>) -> Result<(), rustls::Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
        let mut c = rustls::ClientConnection::new(Arc::new(client), name).unwrap();
        let mut s = rustls::ServerConnection::new(server).unwrap();
        for _ in 0..16 {
            if !c.is_handshaking() && !s.is_handshaking() {
                return Ok(());
            }
            let mut buf = Vec::new();
            while c.wants_write() {
                c.write_tls(&mut buf).unwrap();
            }
            s.read_tls(&mut buf.as_slice()).unwrap();
            // The server's complaint about the client's alert is not the point.
            let _ = s.process_new_packets();
            let mut buf = Vec::new();
            while s.wants_write() {
                s.write_tls(&mut buf).unwrap();
            }
            c.read_tls(&mut buf.as_slice()).unwrap();
            c.process_new_packets()?;
        }
        panic!("handshake did not finish in 16 rounds");
    }

    /// Writes `pem` to a fresh file named `name` in this test's directory.
    fn pem_file(test: &str, name: &str, pem: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("mcpx-roots-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, pem).unwrap();
        path
    }

    // The edge build's roots (no webpki-roots): SSL_CERT_FILE is the bundle,
    // and the certificates in it are what the server's certificate is checked against.
    #[test]
    fn system_roots_come_from_ssl_cert_file() {
        let (ca_pem, server) = pki("mcpx bundle CA");
        let (other_pem, _) = pki("another CA");
        let bundle = pem_file("env", "bundle.pem", &format!("{other_pem}{ca_pem}"));
        let decoy = pem_file("env", "decoy.pem", &other_pem);
        let decoy = decoy.to_str().unwrap();
        // SSL_CERT_FILE wins over the usual paths.
        let roots = super::roots::system_bundle(Some(&bundle), &[decoy]).unwrap().expect("a bundle");
        assert_eq!(roots.len(), 2);
        handshake_with(roots, server.clone()).expect("the bundle's CA issued the certificate");
        // Without the issuing CA in the bundle the certificate is refused.
        let roots = super::roots::system_bundle(None, &[decoy]).unwrap().expect("a bundle");
        let err = handshake_with(roots, server).unwrap_err();
        assert!(matches!(err, rustls::Error::InvalidCertificate(_)), "{err:?}");
    }

    #[test]
    fn system_roots_take_the_first_usual_path_that_exists() {
        let (first, server) = pki("first CA");
        let first = pem_file("paths", "first.pem", &first);
        let second = pem_file("paths", "second.pem", &pki("second CA").0);
        let missing = first.with_file_name("missing.pem");
        let paths = [missing.to_str().unwrap(), first.to_str().unwrap(), second.to_str().unwrap()];
        let roots = super::roots::system_bundle(None, &paths).unwrap().expect("a bundle");
        assert_eq!(roots.len(), 1);
        handshake_with(roots, server).expect("the first existing bundle is used");
    }

    #[test]
    fn no_system_bundle_is_a_clear_error() {
        let missing = std::env::temp_dir().join(format!("mcpx-roots-none-{}/ca.pem", std::process::id()));
        let missing = missing.to_str().unwrap();
        // Nothing at the usual paths: no bundle, and the error says where it looked and what to do.
        assert!(super::roots::system_bundle(None, &[missing]).unwrap().is_none());
        let err = super::error::TlsError::NoBundle(super::roots::SYSTEM_BUNDLES).to_string();
        for path in super::roots::SYSTEM_BUNDLES {
            assert!(err.contains(path), "{err}");
        }
        assert!(err.contains("SSL_CERT_FILE") && err.contains("\"caFile\"") && err.contains("ca-bundle"), "{err}");
        // SSL_CERT_FILE naming a missing file, or one without certificates, is an error.
        let err = super::roots::system_bundle(Some(std::path::Path::new(missing)), &[]).unwrap_err().to_string();
        assert!(err.starts_with(&format!("SSL_CERT_FILE {missing}: cannot read it")), "{err}");
        let empty = pem_file("none", "empty.pem", "not a certificate\n");
        let err = super::roots::system_bundle(Some(&empty), &[]).unwrap_err().to_string();
        assert!(err.contains("no usable CA certificate"), "{err}");
    }

    #[test]
    fn https_with_a_private_ca_file_and_sni() {
        let (ca_pem, cfg) = pki("mcpx test CA");
        let dir = std::env::temp_dir().join(format!("mcpx-remote-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca_file = dir.join("ca.pem");
        std::fs::write(&ca_file, ca_pem).unwrap();
        let other_ca_file = dir.join("other-ca.pem");
        std::fs::write(&other_ca_file, pki("another CA").0).unwrap();
        let handler: Arc<Handler> = Arc::new(|req: &Req| match (req.method.as_str(), req.rpc_method().as_str()) {
            ("POST", "initialize") => Reply::Json(200, vec![("mcp-session-id", "tls-1".into())], init_result("2025-11-25")),
            ("GET", _) => Reply::Status(405),
            ("POST", "tools/list") => Reply::Json(200, vec![], tools_result(&req.rpc_id())),
            _ => Reply::Status(202),
        });
        let srv = Server::start_on(TcpListener::bind("127.0.0.1:0").unwrap(), handler, Some(cfg));
        let url = format!("https://localhost:{}/mcp", srv.port);
        run(Duration::from_secs(20), |ex| async move {
            // Without the CA file the certificate is refused.
            let log = Rc::new(Log::default());
            let (r, task) = spawn(&ex, 0, spec(&url), fast(), log.clone(), None);
            assert!(until(Duration::from_secs(5), || log.count("exited") >= 1).await);
            r.shutdown();
            task.await;
            assert!(log.all()[0].contains("TLS handshake"), "{:?}", log.all());
            assert!(log.all()[0].contains("name its certificate in \"caFile\""), "{:?}", log.all());
            assert_eq!(log.count("started"), 0);

            // With a caFile of another CA, the error says that this file does not do.
            let log = Rc::new(Log::default());
            let mut s = spec(&url);
            s.ca_file = Some(other_ca_file.clone());
            let (r, task) = spawn(&ex, 0, s, fast(), log.clone(), None);
            assert!(until(Duration::from_secs(5), || log.count("exited") >= 1).await);
            r.shutdown();
            task.await;
            let want = format!("no certificate in caFile {} issued it", other_ca_file.display());
            assert!(log.all()[0].contains(&want), "{:?}", log.all());
            assert_eq!(log.count("started"), 0);

            let log = Rc::new(Log::default());
            let mut s = spec(&url);
            s.ca_file = Some(ca_file.clone());
            let (r, task) = spawn(&ex, 0, s, fast(), log.clone(), None);
            handshake(&r, &log).await;
            r.put(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec()).unwrap();
            assert!(until(Duration::from_secs(5), || log.answer(1.into()).is_some()).await, "{:?}", log.all());
            r.shutdown();
            task.await;
            let all = srv.log.lock().unwrap().clone();
            assert!(all.iter().any(|q| q.method == "TLS" && q.target == "localhost"), "SNI sent");
            let reqs = srv.requests();
            assert!(reqs.iter().all(|q| q.header("authorization") == Some("Bearer s3cret")));
            assert_eq!(reqs.iter().find(|q| q.rpc_method() == "tools/list").unwrap().header("mcp-session-id"), Some("tls-1"));
        });
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_server_answering_get_with_404_is_not_reinitialized() {
    let srv = Server::start(|req| match (req.method.as_str(), req.rpc_method().as_str()) {
        ("POST", "initialize") => Reply::Json(200, vec![("mcp-session-id", "s".into())], init_result("2025-06-18")),
        ("POST", "tools/list") => Reply::Json(200, vec![], tools_result(&req.rpc_id())),
        ("POST", _) => Reply::Status(202),
        _ => Reply::Status(404),
    });
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, spec(&srv.url), fast(), log.clone(), None);
        handshake(&r, &log).await;
        assert!(until(Duration::from_secs(5), || srv.requests().iter().any(|q| q.method == "GET")).await);
        Timer::after(Duration::from_millis(200)).await;
        r.put(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec()).unwrap();
        assert!(until(Duration::from_secs(5), || log.answer(1.into()).is_some()).await, "{:?}", log.all());
        r.shutdown();
        task.await;
        let reqs = srv.requests();
        assert_eq!(reqs.iter().filter(|q| q.rpc_method() == "initialize").count(), 1);
        assert_eq!(reqs.iter().filter(|q| q.method == "GET").count(), 1);
    });
}

/// A session with `url` under a 4096-byte message cap, after the
/// handshake, with one request sent per `(id, method)`.
async fn capped(ex: &Rc<Executor>, url: &str, calls: &[(i32, &str)]) -> (Remote, Task<()>, Rc<Log>) {
    let log = Rc::new(Log::default());
    let opts = Options { max_message: 4096, ..fast() };
    let (r, task) = spawn(ex, 0, spec(url), opts, log.clone(), None);
    handshake(&r, &log).await;
    for (id, m) in calls {
        r.put(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{m}"}}"#).into_bytes()).unwrap();
    }
    (r, task, log)
}

#[test]
fn limits_on_heads_bodies_and_events_and_other_framings() {
    let srv = Server::start(|req| {
        let id = req.rpc_id();
        match req.rpc_method().as_str() {
            "initialize" => Reply::Json(200, vec![("mcp-session-id", "s".into())], init_result("2025-06-18")),
            "notifications/initialized" => Reply::Status(202),
            // HTTP/1.0, body until close.
            "close" => Reply::Raw(format!("HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n{}", tools_result(&id)).into_bytes()),
            "bighead" => Reply::Raw(format!("HTTP/1.1 200 OK\r\nx-pad: {}\r\n\r\n", "a".repeat(70_000)).into_bytes()),
            "bigbody" => Reply::Json(200, vec![], format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"pad":"{}"}}}}"#, "a".repeat(5000))),
            "bigevent" => sse(vec![
                format!("data: {{\"pad\":\"{}\"}}\n\n", "a".repeat(5000)),
                format!("data: {}\n\n", tools_result(&id)),
            ]),
            "smuggle" => Reply::Raw(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n".to_vec()),
            _ if req.method == "GET" => Reply::Status(405),
            _ => Reply::Status(202),
        }
    });
    run(Duration::from_secs(20), |ex| async move {
        let (r, task, log) = capped(&ex, &srv.url, &[(1, "close"), (2, "bighead"), (3, "bigbody"), (4, "bigevent"), (5, "smuggle")]).await;
        assert!(until(Duration::from_secs(5), || (1..=5).all(|i| log.answer(i.into()).is_some())).await, "{:?}", log.all());
        let err = |id: i32| log.answer(id.into()).unwrap()["error"]["message"].as_str().unwrap_or("").to_string();
        assert!(log.answer(1.into()).unwrap()["result"].is_object());
        assert!(err(2).contains("response head is over the 65536-byte limit"), "{}", err(2));
        assert!(err(3).contains("over the 4096-byte limit"), "{}", err(3));
        assert!(log.answer(4.into()).unwrap()["result"].is_object());
        // Its head shows no reply: reported with its POST's request, which its result answers later.
        assert_eq!(log.count("too_large 5"), 1, "{:?}", log.all());
        assert!(log.all().iter().any(|e| e.starts_with(r#"too_large 5"#) && e.contains(r#"on Some("4"): over the 4096-byte limit of one message from a remote server"#)));
        assert!(err(5).contains("framing"), "{}", err(5));
        assert_eq!(log.count("exited"), 0);
        r.shutdown();
        task.await;
    });
}

#[test]
fn an_oversized_reply_event_ends_its_requests_stream_and_the_session_goes_on() {
    let pad = "a".repeat(5000);
    let srv = Server::start(move |req| {
        let id = req.rpc_id();
        let progress = format!(r#"data: {{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{id},"progress":1}}}}"#);
        match req.rpc_method().as_str() {
            "initialize" => Reply::Json(200, vec![("mcp-session-id", "s".into())], init_result("2025-06-18")),
            "notifications/initialized" => Reply::Status(202),
            // The TypeScript SDK's order: the id last.
            "idlast" => sse(vec![format!("{progress}\n\n"), format!("data: {{\"result\":{{\"pad\":\"{pad}\"}},\"jsonrpc\":\"2.0\",\"id\":{id}}}\n\n")]),
            // A reply whose id is in neither edge: the stream's own request.
            "noid" => sse(vec![format!("data: {{\"result\":{{\"pad\":\"{pad}\"}},\"id\":{id},\"jsonrpc\":\"2.0\"}}\r\n\r\n")]),
            "tools/list" => Reply::Json(200, vec![], tools_result(&id)),
            _ if req.method == "GET" => Reply::Status(405),
            _ => Reply::Status(202),
        }
    });
    run(Duration::from_secs(20), |ex| async move {
        let (r, task, log) = capped(&ex, &srv.url, &[(6, "idlast"), (7, "noid")]).await;
        assert!(until(Duration::from_secs(5), || log.count("too_large") == 2).await, "{:?}", log.all());
        for id in [6, 7] {
            let on = format!(r#"on Some("{id}"): over the 4096-byte limit"#);
            assert_eq!(log.all().iter().filter(|e| e.starts_with("too_large") && e.contains(&on)).count(), 1, "{:?}", log.all());
        }
        // The same session answers the next request; the dropped replies'
        // streams were not resumed into a second, transport error for them.
        r.put(br#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#.to_vec()).unwrap();
        assert!(until(Duration::from_secs(5), || log.answer(8.into()).is_some()).await, "{:?}", log.all());
        assert!(log.answer(6.into()).is_none() && log.answer(7.into()).is_none(), "{:?}", log.all());
        let resumed = srv.requests().iter().filter(|q| q.method == "GET" && q.header("last-event-id").is_some()).count();
        assert_eq!(resumed, 0, "no resumption of a stream whose reply came");
        assert_eq!(log.count("exited"), 0);
        r.shutdown();
        task.await;
    });
}

#[test]
fn keep_alive_connections_are_reused() {
    let srv = Server::start(|req| match req.rpc_method().as_str() {
        "initialize" => Reply::Json(200, vec![], init_result("2025-06-18")),
        "tools/list" => Reply::Json(200, vec![], tools_result(&req.rpc_id())),
        _ if req.method == "GET" => Reply::Status(405),
        _ => Reply::Status(202),
    });
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, spec(&srv.url), fast(), log.clone(), None);
        handshake(&r, &log).await;
        for id in 1..=10 {
            r.put(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#).into_bytes()).unwrap();
            assert!(until(Duration::from_secs(5), || log.answer(id.into()).is_some()).await);
        }
        r.shutdown();
        task.await;
        let reqs = srv.requests();
        let conns: std::collections::BTreeSet<usize> = reqs.iter().map(|q| q.conn).collect();
        assert!(conns.len() <= 2, "{} requests on {} connections", reqs.len(), conns.len());
    });
}

#[test]
fn an_invalid_session_id_is_not_echoed() {
    let srv = Server::start(|req| match req.rpc_method().as_str() {
        "initialize" => Reply::Raw(
            format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: a b\r\ncontent-length: {}\r\n\r\n{}", init_result("2025-06-18").len(), init_result("2025-06-18")).into_bytes(),
        ),
        _ => Reply::Status(202),
    });
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, spec(&srv.url), fast(), log.clone(), None);
        assert!(until(Duration::from_secs(5), || log.count("started") == 1).await);
        r.put(INIT.as_bytes().to_vec()).unwrap();
        assert!(until(Duration::from_secs(5), || log.count("exited") == 1).await, "{:?}", log.all());
        r.shutdown();
        task.await;
        assert!(log.all().iter().any(|e| e.contains("Mcp-Session-Id")), "{:?}", log.all());
    });
}

#[test]
fn a_server_that_goes_away_ends_the_session_without_waiting_for_a_request() {
    let srv = Server::start(|req| match (req.method.as_str(), req.rpc_method().as_str()) {
        ("POST", "initialize") => Reply::Json(200, vec![("mcp-session-id", "s".into())], init_result("2025-06-18")),
        ("POST", _) => Reply::Status(202),
        // The standalone stream drops after a while, like a server going down.
        ("GET", _) => sse(vec!["retry: 10\n\n".into(), "<sleep 300>".into()]),
        _ => Reply::Status(204),
    });
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, spec(&srv.url), fast(), log.clone(), None);
        handshake(&r, &log).await;
        assert!(until(Duration::from_secs(5), || srv.requests().iter().any(|q| q.method == "GET")).await);
        srv.stop();
        assert!(until(Duration::from_secs(5), || log.count("exited") == 1).await, "{:?}", log.all());
        assert!(log.all().iter().any(|e| e.starts_with("exited unreachable: cannot connect")), "{:?}", log.all());
        r.shutdown();
        task.await;
    });
}

// ---- 2026-07-28 (modern) requests ----

const V26: &str = "2026-07-28";

/// A modern request as the hub sends it: `params._meta` names the version.
fn modern(id: u64, method: &str, params: serde_json::Value) -> Vec<u8> {
    let mut p = params;
    p["_meta"] = serde_json::json!({ "io.modelcontextprotocol/protocolVersion": V26 });
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": p}).to_string().into_bytes()
}

fn discover_result(id: &serde_json::Value) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"supportedVersions":["{V26}"],"capabilities":{{"tools":{{}}}}}}}}"#)
}

fn call_result(id: &serde_json::Value) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}}}}"#)
}

fn rpc_error(id: &serde_json::Value, code: i64) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":"no"}}}}"#)
}

/// The hub's side of the catalog: a tool schema per generation, and a
/// re-list that sends `tools/list` through the transport, as the hub does.
#[derive(Default)]
struct TestCatalog {
    schemas: RefCell<Vec<serde_json::Value>>,
    relists: Cell<usize>,
    remote: RefCell<Option<Remote>>,
}

impl Catalog for TestCatalog {
    fn headers_again(&self, id: UpstreamId, msg: &[u8]) -> Option<ModernHeaders> {
        assert_eq!(id, 0);
        match describe(msg, self.schema().as_ref()) {
            Upward::Request { modern, .. } => modern,
            _ => None,
        }
    }
    fn relist(&self, _: UpstreamId) {
        self.relists.set(self.relists.get() + 1);
        let n = self.relists.get() as u64;
        if let Some(r) = &*self.remote.borrow() {
            r.put(modern(900 + n, "tools/list", serde_json::json!({}))).unwrap();
        }
    }
    #[cfg(feature = "secrets")]
    fn ask_to_authorize(&self, _: UpstreamId, _: &crate::remote::oauth::delegated::Ask) {}
}

impl TestCatalog {
    fn new(schemas: Vec<serde_json::Value>) -> Rc<TestCatalog> {
        Rc::new(TestCatalog { schemas: RefCell::new(schemas), ..TestCatalog::default() })
    }

    /// The tool schema as last listed: each re-list brings the next one
    /// (the last one stays).
    fn schema(&self) -> Option<serde_json::Value> {
        let s = self.schemas.borrow();
        s.get(self.relists.get().min(s.len().saturating_sub(1))).cloned()
    }

    /// Sends `msg` to `r` as the hub does, its headers from the schema as listed now.
    fn put(&self, r: &Remote, msg: Vec<u8>) {
        let about = describe(&msg, self.schema().as_ref());
        r.send(msg, about).unwrap();
    }
}

// covers: streamable-http-standard-headers-required
#[test]
fn the_transport_sends_what_the_hub_describes_not_what_it_reads_in_the_bytes() {
    // The bytes look like a legacy request (no `_meta`), the hub says it is
    // a modern request with these headers: a transport that read the bytes
    // would send session headers and no `Mcp-Name`.
    let srv = Server::start(|req| match req.rpc_method().as_str() {
        "tools/call" => Reply::Json(200, vec![], call_result(&req.rpc_id())),
        _ => Reply::Status(500),
    });
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, spec(&srv.url), fast(), log.clone(), None);
        assert!(until(Duration::from_secs(5), || log.count("started") == 1).await);
        let msg = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"in-the-bytes"}}"#.to_vec();
        let headers = vec![
            ("mcp-protocol-version".to_string(), V26.as_bytes().to_vec()),
            ("mcp-method".to_string(), b"tools/call".to_vec()),
            ("mcp-name".to_string(), b"described".to_vec()),
        ];
        let about = Upward::Request { id: crate::hub::IdKey::new(b"7"), method: Some(Method::ToolsCall), modern: Some(headers), #[cfg(feature = "traces")] traceparent: None };
        r.send(msg, about).unwrap();
        assert!(until(Duration::from_secs(5), || log.answer(7.into()).is_some()).await, "{:?}", log.all());
        r.shutdown();
        task.await;
        let reqs = srv.requests();
        assert_eq!(reqs.len(), 1, "{reqs:?}");
        assert_eq!(reqs[0].header("mcp-name"), Some("described"));
        assert_eq!(reqs[0].header("mcp-protocol-version"), Some(V26));
        assert_eq!(reqs[0].header("mcp-session-id"), None);
    });
}

// covers: streamable-http-standard-headers-required
// covers: streamable-http-client-sends-metadata-headers
// covers: streamable-http-client-header-construction
// covers: streamable-http-mcp-name-base64
// covers: streamable-http-param-value-encoding
// covers: versioning-dual-era-http-detect
#[test]
fn modern_requests_carry_the_2026_headers_and_no_session() {
    let srv = Server::start(|req| match req.rpc_method().as_str() {
        "server/discover" => Reply::Json(200, vec![], discover_result(&req.rpc_id())),
        "tools/list" => Reply::Json(200, vec![], tools_result(&req.rpc_id())),
        "tools/call" => Reply::Json(200, vec![], call_result(&req.rpc_id())),
        _ => Reply::Status(500),
    });
    let schema = serde_json::json!({"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}});
    let catalog = TestCatalog::new(vec![schema]);
    let cat = catalog.clone();
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, spec(&srv.url), fast(), log.clone(), Some(cat.clone()));
        assert!(until(Duration::from_secs(5), || log.count("started") == 1).await);
        cat.put(&r, modern(1, "server/discover", serde_json::json!({})));
        cat.put(&r, modern(2, "tools/list", serde_json::json!({})));
        cat.put(&r, modern(3, "tools/call", serde_json::json!({"name": "weather", "arguments": {"n": -7}})));
        assert!(until(Duration::from_secs(5), || log.answer(3.into()).is_some()).await, "{:?}", log.all());
        assert_eq!(log.answer(1.into()).unwrap()["result"]["supportedVersions"][0], V26);
        r.shutdown();
        task.await;
        let reqs = srv.requests();
        assert_eq!(reqs.len(), 3, "no GET stream, no DELETE: {reqs:?}");
        for q in &reqs {
            assert_eq!(q.method, "POST");
            assert_eq!(q.header("mcp-protocol-version"), Some(V26));
            assert_eq!(q.header("mcp-method"), Some(q.rpc_method().as_str()));
            assert_eq!(q.header("mcp-session-id"), None);
            assert_eq!(q.header("authorization"), Some("Bearer s3cret"));
        }
        let call = reqs.iter().find(|q| q.rpc_method() == "tools/call").unwrap();
        assert_eq!(call.header("mcp-name"), Some("weather"));
        assert_eq!(call.header("mcp-param-n"), Some("-7"));
        assert_eq!(reqs[0].header("mcp-name"), None);
    });
    assert_eq!(catalog.relists.get(), 0);
}

// covers: streamable-http-client-relist-on-header-mismatch
#[test]
fn header_mismatch_relists_the_tools_and_retries_once() {
    // The server's tool annotates "region"; the hub's first listing said "zone".
    let srv = Server::start(|req| match req.rpc_method().as_str() {
        "tools/list" => Reply::Json(200, vec![], tools_result(&req.rpc_id())),
        "tools/call" if req.json()["params"]["name"] == "never" => Reply::Json(400, vec![], rpc_error(&req.rpc_id(), -32020)),
        "tools/call" if req.header("mcp-param-region") == Some("eu") => Reply::Json(200, vec![], call_result(&req.rpc_id())),
        "tools/call" => Reply::Json(400, vec![], rpc_error(&req.rpc_id(), -32020)),
        _ => Reply::Status(500),
    });
    let old = serde_json::json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Zone"}}});
    let new = serde_json::json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}});
    let catalog = TestCatalog::new(vec![old, new]);
    let cat = catalog.clone();
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, spec(&srv.url), fast(), log.clone(), Some(cat.clone()));
        *cat.remote.borrow_mut() = Some(r.clone());
        assert!(until(Duration::from_secs(5), || log.count("started") == 1).await);
        cat.put(&r, modern(1, "tools/call", serde_json::json!({"name": "weather", "arguments": {"region": "eu"}})));
        assert!(until(Duration::from_secs(5), || log.answer(1.into()).is_some()).await);
        assert_eq!(log.answer(1.into()).unwrap()["result"]["content"], serde_json::json!([]));
        assert!(log.answer(901.into()).is_some(), "the re-list's answer reaches the hub too");
        // A tool that keeps failing: one re-list, one retry, then the error.
        cat.put(&r, modern(2, "tools/call", serde_json::json!({"name": "never", "arguments": {}})));
        assert!(until(Duration::from_secs(5), || log.answer(2.into()).is_some()).await, "{:?}", log.all());
        assert_eq!(log.answer(2.into()).unwrap()["error"]["code"], -32020);
        r.shutdown();
        task.await;
        let reqs = srv.requests();
        let calls: Vec<&Req> = reqs.iter().filter(|q| q.rpc_method() == "tools/call").collect();
        assert_eq!(calls.len(), 4, "{calls:?}");
        assert_eq!(calls[0].header("mcp-param-zone"), Some("eu"));
        assert_eq!(calls[1].header("mcp-param-region"), Some("eu"));
        assert_eq!(reqs.iter().filter(|q| q.rpc_method() == "tools/list").count(), 2);
    });
    assert_eq!(catalog.relists.get(), 2);
}

/// A legacy Streamable HTTP server that answers the `server/discover`
/// probe as `refuse` says, then speaks 2025-11-25 after `initialize`.
fn legacy_server(refuse: fn(&Req) -> Reply) -> Server {
    Server::start(move |req| match (req.method.as_str(), req.rpc_method().as_str()) {
        ("POST", "server/discover") => refuse(req),
        ("POST", "initialize") => Reply::Json(200, vec![("mcp-session-id", "s-1".into())], init_result("2025-11-25")),
        ("POST", "notifications/initialized") => Reply::Status(202),
        ("POST", "tools/list") => Reply::Json(200, vec![], tools_result(&req.rpc_id())),
        ("GET", _) => Reply::Status(405),
        ("DELETE", _) => Reply::Status(204),
        _ => Reply::Status(500),
    })
}

/// Plays the hub's era detection: the probe, and on an error `initialize`.
async fn probe_then_initialize(r: &Remote, log: &Log) -> serde_json::Value {
    assert!(until(Duration::from_secs(5), || log.count("started") == 1).await);
    r.put(br#"{"jsonrpc":"2.0","id":"probe","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#.to_vec())
        .unwrap();
    assert!(until(Duration::from_secs(5), || log.answer("probe".into()).is_some()).await, "{:?}", log.all());
    let answer = log.answer("probe".into()).unwrap();
    assert!(answer.get("error").is_some(), "{answer}");
    handshake(r, log).await;
    r.put(br#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#.to_vec()).unwrap();
    assert!(until(Duration::from_secs(5), || log.answer(5.into()).is_some()).await, "{:?}", log.all());
    answer
}

// covers: versioning-dual-era-http-detect
#[test]
fn era_detection_a_jsonrpc_error_in_a_400_goes_to_the_hub_as_is() {
    for code in [-32601, -32602, -32022] {
        let srv = legacy_server(match code {
            -32601 => |q: &Req| Reply::Json(400, vec![], rpc_error(&q.rpc_id(), -32601)),
            -32602 => |q: &Req| Reply::Json(400, vec![], rpc_error(&q.rpc_id(), -32602)),
            _ => |q: &Req| {
                let id = q.rpc_id();
                Reply::Json(400, vec![], format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32022,"message":"Unsupported protocol version","data":{{"supported":["2025-11-25"]}}}}}}"#))
            }
        });
        run(Duration::from_secs(20), |ex| async move {
            let log = Rc::new(Log::default());
            let (r, task) = spawn(&ex, 0, spec(&srv.url), fast(), log.clone(), None);
            let answer = probe_then_initialize(&r, &log).await;
            assert_eq!(answer["error"]["code"], code, "{answer}");
            if code == -32022 {
                assert_eq!(answer["error"]["data"]["supported"][0], "2025-11-25");
            }
            r.shutdown();
            task.await;
            let reqs = srv.requests();
            let list = reqs.iter().find(|q| q.rpc_method() == "tools/list").unwrap();
            assert_eq!(list.header("mcp-session-id"), Some("s-1"));
            assert_eq!(list.header("mcp-protocol-version"), Some("2025-11-25"));
            assert_eq!(list.header("mcp-method"), None);
        });
    }
}

// covers: versioning-dual-era-http-detect
#[test]
fn era_detection_a_bare_400_404_or_405_leads_to_initialize() {
    for status in [400, 404, 405] {
        let srv = legacy_server(match status {
            400 => |_: &Req| Reply::Status(400),
            404 => |_: &Req| Reply::Status(404),
            _ => |_: &Req| Reply::Status(405),
        });
        run(Duration::from_secs(20), |ex| async move {
            let log = Rc::new(Log::default());
            let (r, task) = spawn(&ex, 0, spec(&srv.url), fast(), log.clone(), None);
            let answer = probe_then_initialize(&r, &log).await;
            assert!(answer["error"]["message"].as_str().unwrap().contains(&format!("HTTP {status}")), "{answer}");
            assert_eq!(log.count("exited"), 0, "{:?}", log.all());
            r.shutdown();
            task.await;
        });
    }
}

// covers: versioning-dual-era-http-detect
// covers: http-sse-client-backcompat-probe-400-404-405
#[test]
fn era_detection_then_http_sse_fallback() {
    // A 2024-11-05 HTTP+SSE server: every POST to the URL is a 405.
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let rx = Arc::new(StdMutex::new(rx));
    let srv = Server::start(move |req| match (req.method.as_str(), req.target.as_str()) {
        ("POST", "/mcp") => Reply::Status(405),
        ("GET", "/mcp") => {
            let rx = rx.clone();
            let first = std::iter::once("event: endpoint\ndata: /messages?s=1\n\n".to_string());
            let rest = std::iter::from_fn(move || {
                let m = rx.lock().unwrap().recv_timeout(Duration::from_secs(5)).ok()?;
                Some(format!("event: message\ndata: {m}\n\n"))
            });
            Reply::Sse(vec![], Box::new(first.chain(rest)))
        }
        ("POST", "/messages?s=1") => {
            let m = req.json();
            if m["method"] == "initialize" {
                tx.send(init_result("2024-11-05")).unwrap();
            } else if m["method"] == "tools/list" {
                tx.send(tools_result(&m["id"])).unwrap();
            }
            Reply::Status(202)
        }
        _ => Reply::Status(404),
    });
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (r, task) = spawn(&ex, 0, spec(&srv.url), fast(), log.clone(), None);
        probe_then_initialize(&r, &log).await;
        assert_eq!(log.answer(0.into()).unwrap()["result"]["protocolVersion"], "2024-11-05");
        r.shutdown();
        task.await;
        let reqs = srv.requests();
        let probe = &reqs[0];
        assert_eq!((probe.method.as_str(), probe.rpc_method().as_str()), ("POST", "server/discover"));
        assert_eq!(probe.header("mcp-protocol-version"), Some(V26));
        assert_eq!(reqs.iter().filter(|q| q.target.starts_with("/messages")).count(), 3);
    });
}

#[test]
fn a_listen_stream_may_stay_silent_longer_than_the_request_timeout() {
    let srv = Server::start(|req| match req.rpc_method().as_str() {
        "subscriptions/listen" | "tools/list" => {
            // Both streams open at once, then stay silent for three timeouts.
            sse(vec![": open\n\n".into(), "<sleep 900>".into(), format!("data: {}\n\n", tools_result(&req.rpc_id()))])
        }
        _ => Reply::Status(500),
    });
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let mut s = spec(&srv.url);
        s.timeout_ms = 300;
        let (r, task) = spawn(&ex, 0, s, fast(), log.clone(), None);
        assert!(until(Duration::from_secs(5), || log.count("started") == 1).await);
        r.put(modern(1, "subscriptions/listen", serde_json::json!({"notifications": {"toolsListChanged": true}}))).unwrap();
        r.put(modern(2, "tools/list", serde_json::json!({}))).unwrap();
        assert!(until(Duration::from_secs(5), || log.answer(1.into()).is_some() && log.answer(2.into()).is_some()).await, "{:?}", log.all());
        // The listen stream waited; an ordinary request's silence is a failure.
        assert!(log.answer(1.into()).unwrap().get("result").is_some(), "{:?}", log.answer(1.into()));
        assert!(log.answer(2.into()).unwrap().get("error").is_some(), "{:?}", log.answer(2.into()));
        r.shutdown();
        task.await;
    });
}

mod oauth;

/// A session of `spec` opened directly (no supervisor task), for tests that
/// look at a session's typed errors: the session and its fatal channel.
fn open_session(ex: &Rc<Executor>, spec: RemoteSpec, log: Rc<Log>) -> (Rc<Session>, Receiver<SessionError>, Sender<()>) {
    let (ctl_tx, ctl) = channel::bounded(1);
    let sh = Rc::new(Shared { out: RefCell::new(None), queued: Cell::new(0), max_bytes: 1 << 20, ctl: ctl_tx });
    let sup = Supervisor { id: 0, spec, opts: fast(), events: log, catalog: None, auth: None, ex: ex.clone(), sh, ctl };
    let (url, connector) = sup.prepare().unwrap();
    sup.open(url, Client::new(connector, 1))
}

/// Sends `msg` from the hub through the session, with what it is.
async fn dispatch(sess: &Rc<Session>, msg: &str) -> Result<(), SessionError> {
    sess.clone().dispatch(msg.as_bytes().to_vec(), describe(msg.as_bytes(), None)).await
}

#[test]
fn an_initialize_answered_http_500_is_the_status_error_of_the_initialize_step() {
    let srv = Server::start(|_| Reply::Json(500, vec![], r#"{"oops":true}"#.into()));
    run(Duration::from_secs(20), |ex| async move {
        let (sess, _fatal, _closed) = open_session(&ex, spec(&srv.url), Rc::new(Log::default()));
        let err = dispatch(&sess, INIT).await.unwrap_err();
        match &err {
            SessionError::Status { step: Step::Initialize, status: 500, body } => assert_eq!(body, br#"{"oops":true}"#),
            other => panic!("{other:?}"),
        }
        assert_eq!(srv.requests().len(), 1, "a 500 is no cue to fall back to HTTP+SSE");
    });
}

// covers: streamable-http-client-reinit-on-404
#[test]
fn a_failed_re_initialize_ends_the_session_with_the_cause_of_its_step() {
    let inits = Arc::new(StdMutex::new(0u32));
    let n2 = inits.clone();
    let srv = Server::start(move |req| match (req.method.as_str(), req.rpc_method().as_str()) {
        ("POST", "initialize") => {
            let mut n = n2.lock().unwrap();
            *n += 1;
            match *n {
                1 => Reply::Json(200, vec![("mcp-session-id", "sess-1".into())], init_result("2025-03-26")),
                _ => Reply::Status(503),
            }
        }
        ("GET", _) => Reply::Status(405),
        ("POST", "notifications/initialized") => Reply::Status(202),
        // The session expires as soon as it is used for a request.
        _ => Reply::Status(404),
    });
    run(Duration::from_secs(20), |ex| async move {
        let log = Rc::new(Log::default());
        let (sess, fatal, _closed) = open_session(&ex, spec(&srv.url), log.clone());
        dispatch(&sess, INIT).await.unwrap();
        dispatch(&sess, INITIALIZED).await.unwrap();
        dispatch(&sess, r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#).await.unwrap();
        let end = fatal.recv().or(async {
            Timer::after(Duration::from_secs(5)).await;
            panic!("the session did not end")
        });
        match end.await.unwrap() {
            SessionError::Reinitialize(cause) => {
                assert!(matches!(*cause, SessionError::Status { step: Step::Initialize, status: 503, .. }), "{cause:?}")
            }
            other => panic!("{other:?}"),
        }
        // The request is answered with the same cause.
        assert!(until(Duration::from_secs(5), || log.answer(7.into()).is_some()).await, "{:?}", log.all());
        let msg = log.answer(7.into()).unwrap()["error"]["message"].as_str().unwrap_or("").to_string();
        assert!(msg.contains("re-initializing failed") && msg.contains("HTTP 503"), "{msg}");
        // The second initialize went without the expired session.
        let reinit = srv.requests().into_iter().filter(|q| q.rpc_method() == "initialize").nth(1).expect("a second initialize");
        assert_eq!(reinit.header("mcp-session-id"), None);
    });
}
