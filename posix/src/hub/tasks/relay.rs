//! Tasks an upstream runs (the 2026-07-28 extension, declared in its
//! `server/discover`), relayed to a modern client that declared it too.
//!
//! - The client's extension is declared to the upstream with the call; the
//!   upstream decides whether to answer with a task (`ext-tasks-server-decides`).
//! - Its task id never reaches the client: the hub answers with an id of
//!   its own (unguessable, `ids`), owned by the caller's principal, and maps
//!   it back on `tasks/get`, `tasks/update` and `tasks/cancel`, which are
//!   forwarded to that upstream (with `inputResponses` kept: input requests
//!   inside the task pass through, both sides speak the extension).
//! - `ttlMs` is capped by `TaskOptions::max_ttl_ms` (the hub forgets the
//!   mapping then), `pollIntervalMs` by `TaskOptions::max_poll_ms`.

use mcpx_core::error::ErrorCode;
use std::ops::Range;

use mcpx_core::json::JsonValue;
use mcpx_core::rewrite::Splice;
use serde_json::Value;

use super::table::{Status, Task};
use super::EXT;
use crate::hub::request::ReqCtx;
use crate::hub::request::Refusal;
use crate::hub::wire::{self, Msg};
use crate::hub::{ClientId, Hub, Level, UpstreamId};

impl Hub {
    /// Does upstream `u` serve the tasks extension?
    pub(in crate::hub) fn upstream_has_tasks(&self, u: UpstreamId) -> bool {
        self.ups[u].is_modern() && self.ups[u].caps.as_ref().and_then(|c| c.get("extensions")).and_then(|e| e.get(EXT)).is_some_and(Value::is_object)
    }

    /// Modern `tasks/*` request `m` about a task an upstream runs: that
    /// upstream, its own task id and the span of `taskId` in `m` to replace;
    /// `None` when the task is not a relayed one of the caller's.
    pub(in crate::hub) fn task_upstream(&self, m: &Msg, ctx: &ReqCtx) -> Option<(UpstreamId, String, Range<usize>)> {
        let r = m.param(&["taskId"])?;
        let id = crate::hub::wire::string_at(m.raw, r.clone())?;
        let t = self.tasks.table.owned(&id, &ctx.principal)?;
        // A 2025 upstream's task is answered from the hub's state (`legacy`).
        let (u, up) = t.relayed.clone().filter(|(u, _)| self.ups[*u].is_modern())?;
        Some((u, up, r))
    }

    /// The connection that created the task upstream `u` runs as `up` (a
    /// relayed task), with its owner: where a request of `u` that names the
    /// task in its `related-task` `_meta` belongs.
    pub(in crate::hub) fn task_owner_of(&self, u: UpstreamId, up: &str) -> Option<(ClientId, &[u8])> {
        let t = self.tasks.table.get(&self.tasks.table.by_upstream(u, up)?)?;
        Some((t.creator, &t.owner))
    }

    /// A modern upstream's answer `res` (its `result` view) to `method`, on
    /// its way to client `c`: a new task is registered under an id of the
    /// hub's; a task's id in an answer to `tasks/*` becomes the hub's again;
    /// TTL and polling capped. The changes are spliced into the bytes
    /// (`None`: none needed), every other byte passes as it is.
    pub(in crate::hub) fn task_reply(&mut self, u: UpstreamId, c: ClientId, method: &str, res: &JsonValue<'_>, ctx: &ReqCtx) -> Result<Option<Vec<u8>>, Refusal> {
        let text = |k: &str| res.get(k).and_then(|v| v.as_str()).and_then(|s| String::from_utf8(s.decoded().collect()).ok());
        let number = |k: &str| res.get(k).and_then(|v| v.as_i64()).and_then(|n| u64::try_from(n).ok());
        let Some(up) = text("taskId") else { return Ok(None) };
        let o = self.opts.tasks.clone();
        let id = match self.tasks.table.by_upstream(u, &up) {
            Some(id) => id,
            None if method == "tools/call" && text("resultType").as_deref() == Some("task") => self.task_register(u, c, up, number("ttlMs"), ctx)?,
            None => return Ok(None),
        };
        if let Some(t) = self.tasks.table.get_mut(&id) {
            if let Some(s) = text("status").as_deref().and_then(Status::parse) {
                t.status = s;
                t.updated_ms = self.now_ms;
            }
        }
        let id = wire::quote(&id);
        let ttl = number("ttlMs").map(|t| t.min(o.max_ttl_ms).to_string());
        let poll = number("pollIntervalMs").map(|p| p.min(o.max_poll_ms).to_string());
        let mut splices = vec![Splice::set_member(res, "taskId", &id)];
        for (k, v) in [("ttlMs", &ttl), ("pollIntervalMs", &poll)] {
            if let Some(v) = v {
                splices.push(Splice::set_member(res, k, v.as_bytes()));
            }
        }
        Ok(Some(crate::hub::wire::splice_within(res, &mut splices)))
    }

    /// Upstream `u`'s new task `up`, created for client `c`: the hub's id for it.
    fn task_register(&mut self, u: UpstreamId, c: ClientId, up: String, ttl_ms: Option<u64>, ctx: &ReqCtx) -> Result<String, Refusal> {
        self.tasks.table.make_room(&ctx.principal, &self.opts.tasks).map_err(|e| Refusal(ErrorCode::InternalError, e.to_string(), None))?;
        let id = self.tasks.ids.next();
        let now = self.now_ms;
        let ttl_ms = ttl_ms.unwrap_or(self.opts.tasks.default_ttl_ms).min(self.opts.tasks.max_ttl_ms);
        let server = self.ups[u].spec.name.clone();
        // Requirement: tasks-audit
        self.log(Level::Info, format!("task {id} created: server '{server}' runs it as its task {up}, for client {c}"));
        let mut t = Task::new(ctx.principal.clone(), c, true, "tools/call", now, ttl_ms);
        t.relayed = Some((u, up));
        self.tasks.table.insert(id.clone(), t);
        self.publish_task(&id);
        self.tasks_save();
        Ok(id)
    }
}
