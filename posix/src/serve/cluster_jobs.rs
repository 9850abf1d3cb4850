//! What the runtime queues for the cluster task (`cluster::runtime`): the
//! hub's asks of the shared store and its forwards over the hop, and how a
//! job that cannot run is answered. Below both, so that the runtime and the
//! cluster task need not import each other.

use crate::hub::shared::{Answer, Ask};
use crate::hub::{ClientId, Hub, IdKey, Input, TraceHeader};

/// Jobs running at once, at most.
pub const MAX_IN_FLIGHT: usize = 1024;

/// A job of the cluster runtime.
pub enum Job {
    Ask(Ask),
    Forward { client: ClientId, request: IdKey, msg: Vec<u8>, principal: Vec<u8>, to: String, traceparent: Option<TraceHeader> },
}

/// Gives the hub `answer` for an ask (none for ticket 0), `result` for a
/// forward.
pub fn refuse(hub: &mut Hub, job: Job, answer: Answer, result: Result<(), String>, now: u64) {
    match job {
        Job::Ask(ask) if ask.ticket != 0 => hub.handle(Input::SharedAnswered { ticket: ask.ticket, answer }, now),
        Job::Ask(_) => {}
        Job::Forward { client, request, .. } => hub.handle(Input::ForwardDone { client, request: request.bytes(), result }, now),
    }
}
