//! End-to-end tests: a client talking to `serve` over in-memory pipes.

use super::{serve, Config};
use serde_json::{json, Value};
use smol::channel::{unbounded, Receiver, Sender};
use smol::future::{self, Future};
use smol::io::{AsyncRead, AsyncWrite};
use crate::process::exec::Executor;
use smol::Timer;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

type RecvFuture = Pin<Box<dyn Future<Output = Option<Vec<u8>>>>>;

/// Reads what the test sends.
struct ChanReader {
    rx: Rc<Receiver<Vec<u8>>>,
    buf: Vec<u8>,
    recv: Option<RecvFuture>,
}

impl AsyncRead for ChanReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut [u8],
    ) -> Poll<std::io::Result<usize>> {
        loop {
            if !self.buf.is_empty() {
                let n = out.len().min(self.buf.len());
                out[..n].copy_from_slice(&self.buf[..n]);
                self.buf.drain(..n);
                return Poll::Ready(Ok(n));
            }
            if self.recv.is_none() {
                let rx = self.rx.clone();
                self.recv = Some(Box::pin(async move { rx.recv().await.ok() }));
            }
            match self.recv.as_mut().unwrap().as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(Ok(0)),
                Poll::Ready(Some(b)) => {
                    self.recv = None;
                    self.buf = b;
                }
            }
        }
    }
}

/// Collects what the server writes, one message per line.
struct ChanWriter {
    tx: Sender<Value>,
    partial: Vec<u8>,
}

impl AsyncWrite for ChanWriter {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.partial.extend_from_slice(data);
        while let Some(i) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=i).collect();
            let v: Value = serde_json::from_slice(&line).expect("server wrote invalid JSON");
            let _ = self.tx.try_send(v);
        }
        Poll::Ready(Ok(data.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

struct Client {
    tx: Sender<Vec<u8>>,
    rx: Receiver<Value>,
}

impl Client {
    async fn raw(&self, s: &str) {
        self.tx.send(format!("{s}\n").into_bytes()).await.unwrap();
    }
    async fn send(&self, v: Value) {
        self.raw(&v.to_string()).await
    }
    async fn recv(&self) -> Value {
        future::or(
            async { self.rx.recv().await.expect("server closed") },
            async {
                Timer::after(Duration::from_secs(5)).await;
                panic!("no message from the server within 5 s")
            },
        )
        .await
    }
    /// The next message, or None if nothing arrives within `ms`.
    async fn recv_within(&self, ms: u64) -> Option<Value> {
        future::or(async { self.rx.recv().await.ok() }, async {
            Timer::after(Duration::from_millis(ms)).await;
            None
        })
        .await
    }
    /// Send a request and return the response, collecting anything else seen meanwhile.
    async fn call(&self, id: u64, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let mut other = Vec::new();
        loop {
            let m = self.recv().await;
            if m.get("id") == Some(&json!(id)) && m.get("method").is_none() {
                return (m, other);
            }
            other.push(m);
        }
    }
    async fn result(&self, id: u64, method: &str, params: Value) -> Value {
        let (m, _) = self.call(id, method, params).await;
        m.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {m}"))
    }
    async fn error(&self, id: u64, method: &str, params: Value) -> Value {
        let (m, _) = self.call(id, method, params).await;
        m.get("error")
            .cloned()
            .unwrap_or_else(|| panic!("{method} did not fail: {m}"))
    }
    async fn initialize(&self, version: &str, caps: Value) -> Value {
        let r = self
            .result(
                0,
                "initialize",
                json!({"protocolVersion": version, "capabilities": caps,
                "clientInfo": {"name": "test", "version": "0"}}),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        r
    }
}

fn run<F, Fut>(args: &[&str], test: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: Future<Output = ()> + 'static,
{
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    run_with(Config::parse(&args).unwrap(), test)
}

fn run_with<F, Fut>(cfg: Config, test: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: Future<Output = ()> + 'static,
{
    let ex = Rc::new(Executor::new());
    let (in_tx, in_rx) = unbounded();
    let (out_tx, out_rx) = unbounded();
    let reader = ChanReader {
        rx: Rc::new(in_rx),
        buf: Vec::new(),
        recv: None,
    };
    let writer = ChanWriter {
        tx: out_tx,
        partial: Vec::new(),
    };
    let server = ex.spawn(serve(cfg, ex.clone(), reader, writer));
    let client = Client {
        tx: in_tx,
        rx: out_rx,
    };
    crate::process::reactor::block_on(ex.run(async move {
        test(client).await;
        drop(server);
    }));
}

#[test]
fn negotiation_echoes_or_counteroffers() {
    run(&[], |c| async move {
        let r = c.initialize("2025-03-26", json!({})).await;
        assert_eq!(r["protocolVersion"], "2025-03-26");
        assert_eq!(r["serverInfo"]["name"], "mcpx-example");
        assert!(r["serverInfo"].get("title").is_none());
        assert!(r["capabilities"]["completions"].is_object());
    });
    run(
        &["--name", "old", "--revisions", "2024-11-05,2025-03-26"],
        |c| async move {
            let r = c.initialize("2025-11-25", json!({})).await;
            assert_eq!(r["protocolVersion"], "2025-03-26");
            assert_eq!(r["serverInfo"]["name"], "old");
        },
    );
    run(&["--revisions", "2024-11-05"], |c| async move {
        let r = c.initialize("2099-01-01", json!({})).await;
        assert_eq!(r["protocolVersion"], "2024-11-05");
        assert!(r["capabilities"].get("completions").is_none());
        let tools = c.result(1, "tools/list", json!({})).await;
        assert!(tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["name"] != "test_audio_content"));
    });
}

#[test]
fn bad_input_never_crashes() {
    run(&[], |c| async move {
        c.raw("{not json").await;
        let m = c.recv().await;
        assert_eq!(m["error"]["code"], -32700);
        assert_eq!(m["id"], Value::Null);
        c.raw("[]").await;
        assert_eq!(c.recv().await["error"]["code"], -32600);
        c.raw(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#).await;
        assert_eq!(c.recv().await["error"]["code"], -32600);
        // Not initialized yet.
        assert_eq!(c.error(1, "tools/list", json!({})).await["code"], -32600);
        assert_eq!(c.result(2, "ping", json!({})).await, json!({}));
        c.initialize("2025-11-25", json!({})).await;
        assert_eq!(
            c.error(3, "no/such/method", json!({})).await["code"],
            -32601
        );
        assert_eq!(
            c.error(4, "tools/call", json!({"arguments": {}})).await["code"],
            -32602
        );
        assert_eq!(
            c.error(5, "tools/call", json!({"name": "nope"})).await["code"],
            -32602
        );
        assert_eq!(
            c.error(6, "resources/read", json!({"uri": 7})).await["code"],
            -32602
        );
        assert_eq!(
            c.error(7, "logging/setLevel", json!({"level": "loud"}))
                .await["code"],
            -32602
        );
        assert_eq!(
            c.error(8, "tools/list", json!({"cursor": "bogus"})).await["code"],
            -32602
        );
        assert_eq!(
            c.error(
                9,
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {}})
            )
            .await["code"],
            -32600
        );
        // A legacy-only revision set does not know server/discover... (default set does: see modern tests)
        assert_eq!(c.result(10, "ping", json!({})).await, json!({}));
    });
    run(&["--revisions", "2025-06-18,2025-11-25"], |c| async move {
        let e = c
            .error(
                1,
                "server/discover",
                json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}}),
            )
            .await;
        assert_eq!(e["code"], -32601);
    });
}

#[test]
fn line_framing() {
    let cfg = Config {
        max_line: 64,
        ..Config::default()
    };
    run_with(cfg, |c| async move {
        // CRLF, blank lines, a line split across writes
        c.tx.send(
            b"\r\n  \n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n{\"jsonrpc\":".to_vec(),
        )
        .await
        .unwrap();
        assert_eq!(c.recv().await["id"], 1);
        c.tx.send(b"\"2.0\",\"id\":2,\"method\":\"ping\"}\n".to_vec())
            .await
            .unwrap();
        assert_eq!(c.recv().await["id"], 2);
        // an over-long line is reported and skipped; the next one is served
        let long = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
            "y".repeat(100)
        );
        c.raw(&long).await;
        let e = c.recv().await;
        assert_eq!(e["error"]["code"], -32600);
        assert_eq!(e["id"], Value::Null);
        assert_eq!(c.result(4, "ping", json!({})).await, json!({}));
        // a last line without its newline is still answered at end of input
        c.tx.send(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}".to_vec())
            .await
            .unwrap();
        c.tx.close();
        assert_eq!(c.recv().await["id"], 5);
    });
}

#[test]
fn slow_tool_does_not_block_and_can_be_cancelled() {
    run(&[], |c| async move {
        c.initialize("2025-11-25", json!({})).await;
        c.send(json!({"jsonrpc": "2.0", "id": "s1", "method": "tools/call",
            "params": {"name": "slow", "arguments": {"seconds": 0.6, "steps": 3}, "_meta": {"progressToken": 9}}}))
            .await;
        // ping is answered while slow runs
        assert_eq!(c.result(1, "ping", json!({})).await, json!({}));
        // first progress arrives, then cancel
        let p = c.recv().await;
        assert_eq!(p["method"], "notifications/progress");
        assert_eq!(p["params"]["progressToken"], 9);
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "s1"}})).await;
        assert_eq!(
            c.recv_within(800).await,
            None,
            "a cancelled request sends nothing more"
        );
        // and an uncancelled one finishes with a result
        let (r, notes) = c
            .call(
                2,
                "tools/call",
                json!({"name": "slow", "arguments": {"seconds": 0.1, "steps": 2},
            "_meta": {"progressToken": "t"}}),
            )
            .await;
        assert!(r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Finished"));
        assert_eq!(notes.len(), 2);
    });
}

#[test]
fn sampling_round_trip_and_capability_check() {
    run(&[], |c| async move {
        c.initialize("2025-11-25", json!({"sampling": {}, "roots": {}}))
            .await;
        c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "test_sampling", "arguments": {"prompt": "Test prompt for sampling"}}}))
            .await;
        let req = c.recv().await;
        assert_eq!(req["method"], "sampling/createMessage");
        assert_eq!(req["params"]["maxTokens"], 100);
        assert_eq!(
            req["params"]["messages"][0]["content"]["text"],
            "Test prompt for sampling"
        );
        c.send(
            json!({"jsonrpc": "2.0", "id": req["id"], "result": {"role": "assistant",
            "content": {"type": "text", "text": "This is a test response from the client"},
            "model": "test-model", "stopReason": "endTurn"}}),
        )
        .await;
        let r = c.recv().await;
        assert_eq!(r["id"], 1);
        assert_eq!(
            r["result"]["content"][0]["text"],
            "LLM response: This is a test response from the client"
        );
        // elicitation was not declared: tool error, no request sent
        let r = c
            .result(
                2,
                "tools/call",
                json!({"name": "test_elicitation", "arguments": {"message": "hi"}}),
            )
            .await;
        assert_eq!(r["isError"], true);
        // roots: the client answers with an error
        c.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_roots"}})).await;
        let req = c.recv().await;
        assert_eq!(req["method"], "roots/list");
        c.send(json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -1, "message": "no"}}))
            .await;
        let r = c.recv().await;
        assert_eq!(r["result"]["isError"], true);
    });
}

#[test]
fn cancelling_a_waiting_tool_cancels_its_client_request() {
    run(&[], |c| async move {
        c.initialize("2025-11-25", json!({"elicitation": {}})).await;
        c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask_user"}})).await;
        let req = c.recv().await;
        assert_eq!(req["method"], "elicitation/create");
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})).await;
        let n = c.recv().await;
        assert_eq!(n["method"], "notifications/cancelled");
        assert_eq!(n["params"]["requestId"], req["id"]);
        assert_eq!(c.recv_within(200).await, None);
    });
}

#[test]
fn elicitation_fixtures_have_the_checked_shapes() {
    run(&[], |c| async move {
        c.initialize("2025-11-25", json!({"elicitation": {}})).await;
        c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "test_elicitation_sep1034_defaults", "arguments": {}}}))
            .await;
        let req = c.recv().await;
        let p = &req["params"]["requestedSchema"]["properties"];
        assert_eq!(p["name"]["default"], "John Doe");
        assert_eq!(p["age"]["default"], 30);
        assert_eq!(p["score"]["default"], 95.5);
        assert_eq!(p["status"]["default"], "active");
        assert_eq!(p["verified"]["default"], true);
        c.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept",
            "content": {"name": "Jane Smith", "age": 25, "score": 88.0, "status": "inactive", "verified": false}}}))
            .await;
        assert!(c.recv().await["result"]["content"][0]["text"].is_string());
    });
}

#[test]
fn notifications_for_list_changes_and_subscriptions() {
    run(&[], |c| async move {
        c.initialize("2025-11-25", json!({})).await;
        let (r, notes) = c
            .call(1, "tools/call", json!({"name": "toggle_tool"}))
            .await;
        assert_eq!(r["result"]["content"][0]["text"], "dynamic_tool added.");
        assert_eq!(notes[0]["method"], "notifications/tools/list_changed");
        let tools = c.result(2, "tools/list", json!({})).await;
        assert!(tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "dynamic_tool"));
        assert_eq!(
            c.result(
                3,
                "resources/subscribe",
                json!({"uri": "test://watched-resource"})
            )
            .await,
            json!({})
        );
        let (_, notes) = c
            .call(4, "tools/call", json!({"name": "update_resource"}))
            .await;
        assert_eq!(notes[0]["method"], "notifications/resources/updated");
        let r = c
            .result(
                5,
                "resources/read",
                json!({"uri": "test://watched-resource"}),
            )
            .await;
        assert!(r["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("version 1"));
        assert_eq!(
            c.result(
                6,
                "resources/unsubscribe",
                json!({"uri": "test://watched-resource"})
            )
            .await,
            json!({})
        );
        let (_, notes) = c
            .call(7, "tools/call", json!({"name": "update_resource"}))
            .await;
        assert!(notes.is_empty());
        // logging: nothing before setLevel, then setLevel filters
        let (_, notes) = c
            .call(12, "tools/call", json!({"name": "test_tool_with_logging"}))
            .await;
        assert!(notes.is_empty());
        assert_eq!(
            c.result(8, "logging/setLevel", json!({"level": "warning"}))
                .await,
            json!({})
        );
        let (_, notes) = c
            .call(9, "tools/call", json!({"name": "test_tool_with_logging"}))
            .await;
        assert!(notes.is_empty());
        assert_eq!(
            c.result(10, "logging/setLevel", json!({"level": "debug"}))
                .await,
            json!({})
        );
        let (_, notes) = c
            .call(11, "tools/call", json!({"name": "test_tool_with_logging"}))
            .await;
        assert_eq!(notes.len(), 3);
        assert!(notes.iter().all(|n| n["method"] == "notifications/message"));
    });
}

#[test]
fn pagination_covers_every_item_once() {
    run(&["--page-size", "4"], |c| async move {
        c.initialize("2025-11-25", json!({})).await;
        let mut names = Vec::new();
        let mut cursor: Option<Value> = None;
        let mut id = 1;
        loop {
            let params = match &cursor {
                Some(cur) => json!({"cursor": cur}),
                None => json!({}),
            };
            let r = c.result(id, "tools/list", params).await;
            id += 1;
            let page = r["tools"].as_array().unwrap();
            assert!(page.len() <= 4);
            names.extend(page.iter().map(|t| t["name"].as_str().unwrap().to_string()));
            match r.get("nextCursor") {
                Some(cur) => cursor = Some(cur.clone()),
                None => break,
            }
        }
        let all = super::tools::list(mcpx_core::revision::Revision::V2025_11_25, false);
        assert_eq!(names.len(), all.len());
        let r = c.result(id, "prompts/list", json!({})).await;
        assert!(r.get("nextCursor").is_some());
    });
}

#[test]
fn batch_gets_one_array_reply() {
    run(&[], |c| async move {
        c.initialize("2025-03-26", json!({})).await;
        c.raw(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}]"#).await;
        let r = c.recv().await;
        let arr = r.as_array().unwrap();
        assert_eq!(arr.len(), 2);
        assert_eq!(arr[1]["result"]["content"][0]["text"], "b");
    });
    run(&[], |c| async move {
        c.initialize("2025-06-18", json!({})).await;
        c.raw(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).await;
        let r = c.recv().await;
        assert_eq!(r["error"]["code"], -32600);
        assert_eq!(r["id"], Value::Null);
    });
}

fn meta(caps: Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": caps})
}

fn all_caps() -> Value {
    json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}})
}

#[test]
fn modern_discover_and_validation() {
    run(&[], |c| async move {
        let d = c
            .result(1, "server/discover", json!({"_meta": meta(json!({}))}))
            .await;
        assert_eq!(d["resultType"], "complete");
        assert_eq!(d["supportedVersions"][0], "2026-07-28");
        assert!(d["ttlMs"].is_u64() && d["cacheScope"].is_string());
        assert_eq!(
            d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "mcpx-example"
        );
        assert!(d["capabilities"]["tools"].is_object());
        // -32602 for missing pieces, before any version check
        assert_eq!(
            c.error(2, "server/discover", json!({})).await["code"],
            -32602
        );
        let mut m = meta(json!({}));
        m.as_object_mut()
            .unwrap()
            .remove("io.modelcontextprotocol/clientCapabilities");
        m["io.modelcontextprotocol/protocolVersion"] = "v999".into();
        assert_eq!(
            c.error(3, "server/discover", json!({"_meta": m})).await["code"],
            -32602
        );
        let mut m = meta(json!({}));
        m.as_object_mut()
            .unwrap()
            .remove("io.modelcontextprotocol/clientInfo");
        assert!(c
            .call(4, "server/discover", json!({"_meta": m}))
            .await
            .0
            .get("result")
            .is_some());
        let mut m = meta(json!({}));
        m["io.modelcontextprotocol/protocolVersion"] = "v999.0.0".into();
        let e = c.error(5, "server/discover", json!({"_meta": m})).await;
        assert_eq!(e["code"], -32022);
        assert_eq!(e["data"]["requested"], "v999.0.0");
        assert!(e["data"]["supported"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| d["supportedVersions"].as_array().unwrap().contains(v)));
        // legacy-only methods are not found on the modern wire
        for (i, m) in [
            "initialize",
            "ping",
            "logging/setLevel",
            "resources/subscribe",
            "resources/unsubscribe",
            "unknown/method",
        ]
        .iter()
        .enumerate()
        {
            assert_eq!(
                c.error(10 + i as u64, m, json!({"_meta": meta(json!({}))}))
                    .await["code"],
                -32601,
                "{m}"
            );
        }
        // lists and reads carry resultType and caching hints
        for (i, m) in [
            "tools/list",
            "prompts/list",
            "resources/list",
            "resources/templates/list",
        ]
        .iter()
        .enumerate()
        {
            let r = c
                .result(20 + i as u64, m, json!({"_meta": meta(json!({}))}))
                .await;
            assert_eq!(r["resultType"], "complete");
            assert!(r["ttlMs"].is_u64() && r["cacheScope"].is_string(), "{m}");
        }
        let r = c
            .result(
                30,
                "resources/read",
                json!({"uri": "test://static-text", "_meta": meta(json!({}))}),
            )
            .await;
        assert_eq!(r["cacheScope"], "private");
        let e = c.error(31, "resources/read", json!({"uri": "test://nonexistent-resource-for-conformance-testing", "_meta": meta(json!({}))})).await;
        assert_eq!(e["code"], -32602);
        assert_eq!(
            e["data"]["uri"],
            "test://nonexistent-resource-for-conformance-testing"
        );
        let r = c.result(32, "completion/complete", json!({"_meta": meta(json!({})),
            "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "argument": {"name": "arg1", "value": "test"}})).await;
        assert_eq!(r["resultType"], "complete");
        assert!(r["completion"]["values"].is_array());
    });
}

#[test]
fn modern_tools_mrtr_progress_and_logging() {
    run(&[], |c| async move {
        let call = |id: u64, name: &str, extra: Value, caps: Value| {
            let mut p = json!({"name": name, "arguments": {}, "_meta": meta(caps)});
            for (k, v) in extra.as_object().unwrap() {
                if k == "_meta" {
                    for (mk, mv) in v.as_object().unwrap() {
                        p["_meta"][mk] = mv.clone();
                    }
                } else {
                    p[k] = v.clone();
                }
            }
            (id, p)
        };
        let (id, p) = call(1, "test_simple_text", json!({}), json!({}));
        let r = c.result(id, "tools/call", p).await;
        assert_eq!(r["resultType"], "complete");
        // MRTR: no server->client request, an InputRequiredResult instead
        let (id, p) = call(
            2,
            "test_input_required_result_elicitation",
            json!({}),
            all_caps(),
        );
        let (m, other) = c.call(id, "tools/call", p).await;
        assert!(other.is_empty());
        let r = &m["result"];
        assert_eq!(r["resultType"], "input_required");
        assert_eq!(
            r["inputRequests"]["user_name"]["method"],
            "elicitation/create"
        );
        let (id, p) = call(
            3,
            "test_input_required_result_elicitation",
            json!({"inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}}, "requestState": r["requestState"]}),
            all_caps(),
        );
        let r = c.result(id, "tools/call", p).await;
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["content"][0]["text"], "Hello, Alice!");
        // missing capability
        let (id, p) = call(4, "test_missing_capability", json!({}), json!({}));
        let e = c.error(id, "tools/call", p).await;
        assert_eq!(e["code"], -32021);
        assert!(e["data"]["requiredCapabilities"]["sampling"].is_object());
        // progress before the result
        let (id, p) = call(
            5,
            "test_tool_with_progress",
            json!({"_meta": {"progressToken": "progress-test-1"}}),
            json!({}),
        );
        let (m, notes) = c.call(id, "tools/call", p).await;
        assert_eq!(m["result"]["resultType"], "complete");
        assert_eq!(notes.len(), 3);
        // logs only with a log level in _meta
        let (id, p) = call(6, "test_logging_tool", json!({}), json!({}));
        assert!(c.call(id, "tools/call", p).await.1.is_empty());
        let (id, p) = call(
            7,
            "test_tool_with_logging",
            json!({"_meta": {"io.modelcontextprotocol/logLevel": "info"}}),
            json!({}),
        );
        assert_eq!(c.call(id, "tools/call", p).await.1.len(), 3);
        // prompts flow
        let r = c
            .result(
                8,
                "prompts/get",
                json!({"name": "test_input_required_result_prompt", "_meta": meta(all_caps())}),
            )
            .await;
        assert_eq!(r["resultType"], "input_required");
        let r = c.result(9, "prompts/get", json!({"name": "test_input_required_result_prompt", "_meta": meta(all_caps()),
            "requestState": r["requestState"],
            "inputResponses": {"user_context": {"action": "accept", "content": {"context": "test context"}}}})).await;
        assert!(r["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("test context"));
        // tools/list never input_required
        let r = c
            .result(10, "tools/list", json!({"_meta": meta(all_caps())}))
            .await;
        assert_eq!(r["resultType"], "complete");
    });
}

#[test]
fn modern_subscriptions_listen() {
    run(&[], |c| async move {
        c.send(
            json!({"jsonrpc": "2.0", "id": 100, "method": "subscriptions/listen",
            "params": {"_meta": meta(json!({})), "notifications": {"toolsListChanged": true,
                "resourceSubscriptions": ["test://watched-resource"]}}}),
        )
        .await;
        let ack = c.recv().await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(
            ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            100
        );
        assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);
        c.send(
            json!({"jsonrpc": "2.0", "id": 101, "method": "subscriptions/listen",
            "params": {"_meta": meta(json!({})), "notifications": {"promptsListChanged": true}}}),
        )
        .await;
        assert_eq!(
            c.recv().await["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            101
        );
        let (_, notes) = c
            .call(
                1,
                "tools/call",
                json!({"name": "test_trigger_tool_change", "_meta": meta(json!({}))}),
            )
            .await;
        assert_eq!(
            notes.len(),
            1,
            "only the tools listener hears about tools: {notes:?}"
        );
        assert_eq!(notes[0]["method"], "notifications/tools/list_changed");
        assert_eq!(
            notes[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            100
        );
        let (_, notes) = c
            .call(
                2,
                "tools/call",
                json!({"name": "test_trigger_prompt_change", "_meta": meta(json!({}))}),
            )
            .await;
        assert_eq!(notes.len(), 1);
        assert_eq!(
            notes[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            101
        );
        let (_, notes) = c
            .call(
                3,
                "tools/call",
                json!({"name": "update_resource", "_meta": meta(json!({}))}),
            )
            .await;
        assert_eq!(notes[0]["method"], "notifications/resources/updated");
        // cancelling the listen stream ends it without a response
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 100}})).await;
        let (_, notes) = c
            .call(
                4,
                "tools/call",
                json!({"name": "test_trigger_tool_change", "_meta": meta(json!({}))}),
            )
            .await;
        assert!(notes.is_empty());
    });
}

#[test]
fn modern_only_and_dual_era() {
    run(&["--revisions", "2026-07-28"], |c| async move {
        let e = c
            .error(
                1,
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}),
            )
            .await;
        assert!(e["message"].as_str().unwrap().contains("2026-07-28"));
        assert_eq!(c.error(2, "tools/list", json!({})).await["code"], -32602);
        assert!(c
            .result(3, "tools/list", json!({"_meta": meta(json!({}))}))
            .await["tools"]
            .is_array());
    });
    // a legacy session and stateless requests side by side
    run(&[], |c| async move {
        c.initialize("2025-11-25", json!({"sampling": {}})).await;
        let r = c.result(1, "tools/list", json!({})).await;
        assert!(r.get("resultType").is_none());
        let r = c
            .result(2, "tools/list", json!({"_meta": meta(json!({}))}))
            .await;
        assert_eq!(r["resultType"], "complete");
    });
}

fn task_caps() -> Value {
    json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

#[test]
fn modern_tasks_extension() {
    run(&[], |c| async move {
        let d = c
            .result(1, "server/discover", json!({"_meta": meta(json!({}))}))
            .await;
        assert!(d["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object());
        // without the extension: synchronous, or refused when a task is required
        let r = c
            .result(2, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 0}, "_meta": meta(json!({}))}))
            .await;
        assert_eq!(r["resultType"], "complete");
        let e = c
            .error(
                3,
                "tools/call",
                json!({"name": "failing_job", "_meta": meta(json!({}))}),
            )
            .await;
        assert_eq!(e["code"], -32021);
        assert!(
            e["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"]
                .is_object()
        );
        assert_eq!(
            c.error(
                4,
                "tasks/get",
                json!({"taskId": "x", "_meta": meta(json!({}))})
            )
            .await["code"],
            -32021
        );
        // with it: a task, polled to completion
        let t = c
            .result(5, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 0.1}, "_meta": meta(task_caps())}))
            .await;
        assert_eq!(t["resultType"], "task");
        assert_eq!(t["status"], "working");
        assert!(t["createdAt"].as_str().unwrap().ends_with('Z'));
        let id = t["taskId"].clone();
        Timer::after(Duration::from_millis(300)).await;
        let g = c
            .result(
                6,
                "tasks/get",
                json!({"taskId": id, "_meta": meta(task_caps())}),
            )
            .await;
        assert_eq!(g["status"], "completed");
        assert_eq!(g["resultType"], "complete");
        assert!(g["result"]["content"][0]["text"].is_string());
        // cancel a long one
        let t = c
            .result(7, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 60}, "_meta": meta(task_caps())}))
            .await;
        let ack = c
            .result(
                8,
                "tasks/cancel",
                json!({"taskId": t["taskId"], "_meta": meta(task_caps())}),
            )
            .await;
        assert!(ack.get("status").is_none() && ack["resultType"] == "complete");
        let g = c
            .result(
                9,
                "tasks/get",
                json!({"taskId": t["taskId"], "_meta": meta(task_caps())}),
            )
            .await;
        assert_eq!(g["status"], "cancelled");
        // a task waiting for input, answered in two parts
        let t = c
            .result(
                10,
                "tools/call",
                json!({"name": "multi_input", "_meta": meta(task_caps())}),
            )
            .await;
        let id = t["taskId"].clone();
        let g = c
            .result(
                11,
                "tasks/get",
                json!({"taskId": id, "_meta": meta(task_caps())}),
            )
            .await;
        assert_eq!(g["status"], "input_required");
        assert_eq!(g["inputRequests"].as_object().unwrap().len(), 2);
        let answer = json!({"action": "accept", "content": {"name": "p", "confirm": true}});
        c.result(12, "tasks/update", json!({"taskId": id, "inputResponses": {"first_input": answer}, "_meta": meta(task_caps())}))
            .await;
        let g = c
            .result(
                13,
                "tasks/get",
                json!({"taskId": id, "_meta": meta(task_caps())}),
            )
            .await;
        assert_eq!(g["status"], "input_required");
        assert!(g["inputRequests"].get("first_input").is_none());
        c.result(14, "tasks/update", json!({"taskId": id, "inputResponses": {"second_input": answer}, "_meta": meta(task_caps())}))
            .await;
        let g = c
            .result(
                15,
                "tasks/get",
                json!({"taskId": id, "_meta": meta(task_caps())}),
            )
            .await;
        assert_eq!(g["status"], "completed");
        assert_eq!(
            c.error(
                16,
                "tasks/get",
                json!({"taskId": "nope", "_meta": meta(task_caps())})
            )
            .await["code"],
            -32602
        );
        assert_eq!(
            c.error(17, "tasks/list", json!({"_meta": meta(task_caps())}))
                .await["code"],
            -32601
        );
    });
}

// ------------------------------------------------ 2025-11-25 tasks utility

/// `instance` must be valid as schema definition `def` of 2025-11-25
/// (`$MCPX_SPEC_DIR`, else the shared spec folder beside the repository).
fn valid_2025_11_25(def: &str, instance: &Value) {
    let dir = std::env::var("MCPX_SPEC_DIR")
        .unwrap_or_else(|_| format!("{}/../../shared/spec", env!("CARGO_MANIFEST_DIR")));
    let text = std::fs::read_to_string(format!("{dir}/2025-11-25/schema.json"))
        .expect("the 2025-11-25 schema (shared/spec beside the repository)");
    let mut schema: Value = serde_json::from_str(&text).unwrap();
    assert!(schema["$defs"].get(def).is_some(), "no definition {def}");
    schema["$ref"] = json!(format!("#/$defs/{def}"));
    let errors: Vec<String> = jsonschema::validator_for(&schema)
        .unwrap()
        .iter_errors(instance)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{def}: {errors:?}\n{instance}");
}

const RELATED: &str = "io.modelcontextprotocol/related-task";

/// Messages until the response to `id`, answering nothing.
async fn until_response(c: &Client, id: u64, seen: &mut Vec<Value>) -> Value {
    loop {
        let m = c.recv().await;
        if m.get("id") == Some(&json!(id)) && m.get("method").is_none() {
            return m;
        }
        seen.push(m);
    }
}

fn statuses(seen: &[Value], task: &Value) -> Vec<String> {
    seen.iter()
        .filter(|m| m["method"] == "notifications/tasks/status" && m["params"]["taskId"] == *task)
        .map(|m| {
            valid_2025_11_25("TaskStatusNotification", m);
            assert!(m["params"].get("_meta").is_none(), "status notification with _meta: {m}");
            m["params"]["status"].as_str().unwrap().to_string()
        })
        .collect()
}

// covers: tasks-declare-capability
#[test]
fn core_tasks_capability_and_tool_execution() {
    run(&[], |c| async move {
        let init = c.initialize("2025-11-25", json!({})).await;
        valid_2025_11_25("InitializeResult", &init);
        assert_eq!(
            init["capabilities"]["tasks"],
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
        );
        let tools = c.result(1, "tools/list", json!({})).await;
        valid_2025_11_25("ListToolsResult", &tools);
        let support = |name: &str| {
            tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap()
                ["execution"]["taskSupport"]
                .clone()
        };
        assert_eq!(support("slow_compute"), "optional");
        assert_eq!(support("failing_job"), "required");
        assert_eq!(support("echo"), Value::Null);
    });
    // Older revisions have no tasks.
    run(&[], |c| async move {
        let init = c.initialize("2025-06-18", json!({})).await;
        assert!(init["capabilities"].get("tasks").is_none());
        let tools = c.result(1, "tools/list", json!({})).await;
        assert!(tools["tools"].as_array().unwrap().iter().all(|t| t.get("execution").is_none()));
        let r = c
            .result(2, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 0}, "task": {}}))
            .await;
        assert!(r.get("task").is_none() && r["content"][0]["text"].is_string(), "{r}");
        assert_eq!(c.error(3, "tasks/list", json!({})).await["code"], -32601);
    });
}

// covers: tasks-return-createtaskresult, tasks-begin-working, tasks-timestamps, tasks-ttl-override-report, tasks-poll-interval, tasks-result-blocks, tasks-result-terminal-final, tasks-result-exact, tasks-result-response-related-task, tasks-no-related-task-in-get-list-cancel-results, tasks-status-notification-no-related-task, tasks-get-implies-list, tasks-cancel-terminal-reject, tasks-terminal-immutable, tasks-id-string-receiver-unique, tasks-unbound-secure-ids
#[test]
fn core_task_runs_to_a_result() {
    run(&[], |c| async move {
        c.initialize("2025-11-25", json!({})).await;
        let created = c
            .result(1, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 0.3, "label": "t"},
                "task": {"ttl": 86_400_000}}))
            .await;
        valid_2025_11_25("CreateTaskResult", &created);
        let task = &created["task"];
        assert_eq!(task["status"], "working");
        assert_eq!(task["ttl"], 300_000, "the ttl is capped and reported");
        assert!(task["pollInterval"].as_u64().is_some());
        assert!(task["createdAt"].as_str().unwrap().ends_with('Z'));
        let id = task["taskId"].clone();
        assert!(id.as_str().unwrap().len() >= 32, "an unguessable id: {id}");
        let get = c.result(2, "tasks/get", json!({"taskId": id})).await;
        valid_2025_11_25("GetTaskResult", &get);
        assert_eq!(get["status"], "working");
        assert!(get.get("_meta").is_none());
        // tasks/result blocks until the work is done, then answers the call's result.
        c.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": id}})).await;
        let mut seen = Vec::new();
        let r = until_response(&c, 3, &mut seen).await;
        valid_2025_11_25("JSONRPCResponse", &r);
        let result = &r["result"];
        valid_2025_11_25("CallToolResult", result);
        assert_eq!(result["content"][0]["text"], "t: computed for 0.3 s");
        assert_eq!(result["_meta"][RELATED]["taskId"], id);
        assert_eq!(statuses(&seen, &id), ["completed"]);
        let list = c.result(4, "tasks/list", json!({})).await;
        valid_2025_11_25("ListTasksResult", &list);
        assert_eq!(list["tasks"][0]["taskId"], id);
        assert_eq!(list["tasks"][0]["status"], "completed");
        let e = c.error(5, "tasks/cancel", json!({"taskId": id})).await;
        assert_eq!(e["code"], -32602);
        let get = c.result(6, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(get["status"], "completed");
        // A second tasks/result answers the same at once.
        let again = c.result(7, "tasks/result", json!({"taskId": id})).await;
        assert_eq!(again["content"], result["content"]);
    });
}

// covers: tasks-tool-required, tasks-tool-forbidden-default, tasks-result-same-error, tasks-failed-status-message, tasks-cancel-transition-before-response, tasks-cancelled-sticky, tasks-protocol-errors, tasks-informative-errors, tasks-valid-transitions
#[test]
fn core_task_errors_refusals_and_cancellation() {
    run(&[], |c| async move {
        c.initialize("2025-11-25", json!({})).await;
        let e = c.error(1, "tools/call", json!({"name": "failing_job"})).await;
        assert_eq!(e["code"], -32601, "a required tool without a task: {e}");
        let e = c.error(2, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}, "task": {}})).await;
        assert_eq!(e["code"], -32601, "a forbidden tool with a task: {e}");
        let e = c.error(3, "tools/call", json!({"name": "slow_compute", "task": {"ttl": "long"}})).await;
        assert_eq!(e["code"], -32602);
        // A tool error completes the task; tasks/result carries the isError result.
        let t = c.result(4, "tools/call", json!({"name": "failing_job", "task": {}})).await;
        let r = c.result(5, "tasks/result", json!({"taskId": t["task"]["taskId"]})).await;
        assert_eq!(r["isError"], true);
        let g = c.result(6, "tasks/get", json!({"taskId": t["task"]["taskId"]})).await;
        assert_eq!(g["status"], "completed");
        // A protocol error fails it; tasks/result answers that same error.
        let t = c.result(7, "tools/call", json!({"name": "protocol_error_job", "task": {}})).await;
        let id = t["task"]["taskId"].clone();
        let e = c.error(8, "tasks/result", json!({"taskId": id})).await;
        assert_eq!(e["code"], -32603);
        let g = c.result(9, "tasks/get", json!({"taskId": id})).await;
        valid_2025_11_25("GetTaskResult", &g);
        assert_eq!(g["status"], "failed");
        assert!(g["statusMessage"].as_str().unwrap().contains("internal error"));
        // Cancelling a running task answers it cancelled, and it stays so.
        let t = c.result(10, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 60}, "task": {}})).await;
        let id = t["task"]["taskId"].clone();
        c.send(json!({"jsonrpc": "2.0", "id": 11, "method": "tasks/result", "params": {"taskId": id}})).await;
        let ack = c.result(12, "tasks/cancel", json!({"taskId": id})).await;
        valid_2025_11_25("CancelTaskResult", &ack);
        assert_eq!(ack["status"], "cancelled");
        let mut seen = Vec::new();
        let r = until_response(&c, 11, &mut seen).await;
        assert!(r["error"]["message"].as_str().unwrap().contains("cancelled"), "{r}");
        assert_eq!(c.result(13, "tasks/get", json!({"taskId": id})).await["status"], "cancelled");
        // Unknown ids and cursors are -32602 with a message saying why.
        let e = c.error(14, "tasks/get", json!({"taskId": "task-unknown"})).await;
        assert_eq!(e["code"], -32602);
        assert!(e["message"].as_str().unwrap().contains("task-unknown"));
        assert_eq!(c.error(15, "tasks/list", json!({"cursor": "bogus"})).await["code"], -32602);
    });
}

// covers: tasks-input-required-move, tasks-input-request-related-task, tasks-leave-input-required, tasks-status-notification-optional
#[test]
fn core_task_asks_for_input_inside_the_task() {
    run(&[], |c| async move {
        c.initialize("2025-11-25", json!({"elicitation": {"form": {}}})).await;
        let t = c.result(1, "tools/call", json!({"name": "confirm_delete", "arguments": {"filename": "a.txt"}, "task": {}})).await;
        valid_2025_11_25("CreateTaskResult", &t);
        let id = t["task"]["taskId"].clone();
        let mut seen = Vec::new();
        let ask = loop {
            let m = c.recv().await;
            if m["method"] == "elicitation/create" {
                break m;
            }
            seen.push(m);
        };
        valid_2025_11_25("ElicitRequest", &ask);
        assert_eq!(ask["params"]["_meta"][RELATED]["taskId"], id);
        assert_eq!(statuses(&seen, &id), ["input_required"]);
        assert_eq!(c.result(2, "tasks/get", json!({"taskId": id})).await["status"], "input_required");
        c.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"confirm": true}}}))
            .await;
        let mut seen = Vec::new();
        c.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": id}})).await;
        let r = until_response(&c, 3, &mut seen).await;
        assert!(r["result"]["content"][0]["text"].is_string(), "{r}");
        assert_eq!(statuses(&seen, &id), ["working", "completed"]);
    });
}

// covers: tasks-list-paginate
#[test]
fn core_task_list_is_paginated() {
    run(&["--page-size", "1"], |c| async move {
        c.initialize("2025-11-25", json!({})).await;
        for id in 1..=2 {
            c.result(id, "tools/call", json!({"name": "slow_compute", "arguments": {"seconds": 0}, "task": {}})).await;
        }
        let p1 = c.result(3, "tasks/list", json!({})).await;
        assert_eq!(p1["tasks"].as_array().unwrap().len(), 1);
        let cursor = p1["nextCursor"].as_str().expect("a next cursor").to_string();
        let p2 = c.result(4, "tasks/list", json!({"cursor": cursor})).await;
        assert_eq!(p2["tasks"].as_array().unwrap().len(), 1);
        assert!(p2.get("nextCursor").is_none());
        assert_ne!(p1["tasks"][0]["taskId"], p2["tasks"][0]["taskId"]);
    });
}
