//! The gateway's loop: long polling `getUpdates`, one worker per chat (a chat's messages are
//! answered in order, different chats at once), the typing indicator while a turn runs.
//!
//! * Polling errors back off 1 s, 2 s, 4 s … up to 60 s (a `409 Conflict` — another program
//!   polls the same bot — included); `429` waits `retry_after`; a refused token (`401`, `404`)
//!   ends the program with a message saying how to set a new one.
//! * Every update is acknowledged (the next `getUpdates` offset) once it is handed to its
//!   chat's worker, and once more on the way out, so a restart does not answer it twice.
//! * The daemon decides about every update; nothing is sent to a chat unless the daemon said
//!   so (`done` or `error`). `sendChatAction typing` starts only once the daemon has started a
//!   turn, so a stranger learns nothing from it.

use crate::bot_api::{ApiError, BotApi};
use crate::daemon::DaemonLink;
use crate::deliver::deliver;
use crate::updates::{ALLOWED_UPDATES, to_incoming};
use sayri_protocol::legacy::{GatewayReport, IncomingMessage, ReplyEvent};
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
const CHAT_QUEUE: usize = 32;

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
}

/// Shared by the poller and the chat workers.
struct Gateway {
    api: BotApi,
    daemon: DaemonLink,
    instance: String,
    typing_every: Duration,
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
    let gw = Arc::new(Gateway {
        api,
        daemon: DaemonLink {
            socket: s.socket.clone(),
        },
        instance: s.instance_id.clone(),
        typing_every: s.typing_every,
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
    chats: HashMap<String, mpsc::Sender<IncomingMessage>>,
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

    /// Hands an update to its chat's worker (starting one if needed).
    fn dispatch(&mut self, update: &Value) {
        let (msg, chat) = to_incoming(update, &self.gw.instance);
        let Some(chat) = chat else {
            // Nothing can be answered, but the daemon still sees (and ignores) it.
            let gw = self.gw.clone();
            tokio::spawn(async move {
                let _ = gw.daemon.send(&msg, |_| {}).await;
            });
            return;
        };
        let tx = match self.chats.get(&chat) {
            Some(tx) if !tx.is_closed() => tx.clone(),
            _ => {
                let (tx, rx) = mpsc::channel(CHAT_QUEUE);
                tokio::spawn(worker(self.gw.clone(), chat.clone(), rx));
                self.chats.insert(chat.clone(), tx.clone());
                self.chats.retain(|_, t| !t.is_closed());
                tx
            }
        };
        if tx.try_send(msg).is_err() {
            tracing::warn!("chat {chat}: too many messages waiting; one was dropped");
        }
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
async fn worker(gw: Arc<Gateway>, chat: String, mut rx: mpsc::Receiver<IncomingMessage>) {
    while let Ok(Some(msg)) = tokio::time::timeout(WORKER_IDLE, rx.recv()).await {
        answer(&gw, &chat, &msg).await;
    }
}

/// Renews the typing indicator while a turn runs. [`Typing::finish`] ends it: a
/// `sendChatAction` already under way completes first, so the indicator is sent at least once
/// for every turn that started, and never after the reply.
struct Typing(
    Option<(
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<()>,
    )>,
);

impl Typing {
    /// Stops the renewals and waits for the indicator in flight (at most its 10 s timeout).
    async fn finish(mut self) {
        if let Some((stop, task)) = self.0.take() {
            drop(stop);
            let _ = task.await;
        }
    }
}

impl Drop for Typing {
    fn drop(&mut self) {
        if let Some((_, task)) = self.0.take() {
            task.abort();
        }
    }
}

fn start_typing(gw: &Arc<Gateway>, chat: &str) -> Typing {
    let (gw, chat) = (gw.clone(), chat.to_string());
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        loop {
            let body = json!({"chat_id": chat, "action": "typing"});
            if let Err(e) = gw
                .api
                .call("sendChatAction", &body, Duration::from_secs(10))
                .await
            {
                tracing::debug!("sendChatAction to chat {chat}: {e}");
            }
            tokio::select! {
                _ = &mut stopped => break,
                () = tokio::time::sleep(gw.typing_every) => {}
            }
        }
    });
    Typing(Some((stop, task)))
}

/// Asks the daemon about one message and delivers what it says.
async fn answer(gw: &Arc<Gateway>, chat: &str, msg: &IncomingMessage) {
    let mut typing = Typing(None);
    let result = gw
        .daemon
        .send(msg, |ev| {
            if matches!(ev, ReplyEvent::Start { .. }) && typing.0.is_none() {
                typing = start_typing(gw, chat);
            }
        })
        .await;
    typing.finish().await;
    let text = match result {
        Ok(ReplyEvent::Done { text, .. }) => text,
        Ok(ReplyEvent::Error { error, .. }) => format!("⚠️ {error}"),
        Ok(ReplyEvent::Ignored { reason }) => {
            tracing::info!("chat {chat}: not answered ({reason})");
            return;
        }
        Ok(_) => return,
        Err(e) => {
            tracing::error!("chat {chat}: the message was not answered: {e}");
            return;
        }
    };
    if text.trim().is_empty() {
        return;
    }
    match deliver(&gw.api, chat, &text).await {
        Ok(parts) => tracing::info!("chat {chat}: reply delivered in {parts} message(s)"),
        Err(u) => {
            let error = format!(
                "a reply of {} message(s) to chat {chat} stopped after {}: {}",
                u.parts, u.delivered, u.error
            );
            tracing::error!("{error}");
            let report = GatewayReport {
                report: "delivery_failed".into(),
                chat_id: Some(chat.to_string()),
                error,
            };
            if let Err(e) = gw.daemon.report(&report).await {
                tracing::error!("the daemon could not be told: {e}");
            }
        }
    }
}
