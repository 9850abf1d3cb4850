//! `"auth"` and `"http"`: the settings of `mcpx serve --http`.

use serde_json::Value;

use super::ctx::{type_name, Ctx, Object};
use crate::http::{AuthSettings, OAuthSettings};
#[cfg(feature = "signin")]
use crate::http::SignInSettings;
use crate::bytes::jsonpos::Path;

/// Settings for serving MCP over HTTP (`mcpx serve --http ADDR`):
/// `"auth": {"bearer": "${MCPX_TOKEN}", "tokens": {"alice": "${ALICE_TOKEN}"},
/// "oauth": {"issuer", "audience", "scopes", "jwksUrl", "introspectionUrl",
/// "clientId", "clientSecret"}, "operators": ["token:alice"]}` and
/// `"http": {"allowedOrigins": [..], "allowedHosts": [..], "maxBodyBytes": n,
/// "maxSessions": n, "maxConnections": n, "sessionIdleMs": n,
/// "statusPrincipals": [..], "signinTtlMs": n}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpSettings {
    pub bearer: Option<String>,
    /// `"auth": {"tokens": {..}, "oauth": {..}}`.
    pub auth: AuthSettings,
    /// `"auth": {"operators": [..]}`: the principals (globs) that may
    /// restart a server (`POST /restart`, feature `cli`); `None`: the
    /// default, `bearer`.
    #[cfg(feature = "cli")]
    pub operators: Option<Vec<String>>,
    pub allowed_origins: Vec<String>,
    pub allowed_hosts: Vec<String>,
    pub max_body: Option<u64>,
    pub max_sessions: Option<u64>,
    pub max_connections: Option<u64>,
    pub session_idle_ms: Option<u64>,
    /// `statusPrincipals` (who has the status role: sign-in, instance
    /// owners) and `signinTtlMs` (how long a sign-in lasts).
    #[cfg(feature = "signin")]
    pub signin: SignInSettings,
}

/// The longest sign-in `http.signinTtlMs` may ask for: 400 days, the most a
/// browser keeps a cookie (RFC 6265bis §5.6.2).
#[cfg(feature = "signin")]
const MAX_SIGNIN_TTL_S: u64 = 400 * 86_400;

/// `"auth"` and `"http"` (see [`HttpSettings`]).
pub(super) fn parse_http(cx: &mut Ctx<'_>, top: &Path, obj: &Object) -> HttpSettings {
    let mut out = HttpSettings::default();
    if let Some(a) = cx.block(&top.key("auth"), obj.get("auth"), r#"{"bearer": "${MCPX_TOKEN}"}"#) {
        parse_auth(cx, &top.key("auth"), a, &mut out);
    }
    if let Some(h) = cx.block(&top.key("http"), obj.get("http"), "") {
        parse_listener(cx, &top.key("http"), h, &mut out);
    }
    out
}

/// `"auth": {"bearer", "tokens", "oauth", "operators"}` into `out`.
fn parse_auth(cx: &mut Ctx<'_>, at: &Path, a: &Object, out: &mut HttpSettings) {
    cx.unknown_keys(at, a, &["bearer", "tokens", "oauth", "operators"]);
    if let Some(v) = a.get("bearer") {
        match cx.string(&at.key("bearer"), v) {
            Some(t) if t.is_empty() => cx.err(&at.key("bearer"), "the token is empty"),
            Some(t) => out.bearer = Some(t),
            None => {}
        }
    }
    if let Some(v) = a.get("tokens") {
        out.auth.tokens = parse_tokens(cx, &at.key("tokens"), v);
    }
    if let Some(v) = a.get("oauth") {
        out.auth.oauth = parse_resource_server(cx, &at.key("oauth"), v);
    }
    // Known to every build, read by the one that serves `/restart`.
    #[cfg(feature = "cli")]
    if let Some(v) = a.get("operators") {
        out.operators = cx.strings(&at.key("operators"), v);
    }
}

/// `"http": {"allowedOrigins", "allowedHosts", and the limits}` into `out`.
fn parse_listener(cx: &mut Ctx<'_>, at: &Path, h: &Object, out: &mut HttpSettings) {
    let nums = ["maxBodyBytes", "maxSessions", "maxConnections", "sessionIdleMs"];
    // `statusPrincipals` and `signinTtlMs` are the sign-in's (feature
    // `signin`): unknown, so ignored with a warning, in a build without it.
    const KEYS: &[&str] = &[
        "allowedOrigins",
        "allowedHosts",
        "maxBodyBytes",
        "maxSessions",
        "maxConnections",
        "sessionIdleMs",
        #[cfg(feature = "signin")]
        "statusPrincipals",
        #[cfg(feature = "signin")]
        "signinTtlMs",
    ];
    cx.unknown_keys(at, h, KEYS);
    if let Some(v) = h.get("allowedOrigins") {
        out.allowed_origins = cx.strings(&at.key("allowedOrigins"), v).unwrap_or_default();
    }
    if let Some(v) = h.get("allowedHosts") {
        out.allowed_hosts = cx.strings(&at.key("allowedHosts"), v).unwrap_or_default();
    }
    #[cfg(feature = "signin")]
    if let Some(v) = h.get("statusPrincipals") {
        out.signin.status_principals = cx.strings(&at.key("statusPrincipals"), v).unwrap_or_default();
    }
    #[cfg(feature = "signin")]
    if let Some(ttl_s) = h.get("signinTtlMs").and_then(|v| signin_ttl_s(cx, &at.key("signinTtlMs"), v)) {
        out.signin.ttl_s = ttl_s;
    }
    for key in nums {
        let Some(v) = h.get(key) else { continue };
        let n = cx.positive(&at.key(key), v);
        match key {
            "maxBodyBytes" => out.max_body = n,
            "maxSessions" => out.max_sessions = n,
            "maxConnections" => out.max_connections = n,
            _ => out.session_idle_ms = n,
        }
    }
}

/// `"http": {"signinTtlMs": n}` (positive, at most [`MAX_SIGNIN_TTL_S`])
/// in seconds, rounded up: a cookie's end and `Max-Age` are whole seconds.
#[cfg(feature = "signin")]
fn signin_ttl_s(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Option<u64> {
    match v.as_u64().map(|ms| ms.div_ceil(1000)) {
        Some(s @ 1..=MAX_SIGNIN_TTL_S) => Some(s),
        _ => {
            cx.err(at, format!("expected milliseconds from 1 to {} (400 days, the most a browser keeps a cookie), found {v}", MAX_SIGNIN_TTL_S * 1000));
            None
        }
    }
}

/// `"auth": {"tokens": {"alice": "${ALICE_TOKEN}", ...}}`: principal name → token.
fn parse_tokens(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Vec<(String, String)> {
    let Value::Object(m) = v else {
        cx.err(at, format!("expected an object like {{\"alice\": \"${{ALICE_TOKEN}}\"}}, found {}", type_name(v)));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, t) in m {
        let at = at.key(name);
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_graphic()) {
            cx.err(&at, "a principal name is visible ASCII, at least one character");
            continue;
        }
        match cx.string(&at, t) {
            Some(t) if t.is_empty() => cx.err(&at, "the token is empty"),
            Some(t) if out.iter().any(|(_, o)| *o == t) => cx.err(&at, "the same token as another principal: give each its own"),
            Some(t) => out.push((name.clone(), t)),
            None => {}
        }
    }
    out
}

/// `"auth": {"oauth": {...}}`: see [`OAuthSettings`].
fn parse_resource_server(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Option<OAuthSettings> {
    const KEYS: [&str; 7] = ["issuer", "audience", "scopes", "jwksUrl", "introspectionUrl", "clientId", "clientSecret"];
    let Value::Object(o) = v else {
        cx.err(at, format!("expected an object like {{\"issuer\": \"https://as.example.com\", \"audience\": \"https://hub.example.com/mcp\"}}, found {}", type_name(v)));
        return None;
    };
    cx.unknown_keys(at, o, &KEYS);
    let mut s = OAuthSettings::default();
    let mut ok = true;
    for key in KEYS {
        let Some(v) = o.get(key) else {
            if matches!(key, "issuer" | "audience") {
                cx.err(at, format!("\"{key}\" is required"));
                ok = false;
            }
            continue;
        };
        if key == "scopes" {
            s.scopes = cx.strings(&at.key(key), v).unwrap_or_default();
            continue;
        }
        let Some(text) = cx.string(&at.key(key), v) else {
            ok = false;
            continue;
        };
        match key {
            "issuer" => s.issuer = text,
            "audience" => s.audience = text,
            "jwksUrl" => s.jwks_url = Some(text),
            "introspectionUrl" => s.introspection_url = Some(text),
            "clientId" => s.client_id = Some(text),
            _ => s.client_secret = Some(text),
        }
    }
    ok.then_some(s)
}
