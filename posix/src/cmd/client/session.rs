//! One MCP client session with a hub, for one command.
//!
//! The hub is reached through the same transports the hub itself uses for
//! its servers: a running hub over Streamable HTTP (`remote`), or `mcpx
//! serve` as a child on stdio (`supervise`), so a standalone command
//! behaves exactly like the hub. The session speaks MCP as a client:
//! `initialize` at 2025-11-25 and `notifications/initialized`, then
//! requests one at a time; it answers what the hub asks meanwhile (`ping`,
//! elicitation on the terminal) and reports progress.

use mcpx_core::error::ErrorCode;
use std::cell::Cell;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use smol::channel::{self, Receiver, Sender};
use smol::future::FutureExt as _;
use smol::{Task, Timer};

use super::{term, Failure};
use crate::cmd::cli::Target;
use crate::hub::{IdKey, Upward};
use crate::process::exec::Executor;
use mcpx_core::method::Method;
use crate::remote::{self, Remote, RemoteSpec};
use crate::hub::UpstreamId;
use crate::process::supervise::{self, ProcessSpec, Upstream};
use crate::servers::events::Events;

/// The revision the client asks for.
pub const REVISION: &str = "2025-11-25";
/// Messages from the hub waiting to be read; more means the hub floods us.
const MAX_QUEUED: usize = 4096;
/// Pages of one list read at most.
pub const MAX_PAGES: usize = 1000;

enum Event {
    Started,
    Message(Vec<u8>),
    Exited { reason: String, stderr: String },
}

/// The transports' reports, queued for the session.
struct Forward {
    tx: Sender<Event>,
    lost: Rc<Cell<bool>>,
}

impl Forward {
    fn push(&self, e: Event) {
        if self.tx.try_send(e).is_err() {
            self.lost.set(true);
        }
    }
}

impl Events for Forward {
    fn started(&self, _: UpstreamId) {
        self.push(Event::Started);
    }
    fn message(&self, _: UpstreamId, line: &[u8]) {
        self.push(Event::Message(line.to_vec()));
    }
    fn garbage(&self, _: UpstreamId, what: &str) {
        debug!("hub: {what}");
    }
    fn exited(&self, _: UpstreamId, reason: &str, stderr: &str, _: crate::hub::Next) {
        self.push(Event::Exited { reason: reason.to_string(), stderr: stderr.to_string() });
    }
}

enum Link {
    Child(Upstream),
    Http(Remote),
}

/// Where the hub is, as the user can act on it.
pub enum Hub {
    /// A running hub at this URL.
    Url { url: String, token: Option<String> },
    /// `mcpx serve` run for this command, with these arguments.
    Child { args: Vec<String> },
}

impl Hub {
    /// From the command line and the environment (`MCPX_URL`, `MCPX_TOKEN`).
    pub fn from_target(t: &Target) -> Hub {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let url = t.url.clone().or_else(|| if t.config.is_none() { env("MCPX_URL") } else { None });
        match url {
            Some(url) => Hub::Url { url, token: t.token.clone().or_else(|| env("MCPX_TOKEN")).filter(|t| !t.is_empty()) },
            None => {
                let mut args = vec!["serve".to_string()];
                if let Some(c) = &t.config {
                    args.extend(["--config".to_string(), c.display().to_string()]);
                }
                Hub::Child { args }
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            Hub::Url { url, .. } => format!("the hub at {url}"),
            Hub::Child { args } => format!("the hub (`mcpx {}`)", args.join(" ")),
        }
    }

    /// What to check when it cannot be reached.
    fn hint(&self) -> &'static str {
        match self {
            Hub::Url { .. } => "is `mcpx serve --http` running there? check --url, and --token or MCPX_TOKEN if it needs one",
            Hub::Child { .. } => "check the config with `mcpx serve --check`",
        }
    }
}

pub struct Session {
    link: Link,
    task: Option<Task<()>>,
    rx: Receiver<Event>,
    lost: Rc<Cell<bool>>,
    /// Ctrl-C (see [`watch_interrupts`]).
    interrupt: Receiver<()>,
    next_id: u64,
    timeout: Duration,
    what: String,
    /// The hub's `initialize` result.
    pub init: Value,
    /// A question from a server was refused for want of a terminal.
    pub input_refused: bool,
}

/// What a wait for the hub brought.
enum Got {
    Message(Value),
    Exited(Failure),
}

impl Session {
    /// Connects (or starts the hub) and initializes.
    pub async fn open(ex: &Rc<Executor>, hub: &Hub, timeout: Duration, interrupt: Receiver<()>) -> Result<Session, Failure> {
        let (tx, rx) = channel::bounded(MAX_QUEUED);
        let lost = Rc::new(Cell::new(false));
        let events: Rc<dyn Events> = Rc::new(Forward { tx, lost: lost.clone() });
        let (link, task) = match hub {
            Hub::Url { url, token } => {
                let spec = RemoteSpec {
                    name: "hub".into(),
                    url: url.clone(),
                    headers: token.iter().map(|t| ("Authorization".to_string(), format!("Bearer {t}"))).collect(),
                    ca_file: None,
                    timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                    mode: remote::Mode::StreamableHttp,
                    oauth: None,
                };
                spec.check().map_err(|e| Failure::Unreachable(format!("--url: {e}")))?;
                let opts = remote::Options { connect_timeout: timeout.min(Duration::from_secs(10)), ..remote::Options::default() };
                let (r, task) = remote::spawn(ex, 0, spec, opts, events, None);
                (Link::Http(r), task)
            }
            Hub::Child { args } => {
                let exe = std::env::current_exe()
                    .map_err(|e| Failure::Unreachable(format!("cannot find this program to run the hub: {e}")))?;
                // The hub is mcpx itself: its own variables (MCPX_LOG,
                // MCPX_LIMITS, an MCPX_TOKEN the config reads) go with it,
                // set explicitly so that no inheritance rule for servers
                // keeps them back.
                let own = std::env::vars_os()
                    .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                    .filter(|(k, _)| k.starts_with("MCPX_"))
                    .collect();
                let spec = ProcessSpec {
                    name: "hub".into(),
                    command: exe.display().to_string(),
                    args: args.clone(),
                    env: own,
                    cwd: None::<PathBuf>,
                    env_policy: crate::process::childenv::Policy::default(),
                };
                let (u, task) = supervise::spawn(ex, 0, spec, supervise::Options::default(), events);
                (Link::Child(u), task)
            }
        };
        let mut s = Session {
            link,
            task: Some(task),
            rx,
            lost,
            interrupt,
            next_id: 0,
            timeout,
            what: hub.describe(),
            init: Value::Null,
            input_refused: false,
        };
        match s.handshake(hub).await {
            Ok(()) => Ok(s),
            Err(e) => {
                s.close().await;
                Err(e)
            }
        }
    }

    /// Waits for the transport, then `initialize` and `notifications/initialized`.
    async fn handshake(&mut self, hub: &Hub) -> Result<(), Failure> {
        let cannot = |why: String| match hub {
            // The hub itself refused: the advice for an upstream's headers is for the wrong hop.
            Hub::Url { token, .. } if why.contains(remote::AUTH_HINT) => Failure::Unreachable(why.replace(remote::AUTH_HINT, hub_refused(token.is_some(), &why))),
            _ => Failure::Unreachable(format!("{why} ({})", hub.hint())),
        };
        match self.next(Instant::now() + self.timeout).await {
            Some(Ok(Event::Started)) => {}
            Some(Ok(Event::Exited { reason, stderr })) => return Err(cannot(exit_text(&self.what, &reason, &stderr))),
            Some(Err(f)) => return Err(f),
            Some(Ok(Event::Message(_))) | None => {
                return Err(cannot(format!("{} did not start within {} s", self.what, self.timeout.as_secs())))
            }
        }
        let params = json!({
            "protocolVersion": REVISION,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "mcpx-cli", "version": env!("CARGO_PKG_VERSION")},
        });
        self.init = self.request("initialize", params, &mut |_| {}).await.map_err(|f| match f {
            Failure::Failed(m) | Failure::Unreachable(m) => cannot(m),
            other => other,
        })?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), Upward::Notification { method: Some(Method::Initialized) })
    }

    /// The next transport event before `deadline`; `Err` when messages were lost.
    async fn next(&mut self, deadline: Instant) -> Option<Result<Event, Failure>> {
        if self.lost.get() {
            return Some(Err(Failure::Failed(format!("{} sent more than {MAX_QUEUED} messages at once", self.what))));
        }
        let recv = async { self.rx.recv().await.ok().map(Ok) };
        let interrupted = async {
            match self.interrupt.recv().await {
                Ok(()) => Some(Err(Failure::Interrupted)),
                Err(_) => smol::future::pending().await,
            }
        };
        let timer = async {
            Timer::at(deadline).await;
            None
        };
        interrupted.or(recv).or(timer).await
    }

    /// Sends `msg`, which `about` describes (for the HTTP transport).
    fn send(&self, msg: &Value, about: Upward) -> Result<(), Failure> {
        self.send_bytes(serde_json::to_vec(msg).expect("a Value serializes"), about)
    }

    fn send_bytes(&self, bytes: Vec<u8>, about: Upward) -> Result<(), Failure> {
        let sent = match &self.link {
            Link::Child(u) => u.send(bytes).map_err(|(e, _)| e),
            Link::Http(r) => r.send(bytes, about).map_err(|(e, _)| e),
        };
        sent.map_err(|e| Failure::Unreachable(format!("cannot send to {}: {e}", self.what)))
    }

    /// Sends request `method` and waits for its answer, answering the hub's
    /// own requests meanwhile; `progress` gets each `notifications/progress`
    /// of the request (which also extends the wait).
    pub async fn request(&mut self, method: &str, mut params: Value, progress: &mut dyn FnMut(&Value)) -> Result<Value, Failure> {
        self.next_id += 1;
        let id = self.next_id;
        let token = format!("mcpx-cli-{id}");
        if method == "tools/call" {
            params["_meta"] = json!({"progressToken": token});
        }
        let about = Upward::Request { id: IdKey::new(id.to_string().as_bytes()), method: Method::known(method), modern: None, #[cfg(feature = "traces")] traceparent: None };
        if let Err(e) = self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}), about) {
            return Err(self.why_gone(e).await);
        }
        let mut deadline = Instant::now() + self.timeout;
        loop {
            let msg = match self.wait(deadline).await {
                Some(Got::Message(m)) => m,
                Some(Got::Exited(Failure::Interrupted)) => {
                    self.cancel(method, id, "interrupted (Ctrl-C)");
                    return Err(Failure::Interrupted);
                }
                Some(Got::Exited(f)) => return Err(f),
                None => {
                    self.cancel(method, id, "timed out in mcpx");
                    return Err(Failure::Failed(format!(
                        "{method}: no answer from {} within {} s (--timeout)",
                        self.what,
                        self.timeout.as_secs()
                    )));
                }
            };
            match (msg.get("id"), msg.get("method").and_then(Value::as_str)) {
                (Some(i), None) if *i == json!(id) => return answer(method, msg),
                (Some(_), None) => debug!("hub: answer to an unknown request: {msg}"),
                (Some(rid), Some(m)) => {
                    let reply = self.serve_request(m, msg.get("params").unwrap_or(&Value::Null)).await;
                    match reply {
                        Ok(result) => self.send(&json!({"jsonrpc": "2.0", "id": rid, "result": result}), Upward::Answer)?,
                        Err((code, message)) => {
                            let id = serde_json::to_vec(rid).expect("a Value serializes");
                            self.send_bytes(crate::bytes::written::error(Some(&id), code, &message, None), Upward::Answer)?
                        }
                    }
                }
                (None, Some("notifications/progress")) => {
                    let p = msg.get("params").unwrap_or(&Value::Null);
                    if p.get("progressToken").and_then(Value::as_str) == Some(token.as_str()) {
                        deadline = Instant::now() + self.timeout;
                        progress(p);
                    }
                }
                (None, Some(other)) => debug!("hub: {other}"),
                (None, None) => debug!("hub: a message that is neither request nor answer: {msg}"),
            }
        }
    }

    /// Tells the hub that request `id` is given up.
    fn cancel(&self, method: &str, id: u64, reason: &str) {
        // cancellation-client-must-not-cancel-initialize
        if method != "initialize" {
            let _ = self.send(
                &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": reason}}),
                Upward::Notification { method: Some(Method::Cancelled) },
            );
        }
    }

    /// Why sending failed: the transport's exit report (with the hub's
    /// stderr) when it comes soon, else `e`.
    async fn why_gone(&mut self, e: Failure) -> Failure {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            match self.wait(deadline).await {
                Some(Got::Exited(f)) => return f,
                Some(Got::Message(_)) => {}
                None => return e,
            }
        }
    }

    /// The next message, or why there will be none.
    async fn wait(&mut self, deadline: Instant) -> Option<Got> {
        loop {
            match self.next(deadline).await? {
                Ok(Event::Message(bytes)) => match serde_json::from_slice(&bytes) {
                    Ok(v) => return Some(Got::Message(v)),
                    Err(e) => debug!("hub: unparsable message: {e}"),
                },
                Ok(Event::Started) => {}
                Ok(Event::Exited { reason, stderr }) => {
                    return Some(Got::Exited(Failure::Unreachable(exit_text(&self.what, &reason, &stderr))))
                }
                Err(f) => return Some(Got::Exited(f)),
            }
        }
    }

    /// Answers a request of the hub (on behalf of a server).
    async fn serve_request(&mut self, method: &str, params: &Value) -> Result<Value, (ErrorCode, String)> {
        match method {
            "ping" => Ok(json!({})),
            "elicitation/create" => {
                if !term::stdin_is_terminal() {
                    self.input_refused = true;
                    let msg = params.get("message").and_then(Value::as_str).unwrap_or("");
                    eprintln!("mcpx: a server asks for input ({msg:?}), but stdin is not a terminal: declined");
                    return Ok(json!({"action": "decline"}));
                }
                term::elicit(params).await
            }
            _ => Err((ErrorCode::MethodNotFound, format!("mcpx's command-line client does not answer {method}"))),
        }
    }

    /// Every item of a paginated list (`tools/list`, ...): `key` of each page.
    pub async fn list_all(&mut self, method: &str, key: &str) -> Result<Vec<Value>, Failure> {
        let mut items = Vec::new();
        let mut cursor: Option<Value> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self.request(method, params, &mut |_| {}).await?;
            if let Some(a) = page.get(key).and_then(Value::as_array) {
                items.extend(a.iter().cloned());
            }
            match page.get("nextCursor") {
                Some(c) if !c.is_null() => cursor = Some(c.clone()),
                _ => return Ok(items),
            }
        }
        Err(Failure::Failed(format!("{method}: more than {MAX_PAGES} pages; gave up")))
    }

    /// Ends the session: the child hub stops its servers, the HTTP session
    /// is deleted.
    pub async fn close(mut self) {
        match &self.link {
            Link::Child(u) => u.shutdown(),
            Link::Http(r) => r.shutdown(),
        }
        if let Some(task) = self.task.take() {
            let limit = async {
                Timer::after(Duration::from_secs(10)).await;
            };
            task.or(limit).await;
        }
    }
}

/// The result of a response, or its error as a failure.
fn answer(method: &str, msg: Value) -> Result<Value, Failure> {
    if let Some(e) = msg.get("error") {
        let code = e.get("code").and_then(Value::as_i64).unwrap_or(0);
        let text = e.get("message").and_then(Value::as_str).unwrap_or("(no message)");
        let data = match e.get("data") {
            Some(d) if !d.is_null() => format!(" ({d})"),
            _ => String::new(),
        };
        return Err(Failure::Failed(format!("{method} failed: error {code}: {text}{data}")));
    }
    Ok(msg.get("result").cloned().unwrap_or(Value::Null))
}

/// Why the hub went away, with the end of its stderr.
/// What to check when the hub answers 401 (or 403) to the CLI itself.
fn hub_refused(sent_token: bool, why: &str) -> &'static str {
    match (why.contains("HTTP 401"), sent_token) {
        (true, false) => " (the hub wants a token: give it with --token or MCPX_TOKEN)",
        (true, true) => " (the hub refused the token: check --token or MCPX_TOKEN)",
        (false, _) => " (the hub refused this client: check --token or MCPX_TOKEN, and that this token's principal may connect)",
    }
}

fn exit_text(what: &str, reason: &str, stderr: &str) -> String {
    let tail: Vec<&str> = stderr.lines().rev().take(10).collect();
    let mut s = format!("{what}: {reason}");
    if !tail.is_empty() {
        s.push_str("\n  its last output:");
        for l in tail.iter().rev() {
            s.push_str("\n    ");
            s.push_str(l);
        }
    }
    s
}

/// Ctrl-C (SIGINT) and SIGTERM, watched on the executor: the first ends the
/// session properly (the request in flight cancelled, the hub's session
/// closed), a second exits at once.
pub fn watch_interrupts(ex: &Executor) -> (Receiver<()>, Task<()>) {
    use async_signal::{Signal, Signals};
    use smol::stream::StreamExt as _;
    let (tx, rx) = channel::bounded(1);
    let task = ex.spawn(async move {
        let Ok(mut signals) = Signals::new([Signal::Int, Signal::Term]) else { return };
        let mut seen = false;
        while signals.next().await.is_some() {
            if seen {
                std::process::exit(130);
            }
            seen = true;
            let _ = tx.try_send(());
        }
    });
    (rx, task)
}
