//! What feeds the runtime besides the clients: the servers' transports
//! (their reports, and a remote transport's questions) and the hub's timer.

use std::rc::Rc;


use super::runtime::Runtime;
use crate::hub::{Input, ModernHeaders, Oversize, UpstreamId};
use crate::remote;
use crate::servers::events::Events;

/// The supervisors report here.
pub(super) struct HubEvents(pub(super) Rc<Runtime>);

impl Events for HubEvents {
    fn started(&self, id: UpstreamId) {
        debug!("server {}: started", self.0.name(id));
        self.0.feed(|h, now| h.handle(Input::UpstreamStarted(id), now));
    }
    fn message(&self, id: UpstreamId, line: &[u8]) {
        self.0.feed(|h, now| h.handle(Input::UpstreamMessage { up: id, msg: line, on: None }, now));
    }
    fn message_on(&self, id: UpstreamId, line: &[u8], request: &[u8]) {
        self.0.feed(|h, now| h.handle(Input::UpstreamMessage { up: id, msg: line, on: Some(request) }, now));
    }
    fn garbage(&self, id: UpstreamId, what: &str) {
        self.0.feed(|h, now| h.handle(Input::UpstreamGarbage(id, what), now));
    }
    fn too_large(&self, id: UpstreamId, big: &Oversize<'_>, on: Option<&[u8]>) {
        self.0.feed(|h, now| h.handle(Input::UpstreamTooLarge { up: id, big, on }, now));
    }
    fn exited(&self, id: UpstreamId, reason: &str, stderr_tail: &str, next: crate::hub::Next) {
        if self.0.closing.get() {
            // Stopped by us at shutdown: nothing left for the hub to do about it.
            return;
        }
        self.0.feed(|h, now| h.handle(Input::UpstreamExited { up: id, reason, stderr_tail, next }, now));
    }
}

/// What a remote server's transport asks of the hub.
pub(super) struct HubCatalog(pub(super) Rc<Runtime>);

impl remote::Catalog for HubCatalog {
    fn headers_again(&self, id: UpstreamId, msg: &[u8]) -> Option<ModernHeaders> {
        self.0.hub.borrow().catalog().upstream_headers_again(id, msg)
    }
    fn relist(&self, id: UpstreamId) {
        if !self.0.closing.get() {
            self.0.feed(|h, now| h.handle(Input::Relist(id), now));
        }
    }
    #[cfg(feature = "secrets")]
    fn ask_to_authorize(&self, id: UpstreamId, ask: &remote::oauth::delegated::Ask) {
        let ask = crate::hub::UrlAsk { id: ask.id.clone(), url: ask.url.clone(), message: ask.message() };
        self.0.feed(|h, now| h.handle(Input::AskedToAuthorize { up: id, ask }, now));
    }
}

/// Sleeps on the runtime's alarm, set to the hub's next deadline (see
/// `Runtime::drain`), and ticks the hub when it rings.
pub(super) async fn timer_task(rt: Rc<Runtime>) {
    loop {
        rt.alarm.rung().await;
        // It rang: the tick's drain sets it again.
        rt.armed.set(None);
        rt.feed(|h, now| h.handle(Input::Tick, now));
    }
}
