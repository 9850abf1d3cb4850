//! Hard caps of one mcpx process. The desktop build uses
//! [`Limits::DESKTOP`]; `mcpx-edge` starts from [`Limits::SMALL_HOST`].
//! Either can be tightened or loosened at run time with `MCPX_LIMITS`, e.g.
//! `MCPX_LIMITS=upstreams=4,sessions=8,in_flight=32,frame=256K,queue=512K`.
//! They only ever tighten the runtime's own defaults, and the config's
//! `http` settings (`maxBodyBytes`, `maxSessions`) still apply on top.
//!
//! | cap | where | at the cap |
//! |---|---|---|
//! | `max_upstreams` | `mcpx serve` start | the config is refused with a message naming the cap |
//! | `max_sessions` | hub clients, HTTP sessions | `initialize` is answered with an error (HTTP 503) |
//! | `max_in_flight` | hub pending table | the request is answered with an error |
//! | `max_frame_bytes` | stdio lines (client, upstreams), HTTP bodies, remote servers' bodies and SSE events | the message is refused with an error (HTTP 413; a server's answer: its request fails) |
//! | `max_queue_bytes` | output queue of each peer (client, upstream) | the peer is treated as stuck, per the outbox rules |
//!
//! Memory for buffers is thus bounded by (upstreams + sessions) × queue.

use std::sync::OnceLock;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Upstream servers in the config (more: the config is refused).
    pub max_upstreams: usize,
    /// Client sessions at once (stdio counts one; HTTP one per session).
    pub max_sessions: usize,
    /// Requests in flight through the hub, all clients together.
    pub max_in_flight: usize,
    /// Largest single message (a stdio line, an HTTP body, an SSE event).
    pub max_frame_bytes: usize,
    /// Bytes queued for one peer (a client or an upstream).
    pub max_queue_bytes: usize,
}

impl Limits {
    /// The runtime's own defaults; of these caps only `max_upstreams` is
    /// new (the config is refused above it).
    pub const DESKTOP: Limits = Limits {
        max_upstreams: 256,
        max_sessions: 1024,
        max_in_flight: 4096,
        max_frame_bytes: 32 << 20,
        max_queue_bytes: 64 << 20,
    };

    /// Routers and boards: a few MiB of RAM to spare (buffers ≤ 48 MiB at
    /// worst, a few MiB in practice).
    pub const SMALL_HOST: Limits = Limits {
        max_upstreams: 8,
        max_sessions: 16,
        max_in_flight: 64,
        max_frame_bytes: 1 << 20,
        max_queue_bytes: 2 << 20,
    };

    /// These limits as an `MCPX_LIMITS` value.
    pub fn spec(&self) -> String {
        format!(
            "upstreams={},sessions={},in_flight={},frame={},queue={}",
            self.max_upstreams,
            self.max_sessions,
            self.max_in_flight,
            self.max_frame_bytes,
            self.max_queue_bytes
        )
    }

    /// Applies `upstreams=N,sessions=N,in_flight=N,frame=SIZE,queue=SIZE`
    /// (SIZE: bytes, or with a K or M suffix).
    pub fn with_overrides(mut self, spec: &str) -> Result<Limits, String> {
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}`: expected NAME=VALUE"))?;
            let n = parse_size(v.trim()).ok_or_else(|| {
                format!("`{part}`: `{v}` is not a number (K and M suffixes allowed)")
            })?;
            if n == 0 {
                return Err(format!("`{part}`: a cap of 0 would refuse everything"));
            }
            match k.trim() {
                "upstreams" => self.max_upstreams = n,
                "sessions" => self.max_sessions = n,
                "in_flight" => self.max_in_flight = n,
                "frame" => self.max_frame_bytes = n,
                "queue" => self.max_queue_bytes = n,
                other => {
                    return Err(format!(
                        "unknown limit `{other}` (upstreams, sessions, in_flight, frame, queue)"
                    ))
                }
            }
        }
        Ok(self)
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::DESKTOP
    }
}

fn parse_size(v: &str) -> Option<usize> {
    let (num, mul) = match v.as_bytes().last()? {
        b'k' | b'K' => (&v[..v.len() - 1], 1 << 10),
        b'm' | b'M' => (&v[..v.len() - 1], 1 << 20),
        _ => (v, 1),
    };
    num.parse::<usize>().ok()?.checked_mul(mul)
}

/// `n` bytes for people: `16 MiB`, `256 KiB`, `1.5 MiB`, `700 B`.
pub fn human_size(n: usize) -> String {
    let (unit, name) = if n >= 1 << 20 { (1 << 20, "MiB") } else if n >= 1 << 10 { (1 << 10, "KiB") } else { return format!("{n} B") };
    let whole = n / unit;
    let tenths = (n % unit) * 10 / unit;
    if tenths == 0 { format!("{whole} {name}") } else { format!("{whole}.{tenths} {name}") }
}

static LIMITS: OnceLock<Limits> = OnceLock::new();

/// Sets the process's limits once (the first call wins).
pub fn set(l: Limits) {
    let _ = LIMITS.set(l);
}

/// The process's limits.
pub fn get() -> Limits {
    *LIMITS.get_or_init(Limits::default)
}

/// The longest stdio message at most (and a remote server's, and one
/// passed between replicas): a skill at the extension's limits (16 MiB of
/// files) may be one file of 16 MiB, read as a base64 `blob` of 21.3 MiB
/// in its JSON-RPC answer.
// Requirement: ext-skills-host-limits
pub const MAX_LINE: usize = 24 << 20;

/// Longest message accepted on a stdio stream (the client's, a server's,
/// either way), under the process's frame cap.
pub fn max_line() -> usize {
    MAX_LINE.min(get().max_frame_bytes)
}

/// [`max_line`] as errors name it, with how to change it.
pub fn line_limit() -> String {
    message_limit("one stdio message", max_line())
}

/// A message cap of `max` bytes on `what` that follows [`max_line`] (a
/// stdio line, a remote server's response), as errors name it.
pub fn message_limit(what: &str, max: usize) -> String {
    format!("the {max}-byte limit of {what} ({}; MCPX_LIMITS=frame=SIZE sets it, up to {})", human_size(max), human_size(MAX_LINE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides() {
        let l = Limits::SMALL_HOST
            .with_overrides("upstreams=2, frame=256K,queue=4M")
            .unwrap();
        assert_eq!(l.max_upstreams, 2);
        assert_eq!(l.max_frame_bytes, 256 << 10);
        assert_eq!(l.max_queue_bytes, 4 << 20);
        assert_eq!(l.max_sessions, Limits::SMALL_HOST.max_sessions);
        assert!(Limits::DESKTOP.with_overrides("sessions=0").is_err());
        assert_eq!(human_size(16 << 20), "16 MiB");
        assert_eq!(human_size(3 << 19), "1.5 MiB");
        assert_eq!(human_size(256 << 10), "256 KiB");
        assert_eq!(human_size(700), "700 B");
        assert!(Limits::DESKTOP.with_overrides("bogus=1").is_err());
        assert!(Limits::DESKTOP.with_overrides("frame=1G").is_err());
        assert_eq!(
            Limits::SMALL_HOST.with_overrides(&Limits::DESKTOP.spec()),
            Ok(Limits::DESKTOP)
        );
    }
}
