//! Hands the authorization URL to a person: printed, and run through
//! `openWith` or the desktop's opener. The URL is the authorization
//! server's `authorization_endpoint`, so it is checked first ([`check`]):
//! a hostile server must not get `file:`, `javascript:` or an option such
//! as `--remote-debugging-port=…` opened, unattended under `mcpx serve`.

use std::fmt;
use std::io;

use crate::remote::error::UrlError;
use crate::remote::url::Url;

/// Why a URL is not handed to an opener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Whitespace, a control or a non-ASCII character.
    Characters,
    /// It starts with `-`: an opener would read it as an option.
    OptionLike,
    /// There is no `scheme:` at its start.
    NoScheme,
    /// A scheme other than `https` and `http`, as written.
    Scheme(String),
    /// Plain `http:` to a host that is not loopback.
    PlainHttp { host: String },
    /// `http(s):` but not a URL mcpx reads.
    Malformed(UrlError),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Characters => f.write_str("it contains whitespace, a control or a non-ASCII character"),
            Refusal::OptionLike => f.write_str("it starts with '-', which the opening command would take for an option"),
            Refusal::NoScheme => f.write_str("it has no scheme; only https: (or http: to a loopback host) is opened"),
            Refusal::Scheme(s) => write!(f, "its scheme is {s:?}; only https: (or http: to a loopback host) is opened"),
            Refusal::PlainHttp { host } => write!(f, "its scheme is \"http\" to {host}, which is not a loopback host; only https: is opened there"),
            Refusal::Malformed(e) => e.fmt(f),
        }
    }
}

/// Why the authorization URL was not opened.
#[derive(Debug)]
pub enum OpenError {
    Refused { url: String, why: Refusal },
    EmptyOpenWith,
    OpenWith { program: String, err: io::Error },
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Refused { url, why } => write!(f, "the authorization server's URL {url:?} is not opened: {why}"),
            OpenError::EmptyOpenWith => f.write_str("openWith is empty"),
            OpenError::OpenWith { program, err } => write!(f, "cannot run openWith command {program:?}: {err}"),
        }
    }
}

/// Whether `url` may be handed to an opener: `https:`, or `http:` to a
/// loopback host, in printable ASCII, never starting with `-`. The scheme
/// is case-insensitive (RFC 3986 §3.1); nothing else is normalized.
// Requirement: authz-https-and-redirect-uris
pub fn check(url: &str) -> Result<(), Refusal> {
    if !url.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Refusal::Characters);
    }
    if url.starts_with('-') {
        return Err(Refusal::OptionLike);
    }
    let scheme = url.split_once(':').map(|(s, _)| s).filter(|s| is_scheme(s)).ok_or(Refusal::NoScheme)?;
    if !scheme.eq_ignore_ascii_case("https") && !scheme.eq_ignore_ascii_case("http") {
        return Err(Refusal::Scheme(scheme.to_string()));
    }
    let u = Url::parse(url).map_err(Refusal::Malformed)?;
    if !super::https_or_loopback(&u) {
        return Err(Refusal::PlainHttp { host: u.host });
    }
    Ok(())
}

/// `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )` (RFC 3986 §3.1).
fn is_scheme(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
}

/// Prints `url` for the person authorizing for server `server` and opens
/// it with `open_with` (`CMD ARGS...`, the URL appended), else with the
/// desktop's opener when there is a display. A URL [`check`] refuses is
/// neither printed nor opened.
///
/// The URL goes last, without `--` before it: `xdg-open` takes no `--` (it
/// would open a file named `--`) and macOS `open` documents none, and an
/// `openWith` command may be anything. The guard is [`check`]: a URL it
/// passes begins with `http`, so no command reads it as an option. An
/// `openWith` command that takes `--` can end with it.
pub fn open(server: &str, url: &str, open_with: Option<&str>) -> Result<(), OpenError> {
    check(url).map_err(|why| OpenError::Refused { url: url.to_string(), why })?;
    let browser = ["DISPLAY", "WAYLAND_DISPLAY"].iter().any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
    let cmd = match open_with {
        Some(c) => c.to_string(),
        None => {
            eprintln!("Open this URL to authorize mcpx for server {server}:\n\n  {url}\n");
            if !browser {
                return Ok(());
            }
            if cfg!(target_os = "macos") { "open" } else { "xdg-open" }.to_string()
        }
    };
    let mut parts = cmd.split_ascii_whitespace();
    let program = parts.next().ok_or(OpenError::EmptyOpenWith)?;
    info!("server {server}: opening the authorization URL with {program}");
    smol::process::Command::new(program)
        .args(parts)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .map(drop)
        .or_else(|err| match open_with {
            Some(_) => Err(OpenError::OpenWith { program: program.to_string(), err }),
            None => Ok(()), // the URL is printed; no browser then
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    // What an authorization server may have opened: https anywhere, http on
    // loopback only, nothing that is another scheme or reads as an option.
    // covers: authz-https-and-redirect-uris
    #[test]
    fn only_https_or_loopback_http_is_opened() {
        let scheme = |s: &str| Err(Refusal::Scheme(s.into()));
        let plain = |h: &str| Err(Refusal::PlainHttp { host: h.into() });
        let table: &[(&str, Result<(), Refusal>)] = &[
            ("https://as.example/authorize?response_type=code&state=x", Ok(())),
            ("HTTPS://AS.EXAMPLE/authorize?x=1", Ok(())),
            ("http://127.0.0.1:9400/authorize?x=1", Ok(())),
            ("http://127.8.9.10/authorize", Ok(())),
            ("http://[::1]:9400/authorize?x=1", Ok(())),
            ("http://localhost:9400/authorize", Ok(())),
            ("http://localhost/authorize", Ok(())),
            ("HTTP://LOCALHOST/authorize", Ok(())),
            ("http://example.com/authorize", plain("example.com")),
            ("http://localhost.example.com/authorize", plain("localhost.example.com")),
            ("http://127.0.0.1.example.com/", plain("127.0.0.1.example.com")),
            ("file:///etc/passwd?response_type=code", scheme("file")),
            ("javascript:alert(document.cookie)//?x=1", scheme("javascript")),
            ("JavaScript:alert(1)", scheme("JavaScript")),
            ("ftp://as.example/authorize", scheme("ftp")),
            ("data:text/html,<script>", scheme("data")),
            ("--remote-debugging-port=9222?response_type=code", Err(Refusal::OptionLike)),
            ("-https://as.example/", Err(Refusal::OptionLike)),
            ("/authorize?x=1", Err(Refusal::NoScheme)),
            ("//evil.example/authorize", Err(Refusal::NoScheme)),
            ("as.example/authorize", Err(Refusal::NoScheme)),
            ("", Err(Refusal::NoScheme)),
            ("https://as.example/a b", Err(Refusal::Characters)),
            (" https://as.example/", Err(Refusal::Characters)),
            ("https://as.example/\n--foo", Err(Refusal::Characters)),
            ("https://as.example/#\t-x", Err(Refusal::Characters)),
            ("https://as.example/\u{1b}[2J", Err(Refusal::Characters)),
            ("https://as.example/\u{7f}", Err(Refusal::Characters)),
            ("https://as.example/\u{a0}", Err(Refusal::Characters)),
            ("https://user@as.example/", Err(Refusal::Malformed(UrlError::UserInfo))),
            ("http://127.0.0.1@evil.example/", Err(Refusal::Malformed(UrlError::UserInfo))),
            ("https:as.example", Err(Refusal::Malformed(UrlError::NotAbsolute))),
        ];
        for (url, want) in table {
            assert_eq!(&check(url), want, "{url:?}");
        }
    }

    #[test]
    fn a_refused_url_names_its_scheme_and_why() {
        let e = open("s", "file:///etc/passwd?x", Some("/bin/true")).unwrap_err();
        assert_eq!(e.to_string(), "the authorization server's URL \"file:///etc/passwd?x\" is not opened: its scheme is \"file\"; only https: (or http: to a loopback host) is opened");
        let e = open("s", "http://example.com/a", Some("/bin/true")).unwrap_err();
        assert!(e.to_string().contains("\"http\" to example.com, which is not a loopback host"), "{e}");
    }
}
