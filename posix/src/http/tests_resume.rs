//! The standalone GET stream is resumable: ids, a priming event with
//! `retry`, and what a client missed sent again on `Last-Event-ID`.

use super::*;

/// A `tools/call` of the fake's `notify` tool, answered as JSON (so the list
/// change it causes has no POST stream to ride on).
fn notify_json(addr: SocketAddr, sid: &str, id: u64) {
    let hs = [("Accept", "application/json"), JSON, ("Mcp-Session-Id", sid), ("MCP-Protocol-Version", "2025-11-25")];
    let r = request(addr, "POST", "/mcp", &hs, &serde_json::to_vec(&call(id, "notify", json!({}))).unwrap());
    assert_eq!(r.json()["id"], id, "{}", r.text());
}

fn list(addr: SocketAddr, sid: &str, id: u64) {
    let r = post(addr, Some(sid), &json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list" }));
    assert_eq!(r.status, 200);
}

/// The `id:` fields of the events in `text`, with the data line after each.
fn ids(text: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l.strip_prefix("id: ").map(|id| (id.to_string(), lines[i + 1..].iter().find(|d| d.starts_with("data:")).unwrap_or(&"").to_string())))
        .collect()
}

// covers: streamable-http-sse-priming-event, streamable-http-server-may-resume, streamable-http-event-id-unique, streamable-http-event-id-encodes-stream, streamable-http-server-no-cross-stream-replay
#[test]
fn a_client_that_drops_its_get_stream_gets_what_it_missed_on_last_event_id() {
    let t = start(|c| c.limits.sse_keepalive_ms = 200);
    let sid = init(t.addr);
    list(t.addr, &sid, 1);
    let mut g = open_get(t.addr, &sid);
    // The priming event: an id, the reconnection time, empty data.
    let head = read_until(&mut g, ": keep-alive", Duration::from_secs(3));
    let prime = ids(&head);
    assert_eq!(prime.len(), 1, "{head}");
    let (stream, n0) = prime[0].0.split_once('-').unwrap();
    assert_eq!(n0, "0");
    assert!(head.contains(&format!("id: {stream}-0\nretry: 1000\ndata: \n\n")) || head.contains(&format!("id: {stream}-0\nretry: 1000\ndata:\n\n")), "{head:?}");
    // A list change on the live stream: event 1.
    notify_json(t.addr, &sid, 2);
    let got = read_until(&mut g, "list_changed", Duration::from_secs(5));
    assert_eq!(ids(&got).iter().map(|(i, _)| i.clone()).collect::<Vec<_>>(), [format!("{stream}-1")], "{got}");
    // The stream drops; two more changes happen meanwhile.
    drop(g);
    std::thread::sleep(Duration::from_millis(100));
    list(t.addr, &sid, 3);
    notify_json(t.addr, &sid, 4);
    list(t.addr, &sid, 5);
    notify_json(t.addr, &sid, 6);
    // Reconnecting with the last id seen: both, in order, on the same stream.
    let mut g = connect(t.addr);
    let last = format!("{stream}-1");
    let hs = [("Accept", "text/event-stream"), ("Mcp-Session-Id", sid.as_str()), ("Last-Event-ID", last.as_str())];
    write_req(&mut g, t.addr, "GET", "/mcp", &hs, b"");
    let got = read_until(&mut g, &format!("id: {stream}-3"), Duration::from_secs(5));
    let evs = ids(&got);
    assert_eq!(evs.iter().map(|(i, _)| i.clone()).collect::<Vec<_>>(), [format!("{stream}-2"), format!("{stream}-3")], "{got}");
    assert!(evs.iter().all(|(_, d)| d.contains("notifications/tools/list_changed")), "{got}");
    assert!(!got.contains(&format!("id: {stream}-0")), "no second priming event on a resumed stream: {got}");
    // The stream goes on with the next number.
    notify_json(t.addr, &sid, 7);
    let more = read_until(&mut g, "list_changed", Duration::from_secs(5));
    assert_eq!(ids(&more).iter().map(|(i, _)| i.clone()).collect::<Vec<_>>(), [format!("{stream}-4")], "{more}");
    drop(g);
    // An id of no stream of this session: a new stream, nothing replayed.
    std::thread::sleep(Duration::from_millis(100));
    let mut g = connect(t.addr);
    let hs = [("Accept", "text/event-stream"), ("Mcp-Session-Id", sid.as_str()), ("Last-Event-ID", "999999-1")];
    write_req(&mut g, t.addr, "GET", "/mcp", &hs, b"");
    let got = read_until(&mut g, ": keep-alive", Duration::from_secs(3));
    let evs = ids(&got);
    assert_eq!(evs.len(), 1, "only a priming event: {got}");
    assert!(evs[0].0.ends_with("-0") && !evs[0].0.starts_with(&format!("{stream}-")), "{got}");
}

// Clients of 2025-03-26 and 2025-06-18 get ids but no priming event (an
// event with empty data is new in 2025-11-25).
#[test]
fn older_revisions_get_ids_without_a_priming_event() {
    let t = start(|c| c.limits.sse_keepalive_ms = 200);
    let sid = init_with(t.addr, "2025-06-18");
    // The session's own version header (another one is a 400).
    let hs = [("Accept", "application/json"), JSON, ("Mcp-Session-Id", sid.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
    let r = request(t.addr, "POST", "/mcp", &hs, &serde_json::to_vec(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" })).unwrap());
    assert_eq!(r.status, 200);
    let mut g = open_get(t.addr, &sid);
    let head = read_until(&mut g, ": keep-alive", Duration::from_secs(3));
    assert!(ids(&head).is_empty(), "{head}");
    let r = request(t.addr, "POST", "/mcp", &hs, &serde_json::to_vec(&call(2, "notify", json!({}))).unwrap());
    assert_eq!(r.json()["id"], 2);
    let got = read_until(&mut g, "list_changed", Duration::from_secs(5));
    assert!(ids(&got).first().is_some_and(|(i, d)| i.ends_with("-1") && d.contains("list_changed")), "{got}");
}

/// Opens a POST of `body` on `sid` (2025-11-25) and reads until `needle`.
fn post_stream(addr: SocketAddr, sid: &str, rev: &str, body: &Value, needle: &str) -> (TcpStream, String) {
    let mut s = connect(addr);
    let hs = [ACCEPT, JSON, ("Mcp-Session-Id", sid), ("MCP-Protocol-Version", rev)];
    write_req(&mut s, addr, "POST", "/mcp", &hs, &serde_json::to_vec(body).unwrap());
    let got = read_until(&mut s, needle, Duration::from_secs(5));
    (s, got)
}

/// A GET resuming after event `last`.
fn resume(addr: SocketAddr, sid: &str, last: &str) -> TcpStream {
    let mut g = connect(addr);
    let hs = [("Accept", "text/event-stream"), ("Mcp-Session-Id", sid), ("Last-Event-ID", last)];
    write_req(&mut g, addr, "GET", "/mcp", &hs, b"");
    g
}

// covers: streamable-http-sse-priming-event, streamable-http-server-may-resume, streamable-http-event-id-unique
// covers: streamable-http-event-id-encodes-stream, streamable-http-server-no-cross-stream-replay, streamable-http-get-no-responses
#[test]
fn a_client_that_loses_its_post_stream_resumes_it_with_get_and_gets_the_answer() {
    let t = start(|c| c.limits.sse_keepalive_ms = 150);
    let sid = init(t.addr);
    // A long call streams: first its priming event (an id, retry, no data).
    let (s, head) = post_stream(t.addr, &sid, "2025-11-25", &call(31, "slow", json!({ "ms": 1500 })), ": keep-alive");
    let prime = ids(&head);
    assert_eq!(prime.len(), 1, "{head}");
    let (stream, n0) = prime[0].0.split_once('-').unwrap();
    assert_eq!(n0, "0");
    assert!(head.contains(&format!("id: {stream}-0\nretry: 1000\ndata")), "{head:?}");
    // The connection drops; the client comes back with GET and the last id it saw.
    drop(s);
    std::thread::sleep(Duration::from_millis(200));
    let mut g = resume(t.addr, &sid, &format!("{stream}-0"));
    // Its last answer ends the stream (the last chunk).
    let got = read_until(&mut g, "\r\n0\r\n\r\n", Duration::from_secs(5));
    assert!(got.ends_with("\r\n0\r\n\r\n"), "{got:?}");
    let evs = ids(&got);
    assert_eq!(evs.iter().map(|(i, _)| i.clone()).collect::<Vec<_>>(), [format!("{stream}-1")], "{got}");
    assert!(evs[0].1.contains("\"id\":31") && evs[0].1.contains("slow done"), "the POST's answer, on the resumed stream: {got}");

    // Answered while the client was away: the answer waits for it.
    let (s, head) = post_stream(t.addr, &sid, "2025-11-25", &call(32, "slow", json!({ "ms": 400 })), ": keep-alive");
    let other = ids(&head)[0].0.split_once('-').unwrap().0.to_string();
    assert_ne!(other, stream, "every stream has its own id");
    drop(s);
    std::thread::sleep(Duration::from_millis(900));
    let mut g = resume(t.addr, &sid, &format!("{other}-0"));
    let got = read_until(&mut g, "\r\n0\r\n\r\n", Duration::from_secs(5));
    let evs = ids(&got);
    assert_eq!(evs.len(), 1, "{got}");
    assert!(evs[0].0 == format!("{other}-1") && evs[0].1.contains("\"id\":32"), "{got}");
    drop(g);
    // Delivered once: the same id again names no stream any more, so it is
    // a new standalone stream with nothing of the POST's in it.
    std::thread::sleep(Duration::from_millis(100));
    let mut g = resume(t.addr, &sid, &format!("{other}-0"));
    let got = read_until(&mut g, ": keep-alive", Duration::from_secs(3));
    assert!(!got.contains("\"id\":32") && !got.contains(&format!("id: {other}-")), "{got}");
}

// Before 2025-11-25 the POST stream's events have ids but no priming event.
#[test]
fn older_revisions_number_post_streams_without_priming() {
    let t = start(|_| {});
    let sid = init_with(t.addr, "2025-06-18");
    let body = json!({ "jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {
        "name": "progress", "arguments": {}, "_meta": { "progressToken": "p" } } });
    let (_s, got) = post_stream(t.addr, &sid, "2025-06-18", &body, "progress done");
    let evs = ids(&got);
    assert_eq!(evs.len(), 4, "three progress notifications and the answer: {got}");
    let stream = evs[0].0.split_once('-').unwrap().0;
    let want: Vec<String> = (1..=4).map(|n| format!("{stream}-{n}")).collect();
    assert_eq!(evs.iter().map(|(i, _)| i.clone()).collect::<Vec<_>>(), want, "{got}");
    assert!(!got.contains("retry:"), "{got}");
}
