//! `permission_list`, `permission_answer`, `permission_forget` (spec §2.2).

use crate::daemon::commands::required_str;
use crate::daemon::dispatch::Ctx;
use sayri_protocol::ProtocolError;
use serde_json::{Value, json};

/// `permission_list` → `{"pending":[request…], "approvals":{action:[{action,resource,agent_id}…]}}`.
pub async fn permission_list(_: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let brain = ctx.daemon.brain()?;
    let approvals = brain
        .broker
        .approvals_by_action()
        .map_err(|e| ProtocolError::internal(e.to_string()))?;
    Ok(json!({"pending": brain.broker.pending(), "approvals": approvals}))
}

/// `permission_answer {request_id, allow=false, remember=false}` →
/// `{"delivered","request_id","allow"}`; `delivered:false` for an unknown or settled id.
pub async fn permission_answer(params: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let id = required_str(&params, "request_id")?;
    let allow = params
        .get("allow")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let remember = params
        .get("remember")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let delivered = ctx.daemon.brain()?.broker.answer(id, allow, remember);
    Ok(json!({"delivered": delivered, "request_id": id, "allow": allow}))
}

/// `permission_forget {action?, agent_id=""}` → `{"removed"}`.
pub async fn permission_forget(params: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let action = params
        .get("action")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let agent = params.get("agent_id").and_then(Value::as_str).unwrap_or("");
    let removed = ctx
        .daemon
        .brain()?
        .broker
        .forget(action, agent)
        .map_err(|e| ProtocolError::internal(e.to_string()))?;
    Ok(json!({"removed": removed}))
}
