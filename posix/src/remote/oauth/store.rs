//! The token store: one JSON file only the user can read and write (0600,
//! in a 0700 folder), replaced atomically on every change. It keeps, per
//! configured server, the tokens and where they came from (and, for a
//! `"perPrincipal"` server, each principal's own under `principals`,
//! encrypted: [`super::kept`]), and, per authorization server (keyed by
//! issuer), the registered client.

use std::fmt;
use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

/// Why the token store cannot be read or written.
#[derive(Debug)]
pub enum StoreError {
    Read { path: PathBuf, err: io::Error },
    /// Others than the user can read it.
    Exposed { path: PathBuf, mode: u32 },
    Json { path: PathBuf, err: serde_json::Error },
    Folder { path: PathBuf, err: io::Error },
    Write { path: PathBuf, err: io::Error },
    /// The replicas' shared store did not answer.
    #[cfg(all(feature = "secrets", feature = "cluster"))]
    Shared(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Read { path, err } => write!(f, "token store {}: {err}", path.display()),
            StoreError::Exposed { path, mode } => {
                let p = path.display();
                write!(f, "token store {p} can be read by others (mode {mode:o}); run `chmod 600 {p}`")
            }
            StoreError::Json { path, err } => write!(f, "token store {} is not valid JSON ({err}); remove it and log in again", path.display()),
            StoreError::Folder { path, err } => write!(f, "token store folder {}: {err}", path.display()),
            StoreError::Write { path, err } => write!(f, "cannot write token store {}: {err}", path.display()),
            #[cfg(all(feature = "secrets", feature = "cluster"))]
            StoreError::Shared(why) => write!(f, "the shared state store keeps the principals' tokens and is unavailable: {why}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// The tokens of one configured server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerTokens {
    /// The server URL they were obtained for: never sent to another.
    pub url: String,
    /// The issuer of the authorization server that issued them (`None`:
    /// 2025-03-26 default endpoints).
    pub issuer: Option<String>,
    pub token_endpoint: String,
    pub resource: Option<String>,
    pub access_token: String,
    pub refresh_token: Option<String>,
    /// Unix seconds.
    pub expires_at: Option<u64>,
    pub scopes: Vec<String>,
    /// The client they were issued to.
    pub client_id: String,
}

/// A client registered with (or configured for) one authorization server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Registration {
    pub client_id: String,
    pub client_secret: Option<String>,
    pub auth_method: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Store {
    pub path: PathBuf,
}

/// Where the store lives: `$XDG_STATE_HOME/mcpx/`, else `~/.local/state/mcpx/`,
/// else beside the config file.
pub fn default_path(env: &dyn Fn(&str) -> Option<String>, config_dir: &Path) -> PathBuf {
    match crate::host::dirs::state_dir(env) {
        Some(s) => s.join("oauth-tokens.json"),
        None => config_dir.join("mcpx-oauth-tokens.json"),
    }
}

fn opt(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

fn text(v: &Value, k: &str) -> String {
    opt(v, k).unwrap_or_default()
}

impl ServerTokens {
    pub(super) fn from_json(v: &Value) -> ServerTokens {
        ServerTokens {
            url: text(v, "url"),
            issuer: opt(v, "issuer"),
            token_endpoint: text(v, "tokenEndpoint"),
            resource: opt(v, "resource"),
            access_token: text(v, "accessToken"),
            refresh_token: opt(v, "refreshToken"),
            expires_at: v.get("expiresAt").and_then(Value::as_u64),
            scopes: super::discovery::split_scopes(&text(v, "scope")),
            client_id: text(v, "clientId"),
        }
    }

    pub(super) fn to_json(&self) -> Value {
        json!({
            "url": self.url, "issuer": self.issuer, "tokenEndpoint": self.token_endpoint,
            "resource": self.resource, "accessToken": self.access_token, "refreshToken": self.refresh_token,
            "expiresAt": self.expires_at, "scope": self.scopes.join(" "), "clientId": self.client_id,
        })
    }
}

impl Store {
    fn read(&self) -> Result<Value, StoreError> {
        let path = || self.path.clone();
        let meta = match fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(json!({})),
            Err(err) => return Err(StoreError::Read { path: path(), err }),
        };
        // Requirement: authz-secure-token-storage
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(StoreError::Exposed { path: path(), mode });
        }
        let bytes = fs::read(&self.path).map_err(|err| StoreError::Read { path: path(), err })?;
        serde_json::from_slice(&bytes).map_err(|err| StoreError::Json { path: path(), err })
    }

    fn write(&self, v: &Value) -> Result<(), StoreError> {
        if let Some(dir) = self.path.parent() {
            fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|err| StoreError::Folder { path: dir.to_path_buf(), err })?;
        }
        let tmp = self.path.with_extension(format!("tmp{}", std::process::id()));
        let result = (|| {
            let mut f = fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
            f.set_permissions(fs::Permissions::from_mode(0o600))?;
            f.write_all(serde_json::to_string_pretty(v).unwrap_or_default().as_bytes())?;
            f.sync_all()?;
            fs::rename(&tmp, &self.path)
        })();
        result.map_err(|err| {
            let _ = fs::remove_file(&tmp);
            StoreError::Write { path: self.path.clone(), err }
        })
    }

    fn section<'a>(v: &'a mut Value, name: &str) -> &'a mut Map<String, Value> {
        Store::section_value(v, name).as_object_mut().expect("an object")
    }

    /// Member `name` of `v`, made an object (and `v` one) where it is not.
    fn section_value<'a>(v: &'a mut Value, name: &str) -> &'a mut Value {
        if !v.is_object() {
            *v = json!({});
        }
        let s = v.as_object_mut().expect("an object").entry(name).or_insert_with(|| json!({}));
        if !s.is_object() {
            *s = json!({});
        }
        s
    }

    fn update(&self, f: impl FnOnce(&mut Value)) -> Result<(), StoreError> {
        let mut v = self.read()?;
        f(&mut v);
        self.write(&v)
    }

    /// The tokens of `who` (a principal's own, `"perPrincipal"`, in a build
    /// with feature `secrets`: kept encrypted) or of everyone (`None`: the
    /// operator's `mcpx auth login`), by server.
    fn tokens_of<'a>(v: &'a mut Value, who: Option<&str>) -> &'a mut Map<String, Value> {
        match who {
            #[cfg(feature = "secrets")]
            Some(p) => Store::section(Store::section_value(v, "principals"), p),
            _ => Store::section(v, "servers"),
        }
    }

    /// The operator's tokens for a server.
    pub fn tokens(&self, server: &str) -> Result<Option<ServerTokens>, StoreError> {
        let v = self.read()?;
        Ok(v.get("servers").and_then(|s| s.get(server)).map(ServerTokens::from_json))
    }

    pub fn put_tokens(&self, server: &str, t: &ServerTokens) -> Result<(), StoreError> {
        self.update(|v| {
            Store::tokens_of(v, None).insert(server.to_string(), t.to_json());
        })
    }

    /// A principal's tokens for a server, as kept (encrypted).
    #[cfg(feature = "secrets")]
    pub(super) fn principal_value(&self, server: &str, principal: &str) -> Result<Option<String>, StoreError> {
        let v = self.read()?;
        Ok(v.get("principals").and_then(|s| s.get(principal)?.get(server)?.as_str()).map(str::to_string))
    }

    #[cfg(feature = "secrets")]
    pub(super) fn put_principal_value(&self, server: &str, principal: &str, kept: String) -> Result<(), StoreError> {
        self.update(|v| {
            Store::tokens_of(v, Some(principal)).insert(server.to_string(), Value::String(kept));
        })
    }

    /// Forgets `who`'s tokens for a server; whether there were any.
    pub fn remove_tokens(&self, server: &str, who: Option<&str>) -> Result<bool, StoreError> {
        let mut had = false;
        self.update(|v| had = Store::tokens_of(v, who).remove(server).is_some())?;
        Ok(had)
    }

    // Requirement: authz-credentials-bound-to-issuer, authz-client-per-as-registration-state
    pub fn registration(&self, issuer: &str) -> Result<Option<Registration>, StoreError> {
        let v = self.read()?;
        Ok(v.pointer(&format!("/clients/{}", pointer_escape(issuer))).map(|c| Registration {
            client_id: text(c, "clientId"),
            client_secret: opt(c, "clientSecret"),
            auth_method: opt(c, "authMethod"),
        }))
    }

    pub fn put_registration(&self, issuer: &str, r: &Registration) -> Result<(), StoreError> {
        self.update(|v| {
            let c = json!({"clientId": r.client_id, "clientSecret": r.client_secret, "authMethod": r.auth_method});
            Store::section(v, "clients").insert(issuer.to_string(), c);
        })
    }
}

fn pointer_escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_store(tag: &str) -> Store {
        let dir = std::env::temp_dir().join(format!("mcpx-store-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        Store { path: dir.join("state/mcpx/oauth-tokens.json") }
    }

    // covers: authz-secure-token-storage, authz-credentials-bound-to-issuer
    #[test]
    fn only_the_user_can_read_it() {
        let s = temp_store("perm");
        assert_eq!(s.tokens("a").unwrap(), None);
        let t = ServerTokens { url: "http://h/mcp".into(), access_token: "at-secret".into(), scopes: vec!["a".into(), "b".into()], ..Default::default() };
        s.put_tokens("a/b", &t).unwrap();
        s.put_registration("http://as", &Registration { client_id: "c".into(), client_secret: Some("s".into()), auth_method: None }).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&s.path), 0o600);
        assert_eq!(mode(s.path.parent().unwrap()), 0o700);
        assert_eq!(s.tokens("a/b").unwrap(), Some(t.clone()));
        // A principal's own tokens are apart from the server's and each other's.
        #[cfg(feature = "secrets")]
        principals_apart(&s, &t);
        assert_eq!(s.registration("http://as").unwrap().unwrap().client_id, "c");
        assert_eq!(s.registration("http://other-as").unwrap(), None);
        assert!(s.remove_tokens("a/b", None).unwrap());
        assert!(!s.remove_tokens("a/b", None).unwrap());
        // A store others can read is refused, not used.
        fs::set_permissions(&s.path, fs::Permissions::from_mode(0o644)).unwrap();
        let e = s.tokens("a").unwrap_err().to_string();
        assert!(e.contains("can be read by others") && e.contains("chmod 600"), "{e}");
        let _ = fs::remove_dir_all(s.path.parent().unwrap().parent().unwrap().parent().unwrap());
    }

    #[cfg(feature = "secrets")]
    fn principals_apart(s: &Store, t: &ServerTokens) {
        s.put_principal_value("a/b", "al/ice", "v1.sealed".into()).unwrap();
        assert_eq!(s.principal_value("a/b", "al/ice").unwrap().as_deref(), Some("v1.sealed"));
        assert_eq!(s.principal_value("a/b", "bob").unwrap(), None);
        assert_eq!(s.tokens("a/b").unwrap(), Some(t.clone()));
        assert!(s.remove_tokens("a/b", Some("al/ice")).unwrap());
        assert_eq!(s.principal_value("a/b", "al/ice").unwrap(), None);
    }

    #[test]
    fn location() {
        let env = |vars: &'static [(&'static str, &'static str)]| move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string());
        let cfg = Path::new("/etc/mcpx");
        assert_eq!(default_path(&env(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")]), cfg), Path::new("/s/mcpx/oauth-tokens.json"));
        assert_eq!(default_path(&env(&[("HOME", "/h")]), cfg), Path::new("/h/.local/state/mcpx/oauth-tokens.json"));
        assert_eq!(default_path(&env(&[]), cfg), Path::new("/etc/mcpx/mcpx-oauth-tokens.json"));
    }
}
