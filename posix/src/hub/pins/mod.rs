//! Pinning of definitions (README: "Pinning tools"): the first listing of
//! a server's tools, prompts and resource templates is trusted (or only a
//! lock file is), each definition by the digest of what reaches the model
//! ([`digest`]); a definition that differs later (changed, new, renamed) is
//! a change, quarantined per `policy.pin`: hidden (absent from the
//! catalog, so unknown everywhere) or listed with a warning, until
//! accepted (`mcpx pin accept`). Definitions are inspected ([`inspect`]);
//! findings are reported, and quarantine per `policy.pin.findings`.
//!
//! The hub hands every listing through [`Pins::listed`] before the
//! catalog; [`Pins::load`] takes the pin files as the runtime reads them
//! (at start, when they change on disk, and with replicas whenever the
//! pins shared in the store change: [`share`]). Both answer with
//! [`Effect`]s.

mod digest;
mod file;
mod inspect;
#[cfg(feature = "cluster")]
mod share;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{json, Value};

use crate::policy::{PinSettings, Quarantine};

use super::catalog::Kind;
use super::Level;
pub use file::PinFile;
use file::{Change, Key, Pin, PINNED};
#[cfg(feature = "cluster")]
pub use share::{Shared, Theirs};

/// What the hub is to do after a pins call, in order.
#[derive(Debug, PartialEq)]
pub(super) enum Effect {
    /// Write this as the state folder's pin file (`Output::SavePins`).
    Save(Vec<u8>),
    Log(Level, String),
    /// A change of a server's definition of a kind, for `/metrics`.
    Changed { server: String, kind: Kind },
    /// An inspection finding (its label), for `/metrics`.
    Found { server: String, finding: &'static str },
    /// The pins a listing is held against changed (a hidden definition
    /// accepted, another pinned by another replica or in a new lock file):
    /// list the server's items of a kind again, these (its last listing,
    /// when items were withheld from it) or those in the catalog, which
    /// are `cached` (seeded, not the server's own listing) or not.
    Relist { server: String, kind: Kind, items: Option<Vec<Value>>, cached: bool },
}

pub(super) struct Pins {
    /// `None`: nothing is pinned.
    settings: Option<PinSettings>,
    file: PinFile,
    /// The last listing of a (server, kind) with hidden items, listed
    /// again when one is accepted.
    withheld: HashMap<(String, Kind), Vec<Value>>,
    /// The (server, kind) listed since mcpx started, and whether that was
    /// a cached listing: only those are listed again when their pins change
    /// (one never listed is not first seen empty), as they were.
    listings: HashMap<(String, Kind), bool>,
}

impl Pins {
    pub fn new(settings: Option<PinSettings>) -> Pins {
        Pins { settings, file: PinFile::default(), withheld: HashMap::new(), listings: HashMap::new() }
    }

    pub fn on(&self) -> bool {
        self.settings.is_some()
    }

    /// Server `server` listed `items` of kind `k` (`cached`: its lists as
    /// last kept on disk, seeded before it runs): those to show, and what
    /// to do.
    pub fn listed(&mut self, server: &str, k: Kind, items: Vec<Value>, cached: bool) -> (Vec<Value>, Vec<Effect>) {
        if cfg!(not(feature = "consent")) {
            return (items, Vec::new());
        }
        let mut fx = Vec::new();
        let Some(s) = self.settings.as_ref().filter(|_| PINNED.contains(&k)) else { return (items, fx) };
        self.listings.insert((server.to_string(), k), cached);
        let f = &mut self.file;
        // Trust is given to the server's own first listing: a kept one (the
        // cache is per server command, not per config) pins nothing.
        if cached && s.lock_file.is_none() && !f.seen.contains(&(server.to_string(), k)) {
            return (items, fx);
        }
        // Trust on first use, unless a lock file is the only trust.
        let first = s.lock_file.is_none() && f.seen.insert((server.to_string(), k));
        let mut dirty = first;
        let listed: BTreeSet<&str> = items.iter().filter_map(|it| it.get(k.key_field()).and_then(Value::as_str)).collect();
        let mut shown = Vec::with_capacity(items.len());
        let mut hidden_any = false;
        for item in &items {
            let Some(name) = item.get(k.key_field()).and_then(Value::as_str) else {
                shown.push(item.clone());
                continue;
            };
            let key = Key { server: server.to_string(), kind: k, name: name.to_string() };
            let digest = digest::of(k, item);
            if f.pins.get(&key).is_some_and(|p| p.digest == digest) {
                dirty |= f.changes.remove(&key).is_some();
                shown.push(item.clone());
                continue;
            }
            let findings = inspect::inspect(k, item);
            let hide_findings = !findings.is_empty() && s.findings == Quarantine::Hide;
            if first && !hide_findings {
                for x in &findings {
                    fx.push(Effect::Log(Level::Warn, format!("server '{server}': {} '{name}': {x}", k.item_word())));
                    fx.push(Effect::Found { server: server.to_string(), finding: x.what.label() });
                }
                f.pins.insert(key, Pin { digest, item: item.clone() });
                shown.push(item.clone());
                continue;
            }
            let hidden = s.mode == Quarantine::Hide || hide_findings;
            if f.changes.get(&key).is_none_or(|c| c.digest != digest || c.hidden != hidden) {
                let previous = f.pins.get(&key).map(|p| (name.to_string(), p.item.clone())).or_else(|| {
                    let body = digest::body(k, item);
                    f.pins.iter().find(|(pk, p)| pk.server == server && pk.kind == k && !listed.contains(pk.name.as_str()) && digest::body(k, &p.item) == body).map(|(pk, p)| (pk.name.clone(), p.item.clone()))
                });
                let what = match &previous {
                    Some((from, p)) if from == name => format!("changed since it was pinned ({})", digest::changed_fields(k, p, item).join(", ")),
                    Some((from, _)) => format!("is '{from}' renamed"),
                    None if first => "has findings".to_string(),
                    None => "is new since the pin".to_string(),
                };
                let gated = s.mode == Quarantine::Approve || (!findings.is_empty() && s.findings == Quarantine::Approve);
                let then = match (hidden, gated && k == Kind::Tools) {
                    (true, _) => "hidden",
                    (false, true) => "each call needs approval",
                    (false, false) => "still listed",
                };
                fx.push(Effect::Log(Level::Warn, format!("server '{server}': {} '{name}' {what}; {then} until `mcpx pin accept {key}`", k.item_word())));
                if previous.is_some() || !first {
                    fx.push(Effect::Changed { server: server.to_string(), kind: k });
                }
                for x in &findings {
                    fx.push(Effect::Log(Level::Warn, format!("server '{server}': {} '{name}': {x}", k.item_word())));
                    fx.push(Effect::Found { server: server.to_string(), finding: x.what.label() });
                }
                let findings = findings.iter().map(ToString::to_string).collect();
                f.changes.insert(key, Change { digest, item: item.clone(), previous, findings, hidden });
                dirty = true;
            }
            if hidden {
                hidden_any = true;
            } else {
                shown.push(item.clone());
            }
        }
        // A change no longer listed is gone with it.
        let before = f.changes.len();
        f.changes.retain(|key, _| key.server != server || key.kind != k || listed.contains(key.name.as_str()));
        dirty |= f.changes.len() != before;
        if hidden_any {
            self.withheld.insert((server.to_string(), k), items);
        } else {
            self.withheld.remove(&(server.to_string(), k));
        }
        if dirty {
            fx.push(Effect::Save(self.file.to_bytes()));
        }
        (shown, fx)
    }

    /// The pin files' bytes as the runtime read them ([`Pins::load`]): one
    /// that cannot be read as a pin file is logged, and counts as absent.
    pub fn read(&mut self, state: Option<&[u8]>, lock: Option<&[u8]>) -> Vec<Effect> {
        if cfg!(not(feature = "consent")) || !self.on() {
            return Vec::new();
        }
        let mut fx = Vec::new();
        let mut parse = |what: &str, bytes: Option<&[u8]>| {
            let r = PinFile::parse(bytes?);
            r.map_err(|e| fx.push(Effect::Log(Level::Error, format!("the {what} cannot be used: {e}")))).ok()
        };
        let (state, lock) = (parse("pin file in the state folder", state), parse("pin lock file", lock));
        fx.extend(self.load(state, lock));
        fx
    }

    /// The pin files as read: the state folder's (`state`) and the lock
    /// file (`lock`, when one is configured; unreadable or absent: nothing
    /// is trusted). Changes now trusted are accepted; every listing held
    /// against a pin that differs now is looked at again (listed again
    /// when it was hidden, hidden when it is no longer trusted).
    pub fn load(&mut self, state: Option<PinFile>, lock: Option<PinFile>) -> Vec<Effect> {
        let Some(s) = &self.settings else { return Vec::new() };
        let state = state.unwrap_or_default();
        let pins = if s.lock_file.is_some() { lock.unwrap_or_default().pins } else { state.pins };
        let before = std::mem::replace(&mut self.file.pins, pins);
        self.file.seen = state.seen;
        let mut fx = Vec::new();
        let pins = &self.file.pins;
        let accepted: Vec<Key> = self.file.changes.iter().filter(|(k, c)| pins.get(*k).is_some_and(|p| p.digest == c.digest)).map(|(k, _)| k.clone()).collect();
        for key in &accepted {
            if self.file.changes.remove(key).is_some() {
                fx.push(Effect::Log(Level::Info, format!("server '{}': {} '{}' accepted", key.server, key.kind.item_word(), key.name)));
            }
        }
        // Saved before the listings are looked at again, which save what
        // they change after it.
        if !accepted.is_empty() {
            fx.push(Effect::Save(self.file.to_bytes()));
        }
        let differ = |a: &BTreeMap<Key, Pin>, b: &BTreeMap<Key, Pin>| -> Vec<(String, Kind)> {
            a.iter().filter(|(k, p)| b.get(*k).is_none_or(|q| q.digest != p.digest)).map(|(k, _)| (k.server.clone(), k.kind)).collect()
        };
        let mut again: BTreeSet<(String, Kind)> = differ(&before, &self.file.pins).into_iter().collect();
        again.extend(differ(&self.file.pins, &before));
        for (server, kind) in again {
            let Some(&cached) = self.listings.get(&(server.clone(), kind)) else { continue };
            let items = self.withheld.remove(&(server.clone(), kind));
            fx.push(Effect::Relist { server, kind, items, cached });
        }
        fx
    }

    /// Trusts the changes `name` names (`server/name`, or a name only one
    /// server's changes have) as they are now, as `mcpx pin accept` does
    /// on the state folder's file (the status page's button, for
    /// approvers): saved, and what they hold back listed again. Refused
    /// when a lock file is what is trusted (the hub does not write it).
    #[cfg(feature = "consent")]
    pub fn accept(&mut self, name: &str) -> Result<Vec<Effect>, String> {
        let s = self.settings.as_ref().ok_or("pinning is off")?;
        if s.lock_file.is_some() {
            return Err("only the lock file is trusted here: accept the change with `mcpx pin accept`, which writes it".into());
        }
        let mut state = self.file.clone();
        state.accept(name)?;
        Ok(self.load(Some(state), None))
    }

    /// Is `item`, a `k` definition of `server` met outside a listing (a
    /// skill, as its prompt), one to hide: pins on in mode `hide`, the
    /// server's `k` trusted once already, and `item` not as pinned.
    #[cfg(feature = "skills")]
    pub fn hides(&self, server: &str, k: Kind, item: &Value) -> bool {
        let Some(s) = self.settings.as_ref().filter(|s| s.mode == Quarantine::Hide && PINNED.contains(&k)) else { return false };
        let Some(name) = item.get(k.key_field()).and_then(Value::as_str) else { return false };
        if s.lock_file.is_none() && !self.file.seen.contains(&(server.to_string(), k)) {
            return false; // trust on first use: its first listing pins it
        }
        let key = Key { server: server.to_string(), kind: k, name: name.to_string() };
        self.file.pins.get(&key).is_none_or(|p| p.digest != digest::of(k, item))
    }

    /// Does a call of `server`'s tool `name` need a person's approval,
    /// its definition having changed in mode `approve`?
    pub fn gated(&self, server: &str, name: &str) -> bool {
        let Some(s) = self.settings.as_ref().filter(|_| !self.file.changes.is_empty()) else { return false };
        let key = Key { server: server.to_string(), kind: Kind::Tools, name: name.to_string() };
        self.file.changes.get(&key).is_some_and(|c| !c.hidden && (s.mode == Quarantine::Approve || (!c.findings.is_empty() && s.findings == Quarantine::Approve)))
    }

    /// The description of `server`'s tool `name` as pinned: its pin's, or
    /// the one its change replaces; `None` when it has none (pins off, or a
    /// tool new since the pins).
    pub fn pinned_description(&self, server: &str, name: &str) -> Option<String> {
        self.settings.as_ref()?;
        let key = Key { server: server.to_string(), kind: Kind::Tools, name: name.to_string() };
        let item = match self.file.changes.get(&key) {
            Some(c) => &c.previous.as_ref()?.1,
            None => &self.file.pins.get(&key)?.item,
        };
        Some(item.get("description").and_then(Value::as_str).unwrap_or("").to_string())
    }

    /// For `/status`: the settings, the number of pins, and every change
    /// with what differs (`diff`: each changed member, before and after).
    pub fn status(&self) -> Option<Value> {
        if cfg!(not(feature = "consent")) {
            return None;
        }
        let s = self.settings.as_ref()?;
        let mode = |q: Quarantine| match q {
            Quarantine::Warn => "warn",
            Quarantine::Approve => "approve",
            Quarantine::Hide => "hide",
        };
        let changes: Vec<Value> = self.file.changes.iter().map(|(key, c)| {
            let (what, diff) = match &c.previous {
                Some((from, p)) => {
                    let diff: Vec<Value> = digest::changed_fields(key.kind, p, &c.item).into_iter().filter(|f| *f != "name" || *from == key.name).map(|f| json!({ "field": f, "before": p.get(f), "after": c.item.get(f) })).collect();
                    (if *from == key.name { "changed" } else { "renamed" }, diff)
                }
                None => (if c.findings.is_empty() { "new" } else { "findings" }, Vec::new()),
            };
            json!({
                "server": key.server, "kind": key.kind.result_key(), "name": key.name, "change": what,
                "renamedFrom": c.previous.as_ref().map(|(n, _)| n).filter(|n| **n != key.name),
                "hidden": c.hidden, "approval": self.gated(&key.server, &key.name), "diff": diff, "findings": c.findings,
                "description": c.item.get("description"),
            })
        }).collect();
        Some(json!({
            "mode": mode(s.mode), "findings": mode(s.findings),
            "lockFile": s.lock_file.as_ref().map(|p| p.display().to_string()),
            "pinned": self.file.pinned(), "changes": changes,
        }))
    }
}

#[cfg(test)]
mod tests;
