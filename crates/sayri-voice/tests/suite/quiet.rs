//! After the wake word, silence or noise until the activation timeout returns the loop to
//! waiting for the wake word: no transcription, no model request, and the next wake word
//! still works (the loop never goes deaf).

use super::harness::{ScriptedModel, config, count, describe, engines, is_wake, milestones, run};
use super::support::{speech, words};
use sayri_core::domain::voice::{VoiceEvent, VoiceMode};
use sayri_core::engine::events::CoreState;
use sayri_voice::audio::room::fan_noise;
use sayri_voice::audio::{Room, RoomConfig};

fn wake_pause_then_ask(background: Option<Vec<i16>>) {
    let room = Room::new(RoomConfig::default());
    let first = speech("Hey Jarvis.", "user");
    let first_ms = first.len() as u64 / 16;
    room.say_at(600, &first);
    let second_at = 600 + first_ms + 8000;
    room.say_at(second_at, &speech("Hey Jarvis, what time is it?", "user"));
    room.set_length_ms(second_at + 4000);
    if let Some(noise) = background {
        room.background(0, &noise);
    }
    let model = ScriptedModel::start(&["It is noon."]);
    let (events, stats) = run(
        engines(true),
        config(VoiceMode::Wakeword),
        Box::new(room.microphone()),
        Box::new(room.speaker()),
        model.agent.clone(),
        &[],
    );
    let m = milestones(&events);
    assert_eq!(
        count(&events, is_wake),
        2,
        "both wake words heard: {}",
        describe(&m)
    );
    // Between the two wake words: back to idle by timeout, nothing transcribed.
    let wakes: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| is_wake(&e.event))
        .map(|(i, _)| i)
        .collect();
    let between = &events[wakes[0]..wakes[1]];
    assert!(
        !between
            .iter()
            .any(|e| e.event == VoiceEvent::State(CoreState::Thinking)
                || matches!(&e.event, VoiceEvent::Partial(t) if !t.is_empty())),
        "nothing transcribed after the first wake word: {}",
        describe(&milestones(between))
    );
    assert!(
        between
            .iter()
            .any(|e| e.event == VoiceEvent::State(CoreState::Idle)),
        "the activation timed out back to idle"
    );
    assert_eq!(
        stats.stt_calls, 1,
        "only the question was transcribed: {stats:?}"
    );
    let queries: Vec<String> = model.queries().iter().map(|q| words(q)).collect();
    assert_eq!(queries, vec!["what time is it"], "one model request");
}

#[test]
fn wake_word_then_8_s_of_silence_needs_no_transcription_and_the_next_wake_word_works() {
    wake_pause_then_ask(None);
}

#[test]
fn wake_word_then_fan_noise_needs_no_transcription_and_the_next_wake_word_works() {
    wake_pause_then_ask(Some(fan_noise(20_000, -35.0, 11)));
}
