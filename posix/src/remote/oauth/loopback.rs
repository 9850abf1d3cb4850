//! The loopback redirect URI of the authorization code flow (RFC 8252
//! §7.3): a listener on 127.0.0.1 that takes the one redirect carrying the
//! authorization response of this login, recognized by its `state`.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use async_io::{Async, Timer};
use smol::future::FutureExt as _;
use smol::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::error::Error;
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

    /// The query parameters of the first `GET /callback` within `wait`
    /// whose `state` is `state`. A callback with another or no `state`
    /// (forged, or stale from an earlier login) gets a 400 and the login
    /// keeps waiting; other requests (a browser's favicon) get a 404.
    // Requirement: authz-open-redirection (verify the state)
    pub async fn wait(&self, state: &str, wait: Duration) -> Result<Vec<(String, String)>, Error> {
        let accept = async {
            loop {
                let (mut s, _) = self.inner.accept().await.map_err(Error::RedirectListener)?;
                let head = read_head(&mut s).await.unwrap_or_default();
                let (status, body, params) = match answer(&head, state) {
                    Answer::Response(params) => {
                        let body = match params.iter().find(|(k, _)| k == "error") {
                            Some((_, e)) => format!("Authorization failed ({e}). You can close this window."),
                            None => "mcpx received the authorization. You can close this window.".to_string(),
                        };
                        ("200 OK", body, Some(params))
                    }
                    Answer::WrongState => {
                        warn!("the redirect listener ignored a callback whose state does not match this login's");
                        ("400 Bad Request", WRONG_STATE.to_string(), None)
                    }
                    Answer::NotFound => ("404 Not Found", "not found".to_string(), None),
                };
                let _ = respond(&mut s, status, &body).await;
                if let Some(params) = params {
                    return Ok(params);
                }
            }
        };
        accept
            .or(async {
                Timer::after(wait).await;
                Err(Error::NoRedirect { waited_s: wait.as_secs() })
            })
            .await
    }
}

/// The page of a callback whose state is not the login's.
const WRONG_STATE: &str = "The state of this request does not match the login mcpx is waiting for; it is ignored and mcpx keeps waiting for the authorization.";

/// What the listener does with one request.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    /// The authorization response of this login: its query parameters.
    Response(Vec<(String, String)>),
    /// A callback whose `state` is not this login's: 400, keep waiting.
    WrongState,
    /// Anything else: 404, keep waiting.
    NotFound,
}

/// The answer to the request with head `head` for the login whose state
/// is `state`.
fn answer(head: &str, state: &str) -> Answer {
    let target = head.split_ascii_whitespace().nth(1).unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path != PATH || !head.starts_with("GET ") {
        return Answer::NotFound;
    }
    let params = form::decode(query);
    let mut states = params.iter().filter(|(k, _)| k == "state");
    match (states.next(), states.next()) {
        (Some((_, s)), None) if s == state => Answer::Response(params),
        _ => Answer::WrongState,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn head(target: &str) -> String {
        format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    }

    // covers: authz-open-redirection
    #[test]
    fn only_this_logins_state_is_taken() {
        let ok = |q: &[(&str, &str)]| Answer::Response(q.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        let table: &[(String, Answer)] = &[
            (head("/callback?code=c&state=s1"), ok(&[("code", "c"), ("state", "s1")])),
            (head("/callback?state=s1&error=access_denied"), ok(&[("state", "s1"), ("error", "access_denied")])),
            (head("/callback?code=c&state=wrong"), Answer::WrongState),
            (head("/callback?code=c"), Answer::WrongState),
            (head("/callback"), Answer::WrongState),
            (head("/callback?code=c&state="), Answer::WrongState),
            (head("/callback?code=c&state=s1&state=s2"), Answer::WrongState),
            (head("/callback?code=c&state=S1"), Answer::WrongState),
            (head("/favicon.ico"), Answer::NotFound),
            (head("/callback/x?state=s1"), Answer::NotFound),
            ("POST /callback?code=c&state=s1 HTTP/1.1\r\n\r\n".to_string(), Answer::NotFound),
            (String::new(), Answer::NotFound),
        ];
        for (h, want) in table {
            assert_eq!(&answer(h, "s1"), want, "{h:?}");
        }
    }

    fn get(port: u16, target: &str) -> String {
        use std::io::{Read as _, Write as _};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(head(target).as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    // A forged callback (wrong state, no state, again and again) is answered
    // 400 and does not end the login: the real redirect after it is taken.
    // covers: authz-open-redirection
    #[test]
    fn forged_callbacks_do_not_end_the_login() {
        let l = Listener::bind().unwrap();
        let port: u16 = l.redirect_uri.trim_start_matches("http://127.0.0.1:").trim_end_matches(PATH).parse().unwrap();
        let browser = std::thread::spawn(move || {
            let forged: Vec<String> = ["/callback?state=wrong&code=evil", "/callback?code=evil", "/callback?state=wrong"]
                .iter()
                .map(|t| get(port, t))
                .collect();
            (forged, get(port, "/callback?code=good&state=s1"))
        });
        let params = crate::process::reactor::block_on(l.wait("s1", Duration::from_secs(20))).unwrap();
        assert_eq!(params, [("code".to_string(), "good".to_string()), ("state".to_string(), "s1".to_string())]);
        let (forged, real) = browser.join().unwrap();
        for f in forged {
            assert!(f.starts_with("HTTP/1.1 400 ") && f.contains("does not match"), "{f}");
        }
        assert!(real.starts_with("HTTP/1.1 200 "), "{real}");
    }
}
