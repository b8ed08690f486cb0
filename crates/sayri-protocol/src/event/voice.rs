//! Events of the voice loop: `audio_level`, `mic`, `partial`, `speaking`, `wake`,
//! `transcript` (its `state`, `busy`, `user`, `hint` and `error` are those of
//! [`super::turns`]).

use serde::{Deserialize, Serialize};

/// `audio_level` → `{level}`: microphone or playback level, at most every 50 ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AudioLevel {
    /// 0..1 (0 after speech stops).
    pub level: f32,
}

/// `mic` → `{active}`: the microphone opens or closes (closed = the device is released).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mic {
    /// It is open.
    pub active: bool,
}

/// `partial` → `{text}`: the live transcript while the person speaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partial {
    /// The transcript so far (`""` clears it).
    pub text: String,
}

/// `speaking` → `{active}`: speech output starts (its first sample plays) or ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Speaking {
    /// Speech plays.
    pub active: bool,
}

/// `wake` → `{phrase, score, at_ms}`: the wake word was heard (echo of Sayri's own voice is
/// vetoed and never reported).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Wake {
    /// The phrase of the detector that fired.
    pub phrase: String,
    /// Its score, 0..1.
    pub score: f32,
    /// Where it was heard on the voice loop's audio clock: milliseconds of audio since the
    /// loop started.
    pub at_ms: u64,
}

/// `transcript` → `{text}`: the result of a one-shot capture (`listen`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transcript {
    /// The transcript (`""` when nothing was said).
    pub text: String,
}
