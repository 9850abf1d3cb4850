//! Messages to clients, each written together with what it is ([`About`]):
//! answers to a client's requests (results and errors, the one error
//! writer of the hub), the hub's notifications and its requests to a
//! client. Transports read the description and never the bytes.
//!
//! The writers are methods of [`Downward`], a borrow of the three things a
//! message toward a client touches: the output queue, the clients (an
//! answer closes the request in the client's open set, handing over its
//! policy record, and may complete a batch; a request waits for the end of
//! the handshake) and the policy (an answer to a tracked request gets its
//! audit line and metric sample).
//! The hub lends them with `Hub::downward`.

use std::collections::VecDeque;

use mcpx_core::error::ErrorCode;
use mcpx_core::method::Method;
use mcpx_core::rewrite;
use serde_json::Value;

use super::client::Clients;
use super::policy::HubPolicy;
use super::shape::{self, RevExt};
use super::wire;
use super::{About, ClientId, Outcome, Output};

/// The writers toward clients, over what they touch.
pub(super) struct Downward<'h> {
    pub out: &'h mut VecDeque<Output>,
    pub clients: &'h mut Clients,
    pub policy: &'h mut HubPolicy,
    pub trace: &'h mut super::trace::Trace,
    pub now_ms: u64,
}

impl Downward<'_> {
    /// Queues a message for client `c` (see [`Clients::emit`]).
    pub fn emit(&mut self, c: ClientId, bytes: Vec<u8>, about: About) {
        self.clients.emit(self.out, c, bytes, about);
    }

    /// The hub's request `id` (raw JSON) to client `c` (see [`Clients::request`]).
    pub fn request(&mut self, c: ClientId, id: &[u8], method: &str, params: &[u8]) {
        let bytes = wire::request_raw(id, method, Some(params));
        let span = rewrite::written_id_span(id.len());
        self.clients.request(self.out, c, bytes, About::Request { id: span.start..span.end });
    }

    /// A response written by core's writers with id `id` (`None`, or
    /// `null`: the request's id could not be read), saying `outcome`.
    pub fn reply(&mut self, c: ClientId, id: Option<&[u8]>, bytes: Vec<u8>, outcome: Outcome) {
        self.trace.answered(c, id, outcome, self.now_ms);
        let id = id.filter(|id| *id != b"null").map(|id| {
            let span = rewrite::written_id_span(id.len());
            span.start..span.end
        });
        debug_assert!(id.as_ref().is_none_or(|r| bytes.get(r.clone()).is_some()));
        let asked = id.clone().map(|r| &bytes[r]);
        let closed = asked.and_then(|id| self.clients.close(c, id));
        if let Some((level, line)) = self.policy.answered(c, asked, closed, bytes.len(), outcome, self.now_ms) {
            self.out.push_back(Output::Log(level, line));
        }
        self.emit(c, bytes, About::Reply { id, outcome });
    }

    /// A result the hub wrote answering request `id` of client `c`.
    pub fn result(&mut self, c: ClientId, id: &[u8], result: &[u8]) {
        self.result_as(c, id, result, Outcome::Result);
    }

    /// A result answering request `id` of client `c` (an upstream's,
    /// passed on: `outcome` from its view).
    pub fn result_as(&mut self, c: ClientId, id: &[u8], result: &[u8], outcome: Outcome) {
        self.reply(c, Some(id), wire::result(id, result), outcome);
    }

    /// An error answering request `id` of client `c`: the one error writer
    /// of the hub.
    pub fn error(&mut self, c: ClientId, id: Option<&[u8]>, code: ErrorCode, message: &str, data: Option<Value>) {
        let field = |k: &str| data.as_ref().and_then(|d| d.get(k));
        let code_n = i64::from(code.code());
        let retry_after_s = crate::policy::ratelimit::retry_after(code_n, field("limit").and_then(Value::as_str), field("retryAfterMs").and_then(Value::as_u64));
        self.reply(c, id, wire::error(id, code, message, data), Outcome::Error { code: code_n, retry_after_s });
    }

    /// An error answering request `id` of client `c` with an error object
    /// given as raw JSON (an upstream's, passed on: `outcome` from its view).
    pub fn raw_error(&mut self, c: ClientId, id: &[u8], error: &[u8], outcome: Outcome) {
        self.reply(c, Some(id), wire::error_raw(Some(id), error), outcome);
    }

    /// A notification that relates to no request of the client.
    pub fn notification(&mut self, c: ClientId, method: Method<'static>, params: Option<&[u8]>) {
        let unsolicited = method.is_unsolicited();
        self.emit(c, wire::notification(method, params), About::Notification { unsolicited, related: None });
    }

    /// A notification to one client, shaped for its revision.
    pub fn notify(&mut self, c: ClientId, method: Method<'static>, params: &Value) {
        let Some(cl) = self.clients.get(&c) else { return };
        let mut p = params.clone();
        shape::notification_params(method, &mut p, &cl.rev().features());
        let body = serde_json::to_vec(&p).unwrap_or_default();
        self.notification(c, method, Some(&body));
    }
}
