//! The pins shared by replicas through the store (README: "Pinning tools";
//! the rules are `hub::pins::share`'s). At start the store is read (within
//! its timeout) before the first listing. Then every [`POLL`], and at once
//! when this replica's pins change (the hub saved them, or a pin file
//! changed on disk), its edits are written onto what the store holds (a
//! compare-and-set, tried again on what another replica wrote meanwhile),
//! and what the others wrote reaches the state folder's pin file and the
//! hub (`Input::PinFiles`, as a pin file read from disk does). A poll asks
//! Redis whether the value is still the one known (its MAC): it is fetched
//! only when it changed.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use smol::channel::{self, Receiver, Sender};
use smol::future::FutureExt as _;
use smol::{Task, Timer};

use crate::cluster::sealed;
use crate::cluster::store::{Held, Read, Store, Unavailable};
use crate::config::Config;
use crate::hub::pins::{PinFile, Shared, Theirs};
use crate::hub::shared::PINS_KEY;
use crate::process::exec::Executor;

/// How often the store is looked at.
pub const POLL: Duration = Duration::from_secs(2);

/// Compare-and-sets tried per sync: another replica wrote between the read
/// and the write each time before giving up until the next poll.
const TRIES: usize = 5;

/// One replica's share of the pins.
pub struct PinShare {
    store: Rc<Store>,
    lock_mode: bool,
    rules: RefCell<Shared>,
    /// What the key held when last read or written.
    held: RefCell<Rc<Held>>,
    /// Wakes the task: this replica's pins changed.
    kick: (Sender<()>, Receiver<()>),
    /// Redis did not answer the last sync (said once until it does).
    down: Cell<bool>,
    /// The pins were over the store's bound at the last write (said once).
    over: Cell<bool>,
    /// The stored value was not a pin file (said once).
    bad: Cell<bool>,
}

/// What the share needs of the runtime (`serve::runtime::Runtime`): the
/// pin files read and given to the hub, the state folder's pin file, and
/// whether it is closing.
pub(super) trait Host {
    /// Reads the pin files and keeps them read (the share, when there is
    /// one, is given them first).
    fn keep_pins(&self, cfg: &Config);
    /// The share the runtime gives what it reads and what the hub saves.
    fn set_pin_share(&self, share: Rc<PinShare>);
    /// Gives the hub these pin files as read.
    fn pins_to_hub(&self, state: &[u8], lock: Option<&[u8]>);
    /// Writes the state folder's pin file.
    fn save_pin_file(&self, bytes: &[u8]);
    fn closing(&self) -> bool;
}

/// Shares the pins of `cfg` through `store`, if there is one and pins are
/// on: reads the store (within its timeout) and gives the hub what is
/// trusted before the first listing, and returns the task that keeps them
/// in step (running while it is held). Either way the pin files are read
/// (`Host::keep_pins`).
pub(super) async fn start<H: Host + 'static>(rt: &Rc<H>, ex: &Executor, cfg: &Config, store: Option<Rc<Store>>) -> Option<Task<()>> {
    let share = match (cfg!(feature = "consent"), &cfg.policy.pin, store) {
        (true, Some(pin), Some(store)) => Rc::new(PinShare::new(store, pin.lock_file.is_some())),
        _ => {
            rt.keep_pins(cfg);
            return None;
        }
    };
    rt.set_pin_share(share.clone());
    rt.keep_pins(cfg);
    info!("pins: shared with the other replicas in Redis ({PINS_KEY}), looked at every {} s", POLL.as_secs());
    share.sync().await;
    share.apply(&**rt);
    Some(ex.spawn(share.run(rt.clone())))
}

/// A pin file read as `what`; one that cannot be used is logged, and counts as absent.
fn parse(what: &str, bytes: Option<&[u8]>) -> Option<PinFile> {
    PinFile::parse(bytes?).map_err(|e| error!("the {what} cannot be used: {e}")).ok()
}

impl PinShare {
    fn new(store: Rc<Store>, lock_mode: bool) -> PinShare {
        PinShare {
            store,
            lock_mode,
            rules: RefCell::new(Shared::new(lock_mode, None, None)),
            held: RefCell::new(Rc::new(Held::Absent)),
            kick: channel::bounded(1),
            down: Cell::new(false),
            over: Cell::new(false),
            bad: Cell::new(false),
        }
    }

    /// The pin files as read (`first`: at start; else they changed on disk).
    pub(super) fn files_read(&self, rt: &impl Host, state: Option<Vec<u8>>, lock: Option<Vec<u8>>, first: bool) {
        let state = parse("pin file in the state folder", state.as_deref());
        let lock = parse("pin lock file", lock.as_deref());
        if first {
            *self.rules.borrow_mut() = Shared::new(self.lock_mode, state, lock);
            return;
        }
        self.rules.borrow_mut().files_read(state, lock);
        self.apply(rt);
        let _ = self.kick.0.try_send(());
    }

    /// The hub saved its pins (`Output::SavePins`): kept in the state file
    /// now, written to the store by the task.
    pub(super) fn hub_saved(&self, rt: &impl Host, bytes: &[u8]) {
        let Some(m) = parse("pin file the hub saved", Some(bytes)) else { return };
        let mut rules = self.rules.borrow_mut();
        rules.hub_saved(m);
        if let Some(b) = rules.file_todo() {
            rt.save_pin_file(&b);
        }
        drop(rules);
        let _ = self.kick.0.try_send(());
    }

    /// Writes the state file and gives the hub what it is to trust, when they changed.
    fn apply(&self, rt: &impl Host) {
        let todo = self.rules.borrow_mut().hub_todo(|b| rt.save_pin_file(b));
        if let Some((state, lock)) = todo {
            rt.pins_to_hub(&state, lock.as_deref());
        }
    }

    /// Looks at the store every [`POLL`], and when kicked.
    async fn run<H: Host>(self: Rc<Self>, rt: Rc<H>) {
        loop {
            let kicked = async {
                let _ = self.kick.1.recv().await;
            };
            let poll = async {
                Timer::after(POLL).await;
            };
            kicked.or(poll).await;
            if rt.closing() {
                return;
            }
            self.sync().await;
            self.apply(&*rt);
        }
    }

    /// Writes this replica's edits onto what the store holds, and takes
    /// what the others wrote.
    async fn sync(&self) {
        let mut full = false;
        for _ in 0..TRIES {
            let held = self.held.borrow().clone();
            let known = match (&*held, full) {
                (Held::Value(v), false) => Some(v.as_slice()),
                _ => None,
            };
            let theirs = match self.store.read(PINS_KEY, known).await {
                Err(e) => return self.unavailable(e),
                Ok(Read::Same) if !self.rules.borrow().pending() => return self.available(),
                Ok(Read::Same) => Theirs::Same,
                Ok(Read::Now(now)) => {
                    let theirs = match &now {
                        Held::Value(v) => self.parse_stored(v),
                        _ => None,
                    };
                    *self.held.borrow_mut() = Rc::new(now);
                    Theirs::Now(theirs)
                }
            };
            self.available();
            let Some(merged) = self.rules.borrow_mut().stored(theirs) else { return };
            let bytes = merged.to_bytes();
            let max = sealed::kind(PINS_KEY).map_or(0, |k| k.max_len);
            if bytes.len() > max {
                if !self.over.replace(true) {
                    warn!("pins: the pins are {} bytes, over the {max} bytes a value in Redis may have: not shared (this replica keeps its own in its state folder)", bytes.len());
                }
                return;
            }
            self.over.set(false);
            let held = self.held.borrow().clone();
            match self.store.swap(PINS_KEY, &held, &bytes).await {
                Ok(true) => {
                    *self.held.borrow_mut() = Rc::new(Held::Value(bytes));
                    self.rules.borrow_mut().written(merged);
                    return;
                }
                // Another replica wrote first: read it whole, and merge again.
                Ok(false) => full = true,
                Err(e) => return self.unavailable(e),
            }
        }
        warn!("pins: other replicas wrote the shared pins {TRIES} times while this one was merging its own in; trying again within {} s", POLL.as_secs());
    }

    /// The stored value `v` (sealed by a replica) as a pin file; one that is
    /// not is ignored (and replaced), with a warning.
    fn parse_stored(&self, v: &[u8]) -> Option<PinFile> {
        match PinFile::parse(v) {
            Ok(f) => {
                self.bad.set(false);
                Some(f)
            }
            Err(e) => {
                if !self.bad.replace(true) {
                    warn!("pins: the value of {PINS_KEY} in Redis is ignored, as if absent: not a pin file ({e}); this replica's pins stay in force and are written over it");
                }
                None
            }
        }
    }

    fn unavailable(&self, Unavailable(why): Unavailable) {
        if !self.down.replace(true) {
            warn!("pins: the pins shared in Redis cannot be read or written ({why}); this replica's stay in force, and its edits are written once Redis answers");
        }
    }

    fn available(&self) {
        if self.down.replace(false) {
            info!("pins: the pins shared in Redis are read and written again");
        }
    }
}

#[cfg(test)]
mod tests;
