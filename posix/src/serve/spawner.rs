//! Starting a configured server's transport: a supervised child or a
//! remote connection (at startup, and for servers a reload adds).

#[cfg(feature = "secrets")]
use std::cell::RefCell;
#[cfg(feature = "secrets")]
use std::path::PathBuf;
use std::rc::Rc;

use smol::Task;

use super::runtime::{Runtime, Upstream};
use crate::config;
#[cfg(feature = "secrets")]
use super::secrets;
use super::secrets::For;
#[cfg(feature = "secrets")]
use crate::hub::Next;
use crate::hub::UpstreamId;
use crate::process::exec::Executor;
use crate::remote::{self, RemoteSpec};
#[cfg(feature = "secrets")]
use crate::remote::oauth::delegated::Flows;
#[cfg(all(feature = "secrets", feature = "oauth"))]
use crate::remote::oauth::exchange::Exchanges;
use crate::process::supervise::{self, ProcessSpec};
use crate::servers::events::Events;

/// What starting a server's transport needs (at startup, and for servers a
/// reload adds).
pub(crate) struct Spawner {
    pub(super) ex: Rc<Executor>,
    pub(super) sup_opts: supervise::Options,
    pub(super) events: Rc<dyn Events>,
    pub(super) catalog: Rc<dyn remote::Catalog>,
    /// The config's `"secrets"` file (a reload's, once one applied).
    #[cfg(feature = "secrets")]
    pub(super) secrets: RefCell<Option<PathBuf>>,
    /// The authorizations principals complete in their browsers, for
    /// `"perPrincipal"` servers (shared with the HTTP listener's pages).
    #[cfg(feature = "secrets")]
    pub(super) flows: Rc<Flows>,
    /// Each principal's token to mcpx and the tokens exchanged for it, for
    /// `"tokenExchange"` servers (the HTTP listener hands over the former).
    #[cfg(all(feature = "secrets", feature = "oauth"))]
    pub(super) exchanges: Rc<Exchanges>,
}

impl Spawner {
    /// The spawner of `cfg`'s servers. Its per-principal parts are shared
    /// with the HTTP listener `http`: the authorizations of "perPrincipal"
    /// servers, completed on its pages (their tokens kept as
    /// `super::kept` says), and what "tokenExchange" servers
    /// exchange, each principal's token to mcpx as it verified it.
    pub(super) fn new(
        ex: Rc<Executor>,
        sup_opts: supervise::Options,
        events: Rc<dyn Events>,
        catalog: Rc<dyn remote::Catalog>,
        cfg: &config::Config,
        http: Option<&crate::http::Http>,
        cluster: Option<&Rc<crate::cluster::runtime::Cluster>>,
    ) -> Spawner {
        #[cfg(feature = "secrets")]
        let flows = Rc::new(Flows::new(super::kept::kept_tokens(cfg, cluster)));
        #[cfg(all(feature = "secrets", feature = "oauth"))]
        let exchanges = Rc::new(Exchanges::default());
        if let Some(h) = http {
            #[cfg(feature = "secrets")]
            h.use_flows(flows.clone());
            #[cfg(all(feature = "secrets", feature = "oauth"))]
            h.use_exchanges(exchanges.clone());
            #[cfg(not(feature = "secrets"))]
            let _ = h;
        }
        #[cfg(not(feature = "secrets"))]
        let _ = cluster;
        let spawner = Spawner {
            ex,
            sup_opts,
            events,
            catalog,
            #[cfg(feature = "secrets")]
            secrets: RefCell::new(None),
            #[cfg(feature = "secrets")]
            flows,
            #[cfg(all(feature = "secrets", feature = "oauth"))]
            exchanges,
        };
        #[cfg(feature = "secrets")]
        spawner.follow(cfg);
        #[cfg(not(feature = "secrets"))]
        let _ = cfg;
        spawner
    }

    /// Starts configured server `s` as upstream `id` (a new id, or the slot
    /// of a server [`Runtime::stop_upstream`] has stopped).
    pub(crate) fn start(&self, rt: &Runtime, id: UpstreamId, s: &config::ServerConfig) {
        self.start_for(rt, id, s, For::Everyone);
    }

    /// Starts server `s` as upstream `id` for `who`, with `who`'s secrets
    /// (`secrets`); one it lacks is reported as the attempt's failure
    /// (its callers are told why), nothing started.
    #[cfg(feature = "secrets")]
    pub(crate) fn start_for(&self, rt: &Runtime, id: UpstreamId, s: &config::ServerConfig, who: For<'_>) {
        match secrets::resolve(s, self.secrets.borrow().as_deref(), who) {
            Ok(s) => {
                let (up, task) = spawn_upstream(self, id, &s, who);
                Self::put(rt, id, &s.name, Some(up), Some(task));
            }
            Err(r) => {
                warn!("{}", r.log);
                self.events.exited(id, &r.caller, "", Next::Stop);
            }
        }
    }

    /// A build without per-principal secrets: as the template.
    #[cfg(not(feature = "secrets"))]
    pub(crate) fn start_for(&self, rt: &Runtime, id: UpstreamId, s: &config::ServerConfig, who: For<'_>) {
        let (up, task) = spawn_upstream(self, id, s, who);
        Self::put(rt, id, &s.name, Some(up), Some(task));
    }

    /// The per-principal settings of `cfg` (at start, and a reload's): its
    /// `"secrets"` file, for the next starts; its `"perPrincipal"` servers,
    /// whose authorizations a principal sees and revokes on the status
    /// page; whether a server exchanges principals' tokens
    /// (`"tokenExchange"`: the listener keeps them only then).
    #[cfg(feature = "secrets")]
    pub(crate) fn follow(&self, cfg: &config::Config) {
        *self.secrets.borrow_mut() = cfg.secrets.clone();
        self.flows.set_servers(cfg.servers.iter().filter(|s| s.per_principal_oauth().is_some()).map(|s| s.name.clone()).collect());
        #[cfg(feature = "oauth")]
        self.exchanges.set_wanted(cfg.servers.iter().any(|s| s.token_exchange().is_some()));
    }

    /// Gives slot `id` to server `s` without starting it (a lazy server
    /// that sleeps until used).
    pub(crate) fn reserve(&self, rt: &Runtime, id: UpstreamId, s: &config::ServerConfig) {
        Self::put(rt, id, &s.name, None, None);
    }

    fn put(rt: &Runtime, id: UpstreamId, name: &str, up: Option<Upstream>, task: Option<Task<()>>) {
        let mut ups = rt.upstreams.borrow_mut();
        let mut tasks = rt.tasks.borrow_mut();
        let mut names = rt.names.borrow_mut();
        if ups.len() <= id {
            ups.resize_with(id + 1, || None);
            tasks.resize_with(id + 1, || None);
            names.resize(id + 1, String::new());
        }
        ups[id] = up;
        tasks[id] = task;
        names[id] = name.to_string();
    }
}

/// Starts the transport of configured server `s` as upstream `id`, for `who`.
fn spawn_upstream(sp: &Spawner, id: UpstreamId, s: &config::ServerConfig, who: For<'_>) -> (Upstream, Task<()>) {
    let (ex, sup_opts, events, catalog) = (&sp.ex, &sp.sup_opts, &sp.events, &sp.catalog);
    match &s.remote {
        Some(r) => {
            let spec = RemoteSpec {
                name: s.name.clone(),
                url: r.url.clone(),
                headers: r.headers.clone(),
                ca_file: r.ca_file.clone(),
                timeout_ms: s.timeout_ms.unwrap_or(60_000),
                mode: r.mode,
                oauth: r.oauth.clone(),
            };
            let mut opts = remote::Options::default();
            opts.restart.max_restarts = s.max_restarts;
            // A principal's instance of a "perPrincipal" server: its own
            // tokens; of a "tokenExchange" one: tokens exchanged for its own.
            #[cfg(feature = "secrets")]
            if let For::Principal(p) = who {
                // An instance is named `NAME#ID` (reload): its tokens are kept under NAME.
                let server = s.name.strip_suffix(&format!("#{id}")).unwrap_or(&s.name).to_string();
                let principal = p.to_string();
                if s.per_principal_oauth().is_some() {
                    opts.interaction = remote::oauth::Interaction::Delegated { server, principal, flows: sp.flows.clone() };
                } else {
                    #[cfg(feature = "oauth")]
                    if s.token_exchange().is_some() {
                        opts.interaction = remote::oauth::Interaction::Exchanged { server, principal, exchanges: sp.exchanges.clone() };
                    }
                }
            }
            #[cfg(not(feature = "secrets"))]
            let _ = who;
            let (r, task) = remote::spawn(ex, id, spec, opts, events.clone(), Some(catalog.clone()));
            (Upstream::Remote(r), task)
        }
        None => {
            let spec = ProcessSpec {
                name: s.name.clone(),
                command: s.command.clone(),
                args: s.args.clone(),
                env: s.env.clone(),
                env_policy: s.env_policy.clone(),
                cwd: s.cwd.clone(),
            };
            let mut opts = sup_opts.clone();
            opts.restart.max_restarts = s.max_restarts;
            let (u, task) = supervise::spawn(ex, id, spec, opts, events.clone());
            (Upstream::Local(u), task)
        }
    }
}
