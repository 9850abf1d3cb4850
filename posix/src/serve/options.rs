//! The config mapped into the options of the hub and of the HTTP listener
//! (the runtime's one place for it; `mcpx check` and reloads use it too).

use crate::cmd::cli::ServeArgs;
use crate::cluster::runtime as cluster;
use crate::config::{self, Config};
use crate::http::HttpConfig;
use crate::hub::{self, Hub, HubOptions, UpstreamSpec};

/// The HTTP server's settings from the command line and the config.
pub fn http_config(args: &ServeArgs, cfg: &Config) -> Option<HttpConfig> {
    let addr = args.http?;
    let mut h = HttpConfig::new(addr);
    h.token = args.token.clone().or_else(|| cfg.http.bearer.clone());
    h.auth = cfg.http.auth.clone();
    h.insecure_no_auth = args.insecure_no_auth;
    #[cfg(feature = "cli")]
    {
        if let Some(ops) = &cfg.http.operators {
            h.operators = ops.clone();
        }
        h.config_file = cfg.source.file();
    }
    h.allowed_origins = cfg.http.allowed_origins.clone();
    h.allowed_hosts = cfg.http.allowed_hosts.clone();
    h.limits = http_limits(cfg);
    h.hop = cluster::hop_config(&cfg.cluster);
    #[cfg(feature = "signin")]
    {
        h.signin = cfg.http.signin.clone();
        h.shared_key = cfg.cluster.state_key.as_ref().map(|k| k.0);
    }
    Some(h)
}

/// The HTTP listener's caps: its defaults, tightened by `MCPX_LIMITS`, then
/// the config's `http` settings.
fn http_limits(cfg: &Config) -> crate::http::Limits {
    let mut l = crate::http::Limits::default();
    let limits = crate::limits::get();
    l.max_body = l.max_body.min(limits.max_frame_bytes);
    l.max_sessions = l.max_sessions.min(limits.max_sessions);
    let n = |v: Option<u64>, d: usize| v.map_or(d, |v| usize::try_from(v).unwrap_or(usize::MAX));
    l.max_body = n(cfg.http.max_body, l.max_body);
    l.max_sessions = n(cfg.http.max_sessions, l.max_sessions);
    l.max_connections = n(cfg.http.max_connections, l.max_connections);
    l.session_idle_ms = cfg.http.session_idle_ms.unwrap_or(l.session_idle_ms);
    l
}

/// The hub for a parsed config, or the problem `serve` refuses it for
/// (`file:line:col: message` where the file says where).
pub fn build_hub(cfg: &Config) -> Result<Hub, String> {
    let max = crate::limits::get().max_upstreams;
    if cfg.servers.len() > max {
        return Err(format!(
            "{}: {} servers configured; this build runs at most {max} (disable some, or raise the cap with MCPX_LIMITS=upstreams=N)",
            cfg.source,
            cfg.servers.len()
        ));
    }
    let (specs, opts) = hub_parts(cfg);
    Hub::new(specs, opts).map_err(|e| match hub_error_position(cfg, &e) {
        Some(at) => format!("{at}: {e}"),
        None => format!("{}: {e}", cfg.source),
    })
}

/// The hub's view of the configuration.
fn hub_parts(cfg: &Config) -> (Vec<UpstreamSpec>, HubOptions) {
    let specs = cfg.servers.iter().map(upstream_spec).collect();
    let mut opts = HubOptions { separator: cfg.separator.clone(), ..HubOptions::default() };
    let limits = crate::limits::get();
    opts.max_pending = opts.max_pending.min(limits.max_in_flight);
    // One count per cap: sessions are counted, shared per principal and
    // evicted by the HTTP listener's quota (`http.maxSessions`). The hub's
    // table holds those, one client per 2026-07-28 request in flight (each
    // on a connection of its own) and the stdio client, so it is sized to
    // hold them all and never refuses first.
    let http = http_limits(cfg);
    opts.max_clients = http.max_sessions.saturating_add(http.max_connections).saturating_add(1);
    if !cfg.roots.is_empty() {
        let roots: Vec<serde_json::Value> = cfg
            .roots
            .iter()
            .map(|r| match &r.name {
                Some(n) => serde_json::json!({"uri": r.uri, "name": n}),
                None => serde_json::json!({"uri": r.uri}),
            })
            .collect();
        opts.roots = Some(serde_json::Value::Array(roots));
    }
    opts.cache_ttl_ms = cfg.cache_ttl_ms.unwrap_or(opts.cache_ttl_ms);
    opts.cache_public = cfg.cache_public.unwrap_or(opts.cache_public);
    opts.input_ttl_ms = cfg.input_ttl_ms.unwrap_or(opts.input_ttl_ms);
    opts.startup_wait_ms = cfg.startup_wait_ms.unwrap_or(opts.startup_wait_ms);
    cfg.tasks.apply(&mut opts.tasks);
    opts.policy = cfg.policy.clone();
    opts.cluster = cfg.cluster.hub_options();
    #[cfg(feature = "traces")]
    {
        opts.traces = cfg.traces.as_ref().map(|t| hub::trace::TraceOptions { sample_ratio: t.sample_ratio, max_queue: usize::try_from(t.max_queue).unwrap_or(usize::MAX) });
    }
    opts.cursor_key = {
        use nanorand::Rng as _;
        nanorand::WyRand::new().generate::<u64>()
    };
    (specs, opts)
}

/// The hub's view of one configured server.
pub(crate) fn upstream_spec(s: &config::ServerConfig) -> UpstreamSpec {
    let mut u = UpstreamSpec::new(&s.name);
    u.prefix = s.prefix.clone();
    u.tools_allow = s.tools_allow.clone();
    u.tools_deny = s.tools_deny.clone();
    if let Some(t) = s.timeout_ms {
        u.timeout_ms = t;
    }
    u.lazy = s.power.lazy;
    u.idle_ms = s.power.idle_stop_ms.unwrap_or(0);
    if let Some(r) = &s.revisions {
        u.revisions = r.clone();
    }
    u.trusted = s.trusted;
    u.required = s.required;
    u.isolation = s.isolation;
    u.remote = s.remote.is_some();
    #[cfg(feature = "secrets")]
    {
        u.own_credentials = s.own_credentials();
    }
    u
}

/// Where in the config file the hub's objection points.
fn hub_error_position(cfg: &Config, e: &hub::ConfigError) -> Option<String> {
    let server = |name: &str| crate::bytes::jsonpos::Path::root().key("mcpServers").key(name);
    let path = match e {
        hub::ConfigError::PrefixCollision(_, b) => {
            let p = server(b);
            if cfg.servers.iter().any(|s| s.name == *b && s.prefix != s.name) {
                p.key("prefix")
            } else {
                p
            }
        }
        hub::ConfigError::UnknownRevision { server: name, revision } => {
            let s = cfg.servers.iter().find(|s| s.name == *name)?;
            let i = s.revisions.as_ref()?.iter().position(|r| r == revision)?;
            server(name).key("revisions").idx(i)
        }
        hub::ConfigError::NoUsableRevision(name) => server(name).key("revisions"),
        hub::ConfigError::BadSeparator(_) => crate::bytes::jsonpos::Path::root().key("separator"),
        _ => return None,
    };
    cfg.position(&path)
}
