//! `/signin` and `/signout` (feature `signin`): a person opens `/status`
//! and `/approvals` in a browser by typing a token once, where a program
//! sends `Authorization: Bearer`.
//!
//! - `GET /signin?next=/status`: the form (no script, nothing loaded from
//!   elsewhere, fits a phone). A browser refused `/status` or `/approvals`
//!   for want of credentials is sent here (`rules::to_signin`).
//! - `POST /signin` (form fields `token`, `next`): the token is checked as
//!   its bearer header would be (`auth`: same principals, same throttling;
//!   a throttled one gets the form with 429 and `Retry-After`). A principal
//!   whose name matches `http.statusPrincipals` gets the cookie
//!   (`auth::cookie`, for `http.signinTtlMs`, 8 hours by default) and a 303
//!   to `next`; any other gets 403. None listed: nobody signs in.
//! - `POST /signout`: the cookie is cleared.
//!
//! The cookie opens GET `/status` and `/approvals` only (`rules::credential`).

pub(crate) mod rules;
#[cfg(test)]
mod tests;

use super::auth::{cookie, denial, unix_now};
use super::conn::Conn;
use super::form;
use super::decide::Target;
use super::request::Request;
use super::session::Shared;
use super::html::Esc;
use super::status_page::render::{duration, FORM_CSP};
use crate::hub::Level;
use rules::Refused;

const STYLE: &str = "body{font:16px/1.45 system-ui,sans-serif;margin:0 auto;max-width:26rem;padding:1.5rem 1rem}\
label{display:block;margin:1rem 0 .3rem;font-weight:600}input{box-sizing:border-box;width:100%;font-size:1rem;padding:.55rem}\
button{font-size:1rem;padding:.55rem 1.4rem;margin:.8rem 0}.error{color:#cf222e}.mute{color:#6e7781;font-size:.9rem}";

/// A request to `/signin` or `/signout`.
pub(crate) async fn serve(sh: &Shared, conn: &mut Conn, req: &mut Request, target: Target) -> bool {
    let required = sh.auth.required();
    match (target, req.method()) {
        // A listener without credentials: every page is open already.
        (Target::SignIn, "GET" | "POST") if !required => {
            let next = rules::next(form::value(req.query(), "next").as_deref());
            conn.respond(303, &[("Location", &next)], b"", !req.has_body()).await
        }
        (Target::SignIn, "GET") => {
            let next = rules::next(form::value(req.query(), "next").as_deref());
            form(sh, conn, &next, None).await
        }
        (Target::SignIn, "POST") => sign_in(sh, conn, req).await,
        (Target::SignIn, _) => conn.method_not_allowed("GET, POST").await,
        (_, "POST") => {
            if req.has_body() {
                if let Err(keep) = conn.body(req).await {
                    return keep;
                }
            }
            let clear = cookie::set_cookie("", 0, rules::secure(req.header_str("origin")));
            conn.respond(303, &[("Location", "/signin"), ("Set-Cookie", &clear), ("Cache-Control", "no-store")], b"", true).await
        }
        _ => conn.method_not_allowed("POST").await,
    }
}

/// `POST /signin`: the token, as its bearer header would be checked.
async fn sign_in(sh: &Shared, conn: &mut Conn, req: &mut Request) -> bool {
    let body = match conn.body(req).await {
        Ok(b) => b,
        Err(keep) => return keep,
    };
    let form_body = String::from_utf8_lossy(&body);
    let next = rules::next(form::value(&form_body, "next").as_deref());
    let header = format!("Bearer {}", form::value(&form_body, "token").unwrap_or_default());
    let now = unix_now();
    let who = match sh.auth.authenticate(std::iter::once(header.as_bytes()), conn.peer, now).await {
        Ok(p) => p,
        Err(r) => {
            let d = denial(&r, None);
            conn.common.refused(d.status, &format!("sign-in: {}", d.message));
            return form(sh, conn, &next, Some(&rules::refused(&d))).await;
        }
    };
    let name = crate::hub::principal_name(who.bytes());
    if !rules::may_sign_in(sh.auth.has_status_role(&who), &next) {
        conn.common.refused(403, &format!("sign-in: principal '{name}' is not in http.statusPrincipals"));
        let text = format!("Principal '{name}' may not open the status pages (it is not in http.statusPrincipals).");
        return form(sh, conn, &next, Some(&Refused { status: 403, text, retry_after: None })).await;
    }
    let ttl_s = sh.auth.signin_ttl_s();
    let pages = if next.starts_with("/connect/") { "its authorization page" } else { "the status pages" };
    sh.log(Level::Info, format!("http: principal '{name}' signed in to {pages} for {}", duration(ttl_s * 1000)));
    let value = sh.auth.cookies.seal(who.bytes(), now + ttl_s);
    let set = cookie::set_cookie(&value, ttl_s, rules::secure(req.header_str("origin")));
    conn.respond(303, &[("Location", &next), ("Set-Cookie", &set), ("Cache-Control", "no-store")], b"", true).await
}

/// 303 to the form, coming back to `target` once signed in.
pub(crate) async fn redirect(conn: &mut Conn, target: Target) -> bool {
    let next = if target == Target::Status { "/signin?next=/status" } else { "/signin?next=/approvals" };
    conn.respond(303, &[("Location", next), ("Cache-Control", "no-store")], b"", true).await
}

/// The form, leading to `next`: 200, or as `refused` says when the last
/// try did not sign in (its status, the line above the form, its
/// `Retry-After`).
async fn form(sh: &Shared, conn: &mut Conn, next: &str, refused: Option<&Refused>) -> bool {
    let body = page(next, refused.map(|r| r.text.as_str()), sh.auth.signin_ttl_s());
    let mut headers = vec![
        ("Content-Type", "text/html; charset=utf-8"),
        ("Cache-Control", "no-store"),
        ("Content-Security-Policy", FORM_CSP),
        ("X-Content-Type-Options", "nosniff"),
        // As on /approvals: `no-referrer` would post the form with `Origin: null`.
        ("Referrer-Policy", "same-origin"),
    ];
    if let Some(r) = refused.and_then(|r| r.retry_after.as_deref()) {
        headers.push(("Retry-After", r));
    }
    conn.respond(refused.map_or(200, |r| r.status), &headers, body.as_bytes(), true).await
}

/// The form's page, leading to `next`, with `error` said above it; a
/// sign-in lasts `ttl_s`.
fn page(next: &str, error: Option<&str>, ttl_s: u64) -> String {
    let error = error.map_or(String::new(), |e| format!("<p class=\"error\" role=\"alert\">{}</p>", Esc(e)));
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>mcpx: sign in</title><style>{STYLE}</style></head><body><main><h1>mcpx: sign in</h1>\
         <p>Sign in with your token to see this hub's status and the calls waiting for your approval.</p>{error}\
         <form method=\"post\" action=\"/signin\"><label for=\"token\">Token</label>\
         <input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"current-password\" required autofocus>\
         <input type=\"hidden\" name=\"next\" value=\"{}\"><button type=\"submit\">Sign in</button></form>\
         <p class=\"mute\">The token is the one your MCP client sends as <code>Authorization: Bearer</code>. It is checked once and not kept: \
         this browser gets a cookie for {} that opens these pages only.</p>\
         <form method=\"post\" action=\"/signout\"><button type=\"submit\">Sign out</button></form></main></body></html>",
        Esc(next),
        duration(ttl_s * 1000)
    )
}
