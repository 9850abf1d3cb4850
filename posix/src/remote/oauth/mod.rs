//! OAuth 2.1 for protected remote servers: mcpx as the client.
//!
//! One [`Authorizer`] per configured server with an `"oauth"` block holds
//! its tokens (from the [`store`]) and answers the transport's two
//! questions: which `Authorization` header goes with a request
//! ([`Authorizer::header`], refreshed ahead of expiry by
//! [`Authorizer::refresh_if_expiring`]), and what to do about a 401 or a
//! 403 `insufficient_scope` ([`Authorizer::challenge`]): discover the
//! authorization server, then refresh, run the client-credentials grant, or
//! run the authorization code flow with PKCE through the loopback redirect
//! URI when a person can complete it (`mcpx auth login`, or `openWith`).
//! Otherwise the server "needs login".
//!
//! A token is sent only to the server it was obtained for (its URL is
//! stored with it), and only mcpx's own tokens go upstream: nothing a
//! client of mcpx sends is forwarded. A `"tokenExchange"` server's
//! tokens are exchanged for each principal's own token to mcpx
//! ([`exchange`], RFC 8693): that token goes to the authorization server
//! only, and what goes upstream is the token it issued for the server.

#[cfg(feature = "secrets")]
mod ask;
#[cfg(feature = "secrets")]
pub mod delegated;
pub mod discovery;
pub mod error;
#[cfg(all(feature = "secrets", feature = "oauth"))]
pub mod exchange;
pub(crate) mod form;
pub mod jwt;
#[cfg(feature = "secrets")]
pub mod kept;
mod loopback;
mod opener;
mod pkce;
pub mod store;
pub mod token;

use std::cell::RefCell;
use std::path::PathBuf;
#[cfg(feature = "secrets")]
use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nanorand::ChaCha20;
use serde_json::Value;
use smol::lock::Mutex;

use super::http::{Client, Limits};
use super::url::{Scheme, Url};
use discovery::{Challenge, ResourceMetadata, ServerMetadata};
pub use error::Error;
use error::{FetchError, RedirectError};
use store::{Registration, ServerTokens, Store};
use token::{ClientAuth, ClientId, Grant};

/// Which grant gets the tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GrantKind {
    /// A person authorizes in a browser (`mcpx auth login`, `openWith`).
    #[default]
    AuthorizationCode,
    /// Unattended: the client's own credentials.
    ClientCredentials,
}

/// A server's `"oauth"` configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OAuthSpec {
    /// Pre-registered client (`clientId`, `clientSecret`).
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// A Client ID Metadata Document URL, used as the client id where the
    /// authorization server supports it.
    pub client_metadata_url: Option<String>,
    /// Requested on top of what the server asks for.
    pub scopes: Vec<String>,
    pub grant: GrantKind,
    /// PKCS#8 PEM key for private-key JWT client authentication.
    pub private_key_file: Option<PathBuf>,
    pub signing_alg: Option<String>,
    /// Runs the flow unattended: `CMD... URL`.
    pub open_with: Option<String>,
    /// The token store file.
    pub store: PathBuf,
    /// `"perPrincipal"`: each principal authorizes for itself, through
    /// mcpx's pages at this public URL (no trailing `/`).
    pub per_principal: Option<String>,
    /// `"tokenExchange"`: each principal's tokens are exchanged for its
    /// own token to mcpx (RFC 8693).
    pub token_exchange: Option<TokenExchange>,
}

/// `"tokenExchange": true` or `{"audience": "..."}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TokenExchange {
    /// RFC 8693's `audience`, asked for besides the server's `resource`.
    pub audience: Option<String>,
}

/// Who completes an authorization code flow.
#[derive(Clone, Debug)]
pub enum Interaction {
    /// `mcpx serve`: only with `openWith`; otherwise the server needs login.
    Serve,
    /// `mcpx auth login`: prints the URL and runs `open_with` (or a browser).
    Login { open_with: Option<String> },
    /// `mcpx serve`, an instance of `"perPrincipal"` server `server` for
    /// `principal`: the tokens are that principal's own, and the principal
    /// authorizes in its browser through mcpx's pages (`flows`).
    #[cfg(feature = "secrets")]
    Delegated { server: String, principal: String, flows: Rc<delegated::Flows> },
    /// `mcpx serve`, an instance of `"tokenExchange"` server `server` for
    /// `principal`: its tokens are exchanged for the principal's own token
    /// to mcpx, and held in `exchanges` (memory only).
    #[cfg(all(feature = "secrets", feature = "oauth"))]
    Exchanged { server: String, principal: String, exchanges: Rc<exchange::Exchanges> },
}

/// Re-authorizations one request may cause (a 401, then a step-up).
pub const MAX_ATTEMPTS: u32 = 2;
/// How long a person has to authorize.
const LOGIN_WAIT: Duration = Duration::from_secs(300);
/// Tokens this close to expiry are refreshed before use.
const EXPIRY_MARGIN_S: u64 = 30;
/// Largest metadata or token response read.
const MAX_BODY: usize = 256 * 1024;

fn now_s() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// The authorization server found for the server, and how to name it.
#[derive(Clone)]
struct Discovered {
    prm: Option<ResourceMetadata>,
    meta: ServerMetadata,
    /// The RFC 8707 `resource`: the PRM's, exactly, else the server URL.
    resource: String,
}

pub struct Authorizer {
    name: String,
    server: Url,
    spec: OAuthSpec,
    ca_file: Option<PathBuf>,
    connect_timeout: Duration,
    interaction: Interaction,
    store: Store,
    current: RefCell<Option<ServerTokens>>,
    /// When the store was last read for a principal's own tokens: read
    /// again once it changed (`mcpx auth logout NAME --principal P`, or
    /// another instance's refresh).
    #[cfg(feature = "secrets")]
    read_at: std::cell::Cell<Option<SystemTime>>,
    /// One flow at a time; requests that failed meanwhile retry with its result.
    busy: Mutex<()>,
    rng: RefCell<ChaCha20>,
}

impl Authorizer {
    pub fn new(name: &str, server: Url, spec: OAuthSpec, ca_file: Option<PathBuf>, connect_timeout: Duration, interaction: Interaction) -> Authorizer {
        let store = Store { path: spec.store.clone() };
        Authorizer {
            name: name.to_string(),
            server,
            spec,
            ca_file,
            connect_timeout,
            interaction,
            store,
            current: RefCell::new(None),
            #[cfg(feature = "secrets")]
            read_at: std::cell::Cell::new(None),
            busy: Mutex::new(()),
            rng: RefCell::new(ChaCha20::new()),
        }
    }

    fn needs_login(&self) -> Error {
        Error::NeedsLogin { server: self.name.clone() }
    }

    /// Whose tokens these are: a principal's own (`"perPrincipal"`), or
    /// the server's (`None`).
    fn owner(&self) -> Option<&str> {
        match &self.interaction {
            #[cfg(feature = "secrets")]
            Interaction::Delegated { principal, .. } => Some(principal),
            _ => None,
        }
    }

    /// The configured server's name (an instance's is its server's).
    fn server_name(&self) -> &str {
        match &self.interaction {
            #[cfg(feature = "secrets")]
            Interaction::Delegated { server, .. } => server,
            #[cfg(all(feature = "secrets", feature = "oauth"))]
            Interaction::Exchanged { server, .. } => server,
            _ => &self.name,
        }
    }

    /// The tokens for this server, if they were obtained for its URL: the
    /// stored ones, or an instance's exchanged ones (never the store's).
    fn tokens(&self) -> Option<ServerTokens> {
        let held = match &self.interaction {
            #[cfg(all(feature = "secrets", feature = "oauth"))]
            Interaction::Exchanged { principal, exchanges, .. } => exchanges.held(&self.exchange_key(principal)),
            _ => self.stored(),
        };
        // Requirement: authz-client-sends-only-own-as-tokens (never to another URL)
        held.filter(|t| t.url == self.server.to_string() && !t.access_token.is_empty())
    }

    /// The store's tokens for this server (a principal's own are read by
    /// `reload_own`, before each request).
    fn stored(&self) -> Option<ServerTokens> {
        if self.current.borrow().is_none() && self.owner().is_none() {
            match self.store.tokens(self.server_name()) {
                Ok(t) => *self.current.borrow_mut() = t,
                Err(e) => warn!("server {}: {e}", self.name),
            }
        }
        self.current.borrow().clone()
    }

    /// A principal's own tokens as kept now: `mcpx auth logout NAME
    /// --principal P` may have removed them, another instance or replica
    /// refreshed them. The file is read again once it changed; the shared
    /// store is asked each time (unavailable: the tokens held go on).
    #[cfg(feature = "secrets")]
    async fn reload_own(&self) {
        let Interaction::Delegated { server, principal, flows } = &self.interaction else { return };
        let kept = flows.kept();
        if let Some(file) = kept.file() {
            let changed = std::fs::metadata(&file.path).and_then(|m| m.modified()).ok();
            if changed == self.read_at.replace(changed) && self.current.borrow().is_some() {
                return;
            }
        }
        match kept.get(server, principal).await {
            Ok(t) => *self.current.borrow_mut() = t,
            // Redis away: the store has said so (once); asked again at the next request.
            #[cfg(feature = "cluster")]
            Err(e @ store::StoreError::Shared(_)) => debug!("server {}: {e}", self.name),
            Err(e) => warn!("server {}: {e}", self.name),
        }
    }

    /// The `Authorization` value for the next request, if there is a token.
    // Requirement: authz-bearer-header, authz-token-every-request, authz-no-token-in-query
    pub fn header(&self) -> Option<Vec<u8>> {
        self.tokens().map(|t| format!("Bearer {}", t.access_token).into_bytes())
    }

    async fn save(&self, t: ServerTokens) -> Result<(), Error> {
        let r = match &self.interaction {
            #[cfg(feature = "secrets")]
            Interaction::Delegated { server, principal, flows } => flows.kept().put(server, principal, &t).await,
            // Exchanged tokens stay in memory: never written to the store.
            #[cfg(all(feature = "secrets", feature = "oauth"))]
            Interaction::Exchanged { principal, exchanges, .. } => {
                exchanges.keep(self.exchange_key(principal), t);
                return Ok(());
            }
            _ => self.store.put_tokens(self.server_name(), &t),
        };
        *self.current.borrow_mut() = Some(t);
        Ok(r?)
    }

    /// Refreshes a token that is about to expire, so that requests do not
    /// fail first. A failure is left to the 401 that follows; Err only for
    /// an instance of a `"tokenExchange"` server, which exchanges first
    /// when it holds no token that lasts: refused, nothing is sent.
    // Requirement: authz-refresh-tokens
    pub async fn refresh_if_expiring(&self) -> Result<(), Error> {
        #[cfg(all(feature = "secrets", feature = "oauth"))]
        if matches!(self.interaction, Interaction::Exchanged { .. }) {
            return self.exchange_if_due().await;
        }
        #[cfg(feature = "secrets")]
        self.reload_own().await;
        let Some(t) = self.tokens() else { return Ok(()) };
        if !expiring(&t) || t.refresh_token.is_none() {
            return Ok(());
        }
        let _g = self.busy.lock().await;
        if self.tokens().map(|n| n.access_token) != Some(t.access_token.clone()) {
            return Ok(()); // refreshed meanwhile
        }
        match self.discover(&Challenge::default(), None).await {
            Ok(d) => {
                if let Err(e) = self.refresh(&d, &t).await {
                    debug!("server {}: refreshing the token failed: {e}", self.name);
                }
            }
            Err(e) => debug!("server {}: refreshing the token failed: {e}", self.name),
        }
        Ok(())
    }

    /// A request sent with `sent` (its `Authorization` value) was answered
    /// with `status` (401 or 403) and `www_authenticate`. Ok: a new token
    /// is ready, send the request again. Err: why not (for the user).
    pub async fn challenge(&self, status: u16, www_authenticate: Option<&[u8]>, sent: Option<&[u8]>, version: Option<&[u8]>) -> Result<(), Error> {
        let ch = Challenge::parse(&String::from_utf8_lossy(www_authenticate.unwrap_or_default()));
        let _g = self.busy.lock().await;
        #[cfg(feature = "secrets")]
        self.reload_own().await;
        if self.header().as_deref() != sent {
            return Ok(()); // another request (or replica) got a new token meanwhile
        }
        let current = self.tokens();
        if status == 403 {
            if !ch.insufficient_scope() {
                return Err(Error::Forbidden);
            }
            // Requirement: authz-step-up (union of held and challenged scopes, and a limit)
            let held = current.as_ref().map(|t| t.scopes.clone()).unwrap_or_default();
            let wanted = ch.scopes();
            if wanted.iter().all(|s| held.contains(s)) {
                return Err(Error::ScopesAlreadyHeld { scopes: wanted });
            }
            let d = self.discover(&ch, version).await?;
            info!("server {}: asks for more scopes ({}); authorizing again", self.name, wanted.join(" "));
            return self.obtain(&d, discovery::union(&held, &wanted)).await;
        }
        let d = self.discover(&ch, version).await?;
        // Requirement: authz-credentials-bound-to-issuer (a token of another issuer is not refreshed there)
        if let Some(t) = current.filter(|t| t.refresh_token.is_some() && t.issuer == d.meta.issuer) {
            match self.refresh(&d, &t).await {
                Ok(()) => return Ok(()),
                Err(e) => debug!("server {}: refresh failed ({e}); authorizing again", self.name),
            }
        }
        let scopes = discovery::select_scopes(&ch, d.prm.as_ref(), &self.spec.scopes);
        self.obtain(&d, scopes).await
    }

    /// `mcpx auth login`: asks the server, then authorizes whatever it says.
    pub async fn login(&self) -> Result<(), Error> {
        let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpx","version":"0"}}}"#;
        let accept: &[u8] = b"application/json, text/event-stream";
        let (status, www, _) = self
            .fetch("POST", &self.server.to_string(), &[("accept", accept), ("content-type", b"application/json")], init)
            .await?;
        let ch = Challenge::parse(&String::from_utf8_lossy(&www.unwrap_or_default()));
        if status != 401 && !(status == 403 && ch.insufficient_scope()) {
            info!("server {} answered HTTP {status} without asking for authorization; authorizing through its metadata anyway", self.name);
        }
        let _g = self.busy.lock().await;
        let d = self.discover(&ch, None).await?;
        let held = self.tokens().map(|t| t.scopes).unwrap_or_default();
        let scopes = discovery::union(&discovery::select_scopes(&ch, d.prm.as_ref(), &self.spec.scopes), if status == 403 { &held } else { &[] });
        self.obtain(&d, scopes).await
    }

    /// New tokens by the configured grant (an instance of a
    /// `"tokenExchange"` server: by exchange).
    async fn obtain(&self, d: &Discovered, scopes: Vec<String>) -> Result<(), Error> {
        let tokens = match (&self.interaction, self.spec.grant) {
            #[cfg(all(feature = "secrets", feature = "oauth"))]
            (Interaction::Exchanged { principal, exchanges, .. }, _) => {
                let t = self.token_exchange(d, principal, exchanges, &scopes).await?;
                info!("server {}: token exchanged for principal '{principal}' (scopes: {})", self.name, t.scopes.join(" "));
                return self.save(t).await;
            }
            (_, GrantKind::ClientCredentials) => self.client_credentials(d, &scopes).await?,
            (_, GrantKind::AuthorizationCode) => self.authorization_code(d, scopes).await?,
        };
        info!("server {}: authorized (scopes: {})", self.name, if tokens.scopes.is_empty() { "-".to_string() } else { tokens.scopes.join(" ") });
        self.save(tokens).await
    }

    fn record(&self, d: &Discovered, client: &ClientId, t: token::Tokens, old_refresh: Option<String>) -> ServerTokens {
        ServerTokens {
            url: self.server.to_string(),
            issuer: d.meta.issuer.clone(),
            token_endpoint: d.meta.token_endpoint.clone(),
            resource: Some(d.resource.clone()),
            access_token: t.access_token,
            refresh_token: t.refresh_token.or(old_refresh),
            expires_at: t.expires_at,
            scopes: t.scopes,
            client_id: client.id.clone(),
        }
    }

    async fn token_request(&self, d: &Discovered, grant: &Grant<'_>, client: &ClientId, scopes: &[String]) -> Result<token::Tokens, Error> {
        let assertion = match client.auth {
            ClientAuth::PrivateKeyJwt => Some(self.assertion(d, &client.id)?),
            _ => None,
        };
        let req = token::request(grant, client, Some(&d.resource), scopes, assertion.as_deref());
        let mut h: Vec<(&str, &[u8])> = vec![("content-type", b"application/x-www-form-urlencoded"), ("accept", b"application/json")];
        if let Some(a) = &req.authorization {
            h.push(("authorization", a.as_bytes()));
        }
        let (status, _, body) = self.fetch("POST", &d.meta.token_endpoint, &h, req.body.as_bytes()).await?;
        token::parse_response(status, &body, now_s(), scopes).map_err(Error::Token)
    }

    async fn refresh(&self, d: &Discovered, t: &ServerTokens) -> Result<(), Error> {
        let rt = t.refresh_token.clone().ok_or(Error::NoRefreshToken)?;
        let client = self.client_identity(&d.meta, None).await?;
        let tokens = self.token_request(d, &Grant::Refresh { refresh_token: &rt }, &client, &t.scopes).await?;
        debug!("server {}: token refreshed", self.name);
        self.save(self.record(d, &client, tokens, Some(rt))).await
    }

    fn assertion(&self, d: &Discovered, client_id: &str) -> Result<String, Error> {
        let path = self.spec.private_key_file.as_ref().ok_or(Error::NoPrivateKeyFile)?;
        let pem = crate::host::small_file::read_to_string(path).map_err(|err| Error::KeyFileRead { path: path.clone(), err })?;
        let key = jwt::SigningKey::from_pem(&pem, self.spec.signing_alg.as_deref().unwrap_or("ES256"))
            .map_err(|err| Error::KeyFile { path: path.clone(), err })?;
        let audience = d.meta.issuer.clone().unwrap_or_else(|| d.meta.token_endpoint.clone());
        let jti = pkce::random_token(&mut self.rng.borrow_mut());
        key.assertion(client_id, &audience, now_s(), &jti).map_err(Error::Assertion)
    }

    async fn client_credentials(&self, d: &Discovered, scopes: &[String]) -> Result<ServerTokens, Error> {
        let id = self.spec.client_id.clone().ok_or(Error::NoClientId)?;
        let auth = ClientAuth::choose(None, self.spec.client_secret.is_some(), self.spec.private_key_file.is_some(), &d.meta.token_endpoint_auth_methods_supported);
        let client = ClientId { id, secret: self.spec.client_secret.clone(), auth };
        let t = self.token_request(d, &Grant::ClientCredentials, &client, scopes).await?;
        Ok(self.record(d, &client, t, None))
    }

    /// The client id to use with this authorization server, by priority:
    /// configured, Client ID Metadata Document, earlier registration,
    /// Dynamic Client Registration (needs the redirect URI).
    // Requirement: authz-registration-priority, authz-client-registration-required, authz-preregistration, authz-cimd, authz-client-per-as-registration-state
    async fn client_identity(&self, meta: &ServerMetadata, redirect_uri: Option<&str>) -> Result<ClientId, Error> {
        let methods = &meta.token_endpoint_auth_methods_supported;
        if let Some(id) = &self.spec.client_id {
            let secret = self.spec.client_secret.clone();
            let auth = ClientAuth::choose(None, secret.is_some(), false, methods);
            return Ok(ClientId { id: id.clone(), secret, auth });
        }
        if let Some(url) = self.spec.client_metadata_url.as_ref().filter(|_| meta.client_id_metadata_document_supported) {
            return Ok(ClientId { id: url.clone(), secret: None, auth: ClientAuth::None });
        }
        let key = meta.issuer.clone().unwrap_or_else(|| meta.token_endpoint.clone());
        // A principal's flow comes back to the hub's page, not to a loopback
        // URI: its registration is its own.
        let key = match (&self.interaction, redirect_uri) {
            #[cfg(feature = "secrets")]
            (Interaction::Delegated { .. }, Some(r)) => format!("{key} {r}"),
            _ => key,
        };
        if let Some(r) = self.store.registration(&key)? {
            let auth = ClientAuth::choose(r.auth_method.as_deref(), r.client_secret.is_some(), false, methods);
            return Ok(ClientId { id: r.client_id, secret: r.client_secret, auth });
        }
        let (Some(endpoint), Some(redirect_uri)) = (&meta.registration_endpoint, redirect_uri) else {
            return Err(Error::NoRegistration { issuer: key, cimd_configured: self.spec.client_metadata_url.is_some() });
        };
        let r = self.register(endpoint, redirect_uri).await?;
        self.store.put_registration(&key, &r)?;
        let auth = ClientAuth::choose(r.auth_method.as_deref(), r.client_secret.is_some(), false, methods);
        Ok(ClientId { id: r.client_id, secret: r.client_secret, auth })
    }

    /// What mcpx is to the authorization server: a native application
    /// (loopback redirect URI), or, for a principal's flow coming back to the
    /// hub's own page, a web one.
    fn application_type(&self) -> &'static str {
        match &self.interaction {
            #[cfg(feature = "secrets")]
            Interaction::Delegated { .. } => "web",
            _ => "native",
        }
    }

    /// Dynamic Client Registration (RFC 7591) as a native application (or web: [`Authorizer::application_type`]).
    // Requirement: authz-dcr-may-deprecated, authz-dcr-should, authz-dcr-application-type
    async fn register(&self, endpoint: &str, redirect_uri: &str) -> Result<Registration, Error> {
        let body = serde_json::json!({
            "client_name": "mcpx",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": self.application_type(),
        })
        .to_string();
        let h: [(&str, &[u8]); 2] = [("content-type", b"application/json"), ("accept", b"application/json")];
        let (status, _, resp) = self.fetch("POST", endpoint, &h, body.as_bytes()).await?;
        let v: Value = serde_json::from_slice(&resp).unwrap_or(Value::Null);
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        match s("client_id") {
            Some(client_id) if (200..300).contains(&status) => {
                Ok(Registration { client_id, client_secret: s("client_secret"), auth_method: s("token_endpoint_auth_method") })
            }
            _ => Err(Error::Registration { endpoint: endpoint.to_string(), status, error: s("error") }),
        }
    }

    /// The authorization code flow with PKCE S256 through the loopback
    /// redirect URI (or, for a principal's own tokens, its browser).
    async fn authorization_code(&self, d: &Discovered, mut scopes: Vec<String>) -> Result<ServerTokens, Error> {
        let open_with = match &self.interaction {
            Interaction::Serve => Some(self.spec.open_with.clone().ok_or_else(|| self.needs_login())?),
            Interaction::Login { open_with } => open_with.clone().or_else(|| self.spec.open_with.clone()),
            #[cfg(feature = "secrets")]
            Interaction::Delegated { principal, flows, .. } => return Err(self.delegate(principal, flows, d, scopes).await),
            // Never a person's flow: its tokens come by exchange (`obtain`).
            #[cfg(all(feature = "secrets", feature = "oauth"))]
            Interaction::Exchanged { .. } => return Err(self.needs_login()),
        };
        if d.meta.authorization_endpoint.is_empty() {
            return Err(Error::NoAuthorizationEndpoint);
        }
        let listener = loopback::Listener::bind().map_err(Error::RedirectListener)?;
        let client = self.client_identity(&d.meta, Some(&listener.redirect_uri)).await?;
        let (verifier, state) = {
            let mut rng = self.rng.borrow_mut();
            (pkce::random_token(&mut rng), pkce::random_token(&mut rng))
        };
        let url = authorization_url(d, &client, &listener.redirect_uri, &mut scopes, &verifier, &state);
        opener::open(&self.name, &url, open_with.as_deref()).map_err(Error::Open)?;
        let params = listener.wait(&state, LOGIN_WAIT).await?;
        let code = check_redirect(&params, &d.meta).map_err(Error::Redirect)?;
        let grant = Grant::Code { code: &code, verifier: &verifier, redirect_uri: &listener.redirect_uri };
        let t = self.token_request(d, &grant, &client, &scopes).await?;
        Ok(self.record(d, &client, t, None))
    }

    /// `principal` authorizes in its browser: a flow begins (`flows`), and
    /// the request fails asking the principal to open its page.
    #[cfg(feature = "secrets")]
    async fn delegate(&self, principal: &str, flows: &Rc<delegated::Flows>, d: &Discovered, mut scopes: Vec<String>) -> Error {
        let public_url = self.spec.per_principal.as_deref().unwrap_or_default();
        if d.meta.authorization_endpoint.is_empty() {
            return Error::NoAuthorizationEndpoint;
        }
        let redirect_uri = delegated::Flows::redirect_uri(public_url);
        let client = match self.client_identity(&d.meta, Some(&redirect_uri)).await {
            Ok(c) => c,
            Err(e) => return e,
        };
        let (verifier, state) = (flows.random(), flows.random());
        let authorization_url = authorization_url(d, &client, &redirect_uri, &mut scopes, &verifier, &state);
        let request = delegated::Request { authorization_url, state, verifier, redirect_uri, client, discovered: d.clone(), scopes };
        // The flow finishes with an authorizer of its own (this one goes with its session).
        let again = Authorizer::new(&self.name, self.server.clone(), self.spec.clone(), self.ca_file.clone(), self.connect_timeout, self.interaction.clone());
        let ask = flows.begin(Rc::new(again), public_url, principal, self.server_name(), request);
        info!("server {}: principal '{principal}' is asked to authorize at {}", self.name, ask.url);
        Error::AuthorizeAt(ask)
    }

    /// The code of a principal's authorization (`r`, its flow's request)
    /// exchanged for its tokens, stored as that principal's.
    #[cfg(feature = "secrets")]
    async fn exchange(&self, r: &delegated::Request, code: &str) -> Result<(), Error> {
        let grant = Grant::Code { code, verifier: &r.verifier, redirect_uri: &r.redirect_uri };
        let t = self.token_request(&r.discovered, &grant, &r.client, &r.scopes).await?;
        let tokens = self.record(&r.discovered, &r.client, t, None);
        info!("server {}: principal '{}' authorized (scopes: {})", self.name, self.owner().unwrap_or_default(), tokens.scopes.join(" "));
        self.save(tokens).await
    }

    /// Finds the authorization server: Protected Resource Metadata, then
    /// its metadata; without PRM, the 2025-03-26 way (metadata at the
    /// server's origin, else the default endpoints).
    async fn discover(&self, ch: &Challenge, version: Option<&[u8]>) -> Result<Discovered, Error> {
        // Requirement: streamable-http-auth-discovery-version-header
        let mut h: Vec<(&str, &[u8])> = vec![("accept", b"application/json")];
        if let Some(v) = version {
            h.push(("mcp-protocol-version", v));
        }
        let mut prm = None;
        for loc in discovery::prm_locations(&self.server, ch.resource_metadata.as_deref()) {
            if let Some(doc) = self.get_json(&loc, &h).await? {
                // Requirement: authz-resource-indicator (a PRM for another resource is refused)
                let p = ResourceMetadata::parse(&doc, &self.server).map_err(|err| Error::ResourceMetadata { at: loc, err })?;
                prm = Some(p);
                break;
            }
        }
        let (issuer, legacy) = match &prm {
            Some(p) => (p.authorization_servers[0].clone(), false),
            None => (discovery::legacy_issuer(&self.server), true),
        };
        let issuer_url = Url::parse(&issuer).map_err(|err| Error::IssuerUrl { issuer: issuer.clone(), err })?;
        let mut meta = None;
        for loc in discovery::as_metadata_locations(&issuer_url) {
            if let Some(doc) = self.get_json(&loc, &h).await? {
                meta = Some(ServerMetadata::parse(&doc, &issuer).map_err(|err| Error::ServerMetadata { at: loc, err })?);
                break;
            }
        }
        let meta = match meta {
            Some(m) => m,
            None if legacy => ServerMetadata::defaults(&issuer),
            None => return Err(Error::NoServerMetadata { issuer }),
        };
        let resource = prm.as_ref().map(|p| p.resource.clone()).unwrap_or_else(|| self.server.to_string());
        Ok(Discovered { prm, meta, resource })
    }

    /// A JSON document at `url`; `None` when it is not there (an HTTP
    /// error or not JSON), Err when it cannot be fetched at all.
    async fn get_json(&self, url: &str, h: &[(&str, &[u8])]) -> Result<Option<Value>, Error> {
        let (status, _, body) = match self.fetch("GET", url, h, b"").await {
            Ok(r) => r,
            Err(e) => {
                debug!("server {}: {url}: {e}", self.name);
                return Ok(None);
            }
        };
        if !(200..300).contains(&status) {
            return Ok(None);
        }
        Ok(serde_json::from_slice::<Value>(&body).ok().filter(Value::is_object))
    }

    /// One request to an OAuth endpoint: status, `WWW-Authenticate`, body.
    // Requirement: authz-https-and-redirect-uris (plain http only on loopback)
    async fn fetch(&self, method: &str, url: &str, headers: &[(&str, &[u8])], body: &[u8]) -> Result<(u16, Option<Vec<u8>>, Vec<u8>), Error> {
        let failed = |err| Error::Fetch { url: url.to_string(), err };
        let u = Url::parse(url).map_err(|e| failed(FetchError::Url(e)))?;
        if !https_or_loopback(&u) {
            return Err(failed(FetchError::PlainHttp));
        }
        let connector = super::connector(self.ca_file.as_deref(), &u, self.connect_timeout).map_err(|e| failed(FetchError::Tls(e)))?;
        let client = Client::new(connector, 0);
        let limits = Limits { max_head: 64 * 1024, head_timeout: Duration::from_secs(30), idle_timeout: Some(Duration::from_secs(30)) };
        let mut h: Vec<(&str, &[u8])> = vec![("user-agent", concat!("mcpx/", env!("CARGO_PKG_VERSION")).as_bytes())];
        h.extend_from_slice(headers);
        let mut resp = client.request(method, &u, &h, body, limits, None).await.map_err(|e| failed(FetchError::Http(e)))?;
        let body = resp.body.read_all(MAX_BODY).await.map_err(|e| failed(FetchError::Body(e)))?;
        Ok((resp.status, resp.www_authenticate.take(), body))
    }
}

/// Is `t` about to expire (within [`EXPIRY_MARGIN_S`])?
fn expiring(t: &ServerTokens) -> bool {
    t.expires_at.is_some_and(|e| e <= now_s() + EXPIRY_MARGIN_S)
}

/// The authorization request's URL (PKCE S256, `state`, the RFC 8707
/// `resource`), `offline_access` added to `scopes` where the server lists it.
fn authorization_url(d: &Discovered, client: &ClientId, redirect_uri: &str, scopes: &mut Vec<String>, verifier: &str, state: &str) -> String {
    // Requirement: authz-refresh-tokens (offline_access only where the server lists it)
    if d.meta.offers_offline_access() && !scopes.iter().any(|s| s == "offline_access") {
        scopes.push("offline_access".into());
    }
    let challenge = pkce::s256_challenge(verifier);
    let scope = scopes.join(" ");
    let mut q: Vec<(&str, &str)> = vec![
        ("response_type", "code"),
        ("client_id", &client.id),
        ("redirect_uri", redirect_uri),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("state", state),
    ];
    if !scope.is_empty() {
        q.push(("scope", &scope));
    }
    q.push(("resource", &d.resource));
    let sep = if d.meta.authorization_endpoint.contains('?') { '&' } else { '?' };
    format!("{}{sep}{}", d.meta.authorization_endpoint, form::encode(&q))
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host == "::1" || host.parse::<std::net::Ipv4Addr>().is_ok_and(|a| a.is_loopback())
}

/// Whether mcpx talks to `u` (an OAuth endpoint) or opens it (the
/// authorization URL): https, or plain http only to a loopback host.
// Requirement: authz-https-and-redirect-uris
fn https_or_loopback(u: &Url) -> bool {
    u.scheme == Scheme::Https || is_loopback(&u.host)
}

/// Checks the authorization response (the redirect's query, whose `state`
/// the listener has matched): an `error`, the issuer (RFC 9207), the code.
// Requirement: authz-iss-validation, authz-open-redirection
fn check_redirect(params: &[(String, String)], meta: &ServerMetadata) -> Result<String, RedirectError> {
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    if let Some(e) = get("error") {
        return Err(RedirectError::Refused { error: e.to_string(), description: get("error_description").map(str::to_string) });
    }
    match (get("iss"), &meta.issuer) {
        // Simple string comparison, no normalization (RFC 9207 §2.4).
        (Some(iss), Some(issuer)) if iss != issuer => {
            return Err(RedirectError::OtherIssuer { iss: iss.to_string(), issuer: issuer.clone() });
        }
        (None, Some(_)) if meta.iss_parameter_supported => return Err(RedirectError::NoIss),
        _ => {}
    }
    get("code").filter(|c| !c.is_empty()).map(str::to_string).ok_or(RedirectError::NoCode)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(issuer: Option<&str>, iss_supported: bool) -> ServerMetadata {
        ServerMetadata { issuer: issuer.map(str::to_string), iss_parameter_supported: iss_supported, ..ServerMetadata::default() }
    }

    fn params(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    // OAuth endpoints over plain http only on loopback; the redirect URI is
    // a loopback one; no token in any URL (it goes in the header only).
    // covers: authz-https-and-redirect-uris, authz-2025-03-26-security-list, authz-follow-security-considerations
    #[test]
    fn https_endpoints_and_loopback_redirects() {
        let spec = OAuthSpec { store: std::env::temp_dir().join("mcpx-unused-store.json"), ..OAuthSpec::default() };
        let a = Authorizer::new("s", Url::parse("https://mcp.example/mcp").unwrap(), spec, None, Duration::from_secs(1), Interaction::Serve);
        let e = crate::process::reactor::block_on(a.fetch("GET", "http://as.example/.well-known/oauth-authorization-server", &[], b"")).unwrap_err().to_string();
        assert!(e.contains("must use https"), "{e}");
        assert!(is_loopback("127.0.0.1") && is_loopback("localhost") && is_loopback("::1") && !is_loopback("127.example"));
        let l = loopback::Listener::bind().unwrap();
        assert!(l.redirect_uri.starts_with("http://127.0.0.1:") && l.redirect_uri.ends_with("/callback"), "{}", l.redirect_uri);
        assert_eq!(a.header(), None);
    }

    // (The state is matched by the redirect listener: loopback::tests.)
    // covers: authz-iss-validation, authz-open-redirection
    #[test]
    fn redirect_checks() {
        let m = meta(Some("http://as"), true);
        assert_eq!(check_redirect(&params(&[("code", "c"), ("state", "s"), ("iss", "http://as")]), &m).unwrap(), "c");
        assert_eq!(check_redirect(&params(&[("code", "c"), ("state", "s")]), &m), Err(RedirectError::NoIss));
        assert!(check_redirect(&params(&[("code", "c"), ("state", "s"), ("iss", "https://evil.example.com")]), &m).is_err());
        // No normalization: a trailing slash is another issuer.
        assert!(check_redirect(&params(&[("code", "c"), ("state", "s"), ("iss", "http://as/")]), &m).is_err());
        // Not advertised: absent is fine, a wrong one is still refused.
        let m = meta(Some("http://as"), false);
        assert_eq!(check_redirect(&params(&[("code", "c"), ("state", "s")]), &m).unwrap(), "c");
        let e = check_redirect(&params(&[("code", "c"), ("state", "s"), ("iss", "https://evil.example.com")]), &m).unwrap_err();
        assert_eq!(e.to_string(), "the authorization response comes from issuer \"https://evil.example.com\", not \"http://as\"; refused");
        let e = check_redirect(&params(&[("state", "s"), ("error", "access_denied"), ("error_description", "no")]), &m).unwrap_err();
        assert_eq!(e.to_string(), "authorization was refused: access_denied (no)");
        assert_eq!(check_redirect(&params(&[("state", "s")]), &m), Err(RedirectError::NoCode));
    }
}
