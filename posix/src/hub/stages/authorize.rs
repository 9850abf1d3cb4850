//! Stage *authorize*: the principal's catalog (`policy.catalogs`, see
//! `crate::policy::catalog_acl`) over every primitive. Tools are granted
//! by `"server/tool"` patterns; a server's prompts, resources and
//! templates, and so completions and subscriptions on them, follow the
//! grant of the server. What a principal may not see is absent from its
//! lists, answered as unknown when asked for, and changes to it send the
//! principal no `list_changed`.

use super::super::catalog::{Catalog, Channel, Entry, Kind};
use super::super::client::Clients;
use super::super::policy::HubPolicy;
use super::super::shape::Rev;
use super::super::upstream::Upstreams;
use super::super::{ClientId, UpstreamId};

/// What one client's principal may see: the policy's catalogs over the
/// upstreams' names.
pub(in crate::hub) struct Sight<'a> {
    policy: &'a HubPolicy,
    principal: &'a str,
    upstreams: &'a Upstreams,
}

impl<'a> Sight<'a> {
    /// The sight of client `c` (nothing is hidden from a client that is
    /// gone but what hides from every principal).
    pub fn of(policy: &'a HubPolicy, clients: &'a Clients, ups: &'a Upstreams, c: ClientId) -> Sight<'a> {
        Sight { policy, principal: clients.principal_name(c), upstreams: ups }
    }

    /// May it see entry `e` of the `k` view?
    pub fn visible(&self, k: Kind, e: &Entry) -> bool {
        match k {
            Kind::Tools => self.policy.tool_visible(self.principal, &self.upstreams[e.up].spec.name, &e.original),
            Kind::Prompts | Kind::Resources | Kind::Templates => self.server_visible(e.up),
        }
    }

    /// May it see the prompts, resources and templates of `u`?
    pub fn server_visible(&self, u: UpstreamId) -> bool {
        self.policy.server_visible(self.principal, &self.upstreams[u].spec.name)
    }

    /// The `k` view entries it may see.
    pub fn view<'c>(&self, catalog: &'c Catalog, k: Kind) -> Vec<&'c Entry> {
        let view = catalog.view(k);
        if !self.policy.restricts {
            return view.iter().collect();
        }
        view.iter().filter(|e| self.visible(k, e)).collect()
    }

    /// Fingerprint of what it sees on `ch` (on `rev`): with per-principal
    /// catalogs, only what it may see counts, so a change it cannot see
    /// sends it no `list_changed`.
    pub fn fingerprint(&self, catalog: &mut Catalog, ch: Channel, rev: Rev) -> u64 {
        if !self.policy.restricts {
            return catalog.fingerprint(ch, rev);
        }
        catalog.fingerprint_where(ch, rev, |k, e| self.visible(k, e))
    }
}

/// The fingerprints, per channel, a new listen stream of client `c` starts
/// from (zeros without per-principal catalogs: they are not consulted
/// then).
pub(in crate::hub) fn listen_fingerprints(policy: &HubPolicy, clients: &Clients, ups: &Upstreams, catalog: &mut Catalog, c: ClientId) -> [u64; 3] {
    if !policy.restricts {
        return [0; 3];
    }
    Channel::ALL.map(|ch| listen_fingerprint(policy, clients, ups, catalog, c, ch))
}

/// What client `c` sees on `ch` now, for its listen streams: with
/// per-principal catalogs, a stream is told of a change only when what its
/// principal sees changed (a change it cannot see does not leak the
/// others').
pub(in crate::hub) fn listen_fingerprint(policy: &HubPolicy, clients: &Clients, ups: &Upstreams, catalog: &mut Catalog, c: ClientId, ch: Channel) -> u64 {
    let rev = clients.get(&c).map_or(Rev::LATEST_LEGACY, |cl| cl.rev());
    Sight::of(policy, clients, ups, c).fingerprint(catalog, ch, rev)
}
