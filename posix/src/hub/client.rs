//! Client connections (being written).
use super::*;
pub(super) struct Client;
impl Hub {
    pub(super) fn on_client_connected(&mut self) -> ClientId { let c = self.next_client; self.next_client += 1; self.clients.insert(c, Client); c }
    pub(super) fn on_client_message(&mut self, _c: ClientId, _m: &[u8]) {}
    pub(super) fn on_client_frame_too_large(&mut self, _c: ClientId, _l: usize) {}
    pub(super) fn on_client_disconnected(&mut self, c: ClientId) { self.clients.remove(&c); }
}
