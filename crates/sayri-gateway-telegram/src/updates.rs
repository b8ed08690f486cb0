//! Telegram updates as messages for the daemon: the raw facts only (kind, sender id, whether
//! it was sent on behalf of a chat, chat id and type, text). The gateway decides nothing: the
//! daemon authorises every update, so even edits, channel posts and button presses are passed
//! on (and ignored there).

use sayri_protocol::legacy::{IncomingMessage, UpdateKind};
use serde_json::Value;

/// The kinds of update the gateway asks Telegram for.
pub const ALLOWED_UPDATES: &[&str] = &[
    "message",
    "edited_message",
    "channel_post",
    "edited_channel_post",
    "callback_query",
];

fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// A display name for session titles: `@username`, else the first and last name.
fn author(from: &Value) -> String {
    if let Some(u) = from["username"].as_str() {
        return format!("@{u}");
    }
    let name = [from["first_name"].as_str(), from["last_name"].as_str()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    if name.is_empty() { "User".into() } else { name }
}

/// The update as a message for the daemon, and the chat to answer in (`None` when the update
/// names no chat: nothing can be answered, but it is still passed on).
pub fn to_incoming(update: &Value, instance_id: &str) -> (IncomingMessage, Option<String>) {
    let kinds = [
        ("message", UpdateKind::Message),
        ("edited_message", UpdateKind::EditedMessage),
        ("channel_post", UpdateKind::ChannelPost),
        ("edited_channel_post", UpdateKind::EditedChannelPost),
    ];
    let (kind, message, text) =
        if let Some((name, kind)) = kinds.iter().find(|(name, _)| update.get(*name).is_some()) {
            let m = &update[*name];
            let text = m["text"].as_str().or(m["caption"].as_str()).unwrap_or("");
            (*kind, m, text.to_string())
        } else if let Some(q) = update.get("callback_query") {
            let text = q["data"].as_str().unwrap_or("").to_string();
            (UpdateKind::CallbackQuery, q, text)
        } else {
            (UpdateKind::Other, &Value::Null, String::new())
        };
    let chat = if kind == UpdateKind::CallbackQuery {
        &message["message"]["chat"]
    } else {
        &message["chat"]
    };
    let from = &message["from"];
    let chat_id = id_text(&chat["id"]);
    let msg = IncomingMessage {
        text,
        author: author(from),
        instance_id: Some(instance_id.to_string()),
        update: kind,
        sender_id: id_text(&from["id"]),
        sender_chat_id: id_text(&message["sender_chat"]["id"]),
        sender_is_bot: from["is_bot"].as_bool().unwrap_or(false),
        chat_id: chat_id.clone(),
        chat_type: chat["type"].as_str().map(str::to_string),
        ..IncomingMessage::default()
    };
    (msg, chat_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_private_message() {
        let u = json!({"update_id": 1, "message": {"message_id": 5, "date": 0,
            "from": {"id": 1001, "is_bot": false, "first_name": "Ada", "username": "ada"},
            "chat": {"id": 1001, "type": "private"}, "text": "hi"}});
        let (m, chat) = to_incoming(&u, "home");
        assert_eq!(chat.as_deref(), Some("1001"));
        assert_eq!(m.sender_id.as_deref(), Some("1001"));
        assert_eq!(m.author, "@ada");
        assert_eq!(m.update, UpdateKind::Message);
        assert_eq!(m.chat_type.as_deref(), Some("private"));
    }

    #[test]
    fn a_forward_is_authorised_by_its_sender_not_its_origin() {
        let u = json!({"update_id": 2, "message": {"message_id": 6, "date": 0,
            "from": {"id": 666, "is_bot": false, "first_name": "Eve"},
            "forward_origin": {"type": "user", "date": 0,
                "sender_user": {"id": 1001, "is_bot": false, "first_name": "Ada"}},
            "chat": {"id": 666, "type": "private"}, "text": "run rm -rf ~"}});
        let (m, _) = to_incoming(&u, "home");
        assert_eq!(m.sender_id.as_deref(), Some("666"));
    }

    #[test]
    fn anonymous_admins_channel_posts_and_buttons() {
        let u = json!({"update_id": 3, "message": {"message_id": 7, "date": 0,
            "from": {"id": 1087968824, "is_bot": true, "first_name": "Group"},
            "sender_chat": {"id": -100, "type": "supergroup"},
            "chat": {"id": -100, "type": "supergroup"}, "text": "hi"}});
        let (m, _) = to_incoming(&u, "home");
        assert_eq!(m.sender_chat_id.as_deref(), Some("-100"));
        let u = json!({"update_id": 4, "channel_post": {"message_id": 8, "date": 0,
            "chat": {"id": -200, "type": "channel"}, "text": "news"}});
        let (m, chat) = to_incoming(&u, "home");
        assert_eq!((m.update, m.sender_id), (UpdateKind::ChannelPost, None));
        assert_eq!(chat.as_deref(), Some("-200"));
        let u = json!({"update_id": 5, "callback_query": {"id": "q", "data": "allow",
            "from": {"id": 1001, "is_bot": false, "first_name": "Ada"},
            "message": {"message_id": 9, "date": 0, "chat": {"id": 1001, "type": "private"}}}});
        let (m, chat) = to_incoming(&u, "home");
        assert_eq!(m.update, UpdateKind::CallbackQuery);
        assert_eq!(chat.as_deref(), Some("1001"));
    }
}
