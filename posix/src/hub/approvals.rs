//! Calls waiting for a person's approval: the state of the pipeline's
//! *approve* stage (`stages::approve`, after *validate*, before *route*).
//!
//! A call a rule of `policy.approve` covers waits here with its exact
//! bytes until someone decides it: the calling client's user, asked
//! through an `elicitation/create` (a legacy client that declared
//! elicitation; a 2026-07-28 client that declares it on the request gets
//! it in an `InputRequiredResult` whose sealed `requestState` carries the
//! call to the retry, [`Approvals::on_retry`]), or an approver on the
//! HTTP listener's `/approvals` page (or the one-time link a notification
//! carries). What they are shown is
//! the call itself: server, tool, who asked, the arguments and their
//! digest, the tool's description ([`Shown`]).
//!
//! An approval is a [`Grant`] bound to the principal, server, tool and
//! arguments digest, used once (or, when the rule says `rememberMs`, for
//! the same call again within that time); the call is then served again
//! from its bytes and passes the stage with it. A denial, a timeout, or no
//! way to ask anyone answers the call with a tool error a model can act
//! on, never a transport error. Waiting calls are bounded in all and per
//! principal ([`Quota`]); a client that cancels its call or goes away
//! withdraws it.

// Without the feature nothing asks for approval: the page's side is unused.
#![cfg_attr(not(feature = "consent"), allow(dead_code))]

use std::collections::BTreeMap;

use mcpx_core::request_state::{self as rs, Seeded};
use serde_json::{json, Value};

use super::earliest::Earliest;
use super::request::ReqCtx;
use super::ClientId;
use crate::bytes::hex::hex;
use crate::policy::approval::{ApprovalConfig, Notice, Rule, Via, NOTICE_TEXT};
use crate::policy::ratelimit::{Quota, QuotaRefusal};

/// The id prefix of the hub's `elicitation/create` asking for approval:
/// the client's answer is told apart from a relayed request's by it.
const ASK_PREFIX: &str = "mcpx-approval-";

/// The key of the approval question in a modern client's `inputRequests`
/// and `inputResponses`.
pub(super) const INPUT_KEY: &str = "mcpx-approval";

/// What an approver is shown of a waiting call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown {
    pub server: String,
    /// The upstream's name of the tool, and the name the client called.
    pub tool: String,
    pub exposed: String,
    pub principal: String,
    /// The client's `clientInfo.name`, when it gave one.
    pub client: String,
    /// Pretty-printed, long values cut ([`shown_args`]).
    pub arguments: String,
    /// SHA-256 of the exact arguments, hex.
    pub digest: String,
    /// The tool's description as the server gives it now.
    pub description: String,
    /// Its description as pinned (`policy.pin`), when it has a pin.
    pub pinned: Option<String>,
}

/// One call waiting for a decision.
#[derive(Debug)]
struct Waiting {
    client: ClientId,
    /// The client's request id, raw JSON.
    id: Vec<u8>,
    /// The request, served again once approved.
    raw: Vec<u8>,
    ctx: Option<ReqCtx>,
    shown: Shown,
    digest: [u8; 32],
    remember_ms: u64,
    via: Via,
    /// The nonce the one-time link's secret is made from, hex, and that
    /// secret (`/approvals/N?key=..`, [`Approvals::link_key`]).
    nonce: String,
    key: String,
    since_ms: u64,
    expires_ms: u64,
    /// The call's progress token (raw JSON), and when the next progress
    /// notification saying it still waits is due ([`KEEPALIVE_MS`]).
    progress: Option<(Vec<u8>, u64)>,
    /// The task the call was answered with (a 2025-11-25 task-augmented
    /// call, [`Effect::Task`]), once the hub made it.
    task: Option<String>,
}

/// How often a waiting call whose request has a progress token is told it
/// still waits: a client that resets its timeout on progress keeps waiting.
pub(super) const KEEPALIVE_MS: u64 = 10_000;

/// A decision that lets one call (or, remembered, the same call again) by.
#[derive(Debug)]
struct Grant {
    principal: String,
    server: String,
    tool: String,
    digest: [u8; 32],
    until_ms: u64,
    once: bool,
    /// Who decided, over which channel: the audit line's note.
    note: String,
}

/// A call the stage holds: what the hub knows of it.
pub(super) struct Hold<'a> {
    pub client: ClientId,
    pub id: &'a [u8],
    pub raw: &'a [u8],
    pub ctx: Option<&'a ReqCtx>,
    /// `_meta.progressToken` of the request, raw JSON.
    pub progress: Option<&'a [u8]>,
    pub shown: Shown,
    pub digest: [u8; 32],
    pub rule: &'a Rule,
    /// The client is legacy and declared form elicitation.
    pub can_elicit: bool,
    /// A 2025-11-25 task-augmented call: the TTL it asked for (ms).
    pub task_ttl: Option<u64>,
}

/// Who decides on the page: a principal (as the transport bound it:
/// `token:alice`, `mcpx-local`), or whoever holds a link's key.
#[derive(Clone, Copy, Debug)]
pub enum Decider<'a> {
    Principal(&'a [u8]),
    Link(&'a str),
}

impl Decider<'_> {
    /// May this decider see and decide `w`?
    /// May this decider see and decide a call `principal` asked for, whose
    /// link's secret is `key`?
    fn may(&self, principal: &str, key: &str, cfg: &ApprovalConfig) -> bool {
        match self {
            Decider::Principal(p) => {
                let p = super::policy::principal_name(p);
                p == principal || cfg.is_approver(p)
            }
            Decider::Link(k) => crate::bytes::ct_eq(k.as_bytes(), key.as_bytes()),
        }
    }
}

/// Why a decision on the page was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotDecided {
    /// No such call waiting (decided, withdrawn, expired, or never), or
    /// not one this decider may see: the two are not told apart.
    Unknown,
}

/// What the hub does for [`Approvals`], in order.
pub(super) enum Effect {
    /// Write this `elicitation/create` (id `id`, raw JSON) to client `client`.
    Ask { client: ClientId, id: Vec<u8>, params: Vec<u8> },
    /// Answer modern client `client`'s call `id` with an
    /// `InputRequiredResult` asking this `elicitation/create` under
    /// [`INPUT_KEY`], its `requestState` sealed to the call (`ctx`); the
    /// retry brings the decision ([`Approvals::on_retry`]).
    InputRequired { client: ClientId, id: Vec<u8>, ctx: Box<ReqCtx>, params: Value },
    /// Answer client `client`'s task-augmented call `id` with a task now
    /// (`tasks::Tasks::waiting`, `input_required` when `ask` is there),
    /// bind it to waiting call `n` ([`Approvals::bind_task`]) and, with
    /// `ask`, send that `elicitation/create` (its id, its params) tagged
    /// with the task (requirement tasks-input-request-related-task).
    Task { client: ClientId, id: Vec<u8>, n: u64, ttl_ms: u64, ask: Option<(Vec<u8>, Value)> },
    /// Withdraw the elicitation `id` sent to `client` (its call was
    /// decided elsewhere or withdrawn).
    Unask {
        client: ClientId,
        id: Vec<u8>,
        reason: &'static str,
    },
    /// The call is approved: serve it again (it passes with its grant).
    Serve {
        client: ClientId,
        raw: Vec<u8>,
        ctx: Option<ReqCtx>,
    },
    /// Answer the call with a tool error; the audit note says why.
    Decline {
        client: ClientId,
        id: Vec<u8>,
        text: String,
        note: String,
    },
    /// A call waits for the page: tell the notify hook of it, over the
    /// carrier (boxed: most effects are small). Not in a build without
    /// `consent`, where nothing waits.
    #[cfg(feature = "consent")]
    Notify(Box<(crate::policy::approval::Carrier, Notice)>),
    /// Tell client `client` its call `id` (progress token `token`, both
    /// raw JSON) still waits.
    Progress { client: ClientId, id: Vec<u8>, token: Vec<u8>, progress: u64, message: String },
    /// An approval to remember for `ttl_ms` on every replica (with a shared
    /// store, under `shared::approval_key`; the value is its `note`).
    Remember { principal: String, server: String, tool: String, digest: [u8; 32], ttl_ms: u64, note: String },
    /// A line for mcpx's log.
    Log(super::Level, String),
}

/// Calls waiting for approval, and the grants decisions left.
pub struct Approvals {
    cfg: ApprovalConfig,
    waiting: BTreeMap<u64, Waiting>,
    /// The earliest time a waiting call is due (`deadline`), forgotten
    /// where a call starts or stops waiting, or its next progress moves.
    due: Earliest,
    grants: Vec<Grant>,
    quota: Quota,
    next: u64,
    /// The links' nonces (this process's own).
    keys: Seeded,
    /// What the links' secrets are derived from: the same on every replica
    /// (the shared state key), so that any of them can check a link.
    link_seed: [u8; 32],
    /// This replica, when replicas share a store: its waiting calls are
    /// announced there (`shared::waiting_key`), for the others' pages.
    replica: Option<String>,
    announce: Announce,
    /// An HTTP listener serves `/approvals`.
    page: bool,
    /// The modern retry being routed now, approved by its user, and the
    /// note of that decision (taken by the stage, [`Approvals::take_pass`]).
    pass: Option<(ClientId, Vec<u8>, String)>,
}

/// Grants kept at once (the oldest remembered ones go first).
const MAX_GRANTS: usize = 1024;

/// The largest list of waiting calls announced to the other replicas (the
/// store's bound for it): calls past it are shown on this replica's page only.
pub const MAX_ANNOUNCED: usize = 1 << 20;

/// Where the announcement of the waiting calls stands: one write at a time
/// is in flight, so that an older list never lands after a newer one.
#[derive(Debug, Default)]
struct Announce {
    changed: bool,
    in_flight: bool,
}

impl Approvals {
    /// `link_seed`: the secret every replica shares; `replica`: this one,
    /// when they share a store.
    pub(super) fn new(cfg: &ApprovalConfig, secret_seed: [u8; 32], link_seed: [u8; 32], replica: Option<String>) -> Approvals {
        let mut seed = secret_seed.to_vec();
        seed.extend_from_slice(b"mcpx/approvals");
        Approvals {
            quota: Quota::new(
                "calls waiting for approval",
                cfg.max_waiting,
                cfg.max_waiting / 8,
            ),
            cfg: cfg.clone(),
            waiting: BTreeMap::new(),
            due: Earliest::default(),
            grants: Vec::new(),
            next: 0,
            keys: Seeded::new(rs::digest(&seed)),
            link_seed,
            replica,
            announce: Announce::default(),
            page: false,
            pass: None,
        }
    }

    pub(super) fn config(&self) -> &ApprovalConfig {
        &self.cfg
    }

    /// May principal `who` (as the transport bound it) decide the calls of
    /// every principal (`policy.approvals.approvers`)?
    pub fn is_approver(&self, who: &[u8]) -> bool {
        self.cfg.is_approver(super::policy::principal_name(who))
    }

    /// Whether the page can be used (an HTTP listener runs).
    pub(super) fn set_page(&mut self, on: bool) {
        self.page = on;
    }

    /// The grant for this exact call, used (once) if there is one: the
    /// audit note of its decision.
    pub(super) fn take_grant(
        &mut self,
        principal: &str,
        server: &str,
        tool: &str,
        digest: &[u8; 32],
        now: u64,
    ) -> Option<String> {
        self.grants.retain(|g| g.until_ms > now);
        let i = self.grants.iter().position(|g| {
            g.principal == principal && g.server == server && g.tool == tool && &g.digest == digest
        })?;
        if self.grants[i].once {
            return Some(self.grants.remove(i).note);
        }
        Some(self.grants[i].note.clone())
    }

    /// Hold a call for a decision: ask the client's user or announce it
    /// on the page, by the rule's order; with neither, or over the bounds,
    /// it is declined at once.
    pub(super) fn hold(&mut self, h: Hold<'_>, now: u64) -> Vec<Effect> {
        let via = h.rule.via.iter().copied().find(|v| match v {
            Via::Client => h.can_elicit,
            Via::Page => self.page,
        });
        let Some(via) = via else {
            let asked: Vec<&str> = h.rule.via.iter().map(|v| v.name()).collect();
            let text = format!(
                "This call needs a person's approval and nobody could be asked ({} not available). Do not retry it unchanged; ask the user to approve it another way.",
                asked.join(", ")
            );
            return vec![Effect::Decline {
                client: h.client,
                id: h.id.to_vec(),
                text,
                note: "no approver available".into(),
            }];
        };
        // A modern client is asked in its call's answer: nothing waits here,
        // the sealed `requestState` carries the call to the retry.
        if let (Via::Client, Some(ctx)) = (via, h.ctx) {
            let line = format!("approval: {} asks {}/{} (arguments sha256 {}); asked in an input round", h.shown.principal, h.shown.server, h.shown.tool, &h.shown.digest[..16]);
            return vec![Effect::Log(super::Level::Info, line), Effect::InputRequired { client: h.client, id: h.id.to_vec(), ctx: Box::new(ctx.clone()), params: elicitation(&h.shown) }];
        }
        if let Err(r) = self.quota.acquire(&h.shown.principal) {
            return vec![decline_over(h.client, h.id, &r)];
        }
        self.next += 1;
        let n = self.next;
        let nonce = hex(&self.keys.nonce());
        let key = self.link_key(self.replica.as_deref().unwrap_or(""), n, &nonce);
        self.announce.changed = true;
        let mut fx = Vec::new();
        if let Some(ttl_ms) = h.task_ttl {
            let ask = (via == Via::Client).then(|| (ask_id(n), elicitation(&h.shown)));
            fx.push(Effect::Task { client: h.client, id: h.id.to_vec(), n, ttl_ms, ask });
        }
        match via {
            Via::Client if h.task_ttl.is_some() => {}
            Via::Client => {
                let params = elicitation(&h.shown);
                fx.push(Effect::Ask {
                    client: h.client,
                    id: ask_id(n),
                    params: serde_json::to_vec(&params).unwrap_or_default(),
                });
            }
            #[cfg(feature = "consent")]
            Via::Page => fx.extend(self.cfg.notify.as_ref().map(|nf| {
                Effect::Notify(Box::new((nf.carrier.clone(), notice(n, &key, &h.shown, nf.link_base.as_deref()))))
            })),
            #[cfg(not(feature = "consent"))]
            Via::Page => {}
        }
        fx.push(Effect::Log(
            super::Level::Info,
            format!(
                "approval {n}: {} asks {}/{} (arguments sha256 {}); waiting for the {}",
                h.shown.principal,
                h.shown.server,
                h.shown.tool,
                &h.shown.digest[..16],
                via.name()
            ),
        ));
        self.due.forget();
        self.waiting.insert(
            n,
            Waiting {
                client: h.client,
                id: h.id.to_vec(),
                raw: h.raw.to_vec(),
                ctx: h.ctx.cloned(),
                shown: h.shown,
                digest: h.digest,
                remember_ms: h.rule.remember_ms,
                via,
                nonce,
                key,
                since_ms: now,
                expires_ms: now + self.cfg.timeout_ms,
                progress: h.progress.filter(|_| h.task_ttl.is_none()).map(|t| (t.to_vec(), now + KEEPALIVE_MS)),
                task: None,
            },
        );
        fx
    }

    /// Waiting call `n` was answered with task `task` ([`Effect::Task`]).
    pub(super) fn bind_task(&mut self, n: u64, task: String) {
        if let Some(w) = self.waiting.get_mut(&n) {
            w.task = Some(task);
        }
    }

    /// Waiting call `n` could not be given a task: it waits no longer (the
    /// hub answers it with why).
    pub(super) fn no_task(&mut self, n: u64) {
        let mut fx = Vec::new();
        self.take(n, None, &mut fx);
    }

    /// The waiting calls whose task is no longer live (`live`: cancelled
    /// with `tasks/cancel`, expired) are withdrawn.
    pub(super) fn withdraw_ended_tasks(&mut self, live: impl Fn(&str) -> bool) -> Vec<Effect> {
        if cfg!(not(feature = "consent")) || self.waiting.is_empty() {
            return Vec::new();
        }
        let ended: Vec<u64> = self.waiting.iter().filter(|(_, w)| w.task.as_deref().is_some_and(|t| !live(t))).map(|(n, _)| *n).collect();
        let mut fx = Vec::new();
        for n in ended {
            let Some(w) = self.take(n, Some("the task was cancelled"), &mut fx) else { continue };
            fx.push(Effect::Log(super::Level::Info, format!("approval {n}: withdrawn, its task ended ({}/{} for {})", w.shown.server, w.shown.tool, w.shown.principal)));
        }
        fx
    }

    /// Client `c`'s answer `m` (a result or error), if it answers one of
    /// the hub's approval requests.
    /// `answer` reads the result (`None`: an error answer).
    pub(super) fn on_client_answer(
        &mut self,
        c: ClientId,
        id: &[u8],
        answer: impl FnOnce() -> Option<Value>,
        now: u64,
    ) -> Option<Vec<Effect>> {
        if cfg!(not(feature = "consent")) {
            return None;
        }
        let n = parse_ask_id(id)?;
        if self
            .waiting
            .get(&n)
            .is_none_or(|w| w.client != c || w.via != Via::Client)
        {
            return Some(Vec::new());
        }
        let result = answer();
        let result = result.as_ref();
        let approved = result.is_some_and(|r| {
            r["action"] == "accept" && r["content"]["approve"] == Value::Bool(true)
        });
        let action = result.and_then(|r| r["action"].as_str()).unwrap_or("error");
        let by = format!(
            "{} via the client ({action})",
            self.waiting[&n].shown.principal
        );
        Some(self.decide(n, approved, &by, false, now))
    }

    /// Modern client `c`'s retry `id` of a call whose user was asked
    /// ([`Effect::InputRequired`]), from `principal`, with `responses`:
    /// approved, it passes the stage once routed ([`Approvals::passes`]);
    /// else it is declined.
    pub(super) fn on_retry(&mut self, c: ClientId, id: &[u8], principal: &str, responses: Option<&Value>) -> Vec<Effect> {
        if cfg!(not(feature = "consent")) {
            return Vec::new();
        }
        let answer = responses.and_then(|r| r.get(INPUT_KEY));
        let approved = answer.is_some_and(|r| r["action"] == "accept" && r["content"]["approve"] == Value::Bool(true));
        let action = answer.and_then(|r| r["action"].as_str()).unwrap_or("no answer");
        let note = format!("{} by {principal} via the client ({action}, input round)", if approved { "approved" } else { "declined" });
        if approved {
            self.pass = Some((c, id.to_vec(), note));
            return Vec::new();
        }
        let text = "The user declined this call. Do not retry it unchanged; ask the user what to do instead.".to_string();
        vec![Effect::Decline { client: c, id: id.to_vec(), text, note }]
    }

    /// Is client `c`'s request `id` the approved retry being routed?
    pub(super) fn passes(&self, c: ClientId, id: &[u8]) -> bool {
        self.pass.as_ref().is_some_and(|(x, i, _)| *x == c && i == id)
    }

    /// The approved retry's decision, taken once by the stage.
    pub(super) fn take_pass(&mut self, c: ClientId, id: &[u8]) -> Option<String> {
        if !self.passes(c, id) {
            return None;
        }
        self.pass.take().map(|(_, _, note)| note)
    }

    /// A decision taken on the page.
    pub(super) fn decide_on_page(
        &mut self,
        who: Decider<'_>,
        n: u64,
        approve: bool,
        now: u64,
    ) -> Result<Vec<Effect>, NotDecided> {
        if !self.waiting.get(&n).is_some_and(|w| who.may(&w.shown.principal, &w.key, &self.cfg)) {
            return Err(NotDecided::Unknown);
        }
        let by = match who {
            Decider::Principal(p) => format!("{} on the page", super::policy::principal_name(p)),
            Decider::Link(_) => "the holder of the link".to_string(),
        };
        Ok(self.decide(n, approve, &by, true, now))
    }

    fn decide(
        &mut self,
        n: u64,
        approve: bool,
        by: &str,
        elsewhere: bool,
        now: u64,
    ) -> Vec<Effect> {
        let mut fx = Vec::new();
        let Some(w) = self.take(n, elsewhere.then_some("decided elsewhere"), &mut fx) else { return fx };
        let verdict = if approve { "approved" } else { "declined" };
        let note = format!(
            "{verdict} by {by} after {} ms, arguments sha256 {}",
            now.saturating_sub(w.since_ms),
            w.shown.digest
        );
        fx.push(Effect::Log(
            super::Level::Info,
            format!(
                "approval {n}: {}/{} for {}: {note}",
                w.shown.server, w.shown.tool, w.shown.principal
            ),
        ));
        if approve {
            let s = &w.shown;
            if w.remember_ms > 0 {
                fx.push(self.remember(&s.principal, &s.server, &s.tool, w.digest, w.remember_ms, note, now));
            } else {
                // Used once, by the call served again now.
                self.grant(Grant { principal: s.principal.clone(), server: s.server.clone(), tool: s.tool.clone(), digest: w.digest, until_ms: now + self.cfg.timeout_ms, once: true, note });
            }
            fx.push(Effect::Serve {
                client: w.client,
                raw: w.raw,
                ctx: w.ctx,
            });
        } else {
            let text = format!(
                "The user declined this call ({}/{} with these arguments). Do not retry it unchanged; ask the user what to do instead.",
                w.shown.server, w.shown.tool
            );
            fx.push(Effect::Decline {
                client: w.client,
                id: w.id,
                text,
                note,
            });
        }
        fx
    }

    /// An approval of `principal` calling `server`'s `tool` with the
    /// arguments of `digest`, remembered for `ttl_ms`: here, and (the
    /// effect) on every replica.
    pub(super) fn remember(&mut self, principal: &str, server: &str, tool: &str, digest: [u8; 32], ttl_ms: u64, note: String, now: u64) -> Effect {
        self.grant(Grant { principal: principal.into(), server: server.into(), tool: tool.into(), digest, until_ms: now + ttl_ms, once: false, note: note.clone() });
        Effect::Remember { principal: principal.into(), server: server.into(), tool: tool.into(), digest, ttl_ms, note }
    }

    fn grant(&mut self, g: Grant) {
        if self.grants.len() >= MAX_GRANTS {
            self.grants.remove(0);
        }
        self.grants.push(g);
    }

    /// When [`Approvals::tick`] has something to do.
    pub(super) fn deadline(&self) -> Option<u64> {
        if cfg!(not(feature = "consent")) {
            return None;
        }
        self.due.get(|| self.waiting.values().map(|w| w.progress.as_ref().map_or(w.expires_ms, |(_, at)| w.expires_ms.min(*at))).min())
    }

    /// Calls whose time ran out are declined; the others with a progress
    /// token due are told they still wait.
    pub(super) fn tick(&mut self, now: u64) -> Vec<Effect> {
        if cfg!(not(feature = "consent")) {
            return Vec::new();
        }
        let mut fx = Vec::new();
        for w in self.waiting.values_mut().filter(|w| w.expires_ms > now) {
            if let Some((token, at)) = w.progress.as_mut().filter(|(_, at)| *at <= now) {
                *at = now + KEEPALIVE_MS;
                self.due.forget();
                let waited = now.saturating_sub(w.since_ms);
                fx.push(Effect::Progress { client: w.client, id: w.id.clone(), token: token.clone(), progress: waited / KEEPALIVE_MS, message: format!("waiting for a person to approve this call ({} s so far)", waited / 1000) });
            }
        }
        let due: Vec<u64> = self
            .waiting
            .iter()
            .filter(|(_, w)| w.expires_ms <= now)
            .map(|(n, _)| *n)
            .collect();
        for n in due {
            let Some(w) = self.take(n, Some("the approval timed out"), &mut fx) else { continue };
            let secs = self.cfg.timeout_ms / 1000;
            let text = format!("Nobody approved this call within {secs} s ({}/{}); it did not run. Do not retry it unchanged without asking the user.", w.shown.server, w.shown.tool);
            fx.push(Effect::Decline {
                client: w.client,
                id: w.id,
                text,
                note: format!(
                    "not decided within {secs} s, arguments sha256 {}",
                    w.shown.digest
                ),
            });
        }
        fx
    }

    /// Client `c` cancelled its request `id`, or (`None`) went away: its
    /// waiting calls are withdrawn (nothing is answered, but a task's call,
    /// whose request was answered with the task and which is cancelled
    /// with `tasks/cancel`: gone with its client, it ends declined).
    pub(super) fn withdraw(&mut self, c: ClientId, id: Option<&[u8]>) -> Vec<Effect> {
        if cfg!(not(feature = "consent")) {
            return Vec::new();
        }
        let gone: Vec<u64> = self
            .waiting
            .iter()
            .filter(|(_, w)| w.client == c && id.is_none_or(|id| w.id == id && w.task.is_none()))
            .map(|(n, _)| *n)
            .collect();
        let mut fx = Vec::new();
        for n in gone {
            // A client that went away is asked nothing more.
            let Some(w) = self.take(n, id.map(|_| "the call was cancelled"), &mut fx) else { continue };
            if w.task.is_some() {
                let text = format!("The connection that asked for this call closed before anyone approved it ({}/{}); it did not run.", w.shown.server, w.shown.tool);
                fx.push(Effect::Decline { client: c, id: w.id.clone(), text, note: "withdrawn: its connection closed".into() });
            }
            fx.push(Effect::Log(
                super::Level::Info,
                format!(
                    "approval {n}: withdrawn ({}/{} for {})",
                    w.shown.server, w.shown.tool, w.shown.principal
                ),
            ));
        }
        fx
    }

    /// Waiting call `n`, no longer waiting: its place in the quota given
    /// back and, when it was asked of its client and `unask` says why, the
    /// question withdrawn there. The one way a call stops waiting.
    fn take(&mut self, n: u64, unask: Option<&'static str>, fx: &mut Vec<Effect>) -> Option<Waiting> {
        let w = self.waiting.remove(&n)?;
        self.due.forget();
        self.announce.changed = true;
        self.quota.release(&w.shown.principal);
        if let Some(reason) = unask.filter(|_| w.via == Via::Client) {
            fx.push(Effect::Unask { client: w.client, id: ask_id(n), reason });
        }
        Some(w)
    }

    /// The calls waiting that `who` may see and decide, oldest first.
    pub fn visible(&self, who: Decider<'_>) -> Vec<Value> {
        self.waiting
            .iter()
            .filter(|(_, w)| who.may(&w.shown.principal, &w.key, &self.cfg))
            .map(|(n, w)| {
                let mut e = entry(*n, w, self.replica.as_deref());
                e["key"] = w.key.clone().into();
                e
            })
            .collect()
    }

    /// The calls waiting on the other replicas that `who` may see and
    /// decide, from the lists they announced (`lists`, each as read from
    /// the store), with their links' secrets.
    #[cfg(feature = "cluster")]
    pub fn visible_elsewhere(&self, who: Decider<'_>, lists: &[Vec<u8>]) -> Vec<Value> {
        let me = self.replica.as_deref();
        let mut out = Vec::new();
        for list in lists {
            let Ok(Value::Array(entries)) = serde_json::from_slice::<Value>(list) else { continue };
            for mut e in entries {
                let (Some(replica), Some(n), Some(nonce), Some(principal)) = (e["replica"].as_str(), e["id"].as_u64(), e["nonce"].as_str(), e["principal"].as_str()) else { continue };
                if Some(replica) == me {
                    continue;
                }
                let key = self.link_key(replica, n, nonce);
                if who.may(principal, &key, &self.cfg) {
                    e["key"] = key.into();
                    out.push(e);
                }
            }
        }
        out
    }

    /// The secret of the one-time link to call `n` of `replica` (`""`
    /// alone): the first 128 bits of SHA-256 over the shared seed, the
    /// replica, the number and the call's random `nonce`. Whoever holds the
    /// state key can check it; nobody else can make one.
    fn link_key(&self, replica: &str, n: u64, nonce: &str) -> String {
        let mut m = Vec::with_capacity(96 + replica.len() + nonce.len());
        m.extend_from_slice(b"mcpx/approval-link\0");
        m.extend_from_slice(&self.link_seed);
        m.extend_from_slice(replica.as_bytes());
        m.push(0);
        m.extend_from_slice(&n.to_be_bytes());
        m.extend_from_slice(nonce.as_bytes());
        hex(&rs::digest(&m)[..16])
    }

    /// The list of waiting calls to announce to the other replicas, if it
    /// changed and no announcement is in flight (then one is, until
    /// [`Approvals::announced`]): a JSON array, within [`MAX_ANNOUNCED`].
    pub(super) fn announcement(&mut self) -> Option<Vec<u8>> {
        let replica = self.replica.as_deref()?;
        if !self.announce.changed || self.announce.in_flight {
            return None;
        }
        self.announce = Announce { changed: false, in_flight: true };
        let mut out = b"[".to_vec();
        for (n, w) in &self.waiting {
            let e = serde_json::to_vec(&entry(*n, w, Some(replica))).unwrap_or_default();
            if out.len() + e.len() + 2 > MAX_ANNOUNCED {
                break;
            }
            if out.len() > 1 {
                out.push(b',');
            }
            out.extend_from_slice(&e);
        }
        out.push(b']');
        Some(out)
    }

    /// The last announcement was written, or (`failed`) not: then the list
    /// is announced again when asked next.
    pub(super) fn announced(&mut self, failed: bool) {
        self.announce.in_flight = false;
        self.announce.changed |= failed;
    }

    /// How many calls wait.
    pub(super) fn len(&self) -> usize {
        self.waiting.len()
    }
}

/// Waiting call `n` as the page shows it (and other replicas read it), but
/// for its link's secret.
fn entry(n: u64, w: &Waiting, replica: Option<&str>) -> Value {
    let s = &w.shown;
    json!({
        "id": n, "replica": replica, "nonce": w.nonce, "server": s.server, "tool": s.tool, "exposed": s.exposed,
        "principal": s.principal, "client": s.client, "arguments": s.arguments, "digest": s.digest,
        "description": s.description, "pinned": s.pinned, "via": w.via.name(),
        "sinceMs": w.since_ms, "expiresMs": w.expires_ms,
    })
}

fn decline_over(client: ClientId, id: &[u8], r: &QuotaRefusal) -> Effect {
    let text = format!("This call needs approval and cannot wait for it: {r}. It did not run.");
    Effect::Decline {
        client,
        id: id.to_vec(),
        text,
        note: r.to_string(),
    }
}

/// The hub's id of the elicitation for waiting call `n`, raw JSON.
fn ask_id(n: u64) -> Vec<u8> {
    format!("\"{ASK_PREFIX}{n}\"").into_bytes()
}

fn parse_ask_id(id: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(id)
        .ok()?
        .strip_prefix('"')?
        .strip_suffix('"')?;
    s.strip_prefix(ASK_PREFIX)?.parse().ok()
}

/// The `elicitation/create` asking the client's user: the exact call in
/// the message, one boolean to confirm (requirement
/// elicitation-client-show-requesting-server: mcpx is the one asking).
fn elicitation(s: &Shown) -> Value {
    let client = if s.client.is_empty() {
        String::new()
    } else {
        format!(" ({})", s.client)
    };
    let message = format!(
        "[mcpx] Approve this tool call?\n\nserver: {}\ntool: {} (called as {})\nasked by: {}{client}\narguments:\n{}\narguments sha256: {}\n\n{}",
        s.server, s.tool, s.exposed, s.principal, s.arguments, s.digest, descriptions(s)
    );
    json!({
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": { "approve": { "type": "boolean", "title": "Run this call", "description": "Run it exactly as shown" } },
            "required": ["approve"]
        }
    })
}

/// The tool's description as pinned and, when the server's differs now,
/// that one too: both untrusted text.
fn descriptions(s: &Shown) -> String {
    let or_none = |d: &str| if d.is_empty() { "(none)".to_string() } else { d.to_string() };
    match &s.pinned {
        Some(p) if *p == s.description => format!("tool description (as pinned; the server's text, untrusted):\n{}", or_none(p)),
        Some(p) => format!(
            "tool description as pinned (the server's text, untrusted):\n{}\n\nthe server's description now (changed since pinned):\n{}",
            or_none(p),
            or_none(&s.description)
        ),
        None => format!("tool description (as the server gives it, untrusted):\n{}", or_none(&s.description)),
    }
}

/// What the notify hook is told of waiting call `n`, whatever carries it
/// (see `policy::approval::Notice`): the link is `base` and the path of
/// the page's one-time link with `key`.
fn notice(n: u64, key: &str, s: &Shown, base: Option<&str>) -> Notice {
    let path = format!("/approvals/{n}?key={key}");
    let link = format!("{}{path}", base.unwrap_or(""));
    let title = format!("{} asks to run {}/{}", s.principal, s.server, s.tool);
    let head = format!("{title} (arguments sha256 {}):\n", &s.digest[..16]);
    let tail = format!("\n\nApprove or deny: {link}");
    let room = NOTICE_TEXT.saturating_sub(head.len() + tail.len());
    let text = format!("{head}{}{tail}", cut(&s.arguments, room));
    Notice {
        id: n,
        path,
        link,
        server: s.server.clone(),
        tool: s.tool.clone(),
        principal: s.principal.clone(),
        sha256: s.digest.clone(),
        arguments: s.arguments.clone(),
        title,
        text,
    }
}

/// `s`, or its longest head (whole characters) that fits in `max` bytes
/// with a mark saying it was cut.
fn cut(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    const MARK: &str = "\n… (cut: the arguments are longer; their digest is above)";
    if s.len() <= max {
        return s.into();
    }
    let mut end = max.saturating_sub(MARK.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{MARK}", &s[..end]).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::catalog_acl::Pattern;

    fn shown(principal: &str) -> Shown {
        Shown {
            server: "files".into(),
            tool: "delete".into(),
            exposed: "files__delete".into(),
            principal: principal.into(),
            client: "cli".into(),
            arguments: "{\"path\": \"/a\"}".into(),
            digest: "ab".repeat(32),
            description: "Deletes a file".into(),
            pinned: None,
        }
    }

    fn approvals() -> Approvals {
        let mut a = Approvals::new(
            &ApprovalConfig {
                approvers: vec!["admin".into()],
                timeout_ms: 1000,
                ..Default::default()
            },
            [7; 32],
            [7; 32],
            None,
        );
        a.set_page(true);
        a
    }

    fn hold(
        a: &mut Approvals,
        principal: &str,
        rule: &Rule,
        digest: [u8; 32],
        can_elicit: bool,
    ) -> Vec<Effect> {
        let h = Hold {
            client: 1,
            id: b"5",
            raw: b"{}",
            ctx: None,
            progress: Some(b"7"),
            shown: shown(principal),
            digest,
            rule,
            can_elicit,
            task_ttl: None,
        };
        a.hold(h, 0)
    }

    #[test]
    fn a_page_decision_is_for_the_caller_an_approver_or_the_link() {
        let rule = Rule::pattern(Pattern::parse("files/*").unwrap());
        let mut a = approvals();
        hold(&mut a, "alice", &rule, [1; 32], false);
        assert_eq!(a.visible(Decider::Principal(b"token:bob")).len(), 0);
        assert_eq!(a.visible(Decider::Principal(b"token:alice")).len(), 1);
        assert_eq!(a.visible(Decider::Principal(b"token:admin")).len(), 1);
        let key = a.visible(Decider::Principal(b"token:admin"))[0]["key"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(matches!(
            a.decide_on_page(Decider::Principal(b"token:bob"), 1, true, 10),
            Err(NotDecided::Unknown)
        ));
        assert!(matches!(
            a.decide_on_page(Decider::Link("00"), 1, true, 10),
            Err(NotDecided::Unknown)
        ));
        let fx = a.decide_on_page(Decider::Link(&key), 1, true, 10).unwrap();
        assert!(fx
            .iter()
            .any(|e| matches!(e, Effect::Serve { client: 1, .. })));
        // Decided once: the link is spent.
        assert!(matches!(
            a.decide_on_page(Decider::Link(&key), 1, true, 10),
            Err(NotDecided::Unknown)
        ));
        // The grant is for that digest, once.
        assert!(a
            .take_grant("alice", "files", "delete", &[2; 32], 20)
            .is_none());
        assert!(a
            .take_grant("bob", "files", "delete", &[1; 32], 20)
            .is_none());
        assert!(a
            .take_grant("alice", "files", "delete", &[1; 32], 20)
            .is_some());
        assert!(a
            .take_grant("alice", "files", "delete", &[1; 32], 20)
            .is_none());
    }

    /// A replica sharing a store with `other`: the same link seed, its own nonces.
    #[cfg(feature = "cluster")]
    fn replica(me: &str, seed: u8) -> Approvals {
        let cfg = ApprovalConfig { approvers: vec!["admin".into()], timeout_ms: 1000, ..Default::default() };
        let mut a = Approvals::new(&cfg, [seed; 32], [9; 32], Some(me.into()));
        a.set_page(true);
        a
    }

    #[test]
    #[cfg(feature = "cluster")]
    fn another_replica_lists_a_waiting_call_to_whom_may_see_it_and_checks_its_link() {
        let rule = Rule::pattern(Pattern::parse("files/*").unwrap());
        let (mut a, b) = (replica("a", 1), replica("b", 2));
        assert_eq!(a.announcement(), None, "nothing changed yet");
        hold(&mut a, "alice", &rule, [1; 32], false);
        let list = a.announcement().expect("the call is announced");
        // One write in flight: a change waits for it.
        hold(&mut a, "alice", &rule, [2; 32], false);
        assert_eq!(a.announcement(), None);
        a.announced(false);
        let list2 = a.announcement().expect("the second call too");
        let lists = [list2.clone()];
        let key_a = a.visible(Decider::Principal(b"token:alice"))[0]["key"].clone();
        // B shows A's calls to alice and the approvers, with A's keys; not to bob.
        let seen = b.visible_elsewhere(Decider::Principal(b"token:alice"), &lists);
        assert_eq!((seen.len(), &seen[0]["key"], &seen[0]["replica"]), (2, &key_a, &json!("a")));
        assert_eq!(b.visible_elsewhere(Decider::Principal(b"token:admin"), &lists).len(), 2);
        assert_eq!(b.visible_elsewhere(Decider::Principal(b"token:bob"), &lists).len(), 0);
        // The link's key is checked on B as on A; a key of another call is not it.
        assert_eq!(b.visible_elsewhere(Decider::Link(key_a.as_str().unwrap()), &lists).len(), 1);
        assert_eq!(b.visible_elsewhere(Decider::Link(&"0".repeat(32)), &lists).len(), 0);
        // A replica skips its own list; a list that is not one is ignored.
        assert_eq!(a.visible_elsewhere(Decider::Principal(b"token:admin"), &lists).len(), 0);
        assert_eq!(b.visible_elsewhere(Decider::Principal(b"token:admin"), &[list, b"{\"x\":1}".to_vec()]).len(), 1);
        // A write that failed is made again when asked next.
        a.announced(true);
        assert_eq!(a.announcement().as_ref(), Some(&list2));
        // A replica that shares no store announces nothing.
        let mut alone = approvals();
        hold(&mut alone, "alice", &rule, [1; 32], false);
        assert_eq!(alone.announcement(), None);
    }

    #[test]
    fn the_user_is_shown_the_description_as_pinned_and_a_change_beside_it() {
        let ask = |pinned: Option<&str>| elicitation(&Shown { pinned: pinned.map(str::to_string), ..shown("alice") })["message"].as_str().unwrap().to_string();
        assert!(ask(None).contains("as the server gives it, untrusted):\nDeletes a file"));
        assert!(ask(Some("Deletes a file")).contains("(as pinned; the server's text, untrusted):\nDeletes a file"));
        let changed = ask(Some("Lists files"));
        assert!(changed.contains("as pinned (the server's text, untrusted):\nLists files") && changed.contains("(changed since pinned):\nDeletes a file"), "{changed}");
    }

    #[test]
    fn a_remembered_approval_covers_the_same_call_until_it_expires() {
        let rule = Rule {
            remember_ms: 500,
            ..Rule::pattern(Pattern::parse("files/*").unwrap())
        };
        let mut a = approvals();
        hold(&mut a, "alice", &rule, [1; 32], false);
        a.decide_on_page(Decider::Principal(b"token:alice"), 1, true, 100)
            .unwrap();
        assert!(a
            .take_grant("alice", "files", "delete", &[1; 32], 200)
            .is_some());
        assert!(a
            .take_grant("alice", "files", "delete", &[1; 32], 599)
            .is_some());
        assert!(a
            .take_grant("alice", "files", "delete", &[1; 32], 600)
            .is_none());
    }

    #[test]
    fn the_client_is_asked_first_and_its_answer_decides() {
        let rule = Rule::pattern(Pattern::parse("files/*").unwrap());
        let mut a = approvals();
        let fx = hold(&mut a, "alice", &rule, [1; 32], true);
        let Effect::Ask { id, params, .. } = &fx[0] else {
            panic!("asks the client first")
        };
        assert_eq!(id, b"\"mcpx-approval-1\"");
        let p: Value = serde_json::from_slice(params).unwrap();
        assert!(
            p["message"].as_str().unwrap().contains("\"path\": \"/a\""),
            "{p}"
        );
        // Another client's answer, or one that does not say approve, is no approval.
        assert!(a
            .on_client_answer(
                2,
                id,
                || Some(json!({ "action": "accept", "content": { "approve": true } })),
                5
            )
            .unwrap()
            .is_empty());
        let fx = a
            .on_client_answer(
                1,
                id,
                || Some(json!({ "action": "accept", "content": {} })),
                5,
            )
            .unwrap();
        assert!(matches!(&fx[1], Effect::Decline { text, .. } if text.contains("declined")));
        assert!(
            a.on_client_answer(1, b"7", || None, 5).is_none(),
            "not an approval's id"
        );
    }

    #[test]
    fn a_waiting_call_with_a_progress_token_is_told_it_still_waits() {
        let rule = Rule::pattern(Pattern::parse("files/*").unwrap());
        let mut a = Approvals::new(&ApprovalConfig { timeout_ms: 25_000, ..Default::default() }, [7; 32], [7; 32], None);
        a.set_page(true);
        hold(&mut a, "alice", &rule, [1; 32], false);
        assert_eq!(a.deadline(), Some(KEEPALIVE_MS));
        let beats: Vec<u64> = (1..=2)
            .flat_map(|i| a.tick(i * KEEPALIVE_MS))
            .filter_map(|e| match e {
                Effect::Progress { token, progress, .. } if token == b"7" => Some(progress),
                _ => None,
            })
            .collect();
        assert_eq!(beats, [1, 2]);
        assert_eq!(a.deadline(), Some(25_000));
        assert!(matches!(a.tick(25_000).last(), Some(Effect::Decline { .. })));
    }

    #[test]
    fn time_and_bounds_decline_and_a_cancel_withdraws() {
        let rule = Rule::pattern(Pattern::parse("files/*").unwrap());
        let mut a = Approvals::new(
            &ApprovalConfig {
                max_waiting: 8,
                timeout_ms: 1000,
                ..Default::default()
            },
            [7; 32],
            [7; 32],
            None,
        );
        a.set_page(true);
        // A principal holds an eighth of the places: its second call waits not.
        hold(&mut a, "alice", &rule, [1; 32], false);
        let fx = hold(&mut a, "alice", &rule, [2; 32], false);
        assert!(matches!(&fx[0], Effect::Decline { text, .. } if text.contains("cannot wait")));
        assert!(matches!(
            hold(&mut a, "bob", &rule, [3; 32], false)[0],
            Effect::Log(..)
        ));
        assert_eq!(a.deadline(), Some(1000));
        let fx = a.tick(1000);
        assert_eq!(
            fx.iter()
                .filter(|e| matches!(e, Effect::Decline { .. }))
                .count(),
            2
        );
        hold(&mut a, "alice", &rule, [1; 32], false);
        assert_eq!(a.len(), 1);
        a.withdraw(1, Some(b"5"));
        assert_eq!(a.len(), 0);
        // Without a page and a client that cannot be asked: declined at once.
        a.set_page(false);
        assert!(
            matches!(&hold(&mut a, "alice", &rule, [1; 32], false)[0], Effect::Decline { text, .. } if text.contains("nobody could be asked"))
        );
    }
}
