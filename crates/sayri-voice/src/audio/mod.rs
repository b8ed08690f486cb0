//! Audio adapters: WAV files, the sound card (feature `mic`), level metering, resampling and
//! a simulated room for tests and benchmarks.

#[cfg(feature = "mic")]
pub mod device;
pub mod level;
pub mod pipe;
pub mod resample;
pub mod room;
pub mod wav;

pub use level::{LevelMeter, rms};
pub use pipe::PipeSource;
pub use room::{Room, RoomConfig};
pub use wav::{NullSink, WavSink, WavSource, read_wav_16k, write_wav_16k};
