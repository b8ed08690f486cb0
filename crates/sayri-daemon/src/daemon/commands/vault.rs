//! `vault_list`, `vault_set`, `vault_delete`. No command returns a plaintext value.

use crate::brain::Brain;
use crate::daemon::dispatch::Ctx;
use crate::wire;
use sayri_protocol::params::{VaultDeleteParams, VaultListParams, VaultSetParams};
use sayri_protocol::reply::vault::{VaultDeleteReply, VaultListReply, VaultSetReply};
use sayri_protocol::{ErrorCode, ProtocolError};
use std::sync::Arc;

fn unavailable(ctx: &Ctx) -> ProtocolError {
    let why = ctx
        .daemon
        .brain()
        .ok()
        .and_then(|b| b.vault_error.clone())
        .unwrap_or_else(|| "unknown reason".into());
    ProtocolError::new(
        ErrorCode::Internal,
        format!("the vault is unavailable: {why} — see `sayri vault status`"),
    )
}

/// Rewrites the stored rows that hold a secret, on a blocking thread; the number of rows
/// changed (0 when nothing was rewritten; failures are logged).
pub(crate) async fn rewrite_stored(brain: &Arc<Brain>) -> usize {
    let b = brain.clone();
    tokio::task::spawn_blocking(move || b.rewrite_stored_secrets())
        .await
        .ok()
        .flatten()
        .map_or(0, |r| r.total())
}

/// `vault_list` → `[{key, masked, description, updated_at}]`. When the file changed on disk
/// (the `sayri vault` CLI), the redactor and the provider client are rebuilt from it too, and
/// stored rows holding a new secret are rewritten.
pub async fn vault_list(_: VaultListParams, ctx: Ctx) -> Result<VaultListReply, ProtocolError> {
    let brain = ctx.daemon.brain()?;
    let (list, reloaded) = {
        let mut guard = brain.vault();
        let vault = guard.as_mut().ok_or_else(|| unavailable(&ctx))?;
        let reloaded = matches!(vault.refresh(), Ok(true));
        (vault.list(), reloaded)
    };
    if reloaded {
        brain.secrets_changed(&ctx.daemon.config());
        rewrite_stored(brain).await;
    }
    Ok(list.iter().map(wire::secret).collect())
}

/// `vault_set {key, value, description}` → `{"key","saved":true,"rewritten"}`: `rewritten` is
/// the number of stored rows that held the value (or another secret) and were redacted now.
pub async fn vault_set(p: VaultSetParams, ctx: Ctx) -> Result<VaultSetReply, ProtocolError> {
    let brain = ctx.daemon.brain()?;
    let stored = {
        let mut guard = brain.vault();
        let vault = guard.as_mut().ok_or_else(|| unavailable(&ctx))?;
        vault
            .set(&p.key, &p.value, &p.description)
            .map_err(|e| ProtocolError::invalid_params(e.to_string()))?
    };
    brain.secrets_changed(&ctx.daemon.config());
    let rewritten = rewrite_stored(brain).await;
    Ok(VaultSetReply {
        key: stored,
        saved: true,
        rewritten: rewritten as u64,
    })
}

/// `vault_delete {key}` → `{"key","deleted"}`.
pub async fn vault_delete(
    p: VaultDeleteParams,
    ctx: Ctx,
) -> Result<VaultDeleteReply, ProtocolError> {
    let brain = ctx.daemon.brain()?;
    let deleted = {
        let mut guard = brain.vault();
        let vault = guard.as_mut().ok_or_else(|| unavailable(&ctx))?;
        vault
            .delete(&p.key)
            .map_err(|e| ProtocolError::internal(e.to_string()))?
    };
    brain.secrets_changed(&ctx.daemon.config());
    Ok(VaultDeleteReply {
        key: p.key,
        deleted,
    })
}
