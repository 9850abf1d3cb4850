//! Typed errors of the remote transport: its setup (a server's URL, its
//! configured headers, the CA certificates its TLS connections trust) and
//! its sessions ([`SessionError`]). `Display` says what to fix (the wording
//! users see in `mcpx check`, logs, the status and the JSON-RPC errors
//! answered for a server's requests); a session's error becomes text only
//! where its end is reported.

use std::fmt;
use std::path::PathBuf;

/// Why a URL is refused ([`super::url::Url::parse`], `join_same_origin`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UrlError {
    Scheme(String),
    NotAbsolute,
    UserInfo,
    UnterminatedIpv6,
    NoHost,
    BadHost(String),
    BadPort(String),
    BadPath,
    /// An HTTP+SSE `endpoint` with spaces or non-ASCII characters.
    EndpointChars(String),
    /// An HTTP+SSE `endpoint` on another origin than the stream's URL.
    OtherOrigin { endpoint: String, base: String },
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlError::Scheme(sc) => write!(f, "unsupported URL scheme \"{sc}\" (use http:// or https://)"),
            UrlError::NotAbsolute => f.write_str("not an absolute URL (expected http://host/path or https://host/path)"),
            UrlError::UserInfo => f.write_str("user info in the URL is not supported: put credentials in \"headers\""),
            UrlError::UnterminatedIpv6 => f.write_str("unterminated IPv6 address in URL"),
            UrlError::NoHost => f.write_str("URL has no host"),
            UrlError::BadHost(h) => write!(f, "URL host \"{h}\" has characters that are not allowed"),
            UrlError::BadPort(p) => write!(f, "bad port \"{p}\" in URL"),
            UrlError::BadPath => f.write_str("URL path has spaces or non-ASCII characters: percent-encode them"),
            UrlError::EndpointChars(e) => write!(f, "endpoint {e:?} has spaces or non-ASCII characters"),
            UrlError::OtherOrigin { endpoint, base } => write!(f, "endpoint {endpoint:?} is on another origin than {base}; refused"),
        }
    }
}

impl std::error::Error for UrlError {}

/// For callers that report errors as text.
impl From<UrlError> for String {
    fn from(e: UrlError) -> String {
        e.to_string()
    }
}

/// Why the CA certificates for a server cannot be had (`roots`, `conn`).
#[derive(Debug)]
pub enum TlsError {
    /// `what` (`caFile`, `SSL_CERT_FILE`, `CA bundle`) at `path` cannot be read.
    Read { what: &'static str, path: PathBuf, err: std::io::Error },
    /// It is not a PEM certificate file.
    NotPem { what: &'static str, path: PathBuf, why: String },
    /// A certificate in it was refused.
    Refused { what: &'static str, path: PathBuf, why: String },
    /// The `caFile` has no certificate block.
    NoCertificate(PathBuf),
    /// The bundle has no CA certificate webpki can use.
    NoUsable { what: &'static str, path: PathBuf },
    /// The host has no CA bundle at any of these paths.
    NoBundle(&'static [&'static str]),
    /// rustls refused the configuration.
    Setup(String),
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::Read { what, path, err } => write!(f, "{what} {}: cannot read it: {err}", path.display()),
            TlsError::NotPem { what, path, why } => write!(f, "{what} {}: not a valid PEM certificate file: {why}", path.display()),
            TlsError::Refused { what, path, why } => write!(f, "{what} {}: certificate refused: {why}", path.display()),
            TlsError::NoCertificate(path) => write!(f, "caFile {}: no \"BEGIN CERTIFICATE\" block found", path.display()),
            TlsError::NoUsable { what, path } => write!(f, "{what} {}: no usable CA certificate in it", path.display()),
            TlsError::NoBundle(candidates) => write!(
                f,
                "no CA certificates to check the server's certificate with: this build reads them from the host; \
                 set SSL_CERT_FILE, or install a CA bundle at one of {} (OpenWrt: the `ca-bundle` package), \
                 or name the server's CA in \"caFile\"",
                candidates.join(", ")
            ),
            TlsError::Setup(why) => write!(f, "TLS setup failed: {why}"),
        }
    }
}

impl std::error::Error for TlsError {}

impl From<TlsError> for String {
    fn from(e: TlsError) -> String {
        e.to_string()
    }
}

/// Why a remote server's configuration cannot work ([`super::RemoteSpec::check`]).
#[derive(Debug)]
pub enum SpecError {
    Url { url: String, err: UrlError },
    NoTls { url: String },
    HeaderName(String),
    ReservedHeader(String),
    HeaderValue(String),
    CaFileOnHttp,
    AuthorizationAndOauth,
    Tls(TlsError),
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::Url { url, err } => write!(f, "url {url:?}: {err}"),
            SpecError::NoTls { url } => {
                write!(f, "url {url:?}: this mcpx was built without TLS support (cargo feature `tls`); use an http:// URL or a build with TLS")
            }
            SpecError::HeaderName(n) => write!(f, "header name {n:?} is not a valid HTTP field name"),
            SpecError::ReservedHeader(n) => write!(f, "header {n:?} is set by mcpx itself and cannot be configured"),
            SpecError::HeaderValue(n) => write!(f, "header {n:?}: the value contains a line break or NUL"),
            SpecError::CaFileOnHttp => f.write_str("caFile is set but the url is http://, not https://"),
            SpecError::AuthorizationAndOauth => f.write_str("header \"Authorization\" and \"oauth\" are both set: mcpx sends the OAuth token itself"),
            SpecError::Tls(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SpecError {}

impl SpecError {
    /// The configuration key the problem is about.
    pub fn config_key(&self) -> &'static str {
        match self {
            SpecError::AuthorizationAndOauth => "oauth",
            SpecError::HeaderName(_) | SpecError::ReservedHeader(_) | SpecError::HeaderValue(_) => "headers",
            SpecError::CaFileOnHttp | SpecError::Tls(TlsError::NoCertificate(_)) => "caFile",
            SpecError::Tls(
                TlsError::Read { what, .. } | TlsError::NotPem { what, .. } | TlsError::Refused { what, .. } | TlsError::NoUsable { what, .. },
            ) if *what == "caFile" => "caFile",
            _ => "url",
        }
    }
}

impl From<TlsError> for SpecError {
    fn from(e: TlsError) -> SpecError {
        SpecError::Tls(e)
    }
}

impl From<SpecError> for String {
    fn from(e: SpecError) -> String {
        e.to_string()
    }
}

/// The step of a session whose HTTP exchange failed: the two opening
/// messages are named, every other message is a request of the hub's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Initialize,
    Initialized,
    /// A message from the hub; its answer says which one.
    Message,
}

impl Step {
    /// `initialize failed: ` for a named step, nothing for a message.
    fn prefix(self) -> &'static str {
        match self {
            Step::Initialize => "initialize failed: ",
            Step::Initialized => "notifications/initialized failed: ",
            Step::Message => "",
        }
    }
}

/// Why a session with a remote server failed, or one of its messages did.
/// `Display` gives the text of logs, the status and the JSON-RPC errors
/// answered to the hub.
#[derive(Debug)]
pub(crate) enum SessionError {
    /// The HTTP exchange of `step` failed (no connection, or on one).
    Http { step: Step, err: super::http::Error },
    /// `step` was answered with an HTTP error status; `body`: what came with it.
    Status { step: Step, status: u16, body: Vec<u8> },
    /// A GET for an SSE stream (HTTP+SSE, resumption) got no stream.
    NotStream { status: u16, content_type: String },
    /// Reading a reply's body or SSE stream failed.
    Read(std::io::Error),
    /// An `Mcp-Session-Id` with characters outside visible ASCII.
    BadSessionId,
    /// The initialize response held no answer to it.
    NoInitResult,
    /// Reading the initialize response failed.
    InitReply(Box<SessionError>),
    /// A 2xx reply without the answer to its request.
    NoAnswer { status: u16 },
    /// A POST's stream ended before its answer (`ended`: how, when not
    /// cleanly), and resuming it failed (`resume`: how, when it was tried).
    Unanswered { ended: Option<Box<SessionError>>, resume: Option<Box<SessionError>> },
    /// The HTTP+SSE stream closed, or failed.
    SseClosed,
    SseFailed(std::io::Error),
    /// The HTTP+SSE `endpoint` event is not UTF-8.
    EndpointNotUtf8,
    /// The HTTP+SSE `endpoint` is refused (other origin, bad characters).
    Endpoint(UrlError),
    /// No `endpoint` event came within this time.
    NoEndpoint(std::time::Duration),
    /// Falling back to HTTP+SSE failed.
    Fallback(Box<SessionError>),
    /// Re-initializing without a kept `initialize` request.
    NothingToRepeat,
    /// The session expired and re-initializing failed.
    Reinitialize(Box<SessionError>),
    /// The session expired again right after it was re-initialized.
    ExpiredAgain,
    /// Authorization failed or needs a person (the OAuth module's text).
    Auth(String),
}

impl SessionError {
    /// Whether no later request can succeed either: the server cannot be
    /// reached, is not authorized, or its expired session could not be renewed.
    pub(crate) fn ends_session(&self) -> bool {
        matches!(
            self,
            SessionError::Http { err: super::http::Error::Connect(_), .. } | SessionError::Auth(_) | SessionError::Reinitialize(_)
        )
    }
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Http { step, err: err @ super::http::Error::Connect(_) } => write!(f, "{}unreachable: {err}", step.prefix()),
            SessionError::Http { step, err } => write!(f, "{}{err}", step.prefix()),
            SessionError::Status { step, status, body } => {
                write!(f, "{}HTTP {status}{}", step.prefix(), auth_hint(*status))?;
                preview(f, body)
            }
            SessionError::NotStream { status, content_type } => write!(f, "GET answered HTTP {status} {content_type:?}"),
            SessionError::Read(e) => e.fmt(f),
            SessionError::BadSessionId => f.write_str("the server sent an Mcp-Session-Id with characters outside visible ASCII"),
            SessionError::NoInitResult => f.write_str("the server answered initialize without a result"),
            SessionError::InitReply(e) => write!(f, "reading the initialize response: {e}"),
            SessionError::NoAnswer { status } => write!(f, "HTTP {status} without a response to the request"),
            SessionError::Unanswered { ended, resume } => {
                match ended {
                    Some(e) => write!(f, "{e} before answering")?,
                    None => f.write_str("the server ended the stream before answering")?,
                }
                match resume {
                    Some(e) => write!(f, ", and resuming it failed: {e}"),
                    None => Ok(()),
                }
            }
            SessionError::SseClosed => f.write_str("the server closed the SSE stream"),
            SessionError::SseFailed(e) => write!(f, "the SSE stream failed: {e}"),
            SessionError::EndpointNotUtf8 => f.write_str("endpoint is not UTF-8"),
            SessionError::Endpoint(e) => e.fmt(f),
            SessionError::NoEndpoint(d) => write!(f, "no endpoint event within {}", crate::logline::show_duration(*d)),
            SessionError::Fallback(e) => write!(f, "HTTP+SSE fallback failed: {e}"),
            SessionError::NothingToRepeat => f.write_str("no initialize request to repeat"),
            SessionError::Reinitialize(e) => write!(f, "session expired and re-initializing failed: {e}"),
            SessionError::ExpiredAgain => f.write_str("session expired again right after re-initializing (HTTP 404)"),
            SessionError::Auth(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for SessionError {}

/// What to check after a 401 or 403.
fn auth_hint(status: u16) -> &'static str {
    match status {
        401 | 403 => " (check the server's \"headers\" in the config, e.g. Authorization, or give it an \"oauth\" block)",
        _ => "",
    }
}

/// `: <first 200 bytes of body>`, control characters as spaces, or nothing.
fn preview(f: &mut fmt::Formatter<'_>, body: &[u8]) -> fmt::Result {
    let t = body.trim_ascii();
    if t.is_empty() {
        return Ok(());
    }
    let s = String::from_utf8_lossy(&t[..t.len().min(200)]);
    let s: String = s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    write!(f, ": {s}{}", if t.len() > 200 { "…" } else { "" })
}
