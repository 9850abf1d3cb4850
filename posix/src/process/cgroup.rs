//! Each server in a cgroup of its own, where the host delegates one.
//!
//! When mcpx's own cgroup (cgroup v2) is writable, every server is started in
//! a child cgroup `mcpx-<mcpx's pid>-<server>`, and everything it starts
//! stays there, whatever process group or session it moves to. When mcpx
//! stops, each of its cgroups is killed (`cgroup.kill`) and removed. A killed
//! mcpx (SIGKILL, OOM) cannot do that: its watcher does ([`crate::process::watcher`]),
//! and should the watcher be gone too, the next `mcpx serve` in the same
//! cgroup kills and removes the cgroups whose mcpx is gone ([`setup`]).
//! Without delegation, or with `MCPX_NO_CGROUPS=1`, nothing of this happens,
//! and the process group and the subreaper ([`crate::process::reaper`]) are all there
//! is.

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Where mcpx makes its servers' cgroups: its own cgroup, when writable.
static PARENT: OnceLock<Option<PathBuf>> = OnceLock::new();

/// A server's cgroup, to be entered by the server's process before exec.
pub struct ServerCgroup {
    procs: CString,
}

impl ServerCgroup {
    /// Moves the calling process into this cgroup. Only async-signal-safe
    /// calls: meant for `pre_exec`. A failure leaves the process where it is.
    pub fn enter(&self) {
        // SAFETY: open/write/close on a NUL-terminated path and a static
        // buffer; no allocation, nothing shared with the parent.
        unsafe {
            let fd = libc::open(self.procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd >= 0 {
                // "0" is the writing process itself.
                libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
            }
        }
    }
}

/// Finds mcpx's delegated cgroup (if any, and unless `MCPX_NO_CGROUPS=1`)
/// and ends the cgroups that earlier, killed mcpx processes left in it. Call
/// once, before servers are started.
pub fn setup() {
    let off = std::env::var_os("MCPX_NO_CGROUPS").is_some_and(|v| v == "1");
    let Some(parent) = PARENT.get_or_init(|| if off { None } else { delegated_parent() }) else {
        let why = if off { "MCPX_NO_CGROUPS=1" } else { "no writable cgroup v2 directory" };
        debug!("servers are not put in cgroups of their own ({why})");
        return;
    };
    let me = std::process::id() as i32;
    for name in children(parent) {
        if let Some(owner) = owner_of(&name) {
            if is_stale(owner, me, pid_alive) {
                info!("ending cgroup {name}, left by mcpx {owner} (it was killed)");
                end(&parent.join(&name));
            }
        }
    }
}

/// Where the servers' cgroups are made, if they are (known after [`setup`]).
pub fn parent() -> Option<&'static Path> {
    PARENT.get()?.as_deref()
}

/// The cgroup for server `name`, created if needed; `None` without delegation
/// or when it cannot be created.
pub fn for_server(name: &str) -> Option<ServerCgroup> {
    let parent = parent()?;
    let dir = parent.join(dir_name(std::process::id() as i32, name));
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            debug!("server {name}: cannot create cgroup {}: {e}", dir.display());
            return None;
        }
    }
    let procs = CString::new(dir.join("cgroup.procs").into_os_string().into_encoded_bytes()).ok()?;
    Some(ServerCgroup { procs })
}

/// Kills and removes every cgroup of this mcpx. Call when its servers have
/// been stopped.
pub fn end_all() {
    if let Some(parent) = parent() {
        end_owned(parent, std::process::id() as i32);
    }
}

/// Kills and removes every cgroup under `parent` that mcpx `owner` made;
/// their names.
pub fn end_owned(parent: &Path, owner: i32) -> Vec<String> {
    let names: Vec<String> = children(parent).into_iter().filter(|n| owner_of(n) == Some(owner)).collect();
    for name in &names {
        end(&parent.join(name));
    }
    names
}

/// `mcpx-<pid>-<server>`, the server's name limited to `[A-Za-z0-9_-]`.
fn dir_name(pid: i32, server: &str) -> String {
    let safe: String =
        server.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    format!("mcpx-{pid}-{safe}")
}

/// The pid of the mcpx that made cgroup `name`, if mcpx made it.
fn owner_of(name: &str) -> Option<i32> {
    let (pid, _) = name.strip_prefix("mcpx-")?.split_once('-')?;
    pid.parse().ok().filter(|p: &i32| *p > 0)
}

/// A cgroup of mcpx `owner` is stale when that mcpx is gone, or when its pid
/// is ours (it was made before we started: the pid was reused).
fn is_stale(owner: i32, me: i32, alive: impl Fn(i32) -> bool) -> bool {
    owner == me || !alive(owner)
}

/// The cgroup v2 mount point, from `/proc/self/mountinfo`.
fn cgroup2_mount(mountinfo: &str) -> Option<&str> {
    mountinfo.lines().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        (fs.split_whitespace().next()? == "cgroup2").then(|| mount.split_whitespace().nth(4))?
    })
}

/// This process's cgroup v2 path, from `/proc/self/cgroup` (`0::/path`).
fn own_path(proc_cgroup: &str) -> Option<&str> {
    proc_cgroup.lines().find_map(|l| l.strip_prefix("0::"))
}

fn delegated_parent() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let dir = Path::new(cgroup2_mount(&mountinfo)?).join(own_path(&own)?.trim_start_matches('/'));
    // Writable means delegated: cgroup.kill needs a kernel of 5.14 or later.
    let probe = dir.join(dir_name(std::process::id() as i32, ".probe"));
    std::fs::create_dir(&probe).ok()?;
    let can_kill = probe.join("cgroup.kill").exists();
    let _ = std::fs::remove_dir(&probe);
    can_kill.then_some(dir)
}

fn children(parent: &Path) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(parent) else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| n.starts_with("mcpx-")).collect()
}

/// Kills everything in cgroup `dir` and removes it (waiting up to a second
/// for the killed processes to leave).
fn end(dir: &Path) {
    if let Err(e) = std::fs::write(dir.join("cgroup.kill"), "1") {
        debug!("cannot kill cgroup {}: {e}", dir.display());
    }
    let t0 = Instant::now();
    while let Err(e) = std::fs::remove_dir(dir) {
        if e.kind() == io::ErrorKind::NotFound {
            return;
        }
        if t0.elapsed() > Duration::from_secs(1) {
            warn!("cannot remove cgroup {}: {e}", dir.display());
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks that the pid exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cgroup2_mount_is_found_in_mountinfo() {
        let v1 = "35 25 0:30 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu";
        let hybrid = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";
        let pure = "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate";
        for (mountinfo, want) in [
            (v1.to_string(), None),
            (format!("{v1}\n{hybrid}"), Some("/sys/fs/cgroup/unified")),
            (pure.to_string(), Some("/sys/fs/cgroup")),
            (String::new(), None),
        ] {
            assert_eq!(cgroup2_mount(&mountinfo), want, "{mountinfo}");
        }
    }

    #[test]
    fn the_own_cgroup_is_the_v2_line() {
        for (text, want) in [
            ("0::/system.slice/mcpx.service\n", Some("/system.slice/mcpx.service")),
            ("4:memory:/x\n1:cpu:/\n0::/\n", Some("/")),
            ("4:memory:/x\n", None),
        ] {
            assert_eq!(own_path(text), want, "{text}");
        }
    }

    #[test]
    fn names_carry_the_owner_and_a_safe_server_name() {
        assert_eq!(dir_name(42, "fs"), "mcpx-42-fs");
        assert_eq!(dir_name(42, "a/b c.d"), "mcpx-42-a_b_c_d");
        for (name, want) in [
            ("mcpx-42-fs", Some(42)),
            ("mcpx-42-a-b", Some(42)),
            ("mcpx-x-fs", None),
            ("mcpx-0-fs", None),
            ("mcpx-42", None),
            ("other-42-fs", None),
        ] {
            assert_eq!(owner_of(name), want, "{name}");
        }
    }

    #[test]
    fn a_cgroup_is_stale_when_its_mcpx_is_gone_or_had_our_pid() {
        for (owner, me, alive, stale) in [(7, 9, false, true), (7, 9, true, false), (9, 9, true, true)] {
            assert_eq!(is_stale(owner, me, |_| alive), stale, "{owner} {me} {alive}");
        }
    }
}
