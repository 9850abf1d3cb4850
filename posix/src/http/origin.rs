//! DNS-rebinding protection: the `Origin` and `Host` of every request.
//!
//! - A present `Origin` must match the allowlist (rows
//!   `streamable-http-server-validate-origin`,
//!   `streamable-http-server-403-invalid-origin`, `http-sse-server-validate-origin`):
//!   `http://localhost:*`, `http://127.0.0.1:*`, `http://[::1]:*` plus the
//!   configured entries. `*` as the port matches any port or none. A request
//!   without `Origin` (not from a browser) passes.
//! - `Host` must name the server: the loopback names, the bound address, or
//!   a configured host. A page on `evil.example` rebound to 127.0.0.1 still
//!   sends `Host: evil.example`, which is refused. With a wildcard bind and no
//!   configured hosts the Host check is off (the bearer token, required off
//!   loopback, protects such a server).

use std::net::{IpAddr, SocketAddr};

#[derive(Clone, Debug, PartialEq, Eq)]
struct OriginPattern {
    scheme: String,
    host: String,
    /// `None` = any port (`:*`); `Some("")` = no port given.
    port: Option<String>,
}

pub struct Guard {
    origins: Vec<OriginPattern>,
    /// `None`: the Host check is off.
    hosts: Option<Vec<String>>,
}

const DEFAULT_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];

impl Guard {
    pub fn new(extra_origins: &[String], extra_hosts: &[String], bound: SocketAddr) -> Guard {
        let origins = DEFAULT_ORIGINS
            .iter()
            .copied()
            .chain(extra_origins.iter().map(String::as_str))
            .filter_map(parse_pattern)
            .collect();
        let hosts = if bound.ip().is_unspecified() && extra_hosts.is_empty() {
            None
        } else {
            let mut h: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            if !bound.ip().is_unspecified() {
                h.push(match bound.ip() {
                    IpAddr::V4(a) => a.to_string(),
                    IpAddr::V6(a) => format!("[{a}]"),
                });
            }
            h.extend(
                extra_hosts
                    .iter()
                    .map(|s| s.trim_end_matches('.').to_ascii_lowercase()),
            );
            Some(h)
        };
        Guard { origins, hosts }
    }

    /// Is this `Origin` header (if any) allowed?
    pub fn origin_ok(&self, origin: Option<&[u8]>) -> bool {
        let Some(o) = origin else { return true };
        let Some(o) = std::str::from_utf8(o).ok().and_then(parse_origin) else {
            return false;
        };
        self.origins.iter().any(|p| {
            p.scheme == o.scheme
                && p.host == o.host
                && p.port
                    .as_ref()
                    .is_none_or(|port| *port == o.port.clone().unwrap_or_default())
        })
    }

    /// Is this `Host` header allowed? A missing Host passes only when the
    /// check is off (HTTP/1.1 requires it; HTTP/1.0 clients may omit it).
    pub fn host_ok(&self, host: Option<&[u8]>) -> bool {
        let Some(allowed) = &self.hosts else {
            return true;
        };
        let Some(h) = host.and_then(|h| std::str::from_utf8(h).ok()) else {
            return false;
        };
        // The allowed names are lowercase.
        let name = host_name(h).trim_end_matches('.');
        allowed.iter().any(|a| a.eq_ignore_ascii_case(name))
    }
}

/// Why a head's `Host` and `Origin` fields cannot be checked at all (400):
/// RFC 9112 §3.2 wants exactly one `Host` in an HTTP/1.1 request (HTTP/1.0
/// may omit it) and never two; RFC 6454 §7 allows one `Origin` at most.
/// Two values would let the checks above read one and a proxy the other.
pub fn field_lines_error(hosts: usize, origins: usize, http11: bool) -> Option<&'static str> {
    if hosts > 1 {
        return Some("Bad request: more than one Host header field");
    }
    if hosts == 0 && http11 {
        return Some("Bad request: an HTTP/1.1 request must have a Host header field");
    }
    if origins > 1 {
        return Some("Bad request: more than one Origin header field");
    }
    None
}

/// The host part of `host[:port]` / `[v6]:port`.
fn host_name(h: &str) -> &str {
    let h = h.trim();
    if h.starts_with('[') {
        return h.find(']').map_or(h, |i| &h[..=i]);
    }
    h.rsplit_once(':').map_or(h, |(n, _)| n)
}

fn split_origin(s: &str) -> Option<(String, String, Option<String>)> {
    let (scheme, rest) = s.trim().split_once("://")?;
    if scheme.is_empty() || rest.is_empty() || rest.contains('/') || rest.contains('@') {
        return None;
    }
    let (host, port) = if rest.starts_with('[') {
        let end = rest.find(']')?;
        let after = &rest[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p.to_string()),
            None if after.is_empty() => None,
            None => return None,
        };
        (rest[..=end].to_string(), port)
    } else {
        match rest.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p.to_string())),
            None => (rest.to_string(), None),
        }
    };
    Some((scheme.to_ascii_lowercase(), host.to_ascii_lowercase(), port))
}

fn parse_pattern(s: &str) -> Option<OriginPattern> {
    let (scheme, host, port) = split_origin(s)?;
    let port = match port.as_deref() {
        Some("*") => None,
        Some(p) => Some(p.to_string()),
        None => Some(String::new()),
    };
    Some(OriginPattern { scheme, host, port })
}

struct Origin {
    scheme: String,
    host: String,
    port: Option<String>,
}

fn parse_origin(s: &str) -> Option<Origin> {
    let (scheme, host, port) = split_origin(s)?;
    if port
        .as_deref()
        .is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    Some(Origin { scheme, host, port })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> Guard {
        Guard::new(
            &["https://app.example.com".into(), "http://dev.test:*".into()],
            &[],
            "127.0.0.1:8765".parse().unwrap(),
        )
    }

    // covers: streamable-http-server-validate-origin
    #[test]
    fn origins() {
        let g = loopback();
        for ok in [
            "http://localhost:3000",
            "http://localhost",
            "http://127.0.0.1:8765",
            "http://[::1]:1",
            "HTTP://LocalHost:9",
            "https://app.example.com",
            "http://dev.test:81",
        ] {
            assert!(g.origin_ok(Some(ok.as_bytes())), "{ok}");
        }
        for bad in [
            "http://evil.example.com",
            "https://localhost:3000",
            "null",
            "",
            "http://localhost.evil.com:80",
            "https://app.example.com:444",
            "http://127.0.0.1:80/x",
            "http://user@localhost:1",
            "http://localhost:",
        ] {
            assert!(!g.origin_ok(Some(bad.as_bytes())), "{bad}");
        }
        assert!(g.origin_ok(None));
    }

    // covers: streamable-http-server-validate-origin
    #[test]
    fn hosts() {
        let g = loopback();
        for ok in [
            "localhost:8765",
            "127.0.0.1:8765",
            "[::1]:8765",
            "LOCALHOST",
            "localhost.:1",
        ] {
            assert!(g.host_ok(Some(ok.as_bytes())), "{ok}");
        }
        for bad in [
            "evil.example.com",
            "evil.example.com:8765",
            "127.0.0.2:8765",
            "",
        ] {
            assert!(!g.host_ok(Some(bad.as_bytes())), "{bad}");
        }
        assert!(!g.host_ok(None));
        let wild = Guard::new(&[], &[], "0.0.0.0:8765".parse().unwrap());
        assert!(wild.host_ok(Some(b"anything.example")));
        let named = Guard::new(
            &[],
            &["mcp.example.org".into()],
            "0.0.0.0:8765".parse().unwrap(),
        );
        assert!(named.host_ok(Some(b"mcp.example.org:8765")));
        assert!(!named.host_ok(Some(b"other.example.org")));
        let lan = Guard::new(&[], &[], "192.168.1.5:8765".parse().unwrap());
        assert!(lan.host_ok(Some(b"192.168.1.5:8765")));
    }
}
