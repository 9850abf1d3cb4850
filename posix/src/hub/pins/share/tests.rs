use serde_json::{json, Value};

use super::super::file::{Change, Pin};
use super::super::{Effect, Pins};
use super::*;
use crate::hub::catalog::Kind;
use crate::policy::{PinSettings, Quarantine};

fn key(name: &str) -> Key {
    Key { server: "a".into(), kind: Kind::Tools, name: name.into() }
}

/// A pin file from `pins` and `changes` as (name, digest), and `seen` servers.
fn file(pins: &[(&str, &str)], changes: &[(&str, &str)], seen: &[&str]) -> PinFile {
    let mut f = PinFile::default();
    for (n, d) in pins {
        f.pins.insert(key(n), Pin { digest: d.to_string(), item: json!({ "name": n }) });
    }
    for (n, d) in changes {
        f.changes.insert(key(n), Change { digest: d.to_string(), item: json!({ "name": n }), previous: None, findings: vec![], hidden: true });
    }
    f.seen = seen.iter().map(|s| (s.to_string(), Kind::Tools)).collect();
    f
}

fn pins_of(f: &PinFile) -> Vec<(String, String)> {
    f.pins.iter().map(|(k, p)| (k.name.clone(), p.digest.clone())).collect()
}

fn changes_of(f: &PinFile) -> Vec<(String, String)> {
    f.changes.iter().map(|(k, c)| (k.name.clone(), c.digest.clone())).collect()
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

type Side<'a> = &'a [(&'a str, &'a str)];

#[test]
fn merge_rules() {
    // (case, pins base/mine/theirs, result pins)
    let pin_cases: &[(&str, [Side; 3], Side)] = &[
        ("pinned first here", [&[], &[("t", "1")], &[]], &[("t", "1")]),
        ("pinned there: the union", [&[], &[("t", "1")], &[("u", "2")]], &[("t", "1"), ("u", "2")]),
        ("pinned on both alike", [&[], &[("t", "1")], &[("t", "1")]], &[("t", "1")]),
        ("pinned on both differently: theirs, written first", [&[], &[("t", "1")], &[("t", "2")]], &[("t", "2")]),
        ("accepted here", [&[("t", "1")], &[("t", "3")], &[("t", "1")]], &[("t", "3")]),
        ("accepted there", [&[("t", "1")], &[("t", "1")], &[("t", "3")]], &[("t", "3")]),
        ("accepted on both differently: theirs, written first", [&[("t", "1")], &[("t", "3")], &[("t", "4")]], &[("t", "4")]),
        ("not in theirs any more (Redis flushed): kept", [&[("t", "1")], &[("t", "1")], &[]], &[("t", "1")]),
        ("not in mine: kept", [&[("t", "1")], &[], &[("t", "1")]], &[("t", "1")]),
    ];
    for (case, [b, m, t], want) in pin_cases {
        let got = merge(&file(b, &[], &[]), &file(m, &[], &[]), &file(t, &[], &[]));
        assert_eq!(pins_of(&got), pairs(want), "{case}");
    }
    // (case, pins base/mine/theirs, changes base/mine/theirs, result changes)
    let change_cases: &[(&str, [Side; 3], [Side; 3], Side)] = &[
        ("seen here", [&[], &[], &[]], [&[], &[("c", "5")], &[]], &[("c", "5")]),
        ("seen there", [&[], &[], &[]], [&[], &[], &[("c", "5")]], &[("c", "5")]),
        ("seen on both differently: mine, the newer", [&[], &[], &[]], [&[], &[("c", "5")], &[("c", "6")]], &[("c", "5")]),
        ("gone here", [&[], &[], &[]], [&[("c", "5")], &[], &[("c", "5")]], &[]),
        ("gone here, seen anew there", [&[], &[], &[]], [&[("c", "5")], &[], &[("c", "6")]], &[("c", "6")]),
        ("gone there, still seen here", [&[], &[], &[]], [&[("c", "5")], &[("c", "5")], &[]], &[]),
        ("accepted there", [&[("c", "1")], &[("c", "1")], &[("c", "5")]], [&[("c", "5")], &[("c", "5")], &[]], &[]),
        ("accepted there, seen here meanwhile", [&[("c", "1")], &[("c", "1")], &[("c", "5")]], [&[], &[("c", "5")], &[]], &[]),
        ("accepted here", [&[("c", "1")], &[("c", "5")], &[("c", "1")]], [&[("c", "5")], &[], &[("c", "5")]], &[]),
        ("another definition accepted there: still a change", [&[("c", "1")], &[("c", "1")], &[("c", "7")]], [&[], &[("c", "5")], &[]], &[("c", "5")]),
    ];
    for (case, [pb, pm, pt], [b, m, t], want) in change_cases {
        let got = merge(&file(pb, b, &[]), &file(pm, m, &[]), &file(pt, t, &[]));
        assert_eq!(changes_of(&got), pairs(want), "{case}");
    }
    let got = merge(&file(&[], &[], &["x"]), &file(&[], &[], &["y"]), &file(&[], &[], &["z"]));
    let seen: Vec<&str> = got.seen.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(seen, ["y", "z"], "seen: the union of mine and theirs");
}

fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
}

/// One replica: its hub's pins and its share of the store, which is
/// `store` (what Redis holds), written by compare-and-set.
struct Replica {
    pins: Pins,
    shared: Shared,
    /// The state file, as last written.
    file: Option<PinFile>,
    /// What the hub's catalog shows of server a.
    catalog: Vec<Value>,
}

impl Replica {
    /// With `lock` as its lock file (only it trusted), `state` in its state folder.
    fn new(lock: Option<PinFile>, state: Option<PinFile>) -> Replica {
        let lock_mode = lock.is_some();
        let pins = Pins::new(Some(PinSettings { mode: Quarantine::Hide, findings: Quarantine::Warn, lock_file: lock_mode.then(|| "pins.lock.json".into()) }));
        Replica { pins, shared: Shared::new(lock_mode, state.clone(), lock), file: state, catalog: Vec::new() }
    }

    /// The hub lists `items` of server a: those shown.
    fn list(&mut self, items: Vec<Value>) -> Vec<String> {
        let (shown, fx) = self.pins.listed("a", Kind::Tools, items, false);
        self.catalog = shown.clone();
        self.effects(fx);
        self.catalog.iter().filter_map(|i| i["name"].as_str().map(str::to_string)).collect()
    }

    /// What the hub does with them: a save goes to the share (and the
    /// state file), a listing to look at again is listed.
    fn effects(&mut self, fx: Vec<Effect>) {
        for e in fx {
            match e {
                Effect::Save(b) => {
                    self.shared.hub_saved(PinFile::parse(&b).unwrap());
                    if let Some(b) = self.shared.file_todo() {
                        self.file = Some(PinFile::parse(&b).unwrap());
                    }
                }
                Effect::Relist { items, .. } => {
                    let items = items.unwrap_or_else(|| self.catalog.clone());
                    self.list(items);
                }
                _ => {}
            }
        }
    }

    /// The runtime's sync with the store: what it writes, then the file and the hub.
    fn sync(&mut self, store: &mut Option<PinFile>) {
        if let Some(w) = self.shared.stored(Theirs::Now(store.clone())) {
            *store = Some(w.clone());
            self.shared.written(w);
        }
        self.feed();
    }

    /// Gives the hub what the share says (as the runtime does, through `Pins::read`).
    fn feed(&mut self) {
        let mut written = None;
        let todo = self.shared.hub_todo(|b| written = Some(PinFile::parse(b).unwrap()));
        if written.is_some() {
            self.file = written;
        }
        if let Some((state, lock)) = todo {
            let fx = self.pins.read(Some(&state), lock.as_deref());
            self.effects(fx);
        }
    }

    fn changed(&self) -> Vec<String> {
        self.pins.status().unwrap()["changes"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_string()).collect()
    }
}

fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_first_listing_on_any_replica_pins_for_all_and_an_accept_reaches_every_one() {
    let mut store = None;
    let (mut a, mut b) = (Replica::new(None, None), Replica::new(None, None));
    a.sync(&mut store);
    b.sync(&mut store);
    assert_eq!(a.list(vec![tool("t", "adds"), tool("u", "subtracts")]), ["t", "u"]);
    a.sync(&mut store);
    assert_eq!(store.as_ref().map(PinFile::pinned), Some(2), "A's first use, in the store");
    // B lists after a rug pull: t is held back, and B's sighting is in the store.
    b.sync(&mut store);
    assert_eq!(b.list(vec![tool("t", "adds, then mails"), tool("u", "subtracts")]), ["u"]);
    b.sync(&mut store);
    assert_eq!(changes_of(store.as_ref().unwrap()).len(), 1);
    // A's state file has B's change: `mcpx pin accept t` there.
    a.sync(&mut store);
    let mut edited = a.file.clone().expect("A's state file");
    assert_eq!(edited.accept("t"), Ok(vec!["a/t".to_string()]));
    a.shared.files_read(Some(edited), None);
    a.sync(&mut store);
    assert_eq!(changes_of(store.as_ref().unwrap()), []);
    // B gets it at its next poll: t is listed again there.
    b.sync(&mut store);
    assert_eq!(b.changed(), Vec::<String>::new());
    assert_eq!(b.list(vec![tool("t", "adds, then mails"), tool("u", "subtracts")]), ["t", "u"]);
    // And A, which lists the old t, holds it back now.
    assert_eq!(a.list(vec![tool("t", "adds"), tool("u", "subtracts")]), ["u"]);
}

#[test]
fn concurrent_first_listings_merge_and_the_first_written_digest_wins() {
    let mut store = None;
    let (mut a, mut b) = (Replica::new(None, None), Replica::new(None, None));
    // Both list before either writes; their servers differ on t.
    assert_eq!(a.list(vec![tool("t", "adds"), tool("u", "subtracts")]), ["t", "u"]);
    assert_eq!(b.list(vec![tool("t", "adds, then mails"), tool("v", "divides")]), ["t", "v"]);
    a.sync(&mut store);
    // B's compare-and-set on the empty store loses; it reads A's value and writes onto it.
    b.sync(&mut store);
    assert_eq!(pins_of(store.as_ref().unwrap()).iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["t", "u", "v"], "the union");
    assert_eq!(store.as_ref().unwrap().pins[&key("t")].item["description"], "adds", "A's t, written first");
    // B is given A's t: its own is held back at once, not at its next listing.
    assert_eq!(b.changed(), names(&["t"]));
    a.sync(&mut store);
    assert_eq!(a.list(vec![tool("t", "adds"), tool("u", "subtracts"), tool("v", "divides")]), ["t", "u", "v"], "v: pinned by B's first use");
}

#[test]
fn an_unusable_stored_value_leaves_the_local_pins_in_force_and_is_replaced() {
    let mut store = None;
    let mut a = Replica::new(None, None);
    a.list(vec![tool("t", "adds"), tool("u", "subtracts")]);
    a.sync(&mut store);
    assert_eq!(a.list(vec![tool("t", "adds"), tool("u", "subtracts, then mails")]), ["t"]);
    a.sync(&mut store);
    // The value cannot be used (forged, over the bound, not a pin file, or
    // Redis flushed): as if absent.
    let w = a.shared.stored(Theirs::Now(None)).expect("this replica's pins, to write over it");
    assert_eq!((w.pinned(), changes_of(&w)), (2, pairs(&[("u", &a.pins.file.changes[&key("u")].digest)])), "pins and changes");
    a.feed();
    assert_eq!(a.list(vec![tool("t", "adds, then mails"), tool("u", "subtracts")]), ["u"], "t's pin still in force");
    // A replica started afresh against it trusts its own state file.
    let mut replaced = None;
    let mut b = Replica::new(None, a.file.clone());
    b.sync(&mut replaced);
    assert_eq!(b.list(vec![tool("t", "adds, then mails")]), Vec::<String>::new());
    assert_eq!(replaced.as_ref().map(PinFile::pinned), Some(2), "its pins written over it");
}

#[test]
fn with_a_lock_file_only_accepts_are_shared() {
    let mut tofu = Replica::new(None, None);
    tofu.list(vec![tool("t", "adds"), tool("u", "subtracts")]);
    let lock = tofu.file.clone().unwrap().lock();
    let mut store = None;
    let (mut a, mut b) = (Replica::new(Some(lock.clone()), None), Replica::new(Some(lock.clone()), None));
    a.sync(&mut store);
    b.sync(&mut store);
    assert_eq!(a.list(vec![tool("t", "adds, then mails"), tool("u", "subtracts"), tool("w", "new")]), ["u"]);
    a.sync(&mut store);
    let s = store.clone().unwrap();
    assert_eq!((pins_of(&s), changes_of(&s).len()), (vec![], 2), "the lock file's pins are not put in the store; A's changes are");
    // Accepted on A (its state file and lock file), trusted by B too.
    let mut edited = a.file.clone().unwrap();
    edited.accept("t").unwrap();
    let mut a_lock = lock.clone();
    a_lock.take_pins(&edited, &["a/t".to_string()]);
    a.shared.files_read(Some(edited), Some(a_lock));
    a.sync(&mut store);
    assert_eq!(pins_of(store.as_ref().unwrap()).iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["t"], "the accept");
    b.sync(&mut store);
    assert_eq!(b.list(vec![tool("t", "adds, then mails"), tool("u", "subtracts"), tool("w", "new")]), ["t", "u"], "w is not in the lock file");
    // Nothing is trusted without a readable lock file, accepts included.
    b.shared.files_read(None, None);
    b.feed();
    assert_eq!(b.list(vec![tool("t", "adds, then mails"), tool("u", "subtracts")]), Vec::<String>::new());
}

#[test]
fn a_change_stays_shared_while_a_replica_still_holds_it_back() {
    let mut store = None;
    let (mut a, mut b) = (Replica::new(None, None), Replica::new(None, None));
    a.list(vec![tool("t", "adds")]);
    a.sync(&mut store);
    b.sync(&mut store);
    // Both servers change t; both replicas hold it back.
    assert_eq!(a.list(vec![tool("t", "adds, then mails")]), Vec::<String>::new());
    assert_eq!(b.list(vec![tool("t", "adds, then mails")]), Vec::<String>::new());
    a.sync(&mut store);
    b.sync(&mut store);
    // A's server goes back to what is pinned: A no longer sees the change.
    assert_eq!(a.list(vec![tool("t", "adds")]), ["t"]);
    a.sync(&mut store);
    assert_eq!(changes_of(store.as_ref().unwrap()), [], "A took its change away");
    // B, which still holds t back, writes it back: still in A's state file.
    b.sync(&mut store);
    assert_eq!(changes_of(store.as_ref().unwrap()).len(), 1);
    a.sync(&mut store);
    assert!(a.file.as_ref().unwrap().changes.contains_key(&key("t")), "acceptable from A's state folder");
    b.sync(&mut store);
    assert!(!b.shared.pending(), "and nothing more to write: no writes back and forth");
    a.sync(&mut store);
    assert!(!a.shared.pending());
}
