//! Conversion to 16 kHz mono: channel mix-down and band-limited resampling (rubato's FFT
//! resampler), for whole clips and for streams.

use rubato::audioadapter_buffers::SizeError;
use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Resampler, ResamplerConstructionError};
use sayri_core::ports::audio::SAMPLE_RATE;

/// Averages interleaved `channels` into mono.
pub fn to_mono(samples: &[i16], channels: usize) -> Vec<i16> {
    if channels <= 1 {
        return samples.to_vec();
    }
    samples
        .chunks_exact(channels)
        .map(|c| (c.iter().map(|&s| i32::from(s)).sum::<i32>() / channels as i32) as i16)
        .collect()
}

fn to_i16(x: f32) -> i16 {
    (x * 32768.0).round().clamp(-32768.0, 32767.0) as i16
}

/// Why audio cannot be resampled; the setup errors name the unsupported rate.
#[derive(Debug, thiserror::Error)]
pub enum ResampleError {
    /// No resampler from `from` Hz to 16 kHz (a whole clip).
    #[error("cannot resample {from} Hz audio: {source}")]
    Clip {
        /// The clip's rate.
        from: u32,
        /// rubato's reason.
        source: ResamplerConstructionError,
    },
    /// No resampler from `from` Hz to `to` Hz (a stream).
    #[error("cannot resample {from} Hz audio to {to} Hz: {source}")]
    Stream {
        /// The input rate.
        from: u32,
        /// The output rate.
        to: u32,
        /// rubato's reason.
        source: ResamplerConstructionError,
    },
    /// The samples do not fit the resampler's buffer.
    #[error(transparent)]
    Buffer(#[from] SizeError),
    /// The resampler failed on the samples.
    #[error("resampling failed: {0}")]
    Process(rubato::ResampleError),
}

/// Resamples a whole mono clip from `rate` to 16 kHz.
///
/// # Errors
/// [`ResampleError`], naming the unsupported rate.
pub fn to_16k(samples: &[i16], rate: u32) -> Result<Vec<i16>, ResampleError> {
    if rate == SAMPLE_RATE || samples.is_empty() {
        return Ok(samples.to_vec());
    }
    let input: Vec<f32> = samples.iter().map(|&s| f32::from(s) / 32768.0).collect();
    let mut r = Fft::<f32>::new(
        rate as usize,
        SAMPLE_RATE as usize,
        1024,
        1,
        FixedSync::Input,
    )
    .map_err(|source| ResampleError::Clip { from: rate, source })?;
    let adapter = InterleavedSlice::new(&input, 1, input.len())?;
    let out = r
        .process_all(&adapter, input.len(), None)
        .map_err(ResampleError::Process)?;
    Ok(out.take_data().into_iter().map(to_i16).collect())
}

/// Resamples a mono stream chunk by chunk, keeping filter state between chunks.
pub struct StreamResampler {
    inner: Option<Fft<f32>>,
    pending: Vec<f32>,
    skip: usize,
}

impl StreamResampler {
    /// A resampler from `rate` Hz to 16 kHz (a pass-through at 16 kHz).
    ///
    /// # Errors
    /// [`ResampleError::Stream`]: the rate is not supported.
    pub fn new(rate: u32) -> Result<StreamResampler, ResampleError> {
        StreamResampler::between(rate, SAMPLE_RATE)
    }

    /// A resampler from `from` Hz to `to` Hz.
    ///
    /// # Errors
    /// [`ResampleError::Stream`]: the rates are not supported.
    pub fn between(from: u32, to: u32) -> Result<StreamResampler, ResampleError> {
        let inner = if from == to {
            None
        } else {
            Some(
                Fft::<f32>::new(from as usize, to as usize, 1024, 1, FixedSync::Input)
                    .map_err(|source| ResampleError::Stream { from, to, source })?,
            )
        };
        let skip = inner.as_ref().map_or(0, |r| r.output_delay());
        Ok(StreamResampler {
            inner,
            pending: Vec::new(),
            skip,
        })
    }

    /// Adds samples; returns the 16 kHz samples ready so far.
    pub fn push(&mut self, samples: &[i16]) -> Vec<i16> {
        let Some(r) = self.inner.as_mut() else {
            return samples.to_vec();
        };
        self.pending
            .extend(samples.iter().map(|&s| f32::from(s) / 32768.0));
        let mut out = Vec::new();
        loop {
            let need = r.input_frames_next();
            if self.pending.len() < need {
                break;
            }
            let chunk: Vec<f32> = self.pending.drain(..need).collect();
            let Ok(adapter) = InterleavedSlice::new(&chunk, 1, need) else {
                break;
            };
            match r.process(&adapter, None) {
                Ok(res) => out.extend(res.take_data().into_iter().map(to_i16)),
                Err(_) => break,
            }
        }
        let drop = self.skip.min(out.len());
        self.skip -= drop;
        out.drain(..drop);
        out
    }

    /// Flushes what is buffered (padding with silence) at the end of the stream.
    pub fn finish(&mut self) -> Vec<i16> {
        let Some((ratio, next, delay)) = self
            .inner
            .as_ref()
            .map(|r| (r.resample_ratio(), r.input_frames_next(), r.output_delay()))
        else {
            return Vec::new();
        };
        if self.pending.is_empty() {
            return Vec::new();
        }
        let real = self.pending.len();
        let pad = next.saturating_sub(real) + next;
        let mut tail = self.push(&vec![0; pad]);
        let keep = (real as f64 * ratio).ceil() as usize + delay;
        tail.truncate(keep.min(tail.len()));
        self.pending.clear();
        tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(rate: u32, secs: f32) -> Vec<i16> {
        (0..(rate as f32 * secs) as usize)
            .map(|i| {
                ((i as f32 * 440.0 * std::f32::consts::TAU / rate as f32).sin() * 8000.0) as i16
            })
            .collect()
    }

    #[test]
    fn whole_clip_keeps_its_duration() {
        let out = to_16k(&tone(22_050, 1.0), 22_050).unwrap();
        assert!((out.len() as i64 - 16_000).abs() < 40, "{}", out.len());
    }

    #[test]
    fn stream_matches_the_clip_length() {
        let input = tone(22_050, 2.0);
        let mut r = StreamResampler::new(22_050).unwrap();
        let mut out = Vec::new();
        for c in input.chunks(777) {
            out.extend(r.push(c));
        }
        out.extend(r.finish());
        assert!((out.len() as i64 - 32_000).abs() < 1200, "{}", out.len());
        let peak = out.iter().map(|s| s.unsigned_abs()).max().unwrap();
        assert!(peak > 7000, "tone survives: {peak}");
    }

    #[test]
    fn stereo_is_mixed_down() {
        assert_eq!(to_mono(&[100, 300, -100, -300], 2), vec![200, -200]);
    }
}
