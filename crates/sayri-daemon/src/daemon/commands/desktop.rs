//! Front-end helpers: `clipboard_copy`, `killall`, `window`.
//!
//! * `clipboard_copy` tries `wl-copy`, `xclip -selection clipboard` and `xsel --clipboard
//!   --input` in that order, each with [`CLIPBOARD_TIMEOUT`], the text on its standard input
//!   (never in its arguments); the answer names the one that worked, or why each failed.
//! * `killall` stops the programs this daemon started and tracks (every child of its
//!   supervisor: model server, gateways, plugin services) — never a process found by name — and
//!   the daemon itself only with `include_daemon`.
//! * `window` broadcasts `show`, `hide`, `toggle` or `settings_requested` so that every
//!   front-end can react (`sayri --show` and friends send it).

use super::runtime::shutdown_soon;
use crate::bus::Broadcaster;
use crate::daemon::dispatch::Ctx;
use crate::supervisor::ChildState;
use crate::ui_plugins;
use sayri_protocol::ProtocolError;
use sayri_protocol::event::window::{Hide, SettingsRequested, Show, Toggle};
use sayri_protocol::params::{ClipboardCopyParams, KillallParams, WindowAction, WindowParams};
use sayri_protocol::reply::desktop::{ClipboardCopyReply, KillallReply, WindowReply};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// Longest wait for one clipboard program.
pub const CLIPBOARD_TIMEOUT: Duration = Duration::from_secs(5);

/// The clipboard programs tried, in order, with their arguments.
const CLIPBOARD_TOOLS: [(&str, &[&str]); 3] = [
    ("wl-copy", &[]),
    ("xclip", &["-selection", "clipboard"]),
    ("xsel", &["--clipboard", "--input"]),
];

/// Most bytes of a clipboard program's error output kept for the answer.
const REASON_BYTES: usize = 300;

/// `clipboard_copy {text}` → `{"copied": true, "via": "xclip"}`, or `{"copied": false,
/// "reason": "wl-copy: …; xclip: …; xsel: …"}` naming why each program failed.
pub async fn clipboard_copy(
    p: ClipboardCopyParams,
    _: Ctx,
) -> Result<ClipboardCopyReply, ProtocolError> {
    let mut reasons = Vec::new();
    for (tool, args) in CLIPBOARD_TOOLS {
        match copy_with(tool, args, p.text.as_bytes()).await {
            Ok(()) => {
                return Ok(ClipboardCopyReply {
                    copied: true,
                    via: Some(tool.into()),
                    reason: None,
                });
            }
            Err(why) => reasons.push(format!("{tool}: {why}")),
        }
    }
    let reason = format!(
        "{}; install wl-clipboard (Wayland) or xclip (X11), and run the daemon inside your graphical session",
        reasons.join("; ")
    );
    Ok(ClipboardCopyReply {
        copied: false,
        via: None,
        reason: Some(reason),
    })
}

/// What a clipboard program gets of the daemon's environment: how to find programs and the
/// graphical session, nothing else (never a token the daemon was started with).
const CLIPBOARD_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "DISPLAY",
    "XAUTHORITY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "XDG_SESSION_TYPE",
    "DBUS_SESSION_BUS_ADDRESS",
];

fn clipboard_env() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| k.to_str().is_some_and(|k| CLIPBOARD_ENV.contains(&k)))
        .collect()
}

/// Runs one clipboard program with `text` on its standard input.
///
/// X11 clipboard programs stay in the background to serve the selection: their standard
/// output and error are not waited for, only the exit of the program started.
async fn copy_with(tool: &str, args: &[&str], text: &[u8]) -> Result<(), String> {
    let mut child = Command::new(tool)
        .env_clear()
        .envs(clipboard_env())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "not installed".to_string(),
            _ => format!("cannot start: {e}"),
        })?;
    let mut stdin = child.stdin.take();
    let mut stderr = child.stderr.take();
    let run = async {
        if let Some(mut s) = stdin.take() {
            // A program that exits early closes its input; its exit status tells why.
            let _ = s.write_all(text).await;
            let _ = s.shutdown().await;
        }
        child.wait().await
    };
    let status = match tokio::time::timeout(CLIPBOARD_TIMEOUT, run).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(format!("cannot wait for it: {e}")),
        Err(_) => {
            let _ = child.kill().await;
            return Err(format!(
                "no answer within {} s (stopped)",
                CLIPBOARD_TIMEOUT.as_secs()
            ));
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut said = Vec::new();
    if let Some(err) = stderr.as_mut() {
        let mut buf = [0u8; REASON_BYTES];
        if let Ok(Ok(n)) =
            tokio::time::timeout(Duration::from_millis(200), err.read(&mut buf)).await
        {
            said.extend_from_slice(&buf[..n]);
        }
    }
    let said = String::from_utf8_lossy(&said);
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    Err(match (status.code(), said.is_empty()) {
        (Some(c), true) => format!("exited with status {c}"),
        (Some(c), false) => format!("exited with status {c}: {said}"),
        (None, _) => "killed by a signal".to_string(),
    })
}

/// `killall {include_daemon=false, ui_id=""}` → `{"stopped": [names], "stopped_ui": [ids],
/// "signalled": [], "errors", "daemon_stopped"}`. Stops every running supervised program (model
/// server, gateways, UIs) except the one named `ui_id` (a UI's id, with or without the
/// original's `sayri-ui-`/`sayri-` prefix, or a program's name), and
/// waits until each is gone; `stopped_ui` lists the UIs among them. Then, with
/// `include_daemon`, the daemon stops after answering. `signalled` stays empty: this daemon
/// never signals processes found by name.
pub async fn killall(p: KillallParams, ctx: Ctx) -> Result<KillallReply, ProtocolError> {
    let supervisor = &ctx.daemon.supervisor;
    let keep = p.ui_id.trim();
    let mut stopped = Vec::new();
    let mut stopped_ui = Vec::new();
    let mut errors = Vec::new();
    for child in supervisor.list() {
        let ui = child.name.strip_prefix("ui-");
        let kept = !keep.is_empty()
            && (child.name == keep
                || ui.is_some_and(|u| u == keep || ui_plugins::bare(u) == ui_plugins::bare(keep)));
        if kept || matches!(child.state, ChildState::Stopped | ChildState::Failed) {
            continue;
        }
        match supervisor.stop(&child.name).await {
            Ok(_) => {
                if let Some(id) = ui {
                    stopped_ui.push(id.to_string());
                }
                stopped.push(child.name);
            }
            Err(e) => errors.push(format!("{}: {e}", child.name)),
        }
    }
    if p.include_daemon {
        shutdown_soon(&ctx.daemon);
    }
    Ok(KillallReply {
        stopped,
        stopped_ui,
        signalled: Vec::new(),
        errors,
        daemon_stopped: p.include_daemon,
    })
}

/// `window {action}` → `{"event", "clients"}`: broadcasts the action's event (`show`, `hide`,
/// `toggle`, `settings_requested`) to every connected client.
pub async fn window(p: WindowParams, ctx: Ctx) -> Result<WindowReply, ProtocolError> {
    let clients = announce_window(ctx.broadcaster(), p.action);
    Ok(WindowReply {
        event: p.action.event().into(),
        clients: clients as u64,
    })
}

/// Broadcasts the event of a window action (`show`, `hide`, `toggle`, `settings_requested`);
/// returns how many clients it reached.
pub fn announce_window(broadcaster: &Broadcaster, action: WindowAction) -> usize {
    match action {
        WindowAction::Show => broadcaster.emit(&Show {}),
        WindowAction::Hide => broadcaster.emit(&Hide {}),
        WindowAction::Toggle => broadcaster.emit(&Toggle {}),
        WindowAction::Settings => broadcaster.emit(&SettingsRequested {}),
    }
}
