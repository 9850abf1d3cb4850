//! Descendants that leave their server's process group.
//!
//! A server may start processes that escape its process group (a daemon:
//! double fork and `setsid`), so stopping the group misses them. On Linux,
//! `mcpx serve` makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`):
//! such an orphan is re-parented to mcpx instead of init. mcpx then reaps the
//! ones that end while it runs ([`start_sweeping`], [`reap_orphans`]), and when every server has
//! been stopped it ends the rest: SIGTERM, a grace period, SIGKILL
//! ([`end_orphans`]).
//!
//! What this does not cover: when mcpx itself is killed with SIGKILL, nothing
//! of mcpx runs any more. Each server's direct child then gets SIGTERM from
//! the kernel (`PR_SET_PDEATHSIG`, set by the supervisor), and the watcher
//! (module `watcher`) kills the servers' process groups and cgroups; orphans
//! that left their group, without cgroups, live on.
//!
//! The supervisor's own children are registered ([`Registered`]) so the
//! reaper never takes an exit status their waiter is waiting for. The
//! watcher is spared ([`spare`]): [`end_orphans`] leaves it running.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// A child that outlives the servers on purpose (the watcher), 0 if none.
static SPARED: AtomicI32 = AtomicI32::new(0);

/// How often ended orphans are reaped while mcpx runs.
const REAP_EVERY: Duration = Duration::from_secs(2);

thread_local! {
    static DIRECT: RefCell<HashSet<i32>> = RefCell::new(HashSet::new());
    static SWEEPING: Cell<bool> = const { Cell::new(false) };
}

/// Starts, once per thread and only when this process is a subreaper, a
/// task on `ex` that reaps ended orphans every [`REAP_EVERY`].
pub fn start_sweeping(ex: &crate::process::exec::Executor) {
    if !ENABLED.load(Ordering::Relaxed) || SWEEPING.with(|s| s.replace(true)) {
        return;
    }
    // An alarm of its own, not a reactor timer (see `alarm`).
    let alarm = match super::alarm::Alarm::new() {
        Ok(a) => a,
        Err(e) => return debug!("cannot sweep orphans: no timer: {e}"),
    };
    ex.spawn(async move {
        loop {
            alarm.set(Some(std::time::Instant::now() + REAP_EVERY));
            alarm.rung().await;
            reap_orphans();
        }
    })
    .detach();
}

/// Makes this process the subreaper of its descendants (Linux; elsewhere a
/// no-op that returns false). Call once, before servers are started.
pub fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes plain integers and
        // changes only this process's attributes.
        let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
        let ok = r == 0;
        ENABLED.store(ok, Ordering::Relaxed);
        if !ok {
            debug!("cannot become a child subreaper: {}", std::io::Error::last_os_error());
        }
        ok
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// A direct child whose exit status belongs to its own waiter, for as long
/// as this value lives.
pub struct Registered(i32);

impl Registered {
    pub fn new(pid: i32) -> Registered {
        DIRECT.with(|d| d.borrow_mut().insert(pid));
        Registered(pid)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        DIRECT.with(|d| d.borrow_mut().remove(&self.0));
    }
}

/// Leaves child `pid` running through [`end_orphans`] (it is still reaped
/// once it has ended).
pub fn spare(pid: i32) {
    SPARED.store(pid, Ordering::Relaxed);
}

/// Reaps orphans that have ended (zombies re-parented to mcpx).
pub fn reap_orphans() {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    for (pid, state) in orphans() {
        if state == 'Z' {
            reap(pid);
        }
    }
}

/// Ends every orphan still running: SIGTERM, then SIGKILL after `grace`, and
/// reaps them. Call when every server has been stopped.
pub fn end_orphans(grace: Duration) {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    let deadline = Instant::now() + grace;
    let mut termed = HashSet::new();
    loop {
        let left = orphans();
        if left.is_empty() {
            return;
        }
        let late = Instant::now() >= deadline;
        for (pid, state) in left {
            if state == 'Z' {
                reap(pid);
            } else if late {
                warn!("process {pid}, left behind by a server, ignored SIGTERM; sending SIGKILL");
                signal(pid, libc::SIGKILL);
            } else if termed.insert(pid) {
                info!("stopping process {pid}, left behind by a server (it left the server's process group)");
                signal(pid, libc::SIGTERM);
            }
        }
        if late && Instant::now() >= deadline + Duration::from_secs(2) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(pid: i32, sig: libc::c_int) {
    if pid > 1 {
        // SAFETY: kill has no memory-safety preconditions; pid > 1 names one process.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

fn reap(pid: i32) {
    let mut status = 0;
    // SAFETY: waitpid writes only to `status`, a valid local.
    unsafe {
        libc::waitpid(pid, &mut status, libc::WNOHANG);
    }
}

/// This process's children that no waiter of ours owns, with their state
/// letter (`Z`: ended, not yet reaped); the spared one only once ended.
fn orphans() -> Vec<(i32, char)> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let direct = DIRECT.with(|d| d.borrow().clone());
    let spared = SPARED.load(Ordering::Relaxed);
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| !direct.contains(pid))
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // "pid (comm) state ppid ...": comm may hold anything, so split after the last ')'.
            let mut f = stat.rsplit_once(')')?.1.split_whitespace();
            let state = f.next()?.chars().next()?;
            let ppid: i32 = f.next()?.parse().ok()?;
            (ppid == me && (pid != spared || state == 'Z')).then_some((pid, state))
        })
        .collect()
}

/// Sends `sig` to process group `pgid`; whether the group was there.
pub fn signal_group(pgid: i32, sig: libc::c_int) -> bool {
    // SAFETY: kill has no memory-safety preconditions. A negative pid
    // names the process group; pgid > 1 never names "every process".
    pgid > 1 && unsafe { libc::kill(-pgid, sig) } == 0
}
