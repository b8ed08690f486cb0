//! `permission_list`, `permission_answer`, `permission_forget`.

use crate::daemon::dispatch::Ctx;
use crate::wire;
use sayri_protocol::ProtocolError;
use sayri_protocol::params::{
    PermissionAnswerParams, PermissionForgetParams, PermissionListParams,
};
use sayri_protocol::reply::permissions::{
    PermissionAnswerReply, PermissionForgetReply, PermissionListReply,
};

/// `permission_list` → `{"pending":[request…], "approvals":{action:[{action,resource,agent_id}…]}}`.
pub async fn permission_list(
    _: PermissionListParams,
    ctx: Ctx,
) -> Result<PermissionListReply, ProtocolError> {
    let brain = ctx.daemon.brain()?;
    let approvals = brain
        .broker
        .approvals_by_action()
        .map_err(|e| ProtocolError::internal(e.to_string()))?;
    Ok(PermissionListReply {
        pending: brain.broker.pending().iter().map(wire::request).collect(),
        approvals: approvals
            .into_iter()
            .map(|(action, list)| (action, list.iter().map(wire::approval).collect()))
            .collect(),
    })
}

/// `permission_answer {request_id, allow=false, remember=false}` →
/// `{"delivered","request_id","allow"}`; `delivered:false` for an unknown or settled id.
pub async fn permission_answer(
    p: PermissionAnswerParams,
    ctx: Ctx,
) -> Result<PermissionAnswerReply, ProtocolError> {
    let delivered = ctx
        .daemon
        .brain()?
        .broker
        .answer(&p.request_id, p.allow, p.remember);
    Ok(PermissionAnswerReply {
        delivered,
        request_id: p.request_id,
        allow: p.allow,
    })
}

/// `permission_forget {action?, agent_id=""}` → `{"removed"}`.
pub async fn permission_forget(
    p: PermissionForgetParams,
    ctx: Ctx,
) -> Result<PermissionForgetReply, ProtocolError> {
    let removed = ctx
        .daemon
        .brain()?
        .broker
        .forget(p.action(), &p.agent_id)
        .map_err(|e| ProtocolError::internal(e.to_string()))?;
    Ok(PermissionForgetReply {
        removed: removed as u64,
    })
}
