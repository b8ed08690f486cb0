//! Audio in and out: 16 kHz mono signed 16-bit frames.
//!
//! Every adapter converts to this one format at its edge (a WAV file at 22.05 kHz stereo, a
//! 48 kHz sound card) so that VAD, wake word and speech to text see one shape.

use std::fmt;

/// Samples per second of every frame crossing a port.
pub const SAMPLE_RATE: u32 = 16_000;

/// Samples in one 80 ms frame: the voice loop's tick (openWakeWord's native step).
pub const FRAME_SAMPLES: usize = 1280;

/// Converts a sample count at [`SAMPLE_RATE`] to milliseconds.
pub fn samples_to_ms(samples: u64) -> u64 {
    samples * 1000 / u64::from(SAMPLE_RATE)
}

/// Converts milliseconds to a sample count at [`SAMPLE_RATE`].
pub fn ms_to_samples(ms: u64) -> u64 {
    ms * u64::from(SAMPLE_RATE) / 1000
}

/// Why an audio device or file failed, with what to do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AudioError {
    /// No device of that name (or no device at all).
    #[error(
        "no audio device {device:?} — list devices with `sayri voice status`, or set stt.mic_device to one of them"
    )]
    NoDevice {
        /// The device asked for (`""` = the default device).
        device: String,
    },
    /// The device went away while in use (unplugged, or the sound server restarted).
    #[error("audio device {device:?} disappeared ({reason}); reopening it")]
    DeviceLost {
        /// The device name.
        device: String,
        /// What the audio system reported.
        reason: String,
    },
    /// A file could not be read or written, or has a format that cannot be converted.
    #[error("{0}")]
    Io(String),
}

/// Where the microphone signal comes from: a sound card, a WAV file, a simulated room.
pub trait AudioSource: Send {
    /// Fills `buf` with the next samples, blocking until it is full. Returns how many were
    /// written: fewer than `buf.len()` only at the end of a finite stream, 0 after it.
    /// Errors: [`AudioError::DeviceLost`] when the device vanished (the caller may call
    /// [`AudioSource::reopen`]), [`AudioError::Io`] otherwise.
    fn read(&mut self, buf: &mut [i16]) -> Result<usize, AudioError>;

    /// Tries to open the device again after [`AudioError::DeviceLost`]. A source that cannot
    /// be reopened (a file) returns the error it had.
    fn reopen(&mut self) -> Result<(), AudioError> {
        Err(AudioError::Io(format!(
            "{} cannot be reopened",
            self.name()
        )))
    }

    /// Opens the device when the microphone turns on. Sources that are always open (a file,
    /// a simulation) do nothing; a file that was read to its end starts over. Errors:
    /// [`AudioError::NoDevice`] (with what to do) when the device cannot be opened.
    fn open(&mut self) -> Result<(), AudioError> {
        Ok(())
    }

    /// Releases the device when the microphone turns off, so nothing records while it is off;
    /// [`AudioSource::open`] opens it again. Nothing is read between the two.
    fn close(&mut self) {}

    /// True for a live device (frames arrive in real time), false for a file or simulation that
    /// delivers frames as fast as they are read.
    fn is_live(&self) -> bool;

    /// A short name for logs and status (`"default"`, `"file in.wav"`).
    fn name(&self) -> String;

    /// A change the source made on its own since the last call (it moved capture to another
    /// device, or back to the one named in the settings), in words for the person — so no
    /// switch is ever silent. Most sources never make one.
    fn take_notice(&mut self) -> Option<String> {
        None
    }
}

/// Where speech goes: a sound card, a WAV file, a simulated room.
pub trait AudioSink: Send {
    /// Queues `samples` for playback. A live sink blocks while its queue is full, so the
    /// caller never runs more than a short buffer ahead of the speaker.
    fn write(&mut self, samples: &[i16]) -> Result<(), AudioError>;

    /// Drops every queued sample that has not been played yet, at once (barge-in).
    fn clear(&mut self);

    /// The sink's sample clock: samples written so far, including silence the caller wrote.
    /// Barge-in latency is measured on this clock.
    fn position(&self) -> u64;

    /// A short name for logs and status.
    fn name(&self) -> String;
}

impl fmt::Debug for dyn AudioSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AudioSource({})", self.name())
    }
}

impl fmt::Debug for dyn AudioSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AudioSink({})", self.name())
    }
}
