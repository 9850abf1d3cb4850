//! The sign-in cookie (feature `signin`): `mcpx_session=EXP.PRINCIPAL.MAC`,
//! the principal's bytes (base64url) and when it ends (Unix seconds) under
//! an HMAC-SHA256 of the listener's key. It holds no token; altered,
//! forged or expired it is no credential.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use hmac::Mac;

use crate::bytes::mac_key::{HmacSha256, MacKey};

/// The cookie's name.
pub const NAME: &str = "mcpx_session";
/// How long a sign-in lasts unless `http.signinTtlMs` says: a working day.
pub const DEFAULT_TTL_S: u64 = 8 * 3600;
/// The derivation label of the cookie key (no other MAC can stand for it).
const DOMAIN: &[u8] = b"mcpx sign-in cookie v1";

/// The key cookies are sealed with.
#[derive(Clone, Debug)]
pub struct CookieKey(MacKey);

/// Why a cookie is no credential.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CookieError {
    /// Not `EXP.PRINCIPAL.MAC`.
    Malformed,
    /// Not sealed with this key, or altered.
    BadMac,
    /// Past its end.
    Expired,
}

impl std::fmt::Display for CookieError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CookieError::Malformed => "malformed",
            CookieError::BadMac => "not sealed by this hub",
            CookieError::Expired => "expired",
        })
    }
}

impl CookieKey {
    /// The key from `secret`: the shared state key (a cookie then works on
    /// every replica) or the process's own random one.
    pub fn derive(secret: &[u8; 32]) -> CookieKey {
        CookieKey(MacKey::derive(secret, DOMAIN))
    }

    fn mac(&self, exp: &str, principal: &[u8]) -> HmacSha256 {
        let mut m = self.0.mac();
        m.update(exp.as_bytes());
        m.update(b".");
        m.update(principal);
        m
    }

    /// The cookie value of `principal` until `exp` (Unix seconds).
    pub fn seal(&self, principal: &[u8], exp: u64) -> String {
        let exp = exp.to_string();
        let mac = self.mac(&exp, principal).finalize().into_bytes();
        format!("{exp}.{}.{}", B64.encode(principal), B64.encode(mac))
    }

    /// The principal a cookie value names, at `now` (Unix seconds).
    pub fn open(&self, value: &str, now: u64) -> Result<Vec<u8>, CookieError> {
        let mut parts = value.split('.');
        let (Some(exp), Some(who), Some(mac), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(CookieError::Malformed);
        };
        let at: u64 = exp.parse().map_err(|_| CookieError::Malformed)?;
        let who = B64.decode(who).map_err(|_| CookieError::Malformed)?;
        let mac = B64.decode(mac).map_err(|_| CookieError::Malformed)?;
        self.mac(exp, &who).verify_slice(&mac).map_err(|_| CookieError::BadMac)?;
        if at <= now {
            return Err(CookieError::Expired);
        }
        Ok(who)
    }
}

/// The value of the first `mcpx_session` cookie in a request's `Cookie`
/// fields (RFC 6265 §5.4: `name=value` pairs joined by `; `).
pub fn find<'a>(fields: impl Iterator<Item = &'a [u8]>) -> Option<&'a str> {
    find_named(fields, NAME)
}

/// The value of the first cookie named `name` in a request's `Cookie` fields.
pub fn find_named<'a>(fields: impl Iterator<Item = &'a [u8]>, name: &str) -> Option<&'a str> {
    fields
        .filter_map(|f| std::str::from_utf8(f).ok())
        .flat_map(|f| f.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(name)?.strip_prefix('='))
}

/// The `Set-Cookie` value that stores `value` for `max_age_s` (0 clears
/// it); `secure` when the browser reached the listener over https.
pub fn set_cookie(value: &str, max_age_s: u64, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{NAME}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_s}{secure}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000;

    /// What a value opens to, in the tables.
    type Opened = Result<&'static [u8], CookieError>;

    #[test]
    fn a_sealed_cookie_opens_until_it_ends() {
        let k = CookieKey::derive(&[7; 32]);
        let v = k.seal(b"token:alice", NOW + 60);
        assert!(!v.contains("alice"), "{v}");
        let other = CookieKey::derive(&[8; 32]);
        let bob = k.seal(b"token:bob", NOW + 60);
        let (exp, rest) = v.split_once('.').unwrap();
        let alice_mac = rest.split_once('.').unwrap().1;
        let bob_who = bob.split('.').nth(1).unwrap();
        // (value, at, opened)
        let table: [(String, u64, Opened); 10] = [
            (v.clone(), NOW, Ok(b"token:alice")),
            (v.clone(), NOW + 59, Ok(b"token:alice")),
            (v.clone(), NOW + 60, Err(CookieError::Expired)),
            (v.clone(), NOW + 10_000, Err(CookieError::Expired)),
            (other.seal(b"token:alice", NOW + 60), NOW, Err(CookieError::BadMac)),
            // Another principal under alice's MAC, a later end under hers.
            (format!("{exp}.{bob_who}.{alice_mac}"), NOW, Err(CookieError::BadMac)),
            (format!("{}.{rest}", NOW + 99_999), NOW, Err(CookieError::BadMac)),
            (format!("{v}.x"), NOW, Err(CookieError::Malformed)),
            ("soon.dG9rZW46YWxpY2U.AAAA".into(), NOW, Err(CookieError::Malformed)),
            (String::new(), NOW, Err(CookieError::Malformed)),
        ];
        for (value, at, opened) in table {
            assert_eq!(k.open(&value, at), opened.map(<[u8]>::to_vec), "{value} at {at}");
        }
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        // (Cookie fields, found)
        let table: [(&[&str], Option<&str>); 6] = [
            (&["mcpx_session=a.b.c"], Some("a.b.c")),
            (&["theme=dark; mcpx_session=a.b.c; x=1"], Some("a.b.c")),
            (&["theme=dark", "mcpx_session=1.2.3"], Some("1.2.3")),
            (&["xmcpx_session=1", "mcpx_sessionx=2"], None),
            (&["mcpx_session=first", "mcpx_session=second"], Some("first")),
            (&[], None),
        ];
        for (fields, found) in table {
            assert_eq!(find(fields.iter().map(|f| f.as_bytes())), found, "{fields:?}");
        }
    }

    #[test]
    fn set_cookie_is_http_only_same_site_and_secure_over_https() {
        assert_eq!(set_cookie("v", 60, false), "mcpx_session=v; Path=/; HttpOnly; SameSite=Strict; Max-Age=60");
        assert_eq!(set_cookie("", 0, true), "mcpx_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0; Secure");
    }
}
