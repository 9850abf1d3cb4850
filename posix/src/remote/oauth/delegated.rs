//! Each principal's own tokens for a server (`"oauth": {"perPrincipal":
//! true}`): the authorization code flows mcpx starts for a person, which
//! that person completes in their own browser.
//!
//! A call of a principal without tokens for the server begins a flow
//! ([`Flows::begin`]); what the caller is shown is mcpx's own page
//! `/connect/ID`, not the authorization server's URL. The person opens it
//! signed in to mcpx as themselves ([`Flows::open`] checks it and binds the
//! flow to that browser with a cookie of its own), is sent on to the
//! authorization server, and comes back to `/oauth/callback`
//! ([`Flows::finish`]: the `state`, the same browser, the issuer, the code
//! exchanged with the PKCE verifier). The tokens are stored for that
//! principal alone; the call, tried again, goes through.
//!
//! A flow lasts [`FLOW_TTL`]; a principal has at most
//! [`MAX_PER_PRINCIPAL`] at once (one unopened per server: asked again, it
//! is shown again), and the hub at most [`MAX_FLOWS`].

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;
use std::time::{Duration, Instant};

use nanorand::ChaCha20;

pub use super::ask::Ask;
use super::error::{Error, RedirectError};
use super::kept::Kept;
use super::token::ClientId;
use super::{check_redirect, pkce, Authorizer, Discovered};
use crate::bytes::ct_eq;

/// How long a person has to open the page and authorize.
pub const FLOW_TTL: Duration = Duration::from_secs(600);
/// Flows one principal may have waiting.
pub const MAX_PER_PRINCIPAL: usize = 8;
/// Flows waiting in all.
pub const MAX_FLOWS: usize = 256;

/// The authorization request the person's browser is sent to, and what
/// exchanging its answer needs.
pub(super) struct Request {
    pub(super) authorization_url: String,
    pub(super) state: String,
    pub(super) verifier: String,
    pub(super) redirect_uri: String,
    pub(super) client: ClientId,
    pub(super) discovered: Discovered,
    pub(super) scopes: Vec<String>,
}

struct Flow {
    ask: Ask,
    request: Request,
    authz: Rc<Authorizer>,
    until: Instant,
    /// The value of the cookie that binds the flow to the browser that
    /// opened its page (signed in as its principal); `None` until opened.
    browser: Option<String>,
}

/// The answer to a browser at `/connect/ID`.
#[derive(Debug, PartialEq, Eq)]
pub enum Opened {
    /// Go to the authorization server (`url`) to authorize `server`; set
    /// this cookie first (the flow's browser binding), `secure` when the
    /// hub's public URL is https.
    Authorize { url: String, cookie: String, server: String, secure: bool },
    /// No such flow (never, expired, or done).
    Unknown,
    /// The browser is signed in as someone else than the flow's principal.
    NotYours,
}

/// Why a redirect to `/oauth/callback` did not authorize.
#[derive(Debug)]
pub enum Refused {
    /// No waiting flow has this `state` (forged, expired, or used).
    UnknownState,
    /// The browser is not the one that opened the flow's page.
    OtherBrowser,
    Redirect(RedirectError),
    Token(Error),
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::UnknownState => f.write_str("no authorization is waiting for this answer (it expired, was used, or was never started here)"),
            Refused::OtherBrowser => f.write_str("this answer comes back to another browser than the one that opened the authorization page"),
            Refused::Redirect(e) => e.fmt(f),
            Refused::Token(e) => e.fmt(f),
        }
    }
}

/// The flows waiting for their people, and the tokens they gave (kept),
/// shared by every per-principal server and the HTTP listener's pages.
pub struct Flows {
    flows: RefCell<Vec<Flow>>,
    rng: RefCell<Rng>,
    kept: Kept,
    /// The `"perPrincipal"` servers of the config in force.
    servers: RefCell<Vec<String>>,
}

/// The flows' random source (ids, `state`, verifiers, cookies).
struct Rng(ChaCha20);

impl Default for Rng {
    fn default() -> Rng {
        Rng(ChaCha20::new())
    }
}

impl fmt::Debug for Flows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Flows({} waiting)", self.flows.borrow().len())
    }
}

impl Flows {
    pub fn new(kept: Kept) -> Flows {
        Flows { flows: RefCell::default(), rng: RefCell::default(), kept, servers: RefCell::default() }
    }

    /// Where each principal's tokens are kept.
    pub fn kept(&self) -> &Kept {
        &self.kept
    }

    pub fn set_servers(&self, names: Vec<String>) {
        *self.servers.borrow_mut() = names;
    }

    /// The servers `principal` has authorized (tokens kept for it), with
    /// when their token expires (Unix seconds) and the scopes granted: what
    /// the status page shows it, each with a button to revoke.
    /// `None`: the config has no such server.
    pub async fn authorized(&self, principal: &str) -> Option<Vec<(String, Option<u64>, Vec<String>)>> {
        let servers = self.servers.borrow().clone();
        if servers.is_empty() {
            return None;
        }
        let mut out = Vec::new();
        for s in servers {
            match self.kept.get(&s, principal).await {
                Ok(Some(t)) => out.push((s, t.expires_at, t.scopes)),
                Ok(None) => {}
                Err(e) => warn!("status page: {e}"),
            }
        }
        Some(out)
    }

    /// `principal` revokes its authorization of `server` (the status
    /// page's button): its tokens are forgotten, and its next call there
    /// asks it to authorize again. Err: not a `"perPrincipal"` server.
    pub async fn revoke(&self, principal: &str, server: &str) -> Result<bool, String> {
        if !self.servers.borrow().iter().any(|s| s == server) {
            return Err(format!("{server:?} is not a server each person authorizes for themselves"));
        }
        let had = self.kept.remove(server, principal).await.map_err(|e| e.to_string())?;
        if had {
            info!("server {server}: principal '{principal}' revoked its authorization on the status page");
        }
        Ok(had)
    }

    /// The redirect URI to register with the authorization server, for a
    /// hub that browsers reach at `public_url` (`"publicUrl"`).
    pub fn redirect_uri(public_url: &str) -> String {
        format!("{public_url}/oauth/callback")
    }

    pub(super) fn random(&self) -> String {
        pkce::random_token(&mut self.rng.borrow_mut().0)
    }

    fn sweep(&self, now: Instant) {
        self.flows.borrow_mut().retain(|f| f.until > now);
    }

    /// A flow for `principal` to authorize `request` at server `server`:
    /// what to show the caller (`public_url`: where browsers reach the
    /// hub). One not yet opened for the same principal and server is shown
    /// again instead, for another [`FLOW_TTL`] (a link the person was given
    /// stays good); over the bounds, the oldest of the principal's (or of
    /// all) goes.
    pub(super) fn begin(&self, authz: Rc<Authorizer>, public_url: &str, principal: &str, server: &str, request: Request) -> Ask {
        let now = Instant::now();
        self.sweep(now);
        let mut flows = self.flows.borrow_mut();
        if let Some(f) = flows.iter_mut().find(|f| f.ask.principal == principal && f.ask.server == server && f.browser.is_none()) {
            f.until = now + FLOW_TTL;
            return f.ask.clone();
        }
        let id = self.random();
        let ask = Ask { url: format!("{public_url}/connect/{id}"), id, server: server.to_string(), principal: principal.to_string() };
        let mine = flows.iter().filter(|f| f.ask.principal == principal).count();
        if mine >= MAX_PER_PRINCIPAL {
            if let Some(i) = flows.iter().position(|f| f.ask.principal == principal) {
                flows.remove(i);
            }
        }
        if flows.len() >= MAX_FLOWS {
            flows.remove(0);
        }
        flows.push(Flow { ask: ask.clone(), request, authz, until: now + FLOW_TTL, browser: None });
        ask
    }

    /// A browser signed in as `who` opens `/connect/ID`, with the binding
    /// cookie of a flow it opened before (`held`), if any: kept, so that
    /// one browser completes several flows.
    // Requirement: elicitation-url-verify-opening-user
    pub fn open(&self, id: &str, who: &str, held: Option<&str>) -> Opened {
        self.sweep(Instant::now());
        let mut flows = self.flows.borrow_mut();
        let Some(f) = flows.iter_mut().find(|f| f.ask.id == id) else { return Opened::Unknown };
        if f.ask.principal != who {
            return Opened::NotYours;
        }
        let held = held.filter(|h| h.len() >= 32 && is_word(h));
        let cookie = f.browser.get_or_insert_with(|| held.map_or_else(|| self.random(), str::to_string)).clone();
        Opened::Authorize { url: f.request.authorization_url.clone(), cookie, server: f.ask.server.clone(), secure: f.ask.url.starts_with("https://") }
    }

    /// The authorization server's redirect to `/oauth/callback` with
    /// `params` (its query), from a browser holding the binding `cookie`:
    /// the tokens are obtained and stored for the flow's principal. The
    /// flow is used up either way. Ok: what was authorized.
    // Requirement: elicitation-url-same-user-start-and-complete, elicitation-url-identity-resilient-to-url-tampering, authz-state-parameter
    pub async fn finish(&self, params: &[(String, String)], cookie: Option<&str>) -> Result<Ask, Refused> {
        self.sweep(Instant::now());
        let state = params.iter().find(|(k, _)| k == "state").map(|(_, v)| v.as_str()).ok_or(Refused::UnknownState)?;
        let flow = {
            let mut flows = self.flows.borrow_mut();
            let i = flows.iter().position(|f| f.browser.is_some() && ct_eq(f.request.state.as_bytes(), state.as_bytes())).ok_or(Refused::UnknownState)?;
            let bound = flows[i].browser.as_deref().zip(cookie).is_some_and(|(b, c)| ct_eq(b.as_bytes(), c.as_bytes()));
            if !bound {
                return Err(Refused::OtherBrowser);
            }
            flows.remove(i)
        };
        let code = check_redirect(params, &flow.request.discovered.meta).map_err(Refused::Redirect)?;
        flow.authz.exchange(&flow.request, &code).await.map_err(Refused::Token)?;
        Ok(flow.ask)
    }
}

/// Is `s` written as the flows' random values are (base64url: letters,
/// digits, `-` and `_`), and not empty?
pub fn is_word(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The name of the cookie binding a flow to its browser: `SameSite=Lax`,
/// since it must come back with the authorization server's redirect (a
/// cross-site navigation, which a `Strict` cookie does not follow).
pub const BROWSER_COOKIE: &str = "mcpx_connect";

#[cfg(test)]
mod tests {
    use super::super::discovery::ServerMetadata;
    use super::super::token::ClientAuth;
    use super::super::{Interaction, OAuthSpec};
    use super::*;
    use crate::remote::url::Url;

    fn authz() -> Rc<Authorizer> {
        let spec = OAuthSpec { store: std::env::temp_dir().join("mcpx-unused-delegated.json"), ..OAuthSpec::default() };
        Rc::new(Authorizer::new("gh", Url::parse("https://mcp.example/mcp").unwrap(), spec, None, Duration::from_secs(1), Interaction::Serve))
    }

    fn request(state: &str) -> Request {
        let meta = ServerMetadata { issuer: Some("https://as.example".into()), authorization_endpoint: "https://as.example/auth".into(), ..ServerMetadata::default() };
        Request {
            authorization_url: format!("https://as.example/auth?state={state}"),
            state: state.into(),
            verifier: "v".into(),
            redirect_uri: "https://hub.example/oauth/callback".into(),
            client: ClientId { id: "mcpx".into(), secret: None, auth: ClientAuth::None },
            discovered: Discovered { prm: None, meta, resource: "https://mcp.example/mcp".into() },
            scopes: vec![],
        }
    }

    fn flows() -> Flows {
        let store = super::super::store::Store { path: std::env::temp_dir().join("mcpx-unused-delegated-kept.json") };
        Flows::new(Kept::new(&[1; 32], super::super::kept::Shelf::File(store)))
    }

    fn params(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    // covers: elicitation-url-verify-opening-user, elicitation-url-same-user-start-and-complete, elicitation-url-identity-resilient-to-url-tampering
    #[test]
    fn only_its_principal_opens_a_flow_and_only_that_browser_completes_it() {
        let flows = flows();
        let ask = flows.begin(authz(), "https://hub.example", "alice", "gh", request("s-alice"));
        assert_eq!(ask.url, format!("https://hub.example/connect/{}", ask.id));
        assert!(!ask.url.contains("alice") && !ask.url.contains("s-alice"), "nothing of the user or the state in the URL: {}", ask.url);
        // Another principal's browser is refused; an unknown id is unknown.
        assert_eq!(flows.open(&ask.id, "bob", None), Opened::NotYours);
        assert_eq!(flows.open("nope", "alice", None), Opened::Unknown);
        // Not opened yet: no redirect completes it, even with the state.
        let answer = params(&[("state", "s-alice"), ("code", "c"), ("iss", "https://as.example")]);
        assert!(matches!(crate::process::reactor::block_on(flows.finish(&answer, None)), Err(Refused::UnknownState)));
        let Opened::Authorize { url, cookie, server, secure } = flows.open(&ask.id, "alice", None) else { panic!() };
        assert_eq!((url.as_str(), server.as_str(), secure), ("https://as.example/auth?state=s-alice", "gh", true));
        // Opened again, in the same browser: the same binding.
        assert!(matches!(flows.open(&ask.id, "alice", Some(&cookie)), Opened::Authorize { cookie: c, .. } if c == cookie));
        // The redirect in another browser (no cookie, another's) is refused; a forged state is unknown.
        assert!(matches!(crate::process::reactor::block_on(flows.finish(&answer, None)), Err(Refused::OtherBrowser)));
        assert!(matches!(crate::process::reactor::block_on(flows.finish(&answer, Some("x".repeat(43).as_str()))), Err(Refused::OtherBrowser)));
        let forged = params(&[("state", "s-forged"), ("code", "c")]);
        assert!(matches!(crate::process::reactor::block_on(flows.finish(&forged, Some(&cookie))), Err(Refused::UnknownState)));
        // A denial in the right browser ends the flow: it cannot be used again.
        let denied = params(&[("state", "s-alice"), ("error", "access_denied"), ("iss", "https://as.example")]);
        let e = crate::process::reactor::block_on(flows.finish(&denied, Some(&cookie))).unwrap_err();
        assert_eq!(e.to_string(), "authorization was refused: access_denied");
        assert!(matches!(crate::process::reactor::block_on(flows.finish(&answer, Some(&cookie))), Err(Refused::UnknownState)));
        assert_eq!(flows.open(&ask.id, "alice", Some(&cookie)), Opened::Unknown);
    }

    #[test]
    fn an_unopened_link_is_given_again_and_each_principal_has_a_bound() {
        let flows = flows();
        let first = flows.begin(authz(), "http://127.0.0.1:8080", "alice", "gh", request("s1"));
        let again = flows.begin(authz(), "http://127.0.0.1:8080", "alice", "gh", request("s2"));
        assert_eq!(first, again, "the link she was given stays good");
        let Opened::Authorize { url, secure: false, .. } = flows.open(&first.id, "alice", None) else { panic!() };
        assert!(url.ends_with("state=s1"), "{url}");
        // Opened, it is hers to finish: a new call gets a link of its own.
        let third = flows.begin(authz(), "http://127.0.0.1:8080", "alice", "gh", request("s3"));
        assert_ne!(third.id, first.id);
        assert!(matches!(flows.open(&first.id, "alice", None), Opened::Authorize { .. }));
        // Opened flows stay; past the bound the principal's oldest goes, no one else's.
        let bob = flows.begin(authz(), "http://127.0.0.1:8080", "bob", "gh", request("s-bob"));
        let mut ids = Vec::new();
        for i in 0..MAX_PER_PRINCIPAL + 2 {
            let a = flows.begin(authz(), "http://127.0.0.1:8080", "alice", &format!("s{i}"), request(&format!("t{i}")));
            assert!(matches!(flows.open(&a.id, "alice", None), Opened::Authorize { .. }));
            ids.push(a.id);
        }
        assert_eq!(flows.flows.borrow().iter().filter(|f| f.ask.principal == "alice").count(), MAX_PER_PRINCIPAL);
        assert_eq!(flows.open(&ids[0], "alice", None), Opened::Unknown);
        assert!(matches!(flows.open(&ids[MAX_PER_PRINCIPAL + 1], "alice", None), Opened::Authorize { .. }));
        assert!(matches!(flows.open(&bob.id, "bob", None), Opened::Authorize { .. }));
    }
}
