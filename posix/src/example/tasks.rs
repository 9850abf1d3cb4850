//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) for modern
//! requests that declare it: task-creating tools, `tasks/get`, `tasks/update`
//! and `tasks/cancel`. Without the extension the same tools run synchronously
//! (or, when they need a task, are refused with -32021).

use super::flow::{self, Kind, Step};
use super::server::{now_ms, Ctx, Handled, Server};
use super::task_store::{finish, iso8601, new_task_id, work_of, Status, TaskEntry, Work, EXT, POLL_MS, TTL_MS};
use super::tools::{self, TaskSupport};
use super::wire::{require_str, RpcError, RpcResult, MISSING_CAPABILITY};
use async_io::Timer;
use serde_json::{json, Value};
use std::rc::Rc;
use std::time::Duration;

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
        let mut entry = TaskEntry::new(name, args, &ctx.caps, TTL_MS, false, now);
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
            match flow::step(Kind::Tool, name, args, &entry.got, &ctx.caps) {
                Step::Need(reqs) => {
                    entry.status = Status::InputRequired;
                    entry.pending = reqs;
                }
                Step::Done(r) => finish(&mut entry, r, now),
            }
        }
        let created = view(&id, &entry, false);
        self.st.borrow_mut().tasks.insert(id.clone(), entry, now)?;
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
                    match flow::step(Kind::Tool, t.name, &t.args, &t.got, &t.caps) {
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
            v["inputRequests"] = flow::input_requests(&t.pending);
        }
    }
    v
}

