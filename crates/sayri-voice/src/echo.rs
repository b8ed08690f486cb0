//! Acoustic echo cancellation: removes the assistant's own voice from the microphone signal
//! using what was sent to the speaker as the reference, so the microphone can stay open while
//! speaking (barge-in) without the assistant hearing itself.
//!
//! The canceller is speexdsp's MDF adaptive filter (feature `aec`), fed 10 ms blocks of
//! microphone and reference in lock-step, with a 256 ms filter tail: the speaker-to-microphone
//! delay plus room reverberation must fit in it. Its residual-echo suppressor runs after it.
//! [`EchoTracker`] keeps the short-term powers the voice loop needs for double-talk decisions
//! (is there a person talking over the echo?).

use crate::audio::level::power;
use std::collections::VecDeque;

/// Samples per canceller block (10 ms at 16 kHz).
pub const BLOCK: usize = 160;

/// Removes the echo of the reference signal from the microphone signal.
pub struct EchoCanceller {
    #[cfg(feature = "aec")]
    aec: SendAec,
}

#[cfg(feature = "aec")]
struct SendAec(aec_rs::Aec);

// SAFETY: the speexdsp echo and preprocess states are plain heap memory owned by this value,
// with no thread affinity; they are only ever used through `&mut self`, from one thread at a
// time. Moving them to another thread is sound.
#[cfg(feature = "aec")]
unsafe impl Send for SendAec {}

impl EchoCanceller {
    /// A canceller with a 256 ms tail (4096 taps at 16 kHz).
    pub fn new() -> EchoCanceller {
        EchoCanceller {
            #[cfg(feature = "aec")]
            aec: SendAec(aec_rs::Aec::new(&aec_rs::AecConfig {
                frame_size: BLOCK,
                filter_length: 4096,
                sample_rate: 16_000,
                enable_preprocess: false,
            })),
        }
    }

    /// True when built with a real canceller (feature `aec`); without it the signal passes
    /// through unchanged and only the wake-word veto protects against self-triggering.
    pub fn is_active() -> bool {
        cfg!(feature = "aec")
    }

    /// Returns `mic` with the echo of `reference` removed. Both are the same length, a
    /// multiple of [`BLOCK`], and aligned on the sample clock: `reference[i]` is the sample
    /// sent to the speaker at the moment `mic[i]` was captured.
    pub fn process(&mut self, mic: &[i16], reference: &[i16]) -> Vec<i16> {
        #[cfg(feature = "aec")]
        {
            let mut out = vec![0i16; mic.len()];
            for ((m, r), o) in mic
                .chunks_exact(BLOCK)
                .zip(reference.chunks_exact(BLOCK))
                .zip(out.chunks_exact_mut(BLOCK))
            {
                self.aec.0.cancel_echo(m, r, o);
            }
            out
        }
        #[cfg(not(feature = "aec"))]
        {
            let _ = reference;
            mic.to_vec()
        }
    }
}

impl Default for EchoCanceller {
    fn default() -> Self {
        EchoCanceller::new()
    }
}

/// Short-term powers of the echo-cancelled microphone ("near end") and of the reference
/// ("far end") over the last few frames, for double-talk decisions.
#[derive(Debug, Clone)]
pub struct EchoTracker {
    near: VecDeque<f64>,
    far: VecDeque<f64>,
    frames: usize,
}

impl EchoTracker {
    /// Averages over `frames` frames (the reference window is one frame longer, to cover the
    /// acoustic delay).
    pub fn new(frames: usize) -> EchoTracker {
        EchoTracker {
            near: VecDeque::new(),
            far: VecDeque::new(),
            frames: frames.max(1),
        }
    }

    /// Records one frame of cleaned microphone signal and the reference played with it.
    pub fn push(&mut self, cleaned: &[i16], reference: &[i16]) {
        self.near.push_back(power(cleaned));
        self.far.push_back(power(reference));
        while self.near.len() > self.frames {
            self.near.pop_front();
        }
        while self.far.len() > self.frames + 1 {
            self.far.pop_front();
        }
    }

    /// Near/far power ratio over the window; infinite when nothing was played.
    pub fn near_to_far(&self) -> f32 {
        let mean = |v: &VecDeque<f64>| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let far = mean(&self.far);
        if far < 1e-7 {
            return f32::INFINITY;
        }
        (mean(&self.near) / far) as f32
    }

    /// True when anything audible was played in the window.
    pub fn far_active(&self) -> bool {
        self.far.iter().any(|&p| p >= 1e-7)
    }
}

#[cfg(all(test, feature = "aec"))]
mod tests {
    use super::*;

    #[test]
    fn a_delayed_copy_of_the_reference_is_removed() {
        // Reference: broadband noise; mic: the same, 40 ms later at −6 dB.
        let n = 16_000 * 3;
        let mut seed = 99u32;
        let reference: Vec<i16> = (0..n)
            .map(|_| {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                ((seed >> 16) as i32 % 8000 - 4000) as i16
            })
            .collect();
        let mic: Vec<i16> = (0..n)
            .map(|i| if i >= 640 { reference[i - 640] / 2 } else { 0 })
            .collect();
        let mut aec = EchoCanceller::new();
        let mut out = Vec::new();
        for (m, r) in mic.chunks(1280).zip(reference.chunks(1280)) {
            out.extend(aec.process(m, r));
        }
        let tail = n - 16_000..n;
        let before = power(&mic[tail.clone()]);
        let after = power(&out[tail]);
        let erle_db = 10.0 * (before / after.max(1e-12)).log10();
        assert!(
            erle_db > 15.0,
            "echo return loss enhancement only {erle_db:.1} dB"
        );
    }
}
