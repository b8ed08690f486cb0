//! What voice can do with what is installed, and what to install otherwise — the `stt_ready`,
//! `tts_ready` and `wake_ready` fields of the daemon's status.

use super::{ModelKind, ModelStore};

/// Readiness of each voice part, with the fix for each part that is not ready.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Readiness {
    /// The whisper model is installed.
    pub stt_ready: bool,
    /// The `piper` program and the voice are installed (else speech falls back to espeak-ng
    /// when that is installed; see `tts_fallback`).
    pub tts_ready: bool,
    /// espeak-ng can speak when Piper cannot.
    pub tts_fallback: bool,
    /// The wake-word model, its feature models and ONNX Runtime are installed.
    pub wake_ready: bool,
    /// Silero VAD can run (else the energy VAD is used).
    pub vad_ready: bool,
    /// One line per missing part: what is missing and the command that installs it.
    pub missing: Vec<String>,
}

/// What the voice configuration asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoiceModels {
    /// Whisper model name (`tiny.en`).
    pub whisper: String,
    /// Piper voice name (`en_US-joe-medium`).
    pub piper_voice: String,
    /// Wake-word model name (`hey_jarvis_v0.1`).
    pub wake_model: String,
}

impl Default for VoiceModels {
    fn default() -> Self {
        VoiceModels {
            whisper: "tiny.en".into(),
            piper_voice: "en_US-joe-medium".into(),
            wake_model: "hey_jarvis_v0.1".into(),
        }
    }
}

impl ModelStore {
    /// Checks files only (nothing is loaded): cheap enough for every `status` request.
    pub fn readiness(&self, want: &VoiceModels) -> Readiness {
        let mut missing = Vec::new();
        let mut need = |ok: bool, what: String| {
            if !ok {
                missing.push(what);
            }
            ok
        };
        let setup = "run ./scripts/setup --voice";
        let stt_ready = need(
            self.path(ModelKind::Whisper, &want.whisper).is_file(),
            format!(
                "whisper model {}: {setup}, or `sayri models import-ct2 DIR` / `sayri models download whisper {}`",
                want.whisper, want.whisper
            ),
        );
        let piper = self.piper_program().is_some();
        let voice = self
            .path(ModelKind::PiperVoice, &want.piper_voice)
            .is_file();
        let tts_ready = need(
            piper,
            format!("the piper program (PyPI piper-tts): {setup}"),
        ) & need(
            voice,
            format!(
                "Piper voice {}: {setup}, or `sayri models import piper FILE.onnx`",
                want.piper_voice
            ),
        );
        let runtime = self.onnxruntime_library().is_ok();
        need(
            runtime,
            format!("ONNX Runtime (libonnxruntime.so): {setup}, or set ORT_DYLIB_PATH"),
        );
        let features = super::SHARED_WAKE_FILES
            .iter()
            .all(|f| self.wakeword_dir().join(f).is_file());
        let wake_model = self.path(ModelKind::WakeWord, &want.wake_model).is_file();
        need(
            features && wake_model,
            format!(
                "wake-word model {} and openWakeWord's feature models: {setup}",
                want.wake_model
            ),
        );
        let vad_ready = runtime && self.path(ModelKind::Vad, "silero_vad").is_file();
        Readiness {
            stt_ready,
            tts_ready,
            tts_fallback: super::find_in_path("espeak-ng").is_some(),
            wake_ready: runtime && features && wake_model,
            vad_ready,
            missing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_store_says_what_to_install() {
        let dir = tempfile::tempdir().unwrap();
        let r = ModelStore::at(dir.path()).readiness(&VoiceModels::default());
        assert!(!r.stt_ready && !r.wake_ready && !r.vad_ready);
        assert!(
            r.missing
                .iter()
                .any(|m| m.contains("whisper model tiny.en") && m.contains("setup --voice"))
        );
        assert!(r.missing.iter().any(|m| m.contains("hey_jarvis_v0.1")));
    }
}
