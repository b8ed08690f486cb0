//! `listen`, `stop_listening`, `toggle_listening`: the voice loop's commands (see
//! [`crate::voice`]). A build without voice answers `listen` with what to rebuild, and
//! `stop_listening` / `toggle_listening` with success, the state unchanged and
//! `voice_available: false` (as the original did: there is never a microphone to stop).

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

/// `stop_listening` → `{"stopped": true, "voice_available"}`.
pub async fn stop_listening(
    _: StopListeningParams,
    ctx: Ctx,
) -> Result<StopListeningReply, ProtocolError> {
    ctx.daemon.voice.stop_listening()?;
    Ok(StopListeningReply {
        stopped: true,
        voice_available: ctx.daemon.voice.available(),
    })
}

/// `toggle_listening` → `{"state", "voice_available"}`: the state the toggle leads to (`idle`
/// when it stopped listening, `activated` when it started); without voice the current state,
/// unchanged.
pub async fn toggle_listening(
    _: ToggleListeningParams,
    ctx: Ctx,
) -> Result<ToggleListeningReply, ProtocolError> {
    if !ctx.daemon.voice.available() {
        let state = crate::daemon::status::build_status(&ctx.daemon).state;
        return Ok(ToggleListeningReply {
            state,
            voice_available: false,
        });
    }
    let state = ctx.daemon.voice.toggle()?;
    Ok(ToggleListeningReply {
        state: state.as_str().into(),
        voice_available: true,
    })
}
