//! The session database's recovery, as the daemon's `db_recover` and `sayri db recover` without
//! a daemon both do it: one call, one reply object.

use sayri_protocol::reply::database::DbRecoverReply;
use sayri_store::{RecoverError, Store};

/// Rebuilds `store` when it is corrupt (or always with `force`; see [`Store::recover`]) and
/// gives the reply `{database, damaged_copy, tables, summary}`; `damaged_copy` is null when the
/// file passed its check and nothing changed. A rebuild is also logged as a warning.
///
/// Blocking: it reads the whole file.
///
/// # Errors
/// Why the file could not be set aside or rebuilt (the original is then left where it was).
pub fn recover(store: &Store, force: bool) -> Result<DbRecoverReply, RecoverError> {
    let report = store.recover(force)?;
    if report.damaged_copy.is_some() {
        tracing::warn!("{}", report.summary().trim_end());
    }
    Ok(crate::wire::recovery(&report))
}
