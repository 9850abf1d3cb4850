//! mcpx as an OAuth 2.1 resource server: an access token is accepted when
//! it was issued by the configured issuer for mcpx (its `aud` is the
//! configured audience, RFC 8707), has not expired, and grants every
//! configured scope.
//!
//! - A JWT (RFC 9068 style) is verified locally with a key of the issuer's
//!   JWKS: `jwksUrl`, or the `jwks_uri` of the issuer's metadata (RFC 8414,
//!   then OpenID Connect discovery; its `issuer` must be the configured
//!   one). Keys are cached; a token signed with an unknown `kid` refetches
//!   them, at most once per [`REFRESH_MIN_S`]. Only asymmetric algorithms.
//!   A header with `crit` is refused: mcpx understands no extension
//!   (RFC 7515 §4.1.11).
//! - Any other token goes to the RFC 7662 introspection endpoint, when one
//!   is configured; what a peer without a good token can make mcpx ask
//!   there is bounded by [`throttle`].
//!
//! The claim checks ([`check_claims`]) are one pure function of (claims,
//! settings, now) for both kinds. `exp`, `nbf` and `iat` are NumericDates
//! (RFC 7519 §2: a JSON number, possibly fractional); any other value makes
//! the token invalid. The principal is `oauth:<iss> <sub>` (the `client_id`
//! for a token without a subject, or with an empty one).

mod throttle;

use std::cell::RefCell;
use std::net::IpAddr;

use base64::Engine as _;
use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
use serde_json::Value;

use super::{fetch, OAuthSettings, Principal, Reject};
use crate::remote::oauth::discovery;
use crate::remote::oauth::form::encode_component;
use crate::remote::url::Url;

/// Fewest seconds between two JWKS fetches.
pub(super) const REFRESH_MIN_S: u64 = 10;
/// Clock skew allowed on `exp` and `nbf`.
const LEEWAY_S: u64 = 30;

/// Signature algorithms accepted: public-key ones only (a shared secret
/// would let anyone holding it mint tokens).
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

pub(super) struct Verifier {
    s: OAuthSettings,
    keys: RefCell<Keys>,
    /// Held while the keys are fetched: requests that need them meanwhile
    /// wait for that fetch instead of failing or starting their own.
    fetching: smol::lock::Mutex<()>,
    throttle: RefCell<throttle::Throttle>,
}

#[derive(Default)]
struct Keys {
    set: Vec<Jwk>,
    /// When the last fetch started (Unix s), and why it failed, if it did.
    fetched_s: Option<u64>,
    error: Option<String>,
    /// The JWKS URL, once known (configured or discovered).
    jwks_uri: Option<String>,
}

fn invalid(why: impl Into<String>) -> Reject {
    Reject::Unauthorized { invalid: true, why: why.into() }
}

impl Verifier {
    pub fn new(s: OAuthSettings) -> Verifier {
        let keys = Keys { jwks_uri: s.jwks_url.clone(), ..Keys::default() };
        Verifier { s, keys: RefCell::new(keys), fetching: smol::lock::Mutex::new(()), throttle: RefCell::default() }
    }

    /// The principal of access token `token`, sent by `peer`, at Unix time
    /// `now`, and the token's expiry (`exp`, Unix seconds) if it has one.
    pub async fn verify(&self, token: &[u8], peer: Option<IpAddr>, now: u64) -> Result<(Principal, Option<u64>), Reject> {
        let token = std::str::from_utf8(token).map_err(|_| invalid("the access token is not text"))?;
        // Requirement rows authz-server-validates-token, authz-accept-only-own-tokens
        let (claims, jwt) = if token.split('.').count() == 3 {
            (self.jwt(token, now).await?, true)
        } else if let Some(url) = &self.s.introspection_url {
            (self.introspect_throttled(url, token, throttle::Peer::of(peer), now).await?, false)
        } else {
            return Err(invalid("the access token is not a JWT, and no introspectionUrl is configured"));
        };
        let who = check_claims(&self.s, &claims, now, jwt)?;
        // Checked by check_claims: a NumericDate, if there.
        let expires_at = numeric_date(&claims, "exp").ok().flatten().map(|e| e as u64);
        Ok((who, expires_at))
    }

    /// The claims of a JWT whose signature verifies with an issuer key.
    async fn jwt(&self, token: &str, now: u64) -> Result<Value, Reject> {
        let header = jwt_header(token)?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(invalid(format!("the access token is signed with {:?}, which mcpx does not accept", header.alg)));
        }
        let key = match self.key(header.kid.as_deref(), header.alg) {
            Some(k) => k,
            None => {
                self.refresh(now).await;
                match self.key(header.kid.as_deref(), header.alg) {
                    Some(k) => k,
                    None => return Err(self.no_key()),
                }
            }
        };
        let mut v = Validation::new(header.alg);
        // The claims are checked by check_claims, with mcpx's clock.
        v.validate_exp = false;
        v.validate_nbf = false;
        v.validate_aud = false;
        v.required_spec_claims.clear();
        jsonwebtoken::decode::<Value>(token, &key, &v)
            .map(|d| d.claims)
            .map_err(|e| invalid(format!("the access token's signature does not verify ({e})")))
    }

    /// Why no key fits: the keys could not be fetched (503), or the token
    /// names a key the issuer does not publish (401).
    fn no_key(&self) -> Reject {
        let k = self.keys.borrow();
        match (&k.error, k.set.is_empty()) {
            (Some(e), true) => Reject::Unavailable(format!("mcpx cannot get the authorization server's keys: {e}")),
            _ => invalid("the access token is signed with a key the issuer does not publish"),
        }
    }

    /// The cached key for `kid` (the only key when the token names none),
    /// if its type and declared algorithm fit `alg`.
    fn key(&self, kid: Option<&str>, alg: Algorithm) -> Option<DecodingKey> {
        let k = self.keys.borrow();
        let signing: Vec<&Jwk> = k.set.iter().filter(|j| j.common.public_key_use != Some(PublicKeyUse::Encryption)).collect();
        let jwk = match kid {
            Some(kid) => *signing.iter().find(|j| j.common.key_id.as_deref() == Some(kid))?,
            None if signing.len() == 1 => signing[0],
            None => return None,
        };
        if jwk.common.key_algorithm.is_some_and(|a| a.to_string() != format!("{alg:?}")) {
            return None;
        }
        DecodingKey::from_jwk(jwk).ok()
    }

    /// Fetches the JWKS again, unless that was tried less than
    /// [`REFRESH_MIN_S`] ago (or is under way: then waits for it); a failure
    /// is kept for [`Verifier::no_key`].
    async fn refresh(&self, now: u64) {
        let _one = self.fetching.lock().await;
        {
            let mut k = self.keys.borrow_mut();
            if k.fetched_s.is_some_and(|t| now < t.saturating_add(REFRESH_MIN_S)) {
                return;
            }
            k.fetched_s = Some(now);
        }
        let r = self.fetch_keys().await;
        let mut k = self.keys.borrow_mut();
        match r {
            Ok(set) => {
                k.set = set;
                k.error = None;
            }
            Err(e) => k.error = Some(e),
        }
    }

    async fn fetch_keys(&self) -> Result<Vec<Jwk>, String> {
        let known = self.keys.borrow().jwks_uri.clone();
        let uri = match known {
            Some(u) => u,
            None => {
                let u = self.discover().await?;
                self.keys.borrow_mut().jwks_uri = Some(u.clone());
                u
            }
        };
        let doc = fetch::get_json(&uri).await?;
        let keys = doc.get("keys").and_then(Value::as_array).ok_or_else(|| format!("{uri}: no \"keys\" array"))?;
        // Keys of types mcpx cannot use are skipped, not fatal.
        Ok(keys.iter().filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok()).collect())
    }

    /// The `jwks_uri` of the issuer's metadata: RFC 8414 (path inserted),
    /// then OpenID Connect discovery (path inserted, then appended).
    async fn discover(&self) -> Result<String, String> {
        let mut last = String::new();
        for url in metadata_urls(&self.s.issuer)? {
            match fetch::get_json(&url).await {
                Ok(doc) => {
                    if doc.get("issuer").and_then(Value::as_str) != Some(self.s.issuer.as_str()) {
                        return Err(format!("{url}: its \"issuer\" is not {:?} (RFC 8414 §3.3)", self.s.issuer));
                    }
                    return doc.get("jwks_uri").and_then(Value::as_str).map(str::to_string).ok_or_else(|| format!("{url}: no \"jwks_uri\""));
                }
                Err(e) => last = e,
            }
        }
        Err(format!("no authorization server metadata for {} ({last})", self.s.issuer))
    }

    /// RFC 7662 within `peer`'s share ([`throttle`]): the answer of an
    /// active token.
    async fn introspect_throttled(&self, url: &str, token: &str, peer: throttle::Peer, now: u64) -> Result<Value, Reject> {
        let d = mcpx_core::request_state::digest(token.as_bytes());
        match self.throttle.borrow_mut().admit(&d, peer, now) {
            Ok(()) => {}
            Err(throttle::Refusal::KnownInactive) => return Err(invalid(INACTIVE)),
            Err(throttle::Refusal::OverShare { retry_after_s }) => {
                let why = format!(
                    "too many access tokens from this address were not active (at most {} introspections at once, one more a second); retry in {retry_after_s} s",
                    throttle::BURST
                );
                return Err(Reject::Throttled { retry_after_s, why });
            }
        }
        let answer = self.introspect(url, token).await;
        let outcome = match &answer {
            Ok(Some(_)) => throttle::Outcome::Active,
            Ok(None) => throttle::Outcome::Inactive,
            Err(_) => throttle::Outcome::Failed,
        };
        self.throttle.borrow_mut().settle(d, peer, outcome, now);
        answer?.ok_or_else(|| invalid(INACTIVE))
    }

    /// RFC 7662: the introspection answer, `None` for an inactive token.
    async fn introspect(&self, url: &str, token: &str) -> Result<Option<Value>, Reject> {
        let body = format!("token={}&token_type_hint=access_token", encode_component(token));
        let basic;
        let mut headers: Vec<(&str, &[u8])> = vec![("content-type", b"application/x-www-form-urlencoded"), ("accept", b"application/json")];
        if let Some(id) = &self.s.client_id {
            let pair = format!("{}:{}", encode_component(id), encode_component(self.s.client_secret.as_deref().unwrap_or("")));
            basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair));
            headers.push(("authorization", basic.as_bytes()));
        }
        let answer = fetch::exchange("POST", url, &headers, body.as_bytes())
            .await
            .map_err(|e| Reject::Unavailable(format!("mcpx cannot introspect the access token: {e}")))?;
        let v: Value = serde_json::from_slice(&answer).map_err(|_| Reject::Unavailable(format!("{url}: the introspection answer is not JSON")))?;
        Ok((v.get("active") == Some(&Value::Bool(true))).then_some(v))
    }
}

/// The refusal of a token the introspection endpoint calls inactive.
const INACTIVE: &str = "the access token is not active";

/// The JOSE header of a JWT, refused when it has `crit`: mcpx understands
/// no extension header, and RFC 7515 §4.1.11 says a token naming one it
/// does not understand is invalid.
fn jwt_header(token: &str) -> Result<Header, Reject> {
    let not_jwt = |e: String| invalid(format!("the access token is not a valid JWT ({e})"));
    let part = token.split('.').next().unwrap_or("");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part).map_err(|e| not_jwt(e.to_string()))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| not_jwt(e.to_string()))?;
    if v.get("crit").is_some() {
        return Err(invalid("the access token's header has \"crit\": mcpx understands no critical extension (RFC 7515 §4.1.11)"));
    }
    serde_json::from_value(v).map_err(|e| not_jwt(e.to_string()))
}

/// Where the metadata of `issuer` may be: the same locations, in the same
/// order, as the remote transport's discovery looks at.
fn metadata_urls(issuer: &str) -> Result<Vec<String>, String> {
    let u = Url::parse(issuer).map_err(|e| format!("issuer {issuer:?}: {e}"))?;
    Ok(discovery::as_metadata_locations(&u))
}

/// The checks every accepted token passes, JWT (`jwt`: `exp` required) or
/// introspected.
pub(super) fn check_claims(s: &OAuthSettings, c: &Value, now: u64, jwt: bool) -> Result<Principal, Reject> {
    let iss = c.get("iss").and_then(Value::as_str);
    if iss.is_some_and(|i| i != s.issuer) || (jwt && iss.is_none()) {
        return Err(invalid(format!("the access token was not issued by {}", s.issuer)));
    }
    // Requirement rows authz-server-validates-audience (RFC 8707: aud is mcpx's canonical URL)
    let aud_ok = match c.get("aud") {
        Some(Value::String(a)) => *a == s.audience,
        Some(Value::Array(a)) => a.iter().any(|x| x.as_str() == Some(s.audience.as_str())),
        _ => false,
    };
    if !aud_ok {
        return Err(invalid(format!("the access token is not meant for {} (its audience differs)", s.audience)));
    }
    check_times(c, now, jwt)?;
    let granted = granted_scopes(c);
    let missing: Vec<&String> = s.scopes.iter().filter(|need| !granted.iter().any(|g| covers(g, need))).collect();
    if !missing.is_empty() {
        let list = missing.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(" ");
        return Err(Reject::InsufficientScope { need: s.scopes.clone(), why: format!("the access token lacks the scope {list}") });
    }
    let named = |k: &str| c.get(k).and_then(Value::as_str).filter(|w| !w.is_empty());
    let who = named("sub").or_else(|| named("client_id"));
    let who = who.ok_or_else(|| invalid("the access token names neither a subject (sub) nor a client (client_id)"))?;
    Ok(Principal::new("oauth:", format!("{} {who}", s.issuer).as_bytes()))
}

/// `exp` (required of a JWT), `nbf` and `iat` at Unix time `now`, with
/// [`LEEWAY_S`] either way.
fn check_times(c: &Value, now: u64, jwt: bool) -> Result<(), Reject> {
    let now = now as f64;
    let leeway = LEEWAY_S as f64;
    match numeric_date(c, "exp")? {
        Some(exp) if exp + leeway <= now => return Err(invalid("the access token has expired")),
        None if jwt => return Err(invalid("the access token has no expiry (exp)")),
        _ => {}
    }
    if numeric_date(c, "nbf")?.is_some_and(|nbf| nbf > now + leeway) {
        return Err(invalid("the access token is not valid yet (nbf)"));
    }
    numeric_date(c, "iat")?;
    Ok(())
}

/// Claim `name` as a NumericDate (RFC 7519 §2: a JSON number of seconds,
/// possibly fractional), if present; any other value is refused, not
/// ignored (an `exp` of `"0"` is not a token without expiry).
fn numeric_date(c: &Value, name: &str) -> Result<Option<f64>, Reject> {
    match c.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => {
            let kind = match other {
                Value::String(_) => "a string",
                Value::Bool(_) => "a boolean",
                Value::Array(_) => "a list",
                Value::Object(_) => "an object",
                _ => "null",
            };
            Err(invalid(format!("the access token's {name} is {kind}, not a NumericDate (a number of seconds)")))
        }
    }
}

/// `scope` (space-separated, RFC 9068/7662) or `scp` (a list or string).
fn granted_scopes(c: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["scope", "scp"] {
        match c.get(key) {
            Some(Value::String(s)) => out.extend(s.split(' ').filter(|x| !x.is_empty()).map(str::to_string)),
            Some(Value::Array(a)) => out.extend(a.iter().filter_map(Value::as_str).map(str::to_string)),
            _ => {}
        }
    }
    out
}

/// Does granted scope `g` imply `need`? The same scope, or a broader one in
/// the `:` hierarchy (`files` implies `files:read`; row `authz-server-scope-hierarchy`).
fn covers(g: &str, need: &str) -> bool {
    g == need || need.strip_prefix(g).is_some_and(|rest| rest.starts_with(':'))
}

#[cfg(test)]
mod tests;
