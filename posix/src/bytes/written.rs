//! Messages written by core's writers into a `Vec` sized to fit: the
//! runtime's one way to write a JSON-RPC error (and the other messages the
//! hub composes). Core writes into a caller's buffer and reports the exact
//! size on overflow, so nothing here is ever cut short or dropped.

use mcpx_core::error::ErrorCode;
use mcpx_core::rewrite::{self, Overflow};

/// The output of `f` in a buffer of `estimate` bytes (a spare one when
/// there is one, [`super::spare`]), grown once to the size core reports
/// when it was too small.
pub(crate) fn grow(estimate: usize, f: impl Fn(&mut [u8]) -> Result<usize, Overflow>) -> Vec<u8> {
    let mut buf = super::spare::take();
    grow_into(&mut buf, estimate, f);
    buf
}

/// The output of `f` appended to `out`, with room for `estimate` bytes
/// first and grown once to the size core reports when that was too small.
pub(crate) fn grow_into(out: &mut Vec<u8>, estimate: usize, f: impl Fn(&mut [u8]) -> Result<usize, Overflow>) {
    let at = out.len();
    zeroed(out, at + estimate);
    let n = match f(&mut out[at..]) {
        Ok(n) => n,
        Err(Overflow { needed }) => {
            zeroed(out, at + needed);
            f(&mut out[at..]).expect("sized by the first pass")
        }
    };
    out.truncate(at + n);
}

/// A message whose bulk is raw bytes copied as they are: `head` (core's
/// writer, into room for `estimate` bytes), then `raw`, then `tail`. Only
/// the head's room is zeroed for core to write in; `raw` is copied once,
/// into storage reserved for the whole message up front.
pub(crate) fn framed(estimate: usize, head: impl Fn(&mut [u8]) -> Result<usize, Overflow>, raw: &[u8], tail: &[u8]) -> Vec<u8> {
    let mut buf = super::spare::take();
    buf.reserve_exact(estimate + raw.len() + tail.len());
    grow_into(&mut buf, estimate, head);
    buf.extend_from_slice(raw);
    buf.extend_from_slice(tail);
    buf
}

/// Zeros to copy from, 1 KiB at a time.
static ZEROS: [u8; 1024] = [0; 1024];

/// `out.resize(len, 0)` as copies of [`ZEROS`]: each one memcpy, where the
/// size-optimised edge build makes `resize` a loop of single bytes (a third
/// of its instructions per 64 KiB call).
fn zeroed(out: &mut Vec<u8>, len: usize) {
    out.truncate(len);
    out.reserve(len - out.len());
    while out.len() < len {
        out.extend_from_slice(&ZEROS[..(len - out.len()).min(ZEROS.len())]);
    }
}

/// An error response: `id` the raw id to echo (`None` leaves the member
/// out), `data` raw JSON.
pub(crate) fn error(id: Option<&[u8]>, code: ErrorCode, message: &str, data: Option<&[u8]>) -> Vec<u8> {
    let est = 64 + message.len() + id.map_or(0, <[u8]>::len) + data.map_or(0, <[u8]>::len);
    grow(est, |out| rewrite::write_error(id, code.code().into(), message, data, out))
}

/// An error response around an error object given as raw JSON (an
/// upstream's, passed on).
pub(crate) fn error_raw(id: Option<&[u8]>, error: &[u8]) -> Vec<u8> {
    grow(32 + id.map_or(0, <[u8]>::len) + error.len(), |out| rewrite::write_error_raw(id, error, out))
}

/// The error object alone (`{"code":..,"message":..}`).
pub(crate) fn error_object(code: ErrorCode, message: &str) -> Vec<u8> {
    grow(40 + message.len(), |out| rewrite::write_error_object(code.code().into(), message, None, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_longer_than_the_estimate_is_written_whole() {
        let big = "é\"\n".repeat(500);
        let e: serde_json::Value = serde_json::from_slice(&error(Some(b"1"), ErrorCode::InternalError, &big, Some(b"{\"k\":1}"))).unwrap();
        assert_eq!((e["id"].as_i64(), e["error"]["code"].as_i64()), (Some(1), Some(-32603)));
        assert_eq!((e["error"]["message"].as_str(), e["error"]["data"]["k"].as_i64()), (Some(big.as_str()), Some(1)));
        let o: serde_json::Value = serde_json::from_slice(&error_object(ErrorCode::InvalidParams, &big)).unwrap();
        assert_eq!((o["code"].as_i64(), o["message"].as_str()), (Some(-32602), Some(big.as_str())));
        let r: serde_json::Value = serde_json::from_slice(&error_raw(None, &error_object(ErrorCode::InvalidParams, &big))).unwrap();
        assert_eq!((r.get("id"), &r["error"]), (None, &o));
    }

    #[test]
    fn zeroed_grows_with_zeros_and_shrinks_as_resize_does() {
        for (start, len) in [(0, 0), (0, 1), (3, 4096), (5, 4097), (7, 3 * 4096 + 11), (9000, 12)] {
            let mut v = vec![7u8; start];
            let mut w = v.clone();
            zeroed(&mut v, len);
            w.resize(len, 0);
            assert_eq!(v, w, "from {start} to {len}");
        }
    }
}
