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
use mcpx_core::method::Method;
use mcpx_core::revision::Feature;
use serde_json::{json, Value};

use super::table::{Input, Status, Task};
use super::TaskView;
use crate::hub::request::ReqCtx;
use crate::hub::pending::Origin;
use crate::hub::shape;
use crate::hub::wire::{self, Msg};
use mcpx_core::meta::RELATED_TASK_KEY;
use crate::hub::{ClientId, Hub, Level, UpstreamId};

impl Hub {
    /// Does legacy upstream `u` run `tools/call` as tasks (2025-11-25)?
    pub(in crate::hub) fn upstream_has_legacy_tasks(&self, u: UpstreamId) -> bool {
        let up = &self.ups[u];
        !up.is_modern() && up.rev.is_some_and(|r| r.supports(Feature::CoreTasks)) && up.caps.as_ref().and_then(|c| crate::hub::value_at(c, &["tasks", "requests", "tools", "call"])).is_some_and(Value::is_object)
    }

    /// The task of `result`, an answer of legacy upstream `u` to a
    /// `tools/call`, when it is a `CreateTaskResult`.
    pub(in crate::hub) fn legacy_created(&self, u: UpstreamId, result: &[u8]) -> Option<Value> {
        if !self.upstream_has_legacy_tasks(u) {
            return None;
        }
        let v: Value = serde_json::from_slice(result).ok()?;
        let task = v.get("task")?;
        task.get("taskId")?.as_str()?;
        Some(task.clone())
    }

    /// Legacy upstream `u` created `task` for request `rid` of client `c`
    /// (`ctx`: a 2026 request): the hub's task for it, answered at once.
    // Requirement: tasks-return-createtaskresult, tasks-id-string-receiver-unique
    pub(in crate::hub) fn task_adopt(&mut self, u: UpstreamId, c: ClientId, rid: &[u8], ctx: Option<&ReqCtx>, task: Value) {
        let up = task["taskId"].as_str().unwrap_or_default().to_string();
        let owner = self.principal_of(c, ctx);
        if let Err(e) = self.tasks.table.make_room(&owner, &self.opts.tasks) {
            self.cancel_upstream_task(u, &up);
            return self.answer_error(c, Some(rid), ErrorCode::InternalError, &e.to_string(), None);
        }
        let o = &self.opts.tasks;
        let ttl_ms = task.get("ttl").and_then(Value::as_u64).unwrap_or(o.default_ttl_ms).min(o.max_ttl_ms);
        let id = self.tasks.ids.next();
        let now = self.now_ms;
        // The outcome: the upstream's `tasks/result`, held open for the TTL.
        let held = self.ask_upstream_task(u, Method::TasksResult, &up, Origin::Task(id.clone()), ttl_ms);
        let status = task.get("status").and_then(Value::as_str).and_then(Status::parse).filter(|s| !s.is_terminal()).unwrap_or(Status::Working);
        let mut t = Task::new(owner, c, ctx.is_some(), "tools/call", now, ttl_ms);
        t.status = status;
        t.message = task.get("statusMessage").and_then(Value::as_str).map(str::to_string);
        t.call = held.map(|h| (u, h));
        t.relayed = Some((u, up.clone()));
        let server = self.ups[u].spec.name.clone();
        // Requirement: tasks-audit
        self.log(Level::Info, format!("task {id} created: server '{server}' runs it as its task {up}, for client {c}"));
        let body = self.task_body(&id, &t, TaskView::Created);
        self.tasks.table.insert(id.clone(), t);
        self.publish_task(&id);
        self.tasks_save();
        self.answer_result(c, rid, &body);
    }

    /// `tasks/*` request `method` about upstream `u`'s task `up` (a 2026
    /// upstream is told mcpx speaks the extension), answered to `origin`.
    pub(in crate::hub) fn ask_upstream_task(&mut self, u: UpstreamId, method: Method<'static>, up: &str, origin: Origin, timeout: u64) -> Option<u64> {
        let mut p = json!({ "taskId": up });
        if self.ups[u].is_modern() {
            p["_meta"] = json!({ mcpx_core::meta::CLIENT_CAPABILITIES_KEY: { "extensions": { super::EXT: {} } } });
        }
        let p = serde_json::to_vec(&p).unwrap_or_default();
        self.send_upstream(u, method, Some(&p), origin, timeout)
    }

    /// Asks upstream `u` to cancel its task `up` (nobody waits for the answer).
    // Requirement: cancellation-task-use-tasks-cancel
    /// Request `id` to upstream `u` asks it to run the call as its task.
    pub(in crate::hub) fn task_asked(&mut self, u: UpstreamId, id: u64) {
        if self.tasks.asked.len() >= self.opts.max_pending {
            let pending = &self.pending;
            self.tasks.asked.retain(|(u, id)| pending.contains(*u, *id));
        }
        self.tasks.asked.insert((u, id));
    }

    /// Request `id` to `u` was answered or is gone.
    pub(in crate::hub) fn task_ask_done(&mut self, u: UpstreamId, id: u64) {
        if !self.tasks.asked.is_empty() {
            self.tasks.asked.remove(&(u, id));
        }
    }

    /// The client cancelled request `id` to `u`: when it asked `u` to run
    /// a task, the call waits for the answer instead, whose task is then
    /// cancelled with `tasks/cancel`, never `notifications/cancelled`. True
    /// when so.
    // Requirement: cancellation-task-use-tasks-cancel
    pub(in crate::hub) fn task_ask_cancelled(&mut self, u: UpstreamId, id: u64) -> bool {
        if self.tasks.asked.is_empty() || !self.tasks.asked.remove(&(u, id)) {
            return false;
        }
        self.pending.set_origin(u, id, Origin::TaskCancelled)
    }

    /// `u`'s answer `m` to a cancelled task-augmented call: its task, if
    /// one was made, is cancelled; nobody waits for the rest.
    pub(in crate::hub) fn task_cancelled_answered(&mut self, u: UpstreamId, m: &Msg) {
        let Some(task) = m.result_bytes().and_then(|r| self.legacy_created(u, r)) else { return };
        let up = task["taskId"].as_str().unwrap_or_default().to_string();
        let server = self.ups[u].spec.name.clone();
        self.log(Level::Info, format!("server '{server}' made task {up} for a call its client had cancelled; cancelling it"));
        self.cancel_upstream_task(u, &up);
    }

    pub(in crate::hub) fn cancel_upstream_task(&mut self, u: UpstreamId, up: &str) {
        if self.ups[u].is_ready() {
            let t = self.ups[u].spec.timeout_ms;
            self.ask_upstream_task(u, Method::TasksCancel, up, Origin::Fire, t);
        }
    }

    /// Upstream `u`'s `notifications/tasks/status` about one of its tasks
    /// the hub relays.
    // Requirement: tasks-status-notification-optional, tasks-cancelled-sticky
    pub(in crate::hub) fn task_status_from_upstream(&mut self, u: UpstreamId, p: &Value) {
        let Some(up) = p.get("taskId").and_then(Value::as_str) else { return };
        let Some(id) = self.tasks.table.by_upstream(u, up) else { return };
        let Some(status) = p.get("status").and_then(Value::as_str).and_then(Status::parse) else { return };
        let message = p.get("statusMessage").and_then(Value::as_str).map(str::to_string);
        let now = self.now_ms;
        match status {
            Status::Cancelled => {
                let Some(call) = self.tasks.table.get(&id).and_then(|t| t.call) else { return };
                if self.tasks.table.cancel(&id, now) {
                    self.pending.take(call.0, call.1);
                    self.set_message(&id, message.unwrap_or_else(|| format!("cancelled by server '{}'", self.ups[u].spec.name)));
                    self.task_settled(&id);
                }
            }
            // The held `tasks/result` brings the outcome; the status is the server's.
            Status::Completed | Status::Failed => {
                if let Some(t) = self.tasks.table.get_mut(&id) {
                    t.reported = Some(status);
                }
            }
            Status::Working | Status::InputRequired => {
                let Some(t) = self.tasks.table.get_mut(&id).filter(|t| !t.status.is_terminal() && t.status != status) else { return };
                t.status = status;
                t.message = message;
                t.updated_ms = now;
                self.notify_status(&id);
            }
        }
    }


    /// The hub's id of the task `params` (of a request of upstream `u`) name
    /// in their related-task `_meta`, if the hub relays it.
    fn related_task(&self, u: UpstreamId, params: &Value) -> Option<String> {
        let up = params.pointer("/_meta")?.get(RELATED_TASK_KEY)?.get("taskId")?.as_str()?;
        self.tasks.table.by_upstream(u, up)
    }

    /// The related task named in `params` of upstream `u`'s request becomes
    /// the hub's id (the client never sees the upstream's).
    // Requirement: tasks-input-request-related-task
    pub(in crate::hub) fn rename_related_task(&self, u: UpstreamId, params: &mut Value) {
        if let Some(id) = self.related_task(u, params) {
            params["_meta"][RELATED_TASK_KEY] = json!({ "taskId": id });
        }
    }

    /// Upstream `u`'s request `m` for input, when it belongs to a task the
    /// hub relays: to a 2025-11-25 creator as a wire request; for a 2026
    /// creator kept in the task (`input_required`) until `tasks/update`.
    /// False when it belongs to no such task.
    // Requirement: tasks-input-required-move
    pub(in crate::hub) fn task_input(&mut self, u: UpstreamId, m: &Msg) -> bool {
        // The envelope view's related task: no parse of the params for it.
        let Some(id) = m.related_task_id().and_then(|up| self.tasks.table.by_upstream(u, &up)) else { return false };
        let Some(t) = self.tasks.table.get(&id) else { return false };
        // A 2026 client's task of a 2026 server: its `tasks/get` goes to the
        // server, which asks there; a wire request is the relay's to refuse.
        if t.modern && self.ups[u].is_modern() {
            return false;
        }
        let up_id = m.id_bytes().unwrap_or(b"null").to_vec();
        if !t.modern {
            let c = t.creator;
            if self.clients.contains_key(&c) {
                self.apply_relay(vec![crate::hub::relay::Effect::RelayTo(c, u, m)]);
            } else {
                self.apply_relay(crate::hub::relay::refuse(&self.ups[u].spec.name, u, &up_id, &m.method, ErrorCode::InternalError, format!("the client that created task {id} is not connected to mcpx")));
            }
            return true;
        }
        let mut params = match crate::hub::relay::input_request(&self.ups[u].spec.name, m) {
            Ok(p) => p,
            Err(why) => {
                self.apply_relay(crate::hub::relay::refuse(&self.ups[u].spec.name, u, &up_id, &m.method, ErrorCode::MethodNotFound, why));
                return true;
            }
        };
        if let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) {
            meta.remove(RELATED_TASK_KEY);
            if meta.is_empty() {
                params.as_object_mut().map(|o| o.remove("_meta"));
            }
        }
        let key = self.relays.new_key(&self.ups[u].spec.name);
        let now = self.now_ms;
        let Some(t) = self.tasks.table.get_mut(&id) else { return true };
        t.inputs.push(Input { key, up_id, method: m.method.to_string(), params });
        if !t.status.is_terminal() {
            t.status = Status::InputRequired;
            t.updated_ms = now;
        }
        true
    }

    /// A 2026 `tasks/update` of task `id`: each of `responses` answers the
    /// upstream's request under its key (unknown keys are ignored); with
    /// none left the task is working again.
    // Requirement: ext-tasks-update, tasks-leave-input-required
    pub(in crate::hub) fn task_update(&mut self, id: &str, responses: &serde_json::Map<String, Value>) {
        let Some(t) = self.tasks.table.get_mut(id) else { return };
        let Some((u, _)) = t.relayed.clone() else { return };
        let (answered, kept): (Vec<Input>, Vec<Input>) = std::mem::take(&mut t.inputs).into_iter().partition(|i| responses.get(&i.key).is_some_and(Value::is_object));
        t.inputs = kept;
        if t.inputs.is_empty() && t.status == Status::InputRequired {
            t.status = Status::Working;
            t.updated_ms = self.now_ms;
        }
        let up_rev = self.ups[u].rev.unwrap_or(shape::Rev::LATEST_LEGACY);
        for i in answered {
            let raw = serde_json::to_vec(&responses[&i.key]).unwrap_or_default();
            let out = shape::result(&i.method, &raw, up_rev).unwrap_or(raw);
            self.emit_upstream(u, wire::result(&i.up_id, &out));
        }
    }
}
