//! The legacy socket `sayri.sock`: the original Sayri's gateway protocol (see
//! `sayri_protocol::legacy`), beside `sayri-daemon.sock` and protected the same way.
//!
//! 1. Bound 0600 in the same 0700 runtime directory; every connection's `SO_PEERCRED` uid must
//!    be ours (else it is closed unread).
//! 2. Who connects decides what it may do: a process of a gateway's tree speaks for that
//!    instance only and is refused management requests; a process inside a command of a turn
//!    is refused management requests; the person's own programs may do everything. Access
//!    classes are those of the IPC commands: `sayri-gui-ping` is read-only; `toggle`, `show`,
//!    `hide`, `settings`, `listen`, `attach` and messages are assistant; `quit` is management.
//! 3. One request per connection, up to 1 MiB, read within [`REQUEST_TIMEOUT`]: it ends at the
//!    first `\n`, when the client closes its write side, or when the client has sent a whole
//!    request (plain text, or JSON that parses) and then stays quiet for [`QUIET_END`] (300 ms;
//!    the original gateways send one request without a newline and wait for the answer).
//! 4. Plain-text requests get one line (`DAEMON`, `OK` or `ERROR …`); `ATTACH_IMAGE` gets `OK`
//!    (or one `error` event) as the original did; a message gets one final event line when
//!    its turn ends (`{"event": "done", "ok": true, "text"}`), or, when it asks for `stream`,
//!    the turn's events as they come before it; no time limit.

use crate::command_peer;
use crate::daemon::commands::desktop::announce_window;
use crate::daemon::dispatch::Access;
use crate::daemon::listener;
use crate::daemon::state::DaemonState;
use crate::gateways::incoming;
use crate::gateways::peer::{self, Identity};
use sayri_protocol::legacy::{
    DAEMON_PONG, GatewayReport, LegacyRequest, MAX_REQUEST_BYTES, QUIET_END, ReplyEvent,
    ReportAnswer, is_whole_request,
};
use sayri_protocol::params::WindowAction;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::task::TaskTracker;

/// Time a client has to send its whole request line.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Binds `sayri.sock` (replacing a stale file; the daemon lock is held). `None`, logged, when
/// it cannot be bound: the daemon then runs without gateways.
pub fn bind(state: &DaemonState) -> Option<UnixListener> {
    match listener::bind_private(&state.paths.legacy_socket()) {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::error!("gateways cannot connect: {e}");
            None
        }
    }
}

/// Accepts legacy connections until shutdown, then removes the socket file when `owned` (the
/// daemon bound it itself; a socket the service manager passed stays).
pub async fn serve(
    listener: UnixListener,
    state: Arc<DaemonState>,
    tracker: TaskTracker,
    owned: bool,
) {
    accept(&listener, &state, &tracker, "legacy socket: ").await;
    drop(listener);
    if owned {
        let _ = std::fs::remove_file(state.paths.legacy_socket());
    }
}

/// Serves the legacy socket at the original path (`$STATE/sayri.sock`) exactly as
/// [`serve`] does, then removes it if it is still the socket this daemon made.
pub async fn serve_alias(
    alias: listener::AliasSocket,
    state: Arc<DaemonState>,
    tracker: TaskTracker,
) {
    accept(
        &alias.listener,
        &state,
        &tracker,
        "legacy socket (original path): ",
    )
    .await;
    alias.remove();
}

async fn accept(
    listener: &UnixListener,
    state: &Arc<DaemonState>,
    tracker: &TaskTracker,
    label: &str,
) {
    listener::accept_until(listener, &state.shutdown, label, |stream, slot| {
        let state = state.clone();
        tracker.spawn(async move {
            let _slot = slot;
            tokio::select! {
                _ = state.terminate.cancelled() => {}
                () = connection(stream, &state) => {}
            }
        });
    })
    .await;
}

/// The identity of a connection's peer.
fn identify(state: &DaemonState, stream: &UnixStream) -> Identity {
    let pid = stream.peer_cred().ok().and_then(|c| c.pid());
    match peer::instance_of_process(state, pid) {
        Some(id) => Identity::Gateway(id),
        None => Identity::Local(command_peer::caller_of(pid)),
    }
}

/// Reads the request (module rule 3): bytes up to the first `\n`, the end of input, or a
/// quiet [`QUIET_END`] after a whole request.
///
/// # Errors
/// A sentence for the client: too long, not UTF-8, too slow, or a read error.
async fn read_request(stream: &mut UnixStream) -> Result<String, String> {
    let too_long = || {
        format!(
            "the request is longer than {MAX_REQUEST_BYTES} bytes (1 MiB); send a shorter message"
        )
    };
    let deadline = tokio::time::Instant::now() + REQUEST_TIMEOUT;
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let whole = is_whole_request(&buf);
        let until = if whole {
            (tokio::time::Instant::now() + QUIET_END).min(deadline)
        } else {
            deadline
        };
        let n = match tokio::time::timeout_at(until, stream.read(&mut chunk)).await {
            Err(_) if whole => break,
            Err(_) => {
                return Err(format!(
                    "no complete request within {} s; send one line ended by a newline",
                    REQUEST_TIMEOUT.as_secs()
                ));
            }
            Ok(Err(e)) => return Err(format!("cannot read the request: {e}")),
            Ok(Ok(n)) => n,
        };
        if n == 0 {
            break;
        }
        let part = &chunk[..n];
        if let Some(end) = part.iter().position(|b| *b == b'\n') {
            buf.extend_from_slice(&part[..end]);
            break;
        }
        buf.extend_from_slice(part);
        if buf.len() > MAX_REQUEST_BYTES {
            return Err(too_long());
        }
    }
    if buf.len() > MAX_REQUEST_BYTES {
        return Err(too_long());
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    String::from_utf8(buf).map_err(|_| "the request is not valid UTF-8".to_string())
}

/// Serves one connection: one request, its answer, then close.
async fn connection(mut stream: UnixStream, state: &Arc<DaemonState>) {
    let who = identify(state, &stream);
    let line = match read_request(&mut stream).await {
        Ok(l) => l,
        Err(e) => {
            // JSON clients read events, the others a line; an unreadable request is answered
            // for both.
            let _ = stream.write_all(&ReplyEvent::error(&e).to_line()).await;
            return;
        }
    };
    let request = match LegacyRequest::parse(&line) {
        Ok(r) => r,
        Err(e) if line.trim_start().starts_with('{') => {
            let _ = stream.write_all(&ReplyEvent::error(e.0).to_line()).await;
            return;
        }
        Err(e) => {
            let _ = stream.write_all(format!("ERROR {e}\n").as_bytes()).await;
            return;
        }
    };
    let (access, json) = class_of(&request);
    if !access.permits(who.caller()) {
        let msg = format!(
            "this is a {} request, refused to a gateway or to a program running inside a command of Sayri",
            access.name()
        );
        tracing::warn!(
            "legacy socket: refused a {} request from {who:?}",
            access.name()
        );
        let reply = if json {
            ReplyEvent::error(msg).to_line()
        } else {
            format!("ERROR {msg}\n").into_bytes()
        };
        let _ = stream.write_all(&reply).await;
        return;
    }
    match request {
        LegacyRequest::Message(m) => incoming::handle(&**state, &who, *m, stream).await,
        LegacyRequest::Attach { path, json } => {
            let reply = attach(state, &who, &path, json).await;
            let _ = stream.write_all(&reply).await;
            let _ = stream.shutdown().await;
        }
        other => {
            let reply = answer_simple(state, &who, other);
            let _ = stream.write_all(&reply).await;
            let _ = stream.shutdown().await;
        }
    }
}

/// The access class of a request, and whether it is answered in JSON.
fn class_of(r: &LegacyRequest) -> (Access, bool) {
    match r {
        LegacyRequest::Ping => (Access::ReadOnly, false),
        LegacyRequest::Toggle
        | LegacyRequest::Show
        | LegacyRequest::Hide
        | LegacyRequest::Settings
        | LegacyRequest::Listen => (Access::Assistant, false),
        LegacyRequest::Attach { json, .. } => (Access::Assistant, *json),
        LegacyRequest::Message(_) | LegacyRequest::Report(_) => (Access::Assistant, true),
        LegacyRequest::Quit => (Access::Management, false),
    }
}

/// The answer to every request but a message.
fn answer_simple(state: &DaemonState, who: &Identity, r: LegacyRequest) -> Vec<u8> {
    let ui = |action: WindowAction| {
        announce_window(&state.broadcaster, action);
        b"OK\n".to_vec()
    };
    match r {
        LegacyRequest::Ping => format!("{DAEMON_PONG}\n").into_bytes(),
        LegacyRequest::Toggle => ui(WindowAction::Toggle),
        LegacyRequest::Show => ui(WindowAction::Show),
        LegacyRequest::Hide => ui(WindowAction::Hide),
        LegacyRequest::Settings => ui(WindowAction::Settings),
        LegacyRequest::Listen => {
            b"ERROR listening by voice cannot be started through this socket; use `sayri listen`\n"
                .to_vec()
        }
        LegacyRequest::Quit => {
            state.request_shutdown();
            b"OK\n".to_vec()
        }
        LegacyRequest::Attach { json, .. } => {
            reply(json, Err("internal: attach routed wrongly".into()))
        }
        LegacyRequest::Report(report) => report_from(state, who, report),
        LegacyRequest::Message(_) => {
            ReplyEvent::error("internal: message routed wrongly").to_line()
        }
    }
}

/// The answer to a request: `OK` on success (as the original answered `ATTACH_IMAGE` too);
/// a failure as `ERROR …`, or as one JSON `error` event for a JSON request.
fn reply(json: bool, result: Result<String, String>) -> Vec<u8> {
    match (json, result) {
        (true, Ok(_)) => b"OK\n".to_vec(),
        (true, Err(e)) => ReplyEvent::error(e).to_line(),
        (false, Ok(_)) => b"OK\n".to_vec(),
        (false, Err(e)) => format!("ERROR {}\n", e.replace(['\n', '\r'], " ")).into_bytes(),
    }
}

/// `attach PATH` / `ATTACH_IMAGE`: the image goes with the next local request, through the
/// same checks as `attach_image` (absolute path, the active agent's read rules — a question
/// goes to the person as a permission card —, `sandbox.deny_read`, type and size). A gateway
/// may not attach files of this machine: its chats are not the desktop conversation.
async fn attach(state: &Arc<DaemonState>, who: &Identity, path: &str, json: bool) -> Vec<u8> {
    if let Identity::Gateway(id) = who {
        tracing::warn!("legacy socket: gateway {id} tried to attach {path}");
        return reply(
            json,
            Err(format!(
                "gateway {id} cannot attach files of this machine; images from a chat are not supported yet"
            )),
        );
    }
    let cancel = state.shutdown.child_token();
    let result = crate::daemon::commands::attach::attach(state, path, cancel)
        .await
        .map(|v| {
            format!(
                "attached {path} ({}, {} bytes); it goes with the next request",
                v.mime, v.bytes
            )
        })
        .map_err(|e| e.message);
    reply(json, result)
}

/// A gateway's report: only a gateway process may make one, for its own instance.
fn report_from(state: &DaemonState, who: &Identity, report: GatewayReport) -> Vec<u8> {
    let Identity::Gateway(id) = who else {
        return ReplyEvent::error("only a running gateway can send GATEWAY_REPORT").to_line();
    };
    match report.report.as_str() {
        "delivery_failed" => {
            let error = crate::gateways::redacted(state, &report.error);
            let chat = report.chat_id.as_deref().unwrap_or("?");
            tracing::error!("gateway {id}: a reply to chat {chat} was not delivered: {error}");
            state.gateways.delivery_failed(id, &error);
            crate::gateways::alerts::alert(
                &state.broadcaster,
                &format!("Sayri gateway {id} could not deliver a reply"),
                &error,
                "gateway",
                id,
            );
            ReportAnswer::taken_line()
        }
        "outbox" => {
            state
                .gateways
                .outbox_reported(id, report.pending.unwrap_or(0), report.next_retry_at);
            ReportAnswer::taken_line()
        }
        other => ReplyEvent::error(format!(
            "unknown report {other:?}: the daemon understands delivery_failed and outbox"
        ))
        .to_line(),
    }
}
