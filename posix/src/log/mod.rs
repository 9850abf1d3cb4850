//! Logging to stderr (stdout carries the protocol).
//!
//! One global level, set once at startup from `--log-level`, `MCPX_LOG` or the
//! config's `logLevel`. A record is one line, `<RFC 3339 UTC time> mcpx:
//! <level>: <message>`, with control characters in the message escaped (a
//! child's output cannot forge a record or drive the terminal) and every
//! continuation line of a multi-line message indented.
//!
//! Writing never blocks the caller: records go to a bounded queue that a
//! writer thread drains into stderr. When stderr does not keep up (a full
//! pipe nobody reads), records past the queue's cap are dropped and counted,
//! and the count is logged as soon as stderr accepts writes again. [`flush`]
//! waits, bounded, for the queue to drain before the process exits.

pub mod line;

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

/// Severity of a log record, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error = 0,
    Warn = 1,
    Info = 2,
    Debug = 3,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }

    /// Parses `error|warn|info|debug` (case-insensitive; `warning` and
    /// `trace` are accepted as aliases of `warn` and `debug`).
    pub fn parse(s: &str) -> Option<Level> {
        match s.trim().to_ascii_lowercase().as_str() {
            "error" => Some(Level::Error),
            "warn" | "warning" => Some(Level::Warn),
            "info" => Some(Level::Info),
            "debug" | "trace" => Some(Level::Debug),
            _ => None,
        }
    }

    fn from_u8(v: u8) -> Level {
        match v {
            0 => Level::Error,
            1 => Level::Warn,
            2 => Level::Info,
            _ => Level::Debug,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);

pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

pub fn level() -> Level {
    Level::from_u8(LEVEL.load(Ordering::Relaxed))
}

pub fn enabled(level: Level) -> bool {
    level <= self::level()
}

/// Records waiting for the writer thread, at most.
const QUEUE_RECORDS: usize = 1024;
/// Longest message kept in one record; the rest is cut (and its length said).
const MAX_RECORD: usize = 16 * 1024;

/// Records queued or being written.
static PENDING: AtomicUsize = AtomicUsize::new(0);
/// Records dropped since the last report.
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// The writer thread's queue (`None`: no thread could be started).
static QUEUE: OnceLock<Option<SyncSender<String>>> = OnceLock::new();

fn queue() -> Option<&'static SyncSender<String>> {
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = sync_channel::<String>(QUEUE_RECORDS);
            let thread = std::thread::Builder::new().name("mcpx-log".into()).spawn(move || {
                let mut err = std::io::stderr();
                while let Ok(line) = rx.recv() {
                    // Errors writing the log are ignored: there is nowhere else to report them.
                    let _ = err.write_all(line.as_bytes());
                    report_dropped(&mut err);
                    PENDING.fetch_sub(1, Ordering::Release);
                }
            });
            thread.ok().map(|_| tx)
        })
        .as_ref()
}

/// Logs how many records were dropped since the last report, if any.
fn report_dropped(err: &mut impl Write) {
    let lost = DROPPED.swap(0, Ordering::Relaxed);
    if lost > 0 {
        let note = format!("{lost} log record(s) dropped: stderr was not read fast enough");
        let _ = err.write_all(format_record(Level::Warn, &note).as_bytes());
    }
}

/// One record as written: timestamp, level, escaped message, indented
/// continuation lines, final newline.
fn format_record(level: Level, msg: &str) -> String {
    let msg = msg.trim_end_matches('\n');
    let cut = if msg.len() > MAX_RECORD {
        let mut end = MAX_RECORD;
        while !msg.is_char_boundary(end) {
            end -= 1;
        }
        Some(end)
    } else {
        None
    };
    let shown = crate::log::line::escape_keeping_newlines(&msg[..cut.unwrap_or(msg.len())]);
    let mut line = String::with_capacity(shown.len() + 48);
    line.push_str(&crate::log::line::timestamp(SystemTime::now()));
    line.push_str(" mcpx: ");
    line.push_str(level.as_str());
    line.push_str(": ");
    for (i, part) in shown.split('\n').enumerate() {
        if i > 0 {
            line.push_str("\n    ");
        }
        line.push_str(part);
    }
    if cut.is_some() {
        line.push_str(&format!("… ({} bytes)", msg.len()));
    }
    line.push('\n');
    line
}

/// Writes one record (see the module docs); never blocks.
pub fn write(level: Level, args: fmt::Arguments<'_>) {
    if !enabled(level) {
        return;
    }
    let line = format_record(level, &args.to_string());
    let Some(tx) = queue() else {
        // No thread could be started: write in place.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
        return;
    };
    PENDING.fetch_add(1, Ordering::Acquire);
    if tx.try_send(line).is_err() {
        PENDING.fetch_sub(1, Ordering::Release);
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Waits up to `limit` for every queued record to be written (before exit).
pub fn flush(limit: Duration) {
    if QUEUE.get().is_none() {
        return;
    }
    let deadline = Instant::now() + limit;
    while PENDING.load(Ordering::Acquire) > 0 {
        if Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    report_dropped(&mut std::io::stderr().lock());
}

#[macro_export]
macro_rules! error {
    ($($t:tt)*) => { $crate::log::write($crate::log::Level::Error, format_args!($($t)*)) };
}
#[macro_export]
macro_rules! warn {
    ($($t:tt)*) => { $crate::log::write($crate::log::Level::Warn, format_args!($($t)*)) };
}
#[macro_export]
macro_rules! info {
    ($($t:tt)*) => { $crate::log::write($crate::log::Level::Info, format_args!($($t)*)) };
}
#[macro_export]
macro_rules! debug {
    ($($t:tt)*) => {
        if $crate::log::enabled($crate::log::Level::Debug) {
            $crate::log::write($crate::log::Level::Debug, format_args!($($t)*))
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_levels() {
        assert_eq!(Level::parse("error"), Some(Level::Error));
        assert_eq!(Level::parse("WARN"), Some(Level::Warn));
        assert_eq!(Level::parse("warning"), Some(Level::Warn));
        assert_eq!(Level::parse(" info "), Some(Level::Info));
        assert_eq!(Level::parse("debug"), Some(Level::Debug));
        assert_eq!(Level::parse("verbose"), None);
        assert!(Level::Error < Level::Debug);
    }

    #[test]
    fn records_have_a_timestamp_and_escaped_indented_text() {
        let r = format_record(Level::Warn, "child said: \x1b[31mred\r\nmcpx: error: forged\n");
        let (ts, rest) = r.split_once(' ').unwrap();
        assert_eq!(ts.len(), "2026-12-01T12:06:06.123Z".len(), "{r}");
        assert!(ts.ends_with('Z') && ts.as_bytes()[10] == b'T', "{r}");
        assert_eq!(rest, "mcpx: warn: child said: \\x1b[31mred\\r\n    mcpx: error: forged\n");
        let long = "x".repeat(MAX_RECORD + 10);
        assert!(format_record(Level::Info, &long).ends_with(&format!("x… ({} bytes)\n", MAX_RECORD + 10)));
    }
}
