//! Whether the database file may be used, and what `status` and `sayri doctor` show about it.
//!
//! * The daemon opens the file with [`Store::open_checked`](crate::Store::open_checked), which
//!   runs `PRAGMA quick_check`. A file that fails it, or any later call that meets
//!   `SQLITE_CORRUPT`/`SQLITE_NOTADB`, makes the store [`Health::Corrupt`]: every call is then
//!   refused with one message naming the file and `sayri db recover`, so nothing pretends to be
//!   stored and nothing writes into a damaged file.
//! * [`Store::status`] gathers the facts a person needs: sizes of the file and of its WAL, the
//!   WAL limit, free space, other processes holding a snapshot or the write lock, and the last
//!   checkpoint.

use crate::Store;
use crate::failure::{corrupt_message, free_bytes};
use crate::lock_holders::{LockKind, lock_holders};
use crate::wal::WAL_LIMIT_BYTES;
use rusqlite::Connection;
use std::path::Path;
use std::sync::MutexGuard;

/// Whether the file may be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// It opened and passed its check.
    Ok,
    /// It is damaged; `detail` is what SQLite reported.
    Corrupt {
        /// SQLite's words (the first problems `quick_check` found, or the error).
        detail: String,
    },
}

/// The database as `status` (`database`) and `sayri doctor` show it, and whether it may be
/// used: the protocol's types, so the daemon sends what the store made.
pub use sayri_protocol::reply::database::{DatabaseState, DatabaseStatus};

/// Why a database file failed `PRAGMA quick_check`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CheckFailed {
    /// The first problems found, on one line (`quick_check: …`).
    #[error("{0}")]
    Problems(String),
    /// The error that stopped the check.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// `PRAGMA quick_check`: `Err` with the first problems found (or the error that stopped it).
pub(crate) fn quick_check(conn: &Connection) -> Result<(), CheckFailed> {
    let rows: Vec<String> = conn
        .prepare("PRAGMA quick_check(5)")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())?;
    if rows.len() == 1 && rows[0] == "ok" {
        Ok(())
    } else {
        Err(CheckFailed::Problems(one_line(&format!(
            "quick_check: {}",
            rows.join("; ")
        ))))
    }
}

/// `text` on one line, at most 240 characters (SQLite's reports list one problem per line).
fn one_line(text: &str) -> String {
    let flat = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("***"))
        .collect::<Vec<_>>()
        .join("; ");
    match flat.char_indices().nth(240) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

/// Size of `path` with `suffix` appended (`-wal`, `-shm`), 0 when absent.
pub(crate) fn file_size(path: &Path, suffix: &str) -> u64 {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    std::fs::metadata(p).map_or(0, |m| m.len())
}

impl Store {
    /// Whether the file may be used.
    pub fn health(&self) -> Health {
        self.health_lock().clone()
    }

    pub(crate) fn health_lock(&self) -> MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The refusal every call gets while the file is corrupt (`None` while it is fine).
    pub fn corruption(&self) -> Option<String> {
        match self.health() {
            Health::Ok => None,
            Health::Corrupt { detail } => Some(corrupt_message(&self.path, &detail).0),
        }
    }

    /// Sizes, free space, other processes holding the file, the last checkpoint.
    pub fn status(&self) -> DatabaseStatus {
        let me = std::process::id();
        let holders = lock_holders(&self.path);
        let others = |kind| {
            let mut v: Vec<u32> = holders
                .iter()
                .filter(|h| h.kind == kind && h.pid != me)
                .map(|h| h.pid)
                .collect();
            v.dedup();
            v
        };
        let corrupt = self.corruption();
        DatabaseStatus {
            path: self.path.clone(),
            state: if corrupt.is_some() {
                DatabaseState::Corrupt
            } else {
                DatabaseState::Ok
            },
            fix: corrupt.as_ref().map(|_| "sayri db recover".to_string()),
            error: corrupt,
            size_bytes: file_size(&self.path, ""),
            wal_bytes: file_size(&self.path, "-wal"),
            wal_limit_bytes: WAL_LIMIT_BYTES,
            free_bytes: self.path.parent().and_then(free_bytes),
            readers: others(LockKind::Reader),
            writers: others(LockKind::Writer),
            last_checkpoint: self.last_checkpoint(),
        }
    }
}
