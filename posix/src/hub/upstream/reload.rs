//! A config reload's changes to the servers: one added (a free slot or a
//! new one), one whose entry changed (`Replacing` until its old process is
//! gone, its catalog kept as the new entry filters it), one removed. The
//! reload (`crate::reload`) says in the log what happens to each server.

use serde_json::Value;

use super::super::catalog::{Catalog, Kind};
use super::super::{ConfigError, HubOptions, UpstreamId, UpstreamSpec};
use super::{Effect, State, Upstreams};

impl Upstreams {
    /// A server added: checked against the servers there are, then given
    /// the first free slot (one a removal left) or a new one.
    pub(in crate::hub) fn on_add(&mut self, spec: UpstreamSpec, opts: &HubOptions) -> Result<(UpstreamId, Vec<Effect>), ConfigError> {
        let up = self.check(spec, None, opts)?;
        let (u, new_slot) = self.add(up);
        Ok((u, if new_slot { vec![Effect::NewSlot] } else { Vec::new() }))
    }

    /// Server `u`'s entry changed to `spec` (`why`): its requests in flight
    /// are answered with an error saying so, its instances go, and it is
    /// `Replacing` until the runtime has stopped its process. What it
    /// offered (in `catalog`) stays listed, as its new entry filters and
    /// names it.
    pub(in crate::hub) fn on_replace(&mut self, u: UpstreamId, spec: UpstreamSpec, why: &str, catalog: &Catalog, opts: &HubOptions) -> Result<Vec<Effect>, ConfigError> {
        if !self.is_live(u) {
            return Err(ConfigError::NotRunning(spec.name));
        }
        let mut up = self.check(spec, Some(u), opts)?;
        let mut fx = vec![self.gone(u, why)];
        fx.push(Effect::RemoveInstances(u, why.to_string()));
        up.state = State::Replacing;
        up.start_awaited = true;
        let old = self.replace(u, up);
        let up = &mut self.0[u];
        up.caps = old.caps;
        up.instructions = old.instructions;
        up.settled = old.settled;
        up.starts = old.starts;
        up.restarts = old.restarts;
        for k in Kind::ALL {
            let mut items = catalog.items(u, k).to_vec();
            if k == Kind::Tools {
                items.retain(|t| up.tool_allowed(t.get("name").and_then(Value::as_str).unwrap_or("")));
            }
            fx.push(Effect::Listed(u, k, items));
        }
        Ok(fx)
    }

    /// Server `u` taken out (`why`): its requests in flight are answered
    /// with an error saying so, what it offered leaves the catalog, and its
    /// slot is free once the runtime has stopped its process.
    pub(in crate::hub) fn on_remove(&mut self, u: UpstreamId, why: &str) -> Vec<Effect> {
        if !self.is_live(u) {
            return Vec::new();
        }
        let up = &mut self.0[u];
        let mut fx = vec![up.gone(u, why)];
        fx.push(Effect::RemoveInstances(u, why.to_string()));
        fx.extend(Kind::ALL.into_iter().map(|k| Effect::Listed(u, k, Vec::new())));
        up.state = State::Removed;
        up.settled = true;
        up.caps = None;
        up.instructions = None;
        fx.push(Effect::Settled);
        fx
    }
}
