//! Acoustic echo cancellation: removes the assistant's own voice from the microphone signal
//! using what was sent to the speaker as the reference, so the microphone can stay open while
//! speaking (barge-in) without the assistant hearing itself.
//!
//! The canceller is speexdsp's MDF adaptive filter (feature `aec`), told the 16 kHz sample
//! rate and fed 10 ms blocks of microphone and reference in lock-step, with a 256 ms filter
//! tail: the speaker-to-microphone delay plus room reverberation must fit in it. speexdsp's
//! residual-echo suppressor is not used: it crushed a person talking over the reply.
//! [`EchoTracker`] keeps the short-term powers the voice loop needs for double-talk decisions
//! (is there a person talking over the echo?).

use crate::audio::level::power;
use std::collections::VecDeque;

/// Samples per canceller block (10 ms at 16 kHz).
pub const BLOCK: usize = 160;

/// Length of the canceller's filter: 256 ms at 16 kHz.
#[cfg(feature = "aec")]
const TAPS: usize = 4096;

/// Removes the echo of the reference signal from the microphone signal.
pub struct EchoCanceller {
    #[cfg(feature = "aec")]
    speex: Speex,
}

/// One speexdsp echo-canceller state.
#[cfg(feature = "aec")]
struct Speex(std::ptr::NonNull<aec_rs_sys::SpeexEchoState>);

// SAFETY: the speexdsp echo state is plain heap memory owned by this value, with no thread
// affinity; it is only ever used through `&mut self`, from one thread at a time. Moving it to
// another thread is sound.
#[cfg(feature = "aec")]
unsafe impl Send for Speex {}

#[cfg(feature = "aec")]
impl Speex {
    fn new() -> Speex {
        // SAFETY: plain constructor; it returns an owned state or null (out of memory).
        let raw = unsafe { aec_rs_sys::speex_echo_state_init(BLOCK as i32, TAPS as i32) };
        // Null only when out of memory, where Rust's own allocations abort the process too.
        #[allow(clippy::expect_used)]
        let state = std::ptr::NonNull::new(raw).expect("memory for the echo canceller");
        // speexdsp assumes 8 kHz unless told the rate. Left so at 16 kHz, its DC filter cuts
        // everything below ~250 Hz and its adaptation is mistuned: a person talking over the
        // reply comes out too damaged for the wake-word detector.
        let mut rate = sayri_core::ports::audio::SAMPLE_RATE as i32;
        // SAFETY: `state` is live; SET_SAMPLING_RATE reads one `int` through the pointer.
        unsafe {
            aec_rs_sys::speex_echo_ctl(
                state.as_ptr(),
                aec_rs_sys::SPEEX_ECHO_SET_SAMPLING_RATE as i32,
                (&raw mut rate).cast(),
            );
        }
        Speex(state)
    }

    fn cancel(&mut self, mic: &[i16], reference: &[i16], out: &mut [i16]) {
        assert!(mic.len() == BLOCK && reference.len() == BLOCK && out.len() == BLOCK);
        // SAFETY: the state is live and used from this thread only (`&mut self`); the three
        // buffers hold one block (BLOCK samples, the frame size the state was made for).
        unsafe {
            aec_rs_sys::speex_echo_cancellation(
                self.0.as_ptr(),
                mic.as_ptr(),
                reference.as_ptr(),
                out.as_mut_ptr(),
            );
        }
    }
}

#[cfg(feature = "aec")]
impl Drop for Speex {
    fn drop(&mut self) {
        // SAFETY: the state was made by `speex_echo_state_init` and is destroyed once.
        unsafe { aec_rs_sys::speex_echo_state_destroy(self.0.as_ptr()) }
    }
}

impl EchoCanceller {
    /// A canceller with a 256 ms tail (4096 taps at 16 kHz).
    pub fn new() -> EchoCanceller {
        EchoCanceller {
            #[cfg(feature = "aec")]
            speex: Speex::new(),
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
                self.speex.cancel(m, r, o);
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

    const RATE: usize = 16_000;

    /// Deterministic white noise in ±`amp`.
    fn noise(n: usize, seed: u32, amp: i32) -> Vec<i16> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                ((s >> 16) as i32 % (2 * amp) - amp) as i16
            })
            .collect()
    }

    /// A low voiced sound (110 Hz and its harmonics, like a low male voice) from `from` on.
    fn low_voice(n: usize, from: usize) -> Vec<i16> {
        (0..n)
            .map(|i| {
                if i < from {
                    return 0;
                }
                let t = i as f32 / RATE as f32;
                let v: f32 = (1..=8)
                    .map(|h| (std::f32::consts::TAU * 110.0 * h as f32 * t).sin() / h as f32)
                    .sum();
                (v * 2500.0) as i16
            })
            .collect()
    }

    /// The echo of `reference` at a microphone: 40 ms later at −12 dB.
    fn echo_of(reference: &[i16]) -> Vec<i16> {
        (0..reference.len())
            .map(|i| if i >= 640 { reference[i - 640] / 4 } else { 0 })
            .collect()
    }

    fn cancel(mic: &[i16], reference: &[i16]) -> Vec<i16> {
        let mut aec = EchoCanceller::new();
        mic.chunks(1280)
            .zip(reference.chunks(1280))
            .flat_map(|(m, r)| aec.process(m, r))
            .collect()
    }

    fn db(a: f64, b: f64) -> f64 {
        10.0 * (a / b.max(1e-12)).log10()
    }

    #[test]
    fn a_low_voice_passes_the_canceller_whole_in_a_quiet_room() {
        // Told 8 kHz (speexdsp's default), the canceller's DC filter cut 110 Hz by 8 dB.
        let n = RATE * 3;
        let voice = low_voice(n, 0);
        let out = cancel(&voice, &vec![0; n]);
        let tail = RATE..n;
        let change = db(power(&out[tail.clone()]), power(&voice[tail]));
        assert!(change > -1.5, "the voice lost {:.1} dB", -change);
    }

    #[test]
    fn a_person_talking_over_the_echo_keeps_their_voice() {
        // Two seconds of playback for the filter to converge, then the person talks over it.
        // What the person added to the output (the run with them minus the run without) must
        // be their voice at nearly full strength, while the echo stays removed.
        let n = RATE * 4;
        let reference = noise(n, 7, 6000);
        let echo = echo_of(&reference);
        let voice = low_voice(n, RATE * 2);
        let mic: Vec<i16> = echo
            .iter()
            .zip(&voice)
            .map(|(e, v)| e.saturating_add(*v))
            .collect();
        let with_person = cancel(&mic, &reference);
        let echo_only = cancel(&echo, &reference);
        let talk = RATE * 2 + RATE / 4..n;
        let added: Vec<i16> = with_person[talk.clone()]
            .iter()
            .zip(&echo_only[talk.clone()])
            .map(|(a, b)| a.saturating_sub(*b))
            .collect();
        let kept = db(power(&added), power(&voice[talk.clone()]));
        assert!(kept > -1.5, "the person's voice lost {:.1} dB", -kept);
        let erle = db(power(&echo[talk.clone()]), power(&echo_only[talk]));
        assert!(erle > 15.0, "echo reduced by only {erle:.1} dB");
    }

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
