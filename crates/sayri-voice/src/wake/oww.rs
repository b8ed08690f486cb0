//! openWakeWord: a keyword spotter made of three ONNX models run on every 80 ms frame.
//!
//! 1. `melspectrogram.onnx` turns the newest 1280 samples (plus 480 samples of history) into
//!    mel frames (32 bands, 10 ms hop), rescaled as `x / 10 + 2`.
//! 2. `embedding_model.onnx` turns the newest 76 mel frames into one 96-value embedding.
//! 3. The classifier (`hey_jarvis_v0.1.onnx`, …) scores the newest N embeddings (N from its
//!    input shape, 16 for the stock models) with the probability that the phrase just ended.
//!
//! The embedding history starts filled with the embeddings of 4 s of low noise so scores are
//! available from the first frame; the first 5 scores are forced to 0 while the models settle.

use super::phrase_of_model;
use crate::models::{ModelStore, SHARED_WAKE_FILES};
use crate::onnx;
use ort::session::Session;
use ort::value::Tensor;
use sayri_core::ports::audio::FRAME_SAMPLES;
use sayri_core::ports::speech::{SpeechError, WakeWord};
use std::collections::VecDeque;
use std::path::Path;

const MEL_HISTORY: usize = 480;
const MEL_WINDOW: usize = 76;
const MEL_BANDS: usize = 32;
const EMBEDDING: usize = 96;
const MEL_MAX: usize = 970;
const FEATURE_MAX: usize = 120;
const SETTLE_FRAMES: usize = 5;

/// An openWakeWord detector for one phrase.
pub struct OpenWakeWord {
    mel: Session,
    embed: Session,
    classifier: Session,
    classifier_input: String,
    n_features: usize,
    phrase: String,
    raw: VecDeque<f32>,
    pending: Vec<i16>,
    mels: VecDeque<[f32; MEL_BANDS]>,
    features: VecDeque<Vec<f32>>,
    scored: usize,
    warmup_features: VecDeque<Vec<f32>>,
}

impl OpenWakeWord {
    /// Loads the classifier `model` (a name in the store's `wakeword/` directory, or a path to
    /// an `.onnx` file) with the shared feature models beside it.
    pub fn load(store: &ModelStore, model: &str) -> Result<OpenWakeWord, SpeechError> {
        let dir = store.wakeword_dir();
        let classifier_path = if model.ends_with(".onnx") {
            Path::new(model).to_path_buf()
        } else {
            dir.join(format!("{model}.onnx"))
        };
        let feature_dir = if model.ends_with(".onnx") {
            classifier_path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or(dir.clone())
        } else {
            dir.clone()
        };
        let mut shared = SHARED_WAKE_FILES.iter().map(|f| {
            let beside = feature_dir.join(f);
            if beside.is_file() {
                beside
            } else {
                dir.join(f)
            }
        });
        let (mel_path, embed_path) = match (shared.next(), shared.next()) {
            (Some(a), Some(b)) => (a, b),
            _ => unreachable!("two shared files"),
        };
        let env = onnx::environment(store)?;
        let classifier = onnx::session(&env, &classifier_path)?;
        let input = classifier
            .inputs()
            .first()
            .ok_or_else(|| onnx::failed("wake-word model", "the classifier has no input"))?;
        let n_features = input
            .dtype()
            .tensor_shape()
            .and_then(|s| s.get(1).copied())
            .filter(|&n| n > 0)
            .map_or(16, |n| n as usize);
        let classifier_input = input.name().to_string();
        let stem = classifier_path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut me = OpenWakeWord {
            mel: onnx::session(&env, &mel_path)?,
            embed: onnx::session(&env, &embed_path)?,
            classifier,
            classifier_input,
            n_features,
            phrase: phrase_of_model(&stem),
            raw: VecDeque::new(),
            pending: Vec::new(),
            mels: VecDeque::new(),
            features: VecDeque::new(),
            scored: 0,
            warmup_features: VecDeque::new(),
        };
        me.warmup_features = me.noise_features()?;
        me.reset();
        Ok(me)
    }

    /// Embeddings of 4 s of deterministic low noise (±1000), the history a fresh detector
    /// starts from.
    fn noise_features(&mut self) -> Result<VecDeque<Vec<f32>>, SpeechError> {
        let mut seed: u32 = 0x1234_5678;
        let noise: Vec<f32> = (0..16_000 * 4)
            .map(|_| {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                ((seed >> 16) % 2000) as f32 - 1000.0
            })
            .collect();
        let mels = self.melspectrogram(&noise)?;
        let mut out = VecDeque::new();
        let mut i = 0;
        while i + MEL_WINDOW <= mels.len() {
            out.push_back(self.embedding(&mels[i..i + MEL_WINDOW])?);
            i += 8;
        }
        Ok(out)
    }

    fn melspectrogram(&mut self, samples: &[f32]) -> Result<Vec<[f32; MEL_BANDS]>, SpeechError> {
        let err = |e| onnx::failed("wake-word melspectrogram", e);
        let x = Tensor::from_array(([1usize, samples.len()], samples.to_vec())).map_err(err)?;
        let out = self.mel.run(ort::inputs!["input" => x]).map_err(err)?;
        let (_, data) = out[0].try_extract_tensor::<f32>().map_err(err)?;
        Ok(data
            .chunks_exact(MEL_BANDS)
            .map(|c| {
                let mut row = [0.0; MEL_BANDS];
                for (r, v) in row.iter_mut().zip(c) {
                    *r = v / 10.0 + 2.0;
                }
                row
            })
            .collect())
    }

    fn embedding(&mut self, window: &[[f32; MEL_BANDS]]) -> Result<Vec<f32>, SpeechError> {
        let err = |e| onnx::failed("wake-word embedding", e);
        let flat: Vec<f32> = window.iter().flatten().copied().collect();
        let x = Tensor::from_array(([1usize, MEL_WINDOW, MEL_BANDS, 1], flat)).map_err(err)?;
        let out = self.embed.run(ort::inputs!["input_1" => x]).map_err(err)?;
        let (_, data) = out[0].try_extract_tensor::<f32>().map_err(err)?;
        Ok(data.iter().take(EMBEDDING).copied().collect())
    }

    /// Runs the chain on one 1280-sample step and returns its score.
    fn step(&mut self, chunk: &[i16]) -> Result<f32, SpeechError> {
        self.raw.extend(chunk.iter().map(|&s| f32::from(s)));
        while self.raw.len() > FRAME_SAMPLES + MEL_HISTORY {
            self.raw.pop_front();
        }
        let input: Vec<f32> = self.raw.iter().copied().collect();
        for row in self.melspectrogram(&input)? {
            self.mels.push_back(row);
        }
        while self.mels.len() > MEL_MAX {
            self.mels.pop_front();
        }
        if self.mels.len() >= MEL_WINDOW {
            let window: Vec<[f32; MEL_BANDS]> = self
                .mels
                .range(self.mels.len() - MEL_WINDOW..)
                .copied()
                .collect();
            let e = self.embedding(&window)?;
            self.features.push_back(e);
            while self.features.len() > FEATURE_MAX {
                self.features.pop_front();
            }
        }
        if self.features.len() < self.n_features {
            return Ok(0.0);
        }
        let flat: Vec<f32> = self
            .features
            .range(self.features.len() - self.n_features..)
            .flatten()
            .copied()
            .collect();
        let err = |e| onnx::failed("wake-word classifier", e);
        let x = Tensor::from_array(([1usize, self.n_features, EMBEDDING], flat)).map_err(err)?;
        let name = self.classifier_input.clone();
        let out = self
            .classifier
            .run(ort::inputs![name.as_str() => x])
            .map_err(err)?;
        let (_, data) = out[0].try_extract_tensor::<f32>().map_err(err)?;
        let score = data.first().copied().unwrap_or(0.0);
        self.scored += 1;
        Ok(if self.scored <= SETTLE_FRAMES {
            0.0
        } else {
            score
        })
    }
}

impl WakeWord for OpenWakeWord {
    fn score(&mut self, frame: &[i16]) -> Result<f32, SpeechError> {
        self.pending.extend_from_slice(frame);
        let mut best = 0.0f32;
        while self.pending.len() >= FRAME_SAMPLES {
            let chunk: Vec<i16> = self.pending.drain(..FRAME_SAMPLES).collect();
            best = best.max(self.step(&chunk)?);
        }
        Ok(best)
    }

    fn reset(&mut self) {
        self.raw = std::iter::repeat_n(0.0, MEL_HISTORY).collect();
        self.pending.clear();
        self.mels = std::iter::repeat_n([1.0; MEL_BANDS], MEL_WINDOW).collect();
        self.features = self.warmup_features.clone();
        self.scored = 0;
    }

    fn phrase(&self) -> &str {
        &self.phrase
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stock_model_names_give_their_phrase() {
        assert_eq!(phrase_of_model("hey_jarvis_v0.1"), "hey jarvis");
        assert_eq!(phrase_of_model("alexa_v0.1"), "alexa");
        assert_eq!(phrase_of_model("my_phrase"), "my phrase");
    }
}
