//! The sign-in's rules as functions (no I/O): which credential a request
//! is taken by, where a sign-in leads, who is sent to the form, what the
//! form answers a refused token.

use super::super::auth::{Denial, Reject};
use super::super::decide::Target;
use super::super::status_page::render::duration;

/// The pages a sign-in leads to, the only ones its cookie opens.
pub(crate) const PAGES: [&str; 2] = ["/status", "/approvals"];

/// What a request is authenticated by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Credential {
    /// Its `Authorization` field (or the lack of one).
    Header,
    /// Its sign-in cookie.
    Cookie,
}

/// The cookie stands for its principal only when no `Authorization` is
/// sent, on a GET of `/status` or `/approvals`, and on the status page's
/// own form (a POST to `/status`: an approver's Accept button; the cookie
/// is `SameSite=Strict` and the front door checks `Origin`, so another
/// site's page cannot send it): never on the MCP endpoint, `/metrics` or
/// any other POST.
pub(crate) fn credential(method: &str, target: Target, authorization: bool) -> Credential {
    let page = match (method, target) {
        ("GET", Target::Status) => true,
        #[cfg(feature = "consent")]
        ("POST", Target::Status) => true,
        #[cfg(feature = "consent")]
        ("GET", Target::Approvals) => true,
        _ => false,
    };
    if page && !authorization {
        Credential::Cookie
    } else {
        Credential::Header
    }
}

/// Where a sign-in leads: `next` when it is one of [`PAGES`] or a
/// person's authorization page `/connect/ID` (a path of this origin,
/// nothing else: no `//host`, no scheme), else `/status`.
pub(crate) fn next(asked: Option<&str>) -> std::borrow::Cow<'static, str> {
    #[cfg(feature = "secrets")]
    if let Some(id) = asked.and_then(super::super::connect::flow_id) {
        return format!("/connect/{id}").into();
    }
    PAGES.into_iter().find(|p| asked == Some(*p)).unwrap_or(PAGES[0]).into()
}

/// May this principal sign in to go to `next`? Anyone with the status
/// role; anyone at all for its own authorization page (which checks the
/// flow is theirs).
pub(crate) fn may_sign_in(status_role: bool, next: &str) -> bool {
    status_role || (cfg!(feature = "secrets") && next.starts_with("/connect/"))
}

/// Is a refused request sent to the sign-in form (303) instead of the
/// 401 JSON? A browser's GET of a page (`html`: it prefers HTML) that the
/// cookie opens, refused for want of credentials; not one that sent
/// `Authorization` (a program's), nor a throttled one or one the
/// authorization server could not check.
pub(crate) fn to_signin(r: &Reject, method: &str, target: Target, authorization: bool, html: bool) -> bool {
    matches!(r, Reject::Unauthorized { .. }) && html && method == "GET" && credential(method, target, authorization) == Credential::Cookie
}

/// Did the browser reach the listener over https (a proxy in front):
/// then the cookie is `Secure`. `origin`: the form POST's `Origin`.
pub(crate) fn secure(origin: Option<&str>) -> bool {
    origin.is_some_and(|o| o.len() > 8 && o[..8].eq_ignore_ascii_case("https://"))
}

/// How the form answers a try that did not sign in.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    pub status: u16,
    /// The line said above the form.
    pub text: String,
    /// Its `Retry-After` (seconds), when trying again later can help.
    pub retry_after: Option<String>,
}

/// The form's answer to a token refused with `d`: its status and
/// `Retry-After`, and a line a person reads: a bad token is just not
/// valid (no detail for guessing), a throttled one says when to try again.
pub(crate) fn refused(d: &Denial) -> Refused {
    let text = match (d.status, d.retry_after_s) {
        (401, _) => "That token is not valid.".to_string(),
        (_, Some(s)) => format!("Too many tokens from this address were not valid: try again in {}.", duration(s.saturating_mul(1000))),
        _ => d.message.clone(),
    };
    Refused { status: d.status, text, retry_after: d.retry_after() }
}
