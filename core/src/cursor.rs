//! Opaque pagination cursors for the lists mcpx answers itself.
//!
//! A cursor names a position in one aggregated list (tools, resources, resource
//! templates, prompts) at one catalog generation. It is 18 bytes — version,
//! list, position, generation and a 64-bit HMAC-SHA256 tag under the caller's
//! key — in unpadded base64url (24 characters). Anything that does not decode
//! to such a value with a valid tag is rejected, so a client cannot forge or
//! edit a cursor, and the server can answer -32602 "invalid cursor"
//! (requirement `pagination-invalid-cursor-32602`).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

const VERSION: u8 = 1;
const RAW_LEN: usize = 18;
const TAG_LEN: usize = 8;
/// Length of an encoded cursor.
pub const ENCODED_LEN: usize = 24;

/// A decoded cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    /// Which list (caller-defined, e.g. 0 = tools).
    pub list: u8,
    /// Index of the first item of the next page.
    pub position: u32,
    /// Catalog generation the position refers to.
    pub generation: u32,
}

/// Why a cursor was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CursorError {
    /// Not 24 base64url characters of a known version.
    Malformed,
    /// The integrity tag does not match: forged or edited.
    Tampered,
}

fn tag(key: &[u8], payload: &[u8]) -> [u8; TAG_LEN] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(payload);
    let full = mac.finalize().into_bytes();
    let mut t = [0u8; TAG_LEN];
    t.copy_from_slice(&full[..TAG_LEN]);
    t
}

/// Encodes `c` under `key`.
pub fn encode(c: &Cursor, key: &[u8]) -> heapless::String<ENCODED_LEN> {
    let mut raw = [0u8; RAW_LEN];
    raw[0] = VERSION;
    raw[1] = c.list;
    raw[2..6].copy_from_slice(&c.position.to_be_bytes());
    raw[6..10].copy_from_slice(&c.generation.to_be_bytes());
    let t = tag(key, &raw[..10]);
    raw[10..].copy_from_slice(&t);
    let mut buf = [0u8; ENCODED_LEN];
    let n = URL_SAFE_NO_PAD.encode_slice(raw, &mut buf).expect("18 bytes encode to 24");
    let mut s = heapless::String::new();
    for &b in &buf[..n] {
        let _ = s.push(b as char);
    }
    s
}

/// Decodes and authenticates a cursor made by [`encode`] with the same key.
pub fn decode(s: &str, key: &[u8]) -> Result<Cursor, CursorError> {
    if s.len() != ENCODED_LEN {
        return Err(CursorError::Malformed);
    }
    let mut raw = [0u8; RAW_LEN + 3];
    let n = URL_SAFE_NO_PAD.decode_slice(s.as_bytes(), &mut raw).map_err(|_| CursorError::Malformed)?;
    if n != RAW_LEN || raw[0] != VERSION {
        return Err(CursorError::Malformed);
    }
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(&raw[..10]);
    mac.verify_truncated_left(&raw[10..RAW_LEN]).map_err(|_| CursorError::Tampered)?;
    Ok(Cursor {
        list: raw[1],
        position: u32::from_be_bytes([raw[2], raw[3], raw[4], raw[5]]),
        generation: u32::from_be_bytes([raw[6], raw[7], raw[8], raw[9]]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"test key";

    #[test]
    fn round_trip() {
        let c = Cursor { list: 2, position: 400, generation: 7 };
        let s = encode(&c, KEY);
        assert_eq!(s.len(), ENCODED_LEN);
        assert!(s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(decode(&s, KEY), Ok(c));
    }

    proptest::proptest! {
        #[test]
        fn any_cursor_round_trips(list: u8, position: u32, generation: u32) {
            let c = Cursor { list, position, generation };
            proptest::prop_assert_eq!(decode(&encode(&c, KEY), KEY), Ok(c));
        }

        #[test]
        fn arbitrary_strings_never_decode(s in ".{0,40}") {
            proptest::prop_assert!(decode(&s, KEY).is_err());
        }
    }

    #[test]
    fn tampering_is_rejected() {
        let s = encode(&Cursor { list: 0, position: 1, generation: 1 }, KEY);
        let mut b = s.as_bytes().to_vec();
        b[5] = if b[5] == b'A' { b'B' } else { b'A' };
        assert_eq!(decode(core::str::from_utf8(&b).unwrap(), KEY), Err(CursorError::Tampered));
        assert_eq!(decode(&s, b"other key"), Err(CursorError::Tampered));
        assert_eq!(decode("", KEY), Err(CursorError::Malformed));
        assert_eq!(decode("not a cursor at all!!!!!", KEY), Err(CursorError::Malformed));
        assert_eq!(decode(&s[..23], KEY), Err(CursorError::Malformed));
    }
}
