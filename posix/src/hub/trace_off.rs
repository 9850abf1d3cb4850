//! The tracer of a build without the `traces` feature: nothing, and every
//! hook a no-op the compiler removes.

use super::wire::Msg;
use super::{ClientId, Outcome};

/// Nothing: a build without `traces` keeps no asking request.
pub(super) type Asker = ();

pub(super) fn asker(_: &[u8]) -> Asker {}

/// Never made: a build without `traces` has no trace context to send.
pub(super) enum Outgoing {}

impl Outgoing {
    pub fn meta(&self) -> Vec<(&'static str, Vec<u8>)> {
        match *self {}
    }

    pub fn header(&self) -> super::TraceHeader {
        match *self {}
    }
}

#[derive(Default)]
pub(super) struct Trace;

impl Trace {
    #[inline(always)]
    pub fn request(&mut self, _: ClientId, _: &Msg<'_>, _: Option<&str>, _: u64) {}
    #[inline(always)]
    pub fn call<'s>(&mut self, _: ClientId, _: &[u8], _: u64, _: impl FnOnce() -> (&'s str, bool, Option<&'static str>), _: u64) -> Option<Outgoing> {
        None
    }
    #[inline(always)]
    pub fn round(&mut self, _: ClientId, _: &Asker, _: u64, _: &str, _: u64) {}
    #[inline(always)]
    pub fn round_answered(&mut self, _: ClientId, _: u64, _: Option<i64>, _: u64) {}
    #[inline(always)]
    pub fn answered(&mut self, _: ClientId, _: Option<&[u8]>, _: Outcome, _: u64) {}
    #[inline(always)]
    pub fn client_gone(&mut self, _: ClientId, _: u64) {}
    #[inline(always)]
    pub fn on(&self) -> bool {
        false
    }
    #[inline(always)]
    pub fn context(&self, _: ClientId, _: &[u8]) -> Option<super::TraceHeader> {
        None
    }
}
