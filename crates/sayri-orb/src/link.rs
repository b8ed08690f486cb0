//! The connection to the daemon, on a thread of its own with a Tokio runtime (GTK keeps the main
//! thread). It turns the socket into [`Input`]s for the view model and sends the view model's
//! [`Request`]s, matching responses by id.
//!
//! * The socket path follows the `sayri` CLI's rules ([`sayri_client::paths::Paths`]) and the client is
//!   the CLI's ([`sayri_client::client::Client`]: `ready` greeting, `SO_PEERCRED` owner check).
//! * When no daemon runs at start, the orb runs `sayri ping` once ([`DaemonStarter`]), which
//!   starts the daemon in the background exactly as every CLI command does.
//! * When the connection is lost it reconnects with exponential backoff ([`backoff_ms`]),
//!   reporting [`LinkState::Reconnecting`]; it never starts a daemon again by itself (a daemon
//!   stopped with `sayri quit` stays stopped until the person starts one).
//! * Requests made while disconnected are answered at once with an error saying so.

use crate::view::{Input, LinkState, Request, Tag};
use sayri_client::client::{CONNECT_TIMEOUT, Client, ClientError};
use sayri_protocol::{ErrorCode, ProtocolError, ServerMessage};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// First retry delay after a lost connection, in milliseconds.
pub const BACKOFF_START_MS: u64 = 200;
/// Longest retry delay, in milliseconds.
pub const BACKOFF_MAX_MS: u64 = 5_000;
/// How long `sayri ping` may take to start the daemon.
pub const START_TIMEOUT: Duration = Duration::from_secs(15);

/// Delay before reconnect attempt `attempt` (1-based): 200 ms doubling up to 5 s.
pub fn backoff_ms(attempt: u32) -> u64 {
    let shift = attempt.saturating_sub(1).min(16);
    (BACKOFF_START_MS << shift).min(BACKOFF_MAX_MS)
}

/// How to start the daemon when none runs: a `sayri` command line (normally `sayri ping`,
/// whose autostart detaches the daemon and waits for it).
#[derive(Debug, Clone)]
pub struct DaemonStarter {
    /// Program to run.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Extra environment.
    pub envs: Vec<(OsString, OsString)>,
}

impl DaemonStarter {
    /// `sayri ping` with the `sayri` found by [`find_sayri`], if any.
    pub fn sayri_ping() -> Option<DaemonStarter> {
        Some(DaemonStarter {
            program: find_sayri()?,
            args: vec!["ping".into()],
            envs: Vec::new(),
        })
    }

    async fn run(&self) -> Result<(), String> {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let shown = std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect::<Vec<_>>()
            .join(" ");
        let out = tokio::time::timeout(START_TIMEOUT, cmd.output())
            .await
            .map_err(|_| {
                format!(
                    "`{shown}` did not finish within {} s",
                    START_TIMEOUT.as_secs()
                )
            })?
            .map_err(|e| format!("cannot run `{shown}`: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        Err(format!(
            "starting the daemon failed: {}",
            crate::safe_text::visible(last.trim())
        ))
    }
}

/// The `sayri` executable: `$SAYRI_BIN`, else `sayri` next to this program, else on `PATH`.
pub fn find_sayri() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SAYRI_BIN").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let sibling = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("sayri")))
        .filter(|p| p.is_file());
    sibling.or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|d| d.join("sayri"))
            .find(|p| p.is_file())
    })
}

/// Where and how to connect.
#[derive(Debug, Clone)]
pub struct LinkOptions {
    /// The daemon socket.
    pub socket: PathBuf,
    /// How to start the daemon when none runs at start; `None` = never start one.
    pub starter: Option<DaemonStarter>,
}

/// The UI's end of the link: send requests with [`LinkHandle::send`].
#[derive(Debug, Clone)]
pub struct LinkHandle {
    requests: async_channel::Sender<Request>,
}

impl LinkHandle {
    /// Queues `request`; its response arrives as [`Input::Response`]. Returns false when the
    /// link thread has ended.
    pub fn send(&self, request: Request) -> bool {
        self.requests.try_send(request).is_ok()
    }
}

/// Starts the link thread; inputs arrive on `to_ui`. The thread ends when `to_ui` is closed
/// and the handle is dropped.
pub fn spawn(
    options: LinkOptions,
    to_ui: async_channel::Sender<Input>,
) -> std::io::Result<LinkHandle> {
    let (tx, rx) = async_channel::unbounded::<Request>();
    std::thread::Builder::new()
        .name("sayri-orb-link".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = to_ui.try_send(Input::Link(LinkState::Reconnecting {
                        attempt: 0,
                        retry_in_ms: 0,
                        reason: format!("cannot start the connection thread: {e}"),
                    }));
                    return;
                }
            };
            rt.block_on(run(options, rx, to_ui));
        })?;
    Ok(LinkHandle { requests: tx })
}

fn not_connected() -> ProtocolError {
    ProtocolError::new(
        ErrorCode::Internal,
        "not connected to the Sayri daemon (reconnecting); try again in a moment",
    )
}

/// Answers every request with "not connected" until `wait` has passed.
async fn refuse_for(
    wait: Duration,
    requests: &async_channel::Receiver<Request>,
    to_ui: &async_channel::Sender<Input>,
) -> bool {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => return true,
            r = requests.recv() => match r {
                Ok(r) => {
                    if to_ui.send(Input::Response { tag: r.tag, result: Err(not_connected()) }).await.is_err() {
                        return false;
                    }
                }
                Err(_) => return false,
            },
        }
    }
}

async fn run(
    options: LinkOptions,
    requests: async_channel::Receiver<Request>,
    to_ui: async_channel::Sender<Input>,
) {
    let mut may_start = options.starter.is_some();
    let mut attempt: u32 = 0;
    loop {
        let reason = match Client::connect(&options.socket, CONNECT_TIMEOUT).await {
            Ok(client) => match client.ready_status() {
                Ok(info) => {
                    attempt = 0;
                    may_start = false;
                    if to_ui.send(Input::Ready(info)).await.is_err() {
                        return;
                    }
                    match serve(client, &requests, &to_ui).await {
                        Some(reason) => reason,
                        None => return,
                    }
                }
                // Another version of the daemon: say so and keep trying (it may be updated).
                Err(e) => crate::safe_text::visible(&e.to_string()).into_owned(),
            },
            Err(ClientError::NotRunning { .. }) if may_start => {
                may_start = false;
                if to_ui
                    .send(Input::Link(LinkState::StartingDaemon))
                    .await
                    .is_err()
                {
                    return;
                }
                let starter = options.starter.as_ref();
                match starter.map(DaemonStarter::run) {
                    Some(fut) => match fut.await {
                        Ok(()) => continue,
                        Err(e) => e,
                    },
                    None => continue,
                }
            }
            Err(ClientError::NotRunning { socket }) => not_running_reason(&socket),
            Err(e) => crate::safe_text::visible(&e.to_string()).into_owned(),
        };
        attempt = attempt.saturating_add(1);
        let retry_in_ms = backoff_ms(attempt);
        let state = LinkState::Reconnecting {
            attempt,
            retry_in_ms,
            reason,
        };
        if to_ui.send(Input::Link(state)).await.is_err() {
            return;
        }
        if !refuse_for(Duration::from_millis(retry_in_ms), &requests, &to_ui).await {
            return;
        }
    }
}

fn not_running_reason(socket: &Path) -> String {
    format!(
        "the Sayri daemon is not running (no listener on {}); start it with `sayri daemon`",
        socket.display()
    )
}

/// Serves one connection until it ends; returns why, or `None` when the UI has gone.
async fn serve(
    mut client: Client,
    requests: &async_channel::Receiver<Request>,
    to_ui: &async_channel::Sender<Input>,
) -> Option<String> {
    let mut pending: HashMap<u64, Tag> = HashMap::new();
    let reason = loop {
        tokio::select! {
            msg = client.next_message() => match msg {
                Ok(ServerMessage::Event(ev)) => {
                    if to_ui.send(Input::from_frame(&ev)).await.is_err() {
                        return None;
                    }
                }
                Ok(ServerMessage::Response(r)) => {
                    let tag = r.id().as_u64().and_then(|id| pending.remove(&id));
                    if let Some(tag) = tag {
                        let result = r.into_result();
                        if to_ui.send(Input::Response { tag, result }).await.is_err() {
                            return None;
                        }
                    }
                }
                Err(ClientError::Closed { .. }) => break "the daemon closed the connection".to_string(),
                Err(e) => break crate::safe_text::visible(&e.to_string()).into_owned(),
            },
            r = requests.recv() => match r {
                Ok(r) => {
                    let tag = r.tag.clone();
                    match client.send(r.command(), r.params).await {
                        Ok(id) => { pending.insert(id, tag); }
                        Err(e) => {
                            let _ = to_ui.send(Input::Response { tag, result: Err(not_connected()) }).await;
                            break crate::safe_text::visible(&e.to_string()).into_owned();
                        }
                    }
                }
                Err(_) => return None,
            },
        }
    };
    for (_, tag) in pending {
        let lost = ProtocolError::new(
            ErrorCode::Internal,
            "the connection to the daemon was lost before it answered; try again",
        );
        if to_ui
            .send(Input::Response {
                tag,
                result: Err(lost),
            })
            .await
            .is_err()
        {
            return None;
        }
    }
    Some(reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_200_ms_up_to_5_s() {
        let delays: Vec<u64> = (1..=8).map(backoff_ms).collect();
        assert_eq!(delays, vec![200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
        assert_eq!(backoff_ms(0), 200);
        assert_eq!(backoff_ms(u32::MAX), 5000);
    }
}
