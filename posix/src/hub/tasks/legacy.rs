//! Tasks a 2025-11-25 upstream runs (it declared `capabilities.tasks` with
//! `requests.tools.call`, and lists the tool with `execution.taskSupport`
//! "optional" or "required"), relayed to a client of either era.
//!
//! - The call reaches the upstream task-augmented (`task.ttl`: what mcpx
//!   grants, `Plan::Upstream`); its `CreateTaskResult` is adopted under a
//!   hub id owned by the caller's principal; the upstream's id never leaves
//!   the hub.
//! - The hub then holds one `tasks/result` open at the upstream for the task
//!   (`Origin::Task`, bounded by the TTL): its answer is the task's outcome,
//!   kept as for the tasks mcpx runs itself. `tasks/get`, `tasks/result` and
//!   `tasks/list` of the client are answered from that state, in the client's
//!   era (a 2026 `tasks/get` carries the result); `tasks/cancel` reaches the
//!   upstream as its `tasks/cancel`.
//! - The upstream's `notifications/tasks/status` move the task between
//!   `working` and `input_required`, or cancel it; they are passed on, with
//!   the hub's id, to the creating connection only (a 2025-11-25 client that
//!   declared tasks). A terminal `completed`/`failed` waits for the held
//!   `tasks/result`, which brings the outcome with it.
//! - Requests the upstream makes inside the task (elicitation, sampling,
//!   roots, with the related-task `_meta`) go to the task's creator: a
//!   2025-11-25 connection gets them as wire requests (the related task
//!   renamed to the hub's id); for a 2026 client they wait in the task
//!   (`input_required`, `inputRequests` in `tasks/get`) until `tasks/update`
//!   brings the answers (`input`).

use mcpx_core::error::ErrorCode;
use mcpx_core::meta::RELATED_TASK_KEY;
use mcpx_core::method::Method;
use serde_json::{json, Value};

use super::table::{Input, Status, Task};
use super::{Effect, Owner, Tasks, Up};
use crate::hub::shape;
use crate::hub::wire::{self, Msg};
use crate::hub::{ClientId, Level, UpstreamId};

/// Where an upstream's request for input goes, by the task it names
/// ([`Tasks::input_to`]).
pub(in crate::hub) enum InputTo {
    /// It belongs to no task the hub relays: the relay's.
    Relay,
    /// To the 2025-11-25 connection that created the task (its id), as a
    /// wire request if it is connected ([`Tasks::creator_gone`] if not).
    Creator(ClientId, String),
    /// Kept in the 2026 task (its id) until `tasks/update` brings the
    /// answer ([`Tasks::keep_input`]).
    Task(String),
}

impl Tasks {
    /// The task of `result`, an answer of upstream `up` to a `tools/call`,
    /// when it is a 2025-11-25 server's `CreateTaskResult`.
    pub fn legacy_created(up: &Up, result: &[u8]) -> Option<Value> {
        if !up.legacy_tasks {
            return None;
        }
        let v: Value = serde_json::from_slice(result).ok()?;
        let task = v.get("task")?;
        task.get("taskId")?.as_str()?;
        Some(task.clone())
    }

    /// Legacy upstream `up` created `task` for request `rid` of client `c`
    /// of `owner` (`modern`: a 2026 request): the hub's task `id` for it,
    /// answered at once.
    // Requirement: tasks-return-createtaskresult, tasks-id-string-receiver-unique
    pub fn adopt(&mut self, up: &Up, id: String, c: ClientId, rid: &[u8], owner: Owner, modern: bool, task: Value, now: u64) -> Vec<Effect> {
        let up_task = task["taskId"].as_str().unwrap_or_default().to_string();
        if let Err(e) = self.table.make_room(owner.principal, &self.opts) {
            self.cancel_upstream_task(up, &up_task);
            self.out.push(Effect::Refuse { client: c, id: rid.to_vec(), refusal: crate::hub::request::Refusal(ErrorCode::InternalError, e.to_string(), None) });
            return self.effects();
        }
        let o = &self.opts;
        let ttl_ms = task.get("ttl").and_then(Value::as_u64).unwrap_or(o.default_ttl_ms).min(o.max_ttl_ms);
        // The outcome: the upstream's `tasks/result`, held open for the TTL
        // (the task's `call` once it went out).
        self.ask_upstream_task(up, Method::TasksResult, &up_task, Some(id.clone()), ttl_ms);
        let status = task.get("status").and_then(Value::as_str).and_then(Status::parse).filter(|s| !s.is_terminal()).unwrap_or(Status::Working);
        let mut t = Task::new(owner, c, modern, "tools/call", now, ttl_ms);
        t.status = status;
        t.message = task.get("statusMessage").and_then(Value::as_str).map(str::to_string);
        t.relayed = Some((up.id, up_task.clone()));
        // Requirement: tasks-audit
        self.log(Level::Info, format!("task {id} created: server '{}' runs it as its task {up_task}, for client {c}", up.name));
        self.created(id, t, c, rid.to_vec())
    }

    /// `tasks/*` request `method` about upstream `up`'s task `up_task` (a
    /// 2026 upstream is told mcpx speaks the extension), answered to task
    /// `task` (else nobody waits for it).
    pub(super) fn ask_upstream_task(&mut self, up: &Up, method: Method<'static>, up_task: &str, task: Option<String>, timeout: u64) {
        let mut p = json!({ "taskId": up_task });
        if up.modern {
            p["_meta"] = json!({ mcpx_core::meta::CLIENT_CAPABILITIES_KEY: { "extensions": { super::EXT: {} } } });
        }
        let params = serde_json::to_vec(&p).unwrap_or_default();
        self.out.push(Effect::Ask { u: up.id, method, params, task, timeout });
    }

    /// Request `id` to upstream `u` asks it to run the call as its task;
    /// `in_flight` says which requests are still pending.
    pub fn asked(&mut self, u: UpstreamId, id: u64, in_flight: impl Fn(UpstreamId, u64) -> bool) {
        if self.asked.len() >= self.max_pending {
            self.asked.retain(|(u, id)| in_flight(*u, *id));
        }
        self.asked.insert((u, id));
    }

    /// Request `id` to `u` was answered or is gone.
    pub fn ask_done(&mut self, u: UpstreamId, id: u64) {
        if !self.asked.is_empty() {
            self.asked.remove(&(u, id));
        }
    }

    /// The client cancelled request `id` to `u`: true when it asked `u` to
    /// run a task. The call then waits for the answer instead
    /// (`Origin::TaskCancelled`), whose task is cancelled with
    /// `tasks/cancel`, never `notifications/cancelled`.
    // Requirement: cancellation-task-use-tasks-cancel
    pub fn ask_cancelled(&mut self, u: UpstreamId, id: u64) -> bool {
        !self.asked.is_empty() && self.asked.remove(&(u, id))
    }

    /// `up`'s answer `m` to a cancelled task-augmented call: its task, if
    /// one was made, is cancelled; nobody waits for the rest.
    pub fn cancelled_answered(&mut self, up: &Up, m: &Msg) -> Vec<Effect> {
        if let Some(task) = m.result_bytes().and_then(|r| Tasks::legacy_created(up, r)) {
            let up_task = task["taskId"].as_str().unwrap_or_default();
            self.log(Level::Info, format!("server '{}' made task {up_task} for a call its client had cancelled; cancelling it", up.name));
            self.cancel_upstream_task(up, up_task);
        }
        self.effects()
    }

    /// Asks upstream `up` to cancel its task `up_task` (nobody waits for the answer).
    // Requirement: cancellation-task-use-tasks-cancel
    pub(super) fn cancel_upstream_task(&mut self, up: &Up, up_task: &str) {
        if up.ready {
            self.ask_upstream_task(up, Method::TasksCancel, up_task, None, up.timeout_ms);
        }
    }

    /// Upstream `up`'s `notifications/tasks/status` about one of its tasks
    /// the hub relays.
    // Requirement: tasks-status-notification-optional, tasks-cancelled-sticky
    pub fn status_from_upstream(&mut self, up: &Up, p: &Value, now: u64) -> Vec<Effect> {
        let Some(up_task) = p.get("taskId").and_then(Value::as_str) else { return self.effects() };
        let Some(id) = self.table.by_upstream(up.id, up_task) else { return self.effects() };
        let Some(status) = p.get("status").and_then(Value::as_str).and_then(Status::parse) else { return self.effects() };
        let message = p.get("statusMessage").and_then(Value::as_str).map(str::to_string);
        match status {
            Status::Cancelled => {
                let Some((u, call)) = self.table.get(&id).and_then(|t| t.call) else { return self.effects() };
                if self.table.cancel(&id, now) {
                    self.out.push(Effect::EndCall { u, id: call, why: None });
                    self.set_message(&id, message.unwrap_or_else(|| format!("cancelled by server '{}'", up.name)));
                    self.settled(&id);
                }
            }
            // The held `tasks/result` brings the outcome; the status is the server's.
            Status::Completed | Status::Failed => {
                if let Some(t) = self.table.get_mut(&id) {
                    t.reported = Some(status);
                }
            }
            // A 2026 client's task follows the input requests the hub keeps
            // (`inputs_changed`), not these notifications, whose
            // `input_required` comes before the request it announces.
            Status::Working | Status::InputRequired => {
                let Some(t) = self.table.get_mut(&id).filter(|t| !t.modern && !t.status.is_terminal() && t.status != status) else { return self.effects() };
                t.status = status;
                t.message = message;
                t.updated_ms = now;
                self.notify_status(&id);
            }
        }
        self.effects()
    }

    /// The hub's id of the task `params` (of a request of upstream `u`) name
    /// in their related-task `_meta`, if the hub relays it.
    fn related_task(&self, u: UpstreamId, params: &Value) -> Option<String> {
        let up = params.pointer("/_meta")?.get(RELATED_TASK_KEY)?.get("taskId")?.as_str()?;
        self.table.by_upstream(u, up)
    }

    /// The related task named in `params` of upstream `u`'s request becomes
    /// the hub's id (the client never sees the upstream's).
    // Requirement: tasks-input-request-related-task
    pub fn rename_related(&self, u: UpstreamId, params: &mut Value) {
        if let Some(id) = self.related_task(u, params) {
            params["_meta"][RELATED_TASK_KEY] = json!({ "taskId": id });
        }
    }

    /// Upstream `up`'s request `m` for input: where it goes when it
    /// belongs to a task the hub relays (to a 2025-11-25 creator as a wire
    /// request; for a 2026 creator kept in the task, [`Tasks::keep_input`]).
    // Requirement: tasks-input-required-move
    pub fn input_to(&self, up: &Up, m: &Msg) -> InputTo {
        // The envelope view's related task: no parse of the params for it.
        let Some(id) = m.related_task_id().and_then(|t| self.table.by_upstream(up.id, &t)) else { return InputTo::Relay };
        match self.table.get(&id) {
            // A 2026 client's task of a 2026 server: its `tasks/get` goes to the
            // server, which asks there; a wire request is the relay's to refuse.
            Some(t) if t.modern && up.modern => InputTo::Relay,
            Some(t) if t.modern => InputTo::Task(id),
            Some(t) => InputTo::Creator(t.creator, id),
            None => InputTo::Relay,
        }
    }

    /// Upstream `u`'s request `m` for the input of task `id`, whose
    /// creator is not connected: refused.
    pub fn creator_gone(&mut self, u: UpstreamId, id: &str, m: &Msg) -> Vec<Effect> {
        let why = format!("the client that created task {id} is not connected to mcpx");
        self.out.push(Effect::RefuseUpstream { u, id: m.id_bytes().unwrap_or(b"null").to_vec(), method: m.method.to_string(), code: ErrorCode::InternalError, why });
        self.effects()
    }

    /// Upstream `u`'s request `m` for input inside 2026 task `id`, as the
    /// client sees it (`asked`: its key in `inputRequests` and its params,
    /// or why it cannot be asked): kept in the task (`input_required`)
    /// until `tasks/update` answers it.
    pub fn keep_input(&mut self, u: UpstreamId, id: &str, m: &Msg, asked: Result<(String, Value), String>, now: u64) -> Vec<Effect> {
        let up_id = m.id_bytes().unwrap_or(b"null").to_vec();
        let (key, mut params) = match asked {
            Ok(a) => a,
            Err(why) => {
                self.out.push(Effect::RefuseUpstream { u, id: up_id, method: m.method.to_string(), code: ErrorCode::MethodNotFound, why });
                return self.effects();
            }
        };
        if let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) {
            meta.remove(RELATED_TASK_KEY);
            if meta.is_empty() {
                params.as_object_mut().map(|o| o.remove("_meta"));
            }
        }
        if let Some(t) = self.table.get_mut(id) {
            t.inputs.push(Input { key, up_id, method: m.method.to_string(), params });
            self.inputs_changed(id, true, now);
        }
        self.effects()
    }

    /// The input requests kept for 2026 task `id` changed (`added`: one
    /// more): it is input_required exactly while some are kept, as its
    /// client answers only those. Its listen streams are told of a new
    /// request or a new status.
    // Requirement: ext-tasks-get-input-requests, tasks-leave-input-required
    fn inputs_changed(&mut self, id: &str, added: bool, now: u64) {
        let Some(t) = self.table.get_mut(id).filter(|t| !t.status.is_terminal()) else { return };
        let status = if t.inputs.is_empty() { Status::Working } else { Status::InputRequired };
        if added || t.status != status {
            t.status = status;
            t.updated_ms = now;
            self.notify_status(id);
        }
    }

    /// A 2026 `tasks/update` of task `id`: each of `responses` answers the
    /// upstream's request under its key (unknown keys are ignored); with
    /// none left the task is working again.
    // Requirement: ext-tasks-update, tasks-leave-input-required
    pub(super) fn update(&mut self, id: &str, responses: &serde_json::Map<String, Value>, ups: &[Up], now: u64) {
        let Some(t) = self.table.get_mut(id) else { return };
        let Some((u, _)) = t.relayed.clone() else { return };
        let (answered, kept): (Vec<Input>, Vec<Input>) = std::mem::take(&mut t.inputs).into_iter().partition(|i| responses.get(&i.key).is_some_and(Value::is_object));
        t.inputs = kept;
        self.inputs_changed(id, false, now);
        let up_rev = ups.get(u).map_or(shape::Rev::LATEST_LEGACY, |x| x.rev);
        for i in answered {
            let raw = serde_json::to_vec(&responses[&i.key]).unwrap_or_default();
            let out = shape::result(&i.method, &raw, up_rev).unwrap_or(raw);
            self.out.push(Effect::ToUpstream { u, msg: wire::result(&i.up_id, &out) });
        }
    }
}
