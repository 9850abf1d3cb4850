//! The request pipeline: the stages every client request passes, of every
//! method, era and transport, in this order (README: "The request
//! pipeline"):
//!
//! 1. **identify** — who asks and in which era, decided once: the
//!    principal is the transport's (`Input::ClientPrincipal`; HTTP's
//!    one definition is `http::auth`, stdio is `mcpx-local`), the era is the
//!    transport's when it decided one (`Input::ClientModern`), else core's
//!    `revision::request_era` on the message (`modern`).
//! 2. **admit** ([`admit`]) — rate limits, charged for every request of a
//!    limited class, known name or not, visible or not, before anything is
//!    looked up for the client.
//! 3. **authorize** ([`authorize`]) — the principal's catalog, applied to
//!    every primitive: tools, prompts, resources and templates (lists,
//!    reads, completions, subscriptions and listen filters), the
//!    tool-search meta-tools (they search the visible tools only). A hidden
//!    item is answered exactly as an unknown one.
//! 4. **validate** — arguments against the tool's `inputSchema`
//!    (`policy`).
//! 5. **approve** ([`approve`]) — a call `policy.approve` covers waits for
//!    a person's decision on that exact call (`approvals`).
//! 6. **route** — the hub's own answer or the upstream that owns the name
//!    (`router`); an unknown name is refused here.
//! 7. **shape** — the answer shaped for the client's revision (`shape`).
//! 8. **observe** — the audit line, metric sample and debug line of the
//!    request (`policy`: `policy_begin` … `policy_answered`), naming what
//!    was asked and, for a refusal, the stage that refused it.
//!
//! The stages are [`Pipeline`]'s steps: they borrow only the parts of the
//! hub they read or charge (policy, shared store, lazy starts, upstreams,
//! clients, catalog) and leave what the hub is to do after them (a shared
//! store request, a parked call's starts) as [`Effect`]s the hub applies.
//! A new cross-cutting rule (approvals, pinning, tracing) is a new stage
//! module here and one call in [`Pipeline::tool`] / [`Pipeline::prompt`]
//! / [`Pipeline::resource`].

mod admit;
mod approve;
mod authorize;

pub(super) use admit::refused_shared;
pub(super) use authorize::{listen_fingerprint, listen_fingerprints, Sight};

use std::borrow::Cow;
use std::rc::Rc;

use mcpx_core::error::ErrorCode;
use serde_json::{json, Value};

use crate::policy::audit::Stage;
use crate::policy::ratelimit::Class;

use super::approvals::Approvals;
use super::pins::Pins;
use super::catalog::{Catalog, Kind};
use super::client::Clients;
use super::policy::{HubPolicy, ToolCall};
use super::request::Refusal;
use super::request::ReqCtx;
use super::shared::Shared;
use super::starts::Starts;
use super::upstream::Upstreams;
use super::wire::Msg;
use super::{ClientId, HubOptions, UpstreamId};

/// A `tools/call` through the stages: its upstream, the tool's upstream
/// name, and its `execution.taskSupport`.
pub(super) struct ToolRoute {
    pub up: UpstreamId,
    pub original: Rc<str>,
    pub task_support: Option<String>,
}

/// A tool name looked up for client `c`: the answer to a hidden name is
/// the unknown one's, the audit line tells them apart. `Ambiguous`: an
/// app's own name that several servers' tools have (their exposed names).
enum Lookup {
    Visible(ToolRoute),
    Hidden,
    NotListed,
    #[cfg(feature = "apps")]
    Ambiguous(String),
}

/// What the stages leave the hub to do, in order.
pub(super) enum Effect {
    /// A request to the shared store (a shared rate limit asked).
    Shared(super::shared::Effect),
    /// A call parked for its server's start.
    Starts(Vec<super::starts::Effect>),
    /// A call held for a person's approval, or declined.
    Approvals(Vec<super::approvals::Effect>),
    /// Client `c`'s request `id` waits (traced: `hub::trace`).
    #[cfg(feature = "traces")]
    Waits(ClientId, Vec<u8>, super::trace::Wait),
    /// Client `c`'s request `id` passed a stage that did not wait, in
    /// this long (refused: with this code): traced as a span of its own.
    #[cfg(feature = "traces")]
    Passed(ClientId, Vec<u8>, &'static str, std::time::Duration, Option<i64>),
}


/// The parts of the hub the stages read and charge, borrowed for one
/// request.
pub(super) struct Pipeline<'a> {
    pub policy: &'a mut HubPolicy,
    pub shared: &'a mut Shared,
    pub starts: &'a mut Starts,
    pub upstreams: &'a mut Upstreams,
    pub approvals: &'a mut Approvals,
    /// Which changed tools need approval (`policy.pin: "approve"`).
    pub pins: &'a Pins,
    /// For the principal's name of a client.
    pub principals: &'a Clients,
    pub catalog: &'a Catalog,
    pub opts: &'a HubOptions,
    pub now_ms: u64,
    /// Is the request traced (its stages measured)?
    #[cfg(feature = "traces")]
    pub traced: bool,
    /// What the hub is to do once the stages are through.
    pub effects: Vec<Effect>,
}

impl Pipeline<'_> {
    /// What client `c`'s principal may see (`authorize`).
    fn sight(&self, c: ClientId, ctx: Option<&ReqCtx>) -> Sight<'_> {
        Sight::of(self.policy, self.principals, self.upstreams, c, ctx)
    }

    /// Admit, authorize, validate and approve a `tools/call` of client `c`
    /// for the tool `call` names (a meta-tool's call already resolved to the tool
    /// it names); `call.name` becomes the exposed spelling. `None`: the
    /// name is of a server whose tools are not known yet, and the call
    /// waits for it (`lazy`), or the call waits for a person's approval
    /// (`approve`), to pass the stages when routed again.
    pub fn tool(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>, call: &mut ToolCall) -> Result<Option<ToolRoute>, Refusal> {
        let id = m.id_bytes().unwrap_or(b"null");
        let sight = self.sight(c, ctx);
        let found = match self.catalog.get(Kind::Tools, &call.name) {
            Some(e) if sight.visible(Kind::Tools, e) => Ok(e),
            Some(_) => Err(Lookup::Hidden),
            // An app calls its server's tools by the server's own names (`apps`).
            #[cfg(feature = "apps")]
            None if sight.apps() => {
                let owners = self.catalog.by_original(Kind::Tools, &call.name);
                let mut owners = owners.into_iter().filter(|e| sight.visible(Kind::Tools, e));
                match (owners.next(), owners.next()) {
                    (Some(e), None) => Ok(e),
                    (Some(a), Some(b)) => {
                        let names: Vec<&str> = [a, b].into_iter().chain(owners).map(|e| e.exposed.as_str()).collect();
                        Err(Lookup::Ambiguous(names.join(", ")))
                    }
                    _ => Err(Lookup::NotListed),
                }
            }
            None => Err(Lookup::NotListed),
        };
        let lookup = match found {
            Ok(e) => {
                // Either spelling of a name (dotted or not), or an app's
                // own: limits and the audit log see the one every client
                // can be shown.
                if call.name != e.exposed {
                    call.name = Cow::Owned(e.exposed.clone());
                }
                let task_support = super::value_at(&e.item, &["execution", "taskSupport"]).and_then(Value::as_str).map(str::to_string);
                Lookup::Visible(ToolRoute { up: e.up, original: e.original.clone(), task_support })
            }
            Err(l) => l,
        };
        let unlisted = matches!(lookup, Lookup::NotListed).then(|| self.starts.unlisted_owner(&call.name, self.upstreams)).flatten();
        if let Some(u) = unlisted {
            if let Some(fx) = self.starts.park(&mut self.upstreams[u], u, c, m, ctx, self.now_ms) {
                self.effects.push(Effect::Starts(fx));
                return Ok(None);
            }
            self.admit(c, id, Class::ToolCall, None, &call.name)?;
            return Err(self.upstreams.unavailable(u, self.now_ms));
        }
        // A hidden or unknown tool is charged to the principal alone: its
        // limits never tell whether the name exists.
        let up = match &lookup {
            Lookup::Visible(r) => {
                self.policy.resolved(c, m, &self.upstreams[r.up].spec, &call.name, &r.original);
                Some(r.up)
            }
            _ => None,
        };
        self.admit(c, id, Class::ToolCall, up, &call.name)?;
        // Requirement: tools-error-unknown-tool-protocol
        let route = match lookup {
            Lookup::Visible(r) => r,
            Lookup::Hidden => return Err(self.refused_at(c, id, Stage::Authorize, ErrorCode::InvalidParams, format!("Unknown tool: {}", call.name), None)),
            Lookup::NotListed => return Err(self.refused_at(c, id, Stage::Route, ErrorCode::InvalidParams, format!("Unknown tool: {}", call.name), None)),
            #[cfg(feature = "apps")]
            Lookup::Ambiguous(names) => {
                let msg = format!("Tool '{}' is offered by more than one server ({names}), and mcpx cannot tell which app called it: call it by one of those names", call.name);
                return Err(self.refused_at(c, id, Stage::Route, ErrorCode::InvalidParams, msg, Some(json!({ "candidates": names.split(", ").collect::<Vec<_>>() }))));
            }
        };
        let server = &self.upstreams[route.up].spec.name;
        #[cfg(feature = "traces")]
        let began = (self.traced && self.policy.validates_arguments(server)).then(std::time::Instant::now);
        let checked = self.policy.check_arguments(m, call, server, &route.original);
        #[cfg(feature = "traces")]
        if let Some(t) = began {
            self.effects.push(Effect::Passed(c, id.to_vec(), "validate", t.elapsed(), checked.as_ref().err().map(|r| i64::from(r.0.code()))));
        }
        if let Err(Refusal(code, msg, data)) = checked {
            return Err(self.refused_at(c, id, Stage::Validate, code, msg, data));
        }
        if !self.approve(c, m, ctx, call, &route) {
            return Ok(None);
        }
        Ok(Some(route))
    }

    /// Authorize a prompt `name` for client `c` (`prompts/get`, a
    /// completion's `ref/prompt`): its upstream and upstream name.
    pub fn prompt(&mut self, c: ClientId, m: &Msg, name: &str) -> Result<(UpstreamId, String), Refusal> {
        let id = m.id_bytes().unwrap_or(b"null");
        let found = self.catalog.get(Kind::Prompts, name).map(|e| (self.sight(c, None).visible(Kind::Prompts, e), e.up, e.original.clone()));
        match found {
            Some((true, u, original)) => Ok((u, original.to_string())),
            // Requirement: prompts-errors-32602-32603
            other => {
                let stage = if other.is_some() { Stage::Authorize } else { Stage::Route };
                Err(self.refused_at(c, id, stage, ErrorCode::InvalidParams, format!("Unknown prompt: {name}"), None))
            }
        }
    }

    /// Authorize a resource `uri` for client `c` (a read, a subscription, a
    /// completion's `ref/resource`; `template`: a template may serve it):
    /// its upstream and the upstream's URI.
    pub fn resource(&mut self, c: ClientId, m: &Msg, uri: &str, template: bool) -> Result<(UpstreamId, String), Refusal> {
        let id = m.id_bytes().unwrap_or(b"null");
        let routed = template.then(|| self.catalog.route_template(uri)).flatten().or_else(|| self.upstreams.route_uri(self.catalog, uri));
        match routed {
            Some((u, original)) if self.sight(c, None).server_visible(u) => Ok((u, original)),
            other => {
                let stage = if other.is_some() { Stage::Authorize } else { Stage::Route };
                // Requirement: resources-not-found-32002
                Err(self.refused_at(c, id, stage, ErrorCode::ResourceNotFound, format!("Resource not found: {uri}"), Some(json!({ "uri": uri }))))
            }
        }
    }

    /// Request `id` of client `c` is refused at `stage`: so its audit
    /// line says; the refusal to answer.
    fn refused_at(&mut self, c: ClientId, id: &[u8], stage: Stage, code: ErrorCode, msg: String, data: Option<Value>) -> Refusal {
        self.policy.refused_at(c, id, stage);
        Refusal(code, msg, data)
    }
}
