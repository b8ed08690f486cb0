//! The assistant's own voice never wakes it; the person's voice still can (barge-in). The
//! microphone stays open while the assistant speaks; a simulated room feeds everything the
//! speaker plays back into the microphone 40 ms later at −12 dB (or 0 dB) with −50 dBFS
//! noise. The person's voice is Piper's, pitch-shifted to sound like someone else.

use super::harness::{
    ScriptedModel, config, count, describe, engines, is_user, is_wake, milestones, run,
};
use super::support::{speech, words};
use sayri_core::domain::voice::{VoiceEvent, VoiceMode};
use sayri_core::engine::events::CoreState;
use sayri_voice::audio::{Room, RoomConfig};
use sayri_voice::voice_loop::{LoopStats, TimedEvent};

const REPLY: &str = "My wake phrase is hey jarvis. Say hey jarvis and I will listen.";

struct Outcome {
    events: Vec<TimedEvent>,
    stats: LoopStats,
    model: ScriptedModel,
    room: Room,
}

fn converse(mode: VoiceMode, echo_db: f32, barge_in: bool, protect: bool) -> Outcome {
    let room = Room::new(RoomConfig {
        echo_gain_db: Some(echo_db),
        ..RoomConfig::default()
    });
    room.say_at(
        600,
        &speech("Hey Jarvis, what is your wake phrase?", "user"),
    );
    if barge_in {
        room.say_during_playback(1500, &speech("Hey Jarvis, what time is it?", "user"));
    }
    room.set_length_ms(4000);
    let model = ScriptedModel::start(&[REPLY, "It is noon."]);
    let mut cfg = config(mode);
    cfg.echo_cancel = protect;
    let (events, stats) = run(
        engines(protect),
        cfg,
        Box::new(room.microphone()),
        Box::new(room.speaker()),
        model.agent.clone(),
        &[],
    );
    Outcome {
        events,
        stats,
        model,
        room,
    }
}

fn users(o: &Outcome) -> Vec<String> {
    o.events
        .iter()
        .filter_map(|e| match &e.event {
            VoiceEvent::User(t) => Some(words(t)),
            _ => None,
        })
        .collect()
}

/// Sink positions of `speaking` true/false events.
fn speaking_spans(o: &Outcome) -> Vec<(u64, u64)> {
    let mut spans = Vec::new();
    let mut start = None;
    for e in &o.events {
        match e.event {
            VoiceEvent::Speaking(true) => start = Some(e.at),
            VoiceEvent::Speaking(false) => {
                if let Some(s) = start.take() {
                    spans.push((s, e.at));
                }
            }
            _ => {}
        }
    }
    spans
}

fn assert_no_self_trigger(o: &Outcome) {
    let m = milestones(&o.events);
    assert_eq!(
        count(&o.events, is_wake),
        1,
        "one wake word, the person's: {}",
        describe(&m)
    );
    assert_eq!(
        users(o),
        vec!["what is your wake phrase"],
        "{}",
        describe(&m)
    );
    assert_eq!(o.model.queries().len(), 1, "one model request");
    let spans = speaking_spans(o);
    assert_eq!(spans.len(), 1, "speaking true then false: {}", describe(&m));
    let (_, to) = spans[0];
    let after = to + 16_000;
    let start = o
        .events
        .iter()
        .position(|e| e.event == VoiceEvent::Speaking(true))
        .expect("speaking started");
    let quiet = o.events[start..]
        .iter()
        .filter(|e| e.at <= after)
        .filter(|e| is_wake(&e.event) || is_user(&e.event))
        .count();
    assert_eq!(
        quiet, 0,
        "no wake word or query from playback start to 1 s after it"
    );
    assert_eq!(
        o.events.iter().rev().find_map(|e| match e.event {
            VoiceEvent::State(s) => Some(s),
            _ => None,
        }),
        Some(CoreState::Idle)
    );
    let played = o.room.played();
    assert!(
        played.iter().any(|s| s.unsigned_abs() > 3000),
        "the reply really was played into the room"
    );
}

#[test]
fn own_reply_with_the_wake_phrase_does_not_wake_the_assistant() {
    let o = converse(VoiceMode::Wakeword, -12.0, false, true);
    assert_no_self_trigger(&o);
    eprintln!("row 1 stats: {:?}", o.stats);
}

#[test]
fn own_reply_does_not_wake_it_with_a_loud_speaker_at_0_db() {
    let o = converse(VoiceMode::Wakeword, 0.0, false, true);
    assert_no_self_trigger(&o);
    eprintln!("row 4 stats: {:?}", o.stats);
}

#[test]
fn without_echo_protection_the_same_room_makes_it_wake_itself() {
    // The control for the two tests above: the room really does carry the wake phrase back.
    let o = converse(VoiceMode::Wakeword, 0.0, false, false);
    let m = milestones(&o.events);
    assert!(
        count(&o.events, is_wake) > 1 || o.model.queries().len() > 1,
        "expected a self-trigger without echo cancellation: {}",
        describe(&m)
    );
}

#[test]
fn always_mode_does_not_take_its_own_echo_as_a_query() {
    let o = converse(VoiceMode::Always, -12.0, false, true);
    let m = milestones(&o.events);
    assert_eq!(
        users(&o),
        vec!["what is your wake phrase"],
        "{}",
        describe(&m)
    );
    assert_eq!(o.model.queries().len(), 1);
    assert_eq!(
        speaking_spans(&o).len(),
        1,
        "the reply was not cut: {}",
        describe(&m)
    );
    assert_eq!(o.stats.speech_stopped, 0, "the echo did not barge in");
}

#[test]
fn wake_word_over_the_reply_stops_speech_within_200_ms() {
    let o = converse(VoiceMode::Wakeword, -12.0, true, true);
    let m = milestones(&o.events);
    let wakes: Vec<&TimedEvent> = o.events.iter().filter(|e| is_wake(&e.event)).collect();
    assert_eq!(wakes.len(), 2, "{}", describe(&m));
    assert_eq!(
        users(&o),
        vec!["what is your wake phrase", "what time is it"],
        "{}",
        describe(&m)
    );
    assert_eq!(o.model.queries().len(), 2);
    // Measured on the sink's sample clock: nothing of the first reply plays more than 200 ms
    // after the person's wake word was detected.
    let detected = wakes[1].sink_position as usize;
    let next_reply = o
        .events
        .iter()
        .filter(|e| matches!(e.event, VoiceEvent::Speaking(true)))
        .map(|e| e.sink_position as usize)
        .find(|&p| p > detected)
        .expect("the second reply is spoken");
    let played = o.room.played();
    let last_audible = played[detected..next_reply]
        .iter()
        .rposition(|s| s.unsigned_abs() > 30)
        .map_or(0, |i| i + 1);
    let latency_ms = last_audible as f64 / 16.0;
    eprintln!("barge-in: speech stopped {latency_ms:.0} ms after the wake word (sink clock)");
    assert!(
        latency_ms <= 200.0,
        "speech went on {latency_ms:.0} ms after the wake word"
    );
    assert!(
        next_reply > detected + 3200,
        "the window checked is not empty"
    );
    assert_eq!(o.stats.speech_stopped, 1);
}
