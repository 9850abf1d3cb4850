//! The few OS facts the bench reads: CPU time and memory of a process from
//! /proc, a signal, raw stdout, a free loopback port.

use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;

/// Asks a `count-alloc` build of mcpx to print its allocation counters to
/// stderr.
pub const SIGUSR2: i32 = libc::SIGUSR2;

/// Standard output as an unbuffered file that is never closed.
pub struct Fd(ManuallyDrop<File>);

impl std::io::Write for Fd {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        (&*self.0).write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Unbuffered stdout (fd 1).
pub fn stdout_file() -> Fd {
    // SAFETY: fd 1 is open for the life of the process and never closed here.
    Fd(ManuallyDrop::new(unsafe { File::from_raw_fd(1) }))
}

/// Sends `sig` to process `pid`; false if it is gone or the pid does not fit.
pub fn signal(pid: u32, sig: i32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill(2) takes plain integers and has no memory effects on
    // this process.
    unsafe { libc::kill(pid, sig) == 0 }
}

/// User + system CPU time of `pid` in microseconds (all its threads, not
/// its children), at the kernel's tick resolution.
pub fn cpu_us(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut f = rest.split(' ');
    // rest starts at field 3 (state); utime is field 14, stime field 15.
    let utime: u64 = f.nth(11)?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    // SAFETY: sysconf(3) takes an integer name and only reads a constant.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(0).max(1);
    Some((utime + stime) * 1_000_000 / hz)
}

/// A `Vm*` line of /proc/<pid>/status, in KiB (e.g. "VmRSS", "VmHWM").
pub fn vm_kib(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| {
        let v = l.strip_prefix(key)?.strip_prefix(':')?;
        v.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

/// Resets the peak RSS (VmHWM) of `pid` to its current RSS, so that the
/// next reading is the peak of what follows. False where the kernel or
/// permissions do not allow it.
pub fn reset_peak_rss(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), b"5").is_ok()
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(l.local_addr()?.port())
}
