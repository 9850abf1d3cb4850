//! Upstream connections (being written).
use super::*;
pub(super) struct Upstream { pub spec: UpstreamSpec }
pub(super) fn validate(specs: Vec<UpstreamSpec>, _o: &HubOptions) -> Result<Vec<Upstream>, ConfigError> {
    Ok(specs.into_iter().map(|spec| Upstream { spec }).collect())
}
impl Hub {
    pub(super) fn on_upstream_started(&mut self, _u: UpstreamId) {}
    pub(super) fn on_upstream_message(&mut self, _u: UpstreamId, _m: &[u8]) {}
    pub(super) fn on_upstream_exited(&mut self, _u: UpstreamId, _r: &str, _t: &str) {}
    pub(super) fn on_upstream_garbage(&mut self, _u: UpstreamId, _w: &str) {}
    pub(super) fn on_tick(&mut self) {}
    pub(super) fn deadline(&self) -> Option<u64> { None }
    pub(super) fn status_json(&self) -> serde_json::Value { serde_json::json!({}) }
}
