//! `/connect/ID` and `/oauth/callback` (feature `secrets`): a person
//! authorizes a `"perPrincipal"` server for themselves, in their browser
//! (`remote::oauth::delegated`).
//!
//! - `GET /connect/ID`: the page a caller was asked to open (the URL
//!   elicitation's `url`). The browser must be signed in to mcpx as the
//!   flow's principal (`/signin?next=/connect/ID` otherwise, open to every
//!   principal for this page); it then gets the cookie binding the flow to
//!   it and a page naming the server, the principal and the authorization
//!   server's host, with the link to go on (a link, not a redirect: the
//!   sign-in form's `form-action 'self'` would stop a redirect elsewhere).
//! - `GET /oauth/callback?code&state&iss`: the authorization server's
//!   redirect (the redirect URI to register there). The flow of `state`,
//!   reached by the browser that holds its cookie, gets its code exchanged
//!   and the tokens stored for its principal; the hub tells the client that
//!   was asked (`notifications/elicitation/complete`).

use std::rc::Rc;

use super::auth::{cookie, unix_now};
use super::conn::Conn;
use super::decide::Target;
use super::html::Esc;
use super::request::Request;
use super::session::Shared;
use super::status_page::render::FORM_CSP;
use crate::hub::{principal_name, Input, Level};
use crate::remote::oauth::delegated::{self, Flows, Opened, Refused, BROWSER_COOKIE, FLOW_TTL};
use crate::remote::oauth::form;

const STYLE: &str = "body{font:16px/1.45 system-ui,sans-serif;margin:0 auto;max-width:30rem;padding:1.5rem 1rem}\
a.go{display:inline-block;font-size:1.05rem;padding:.55rem 1.4rem;margin:.8rem 0;border:1px solid #0969da;border-radius:.4rem;text-decoration:none}\
.error{color:#cf222e}.mute{color:#6e7781;font-size:.9rem}code{overflow-wrap:anywhere}";

/// A request to `/connect/ID` or `/oauth/callback`.
pub(crate) async fn serve(sh: &Shared, conn: &mut Conn, req: &mut Request, target: Target) -> bool {
    if req.method() != "GET" {
        return conn.method_not_allowed("GET").await;
    }
    let Some(flows) = sh.flows.get().cloned() else {
        return page(conn, 404, "Nothing to authorize here", "This hub has no server that acts as each person.", None).await;
    };
    match target {
        Target::Connect => connect(sh, &flows, conn, req).await,
        _ => callback(sh, &flows, conn, req).await,
    }
}

/// The flow id of a `/connect/ID` path: letters, digits, `-` and `_`.
pub(crate) fn flow_id(path: &str) -> Option<&str> {
    let id = path.strip_prefix("/connect/")?;
    (id.len() <= 64 && delegated::is_word(id)).then_some(id)
}

async fn connect(sh: &Shared, flows: &Rc<Flows>, conn: &mut Conn, req: &Request) -> bool {
    let Some(id) = flow_id(req.path()) else {
        return page(conn, 404, "Unknown link", "This authorization link is not one of this hub's.", None).await;
    };
    let who = match sh.auth.signed_in(req.all("cookie"), unix_now(), false) {
        Ok(p) => p,
        Err(_) => {
            let to = format!("/signin?next=/connect/{id}");
            return conn.respond(303, &[("Location", &to), ("Cache-Control", "no-store")], b"", true).await;
        }
    };
    let me = principal_name(who.bytes());
    let held = cookie::find_named(req.all("cookie"), BROWSER_COOKIE);
    match flows.open(id, me, held) {
        Opened::Authorize { url, cookie: value, server, secure } => {
            let secure = if secure { "; Secure" } else { "" };
            // Lax: it must come back with the authorization server's redirect (a cross-site navigation).
            let set = format!("{BROWSER_COOKIE}={value}; Path=/oauth/callback; HttpOnly; SameSite=Lax; Max-Age={}{secure}", FLOW_TTL.as_secs());
            let host = crate::remote::url::Url::parse(&url).map(|u| u.host).unwrap_or_default();
            let text = format!(
                "Server '{server}' acts as each person with their own authorization. Authorize it for you ({me}) at {host}: \
                 it gets a token for you alone, kept by this hub and never shown to your MCP client."
            );
            page_with(conn, 200, "Authorize a server for you", &text, Some(&url), &[("Set-Cookie", &set)]).await
        }
        Opened::NotYours => {
            sh.log(Level::Warn, format!("http: principal '{me}' opened another principal's authorization link; refused"));
            page(conn, 403, "Not your link", "This authorization link was made for another person. Sign out, and sign in with your own token.", None).await
        }
        Opened::Unknown => page(conn, 404, "Link expired", "This authorization link is unknown or expired: make the call again for a new one.", None).await,
    }
}

async fn callback(sh: &Shared, flows: &Rc<Flows>, conn: &mut Conn, req: &Request) -> bool {
    let params = form::decode(req.query());
    let held = cookie::find_named(req.all("cookie"), BROWSER_COOKIE);
    match flows.finish(&params, held).await {
        Ok(ask) => {
            sh.link.call(|hub, now| hub.handle(Input::Authorized(&ask.id), now));
            let text = format!("Server '{}' now acts as you ({}). Go back to your MCP client and make the call again.", ask.server, ask.principal);
            page(conn, 200, "Authorized", &text, None).await
        }
        Err(e) => {
            sh.log(Level::Warn, format!("http: an authorization redirect was refused: {e}"));
            let status = if matches!(e, Refused::OtherBrowser) { 403 } else { 400 };
            page(conn, status, "Not authorized", &format!("{e}. Make the call again for a new link."), None).await
        }
    }
}

async fn page(conn: &mut Conn, status: u16, title: &str, text: &str, go: Option<&str>) -> bool {
    page_with(conn, status, title, text, go, &[]).await
}

/// A page saying `text`, with the link to go on (`go`), and `extra` headers.
async fn page_with(conn: &mut Conn, status: u16, title: &str, text: &str, go: Option<&str>, extra: &[(&str, &str)]) -> bool {
    let class = if status >= 400 { " class=\"error\"" } else { "" };
    let link = go.map_or(String::new(), |u| format!("<p><a class=\"go\" id=\"continue\" rel=\"noreferrer\" href=\"{}\">Continue</a></p>", Esc(u)));
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta name=\"referrer\" content=\"no-referrer\"><title>mcpx: {t}</title><style>{STYLE}</style></head><body><main><h1>{t}</h1>\
         <p{class}>{}</p>{link}<p class=\"mute\">mcpx</p></main></body></html>",
        Esc(text),
        t = Esc(title),
    );
    let mut headers = vec![
        ("Content-Type", "text/html; charset=utf-8"),
        ("Cache-Control", "no-store"),
        ("Content-Security-Policy", FORM_CSP),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
    ];
    headers.extend_from_slice(extra);
    conn.respond(status, &headers, body.as_bytes(), true).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_ids_are_plain_words() {
        assert_eq!(flow_id("/connect/Ab-9_x"), Some("Ab-9_x"));
        for bad in ["/connect/", "/connect/a/b", "/connect/a%2fb", "/connect/a.b", "/connectx", "/other/a"] {
            assert_eq!(flow_id(bad), None, "{bad}");
        }
        assert_eq!(flow_id(&format!("/connect/{}", "a".repeat(65))), None);
    }
}
