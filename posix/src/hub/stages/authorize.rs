//! Stage *authorize*: the principal's catalog (`policy.catalogs`, see
//! `crate::policy::catalog_acl`) over every primitive. Tools are granted
//! by `"server/tool"` patterns; a server's prompts, resources and
//! templates, and so completions and subscriptions on them, follow the
//! grant of the server. What a principal may not see is absent from its
//! lists, answered as unknown when asked for, and changes to it send the
//! principal no `list_changed`.

use super::super::catalog::{Channel, Entry, Kind};
use super::super::shape::Rev;
use super::super::{ClientId, Hub, UpstreamId};

impl Hub {
    /// May client `c` see entry `e` of the `k` view?
    pub(in crate::hub) fn visible(&self, c: ClientId, k: Kind, e: &Entry) -> bool {
        match k {
            Kind::Tools => self.policy.tool_visible(self.policy_principal(c), &self.ups[e.up].spec.name, &e.original),
            Kind::Prompts | Kind::Resources | Kind::Templates => self.server_visible(c, e.up),
        }
    }

    /// May client `c` see the prompts, resources and templates of `u`?
    pub(in crate::hub) fn server_visible(&self, c: ClientId, u: UpstreamId) -> bool {
        self.policy.server_visible(self.policy_principal(c), &self.ups[u].spec.name)
    }

    /// The `k` view entries client `c` may see.
    pub(in crate::hub) fn visible_view(&self, c: ClientId, k: Kind) -> Vec<&Entry> {
        let view = self.catalog.view(k);
        if !self.policy.restricts {
            return view.iter().collect();
        }
        view.iter().filter(|e| self.visible(c, k, e)).collect()
    }

    /// Fingerprint of what client `c` (on `rev`) sees on `ch`: with
    /// per-principal catalogs, only what it may see counts, so a change it
    /// cannot see sends it no `list_changed`.
    pub(in crate::hub) fn visible_fingerprint(&mut self, c: ClientId, ch: Channel, rev: Rev) -> u64 {
        if !self.policy.restricts {
            return self.catalog.fingerprint(ch, rev);
        }
        self.catalog.fingerprint_where(ch, rev, |k, e| self.visible(c, k, e))
    }

    /// The fingerprints, per channel, a new listen stream of client `c`
    /// starts from (zeros without per-principal catalogs: they are not
    /// consulted then).
    pub(in crate::hub) fn listen_fingerprints(&mut self, c: ClientId) -> [u64; 3] {
        if !self.policy.restricts {
            return [0; 3];
        }
        Channel::ALL.map(|ch| self.listen_fingerprint(c, ch))
    }

    /// What client `c` sees on `ch` now, for its listen streams: with
    /// per-principal catalogs, a stream is told of a change only when what
    /// its principal sees changed (a change it cannot see does not leak the
    /// others').
    pub(in crate::hub) fn listen_fingerprint(&mut self, c: ClientId, ch: Channel) -> u64 {
        let rev = self.clients.get(&c).map_or(Rev::LATEST_LEGACY, |cl| cl.rev());
        self.visible_fingerprint(c, ch, rev)
    }
}
