//! Client requests: answered by the hub (handshake, ping, lists, setLevel) or
//! forwarded to the upstream that owns the name, URI or reference, with the
//! name mapped back, a fresh upstream id and a progress token unique per
//! upstream. Answers come back through `answer_client`, shaped for the client.
//!
//! It is also the way in from clients: connections, frames and batches,
//! notifications, answers to relayed requests, and the hub's side of the
//! handshake and of list announcements. What a client is and has seen, and
//! the handshake's logic, are `client`'s ([`super::client::Clients`]).

use mcpx_core::error::ErrorCode;
use std::borrow::Cow;
use std::ops::Range;

use mcpx_core::clipped::{self, Clipped};
use mcpx_core::cursor::{self, Cursor};
use mcpx_core::envelope::Message;
use mcpx_core::error::PeerCaps;
use mcpx_core::meta;
use mcpx_core::method::Method;
use mcpx_core::names;
use serde_json::{json, Value};

use crate::policy::ratelimit::Class;

use super::{apps, skills};
use super::catalog::{Channel, Kind, Naming};
use super::client::Offer;
use super::modern::{self, Grant};
use super::pending::{Called, Fwd, Origin};
use super::policy::{MetaTool, Server, ToolsView};
use super::shape::{self, RevExt};
use super::subscriptions::{self, notifies_updates, Verdict};
use super::request::{Refusal, ReqCtx};
use super::stages::{self, ToolRoute};
use super::tasks::{self, InputTo, Plan};
use super::upward;
use super::wire::{self, Bad, Kind as MsgKind, Msg, With};
use super::{shared, About, ClientId, Hub, IdKey, Level, Outcome, Oversize, UpstreamId};

fn refuse(code: ErrorCode, msg: String) -> Refusal {
    Refusal(code, msg, None)
}

/// The string param at `path` of request `m`: its span and its value
/// (borrowed from `m` unless escaped).
fn string_param<'m>(m: &Msg<'m>, path: &[&str]) -> Option<(Range<usize>, Cow<'m, str>)> {
    m.param(path).and_then(|r| wire::str_at(m.raw, r.clone()).map(|s| (r, s)))
}

impl Hub {
    /// Carries out what a relay step answered, in order (`relay`).
    pub(super) fn apply_relay(&mut self, fx: Vec<super::relay::Effect<'_>>) {
        use super::relay::Effect::*;
        for e in fx {
            match e {
                Log(level, line) => self.log(level, line),
                ToUpstream(u, bytes) => self.emit_upstream(u, bytes),
                NotifyUpstream(u, method, params) => upward::notification(&mut self.out, u, method, Some(&params)),
                CancelCall { up, call, why } => self.ups.cancel(&mut self.out, up, call, &why),
                Forget(u, call) => drop(self.pending.take(u, call)),
                Hold { up, call, h, until } => self.pending.hold(up, call, h, until),
                Resume { up, call, origin } => self.pending.resume(up, call, origin, self.now_ms, self.ups[up].spec.timeout_ms, self.opts.max_timeout_ms),
                AskClient { client, hid, method, params, cause } => {
                    self.trace.round(client, &cause, hid, &method, self.now_ms);
                    self.downward().request(client, hid.to_string().as_bytes(), &method, &params);
                }
                Admit { up, msg, link } => {
                    // Policy: the server-request rate limits (hub/policy.rs).
                    let owner = link.task.as_deref().and_then(|t| self.tasks.creator_of(up, t));
                    let to = self.relays.cause_client(&self.pending, owner, up, &link);
                    let limited = self.stages(|p| p.limit(to, crate::policy::ratelimit::Class::ServerRequest, Some(up), ""));
                    let who = to.and_then(|c| self.clients.get(&c)).map(|cl| super::policy::Who {
                        principal: super::policy::principal_name(&cl.principal),
                        revision: if cl.is_modern() { super::request::MODERN.as_str() } else { cl.rev().as_str() },
                    });
                    if let Err((why, line)) = self.policy.server_request(up, &self.ups[up].spec.name, who, msg, limited, self.now_ms) {
                        self.apply_policy(line);
                        let id = msg.id_bytes().unwrap_or(b"null");
                        self.apply_relay(super::relay::refuse(&self.ups[up].spec.name, up, id, &msg.method, crate::policy::ratelimit::Refusal::CODE, why));
                        continue;
                    }
                    // Input for a task the upstream runs goes to the task's creator (`tasks::legacy`).
                    match self.tasks.input_to(&super::task_up(up, &self.ups[up]), msg) {
                        InputTo::Relay => {
                            let alone: Vec<ClientId> = self.clients.iter().filter(|(k, c)| c.initialized() && c.may_notify() && self.starts.may_reach(up, **k, &self.clients)).map(|(k, _)| *k).collect();
                            let modern = |c: ClientId| self.clients.get(&c).map(|cl| cl.is_modern());
                            let fx = self.relays.relay_to_client(&self.ups, &self.pending, modern, owner, &alone, up, msg, &link, self.now_ms);
                            self.apply_relay(fx);
                        }
                        InputTo::Creator(c, _) if self.clients.contains_key(&c) => self.apply_relay(vec![RelayTo(c, up, msg, Default::default())]),
                        InputTo::Creator(_, id) => {
                            let fx = self.tasks.creator_gone(up, &id, msg);
                            self.apply_task_effects(fx);
                        }
                        InputTo::Task(id) => {
                            let name = &self.ups[up].spec.name;
                            let asked = super::relay::input_request(name, msg).map(|p| (self.relays.new_key(name), p));
                            let fx = self.tasks.keep_input(up, &id, msg, asked, self.now_ms);
                            self.apply_task_effects(fx);
                        }
                    }
                }
                RelayTo(c, u, msg, cause) => {
                    let mut params = msg.params_value();
                    self.tasks.rename_related(u, &mut params);
                    let Some(peer) = self.clients.get(&c).map(|cl| (cl.rev(), cl.caps_value())) else { continue };
                    let fx = self.relays.relay_request_to(&self.ups, c, peer, u, msg, params, cause, self.now_ms);
                    self.apply_relay(fx);
                }
                Route { client, msg, upstream_state, ctx } => self.route_modern(client, msg, upstream_state, ctx),
                Approval { client, msg, ctx, responses } => {
                    let principal = super::policy::principal_name(&ctx.principal).to_string();
                    let id = msg.id_bytes().unwrap_or(b"null").to_vec();
                    let fx = self.approvals.on_retry(client, &id, &principal, responses.as_ref());
                    self.apply_approvals(fx);
                    // The answers were mcpx's: neither they nor the state go on.
                    if self.approvals.passes(client, &id) {
                        self.route_modern(client, msg, None, ctx);
                    }
                }
                Check { client, msg, id, ctx, schemas, inner, responses } => match self.policy.check_input_responses(&schemas, responses.as_ref()) {
                    Some((line, Refusal(code, text, data))) => {
                        self.apply_policy([line]);
                        self.downward().error(client, Some(&id), code, &text, data);
                    }
                    None => {
                        let fx = self.relays.resume(&self.ups, &self.pending, client, msg, &id, ctx, &inner, responses, self.now_ms);
                        self.apply_relay(fx);
                    }
                },
                NotifyClient(c, method, params) => self.downward().notify(c, method, &params),
                AnswerError { client, id, code, msg, data } => self.downward().error(client, Some(&id), code, &msg, data),
                InputRequired { client, id, mut result } => {
                    modern::stamp(&self.opts, &mut result, None);
                    self.downward().result(client, &id, &serde_json::to_vec(&result).unwrap_or_default());
                }
                Answer(u, origin, m) => self.answer_client(u, origin, m),
                AnswerKept(u, origin, raw) => {
                    if let Ok(m) = wire::parse(&raw) {
                        self.answer_client(u, origin, &m);
                    }
                }
                Retry { up, mut origin, method, body } => {
                    let up_id = self.ups[up].next_request_id();
                    let body = super::relay::with_progress(&body, up_id);
                    if let Origin::Client { sent, .. } = &mut origin {
                        *sent = Some(body.clone());
                    }
                    self.pending.open_call(up, up_id, origin, self.now_ms, self.ups[up].spec.timeout_ms, self.opts.max_timeout_ms);
                    let modern = (self.ups[up].is_modern() && self.ups[up].takes_headers()).then(|| upward::written_headers(&method, Some(&body), &|tool| self.catalog.upstream_tool_schema(up, tool)));
                    upward::request(&mut self.out, up, up_id, &method, Some(&body), modern);
                }
            }
        }
    }

    pub(super) fn on_client_request(&mut self, c: ClientId, m: &Msg) {
        if self.trace.on() {
            let rev = self.clients.get(&c).map(|cl| if cl.is_modern() { super::request::MODERN.as_str() } else { cl.rev().as_str() });
            self.trace.request(c, m, rev, self.now_ms);
        }
        if modern::is_modern_request(self.clients.get(&c).is_some_and(|cl| cl.is_modern()), m) {
            return self.on_modern_request(c, m);
        }
        if let Err(Refusal(code, msg, data)) = self.clients.before_initialize(c, m).and_then(|()| {
            let routed = self.route(c, m, None);
            self.shared.routed(c, m, None, routed)
        }) {
            // The core error table decides which code this client may get.
            let code = code.for_peer(self.clients[&c].rev(), self.clients.peer_caps(c));
            self.downward().error(c, Some(m.id_bytes().unwrap_or(b"null")), code, &msg, data);
        }
    }

    /// Routes a request (a legacy one, or a modern one normalized, with its
    /// context `ctx`): one handler per method.
    pub(super) fn route(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>) -> Result<(), Refusal> {
        use Method::*;
        if matches!(m.call, TasksGet | TasksResult | TasksList | TasksCancel | TasksUpdate) {
            self.stages(|p| p.admit_task_request(c, m))?;
        }
        match m.call {
            Initialize => {
                let offer = Offer { ups: &self.ups, catalog: &self.catalog, starts: &self.starts, opts: &self.opts };
                let fx = self.clients.initialize(c, m, &offer, self.startup_settled());
                self.apply_clients(fx);
                Ok(())
            }
            Ping => {
                self.downward().result(c, m.id_bytes().unwrap_or(b"null"), b"{}");
                Ok(())
            }
            ToolsList | ResourcesList | ResourcesTemplatesList | PromptsList => self.list(c, m, ctx),
            ToolsCall => self.tools_call(c, m, ctx),
            // A task an upstream runs (modern requests only, see `modern`).
            // forwarded with the upstream's task id.
            TasksGet | TasksUpdate | TasksCancel if ctx.is_some() => {
                let (u, up, r) = ctx.and_then(|x| self.tasks.upstream_of(m, &x.principal, &super::task_ups(&self.ups))).ok_or_else(|| refuse(ErrorCode::InvalidParams, "Invalid params: no such task".into()))?;
                self.forward(c, m, ctx, u, &mut [(r, With::Str(&up))])
            }
            TasksGet | TasksResult | TasksList | TasksCancel => self.task_request(c, m.id_bytes().unwrap_or(b"null"), m, ctx),
            PromptsGet => self.prompts_get(c, m, ctx),
            ResourcesRead => self.resources_read(c, m, ctx),
            ResourcesSubscribe | ResourcesUnsubscribe => self.subscription(c, m, ctx),
            CompletionComplete => self.completion_complete(c, m, ctx),
            LoggingSetLevel => {
                let level = string_param(m, &["level"]).map(|x| x.1).unwrap_or_default();
                let fx = self.subs.set_log_level(&self.ups, c, &level)?;
                self.apply_subscriptions(fx);
                self.downward().result(c, m.id_bytes().unwrap_or(b"null"), b"{}");
                Ok(())
            }
            _ => match skills::Call::of(&m.method) {
                #[cfg(feature = "skills")]
                Some(k) => self.skills_call(c, m, ctx, k),
                _ => Err(refuse(ErrorCode::MethodNotFound, format!("Method not found: {}", m.method))),
            },
        }
    }

    /// `skills/list`, `skills/get`, `resources/directory/read` (the Skills
    /// extension, `skills`): to the server of the page or of the URI.
    #[cfg(feature = "skills")]
    fn skills_call(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>, k: skills::Call) -> Result<(), Refusal> {
        let id = m.id_bytes().unwrap_or(b"null");
        if k == skills::Call::List {
            let key = self.opts.cursor_key.to_le_bytes();
            // Requirement: pagination-invalid-cursor-32602
            let cursor = string_param(m, &["cursor"]);
            let (from, up_cursor) = match &cursor {
                None => (0, None),
                Some((_, s)) => skills::open(s, &key).ok_or_else(|| refuse(ErrorCode::InvalidParams, "Invalid params: invalid cursor".into()))?,
            };
            let sight = stages::Sight::of(&self.policy, &self.clients, &self.ups, c, ctx);
            let Some(u) = skill_server_from(&self.ups, &sight, from) else {
                // No server (left) whose skills this principal may see.
                let empty = br#"{"skills":[]}"#;
                let out = if ctx.is_some() { modern::stamped(&self.opts, empty, Some((self.opts.cache_ttl_ms, false))) } else { empty.to_vec() };
                self.downward().result(c, id, &out);
                return Ok(());
            };
            self.policy.resolved(c, m, &self.ups[u].spec, "", "");
            let (Some(_), Some(params)) = (cursor, m.params.clone()) else { return self.forward(c, m, ctx, u, &mut []) };
            // mcpx's cursor out, the server's in (none: its first page, also
            // when the cursor's server went).
            let with: Vec<(&str, Vec<u8>)> = up_cursor.filter(|_| u == from).map(|s| ("cursor", wire::quote(&s))).into_iter().collect();
            let mut bytes = m.raw[..params.start].to_vec();
            bytes.extend(wire::edit_object(m.raw, params.clone(), |k, _| if k == "cursor" { wire::Edit::Drop } else { wire::Edit::Keep }, &with));
            bytes.extend_from_slice(&m.raw[params.end..]);
            let paged = wire::parse(&bytes).map_err(|_| refuse(ErrorCode::InvalidParams, "Invalid params".into()))?;
            return self.forward(c, &paged, ctx, u, &mut []);
        }
        let (r, uri) = string_param(m, &["uri"]).ok_or_else(|| refuse(ErrorCode::InvalidParams, format!("Invalid params: {} needs a \"uri\"", m.method)))?;
        let routed = self.stages(|p| p.resource(c, m, &uri, false)).ok();
        let served = routed.as_ref().and_then(|(u, _)| skills::declared(self.ups[*u].caps.as_ref()));
        // The extension: an unknown skill or directory is -32602.
        let (u, orig) = match (k, served, routed) {
            (skills::Call::Get, Some(_), Some(r)) | (_, Some(true), Some(r)) => r,
            (skills::Call::Get, ..) => return Err(refuse(ErrorCode::InvalidParams, format!("No skill is served at {uri}"))),
            // A server with skills that reads no directories: from its manifests.
            (_, Some(false), Some((u, orig))) => {
                let server = self.ups[u].spec.name.clone();
                let res = self.skills.directory(u, &server, &orig).ok_or_else(|| {
                    refuse(ErrorCode::InvalidParams, format!("{uri} is not a directory of a skill mcpx has seen listed: server '{server}' reads no directories, so mcpx reads them from the skills' manifests"))
                })?;
                self.policy.resolved(c, m, &self.ups[u].spec, &uri, &orig);
                let out = if ctx.is_some() { modern::stamped(&self.opts, &res, Some((self.opts.cache_ttl_ms, false))) } else { res };
                self.downward().result(c, id, &out);
                return Ok(());
            }
            _ => return Err(refuse(ErrorCode::InvalidParams, format!("{uri} is not a directory resource mcpx serves"))),
        };
        self.policy.resolved(c, m, &self.ups[u].spec, &uri, &orig);
        self.forward(c, m, ctx, u, uri_edit(r, &uri, &orig).as_mut_slice())
    }


    fn tools_call(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>) -> Result<(), Refusal> {
        let (r, name) = string_param(m, &["name"]).ok_or_else(|| refuse(ErrorCode::InvalidParams, "Invalid params: tools/call needs a tool \"name\"".into()))?;
        // Tool search (hub/policy.rs), then the stages admit → authorize → validate (hub/stages).
        let mut call = match self.policy.tool_call(|| self.clients.principal_name(c), m, r, name) {
            MetaTool::Call(call) => call,
            // A call through the meta-tool is admitted as the call of the
            // tool it names (`stages`); one answered here is admitted here.
            MetaTool::Here { tool, asked } => {
                let id = m.id_bytes().unwrap_or(b"null");
                self.stages(|p| p.admit(c, id, Class::ToolCall, None, &tool))?;
                let principal = self.clients.principal_name(c).to_string();
                let ups = &self.ups;
                let tools = ToolsView { entries: self.catalog.view(Kind::Tools), generation: self.catalog.generation[Kind::Tools.idx()], server: |u: UpstreamId| Server::of(&ups[u].spec) };
                let result = self.policy.meta_answer(&principal, asked, tools)?;
                // A 2026-07-28 request's answer is complete, from mcpx.
                let result = if ctx.is_some() { modern::stamped(&self.opts, &result, None) } else { result };
                self.downward().result(c, id, &result);
                return Ok(());
            }
        };
        // A name no server listed yet may wait for its server (`lazy`).
        let Some(ToolRoute { up: u, original: orig, task_support: support }) = self.stages(|p| p.tool(c, m, ctx, &mut call))? else { return Ok(()) };
        let declared = || self.clients.get(&c).is_some_and(|cl| tasks::declared_legacy(cl.rev(), cl.caps()));
        let up = super::task_up(u, &self.ups[u]);
        let plan = self.tasks.plan(m, ctx, declared, &up, support.as_deref())?;
        if plan != Plan::Plain {
            self.tasks.room(super::task_owner(c, ctx, &self.clients).principal)?;
        }
        // The upstream may run it as its task: a 2025 one is asked to,
        // a 2026 one is told mcpx takes tasks (`tasks::poll`). What it
        // can do is known from the configured server, whose list this is.
        let ask = match plan {
            Plan::Upstream(ttl) => Some(ttl),
            Plan::Hub(ttl) if up.ext_tasks => Some(ttl),
            _ => None,
        };
        // The task follows the call to its instance (`isolation`).
        let (u, fx) = self.starts.instance_for(c, u, &self.ups, &self.clients)?;
        self.apply_starts(fx);
        call.forwarded(&orig, |edits| self.forward_renamed(c, m, ctx, u, edits, None, ask))?;
        let Plan::Hub(ttl) = plan else { return Ok(()) };
        // The call's `pending` entry becomes the task's: it outlives the
        // per-request timeout, not mcpx's hard cap.
        let Some((to, up_id)) = self.pending.by_client(c, m.id_bytes().unwrap_or(b"null")).filter(|k| k.0 == u) else { return Ok(()) };
        let id = task_id_for(&self.clients, &mut self.tasks, c, m.id_bytes().unwrap_or(b"null"));
        let Some(progress) = self.pending.make_task(to, up_id, id.clone()) else { return Ok(()) };
        let who = super::task_caller(c, m.id_bytes().unwrap_or(b"null"), ctx, &self.clients);
        let fx = self.tasks.start(id, who, &m.method, &super::task_up(u, &self.ups[u]), (up_id, progress), ttl, self.now_ms);
        self.apply_task_effects(fx);
        self.clients.answered_into(c, m.id_bytes().unwrap_or(b"null"));
        Ok(())
    }

    /// `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` (2025-11-25,
    /// `ctx` None) and `tasks/get`, `tasks/update`, `tasks/cancel` (2026-07-28)
    /// of a task the hub holds: the tasks subsystem's to answer.
    pub(super) fn task_request(&mut self, c: ClientId, rid: &[u8], m: &Msg, ctx: Option<&ReqCtx>) -> Result<(), Refusal> {
        let who = super::task_caller(c, rid, ctx, &self.clients);
        let fx = self.tasks.request(who, m.call, &m.params_value(), &super::task_ups(&self.ups), self.now_ms)?;
        self.apply_task_effects(fx);
        // A call waiting for approval whose task was cancelled waits no longer.
        let tasks = &self.tasks;
        let fx = self.approvals.withdraw_ended_tasks(|t| tasks.live(t));
        self.apply_approvals(fx);
        Ok(())
    }

    fn prompts_get(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>) -> Result<(), Refusal> {
        let (r, name) = string_param(m, &["name"]).ok_or_else(|| refuse(ErrorCode::InvalidParams, "Invalid params: prompts/get needs a prompt \"name\"".into()))?;
        let (u, orig) = self.stages(|p| p.prompt(c, m, &name))?;
        self.policy.resolved(c, m, &self.ups[u].spec, &name, &orig);
        // A skill shown as a prompt (`skills`): its SKILL.md, read from its
        // server, is the answer. While the server starts, the request waits
        // whole, and comes here again.
        #[cfg(feature = "skills")]
        if let Some(shown) = self.catalog.get(Kind::Prompts, &name).and_then(|e| skills::prompt_uri(&e.item)).map(str::to_string) {
            if let Some(fx) = self.starts.park_if_asleep(&mut self.ups[u], u, c, m, ctx, self.now_ms) {
                self.apply_starts(fx);
                return Ok(());
            }
            let id = m.id_bytes().unwrap_or(b"null");
            let uri = super::scoped::split(&shown).map_or_else(|| shown.clone(), |(_, orig)| orig);
            let params = m.params.clone().unwrap_or(0..0);
            let mut read = br#"{"jsonrpc":"2.0","id":"#.to_vec();
            read.extend_from_slice(id);
            read.extend_from_slice(br#","method":"resources/read","params":"#);
            read.extend(wire::edit_object(m.raw, params, |k, _| if matches!(k, "name" | "arguments") { wire::Edit::Drop } else { wire::Edit::Keep }, &[("uri", wire::quote(&uri))]));
            read.push(b'}');
            let read = wire::parse(&read).map_err(|_| refuse(ErrorCode::InvalidParams, "Invalid params".into()))?;
            self.forward(c, &read, ctx, u, &mut [])?;
            // Answered as the prompt it was asked as.
            if let Some((pu, up_id)) = self.pending.by_client(c, id) {
                if let Some(Origin::Client { client, id, progress, renamed_uri, modern, sent, .. }) = self.pending.origin(pu, up_id).cloned() {
                    let method = Called::SkillPrompt(shown.into());
                    self.pending.set_origin(pu, up_id, Origin::Client { client, id, progress, method, renamed_uri, modern, sent });
                }
            }
            return Ok(());
        }
        self.forward(c, m, ctx, u, &mut [(r, With::Str(&orig))])
    }

    fn resources_read(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>) -> Result<(), Refusal> {
        let (r, uri) = string_param(m, &["uri"]).ok_or_else(|| refuse(ErrorCode::InvalidParams, "Invalid params: resources/read needs a \"uri\"".into()))?;
        let (u, orig) = self.stages(|p| p.resource(c, m, &uri, false))?;
        self.policy.resolved(c, m, &self.ups[u].spec, &uri, &orig);
        // A UI URI's contents are shown by `apps` (with the rest of the result).
        let renamed = (orig != uri && !apps::is_ui(&orig)).then(|| (orig.clone(), uri.to_string()));
        self.forward_renamed(c, m, ctx, u, uri_edit(r, &uri, &orig).as_mut_slice(), renamed, None)
    }

    fn completion_complete(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>) -> Result<(), Refusal> {
        let ty = string_param(m, &["ref", "type"]).map(|x| x.1).unwrap_or_default();
        match &*ty {
            "ref/prompt" => {
                let (r, name) = string_param(m, &["ref", "name"]).ok_or_else(|| refuse(ErrorCode::InvalidParams, "Invalid params: ref/prompt needs a \"name\"".into()))?;
                // Requirement: completion-security
                let known = self.catalog.get(Kind::Prompts, &name).map(|e| e.up);
                self.stages(|p| p.admit_completion(c, m, known))?;
                let (u, orig) = self.stages(|p| p.prompt(c, m, &name))?;
                self.policy.resolved(c, m, &self.ups[u].spec, &name, &orig);
                self.forward(c, m, ctx, u, &mut [(r, With::Str(&orig))])
            }
            "ref/resource" => {
                let (r, uri) = string_param(m, &["ref", "uri"]).ok_or_else(|| refuse(ErrorCode::InvalidParams, "Invalid params: ref/resource needs a \"uri\"".into()))?;
                let known = self.catalog.route_template(&uri).or_else(|| self.ups.route_uri(&self.catalog, &uri)).map(|(u, _)| u);
                self.stages(|p| p.admit_completion(c, m, known))?;
                let (u, orig) = self.stages(|p| p.resource(c, m, &uri, true))?;
                self.policy.resolved(c, m, &self.ups[u].spec, &uri, &orig);
                self.forward(c, m, ctx, u, uri_edit(r, &uri, &orig).as_mut_slice())
            }
            _ => Err(refuse(ErrorCode::InvalidParams, "Invalid params: \"ref\" must be a ref/prompt or a ref/resource".into())),
        }
    }

    /// `resources/subscribe` and `resources/unsubscribe` of client `c`
    /// ([`subscriptions::Subscriptions::toggle`]).
    fn subscription(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>) -> Result<(), Refusal> {
        let id = m.id_bytes().unwrap_or(b"null");
        let (r, uri) = string_param(m, &["uri"]).ok_or_else(|| refuse(ErrorCode::InvalidParams, format!("Invalid params: {} needs a \"uri\"", m.method)))?;
        let (u, orig) = self.stages(|p| p.resource(c, m, &uri, false))?;
        if !notifies_updates(&self.ups[u]) {
            let name = &self.ups[u].spec.name;
            return Err(refuse(ErrorCode::MethodNotFound, format!("server '{name}' does not support resource subscriptions")));
        }
        let full = self.clients.get(&c).is_some_and(|cl| cl.subs >= self.opts.max_subscriptions);
        let (fx, verdict) = self.subs.toggle(&self.ups, c, u, &uri, m.call == Method::ResourcesSubscribe, full);
        self.apply_subscriptions(fx);
        match verdict {
            Verdict::Answer => {
                self.downward().result(c, id, b"{}");
                Ok(())
            }
            Verdict::Forward => self.forward(c, m, ctx, u, uri_edit(r, &uri, &orig).as_mut_slice()),
            Verdict::Full => Err(refuse(ErrorCode::InternalError, format!("this client has {} subscriptions (mcpx's limit)", self.opts.max_subscriptions))),
        }
    }

    /// Carries out what a subscription or log-level step answered, in order.
    pub(super) fn apply_subscriptions(&mut self, fx: Vec<subscriptions::Effect>) {
        use subscriptions::Effect::*;
        for e in fx {
            match e {
                LevelSent(u, l) => self.ups[u].level_sent = l,
                Send(u, method, p) => {
                    let t = self.ups[u].spec.timeout_ms;
                    self.send_upstream(u, method, Some(&p), Origin::Fire, t);
                }
                Listen(u) => self.apply_upstream(vec![super::upstream::Effect::OpenListen(u)]),
                Count(c, more) => {
                    if let Some(cl) = self.clients.get_mut(&c) {
                        if more {
                            cl.subs += 1;
                        } else {
                            cl.subs -= 1;
                        }
                    }
                }
                ClientLevel(c, level) => {
                    if self.clients.get_mut(&c).is_some_and(|cl| cl.log_level.replace(level) != Some(level)) {
                        self.out.extend(self.clients.session_changed(c));
                    }
                }
                SessionChanged(c) => self.out.extend(self.clients.session_changed(c)),
            }
        }
    }

    /// `tools/list`, `resources/list`, `resources/templates/list`,
    /// `prompts/list`: one page of the aggregated list.
    fn list(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>) -> Result<(), Refusal> {
        let k = Kind::of_list(m.call).expect("a list method");
        let id = m.id_bytes().unwrap_or(b"null");
        let cur = match m.param(&["cursor"]) {
            None => None,
            Some(r) if &m.raw[r.clone()] == b"null" => None,
            Some(r) => Some(wire::string_at(m.raw, r).ok_or_else(|| refuse(ErrorCode::InvalidParams, "Invalid params: the cursor must be a string".into()))?),
        };
        let cur = cur.as_deref();
        let modern = ctx.is_some();
        let key = self.opts.cursor_key.to_le_bytes();
        let pos = match cur {
            None => 0,
            Some(s) => {
                // Requirement: pagination-invalid-cursor-32602
                let cu = cursor::decode(s, &key).map_err(|_| refuse(ErrorCode::InvalidParams, "Invalid params: invalid cursor".into()))?;
                if cu.list != k as u8 {
                    return Err(refuse(ErrorCode::InvalidParams, "Invalid params: invalid cursor (it belongs to another list)".into()));
                }
                // A cursor from an older generation is served from the same
                // position: the client has been (or will be) told the list changed.
                cu.position as usize
            }
        };
        if cur.is_none() {
            let starts = &self.starts;
            let fx = self.ups.refresh_stale(k, self.now_ms, |u| starts.is_instance(u));
            self.apply_upstream(fx);
        }
        let rev = if modern { super::request::MODERN } else { self.clients[&c].rev() };
        let page = self.opts.page_size.max(1);
        let offer_tasks = !modern && k == Kind::Tools && self.clients.get(&c).is_some_and(|cl| tasks::declared_legacy(cl.rev(), cl.caps()));
        // Policy (hub/policy.rs): the tool-search meta-tools, or the
        // principal's own catalog with trust marks.
        let (items, more) = match self.policy.meta_listing(self.clients.principal_name(c), k, rev) {
            Some(items) => (items, None),
            None => {
                let view = stages::Sight::of(&self.policy, &self.clients, &self.ups, c, ctx).view(&self.catalog, k);
                let end = (pos + page).min(view.len());
                let items: Vec<Value> = view.get(pos.min(view.len())..end).unwrap_or(&[]).iter().map(|e| {
                    let mut item = self.policy.listed_item(e, Server::of(&self.ups[e.up].spec), rev);
                    if offer_tasks {
                        tasks::offer(&mut item);
                    }
                    item
                }).collect();
                (items, (end < view.len()).then_some(end))
            }
        };
        let mut result = json!({ k.result_key(): items });
        if let Some(end) = more {
            let next = Cursor { list: k as u8, position: end as u32, generation: self.catalog.generation[k.idx()] };
            result["nextCursor"] = Value::String(cursor::encode(&next, &key).as_str().to_string());
        }
        let mut page = serde_json::to_vec(&result).unwrap_or_default();
        if modern {
            // Requirement: caching-server-must-hint
            page = modern::stamped_list(&self.opts, &self.ups, &page, k);
        } else if cur.is_none() {
            let ch = k.channel();
            let fp = stages::Sight::of(&self.policy, &self.clients, &self.ups, c, None).fingerprint(&mut self.catalog, ch, rev);
            let first = self.clients.get_mut(&c).is_some_and(|cl| {
                cl.known_fp[ch.idx()] = fp;
                !std::mem::replace(&mut cl.listed[ch.idx()], true)
            });
            if first {
                self.out.extend(self.clients.session_changed(c));
            }
        }
        self.downward().result(c, id, &page);
        Ok(())
    }

    /// Forwards client request `m` to upstream `u`, with `edits` (absolute
    /// ranges in `m.raw`, inside params) applied.
    fn forward(&mut self, c: ClientId, m: &Msg, ctx: Option<&ReqCtx>, u: UpstreamId, edits: &mut [(Range<usize>, With<'_>)]) -> Result<(), Refusal> {
        self.forward_renamed(c, m, ctx, u, edits, None, None)
    }

    fn forward_renamed(
        &mut self,
        c: ClientId,
        m: &Msg,
        ctx: Option<&ReqCtx>,
        u: UpstreamId,
        edits: &mut [(Range<usize>, With<'_>)],
        renamed_uri: Option<(String, String)>,
        task_ttl: Option<u64>,
    ) -> Result<(), Refusal> {
        let (u, fx) = self.starts.instance_for(c, u, &self.ups, &self.clients)?;
        self.apply_starts(fx);
        if let Some(fx) = self.starts.park_if_asleep(&mut self.ups[u], u, c, m, ctx, self.now_ms) {
            self.apply_starts(fx);
            return Ok(());
        }
        if !self.ups[u].is_ready() {
            return Err(self.ups.unavailable(u, self.now_ms));
        }
        if self.pending.full(self.opts.max_pending) {
            return Err(refuse(ErrorCode::InternalError, format!("mcpx has {} requests in flight (its limit); try again later", self.opts.max_pending)));
        }
        let cid = m.id_bytes().unwrap_or(b"null");
        if self.pending.client_has(c, cid) {
            return Err(refuse(ErrorCode::InvalidRequest, "Invalid request: this id is already used by a request in flight".into()));
        }
        let up_id = self.ups[u].next_request_id();
        // The upstream always gets a progress token, unique per upstream (its
        // request id), so progress can keep a long call alive even when the
        // client asked for none; the client's own token is restored on the way
        // back, and progress nobody asked for stops at the hub.
        // Requirement: progress-token-unique-sender
        let progress = m.env.progress_token().map(|t| t.bytes().to_vec());
        let mut digits = [0u8; 20];
        let token = mcpx_core::decimal::u64(up_id, &mut digits);
        let ctx = ctx.cloned().map(Box::new);
        if let Some(l) = ctx.as_ref().and_then(|x| x.log_level) {
            let fx = subscriptions::lower_level_for(&self.ups, u, l);
            self.apply_subscriptions(fx);
        }
        let modern_up = self.ups[u].is_modern();
        // A 2026-07-28 upstream gets the hub's request context in `_meta`.
        let context = match modern_up {
            true => self.clients.upstream_context(c, ctx.as_deref(), task_ttl.is_some(), &self.opts, self.subs.level()),
            false => serde_json::Map::new(),
        };
        let mut add: Vec<(&str, Vec<u8>)> = context.iter().map(|(k, v)| (k.as_str(), serde_json::to_vec(v).unwrap_or_default())).collect();
        // A traced call carries the trace on, its parent the hub's span (`trace`).
        let traced = self.trace.call(c, cid, up_id, || (&self.ups[u].spec.name, self.ups[u].spec.remote, self.ups[u].rev.map(|r| r.as_str())), self.now_ms);
        if let Some(t) = &traced {
            add.extend(t.meta());
        }
        // A 2026-07-28 client's own request context (`io.modelcontextprotocol/*`
        // in `_meta`) is the hub's to act on: it is never passed on.
        let modern_client = ctx.is_some();
        // The headers of a 2026-07-28 request mirror its params: read from
        // the client's view, with the upstream's name where the hub renamed.
        let headers = (modern_up && self.ups[u].takes_headers()).then(|| {
            let name = mcpx_core::headers::name_source(&m.method).and_then(|s| m.param(&[s.field()])).and_then(|r| match edits.iter().find(|(e, _)| *e == r) {
                Some((_, renamed)) => renamed.text(),
                None => wire::string_at(m.raw, r),
            });
            upward::forwarded_headers(&m.method, name, m.env.params(), &|tool| self.catalog.upstream_tool_schema(u, tool))
        });
        let drop = |k: &str| modern_client && k.starts_with(mcpx_core::meta::keys::RESERVED_PREFIX);
        let len = m.params.as_ref().map_or(0, Range::len) + token.len() + edits.iter().map(|(_, w)| w.size() + 16).chain(add.iter().map(|(_, v)| v.len() + 16)).sum::<usize>() + 32;
        // A client's `task` member never reaches the upstream as it is: the
        // hub runs the task itself, or asks a 2025-11-25 server with tasks to
        // run it (`task_ttl`, the TTL mcpx grants, `tasks::legacy`), or the
        // request is processed as a plain one.
        // Requirement: tasks-receiver-without-cap-ignore, tasks-tool-no-cap-no-augment
        let (bytes, params) = match (m.param(&["task"]), task_ttl.filter(|_| !modern_up)) {
            (None, None) => wire::request_with(up_id, &m.method, len, |out| wire::upstream_params(out, m.env.params(), m.env.meta(), edits, token, drop, &add)),
            (_, ttl) => {
                let mut body = Vec::with_capacity(len);
                wire::upstream_params(&mut body, m.env.params(), m.env.meta(), edits, token, drop, &add);
                let ask: Vec<(&str, Vec<u8>)> = ttl.map(|t| ("task", format!("{{\"ttl\":{t}}}").into_bytes())).into_iter().collect();
                let body = wire::edit_object(&body, 0..body.len(), |k, _| if k == "task" { wire::Edit::Drop } else { wire::Edit::Keep }, &ask);
                wire::request_with(up_id, &m.method, body.len(), |out| out.extend_from_slice(&body))
            }
        };
        let sent = modern_up.then(|| bytes[params].to_vec());
        let origin = Origin::Client { client: c, id: IdKey::new(cid), progress, method: Called::new(&m.method), renamed_uri, modern: ctx, sent };
        self.pending.open_call(u, up_id, origin, self.now_ms, self.ups[u].spec.timeout_ms, self.opts.max_timeout_ms);
        if task_ttl.is_some() && !self.ups[u].is_modern() {
            let pending = &self.pending;
            self.tasks.asked(u, up_id, |u, id| pending.contains(u, id));
        }
        upward::traced_request(&mut self.out, u, up_id, &m.method, bytes, headers, traced.map(|t| t.header()));
        Ok(())
    }

    /// An upstream's answer to a request forwarded for a client (`o` is its
    /// `Origin::Client`), to the client.
    pub(super) fn answer_client(&mut self, u: UpstreamId, o: Origin, m: &Msg) {
        let Origin::Client { client: c, id, progress, method, renamed_uri, modern, sent } = o else { return };
        let Some(cl) = self.clients.get(&c) else { return };
        let rev = if modern.is_some() { super::request::MODERN } else { cl.rev() };
        let call = method.known();
        if call == Some(Method::ToolsCall) {
            let up = super::task_up(u, &self.ups[u]);
            if let Some(task) = m.result_bytes().and_then(|r| tasks::Tasks::legacy_created(&up, r)) {
                let tid = task_id_for(&self.clients, &mut self.tasks, c, &id);
                let fx = self.tasks.adopt(&up, tid, c, &id, super::task_owner(c, modern.as_deref(), &self.clients), modern.is_some(), task, self.now_ms);
                self.apply_task_effects(fx);
                self.clients.answered_into(c, &id);
                return;
            }
        }
        let renamed = match (&renamed_uri, m.result_bytes()) {
            (Some((orig, exposed)), Some(res)) => Some(rename_contents(res, orig, exposed)),
            _ => None,
        };
        let res = renamed.as_deref().or(m.result_bytes());
        // Skills: entries' URIs as the client knows them, manifests kept,
        // a skill shown as a prompt answered as one (`skills`).
        #[cfg(feature = "skills")]
        let skilled = match self.skills_result(u, c, &id, &method, modern.as_deref(), m.result_bytes(), res) {
            Ok(r) => r,
            Err(()) => return,
        };
        #[cfg(feature = "skills")]
        let res = skilled.as_deref().or(res);
        // MCP Apps: the result's UI URIs as the client knows them (`apps`).
        let ui = match call {
            Some(Method::ToolsCall | Method::ResourcesRead) => res.and_then(|r| apps::exposed_result(r, &self.ups[u].spec.name)),
            _ => None,
        };
        let res = ui.as_deref().or(res);
        let capped = if call == Some(Method::CompletionComplete) { res.and_then(cap_completion) } else { None };
        let res = capped.as_deref().or(res);
        // Policy: structuredContent against the tool's outputSchema.
        let checked = if call == Some(Method::ToolsCall) { res.and_then(|r| self.policy.check_output(|| self.clients.tracked(c, &id), r)) } else { None };
        let checked = checked.and_then(|(line, instead)| {
            self.apply_policy([line]);
            instead
        });
        let res = checked.as_deref().or(res);
        if let Some(res) = res {
            // The result's view: the message's own when nothing above
            // rewrote it (its members read with it), else one scan of the
            // rewritten bytes.
            let own = m.env.result().is_some_and(|v| std::ptr::eq(v.bytes(), res));
            let view = if own { m.env.result() } else { mcpx_core::json::parse(res).ok() };
            let member = |k: &str| if own { m.env.result_member(k) } else { view.as_ref().and_then(|v| v.get(k)) };
            // What the answer says, from its view (`Outcome`): nothing reads
            // it again. Only a tool's result can be a tool error (`isError`).
            let outcome = if call == Some(Method::ToolsCall) { Outcome::of_result(member("isError")) } else { Outcome::Result };
            let text = |k: &str| member(k).and_then(|v| v.as_str()).and_then(|s| String::from_utf8(s.decoded().collect()).ok());
            let mut read_hints = None;
            if self.ups[u].is_modern() {
                match text("resultType").as_deref() {
                    None | Some("complete") => {}
                    Some("task") if modern.is_some() && super::task_up(u, &self.ups[u]).ext_tasks => {}
                    Some("input_required") => {
                        // The relay keeps the input requests as a value (`relay`).
                        let v: Value = serde_json::from_slice(res).unwrap_or(Value::Null);
                        return match modern {
                            Some(ctx) => {
                                let schemas = v.get("inputRequests").and_then(|r| self.policy.elicitation_schemas(&self.ups[u].spec.name, r));
                                let fx = self.relays.wrap_input_required(&self.ups[u].spec, c, &id, &method, &ctx, v, schemas, self.now_ms);
                                self.apply_relay(fx)
                            }
                            None => {
                                let col = super::relay::Collect { up: u, client: c, id: id.to_vec(), progress, method: method.to_string(), renamed_uri, sent: sent.unwrap_or_else(|| b"{}".to_vec()), state: None, waiting: 0, responses: Default::default() };
                                let peer = self.clients.get(&c).map(|cl| (cl.rev(), cl.caps_value()));
                                let fx = self.relays.collect_input_required(&self.ups, peer, col, v, self.now_ms);
                                self.apply_relay(fx)
                            }
                        };
                    }
                    Some(other) => {
                        let server = self.ups[u].spec.name.clone();
                        let msg = format!("server '{server}' answered {method} with resultType '{other}', which mcpx does not know");
                        self.log(super::Level::Warn, msg.clone());
                        return self.downward().error(c, Some(&id), ErrorCode::InternalError, &msg, Some(json!({ "server": server })));
                    }
                }
                if call == Some(Method::ResourcesRead) {
                    if let Some(t) = member("ttlMs").and_then(|t| t.as_i64()).and_then(|t| u64::try_from(t).ok()) {
                        let h = (t, text("cacheScope").as_deref() == Some("public"));
                        self.ups[u].read_hints = Some(h);
                        read_hints = Some(h);
                    }
                }
            }
            if let Some(ctx) = &modern {
                // Spliced, never read into a value: ids and numbers pass byte for byte.
                let Some(view) = view.filter(|v| v.kind() == mcpx_core::json::Kind::Object) else {
                    return self.downward().result_as(c, &id, res, outcome);
                };
                let (tasked, fx) = self.tasks.reply(&super::task_up(u, &self.ups[u]), c, &method, &view, &ctx.principal, self.now_ms);
                self.apply_task_effects(fx);
                let tasked = match tasked {
                    Ok(t) => t,
                    Err(Refusal(code, msg, data)) => return self.downward().error(c, Some(&id), code, &msg, data),
                };
                // Skills' results are cacheable (their own hints, else mcpx's);
                // public only when every principal sees the same.
                let hints = match skills::Call::cacheable(&method) {
                    true => Some(member("ttlMs").and_then(|t| t.as_i64()).and_then(|t| u64::try_from(t).ok()).map_or((self.opts.cache_ttl_ms, false), |t| (t, text("cacheScope").as_deref() == Some("public") && !self.policy.restricts))),
                    false => (call == Some(Method::ResourcesRead)).then(|| read_hints.unwrap_or_else(|| modern::up_hints(&self.opts, &self.ups[u], None))),
                };
                let out = match tasked {
                    Some(t) => modern::stamped(&self.opts, &t, hints),
                    None => modern::stamped_view(&self.opts, &view, hints),
                };
                return self.downward().result_as(c, &id, &out, outcome);
            }
            return match view.and_then(|v| shape::result_view(&method, v, rev)) {
                Some(shaped) => self.downward().result_as(c, &id, &shaped, outcome),
                None => self.downward().result_as(c, &id, res, outcome),
            };
        }
        if let Some(err) = m.error_bytes() {
            if self.ups[u].is_modern() && m.env.error_code().and_then(ErrorCode::from_code) == Some(ErrorCode::UnsupportedProtocolVersion) {
                // Requirement: versioning-era-cache (re-probed when the assumption fails)
                let name = self.ups[u].spec.name.clone();
                self.log(super::Level::Warn, format!("server '{name}' no longer accepts protocol revision 2026-07-28; restarting it to negotiate again"));
                self.ups[u].era_cache = None;
                self.out.push_back(super::Output::RestartUpstream(u, "protocol version no longer supported"));
            }
            let (out, code) = error_for(err, rev, self.clients.peer_caps(c));
            let outcome = match Outcome::of_error(m.env.error()) {
                Outcome::Error { retry_after_s, .. } => Outcome::Error { code, retry_after_s },
                other => other,
            };
            self.downward().raw_error(c, &id, &out, outcome);
        }
    }

    /// A skills result `res` of server `u` for client `c`'s request `id`
    /// (`method`, its context when modern): the entries' URIs as the client
    /// knows them and their manifests kept, a skill shown as a prompt
    /// answered as one; `None` when it is no skills result; Err when the
    /// client was answered with an error already (a file whose bytes are
    /// not those of its server's manifest: `raw`, the result as it came).
    #[cfg(feature = "skills")]
    fn skills_result(&mut self, u: UpstreamId, c: ClientId, id: &[u8], method: &Called, modern: Option<&super::request::ReqCtx>, raw: Option<&[u8]>, res: Option<&[u8]>) -> Result<Option<Vec<u8>>, ()> {
        let shown_skill = match method {
            Called::SkillPrompt(shown) => Some(shown),
            _ => None,
        };
        // Requirement: skills-host-verify-digest (a gateway refuses what a host must not use)
        let read = method.known() == Some(Method::ResourcesRead);
        if let Some(r) = raw.and_then(|res| {
            let server = &self.ups[u].spec.name;
            self.skills.refused(u, server, (read, shown_skill.is_some()), res, |p| self.pins.hides(server, Kind::Prompts, p))
        }) {
            self.log(r.level, r.msg.clone());
            if r.level == Level::Warn {
                let server = self.ups[u].spec.name.clone();
                self.policy.skill_mismatch(&server);
            }
            self.downward().error(c, Some(id), r.code, &r.msg, Some(r.data));
            return Err(());
        }
        let passed = match (skills::Call::of(method), res) {
            (Some(k), Some(r)) => {
                let sight = stages::Sight::of(&self.policy, &self.clients, &self.ups, c, modern);
                // With pinning, a skill is as its prompt was pinned (`pins`);
                // one the catalog lists otherwise makes the hub read the
                // server's prompts again, for the pins to see the change.
                let (server, prompts) = (self.ups[u].spec.name.clone(), self.catalog.view(Kind::Prompts));
                let mut stale = false;
                let hold = |e: &Value| {
                    let held = skills::as_prompt(e, &server).is_some_and(|p| self.pins.hides(&server, Kind::Prompts, &p));
                    stale |= held && skills::listed_otherwise(prompts, &server, e);
                    held
                };
                let a = self.skills.answer(k, u, &server, |from| skill_server_from(&self.ups, &sight, from), &self.opts.cursor_key.to_le_bytes(), hold, r);
                if let Some(shown) = a.as_ref().and_then(|a| a.held.first()) {
                    let msg = format!("server '{server}': skill {shown} is not as it was pinned; held back until `mcpx pin accept` (see /status)");
                    self.log(if stale { Level::Warn } else { Level::Debug }, msg.clone());
                    if stale {
                        let fx = self.ups.relist(u, &[Kind::Prompts], self.starts.is_instance(u));
                        self.apply_upstream(fx);
                    }
                    if k == skills::Call::Get {
                        self.downward().error(c, Some(id), ErrorCode::InvalidParams, &msg, Some(json!({ "server": server, "uri": shown })));
                        return Err(());
                    }
                }
                a.map(|a| a.bytes)
            }
            _ => None,
        };
        let res = passed.as_deref().or(res);
        // A skill shown as a prompt: the prompt's result.
        let prompt = match (shown_skill, res) {
            (Some(shown), Some(r)) => match self.skills.prompt_result(u, &self.ups[u].spec.name, shown, r) {
                Some(p) => Some(p),
                None => {
                    let msg = format!("server '{}' answered the read of {shown} without its contents", self.ups[u].spec.name);
                    self.downward().error(c, Some(id), ErrorCode::InternalError, &msg, None);
                    return Err(());
                }
            },
            _ => None,
        };
        Ok(prompt.or(passed))
    }

}

/// Replaces the URI at `r` when the upstream knows it by another name.
/// A completion result with over 100 values, cut to the first 100 (the
/// schema's maximum) with `hasMore` set and `total` kept or added; `None`
/// when it is within the limit.
// Requirement: completion-max-100
fn cap_completion(res: &[u8]) -> Option<Vec<u8>> {
    const MAX: usize = 100;
    // Counted on the bytes; read as a value only to cut (rare).
    let n = mcpx_core::json::parse(res).ok()?.get("completion")?.get("values")?.elements().count();
    if n <= MAX {
        return None;
    }
    let mut v: Value = serde_json::from_slice(res).ok()?;
    let c = v.get_mut("completion")?.as_object_mut()?;
    if let Some(Value::Array(vals)) = c.get_mut("values") {
        vals.truncate(MAX);
    }
    c.entry("total").or_insert(json!(n));
    c.insert("hasMore".into(), Value::Bool(true));
    serde_json::to_vec(&v).ok()
}

fn uri_edit<'a>(r: Range<usize>, exposed: &str, orig: &'a str) -> Option<(Range<usize>, With<'a>)> {
    (exposed != orig).then_some((r, With::Str(orig)))
}

/// A `ReadResourceResult` with contents of URI `orig` shown as `exposed`
/// (spliced: every other byte as it is).
fn rename_contents(res: &[u8], orig: &str, exposed: &str) -> Vec<u8> {
    let Some(contents) = mcpx_core::json::parse(res).ok().and_then(|v| v.get("contents")) else { return res.to_vec() };
    let exposed = wire::quote(exposed);
    let splices: Vec<mcpx_core::rewrite::Splice> = contents
        .elements()
        .filter_map(|c| c.get("uri"))
        .filter(|u| u.as_str().is_some_and(|s| s.eq_str(orig)))
        .map(|u| mcpx_core::rewrite::Splice::raw(u.span(), &exposed))
        .collect();
    wire::apply(res, &splices)
}

/// An upstream's error object with its code replaced when the client may
/// not get it (core error table), e.g. -32042 before 2025-11-25 or to a
/// client without URL elicitation.
fn error_for(err: &[u8], rev: shape::Rev, caps: PeerCaps) -> (Vec<u8>, i64) {
    let Some(r) = wire::find(err, 0..err.len(), &["code"]) else { return (err.to_vec(), 0) };
    let Some(code) = std::str::from_utf8(&err[r.clone()]).ok().and_then(|s| s.parse::<i64>().ok()) else { return (err.to_vec(), 0) };
    let to = mcpx_core::error::code_for(code, rev, caps);
    if to == code {
        (err.to_vec(), code)
    } else {
        (wire::splice(err, vec![(r, to.to_string().into_bytes())]), to)
    }
}

/// Between the shared state (`shared`) and the rest of the hub.
impl Hub {
    /// A modern retry carrying `requestState` `token`: verified here, then
    /// continued here (used once: in the store when one is shared, else in
    /// this hub's set), or forwarded to the replica holding its call,
    /// which makes the claim itself.
    pub(super) fn redeem_state(&mut self, c: ClientId, m: &Msg, id: &[u8], ctx: ReqCtx, token: &str, responses: Option<Value>) {
        let v = match self.relays.verify_state(token, &m.method, &ctx, self.now_ms) {
            Ok(v) => v,
            Err(e) => return self.apply_shared(vec![shared::Effect::RefuseState(c, id.to_vec(), e)]),
        };
        let at = shared::At::of(&self.opts, self.now_ms);
        if let Some(to) = self.relays.held_elsewhere(&v.inner) {
            let e = self.shared.forward_state(c, m.env.bytes(), id, &ctx.principal, to, at);
            return self.apply_shared(vec![e]);
        }
        if at.cluster.shared {
            let op = shared::Op::ClaimNonce { nonce: v.nonce, ttl_ms: self.relays.claim_ttl_ms(&v, self.now_ms) };
            let e = self.shared.claim(c, m, id, ctx, op, v.inner, responses, at);
            return self.apply_shared(vec![e]);
        }
        match self.relays.claim_state(&v, &ctx.principal, self.now_ms) {
            Ok(()) => {
                let fx = self.relays.resume(&self.ups, &self.pending, c, m, id, ctx, &v.inner, responses, self.now_ms);
                self.apply_relay(fx)
            }
            Err(e) => self.apply_shared(vec![shared::Effect::RefuseState(c, id.to_vec(), e)]),
        }
    }

    /// Does what the shared state asked, in order (a `Vec`, as
    /// `Hub::apply_upstream` says why).
    pub(super) fn apply_shared(&mut self, effects: Vec<shared::Effect>) {
        use shared::Effect;
        for e in effects {
            match e {
                Effect::Out(mut o) => {
                    // The trace goes on there, this replica's span its parent.
                    if let super::Output::Forward { client, request, traceparent, .. } = &mut o {
                        *traceparent = self.trace.context(*client, request);
                    }
                    self.out.push_back(o);
                }
                Effect::Refuse(c, id, Refusal(code, msg, data)) => self.downward().error(c, Some(&id), code, &msg, data),
                Effect::RefuseState(c, id, e) => {
                    let (code, msg, data) = self.relays.state_refusal(e, self.now_ms);
                    self.downward().error(c, Some(&id), code, &msg, data);
                }
                Effect::Resume { c, id, msg, ctx, inner, responses } => {
                    if let Ok(m) = wire::parse(&msg) {
                        let fx = self.relays.resume(&self.ups, &self.pending, c, &m, &id, ctx, &inner, responses, self.now_ms);
                        self.apply_relay(fx);
                    }
                }
                Effect::Route { c, msg, ctx: Some(ctx) } => self.route_normalized(c, &msg, ctx),
                Effect::Route { c, msg, ctx: None } => {
                    if let Ok(m) = wire::parse(&msg) {
                        self.on_client_request(c, &m);
                    }
                }
                Effect::Limited(c, id, r) => stages::refused_shared(&mut self.policy, c, &id, &r),
                Effect::Closed(c, id) => {
                    if let Some(t) = self.clients.close(c, &id) {
                        self.policy.forget(t);
                    }
                }
                Effect::Forward(c, id, task) => {
                    let principal = self.clients.get(&c).map(|cl| cl.principal.clone()).unwrap_or_default();
                    let e = self.shared.forward_again(c, &id, &principal, task, shared::At::of(&self.opts, self.now_ms));
                    self.apply_shared(vec![e]);
                }
                Effect::TakeOver { c, id, task, from, why, record, msg } => {
                    if self.tasks.restore_one(&record, &super::task_ups(&self.ups), self.now_ms, Some(&from)).is_none() {
                        self.apply_shared(vec![shared::not_taken_over(c, &id, &from, &why)]);
                        continue;
                    }
                    self.log(super::Level::Warn, format!("task {task} taken over from mcpx replica '{from}', which could not answer ({why})"));
                    let fx = self.tasks.taken_over(task, &super::task_ups(&self.ups), self.now_ms);
                    self.apply_task_effects(fx);
                    if let Ok(m) = wire::parse(&msg) {
                        self.on_modern_request(c, &m);
                    }
                }
            }
        }
    }
}

/// Modern (2026-07-28) requests: what routes between their rules
/// (`modern`), the listen streams (`modern::Listens`) and the rest of the
/// hub.
impl Hub {
    /// A modern request from client `c`.
    pub(super) fn on_modern_request(&mut self, c: ClientId, m: &Msg) {
        // No handshake to hold: the request itself waits (up to
        // `startup_wait_ms`) so that what it sees covers every upstream.
        if !self.startup_settled() && self.listens.hold(c, m.env.bytes()) {
            return;
        }
        let id = m.id_bytes().unwrap_or(b"null").to_vec();
        let (caps, log_level) = match modern::request_meta(m, &id, self.opts.client_revisions) {
            Ok(meta) => meta,
            Err((answer, outcome)) => return self.downward().reply(c, Some(&id), answer, outcome),
        };
        let Some(cl) = self.clients.get_mut(&c) else { return };
        cl.spoke_modern();
        let ctx = ReqCtx { caps, log_level, principal: cl.principal.clone(), salient: modern::salient(m) };
        // A task another replica runs is its to answer (`shared`).
        if let Some((to, task)) = self.tasks.elsewhere(m, self.opts.cluster.replica.as_deref()) {
            let e = self.shared.forward_task(c, m, &id, &ctx.principal, to, task, shared::At::of(&self.opts, self.now_ms));
            return self.apply_shared(vec![e]);
        }
        use Method::*;
        let done = match m.call {
            ServerDiscover => {
                let f = shape::Features::of(super::request::MODERN);
                let body = modern::discover(&self.opts, &self.ups, &f, self.ups.capabilities_for(&self.catalog, &ctx.caps), self.ups.instructions(&self.catalog, &self.opts.separator, &f), tasks::declared(&ctx.caps));
                self.downward().result(c, &id, &body);
                Ok(())
            }
            // Requirement: versioning-dual-era-server-selects-by-opening (conformance: legacy-only methods are -32601 on a modern request)
            Initialize | Ping | LoggingSetLevel | ResourcesSubscribe | ResourcesUnsubscribe => Err(modern::legacy_only(m)),
            SubscriptionsListen => self.listen(c, &id, &m.params_value(), &ctx),
            ToolsCall | PromptsGet | ResourcesRead => modern::call(m).map(|call| match call {
                modern::Call::First => self.route_view(c, m, ctx),
                modern::Call::Answers => self.route_modern(c, m, None, ctx),
                modern::Call::Retry(state, responses) => self.redeem_state(c, m, &id, ctx, &state, responses),
            }),
            ToolsList | ResourcesList | ResourcesTemplatesList | PromptsList | CompletionComplete => {
                self.route_modern(c, m, None, ctx);
                Ok(())
            }
            TasksGet | TasksUpdate | TasksCancel if tasks::declared(&ctx.caps) && self.tasks.upstream_of(m, &ctx.principal, &super::task_ups(&self.ups)).is_some() => {
                self.route_modern(c, m, Some(None), ctx);
                Ok(())
            }
            // `tasks/get`, `tasks/update`, `tasks/cancel` of a task the hub runs.
            TasksGet | TasksUpdate | TasksCancel => self.task_request(c, &id, m, Some(&ctx)),
            // The Skills extension's methods (`skills`).
            _ if skills::Call::of(&m.method).is_some() => {
                self.route_modern(c, m, None, ctx);
                Ok(())
            }
            _ => Err(modern::not_found(m)),
        };
        if let Err(Refusal(code, msg, data)) = done {
            self.downward().error(c, Some(&id), modern::error_code(code), &msg, data);
        }
    }

    /// Routes modern request `m` normalized (`modern::normalized`) with its
    /// context: from its view when it is normal already.
    pub(super) fn route_modern(&mut self, c: ClientId, m: &Msg, upstream_state: Option<Option<String>>, ctx: ReqCtx) {
        if modern::is_normal(m, upstream_state.as_ref()) {
            return self.route_view(c, m, ctx);
        }
        self.route_normalized(c, &modern::normalized(m, upstream_state), ctx);
    }

    /// Routes modern request `bytes`, already normalized, with its context
    /// (also once more when it waited for its server to start, `lazy`).
    pub(super) fn route_normalized(&mut self, c: ClientId, bytes: &[u8], ctx: ReqCtx) {
        let Ok(m) = wire::parse(bytes) else { return };
        self.route_view(c, &m, ctx);
    }

    /// Routes modern request `m` with its context.
    fn route_view(&mut self, c: ClientId, m: &Msg, ctx: ReqCtx) {
        let routed = self.route(c, m, Some(&ctx));
        if let Err(Refusal(code, msg, data)) = self.shared.routed(c, m, Some(&ctx), routed) {
            self.downward().error(c, Some(m.id_bytes().unwrap_or(b"null")), modern::error_code(code), &msg, data);
        }
    }

    /// `subscriptions/listen` (params `p`): what the stream may be granted.
    fn listen(&mut self, c: ClientId, id: &[u8], p: &Value, ctx: &ReqCtx) -> Result<(), Refusal> {
        let Some(filter) = p.get("notifications").filter(|f| f.is_object()) else {
            return Err(refuse(ErrorCode::InvalidParams, "Invalid params: subscriptions/listen needs a \"notifications\" object".into()));
        };
        self.listens.may_open(c, id)?;
        // Tasks extension: `taskIds` needs the extension declared on this request.
        let task_ids = match filter.get("taskIds") {
            None => None,
            Some(Value::Array(ids)) if tasks::declared(&ctx.caps) => {
                let asked: Vec<String> = ids.iter().filter_map(Value::as_str).map(str::to_string).collect();
                Some(self.tasks.listenable(&ctx.principal, &asked, &super::task_ups(&self.ups)))
            }
            Some(Value::Array(_)) => return Err(tasks::missing_extension("subscriptions/listen with taskIds")),
            Some(_) => return Err(refuse(ErrorCode::InvalidParams, "Invalid params: notifications.taskIds must be an array of task ids".into())),
        };
        let caps = self.ups.capabilities();
        let fps = stages::listen_fingerprints(&self.policy, &self.clients, &self.ups, &mut self.catalog, c);
        let asked = filter.get("resourceSubscriptions").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
        // Those whose upstream can notify updates and that `c` may see (`stages::authorize`).
        let sight = stages::Sight::of(&self.policy, &self.clients, &self.ups, c, None);
        let uris = asked.filter(|uri| self.ups.route_uri(&self.catalog, uri).is_some_and(|(u, _)| sight.server_visible(u) && notifies_updates(&self.ups[u]))).map(str::to_string).collect();
        let fx = self.listens.open(c, id, filter, Grant { caps, uris, task_ids, fps });
        self.apply_listens(fx);
        Ok(())
    }

    /// Does what the listen streams asked, in order.
    pub(super) fn apply_listens(&mut self, fx: Vec<modern::Effect>) {
        use modern::Effect;
        for e in fx {
            match e {
                Effect::Notify(c, method, params) => self.downward().notification(c, method, Some(&params)),
                Effect::Answer(c, id, result) => self.downward().result(c, &id, &result),
                Effect::Subscribe(c, uri) => {
                    let fx = self.subs.subscribe(&self.ups, &self.catalog, c, &uri);
                    self.apply_subscriptions(fx);
                }
                // Unless another stream of the client still wants it.
                Effect::Unsubscribe(c, uri) if !self.listens.wants_uri(c, &uri) => {
                    let fx = self.subs.unsubscribe(&self.ups, &self.catalog, c, &uri);
                    self.apply_subscriptions(fx);
                }
                Effect::Unsubscribe(..) => {}
            }
        }
    }

}

/// The way in from clients: connections, frames, the messages in them
/// (requests to the router above, notifications, answers to relayed
/// requests), and the hub's side of the handshake (`client`).
impl Hub {

    pub(super) fn on_client_message(&mut self, c: ClientId, bytes: &[u8]) {
        if !self.clients.contains_key(&c) {
            return;
        }
        match wire::parse_frame(bytes) {
            Err(Bad { message, .. }) if wire::is_notification_shaped(bytes) => {
                self.log(Level::Debug, format!("client {c}: invalid notification dropped: {message}"));
            }
            Err(Bad { code, message, id }) => {
                let id = id.or_else(|| self.clients.unreadable_id(c).map(<[u8]>::to_vec));
                self.downward().error(c, id.as_deref(), code, message, None);
            }
            Ok(Message::Single(env)) => self.on_client_view(c, &wire::view(env)),
            // A JSON-RPC batch (see [`Clients::batch`]).
            Ok(Message::Batch(b)) => match self.clients.batch(&mut self.out, c, b) {
                Ok(views) => {
                    for env in views {
                        self.on_client_view(c, &wire::view(env));
                    }
                }
                Err(msg) => {
                    let id = self.clients.unreadable_id(c);
                    self.downward().error(c, id, ErrorCode::InvalidRequest, &msg, None);
                }
            },
        }
    }

    /// One checked message from client `c`: the only way in.
    pub(super) fn on_client_view(&mut self, c: ClientId, m: &wire::Msg) {
        // Its policy record opens with it (`tracked`): the era its line
        // names is the one routing decides on below.
        let (policy, now) = (&mut self.policy, self.now_ms);
        let begin = |principal: &[u8], stage: &super::client::Stage| {
            policy.begin(c, m, now, || {
                let revision = if modern::is_modern_request(stage.is_modern(), m) { super::request::MODERN.as_str() } else { stage.rev().as_str() };
                super::policy::Who { principal: super::policy::principal_name(principal), revision }
            })
        };
        if !self.clients.opened(c, m, begin) {
            return;
        }
        match m.kind {
            wire::Kind::Request => {
                if self.draining {
                    let msg = "mcpx is shutting down: it takes no new requests";
                    return self.downward().error(c, m.id_bytes(), ErrorCode::InternalError, msg, None);
                }
                self.on_client_request(c, m)
            }
            wire::Kind::Notification => self.on_client_notification(c, m),
            wire::Kind::Result | wire::Kind::Error => {
                let answer = || serde_json::from_slice::<Value>(m.raw).ok().and_then(|mut v| v.get_mut("result").map(Value::take));
                if let Some(fx) = m.id_bytes().and_then(|id| self.approvals.on_client_answer(c, id, answer, self.now_ms)) {
                    return self.apply_approvals(fx);
                }
                if let Some(hid) = self.trace.on().then(|| m.id_u64()).flatten() {
                    self.trace.round_answered(c, hid, m.env.error_code(), self.now_ms);
                }
                let fx = self.relays.on_client_response(&self.ups, c, m);
                self.apply_relay(fx)
            }
        }
    }

    pub(super) fn on_client_disconnected(&mut self, c: ClientId) {
        if self.clients.remove(&c).is_none() {
            return;
        }
        self.trace.client_gone(c, self.now_ms);
        for (u, id, _) in self.pending.drain_client(c) {
            self.ups.cancel(&mut self.out, u, id, "the client disconnected");
        }
        let fx = self.relays.drop_client(&self.ups, c);
        self.apply_relay(fx);
        let fx = self.approvals.withdraw(c, None);
        self.apply_approvals(fx);
        self.tasks.client_gone(c);
        let fx = self.subs.drop_client(&self.ups, &self.catalog, c);
        self.apply_subscriptions(fx);
        self.listens.client_gone(c);
        self.policy.client_gone(c);
        self.shared.drop_client(c);
    }

    fn on_client_notification(&mut self, c: ClientId, m: &wire::Msg) {
        match m.call {
            Method::Initialized => {
                let fx = self.clients.initialized(c);
                self.apply_clients(fx);
            }
            Method::Cancelled => self.client_cancelled(c, m),
            // The roots are the client's (none configured): every ready upstream is told.
            Method::RootsListChanged if self.opts.roots.is_none() => {
                for u in (0..self.ups.len()).filter(|u| self.ups[*u].is_ready()) {
                    upward::notification(&mut self.out, u, Method::RootsListChanged, None);
                }
            }
            _ => {} // notifications/progress for relayed requests etc.: nothing to do
        }
    }

    /// `notifications/cancelled` from a client: of a request it sent, or of
    /// one relayed to it.
    fn client_cancelled(&mut self, c: ClientId, m: &wire::Msg) {
        let Some(r) = m.param(&["requestId"]) else { return };
        let reason = m.param(&["reason"]).and_then(|r| wire::string_at(m.raw, r));
        let rid = &m.raw[r];
        // A listen stream the client ends (`modern::Listens`).
        if let Some(fx) = self.listens.end(c, rid) {
            return self.apply_listens(fx);
        }
        let fx = self.approvals.withdraw(c, Some(rid));
        if !fx.is_empty() {
            return self.apply_approvals(fx);
        }
        if let Some((u, id)) = self.pending.by_client(c, rid) {
            // A call the server was asked to run as its task: its
            // task is cancelled once the answer names it.
            if self.tasks.ask_cancelled(u, id) && self.pending.set_origin(u, id, super::pending::Origin::TaskCancelled) {
                self.clients.unanswered(&mut self.out, c, &IdKey::new(rid));
                return;
            }
            // Requirement: cancellation-ref-same-direction-in-progress
            self.pending.take(u, id);
            // A cancelled request gets no answer: its batch does not wait for one.
            self.clients.unanswered(&mut self.out, c, &IdKey::new(rid));
            // Requirement: cancellation-log-reasons
            let server = self.ups[u].spec.name.clone();
            self.log(super::Level::Debug, format!("a client cancelled its request to server '{server}': {}", reason.as_deref().unwrap_or("no reason given")));
            self.ups.cancel(&mut self.out, u, id, reason.as_deref().unwrap_or("cancelled by the client"));
        } else if let Some(hid) = wire::id_u64(rid) {
            let fx = self.relays.cancelled_by_client(&self.ups, c, hid, reason.as_deref());
            self.apply_relay(fx);
        }
    }

    /// Have upstreams had their chance to come up (or the wait run out)?
    pub(super) fn startup_settled(&self) -> bool {
        self.ups.iter().all(|u| u.settled)
            || self.started_ms.is_none_or(|s| self.now_ms >= s + self.opts.startup_wait_ms)
    }

    /// Answers held `initialize` requests, and serves the modern requests
    /// that waited, once startup has settled.
    pub(super) fn release_held_inits(&mut self) {
        if !self.startup_settled() {
            return;
        }
        let offer = Offer { ups: &self.ups, catalog: &self.catalog, starts: &self.starts, opts: &self.opts };
        let fx = self.clients.release_held(&offer);
        self.apply_clients(fx);
        // The modern requests that waited, in order.
        while let Some((c, raw)) = self.listens.next_early() {
            if let Some(m) = self.clients.contains_key(&c).then(|| wire::parse(&raw).ok()).flatten() {
                self.on_modern_request(c, &m);
            }
        }
    }

    /// After a catalog change: tell each client that has read the list and
    /// whose view of it really changed (legacy), and every listen stream
    /// that asked for the channel (modern).
    pub(super) fn announce(&mut self, ch: Channel) {
        // The listen streams that asked for the channel (seen through each one's catalog).
        let seen = self.policy.restricts.then(|| self.listens.wanting(ch).into_iter().map(|c| (c, stages::listen_fingerprint(&self.policy, &self.clients, &self.ups, &mut self.catalog, c, ch))).collect::<Vec<_>>());
        let fx = self.listens.list_changed(ch, seen.as_deref());
        self.apply_listens(fx);
        let ids: Vec<ClientId> = self.clients.keys().copied().collect();
        for c in ids {
            let (listed, rev, known) = {
                let cl = &self.clients[&c];
                (cl.listed[ch.idx()] && cl.initialized(), cl.rev(), cl.known_fp[ch.idx()])
            };
            if !listed {
                continue;
            }
            let fp = stages::Sight::of(&self.policy, &self.clients, &self.ups, c, None).fingerprint(&mut self.catalog, ch, rev);
            if fp != known {
                if let Some(cl) = self.clients.get_mut(&c) {
                    cl.known_fp[ch.idx()] = fp;
                }
                self.downward().notification(c, ch.notification(), None);
            }
        }
    }
}

/// The upstreams' messages, routed to the subsystems they concern.
impl Hub {
    /// Sends a request of the hub's own to `u`; returns its id, or `None` at the cap.
    pub(super) fn send_upstream(&mut self, u: UpstreamId, method: Method<'static>, params: Option<&[u8]>, origin: Origin, timeout: u64) -> Option<u64> {
        let name = method.as_str().unwrap_or_default();
        if self.pending.full(self.opts.max_pending) {
            let msg = format!("server '{}': {name} not sent: {} requests in flight (mcpx's limit)", self.ups[u].spec.name, self.opts.max_pending);
            self.log(Level::Warn, msg);
            return None;
        }
        let id = self.ups.next_request_id(u);
        self.pending.open_own(u, id, origin, self.now_ms, timeout, self.opts.max_timeout_ms);
        if self.ups[u].is_modern() || method == Method::ServerDiscover {
            // Requirement: meta-request-params-meta-required (every modern request carries _meta)
            // (with the client capabilities `params` declare, if any: `tasks` polls)
            let declared = params.and_then(|p| wire::find(p, 0..p.len(), &["_meta", meta::CLIENT_CAPABILITIES_KEY]).and_then(|r| serde_json::from_slice(&p[r]).ok()));
            let mut declared = declared.filter(Value::is_object).unwrap_or_else(|| json!({}));
            if let Some(o) = declared.as_object_mut() {
                apps::declare(o);
            }
            let meta = modern::upstream_meta(&self.opts, declared);
            let p = wire::set_meta(params.unwrap_or(b"{}"), &meta, |_| false);
            let headers = self.ups[u].takes_headers().then(|| upward::written_headers(name, Some(&p), &|tool| self.catalog.upstream_tool_schema(u, tool)));
            upward::request(&mut self.out, u, id, name, Some(&p), headers);
        } else {
            upward::request(&mut self.out, u, id, name, params, None);
        }
        Some(id)
    }

    /// `stream`: the hub's request on whose response stream it came, if any.
    pub(super) fn on_upstream_message(&mut self, u: UpstreamId, bytes: &[u8], stream: Option<u64>) {
        let m = match self.ups.heard(u, bytes, self.now_ms) {
            Ok(m) => m,
            Err(None) => return,
            Err(Some(warning)) => return self.log(Level::Warn, warning),
        };
        match m.kind {
            MsgKind::Request => {
                let fx = self.relays.on_upstream_request(&self.ups, u, &m, stream);
                self.apply_relay(fx)
            }
            MsgKind::Notification => self.on_upstream_notification(u, &m),
            MsgKind::Result | MsgKind::Error => {
                let Some((id, f)) = m.id_u64().and_then(|id| Some((id, self.pending.take(u, id)?))) else {
                    let msg = format!("server '{}': answer to an unknown or expired request ignored", self.ups[u].spec.name);
                    self.log(Level::Debug, msg);
                    return;
                };
                self.tasks.ask_done(u, id);
                match f.origin {
                    o @ Origin::Client { .. } => {
                        // An answer ends a use: the idle time counts from here.
                        self.ups[u].last_used_ms = self.now_ms;
                        self.answer_client(u, o, &m)
                    }
                    Origin::Held(h) => {
                        let fx = self.relays.held_answered(&self.ups, h, &m, self.now_ms);
                        self.apply_relay(fx)
                    }
                    Origin::Task(t) => {
                        let fx = self.tasks.answered(&super::task_up(u, &self.ups[u]), &t, &m, self.now_ms);
                        self.apply_task_effects(fx);
                    }
                    Origin::Discover => {
                        let fx = self.ups.on_discover_answer(u, &m, &self.opts);
                        self.apply_upstream(fx);
                    }
                    Origin::Listen => {
                        let fx = self.ups.on_listen_end(u, &m);
                        self.apply_upstream(fx);
                    }
                    Origin::Initialize => {
                        let fx = self.ups.on_initialize_answer(u, &m);
                        self.apply_upstream(fx);
                    }
                    Origin::List(k) => {
                        let fx = self.ups.on_list_page(u, k, &m, self.now_ms, self.starts.is_instance(u), &self.opts);
                        self.apply_upstream(fx);
                    }
                    Origin::TaskCancelled => {
                        let fx = self.tasks.cancelled_answered(&super::task_up(u, &self.ups[u]), &m);
                        self.apply_task_effects(fx);
                    }
                    Origin::Fire | Origin::Ping => {}
                }
            }
        }
    }

    /// Replaces `u`'s items of kind `k` in the catalog (those its pins let
    /// through; `cached`: its lists kept on disk), announcing a change.
    pub(super) fn set_items(&mut self, u: UpstreamId, k: Kind, items: Vec<Value>, cached: bool) {
        let (items, fx) = self.pins.listed(&self.ups[u].spec.name, k, items, cached);
        self.apply_pins(fx);
        let sep = self.opts.separator.clone();
        let naming: Vec<(String, String)> = self.ups.iter().map(|x| (x.spec.name.clone(), x.spec.prefix.clone())).collect();
        let naming: Vec<Naming> = naming.iter().map(|(n, p)| Naming { name: n, prefix: p }).collect();
        let (changed, renamed) = self.catalog.set(u, k, items, &naming, &sep);
        let lines = self.policy.listed(&self.ups[u].spec.name, k, self.catalog.items(u, k));
        self.apply_policy(lines);
        let server = &self.ups[u].spec.name;
        let lines: Vec<String> = renamed.iter().map(|r| {
            let why = match r.change {
                names::Change::Shortened => format!("prefix, separator and name are over {} characters", names::MAX_LEN),
                names::Change::Replaced => "it has characters outside [A-Za-z0-9_-]".to_string(),
                names::Change::Salted | names::Change::Kept => "another item has the same exposed name".to_string(),
            };
            format!("server '{server}': {} '{}' is exposed as '{}' ({why})", k.item_word(), r.original, r.exposed)
        }).collect();
        for l in lines {
            self.log(Level::Info, l);
        }
        if changed {
            self.announce(k.channel());
        }
    }

    fn on_upstream_notification(&mut self, u: UpstreamId, m: &Msg) {
        if let Some(r) = m.param(&["_meta", meta::SUBSCRIPTION_ID_KEY]) {
            // Requirement: subscriptions-stdio-client-correlate
            let current = self.ups[u].listen;
            if wire::id_u64(&m.raw[r]).is_none_or(|id| Some(id) != current) {
                return;
            }
        }
        use Method::*;
        match m.call {
            SubscriptionsAcknowledged => {}
            Progress => self.upstream_progress(u, m),
            TasksStatus => {
                let fx = self.tasks.status_from_upstream(&super::task_up(u, &self.ups[u]), &m.params_value(), self.now_ms);
                self.apply_task_effects(fx);
            }
            LogMessage => self.upstream_log(u, m),
            ToolsListChanged | PromptsListChanged | ResourcesListChanged => {
                let kinds: &[Kind] = match m.call {
                    ToolsListChanged => &[Kind::Tools],
                    PromptsListChanged => &[Kind::Prompts],
                    _ => &[Kind::Resources, Kind::Templates],
                };
                let fx = self.ups.relist(u, kinds, self.starts.is_instance(u));
                self.apply_upstream(fx);
            }
            ResourcesUpdated => self.upstream_resource_updated(u, m),
            ElicitationComplete => {
                let url_ok = |c: super::ClientId| self.clients.get(&c).is_some_and(|cl| cl.rev().supports(mcpx_core::revision::Feature::ElicitationUrlMode));
                let fx = self.relays.elicitation_complete(u, m, url_ok);
                self.apply_relay(fx)
            }
            // Of a request it relayed.
            Cancelled => {
                let Some(r) = m.param(&["requestId"]) else { return };
                let reason = m.param(&["reason"]).and_then(|r| wire::string_at(m.raw, r));
                let rid = &m.raw[r];
                // Requirement: cancellation-log-reasons
                let server = &self.ups[u].spec.name;
                let line = format!("server '{server}' cancelled its request {}: {}", String::from_utf8_lossy(rid), reason.as_deref().unwrap_or("no reason given"));
                self.log(Level::Debug, line);
                let fx = self.relays.cancelled_by_upstream(u, rid, reason.as_deref());
                self.apply_relay(fx);
            }
            _ => {}
        }
    }

    /// `notifications/message` from upstream `u`: to the clients whose
    /// level admits it, the logger prefixed with the server's name.
    fn upstream_log(&mut self, u: UpstreamId, m: &Msg) {
        // Policy: the log cap per request (hub/policy.rs).
        let capped = self.policy.admit_log(u, &self.ups[u].spec.name, &self.pending);
        self.apply_policy(capped.warns);
        if !capped.admitted {
            return;
        }
        let mut p = m.params_value();
        let server = &self.ups[u].spec.name;
        let logger = match p.get("logger").and_then(Value::as_str) {
            Some(l) => format!("{server}/{l}"),
            None => server.clone(),
        };
        p["logger"] = Value::String(logger);
        // Modern clients: only those with a request to `u` in flight whose
        // `logLevel` admits it (and, for an isolated instance, its owner).
        // Requirement: meta-loglevel-per-request (no logLevel → no log notifications)
        let level = p.get("level").and_then(Value::as_str).and_then(super::request::level_index).unwrap_or(0);
        let mut to: Vec<ClientId> = self.pending.modern_log_clients(u, level);
        to.retain(|c| self.starts.may_reach(u, *c, &self.clients));
        to.sort();
        to.dedup();
        let body = serde_json::to_vec(&p).unwrap_or_default();
        for c in to {
            self.downward().notification(c, Method::LogMessage, Some(&body));
        }
        // Legacy clients get what the level they set admits (a modern
        // request may have lowered the upstream's level below it).
        if self.subs.level().and_then(super::request::level_index).is_some_and(|l| level < l) {
            return;
        }
        let ids: Vec<_> = self.clients.iter().filter(|(k, c)| c.initialized() && c.may_notify() && self.starts.may_reach(u, **k, &self.clients)).map(|(k, _)| *k).collect();
        for c in ids {
            self.downward().notify(c, Method::LogMessage, &p);
        }
    }

    /// `notifications/resources/updated` from upstream `u`: to the
    /// subscribers of the URI (as clients see it).
    fn upstream_resource_updated(&mut self, u: UpstreamId, m: &Msg) {
        let p = m.params_value();
        let Some(uri) = p.get("uri").and_then(Value::as_str) else { return };
        let exposed = match self.catalog.exposed_of(Kind::Resources, u, uri) {
            Some(e) => e.to_string(),
            // A UI resource or a skill's file need not be listed.
            None => super::scoped::expose(&self.ups[u].spec.name, uri).unwrap_or_else(|| uri.to_string()),
        };
        let mut out = p.clone();
        out["uri"] = Value::String(exposed.clone());
        if let Some(o) = out.as_object_mut() {
            o.remove("_meta");
        }
        // The listen streams subscribed to it, when `u` may reach their client.
        let (starts, clients) = (&self.starts, &self.clients);
        let fx = self.listens.updated(&exposed, &out, |c| starts.may_reach(u, c, clients));
        let reached: Vec<ClientId> = fx.iter().filter_map(|e| if let modern::Effect::Notify(c, ..) = e { Some(*c) } else { None }).collect();
        self.apply_listens(fx);
        // Subscribers asked for these: no need to wait for a list.
        let to: Vec<ClientId> = self.subs.clients_of(&exposed).into_iter().filter(|c| !reached.contains(c) && self.starts.may_reach(u, *c, &self.clients)).collect();
        for c in to {
            self.downward().notify(c, Method::ResourcesUpdated, &out);
        }
    }

    fn upstream_progress(&mut self, u: UpstreamId, m: &Msg) {
        let Some(p) = m.params.clone() else { return };
        let Some(tr) = m.param(&["progressToken"]) else { return };
        let Some(id) = wire::id_u64(&m.raw[tr.clone()]) else { return };
        let now = self.now_ms;
        // Requirement: lifecycle-timeouts-may-reset-on-progress, lifecycle-timeouts-max-regardless-of-progress
        let Some(origin) = self.pending.progressed(u, id, now) else { return };
        let (c, token, about) = match origin {
            Origin::Client { client, id: cid, progress: Some(token), .. } => (*client, token.clone(), About::Notification { unsolicited: false, related: Some(IdKey::new(cid)) }),
            // The request was answered with its task: progress is no
            // longer on its stream.
            Origin::Task(t) => {
                let t = t.clone();
                let Some((c, token)) = self.tasks.progress_to(&t).filter(|(c, _)| self.clients.contains_key(c)) else { return };
                (c, token, About::Notification { unsolicited: false, related: None })
            }
            _ => return,
        };
        // Policy: the progress cap per request (hub/policy.rs).
        let capped = self.policy.admit_progress(u, &self.ups[u].spec.name, id, &self.pending);
        self.apply_policy(capped.warns);
        if !capped.admitted {
            return;
        }
        let Some(cl) = self.clients.get(&c) else { return };
        let f = &cl.rev().features();
        let params = &m.raw[p.clone()];
        let body = if !f.progress_message && m.param(&["message"]).is_some() {
            let mut v: Value = serde_json::from_slice(params).unwrap_or(Value::Null);
            v["progressToken"] = serde_json::from_slice(&token).unwrap_or(Value::Null);
            super::shape::notification_params(Method::Progress, &mut v, f);
            serde_json::to_vec(&v).unwrap_or_default()
        } else {
            let rel = (tr.start - p.start)..(tr.end - p.start);
            wire::splice(params, vec![(rel, token)])
        };
        self.downward().emit(c, wire::notification(Method::Progress, Some(&body)), about);
    }

    pub(super) fn on_upstream_refused(&mut self, u: UpstreamId, msg: &[u8], why: &str) {
        if u >= self.ups.len() {
            return;
        }
        let name = self.ups[u].spec.name.clone();
        let Ok(m) = wire::parse(msg) else { return };
        let Some(id) = m.id_u64().filter(|_| matches!(m.kind, MsgKind::Request)) else {
            self.log(Level::Warn, format!("server '{name}': message to it dropped: {why}"));
            return;
        };
        // Only client requests are failed here; the hub's own requests keep
        // their timeouts (and what they do on expiry).
        let Some(Fwd { origin: Origin::Client { client, id: cid, method, .. }, .. }) = self.pending.take_if(u, id, |o| matches!(o, Origin::Client { .. })) else {
            self.log(Level::Warn, format!("server '{name}': request to it dropped: {why}"));
            return;
        };
        let text = format!("server '{name}' cannot take {method} now: {why}");
        self.downward().error(client, Some(&cid), ErrorCode::InternalError, &text, Some(json!({ "server": name })));
    }

    /// A message from `u` over its transport's cap was skipped: the
    /// request it answers (read from its edges) is failed now, naming the
    /// size and the limit, instead of waiting for its timeout.
    pub(super) fn on_upstream_too_large(&mut self, u: UpstreamId, big: &Oversize<'_>, on: Option<&[u8]>) {
        let Some(name) = self.ups.oversized(u) else { return };
        let Oversize { len, max, limit, .. } = *big;
        let data = || Some(json!({ "server": name, "bytes": len, "limitBytes": max }));
        let id = match clipped::classify(big.head, big.tail) {
            Clipped::Request { .. } => {
                let msg = format!("server '{name}' sent a request or notification of {len} bytes, over {limit}; dropped");
                return self.log(Level::Warn, msg);
            }
            c => c.answers(on).and_then(wire::id_u64),
        };
        let origin = id.and_then(|id| self.pending.origin(u, id));
        match (id, origin) {
            (Some(id), Some(Origin::Client { .. })) => {
                let Some(Fwd { origin: Origin::Client { client, id: cid, method, .. }, .. }) = self.pending.take(u, id) else { return };
                let text = format!("server '{name}' answered {method} with {len} bytes, over {limit}; the answer was dropped");
                self.log(Level::Warn, format!("{text} (request {id})"));
                self.downward().error(client, Some(&cid), ErrorCode::InternalError, &text, data());
            }
            (Some(id), Some(Origin::Task(_))) => {
                let Some(Fwd { origin: Origin::Task(t), .. }) = self.pending.take(u, id) else { return };
                let fx = self.tasks.lost(&t, format!("server '{name}' answered with {len} bytes, over {limit}; the answer was dropped"), self.now_ms);
                self.apply_task_effects(fx);
            }
            (Some(id), Some(_)) => {
                // The hub's own request (a list page, a probe): its timeout decides.
                self.log(Level::Warn, format!("server '{name}' answered mcpx's request {id} with {len} bytes, over {limit}; dropped"));
            }
            (Some(id), None) => {
                self.log(Level::Warn, format!("server '{name}' sent a {len}-byte answer to request {id}, which is not open, over {limit}; dropped"));
            }
            (None, _) => {
                let what = format!("server '{name}' wrote a message of {len} bytes, over {limit}");
                self.log(Level::Warn, format!("{what}; its id is not in its first or last bytes, so the request it answers gets its timeout"));
                self.ups.note_clipped(u, self.now_ms, what);
            }
        }
    }
}

/// The id of the task client `c`'s request `rid` runs as: the one it was
/// answered with while it waited for approval (its answer goes to the task
/// until `Clients::answered_into`), else a new one.
fn task_id_for(clients: &super::client::Clients, tasks: &mut tasks::Tasks, c: ClientId, rid: &[u8]) -> String {
    clients.answers_into(c, rid).map_or_else(|| tasks.new_id(), str::to_string)
}

/// The first server from `from` on (configuration order) whose skills a
/// client of `sight` may see: it declared the extension, the principal's
/// catalog grants it, and it is up or asleep.
#[cfg(feature = "skills")]
fn skill_server_from(ups: &super::upstream::Upstreams, sight: &stages::Sight<'_>, from: UpstreamId) -> Option<UpstreamId> {
    (from..ups.len()).find(|&u| {
        let up = &ups[u];
        (up.is_ready() || up.is_asleep()) && skills::declared(up.caps.as_ref()).is_some() && sight.server_visible(u)
    })
}
