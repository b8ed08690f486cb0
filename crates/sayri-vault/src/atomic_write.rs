//! Atomic replacement of a file: temp file (0600) + fsync + rename + fsync of the directory.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::VaultError;

/// The temp file used while replacing `path`: `.<name>.tmp` in the same directory (same filesystem,
/// so the rename is atomic). Callers serialise writers with the vault lock.
pub(crate) fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

/// Replaces `path` with `bytes` so that a reader (or a crash at any point) sees either the old file
/// or the new one, never a mix. The file is created 0600. On error the temp file is removed and the
/// old file is untouched.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), VaultError> {
    let tmp = temp_path(path);
    let result = write_then_rename(&tmp, path, bytes);
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn write_then_rename(tmp: &Path, path: &Path, bytes: &[u8]) -> Result<(), VaultError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(tmp)
        .map_err(|e| VaultError::io("creating the temporary file", tmp, e))?;
    // A stale temp file keeps its old mode through O_TRUNC; force 0600.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(|e| VaultError::io("restricting to 0600", tmp, e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| VaultError::io("writing", tmp, e))?;
    drop(file);
    std::fs::rename(tmp, path)
        .map_err(|e| VaultError::io("renaming the new vault over", path, e))?;
    if let Some(dir) = path.parent() {
        sync_dir(dir)?;
    }
    Ok(())
}

/// fsyncs a directory so a rename or a new entry in it is durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), VaultError> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| VaultError::io("syncing the directory", dir, e))
}
