//! The authentication of the internal hop between replicas (sans-IO): a
//! replica that forwards a client's request to the replica that owns what
//! it continues (`hub::Output::Forward`) signs it, the owner checks it.
//!
//! The MAC is HMAC-SHA256 under a key derived from the shared state key
//! (domain-separated from the `requestState` seal, so neither can stand for
//! the other), over the sending replica's id, the time (Unix ms), the
//! principal the sender authenticated (the owner serves the request as that
//! principal's) and the body, each length-prefixed. A hop older or newer
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

/// What a checked hop asserts.
#[derive(Debug, PartialEq, Eq)]
pub struct Asserted {
    pub from: String,
    pub principal: Vec<u8>,
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

    fn mac(&self, from: &str, time_ms: u64, principal: &[u8], body: &[u8]) -> HmacSha256 {
        let mut m = HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key length");
        let time = time_ms.to_string();
        for part in [from.as_bytes(), time.as_bytes(), principal, body] {
            m.update(&(part.len() as u64).to_be_bytes());
            m.update(part);
        }
        m
    }

    /// The hop's headers (name, value) for `body` sent by replica `from` at
    /// `now_ms` (Unix ms) on behalf of `principal`.
    pub fn sign(&self, from: &str, now_ms: u64, principal: &[u8], body: &[u8]) -> [(&'static str, Vec<u8>); 4] {
        use base64::Engine as _;
        let mac = self.mac(from, now_ms, principal, body).finalize().into_bytes();
        [
            (FROM, from.as_bytes().to_vec()),
            (TIME, now_ms.to_string().into_bytes()),
            (PRINCIPAL, b64().encode(principal).into_bytes()),
            (MAC, b64().encode(mac).into_bytes()),
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
        self.mac(from, time, &principal, body)
            .verify_slice(&mac)
            .map_err(|_| forbidden("Forbidden: the hop's MAC does not match (another state key, or the request was altered)".into()))?;
        Ok(Asserted { from: from.to_string(), principal })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000_000;

    fn peers() -> Vec<String> {
        vec!["r1".into(), "r3".into()]
    }

    fn received<'a>(h: &'a [(&'static str, Vec<u8>); 4]) -> Received<'a> {
        Received { from: Some(&h[0].1), time: Some(&h[1].1), principal: Some(&h[2].1), mac: Some(&h[3].1) }
    }

    #[test]
    fn a_signed_hop_verifies_with_its_principal() {
        let k = HopKey::derive(&[7; 32]);
        let h = k.sign("r1", NOW, b"token:alice", b"{\"id\":1}");
        let got = k.verify(&received(&h), b"{\"id\":1}", NOW + 3_000, &peers()).unwrap();
        assert_eq!(got, Asserted { from: "r1".into(), principal: b"token:alice".to_vec() });
    }

    #[test]
    fn anything_else_is_refused_with_a_reason() {
        let k = HopKey::derive(&[7; 32]);
        let body = b"{\"id\":1}";
        let h = k.sign("r1", NOW, b"token:alice", body);
        let status = |r: Result<Asserted, Refused>| r.map_err(|e| (e.status, e.reason)).unwrap_err();

        let (s, why) = status(k.verify(&received(&h), b"{\"id\":2}", NOW, &peers()));
        assert_eq!((s, why.contains("MAC does not match")), (403, true), "altered body");

        let other = HopKey::derive(&[8; 32]);
        assert_eq!(status(other.verify(&received(&h), body, NOW, &peers())).0, 403, "another cluster's key");

        // The state key itself (the requestState seal) is not the hop key.
        assert!(HopKey::derive(&[7; 32]).0 != [7; 32]);

        let (s, why) = status(k.verify(&received(&h), body, NOW + MAX_SKEW_MS + 1, &peers()));
        assert_eq!((s, why.contains("replayed")), (403, true), "stale");

        let h2 = k.sign("r9", NOW, b"token:alice", body);
        let (s, why) = status(k.verify(&received(&h2), body, NOW, &peers()));
        assert_eq!((s, why.contains("not among")), (403, true), "unknown replica");

        // Another principal under the same MAC.
        let mut h3 = h.clone();
        h3[2].1 = b"dG9rZW46bWFsbG9yeQ".to_vec();
        assert_eq!(status(k.verify(&received(&h3), body, NOW, &peers())).0, 403);

        let none = Received { from: None, time: None, principal: None, mac: None };
        let (s, why) = status(k.verify(&none, body, NOW, &peers()));
        assert_eq!((s, why.contains("internal hop")), (401, true));

        let mut h4 = h.clone();
        h4[1].1 = b"yesterday".to_vec();
        assert_eq!(status(k.verify(&received(&h4), body, NOW, &peers())).0, 401);
    }
}
