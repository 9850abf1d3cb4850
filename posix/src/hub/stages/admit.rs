//! Stage *admit*: the rate limits (`policy.rateLimits`, see
//! `crate::policy::ratelimit`), one token of every applicable bucket per
//! request, taken before anything is looked up or forwarded for it, for
//! every request of a limited class: a call to an unknown or hidden tool
//! is charged like any other (else it would be a free way to flood the
//! audit log).

use crate::policy::audit::Stage;
use crate::policy::ratelimit::{self, Class, Key};

use super::super::client::Clients;
use super::super::policy::HubPolicy;
use super::super::request::Refusal;
use super::super::shared::At;
use super::super::upstream::Upstreams;
use super::super::wire::Msg;
use super::super::{ClientId, UpstreamId};
use super::{Effect, Pipeline};

impl Pipeline<'_> {
    /// Takes a token of every bucket for this request, or refuses it
    /// (`completion-security`, `tools-server-sec-validate-inputs`); nothing
    /// is sent upstream then.
    pub fn admit(&mut self, c: ClientId, id: &[u8], class: Class, u: Option<UpstreamId>, tool: &str) -> Result<(), Refusal> {
        let shared = self.opts.cluster.shared;
        if shared {
            // The principal's limit is the replicas' one, in the store (`shared`).
            let key = limit_key(self.principals, self.upstreams, Some(c), class, u, tool);
            if let Some((bucket, limit)) = self.policy.p.limiter.shared_bucket(key) {
                if let Err((refusal, ask)) = self.shared.admit(c, id, bucket, limit, At::of(self.opts, self.now_ms)) {
                    #[cfg(feature = "traces")]
                    if ask.is_some() {
                        self.effects.push(Effect::Waits(c, id.to_vec(), crate::hub::trace::Wait::Admission));
                    }
                    self.effects.extend(ask.map(Effect::Shared));
                    return Err(refusal);
                }
            }
        }
        let r = self.limit_of(Some(c), class, u, tool, shared).err();
        let Some(r) = r else { return Ok(()) };
        mark_refused(self.policy, c, id, &r);
        Err(Refusal(ratelimit::Refusal::CODE, r.to_string(), Some(r.data())))
    }

    /// A completion for `u`: its rate limits.
    pub fn admit_completion(&mut self, c: ClientId, m: &Msg, u: Option<UpstreamId>) -> Result<(), Refusal> {
        self.admit(c, m.id_bytes().unwrap_or(b"null"), Class::Completion, u, "")
    }

    /// A `tasks/*` request of client `c`: its principal's rate limit
    /// (`tasks-rate-limit`); nothing is looked up or forwarded when refused.
    pub fn admit_task_request(&mut self, c: ClientId, m: &Msg) -> Result<(), Refusal> {
        self.admit(c, m.id_bytes().unwrap_or(b"null"), Class::TaskRequest, None, "")
    }

    /// The rate-limit check of one request from or to client `c` for
    /// upstream `u`, counted in the metrics when refused.
    pub fn limit(&mut self, c: Option<ClientId>, class: Class, u: Option<UpstreamId>, tool: &str) -> Result<(), ratelimit::Refusal> {
        self.limit_of(c, class, u, tool, false)
    }

    /// [`Pipeline::limit`]; `unshared`: only the limits the replicas do not share.
    fn limit_of(&mut self, c: Option<ClientId>, class: Class, u: Option<UpstreamId>, tool: &str, unshared: bool) -> Result<(), ratelimit::Refusal> {
        let key = limit_key(self.principals, self.upstreams, c, class, u, tool);
        let now = self.now_ms;
        let limiter = &mut self.policy.p.limiter;
        let r = if unshared { limiter.check_unshared(key, now) } else { limiter.check(key, now) };
        if let (Err(r), Some(m)) = (&r, &mut self.policy.p.metrics) {
            m.refused(&r.limit);
        }
        r
    }
}

/// Request `id` of client `c` was refused by limit `r`: so it is audited.
fn mark_refused(policy: &mut HubPolicy, c: ClientId, id: &[u8], r: &ratelimit::Refusal) {
    policy.refused_by(c, id, &r.limit);
    policy.refused_at(c, id, Stage::Admit);
}

/// The shared store refused request `id` of client `c` by limit `r`:
/// audited and counted as a local refusal is.
pub(in crate::hub) fn refused_shared(policy: &mut HubPolicy, c: ClientId, id: &[u8], r: &ratelimit::Refusal) {
    mark_refused(policy, c, id, r);
    if let Some(m) = &mut policy.p.metrics {
        m.refused(&r.limit);
    }
}

/// The rate-limit key of a request from or to client `c` for upstream `u`.
fn limit_key<'a>(clients: &'a Clients, ups: &'a Upstreams, c: Option<ClientId>, class: Class, u: Option<UpstreamId>, tool: &'a str) -> Key<'a> {
    let principal = c.map_or("", |c| clients.principal_name(c));
    let server = u.map_or("", |u| ups[u].spec.name.as_str());
    Key { class, principal, server, tool }
}
