//! The audit log: one JSON line per tool call, prompt get, resource read,
//! sampling/elicitation relay and refusal.
//!
//! [`Record::line`] is pure (the hub fills a [`Record`] at a request's
//! terminal outcome); [`Writer`] is the I/O adapter: a bounded queue the
//! hub pushes lines into without ever blocking, drained by one writer
//! thread into stderr or a size-rotated file. A full queue drops the line
//! and counts it ([`Writer::dropped`]).
//!
//! A line (shown in a readable order; the keys are written sorted):
//! `{"time":"2026-12-01T12:00:00.000Z","method":"tools/call","principal":"stdio",
//! "clientRevision":"2025-06-18","server":"gh","name":"gh__create_issue",
//! "originalName":"create_issue","argumentsSha256":"…","arguments":{…},
//! "outcome":"result","durationMs":12,"bytesIn":80,"bytesOut":412}`
//! with `outcome` one of `result`, `toolError`, `error` (plus `errorCode`)
//! or `refused` (plus `limit`), and (feature `secrets`) `upstreamIdentity`:
//! `principal` when the server ran it with the caller's own credentials,
//! `server` when with the one every caller shares. `arguments` appears only when configured,
//! with the named fields (at any depth) replaced by `"[redacted]"`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::bytes::hex::hex;

/// How a request ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome<'a> {
    Result,
    /// A result with `isError: true`.
    ToolError,
    /// A JSON-RPC error answer.
    Error { code: i64 },
    /// Refused by mcpx's policy before reaching the upstream.
    Refused { limit: &'a str },
}

/// The stage of the request pipeline that refused a request (the hub's
/// `stages` module): named on the refusal's audit line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Rate limits and quotas.
    Admit,
    /// The principal's catalog (the answer is the unknown name's).
    Authorize,
    /// Arguments against the tool's `inputSchema`.
    Validate,
    /// Not approved: declined, not decided in time, nobody to ask.
    Approve,
    /// No such tool, prompt or resource.
    Route,
}

impl Stage {
    pub const fn as_str(self) -> &'static str {
        match self {
            Stage::Admit => "admit",
            Stage::Authorize => "authorize",
            Stage::Validate => "validate",
            Stage::Approve => "approve",
            Stage::Route => "route",
        }
    }
}

/// One audited request, filled at its terminal outcome.
#[derive(Clone, Debug)]
pub struct Record<'a> {
    /// Unix time of the request's arrival, ms.
    pub time_ms: u64,
    pub method: &'a str,
    pub principal: &'a str,
    pub client_revision: &'a str,
    pub server: &'a str,
    /// The name the client used, and the upstream's (both empty for a
    /// request with no name, e.g. sampling).
    pub name: &'a str,
    pub original_name: &'a str,
    /// The `arguments` (or the relayed request's `params`) as received.
    pub arguments: Option<&'a [u8]>,
    pub outcome: Outcome<'a>,
    /// The stage that refused it, if one did.
    pub stage: Option<Stage>,
    /// The decision on a call that needed approval: who, how, when, for
    /// which arguments digest.
    pub approval: Option<&'a str>,
    /// Whose identity reached the server: `principal` (the caller's own
    /// credentials) or `server` (the one every caller shares); never a token.
    #[cfg(feature = "secrets")]
    pub upstream_identity: Option<&'static str>,
    pub duration_ms: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// What goes into lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Content {
    /// Log the arguments themselves (else only their digest).
    pub arguments: bool,
    /// Field names whose values are replaced before logging.
    pub redact: Vec<String>,
}

impl Record<'_> {
    /// The one-line summary of the `debug` log (issue: one line per call
    /// with client, server, method, duration and outcome).
    pub fn summary(&self) -> String {
        let outcome = match &self.outcome {
            Outcome::Result => "result".to_string(),
            Outcome::ToolError => "tool error".to_string(),
            Outcome::Error { code } => format!("error {code}"),
            Outcome::Refused { limit } => format!("refused by {limit}"),
        };
        let name = match (self.name, self.original_name) {
            ("", _) => String::new(),
            (name, "") => format!(" {name}"),
            (name, original) => format!(" {name} (its '{original}')"),
        };
        let stage = self.stage.map_or(String::new(), |s| format!(", refused at stage {}", s.as_str()));
        let approval = self.approval.map_or(String::new(), |a| format!(", {a}"));
        format!(
            "{}{name} of '{}' ({}) to server '{}': {outcome} in {} ms, {} B in, {} B out{stage}{approval}",
            self.method, self.principal, self.client_revision, self.server, self.duration_ms, self.bytes_in, self.bytes_out
        )
    }

    /// The JSON line (with its `\n`).
    pub fn line(&self, content: &Content) -> String {
        let mut o = Map::new();
        let s = |v: &str| Value::String(v.to_string());
        o.insert("time".into(), s(&rfc3339_ms(self.time_ms)));
        o.insert("method".into(), s(self.method));
        o.insert("principal".into(), s(self.principal));
        o.insert("clientRevision".into(), s(self.client_revision));
        o.insert("server".into(), s(self.server));
        if !self.name.is_empty() {
            o.insert("name".into(), s(self.name));
            o.insert("originalName".into(), s(self.original_name));
        }
        if let Some(args) = self.arguments {
            o.insert("argumentsSha256".into(), s(&hex(&Sha256::digest(args))));
            if content.arguments {
                let v = serde_json::from_slice::<Value>(args)
                    .map(|mut v| {
                        redact(&mut v, &content.redact);
                        v
                    })
                    .unwrap_or_else(|_| s("[not JSON]"));
                o.insert("arguments".into(), v);
            }
        }
        let (outcome, extra) = match &self.outcome {
            Outcome::Result => ("result", None),
            Outcome::ToolError => ("toolError", None),
            Outcome::Error { code } => ("error", Some(("errorCode", Value::from(*code)))),
            Outcome::Refused { limit } => ("refused", Some(("limit", s(limit)))),
        };
        o.insert("outcome".into(), s(outcome));
        if let Some((k, v)) = extra {
            o.insert(k.into(), v);
        }
        if let Some(stage) = self.stage {
            o.insert("stage".into(), s(stage.as_str()));
        }
        if let Some(a) = self.approval {
            o.insert("approval".into(), s(a));
        }
        #[cfg(feature = "secrets")]
        if let Some(i) = self.upstream_identity {
            o.insert("upstreamIdentity".into(), s(i));
        }
        o.insert("durationMs".into(), self.duration_ms.into());
        o.insert("bytesIn".into(), self.bytes_in.into());
        o.insert("bytesOut".into(), self.bytes_out.into());
        let mut line = Value::Object(o).to_string();
        line.push('\n');
        line
    }
}

fn redact(v: &mut Value, names: &[String]) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if names.iter().any(|n| n == k) {
                    *x = Value::String("[redacted]".into());
                } else {
                    redact(x, names);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| redact(x, names)),
        _ => {}
    }
}

/// RFC 3339 UTC with milliseconds for a Unix time in ms.
pub fn rfc3339_ms(unix_ms: u64) -> String {
    let (days, ms) = (unix_ms / 86_400_000, unix_ms % 86_400_000);
    // Days to a proleptic Gregorian date, counting 400-year eras from 0000-03-01.
    let shifted = days as i64 + 719_468;
    let era = shifted / 146_097;
    let day_of_era = shifted % 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = (month_from_march + 2) % 12 + 1;
    let year = era * 400 + year_of_era + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// Where lines go.
pub trait Sink: Send + 'static {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()>;
}

/// Standard error.
pub struct Stderr;

impl Sink for Stderr {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        io::stderr().lock().write_all(line)
    }
}

/// A file rotated by size: when a line would take `path` past `max_bytes`,
/// `path.(n-1)` becomes `path.n` (the oldest, `path.(files-1)`, is
/// dropped), …, `path` becomes `path.1`, and a new `path` is started. At
/// most `files` files of at most `max_bytes` each (a single longer line
/// gets a file of its own).
pub struct Rotating {
    path: PathBuf,
    max_bytes: u64,
    files: u32,
    file: File,
    len: u64,
}

impl Rotating {
    pub fn open(path: &Path, max_bytes: u64, files: u32) -> io::Result<Rotating> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let len = file.metadata()?.len();
        Ok(Rotating { path: path.to_path_buf(), max_bytes, files: files.max(1), file, len })
    }

    fn numbered(&self, n: u32) -> PathBuf {
        let mut p = self.path.clone().into_os_string();
        p.push(format!(".{n}"));
        PathBuf::from(p)
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.file.flush()?;
        if self.files == 1 {
            self.file = File::create(&self.path)?;
        } else {
            let _ = fs::remove_file(self.numbered(self.files - 1));
            for n in (1..self.files - 1).rev() {
                let from = self.numbered(n);
                if from.exists() {
                    fs::rename(&from, self.numbered(n + 1))?;
                }
            }
            fs::rename(&self.path, self.numbered(1))?;
            self.file = OpenOptions::new().create(true).append(true).open(&self.path)?;
        }
        self.len = 0;
        Ok(())
    }
}

impl Sink for Rotating {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        if self.len > 0 && self.len + line.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        self.file.write_all(line)?;
        self.len += line.len() as u64;
        Ok(())
    }
}

#[derive(Default)]
struct Counters {
    dropped: AtomicU64,
    failed: AtomicU64,
}

/// The non-blocking front of a [`Sink`]: a queue of `queue` lines and the
/// thread that drains it. Dropping the writer drains what is queued, then
/// joins the thread.
pub struct Writer {
    tx: Option<SyncSender<String>>,
    thread: Option<JoinHandle<()>>,
    counters: Arc<Counters>,
}

impl Writer {
    pub fn spawn(mut sink: impl Sink, queue: usize) -> io::Result<Writer> {
        let (tx, rx) = mpsc::sync_channel::<String>(queue.max(1));
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        let thread = std::thread::Builder::new().name("mcpx-audit".into()).spawn(move || {
            for line in rx {
                if sink.write_line(line.as_bytes()).is_err() {
                    c.failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        })?;
        Ok(Writer { tx: Some(tx), thread: Some(thread), counters })
    }

    /// Queues `line`; never blocks. `false` when the queue was full (the
    /// line is dropped and counted).
    pub fn push(&self, line: String) -> bool {
        let Some(tx) = &self.tx else { return false };
        match tx.try_send(line) {
            Ok(()) => true,
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// Lines dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.counters.dropped.load(Ordering::Relaxed)
    }

    /// Lines the sink failed to write.
    pub fn failed(&self) -> u64 {
        self.counters.failed.load(Ordering::Relaxed)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::Receiver;
    use std::sync::Mutex;
    use std::time::Duration;

    fn record<'a>(args: Option<&'a [u8]>, outcome: Outcome<'a>) -> Record<'a> {
        Record {
            time_ms: 1_785_196_800_123,
            method: "tools/call",
            principal: "alice",
            client_revision: "2025-06-18",
            server: "gh",
            name: "gh__create_issue",
            original_name: "create_issue",
            arguments: args,
            outcome,
            stage: None,
            approval: None,
            #[cfg(feature = "secrets")]
            upstream_identity: None,
            duration_ms: 12,
            bytes_in: 80,
            bytes_out: 412,
        }
    }

    #[test]
    fn times_are_rfc3339_utc_with_ms() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339_ms(951_868_799_999), "2000-02-29T23:59:59.999Z");
        assert_eq!(rfc3339_ms(1_785_196_800_123), "2026-07-28T00:00:00.123Z");
        assert_eq!(rfc3339_ms(4_107_542_400_000), "2100-03-01T00:00:00.000Z");
    }

    #[test]
    fn a_line_has_every_field_and_the_digest_of_the_bytes_as_received() {
        let args = br#"{"title": "x",  "token":"s3cret"}"#;
        let line = record(Some(args), Outcome::Result).line(&Content::default());
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        let v: Value = serde_json::from_str(&line).unwrap();
        // sha256 of exactly those bytes (spaces included), computed apart.
        let want = hex(&Sha256::digest(args));
        assert_eq!(
            v,
            serde_json::json!({
                "time": "2026-07-28T00:00:00.123Z", "method": "tools/call", "principal": "alice",
                "clientRevision": "2025-06-18", "server": "gh", "name": "gh__create_issue",
                "originalName": "create_issue", "argumentsSha256": want, "outcome": "result",
                "durationMs": 12, "bytesIn": 80, "bytesOut": 412
            })
        );
        assert!(!line.contains("s3cret") && !line.contains("title"));
        assert_eq!(hex(&Sha256::digest(b"abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn arguments_only_when_configured_and_named_fields_redacted() {
        let args = br#"{"title":"x","auth":{"token":"s3cret"},"list":[{"token":"t2"}]}"#;
        let content = Content { arguments: true, redact: vec!["token".into()] };
        let v: Value = serde_json::from_str(&record(Some(args), Outcome::ToolError).line(&content)).unwrap();
        assert_eq!(v["arguments"], serde_json::json!({"title": "x", "auth": {"token": "[redacted]"}, "list": [{"token": "[redacted]"}]}));
        assert_eq!(v["outcome"], "toolError");
        let line = record(Some(args), Outcome::Refused { limit: "policy.rateLimits.toolCalls.perPrincipal (3/s)" }).line(&content);
        assert!(!line.contains("s3cret") && !line.contains("t2"));
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!((v["outcome"].as_str(), v["limit"].as_str()), (Some("refused"), Some("policy.rateLimits.toolCalls.perPrincipal (3/s)")));
        let v: Value = serde_json::from_str(&record(None, Outcome::Error { code: -32602 }).line(&content)).unwrap();
        assert_eq!((v["outcome"].as_str(), v["errorCode"].as_i64()), (Some("error"), Some(-32602)));
        assert!(v.get("stage").is_none(), "an error the upstream answered names no stage");
        let hidden = Record { stage: Some(Stage::Authorize), ..record(None, Outcome::Error { code: -32602 }) };
        let v: Value = serde_json::from_str(&hidden.line(&content)).unwrap();
        assert_eq!((v["stage"].as_str(), v["name"].as_str()), (Some("authorize"), Some("gh__create_issue")));
        assert!(hidden.summary().ends_with(", refused at stage authorize"), "{}", hidden.summary());
        assert!(v.get("argumentsSha256").is_none() && v.get("arguments").is_none());
    }

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mcpx-audit-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn files_rotate_by_size_and_keep_n() {
        let dir = temp_dir("rotate");
        let path = dir.join("audit.jsonl");
        let mut r = Rotating::open(&path, 100, 3).unwrap();
        // 40-byte lines: two fit in 100 bytes, the third rotates.
        for i in 0..7 {
            r.write_line(format!("{:039}\n", i).as_bytes()).unwrap();
        }
        drop(r);
        let read = |p: &Path| fs::read_to_string(p).unwrap();
        let n = |i: u32| {
            let mut p = path.clone().into_os_string();
            p.push(format!(".{i}"));
            PathBuf::from(p)
        };
        assert_eq!(read(&path), format!("{:039}\n", 6));
        assert_eq!(read(&n(1)), format!("{:039}\n{:039}\n", 4, 5));
        assert_eq!(read(&n(2)), format!("{:039}\n{:039}\n", 2, 3));
        assert!(!n(3).exists(), "more than 3 files kept");
        // Reopening appends and rotates at the same size.
        let mut r = Rotating::open(&path, 100, 3).unwrap();
        r.write_line(format!("{:039}\n", 7).as_bytes()).unwrap();
        r.write_line(format!("{:039}\n", 8).as_bytes()).unwrap();
        assert_eq!(read(&path), format!("{:039}\n", 8));
        assert_eq!(read(&n(1)), format!("{:039}\n{:039}\n", 6, 7));
        // One file: the log restarts in place.
        let one = dir.join("one.jsonl");
        let mut r = Rotating::open(&one, 100, 1).unwrap();
        for i in 0..3 {
            r.write_line(format!("{:039}\n", i).as_bytes()).unwrap();
        }
        assert_eq!(read(&one), format!("{:039}\n", 2));
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 4, "audit.jsonl, .1, .2 and one.jsonl only");
        let _ = fs::remove_dir_all(&dir);
    }

    /// A sink that writes nothing until the test lets it.
    struct Stalled {
        gate: Receiver<()>,
        out: Arc<Mutex<Vec<String>>>,
    }

    impl Sink for Stalled {
        fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
            self.gate.recv_timeout(Duration::from_secs(10)).map_err(|_| io::Error::other("gate"))?;
            self.out.lock().unwrap().push(String::from_utf8_lossy(line).into_owned());
            Ok(())
        }
    }

    #[test]
    fn a_stalled_writer_never_blocks_and_counts_the_dropped_lines() {
        let (open, gate) = mpsc::channel();
        let out = Arc::new(Mutex::new(Vec::new()));
        let w = Writer::spawn(Stalled { gate, out: out.clone() }, 4).unwrap();
        let start = std::time::Instant::now();
        let accepted = (0..100).filter(|i| w.push(format!("{i}\n"))).count();
        assert!(start.elapsed() < Duration::from_secs(2), "push blocked");
        // The queue holds 4; the thread may hold one more in hand.
        assert!((4..=5).contains(&accepted), "{accepted}");
        assert_eq!(w.dropped(), 100 - accepted as u64);
        for _ in 0..accepted {
            open.send(()).unwrap();
        }
        drop(w);
        let got = out.lock().unwrap().clone();
        assert_eq!(got.len(), accepted);
        assert_eq!(got[0], "0\n");
    }

    #[test]
    fn the_writer_thread_writes_into_the_rotating_file() {
        let dir = temp_dir("writer");
        let path = dir.join("a.jsonl");
        let w = Writer::spawn(Rotating::open(&path, 1 << 20, 2).unwrap(), 16).unwrap();
        let line = record(Some(b"{}"), Outcome::Result).line(&Content::default());
        assert!(w.push(line.clone()));
        assert!(w.push(line.clone()));
        drop(w);
        assert_eq!(fs::read_to_string(&path).unwrap(), line.repeat(2));
        let _ = fs::remove_dir_all(&dir);
    }
}
