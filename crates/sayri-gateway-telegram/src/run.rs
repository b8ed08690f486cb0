//! The gateway's loop: long polling `getUpdates`, one worker per chat (a chat's messages are
//! answered in order, different chats at once), and the outbox that carries every update to
//! its delivered reply across restarts.
//!
//! * Polling errors back off 1 s, 2 s, 4 s … up to 60 s (a `409 Conflict` — another program
//!   polls the same bot — included); `429` waits `retry_after`; a refused token (`401`, `404`)
//!   ends the program with a message saying how to set a new one.
//! * An update that names a chat is written to the outbox ([`crate::outbox`]) before it is
//!   acknowledged (the next `getUpdates` offset), then handed to its chat's worker
//!   ([`crate::delivery`]). At start, what a previous run left in the outbox is worked off
//!   first, in order.
//! * The daemon decides about every update; nothing is sent to a chat unless the daemon said
//!   so (`done` or `error`). `sendChatAction typing` starts only once the daemon has started a
//!   turn, so a stranger learns nothing from it.

use crate::bot_api::{ApiError, BotApi};
use crate::daemon::DaemonLink;
use crate::outbox::{Entry, Outbox};
use crate::updates::{ALLOWED_UPDATES, to_incoming};
use sayri_protocol::legacy::GatewayReport;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Longest pause between polls after errors.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A chat worker with nothing to do for this long ends.
const WORKER_IDLE: Duration = Duration::from_secs(600);
/// Messages of one chat waiting for their turn; more are dropped (and logged).
const CHAT_QUEUE: usize = 1024;

/// Everything the gateway needs to run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Bot API base URL.
    pub api_base: String,
    /// The bot token (from the environment).
    pub token: String,
    /// The daemon's legacy socket.
    pub socket: PathBuf,
    /// The instance this gateway runs as.
    pub instance_id: String,
    /// Long-poll timeout in seconds.
    pub poll_timeout: u64,
    /// How often the typing indicator is renewed while a turn runs.
    pub typing_every: Duration,
    /// Where the outbox lives (`None`: in memory only).
    pub state_dir: Option<PathBuf>,
}

/// Shared by the poller and the chat workers.
pub(crate) struct Gateway {
    pub(crate) api: BotApi,
    pub(crate) daemon: DaemonLink,
    pub(crate) instance: String,
    pub(crate) typing_every: Duration,
    pub(crate) outbox: Outbox,
    /// The outbox's latest summary, for the reporter task.
    outbox_state: tokio::sync::watch::Sender<(u64, Option<f64>)>,
}

impl Gateway {
    /// Tells the reporter task that the outbox changed.
    pub(crate) fn outbox_changed(&self) {
        self.outbox_state.send_replace(self.outbox.summary());
    }
}

/// Reports the outbox's state to the daemon whenever it changes (the latest state only).
async fn report_outbox(
    daemon: DaemonLink,
    mut rx: tokio::sync::watch::Receiver<(u64, Option<f64>)>,
) {
    let mut last = None;
    loop {
        let now = *rx.borrow_and_update();
        if last != Some(now) {
            let report = GatewayReport {
                report: "outbox".into(),
                chat_id: None,
                error: String::new(),
                pending: Some(now.0),
                next_retry_at: now.1,
            };
            if let Err(e) = daemon.report(&report).await {
                tracing::debug!("the outbox state was not reported: {e}");
            }
            last = Some(now);
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}

/// Why the gateway stopped on its own.
#[derive(Debug)]
pub struct Fatal(pub String);

/// Runs until `SIGTERM`/`SIGINT` (then `Ok`) or a fatal error (a refused token).
///
/// # Errors
/// [`Fatal`] with the reason.
pub async fn run(s: Settings) -> Result<(), Fatal> {
    let api = BotApi::new(&s.api_base, &s.token).map_err(Fatal)?;
    let (outbox, notes) = Outbox::open(s.state_dir.clone());
    for n in notes {
        tracing::warn!("{n}");
    }
    if s.state_dir.is_none() {
        tracing::warn!(
            "SAYRI_GATEWAY_STATE_DIR is not set: replies waiting for delivery are lost if this program stops"
        );
    }
    let daemon = DaemonLink {
        socket: s.socket.clone(),
    };
    let (outbox_state, outbox_rx) = tokio::sync::watch::channel(outbox.summary());
    tokio::spawn(report_outbox(daemon.clone(), outbox_rx));
    let gw = Arc::new(Gateway {
        api,
        daemon,
        instance: s.instance_id.clone(),
        typing_every: s.typing_every,
        outbox,
        outbox_state,
    });
    match gw
        .api
        .call("getMe", &json!({}), Duration::from_secs(30))
        .await
    {
        Ok(me) => tracing::info!(
            "gateway {}: polling Telegram as @{}",
            s.instance_id,
            me["username"].as_str().unwrap_or("?")
        ),
        Err(e) if token_refused(&e) => return Err(refused_token(&s.instance_id, &e)),
        Err(e) => tracing::warn!("getMe failed ({e}); polling anyway"),
    }
    let mut term = signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut int = signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut poller = Poller {
        gw: gw.clone(),
        offset: None,
        backoff: Duration::from_secs(1),
        chats: HashMap::new(),
        poll_timeout: s.poll_timeout,
    };
    poller.resume();
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = int.recv() => break,
            r = poller.poll() => r?,
        }
    }
    tracing::info!("gateway {}: stopping", s.instance_id);
    poller.acknowledge().await;
    Ok(())
}

fn signal(kind: tokio::signal::unix::SignalKind) -> Result<tokio::signal::unix::Signal, Fatal> {
    tokio::signal::unix::signal(kind).map_err(|e| Fatal(format!("cannot handle signals: {e}")))
}

fn token_refused(e: &ApiError) -> bool {
    matches!(e.status(), Some(401 | 404))
}

fn refused_token(instance: &str, e: &ApiError) -> Fatal {
    Fatal(format!(
        "Telegram refused the bot token ({e}); set the right one with `sayri gateway edit {instance} --token`"
    ))
}

struct Poller {
    gw: Arc<Gateway>,
    offset: Option<i64>,
    backoff: Duration,
    chats: HashMap<String, mpsc::Sender<i64>>,
    poll_timeout: u64,
}

impl Poller {
    /// One `getUpdates` and what follows from it.
    async fn poll(&mut self) -> Result<(), Fatal> {
        let body = json!({
            "offset": self.offset,
            "timeout": self.poll_timeout,
            "allowed_updates": ALLOWED_UPDATES,
        });
        let wait = Duration::from_secs(self.poll_timeout + 15);
        match self.gw.api.call("getUpdates", &body, wait).await {
            Ok(Value::Array(updates)) => {
                self.backoff = Duration::from_secs(1);
                for u in updates {
                    if let Some(id) = u["update_id"].as_i64() {
                        self.offset = Some(id + 1);
                    }
                    self.dispatch(&u);
                }
            }
            Ok(other) => {
                tracing::warn!("getUpdates answered {} instead of a list", kind_of(&other));
                self.pause().await;
            }
            Err(e) if token_refused(&e) => return Err(refused_token(&self.gw.instance, &e)),
            Err(ApiError::Refused {
                status: 429,
                retry_after,
                ..
            }) => {
                let wait = retry_after.unwrap_or(5).clamp(1, 300);
                tracing::warn!("getUpdates: rate limited; waiting {wait} s");
                tokio::time::sleep(Duration::from_secs(wait)).await;
            }
            Err(e) => {
                if e.status() == Some(409) {
                    tracing::warn!(
                        "getUpdates: another program is receiving this bot's updates ({e}); stop it, or it and this gateway keep taking turns"
                    );
                } else {
                    tracing::warn!("getUpdates failed: {e}");
                }
                self.pause().await;
            }
        }
        Ok(())
    }

    async fn pause(&mut self) {
        tracing::info!("polling again in {} s", self.backoff.as_secs());
        tokio::time::sleep(self.backoff).await;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    /// Confirms the updates received so far (a `getUpdates` with the next offset, no wait).
    async fn acknowledge(&self) {
        if self.offset.is_some() {
            let body = json!({"offset": self.offset, "timeout": 0, "limit": 1});
            let _ = self
                .gw
                .api
                .call("getUpdates", &body, Duration::from_secs(5))
                .await;
        }
    }

    /// Hands what a previous run left in the outbox to the chats' workers, in order.
    fn resume(&mut self) {
        let left = self.gw.outbox.entries();
        if !left.is_empty() {
            tracing::info!(
                "gateway {}: {} update(s) left by the previous run are answered first",
                self.gw.instance,
                left.len()
            );
        }
        for e in left {
            self.queue(&e.chat_id, e.update_id);
        }
        self.gw.outbox_changed();
    }

    /// The worker of `chat` (started if needed) gets `update_id`.
    fn queue(&mut self, chat: &str, update_id: i64) {
        let tx = match self.chats.get(chat) {
            Some(tx) if !tx.is_closed() => tx.clone(),
            _ => {
                let (tx, rx) = mpsc::channel(CHAT_QUEUE);
                tokio::spawn(worker(self.gw.clone(), chat.to_string(), rx));
                self.chats.insert(chat.to_string(), tx.clone());
                self.chats.retain(|_, t| !t.is_closed());
                tx
            }
        };
        if tx.try_send(update_id).is_err() {
            tracing::warn!("chat {chat}: too many messages waiting; one was dropped");
            self.gw.outbox.remove(update_id);
        }
    }

    /// Writes an update to the outbox and hands it to its chat's worker (see the module rules).
    fn dispatch(&mut self, update: &Value) {
        let (mut msg, chat) = to_incoming(update, &self.gw.instance);
        let (Some(chat), Some(update_id)) = (chat, update["update_id"].as_i64()) else {
            // Nothing can be answered, but the daemon still sees (and ignores) it.
            let gw = self.gw.clone();
            tokio::spawn(async move {
                let _ = gw.daemon.send(&msg, |_| {}).await;
            });
            return;
        };
        if self.gw.outbox.contains(update_id) {
            return; // Telegram sent it again; it is already on its way
        }
        msg.update_id = Some(update_id.to_string());
        let entry = Entry {
            update_id,
            chat_id: chat.clone(),
            message: msg,
            reply: None,
            parts_delivered: 0,
            attempts: 0,
            next_attempt_at: None,
            last_error: None,
        };
        if let Err(e) = self.gw.outbox.put(&entry) {
            tracing::error!(
                "chat {chat}: {e}; the message is answered, but would be lost if the gateway stopped now"
            );
        }
        self.gw.outbox_changed();
        self.queue(&chat, update_id);
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Answers the messages of one chat in order.
async fn worker(gw: Arc<Gateway>, chat: String, mut rx: mpsc::Receiver<i64>) {
    while let Ok(Some(update_id)) = tokio::time::timeout(WORKER_IDLE, rx.recv()).await {
        crate::delivery::work_off(&gw, &chat, update_id).await;
    }
}
