//! The few OS facts the bench reads: CPU time and memory of a process from
//! /proc, a signal, raw stdin/stdout, a free loopback port.

use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;

extern "C" {
    fn sysconf(name: i32) -> i64;
    fn kill(pid: i32, sig: i32) -> i32;
}

/// `_SC_CLK_TCK` on Linux (all architectures).
const SC_CLK_TCK: i32 = 2;
/// SIGUSR2 on x86_64, aarch64 and arm Linux: asks a `count-alloc` build of
/// mcpx to print its allocation counters to stderr.
pub const SIGUSR2: i32 = 12;

/// A standard stream as an unbuffered file that is never closed.
pub struct Fd(ManuallyDrop<File>);

impl std::io::Read for Fd {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        (&*self.0).read(buf)
    }
}

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

/// Unbuffered stdin (fd 0).
pub fn stdin_file() -> Fd {
    // SAFETY: as above, fd 0.
    Fd(ManuallyDrop::new(unsafe { File::from_raw_fd(0) }))
}

pub fn signal(pid: u32, sig: i32) -> bool {
    // SAFETY: kill(2) has no memory effects on this process.
    unsafe { kill(pid as i32, sig) == 0 }
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
    // SAFETY: sysconf only reads a constant.
    let hz = unsafe { sysconf(SC_CLK_TCK) }.max(1) as u64;
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
