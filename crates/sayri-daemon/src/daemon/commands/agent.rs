//! The assistant's commands: `talk`, `ask`, `interrupt`, `new_conversation`, `switch_session`,
//! `sessions_list`, `session_get`, `session_rename`, `session_delete`, and `run_command` (one
//! command a client proposes, judged and run like a model's). Events of the turn reach
//! every client through the broadcaster. (Agent profiles: [`super::agents`].)

use crate::command_peer::Caller;
use crate::daemon::dispatch::{Access, Ctx};
use crate::wire;
use sayri_core::assistant::CoreError;
use sayri_protocol::params::{
    AskParams, InterruptParams, NewConversationParams, RunCommandParams, SessionDeleteParams,
    SessionGetParams, SessionRenameParams, SessionsListParams, SwitchSessionParams, TalkParams,
    TurnTarget,
};
use sayri_protocol::reply::sessions::{
    AskReply, DelegatedUsage, InterruptReply, NewConversationReply, RunCommandReply,
    SessionDeleteReply, SessionGetReply, SessionRenameReply, SessionUsage, SessionsListReply,
    SwitchSessionReply, TalkReply,
};
use sayri_protocol::{ErrorCode, ProtocolError, names};
use std::time::Duration;

/// Maps a core error to a protocol error with a fitting code.
pub fn core_err(e: CoreError) -> ProtocolError {
    let code = match &e {
        CoreError::Busy => ErrorCode::Busy,
        CoreError::EmptyText => ErrorCode::InvalidParams,
        CoreError::UnknownAgent(_) | CoreError::UnknownSession(_) => ErrorCode::NotFound,
        CoreError::AmbiguousSession { .. } => ErrorCode::InvalidParams,
        CoreError::BadAgent(_) => ErrorCode::InvalidParams,
        CoreError::Store(_) | CoreError::Lost => ErrorCode::Internal,
    };
    ProtocolError::new(code, e.to_string())
}

/// Moves to the turn's agent and session first: switches agent when `agent_id` is given, then
/// starts a new conversation (`new`) or switches session (`session_id`). While a turn runs any
/// change is refused (it would cut the running turn short). Switching agents is management: a
/// command of a turn may not move the assistant to another (possibly wider) agent.
fn enter_target(target: TurnTarget<'_>, ctx: &Ctx) -> Result<(), ProtocolError> {
    let brain = ctx.daemon.brain()?;
    if let Some(id) = target.agent_id
        && brain.core.active_agent().id != id
    {
        if ctx.caller == Caller::Command {
            return Err(ProtocolError::new(
                ErrorCode::Denied,
                format!(
                    "switching to agent {id} is a management action, refused to a client running inside a command of Sayri; run it yourself from a terminal"
                ),
            ));
        }
        if !ctx.may(names::cmd::AGENT_SWITCH, Access::Management) {
            return Err(ProtocolError::new(
                ErrorCode::Denied,
                format!(
                    "switching to agent {id} is agent_switch, which this connection gave up with client_hello; switch agents with `sayri agents use {id}`"
                ),
            ));
        }
        if brain.core.status().busy {
            return Err(core_err(CoreError::Busy));
        }
        brain.core.agent_switch(id).map_err(core_err)?;
    }
    let switches_session = target.new
        || target
            .session_id
            .is_some_and(|s| s != brain.core.status().session_id);
    if switches_session && brain.core.status().busy {
        return Err(core_err(CoreError::Busy));
    }
    if target.new {
        brain.core.new_conversation();
    } else if let Some(id) = target.session_id {
        // A unique prefix names its session; an id nobody has keeps its old meaning.
        let id = match brain.core.resolve_session_id(id) {
            Ok(full) => full,
            Err(CoreError::UnknownSession(_)) => id.to_string(),
            Err(e) => return Err(core_err(e)),
        };
        brain.core.switch_session(&id).map_err(core_err)?;
    }
    Ok(())
}

/// A typed request starts: the spoken answer of an earlier spoken query stops (a spoken query
/// still running keeps the core busy and the typed one is refused instead).
fn stop_spoken_answer(ctx: &Ctx) {
    if ctx.daemon.brain().is_ok_and(|b| !b.core.status().busy) {
        ctx.daemon.voice.before_typed_turn();
    }
}

/// `talk {text}` → `{"sent":true,"text","session_id"}`; the turn runs in the background.
pub async fn talk(p: TalkParams, ctx: Ctx) -> Result<TalkReply, ProtocolError> {
    enter_target(p.target(), &ctx)?;
    stop_spoken_answer(&ctx);
    let session_id = ctx.daemon.brain()?.core.talk(&p.text).map_err(core_err)?;
    Ok(TalkReply {
        sent: true,
        text: p.text,
        session_id,
    })
}

/// `ask {text, timeout=120, agent_id?, session_id?, new?}` → `{"text","error","session_id"}`
/// when the turn ends. On timeout the turn is interrupted and `error` says so. If the asking
/// client disconnects the turn keeps running (other clients may be watching).
pub async fn ask(p: AskParams, ctx: Ctx) -> Result<AskReply, ProtocolError> {
    let timeout = p.timeout_secs();
    enter_target(p.target(), &ctx)?;
    stop_spoken_answer(&ctx);
    let brain = ctx.daemon.brain()?.clone();
    let turn = tokio::spawn(async move { brain.core.ask(&p.text).await });
    let brain = ctx.daemon.brain()?.clone();
    match tokio::time::timeout(Duration::from_secs_f64(timeout.min(86_400.0)), turn).await {
        Ok(Ok(Ok(result))) => Ok(AskReply {
            text: result.text,
            error: result.error,
            session_id: result.session_id,
        }),
        Ok(Ok(Err(e))) => Err(core_err(e)),
        Ok(Err(e)) => Err(ProtocolError::internal(format!("the request failed: {e}"))),
        Err(_) => {
            brain.core.interrupt();
            Ok(AskReply {
                text: String::new(),
                error: Some(format!(
                    "no answer within {timeout} s — the request was interrupted"
                )),
                session_id: brain.core.status().session_id,
            })
        }
    }
}

/// `run_command {command, agent_id, level?}` → how it ended and its redacted output. The
/// agent's rules judge it as a command its model proposed (a card goes to every client where
/// they ask); the card's questions belong to this connection, so they end when it goes.
pub async fn run_command(p: RunCommandParams, ctx: Ctx) -> Result<RunCommandReply, ProtocolError> {
    let brain = ctx.daemon.brain()?.clone();
    let agent = brain.core.resolve(&p.agent_id).map_err(core_err)?;
    let level = p
        .level
        .map_or(agent.sandbox.level, |l| l.min(agent.sandbox.level));
    let session = format!("run_command:{}", ctx.client);
    let cancel = ctx.client_gone.child_token();
    let engine = brain.core.engine().clone();
    let result = engine
        .run_client_command(agent.clone(), level, &session, &p.command, cancel)
        .await;
    brain.broker.cancel_session(&session);
    Ok(RunCommandReply {
        agent_id: agent.id.clone(),
        level,
        status: result.status.as_str().into(),
        exit_code: result.exit_code,
        output: result.output,
        output_tail: result.output_tail,
        omitted_bytes: result.omitted.bytes,
        duration_ms: result.duration.as_secs_f64() * 1000.0,
    })
}

/// `interrupt` → `{"interrupted": bool}` (true when a turn was running); a spoken answer
/// stops too.
pub async fn interrupt(_: InterruptParams, ctx: Ctx) -> Result<InterruptReply, ProtocolError> {
    ctx.daemon.voice.interrupt();
    let brain = ctx.daemon.brain()?;
    let session = brain.core.status().session_id;
    brain.broker.cancel_session(&session);
    Ok(InterruptReply {
        interrupted: brain.core.interrupt(),
    })
}

/// `new_conversation` → `{"session_id"}`.
pub async fn new_conversation(
    _: NewConversationParams,
    ctx: Ctx,
) -> Result<NewConversationReply, ProtocolError> {
    Ok(NewConversationReply {
        session_id: ctx.daemon.brain()?.core.new_conversation(),
    })
}

/// `switch_session {session_id}` → `{"session_id"}`; unknown ids are an error (not ignored).
pub async fn switch_session(
    p: SwitchSessionParams,
    ctx: Ctx,
) -> Result<SwitchSessionReply, ProtocolError> {
    let core = &ctx.daemon.brain()?.core;
    let id = core.resolve_session_id(&p.session_id).map_err(core_err)?;
    let active = core.switch_session(&id).map_err(core_err)?;
    Ok(SwitchSessionReply { session_id: active })
}

/// `sessions_list {limit=20}` → `[{id, title, agent_id, messages, created_at, updated_at,
/// parent_id}]`, newest first.
pub async fn sessions_list(
    p: SessionsListParams,
    ctx: Ctx,
) -> Result<SessionsListReply, ProtocolError> {
    let limit = p.limit();
    let list = ctx
        .daemon
        .brain()?
        .core
        .sessions_list(limit)
        .map_err(core_err)?;
    Ok(list.iter().map(wire::session).collect())
}

/// `session_get {session_id}` → the session with its messages (tool steps included),
/// `sub_sessions` (the sessions of the sub-agents its requests delegated to) and `usage`: the
/// provider-reported token totals of its model calls and of the delegations its steps record
/// (`{prompt_tokens, completion_tokens, model_calls, delegated: {…the delegations' share}}`;
/// calls whose server reported nothing are not counted).
pub async fn session_get(p: SessionGetParams, ctx: Ctx) -> Result<SessionGetReply, ProtocolError> {
    let core = &ctx.daemon.brain()?.core;
    let id = core.resolve_session_id(&p.session_id).map_err(core_err)?;
    let d = core.session_get(&id).map_err(core_err)?;
    Ok(SessionGetReply {
        id: d.info.id.clone(),
        title: d.info.title.clone(),
        agent_id: d.info.agent_id.clone(),
        created_at: d.info.created_at,
        updated_at: d.info.updated_at,
        parent_id: d.info.parent_id.clone(),
        messages: d.messages.iter().map(wire::message).collect(),
        sub_sessions: d.sub_sessions.iter().map(wire::session).collect(),
        usage: session_usage(&d.messages),
    })
}

/// Token totals of `messages`: their own reported usage plus what the delegations recorded
/// with their steps spent (shown apart as `delegated` too).
fn session_usage(messages: &[sayri_core::ports::StoredMessage]) -> SessionUsage {
    let mut own = DelegatedUsage::default();
    for u in messages.iter().filter_map(|m| m.usage) {
        own.prompt_tokens += u64::from(u.prompt_tokens);
        own.completion_tokens += u64::from(u.completion_tokens);
        own.model_calls += 1;
    }
    let mut delegated = DelegatedUsage::default();
    for d in messages
        .iter()
        .filter_map(|m| m.tool_call.as_ref()?.delegated.as_ref())
    {
        delegated.prompt_tokens += d.prompt_tokens;
        delegated.completion_tokens += d.completion_tokens;
        delegated.model_calls += d.model_calls;
    }
    SessionUsage {
        prompt_tokens: own.prompt_tokens + delegated.prompt_tokens,
        completion_tokens: own.completion_tokens + delegated.completion_tokens,
        model_calls: own.model_calls + delegated.model_calls,
        delegated,
    }
}

/// `session_rename {session_id, title}` → `{"session_id","title"}`.
pub async fn session_rename(
    p: SessionRenameParams,
    ctx: Ctx,
) -> Result<SessionRenameReply, ProtocolError> {
    let core = &ctx.daemon.brain()?.core;
    let id = core.resolve_session_id(&p.session_id).map_err(core_err)?;
    core.session_rename(&id, &p.title).map_err(core_err)?;
    Ok(SessionRenameReply {
        session_id: id,
        title: p.title,
    })
}

/// `session_delete {session_id}` → `{"session_id","deleted"}`.
pub async fn session_delete(
    p: SessionDeleteParams,
    ctx: Ctx,
) -> Result<SessionDeleteReply, ProtocolError> {
    let core = &ctx.daemon.brain()?.core;
    let id = core.resolve_session_id(&p.session_id).map_err(core_err)?;
    let deleted = core.session_delete(&id).map_err(core_err)?;
    Ok(SessionDeleteReply {
        session_id: id,
        deleted,
    })
}
