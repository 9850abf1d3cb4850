//! Token endpoint requests (authorization code, refresh, client
//! credentials, token exchange), client authentication, and token responses.

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::Value;

use super::form;

/// How the client authenticates at the token endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    /// A public client: `client_id` in the body.
    None,
    ClientSecretBasic,
    ClientSecretPost,
    /// A signed JWT assertion (RFC 7523), for the client-credentials grant.
    PrivateKeyJwt,
}

impl ClientAuth {
    /// The method to use: the one registered for the client, else the best
    /// the server lists for what the client has (RFC 8414's default is
    /// `client_secret_basic`).
    pub fn choose(registered: Option<&str>, has_secret: bool, has_key: bool, supported: &[String]) -> ClientAuth {
        let by_name = |m: &str| match m {
            "none" => Some(ClientAuth::None),
            "client_secret_basic" if has_secret => Some(ClientAuth::ClientSecretBasic),
            "client_secret_post" if has_secret => Some(ClientAuth::ClientSecretPost),
            "private_key_jwt" if has_key => Some(ClientAuth::PrivateKeyJwt),
            _ => None,
        };
        if let Some(a) = registered.and_then(by_name) {
            return a;
        }
        if has_key {
            return ClientAuth::PrivateKeyJwt;
        }
        if !has_secret {
            return ClientAuth::None;
        }
        let offered = |m: &str| supported.is_empty() && m == "client_secret_basic" || supported.iter().any(|s| s == m);
        if offered("client_secret_basic") {
            ClientAuth::ClientSecretBasic
        } else if offered("client_secret_post") {
            ClientAuth::ClientSecretPost
        } else {
            ClientAuth::ClientSecretBasic
        }
    }
}

/// The client's identity at one authorization server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientId {
    pub id: String,
    pub secret: Option<String>,
    pub auth: ClientAuth,
}

pub enum Grant<'a> {
    Code { code: &'a str, verifier: &'a str, redirect_uri: &'a str },
    Refresh { refresh_token: &'a str },
    ClientCredentials,
    /// RFC 8693: an access token for this client's target (`resource`,
    /// and `audience` when given) in exchange for `subject_token`, an
    /// access token issued to someone else (a principal's to mcpx).
    #[cfg(all(feature = "secrets", feature = "oauth"))]
    TokenExchange { subject_token: &'a str, audience: Option<&'a str> },
}

/// RFC 8693's grant type, and the type of the tokens exchanged both ways.
#[cfg(all(feature = "secrets", feature = "oauth"))]
pub const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
#[cfg(all(feature = "secrets", feature = "oauth"))]
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// A token request: the form body and the `Authorization` header, if any.
pub struct Request {
    pub body: String,
    pub authorization: Option<String>,
}

/// The request for `grant`. `resource` goes with every grant (RFC 8707);
/// `assertion` is the signed JWT of [`ClientAuth::PrivateKeyJwt`].
// Requirement: authz-resource-indicator
pub fn request(grant: &Grant<'_>, client: &ClientId, resource: Option<&str>, scopes: &[String], assertion: Option<&str>) -> Request {
    let scope = scopes.join(" ");
    let mut p: Vec<(&str, &str)> = Vec::new();
    match grant {
        Grant::Code { code, verifier, redirect_uri } => {
            p.extend([("grant_type", "authorization_code"), ("code", code), ("code_verifier", verifier), ("redirect_uri", redirect_uri)]);
        }
        Grant::Refresh { refresh_token } => p.extend([("grant_type", "refresh_token"), ("refresh_token", refresh_token)]),
        Grant::ClientCredentials => p.push(("grant_type", "client_credentials")),
        #[cfg(all(feature = "secrets", feature = "oauth"))]
        Grant::TokenExchange { subject_token, audience } => {
            p.extend([
                ("grant_type", TOKEN_EXCHANGE),
                ("subject_token", subject_token),
                ("subject_token_type", ACCESS_TOKEN_TYPE),
                ("requested_token_type", ACCESS_TOKEN_TYPE),
            ]);
            p.extend(audience.map(|a| ("audience", a)));
        }
    }
    if !matches!(grant, Grant::Code { .. }) && !scope.is_empty() {
        p.push(("scope", &scope));
    }
    if let Some(r) = resource {
        p.push(("resource", r));
    }
    let mut authorization = None;
    match client.auth {
        ClientAuth::None => p.push(("client_id", &client.id)),
        ClientAuth::ClientSecretPost => {
            p.push(("client_id", &client.id));
            p.push(("client_secret", client.secret.as_deref().unwrap_or("")));
        }
        ClientAuth::ClientSecretBasic => {
            // RFC 6749 §2.3.1: both parts form-encoded before Base64.
            let pair = format!("{}:{}", form::encode_component(&client.id), form::encode_component(client.secret.as_deref().unwrap_or("")));
            authorization = Some(format!("Basic {}", STANDARD.encode(pair)));
        }
        ClientAuth::PrivateKeyJwt => {
            p.push(("client_id", &client.id));
            p.push(("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"));
            p.push(("client_assertion", assertion.unwrap_or("")));
        }
    }
    Request { body: form::encode(&p), authorization }
}

/// What a token response grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tokens {
    pub access_token: String,
    pub refresh_token: Option<String>,
    /// Unix seconds.
    pub expires_at: Option<u64>,
    /// Granted scopes: the response's `scope`, else the requested ones.
    pub scopes: Vec<String>,
}

/// Why a token response gives no token. It names the server's `error` and
/// `error_description`, never a token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenError {
    /// An error status or no `access_token`.
    Refused { status: u16, error: Option<String>, description: Option<String> },
    /// A token of another type than Bearer.
    TokenType(String),
    NoTokenType,
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenError::Refused { status, error, description } => {
                write!(f, "the token endpoint answered HTTP {status}: ")?;
                match (error, description) {
                    (Some(e), Some(d)) => write!(f, "{e}: {d}"),
                    (Some(e), None) => f.write_str(e),
                    _ => f.write_str("no access_token in the response"),
                }
            }
            TokenError::TokenType(t) => write!(f, "the token endpoint issued a {t:?} token; mcpx uses Bearer tokens only"),
            TokenError::NoTokenType => f.write_str("the token response has no token_type"),
        }
    }
}

/// Parses a token endpoint response.
pub fn parse_response(status: u16, body: &[u8], now_s: u64, requested: &[String]) -> Result<Tokens, TokenError> {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    if !(200..300).contains(&status) || s("access_token").is_none() {
        let text = |k: &str| s(k).map(str::to_string);
        return Err(TokenError::Refused { status, error: text("error"), description: text("error_description") });
    }
    match s("token_type") {
        Some(t) if t.eq_ignore_ascii_case("bearer") => {}
        Some(t) => return Err(TokenError::TokenType(t.to_string())),
        None => return Err(TokenError::NoTokenType),
    }
    let expires_at = v.get("expires_in").and_then(Value::as_u64).map(|e| now_s.saturating_add(e));
    Ok(Tokens {
        access_token: s("access_token").unwrap_or_default().to_string(),
        refresh_token: s("refresh_token").map(str::to_string),
        expires_at,
        scopes: s("scope").map(super::discovery::split_scopes).unwrap_or_else(|| requested.to_vec()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(auth: ClientAuth) -> ClientId {
        ClientId { id: "c id".into(), secret: Some("s:1".into()), auth }
    }

    #[test]
    fn client_auth_choice() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(ClientAuth::choose(Some("client_secret_post"), true, false, &[]), ClientAuth::ClientSecretPost);
        assert_eq!(ClientAuth::choose(None, true, false, &[]), ClientAuth::ClientSecretBasic);
        assert_eq!(ClientAuth::choose(None, true, false, &s(&["client_secret_post"])), ClientAuth::ClientSecretPost);
        assert_eq!(ClientAuth::choose(None, false, false, &s(&["client_secret_basic"])), ClientAuth::None);
        assert_eq!(ClientAuth::choose(Some("client_secret_basic"), false, false, &[]), ClientAuth::None);
        assert_eq!(ClientAuth::choose(None, false, true, &[]), ClientAuth::PrivateKeyJwt);
    }

    // covers: authz-resource-indicator, authz-pkce
    #[test]
    fn requests() {
        let g = Grant::Code { code: "k", verifier: "v", redirect_uri: "http://127.0.0.1:1/callback" };
        let r = request(&g, &client(ClientAuth::ClientSecretBasic), Some("http://h/mcp"), &["a".into()], None);
        assert_eq!(r.body, "grant_type=authorization_code&code=k&code_verifier=v&redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcallback&resource=http%3A%2F%2Fh%2Fmcp");
        assert_eq!(r.authorization.as_deref(), Some(format!("Basic {}", STANDARD.encode("c%20id:s%3A1")).as_str()));
        let r = request(&Grant::Refresh { refresh_token: "rt" }, &client(ClientAuth::ClientSecretPost), None, &["a".into(), "b".into()], None);
        assert_eq!(r.body, "grant_type=refresh_token&refresh_token=rt&scope=a%20b&client_id=c%20id&client_secret=s%3A1");
        assert!(r.authorization.is_none());
        let r = request(&Grant::ClientCredentials, &client(ClientAuth::PrivateKeyJwt), Some("r"), &[], Some("j.w.t"));
        assert!(r.body.ends_with("client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer&client_assertion=j.w.t"), "{}", r.body);
        let r = request(&Grant::ClientCredentials, &client(ClientAuth::None), None, &[], None);
        assert_eq!(r.body, "grant_type=client_credentials&client_id=c%20id");
    }

    // RFC 8693 §2.1: the subject token and both token types, the RFC 8707
    // resource, the audience when configured, the scopes; the client
    // authenticates as for any grant.
    #[cfg(all(feature = "secrets", feature = "oauth"))]
    #[test]
    fn token_exchange_requests() {
        let urn = |s: &str| s.replace(':', "%3A");
        let (at, te) = (urn(ACCESS_TOKEN_TYPE), urn(TOKEN_EXCHANGE));
        let cases: [(Option<&str>, &[&str], ClientAuth, String); 3] = [
            (None, &[], ClientAuth::ClientSecretBasic, format!("grant_type={te}&subject_token=s.t&subject_token_type={at}&requested_token_type={at}&resource=http%3A%2F%2Fh%2Fmcp")),
            (
                Some("https://api.example"),
                &["mcp", "read"],
                ClientAuth::ClientSecretBasic,
                format!("grant_type={te}&subject_token=s.t&subject_token_type={at}&requested_token_type={at}&audience=https%3A%2F%2Fapi.example&scope=mcp%20read&resource=http%3A%2F%2Fh%2Fmcp"),
            ),
            (
                None,
                &["mcp"],
                ClientAuth::ClientSecretPost,
                format!("grant_type={te}&subject_token=s.t&subject_token_type={at}&requested_token_type={at}&scope=mcp&resource=http%3A%2F%2Fh%2Fmcp&client_id=c%20id&client_secret=s%3A1"),
            ),
        ];
        for (audience, scopes, auth, body) in cases {
            let scopes: Vec<String> = scopes.iter().map(|s| s.to_string()).collect();
            let g = Grant::TokenExchange { subject_token: "s.t", audience };
            let r = request(&g, &client(auth), Some("http://h/mcp"), &scopes, None);
            assert_eq!(r.body, body);
            assert_eq!(r.authorization.is_some(), auth == ClientAuth::ClientSecretBasic);
        }
    }

    #[test]
    fn responses() {
        let t = parse_response(200, br#"{"access_token":"at","token_type":"bearer","expires_in":60,"refresh_token":"rt"}"#, 1000, &["x".into()]).unwrap();
        assert_eq!(t, Tokens { access_token: "at".into(), refresh_token: Some("rt".into()), expires_at: Some(1060), scopes: vec!["x".into()] });
        let t = parse_response(200, br#"{"access_token":"at","token_type":"Bearer","scope":"a b"}"#, 0, &[]).unwrap();
        assert_eq!((t.expires_at, t.scopes), (None, vec!["a".to_string(), "b".to_string()]));
        let e = parse_response(400, br#"{"error":"invalid_grant","error_description":"expired"}"#, 0, &[]).unwrap_err().to_string();
        assert!(e.contains("HTTP 400: invalid_grant: expired"), "{e}");
        assert!(parse_response(200, br#"{"access_token":"secret-at","token_type":"DPoP"}"#, 0, &[]).unwrap_err().to_string().contains("DPoP"));
        assert!(!parse_response(200, br#"{"access_token":"secret-at"}"#, 0, &[]).unwrap_err().to_string().contains("secret-at"));
        let e = parse_response(200, br#"{"token_type":"Bearer"}"#, 0, &[]).unwrap_err().to_string();
        assert_eq!(e, "the token endpoint answered HTTP 200: no access_token in the response");
    }
}
