//! *approve*: a call a rule of `policy.approve` covers, or a call of a tool
//! changed since it was pinned in mode `"approve"` (`pins`), runs only once
//! a person approved that exact call (`hub::approvals`). After *validate*
//! (only a call that could run is shown to anyone), before *route*.
//! Requirements: tools-human-in-loop-deny, tools-client-sec (mcpx takes
//! them on for every client: the inputs are shown before the call runs).

use serde_json::{json, Value};

use crate::bytes::hex::hex;
use crate::policy::approval::{args_digest, shown_args, Rule};

use super::super::approvals::{Hold, Shown};
use super::super::catalog::Kind;
use super::super::policy::ToolCall;
use super::super::request::ReqCtx;
#[cfg(feature = "consent")]
use super::super::shared::{self, At};
use super::super::tasks;
use super::super::wire::Msg;
use super::super::ClientId;
use super::{Effect, Pipeline, ToolRoute};

impl Pipeline<'_> {
    /// Does client `c`'s call pass? `false`: it waits for a decision, or
    /// was declined (the effects answer it).
    pub(super) fn approve(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>, call: &ToolCall, route: &ToolRoute) -> bool {
        // Without the feature the config has no rules and no pins.
        if cfg!(not(feature = "consent")) {
            return true;
        }
        let server = &self.upstreams[route.up].spec.name;
        let changed = self.pins.gated(server, &route.original);
        if self.approvals.config().rules.is_empty() && !changed {
            return true;
        }
        let (clients, catalog) = (self.principals, self.catalog);
        let principal = clients.principal_name(c);
        let def = || catalog.get(Kind::Tools, &call.name).map(|e| &e.item);
        let rule = match self.approvals.config().rule_for(principal, server, &route.original, def) {
            Some(r) => r.clone(),
            // The stage asks with the defaults: who approves, once.
            None if changed => Rule::default(),
            None => return true,
        };
        // A call the catalog does not know is refused by *route*.
        let Some(def) = def() else { return true };
        let args = call.arguments(m).and_then(|b| serde_json::from_slice::<Value>(b).ok()).unwrap_or_else(|| json!({}));
        let digest = args_digest(&args);
        let id = m.id_bytes().unwrap_or(b"null");
        if let Some(note) = self.approvals.take_pass(c, id) {
            // A 2026-07-28 client's user approved it in an input round.
            if rule.remember_ms > 0 {
                let fx = self.approvals.remember(principal, server, &route.original, digest, rule.remember_ms, note.clone(), self.now_ms);
                self.effects.push(Effect::Approvals(vec![fx]));
            }
            self.policy.approval(c, id, note);
            return true;
        }
        #[allow(unused_mut)] // without the feature no store is asked
        let mut granted = self.approvals.take_grant(principal, server, &route.original, &digest, self.now_ms);
        #[cfg(feature = "consent")]
        if granted.is_none() && rule.remember_ms > 0 && self.opts.cluster.shared {
            // Remembered on another replica?
            let key = shared::approval_key(principal, server, &route.original, &digest);
            match self.shared.approval(c, m, ctx, key, At::of(self.opts, self.now_ms)) {
                Ok(note) => granted = note,
                Err(ask) => {
                    self.effects.push(Effect::Shared(ask));
                    return false;
                }
            }
        }
        if let Some(note) = granted {
            self.policy.approval(c, id, note);
            return true;
        }
        let client = clients.get(&c);
        // Requirement: elicitation-empty-capability-means-form-only
        // (a modern client declares it on each request).
        let caps = ctx.map(|x| &x.caps).or_else(|| client.and_then(|cl| cl.caps()));
        let can_elicit = caps.and_then(|caps| caps.get("elicitation")).filter(|e| !e.is_null()).is_some_and(|e| e.get("form").is_some() || e.get("url").is_none());
        let description = def["description"].as_str().unwrap_or("");
        let shown = Shown {
            server: server.clone(),
            tool: route.original.to_string(),
            exposed: call.name.to_string(),
            principal: principal.to_string(),
            client: client.and_then(|cl| cl.session()).and_then(|s| s.info["name"].as_str()).unwrap_or("").to_string(),
            arguments: shown_args(&args),
            digest: hex(&digest),
            description: description.to_string(),
            pinned: self.pins.pinned_description(server, &route.original),
        };
        let progress = m.param(&["_meta", "progressToken"]).map(|r| &m.raw[r]);
        // A 2025-11-25 call that asks for a task gets one at once, which
        // waits (`tasks::Tasks::waiting`).
        let task_ttl = client.filter(|_| ctx.is_none()).and_then(|cl| tasks::legacy_ttl(m, || tasks::declared_legacy(cl.rev(), cl.caps()), &self.opts.tasks));
        let hold = Hold { client: c, id, raw: m.raw, ctx, progress, shown, digest, rule: &rule, can_elicit, task_ttl };
        let fx = self.approvals.hold(hold, self.now_ms);
        #[cfg(feature = "traces")]
        self.effects.push(Effect::Waits(c, id.to_vec(), crate::hub::trace::Wait::Approval));
        self.effects.push(Effect::Approvals(fx));
        false
    }
}
