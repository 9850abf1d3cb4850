//! Ends the servers' processes at once when mcpx is killed.
//!
//! A killed mcpx (SIGKILL, the OOM killer) runs no code to stop its servers.
//! So before its first server `mcpx serve` starts a watcher: its own binary
//! again (`/proc/self/exe` with the hidden argument [`ARG`]), in a process
//! group of its own, whose stdin is a pipe that only mcpx can write to. mcpx
//! writes `+<pgid>` when a server starts and `-<pgid>` once the server's
//! process group is gone. The pipe ends when mcpx ends, however it ends; the
//! watcher then sends SIGKILL to each process group still listed, kills and
//! removes mcpx's server cgroups (module `cgroup`), says so in one log line
//! and exits. After a normal stop mcpx has done all of that itself and the
//! watcher exits quietly.
//!
//! It ignores SIGINT, SIGTERM and SIGHUP: only the end of the pipe ends it.
//! Killed first, it can do nothing; the next `mcpx serve` then ends the
//! cgroups left behind (`cgroup::setup`).

use std::fs::File;
use std::io::{self, BufRead, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// The hidden first argument that makes mcpx a watcher.
pub const ARG: &str = "__watcher";

/// Most process groups a watcher keeps; servers beyond them rely on their
/// cgroups.
const MAX_GROUPS: usize = 512;

/// The write end of the watcher's pipe (non-blocking), once started.
static PIPE: OnceLock<File> = OnceLock::new();
/// Set once telling the watcher failed (and was logged).
static LOST: AtomicBool = AtomicBool::new(false);

/// Starts this mcpx's watcher; `cgroups` is where the servers' cgroups are
/// made, if they are. Call once, before servers are started.
pub fn start(cgroups: Option<&Path>) {
    match spawn(cgroups) {
        Ok(pipe) => {
            let _ = PIPE.set(pipe);
        }
        Err(e) => warn!("cannot start the watcher that ends the servers' processes if mcpx is killed: {e}"),
    }
}

fn spawn(cgroups: Option<&Path>) -> io::Result<File> {
    let (read, write) = pipe()?;
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0("mcpx").arg(ARG).arg(std::process::id().to_string()).args(cgroups);
    // Its own process group: a signal to mcpx's group (Ctrl-C, `kill -9 %1`)
    // does not reach it.
    cmd.stdin(read).stdout(Stdio::null()).process_group(0);
    let child = cmd.spawn()?;
    crate::process::reaper::spare(child.id() as i32);
    Ok(File::from(write))
}

/// A pipe, both ends close-on-exec, the write end non-blocking (a stuck
/// watcher must not stop mcpx).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`, which has room for them.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just opened and are owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on a descriptor we own; it only changes its flags.
    if unsafe { libc::fcntl(fds[1], libc::F_SETFL, libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((read, write))
}

/// Has the watcher kill process group `pgid` if mcpx is killed.
pub fn add_group(pgid: i32) {
    tell('+', pgid);
}

/// Takes process group `pgid` off the watcher's list (it is gone).
pub fn remove_group(pgid: i32) {
    tell('-', pgid);
}

fn tell(op: char, pgid: i32) {
    let Some(mut pipe) = PIPE.get() else { return };
    // Shorter than PIPE_BUF: written whole or not at all.
    if let Err(e) = pipe.write_all(format!("{op}{pgid}\n").as_bytes()) {
        if !LOST.swap(true, Ordering::Relaxed) {
            warn!("cannot tell the watcher about process group {pgid} ({e}): if mcpx is killed, what its servers started may outlive it");
        }
    }
}

/// The watcher: `<mcpx's pid> [<cgroup directory>]`, the pipe on stdin.
pub fn main(args: &[String]) -> i32 {
    ignore_stop_signals();
    close_other_fds();
    name_self();
    let Some(mcpx) = args.first().and_then(|a| a.parse::<i32>().ok()) else {
        eprintln!("mcpx: {ARG} is for mcpx's own use");
        return 2;
    };
    let mut list = KillList::default();
    for line in io::stdin().lock().split(b'\n') {
        match line {
            Ok(line) => list.apply(&line),
            Err(_) => break,
        }
    }
    let groups = list.kill();
    let cgroups = args.get(1).map(|dir| crate::process::cgroup::end_owned(Path::new(dir), mcpx)).unwrap_or_default();
    if !groups.is_empty() || !cgroups.is_empty() {
        warn!("mcpx {mcpx} ended without stopping its servers; killed {}", killed(&groups, &cgroups));
        crate::log::flush(Duration::from_secs(1));
    }
    0
}

/// `process groups 7, 9 and cgroups mcpx-5-a`, either part only when the
/// other is empty.
fn killed(groups: &[i32], cgroups: &[String]) -> String {
    let groups = groups.iter().map(i32::to_string).collect::<Vec<_>>().join(", ");
    match (groups.is_empty(), cgroups.is_empty()) {
        (false, false) => format!("process groups {groups} and cgroups {}", cgroups.join(", ")),
        (false, true) => format!("process groups {groups}"),
        _ => format!("cgroups {}", cgroups.join(", ")),
    }
}

/// Only the end of the pipe ends the watcher. It may also write its line to
/// the terminal from its background process group (SIGTTOU).
fn ignore_stop_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGTTOU] {
        // SAFETY: setting a signal's disposition to SIG_IGN installs no handler.
        unsafe {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
}

/// Closes whatever mcpx inherited without close-on-exec: the watcher holds
/// only its stdin, stdout and stderr (Linux 5.9 or later; older ones keep
/// them).
fn close_other_fds() {
    // SAFETY: close_range closes descriptors 3 and up; none of them is owned
    // by anything in this process yet.
    unsafe {
        libc::syscall(libc::SYS_close_range, 3, libc::c_uint::MAX, 0);
    }
}

/// `mcpx-watcher` in `top` and `ps -e` (not `exe`, from `/proc/self/exe`).
fn name_self() {
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"mcpx-watcher".as_ptr() as libc::c_ulong, 0, 0, 0);
    }
}

/// The process groups to kill, as mcpx listed them.
#[derive(Default)]
struct KillList(Vec<i32>);

impl KillList {
    /// One line from mcpx: `+<pgid>` or `-<pgid>`; anything else is ignored,
    /// and so is a group past [`MAX_GROUPS`].
    fn apply(&mut self, line: &[u8]) {
        let Some((&op, num)) = line.split_first() else { return };
        let Some(pgid) = std::str::from_utf8(num).ok().and_then(|n| n.parse::<i32>().ok()).filter(|&p| p > 1) else {
            return;
        };
        match op {
            b'+' if self.0.len() < MAX_GROUPS && !self.0.contains(&pgid) => self.0.push(pgid),
            b'-' => self.0.retain(|&p| p != pgid),
            _ => {}
        }
    }

    /// SIGKILL to each group; those that were there.
    fn kill(&self) -> Vec<i32> {
        self.0.iter().copied().filter(|&pgid| crate::process::reaper::signal_group(pgid, libc::SIGKILL)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(lines: &[&str]) -> Vec<i32> {
        let mut l = KillList::default();
        for line in lines {
            l.apply(line.as_bytes());
        }
        l.0
    }

    #[test]
    fn the_list_follows_starts_and_ends() {
        assert_eq!(list(&["+10", "+20", "-10", "+30", "+20"]), [20, 30]);
        assert_eq!(list(&["-10", "+10", "-10"]), [] as [i32; 0]);
    }

    #[test]
    fn the_list_takes_nothing_that_names_more_than_one_group() {
        assert_eq!(list(&["+1", "+0", "+-5", "+x", "", "*7", "+ 8", "+9"]), [9]);
    }

    #[test]
    fn the_list_is_bounded() {
        let lines: Vec<String> = (2..2 + MAX_GROUPS as i32 + 10).map(|p| format!("+{p}")).collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let kept = list(&refs);
        assert_eq!(kept.len(), MAX_GROUPS);
        assert_eq!(kept.last(), Some(&(MAX_GROUPS as i32 + 1)));
    }

    #[test]
    fn the_log_line_names_what_was_killed() {
        let cg = ["mcpx-5-a".to_string(), "mcpx-5-b".to_string()];
        assert_eq!(killed(&[7, 9], &cg), "process groups 7, 9 and cgroups mcpx-5-a, mcpx-5-b");
        assert_eq!(killed(&[7], &[]), "process groups 7");
        assert_eq!(killed(&[], &cg[..1]), "cgroups mcpx-5-a");
    }
}
