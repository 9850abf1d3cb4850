//! Which version of a file is on disk ([`stamp`]): what the config and
//! pin-file watchers compare to see a save.

use std::path::Path;
use std::time::SystemTime;

/// What identifies one version of a file on disk: an edit changes its
/// time or size, an editor's save (a new file renamed over it) its inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    mtime: Option<SystemTime>,
    len: u64,
    ino: u64,
}

/// The stamp of the file at `path`; `None`: there is none.
pub(crate) fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp { mtime: m.modified().ok(), len: m.len(), ino: m.ino() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_see_rewrites_and_replacements() {
        let dir = std::env::temp_dir().join(format!("mcpx-stamp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("mcpx.json");
        std::fs::write(&p, "{}").unwrap();
        let a = stamp(&p).unwrap();
        std::fs::write(&p, "{ }").unwrap();
        assert_ne!(stamp(&p), Some(a), "a different size");
        let b = stamp(&p).unwrap();
        // An editor's save: a new file renamed over the old one.
        let tmp = dir.join("mcpx.json.tmp");
        std::fs::write(&tmp, "{ }").unwrap();
        std::fs::rename(&tmp, &p).unwrap();
        assert_ne!(stamp(&p), Some(b), "a new inode");
        std::fs::remove_file(&p).unwrap();
        assert_eq!(stamp(&p), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
