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

use super::table::{Status, Task};
use super::{Effect, Owner, Tasks, Up};
use crate::hub::request::Refusal;
use crate::hub::wire::{self, Msg};
use crate::hub::{ClientId, Level, UpstreamId};

impl Tasks {
    /// Modern `tasks/*` request `m` of `principal` about a task an upstream
    /// runs: that upstream, its own task id and the span of `taskId` in `m`
    /// to replace; `None` when the task is not a relayed one of the caller's.
    pub fn upstream_of(&self, m: &Msg, principal: &[u8], ups: &[Up]) -> Option<(UpstreamId, String, Range<usize>)> {
        let r = m.param(&["taskId"])?;
        let id = wire::string_at(m.raw, r.clone())?;
        let t = self.table.owned(&id, Owner { principal, session: None })?;
        // A 2025 upstream's task is answered from the hub's state (`legacy`).
        let (u, up) = t.relayed.clone().filter(|(u, _)| ups.get(*u).is_some_and(|x| x.modern))?;
        Some((u, up, r))
    }

    /// The connection that created the task upstream `u` runs as `up` (a
    /// relayed task): where a request of `u` that names the task in its
    /// `related-task` `_meta` belongs.
    pub fn creator_of(&self, u: UpstreamId, up: &str) -> Option<ClientId> {
        Some(self.table.get(&self.table.by_upstream(u, up)?)?.creator)
    }

    /// Modern upstream `up`'s answer `res` (its `result` view) to `method`,
    /// on its way to client `c` of `principal`: a new task is registered
    /// under an id of the hub's; a task's id in an answer to `tasks/*`
    /// becomes the hub's again; TTL and polling capped. The changes are
    /// spliced into the bytes (`None`: none needed), every other byte
    /// passes as it is. The effects go before the answer.
    pub fn reply(&mut self, up: &Up, c: ClientId, method: &str, res: &JsonValue<'_>, principal: &[u8], now: u64) -> (Result<Option<Vec<u8>>, Refusal>, Vec<Effect>) {
        let r = self.reply_step(up, c, method, res, principal, now);
        (r, self.effects())
    }

    fn reply_step(&mut self, up: &Up, c: ClientId, method: &str, res: &JsonValue<'_>, principal: &[u8], now: u64) -> Result<Option<Vec<u8>>, Refusal> {
        let text = |k: &str| res.get(k).and_then(|v| v.as_str()).and_then(|s| String::from_utf8(s.decoded().collect()).ok());
        let number = |k: &str| res.get(k).and_then(|v| v.as_i64()).and_then(|n| u64::try_from(n).ok());
        let Some(up_task) = text("taskId") else { return Ok(None) };
        let id = match self.table.by_upstream(up.id, &up_task) {
            Some(id) => id,
            None if method == "tools/call" && text("resultType").as_deref() == Some("task") => self.register(up, c, up_task, number("ttlMs"), principal, now)?,
            None => return Ok(None),
        };
        if let Some(t) = self.table.get_mut(&id) {
            if let Some(s) = text("status").as_deref().and_then(Status::parse) {
                t.status = s;
                t.updated_ms = now;
            }
        }
        let id = wire::quote(&id);
        let ttl = number("ttlMs").map(|t| t.min(self.opts.max_ttl_ms).to_string());
        let poll = number("pollIntervalMs").map(|p| p.min(self.opts.max_poll_ms).to_string());
        let mut splices = vec![Splice::set_member(res, "taskId", &id)];
        for (k, v) in [("ttlMs", &ttl), ("pollIntervalMs", &poll)] {
            if let Some(v) = v {
                splices.push(Splice::set_member(res, k, v.as_bytes()));
            }
        }
        Ok(Some(wire::splice_within(res, &mut splices)))
    }

    /// Upstream `up`'s new task `up_task`, created for client `c` of
    /// `principal`: the hub's id for it.
    fn register(&mut self, up: &Up, c: ClientId, up_task: String, ttl_ms: Option<u64>, principal: &[u8], now: u64) -> Result<String, Refusal> {
        self.table.make_room(principal, &self.opts).map_err(|e| Refusal(ErrorCode::InternalError, e.to_string(), None))?;
        let id = self.ids.next();
        let ttl_ms = ttl_ms.unwrap_or(self.opts.default_ttl_ms).min(self.opts.max_ttl_ms);
        // Requirement: tasks-audit
        self.log(Level::Info, format!("task {id} created: server '{}' runs it as its task {up_task}, for client {c}", up.name));
        let mut t = Task::new(Owner { principal, session: None }, c, true, "tools/call", now, ttl_ms);
        t.relayed = Some((up.id, up_task));
        self.table.insert(id.clone(), t);
        self.out.push(Effect::Publish(id.clone()));
        self.save();
        Ok(id)
    }
}
