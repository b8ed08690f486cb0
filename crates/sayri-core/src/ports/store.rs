//! The `SessionStore` port: conversations, their messages, history search and learned
//! preferences. `sayri-store` implements it on SQLite.
//!
//! Calls are synchronous: the adapter does short local writes (one transaction each). The engine
//! calls them from async code between awaits, so an adapter whose calls can wait (SQLite, a slow
//! disk) takes that wait off the runtime's worker threads itself — the daemon's adapter runs
//! every call through `sayri_daemon::offload` — and never waits on the network or a person.

use super::approvals::StoreError;
use super::chat::{ChatImage, Role, Usage};
use serde::{Deserialize, Serialize};

/// A conversation as listed (messages counted, not loaded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Session id (UUID for local sessions, `remote-…` for gateway turns).
    pub id: String,
    /// Title shown in lists (at most 36 characters once generated).
    pub title: String,
    /// Agent the conversation belongs to.
    pub agent_id: String,
    /// Unix seconds of the first message.
    pub created_at: f64,
    /// Unix seconds of the latest message (or rename).
    pub updated_at: f64,
    /// Number of stored messages.
    pub messages: u32,
    /// For a sub-agent's session: the session of the request that delegated to it (it is shown
    /// under that one). `None` for a person's own conversation.
    #[serde(default)]
    pub parent_id: Option<String>,
}

/// What a session row starts with when its first message creates it. A session row never
/// exists without a message (pinned by `sayri-store`'s
/// `a_session_exists_only_once_it_has_a_message`).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSeed<'a> {
    /// Session id.
    pub id: &'a str,
    /// Agent id.
    pub agent_id: &'a str,
    /// Initial title (e.g. the first 30 characters of the request).
    pub title: &'a str,
    /// The delegating session, for a sub-agent's session (stored as its parent link).
    pub parent: Option<&'a str>,
}

/// The command step stored with a `tool` message, so a replayed conversation keeps its meaning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// Command text as run (or as refused).
    pub command: String,
    /// Exit code when the process exited (126 refusals, 124 timeouts).
    pub exit_code: Option<i32>,
    /// `success | failed | denied | timeout | killed`, or `interrupted` when Sayri stopped
    /// (crashed) before the command finished: it did not complete and was not run again.
    pub status: String,
    /// Output after redaction (never raw: the vault's markers replace secrets).
    pub output: String,
    /// Wall time in milliseconds.
    pub duration_ms: f64,
    /// For a delegation step: the sub-agent's session and what its turn spent (its own
    /// delegations included). Absent for commands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegated: Option<Delegated>,
}

/// What one delegation spent, kept with its step so the request that made it shows it.
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

/// A message to append.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage {
    /// Author; `Tool` rows carry a [`ToolCallRecord`].
    pub role: Role,
    /// Text (for `tool` rows: the observation text as shown to the model).
    pub content: String,
    /// The command step, for `tool` rows.
    pub tool_call: Option<ToolCallRecord>,
    /// Token usage of the model request that produced this message (assistant rows).
    pub usage: Option<Usage>,
    /// Reasoning text of that request, kept apart; it is never replayed to a model.
    pub reasoning: Option<String>,
    /// Images the person attached to this request (user rows); stored as they were sent.
    pub images: Vec<ChatImage>,
    /// Unix seconds.
    pub timestamp: f64,
}

impl NewMessage {
    /// A message of `role` with `content` at `timestamp`.
    pub fn new(role: Role, content: impl Into<String>, timestamp: f64) -> Self {
        NewMessage {
            role,
            content: content.into(),
            tool_call: None,
            usage: None,
            reasoning: None,
            images: Vec::new(),
            timestamp,
        }
    }
}

/// A stored message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// Row id, increasing in insertion order.
    pub id: i64,
    /// Session id.
    pub session_id: String,
    /// Author.
    pub role: Role,
    /// Text.
    pub content: String,
    /// The command step of a `tool` row.
    pub tool_call: Option<ToolCallRecord>,
    /// Token usage of the request that produced it.
    pub usage: Option<Usage>,
    /// Reasoning kept apart (never replayed).
    pub reasoning: Option<String>,
    /// Unix seconds.
    pub timestamp: f64,
}

/// One hit of a history search (the model's ```` ```search_history ```` block).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// Session of the message.
    pub session_id: String,
    /// Title of that session.
    pub session_title: String,
    /// Author.
    pub role: Role,
    /// Content, cut to 400 characters.
    pub content: String,
    /// Unix seconds.
    pub timestamp: f64,
}

/// A learned preference row: a command that worked (or failed) for a kind of request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Preference {
    /// Row id.
    pub id: i64,
    /// Agent it belongs to.
    pub agent_id: String,
    /// What the person asked for (at most 120 characters).
    pub intent: String,
    /// The command that served it.
    pub command: String,
    /// A command to avoid for this intent (may be empty).
    pub rejected_command: String,
    /// Times it succeeded.
    pub success_count: u32,
    /// Times it failed.
    pub failure_count: u32,
    /// `success − 1.5 × failure`, rounded to 2 decimals.
    pub score: f64,
    /// Free notes.
    pub notes: String,
    /// Unix seconds.
    pub updated_at: f64,
}

/// An observation to record as a preference.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PreferenceUpdate {
    /// Agent id.
    pub agent_id: String,
    /// The current request (cut to 120 characters by the store).
    pub intent: String,
    /// Command run.
    pub command: String,
    /// Whether it succeeded (exit code 0).
    pub success: bool,
    /// Command to avoid, if any (`sayri pref record --rejected`).
    pub rejected_command: Option<String>,
    /// Notes, if any.
    pub notes: Option<String>,
    /// Unix seconds.
    pub now: f64,
}

/// A turn the journal still holds as running: the daemon stopped before the turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenTurn {
    /// Journal id.
    pub id: i64,
    /// Session of the turn.
    pub session_id: String,
    /// Row id of the turn's request (the `user` message); the turn's rows come after it.
    pub request_message_id: i64,
    /// Unix seconds.
    pub started_at: f64,
}

/// Durable conversations and learned preferences.
pub trait SessionStore: Send + Sync {
    /// Appends `message` to session `seed.id`, creating the session row (with `seed`'s agent and
    /// title) in the same transaction if it does not exist yet. Bumps `updated_at`. Returns the
    /// new message's row id.
    fn append_message(
        &self,
        seed: &SessionSeed<'_>,
        message: &NewMessage,
    ) -> Result<i64, StoreError>;
    /// One session, or `None` if unknown.
    fn session(&self, id: &str) -> Result<Option<SessionInfo>, StoreError>;
    /// Ids of the sessions whose id starts with `prefix` (compared byte for byte), at most
    /// `limit`, in id order.
    fn session_ids_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError>;
    /// Sessions, newest `updated_at` first, at most `limit`.
    fn list_sessions(&self, limit: usize) -> Result<Vec<SessionInfo>, StoreError>;
    /// The sessions whose parent is `parent_id` (its sub-agents' sessions), oldest first.
    fn sub_sessions(&self, parent_id: &str) -> Result<Vec<SessionInfo>, StoreError>;
    /// Messages of a session in insertion order (empty for an unknown session).
    fn messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError>;
    /// Sets a session's title. Returns whether the session exists.
    fn rename_session(&self, id: &str, title: &str) -> Result<bool, StoreError>;
    /// Deletes a session and its messages. Returns whether it existed.
    fn delete_session(&self, id: &str) -> Result<bool, StoreError>;
    /// Case-insensitive substring search over message content (and, with `session_id = None`,
    /// session titles). Newest `limit` hits, returned oldest first, content cut to 400 chars.
    /// A store that redacts decides hits on the redacted text and returns it redacted, so a
    /// search cannot tell whether a secret contains the query.
    fn search_messages(
        &self,
        query: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError>;
    /// Records an observation: inserts a row or updates the counters and score of the existing
    /// `(agent, intent, command)` row. Returns the row as stored.
    fn record_preference(&self, update: &PreferenceUpdate) -> Result<Preference, StoreError>;
    /// Preferences whose intent, command or notes contain any token of `text` (lowercase tokens
    /// longer than 1 char), score ≥ 0, best score then newest first.
    fn query_preferences(
        &self,
        text: &str,
        agent_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Preference>, StoreError>;
    /// Preferences, best score then newest first.
    fn list_preferences(
        &self,
        agent_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Preference>, StoreError>;
    /// Deletes the preferences of one agent, or all. Returns how many were removed.
    fn clear_preferences(&self, agent_id: Option<&str>) -> Result<usize, StoreError>;
    /// The calibrated bytes-per-token rate of `model` (see
    /// [`crate::domain::tokens::TokenEstimator`]), or `None` when none was stored yet.
    fn token_rate(&self, model: &str) -> Result<Option<f64>, StoreError>;
    /// Stores the calibrated bytes-per-token rate of `model` (replacing the previous one).
    fn set_token_rate(&self, model: &str, bytes_per_token: f64, now: f64)
    -> Result<(), StoreError>;
    /// Journal: a turn started in `session_id`, whose request is message `request_message_id`.
    /// Returns the journal id for [`SessionStore::turn_ended`]. A turn still in the journal at
    /// the next start was cut short by a crash (see `engine::interrupted`).
    fn turn_started(
        &self,
        session_id: &str,
        request_message_id: i64,
        now: f64,
    ) -> Result<i64, StoreError>;
    /// Journal: turn `id` ended (answered, failed or interrupted by a person); forgets it.
    fn turn_ended(&self, id: i64) -> Result<(), StoreError>;
    /// Turns started and never ended, oldest first.
    fn open_turns(&self) -> Result<Vec<OpenTurn>, StoreError>;
    /// Appends `notes` to the turn's session and forgets the turn, in one transaction (so a
    /// crash during the clean-up neither loses the notes nor writes them twice).
    fn close_interrupted_turn(
        &self,
        turn: &OpenTurn,
        notes: &[NewMessage],
    ) -> Result<(), StoreError>;
}
