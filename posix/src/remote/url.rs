//! The few URL operations a remote MCP server needs: parse an absolute
//! `http`/`https` URL, and resolve the `endpoint` a 2024-11-05 HTTP+SSE server
//! announces against it (RFC 3986 §5.2, same origin only).

pub use super::error::UrlError;

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// An absolute `http(s)://host[:port]/path?query` URL without user info or
/// fragment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub scheme: Scheme,
    /// Host as written, lowercased; an IPv6 literal keeps no brackets.
    pub host: String,
    pub port: u16,
    /// Origin-form request target: path (at least `/`) and query.
    pub target: String,
}

impl Url {
    pub fn parse(s: &str) -> Result<Url, UrlError> {
        let (scheme, rest) = match s.split_once("://") {
            Some((sc, rest)) if sc.eq_ignore_ascii_case("http") => (Scheme::Http, rest),
            Some((sc, rest)) if sc.eq_ignore_ascii_case("https") => (Scheme::Https, rest),
            Some((sc, _)) => return Err(UrlError::Scheme(sc.to_string())),
            None => return Err(UrlError::NotAbsolute),
        };
        let rest = rest.split('#').next().unwrap_or("");
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, target) = rest.split_at(split);
        if authority.contains('@') {
            return Err(UrlError::UserInfo);
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or(UrlError::UnterminatedIpv6)?;
            (h, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(UrlError::NoHost);
        }
        if !host.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._:%".contains(&b)) {
            return Err(UrlError::BadHost(host.to_string()));
        }
        let port = match port {
            None | Some("") => scheme.default_port(),
            Some(p) => p.parse::<u16>().ok().filter(|&p| p != 0).ok_or_else(|| UrlError::BadPort(p.to_string()))?,
        };
        let target = match target {
            "" => "/".to_string(),
            t if t.starts_with('?') => format!("/{t}"),
            t => t.to_string(),
        };
        if !target.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(UrlError::BadPath);
        }
        Ok(Url { scheme, host: host.to_ascii_lowercase(), port, target })
    }

    /// The value of the `Host` header.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.port == self.scheme.default_port() {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    pub fn same_origin(&self, other: &Url) -> bool {
        self.scheme == other.scheme && self.host == other.host && self.port == other.port
    }

    /// Resolves a URI reference (absolute, network-path, absolute-path or
    /// relative-path, with optional query) against this URL. Only a result of
    /// the same origin is accepted: an HTTP+SSE server must not send mcpx's
    /// messages (and configured credentials) elsewhere.
    pub fn join_same_origin(&self, reference: &str) -> Result<Url, UrlError> {
        let r = reference.trim();
        let joined = if r.contains("://") {
            Url::parse(r)?
        } else if let Some(net) = r.strip_prefix("//") {
            Url::parse(&format!("{}://{net}", self.scheme.as_str()))?
        } else {
            let r = r.split('#').next().unwrap_or("");
            let target = if r.starts_with('/') {
                r.to_string()
            } else if r.is_empty() {
                self.target.clone()
            } else if r.starts_with('?') {
                format!("{}{r}", self.path())
            } else {
                let path = self.path();
                let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
                format!("{dir}{r}")
            };
            let target = remove_dot_segments(&target);
            if !target.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(UrlError::EndpointChars(reference.to_string()));
            }
            Url { target, ..self.clone() }
        };
        if !self.same_origin(&joined) {
            return Err(UrlError::OtherOrigin { endpoint: reference.to_string(), base: self.to_string() });
        }
        Ok(joined)
    }

    fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("/")
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}{}", self.scheme.as_str(), self.host_header(), self.target)
    }
}

/// RFC 3986 §5.2.4 on the path part of `target`; the query is kept.
fn remove_dot_segments(target: &str) -> String {
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    for (i, seg) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *seg {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                out.pop();
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let mut p = String::from("/");
    p.push_str(&out.join("/"));
    if let Some(q) = query {
        p.push('?');
        p.push_str(q);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        let u = Url::parse("https://Example.com/mcp?x=1#frag").unwrap();
        assert_eq!((u.scheme, u.host.as_str(), u.port, u.target.as_str()), (Scheme::Https, "example.com", 443, "/mcp?x=1"));
        assert_eq!(u.to_string(), "https://example.com/mcp?x=1");
        let u = Url::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!((u.port, u.target.as_str(), u.host_header()), (8080, "/", "127.0.0.1:8080".to_string()));
        let u = Url::parse("http://[::1]:9/a").unwrap();
        assert_eq!((u.host.as_str(), u.host_header()), ("::1", "[::1]:9".to_string()));
        assert!(Url::parse("ftp://x/").is_err());
        assert!(Url::parse("x/y").is_err());
        assert!(Url::parse("http://u:p@x/").is_err());
        assert!(Url::parse("http://x:0/").is_err());
        assert!(Url::parse("http://x/a b").is_err());
        assert!(Url::parse("http:///a").is_err());
    }

    // covers: http-sse-client-post-to-endpoint
    #[test]
    fn endpoint_resolution_is_same_origin_only() {
        let base = Url::parse("http://127.0.0.1:3001/sse").unwrap();
        let j = |r: &str| base.join_same_origin(r).map(|u| u.to_string());
        assert_eq!(j("/messages?sessionId=abc").unwrap(), "http://127.0.0.1:3001/messages?sessionId=abc");
        assert_eq!(j("messages?s=1").unwrap(), "http://127.0.0.1:3001/messages?s=1");
        assert_eq!(j("?s=1").unwrap(), "http://127.0.0.1:3001/sse?s=1");
        assert_eq!(j("http://127.0.0.1:3001/m").unwrap(), "http://127.0.0.1:3001/m");
        assert_eq!(j("/a/b/../c/./d").unwrap(), "http://127.0.0.1:3001/a/c/d");
        assert!(j("http://127.0.0.1:3002/m").is_err());
        assert!(j("https://127.0.0.1:3001/m").is_err());
        assert!(j("//evil.example/m").is_err());
        assert!(j("http://evil.example/m").is_err());
    }
}
