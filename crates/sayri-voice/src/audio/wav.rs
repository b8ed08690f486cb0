//! WAV files as audio source and sink (`sayri listen --file`, `sayri say --to-file`, tests).
//! The source converts any PCM WAV (8/16/24/32-bit integer or float, any rate, any channels)
//! to 16 kHz mono; the sink writes 16 kHz mono 16-bit.

use super::resample::{to_16k, to_mono};
use sayri_core::ports::audio::{AudioError, AudioSink, AudioSource, SAMPLE_RATE};
use std::path::{Path, PathBuf};

/// Reads a whole WAV file as 16 kHz mono. Errors say what is wrong with the file.
pub fn read_wav_16k(path: &Path) -> Result<Vec<i16>, AudioError> {
    let bad = |e: String| AudioError::Io(format!("{}: {e}", path.display()));
    let mut r = hound::WavReader::open(path).map_err(|e| bad(e.to_string()))?;
    let spec = r.spec();
    let interleaved: Vec<i16> = match (spec.sample_format, spec.bits_per_sample) {
        (hound::SampleFormat::Int, 16) => r
            .samples::<i16>()
            .collect::<Result<_, _>>()
            .map_err(|e| bad(e.to_string()))?,
        (hound::SampleFormat::Int, bits) if bits <= 32 => {
            let shift = i32::from(bits) - 16;
            r.samples::<i32>()
                .map(|s| {
                    s.map(|v| {
                        if shift >= 0 {
                            (v >> shift) as i16
                        } else {
                            (v << -shift) as i16
                        }
                    })
                })
                .collect::<Result<_, _>>()
                .map_err(|e| bad(e.to_string()))?
        }
        (hound::SampleFormat::Float, 32) => r
            .samples::<f32>()
            .map(|s| s.map(|v| (v * 32767.0).clamp(-32768.0, 32767.0) as i16))
            .collect::<Result<_, _>>()
            .map_err(|e| bad(e.to_string()))?,
        (fmt, bits) => return Err(bad(format!("unsupported WAV format {fmt:?} {bits}-bit"))),
    };
    let mono = to_mono(&interleaved, usize::from(spec.channels));
    to_16k(&mono, spec.sample_rate).map_err(|e| bad(e.to_string()))
}

/// Writes 16 kHz mono 16-bit samples to a WAV file.
pub fn write_wav_16k(path: &Path, samples: &[i16]) -> Result<(), AudioError> {
    let mut w = WavSink::create(path)?;
    w.write(samples)?;
    w.finish()
}

/// A WAV file as microphone: delivers its audio as fast as it is read (or, made
/// [`WavSource::realtime`], at the pace a sound card would), then ends.
pub struct WavSource {
    name: String,
    samples: Vec<i16>,
    pos: usize,
    /// Real-time pacing: when the current pass started and at which sample.
    pace: Option<(std::time::Instant, usize)>,
    realtime: bool,
}

impl WavSource {
    /// Opens and converts `path`.
    pub fn open(path: &Path) -> Result<WavSource, AudioError> {
        Ok(WavSource {
            name: format!("file {}", path.display()),
            samples: read_wav_16k(path)?,
            pos: 0,
            pace: None,
            realtime: false,
        })
    }

    /// The same file delivered in real time, 16 000 samples per second of wall time from
    /// when reading starts (each `read` blocks until its samples are "recorded"), and reported
    /// as a live source: the voice loop then runs as it does on a sound card, its workers
    /// racing the audio instead of the audio waiting for them.
    pub fn realtime(mut self) -> WavSource {
        self.realtime = true;
        self.name = format!("{} (real time)", self.name);
        self
    }

    /// A source over samples already in memory (16 kHz mono).
    pub fn from_samples(name: &str, samples: Vec<i16>) -> WavSource {
        WavSource {
            name: name.to_string(),
            samples,
            pos: 0,
            pace: None,
            realtime: false,
        }
    }
}

impl AudioSource for WavSource {
    fn read(&mut self, buf: &mut [i16]) -> Result<usize, AudioError> {
        let n = buf.len().min(self.samples.len() - self.pos);
        if self.realtime && n > 0 {
            let (started, from) = *self
                .pace
                .get_or_insert((std::time::Instant::now(), self.pos));
            let due = (self.pos + n - from) as f64 / 16_000.0;
            let due = started + std::time::Duration::from_secs_f64(due);
            let now = std::time::Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        buf[..n].copy_from_slice(&self.samples[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }

    /// Resumes where reading stopped; a file read to its end starts over.
    fn open(&mut self) -> Result<(), AudioError> {
        if self.pos >= self.samples.len() {
            self.pos = 0;
        }
        self.pace = None;
        Ok(())
    }

    fn is_live(&self) -> bool {
        self.realtime
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}

/// A speaker that plays nothing: samples written are counted and dropped (a one-shot capture
/// from a file has nothing to play).
#[derive(Debug, Clone, Default)]
pub struct NullSink {
    position: u64,
}

impl AudioSink for NullSink {
    fn write(&mut self, samples: &[i16]) -> Result<(), AudioError> {
        self.position += samples.len() as u64;
        Ok(())
    }

    fn clear(&mut self) {}

    fn position(&self) -> u64 {
        self.position
    }

    fn name(&self) -> String {
        "nowhere".into()
    }
}

/// A WAV file as speaker: every sample written is "played" at once.
pub struct WavSink {
    path: PathBuf,
    writer: Option<hound::WavWriter<std::io::BufWriter<std::fs::File>>>,
    position: u64,
}

impl WavSink {
    /// Creates (truncates) `path`.
    pub fn create(path: &Path) -> Result<WavSink, AudioError> {
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: SAMPLE_RATE,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let writer = hound::WavWriter::create(path, spec)
            .map_err(|e| AudioError::Io(format!("{}: {e}", path.display())))?;
        Ok(WavSink {
            path: path.to_path_buf(),
            writer: Some(writer),
            position: 0,
        })
    }

    /// Writes the header sizes and closes the file.
    pub fn finish(&mut self) -> Result<(), AudioError> {
        if let Some(w) = self.writer.take() {
            w.finalize()
                .map_err(|e| AudioError::Io(format!("{}: {e}", self.path.display())))?;
        }
        Ok(())
    }
}

impl AudioSink for WavSink {
    fn write(&mut self, samples: &[i16]) -> Result<(), AudioError> {
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| AudioError::Io(format!("{} is closed", self.path.display())))?;
        for &s in samples {
            w.write_sample(s)
                .map_err(|e| AudioError::Io(format!("{}: {e}", self.path.display())))?;
        }
        self.position += samples.len() as u64;
        Ok(())
    }

    fn clear(&mut self) {}

    fn position(&self) -> u64 {
        self.position
    }

    fn name(&self) -> String {
        format!("file {}", self.path.display())
    }
}

impl Drop for WavSink {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_realtime_file_is_live_and_never_delivers_ahead_of_the_clock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.wav");
        let samples: Vec<i16> = (0..8000).map(|i| (i % 200) as i16).collect();
        write_wav_16k(&path, &samples).unwrap();
        let mut fast = WavSource::open(&path).unwrap();
        assert!(!fast.is_live());
        let mut live = WavSource::open(&path).unwrap().realtime();
        assert!(live.is_live());
        let started = std::time::Instant::now();
        let mut got = Vec::new();
        let mut buf = [0i16; 1280];
        loop {
            let n = live.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        // 8000 samples are half a second of audio: a real-time source cannot be quicker.
        assert!(started.elapsed() >= std::time::Duration::from_millis(500));
        assert_eq!(got, samples, "the same samples as the file");
        let n = fast.read(&mut buf).unwrap();
        assert_eq!(&buf[..n], &samples[..n]);
    }
}
