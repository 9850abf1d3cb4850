//! `/signin` and `/signout` (feature `signin`): a person opens `/status`
//! and `/approvals` in a browser by typing a token once, where a program
//! sends `Authorization: Bearer`.
//!
//! - `GET /signin?next=/status`: the form (no script, nothing loaded from
//!   elsewhere, fits a phone). A browser refused `/status` or `/approvals`
//!   for want of credentials is sent here (`rules::to_signin`).
//! - `POST /signin` (form fields `token`, `next`): the token is checked as
//!   its bearer header would be (`auth`: same principals, same throttling).
//!   A principal whose name matches `http.statusPrincipals` gets the cookie
//!   (`auth::cookie`, for [`cookie::TTL_S`]) and a 303 to `next`; any
//!   other gets 403. None listed: nobody signs in.
//! - `POST /signout`: the cookie is cleared.
//!
//! The cookie opens GET `/status` and `/approvals` only (`rules::credential`).

pub(crate) mod rules;
#[cfg(test)]
mod tests;

use super::auth::{cookie, denial, status_role, unix_now, Reject};
use super::conn::Conn;
use super::form;
use super::decide::Target;
use super::request::Request;
use super::session::Shared;
use super::html::Esc;
use super::status_page::render::FORM_CSP;
use crate::hub::Level;

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
            conn.respond(303, &[("Location", next)], b"", !req.has_body()).await
        }
        (Target::SignIn, "GET") => {
            let next = rules::next(form::value(req.query(), "next").as_deref());
            form(conn, 200, next, None).await
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
            let text = match r {
                Reject::Unauthorized { .. } => "That token is not valid.".to_string(),
                _ => d.message,
            };
            return form(conn, d.status, next, Some(&text)).await;
        }
    };
    let name = crate::hub::principal_name(who.bytes());
    if !status_role(&sh.cfg.status_principals, &who) {
        conn.common.refused(403, &format!("sign-in: principal '{name}' is not in http.statusPrincipals"));
        let text = format!("Principal '{name}' may not open the status pages (it is not in http.statusPrincipals).");
        return form(conn, 403, next, Some(&text)).await;
    }
    sh.log(Level::Info, format!("http: principal '{name}' signed in to the status pages for {} h", cookie::TTL_S / 3600));
    let value = sh.auth.cookies.seal(who.bytes(), now + cookie::TTL_S);
    let set = cookie::set_cookie(&value, cookie::TTL_S, rules::secure(req.header_str("origin")));
    conn.respond(303, &[("Location", next), ("Set-Cookie", &set), ("Cache-Control", "no-store")], b"", true).await
}

/// 303 to the form, coming back to `target` once signed in.
pub(crate) async fn redirect(conn: &mut Conn, target: Target) -> bool {
    let next = if target == Target::Status { "/signin?next=/status" } else { "/signin?next=/approvals" };
    conn.respond(303, &[("Location", next), ("Cache-Control", "no-store")], b"", true).await
}

/// The form, leading to `next`, with `error` said above it.
async fn form(conn: &mut Conn, status: u16, next: &str, error: Option<&str>) -> bool {
    let body = page(next, error);
    let headers = [
        ("Content-Type", "text/html; charset=utf-8"),
        ("Cache-Control", "no-store"),
        ("Content-Security-Policy", FORM_CSP),
        ("X-Content-Type-Options", "nosniff"),
        // As on /approvals: `no-referrer` would post the form with `Origin: null`.
        ("Referrer-Policy", "same-origin"),
    ];
    conn.respond(status, &headers, body.as_bytes(), true).await
}

fn page(next: &str, error: Option<&str>) -> String {
    let error = error.map_or(String::new(), |e| format!("<p class=\"error\" role=\"alert\">{}</p>", Esc(e)));
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>mcpx: sign in</title><style>{STYLE}</style></head><body><main><h1>mcpx: sign in</h1>\
         <p>Sign in with your token to see this hub's status and the calls waiting for your approval.</p>{error}\
         <form method=\"post\" action=\"/signin\"><label for=\"token\">Token</label>\
         <input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"current-password\" required autofocus>\
         <input type=\"hidden\" name=\"next\" value=\"{}\"><button type=\"submit\">Sign in</button></form>\
         <p class=\"mute\">The token is the one your MCP client sends as <code>Authorization: Bearer</code>. It is checked once and not kept: \
         this browser gets a cookie for {} hours that opens these pages only.</p>\
         <form method=\"post\" action=\"/signout\"><button type=\"submit\">Sign out</button></form></main></body></html>",
        Esc(next),
        cookie::TTL_S / 3600
    )
}
