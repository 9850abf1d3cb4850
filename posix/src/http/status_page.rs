//! `GET /status`: the hub's and the listener's state, as JSON for programs
//! or as a small self-refreshing HTML page for browsers.
//!
//! The format is negotiated on `Accept` (HTML only when `text/html` is
//! preferred over `application/json`, as a browser's navigation does; a
//! program sending `*/*` or nothing keeps getting JSON) and `?format=json`
//! or `?format=html` overrides it. The page is rendered from the very JSON
//! snapshot the programs get, so both always say the same.
//!
//! A client's `clientInfo` (what it calls itself) is shown only to the
//! principal that owns its session; every other principal sees that it is
//! there, its revision and state, but not its name ([`hide_others`]).
//! Whose an isolated server's instance is (`owner`, feature `signin`) is
//! shown to that principal and to those with the status role,
//! `http.statusPrincipals` ([`hide_owners`]).

#[cfg(feature = "activity")]
mod activity;
pub(crate) mod render;

use serde_json::{json, Value};

use super::auth::Principal;
use super::conn::Conn;
use super::request::Request;
use super::session::Shared;

/// What `GET /status` answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Html,
}

/// The format for a request's `Accept` header and query string; `Err` is the
/// refusal of an unknown `format=` value.
pub(crate) fn negotiate(accept: Option<&str>, query: &str) -> Result<Format, String> {
    let asked = query.split('&').find_map(|kv| kv.strip_prefix("format="));
    match asked {
        Some("json") => Ok(Format::Json),
        Some("html") => Ok(Format::Html),
        Some(other) => Err(format!(
            "Bad Request: unknown status format '{other}'; use ?format=json or ?format=html"
        )),
        None => {
            let accept = accept.unwrap_or("");
            // A tie (`*/*`, or both listed alike) is a program's: JSON.
            if quality(accept, "text/html") > quality(accept, "application/json") {
                Ok(Format::Html)
            } else {
                Ok(Format::Json)
            }
        }
    }
}

/// The q-value `accept` gives `ty`, in thousandths (RFC 9110 §12.5.1: the
/// most specific matching range decides; no match is 0).
fn quality(accept: &str, ty: &str) -> u16 {
    let major = ty.split('/').next().unwrap_or("");
    let mut best: Option<(u8, u16)> = None;
    for entry in accept.split(',') {
        let mut parts = entry.split(';');
        let range = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let specificity = if range == ty {
            2
        } else if range.strip_suffix("/*") == Some(major) {
            1
        } else if range == "*/*" {
            0
        } else {
            continue;
        };
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| qvalue(q.trim()))
            .unwrap_or(1000);
        if best.is_none_or(|(s, _)| specificity > s) {
            best = Some((specificity, q));
        }
    }
    best.map_or(0, |(_, q)| q)
}

/// A `qvalue` (RFC 9110 §12.4.2: `0` or `1`, then up to three decimals,
/// at most 1) in thousandths; `None` for anything else, which is skipped
/// like a missing weight. Parsed by hand: a float parser would bring its
/// tables into the binary for this one header.
fn qvalue(q: &str) -> Option<u16> {
    let (int, frac) = q.split_once('.').unwrap_or((q, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = frac.bytes().chain(std::iter::repeat(b'0')).take(3).fold(0, |n, d| n * 10 + u16::from(d - b'0'));
    match int {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// The build this binary is: version, enabled features, target.
fn build() -> Value {
    let features: Vec<&str> = [
        ("tls", cfg!(feature = "tls")),
        ("bench", cfg!(feature = "bench")),
        ("cluster", cfg!(feature = "cluster")),
        ("oauth", cfg!(feature = "oauth")),
        ("consent", cfg!(feature = "consent")),
        ("signin", cfg!(feature = "signin")),
        ("apps", cfg!(feature = "apps")),
        ("skills", cfg!(feature = "skills")),
        ("traces", cfg!(feature = "traces")),
        ("activity", cfg!(feature = "activity")),
        ("count-alloc", cfg!(feature = "count-alloc")),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect();
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "features": features,
        "target": format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS),
        "debugAssertions": cfg!(debug_assertions),
    })
}

/// Removes `clientInfo` from each client of `status.clients` that `own`
/// (given its id) says is not the viewer's.
fn hide_others(status: &mut Value, own: impl Fn(u64) -> bool) {
    let Some(clients) = status.get_mut("clients").and_then(Value::as_array_mut) else { return };
    for c in clients {
        if !c["id"].as_u64().is_some_and(&own) {
            if let Some(o) = c.as_object_mut() {
                o.remove("clientInfo");
            }
        }
    }
}

/// Removes `owner` from each instance of `status.upstreams` whose owner's
/// name `sees` says the viewer may not see.
#[cfg(feature = "signin")]
fn hide_owners(status: &mut Value, sees: impl Fn(&str) -> bool) {
    let Some(ups) = status.get_mut("upstreams").and_then(Value::as_array_mut) else { return };
    for u in ups {
        let Some(o) = u.as_object_mut() else { continue };
        if o.get("owner").is_some_and(|owner| !owner.as_str().is_some_and(&sees)) {
            o.remove("owner");
        }
    }
}

/// The hub's status as principal `who` may see it, plus what the listener
/// knows (address, sessions, connections, recent refusals), mcpx's uptime
/// and its build.
fn snapshot(sh: &Shared, who: &Principal) -> Value {
    // The viewer's clients: those of the sessions it owns.
    let own: Vec<u64> = sh.state.borrow().sessions.by_id.values().filter(|s| s.owner == *who).map(|s| s.client).collect();
    // The runtime's clock counts from mcpx's start: `now` is its uptime.
    let (mut hub, uptime_ms) = sh.link.call(|hub, now| (hub.status(), now));
    hide_others(&mut hub, |c| own.contains(&c));
    #[cfg(feature = "signin")]
    {
        let (me, role) = (crate::hub::principal_name(who.bytes()), sh.auth.has_status_role(who));
        hide_owners(&mut hub, |owner| role || owner == me);
    }
    let http = {
        let st = sh.state.borrow();
        json!({
            "address": sh.local_addr.to_string(),
            "path": sh.cfg.path,
            "sessions": st.sessions.len(),
            "connections": st.conns,
            "refusals": sh.common.refusals.borrow().to_json(sh.now()),
        })
    };
    let mut v = match hub {
        Value::Object(o) => Value::Object(o),
        other => json!({ "hub": other }),
    };
    v["http"] = http;
    // The page offers an operator to restart, disable and enable servers (`post`).
    #[cfg(feature = "cli")]
    {
        v["mayOperate"] = super::operator::may_operate(&sh.cfg.operators, who.bytes()).into();
    }
    // The page offers an approver to accept a pin change (`post`).
    #[cfg(feature = "consent")]
    if let Some(pins) = v.get_mut("pins").filter(|p| p["lockFile"].is_null()) {
        pins["mayAccept"] = sh.link.call(|hub, _| hub.approvals().is_approver(who.bytes())).into();
    }
    // The last calls: a status principal's or an operator's to see all of;
    // anyone else sees its own.
    #[cfg(feature = "activity")]
    if let Some(calls) = v.pointer_mut("/activity/lastCalls").and_then(Value::as_array_mut) {
        let me = crate::hub::principal_name(who.bytes()).to_string();
        #[cfg(feature = "signin")]
        let all = sh.auth.has_status_role(who);
        #[cfg(not(feature = "signin"))]
        let all = false;
        #[cfg(feature = "cli")]
        let all = all || super::operator::may_operate(&sh.cfg.operators, who.bytes());
        if !all {
            calls.retain(|c| c["principal"] == me.as_str());
        }
    }
    v["uptimeMs"] = uptime_ms.into();
    v["build"] = build();
    v
}

/// Answers `GET /status` of principal `who` in the negotiated format.
pub(crate) async fn get(sh: &Shared, conn: &mut Conn, req: &Request, who: &Principal) -> bool {
    let format = match negotiate(req.header_str("accept"), req.query()) {
        Ok(f) => f,
        Err(why) => return conn.reject(400, &why).await,
    };
    #[allow(unused_mut)]
    let mut v = snapshot(sh, who);
    // The viewer's own authorizations of "perPrincipal" servers, to revoke.
    #[cfg(feature = "secrets")]
    if let Some(flows) = sh.flows.get().cloned() {
        if let Some(mine) = flows.authorized(crate::hub::principal_name(who.bytes())).await {
            let mine: Vec<Value> = mine.into_iter().map(|(server, expires_at, scopes)| json!({ "server": server, "expiresAt": expires_at, "scopes": scopes })).collect();
            v["authorizations"] = mine.into();
        }
    }
    let (content_type, body) = match format {
        Format::Json => ("application/json", serde_json::to_vec(&v).unwrap_or_default()),
        Format::Html => ("text/html; charset=utf-8", render::page(&v).into_bytes()),
    };
    let mut headers = vec![
        ("Content-Type", content_type),
        ("Cache-Control", "no-cache"),
        ("Vary", "Accept"),
    ];
    if format == Format::Html {
        // The page needs no script, no fetch, no frame: a string that escaped
        // escaping still could not run.
        headers.extend([
            ("Content-Security-Policy", render::CSP),
            ("X-Content-Type-Options", "nosniff"),
            // Not `no-referrer`: under it a browser posts the page's forms
            // with `Origin: null`, which the front door refuses.
            ("Referrer-Policy", "same-origin"),
        ]);
    }
    conn.respond(200, &headers, &body, true).await
}

/// Answers `POST /status` of principal `who`: the form of one of the
/// page's buttons, then back to the page, which shows what came of it:
/// Accept (`accept=SERVER/NAME`, for approvers: the hub checks); for
/// operators Restart (`restart=NAME`, as `POST /restart`), Disable and
/// Enable (`disable=NAME`, `enable=NAME`: the config file edited as `mcpx
/// disable` and `mcpx enable` do, and reloaded); for anyone, Revoke
/// (`revoke=NAME`: its own authorization of a `"perPrincipal"` server).
#[cfg(any(feature = "consent", feature = "cli", feature = "secrets"))]
pub(crate) async fn post(sh: &Shared, conn: &mut Conn, req: &mut Request, who: &Principal) -> bool {
    let body = match conn.body(req).await {
        Ok(b) => b,
        Err(keep) => return keep,
    };
    let form = String::from_utf8_lossy(&body);
    let field = |k: &str| super::form::value(&form, k).filter(|n| !n.is_empty());
    #[cfg(feature = "cli")]
    if let Some((op, name)) = ["restart", "disable", "enable"].into_iter().find_map(|op| Some((op, field(op)?))) {
        use super::operator;
        if let Some(why) = operator::refused(sh, who) {
            return conn.reject(403, &format!("Forbidden: {why}")).await;
        }
        let not_done = match op {
            "restart" => operator::not_restarted(&operator::restart_named(sh, &name), &name),
            _ => operator::disable(sh, who, &name, op == "disable").await,
        };
        if let Some((status, why)) = not_done {
            return conn.reject(status, &why).await;
        }
        return back(conn).await;
    }
    #[cfg(feature = "consent")]
    if let Some(name) = field("accept") {
        sh.link.call(|hub, now| hub.handle(crate::hub::Input::PinAccepted { who: who.bytes(), name: &name }, now));
        return back(conn).await;
    }
    #[cfg(feature = "secrets")]
    if let (Some(server), Some(flows)) = (field("revoke"), sh.flows.get().cloned()) {
        return match flows.revoke(crate::hub::principal_name(who.bytes()), &server).await {
            Ok(_) => back(conn).await,
            Err(why) => conn.reject(400, &format!("Bad Request: {why}")).await,
        };
    }
    conn.reject(400, "Bad Request: the form names what its button does (accept=SERVER/NAME: a pin change to accept; restart=NAME, disable=NAME, enable=NAME: a server to restart, disable or enable; revoke=NAME: your authorization of a server)").await
}

/// Back to the page (303: the browser loads it with GET).
#[cfg(any(feature = "consent", feature = "cli", feature = "secrets"))]
async fn back(conn: &mut Conn) -> bool {
    conn.respond(303, &[("Location", "/status"), ("Cache-Control", "no-store")], b"", true).await
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIREFOX: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    const CHROME: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";

    #[test]
    fn browsers_get_html_and_programs_json() {
        assert_eq!(negotiate(Some(FIREFOX), ""), Ok(Format::Html));
        assert_eq!(negotiate(Some(CHROME), ""), Ok(Format::Html));
        assert_eq!(negotiate(Some("text/*"), ""), Ok(Format::Html));
        // curl, fetch(), scripts: JSON as before.
        assert_eq!(negotiate(None, ""), Ok(Format::Json));
        assert_eq!(negotiate(Some("*/*"), ""), Ok(Format::Json));
        assert_eq!(negotiate(Some("application/json"), ""), Ok(Format::Json));
        assert_eq!(negotiate(Some("text/html, application/json"), ""), Ok(Format::Json));
        assert_eq!(negotiate(Some("text/html;q=0.5, application/json"), ""), Ok(Format::Json));
        assert_eq!(negotiate(Some("application/json;q=0.1, TEXT/HTML"), ""), Ok(Format::Html));
        // An explicit q=0 refuses HTML even under */*.
        assert_eq!(negotiate(Some("text/html;q=0, */*"), ""), Ok(Format::Json));
    }

    #[test]
    fn q_values_are_read_to_the_thousandth() {
        assert_eq!(negotiate(Some("application/json;q=0.999, text/html;q=1.000"), ""), Ok(Format::Html));
        assert_eq!(negotiate(Some("application/json;q=0.001, text/html;q=0.002"), ""), Ok(Format::Html));
        assert_eq!(negotiate(Some("application/json;q=0.5, text/html;q=0.50"), ""), Ok(Format::Json));
        assert_eq!(negotiate(Some("application/json;q=0.1, text/html;q=0."), ""), Ok(Format::Json));
        for q in ["0", "0.", "0.5", "0.05", "0.125", "1", "1.", "1.0", "1.000"] {
            let f: f32 = q.parse().unwrap();
            assert_eq!(qvalue(q), Some((f * 1000.0).round() as u16), "{q}");
        }
        // Not a qvalue: skipped, as a weight that does not parse.
        for q in ["", ".5", "0.1234", "1.001", "2", "0x1", "-0", "+1", "1e0", "nan"] {
            assert_eq!(qvalue(q), None, "{q:?}");
        }
        assert_eq!(quality("text/html;q=oops;q=0.2", "text/html"), 200);
    }

    #[test]
    fn the_query_overrides_accept() {
        assert_eq!(negotiate(Some(FIREFOX), "format=json"), Ok(Format::Json));
        assert_eq!(negotiate(None, "format=html"), Ok(Format::Html));
        assert_eq!(negotiate(Some("application/json"), "x=1&format=html"), Ok(Format::Html));
        let err = negotiate(Some(FIREFOX), "format=xml").unwrap_err();
        assert!(err.contains("'xml'") && err.contains("?format=json"), "{err}");
    }

    /// Each viewer sees the names of its own clients only; the others are
    /// still counted, with their revision.
    #[test]
    fn client_names_are_shown_to_their_own_principal_only() {
        let status = json!({"clients": [
            {"id": 1, "revision": "2025-11-25", "clientInfo": {"name": "alice-laptop"}},
            {"id": 2, "revision": "2025-06-18", "clientInfo": {"name": "bob-phone"}},
            {"id": 3, "revision": null},
        ]});
        // (viewer's clients, names shown)
        let table: [(&[u64], &[&str]); 4] = [(&[1], &["alice-laptop"]), (&[2], &["bob-phone"]), (&[1, 2], &["alice-laptop", "bob-phone"]), (&[], &[])];
        for (mine, shown) in table {
            let mut v = status.clone();
            hide_others(&mut v, |c| mine.contains(&c));
            let clients = v["clients"].as_array().unwrap();
            assert_eq!(clients.len(), 3, "every client is counted");
            let names: Vec<&str> = clients.iter().filter_map(|c| c["clientInfo"]["name"].as_str()).collect();
            assert_eq!(names, shown, "viewer of {mine:?}");
            assert_eq!(clients[1]["revision"], "2025-06-18");
        }
    }

    /// An instance's owner is shown to that principal and to the status
    /// role only; the instance itself to everyone.
    #[cfg(feature = "signin")]
    #[test]
    fn instance_owners_are_shown_to_themselves_and_the_status_role() {
        let status = json!({"upstreams": [
            {"name": "notes", "instanceOf": null},
            {"name": "notes#2", "instanceOf": 0, "owner": "alice"},
            {"name": "notes#3", "instanceOf": 0, "owner": "bob"},
            {"name": "notes#4", "instanceOf": 0, "owner": null},
        ]});
        // (viewer, status role, owners shown)
        let table: [(&str, bool, &[&str]); 4] = [("alice", false, &["alice"]), ("bob", false, &["bob"]), ("carol", false, &[]), ("ops", true, &["alice", "bob"])];
        for (me, role, shown) in table {
            let mut v = status.clone();
            hide_owners(&mut v, |o| role || o == me);
            let ups = v["upstreams"].as_array().unwrap();
            assert_eq!(ups.len(), 4, "every instance is listed");
            let owners: Vec<&str> = ups.iter().filter_map(|u| u["owner"].as_str()).collect();
            assert_eq!(owners, shown, "viewer {me}");
            assert!(ups.iter().all(|u| u.get("owner").is_none_or(|o| o.is_string())), "{v}");
        }
    }

    #[test]
    fn the_build_names_its_version_and_features() {
        let b = build();
        assert_eq!(b["version"], env!("CARGO_PKG_VERSION"));
        let features: Vec<&str> = b["features"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert_eq!(features.contains(&"tls"), cfg!(feature = "tls"));
        assert_eq!(features.contains(&"bench"), cfg!(feature = "bench"));
        assert_eq!(features.contains(&"cluster"), cfg!(feature = "cluster"));
        assert_eq!(features.contains(&"activity"), cfg!(feature = "activity"));
    }
}
