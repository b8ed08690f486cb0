//! The routine and trigger commands: `routines_list`, `routines_run`, `routine_save`,
//! `routine_delete`, `routine_set_enabled`, `routine_next`, `triggers_list`, `trigger_save`,
//! `trigger_delete`. The work is [`crate::routines::Routines`]'s; these map params and errors.

use crate::daemon::dispatch::Ctx;
use chrono::{DateTime, Utc};
use sayri_core::domain::routines::RoutineDraft;
use sayri_protocol::ProtocolError;
use sayri_protocol::params::{
    RoutineDeleteParams, RoutineNextParams, RoutineSaveParams, RoutineSetEnabledParams,
    RoutinesListParams, RoutinesRunParams, TriggerDeleteParams, TriggerSaveParams,
    TriggersListParams,
};
use sayri_protocol::reply::routines::{
    RoutineDeleteReply, RoutineNextReply, RoutineSaveReply, RoutineSetEnabledReply,
    RoutinesListReply, RoutinesRunReply, TriggerDeleteReply, TriggerSaveReply, TriggersListReply,
};

/// `routines_list` → every routine.
pub async fn routines_list(
    _: RoutinesListParams,
    ctx: Ctx,
) -> Result<RoutinesListReply, ProtocolError> {
    ctx.daemon.routines()?.list()
}

/// `routines_run {routine_id}` → `{scheduled, routine_id, name}`.
pub async fn routines_run(
    p: RoutinesRunParams,
    ctx: Ctx,
) -> Result<RoutinesRunReply, ProtocolError> {
    ctx.daemon.routines()?.run_now(p.routine_id.trim())
}

/// `routine_save {…}` → the routine.
pub async fn routine_save(
    p: RoutineSaveParams,
    ctx: Ctx,
) -> Result<RoutineSaveReply, ProtocolError> {
    let draft = RoutineDraft {
        id: p.id,
        name: p.name,
        description: p.description,
        trigger: p.trigger,
        time_spec: p.time_spec,
        zone: p.zone,
        prompt: p.prompt,
        agent_id: p.agent_id,
        speak_tts: p.speak_tts,
        notify_desktop: p.notify_desktop,
        enabled: p.enabled,
        catch_up: p.catch_up,
        grace_minutes: p.grace_minutes,
    };
    ctx.daemon.routines()?.save(&draft)
}

/// `routine_delete {routine_id}` → `{routine_id, deleted}`.
pub async fn routine_delete(
    p: RoutineDeleteParams,
    ctx: Ctx,
) -> Result<RoutineDeleteReply, ProtocolError> {
    ctx.daemon.routines()?.delete(p.routine_id.trim())
}

/// `routine_set_enabled {routine_id, enabled}` → `{routine_id, enabled, next_run_at}`.
pub async fn routine_set_enabled(
    p: RoutineSetEnabledParams,
    ctx: Ctx,
) -> Result<RoutineSetEnabledReply, ProtocolError> {
    ctx.daemon
        .routines()?
        .set_enabled(p.routine_id.trim(), p.enabled.unwrap_or(true))
}

/// `routine_next {routine_id, count, now}` → `{routine_id, zone, next}`.
pub async fn routine_next(
    p: RoutineNextParams,
    ctx: Ctx,
) -> Result<RoutineNextReply, ProtocolError> {
    let now = match p.now.as_deref().map(str::trim) {
        Some(s) => Some(
            DateTime::parse_from_rfc3339(s)
                .map_err(|e| {
                    ProtocolError::invalid_params(format!(
                        "invalid `now` {s:?}: {e} — write RFC 3339 with an offset, e.g. 2026-09-10T05:02:00Z"
                    ))
                })?
                .with_timezone(&Utc),
        ),
        None => None,
    };
    let count = p.count.unwrap_or(5).clamp(1, 1000) as usize;
    ctx.daemon.routines()?.next(p.routine_id.trim(), count, now)
}

/// `triggers_list` → every trigger file.
pub async fn triggers_list(
    _: TriggersListParams,
    ctx: Ctx,
) -> Result<TriggersListReply, ProtocolError> {
    Ok(ctx.daemon.routines()?.triggers_list())
}

/// `trigger_save {trigger}` → the trigger.
pub async fn trigger_save(
    p: TriggerSaveParams,
    ctx: Ctx,
) -> Result<TriggerSaveReply, ProtocolError> {
    ctx.daemon.routines()?.trigger_save(&p.trigger)
}

/// `trigger_delete {trigger_id}` → `{trigger_id, deleted}`.
pub async fn trigger_delete(
    p: TriggerDeleteParams,
    ctx: Ctx,
) -> Result<TriggerDeleteReply, ProtocolError> {
    ctx.daemon.routines()?.trigger_delete(p.trigger_id.trim())
}
