//! Why a session with a remote server failed, or one of its messages did
//! ([`SessionError`]): above the HTTP client, whose errors it carries.
//! `Display` gives the text of logs, the status and the JSON-RPC errors
//! answered for a server's requests; a session's error becomes text only
//! where its end is reported.

use std::fmt;

use super::error::UrlError;
use super::http;

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
    Http { step: Step, err: http::Error },
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
    /// A principal's own tokens: this principal was asked to authorize.
    #[cfg(feature = "secrets")]
    AuthorizeFirst(String),
    /// A `"tokenExchange"` instance got no token for its principal (the
    /// OAuth module's text).
    #[cfg(all(feature = "secrets", feature = "oauth"))]
    Exchange(String),
}

impl SessionError {
    /// Whether no later request can succeed either: the server cannot be
    /// reached, is not authorized, or its expired session could not be renewed.
    pub(crate) fn ends_session(&self) -> bool {
        matches!(
            self,
            SessionError::Http { err: http::Error::Connect(_), .. } | SessionError::Auth(_) | SessionError::Reinitialize(_)
        ) || self.waits_for_caller()
    }

    /// Whether the session waits for its principal: to authorize in a
    /// browser, or to call again after a token exchange failed (a retry
    /// before that would only ask the authorization server the same).
    pub(crate) fn waits_for_caller(&self) -> bool {
        #[cfg(all(feature = "secrets", feature = "oauth"))]
        return matches!(self, SessionError::AuthorizeFirst(_) | SessionError::Exchange(_));
        #[cfg(all(feature = "secrets", not(feature = "oauth")))]
        return matches!(self, SessionError::AuthorizeFirst(_));
        #[cfg(not(feature = "secrets"))]
        false
    }

    /// Why authorizing failed, as the session's error.
    pub(crate) fn auth(e: super::oauth::Error) -> SessionError {
        #[cfg(all(feature = "secrets", feature = "oauth"))]
        if e.of_exchange() {
            return SessionError::Exchange(e.to_string());
        }
        SessionError::Auth(e.to_string())
    }
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Http { step, err: err @ http::Error::Connect(_) } => write!(f, "{}unreachable: {err}", step.prefix()),
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
            SessionError::NoEndpoint(d) => write!(f, "no endpoint event within {}", crate::log::line::show_duration(*d)),
            SessionError::Fallback(e) => write!(f, "HTTP+SSE fallback failed: {e}"),
            SessionError::NothingToRepeat => f.write_str("no initialize request to repeat"),
            SessionError::Reinitialize(e) => write!(f, "session expired and re-initializing failed: {e}"),
            SessionError::ExpiredAgain => f.write_str("session expired again right after re-initializing (HTTP 404)"),
            SessionError::Auth(e) => f.write_str(e),
            #[cfg(feature = "secrets")]
            SessionError::AuthorizeFirst(p) => write!(f, "waiting for principal '{p}' to authorize this server in a browser"),
            #[cfg(all(feature = "secrets", feature = "oauth"))]
            SessionError::Exchange(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for SessionError {}

/// What to check after a 401 or 403 from an upstream (the CLI, talking
/// to the hub itself, gives its own advice in its place).
pub const AUTH_HINT: &str = " (check the server's \"headers\" in the config, e.g. Authorization, or give it an \"oauth\" block)";

fn auth_hint(status: u16) -> &'static str {
    match status {
        401 | 403 => AUTH_HINT,
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
