//! Speech to text with whisper.cpp (through whisper-rs): greedy decoding, one thread per
//! available core, language from the configuration, cancellable between decoder steps.

use super::language_code;
use crate::models::{ModelKind, ModelStore};
use sayri_core::ports::speech::{SpeechError, SpeechToText, Transcript};
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;
use whisper_rs::{
    FullParams, SamplingStrategy, WhisperContext, WhisperContextParameters, WhisperState,
};

/// A loaded whisper model.
pub struct WhisperStt {
    state: WhisperState,
    model: PathBuf,
    language: String,
    threads: i32,
    prompt: String,
}

impl WhisperStt {
    /// Loads whisper model `name` (`tiny.en`) from the store.
    pub fn load(store: &ModelStore, name: &str, language: &str) -> Result<WhisperStt, SpeechError> {
        let path = store
            .require(ModelKind::Whisper, name)
            .map_err(|e| SpeechError::NotReady {
                what: format!("whisper model {name}"),
                reason: e.to_string(),
                fix: "run ./scripts/setup --voice, or `sayri models import-ct2 DIR`".into(),
            })?;
        WhisperStt::load_file(&path, language)
    }

    /// Loads a ggml model file. `language` as in the config (`en`, `auto`, `es_ES`).
    pub fn load_file(path: &Path, language: &str) -> Result<WhisperStt, SpeechError> {
        whisper_rs::install_logging_hooks();
        let not_ready = |reason: String| SpeechError::NotReady {
            what: format!("whisper model {}", path.display()),
            reason,
            fix: "re-import it (`sayri models import-ct2 DIR`) or run ./scripts/setup --voice"
                .into(),
        };
        let file = path
            .to_str()
            .ok_or_else(|| not_ready("path is not UTF-8".into()))?;
        let ctx = WhisperContext::new_with_params(file, WhisperContextParameters::default())
            .map_err(|e| not_ready(format!("cannot load: {e}")))?;
        let state = ctx
            .create_state()
            .map_err(|e| not_ready(format!("cannot create a decoder: {e}")))?;
        let mut lang = language_code(language);
        if !ctx.is_multilingual() {
            lang = "en".into();
        }
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as i32;
        Ok(WhisperStt {
            state,
            model: path.to_path_buf(),
            language: lang,
            threads,
            prompt: String::new(),
        })
    }

    /// Text that primes the decoder (names it should spell right).
    pub fn set_prompt(&mut self, prompt: &str) {
        self.prompt = prompt.to_string();
    }
}

/// Encoder context for a clip of `samples` at 16 kHz: its length at 50 frames per second plus
/// 128 frames of margin, at least 384 and at most the model's 1500.
fn encoder_frames(samples: usize) -> i32 {
    let frames = samples.div_ceil(320) + 128;
    frames.clamp(384, 1500) as i32
}

/// whisper.cpp's abort callback: stop when the job's token was cancelled.
unsafe extern "C" fn abort_if_cancelled(user_data: *mut std::ffi::c_void) -> bool {
    // SAFETY: `user_data` is the `&CancellationToken` set in `transcribe`, alive during `full`.
    let token = unsafe { &*(user_data as *const CancellationToken) };
    token.is_cancelled()
}

impl SpeechToText for WhisperStt {
    fn transcribe(
        &mut self,
        audio: &[i16],
        cancel: &CancellationToken,
    ) -> Result<Transcript, SpeechError> {
        if cancel.is_cancelled() {
            return Err(SpeechError::Cancelled);
        }
        let mut pcm: Vec<f32> = audio.iter().map(|&s| f32::from(s) / 32768.0).collect();
        // whisper.cpp needs at least one second of audio; pad short clips with silence.
        if pcm.len() < 16_000 + 1600 {
            pcm.resize(16_000 + 1600, 0.0);
        }
        let mut params = FullParams::new(SamplingStrategy::Greedy { best_of: 1 });
        params.set_n_threads(self.threads);
        // The encoder normally runs over a full 30 s window whatever the clip's length; a short
        // utterance only needs its own length (50 encoder frames per second) plus a margin,
        // which makes it several times faster.
        params.set_audio_ctx(encoder_frames(pcm.len()));
        params.set_language(Some(self.language.as_str()));
        params.set_print_special(false);
        params.set_print_progress(false);
        params.set_print_realtime(false);
        params.set_print_timestamps(false);
        params.set_no_context(true);
        params.set_no_timestamps(true);
        params.set_single_segment(false);
        params.set_suppress_blank(true);
        params.set_suppress_nst(true);
        if !self.prompt.is_empty() {
            params.set_initial_prompt(&self.prompt);
        }
        // whisper-rs 0.16's `set_abort_callback_safe` hands the C side a pointer of the wrong
        // type (a boxed trait object read back as the closure), which corrupts memory and hung
        // transcriptions at random; the raw callback with the token as user data is used instead.
        // SAFETY: `abort_if_cancelled` only reads the `CancellationToken` behind the pointer,
        // which `cancel` keeps alive until `full` returns (the params are consumed by it).
        unsafe {
            params.set_abort_callback(Some(abort_if_cancelled));
            params.set_abort_callback_user_data(
                cancel as *const CancellationToken as *mut std::ffi::c_void,
            );
        }
        let result = self.state.full(params, &pcm);
        if cancel.is_cancelled() {
            return Err(SpeechError::Cancelled);
        }
        result.map_err(|e| SpeechError::Failed(format!("whisper failed: {e}")))?;
        let mut text = String::new();
        for seg in self.state.as_iter() {
            if let Ok(s) = seg.to_str_lossy() {
                text.push_str(&s);
            }
        }
        Ok(Transcript {
            text: text.trim().to_string(),
            language: self.language.clone(),
        })
    }

    fn name(&self) -> String {
        let file = self
            .model
            .file_name()
            .map(|f| f.to_string_lossy().into_owned());
        format!("whisper {}", file.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoder_context_follows_the_clip_length() {
        assert_eq!(encoder_frames(16_000), 384);
        assert_eq!(encoder_frames(16_000 * 10), 500 + 128);
        assert_eq!(encoder_frames(16_000 * 40), 1500);
    }
}
