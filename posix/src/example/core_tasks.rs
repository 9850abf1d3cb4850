//! The 2025-11-25 tasks utility, for sessions of that revision:
//! `capabilities.tasks`, task-augmented `tools/call` (`params.task`, answered
//! with a `CreateTaskResult`), `tasks/get`, `tasks/result` (blocking until the
//! task is terminal), `tasks/list`, `tasks/cancel` and
//! `notifications/tasks/status`. Input a task needs is asked for with
//! ordinary server→client requests carrying the related-task `_meta`, while
//! the task shows `input_required`.
//!
//! Tasks live in the store of [`super::task_store`] (each server is one client's
//! session, so a client sees only its own tasks). Which tools are tasks is
//! [`tools::task_support`]. Other revisions ignore `params.task`.

use super::flow::Kind;
use super::server::{now_ms, Ctx, Handled, Server};
use super::task_store::{finish, iso8601, new_task_id, related, work_of, Status, TaskEntry, Work, POLL_MS, TTL_MS};
use super::tools::{self, TaskSupport};
use super::wire::{notification, require_str, RpcError, RpcResult, INTERNAL_ERROR, METHOD_NOT_FOUND};
use mcpx_core::revision::Feature;
use serde_json::{json, Value};
use std::rc::Rc;

/// The task as the 2025-11-25 `Task` object.
fn view(id: &str, t: &TaskEntry) -> Value {
    let mut v = json!({
        "taskId": id,
        "status": t.status.as_str(),
        "createdAt": iso8601(t.created_ms),
        "lastUpdatedAt": iso8601(t.updated_ms),
        "ttl": t.ttl_ms,
        "pollInterval": POLL_MS,
    });
    if let Some(m) = &t.status_message {
        v["statusMessage"] = m.as_str().into();
    }
    v
}

/// The requested `params.task` of a call: `None` without one, else the ttl
/// granted (the request's, at most [`TTL_MS`]; row tasks-resource-limits).
fn requested_ttl(params: &Value) -> Result<Option<u64>, RpcError> {
    match params.get("task") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => match m.get("ttl") {
            None | Some(Value::Null) => Ok(Some(TTL_MS)),
            Some(v) => v.as_u64().map(|t| Some(t.min(TTL_MS))).ok_or_else(|| {
                RpcError::invalid_params("\"task.ttl\" must be a non-negative integer (milliseconds)")
            }),
        },
        Some(_) => Err(RpcError::invalid_params("\"task\" must be an object")),
    }
}

impl Server {
    /// A `tools/call` in a legacy session, if tasks decide how it is handled.
    pub(super) fn call_core_task(
        self: &Rc<Self>,
        ctx: &Ctx,
        name: &'static str,
        params: &Value,
        args: &Value,
    ) -> Option<Handled> {
        if !ctx.rev.supports(Feature::CoreTasks) {
            return None; // row tasks-receiver-without-cap-ignore
        }
        let ttl = match requested_ttl(params) {
            Ok(t) => t,
            Err(e) => return Some(Handled::Now(Err(e))),
        };
        let refuse = |msg: String| Some(Handled::Now(Err(RpcError::new(METHOD_NOT_FOUND, msg))));
        match (tools::task_support(name), ttl) {
            // Rows tasks-tool-forbidden-default, tasks-tool-required.
            (TaskSupport::Forbidden, Some(_)) => {
                refuse(format!("tool \"{name}\" does not run as a task; call it without \"task\""))
            }
            (TaskSupport::Required, None) => refuse(format!(
                "tool \"{name}\" runs only as a task: call it with \"task\" (execution.taskSupport is \"required\")"
            )),
            (_, None) => None,
            // The MRTR-then-task fixture asks for its input during the call
            // itself and makes the task on the answer (the 2026 scenario
            // tasks-mrtr-composition, through a hub that translates).
            (_, Some(ttl)) if name == "test_tool_with_task" => {
                let (srv, ctx, args) = (self.clone(), ctx.clone(), args.clone());
                Some(Handled::Later(Box::pin(async move {
                    let gathered = srv.clone().legacy_flow(ctx.clone(), Kind::Tool, name, args.clone(), None).await?;
                    let work: Work = Box::pin(async move { Ok(gathered) });
                    srv.create_core_task(&ctx, name, &args, ttl, Some(work))
                })))
            }
            (_, Some(ttl)) => Some(Handled::Now(self.create_core_task(ctx, name, args, ttl, None))),
        }
    }

    /// A task running `work`, or the tool's own work.
    fn create_core_task(self: &Rc<Self>, ctx: &Ctx, name: &'static str, args: &Value, ttl: u64, work: Option<Work>) -> RpcResult {
        let (id, now) = (new_task_id(), now_ms());
        let entry = TaskEntry::new(name, args, &ctx.caps, ttl, true, now);
        let created = json!({"task": view(&id, &entry)});
        self.st.borrow_mut().tasks.insert(id.clone(), entry, now)?;
        let work = work.or_else(|| work_of(name, args));
        let srv = self.clone();
        let (ctx, tid, args) = (ctx.clone(), id.clone(), args.clone());
        let runner = self.ex.spawn(async move {
            let r = match work {
                Some(w) => w.await,
                None => srv.clone().legacy_flow(ctx, Kind::Tool, name, args, Some(tid.clone())).await,
            };
            if let Some(t) = srv.st.borrow_mut().tasks.map.get_mut(&tid) {
                finish(t, r, now_ms());
            }
            srv.task_changed(&tid).await;
        });
        if let Some(t) = self.st.borrow_mut().tasks.map.get_mut(&id) {
            t.runner = Some(runner);
        }
        Ok(created)
    }

    /// Move a 2025-11-25 task to `status` (working ⇄ input_required while it
    /// asks for input) and tell the client.
    pub(super) async fn core_task_status(&self, id: &str, status: Status) {
        if let Some(t) = self.st.borrow_mut().tasks.map.get_mut(id) {
            t.set_status(status, None, now_ms());
        }
        self.task_changed(id).await;
    }

    /// `notifications/tasks/status` for a 2025-11-25 task (without the
    /// related-task `_meta`: row tasks-status-notification-no-related-task).
    async fn task_changed(&self, id: &str) {
        let n = {
            let st = self.st.borrow();
            match st.tasks.map.get(id) {
                Some(t) if t.core => notification("notifications/tasks/status", view(id, t)),
                _ => return,
            }
        };
        self.send(n).await;
    }

    /// `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` of a legacy session.
    pub(super) fn core_task_method(self: &Rc<Self>, ctx: &Ctx, method: &str, params: &Value) -> Handled {
        use Handled::Now;
        if !ctx.rev.supports(Feature::CoreTasks) {
            return Now(Err(RpcError::method_not_found(method)));
        }
        if method == "tasks/list" {
            let items = {
                let st = self.st.borrow();
                st.tasks
                    .order
                    .iter()
                    .filter_map(|id| st.tasks.map.get(id).filter(|t| t.core).map(|t| view(id, t)))
                    .collect()
            };
            return Now(self.page("tasks", items, params));
        }
        let id = match require_str(params, "taskId") {
            Ok(id) => id.to_string(),
            Err(e) => return Now(Err(e)),
        };
        match method {
            "tasks/get" => Now(self.with_core_task(&id, |t| Ok(view(&id, t)))),
            "tasks/result" => Handled::Later(Box::pin(self.clone().core_result(id))),
            "tasks/cancel" => Handled::Later(Box::pin(self.clone().core_cancel(id))),
            _ => Now(Err(RpcError::method_not_found(method))),
        }
    }

    /// `f` of this session's task `id`; an unknown one is -32602 (row tasks-protocol-errors).
    fn with_core_task<T>(&self, id: &str, f: impl FnOnce(&mut TaskEntry) -> Result<T, RpcError>) -> Result<T, RpcError> {
        let mut st = self.st.borrow_mut();
        match st.tasks.map.get_mut(id).filter(|t| t.core) {
            Some(t) => f(t),
            None => Err(RpcError::invalid_params(format!(
                "no task {id} in this session (unknown, or expired after its ttl)"
            ))
            .with_data(json!({"taskId": id}))),
        }
    }

    /// The outcome of the task, once it is terminal (rows tasks-result-blocks,
    /// tasks-result-same-error, tasks-result-response-related-task).
    async fn core_result(self: Rc<Self>, id: String) -> RpcResult {
        loop {
            let wait = self.with_core_task(&id, |t| {
                Ok(match t.status {
                    Status::Completed => Err(Ok(t.result.clone().unwrap_or_else(|| json!({})))),
                    Status::Failed => Err(Err(t.error.clone().unwrap_or_else(|| {
                        RpcError::new(INTERNAL_ERROR, "the task failed")
                    }))),
                    Status::Cancelled => Err(Err(RpcError::new(
                        INTERNAL_ERROR,
                        format!("task {id} was cancelled before it produced a result"),
                    )
                    .with_data(json!({"taskId": id})))),
                    Status::Working | Status::InputRequired => {
                        let (tx, rx) = smol::channel::bounded(1);
                        t.waiters.push(tx);
                        Ok(rx)
                    }
                })
            })?;
            match wait {
                // Dropped with its task (expired): the next turn says so.
                Ok(rx) => {
                    let _ = rx.recv().await;
                }
                Err(Ok(mut v)) => {
                    if let Value::Object(o) = &mut v {
                        let meta = o.entry("_meta").or_insert_with(|| json!({}));
                        if let (Value::Object(m), Value::Object(r)) = (meta, related(&id)) {
                            m.extend(r);
                        }
                    }
                    return Ok(v);
                }
                Err(Err(e)) => return Err(e),
            }
        }
    }

    /// Cancel a task that is not terminal yet (rows tasks-cancel-terminal-reject,
    /// tasks-cancel-transition-before-response, tasks-cancelled-sticky).
    async fn core_cancel(self: Rc<Self>, id: String) -> RpcResult {
        let (runner, task) = self.with_core_task(&id, |t| {
            if t.status.terminal() {
                return Err(RpcError::invalid_params(format!(
                    "task {id} is already {}; only a working or input_required task can be cancelled",
                    t.status.as_str()
                ))
                .with_data(json!({"taskId": id})));
            }
            t.set_status(Status::Cancelled, Some("cancelled at the client's request".into()), now_ms());
            Ok((t.runner.take(), view(&id, t)))
        })?;
        drop(runner); // stops the work, outside the state borrow
        self.task_changed(&id).await;
        Ok(task)
    }
}
