//! Voice figures on the real models of `./scripts/setup --voice`:
//!
//! * the speech-to-text real-time factor of whisper tiny.en (transcription wall time ÷ audio
//!   length) on a spoken sentence, in this process through `sayri_voice::stt::WhisperStt` —
//!   the engine the daemon runs;
//! * end of speech → first reply audio of spoken turns through the daemon, with its parts.
//!   The daemon runs in `wakeword` mode against the instant scripted model (no model time),
//!   with a WAV file heard in real time as its microphone (`live-file:`, so its workers race
//!   the audio as on a sound card) and another WAV file as its speaker. The microphone file
//!   holds "Hey Jarvis, what is the capital of France?" [`TURNS`] times, 6 s of silence after
//!   each. The loop writes one speaker frame per microphone frame, so both files share one
//!   sample clock: the latency of a turn is the distance from the last voiced sample of the
//!   question to the first audible sample of the reply. Its parts come from the events a
//!   client receives (wall time, anchored at the `speaking` event): end-of-utterance
//!   detection (→ `hint` "Transcribing…"), the transcription still left (→ `user`), the core
//!   turn (→ `assistant_done`) and the first synthesised chunk (→ `speaking`).
//!
//! The spoken audio is Piper's `en_US-joe-medium` voice, rendered reproducibly by
//! `sayri say --reproducible --to-file`.
//! Every process this section starts belongs to its installation and is checked gone at the
//! end. Without the models the section says what is missing and how to install it, and the
//! rest of the report is still written.

use crate::procs::{Install, connect_ready};
use crate::report::{Row, Section};
use crate::stats::Stat;
use sayri_core::ports::speech::SpeechToText;
use sayri_voice::models::{ModelKind, ModelStore};
use sayri_voice::stt::WhisperStt;
use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Spoken turns through the daemon.
const TURNS: usize = 5;
/// Timed transcriptions of the sentence (after one untimed warm-up).
const TRANSCRIPTIONS: usize = 5;
/// The end-of-utterance silence the daemon is configured with (`stt.silence_ms`).
const SILENCE_MS: u64 = 500;
/// The sentence whose transcription gives the real-time factor.
const SENTENCE: &str =
    "Hello world. The quick brown fox jumps over the lazy dog. Please turn on the kitchen lights.";
/// The spoken question of each turn.
const QUESTION: &str = "Hey Jarvis, what is the capital of France?";
/// Section title.
const TITLE: &str = "Voice";

/// What each row is compared with (targets of the voice loop).
const RTF_TARGET: &str = "target ≤ 0.3 for tiny.en";
const LATENCY_TARGET: &str = "target ≤ 1,000 ms excluding model time";

/// The voice section: measured figures, or rows saying what is missing when the voice models
/// are not installed. Errors: a failure of a run on installed models (the daemon did not
/// answer, a process was left running, …).
pub fn run(bin: &Path, base_url: &str) -> Result<Section, String> {
    let store = ModelStore::open_default();
    let missing = missing_models(&store);
    if !missing.is_empty() {
        return Ok(not_measured(&store, &missing));
    }
    let install = Install::new(
        bin,
        base_url,
        &format!(
            "\n[stt]\nmode = \"wakeword\"\nlanguage = \"en\"\nmodel_size = \"tiny\"\n\
             silence_ms = {SILENCE_MS}\n\n[tts]\nlanguage = \"en_US\"\nvoice = \"joe\"\n"
        ),
    )?
    .with_env("SAYRI_VOICE_MODELS_DIR", store.root());
    let mut rows = vec![real_time_factor(&install, &store)?];
    rows.extend(spoken_turns(&install)?);
    install.check_no_leftovers()?;
    Ok(Section {
        title: TITLE.into(),
        method: format!(
            "Real models of `./scripts/setup --voice` (whisper tiny.en, Piper `en_US-joe-medium`, \
             openWakeWord `hey_jarvis_v0.1`, Silero VAD); the spoken audio is Piper's, written by \
             `sayri say --reproducible --to-file`. The real-time factor is whisper's transcription \
             wall time ÷ the audio's length, with the engine the daemon runs ({TRANSCRIPTIONS} \
             runs after a warm-up). End of speech → first reply audio is measured on {TURNS} \
             spoken turns through the daemon in `wakeword` mode against the instant scripted \
             model (no chat-model time), with a WAV file heard in real time as the microphone \
             (`live-file:`) and a WAV file as the speaker: both share one sample clock, so a \
             turn's latency is the distance from the last voiced sample of the question to the \
             first audible sample of the reply. Its parts come from the events (`hint` \
             \"Transcribing…\", `user`, `assistant_done`, `speaking`), anchored at `speaking`."
        ),
        rows,
        extra: String::new(),
    })
}

/// The model files the section needs that are not installed, each with how to install it.
fn missing_models(store: &ModelStore) -> Vec<String> {
    let mut missing: Vec<String> = [
        (ModelKind::Whisper, "tiny.en"),
        (ModelKind::PiperVoice, "en_US-joe-medium"),
        (ModelKind::WakeWord, "hey_jarvis_v0.1"),
        (ModelKind::Vad, "silero_vad"),
    ]
    .into_iter()
    .filter_map(|(kind, name)| store.require(kind, name).err())
    .map(|e| e.to_string())
    .collect();
    if let Err(e) = store.onnxruntime_library() {
        missing.push(e.to_string());
    }
    if store.piper_program().is_none() {
        missing.push(format!(
            "the piper program is not installed (neither {} nor `piper` on PATH)",
            store.root().join("piper-venv/bin/piper").display()
        ));
    }
    missing
}

/// The section when models are missing: the rows without values, saying what to do.
fn not_measured(store: &ModelStore, missing: &[String]) -> Section {
    let why = format!(
        "not measured: the voice models are not installed in {} — run `./scripts/setup --voice`, \
         then `./scripts/bench --only voice`",
        store.root().display()
    );
    Section {
        title: TITLE.into(),
        method: format!(
            "Not measured in this run: the voice models are missing. {}",
            missing.join("; ")
        ),
        rows: vec![
            Row::new("STT real-time factor, whisper tiny.en", None, "")
                .reference(RTF_TARGET)
                .note(&why),
            Row::new("end of speech → first reply audio", None, "ms")
                .reference(LATENCY_TARGET)
                .note(why),
        ],
        extra: String::new(),
    }
}

/// `sayri say --to-file WAV TEXT` in the installation; the 16 kHz samples.
fn speak(install: &Install, text: &str, wav: &Path) -> Result<Vec<i16>, String> {
    let out = install
        .cmd()
        .args(["say", "--reproducible", "--to-file"])
        .arg(wav)
        .arg(text)
        .output()
        .map_err(|e| format!("cannot run sayri say: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "sayri say --to-file failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    sayri_voice::audio::read_wav_16k(wav).map_err(|e| e.to_string())
}

/// CPU seconds (user + system) this process has used so far, all threads.
fn cpu_seconds() -> f64 {
    // SAFETY: rusage is plain integers, for which all-zero is a valid value.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the live struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Whisper tiny.en's real-time factor on [`SENTENCE`].
fn real_time_factor(install: &Install, store: &ModelStore) -> Result<Row, String> {
    crate::progress("voice: whisper tiny.en real-time factor");
    let audio = speak(install, SENTENCE, &install.dir.path().join("sentence.wav"))?;
    let secs = audio.len() as f64 / 16_000.0;
    let mut stt = WhisperStt::load(store, "tiny.en", "en").map_err(|e| e.to_string())?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    let mut text = String::new();
    for i in 0..=TRANSCRIPTIONS {
        let (t, c) = (Instant::now(), cpu_seconds());
        text = stt
            .transcribe(&audio, &CancellationToken::new())
            .map_err(|e| format!("whisper tiny.en: {e}"))?
            .text;
        if i > 0 {
            wall.push(t.elapsed().as_secs_f64() / secs);
            cpu.push((cpu_seconds() - c) / threads as f64 / secs);
        }
    }
    Ok(
        Row::new("STT real-time factor, whisper tiny.en", Stat::of(&wall), "")
            .decimals(2)
            .reference(RTF_TARGET)
            .note(format!(
                "{secs:.1} s sentence, {threads} threads; transcription wall time ÷ audio length; \
                 on idle cores (CPU time ÷ {threads} ÷ audio length) {:.2}; transcript \"{text}\"",
                Stat::of(&cpu).map_or(f64::NAN, |s| s.median)
            )),
    )
}

/// One spoken turn, in ms: end of speech → first reply audio on the sample clock (`total`),
/// and its parts from the events' wall times: end-of-utterance detection, transcription left
/// after it, core turn, first synthesised audio.
struct Turn {
    detect: f64,
    stt: f64,
    turn: f64,
    tts: f64,
    total: f64,
}

/// A sample louder than this (about −44 dBFS) is audible speech.
const AUDIBLE: u16 = 200;

/// The microphone file — the question [`TURNS`] times, 6 s of silence after each — and the
/// sample positions where each question's speech ends.
fn microphone(install: &Install) -> Result<(PathBuf, Vec<usize>), String> {
    let question = speak(install, QUESTION, &install.dir.path().join("question.wav"))?;
    let voiced_end = question
        .iter()
        .rposition(|s| s.unsigned_abs() > AUDIBLE)
        .map_or(question.len(), |i| i + 1);
    let mut all = vec![0i16; 700 * 16];
    let mut ends = Vec::new();
    for _ in 0..TURNS {
        ends.push(all.len() + voiced_end);
        all.extend(&question);
        all.extend(std::iter::repeat_n(0, 6000 * 16));
    }
    let mic = install.dir.path().join("mic.wav");
    sayri_voice::audio::write_wav_16k(&mic, &all).map_err(|e| e.to_string())?;
    Ok((mic, ends))
}

/// Per question end, the first audible sample the speaker played after it (before the next
/// question ends), in samples from the start; `None` where no reply was heard.
fn reply_starts(played: &[i16], ends: &[usize]) -> Vec<Option<usize>> {
    ends.iter()
        .enumerate()
        .map(|(i, &end)| {
            let until = ends
                .get(i + 1)
                .copied()
                .unwrap_or(played.len())
                .min(played.len());
            played
                .get(end..until)?
                .iter()
                .position(|s| s.unsigned_abs() > AUDIBLE)
                .map(|p| end + p)
        })
        .collect()
}

/// End of speech → first reply audio through the daemon, and its parts.
fn spoken_turns(install: &Install) -> Result<Vec<Row>, String> {
    crate::progress("voice: spoken turns through the daemon");
    let (mic, ends) = microphone(install)?;
    let speaker = install.dir.path().join("speaker.wav");
    rewrite_devices(install, &mic, &speaker)?;
    let (daemon, _) = install.start_daemon()?;
    let mut client = connect_ready(&install.socket()).ok_or("cannot connect to the daemon")?;
    client
        .get_ref()
        .set_read_timeout(Some(Duration::from_secs(300)))
        .map_err(|e| e.to_string())?;
    let mut marks: Vec<(&'static str, Instant)> = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        match client.read_line(&mut line) {
            Ok(0) => return Err("the daemon closed the connection during the voice run".into()),
            Ok(_) => {}
            Err(e) => return Err(format!("no event from the daemon for 300 s: {e}")),
        }
        let at = Instant::now();
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        let tag = match v["event"].as_str() {
            Some("hint") if v["text"] == "Transcribing…" => "end",
            Some("hint") if v["text"] == "The microphone input ended." => break,
            Some("user") => "user",
            Some("assistant_done") => "done",
            Some("speaking") if v["active"] == true => "audio",
            Some("error") => return Err(format!("the daemon reported {}", v["error"])),
            _ => continue,
        };
        marks.push((tag, at));
    }
    drop(client);
    daemon.stop()?;
    let played = sayri_voice::audio::read_wav_16k(&speaker)
        .map_err(|e| format!("cannot read what the daemon played: {e}"))?;
    let heard = marks.iter().filter(|(t, _)| *t == "user").count();
    if heard != TURNS {
        return Err(format!(
            "the daemon heard {heard} of the {TURNS} spoken questions (events seen: {:?})",
            marks.iter().map(|(t, _)| *t).collect::<Vec<_>>()
        ));
    }
    let turns = turns(&marks, &reply_starts(&played, &ends), &ends);
    if turns.is_empty() {
        return Err(format!(
            "the daemon answered none of the {TURNS} spoken questions (events seen: {:?})",
            marks.iter().map(|(t, _)| *t).collect::<Vec<_>>()
        ));
    }
    let stat = |f: fn(&Turn) -> f64| Stat::of(&turns.iter().map(f).collect::<Vec<_>>());
    Ok(vec![
        Row::new("end of speech → first reply audio", stat(|t| t.total), "ms")
            .decimals(0)
            .note(format!(
                "last voiced sample of the question → first audible sample of the reply, on \
                 the shared sample clock of the real-time microphone file and the speaker \
                 file; daemon in wakeword mode, stt.silence_ms = {SILENCE_MS}, instant \
                 scripted model; whisper's and Piper's time included"
            )),
        Row::new(
            "  the same, excluding model time",
            stat(|t| t.detect + t.turn),
            "ms",
        )
        .decimals(0)
        .reference(LATENCY_TARGET)
        .note(
            "end-of-utterance detection + core turn below: the total without the transcription \
             left and Piper's first chunk (an upper bound: detection can include a speculative \
             transcription that ended the utterance early)",
        ),
        Row::new("↳ end-of-utterance detection", stat(|t| t.detect), "ms")
            .decimals(0)
            .note(
                "end of speech → `hint` \"Transcribing…\" (the silence wait, shortened when a \
                 speculative transcript taken at the pause reads as a finished sentence)",
            ),
        Row::new("↳ transcription left", stat(|t| t.stt), "ms")
            .decimals(0)
            .note(
                "→ `user`: whisper tiny.en on the question after the wake word, minus what \
                 the speculative transcription already did during the silence",
            ),
        Row::new("↳ core turn", stat(|t| t.turn), "ms")
            .decimals(0)
            .note("`user` → `assistant_done` (agent turn against the instant model)"),
        Row::new("↳ first synthesised audio", stat(|t| t.tts), "ms")
            .decimals(0)
            .note("`assistant_done` → `speaking` (sentence split, Piper's first chunk)"),
    ])
}

/// Points the installation's microphone and speaker at the files.
fn rewrite_devices(install: &Install, mic: &Path, speaker: &Path) -> Result<(), String> {
    let path = install.dir.path().join("config/sayri.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
    let text = text
        .replace(
            "[stt]\n",
            &format!("[stt]\nmic_device = \"live-file:{}\"\n", mic.display()),
        )
        .replace(
            "[tts]\n",
            &format!("[tts]\noutput_device = \"file:{}\"\n", speaker.display()),
        );
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// One [`Turn`] per `user` event: from the last `end` before it to the first `done` and
/// `audio` after it (before the next `user`); its total from the `n`-th question's end of
/// speech (`ends`) to the reply heard after it (`starts`), in samples.
fn turns(marks: &[(&str, Instant)], starts: &[Option<usize>], ends: &[usize]) -> Vec<Turn> {
    let ms = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64() * 1e3;
    let mut out = Vec::new();
    let mut question = 0;
    for (i, &(tag, user)) in marks.iter().enumerate() {
        if tag != "user" {
            continue;
        }
        let n = question;
        question += 1;
        let (Some(&Some(start)), Some(&end_of_speech)) = (starts.get(n), ends.get(n)) else {
            continue;
        };
        let total = start.saturating_sub(end_of_speech) as f64 / 16.0;
        let end = marks[..i].iter().rev().find(|(t, _)| *t == "end");
        let next_user = marks[i + 1..]
            .iter()
            .position(|(t, _)| *t == "user")
            .map_or(marks.len(), |p| i + 1 + p);
        let after = |want: &str| {
            marks[i..next_user]
                .iter()
                .find(|(t, _)| *t == want)
                .map(|&(_, at)| at)
        };
        if let (Some(&(_, end)), Some(done), Some(audio)) = (end, after("done"), after("audio")) {
            out.push(Turn {
                detect: total - ms(end, audio),
                stt: ms(end, user),
                turn: ms(user, done),
                tts: ms(done, audio),
                total,
            });
        }
    }
    out
}
