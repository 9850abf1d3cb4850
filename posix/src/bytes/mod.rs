//! Bytes on their way in and out, below every transport: newline framing
//! ([`lines`]), the bounded queues of outgoing messages ([`outbox`]),
//! buffers sized to what core's writers write ([`written`]), reused once
//! queued ([`spare`]), large buffers
//! given back to the system ([`heap`]), positions in JSON text for
//! error messages ([`jsonpos`]), JSON in canonical form for digests
//! ([`canonical`]), hex ([`hex`]) and keys for MACs ([`mac_key`]).

pub mod canonical;
pub mod heap;
pub mod hex;
pub mod jsonpos;
pub mod lines;
pub mod mac_key;
pub mod outbox;
pub mod spare;
pub mod written;
