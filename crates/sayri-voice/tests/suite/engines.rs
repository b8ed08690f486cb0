//! Each engine on real audio: Piper renders, whisper transcribes it back, openWakeWord fires on
//! the wake phrase and not on other sentences, Silero tells speech from silence and fan noise.

use super::support::{HINT, concat, silence, speech, store, words};
use sayri_core::ports::speech::{SpeechToText, VoiceActivity, WakeWord};
use sayri_voice::audio::room::fan_noise;
use sayri_voice::stt::WhisperStt;
use sayri_voice::tts::{PiperTts, Variation, render};
use sayri_voice::vad::SileroVad;
use sayri_voice::wake::OpenWakeWord;
use tokio_util::sync::CancellationToken;

fn max_wake_score(audio: &[i16]) -> f32 {
    let mut w =
        OpenWakeWord::load(&store(), "hey_jarvis_v0.1").unwrap_or_else(|e| panic!("{HINT} ({e})"));
    audio
        .chunks(1280)
        .map(|c| w.score(c).unwrap())
        .fold(0.0, f32::max)
}

#[test]
fn piper_to_whisper_round_trips_a_sentence() {
    let audio = speech("Please turn on the kitchen lights.", "assistant");
    assert!(
        audio.len() > 16_000,
        "Piper produced {} samples",
        audio.len()
    );
    let mut stt =
        WhisperStt::load(&store(), "tiny.en", "en").unwrap_or_else(|e| panic!("{HINT} ({e})"));
    let t = stt.transcribe(&audio, &CancellationToken::new()).unwrap();
    assert_eq!(words(&t.text), "please turn on the kitchen lights");
}

#[test]
fn piper_fixed_variation_renders_the_same_text_to_the_same_samples() {
    let load = |v: Variation| {
        PiperTts::load(&store(), "en_US-joe-medium", 1.0)
            .unwrap_or_else(|e| panic!("{HINT} ({e})"))
            .with_variation(v)
    };
    let text = "Hey Jarvis, what time is it?";
    let fixed = load(Variation::Fixed);
    let first = render(&fixed, text).unwrap();
    assert!(
        first.len() > 16_000,
        "Piper produced {} samples",
        first.len()
    );
    assert!(
        render(&fixed, text).unwrap() == first,
        "a fixed rendition repeats sample for sample"
    );
    // Piper's natural voice draws fresh noise each time: this is why tests render with Fixed.
    let natural = load(Variation::Natural);
    assert!(
        render(&natural, text).unwrap() != render(&natural, text).unwrap(),
        "natural renditions differ from one synthesis to the next"
    );
}

#[test]
fn wake_word_fires_on_the_phrase_and_not_on_other_speech() {
    let positive = concat(&[
        &silence(500),
        &speech("Hey Jarvis, what is the capital of France?", "user"),
        &silence(500),
    ]);
    let s = max_wake_score(&positive);
    assert!(s >= 0.5, "hey jarvis scored only {s}");
    for neg in [
        "The weather is nice today, let us go for a walk.",
        "What is the capital of France?",
        "Harvey travels to Paris every summer.",
    ] {
        let audio = concat(&[&silence(500), &speech(neg, "user"), &silence(500)]);
        let s = max_wake_score(&audio);
        assert!(s < 0.5, "{neg:?} scored {s}");
    }
}

#[test]
fn silero_tells_speech_from_silence_and_fan_noise() {
    let mut vad = SileroVad::load(&store()).unwrap_or_else(|e| panic!("{HINT} ({e})"));
    let talk = speech("The quick brown fox jumps over the lazy dog.", "user");
    let peak = talk
        .chunks(1280)
        .map(|c| vad.speech_probability(c).unwrap())
        .fold(0.0, f32::max);
    assert!(peak > 0.9, "speech peak {peak}");
    vad.reset();
    let fan = fan_noise(4000, -35.0, 3);
    let fan_peak = fan
        .chunks(1280)
        .map(|c| vad.speech_probability(c).unwrap())
        .fold(0.0, f32::max);
    assert!(fan_peak < 0.5, "fan noise peak {fan_peak}");
    let quiet = silence(2000);
    let q = quiet
        .chunks(1280)
        .map(|c| vad.speech_probability(c).unwrap())
        .fold(0.0, f32::max);
    assert!(q < 0.1, "silence {q}");
}
