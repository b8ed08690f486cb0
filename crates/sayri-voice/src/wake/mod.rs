//! Wake-word adapters.

#[cfg(feature = "onnx")]
pub mod oww;

#[cfg(feature = "onnx")]
pub use oww::OpenWakeWord;

/// The phrase a model listens for, from its name: underscores are spaces and a version suffix
/// (`_v0.1`) is dropped — `hey_jarvis_v0.1` → `hey jarvis`, `hey_victor` → `hey victor`.
pub fn phrase_of_model(name: &str) -> String {
    let base = match name.rfind("_v") {
        Some(i) if name[i + 2..].starts_with(|c: char| c.is_ascii_digit()) => &name[..i],
        _ => name,
    };
    base.replace('_', " ")
}

/// The installed wake-word model (name) for `phrase` (case and spacing ignored), if any.
pub fn model_for_phrase<'a>(
    phrase: &str,
    installed: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let want = phrase
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    installed
        .into_iter()
        .find(|m| phrase_of_model(m).to_lowercase() == want)
}

/// One wake-word detection of [`Spotter`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Detection {
    /// Where the frame that fired ends, milliseconds since the first frame.
    pub at_ms: u64,
    /// The detector's score for it, 0..1.
    pub score: f32,
}

/// Runs a wake-word detector over a stream of 80 ms frames the way the voice loop does: a
/// score at or above `threshold` is a detection, after which the detector's history is cleared
/// and further detections are ignored for `refractory_ms`. Used to try a model and a threshold
/// on a file or the microphone (`sayri wake test`).
pub struct Spotter {
    detector: Box<dyn sayri_core::ports::speech::WakeWord>,
    threshold: f32,
    refractory_ms: u64,
    clock_ms: u64,
    quiet_until_ms: u64,
    /// The highest score seen so far (also below the threshold).
    pub max_score: f32,
}

impl Spotter {
    /// A spotter over `detector` (see the type docs for `threshold` and `refractory_ms`).
    pub fn new(
        detector: Box<dyn sayri_core::ports::speech::WakeWord>,
        threshold: f32,
        refractory_ms: u64,
    ) -> Spotter {
        Spotter {
            detector,
            threshold,
            refractory_ms,
            clock_ms: 0,
            quiet_until_ms: 0,
            max_score: 0.0,
        }
    }

    /// The phrase the detector listens for.
    pub fn phrase(&self) -> &str {
        self.detector.phrase()
    }

    /// Feeds one frame (16 kHz mono, any length; the loop uses 1280 samples) and returns the
    /// detection it completes, if any.
    ///
    /// # Errors
    /// The detector failed (its model could not run).
    pub fn feed(
        &mut self,
        frame: &[i16],
    ) -> Result<Option<Detection>, sayri_core::ports::speech::SpeechError> {
        let score = self.detector.score(frame)?;
        self.clock_ms += sayri_core::ports::audio::samples_to_ms(frame.len() as u64);
        self.max_score = self.max_score.max(score);
        if score < self.threshold || self.clock_ms < self.quiet_until_ms {
            return Ok(None);
        }
        self.detector.reset();
        self.quiet_until_ms = self.clock_ms + self.refractory_ms;
        Ok(Some(Detection {
            at_ms: self.clock_ms,
            score,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_give_their_phrase() {
        assert_eq!(phrase_of_model("hey_jarvis_v0.1"), "hey jarvis");
        assert_eq!(phrase_of_model("hey_victor"), "hey victor");
        assert_eq!(phrase_of_model("alexa_v0.1"), "alexa");
        let installed = ["alexa_v0.1", "hey_jarvis_v0.1"];
        assert_eq!(
            model_for_phrase(" Hey  Jarvis", installed),
            Some("hey_jarvis_v0.1")
        );
        assert_eq!(model_for_phrase("hey sayri", installed), None);
    }
}
