//! The page's Activity section (feature `activity`): per server, its
//! requests, errors and p99 latency over the last minutes as inline SVG
//! sparklines (no script, nothing loaded), the last minute in numbers, and
//! its input requests waiting for a client now; and
//! the last tool calls the viewer may see (`status_page::snapshot`).

use std::fmt::Write as _;

use serde_json::Value;

use crate::http::html::Esc;

/// The section's rules, after the page's.
pub(crate) const STYLE: &str =
    ".spark{display:block;color:var(--ok)}.spark.err{color:var(--bad)}.spark.lat{color:var(--warn)}.wide{overflow-x:auto}\n";

/// Width of one minute in a sparkline's view box.
const STEP: usize = 4;
/// Height of a sparkline's view box.
const HEIGHT: f64 = 20.0;

/// The section for snapshot `v` (`v.activity`); empty when it has none.
pub(crate) fn section(v: &Value) -> String {
    let a = &v["activity"];
    let Some(minutes) = a["minutes"].as_object() else { return String::new() };
    let waiting = a["waiting"].as_object();
    // The servers with requests in these minutes or input requests waiting.
    let mut names: Vec<&String> = minutes.keys().chain(waiting.into_iter().flat_map(|w| w.keys())).collect();
    names.sort();
    names.dedup();
    let mut rows = String::new();
    for name in names {
        let series = minutes.get(name).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let of = |k: &str| -> Vec<f64> { series.iter().map(|m| m[k].as_f64().unwrap_or(0.0)).collect() };
        let last = series.last().cloned().unwrap_or(Value::Null);
        let ms = |k: &str| last[k].as_u64().map_or("–".to_string(), |m| format!("≤{}", took(m)));
        let _ = write!(
            rows,
            "<tr class=\"activity\" data-name=\"{n}\"><th>{n}</th>\
             <td>{req}<br><span class=\"mute\">{r} req</span></td>\
             <td>{err}<br><span class=\"mute\">{e} err</span></td>\
             <td>{p99}<br><span class=\"mute\">p50 {p50} · p99 {p99n}</span></td>\
             <td class=\"waiting\">{w}</td></tr>",
            n = Esc(name),
            req = spark("requests per minute", &of("requests"), "req"),
            err = spark("errors per minute", &of("errors"), "err"),
            p99 = spark("p99 latency per minute (ms)", &of("p99Ms"), "lat"),
            r = last["requests"].as_u64().unwrap_or(0),
            e = last["errors"].as_u64().unwrap_or(0),
            p50 = ms("p50Ms"),
            p99n = ms("p99Ms"),
            w = waiting.and_then(|w| w.get(name.as_str())).and_then(Value::as_u64).unwrap_or(0),
        );
    }
    let servers = if rows.is_empty() {
        "<p class=\"mute\">No requests yet.</p>".to_string()
    } else {
        format!("<div class=\"wide\"><table class=\"spark-table\"><tr><th>server</th><th>requests</th><th>errors</th><th>latency</th><th>input waiting</th></tr>{rows}</table></div>")
    };
    let mut calls = String::new();
    for c in a["lastCalls"].as_array().map(Vec::as_slice).unwrap_or_default() {
        let time = c["timeMs"].as_u64().map_or(String::new(), clock);
        let _ = write!(
            calls,
            "<tr class=\"call {o}\"><td>{time}</td><td>{p}</td><td>{s}/{t}</td><td>{o}</td><td>{d}</td></tr>",
            p = Esc(c["principal"].as_str().unwrap_or("")),
            s = Esc(c["server"].as_str().unwrap_or("")),
            t = Esc(c["tool"].as_str().unwrap_or("")),
            o = Esc(c["outcome"].as_str().unwrap_or("")),
            d = took(c["durationMs"].as_u64().unwrap_or(0)),
        );
    }
    let calls = if calls.is_empty() {
        "<p class=\"mute\">No tool calls you may see yet.</p>".to_string()
    } else {
        format!("<div class=\"wide\"><table id=\"last-calls\"><tr><th>time (UTC)</th><th>principal</th><th>tool</th><th>outcome</th><th>took</th></tr>{calls}</table></div>")
    };
    format!(
        "<section id=\"activity\"><h2>Activity <span class=\"mute\">last {m} minutes, a point a minute</span></h2>{servers}\
         <h2>Last calls</h2>{calls}</section>",
        m = crate::policy::activity::MINUTES,
    )
}

/// `values` (oldest first) as a sparkline: a polyline scaled to the
/// largest, with its values in the label for screen readers.
fn spark(label: &str, values: &[f64], class: &str) -> String {
    let max = values.iter().copied().fold(0.0, f64::max);
    let width = STEP * values.len().saturating_sub(1).max(1);
    let mut points = String::new();
    for (i, v) in values.iter().enumerate() {
        let y = if max > 0.0 { HEIGHT - 1.0 - v / max * (HEIGHT - 2.0) } else { HEIGHT - 1.0 };
        let _ = write!(points, "{}{},{y:.1}", if i > 0 { " " } else { "" }, i * STEP);
    }
    let said: Vec<String> = values.iter().map(|v| format!("{v}")).collect();
    format!(
        "<svg class=\"spark {class}\" viewBox=\"0 0 {width} {HEIGHT}\" width=\"{w2}\" height=\"{h2}\" role=\"img\" aria-label=\"{label}: {said}\">\
         <polyline fill=\"none\" stroke=\"currentColor\" stroke-width=\"1.5\" points=\"{points}\"/></svg>",
        w2 = width * 2,
        h2 = HEIGHT * 2.0,
        said = said.join(" "),
    )
}

/// A latency: `12 ms`, `2.5 s`.
fn took(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

/// Unix ms as `HH:MM:SS` (UTC).
fn clock(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}", s / 3600 % 24, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_server_gets_sparklines_and_the_calls_a_table_all_escaped() {
        let mut minutes: Vec<Value> = (0..15).map(|_| json!({ "requests": 0, "errors": 0, "p50Ms": null, "p99Ms": null })).collect();
        minutes[14] = json!({ "requests": 4, "errors": 1, "p50Ms": 5, "p99Ms": 200 });
        minutes[13] = json!({ "requests": 2, "errors": 0, "p50Ms": 2, "p99Ms": 10 });
        let v = json!({ "activity": {
            "minutes": { "<demo>": minutes },
            "waiting": { "<demo>": 2, "asks": 1 },
            "lastCalls": [{ "timeMs": 3_723_000, "principal": "a<b", "server": "demo", "tool": "echo", "outcome": "tool_error", "durationMs": 12 }],
        } });
        let html = section(&v);
        assert!(html.contains("data-name=\"&lt;demo&gt;\""), "{html}");
        assert_eq!(html.matches("<svg class=\"spark").count(), 6, "{html}");
        // Requests: the last minute is the largest (top), the one before half of it.
        assert!(html.contains("points=\"0,19.0 4,19.0") && html.contains("52,10.0 56,1.0\""), "{html}");
        assert!(html.contains("4 req") && html.contains("1 err") && html.contains("p99 ≤200 ms"), "{html}");
        assert!(html.contains("<td>01:02:03</td><td>a&lt;b</td><td>demo/echo</td><td>tool_error</td>"), "{html}");
        assert!(html.contains("<td class=\"waiting\">2</td>"), "{html}");
        // A server waiting for input with no request answered yet has a row.
        assert!(html.contains("data-name=\"asks\"><th>asks</th>") && html.contains("<td class=\"waiting\">1</td>"), "{html}");
        assert!(!html.contains("<demo>") && !html.contains("a<b"));
        assert_eq!(section(&json!({})), "", "no activity, no section");
    }

    #[test]
    fn a_quiet_server_draws_a_flat_line() {
        let s = spark("requests per minute", &[0.0, 0.0, 0.0], "req");
        assert!(s.contains("points=\"0,19.0 4,19.0 8,19.0\""), "{s}");
    }
}
