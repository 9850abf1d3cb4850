//! `/approvals`: the calls waiting for a person's approval (`hub::approvals`),
//! as a page that needs no script and fits a phone.
//!
//! - `GET /approvals` (authenticated like `/status`): the waiting calls the
//!   principal may decide (its own; every one for `policy.approvals.approvers`),
//!   each with its approve and deny buttons; JSON for programs (`Accept`,
//!   `?format=`, as `/status`).
//! - `GET /approvals/N?key=K`: the one call of a notification's one-time
//!   link. `POST /approvals/N` with the form fields `key` and `decision`
//!   (`approve` or `deny`) decides it. The key is the credential here (the
//!   link of a phone's notification carries no token): 128 random bits,
//!   good for that call only, until it is decided or expires. A wrong key
//!   and a decided call are one answer, 404.

use serde_json::Value;

use super::auth::Principal;
use super::conn::Conn;
use super::form::field;
use super::request::Request;
use super::session::Shared;
use super::html::Esc;
use super::status_page::render::FORM_CSP as CSP;
use super::status_page::{negotiate, Format};
use crate::hub::approvals::Decider;
use crate::hub::Input;

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:48rem;padding:.8rem 1rem 2rem}\
article{border:1px solid #d0d7de;border-radius:.4rem;padding:.6rem .8rem;margin:.8rem 0}\
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:rgba(127,127,127,.13);padding:.4rem .5rem;border-radius:.3rem;font-size:.85rem}\
dl{display:grid;grid-template-columns:max-content 1fr;gap:.1rem .8rem}dt{color:#6e7781}dd{margin:0;overflow-wrap:anywhere}\
button{font-size:1rem;padding:.5rem 1.2rem;margin:.3rem .6rem 0 0}.mute{color:#6e7781}";

/// `GET /approvals`, authenticated as `who`.
pub(crate) async fn list(sh: &Shared, conn: &mut Conn, req: &Request, who: &Principal) -> bool {
    let format = match negotiate(req.header_str("accept"), req.query()) {
        Ok(f) => f,
        Err(why) => return conn.reject(400, &why).await,
    };
    let who = Decider::Principal(who.bytes());
    let mut waiting = sh.link.call(|hub, _| hub.approvals().visible(who));
    waiting.extend(elsewhere(sh, who).await);
    match format {
        Format::Json => {
            let body =
                serde_json::to_vec(&serde_json::json!({ "waiting": waiting })).unwrap_or_default();
            conn.respond(
                200,
                &[
                    ("Content-Type", "application/json"),
                    ("Cache-Control", "no-store"),
                ],
                &body,
                true,
            )
            .await
        }
        Format::Html => {
            html(
                conn,
                200,
                &page(&waiting, "No call is waiting for your approval."),
            )
            .await
        }
    }
}

/// `GET` or `POST /approvals/N`: the one-time link (no other credential).
/// A call another replica holds is passed to it over the hop (`relayed`:
/// this request came that way, and is not passed on again).
pub(crate) async fn one(sh: &Shared, conn: &mut Conn, req: &mut Request, n: u64, relayed: bool) -> bool {
    const GONE: &str = "This call is not waiting any more (decided, withdrawn or expired), or the link is wrong.";
    match req.method() {
        "GET" => {
            let key = field(req.query(), "key").unwrap_or("").to_string();
            let waiting = sh.link.call(|hub, _| hub.approvals().visible(Decider::Link(&key)));
            if let Some(w) = waiting.iter().find(|w| w["id"] == n) {
                return html(conn, 200, &page(std::slice::from_ref(w), "")).await;
            }
            match pass_on(sh, conn, req, n, &key, Vec::new(), relayed).await {
                Some(keep) => keep,
                None => html(conn, 404, &done(GONE)).await,
            }
        }
        "POST" => {
            let body = match conn.body(req).await {
                Ok(b) => b,
                Err(keep) => return keep,
            };
            let form = String::from_utf8_lossy(&body);
            let approve = match field(&form, "decision") {
                Some("approve") => true,
                Some("deny") => false,
                _ => {
                    return conn
                        .reject(
                            400,
                            "Bad Request: the form needs decision=approve or decision=deny",
                        )
                        .await
                }
            };
            let key = field(&form, "key").unwrap_or("").to_string();
            // Decided only by a key that shows it; else the one 404.
            let decided = sh.link.call(|hub, now| {
                let known = hub.approvals().visible(Decider::Link(&key)).iter().any(|w| w["id"] == n);
                if known {
                    hub.handle(Input::ApprovalDecided { who: Decider::Link(&key), n, approve }, now);
                }
                known
            });
            match decided {
                true if approve => html(conn, 200, &done("Approved: the call runs now.")).await,
                true => html(conn, 200, &done("Declined: the caller is told not to retry it unchanged.")).await,
                false => match pass_on(sh, conn, req, n, &key, body, relayed).await {
                    Some(keep) => keep,
                    None => html(conn, 404, &done(GONE)).await,
                },
            }
        }
        _ => conn.method_not_allowed("GET, POST").await,
    }
}

/// The calls waiting on the other replicas that `who` may decide, as they
/// announced them in the store (none when replicas share none, or it does
/// not answer: then said in the log).
async fn elsewhere(sh: &Shared, who: Decider<'_>) -> Vec<Value> {
    #[cfg(feature = "cluster")]
    if let Some(dir) = sh.dir.get() {
        match dir.waiting_elsewhere().await {
            Ok(lists) => return sh.link.call(|hub, _| hub.approvals().visible_elsewhere(who, &lists)),
            Err(why) => sh.log(crate::hub::Level::Warn, format!("approvals: the calls waiting on other replicas could not be read: {}", why.0)),
        }
    }
    let _ = (sh, who);
    Vec::new()
}

/// Call `n` of the link with `key`, if another replica holds it: the
/// request (its `body` read already) passed to that replica over the hop,
/// and its answer copied (`Some(keep)`); `None`: no replica holds it.
async fn pass_on(sh: &Shared, conn: &mut Conn, req: &Request, n: u64, key: &str, body: Vec<u8>, relayed: bool) -> Option<bool> {
    if relayed {
        return None;
    }
    let w = elsewhere(sh, Decider::Link(key)).await.into_iter().find(|w| w["id"] == n)?;
    let to = w["replica"].as_str()?;
    #[cfg(feature = "cluster")]
    if let Some(dir) = sh.dir.get() {
        let who = super::auth::Principal::asserted(b"approval-link".to_vec());
        return Some(match super::session_dir::relay(conn, req, &dir, to, &who, &body, "holds this call").await {
            Ok(keep) => keep,
            Err(why) => html(conn, 404, &done(&format!("The replica holding this call ({to}) does not answer ({why}); the call is lost with it."))).await,
        });
    }
    let _ = (conn, req, to, body);
    None
}

async fn html(conn: &mut Conn, status: u16, body: &str) -> bool {
    let headers = [
        ("Content-Type", "text/html; charset=utf-8"),
        ("Cache-Control", "no-store"),
        ("Content-Security-Policy", CSP),
        ("X-Content-Type-Options", "nosniff"),
        // Not `no-referrer`: under it a browser posts the form with
        // `Origin: null`, which the front door refuses. Same-origin keeps
        // the link (and its key) from any other site.
        ("Referrer-Policy", "same-origin"),
    ];
    conn.respond(status, &headers, body.as_bytes(), true).await
}

fn document(title: &str, main: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body><h1>{}</h1>{main}</body></html>",
        Esc(title),
        Esc(title)
    )
}

fn done(text: &str) -> String {
    document("mcpx approvals", &format!("<p>{}</p>", Esc(text)))
}

/// The waiting calls, each with what it is and its two buttons.
fn page(waiting: &[Value], none: &str) -> String {
    if waiting.is_empty() {
        return document(
            "mcpx approvals",
            &format!("<p class=\"mute\">{}</p>", Esc(none)),
        );
    }
    let s = |w: &Value, k: &str| w[k].as_str().unwrap_or("").to_string();
    let mut main = String::new();
    for w in waiting {
        let n = w["id"].as_u64().unwrap_or(0);
        let client = match s(w, "client").as_str() {
            "" => String::new(),
            c => format!(" ({})", Esc(c)),
        };
        main.push_str(&format!(
            "<article data-approval=\"{n}\"><h2>{} / {}</h2><dl><dt>asked by</dt><dd>{}{client}</dd><dt>called as</dt><dd>{}</dd>\
             <dt>arguments sha256</dt><dd><code>{}</code></dd></dl><pre class=\"arguments\">{}</pre>\
             {}\
             <form method=\"post\" action=\"/approvals/{n}\"><input type=\"hidden\" name=\"key\" value=\"{}\">\
             <button name=\"decision\" value=\"approve\">Approve</button><button name=\"decision\" value=\"deny\">Deny</button></form></article>",
            Esc(&s(w, "server")),
            Esc(&s(w, "tool")),
            Esc(&s(w, "principal")),
            Esc(&s(w, "exposed")),
            Esc(&s(w, "digest")),
            Esc(&s(w, "arguments")),
            descriptions(&s(w, "description"), w["pinned"].as_str()),
            Esc(&s(w, "key")),
        ));
    }
    document(
        &format!("mcpx: {} call(s) waiting for approval", waiting.len()),
        &main,
    )
}

/// The tool's description as pinned and, when the server's differs now,
/// that one too (as `hub::approvals` words them for a client's user).
fn descriptions(now: &str, pinned: Option<&str>) -> String {
    let one = |what: &str, text: &str| format!("<details><summary class=\"mute\">{what}</summary><pre>{}</pre></details>", Esc(text));
    match pinned {
        Some(p) if p == now => one("tool description (as pinned; the server's text, untrusted)", p),
        Some(p) => format!(
            "<p><strong>The tool's description changed since it was pinned.</strong></p>{}{}",
            one("tool description as pinned (untrusted)", p),
            one("the server's description now (untrusted)", now)
        ),
        None => one("tool description (from the server, untrusted)", now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_description_as_pinned_and_the_changed_one_beside_it() {
        let same = descriptions("adds", Some("adds"));
        assert!(same.contains("as pinned") && !same.contains("changed"), "{same}");
        let changed = descriptions("adds <IMPORTANT>", Some("adds"));
        assert!(changed.contains("changed since it was pinned") && changed.contains("<pre>adds</pre>") && changed.contains("adds &lt;IMPORTANT&gt;"), "{changed}");
        assert!(descriptions("adds", None).contains("from the server, untrusted"));
    }

    #[test]
    fn what_a_server_or_client_wrote_is_shown_as_text() {
        let w = json!({ "id": 3, "key": "k", "server": "<b>s</b>", "tool": "t", "principal": "p", "client": "<script>x</script>",
                        "exposed": "e", "digest": "d", "arguments": "{\"a\": \"<img src=x>\"}", "description": "<IMPORTANT>" });
        let html = page(&[w], "");
        assert!(
            !html.contains("<b>s")
                && !html.contains("<script>x")
                && !html.contains("<img")
                && !html.contains("<IMPORTANT>"),
            "{html}"
        );
        assert!(
            html.contains("&lt;img src=x&gt;") && html.contains("action=\"/approvals/3\""),
            "{html}"
        );
    }
}
