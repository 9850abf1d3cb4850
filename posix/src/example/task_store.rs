//! The example server's tasks, of both flavours (the 2026 extension in
//! `tasks`, the 2025-11-25 utility in `core_tasks`): their states, the capped
//! store the server holds, the work of the task tools, and the names and
//! values both flavours put on the wire. It sits below the server; the two
//! flavours' handlers sit above it.

use super::content::{tool_error, tool_text};
use super::flow::{Gathered, InputReq};
use super::wire::{random_id, RpcError, RpcResult, INTERNAL_ERROR};
use async_io::Timer;
use mcpx_core::meta::RELATED_TASK_KEY;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The tasks extension's name (`extensions` capability key, SEP-2663).
pub const EXT: &str = "io.modelcontextprotocol/tasks";
/// How long a task is kept after it was created.
pub const TTL_MS: u64 = 5 * 60 * 1000;
/// Suggested polling interval for `tasks/get`.
pub const POLL_MS: u64 = 100;
/// Tasks kept at most; older finished ones are dropped first.
pub const MAX_TASKS: usize = 1024;

/// `capabilities.tasks` of a 2025-11-25 session (row tasks-declare-capability).
pub fn core_capability() -> Value {
    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
}

/// `_meta` naming the task a message belongs to (row tasks-related-task-all-messages).
pub fn related(id: &str) -> Value {
    json!({ RELATED_TASK_KEY: {"taskId": id} })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }
    pub(super) fn terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

pub struct TaskEntry {
    pub(super) status: Status,
    pub(super) created_ms: u64,
    pub(super) updated_ms: u64,
    /// Kept this long after creation.
    pub(super) ttl_ms: u64,
    /// A 2025-11-25 task (of the session's client), not an extension one.
    pub(super) core: bool,
    pub(super) status_message: Option<String>,
    pub(super) name: &'static str,
    pub(super) args: Value,
    pub(super) caps: Value,
    /// The answers its flow gathered so far.
    pub(super) got: Gathered,
    /// The input it waits for (while `InputRequired`).
    pub(super) pending: Vec<InputReq>,
    pub(super) result: Option<Value>,
    pub(super) error: Option<RpcError>,
    /// The running work; dropping it stops the work.
    pub(super) runner: Option<smol::Task<()>>,
    /// `tasks/result` requests waiting for a terminal status.
    pub(super) waiters: Vec<smol::channel::Sender<()>>,
}

impl TaskEntry {
    pub(super) fn new(name: &'static str, args: &Value, caps: &Value, ttl_ms: u64, core: bool, now: u64) -> Self {
        TaskEntry {
            status: Status::Working,
            created_ms: now,
            updated_ms: now,
            ttl_ms,
            core,
            status_message: None,
            name,
            args: args.clone(),
            caps: caps.clone(),
            got: Gathered::new(),
            pending: Vec::new(),
            result: None,
            error: None,
            runner: None,
            waiters: Vec::new(),
        }
    }

    /// Move to `status` (a terminal status is final: row tasks-terminal-immutable).
    pub(super) fn set_status(&mut self, status: Status, message: Option<String>, now: u64) {
        if self.status.terminal() {
            return;
        }
        self.status = status;
        self.status_message = message;
        self.updated_ms = now;
        if status.terminal() {
            self.pending.clear();
            for w in self.waiters.drain(..) {
                let _ = w.try_send(());
            }
        }
    }
}

/// All tasks of this server, oldest first.
#[derive(Default)]
pub struct TaskStore {
    pub(super) map: HashMap<String, TaskEntry>,
    pub(super) order: Vec<String>,
}

impl TaskStore {
    /// Keep task `id`, after making room for it (the cap is [`MAX_TASKS`]).
    pub(super) fn insert(&mut self, id: String, entry: TaskEntry, now: u64) -> Result<(), RpcError> {
        self.make_room(now)?;
        self.order.push(id.clone());
        self.map.insert(id, entry);
        Ok(())
    }

    /// Make room for one more task: drop expired ones, then the oldest finished.
    fn make_room(&mut self, now: u64) -> Result<(), RpcError> {
        let map = &mut self.map;
        self.order.retain(|id| {
            let keep = map
                .get(id)
                .is_some_and(|t| t.created_ms + t.ttl_ms > now || !t.status.terminal());
            if !keep {
                map.remove(id);
            }
            keep
        });
        if self.map.len() >= MAX_TASKS {
            let oldest_done = self
                .order
                .iter()
                .position(|id| self.map[id].status.terminal());
            match oldest_done {
                Some(i) => {
                    let id = self.order.remove(i);
                    self.map.remove(&id);
                }
                None => {
                    return Err(RpcError::new(
                        INTERNAL_ERROR,
                        format!("too many running tasks (limit {MAX_TASKS}); cancel some first"),
                    ))
                }
            }
        }
        Ok(())
    }
}

/// ISO-8601 UTC time with milliseconds for a Unix time in ms.
pub use crate::log::line::rfc3339_ms as iso8601;

pub(super) fn new_task_id() -> String {
    format!("task-{}", random_id())
}

/// What a task tool does while it runs.
pub(super) type Work = Pin<Box<dyn Future<Output = RpcResult>>>;

/// The work of the task tools that do work (`None` for the others, which
/// gather input as flows). Legacy-era and extension-less calls run it inline.
pub(super) fn work_of(name: &str, args: &Value) -> Option<Work> {
    match name {
        "slow_compute" => {
            let secs = args
                .get("seconds")
                .and_then(Value::as_f64)
                .unwrap_or(1.0)
                .clamp(0.0, 600.0);
            let label = args
                .get("label")
                .and_then(Value::as_str)
                .unwrap_or("slow_compute")
                .to_string();
            Some(Box::pin(async move {
                Timer::after(Duration::from_secs_f64(secs)).await;
                Ok(tool_text(format!("{label}: computed for {secs} s")))
            }))
        }
        "failing_job" => Some(Box::pin(async {
            Timer::after(Duration::from_millis(500)).await;
            Ok(tool_error("failing_job failed, as it always does"))
        })),
        "protocol_error_job" => Some(Box::pin(async {
            Timer::after(Duration::from_millis(300)).await;
            Err(RpcError::new(
                INTERNAL_ERROR,
                "protocol_error_job hit an internal error, as it always does",
            ))
        })),
        _ => None,
    }
}

/// Record the outcome of the task's work (nothing changes once terminal).
pub(super) fn finish(t: &mut TaskEntry, r: RpcResult, now: u64) {
    if t.status.terminal() {
        return;
    }
    match r {
        Ok(v) => {
            t.result = Some(v);
            t.set_status(Status::Completed, None, now);
        }
        Err(e) => {
            let message = e.message.clone();
            t.error = Some(e);
            t.set_status(Status::Failed, Some(message), now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(1_785_196_800_123), "2026-07-28T00:00:00.123Z");
    }
}
