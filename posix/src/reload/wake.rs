//! The reload task's wake-up: [`request`] asks for a reload from anywhere
//! (SIGHUP, the status page's Disable and Enable buttons) without taking
//! in the rest of `reload`.

use std::sync::OnceLock;

use smol::channel::{self, Receiver, Sender};

/// The wake-up of the reload task: [`request`] may come from any thread.
pub(super) fn wake() -> &'static (Sender<()>, Receiver<()>) {
    static WAKE: OnceLock<(Sender<()>, Receiver<()>)> = OnceLock::new();
    WAKE.get_or_init(|| channel::bounded(1))
}

/// Asks the running `serve` to reload its config now (what SIGHUP does).
/// Requests made while one is pending are one reload.
pub fn request() {
    let _ = wake().0.try_send(());
}
