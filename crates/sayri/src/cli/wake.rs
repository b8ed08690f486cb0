//! `sayri wake list|test`: the wake-word models and a way to try one.
//!
//! * `list` shows the installed wake-word models, the phrase each listens for, and which one
//!   the settings choose (`stt.wake_model`, `stt.wake_word`).
//! * `test` runs the detector the daemon would use (or `--model`) over a WAV file or the
//!   configured microphone, the way the voice loop does, and prints every detection with its
//!   time and score and the highest score seen — to pick `stt.wake_threshold` for a room.
//!   Exits 1 when the phrase was not heard.

use anyhow::{Context, bail};
use sayri_client::paths::Paths;
use sayri_core::ports::audio::{AudioSource, FRAME_SAMPLES};
use sayri_voice::models::{ModelKind, ModelStore};
use sayri_voice::plan::{Device, VoicePlan};
use sayri_voice::wake::{Detection, Spotter, phrase_of_model};
use serde_json::{Value, json};
use std::path::PathBuf;

/// `sayri wake …`.
#[derive(Debug, Clone, clap::Subcommand)]
pub(crate) enum WakeAction {
    /// The installed wake-word models, their phrases, and the one Sayri listens with.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run the wake-word detector on a WAV file or the microphone and print each detection
    /// with its score (exit 1 when the phrase was not heard).
    Test {
        /// A WAV file (any PCM format) instead of the microphone (stt.mic_device).
        #[arg(long, value_name = "WAV")]
        file: Option<PathBuf>,
        /// Seconds of microphone audio to listen to (without --file).
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// Score at or above which the phrase counts as heard, 0.05 to 0.99 (default:
        /// stt.wake_threshold).
        #[arg(long)]
        threshold: Option<f64>,
        /// The wake-word model to try (default: the one the settings choose).
        #[arg(long)]
        model: Option<String>,
        /// Print JSON (`phrase`, `model`, `threshold`, `detections` [{`at_ms`, `score`}],
        /// `max_score`, `audio_ms`).
        #[arg(long)]
        json: bool,
    },
}

/// Runs `sayri wake ACTION`; returns the exit code.
pub(crate) fn run(paths: &Paths, action: &WakeAction) -> anyhow::Result<i32> {
    let mut cfg = sayri_daemon::config_file::load(&paths.config_file())?.0;
    let store = ModelStore::open_default();
    match action {
        WakeAction::List { json } => {
            list(&VoicePlan::resolve(&cfg, &store), &store, *json)?;
            Ok(0)
        }
        WakeAction::Test {
            file,
            seconds,
            threshold,
            model,
            json,
        } => {
            if let Some(m) = model {
                cfg.set_text("stt.wake_model", m)
                    .map_err(|e| anyhow::anyhow!("--model: {e}"))?;
            }
            if let Some(t) = threshold {
                cfg.set_text("stt.wake_threshold", &t.to_string())
                    .map_err(|e| anyhow::anyhow!("--threshold: {e}"))?;
            }
            let plan = VoicePlan::resolve(&cfg, &store);
            test(&plan, &store, file.as_ref(), *seconds, *json)
        }
    }
}

fn list(plan: &VoicePlan, store: &ModelStore, json_mode: bool) -> anyhow::Result<()> {
    let models: Vec<Value> = store
        .list()
        .into_iter()
        .filter(|m| m.kind == ModelKind::WakeWord)
        .map(|m| {
            json!({
                "name": m.name,
                "phrase": phrase_of_model(&m.name),
                "active": plan.wake.name.as_deref() == Some(m.name.as_str()),
            })
        })
        .collect();
    if json_mode {
        let out = json!({
            "models": models,
            "active": plan.wake.name,
            "phrase": plan.wake_phrase,
            "threshold": plan.loop_config.wake_threshold,
            "ready": sayri_daemon::voice::BUILT && plan.wake_ready(),
            "missing": plan.wake_missing(),
            "notes": plan.wake.note,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    if models.is_empty() {
        println!("No wake-word model is installed.");
    }
    for m in &models {
        println!(
            "{} {:<24} says \"{}\"",
            if m["active"] == true { "*" } else { " " },
            m["name"].as_str().unwrap_or(""),
            m["phrase"].as_str().unwrap_or("")
        );
    }
    println!(
        "threshold {} (stt.wake_threshold); choose a model with `sayri config set stt.wake_model NAME`",
        plan.loop_config.wake_threshold
    );
    for m in plan.wake_missing() {
        println!("install: {m}");
    }
    if let Some(n) = &plan.wake.note {
        println!("note: {n}");
    }
    println!("{}", sayri_voice::plan::WAKE_LICENCE);
    Ok(())
}

/// Where `sayri wake test` reads audio: the file, or the configured microphone for `seconds`.
fn open_source(
    plan: &VoicePlan,
    file: Option<&PathBuf>,
    seconds: f64,
) -> anyhow::Result<(Box<dyn AudioSource>, u64)> {
    let device = match file {
        Some(f) => Device::File(f.clone()),
        None => plan.input.clone(),
    };
    let mut source = sayri_voice::engines::open_input(&device)
        .with_context(|| format!("opening {}", device.describe()))?;
    source
        .open()
        .with_context(|| format!("opening {}", device.describe()))?;
    if !(seconds.is_finite() && seconds > 0.0) {
        bail!("--seconds must be a positive number of seconds");
    }
    let limit = if file.is_some() {
        u64::MAX
    } else {
        (seconds * 16_000.0) as u64
    };
    Ok((source, limit))
}

fn test(
    plan: &VoicePlan,
    store: &ModelStore,
    file: Option<&PathBuf>,
    seconds: f64,
    json_mode: bool,
) -> anyhow::Result<i32> {
    if !sayri_daemon::voice::BUILT {
        bail!("{}", sayri_daemon::voice::status::not_built());
    }
    let detector = sayri_voice::engines::load_wake_detector(plan, store)?;
    let threshold = plan.loop_config.wake_threshold;
    let mut spotter = Spotter::new(detector, threshold, plan.loop_config.wake_refractory_ms);
    let phrase = spotter.phrase().to_string();
    let (mut source, limit) = open_source(plan, file, seconds)?;
    if !json_mode {
        eprintln!(
            "Listening for \"{phrase}\" ({}, threshold {threshold}) on {}…",
            plan.wake.name.as_deref().unwrap_or("-"),
            source.name()
        );
    }
    let mut detections: Vec<Detection> = Vec::new();
    let mut frame = vec![0i16; FRAME_SAMPLES];
    let mut read = 0u64;
    while read < limit {
        let n = source.read(&mut frame)?;
        if n == 0 {
            break;
        }
        read += n as u64;
        if let Some(d) = spotter.feed(&frame[..n])? {
            if !json_mode {
                println!(
                    "{:>8.2} s  heard \"{phrase}\" (score {:.2})",
                    d.at_ms as f64 / 1000.0,
                    d.score
                );
            }
            detections.push(d);
        }
    }
    let audio_ms = sayri_core::ports::audio::samples_to_ms(read);
    if json_mode {
        let out = json!({
            "phrase": phrase,
            "model": plan.wake.name,
            "threshold": threshold,
            "detections": detections.iter().map(|d| json!({"at_ms": d.at_ms, "score": d.score})).collect::<Vec<_>>(),
            "max_score": spotter.max_score,
            "audio_ms": audio_ms,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        eprintln!(
            "{} detection(s) in {:.1} s of audio; highest score {:.2} (threshold {threshold})",
            detections.len(),
            audio_ms as f64 / 1000.0,
            spotter.max_score
        );
    }
    if detections.is_empty() {
        if !json_mode {
            eprintln!("sayri: \"{phrase}\" was not heard");
        }
        return Ok(1);
    }
    Ok(0)
}
