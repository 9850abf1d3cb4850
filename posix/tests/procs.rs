//! Processes, environment and logs, end to end: the real `mcpx serve`, real
//! children (`sh` scripts in front of `mcpx example-server`), real pipes and
//! signals.

use std::ffi::CString;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;
use support::{pid_alive, MCPX};

use support::Scratch as Dir;

impl Dir {
    fn new(test: &str) -> Dir {
        Dir::create(&format!("procs-{test}"), &[])
    }
}

/// A server that runs `script` in sh, then becomes `mcpx example-server`.
fn server(script: &str) -> Value {
    json!({"command": "sh", "args": ["-c", format!("{script}\nexec '{MCPX}' example-server")]})
}

/// `mcpx serve` in `dir` with `env` added, its stderr as given.
fn mcpx(dir: &Dir, args: &[&str], env: &[(&str, &str)], stderr: Stdio) -> Child {
    dir.mcpx().arg("serve").args(args).envs(env.iter().copied()).stderr(stderr).spawn().unwrap()
}

/// A JSON-RPC client on mcpx's stdin/stdout.
struct Client {
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next: u64,
}

impl Client {
    fn new(child: &mut Child) -> Client {
        let out: ChildStdout = child.stdout.take().unwrap();
        Client { stdin: child.stdin.take(), lines: support::lines(out), next: 1 }
    }

    fn send(&mut self, msg: &Value) {
        let w = self.stdin.as_mut().expect("stdin open");
        w.write_all(format!("{msg}\n").as_bytes()).unwrap();
        w.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| panic!("no answer to {method} within 30 s"));
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    }

    fn initialize(&mut self) {
        let r = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        assert!(r["result"]["protocolVersion"].is_string(), "{r}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    fn echo(&mut self, tool: &str, text: &str) {
        let r = self.request("tools/call", json!({"name": tool, "arguments": {"text": text}}));
        assert_eq!(r["result"]["content"][0]["text"], text, "{r}");
    }

    fn close(&mut self) {
        self.stdin = None;
    }
}

fn wait_exit(child: &mut Child, limit: Duration) -> i32 {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code().unwrap_or(-1);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    panic!("mcpx did not exit within {limit:?}");
}

fn read_stderr(child: &mut Child) -> std::thread::JoinHandle<String> {
    let mut err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    })
}

/// Waits (bounded) for a file to hold a pid.
fn read_pid(path: &Path) -> i32 {
    for _ in 0..500 {
        if let Some(pid) = std::fs::read_to_string(path).ok().and_then(|s| s.trim().parse().ok()) {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no pid in {}", path.display());
}

fn gone_within(pid: i32, limit: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if !pid_alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn kill(pid: i32, sig: &str) {
    let _ = Command::new("kill").args([sig, &pid.to_string()]).status();
}

/// The environment a child saw, from the file its script wrote.
fn env_file(path: &Path) -> Vec<String> {
    for _ in 0..500 {
        if let Ok(s) = std::fs::read_to_string(path) {
            if s.ends_with("END\n") {
                return s.lines().map(String::from).collect();
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{} was not written", path.display());
}

// covers: authz-no-token-passthrough
#[test]
fn children_never_inherit_mcpx_secrets() {
    let dir = Dir::new("env");
    let dump = |f: &str| format!("env > '{}.tmp'; echo END >> '{0}.tmp'; mv '{0}.tmp' '{0}'", dir.path(f).display());
    let mut strict = server(&dump("strict.env"));
    strict["inheritEnv"] = json!(false);
    strict["envAllow"] = json!(["GITHUB_*"]);
    strict["env"] = json!({"HANDED_OVER": "${MCPX_TOKEN}"});
    dir.config(&json!({
        "mcpServers": {"open": server(&dump("open.env")), "strict": strict},
        "auth": {"bearer": "${AUTH_SECRET}"}
    }));
    let env = [
        ("MCPX_TOKEN", "tok-s3cret"),
        ("MCPX_STATE_KEY", "key-s3cret"),
        ("MCPX_ANYTHING", "own"),
        ("AUTH_SECRET", "auth-s3cret"),
        ("HARMLESS", "h"),
        ("GITHUB_ORG", "g"),
    ];
    let mut m = mcpx(&dir, &[], &env, Stdio::null());
    let mut c = Client::new(&mut m);
    c.initialize();
    let open = env_file(&dir.path("open.env"));
    let strict = env_file(&dir.path("strict.env"));
    c.close();
    assert_eq!(wait_exit(&mut m, Duration::from_secs(15)), 0);

    let has = |e: &[String], kv: &str| e.iter().any(|l| l == kv);
    let names = |e: &[String]| e.iter().filter_map(|l| l.split_once('=')).map(|(k, _)| k.to_string()).collect::<Vec<_>>();
    // Default: everything but mcpx's own variables and what the config reads as a secret.
    assert!(has(&open, "HARMLESS=h") && has(&open, "GITHUB_ORG=g"), "{open:?}");
    assert!(open.iter().any(|l| l.starts_with("PATH=")), "{open:?}");
    for e in [&open, &strict] {
        assert!(!e.iter().any(|l| l.contains("s3cret") && !l.starts_with("HANDED_OVER=")), "{e:?}");
        assert!(!names(e).iter().any(|k| k.starts_with("MCPX_")), "{e:?}");
    }
    // inheritEnv false: the safe base and the allow list, plus its own env.
    assert!(has(&strict, "GITHUB_ORG=g") && has(&strict, "HANDED_OVER=tok-s3cret"), "{strict:?}");
    assert!(!has(&strict, "HARMLESS=h"), "{strict:?}");
    assert!(strict.iter().any(|l| l.starts_with("PATH=")) && strict.iter().any(|l| l.starts_with("HOME=")), "{strict:?}");
}

/// `2026-12-01T12:06:06.123Z`: RFC 3339, UTC, milliseconds.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && b[23] == b'Z'
        && [0..4, 5..7, 8..10, 11..13, 14..16, 17..19, 20..23].iter().all(|r| b[r.clone()].iter().all(u8::is_ascii_digit))
}

/// `2026-12-01T12:06:06.123Z mcpx: ...`
fn starts_with_timestamp(line: &str) -> bool {
    line.get(..24).is_some_and(is_timestamp) && line[24..].starts_with(" mcpx: ")
}

// covers: stdio-client-may-capture-stderr, stdio-client-stderr-not-error, stdio-server-stdout-only-mcp
#[test]
fn a_child_cannot_forge_log_lines_and_every_line_has_a_timestamp() {
    let dir = Dir::new("forge");
    // On stderr: a line that tries to erase itself and pose as mcpx's own
    // error, with a bell and a byte that is not UTF-8; on stdout, a banner
    // with an escape sequence.
    let script = r"printf '\033[2K\rmcpx: error: forged by the child\007\377\n' >&2
printf 'banner \033[31mred\033[0m\n'";
    dir.config(&json!({"mcpServers": {"liar": server(script)}, "logLevel": "debug"}));
    let mut m = mcpx(&dir, &[], &[], Stdio::piped());
    let err = read_stderr(&mut m);
    let mut c = Client::new(&mut m);
    c.initialize();
    c.echo("liar__echo", "still works");
    c.close();
    assert_eq!(wait_exit(&mut m, Duration::from_secs(15)), 0);
    let err = err.join().unwrap();

    assert!(!err.bytes().any(|b| b == 0x1b || b == b'\r' || b == 0x07), "raw control bytes in the log:\n{err}");
    assert!(err.contains(r"[liar] \x1b[2K\rmcpx: error: forged by the child\x07\xff"), "{err}");
    assert!(err.contains(r"banner \x1b[31mred\x1b[0m"), "{err}");
    for line in err.lines() {
        // Continuation lines of a multi-line record are indented.
        assert!(starts_with_timestamp(line) || line.starts_with("    "), "line without a timestamp: {line:?}\n{err}");
        assert!(!line.contains("mcpx: error: forged") || line.contains("[liar]"), "{line:?}");
    }
}

/// Times `n` echo calls through server `tool`.
fn time_calls(c: &mut Client, tool: &str, n: usize) -> Duration {
    let t0 = Instant::now();
    for i in 0..n {
        c.echo(tool, &format!("call {i}"));
    }
    t0.elapsed()
}

/// The time of `calls` echo calls to server `healthy` while server `other`
/// runs `other` first, everything logged at debug; with `read_stderr`
/// false, nobody reads mcpx's stderr (a full pipe: every write would block).
fn calls_beside(dir: &Dir, other: &str, read_stderr: bool, calls: usize) -> Duration {
    dir.config(&json!({"mcpServers": {"healthy": server(":"), "other": server(other)}, "logLevel": "debug"}));
    let mut m = mcpx(dir, &[], &[], Stdio::piped());
    let mut stderr = m.stderr.take().unwrap();
    // Unread, the pipe stays open (closing it would make writes fail, not block).
    let (reader, _unread) = if read_stderr {
        (Some(std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()))), None)
    } else {
        (None, Some(stderr))
    };
    let mut c = Client::new(&mut m);
    c.initialize();
    time_calls(&mut c, "healthy__echo", 5);
    let took = time_calls(&mut c, "healthy__echo", calls);
    c.close();
    // Exit does not hang on a blocked log either.
    assert_eq!(wait_exit(&mut m, Duration::from_secs(20)), 0);
    drop(reader.map(|r| r.join()));
    took
}

#[test]
fn a_stderr_flood_with_nobody_reading_mcpx_stderr_does_not_slow_other_servers() {
    const CALLS: usize = 40;
    let dir = Dir::new("flood");
    let baseline = calls_beside(&dir, ":", true, CALLS);
    // 100 MB of stderr lines from `other`.
    let flood = "yes 'flooding stderr with a line that is long enough to fill a pipe quickly' | head -c 100000000 >&2 &";
    let flooded = calls_beside(&dir, flood, false, CALLS);
    let bound = baseline.max(Duration::from_millis(100)) * 50;
    assert!(flooded <= bound, "{CALLS} calls took {flooded:?} during the flood against {baseline:?} without");
}

/// A server that leaves a daemon behind (double fork and setsid, so it is
/// in neither the server's process group nor its session), writes its own
/// pid and the daemon's, then serves.
fn daemonizing(dir: &Dir) -> Value {
    let (me, daemon) = (dir.path("server.pid"), dir.path("daemon.pid"));
    server(&format!(
        "echo $$ > '{}'; (setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > '{}')",
        me.display(),
        daemon.display()
    ))
}

#[test]
fn a_daemon_left_by_a_server_is_ended_when_mcpx_exits() {
    for how in ["end of input", "SIGTERM"] {
        let dir = Dir::new(if how == "SIGTERM" { "orphan-term" } else { "orphan-eof" });
        dir.config(&json!({"mcpServers": {"d": daemonizing(&dir)}}));
        let mut m = mcpx(&dir, &[], &[], Stdio::null());
        let mut c = Client::new(&mut m);
        c.initialize();
        let daemon = read_pid(&dir.path("daemon.pid"));
        assert!(pid_alive(daemon), "{how}: the daemon should run while mcpx does");
        if how == "SIGTERM" {
            kill(m.id() as i32, "-TERM");
        } else {
            c.close();
        }
        assert_eq!(wait_exit(&mut m, Duration::from_secs(20)), 0, "{how}");
        let gone = gone_within(daemon, Duration::from_secs(5));
        if !gone {
            kill(daemon, "-KILL");
        }
        assert!(gone, "{how}: daemon {daemon} survived mcpx");
    }
}

/// A cgroup v2 of a test's own, under the test process's cgroup, where the
/// host lets it make one with `cgroup.kill` (Linux 5.14), and so lets mcpx
/// started in it make its servers' cgroups. mcpx runs in it so that the
/// stale cgroups another test's `mcpx serve` ends at its start are never
/// this test's. Dropped, it is killed and removed with what is left in it.
struct TestCgroup(Option<PathBuf>);

impl TestCgroup {
    fn new(test: &str) -> TestCgroup {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mount = mountinfo.lines().find(|l| l.contains(" - cgroup2 ")).and_then(|l| l.split(' ').nth(4));
        let path = own.lines().find_map(|l| l.strip_prefix("0::"));
        let (Some(mount), Some(path)) = (mount, path) else { return TestCgroup(None) };
        let dir =
            Path::new(mount).join(path.trim_start_matches('/')).join(format!("procs-{}-{test}", std::process::id()));
        if std::fs::create_dir(&dir).is_err() {
            return TestCgroup(None);
        }
        let cg = TestCgroup(Some(dir));
        if cg.file("cgroup.kill").is_some_and(|f| f.exists()) {
            cg
        } else {
            TestCgroup(None)
        }
    }

    fn delegated(&self) -> bool {
        self.0.is_some()
    }

    fn file(&self, name: &str) -> Option<PathBuf> {
        self.0.as_ref().map(|d| d.join(name))
    }

    /// `cmd`, to start in this cgroup.
    fn enter(&self, cmd: &mut Command) {
        let Some(procs) = self.file("cgroup.procs") else { return };
        let procs = CString::new(procs.into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: between fork and exec only open/write/close, on memory
        // prepared before the fork.
        unsafe {
            cmd.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 || libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(fd);
                Ok(())
            });
        }
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        let (Some(dir), Some(kill)) = (&self.0, self.file("cgroup.kill")) else { return };
        let _ = std::fs::write(kill, "1");
        let subdirs = std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| p.is_dir());
        for d in subdirs.chain([dir.clone()]) {
            let t0 = Instant::now();
            while std::fs::remove_dir(&d).is_err_and(|e| e.kind() != std::io::ErrorKind::NotFound)
                && t0.elapsed() < Duration::from_secs(2)
            {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// Whether `pid` runs in a cgroup mcpx made for a server.
fn in_server_cgroup(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("0::") && l.contains("/mcpx-")))
}

/// mcpx's watcher: the process started as `mcpx __watcher <mcpx's pid> …`.
fn watcher_of(mcpx: u32) -> Option<i32> {
    let want = ["mcpx".to_string(), "__watcher".to_string(), mcpx.to_string()];
    std::fs::read_dir("/proc").ok()?.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).find(|pid: &i32| {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<String> = cmdline.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        args.starts_with(&want)
    })
}

/// `mcpx serve` in `cgroup` with `env` added, stdin and stdout piped.
fn mcpx_in(cgroup: &TestCgroup, dir: &Dir, env: &[(&str, &str)]) -> Child {
    let mut cmd = dir.mcpx();
    cmd.arg("serve").envs(env.iter().copied()).stderr(Stdio::null());
    cgroup.enter(&mut cmd);
    cmd.spawn().unwrap()
}

/// `mcpx serve` (in a cgroup of the test's own) with a server `g` that
/// leaves a `sleep` in its process group and a server `d` that leaves a
/// daemon (setsid), both running.
struct Leaky {
    mcpx: Child,
    client: Client,
    server: i32,
    sleep: i32,
    daemon: i32,
    watcher: i32,
    cgroup: TestCgroup,
}

impl Leaky {
    fn start(test: &str, dir: &Dir, env: &[(&str, &str)]) -> Leaky {
        let (me, sleeper) = (dir.path("g.pid"), dir.path("sleep.pid"));
        let script = format!(
            "echo $$ > '{}'; sleep 600 </dev/null >/dev/null 2>&1 & echo $! > '{}'",
            me.display(),
            sleeper.display()
        );
        dir.config(&json!({"mcpServers": {"g": server(&script), "d": daemonizing(dir)}}));
        let cgroup = TestCgroup::new(test);
        let mut mcpx = mcpx_in(&cgroup, dir, env);
        let mut client = Client::new(&mut mcpx);
        client.initialize();
        let watcher = watcher_of(mcpx.id()).expect("mcpx has a watcher");
        let (server, sleep, daemon) = (read_pid(&me), read_pid(&sleeper), read_pid(&dir.path("daemon.pid")));
        Leaky { mcpx, client, server, sleep, daemon, watcher, cgroup }
    }

    fn sigkill(&mut self) {
        self.mcpx.kill().unwrap();
        let _ = self.mcpx.wait();
    }

    /// Whether the sleep and the daemon are in cgroups mcpx made.
    fn placed(&self) -> [bool; 2] {
        [in_server_cgroup(self.sleep), in_server_cgroup(self.daemon)]
    }

    /// Which of the sleep and the daemon are gone within `limit`.
    fn gone_within(&self, limit: Duration) -> [bool; 2] {
        [gone_within(self.sleep, limit), gone_within(self.daemon, limit)]
    }
}

impl Drop for Leaky {
    fn drop(&mut self) {
        let _ = self.mcpx.kill();
        let _ = self.mcpx.wait();
        for p in [self.server, self.sleep, self.daemon, self.watcher].into_iter().filter(|&p| pid_alive(p)) {
            kill(p, "-KILL");
        }
    }
}

/// A SIGKILL of mcpx, with servers in cgroups of their own where the host
/// delegates them: the watcher ends every process they started at once, in
/// their process group or not; without delegation, as without cgroups.
#[test]
fn after_sigkill_of_mcpx_the_watcher_ends_what_its_servers_started() {
    let dir = Dir::new("kill-watched");
    let mut l = Leaky::start("kill-watched", &dir, &[]);
    let cgroups = l.cgroup.delegated();
    let placed = l.placed();
    l.sigkill();
    let server_gone = gone_within(l.server, Duration::from_secs(2));
    let gone = l.gone_within(Duration::from_secs(2));
    let watcher_gone = gone_within(l.watcher, Duration::from_secs(2));
    assert_eq!(placed, [cgroups; 2], "grandchildren in a server's cgroup iff the host delegates ({cgroups})");
    assert!(server_gone, "server process {} survived SIGKILL of mcpx", l.server);
    assert_eq!(gone, [true, cgroups], "sleep, daemon: ended at once (the daemon only with cgroups: {cgroups})");
    assert!(watcher_gone, "the watcher {} did not exit", l.watcher);
}

/// Without cgroups (`MCPX_NO_CGROUPS=1`) the watcher kills the servers'
/// process groups; a process that left its group (setsid) survives.
#[test]
fn after_sigkill_of_mcpx_without_cgroups_the_watcher_ends_the_servers_process_groups() {
    let dir = Dir::new("kill-watched-nocg");
    let mut l = Leaky::start("kill-watched-nocg", &dir, &[("MCPX_NO_CGROUPS", "1")]);
    let placed = l.placed();
    l.sigkill();
    let sleep_gone = gone_within(l.sleep, Duration::from_secs(2));
    let watcher_gone = gone_within(l.watcher, Duration::from_secs(2));
    assert_eq!(placed, [false; 2], "no cgroups with MCPX_NO_CGROUPS=1");
    assert!(sleep_gone, "sleep {} in the server's process group survived", l.sleep);
    assert!(watcher_gone, "the watcher {} did not exit", l.watcher);
    assert!(pid_alive(l.daemon), "the daemon {} should outlive mcpx without cgroups", l.daemon);
}

/// Where the watcher is killed before mcpx, what the servers started
/// survives the SIGKILL of mcpx; where mcpx can put servers in cgroups of
/// their own, the next `mcpx serve` ends it.
#[test]
fn after_sigkill_of_mcpx_and_its_watcher_grandchildren_end_with_the_next_start_where_cgroups_allow() {
    let dir = Dir::new("kill-grandchildren");
    let mut l = Leaky::start("kill-grandchildren", &dir, &[]);
    let cgroups = l.cgroup.delegated();
    kill(l.watcher, "-KILL");
    assert!(gone_within(l.watcher, Duration::from_secs(2)), "watcher {} survived SIGKILL", l.watcher);
    l.sigkill();
    let server_gone = gone_within(l.server, Duration::from_secs(1));
    let survived = [pid_alive(l.sleep), pid_alive(l.daemon)];
    // The next start, with any config.
    dir.config(&json!({"mcpServers": {}}));
    let mut next = mcpx_in(&l.cgroup, &dir, &[]);
    let mut c = Client::new(&mut next);
    c.initialize();
    let ended = l.gone_within(Duration::from_secs(5));
    c.close();
    let _ = wait_exit(&mut next, Duration::from_secs(15));
    assert!(server_gone, "server process {} survived SIGKILL of mcpx", l.server);
    assert_eq!(survived, [true; 2], "grandchildren survive a SIGKILL of mcpx and its watcher");
    assert_eq!(ended, [cgroups; 2], "grandchildren end with the next start iff the host delegates cgroups ({cgroups})");
}

/// On a normal stop mcpx ends everything itself; its watcher, which holds
/// nothing but its pipe and stdio and sits in no server's cgroup, exits
/// after it.
#[test]
fn the_watcher_ends_with_mcpx_and_nothing_is_left() {
    let dir = Dir::new("watcher-term");
    let mut l = Leaky::start("watcher-term", &dir, &[]);
    let mut fds: Vec<String> = std::fs::read_dir(format!("/proc/{}/fd", l.watcher))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    fds.sort();
    let stdin = std::fs::read_link(format!("/proc/{}/fd/0", l.watcher)).unwrap_or_default();
    let in_cgroup = in_server_cgroup(l.watcher);
    kill(l.mcpx.id() as i32, "-TERM");
    assert_eq!(wait_exit(&mut l.mcpx, Duration::from_secs(20)), 0);
    l.client.close();
    let left: Vec<i32> = [l.watcher, l.server, l.sleep, l.daemon]
        .into_iter()
        .filter(|&p| !gone_within(p, Duration::from_secs(3)))
        .collect();
    assert!(left.is_empty(), "still running after mcpx exited: {left:?} (watcher {})", l.watcher);
    assert_eq!(fds, ["0", "1", "2"], "the watcher's descriptors");
    assert!(stdin.to_string_lossy().starts_with("pipe:"), "its stdin: {}", stdin.display());
    assert!(!in_cgroup, "the watcher is in a server's cgroup");
}

fn http_get(addr: &str, path: &str) -> Value {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (_, body) = out.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap()
}

// covers: stdio-client-restart-crashed-server
#[test]
fn a_missing_command_is_given_up_after_max_restarts_and_status_says_so() {
    let dir = Dir::new("giveup");
    dir.config(&json!({"mcpServers": {
        "ghost": {"command": "/nonexistent/mcp-server", "maxRestarts": 2},
        "fine": server(":")
    }}));
    let mut m = mcpx(&dir, &["--http", "127.0.0.1:0"], &[], Stdio::piped());
    let lines = support::lines(m.stderr.take().unwrap());
    let mut seen = Vec::new();
    let mut addr = None;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !seen.iter().any(|l: &String| l.contains("gave up after")) {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no give-up line:\n{}", seen.join("\n")));
        if let Some(rest) = line.split("serving MCP over HTTP at http://").nth(1) {
            addr = Some(rest.trim_end_matches("/mcp").to_string());
        }
        seen.push(line);
    }
    let restarts = seen.iter().filter(|l| l.contains("server ghost: restarting in")).count();
    assert_eq!(restarts, 2, "{}", seen.join("\n"));
    // Nothing more is tried.
    std::thread::sleep(Duration::from_millis(1500));
    while let Ok(l) = lines.try_recv() {
        assert!(!l.contains("ghost: restarting"), "{l}");
    }
    let st = http_get(addr.as_deref().expect("the listening line"), "/status");
    let ghost = st["upstreams"].as_array().unwrap().iter().find(|u| u["name"] == "ghost").unwrap().clone();
    // Given up: the state, the attempts and the last error, each in its field.
    let why = ghost["lastError"].as_str().unwrap_or_default();
    assert!(why.starts_with("cannot start `/nonexistent/mcp-server`: command not found"), "{st}");
    assert_eq!((ghost["state"].clone(), ghost["gaveUpAfter"].clone()), (json!("failed"), json!(3)), "{st}");
    assert_eq!(ghost["starts"], 0, "{st}");
    let _ = m.kill();
    let _ = m.wait();
}

/// Reads `lines` (mcpx's stderr) until the HTTP listener's address, keeping
/// what was read in `seen`.
fn http_address(lines: &Receiver<String>, seen: &mut Vec<String>) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no listening line:\n{}", seen.join("\n")));
        let addr = line.split("serving MCP over HTTP at http://").nth(1).map(|r| r.trim_end_matches("/mcp").to_string());
        seen.push(line);
        if let Some(a) = addr {
            return a;
        }
    }
}

// A server that crashed and then fails every start: during the backoff its
// tools stay listed and calls say "restarting, retry in N s"; once given up
// they say "stopped after N failed starts" with the last error, as /status does.
// covers: stdio-client-restart-crashed-server
#[test]
fn calls_to_a_restarting_then_given_up_server_say_what_it_is_doing() {
    let dir = Dir::new("restarting");
    let marker = dir.path("started-once");
    let script = format!("if [ -e '{m}' ]; then echo 'config broken: no token' >&2; exit 3; fi; touch '{m}'", m = marker.display());
    dir.config(&json!({"mcpServers": {"flaky": {"maxRestarts": 4, "prefix": "flaky", "command": "sh", "args": ["-c", format!("{script}\nexec '{MCPX}' example-server")]}}}));
    let mut m = mcpx(&dir, &["--http", "127.0.0.1:0", "--stdio"], &[], Stdio::piped());
    let lines = support::lines(m.stderr.take().unwrap());
    let mut seen = Vec::new();
    let addr = http_address(&lines, &mut seen);
    let mut c = Client::new(&mut m);
    c.initialize();
    c.echo("flaky__echo", "before");
    let crash = c.request("tools/call", json!({"name": "flaky__crash", "arguments": {}}));
    assert!(crash["error"]["message"].as_str().unwrap_or_default().contains("server 'flaky' exited"), "{crash}");
    // Backoff 250 ms, 500 ms, 1 s, 2 s, then it is given up (5 failed attempts).
    let (mut restarting, mut stopped) = (0, None);
    let deadline = Instant::now() + Duration::from_secs(20);
    while stopped.is_none() && Instant::now() < deadline {
        let r = c.request("tools/call", json!({"name": "flaky__echo", "arguments": {"text": "x"}}));
        let msg = r["error"]["message"].as_str().unwrap_or_default().to_string();
        assert_eq!(r["error"]["code"], -32603, "never an unknown tool: {r}");
        if msg.starts_with("server 'flaky' is restarting, retry in ") {
            assert!(r["error"]["data"]["retryAfterMs"].as_u64().is_some_and(|ms| ms <= 2000), "{r}");
            restarting += 1;
        } else if msg.starts_with("server 'flaky' is stopped") {
            stopped = Some(msg);
        } else {
            assert!(msg.starts_with("server 'flaky' is starting"), "{r}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let stopped = stopped.expect("given up within 20 s");
    assert!(restarting >= 5, "{restarting} restarting answers");
    assert!(stopped.starts_with("server 'flaky' is stopped after 5 failed starts: exited with status 3"), "{stopped}");
    assert!(stopped.contains("config broken: no token"), "{stopped}");
    // The tools are still listed, and /status tells the same story.
    let tools = c.request("tools/list", json!({}));
    assert!(tools["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "flaky__echo"), "{tools}");
    let st = http_get(&addr, "/status");
    let flaky = &st["upstreams"][0];
    assert_eq!((flaky["state"].clone(), flaky["gaveUpAfter"].clone()), (json!("failed"), json!(5)), "{st}");
    assert!(flaky["lastError"].as_str().unwrap_or_default().contains("config broken: no token"), "{st}");
    let _ = m.kill();
    let _ = m.wait();
}

#[test]
fn without_a_config_the_demo_offers_a_few_harmless_tools() {
    let dir = Dir::new("demo");
    let mut m = mcpx(&dir, &[], &[], Stdio::null());
    let mut c = Client::new(&mut m);
    c.initialize();
    let r = c.request("tools/list", json!({}));
    let mut names: Vec<&str> = r["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        ["demo__add", "demo__current_time", "demo__echo", "notes__add", "notes__current_time", "notes__echo"],
        "{r}"
    );
    c.echo("demo__echo", "hello");
    let r = c.request("tools/call", json!({"name": "notes__current_time", "arguments": {}}));
    assert!(is_timestamp(r["result"]["content"][0]["text"].as_str().unwrap_or_default()), "{r}");
    let r = c.request("resources/list", json!({}));
    assert_eq!(r["result"]["resources"].as_array().map(Vec::len), Some(2), "{r}");
    let r = c.request("prompts/list", json!({}));
    assert_eq!(r["result"]["prompts"].as_array().map(Vec::len), Some(2), "{r}");
    c.close();
    assert_eq!(wait_exit(&mut m, Duration::from_secs(15)), 0);
}

#[test]
fn an_orphan_that_ends_while_mcpx_runs_is_reaped() {
    let dir = Dir::new("reap");
    let pidfile = dir.path("short.pid");
    let script = format!("(setsid sleep 0.2 </dev/null >/dev/null 2>&1 & echo $! > '{}')", pidfile.display());
    dir.config(&json!({"mcpServers": {"d": server(&script)}}));
    let mut m = mcpx(&dir, &[], &[], Stdio::null());
    let mut c = Client::new(&mut m);
    c.initialize();
    let pid = read_pid(&pidfile);
    // Re-parented to mcpx, it ends; mcpx reaps it: no zombie stays behind.
    let t0 = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    c.close();
    assert_eq!(wait_exit(&mut m, Duration::from_secs(15)), 0);
    assert!(left.is_empty(), "orphan {pid} not reaped: {left}");
}

#[test]
fn a_grandchild_in_the_servers_group_ends_with_it() {
    let dir = Dir::new("group");
    let pidfile = dir.path("gc.pid");
    let script = format!("sleep 300 </dev/null >/dev/null 2>&1 & echo $! > '{}'", pidfile.display());
    dir.config(&json!({"mcpServers": {"g": server(&script)}, "logLevel": "debug"}));
    let mut m = mcpx(&dir, &[], &[], Stdio::piped());
    let err = read_stderr(&mut m);
    let mut c = Client::new(&mut m);
    c.initialize();
    let gc = read_pid(&pidfile);
    c.close();
    assert_eq!(wait_exit(&mut m, Duration::from_secs(15)), 0);
    let err = err.join().unwrap();
    let gone = gone_within(gc, Duration::from_secs(5));
    if !gone {
        kill(gc, "-KILL");
    }
    assert!(gone, "grandchild {gc} survived");
    // Re-parented to mcpx when the server exits, it gets SIGTERM with its
    // group; reaped as soon as it ends, it needs no SIGKILL.
    assert!(err.contains("still has processes; sending SIGTERM"), "{err}");
    assert!(!err.contains("ignored SIGTERM"), "{err}");
}
