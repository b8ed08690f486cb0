//! The assistant's commands: `talk`, `ask`, `interrupt`, `new_conversation`, `switch_session`,
//! `sessions_list`, `session_get`, `session_rename`, `session_delete`, `agents_list`,
//! `agent_switch` (spec §2.2). Events of the turn reach every client through the broadcaster.

use crate::daemon::commands::required_str;
use crate::daemon::dispatch::Ctx;
use sayri_core::assistant::CoreError;
use sayri_core::domain::profile::AgentProfile;
use sayri_protocol::{ErrorCode, ProtocolError};
use serde_json::{Value, json};
use std::time::Duration;

/// Maps a core error to a protocol error with a fitting code.
pub fn core_err(e: CoreError) -> ProtocolError {
    let code = match &e {
        CoreError::Busy => ErrorCode::Busy,
        CoreError::EmptyText => ErrorCode::InvalidParams,
        CoreError::UnknownAgent(_) | CoreError::UnknownSession(_) => ErrorCode::NotFound,
        CoreError::BadAgent(_) => ErrorCode::InvalidParams,
        CoreError::Store(_) | CoreError::Lost => ErrorCode::Internal,
    };
    ProtocolError::new(code, e.to_string())
}

fn text_param(params: &Value) -> Result<&str, ProtocolError> {
    params
        .get("text")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| ProtocolError::invalid_params("missing 'text'"))
}

/// Switches agent first when `agent_id`/`target_agent_id` is given.
fn maybe_switch_agent(params: &Value, ctx: &Ctx) -> Result<(), ProtocolError> {
    let agent = params
        .get("agent_id")
        .or_else(|| params.get("target_agent_id"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    if let Some(id) = agent {
        let brain = ctx.daemon.brain()?;
        if brain.core.active_agent().id != id {
            if brain.core.status().busy {
                return Err(core_err(CoreError::Busy));
            }
            brain.core.agent_switch(id).map_err(core_err)?;
        }
    }
    Ok(())
}

/// Switches session first when `session_id` is given, or starts a new one with `new: true`.
/// While a turn runs this is refused (switching would cut the running turn short).
fn maybe_switch_session(params: &Value, ctx: &Ctx) -> Result<(), ProtocolError> {
    let brain = ctx.daemon.brain()?;
    let wants_switch = params.get("new").and_then(Value::as_bool) == Some(true)
        || params
            .get("session_id")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty() && s != brain.core.status().session_id);
    if wants_switch && brain.core.status().busy {
        return Err(core_err(CoreError::Busy));
    }
    if params.get("new").and_then(Value::as_bool) == Some(true) {
        brain.core.new_conversation();
    } else if let Some(id) = params
        .get("session_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        brain.core.switch_session(id).map_err(core_err)?;
    }
    Ok(())
}

/// `talk {text}` → `{"sent":true,"text","session_id"}`; the turn runs in the background.
pub async fn talk(params: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let text = text_param(&params)?.to_string();
    maybe_switch_agent(&params, &ctx)?;
    maybe_switch_session(&params, &ctx)?;
    let session_id = ctx.daemon.brain()?.core.talk(&text).map_err(core_err)?;
    Ok(json!({"sent": true, "text": text, "session_id": session_id}))
}

/// `ask {text, timeout=120, agent_id?, session_id?, new?}` → `{"text","error","session_id"}`
/// when the turn ends. On timeout the turn is interrupted and `error` says so. If the asking
/// client disconnects the turn keeps running (other clients may be watching).
pub async fn ask(params: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let text = text_param(&params)?.to_string();
    let timeout = params
        .get("timeout")
        .and_then(Value::as_f64)
        .filter(|t| t.is_finite() && *t > 0.0)
        .unwrap_or(120.0);
    maybe_switch_agent(&params, &ctx)?;
    maybe_switch_session(&params, &ctx)?;
    let brain = ctx.daemon.brain()?.clone();
    let turn = tokio::spawn(async move { brain.core.ask(&text).await });
    let brain = ctx.daemon.brain()?.clone();
    match tokio::time::timeout(Duration::from_secs_f64(timeout.min(86_400.0)), turn).await {
        Ok(Ok(Ok(result))) => {
            serde_json::to_value(result).map_err(|e| ProtocolError::internal(e.to_string()))
        }
        Ok(Ok(Err(e))) => Err(core_err(e)),
        Ok(Err(e)) => Err(ProtocolError::internal(format!("the request failed: {e}"))),
        Err(_) => {
            brain.core.interrupt();
            Ok(json!({
                "text": "",
                "error": format!("no answer within {timeout} s — the request was interrupted"),
                "session_id": brain.core.status().session_id,
            }))
        }
    }
}

/// `interrupt` → `{"interrupted": bool}` (true when a turn was running).
pub async fn interrupt(_: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let brain = ctx.daemon.brain()?;
    let session = brain.core.status().session_id;
    brain.broker.cancel_session(&session);
    Ok(json!({"interrupted": brain.core.interrupt()}))
}

/// `new_conversation` → `{"session_id"}`.
pub async fn new_conversation(_: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    Ok(json!({"session_id": ctx.daemon.brain()?.core.new_conversation()}))
}

/// `switch_session {session_id}` → `{"session_id"}`; unknown ids are an error (not ignored).
pub async fn switch_session(params: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let id = required_str(&params, "session_id")?;
    let active = ctx
        .daemon
        .brain()?
        .core
        .switch_session(id)
        .map_err(core_err)?;
    Ok(json!({"session_id": active}))
}

/// `sessions_list {limit=20}` → `[{id,title,agent_id,messages,updated_at}]`, newest first.
pub async fn sessions_list(params: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let limit = params
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(20, |n| n.clamp(1, 10_000) as usize);
    let list = ctx
        .daemon
        .brain()?
        .core
        .sessions_list(limit)
        .map_err(core_err)?;
    serde_json::to_value(list).map_err(|e| ProtocolError::internal(e.to_string()))
}

/// `session_get {session_id}` → the session with its messages (tool steps included).
pub async fn session_get(params: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let id = required_str(&params, "session_id")?;
    let d = ctx.daemon.brain()?.core.session_get(id).map_err(core_err)?;
    let mut v =
        serde_json::to_value(&d.info).map_err(|e| ProtocolError::internal(e.to_string()))?;
    if let Value::Object(m) = &mut v {
        m.insert(
            "messages".into(),
            serde_json::to_value(&d.messages)
                .map_err(|e| ProtocolError::internal(e.to_string()))?,
        );
    }
    Ok(v)
}

/// `session_rename {session_id, title}` → `{"session_id","title"}`.
pub async fn session_rename(params: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let id = required_str(&params, "session_id")?;
    let title = required_str(&params, "title")?;
    ctx.daemon
        .brain()?
        .core
        .session_rename(id, title)
        .map_err(core_err)?;
    Ok(json!({"session_id": id, "title": title}))
}

/// `session_delete {session_id}` → `{"session_id","deleted"}`.
pub async fn session_delete(params: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let id = required_str(&params, "session_id")?;
    let deleted = ctx
        .daemon
        .brain()?
        .core
        .session_delete(id)
        .map_err(core_err)?;
    Ok(json!({"session_id": id, "deleted": deleted}))
}

/// The public view of a profile (permission rules deliberately omitted, spec §2.2).
pub fn agent_json(a: &AgentProfile) -> Value {
    json!({
        "id": a.id, "name": a.name, "description": a.description,
        "system_prompt": a.system_prompt, "is_builtin": a.id == "default",
        "model": {"provider": a.model.provider, "model_name": a.model.model_name, "temperature": a.model.temperature},
        "sandbox": {
            "level": a.sandbox.level, "timeout_seconds": a.sandbox.timeout_seconds,
            "allow_network": a.sandbox.allow_network, "ask_before_run": a.sandbox.ask_before_run,
        },
        "allowed_skills": a.allowed_skills, "allowed_tools": a.allowed_tools,
        "custom_instructions": a.custom_instructions,
        "investigation_loop": a.investigation_loop,
        "reinforcement_learning": a.reinforcement_learning,
    })
}

/// `agents_list` → `[agent]` (`default` first); invalid profile files are reported in the log.
pub async fn agents_list(_: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let (agents, problems) = ctx.daemon.brain()?.agents.list();
    for p in problems {
        tracing::warn!("agent profile skipped: {p}");
    }
    Ok(Value::Array(agents.iter().map(agent_json).collect()))
}

/// `agent_switch {agent_id}` → `{"agent_id","name"}`.
pub async fn agent_switch(params: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let id = required_str(&params, "agent_id")?;
    let a = ctx
        .daemon
        .brain()?
        .core
        .agent_switch(id)
        .map_err(core_err)?;
    Ok(json!({"agent_id": a.id, "name": a.name}))
}
