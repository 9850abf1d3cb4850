//! Hard caps of one mcpx process. The desktop build uses
//! [`Limits::DESKTOP`]; `mcpx-edge` starts from [`Limits::SMALL_HOST`].
//! Either can be tightened or loosened at run time with `MCPX_LIMITS`, e.g.
//! `MCPX_LIMITS=upstreams=4,sessions=8,in_flight=32,frame=256K,buffers=4M`.
//! Reaching a cap is an error for the one request or connection that hit
//! it (with the cap's name in the message), never an abort.

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
    /// All connection buffers together.
    pub max_buffer_bytes: usize,
}

impl Limits {
    pub const DESKTOP: Limits = Limits {
        max_upstreams: 64,
        max_sessions: 1024,
        max_in_flight: 4096,
        max_frame_bytes: 16 << 20,
        max_buffer_bytes: 256 << 20,
    };

    /// Routers and boards: a few MiB of RAM to spare.
    pub const SMALL_HOST: Limits = Limits {
        max_upstreams: 8,
        max_sessions: 16,
        max_in_flight: 64,
        max_frame_bytes: 1 << 20,
        max_buffer_bytes: 8 << 20,
    };

    /// Applies `upstreams=N,sessions=N,in_flight=N,frame=SIZE,buffers=SIZE`
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
                "buffers" => self.max_buffer_bytes = n,
                other => {
                    return Err(format!(
                        "unknown limit `{other}` (upstreams, sessions, in_flight, frame, buffers)"
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

static LIMITS: OnceLock<Limits> = OnceLock::new();

/// Sets the process's limits once (the first call wins).
pub fn set(l: Limits) {
    let _ = LIMITS.set(l);
}

/// The process's limits.
pub fn get() -> Limits {
    *LIMITS.get_or_init(Limits::default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides() {
        let l = Limits::SMALL_HOST
            .with_overrides("upstreams=2, frame=256K,buffers=4M")
            .unwrap();
        assert_eq!(l.max_upstreams, 2);
        assert_eq!(l.max_frame_bytes, 256 << 10);
        assert_eq!(l.max_buffer_bytes, 4 << 20);
        assert_eq!(l.max_sessions, Limits::SMALL_HOST.max_sessions);
        assert!(Limits::DESKTOP.with_overrides("sessions=0").is_err());
        assert!(Limits::DESKTOP.with_overrides("bogus=1").is_err());
        assert!(Limits::DESKTOP.with_overrides("frame=1G").is_err());
    }
}
