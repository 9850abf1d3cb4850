//! The listener's recent refusals: a small ring of the last requests it
//! answered with an error of its own (403 Origin, 401 token, 413 body, 503
//! at a cap…), plus counts by status since start, for `GET /status`.

use std::collections::{BTreeMap, VecDeque};

use serde_json::{json, Value};

/// Refusals kept (the oldest is dropped at the cap).
pub(crate) const KEEP: usize = 20;
/// Characters of a refusal's message kept (it may quote a header value).
pub(crate) const MESSAGE_CHARS: usize = 200;

struct Refusal {
    at_ms: u64,
    status: u16,
    message: String,
}

#[derive(Default)]
pub(crate) struct Refusals {
    recent: VecDeque<Refusal>,
    total: u64,
    /// A handful of distinct statuses at most: the listener's own.
    by_status: BTreeMap<u16, u64>,
}

impl Refusals {
    /// Counts one refusal at `at_ms` (the listener's clock) and keeps it.
    pub fn record(&mut self, at_ms: u64, status: u16, message: &str) {
        self.total += 1;
        *self.by_status.entry(status).or_default() += 1;
        if self.recent.len() == KEEP {
            self.recent.pop_front();
        }
        let mut kept: String = message.chars().take(MESSAGE_CHARS).collect();
        if kept.len() < message.len() {
            kept.push('…');
        }
        self.recent.push_back(Refusal { at_ms, status, message: kept });
    }

    /// `{"total", "byStatus": {"403": n}, "recent": [{"agoMs", "status", "message"}]}`,
    /// newest first.
    pub fn to_json(&self, now_ms: u64) -> Value {
        let by_status: serde_json::Map<String, Value> =
            self.by_status.iter().map(|(s, n)| (s.to_string(), Value::from(*n))).collect();
        let recent: Vec<Value> = self
            .recent
            .iter()
            .rev()
            .map(|r| json!({ "agoMs": now_ms.saturating_sub(r.at_ms), "status": r.status, "message": r.message }))
            .collect();
        json!({ "total": self.total, "byStatus": by_status, "recent": recent })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_refusals_and_counts_all() {
        let mut r = Refusals::default();
        for i in 0..(KEEP as u64 + 5) {
            r.record(i, if i % 2 == 0 { 403 } else { 401 }, &format!("refusal {i}"));
        }
        let v = r.to_json(100);
        assert_eq!(v["total"], KEEP as u64 + 5);
        assert_eq!(v["byStatus"]["403"], 13);
        assert_eq!(v["byStatus"]["401"], 12);
        let recent = v["recent"].as_array().unwrap();
        assert_eq!(recent.len(), KEEP);
        assert_eq!(recent[0]["message"], format!("refusal {}", KEEP + 4));
        assert_eq!(recent[0]["agoMs"], 100 - (KEEP as u64 + 4));
        assert_eq!(recent[KEEP - 1]["message"], "refusal 5");
    }

    #[test]
    fn a_long_message_is_cut_at_a_character() {
        let mut r = Refusals::default();
        r.record(0, 403, &"é".repeat(MESSAGE_CHARS * 3));
        let m = r.to_json(0)["recent"][0]["message"].as_str().unwrap().to_string();
        assert_eq!(m.chars().count(), MESSAGE_CHARS + 1);
        assert!(m.ends_with('…'));
        r.record(0, 403, "short");
        assert_eq!(r.to_json(0)["recent"][0]["message"], "short");
    }
}
