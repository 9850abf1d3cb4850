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

use super::error_object;
use super::table::{Outcome, Status};
use super::{Effect, Tasks, Up};
use crate::hub::wire::Msg;
use crate::hub::Level;

impl Tasks {
    /// Modern upstream `up`'s answer `m` for task `id`, if it is about the
    /// upstream's own task (its creation, or a poll's answer): handled.
    pub(super) fn polled(&mut self, up: &Up, id: &str, m: &Msg, now: u64) -> bool {
        let Some(t) = self.table.get(id) else { return false };
        let polled = t.relayed.is_some();
        let v: Value = m.result_bytes().and_then(|r| serde_json::from_slice(r).ok()).unwrap_or(Value::Null);
        let up_task = v.get("taskId").and_then(Value::as_str).map(str::to_string);
        if !polled {
            // The call's answer: a task of the upstream's, or not (then it is the outcome).
            let Some(up_task) = up_task.filter(|_| v.get("resultType").and_then(Value::as_str) == Some("task")) else { return false };
            self.log(Level::Info, format!("task {id}: server '{}' runs it as its task {up_task}; mcpx polls it", up.name));
            let t = self.table.get_mut(id).expect("looked up above");
            t.relayed = Some((up.id, up_task));
            t.call = None;
            self.schedule_poll(id, &v, now);
            self.save();
            return true;
        }
        if let Some(t) = self.table.get_mut(id) {
            t.call = None;
        }
        if let Some(e) = m.error_bytes() {
            self.end(id, Status::Failed, Outcome::Error(e.to_vec()), Some("the server's tasks/get failed".into()), now);
            return true;
        }
        match v.get("status").and_then(Value::as_str).and_then(Status::parse) {
            Some(Status::Working) | None => self.schedule_poll(id, &v, now),
            Some(Status::InputRequired) => {
                let why = "the server asked for input inside its task; mcpx cannot pass that on to a 2025-11-25 client's task".to_string();
                self.fail(id, why, now);
                self.cancel_upstream_task(up, v["taskId"].as_str().unwrap_or_default());
            }
            Some(Status::Completed) => {
                let r = serde_json::to_vec(v.get("result").unwrap_or(&Value::Null)).unwrap_or_default();
                // The server's own word: completed, even with a tool error inside.
                self.end(id, Status::Completed, Outcome::Result(r), None, now);
            }
            Some(Status::Failed) => {
                let e = v.get("error").map_or_else(|| error_object(ErrorCode::InternalError, "the server's task failed"), |e| Outcome::Error(serde_json::to_vec(e).unwrap_or_default()));
                let msg = v.get("statusMessage").and_then(Value::as_str).map(str::to_string);
                self.end(id, Status::Failed, e, msg, now);
            }
            Some(Status::Cancelled) => {
                if self.table.cancel(id, now) {
                    self.set_message(id, format!("cancelled by server '{}'", up.name));
                    self.settled(id);
                }
            }
        }
        true
    }

    /// The next poll of task `id`, after the interval upstream answer `v` suggests.
    // Requirement: tasks-poll-respect-interval
    fn schedule_poll(&mut self, id: &str, v: &Value, now: u64) {
        let o = &self.opts;
        let wait = v.get("pollIntervalMs").and_then(Value::as_u64).unwrap_or(o.poll_ms).clamp(1, o.max_poll_ms.max(1));
        if let Some(t) = self.table.get_mut(id) {
            t.poll_at = Some(now + wait);
        }
    }

    /// Due polls go out (each the task's call once it went out).
    pub fn poll(&mut self, ups: &[Up], now: u64) -> Vec<Effect> {
        for id in self.table.due_polls(now) {
            let Some(t) = self.table.get_mut(&id) else { continue };
            t.poll_at = None;
            let Some((u, up_task)) = t.relayed.clone() else { continue };
            let Some(up) = ups.get(u) else { continue };
            if !up.ready {
                self.fail(&id, format!("server '{}' went away while mcpx polled its task", up.name), now);
                continue;
            }
            self.ask_upstream_task(up, Method::TasksGet, &up_task, Some(id), up.timeout_ms);
        }
        self.effects()
    }
}
