//! `db_recover`: rebuilds a corrupt session database while the daemon runs (the store swaps
//! its connection to the rebuilt file; no restart).

use crate::daemon::dispatch::Ctx;
use sayri_protocol::params::DbRecoverParams;
use sayri_protocol::{ErrorCode, ProtocolError};
use serde_json::{Value, json};

/// `db_recover {force}` → `{database, damaged_copy, tables, summary}` (`damaged_copy` null
/// when the file passed its check and `force` was not given: nothing changed).
pub async fn db_recover(p: DbRecoverParams, ctx: Ctx) -> Result<Value, ProtocolError> {
    let brain = ctx.daemon.brain()?.clone();
    let store = brain.store.clone();
    let report = tokio::task::spawn_blocking(move || store.recover(p.force))
        .await
        .map_err(|e| ProtocolError::internal(e.to_string()))?
        .map_err(|e| ProtocolError::new(ErrorCode::Internal, e.to_string()))?;
    if report.damaged_copy.is_some() {
        tracing::warn!("{}", report.summary().trim_end());
    }
    Ok(json!({
        "database": report.database,
        "damaged_copy": report.damaged_copy,
        "tables": report.tables,
        "summary": report.summary(),
    }))
}
