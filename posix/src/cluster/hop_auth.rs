//! The authentication of the internal hop between replicas (sans-IO): a
//! replica that forwards a client's request to the replica that owns what
//! it continues (`hub::Output::Forward`) signs it, the owner checks it.
//!
//! The MAC is HMAC-SHA256 under a key derived from the shared state key
//! (domain-separated from the `requestState` seal, so neither can stand for
//! the other), over the sending replica's id, the time (Unix ms), the
//! principal the sender authenticated (the owner serves the request as that
//! principal's), the request it carries ([`Route`]: method, target and
//! session id, so a signed hop cannot be turned into another request of the
//! same body) and the body, each length-prefixed. A hop older or newer
//! than [`MAX_SKEW_MS`] is refused: a captured hop cannot be replayed later
//! (and a replayed continuation inside the window still meets the shared
//! single-use set of its `requestState`).

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The hop's path on every replica's HTTP listener.
pub const PATH: &str = "/.mcpx/hop";
/// The sending replica's id.
pub const FROM: &str = "mcpx-hop-from";
/// Unix time in ms when the hop was signed.
pub const TIME: &str = "mcpx-hop-time";
/// The asserted principal, base64url without padding.
pub const PRINCIPAL: &str = "mcpx-hop-principal";
/// The MAC, base64url without padding.
pub const MAC: &str = "mcpx-hop-mac";
/// The method of the client's request the hop carries.
pub const METHOD: &str = "mcpx-hop-method";
/// Its target (path and query): [`PATH`] itself for a continuation. Both
/// are a continuation's when absent (still under the MAC).
pub const TARGET: &str = "mcpx-hop-target";

/// How far the hop's time may be from the receiver's clock.
pub const MAX_SKEW_MS: u64 = 10_000;

/// The derivation label of the hop key.
const DOMAIN: &[u8] = b"mcpx cluster hop v1";

type HmacSha256 = Hmac<Sha256>;

/// The wall clock in Unix ms, the hop's time base.
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// The hop key of a cluster (from its shared state key).
#[derive(Clone)]
pub struct HopKey([u8; 32]);

impl std::fmt::Debug for HopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HopKey(<secret>)")
    }
}

/// The request a hop carries: a continuation of a modern request
/// ([`Route::CONTINUATION`]), or a client's request in a legacy session
/// that another replica owns (its method, target, `Mcp-Session-Id`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route<'a> {
    pub method: &'a str,
    pub target: &'a str,
    pub session: &'a [u8],
}

impl Route<'static> {
    /// A modern request continued on its owner (`hub::Output::Forward`).
    pub const CONTINUATION: Route<'static> = Route { method: "POST", target: PATH, session: b"" };
}

/// What a checked hop asserts.
#[derive(Debug, PartialEq, Eq)]
pub struct Asserted {
    pub from: String,
    pub principal: Vec<u8>,
    /// The method and target of the request it carries.
    pub method: String,
    pub target: String,
}

/// Why a hop is refused: the HTTP status (401: not a signed hop, 403: a
/// signed hop that does not check out) and the reason, for the sender.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused {
    pub status: u16,
    pub reason: String,
}

/// The hop's header values as received (`None`: absent).
pub struct Received<'a> {
    pub from: Option<&'a [u8]>,
    pub time: Option<&'a [u8]>,
    pub principal: Option<&'a [u8]>,
    pub mac: Option<&'a [u8]>,
    pub method: Option<&'a [u8]>,
    pub target: Option<&'a [u8]>,
    /// The `Mcp-Session-Id` of the carried request (`None`: none).
    pub session: Option<&'a [u8]>,
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

impl HopKey {
    pub fn derive(state_key: &[u8; 32]) -> HopKey {
        let mut m = HmacSha256::new_from_slice(state_key).expect("HMAC takes any key length");
        m.update(DOMAIN);
        HopKey(m.finalize().into_bytes().into())
    }

    fn mac(&self, from: &str, time_ms: u64, principal: &[u8], route: &Route<'_>, body: &[u8]) -> HmacSha256 {
        let mut m = HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key length");
        let time = time_ms.to_string();
        for part in [from.as_bytes(), time.as_bytes(), principal, route.method.as_bytes(), route.target.as_bytes(), route.session, body] {
            m.update(&(part.len() as u64).to_be_bytes());
            m.update(part);
        }
        m
    }

    /// The hop's headers (name, value) for `route` with `body` sent by
    /// replica `from` at `now_ms` (Unix ms) on behalf of `principal` (the
    /// session id goes as the carried request's own `Mcp-Session-Id`).
    pub fn sign(&self, from: &str, now_ms: u64, principal: &[u8], route: &Route<'_>, body: &[u8]) -> [(&'static str, Vec<u8>); 6] {
        use base64::Engine as _;
        let mac = self.mac(from, now_ms, principal, route, body).finalize().into_bytes();
        [
            (FROM, from.as_bytes().to_vec()),
            (TIME, now_ms.to_string().into_bytes()),
            (PRINCIPAL, b64().encode(principal).into_bytes()),
            (MAC, b64().encode(mac).into_bytes()),
            (METHOD, route.method.as_bytes().to_vec()),
            (TARGET, route.target.as_bytes().to_vec()),
        ]
    }

    /// Checks a received hop at `now_ms` (Unix ms); `peers`: the replica
    /// ids a hop may come from.
    pub fn verify(&self, got: &Received<'_>, body: &[u8], now_ms: u64, peers: &[String]) -> Result<Asserted, Refused> {
        use base64::Engine as _;
        let unauthorized = |reason: String| Refused { status: 401, reason };
        let forbidden = |reason: String| Refused { status: 403, reason };
        let (Some(from), Some(time), Some(principal), Some(mac)) = (got.from, got.time, got.principal, got.mac) else {
            return Err(unauthorized(format!(
                "Unauthorized: {PATH} is the internal hop between mcpx replicas; it needs the headers {FROM}, {TIME}, {PRINCIPAL} and {MAC}"
            )));
        };
        let method = got.method.unwrap_or(Route::CONTINUATION.method.as_bytes());
        let target = got.target.unwrap_or(Route::CONTINUATION.target.as_bytes());
        let (Ok(method), Ok(target)) = (std::str::from_utf8(method), std::str::from_utf8(target)) else {
            return Err(unauthorized(format!("Unauthorized: {METHOD} and {TARGET} must be UTF-8")));
        };
        let route = Route { method, target, session: got.session.unwrap_or(b"") };
        let from = std::str::from_utf8(from).map_err(|_| unauthorized(format!("Unauthorized: {FROM} is not UTF-8")))?;
        let time: u64 = std::str::from_utf8(time)
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| unauthorized(format!("Unauthorized: {TIME} is not a Unix time in milliseconds")))?;
        let principal = b64().decode(principal).map_err(|_| unauthorized(format!("Unauthorized: {PRINCIPAL} is not base64url")))?;
        let mac = b64().decode(mac).map_err(|_| unauthorized(format!("Unauthorized: {MAC} is not base64url")))?;
        if !peers.iter().any(|p| p == from) {
            return Err(forbidden(format!("Forbidden: replica {from:?} is not among this replica's cluster.peers")));
        }
        if time.abs_diff(now_ms) > MAX_SKEW_MS {
            return Err(forbidden(format!(
                "Forbidden: the hop was signed {} ms from this replica's clock (at most {MAX_SKEW_MS} ms): replayed, or the clocks differ",
                time.abs_diff(now_ms)
            )));
        }
        self.mac(from, time, &principal, &route, body)
            .verify_slice(&mac)
            .map_err(|_| forbidden("Forbidden: the hop's MAC does not match (another state key, or the request was altered)".into()))?;
        Ok(Asserted { from: from.to_string(), principal, method: method.to_string(), target: target.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000_000;

    fn peers() -> Vec<String> {
        vec!["r1".into(), "r3".into()]
    }

    fn received<'a>(h: &'a [(&'static str, Vec<u8>); 6], session: Option<&'a [u8]>) -> Received<'a> {
        let v = |i: usize| Some(h[i].1.as_slice());
        Received { from: v(0), time: v(1), principal: v(2), mac: v(3), method: v(4), target: v(5), session }
    }

    const CONT: Route<'static> = Route::CONTINUATION;

    #[test]
    fn a_signed_hop_verifies_with_its_principal() {
        let k = HopKey::derive(&[7; 32]);
        let h = k.sign("r1", NOW, b"token:alice", &CONT, b"{\"id\":1}");
        let got = k.verify(&received(&h, None), b"{\"id\":1}", NOW + 3_000, &peers()).unwrap();
        let want = Asserted { from: "r1".into(), principal: b"token:alice".to_vec(), method: "POST".into(), target: PATH.into() };
        assert_eq!(got, want);
    }

    #[test]
    fn anything_else_is_refused_with_a_reason() {
        let k = HopKey::derive(&[7; 32]);
        let body = b"{\"id\":1}";
        let h = k.sign("r1", NOW, b"token:alice", &CONT, body);
        let status = |r: Result<Asserted, Refused>| r.map_err(|e| (e.status, e.reason)).unwrap_err();

        let (s, why) = status(k.verify(&received(&h, None), b"{\"id\":2}", NOW, &peers()));
        assert_eq!((s, why.contains("MAC does not match")), (403, true), "altered body");

        let other = HopKey::derive(&[8; 32]);
        assert_eq!(status(other.verify(&received(&h, None), body, NOW, &peers())).0, 403, "another cluster's key");

        // The state key itself (the requestState seal) is not the hop key.
        assert!(HopKey::derive(&[7; 32]).0 != [7; 32]);

        let (s, why) = status(k.verify(&received(&h, None), body, NOW + MAX_SKEW_MS + 1, &peers()));
        assert_eq!((s, why.contains("replayed")), (403, true), "stale");

        let h2 = k.sign("r9", NOW, b"token:alice", &CONT, body);
        let (s, why) = status(k.verify(&received(&h2, None), body, NOW, &peers()));
        assert_eq!((s, why.contains("not among")), (403, true), "unknown replica");

        // Another principal under the same MAC.
        let mut h3 = h.clone();
        h3[2].1 = b"dG9rZW46bWFsbG9yeQ".to_vec();
        assert_eq!(status(k.verify(&received(&h3, None), body, NOW, &peers())).0, 403);

        let none = Received { from: None, time: None, principal: None, mac: None, method: None, target: None, session: None };
        let (s, why) = status(k.verify(&none, body, NOW, &peers()));
        assert_eq!((s, why.contains("internal hop")), (401, true));

        let mut h4 = h.clone();
        h4[1].1 = b"yesterday".to_vec();
        assert_eq!(status(k.verify(&received(&h4, None), body, NOW, &peers())).0, 401);
    }

    #[test]
    fn a_relayed_request_is_signed_with_its_method_target_and_session() {
        let k = HopKey::derive(&[7; 32]);
        let body = b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}";
        let route = Route { method: "POST", target: "/mcp", session: b"aaaa" };
        let h = k.sign("r1", NOW, b"token:alice", &route, body);
        let got = k.verify(&received(&h, Some(b"aaaa")), body, NOW, &peers()).unwrap();
        assert_eq!((got.method.as_str(), got.target.as_str()), ("POST", "/mcp"));
        let forbidden = |r: Result<Asserted, Refused>| r.is_err_and(|e| e.status == 403 && e.reason.contains("MAC does not match"));
        // Another session under the same MAC: a signed hop for one session
        // is no key to another's.
        assert!(forbidden(k.verify(&received(&h, Some(b"bbbb")), body, NOW, &peers())), "another session");
        assert!(forbidden(k.verify(&received(&h, None), body, NOW, &peers())), "the session left out");
        let mut other = h.clone();
        other[4].1 = b"DELETE".to_vec();
        assert!(forbidden(k.verify(&received(&other, Some(b"aaaa")), body, NOW, &peers())), "another method");
        let mut other = h.clone();
        other[5].1 = b"/messages?sessionId=bbbb".to_vec();
        assert!(forbidden(k.verify(&received(&other, Some(b"aaaa")), body, NOW, &peers())), "another target");
        // A continuation's signature does not stand for a relayed request.
        let cont = k.sign("r1", NOW, b"token:alice", &CONT, body);
        let mut as_relay = cont.clone();
        as_relay[5].1 = b"/mcp".to_vec();
        assert!(forbidden(k.verify(&received(&as_relay, None), body, NOW, &peers())));
        // Without method and target headers a hop is a continuation: a
        // relayed request's MAC does not match that.
        let none = Received { method: None, target: None, ..received(&h, Some(b"aaaa")) };
        assert!(forbidden(k.verify(&none, body, NOW, &peers())));
    }
}
