//! The keys of a remote server (`"url"`, `"headers"`, `"caFile"`,
//! `"type"`) and its `"oauth"` block.

use std::path::PathBuf;

use serde_json::Value;

use super::ctx::{type_name, Ctx, Object};
use crate::bytes::jsonpos::Path;
use crate::remote::oauth::{jwt, store, GrantKind, OAuthSpec, TokenExchange};
use crate::remote::{Mode, RemoteSpec};

/// Where and how to reach a remote server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteServer {
    pub url: String,
    /// Sent with every request, in file order.
    pub headers: Vec<(String, String)>,
    pub ca_file: Option<PathBuf>,
    pub mode: Mode,
    /// `"oauth"`: authorize with OAuth 2.1 instead of static headers.
    pub oauth: Option<OAuthSpec>,
}

/// How a server is reached, from `"type"` (or `"transport"`) and `"url"`.
pub(super) enum Transport {
    /// A command on stdio.
    Local,
    Remote(Mode),
    /// A transport mcpx does not speak: warned about, the server skipped.
    Unsupported,
}

/// `"type"` (or `"transport"`): `"stdio"`, `"http"` (`"streamable-http"`)
/// or `"sse"`; without it a `"url"` means remote, trying both HTTP
/// transports.
pub(super) fn parse_transport(cx: &mut Ctx<'_>, at: &Path, obj: &Object, name: &str) -> Transport {
    let type_key = if obj.contains_key("type") { "type" } else { "transport" };
    match obj.get(type_key) {
        None | Some(Value::Null) if obj.contains_key("url") => Transport::Remote(Mode::Auto),
        None | Some(Value::Null) => Transport::Local,
        Some(Value::String(t)) => match t.as_str() {
            "stdio" => Transport::Local,
            "http" | "streamable-http" | "streamableHttp" | "streamable_http" => Transport::Remote(Mode::StreamableHttp),
            "sse" => Transport::Remote(Mode::Sse),
            other => {
                cx.warn(
                    &at.key(type_key),
                    format!("transport {other:?} is not supported (use \"stdio\", \"http\" or \"sse\"); server {name:?} is skipped"),
                );
                Transport::Unsupported
            }
        },
        Some(other) => {
            cx.err(&at.key(type_key), format!("expected a string, found {}", type_name(other)));
            Transport::Local
        }
    }
}

/// The keys of a remote server: `url`, `headers`, `caFile`, checked as the
/// transport will use them (URL, header syntax, reserved headers, the CA
/// file's certificates, TLS support in this build).
pub(super) fn parse_remote(
    cx: &mut Ctx<'_>,
    at: &Path,
    obj: &Object,
    mode: Mode,
) -> Option<RemoteServer> {
    for k in ["args", "env", "cwd"] {
        if obj.contains_key(k) {
            cx.err(&at.key(k), format!("{k:?} is for local servers; a remote server has \"url\""));
        }
    }
    let uat = at.key("url");
    let url = match obj.get("url") {
        None => {
            cx.err(at, "a remote server needs a \"url\"");
            None
        }
        Some(u) => cx.string(&uat, u),
    };
    let headers = parse_headers(cx, at, obj);
    let ca_file = match obj.get("caFile") {
        None | Some(Value::Null) => None,
        Some(c) => cx.string(&at.key("caFile"), c).and_then(|s| cx.path(&at.key("caFile"), &s)),
    };
    let oauth = match obj.get("oauth") {
        None | Some(Value::Null) => None,
        Some(o) => parse_oauth(cx, &at.key("oauth"), o),
    };
    let url = url?;
    let spec = RemoteSpec {
        name: String::new(),
        url: url.clone(),
        headers: headers.clone(),
        ca_file: ca_file.clone(),
        timeout_ms: 0,
        mode,
        oauth: oauth.clone(),
    };
    if let Err(e) = spec.check() {
        // Point at the key the problem is about.
        let key = e.config_key();
        let kat = if obj.contains_key(key) { at.key(key) } else { at.clone() };
        cx.err(&kat, e);
        return None;
    }
    Some(RemoteServer { url, headers, ca_file, mode, oauth })
}

/// `"headers": {"Name": "value or ${VAR}", ..}` of `obj`, in the file's
/// order (checked as sent by `RemoteSpec::check`).
pub(super) fn parse_headers(cx: &mut Ctx<'_>, at: &Path, obj: &Object) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    match obj.get("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            let hat = at.key("headers");
            for (k, _) in cx.keys_in_order(&hat) {
                let Some(val) = m.get(&k) else { continue };
                if headers.iter().any(|(h, _): &(String, String)| h.eq_ignore_ascii_case(&k)) {
                    cx.err(&hat.key(&k), "header given twice");
                    continue;
                }
                if let Some(v) = cx.string_keeping_secrets(&hat.key(&k), val) {
                    headers.push((k, v));
                }
            }
        }
        Some(other) => cx.err(
            &at.key("headers"),
            format!("expected an object of strings, found {}", type_name(other)),
        ),
    }
    headers
}

const OAUTH_KEYS: &[&str] = &[
    "clientId",
    "clientSecret",
    "clientMetadataUrl",
    "scopes",
    "grant",
    "privateKeyFile",
    "signingAlg",
    "openWith",
    "perPrincipal",
    "publicUrl",
    "tokenExchange",
];

/// A remote server's `"oauth"` block; the token store goes to
/// `$XDG_STATE_HOME/mcpx/` (or `~/.local/state/mcpx/`, or beside the config).
fn parse_oauth(cx: &mut Ctx<'_>, at: &Path, v: &Value) -> Option<OAuthSpec> {
    let Value::Object(obj) = v else {
        cx.err(at, format!("expected an object (e.g. {{}} or {{\"clientId\": \"...\"}}), found {}", type_name(v)));
        return None;
    };
    cx.unknown_keys(at, obj, OAUTH_KEYS);
    let n_errors = cx.errors.len();
    let text = |cx: &mut Ctx<'_>, k: &str| obj.get(k).filter(|v| !v.is_null()).and_then(|v| cx.string(&at.key(k), v));
    let mut spec = OAuthSpec {
        client_id: text(cx, "clientId"),
        client_secret: text(cx, "clientSecret"),
        client_metadata_url: text(cx, "clientMetadataUrl"),
        signing_alg: text(cx, "signingAlg"),
        open_with: text(cx, "openWith"),
        store: store::default_path(cx.env, cx.base),
        ..OAuthSpec::default()
    };
    if let Some(s) = obj.get("scopes").filter(|v| !v.is_null()) {
        spec.scopes = cx.strings(&at.key("scopes"), s).unwrap_or_default();
    }
    if let Some(p) = text(cx, "privateKeyFile") {
        spec.private_key_file = cx.path(&at.key("privateKeyFile"), &p);
    }
    spec.grant = match text(cx, "grant").as_deref() {
        None | Some("authorization_code") => GrantKind::AuthorizationCode,
        Some("client_credentials") => GrantKind::ClientCredentials,
        Some(other) => {
            cx.err(&at.key("grant"), format!("unknown grant {other:?} (use \"authorization_code\" or \"client_credentials\")"));
            GrantKind::AuthorizationCode
        }
    };
    if spec.client_secret.is_some() && spec.client_id.is_none() {
        cx.err(&at.key("clientSecret"), "\"clientSecret\" needs \"clientId\"");
    }
    if let Some(u) = &spec.client_metadata_url {
        if !u.starts_with("https://") {
            cx.err(&at.key("clientMetadataUrl"), "a Client ID Metadata Document URL must be https://");
        }
    }
    if spec.grant == GrantKind::ClientCredentials && spec.client_id.is_none() {
        cx.err(&at.key("grant"), "the client_credentials grant needs \"clientId\" (and \"clientSecret\" or \"privateKeyFile\")");
    }
    if let Some(alg) = &spec.signing_alg {
        if !jwt::ALGS.contains(&alg.as_str()) {
            cx.err(&at.key("signingAlg"), format!("signingAlg {alg:?} is not supported (use {})", jwt::ALGS.join(" or ")));
        }
    }
    if spec.private_key_file.is_some() {
        if spec.grant != GrantKind::ClientCredentials {
            cx.err(&at.key("privateKeyFile"), "\"privateKeyFile\" is for \"grant\": \"client_credentials\"");
        }
        if !cfg!(feature = "oauth-jwt") {
            cx.err(&at.key("privateKeyFile"), "this mcpx was built without private-key JWT support (cargo feature `oauth-jwt`)");
        }
    }
    spec.per_principal = parse_per_principal(cx, at, obj, &spec);
    spec.token_exchange = obj.get("tokenExchange").filter(|v| !v.is_null()).and_then(|v| parse_token_exchange(cx, &at.key("tokenExchange"), v, &spec));
    (cx.errors.len() == n_errors).then_some(spec)
}

/// `"perPrincipal": true` with `"publicUrl"`: each principal authorizes
/// for itself in its browser, sent to mcpx's `/connect` page at
/// `publicUrl` and back to its `/oauth/callback` (the redirect URI to
/// register with the authorization server).
#[cfg(feature = "secrets")]
fn parse_per_principal(cx: &mut Ctx<'_>, at: &Path, obj: &Object, spec: &OAuthSpec) -> Option<String> {
    let on = obj.get("perPrincipal").filter(|v| !v.is_null()).and_then(|v| cx.bool(&at.key("perPrincipal"), v)).unwrap_or(false);
    let public = obj.get("publicUrl").filter(|v| !v.is_null()).and_then(|v| cx.string(&at.key("publicUrl"), v));
    if !on {
        if public.is_some() {
            cx.err(&at.key("publicUrl"), "\"publicUrl\" is for \"perPrincipal\": true");
        }
        return None;
    }
    if spec.grant != GrantKind::AuthorizationCode || spec.open_with.is_some() {
        cx.err(&at.key("perPrincipal"), "each principal authorizes in its own browser: \"perPrincipal\" goes with the authorization_code grant and without \"openWith\"");
    }
    let example = "expected the URL people's browsers reach this hub's HTTP listener at, like \"https://mcpx.example.net\" (the redirect URI is that plus /oauth/callback)";
    let Some(public) = public else {
        cx.err(at, format!("\"perPrincipal\" needs \"publicUrl\": {example}"));
        return None;
    };
    match crate::remote::url::Url::parse(&public) {
        Ok(u) if u.target == "/" && !public.contains('?') && !public.contains('#') => Some(public.trim_end_matches('/').to_string()),
        Ok(_) => {
            cx.err(&at.key("publicUrl"), format!("{example} (no path, query or fragment)"));
            None
        }
        Err(e) => {
            cx.err(&at.key("publicUrl"), format!("{example}: {e}"));
            None
        }
    }
}

/// A build without per-principal credentials refuses `"perPrincipal"`.
#[cfg(not(feature = "secrets"))]
fn parse_per_principal(cx: &mut Ctx<'_>, at: &Path, obj: &Object, _: &OAuthSpec) -> Option<String> {
    if obj.contains_key("perPrincipal") {
        cx.err(&at.key("perPrincipal"), "this mcpx was built without per-principal credentials (cargo feature `secrets`)");
    }
    None
}

/// `"tokenExchange": true` or `{"audience": "..."}`: each principal's
/// instance exchanges the principal's OAuth access token to mcpx for one
/// for this server (RFC 8693), as the configured client; `false`: off. The
/// HTTP listener must authenticate with OAuth ([`check_token_exchange`]).
fn parse_token_exchange(cx: &mut Ctx<'_>, at: &Path, v: &Value, spec: &OAuthSpec) -> Option<TokenExchange> {
    let x = match v {
        Value::Bool(false) => return None,
        Value::Bool(true) => TokenExchange::default(),
        Value::Object(o) => {
            cx.unknown_keys(at, o, &["audience"]);
            let audience = o.get("audience").filter(|v| !v.is_null()).and_then(|v| cx.string(&at.key("audience"), v));
            if audience.as_deref() == Some("") {
                cx.err(&at.key("audience"), "the audience is empty");
            }
            TokenExchange { audience }
        }
        other => {
            cx.err(at, format!("expected true or an object like {{\"audience\": \"https://api.example.com\"}}, found {}", type_name(other)));
            return None;
        }
    };
    if !cfg!(all(feature = "secrets", feature = "oauth")) {
        cx.err(at, "this mcpx was built without token exchange (cargo features `secrets` and `oauth`)");
    }
    if spec.per_principal.is_some() {
        cx.err(at, "\"tokenExchange\" and \"perPrincipal\" are two ways to get each principal's own tokens: use one");
    }
    if spec.client_id.is_none() {
        cx.err(at, "\"tokenExchange\" needs \"clientId\" (and \"clientSecret\"): the client mcpx is at the authorization server that exchanges the tokens");
    }
    Some(x)
}

/// A `"tokenExchange"` server needs a subject token for each principal:
/// its OAuth access token to mcpx, so the HTTP listener must authenticate
/// with OAuth (`"auth": {"oauth": ...}`).
#[cfg(all(feature = "secrets", feature = "oauth"))]
pub(super) fn check_token_exchange(cx: &mut Ctx<'_>, top: &Path, http: &super::http::HttpSettings, servers: &[super::ServerConfig]) {
    if http.auth.oauth.is_some() {
        return;
    }
    for s in servers.iter().filter(|s| s.token_exchange().is_some()) {
        let at = top.key("mcpServers").key(&s.name).key("oauth").key("tokenExchange");
        cx.err(&at, "exchanges each principal's OAuth access token to mcpx, so the HTTP listener must authenticate with OAuth: add \"auth\": {\"oauth\": {\"issuer\": ..., \"audience\": ...}} (a principal with a static token has nothing to exchange)");
    }
}
