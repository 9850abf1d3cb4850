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
//! (`Plan`, [`Tasks::plan`]):
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
//! The subsystem owns its table and answers with effects: a step takes
//! what it needs of the rest of the hub as plain values (the caller's
//! [`Owner`], `now`, an upstream's [`Up`]) and returns what it wants done
//! elsewhere (answers, requests upstream, notifications, log lines, the
//! state file) as [`Effect`]s, which the hub applies in order
//! (`Hub::apply_task_effects`). The `pending` entries of task calls
//! (`Origin::Task`) stay `pending`'s.
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
use super::shape::{self, Rev, RevExt};
use super::wire::{self, Msg};
use super::{ClientId, HubOptions, Level, UpstreamId};
use table::{Full, Outcome, Status, Table, Task};

pub(super) use mcpx_core::task::EXTENSION as EXT;
pub(super) use legacy::InputTo;
pub use persist::TASK_STATE_MAX;

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

/// How a `tools/call` meets tasks ([`Tasks::plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Plan {
    /// A plain call (which a 2026 server may still answer with its own task, `relay`).
    Plain,
    /// mcpx runs the call as a task of its own, with this TTL (ms).
    Hub(u64),
    /// The 2025-11-25 server runs it as its task, asked for this TTL (`legacy`).
    Upstream(u64),
}

/// Who a task belongs to: the caller's principal (the connection's, as
/// every quota, limit and audit line of the hub reads it), and for a
/// legacy session without any credential that session too: the anonymous
/// principal is everyone's, so such a session's tasks are its own
/// (tasks-unidentified-no-list) while they count against the anonymous
/// principal's share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Owner<'a> {
    pub principal: &'a [u8],
    pub session: Option<ClientId>,
}

impl<'a> Owner<'a> {
    /// The owner of what connection `c` asks for with `principal` (a
    /// modern request's `ReqCtx::principal`, else the connection's).
    pub fn of(c: ClientId, principal: &'a [u8], modern: bool) -> Owner<'a> {
        let session = (!modern && principal == super::ANONYMOUS_PRINCIPAL).then_some(c);
        Owner { principal, session }
    }
}

/// What a task step knows of one upstream (the hub fills it in).
#[derive(Clone, Copy, Debug)]
pub(super) struct Up<'a> {
    pub id: UpstreamId,
    pub name: &'a str,
    /// Of the 2026-07-28 era.
    pub modern: bool,
    pub ready: bool,
    /// A 2025-11-25 server that runs `tools/call` as tasks (`legacy`).
    pub legacy_tasks: bool,
    /// A 2026-07-28 server with the tasks extension (`relay`).
    pub ext_tasks: bool,
    pub timeout_ms: u64,
    /// Its revision (the newest legacy one before it answered).
    pub rev: Rev,
    /// A remote server, which every replica reaches (`persist`).
    pub remote: bool,
}

/// What an upstream of revision `rev` (`modern`: of the 2026-07-28 era)
/// with capabilities `caps` runs as tasks: (`Up::legacy_tasks`, `Up::ext_tasks`).
pub(super) fn support(rev: Option<Rev>, modern: bool, caps: Option<&Value>) -> (bool, bool) {
    let legacy = !modern && rev.is_some_and(|r| r.supports(mcpx_core::revision::Feature::CoreTasks)) && caps.and_then(|c| super::value_at(c, &["tasks", "requests", "tools", "call"])).is_some_and(Value::is_object);
    let ext = modern && caps.and_then(|c| c.get("extensions")).and_then(|e| e.get(EXT)).is_some_and(Value::is_object);
    (legacy, ext)
}

/// A result answered to a client.
pub(super) enum Reply {
    Bytes(Vec<u8>),
    /// A 2026-07-28 result the hub stamps (`Hub::stamp`) before it goes.
    Stamped(Value),
}

/// What a task step wants done outside the tasks subsystem; the hub
/// applies them in order (`Hub::apply_task_effects`).
pub(super) enum Effect {
    /// Answer client request `id` with a result.
    Answer { client: ClientId, id: Vec<u8>, result: Reply, outcome: super::Outcome },
    /// Answer it with an error object kept raw.
    AnswerRaw { client: ClientId, id: Vec<u8>, error: Vec<u8>, outcome: super::Outcome },
    /// Answer it with an error.
    Refuse { client: ClientId, id: Vec<u8>, refusal: Refusal },
    /// `notifications/tasks/status` with `params` to the 2025-11-25
    /// connection that created the task, if it declared tasks (one that
    /// did not gets none: a server may have made the task unasked).
    StatusToCreator { client: ClientId, params: Vec<u8> },
    /// `notifications/tasks` with `task` to the listen streams of
    /// `principal` that follow task `id`.
    NotifyListens { principal: Vec<u8>, id: String, task: Value },
    /// A request to upstream `u`: with `task`, its answer is that task's
    /// (`Origin::Task`) and the request is the task's call; else nobody
    /// waits for it (`Origin::Fire`).
    Ask { u: UpstreamId, method: Method<'static>, params: Vec<u8>, task: Option<String>, timeout: u64 },
    /// A message to upstream `u` (an answer to its request).
    ToUpstream { u: UpstreamId, msg: Vec<u8> },
    /// Refuse upstream `u`'s request `id`.
    RefuseUpstream { u: UpstreamId, id: Vec<u8>, method: String, code: ErrorCode, why: String },
    /// A task's call `id` to `u` ends: out of `pending`, and cancelled
    /// there (`notifications/cancelled`) when there is a `why`.
    EndCall { u: UpstreamId, id: u64, why: Option<&'static str> },
    Log(Level, String),
    /// The table changed: the state file is written (`persist`).
    Save,
    /// Task `id` is published to the shared store (`shared`).
    Publish(String),
    /// For task `task`'s span (`hub::trace`): it started for client
    /// `started_by`'s request, or its status is now `status` (`None`: it
    /// expired).
    #[cfg(feature = "traces")]
    Traced { task: String, started_by: Option<(ClientId, Vec<u8>)>, status: Option<Status> },
}

/// The hub's tasks: the table, the id source, and what they answer with.
pub(super) struct Tasks {
    table: Table,
    ids: ids::Ids,
    opts: TaskOptions,
    /// Items per `tasks/list` page, and the key of its cursors.
    page_size: usize,
    cursor_key: u64,
    /// Bound of `asked` (the hub's requests in flight).
    max_pending: usize,
    /// Saved to the state file on every change (`persist`).
    saving: bool,
    /// (upstream, request id) of calls a 2025-11-25 server was asked to run
    /// as its task, until answered (`legacy`).
    asked: HashSet<(UpstreamId, u64)>,
    /// Tasks of the last run that mcpx follows itself (`legacy`, `poll`),
    /// taken up again when their server is ready (`persist`).
    refollow: Vec<String>,
    /// Effects of the step under way, handed out at its end.
    out: Vec<Effect>,
}

/// Did a modern request declare the tasks extension in its client capabilities?
pub(super) fn declared(caps: &Value) -> bool {
    caps.get("extensions").and_then(|e| e.get(EXT)).is_some_and(Value::is_object)
}

/// The TTL a legacy request `m` asks for its task (`params.task`, whose
/// `ttl` defaults to `o`'s), when it asks for one and its client
/// `declared` tasks.
pub(super) fn legacy_ttl(m: &Msg, declared: impl FnOnce() -> bool, o: &TaskOptions) -> Option<u64> {
    // Asked first: looking for `task` walks the params (past a call's
    // arguments, however large), and only a client that declared tasks is
    // heard on it.
    if !declared() {
        return None;
    }
    let r = m.param(&["task"])?;
    let asked = mcpx_core::json::parse(&m.raw[r]).ok().and_then(|v| v.get("ttl")).and_then(|t| std::str::from_utf8(t.bytes()).ok()?.parse::<u64>().ok());
    Some(asked.unwrap_or(o.default_ttl_ms))
}

/// Has a legacy client of revision `rev` with capabilities `caps` declared
/// tasks on a revision that has them?
pub(super) fn declared_legacy(rev: Rev, caps: Option<&Value>) -> bool {
    rev.features().tasks && caps.and_then(|c| c.get("tasks")).is_some_and(Value::is_object)
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

/// A client request that makes or asks about a task: who asks, and which
/// request it is.
pub(super) struct Caller<'a> {
    pub client: ClientId,
    pub owner: Owner<'a>,
    /// The request's id, raw JSON.
    pub id: &'a [u8],
    /// The client's revision (its `tasks/result` is shaped for it).
    pub rev: Rev,
    /// A modern request's context.
    pub ctx: Option<&'a ReqCtx>,
}

impl Tasks {
    pub fn new(opts: &HubOptions) -> Tasks {
        Tasks {
            table: Table::default(),
            ids: ids::Ids::new(opts.secret_seed, opts.cluster.replica.as_deref()),
            opts: opts.tasks.clone(),
            page_size: opts.page_size,
            cursor_key: opts.cursor_key,
            max_pending: opts.max_pending,
            saving: false,
            asked: HashSet::new(),
            refollow: Vec::new(),
            out: Vec::new(),
        }
    }

    /// The effects of the step just taken.
    fn effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.out)
    }

    fn log(&mut self, level: Level, msg: String) {
        self.out.push(Effect::Log(level, msg));
    }

    /// How `tools/call` request `m` to `up`, of a tool its server lists with
    /// `support` (`execution.taskSupport`), meets tasks; `declared_tasks`:
    /// did the (legacy) client declare tasks (asked only when it matters).
    pub fn plan(&self, m: &Msg, ctx: Option<&ReqCtx>, declared_tasks: impl FnOnce() -> bool, up: &Up, support: Option<&str>) -> Result<Plan, Refusal> {
        let o = &self.opts;
        // Only a 2025-11-25 server with tasks for tools/call runs its tools as tasks.
        let support = support.filter(|s| matches!(*s, "optional" | "required") && up.legacy_tasks);
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
            Some(_) if up.ext_tasks || (support.is_none() && up.legacy_tasks) => return Ok(Plan::Plain),
            Some(_) => o.default_ttl_ms,
            None => {
                let Some(ttl) = legacy_ttl(m, declared_tasks, o) else { return Ok(Plan::Plain) };
                ttl
            }
        };
        // Requirement: tasks-ttl-override-report, tasks-resource-limits
        let ttl = ttl.clamp(1, o.max_ttl_ms.max(1));
        Ok(if support.is_some() { Plan::Upstream(ttl) } else { Plan::Hub(ttl) })
    }

    /// Is there room for another task of `principal`?
    pub fn room(&mut self, principal: &[u8]) -> Result<(), Refusal> {
        self.table.make_room(principal, &self.opts).map_err(|e: Full| Refusal(ErrorCode::InternalError, e.to_string(), None))
    }

    /// A fresh task id.
    pub fn new_id(&mut self) -> String {
        self.ids.next()
    }

    /// The replica other than `me` that runs the task modern request `m`
    /// (`tasks/get`, `tasks/update`, `tasks/cancel`) names, and the task's
    /// id: the request is that replica's to answer (`shared`). `None` for
    /// a hub alone, for another request, and for a task this hub holds.
    pub fn elsewhere(&self, m: &Msg, me: Option<&str>) -> Option<(String, String)> {
        let me = me?;
        if !matches!(m.call, Method::TasksGet | Method::TasksUpdate | Method::TasksCancel) {
            return None;
        }
        let task = m.param(&["taskId"]).and_then(|r| wire::string_at(m.raw, r))?;
        // A task taken over from a replica that is gone is this one's now.
        if self.has(&task) {
            return None;
        }
        let owner = ids::owner(&task).filter(|o| *o != me)?.to_string();
        Some((owner, task))
    }

    /// `who`'s request of `method` was just forwarded to `up` as `call`
    /// (its upstream id and the creator's progress token), whose `pending`
    /// entry is task `id`'s now: the task is the hub's, and the client gets
    /// it at once.
    // Requirement: tasks-return-createtaskresult, tasks-begin-working, ext-tasks-createtaskresult-shape
    pub fn start(&mut self, id: String, who: Caller, method: &str, up: &Up, call: (u64, Option<Vec<u8>>), ttl_ms: u64, now: u64) -> Vec<Effect> {
        let c = who.client;
        let mut t = Task::new(who.owner, c, who.ctx.is_some(), method, now, ttl_ms);
        t.call = Some((up.id, call.0));
        t.progress = call.1;
        // Requirement: tasks-audit
        self.log(Level::Info, format!("task {id} created: {method} on server '{}' for client {c}", up.name));
        self.created(id, t, c, who.id.to_vec())
    }

    /// New task `t` goes into the table, and request `rid` of client `c`
    /// that made it is answered with it; a task made while the call waited
    /// ([`Tasks::waiting`]) was answered then, and now runs.
    fn created(&mut self, id: String, mut t: Task, c: ClientId, rid: Vec<u8>) -> Vec<Effect> {
        if let Some(w) = self.table.get_mut(&id) {
            t.created_ms = w.created_ms;
            t.ttl_ms = w.ttl_ms;
            *w = t;
            self.settled(&id);
            return self.effects();
        }
        let result = self.task_body(&id, &t, TaskView::Created);
        #[cfg(feature = "traces")]
        self.out.push(Effect::Traced { task: id.clone(), started_by: Some((c, rid.clone())), status: Some(t.status) });
        self.table.insert(id.clone(), t);
        self.out.push(Effect::Publish(id));
        self.save();
        self.out.push(Effect::Answer { client: c, id: rid, result, outcome: super::Outcome::Result });
        self.effects()
    }

    /// `who`'s `tools/call` waits for a person's approval (`approvals`):
    /// a task for it now, answered at once, `input_required` while its
    /// client's user is asked (`asking`), else working with a message
    /// saying what it waits for. Once approved the call runs as this task
    /// ([`Tasks::created`]); the call's own answer, if the hub writes one
    /// (a decline, a refusal), is its outcome ([`Tasks::answer_of_call`]).
    // Requirement: tasks-input-required-move
    pub fn waiting(&mut self, who: Caller, ttl_ms: u64, asking: bool, now: u64) -> Result<(String, Vec<Effect>), Refusal> {
        self.room(who.owner.principal)?;
        let ttl_ms = ttl_ms.clamp(1, self.opts.max_ttl_ms.max(1));
        let mut t = Task::new(who.owner, who.client, false, "tools/call", now, ttl_ms);
        t.status = if asking { Status::InputRequired } else { Status::Working };
        t.message = Some(if asking { "waiting for the user to approve this call" } else { "waiting for a person to approve this call on mcpx's approvals page" }.into());
        let id = self.ids.next();
        // Requirement: tasks-audit
        self.log(Level::Info, format!("task {id} created: tools/call for client {}, waiting for approval", who.client));
        let fx = self.created(id.clone(), t, who.client, who.id.to_vec());
        Ok((id, fx))
    }

    /// The call of task `id` was answered by the hub itself (`answer`, the
    /// whole response): its outcome, as an upstream's answer would be.
    pub fn answer_of_call(&mut self, id: &str, answer: &[u8], now: u64) -> Vec<Effect> {
        let Ok(m) = wire::parse(answer) else { return self.effects() };
        if self.table.get(id).is_some_and(|t| !t.status.is_terminal() && t.call.is_none() && t.relayed.is_none()) {
            let (status, outcome, message) = match (m.result_bytes(), m.error_bytes()) {
                (Some(r), _) => {
                    // Requirement: tasks-failed-status-message (a tool error's first text)
                    let status = era::status_of_result("tools/call", r);
                    let text = (status == Status::Failed).then(|| serde_json::from_slice::<Value>(r).ok()).flatten().and_then(|v| v.pointer("/content/0/text").and_then(Value::as_str).map(str::to_string));
                    (status, Outcome::Result(r.to_vec()), text)
                }
                (None, Some(e)) => (Status::Failed, Outcome::Error(e.to_vec()), error_message(e)),
                (None, None) => return self.effects(),
            };
            self.end(id, status, outcome, message, now);
        }
        self.effects()
    }

    /// Is task `id` there and not ended?
    pub fn live(&self, id: &str) -> bool {
        self.table.get(id).is_some_and(|t| !t.status.is_terminal())
    }

    /// The creator of task `tid` and its progress token, while the task
    /// runs (progress goes there if the creator is connected): progress of
    /// the task's call goes there under the token of the original request,
    /// after the CreateTaskResult too, and stops at a terminal status.
    // Requirement: progress-task-token-lives-with-task, progress-task-same-token, progress-task-stop-at-terminal
    pub fn progress_to(&self, tid: &str) -> Option<(ClientId, Vec<u8>)> {
        let t = self.table.get(tid).filter(|t| !t.status.is_terminal())?;
        Some((t.creator, t.progress.clone()?))
    }

    /// What task `id` looks like in the answer to `view`, for the era it was
    /// created in.
    fn task_body(&self, id: &str, t: &Task, view: TaskView) -> Reply {
        let o = &self.opts;
        if t.modern {
            let mut v = era::modern(id, t, o.epoch_ms, o.poll_ms, view == TaskView::Get);
            if view == TaskView::Created {
                v["resultType"] = json!("task");
            }
            return Reply::Stamped(v);
        }
        let v = era::legacy(id, t, o.epoch_ms, o.poll_ms);
        let v = if view == TaskView::Created { json!({ "task": v }) } else { v };
        Reply::Bytes(serde_json::to_vec(&v).unwrap_or_default())
    }

    /// Upstream `up` answered task `id`'s request with `m`.
    pub fn answered(&mut self, up: &Up, id: &str, m: &Msg, now: u64) -> Vec<Effect> {
        if up.modern && self.polled(up, id, m, now) {
            return self.effects();
        }
        let Some((method, reported)) = self.table.get(id).map(|t| (t.method.clone(), t.reported)) else { return self.effects() };
        let server = up.name;
        let (status, outcome, message) = match (m.result_bytes(), m.error_bytes()) {
            (Some(_), _) if up.modern && m.env.result().and_then(|v| v.get("resultType")).is_some_and(|t| t.bytes() != b"\"complete\"") => {
                let why = format!("server '{server}' asked for input or answered with another resultType; mcpx cannot relay that inside a task it runs");
                (Status::Failed, error_object(ErrorCode::InternalError, &why), Some(why))
            }
            // An upstream's own task: its `tasks/result` names the task by the
            // upstream's id, which the client never sees.
            (Some(r), _) => (reported.unwrap_or_else(|| era::status_of_result(&method, r)), Outcome::Result(wire::set_meta(r, &Default::default(), |k| k == RELATED_TASK_KEY)), None),
            (None, Some(e)) => (Status::Failed, Outcome::Error(e.to_vec()), error_message(e)),
            (None, None) => return self.effects(),
        };
        self.end(id, status, outcome, message, now);
        self.effects()
    }

    /// Task `id`'s request will never be answered (`why`: timeout, exit).
    pub fn lost(&mut self, id: &str, why: String, now: u64) -> Vec<Effect> {
        self.fail(id, why, now);
        self.effects()
    }

    fn fail(&mut self, id: &str, why: String, now: u64) {
        self.end(id, Status::Failed, error_object(ErrorCode::InternalError, &why), Some(why), now);
    }

    /// Task `id` ends: status, outcome (if it fits the memory cap), the
    /// creator told, waiting `tasks/result` requests answered.
    fn end(&mut self, id: &str, status: Status, outcome: Outcome, message: Option<String>, now: u64) {
        let max = self.opts.max_result_bytes;
        if let Err(big) = self.table.finish(id, status, outcome, now, max) {
            let why = format!("the task's result ({} bytes) does not fit mcpx's task memory ({max} bytes in all, task_max_result_bytes); call the tool without a task", big.len());
            let _ = self.table.finish(id, Status::Failed, error_object(ErrorCode::InternalError, &why), now, usize::MAX);
            self.set_message(id, why);
        } else if let Some(msg) = message {
            self.set_message(id, msg);
        }
        self.settled(id);
    }

    fn set_message(&mut self, id: &str, msg: String) {
        if let Some(t) = self.table.get_mut(id) {
            t.message = Some(msg);
        }
    }

    /// After a status change of task `id`.
    fn settled(&mut self, id: &str) {
        let Some(t) = self.table.get_mut(id) else { return };
        let (waiters, status) = (std::mem::take(&mut t.waiters), t.status);
        let (inputs, relayed) = (std::mem::take(&mut t.inputs), t.relayed.clone());
        self.save();
        self.log(Level::Info, format!("task {id} {}", status.as_str()));
        #[cfg(feature = "traces")]
        self.out.push(Effect::Traced { task: id.to_string(), started_by: None, status: Some(status) });
        // Input the upstream still waits for will never come.
        if let Some((u, _)) = relayed {
            for i in inputs {
                let why = format!("task {id} is {} before the client answered", status.as_str());
                self.out.push(Effect::RefuseUpstream { u, id: i.up_id, method: i.method, code: ErrorCode::InternalError, why });
            }
        }
        self.notify_status(id);
        for w in waiters {
            self.deliver_result(w.client, w.id, w.rev, id);
        }
    }

    /// The state file is to be written (when tasks are saved at all).
    fn save(&mut self) {
        if self.saving {
            self.out.push(Effect::Save);
        }
    }

    /// Task `id`'s status, to the connection that created it (a 2025-11-25
    /// client that declared tasks), or (a 2026-07-28 task) to its owner's
    /// listen streams that asked for it.
    // Requirement: tasks-status-notification-optional, tasks-status-notification-no-related-task
    fn notify_status(&mut self, id: &str) {
        let Some(t) = self.table.get(id) else { return };
        let o = &self.opts;
        let e = if t.modern {
            Effect::NotifyListens { principal: t.principal.clone(), id: id.to_string(), task: era::modern(id, t, o.epoch_ms, o.poll_ms, true) }
        } else {
            let params = serde_json::to_vec(&era::legacy(id, t, o.epoch_ms, o.poll_ms)).unwrap_or_default();
            Effect::StatusToCreator { client: t.creator, params }
        };
        self.out.push(e);
    }

    /// The ids of `asked` that a listen stream of `principal` may follow: its
    /// own 2026-07-28 tasks whose status mcpx knows (a 2026 upstream's own
    /// task changes out of its sight: it is polled with `tasks/get`).
    // Requirement: ext-tasks-notifications-via-listen
    pub fn listenable(&self, principal: &[u8], asked: &[String], ups: &[Up]) -> Vec<String> {
        let owner = Owner { principal, session: None };
        let followed = |id: &String| self.table.owned(id, owner).is_some_and(|t| t.modern && !t.relayed.as_ref().is_some_and(|(u, _)| ups.get(*u).is_some_and(|x| x.modern)));
        let mut ids: Vec<String> = asked.iter().filter(|id| followed(id)).cloned().collect();
        ids.dedup();
        ids
    }

    /// A task stops before its end (`why`): its `call` upstream goes
    /// (cancelled there), or the upstream's own task (`relayed`) is cancelled.
    fn stop_upstream(&mut self, call: Option<(UpstreamId, u64)>, relayed: Option<(UpstreamId, String)>, why: &'static str, ups: &[Up]) {
        if let Some((u, id)) = call {
            self.out.push(Effect::EndCall { u, id, why: relayed.is_none().then_some(why) });
        }
        if let Some((u, up)) = relayed {
            if let Some(x) = ups.get(u) {
                self.cancel_upstream_task(x, &up);
            }
        }
    }

    /// Answers `tasks/result` request `rid` of client `c` (of revision
    /// `rev`) with terminal task `id`'s outcome.
    // Requirement: tasks-result-terminal-final, tasks-result-exact, tasks-result-same-error, tasks-result-response-related-task
    fn deliver_result(&mut self, c: ClientId, rid: Vec<u8>, rev: Rev, id: &str) {
        let Some(t) = self.table.get(id) else {
            return self.out.push(Effect::Refuse { client: c, id: rid, refusal: not_found(id) });
        };
        let e = match &t.outcome {
            Some(Outcome::Result(r)) => {
                let shaped = shape::result(&t.method, r, rev).unwrap_or_else(|| r.clone());
                let body = wire::set_meta(&shaped, &era::related(id), |_| false);
                // A tool error fails its task (`era`): its status says so.
                let outcome = if t.status == Status::Failed { super::Outcome::ToolError } else { super::Outcome::Result };
                Effect::Answer { client: c, id: rid, result: Reply::Bytes(body), outcome }
            }
            Some(Outcome::Error(e)) => {
                // A stored error (the server's, kept until asked for) is read
                // here once: its outcome was not kept beside it.
                let outcome = super::Outcome::of_error(mcpx_core::json::parse(e).ok());
                Effect::AnswerRaw { client: c, id: rid, error: e.clone(), outcome }
            }
            None => {
                let data = json!({ "taskId": id, "_meta": era::related(id) });
                Effect::Refuse { client: c, id: rid, refusal: Refusal(ErrorCode::InternalError, format!("task {id} was cancelled"), Some(data)) }
            }
        };
        self.out.push(e);
    }

    /// `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` (2025-11-25,
    /// `ctx` None) and `tasks/get`, `tasks/update`, `tasks/cancel` (2026-07-28,
    /// with the request's context) of `who`; `ups` for a task an upstream runs.
    pub fn request(&mut self, who: Caller, call: Method<'_>, p: &Value, ups: &[Up], now: u64) -> Result<Vec<Effect>, Refusal> {
        let r = self.request_step(&who, call, p, ups, now);
        let fx = self.effects();
        r.map(|()| fx)
    }

    fn request_step(&mut self, who: &Caller, call: Method<'_>, p: &Value, ups: &[Up], now: u64) -> Result<(), Refusal> {
        let method = call.as_str().unwrap_or_default();
        if who.ctx.is_some_and(|x| !declared(&x.caps)) {
            return Err(missing_extension(method));
        }
        let (c, rid) = (who.client, who.id);
        if call == Method::TasksList && who.ctx.is_none() {
            return self.list(c, rid, who.owner, p);
        }
        // Requirement: tasks-taskid-param-authoritative
        let id = p.get("taskId").and_then(Value::as_str).ok_or_else(|| Refusal(ErrorCode::InvalidParams, format!("Invalid params: {method} needs a string \"taskId\""), None))?;
        // Requirement: tasks-bound-reject-foreign, tasks-bind-auth-context
        let t = self.table.owned(id, who.owner).ok_or_else(|| not_found(id))?;
        let id = id.to_string();
        match (call, who.ctx.is_some()) {
            // Requirement: tasks-no-related-task-in-get-list-cancel-results
            (Method::TasksGet, _) => {
                let result = self.task_body(&id, t, TaskView::Get);
                self.out.push(Effect::Answer { client: c, id: rid.to_vec(), result, outcome: super::Outcome::Result });
            }
            (Method::TasksResult, false) => {
                if t.status.is_terminal() {
                    self.deliver_result(c, rid.to_vec(), who.rev, &id);
                } else {
                    // Requirement: tasks-result-blocks
                    let max = self.opts.max_waiters;
                    let t = self.table.get_mut(&id).expect("owned above");
                    if t.waiters.len() >= max {
                        return Err(Refusal(ErrorCode::InternalError, format!("task {id} has {max} tasks/result requests waiting (mcpx's limit); poll with tasks/get"), None));
                    }
                    t.waiters.push(table::Waiter { client: c, id: rid.to_vec(), rev: who.rev });
                }
            }
            (Method::TasksCancel, modern) => {
                // Requirement: tasks-cancel-terminal-reject
                if t.status.is_terminal() && !modern {
                    return Err(Refusal(ErrorCode::InvalidParams, format!("Invalid params: task {id} is already {}; it cannot be cancelled", t.status.as_str()), Some(json!({ "taskId": id }))));
                }
                let (call, relayed) = (t.call, t.relayed.clone());
                // Requirement: ext-tasks-cancel-cooperative
                if self.table.cancel(&id, now) {
                    self.stop_upstream(call, relayed, "the client cancelled the task", ups);
                }
                let t = self.table.get(&id).expect("owned above");
                let result = if modern { Reply::Stamped(json!({})) } else { self.task_body(&id, t, TaskView::Get) };
                self.out.push(Effect::Answer { client: c, id: rid.to_vec(), result, outcome: super::Outcome::Result });
                self.settled(&id);
            }
            // Requirement: ext-tasks-update (mcpx's own tasks never wait for
            // input; a 2025 upstream's may, `legacy`)
            (Method::TasksUpdate, true) => {
                let Some(responses) = p.get("inputResponses").and_then(Value::as_object) else {
                    return Err(Refusal(ErrorCode::InvalidParams, "Invalid params: tasks/update needs an \"inputResponses\" object".into(), None));
                };
                self.update(&id, responses, ups, now);
                self.out.push(Effect::Answer { client: c, id: rid.to_vec(), result: Reply::Stamped(json!({})), outcome: super::Outcome::Result });
            }
            _ => return Err(Refusal(ErrorCode::MethodNotFound, format!("Method not found: {method}"), None)),
        }
        Ok(())
    }

    /// One page of the caller's tasks.
    // Requirement: tasks-list-paginate, tasks-get-implies-list
    fn list(&mut self, c: ClientId, rid: &[u8], owner: Owner, p: &Value) -> Result<(), Refusal> {
        let key = self.cursor_key.to_le_bytes();
        let pos = match p.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(s)) => match cursor::decode(s, &key) {
                Ok(cu) if cu.list == LIST_CURSOR => cu.position as usize,
                _ => return Err(Refusal(ErrorCode::InvalidParams, "Invalid params: invalid cursor".into(), None)),
            },
            Some(_) => return Err(Refusal(ErrorCode::InvalidParams, "Invalid params: the cursor must be a string".into(), None)),
        };
        let ids = self.table.of_owner(owner);
        let end = (pos + self.page_size.max(1)).min(ids.len());
        let o = &self.opts;
        let items: Vec<Value> = ids.get(pos.min(end)..end).unwrap_or(&[]).iter().filter_map(|id| Some(era::legacy(id, self.table.get(id)?, o.epoch_ms, o.poll_ms))).collect();
        let mut v = json!({ "tasks": items });
        if end < ids.len() {
            let next = Cursor { list: LIST_CURSOR, position: end as u32, generation: 0 };
            v["nextCursor"] = json!(cursor::encode(&next, &key).as_str());
        }
        let result = Reply::Bytes(serde_json::to_vec(&v).unwrap_or_default());
        self.out.push(Effect::Answer { client: c, id: rid.to_vec(), result, outcome: super::Outcome::Result });
        Ok(())
    }

    /// Tasks past their TTL are dropped; one still working is cancelled
    /// upstream and its waiters told (after the due polls went out, `poll`).
    pub fn expire(&mut self, ups: &[Up], now: u64) -> Vec<Effect> {
        for id in self.table.expired(now) {
            let Some(t) = self.table.remove(&id) else { continue };
            if !t.status.is_terminal() {
                self.stop_upstream(t.call, t.relayed.clone(), "the task's ttl ran out", ups);
            }
            self.log(Level::Info, format!("task {id} expired ({})", t.status.as_str()));
            #[cfg(feature = "traces")]
            self.out.push(Effect::Traced { task: id.clone(), started_by: None, status: None });
            for w in t.waiters {
                self.out.push(Effect::Refuse { client: w.client, id: w.id, refusal: not_found(&id) });
            }
        }
        self.effects()
    }

    pub fn deadline(&self) -> Option<u64> {
        self.table.next_expiry()
    }

    /// Client `c` is gone: its waiting `tasks/result` requests go; its
    /// tasks stay (another connection of its principal may fetch them).
    pub fn client_gone(&mut self, c: ClientId) {
        self.table.drop_waiters_of(c);
    }

    /// For `status`: tasks kept and bytes of their outcomes.
    pub fn status(&self) -> Value {
        json!({ "kept": self.table.len(), "resultBytes": self.table.bytes() })
    }

    /// Task `id`'s request to `u` went out as `call` (`None`: it could not).
    pub fn calling(&mut self, id: &str, call: Option<(UpstreamId, u64)>) {
        if let Some(t) = self.table.get_mut(id) {
            t.call = call;
        }
    }
}

/// Which answer a task is shown in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TaskView {
    Created,
    Get,
}

/// The `message` of error object `e` (raw JSON).
fn error_message(e: &[u8]) -> Option<String> {
    mcpx_core::json::parse(e).ok().and_then(|v| v.get("message")).and_then(|v| wire::string_at(v.bytes(), 0..v.bytes().len()))
}

fn error_object(code: ErrorCode, message: &str) -> Outcome {
    Outcome::Error(crate::bytes::written::error_object(code, message))
}
