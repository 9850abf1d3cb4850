//! The aggregated catalog: tools, resources, resource templates and prompts of
//! every ready upstream, under exposed names, in a deterministic order.
//!
//! Order: upstreams in configuration order, each upstream's items in the order
//! it listed them. Names: tools and prompts are exposed as
//! `mcpx_core::names::expose(prefix, separator, name)`; a clash (two unprefixed
//! servers with the same tool, or a hash clash) is resolved by giving the later
//! item the next salt, so every exposed name is unique and valid. A name that
//! had to be changed (shortened, characters replaced, salted) is reported once
//! by [`Catalog::set`], for the log.
//!
//! Resource URIs and URI templates are exposed unchanged, so links in content
//! stay valid. When a URI (or template) is already taken by an earlier item,
//! the later one is exposed as `mcpx://<server>/<original>`, where `<server>`
//! is the server's name made valid as a tool name; the hub routes such URIs
//! (and anything the client expands from such a template) by that segment.
//! A `ui://` URI (MCP Apps) or `skill://` URI (Skills) is always shown with
//! its server's segment as its authority (`scoped`), so it keeps its scheme.

use std::rc::Rc;
use std::collections::HashMap;

use mcpx_core::method::Method;
use mcpx_core::names;
use serde_json::Value;

use super::{apps, scoped};
use super::shape::{self, Features, Rev, RevExt};
use super::{upward, ModernHeaders, UpstreamId};

/// Scheme of URIs rewritten to stay unique.
pub(super) const MCPX_URI: &str = "mcpx://";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Kind {
    Tools,
    Resources,
    Templates,
    Prompts,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Tools, Kind::Resources, Kind::Templates, Kind::Prompts];

    pub fn idx(self) -> usize {
        self as usize
    }
    pub fn list_method(self) -> Method<'static> {
        match self {
            Kind::Tools => Method::ToolsList,
            Kind::Resources => Method::ResourcesList,
            Kind::Templates => Method::ResourcesTemplatesList,
            Kind::Prompts => Method::PromptsList,
        }
    }
    /// The kind a list method lists.
    pub fn of_list(m: Method<'_>) -> Option<Kind> {
        match m {
            Method::ToolsList => Some(Kind::Tools),
            Method::ResourcesList => Some(Kind::Resources),
            Method::ResourcesTemplatesList => Some(Kind::Templates),
            Method::PromptsList => Some(Kind::Prompts),
            _ => None,
        }
    }
    /// Member of the list result holding the items.
    pub fn result_key(self) -> &'static str {
        match self {
            Kind::Tools => "tools",
            Kind::Resources => "resources",
            Kind::Templates => "resourceTemplates",
            Kind::Prompts => "prompts",
        }
    }
    /// One item of this list, in a sentence.
    pub fn item_word(self) -> &'static str {
        match self {
            Kind::Tools => "tool",
            Kind::Resources => "resource",
            Kind::Templates => "resource template",
            Kind::Prompts => "prompt",
        }
    }
    /// Member of an item that identifies it.
    pub fn key_field(self) -> &'static str {
        match self {
            Kind::Tools | Kind::Prompts => "name",
            Kind::Resources => "uri",
            Kind::Templates => "uriTemplate",
        }
    }
    /// Server capability announcing this list.
    pub fn capability(self) -> &'static str {
        match self {
            Kind::Tools => "tools",
            Kind::Resources | Kind::Templates => "resources",
            Kind::Prompts => "prompts",
        }
    }
    pub fn channel(self) -> Channel {
        match self {
            Kind::Tools => Channel::Tools,
            Kind::Resources | Kind::Templates => Channel::Resources,
            Kind::Prompts => Channel::Prompts,
        }
    }
}

/// A `notifications/*/list_changed` channel (resources covers templates).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Channel {
    Tools,
    Resources,
    Prompts,
}

impl Channel {
    pub const ALL: [Channel; 3] = [Channel::Tools, Channel::Resources, Channel::Prompts];

    pub fn idx(self) -> usize {
        self as usize
    }
    /// Its name where a session's state names the lists read.
    #[cfg(feature = "cluster")]
    pub fn name(self) -> &'static str {
        match self {
            Channel::Tools => "tools",
            Channel::Resources => "resources",
            Channel::Prompts => "prompts",
        }
    }
    pub fn kinds(self) -> &'static [Kind] {
        match self {
            Channel::Tools => &[Kind::Tools],
            Channel::Resources => &[Kind::Resources, Kind::Templates],
            Channel::Prompts => &[Kind::Prompts],
        }
    }
    pub fn notification(self) -> Method<'static> {
        match self {
            Channel::Tools => Method::ToolsListChanged,
            Channel::Resources => Method::ResourcesListChanged,
            Channel::Prompts => Method::PromptsListChanged,
        }
    }
}

/// One exposed item.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub up: UpstreamId,
    /// Exposed name / URI / template.
    pub exposed: String,
    /// The upstream's own name / URI / template (shared with the calls
    /// routed to it, which take it without a copy).
    pub original: Rc<str>,
    /// The item as the client sees it (exposed key substituted).
    pub item: Value,
    /// Bytes of `exposed` that are the prefix and separator as applied
    /// (tools and prompts; 0 for resources).
    pub prefix_len: usize,
    /// The name spelled with a configured separator that has a `.`, for
    /// clients whose revision allows it (`names::respell`); a call may use
    /// either spelling.
    pub dotted: Option<names::Exposed>,
    /// A tool for apps alone (`apps::app_only`).
    pub app_only: bool,
}

impl Entry {
    /// The name and applied prefix a client with features `f` is shown.
    pub fn shown(&self, f: &Features) -> (&str, &str) {
        match self.dotted.as_ref().filter(|_| f.dotted_names) {
            Some(d) => (d.name.as_str(), d.applied_prefix()),
            None => (&self.exposed, &self.exposed[..self.prefix_len]),
        }
    }

    /// The item as a client with features `f` is listed it.
    pub fn listed(&self, f: &Features) -> Value {
        let mut item = shape::item(&self.item, f);
        if let Some(d) = self.dotted.as_ref().filter(|_| f.dotted_names) {
            item["name"] = Value::String(d.name.as_str().to_string());
        }
        item
    }
}

/// A tool or prompt name the catalog had to change.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Renamed {
    pub up: UpstreamId,
    pub original: String,
    pub exposed: String,
    pub change: names::Change,
}

/// Naming facts about one upstream the catalog needs.
pub(super) struct Naming<'a> {
    pub name: &'a str,
    pub prefix: &'a str,
}

/// Exposed name → index, looked up on every call (the names of the
/// servers' capped listings).
type ByExposed = crate::name_map::NameMap<String, usize>;

pub struct Catalog {
    /// Items per upstream and kind, as listed (after filters).
    per_up: Vec<[Vec<Value>; 4]>,
    views: [Vec<Entry>; 4],
    /// exposed key → index in `views[k]`.
    index: [ByExposed; 4],
    /// (upstream, original key) → index in `views[k]`.
    reverse: [HashMap<(UpstreamId, String), usize>; 4],
    /// Bumped on every change of a view.
    pub generation: [u32; 4],
    /// Fingerprint of each channel as seen by a client on each revision.
    fp_cache: HashMap<(Channel, Rev), u64>,
    /// Tools for apps alone, and items of apps (UI resources and the
    /// tools that link them), in the views.
    pub(in crate::hub) app_only: usize,
    of_apps: [usize; 4],
}

impl Catalog {
    pub(in crate::hub) fn new(n: usize) -> Catalog {
        Catalog {
            per_up: (0..n).map(|_| Default::default()).collect(),
            views: Default::default(),
            index: Default::default(),
            reverse: Default::default(),
            generation: [0; 4],
            fp_cache: HashMap::new(),
            app_only: 0,
            of_apps: [0; 4],
        }
    }

    /// Room for one more upstream (added by a config reload), with no items.
    pub(in crate::hub) fn add_slot(&mut self) {
        self.per_up.push(Default::default());
    }

    pub(in crate::hub) fn view(&self, k: Kind) -> &[Entry] {
        &self.views[k.idx()]
    }

    /// Upstream `u`'s items of kind `k`, as listed (after filters).
    pub(in crate::hub) fn items(&self, u: UpstreamId, k: Kind) -> &[Value] {
        &self.per_up[u][k.idx()]
    }

    pub(in crate::hub) fn count(&self, u: UpstreamId, k: Kind) -> usize {
        self.per_up[u][k.idx()].len()
    }

    /// Upstream `u`'s own item of kind `k` named (or with URI) `original`, as listed.
    pub(in crate::hub) fn item_of(&self, u: UpstreamId, k: Kind, original: &str) -> Option<&Value> {
        self.per_up.get(u)?[k.idx()].iter().find(|it| it.get(k.key_field()).and_then(Value::as_str) == Some(original))
    }

    /// Entry by exposed key.
    pub(in crate::hub) fn get(&self, k: Kind, exposed: &str) -> Option<&Entry> {
        self.index[k.idx()].get(exposed).map(|&i| &self.views[k.idx()][i])
    }

    /// Exposed key of an upstream's item, if listed.
    pub(in crate::hub) fn exposed_of(&self, k: Kind, u: UpstreamId, original: &str) -> Option<&str> {
        let i = *self.reverse[k.idx()].get(&(u, original.to_string()))?;
        Some(&self.views[k.idx()][i].exposed)
    }

    /// Replaces upstream `u`'s items of kind `k`; returns whether the view
    /// changed, and the names changed that were not changed so before.
    pub(in crate::hub) fn set(&mut self, u: UpstreamId, k: Kind, items: Vec<Value>, naming: &[Naming], sep: &str) -> (bool, Vec<Renamed>) {
        self.per_up[u][k.idx()] = items;
        self.rebuild(k, naming, sep)
    }

    /// The prefixes (with the separator) applied to upstream `u`'s tools
    /// and prompts, each once, in catalog order, as a client with features
    /// `f` sees them.
    pub(in crate::hub) fn applied_prefixes(&self, u: UpstreamId, f: &Features) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for k in [Kind::Tools, Kind::Prompts] {
            for e in self.views[k.idx()].iter().filter(|e| e.up == u) {
                let p = e.shown(f).1;
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out
    }

    fn rebuild(&mut self, k: Kind, naming: &[Naming], sep: &str) -> (bool, Vec<Renamed>) {
        let key = k.key_field();
        let legacy = names::legacy_separator(sep);
        let mut renamed = Vec::new();
        let mut view: Vec<Entry> = Vec::new();
        let mut index = ByExposed::default();
        let mut reverse = HashMap::new();
        let (mut apps_of, mut app_only_n) = (0, 0);
        for (u, lists) in self.per_up.iter().enumerate() {
            for item in &lists[k.idx()] {
                let Some(original) = item.get(key).and_then(Value::as_str) else { continue };
                let (mut prefix_len, mut dotted) = (0, None);
                let exposed = match k {
                    Kind::Tools | Kind::Prompts => {
                        let mut salt = 0;
                        let n = loop {
                            let n = names::expose_detail(naming[u].prefix, legacy, original, salt);
                            if !index.contains_key(n.name.as_str()) {
                                break n;
                            }
                            salt += 1;
                        };
                        prefix_len = n.prefix_len;
                        // Unique as the legacy names are: a respelled name has
                        // the separator's `.` right after a prefix with none.
                        dotted = names::respell(&n, sep);
                        let exposed = n.name.as_str().to_string();
                        let before = self.reverse[k.idx()].get(&(u, original.to_string())).map(|&i| self.views[k.idx()][i].exposed.as_str());
                        if n.change != names::Change::Kept && before != Some(exposed.as_str()) {
                            renamed.push(Renamed { up: u, original: original.to_string(), exposed: exposed.clone(), change: n.change });
                        }
                        exposed
                    }
                    Kind::Resources | Kind::Templates => {
                        if let Some(shown) = scoped::expose(naming[u].name, original) {
                            if index.contains_key(&shown) {
                                continue; // the same server lists the same URI twice
                            }
                            shown
                        } else if !index.contains_key(original) {
                            original.to_string()
                        } else {
                            let alt = format!("{MCPX_URI}{}/{original}", names::segment(naming[u].name).as_str());
                            if index.contains_key(&alt) {
                                continue; // the same server lists the same URI twice
                            }
                            alt
                        }
                    }
                };
                let mut item = item.clone();
                item[key] = Value::String(exposed.clone());
                apps::expose_meta(&mut item, naming[u].name);
                let app_only = k == Kind::Tools && apps::app_only(&item);
                (apps_of, app_only_n) = (apps_of + usize::from(apps::of_app(&item)), app_only_n + usize::from(app_only));
                index.insert(exposed.clone(), view.len());
                if let Some(d) = &dotted {
                    index.insert(d.name.as_str().to_string(), view.len());
                }
                reverse.insert((u, original.to_string()), view.len());
                view.push(Entry { up: u, exposed, original: Rc::from(original), item, prefix_len, dotted, app_only });
            }
        }
        let same = view.len() == self.views[k.idx()].len()
            && view.iter().zip(&self.views[k.idx()]).all(|(a, b)| a.up == b.up && a.item == b.item);
        self.views[k.idx()] = view;
        self.of_apps[k.idx()] = apps_of;
        if k == Kind::Tools {
            self.app_only = app_only_n;
        }
        self.index[k.idx()] = index;
        self.reverse[k.idx()] = reverse;
        if !same {
            self.generation[k.idx()] = self.generation[k.idx()].wrapping_add(1);
            self.fp_cache.retain(|(ch, _), _| *ch != k.channel());
        }
        (!same, renamed)
    }

    /// Fingerprint of what a client on `rev` sees on `ch`.
    pub(in crate::hub) fn fingerprint(&mut self, ch: Channel, rev: Rev) -> u64 {
        if let Some(fp) = self.fp_cache.get(&(ch, rev)) {
            return *fp;
        }
        let fp = self.fingerprint_where(ch, rev, |_, _| true);
        self.fp_cache.insert((ch, rev), fp);
        fp
    }

    /// Fingerprint of the items of `ch` that `keep` accepts (a principal's
    /// own catalog), uncached.
    pub(in crate::hub) fn fingerprint_where(&self, ch: Channel, rev: Rev, keep: impl Fn(Kind, &Entry) -> bool) -> u64 {
        let mut parts: Vec<Vec<u8>> = Vec::new();
        for &k in ch.kinds() {
            parts.push(k.result_key().as_bytes().to_vec());
            for e in self.views[k.idx()].iter().filter(|e| keep(k, e)) {
                parts.push(serde_json::to_vec(&e.listed(&rev.features())).unwrap_or_default());
            }
        }
        let refs: Vec<&[u8]> = parts.iter().map(|p| p.as_slice()).collect();
        names::hash(&refs)
    }

    /// Routes a resource URI a client sent: (upstream, the upstream's URI).
    /// Listed URIs by index; `mcpx://<server>/...` by server; otherwise the
    /// template with the longest literal prefix matching the URI; otherwise the
    /// only upstream offering resources (`resource_ups`).
    pub(in crate::hub) fn route_uri(&self, uri: &str, naming: &[Naming], resource_ups: &[UpstreamId]) -> Option<(UpstreamId, String)> {
        if scoped::scheme(uri).is_some() {
            let (seg, orig) = scoped::split(uri)?;
            return naming.iter().position(|n| names::segment(n.name).as_str() == seg).map(|u| (u, orig));
        }
        if let Some(e) = self.get(Kind::Resources, uri) {
            return Some((e.up, e.original.to_string()));
        }
        if let Some(rest) = uri.strip_prefix(MCPX_URI) {
            if let Some((seg, orig)) = rest.split_once('/') {
                if let Some(u) = naming.iter().position(|n| names::segment(n.name).as_str() == seg) {
                    return Some((u, orig.to_string()));
                }
            }
        }
        let mut best: Option<(usize, UpstreamId)> = None;
        for e in self.view(Kind::Templates) {
            let lit = e.original.split('{').next().unwrap_or("");
            if !lit.is_empty() && uri.starts_with(lit) && best.is_none_or(|(l, _)| lit.len() > l) {
                best = Some((lit.len(), e.up));
            }
        }
        if let Some((_, u)) = best {
            return Some((u, uri.to_string()));
        }
        match resource_ups {
            [u] => Some((*u, uri.to_string())),
            _ => None,
        }
    }

    /// The entries of kind `k` whose upstream name is `original`, in
    /// catalog order (an app's call by its server's own name, `apps`).
    #[cfg(feature = "apps")]
    pub(in crate::hub) fn by_original(&self, k: Kind, original: &str) -> Vec<&Entry> {
        self.views[k.idx()].iter().filter(|e| &*e.original == original).collect()
    }

    /// Does an upstream serve apps: a UI resource, or a tool linking one?
    pub(in crate::hub) fn serves_apps(&self) -> bool {
        self.of_apps.iter().any(|n| *n > 0)
    }

    /// Routes a completion `ref/resource` URI template.
    pub(in crate::hub) fn route_template(&self, t: &str) -> Option<(UpstreamId, String)> {
        self.get(Kind::Templates, t).map(|e| (e.up, e.original.to_string()))
    }
}

/// What the runtime may ask about the tools as listed (`Hub::catalog`).
impl Catalog {
    /// The `inputSchema` of upstream `u`'s tool `name` (its own name, as in
    /// the `tools/call` the hub sends it), as last listed: where the headers
    /// of a modern request (`upward`) find the `x-mcp-header` annotations to
    /// mirror as `Mcp-Param-*` headers. Tools with invalid annotations are
    /// never listed.
    pub fn upstream_tool_schema(&self, u: UpstreamId, name: &str) -> Option<&Value> {
        self.item_of(u, Kind::Tools, name)?.get("inputSchema")
    }

    /// The 2026-07-28 headers of modern request `msg` to `u`, built again
    /// (the transport retries a request once after the server answered
    /// -32020 and the hub listed its tools again: the annotations may have
    /// changed). `None` when `msg` is not a request.
    pub fn upstream_headers_again(&self, u: UpstreamId, msg: &[u8]) -> Option<ModernHeaders> {
        upward::headers_again(msg, &|tool| self.upstream_tool_schema(u, tool))
    }

    /// The 2026-07-28 headers a client of the hub sends with its request
    /// `msg` (one forwarded to another replica, which checks them as any
    /// request's): `None` when `msg` is not a request.
    pub fn client_request_headers(&self, msg: &[u8]) -> Option<ModernHeaders> {
        upward::headers_again(msg, &|tool| self.get(Kind::Tools, tool)?.item.get("inputSchema"))
    }

    /// The `inputSchema` of the tool clients know as `exposed` (as listed to
    /// them): where an HTTP server transport finds the `x-mcp-header`
    /// annotations whose `Mcp-Param-*` headers it must check.
    pub fn tool_input_schema(&self, exposed: &str) -> Option<Value> {
        self.get(Kind::Tools, exposed)?.item.get("inputSchema").cloned()
    }
}

