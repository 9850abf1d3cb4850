//! Where the authorization server of a protected MCP server is, and what it
//! can do: the `WWW-Authenticate` challenge, Protected Resource Metadata
//! (RFC 9728) and Authorization Server Metadata (RFC 8414, OpenID Connect
//! Discovery). Pure functions of URLs and documents; the fetching is
//! [`super::Authorizer`]'s.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use crate::remote::url::Url;

/// Why a metadata document is not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetadataError {
    NoResource,
    /// The Protected Resource Metadata names another resource.
    OtherResource { resource: String, server: String },
    NoAuthorizationServers,
    /// The Authorization Server Metadata names another issuer.
    OtherIssuer { got: String, expected: String },
    NoPkce { issuer: String, methods: Vec<String> },
    NoTokenEndpoint,
}

impl fmt::Display for MetadataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetadataError::NoResource => f.write_str("the document has no \"resource\""),
            MetadataError::OtherResource { resource, server } => {
                write!(f, "its resource {resource:?} is not this server's URL {server}; refusing to authorize for another resource")
            }
            MetadataError::NoAuthorizationServers => f.write_str("the document names no authorization_servers"),
            MetadataError::OtherIssuer { got, expected } => {
                write!(f, "its issuer {got:?} is not {expected:?}, the authorization server it was fetched for; not used")
            }
            MetadataError::NoPkce { issuer, methods } => write!(
                f,
                "authorization server {issuer} does not offer PKCE with S256 (code_challenge_methods_supported: {methods:?}); refusing to use it"
            ),
            MetadataError::NoTokenEndpoint => f.write_str("the metadata has no token_endpoint"),
        }
    }
}

/// The parameters of a `Bearer` challenge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    pub resource_metadata: Option<String>,
    /// Space-separated scopes the server asks for.
    pub scope: Option<String>,
    /// `invalid_token`, `insufficient_scope`, ...
    pub error: Option<String>,
}

impl Challenge {
    /// Parses a `WWW-Authenticate` value; the `Bearer` challenge's
    /// parameters (other schemes are skipped). Unparsable input gives an
    /// empty challenge: the well-known locations are tried then.
    // Requirement: authz-client-parses-www-authenticate
    pub fn parse(value: &str) -> Challenge {
        let mut out = Challenge::default();
        let mut in_bearer = false;
        let mut rest = value.trim();
        while !rest.is_empty() {
            rest = rest.trim_start_matches([' ', ',', '\t']);
            let tok_end = rest.find(['=', ' ', ',']).unwrap_or(rest.len());
            let token = &rest[..tok_end];
            let after = rest[tok_end..].trim_start_matches([' ', '\t']);
            if let Some(v) = after.strip_prefix('=') {
                // An auth-param: token=value or token="quoted".
                let v = v.trim_start();
                let (value, remaining) = if let Some(q) = v.strip_prefix('"') {
                    let mut s = String::new();
                    let mut chars = q.char_indices();
                    let mut end = q.len();
                    while let Some((i, c)) = chars.next() {
                        match c {
                            '\\' => {
                                if let Some((_, n)) = chars.next() {
                                    s.push(n);
                                }
                            }
                            '"' => {
                                end = i + 1;
                                break;
                            }
                            c => s.push(c),
                        }
                    }
                    (s, &q[end.min(q.len())..])
                } else {
                    let e = v.find(',').unwrap_or(v.len());
                    (v[..e].trim().to_string(), &v[e..])
                };
                if in_bearer {
                    match token.to_ascii_lowercase().as_str() {
                        "resource_metadata" => out.resource_metadata = Some(value),
                        "scope" => out.scope = Some(value),
                        "error" => out.error = Some(value),
                        _ => {}
                    }
                }
                rest = remaining;
            } else {
                // A scheme name starts a new challenge.
                if !token.is_empty() {
                    in_bearer = token.eq_ignore_ascii_case("bearer");
                }
                rest = &rest[tok_end..];
                if token.is_empty() && !rest.is_empty() {
                    rest = &rest[1..];
                }
            }
        }
        out
    }

    pub fn scopes(&self) -> Vec<String> {
        split_scopes(self.scope.as_deref().unwrap_or(""))
    }

    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

pub fn split_scopes(s: &str) -> Vec<String> {
    s.split_ascii_whitespace().map(str::to_string).collect()
}

/// `a` with the scopes of `b` it lacks appended (order kept).
pub fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out = a.to_vec();
    for s in b {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

fn origin(u: &Url) -> String {
    let s = u.to_string();
    s[..s.len() - u.target.len()].to_string()
}

/// The path of `u` without query and trailing slash (`""` for the root).
fn bare_path(u: &Url) -> &str {
    let p = u.target.split('?').next().unwrap_or("/");
    p.trim_end_matches('/')
}

/// Where to look for the server's Protected Resource Metadata, in order:
/// the challenge's `resource_metadata`, then the path-based and the root
/// well-known locations (RFC 9728 §3.1).
// Requirement: authz-prm-discovery-header-or-well-known, authz-server-prm-rfc9728
pub fn prm_locations(server: &Url, from_header: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(h) = from_header {
        out.push(h.to_string());
    }
    let o = origin(server);
    let path = bare_path(server);
    if !path.is_empty() {
        out.push(format!("{o}/.well-known/oauth-protected-resource{path}"));
    }
    out.push(format!("{o}/.well-known/oauth-protected-resource"));
    out.dedup();
    out
}

/// Where to look for an authorization server's metadata, in the order the
/// specification gives (RFC 8414 path insertion, then OpenID Connect
/// Discovery with path insertion and with path appending).
// Requirement: authz-client-as-discovery-order, authz-as-metadata-rfc8414-or-oidc
pub fn as_metadata_locations(issuer: &Url) -> Vec<String> {
    let o = origin(issuer);
    let path = bare_path(issuer);
    if path.is_empty() {
        vec![format!("{o}/.well-known/oauth-authorization-server"), format!("{o}/.well-known/openid-configuration")]
    } else {
        vec![
            format!("{o}/.well-known/oauth-authorization-server{path}"),
            format!("{o}/.well-known/openid-configuration{path}"),
            format!("{o}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// The authorization base URL of a 2025-03-26 server without Protected
/// Resource Metadata: its URL without the path.
// Requirement: authz-base-url-discards-path
pub fn legacy_issuer(server: &Url) -> String {
    origin(server)
}

/// Protected Resource Metadata, the parts a client uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceMetadata {
    /// The resource identifier, exactly as published.
    pub resource: String,
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Vec<String>,
}

impl ResourceMetadata {
    /// Parses the document and checks that it describes `server`.
    pub fn parse(doc: &Value, server: &Url) -> Result<ResourceMetadata, MetadataError> {
        let resource = doc.get("resource").and_then(Value::as_str).ok_or(MetadataError::NoResource)?;
        // Requirement: authz-canonical-uri-guidance (the resource names this server)
        if !resource_covers(resource, server) {
            return Err(MetadataError::OtherResource { resource: resource.to_string(), server: server.to_string() });
        }
        let authorization_servers = strings(doc.get("authorization_servers"));
        if authorization_servers.is_empty() {
            return Err(MetadataError::NoAuthorizationServers);
        }
        Ok(ResourceMetadata {
            resource: resource.to_string(),
            authorization_servers,
            scopes_supported: strings(doc.get("scopes_supported")),
        })
    }
}

/// Whether resource identifier `resource` covers the server at `server`:
/// same origin (scheme and host compared case-insensitively), and the
/// server's path is the resource's path or below it.
pub fn resource_covers(resource: &str, server: &Url) -> bool {
    let Ok(r) = Url::parse(resource) else { return false };
    if !r.same_origin(server) || resource.contains('#') {
        return false;
    }
    let (rp, sp) = (bare_path(&r), bare_path(server));
    sp == rp || sp.starts_with(&format!("{rp}/"))
}

/// Authorization Server Metadata, the parts a client uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerMetadata {
    /// The issuer identifier as the metadata gives it (the one `iss` is
    /// compared with); `None` for the 2025-03-26 default endpoints.
    pub issuer: Option<String>,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub scopes_supported: Vec<String>,
    pub grant_types_supported: Vec<String>,
    /// Empty when not given (RFC 8414 default: `client_secret_basic`).
    pub token_endpoint_auth_methods_supported: Vec<String>,
    pub client_id_metadata_document_supported: bool,
    pub iss_parameter_supported: bool,
}

impl ServerMetadata {
    /// Parses the document found for issuer identifier `issuer`, whose
    /// `issuer` must be the same ([`same_issuer`]), and which must offer
    /// PKCE with S256.
    // Requirement: authz-client-validates-issuer-in-metadata, authz-pkce-verify-s256
    pub fn parse(doc: &Value, issuer: &str) -> Result<ServerMetadata, MetadataError> {
        let got = doc.get("issuer").and_then(Value::as_str).unwrap_or("");
        if !same_issuer(got, issuer) {
            return Err(MetadataError::OtherIssuer { got: got.to_string(), expected: issuer.to_string() });
        }
        let pkce = strings(doc.get("code_challenge_methods_supported"));
        if !pkce.iter().any(|m| m == "S256") {
            return Err(MetadataError::NoPkce { issuer: issuer.to_string(), methods: pkce });
        }
        let endpoint = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_string);
        Ok(ServerMetadata {
            issuer: Some(got.to_string()),
            authorization_endpoint: endpoint("authorization_endpoint").unwrap_or_default(),
            token_endpoint: endpoint("token_endpoint").ok_or(MetadataError::NoTokenEndpoint)?,
            registration_endpoint: endpoint("registration_endpoint"),
            scopes_supported: strings(doc.get("scopes_supported")),
            grant_types_supported: strings(doc.get("grant_types_supported")),
            token_endpoint_auth_methods_supported: strings(doc.get("token_endpoint_auth_methods_supported")),
            client_id_metadata_document_supported: doc.get("client_id_metadata_document_supported") == Some(&Value::Bool(true)),
            iss_parameter_supported: doc.get("authorization_response_iss_parameter_supported") == Some(&Value::Bool(true)),
        })
    }

    /// The 2025-03-26 default endpoints at the authorization base URL.
    // Requirement: authz-default-endpoints-fallback
    pub fn defaults(base: &str) -> ServerMetadata {
        ServerMetadata {
            authorization_endpoint: format!("{base}/authorize"),
            token_endpoint: format!("{base}/token"),
            registration_endpoint: Some(format!("{base}/register")),
            ..ServerMetadata::default()
        }
    }

    /// `offline_access` is worth asking for (SEP-2207: only when listed).
    pub fn offers_offline_access(&self) -> bool {
        self.scopes_supported.iter().any(|s| s == "offline_access")
    }
}

/// Whether issuer identifiers `a` and `b` name the same authorization
/// server: identical once an empty path is `/` (`http://as:9400` is
/// `http://as:9400/`, as the Python SDK and hosted servers write them one
/// way or the other), and nothing else normalized: `https://as/x` is not
/// `https://as/x/`, nor `https://as/y`.
// Requirement: authz-client-validates-issuer-in-metadata (RFC 8414 §3.3)
pub fn same_issuer(a: &str, b: &str) -> bool {
    root_path(a) == root_path(b)
}

/// `s` with `/` for an empty path.
fn root_path(s: &str) -> Cow<'_, str> {
    let Some(start) = s.find("://").map(|i| i + 3) else { return Cow::Borrowed(s) };
    let end = s[start..].find(['/', '?', '#']).map_or(s.len(), |i| start + i);
    if s[end..].starts_with('/') {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(format!("{}/{}", &s[..end], &s[end..]))
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The scopes to request: the challenge's, else the resource's
/// `scopes_supported`, else none; then the configured ones.
// Requirement: authz-scope-selection-order, authz-scope-in-challenge
pub fn select_scopes(challenge: &Challenge, prm: Option<&ResourceMetadata>, configured: &[String]) -> Vec<String> {
    let from_server = match challenge.scopes() {
        s if !s.is_empty() => s,
        _ => prm.map(|p| p.scopes_supported.clone()).unwrap_or_default(),
    };
    union(&from_server, configured)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    // covers: authz-client-parses-www-authenticate
    #[test]
    fn parses_bearer_challenges() {
        let c = Challenge::parse(r#"Bearer realm="x", resource_metadata="http://a/.well-known/oauth-protected-resource/mcp", scope="mcp:basic mcp:write""#);
        assert_eq!(c.resource_metadata.as_deref(), Some("http://a/.well-known/oauth-protected-resource/mcp"));
        assert_eq!(c.scopes(), ["mcp:basic", "mcp:write"]);
        assert!(!c.insufficient_scope());
        let c = Challenge::parse(r#"Basic realm="r", Bearer error="insufficient_scope", scope="a", error_description="no \"way\"""#);
        assert!(c.insufficient_scope());
        assert_eq!(c.scope.as_deref(), Some("a"));
        // Parameters of another scheme are not the Bearer challenge's.
        let c = Challenge::parse(r#"DPoP scope="x", Bearer error=invalid_token"#);
        assert_eq!((c.scope, c.error.as_deref()), (None, Some("invalid_token")));
        assert_eq!(Challenge::parse("Bearer"), Challenge::default());
        assert_eq!(Challenge::parse(""), Challenge::default());
        assert_eq!(Challenge::parse("Bearer scope=\"unterminated"), Challenge { scope: Some("unterminated".into()), ..Default::default() });
    }

    // covers: authz-prm-discovery-header-or-well-known, authz-client-as-discovery-order, authz-base-url-discards-path
    #[test]
    fn discovery_order() {
        let s = url("http://h:1/mcp/");
        assert_eq!(
            prm_locations(&s, Some("http://h:1/custom.json")),
            ["http://h:1/custom.json", "http://h:1/.well-known/oauth-protected-resource/mcp", "http://h:1/.well-known/oauth-protected-resource"]
        );
        assert_eq!(prm_locations(&url("http://h/"), None), ["http://h/.well-known/oauth-protected-resource"]);
        assert_eq!(
            as_metadata_locations(&url("https://as.example/tenant1/")),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            as_metadata_locations(&url("https://as.example")),
            ["https://as.example/.well-known/oauth-authorization-server", "https://as.example/.well-known/openid-configuration"]
        );
        assert_eq!(legacy_issuer(&url("http://h:8/a/b?q")), "http://h:8");
    }

    // covers: authz-canonical-uri-guidance
    #[test]
    fn resource_must_name_this_server() {
        let s = url("http://localhost:9/mcp");
        let doc = |r: &str| json!({"resource": r, "authorization_servers": ["http://as"]});
        assert!(ResourceMetadata::parse(&doc("http://localhost:9/mcp"), &s).is_ok());
        assert!(ResourceMetadata::parse(&doc("http://localhost:9"), &s).is_ok());
        assert!(ResourceMetadata::parse(&doc("HTTP://LOCALHOST:9/mcp"), &s).is_ok());
        let e = ResourceMetadata::parse(&doc("https://evil.example.com/mcp"), &s).unwrap_err().to_string();
        assert!(e.contains("not this server's URL"), "{e}");
        assert!(ResourceMetadata::parse(&doc("http://localhost:9/mc"), &s).is_err());
        assert!(ResourceMetadata::parse(&doc("http://localhost:9/mcp/x"), &s).is_err());
        assert!(ResourceMetadata::parse(&json!({"resource": "http://localhost:9/mcp"}), &s).is_err());
        // The resource is kept exactly as published.
        assert_eq!(ResourceMetadata::parse(&doc("http://localhost:9/mcp/"), &s).unwrap().resource, "http://localhost:9/mcp/");
    }

    // covers: authz-client-validates-issuer-in-metadata, authz-pkce-verify-s256
    #[test]
    fn server_metadata_checks() {
        let doc = |issuer: &str, pkce: Value| {
            json!({"issuer": issuer, "authorization_endpoint": "http://as/a", "token_endpoint": "http://as/t",
                   "code_challenge_methods_supported": pkce, "authorization_response_iss_parameter_supported": true})
        };
        let m = ServerMetadata::parse(&doc("http://as", json!(["plain", "S256"])), "http://as").unwrap();
        assert_eq!((m.issuer.as_deref(), m.iss_parameter_supported), (Some("http://as"), true));
        assert!(ServerMetadata::parse(&doc("https://attacker.example.com", json!(["S256"])), "http://as").unwrap_err().to_string().contains("issuer"));
        // An empty path is `/` on either side; the issuer kept is the metadata's own.
        assert_eq!(ServerMetadata::parse(&doc("http://as/", json!(["S256"])), "http://as").unwrap().issuer.as_deref(), Some("http://as/"));
        assert_eq!(ServerMetadata::parse(&doc("http://as", json!(["S256"])), "http://as/").unwrap().issuer.as_deref(), Some("http://as"));
        assert!(ServerMetadata::parse(&doc("http://as/x", json!(["S256"])), "http://as/y").is_err());
        assert!(ServerMetadata::parse(&doc("http://as", json!(["plain"])), "http://as").unwrap_err().to_string().contains("S256"));
        assert!(ServerMetadata::parse(&json!({"issuer": "http://as", "token_endpoint": "t"}), "http://as").is_err());
    }

    // covers: authz-client-validates-issuer-in-metadata
    #[test]
    fn issuer_identity() {
        let table: &[(&str, &str, bool)] = &[
            ("http://127.0.0.1:9400", "http://127.0.0.1:9400", true),
            ("http://127.0.0.1:9400", "http://127.0.0.1:9400/", true),
            ("http://127.0.0.1:9400/", "http://127.0.0.1:9400", true),
            ("https://as.example", "https://as.example/", true),
            ("https://as.example/tenant", "https://as.example/tenant", true),
            // RFC 8414 §3.3 beyond the empty path: no normalization at all.
            ("https://as.example/x", "https://as.example/y", false),
            ("https://as.example/x", "https://as.example/x/", false),
            ("https://as.example/", "https://as.example//", false),
            ("https://as.example", "https://as.example/x", false),
            ("https://as.example", "HTTPS://AS.EXAMPLE", false),
            ("https://as.example", "https://as.example:443", false),
            ("https://as.example", "http://as.example", false),
            ("https://as.example", "https://as.example.evil", false),
            ("", "/", false),
            ("", "", true),
        ];
        for (a, b, same) in table {
            assert_eq!(same_issuer(a, b), *same, "{a:?} vs {b:?}");
        }
    }

    // covers: authz-scope-selection-order, authz-scope-in-challenge
    #[test]
    fn scope_selection() {
        let prm = ResourceMetadata { resource: "r".into(), authorization_servers: vec![], scopes_supported: vec!["a".into(), "b".into()] };
        let ch = Challenge::parse(r#"Bearer scope="c""#);
        assert_eq!(select_scopes(&ch, Some(&prm), &[]), ["c"]);
        assert_eq!(select_scopes(&Challenge::default(), Some(&prm), &[]), ["a", "b"]);
        assert!(select_scopes(&Challenge::default(), None, &[]).is_empty());
        assert_eq!(select_scopes(&Challenge::default(), None, &["x".into()]), ["x"]);
        assert_eq!(union(&["a".into()], &["b".into(), "a".into()]), ["a", "b"]);
    }
}
