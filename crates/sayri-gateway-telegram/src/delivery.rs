//! Working off the outbox, one chat at a time: ask the daemon about an update (unless its reply
//! is already known), then deliver the reply part by part, waiting out rate limits and failures
//! by the rules of [`crate::retry`], and keeping every step in the [`crate::outbox`] so that a
//! restart goes on where the last run stopped.
//!
//! * The daemon unreachable (it restarts): the update is asked again after 1 s, 2 s … 60 s.
//! * A reply given up is reported to the daemon (`delivery_failed`: an `error` event and the
//!   instance's `last_delivery_error`) — never dropped silently.
//! * Every change of the outbox is reported too (`outbox`: how many replies wait and when the
//!   next attempt is due), for `sayri gateway list`.

use crate::deliver::{deliver_from, send_notice};
use crate::outbox::Entry;
use crate::retry::{self, Next};
use crate::run::Gateway;
use sayri_protocol::legacy::{GatewayReport, ReplyEvent};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Longest pause between two attempts to reach the daemon.
const DAEMON_BACKOFF: Duration = Duration::from_secs(60);

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
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

/// Stores `e`; a failure is logged (the entry then lives in memory only).
fn save(gw: &Gateway, e: &Entry) {
    if let Err(err) = gw.outbox.put(e) {
        tracing::error!(
            "chat {}: {err}; the reply would be lost if the gateway stopped now",
            e.chat_id
        );
    }
    gw.outbox_changed();
}

/// Handles the outbox entry of `update_id` to its end (delivered, nothing to say, or lost).
pub(crate) async fn work_off(gw: &Arc<Gateway>, chat: &str, update_id: i64) {
    let Some(mut entry) = gw.outbox.get(update_id) else {
        return;
    };
    if entry.reply.is_none() {
        match ask(gw, chat, &entry).await {
            Some(text) => {
                entry.reply = Some(text);
                save(gw, &entry);
            }
            None => {
                gw.outbox.remove(update_id);
                gw.outbox_changed();
                return;
            }
        }
    }
    deliver_entry(gw, chat, entry).await;
}

/// The daemon's reply to the entry's message (`None`: nothing is to be sent). Waits for the
/// daemon while it cannot be reached.
async fn ask(gw: &Arc<Gateway>, chat: &str, entry: &Entry) -> Option<String> {
    let mut wait = Duration::from_secs(1);
    loop {
        let mut typing = Typing(None);
        let result = gw
            .daemon
            .send(&entry.message, |ev| {
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
                return None;
            }
            Ok(_) => return None,
            Err(e) => {
                tracing::warn!(
                    "chat {chat}: cannot ask the daemon ({e}); asking again in {} s",
                    wait.as_secs()
                );
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(DAEMON_BACKOFF);
                continue;
            }
        };
        return Some(text).filter(|t| !t.trim().is_empty());
    }
}

/// Delivers the entry's reply, from its first part not yet delivered (see the module rules).
async fn deliver_entry(gw: &Arc<Gateway>, chat: &str, mut entry: Entry) {
    let reply = entry.reply.clone().unwrap_or_default();
    loop {
        if let Some(at) = entry.next_attempt_at {
            let wait = at - now();
            if wait > 0.0 {
                tokio::time::sleep(Duration::from_secs_f64(wait)).await;
            }
        }
        let from = entry.parts_delivered;
        let result = deliver_from(&gw.api, chat, &reply, from, |n| {
            entry.parts_delivered = n;
            save(gw, &entry);
        })
        .await;
        let (u, e) = match result {
            Ok(parts) => {
                tracing::info!("chat {chat}: reply delivered in {parts} message(s)");
                gw.outbox.remove(entry.update_id);
                gw.outbox_changed();
                return;
            }
            Err(failure) => failure,
        };
        entry.attempts += 1;
        entry.last_error = Some(u.error.clone());
        match retry::next(&e, entry.attempts) {
            Next::RetryIn(d) => {
                entry.next_attempt_at = Some(now() + d.as_secs_f64());
                tracing::warn!(
                    "chat {chat}: part {} of {} not sent ({}); trying again in {} s (attempt {} of {})",
                    u.delivered + 1,
                    u.parts,
                    u.error,
                    d.as_secs(),
                    entry.attempts + 1,
                    retry::MAX_ATTEMPTS
                );
                save(gw, &entry);
            }
            Next::GiveUp => {
                give_up(gw, chat, &entry, &u, &e).await;
                return;
            }
        }
    }
}

/// A reply that cannot be delivered: a notice where allowed, the daemon told, the entry gone.
async fn give_up(
    gw: &Arc<Gateway>,
    chat: &str,
    entry: &Entry,
    u: &crate::deliver::Undelivered,
    e: &crate::bot_api::ApiError,
) {
    send_notice(&gw.api, chat, e).await;
    let error = format!(
        "a reply of {} message(s) to chat {chat} stopped after {} ({} attempt(s)): {}",
        u.parts, u.delivered, entry.attempts, u.error
    );
    tracing::error!("{error}");
    let report = GatewayReport {
        report: "delivery_failed".into(),
        chat_id: Some(chat.to_string()),
        error,
        pending: None,
        next_retry_at: None,
    };
    if let Err(e) = gw.daemon.report(&report).await {
        tracing::error!("the daemon could not be told: {e}");
    }
    gw.outbox.remove(entry.update_id);
    gw.outbox_changed();
}
