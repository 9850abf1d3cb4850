//! What a server's transport (a supervised child, a remote session) reports
//! to the runtime, and the restart loop (`backoff`) with it: a leaf below
//! both, so neither imports the other for it.

use crate::hub::{Next, Oversize, UpstreamId};

/// What a transport reports, in order, for each attempt: `started`, then
/// `message`s and `garbage`, then `exited` (also after a failed spawn, with
/// no `started` before it).
pub trait Events {
    fn started(&self, id: UpstreamId);
    fn message(&self, id: UpstreamId, line: &[u8]);
    /// A message that came on the response stream of the request with JSON-RPC
    /// id `request` (raw JSON): an HTTP upstream's POST stream. Transports
    /// without such streams never call it.
    fn message_on(&self, id: UpstreamId, line: &[u8], request: &[u8]) {
        let _ = request;
        self.message(id, line);
    }
    /// Output on stdout that is not a message (a banner).
    fn garbage(&self, id: UpstreamId, what: &str);
    /// A message over the transport's cap (a line on stdout over
    /// `Options::max_line`, an HTTP upstream's SSE event), skipped; its
    /// edges tell the request it may answer. `on`: the request on whose
    /// response stream it came (HTTP upstreams). By default reported as garbage.
    fn too_large(&self, id: UpstreamId, big: &Oversize<'_>, on: Option<&[u8]>) {
        let _ = on;
        self.garbage(id, &format!("message of {} bytes is over {}; dropped", big.len, big.limit));
    }
    /// `next`: what the restart loop does now (wait, give up, stop).
    fn exited(&self, id: UpstreamId, reason: &str, stderr_tail: &str, next: Next);
}
