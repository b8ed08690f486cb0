//! Text-to-speech adapters: Piper (preferred) and espeak-ng (fallback), both subprocesses.

pub mod child_env;
pub mod espeak;
pub mod piper;
pub mod process;

pub use espeak::EspeakTts;
pub use piper::{PiperTts, Variation};

use crate::models::ModelStore;
use sayri_core::ports::speech::{SpeechError, SpeechStream, TextToSpeech};
use std::sync::Arc;

/// The best voice available: Piper with `voice` when installed, else espeak-ng speaking
/// `fallback_language` (`en-us`). The second value says why Piper was not used.
pub fn best_available(
    store: &ModelStore,
    voice: &str,
    fallback_language: &str,
    speed: f32,
) -> Result<(Box<dyn TextToSpeech>, Option<String>), SpeechError> {
    match PiperTts::load(store, voice, speed) {
        Ok(p) => {
            p.prewarm();
            Ok((Box::new(p), None))
        }
        Err(e) => {
            let espeak = EspeakTts::new(fallback_language, speed)?;
            Ok((Box::new(espeak), Some(e.to_string())))
        }
    }
}

/// Synthesises `text` completely and returns the 16 kHz audio (`sayri say --to-file`).
pub fn render(tts: &dyn TextToSpeech, text: &str) -> Result<Vec<i16>, SpeechError> {
    let s: Arc<dyn SpeechStream> = tts.start(text)?;
    s.finish();
    let mut out = Vec::new();
    while let Some(chunk) = s.next_chunk()? {
        out.extend(chunk);
    }
    Ok(out)
}
