//! `listen`, `stop_listening`, `toggle_listening`: the voice loop's commands (see
//! [`crate::voice`]). A build without voice answers each with what to rebuild.

use crate::daemon::dispatch::Ctx;
use sayri_protocol::ProtocolError;
use sayri_protocol::params::{ListenParams, StopListeningParams, ToggleListeningParams};
use sayri_protocol::reply::voice::{ListenReply, StopListeningReply, ToggleListeningReply};
use std::time::Duration;

/// `listen {timeout=60}` → `{"text"}`: one utterance's transcript, `""` when nothing was said.
pub async fn listen(p: ListenParams, ctx: Ctx) -> Result<ListenReply, ProtocolError> {
    let timeout = Duration::from_secs_f64(p.timeout_secs().min(3600.0));
    let text = ctx.daemon.voice.listen(timeout).await?;
    Ok(ListenReply { text })
}

/// `stop_listening` → `{"stopped": true}`.
pub async fn stop_listening(
    _: StopListeningParams,
    ctx: Ctx,
) -> Result<StopListeningReply, ProtocolError> {
    ctx.daemon.voice.stop_listening()?;
    Ok(StopListeningReply { stopped: true })
}

/// `toggle_listening` → `{"state"}`: the state the toggle leads to (`idle` when it stopped
/// listening, `activated` when it started).
pub async fn toggle_listening(
    _: ToggleListeningParams,
    ctx: Ctx,
) -> Result<ToggleListeningReply, ProtocolError> {
    let state = ctx.daemon.voice.toggle()?;
    Ok(ToggleListeningReply {
        state: state.as_str().into(),
    })
}
