//! One run per output directory.
//!
//! Everything that writes a run's files into a directory first claims it:
//! the directory is created, shown to be writable, and locked with an
//! advisory `flock` on `DIR/.lingo.lock` that holds the process id. The
//! system releases the lock when the process ends, however it ends
//! (SIGKILL included), so a stale lock never blocks a later run; a second
//! run while the first is alive stops at once with an error naming the
//! directory and the process.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

use crate::error::{Error, Result};

/// The lock's file name inside the directory.
pub const LOCK_FILE: &str = ".lingo.lock";

/// An output directory claimed by this process until the value is dropped.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("lingo-run-dir-{}", std::process::id()));
/// let claimed = lingo_lessons::RunDir::claim(&dir).unwrap();
/// assert!(dir.join(lingo_lessons::run_dir::LOCK_FILE).is_file());
/// drop(claimed);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug)]
pub struct RunDir {
    _lock: File,
}

impl RunDir {
    /// Creates `dir` if needed and locks it for this process, before any work.
    pub fn claim(dir: &Path) -> Result<RunDir> {
        let fail = |reason: String| Err(Error::OutDir { path: dir.to_path_buf(), reason });
        if dir.exists() && !dir.is_dir() {
            return fail("is a file, not a directory".into());
        }
        if let Err(e) = std::fs::create_dir_all(dir) {
            return fail(format!("cannot create it: {e}"));
        }
        let path = dir.join(LOCK_FILE);
        let mut file = match OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path) {
            Ok(file) => file,
            Err(e) => return fail(format!("cannot write in it: {e}")),
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                let who = match pid.trim() {
                    "" => "another lingo process".to_string(),
                    pid => format!("lingo process {pid}"),
                };
                return fail(format!("in use by {who}; wait for it to end or choose another `out`"));
            }
            Err(TryLockError::Error(e)) => return fail(format!("cannot lock {}: {e}", path.display())),
        }
        // Ours now: say whose it is, for the error of a run that tries next.
        let written =
            file.set_len(0).and_then(|()| file.rewind()).and_then(|()| writeln!(file, "{}", std::process::id()));
        if let Err(e) = written {
            return fail(format!("cannot write in it: {e}"));
        }
        Ok(RunDir { _lock: file })
    }
}

/// Writes `bytes` to `path` atomically ([`lingo_nn::write_atomic`]): a
/// reader sees the old file or the new one, never half of one. An I/O
/// error names the file.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// lingo_lessons::run_dir::write_file(&dir.path().join("a.txt"), b"0-0\n").unwrap();
/// let err = lingo_lessons::run_dir::write_file(&dir.path().join("no/such/a.txt"), b"").unwrap_err();
/// assert!(err.to_string().starts_with(&format!("{}", dir.path().join("no/such/a.txt").display())));
/// ```
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    lingo_nn::write_atomic(path, bytes).map_err(|e| match e {
        lingo_nn::Error::Checkpoint { problem: lingo_nn::CheckpointProblem::Io(io), .. } => Error::io(path, io),
        other => other.into(),
    })
}
