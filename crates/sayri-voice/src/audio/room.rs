//! A simulated room for tests and benchmarks: the microphone hears the person (scheduled
//! clips), background sound (a fan), sensor noise, and the speaker's own output coming back
//! after an acoustic delay at some gain — the speaker-to-microphone path of a laptop.
//!
//! The room runs on one sample clock shared by [`RoomMic`] and [`RoomSpeaker`]: the voice
//! loop writes one frame to the speaker and then reads one frame from the microphone, like a
//! full-duplex sound card. Nothing here sleeps; a whole conversation runs as fast as the
//! models allow, and every timing is measured in samples.

use sayri_core::ports::audio::{AudioError, AudioSink, AudioSource, ms_to_samples};
use sayri_core::sync::lock;
use std::sync::{Arc, Mutex, MutexGuard};

/// The acoustic path.
#[derive(Debug, Clone, PartialEq)]
pub struct RoomConfig {
    /// Speaker-to-microphone delay, milliseconds.
    pub echo_delay_ms: u32,
    /// Gain of the speaker's sound at the microphone, dB (−12 = a laptop; 0 = loud speaker
    /// next to the mic). `None`: no echo at all.
    pub echo_gain_db: Option<f32>,
    /// White sensor noise, dBFS RMS; `None` for none.
    pub noise_dbfs: Option<f32>,
}

impl Default for RoomConfig {
    fn default() -> Self {
        RoomConfig {
            echo_delay_ms: 40,
            echo_gain_db: Some(-12.0),
            noise_dbfs: Some(-50.0),
        }
    }
}

struct Cue {
    after_playback: u64,
    clip: Vec<i16>,
}

struct State {
    cfg: RoomConfig,
    near: Vec<f32>,
    played: Vec<i16>,
    mic_pos: usize,
    length: usize,
    first_voiced: Option<usize>,
    last_voiced: usize,
    cues: Vec<Cue>,
    rng: u32,
}

/// The room. Clones share it.
#[derive(Clone)]
pub struct Room {
    inner: Arc<Mutex<State>>,
}

fn db_to_gain(db: f32) -> f32 {
    10f32.powf(db / 20.0)
}

impl Room {
    /// An empty, silent room.
    pub fn new(cfg: RoomConfig) -> Room {
        Room {
            inner: Arc::new(Mutex::new(State {
                cfg,
                near: Vec::new(),
                played: Vec::new(),
                mic_pos: 0,
                length: 0,
                first_voiced: None,
                last_voiced: 0,
                cues: Vec::new(),
                rng: 0x2545_f491,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.inner)
    }

    /// The person says `clip` (16 kHz mono) starting `at_ms` into the session.
    pub fn say_at(&self, at_ms: u64, clip: &[i16]) {
        let mut s = self.lock();
        let at = ms_to_samples(at_ms) as usize;
        s.mix(at, clip, 1.0);
    }

    /// Background sound (a fan) from `at_ms` on, mixed at its own level.
    pub fn background(&self, at_ms: u64, track: &[i16]) {
        self.say_at(at_ms, track);
    }

    /// The person says `clip` once the speaker has been playing for `after_ms` (counted from
    /// the first audible sample it played), talking over the assistant.
    pub fn say_during_playback(&self, after_ms: u64, clip: &[i16]) {
        self.lock().cues.push(Cue {
            after_playback: ms_to_samples(after_ms),
            clip: clip.to_vec(),
        });
    }

    /// The microphone delivers at least `ms` of audio before it ends. It also runs until the
    /// last scheduled clip ended, until 1 s after the speaker last played something audible,
    /// and while a cue waits for playback.
    pub fn set_length_ms(&self, ms: u64) {
        self.lock().length = ms_to_samples(ms) as usize;
    }

    /// Everything the speaker played, from sample 0.
    pub fn played(&self) -> Vec<i16> {
        self.lock().played.clone()
    }

    /// The microphone's audio source.
    pub fn microphone(&self) -> RoomMic {
        RoomMic { room: self.clone() }
    }

    /// The speaker's audio sink.
    pub fn speaker(&self) -> RoomSpeaker {
        RoomSpeaker { room: self.clone() }
    }
}

impl State {
    fn mix(&mut self, at: usize, clip: &[i16], gain: f32) {
        if self.near.len() < at + clip.len() {
            self.near.resize(at + clip.len(), 0.0);
        }
        for (i, &s) in clip.iter().enumerate() {
            self.near[at + i] += f32::from(s) * gain;
        }
    }

    fn noise(&mut self) -> f32 {
        // Sum of four uniforms: close enough to Gaussian, unit variance.
        let mut acc = 0.0;
        for _ in 0..4 {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 17;
            self.rng ^= self.rng << 5;
            acc += (self.rng as f32 / u32::MAX as f32) - 0.5;
        }
        acc * 1.732
    }

    fn fire_cues(&mut self) {
        let Some(first) = self.first_voiced else {
            return;
        };
        let now = self.played.len();
        let mut due = Vec::new();
        self.cues.retain(|c| {
            let at = first + c.after_playback as usize;
            if at <= now {
                due.push((at, c.clip.clone()));
                false
            } else {
                true
            }
        });
        for (at, clip) in due {
            let at = at.max(self.mic_pos);
            self.mix(at, &clip, 1.0);
        }
    }
}

/// The room's microphone.
pub struct RoomMic {
    room: Room,
}

impl AudioSource for RoomMic {
    fn read(&mut self, buf: &mut [i16]) -> Result<usize, AudioError> {
        let mut s = self.room.lock();
        let echo_tail =
            s.last_voiced + ms_to_samples(u64::from(s.cfg.echo_delay_ms) + 1000) as usize;
        // A cue still waiting for playback keeps the room open, for at most 30 s more.
        let waiting = if s.cues.is_empty() {
            0
        } else {
            s.length + ms_to_samples(30_000) as usize
        };
        let end = s.length.max(s.near.len()).max(echo_tail).max(waiting);
        let n = buf.len().min(end.saturating_sub(s.mic_pos));
        let delay = ms_to_samples(u64::from(s.cfg.echo_delay_ms)) as usize;
        let echo = s.cfg.echo_gain_db.map(db_to_gain);
        let noise = s.cfg.noise_dbfs.map(|db| db_to_gain(db) * 32768.0);
        for (i, out) in buf.iter_mut().take(n).enumerate() {
            let t = s.mic_pos + i;
            let mut v = s.near.get(t).copied().unwrap_or(0.0);
            if let Some(g) = echo
                && t >= delay
            {
                v += g * s.played.get(t - delay).copied().map_or(0.0, f32::from);
            }
            if let Some(a) = noise {
                v += a * s.noise();
            }
            *out = v.round().clamp(-32768.0, 32767.0) as i16;
        }
        s.mic_pos += n;
        Ok(n)
    }

    fn is_live(&self) -> bool {
        false
    }

    fn name(&self) -> String {
        "simulated room microphone".into()
    }
}

/// The room's speaker.
pub struct RoomSpeaker {
    room: Room,
}

impl AudioSink for RoomSpeaker {
    fn write(&mut self, samples: &[i16]) -> Result<(), AudioError> {
        let mut s = self.room.lock();
        if s.first_voiced.is_none()
            && let Some(i) = samples.iter().position(|x| x.unsigned_abs() > 300)
        {
            s.first_voiced = Some(s.played.len() + i);
        }
        if let Some(i) = samples.iter().rposition(|x| x.unsigned_abs() > 300) {
            s.last_voiced = s.played.len() + i;
        }
        s.played.extend_from_slice(samples);
        s.fire_cues();
        Ok(())
    }

    fn clear(&mut self) {}

    fn position(&self) -> u64 {
        self.room.lock().played.len() as u64
    }

    fn name(&self) -> String {
        "simulated room speaker".into()
    }
}

/// Fan-like noise: low-passed (brown-ish) noise with a blade hum at 50 Hz and its
/// harmonics, at `dbfs` RMS, `ms` long.
pub fn fan_noise(ms: u64, dbfs: f32, seed: u32) -> Vec<i16> {
    let n = ms_to_samples(ms) as usize;
    let mut rng = seed.max(1);
    let mut lp = 0.0f32;
    let raw: Vec<f32> = (0..n)
        .map(|t| {
            rng ^= rng << 13;
            rng ^= rng >> 17;
            rng ^= rng << 5;
            let white = (rng as f32 / u32::MAX as f32) - 0.5;
            lp = 0.97 * lp + 0.03 * white;
            let ph = t as f32 / 16_000.0 * std::f32::consts::TAU;
            lp * 8.0
                + 0.05 * (50.0 * ph).sin()
                + 0.03 * (100.0 * ph).sin()
                + 0.02 * (150.0 * ph).sin()
        })
        .collect();
    let rms = (raw.iter().map(|x| x * x).sum::<f32>() / n.max(1) as f32).sqrt();
    let target = db_to_gain(dbfs) * 32768.0;
    raw.iter()
        .map(|x| (x / rms.max(1e-9) * target).clamp(-32768.0, 32767.0) as i16)
        .collect()
}

/// Scales a clip by `db` decibels.
pub fn gain(clip: &[i16], db: f32) -> Vec<i16> {
    let g = db_to_gain(db);
    clip.iter()
        .map(|&s| (f32::from(s) * g).round().clamp(-32768.0, 32767.0) as i16)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audio::level::rms;

    #[test]
    fn microphone_hears_the_speaker_delayed_and_attenuated() {
        let room = Room::new(RoomConfig {
            echo_delay_ms: 40,
            echo_gain_db: Some(-12.0),
            noise_dbfs: None,
        });
        room.set_length_ms(200);
        let mut spk = room.speaker();
        let mut mic = room.microphone();
        spk.write(&[10_000; 1600]).unwrap(); // 100 ms
        let mut buf = [0i16; 1600];
        assert_eq!(mic.read(&mut buf).unwrap(), 1600);
        assert_eq!(buf[639], 0, "nothing before 40 ms");
        assert!((i32::from(buf[640]) - 2512).abs() <= 1, "{}", buf[640]);
    }

    #[test]
    fn cue_fires_after_playback_time() {
        let room = Room::new(RoomConfig {
            echo_gain_db: None,
            noise_dbfs: None,
            ..RoomConfig::default()
        });
        room.say_during_playback(100, &[5000; 160]);
        room.set_length_ms(1000);
        let mut spk = room.speaker();
        let mut mic = room.microphone();
        let mut buf = [0i16; 1280];
        spk.write(&[0; 1280]).unwrap();
        mic.read(&mut buf).unwrap();
        spk.write(&[2000; 1280]).unwrap(); // playback starts at 1280
        mic.read(&mut buf).unwrap();
        spk.write(&[2000; 1280]).unwrap(); // 100 ms after 1280 = 2880 ≤ 3840
        mic.read(&mut buf).unwrap();
        assert_eq!(buf[2880 - 2560], 5000);
        assert_eq!(buf[2880 - 2560 - 1], 0);
    }

    #[test]
    fn fan_noise_has_the_asked_level() {
        let f = fan_noise(1000, -30.0, 7);
        let level = rms(&f);
        assert!((level - 0.0316).abs() < 0.003, "{level}");
    }
}
