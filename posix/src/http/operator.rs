//! `POST /restart` with `{"server": "NAME"}`: an operator restarts one
//! server (`mcpx restart NAME`) at once, as no failure: its backoff starts
//! over, and one the restart loop gave up on tries again. The status
//! page's Restart button (`status_page::post`) is the same restart; its
//! Disable and Enable buttons edit the hub's config file as `mcpx disable`
//! and `mcpx enable` do, then reload it ([`disable`]).
//!
//! Only for a principal that authenticated with a token (never
//! `anonymous`) and matches `"auth": {"operators": [..]}` (globs; default
//! `bearer`, the holder of the hub's own token). Answers are JSON: 200
//! `{"server", "restarting": true}`, else `{"error"}` with 400 (no name),
//! 403 (no operator), 404 (no such server) or 409 (asleep: it starts when
//! used). Part of the desktop build (feature `cli`, as the command).

use mcpx_core::names::glob_match;
use serde_json::{json, Value};

use super::auth::Principal;
use super::conn::Conn;
use super::request::Request;
use super::session::Shared;
use crate::cmd::{disable_in_file, Disabling};
use crate::hub::{principal_name, Input, Level, ANONYMOUS_PRINCIPAL};

/// May `principal` restart servers, `operators` being the globs allowed?
pub(crate) fn may_operate(operators: &[String], principal: &[u8]) -> bool {
    let Ok(p) = std::str::from_utf8(principal) else {
        return false;
    };
    principal != ANONYMOUS_PRINCIPAL && operators.iter().any(|o| glob_match(o, p))
}

/// What became of a restart asked for.
pub(crate) enum Asked {
    Restarting,
    Asleep,
    Unknown,
}

/// Restarts server `name` unless it is asleep or unknown; what came of it.
pub(crate) fn restart_named(sh: &Shared, name: &str) -> Asked {
    sh.link.call(|hub, now| {
        let starts = hub.starts();
        match hub.upstreams().named(name, |u| starts.template_of(u).is_some()) {
            None => Asked::Unknown,
            Some(u) if hub.upstreams().asleep(u) => Asked::Asleep,
            Some(u) => {
                hub.handle(Input::RestartAsked(u), now);
                Asked::Restarting
            }
        }
    })
}

/// Why an operator's restart of `name` did not happen, and its status.
pub(crate) fn not_restarted(asked: &Asked, name: &str) -> Option<(u16, String)> {
    match asked {
        Asked::Restarting => None,
        Asked::Asleep => Some((409, format!("server '{name}' is asleep (lazy, or stopped while idle): it starts when it is used"))),
        Asked::Unknown => Some((404, format!("no server named '{name}' is running here (a disabled one is enabled with `mcpx enable {name}`)"))),
    }
}

/// Why `who` may not restart, disable or enable servers, if it may not.
pub(crate) fn refused(sh: &Shared, who: &Principal) -> Option<&'static str> {
    (!may_operate(&sh.cfg.operators, who.bytes())).then_some(
        "restarting, disabling or enabling a server takes an operator's token: the hub's own (--token, \"auth\": {\"bearer\"}) or one of a principal in \"auth\": {\"operators\"}",
    )
}

/// Operator `who` sets server `name`'s `"disabled"` in the config file the
/// hub was started from, as `mcpx disable NAME` (`disabled`) or `mcpx
/// enable NAME` does (`cmd::disable_in_file`, off the event loop, one edit
/// at a time), then reloads the config at once (as SIGHUP does); why not,
/// and its status: 409 without a file or when it cannot be edited, 404 when
/// it has no such server (an instance of an isolated server is not one).
pub(crate) async fn disable(sh: &Shared, who: &Principal, name: &str, disabled: bool) -> Option<(u16, String)> {
    let Some(path) = sh.cfg.config_file.clone() else {
        return Some((409, "this hub was started without a config file (it serves the built-in default): there is none to edit; use the commands `mcpx disable NAME` and `mcpx enable NAME`".into()));
    };
    // Two edits at once would each write the file as it was before the other.
    static EDITING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let (file, server) = (path.clone(), name.to_string());
    let edited = smol::unblock(move || {
        let _one = EDITING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        disable_in_file(&file, &server, disabled)
    })
    .await;
    match edited {
        Err(why) => Some((409, why)),
        Ok(Disabling::NoServer) => Some((404, format!("{} has no server named '{name}'", path.display()))),
        Ok(Disabling::Already) => None,
        Ok(Disabling::Written(warnings)) => {
            for w in warnings {
                sh.log(Level::Warn, format!("{}: {w}", path.display()));
            }
            let done = if disabled { "disabled" } else { "enabled" };
            sh.log(Level::Info, format!("http: operator '{}' {done} server '{name}' in {}; reloading the config", principal_name(who.bytes()), path.display()));
            crate::reload::wake::request();
            None
        }
    }
}

/// `POST /restart`, authenticated as `who`.
pub(crate) async fn restart(
    sh: &Shared,
    conn: &mut Conn,
    req: &mut Request,
    who: &Principal,
) -> bool {
    if let Some(why) = refused(sh, who) {
        return answer(conn, 403, json!({ "error": why })).await;
    }
    let body = match conn.body(req).await {
        Ok(b) => b,
        Err(keep) => return keep,
    };
    let named = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| Some(v.get("server")?.as_str()?.to_string()));
    let Some(name) = named else {
        return answer(
            conn,
            400,
            json!({ "error": "the body is {\"server\": \"NAME\"}" }),
        )
        .await;
    };
    match not_restarted(&restart_named(sh, &name), &name) {
        None => answer(conn, 200, json!({ "server": name, "restarting": true })).await,
        Some((status, why)) => answer(conn, status, json!({ "error": why })).await,
    }
}

async fn answer(conn: &mut Conn, status: u16, v: Value) -> bool {
    let body = serde_json::to_vec(&v).unwrap_or_default();
    conn.respond(
        status,
        &[
            ("Content-Type", "application/json"),
            ("Cache-Control", "no-store"),
        ],
        &body,
        true,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_are_token_holders_that_match() {
        let ops = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let cases: &[(&[&str], &[u8], bool)] = &[
            (&["bearer"], b"bearer", true),
            (&["bearer"], b"token:alice", false),
            (&["token:*"], b"token:alice", true),
            (
                &["token:alice", "oauth:https://as.example.com *"],
                b"oauth:https://as.example.com bob",
                true,
            ),
            (&["*"], b"anonymous", false),
            (&["*"], b"token:\xff", false),
            (&[], b"bearer", false),
        ];
        for (o, p, want) in cases {
            assert_eq!(
                may_operate(&ops(o), p),
                *want,
                "{o:?} {:?}",
                String::from_utf8_lossy(p)
            );
        }
    }
}
