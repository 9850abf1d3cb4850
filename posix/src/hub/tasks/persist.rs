//! Tasks across a restart of mcpx: the hub's table of tasks, as a small
//! state file the runtime keeps (`Effect::Save`, written as
//! `Output::SaveTasks` before the client hears of the change that caused
//! it) and gives back at the next start ([`Tasks::restore`]).
//!
//! One record per task: the hub's id, the owning principal (and session,
//! for a legacy session without a credential, [`Owner`]), the era it was
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
//! (`TaskOptions::max_tasks`), and records past [`TASK_STATE_MAX`]
//! bytes are left out of it (with a warning).

use mcpx_core::error::ErrorCode;
use mcpx_core::method::Method;
use serde_json::{json, Value};

use super::error_object;
use super::table::{Status, Task};
use super::{Effect, Owner, Tasks, Up};
use crate::bytes::hex::{hex, unhex};
use crate::hub::{ClientId, Level, UpstreamId};

/// Largest task state file mcpx writes or reads (bytes).
pub const TASK_STATE_MAX: usize = 4 << 20;

/// The format of the state file; a file of another version is ignored.
const VERSION: u64 = 1;
const ERA_LEGACY: &str = "2025-11-25";
const ERA_MODERN: &str = "2026-07-28";
/// Status messages of a hub-run task after a restart.
const RESTARTED_WORKING: &str = "mcpx restarted while this task ran; its result is lost";
const RESTARTED_ENDED: &str = "mcpx restarted after this task ended; its result was not kept";
/// The creator of a restored task: no connection of this run.
const NO_CLIENT: ClientId = ClientId::MAX;

impl Tasks {
    /// From now on the tasks are saved (`Effect::Save`) whenever one is
    /// created or ends; `saved` is the state file of the last run, if any.
    /// Returns how many of its tasks came back (followed again with
    /// [`Tasks::refollow_ready`]).
    pub fn restore(&mut self, saved: Option<&[u8]>, ups: &[Up], now: u64) -> (usize, Vec<Effect>) {
        self.saving = true;
        let Some(bytes) = saved else { return (0, self.effects()) };
        let records = match parse(bytes) {
            Ok(r) => r,
            Err(why) => {
                self.log(Level::Warn, format!("the task state file is ignored: {why}"));
                return (0, self.effects());
            }
        };
        let (mut restored, mut dropped) = (0, 0);
        for r in records {
            match self.restore_one(&r, ups, now, None) {
                Some(()) => restored += 1,
                None => dropped += 1,
            }
        }
        if restored + dropped > 0 {
            self.log(Level::Info, format!("tasks of the last run: {restored} restored, {dropped} dropped (expired, of a server no longer configured, or unreadable)"));
        }
        (restored, self.effects())
    }

    /// Servers already up follow their restored tasks now; the others when
    /// they are ([`Tasks::refollow`]).
    pub fn refollow_ready(&mut self, ups: &[Up], now: u64) -> Vec<Effect> {
        for up in ups.iter().filter(|x| x.ready) {
            self.refollow_on(up, now);
        }
        self.effects()
    }

    /// Task `id` was taken over from a replica that is gone
    /// ([`Tasks::restore_one`]): published as this replica's, saved, and
    /// followed.
    pub fn taken_over(&mut self, id: String, ups: &[Up], now: u64) -> Vec<Effect> {
        self.out.push(Effect::Publish(id));
        self.save();
        self.refollow_ready(ups, now)
    }

    /// One record back into the table; `None` when it is dropped. `gone`:
    /// the record is another replica's, which is gone (`shared`): a task
    /// of a remote server is followed here as it was there; one of that
    /// replica's own processes, or run by that replica, is `failed`.
    pub fn restore_one(&mut self, r: &Value, ups: &[Up], now: u64, gone: Option<&str>) -> Option<()> {
        let wall = self.opts.epoch_ms.saturating_add(now);
        let id = r.get("id")?.as_str()?.to_string();
        let principal = unhex(r.get("principal")?.as_str()?)?;
        let session = match r.get("session") {
            Some(s) => Some(s.as_u64()?),
            None => None,
        };
        let modern = match r.get("era")?.as_str()? {
            ERA_MODERN => true,
            ERA_LEGACY => false,
            _ => return None,
        };
        let method = r.get("method")?.as_str()?.to_string();
        // Requirement: tasks-delete-after-ttl (a deadline that passed while mcpx was down)
        let ttl_ms = r.get("expiresAt")?.as_u64()?.checked_sub(wall).filter(|&left| left > 0)?.min(self.opts.max_ttl_ms);
        if self.table.get(&id).is_some() || self.table.len() >= self.opts.max_tasks {
            return None;
        }
        let relayed = match r.get("upstream") {
            Some(up) => {
                let name = up.get("server")?.as_str()?;
                let u = ups.iter().position(|x| x.name == name)?;
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
            (Some((u, _)), Some(_)) if ups[*u].remote => None,
            (Some((u, _)), Some(from)) => Some(format!("mcpx replica '{from}' ran this task on its own process of server '{}' and is gone; its result is lost", ups[*u].name)),
            (None, Some(from)) => Some(format!("mcpx replica '{from}' ran this task and is gone; its result is lost")),
            (None, None) => Some(if ended { RESTARTED_ENDED } else { RESTARTED_WORKING }.to_string()),
        };
        let relayed = relayed.filter(|_| lost.is_none());
        let followed = r.pointer("/upstream/followed").and_then(Value::as_bool) == Some(true);
        let owner = Owner { principal: &principal, session };
        let t = Task { relayed, ..Task::new(owner, NO_CLIENT, modern, &method, now, ttl_ms) };
        self.table.insert(id.clone(), t);
        match lost {
            None if followed => self.refollow.push(id.clone()),
            None => {}
            Some(why) => {
                let _ = self.table.finish(&id, Status::Failed, error_object(ErrorCode::InternalError, &why), now, usize::MAX);
                self.set_message(&id, why);
            }
        }
        Some(())
    }

    /// Upstream `up` is ready: the tasks of the last run mcpx follows on it
    /// are followed again: a 2025-11-25 server's `tasks/result` is held
    /// open again, a 2026-07-28 server's task is polled again.
    pub fn refollow(&mut self, up: &Up, now: u64) -> Vec<Effect> {
        self.refollow_on(up, now);
        self.effects()
    }

    // Requirement: ext-tasks-client-persist-ids (a task whose upstream still holds it survives a restart)
    fn refollow_on(&mut self, up: &Up, now: u64) {
        if self.refollow.is_empty() {
            return;
        }
        let u: UpstreamId = up.id;
        let table = &self.table;
        let (mine, rest): (Vec<String>, Vec<String>) = std::mem::take(&mut self.refollow).into_iter().filter(|id| table.get(id).is_some()).partition(|id| table.get(id).and_then(|t| t.relayed.as_ref()).is_some_and(|(x, _)| *x == u));
        self.refollow = rest;
        for id in mine {
            let Some(((_, up_task), left)) = self.table.get(&id).and_then(|t| Some((t.relayed.clone()?, t.expires_ms().saturating_sub(now)))) else { continue };
            if up.legacy_tasks {
                self.ask_upstream_task(up, Method::TasksResult, &up_task, Some(id), left.max(1));
            } else if up.modern {
                if let Some(t) = self.table.get_mut(&id) {
                    t.poll_at = Some(now);
                }
            } else {
                let why = format!("server '{}' no longer runs tasks since mcpx restarted; its task {up_task} cannot be followed", up.name);
                self.fail(&id, why, now);
            }
        }
    }

    /// The state file of the table as it is, and a warning when records
    /// were left out of it: written before anything that follows a change
    /// reaches a client.
    pub fn state_file(&self, ups: &[Up]) -> (Vec<u8>, Option<String>) {
        let epoch = self.opts.epoch_ms;
        let (mut records, mut size, mut left_out) = (Vec::new(), 64, 0);
        for (id, t) in self.table.iter() {
            let Some(r) = record(id, t, epoch, ups) else { continue };
            let len = r.to_string().len() + 1;
            if size + len > TASK_STATE_MAX {
                left_out += 1;
                continue;
            }
            size += len;
            records.push(r);
        }
        let warning = (left_out > 0).then(|| format!("{left_out} task(s) left out of the task state file (over {TASK_STATE_MAX} bytes): they will not survive a restart"));
        let file = json!({ "version": VERSION, "tasks": records });
        (serde_json::to_vec(&file).unwrap_or_default(), warning)
    }

    /// Is task `id` in this hub's table?
    pub fn has(&self, id: &str) -> bool {
        self.table.get(id).is_some()
    }

    /// Task `id`'s record and the time it has left (ms) at `now`, if it is
    /// in the table (and its server still configured).
    pub fn record_now(&self, id: &str, ups: &[Up], now: u64) -> Option<(Value, u64)> {
        let t = self.table.get(id)?;
        Some((record(id, t, self.opts.epoch_ms, ups)?, t.expires_ms().saturating_sub(now).max(1)))
    }
}

/// Task `id`'s record; `None` for a relayed task whose server is gone.
fn record(id: &str, t: &Task, epoch_ms: u64, ups: &[Up]) -> Option<Value> {
    let mut r = json!({
        "id": id,
        "principal": hex(&t.principal),
        "era": if t.modern { ERA_MODERN } else { ERA_LEGACY },
        "method": t.method,
        "expiresAt": epoch_ms.saturating_add(t.created_ms).saturating_add(t.ttl_ms),
    });
    if let Some(s) = t.session {
        r["session"] = json!(s);
    }
    match &t.relayed {
        // A task whose every operation mcpx forwards (a 2026-07-28
        // client's task of a 2026-07-28 server, `relay`) needs only its
        // mapping; one mcpx follows itself (`legacy`, `poll`) is followed
        // again once its server is ready.
        Some((u, up)) => {
            let x = ups.get(*u)?;
            let followed = !(t.modern && x.modern);
            r["upstream"] = json!({ "server": x.name, "taskId": up, "followed": followed });
        }
        None => r["status"] = json!(t.status.as_str()),
    }
    Some(r)
}

/// The records of a state file.
fn parse(bytes: &[u8]) -> Result<Vec<Value>, String> {
    if bytes.len() > TASK_STATE_MAX {
        return Err(format!("it is {} bytes, over mcpx's {} bytes", bytes.len(), TASK_STATE_MAX));
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
        assert!(parse(&vec![b' '; TASK_STATE_MAX + 1]).unwrap_err().contains("over"));
    }
}
