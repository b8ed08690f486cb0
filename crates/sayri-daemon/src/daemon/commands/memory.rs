//! `memory_add`, `memory_list`, `memory_get`, `memory_edit`, `memory_forget`, `memory_search`,
//! `memory_export`, `memory_import`, `memory_review`, `memory_accept`, `memory_reject`: the
//! person's long-term memory, in the session database (see `sayri_store`'s memory modules for
//! the rules every write follows).
//!
//! A fact holding a vault secret is refused by the store's own redactor (the vault's, kept
//! current by `vault_set`); the refusal never repeats the value. Nothing here reaches a model
//! (turns recall facts through the engine's memory port).

use crate::daemon::dispatch::Ctx;
use sayri_core::assistant::CoreError;
use sayri_core::domain::memory::{self, MemorySource};
use sayri_protocol::params::{
    MemoryAcceptParams, MemoryAddParams, MemoryEditParams, MemoryExportParams, MemoryForgetParams,
    MemoryGetParams, MemoryImportParams, MemoryListParams, MemoryRejectParams, MemoryReviewParams,
    MemorySearchParams,
};
use sayri_protocol::reply::memory::{
    MemoryAcceptReply, MemoryAddReply, MemoryConflict, MemoryEditReply, MemoryExportReply,
    MemoryForgetReply, MemoryGetReply, MemoryImportReply, MemoryListReply, MemoryRejectReply,
    MemoryReviewReply, MemorySearchReply,
};
use sayri_protocol::{ErrorCode, ProtocolError};
use sayri_store::MemoryError;

/// Unix seconds now.
fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The protocol error for a refused memory write.
fn memory_err(e: MemoryError) -> ProtocolError {
    let code = match &e {
        MemoryError::Fact(_) | MemoryError::BadLine { .. } => ErrorCode::InvalidParams,
        MemoryError::TooManyProposals(_) => ErrorCode::Busy,
        MemoryError::NotFound(_) | MemoryError::NoProposal(_) => ErrorCode::NotFound,
        MemoryError::Store(_) => ErrorCode::Internal,
    };
    ProtocolError::new(code, e.to_string())
}

fn store_err(e: sayri_core::ports::StoreError) -> ProtocolError {
    ProtocolError::internal(e.to_string())
}

/// `memory_add {text, agent?}` → the fact as stored (source `person`).
pub async fn memory_add(p: MemoryAddParams, ctx: Ctx) -> Result<MemoryAddReply, ProtocolError> {
    let brain = ctx.daemon.brain()?;
    let agent = p.agent.as_deref().map(str::trim).filter(|a| !a.is_empty());
    if let Some(agent) = agent
        && sayri_core::domain::profile::valid_agent_id(agent)
        && matches!(
            crate::offload::blocking(|| brain.core.resolve(agent)),
            Err(CoreError::UnknownAgent(_))
        )
    {
        return Err(ProtocolError::new(
            ErrorCode::InvalidParams,
            format!(
                "no agent is named {agent:?}: give one of `sayri agents list`, or no agent for a fact every agent may use; nothing was stored"
            ),
        ));
    }
    brain
        .db(|s| s.memory_add(&p.text, agent, MemorySource::Person, now()))
        .map_err(memory_err)
}

/// `memory_list {agent?}` → the facts, oldest first.
pub async fn memory_list(p: MemoryListParams, ctx: Ctx) -> Result<MemoryListReply, ProtocolError> {
    let agent = p.agent.as_deref().map(str::trim).filter(|a| !a.is_empty());
    ctx.daemon
        .brain()?
        .db(|s| s.memory_list(agent))
        .map_err(store_err)
}

/// `memory_get {id}` → the fact.
pub async fn memory_get(p: MemoryGetParams, ctx: Ctx) -> Result<MemoryGetReply, ProtocolError> {
    ctx.daemon
        .brain()?
        .db(|s| s.memory_get(p.id))
        .map_err(store_err)?
        .ok_or_else(|| memory_err(MemoryError::NotFound(p.id)))
}

/// `memory_edit {id, text}` → the fact with its new text.
pub async fn memory_edit(p: MemoryEditParams, ctx: Ctx) -> Result<MemoryEditReply, ProtocolError> {
    ctx.daemon
        .brain()?
        .db(|s| s.memory_edit(p.id, &p.text, now()))
        .map_err(memory_err)
}

/// `memory_forget {id}` → `{id, forgotten}`.
pub async fn memory_forget(
    p: MemoryForgetParams,
    ctx: Ctx,
) -> Result<MemoryForgetReply, ProtocolError> {
    let forgotten = ctx
        .daemon
        .brain()?
        .db(|s| s.memory_forget(p.id))
        .map_err(store_err)?;
    Ok(MemoryForgetReply {
        id: p.id,
        forgotten,
    })
}

/// `memory_search {query, limit?}` → the matching facts, best first.
pub async fn memory_search(
    p: MemorySearchParams,
    ctx: Ctx,
) -> Result<MemorySearchReply, ProtocolError> {
    let limit = p.limit();
    ctx.daemon
        .brain()?
        .db(|s| s.memory_search(&p.query, limit))
        .map_err(store_err)
}

/// `memory_export` → `{count, lines}`.
pub async fn memory_export(
    _: MemoryExportParams,
    ctx: Ctx,
) -> Result<MemoryExportReply, ProtocolError> {
    let (count, lines) = ctx
        .daemon
        .brain()?
        .db(|s| s.memory_export())
        .map_err(store_err)?;
    Ok(MemoryExportReply {
        count: count as u64,
        lines,
    })
}

/// `memory_import {lines}` → `{imported, skipped}`.
pub async fn memory_import(
    p: MemoryImportParams,
    ctx: Ctx,
) -> Result<MemoryImportReply, ProtocolError> {
    let (imported, skipped) = ctx
        .daemon
        .brain()?
        .db(|s| s.memory_import(&p.lines, now()))
        .map_err(memory_err)?;
    Ok(MemoryImportReply {
        imported: imported as u64,
        skipped: skipped as u64,
    })
}

/// `memory_review {}` → `{ttl_days, conflicts, stale, proposed}`: facts contradicting an older
/// one of the same agent (the person chooses which to keep), facts not recalled within
/// `memory.ttl_days` (listed, never deleted), and facts proposed where nobody could be asked.
pub async fn memory_review(
    _: MemoryReviewParams,
    ctx: Ctx,
) -> Result<MemoryReviewReply, ProtocolError> {
    let ttl_days = u32::try_from(ctx.daemon.config().memory.ttl_days).unwrap_or(90);
    let brain = ctx.daemon.brain()?;
    let facts = brain.db(|s| s.memory_list(None)).map_err(store_err)?;
    let proposed = brain.db(|s| s.memory_proposals()).map_err(store_err)?;
    let texts: Vec<(Option<&str>, &str)> = facts
        .iter()
        .map(|f| (f.agent.as_deref(), f.text.as_str()))
        .collect();
    let conflicts = memory::conflicting_pairs(&texts)
        .into_iter()
        .map(|(newer, older)| MemoryConflict {
            subject: memory::subject(&facts[newer].text).unwrap_or_default(),
            newer: facts[newer].clone(),
            older: facts[older].clone(),
        })
        .collect();
    let now = now();
    let stale = facts
        .iter()
        .filter(|f| memory::is_stale(f.created_at, f.last_recalled_at, now, ttl_days))
        .cloned()
        .collect();
    Ok(MemoryReviewReply {
        ttl_days,
        conflicts,
        stale,
        proposed,
    })
}

/// `memory_accept {id}` → the proposed fact, now in memory (source `model`).
pub async fn memory_accept(
    p: MemoryAcceptParams,
    ctx: Ctx,
) -> Result<MemoryAcceptReply, ProtocolError> {
    ctx.daemon
        .brain()?
        .db(|s| s.memory_accept(p.id, now()))
        .map_err(memory_err)
}

/// `memory_reject {id}` → `{id, rejected}`; memory is unchanged.
pub async fn memory_reject(
    p: MemoryRejectParams,
    ctx: Ctx,
) -> Result<MemoryRejectReply, ProtocolError> {
    let rejected = ctx
        .daemon
        .brain()?
        .db(|s| s.memory_reject(p.id))
        .map_err(store_err)?;
    Ok(MemoryRejectReply { id: p.id, rejected })
}
