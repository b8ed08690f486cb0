//! The voice fields of the daemon's `status` object, from a resolved plan.

use sayri_voice::engines::REBUILD_HINT;
use sayri_voice::plan::VoicePlan;
use serde_json::{Map, Value, json};

/// What a voice command answers, and `status` lists, when this build has no voice.
pub fn not_built() -> String {
    format!("this sayri was built without voice (the `voice` cargo feature): {REBUILD_HINT}")
}

/// What the daemon's voice loop is doing, for `status`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoopState {
    /// The loop runs (its models are loaded).
    pub running: bool,
    /// The microphone is open.
    pub mic_on: bool,
    /// The next utterance is for the assistant (wake word heard or `listen`).
    pub armed: bool,
    /// A spoken query is in flight.
    pub busy: bool,
    /// Speech output is playing.
    pub speaking: bool,
    /// Why the loop could not start or stopped, if it did.
    pub error: Option<String>,
    /// What is wrong with the microphone now (stalled, ended, missing, digital silence, and
    /// what Sayri waits for), `None` while it delivers sound.
    pub mic_problem: Option<String>,
    /// The capture device in use, as the source names it (once it reported one).
    pub mic_device: Option<String>,
}

/// The strings of list field `key` of [`fields`] (`stt_missing`, `notes`, …); empty when the
/// field is absent or not a list.
pub fn string_list(fields: &Map<String, Value>, key: &str) -> Vec<String> {
    fields
        .get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// The status fields: `stt_ready`, `stt_missing`, `tts_ready`, `tts_missing`, `wake_ready`,
/// `wake_missing` (each missing entry says what to install), `stt_mode`, `mic_on`, `armed`,
/// `speaking`, `wake_phrase` (the phrase that really wakes Sayri, or null), and `voice` with
/// the details: `built`, `running`, `whisper_model`, `piper_voice`, `tts_engine`,
/// `wake_model`, `vad`, `input`, `output`, `notes`, `error`, `mic_problem` (what is wrong with
/// the microphone and what Sayri waits for, or null), `mic_device` (the device in use).
pub fn fields(plan: &VoicePlan, built: bool, state: &LoopState) -> Map<String, Value> {
    let with_build = |mut missing: Vec<String>| {
        if !built {
            missing.insert(0, not_built());
        }
        missing
    };
    let mut m = Map::new();
    m.insert("stt_ready".into(), json!(built && plan.stt_ready()));
    m.insert("stt_missing".into(), json!(with_build(plan.stt_missing())));
    m.insert("tts_ready".into(), json!(built && plan.tts_ready()));
    let tts_missing = if plan.piper_ready() {
        Vec::new()
    } else {
        plan.tts_missing()
    };
    m.insert("tts_missing".into(), json!(with_build(tts_missing)));
    m.insert("wake_ready".into(), json!(built && plan.wake_ready()));
    m.insert(
        "wake_missing".into(),
        json!(with_build(plan.wake_missing())),
    );
    m.insert("stt_mode".into(), json!(plan.mode.as_str()));
    m.insert("mic_on".into(), json!(state.mic_on));
    m.insert("armed".into(), json!(state.armed));
    m.insert("speaking".into(), json!(state.speaking));
    m.insert("wake_phrase".into(), json!(plan.wake_phrase));
    m.insert(
        "voice".into(),
        json!({
            "built": built,
            "running": state.running,
            "whisper_model": plan.whisper.name,
            "piper_voice": plan.piper.name.as_ref().filter(|_| plan.piper_ready()),
            "tts_engine": plan.tts_engine(),
            "wake_model": plan.wake.name,
            "vad": if plan.vad_ready { "silero" } else { "energy" },
            "input": plan.input.describe(),
            "output": plan.output.describe(),
            "notes": plan.notes(),
            "error": state.error,
            "mic_problem": state.mic_problem,
            "mic_device": state.mic_device,
        }),
    );
    m
}
