//! Events of the voice loop, named as the protocol's events so the daemon can broadcast them
//! one to one.

use crate::engine::events::CoreState;
use sayri_protocol::names::event;

/// One voice event. [`VoiceEvent::name`] is the protocol event name; the daemon writes it as
/// that event's type of `sayri_protocol::event`.
#[derive(Debug, Clone, PartialEq)]
pub enum VoiceEvent {
    /// `state` — `{"state"}`.
    State(CoreState),
    /// `audio_level` — `{"level"}`: microphone or playback level, 0..1, at most every 50 ms.
    AudioLevel(f32),
    /// `mic` — `{"active"}`: the microphone started or stopped.
    Mic(bool),
    /// `mic` — `{"active", "device", "problem"}`: what the microphone delivers changed: it
    /// stalled, ended, vanished or delivers only digital zeros (`problem` says which, and what
    /// Sayri does meanwhile), or it is back (`problem` null). Said once per change.
    MicStatus {
        /// Whether sound arrives now.
        active: bool,
        /// The device, as the source names it.
        device: String,
        /// What is wrong, in words; `None` when it works again.
        problem: Option<String>,
    },
    /// `busy` — `{"active"}`: a spoken query started or finished.
    Busy(bool),
    /// `partial` — `{"text"}`: live transcript while the user speaks; `""` clears it.
    Partial(String),
    /// `user` — `{"text"}`: the transcript sent to the agent as a query.
    User(String),
    /// `speaking` — `{"active"}`: speech output started or ended (also false on cancel).
    Speaking(bool),
    /// `hint` — `{"text"}`: a short status string.
    Hint(String),
    /// `error` — `{"error"}`: a message fit for the user.
    Error(String),
    /// `show` — the wake word was heard while no front-end is visible.
    Show,
    /// `wake` — `{"phrase", "score"}`: the wake word was detected (Sayri addition, for logs
    /// and tests; vetoed echoes are not reported).
    Wake {
        /// The phrase of the detector that fired.
        phrase: String,
        /// Its score, 0..1.
        score: f32,
    },
    /// `transcript` — `{"text"}`: the result of a one-shot capture (`sayri listen`).
    Transcript(String),
}

impl VoiceEvent {
    /// The protocol event name.
    pub fn name(&self) -> &'static str {
        match self {
            VoiceEvent::State(_) => event::STATE,
            VoiceEvent::AudioLevel(_) => event::AUDIO_LEVEL,
            VoiceEvent::Mic(_) | VoiceEvent::MicStatus { .. } => event::MIC,
            VoiceEvent::Busy(_) => event::BUSY,
            VoiceEvent::Partial(_) => event::PARTIAL,
            VoiceEvent::User(_) => event::USER,
            VoiceEvent::Speaking(_) => event::SPEAKING,
            VoiceEvent::Hint(_) => event::HINT,
            VoiceEvent::Error(_) => event::ERROR,
            VoiceEvent::Show => event::SHOW,
            VoiceEvent::Wake { .. } => event::WAKE,
            VoiceEvent::Transcript(_) => event::TRANSCRIPT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_use_protocol_names() {
        assert_eq!(VoiceEvent::State(CoreState::Activated).name(), "state");
        assert_eq!(VoiceEvent::Speaking(true).name(), "speaking");
        assert_eq!(VoiceEvent::Partial(String::new()).name(), "partial");
        assert_eq!(VoiceEvent::AudioLevel(0.5).name(), "audio_level");
        assert_eq!(VoiceEvent::Mic(false).name(), "mic");
    }
}
