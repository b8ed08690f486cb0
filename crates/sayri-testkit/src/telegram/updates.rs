//! Telegram updates as the Bot API delivers them, for [`super::BotApiServer::push_update`].
//! The `update_id` is set by the server; message ids count up.

use serde_json::{Value, json};
use std::sync::atomic::{AtomicI64, Ordering};

static MESSAGE_ID: AtomicI64 = AtomicI64::new(1);

fn next_id() -> i64 {
    MESSAGE_ID.fetch_add(1, Ordering::Relaxed)
}

fn user(id: i64, name: &str) -> Value {
    json!({"id": id, "is_bot": false, "first_name": name,
           "username": name.to_lowercase()})
}

fn message(from: Value, chat: Value, text: &str) -> Value {
    json!({"message_id": next_id(), "date": 1767225600, "from": from, "chat": chat,
           "text": text})
}

/// A text message from user `user_id` in their private chat with the bot.
pub fn private_message(user_id: i64, name: &str, text: &str) -> Value {
    json!({"message": message(
        user(user_id, name),
        json!({"id": user_id, "type": "private", "first_name": name}),
        text,
    )})
}

/// A text message from user `user_id` in group chat `group_id` (a supergroup).
pub fn group_message(group_id: i64, user_id: i64, name: &str, text: &str) -> Value {
    json!({"message": message(
        user(user_id, name),
        json!({"id": group_id, "type": "supergroup", "title": "A group"}),
        text,
    )})
}

/// An edit of a private message of user `user_id`.
pub fn edited_private_message(user_id: i64, name: &str, text: &str) -> Value {
    let mut m = message(
        user(user_id, name),
        json!({"id": user_id, "type": "private", "first_name": name}),
        text,
    );
    m["edit_date"] = json!(1767225660);
    json!({"edited_message": m})
}

/// A post in channel `channel_id` (no sender).
pub fn channel_post(channel_id: i64, text: &str) -> Value {
    json!({"channel_post": {"message_id": next_id(), "date": 1767225600,
        "sender_chat": {"id": channel_id, "type": "channel", "title": "A channel"},
        "chat": {"id": channel_id, "type": "channel", "title": "A channel"}, "text": text}})
}

/// A message user `user_id` forwarded to the bot privately, originally written by user
/// `origin_id`.
pub fn forwarded_message(
    user_id: i64,
    name: &str,
    origin_id: i64,
    origin: &str,
    text: &str,
) -> Value {
    let mut m = message(
        user(user_id, name),
        json!({"id": user_id, "type": "private", "first_name": name}),
        text,
    );
    m["forward_origin"] = json!({"type": "user", "date": 1767225000,
                                 "sender_user": user(origin_id, origin)});
    json!({"message": m})
}

/// A message an anonymous administrator sent in group `group_id` (on behalf of the group).
pub fn anonymous_admin_message(group_id: i64, text: &str) -> Value {
    let mut m = message(
        json!({"id": 1087968824, "is_bot": true, "first_name": "Group",
               "username": "GroupAnonymousBot"}),
        json!({"id": group_id, "type": "supergroup", "title": "A group"}),
        text,
    );
    m["sender_chat"] = json!({"id": group_id, "type": "supergroup", "title": "A group"});
    json!({"message": m})
}

/// A press by user `user_id` on an inline button carrying `data`, under a message of the bot
/// in their private chat.
pub fn callback_query(user_id: i64, name: &str, data: &str) -> Value {
    json!({"callback_query": {"id": format!("cb{}", next_id()), "from": user(user_id, name),
        "chat_instance": "1", "data": data,
        "message": {"message_id": next_id(), "date": 1767225600,
                    "chat": {"id": user_id, "type": "private", "first_name": name},
                    "text": "A permission question"}}})
}
