//! Audio level for the `audio_level` event: RMS of a frame on a 0..1 scale, reported at most
//! every 50 ms of audio (measured on the sample clock, so a file played faster than real time
//! reports as often per second of audio as a microphone).

use sayri_core::ports::audio::ms_to_samples;

/// RMS of `frame` relative to full scale (0..1).
pub fn rms(frame: &[i16]) -> f32 {
    if frame.is_empty() {
        return 0.0;
    }
    let sum: f64 = frame.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    ((sum / frame.len() as f64).sqrt() / 32768.0) as f32
}

/// Mean power of `frame` (linear, full scale = 1).
pub fn power(frame: &[i16]) -> f64 {
    if frame.is_empty() {
        return 0.0;
    }
    frame
        .iter()
        .map(|&s| {
            let x = f64::from(s) / 32768.0;
            x * x
        })
        .sum::<f64>()
        / frame.len() as f64
}

/// Throttles level reports to one per 50 ms of audio.
#[derive(Debug, Clone, Default)]
pub struct LevelMeter {
    last_report: Option<u64>,
}

/// Minimum spacing of level reports, milliseconds of audio.
pub const LEVEL_INTERVAL_MS: u64 = 50;

impl LevelMeter {
    /// A meter that reports the next frame it sees.
    pub fn new() -> LevelMeter {
        LevelMeter::default()
    }

    /// The level to report for `frame` ending at sample position `pos`, or `None` when the
    /// previous report is less than 50 ms of audio ago. Speech levels are small numbers, so
    /// the reported value is `min(1, 2.5·RMS)`.
    pub fn observe(&mut self, frame: &[i16], pos: u64) -> Option<f32> {
        if let Some(last) = self.last_report
            && pos < last + ms_to_samples(LEVEL_INTERVAL_MS)
        {
            return None;
        }
        self.last_report = Some(pos);
        Some((2.5 * rms(frame)).min(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_at_most_every_50_ms_of_audio() {
        let mut m = LevelMeter::new();
        let f = vec![1000i16; 320]; // 20 ms
        let mut reports = 0;
        for i in 1..=50u64 {
            if m.observe(&f, i * 320).is_some() {
                reports += 1;
            }
        }
        // 1 s of audio → at most 20 reports.
        assert!((15..=20).contains(&reports), "{reports}");
    }

    #[test]
    fn rms_of_full_scale_square_is_one() {
        let f: Vec<i16> = (0..100)
            .map(|i| if i % 2 == 0 { 32767 } else { -32767 })
            .collect();
        assert!((rms(&f) - 1.0).abs() < 0.001);
        assert_eq!(rms(&[]), 0.0);
    }
}
