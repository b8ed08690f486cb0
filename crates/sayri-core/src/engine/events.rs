//! Events the core emits, one per event of the wire protocol (`PROTOCOL.md`): the daemon turns
//! each into its type of `sayri_protocol::event` and broadcasts it.

use sayri_protocol::names::event;

/// The voice/activity state machine's states. The voice states are reserved for voice input,
/// which is not built yet; text turns use `Idle` and `Thinking`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreState {
    /// Nothing happening.
    Idle,
    /// Microphone open, waiting for speech.
    Listening,
    /// Wake word heard / armed.
    Activated,
    /// A turn is running.
    Thinking,
    /// Text-to-speech is playing.
    Speaking,
}

impl CoreState {
    /// Wire name (`idle`, `listening`, `activated`, `thinking`, `speaking`).
    pub fn as_str(self) -> &'static str {
        match self {
            CoreState::Idle => "idle",
            CoreState::Listening => "listening",
            CoreState::Activated => "activated",
            CoreState::Thinking => "thinking",
            CoreState::Speaking => "speaking",
        }
    }
}

/// One event for clients.
#[derive(Debug, Clone, PartialEq)]
pub enum CoreEvent {
    /// `state` — `{"state"}`.
    State(CoreState),
    /// `busy` — `{"active"}`: a turn started (true) or ended (false).
    Busy(bool),
    /// `user` — `{"text"}`: the request sent to the engine.
    User(String),
    /// `assistant_delta` — `{"delta"}`: a piece of answer text (fenced command blocks are held
    /// back; see `engine::delta_filter`).
    AssistantDelta(String),
    /// `reasoning_delta` — `{"delta"}`: a piece of reasoning, shown apart.
    ReasoningDelta(String),
    /// `assistant_done` — `{"text"}`: the final, cleaned answer (authoritative; replaces the
    /// streamed text).
    AssistantDone(String),
    /// `tool_start` — `{"command"}`: before a command is authorised and run, or
    /// `search_history: <q>`.
    ToolStart(String),
    /// `tool_finish` — `{"command", "output", "exit_code"}`: output is **redacted**.
    ToolFinish {
        /// Command text.
        command: String,
        /// Redacted output (or the refusal message).
        output: String,
        /// Exit code; `null` when the process did not exit by itself.
        exit_code: Option<i32>,
    },
    /// `hint` — `{"text"}`: a short status string.
    Hint(String),
    /// `error` — `{"error"}`: a message fit for the user.
    Error(String),
    /// `conversation_started` — `{"session_id"}`.
    ConversationStarted(String),
}

impl CoreEvent {
    /// The protocol event name (from `sayri_protocol::names::event`).
    pub fn name(&self) -> &'static str {
        match self {
            CoreEvent::State(_) => event::STATE,
            CoreEvent::Busy(_) => event::BUSY,
            CoreEvent::User(_) => event::USER,
            CoreEvent::AssistantDelta(_) => event::ASSISTANT_DELTA,
            CoreEvent::ReasoningDelta(_) => event::REASONING_DELTA,
            CoreEvent::AssistantDone(_) => event::ASSISTANT_DONE,
            CoreEvent::ToolStart(_) => event::TOOL_START,
            CoreEvent::ToolFinish { .. } => event::TOOL_FINISH,
            CoreEvent::Hint(_) => event::HINT,
            CoreEvent::Error(_) => event::ERROR,
            CoreEvent::ConversationStarted(_) => event::CONVERSATION_STARTED,
        }
    }
}

/// Receives events. Implementations must not block (e.g. push into a broadcast channel): the
/// core may call `emit` while holding its turn lock, which is what keeps stale events of an
/// interrupted turn from ever reaching clients.
pub trait EventSink: Send + Sync {
    /// Delivers one event.
    fn emit(&self, event: CoreEvent);
}

/// A sink that drops everything (e.g. for `ask` from a context without listeners).
#[derive(Debug, Clone, Copy, Default)]
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&self, _event: CoreEvent) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_has_a_protocol_name() {
        for e in [
            CoreEvent::Hint(String::new()),
            CoreEvent::Error(String::new()),
            CoreEvent::ReasoningDelta(String::new()),
            CoreEvent::User(String::new()),
            CoreEvent::AssistantDone(String::new()),
            CoreEvent::ToolStart(String::new()),
        ] {
            assert!(event::ALL.contains(&e.name()));
        }
    }
}
