//! The authentication of the internal hop between replicas (sans-IO): a
//! replica that forwards a client's request to the replica that owns what
//! it continues (`hub::Output::Forward`) signs it, the owner checks it.
//!
//! The MAC is HMAC-SHA256 under a key derived from the shared state key
//! (domain-separated from the `requestState` seal, so neither can stand for
//! the other), over everything the receiver acts on ([`Signed`]): the
//! sending replica's id, the time (Unix ms), a random nonce, the principal
//! the sender authenticated (the owner serves the request as that
//! principal's), the request it carries ([`Route`]: method and target, so a
//! signed hop cannot be turned into another request of the same body), the
//! relayed header fields ([`SIGNED_FIELDS`], every one the hop copies) and
//! the body, each length-prefixed. A hop older or newer than
//! [`MAX_SKEW_MS`] is refused, and within that window each nonce is
//! accepted once ([`Replays`]): a captured hop cannot be sent again.
//!
//! The hop is plain HTTP: the MAC makes it tamper-proof and single-use, not
//! confidential. Run it on a private network (or through a TLS tunnel).

use std::collections::HashMap;

use hmac::Mac;

use crate::bytes::mac_key::{HmacSha256, MacKey};

/// The hop's path on every replica's HTTP listener.
pub const PATH: &str = "/.mcpx/hop";
/// The sending replica's id.
pub const FROM: &str = "mcpx-hop-from";
/// Unix time in ms when the hop was signed.
pub const TIME: &str = "mcpx-hop-time";
/// The hop's single-use id ([`NONCE_LEN`] random bytes), base64url
/// without padding.
pub const NONCE: &str = "mcpx-hop-nonce";
/// The asserted principal, base64url without padding.
pub const PRINCIPAL: &str = "mcpx-hop-principal";
/// The MAC, base64url without padding.
pub const MAC: &str = "mcpx-hop-mac";
/// The method of the client's request the hop carries.
pub const METHOD: &str = "mcpx-hop-method";
/// Its target (path and query): [`PATH`] itself for a continuation. Both
/// are a continuation's when absent (still under the MAC).
pub const TARGET: &str = "mcpx-hop-target";

/// The header fields of the carried request that are under the MAC: every
/// one a hop copies (a continuation: `Content-Type`, `Accept` and the
/// 2026-07-28 headers; a legacy session's request: `http::session_dir`'s
/// relayed fields), plus every `Mcp-Param-*` ([`SIGNED_PREFIX`]). Each
/// occurrence counts: one added, dropped or changed breaks the MAC.
pub const SIGNED_FIELDS: [&str; 7] = ["accept", "content-type", "last-event-id", "mcp-method", "mcp-name", "mcp-protocol-version", "mcp-session-id"];
/// The prefix of the 2026-07-28 parameter mirrors, all under the MAC.
pub const SIGNED_PREFIX: &str = "mcp-param-";

/// How far the hop's time may be from the receiver's clock.
pub const MAX_SKEW_MS: u64 = 10_000;
/// Length of a hop's nonce.
pub const NONCE_LEN: usize = 16;

/// The derivation label of the hop key.
const DOMAIN: &[u8] = b"mcpx cluster hop v2";


/// The wall clock in Unix ms, the hop's time base.
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// The hop key of a cluster (from its shared state key).
#[derive(Clone, Debug)]
pub struct HopKey(MacKey);

/// The request a hop carries: a continuation of a modern request
/// ([`Route::CONTINUATION`]), or a client's request in a legacy session
/// that another replica owns (its method and target; its `Mcp-Session-Id`
/// is one of the signed fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route<'a> {
    pub method: &'a str,
    pub target: &'a str,
}

impl Route<'static> {
    /// A modern request continued on its owner (`hub::Output::Forward`).
    pub const CONTINUATION: Route<'static> = Route { method: "POST", target: PATH };
}

/// A header field as (name, value).
pub type Field<'a> = (&'a [u8], &'a [u8]);

/// Everything a hop's MAC covers.
#[derive(Clone, Copy, Debug)]
pub struct Signed<'a> {
    pub from: &'a str,
    pub time_ms: u64,
    pub nonce: &'a [u8],
    pub principal: &'a [u8],
    pub route: Route<'a>,
    /// The carried request's header fields (all of them: only the signed
    /// ones, [`is_signed`], count).
    pub fields: &'a [Field<'a>],
    pub body: &'a [u8],
}

/// What a checked hop asserts.
#[derive(Debug, PartialEq, Eq)]
pub struct Asserted {
    pub from: String,
    pub principal: Vec<u8>,
    /// The method and target of the request it carries.
    pub method: String,
    pub target: String,
    /// Its single-use id and time, for [`Replays::admit`].
    pub nonce: [u8; NONCE_LEN],
    pub time_ms: u64,
}

/// Why a hop is refused: the HTTP status (401: not a signed hop, 403: a
/// signed hop that does not check out or was seen before, 503: too many
/// hops to remember) and the reason, for the sender.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused {
    pub status: u16,
    pub reason: String,
}

/// The hop's header values as received (`None`: absent).
pub struct Received<'a> {
    pub from: Option<&'a [u8]>,
    pub time: Option<&'a [u8]>,
    pub nonce: Option<&'a [u8]>,
    pub principal: Option<&'a [u8]>,
    pub mac: Option<&'a [u8]>,
    pub method: Option<&'a [u8]>,
    pub target: Option<&'a [u8]>,
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

/// Is a field named `name` under the MAC?
pub fn is_signed(name: &[u8]) -> bool {
    SIGNED_FIELDS.iter().any(|s| name.eq_ignore_ascii_case(s.as_bytes()))
        || (name.len() > SIGNED_PREFIX.len() && name[..SIGNED_PREFIX.len()].eq_ignore_ascii_case(SIGNED_PREFIX.as_bytes()))
}

/// The MAC of `s` under `key` (HMAC-SHA256; each part length-prefixed, the
/// signed fields by lowercase name, each name's values in their order).
pub fn mac(key: &HopKey, s: &Signed<'_>) -> [u8; 32] {
    hmac_of(key, s).finalize().into_bytes().into()
}

fn hmac_of(key: &HopKey, s: &Signed<'_>) -> HmacSha256 {
    let mut m = key.0.mac();
    let mut part = |p: &[u8]| {
        m.update(&(p.len() as u64).to_be_bytes());
        m.update(p);
    };
    let time = s.time_ms.to_string();
    for p in [s.from.as_bytes(), time.as_bytes(), s.nonce, s.principal, s.route.method.as_bytes(), s.route.target.as_bytes(), s.body] {
        part(p);
    }
    let mut fields: Vec<(Vec<u8>, &[u8])> = s.fields.iter().filter(|(n, _)| is_signed(n)).map(|(n, v)| (n.to_ascii_lowercase(), *v)).collect();
    fields.sort_by(|a, b| a.0.cmp(&b.0)); // stable: a name's values keep their order
    part(&(fields.len() as u64).to_be_bytes());
    for (n, v) in &fields {
        part(n);
        part(v);
    }
    m
}

impl HopKey {
    pub fn derive(state_key: &[u8; 32]) -> HopKey {
        HopKey(MacKey::derive(state_key, DOMAIN))
    }

    /// The hop's own headers (name, value) for `s` (its relayed fields go
    /// as they are, beside these).
    pub fn sign(&self, s: &Signed<'_>) -> [(&'static str, Vec<u8>); 7] {
        use base64::Engine as _;
        [
            (FROM, s.from.as_bytes().to_vec()),
            (TIME, s.time_ms.to_string().into_bytes()),
            (NONCE, b64().encode(s.nonce).into_bytes()),
            (PRINCIPAL, b64().encode(s.principal).into_bytes()),
            (MAC, b64().encode(mac(self, s)).into_bytes()),
            (METHOD, s.route.method.as_bytes().to_vec()),
            (TARGET, s.route.target.as_bytes().to_vec()),
        ]
    }

    /// Checks a received hop (`fields`: every header field of the request,
    /// `body` its body) at `now_ms` (Unix ms); `peers`: the replica ids a
    /// hop may come from. Single use is [`Replays::admit`]'s, after this.
    pub fn verify(&self, got: &Received<'_>, fields: &[Field<'_>], body: &[u8], now_ms: u64, peers: &[String]) -> Result<Asserted, Refused> {
        use base64::Engine as _;
        let unauthorized = |reason: String| Refused { status: 401, reason };
        let forbidden = |reason: String| Refused { status: 403, reason };
        let (Some(from), Some(time), Some(nonce), Some(principal), Some(mac_got)) = (got.from, got.time, got.nonce, got.principal, got.mac) else {
            return Err(unauthorized(format!(
                "Unauthorized: {PATH} is the internal hop between mcpx replicas; it needs the headers {FROM}, {TIME}, {NONCE}, {PRINCIPAL} and {MAC}"
            )));
        };
        let method = got.method.unwrap_or(Route::CONTINUATION.method.as_bytes());
        let target = got.target.unwrap_or(Route::CONTINUATION.target.as_bytes());
        let (Ok(method), Ok(target)) = (std::str::from_utf8(method), std::str::from_utf8(target)) else {
            return Err(unauthorized(format!("Unauthorized: {METHOD} and {TARGET} must be UTF-8")));
        };
        let from = std::str::from_utf8(from).map_err(|_| unauthorized(format!("Unauthorized: {FROM} is not UTF-8")))?;
        let time: u64 = std::str::from_utf8(time)
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| unauthorized(format!("Unauthorized: {TIME} is not a Unix time in milliseconds")))?;
        let nonce: [u8; NONCE_LEN] = b64()
            .decode(nonce)
            .ok()
            .and_then(|n| n.try_into().ok())
            .ok_or_else(|| unauthorized(format!("Unauthorized: {NONCE} is not {NONCE_LEN} bytes in base64url")))?;
        let principal = b64().decode(principal).map_err(|_| unauthorized(format!("Unauthorized: {PRINCIPAL} is not base64url")))?;
        let mac_got = b64().decode(mac_got).map_err(|_| unauthorized(format!("Unauthorized: {MAC} is not base64url")))?;
        if !peers.iter().any(|p| p == from) {
            return Err(forbidden(format!("Forbidden: replica {from:?} is not among this replica's cluster.peers")));
        }
        if time.abs_diff(now_ms) > MAX_SKEW_MS {
            return Err(forbidden(format!(
                "Forbidden: the hop was signed {} ms from this replica's clock (at most {MAX_SKEW_MS} ms): replayed, or the clocks differ",
                time.abs_diff(now_ms)
            )));
        }
        let route = Route { method, target };
        let signed = Signed { from, time_ms: time, nonce: &nonce, principal: &principal, route, fields, body };
        hmac_of(self, &signed)
            .verify_slice(&mac_got)
            .map_err(|_| forbidden("Forbidden: the hop's MAC does not match (another state key, or the request was altered)".into()))?;
        Ok(Asserted { from: from.to_string(), principal, method: method.to_string(), target: target.to_string(), nonce, time_ms: time })
    }
}

/// The nonces of the hops accepted within the last window: each hop is
/// served once. Bounded by [`Replays::CAP`]; at the bound, expired nonces
/// are dropped, and when none has expired a new hop is refused (503)
/// rather than an unexpired nonce forgotten.
#[derive(Clone, Debug, Default)]
pub struct Replays {
    /// Nonce → the receiver's time after which its hop is stale anyway.
    seen: HashMap<[u8; NONCE_LEN], u64>,
}

impl Replays {
    /// Nonces remembered at most: 6,500 hops a second over a 10 s window.
    pub const CAP: usize = 65_536;

    /// Admits checked hop `a` at `now_ms` if its nonce was not seen.
    pub fn admit(&mut self, a: &Asserted, now_ms: u64) -> Result<(), Refused> {
        self.admit_within(a, now_ms, Self::CAP)
    }

    fn admit_within(&mut self, a: &Asserted, now_ms: u64, cap: usize) -> Result<(), Refused> {
        if self.seen.contains_key(&a.nonce) {
            return Err(Refused {
                status: 403,
                reason: format!("Forbidden: replayed hop: this hop from replica {:?} was served already (each hop is single-use)", a.from),
            });
        }
        if self.seen.len() >= cap {
            self.seen.retain(|_, until| *until >= now_ms);
        }
        if self.seen.len() >= cap {
            return Err(Refused {
                status: 503,
                reason: format!("Service unavailable: {cap} hops were accepted within {MAX_SKEW_MS} ms, the most this replica remembers to refuse replays; retry shortly"),
            });
        }
        self.seen.insert(a.nonce, a.time_ms.saturating_add(MAX_SKEW_MS));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000_000;
    const KEY: [u8; 32] = [7; 32];
    const NONCE1: [u8; NONCE_LEN] = [1; NONCE_LEN];
    const BODY: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\"}";

    fn peers() -> Vec<String> {
        vec!["r1".into(), "r3".into()]
    }

    /// A relayed legacy request as the sender sees it.
    fn fields() -> Vec<Field<'static>> {
        vec![
            (b"mcp-session-id", b"aaaa"),
            (b"mcp-protocol-version", b"2025-11-25"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-type", b"application/json"),
        ]
    }

    fn signed<'a>(fields: &'a [Field<'a>]) -> Signed<'a> {
        let route = Route { method: "POST", target: "/mcp" };
        Signed { from: "r1", time_ms: NOW, nonce: &NONCE1, principal: b"token:alice", route, fields, body: BODY }
    }

    /// The request as the receiver gets it: the hop's own headers, then
    /// the relayed fields and what the HTTP client adds.
    struct Wire {
        hop: Vec<(&'static str, Vec<u8>)>,
        fields: Vec<(Vec<u8>, Vec<u8>)>,
        body: Vec<u8>,
    }

    impl Wire {
        fn of(s: &Signed<'_>) -> Wire {
            let mut fields: Vec<(Vec<u8>, Vec<u8>)> = s.fields.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect();
            fields.push((b"host".to_vec(), b"127.0.0.1:7402".to_vec()));
            Wire { hop: HopKey::derive(&KEY).sign(s).to_vec(), fields, body: s.body.to_vec() }
        }

        fn set_hop(&mut self, name: &str, value: &[u8]) {
            self.hop.iter_mut().find(|(n, _)| *n == name).expect("a hop header").1 = value.to_vec();
        }

        fn check(&self, key: &HopKey, now: u64) -> Result<Asserted, Refused> {
            let h = |name: &str| self.hop.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_slice());
            let got = Received { from: h(FROM), time: h(TIME), nonce: h(NONCE), principal: h(PRINCIPAL), mac: h(MAC), method: h(METHOD), target: h(TARGET) };
            let fields: Vec<Field<'_>> = self.fields.iter().map(|(n, v)| (n.as_slice(), v.as_slice())).collect();
            key.verify(&got, &fields, &self.body, now, &peers())
        }
    }

    #[test]
    fn a_signed_hop_verifies_with_what_it_asserts() {
        let f = fields();
        let got = Wire::of(&signed(&f)).check(&HopKey::derive(&KEY), NOW + 3_000).unwrap();
        let want = Asserted {
            from: "r1".into(),
            principal: b"token:alice".to_vec(),
            method: "POST".into(),
            target: "/mcp".into(),
            nonce: NONCE1,
            time_ms: NOW,
        };
        assert_eq!(got, want);
        // A continuation: no method and target headers needed.
        let cont = Signed { route: Route::CONTINUATION, fields: &[], ..signed(&f) };
        let mut w = Wire::of(&cont);
        w.hop.retain(|(n, _)| *n != METHOD && *n != TARGET);
        assert_eq!(w.check(&HopKey::derive(&KEY), NOW).map(|a| a.target), Ok(PATH.to_string()));
    }

    /// Each part of a hop changed after signing: refused, 403 with the MAC
    /// named (or 401 where it no longer parses).
    #[test]
    fn every_part_tampered_is_refused() {
        let f = fields();
        let k = HopKey::derive(&KEY);
        type Tamper = fn(&mut Wire);
        let table: &[(&str, Tamper, u16, &str)] = &[
            ("body", |w| w.body = b"{\"id\":3}".to_vec(), 403, "MAC does not match"),
            ("principal", |w| w.set_hop(PRINCIPAL, b"dG9rZW46bWFsbG9yeQ"), 403, "MAC does not match"),
            ("time (within the window)", |w| w.set_hop(TIME, (NOW + 1).to_string().as_bytes()), 403, "MAC does not match"),
            ("nonce", |w| w.set_hop(NONCE, b"AgICAgICAgICAgICAgICAg"), 403, "MAC does not match"),
            ("method", |w| w.set_hop(METHOD, b"DELETE"), 403, "MAC does not match"),
            ("target", |w| w.set_hop(TARGET, b"/messages?sessionId=bbbb"), 403, "MAC does not match"),
            ("from (another peer)", |w| w.set_hop(FROM, b"r3"), 403, "MAC does not match"),
            ("method and target dropped", |w| w.hop.retain(|(n, _)| *n != METHOD && *n != TARGET), 403, "MAC does not match"),
            ("accept changed", |w| w.fields[2].1 = b"text/event-stream".to_vec(), 403, "MAC does not match"),
            ("accept added twice", |w| w.fields.push((b"accept".to_vec(), b"*/*".to_vec())), 403, "MAC does not match"),
            ("content-type changed", |w| w.fields[3].1 = b"text/plain".to_vec(), 403, "MAC does not match"),
            ("session changed", |w| w.fields[0].1 = b"bbbb".to_vec(), 403, "MAC does not match"),
            ("session dropped", |w| drop(w.fields.remove(0)), 403, "MAC does not match"),
            ("protocol version changed", |w| w.fields[1].1 = b"2026-07-28".to_vec(), 403, "MAC does not match"),
            ("last-event-id added", |w| w.fields.push((b"last-event-id".to_vec(), b"7".to_vec())), 403, "MAC does not match"),
            ("mcp-method added", |w| w.fields.push((b"mcp-method".to_vec(), b"tools/call".to_vec())), 403, "MAC does not match"),
            ("mcp-name added", |w| w.fields.push((b"mcp-name".to_vec(), b"x".to_vec())), 403, "MAC does not match"),
            ("mcp-param added", |w| w.fields.push((b"mcp-param-region".to_vec(), b"eu".to_vec())), 403, "MAC does not match"),
            ("field name case", |w| w.fields[2].0 = b"ACCEPT".to_vec(), 0, ""),
            ("unsigned host changed", |w| w.fields[4].1 = b"elsewhere".to_vec(), 0, ""),
            ("mac", |w| w.set_hop(MAC, b"AAAA"), 403, "MAC does not match"),
            ("mac not base64url", |w| w.set_hop(MAC, b"+/"), 401, "base64url"),
            ("nonce too short", |w| w.set_hop(NONCE, b"AQID"), 401, "16 bytes"),
            ("time not a number", |w| w.set_hop(TIME, b"yesterday"), 401, "Unix time"),
            ("stale", |w| w.set_hop(TIME, (NOW - MAX_SKEW_MS - 1).to_string().as_bytes()), 403, "replayed, or the clocks differ"),
            ("unknown replica", |w| w.set_hop(FROM, b"r9"), 403, "not among"),
            ("nonce dropped", |w| w.hop.retain(|(n, _)| *n != NONCE), 401, "internal hop"),
            ("unsigned", |w| w.hop.clear(), 401, "internal hop"),
        ];
        for (what, tamper, status, reason) in table {
            let mut w = Wire::of(&signed(&f));
            tamper(&mut w);
            match (w.check(&k, NOW), status) {
                (Ok(_), 0) => {}
                (Err(r), s) if r.status == *s && r.reason.contains(reason) => {}
                (got, _) => panic!("{what}: {got:?}, not {status} {reason:?}"),
            }
        }
        // Another cluster's key; the state key itself is not the hop key.
        let other = HopKey::derive(&[8; 32]);
        assert_eq!(Wire::of(&signed(&f)).check(&other, NOW).map_err(|r| r.status), Err(403));
        assert!(*HopKey::derive(&KEY).0.bytes() != KEY);
    }

    #[test]
    fn each_hop_is_admitted_once() {
        let f = fields();
        let k = HopKey::derive(&KEY);
        let w = Wire::of(&signed(&f));
        let mut seen = Replays::default();
        let a = w.check(&k, NOW).unwrap();
        assert_eq!(seen.admit(&a, NOW), Ok(()));
        // The same bytes again, still inside the window.
        let again = w.check(&k, NOW + 5_000).unwrap();
        let r = seen.admit(&again, NOW + 5_000).unwrap_err();
        assert_eq!((r.status, r.reason.contains("replayed hop")), (403, true), "{r:?}");
        // Past the window the hop itself is stale.
        assert_eq!(w.check(&k, NOW + MAX_SKEW_MS + 1).map_err(|r| r.status), Err(403));
        // Another nonce is another hop.
        let other = Signed { nonce: &[2; NONCE_LEN], ..signed(&f) };
        assert_eq!(seen.admit(&Wire::of(&other).check(&k, NOW).unwrap(), NOW), Ok(()));
    }

    #[test]
    fn at_the_bound_new_hops_wait_rather_than_unexpired_nonces_go() {
        let hop = |n: u8, time_ms: u64| Asserted {
            from: "r1".into(),
            principal: Vec::new(),
            method: "POST".into(),
            target: PATH.into(),
            nonce: [n; NONCE_LEN],
            time_ms,
        };
        let mut seen = Replays::default();
        assert_eq!(seen.admit_within(&hop(1, NOW), NOW, 2), Ok(()));
        assert_eq!(seen.admit_within(&hop(2, NOW + 1_000), NOW + 1_000, 2), Ok(()));
        let r = seen.admit_within(&hop(3, NOW + 2_000), NOW + 2_000, 2).unwrap_err();
        assert_eq!((r.status, r.reason.contains("retry shortly")), (503, true), "{r:?}");
        assert_eq!(seen.admit_within(&hop(1, NOW), NOW + 2_000, 2).map_err(|r| r.status), Err(403), "not forgotten");
        // Hop 1's window is over: its nonce may go, and hop 3 is admitted.
        let later = NOW + MAX_SKEW_MS + 1;
        assert_eq!(seen.admit_within(&hop(3, later), later, 2), Ok(()));
        assert_eq!(seen.admit_within(&hop(2, NOW + 1_000), later, 2).map_err(|r| r.status), Err(403), "hop 2 is still remembered");
    }
}
