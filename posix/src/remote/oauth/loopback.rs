//! The loopback redirect URI of the authorization code flow (RFC 8252
//! §7.3): a listener on 127.0.0.1 that takes the one redirect carrying the
//! authorization response.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use async_io::{Async, Timer};
use smol::future::FutureExt as _;
use smol::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::form;

const PATH: &str = "/callback";
/// Longest request head read from the browser.
const MAX_HEAD: usize = 16 * 1024;

pub struct Listener {
    inner: Async<TcpListener>,
    pub redirect_uri: String,
}

impl Listener {
    /// Binds a free port on 127.0.0.1.
    pub fn bind() -> io::Result<Listener> {
        let inner = Async::<TcpListener>::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        let port = inner.get_ref().local_addr()?.port();
        Ok(Listener { inner, redirect_uri: format!("http://127.0.0.1:{port}{PATH}") })
    }

    /// The query parameters of the first `GET /callback` within `wait`;
    /// other requests (a browser's favicon) get a 404.
    pub async fn wait(&self, wait: Duration) -> Result<Vec<(String, String)>, String> {
        let accept = async {
            loop {
                let (mut s, _) = self.inner.accept().await.map_err(|e| format!("redirect listener: {e}"))?;
                let head = read_head(&mut s).await.unwrap_or_default();
                let target = head.split_ascii_whitespace().nth(1).unwrap_or("").to_string();
                let (path, query) = target.split_once('?').unwrap_or((&target, ""));
                if path == PATH && head.starts_with("GET ") {
                    let params = form::decode(query);
                    let body = match params.iter().find(|(k, _)| k == "error") {
                        Some((_, e)) => format!("Authorization failed ({e}). You can close this window."),
                        None => "mcpx received the authorization. You can close this window.".to_string(),
                    };
                    let _ = respond(&mut s, "200 OK", &body).await;
                    return Ok(params);
                }
                let _ = respond(&mut s, "404 Not Found", "not found").await;
            }
        };
        accept
            .or(async {
                Timer::after(wait).await;
                Err(format!("no authorization arrived at the redirect URI within {} s", wait.as_secs()))
            })
            .await
    }
}

async fn read_head(s: &mut Async<std::net::TcpStream>) -> io::Result<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    let read = async {
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_HEAD {
            let n = s.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Ok::<_, io::Error>(())
    };
    read.or(async {
        Timer::after(Duration::from_secs(10)).await;
        Err(io::Error::new(io::ErrorKind::TimedOut, "slow redirect request"))
    })
    .await?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

async fn respond(s: &mut Async<std::net::TcpStream>, status: &str, body: &str) -> io::Result<()> {
    let msg = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(msg.as_bytes()).await?;
    s.flush().await
}
