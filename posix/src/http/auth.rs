//! The optional bearer token.
//!
//! `Authorization: Bearer <token>` is compared in constant time (no early exit
//! on the first differing byte, length folded into the result). The header is
//! only ever read here; nothing from the HTTP request but its body reaches the
//! hub, so a client's token can never be passed upstream (row
//! `authz-no-token-passthrough`).

use mcpx_core::frame::http::trim_ows;

/// Does `authorization` (the header value, if any) carry `token`?
pub fn bearer_ok(token: &str, authorization: Option<&[u8]>) -> bool {
    let Some(v) = authorization else { return false };
    let v = trim_ows(v);
    if v.len() < 7 || !v[..6].eq_ignore_ascii_case(b"bearer") || v[6] != b' ' {
        return false;
    }
    ct_eq(trim_ows(&v[7..]), token.as_bytes())
}

/// Constant-time equality: time depends only on the lengths.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() ^ b.len()) as u64;
    let n = a.len().max(b.len());
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0xff);
        diff |= u64::from(x ^ y);
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    // covers: streamable-http-server-authenticate
    #[test]
    fn bearer_tokens() {
        assert!(bearer_ok("s3cret", Some(b"Bearer s3cret")));
        assert!(bearer_ok("s3cret", Some(b"bearer  s3cret ")));
        assert!(!bearer_ok("s3cret", Some(b"Bearer s3cre")));
        assert!(!bearer_ok("s3cret", Some(b"Bearer s3cretX")));
        assert!(!bearer_ok("s3cret", Some(b"Basic s3cret")));
        assert!(!bearer_ok("s3cret", Some(b"Bearers3cret")));
        assert!(!bearer_ok("s3cret", Some(b"")));
        assert!(!bearer_ok("s3cret", None));
        assert!(ct_eq(b"", b""));
        assert!(!ct_eq(b"a", b""));
        assert!(!ct_eq(b"", b"\xff"));
    }
}
