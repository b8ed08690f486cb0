//! SQLite storage for Sayri: sessions, messages (with tool calls and token usage), learned
//! preferences, security authorizations (approvals), gateway instances, peers and chats, the
//! journal of running turns, calibrated token rates, routines with the scheduler's state, the
//! images attached to requests, and long-term memory (facts with a full-text index).
//!
//! One file (`$STATE/sessions.db`), opened by [`Store::open`]: WAL journal, `foreign_keys=ON`,
//! `secure_delete=ON`, versioned migrations (see [`migrations`]). With
//! [`Store::with_redactor`] every text written is redacted first, and
//! [`Store::rewrite_secrets`] rewrites rows stored before a value became a secret. [`Store`] implements the core's
//! [`SessionStore`](sayri_core::ports::SessionStore) and
//! [`ApprovalStore`](sayri_core::ports::ApprovalStore) ports. It is `Send + Sync`: one
//! connection behind a mutex, every write one transaction, so it can be shared through an
//! `Arc`. Every call blocks on SQLite and the disk: async code makes it off its worker threads
//! (the daemon through `sayri_daemon::offload`).

mod approvals;
mod failure;
mod gateway_replies;
mod gateways;
pub mod health;
mod lock_holders;
mod memory;
mod memory_book;
mod memory_proposals;
pub mod migrations;
mod peers;
mod preferences;
pub mod recover;
mod redaction;
mod routines;
mod sessions;
mod token_rates;
mod turns;
pub mod wal;

use rusqlite::Connection;
use sayri_core::ports::{NoSecrets, Redactor};
use sayri_core::sync::lock;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

pub use failure::FailureKind;
pub use gateway_replies::KEEP_SECONDS as KEEP_REPLY_SECONDS;
pub use gateways::{GatewayChat, InstanceSave};
pub use health::{DatabaseState, DatabaseStatus, Health};
pub use lock_holders::{LockHolder, LockKind, lock_holders};
pub use memory::MemoryError;
pub use peers::GatewayPeer;
pub use recover::{RecoverError, RecoveryReport, TableRecovery};
pub use redaction::RewriteReport;
pub use routines::{BrokenRoutine, TriggerState};
pub use sayri_core::ports::StoreError;
pub use wal::{Checkpoint, WAL_LIMIT_BYTES};

/// Errors from opening the database.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// SQLite could not open or configure the file (the message names the kind: disk full,
    /// read-only, locked, corrupt).
    #[error("{}", failure::describe(.path, .source))]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The file was written by a newer Sayri.
    #[error(
        "the session database {path} has schema version {found}, newer than this Sayri understands ({supported}) — upgrade Sayri, or move the file aside"
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// Version in the file.
        found: i64,
        /// Latest version this build knows.
        supported: i64,
    },
}

/// The SQLite store. Cheap to share: wrap it in an `Arc`.
pub struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
    /// Applied to every text written (see [`Store::with_redactor`]).
    redactor: Arc<dyn Redactor>,
    /// Whether the file may be used; a corrupt one is refused until `sayri db recover`.
    health: Mutex<Health>,
    /// The outcome of the last checkpoint (for `status` and `doctor`).
    last_checkpoint: Mutex<Option<Checkpoint>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens (creating if needed) the database at `path` and migrates it to the latest schema
    /// version. The parent directory must exist.
    ///
    /// Errors: [`OpenError::Sqlite`] when the file cannot be opened or migrated,
    /// [`OpenError::TooNew`] when its schema is newer than this build.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, OpenError> {
        let path = path.as_ref().to_path_buf();
        let conn = open_connection(&path)?;
        Ok(Store::with_connection(conn, path, Health::Ok))
    }

    /// As [`Store::open`], for the daemon: the file is also checked (`PRAGMA quick_check`),
    /// and a corrupt file does not stop the caller. It comes back as a store whose
    /// [`Store::health`] is [`Health::Corrupt`]: every call is refused with a message naming
    /// the file and `sayri db recover`, until [`Store::recover`] rebuilds it.
    ///
    /// Errors: as [`Store::open`] for everything but corruption (a file that is not writable,
    /// a directory that does not exist, a newer schema).
    pub fn open_checked(path: impl AsRef<Path>) -> Result<Store, OpenError> {
        let path = path.as_ref().to_path_buf();
        match open_connection(&path) {
            Ok(conn) => {
                let health = match health::quick_check(&conn) {
                    Ok(()) => Health::Ok,
                    Err(e) => Health::Corrupt {
                        detail: e.to_string(),
                    },
                };
                Ok(Store::with_connection(conn, path, health))
            }
            Err(OpenError::Sqlite { source, .. }) if failure::is_corruption(&source) => {
                // Nothing of the file is touched again until it is recovered; the placeholder
                // connection is never used (every call is refused first).
                let conn = Connection::open_in_memory().map_err(|e| OpenError::Sqlite {
                    path: path.clone(),
                    source: e,
                })?;
                let detail = source.to_string();
                Ok(Store::with_connection(
                    conn,
                    path,
                    Health::Corrupt { detail },
                ))
            }
            Err(e) => Err(e),
        }
    }

    fn with_connection(conn: Connection, path: PathBuf, health: Health) -> Store {
        Store {
            conn: Mutex::new(conn),
            path,
            redactor: Arc::new(NoSecrets),
            health: Mutex::new(health),
            last_checkpoint: Mutex::new(None),
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open file (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        let conn = self.lock()?;
        conn.pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(|e| self.fail(e))
    }

    /// The connection, unless the file is known to be corrupt (then the refusal, naming the
    /// file and the recovery command). A poisoned mutex only means another thread panicked
    /// mid-call; SQLite rolled back its transaction, so the connection is still consistent.
    fn lock(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        if let Health::Corrupt { detail } = self.health() {
            return Err(failure::corrupt_message(&self.path, &detail));
        }
        Ok(self.raw_lock())
    }

    /// The connection whatever the file's health (recovery and checkpoints).
    fn raw_lock(&self) -> MutexGuard<'_, Connection> {
        lock(&self.conn)
    }
}

/// Opens and configures one connection to `path`, and migrates the file.
fn open_connection(path: &Path) -> Result<Connection, OpenError> {
    let wrap = |source| OpenError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    let mut conn = Connection::open(path).map_err(wrap)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(wrap)?;
    // WAL: readers never block the writer, and a crash leaves every committed transaction.
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(wrap)?;
    // Whenever SQLite resets the log after a checkpoint, it cuts the file back to this size
    // (the log would otherwise keep the largest size it ever reached).
    conn.pragma_update(None, "journal_size_limit", WAL_LIMIT_BYTES as i64)
        .map_err(wrap)?;
    // NORMAL is durable against process crashes (kill -9) in WAL mode; a power loss may
    // lose the last commits but never corrupts the file.
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(wrap)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(wrap)?;
    // Deleted and replaced text is overwritten with zeros, so a rewritten secret does not
    // linger in free space of the file.
    conn.pragma_update(None, "secure_delete", "ON")
        .map_err(wrap)?;
    match migrations::migrate(&mut conn) {
        Ok(()) => Ok(conn),
        Err(migrations::MigrateError::TooNew { found, supported }) => Err(OpenError::TooNew {
            path: path.to_path_buf(),
            found,
            supported,
        }),
        Err(migrations::MigrateError::Sqlite(e)) => Err(wrap(e)),
    }
}

/// How long a connection waits for another process's lock before it gives up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Escapes `%`, `_` and `\` for a `LIKE … ESCAPE '\'` pattern.
pub(crate) fn like_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
