//! A VAD that needs no model: frame energy against an adaptive noise floor. Used when Silero
//! (or ONNX Runtime) is not installed; it cannot tell speech from a loud fan, so the status
//! reports it as a fallback.
//!
//! The floor follows the level only outside speech: `floor = clamp(0.95·floor + 0.05·level,
//! 0.005, 0.024)`; speech is `level ≥ clamp(1.3·floor + 0.004, 0.012, 0.030)`. The probability
//! reported is a soft ramp around that threshold.

use crate::audio::level::rms;
use sayri_core::ports::speech::{SpeechError, VoiceActivity};

/// The energy VAD.
#[derive(Debug, Clone)]
pub struct EnergyVad {
    floor: f32,
    in_speech: bool,
}

impl Default for EnergyVad {
    fn default() -> Self {
        EnergyVad {
            floor: 0.02,
            in_speech: false,
        }
    }
}

impl EnergyVad {
    /// A fresh detector (floor 0.02).
    pub fn new() -> EnergyVad {
        EnergyVad::default()
    }
}

impl VoiceActivity for EnergyVad {
    fn speech_probability(&mut self, frame: &[i16]) -> Result<f32, SpeechError> {
        let level = rms(frame);
        let speech_thresh = (1.30 * self.floor + 0.004).clamp(0.012, 0.030);
        let p = ((level / speech_thresh) - 0.5).clamp(0.0, 1.0);
        self.in_speech = p >= 0.5;
        if !self.in_speech {
            self.floor = (0.95 * self.floor + 0.05 * level).clamp(0.005, 0.024);
        }
        Ok(p)
    }

    fn reset(&mut self) {
        *self = EnergyVad::default();
    }

    fn name(&self) -> &str {
        "energy"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loud_frames_are_speech_and_quiet_ones_are_not() {
        let mut v = EnergyVad::new();
        let quiet = vec![30i16; 1280];
        let loud: Vec<i16> = (0..1280)
            .map(|i| if i % 2 == 0 { 6000 } else { -6000 })
            .collect();
        assert!(v.speech_probability(&quiet).unwrap() < 0.5);
        assert!(v.speech_probability(&loud).unwrap() >= 0.5);
    }
}
