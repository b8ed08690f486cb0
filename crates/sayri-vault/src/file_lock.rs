//! An exclusive advisory lock (flock(2)) that serialises vault writers across processes.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::VaultError;

/// Held while a writer reads, changes and replaces the vault; released on drop (close).
pub(crate) struct FileLock {
    _file: File,
}

impl FileLock {
    /// Blocks until the exclusive lock on `path` (created 0600 if missing) is ours.
    pub(crate) fn acquire(path: &Path) -> Result<Self, VaultError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| VaultError::io("opening the lock file", path, e))?;
        loop {
            // SAFETY: the fd is valid for the lifetime of `file`; flock has no memory effects.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            if rc == 0 {
                return Ok(Self { _file: file });
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(VaultError::io("locking", path, err));
            }
        }
    }
}
