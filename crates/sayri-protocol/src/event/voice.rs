//! Events of the voice loop: `audio_level`, `mic`, `partial`, `speaking`, `wake`,
//! `transcript` (its `state`, `busy`, `user`, `hint` and `error` are those of
//! [`super::turns`]).

use crate::reply::double_option;
use serde::{Deserialize, Serialize};

/// `audio_level` → `{level}`: microphone or playback level, at most every 50 ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AudioLevel {
    /// 0..1 (0 after speech stops).
    pub level: f32,
}

/// `mic` → `{active}`: the microphone opens or closes (closed = the device is released); or
/// `{active, device, problem}`: what the microphone delivers changed — it stalled, ended,
/// vanished or gives only digital zeros (`problem` says which and what Sayri does meanwhile),
/// or it is back (`problem` null). Said once per change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mic {
    /// It is open (with `problem`: sound arrives now).
    pub active: bool,
    /// The capture device, as the source names it (with `problem` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// What is wrong with the microphone; `null` when it works again; absent on a plain open
    /// or close.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "double_option"
    )]
    pub problem: Option<Option<String>>,
}

impl Mic {
    /// The plain open (`true`) or close (`false`).
    pub fn open(active: bool) -> Mic {
        Mic {
            active,
            device: None,
            problem: None,
        }
    }
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
