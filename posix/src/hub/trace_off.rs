//! The tracer of a build without the `traces` feature: nothing, and every
//! hook a no-op the compiler removes.

use super::wire::Msg;
use super::{ClientId, Outcome};

/// Never made: a build without `traces` has no trace context to send.
pub(super) struct Outgoing {
    pub traceparent: [u8; mcpx_core::trace_context::LEN],
    pub tracestate: Option<String>,
}

#[derive(Default)]
pub(super) struct Trace;

impl Trace {
    #[inline(always)]
    pub fn request(&mut self, _: ClientId, _: &Msg<'_>, _: Option<&str>, _: u64) {}
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn call(&mut self, _: ClientId, _: &[u8], _: u64, _: &str, _: bool, _: Option<&str>, _: u64) -> Option<Outgoing> {
        None
    }
    #[inline(always)]
    pub fn answered(&mut self, _: ClientId, _: Option<&[u8]>, _: Outcome, _: u64) {}
    #[inline(always)]
    pub fn client_gone(&mut self, _: ClientId, _: u64) {}
    #[inline(always)]
    pub fn on(&self) -> bool {
        false
    }
}
