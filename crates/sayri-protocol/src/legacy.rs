//! The legacy gateway protocol of `sayri.sock`: what channel gateways (and the original Sayri's
//! desktop shortcuts) send, and what the daemon streams back.
//!
//! One request per connection: the client writes one request of at most [`MAX_REQUEST_BYTES`],
//! ended by `\n`, by closing its write side, or by falling quiet for [`QUIET_END`] once what it
//! sent is a whole request ([`is_whole_request`]); then it reads the answer until the daemon
//! closes.
//!
//! * **Plain text** requests ([`LegacyRequest::parse`]): `sayri-gui-ping` (answered `DAEMON`),
//!   `toggle`, `show`, `hide`, `settings`, `listen`, `quit`, `attach <path>`; answered with one
//!   line (`OK`, or `ERROR <sentence>`).
//! * **JSON** requests (text starting with `{`): a message for the assistant
//!   (`type` `INCOMING_MSG` or `remote_message`: [`IncomingMessage`]), an image
//!   (`ATTACH_IMAGE`/`attach`), or a gateway's own report (`GATEWAY_REPORT`:
//!   [`GatewayReport`]). A message is answered, when the turn ends, with one line: `done`
//!   (`{"event": "done", "ok": true, "text"}`, the original daemon's answer), `error`, or
//!   `ignored` when the daemon decided not to answer. A message with `"stream": true` gets the
//!   turn's NDJSON [`ReplyEvent`]s as it runs — `start`, `delta`, `tool_start`, `tool_finish`
//!   — before that final line. No time limit either way.
//!
//! A message without `sender_id` is the original wire: the daemon authorises it by its
//! instance's `legacy_authors` / `legacy_chats`, never by pairing.
//!
//! Gateways give the raw facts of an update (who sent it, in which chat, what kind of update);
//! the daemon alone decides whether it is answered.

use crate::level::SandboxLevel;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Longest request line, in bytes (1 MiB), not counting the `\n`.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;
/// How long a client may fall quiet after sending a whole request without a newline before
/// it is taken (the original daemon took whatever one read returned).
pub const QUIET_END: std::time::Duration = std::time::Duration::from_millis(300);
/// The plain-text ping of the original desktop app.
pub const GUI_PING: &str = "sayri-gui-ping";
/// The daemon's answer to [`GUI_PING`].
pub const DAEMON_PONG: &str = "DAEMON";

/// What kind of update a gateway passes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UpdateKind {
    /// A new message (the default, and what the original gateways send).
    #[default]
    Message,
    /// A message that was edited after it was sent.
    EditedMessage,
    /// A post in a channel.
    ChannelPost,
    /// An edited channel post.
    EditedChannelPost,
    /// A button press on a message.
    CallbackQuery,
    /// Anything else.
    #[serde(other)]
    Other,
}

/// A message for the assistant (`INCOMING_MSG` / `remote_message`). Unknown fields are ignored
/// (the original gateways send extras).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IncomingMessage {
    /// The text as the person wrote it.
    #[serde(default, deserialize_with = "text_or_null")]
    pub text: String,
    /// Display name of the sender (used in session titles only, never to authorise).
    #[serde(default, deserialize_with = "text_or_null")]
    pub author: String,
    /// Agent asked for (`None` = the instance's agent); must be one the instance allows.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_text"
    )]
    pub target_agent: Option<String>,
    /// Level asked for: it can only lower the instance's cap. A value that names no level is
    /// an error.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_level"
    )]
    pub sandbox_level: Option<SandboxLevel>,
    /// The gateway instance (a gateway process may only name its own).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_text"
    )]
    pub instance_id: Option<String>,
    /// A session of this instance to continue (`remote-<instance>-…`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_text"
    )]
    pub session_id: Option<String>,
    /// What kind of update this is *(new)*.
    #[serde(default)]
    pub update: UpdateKind,
    /// The channel's id of the sender (Telegram: `from.id`) *(new)*. Authorisation is decided
    /// from this id alone; a message without one is never answered.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_id"
    )]
    pub sender_id: Option<String>,
    /// Set when the message was sent on behalf of a chat (an anonymous group admin, a
    /// channel) *(new)*: there is then no person to authorise.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_id"
    )]
    pub sender_chat_id: Option<String>,
    /// Whether the sender is a bot *(new)*.
    #[serde(default, skip_serializing_if = "is_false")]
    pub sender_is_bot: bool,
    /// The chat the message was written in *(new)*; one session per chat.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_id"
    )]
    pub chat_id: Option<String>,
    /// `private`, `group`, `supergroup` or `channel` *(new)*.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_text"
    )]
    pub chat_type: Option<String>,
    /// Stream the turn as it runs *(new)*: `start`, `delta`, `tool_start`, `tool_finish`, then
    /// the final event. Without it the answer is that final event alone, one line, as the
    /// original daemon sent it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stream: bool,
    /// The channel's id of this update (Telegram: `update_id`) *(new)*. A message sent again
    /// with the same id (a gateway restarted before it could deliver) gets the answer of the
    /// first time, without a second turn.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_id"
    )]
    pub update_id: Option<String>,
}

impl IncomingMessage {
    /// Whether this is a message of the original wire: no sender id, no chat acting for a
    /// sender. The daemon authorises it by its instance's legacy lists, never by pairing.
    pub fn is_original_wire(&self) -> bool {
        self.sender_id.is_none() && self.sender_chat_id.is_none()
    }
}

/// What a gateway reports about itself (`GATEWAY_REPORT`), answered `{"ok": true}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GatewayReport {
    /// What happened: `delivery_failed` (a reply could not be delivered, and is lost), or
    /// `outbox` (how many replies wait and when the next attempt is due).
    pub report: String,
    /// The chat concerned, if any.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_id"
    )]
    pub chat_id: Option<String>,
    /// A sentence for the person at the desktop.
    #[serde(default, deserialize_with = "text_or_null")]
    pub error: String,
    /// `outbox`: replies waiting to be delivered *(new)*.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<u64>,
    /// `outbox`: when the next delivery attempt is due, Unix seconds *(new)*.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_retry_at: Option<f64>,
}

/// The answer to a [`GatewayReport`]: `{"ok": true}`, or the `error` event
/// (`{"event": "error", "ok": false, "error"}`) when it was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportAnswer {
    /// The report was taken.
    pub ok: bool,
    /// Why it was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ReportAnswer {
    /// `{"ok": true}` as one NDJSON line.
    pub fn taken_line() -> Vec<u8> {
        let mut v = serde_json::to_vec(&ReportAnswer {
            ok: true,
            error: None,
        })
        .unwrap_or_else(|_| b"{\"ok\":true}".to_vec());
        v.push(b'\n');
        v
    }
}

/// A request on the legacy socket.
#[derive(Debug, Clone, PartialEq)]
pub enum LegacyRequest {
    /// `sayri-gui-ping`.
    Ping,
    /// `toggle`: clients toggle their visibility.
    Toggle,
    /// `show`.
    Show,
    /// `hide`.
    Hide,
    /// `settings`: clients open their settings.
    Settings,
    /// `listen`: start listening by voice.
    Listen,
    /// `quit`: stop the daemon.
    Quit,
    /// `attach <path>`, or JSON `ATTACH_IMAGE` / `attach` with `image_path` or `path`.
    Attach {
        /// The image file.
        path: String,
        /// Whether it came as JSON (then the answer is JSON too).
        json: bool,
    },
    /// A message for the assistant.
    Message(Box<IncomingMessage>),
    /// A gateway's report.
    Report(GatewayReport),
}

/// Whether `bytes` (a request received so far, without a newline) is a whole request: text
/// that does not start with `{`, or JSON that parses. Used to end a request when the client
/// falls quiet ([`QUIET_END`]).
pub fn is_whole_request(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    let text = text.trim();
    if text.is_empty() {
        return false;
    }
    !text.starts_with('{') || serde_json::from_str::<Value>(text).is_ok()
}

/// Why a request line was not understood; the sentence is sent back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyError(pub String);

impl std::fmt::Display for LegacyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LegacyError {}

impl LegacyRequest {
    /// Parses one request line (surrounding whitespace ignored).
    ///
    /// # Errors
    /// Invalid JSON, an unknown `type`, a field of the wrong type or a `sandbox_level` that
    /// names no level, or unknown plain text — each with a sentence saying what to send.
    pub fn parse(line: &str) -> Result<LegacyRequest, LegacyError> {
        let text = line.trim();
        if text.starts_with('{') {
            return Self::parse_json(text);
        }
        let (word, rest) = text.split_once(' ').unwrap_or((text, ""));
        Ok(match (word, rest.trim()) {
            (GUI_PING, "") => LegacyRequest::Ping,
            ("toggle", "") => LegacyRequest::Toggle,
            ("show", "") => LegacyRequest::Show,
            ("hide", "") => LegacyRequest::Hide,
            ("settings", "") => LegacyRequest::Settings,
            ("listen", "") => LegacyRequest::Listen,
            ("quit", "") => LegacyRequest::Quit,
            ("attach", path) if !path.is_empty() => LegacyRequest::Attach {
                path: path.to_string(),
                json: false,
            },
            _ => {
                return Err(LegacyError(format!(
                    "unknown request {:?}: send one of {GUI_PING}, toggle, show, hide, settings, listen, quit, attach PATH, or a JSON message (see PROTOCOL.md, legacy gateway socket)",
                    cut(text, 40)
                )));
            }
        })
    }

    fn parse_json(text: &str) -> Result<LegacyRequest, LegacyError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| LegacyError(format!("the request is not valid JSON: {e}")))?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let image = value
            .get("image_path")
            .or_else(|| value.get("path"))
            .and_then(Value::as_str)
            .map(str::to_string);
        match kind.as_str() {
            "INCOMING_MSG" | "remote_message" => serde_json::from_value(value)
                .map(|m| LegacyRequest::Message(Box::new(m)))
                .map_err(|e| LegacyError(format!("invalid {kind} message: {e}"))),
            "GATEWAY_REPORT" => serde_json::from_value(value)
                .map(LegacyRequest::Report)
                .map_err(|e| LegacyError(format!("invalid GATEWAY_REPORT: {e}"))),
            "ATTACH_IMAGE" | "attach" => match image {
                Some(path) => Ok(LegacyRequest::Attach { path, json: true }),
                None => Err(LegacyError(format!(
                    "{kind} needs `image_path` (or `path`)"
                ))),
            },
            "" => Err(LegacyError(
                "the JSON request has no `type`: use INCOMING_MSG, remote_message, ATTACH_IMAGE or GATEWAY_REPORT".into(),
            )),
            other => Err(LegacyError(format!(
                "unknown request type {:?}: use INCOMING_MSG, remote_message, ATTACH_IMAGE or GATEWAY_REPORT",
                cut(other, 40)
            ))),
        }
    }
}

/// What the daemon streams back for a message, one JSON line each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ReplyEvent {
    /// The turn started in this session.
    Start {
        /// The session.
        session_id: String,
    },
    /// A piece of the answer text.
    Delta {
        /// The text.
        delta: String,
    },
    /// A command is about to run.
    ToolStart {
        /// Always `bash`.
        tool: String,
        /// The command (secrets shown as `$SECRET:<KEY>`).
        command: String,
    },
    /// A command ended.
    ToolFinish {
        /// Always `bash`.
        tool: String,
        /// The command.
        command: String,
        /// Its output, redacted.
        output: String,
        /// Its exit code (`null` when it did not exit by itself).
        exit_code: Option<i32>,
    },
    /// The request ended: send `text` to the chat. Also the answer to a chat command
    /// (`/pair`, `/new`, `/agent`, `/help`) and the one short refusal a stranger gets.
    Done {
        /// Always true.
        ok: bool,
        /// The reply to deliver.
        text: String,
        /// The chat command that was answered, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
    },
    /// The request failed; `error` is fit to show to the person.
    Error {
        /// Always false.
        ok: bool,
        /// What went wrong.
        error: String,
    },
    /// The daemon decided not to answer (nothing is sent to the chat).
    Ignored {
        /// Why, for the gateway's log.
        reason: String,
    },
}

impl ReplyEvent {
    /// A `done` event.
    pub fn done(text: impl Into<String>) -> Self {
        ReplyEvent::Done {
            ok: true,
            text: text.into(),
            command: None,
        }
    }

    /// An `error` event.
    pub fn error(error: impl Into<String>) -> Self {
        ReplyEvent::Error {
            ok: false,
            error: error.into(),
        }
    }

    /// Whether this event ends the answer (`done`, `error`, `ignored`).
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            ReplyEvent::Done { .. } | ReplyEvent::Error { .. } | ReplyEvent::Ignored { .. }
        )
    }

    /// The event as one NDJSON line.
    pub fn to_line(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec(self).unwrap_or_else(|e| {
            serde_json::to_vec(&json!({"event": "error", "ok": false, "error": e.to_string()}))
                .unwrap_or_default()
        });
        v.push(b'\n');
        v
    }
}

fn cut(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn text_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// Text, with `null` and blank meaning "not given".
fn opt_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(d)?
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty()))
}

/// An id given as a string or an integer (Telegram ids are integers), as text.
fn opt_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Int(i64),
        Text(String),
    }
    Ok(match Option::<Raw>::deserialize(d)? {
        None => None,
        Some(Raw::Int(i)) => Some(i.to_string()),
        Some(Raw::Text(t)) => Some(t.trim().to_string()).filter(|s| !s.is_empty()),
    })
}

/// A level as a name, an alias or a number 0–4; `null` and blank mean "not given".
fn opt_level<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SandboxLevel>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Int(u64),
        Text(String),
    }
    let text = match Option::<Raw>::deserialize(d)? {
        None => return Ok(None),
        Some(Raw::Int(i)) => i.to_string(),
        Some(Raw::Text(t)) if t.trim().is_empty() => return Ok(None),
        Some(Raw::Text(t)) => t,
    };
    text.parse().map(Some).map_err(de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_requests() {
        assert_eq!(
            LegacyRequest::parse("sayri-gui-ping\n"),
            Ok(LegacyRequest::Ping)
        );
        assert_eq!(LegacyRequest::parse(" quit "), Ok(LegacyRequest::Quit));
        assert_eq!(
            LegacyRequest::parse("attach /tmp/a b.png"),
            Ok(LegacyRequest::Attach {
                path: "/tmp/a b.png".into(),
                json: false
            })
        );
        assert!(LegacyRequest::parse("quit now").is_err());
        assert!(LegacyRequest::parse("").is_err());
    }

    #[test]
    fn messages_take_ids_as_numbers_or_text_and_levels_by_name_or_number() {
        let m = match LegacyRequest::parse(
            r#"{"type":"INCOMING_MSG","text":"hi","sender_id":1001,"chat_id":-100,"sandbox_level":"LEVEL_4_HOST_ROOT","extra":1}"#,
        ) {
            Ok(LegacyRequest::Message(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(m.sender_id.as_deref(), Some("1001"));
        assert_eq!(m.chat_id.as_deref(), Some("-100"));
        assert_eq!(m.sandbox_level, Some(SandboxLevel::HostRoot));
        assert_eq!(m.update, UpdateKind::Message);
        let m = match LegacyRequest::parse(
            r#"{"type":"remote_message","text":"x","sandbox_level":2,"update":"edited_message","target_agent":""}"#,
        ) {
            Ok(LegacyRequest::Message(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(m.sandbox_level, Some(SandboxLevel::IsolatedDev));
        assert_eq!(m.update, UpdateKind::EditedMessage);
        assert_eq!(m.target_agent, None);
    }

    #[test]
    fn a_level_that_names_nothing_is_an_error_not_ignored() {
        let e =
            LegacyRequest::parse(r#"{"type":"INCOMING_MSG","text":"x","sandbox_level":"LEVEL_9"}"#)
                .unwrap_err();
        assert!(e.0.contains("LEVEL_9"), "{e}");
    }

    #[test]
    fn unknown_update_kinds_are_other() {
        let m: IncomingMessage =
            serde_json::from_str(r#"{"text":"x","update":"message_reaction"}"#).unwrap();
        assert_eq!(m.update, UpdateKind::Other);
    }

    #[test]
    fn reply_lines_have_their_event_name() {
        let line = ReplyEvent::done("hi").to_line();
        assert_eq!(line, b"{\"event\":\"done\",\"ok\":true,\"text\":\"hi\"}\n");
        let back: ReplyEvent = serde_json::from_slice(&line).unwrap();
        assert!(back.is_final());
        let line = ReplyEvent::ToolStart {
            tool: "bash".into(),
            command: "ls".into(),
        }
        .to_line();
        assert_eq!(
            line,
            b"{\"event\":\"tool_start\",\"tool\":\"bash\",\"command\":\"ls\"}\n"
        );
    }
}
