//! Rows stored before a value became a secret are rewritten redacted — by the daemon when its
//! vault changes (`vault_set`, `config_set provider.api_key`, a change by the CLI it notices)
//! and at start when the vault holds a value set since the last rewrite, and by `sayri vault
//! set` itself.
//!
//! After a rewrite the database records, per secret name, the vault's `updated_at` of the value
//! it was rewritten for (`sayri_store` stamps); a start compares them with the vault to tell
//! whether a rewrite is due. The redactor and the stamps are taken under the vault's lock, so
//! they describe the same secrets.

use sayri_core::ports::Redactor;
use sayri_core::sync::lock;
use sayri_store::{RewriteReport, Store, StoreError};
use sayri_vault::{SharedRedactor, Vault};
use std::sync::{Arc, Mutex};

/// `(name, updated_at)` of every secret in `vault`.
pub fn stamps(vault: &Vault) -> Vec<(String, u64)> {
    vault
        .list()
        .into_iter()
        .map(|i| (i.key, i.updated_at))
        .collect()
}

/// Whether a secret of `vault` was set after the stored rows were last rewritten for it.
///
/// # Errors
/// The store's error.
pub fn outdated(store: &Store, vault: &Vault) -> Result<bool, StoreError> {
    let done = store.redaction_stamps()?;
    Ok(stamps(vault)
        .iter()
        .any(|(k, v)| done.get(k).is_none_or(|d| d < v)))
}

/// Rewrites every stored row `redactor` changes and records `stamps` (the secrets it knows).
///
/// # Errors
/// The store's error (rows rewritten before it stay rewritten).
pub fn rewrite(
    store: &Store,
    redactor: &dyn Redactor,
    stamps: &[(String, u64)],
) -> Result<RewriteReport, StoreError> {
    let report = store.rewrite_secrets(redactor)?;
    store.set_redaction_stamps(stamps, now())?;
    Ok(report)
}

/// The daemon's rewrite: the current redactor and the vault's stamps, taken together under the
/// vault's lock; then the rewrite, logged. Blocking — run it off the async threads. `None` when
/// the vault is unavailable, when `only_if_outdated` and nothing is due, or on a store error
/// (logged).
pub fn rewrite_daemon(
    store: &Store,
    vault: &Mutex<Option<Vault>>,
    redactor: &SharedRedactor,
    only_if_outdated: bool,
) -> Option<RewriteReport> {
    let (current, stamps) = {
        let guard = lock(vault);
        let v = guard.as_ref()?;
        if only_if_outdated && !outdated(store, v).unwrap_or(true) {
            return None;
        }
        (redactor.current(), stamps(v))
    };
    match rewrite(store, &current, &stamps) {
        Ok(r) => {
            log(&r);
            Some(r)
        }
        Err(e) => {
            crate::store_health::log_store_error(
                store,
                "stored rows holding a secret were not all rewritten",
                &e,
            );
            None
        }
    }
}

/// [`rewrite_daemon`] on a blocking thread of the current Tokio runtime, not awaited (none
/// when there is no runtime).
pub fn spawn_rewrite(
    store: Arc<Store>,
    vault: Arc<Mutex<Option<Vault>>>,
    redactor: SharedRedactor,
    only_if_outdated: bool,
) {
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn_blocking(move || {
            rewrite_daemon(&store, &vault, &redactor, only_if_outdated);
        });
    }
}

fn log(r: &RewriteReport) {
    if r.total() > 0 {
        tracing::info!(
            messages = r.messages,
            sessions = r.sessions,
            preferences = r.preferences,
            approvals = r.approvals,
            peers = r.peers,
            "rewrote stored rows that held a secret"
        );
    }
    if !r.wal_cleared {
        tracing::warn!(
            "the database's write-ahead log could not be emptied after the rewrite (another process is reading it); old copies stay in sessions.db-wal until a later checkpoint"
        );
    }
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
