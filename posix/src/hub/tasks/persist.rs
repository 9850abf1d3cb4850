//! Tasks across a restart of mcpx: the hub's table of tasks, as a small
//! state file the runtime keeps (`Output::SaveTasks`, written before the
//! client hears of the change that caused it) and gives back at the next
//! start ([`Hub::restore_tasks`]).
//!
//! One record per task: the hub's id, the owning principal, the era it was
//! created in, its method and its TTL deadline as wall-clock time, then
//! - for a task an upstream runs (relayed, either era): the server's name
//!   and the upstream's own task id. It comes back as it was: the upstream
//!   still holds it, so `tasks/get` and the rest reach it again;
//! - for a task mcpx ran itself: its status only, never its result. It
//!   comes back `failed`, saying that mcpx restarted (its upstream request
//!   died with the old process), so a client polling it gets an answer,
//!   never a hang or "not found".
//!
//! A record past its deadline, of a server no longer configured, or that
//! does not parse is dropped on load. The file is bounded: the table is
//! (`TaskOptions::max_tasks`), and records past [`Hub::TASK_STATE_MAX`]
//! bytes are left out of it (with a warning).

use mcpx_core::error::ErrorCode;
use mcpx_core::method::Method;
use serde_json::{json, Value};

use super::table::{Status, Task};
use super::error_object;
use crate::hub::pending::Origin;
use crate::hub::shared::{hex, unhex};
use crate::hub::{ClientId, Hub, Level, Output, UpstreamId};

/// The format of the state file; a file of another version is ignored.
const VERSION: u64 = 1;
const ERA_LEGACY: &str = "2025-11-25";
const ERA_MODERN: &str = "2026-07-28";
/// Status messages of a hub-run task after a restart.
const RESTARTED_WORKING: &str = "mcpx restarted while this task ran; its result is lost";
const RESTARTED_ENDED: &str = "mcpx restarted after this task ended; its result was not kept";
/// The creator of a restored task: no connection of this run.
const NO_CLIENT: ClientId = ClientId::MAX;

impl Hub {
    /// Largest task state file mcpx writes or reads (bytes).
    pub const TASK_STATE_MAX: usize = 4 << 20;

    /// From now on the hub's tasks are saved (`Output::SaveTasks`) whenever
    /// one is created or ends; `saved` is the state file of the last run,
    /// if any. Returns how many of its tasks came back.
    pub fn restore_tasks(&mut self, saved: Option<&[u8]>, now_ms: u64) -> usize {
        self.tasks.saving = true;
        let Some(bytes) = saved else { return 0 };
        let records = match parse(bytes) {
            Ok(r) => r,
            Err(why) => {
                self.log(Level::Warn, format!("the task state file is ignored: {why}"));
                return 0;
            }
        };
        let now = now_ms.max(self.now_ms);
        let (mut restored, mut dropped) = (0, 0);
        for r in records {
            match self.restore_one(&r, now, None) {
                Some(()) => restored += 1,
                None => dropped += 1,
            }
        }
        if restored + dropped > 0 {
            self.log(Level::Info, format!("tasks of the last run: {restored} restored, {dropped} dropped (expired, of a server no longer configured, or unreadable)"));
        }
        self.tasks_refollow_ready();
        restored
    }

    /// Servers already up follow their restored tasks now; the others when
    /// they are.
    pub(in crate::hub) fn tasks_refollow_ready(&mut self) {
        for u in 0..self.ups.len() {
            if self.ups[u].is_ready() {
                self.tasks_refollow(u);
            }
        }
    }

    /// One record back into the table; `None` when it is dropped. `gone`:
    /// the record is another replica's, which is gone (`shared`): a task
    /// of a remote server is followed here as it was there; one of that
    /// replica's own processes, or run by that replica, is `failed`.
    pub(in crate::hub) fn restore_one(&mut self, r: &Value, now: u64, gone: Option<&str>) -> Option<()> {
        let wall = self.opts.tasks.epoch_ms.saturating_add(now);
        let id = r.get("id")?.as_str()?.to_string();
        let owner = unhex(r.get("principal")?.as_str()?)?;
        let modern = match r.get("era")?.as_str()? {
            ERA_MODERN => true,
            ERA_LEGACY => false,
            _ => return None,
        };
        let method = r.get("method")?.as_str()?.to_string();
        // Requirement: tasks-delete-after-ttl (a deadline that passed while mcpx was down)
        let ttl_ms = r.get("expiresAt")?.as_u64()?.checked_sub(wall).filter(|&left| left > 0)?.min(self.opts.tasks.max_ttl_ms);
        if self.tasks.table.get(&id).is_some() || self.tasks.table.len() >= self.opts.tasks.max_tasks {
            return None;
        }
        let relayed = match r.get("upstream") {
            Some(up) => {
                let name = up.get("server")?.as_str()?;
                let u = self.ups.iter().position(|x| x.spec.name == name)?;
                Some((u, up.get("taskId")?.as_str()?.to_string()))
            }
            None => None,
        };
        let ended = r.get("status").and_then(Value::as_str).and_then(Status::parse).is_some_and(Status::is_terminal);
        // Why the task cannot be followed here, if so: it then reads `failed`.
        let lost = match (&relayed, gone) {
            // After a restart the upstream still holds it; any replica
            // reaches a remote server.
            (Some(_), None) => None,
            (Some((u, _)), Some(_)) if self.ups[*u].spec.remote => None,
            (Some((u, _)), Some(from)) => Some(format!("mcpx replica '{from}' ran this task on its own process of server '{}' and is gone; its result is lost", self.ups[*u].spec.name)),
            (None, Some(from)) => Some(format!("mcpx replica '{from}' ran this task and is gone; its result is lost")),
            (None, None) => Some(if ended { RESTARTED_ENDED } else { RESTARTED_WORKING }.to_string()),
        };
        let relayed = relayed.filter(|_| lost.is_none());
        let followed = r.pointer("/upstream/followed").and_then(Value::as_bool) == Some(true);
        let t = Task { relayed, ..Task::new(owner, NO_CLIENT, modern, &method, now, ttl_ms) };
        self.tasks.table.insert(id.clone(), t);
        match lost {
            None if followed => self.tasks.refollow.push(id.clone()),
            None => {}
            Some(why) => {
                let _ = self.tasks.table.finish(&id, Status::Failed, error_object(ErrorCode::InternalError, &why), now, usize::MAX);
                self.set_message(&id, why);
            }
        }
        Some(())
    }

    /// Upstream `u` is ready: the tasks of the last run mcpx follows on it
    /// are followed again: a 2025-11-25 server's `tasks/result` is held
    /// open again, a 2026-07-28 server's task is polled again.
    // Requirement: ext-tasks-client-persist-ids (a task whose upstream still holds it survives a restart)
    pub(in crate::hub) fn tasks_refollow(&mut self, u: UpstreamId) {
        if self.tasks.refollow.is_empty() {
            return;
        }
        let table = &self.tasks.table;
        let (mine, rest): (Vec<String>, Vec<String>) = std::mem::take(&mut self.tasks.refollow).into_iter().filter(|id| table.get(id).is_some()).partition(|id| table.get(id).and_then(|t| t.relayed.as_ref()).is_some_and(|(x, _)| *x == u));
        self.tasks.refollow = rest;
        let now = self.now_ms;
        for id in mine {
            let Some(((_, up), left)) = self.tasks.table.get(&id).and_then(|t| Some((t.relayed.clone()?, t.expires_ms().saturating_sub(now)))) else { continue };
            if self.upstream_has_legacy_tasks(u) {
                let held = self.ask_upstream_task(u, Method::TasksResult, &up, Origin::Task(id.clone()), left.max(1));
                if let Some(t) = self.tasks.table.get_mut(&id) {
                    t.call = held.map(|h| (u, h));
                }
            } else if self.ups[u].is_modern() {
                if let Some(t) = self.tasks.table.get_mut(&id) {
                    t.poll_at = Some(now);
                }
            } else {
                let why = format!("server '{}' no longer runs tasks since mcpx restarted; its task {up} cannot be followed", self.ups[u].spec.name);
                self.task_lost(&id, why);
            }
        }
    }

    /// The table changed (a task was created or ended): the state file is
    /// written before anything that follows reaches a client.
    pub(in crate::hub) fn tasks_save(&mut self) {
        if !self.tasks.saving {
            return;
        }
        let epoch = self.opts.tasks.epoch_ms;
        let (mut records, mut size, mut left_out) = (Vec::new(), 64, 0);
        for (id, t) in self.tasks.table.iter() {
            let Some(r) = self.task_record(id, t, epoch) else { continue };
            let len = r.to_string().len() + 1;
            if size + len > Hub::TASK_STATE_MAX {
                left_out += 1;
                continue;
            }
            size += len;
            records.push(r);
        }
        if left_out > 0 {
            self.log(Level::Warn, format!("{left_out} task(s) left out of the task state file (over {} bytes): they will not survive a restart", Hub::TASK_STATE_MAX));
        }
        let file = json!({ "version": VERSION, "tasks": records });
        self.out.push_back(Output::SaveTasks(serde_json::to_vec(&file).unwrap_or_default()));
    }

    /// Is task `id` in this hub's table?
    pub(in crate::hub) fn has_task(&self, id: &str) -> bool {
        self.tasks.table.get(id).is_some()
    }

    /// Task `id`'s record and the time it has left (ms), if it is in the
    /// table (and its server still configured).
    pub(in crate::hub) fn task_record_now(&self, id: &str) -> Option<(Value, u64)> {
        let t = self.tasks.table.get(id)?;
        Some((self.task_record(id, t, self.opts.tasks.epoch_ms)?, t.expires_ms().saturating_sub(self.now_ms).max(1)))
    }

    /// Task `id`'s record; `None` for a relayed task whose server is gone.
    fn task_record(&self, id: &str, t: &Task, epoch_ms: u64) -> Option<Value> {
        let mut r = json!({
            "id": id,
            "principal": hex(&t.owner),
            "era": if t.modern { ERA_MODERN } else { ERA_LEGACY },
            "method": t.method,
            "expiresAt": epoch_ms.saturating_add(t.created_ms).saturating_add(t.ttl_ms),
        });
        match &t.relayed {
            // A task whose every operation mcpx forwards (a 2026-07-28
            // client's task of a 2026-07-28 server, `relay`) needs only its
            // mapping; one mcpx follows itself (`legacy`, `poll`) is followed
            // again once its server is ready.
            Some((u, up)) => {
                let followed = !(t.modern && self.ups.get(*u)?.is_modern());
                r["upstream"] = json!({ "server": self.ups[*u].spec.name, "taskId": up, "followed": followed });
            }
            None => r["status"] = json!(t.status.as_str()),
        }
        Some(r)
    }
}

/// The records of a state file.
fn parse(bytes: &[u8]) -> Result<Vec<Value>, String> {
    if bytes.len() > Hub::TASK_STATE_MAX {
        return Err(format!("it is {} bytes, over mcpx's {} bytes", bytes.len(), Hub::TASK_STATE_MAX));
    }
    let mut v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON ({e})"))?;
    match v.get("version").and_then(Value::as_u64) {
        Some(VERSION) => {}
        other => return Err(format!("version {other:?}, this mcpx reads version {VERSION}")),
    }
    match v.get_mut("tasks").map(Value::take) {
        Some(Value::Array(a)) => Ok(a),
        _ => Err("no \"tasks\" array".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_round_trip_through_hex() {
        let p = b"anonymous:\x00\xff\x10".to_vec();
        assert_eq!(unhex(&hex(&p)), Some(p));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn a_state_file_of_another_version_or_shape_is_refused() {
        assert!(parse(br#"{"version": 1, "tasks": []}"#).unwrap().is_empty());
        assert!(parse(br#"{"version": 2, "tasks": []}"#).unwrap_err().contains("version"));
        assert!(parse(br#"{"version": 1}"#).is_err());
        assert!(parse(b"{").is_err());
        assert!(parse(&vec![b' '; Hub::TASK_STATE_MAX + 1]).unwrap_err().contains("over"));
    }
}
