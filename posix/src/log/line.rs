//! The pure pieces of a log line: the timestamp, escaping of foreign text,
//! a per-source rate limit, and how durations are written.
//!
//! Nothing here does I/O; [`crate::log`] puts the pieces together.

use std::fmt::Write as _;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// `2026-12-01T12:06:06.123Z`: RFC 3339, UTC, milliseconds.
pub fn timestamp(t: SystemTime) -> String {
    rfc3339_ms(t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64))
}

/// [`timestamp`] of a Unix time in milliseconds.
pub fn rfc3339_ms(ms: u64) -> String {
    let (days, ms_of_day) = ((ms / 86_400_000) as i64, ms % 86_400_000);
    let (y, m, d) = civil_from_days(days);
    let s = ms_of_day / 1000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        ms_of_day % 1000
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Appends `c` to `out`, escaped when it could change how the log reads on a
/// terminal or to a parser: C0 and C1 controls (ESC, CR, BEL, ...), DEL, and
/// the Unicode bidirectional overrides. Tab is kept; `\n` is the caller's.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\t' => out.push('\t'),
        '\r' => out.push_str("\\r"),
        c if (c as u32) < 0x20 || c == '\x7f' => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if ('\u{80}'..='\u{9f}').contains(&c) || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
        c => out.push(c),
    }
}

/// `s` with control characters escaped (see [`push_escaped`]); newlines are
/// escaped too, so the result is always one line.
pub fn escape(s: &str) -> String {
    escape_with(s, false)
}

/// Like [`escape`] but keeps `\n`, for multi-line records (the log indents
/// the continuation lines).
pub fn escape_keeping_newlines(s: &str) -> String {
    escape_with(s, true)
}

fn escape_with(s: &str, keep_newlines: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' if keep_newlines => out.push('\n'),
            '\n' => out.push_str("\\n"),
            c => push_escaped(&mut out, c),
        }
    }
    out
}

/// Bytes from a foreign source (a child's stderr or stdout) as one line of
/// log text: valid UTF-8 with controls escaped, each invalid byte as `\xNN`.
pub fn escape_bytes(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for chunk in b.utf8_chunks() {
        out.push_str(&escape(chunk.valid()));
        for byte in chunk.invalid() {
            let _ = write!(out, "\\x{byte:02x}");
        }
    }
    out
}

/// How long something took or will take, for people: `250 ms`, `2 s`, `1.5 s`.
#[allow(clippy::manual_is_multiple_of)] // is_multiple_of is newer than the MSRV
pub fn show_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms >= 1000 && ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else if ms >= 1000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{ms} ms")
    }
}

/// At most `per_window` lines per `window` from one source; what is held
/// back is counted and reported when the next window opens.
pub struct RateLimit {
    per_window: u32,
    window: Duration,
    start: Instant,
    used: u32,
    suppressed: u64,
}

/// What to do with one line.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Write it; first say that `suppressed` lines (if any) were held back.
    Write { suppressed: u64 },
    /// Hold it back (counted).
    Suppress,
}

impl RateLimit {
    pub fn new(per_window: u32, window: Duration) -> RateLimit {
        RateLimit { per_window, window, start: Instant::now(), used: 0, suppressed: 0 }
    }

    pub fn check(&mut self, now: Instant) -> Verdict {
        if now.duration_since(self.start) >= self.window {
            self.start = now;
            self.used = 0;
        }
        if self.used >= self.per_window {
            self.suppressed += 1;
            return Verdict::Suppress;
        }
        self.used += 1;
        Verdict::Write { suppressed: std::mem::take(&mut self.suppressed) }
    }

    /// Lines held back and not yet reported (at the end of the source).
    pub fn take_suppressed(&mut self) -> u64 {
        std::mem::take(&mut self.suppressed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_796_126_766_123);
        assert_eq!(timestamp(t), "2026-12-01T12:06:06.123Z");
        // A leap day, and the last millisecond of a year.
        assert_eq!(timestamp(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29T00:00:00.000Z");
        assert_eq!(timestamp(UNIX_EPOCH + Duration::from_millis(1_735_689_599_999)), "2024-12-31T23:59:59.999Z");
    }

    #[test]
    fn controls_are_escaped_so_a_child_cannot_forge_a_line() {
        assert_eq!(escape("a\x1b[2Kb\rmcpx: error: x\x07"), "a\\x1b[2Kb\\rmcpx: error: x\\x07");
        assert_eq!(escape("one\ntwo\tthree\x7f"), "one\\ntwo\tthree\\x7f");
        assert_eq!(escape("\u{9b}31m \u{202e}abc"), "\\u{9b}31m \\u{202e}abc");
        assert_eq!(escape("héllo ✓"), "héllo ✓");
        assert_eq!(escape_keeping_newlines("a\nb\rc"), "a\nb\\rc");
        assert_eq!(escape_bytes(b"ok \xff\xfe end\x1b"), "ok \\xff\\xfe end\\x1b");
        assert_eq!(escape_bytes("é".as_bytes()), "é");
    }

    #[test]
    fn durations() {
        assert_eq!(show_duration(Duration::from_millis(250)), "250 ms");
        assert_eq!(show_duration(Duration::from_secs(2)), "2 s");
        assert_eq!(show_duration(Duration::from_millis(1500)), "1.5 s");
    }

    #[test]
    fn rate_limit_holds_back_and_reports_per_window() {
        let t0 = Instant::now();
        let mut r = RateLimit::new(2, Duration::from_secs(1));
        r.start = t0;
        assert_eq!(r.check(t0), Verdict::Write { suppressed: 0 });
        assert_eq!(r.check(t0), Verdict::Write { suppressed: 0 });
        assert_eq!(r.check(t0), Verdict::Suppress);
        assert_eq!(r.check(t0 + Duration::from_millis(999)), Verdict::Suppress);
        assert_eq!(r.check(t0 + Duration::from_secs(1)), Verdict::Write { suppressed: 2 });
        assert_eq!(r.check(t0 + Duration::from_secs(1)), Verdict::Write { suppressed: 0 });
        assert_eq!(r.check(t0 + Duration::from_secs(1)), Verdict::Suppress);
        assert_eq!(r.take_suppressed(), 1);
        assert_eq!(r.take_suppressed(), 0);
    }
}
