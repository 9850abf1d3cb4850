//! A legacy session's part in the session directory ([`Listed`]) and the
//! listener's handle on the directory ([`SessionDir`]): the directory, once
//! set, and the queue of store writes that no request waits for. What
//! publishes, refreshes and serves from it is `session_dir`.

use std::cell::OnceCell;
use std::rc::Rc;

use smol::channel::{self, Receiver, Sender};

use super::conn::Common;
use crate::cluster::directory::Directory;
use crate::hub::Level;

/// Refreshes and deletions waiting at most; past it they are dropped (the
/// entries then expire with their TTL).
const QUEUE: usize = 4096;

/// A store operation of a session that does not delay a request.
pub(crate) enum Job {
    /// Its entry and state written again (half through their TTL).
    Refresh(String),
    /// Its state written again (it changed).
    Keep(String),
    Forget(String),
}

/// A session's part in the directory.
#[derive(Default)]
pub(crate) struct Listed {
    /// When its entry was last written; `None`: it has none.
    pub published: Option<u64>,
    /// A write of its state is queued.
    pub state_due: bool,
    /// Taken over from a replica that is gone.
    pub taken: Option<TakenOver>,
}

/// Where a session taken over comes from.
pub(crate) struct TakenOver {
    /// The replica that is gone.
    pub from: String,
    /// This replica's streams of the session are numbered above it.
    pub seq: u64,
    /// POST streams of `from` whose loss was told, the latest few
    /// (`session_dir`).
    pub told: Vec<u64>,
}

/// The directory of the listener, once set ([`super::Http::use_directory`]).
pub(crate) struct SessionDir {
    dir: OnceCell<Rc<Directory>>,
    tx: Sender<Job>,
    rx: Receiver<Job>,
}

impl SessionDir {
    pub fn new() -> SessionDir {
        let (tx, rx) = channel::bounded(QUEUE);
        SessionDir { dir: OnceCell::new(), tx, rx }
    }

    pub fn set(&self, dir: Directory) {
        let _ = self.dir.set(Rc::new(dir));
    }

    pub fn get(&self) -> Option<Rc<Directory>> {
        self.dir.get().cloned()
    }

    /// Queues `job` for the task that runs them (`session_dir::run`); false
    /// when the queue is full.
    pub fn queue(&self, common: &Common, job: Job) -> bool {
        let queued = self.tx.try_send(job).is_ok();
        if !queued {
            common.log(Level::Debug, "session directory: the queue is full; an entry is left to its TTL".into());
        }
        queued
    }

    /// The next job queued; `None` once the listener is gone.
    pub async fn next(&self) -> Option<Job> {
        self.rx.recv().await.ok()
    }
}
