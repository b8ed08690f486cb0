mod approvals;
mod corruption;
mod crash;
mod gateways;
mod holder;
mod memory;
mod memory_proposals;
mod migrations;
mod preferences;
mod routines;
mod secrets;
mod sessions;
mod storage_errors;
mod turns;
mod wal_limit;

use sayri_store::Store;
use tempfile::TempDir;

/// A fresh database file in a temporary directory (kept alive by the returned guard).
pub fn fresh() -> (TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("sessions.db")).unwrap();
    (dir, store)
}
