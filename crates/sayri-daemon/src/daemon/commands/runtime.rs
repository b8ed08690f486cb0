//! `ping`, `version`, `status`, `quit`.

use crate::daemon::DaemonState;
use crate::daemon::dispatch::Ctx;
use crate::daemon::status::build_status;
use sayri_protocol::params::{PingParams, QuitParams, StatusParams, VersionParams};
use sayri_protocol::reply::runtime::{PingReply, QuitReply, StatusReply, VersionReply};
use sayri_protocol::{PROTOCOL_VERSION, ProtocolError};
use std::sync::Arc;
use std::time::Duration;

/// `ping` → `"pong"` (params ignored).
pub async fn ping(_: PingParams, _: Ctx) -> Result<PingReply, ProtocolError> {
    Ok("pong".into())
}

/// `version` → `{"version": "0.1.0", "protocol_version": 1}`.
pub async fn version(_: VersionParams, _: Ctx) -> Result<VersionReply, ProtocolError> {
    Ok(VersionReply {
        version: env!("CARGO_PKG_VERSION").into(),
        protocol_version: PROTOCOL_VERSION,
    })
}

/// `status` → the status object.
pub async fn status(_: StatusParams, ctx: Ctx) -> Result<StatusReply, ProtocolError> {
    Ok(build_status(&ctx.daemon))
}

/// `quit` → `{"ok": true}`; the daemon stops right after the reply is queued.
pub async fn quit(_: QuitParams, ctx: Ctx) -> Result<QuitReply, ProtocolError> {
    shutdown_soon(&ctx.daemon);
    Ok(QuitReply { ok: true })
}

/// Asks the daemon to stop right after the current reply is queued.
pub fn shutdown_soon(daemon: &Arc<DaemonState>) {
    let daemon = daemon.clone();
    tokio::spawn(async move {
        // Lets the reply be queued ahead of the shutdown sequence, which drains queues.
        tokio::time::sleep(Duration::from_millis(20)).await;
        daemon.request_shutdown();
    });
}
