//! Voice through the real daemon and the real CLI, on the real models (installed by
//! `./scripts/setup --tests`): a WAV file is the microphone (`stt.mic_device = file:…`) and a
//! WAV file the speaker (`tts.output_device = file:…`); no test needs a sound card. The agent
//! is the scripted model server behind the real core.

use super::scripted_turns::{Model, start_model};
use super::support::*;
use sayri_testkit::{Reply, sse};
use sayri_voice::models::ModelStore;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const HINT: &str = "voice models are not installed: run ./scripts/setup --tests (or --voice)";

/// The real voice model store (the tests' HOME is a temp dir, so it is passed explicitly).
fn models_dir() -> PathBuf {
    let store = ModelStore::open_default();
    for f in [
        "whisper/ggml-tiny.en.bin",
        "piper/en_US-joe-medium.onnx",
        "wakeword/hey_jarvis_v0.1.onnx",
        "vad/silero_vad.onnx",
    ] {
        let p = store.root().join(f);
        assert!(p.is_file(), "{HINT} ({} missing)", p.display());
    }
    store.root().to_path_buf()
}

/// `sayri ARGS` with the voice model store.
fn sayri(env: &Env, models: &Path, args: &[&str]) -> std::process::Output {
    env.cmd()
        .env("SAYRI_VOICE_MODELS_DIR", models)
        .args(args)
        .output()
        .unwrap()
}

/// `sayri.toml` speaking English with the installed models; `mic` and `speaker` are WAV files
/// (or empty for the defaults), `mode` the initial `stt.mode`.
fn write_voice_config(env: &Env, model: Option<&Model>, mode: &str, mic: &str, speaker: &str) {
    let dir = env.config_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let provider = model.map_or(String::new(), |m| {
        format!(
            "[provider]\nbase_url = \"{}\"\nmodel = \"fake-model\"\nretries = 0\n\n",
            m.llm.base_url()
        )
    });
    std::fs::write(
        dir.join("sayri.toml"),
        format!(
            "{provider}[permissions]\npolicy_files = []\n\n\
             [stt]\nmode = \"{mode}\"\nlanguage = \"en\"\nmodel_size = \"tiny\"\n\
             mic_device = \"{mic}\"\n\n\
             [tts]\nlanguage = \"en_US\"\nvoice = \"joe\"\noutput_device = \"{speaker}\"\n"
        ),
    )
    .unwrap();
}

/// Renders `text` with the real `sayri say --to-file` (Piper), with `pad_ms` of silence before
/// and after (sox), into `path`.
fn say_to_file(env: &Env, models: &Path, text: &str, path: &Path, pad_ms: u32) {
    let raw = path.with_extension("raw.wav");
    let out = sayri(
        env,
        models,
        &[
            "say",
            "--reproducible",
            "--to-file",
            raw.to_str().unwrap(),
            text,
        ],
    );
    assert!(out.status.success(), "sayri say: {}", stderr(&out));
    assert!(
        stderr(&out).contains("piper en_US-joe-medium"),
        "{}",
        stderr(&out)
    );
    let pad = format!("{:.3}", f64::from(pad_ms) / 1000.0);
    let st = std::process::Command::new("sox")
        .arg(&raw)
        .arg(path)
        .args(["pad", &pad, &pad])
        .status()
        .unwrap_or_else(|e| panic!("sox is not installed ({e}): run ./scripts/setup --tests"));
    assert!(st.success());
}

fn words(s: &str) -> String {
    s.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace())
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A daemon with the voice model store.
fn start_voice_daemon(env: &Env, models: &Path) -> Daemon {
    let mut c = env.cmd();
    c.env("SAYRI_VOICE_MODELS_DIR", models);
    env.start_daemon_cmd(c)
}

fn client(env: &Env) -> RawClient {
    let c = RawClient::connect(&env.socket());
    c.writer
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    c
}

/// Reads events until `done` says so (or 3 minutes pass); returns them with their arrival time.
fn events_until(c: &mut RawClient, done: impl Fn(&[Value]) -> bool) -> Vec<(Instant, Value)> {
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut out: Vec<(Instant, Value)> = Vec::new();
    while Instant::now() < deadline {
        let v = c.read_value();
        if v.get("event").is_some() {
            out.push((Instant::now(), v));
            let evs: Vec<Value> = out.iter().map(|(_, v)| v.clone()).collect();
            if done(&evs) {
                return out;
            }
        }
    }
    panic!(
        "events never completed: {:?}",
        out.iter().map(|(_, v)| v).collect::<Vec<_>>()
    );
}

/// Short names of milestone events (`state:idle`, `mic:true`, `wake`, `user:…`).
fn milestones(events: &[(Instant, Value)]) -> Vec<String> {
    events
        .iter()
        .filter_map(|(_, v)| {
            let p = |k: &str| v[k].to_string();
            Some(match v["event"].as_str()? {
                "state" => format!("state:{}", v["state"].as_str()?),
                "mic" => format!("mic:{}", p("active")),
                "busy" => format!("busy:{}", p("active")),
                "speaking" => format!("speaking:{}", p("active")),
                "wake" => "wake".into(),
                "user" => format!("user:{}", words(v["text"].as_str()?)),
                "assistant_done" => "assistant_done".into(),
                "error" => format!("error:{}", v["error"]),
                _ => return None,
            })
        })
        .collect()
}

fn assert_in_order(got: &[String], want: &[&str]) {
    let mut it = got.iter();
    for w in want {
        assert!(
            it.any(|g| g == w),
            "missing {w} (in order); events: {got:?}"
        );
    }
}

/// The chat requests the model got, without title requests.
fn questions(model: &Model) -> Vec<String> {
    model
        .llm
        .chat_bodies()
        .iter()
        .filter(|b| b.get("max_tokens") != Some(&json!(15)))
        .filter_map(|b| {
            b["messages"]
                .as_array()?
                .iter()
                .rev()
                .find(|m| m["role"] == "user")?["content"]
                .as_str()
                .map(words)
        })
        .collect()
}

#[test]
fn a_spoken_question_in_wakeword_mode_is_answered_and_spoken_through_the_daemon() {
    let models = models_dir();
    let env = Env::new();
    let mic = env.dir.path().join("mic.wav");
    let speaker = env.dir.path().join("speaker.wav");
    let model = start_model(vec![Reply::sse(sse::content_stream(&[
        "The capital of France ",
        "is **Paris**.",
    ]))]);
    write_voice_config(
        &env,
        Some(&model),
        "manual",
        &format!("file:{}", mic.display()),
        &format!("file:{}", speaker.display()),
    );
    say_to_file(
        &env,
        &models,
        "Hey Jarvis, what is the capital of France?",
        &mic,
        700,
    );
    let _daemon = start_voice_daemon(&env, &models);
    let mut c = client(&env);
    let st = c.call("status", json!({}), 1)["result"].clone();
    assert_eq!(
        (
            st["stt_ready"].clone(),
            st["tts_ready"].clone(),
            st["wake_ready"].clone()
        ),
        (json!(true), json!(true), json!(true)),
        "{st}"
    );
    assert_eq!(st["wake_phrase"], "hey jarvis", "{st}");
    assert!(
        st["voice"]["notes"].to_string().contains("hey sayri"),
        "status says the configured phrase has no model: {st}"
    );
    assert_eq!(st["mic_on"], false, "manual mode: the microphone is closed");
    // Switching to wakeword mode opens the microphone (the file) and listens for the wake word.
    let r = c.call(
        "config_set",
        json!({"key": "stt.mode", "value": "wakeword"}),
        2,
    );
    assert_eq!(r["ok"], true, "{r}");
    let started = Instant::now();
    let events = events_until(&mut c, |evs| {
        evs.iter()
            .any(|v| v["event"] == "hint" && v["text"] == "The microphone input ended.")
    });
    let m = milestones(&events);
    assert_in_order(
        &m,
        &[
            "mic:true",
            "wake",
            "state:activated",
            "state:listening",
            "state:thinking",
            "busy:true",
            "user:what is the capital of france",
            "assistant_done",
            "state:speaking",
            "speaking:true",
            "busy:false",
            "speaking:false",
            "state:idle",
            "mic:false",
        ],
    );
    assert_eq!(m.iter().filter(|e| *e == "wake").count(), 1, "{m:?}");
    assert!(!m.iter().any(|e| e.starts_with("error")), "{m:?}");
    let streamed: String = events
        .iter()
        .filter(|(_, v)| v["event"] == "assistant_delta")
        .filter_map(|(_, v)| v["delta"].as_str())
        .collect();
    assert_eq!(streamed, "The capital of France is **Paris**.");
    assert_eq!(questions(&model), vec!["what is the capital of france"]);
    // Levels: some, and never more than one per 50 ms of the run.
    let levels = events
        .iter()
        .filter(|(_, v)| v["event"] == "audio_level")
        .count();
    let elapsed_ms = started.elapsed().as_millis() as usize;
    assert!(
        levels > 0 && levels <= elapsed_ms / 50 + 1,
        "{levels} levels in {elapsed_ms} ms"
    );
    let st = c.call("status", json!({}), 3)["result"].clone();
    assert_eq!(
        (st["state"].clone(), st["mic_on"].clone()),
        (json!("idle"), json!(false))
    );
    // The daemon stops the loop on quit, which finishes the speaker file: it holds the answer.
    let r = c.call("quit", json!({}), 4);
    assert_eq!(r["ok"], true);
    assert!(eventually(Duration::from_secs(10), || !env
        .socket()
        .exists()));
    let out = sayri(
        &env,
        &models,
        &["listen", "--file", speaker.to_str().unwrap(), "--json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let heard: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let heard = words(heard["text"].as_str().unwrap());
    assert!(
        heard.contains("capital") && heard.contains("paris"),
        "the speaker file holds the spoken answer: {heard:?}"
    );
}

#[test]
fn say_to_file_then_listen_to_file_round_trips_a_sentence_through_the_cli() {
    let models = models_dir();
    let env = Env::new();
    write_voice_config(&env, None, "manual", "", "");
    let wav = env.dir.path().join("said.wav");
    say_to_file(
        &env,
        &models,
        "Please turn on the kitchen lights.",
        &wav,
        500,
    );
    let out = sayri(&env, &models, &["listen", "--file", wav.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(words(&stdout(&out)), "please turn on the kitchen lights");
    // With --wake the file must hold the wake word; what follows it is the transcript.
    let q = env.dir.path().join("question.wav");
    say_to_file(&env, &models, "Hey Jarvis, what time is it?", &q, 500);
    let out = sayri(
        &env,
        &models,
        &["listen", "--file", q.to_str().unwrap(), "--wake", "--json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(words(v["text"].as_str().unwrap()), "what time is it");
    assert_eq!(v["wake"][0]["phrase"], "hey jarvis", "{v}");
    let out = sayri(
        &env,
        &models,
        &["listen", "--file", wav.to_str().unwrap(), "--wake"],
    );
    assert_eq!(out.status.code(), Some(1), "no wake word in it");
    assert!(
        stderr(&out).contains("no wake word heard"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn listen_captures_one_utterance_from_the_microphone_and_sends_no_query() {
    let models = models_dir();
    let env = Env::new();
    let mic = env.dir.path().join("mic.wav");
    let model = start_model(vec![]);
    write_voice_config(
        &env,
        Some(&model),
        "manual",
        &format!("file:{}", mic.display()),
        "",
    );
    say_to_file(
        &env,
        &models,
        "Please turn on the kitchen lights.",
        &mic,
        800,
    );
    let _daemon = start_voice_daemon(&env, &models);
    let out = sayri(&env, &models, &["listen", "--json", "--timeout", "60"]);
    assert!(out.status.success(), "{} {}", stderr(&out), stdout(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        words(v["text"].as_str().unwrap()),
        "please turn on the kitchen lights"
    );
    assert!(
        questions(&model).is_empty(),
        "a one-shot capture sends no query"
    );
    let mut c = client(&env);
    assert!(
        eventually(Duration::from_secs(10), || {
            c.call("status", json!({}), 1)["result"]["mic_on"] == false
        }),
        "manual mode closes the microphone after the capture"
    );
    // toggle starts listening (the file plays again), stop_listening closes the microphone.
    let r = c.call("toggle_listening", json!({}), 2);
    assert_eq!(r["result"]["state"], "activated", "{r}");
    let r = c.call("stop_listening", json!({}), 3);
    assert_eq!(r["result"]["stopped"], true, "{r}");
    assert!(eventually(Duration::from_secs(10), || {
        c.call("status", json!({}), 4)["result"]["mic_on"] == false
    }));
    // Speech input turned off: the loop stops, and listening is refused saying how to turn it on.
    let r = c.call(
        "config_set",
        json!({"key": "stt.mode", "value": "disabled"}),
        5,
    );
    assert_eq!(r["ok"], true, "{r}");
    let r = c.call("listen", json!({"timeout": 5}), 6);
    assert_eq!(r["code"], "unavailable", "{r}");
    assert!(r["error"].as_str().unwrap().contains("stt.mode"), "{r}");
    assert!(
        eventually(Duration::from_secs(10), || {
            c.call("status", json!({}), 7)["result"]["voice"]["running"] == false
        }),
        "the loop stops when speech input is turned off"
    );
}

#[test]
fn without_voice_models_status_and_listen_say_what_to_install() {
    let env = Env::new();
    let empty = env.dir.path().join("no-models");
    write_voice_config(&env, None, "wakeword", "", "");
    let _daemon = start_voice_daemon(&env, &empty);
    let mut c = client(&env);
    let st = c.call("status", json!({}), 1)["result"].clone();
    assert_eq!(st["stt_ready"], false, "{st}");
    assert_eq!(st["wake_ready"], false, "{st}");
    assert_eq!(
        st["mic_on"], false,
        "nothing to listen with: the microphone stays closed"
    );
    let stt = st["stt_missing"].to_string();
    assert!(
        stt.contains("sayri models download whisper tiny.en") && stt.contains("setup --voice"),
        "{stt}"
    );
    assert!(
        st["wake_missing"].to_string().contains("hey_jarvis_v0.1"),
        "{st}"
    );
    let r = c.call("listen", json!({}), 2);
    assert_eq!(r["code"], "unavailable", "{r}");
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("sayri models download whisper"),
        "{r}"
    );
    // A model named in a setting must be installed.
    let r = c.call(
        "config_set",
        json!({"key": "stt.whisper_model", "value": "base"}),
        3,
    );
    assert_eq!(r["code"], "invalid_params", "{r}");
    assert!(r["error"].as_str().unwrap().contains("sayri models"), "{r}");
    // A file microphone must be a readable WAV file.
    let r = c.call(
        "config_set",
        json!({"key": "stt.mic_device", "value": "file:/nonexistent/x.wav"}),
        4,
    );
    assert_eq!(r["code"], "invalid_params", "{r}");
}

/// Renders each `(silence before in ms, text)` with `sayri say --to-file` and joins them into
/// one 16 kHz WAV file at `path`, followed by `tail_ms` of silence.
fn script_to_file(env: &Env, models: &Path, parts: &[(u32, &str)], tail_ms: u32, path: &Path) {
    let mut all: Vec<i16> = Vec::new();
    for (i, (gap_ms, text)) in parts.iter().enumerate() {
        let part = path.with_extension(format!("part{i}.wav"));
        let out = sayri(
            env,
            models,
            &[
                "say",
                "--reproducible",
                "--to-file",
                part.to_str().unwrap(),
                text,
            ],
        );
        assert!(out.status.success(), "sayri say: {}", stderr(&out));
        all.extend(std::iter::repeat_n(0, *gap_ms as usize * 16));
        all.extend(sayri_voice::audio::read_wav_16k(&part).unwrap());
    }
    all.extend(std::iter::repeat_n(0, tail_ms as usize * 16));
    sayri_voice::audio::write_wav_16k(path, &all).unwrap();
}

/// The end of the run of sound that goes on at sample `from` of `samples`: the first sample
/// after which 300 ms pass in silence.
fn end_of_sound(samples: &[i16], from: usize) -> usize {
    let quiet = 300 * 16;
    let mut last_loud = from;
    for (i, s) in samples.iter().enumerate().skip(from) {
        if s.unsigned_abs() > 30 {
            last_loud = i + 1;
        } else if i - last_loud >= quiet {
            break;
        }
    }
    last_loud
}

#[test]
fn the_wake_word_over_a_spoken_answer_stops_it_within_200_ms_and_the_next_question_is_answered() {
    let models = models_dir();
    let env = Env::new();
    let mic = env.dir.path().join("mic.wav");
    let speaker = env.dir.path().join("speaker.wav");
    let story = "Once upon a time a small fox lived in a quiet forest near a wide river. \
                 Every morning it walked down to the water to drink and to watch the fish. \
                 One day it met an old heron who told it about faraway lands.";
    let model = start_model(vec![
        Reply::sse(sse::content_stream(&[story])),
        Reply::sse(sse::content_stream(&["It is noon."])),
    ]);
    write_voice_config(
        &env,
        Some(&model),
        "wakeword",
        &format!("file:{}", mic.display()),
        &format!("file:{}", speaker.display()),
    );
    // The second question comes 2.5 s after the first ends: the answer is being spoken then
    // (audio time stands still while the models work, so the offsets hold on any machine).
    script_to_file(
        &env,
        &models,
        &[
            (700, "Hey Jarvis, tell me a story."),
            (2500, "Hey Jarvis, what time is it?"),
        ],
        1500,
        &mic,
    );
    let _daemon = start_voice_daemon(&env, &models);
    let mut c = client(&env);
    let events = events_until(&mut c, |evs| {
        evs.iter()
            .any(|v| v["event"] == "hint" && v["text"] == "The microphone input ended.")
    });
    let m = milestones(&events);
    assert_in_order(
        &m,
        &[
            "wake",
            "user:tell me a story",
            "speaking:true",
            "wake",
            "speaking:false",
            "state:activated",
            "user:what time is it",
            "speaking:true",
            "speaking:false",
        ],
    );
    assert_eq!(m.iter().filter(|e| *e == "wake").count(), 2, "{m:?}");
    assert!(!m.iter().any(|e| e.starts_with("error")), "{m:?}");
    assert_eq!(
        questions(&model),
        vec!["tell me a story", "what time is it"]
    );
    let r = c.call("quit", json!({}), 1);
    assert_eq!(r["ok"], true);
    assert!(eventually(Duration::from_secs(10), || !env
        .socket()
        .exists()));
    // On the speaker's sample clock (the file speaker and the file microphone advance
    // together): the story stops at most 200 ms after the second wake word was heard.
    let barge = events
        .iter()
        .filter(|(_, v)| v["event"] == "wake")
        .nth(1)
        .and_then(|(_, v)| v["at_ms"].as_u64())
        .expect("the second wake event has at_ms");
    let played = sayri_voice::audio::read_wav_16k(&speaker).unwrap();
    let at = barge as usize * 16;
    assert!(
        played[at.saturating_sub(8000)..at]
            .iter()
            .any(|s| s.unsigned_abs() > 30),
        "the story was playing when the wake word came"
    );
    let stopped = end_of_sound(&played, at);
    let latency_ms = (stopped - at) / 16;
    eprintln!("barge-in through the daemon: speech stopped {latency_ms} ms after the wake word");
    assert!(
        latency_ms <= 200,
        "the story went on {latency_ms} ms after the wake word"
    );
    // The answer to the second question was spoken after it.
    assert!(
        played[stopped..]
            .iter()
            .filter(|s| s.unsigned_abs() > 30)
            .count()
            > 8000,
        "the second answer is in the speaker file"
    );
}

#[test]
fn wake_test_hears_the_phrase_in_a_file_and_not_in_other_speech() {
    let models = models_dir();
    let env = Env::new();
    write_voice_config(&env, None, "manual", "", "");
    let wake = env.dir.path().join("wake.wav");
    let other = env.dir.path().join("other.wav");
    script_to_file(
        &env,
        &models,
        &[(500, "Hey Jarvis, turn on the lights.")],
        500,
        &wake,
    );
    script_to_file(
        &env,
        &models,
        &[(500, "Please turn on the kitchen lights.")],
        500,
        &other,
    );
    let out = sayri(
        &env,
        &models,
        &["wake", "test", "--file", wake.to_str().unwrap(), "--json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["phrase"], "hey jarvis", "{v}");
    let detections = v["detections"].as_array().unwrap();
    assert_eq!(detections.len(), 1, "{v}");
    let at = detections[0]["at_ms"].as_u64().unwrap();
    assert!((500..2500).contains(&at), "heard where the phrase is: {v}");
    let out = sayri(
        &env,
        &models,
        &["wake", "test", "--file", other.to_str().unwrap(), "--json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(v["detections"].as_array().unwrap().is_empty(), "{v}");
    assert!(v["max_score"].as_f64().unwrap() < 0.5, "{v}");
    // Another model does not hear "hey jarvis"; a model that is not installed says what to do.
    let out = sayri(
        &env,
        &models,
        &[
            "wake",
            "test",
            "--file",
            wake.to_str().unwrap(),
            "--model",
            "alexa_v0.1",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("\"alexa\" was not heard"),
        "{}",
        stderr(&out)
    );
    let out = sayri(
        &env,
        &models,
        &[
            "wake",
            "test",
            "--file",
            wake.to_str().unwrap(),
            "--model",
            "hey_nobody",
        ],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("sayri models import wakeword"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn models_import_checks_the_sha256_then_list_and_remove_manage_the_store() {
    let models = models_dir();
    let env = Env::new();
    write_voice_config(&env, None, "wakeword", "", "");
    let store = env.dir.path().join("store");
    let file = models.join("wakeword/hey_jarvis_v0.1.onnx");
    let sum = std::process::Command::new("sha256sum")
        .arg(&file)
        .output()
        .unwrap();
    let sha = stdout(&sum).split_whitespace().next().unwrap().to_string();
    let bad = "0".repeat(64);
    let f = file.to_str().unwrap();
    let out = sayri(
        &env,
        &store,
        &["models", "import", "wakeword", f, "--sha256", &bad],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("sha256"), "{}", stderr(&out));
    assert!(
        !store.join("wakeword/hey_jarvis_v0.1.onnx").exists(),
        "nothing installed"
    );
    let out = sayri(
        &env,
        &store,
        &["models", "import", "wakeword", f, "--sha256", &sha],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("installed wakeword hey_jarvis_v0.1"),
        "{}",
        stdout(&out)
    );
    let out = sayri(&env, &store, &["models", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("hey_jarvis_v0.1"), "{}", stdout(&out));
    // The model is there but its runtime is not: the wake word is not ready, and says why.
    let out = sayri(&env, &store, &["wake", "list", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (v["active"].clone(), v["ready"].clone()),
        (json!("hey_jarvis_v0.1"), json!(false)),
        "{v}"
    );
    assert!(v["missing"].to_string().contains("ONNX Runtime"), "{v}");
    let out = sayri(
        &env,
        &store,
        &["models", "remove", "wakeword", "hey_jarvis_v0.1"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!store.join("wakeword/hey_jarvis_v0.1.onnx").exists());
    let out = sayri(
        &env,
        &store,
        &["models", "download", "whisper", "no-such-model"],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("not in Sayri's catalog"),
        "{}",
        stderr(&out)
    );
}
