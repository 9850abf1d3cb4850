//! The request pipeline: the stages every client request passes, of every
//! method, era and transport, in this order (README: "The request
//! pipeline"):
//!
//! 1. **identify** — who asks and in which era, decided once: the
//!    principal is the transport's (`Hub::set_client_principal`; HTTP's
//!    one definition is `http::auth`, stdio is `mcpx-local`), the era is the
//!    transport's when it decided one (`Hub::set_client_modern`), else core's
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
//! 5. **route** — the hub's own answer or the upstream that owns the name
//!    (`router`); an unknown name is refused here.
//! 6. **shape** — the answer shaped for the client's revision (`shape`).
//! 7. **observe** — the audit line, metric sample and debug line of the
//!    request (`policy`: `policy_begin` … `policy_answered`), naming what
//!    was asked and, for a refusal, the stage that refused it.
//!
//! A new cross-cutting rule (approvals, pinning, tracing) is a new stage
//! module here and one call in [`Hub::tool_stages`] / [`Hub::prompt_stages`]
//! / [`Hub::resource_stages`].

mod admit;
mod authorize;

use mcpx_core::error::ErrorCode;
use serde_json::{json, Value};

use crate::policy::audit::Stage;
use crate::policy::ratelimit::Class;

use super::catalog::Kind;
use super::policy::ToolCall;
use super::request::Refusal;
use super::request::ReqCtx;
use super::wire::Msg;
use super::{ClientId, Hub, UpstreamId};

/// A `tools/call` through the stages: its upstream, the tool's upstream
/// name, and its `execution.taskSupport`.
pub(super) struct ToolRoute {
    pub up: UpstreamId,
    pub original: String,
    pub task_support: Option<String>,
}

/// A tool name looked up for client `c`: the answer to a hidden name is
/// the unknown one's, the audit line tells them apart.
enum Lookup {
    Visible(ToolRoute),
    Hidden,
    NotListed,
}

impl Hub {
    /// Admit, authorize and validate a `tools/call` of client `c` for the
    /// tool `call` names (a meta-tool's call already resolved to the tool
    /// it names); `call.name` becomes the exposed spelling. `None`: the
    /// name is of a server whose tools are not known yet, and the call
    /// waits for it (`lazy`), to pass the stages when routed again.
    pub(super) fn tool_stages(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>, call: &mut ToolCall) -> Result<Option<ToolRoute>, Refusal> {
        let id = m.id_bytes().unwrap_or(b"null");
        let lookup = match self.catalog.get(Kind::Tools, &call.name) {
            None => Lookup::NotListed,
            Some(e) if !self.visible(c, Kind::Tools, e) => Lookup::Hidden,
            Some(e) => {
                // Either spelling of a name (dotted or not): limits and the
                // audit log see the one every client can be shown.
                if call.name != e.exposed {
                    call.name.clone_from(&e.exposed);
                }
                let task_support = super::value_at(&e.item, &["execution", "taskSupport"]).and_then(Value::as_str).map(str::to_string);
                Lookup::Visible(ToolRoute { up: e.up, original: e.original.clone(), task_support })
            }
        };
        let unlisted = matches!(lookup, Lookup::NotListed).then(|| self.starts.unlisted_owner(&call.name, &self.ups)).flatten();
        if let Some(u) = unlisted {
            if let Some(fx) = self.starts.park(&mut self.ups[u], u, c, m, ctx, self.now_ms) {
                self.apply_starts(fx);
                return Ok(None);
            }
            self.admit(c, id, Class::ToolCall, None, &call.name)?;
            return Err(self.unavailable(u));
        }
        // A hidden or unknown tool is charged to the principal alone: its
        // limits never tell whether the name exists.
        let up = match &lookup {
            Lookup::Visible(r) => {
                let (policy, server) = self.policy_with(r.up);
                policy.resolved(c, m, server, &call.name, &r.original);
                Some(r.up)
            }
            Lookup::Hidden | Lookup::NotListed => None,
        };
        self.admit(c, id, Class::ToolCall, up, &call.name)?;
        // Requirement: tools-error-unknown-tool-protocol
        let route = match lookup {
            Lookup::Visible(r) => r,
            Lookup::Hidden => return Err(self.refused_at(c, id, Stage::Authorize, ErrorCode::InvalidParams, format!("Unknown tool: {}", call.name), None)),
            Lookup::NotListed => return Err(self.refused_at(c, id, Stage::Route, ErrorCode::InvalidParams, format!("Unknown tool: {}", call.name), None)),
        };
        let (policy, server) = self.policy_with(route.up);
        if let Err(Refusal(code, msg, data)) = policy.check_arguments(m, call, server, &route.original) {
            return Err(self.refused_at(c, id, Stage::Validate, code, msg, data));
        }
        Ok(Some(route))
    }

    /// Authorize a prompt `name` for client `c` (`prompts/get`, a
    /// completion's `ref/prompt`): its upstream and upstream name.
    pub(super) fn prompt_stages(&mut self, c: ClientId, m: &Msg, name: &str) -> Result<(UpstreamId, String), Refusal> {
        let id = m.id_bytes().unwrap_or(b"null");
        let found = self.catalog.get(Kind::Prompts, name).map(|e| (self.visible(c, Kind::Prompts, e), e.up, e.original.clone()));
        match found {
            Some((true, u, original)) => Ok((u, original)),
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
    pub(super) fn resource_stages(&mut self, c: ClientId, m: &Msg, uri: &str, template: bool) -> Result<(UpstreamId, String), Refusal> {
        let id = m.id_bytes().unwrap_or(b"null");
        let routed = template.then(|| self.catalog.route_template(uri)).flatten().or_else(|| self.route_uri(uri));
        match routed {
            Some((u, original)) if self.server_visible(c, u) => Ok((u, original)),
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
