//! A 2025-11-25 client's task on a 2026-07-28 upstream with the tasks
//! extension: mcpx runs the client's task (`Plan::Hub`) and tells the
//! upstream it takes tasks; when the upstream answers with a task of its
//! own, the hub polls it with `tasks/get` (at the upstream's
//! `pollIntervalMs`, capped by `TaskOptions::max_poll_ms`) until it is
//! terminal, and keeps the outcome it carries, so the client's blocking
//! `tasks/result` gets it as for any task mcpx runs. Input the upstream
//! asks for inside its task cannot reach a 2025 client through `tasks/get`
//! alone: that task fails, saying so, and is cancelled upstream.

use mcpx_core::error::ErrorCode;
use mcpx_core::method::Method;
use serde_json::Value;

use super::table::{Outcome, Status};
use super::error_object;
use crate::hub::pending::Origin;
use crate::hub::wire::Msg;
use crate::hub::{Hub, UpstreamId};

impl Hub {
    /// Modern upstream `u`'s answer `m` for task `id`, if it is about the
    /// upstream's own task (its creation, or a poll's answer): handled.
    pub(in crate::hub) fn task_polled(&mut self, u: UpstreamId, id: &str, m: &Msg) -> bool {
        let Some(t) = self.tasks.table.get(id) else { return false };
        let polled = t.relayed.is_some();
        let v: Value = m.result_bytes().and_then(|r| serde_json::from_slice(r).ok()).unwrap_or(Value::Null);
        let up = v.get("taskId").and_then(Value::as_str).map(str::to_string);
        if !polled {
            // The call's answer: a task of the upstream's, or not (then it is the outcome).
            let Some(up) = up.filter(|_| v.get("resultType").and_then(Value::as_str) == Some("task")) else { return false };
            let server = self.ups[u].spec.name.clone();
            self.log(crate::hub::Level::Info, format!("task {id}: server '{server}' runs it as its task {up}; mcpx polls it"));
            let t = self.tasks.table.get_mut(id).expect("looked up above");
            t.relayed = Some((u, up));
            t.call = None;
            self.schedule_poll(id, &v);
            self.tasks_save();
            return true;
        }
        if let Some(t) = self.tasks.table.get_mut(id) {
            t.call = None;
        }
        if let Some(e) = m.error_bytes() {
            self.task_end(id, Status::Failed, Outcome::Error(e.to_vec()), Some("the server's tasks/get failed".into()));
            return true;
        }
        match v.get("status").and_then(Value::as_str).and_then(Status::parse) {
            Some(Status::Working) | None => self.schedule_poll(id, &v),
            Some(Status::InputRequired) => {
                let why = "the server asked for input inside its task; mcpx cannot pass that on to a 2025-11-25 client's task".to_string();
                self.task_end(id, Status::Failed, error_object(ErrorCode::InternalError, &why), Some(why));
                self.cancel_upstream_task(u, v["taskId"].as_str().unwrap_or_default());
            }
            Some(Status::Completed) => {
                let r = serde_json::to_vec(v.get("result").unwrap_or(&Value::Null)).unwrap_or_default();
                // The server's own word: completed, even with a tool error inside.
                self.task_end(id, Status::Completed, Outcome::Result(r), None);
            }
            Some(Status::Failed) => {
                let e = v.get("error").map_or_else(|| error_object(ErrorCode::InternalError, "the server's task failed"), |e| Outcome::Error(serde_json::to_vec(e).unwrap_or_default()));
                let msg = v.get("statusMessage").and_then(Value::as_str).map(str::to_string);
                self.task_end(id, Status::Failed, e, msg);
            }
            Some(Status::Cancelled) => {
                if self.tasks.table.cancel(id, self.now_ms) {
                    self.set_message(id, format!("cancelled by server '{}'", self.ups[u].spec.name));
                    self.task_settled(id);
                }
            }
        }
        true
    }

    /// The next poll of task `id`, after the interval upstream answer `v` suggests.
    // Requirement: tasks-poll-respect-interval
    fn schedule_poll(&mut self, id: &str, v: &Value) {
        let o = &self.opts.tasks;
        let wait = v.get("pollIntervalMs").and_then(Value::as_u64).unwrap_or(o.poll_ms).clamp(1, o.max_poll_ms.max(1));
        let at = self.now_ms + wait;
        if let Some(t) = self.tasks.table.get_mut(id) {
            t.poll_at = Some(at);
        }
    }

    /// Due polls go out.
    pub(in crate::hub) fn tasks_poll(&mut self) {
        for id in self.tasks.table.due_polls(self.now_ms) {
            let Some(t) = self.tasks.table.get_mut(&id) else { continue };
            t.poll_at = None;
            let Some((u, up)) = t.relayed.clone() else { continue };
            if !self.ups[u].is_ready() {
                self.task_lost(&id, format!("server '{}' went away while mcpx polled its task", self.ups[u].spec.name));
                continue;
            }
            let timeout = self.ups[u].spec.timeout_ms;
            let call = self.ask_upstream_task(u, Method::TasksGet, &up, Origin::Task(id.clone()), timeout);
            if let Some(t) = self.tasks.table.get_mut(&id) {
                t.call = call.map(|c| (u, c));
            }
        }
    }
}
