//! The voice fields of the daemon's `status` object, from a resolved plan.

use sayri_protocol::reply::runtime::{StatusReply, VoiceStatus};
use sayri_voice::engines::REBUILD_HINT;
use sayri_voice::plan::VoicePlan;

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

/// Writes the voice members of `status`: `stt_ready`, `stt_missing`, `tts_ready`,
/// `tts_missing`, `wake_ready`, `wake_missing` (each missing entry says what to install),
/// `stt_mode`, `mic_on`, `armed`, `speaking`, `wake_phrase` (the phrase that really wakes
/// Sayri, or null), and `voice` with the details: `built`, `running`, `whisper_model`,
/// `piper_voice`, `tts_engine`, `wake_model`, `vad`, `input`, `output`, `notes`, `error`,
/// `mic_problem` (what is wrong with the microphone and what Sayri waits for, or null),
/// `mic_device` (the device in use).
pub fn fill(status: &mut StatusReply, plan: &VoicePlan, built: bool, state: &LoopState) {
    let with_build = |mut missing: Vec<String>| {
        if !built {
            missing.insert(0, not_built());
        }
        missing
    };
    status.stt_ready = built && plan.stt_ready();
    status.stt_missing = with_build(plan.stt_missing());
    status.tts_ready = built && plan.tts_ready();
    let tts_missing = if plan.piper_ready() {
        Vec::new()
    } else {
        plan.tts_missing()
    };
    status.tts_missing = with_build(tts_missing);
    status.wake_ready = built && plan.wake_ready();
    status.wake_missing = with_build(plan.wake_missing());
    status.stt_mode = plan.mode.as_str().into();
    status.mic_on = state.mic_on;
    status.armed = state.armed;
    status.speaking = state.speaking;
    status.wake_phrase = plan.wake_phrase.clone();
    status.voice = VoiceStatus {
        built,
        running: state.running,
        whisper_model: plan.whisper.name.clone(),
        piper_voice: plan.piper.name.clone().filter(|_| plan.piper_ready()),
        tts_engine: plan.tts_engine(),
        wake_model: plan.wake.name.clone(),
        vad: if plan.vad_ready { "silero" } else { "energy" }.into(),
        input: plan.input.describe(),
        output: plan.output.describe(),
        notes: plan.notes(),
        error: state.error.clone(),
        mic_problem: state.mic_problem.clone(),
        mic_device: state.mic_device.clone(),
    };
}
