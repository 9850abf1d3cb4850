//! What comes from a client, before it is routed, as [`Clients`] methods:
//! a JSON-RPC batch taken apart (its answers then wait in the client's
//! [`PendingBatch`]), a request counted open, and the refusals of what
//! cannot be read (the id such an error carries, a message over the size
//! limit).

use std::collections::hash_map::Entry;
use std::collections::VecDeque;

use mcpx_core::clipped::{self, Clipped};
use mcpx_core::envelope::{Batch, Envelope};
use mcpx_core::error::ErrorCode;
use mcpx_core::method::Method;
use serde_json::json;

use super::{Client, Clients, PendingBatch, Stage, MAX_OPEN};
use crate::hub::request::Refusal;
use crate::hub::shape::{Rev, RevExt};
use crate::hub::tracked::Tracked;
use crate::hub::wire::{self, Bad, Kind};
use crate::hub::{About, ClientId, IdKey, Output, Oversize};

impl Clients {
    /// A JSON-RPC batch from client `c` (a stream transport's frame; the
    /// HTTP listener answers its own batches per POST): the messages in it
    /// to take one by one, its answers to wait for; `Err`: why the batch is
    /// refused as a whole.
    pub(in crate::hub) fn batch<'a>(&mut self, out: &mut VecDeque<Output>, c: ClientId, b: Batch<'a>) -> Result<Vec<Envelope<'a>>, String> {
        let rev = self.get(&c).and_then(Client::session).map(|s| s.rev);
        // Requirement: messages-batch-may-send-must-receive, stdio-message-may-be-batch (2025-03-26 only)
        match rev {
            None => return Err("Invalid request: a JSON-RPC batch cannot come before initialize".to_string()),
            Some(rev) if !Batch::allowed_in(rev) => {
                return Err(format!("Invalid request: JSON-RPC batches are not supported in protocol revision {}", rev.as_str()));
            }
            Some(_) => {}
        }
        let mut batch = PendingBatch { waiting: Vec::new(), answers: Vec::new() };
        let mut views = Vec::new();
        for (raw, el) in b.value().elements().zip(b.elements()) {
            match el {
                // Requirement: lifecycle-initialize-not-in-batch
                Ok(env) if env.kind() == Kind::Request && env.call() == Some(Method::Initialize) => {
                    let msg = "Invalid request: initialize must not be part of a JSON-RPC batch";
                    batch.answers.push(wire::error(env.id_bytes().or(Some(b"null")), ErrorCode::InvalidRequest, msg, None));
                }
                Ok(env) => {
                    if let Some(id) = env.id_bytes().filter(|_| env.kind() == Kind::Request) {
                        batch.waiting.push(IdKey::new(id));
                    }
                    views.push(env);
                }
                Err(_) if wire::notification_shaped(&raw) => {}
                Err(e) => {
                    let Bad { code, message, id } = wire::bad(&e);
                    batch.answers.push(wire::error(id.as_deref().or(Some(b"null")), code, message, None));
                }
            }
        }
        let done = batch.waiting.is_empty();
        if done && batch.answers.is_empty() {
            // Notifications and responses only: nothing to answer.
        } else if done {
            out.push_back(Output::ToClient(c, wire::batch_array(&batch.answers), About::Batch));
        } else if let Some(cl) = self.get_mut(&c) {
            cl.batches.push(batch);
        }
        Ok(views)
    }

    /// Request `m` of client `c` is open until answered (tracked up to
    /// [`MAX_OPEN`]), with the handle of the record `begin` opens for it,
    /// told whose it is and the client's stage; an id already open keeps
    /// its record. `false`: no such client.
    pub(in crate::hub) fn opened(&mut self, c: ClientId, m: &wire::Msg, begin: impl FnOnce(&[u8], &Stage) -> Tracked) -> bool {
        let Some(cl) = self.map.get_mut(&c) else { return false };
        let Some(id) = m.id_bytes().filter(|_| m.kind == Kind::Request) else { return true };
        let Client { open, principal, stage, .. } = cl;
        if open.len() >= MAX_OPEN {
            // Not kept here: its record is found by its key.
            begin(principal, stage);
        } else if let Entry::Vacant(v) = open.entry(IdKey::new(id)) {
            v.insert(begin(principal, stage));
            self.open += 1;
        }
        true
    }

    /// The id member for an error whose request id could not be read: left
    /// out on 2025-11-25, `null` (JSON-RPC 2.0) for older clients.
    pub(in crate::hub) fn unreadable_id(&self, c: ClientId) -> Option<&'static [u8]> {
        let rev = self.get(&c).map(|cl| cl.rev()).unwrap_or(Rev::LATEST_LEGACY);
        if rev.features().error_id_optional {
            None
        } else {
            Some(b"null")
        }
    }

    /// A message of client `c` over the size limit, dropped: the error
    /// that answers it and the id it carries; `None` when nothing does (an
    /// unknown client, a notification).
    pub(in crate::hub) fn too_large<'b>(&self, c: ClientId, big: &Oversize<'b>) -> Option<(Option<&'b [u8]>, Refusal)> {
        if !self.contains_key(&c) {
            return None;
        }
        // The request's own id when the message's first bytes hold it
        // (messages-error-response-same-id-unless-unreadable).
        let id = match clipped::classify(big.head, big.tail) {
            Clipped::Request { id: Some(id) } => Some(id),
            Clipped::Request { id: None } => return None, // a notification: no answer
            _ => self.unreadable_id(c),
        };
        let Oversize { len, max, limit, .. } = *big;
        let msg = format!("Invalid request: the message is {len} bytes, over {limit}; it was dropped");
        Some((id, Refusal(ErrorCode::InvalidRequest, msg, Some(json!({ "bytes": len, "limitBytes": max })))))
    }
}
