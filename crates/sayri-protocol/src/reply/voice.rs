//! Replies of the voice commands: `listen`, `stop_listening`, `toggle_listening`, and of
//! `asset_download` (voice models).

use serde::{Deserialize, Serialize};

/// `listen` → `{text}`: one utterance's transcript (`""` when nothing was said).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenReply {
    /// The transcript, wake phrase removed.
    pub text: String,
}

/// `stop_listening` → `{stopped: true, voice_available}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopListeningReply {
    /// Always true.
    pub stopped: bool,
    /// Whether this daemon was built with voice *(extension)*; without it nothing was
    /// listening and nothing changed.
    #[serde(default = "yes")]
    pub voice_available: bool,
}

/// `toggle_listening` → `{state, voice_available}`: the state it leads to (`idle` or
/// `activated`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToggleListeningReply {
    /// `idle` when it stopped listening, `activated` when it started; without voice the
    /// current state, unchanged.
    pub state: String,
    /// Whether this daemon was built with voice *(extension)*.
    #[serde(default = "yes")]
    pub voice_available: bool,
}

fn yes() -> bool {
    true
}

/// `asset_download` → `{started: true, token, kind, name}`, or `{started: false,
/// already_running: true, token}` while the same asset downloads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssetDownloadReply {
    /// A download started.
    pub started: bool,
    /// `<kind>:<name>`; the `asset_progress` events carry it.
    pub token: String,
    /// The same asset downloads already (only then present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub already_running: Option<bool>,
    /// `whisper_model`, `piper_voice` or `wake_word` (when started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The model's name (when started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}
