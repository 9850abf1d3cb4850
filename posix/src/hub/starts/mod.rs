//! When a server's process runs: lazy start and idle stop (`lazy`), and
//! the per-client instances of isolated servers (`isolation`). One
//! subsystem, as an instance starts as a sleeping server does, for the
//! request that needs it, and stops as an idle one does.
//!
//! [`Starts`] owns the requests parked for a start and the instance slots.
//! It reads the upstreams and clients it is given; the one upstream a
//! request is for is lent to it, and it notes that use and an awaited
//! start on it. Everything else it answers with [`Effect`]s, which the hub
//! applies in the order given (`Hub::apply_starts`).

mod isolation;
mod lazy;

use std::collections::BTreeMap;

use serde_json::Value;

use super::catalog::Kind;
use super::client::Clients;
use super::request::ReqCtx;
use super::upstream::Upstream;
use super::{ClientId, HubOptions, Level, UpstreamId};

pub use isolation::{Isolation, DEFAULT_MAX_INSTANCES};
#[cfg(test)]
pub(super) use isolation::LINGER_MS;
pub use lazy::Power;
pub(super) use lazy::{lists, seed};

/// Requests parked for a start, and the instance slots of isolated servers.
pub struct Starts {
    parked: Vec<lazy::Parked>,
    instances: BTreeMap<UpstreamId, isolation::Instance>,
    /// The hub's cap on requests in flight, which bounds the parked ones.
    max_pending: usize,
    /// The hub's separator, for the names a server not listed yet would
    /// expose.
    separator: String,
    /// Instances that cannot start until their principal authorizes (at
    /// most one ask each), told to their parked requests when they exit.
    #[cfg(feature = "secrets")]
    asks: Vec<(UpstreamId, super::UrlAsk)>,
}

/// What the hub does for [`Starts`], in the order given.
pub(super) enum Effect {
    /// A line for mcpx's own log.
    Log(Level, String),
    /// Ask the runtime to start `u` (a request waits for it).
    Start(UpstreamId),
    /// Client `c`'s request `id` waits for its server's start (traced).
    #[cfg(feature = "traces")]
    Parked { c: ClientId, id: Vec<u8> },
    /// Put `u` to sleep: if its process runs, log the line and ask the
    /// runtime to stop it.
    Sleep(UpstreamId, String),
    /// Client `c`'s parked request (`raw`, with its context when modern),
    /// served again now that its server is up, if `c` is still there.
    Serve { c: ClientId, raw: Vec<u8>, ctx: Option<ReqCtx> },
    /// Answer client `c`'s request `id` with an internal error.
    Fail { c: ClientId, id: Vec<u8>, msg: String, data: Value },
    /// Client `c`'s parked request (`raw`, `ctx`) is told its principal
    /// must authorize at `ask` first (`url_ask`).
    #[cfg(feature = "secrets")]
    AskUrl { c: ClientId, id: Vec<u8>, raw: Vec<u8>, ctx: Option<ReqCtx>, ask: super::UrlAsk },
    /// A new upstream slot, for an instance (its id is the next one).
    NewSlot(Box<Upstream>),
    /// Instance slot `u` goes with its server: its requests in flight are
    /// answered with the reason, and it is removed.
    Remove(UpstreamId, String),
    /// Upstream `u`'s items of kind `k` are these (lists given by the
    /// runtime's caches).
    Listed(UpstreamId, Kind, Vec<Value>),
    /// A server's startup settled: requests held for it may go.
    Settled,
}

impl Starts {
    pub(super) fn new(opts: &HubOptions) -> Starts {
        Starts {
            parked: Vec::new(),
            instances: BTreeMap::new(),
            max_pending: opts.max_pending,
            separator: opts.separator.clone(),
            #[cfg(feature = "secrets")]
            asks: Vec::new(),
        }
    }

    /// When [`Starts::tick`] has something to do: a parked request's
    /// deadline, an idle server's sleep, an unused instance's release.
    pub(super) fn deadline(&self, ups: &[Upstream], clients: &Clients, busy: &dyn Fn(UpstreamId) -> bool) -> Option<u64> {
        [self.lazy_deadline(ups, busy), self.isolation_deadline(ups, clients, busy)].into_iter().flatten().min()
    }

    /// Time passed (now `now`): parked requests past their deadline fail,
    /// idle servers sleep, unused instances whose owner has gone stop.
    pub(super) fn tick(&mut self, now: u64, ups: &[Upstream], clients: &Clients, busy: &dyn Fn(UpstreamId) -> bool) -> Vec<Effect> {
        let mut fx = self.lazy_tick(now, ups, busy);
        fx.extend(self.isolation_tick(now, ups, clients, busy));
        fx
    }
}
