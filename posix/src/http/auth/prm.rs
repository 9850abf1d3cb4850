//! OAuth 2.0 Protected Resource Metadata (RFC 9728) of the HTTP listener and
//! the `WWW-Authenticate` challenges that point at it.
//!
//! The resource is the configured audience (mcpx's canonical URL). Its
//! metadata is served at the well-known URI built from it (RFC 9728 §3.1:
//! `/.well-known/oauth-protected-resource` followed by the resource's path,
//! e.g. `/.well-known/oauth-protected-resource/mcp`) and at the root form,
//! without authentication.

use mcpx_core::error::ErrorCode;
use serde_json::json;

use super::super::conn::Conn;
use super::super::request::Request;
use super::OAuthSettings;
use crate::remote::url::{Scheme, Url};

const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The audience and issuer must be absolute URLs; the audience without a
/// query (it is the resource identifier, RFC 9728 §1.2); https, or http on
/// a loopback host.
pub(super) fn check(o: &OAuthSettings) -> Result<(), String> {
    let aud = Url::parse(&o.audience).map_err(|e| format!("\"auth\".\"oauth\".\"audience\" {:?}: {e}", o.audience))?;
    if aud.target.contains('?') {
        return Err(format!("\"auth\".\"oauth\".\"audience\" {:?} must not have a query", o.audience));
    }
    for (key, url) in [("issuer", Some(&o.issuer)), ("jwksUrl", o.jwks_url.as_ref()), ("introspectionUrl", o.introspection_url.as_ref())] {
        let Some(url) = url else { continue };
        let u = Url::parse(url).map_err(|e| format!("\"auth\".\"oauth\".\"{key}\" {url:?}: {e}"))?;
        if u.scheme == Scheme::Http && !is_loopback(&u.host) {
            return Err(format!("\"auth\".\"oauth\".\"{key}\" {url:?} must be https:// (http:// only on a loopback host)"));
        }
    }
    if o.client_secret.is_some() && o.client_id.is_none() {
        return Err("\"auth\".\"oauth\".\"clientSecret\" needs \"clientId\"".into());
    }
    Ok(())
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback())
}

/// The resource's path as it follows the well-known prefix ("" for `/`).
fn suffix(o: &OAuthSettings) -> String {
    let target = Url::parse(&o.audience).map(|u| u.target).unwrap_or_default();
    target.trim_end_matches('/').to_string()
}

/// Is `path` where the metadata is served?
pub(crate) fn serves(o: &OAuthSettings, path: &str) -> bool {
    path.strip_prefix(WELL_KNOWN).is_some_and(|rest| rest.is_empty() || rest == suffix(o))
}

/// The absolute URL of the metadata, for `resource_metadata`.
pub(super) fn metadata_url(o: &OAuthSettings) -> String {
    match Url::parse(&o.audience) {
        Ok(u) => {
            let scheme = if u.scheme == Scheme::Https { "https" } else { "http" };
            format!("{scheme}://{}{WELL_KNOWN}{}", u.host_header(), suffix(o))
        }
        Err(_) => String::new(),
    }
}

/// The metadata document.
pub(super) fn document(o: &OAuthSettings) -> serde_json::Value {
    // Requirement rows authz-server-prm-rfc9728, authz-prm-lists-authorization-servers
    let mut doc = json!({
        "resource": o.audience,
        "authorization_servers": [o.issuer],
        "bearer_methods_supported": ["header"],
        "resource_name": "mcpx",
    });
    if !o.scopes.is_empty() {
        doc["scopes_supported"] = json!(o.scopes);
    }
    doc
}

/// GET (or HEAD) of the metadata: public, cacheable, readable cross-origin.
pub(super) async fn respond(o: &OAuthSettings, conn: &mut Conn, req: &Request) -> bool {
    let headers = [("Content-Type", "application/json"), ("Cache-Control", "max-age=3600"), ("Access-Control-Allow-Origin", "*")];
    match req.method() {
        "GET" => conn.respond(200, &headers, &serde_json::to_vec(&document(o)).unwrap_or_default(), true).await,
        "HEAD" => conn.respond(200, &headers, b"", true).await,
        _ => {
            let body = crate::bytes::written::error(None, ErrorCode::InvalidRequest, "Method not allowed", None);
            conn.respond(405, &[("Allow", "GET, HEAD"), ("Content-Type", "application/json")], &body, true).await
        }
    }
}

/// A `WWW-Authenticate` challenge (RFC 6750 §3): `error` is (code,
/// description); `scope` the scopes the request needs (all of them in one
/// challenge, row `authz-all-scopes-single-challenge`; the configured ones
/// when `None` and OAuth is on).
pub(super) fn challenge(o: Option<&OAuthSettings>, error: Option<(&str, &str)>, scope: Option<&[String]>) -> String {
    let mut params: Vec<String> = Vec::new();
    match o {
        // Requirement rows authz-401-www-authenticate, authz-insufficient-scope-403
        Some(o) => {
            params.push(format!("resource_metadata=\"{}\"", metadata_url(o)));
            let scopes = scope.unwrap_or(&o.scopes);
            if !scopes.is_empty() {
                params.push(format!("scope=\"{}\"", quotable(&scopes.join(" "))));
            }
        }
        None => params.push("realm=\"mcpx\"".into()),
    }
    if let Some((code, why)) = error {
        params.push(format!("error=\"{code}\""));
        params.push(format!("error_description=\"{}\"", quotable(why)));
    }
    format!("Bearer {}", params.join(", "))
}

/// `s` as the inside of a quoted-string: printable ASCII without `"` and `\`
/// (RFC 6750 §3 limits error_description to that set anyway).
fn quotable(s: &str) -> String {
    s.chars().map(|c| if c == '"' || c == '\\' || !(' '..='~').contains(&c) { '\'' } else { c }).collect()
}
