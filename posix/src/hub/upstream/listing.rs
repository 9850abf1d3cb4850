//! Reading an upstream's lists page by page (following `nextCursor`, at
//! most [`MAX_PAGES`] pages and `max_list_items` items), filtered as its
//! entry says; what was read goes to the catalog ([`Effect::Listed`]).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde_json::{json, Value};

use super::super::catalog::{Catalog, Kind};
use super::super::pending::Origin;
use super::super::wire::Msg;
use super::super::{HubOptions, Level, UpstreamId};
use super::{Effect, Listing, Upstream, Upstreams};

/// Most pages read from one upstream list before the hub stops following
/// `nextCursor` (a server that loops on its cursor).
const MAX_PAGES: u32 = 1000;

impl Upstreams {
    /// `u` is ready (`instance`: an instance of another server, whose
    /// catalog is its template's): the lists its capabilities announce are
    /// read; what it offered before of the others (kept while it was down)
    /// leaves the catalog.
    pub(in crate::hub) fn read_lists(&mut self, u: UpstreamId, instance: bool, catalog: &Catalog) -> Vec<Effect> {
        let mut fx = Vec::new();
        let up = &mut self.0[u];
        up.reported = None;
        for k in Kind::ALL {
            if up.lists(k) {
                up.start_listing(u, k, instance, &mut fx);
            } else if catalog.count(u, k) > 0 {
                fx.push(Effect::Listed(u, k, Vec::new()));
            }
        }
        fx
    }

    /// `u` said its lists of `kinds` changed: read again, if it is ready.
    pub(in crate::hub) fn relist(&mut self, u: UpstreamId, kinds: &[Kind], instance: bool) -> Vec<Effect> {
        let mut fx = Vec::new();
        let up = &mut self.0[u];
        if up.is_ready() {
            for k in kinds {
                if up.lists(*k) {
                    up.start_listing(u, *k, instance, &mut fx);
                }
            }
        }
        fx
    }

    /// A client reads list `k`: modern upstreams that announce no changes of
    /// it and whose `ttlMs` for it has run out are read again (the client is
    /// answered from what the hub has, and told if the list changed).
    pub(in crate::hub) fn refresh_stale(&mut self, k: Kind, now: u64, instance: impl Fn(UpstreamId) -> bool) -> Vec<Effect> {
        let mut fx = Vec::new();
        for (u, up) in self.0.iter_mut().enumerate() {
            if !up.is_modern() || !up.lists(k) || up.listing[k.idx()].is_some() {
                continue;
            }
            let announces = up.caps.as_ref().and_then(|c| c.pointer(&format!("/{}/listChanged", k.capability()))) == Some(&Value::Bool(true));
            let Some((ttl, _)) = up.hints[k.idx()] else { continue };
            // Requirement: caching-stale-refetch
            if !announces && now >= up.listed_ms[k.idx()].saturating_add(ttl) {
                up.start_listing(u, k, instance(u), &mut fx);
            }
        }
        fx
    }

    /// `u` may have settled (no list of it is being read): the first time,
    /// clients held in `initialize` may go on. When it is ready, requests
    /// parked for its start go on, and the runtime is told its `lists` (as
    /// kept for a lazy start) once per start and then whenever a re-read
    /// changed them, never for an `instance` (its lists are its template's).
    pub(in crate::hub) fn check_settled(&mut self, u: UpstreamId, instance: bool, lists: impl FnOnce(&Upstream) -> Option<Value>) -> Vec<Effect> {
        let mut fx = Vec::new();
        let up = &mut self.0[u];
        if up.listing.iter().any(Option::is_some) {
            return fx;
        }
        if !up.settled {
            up.settled = true;
            fx.push(Effect::Settled);
        }
        if up.is_ready() {
            if let Some(lists) = if instance { None } else { lists(up) } {
                let mut h = DefaultHasher::new();
                serde_json::to_vec(&lists).unwrap_or_default().hash(&mut h);
                let digest = h.finish();
                if up.reported.replace(digest) != Some(digest) {
                    fx.push(Effect::ListsRead(u));
                }
            }
            up.start_awaited = false;
            fx.push(Effect::Release(u));
        }
        fx
    }

    /// A page `m` of `u`'s list `k`.
    pub(in crate::hub) fn on_list_page(&mut self, u: UpstreamId, k: Kind, m: &Msg, now: u64, instance: bool, opts: &HubOptions) -> Vec<Effect> {
        let mut fx = Vec::new();
        let up = &mut self.0[u];
        if let Some((items, again)) = up.list_page(u, k, m, opts, &mut fx) {
            up.list_done(u, k, items, again && !instance, now, &mut fx);
        }
        fx
    }

    /// `u` did not answer the hub's request `id` for a page of list `k`
    /// within `waited` ms: cancelled, and what was read is kept.
    pub(in crate::hub) fn on_list_timeout(&mut self, u: UpstreamId, k: Kind, id: u64, waited: u64, now: u64) -> Vec<Effect> {
        let up = &mut self.0[u];
        let mut fx = vec![Effect::Cancel { u, id, reason: "timed out" }];
        let method = up.listing[k.idx()].as_ref().map_or(k.list_method(), |l| l.method(k));
        fx.push(Effect::Log(Level::Warn, format!("server '{}' did not answer {method} within {waited} ms", up.spec.name)));
        if let Some(l) = up.listing[k.idx()].take() {
            let (items, _) = l.done(u, &mut fx);
            up.list_done(u, k, items, false, now, &mut fx);
        }
        fx
    }
}

impl Listing {
    /// Read to its end, or as far as it got: its items, and whether to read
    /// it again; the skills entries read go to the hub (`skills`).
    fn done(self, u: UpstreamId, fx: &mut Vec<Effect>) -> (Vec<Value>, bool) {
        #[cfg(feature = "skills")]
        if let Some(entries) = self.skills {
            fx.push(Effect::SkillsListed(u, entries));
        }
        #[cfg(not(feature = "skills"))]
        let _ = (u, fx);
        (self.acc, self.again)
    }

    /// The method of its phase.
    fn method(&self, k: Kind) -> mcpx_core::method::Method<'static> {
        #[cfg(feature = "skills")]
        if self.skills.is_some() {
            return super::super::skills::LIST;
        }
        k.list_method()
    }

    /// The member of its phase's result holding the items.
    fn result_key(&self, k: Kind) -> &'static str {
        #[cfg(feature = "skills")]
        if self.skills.is_some() {
            return "skills";
        }
        k.result_key()
    }
}

impl Upstream {
    fn start_listing(&mut self, u: UpstreamId, k: Kind, instance: bool, fx: &mut Vec<Effect>) {
        if instance {
            return; // its catalog is its template's (`isolation`)
        }
        if let Some(l) = self.listing[k.idx()].as_mut() {
            l.again = true;
            return;
        }
        let listing = Listing::default();
        // A server with skills and no prompts of its own: its skills alone.
        #[cfg(feature = "skills")]
        if k == Kind::Prompts && !self.has_cap(k.capability()) {
            self.listing[k.idx()] = self.next_phase(u, k, listing, fx).err();
            return;
        }
        self.request_page(u, k, &listing, None, fx);
        self.listing[k.idx()] = Some(listing);
    }

    /// Asks for a page of list `k` (in `listing`'s phase: the server's
    /// skills, past its prompts).
    fn request_page(&self, u: UpstreamId, k: Kind, listing: &Listing, cursor: Option<&str>, fx: &mut Vec<Effect>) {
        let params = cursor.map(|c| serde_json::to_vec(&json!({ "cursor": c })).unwrap_or_default());
        fx.push(Effect::Send { u, method: listing.method(k), params, origin: Origin::List(k), timeout: self.spec.timeout_ms });
    }

    /// List `k` read to its end: done (its items, and whether to read it
    /// again), or (`Err`) read on in its next phase: the prompts of a
    /// server with skills go on with its `skills/list` (`skills`), whose
    /// entries are shown as prompts.
    #[cfg(feature = "skills")]
    fn next_phase(&self, u: UpstreamId, k: Kind, mut listing: Listing, fx: &mut Vec<Effect>) -> Result<(Vec<Value>, bool), Listing> {
        if listing.skills.is_some() || k != Kind::Prompts || super::super::skills::declared(self.caps.as_ref()).is_none() {
            return Ok(listing.done(u, fx));
        }
        listing.skills = Some(Vec::new());
        self.request_page(u, k, &listing, None, fx);
        Err(listing)
    }

    #[cfg(not(feature = "skills"))]
    fn next_phase(&self, u: UpstreamId, _: Kind, listing: Listing, fx: &mut Vec<Effect>) -> Result<(Vec<Value>, bool), Listing> {
        Ok(listing.done(u, fx))
    }

    /// [`Upstream::next_phase`], the listing kept while it goes on.
    fn finish(&mut self, u: UpstreamId, k: Kind, listing: Listing, fx: &mut Vec<Effect>) -> Option<(Vec<Value>, bool)> {
        match self.next_phase(u, k, listing, fx) {
            Ok(done) => Some(done),
            Err(on) => {
                self.listing[k.idx()] = Some(on);
                None
            }
        }
    }

    /// Takes page `m` of list `k`: the next one is asked for, or the list
    /// is done (its items, and whether it is to be read again).
    fn list_page(&mut self, u: UpstreamId, k: Kind, m: &Msg, opts: &HubOptions, fx: &mut Vec<Effect>) -> Option<(Vec<Value>, bool)> {
        let mut listing = self.listing[k.idx()].take()?;
        let name = &self.spec.name;
        let Some(res) = m.result_bytes() else {
            let bytes = m.error_bytes().unwrap_or_default();
            // Method not found: a server without that list (many have no resource templates) is no fault.
            let absent = serde_json::from_slice::<Value>(bytes).ok().and_then(|e| e.get("code")?.as_i64()) == Some(-32601);
            let e = String::from_utf8_lossy(bytes).into_owned();
            fx.push(Effect::Log(if absent { Level::Debug } else { Level::Warn }, format!("server '{name}': {} failed: {e}", listing.method(k))));
            return self.finish(u, k, listing, fx);
        };
        let mut v: Value = serde_json::from_slice(res).unwrap_or(Value::Null);
        if self.is_modern() {
            if let Some(rt) = v.get("resultType").and_then(Value::as_str).filter(|r| *r != "complete") {
                fx.push(Effect::Log(Level::Warn, format!("server '{name}': {} answered resultType '{rt}', which mcpx does not accept there", listing.method(k))));
                return self.finish(u, k, listing, fx);
            }
            {
                // Requirement: caching-client-honour-hints (aggregated into the hub's own hints)
                // Requirement: caching-ttl-absent-zero, caching-ttl-negative-zero: an absent,
                // negative or unreadable ttlMs is 0, immediately stale.
                let t = v.get("ttlMs").and_then(Value::as_f64).filter(|t| t.is_finite() && *t > 0.0).map_or(0, |t| t as u64);
                let public = v.get("cacheScope").and_then(Value::as_str) == Some("public");
                let h = self.hints[k.idx()].map_or((t, public), |(t0, p0)| (t0.min(t), p0 && public));
                self.hints[k.idx()] = Some(if listing.pages == 0 { (t, public) } else { h });
            }
        }
        if let Some(Value::Array(items)) = v.get_mut(listing.result_key(k)).map(Value::take) {
            for it in items {
                if listing.acc.len() >= opts.max_list_items {
                    fx.push(Effect::Log(Level::Warn, format!("server '{name}': {} has over {} items; the rest are ignored", listing.method(k), opts.max_list_items)));
                    break;
                }
                // A skill is shown as a prompt (`skills`); its entry is kept.
                #[cfg(feature = "skills")]
                if let Some(entries) = listing.skills.as_mut() {
                    if let Some(p) = super::super::skills::as_prompt(&it, name) {
                        listing.acc.push(p);
                        entries.push(it);
                    }
                    continue;
                }
                if k == Kind::Tools {
                    let n = it.get("name").and_then(Value::as_str).unwrap_or("");
                    if !self.tool_allowed(n) {
                        continue;
                    }
                    // Requirement: tools-inputschema-valid-not-null (what clients
                    // get must be a JSON Schema object with an object root)
                    if it.get("inputSchema").and_then(|x| x.get("type")).and_then(Value::as_str) != Some("object") {
                        fx.push(Effect::Log(Level::Warn, format!("server '{name}': tool '{n}' dropped: its inputSchema is not a JSON Schema object of type \"object\"")));
                        continue;
                    }
                    if let Some(schema) = it.get("inputSchema") {
                        let raw = serde_json::to_vec(schema).unwrap_or_default();
                        if let Err(e) = mcpx_core::headers::validate_input_schema(&raw) {
                            // Requirement: streamable-http-client-rejects-invalid-x-mcp-header
                            fx.push(Effect::Log(Level::Warn, format!("server '{name}': tool '{n}' dropped: its inputSchema has an invalid x-mcp-header annotation ({e:?})")));
                            continue;
                        }
                    }
                }
                listing.acc.push(it);
            }
        }
        listing.pages += 1;
        match v.get("nextCursor").and_then(Value::as_str) {
            Some(c) if listing.pages < MAX_PAGES && listing.acc.len() < opts.max_list_items => {
                self.request_page(u, k, &listing, Some(c), fx);
                self.listing[k.idx()] = Some(listing);
                None
            }
            _ => self.finish(u, k, listing, fx),
        }
    }

    /// List `k` is read (`items`; `again`: a change was announced
    /// meanwhile, so it is read once more, never for an instance): to the
    /// catalog, if still ready.
    fn list_done(&mut self, u: UpstreamId, k: Kind, items: Vec<Value>, again: bool, now: u64, fx: &mut Vec<Effect>) {
        if !self.is_ready() {
            return;
        }
        self.listed_ms[k.idx()] = now;
        fx.push(Effect::Listed(u, k, items));
        if again {
            self.start_listing(u, k, false, fx);
        }
        fx.push(Effect::CheckSettled(u));
    }
}

