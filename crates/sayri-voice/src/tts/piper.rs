//! Piper text to speech, run as the `piper` program from PyPI `piper-tts` (kept at arm's
//! length: it is GPL and brings its own ONNX Runtime and espeak-ng). One process speaks one
//! reply: sentences go in on stdin as the reply streams, raw audio comes out on stdout. A
//! spare process is started ahead of time, so the voice model is already loaded when a reply
//! begins.

use super::process::{Framing, ProcessStream};
use crate::models::{ModelKind, ModelStore};
use sayri_core::ports::speech::{SpeechError, SpeechStream, TextToSpeech};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::Mutex;

/// The Piper engine for one voice.
pub struct PiperTts {
    program: PathBuf,
    voice: PathBuf,
    voice_name: String,
    rate: u32,
    length_scale: f32,
    variation: Variation,
    spare: Mutex<Option<Child>>,
}

/// Whether Piper varies its rendition of a text from one synthesis to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Variation {
    /// The voice's own generator and phoneme-width noise (random each time): the most natural
    /// speech, but the same text never gives the same samples twice.
    #[default]
    Natural,
    /// No generator or phoneme-width noise (both scales 0): the same text always gives the same
    /// samples, at the cost of a flatter voice. For tests, benchmarks and comparisons.
    Fixed,
}

impl PiperTts {
    /// Piper with voice `name` (`en_US-joe-medium`) from the store; `speed` 1.0 is normal
    /// (length scale = 1/speed). Errors when the program or the voice is missing.
    pub fn load(store: &ModelStore, name: &str, speed: f32) -> Result<PiperTts, SpeechError> {
        let program = store.piper_program().ok_or_else(|| SpeechError::NotReady {
            what: "the piper program".into(),
            reason: "not in the voice model cache, $SAYRI_PIPER or PATH".into(),
            fix: "run ./scripts/setup --voice (installs PyPI piper-tts into a private venv)".into(),
        })?;
        let voice =
            store
                .require(ModelKind::PiperVoice, name)
                .map_err(|e| SpeechError::NotReady {
                    what: format!("Piper voice {name}"),
                    reason: e.to_string(),
                    fix: "run ./scripts/setup --voice, or `sayri models import piper FILE.onnx`"
                        .into(),
                })?;
        PiperTts::with_files(&program, &voice, speed)
    }

    /// Piper from explicit paths.
    pub fn with_files(program: &Path, voice: &Path, speed: f32) -> Result<PiperTts, SpeechError> {
        let rate = voice_sample_rate(voice)?;
        Ok(PiperTts {
            program: program.to_path_buf(),
            voice: voice.to_path_buf(),
            voice_name: voice
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            rate,
            length_scale: 1.0 / speed.max(0.1),
            variation: Variation::Natural,
            spare: Mutex::new(None),
        })
    }

    /// The same engine with `variation` (set it before [`PiperTts::prewarm`]: a spare process
    /// already started keeps the variation it was started with).
    pub fn with_variation(mut self, variation: Variation) -> PiperTts {
        self.variation = variation;
        self
    }

    fn spawn(&self) -> Result<Child, SpeechError> {
        let mut cmd = Command::new(&self.program);
        cmd.arg("--model")
            .arg(&self.voice)
            .arg("--output-raw")
            .arg("--length-scale")
            .arg(format!("{:.3}", self.length_scale));
        if self.variation == Variation::Fixed {
            // Spelled with underscores: the spelling both the Python and the C++ piper accept.
            cmd.args(["--noise_scale", "0", "--noise_w", "0"]);
        }
        super::child_env::apply(&mut cmd);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| SpeechError::NotReady {
                what: format!("piper ({})", self.program.display()),
                reason: e.to_string(),
                fix: "run ./scripts/setup --voice".into(),
            })
    }

    /// Starts a spare process now (call once when the loop starts) so the first reply does not
    /// wait for the voice model to load.
    pub fn prewarm(&self) {
        if let Ok(mut spare) = self.spare.lock()
            && spare.is_none()
        {
            *spare = self.spawn().ok();
        }
    }

    fn take_warm(&self) -> Result<Child, SpeechError> {
        let spare = self.spare.lock().ok().and_then(|mut s| s.take());
        if let Some(mut child) = spare
            && matches!(child.try_wait(), Ok(None))
        {
            return Ok(child);
        }
        self.spawn()
    }
}

/// The sample rate in a voice's `.onnx.json` (`audio.sample_rate`).
fn voice_sample_rate(voice: &Path) -> Result<u32, SpeechError> {
    let mut cfg = voice.as_os_str().to_owned();
    cfg.push(".json");
    let text = std::fs::read_to_string(&cfg).map_err(|e| SpeechError::NotReady {
        what: format!("Piper voice config {}", Path::new(&cfg).display()),
        reason: e.to_string(),
        fix: "import the voice with its .onnx.json beside it".into(),
    })?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| SpeechError::Failed(format!("bad Piper voice config: {e}")))?;
    v.pointer("/audio/sample_rate")
        .and_then(|r| r.as_u64())
        .map(|r| r as u32)
        .ok_or_else(|| SpeechError::Failed("Piper voice config has no audio.sample_rate".into()))
}

impl TextToSpeech for PiperTts {
    fn start(&self, text: &str) -> Result<Arc<dyn SpeechStream>, SpeechError> {
        let child = self.take_warm()?;
        let stream = ProcessStream::start("piper", child, Framing::Raw(self.rate))?;
        stream.push_text(text)?;
        self.prewarm();
        Ok(Arc::new(stream))
    }

    fn name(&self) -> String {
        format!("piper {}", self.voice_name)
    }
}

impl Drop for PiperTts {
    fn drop(&mut self) {
        if let Ok(mut spare) = self.spare.lock()
            && let Some(mut child) = spare.take()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
