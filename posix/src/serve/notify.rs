//! The notify hook of a call waiting for approval (`Output::Notify`,
//! `policy.approvals.notify`): its command run with the call in
//! `MCPX_APPROVAL_*` environment variables, or one HTTP POST of it on the
//! remote transport's HTTP client (http and https).
//!
//! Nothing here is waited for by the hub: a POST runs in its own task on
//! the executor, within [`TIMEOUT`] in all (connect, write, answer), its
//! answer read up to [`MAX_ANSWER`] bytes. A failure is logged once, as an
//! error, and never retried: the call waits for the page regardless. At
//! most [`MAX_IN_FLIGHT`] POSTs run at once and as many more wait; past
//! that a notification is dropped, and that is logged too.
//!
//! Logs name the URL's origin only: a webhook's path or an ntfy topic is
//! often its secret.

use std::rc::Rc;
use std::time::Duration;

use serde_json::json;
use smol::channel::{self, Receiver, Sender};
use smol::Task;

use crate::policy::approval::{Carrier, Format, Notice, Post};
use crate::process::exec::Executor;
use crate::remote::http::{Client, Limits};
use crate::remote::url::Url;

/// A POST connects, is written and is answered within this, in all.
const TIMEOUT: Duration = Duration::from_secs(5);
/// The most of an answer read (the start of an error's is logged).
const MAX_ANSWER: usize = 4096;
/// POSTs under way at once; as many more may wait to start.
const MAX_IN_FLIGHT: usize = 16;

/// One POST to make.
pub(crate) struct Job {
    /// The waiting call's number, for the log.
    id: u64,
    url: Url,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

/// Tells the hook of `notice` over `to`: a command is started now, a POST
/// queued on `posts` (the task of [`start`]).
pub(crate) fn notify(to: Carrier, notice: &Notice, posts: Option<&Sender<Job>>) {
    match to {
        Carrier::Command(command) => run(&command, notice),
        Carrier::Post(post) => {
            let Ok(url) = Url::parse(&post.url) else {
                // The config checked it.
                error!("approval {}: the notify url does not parse", notice.id);
                return;
            };
            let origin = origin(&url);
            let (headers, body) = request(&post, notice);
            let job = Job { id: notice.id, url, headers, body };
            match posts.map(|q| q.try_send(job)) {
                Some(Ok(())) => {}
                Some(Err(_)) => error!("approval {}: not notified at {origin}: {MAX_IN_FLIGHT} notifications are under way and as many wait", notice.id),
                None => error!("approval {}: not notified at {origin}: no notifier is running", notice.id),
            }
        }
    }
}

/// Runs `command` with the notice in its environment, not waiting for it.
fn run(command: &[String], notice: &Notice) {
    let Some((program, args)) = command.split_first() else { return };
    let started = smol::process::Command::new(program)
        .args(args)
        .envs(env(notice))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn();
    if let Err(e) = started {
        error!("approval {}: cannot run the notify command {program}: {e}", notice.id);
    }
}

/// The notice as the command's environment.
fn env(n: &Notice) -> [(&'static str, String); 8] {
    [
        ("MCPX_APPROVAL_ID", n.id.to_string()),
        ("MCPX_APPROVAL_PATH", n.path.clone()),
        ("MCPX_APPROVAL_LINK", n.link.clone()),
        ("MCPX_APPROVAL_SERVER", n.server.clone()),
        ("MCPX_APPROVAL_TOOL", n.tool.clone()),
        ("MCPX_APPROVAL_PRINCIPAL", n.principal.clone()),
        ("MCPX_APPROVAL_SHA256", n.sha256.clone()),
        ("MCPX_APPROVAL_TEXT", n.text.clone()),
    ]
}

/// The header fields (names lowercased) and body of the POST of `n` in
/// `post`'s format. A configured header replaces the format's of the same
/// name (`Title`, `Click`); `Content-Type` is not configurable.
fn request(post: &Post, n: &Notice) -> (Vec<(String, Vec<u8>)>, Vec<u8>) {
    let (own, body): (Vec<(&str, String)>, Vec<u8>) = match post.format {
        Format::Json => {
            let v = json!({
                "text": n.text, "title": n.title, "id": n.id, "link": n.link,
                "server": n.server, "tool": n.tool, "principal": n.principal,
                "sha256": n.sha256, "arguments": n.arguments,
            });
            (vec![("content-type", "application/json".into())], serde_json::to_vec(&v).unwrap_or_default())
        }
        Format::Ntfy => {
            let mut h = vec![("content-type", "text/plain; charset=utf-8".to_string()), ("title", format!("mcpx: {}", ascii(&n.title)))];
            // ntfy opens `Click` when the notification is tapped: a URL, not a path.
            if n.link.starts_with("http://") || n.link.starts_with("https://") {
                h.push(("click", n.link.clone()));
            }
            (h, n.text.as_bytes().to_vec())
        }
    };
    let configured = |name: &str| post.headers.iter().any(|(c, _)| c.eq_ignore_ascii_case(name));
    let mut fields: Vec<(String, Vec<u8>)> = own.into_iter().filter(|(name, _)| !configured(name)).map(|(name, v)| (name.to_string(), v.into_bytes())).collect();
    if !configured("user-agent") {
        fields.push(("user-agent".into(), concat!("mcpx/", env!("CARGO_PKG_VERSION")).into()));
    }
    fields.extend(post.headers.iter().map(|(name, v)| (name.to_ascii_lowercase(), v.clone().into_bytes())));
    (fields, body)
}

/// `s` with what is not printable ASCII as `?`: fit for any header value.
fn ascii(s: &str) -> String {
    s.chars().map(|c| if c == ' ' || c.is_ascii_graphic() { c } else { '?' }).collect()
}

/// `scheme://host[:port]` of `u`: what the log may show of it.
fn origin(u: &Url) -> String {
    let full = u.to_string();
    full[..full.len() - u.target.len()].to_string()
}

/// The task that makes the queued POSTs, each in a task of its own on `ex`,
/// at most [`MAX_IN_FLIGHT`] at once; the sender queues as many more.
pub(crate) fn start(ex: &Rc<Executor>) -> (Sender<Job>, Task<()>) {
    let (tx, rx) = channel::bounded(MAX_IN_FLIGHT);
    (tx, ex.spawn(posts(ex.clone(), rx)))
}

async fn posts(ex: Rc<Executor>, jobs: Receiver<Job>) {
    let (done_tx, done) = channel::unbounded::<()>();
    let mut in_flight = 0;
    loop {
        while in_flight >= MAX_IN_FLIGHT {
            let _ = done.recv().await;
            in_flight -= 1;
        }
        let Ok(job) = jobs.recv().await else { return };
        while done.try_recv().is_ok() {
            in_flight -= 1;
        }
        in_flight += 1;
        let done_tx = done_tx.clone();
        ex.spawn(async move {
            let (id, origin) = (job.id, origin(&job.url));
            match post(&job, TIMEOUT).await {
                Ok(status) => debug!("approval {id}: notified at {origin} (HTTP {status})"),
                Err(e) => error!("approval {id}: the notification to {origin} failed: {e} (not retried; the call waits for the page)"),
            }
            let _ = done_tx.send(()).await;
        })
        .detach();
    }
}

/// The POST, within `timeout` in all; the status of a 2xx answer.
async fn post(job: &Job, timeout: Duration) -> Result<u16, String> {
    let exchange = async {
        let connector = crate::remote::connector(None, &job.url, timeout).map_err(|e| e.to_string())?;
        let client = Client::new(connector, 0);
        let limits = Limits { max_head: 16 << 10, head_timeout: timeout, idle_timeout: Some(timeout) };
        let fields: Vec<(&str, &[u8])> = job.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice())).collect();
        let mut resp = client.request("POST", &job.url, &fields, &job.body, limits, None).await.map_err(|e| e.to_string())?;
        if (200..300).contains(&resp.status) {
            let _ = resp.body.drain(MAX_ANSWER).await;
            return Ok(resp.status);
        }
        let answer = resp.body.read_all(MAX_ANSWER).await.unwrap_or_default();
        let answer = String::from_utf8_lossy(&answer);
        let answer: String = answer.chars().take(200).map(|c| if c.is_control() { ' ' } else { c }).collect();
        Err(format!("answered HTTP {}: {}", resp.status, answer.trim()))
    };
    let timer = async {
        async_io::Timer::after(timeout).await;
        Err(format!("no answer within {}", crate::log::line::show_duration(timeout)))
    };
    smol::future::or(exchange, timer).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn notice(link: &str) -> Notice {
        Notice {
            id: 7,
            path: "/approvals/7?key=ab".into(),
            link: link.into(),
            server: "files".into(),
            tool: "delete".into(),
            principal: "token:alice".into(),
            sha256: "cd".repeat(32),
            arguments: "{\n  \"path\": \"/a\"\n}".into(),
            title: "token:alice asks to run files/delete ✓".into(),
            text: "token:alice asks to run files/delete …".into(),
        }
    }

    fn configured(format: Format, headers: &[(&str, &str)]) -> Post {
        Post { url: "https://ntfy.example/topic".into(), format, headers: headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect() }
    }

    fn field<'a>(fields: &'a [(String, Vec<u8>)], name: &str) -> Option<&'a str> {
        fields.iter().find(|(n, _)| n == name).map(|(_, v)| std::str::from_utf8(v).unwrap())
    }

    #[test]
    fn a_json_post_carries_every_field_of_the_notice() {
        let n = notice("https://mcpx.example.net/approvals/7?key=ab");
        let (fields, body) = request(&configured(Format::Json, &[("Authorization", "Bearer t")]), &n);
        assert_eq!(field(&fields, "content-type"), Some("application/json"));
        assert_eq!(field(&fields, "authorization"), Some("Bearer t"));
        assert!(field(&fields, "user-agent").unwrap().starts_with("mcpx/"));
        let v: Value = serde_json::from_slice(&body).unwrap();
        for (k, want) in [("text", n.text.as_str()), ("title", &n.title), ("link", &n.link), ("server", "files"), ("tool", "delete"), ("principal", "token:alice"), ("sha256", &n.sha256), ("arguments", &n.arguments)] {
            assert_eq!(v[k], want, "{k}: {v}");
        }
        assert_eq!(v["id"], 7);
    }

    #[test]
    fn an_ntfy_post_is_the_text_with_a_title_and_the_link_to_open() {
        let n = notice("https://mcpx.example.net/approvals/7?key=ab");
        let (fields, body) = request(&configured(Format::Ntfy, &[("Priority", "high")]), &n);
        assert_eq!(body, n.text.as_bytes());
        assert_eq!(field(&fields, "content-type"), Some("text/plain; charset=utf-8"));
        // Header values stay printable ASCII.
        assert_eq!(field(&fields, "title"), Some("mcpx: token:alice asks to run files/delete ?"));
        assert_eq!(field(&fields, "click"), Some(n.link.as_str()));
        assert_eq!(field(&fields, "priority"), Some("high"));
        // Without a linkBase the path is no URL to open: no Click.
        let (fields, _) = request(&configured(Format::Ntfy, &[]), &notice("/approvals/7?key=ab"));
        assert_eq!(field(&fields, "click"), None);
        // A configured header replaces the format's.
        let (fields, _) = request(&configured(Format::Ntfy, &[("Title", "Approve?")]), &n);
        assert_eq!(fields.iter().filter(|(n, _)| n == "title").count(), 1);
        assert_eq!(field(&fields, "title"), Some("Approve?"));
    }

    #[test]
    fn the_command_gets_the_notice_in_its_environment() {
        let n = notice("https://mcpx.example.net/approvals/7?key=ab");
        let env = env(&n);
        let var = |k: &str| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str()).unwrap();
        assert_eq!(var("MCPX_APPROVAL_ID"), "7");
        assert_eq!(var("MCPX_APPROVAL_PATH"), "/approvals/7?key=ab");
        assert_eq!(var("MCPX_APPROVAL_LINK"), n.link);
        assert_eq!(var("MCPX_APPROVAL_PRINCIPAL"), "token:alice");
    }

    /// A receiver on a loopback port that reads one request and then
    /// writes `answer` (nothing: it holds the connection open a while).
    fn receiver(answer: &'static [u8]) -> Job {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = Url::parse(&format!("http://{}/topic", l.local_addr().unwrap())).unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            if answer.is_empty() {
                std::thread::sleep(Duration::from_secs(3));
            } else {
                let _ = s.write_all(answer);
            }
        });
        Job { id: 1, url, headers: vec![("content-type".into(), b"text/plain".to_vec())], body: b"hi".to_vec() }
    }

    #[test]
    fn a_post_is_bounded_in_time_and_a_refusal_is_an_error_naming_the_answer() {
        let t = std::time::Instant::now();
        let r = crate::process::reactor::block_on(post(&receiver(b""), Duration::from_millis(300)));
        assert!(r.as_ref().is_err_and(|e| e.contains("within")), "{r:?}");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        let r = crate::process::reactor::block_on(post(&receiver(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 21\r\n\r\n{\"error\":\"forbidden\"}"), TIMEOUT));
        assert_eq!(r, Err("answered HTTP 403: {\"error\":\"forbidden\"}".to_string()));
        let r = crate::process::reactor::block_on(post(&receiver(b"HTTP/1.1 204 No Content\r\n\r\n"), TIMEOUT));
        assert_eq!(r, Ok(204));
    }

    #[test]
    fn logs_show_a_urls_origin_only() {
        let u = Url::parse("https://hooks.example.com:8443/services/T0/B0/secret?x=1").unwrap();
        assert_eq!(origin(&u), "https://hooks.example.com:8443");
        assert_eq!(origin(&Url::parse("http://127.0.0.1:9/").unwrap()), "http://127.0.0.1:9");
    }
}
