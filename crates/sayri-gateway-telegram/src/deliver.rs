//! Sending an answer to a chat: Markdown to text and entities, split at Telegram's limit,
//! one `sendMessage` per part, in order. This file makes one attempt; when to try again, and
//! when a reply counts as lost, is decided in [`crate::retry`] and carried out by
//! [`crate::delivery`].
//!
//! * A part Telegram refuses for its formatting is sent once more as plain text (no entities)
//!   right away; that is the only immediate second send.
//! * Every refused call is logged with its HTTP status, Telegram's description and the text's
//!   length. When a part cannot be sent, the rest waits: a reply is delivered in order or not
//!   at all after the part that failed.
//! * A reply that is given up gets a short plain notice in the chat — unless the chat is rate
//!   limited (the notice would only deepen the limit) — and the daemon is told, so the person
//!   at the desktop sees that it did not arrive.

use crate::bot_api::{ApiError, BotApi};
use crate::format::{self, Formatted};
use crate::split::{LIMIT, split};
use serde_json::{Value, json};
use std::time::Duration;

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

/// Sends one message, once.
async fn send_once(api: &BotApi, b: &Value) -> Result<(), ApiError> {
    api.call("sendMessage", b, SEND_TIMEOUT).await.map(|_| ())
}

/// Sends one part: formatted, then once as plain text if the formatting was refused.
pub async fn send_part(api: &BotApi, chat_id: &str, part: &Formatted) -> Result<(), ApiError> {
    let formatted = !part.entities.is_empty();
    match send_once(api, &body(chat_id, part, formatted)).await {
        Ok(()) => Ok(()),
        Err(e) if formatted && e.is_formatting() => {
            log_refusal(chat_id, part, &e, false);
            tracing::warn!("sendMessage to chat {chat_id}: sending the part again as plain text");
            send_once(api, &body(chat_id, part, false))
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

/// The parts of `markdown` as they are sent.
pub fn parts_of(markdown: &str) -> Vec<Formatted> {
    split(&format::markdown(markdown), LIMIT)
}

/// Sends the parts of `markdown` from part `from` on, once each; `on_sent(n)` is called after
/// each part Telegram accepted with the number delivered so far.
///
/// # Errors
/// The first part that could not be sent: [`Undelivered`] with the count delivered before it,
/// and the error in [`Undelivered::error`] (its [`ApiError`] in the second field).
pub async fn deliver_from(
    api: &BotApi,
    chat_id: &str,
    markdown: &str,
    from: usize,
    mut on_sent: impl FnMut(usize),
) -> Result<usize, (Undelivered, ApiError)> {
    let parts = parts_of(markdown);
    for (i, part) in parts.iter().enumerate().skip(from) {
        if let Err(e) = send_part(api, chat_id, part).await {
            let u = Undelivered {
                delivered: i,
                parts: parts.len(),
                error: e.to_string(),
            };
            return Err((u, e));
        }
        on_sent(i + 1);
    }
    Ok(parts.len())
}

/// Tells the chat that a reply was given up because of `e` — unless `e` says the chat is
/// rate limited (nothing more may be sent there then).
pub async fn send_notice(api: &BotApi, chat_id: &str, e: &ApiError) {
    if crate::retry::is_rate_limit(e) {
        tracing::warn!("chat {chat_id} is rate limited: no notice is sent there");
        return;
    }
    let short = match e {
        ApiError::Refused { description, .. } => description.clone(),
        ApiError::Transport(_) => "no connection to Telegram".into(),
    };
    let n = Formatted::plain(notice(&short));
    if let Err(e2) = send_once(api, &body(chat_id, &n, false)).await {
        log_refusal(chat_id, &n, &e2, true);
    }
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
