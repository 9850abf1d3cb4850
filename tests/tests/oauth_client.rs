//! `mcpx auth login` (the real binary) against an authorization server
//! written by the test: a scripted HTTP server on 127.0.0.1 that is both the
//! protected MCP server (401 to everything) and its authorization server.
//! The `openWith` command is a shell script that records its arguments.
//!
//! - A hostile authorization server names an `authorization_endpoint` that
//!   is not https (`file:`, `javascript:`, `ftp:`, plain http to another
//!   host) or reads as an option (`--remote-debugging-port=…`): nothing is
//!   run, nothing is printed for a person to open, and the login fails
//!   saying which scheme and why.
//! - Protected Resource Metadata naming `http://127.0.0.1:PORT/` in front of
//!   an authorization server whose issuer is `http://127.0.0.1:PORT` (as a
//!   FastMCP server writes it in front of Okta or Google): the login works.
//! - A forged callback on the loopback redirect URI (another state, none)
//!   gets a 400 and the login goes on with the real redirect.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpx_tests::*;
use serde_json::json;

/// One request the scripted server saw: method, target, body.
type Seen = (String, String, String);

/// The metadata's `authorization_endpoint`, from the server's origin.
type Endpoint = fn(&str) -> String;

/// The protected server and its authorization server on one port.
struct AuthServer {
    origin: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl AuthServer {
    /// The PRM names `{origin}{prm_as}`; the metadata says its issuer is
    /// `{origin}{issuer}` and its authorization endpoint is
    /// `endpoint(origin)`. The token endpoint grants `at-good` for the code
    /// `good` only.
    fn start(prm_as: &'static str, issuer: &'static str, endpoint: Endpoint) -> AuthServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let origin = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (o, log) = (origin.clone(), seen.clone());
        std::thread::spawn(move || {
            for s in listener.incoming().flatten() {
                let (o, log) = (o.clone(), log.clone());
                std::thread::spawn(move || serve(s, &o, prm_as, issuer, endpoint, &log));
            }
        });
        AuthServer { origin, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(s: TcpStream, origin: &str, prm_as: &str, issuer: &str, endpoint: Endpoint, log: &Mutex<Vec<Seen>>) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap_or(0);
    let mut parts = line.split_ascii_whitespace();
    let (method, target) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
    let mut len = 0;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            if n.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap_or(());
    let body = String::from_utf8_lossy(&body).into_owned();
    log.lock().unwrap().push((method.clone(), target.clone(), body.clone()));
    let prm = format!("{origin}/.well-known/oauth-protected-resource/mcp");
    let (status, extra, reply) = match (method.as_str(), target.as_str()) {
        ("GET", "/.well-known/oauth-protected-resource/mcp") => {
            (200, String::new(), json!({"resource": format!("{origin}/mcp"), "authorization_servers": [format!("{origin}{prm_as}")]}))
        }
        ("GET", t) if t.starts_with("/.well-known/oauth-authorization-server") => (
            200,
            String::new(),
            json!({"issuer": format!("{origin}{issuer}"), "authorization_endpoint": endpoint(origin),
                   "token_endpoint": format!("{origin}/token"), "code_challenge_methods_supported": ["S256"],
                   "token_endpoint_auth_methods_supported": ["none"]}),
        ),
        ("POST", "/token") if body.split('&').any(|p| p == "code=good") => {
            (200, String::new(), json!({"access_token": "at-good", "token_type": "Bearer", "expires_in": 3600}))
        }
        ("POST", "/token") => (400, String::new(), json!({"error": "invalid_grant"})),
        ("POST", "/mcp") => (401, format!("www-authenticate: Bearer resource_metadata=\"{prm}\"\r\n"), json!({"error": "invalid_token"})),
        _ => (404, String::new(), json!({})),
    };
    let reply = reply.to_string();
    let head = format!("HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n", reply.len());
    let mut s = s;
    let _ = s.write_all(format!("{head}{reply}").as_bytes());
}

/// A config with server `s` at the scripted server, an `openWith` script
/// that writes its arguments, one a line, to `args.txt`, and a state folder.
struct Login {
    hub: Hub,
    script: PathBuf,
    record: PathBuf,
}

impl Login {
    fn new(srv: &AuthServer) -> Login {
        let hub = HubConfig::new().remote("s", json!({"url": format!("{}/mcp", srv.origin), "oauth": {"clientId": "cid"}})).write();
        let record = hub.dir().join("args.txt");
        let script = hub.dir().join("open.sh");
        std::fs::write(&script, format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > {}.tmp && mv {0}.tmp {0}\n", record.display())).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        Login { hub, script, record }
    }

    /// `mcpx auth login s`, with `--open-with` the script when `open_with`.
    fn spawn(&self, open_with: bool) -> Child {
        let mut args = vec!["auth", "login", "s", "--config", self.hub.config.to_str().unwrap()];
        if open_with {
            args.extend(["--open-with", self.script.to_str().unwrap()]);
        }
        Command::new(mcpx())
            .args(&args)
            .env("XDG_STATE_HOME", self.hub.dir().join("state"))
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// Exit code, stdout and stderr of `child`, killed after `limit`.
fn finish(mut child: Child, limit: Duration) -> (Option<i32>, String, String) {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.wait().unwrap();
    let (mut out, mut err) = (String::new(), String::new());
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (status.code(), out, err)
}

// covers: authz-https-and-redirect-uris
#[test]
fn a_hostile_authorization_endpoint_is_never_opened() {
    let cases: [(Endpoint, &str); 5] = [
        (|_| "file:///etc/passwd?".into(), "its scheme is \"file\""),
        (|_| "javascript:alert(document.domain)//".into(), "its scheme is \"javascript\""),
        (|_| "ftp://127.0.0.1/authorize".into(), "its scheme is \"ftp\""),
        (|_| "--remote-debugging-port=9222".into(), "starts with '-'"),
        (|_| "http://example.com/authorize".into(), "\"http\" to example.com, which is not a loopback host"),
    ];
    for (endpoint, why) in cases {
        let srv = AuthServer::start("", "", endpoint);
        let login = Login::new(&srv);
        for open_with in [true, false] {
            let (code, out, err) = finish(login.spawn(open_with), Duration::from_secs(30));
            let url = endpoint(&srv.origin);
            assert_eq!(code, Some(1), "{url}: {out}\n{err}");
            assert!(err.contains("is not opened") && err.contains(why), "{url}: {err}");
            assert!(!login.record.exists(), "{url}: the openWith command ran: {:?}", std::fs::read_to_string(&login.record));
            assert!(!err.contains("Open this URL"), "{url}: printed for a person to open: {err}");
        }
        // It got as far as the metadata, and no further.
        let seen = srv.seen();
        assert!(seen.iter().any(|(_, t, _)| t.starts_with("/.well-known/oauth-authorization-server")), "{seen:?}");
        assert!(seen.iter().all(|(_, t, _)| t != "/token"), "{seen:?}");
    }
}

/// The query parameter `k` of `url`, percent-decoded enough for a port
/// and a base64url state.
fn param(url: &str, k: &str) -> String {
    let q = url.split_once('?').map(|(_, q)| q).unwrap_or("");
    let v = q.split('&').find_map(|p| p.strip_prefix(&format!("{k}="))).unwrap_or_else(|| panic!("no {k} in {url}"));
    v.replace("%3A", ":").replace("%2F", "/")
}

/// `GET target` on the redirect URI's port: status line and body.
fn get(redirect_uri: &str, target: &str) -> String {
    let port = redirect_uri.trim_start_matches("http://127.0.0.1:").trim_end_matches("/callback");
    let mut s = TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    s.write_all(format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn wait_for(path: &Path, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(s) = std::fs::read_to_string(path) {
            return s;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{} was not written within {limit:?}", path.display());
}

/// Logs in through an authorization server whose PRM name is `prm_as` and
/// whose issuer is `issuer`, sending the callbacks `forged` before the real
/// redirect. The answers to the forged ones, and the login's exit code and
/// output.
fn login(prm_as: &'static str, issuer: &'static str, forged: &[&str]) -> (Vec<String>, (Option<i32>, String, String)) {
    let srv = AuthServer::start(prm_as, issuer, |o| format!("{o}/authorize"));
    let login = Login::new(&srv);
    let child = login.spawn(true);
    let args = wait_for(&login.record, Duration::from_secs(30));
    let url = args.lines().last().unwrap().to_string();
    assert!(url.starts_with(&format!("{}/authorize?", srv.origin)), "{args}");
    let (redirect_uri, state) = (param(&url, "redirect_uri"), param(&url, "state"));
    let forged = forged.iter().map(|t| get(&redirect_uri, t)).collect();
    let real = get(&redirect_uri, &format!("/callback?code=good&state={state}"));
    assert!(real.starts_with("HTTP/1.1 200 "), "{real}");
    let done = finish(child, Duration::from_secs(30));
    let tokens: Vec<Seen> = srv.seen().into_iter().filter(|(_, t, _)| t == "/token").collect();
    assert!(tokens.iter().all(|(_, _, body)| body.contains("code=good&")), "only the real code is exchanged: {tokens:?}");
    (forged, done)
}

// Forged callbacks on the loopback redirect URI (another state, none, one
// carrying an error) get a 400 saying the state does not match, and do not
// end the login: the real redirect after them completes it.
// covers: authz-open-redirection
#[test]
fn forged_callbacks_do_not_end_the_login() {
    let forged = ["/callback?state=wrong&code=evil", "/callback?code=evil", "/callback?state=wrong&error=access_denied"];
    let (answers, (code, out, err)) = login("", "", &forged);
    for a in &answers {
        assert!(a.starts_with("HTTP/1.1 400 ") && a.contains("does not match"), "{a}");
    }
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("s: logged in"), "{out}");
}

// The FastMCP / Okta pair logs in: an empty path is `/`, both ways round.
// covers: authz-client-validates-issuer-in-metadata
#[test]
fn an_issuer_with_an_empty_path_is_the_one_with_slash() {
    for (prm_as, issuer) in [("/", ""), ("", "/")] {
        let (_, (code, out, err)) = login(prm_as, issuer, &[]);
        assert_eq!(code, Some(0), "PRM {prm_as:?}, issuer {issuer:?}:\n{out}\n{err}");
        assert!(out.contains("s: logged in"), "{out}");
    }
}

// Another path is another issuer (RFC 8414 §3.3): refused at discovery.
// covers: authz-client-validates-issuer-in-metadata
#[test]
fn an_issuer_with_another_path_is_refused() {
    let srv = AuthServer::start("/x", "/y", |o| format!("{o}/authorize"));
    let login = Login::new(&srv);
    let (code, out, err) = finish(login.spawn(true), Duration::from_secs(30));
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(err.contains("its issuer") && err.contains("/y\" is not ") && err.contains("/x\""), "{err}");
    assert!(!login.record.exists());
}
