//! The config file: Claude-Desktop-compatible JSON plus a few mcpx keys.
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "github": {
//!       "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
//!       "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"},
//!       "cwd": "~/src", "disabled": false, "timeoutMs": 60000,
//!       "tools": {"allow": ["*"], "deny": ["delete_*"]},
//!       "prefix": "gh", "revisions": ["2025-06-18"],
//!       "inheritEnv": false, "envAllow": ["GITHUB_*"], "maxRestarts": 10
//!     },
//!     "remote": {
//!       "url": "https://example.com/mcp",
//!       "headers": {"Authorization": "Bearer ${TOKEN}"},
//!       "caFile": "~/ca.pem", "timeoutMs": 60000
//!     }
//!   },
//!   "separator": "__", "roots": ["~/src"], "logLevel": "info",
//!   "cacheTtlMs": 60000, "cachePublic": false, "inputTtlMs": 300000,
//!   "shutdownGraceMs": 10000, "startupWaitMs": 10000
//! }
//! ```
//!
//! `${VAR}` in any string value is replaced by the environment variable (an
//! error names it when unset); `${VAR:-default}` gives a default (also when
//! VAR is empty); `$${` writes a literal `${`; any other `$` is kept. Relative
//! `cwd`, `caFile` and `roots` paths are taken from the config file's folder,
//! `~/` from HOME. Servers keep the file's order. Errors and warnings carry
//! `file:line:column`.
//!
//! A server with `"url"` is remote: Streamable HTTP, falling back to the
//! 2024-11-05 HTTP+SSE transport; `"type": "http"` (or `"streamable-http"`)
//! and `"type": "sse"` pin one of the two. `"headers"` go with every request,
//! `"caFile"` (PEM) adds trusted CAs for https.
//!
//! `"inheritEnv"` and `"envAllow"` choose what a local server inherits of
//! mcpx's environment (see `childenv`); `"maxRestarts"` bounds the restarts
//! of a server that keeps failing (see `backoff`).
//!
//! `"cacheTtlMs"` and `"cachePublic"` are the caching hints (`ttlMs`,
//! `cacheScope`) 2026-07-28 clients get on results of servers that give none;
//! `"inputTtlMs"` is how long such a client has to answer a server's request
//! for input.
//!
//! `"shutdownGraceMs"` is how long a SIGTERM/SIGINT waits for the answers
//! to requests in flight before answering them with an error (see `serve`).

//!
//! The file is read block by block, one module each: `server` (an entry of
//! `"mcpServers"`), `process` (its process keys), `remote` (its `"url"` and
//! `"oauth"`), `http` (`"auth"`, `"http"`), `policy`, `tasks`, `cluster`
//! (`"state"`, `"cluster"`), `roots`; `parse` reads the top level. Each maps
//! JSON into the options of the part that uses them (the hub's, the
//! listener's, the policy's); only the runtime wires them together.

use std::fmt;
use std::path::{Path as FsPath, PathBuf};

use crate::bytes::jsonpos::{self, Path};
use crate::log::Level;

#[cfg(feature = "consent")]
mod approvals;
mod cluster;
mod ctx;
mod error;
mod expand;
mod http;
mod parse;
mod policy;
mod process;
mod remote;
mod roots;
mod server;
mod tasks;
#[cfg(feature = "traces")]
mod traces;
#[cfg(feature = "traces")]
pub use traces::TraceSettings;
#[cfg(test)]
mod tests;

pub use cluster::ClusterSettings;
#[cfg(test)]
pub(crate) use cluster::StateKey;
#[cfg(all(test, feature = "cli"))]
pub use expand::expand;
#[cfg(feature = "secrets")]
pub use expand::resolve_secrets;
pub use error::{ConfigError, Problem, ProblemKind};
pub use http::HttpSettings;
pub use parse::parse;
pub use process::Power;
#[cfg(test)]
pub use remote::RemoteServer;
pub use roots::Root;
pub use server::ServerConfig;
pub use tasks::TaskSettings;
pub use crate::host::dirs::{process_env, state_dir, EnvLookup};

/// The default separator between a server's prefix and a tool name.
pub use mcpx_core::names::DEFAULT_SEPARATOR;
/// Longest server name or prefix accepted.
pub const MAX_NAME_LEN: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Loaded from this file.
    File(PathBuf),
    /// No config file was found: the built-in demo hub.
    BuiltIn,
}

impl Source {
    /// The file a config came from, if any.
    pub fn file(&self) -> Option<PathBuf> {
        match self {
            Source::File(p) => Some(p.clone()),
            Source::BuiltIn => None,
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::File(p) => write!(f, "{}", p.display()),
            Source::BuiltIn => f.write_str("built-in default (no config file found)"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub source: Source,
    /// Enabled, supported servers in file order.
    pub servers: Vec<ServerConfig>,
    /// Names of servers with `"disabled": true`.
    pub disabled: Vec<String>,
    /// `"secrets"`: the file of each principal's own secrets.
    pub secrets: Option<PathBuf>,
    pub separator: String,
    pub roots: Vec<Root>,
    pub log_level: Option<Level>,
    /// `"cacheTtlMs"`, `"cachePublic"`: the caching hints given to modern
    /// clients for results of servers that give none (legacy servers).
    pub cache_ttl_ms: Option<u64>,
    pub cache_public: Option<bool>,
    /// `"inputTtlMs"`: how long a modern client has to answer a server's
    /// request for input (the life of its `requestState`).
    pub input_ttl_ms: Option<u64>,
    /// `"shutdownGraceMs"`: how long a signal's drain waits for answers.
    pub shutdown_grace_ms: Option<u64>,
    /// `"startupWaitMs"`: how long a client's `initialize` waits for servers still starting.
    pub startup_wait_ms: Option<u64>,
    /// `"auth"` and `"http"`: settings of `mcpx serve --http`.
    pub http: HttpSettings,
    /// `"policy"`: limits, catalogs, validation, audit, metrics (see
    /// [`crate::policy::PolicyConfig`]).
    pub policy: crate::policy::PolicyConfig,
    /// `"tasks"`: caps of the tasks mcpx runs and relays (see [`TaskSettings`]).
    pub tasks: TaskSettings,
    /// `"state"` and `"cluster"`: replicas sharing state (see [`ClusterSettings`]).
    pub cluster: ClusterSettings,
    /// `"traces"`: OpenTelemetry export (see [`TraceSettings`]); `None`: off.
    #[cfg(feature = "traces")]
    pub traces: Option<TraceSettings>,
    /// Non-fatal problems (each shown `file:line:col: path: message`).
    pub warnings: Vec<Problem>,
    /// The file's text, to point at problems found later (empty if built in).
    pub text: String,
}

impl Config {
    /// `file:line:col` of the member at `path`, for problems found after
    /// parsing (e.g. by the hub).
    pub fn position(&self, path: &Path) -> Option<String> {
        let Source::File(f) = &self.source else { return None };
        let off = jsonpos::locate(&self.text, path)?;
        let (l, c) = jsonpos::line_col(&self.text, off);
        Some(format!("{}:{l}:{c}", f.display()))
    }
}

/// Files tried, in order, when no `--config` is given.
pub fn search_path(env: EnvLookup<'_>) -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("mcpx.json")];
    match env("XDG_CONFIG_HOME").filter(|s| !s.is_empty()) {
        Some(x) => out.push(PathBuf::from(x).join("mcpx").join("config.json")),
        None => {
            if let Some(h) = env("HOME").filter(|s| !s.is_empty()) {
                out.push(PathBuf::from(h).join(".config").join("mcpx").join("config.json"));
            }
        }
    }
    out
}

/// Loads `explicit` (which must exist), else the first file of
/// [`search_path`] that exists, else the built-in default.
pub fn load(explicit: Option<&FsPath>, env: EnvLookup<'_>) -> Result<Config, ConfigError> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => match search_path(env).into_iter().find(|p| p.is_file()) {
            Some(p) => p,
            None => return Ok(builtin_default()),
        },
    };
    let shown = path.display().to_string();
    let src = std::fs::read_to_string(&path)
        .map_err(|e| ConfigError::one(&shown, None, ProblemKind::Unreadable(e.to_string())))?;
    let base = path
        .parent()
        .map(|p| if p.as_os_str().is_empty() { FsPath::new(".") } else { p })
        .unwrap_or(FsPath::new("."))
        .to_path_buf();
    let mut cfg = parse(&src, &shown, &base, env)?;
    cfg.source = Source::File(path);
    Ok(cfg)
}

/// The hub used when no config file exists: two instances of this binary's
/// own demo server (`example-server --demo`: a few harmless tools, no test
/// fixtures), so a new user sees aggregation at once.
pub fn builtin_default() -> Config {
    let exe = std::env::current_exe()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "mcpx".to_string());
    let server = |name: &str| ServerConfig {
        name: name.to_string(),
        command: exe.clone(),
        args: vec!["example-server".into(), "--demo".into(), "--name".into(), name.to_string()],
        env: Vec::new(),
        cwd: None,
        timeout_ms: None,
        tools_allow: Vec::new(),
        tools_deny: Vec::new(),
        prefix: name.to_string(),
        revisions: None,
        trusted: false,
        required: false,
        remote: None,
        env_policy: Default::default(),
        max_restarts: crate::servers::backoff::DEFAULT_MAX_RESTARTS,
        power: Power::default(),
        isolation: Default::default(),
    };
    Config {
        source: Source::BuiltIn,
        servers: vec![server("demo"), server("notes")],
        disabled: Vec::new(),
        secrets: None,
        separator: DEFAULT_SEPARATOR.to_string(),
        roots: Vec::new(),
        log_level: None,
        cache_ttl_ms: None,
        cache_public: None,
        input_ttl_ms: None,
        shutdown_grace_ms: None,
        startup_wait_ms: None,
        http: HttpSettings::default(),
        policy: Default::default(),
        tasks: TaskSettings::default(),
        cluster: ClusterSettings::default(),
        #[cfg(feature = "traces")]
        traces: None,
        warnings: Vec::new(),
        text: String::new(),
    }
}
