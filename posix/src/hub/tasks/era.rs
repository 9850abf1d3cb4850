//! A task as each era shows it: the 2025-11-25 `Task` object (`ttl`,
//! `pollInterval`) and the 2026-07-28 tasks extension's task (`ttlMs`,
//! `pollIntervalMs`, with the outcome inside `tasks/get`). One table, two
//! renderings; nothing else in the hub knows the field names.

use mcpx_core::error::ErrorCode;
use mcpx_core::meta::RELATED_TASK_KEY;
use serde_json::{json, Map, Value};

use super::table::{Outcome, Status, Task};

/// Wall-clock times for the task's `createdAt` / `lastUpdatedAt`: the hub's
/// clock is monotonic, `epoch_ms` is the Unix time at its zero.
fn iso(epoch_ms: u64, ms: u64) -> String {
    crate::log::line::rfc3339_ms(epoch_ms.saturating_add(ms))
}

/// The members both eras share (`tasks-timestamps`, `tasks-ttl-override-report`).
fn common(id: &str, t: &Task, epoch_ms: u64) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("taskId".into(), json!(id));
    m.insert("status".into(), json!(t.status.as_str()));
    if let Some(msg) = &t.message {
        // Requirement: tasks-failed-status-message
        m.insert("statusMessage".into(), json!(msg));
    }
    m.insert("createdAt".into(), json!(iso(epoch_ms, t.created_ms)));
    m.insert("lastUpdatedAt".into(), json!(iso(epoch_ms, t.updated_ms)));
    m
}

/// The 2025-11-25 `Task` (the body of `tasks/get`, `tasks/cancel`, list
/// items, status notifications; inside `task` of a `CreateTaskResult`).
pub(crate) fn legacy(id: &str, t: &Task, epoch_ms: u64, poll_ms: u64) -> Value {
    let mut m = common(id, t, epoch_ms);
    m.insert("ttl".into(), json!(t.ttl_ms));
    m.insert("pollInterval".into(), json!(poll_ms));
    Value::Object(m)
}

/// The 2026-07-28 extension's task; `detailed` (a `tasks/get`): with the
/// outcome of a terminal task, `result` or `error` (`ext-tasks-get-carries-result`).
pub(crate) fn modern(id: &str, t: &Task, epoch_ms: u64, poll_ms: u64, detailed: bool) -> Value {
    let mut m = common(id, t, epoch_ms);
    if t.status == Status::Failed && matches!(t.outcome, Some(Outcome::Result(_))) {
        // A tool's own error (`isError`) is a failed 2025-11-25 task but a
        // completed one carrying that result in the extension.
        m.insert("status".into(), json!(Status::Completed.as_str()));
        m.remove("statusMessage");
    }
    m.insert("ttlMs".into(), json!(t.ttl_ms));
    m.insert("pollIntervalMs".into(), json!(poll_ms));
    if detailed {
        match &t.outcome {
            Some(Outcome::Result(r)) => {
                m.insert("result".into(), serde_json::from_slice(r).unwrap_or_else(|_| json!({})));
            }
            Some(Outcome::Error(e)) => {
                m.insert("error".into(), serde_json::from_slice(e).unwrap_or_else(|_| json!({})));
            }
            None if t.status == Status::Cancelled => {
                m.insert("error".into(), serde_json::from_slice(&crate::bytes::written::error_object(ErrorCode::InternalError, "the task was cancelled")).unwrap_or_else(|_| json!({})));
            }
            // Requirement: ext-tasks-get-input-requests
            None if t.status == Status::InputRequired && !t.inputs.is_empty() => {
                let asks: Map<String, Value> = t.inputs.iter().map(|i| (i.key.clone(), json!({ "method": i.method, "params": i.params }))).collect();
                m.insert("inputRequests".into(), Value::Object(asks));
            }
            None => {}
        }
    }
    Value::Object(m)
}

/// `_meta` relating a message to task `id` (`tasks-related-task-all-messages`).
pub(crate) fn related(id: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(RELATED_TASK_KEY.into(), json!({ "taskId": id }));
    m
}

/// The status a task ends in for an upstream's result of `method`: a tool
/// result with `isError` is a failed task (2025-11-25 "task execution
/// errors"); any other result completes it.
pub(crate) fn status_of_result(method: &str, result: &[u8]) -> Status {
    let is_error = method == "tools/call"
        && mcpx_core::json::parse(result).ok().and_then(|v| v.get("isError")).is_some_and(|v| v.bytes() == b"true");
    if is_error {
        Status::Failed
    } else {
        Status::Completed
    }
}
