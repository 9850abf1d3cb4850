//! What the two server transports share (a supervised child in `process`,
//! a remote session in `remote`): the one restart loop ([`backoff`]) and
//! what a transport reports to the runtime ([`events`]).

pub mod backoff;
pub mod events;
#[cfg(test)]
pub mod testing;
