//! Live config: `mcpx serve` reloads its config file when it changes
//! (its modification time, size or inode, polled every second) and on
//! [`request`] (SIGHUP), without a restart.
//!
//! A reload reads and validates the whole file as at startup (`config::load`
//! and the hub's checks); a file that does not pass is refused whole: the
//! running config stays, and the problems (`file:line:col: ...`) go to the
//! log and to `/status` (`config.refused`). It is read off the event loop,
//! the files it names bounded in size and time (`small_file`), so a FIFO or a
//! hung mount refuses the reload instead of stopping the clients. Otherwise the difference
//! ([`diff`], by server name) is applied: removed servers are stopped (their
//! requests in flight answered with an error saying so), changed ones are
//! restarted with their new entry (listed meanwhile), added ones started;
//! unchanged servers and every client session keep running. Clients are told
//! of the changed lists by the hub's usual `list_changed`. The log level and
//! the sign-in settings (`http.statusPrincipals`, `http.signinTtlMs`: the
//! HTTP listener takes them at once) apply too. What cannot change while
//! serving (the other hub-wide settings, see [`Diff::fixed`]) is named in
//! the log and applies at the next start.
//!
//! The same task starts and stops the processes of lazy servers when the hub
//! asks (`Output::Power`: lazy start, idle stop; see `hub::starts::lazy`), and keeps
//! servers' lists when they are read (`Output::ListsRead`), on disk for the
//! next start of mcpx and in the shared store for other replicas ([`lists`]).
//!
//! A changed server restarts in its slot ([`Runtime::replace_upstream`]):
//! its tools stay listed and its calls wait for it meanwhile, and clients
//! get `list_changed` only if its listing really changed.

mod cache;
pub mod lists;
pub mod wake;

pub use wake::request;
use wake::wake;

use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use smol::future::FutureExt as _;
use smol::Timer;

use crate::config::{self, Config, ServerConfig};
use crate::host::file_stamp::stamp;
use crate::hub::{Input, Power, UpstreamId};
use crate::log;
use crate::process::alarm::Alarm;
use crate::serve::runtime::{Runtime, ServerAsk};
use crate::serve::secrets::For;
use crate::serve::spawner::Spawner;
use lists::Lists;

/// How often the config file's metadata is looked at.
const POLL: Duration = Duration::from_secs(1);

/// How long reading the config (and the files it names) may take on a reload.
const LOAD_LIMIT: Duration = Duration::from_secs(10);

/// How `serve` was started, as far as reloading cares.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// `--config FILE`, read again on every reload (else the search path).
    pub explicit: Option<PathBuf>,
    /// The log level came from `--log-level` or `MCPX_LOG`: the config's
    /// `logLevel` does not override it on a reload either.
    pub level_fixed: bool,
}


/// What changed between two configs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Diff {
    /// Server names, in the order of the config they are in.
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Servers whose entry changed in any way: restarted with the new one.
    pub changed: Vec<String>,
    /// Changed settings that only apply at the next start of mcpx.
    pub fixed: Vec<&'static str>,
    /// `logLevel` changed (applied at once unless fixed on the command line).
    pub log_level: bool,
    /// `http.statusPrincipals` or `http.signinTtlMs` changed (applied at once).
    #[cfg(feature = "signin")]
    pub signin: bool,
}

impl Diff {
    pub fn servers_changed(&self) -> bool {
        !(self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty())
    }

    /// Nothing changed at all (the reload's log says so).
    pub fn is_empty(&self) -> bool {
        #[cfg(feature = "signin")]
        let signin = self.signin;
        #[cfg(not(feature = "signin"))]
        let signin = false;
        !self.servers_changed() && self.fixed.is_empty() && !self.log_level && !signin
    }
}

/// The difference from `old` to `new`.
pub fn diff(old: &Config, new: &Config) -> Diff {
    let find = |cfg: &Config, name: &str| cfg.servers.iter().find(|s| s.name == name).cloned();
    let mut d = Diff::default();
    for s in &new.servers {
        match find(old, &s.name) {
            None => d.added.push(s.name.clone()),
            Some(o) if o != *s => d.changed.push(s.name.clone()),
            Some(_) => {}
        }
    }
    d.removed = old.servers.iter().filter(|s| find(new, &s.name).is_none()).map(|s| s.name.clone()).collect();
    #[cfg(feature = "cli")]
    let operators = old.http.operators != new.http.operators;
    #[cfg(not(feature = "cli"))]
    let operators = false;
    let fixed: [(&'static str, bool); 9] = [
        ("separator", old.separator != new.separator),
        ("roots", old.roots != new.roots),
        ("cacheTtlMs", old.cache_ttl_ms != new.cache_ttl_ms),
        ("cachePublic", old.cache_public != new.cache_public),
        ("inputTtlMs", old.input_ttl_ms != new.input_ttl_ms),
        ("auth", old.http.bearer != new.http.bearer || old.http.auth != new.http.auth || operators),
        (
            "http",
            HttpLimits::of(old) != HttpLimits::of(new)
                || old.http.allowed_origins != new.http.allowed_origins
                || old.http.allowed_hosts != new.http.allowed_hosts,
        ),
        ("policy", old.policy != new.policy),
        ("state/cluster", old.cluster != new.cluster),
    ];
    d.fixed = fixed.into_iter().filter(|(_, changed)| *changed).map(|(k, _)| k).collect();
    d.log_level = old.log_level != new.log_level;
    #[cfg(feature = "signin")]
    {
        d.signin = old.http.signin != new.http.signin;
    }
    d
}

/// The numeric `http` settings, compared as one.
#[derive(PartialEq, Eq)]
struct HttpLimits([Option<u64>; 4]);

impl HttpLimits {
    fn of(c: &Config) -> HttpLimits {
        let h = &c.http;
        HttpLimits([h.max_body, h.max_sessions, h.max_connections, h.session_idle_ms])
    }
}


/// Starts the configured servers as upstreams 0, 1, ...: each at once,
/// except a lazy one whose lists are known ([`Lists::known`]), which sleeps;
/// the known lists of the others are listed while they start, however
/// long that takes (past the `startupWaitMs` hold of clients' `initialize`).
pub(crate) async fn start_servers(rt: &Runtime, spawner: &Spawner, cfg: &Config, lists: &Lists) {
    let mut known = lists.known(cfg.servers.iter()).await;
    for (id, s) in cfg.servers.iter().enumerate() {
        bring_up(rt, spawner, known.remove(&s.name), id, s);
    }
}

/// Starts server `s` as upstream `id`, or lets it sleep with its `known`
/// lists (see [`start_servers`]).
fn bring_up(rt: &Runtime, spawner: &Spawner, known: Option<(serde_json::Value, lists::Whence)>, id: UpstreamId, s: &ServerConfig) {
    match known {
        Some((lists, from)) => {
            let whence = match from {
                lists::Whence::Shared => "from the shared state",
                lists::Whence::Disk => "from when it last ran",
            };
            // Its own last run's lists: clients' initialize waits for it as usual.
            rt.feed(|h, now| h.handle(Input::SeedLists { up: id, lists: &lists, hold: from == lists::Whence::Disk }, now));
            if s.power.lazy {
                info!("server {}: lazy; its lists are known {whence}, it starts when used", s.name);
                spawner.reserve(rt, id, s);
            } else {
                info!("server {}: its lists are known {whence}; listed while it starts", s.name);
                spawner.start(rt, id, s);
            }
        }
        None => {
            if s.power.lazy {
                lazy_but_unknown(s);
            }
            spawner.start(rt, id, s);
        }
    }
}

fn lazy_but_unknown(s: &ServerConfig) {
    info!("server {}: lazy, but its lists are not known yet: starting it once to learn them", s.name);
}

/// What woke the task.
enum Wake {
    Asked,
    Tick,
    Server(UpstreamId, ServerAsk),
}

/// The task that runs the set of servers while `serve` runs: reloads the
/// config on a [`request`] or a change of the file, starts and stops lazy
/// servers and keeps servers' lists when the hub asks; one thing at a time.
pub(crate) async fn run(rt: Rc<Runtime>, spawner: Spawner, current: Config, settings: Settings, lists: Lists) {
    let mut state = State { rt, spawner, current, settings, lists, reloads: 0, refused: None, not_applied: Vec::new() };
    let mut seen = state.watched().and_then(|p| stamp(&p));
    state.publish();
    let requests = &wake().1;
    let asks = state.rt.server_asks();
    // A request left over from an earlier `serve` in this process is stale.
    while requests.try_recv().is_ok() {}
    // The file's poll, on an alarm of its own (not a reactor timer, see
    // `process::alarm`); without one the file is read on requests only.
    let poll = Alarm::new().map_err(|e| warn!("the config file is not watched: no timer: {e}")).ok();
    while !state.rt.closing() {
        let asked = async {
            match requests.recv().await {
                Ok(()) => Wake::Asked,
                Err(_) => smol::future::pending().await,
            }
        };
        let powered = async {
            match asks.recv().await {
                Ok((u, a)) => Wake::Server(u, a),
                Err(_) => smol::future::pending().await,
            }
        };
        let tick = async {
            match &poll {
                Some(alarm) => {
                    alarm.set(Some(Instant::now() + POLL));
                    alarm.rung().await;
                }
                None => smol::future::pending().await,
            }
            Wake::Tick
        };
        // The hub's asks first: a reload after them sees their effect.
        let wake = powered.or(asked).or(tick).await;
        if state.rt.closing() {
            break;
        }
        let asked = match wake {
            Wake::Server(u, ServerAsk::Power(p)) => {
                state.power(u, p).await;
                continue;
            }
            Wake::Server(u, ServerAsk::KeepLists) => {
                state.keep_lists(u);
                continue;
            }
            Wake::Asked => true,
            Wake::Tick => false,
        };
        state.rt.read_pins(false);
        let now = state.watched().and_then(|p| stamp(&p));
        if asked {
            info!("reloading the config (asked for)");
        } else if now != seen && now.is_some() {
            let what = state.watched().map(|p| p.display().to_string()).unwrap_or_default();
            info!("{what} changed: reloading the config");
        } else {
            continue;
        }
        seen = now;
        state.reload().await;
    }
    state.save_all_lists();
}

struct State {
    rt: Rc<Runtime>,
    spawner: Spawner,
    current: Config,
    settings: Settings,
    /// Where servers' lists are kept ([`lists`]).
    lists: Lists,
    reloads: u64,
    /// Why the last reload was refused (`file:line:col: ...` lines), until
    /// one is accepted.
    refused: Option<String>,
    /// Settings changed by the last reload that apply at the next start.
    not_applied: Vec<&'static str>,
}

impl State {
    /// The file watched: the one the running config came from, else the
    /// one named on the command line (which may appear later).
    fn watched(&self) -> Option<PathBuf> {
        self.current.source.file().or_else(|| self.settings.explicit.clone())
    }

    async fn reload(&mut self) {
        // Read off the event loop: a slow file must not stop the clients (the
        // files the config names are bounded by `small_file`, the config
        // itself by LOAD_LIMIT).
        let explicit = self.settings.explicit.clone();
        let loading = smol::unblock(move || config::load(explicit.as_deref(), &config::process_env).map_err(|e| e.to_string()));
        let too_slow = async {
            Timer::after(LOAD_LIMIT).await;
            Err(format!("reading the config took longer than {} s", LOAD_LIMIT.as_secs()))
        };
        let new = loading.or(too_slow).await.and_then(|cfg| crate::serve::options::build_hub(&cfg).map(|_| cfg));
        let new = match new {
            Ok(c) => c,
            Err(e) => {
                for line in e.lines() {
                    error!("{line}");
                }
                error!("config refused; still serving the one loaded before");
                self.refused = Some(e);
                self.publish();
                return;
            }
        };
        // Accepted: an earlier refusal no longer stands, already while the
        // servers change (a stop can take seconds).
        if self.refused.take().is_some() {
            self.publish();
        }
        for w in &new.warnings {
            warn!("{w}");
        }
        let d = diff(&self.current, &new);
        #[cfg(feature = "secrets")]
        if new.secrets != self.current.secrets {
            info!("config reloaded: the secrets file is now {}; instances started from now on read it", new.secrets.as_ref().map_or("none".into(), |p| p.display().to_string()));
        }
        #[cfg(feature = "secrets")]
        self.spawner.follow(&new);
        self.apply(&d, &new).await;
        if d.log_level {
            match (self.settings.level_fixed, new.log_level) {
                (true, _) => info!("logLevel changed; the level given on the command line or in MCPX_LOG stays"),
                (false, l) => {
                    log::set_level(l.unwrap_or(log::Level::Info));
                    self.rt.feed(|h, now| h.handle(Input::CallLog(log::enabled(log::Level::Debug)), now));
                }
            }
        }
        #[cfg(feature = "signin")]
        if d.signin {
            match self.rt.set_signin(&new.http.signin) {
                true => info!("config reloaded: the sign-in settings (http.statusPrincipals, http.signinTtlMs) applied; the status role is checked again on every request"),
                false => info!("config reloaded: the sign-in settings (http.statusPrincipals, http.signinTtlMs) changed; mcpx serves no HTTP listener to apply them to"),
            }
        }
        if !d.fixed.is_empty() {
            warn!("changed in the config but not applied until mcpx restarts: {}", d.fixed.join(", "));
        }
        if d.is_empty() {
            info!("config reloaded: nothing changed");
        }
        self.not_applied = d.fixed;
        self.reloads += 1;
        self.current = new;
        self.publish();
    }

    /// Stops what went, restarts what changed, then starts what came; one
    /// line in the log for each.
    async fn apply(&self, d: &Diff, new: &Config) {
        for name in &d.removed {
            let how = if new.disabled.contains(name) { "disabled in the configuration" } else { "removed from the configuration" };
            info!("server {name}: {how}; stopping it");
            self.stop(name, how).await;
        }
        let mut starting: Vec<&ServerConfig> = new.servers.iter().filter(|s| d.added.contains(&s.name)).collect();
        for s in &starting {
            let how = if self.current.disabled.contains(&s.name) { "enabled" } else { "added to the configuration" };
            info!("server {}: {how}", s.name);
        }
        for s in new.servers.iter().filter(|s| d.changed.contains(&s.name)) {
            info!("server {}: its configuration changed; restarting it with its new configuration", s.name);
            if !self.restart(s).await {
                starting.push(s);
            }
        }
        let mut known = self.lists.known(starting.iter().copied()).await;
        for s in starting {
            if self.rt.closing() {
                return;
            }
            let spec = crate::serve::options::upstream_spec(s);
            match self.rt.feed(|h, now| h.add_upstream(spec, now)) {
                Ok(id) => bring_up(&self.rt, &self.spawner, known.remove(&s.name), id, s),
                Err(e) => error!("server {}: not started: {e}", s.name),
            }
        }
        if d.servers_changed() {
            let list = |v: &[String]| if v.is_empty() { "-".to_string() } else { v.join(", ") };
            info!(
                "config reloaded: added {}; removed {}; restarted {}",
                list(&d.added),
                list(&d.removed),
                list(&d.changed)
            );
        }
    }

    /// The hub asks for server `u`'s process to start (a request waits for
    /// it) or to stop (idle; its lists are saved first).
    ///
    /// An instance of an isolated server (`hub::starts::isolation`) runs its
    /// server's entry, under the name `NAME#ID` in logs; its lists are its
    /// server's, not saved.
    async fn power(&self, u: UpstreamId, p: Power) {
        let template = self.rt.hub().starts().template_of(u);
        let name = self.rt.name(template.unwrap_or(u));
        let Some(s) = self.current.servers.iter().find(|s| s.name == name) else { return };
        if !self.rt.hub().upstreams().asleep(u) || self.rt.has_process(u) != (p == Power::Stop) {
            return; // no longer what the hub wants (a reload came between)
        }
        match (p, template) {
            (Power::Start, None) => self.spawner.start(&self.rt, u, s),
            (Power::Start, Some(_)) => {
                let instance = ServerConfig { name: format!("{}#{u}", s.name), ..s.clone() };
                let owner = self.rt.hub().starts().owner_principal(u).flatten().map(str::to_string);
                let who = owner.as_deref().map_or(For::Anonymous, For::Principal);
                self.spawner.start_for(&self.rt, u, &instance, who);
            }
            (Power::Stop, _) => {
                if template.is_none() {
                    self.save_lists(u, s);
                }
                self.rt.stop_process(u).await;
            }
        }
    }

    /// The hub read upstream `u`'s lists: kept, if `u` is still the
    /// upstream of its server (a reload may have come between).
    fn keep_lists(&self, u: UpstreamId) {
        let name = self.rt.name(u);
        let Some(s) = self.current.servers.iter().find(|s| s.name == name) else { return };
        if self.rt.upstream_id(&s.name) == Some(u) {
            self.save_lists(u, s);
        }
    }

    fn save_lists(&self, u: UpstreamId, s: &ServerConfig) {
        let Some(lists) = self.rt.hub().upstream_lists(u) else { return };
        self.lists.keep(&self.rt, s, &lists);
    }

    /// At shutdown: every server's lists, for the next start.
    fn save_all_lists(&self) {
        for s in &self.current.servers {
            if let Some(u) = self.rt.upstream_id(&s.name) {
                self.save_lists(u, s);
            }
        }
    }

    /// Restarts server `s`, whose entry changed, in its slot: its tools stay
    /// listed meanwhile and its requests wait for it. False when that cannot
    /// be (not running, or its new entry refused): it is then stopped, to
    /// be started as a new server.
    async fn restart(&self, s: &ServerConfig) -> bool {
        const WHY: &str = "its configuration changed";
        let Some(u) = self.rt.upstream_id(&s.name) else { return false };
        // Its lists are for what it runs now unless that changed.
        let current = self.current.servers.iter().any(|o| o.name == s.name && cache::same_source(o, s));
        match self.rt.replace_upstream(u, crate::serve::options::upstream_spec(s), WHY, current).await {
            Ok(true) => {
                if s.power.lazy && !current {
                    lazy_but_unknown(s);
                }
                self.spawner.start(&self.rt, u, s);
            }
            Ok(false) => {
                info!("server {}: lazy; its new entry starts when used", s.name);
                self.spawner.reserve(&self.rt, u, s);
            }
            // Started anew instead (its new entry clashed with the old
            // slot's, e.g. prefixes swapped between two servers).
            Err(_) => {
                self.stop(&s.name, WHY).await;
                return false;
            }
        }
        true
    }

    async fn stop(&self, name: &str, why: &str) {
        if let Some(u) = self.rt.upstream_id(name) {
            self.rt.stop_upstream(u, why).await;
        }
    }

    /// What `/status` shows under `config`.
    fn publish(&self) {
        let v = serde_json::json!({
            "file": self.current.source.file().map(|p| p.display().to_string()),
            "servers": self.current.servers.len(),
            "disabled": self.current.disabled,
            "reloads": self.reloads,
            "refused": self.refused,
            "notApplied": self.not_applied,
        });
        self.rt.feed(|h, now| h.handle(Input::ConfigStatus(v), now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Config {
        let env = |_: &str| None;
        config::parse(text, "mcpx.json", std::path::Path::new("/"), &env).expect("a valid config")
    }

    #[test]
    fn diff_names_servers_added_removed_and_changed_and_fixed_settings() {
        let old = cfg(r#"{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}, "c": {"command": "z"}}}"#);
        let new = cfg(
            r#"{"separator": "-", "logLevel": "debug",
                "mcpServers": {"d": {"command": "w"}, "a": {"command": "x"}, "b": {"command": "y", "args": ["1"]}}}"#,
        );
        let d = diff(&old, &new);
        assert_eq!(d.added, ["d"]);
        assert_eq!(d.removed, ["c"]);
        assert_eq!(d.changed, ["b"]);
        assert_eq!(d.fixed, ["separator"]);
        assert!(d.log_level);
        assert!(d.servers_changed() && !d.is_empty());
        let same = diff(&new, &new);
        assert_eq!(same, Diff::default());
        assert!(!same.servers_changed() && same.is_empty());
    }

    #[cfg(feature = "signin")]
    #[test]
    fn the_sign_in_settings_apply_at_once_and_the_listeners_other_settings_at_the_next_start() {
        let old = cfg(r#"{"mcpServers": {}, "http": {"statusPrincipals": ["alice"]}}"#);
        // (the new `http`, sign-in changed, fixed)
        let table: [(&str, bool, &[&str]); 5] = [
            (r#"{"statusPrincipals": ["alice"]}"#, false, &[]),
            (r#"{"statusPrincipals": ["bob"]}"#, true, &[]),
            (r#"{"statusPrincipals": ["alice"], "signinTtlMs": 60000}"#, true, &[]),
            (r#"{"statusPrincipals": ["alice"], "maxSessions": 5}"#, false, &["http"]),
            (r#"{"statusPrincipals": [], "allowedHosts": ["hub.example"]}"#, true, &["http"]),
        ];
        for (http, signin, fixed) in table {
            let d = diff(&old, &cfg(&format!(r#"{{"mcpServers": {{}}, "http": {http}}}"#)));
            assert_eq!((d.signin, d.fixed.as_slice(), d.is_empty()), (signin, fixed, !signin && fixed.is_empty()), "{http}");
        }
    }

    #[test]
    fn a_changed_prefix_filter_or_timeout_is_a_change() {
        let old = cfg(r#"{"mcpServers": {"a": {"command": "x"}}}"#);
        for entry in [r#""prefix": "p""#, r#""tools": {"deny": ["t"]}"#, r#""timeoutMs": 5"#, r#""env": {"K": "v"}"#] {
            let new = cfg(&format!(r#"{{"mcpServers": {{"a": {{"command": "x", {entry}}}}}}}"#));
            assert_eq!(diff(&old, &new).changed, ["a"], "{entry}");
        }
    }
}
