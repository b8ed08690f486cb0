//! Shared test support: the model store (failing with an install hint when a model is
//! missing), cached Piper renditions of test sentences, and audio helpers.

use sayri_voice::models::ModelStore;
use sayri_voice::tts::{PiperTts, Variation, render};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

pub const HINT: &str = "voice models are not installed: run ./scripts/setup --tests (or --voice)";

/// The model store the tests use; panics with [`HINT`] when the core models are missing.
pub fn store() -> ModelStore {
    let s = ModelStore::open_default();
    for (kind, name) in [
        ("whisper", "whisper/ggml-tiny.en.bin"),
        ("piper voice", "piper/en_US-joe-medium.onnx"),
        ("wake word", "wakeword/hey_jarvis_v0.1.onnx"),
        ("VAD", "vad/silero_vad.onnx"),
    ] {
        let p = s.root().join(name);
        assert!(p.is_file(), "{HINT} ({kind} model {} missing)", p.display());
    }
    s.onnxruntime_library()
        .unwrap_or_else(|e| panic!("{HINT} ({e})"));
    s
}

fn piper(length_scale_speed: f32) -> PiperTts {
    PiperTts::load(&store(), "en_US-joe-medium", length_scale_speed)
        .unwrap_or_else(|e| panic!("{HINT} ({e})"))
        .with_variation(Variation::Fixed)
}

/// Piper's rendition of `text` at 16 kHz. `voice` picks a speaker: `"user"` is the person
/// (slower, lowered by sox to sound like someone else), `"assistant"` the assistant's voice.
/// Cached per process.
pub fn speech(text: &str, voice: &str) -> Vec<i16> {
    type Renditions = HashMap<(String, String), Vec<i16>>;
    static CACHE: OnceLock<Mutex<Renditions>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (text.to_string(), voice.to_string());
    if let Some(v) = cache.lock().unwrap().get(&key) {
        return v.clone();
    }
    let audio = match voice {
        "assistant" => render(&piper(1.0), text).expect("piper renders"),
        "user" => pitch_shift(&render(&piper(0.9), text).expect("piper renders"), -250),
        other => panic!("unknown test voice {other}"),
    };
    cache.lock().unwrap().insert(key, audio.clone());
    audio
}

/// Shifts the pitch by `cents` with sox (keeps the duration): a different-sounding speaker.
/// Without dither (`-D`): sox's default dither is random, so every run heard a slightly
/// different person and outcomes near a detector's threshold changed from run to run.
pub fn pitch_shift(audio: &[i16], cents: i32) -> Vec<i16> {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.wav");
    let b = dir.path().join("b.wav");
    sayri_voice::audio::write_wav_16k(&a, audio).unwrap();
    let st = std::process::Command::new("sox")
        .arg("-D")
        .arg(&a)
        .arg(&b)
        .args(["pitch", &cents.to_string()])
        .status()
        .unwrap_or_else(|e| panic!("sox is not installed ({e}): run ./scripts/setup --tests"));
    assert!(st.success(), "sox pitch failed");
    sayri_voice::audio::read_wav_16k(&b).unwrap()
}

/// `ms` of digital silence.
pub fn silence(ms: u64) -> Vec<i16> {
    vec![0; (ms * 16) as usize]
}

/// Concatenates clips.
pub fn concat(parts: &[&[i16]]) -> Vec<i16> {
    parts.iter().flat_map(|p| p.iter().copied()).collect()
}

/// Words of a text, lowercase, without punctuation.
pub fn words(s: &str) -> String {
    s.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace())
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
