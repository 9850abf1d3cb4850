//! One HTTP request (GET a hub's `/status` or a `server.json` by URL, POST
//! a hub's `/restart`), over the remote transport's HTTP client (http and
//! https).

use std::time::Duration;

use crate::remote::http::{Client, Limits};
use crate::remote::url::Url;
use crate::remote::{Mode, RemoteSpec};

/// The status and body of `GET url`; the body may be at most `max` bytes.
pub async fn get(url: &str, headers: &[(String, String)], max: usize, timeout: Duration) -> Result<(u16, Vec<u8>), String> {
    request("GET", url, headers, b"", max, timeout).await
}

/// The status and body of `method url` with `body` (JSON, when there is
/// one), answered in at most `max` bytes.
pub async fn request(method: &str, url: &str, headers: &[(String, String)], body: &[u8], max: usize, timeout: Duration) -> Result<(u16, Vec<u8>), String> {
    let spec = RemoteSpec {
        name: String::new(),
        url: url.to_string(),
        headers: headers.to_vec(),
        ca_file: None,
        timeout_ms: 0,
        mode: Mode::Auto,
        oauth: None,
    };
    spec.check()?;
    let parsed = Url::parse(url)?;
    let client = Client::new(crate::remote::connector(None, &parsed, timeout)?, 0);
    let mut fields: Vec<(&str, &[u8])> = vec![("accept", b"application/json")];
    if !body.is_empty() {
        fields.push(("content-type", b"application/json"));
    }
    fields.extend(headers.iter().map(|(k, v)| (k.as_str(), v.as_bytes())));
    let limits = Limits { max_head: 64 << 10, head_timeout: timeout, idle_timeout: Some(timeout) };
    let mut resp = client.request(method, &parsed, &fields, body, limits, None).await.map_err(|e| e.to_string())?;
    let body = resp.body.read_all(max).await.map_err(|e| e.to_string())?;
    Ok((resp.status, body))
}
