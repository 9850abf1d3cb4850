//! `mcpx status`: the `/status` of a running hub as a short table, or of
//! a hub started for the command (once its servers are up).

use std::time::Duration;

use serde_json::Value;

use super::list::{print_json, table};
use super::session::{Hub, Session};
use super::{get, Failure};
use crate::remote::url::Url;

/// Largest `/status` body read.
const MAX_STATUS: usize = 4 << 20;

pub async fn run(
    ex: &std::rc::Rc<crate::process::exec::Executor>,
    hub: Hub,
    timeout: Duration,
    interrupt: smol::channel::Receiver<()>,
    as_json: bool,
) -> Result<(), Failure> {
    let (status_url, headers, session) = match hub {
        Hub::Url { url, token } => {
            let u = Url::parse(&url).map_err(|e| Failure::Unreachable(format!("--url {url:?}: {e}")))?;
            let status = u.join_same_origin("/status").map_err(|e| Failure::Unreachable(e.to_string()))?;
            let headers: Vec<(String, String)> = token.iter().map(|t| ("authorization".into(), format!("Bearer {t}"))).collect();
            (status.to_string(), headers, None)
        }
        Hub::Child { mut args } => {
            // The standalone hub serves stdio (initialize waits for its
            // servers) and HTTP on a loopback port for its /status.
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| Failure::Unreachable(format!("no free loopback port for the hub's status: {e}")))?
                .port();
            args.extend(["--http".into(), format!("127.0.0.1:{port}"), "--stdio".into()]);
            let s = Session::open(ex, &Hub::Child { args }, timeout, interrupt).await?;
            (format!("http://127.0.0.1:{port}/status"), Vec::new(), Some(s))
        }
    };
    let fetched = get::get(&status_url, &headers, MAX_STATUS, timeout).await;
    if let Some(s) = session {
        s.close().await;
    }
    let (code, body) = fetched.map_err(|e| Failure::Unreachable(format!("GET {status_url}: {e}")))?;
    if code != 200 {
        return Err(Failure::Unreachable(format!("GET {status_url}: HTTP {code} (check --url and --token)")));
    }
    let v: Value = serde_json::from_slice(&body).map_err(|e| Failure::Failed(format!("GET {status_url}: not JSON: {e}")))?;
    if as_json {
        return print_json(&v);
    }
    print!("{}", summary(&v));
    Ok(())
}

/// One row per server, then the clients.
fn summary(v: &Value) -> String {
    let servers = v.get("upstreams").or_else(|| v.get("servers")).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let cell = |s: &Value, k: &str| match s.get(k) {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Null) | None => "-".into(),
        Some(other) => other.to_string(),
    };
    let rows: Vec<Vec<String>> = servers
        .iter()
        .map(|s| {
            let err = crate::servers::stderr::headline(&cell(s, "lastError"));
            vec![cell(s, "name"), cell(s, "state"), cell(s, "revision"), cell(s, "tools"), cell(s, "restarts"), err]
        })
        .collect();
    let mut out = table(&["SERVER", "STATE", "REVISION", "TOOLS", "RESTARTS", "LAST ERROR"], &rows);
    let clients = v.get("clients").and_then(Value::as_array).map_or(0, Vec::len);
    out.push_str(&format!("{} server(s), {clients} client(s)", servers.len()));
    if let Some(n) = v.get("http").and_then(|h| h.get("sessions")).and_then(Value::as_u64) {
        out.push_str(&format!(", {n} HTTP session(s)"));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_as_a_table() {
        let v = serde_json::json!({
            "upstreams": [
                {"name": "a", "state": "ready", "revision": "2025-11-25", "tools": 3, "restarts": 0, "lastError": null},
                {"name": "b", "state": "backoff", "revision": null, "tools": 0, "restarts": 2, "lastError": "exited with 1\nmore"},
                {"name": "py", "state": "down", "revision": null, "tools": 0, "restarts": 6,
                 "lastError": "exited with status 1; stderr: Traceback (most recent call last):\n  File \"s.py\", line 3, in <module>\nAttributeError: 'NoneType' object has no attribute 'run'"}
            ],
            "clients": [{}],
            "http": {"sessions": 0}
        });
        assert_eq!(
            summary(&v),
            "SERVER  STATE    REVISION    TOOLS  RESTARTS  LAST ERROR\n\
             a       ready    2025-11-25  3      0         -\n\
             b       backoff  -           0      2         exited with 1\n\
             py      down     -           0      6         exited with status 1: AttributeError: 'NoneType' object has no attribute 'run'\n\
             3 server(s), 1 client(s), 0 HTTP session(s)\n"
        );
    }
}
