//! The listener's rules as tables, without sockets: one row per case, a
//! request head, a body and what the caller knows in, the decision out.

use mcpx_core::frame::http::{parse_request, BodyFraming, Status};
use serde_json::{json, Value};

use super::*;

/// The head of `request_line` with `fields` ("Name: value"), as a
/// connection reads it.
fn head(request_line: &str, fields: &[&str]) -> Request {
    let mut raw = format!("{request_line}\r\n");
    for f in fields {
        raw.push_str(f);
        raw.push_str("\r\n");
    }
    raw.push_str("\r\n");
    let Ok(Status::Complete((h, _))) = parse_request::<32>(raw.as_bytes(), 16 << 10) else {
        panic!("unparsable head: {raw:?}");
    };
    Request::new(raw.as_bytes(), &h, h.framing().unwrap_or(BodyFraming::None), None)
}

/// What a row says the caller looked up.
struct Table {
    session: Known,
    schema: Option<Value>,
}

impl Facts for Table {
    fn session(&self, _sid: &str) -> Known {
        self.session
    }

    fn tool_schema(&self, _name: &str) -> Option<Value> {
        self.schema.clone()
    }
}

fn knows(session: Known) -> Table {
    Table { session, schema: None }
}

const LIVE: Known = Known::Live(None);

fn live(rev: Revision) -> Known {
    Known::Live(Some(rev))
}

/// A refusal in short: "status code", plus the id it echoes.
fn refused(r: &Refusal<'_>) -> String {
    let id = r.id.map(|id| format!(" id {}", String::from_utf8_lossy(id))).unwrap_or_default();
    format!("{} {}{id}", r.status, r.code.code())
}

/// A POST's decision in short.
fn post_of(fields: &[&str], body: &str, facts: &Table) -> String {
    let req = head("POST /mcp HTTP/1.1", fields);
    let msg = Message::parse(body.as_bytes()).expect("a JSON-RPC body");
    match post(&req, &msg, facts) {
        Post::Refuse(r) => refused(&r),
        Post::Accepted => "202".into(),
        Post::Modern(env) => format!("modern {}", env.method_str().unwrap_or("")),
        Post::Open(_) => "open".into(),
        Post::InSession { sid } => format!("session {sid}"),
    }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;
const NOTE: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const BATCH: &str = r#"[{"jsonrpc":"2.0","id":2,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;

/// A 2026-07-28 request whose `_meta` is complete (so its headers must
/// mirror it).
fn modern(id: u64, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
}

// covers: streamable-http-server-assumes-2025-03-26
#[test]
fn the_era_of_a_post_is_decided_once_from_its_session_header_and_meta() {
    // Only the revision in `_meta`: the headers are not checked (the hub
    // answers the incomplete `_meta` with -32602).
    let meta_only = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let rows: &[(&str, &[&str], &str, Known, &str)] = &[
        ("the SDK's initialize: no header, no _meta", &[], INIT, Known::Unknown, "open"),
        ("a dated legacy header without _meta", &["MCP-Protocol-Version: 2025-11-25"], INIT, Known::Unknown, "open"),
        ("the oldest dated header", &["MCP-Protocol-Version: 2024-11-05"], INIT, Known::Unknown, "open"),
        ("the 2026 header alone, no _meta", &["MCP-Protocol-Version: 2026-07-28"], LIST, Known::Unknown, "modern tools/list"),
        ("the 2026 header on initialize", &["MCP-Protocol-Version: 2026-07-28"], INIT, Known::Unknown, "modern initialize"),
        ("a version no revision has", &["MCP-Protocol-Version: v999.0.0"], LIST, Known::Unknown, "modern tools/list"),
        ("_meta alone", &[], meta_only, Known::Unknown, "modern tools/list"),
        ("_meta beats a legacy header", &["MCP-Protocol-Version: 2025-11-25"], meta_only, Known::Unknown, "modern tools/list"),
        ("a session decides it", &["Mcp-Session-Id: s1", "MCP-Protocol-Version: 2026-07-28"], meta_only, LIVE, "400 -32600 id 3"),
        ("a session, no header", &["Mcp-Session-Id: s1"], meta_only, LIVE, "session s1"),
        ("a batch without a session is legacy", &[], &format!("[{INIT}]"), Known::Unknown, "400 -32600"),
    ];
    for (what, fields, body, session, want) in rows {
        assert_eq!(post_of(fields, body, &knows(*session)), *want, "{what}");
    }
}

// covers: streamable-http-server-404-terminated-session, streamable-http-server-400-missing-session, streamable-http-server-400-unsupported-version-header
#[test]
fn sessions_and_versions_of_legacy_posts() {
    let v0618 = live(Revision::V2025_06_18);
    let rows: &[(&str, &[&str], &str, Known, &str)] = &[
        ("no session, not initialize", &[], LIST, Known::Unknown, "400 -32600 id 2"),
        ("no session, a notification", &[], NOTE, Known::Unknown, "400 -32600"),
        ("an unknown or ended session", &["Mcp-Session-Id: gone"], LIST, Known::Unknown, "404 -32600 id 2"),
        ("a live session", &["Mcp-Session-Id:  s1 "], LIST, LIVE, "session s1"),
        ("its negotiated revision", &["Mcp-Session-Id: s1", "MCP-Protocol-Version: 2025-06-18"], LIST, v0618, "session s1"),
        ("another legacy revision", &["Mcp-Session-Id: s1", "MCP-Protocol-Version: 2025-03-26"], LIST, v0618, "400 -32600 id 2"),
        ("a version no revision has", &["Mcp-Session-Id: s1", "MCP-Protocol-Version: 1999-01-01"], LIST, v0618, "400 -32600 id 2"),
        ("a bad version before the session lookup", &["Mcp-Session-Id: gone", "MCP-Protocol-Version: nope"], LIST, Known::Unknown, "400 -32600 id 2"),
        ("the 2026 header in a session", &["Mcp-Session-Id: s1", "MCP-Protocol-Version: 2026-07-28"], LIST, v0618, "400 -32600 id 2"),
        ("a session not yet initialized takes any legacy header", &["Mcp-Session-Id: s1", "MCP-Protocol-Version: 2025-03-26"], LIST, LIVE, "session s1"),
    ];
    for (what, fields, body, session, want) in rows {
        assert_eq!(post_of(fields, body, &knows(*session)), *want, "{what}");
    }
    // The refusal names what is supported.
    let req = head("POST /mcp HTTP/1.1", &["Mcp-Session-Id: s1", "MCP-Protocol-Version: 2025-03-26"]);
    let msg = Message::parse(LIST.as_bytes()).unwrap();
    let Post::Refuse(r) = post(&req, &msg, &knows(Known::Live(Some(Revision::V2025_06_18)))) else { panic!() };
    assert_eq!(r.data.as_deref(), Some(r#"{"supported":["2025-06-18"],"requested":"2025-03-26"}"#));
    let req = head("POST /mcp HTTP/1.1", &["MCP-Protocol-Version: 1999-01-01", "Mcp-Session-Id: s1"]);
    let Post::Refuse(r) = post(&req, &msg, &knows(LIVE)) else { panic!() };
    let data: Value = serde_json::from_str(r.data.as_deref().unwrap()).unwrap();
    assert_eq!(data["requested"], "1999-01-01");
    assert!(data["supported"].as_array().unwrap().iter().any(|v| v == "2025-03-26"), "{data}");
}

// covers: streamable-http-post-body-may-batch
#[test]
fn batches_only_in_2025_03_26() {
    let s = "Mcp-Session-Id: s1";
    let rows: &[(&str, &[&str], Known, &str)] = &[
        ("a 2025-03-26 session", &[s], live(Revision::V2025_03_26), "session s1"),
        ("a session with no header and no revision yet: 2025-03-26", &[s], LIVE, "session s1"),
        ("the 2025-03-26 header", &[s, "MCP-Protocol-Version: 2025-03-26"], LIVE, "session s1"),
        ("a 2025-06-18 session", &[s], live(Revision::V2025_06_18), "400 -32600"),
        ("a 2025-11-25 session", &[s], live(Revision::V2025_11_25), "400 -32600"),
        ("the 2025-06-18 header", &[s, "MCP-Protocol-Version: 2025-06-18"], LIVE, "400 -32600"),
        ("2026-07-28", &["MCP-Protocol-Version: 2026-07-28"], Known::Unknown, "400 -32600"),
    ];
    for (what, fields, session, want) in rows {
        assert_eq!(post_of(fields, BATCH, &knows(*session)), *want, "{what}");
    }
}

// covers: streamable-http-server-rejects-header-body-mismatch, streamable-http-header-mismatch-400-jsonrpc, streamable-http-server-validates-param-headers
#[test]
fn modern_headers_must_mirror_the_body() {
    let call = modern(7, "tools/call", json!({ "name": "echo", "arguments": { "region": "eu", "n": 3 } }));
    let bare = json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {
        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } } })
    .to_string();
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } } })
    .to_string();
    let v = "MCP-Protocol-Version: 2026-07-28";
    let rows: &[(&str, &[&str], &str, &str)] = &[
        ("all mirrored", &[v, "Mcp-Method: tools/call", "Mcp-Name: echo"], &call, "modern tools/call"),
        ("Mcp-Method differs", &[v, "Mcp-Method: tools/list", "Mcp-Name: echo"], &call, "400 -32020 id 7"),
        ("Mcp-Method missing", &[v, "Mcp-Name: echo"], &call, "400 -32020 id 7"),
        ("Mcp-Name differs", &[v, "Mcp-Method: tools/call", "Mcp-Name: other"], &call, "400 -32020 id 7"),
        ("the version header differs", &["MCP-Protocol-Version: 2025-11-25", "Mcp-Method: tools/call", "Mcp-Name: echo"], &call, "400 -32020 id 7"),
        ("_meta incomplete: the hub's -32602 comes first", &[v], &bare, "modern tools/list"),
        ("a notification: nothing to answer", &[v], &note, "202"),
        ("a batch", &[v], &format!("[{call}]"), "400 -32600"),
    ];
    for (what, fields, body, want) in rows {
        assert_eq!(post_of(fields, body, &knows(Known::Unknown)), *want, "{what}");
    }
    // `Mcp-Param-*` mirror the arguments the tool's schema annotates.
    let schema = json!({ "type": "object", "properties": {
        "region": { "type": "string", "x-mcp-header": "Region" },
        "n": { "type": "number", "x-mcp-header": "N" } } });
    let facts = Table { session: Known::Unknown, schema: Some(schema) };
    let base = [v, "Mcp-Method: tools/call", "Mcp-Name: echo"];
    let rows: &[(&str, &[&str], &str)] = &[
        ("mirrored", &["Mcp-Param-Region: eu", "Mcp-Param-N: 3"], "modern tools/call"),
        ("a value differs", &["Mcp-Param-Region: us", "Mcp-Param-N: 3"], "400 -32020 id 7"),
        ("one is missing", &["Mcp-Param-Region: eu"], "400 -32020 id 7"),
    ];
    for (what, params, want) in rows {
        let fields: Vec<&str> = base.iter().chain(params.iter()).copied().collect();
        assert_eq!(post_of(&fields, &call, &facts), *want, "{what}");
    }
}

// covers: streamable-http-server-validate-origin, streamable-http-server-403-invalid-origin
#[test]
fn the_front_door_checks_host_and_origin() {
    let guard = Guard::new(&["https://app.example.com".into()], &[], "127.0.0.1:8765".parse().unwrap());
    let rows: &[(&str, &str, &[&str], Option<u16>)] = &[
        ("loopback host", "HTTP/1.1", &["Host: localhost:8765"], None),
        ("an allowed origin", "HTTP/1.1", &["Host: 127.0.0.1:8765", "Origin: https://app.example.com"], None),
        ("a loopback origin, any port", "HTTP/1.1", &["Host: localhost", "Origin: http://localhost:3000"], None),
        ("a foreign origin", "HTTP/1.1", &["Host: localhost", "Origin: http://evil.example"], Some(403)),
        ("a rebound host", "HTTP/1.1", &["Host: evil.example:8765"], Some(403)),
        ("no host in HTTP/1.1", "HTTP/1.1", &[], Some(400)),
        ("no host in HTTP/1.0 (the check is on)", "HTTP/1.0", &[], Some(403)),
        ("two hosts", "HTTP/1.1", &["Host: localhost", "Host: localhost"], Some(400)),
        ("two origins", "HTTP/1.1", &["Host: localhost", "Origin: http://localhost:1", "Origin: http://localhost:1"], Some(400)),
    ];
    for (what, version, fields, want) in rows {
        let req = head(&format!("POST /mcp {version}"), fields);
        assert_eq!(front_door(&req, &guard).map(|r| r.status), *want, "{what}");
    }
    let wild = Guard::new(&[], &[], "0.0.0.0:8765".parse().unwrap());
    assert_eq!(front_door(&head("GET /mcp HTTP/1.0", &[]), &wild), None, "a wildcard bind does not check Host");
}

#[test]
fn routes_by_target_and_method() {
    use Endpoint::*;
    let rows: &[(Target, &str, bool, Route)] = &[
        (Target::Mcp, "POST", false, Route::Serve(Post)),
        (Target::Mcp, "GET", false, Route::Serve(Get)),
        (Target::Mcp, "DELETE", false, Route::Serve(Delete)),
        (Target::Mcp, "PUT", false, Route::NotAllowed("GET, POST, DELETE")),
        (Target::Status, "GET", false, Route::Serve(Status)),
        #[cfg(any(feature = "consent", feature = "cli", feature = "secrets"))]
        (Target::Status, "POST", false, Route::Serve(StatusForm)),
        #[cfg(any(feature = "consent", feature = "cli", feature = "secrets"))]
        (Target::Status, "PUT", false, Route::NotAllowed("GET, POST")),
        #[cfg(not(any(feature = "consent", feature = "cli", feature = "secrets")))]
        (Target::Status, "POST", false, Route::NotAllowed("GET")),
        (Target::Metrics, "GET", false, Route::Serve(Metrics)),
        (Target::Metrics, "DELETE", false, Route::NotAllowed("GET")),
        (Target::Sse, "GET", false, Route::Serve(Sse)),
        (Target::Sse, "POST", false, Route::NotAllowed("GET")),
        (Target::Messages, "POST", false, Route::Serve(Messages)),
        (Target::Messages, "GET", false, Route::NotAllowed("POST")),
        // Another principal's session is unknown, whatever the method.
        (Target::Mcp, "PUT", true, Route::Refuse(ended())),
        (Target::Messages, "POST", true, Route::Refuse(ended())),
    ];
    for (target, method, foreign, want) in rows {
        assert_eq!(route(*target, method, *foreign), *want, "{target:?} {method} foreign {foreign}");
    }
    #[cfg(feature = "consent")]
    for (method, want) in [("GET", Route::Serve(Approvals)), ("POST", Route::NotAllowed("GET"))] {
        assert_eq!(route(Target::Approvals, method, false), want, "/approvals {method}");
    }
    let cfg = crate::http::HttpConfig::new("127.0.0.1:0".parse().unwrap());
    let paths = [
        ("/mcp", Some(Target::Mcp)),
        ("/health", Some(Target::Health)),
        ("/sse", Some(Target::Sse)),
        ("/other", None),
    ];
    for (path, want) in paths {
        assert_eq!(Target::of(path, &cfg), want, "{path}");
    }
    #[cfg(feature = "consent")]
    for (path, want) in [
        ("/approvals", Some(Target::Approvals)),
        ("/approvals/", Some(Target::Approvals)),
        ("/approvals/12", Some(Target::Approval(12))),
        ("/approvals/x", None),
        ("/approvals/1/2", None),
        ("/approvalsx", None),
    ] {
        assert_eq!(Target::of(path, &cfg), want, "{path}");
    }
    let no_sse = crate::http::HttpConfig { legacy_sse: false, ..cfg };
    assert_eq!(Target::of("/messages", &no_sse), None);
}

// covers: streamable-http-get-sse-or-405
#[test]
fn get_opens_a_live_sessions_stream() {
    let sse = "Accept: text/event-stream";
    // (session, Last-Event-ID, priming) or the refusal's status.
    type Opened<'a> = Result<(&'a str, Option<&'a str>, bool), u16>;
    let rows: &[(&str, &[&str], Known, Opened)] = &[
        ("a live session", &[sse, "Mcp-Session-Id: s1"], LIVE, Ok(("s1", None, false))),
        ("2025-11-25 primes", &[sse, "Mcp-Session-Id: s1"], live(Revision::V2025_11_25), Ok(("s1", None, true))),
        ("2025-06-18 does not", &[sse, "Mcp-Session-Id: s1"], live(Revision::V2025_06_18), Ok(("s1", None, false))),
        ("a resumption", &[sse, "Mcp-Session-Id: s1", "Last-Event-ID: 4-9"], LIVE, Ok(("s1", Some("4-9"), false))),
        ("no SSE accepted", &["Accept: application/json", "Mcp-Session-Id: s1"], LIVE, Err(406)),
        ("no Accept", &["Mcp-Session-Id: s1"], LIVE, Err(406)),
        ("no session named", &[sse], LIVE, Err(400)),
        ("an unknown session", &[sse, "Mcp-Session-Id: gone"], Known::Unknown, Err(404)),
    ];
    for (what, fields, session, want) in rows {
        let req = head("GET /mcp HTTP/1.1", fields);
        let got = get(&req, &knows(*session)).map(|o| (o.sid, o.last_event_id, o.prime)).map_err(|r| r.status);
        assert_eq!(got, *want, "{what}");
    }
}

#[test]
fn delete_ends_a_live_session() {
    let rows: &[(&[&str], Known, Result<&str, u16>)] = &[
        (&["Mcp-Session-Id: s1"], LIVE, Ok("s1")),
        (&["Mcp-Session-Id: gone"], Known::Unknown, Err(404)),
        (&[], LIVE, Err(400)),
    ];
    for (fields, session, want) in rows {
        let req = head("DELETE /mcp HTTP/1.1", fields);
        assert_eq!(delete(&req, &knows(*session)).map_err(|r| r.status), *want, "{fields:?}");
    }
}

#[test]
fn bodies_and_streams_the_client_accepts() {
    let rows: &[(&[&str], Option<u16>, bool)] = &[
        (&["Content-Type: application/json"], None, true),
        (&["Content-Type: Application/JSON; charset=utf-8", "Accept: application/json, text/event-stream"], None, true),
        (&["Content-Type: text/plain", "Accept: */*"], Some(415), true),
        (&["Accept: application/json"], Some(415), false),
        (&["Content-Type: application/json", "Accept: text/*"], None, true),
    ];
    for (fields, body, sse) in rows {
        let req = head("POST /mcp HTTP/1.1", fields);
        assert_eq!(json_body(&req).map(|r| r.status), *body, "{fields:?}");
        assert_eq!(sse_ok(&req), *sse, "{fields:?}");
        assert_eq!(legacy_sse(&req).map(|r| r.status), (!sse).then_some(406), "{fields:?}");
    }
    let req = head("POST /messages?x=1&sessionId=abc HTTP/1.1", &[]);
    assert_eq!(legacy_session_of(&req), "abc");
}

// covers: streamable-http-unknown-method-404, streamable-http-unsupported-version-400, streamable-http-server-202-for-non-request
#[test]
fn the_status_of_an_answer_follows_its_error_in_2026_only() {
    let err = |code, retry_after_s| Some(Outcome::Error { code, retry_after_s });
    // (modern, batch, what the hub said) → (status, Retry-After).
    type Row = (bool, bool, Option<Outcome>, (u16, Option<u64>));
    let rows: &[Row] = &[
        (true, false, Some(Outcome::Result), (200, None)),
        (true, false, Some(Outcome::ToolError), (200, None)),
        (true, false, None, (200, None)),
        (true, false, err(-32601, None), (404, None)),
        (true, false, err(-32602, None), (400, None)),
        (true, false, err(-32020, None), (400, None)),
        (true, false, err(-32021, None), (400, None)),
        (true, false, err(-32022, None), (400, None)),
        (true, false, err(-32603, None), (200, None)),
        (true, false, err(-32600, Some(7)), (429, Some(7))),
        (false, false, err(-32601, None), (200, None)),
        (false, false, err(-32600, Some(7)), (200, Some(7))),
        (false, true, err(-32600, Some(7)), (200, None)),
    ];
    for (modern, batch, outcome, want) in rows {
        assert_eq!(answer_status(*modern, *batch, *outcome), *want, "modern {modern} batch {batch} {outcome:?}");
    }
    assert_eq!([without_requests(false, false), without_requests(true, true), without_requests(true, false)], [202, 200, 400]);
    assert_eq!(unanswered(false, 8).status, 404);
    let over = unanswered(true, 8);
    assert_eq!((over.status, over.code, over.message.contains("over 8 messages")), (500, ErrorCode::InternalError, true));
}

#[test]
fn a_posts_answer_is_json_until_something_must_stream() {
    let t0 = Instant::now();
    let ok = Came::Response(Outcome::Result);
    let limited = Came::Response(Outcome::Error { code: -32600, retry_after_s: Some(7) });
    let json = |status| End::Json { status, retry_after_s: None };
    let (hold, stream, more) = (Step::Hold, Step::Stream { start: true }, Step::Stream { start: false });
    // (what, responses awaited, SSE accepted, modern, batch, what comes) →
    // the steps, then the end (`None`: still waiting).
    type Row<'a> = (&'a str, usize, bool, bool, bool, &'a [Came], &'a [Step], Option<End>);
    let rows: &[Row] = &[
        ("one response", 1, true, false, false, &[ok], &[hold], Some(json(200))),
        ("a batch's two", 2, true, false, true, &[ok, ok], &[hold, hold], Some(json(200))),
        ("one of two so far", 2, true, false, true, &[ok], &[hold], None),
        ("a notification first streams", 1, true, false, false, &[Came::Other, ok], &[stream, more], Some(End::Stream)),
        ("streams even to a JSON-only client", 1, false, false, false, &[Came::Other], &[stream], None),
        ("held, then streamed with the rest", 2, true, false, true, &[ok, Came::Other, ok], &[hold, stream, more], Some(End::Stream)),
        ("a long call streams its keep-alives", 1, true, false, false, &[Came::Tick(t0), Came::Tick(t0), ok], &[Step::Ping { start: true }, Step::Ping { start: false }, more], Some(End::Stream)),
        ("a JSON-only client sleeps", 1, false, false, false, &[Came::Tick(t0), ok], &[Step::Sleep(t0 + QUIET), hold], Some(json(200))),
        ("the queue closed first", 2, true, false, true, &[ok, Came::Closed], &[hold, Step::End(End::Unanswered)], None),
        ("the queue closed while streaming", 2, true, false, true, &[Came::Other, Came::Closed], &[stream, Step::End(End::Stream)], None),
        ("the client left", 1, true, false, false, &[Came::PeerGone], &[Step::Leave], None),
        ("a 2026 limit refusal", 1, true, true, false, &[limited], &[hold], Some(End::Json { status: 429, retry_after_s: Some(7) })),
        ("a legacy limit refusal", 1, true, false, false, &[limited], &[hold], Some(End::Json { status: 200, retry_after_s: Some(7) })),
        ("a 2026 unknown method", 1, true, true, false, &[Came::Response(Outcome::Error { code: -32601, retry_after_s: None })], &[hold], Some(json(404))),
    ];
    for (what, awaited, sse_ok, modern, batch, came, steps, end) in rows {
        let mut a = Answering::new(*awaited, *sse_ok, *modern, *batch);
        let got: Vec<Step> = came.iter().map(|c| a.on(*c)).collect();
        assert_eq!((got.as_slice(), a.done()), (*steps, *end), "{what}");
    }
}

#[test]
fn paths_health_and_the_hop_before_authentication() {
    let cfg = crate::http::HttpConfig::new("127.0.0.1:0".parse().unwrap());
    let rows: &[(&str, Result<Target, u16>)] = &[
        ("/mcp", Ok(Target::Mcp)),
        ("/health", Ok(Target::Health)),
        ("/metrics", Ok(Target::Metrics)),
        ("/other", Err(404)),
        ("/mcp/", Err(404)),
    ];
    for (path, want) in rows {
        assert_eq!(target(path, &cfg).map_err(|r| r.status), *want, "{path}");
    }
    assert_eq!(target("/x", &cfg).unwrap_err().message, "Not found: the MCP endpoint is /mcp");
    let rows: &[(&str, Result<&[u8], &str>)] = &[("GET", Ok(b"ok")), ("HEAD", Ok(b"")), ("POST", Err("GET, HEAD")), ("DELETE", Err("GET, HEAD"))];
    for (method, want) in rows {
        assert_eq!(health(method), *want, "{method}");
    }
    // `/ready`: 503 while a required server is not ready; only the count, without authentication.
    assert_eq!(target("/ready", &cfg).map_err(|r| r.status), Ok(Target::Ready));
    let rows: &[(&str, usize, Result<(u16, &str), &str>)] = &[
        ("GET", 0, Ok((200, r#"{"ready":true,"requiredNotReady":0}"#))),
        ("GET", 2, Ok((503, r#"{"ready":false,"requiredNotReady":2}"#))),
        ("HEAD", 0, Ok((200, ""))),
        ("HEAD", 1, Ok((503, ""))),
        ("POST", 0, Err("GET, HEAD")),
    ];
    for (method, n, want) in rows {
        assert_eq!(ready(method, *n).as_ref().map(|(s, b)| (*s, b.as_str())).map_err(|e| *e), *want, "{method} {n}");
    }
    // What another replica may pass on: the sessions' endpoints and the
    // calls waiting for approval here.
    let rows: &[(Option<Target>, Result<Target, u16>)] = &[
        (Some(Target::Mcp), Ok(Target::Mcp)),
        (Some(Target::Messages), Ok(Target::Messages)),
        #[cfg(feature = "consent")]
        (Some(Target::Approval(3)), Ok(Target::Approval(3))),
        #[cfg(feature = "consent")]
        (Some(Target::Approvals), Err(404)),
        (Some(Target::Status), Err(404)),
        (Some(Target::Health), Err(404)),
        (None, Err(404)),
    ];
    for (t, want) in rows {
        assert_eq!(relayed(*t).map_err(|r| r.status), *want, "{t:?}");
    }
    assert_eq!([post_only("POST"), post_only("GET")], [None, Some("POST")]);
    assert_eq!(not_a_replica().status, 404);
}

#[test]
fn the_listeners_own_refusals() {
    let rows: &[(Refusal<'static>, u16, &str)] = &[
        (ended_meanwhile(), 404, "Not found: the session ended"),
        (second_stream(), 409, "Conflict: this session already has an open GET stream"),
        (metrics_off(), 404, "Not found: metrics are off (\"policy\": {\"metrics\": false})"),
        (unknown_legacy_session(), 404, "Not found: unknown or ended session; reconnect to /sse"),
        (ended(), 404, "Not found: unknown or ended session"),
    ];
    for (r, status, message) in rows {
        assert_eq!((r.status, r.code, r.message.as_ref(), r.id, r.retry_after_s), (*status, ErrorCode::InvalidRequest, *message, None, None));
    }
}

#[test]
fn refused_credentials_are_answered_with_their_challenge() {
    use crate::http::auth::{denial, Denial, OAuthSettings, Reject};
    let oauth = OAuthSettings { issuer: "https://as.example".into(), audience: "https://mcp.example/mcp".into(), scopes: vec!["read".into()], ..Default::default() };
    let prm = "resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource/mcp\"";
    let why = |s: &str| s.to_string();
    let deny = |status, message: &str, challenge: Option<String>, retry_after_s| Denial { status, message: message.into(), challenge, retry_after_s };
    // (refusal, OAuth on) → the answer.
    let rows: &[(Reject, bool, Denial)] = &[
        (Reject::BadRequest("Bad request: two"), false, deny(400, "Bad request: two", None, None)),
        (
            Reject::Unauthorized { invalid: false, why: why("send a token") },
            false,
            deny(401, "Unauthorized: send a token", Some("Bearer realm=\"mcpx\"".into()), None),
        ),
        (
            Reject::Unauthorized { invalid: true, why: why("expired") },
            false,
            deny(401, "Unauthorized: expired", Some("Bearer realm=\"mcpx\", error=\"invalid_token\", error_description=\"expired\"".into()), None),
        ),
        (
            Reject::Unauthorized { invalid: false, why: why("send a token") },
            true,
            deny(401, "Unauthorized: send a token", Some(format!("Bearer {prm}, scope=\"read\"")), None),
        ),
        (
            Reject::InsufficientScope { need: vec!["read".into(), "write".into()], why: why("needs \"write\"") },
            true,
            deny(
                403,
                "Forbidden: needs \"write\"",
                Some(format!("Bearer {prm}, scope=\"read write\", error=\"insufficient_scope\", error_description=\"needs 'write'\"")),
                None,
            ),
        ),
        (Reject::Unavailable(why("no keys")), true, deny(503, "Service unavailable: no keys", None, None)),
        (Reject::Throttled { retry_after_s: 30, why: why("slow down") }, true, deny(429, "Too many requests: slow down", None, Some(30))),
    ];
    for (r, on, want) in rows {
        assert_eq!(denial(r, on.then_some(&oauth)), *want, "{r:?} oauth {on}");
    }
}

#[cfg(feature = "cluster")]
#[test]
fn a_session_held_elsewhere_is_relayed_to_a_known_peer_only() {
    let peers = |r: &str| matches!(r, "b" | "c");
    // (the replica the entry names) → who serves the request; this replica is "a".
    let rows: &[(Option<&str>, Holder)] = &[
        (None, Holder::Nobody),
        (Some("a"), Holder::Me),
        (Some("b"), Holder::Peer("b")),
        (Some("c"), Holder::Peer("c")),
        (Some("z"), Holder::Nobody),
        (Some(""), Holder::Nobody),
    ];
    for (owner, want) in rows {
        assert_eq!(holder(*owner, "a", peers), *want, "{owner:?}");
    }
    // A gone replica's session goes on here for a POST or GET to the MCP endpoint only.
    let rows: &[(&str, bool, bool)] = &[("POST", true, true), ("GET", true, true), ("DELETE", true, false), ("POST", false, false), ("GET", false, false)];
    for (method, mcp, want) in rows {
        assert_eq!(may_take_over(method, *mcp), *want, "{method} mcp {mcp}");
    }
    let r = directory_unavailable("down");
    assert_eq!((r.status, r.code, r.retry_after_s), (503, ErrorCode::InternalError, Some(2)));
    assert_eq!(r.message, "Service unavailable: cannot find which replica holds this session (down); retry shortly");
    let r = holder_gone("x");
    assert_eq!((r.status, r.code, r.message.as_ref()), (404, ErrorCode::InvalidRequest, "Not found: unknown or ended session (x); initialize a new one"));
}

#[test]
fn the_messages_of_a_post_in_a_session_are_sorted() {
    let sorted = |s: Sorted<'_>| match s {
        Sorted::Request(env) => format!("request {}", env.method_str().unwrap_or("")),
        Sorted::Feed(env) => format!("feed {}", env.method_str().unwrap_or("")),
        Sorted::Answer(error) => format!("answer {}", String::from_utf8_lossy(&error)),
        Sorted::Drop => "drop".into(),
    };
    let in_flight_error = r#"answer {"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Invalid request: this request id is already in flight"}}"#;
    // (the POST's body, the ids in flight) → what becomes of each message.
    type Row<'a> = (&'a str, &'a [&'a [u8]], &'a [&'a str]);
    let rows: &[Row] = &[
        (LIST, &[], &["request tools/list"]),
        (LIST, &[b"2"], &[in_flight_error]),
        (LIST, &[b"7"], &["request tools/list"]),
        (NOTE, &[], &["feed notifications/initialized"]),
        (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, &[], &["feed "]),
        (BATCH, &[], &["request tools/list", "feed notifications/initialized"]),
        (BATCH, &[b"2"], &[in_flight_error, "feed notifications/initialized"]),
    ];
    for (body, in_flight, want) in rows {
        let msg = Message::parse(body.as_bytes()).expect("a JSON-RPC body");
        let batch = matches!(msg, Message::Batch(_));
        let els: Vec<_> = match &msg {
            Message::Single(e) => vec![Ok(*e)],
            Message::Batch(b) => b.elements().collect(),
        };
        let got: Vec<String> = els.into_iter().map(|el| sorted(sort(el, batch, |id| in_flight.contains(&id)))).collect();
        assert_eq!(got, *want, "{body} in flight {in_flight:?}");
    }
    // Invalid elements of a batch: answered when they carry an id, else
    // dropped (they may have been notifications); a single one always.
    let msg = Message::parse(br#"[{"jsonrpc":"2.0","id":9},{"jsonrpc":"2.0"},1]"#).expect("a batch");
    let Message::Batch(b) = msg else { panic!("a batch") };
    let got: Vec<bool> = b.elements().map(|el| matches!(sort(el, true, |_| false), Sorted::Answer(_))).collect();
    assert_eq!(got, [true, false, false]);
    let got: Vec<bool> = b.elements().map(|el| matches!(sort(el, false, |_| false), Sorted::Answer(_))).collect();
    assert_eq!(got, [true, true, true]);
}

#[test]
fn a_posts_stream_is_resumable_from_2025_03_26_and_primed_from_2025_11_25() {
    let old = Some(Revision::V2024_11_05);
    let (r0326, r1125) = (Some(Revision::V2025_03_26), Some(Revision::V2025_11_25));
    // (the session's revision, modern, SSE accepted) → (resumable, priming).
    type Row = (Option<Revision>, bool, bool, (bool, bool));
    let rows: &[Row] = &[
        (None, false, true, (false, false)),
        (old, false, true, (false, false)),
        (r0326, false, true, (true, false)),
        (Some(Revision::V2025_06_18), false, true, (true, false)),
        (r1125, false, true, (true, true)),
        (r1125, false, false, (false, false)),
        (r1125, true, true, (false, false)),
    ];
    for (rev, modern, sse_ok, want) in rows {
        assert_eq!(post_stream(*rev, *modern, *sse_ok), *want, "{rev:?} modern {modern} sse {sse_ok}");
    }
}

#[test]
fn connections_kept_and_refused_over_the_limit() {
    // (answered keeping it, the request's keep-alive, body read, has a body) → kept.
    type Row = ((bool, bool, bool, bool), bool);
    let rows: &[Row] = &[
        ((true, true, false, false), true),
        ((true, true, true, true), true),
        ((true, true, false, true), false),
        ((true, false, true, true), false),
        ((false, true, true, true), false),
    ];
    for ((answered, keep_alive, read, has), want) in rows {
        assert_eq!(keep_connection(*answered, *keep_alive, *read, *has), *want, "{answered} {keep_alive} {read} {has}");
    }
    // (the last warning, now) → warn again.
    let rows: &[(Option<u64>, u64, bool)] = &[(None, 5, true), (Some(1_000), 10_999, false), (Some(1_000), 11_000, true)];
    for (last, now, warn) in rows {
        let o = overloaded(64, *last, *now);
        assert_eq!(o.warn, *warn, "{last:?} {now}");
        assert_eq!((o.refusal.status, o.refusal.code), (503, ErrorCode::InternalError));
        assert_eq!(o.refusal.message, "mcpx has 64 HTTP connections open (its limit); retry later");
    }
    assert_eq!([linger_when_over(128, 64), linger_when_over(129, 64)], [true, false]);
}
