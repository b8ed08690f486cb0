//! SQLite storage for Sayri: sessions, messages (with tool calls and token usage), learned
//! preferences, security authorizations (approvals), gateway instances, peers and chats, the
//! journal of running turns, calibrated token rates, routines with the scheduler's state, and
//! the images attached to requests.
//!
//! One file (`$STATE/sessions.db`), opened by [`Store::open`]: WAL journal, `foreign_keys=ON`,
//! `secure_delete=ON`, versioned migrations (see [`migrations`]). With
//! [`Store::with_redactor`] every text written is redacted first, and
//! [`Store::rewrite_secrets`] rewrites rows stored before a value became a secret. [`Store`] implements the core's
//! [`SessionStore`](sayri_core::ports::SessionStore) and
//! [`ApprovalStore`](sayri_core::ports::ApprovalStore) ports. It is `Send + Sync`: one
//! connection behind a mutex, every write one transaction, so it can be shared through an
//! `Arc` by async code (each call is a short local write; no call waits on anything else).

mod approvals;
mod gateways;
pub mod migrations;
mod peers;
mod preferences;
mod redaction;
mod routines;
mod sessions;
mod token_rates;
mod turns;

use rusqlite::Connection;
use sayri_core::ports::{NoSecrets, Redactor};
use sayri_core::sync::lock;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

pub use gateways::{GatewayChat, InstanceSave};
pub use peers::GatewayPeer;
pub use redaction::RewriteReport;
pub use routines::{BrokenRoutine, TriggerState};
pub use sayri_core::ports::StoreError;

/// Errors from opening the database.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// SQLite could not open or configure the file.
    #[error(
        "cannot open the session database {path}: {source} — check the file's permissions, or move it aside to start afresh"
    )]
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
        let wrap = |source| OpenError::Sqlite {
            path: path.clone(),
            source,
        };
        let mut conn = Connection::open(&path).map_err(wrap)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(wrap)?;
        // WAL: readers never block the writer, and a crash leaves every committed transaction.
        conn.pragma_update(None, "journal_mode", "WAL")
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
            Ok(()) => {}
            Err(migrations::MigrateError::TooNew { found, supported }) => {
                return Err(OpenError::TooNew {
                    path,
                    found,
                    supported,
                });
            }
            Err(migrations::MigrateError::Sqlite(e)) => return Err(wrap(e)),
        }
        Ok(Store {
            conn: Mutex::new(conn),
            path,
            redactor: Arc::new(NoSecrets),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open file (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        let conn = self.lock();
        conn.pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(sql_err)
    }

    /// The connection. A poisoned mutex only means another thread panicked mid-call; SQLite
    /// rolled back its transaction, so the connection is still consistent.
    fn lock(&self) -> MutexGuard<'_, Connection> {
        lock(&self.conn)
    }
}

/// Maps an SQLite error to the port's error, with a hint about what to do.
pub(crate) fn sql_err(e: rusqlite::Error) -> StoreError {
    StoreError(format!(
        "session database error: {e} — if it persists, check free disk space and the file's permissions"
    ))
}

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
