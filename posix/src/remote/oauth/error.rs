//! Why the OAuth client could not get a token, each case with its data;
//! `Display` says it for the user (the log, `/status`, `mcpx auth login`).

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::remote::error::{TlsError, UrlError};
use crate::remote::http;

use super::discovery::MetadataError;
use super::jwt::KeyError;
use super::opener::OpenError;
use super::store::StoreError;
use super::token::TokenError;

#[derive(Debug)]
pub enum Error {
    /// Only a person can authorize, and `mcpx serve` has no `openWith`.
    NeedsLogin { server: String },
    /// A principal's own tokens: the principal is asked to authorize at
    /// mcpx's page (`"perPrincipal"`).
    #[cfg(feature = "secrets")]
    AuthorizeAt(super::ask::Ask),
    /// A 403 that is not `insufficient_scope`.
    Forbidden,
    /// A 403 `insufficient_scope` asking for scopes the token already has.
    ScopesAlreadyHeld { scopes: Vec<String> },
    /// An OAuth endpoint could not be asked.
    Fetch { url: String, err: FetchError },
    /// Protected Resource Metadata at `at` was refused.
    ResourceMetadata { at: String, err: MetadataError },
    /// The authorization server the metadata names is not a URL.
    IssuerUrl { issuer: String, err: UrlError },
    /// Authorization Server Metadata at `at` was refused.
    ServerMetadata { at: String, err: MetadataError },
    NoServerMetadata { issuer: String },
    NoAuthorizationEndpoint,
    NoRefreshToken,
    NoPrivateKeyFile,
    KeyFileRead { path: PathBuf, err: io::Error },
    KeyFile { path: PathBuf, err: KeyError },
    Assertion(KeyError),
    /// The client-credentials grant without a configured `clientId`.
    NoClientId,
    /// Neither a Client ID Metadata Document nor registration is possible.
    NoRegistration { issuer: String, cimd_configured: bool },
    /// Dynamic Client Registration was refused.
    Registration { endpoint: String, status: u16, error: Option<String> },
    RedirectListener(io::Error),
    /// No authorization response within the login's time.
    NoRedirect { waited_s: u64 },
    Redirect(RedirectError),
    Open(OpenError),
    Token(TokenError),
    Store(StoreError),
    /// A `"tokenExchange"` instance's principal holds no current OAuth
    /// access token to mcpx to exchange.
    #[cfg(all(feature = "secrets", feature = "oauth"))]
    NoSubjectToken { principal: String },
    /// The token exchange failed (refused, or the authorization server
    /// could not be asked).
    #[cfg(all(feature = "secrets", feature = "oauth"))]
    Exchange(Box<Error>),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NeedsLogin { server } => write!(f, "needs login: run `mcpx auth login {server}`"),
            #[cfg(feature = "secrets")]
            Error::AuthorizeAt(a) => write!(f, "principal '{}' has not authorized it yet: asked to open {}", a.principal, a.url),
            Error::Forbidden => f.write_str("HTTP 403: the server refuses this request with the token mcpx has"),
            Error::ScopesAlreadyHeld { scopes } => write!(
                f,
                "HTTP 403 insufficient_scope although the token has the scopes asked for ({}); not authorizing again",
                scopes.join(" ")
            ),
            Error::Fetch { url, err } => write!(f, "{url}: {err}"),
            Error::ResourceMetadata { at, err } => write!(f, "protected resource metadata at {at}: {err}"),
            Error::IssuerUrl { issuer, err } => write!(f, "authorization server {issuer:?}: {err}"),
            Error::ServerMetadata { at, err } => write!(f, "authorization server metadata at {at}: {err}"),
            Error::NoServerMetadata { issuer } => {
                write!(f, "authorization server {issuer} publishes no metadata (tried RFC 8414 and OpenID Connect locations)")
            }
            Error::NoAuthorizationEndpoint => f.write_str("the authorization server metadata has no authorization_endpoint"),
            Error::NoRefreshToken => f.write_str("no refresh token"),
            Error::NoPrivateKeyFile => f.write_str("no privateKeyFile"),
            Error::KeyFileRead { path, err } => write!(f, "privateKeyFile {}: {err}", path.display()),
            Error::KeyFile { path, err } => write!(f, "privateKeyFile {}: {err}", path.display()),
            Error::Assertion(e) => e.fmt(f),
            Error::NoClientId => f.write_str("the client_credentials grant needs \"clientId\" in the server's \"oauth\""),
            Error::NoRegistration { issuer, cimd_configured } => write!(
                f,
                "authorization server {issuer} offers no way to register mcpx (no Client ID Metadata Document support{}, no registration endpoint); register a client there and set \"clientId\" (and \"clientSecret\") in the server's \"oauth\"",
                if *cimd_configured { "" } else { " for a configured clientMetadataUrl" }
            ),
            Error::Registration { endpoint, status, error } => {
                write!(f, "registering with {endpoint} failed: HTTP {status}")?;
                match error {
                    Some(e) => write!(f, " ({e})"),
                    None => Ok(()),
                }
            }
            Error::RedirectListener(e) => write!(f, "cannot listen for the redirect on 127.0.0.1: {e}"),
            Error::NoRedirect { waited_s } => write!(f, "no authorization arrived at the redirect URI within {waited_s} s"),
            Error::Redirect(e) => e.fmt(f),
            Error::Open(e) => e.fmt(f),
            Error::Token(e) => e.fmt(f),
            Error::Store(e) => e.fmt(f),
            #[cfg(all(feature = "secrets", feature = "oauth"))]
            Error::NoSubjectToken { principal } => write!(
                f,
                "principal '{principal}' has no current OAuth access token to mcpx, and this server is reached only with each principal's token exchanged for one of its own (\"tokenExchange\"): connect to mcpx with an access token of its OAuth issuer"
            ),
            #[cfg(all(feature = "secrets", feature = "oauth"))]
            Error::Exchange(e) => write!(f, "the token exchange (RFC 8693) for this principal failed: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// Did a token exchange fail (`"tokenExchange"`)?
    #[cfg(all(feature = "secrets", feature = "oauth"))]
    pub fn of_exchange(&self) -> bool {
        matches!(self, Error::NoSubjectToken { .. } | Error::Exchange(_))
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Error {
        Error::Store(e)
    }
}

/// Why a request to an OAuth endpoint failed.
#[derive(Debug)]
pub enum FetchError {
    Url(UrlError),
    /// Plain `http:` to a host that is not loopback.
    PlainHttp,
    Tls(TlsError),
    Http(http::Error),
    Body(io::Error),
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::Url(e) => e.fmt(f),
            FetchError::PlainHttp => f.write_str("OAuth endpoints must use https (plain http only on loopback)"),
            FetchError::Tls(e) => e.fmt(f),
            FetchError::Http(e) => e.fmt(f),
            FetchError::Body(e) => e.fmt(f),
        }
    }
}

/// Why the authorization response (the redirect's query) is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum RedirectError {
    /// The authorization server answered with `error`.
    Refused { error: String, description: Option<String> },
    /// `iss` names another issuer (RFC 9207).
    OtherIssuer { iss: String, issuer: String },
    /// The metadata promises `iss` and the response has none.
    NoIss,
    NoCode,
}

impl fmt::Display for RedirectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedirectError::Refused { error, description } => {
                write!(f, "authorization was refused: {error}")?;
                match description {
                    Some(d) => write!(f, " ({d})"),
                    None => Ok(()),
                }
            }
            RedirectError::OtherIssuer { iss, issuer } => {
                write!(f, "the authorization response comes from issuer {iss:?}, not {issuer:?}; refused")
            }
            RedirectError::NoIss => f.write_str("the authorization server promises an iss parameter but the response has none; refused"),
            RedirectError::NoCode => f.write_str("the authorization response has no code"),
        }
    }
}
