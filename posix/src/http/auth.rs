//! Who is calling: every HTTP request but `/health` and the Protected
//! Resource Metadata is authenticated to a [`Principal`] here, and nowhere
//! else. A head with more than one `Authorization` field is refused first
//! ([`one_authorization`]).
//!
//! - No credentials configured: every client is the one principal
//!   `anonymous`, whatever `Authorization` it sends (a value nobody checks
//!   is no identity): one share of every per-principal cap, one rate-limit
//!   bucket, one catalog (`"*"`).
//! - Static tokens: `--token` / `"auth": {"bearer": …}` (principal `bearer`)
//!   and `"auth": {"tokens": {"alice": …}}` (principal `token:alice`), each
//!   compared in constant time (no early exit on the first differing byte,
//!   length folded into the result, every configured token compared).
//! - OAuth 2.1 resource server (`"auth": {"oauth": …}`, feature `oauth`):
//!   see [`oauth`]; principal `oauth:<issuer> <subject or client>`.
//!
//! - A sign-in cookie (feature `signin`, [`cookie`]): on GET `/status` and
//!   `/approvals` only, for a principal with the status role
//!   ([`Authenticator::has_status_role`], checked on every request); see
//!   `signin`.
//!
//! stdio clients keep the hub's own principal (`mcpx-local`), which no HTTP
//! principal can equal. The principal of a request is what its hub client
//! is bound to (`Input::ClientPrincipal`: `requestState`, held requests),
//! and the owner of the session it opens: another principal naming that
//! session gets 404, as for a session that does not exist.
//!
//! The header is only ever read here; nothing from the HTTP request but its
//! body reaches the hub, so a client's token can never be passed upstream
//! (row `authz-no-token-passthrough`), and no token is ever logged. The one
//! exception is no passthrough either: with features `secrets` and `oauth`,
//! while a configured server exchanges tokens, each OAuth principal's
//! latest verified token is kept in memory
//! ([`Authenticator::keep_subjects`]) as the subject token that
//! `"tokenExchange"` servers exchange, at their authorization server, for
//! a token of their own (`remote::oauth::exchange`).

#[cfg(feature = "signin")]
pub(crate) mod cookie;
#[cfg(feature = "oauth")]
mod fetch;
#[cfg(feature = "oauth")]
mod oauth;
mod prm;

#[cfg(test)]
mod tests;

use std::borrow::Cow;
#[cfg(feature = "signin")]
use std::cell::RefCell;
use std::net::IpAddr;
use mcpx_core::error::ErrorCode;
use mcpx_core::frame::http::trim_ows;
#[cfg(feature = "signin")]
use mcpx_core::names::glob_match;

use crate::bytes::ct_eq;
use super::conn::Conn;
use super::request::Request;
use super::HttpConfig;

/// Who a client is, as stable bytes (bound into `requestState`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal(Cow<'static, [u8]>);

impl Principal {
    fn new(kind: &str, name: &[u8]) -> Principal {
        let mut v = kind.as_bytes().to_vec();
        v.extend_from_slice(name);
        Principal(Cow::Owned(v))
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The principal another replica authenticated and asserts over the
    /// internal hop (`cluster_hop`), as its bytes.
    pub fn asserted(bytes: Vec<u8>) -> Principal {
        Principal(Cow::Owned(bytes))
    }

    /// Every client of a listener that asks for no credentials.
    fn anonymous() -> Principal {
        Principal(Cow::Borrowed(crate::hub::ANONYMOUS_PRINCIPAL))
    }
}

/// Who may sign in to the status pages, and for how long (feature
/// `signin`): `http.statusPrincipals` and `http.signinTtlMs`. A config
/// reload hands the running listener new ones ([`super::Http::set_signin`]).
#[cfg(feature = "signin")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignInSettings {
    /// Principal name patterns (globs) with the status role: they may sign
    /// in and see whose each isolated instance is. None: nobody signs in.
    pub status_principals: Vec<String>,
    /// How long a sign-in's cookie lasts, in seconds.
    pub ttl_s: u64,
}

#[cfg(feature = "signin")]
impl Default for SignInSettings {
    fn default() -> SignInSettings {
        SignInSettings { status_principals: Vec::new(), ttl_s: cookie::DEFAULT_TTL_S }
    }
}

/// Wall-clock seconds, for token and cookie expiry.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `"auth"` beyond the single bearer token (which stays `HttpConfig::token`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthSettings {
    /// Static tokens, each naming its principal: (name, token).
    pub tokens: Vec<(String, String)>,
    /// Validate OAuth access tokens.
    pub oauth: Option<OAuthSettings>,
}

/// `"auth": {"oauth": {...}}`: mcpx as an OAuth 2.1 resource server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OAuthSettings {
    /// The authorization server's issuer identifier (`iss` of its tokens).
    pub issuer: String,
    /// mcpx's canonical URL, the `aud` its tokens must carry (RFC 8707) and
    /// the `resource` of its Protected Resource Metadata.
    pub audience: String,
    /// Scopes every request needs.
    pub scopes: Vec<String>,
    /// Where the signing keys are; default: `jwks_uri` of the issuer's metadata.
    pub jwks_url: Option<String>,
    /// RFC 7662 introspection endpoint, for tokens that are not JWTs.
    pub introspection_url: Option<String>,
    /// mcpx's credentials at the introspection endpoint (HTTP Basic).
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
}

impl AuthSettings {
    /// Does this configuration (with the single `token`) require credentials?
    pub fn required(&self, token: Option<&str>) -> bool {
        token.is_some() || !self.tokens.is_empty() || self.oauth.is_some()
    }

    /// Refuses what cannot work: a named token that is also the single
    /// `token` (which principal would it be?), OAuth in a build without it,
    /// URLs that are not absolute (the config already refused empty and
    /// repeated named tokens, with their positions).
    pub fn check(&self, token: Option<&str>) -> Result<(), String> {
        if let Some((name, _)) = self.tokens.iter().find(|(_, t)| Some(t.as_str()) == token) {
            return Err(format!("principal '{name}' has the same token as --token / \"bearer\": give each its own"));
        }
        let Some(o) = &self.oauth else { return Ok(()) };
        if !cfg!(feature = "oauth") {
            return Err("\"auth\": {\"oauth\": ...} needs an mcpx built with the `oauth` feature".into());
        }
        prm::check(o)
    }
}

/// Why a request is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "oauth"), allow(dead_code))] // scopes, key fetches and introspection are OAuth's
pub enum Reject {
    /// 400: the head's credentials cannot be read as one (two
    /// `Authorization` fields), whatever they hold.
    BadRequest(&'static str),
    /// 401: no credentials, or not valid ones (`invalid`: the token was
    /// there, RFC 6750 `invalid_token`).
    Unauthorized { invalid: bool, why: String },
    /// 403 `insufficient_scope`: valid, without the scopes `need`.
    InsufficientScope { need: Vec<String>, why: String },
    /// 503: the authorization server could not be reached to check it.
    Unavailable(String),
    /// 429 with `Retry-After`: the peer sent too many tokens that had to be
    /// checked and were not good (`oauth::throttle`).
    Throttled { retry_after_s: u64, why: String },
}

/// The `Authorization` field of a head with `fields` named so (in order):
/// none, or exactly one. Two are refused before either is looked at, the
/// same way whatever their order or values: one component may read the
/// first and another the last (RFC 9110 §5.3 allows a repeated field only
/// for list-valued ones, which `Authorization` is not).
pub(crate) fn one_authorization<'a>(mut fields: impl Iterator<Item = &'a [u8]>) -> Result<Option<&'a [u8]>, Reject> {
    let first = fields.next();
    if fields.next().is_some() {
        return Err(Reject::BadRequest("Bad request: more than one Authorization header field"));
    }
    Ok(first)
}

/// The listener's authentication state (OAuth keys are cached here).
pub(crate) struct Authenticator {
    token: Option<String>,
    settings: AuthSettings,
    #[cfg(feature = "oauth")]
    oauth: Option<oauth::Verifier>,
    /// Seals and opens sign-in cookies.
    #[cfg(feature = "signin")]
    pub cookies: cookie::CookieKey,
    /// Who may sign in and for how long: the config's at start, a
    /// reload's since ([`Authenticator::set_signin`]).
    #[cfg(feature = "signin")]
    signin: RefCell<SignInSettings>,
    /// Where each OAuth principal's verified token goes, for token exchange.
    #[cfg(all(feature = "secrets", feature = "oauth"))]
    subjects: std::cell::OnceCell<std::rc::Rc<crate::remote::oauth::exchange::Exchanges>>,
}

impl Authenticator {
    pub fn new(cfg: &HttpConfig) -> Authenticator {
        Authenticator {
            token: cfg.token.clone(),
            settings: cfg.auth.clone(),
            #[cfg(feature = "oauth")]
            oauth: cfg.auth.oauth.clone().map(oauth::Verifier::new),
            #[cfg(feature = "signin")]
            cookies: cookie::CookieKey::derive(&cfg.shared_key.unwrap_or_else(|| {
                let mut k = [0u8; 32];
                nanorand::Rng::fill_bytes(&mut nanorand::ChaCha20::new(), &mut k);
                k
            })),
            #[cfg(feature = "signin")]
            signin: RefCell::new(cfg.signin.clone()),
            #[cfg(all(feature = "secrets", feature = "oauth"))]
            subjects: std::cell::OnceCell::new(),
        }
    }

    /// From now on, each OAuth principal's latest verified access token is
    /// handed to `exchanges` (memory only), the subject token of its
    /// `"tokenExchange"` servers' exchanges.
    #[cfg(all(feature = "secrets", feature = "oauth"))]
    pub fn keep_subjects(&self, exchanges: std::rc::Rc<crate::remote::oauth::exchange::Exchanges>) {
        let _ = self.subjects.set(exchanges);
    }

    /// Has `who` the status role now: does its name (`token:alice` is
    /// `alice`, as in `policy.approvals.approvers`) match one of
    /// `http.statusPrincipals`?
    #[cfg(feature = "signin")]
    pub fn has_status_role(&self, who: &Principal) -> bool {
        let name = crate::hub::principal_name(who.bytes());
        self.signin.borrow().status_principals.iter().any(|p| glob_match(p, name))
    }

    /// How long a sign-in made now lasts, in seconds.
    #[cfg(feature = "signin")]
    pub fn signin_ttl_s(&self) -> u64 {
        self.signin.borrow().ttl_s
    }

    /// A config reload's sign-in settings, from the next request on.
    #[cfg(feature = "signin")]
    pub fn set_signin(&self, s: SignInSettings) {
        *self.signin.borrow_mut() = s;
    }

    /// Does the listener ask for credentials?
    pub fn required(&self) -> bool {
        self.settings.required(self.token.as_deref())
    }

    /// The principal of a request's sign-in cookie (its `Cookie` fields)
    /// at `now_s`: sealed here, not expired, and (`role`) with the status
    /// role still. Asked only where the cookie counts (`signin::rules`;
    /// without the role, a person's own authorization page, `connect`).
    #[cfg(feature = "signin")]
    pub fn signed_in<'a>(&self, cookies: impl Iterator<Item = &'a [u8]>, now_s: u64, role: bool) -> Result<Principal, Reject> {
        if !self.required() {
            return Ok(Principal::anonymous());
        }
        let refuse = |why: String| Reject::Unauthorized { invalid: false, why };
        let value = cookie::find(cookies).ok_or_else(|| refuse("send Authorization: Bearer <token>, or sign in at /signin".into()))?;
        let who = self.cookies.open(value, now_s).map(Principal::asserted).map_err(|e| refuse(format!("the sign-in cookie is {e}: sign in again at /signin")))?;
        if role && !self.has_status_role(&who) {
            return Err(refuse("the signed-in principal has no status role any more (http.statusPrincipals)".into()));
        }
        Ok(who)
    }

    /// The principal of a request with these `Authorization` fields (see
    /// [`one_authorization`]) from `peer`, at wall-clock time `now_s` (Unix
    /// seconds, for token expiry).
    pub async fn authenticate<'a>(&self, fields: impl Iterator<Item = &'a [u8]>, peer: Option<IpAddr>, now_s: u64) -> Result<Principal, Reject> {
        let authorization = one_authorization(fields)?;
        if !self.required() {
            // An unchecked `Authorization` value is no identity.
            return Ok(Principal::anonymous());
        }
        let Some(token) = bearer(authorization) else {
            return Err(Reject::Unauthorized { invalid: false, why: "send Authorization: Bearer <token>".into() });
        };
        if let Some(p) = self.static_principal(token) {
            return Ok(p);
        }
        #[cfg(feature = "oauth")]
        if let Some(v) = &self.oauth {
            let (who, expires_at) = v.verify(token, peer, now_s).await?;
            #[cfg(feature = "secrets")]
            if let (Some(x), Ok(token)) = (self.subjects.get(), std::str::from_utf8(token)) {
                x.accepted(crate::hub::principal_name(who.bytes()), token, expires_at);
            }
            #[cfg(not(feature = "secrets"))]
            let _ = expires_at;
            return Ok(who);
        }
        let _ = (peer, now_s);
        Err(Reject::Unauthorized { invalid: true, why: "the bearer token is not valid".into() })
    }

    /// The principal of a static token, comparing every configured token.
    fn static_principal(&self, token: &[u8]) -> Option<Principal> {
        let mut found = None;
        if let Some(t) = &self.token {
            if ct_eq(token, t.as_bytes()) {
                found = Some(Principal::new("bearer", b""));
            }
        }
        for (name, t) in &self.settings.tokens {
            if ct_eq(token, t.as_bytes()) {
                found = Some(Principal::new("token:", name.as_bytes()));
            }
        }
        found
    }

    /// Answers a refused request as [`denial`] says.
    pub async fn refuse(&self, conn: &mut Conn, r: &Reject) -> bool {
        if let Reject::Unavailable(why) = r {
            conn.common.log(crate::hub::Level::Warn, format!("http: a request was refused (503): {why}"));
        }
        let d = denial(r, self.settings.oauth.as_ref());
        conn.common.refused(d.status, &d.message);
        let body = crate::bytes::written::error(None, ErrorCode::InvalidRequest, &d.message, None);
        let retry = d.retry_after();
        let mut hs = vec![("Content-Type", "application/json")];
        if let Some(c) = &d.challenge {
            hs.push(("WWW-Authenticate", c));
        }
        if let Some(r) = &retry {
            hs.push(("Retry-After", r));
        }
        conn.respond(d.status, &hs, &body, true).await
    }

    /// The Protected Resource Metadata (RFC 9728) request at `path`, if it is one.
    pub async fn metadata(&self, conn: &mut Conn, req: &Request) -> Option<bool> {
        let o = self.settings.oauth.as_ref()?;
        if !prm::serves(o, req.path()) {
            return None;
        }
        Some(prm::respond(o, conn, req).await)
    }
}

/// The answer to a request whose credentials were refused: its status, the
/// message of its JSON-RPC error, its `WWW-Authenticate` challenge and its
/// `Retry-After`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Denial {
    pub status: u16,
    pub message: String,
    pub challenge: Option<String>,
    pub retry_after_s: Option<u64>,
}

impl Denial {
    /// Its `Retry-After` field's value, if it has one.
    pub fn retry_after(&self) -> Option<String> {
        self.retry_after_s.map(|s| s.to_string())
    }
}

/// How refusal `r` is answered: 401/403 with `WWW-Authenticate` (RFC 6750,
/// with `resource_metadata` per RFC 9728 when `oauth` is on), 429 with
/// `Retry-After`, 400 or 503.
pub(crate) fn denial(r: &Reject, oauth: Option<&OAuthSettings>) -> Denial {
    let (status, message, challenge, retry_after_s) = match r {
        Reject::BadRequest(why) => (400, why.to_string(), None, None),
        Reject::Unauthorized { invalid, why } => {
            let error = invalid.then_some(("invalid_token", why.as_str()));
            (401, format!("Unauthorized: {why}"), Some(prm::challenge(oauth, error, None)), None)
        }
        Reject::InsufficientScope { need, why } => {
            let challenge = prm::challenge(oauth, Some(("insufficient_scope", why)), Some(need));
            (403, format!("Forbidden: {why}"), Some(challenge), None)
        }
        Reject::Unavailable(why) => (503, format!("Service unavailable: {why}"), None, None),
        Reject::Throttled { retry_after_s, why } => (429, format!("Too many requests: {why}"), None, Some(*retry_after_s)),
    };
    Denial { status, message, challenge, retry_after_s }
}

/// The token of `Authorization: Bearer <token>`, if that is what it is.
fn bearer(authorization: Option<&[u8]>) -> Option<&[u8]> {
    let v = trim_ows(authorization?);
    if v.len() < 7 || !v[..6].eq_ignore_ascii_case(b"bearer") || v[6] != b' ' {
        return None;
    }
    Some(trim_ows(&v[7..])).filter(|t| !t.is_empty())
}

