//! Requests the view model asks to send, each tagged with what its answer is for.

use sayri_protocol::names::cmd;
use sayri_protocol::{Params, params};
use serde_json::{Map, Value};

/// What a request was for, so its response can be applied to the right part of the view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tag {
    /// `status`.
    Status,
    /// `permission_list` (open cards after a (re)connect).
    PermissionList,
    /// `agents_list`.
    AgentsList,
    /// `sessions_list`.
    SessionsList,
    /// `session_get` of the active session (its transcript).
    SessionGet,
    /// `config_list`.
    ConfigList,
    /// `config_set` of `key` (errors show beside that field).
    SetConfig {
        /// `group.key`.
        key: String,
    },
    /// `talk`.
    Talk,
    /// `permission_answer` for `request_id`.
    Answer {
        /// The card's request id.
        request_id: String,
    },
    /// `toggle_listening`.
    ToggleListening,
    /// `interrupt`.
    Interrupt,
    /// `new_conversation`.
    NewConversation,
    /// `switch_session`.
    SwitchSession,
    /// `session_rename`.
    RenameSession,
    /// `session_delete`.
    DeleteSession,
    /// `agent_switch`.
    AgentSwitch,
    /// `memory_add` ("Remember this" on a line the person said).
    Remember,
}

impl Tag {
    /// The protocol command a request with this tag sends.
    pub fn command(&self) -> &'static str {
        match self {
            Tag::Status => cmd::STATUS,
            Tag::PermissionList => cmd::PERMISSION_LIST,
            Tag::AgentsList => cmd::AGENTS_LIST,
            Tag::SessionsList => cmd::SESSIONS_LIST,
            Tag::SessionGet => cmd::SESSION_GET,
            Tag::ConfigList => cmd::CONFIG_LIST,
            Tag::SetConfig { .. } => cmd::CONFIG_SET,
            Tag::Talk => cmd::TALK,
            Tag::Answer { .. } => cmd::PERMISSION_ANSWER,
            Tag::ToggleListening => cmd::TOGGLE_LISTENING,
            Tag::Interrupt => cmd::INTERRUPT,
            Tag::NewConversation => cmd::NEW_CONVERSATION,
            Tag::SwitchSession => cmd::SWITCH_SESSION,
            Tag::RenameSession => cmd::SESSION_RENAME,
            Tag::DeleteSession => cmd::SESSION_DELETE,
            Tag::AgentSwitch => cmd::AGENT_SWITCH,
            Tag::Remember => cmd::MEMORY_ADD,
        }
    }
}

/// One request for the daemon.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// What it is for (also decides the command name).
    pub tag: Tag,
    /// Parameters object.
    pub params: Map<String, Value>,
}

impl Request {
    /// A request for `tag` with `params` (a JSON object; anything else sends `{}`).
    pub fn new(tag: Tag, params: Value) -> Request {
        let params = match params {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Request { tag, params }
    }

    /// A request for `tag` with the params struct of its command.
    pub fn typed<P: Params>(tag: Tag, params: &P) -> Request {
        debug_assert_eq!(tag.command(), P::CMD, "the tag sends another command");
        Request {
            tag,
            // A params struct always writes an object (pinned by sayri-protocol's tests).
            params: params::to_map(params).unwrap_or_default(),
        }
    }

    /// The command name.
    pub fn command(&self) -> &'static str {
        self.tag.command()
    }
}
