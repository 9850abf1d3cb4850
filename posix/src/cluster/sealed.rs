//! Values in the shared store are sealed (sans-IO): whoever can write to
//! Redis must not be able to put a tool in a server's listing, hand a task
//! to another principal or point a session at another replica. Each value
//! mcpx writes is stored as `v1.<MAC>.<value>`, the MAC (HMAC-SHA256 under a
//! key derived from the shared state key, domain-separated from the
//! `requestState` seal and the hop) over the key name and the value, so a
//! value cannot be forged nor moved to another key; and each kind of value
//! has a size bound ([`KINDS`]), checked before anything else (Redis is
//! asked for a value's length first: a larger one is not even fetched).
//!
//! Not sealed, because no value is read: a `requestState` nonce's claim
//! (`mcpx:nonce:*`, its existence is the claim) and the rate-limit buckets
//! (`mcpx:bucket:*`, counters that Redis's own script updates). Whoever
//! writes to Redis can still burn nonces, refill or drain buckets, delete
//! entries, or put back an older sealed value of the same key.

use base64::Engine as _;
use hmac::Mac;

use crate::bytes::mac_key::{HmacSha256, MacKey};


/// The derivation label of the value key.
const DOMAIN: &[u8] = b"mcpx store value v1";
/// The version tag a sealed value starts with.
const TAG: &[u8] = b"v1.";
/// Length of the MAC in base64url without padding.
const MAC_B64_LEN: usize = 43;
/// What sealing adds to a value: tag, MAC and the `.` after it.
pub const OVERHEAD: usize = TAG.len() + MAC_B64_LEN + 1;

/// A kind of value mcpx keeps in the store: its key prefix (the names are
/// `hub::shared`'s and `cluster::directory`'s; a test holds them equal),
/// what it is, and its largest value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    pub prefix: &'static str,
    pub what: &'static str,
    pub max_len: usize,
}

/// Every kind of value mcpx writes, with its bound.
pub const KINDS: [Kind; 8] = [
    Kind { prefix: "mcpx:lists:", what: "a server's listing", max_len: 1 << 20 },
    Kind { prefix: "mcpx:task:", what: "a task's record", max_len: 64 << 10 },
    // A replica id (at most `hub::shared::MAX_REPLICA_LEN`).
    Kind { prefix: "mcpx:session:", what: "a session's replica", max_len: 64 },
    // What a session keeps (`hub::Snapshot`): its `initialize` within
    // `KEPT_LIMITS` (20 KiB) and room for its subscriptions.
    Kind { prefix: "mcpx:session-state:", what: "a session's state", max_len: 64 << 10 },
    // Its audit note: who decided, how, after how long, the digest.
    Kind { prefix: "mcpx:approval:", what: "a remembered approval", max_len: 4 << 10 },
    // The pin file every replica shares (`hub::pins::share`): definitions
    // of every server, and the changes seen.
    Kind { prefix: "mcpx:pins", what: "the pins", max_len: 4 << 20 },
    Kind { prefix: "mcpx:approvals-waiting:", what: "a replica's calls waiting for approval", max_len: crate::hub::approvals::MAX_ANNOUNCED },
    // Encrypted besides (`remote::oauth::kept`, whose prefix a test holds equal).
    Kind { prefix: "mcpx:oauth-tokens:", what: "a principal's tokens for a server", max_len: 16 << 10 },
];

/// The kind of store key `key`; `None`: not a key mcpx writes values to.
pub fn kind(key: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|k| key.starts_with(k.prefix))
}

/// The largest stored (sealed) value under `key`; 0 for a key of no kind.
pub fn max_stored(key: &str) -> usize {
    kind(key).map_or(0, |k| k.max_len + OVERHEAD)
}

/// Why a value is not written, or not believed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejected {
    /// Not a key of one of the [`KINDS`].
    UnknownKind,
    /// Over the bound of its kind (the stored length, the bound).
    TooLarge { len: usize, max: usize },
    /// Not a string in Redis (another type under the key).
    NotAString,
    /// Not in the sealed form.
    NotSealed,
    /// Sealed under another key, for another key name, or altered.
    Forged,
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejected::UnknownKind => f.write_str("not a key mcpx keeps values under"),
            Rejected::TooLarge { len, max } => write!(f, "{len} bytes, over the bound of {max} bytes for its kind"),
            Rejected::NotAString => f.write_str("not a string value"),
            Rejected::NotSealed => f.write_str("not sealed by an mcpx replica (no v1.<MAC>. prefix)"),
            Rejected::Forged => f.write_str("its MAC does not match (written without the shared state key, or altered)"),
        }
    }
}

/// The key that seals values (from the shared state key).
#[derive(Clone, Debug)]
pub struct ValueKey(MacKey);

impl ValueKey {
    pub fn derive(state_key: &[u8; 32]) -> ValueKey {
        ValueKey(MacKey::derive(state_key, DOMAIN))
    }

    fn mac(&self, key: &str, value: &[u8]) -> HmacSha256 {
        let mut m = self.0.mac();
        for part in [key.as_bytes(), value] {
            m.update(&(part.len() as u64).to_be_bytes());
            m.update(part);
        }
        m
    }

    /// `value` as stored under `key`: within its kind's bound, sealed.
    pub fn seal(&self, key: &str, value: &[u8]) -> Result<Vec<u8>, Rejected> {
        let kind = kind(key).ok_or(Rejected::UnknownKind)?;
        if value.len() > kind.max_len {
            return Err(Rejected::TooLarge { len: value.len(), max: kind.max_len });
        }
        let mac = self.mac(key, value).finalize().into_bytes();
        let mut out = Vec::with_capacity(OVERHEAD + value.len());
        out.extend_from_slice(TAG);
        out.extend_from_slice(b64().encode(mac).as_bytes());
        out.push(b'.');
        out.extend_from_slice(value);
        Ok(out)
    }

    /// The value stored under `key` as `stored`, if it is one this
    /// cluster sealed for that key (and within its kind's bound).
    pub fn open<'v>(&self, key: &str, stored: &'v [u8]) -> Result<&'v [u8], Rejected> {
        let max = max_stored(key);
        if max == 0 {
            return Err(Rejected::UnknownKind);
        }
        if stored.len() > max {
            return Err(Rejected::TooLarge { len: stored.len(), max: max - OVERHEAD });
        }
        let rest = stored.strip_prefix(TAG).ok_or(Rejected::NotSealed)?;
        if rest.len() <= MAC_B64_LEN || rest[MAC_B64_LEN] != b'.' {
            return Err(Rejected::NotSealed);
        }
        let mac = b64().decode(&rest[..MAC_B64_LEN]).map_err(|_| Rejected::NotSealed)?;
        let value = &rest[MAC_B64_LEN + 1..];
        self.mac(key, value).verify_slice(&mac).map_err(|_| Rejected::Forged)?;
        Ok(value)
    }
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTS: &str = "mcpx:lists:64656d6f";
    const TASK: &str = "mcpx:task:mcpx-r1.abc";

    fn k() -> ValueKey {
        ValueKey::derive(&[7; 32])
    }

    #[test]
    fn a_sealed_value_opens_under_its_key_only() {
        let v = br#"{"server":"demo","lists":{"tools":[]}}"#;
        let sealed = k().seal(LISTS, v).unwrap();
        assert!(sealed.starts_with(b"v1.") && sealed.ends_with(v) && sealed.len() == v.len() + OVERHEAD);
        assert_eq!(k().open(LISTS, &sealed), Ok(&v[..]));
        // Sealing is deterministic (a conditional delete compares values).
        assert_eq!(k().seal(LISTS, v).unwrap(), sealed);
        assert_eq!(k().open(TASK, &k().seal(TASK, b"").unwrap()), Ok(&b""[..]), "an empty value");
    }

    /// Each way a stored value can be wrong, and what `open` says.
    #[test]
    fn what_does_not_verify_is_rejected() {
        let v = br#"{"owner":"r1","task":{"principal":"746f6b656e3a616c696365"}}"#;
        let sealed = k().seal(TASK, v).unwrap();
        let forged_value = {
            let mut s = sealed.clone();
            let n = s.len();
            s[n - 5] ^= 1;
            s
        };
        let mut mac_altered = sealed.clone();
        mac_altered[5] = if mac_altered[5] == b'A' { b'B' } else { b'A' };
        let table: &[(&str, &str, Vec<u8>, Rejected)] = &[
            ("unsealed JSON", TASK, v.to_vec(), Rejected::NotSealed),
            ("value altered", TASK, forged_value, Rejected::Forged),
            ("MAC altered", TASK, mac_altered, Rejected::Forged),
            ("moved to another key", "mcpx:task:mcpx-r1.other", sealed.clone(), Rejected::Forged),
            ("another cluster's key", TASK, ValueKey::derive(&[8; 32]).seal(TASK, v).unwrap(), Rejected::Forged),
            ("truncated", TASK, sealed[..40].to_vec(), Rejected::NotSealed),
            ("no dot after the MAC", TASK, [&sealed[..46], b"x", &sealed[47..]].concat(), Rejected::NotSealed),
            ("an older tag", TASK, [b"v0".as_slice(), &sealed[2..]].concat(), Rejected::NotSealed),
            ("over the bound", TASK, vec![b'x'; (64 << 10) + OVERHEAD + 1], Rejected::TooLarge { len: (64 << 10) + OVERHEAD + 1, max: 64 << 10 }),
            ("not a kind mcpx writes", "mcpx:bucket:x", sealed.clone(), Rejected::UnknownKind),
            ("not mcpx's", "lists:x", sealed.clone(), Rejected::UnknownKind),
        ];
        for (what, key, stored, want) in table {
            assert_eq!(k().open(key, stored).as_ref().map_err(Clone::clone), Err(want.clone()), "{what}");
        }
    }

    #[cfg(feature = "secrets")]
    const OAUTH_TOKENS: &str = crate::remote::oauth::kept::SHARED_PREFIX;
    #[cfg(not(feature = "secrets"))]
    const OAUTH_TOKENS: &str = "mcpx:oauth-tokens:";

    #[test]
    fn each_kind_is_bounded_when_written() {
        let bounds: Vec<(&str, usize)> = KINDS.iter().map(|k| (k.prefix, k.max_len)).collect();
        assert_eq!(bounds, [("mcpx:lists:", 1 << 20), ("mcpx:task:", 64 << 10), ("mcpx:session:", 64), ("mcpx:session-state:", 64 << 10), ("mcpx:approval:", 4 << 10), ("mcpx:pins", 4 << 20), ("mcpx:approvals-waiting:", 1 << 20), ("mcpx:oauth-tokens:", 16 << 10)]);
        // The keys the store is given are of these kinds.
        let keys = [
            crate::hub::shared::lists_key("x"),
            crate::hub::shared::task_key("x"),
            crate::cluster::directory::key("x"),
            crate::cluster::directory::state_key("x"),
            crate::hub::shared::approval_key("p", "s", "t", &[0; 32]),
            crate::hub::shared::PINS_KEY.to_string(),
            crate::hub::shared::waiting_key("x"),
            format!("{}x:y", OAUTH_TOKENS),
        ];
        let kinds: Vec<Option<&str>> = keys.iter().map(|k| kind(k).map(|k| k.prefix)).collect();
        assert_eq!(kinds, [Some("mcpx:lists:"), Some("mcpx:task:"), Some("mcpx:session:"), Some("mcpx:session-state:"), Some("mcpx:approval:"), Some("mcpx:pins"), Some("mcpx:approvals-waiting:"), Some("mcpx:oauth-tokens:")]);
        for kind in KINDS {
            let key = format!("{}x", kind.prefix);
            assert!(k().seal(&key, &vec![b'x'; kind.max_len]).is_ok(), "{}", kind.what);
            assert_eq!(k().seal(&key, &vec![b'x'; kind.max_len + 1]), Err(Rejected::TooLarge { len: kind.max_len + 1, max: kind.max_len }));
            assert_eq!(max_stored(&key), kind.max_len + OVERHEAD);
        }
        assert_eq!(k().seal("mcpx:nonce:00", b"1"), Err(Rejected::UnknownKind));
    }
}
