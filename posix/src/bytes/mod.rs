//! Bytes on their way in and out, below every transport: newline framing
//! ([`lines`]), the bounded queues of outgoing messages ([`outbox`]),
//! buffers sized to what core's writers write ([`written`]), reused once
//! queued ([`spare`]), large buffers
//! given back to the system ([`heap`]), positions in JSON text for
//! error messages ([`jsonpos`]), JSON in canonical form for digests
//! ([`canonical`]), hex ([`hex`]), keys for MACs ([`mac_key`]) and
//! comparing secrets ([`ct_eq`]).

pub mod canonical;
pub mod heap;
pub mod hex;
pub mod jsonpos;
pub mod lines;
pub mod mac_key;
pub mod outbox;
pub mod spare;
pub mod written;

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
