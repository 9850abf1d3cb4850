//! Supervision of one configured MCP server: a child process speaking
//! newline-delimited JSON on its stdin/stdout.
//!
//! Each server gets one task that spawns the child in its own process group,
//! pumps its stdout into [`Events`], keeps the last bytes of its stderr,
//! restarts it with capped exponential backoff when it dies, and stops it in
//! the order the MCP stdio transport asks for: close stdin, wait, SIGTERM to
//! the process group, wait, SIGKILL to the group. Killing the group (not just
//! the child) also ends grandchildren such as the node process behind `npx`.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use smol::channel::{self, Receiver, Sender};
use smol::future::FutureExt as _;
use smol::io::AsyncReadExt;
use smol::{Task, Timer};

use crate::process::exec::Executor;
use crate::servers::backoff::{self, Ctl, End, Ended, Policy};
use crate::process::childenv;
use crate::hub::{Oversize, UpstreamId};
use crate::bytes::lines::{read_lines, LineEvent};
use crate::log::line::{escape_bytes, show_duration, RateLimit, Verdict};
use crate::bytes::outbox::{self, Outbox, PushError};
use crate::process::reaper::signal_group;
use crate::process::reactor::Source;
use crate::servers::events::Events;

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessSpec {
    /// The server's name, for logs.
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// Set over what it inherits (see `env_policy`); always applies.
    pub env: Vec<(String, String)>,
    /// What it inherits of mcpx's environment.
    pub env_policy: childenv::Policy,
    pub cwd: Option<PathBuf>,
}

/// Timings and limits.
#[derive(Clone, Debug)]
pub struct Options {
    /// How long to wait after closing stdin, and again after SIGTERM.
    pub grace: Duration,
    /// Restarts after a crash: backoff and the bound.
    pub restart: Policy,
    /// Bytes of stderr kept for the exit report.
    pub stderr_tail: usize,
    /// Longest message line accepted from the child.
    pub max_line: usize,
    pub queue_msgs: usize,
    pub queue_bytes: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            grace: Duration::from_secs(2),
            restart: Policy::default(),
            stderr_tail: 8 * 1024,
            max_line: crate::limits::max_line(),
            queue_msgs: outbox::DEFAULT_MAX_MSGS,
            queue_bytes: outbox::DEFAULT_MAX_BYTES.min(crate::limits::get().max_queue_bytes),
        }
    }
}

struct Shared {
    stdin: RefCell<Option<Outbox>>,
    ctl: Sender<Ctl>,
    /// Process group of the running child, 0 when none.
    pgid: std::cell::Cell<i32>,
}

/// Handle to one supervised server.
#[derive(Clone)]
pub struct Upstream {
    sh: Rc<Shared>,
}

impl Upstream {
    /// Queues one message for the child's stdin; a refused message is
    /// handed back with the reason.
    pub fn send(&self, msg: Vec<u8>) -> Result<(), (PushError, Vec<u8>)> {
        match &*self.sh.stdin.borrow() {
            Some(o) => o.try_push(msg),
            None => Err((PushError::Closed, msg)),
        }
    }

    /// A wait for the child to take what is queued for its stdin, when
    /// that is a pipe's worth or more ([`Outbox::hold`]).
    pub fn hold<L: std::future::Future<Output = ()> + 'static>(&self, limit: impl FnOnce() -> L) -> Option<impl std::future::Future<Output = ()> + 'static> {
        self.sh.stdin.borrow().as_ref().and_then(|o| o.hold(limit))
    }

    /// The cap on bytes queued for the child's stdin (0 when not running).
    pub fn queue_bytes(&self) -> usize {
        self.sh.stdin.borrow().as_ref().map_or(0, Outbox::max_bytes)
    }

    /// Stops the child (gently, as at shutdown) and starts it again at once.
    pub fn restart(&self, reason: &str) {
        let _ = self.sh.ctl.try_send(Ctl::Restart(reason.to_string()));
    }

    /// Asks the supervisor to stop the child for good; the task returned by
    /// [`spawn`] ends when it has.
    pub fn shutdown(&self) {
        let _ = self.sh.ctl.try_send(Ctl::Shutdown);
    }

    /// SIGKILL to the child's process group now (a second Ctrl-C).
    pub fn kill_now(&self) {
        signal_group(self.sh.pgid.get(), libc::SIGKILL);
    }
}

/// Starts supervising `spec` as upstream `id`. The returned task ends after
/// [`Upstream::shutdown`] once the process group is gone.
pub fn spawn(
    ex: &Rc<Executor>,
    id: UpstreamId,
    spec: ProcessSpec,
    opts: Options,
    events: Rc<dyn Events>,
) -> (Upstream, Task<()>) {
    let (ctl_tx, ctl_rx) = channel::bounded(8);
    let sh = Rc::new(Shared {
        stdin: RefCell::new(None),
        ctl: ctl_tx,
        pgid: std::cell::Cell::new(0),
    });
    crate::process::reaper::start_sweeping(ex);
    let sup = Supervisor { id, spec, opts, events, ex: ex.clone(), sh: sh.clone(), ctl: ctl_rx };
    let task = ex.spawn(sup.run());
    (Upstream { sh }, task)
}

struct Supervisor {
    id: UpstreamId,
    spec: ProcessSpec,
    opts: Options,
    events: Rc<dyn Events>,
    ex: Rc<Executor>,
    sh: Rc<Shared>,
    ctl: Receiver<Ctl>,
}

enum Wake {
    Exited(io::Result<ExitStatus>),
    StdoutClosed,
    Told(Ctl),
}

type StatusFuture = Pin<Box<dyn Future<Output = io::Result<ExitStatus>>>>;

impl Supervisor {
    async fn run(self) {
        let name = &self.spec.name;
        backoff::run(name, "restarting", self.id, &*self.events, &self.opts.restart, &self.ctl, || async {
            let ended = match self.spawn_child() {
                Ok(child) => self.run_child(child).await,
                Err(e) => {
                    let reason = spawn_error(&self.spec, &e);
                    debug!("server {name}: {reason}");
                    Ended { end: End::Failed, reason, tail: String::new() }
                }
            };
            // Descendants it left behind that have ended since (see `reaper`).
            crate::process::reaper::reap_orphans();
            ended
        })
        .await
    }

    fn spawn_child(&self) -> io::Result<smol::process::Child> {
        let spec = &self.spec;
        if let Some(cwd) = &spec.cwd {
            if !cwd.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("working directory {} does not exist", cwd.display()),
                ));
            }
        }
        let mut cmd = std::process::Command::new(&spec.command);
        cmd.args(&spec.args)
            .env_clear()
            .envs(spec.env_policy.child_env(std::env::vars_os(), &spec.env))
            // Its own process group, so that stopping it reaches its children
            // too, and so that a Ctrl-C in mcpx's terminal does not hit it
            // before mcpx has closed its stdin.
            .process_group(0);
        if let Some(cwd) = &spec.cwd {
            cmd.current_dir(cwd);
        }
        #[cfg(target_os = "linux")]
        {
            let cgroup = crate::process::cgroup::for_server(&spec.name);
            // SAFETY: prctl and `ServerCgroup::enter` are async-signal-safe and
            // touch no memory of the parent.
            unsafe {
                // If mcpx dies without cleaning up (SIGKILL), the child gets a
                // SIGTERM (which a wrapper may pass on to its own child).
                cmd.pre_exec(move || {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong, 0, 0, 0);
                    if let Some(cgroup) = &cgroup {
                        cgroup.enter();
                    }
                    Ok(())
                });
            }
        }
        // (async-process's own stdio flags override the std ones.)
        smol::process::Command::from(cmd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
    }

    async fn run_child(&self, mut child: smol::process::Child) -> Ended {
        let name = &self.spec.name;
        let id = self.id;
        let pgid = child.id() as i32;
        self.sh.pgid.set(pgid);
        #[cfg(target_os = "linux")]
        crate::process::watcher::add_group(pgid);
        let _registered = crate::process::reaper::Registered::new(pgid);
        let t0 = Instant::now();
        debug!("server {name}: started `{}` (pid {pgid})", self.spec.command);

        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        #[cfg(target_os = "linux")]
        {
            crate::process::pipe_size::widen(&stdin);
            crate::process::pipe_size::widen(&stdout);
        }
        let stdout = on_reactor::<_, Box<dyn smol::io::AsyncRead + Unpin>>(stdout, |s| Box::new(s), |p| Box::new(p));
        let stdin = on_reactor::<_, Box<dyn smol::io::AsyncWrite + Unpin>>(stdin, |s| Box::new(s), |p| Box::new(p));
        let mut status: StatusFuture = Box::pin(child.status());

        let (outbox, rx) = outbox::outbox(self.opts.queue_msgs, self.opts.queue_bytes);
        *self.sh.stdin.borrow_mut() = Some(outbox.clone());
        self.events.started(id);

        let writer_name = name.clone();
        let mut writer = Some(self.ex.spawn(async move {
            if let Err(e) = rx.write_to(stdin).await {
                debug!("server {writer_name}: writing to its stdin failed: {e}");
            }
        }));

        let events = self.events.clone();
        let max_line = self.opts.max_line;
        let (eof_tx, eof_rx) = channel::bounded::<()>(1);
        let mut reader = Some(self.ex.spawn(async move {
            let mut garbage = Garbage(RateLimit::new(LINES_PER_SECOND, Duration::from_secs(1)));
            let r = read_lines(stdout, max_line, |ev| match ev {
                LineEvent::Line(line) => {
                    let t = line.trim_ascii();
                    if t.is_empty() {
                    } else if t[0] == b'{' || t[0] == b'[' {
                        events.message(id, t);
                    } else {
                        garbage.report(&*events, id, || format!("non-JSON line on stdout: {}", preview(t, 200)));
                    }
                }
                LineEvent::TooLarge { len, head, tail } => {
                    let limit = crate::limits::line_limit();
                    events.too_large(id, &Oversize { len, max: max_line, limit: &limit, head, tail }, None);
                }
            })
            .await;
            garbage.finish(&*events, id);
            let _ = eof_tx.try_send(());
            r.err()
        }));

        let tail = Rc::new(RefCell::new(Tail::new(self.opts.stderr_tail)));
        let mut stderr_task = Some(self.ex.spawn(pump_stderr(stderr, tail.clone(), name.clone())));

        // Run until the child exits, closes its stdout, or we are told to stop it.
        let exited = async { Wake::Exited((&mut status).await) };
        let stdout_closed = async {
            let _ = eof_rx.recv().await;
            Wake::StdoutClosed
        };
        let told = async {
            match self.ctl.recv().await {
                Ok(c) => Wake::Told(c),
                Err(_) => Wake::Told(Ctl::Shutdown),
            }
        };
        let (exit, outcome, reason) = match exited.or(told).or(stdout_closed).await {
            Wake::Exited(st) => {
                // Died on its own: deliver what it wrote before going on.
                outbox.close();
                *self.sh.stdin.borrow_mut() = None;
                join_for(Duration::from_millis(500), &mut reader).await;
                (st, End::Failed, None)
            }
            Wake::StdoutClosed => {
                // It cannot answer any more. Usually it is exiting; if not,
                // it gets the stop sequence.
                outbox.close();
                *self.sh.stdin.borrow_mut() = None;
                let st = match timeout(Duration::from_millis(100), &mut status).await {
                    Some(st) => st,
                    None => {
                        debug!("server {name}: closed its stdout but is still running; stopping it");
                        join_for(Duration::from_millis(200), &mut writer).await;
                        writer = None;
                        stop_leader(pgid, &mut status, self.opts.grace, name).await
                    }
                };
                (st, End::Failed, None)
            }
            Wake::Told(ctl) => {
                let (outcome, why) = match ctl {
                    Ctl::Restart(r) => (End::Restart, format!("restarted: {r}")),
                    Ctl::Shutdown | Ctl::Kill => (End::Stopped, "stopped".to_string()),
                };
                debug!("server {name}: stopping ({why})");
                // 1. Close its stdin (after what is queued, if it reads it).
                outbox.close();
                *self.sh.stdin.borrow_mut() = None;
                join_for(Duration::from_millis(200), &mut writer).await;
                // Cancelling the writer drops its end of the pipe.
                writer = None;
                // 2. and 3. SIGTERM, then SIGKILL, to the group.
                let st = stop_leader(pgid, &mut status, self.opts.grace, name).await;
                (st, outcome, Some(why))
            }
        };
        // Whatever is left of the group (grandchildren) goes too.
        kill_group(pgid, self.opts.grace, name).await;
        self.sh.pgid.set(0);
        #[cfg(target_os = "linux")]
        crate::process::watcher::remove_group(pgid);
        join_for(Duration::from_millis(500), &mut reader).await;
        join_for(Duration::from_millis(200), &mut stderr_task).await;
        drop((reader, stderr_task, writer));

        let status_text = match &exit {
            Ok(st) => describe_status(*st),
            Err(e) => format!("could not be waited for: {e}"),
        };
        let tail = tail.borrow().text();
        let reason = match reason {
            None => {
                // The hub logs the exit with the stderr tail; this adds the uptime.
                debug!("server {name}: {status_text} after {}", show_duration(t0.elapsed()));
                status_text
            }
            Some(reason) => {
                debug!("server {name}: {reason}; {status_text}");
                format!("{reason} ({status_text})")
            }
        };
        Ended { end: outcome, reason, tail }
    }
}

/// A child's pipe, used through a copy of its descriptor on the thread's
/// [`reactor`](crate::process::reactor) (`own`); async-process's handle is
/// then closed (closing the pipe is dropping what this returns). Without a
/// descriptor to spare, that handle is used (`theirs`).
fn on_reactor<P: AsFd, B>(pipe: P, own: impl FnOnce(Source<std::fs::File>) -> B, theirs: impl FnOnce(P) -> B) -> B {
    match pipe.as_fd().try_clone_to_owned().and_then(|fd| Source::new(std::fs::File::from(fd))) {
        Ok(s) => own(s),
        Err(_) => theirs(pipe),
    }
}

/// Lines a child may have logged per second, per stream (stderr, and
/// non-message stdout); the rest are counted and reported once a second.
const LINES_PER_SECOND: u32 = 20;

/// Non-message stdout, reported to the hub at a bounded rate.
struct Garbage(RateLimit);

impl Garbage {
    fn report(&mut self, events: &dyn Events, id: UpstreamId, what: impl FnOnce() -> String) {
        if let Verdict::Write { suppressed } = self.0.check(Instant::now()) {
            if suppressed > 0 {
                events.garbage(id, &format!("{suppressed} more such line(s) not shown"));
            }
            events.garbage(id, &what());
        }
    }

    fn finish(&mut self, events: &dyn Events, id: UpstreamId) {
        let n = self.0.take_suppressed();
        if n > 0 {
            events.garbage(id, &format!("{n} more such line(s) not shown"));
        }
    }
}

/// Waits for the group leader after its stdin was closed; SIGTERM, then
/// SIGKILL the group when it takes longer than `grace`.
async fn stop_leader(pgid: i32, status: &mut StatusFuture, grace: Duration, name: &str) -> io::Result<ExitStatus> {
    if let Some(st) = timeout(grace, &mut *status).await {
        return st;
    }
    debug!("server {name}: still running {} after its stdin was closed; sending SIGTERM", show_duration(grace));
    signal_group(pgid, libc::SIGTERM);
    if let Some(st) = timeout(grace, &mut *status).await {
        return st;
    }
    warn!("server {name}: ignored SIGTERM for {}; sending SIGKILL", show_duration(grace));
    signal_group(pgid, libc::SIGKILL);
    match timeout(Duration::from_secs(5), &mut *status).await {
        Some(st) => st,
        None => Err(io::Error::new(io::ErrorKind::TimedOut, "process did not die after SIGKILL")),
    }
}

/// Ends what is left of a process group whose leader has exited.
async fn kill_group(pgid: i32, grace: Duration, name: &str) {
    if !group_alive(pgid) {
        return;
    }
    debug!("server {name}: process group {pgid} still has processes; sending SIGTERM");
    signal_group(pgid, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        Timer::after(Duration::from_millis(20)).await;
        // Orphaned members are mcpx's children now (see `reaper`): an
        // ended one stays in the group until reaped.
        crate::process::reaper::reap_orphans();
        if !group_alive(pgid) {
            return;
        }
    }
    warn!("server {name}: processes of group {pgid} ignored SIGTERM; sending SIGKILL");
    signal_group(pgid, libc::SIGKILL);
}

fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    crate::process::reaper::reap_orphans();
    // SAFETY: as above; signal 0 only checks for existence.
    let r = unsafe { libc::kill(-pgid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Waits up to `d` for a task to finish; a finished task is taken out.
async fn join_for<T>(d: Duration, task: &mut Option<Task<T>>) {
    if let Some(t) = task {
        if timeout(d, t).await.is_some() {
            *task = None;
        }
    }
}

async fn timeout<F: Future + Unpin>(d: Duration, f: F) -> Option<F::Output> {
    let f = async { Some(f.await) };
    let t = async {
        Timer::after(d).await;
        None
    };
    f.or(t).await
}

fn spawn_error(spec: &ProcessSpec, e: &io::Error) -> String {
    let cmd = &spec.command;
    match e.kind() {
        io::ErrorKind::NotFound if e.get_ref().is_some() => format!("cannot start `{cmd}`: {e}"),
        io::ErrorKind::NotFound => format!("cannot start `{cmd}`: command not found (is it installed and on PATH?)"),
        io::ErrorKind::PermissionDenied => format!("cannot start `{cmd}`: permission denied (is it executable?)"),
        _ => format!("cannot start `{cmd}`: {e}"),
    }
}

pub fn describe_status(st: ExitStatus) -> String {
    if let Some(code) = st.code() {
        format!("exited with status {code}")
    } else if let Some(sig) = st.signal() {
        let name = match sig {
            libc::SIGHUP => " (SIGHUP)",
            libc::SIGINT => " (SIGINT)",
            libc::SIGKILL => " (SIGKILL)",
            libc::SIGSEGV => " (SIGSEGV)",
            libc::SIGABRT => " (SIGABRT)",
            libc::SIGPIPE => " (SIGPIPE)",
            libc::SIGTERM => " (SIGTERM)",
            _ => "",
        };
        format!("killed by signal {sig}{name}")
    } else {
        format!("ended: {st}")
    }
}

/// Longest stderr line logged as one record; longer ones are split.
const MAX_STDERR_LINE: usize = 4096;

/// Keeps the child's stderr in `tail` and logs it line by line (at debug),
/// escaped and at most [`LINES_PER_SECOND`] lines a second. It yields to
/// the other tasks after every chunk, so a flood cannot hold the thread.
async fn pump_stderr(mut stderr: smol::process::ChildStderr, tail: Rc<RefCell<Tail>>, name: String) {
    let mut chunk = vec![0u8; 64 * 1024];
    let mut line = Vec::new();
    let mut limit = RateLimit::new(LINES_PER_SECOND, Duration::from_secs(1));
    let mut log_line = |line: &[u8]| {
        if let Verdict::Write { suppressed } = limit.check(Instant::now()) {
            if suppressed > 0 {
                debug!("[{name}] ({suppressed} more stderr line(s) not shown)");
            }
            debug!("[{name}] {}", escape_bytes(line.trim_ascii()));
        }
    };
    loop {
        let n = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        tail.borrow_mut().push(&chunk[..n]);
        let mut data = &chunk[..n];
        while !data.is_empty() {
            let room = MAX_STDERR_LINE - line.len();
            match data[..data.len().min(room)].iter().position(|&b| b == b'\n') {
                Some(i) => {
                    line.extend_from_slice(&data[..i]);
                    data = &data[i + 1..];
                }
                None if data.len() < room => {
                    line.extend_from_slice(data);
                    break;
                }
                None => {
                    line.extend_from_slice(&data[..room]);
                    data = &data[room..];
                }
            }
            log_line(&line);
            line.clear();
        }
        smol::future::yield_now().await;
    }
    if !line.is_empty() {
        log_line(&line);
    }
    let n = limit.take_suppressed();
    if n > 0 {
        debug!("[{name}] ({n} more stderr line(s) not shown)");
    }
}

fn preview(b: &[u8], max: usize) -> String {
    let mut end = b.len().min(max);
    // Cut at a character boundary where the text is UTF-8.
    while end > 0 && end < b.len() && (b[end] & 0xc0) == 0x80 {
        end -= 1;
    }
    let s = escape_bytes(&b[..end]);
    if b.len() > max {
        format!("{s}… ({} bytes)", b.len())
    } else {
        s
    }
}

/// The last bytes of a stream.
struct Tail {
    buf: VecDeque<u8>,
    cap: usize,
    dropped: bool,
}

impl Tail {
    fn new(cap: usize) -> Tail {
        Tail { buf: VecDeque::with_capacity(cap.min(1024)), cap, dropped: false }
    }

    fn push(&mut self, data: &[u8]) {
        let data = if data.len() > self.cap {
            self.dropped = true;
            &data[data.len() - self.cap..]
        } else {
            data
        };
        let over = (self.buf.len() + data.len()).saturating_sub(self.cap);
        if over > 0 {
            self.dropped = true;
            self.buf.drain(..over);
        }
        self.buf.extend(data);
    }

    /// As text, starting at a line boundary when the start was cut.
    fn text(&self) -> String {
        let bytes: Vec<u8> = self.buf.iter().copied().collect();
        let mut s = &bytes[..];
        if self.dropped {
            if let Some(i) = s.iter().position(|&b| b == b'\n') {
                s = &s[i + 1..];
            }
        }
        String::from_utf8_lossy(s).trim_end().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::Next;
    use crate::servers::testing::{run, until, Log};

    #[test]
    fn tail_keeps_last_bytes_from_a_line_start() {
        let mut t = Tail::new(10);
        t.push(b"abc\n");
        assert_eq!(t.text(), "abc");
        t.push(b"defgh\nij\n");
        assert_eq!(t.text(), "defgh\nij");
        let mut t = Tail::new(4);
        t.push(b"0123456789");
        assert_eq!(t.text(), "6789");
    }

    #[test]
    fn statuses() {
        assert_eq!(describe_status(ExitStatus::from_raw(3 << 8)), "exited with status 3");
        assert_eq!(describe_status(ExitStatus::from_raw(9)), "killed by signal 9 (SIGKILL)");
    }

    fn sh(name: &str, script: &str) -> ProcessSpec {
        ProcessSpec {
            name: name.into(),
            command: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![],
            env_policy: childenv::Policy::default(),
            cwd: None,
        }
    }

    fn fast() -> Options {
        Options {
            grace: Duration::from_millis(300),
            restart: Policy {
                min: Duration::from_millis(50),
                max: Duration::from_millis(200),
                stable_after: Duration::from_secs(10),
                max_restarts: 100,
            },
            ..Options::default()
        }
    }

    fn pid_alive(pid: i32) -> bool {
        // A zombie (dead, not yet reaped by whoever inherited it) counts as dead.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(s) => !s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')),
            // SAFETY: kill(2) with signal 0 only checks that the pid exists.
            Err(_) => unsafe { libc::kill(pid, 0) == 0 },
        }
    }

    // covers: lifecycle-stdio-client-shutdown-sequence, stdio-client-shutdown-sequence, stdio-client-stderr-not-error
    #[test]
    fn echoes_messages_and_reports_garbage_and_env() {
        run(Duration::from_secs(10), |ex| async move {
            let log = Rc::new(Log::default());
            let mut spec = sh("echo", "echo \"{\\\"v\\\":\\\"$V\\\"}\"; echo banner; echo err >&2; cat");
            spec.env = vec![("V".into(), "x1".into())];
            let (up, task) = spawn(&ex, 0, spec, fast(), log.clone());
            assert!(until(Duration::from_secs(5), || log.count("garbage") == 1).await);
            up.send(b"{\"id\":1}".to_vec()).unwrap();
            up.send(b"[1]".to_vec()).unwrap();
            assert!(until(Duration::from_secs(5), || log.count("msg") == 3).await);
            up.shutdown();
            task.await;
            assert_eq!(
                log.take(),
                [
                    "started",
                    "msg {\"v\":\"x1\"}",
                    "garbage non-JSON line on stdout: banner",
                    "msg {\"id\":1}",
                    "msg [1]",
                    "exited stopped (exited with status 0) | err",
                ]
            );
            assert_eq!(up.send(b"{}".to_vec()).map_err(|(e, _)| e), Err(PushError::Closed));
        });
    }

    // covers: stdio-client-restart-crashed-server, stdio-client-may-capture-stderr
    #[test]
    fn restarts_a_crashing_child_with_backoff_and_its_stderr_tail() {
        run(Duration::from_secs(10), |ex| async move {
            let log = Rc::new(Log::default());
            let t0 = Instant::now();
            let (up, task) = spawn(&ex, 3, sh("crash", "echo boom >&2; exit 3"), fast(), log.clone());
            assert!(until(Duration::from_secs(5), || log.count("exited") >= 4).await);
            // 50 + 100 + 200 ms of backoff at least.
            assert!(t0.elapsed() >= Duration::from_millis(350), "{:?}", t0.elapsed());
            up.shutdown();
            task.await;
            let events = log.take();
            assert_eq!(events[0], "started");
            assert_eq!(events[1], "exited exited with status 3 | boom");
        });
    }

    #[test]
    fn spawn_failure_is_retried_without_a_start() {
        run(Duration::from_secs(10), |ex| async move {
            let log = Rc::new(Log::default());
            let spec = ProcessSpec {
                name: "missing".into(),
                command: "/nonexistent/mcp-server".into(),
                args: vec![],
                env: vec![],
            env_policy: childenv::Policy::default(),
                cwd: None,
            };
            let (up, task) = spawn(&ex, 0, spec, fast(), log.clone());
            assert!(until(Duration::from_secs(5), || log.count("exited") >= 2).await);
            up.shutdown();
            task.await;
            let events = log.take();
            assert_eq!(
                events[0],
                "exited cannot start `/nonexistent/mcp-server`: command not found (is it installed and on PATH?) | "
            );
            assert_eq!(log.count("started"), 0);

            let mut spec = sh("badcwd", "cat");
            spec.cwd = Some("/nonexistent/dir".into());
            let (up, task) = spawn(&ex, 0, spec, fast(), log.clone());
            assert!(until(Duration::from_secs(5), || log.count("exited") >= 1).await);
            up.shutdown();
            task.await;
            assert_eq!(
                log.take()[0],
                "exited cannot start `sh`: working directory /nonexistent/dir does not exist | "
            );
        });
    }

    // covers: stdio-client-restart-crashed-server
    #[test]
    fn a_missing_command_is_given_up_after_max_restarts() {
        run(Duration::from_secs(10), |ex| async move {
            let log = Rc::new(Log::default());
            let spec = ProcessSpec { command: "/nonexistent/mcp-server".into(), ..sh("missing", "") };
            let mut opts = fast();
            opts.restart.max_restarts = 2;
            let (up, task) = spawn(&ex, 0, spec, opts, log.clone());
            assert!(until(Duration::from_secs(5), || log.count("exited") == 3).await);
            Timer::after(Duration::from_millis(400)).await;
            let events = log.take();
            assert_eq!(events.len(), 3, "{events:?}");
            assert_eq!(
                events[2],
                "exited cannot start `/nonexistent/mcp-server`: command not found (is it installed and on PATH?) | "
            );
            assert_eq!(log.nexts()[2], Next::GaveUp { attempts: 3 });
            // A restart asked for tries again.
            up.restart("config fixed");
            assert!(until(Duration::from_secs(5), || log.count("exited") >= 1).await);
            up.shutdown();
            task.await;
        });
    }

    #[test]
    fn the_child_gets_the_policys_environment() {
        run(Duration::from_secs(10), |ex| async move {
            let log = Rc::new(Log::default());
            // PATH is in the base set; nothing else of ours is, unless allowed.
            let mut spec = sh("env", "echo \"{\\\"path\\\":\\\"${PATH:+set}\\\",\\\"cargo\\\":\\\"${CARGO:-unset}\\\",\\\"own\\\":\\\"$OWN\\\"}\"; cat");
            spec.env = vec![("OWN".into(), "mine".into())];
            spec.env_policy = childenv::Policy { inherit: false, ..childenv::Policy::default() };
            let (up, task) = spawn(&ex, 0, spec, fast(), log.clone());
            assert!(until(Duration::from_secs(5), || log.count("msg") == 1).await);
            up.shutdown();
            task.await;
            assert_eq!(log.msgs()[0], serde_json::json!({"path": "set", "cargo": "unset", "own": "mine"}));
        });
    }

    // covers: lifecycle-stdio-client-shutdown-sequence, stdio-client-shutdown-sequence
    #[test]
    fn stop_sequence_escalates_to_sigkill_and_kills_grandchildren() {
        run(Duration::from_secs(15), |ex| async move {
            let log = Rc::new(Log::default());
            // Ignores stdin EOF and SIGTERM; its grandchild does too.
            let script = "trap '' TERM; (trap '' TERM; while :; do sleep 1; done) & \
                          echo \"{\\\"grandchild\\\":$!}\"; while :; do sleep 1; done";
            let (up, task) = spawn(&ex, 0, sh("stubborn", script), fast(), log.clone());
            assert!(until(Duration::from_secs(5), || log.count("msg") == 1).await);
            let first = log.take()[1].clone();
            let pid: i32 = first
                .trim_start_matches("msg {\"grandchild\":")
                .trim_end_matches('}')
                .parse()
                .unwrap();
            assert!(pid_alive(pid));
            let t0 = Instant::now();
            up.shutdown();
            task.await;
            // grace after stdin close + grace after SIGTERM, then SIGKILL.
            assert!(t0.elapsed() >= Duration::from_millis(600), "{:?}", t0.elapsed());
            assert_eq!(log.take(), ["exited stopped (killed by signal 9 (SIGKILL)) | "]);
            assert!(until(Duration::from_secs(2), || !pid_alive(pid)).await, "grandchild {pid} survived");
        });
    }

    // covers: lifecycle-stdio-client-shutdown-sequence, stdio-client-shutdown-sequence
    #[test]
    fn sigterm_stops_a_child_that_ignores_stdin_eof() {
        run(Duration::from_secs(10), |ex| async move {
            let log = Rc::new(Log::default());
            let (up, task) = spawn(&ex, 0, sh("deaf", "exec sleep 60"), fast(), log.clone());
            assert!(until(Duration::from_secs(5), || log.count("started") == 1).await);
            up.shutdown();
            task.await;
            assert_eq!(log.take(), ["started", "exited stopped (killed by signal 15 (SIGTERM)) | "]);
        });
    }

    #[test]
    fn grandchild_left_behind_by_a_crash_is_killed() {
        run(Duration::from_secs(10), |ex| async move {
            let log = Rc::new(Log::default());
            let script = "sleep 60 & echo \"{\\\"grandchild\\\":$!}\"; exit 1";
            let (up, task) = spawn(&ex, 0, sh("leaky", script), fast(), log.clone());
            assert!(until(Duration::from_secs(5), || log.count("exited") >= 1).await);
            up.shutdown();
            task.await;
            let events = log.take();
            let pid: i32 = events[1]
                .trim_start_matches("msg {\"grandchild\":")
                .trim_end_matches('}')
                .parse()
                .unwrap();
            assert!(until(Duration::from_secs(2), || !pid_alive(pid)).await, "grandchild {pid} survived");
        });
    }

    #[test]
    fn restart_request_restarts_at_once() {
        run(Duration::from_secs(10), |ex| async move {
            let log = Rc::new(Log::default());
            let (up, task) = spawn(&ex, 0, sh("cat", "cat"), fast(), log.clone());
            assert!(until(Duration::from_secs(5), || log.count("started") == 1).await);
            up.restart("timed out");
            assert!(until(Duration::from_secs(5), || log.count("started") == 2).await);
            up.shutdown();
            task.await;
            assert_eq!(
                log.take(),
                [
                    "started",
                    "exited restarted: timed out (exited with status 0) | ",
                    "started",
                    "exited stopped (exited with status 0) | ",
                ]
            );
        });
    }

    // covers: stdio-server-may-close-stdout, lifecycle-stdio-server-may-exit
    #[test]
    fn a_child_that_closes_its_stdout_is_stopped_and_restarted() {
        run(Duration::from_secs(10), |ex| async move {
            let log = Rc::new(Log::default());
            let (up, task) = spawn(&ex, 0, sh("mute", "exec 1>&-; exec sleep 60"), fast(), log.clone());
            assert!(until(Duration::from_secs(5), || log.count("started") == 2).await);
            up.shutdown();
            task.await;
            let events = log.take();
            assert_eq!(events[..3], ["started", "exited killed by signal 15 (SIGTERM) | ", "started"]);
        });
    }
}
