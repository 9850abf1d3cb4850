//! The pin files of `mcpx serve` (README: "Pinning tools"): the one the
//! hub keeps in `<state>/pins/` (one per config file, see
//! `task_store::config_name`), and the lock file `policy.pin.lockFile`
//! names. Both are read at start and again whenever they change on disk
//! (looked at with the config file, every second), so `mcpx pin accept`
//! reaches a running hub.

use std::cell::Cell;
use std::path::PathBuf;

use crate::config::{self, Config, EnvLookup, Source};
use crate::host::file_stamp::{stamp, Stamp};
use crate::serve::task_store;

/// The pin file in the state folder of the config from `source`.
pub fn path(env: EnvLookup<'_>, source: &Source) -> Option<PathBuf> {
    Some(config::state_dir(env)?.join("pins").join(task_store::file_name(&task_store::config_name(source))))
}

/// What the state folder's pin file and the lock file hold (`None`: absent).
pub type Contents = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The files of a running hub, and how they looked when last read.
pub struct PinStore {
    state: PathBuf,
    lock: Option<PathBuf>,
    seen: Cell<[Option<Stamp>; 2]>,
}

/// At most this much of a pin file is read.
const MAX: u64 = 64 << 20;

fn read(p: &std::path::Path) -> Option<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    match std::fs::File::open(p).and_then(|f| f.take(MAX).read_to_end(&mut bytes)) {
        Ok(_) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            warn!("cannot read the pin file {}: {e}", p.display());
            None
        }
    }
}

impl PinStore {
    /// The files of `cfg`, when it pins (`None` also without a state folder: logged).
    pub fn of(cfg: &Config) -> Option<PinStore> {
        let pin = cfg.policy.pin.as_ref()?;
        let Some(state) = path(&config::process_env, &cfg.source) else {
            warn!("no state folder ($XDG_STATE_HOME or $HOME): pins are kept while mcpx runs only");
            return None;
        };
        debug!("pin file: {}", state.display());
        Some(PinStore { state, lock: pin.lock_file.clone(), seen: Cell::new([None, None]) })
    }

    /// The files' contents if they changed since last read (or were never read).
    pub fn read_if_changed(&self, first: bool) -> Option<Contents> {
        let now = [stamp(&self.state), self.lock.as_deref().and_then(stamp)];
        if !first && now == self.seen.get() {
            return None;
        }
        self.seen.set(now);
        Some((read(&self.state), self.lock.as_deref().and_then(read)))
    }

    /// Writes the hub's pin file (as the task state file is written).
    pub fn save(&self, bytes: &[u8]) {
        if let Err(e) = task_store::save(&self.state, bytes) {
            error!("cannot write the pin file {}: {e}", self.state.display());
        }
        let mut seen = self.seen.get();
        seen[0] = stamp(&self.state);
        self.seen.set(seen);
    }
}
