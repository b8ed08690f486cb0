//! Voice activity detection adapters: Silero (ONNX) and an energy fallback with no model.

pub mod energy;
#[cfg(feature = "onnx")]
pub mod silero;

pub use energy::EnergyVad;
#[cfg(feature = "onnx")]
pub use silero::SileroVad;

use crate::models::ModelStore;
use sayri_core::ports::speech::VoiceActivity;

/// The best VAD available: Silero when its model and ONNX Runtime load, else the energy VAD.
/// The second value says why Silero was not used (for status), `None` when it was.
pub fn best_available(store: &ModelStore) -> (Box<dyn VoiceActivity>, Option<String>) {
    #[cfg(feature = "onnx")]
    {
        match SileroVad::load(store) {
            Ok(v) => (Box::new(v), None),
            Err(e) => (Box::new(EnergyVad::new()), Some(e.to_string())),
        }
    }
    #[cfg(not(feature = "onnx"))]
    {
        let _ = store;
        (
            Box::new(EnergyVad::new()),
            Some("built without the `onnx` feature".into()),
        )
    }
}
