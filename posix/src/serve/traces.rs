//! The exporter of `"traces"`: the spans the hub finished
//! (`Hub::trace`, `Trace::take`), POSTed as OTLP/HTTP JSON to `<endpoint>/v1/traces`
//! on the remote transport's HTTP client (http and https).
//!
//! Never in a call's way: the hub keeps finished spans in its bounded
//! buffer; this task takes them every [`INTERVAL`] and sends them in
//! batches of at most [`BATCH`], one request at a time, each within
//! [`TIMEOUT`]. While a request is under way spans wait in the hub's
//! buffer, whose cap drops (and counts) what does not fit. A failed batch
//! is counted and not retried; failures are logged once until an export
//! succeeds again. The hub's clock is mapped to Unix time when a batch is
//! written. At shutdown the last spans are sent ([`flush`]).

use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::runtime::Runtime;
use crate::config::TraceSettings;
use crate::hub::trace::{Attr, Span};
use crate::remote::http::{Client, Limits};
use crate::remote::url::Url;

/// How often finished spans are taken from the hub.
const INTERVAL: Duration = Duration::from_millis(1000);
/// The most spans in one export request.
const BATCH: usize = 512;
/// An export request connects, is written and answered within this.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The most of an answer read.
const MAX_ANSWER: usize = 4096;

/// Where and how spans are sent.
pub(crate) struct Exporter {
    url: Url,
    origin: String,
    headers: Vec<(String, Vec<u8>)>,
    service_name: String,
    /// A failure was logged and no export succeeded since.
    failing: std::cell::Cell<bool>,
}

impl Exporter {
    pub(crate) fn new(t: &TraceSettings) -> Result<Exporter, String> {
        let base = t.endpoint.trim_end_matches('/');
        let url = Url::parse(&format!("{base}/v1/traces")).map_err(|e| format!("traces.endpoint {:?}: {e}", t.endpoint))?;
        let full = url.to_string();
        let origin = full[..full.len() - url.target.len()].to_string();
        let mut headers: Vec<(String, Vec<u8>)> = vec![
            ("content-type".into(), b"application/json".to_vec()),
            ("user-agent".into(), concat!("mcpx/", env!("CARGO_PKG_VERSION")).into()),
        ];
        headers.extend(t.headers.iter().map(|(n, v)| (n.to_ascii_lowercase(), v.clone().into_bytes())));
        Ok(Exporter { url, origin, headers, service_name: t.service_name.clone(), failing: Default::default() })
    }
}

/// The task: every [`INTERVAL`], what the hub finished is sent.
pub(crate) async fn run(rt: Rc<Runtime>, ex: Rc<Exporter>) {
    loop {
        async_io::Timer::after(INTERVAL).await;
        export(&rt, &ex).await;
    }
}

/// Sends what the hub finished (at shutdown), within `limit`.
pub(crate) async fn flush(rt: &Rc<Runtime>, ex: &Exporter, limit: Duration) {
    let timer = async {
        async_io::Timer::after(limit).await;
    };
    smol::future::or(export(rt, ex), timer).await;
}

async fn export(rt: &Rc<Runtime>, ex: &Exporter) {
    let spans = rt.feed(|h, _| h.trace().take());
    if spans.is_empty() {
        return;
    }
    // The hub's clock (milliseconds since the start) to Unix time.
    let unix_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let offset = unix_ms.saturating_sub(rt.now_ms());
    for batch in spans.chunks(BATCH) {
        let body = otlp_json(batch, &ex.service_name, offset);
        let ok = match post(ex, &body).await {
            Ok(()) => {
                if ex.failing.replace(false) {
                    info!("traces: exporting to {} again", ex.origin);
                }
                true
            }
            Err(e) => {
                if !ex.failing.replace(true) {
                    error!("traces: the export to {} failed: {e} (spans are dropped until it succeeds again; counted in mcpx_trace_spans_total)", ex.origin);
                }
                false
            }
        };
        rt.feed(|h, _| h.trace().exported(batch.len(), ok));
    }
}

/// One export request, within [`TIMEOUT`] in all.
async fn post(ex: &Exporter, body: &[u8]) -> Result<(), String> {
    let exchange = async {
        let connector = crate::remote::connector(None, &ex.url, TIMEOUT).map_err(|e| e.to_string())?;
        let client = Client::new(connector, 0);
        let limits = Limits { max_head: 16 << 10, head_timeout: TIMEOUT, idle_timeout: Some(TIMEOUT) };
        let fields: Vec<(&str, &[u8])> = ex.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice())).collect();
        let mut resp = client.request("POST", &ex.url, &fields, body, limits, None).await.map_err(|e| e.to_string())?;
        if (200..300).contains(&resp.status) {
            let _ = resp.body.drain(MAX_ANSWER).await;
            return Ok(());
        }
        let answer = resp.body.read_all(MAX_ANSWER).await.unwrap_or_default();
        let answer: String = String::from_utf8_lossy(&answer).chars().take(200).map(|c| if c.is_control() { ' ' } else { c }).collect();
        Err(format!("answered HTTP {}: {}", resp.status, answer.trim()))
    };
    let timer = async {
        async_io::Timer::after(TIMEOUT).await;
        Err(format!("no answer within {}", crate::log::line::show_duration(TIMEOUT)))
    };
    smol::future::or(exchange, timer).await
}

fn hex(b: &[u8]) -> String {
    let mut out = vec![0u8; 2 * b.len()];
    mcpx_core::trace_context::hex_write(b, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

fn attr(key: &str, v: &Attr) -> Value {
    match v {
        Attr::Str(s) => json!({ "key": key, "value": { "stringValue": s } }),
    }
}

/// `spans` as an OTLP `ExportTraceServiceRequest` in its JSON encoding
/// (ids in hex, times in Unix nanoseconds as strings): the hub's clock
/// plus `offset_ms` is Unix time.
pub(crate) fn otlp_json(spans: &[Span], service_name: &str, offset_ms: u64) -> Vec<u8> {
    let nanos = |ms: u64| (u128::from(ms + offset_ms) * 1_000_000).to_string();
    let spans: Vec<Value> = spans
        .iter()
        .map(|s| {
            let mut v = json!({
                "traceId": hex(&s.trace_id),
                "spanId": hex(&s.span_id),
                "name": s.name,
                "kind": s.kind as u8,
                "startTimeUnixNano": nanos(s.start_ms),
                "endTimeUnixNano": match s.length_ns {
                    Some(ns) => (u128::from(s.start_ms + offset_ms) * 1_000_000 + u128::from(ns)).to_string(),
                    None => nanos(s.end_ms),
                },
                "attributes": s.attrs.iter().map(|(k, v)| attr(k, v)).collect::<Vec<_>>(),
                "status": match &s.error {
                    Some(m) => json!({ "code": 2, "message": m }),
                    None => json!({}),
                },
            });
            if let Some(p) = &s.parent {
                v["parentSpanId"] = hex(p).into();
            }
            if let Some(t) = &s.tracestate {
                v["traceState"] = t.as_str().into();
            }
            if !s.events.is_empty() {
                v["events"] = s.events.iter().map(|(name, at)| json!({ "name": name, "timeUnixNano": nanos(*at) })).collect();
            }
            v
        })
        .collect();
    let body = json!({
        "resourceSpans": [{
            "resource": { "attributes": [
                { "key": "service.name", "value": { "stringValue": service_name } },
                { "key": "service.version", "value": { "stringValue": env!("CARGO_PKG_VERSION") } },
            ] },
            "scopeSpans": [{
                "scope": { "name": "mcpx", "version": env!("CARGO_PKG_VERSION") },
                "spans": spans,
            }],
        }],
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::trace::SpanKind;

    #[test]
    fn spans_are_written_as_otlp_json() {
        let span = Span {
            trace_id: [0xab; 16],
            span_id: [1, 2, 3, 4, 5, 6, 7, 8],
            parent: Some([9; 8]),
            tracestate: Some("k=v".into()),
            name: "tools/call fs__read".into(),
            kind: SpanKind::Server,
            start_ms: 10,
            end_ms: 12,
            length_ns: None,
            attrs: vec![("mcp.method.name", Attr::Str("tools/call".into()))],
            error: Some("JSON-RPC error -32602".into()),
            events: vec![],
        };
        let v: Value = serde_json::from_slice(&otlp_json(&[span], "svc", 1_700_000_000_000)).unwrap();
        let rs = &v["resourceSpans"][0];
        assert_eq!(rs["resource"]["attributes"][0], json!({ "key": "service.name", "value": { "stringValue": "svc" } }));
        let s = &rs["scopeSpans"][0]["spans"][0];
        assert_eq!(s["traceId"], "ab".repeat(16));
        assert_eq!(s["spanId"], "0102030405060708");
        assert_eq!(s["parentSpanId"], "0909090909090909");
        assert_eq!(s["traceState"], "k=v");
        assert_eq!(s["kind"], 2);
        assert_eq!(s["startTimeUnixNano"], "1700000000010000000");
        assert_eq!(s["endTimeUnixNano"], "1700000000012000000");
        assert_eq!(s["attributes"][0]["value"]["stringValue"], "tools/call");
        assert_eq!(s["status"], json!({ "code": 2, "message": "JSON-RPC error -32602" }));
    }

    #[test]
    fn the_endpoint_gets_the_traces_path() {
        let t = TraceSettings { endpoint: "http://127.0.0.1:4318/".into(), sample_ratio: 1.0, service_name: "mcpx".into(), max_queue: 8, headers: vec![("X-Key".into(), "k".into())] };
        let ex = Exporter::new(&t).unwrap();
        assert_eq!(ex.url.target, "/v1/traces");
        assert_eq!(ex.origin, "http://127.0.0.1:4318");
        assert!(ex.headers.iter().any(|(n, v)| n == "x-key" && v == b"k"));
    }
}
