//! `"isolation": "client"`: one instance of a server per client principal
//! (a process of a local server, a session of a remote one; each with its
//! owner's secrets, `serve::secrets`).
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
//!   slot of its owner ([`Starts::instance_for`]): an upstream slot of its own,
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
//!   streams alike ([`Starts::may_reach`]); its progress follows the request's
//!   token as always.
//! - When the owner has no client left, its instance is stopped once it has
//!   been unused for [`LINGER_MS`]; the slot is then free for another owner.
//! - At most `maxInstances` owners have an instance of one server at a time:
//!   past that a request is answered with an error naming the server and the
//!   limit.

use mcpx_core::error::ErrorCode;
use serde_json::json;

use super::super::client::Client;
use super::super::request::Refusal;
use super::super::upstream::{instance_of, State, Upstream};
use super::{ClientId, Clients, Effect, Level, Starts, UpstreamId};

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
pub(super) struct Instance {
    template: UpstreamId,
    /// `None`: free, stopped or stopping, for the next owner.
    owner: Option<Owner>,
}

/// Principals of clients that authenticated as no one (`http::auth`).
const ANONYMOUS: &[u8] = b"anonymous";

/// Is a client its own owner: an anonymous legacy session (anonymous
/// sessions share no identity)? A modern anonymous request belongs to its
/// principal: it lives for one request, and its input rounds travel in its
/// own answer.
fn by_session(cl: &Client) -> bool {
    !cl.is_modern() && cl.principal.starts_with(ANONYMOUS)
}

/// The owner of client `c`'s requests.
fn owner_of(c: ClientId, clients: &Clients) -> Option<Owner> {
    let cl = clients.get(&c)?;
    Some(if by_session(cl) { Owner::Session(c) } else { Owner::Principal(cl.principal.clone()) })
}

/// Is client `c` one of `owner`'s? (No copy: asked for every client.)
fn owned_by(c: ClientId, owner: &Owner, clients: &Clients) -> bool {
    let Some(cl) = clients.get(&c) else { return false };
    match owner {
        Owner::Session(s) => *s == c,
        Owner::Principal(p) => !by_session(cl) && cl.principal == *p,
    }
}

/// Does some client of `owner` remain?
fn owner_present(owner: &Owner, clients: &Clients) -> bool {
    match owner {
        Owner::Session(c) => clients.contains_key(c),
        Owner::Principal(_) => clients.keys().any(|&c| owned_by(c, owner, clients)),
    }
}

impl Starts {
    /// Where client `c`'s request to server `u` goes: `u` itself when it is
    /// shared (no effects, no allocation), else the instance of `c`'s owner
    /// (taken now if it has none, with what the hub does for that).
    pub(in crate::hub) fn instance_for(&mut self, c: ClientId, u: UpstreamId, ups: &[Upstream], clients: &Clients) -> Result<(UpstreamId, Vec<Effect>), Refusal> {
        let Isolation::Client { max } = ups[u].spec.isolation else { return Ok((u, Vec::new())) };
        let owner = owner_of(c, clients).ok_or_else(|| Refusal(ErrorCode::InternalError, format!("client {c} is not connected"), None))?;
        let mine = self.instances.iter().find(|(_, i)| i.template == u && i.owner.as_ref() == Some(&owner));
        if let Some((&iu, _)) = mine {
            return Ok((iu, Vec::new()));
        }
        let of_u = || self.instances.iter().filter(|(_, i)| i.template == u);
        let name = &ups[u].spec.name;
        if of_u().filter(|(_, i)| i.owner.is_some()).count() >= max {
            let msg = format!(
                "server '{name}' runs one instance per client (\"isolation\": \"client\") and {max} are running, its \"maxInstances\" limit; try again when another client has gone"
            );
            return Err(Refusal(ErrorCode::InternalError, msg, Some(json!({ "server": name, "limit": "maxInstances", "maxInstances": max }))));
        }
        // A free slot whose process is gone, else a new one. Slots stopping
        // still are not counted against the owners, but bound the table.
        let free = of_u().find(|(&iu, i)| i.owner.is_none() && matches!(ups[iu].state, State::Asleep { stopping: false })).map(|(&iu, _)| iu);
        let mut fx = Vec::new();
        let iu = match free {
            Some(iu) => iu,
            None if of_u().count() < 2 * max => {
                fx.push(Effect::NewSlot(Box::new(instance_slot(&ups[u]))));
                ups.len()
            }
            None => {
                let msg = format!("server '{name}': {max} instances are still stopping (its \"maxInstances\" limit); try again in a few seconds");
                return Err(Refusal(ErrorCode::InternalError, msg, Some(json!({ "server": name, "limit": "maxInstances", "maxInstances": max }))));
            }
        };
        self.instances.insert(iu, Instance { template: u, owner: Some(owner) });
        let who = clients.principal_name(c);
        fx.push(Effect::Log(Level::Info, format!("server '{name}': instance {iu} taken for principal '{who}' (client {c}, isolation)")));
        Ok((iu, fx))
    }

    /// Is `u` an instance slot (its catalog is its template's)?
    pub(in crate::hub) fn is_instance(&self, u: UpstreamId) -> bool {
        self.instances.contains_key(&u)
    }

    /// May what upstream `u` says on its own reach client `c`? Only its
    /// owner's clients, for an instance.
    pub(in crate::hub) fn may_reach(&self, u: UpstreamId, c: ClientId, clients: &Clients) -> bool {
        match self.instances.get(&u) {
            None => true,
            Some(i) => i.owner.as_ref().is_some_and(|o| owned_by(c, o, clients)),
        }
    }

    /// The server slot `u` is an instance of (`None`: a configured server).
    pub fn template_of(&self, u: UpstreamId) -> Option<UpstreamId> {
        self.instances.get(&u).map(|i| i.template)
    }

    /// The name of the principal whose instance slot `u` is (`None`: not
    /// an instance, or free).
    pub(in crate::hub) fn owner_name<'a>(&'a self, u: UpstreamId, clients: &'a Clients) -> Option<&'a str> {
        match self.instances.get(&u)?.owner.as_ref()? {
            Owner::Principal(p) => Some(super::super::policy::principal_name(p)),
            Owner::Session(c) => Some(clients.principal_name(*c)),
        }
    }

    /// Whose instance slot `u` is, for its credentials: `Some(Some(name))`
    /// a principal's (by its policy name), `Some(None)` an anonymous
    /// session's, `None` no one's (not an instance, or free).
    pub fn owner_principal(&self, u: UpstreamId) -> Option<Option<&str>> {
        match self.instances.get(&u)?.owner.as_ref()? {
            Owner::Principal(p) => Some(Some(super::super::policy::principal_name(p))),
            Owner::Session(_) => Some(None),
        }
    }

    /// The instance slots of server `u` (to stop with it).
    pub fn instances_of(&self, u: UpstreamId) -> Vec<UpstreamId> {
        self.instances.iter().filter(|(_, i)| i.template == u).map(|(&iu, _)| iu).collect()
    }

    /// How many instances of server `u` have an owner. (Test observer.)
    #[cfg(test)]
    pub fn owned(&self, u: UpstreamId) -> usize {
        self.instances.values().filter(|i| i.template == u && i.owner.is_some()).count()
    }

    pub(super) fn isolation_deadline(&self, ups: &[Upstream], clients: &Clients, busy: &dyn Fn(UpstreamId) -> bool) -> Option<u64> {
        self.instances.iter().filter_map(|(&iu, i)| release_due(&ups[iu], i, clients, busy(iu))).min()
    }

    /// Instances whose owner has gone and that lingered are stopped and freed.
    pub(super) fn isolation_tick(&mut self, now: u64, ups: &[Upstream], clients: &Clients, busy: &dyn Fn(UpstreamId) -> bool) -> Vec<Effect> {
        let mut fx = Vec::new();
        for (&iu, i) in self.instances.iter_mut() {
            if release_due(&ups[iu], i, clients, busy(iu)).is_some_and(|at| at <= now) {
                i.owner = None;
                let name = &ups[iu].spec.name;
                fx.push(Effect::Sleep(iu, format!("server '{name}': instance {iu} stopped, its client has gone (isolation)")));
            }
        }
        fx
    }

    /// Server `u` is removed: its instances go with it (their requests in
    /// flight answered with `why`); the runtime stops their processes.
    pub(in crate::hub) fn remove_instances(&mut self, u: UpstreamId, why: &str) -> Vec<Effect> {
        let gone = self.instances_of(u);
        for iu in &gone {
            self.instances.remove(iu);
        }
        gone.into_iter().map(|iu| Effect::Remove(iu, why.to_string())).collect()
    }
}

/// A new upstream slot for an instance of `template`, asleep (started by
/// the request that needs it).
fn instance_slot(template: &Upstream) -> Upstream {
    let mut up = instance_of(template);
    // One owner's process: its own requests go to it as they are.
    up.spec.isolation = Isolation::Shared;
    up.state = State::Asleep { stopping: false };
    up.settled = true;
    up
}

/// When instance `up` (`i`), whose owner is gone, is to be let go (`busy`:
/// a client request to it is in flight).
fn release_due(up: &Upstream, i: &Instance, clients: &Clients, busy: bool) -> Option<u64> {
    let owner = i.owner.as_ref()?;
    if owner_present(owner, clients) || up.state == State::Initializing || busy {
        return None;
    }
    Some(up.last_used_ms.max(up.last_start_ms) + LINGER_MS)
}
