//! `mcpx auth login|status|logout`: a person's side of OAuth for the
//! remote servers of the config that have an `"oauth"` block.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::cmd::cli::{AuthAction, AuthArgs};
use crate::config::{self, Config, ServerConfig};
use crate::log::{self, Level};
use crate::remote::oauth::store::{ServerTokens, Store};
use crate::remote::oauth::{Authorizer, GrantKind, Interaction, OAuthSpec};
use crate::remote::url::Url;

pub fn main(args: AuthArgs) -> i32 {
    log::set_level(Level::Info);
    let cfg = match config::load(args.config.as_deref(), &config::process_env) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let result = match &args.action {
        AuthAction::Login { server, open_with } => login(&cfg, server, open_with.clone()),
        AuthAction::Status => status(&cfg),
        AuthAction::Logout { server, principal } => logout(&cfg, server, principal.as_deref()),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("mcpx: {e}");
            1
        }
    }
}

/// The configured server `name` and its `"oauth"` block.
fn oauth_server<'a>(cfg: &'a Config, name: &str) -> Result<(&'a ServerConfig, &'a OAuthSpec), String> {
    let s = cfg.servers.iter().find(|s| s.name == name).ok_or_else(|| format!("{}: no enabled server named {name:?}", cfg.source))?;
    let o = s.remote.as_ref().and_then(|r| r.oauth.as_ref());
    o.map(|o| (s, o)).ok_or_else(|| format!("{}: server {name:?} has no \"oauth\" block (add \"oauth\": {{}} to its entry)", cfg.source))
}

fn oauth_servers(cfg: &Config) -> impl Iterator<Item = (&ServerConfig, &OAuthSpec)> {
    cfg.servers.iter().filter_map(|s| s.remote.as_ref().and_then(|r| r.oauth.as_ref()).map(|o| (s, o)))
}

fn login(cfg: &Config, name: &str, open_with: Option<String>) -> Result<(), String> {
    let (s, o) = oauth_server(cfg, name)?;
    let r = s.remote.as_ref().ok_or("not a remote server")?;
    let url = Url::parse(&r.url)?;
    let a = Authorizer::new(name, url, o.clone(), r.ca_file.clone(), Duration::from_secs(10), Interaction::Login { open_with });
    crate::process::reactor::block_on(a.login()).map_err(|e| format!("auth login {name}: {e}"))?;
    let store = Store { path: o.store.clone() };
    let t = store.tokens(name).map_err(|e| e.to_string())?.ok_or("the tokens were not stored")?;
    println!("{name}: logged in; {} (tokens in {})", describe(&t, now_s()), store.path.display());
    Ok(())
}

fn status(cfg: &Config) -> Result<(), String> {
    let mut any = false;
    for (s, o) in oauth_servers(cfg) {
        any = true;
        let url = s.remote.as_ref().map(|r| r.url.as_str()).unwrap_or_default();
        let stored = Store { path: o.store.clone() }.tokens(&s.name).map_err(|e| e.to_string())?;
        let line = match stored {
            Some(t) if t.url == Url::parse(url).map(|u| u.to_string()).unwrap_or_default() => format!("logged in; {}", describe(&t, now_s())),
            Some(t) => format!("not logged in (the stored tokens are for {}, not {url})", t.url),
            None if o.grant == GrantKind::ClientCredentials => "not authorized yet (client credentials: `mcpx serve` gets a token by itself)".into(),
            None => format!("not logged in: run `mcpx auth login {}`", s.name),
        };
        println!("{}: {line}", s.name);
    }
    if !any {
        println!("{}: no server has an \"oauth\" block", cfg.source);
    }
    Ok(())
}

fn logout(cfg: &Config, name: &str, principal: Option<&str>) -> Result<(), String> {
    let (_, o) = oauth_server(cfg, name)?;
    let store = Store { path: o.store.clone() };
    let Some(p) = principal else {
        if store.remove_tokens(name, None).map_err(|e| e.to_string())? {
            println!("{name}: logged out (tokens removed from {})", store.path.display());
        } else {
            println!("{name}: was not logged in");
        }
        return Ok(());
    };
    #[cfg(feature = "secrets")]
    if o.per_principal.is_some() {
        return logout_principal(cfg, name, p);
    }
    Err(format!("{}: server {name:?} has no \"perPrincipal\" tokens (none for principal '{p}')", cfg.source))
}

/// Forgets principal `p`'s tokens for server `name`, where the hub keeps
/// them (the shared store when replicas share state).
#[cfg(feature = "secrets")]
fn logout_principal(cfg: &Config, name: &str, p: &str) -> Result<(), String> {
    let cluster = crate::cluster::runtime::Cluster::new(&cfg.cluster)?.map(std::rc::Rc::new);
    let kept = crate::serve::kept::kept_tokens(cfg, cluster.as_ref());
    let place = kept.file().map_or_else(|| "the shared state store".to_string(), |f| f.path.display().to_string());
    if crate::process::reactor::block_on(remove_patiently(&kept, name, p)).map_err(|e| e.to_string())? {
        println!("{name}: logged out for principal '{p}' (tokens removed from {place})");
    } else {
        println!("{name}: was not logged in for principal '{p}'");
    }
    Ok(())
}

/// How long a logout waits for a shared store that is slow or restarting:
/// one ask gives up after the store's bound (`cluster::store::OP_TIMEOUT`),
/// and a command run by hand is asked again rather than failing on one
/// slow answer.
#[cfg(all(feature = "secrets", feature = "cluster"))]
const SHARED_PATIENCE: Duration = Duration::from_secs(5);

/// `kept.remove`, asked again while the shared store does not answer, for
/// at most [`SHARED_PATIENCE`]. A removal whose answer was lost is found
/// done by the next ask ("was not logged in").
#[cfg(all(feature = "secrets", feature = "cluster"))]
async fn remove_patiently(kept: &crate::remote::oauth::kept::Kept, name: &str, p: &str) -> Result<bool, crate::remote::oauth::store::StoreError> {
    let until = std::time::Instant::now() + SHARED_PATIENCE;
    let mut said = false;
    loop {
        match kept.remove(name, p).await {
            Err(crate::remote::oauth::store::StoreError::Shared(why)) if std::time::Instant::now() < until => {
                if !said {
                    eprintln!("{name}: {why}; asking again for up to {} s", SHARED_PATIENCE.as_secs());
                    said = true;
                }
                smol::Timer::after(Duration::from_millis(250)).await;
            }
            done => return done,
        }
    }
}

/// Without the shared store a file's answer is final.
#[cfg(all(feature = "secrets", not(feature = "cluster")))]
async fn remove_patiently(kept: &crate::remote::oauth::kept::Kept, name: &str, p: &str) -> Result<bool, crate::remote::oauth::store::StoreError> {
    kept.remove(name, p).await
}

fn now_s() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// `expires in 59 min; scopes: a b`.
fn describe(t: &ServerTokens, now: u64) -> String {
    let expiry = match t.expires_at {
        Some(e) if e > now => match e - now {
            s if s < 120 => format!("expires in {s} s"),
            s if s < 2 * 3600 => format!("expires in {} min", s / 60),
            s => format!("expires in {} h", s / 3600),
        },
        Some(_) if t.refresh_token.is_some() => "expired (refreshed on next use)".to_string(),
        Some(_) => "expired: log in again".to_string(),
        None => "no expiry given".to_string(),
    };
    let scopes = if t.scopes.is_empty() { "-".to_string() } else { t.scopes.join(" ") };
    format!("{expiry}; scopes: {scopes}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_tokens() {
        let t = |e: Option<u64>, rt: bool| ServerTokens {
            expires_at: e,
            refresh_token: rt.then(|| "r".to_string()),
            scopes: vec!["a".into(), "b".into()],
            ..Default::default()
        };
        assert_eq!(describe(&t(Some(1000 + 3540), false), 1000), "expires in 59 min; scopes: a b");
        assert_eq!(describe(&t(Some(1030), false), 1000), "expires in 30 s; scopes: a b");
        assert_eq!(describe(&t(Some(900), true), 1000), "expired (refreshed on next use); scopes: a b");
        assert_eq!(describe(&t(Some(900), false), 1000), "expired: log in again; scopes: a b");
        assert_eq!(describe(&t(None, false), 1000), "no expiry given; scopes: a b");
    }
}
