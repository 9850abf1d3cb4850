//! What the two server transports share (a supervised child in `process`,
//! a remote session in `remote`): the one restart loop ([`backoff`]) and
//! what a transport reports to the runtime ([`events`]), and how a child's
//! stderr is told in its last error ([`stderr`]).

pub mod backoff;
pub mod events;
pub mod stderr;
#[cfg(test)]
pub mod testing;
