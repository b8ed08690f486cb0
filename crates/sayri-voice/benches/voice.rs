//! Voice benchmarks on the real models (installed by `./scripts/setup --voice`):
//!
//! * speech-to-text real-time factor of whisper tiny.en (transcription time ÷ audio length);
//! * end of speech → first reply audio, with an instant agent (no model time): the VAD's
//!   end-of-utterance silence (audio time) plus the processing after it (transcription,
//!   sentence split, synthesis of the first chunk), measured in wall time.
//!
//! Run: `cargo bench -p sayri-voice --bench voice`. Targets: RTF ≤ 0.3, latency ≤ 1 s.

use sayri_core::domain::voice::{VoiceEvent, VoiceMode, VoiceSettings};
use sayri_core::ports::speech::SpeechToText;
use sayri_voice::audio::{Room, RoomConfig};
use sayri_voice::models::ModelStore;
use sayri_voice::stt::WhisperStt;
use sayri_voice::tts::{PiperTts, render};
use sayri_voice::vad::SileroVad;
use sayri_voice::voice_loop::{Agent, Engines, LoopConfig, VoiceLoop};
use sayri_voice::wake::OpenWakeWord;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

struct InstantAgent;

impl Agent for InstantAgent {
    fn answer(
        &self,
        _q: &str,
        _c: &CancellationToken,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<String, String> {
        let text = "Paris is the capital of France. It is also its largest city.";
        on_text(text);
        Ok(text.into())
    }
}

/// CPU seconds (user + system) this process has used so far, all threads.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// The 1-minute load average, to judge how much other work shared the cores.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().next().unwrap_or("?").to_string())
        .unwrap_or_else(|_| "?".into())
}

fn die(e: impl std::fmt::Display) -> ! {
    eprintln!("voice bench: {e}\nhint: run ./scripts/setup --voice first");
    std::process::exit(1)
}

fn main() {
    let store = ModelStore::open_default();
    let piper = PiperTts::load(&store, "en_US-joe-medium", 1.0).unwrap_or_else(|e| die(e));
    let sentence = "Hello world. The quick brown fox jumps over the lazy dog. Please turn on the kitchen lights.";
    let audio = render(&piper, sentence).unwrap_or_else(|e| die(e));
    let secs = audio.len() as f64 / 16_000.0;

    let mut stt = WhisperStt::load(&store, "tiny.en", "en").unwrap_or_else(|e| die(e));
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut best = f64::MAX;
    let mut best_cpu = f64::MAX;
    let mut text = String::new();
    for _ in 0..3 {
        let (t, c) = (Instant::now(), cpu_seconds());
        text = stt
            .transcribe(&audio, &CancellationToken::new())
            .unwrap_or_else(|e| die(e))
            .text;
        best = best.min(t.elapsed().as_secs_f64());
        best_cpu = best_cpu.min(cpu_seconds() - c);
    }
    println!(
        "stt: whisper tiny.en, {threads} threads: {secs:.2} s of audio in {best:.2} s wall → RTF {:.2} (target ≤ 0.30); \
         {best_cpu:.2} CPU-s → RTF {:.2} on {threads} idle cores; load average {}  [{text}]",
        best / secs,
        best_cpu / threads as f64 / secs,
        load_average()
    );

    let wake = || OpenWakeWord::load(&store, "hey_jarvis_v0.1").unwrap_or_else(|e| die(e));
    let piper =
        Arc::new(PiperTts::load(&store, "en_US-joe-medium", 1.0).unwrap_or_else(|e| die(e)));
    piper.prewarm();
    std::thread::sleep(std::time::Duration::from_secs(3)); // the spare Piper loads its voice
    let question = render(piper.as_ref(), "Hey Jarvis, what is the capital of France?")
        .unwrap_or_else(|e| die(e));
    piper.prewarm();
    std::thread::sleep(std::time::Duration::from_secs(3));
    let room = Room::new(RoomConfig::default());
    room.say_at(500, &question);
    room.set_length_ms(500 + question.len() as u64 / 16 + 3000);
    let engines = Engines {
        vad: Box::new(SileroVad::load(&store).unwrap_or_else(|e| die(e))),
        wake: Some(Box::new(wake())),
        playback_wake: Some(Box::new(wake())),
        stt: Box::new(WhisperStt::load(&store, "tiny.en", "en").unwrap_or_else(|e| die(e))),
        tts: Some(piper),
    };
    let cfg = LoopConfig {
        settings: VoiceSettings {
            mode: VoiceMode::Wakeword,
            wake_phrases: vec!["hey jarvis".into()],
            ..VoiceSettings::default()
        },
        partial_every_ms: 0,
        ..LoopConfig::default()
    };
    let silence_ms = cfg.segmenter.silence_ms;
    let marks: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let m2 = marks.clone();
    let (lp, _h) = VoiceLoop::new(
        engines,
        cfg,
        Box::new(room.microphone()),
        Box::new(room.speaker()),
        Arc::new(InstantAgent),
        Box::new(move |e| {
            let tag = match e.event {
                VoiceEvent::Hint(ref h) if h == "Transcribing…" => "end",
                VoiceEvent::User(_) => "user",
                VoiceEvent::Speaking(true) => "audio",
                _ => return,
            };
            m2.lock().unwrap().push((tag.into(), Instant::now()));
        }),
    );
    let cpu0 = cpu_seconds();
    lp.run().unwrap_or_else(|e| die(e));
    let loop_cpu = cpu_seconds() - cpu0;
    let marks = marks.lock().unwrap();
    let at = |tag: &str| marks.iter().find(|(t, _)| t == tag).map(|(_, i)| *i);
    match (at("end"), at("user"), at("audio")) {
        (Some(end), Some(user), Some(audio)) => {
            let stt_ms = user.duration_since(end).as_secs_f64() * 1000.0;
            let tts_ms = audio.duration_since(user).as_secs_f64() * 1000.0;
            let total = f64::from(silence_ms) + stt_ms + tts_ms;
            println!(
                "latency: end of speech → first reply audio {total:.0} ms = {silence_ms} ms end-of-utterance silence + {stt_ms:.0} ms transcription + {tts_ms:.0} ms to the first synthesised audio (instant agent; target ≤ 1000 ms); whole run {loop_cpu:.1} CPU-s; load average {}",
                load_average()
            );
        }
        _ => die("the loop did not answer the question"),
    }
}
