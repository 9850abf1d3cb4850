//! Tasks through the hub: mcpx runs a client's call as a task itself when
//! the client asks for one (2025-11-25: `params.task` on `tools/call` of a
//! client that declared `capabilities.tasks`; 2026-07-28: the
//! `io.modelcontextprotocol/tasks` extension declared in the request's
//! client capabilities), whatever the upstream supports.
//!
//! - The call is forwarded as a plain request (no `task` member, the
//!   upstream needs no tasks); its `pending` entry becomes
//!   `Origin::Task(id)`, so it no longer belongs to the connection: the
//!   client is answered at once with the task, may disconnect, and fetches
//!   the outcome later from any connection of the same principal.
//! - The upstream's answer is kept byte for byte until the task's TTL runs
//!   out (the requested `ttl`, capped by [`TaskOptions::max_ttl_ms`]).
//!   `tasks/result` (2025) blocks until the task is terminal; 2026
//!   `tasks/get` carries the outcome.
//! - A task belongs to the principal that created it: `tasks/list` shows
//!   only the caller's, any operation on another's task is -32602 "not
//!   found", exactly as for an id that never existed (`table::Table::owned`).
//! - Bounded: working tasks per principal and kept tasks in total
//!   (the oldest finished one makes room), bytes of kept outcomes against
//!   [`TaskOptions::max_result_bytes`] (an outcome over it fails the task
//!   with an error saying so), `tasks/result` waiters per task.
//! - Status changes reach the creating connection as
//!   `notifications/tasks/status` (2025-11-25 clients); audit lines for
//!   creation and terminal states go to mcpx's log.
//!
//! Who runs a client's task, by the client's era and the upstream's tasks
//! (`Plan`, [`Hub::task_plan`]):
//!
//! | client \ upstream | no tasks | 2025-11-25 tasks ([`legacy`]) | 2026-07-28 extension |
//! |---|---|---|---|
//! | 2025-11-25 (`params.task`) | mcpx | the upstream, for a tool it marks `taskSupport`; mcpx for the others | mcpx, which takes the upstream's own task and polls it with `tasks/get` ([`poll`]); input inside it fails the task |
//! | 2026-07-28 (extension) | mcpx | the upstream for a `taskSupport` tool (`tasks/get` carries the result, `input_required` ↔ its input requests, `tasks/update` answers them); others synchronous | the upstream decides ([`relay`]) |
//!
//! Without tasks declared a call is plain; a 2026 request without the
//! extension for a tool that runs only as a task is -32021. mcpx answers
//! every `tasks/*` from its own table except a relayed 2026 task's, which
//! goes to its upstream.
//!
//! Parts: [`table`] (the data and its caps), [`ids`] (unguessable ids),
//! [`persist`] (the task state file across restarts),
//! [`era`] (what each revision's task looks like).

mod era;
mod ids;
mod legacy;
mod persist;
mod poll;
mod relay;
mod table;

use mcpx_core::error::ErrorCode;
use std::collections::HashSet;

use serde_json::{json, Value};

use mcpx_core::cursor::{self, Cursor};
use mcpx_core::meta::RELATED_TASK_KEY;
use mcpx_core::method::Method;

use super::request::ReqCtx;
use super::request::Refusal;
use super::shape::{self, RevExt};
use super::wire::{self, Msg};
use super::{ClientId, Hub, HubOptions, Level, UpstreamId};
use table::{Full, Outcome, Status, Table, Task};

pub(super) use mcpx_core::task::EXTENSION as EXT;
pub(super) use ids::owner;

/// `Cursor::list` of `tasks/list` pages (the catalog's lists use 0..4).
const LIST_CURSOR: u8 = 0x7a;

/// Limits and timings of the tasks mcpx runs itself.
#[derive(Clone, Debug)]
pub struct TaskOptions {
    /// Working tasks one principal may have at once.
    pub max_live_per_principal: usize,
    /// Tasks kept in total, working or finished (finished ones are dropped,
    /// oldest first, to make room; working ones never are).
    pub max_tasks: usize,
    /// Bytes of kept task outcomes, all tasks together.
    pub max_result_bytes: usize,
    /// TTL of a task whose client asked for none (ms).
    pub default_ttl_ms: u64,
    /// Longest TTL granted (ms); a longer request is cut to it.
    pub max_ttl_ms: u64,
    /// `pollInterval` suggested to clients (ms).
    pub poll_ms: u64,
    /// `tasks/result` requests waiting on one task at once.
    pub max_waiters: usize,
    /// Longest `pollIntervalMs` of an upstream's task passed on to clients (ms).
    pub max_poll_ms: u64,
    /// Unix time (ms) at the hub clock's zero, for `createdAt` and
    /// `lastUpdatedAt` (the hub's clock is monotonic).
    pub epoch_ms: u64,
}

impl Default for TaskOptions {
    fn default() -> TaskOptions {
        let epoch_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        TaskOptions {
            max_live_per_principal: 64,
            max_tasks: 1024,
            max_result_bytes: 64 << 20,
            default_ttl_ms: 300_000,
            max_ttl_ms: 3_600_000,
            poll_ms: 500,
            max_waiters: 16,
            max_poll_ms: 30_000,
            epoch_ms,
        }
    }
}

/// How a `tools/call` meets tasks ([`Hub::task_plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Plan {
    /// A plain call (which a 2026 server may still answer with its own task, `relay`).
    Plain,
    /// mcpx runs the call as a task of its own, with this TTL (ms).
    Hub(u64),
    /// The 2025-11-25 server runs it as its task, asked for this TTL (`legacy`).
    Upstream(u64),
}

/// The hub's tasks: the table and the id source.
pub(super) struct Tasks {
    table: Table,
    ids: ids::Ids,
    /// Saved to the state file on every change (`persist`).
    saving: bool,
    /// (upstream, request id) of calls a 2025-11-25 server was asked to run
    /// as its task, until answered (`legacy`).
    asked: HashSet<(UpstreamId, u64)>,
    /// Tasks of the last run that mcpx follows itself (`legacy`, `poll`),
    /// taken up again when their server is ready (`persist`).
    refollow: Vec<String>,
}

impl Tasks {
    pub fn new(opts: &HubOptions) -> Tasks {
        Tasks { table: Table::default(), ids: ids::Ids::new(opts.secret_seed, opts.cluster.replica.as_deref()), saving: false, asked: HashSet::new(), refollow: Vec::new() }
    }
}

/// Did a modern request declare the tasks extension in its client capabilities?
pub(super) fn declared(caps: &Value) -> bool {
    caps.get("extensions").and_then(|e| e.get(EXT)).is_some_and(Value::is_object)
}

/// The 2025-11-25 `tasks` server capability: mcpx lists, cancels and runs
/// `tools/call` as tasks.
pub(super) fn capability() -> Value {
    json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } })
}

/// A listed tool, for a client that can ask for tasks: every tool may be
/// called as a task (mcpx runs it); one its server marks `required` stays so.
// Requirement: tasks-tool-optional
pub(super) fn offer(tool: &mut Value) {
    let required = tool.pointer("/execution/taskSupport").and_then(Value::as_str) == Some("required");
    if let Some(o) = tool.as_object_mut() {
        let support = if required { "required" } else { "optional" };
        o.insert("execution".into(), json!({ "taskSupport": support }));
    }
}

fn not_found(id: &str) -> Refusal {
    // Requirement: tasks-protocol-errors, tasks-informative-errors
    Refusal(ErrorCode::InvalidParams, format!("Invalid params: no task {id} (it may have expired, or it belongs to someone else)"), Some(json!({ "taskId": id })))
}

pub(super) fn missing_extension(method: &str) -> Refusal {
    Refusal(ErrorCode::MissingRequiredClientCapability, format!("{method} needs the client capability extensions[\"{EXT}\"]"), Some(json!({ "requiredCapabilities": { "extensions": { EXT: {} } } })))
}

impl Hub {
    /// Has legacy client `c` declared tasks on a revision that has them?
    pub(super) fn client_declared_tasks(&self, c: ClientId) -> bool {
        self.clients.get(&c).is_some_and(|cl| cl.rev().features().tasks && cl.caps().and_then(|caps| caps.get("tasks")).is_some_and(Value::is_object))
    }

    /// How `tools/call` request `m` to `u`, of a tool its server lists with
    /// `support` (`execution.taskSupport`), meets tasks.
    pub(super) fn task_plan(&self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>, u: UpstreamId, support: Option<&str>) -> Result<Plan, Refusal> {
        let o = &self.opts.tasks;
        // Only a 2025-11-25 server with tasks for tools/call runs its tools as tasks.
        let support = support.filter(|s| matches!(*s, "optional" | "required") && self.upstream_has_legacy_tasks(u));
        let ttl = match ctx {
            Some(x) if !declared(&x.caps) => {
                // Requirement: ext-tasks-never-unsolicited (a task-only tool is -32021, never a task)
                return match support {
                    Some("required") => Err(missing_extension("this tool (its execution.taskSupport is \"required\")")),
                    _ => Ok(Plan::Plain),
                };
            }
            // Requirement: ext-tasks-server-decides, ext-tasks-never-unsolicited
            // (a 2026 server answers with its own task, `relay`; a tool its
            // 2025 server runs synchronously stays synchronous)
            Some(_) if self.upstream_has_tasks(u) || (support.is_none() && self.upstream_has_legacy_tasks(u)) => return Ok(Plan::Plain),
            Some(_) => o.default_ttl_ms,
            None => {
                let Some(r) = m.param(&["task"]).filter(|_| self.client_declared_tasks(c)) else { return Ok(Plan::Plain) };
                let asked = mcpx_core::json::parse(&m.raw[r]).ok().and_then(|v| v.get("ttl")).and_then(|t| std::str::from_utf8(t.bytes()).ok()?.parse::<u64>().ok());
                asked.unwrap_or(o.default_ttl_ms)
            }
        };
        // Requirement: tasks-ttl-override-report, tasks-resource-limits
        let ttl = ttl.clamp(1, o.max_ttl_ms.max(1));
        Ok(if support.is_some() { Plan::Upstream(ttl) } else { Plan::Hub(ttl) })
    }

    /// Is there room for another task of the principal of `c` / `ctx`?
    pub(super) fn task_room(&mut self, c: ClientId, ctx: Option<&ReqCtx>) -> Result<(), Refusal> {
        let owner = self.principal_of(c, ctx);
        self.tasks.table.make_room(&owner, &self.opts.tasks).map_err(|e: Full| Refusal(ErrorCode::InternalError, e.to_string(), None))
    }

    fn principal_of(&self, c: ClientId, ctx: Option<&ReqCtx>) -> Vec<u8> {
        match ctx {
            Some(x) => x.principal.clone(),
            // A session with no credential at all is its own requestor:
            // the anonymous principal is everyone's (tasks-unidentified-no-list).
            None => match self.clients.get(&c).map(|cl| &cl.principal[..]) {
                Some(super::ANONYMOUS_PRINCIPAL) => format!("{}{c}", table::ANONYMOUS_SESSION).into_bytes(),
                Some(p) => p.to_vec(),
                None => Vec::new(),
            },
        }
    }

    /// Client request `m` was just forwarded to `u`: it becomes a task the
    /// hub holds, and the client gets the task at once.
    // Requirement: tasks-return-createtaskresult, tasks-begin-working, ext-tasks-createtaskresult-shape
    pub(super) fn task_start(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>, u: UpstreamId, ttl_ms: u64) {
        let cid = m.id_bytes().unwrap_or(b"null").to_vec();
        let Some((to, up_id)) = self.pending.by_client(c, &cid).filter(|k| k.0 == u) else { return };
        let id = self.tasks.ids.next();
        // A task outlives the per-request timeout, not mcpx's hard cap.
        let Some(progress) = self.pending.make_task(to, up_id, id.clone()) else { return };
        let now = self.now_ms;
        let mut t = Task::new(self.principal_of(c, ctx), c, ctx.is_some(), &m.method, now, ttl_ms);
        t.call = Some((to, up_id));
        t.progress = progress;
        let server = self.ups[u].spec.name.clone();
        // Requirement: tasks-audit
        self.log(Level::Info, format!("task {id} created: {} on server '{server}' for client {c}", m.method));
        let body = self.task_body(&id, &t, TaskView::Created);
        self.tasks.table.insert(id.clone(), t);
        self.publish_task(&id);
        self.tasks_save();
        self.answer_result(c, &cid, &body);
    }

    /// The creator of task `tid` and its progress token, while the task
    /// runs and the creator is connected: progress of the task's call goes
    /// there under the token of the original request, after the
    /// CreateTaskResult too, and stops at a terminal status.
    // Requirement: progress-task-token-lives-with-task, progress-task-same-token, progress-task-stop-at-terminal
    pub(super) fn task_progress_to(&self, tid: &str) -> Option<(ClientId, Vec<u8>)> {
        let t = self.tasks.table.get(tid).filter(|t| !t.status.is_terminal())?;
        Some((t.creator, t.progress.clone()?)).filter(|(c, _)| self.clients.contains_key(c))
    }

    /// What task `id` looks like in the answer to `view`, for the era it was
    /// created in.
    fn task_body(&self, id: &str, t: &Task, view: TaskView) -> Vec<u8> {
        let o = &self.opts.tasks;
        let v = if t.modern {
            let mut v = era::modern(id, t, o.epoch_ms, o.poll_ms, view == TaskView::Get);
            if view == TaskView::Created {
                v["resultType"] = json!("task");
            }
            self.stamp(&mut v, None);
            v
        } else {
            let v = era::legacy(id, t, o.epoch_ms, o.poll_ms);
            if view == TaskView::Created {
                json!({ "task": v })
            } else {
                v
            }
        };
        serde_json::to_vec(&v).unwrap_or_default()
    }

    /// The upstream answered task `id`'s request.
    pub(super) fn task_answered(&mut self, u: UpstreamId, id: &str, m: &Msg) {
        if self.ups[u].is_modern() && self.task_polled(u, id, m) {
            return;
        }
        let Some((method, reported)) = self.tasks.table.get(id).map(|t| (t.method.clone(), t.reported)) else { return };
        let server = self.ups[u].spec.name.clone();
        let (status, outcome, message) = match (m.result_bytes(), m.error_bytes()) {
            (Some(_), _) if self.ups[u].is_modern() && m.env.result().and_then(|v| v.get("resultType")).is_some_and(|t| t.bytes() != b"\"complete\"") => {
                let why = format!("server '{server}' asked for input or answered with another resultType; mcpx cannot relay that inside a task it runs");
                (Status::Failed, error_object(ErrorCode::InternalError, &why), Some(why))
            }
            // An upstream's own task: its `tasks/result` names the task by the
            // upstream's id, which the client never sees.
            (Some(r), _) => (reported.unwrap_or_else(|| era::status_of_result(&method, r)), Outcome::Result(wire::set_meta(r, &Default::default(), |k| k == RELATED_TASK_KEY)), None),
            (None, Some(e)) => {
                let msg = mcpx_core::json::parse(e).ok().and_then(|v| v.get("message")).and_then(|v| wire::string_at(v.bytes(), 0..v.bytes().len()));
                (Status::Failed, Outcome::Error(e.to_vec()), msg)
            }
            (None, None) => return,
        };
        self.task_end(id, status, outcome, message);
    }

    /// Task `id`'s request will never be answered (`why`: timeout, exit).
    pub(super) fn task_lost(&mut self, id: &str, why: String) {
        self.task_end(id, Status::Failed, error_object(ErrorCode::InternalError, &why), Some(why));
    }

    /// Task `id` ends: status, outcome (if it fits the memory cap), the
    /// creator told, waiting `tasks/result` requests answered.
    fn task_end(&mut self, id: &str, status: Status, outcome: Outcome, message: Option<String>) {
        let now = self.now_ms;
        let max = self.opts.tasks.max_result_bytes;
        if let Err(big) = self.tasks.table.finish(id, status, outcome, now, max) {
            let why = format!("the task's result ({} bytes) does not fit mcpx's task memory ({max} bytes in all, task_max_result_bytes); call the tool without a task", big.len());
            let _ = self.tasks.table.finish(id, Status::Failed, error_object(ErrorCode::InternalError, &why), now, usize::MAX);
            self.set_message(id, why);
        } else if let Some(msg) = message {
            self.set_message(id, msg);
        }
        self.task_settled(id);
    }

    fn set_message(&mut self, id: &str, msg: String) {
        if let Some(t) = self.tasks.table.get_mut(id) {
            t.message = Some(msg);
        }
    }

    /// After a status change of task `id`.
    fn task_settled(&mut self, id: &str) {
        let Some(t) = self.tasks.table.get_mut(id) else { return };
        let (waiters, status) = (std::mem::take(&mut t.waiters), t.status);
        let (inputs, relayed) = (std::mem::take(&mut t.inputs), t.relayed.clone());
        self.tasks_save();
        self.log(Level::Info, format!("task {id} {}", status.as_str()));
        // Input the upstream still waits for will never come.
        if let Some((u, _)) = relayed {
            for i in inputs {
                self.refuse_upstream(u, &i.up_id, &i.method, ErrorCode::InternalError, format!("task {id} is {} before the client answered", status.as_str()));
            }
        }
        self.notify_status(id);
        for (c, rid) in waiters {
            self.deliver_result(c, &rid, id);
        }
    }

    /// Task `id`'s status, to the connection that created it (a 2025-11-25
    /// client that declared tasks), or (a 2026-07-28 task) to its owner's
    /// listen streams that asked for it.
    // Requirement: tasks-status-notification-optional, tasks-status-notification-no-related-task
    fn notify_status(&mut self, id: &str) {
        let Some(t) = self.tasks.table.get(id) else { return };
        if t.modern {
            let o = &self.opts.tasks;
            let (owner, v) = (t.owner.clone(), era::modern(id, t, o.epoch_ms, o.poll_ms, true));
            self.notify_listens_task(&owner, id, &v);
        } else if self.client_declared_tasks(t.creator) {
            let o = &self.opts.tasks;
            let p = serde_json::to_vec(&era::legacy(id, t, o.epoch_ms, o.poll_ms)).unwrap_or_default();
            let creator = t.creator;
            self.emit_notification(creator, Method::TasksStatus, Some(&p));
        }
    }

    /// The ids of `asked` that a listen stream of `principal` may follow: its
    /// own 2026-07-28 tasks whose status mcpx knows (a 2026 upstream's own
    /// task changes out of its sight: it is polled with `tasks/get`).
    // Requirement: ext-tasks-notifications-via-listen
    pub(super) fn listenable_tasks(&self, principal: &[u8], asked: &[String]) -> Vec<String> {
        let followed = |id: &String| self.tasks.table.owned(id, principal).is_some_and(|t| t.modern && !t.relayed.as_ref().is_some_and(|(u, _)| self.ups[*u].is_modern()));
        let mut ids: Vec<String> = asked.iter().filter(|id| followed(id)).cloned().collect();
        ids.dedup();
        ids
    }

    /// A task stops before its end (`why`): its `call` upstream goes
    /// (cancelled there), or the upstream's own task (`relayed`) is cancelled.
    fn stop_upstream(&mut self, call: Option<(UpstreamId, u64)>, relayed: Option<(UpstreamId, String)>, why: &str) {
        if let Some((u, up)) = call {
            self.pending.take(u, up);
            if relayed.is_none() {
                self.cancel_upstream(u, up, why);
            }
        }
        if let Some((u, up)) = relayed {
            self.cancel_upstream_task(u, &up);
        }
    }

    /// Answers `tasks/result` request `rid` of client `c` with terminal task `id`'s outcome.
    // Requirement: tasks-result-terminal-final, tasks-result-exact, tasks-result-same-error, tasks-result-response-related-task
    fn deliver_result(&mut self, c: ClientId, rid: &[u8], id: &str) {
        let Some(t) = self.tasks.table.get(id) else {
            let Refusal(code, msg, data) = not_found(id);
            return self.answer_error(c, Some(rid), code, &msg, data);
        };
        let rev = self.clients.get(&c).map(|cl| cl.rev()).unwrap_or(shape::Rev::LATEST_LEGACY);
        match &t.outcome {
            Some(Outcome::Result(r)) => {
                let shaped = shape::result(&t.method, r, rev).unwrap_or_else(|| r.clone());
                let body = wire::set_meta(&shaped, &era::related(id), |_| false);
                // A tool error fails its task (`era`): its status says so.
                let outcome = if t.status == Status::Failed { super::Outcome::ToolError } else { super::Outcome::Result };
                self.answer_result_as(c, rid, &body, outcome);
            }
            Some(Outcome::Error(e)) => {
                let e = e.clone();
                // A stored error (the server's, kept until asked for) is read
                // here once: its outcome was not kept beside it.
                let outcome = super::Outcome::of_error(mcpx_core::json::parse(&e).ok());
                self.answer_raw_error(c, rid, &e, outcome);
            }
            None => {
                let data = json!({ "taskId": id, "_meta": era::related(id) });
                self.answer_error(c, Some(rid), ErrorCode::InternalError, &format!("task {id} was cancelled"), Some(data));
            }
        }
    }

    /// `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` (2025-11-25,
    /// `ctx` None) and `tasks/get`, `tasks/update`, `tasks/cancel` (2026-07-28,
    /// with the request's context).
    pub(super) fn task_request(&mut self, c: ClientId, rid: &[u8], call: Method<'_>, p: &Value, ctx: Option<&ReqCtx>) -> Result<(), Refusal> {
        let method = call.as_str().unwrap_or_default();
        if ctx.is_some_and(|x| !declared(&x.caps)) {
            return Err(missing_extension(method));
        }
        let owner = self.principal_of(c, ctx);
        if call == Method::TasksList && ctx.is_none() {
            return self.task_list(c, rid, &owner, p);
        }
        // Requirement: tasks-taskid-param-authoritative
        let id = p.get("taskId").and_then(Value::as_str).ok_or_else(|| Refusal(ErrorCode::InvalidParams, format!("Invalid params: {method} needs a string \"taskId\""), None))?;
        // Requirement: tasks-bound-reject-foreign, tasks-bind-auth-context
        let t = self.tasks.table.owned(id, &owner).ok_or_else(|| not_found(id))?;
        let id = id.to_string();
        match (call, ctx.is_some()) {
            // Requirement: tasks-no-related-task-in-get-list-cancel-results
            (Method::TasksGet, _) => {
                let body = self.task_body(&id, t, TaskView::Get);
                self.answer_result(c, rid, &body);
            }
            (Method::TasksResult, false) => {
                if t.status.is_terminal() {
                    self.deliver_result(c, rid, &id);
                } else {
                    // Requirement: tasks-result-blocks
                    let max = self.opts.tasks.max_waiters;
                    let t = self.tasks.table.get_mut(&id).expect("owned above");
                    if t.waiters.len() >= max {
                        return Err(Refusal(ErrorCode::InternalError, format!("task {id} has {max} tasks/result requests waiting (mcpx's limit); poll with tasks/get"), None));
                    }
                    t.waiters.push((c, rid.to_vec()));
                }
            }
            (Method::TasksCancel, modern) => {
                // Requirement: tasks-cancel-terminal-reject
                if t.status.is_terminal() && !modern {
                    return Err(Refusal(ErrorCode::InvalidParams, format!("Invalid params: task {id} is already {}; it cannot be cancelled", t.status.as_str()), Some(json!({ "taskId": id }))));
                }
                let (call, relayed) = (t.call, t.relayed.clone());
                // Requirement: ext-tasks-cancel-cooperative
                if self.tasks.table.cancel(&id, self.now_ms) {
                    self.stop_upstream(call, relayed, "the client cancelled the task");
                }
                let t = self.tasks.table.get(&id).expect("owned above");
                let body = if modern { self.stamped_empty() } else { self.task_body(&id, t, TaskView::Get) };
                self.answer_result(c, rid, &body);
                self.task_settled(&id);
            }
            // Requirement: ext-tasks-update (mcpx's own tasks never wait for
            // input; a 2025 upstream's may, `legacy`)
            (Method::TasksUpdate, true) => {
                let Some(responses) = p.get("inputResponses").and_then(Value::as_object) else {
                    return Err(Refusal(ErrorCode::InvalidParams, "Invalid params: tasks/update needs an \"inputResponses\" object".into(), None));
                };
                self.task_update(&id, responses);
                let body = self.stamped_empty();
                self.answer_result(c, rid, &body);
            }
            _ => return Err(Refusal(ErrorCode::MethodNotFound, format!("Method not found: {method}"), None)),
        }
        Ok(())
    }

    fn stamped_empty(&self) -> Vec<u8> {
        let mut v = json!({});
        self.stamp(&mut v, None);
        serde_json::to_vec(&v).unwrap_or_default()
    }

    /// One page of the caller's tasks.
    // Requirement: tasks-list-paginate, tasks-get-implies-list
    fn task_list(&mut self, c: ClientId, rid: &[u8], owner: &[u8], p: &Value) -> Result<(), Refusal> {
        let key = self.opts.cursor_key.to_le_bytes();
        let pos = match p.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(s)) => match cursor::decode(s, &key) {
                Ok(cu) if cu.list == LIST_CURSOR => cu.position as usize,
                _ => return Err(Refusal(ErrorCode::InvalidParams, "Invalid params: invalid cursor".into(), None)),
            },
            Some(_) => return Err(Refusal(ErrorCode::InvalidParams, "Invalid params: the cursor must be a string".into(), None)),
        };
        let ids = self.tasks.table.of_owner(owner);
        let end = (pos + self.opts.page_size.max(1)).min(ids.len());
        let o = &self.opts.tasks;
        let items: Vec<Value> = ids.get(pos.min(end)..end).unwrap_or(&[]).iter().filter_map(|id| Some(era::legacy(id, self.tasks.table.get(id)?, o.epoch_ms, o.poll_ms))).collect();
        let mut v = json!({ "tasks": items });
        if end < ids.len() {
            let next = Cursor { list: LIST_CURSOR, position: end as u32, generation: 0 };
            v["nextCursor"] = json!(cursor::encode(&next, &key).as_str());
        }
        self.answer_result(c, rid, &serde_json::to_vec(&v).unwrap_or_default());
        Ok(())
    }

    /// Tasks past their TTL are dropped; one still working is cancelled
    /// upstream and its waiters told.
    pub(super) fn tasks_tick(&mut self) {
        self.tasks_poll();
        for id in self.tasks.table.expired(self.now_ms) {
            let Some(t) = self.tasks.table.remove(&id) else { continue };
            if !t.status.is_terminal() {
                self.stop_upstream(t.call, t.relayed.clone(), "the task's ttl ran out");
            }
            self.log(Level::Info, format!("task {id} expired ({})", t.status.as_str()));
            for (c, rid) in t.waiters {
                let Refusal(code, msg, data) = not_found(&id);
                self.answer_error(c, Some(&rid), code, &msg, data);
            }
        }
    }

    pub(super) fn tasks_deadline(&self) -> Option<u64> {
        self.tasks.table.next_expiry()
    }

    /// Client `c` is gone: its waiting `tasks/result` requests go; its
    /// tasks stay (another connection of its principal may fetch them).
    pub(super) fn tasks_client_gone(&mut self, c: ClientId) {
        self.tasks.table.drop_waiters_of(c);
    }

    /// For `status`: tasks kept and bytes of their outcomes.
    pub(super) fn tasks_status(&self) -> Value {
        json!({ "kept": self.tasks.table.len(), "resultBytes": self.tasks.table.bytes() })
    }
}

/// Which answer a task is shown in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TaskView {
    Created,
    Get,
}

fn error_object(code: ErrorCode, message: &str) -> Outcome {
    Outcome::Error(crate::bytes::written::error_object(code, message))
}
