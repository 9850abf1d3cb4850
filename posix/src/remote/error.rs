//! Typed errors of the remote transport's setup: a server's URL, its
//! configured headers, the CA certificates its TLS connections trust. The
//! lowest layer of `remote` (url, roots and conn use them; a session's
//! errors are in `session_error`, above the HTTP client). `Display` says
//! what to fix (the wording users see in `mcpx check`, logs and the status).

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
