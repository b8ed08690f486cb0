//! Who a gateway instance answers: the one decision taken for every update a gateway passes
//! on, before any session, agent or model work.
//!
//! The decision uses only the facts of the update — its kind, the sender's id, whether it was
//! sent on behalf of a chat, the chat's id and type — and whether that sender id is paired with
//! the instance. It never uses the display name, a forwarded message's origin or anything the
//! text claims. In order ([`decide`]):
//!
//! 1. Only new messages are read: edited messages, channel posts and button presses are
//!    ignored (so a button can never answer a permission question).
//! 2. Updates without a person behind them are ignored: channel posts, messages sent on behalf
//!    of a chat (anonymous group admins, linked channels), a missing sender id, bots, chats of
//!    unknown type.
//! 3. Group chats: ignored unless the instance names the group; there, only paired senders are
//!    answered, and pairing is refused (it needs a private chat, where nobody reads the PIN
//!    over the sender's shoulder). Nothing else is said in a group.
//! 4. Private chats: `/pair PIN` from an unpaired sender is a pairing attempt; any other
//!    message from an unpaired sender is refused (the caller says so at most once per hour,
//!    see [`super::limits::ReplyLimiter`]).
//! 5. A paired sender's `/new`, `/agent`, `/help` are chat commands; a message without text is
//!    answered that only text is read; everything else is a turn.

use super::instance::GatewayInstance;
use sayri_protocol::legacy::{IncomingMessage, UpdateKind};

/// The kind of chat an update comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatKind {
    /// A one-to-one chat with the bot.
    Private,
    /// A group or supergroup.
    Group,
    /// A broadcast channel.
    Channel,
    /// Missing or not known.
    Unknown,
}

impl ChatKind {
    /// From the wire's `chat_type`.
    pub fn parse(chat_type: Option<&str>) -> ChatKind {
        match chat_type {
            Some("private") => ChatKind::Private,
            Some("group" | "supergroup") => ChatKind::Group,
            Some("channel") => ChatKind::Channel,
            _ => ChatKind::Unknown,
        }
    }
}

/// A command written in a chat (`/name[@bot] args`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatCommand {
    /// `/pair PIN` — the digits of the PIN (spaces and dashes removed).
    Pair(String),
    /// `/new` — start a new conversation in this chat.
    New,
    /// `/agent` (list) or `/agent ID` (switch this chat to that agent).
    Agent(Option<String>),
    /// `/help` or `/start`.
    Help,
}

impl ChatCommand {
    /// The command's name, for logs and the `done` event.
    pub fn name(&self) -> &'static str {
        match self {
            ChatCommand::Pair(_) => "pair",
            ChatCommand::New => "new",
            ChatCommand::Agent(_) => "agent",
            ChatCommand::Help => "help",
        }
    }
}

/// The chat command in `text`, if it is one. Other `/words` are not commands: they go to the
/// model like any text.
pub fn chat_command(text: &str) -> Option<ChatCommand> {
    let text = text.trim();
    let rest = text.strip_prefix('/')?;
    let (head, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let name = head.split('@').next().unwrap_or("").to_ascii_lowercase();
    let args = args.trim();
    Some(match name.as_str() {
        "pair" => ChatCommand::Pair(args.chars().filter(|c| !matches!(c, ' ' | '-')).collect()),
        "new" => ChatCommand::New,
        "agent" => ChatCommand::Agent(Some(args.to_string()).filter(|a| !a.is_empty())),
        "help" | "start" => ChatCommand::Help,
        _ => return None,
    })
}

/// The facts of one update, as the decision sees them.
#[derive(Debug, Clone, Copy)]
pub struct Update<'a> {
    /// Its kind.
    pub kind: UpdateKind,
    /// The sender's id.
    pub sender: Option<&'a str>,
    /// Set when sent on behalf of a chat.
    pub sender_chat: Option<&'a str>,
    /// Sent by a bot.
    pub sender_is_bot: bool,
    /// The chat's id.
    pub chat_id: Option<&'a str>,
    /// The chat's kind.
    pub chat: ChatKind,
    /// The text.
    pub text: &'a str,
}

impl<'a> Update<'a> {
    /// The facts of a wire message.
    pub fn of(m: &'a IncomingMessage) -> Update<'a> {
        Update {
            kind: m.update,
            sender: m.sender_id.as_deref(),
            sender_chat: m.sender_chat_id.as_deref(),
            sender_is_bot: m.sender_is_bot,
            chat_id: m.chat_id.as_deref(),
            chat: ChatKind::parse(m.chat_type.as_deref()),
            text: &m.text,
        }
    }

    /// The id of the person who sent it, when there is one to authorise (no chat acting for
    /// them, not a bot). Pairing is looked up for this id only.
    pub fn person(&self) -> Option<&'a str> {
        if self.sender_chat.is_some() || self.sender_is_bot {
            return None;
        }
        self.sender.filter(|s| !s.trim().is_empty())
    }
}

/// What to do with an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing: no reply, no session, no model. The reason is for the gateway's log.
    Ignore(&'static str),
    /// An unpaired sender in a private chat: say (at most once per hour) how to pair.
    Refuse,
    /// An unpaired sender's pairing attempt with these digits.
    Pair(String),
    /// `/pair` in a group chat: say (at most once per hour) to use a private chat.
    PairOnlyInPrivate,
    /// `/pair` from a sender who is paired already.
    AlreadyPaired,
    /// A paired sender's chat command.
    Command(ChatCommand),
    /// A paired sender's message without text (a photo, a sticker, …).
    NoText,
    /// A paired sender's request: run a turn.
    Turn,
}

/// Decides what `instance` does with update `u`, whose sender ([`Update::person`]) is
/// `paired` or not. See the module rules.
pub fn decide(instance: &GatewayInstance, u: &Update<'_>, paired: bool) -> Verdict {
    match u.kind {
        UpdateKind::Message => {}
        UpdateKind::EditedMessage => return Verdict::Ignore("edited messages are not read"),
        UpdateKind::ChannelPost | UpdateKind::EditedChannelPost => {
            return Verdict::Ignore("channel posts have no sender to authorise");
        }
        UpdateKind::CallbackQuery => return Verdict::Ignore("button presses are not read"),
        UpdateKind::Other => return Verdict::Ignore("this kind of update is not read"),
    }
    if u.chat == ChatKind::Channel {
        return Verdict::Ignore("channel posts have no sender to authorise");
    }
    if u.sender_chat.is_some() {
        return Verdict::Ignore("sent on behalf of a chat: there is no person to authorise");
    }
    if u.sender_is_bot {
        return Verdict::Ignore("sent by a bot");
    }
    if u.person().is_none() {
        return Verdict::Ignore("the update has no sender id");
    }
    let Some(chat_id) = u.chat_id.filter(|c| !c.is_empty()) else {
        return Verdict::Ignore("the update has no chat id");
    };
    let command = chat_command(u.text);
    match u.chat {
        ChatKind::Private => {}
        ChatKind::Group => {
            if !instance.allows_group(chat_id) {
                return Verdict::Ignore("group chats are off for this gateway");
            }
            if matches!(command, Some(ChatCommand::Pair(_))) {
                return Verdict::PairOnlyInPrivate;
            }
            if !paired {
                return Verdict::Ignore("the sender is not paired (nothing is said in a group)");
            }
            return answer(command, u.text);
        }
        ChatKind::Channel | ChatKind::Unknown => {
            return Verdict::Ignore("the chat type is missing or unknown");
        }
    }
    match command {
        Some(ChatCommand::Pair(_)) if paired => Verdict::AlreadyPaired,
        Some(ChatCommand::Pair(code)) => Verdict::Pair(code),
        _ if !paired => Verdict::Refuse,
        other => answer(other, u.text),
    }
}

fn answer(command: Option<ChatCommand>, text: &str) -> Verdict {
    match command {
        Some(c) => Verdict::Command(c),
        None if text.trim().is_empty() => Verdict::NoText,
        None => Verdict::Turn,
    }
}

/// The one short refusal an unpaired sender gets (at most once per hour).
pub fn refusal_text(instance_id: &str) -> String {
    format!(
        "Sorry, I only answer people paired with me. If this is your assistant, run `sayri gateway pin {instance_id}` on your computer and send me /pair followed by the PIN."
    )
}

/// The answer to `/pair` in a group chat.
pub const PAIR_ONLY_IN_PRIVATE: &str =
    "Pairing works only in a private chat with me, so nobody else sees the PIN.";

/// The answer to `/pair` from a paired sender.
pub const ALREADY_PAIRED: &str = "You are already paired with me.";

/// The answer to a message without text.
pub const ONLY_TEXT: &str = "I can only read text messages here for now.";

/// The answer to `/help`: the chat commands.
pub fn help_text(agent: &str) -> String {
    format!(
        "Send me a message and agent {agent} answers it. Commands: /new starts a new conversation, /agent lists the agents you can use, /agent ID switches to one."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update<'a>(text: &'a str, chat: ChatKind, chat_id: &'a str) -> Update<'a> {
        Update {
            kind: UpdateKind::Message,
            sender: Some("1001"),
            sender_chat: None,
            sender_is_bot: false,
            chat_id: Some(chat_id),
            chat,
            text,
        }
    }

    fn home() -> GatewayInstance {
        GatewayInstance::new("home", "telegram")
    }

    #[test]
    fn only_new_messages_from_a_person_are_read() {
        let i = home();
        let mut u = update("hi", ChatKind::Private, "1001");
        for kind in [
            UpdateKind::EditedMessage,
            UpdateKind::ChannelPost,
            UpdateKind::EditedChannelPost,
            UpdateKind::CallbackQuery,
            UpdateKind::Other,
        ] {
            u.kind = kind;
            assert!(
                matches!(decide(&i, &u, true), Verdict::Ignore(_)),
                "{kind:?}"
            );
        }
        let mut u = update("hi", ChatKind::Private, "1001");
        u.sender_chat = Some("-100");
        assert!(matches!(decide(&i, &u, true), Verdict::Ignore(_)));
        let mut u = update("hi", ChatKind::Private, "1001");
        u.sender = None;
        assert!(matches!(decide(&i, &u, true), Verdict::Ignore(_)));
        let mut u = update("hi", ChatKind::Private, "1001");
        u.sender_is_bot = true;
        assert!(matches!(decide(&i, &u, true), Verdict::Ignore(_)));
        let u = update("hi", ChatKind::Unknown, "1001");
        assert!(matches!(decide(&i, &u, true), Verdict::Ignore(_)));
        let u = update("hi", ChatKind::Channel, "-100");
        assert!(matches!(decide(&i, &u, true), Verdict::Ignore(_)));
    }

    #[test]
    fn strangers_are_refused_and_may_only_pair_in_private() {
        let i = home();
        let u = update("hello", ChatKind::Private, "1001");
        assert_eq!(decide(&i, &u, false), Verdict::Refuse);
        let u = update("/pair 123 456", ChatKind::Private, "1001");
        assert_eq!(decide(&i, &u, false), Verdict::Pair("123456".into()));
        assert_eq!(decide(&i, &u, true), Verdict::AlreadyPaired);
        let u = update("/new", ChatKind::Private, "1001");
        assert_eq!(decide(&i, &u, false), Verdict::Refuse);
        assert_eq!(decide(&i, &u, true), Verdict::Command(ChatCommand::New));
    }

    #[test]
    fn groups_are_off_unless_named_and_then_silent_to_strangers() {
        let mut i = home();
        let u = update("hello", ChatKind::Group, "-100");
        assert!(matches!(decide(&i, &u, true), Verdict::Ignore(_)));
        i.allowed_groups.push("-100".into());
        assert_eq!(decide(&i, &u, true), Verdict::Turn);
        assert!(matches!(decide(&i, &u, false), Verdict::Ignore(_)));
        let u = update("/pair 123456", ChatKind::Group, "-100");
        assert_eq!(decide(&i, &u, false), Verdict::PairOnlyInPrivate);
        let u = update("/pair 123456", ChatKind::Group, "-200");
        assert!(matches!(decide(&i, &u, false), Verdict::Ignore(_)));
    }

    #[test]
    fn commands_and_text() {
        assert_eq!(
            chat_command("/agent@MyBot ops"),
            Some(ChatCommand::Agent(Some("ops".into())))
        );
        assert_eq!(chat_command("/AGENT"), Some(ChatCommand::Agent(None)));
        assert_eq!(chat_command("/start"), Some(ChatCommand::Help));
        assert_eq!(chat_command("/etc/passwd is what?"), None);
        assert_eq!(chat_command("hello /new"), None);
        let i = home();
        assert_eq!(
            decide(&i, &update("  ", ChatKind::Private, "1"), true),
            Verdict::NoText
        );
    }
}
