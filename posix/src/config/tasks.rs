//! `"tasks"`: caps of the tasks mcpx runs and relays (the hub side is
//! `crate::hub::tasks`).

use super::ctx::{Ctx, Object};
use crate::bytes::jsonpos::Path;

/// `"tasks"`: `{"maxPerClient": n, "maxTasks": n, "maxResultBytes": n,
/// "defaultTtlMs": n, "maxTtlMs": n, "pollIntervalMs": n, "maxPollIntervalMs": n}`,
/// each optional (positive whole numbers); absent ones keep the hub's defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskSettings {
    pub max_per_client: Option<u64>,
    pub max_tasks: Option<u64>,
    pub max_result_bytes: Option<u64>,
    pub default_ttl_ms: Option<u64>,
    pub max_ttl_ms: Option<u64>,
    pub poll_ms: Option<u64>,
    pub max_poll_ms: Option<u64>,
}

impl TaskSettings {
    /// The hub's task options with these settings applied.
    pub fn apply(&self, o: &mut crate::hub::TaskOptions) {
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        o.max_live_per_principal = self.max_per_client.map_or(o.max_live_per_principal, size);
        o.max_tasks = self.max_tasks.map_or(o.max_tasks, size);
        o.max_result_bytes = self.max_result_bytes.map_or(o.max_result_bytes, size);
        o.default_ttl_ms = self.default_ttl_ms.unwrap_or(o.default_ttl_ms);
        o.max_ttl_ms = self.max_ttl_ms.unwrap_or(o.max_ttl_ms);
        o.poll_ms = self.poll_ms.unwrap_or(o.poll_ms);
        o.max_poll_ms = self.max_poll_ms.unwrap_or(o.max_poll_ms);
    }
}

pub(super) fn parse_tasks(cx: &mut Ctx<'_>, top: &Path, obj: &Object) -> TaskSettings {
    let mut out = TaskSettings::default();
    let at = top.key("tasks");
    let Some(t) = cx.block(&at, obj.get("tasks"), r#"{"maxPerClient": 16}"#) else { return out };
    let keys = ["maxPerClient", "maxTasks", "maxResultBytes", "defaultTtlMs", "maxTtlMs", "pollIntervalMs", "maxPollIntervalMs"];
    cx.unknown_keys(&at, t, &keys);
    for key in keys {
        let Some(n) = t.get(key).and_then(|v| cx.positive(&at.key(key), v)) else { continue };
        let slot = match key {
            "maxPerClient" => &mut out.max_per_client,
            "maxTasks" => &mut out.max_tasks,
            "maxResultBytes" => &mut out.max_result_bytes,
            "defaultTtlMs" => &mut out.default_ttl_ms,
            "maxTtlMs" => &mut out.max_ttl_ms,
            "pollIntervalMs" => &mut out.poll_ms,
            _ => &mut out.max_poll_ms,
        };
        *slot = Some(n);
    }
    out
}
