//! Events of a turn: `state`, `busy`, `user`, `assistant_delta`, `reasoning_delta`,
//! `assistant_done`, `tool_start`, `tool_finish`, `hint`, `error`, `conversation_started`,
//! `attach_image`. Every string in them has each known secret shown as `$SECRET:<KEY>`.

use serde::{Deserialize, Serialize};

/// `state` → `{state}`: `idle`, `listening`, `activated`, `thinking` or `speaking`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The state now.
    pub state: String,
}

/// `busy` → `{active}`: a query starts (true) or finishes (false).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Busy {
    /// A query runs.
    pub active: bool,
}

/// `user` → `{text}`: a query is sent to the engine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// The query (a spoken one: its transcript, wake phrase removed).
    pub text: String,
}

/// `assistant_delta` → `{delta}`: a streamed piece of the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssistantDelta {
    /// The piece.
    pub delta: String,
}

/// `reasoning_delta` → `{delta}`: a streamed piece of the model's reasoning, kept apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningDelta {
    /// The piece.
    pub delta: String,
}

/// `assistant_done` → `{text}`: the final cleaned answer (replaces the streamed text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssistantDone {
    /// The answer.
    pub text: String,
}

/// `tool_start` → `{command}`: before a command runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolStart {
    /// The command.
    pub command: String,
}

/// `tool_finish` → `{command, output, exit_code}`: after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFinish {
    /// The command.
    pub command: String,
    /// Its output (or the refusal).
    pub output: String,
    /// Its exit code; `null` when it did not exit by itself.
    pub exit_code: Option<i32>,
}

/// `hint` → `{text}`: a short status string for the UI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hint {
    /// The hint (`""` clears it).
    pub text: String,
}

/// `error` → `{error}`, and `{source, name}` when a supervised program failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Error {
    /// What went wrong, fit for the user.
    pub error: String,
    /// `gateway` or `supervisor` when a supervised program failed, `database` when the session
    /// database is corrupt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The gateway instance, the child's name or the database file, with `source`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Error {
    /// An error without a source.
    pub fn new(error: impl Into<String>) -> Error {
        Error {
            error: error.into(),
            source: None,
            name: None,
        }
    }
}

/// `conversation_started` → `{session_id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationStarted {
    /// The new session.
    pub session_id: String,
}

/// `attach_image` → `{path}`: an image goes with the next request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachImage {
    /// The path as given.
    pub path: String,
}
