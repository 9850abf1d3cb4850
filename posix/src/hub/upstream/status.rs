//! What is told about the servers: to a request for one that is not
//! ready (what it is doing, when to retry), and in the hub's status.

use mcpx_core::error::ErrorCode;
use mcpx_core::revision::Era;
use serde_json::{json, Value};

use super::super::catalog::{Catalog, Kind};
use super::super::request::Refusal;
use super::super::shape::Rev;
use super::super::UpstreamId;
use super::{State, Upstream, Upstreams};

impl Upstreams {
    /// The answer to a request for `u`'s tool (prompt, resource) while `u`
    /// is not ready: what it is doing and when to retry, or that it was given
    /// up and why.
    pub(in crate::hub) fn unavailable(&self, u: UpstreamId, now: u64) -> Refusal {
        let up = &self.0[u];
        let name = &up.spec.name;
        let last = up.last_error.as_deref().unwrap_or("no error recorded");
        let (msg, data) = match up.state {
            State::Down { retry_at_ms: Some(at) } => restarting(name, at.saturating_sub(now), &format!("it exited: {last}")),
            State::Replacing => restarting(name, RETRY_STARTING_MS, "its configuration changed"),
            State::GaveUp { attempts } => (
                format!("server '{name}' is stopped after {attempts} failed starts: {last}"),
                json!({ "server": name, "state": "stopped", "attempts": attempts, "lastError": last }),
            ),
            State::Removed => (format!("server '{name}' was removed from the configuration"), json!({ "server": name, "state": "removed" })),
            State::Initializing | State::Failed | State::Asleep { .. } => starting(up),
            State::Down { retry_at_ms: None } if up.starts == 0 => starting(up),
            State::Down { retry_at_ms: None } | State::Ready => {
                (format!("server '{name}' is not running ({last}); try again later"), json!({ "server": name, "state": up.state_name() }))
            }
        };
        Refusal(ErrorCode::InternalError, msg, Some(data))
    }

    /// One status row per configured server (what it offers counted in
    /// `catalog`; `instance`: the server a slot is an instance of, and the
    /// principal it runs for), then one per server `config`
    /// (`Input::ConfigStatus`) names `disabled`.
    pub(in crate::hub) fn status<'a>(&self, now: u64, catalog: &Catalog, instance: impl Fn(UpstreamId) -> (Option<UpstreamId>, Option<&'a str>), config: &Value) -> Vec<Value> {
        let disabled = config["disabled"].as_array().into_iter().flatten().map(|n| json!({ "name": n, "state": "disabled" }));
        self.0
            .iter()
            .enumerate()
            .filter(|(_, u)| !u.is_removed())
            .map(|(i, u)| {
                let (template, owner) = instance(i);
                json!({
                    "name": u.spec.name,
                    "prefix": u.spec.prefix,
                    "state": u.state_name(),
                    "revision": u.rev.map(Rev::as_str),
                    "era": match u.era_cache { Some(Era::Modern) => "modern", Some(Era::Legacy) => "legacy", None => "unknown" },
                    "serverInfo": u.info,
                    "starts": u.starts,
                    "restarts": u.restarts,
                    "lastError": u.last_error,
                    "retryInMs": match u.state { State::Down { retry_at_ms: Some(at) } => Some(at.saturating_sub(now)), _ => None },
                    "gaveUpAfter": match u.state { State::GaveUp { attempts } => Some(attempts), _ => None },
                    "garbageLines": u.garbage,
                    "toolsKnown": u.caps.is_some(),
                    "tools": catalog.count(i, Kind::Tools),
                    "resources": catalog.count(i, Kind::Resources),
                    "resourceTemplates": catalog.count(i, Kind::Templates),
                    "prompts": catalog.count(i, Kind::Prompts),
                    "instanceOf": template,
                    "owner": owner,
                })
            })
            .chain(disabled)
            .collect()
    }
}

/// When a client is told to retry a request for a server that is starting
/// (or whose new entry is about to start): its start takes about this long.
const RETRY_STARTING_MS: u64 = 1000;

/// "restarting, retry in N s" (`why` it went), the one answer for a server
/// that is down and about to start again, whatever stopped it.
fn restarting(name: &str, ms: u64, why: &str) -> (String, Value) {
    let secs = ms.div_ceil(1000).max(1);
    (format!("server '{name}' is restarting, retry in {secs} s ({why})"), json!({ "server": name, "state": "restarting", "retryAfterMs": ms }))
}

/// "starting, retry in N s", saying whether its tools are known yet.
fn starting(up: &Upstream) -> (String, Value) {
    let name = &up.spec.name;
    let secs = RETRY_STARTING_MS / 1000;
    let known = if up.caps.is_some() { "" } else { "; its tools are not known yet" };
    let msg = format!("server '{name}' is starting{known}, retry in {secs} s");
    (msg, json!({ "server": name, "state": "starting", "retryAfterMs": RETRY_STARTING_MS }))
}
