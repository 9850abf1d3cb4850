//! `"isolation": "client"`: one instance of a server per client principal.
//!
//! A shared server (the default) is one process for every client; when it
//! asks a client for input (sampling, elicitation, roots) with several
//! clients' calls in flight and the wire names none of them, mcpx refuses
//! the request rather than guess (`relay`). An isolated server instead gets
//! one process per *owner*, so every request it makes is for its owner:
//!
//! - The configured slot is the *template*: it runs (or sleeps, `lazy`) as
//!   any server and gives the catalog, so listing starts no per-client
//!   process. No client request is forwarded to it.
//! - A client's first request forwarded to the server takes an *instance*
//!   slot of its owner ([`Hub::instance_for`]): an upstream slot of its own,
//!   asleep until then, so the request is parked and the slot started
//!   (`Output::Power`, as a lazy start). Its lists are never read: the
//!   catalog stays the template's.
//! - Owners: the principal of an authenticated client (a bearer token's
//!   name, an OAuth subject), the stdio client, and each anonymous legacy
//!   HTTP session on its own (anonymous sessions share no identity). An
//!   anonymous modern (stateless) request belongs to its principal: its
//!   requests for input travel in its own answer (MRTR), never guessed.
//! - What an instance says reaches only its owner's clients: requests for
//!   input (the callers in flight to it are its owner's only), log messages
//!   and resource updates, to legacy sessions and `subscriptions/listen`
//!   streams alike ([`Hub::may_reach`]); its progress follows the request's
//!   token as always.
//! - When the owner has no client left, its instance is stopped once it has
//!   been unused for [`LINGER_MS`]; the slot is then free for another owner.
//! - At most `maxInstances` owners have an instance of one server at a time:
//!   past that a request is answered with an error naming the server and the
//!   limit.

use serde_json::json;
use mcpx_core::error::ErrorCode;

use super::request::Refusal;
use super::upstream::State;
use super::{ClientId, Hub, Level, Output, Power, UpstreamId};

/// How a server's process is shared among clients (`"isolation"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Isolation {
    /// One process for every client (the default).
    #[default]
    Shared,
    /// One process per client principal, at most `max` at once.
    Client { max: usize },
}

/// Default of `"maxInstances"`.
pub const DEFAULT_MAX_INSTANCES: usize = 8;

/// How long an instance whose owner has gone stays, unused, before it is
/// stopped (a client that reconnects at once keeps its server's state).
pub const LINGER_MS: u64 = 5_000;

/// Who an instance is for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Owner {
    Principal(Vec<u8>),
    Session(ClientId),
}

/// An upstream slot running one owner's instance of its template.
struct Instance {
    template: UpstreamId,
    /// `None`: free, stopped or stopping, for the next owner.
    owner: Option<Owner>,
}

/// The instance slots, by upstream id.
#[derive(Default)]
pub(super) struct Instances(std::collections::BTreeMap<UpstreamId, Instance>);

/// Principals of clients that authenticated as no one (`http::auth`).
const ANONYMOUS: &[u8] = b"anonymous";

/// Is a client its own owner: an anonymous legacy session (anonymous
/// sessions share no identity)? A modern anonymous request belongs to its
/// principal: it lives for one request, and its input rounds travel in its
/// own answer.
fn by_session(cl: &super::client::Client) -> bool {
    !cl.is_modern() && cl.principal.starts_with(ANONYMOUS)
}

impl Hub {
    /// The owner of client `c`'s requests.
    fn owner_of(&self, c: ClientId) -> Option<Owner> {
        let cl = self.clients.get(&c)?;
        Some(if by_session(cl) { Owner::Session(c) } else { Owner::Principal(cl.principal.clone()) })
    }

    /// Is client `c` one of `owner`'s? (No copy: asked for every client.)
    fn owned_by(&self, c: ClientId, owner: &Owner) -> bool {
        let Some(cl) = self.clients.get(&c) else { return false };
        match owner {
            Owner::Session(s) => *s == c,
            Owner::Principal(p) => !by_session(cl) && cl.principal == *p,
        }
    }

    /// Does some client of `owner` remain?
    fn owner_present(&self, owner: &Owner) -> bool {
        match owner {
            Owner::Session(c) => self.clients.contains_key(c),
            Owner::Principal(_) => self.clients.keys().any(|&c| self.owned_by(c, owner)),
        }
    }

    /// Where client `c`'s request to server `u` goes: `u` itself when it is
    /// shared, else the instance of `c`'s owner (taken now if it has none).
    pub(super) fn instance_for(&mut self, c: ClientId, u: UpstreamId) -> Result<UpstreamId, Refusal> {
        let Isolation::Client { max } = self.ups[u].spec.isolation else { return Ok(u) };
        let owner = self.owner_of(c).ok_or_else(|| Refusal(ErrorCode::InternalError, format!("client {c} is not connected"), None))?;
        let mine = self.instances.0.iter().find(|(_, i)| i.template == u && i.owner.as_ref() == Some(&owner));
        if let Some((&iu, _)) = mine {
            return Ok(iu);
        }
        let of_u = || self.instances.0.iter().filter(|(_, i)| i.template == u);
        let name = self.ups[u].spec.name.clone();
        if of_u().filter(|(_, i)| i.owner.is_some()).count() >= max {
            let msg = format!(
                "server '{name}' runs one instance per client (\"isolation\": \"client\") and {max} are running, its \"maxInstances\" limit; try again when another client has gone"
            );
            return Err(Refusal(ErrorCode::InternalError, msg, Some(json!({ "server": name, "limit": "maxInstances", "maxInstances": max }))));
        }
        // A free slot whose process is gone, else a new one. Slots stopping
        // still are not counted against the owners, but bound the table.
        let free = of_u().find(|(&iu, i)| i.owner.is_none() && matches!(self.ups[iu].state, State::Asleep { stopping: false })).map(|(&iu, _)| iu);
        let iu = match free {
            Some(iu) => iu,
            None if of_u().count() < 2 * max => self.new_instance_slot(u),
            None => {
                let msg = format!("server '{name}': {max} instances are still stopping (its \"maxInstances\" limit); try again in a few seconds");
                return Err(Refusal(ErrorCode::InternalError, msg, Some(json!({ "server": name, "limit": "maxInstances", "maxInstances": max }))));
            }
        };
        self.instances.0.insert(iu, Instance { template: u, owner: Some(owner) });
        self.log(Level::Info, format!("server '{name}': instance {iu} taken for client {c} (isolation)"));
        Ok(iu)
    }

    /// A new upstream slot for an instance of `u`, asleep (started by the
    /// request that needs it).
    fn new_instance_slot(&mut self, u: UpstreamId) -> UpstreamId {
        let mut up = super::upstream::instance_of(&self.ups[u]);
        // One owner's process: its own requests go to it as they are.
        up.spec.isolation = Isolation::Shared;
        up.state = State::Asleep { stopping: false };
        up.settled = true;
        self.ups.push(up);
        self.catalog.add_slot();
        self.ups.len() - 1
    }

    /// Is `u` an instance slot (its catalog is its template's)?
    pub(super) fn is_instance(&self, u: UpstreamId) -> bool {
        self.instances.0.contains_key(&u)
    }

    /// May what upstream `u` says on its own reach client `c`? Only its
    /// owner's clients, for an instance.
    pub(super) fn may_reach(&self, u: UpstreamId, c: ClientId) -> bool {
        match self.instances.0.get(&u) {
            None => true,
            Some(i) => i.owner.as_ref().is_some_and(|o| self.owned_by(c, o)),
        }
    }

    /// The server slot `u` is an instance of (`None`: a configured server).
    pub fn upstream_template(&self, u: UpstreamId) -> Option<UpstreamId> {
        self.instances.0.get(&u).map(|i| i.template)
    }

    /// The instance slots of server `u` (to stop with it).
    pub fn upstream_instances(&self, u: UpstreamId) -> Vec<UpstreamId> {
        self.instances.0.iter().filter(|(_, i)| i.template == u).map(|(&iu, _)| iu).collect()
    }

    /// How many instances of server `u` have an owner. (Test observer.)
    #[cfg(test)]
    pub fn upstream_instances_owned(&self, u: UpstreamId) -> usize {
        self.instances.0.values().filter(|i| i.template == u && i.owner.is_some()).count()
    }

    /// When instance `iu`, whose owner is gone, is to be let go.
    fn release_due(&self, iu: UpstreamId, i: &Instance) -> Option<u64> {
        let owner = i.owner.as_ref()?;
        let up = &self.ups[iu];
        if self.owner_present(owner) || up.state == State::Initializing || self.pending.busy(iu) {
            return None;
        }
        Some(up.last_used_ms.max(up.last_start_ms) + LINGER_MS)
    }

    pub(super) fn isolation_deadline(&self) -> Option<u64> {
        self.instances.0.iter().filter_map(|(&iu, i)| self.release_due(iu, i)).min()
    }

    /// Instances whose owner has gone and that lingered are stopped and freed.
    pub(super) fn isolation_tick(&mut self) {
        let now = self.now_ms;
        let due: Vec<UpstreamId> = self.instances.0.iter().filter(|(&iu, i)| self.release_due(iu, i).is_some_and(|at| at <= now)).map(|(&iu, _)| iu).collect();
        for iu in due {
            if let Some(i) = self.instances.0.get_mut(&iu) {
                i.owner = None;
            }
            let up = &mut self.ups[iu];
            let name = up.spec.name.clone();
            if up.stop_to_sleep() {
                self.log(Level::Info, format!("server '{name}': instance {iu} stopped, its client has gone (isolation)"));
                self.out.push_back(Output::Power(iu, Power::Stop));
            }
        }
    }

    /// Server `u` is removed: its instances go with it (their requests in
    /// flight answered with `why`); the runtime stops their processes.
    pub(super) fn instances_removed(&mut self, u: UpstreamId, why: &str) {
        for iu in self.upstream_instances(u) {
            self.instances.0.remove(&iu);
            self.upstream_gone(iu, why);
            let up = &mut self.ups[iu];
            up.state = State::Removed;
            up.settled = true;
        }
    }
}
