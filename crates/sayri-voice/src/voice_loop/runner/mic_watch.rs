//! Watching the live microphone: loss and digital silence are found from the data itself, not
//! from error callbacks (some backends never call them), and each change is said once.
//!
//! * **Lost** — the source reports [`AudioError::DeviceLost`] (no frames for its stall time,
//!   the end of its input, the device gone): the utterance being collected is dropped (a cut
//!   utterance never becomes a query, and a wake word heard before is forgotten), one `mic`
//!   event {`active`: false, `problem`} and one hint say so, and the loop goes on with silence
//!   — replies still play, commands still work — while it tries to open the source again
//!   every 0.5 s, 1 s, 2 s (then every 2 s). When it is back: one `mic` event {`active`: true}.
//! * **Digital silence** — [`DIGITAL_SILENCE_MS`] of exact zeros from a live source (a muted
//!   or suspended source still "delivering"): one `mic` event with the problem; zeros are not
//!   speech, so nothing reaches speech to text. The first real sample after it: `active` again.
//! * **A switch the source made** ([`AudioSource::take_notice`]): a hint and a `mic` event, so
//!   no change of device is silent.

use super::Runner;
use crate::voice_loop::VoiceError;
use sayri_core::domain::voice::{Input, VoiceEvent};
use sayri_core::ports::audio::AudioError;
use std::time::{Duration, Instant};

/// Exact zeros from a live source for this long count as digital silence.
pub const DIGITAL_SILENCE_MS: u64 = 3000;
/// Longest pause between two attempts to get a lost microphone back.
const MAX_RETRY: Duration = Duration::from_secs(2);

/// A live microphone that stopped delivering.
pub(super) struct Lost {
    device: String,
    next_try: Instant,
    wait: Duration,
}

/// Counts exact zeros.
#[derive(Default)]
pub(super) struct ZeroRun {
    samples: u64,
    told: bool,
}

impl Runner {
    /// After the source reported it was lost: says so once and starts waiting for it.
    pub(super) fn mic_lost(&mut self, device: &str, reason: &str) {
        // The machine drops an utterance still being collected (its `DiscardUtterance`); one
        // already being transcribed goes on, with its early transcription.
        let actions = self.machine.handle(Input::MicLost);
        self.apply(actions);
        self.zeros = ZeroRun::default();
        let problem = format!("{reason}; waiting for it to come back");
        tracing::warn!("microphone {device}: {problem}");
        self.emit(VoiceEvent::MicStatus {
            active: false,
            device: device.to_string(),
            problem: Some(problem),
        });
        self.emit(VoiceEvent::Hint(format!(
            "The microphone ({device}) stopped: {reason}. Waiting for it."
        )));
        self.lost = Some(Lost {
            device: device.to_string(),
            next_try: Instant::now() + Duration::from_millis(500),
            wait: Duration::from_millis(500),
        });
    }

    /// While the microphone is lost: one frame of silence in real time, or `Ok(false)` once the
    /// source is back (the caller reads it then).
    pub(super) fn while_lost(&mut self) -> Result<bool, VoiceError> {
        let Some(lost) = self.lost.as_mut() else {
            return Ok(false);
        };
        if Instant::now() >= lost.next_try {
            match self.source.reopen() {
                Ok(()) => {
                    let device = self.source.name();
                    tracing::info!("microphone {device}: back (was {})", lost.device);
                    self.lost = None;
                    self.emit(VoiceEvent::MicStatus {
                        active: true,
                        device: device.clone(),
                        problem: None,
                    });
                    self.emit(VoiceEvent::Hint(format!(
                        "The microphone ({device}) is back."
                    )));
                    self.last_tick = Instant::now();
                    return Ok(false);
                }
                Err(e @ AudioError::Io(_)) => return Err(e.into()),
                Err(_) => {
                    lost.wait = (lost.wait * 2).min(MAX_RETRY);
                    lost.next_try = Instant::now() + lost.wait;
                }
            }
        }
        self.pace();
        Ok(true)
    }

    /// Looks at one frame of a live source: digital silence, and switches the source made.
    pub(super) fn watch_frame(&mut self, frame: &[i16]) {
        if let Some(notice) = self.source.take_notice() {
            tracing::warn!("{notice}");
            self.emit(VoiceEvent::Hint(notice.clone()));
            self.emit(VoiceEvent::MicStatus {
                active: true,
                device: self.source.name(),
                problem: None,
            });
        }
        if !self.source.is_live() {
            return;
        }
        if frame.iter().all(|s| *s == 0) {
            self.zeros.samples += frame.len() as u64;
            let limit = DIGITAL_SILENCE_MS * 16;
            if !self.zeros.told && self.zeros.samples >= limit {
                self.zeros.told = true;
                let device = self.source.name();
                let problem = "it delivers only digital silence (exact zeros): the source is muted or suspended".to_string();
                tracing::warn!("microphone {device}: {problem}");
                self.emit(VoiceEvent::MicStatus {
                    active: false,
                    device,
                    problem: Some(problem),
                });
            }
        } else {
            if self.zeros.told {
                self.emit(VoiceEvent::MicStatus {
                    active: true,
                    device: self.source.name(),
                    problem: None,
                });
            }
            self.zeros = ZeroRun::default();
        }
    }
}
