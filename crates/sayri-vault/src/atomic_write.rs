//! Atomic replacement of a file: temp file (0600) + fsync + rename + fsync of the directory.
//!
//! The one way Sayri replaces a file it owns: the vault writes `vault.enc` with it, and the
//! `sayri` binary writes `sayri.toml` with it.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::VaultError;

/// A step of [`write_atomic`] or [`sync_dir`] failed.
#[derive(Debug, thiserror::Error)]
#[error("{action} {path}: {source}")]
pub struct AtomicWriteError {
    /// What was being done ("writing", "renaming the new file over", …).
    pub action: &'static str,
    /// The file or directory.
    pub path: PathBuf,
    /// The OS error.
    pub source: std::io::Error,
}

impl AtomicWriteError {
    fn new(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        AtomicWriteError {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

impl From<AtomicWriteError> for VaultError {
    fn from(e: AtomicWriteError) -> Self {
        VaultError::io(e.action, e.path, e.source)
    }
}

/// The temp file used while replacing `path`: `.<name>.tmp` in the same directory (same filesystem,
/// so the rename is atomic). Callers serialise writers of one file (the vault with its lock, the
/// daemon with its config lock).
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

/// Replaces `path` with `bytes` so that a reader (or a crash at any point) sees either the old file
/// or the new one, never a mix. The file is created 0600 (a symlink at the temp path is not
/// followed). On error the temp file is removed and the old file is untouched.
///
/// # Errors
/// The step that failed, with its path and the OS error.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), AtomicWriteError> {
    write_atomic_with_mode(path, bytes, 0o600)
}

/// As [`write_atomic`], with the new file's permission bits `mode` (e.g. those of the file being
/// replaced, so a save keeps a user's `0640`). The temp file is created `0600` and only gets
/// `mode` once written.
///
/// # Errors
/// The step that failed, with its path and the OS error.
pub fn write_atomic_with_mode(
    path: &Path,
    bytes: &[u8],
    mode: u32,
) -> Result<(), AtomicWriteError> {
    let tmp = temp_path(path);
    let result = write_then_rename(&tmp, path, bytes, mode);
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn write_then_rename(
    tmp: &Path,
    path: &Path,
    bytes: &[u8],
    mode: u32,
) -> Result<(), AtomicWriteError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(tmp)
        .map_err(|e| AtomicWriteError::new("creating the temporary file", tmp, e))?;
    // A stale temp file keeps its old mode through O_TRUNC; force 0600.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(|e| AtomicWriteError::new("restricting to 0600", tmp, e))?;
    file.write_all(bytes)
        .map_err(|e| AtomicWriteError::new("writing", tmp, e))?;
    if mode & 0o7777 != 0o600 {
        file.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))
            .map_err(|e| AtomicWriteError::new("setting the permissions of", tmp, e))?;
    }
    file.sync_all()
        .map_err(|e| AtomicWriteError::new("writing", tmp, e))?;
    drop(file);
    std::fs::rename(tmp, path)
        .map_err(|e| AtomicWriteError::new("renaming the new file over", path, e))?;
    if let Some(dir) = path.parent() {
        sync_dir(dir)?;
    }
    Ok(())
}

/// fsyncs a directory so a rename or a new entry in it is durable.
///
/// # Errors
/// The directory cannot be opened or synced.
pub fn sync_dir(dir: &Path) -> Result<(), AtomicWriteError> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| AtomicWriteError::new("syncing the directory", dir, e))
}
