//! Replies of the assistant's commands — `talk`, `ask`, `interrupt`, `new_conversation`,
//! `switch_session` — and of the session commands: `sessions_list`, `session_get`,
//! `session_rename`, `session_delete`.

use serde::{Deserialize, Serialize};

/// `talk` → `{sent: true, text, session_id}`; the turn runs in the background.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TalkReply {
    /// Always true.
    pub sent: bool,
    /// The text as sent to the engine (trimmed).
    pub text: String,
    /// The session the turn runs in.
    pub session_id: String,
}

/// `ask` → `{text, error, session_id}` when the turn ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskReply {
    /// The final answer (`""` when there is none).
    pub text: String,
    /// What went wrong, `null` on success (a timeout says so here).
    pub error: Option<String>,
    /// The session of the turn.
    pub session_id: String,
}

/// `run_command` → how the command ended, its output redacted (vault secrets never leave).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCommandReply {
    /// The agent whose rules and sandbox applied.
    pub agent_id: String,
    /// The level it ran at (or would have).
    pub level: crate::level::SandboxLevel,
    /// `success`, `failed` (non-zero exit), `denied` (not run: a rule, a person, nobody to
    /// ask, or a sandbox that cannot give the level; `output` says which), `timeout` or
    /// `killed` (the client went away).
    pub status: String,
    /// The exit code, when the process exited (126 for a refusal).
    pub exit_code: Option<i32>,
    /// stdout and stderr in order — or, for `denied`, why it did not run; the beginning only
    /// when the output was longer than the output limit.
    pub output: String,
    /// The end of a long output (empty when `output` is whole).
    pub output_tail: String,
    /// Bytes left out between `output` and `output_tail`.
    pub omitted_bytes: u64,
    /// Wall time of the run.
    pub duration_ms: f64,
}

/// `interrupt` → `{interrupted}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptReply {
    /// A turn was running.
    pub interrupted: bool,
}

/// `new_conversation` → `{session_id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewConversationReply {
    /// The new session.
    pub session_id: String,
}

/// `switch_session` → `{session_id}` (the full id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchSessionReply {
    /// The session now active.
    pub session_id: String,
}

/// `sessions_list` → the sessions, newest first.
pub type SessionsListReply = Vec<SessionSummary>;

/// A conversation as listed: its messages counted, not loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// Session id (a UUID for local sessions, `remote-…` for gateway turns, `routine-<id>`).
    pub id: String,
    /// Its title.
    pub title: String,
    /// The agent it belongs to.
    pub agent_id: String,
    /// Unix seconds of its first message.
    pub created_at: f64,
    /// Unix seconds of its latest message (or rename).
    pub updated_at: f64,
    /// Stored messages.
    pub messages: u32,
    /// For a sub-agent's session: the session of the request that delegated to it (`null`
    /// for a person's own conversation).
    pub parent_id: Option<String>,
}

/// `session_get` → the session with its messages and token usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionGetReply {
    /// Session id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// The agent it belongs to.
    pub agent_id: String,
    /// Unix seconds of its first message.
    pub created_at: f64,
    /// Unix seconds of its latest message.
    pub updated_at: f64,
    /// For a sub-agent's session: the session that delegated to it.
    pub parent_id: Option<String>,
    /// Its messages, in order.
    pub messages: Vec<Message>,
    /// The sessions of the sub-agents its requests delegated to, oldest first.
    pub sub_sessions: Vec<SessionSummary>,
    /// The provider-reported token totals of its model calls and of the delegations its steps
    /// record (calls whose server reported nothing are not counted).
    pub usage: SessionUsage,
}

/// One stored message of [`SessionGetReply`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Row id, increasing in insertion order.
    pub id: i64,
    /// The session.
    pub session_id: String,
    /// `user`, `assistant`, `tool` (a command step), `error` (an error record: show it as an
    /// error, not as something Sayri said) or `system`.
    pub role: String,
    /// Its text (for `tool` rows the observation as shown to the model).
    pub content: String,
    /// The command step of a `tool` row.
    pub tool_call: Option<ToolCall>,
    /// Token usage of the model request that produced it.
    pub usage: Option<Usage>,
    /// Reasoning kept apart (never replayed to a model).
    pub reasoning: Option<String>,
    /// Unix seconds.
    pub timestamp: f64,
}

/// The command step of a `tool` message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The command as run (or refused).
    pub command: String,
    /// Its exit code; `null` when it did not exit by itself (also `interrupted`).
    pub exit_code: Option<i32>,
    /// `success`, `failed`, `denied`, `timeout`, `killed` or `interrupted` (Sayri stopped
    /// before it finished: not completed, never re-run).
    pub status: String,
    /// Its output, redacted.
    pub output: String,
    /// Wall time in milliseconds.
    pub duration_ms: f64,
    /// For a delegation step: the sub-agent's session and what its turn spent (absent for
    /// commands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegated: Option<Delegated>,
}

/// What one delegation spent, kept with its step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delegated {
    /// The sub-agent.
    pub agent_id: String,
    /// Its session.
    pub session_id: String,
    /// Prompt tokens its model calls used, as the servers reported them.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Model calls it made.
    pub model_calls: u64,
}

/// Token usage of one model request, as its server reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the prompt.
    pub prompt_tokens: u32,
    /// Tokens generated.
    pub completion_tokens: u32,
    /// The sum the server reported.
    pub total_tokens: u32,
}

/// `session_get.usage`: its delegations included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SessionUsage {
    /// Prompt tokens of every reported call.
    pub prompt_tokens: u64,
    /// Generated tokens of every reported call.
    pub completion_tokens: u64,
    /// Model calls whose server reported usage.
    pub model_calls: u64,
    /// The delegations' share of the totals.
    pub delegated: DelegatedUsage,
}

/// `session_get.usage.delegated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DelegatedUsage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Generated tokens.
    pub completion_tokens: u64,
    /// Model calls.
    pub model_calls: u64,
}

/// `session_rename` → `{session_id, title}` (the full id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRenameReply {
    /// The session.
    pub session_id: String,
    /// Its new title.
    pub title: String,
}

/// `session_delete` → `{session_id, deleted}` (the full id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionDeleteReply {
    /// The session.
    pub session_id: String,
    /// It existed and was deleted.
    pub deleted: bool,
}
