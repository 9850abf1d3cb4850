//! `mcpx restart NAME`: one server of a running hub restarted at once,
//! through its operator endpoint (`POST /restart`, see `http::operator`).

use std::time::Duration;

use serde_json::{json, Value};

use super::session::Hub;
use super::{get, Failure};
use crate::remote::url::Url;

/// Largest answer read.
const MAX_ANSWER: usize = 64 << 10;

pub async fn run(hub: Hub, name: &str, timeout: Duration) -> Result<(), Failure> {
    let Hub::Url { url, token } = hub else {
        return Err(Failure::Usage(
            "`mcpx restart` restarts a server of a running hub: give its --url (or set MCPX_URL)"
                .into(),
        ));
    };
    let u = Url::parse(&url).map_err(|e| Failure::Unreachable(format!("--url {url:?}: {e}")))?;
    let target = u
        .join_same_origin("/restart")
        .map_err(|e| Failure::Unreachable(e.to_string()))?
        .to_string();
    let headers: Vec<(String, String)> = token
        .iter()
        .map(|t| ("authorization".into(), format!("Bearer {t}")))
        .collect();
    let body = serde_json::to_vec(&json!({ "server": name })).unwrap_or_default();
    let (code, answer) = get::request("POST", &target, &headers, &body, MAX_ANSWER, timeout)
        .await
        .map_err(|e| Failure::Unreachable(format!("POST {target}: {e}")))?;
    let v: Value = serde_json::from_slice(&answer).unwrap_or(Value::Null);
    match (code, v["error"].as_str()) {
        (200, _) => {
            println!("restarting server {name}");
            Ok(())
        }
        (_, Some(why)) => Err(Failure::Failed(why.to_string())),
        (401, None) => Err(Failure::Failed(format!(
            "POST {target}: HTTP 401: check --token or MCPX_TOKEN"
        ))),
        (_, None) => Err(Failure::Unreachable(format!(
            "POST {target}: HTTP {code} (is it an mcpx with `mcpx restart`? check --url)"
        ))),
    }
}
