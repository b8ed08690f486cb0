//! `db_recover`: rebuilds a corrupt session database while the daemon runs (the store swaps
//! its connection to the rebuilt file; no restart).

use crate::daemon::dispatch::Ctx;
use sayri_protocol::params::DbRecoverParams;
use sayri_protocol::reply::database::DbRecoverReply;
use sayri_protocol::{ErrorCode, ProtocolError};

/// `db_recover {force}` → `{database, damaged_copy, tables, summary}` (see
/// [`crate::database::recover`]).
pub async fn db_recover(p: DbRecoverParams, ctx: Ctx) -> Result<DbRecoverReply, ProtocolError> {
    let store = ctx.daemon.brain()?.store.clone();
    tokio::task::spawn_blocking(move || crate::database::recover(&store, p.force))
        .await
        .map_err(|e| ProtocolError::internal(e.to_string()))?
        .map_err(|e| ProtocolError::new(ErrorCode::Internal, e.to_string()))
}
