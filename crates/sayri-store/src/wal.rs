//! Keeping the write-ahead log small.
//!
//! SQLite appends every commit to `sessions.db-wal` and copies it back into the file at a
//! checkpoint. A checkpoint cannot pass a reader that still reads an older snapshot (a backup,
//! a `sqlite3` shell with an open transaction), so the log grows while one is held; and once
//! grown, the file keeps its size unless it is truncated. The rules:
//!
//! 1. `journal_size_limit` is [`WAL_LIMIT_BYTES`] on every connection: whenever SQLite resets
//!    the log it cuts the file back to that size.
//! 2. [`Store::checkpoint`] runs after every turn and whenever the daemon's maintenance finds a
//!    non-empty log: a `PASSIVE` checkpoint (it never waits for anyone) copies what it can;
//!    when that reached the end of the log, a `TRUNCATE` checkpoint that does not wait either
//!    (busy timeout 0) empties the file. A reader in the way is reported as holding it back,
//!    and the next run tries again.
//! 3. Sayri itself never keeps a read transaction open: every call is one short transaction.

use crate::Store;
use crate::health::file_size;
use rusqlite::Connection;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The size the log file is brought back to (and the most it keeps once no reader holds it):
/// 4 MiB, about SQLite's automatic checkpoint interval (1000 pages of 4 KiB).
pub const WAL_LIMIT_BYTES: u64 = 4 << 20;

/// What one checkpoint did: the protocol's type, so `status` shows it as the store made it.
pub use sayri_protocol::reply::database::Checkpoint;

/// `PRAGMA wal_checkpoint(MODE)`: `(busy, frames in the log, frames checkpointed)`.
fn wal_checkpoint(conn: &Connection, mode: &str) -> rusqlite::Result<(i64, i64, i64)> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })
}

/// A `TRUNCATE` checkpoint that gives up at once when a reader or writer is in the way.
fn truncate_now(conn: &Connection) -> rusqlite::Result<bool> {
    conn.busy_timeout(Duration::ZERO)?;
    let result = wal_checkpoint(conn, "TRUNCATE");
    conn.busy_timeout(crate::BUSY_TIMEOUT)?;
    match result {
        Ok((busy, _, _)) => Ok(busy == 0),
        Err(e) if crate::failure::kind_of(&e) == crate::FailureKind::Locked => Ok(false),
        Err(e) => Err(e),
    }
}

impl Store {
    /// Size of the log file, bytes (0 when there is none).
    pub fn wal_bytes(&self) -> u64 {
        file_size(&self.path, "-wal")
    }

    /// Copies the log back into the file and empties it when nobody is in the way (see the
    /// module rules). Never waits for another process.
    ///
    /// # Errors
    /// The file is corrupt, or SQLite failed (named, with the kind).
    pub fn checkpoint(&self) -> Result<Checkpoint, sayri_core::ports::StoreError> {
        let conn = self.lock()?;
        let (busy, log, done) = wal_checkpoint(&conn, "PASSIVE").map_err(|e| self.fail(e))?;
        let complete = busy == 0 && done >= log;
        let truncated = complete && truncate_now(&conn).map_err(|e| self.fail(e))?;
        drop(conn);
        let c = Checkpoint {
            at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            wal_frames: log.max(0),
            checkpointed_frames: done.max(0),
            truncated,
            held_back: !truncated,
            wal_bytes_after: self.wal_bytes(),
        };
        *self
            .last_checkpoint
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(c.clone());
        Ok(c)
    }

    /// [`Store::checkpoint`] when the log holds anything; `None` when there was nothing to do,
    /// the file is corrupt, or the checkpoint failed (the next run tries again).
    pub fn maintain(&self) -> Option<Checkpoint> {
        if self.wal_bytes() == 0 || self.corruption().is_some() {
            return None;
        }
        self.checkpoint().ok()
    }

    /// The last checkpoint since the store was opened.
    pub fn last_checkpoint(&self) -> Option<Checkpoint> {
        self.last_checkpoint
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
