//! The whole loop on real models: wake word → transcript → scripted model → spoken answer.

use super::harness::{
    ScriptedModel, config, count, describe, engines, is_user, is_wake, milestones, run, state,
};
use super::support::{concat, silence, speech, store, words};
use sayri_core::domain::voice::{VoiceEvent, VoiceMode};
use sayri_core::engine::events::CoreState;
use sayri_core::ports::speech::SpeechToText;
use sayri_voice::audio::{WavSink, WavSource, read_wav_16k, write_wav_16k};
use sayri_voice::stt::WhisperStt;
use tokio_util::sync::CancellationToken;

#[test]
fn wake_word_question_is_answered_and_spoken_to_the_sink() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("mic.wav");
    let output = dir.path().join("speaker.wav");
    let mic = concat(&[
        &silence(600),
        &speech("Hey Jarvis, what is the capital of France?", "user"),
        &silence(2000),
    ]);
    write_wav_16k(&input, &mic).unwrap();
    let model = ScriptedModel::start(&["The capital of France is **Paris**."]);
    let (events, stats) = run(
        engines(true),
        config(VoiceMode::Wakeword),
        Box::new(WavSource::open(&input).unwrap()),
        Box::new(WavSink::create(&output).unwrap()),
        model.agent.clone(),
        &[],
    );
    let m = milestones(&events);
    let want = [
        VoiceEvent::Mic(true),
        state(CoreState::Activated),
        state(CoreState::Listening),
        state(CoreState::Thinking),
        VoiceEvent::Busy(true),
        state(CoreState::Speaking),
        VoiceEvent::Speaking(true),
        VoiceEvent::Speaking(false),
        state(CoreState::Idle),
    ];
    let mut it = m.iter();
    for w in &want {
        assert!(
            it.any(|e| e == w),
            "missing {w:?} in order; events: {}",
            describe(&m)
        );
    }
    assert_eq!(count(&events, is_wake), 1, "{}", describe(&m));
    let users: Vec<String> = m
        .iter()
        .filter_map(|e| match e {
            VoiceEvent::User(t) => Some(words(t)),
            _ => None,
        })
        .collect();
    assert_eq!(users, vec!["what is the capital of france"]);
    let queries: Vec<String> = model.queries().iter().map(|q| words(q)).collect();
    assert_eq!(queries, vec!["what is the capital of france"]);
    assert_eq!(stats.stt_calls, 1);
    assert!(
        stats.partial_calls >= 1,
        "partial transcripts while speaking: {stats:?}"
    );
    assert!(
        count(
            &events,
            |e| matches!(e, VoiceEvent::Partial(t) if !t.is_empty())
        ) >= 1,
        "a partial event was shown"
    );
    // The spoken answer, read back from the sink file, says what the model wrote.
    let spoken = read_wav_16k(&output).unwrap();
    let mut stt = WhisperStt::load(&store(), "tiny.en", "en").unwrap();
    let heard = stt.transcribe(&spoken, &CancellationToken::new()).unwrap();
    let heard = words(&heard.text);
    assert!(
        heard.contains("capital") && heard.contains("paris"),
        "the sink holds the spoken answer: {heard:?}"
    );
    // Audio levels are reported at most every 50 ms of audio.
    let levels: Vec<u64> = events
        .iter()
        .filter(|e| matches!(e.event, VoiceEvent::AudioLevel(_)))
        .map(|e| e.at)
        .collect();
    assert!(
        levels.windows(2).all(|w| w[1] - w[0] >= 800),
        "level events closer than 50 ms"
    );
    assert!(count(&events, is_user) == 1);
}

#[test]
fn speech_without_the_wake_word_triggers_nothing() {
    let mic = concat(&[
        &silence(500),
        &speech("What is the capital of France?", "user"),
        &silence(800),
        &speech("Harvey travels to Paris every summer.", "user"),
        &silence(1500),
    ]);
    let model = ScriptedModel::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (events, stats) = run(
        engines(true),
        config(VoiceMode::Wakeword),
        Box::new(WavSource::from_samples("negative", mic)),
        Box::new(WavSink::create(&dir.path().join("out.wav")).unwrap()),
        model.agent.clone(),
        &[],
    );
    assert_eq!(count(&events, is_wake), 0);
    assert_eq!(count(&events, is_user), 0);
    assert_eq!(
        stats.stt_calls + stats.partial_calls,
        0,
        "nothing transcribed before a wake word"
    );
    assert!(model.queries().is_empty());
}

#[test]
fn say_to_file_then_listen_to_file_round_trips_a_sentence() {
    // What `sayri say --to-file` then `sayri listen --file` do: Piper renders to a WAV file;
    // the file source runs through the loop's VAD and transcriber as a one-shot capture.
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("said.wav");
    let tts = sayri_voice::tts::PiperTts::load(&store(), "en_US-joe-medium", 1.0)
        .unwrap()
        .with_variation(sayri_voice::tts::Variation::Fixed);
    let said = sayri_voice::tts::render(&tts, "Please turn on the kitchen lights.").unwrap();
    write_wav_16k(&wav, &concat(&[&silence(400), &said, &silence(1000)])).unwrap();
    let model = ScriptedModel::start(&[]);
    let (events, stats) = run(
        engines(false),
        config(VoiceMode::Wakeword),
        Box::new(WavSource::open(&wav).unwrap()),
        Box::new(WavSink::create(&dir.path().join("out.wav")).unwrap()),
        model.agent.clone(),
        &[sayri_voice::voice_loop::Command::ListenOnce],
    );
    let transcripts: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.event {
            VoiceEvent::Transcript(t) => Some(words(t)),
            _ => None,
        })
        .collect();
    assert_eq!(transcripts, vec!["please turn on the kitchen lights"]);
    assert!(
        model.queries().is_empty(),
        "a one-shot capture sends no query"
    );
    assert_eq!(stats.stt_calls, 1);
}

#[cfg(feature = "mic")]
#[test]
fn an_unknown_microphone_is_reported_with_what_to_do() {
    let e = sayri_voice::audio::device::DeviceSource::open("no-such-device-7f3a")
        .err()
        .expect("refused");
    let msg = e.to_string();
    assert!(
        msg.contains("no-such-device-7f3a") && msg.contains("stt.mic_device"),
        "{msg}"
    );
}
