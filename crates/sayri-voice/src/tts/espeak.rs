//! espeak-ng as the fallback voice (Debian `espeak-ng`): robotic but instant, no model.

use super::process::{Framing, ProcessStream};
use sayri_core::ports::speech::{SpeechError, SpeechStream, TextToSpeech};
use std::process::{Command, Stdio};
use std::sync::Arc;

/// espeak-ng with one voice (`en-us`, `es`, …).
pub struct EspeakTts {
    voice: String,
    words_per_minute: u32,
}

impl EspeakTts {
    /// espeak-ng speaking `voice` at `speed` (1.0 = 175 words per minute). Errors when the
    /// program is not installed.
    pub fn new(voice: &str, speed: f32) -> Result<EspeakTts, SpeechError> {
        let ok = Command::new("espeak-ng")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Err(SpeechError::NotReady {
                what: "espeak-ng".into(),
                reason: "the program is not installed".into(),
                fix: "apt-get install espeak-ng (./scripts/setup --voice does it)".into(),
            });
        }
        Ok(EspeakTts {
            voice: voice.to_string(),
            words_per_minute: (175.0 * speed.clamp(0.3, 3.0)) as u32,
        })
    }
}

impl TextToSpeech for EspeakTts {
    fn start(&self, text: &str) -> Result<Arc<dyn SpeechStream>, SpeechError> {
        let mut cmd = Command::new("espeak-ng");
        super::child_env::apply(&mut cmd);
        let child = cmd
            .args([
                "-v",
                &self.voice,
                "-s",
                &self.words_per_minute.to_string(),
                "--stdout",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| SpeechError::Failed(format!("espeak-ng: {e}")))?;
        let s = ProcessStream::start("espeak-ng", child, Framing::Wav)?;
        s.push_text(text)?;
        Ok(Arc::new(s))
    }

    fn name(&self) -> String {
        format!("espeak-ng {}", self.voice)
    }
}
