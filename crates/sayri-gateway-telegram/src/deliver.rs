//! Delivering an answer to a chat: Markdown to text and entities, split at Telegram's limit,
//! one `sendMessage` per part, in order.
//!
//! * A part Telegram refuses for its formatting is sent once more as plain text (no entities);
//!   that is the only retry of a refused message.
//! * `429 Too Many Requests` waits `retry_after` seconds (at most [`MAX_RETRY_AFTER`]) and sends
//!   the same part again, up to [`RATE_LIMIT_TRIES`] times; a transport error is retried after
//!   1 s and 2 s.
//! * Every refused call is logged with its HTTP status, Telegram's description and the text's
//!   length. When a part cannot be delivered, the rest is not sent (it would make no sense
//!   alone); the chat gets a short plain notice instead, and the daemon is told, so the person
//!   at the desktop sees that the reply did not arrive.

use crate::bot_api::{ApiError, BotApi};
use crate::format::{self, Formatted};
use crate::split::{LIMIT, split};
use serde_json::{Value, json};
use std::time::Duration;

/// Longest wait honoured for a `retry_after`, in seconds.
pub const MAX_RETRY_AFTER: u64 = 120;
/// Sends of one part answered `429` before it counts as undeliverable.
pub const RATE_LIMIT_TRIES: usize = 5;
const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a reply was not delivered in full.
#[derive(Debug, Clone, PartialEq)]
pub struct Undelivered {
    /// Parts delivered before the failure.
    pub delivered: usize,
    /// Parts in the reply.
    pub parts: usize,
    /// What Telegram (or the network) said.
    pub error: String,
}

fn body(chat_id: &str, part: &Formatted, with_entities: bool) -> Value {
    let mut b = json!({
        "chat_id": chat_id,
        "text": part.text,
        "link_preview_options": {"is_disabled": true},
    });
    if with_entities && !part.entities.is_empty() {
        b["entities"] = part.entities.iter().map(|e| e.to_json()).collect();
    }
    b
}

fn log_refusal(chat_id: &str, part: &Formatted, e: &ApiError, plain: bool) {
    tracing::error!(
        "sendMessage to chat {chat_id} failed ({}): {e}; text length {} UTF-16 units, {} bytes",
        if plain { "plain text" } else { "formatted" },
        part.len_utf16(),
        part.text.len()
    );
}

/// Sends one message, retrying on `429` and transport errors (see the module rules).
async fn send_once(api: &BotApi, chat_id: &str, b: &Value) -> Result<(), ApiError> {
    let mut rate_limited = 0;
    let mut transport_failures = 0;
    loop {
        match api.call("sendMessage", b, SEND_TIMEOUT).await {
            Ok(_) => return Ok(()),
            Err(ApiError::Refused {
                status: 429,
                retry_after,
                ..
            }) if rate_limited + 1 < RATE_LIMIT_TRIES => {
                rate_limited += 1;
                let wait = retry_after.unwrap_or(1).clamp(1, MAX_RETRY_AFTER);
                tracing::warn!("sendMessage to chat {chat_id}: rate limited, retrying in {wait} s");
                tokio::time::sleep(Duration::from_secs(wait)).await;
            }
            Err(ApiError::Transport(e)) if transport_failures < 2 => {
                transport_failures += 1;
                tracing::warn!("sendMessage to chat {chat_id}: {e}; retrying");
                tokio::time::sleep(Duration::from_secs(transport_failures as u64)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Sends one part: formatted, then once as plain text if the formatting was refused.
async fn send_part(api: &BotApi, chat_id: &str, part: &Formatted) -> Result<(), ApiError> {
    let formatted = !part.entities.is_empty();
    match send_once(api, chat_id, &body(chat_id, part, formatted)).await {
        Ok(()) => Ok(()),
        Err(e) if formatted && e.is_formatting() => {
            log_refusal(chat_id, part, &e, false);
            tracing::warn!("sendMessage to chat {chat_id}: sending the part again as plain text");
            send_once(api, chat_id, &body(chat_id, part, false))
                .await
                .inspect_err(|e| log_refusal(chat_id, part, e, true))
        }
        Err(e) => {
            log_refusal(chat_id, part, &e, !formatted);
            Err(e)
        }
    }
}

/// The short plain notice a chat gets when a reply could not be delivered (under 200
/// characters whatever Telegram said).
pub fn notice(error: &str) -> String {
    let why: String = error.chars().take(60).collect();
    format!(
        "⚠️ My reply could not be delivered here ({why}). It is kept in Sayri's history on the computer."
    )
}

/// Delivers `markdown` to `chat_id` (see the module rules).
///
/// # Errors
/// What stopped it, after the notice was attempted.
pub async fn deliver(api: &BotApi, chat_id: &str, markdown: &str) -> Result<usize, Undelivered> {
    let parts = split(&format::markdown(markdown), LIMIT);
    for (i, part) in parts.iter().enumerate() {
        if let Err(e) = send_part(api, chat_id, part).await {
            let error = e.to_string();
            let short = match &e {
                ApiError::Refused { description, .. } => description.clone(),
                ApiError::Transport(_) => "no connection to Telegram".into(),
            };
            let n = Formatted::plain(notice(&short));
            if let Err(e2) = send_once(api, chat_id, &body(chat_id, &n, false)).await {
                log_refusal(chat_id, &n, &e2, true);
            }
            return Err(Undelivered {
                delivered: i,
                parts: parts.len(),
                error,
            });
        }
    }
    Ok(parts.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_is_short_whatever_telegram_said() {
        let n = notice(&"Bad Request: message is too long ".repeat(20));
        assert!(n.chars().count() < 200, "{}", n.chars().count());
        assert!(n.contains("Bad Request: message is too long"));
    }
}
