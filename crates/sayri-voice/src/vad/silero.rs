//! Silero VAD (v5/v6 ONNX) on 512-sample windows at 16 kHz. Each window is fed with the last
//! 64 samples of the previous one in front of it (the model was trained that way; without this
//! context it never reports speech), plus its recurrent state.

use crate::models::{ModelKind, ModelStore};
use crate::onnx;
use ort::session::Session;
use ort::value::Tensor;
use sayri_core::ports::speech::{SpeechError, VoiceActivity};

const WINDOW: usize = 512;
const CONTEXT: usize = 64;

/// Silero VAD behind [`VoiceActivity`].
pub struct SileroVad {
    session: Session,
    state: Vec<f32>,
    context: Vec<f32>,
    pending: Vec<f32>,
    last: f32,
}

impl SileroVad {
    /// Loads `vad/silero_vad.onnx` from the store. Errors: [`SpeechError::NotReady`] when the
    /// model or ONNX Runtime is missing.
    pub fn load(store: &ModelStore) -> Result<SileroVad, SpeechError> {
        let model =
            store
                .require(ModelKind::Vad, "silero_vad")
                .map_err(|e| SpeechError::NotReady {
                    what: "Silero VAD".into(),
                    reason: e.to_string(),
                    fix: "run ./scripts/setup --voice".into(),
                })?;
        let env = onnx::environment(store)?;
        Ok(SileroVad {
            session: onnx::session(&env, &model)?,
            state: vec![0.0; 2 * 128],
            context: vec![0.0; CONTEXT],
            pending: Vec::new(),
            last: 0.0,
        })
    }

    fn window(&mut self, window: &[f32]) -> Result<f32, SpeechError> {
        let mut input = Vec::with_capacity(CONTEXT + WINDOW);
        input.extend_from_slice(&self.context);
        input.extend_from_slice(window);
        let err = |e| onnx::failed("Silero VAD", e);
        let x = Tensor::from_array(([1usize, CONTEXT + WINDOW], input)).map_err(err)?;
        let st = Tensor::from_array(([2usize, 1, 128], self.state.clone())).map_err(err)?;
        let sr = Tensor::from_array(([1usize], vec![16_000i64])).map_err(err)?;
        let out = self
            .session
            .run(ort::inputs!["input" => x, "state" => st, "sr" => sr])
            .map_err(err)?;
        let (_, p) = out["output"].try_extract_tensor::<f32>().map_err(err)?;
        let p = p.first().copied().unwrap_or(0.0);
        let (_, st) = out["stateN"].try_extract_tensor::<f32>().map_err(err)?;
        self.state = st.to_vec();
        self.context = window[WINDOW - CONTEXT..].to_vec();
        Ok(p)
    }
}

impl VoiceActivity for SileroVad {
    fn speech_probability(&mut self, frame: &[i16]) -> Result<f32, SpeechError> {
        self.pending
            .extend(frame.iter().map(|&s| f32::from(s) / 32768.0));
        let mut best: Option<f32> = None;
        while self.pending.len() >= WINDOW {
            let w: Vec<f32> = self.pending.drain(..WINDOW).collect();
            let p = self.window(&w)?;
            best = Some(best.map_or(p, |b: f32| b.max(p)));
        }
        if let Some(p) = best {
            self.last = p;
        }
        Ok(self.last)
    }

    fn reset(&mut self) {
        self.state.iter_mut().for_each(|x| *x = 0.0);
        self.context.iter_mut().for_each(|x| *x = 0.0);
        self.pending.clear();
        self.last = 0.0;
    }

    fn name(&self) -> &str {
        "silero"
    }
}
