//! `mcpx pin [FILE]` and `mcpx pin accept NAME` (README: "Pinning tools"):
//! they edit the pin files; a running `mcpx serve` reads them again when
//! they change (within a second), and lists what was accepted.
//!
//! `mcpx pin` writes the pins of the state folder's file as a lock file
//! (FILE, else `policy.pin.lockFile`). `accept` moves the change NAME names
//! (`SERVER/NAME`, or a name only one server's changes have) into the pins
//! of the state folder's file, and of the lock file when one is configured.

use std::path::Path;

use crate::cmd::cli::{PinAction, PinArgs};
use crate::config::{self, Config};
use crate::hub::pins::PinFile;
use crate::serve::{pin_store, task_store};

pub fn main(args: PinArgs) -> i32 {
    let run = || -> Result<String, String> {
        let cfg = config::load(args.config.as_deref(), &config::process_env).map_err(|e| e.to_string())?;
        match &args.action {
            PinAction::Lock(out) => lock(&cfg, out.as_deref()),
            PinAction::Accept(name) => accept(&cfg, name),
        }
    };
    match run() {
        Ok(said) => {
            println!("{said}");
            0
        }
        Err(e) => {
            eprintln!("mcpx: {e}");
            1
        }
    }
}

/// The pin file at `path` (`None`: there is none).
fn read(path: &Path) -> Result<Option<PinFile>, String> {
    match std::fs::read(path) {
        Ok(b) => PinFile::parse(&b).map(Some).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn write(path: &Path, f: &PinFile) -> Result<(), String> {
    task_store::save(path, &f.to_bytes()).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The state folder's pin file of `cfg`: its path and contents.
fn state(cfg: &Config) -> Result<(std::path::PathBuf, PinFile), String> {
    if cfg.policy.pin.is_none() {
        return Err(format!("{}: nothing is pinned: add \"pin\": \"warn\" (or \"approve\", \"hide\") to \"policy\"", cfg.source));
    }
    let path = pin_store::path(&config::process_env, &cfg.source).ok_or("no state folder ($XDG_STATE_HOME or $HOME)")?;
    let f = read(&path)?.ok_or_else(|| format!("nothing pinned yet for {} (run `mcpx serve` with it first)", cfg.source))?;
    Ok((path, f))
}

fn lock(cfg: &Config, out: Option<&Path>) -> Result<String, String> {
    let (_, f) = state(cfg)?;
    let configured = cfg.policy.pin.as_ref().and_then(|p| p.lock_file.as_deref());
    let out = out.or(configured).ok_or("no lock file named: give one (`mcpx pin FILE`) or set \"lockFile\" in policy.pin")?;
    write(out, &f.lock())?;
    Ok(format!("{} definitions pinned in {}", f.pinned(), out.display()))
}

fn accept(cfg: &Config, name: &str) -> Result<String, String> {
    let (path, mut f) = state(cfg)?;
    let keys = f.accept(name)?;
    if let Some(lock_path) = cfg.policy.pin.as_ref().and_then(|p| p.lock_file.as_deref()) {
        let mut lock = read(lock_path)?.unwrap_or_default();
        lock.take_pins(&f, &keys);
        write(lock_path, &lock)?;
    }
    write(&path, &f)?;
    Ok(format!("accepted {}", keys.join(", ")))
}
