//! The HTML status page, rendered from the `/status` JSON snapshot: one
//! self-contained document (inline CSS, no script, no external asset) that
//! reloads itself and fits a phone. Every string from the snapshot goes
//! through [`Esc`]: server names, errors and stderr are not trusted.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::http::html::Esc;

/// Seconds between reloads (`<meta http-equiv="refresh">`).
pub(crate) const REFRESH_S: u32 = 5;

/// What the page may load: its own inline style, nothing else.
pub(crate) const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// What the pages with a form may load and do: their inline style, and
/// posting to this origin (`/approvals`, `/signin`).
#[cfg(any(feature = "consent", feature = "signin"))]
pub(crate) const FORM_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const STYLE: &str = "\
:root{color-scheme:light dark;--ok:#1a7f37;--warn:#9a6700;--bad:#cf222e;--mute:#6e7781;--line:#d0d7de}
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:64rem;padding:.8rem 1rem 2rem}
h1{font-size:1.35rem;margin:0}
h2{font-size:1.05rem;margin:1.4rem 0 .5rem;padding-bottom:.2rem;border-bottom:1px solid var(--line)}
h3{font-size:1rem;margin:0 0 .3rem;overflow-wrap:anywhere}
.mute{color:var(--mute)}
.servers{display:grid;grid-template-columns:repeat(auto-fill,minmax(18rem,1fr));gap:.75rem}
.server{border:1px solid var(--line);border-left:.4rem solid var(--mute);border-radius:.4rem;padding:.6rem .8rem;min-width:0}
.server.ready{border-left-color:var(--ok)}.server.starting{border-left-color:var(--warn)}
.server.down,.server.failed{border-left-color:var(--bad)}
.badge{display:inline-block;font-size:.8rem;font-weight:600;padding:0 .5rem;border-radius:1rem;color:#fff;background:var(--mute);vertical-align:.1rem}
.ready .badge{background:var(--ok)}.starting .badge{background:var(--warn)}
.down .badge,.failed .badge{background:var(--bad)}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.1rem .8rem;margin:.3rem 0}
dt{color:var(--mute)}dd{margin:0;overflow-wrap:anywhere}
.error{color:var(--bad);overflow-wrap:anywhere;margin:.4rem 0 0}
summary{font-size:.85rem;margin-top:.3rem;cursor:pointer}
pre{white-space:pre-wrap;overflow-wrap:anywhere;max-height:12rem;overflow:auto;margin:.3rem 0 0;padding:.4rem .5rem;border-radius:.3rem;background:rgba(127,127,127,.13);font-size:.8rem}
table{border-collapse:collapse}td,th{padding:.15rem 1rem .15rem 0;text-align:left;vertical-align:top}
th{font-weight:600;color:var(--mute)}
ul{padding-left:1.1rem;margin:.3rem 0}li{overflow-wrap:anywhere}
footer{margin-top:1.6rem;font-size:.85rem}
";

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn list(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

/// `wrap(items)`, or a muted `none` line when there are no items.
fn items_or(items: String, none: &str, wrap: impl FnOnce(String) -> String) -> String {
    if items.is_empty() {
        format!("<p class=\"mute\">{none}</p>")
    } else {
        wrap(items)
    }
}

/// `3d 4h`, `2h 05m`, `3m 12s`, `45s`.
pub(crate) fn duration(ms: u64) -> String {
    let s = ms / 1000;
    let (d, h, m, s) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s:02}s"),
        (0, _, _) => format!("{h}h {m:02}m"),
        _ => format!("{d}d {h}h"),
    }
}

/// The whole page for a `/status` snapshot.
pub(crate) fn page(v: &Value) -> String {
    let ups = list(&v["upstreams"]);
    let ready = ups.iter().filter(|u| u["state"] == "ready").count();
    let summary = format!("{ready} of {} servers ready", ups.len());
    let operate = v["mayOperate"] == true;
    let servers: String = ups.iter().map(|u| server(u, operate)).collect();
    let servers = items_or(servers, "No servers configured.", |s| format!("<div class=\"servers\">{s}</div>"));
    // The sections after the servers' (their activity first, feature `activity`).
    #[allow(unused_mut)]
    let mut sections = pins(&v["pins"]);
    sections.push_str(&authorizations(&v["authorizations"]));
    #[cfg(feature = "activity")]
    sections.insert_str(0, &super::activity::section(v));
    #[cfg(feature = "activity")]
    let more_style = super::activity::STYLE;
    #[cfg(not(feature = "activity"))]
    let more_style = "";
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta http-equiv=\"refresh\" content=\"{REFRESH_S}\">\
         <title>mcpx: {summary}</title><style>{STYLE}{more_style}</style></head>\n<body>\
         {header}\
         <section id=\"servers\"><h2>Servers <span class=\"mute\" id=\"summary\">{summary}</span></h2>{servers}</section>\
         {pins}{config}{sessions}{refusals}\
         <footer class=\"mute\">Reloads every {REFRESH_S} s. The same as JSON: <a href=\"?format=json\">?format=json</a>.</footer>\
         </body></html>\n",
        header = header(v),
        pins = sections,
        config = config(&v["config"]),
        sessions = sessions(v),
        refusals = refusals(&v["http"]["refusals"]),
    )
}

fn header(v: &Value) -> String {
    let b = &v["build"];
    let features: Vec<String> = list(&b["features"]).iter().map(|f| Esc(text(f)).to_string()).collect();
    let features = if features.is_empty() { "none".to_string() } else { features.join(", ") };
    let http = &v["http"];
    format!(
        "<header><h1>mcpx status</h1><dl>\
         <dt>up</dt><dd id=\"uptime\">{uptime}</dd>\
         <dt>build</dt><dd id=\"build\">mcpx {version} · {target} · features: {features}</dd>\
         <dt>endpoint</dt><dd>http://{addr}{path}</dd></dl></header>",
        uptime = duration(count(&v["uptimeMs"])),
        version = Esc(text(&b["version"])),
        target = Esc(text(&b["target"])),
        addr = Esc(text(&http["address"])),
        path = Esc(text(&http["path"])),
    )
}

/// One server's card. The hub appends an exit's stderr tail to its error
/// as `…; stderr: TAIL` (hub `on_upstream_exited`); the page shows it apart.
/// An operator (`operate`) gets its [`buttons`].
fn server(u: &Value, operate: bool) -> String {
    let state = text(&u["state"]);
    let restarts = count(&u["restarts"]);
    // A local server that exited is restarted with backoff, a remote one
    // reconnected: "down" is never final.
    let label = match (state, u["toolsKnown"].as_bool()) {
        ("down", _) => "down · restarting".to_string(),
        (other, Some(false)) => format!("{other} · tools not known yet"),
        (other, _) => other.to_string(),
    };
    let revision = match u["revision"].as_str() {
        Some(r) => format!("{} ({})", Esc(r), Esc(text(&u["era"]))),
        None => "<span class=\"mute\">not negotiated</span>".to_string(),
    };
    let info = &u["serverInfo"];
    let mut info = match info["name"].as_str() {
        Some(name) => format!("<dt>server</dt><dd>{} {}</dd>", Esc(name), Esc(text(&info["version"]))),
        None => String::new(),
    };
    if let Some(owner) = u["owner"].as_str().filter(|_| cfg!(feature = "signin")) {
        info.push_str(&format!("<dt>runs for</dt><dd class=\"owner\">{}</dd>", Esc(owner)));
    }
    let (error, tail) = match u["lastError"].as_str() {
        Some(e) => match e.split_once(crate::servers::stderr::SEPARATOR) {
            Some((e, tail)) => (Some(e), Some(tail)),
            None => (Some(e), None),
        },
        None => (None, None),
    };
    let error = error.map_or(String::new(), |e| format!("<p class=\"error\">last error: <span class=\"last-error\">{}</span></p>", Esc(e)));
    let tail = tail.map_or(String::new(), |t| {
        format!("<details open><summary class=\"mute\">stderr, last lines</summary><pre class=\"stderr\">{}</pre></details>", Esc(t))
    });
    format!(
        "<article class=\"server {cls}\" data-name=\"{name}\" data-state=\"{cls}\">\
         <h3><span class=\"badge state\">{label}</span> {name}</h3><dl>\
         <dt>revision</dt><dd>{revision}</dd>\
         <dt>tools</dt><dd class=\"tools\">{tools}</dd>\
         <dt>resources</dt><dd>{resources} (+{templates} templates)</dd>\
         <dt>prompts</dt><dd>{prompts}</dd>\
         <dt>restarts</dt><dd class=\"restarts\">{restarts}</dd>{info}</dl>{error}{tail}{buttons}</article>",
        cls = Esc(state),
        name = Esc(text(&u["name"])),
        label = Esc(&label),
        tools = count(&u["tools"]),
        resources = count(&u["resources"]),
        templates = count(&u["resourceTemplates"]),
        prompts = count(&u["prompts"]),
        buttons = buttons(u, operate),
    )
}

/// An operator's buttons on server card `u` (`status_page::post`, feature
/// `cli`): Enable on a disabled server's card, else Restart, and Disable
/// unless it is an instance of an isolated server (the config has its
/// server, not it). Each is a form posting `FIELD=NAME` to `/status`.
fn buttons(u: &Value, operate: bool) -> String {
    if cfg!(not(feature = "cli")) || !operate {
        return String::new();
    }
    let forms: &[(&str, &str)] = match (text(&u["state"]), u["instanceOf"].is_null()) {
        ("disabled", _) => &[("enable", "Enable")],
        (_, true) => &[("restart", "Restart"), ("disable", "Disable")],
        (_, false) => &[("restart", "Restart")],
    };
    let name = Esc(text(&u["name"]));
    forms
        .iter()
        .map(|(field, label)| {
            format!("<form class=\"{field}\" method=\"post\" action=\"/status\"><input type=\"hidden\" name=\"{field}\" value=\"{name}\"><button>{label} {name}</button></form>")
        })
        .collect()
}

/// The hub's clients by negotiated revision, and the listener's counts.
fn sessions(v: &Value) -> String {
    let clients = list(&v["clients"]);
    let mut by_rev: BTreeMap<&str, u64> = BTreeMap::new();
    for c in clients {
        *by_rev.entry(c["revision"].as_str().unwrap_or("not yet negotiated")).or_default() += 1;
    }
    let rows: String = by_rev
        .iter()
        .rev()
        .map(|(rev, n)| format!("<tr><td>{}</td><td>{n}</td></tr>", Esc(rev)))
        .collect();
    let table = items_or(rows, "No clients connected.", |r| {
        format!("<table><tr><th>client revision</th><th>sessions</th></tr>{r}</table>")
    });
    let http = &v["http"];
    format!(
        "<section id=\"sessions\"><h2>Sessions <span class=\"mute\">{total}</span></h2>{table}\
         <p class=\"mute\">HTTP sessions: {sessions} · connections: {conns} · \
         requests in flight: {pending} · server requests waiting for a client: {relays}</p></section>",
        total = clients.len(),
        sessions = count(&http["sessions"]),
        conns = count(&http["connections"]),
        pending = count(&v["pending"]),
        relays = count(&v["relays"]),
    )
}

/// The listener's recent refusals, newest first, with the counts by status.
/// The config file and its reloads: a refused one stands out, with its
/// `file:line:col` error, as the old config keeps serving.
fn config(c: &Value) -> String {
    if c.is_null() {
        return String::new();
    }
    let refused = match c["refused"].as_str() {
        Some(e) => format!("<p class=\"error\" id=\"config-refused\">The last change was refused; the config before it keeps serving: {}</p>", Esc(e)),
        None => String::new(),
    };
    let later: Vec<String> = list(&c["notApplied"]).iter().map(|k| Esc(text(k)).to_string()).collect();
    let later = if later.is_empty() { String::new() } else { format!("<p class=\"mute\">Applied at the next start: {}</p>", later.join(", ")) };
    format!(
        "<section id=\"config\"><h2>Config <span class=\"mute\">{} · {} reloads</span></h2>{refused}{later}</section>",
        Esc(c["file"].as_str().unwrap_or("built-in default")),
        count(&c["reloads"])
    )
}

/// The pinned definitions that changed (with `policy.pin`): each with what
/// changed, before and after, and the inspection's findings.
fn pins(p: &Value) -> String {
    // Without the feature nothing is pinned.
    if cfg!(not(feature = "consent")) || p.is_null() {
        return String::new();
    }
    let shown = |v: &Value| match v {
        Value::String(s) => Esc(s).to_string(),
        Value::Null => "<span class=\"mute\">(none)</span>".to_string(),
        other => Esc(&other.to_string()).to_string(),
    };
    let items: String = list(&p["changes"])
        .iter()
        .map(|c| {
            let state = if c["hidden"] == true { "hidden" } else { "listed, with a warning" };
            let from = c["renamedFrom"].as_str().map(|f| format!(" from {}", Esc(f))).unwrap_or_default();
            let diff: String = list(&c["diff"])
                .iter()
                .map(|d| format!("<tr><th>{}</th><td><del>{}</del></td><td><ins>{}</ins></td></tr>", Esc(text(&d["field"])), shown(&d["before"]), shown(&d["after"])))
                .collect();
            let diff = if diff.is_empty() { format!("<p>{}</p>", shown(&c["description"])) } else { format!("<table><tr><th></th><th>before</th><th>now</th></tr>{diff}</table>") };
            let findings: String = list(&c["findings"]).iter().map(|f| format!("<li class=\"error\">{}</li>", Esc(text(f)))).collect();
            let key = format!("{}/{}", text(&c["server"]), text(&c["name"]));
            let accept = match p["mayAccept"] == true {
                true => format!("<form method=\"post\" action=\"/status\"><input type=\"hidden\" name=\"accept\" value=\"{}\"><button>Accept {}</button></form>", Esc(&key), Esc(&key)),
                false => String::new(),
            };
            format!(
                "<li data-change=\"{}\"><b>{}</b> <span class=\"mute\">{} {}{from} · {state}</span>{diff}<ul>{findings}</ul>{accept}</li>",
                Esc(&key),
                Esc(&key),
                Esc(text(&c["kind"])),
                Esc(text(&c["change"])),
            )
        })
        .collect();
    let body = items_or(items, "No changes since the pins.", |i| {
        let here = if p["mayAccept"] == true { " or its button" } else { "" };
        format!("<ul>{i}</ul><p class=\"mute\">Accept one with <code>mcpx pin accept SERVER/NAME</code>{here}.</p>")
    });
    format!(
        "<section id=\"pins\"><h2>Pinned definitions <span class=\"mute\">{} pinned · changes {}</span></h2>{body}</section>",
        count(&p["pinned"]),
        Esc(text(&p["mode"]))
    )
}

/// The viewer's own authorizations of `"perPrincipal"` servers, each with
/// a button to revoke it (absent: the config has no such server).
fn authorizations(a: &Value) -> String {
    if a.is_null() {
        return String::new();
    }
    let items: String = list(a)
        .iter()
        .map(|x| {
            let name = Esc(text(&x["server"]));
            let scopes: Vec<&str> = list(&x["scopes"]).iter().map(text).collect();
            let scopes = if scopes.is_empty() { String::new() } else { format!(" · scopes {}", Esc(&scopes.join(" "))) };
            format!("<li data-authorized=\"{name}\"><b>{name}</b> <span class=\"mute\">your own authorization{scopes}</span><form class=\"revoke\" method=\"post\" action=\"/status\"><input type=\"hidden\" name=\"revoke\" value=\"{name}\"><button>Revoke {name}</button></form></li>")
        })
        .collect();
    let body = items_or(items, "You have authorized no server for yourself; a call to one that needs it asks you to.", |i| format!("<ul>{i}</ul>"));
    format!("<section id=\"authorizations\"><h2>Your authorizations</h2>{body}</section>")
}

fn refusals(r: &Value) -> String {
    let recent = list(&r["recent"]);
    let by_status: Vec<String> = r["byStatus"]
        .as_object()
        .map(|o| o.iter().map(|(s, n)| format!("{} × {}", Esc(s), count(n))).collect())
        .unwrap_or_default();
    let items: String = recent
        .iter()
        .map(|x| {
            format!(
                "<li><b>{}</b> <span class=\"mute\">{} ago</span> {}</li>",
                count(&x["status"]),
                duration(count(&x["agoMs"])),
                Esc(text(&x["message"]))
            )
        })
        .collect();
    let body = items_or(items, "None since start.", |i| {
        format!("<p class=\"mute\">By status: {}</p><ul>{i}</ul>", by_status.join(", "))
    });
    format!(
        "<section id=\"refusals\"><h2>Recent refusals <span class=\"mute\">{} since start</span></h2>{body}</section>",
        count(&r["total"])
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const EVIL: &str = "<script>alert('x')</script>\"&";
    const EVIL_ESCAPED: &str = "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;";

    fn snapshot() -> Value {
        json!({
            "upstreams": [
                {"name": "demo", "state": "ready", "revision": "2025-11-25", "era": "legacy",
                 "serverInfo": {"name": "demo", "version": "1.0"}, "restarts": 0, "lastError": null,
                 "tools": 14, "resources": 2, "resourceTemplates": 1, "prompts": 3},
                {"name": format!("crashy{EVIL}"), "state": "down", "revision": null, "era": "unknown",
                 "serverInfo": null, "restarts": 4, "tools": 0,
                 "lastError": format!("exited with status 3; stderr: boom {EVIL}")},
                {"name": "notes#2", "state": "ready", "instanceOf": 0, "owner": format!("alice{EVIL}"), "tools": 1}
            ],
            "clients": [
                {"id": 1, "revision": "2025-11-25"}, {"id": 2, "revision": "2025-11-25"},
                {"id": 3, "revision": "2024-11-05"}, {"id": 4, "revision": null}
            ],
            "pending": 2, "relays": 0, "uptimeMs": 3_723_000,
            "build": {"version": "9.9.9", "features": ["tls"], "target": "x86_64-linux"},
            "http": {"address": "127.0.0.1:8765", "path": "/mcp", "sessions": 3, "connections": 5,
                     "refusals": {"total": 7, "byStatus": {"403": 7},
                                  "recent": [{"agoMs": 1500, "status": 403, "message": format!("Forbidden: Origin '{EVIL}'")}]}}
        })
    }

    #[test]
    fn a_refused_config_change_stands_out_with_its_error() {
        let mut v = snapshot();
        v["config"] = json!({"file": "/etc/mcpx.json", "reloads": 3, "refused": format!("mcpx.json:4:7: {EVIL}"), "notApplied": ["separator"]});
        let html = page(&v);
        assert!(html.contains("<h2>Config <span class=\"mute\">/etc/mcpx.json · 3 reloads</span></h2>"), "{html}");
        assert!(html.contains(&format!("keeps serving: mcpx.json:4:7: {EVIL_ESCAPED}</p>")), "{html}");
        assert!(html.contains("Applied at the next start: separator"), "{html}");
        assert!(!page(&snapshot()).contains("id=\"config\""), "no section without a config status");
    }

    #[test]
    fn changed_definitions_show_their_diff_escaped() {
        let mut v = snapshot();
        v["pins"] = json!({"mode": "hide", "pinned": 3, "changes": [
            {"server": "a", "kind": "tools", "name": "t", "change": "changed", "hidden": true, "renamedFrom": null,
             "diff": [{"field": "description", "before": "adds", "after": format!("adds {EVIL}")}],
             "findings": ["text addressed to the model (\"<important>\") at /description"]},
            {"server": "a", "kind": "tools", "name": "w", "change": "renamed", "hidden": false, "renamedFrom": "u", "diff": [], "description": "subtracts", "findings": []}
        ]});
        let html = page(&v);
        assert!(html.contains("<h2>Pinned definitions <span class=\"mute\">3 pinned · changes hide</span></h2>"), "{html}");
        assert!(html.contains(&format!("<tr><th>description</th><td><del>adds</del></td><td><ins>adds {EVIL_ESCAPED}</ins></td></tr>")), "{html}");
        assert!(html.contains("tools renamed from u · listed, with a warning"), "{html}");
        assert!(html.contains("(&quot;&lt;important&gt;&quot;)"), "{html}");
        assert!(!page(&snapshot()).contains("Pinned definitions"));
    }

    #[test]
    fn every_string_of_the_snapshot_is_escaped() {
        let html = page(&snapshot());
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains(EVIL), "{html}");
        // The server name (text and attribute), the stderr tail, the
        // refusal, an instance's owner.
        assert_eq!(html.matches(EVIL_ESCAPED).count(), 5, "{html}");
        assert!(html.contains(&format!("<pre class=\"stderr\">boom {EVIL_ESCAPED}</pre>")), "{html}");
    }

    #[test]
    fn shows_each_servers_state_counts_and_last_error() {
        let html = page(&snapshot());
        assert!(html.contains("<title>mcpx: 2 of 3 servers ready</title>"), "{html}");
        assert!(html.contains(&format!("<dt>runs for</dt><dd class=\"owner\">alice{EVIL_ESCAPED}</dd>")), "{html}");
        assert!(html.contains("data-name=\"demo\" data-state=\"ready\""), "{html}");
        assert!(html.contains("<dd class=\"tools\">14</dd>"), "{html}");
        assert!(html.contains("2025-11-25 (legacy)"), "{html}");
        assert!(html.contains("<span class=\"badge state\">down · restarting</span>"), "{html}");
        assert!(html.contains("<dd class=\"restarts\">4</dd>"), "{html}");
        assert!(html.contains("<span class=\"last-error\">exited with status 3</span>"), "{html}");
        assert!(html.contains(&format!("http-equiv=\"refresh\" content=\"{REFRESH_S}\"")));
    }

    #[cfg(feature = "cli")]
    #[test]
    fn an_operator_gets_a_restart_button_per_server_and_no_one_else_does() {
        let mut v = snapshot();
        assert!(!page(&v).contains("name=\"restart\""));
        v["mayOperate"] = json!(true);
        let html = page(&v);
        assert_eq!(html.matches("<form class=\"restart\" method=\"post\" action=\"/status\">").count(), 3, "{html}");
        assert!(html.contains("<input type=\"hidden\" name=\"restart\" value=\"demo\"><button>Restart demo</button>"), "{html}");
        assert!(!html.contains(EVIL), "names are escaped in the button too: {html}");
    }

    /// Server `name`'s card (as escaped) in `html`.
    #[cfg(feature = "cli")]
    fn card<'a>(html: &'a str, name: &str) -> &'a str {
        let from = html.find(&format!("data-name=\"{name}\"")).unwrap_or_else(|| panic!("no card {name}: {html}"));
        let len = html[from..].find("</article>").unwrap();
        &html[from..from + len]
    }

    #[cfg(feature = "cli")]
    #[test]
    fn an_operator_gets_disable_on_each_server_and_enable_on_each_disabled_one() {
        let mut v = snapshot();
        v["upstreams"].as_array_mut().unwrap().push(json!({"name": format!("off{EVIL}"), "state": "disabled"}));
        assert!(!page(&v).contains("<form"), "no buttons but an operator's");
        v["mayOperate"] = json!(true);
        let html = page(&v);
        assert!(!html.contains(EVIL), "names are escaped in the buttons: {html}");
        let form = |field: &str, name: &str, label: &str| {
            format!("<form class=\"{field}\" method=\"post\" action=\"/status\"><input type=\"hidden\" name=\"{field}\" value=\"{name}\"><button>{label} {name}</button></form>")
        };
        let crashy = format!("crashy{EVIL_ESCAPED}");
        assert!(card(&html, "demo").ends_with(&(form("restart", "demo", "Restart") + &form("disable", "demo", "Disable"))), "{html}");
        assert!(card(&html, &crashy).contains(&form("disable", &crashy, "Disable")), "{html}");
        // An instance of an isolated server is no entry of the config.
        assert!(!card(&html, "notes#2").contains("name=\"disable\""), "{html}");
        // A disabled server's card: Enable, and nothing else to do.
        let off = format!("off{EVIL_ESCAPED}");
        assert!(card(&html, &off).ends_with(&form("enable", &off, "Enable")), "{html}");
        assert!(!card(&html, &off).contains("name=\"restart\"") && !card(&html, &off).contains("name=\"disable\""), "{html}");
        assert_eq!((html.matches("name=\"disable\"").count(), html.matches("name=\"enable\"").count()), (2, 1), "{html}");
    }

    #[test]
    fn a_server_whose_tools_are_not_known_yet_says_so() {
        let mut v = snapshot();
        v["upstreams"][1] = json!({"name": "calc", "state": "starting", "tools": 0, "toolsKnown": false});
        v["upstreams"][0]["toolsKnown"] = json!(true);
        let html = page(&v);
        assert!(html.contains("<span class=\"badge state\">starting · tools not known yet</span> calc"), "{html}");
        assert!(html.contains("<span class=\"badge state\">ready</span> demo"), "{html}");
    }

    #[test]
    fn shows_sessions_by_revision_refusals_uptime_and_build() {
        let html = page(&snapshot());
        assert!(html.contains("<tr><td>2025-11-25</td><td>2</td></tr><tr><td>2024-11-05</td><td>1</td></tr>"), "{html}");
        assert!(html.contains("<tr><td>not yet negotiated</td><td>1</td></tr>"), "{html}");
        assert!(html.contains("HTTP sessions: 3 · connections: 5 · requests in flight: 2 ·"), "{html}");
        assert!(html.contains("7 since start"), "{html}");
        assert!(html.contains("<b>403</b> <span class=\"mute\">1s ago</span>"), "{html}");
        assert!(html.contains("<dd id=\"uptime\">1h 02m</dd>"), "{html}");
        assert!(html.contains("mcpx 9.9.9 · x86_64-linux · features: tls"), "{html}");
    }

    #[test]
    fn a_principal_sees_its_own_authorizations_each_with_a_revoke_button() {
        let mut v = snapshot();
        assert!(!page(&v).contains("id=\"authorizations\""), "no section without per-principal servers");
        v["authorizations"] = json!([]);
        assert!(page(&v).contains("You have authorized no server for yourself"));
        v["authorizations"] = json!([{ "server": "gh<x>", "expiresAt": 1, "scopes": ["repo", "read:user"] }]);
        let html = page(&v);
        assert!(html.contains("<form class=\"revoke\" method=\"post\" action=\"/status\"><input type=\"hidden\" name=\"revoke\" value=\"gh&lt;x&gt;\"><button>Revoke gh&lt;x&gt;</button></form>"), "{html}");
        assert!(html.contains("scopes repo read:user"), "{html}");
    }

    #[test]
    fn an_empty_hub_says_so() {
        let html = page(&json!({}));
        assert!(html.contains("No servers configured."));
        assert!(html.contains("No clients connected."));
        assert!(html.contains("None since start."));
    }

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(duration(999), "0s");
        assert_eq!(duration(45_000), "45s");
        assert_eq!(duration(192_000), "3m 12s");
        assert_eq!(duration(3_723_000), "1h 02m");
        assert_eq!(duration(3 * 86_400_000 + 4 * 3_600_000 + 59_000), "3d 4h");
    }
}
