//! Utterance segmentation: turns per-frame speech probabilities (from any VAD) into
//! "speech started" and "utterance ended" decisions, on the audio sample clock.
//!
//! * Speech starts after `min_speech_ms` of frames at or above `start_threshold`; the
//!   utterance then begins `pre_roll_ms` before the first of them (so the first syllable is
//!   not cut).
//! * It ends after `silence_ms` of frames below `end_threshold` (frames in between count
//!   back down slowly, so a short pause inside a sentence does not end it), or when it
//!   reaches `max_utterance_ms`.

/// Segmentation settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmenterConfig {
    /// Probability at or above which a frame is speech.
    pub start_threshold: f32,
    /// Probability below which a frame is silence while in speech (hysteresis).
    pub end_threshold: f32,
    /// Speech needed to start an utterance, milliseconds.
    pub min_speech_ms: u32,
    /// Silence that ends an utterance, milliseconds (at least 200).
    pub silence_ms: u32,
    /// Longest utterance, milliseconds.
    pub max_utterance_ms: u32,
    /// Audio kept before the detected start, milliseconds.
    pub pre_roll_ms: u32,
}

impl Default for SegmenterConfig {
    fn default() -> Self {
        SegmenterConfig {
            start_threshold: 0.5,
            end_threshold: 0.35,
            min_speech_ms: 160,
            silence_ms: 500,
            max_utterance_ms: 15_000,
            pre_roll_ms: 240,
        }
    }
}

/// A decision for the frame just fed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Segment {
    /// Nothing changed.
    None,
    /// Speech started; the utterance begins at this sample position.
    Started {
        /// First sample of the utterance (pre-roll included).
        start: u64,
    },
    /// The utterance ended at this sample position (exclusive).
    Ended {
        /// First sample of the utterance.
        start: u64,
        /// One past its last sample.
        end: u64,
        /// Milliseconds judged to be speech inside it.
        voiced_ms: u32,
        /// Highest probability inside it.
        peak: f32,
        /// True when it was cut at the maximum length.
        truncated: bool,
    },
}

/// The segmenter's running state.
#[derive(Debug, Clone)]
pub struct Segmenter {
    cfg: SegmenterConfig,
    pos: u64,
    run_ms: u32,
    run_start: u64,
    in_speech: bool,
    start: u64,
    floor: u64,
    gap_deadline: u64,
    silence_ms: u32,
    voiced_ms: u32,
    peak: f32,
}

const RATE: u64 = 16_000;

/// After [`Segmenter::restart_here`], speech that continues the wake phrase is ignored for
/// at most this long, milliseconds.
pub const WAKE_TAIL_MS: u32 = 400;

fn ms(samples: u64) -> u32 {
    (samples * 1000 / RATE) as u32
}

impl Segmenter {
    /// A segmenter at sample position 0, outside speech.
    pub fn new(mut cfg: SegmenterConfig) -> Segmenter {
        cfg.silence_ms = cfg.silence_ms.max(200);
        Segmenter {
            cfg,
            pos: 0,
            run_ms: 0,
            run_start: 0,
            in_speech: false,
            start: 0,
            floor: 0,
            gap_deadline: 0,
            silence_ms: 0,
            voiced_ms: 0,
            peak: 0.0,
        }
    }

    /// True inside an utterance.
    pub fn in_speech(&self) -> bool {
        self.in_speech
    }

    /// Sample position after the last frame fed.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Start of the current utterance, when in speech.
    pub fn utterance_start(&self) -> Option<u64> {
        self.in_speech.then_some(self.start)
    }

    /// Speech evidence of the current utterance so far: `(voiced_ms, peak)`.
    pub fn evidence(&self) -> (u32, f32) {
        (self.voiced_ms, self.peak)
    }

    /// Forgets everything heard up to now (the wake word just fired): the next utterance needs
    /// fresh speech after this point, and its pre-roll never reaches back before it. Speech
    /// still running on from the wake phrase (its last syllable) does not count until a
    /// silent frame ended it, or for at most [`WAKE_TAIL_MS`]. So a wake phrase followed by
    /// silence never becomes an utterance, and one followed by a question becomes the question.
    pub fn restart_here(&mut self) {
        self.reset();
        self.floor = self.pos;
        self.gap_deadline = self.pos + u64::from(WAKE_TAIL_MS) * RATE / 1000;
    }

    /// New settings from the next frame on; the utterance being collected is dropped.
    pub fn reconfigure(&mut self, mut cfg: SegmenterConfig) {
        cfg.silence_ms = cfg.silence_ms.max(200);
        self.cfg = cfg;
        self.reset();
    }

    /// Drops the current utterance; the next one needs a fresh start.
    pub fn reset(&mut self) {
        self.in_speech = false;
        self.run_ms = 0;
        self.run_start = self.pos;
        self.silence_ms = 0;
        self.voiced_ms = 0;
        self.peak = 0.0;
    }

    /// Feeds one frame of `len` samples with speech probability `p`.
    pub fn push(&mut self, len: usize, p: f32) -> Segment {
        let frame_start = self.pos;
        self.pos += len as u64;
        let frame_ms = ms(len as u64);
        if self.pos <= self.gap_deadline {
            if p < self.cfg.end_threshold {
                self.gap_deadline = 0;
            }
            return Segment::None;
        }
        if !self.in_speech {
            if p >= self.cfg.start_threshold {
                if self.run_ms == 0 {
                    self.run_start = frame_start;
                }
                self.run_ms += frame_ms;
                self.peak = self.peak.max(p);
                if self.run_ms >= self.cfg.min_speech_ms {
                    let pre = u64::from(self.cfg.pre_roll_ms) * RATE / 1000;
                    self.in_speech = true;
                    self.start = self.run_start.saturating_sub(pre).max(self.floor);
                    self.voiced_ms = self.run_ms;
                    self.silence_ms = 0;
                    return Segment::Started { start: self.start };
                }
            } else {
                self.run_ms = 0;
                self.peak = 0.0;
            }
            return Segment::None;
        }
        self.peak = self.peak.max(p);
        if p >= self.cfg.start_threshold {
            self.voiced_ms += frame_ms;
        }
        if p < self.cfg.end_threshold {
            self.silence_ms += frame_ms;
        } else {
            self.silence_ms = self.silence_ms.saturating_sub(frame_ms / 4);
        }
        let long = ms(self.pos - self.start) >= self.cfg.max_utterance_ms;
        if self.silence_ms >= self.cfg.silence_ms || long {
            let ended = Segment::Ended {
                start: self.start,
                end: self.pos,
                voiced_ms: self.voiced_ms,
                peak: self.peak,
                truncated: long && self.silence_ms < self.cfg.silence_ms,
            };
            self.reset();
            return ended;
        }
        Segment::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: usize = 1280; // 80 ms

    fn feed(s: &mut Segmenter, probs: &[f32]) -> Vec<Segment> {
        probs
            .iter()
            .map(|&p| s.push(F, p))
            .filter(|x| *x != Segment::None)
            .collect()
    }

    #[test]
    fn speech_then_silence_makes_one_utterance_with_pre_roll() {
        let mut s = Segmenter::new(SegmenterConfig::default());
        let mut probs = vec![0.0; 5];
        probs.extend([0.9; 10]);
        probs.extend([0.0; 8]);
        let out = feed(&mut s, &probs);
        assert_eq!(out.len(), 2);
        // Speech began at frame 5 = sample 6400; 240 ms pre-roll = 3840 samples.
        assert_eq!(out[0], Segment::Started { start: 6400 - 3840 });
        match out[1] {
            Segment::Ended {
                start,
                voiced_ms,
                truncated,
                ..
            } => {
                assert_eq!(start, 2560);
                assert_eq!(voiced_ms, 800);
                assert!(!truncated);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_single_click_does_not_start_speech() {
        let mut s = Segmenter::new(SegmenterConfig::default());
        assert!(feed(&mut s, &[0.0, 0.95, 0.0, 0.0, 0.95, 0.0]).is_empty());
    }

    #[test]
    fn short_pause_inside_a_sentence_does_not_end_it() {
        let mut s = Segmenter::new(SegmenterConfig::default());
        let mut probs = vec![0.9; 5];
        probs.extend([0.1; 4]); // 320 ms pause < 500 ms
        probs.extend([0.9; 5]);
        let out = feed(&mut s, &probs);
        assert_eq!(out.len(), 1, "{out:?}");
    }

    #[test]
    fn long_utterance_is_cut_at_the_maximum() {
        let mut s = Segmenter::new(SegmenterConfig {
            max_utterance_ms: 1600,
            ..SegmenterConfig::default()
        });
        let out = feed(&mut s, &[0.9; 30]);
        assert!(out.iter().any(|x| matches!(
            x,
            Segment::Ended {
                truncated: true,
                ..
            }
        )));
    }

    #[test]
    fn restart_needs_fresh_speech_and_clamps_the_pre_roll() {
        let mut s = Segmenter::new(SegmenterConfig::default());
        feed(&mut s, &[0.9; 4]);
        assert!(s.in_speech());
        s.restart_here(); // at 5120
        assert!(!s.in_speech());
        let out = feed(&mut s, &[0.0, 0.0, 0.0]);
        assert!(
            out.is_empty(),
            "silence after the wake word is no utterance"
        );
        let out = feed(&mut s, &[0.9, 0.9]);
        assert_eq!(out, vec![Segment::Started { start: 8960 - 3840 }]);
        let mut s = Segmenter::new(SegmenterConfig::default());
        feed(&mut s, &[0.9; 4]);
        s.restart_here();
        let out = feed(&mut s, &[0.9, 0.9, 0.9, 0.9, 0.9]);
        assert!(
            out.is_empty(),
            "the wake phrase's last syllable is not an utterance"
        );
        let out = feed(&mut s, &[0.9, 0.9]);
        assert_eq!(
            out,
            vec![Segment::Started {
                start: 11520 - 3840
            }],
            "continuous speech counts once 400 ms passed"
        );
        let mut s = Segmenter::new(SegmenterConfig::default());
        feed(&mut s, &[0.9; 4]);
        s.restart_here(); // at 5120
        let out = feed(&mut s, &[0.0, 0.9, 0.9]);
        assert_eq!(
            out,
            vec![Segment::Started { start: 5120 }],
            "pre-roll never reaches back before the wake word"
        );
    }

    #[test]
    fn silence_ms_has_a_floor_of_200() {
        let mut s = Segmenter::new(SegmenterConfig {
            silence_ms: 50,
            ..SegmenterConfig::default()
        });
        let mut probs = vec![0.9; 3];
        probs.extend([0.0; 2]); // 160 ms
        assert_eq!(feed(&mut s, &probs).len(), 1);
        assert_eq!(feed(&mut s, &[0.0]).len(), 1); // 240 ms ends it
    }
}
