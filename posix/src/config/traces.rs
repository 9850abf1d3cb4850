//! `"traces"`: OpenTelemetry traces exported over OTLP/HTTP (the hub side
//! is `crate::hub::trace`, the exporter `crate::serve::traces`).

use super::ctx::{Ctx, Object};
use crate::bytes::jsonpos::Path;

/// `"traces": {"endpoint": "http://127.0.0.1:4318", "sampleRatio": 1.0,
/// "serviceName": "mcpx", "maxQueue": 2048, "headers": {"k": "v"}}`:
/// spans are POSTed to `<endpoint>/v1/traces`. Absent: no tracing.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceSettings {
    /// The collector's base URL (`http://` or `https://`).
    pub endpoint: String,
    /// Of the traces that start in mcpx, the share recorded (0 to 1); a
    /// caller's sampling decision is followed.
    pub sample_ratio: f64,
    /// `service.name` of the exported resource.
    pub service_name: String,
    /// Finished spans waiting for export; past it they are dropped (and counted).
    pub max_queue: u64,
    /// Header fields of each export request (an API key).
    pub headers: Vec<(String, String)>,
}

// The ratio is checked to be within 0 to 1: never NaN.
impl Eq for TraceSettings {}

pub(super) fn parse_traces(cx: &mut Ctx<'_>, top: &Path, obj: &Object) -> Option<TraceSettings> {
    let at = top.key("traces");
    let t = cx.block(&at, obj.get("traces"), r#"{"endpoint": "http://127.0.0.1:4318"}"#)?;
    cx.unknown_keys(&at, t, &["endpoint", "sampleRatio", "serviceName", "maxQueue", "headers"]);
    let Some(endpoint) = t.get("endpoint").and_then(|v| cx.string(&at.key("endpoint"), v)) else {
        if t.get("endpoint").is_none() {
            cx.err(&at.key("endpoint"), "missing: the OTLP/HTTP collector's base URL, e.g. \"http://127.0.0.1:4318\" (spans go to <endpoint>/v1/traces)");
        }
        return None;
    };
    if crate::remote::url::Url::parse(&endpoint).is_err() {
        cx.err(&at.key("endpoint"), format!("{endpoint:?} is not an http:// or https:// URL"));
        return None;
    }
    let sample_ratio = match t.get("sampleRatio") {
        None => 1.0,
        Some(v) => match v.as_f64() {
            Some(r) if (0.0..=1.0).contains(&r) => r,
            _ => {
                cx.err(&at.key("sampleRatio"), format!("expected a number from 0 to 1, found {v}"));
                return None;
            }
        },
    };
    let service_name = t.get("serviceName").and_then(|v| cx.string(&at.key("serviceName"), v)).unwrap_or_else(|| "mcpx".into());
    let max_queue = t.get("maxQueue").and_then(|v| cx.positive(&at.key("maxQueue"), v)).unwrap_or(2048);
    let mut headers = Vec::new();
    if let Some(h) = cx.block(&at.key("headers"), t.get("headers"), r#"{"x-api-key": "${OTLP_KEY}"}"#) {
        for (k, v) in h {
            let Some(v) = cx.string(&at.key("headers").key(k), v) else { continue };
            headers.push((k.clone(), v));
        }
    }
    Some(TraceSettings { endpoint, sample_ratio, service_name, max_queue, headers })
}
