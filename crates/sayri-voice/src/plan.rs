//! A voice configuration resolved against the model store: which whisper model, Piper voice,
//! wake-word model and devices the settings ask for, which of them are installed, and what to
//! install otherwise. One loader for the daemon, the CLI and the benchmark.
//!
//! Resolution rules (pinned by the tests at the end):
//! * **Whisper**: `stt.whisper_model` when it is not `auto`; else the `stt.model_size` model for
//!   `stt.language` (`base.en` for English, `base` otherwise); when that is not installed, the
//!   installed model closest in size that can transcribe the language (an English-only `.en`
//!   model only for `en`, or for `auto` when nothing else is there).
//! * **Piper voice**: `tts.piper_voice` when it is not `auto`; else
//!   `<tts.language>-<tts.voice>-<tts.quality>`, else an installed voice of `tts.language`;
//!   without one, espeak-ng speaks `tts.language`.
//! * **Wake word**: `stt.wake_model` when it is not `auto`; else a model whose phrase is one of
//!   `stt.wake_word`'s phrases, else `hey_jarvis_v0.1`, else any installed one — and the plan
//!   says which phrase is really active.
//! * **Devices**: `stt.mic_device` / `tts.output_device`: empty = the default device, a name
//!   part = that device, `file:/path.wav` = a WAV file.

use crate::models::{ModelKind, ModelStore, SHARED_WAKE_FILES};
use crate::stt::language_code;
use crate::voice_loop::LoopConfig;
use crate::wake::{model_for_phrase, phrase_of_model};
use sayri_core::domain::config::Config;
use sayri_core::domain::voice::{SegmenterConfig, VoiceMode, VoiceSettings};
use std::path::PathBuf;

/// Whisper sizes, smallest first (a model's size is its name up to the first `.`).
const WHISPER_SIZES: &[&str] = &[
    "tiny",
    "base",
    "small",
    "medium",
    "large-v3-turbo",
    "large-v3",
];

/// The wake-word model used when no model matches the configured phrases.
pub const FALLBACK_WAKE_MODEL: &str = "hey_jarvis_v0.1";

/// The licence note of the stock openWakeWord models.
pub const WAKE_LICENCE: &str =
    "openWakeWord's stock models are licensed CC BY-NC-SA 4.0: non-commercial use only";

/// A microphone or speaker as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Device {
    /// The system's default device.
    Default,
    /// The first device whose name contains this (case-insensitive).
    Named(String),
    /// A WAV file (`file:/path.wav`): as a microphone, read as fast as the loop takes it.
    File(PathBuf),
    /// A WAV file heard as a live microphone, in real time (`live-file:/path.wav`); only a
    /// microphone can be one.
    LiveFile(PathBuf),
    /// Raw s16le 16 kHz mono PCM read live from a FIFO or a file another program writes
    /// (`pipe:/path`); only a microphone can be one.
    Pipe(PathBuf),
}

impl Device {
    /// Parses a `stt.mic_device` / `tts.output_device` value.
    pub fn parse(value: &str) -> Device {
        let v = value.trim();
        if let Some(path) = v.strip_prefix("file:") {
            Device::File(PathBuf::from(path))
        } else if let Some(path) = v.strip_prefix("live-file:") {
            Device::LiveFile(PathBuf::from(path))
        } else if let Some(path) = v.strip_prefix("pipe:") {
            Device::Pipe(PathBuf::from(path))
        } else if v.is_empty() || v == "default" {
            Device::Default
        } else {
            Device::Named(v.to_string())
        }
    }

    /// How status shows it (`default`, `USB Mic`, `file /tmp/in.wav`).
    pub fn describe(&self) -> String {
        match self {
            Device::Default => "default".into(),
            Device::Named(n) => n.clone(),
            Device::File(p) => format!("file {}", p.display()),
            Device::LiveFile(p) => format!("file {} (real time)", p.display()),
            Device::Pipe(p) => format!("pipe {}", p.display()),
        }
    }
}

/// One model choice: what the settings ask for and what is used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The model the settings ask for (the one to install when nothing is).
    pub wanted: String,
    /// The installed model that is used, if any.
    pub name: Option<String>,
    /// Why the used model differs from the wanted one, when it does.
    pub note: Option<String>,
}

/// A voice configuration resolved against a model store (see the module docs).
#[derive(Debug, Clone)]
pub struct VoicePlan {
    /// `stt.mode`.
    pub mode: VoiceMode,
    /// `stt.language` as whisper takes it (`en`, `es`, `auto`).
    pub language: String,
    /// The whisper model.
    pub whisper: Choice,
    /// The Piper voice.
    pub piper: Choice,
    /// The `piper` program is installed.
    pub piper_program: bool,
    /// The espeak-ng voice used when Piper cannot speak (`en-us`, `es`).
    pub espeak_voice: String,
    /// espeak-ng is installed.
    pub espeak_available: bool,
    /// The wake-word model.
    pub wake: Choice,
    /// The phrase the wake-word model listens for.
    pub wake_phrase: Option<String>,
    /// ONNX Runtime and openWakeWord's feature models are installed.
    pub wake_runtime: bool,
    /// Silero VAD can run (else the energy VAD is used).
    pub vad_ready: bool,
    /// The microphone.
    pub input: Device,
    /// The speaker.
    pub output: Device,
    /// `tts.enabled`.
    pub speak: bool,
    /// `tts.speed`.
    pub speed: f32,
    /// The loop's configuration.
    pub loop_config: LoopConfig,
}

impl VoicePlan {
    /// Resolves `cfg` against what `store` holds (files only; nothing is loaded).
    pub fn resolve(cfg: &Config, store: &ModelStore) -> VoicePlan {
        let installed = |kind| -> Vec<String> {
            store
                .list()
                .into_iter()
                .filter(|m| m.kind == kind)
                .map(|m| m.name)
                .collect()
        };
        let language = language_code(&cfg.stt.language);
        let whisper = resolve_whisper(cfg, &language, &installed(ModelKind::Whisper));
        let piper = resolve_piper(cfg, &installed(ModelKind::PiperVoice));
        let (wake, wake_phrase) = resolve_wake(cfg, &installed(ModelKind::WakeWord));
        let runtime = store.onnxruntime_library().is_ok();
        let features = SHARED_WAKE_FILES
            .iter()
            .all(|f| store.wakeword_dir().join(f).is_file());
        let mode = VoiceMode::parse(&cfg.stt.mode).unwrap_or(VoiceMode::Wakeword);
        let mut phrases: Vec<String> = cfg
            .stt
            .wake_word
            .split(',')
            .map(|p| p.trim().to_lowercase())
            .filter(|p| !p.is_empty())
            .collect();
        if let Some(p) = &wake_phrase
            && !phrases.contains(p)
        {
            phrases.push(p.clone());
        }
        let loop_config = LoopConfig {
            settings: VoiceSettings {
                mode,
                stt_ready: whisper.name.is_some(),
                activation_timeout_ms: u64::try_from(cfg.stt.activation_timeout_ms).unwrap_or(5000),
                wake_phrases: phrases,
            },
            segmenter: SegmenterConfig {
                silence_ms: u32::try_from(cfg.stt.silence_ms).unwrap_or(500),
                max_utterance_ms: u32::try_from(cfg.stt.max_utterance_ms).unwrap_or(15_000),
                ..SegmenterConfig::default()
            },
            wake_threshold: cfg.stt.wake_threshold as f32,
            partial_every_ms: if cfg.stt.live_transcript { 1500 } else { 0 },
            speak_replies: cfg.tts.enabled,
            ..LoopConfig::default()
        };
        VoicePlan {
            mode,
            language,
            whisper,
            piper,
            piper_program: store.piper_program().is_some(),
            espeak_voice: espeak_voice(&cfg.tts.language),
            espeak_available: crate::models::find_program("espeak-ng").is_some(),
            wake,
            wake_phrase,
            wake_runtime: runtime && features,
            vad_ready: runtime && store.path(ModelKind::Vad, "silero_vad").is_file(),
            input: Device::parse(&cfg.stt.mic_device),
            output: Device::parse(&cfg.tts.output_device),
            speak: cfg.tts.enabled,
            speed: cfg.tts.speed as f32,
            loop_config,
        }
    }

    /// Speech to text can run (a whisper model is installed).
    pub fn stt_ready(&self) -> bool {
        self.whisper.name.is_some()
    }

    /// Piper can speak (program and voice installed).
    pub fn piper_ready(&self) -> bool {
        self.piper_program && self.piper.name.is_some()
    }

    /// Replies can be spoken: Piper, or espeak-ng as the fallback.
    pub fn tts_ready(&self) -> bool {
        self.piper_ready() || self.espeak_available
    }

    /// The wake word can be heard (model, feature models and ONNX Runtime installed).
    pub fn wake_ready(&self) -> bool {
        self.wake.name.is_some() && self.wake_runtime
    }

    /// What to install for speech to text (empty when ready).
    pub fn stt_missing(&self) -> Vec<String> {
        if self.stt_ready() {
            return Vec::new();
        }
        let w = &self.whisper.wanted;
        let download = if crate::models::catalog::lookup(ModelKind::Whisper, w).is_some() {
            format!("`sayri models download whisper {w}`")
        } else {
            format!("`sayri models import whisper FILE --name {w}`")
        };
        vec![format!(
            "whisper model {w}: {download}, `sayri models import-ct2 DIR` for a faster-whisper model, or ./scripts/setup --voice (installs tiny.en)"
        )]
    }

    /// What to install for Piper (empty when Piper can speak; espeak-ng may speak meanwhile).
    pub fn tts_missing(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.piper_program {
            out.push(
                "the piper program (PyPI piper-tts): ./scripts/setup --voice, or put piper on PATH / set SAYRI_PIPER"
                    .to_string(),
            );
        }
        if self.piper.name.is_none() {
            out.push(format!(
                "Piper voice {}: `sayri models download piper {} --url URL --sha256 HEX` or `sayri models import piper FILE.onnx` (voices: {})",
                self.piper.wanted,
                self.piper.wanted,
                crate::models::catalog::sources(ModelKind::PiperVoice)
            ));
        }
        if !out.is_empty() && !self.espeak_available {
            out.push("or espeak-ng as a robotic fallback voice: apt-get install espeak-ng".into());
        }
        out
    }

    /// What to install for the wake word (empty when ready).
    pub fn wake_missing(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.wake_runtime {
            out.push(
                "ONNX Runtime and openWakeWord's feature models: ./scripts/setup --voice (or set ORT_DYLIB_PATH)"
                    .to_string(),
            );
        }
        if self.wake.name.is_none() {
            out.push(format!(
                "wake-word model {}: ./scripts/setup --voice, or `sayri models import wakeword FILE.onnx` ({WAKE_LICENCE})",
                self.wake.wanted
            ));
        }
        out
    }

    /// Notes on choices that differ from the settings (for status).
    pub fn notes(&self) -> Vec<String> {
        [&self.whisper, &self.piper, &self.wake]
            .iter()
            .filter_map(|c| c.note.clone())
            .collect()
    }

    /// The speaking engine in use: `piper <voice>`, `espeak-ng <voice>`, or `None`.
    pub fn tts_engine(&self) -> Option<String> {
        if self.piper_ready() {
            self.piper.name.as_ref().map(|v| format!("piper {v}"))
        } else if self.espeak_available {
            Some(format!("espeak-ng {}", self.espeak_voice))
        } else {
            None
        }
    }

    /// What the loaded engines and opened devices depend on: when it changes, the loop is
    /// rebuilt; other changes are applied to the running loop.
    pub fn engine_key(&self) -> String {
        format!(
            "{:?}|{}|{:?}|{}|{:?}|{}|{:?}|{:?}|{}|{}",
            self.whisper.name,
            self.language,
            self.piper.name,
            self.piper_program,
            self.wake.name,
            self.espeak_voice,
            self.input,
            self.output,
            self.speed,
            self.speak
        )
    }
}

/// The espeak-ng voice for a `tts.language` value: `en_US` → `en-us`, `es_ES` → `es`.
fn espeak_voice(locale: &str) -> String {
    let l = locale.trim().to_lowercase().replace('_', "-");
    match l.as_str() {
        "en-us" | "en-gb" => l,
        _ => l.split('-').next().unwrap_or("en").to_string(),
    }
}

fn resolve_whisper(cfg: &Config, language: &str, installed: &[String]) -> Choice {
    let configured = cfg.stt.whisper_model.trim();
    if configured != "auto" {
        return Choice {
            wanted: configured.to_string(),
            name: installed.iter().find(|n| *n == configured).cloned(),
            note: None,
        };
    }
    let size = cfg.stt.model_size.trim().to_lowercase();
    let english_only = |n: &str| n.ends_with(".en");
    let wanted = if language == "en" && !size.starts_with("large") {
        format!("{size}.en")
    } else {
        size.clone()
    };
    if installed.contains(&wanted) {
        return Choice {
            name: Some(wanted.clone()),
            wanted,
            note: None,
        };
    }
    let rank = |n: &str| {
        let base = n.split('.').next().unwrap_or(n);
        let want = WHISPER_SIZES.iter().position(|s| *s == size).unwrap_or(1) as i64;
        let have = WHISPER_SIZES.iter().position(|s| *s == base).unwrap_or(99) as i64;
        (have - want).abs()
    };
    let usable = |n: &&String| match language {
        "en" => true,
        "auto" => true,
        _ => !english_only(n),
    };
    let mut candidates: Vec<&String> = installed.iter().filter(usable).collect();
    // Prefer multilingual for `auto`, English-only for `en`, then the closest size.
    candidates.sort_by_key(|n| {
        let lang_pref = match language {
            "en" => !english_only(n),
            _ => english_only(n),
        };
        (lang_pref, rank(n), n.to_string())
    });
    let name = candidates.first().map(|n| n.to_string());
    let note = name.as_ref().map(|n| {
        format!(
            "whisper {wanted} (stt.model_size {size}, stt.language {language}) is not installed; using {n}"
        )
    });
    Choice { wanted, name, note }
}

fn resolve_piper(cfg: &Config, installed: &[String]) -> Choice {
    let configured = cfg.tts.piper_voice.trim();
    if configured != "auto" {
        return Choice {
            wanted: configured.to_string(),
            name: installed.iter().find(|n| *n == configured).cloned(),
            note: None,
        };
    }
    let wanted = format!("{}-{}-{}", cfg.tts.language, cfg.tts.voice, cfg.tts.quality);
    if installed.contains(&wanted) {
        return Choice {
            name: Some(wanted.clone()),
            wanted,
            note: None,
        };
    }
    let prefix = format!("{}-", cfg.tts.language);
    let name = installed.iter().find(|n| n.starts_with(&prefix)).cloned();
    let note = name
        .as_ref()
        .map(|n| format!("Piper voice {wanted} is not installed; using {n}"));
    Choice { wanted, name, note }
}

fn resolve_wake(cfg: &Config, installed: &[String]) -> (Choice, Option<String>) {
    let configured = cfg.stt.wake_model.trim();
    let names = || installed.iter().map(String::as_str);
    if configured != "auto" {
        let name = names().find(|n| *n == configured).map(str::to_string);
        let phrase = Some(phrase_of_model(configured));
        return (
            Choice {
                wanted: configured.to_string(),
                name,
                note: None,
            },
            phrase,
        );
    }
    let phrases: Vec<&str> = cfg
        .stt
        .wake_word
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if let Some(m) = phrases.iter().find_map(|p| model_for_phrase(p, names())) {
        let choice = Choice {
            wanted: m.to_string(),
            name: Some(m.to_string()),
            note: None,
        };
        return (choice, Some(phrase_of_model(m)));
    }
    let asked = phrases.join(", ");
    let fallback = names()
        .find(|n| *n == FALLBACK_WAKE_MODEL)
        .or_else(|| names().next());
    match fallback {
        Some(m) => {
            let phrase = phrase_of_model(m);
            let note = format!(
                "no wake-word model for \"{asked}\" (stt.wake_word) is installed: say \"{phrase}\" instead ({m}; {WAKE_LICENCE}). Choose another with stt.wake_model, or add a model for your phrase with `sayri models import wakeword FILE.onnx`"
            );
            (
                Choice {
                    wanted: m.to_string(),
                    name: Some(m.to_string()),
                    note: Some(note),
                },
                Some(phrase),
            )
        }
        None => (
            Choice {
                wanted: FALLBACK_WAKE_MODEL.to_string(),
                name: None,
                note: None,
            },
            None,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(files: &[&str]) -> (tempfile::TempDir, ModelStore) {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"x").unwrap();
        }
        let store = ModelStore::at(dir.path());
        (dir, store)
    }

    fn cfg(pairs: &[(&str, &str)]) -> Config {
        let mut c = Config::default();
        for (k, v) in pairs {
            c.set_text(k, v).unwrap();
        }
        c
    }

    #[test]
    fn whisper_follows_size_and_language_then_the_closest_installed() {
        let (_d, s) = store_with(&["whisper/ggml-tiny.en.bin", "whisper/ggml-small.bin"]);
        let p = VoicePlan::resolve(
            &cfg(&[("stt.language", "en"), ("stt.model_size", "tiny")]),
            &s,
        );
        assert_eq!(p.whisper.name.as_deref(), Some("tiny.en"));
        assert!(p.whisper.note.is_none());
        let p = VoicePlan::resolve(
            &cfg(&[("stt.language", "en"), ("stt.model_size", "base")]),
            &s,
        );
        assert_eq!(p.whisper.wanted, "base.en");
        assert_eq!(p.whisper.name.as_deref(), Some("tiny.en"));
        assert!(p.whisper.note.unwrap().contains("using tiny.en"));
        let p = VoicePlan::resolve(
            &cfg(&[("stt.language", "es"), ("stt.model_size", "base")]),
            &s,
        );
        assert_eq!(
            p.whisper.name.as_deref(),
            Some("small"),
            "an English-only model cannot transcribe Spanish"
        );
        let (_d, s) = store_with(&["whisper/ggml-tiny.en.bin"]);
        let p = VoicePlan::resolve(&cfg(&[("stt.language", "es")]), &s);
        assert!(!p.stt_ready());
        assert!(p.stt_missing()[0].contains("sayri models download whisper base"));
        let p = VoicePlan::resolve(&cfg(&[("stt.whisper_model", "medium")]), &s);
        assert_eq!(
            (p.whisper.wanted.as_str(), p.whisper.name),
            ("medium", None)
        );
    }

    #[test]
    fn piper_voice_follows_language_voice_and_quality_then_the_language() {
        let (_d, s) = store_with(&["piper/en_US-joe-medium.onnx"]);
        let p = VoicePlan::resolve(
            &cfg(&[("tts.language", "en_US"), ("tts.voice", "sharvard")]),
            &s,
        );
        assert_eq!(p.piper.wanted, "en_US-sharvard-medium");
        assert_eq!(p.piper.name.as_deref(), Some("en_US-joe-medium"));
        let p = VoicePlan::resolve(
            &cfg(&[("tts.language", "es_ES"), ("tts.voice", "sharvard")]),
            &s,
        );
        assert_eq!(p.piper.name, None, "no English voice for Spanish");
        assert_eq!(p.espeak_voice, "es");
        assert!(
            p.tts_missing()
                .iter()
                .any(|m| m.contains("es_ES-sharvard-medium"))
        );
    }

    #[test]
    fn the_wake_phrase_without_a_model_falls_back_to_hey_jarvis_and_says_so() {
        let (_d, s) = store_with(&["wakeword/alexa_v0.1.onnx", "wakeword/hey_jarvis_v0.1.onnx"]);
        let p = VoicePlan::resolve(&Config::default(), &s);
        assert_eq!(p.wake.name.as_deref(), Some("hey_jarvis_v0.1"));
        assert_eq!(p.wake_phrase.as_deref(), Some("hey jarvis"));
        let note = p.wake.note.clone().unwrap();
        assert!(
            note.contains("hey sayri") && note.contains("CC BY-NC-SA"),
            "{note}"
        );
        assert!(
            p.loop_config
                .settings
                .wake_phrases
                .contains(&"hey jarvis".to_string()),
            "the active phrase is stripped from queries"
        );
        let p = VoicePlan::resolve(&cfg(&[("stt.wake_word", "alexa, computer")]), &s);
        assert_eq!(p.wake.name.as_deref(), Some("alexa_v0.1"));
        assert!(p.wake.note.is_none());
        let (_d, s) = store_with(&[]);
        let p = VoicePlan::resolve(&Config::default(), &s);
        assert!(!p.wake_ready());
        assert!(
            p.wake_missing()
                .iter()
                .any(|m| m.contains("hey_jarvis_v0.1"))
        );
    }

    #[test]
    fn devices_are_default_named_or_files() {
        assert_eq!(Device::parse(""), Device::Default);
        assert_eq!(Device::parse("USB"), Device::Named("USB".into()));
        assert_eq!(
            Device::parse("file:/tmp/a.wav"),
            Device::File(PathBuf::from("/tmp/a.wav"))
        );
        assert_eq!(
            Device::parse("live-file:/tmp/a.wav"),
            Device::LiveFile(PathBuf::from("/tmp/a.wav"))
        );
    }
}
