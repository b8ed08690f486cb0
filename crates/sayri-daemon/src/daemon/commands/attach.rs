//! `attach_image`: an image file goes with the next request of the active conversation.
//!
//! The daemon runs outside the sandbox, so the path must pass the same read rules as a command
//! of the active agent reading it (`cat -- PATH` through the permission gate: agent rules,
//! policies, the outside-reach baseline; and `sandbox.deny_read`), for the path given and for
//! the file it resolves to through symbolic links. The file is then read once, at most
//! [`MAX_IMAGE_BYTES`] + 1 bytes, and judged by its content (PNG, JPEG, GIF, WebP). Pixels are
//! not redacted; the image is stored with the request's message.

use crate::brain::Brain;
use crate::daemon::DaemonState;
use crate::daemon::dispatch::Ctx;
use base64::Engine as _;
use sayri_core::domain::image::{MAX_IMAGE_BYTES, check_image};
use sayri_core::engine::gate::{GateRequest, GateVerdict, PermissionGate};
use sayri_core::ports::ChatImage;
use sayri_permissions::Action;
use sayri_protocol::event::turns::AttachImage;
use sayri_protocol::params::AttachImageParams;
use sayri_protocol::reply::desktop::AttachImageReply;
use sayri_protocol::{ErrorCode, ProtocolError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

/// `attach_image {path}` → `{"path", "mime", "bytes", "waiting"}` (`waiting`: images that go
/// with the next request); broadcasts `attach_image {path}`.
///
/// # Errors
/// `invalid_params` for a relative path, a file that is not an image or is too large, or when
/// four images wait already; `not_found` when the file cannot be opened; `denied` when the read
/// rules refuse it.
pub async fn attach_image(
    p: AttachImageParams,
    ctx: Ctx,
) -> Result<AttachImageReply, ProtocolError> {
    attach(&ctx.daemon, &p.path, ctx.client_gone.clone()).await
}

/// Attaches the image at `path` for the daemon's next local request, as `attach_image` does
/// (also the entry of the legacy socket's `ATTACH_IMAGE`); a permission question it opens is
/// cancelled by `cancel`.
///
/// # Errors
/// As `attach_image`.
pub async fn attach(
    daemon: &Arc<DaemonState>,
    path: &str,
    cancel: CancellationToken,
) -> Result<AttachImageReply, ProtocolError> {
    let brain = daemon.brain()?;
    let given = PathBuf::from(path);
    if !given.is_absolute() {
        return Err(ProtocolError::invalid_params(format!(
            "cannot attach {path:?}: give an absolute path, e.g. /home/me/Pictures/screen.png"
        )));
    }
    let real = tokio::fs::canonicalize(&given).await.map_err(|e| {
        ProtocolError::new(
            ErrorCode::NotFound,
            format!("cannot open image {}: {e}", given.display()),
        )
    })?;
    for p in [&given, &real] {
        may_read(brain, p, &cancel).await?;
    }
    let cfg = daemon.config();
    if let Some(denied) = cfg
        .sandbox
        .deny_read
        .iter()
        .find(|d| given.starts_with(d) || real.starts_with(d))
    {
        return Err(ProtocolError::new(
            ErrorCode::Denied,
            format!(
                "cannot attach {}: sandbox.deny_read lists {denied}, so commands may not read it",
                given.display()
            ),
        ));
    }
    if !tokio::fs::metadata(&real).await.is_ok_and(|m| m.is_file()) {
        return Err(ProtocolError::invalid_params(format!(
            "cannot attach {}: not a regular file",
            given.display()
        )));
    }
    let bytes = read_at_most(&real, MAX_IMAGE_BYTES + 1)
        .await
        .map_err(|e| {
            ProtocolError::new(
                ErrorCode::NotFound,
                format!("cannot read image {}: {e}", given.display()),
            )
        })?;
    let mime = check_image(&bytes).map_err(|why| {
        ProtocolError::invalid_params(format!("cannot attach {}: {why}", given.display()))
    })?;
    let image = ChatImage {
        mime: mime.to_string(),
        base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
    };
    let waiting = brain.core.attach_image(image).ok_or_else(|| {
        ProtocolError::invalid_params(format!(
            "cannot attach {}: {} images already wait for the next request; send it first",
            given.display(),
            sayri_core::assistant::MAX_ATTACHED_IMAGES
        ))
    })?;
    daemon.broadcaster.emit(&AttachImage {
        path: path.to_string(),
    });
    Ok(AttachImageReply {
        path: path.to_string(),
        mime: mime.to_string(),
        bytes: bytes.len() as u64,
        waiting: waiting as u64,
    })
}

/// Whether the active agent's commands may read `path`; a question goes to the person as a
/// permission card (the one attaching is there to answer).
async fn may_read(
    brain: &Brain,
    path: &Path,
    cancel: &CancellationToken,
) -> Result<(), ProtocolError> {
    let status = brain.core.status();
    let agent = brain
        .core
        .resolve(&status.agent_id)
        .map_err(super::agent::core_err)?;
    let request = GateRequest {
        level: agent.sandbox.level,
        agent,
        session_id: status.session_id,
        action: Action::Shell,
        resource: format!("cat -- {}", shell_quote(&path.to_string_lossy())),
        approver_available: true,
        outside: None,
    };
    match brain.gate.authorize(request, cancel.clone()).await {
        GateVerdict::Allow { .. } => Ok(()),
        GateVerdict::Refuse { message, .. } => Err(ProtocolError::new(
            ErrorCode::Denied,
            format!("cannot attach {}: {message}", path.display()),
        )),
    }
}

/// `s` as one single-quoted shell word.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Reads at most `limit` bytes of `path`.
async fn read_at_most(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = tokio::fs::File::open(path).await?;
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes).await?;
    Ok(bytes)
}
