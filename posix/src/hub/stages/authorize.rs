//! Stage *authorize*: the principal's catalog (`policy.catalogs`, see
//! `crate::policy::catalog_acl`) over every primitive. Tools are granted
//! by `"server/tool"` patterns; a server's prompts, resources and
//! templates, and so completions and subscriptions on them, follow the
//! grant of the server. What a principal may not see is absent from its
//! lists, answered as unknown when asked for, and changes to it send the
//! principal no `list_changed`. A tool for apps alone (MCP Apps,
//! `hub::apps`) is hidden the same way from a client that is no app host.

#[cfg(feature = "apps")]
use super::super::apps;
use super::super::catalog::{Catalog, Channel, Entry, Kind};
use super::super::request::ReqCtx;
use super::super::client::Clients;
use super::super::policy::HubPolicy;
use super::super::shape::Rev;
use super::super::upstream::Upstreams;
use super::super::{ClientId, UpstreamId};

/// What one client's principal may see: the policy's catalogs over the
/// upstreams' names; and whether the client hosts apps.
pub(in crate::hub) struct Sight<'a> {
    policy: &'a HubPolicy,
    principal: &'a str,
    upstreams: &'a Upstreams,
    /// It declared MCP Apps (its session's capabilities, or a 2026-07-28
    /// request's own): tools for apps alone are its too.
    apps: bool,
    /// It declared Skills: it lists skills itself, and no skill is shown
    /// to it as a prompt (`skills`).
    #[cfg(feature = "skills")]
    skills: bool,
}

impl<'a> Sight<'a> {
    /// The sight of client `c` (nothing is hidden from a client that is
    /// gone but what hides from every principal), for its request with
    /// context `ctx` (a 2026-07-28 request declares its capabilities).
    pub fn of(policy: &'a HubPolicy, clients: &'a Clients, ups: &'a Upstreams, c: ClientId, ctx: Option<&ReqCtx>) -> Sight<'a> {
        // What the request (2026-07-28), or else the session, declared.
        let caps = || match ctx {
            Some(x) => Some(&x.caps),
            None => clients.get(&c).and_then(|cl| cl.caps()),
        };
        #[cfg(feature = "apps")]
        let apps = caps().is_some_and(apps::declared);
        // Without the feature no client hosts apps.
        #[cfg(not(feature = "apps"))]
        let apps = false;
        #[cfg(feature = "skills")]
        let skills = caps().is_some_and(super::super::skills::client_declared);
        #[cfg(not(any(feature = "apps", feature = "skills")))]
        let _ = caps;
        Sight {
            policy,
            principal: clients.principal_name(c),
            upstreams: ups,
            apps,
            #[cfg(feature = "skills")]
            skills,
        }
    }

    /// Is it an app host?
    #[cfg(feature = "apps")]
    pub fn apps(&self) -> bool {
        cfg!(feature = "apps") && self.apps
    }

    /// Does it see less than the whole catalog?
    fn filters(&self, catalog: &Catalog) -> bool {
        #[cfg(feature = "skills")]
        if self.skills && catalog.view(Kind::Prompts).iter().any(super::super::skills::is_prompt) {
            return true;
        }
        self.policy.restricts || (cfg!(feature = "apps") && !self.apps && catalog.app_only > 0)
    }

    /// May it see entry `e` of the `k` view?
    pub fn visible(&self, k: Kind, e: &Entry) -> bool {
        match k {
            // ext-apps: a host must not list to the model a tool whose visibility lacks "model".
            Kind::Tools if cfg!(feature = "apps") && e.app_only && !self.apps => false,
            Kind::Tools => self.policy.tool_visible(self.principal, &self.upstreams[e.up].spec.name, &e.original),
            #[cfg(feature = "skills")]
            Kind::Prompts if self.skills && super::super::skills::is_prompt(e) => false,
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
        if !self.filters(catalog) {
            return view.iter().collect();
        }
        view.iter().filter(|e| self.visible(k, e)).collect()
    }

    /// Fingerprint of what it sees on `ch` (on `rev`): with per-principal
    /// catalogs, only what it may see counts, so a change it cannot see
    /// sends it no `list_changed`.
    pub fn fingerprint(&self, catalog: &mut Catalog, ch: Channel, rev: Rev) -> u64 {
        if !self.filters(catalog) {
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
    Sight::of(policy, clients, ups, c, None).fingerprint(catalog, ch, rev)
}
