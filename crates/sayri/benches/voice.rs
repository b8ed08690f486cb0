//! Spoken turns through the daemon (printed, never asserted). Run:
//! `cargo bench -p sayri --bench voice` (needs the models of `./scripts/setup --voice`).
//!
//! The daemon runs in `wakeword` mode with a WAV file as its microphone and another as its
//! speaker, and a scripted model that answers at once. The microphone file holds the same
//! question ("Hey Jarvis, what is the capital of France?") several times, 6 s apart. For each
//! spoken turn the bench prints, from the events a client receives:
//!
//! * end of speech → first reply audio: the end-of-utterance silence (`stt.silence_ms`, audio
//!   time; a file microphone is read as fast as the loop goes and waits while models work) plus
//!   the wall time from the end of the utterance (`hint` "Transcribing…") to the first sample
//!   of the reply (`speaking` true) — transcription, the core turn against the instant model,
//!   sentence split and the first synthesised chunk;
//! * its parts: transcription (→ `user`), the turn (→ `assistant_done`), synthesis (→
//!   `speaking`).
//!
//! Target: ≤ 1 s end of speech → first audio, excluding model time.

use sayri_testkit::procs::ChildGuard;
use sayri_testkit::{FakeLlm, Reply, Script, sse};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sayri");
const TURNS: usize = 4;
const SILENCE_MS: u64 = 500;

fn cmd(dir: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.env("SAYRI_CONFIG_DIR", dir.join("config"))
        .env("SAYRI_STATE_DIR", dir.join("state"))
        .env(
            "SAYRI_VOICE_MODELS_DIR",
            sayri_voice::models::ModelStore::open_default().root(),
        )
        .env("HOME", dir)
        .env_remove("XDG_RUNTIME_DIR")
        .env("SAYRI_LOG", "warn")
        .stdin(Stdio::null());
    c
}

fn die(msg: &str) -> ! {
    eprintln!("voice bench: {msg}\nhint: run ./scripts/setup --voice first");
    std::process::exit(1)
}

/// The microphone file: the question `TURNS` times, 6 s of silence after each.
fn microphone(dir: &Path) -> std::path::PathBuf {
    let q = dir.join("question.wav");
    let out = cmd(dir)
        .args(["say", "--to-file"])
        .arg(&q)
        .arg("Hey Jarvis, what is the capital of France?")
        .output()
        .unwrap_or_else(|e| die(&e.to_string()));
    if !out.status.success() {
        die(&String::from_utf8_lossy(&out.stderr));
    }
    let question = sayri_voice::audio::read_wav_16k(&q).unwrap_or_else(|e| die(&e.to_string()));
    let mut all = vec![0i16; 700 * 16];
    for _ in 0..TURNS {
        all.extend(&question);
        all.extend(std::iter::repeat_n(0, 6000 * 16));
    }
    let mic = dir.join("mic.wav");
    sayri_voice::audio::write_wav_16k(&mic, &all).unwrap_or_else(|e| die(&e.to_string()));
    mic
}

fn ms(a: Instant, b: Instant) -> f64 {
    b.duration_since(a).as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let script =
        Script::from_fn(|_| Reply::sse(sse::content_stream(&["Paris is the capital of France."])));
    let server = rt.block_on(FakeLlm::start(script)).unwrap();
    let dir = tempfile::Builder::new()
        .prefix("syvoice")
        .tempdir_in("/var/tmp")
        .unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("config")).unwrap();
    let write_config = |mic: &str, speaker: &str| {
        std::fs::write(
            d.join("config/sayri.toml"),
            format!(
                "[provider]\nbase_url = \"{}\"\nmodel = \"fake-model\"\nretries = 0\n\n\
                 [stt]\nmode = \"wakeword\"\nlanguage = \"en\"\nmodel_size = \"tiny\"\n\
                 silence_ms = {SILENCE_MS}\nmic_device = \"{mic}\"\n\n\
                 [tts]\nlanguage = \"en_US\"\nvoice = \"joe\"\noutput_device = \"{speaker}\"\n",
                server.base_url()
            ),
        )
        .unwrap();
    };
    write_config("", "");
    let mic = microphone(d);
    let speaker = d.join("speaker.wav");
    write_config(
        &format!("file:{}", mic.display()),
        &format!("file:{}", speaker.display()),
    );
    let _daemon = ChildGuard::spawn_tied(
        cmd(d)
            .arg("daemon")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
        Duration::from_secs(5),
    )
    .expect("spawn sayri daemon");
    let socket = d.join("state/sayri-daemon.sock");
    let deadline = Instant::now() + Duration::from_secs(15);
    let stream = loop {
        if let Ok(s) = UnixStream::connect(&socket) {
            break s;
        }
        if Instant::now() > deadline {
            die("the daemon did not start");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(300)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut marks: Vec<(String, Instant)> = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            die("the daemon closed the connection");
        }
        let at = Instant::now();
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        let tag = match (v["event"].as_str(), &v) {
            (Some("hint"), v) if v["text"] == "Transcribing…" => "end",
            (Some("hint"), v) if v["text"] == "The microphone input ended." => break,
            (Some("user"), _) => "user",
            (Some("assistant_done"), _) => "done",
            (Some("speaking"), v) if v["active"] == true => "audio",
            (Some("error"), v) => die(&format!("the daemon reported {}", v["error"])),
            _ => continue,
        };
        marks.push((tag.to_string(), at));
    }
    let _ = writeln!(&stream, "{{\"cmd\":\"quit\",\"id\":1}}");
    // One row per turn: the first `end` before each `audio`.
    let mut rows = Vec::new();
    let mut it = marks.iter();
    while let Some((_, end)) = it.by_ref().find(|(t, _)| t == "end") {
        let mut next = |tag: &str| it.by_ref().find(|(t, _)| t == tag).map(|(_, i)| *i);
        let (Some(user), Some(done), Some(audio)) = (next("user"), next("done"), next("audio"))
        else {
            break;
        };
        rows.push((
            ms(*end, user),
            ms(user, done),
            ms(done, audio),
            ms(*end, audio),
        ));
    }
    if rows.is_empty() {
        die("no spoken turn was answered");
    }
    for (i, (stt, turn, tts, total)) in rows.iter().enumerate() {
        println!(
            "turn {}: end of speech → first audio {:.0} ms = {SILENCE_MS} ms silence + {total:.0} ms ({stt:.0} ms transcription, {turn:.0} ms core turn, {tts:.0} ms to the first synthesised audio)",
            i + 1,
            SILENCE_MS as f64 + total
        );
    }
    println!(
        "daemon, instant scripted model, {} turns: end of speech → first reply audio median {:.0} ms (target ≤ 1000 ms); processing after the silence median {:.0} ms; load average {}",
        rows.len(),
        SILENCE_MS as f64 + median(rows.iter().map(|r| r.3).collect()),
        median(rows.iter().map(|r| r.3).collect()),
        std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|s| s.split_whitespace().next().map(str::to_string))
            .unwrap_or_else(|| "?".into())
    );
}
