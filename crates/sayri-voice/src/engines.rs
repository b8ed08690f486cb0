//! Builds what a [`VoicePlan`] asks for: the engines (loading the models) and the audio
//! devices. Engines missing from this build (a feature turned off) or models missing from the
//! store are errors saying what to install or rebuild.

use crate::audio::{WavSink, WavSource};
use crate::models::ModelStore;
use crate::plan::{Device, VoicePlan};
use crate::tts::{EspeakTts, PiperTts, Variation};
use crate::voice_loop::Engines;
use sayri_core::ports::audio::{AudioError, AudioSink, AudioSource};
use sayri_core::ports::speech::{SpeechError, SpeechToText, TextToSpeech, WakeWord};
use std::sync::Arc;

/// What to do when this build lacks an engine.
pub const REBUILD_HINT: &str = "rebuild sayri with its default features (`cargo build --release -p sayri`; needs cmake, clang, libclang-dev and libasound2-dev, which ./scripts/setup --voice installs)";

/// Engines ready for a loop, with what was degraded on the way (for logs and status).
pub struct Built {
    /// The engines.
    pub engines: Engines,
    /// One line per engine that is missing or fell back (`Silero VAD …: using the energy VAD`).
    pub warnings: Vec<String>,
}

/// Loads the engines of `plan` from `store`: the whisper model, the VAD (Silero, else the
/// energy VAD), the wake-word detector and its twin on the played audio (when the model is
/// installed), and the voice (Piper, else espeak-ng; none when `tts.enabled` is off).
///
/// # Errors
/// Speech to text cannot run: no whisper model, or a build without the `whisper` feature.
pub fn build(plan: &VoicePlan, store: &ModelStore) -> Result<Built, SpeechError> {
    let mut warnings = Vec::new();
    let stt = load_stt(plan, store)?;
    let (vad, why) = crate::vad::best_available(store);
    if let Some(w) = why {
        warnings.push(format!(
            "Silero VAD unavailable ({w}): using the energy VAD"
        ));
    }
    let (wake, playback_wake) = match load_wake(plan, store) {
        Ok((a, b)) => (Some(a), Some(b)),
        Err(e) => {
            warnings.push(format!("no wake word: {e}"));
            (None, None)
        }
    };
    let tts = if plan.speak {
        match build_tts(plan, store, Variation::Natural) {
            Ok(t) => Some(t),
            Err(e) => {
                warnings.push(format!("replies are not spoken: {e}"));
                None
            }
        }
    } else {
        None
    };
    Ok(Built {
        engines: Engines {
            vad,
            wake,
            playback_wake,
            stt,
            tts,
        },
        warnings,
    })
}

fn load_stt(plan: &VoicePlan, store: &ModelStore) -> Result<Box<dyn SpeechToText>, SpeechError> {
    let Some(name) = &plan.whisper.name else {
        return Err(SpeechError::NotReady {
            what: format!("whisper model {}", plan.whisper.wanted),
            reason: "it is not installed".into(),
            fix: plan.stt_missing().join("; "),
        });
    };
    #[cfg(feature = "whisper")]
    {
        // Loaded now (a broken model is reported at start-up), released at rest and loaded
        // again when a query comes (see `OnDemandStt`).
        let (store, name, language) = (store.clone(), name.clone(), plan.language.clone());
        let stt = crate::stt::OnDemandStt::new(Box::new(move || {
            crate::stt::WhisperStt::load(&store, &name, &language)
                .map(|w| Box::new(w) as Box<dyn SpeechToText>)
        }))?;
        Ok(Box::new(stt))
    }
    #[cfg(not(feature = "whisper"))]
    {
        let _ = (store, name);
        Err(SpeechError::NotReady {
            what: "speech to text".into(),
            reason: "this sayri was built without whisper.cpp (the `whisper` feature)".into(),
            fix: REBUILD_HINT.into(),
        })
    }
}

type WakePair = (Box<dyn WakeWord>, Box<dyn WakeWord>);

fn load_wake(plan: &VoicePlan, store: &ModelStore) -> Result<WakePair, SpeechError> {
    Ok((
        load_wake_detector(plan, store)?,
        load_wake_detector(plan, store)?,
    ))
}

/// One wake-word detector for the model `plan` chose.
///
/// # Errors
/// The model (or ONNX Runtime and openWakeWord's feature models) is not installed, or this
/// build has no `onnx` feature; each error says what to install or rebuild.
pub fn load_wake_detector(
    plan: &VoicePlan,
    store: &ModelStore,
) -> Result<Box<dyn WakeWord>, SpeechError> {
    let Some(name) = &plan.wake.name else {
        return Err(SpeechError::NotReady {
            what: format!("wake-word model {}", plan.wake.wanted),
            reason: "it is not installed".into(),
            fix: plan.wake_missing().join("; "),
        });
    };
    #[cfg(feature = "onnx")]
    {
        Ok(Box::new(crate::wake::OpenWakeWord::load(store, name)?))
    }
    #[cfg(not(feature = "onnx"))]
    {
        let _ = (store, name);
        Err(SpeechError::NotReady {
            what: "the wake word".into(),
            reason: "this sayri was built without ONNX Runtime support (the `onnx` feature)".into(),
            fix: REBUILD_HINT.into(),
        })
    }
}

/// The voice of `plan`: Piper with its voice (a spare process started at once, so the first
/// reply does not wait for the voice to load) rendering with `variation`, else espeak-ng
/// speaking the plan's language (which never varies).
///
/// # Errors
/// Neither Piper nor espeak-ng is installed.
pub fn build_tts(
    plan: &VoicePlan,
    store: &ModelStore,
    variation: Variation,
) -> Result<Arc<dyn TextToSpeech>, SpeechError> {
    if plan.piper_ready()
        && let Some(voice) = &plan.piper.name
    {
        match PiperTts::load(store, voice, plan.speed) {
            Ok(p) => {
                let p = p.with_variation(variation);
                p.prewarm();
                return Ok(Arc::new(p));
            }
            Err(e) if !plan.espeak_available => return Err(e),
            Err(e) => tracing::warn!("Piper cannot speak ({e}); espeak-ng speaks instead"),
        }
    }
    match EspeakTts::new(&plan.espeak_voice, plan.speed) {
        Ok(e) => Ok(Arc::new(e)),
        Err(e) => Err(SpeechError::NotReady {
            what: "a voice".into(),
            reason: e.to_string(),
            fix: plan.tts_missing().join("; "),
        }),
    }
}

/// The microphone of `device`. A sound card is opened only when the loop turns the
/// microphone on ([`AudioSource::open`]); a file is read from its start.
///
/// # Errors
/// An unreadable WAV file, or a sound card in a build without the `mic` feature.
pub fn open_input(device: &Device) -> Result<Box<dyn AudioSource>, AudioError> {
    match device {
        Device::File(p) => Ok(Box::new(WavSource::open(p)?)),
        Device::LiveFile(p) => Ok(Box::new(WavSource::open(p)?.realtime())),
        Device::Pipe(p) => Ok(Box::new(crate::audio::PipeSource::new(p))),
        #[cfg(feature = "mic")]
        Device::Default => Ok(Box::new(crate::audio::device::DeviceSource::closed(""))),
        #[cfg(feature = "mic")]
        Device::Named(n) => Ok(Box::new(crate::audio::device::DeviceSource::closed(n))),
        #[cfg(not(feature = "mic"))]
        Device::Default | Device::Named(_) => Err(AudioError::Io(format!(
            "this sayri was built without sound card support (the `mic` feature): {REBUILD_HINT}"
        ))),
    }
}

/// The speaker of `device` (a WAV file is created, replacing an old one).
///
/// # Errors
/// The device or file cannot be opened, or a sound card in a build without the `mic` feature.
pub fn open_output(device: &Device) -> Result<Box<dyn AudioSink>, AudioError> {
    match device {
        Device::File(p) => Ok(Box::new(WavSink::create(p)?)),
        Device::LiveFile(p) | Device::Pipe(p) => Err(AudioError::Io(format!(
            "{} is a microphone source; a speaker writes to file:PATH",
            p.display()
        ))),
        #[cfg(feature = "mic")]
        Device::Default => Ok(Box::new(crate::audio::device::DeviceSink::open("")?)),
        #[cfg(feature = "mic")]
        Device::Named(n) => Ok(Box::new(crate::audio::device::DeviceSink::open(n)?)),
        #[cfg(not(feature = "mic"))]
        Device::Default | Device::Named(_) => Err(AudioError::Io(format!(
            "this sayri was built without sound card support (the `mic` feature): {REBUILD_HINT}"
        ))),
    }
}
