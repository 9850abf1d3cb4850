//! One HTTP(S) exchange with the authorization server (metadata, JWKS,
//! introspection), on the remote transport's connection code: bounded in
//! time and size, nothing pooled.

use std::time::Duration;

use crate::remote::conn::Connector;
use crate::remote::http::{Client, Limits};
use crate::remote::url::{Scheme, Url};

/// Longest document mcpx reads from the authorization server.
const MAX_BODY: usize = 1 << 20;
/// Connect, and each of head and body, within this.
const TIMEOUT: Duration = Duration::from_secs(10);

/// `method url` with `headers` and `body`; the body of a 200 answer.
pub(super) async fn exchange(method: &str, url: &str, headers: &[(&str, &[u8])], body: &[u8]) -> Result<Vec<u8>, String> {
    let u = Url::parse(url)?;
    #[cfg(feature = "tls")]
    let tls = match u.scheme {
        Scheme::Https => Some(crate::remote::conn::tls_connector(None)?),
        Scheme::Http => None,
    };
    #[cfg(not(feature = "tls"))]
    if u.scheme == Scheme::Https {
        return Err(format!("{url}: this mcpx is built without TLS (feature `tls`)"));
    }
    let connector = Connector {
        connect_timeout: TIMEOUT,
        #[cfg(feature = "tls")]
        tls,
        #[cfg(feature = "tls")]
        ca_file: None,
    };
    let client = Client::new(connector, 0);
    let limits = Limits { max_head: 16 << 10, head_timeout: TIMEOUT, idle_timeout: Some(TIMEOUT) };
    let mut resp = client.request(method, &u, headers, body, limits, None).await.map_err(|e| format!("{url}: {e}"))?;
    let text = resp.body.read_all(MAX_BODY).await.map_err(|e| format!("{url}: {e}"))?;
    if resp.status != 200 {
        return Err(format!("{url} answered HTTP {}", resp.status));
    }
    Ok(text)
}

/// GET `url` as JSON.
pub(super) async fn get_json(url: &str) -> Result<serde_json::Value, String> {
    let body = exchange("GET", url, &[("accept", b"application/json")], b"").await?;
    serde_json::from_slice(&body).map_err(|e| format!("{url}: the answer is not JSON: {e}"))
}
