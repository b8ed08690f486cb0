//! Answers that survive a gateway restart. A gateway keeps every update in its outbox until the
//! reply is delivered; when it was killed after the daemon answered, it sends the update again
//! (same `update_id`). The answer recorded the first time is given back, and no second turn or
//! command runs. An interrupted turn is not recorded: sent again, it runs.

use super::Host;
use sayri_core::domain::gateway::GatewayInstance;
use sayri_protocol::legacy::{IncomingMessage, ReplyEvent};

/// The recorded answer to `msg`, if it carries an update id that was answered before.
pub fn recorded(
    state: &dyn Host,
    inst: &GatewayInstance,
    msg: &IncomingMessage,
) -> Option<ReplyEvent> {
    let update = msg.update_id.as_deref()?;
    let brain = state.brain().ok()?;
    let stored = brain
        .db(|s| s.gateway_reply(&inst.id, update))
        .ok()
        .flatten()?;
    let ev = serde_json::from_str::<ReplyEvent>(&stored).ok()?;
    tracing::info!(
        "gateway {}: update {update} was sent again (the gateway restarted); it gets the answer recorded the first time",
        inst.id
    );
    Some(ev)
}

/// Records `ev` as the answer to `msg` when it carries an update id and `ev` is a final
/// answer (not an interruption). A failure is logged: the only cost is a second turn if the
/// gateway sends the update again.
pub fn record(state: &dyn Host, inst: &GatewayInstance, msg: &IncomingMessage, ev: &ReplyEvent) {
    let Some(update) = msg.update_id.as_deref() else {
        return;
    };
    let interrupted = matches!(ev, ReplyEvent::Error { error, .. } if error == INTERRUPTED);
    if interrupted || !ev.is_final() || matches!(ev, ReplyEvent::Ignored { .. }) {
        return;
    }
    let (Ok(brain), Ok(json)) = (state.brain(), serde_json::to_string(ev)) else {
        return;
    };
    let chat = msg.chat_id.as_deref().unwrap_or("");
    if let Err(e) = brain.db(|s| s.save_gateway_reply(&inst.id, update, chat, &json, super::now()))
    {
        crate::store_health::log_store_error(
            &brain.store,
            &format!(
                "gateway {}: the answer to update {update} was not recorded",
                inst.id
            ),
            &e,
        );
    }
}

/// The error of a turn stopped because the gateway went away (or the daemon stops).
pub const INTERRUPTED: &str = "the request was interrupted";
