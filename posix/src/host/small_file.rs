//! Small files named by the config (`state.keyFile`, a remote's `caFile`,
//! an OAuth `privateKeyFile`), read with bounds: a regular file only, at
//! most [`MAX_BYTES`], within [`TIMEOUT`]. A FIFO nobody writes, a device
//! such as `/dev/zero` or a hung network mount is refused with an error
//! instead of stopping the event loop or exhausting memory.
//!
//! The file is opened without blocking (`O_NONBLOCK`: opening a FIFO does
//! not wait for a writer) and its type checked before anything is read; the
//! read runs on a thread of its own, given up after [`TIMEOUT`] (the thread
//! is left to finish or hang on its own).

use std::fmt;
use std::io::{self, Read as _};
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;
use std::time::Duration;

/// The largest file read.
pub const MAX_BYTES: u64 = 1 << 20;

/// How long a read may take.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// Why a file was not read (the payload of the `io::Error` [`read`] gives).
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A FIFO, a device, a socket or a folder: what it is.
    NotRegular(&'static str),
    TooLarge { limit: u64 },
    TimedOut(Duration),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotRegular(what) => write!(f, "it is {what}, not a regular file"),
            Refusal::TooLarge { limit } => write!(f, "it is larger than {} KiB, too large for this setting", limit / 1024),
            Refusal::TimedOut(after) => write!(f, "reading it took longer than {} s (a hung network mount?)", after.as_secs()),
        }
    }
}

impl std::error::Error for Refusal {}

fn refused(kind: io::ErrorKind, why: Refusal) -> io::Error {
    io::Error::new(kind, why)
}

/// The bytes of `path`, within the bounds.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let owned = path.to_path_buf();
    within(TIMEOUT, move || read_now(&owned, MAX_BYTES))
}

/// [`read`] as UTF-8 text.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

/// What `job` gives, run on a thread of its own, unless it takes longer than `timeout`.
fn within(timeout: Duration, job: impl FnOnce() -> io::Result<Vec<u8>> + Send + 'static) -> io::Result<Vec<u8>> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new().name("mcpx-read-file".into()).spawn(move || {
        let _ = tx.send(job());
    })?;
    rx.recv_timeout(timeout).unwrap_or_else(|_| Err(refused(io::ErrorKind::TimedOut, Refusal::TimedOut(timeout))))
}

fn read_now(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let meta = file.metadata()?;
    let t = meta.file_type();
    if !t.is_file() {
        let what = if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_dir() {
            "a folder"
        } else {
            "not a file"
        };
        return Err(refused(io::ErrorKind::InvalidInput, Refusal::NotRegular(what)));
    }
    let too_large = || refused(io::ErrorKind::InvalidData, Refusal::TooLarge { limit: max });
    if meta.len() > max {
        return Err(too_large());
    }
    // The size may have grown since: never more than `max` + 1 bytes.
    let mut buf = Vec::new();
    file.take(max + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(too_large());
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(r: io::Result<Vec<u8>>) -> Refusal {
        let e = r.expect_err("refused");
        *e.into_inner().expect("a refusal").downcast::<Refusal>().expect("a refusal")
    }

    #[test]
    fn refuses_what_is_not_a_small_regular_file() {
        let dir = std::env::temp_dir().join(format!("mcpx-small-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let big = dir.join("big");
        std::fs::File::create(&big).unwrap().set_len(MAX_BYTES + 1).unwrap();
        let ok = dir.join("ok");
        std::fs::write(&ok, b"key").unwrap();

        let cases: [(&Path, Result<&[u8], Refusal>); 5] = [
            (&ok, Ok(b"key")),
            (&fifo, Err(Refusal::NotRegular("a FIFO (named pipe)"))),
            (Path::new("/dev/zero"), Err(Refusal::NotRegular("a device"))),
            (&dir, Err(Refusal::NotRegular("a folder"))),
            (&big, Err(Refusal::TooLarge { limit: MAX_BYTES })),
        ];
        for (path, want) in cases {
            match want {
                Ok(bytes) => assert_eq!(read(path).unwrap(), bytes, "{}", path.display()),
                Err(refusal) => assert_eq!(why(read(path)), refusal, "{}", path.display()),
            }
        }
        assert_eq!(read(&dir.join("missing")).unwrap_err().kind(), io::ErrorKind::NotFound);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_read_that_does_not_come_is_given_up() {
        let t0 = std::time::Instant::now();
        let slow = within(Duration::from_millis(100), || {
            std::thread::sleep(Duration::from_secs(3));
            Ok(Vec::new())
        });
        assert_eq!(why(slow), Refusal::TimedOut(Duration::from_millis(100)));
        assert!(t0.elapsed() < Duration::from_secs(1), "waited {:?}", t0.elapsed());
        assert_eq!(within(Duration::from_secs(5), || Ok(b"x".to_vec())).unwrap(), b"x");
    }
}
