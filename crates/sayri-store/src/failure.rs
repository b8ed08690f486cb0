//! What an SQLite error means for the person: every error leaving the store names the file and
//! one of a few kinds, with the next step.
//!
//! | kind | SQLite codes | message says |
//! |---|---|---|
//! | disk full | `SQLITE_FULL` | the directory, the free space left there, to free some |
//! | read-only | `SQLITE_READONLY`, `SQLITE_CANTOPEN`, `SQLITE_PERM` | the file or directory is not writable |
//! | locked | `SQLITE_BUSY`, `SQLITE_LOCKED` | another process holds it (its pid where `/proc/locks` names one), after the busy timeout |
//! | corrupt | `SQLITE_CORRUPT`, `SQLITE_NOTADB` | `sayri db recover`; the store refuses every further call until then |
//! | other | anything else | SQLite's own words, to check disk space and permissions |

use crate::lock_holders::{LockKind, lock_holders};
use crate::{BUSY_TIMEOUT, Health, Store};
use rusqlite::ErrorCode;
use sayri_core::ports::StoreError;
use std::path::Path;

/// The kind of a storage failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The file system holding the database has no room left.
    DiskFull,
    /// The file, its directory or the file system cannot be written.
    ReadOnly,
    /// Another process holds a lock longer than the busy timeout.
    Locked,
    /// The file is damaged.
    Corrupt,
    /// Anything else (SQLite's own message is kept).
    Other,
}

/// The kind of `e` on the database at `path`: a file that cannot be opened in a directory that
/// cannot be written counts as read-only.
pub fn kind_at(path: &Path, e: &rusqlite::Error) -> FailureKind {
    match e.sqlite_error_code() {
        Some(ErrorCode::CannotOpen) if dir_read_only(path.parent().unwrap_or(Path::new("."))) => {
            FailureKind::ReadOnly
        }
        _ => kind_of(e),
    }
}

/// Whether `dir` is on a read-only file system or cannot be written by us.
fn dir_read_only(dir: &Path) -> bool {
    let ro_mount = nix::sys::statvfs::statvfs(dir)
        .is_ok_and(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY));
    ro_mount || nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_err()
}

/// The kind of `e`.
pub fn kind_of(e: &rusqlite::Error) -> FailureKind {
    match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => FailureKind::DiskFull,
        Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => FailureKind::ReadOnly,
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => FailureKind::Locked,
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => FailureKind::Corrupt,
        _ => FailureKind::Other,
    }
}

/// Whether `e` says the file is damaged.
pub(crate) fn is_corruption(e: &rusqlite::Error) -> bool {
    kind_of(e) == FailureKind::Corrupt
}

/// The refusal given for every call while the file is corrupt.
pub(crate) fn corrupt_message(path: &Path, detail: &str) -> StoreError {
    StoreError(format!(
        "the session database {} is corrupt ({detail}); nothing more is read from or written to it — run `sayri db recover` to keep the damaged file aside as {}.corrupt-<time> and rebuild what can be read into a new one",
        path.display(),
        path.file_name()
            .map_or_else(|| "sessions.db".into(), |n| n.to_string_lossy())
    ))
}

/// Free space on the file system holding `dir`, in bytes.
pub(crate) fn free_bytes(dir: &Path) -> Option<u64> {
    let s = nix::sys::statvfs::statvfs(dir).ok()?;
    Some(s.blocks_available().saturating_mul(s.fragment_size()))
}

/// `bytes` for a person: `812 KiB`, `3.4 MiB`, `1.2 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b < KIB * KIB {
        format!("{:.0} KiB", b / KIB)
    } else if b < KIB * KIB * KIB {
        format!("{:.1} MiB", b / KIB / KIB)
    } else {
        format!("{:.1} GiB", b / KIB / KIB / KIB)
    }
}

/// Who else holds the database, as ` (process 123, 456)`, or nothing when `/proc/locks` names
/// nobody but this process.
fn holders_text(path: &Path) -> String {
    let me = std::process::id();
    let mut pids: Vec<u32> = lock_holders(path)
        .into_iter()
        .filter(|h| h.pid != me && h.kind != LockKind::Open)
        .map(|h| h.pid)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    if pids.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = pids.iter().map(u32::to_string).collect();
        format!(" (process {})", list.join(", "))
    }
}

/// The message for `e` on the database at `path` (see the module table).
pub fn describe(path: &Path, e: &rusqlite::Error) -> StoreError {
    let file = path.display();
    let dir = path.parent().unwrap_or(Path::new("."));
    StoreError(match kind_at(path, e) {
        FailureKind::DiskFull => format!(
            "cannot write the session database {file}: the disk holding {} is full ({} free) — free some space there; what was already stored is intact and Sayri saves again once there is room",
            dir.display(),
            free_bytes(dir).map_or_else(|| "no".into(), human_bytes)
        ),
        FailureKind::ReadOnly => format!(
            "cannot write the session database {file}: it is read-only ({e}) — check that the file and {} are writable by you and that the disk is not mounted read-only (the WAL journal needs to create files beside it)",
            dir.display()
        ),
        FailureKind::Locked => format!(
            "the session database {file} is locked by another process{} and stayed locked for {} s — close the other program that has it open (a `sqlite3` shell, a backup tool, another Sayri), then try again",
            holders_text(path),
            BUSY_TIMEOUT.as_secs()
        ),
        FailureKind::Corrupt => return corrupt_message(path, &e.to_string()),
        FailureKind::Other => format!(
            "session database {file}: {e} — check the free disk space and the file's permissions"
        ),
    })
}

impl Store {
    /// The port's error for `e`, naming this store's file and the kind of failure. A sign of
    /// corruption also marks the store corrupt: from then on every call is refused.
    pub(crate) fn fail(&self, e: rusqlite::Error) -> StoreError {
        if is_corruption(&e) {
            let mut health = self.health_lock();
            if *health == Health::Ok {
                *health = Health::Corrupt {
                    detail: e.to_string(),
                };
            }
        }
        describe(&self.path, &e)
    }
}
