//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) for modern
//! requests that declare it: task-creating tools, `tasks/get`, `tasks/update`
//! and `tasks/cancel`. Without the extension the same tools run synchronously
//! (or, when they need a task, are refused with -32021).

use super::content::{tool_error, tool_text};
use super::flow::{self, Gathered, InputReq, Kind, Step};
use super::server::{now_ms, Ctx, Handled, Server};
use super::tools::{self, TaskSupport};
use super::wire::{require_str, RpcError, RpcResult, INTERNAL_ERROR, MISSING_CAPABILITY};
use async_io::Timer;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

pub const EXT: &str = "io.modelcontextprotocol/tasks";
/// How long a task is kept after it was created.
pub const TTL_MS: u64 = 5 * 60 * 1000;
/// Suggested polling interval for `tasks/get`.
pub const POLL_MS: u64 = 100;
/// Tasks kept at most; older finished ones are dropped first.
pub const MAX_TASKS: usize = 1024;

/// Does the request declare the tasks extension?
pub fn declared(ctx: &Ctx) -> bool {
    ctx.modern
        && ctx
            .caps
            .get("extensions")
            .and_then(|e| e.get(EXT))
            .is_some_and(Value::is_object)
}

fn required(what: &str) -> RpcError {
    RpcError::new(
        MISSING_CAPABILITY,
        format!("{what} needs the client capability extensions[\"{EXT}\"]"),
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {EXT: {}}}}))
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
    name: &'static str,
    args: Value,
    caps: Value,
    got: Gathered,
    pending: Vec<InputReq>,
    pub(super) result: Option<Value>,
    pub(super) error: Option<RpcError>,
    /// The running work; dropping it stops the work.
    pub(super) runner: Option<smol::Task<()>>,
    /// `tasks/result` requests waiting for a terminal status.
    pub(super) waiters: Vec<smol::channel::Sender<()>>,
}

impl TaskEntry {
    pub(super) fn new(name: &'static str, args: &Value, caps: &Value, ttl_ms: u64, core: bool) -> Self {
        let now = now_ms();
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
    /// Make room for one more task: drop expired ones, then the oldest finished.
    pub(super) fn make_room(&mut self, now: u64) -> Result<(), RpcError> {
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
pub use crate::logline::rfc3339_ms as iso8601;

pub(super) fn new_task_id() -> String {
    format!("task-{}", super::wire::random_id())
}

fn input_requests(pending: &[InputReq]) -> Value {
    let mut m = Map::new();
    for r in pending {
        let mut e = Map::new();
        e.insert("method".into(), r.method.into());
        if r.method != "roots/list" {
            e.insert("params".into(), r.params.clone());
        }
        m.insert(r.key.to_string(), Value::Object(e));
    }
    Value::Object(m)
}

impl Server {
    /// A `tools/call` of a task-capable tool, if this call is handled here
    /// (2025-11-25 sessions: [`Server::call_core_task`]).
    pub(super) fn call_task_tool(
        self: &Rc<Self>,
        ctx: &Ctx,
        name: &'static str,
        params: &Value,
        args: &Value,
    ) -> Option<Handled> {
        if !ctx.modern {
            return self.call_core_task(ctx, name, params, args);
        }
        let r = match (tools::task_support(name), declared(ctx)) {
            (TaskSupport::Forbidden, _) | (TaskSupport::Optional, false) => return None,
            (TaskSupport::Required, false) => Err(required(&format!("tool \"{name}\""))),
            // Gather input with MRTR first; run the rest as a task.
            _ if name == "test_tool_with_task" => match flow::modern_round(
                self.key(),
                Kind::Tool,
                name,
                params,
                args,
                &ctx.caps,
                ctx.rev,
                now_ms(),
            ) {
                Ok(r) if r.get("resultType").is_none() => {
                    self.create_task_with(ctx, name, args, Some(r))
                }
                other => other,
            },
            _ => self.create_task(ctx, name, args),
        };
        Some(Handled::Now(r))
    }

    fn create_task(self: &Rc<Self>, ctx: &Ctx, name: &'static str, args: &Value) -> RpcResult {
        self.create_task_with(ctx, name, args, None)
    }

    /// Create a task for `name`; `ready` is a result already computed (it is
    /// delivered after a short delay, as the task's outcome).
    fn create_task_with(
        self: &Rc<Self>,
        ctx: &Ctx,
        name: &'static str,
        args: &Value,
        ready: Option<Value>,
    ) -> RpcResult {
        let now = now_ms();
        let id = new_task_id();
        let mut entry = TaskEntry::new(name, args, &ctx.caps, TTL_MS, false);
        let work = work_of(name, args).or_else(|| {
            ready.map(|r| -> Work {
                Box::pin(async move {
                    Timer::after(Duration::from_millis(100)).await;
                    Ok(r)
                })
            })
        });
        if work.is_none() {
            // An input-gathering task: park it in input_required.
            match flow::step(Kind::Tool, name, args, &entry.got, &ctx.caps, ctx.rev) {
                Step::Need(reqs) => {
                    entry.status = Status::InputRequired;
                    entry.pending = reqs;
                }
                Step::Done(r) => finish(&mut entry, r, now),
            }
        }
        let created = view(&id, &entry, false);
        {
            let mut st = self.st.borrow_mut();
            st.tasks.make_room(now)?;
            st.tasks.order.push(id.clone());
            st.tasks.map.insert(id.clone(), entry);
        }
        if let Some(work) = work {
            let srv = self.clone();
            let tid = id.clone();
            let runner = self.ex.spawn(async move {
                let r = work.await;
                if let Some(t) = srv.st.borrow_mut().tasks.map.get_mut(&tid) {
                    finish(t, r, now_ms());
                }
            });
            if let Some(t) = self.st.borrow_mut().tasks.map.get_mut(&id) {
                t.runner = Some(runner);
            }
        }
        let mut created = created;
        created["resultType"] = "task".into();
        Ok(created)
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel` (modern requests only).
    pub(super) fn task_method(
        self: &Rc<Self>,
        ctx: &Ctx,
        method: &str,
        params: &Value,
    ) -> RpcResult {
        if !declared(ctx) {
            return Err(required(method));
        }
        let id = require_str(params, "taskId")?;
        let unknown = || {
            RpcError::invalid_params(format!("unknown task: {id}")).with_data(json!({"taskId": id}))
        };
        let now = now_ms();
        match method {
            "tasks/get" => {
                let st = self.st.borrow();
                let t = st.tasks.map.get(id).ok_or_else(unknown)?;
                Ok(view(id, t, true))
            }
            "tasks/update" => {
                let responses = match params.get("inputResponses") {
                    Some(Value::Object(m)) => m.clone(),
                    _ => {
                        return Err(RpcError::invalid_params(
                            "\"inputResponses\" must be an object",
                        ))
                    }
                };
                let mut st = self.st.borrow_mut();
                let t = st.tasks.map.get_mut(id).ok_or_else(unknown)?;
                if t.status == Status::InputRequired {
                    for r in &t.pending {
                        if let Some(answer) = responses.get(r.key) {
                            flow::validate_answer(r.method, answer).map_err(|m| {
                                RpcError::invalid_params(format!(
                                    "invalid inputResponses[\"{}\"]: {m}",
                                    r.key
                                ))
                            })?;
                            t.got.insert(r.key.to_string(), answer.clone());
                        }
                    }
                    match flow::step(Kind::Tool, t.name, &t.args, &t.got, &t.caps, ctx.rev) {
                        Step::Need(reqs) => {
                            t.pending = reqs;
                            t.updated_ms = now;
                        }
                        Step::Done(r) => finish(t, r, now),
                    }
                }
                Ok(json!({}))
            }
            "tasks/cancel" => {
                let runner = {
                    let mut st = self.st.borrow_mut();
                    let t = st.tasks.map.get_mut(id).ok_or_else(unknown)?;
                    t.set_status(Status::Cancelled, None, now);
                    t.runner.take()
                };
                drop(runner); // stops the work, outside the state borrow
                Ok(json!({}))
            }
            _ => Err(RpcError::method_not_found(method)),
        }
    }
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

/// The task as a `CreateTaskResult` body or (`detailed`) a `tasks/get` result.
fn view(id: &str, t: &TaskEntry, detailed: bool) -> Value {
    let mut v = json!({
        "taskId": id,
        "status": t.status.as_str(),
        "createdAt": iso8601(t.created_ms),
        "lastUpdatedAt": iso8601(t.updated_ms),
        "ttlMs": TTL_MS,
        "pollIntervalMs": POLL_MS,
    });
    if detailed {
        if let Some(r) = &t.result {
            v["result"] = r.clone();
        }
        if let Some(e) = &t.error {
            v["error"] = e.to_value();
        }
        if t.status == Status::InputRequired {
            v["inputRequests"] = input_requests(&t.pending);
        }
    }
    v
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
