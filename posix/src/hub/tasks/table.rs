//! The hub's table of tasks it runs itself: who owns each, its state, its
//! outcome, and the caps (live tasks per principal and in total, bytes of
//! kept outcomes). Pure data: no messages, no clock of its own.

use std::collections::BTreeMap;

use super::{Owner, TaskOptions};
use crate::hub::earliest::Earliest;
use crate::hub::shape::Rev;
use crate::hub::{ClientId, UpstreamId};

pub(crate) use mcpx_core::task::TaskStatus as Status;

/// How the task's underlying request ended: the upstream's result or error
/// object, raw JSON, kept byte for byte (`tasks-result-exact`).
#[derive(Clone, Debug)]
pub(crate) enum Outcome {
    Result(Vec<u8>),
    Error(Vec<u8>),
}

impl Outcome {
    pub fn len(&self) -> usize {
        match self {
            Outcome::Result(b) | Outcome::Error(b) => b.len(),
        }
    }
}

/// One task run by the hub.
#[derive(Debug)]
pub(crate) struct Task {
    /// The principal that created it: the only one that may see it, and
    /// whose share it counts against.
    pub principal: Vec<u8>,
    /// The legacy session without any credential that created it: the only
    /// one of its principal that may see it ([`Owner`]).
    pub session: Option<ClientId>,
    /// The connection that created it (status notifications go there).
    pub creator: ClientId,
    /// Created by a 2026-07-28 request (the tasks extension) rather than a
    /// 2025-11-25 one.
    pub modern: bool,
    pub status: Status,
    pub message: Option<String>,
    pub created_ms: u64,
    pub updated_ms: u64,
    pub ttl_ms: u64,
    /// The underlying request while it is in flight upstream.
    pub call: Option<(UpstreamId, u64)>,
    /// A task the upstream runs (relayed): the upstream and its own task
    /// id. Its state and outcome are the upstream's; the hub keeps only the
    /// mapping and the owner.
    pub relayed: Option<(UpstreamId, String)>,
    /// The underlying request's method (for shaping its result).
    pub method: String,
    pub outcome: Option<Outcome>,
    /// `tasks/result` requests waiting for a terminal status.
    pub waiters: Vec<Waiter>,
    /// Requests for input the upstream made inside the task, waiting for a
    /// 2026 client's `tasks/update` (`legacy`).
    pub inputs: Vec<Input>,
    /// When the hub next asks a 2026 upstream how its task is (`poll`).
    pub poll_at: Option<u64>,
    /// The terminal status a 2025 upstream reported for its task before
    /// its outcome came (`legacy`): the status the task ends in.
    pub reported: Option<Status>,
    /// The creator's `progressToken` of the call mcpx runs as this task,
    /// raw JSON: its progress keeps that token for the task's life.
    pub progress: Option<Vec<u8>>,
}

/// An upstream's request for input inside a task, as a 2026 client sees it.
#[derive(Debug)]
pub(crate) struct Input {
    /// Its key in `inputRequests`.
    pub key: String,
    /// The upstream's request id, raw JSON.
    pub up_id: Vec<u8>,
    pub method: String,
    pub params: serde_json::Value,
}

/// A `tasks/result` request waiting for its task to end.
#[derive(Debug)]
pub(crate) struct Waiter {
    pub client: ClientId,
    /// The request's id, raw JSON.
    pub id: Vec<u8>,
    /// The client's revision, which the outcome is shaped for.
    pub rev: Rev,
}

impl Task {
    /// A working task of `owner`, made by connection `creator` at `now` for
    /// a request of `method`; where it runs is for the caller to set.
    pub fn new(owner: Owner, creator: ClientId, modern: bool, method: &str, now: u64, ttl_ms: u64) -> Task {
        Task {
            principal: owner.principal.to_vec(),
            session: owner.session,
            creator,
            modern,
            status: Status::Working,
            message: None,
            created_ms: now,
            updated_ms: now,
            ttl_ms,
            call: None,
            relayed: None,
            method: method.to_string(),
            outcome: None,
            waiters: Vec::new(),
            inputs: Vec::new(),
            poll_at: None,
            reported: None,
            progress: None,
        }
    }

    pub fn expires_ms(&self) -> u64 {
        self.created_ms.saturating_add(self.ttl_ms)
    }

    /// Does the task belong to `owner`?
    pub fn owned_by(&self, owner: Owner) -> bool {
        self.principal == owner.principal && self.session == owner.session
    }
}

/// Why a task could not be created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Full {
    /// This principal has this many tasks still working.
    Principal(usize),
    /// The hub keeps this many tasks, none of them finished.
    Total(usize),
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Full::Principal(n) => write!(f, "you have {n} tasks working (mcpx's limit per client); wait for one to finish or cancel one"),
            Full::Total(n) => write!(f, "mcpx holds {n} working tasks (its limit); try again later"),
        }
    }
}

/// Every task the hub runs, by id.
#[derive(Default)]
pub(crate) struct Table {
    tasks: BTreeMap<String, Task>,
    /// Bytes of the outcomes kept.
    bytes: usize,
    /// [`Table::next_expiry`]'s answer until the table changes: a walk
    /// over up to `maxTasks` tasks after every message made everyone's
    /// messages dearer with one client's tasks.
    next: Earliest,
}

impl Table {
    pub fn get(&self, id: &str) -> Option<&Task> {
        self.tasks.get(id)
    }

    pub fn get_mut(&mut self, id: &str) -> Option<&mut Task> {
        self.tasks_mut().get_mut(id)
    }

    /// The tasks, to change: every change goes through here, which forgets
    /// the next expiry.
    fn tasks_mut(&mut self) -> &mut BTreeMap<String, Task> {
        self.next.forget();
        &mut self.tasks
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Task)> {
        self.tasks.iter()
    }

    /// The task `id` if `owner` may see it: another principal's task is
    /// "not found" (`tasks-bound-reject-foreign`).
    pub fn owned(&self, id: &str, owner: Owner) -> Option<&Task> {
        self.tasks.get(id).filter(|t| t.owned_by(owner))
    }

    /// Room for a new task of `principal` (within its share, whatever
    /// session of it asks): over the total, the oldest finished task is
    /// dropped first; working tasks are never dropped for room.
    // Requirement: tasks-resource-limits
    pub fn make_room(&mut self, principal: &[u8], o: &TaskOptions) -> Result<(), Full> {
        let live = self.tasks.values().filter(|t| t.principal == principal && !t.status.is_terminal()).count();
        if live >= o.max_live_per_principal {
            return Err(Full::Principal(live));
        }
        while self.tasks.len() >= o.max_tasks {
            let oldest_done = self.tasks.iter().filter(|(_, t)| t.status.is_terminal()).min_by_key(|(_, t)| t.updated_ms).map(|(id, _)| id.clone());
            match oldest_done {
                Some(id) => {
                    self.remove(&id);
                }
                None => return Err(Full::Total(self.tasks.len())),
            }
        }
        Ok(())
    }

    pub fn insert(&mut self, id: String, t: Task) {
        self.tasks_mut().insert(id, t);
    }

    pub fn remove(&mut self, id: &str) -> Option<Task> {
        let t = self.tasks_mut().remove(id)?;
        self.bytes -= t.outcome.as_ref().map_or(0, Outcome::len);
        Some(t)
    }

    /// Ends a working task with `outcome` (kept if it fits the memory cap;
    /// `Err(outcome)` when it does not, the task untouched). A task already
    /// terminal keeps its status and outcome (`tasks-cancelled-sticky`).
    pub fn finish(&mut self, id: &str, status: Status, outcome: Outcome, now: u64, max_bytes: usize) -> Result<(), Outcome> {
        let (len, bytes) = (outcome.len(), self.bytes);
        // One lookup, as `cancel` does (a refused outcome changes nothing,
        // and the kept expiry forgotten with it is only walked again).
        let Some(t) = self.tasks_mut().get_mut(id).filter(|t| !t.status.is_terminal()) else { return Ok(()) };
        if bytes + len > max_bytes {
            return Err(outcome);
        }
        t.status = status;
        t.outcome = Some(outcome);
        t.call = None;
        t.updated_ms = now;
        self.bytes += len;
        Ok(())
    }

    /// Cancels a working task (no outcome: `tasks/result` says it was
    /// cancelled); true when it was working.
    // Requirement: tasks-cancel-transition-before-response
    pub fn cancel(&mut self, id: &str, now: u64) -> bool {
        let Some(t) = self.tasks_mut().get_mut(id).filter(|t| !t.status.is_terminal()) else { return false };
        t.status = Status::Cancelled;
        t.message = Some("cancelled by the client".into());
        t.call = None;
        t.updated_ms = now;
        true
    }

    /// The hub's id of upstream `u`'s task `up`.
    pub fn by_upstream(&self, u: UpstreamId, up: &str) -> Option<String> {
        self.tasks.iter().find(|(_, t)| t.relayed.as_ref().is_some_and(|r| r.0 == u && r.1 == up)).map(|(id, _)| id.clone())
    }

    /// Ids of `owner`'s tasks, oldest first.
    pub fn of_owner(&self, owner: Owner) -> Vec<String> {
        let mut v: Vec<(&String, &Task)> = self.tasks.iter().filter(|(_, t)| t.owned_by(owner)).collect();
        v.sort_by(|a, b| (a.1.created_ms, a.0).cmp(&(b.1.created_ms, b.0)));
        v.into_iter().map(|(id, _)| id.clone()).collect()
    }

    /// Tasks whose TTL has run out at `now`.
    // Requirement: tasks-delete-after-ttl
    pub fn expired(&self, now: u64) -> Vec<String> {
        self.tasks.iter().filter(|(_, t)| t.expires_ms() <= now).map(|(id, _)| id.clone()).collect()
    }

    /// The next time something is due: an expiry or a poll.
    pub fn next_expiry(&self) -> Option<u64> {
        self.next.get(|| self.tasks.values().flat_map(|t| [Some(t.expires_ms()), t.poll_at]).flatten().min())
    }

    /// Tasks whose upstream is to be polled at `now`.
    pub fn due_polls(&self, now: u64) -> Vec<String> {
        self.tasks.iter().filter(|(_, t)| t.poll_at.is_some_and(|at| at <= now)).map(|(id, _)| id.clone()).collect()
    }

    /// Every waiting `tasks/result` of client `c` is dropped (it is gone).
    pub fn drop_waiters_of(&mut self, c: ClientId) {
        for t in self.tasks_mut().values_mut() {
            t.waiters.retain(|w| w.client != c);
        }
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(owner: &[u8], now: u64) -> Task {
        Task::new(Owner { principal: owner, session: None }, 1, false, "tools/call", now, 1000)
    }

    fn opts(live: usize, total: usize) -> TaskOptions {
        TaskOptions { max_live_per_principal: live, max_tasks: total, ..TaskOptions::default() }
    }

    /// Anonymous sessions each see only their own tasks, but share one
    /// principal's count: a new session buys no new share.
    #[test]
    fn anonymous_sessions_share_the_anonymous_principals_count() {
        let mut t = Table::default();
        let o = opts(2, 10);
        let anonymous = crate::hub::ANONYMOUS_PRINCIPAL;
        for c in [1, 2] {
            let who = Owner::of(c, anonymous, false);
            t.make_room(who.principal, &o).unwrap();
            t.insert(format!("t{c}"), Task::new(who, c, false, "tools/call", c, 1000));
        }
        assert_eq!(t.make_room(Owner::of(3, anonymous, false).principal, &o), Err(Full::Principal(2)));
        assert_eq!(t.make_room(Owner::of(3, anonymous, true).principal, &o), Err(Full::Principal(2)), "a 2026-07-28 anonymous request too");
        t.make_room(b"token:alice", &o).unwrap();
        assert!(t.owned("t1", Owner::of(2, anonymous, false)).is_none(), "each session sees its own only");
        assert!(t.owned("t1", Owner::of(1, anonymous, false)).is_some());
        assert!(t.owned("t1", Owner::of(1, anonymous, true)).is_none(), "an anonymous modern request is no session");
    }

    #[test]
    fn caps_count_live_tasks_per_principal_and_finished_ones_make_room() {
        let mut t = Table::default();
        let o = opts(2, 3);
        for (i, who) in [b"a", b"a", b"b"].iter().enumerate() {
            t.make_room(*who, &o).unwrap();
            t.insert(format!("t{i}"), task(*who, i as u64));
        }
        assert_eq!(t.make_room(b"a", &o), Err(Full::Principal(2)));
        assert_eq!(t.make_room(b"c", &o), Err(Full::Total(3)));
        t.finish("t0", Status::Completed, Outcome::Result(b"{}".to_vec()), 5, 100).unwrap();
        assert_eq!(t.bytes(), 2);
        t.make_room(b"c", &o).unwrap();
        assert!(t.get("t0").is_none(), "the oldest finished task made room");
        assert_eq!(t.bytes(), 0);
    }

    #[test]
    fn outcomes_count_against_the_memory_cap_and_terminal_is_final() {
        let mut t = Table::default();
        t.insert("x".into(), task(b"a", 0));
        let big = Outcome::Result(vec![b' '; 11]);
        assert!(t.finish("x", Status::Completed, big, 1, 10).is_err());
        assert_eq!(t.get("x").unwrap().status, Status::Working);
        assert!(t.cancel("x", 2));
        assert!(!t.cancel("x", 2), "a terminal task is not cancelled again");
        t.finish("x", Status::Completed, Outcome::Result(b"{}".to_vec()), 3, 10).unwrap();
        assert_eq!(t.get("x").unwrap().status, Status::Cancelled, "cancelled stays cancelled");
        let by = |p: &'static [u8]| Owner { principal: p, session: None };
        assert!(t.owned("x", by(b"b")).is_none() && t.owned("x", by(b"a")).is_some());
        assert_eq!(t.expired(999), Vec::<String>::new());
        assert_eq!(t.expired(1000), vec!["x".to_string()]);
    }

    /// The next expiry is kept, and found again after each kind of change.
    #[test]
    fn the_next_expiry_follows_every_change() {
        let mut t = Table::default();
        assert_eq!(t.next_expiry(), None);
        t.insert("a".into(), task(b"a", 10));
        assert_eq!(t.next_expiry(), Some(1010));
        t.insert("b".into(), task(b"b", 5));
        assert_eq!(t.next_expiry(), Some(1005));
        t.get_mut("a").unwrap().poll_at = Some(50);
        assert_eq!(t.next_expiry(), Some(50), "a poll set through get_mut");
        t.get_mut("a").unwrap().poll_at = None;
        assert_eq!(t.next_expiry(), Some(1005));
        t.remove("b");
        assert_eq!(t.next_expiry(), Some(1010));
        t.make_room(b"c", &opts(5, 1)).unwrap_err();
        t.finish("a", Status::Completed, Outcome::Result(b"{}".to_vec()), 20, 100).unwrap();
        t.make_room(b"c", &opts(5, 1)).unwrap();
        assert_eq!(t.next_expiry(), None, "the finished task made room");
    }
}
