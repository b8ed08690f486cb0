//! The session database as `status` shows it (`database`), and the reply of `db_recover`.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Whether the session database may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DatabaseState {
    /// In use.
    #[default]
    Ok,
    /// Refused until `sayri db recover`.
    Corrupt,
}

/// `status.database`: the file, its write-ahead log and who else holds it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DatabaseStatus {
    /// The file.
    pub path: PathBuf,
    /// In use, or refused as corrupt.
    pub state: DatabaseState,
    /// While corrupt: the message every turn gets (it names the file and the command).
    pub error: Option<String>,
    /// While corrupt: the command that recovers it.
    pub fix: Option<String>,
    /// Size of the file, bytes.
    pub size_bytes: u64,
    /// Size of its write-ahead log, bytes.
    pub wal_bytes: u64,
    /// The size the log is brought back to once no reader holds it.
    pub wal_limit_bytes: u64,
    /// Free space on its file system, bytes.
    pub free_bytes: Option<u64>,
    /// Pids of other processes reading a snapshot: a checkpoint cannot pass them.
    pub readers: Vec<u32>,
    /// Pids of other processes holding the write lock.
    pub writers: Vec<u32>,
    /// The last checkpoint since the daemon started.
    pub last_checkpoint: Option<Checkpoint>,
}

/// What one checkpoint of the write-ahead log did.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Checkpoint {
    /// When it ran, Unix seconds.
    pub at: f64,
    /// Frames in the log before it.
    pub wal_frames: i64,
    /// Frames copied back into the file.
    pub checkpointed_frames: i64,
    /// The log file was emptied.
    pub truncated: bool,
    /// Another process's read transaction kept part of the log (or its truncation) back.
    pub held_back: bool,
    /// Size of the log file afterwards, bytes.
    pub wal_bytes_after: u64,
}

/// `db_recover` → `{database, damaged_copy, tables, summary}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DbRecoverReply {
    /// The rebuilt database (the original path).
    pub database: PathBuf,
    /// Where the damaged file was kept; `null` when it passed its check and nothing changed.
    pub damaged_copy: Option<PathBuf>,
    /// Per table of the current schema.
    pub tables: Vec<TableRecovery>,
    /// What was kept and what was lost, in words.
    pub summary: String,
}

/// What the rebuild did with one table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableRecovery {
    /// The table.
    pub table: String,
    /// Rows copied into the new file.
    pub rows_kept: u64,
    /// Rowid ranges (inclusive) that could not be read; the rows there are lost.
    pub unreadable_rowids: Vec<(i64, i64)>,
    /// Rows dropped because what they belonged to was lost (or that repeated a unique key).
    pub rows_dropped: u64,
    /// Why the table could not be read at all.
    pub error: Option<String>,
}
