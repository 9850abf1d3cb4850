//! The signals `mcpx serve` acts on, as events: SIGTERM and SIGINT ask it
//! to stop (a drain, see `serve`; a second one ends at once), SIGHUP is a
//! separate event for whoever handles it.

use async_signal::{Signal, Signals};
use smol::stream::StreamExt as _;

/// A signal, as `serve` sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalEvent {
    /// SIGTERM or SIGINT (its name, for the log).
    Stop(&'static str),
    /// SIGHUP.
    Hangup,
}

/// Watches the signals from now on (they no longer kill the process).
pub struct Watch(Signals);

impl Watch {
    pub fn new() -> std::io::Result<Watch> {
        Signals::new([Signal::Int, Signal::Term, Signal::Hup]).map(Watch)
    }

    /// The next signal; `None` once the watch has ended.
    pub async fn next(&mut self) -> Option<SignalEvent> {
        loop {
            match self.0.next().await? {
                Ok(Signal::Int) => return Some(SignalEvent::Stop("SIGINT")),
                Ok(Signal::Term) => return Some(SignalEvent::Stop("SIGTERM")),
                Ok(Signal::Hup) => return Some(SignalEvent::Hangup),
                _ => continue,
            }
        }
    }
}
