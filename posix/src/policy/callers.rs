//! Who calls what: `mcpx_tool_calls_total{tool, principal, outcome}`,
//! each label kept to the values busiest of late ([`TopN`]), so the series
//! stay bounded. Part of the operator's view (feature `activity`).

use super::metrics::{FamilyId, Kind, Outcome, Registry, OTHER};

/// The `tool` of a call to a name no tool the client may see has: made-up
/// names never take one of the labelled slots.
pub const UNKNOWN: &str = "_unknown";

/// Tools and principals given a label value of their own in
/// `mcpx_tool_calls_total` at once; the others count as [`OTHER`].
pub const TOOLS_LABELLED: usize = 64;
pub const PRINCIPALS_LABELLED: usize = 32;
/// Values followed while they count as [`OTHER`], per labelled one.
const CANDIDATES_PER_SLOT: usize = 4;
/// Every this many calls the recent counts are halved: "recent" weighs
/// the last few thousand calls most.
const HALF_LIFE_CALLS: u64 = 4096;
/// A value followed as [`OTHER`] takes the slot of the least busy labelled
/// one when its recent count is this many times that one's (and at least
/// [`MIN_PROMOTION`]): a slot does not change hands over a few calls.
const PROMOTION_FACTOR: u64 = 2;
const MIN_PROMOTION: u64 = 8;

/// The values of one label kept as themselves, the busiest of late, at
/// most `max`; the rest are [`OTHER`]. A counter never goes down, so no
/// count moves between series: a value given a slot starts a series of
/// its own from zero (what it counted before stays in [`OTHER`]), and the
/// value whose slot it takes has its series removed (Prometheus sees a
/// series end, and a new one start should it come back). The calls of a
/// value counting as [`OTHER`] are followed in a bounded table (the
/// Space-Saving sketch: a full table's least count is replaced).
#[derive(Debug)]
struct TopN {
    /// Labelled values and their recent counts.
    kept: Vec<(String, u64)>,
    /// Values counting as [`OTHER`] and their recent counts (estimates).
    candidates: Vec<(String, u64)>,
    max: usize,
    calls: u64,
}

impl TopN {
    fn new(max: usize) -> TopN {
        TopN { kept: Vec::new(), candidates: Vec::new(), max, calls: 0 }
    }

    /// The label of one call of `v`, and the labelled value it displaced.
    fn of<'a>(&mut self, v: &'a str) -> (&'a str, Option<String>) {
        self.calls += 1;
        if self.calls.is_multiple_of(HALF_LIFE_CALLS) {
            self.kept.iter_mut().chain(self.candidates.iter_mut()).for_each(|(_, n)| *n /= 2);
        }
        if v == UNKNOWN {
            return (v, None);
        }
        if let Some((_, n)) = self.kept.iter_mut().find(|(k, _)| k == v) {
            *n += 1;
            return (v, None);
        }
        if self.kept.len() < self.max {
            self.kept.push((v.to_string(), 1));
            return (v, None);
        }
        let c = &mut self.candidates;
        let slot = match c.iter().position(|(k, _)| k == v) {
            Some(i) => {
                c[i].1 += 1;
                i
            }
            // Space-Saving: a full table gives the least one's place (and
            // count) to the newcomer.
            None if c.len() >= self.max * CANDIDATES_PER_SLOT => {
                let i = least(c);
                c[i] = (v.to_string(), c[i].1 + 1);
                i
            }
            None => {
                c.push((v.to_string(), 1));
                c.len() - 1
            }
        };
        let (n, low) = (c[slot].1, least(&self.kept));
        if n < MIN_PROMOTION || n < PROMOTION_FACTOR * self.kept[low].1.max(1) {
            return (OTHER, None);
        }
        let promoted = self.candidates.swap_remove(slot);
        let (gone, _) = std::mem::replace(&mut self.kept[low], promoted);
        (v, Some(gone))
    }
}

/// The index of the entry with the least count (0 for none).
fn least(m: &[(String, u64)]) -> usize {
    m.iter().enumerate().min_by_key(|(_, (_, n))| *n).map_or(0, |(i, _)| i)
}

/// The family and its two bounded labels.
#[derive(Debug)]
pub struct Callers {
    family: FamilyId,
    tools: TopN,
    principals: TopN,
    unread: Unread,
}

/// Calls of one series (the last one counted) the registry has not seen
/// yet: a run of one tool's calls by one principal reaches the registry
/// once, when another series is counted or the registry is read.
#[derive(Debug)]
struct Unread {
    tool: String,
    principal: String,
    outcome: Outcome,
    calls: u64,
}

impl Unread {
    fn is(&self, tool: &str, principal: &str, outcome: Outcome) -> bool {
        self.calls > 0 && self.outcome == outcome && self.tool == tool && self.principal == principal
    }

    fn add_to(&self, r: &mut Registry, family: FamilyId) {
        if self.calls > 0 {
            r.add(family, &[&self.tool, &self.principal, self.outcome.label()], self.calls as f64);
        }
    }
}

impl Callers {
    pub fn register(r: &mut Registry) -> Callers {
        let help = "Tool calls answered, by tool (its exposed name; _unknown: a name no tool the client may see has), principal and outcome; the 64 tools and 32 principals busiest of late keep their names, the others count as _other.";
        let family = r.register("mcpx_tool_calls_total", help, Kind::Counter, &["tool", "principal", "outcome"]);
        let unread = Unread { tool: String::new(), principal: String::new(), outcome: Outcome::Result, calls: 0 };
        Callers { family, tools: TopN::new(TOOLS_LABELLED), principals: TopN::new(PRINCIPALS_LABELLED), unread }
    }

    /// One answered `tools/call` of `tool` by `principal`.
    pub fn count(&mut self, r: &mut Registry, tool: &str, principal: &str, outcome: Outcome) {
        let (tool, gone) = self.tools.of(tool);
        if let Some(g) = gone {
            self.flush(r);
            r.remove(self.family, 0, &g);
        }
        let (principal, gone) = self.principals.of(principal);
        if let Some(g) = gone {
            self.flush(r);
            r.remove(self.family, 1, &g);
        }
        if !self.unread.is(tool, principal, outcome) {
            self.flush(r);
            let u = &mut self.unread;
            tool.clone_into(&mut u.tool);
            principal.clone_into(&mut u.principal);
            u.outcome = outcome;
        }
        self.unread.calls += 1;
    }

    /// Moves the calls not yet seen into `r`: before it is read.
    pub fn flush(&mut self, r: &mut Registry) {
        self.unread.add_to(r, self.family);
        self.unread.calls = 0;
    }

    /// Adds the calls not yet seen to `r`, a copy being read.
    pub fn add_unread(&self, r: &mut Registry) {
        self.unread.add_to(r, self.family);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::metrics::HubMetrics;

    /// Metrics with the family, and one answered call.
    struct M {
        registry: Registry,
        callers: Callers,
    }

    /// Counted, and seen by the registry (as a read sees it).
    fn call(m: &mut M, tool: &str, principal: &str, o: Outcome) {
        m.callers.count(&mut m.registry, tool, principal, o);
        m.callers.flush(&mut m.registry);
    }

    #[test]
    fn tool_calls_by_tool_and_principal_keep_the_busiest_and_count_the_rest_as_other() {
        let mut registry = HubMetrics::new(100_000).registry;
        let callers = Callers::register(&mut registry);
        let mut m = M { registry, callers };
        for i in 0..TOOLS_LABELLED + 10 {
            call(&mut m, &format!("gh__t{i}"), "alice", Outcome::Result);
        }
        for i in 0..PRINCIPALS_LABELLED + 5 {
            call(&mut m, "gh__t0", &format!("p{i}"), Outcome::ToolError);
        }
        let v = |m: &M, t: &str, p: &str, o: Outcome| m.registry.value(m.callers.family, &[t, p, o.label()]);
        // Free slots go to the first seen.
        assert_eq!(v(&m, "gh__t0", "alice", Outcome::Result), Some(1.0));
        assert_eq!(v(&m, &format!("gh__t{}", TOOLS_LABELLED - 1), "alice", Outcome::Result), Some(1.0));
        assert_eq!(v(&m, OTHER, "alice", Outcome::Result), Some(10.0));
        // alice is the first principal seen: 31 more, then other.
        assert_eq!(v(&m, "gh__t0", &format!("p{}", PRINCIPALS_LABELLED - 2), Outcome::ToolError), Some(1.0));
        assert_eq!(v(&m, "gh__t0", OTHER, Outcome::ToolError), Some(6.0));
        let text = m.registry.render();
        assert!(text.contains("mcpx_tool_calls_total{tool=\"gh__t0\",principal=\"alice\",outcome=\"result\"} 1"), "{text}");

        // A tool counted as other that becomes busy takes the least busy
        // one's slot: its series starts from zero, what it counted before
        // stays in other (a counter never goes down), the displaced
        // tool's series are gone.
        let busy = format!("gh__t{}", TOOLS_LABELLED + 3);
        let before = v(&m, OTHER, "alice", Outcome::Result).unwrap();
        let mut promoted_at = None;
        for n in 1..=MIN_PROMOTION {
            call(&mut m, &busy, "alice", Outcome::Result);
            if promoted_at.is_none() && v(&m, &busy, "alice", Outcome::Result).is_some() {
                promoted_at = Some(n);
            }
        }
        assert_eq!(promoted_at, Some(MIN_PROMOTION - 1), "its first call was counted as other before");
        assert_eq!(v(&m, &busy, "alice", Outcome::Result), Some(2.0), "its series counts from the call that gave it a slot");
        let other = v(&m, OTHER, "alice", Outcome::Result).unwrap();
        assert_eq!(other, before + (MIN_PROMOTION - 2) as f64, "other only grows");
        let labelled: std::collections::BTreeSet<String> = m.registry.to_json()["mcpx_tool_calls_total"].as_array().unwrap().iter().map(|s| s["labels"]["tool"].as_str().unwrap().to_string()).collect();
        assert_eq!(labelled.len(), TOOLS_LABELLED + 1, "64 tools and other: {labelled:?}");
        // One call of a tool counted as other never displaces anyone.
        call(&mut m, &format!("gh__t{}", TOOLS_LABELLED + 5), "alice", Outcome::Result);
        assert_eq!(v(&m, OTHER, "alice", Outcome::Result), Some(other + 1.0));
    }

    #[test]
    fn runs_of_one_series_reach_the_registry_when_it_is_read_and_none_is_lost() {
        let mut registry = HubMetrics::new(100_000).registry;
        let mut callers = Callers::register(&mut registry);
        let v = |r: &Registry, c: &Callers, t: &str, p: &str, o: Outcome| r.value(c.family, &[t, p, o.label()]);
        for _ in 0..3 {
            callers.count(&mut registry, "a", "alice", Outcome::Result);
        }
        assert_eq!(v(&registry, &callers, "a", "alice", Outcome::Result), None, "a run is not added call by call");
        let mut copy = registry.clone();
        callers.add_unread(&mut copy);
        assert_eq!(v(&copy, &callers, "a", "alice", Outcome::Result), Some(3.0), "a copy being read sees the run");
        // Another series ends the run: it reaches the registry.
        callers.count(&mut registry, "a", "bob", Outcome::Result);
        callers.count(&mut registry, "a", "bob", Outcome::ToolError);
        callers.count(&mut registry, "a", "alice", Outcome::Result);
        assert_eq!(v(&registry, &callers, "a", "alice", Outcome::Result), Some(3.0));
        assert_eq!(v(&registry, &callers, "a", "bob", Outcome::Result), Some(1.0));
        callers.flush(&mut registry);
        callers.flush(&mut registry);
        assert_eq!(v(&registry, &callers, "a", "alice", Outcome::Result), Some(4.0), "flushed once, however often read");
        assert_eq!(v(&registry, &callers, "a", "bob", Outcome::ToolError), Some(1.0));
    }
}
