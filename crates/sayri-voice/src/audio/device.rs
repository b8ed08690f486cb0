//! The sound card through cpal (ALSA; PipeWire and PulseAudio serve ALSA clients too).
//!
//! Each stream lives on its own thread (cpal streams are not `Send` on every platform) and
//! talks to the voice loop through a channel (microphone) or a shared queue (speaker). The
//! microphone's channel keeps up to a minute of audio for a loop that fell behind (a busy CPU
//! delays the person's words, it does not lose them); beyond that, audio is dropped and logged. A
//! device that disappears is reported as [`AudioError::DeviceLost`]; [`DeviceSource::reopen`]
//! opens it again, falling back to the default device when the named one is gone.

use super::resample::StreamResampler;
use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use sayri_core::ports::audio::{AudioError, AudioSink, AudioSource, SAMPLE_RATE};
use sayri_core::sync::lock;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, SyncSender, channel, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Names of the input devices, default first.
pub fn input_devices() -> Vec<String> {
    device_names(true)
}

/// Names of the output devices, default first.
pub fn output_devices() -> Vec<String> {
    device_names(false)
}

fn device_names(input: bool) -> Vec<String> {
    let host = cpal::default_host();
    let (all, default) = if input {
        (
            host.input_devices()
                .map(|d| d.map(|d| d.to_string()).collect::<Vec<_>>()),
            host.default_input_device(),
        )
    } else {
        (
            host.output_devices()
                .map(|d| d.map(|d| d.to_string()).collect::<Vec<_>>()),
            host.default_output_device(),
        )
    };
    let mut names = all.unwrap_or_default();
    if let Some(def) = default.map(|d| d.to_string()) {
        names.retain(|n| *n != def);
        names.insert(0, def);
    }
    names
}

/// Reports how opening went, then keeps the stream alive on this thread until `stop`.
fn keep_alive(
    opened: Result<(cpal::Stream, String, u32), AudioError>,
    ready: SyncSender<Result<(String, u32), AudioError>>,
    stop: Arc<AtomicBool>,
) {
    match opened {
        Ok((stream, label, rate)) => {
            let _ = ready.send(Ok((label, rate)));
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
            }
            drop(stream);
        }
        Err(e) => {
            let _ = ready.send(Err(e));
        }
    }
}

fn find_device(name: &str, input: bool) -> Result<cpal::Device, AudioError> {
    let host = cpal::default_host();
    let none = || AudioError::NoDevice {
        device: name.to_string(),
    };
    if name.is_empty() || name == "default" {
        let d = if input {
            host.default_input_device()
        } else {
            host.default_output_device()
        };
        return d.ok_or_else(none);
    }
    let devices = if input {
        host.input_devices()
            .map_err(|_| none())?
            .collect::<Vec<_>>()
    } else {
        host.output_devices()
            .map_err(|_| none())?
            .collect::<Vec<_>>()
    };
    let wanted = name.to_lowercase();
    devices
        .into_iter()
        .find(|d| d.to_string().to_lowercase().contains(&wanted))
        .ok_or_else(none)
}

enum MicMsg {
    Audio(Vec<f32>),
    Lost(String),
}

/// Longest backlog of microphone audio kept for a voice loop that fell behind, seconds. Up to
/// this, a busy CPU only delays what the person said; it never drops it.
const MIC_BACKLOG_SECS: usize = 60;

/// The capture callback's end of the microphone queue: an unbounded channel, with the audio
/// waiting in it counted so that only a backlog beyond its cap is dropped (and counted).
#[derive(Clone)]
struct Capture {
    tx: Sender<MicMsg>,
    backlog: Arc<Backlog>,
}

/// Audio waiting between the capture callback and the voice loop.
struct Backlog {
    /// Samples (native rate, mono) sent and not read yet.
    queued: AtomicUsize,
    /// Samples dropped because the backlog was full.
    dropped: AtomicU64,
    /// Most samples kept waiting.
    cap: usize,
}

impl Capture {
    /// Hands one callback's audio to the loop; drops it only when the backlog is full.
    fn deliver(&self, mono: Vec<f32>) {
        let n = mono.len();
        let b = &self.backlog;
        if b.queued.load(Ordering::Relaxed) + n > b.cap {
            b.dropped.fetch_add(n as u64, Ordering::Relaxed);
            return;
        }
        b.queued.fetch_add(n, Ordering::Relaxed);
        if self.tx.send(MicMsg::Audio(mono)).is_err() {
            b.queued.fetch_sub(n, Ordering::Relaxed);
        }
    }

    fn lost(&self, reason: String) {
        let _ = self.tx.send(MicMsg::Lost(reason));
    }
}

/// A microphone queue for audio at `rate` Hz: the callback's end and the loop's end.
fn mic_queue(rate: u32, cap_secs: usize) -> (Capture, Receiver<MicMsg>, Arc<Backlog>) {
    let (tx, rx) = channel();
    let backlog = Arc::new(Backlog {
        queued: AtomicUsize::new(0),
        dropped: AtomicU64::new(0),
        cap: rate as usize * cap_secs,
    });
    let capture = Capture {
        tx,
        backlog: backlog.clone(),
    };
    (capture, rx, backlog)
}

/// A microphone. The device is held only while it is open: [`AudioSource::close`] releases it
/// (nothing records) and [`AudioSource::open`] opens it again. When the named device is gone,
/// [`AudioSource::reopen`] listens on the default input meanwhile, looks for the named one
/// every [`RETURN_CHECK`], and goes back to it when it returns — each switch said through
/// [`AudioSource::take_notice`].
pub struct DeviceSource {
    wanted: String,
    stream: Option<MicStream>,
    /// Capture runs on the default input because the named device is gone; when it was last
    /// looked for.
    fallback: Option<std::time::Instant>,
    notice: Option<String>,
}

/// How often a microphone on the fallback looks for the named device.
pub const RETURN_CHECK: Duration = Duration::from_secs(3);

/// An open input stream.
struct MicStream {
    device: String,
    rate: u32,
    rx: Receiver<MicMsg>,
    backlog: Arc<Backlog>,
    reported_drops: u64,
    stop: Arc<AtomicBool>,
    resampler: StreamResampler,
    pending: VecDeque<i16>,
}

impl Drop for MicStream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl DeviceSource {
    /// Opens input device `name` (a case-insensitive part of its name; `""` = default) at its
    /// native format, converted to 16 kHz mono.
    pub fn open(name: &str) -> Result<DeviceSource, AudioError> {
        let mut s = DeviceSource::closed(name);
        s.stream = Some(MicStream::open(name)?);
        Ok(s)
    }

    /// Input device `name`, not opened yet: [`AudioSource::open`] opens it.
    pub fn closed(name: &str) -> DeviceSource {
        DeviceSource {
            wanted: name.to_string(),
            stream: None,
            fallback: None,
            notice: None,
        }
    }
}

impl MicStream {
    fn open(name: &str) -> Result<MicStream, AudioError> {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = sync_channel::<Result<(String, u32), AudioError>>(1);
        let (queue_tx, queue_rx) = sync_channel(1);
        let wanted = name.to_string();
        let stop2 = stop.clone();
        std::thread::Builder::new()
            .name("sayri-mic".into())
            .spawn(move || run_input(&wanted, queue_tx, ready_tx, stop2))
            .map_err(|e| AudioError::Io(e.to_string()))?;
        let (device, rate) = ready_rx
            .recv()
            .map_err(|_| AudioError::Io("microphone thread ended".into()))??;
        let (rx, backlog) = queue_rx
            .recv()
            .map_err(|_| AudioError::Io("microphone thread ended".into()))?;
        MicStream::new(device, rate, rx, backlog, stop)
    }

    fn new(
        device: String,
        rate: u32,
        rx: Receiver<MicMsg>,
        backlog: Arc<Backlog>,
        stop: Arc<AtomicBool>,
    ) -> Result<MicStream, AudioError> {
        Ok(MicStream {
            device,
            rate,
            rx,
            backlog,
            reported_drops: 0,
            stop,
            resampler: StreamResampler::new(rate).map_err(|e| AudioError::Io(e.to_string()))?,
            pending: VecDeque::new(),
        })
    }

    /// Logs audio dropped since the last report (the loop fell more than
    /// [`MIC_BACKLOG_SECS`] behind the microphone).
    fn report_drops(&mut self) {
        let dropped = self.backlog.dropped.load(Ordering::Relaxed);
        if dropped > self.reported_drops {
            let secs = (dropped - self.reported_drops) as f64 / f64::from(self.rate.max(1));
            tracing::warn!(
                "the voice loop fell {MIC_BACKLOG_SECS} s behind microphone {}: {secs:.1} s of \
                 audio were dropped (the CPU is too busy for the voice models; try a smaller \
                 speech-to-text model)",
                self.device
            );
            self.reported_drops = dropped;
        }
    }

    fn read(&mut self, buf: &mut [i16]) -> Result<usize, AudioError> {
        while self.pending.len() < buf.len() {
            let lost = |reason: String| AudioError::DeviceLost {
                device: self.device.clone(),
                reason,
            };
            match self.rx.recv_timeout(Duration::from_secs(2)) {
                Ok(MicMsg::Audio(mono)) => {
                    self.backlog.queued.fetch_sub(mono.len(), Ordering::Relaxed);
                    let s: Vec<i16> = mono
                        .iter()
                        .map(|x| (x * 32768.0).clamp(-32768.0, 32767.0) as i16)
                        .collect();
                    self.pending.extend(self.resampler.push(&s));
                }
                Ok(MicMsg::Lost(reason)) => return Err(lost(reason)),
                Err(RecvTimeoutError::Timeout) => return Err(lost("no audio for 2 s".into())),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(lost("the stream closed".into()));
                }
            }
        }
        self.report_drops();
        for b in buf.iter_mut() {
            *b = self.pending.pop_front().unwrap_or(0);
        }
        Ok(buf.len())
    }
}

/// The loop's end of a microphone queue, handed over once the device's rate is known.
type QueueEnd = (Receiver<MicMsg>, Arc<Backlog>);

fn run_input(
    name: &str,
    queue: SyncSender<QueueEnd>,
    ready: SyncSender<Result<(String, u32), AudioError>>,
    stop: Arc<AtomicBool>,
) {
    let opened = (|| {
        let device = find_device(name, true)?;
        let label = device.to_string();
        let cfg = device
            .default_input_config()
            .map_err(|e| AudioError::NoDevice {
                device: format!("{label} ({e})"),
            })?;
        let channels = usize::from(cfg.channels()).max(1);
        let rate = cfg.sample_rate();
        let (capture, rx, backlog) = mic_queue(rate, MIC_BACKLOG_SECS);
        let _ = queue.send((rx, backlog));
        let data_tx = capture.clone();
        let on_error = move |e: cpal::Error| capture.lost(e.to_string());
        let stream = match cfg.sample_format() {
            cpal::SampleFormat::I16 => device.build_input_stream(
                cfg.config(),
                move |data: &[i16], _: &cpal::InputCallbackInfo| {
                    let mono = data
                        .chunks(channels)
                        .map(|c| {
                            c.iter().map(|&s| f32::from(s) / 32768.0).sum::<f32>() / channels as f32
                        })
                        .collect();
                    data_tx.deliver(mono);
                },
                on_error,
                None,
            ),
            _ => device.build_input_stream(
                cfg.config(),
                move |data: &[f32], _: &cpal::InputCallbackInfo| {
                    let mono = data
                        .chunks(channels)
                        .map(|c| c.iter().sum::<f32>() / channels as f32)
                        .collect();
                    data_tx.deliver(mono);
                },
                on_error,
                None,
            ),
        }
        .map_err(|e| AudioError::NoDevice {
            device: format!("{label} ({e})"),
        })?;
        stream.play().map_err(|e| AudioError::NoDevice {
            device: format!("{label} ({e})"),
        })?;
        Ok((stream, label, rate))
    })();
    keep_alive(opened, ready, stop);
}

impl DeviceSource {
    /// On the fallback: goes back to the named device once it is there again.
    fn maybe_return(&mut self) {
        let Some(checked) = self.fallback else {
            return;
        };
        if checked.elapsed() < RETURN_CHECK {
            return;
        }
        self.fallback = Some(std::time::Instant::now());
        if find_device(&self.wanted, true).is_err() {
            return;
        }
        if let Ok(s) = MicStream::open(&self.wanted) {
            self.notice = Some(format!(
                "The microphone {} is back; listening on it again.",
                s.device
            ));
            self.stream = Some(s);
            self.fallback = None;
        }
    }
}

impl AudioSource for DeviceSource {
    fn read(&mut self, buf: &mut [i16]) -> Result<usize, AudioError> {
        self.maybe_return();
        match self.stream.as_mut() {
            Some(s) => s.read(buf),
            None => Err(AudioError::Io(format!(
                "the microphone {} is closed",
                self.name()
            ))),
        }
    }

    fn open(&mut self) -> Result<(), AudioError> {
        if self.stream.is_none() {
            self.stream = Some(MicStream::open(&self.wanted)?);
        }
        Ok(())
    }

    fn close(&mut self) {
        self.stream = None;
    }

    fn reopen(&mut self) -> Result<(), AudioError> {
        self.stream = None;
        let fresh = match MicStream::open(&self.wanted) {
            Ok(s) => {
                self.fallback = None;
                s
            }
            Err(e) if self.wanted.is_empty() => return Err(e),
            Err(_) => {
                let s = MicStream::open("")?;
                self.notice = Some(format!(
                    "The microphone {} is gone; listening on the default input ({}) until it returns.",
                    self.wanted, s.device
                ));
                self.fallback = Some(std::time::Instant::now());
                s
            }
        };
        self.stream = Some(fresh);
        Ok(())
    }

    fn take_notice(&mut self) -> Option<String> {
        self.notice.take()
    }

    fn is_live(&self) -> bool {
        true
    }

    fn name(&self) -> String {
        match &self.stream {
            Some(s) => s.device.clone(),
            None if self.wanted.is_empty() => "default".into(),
            None => self.wanted.clone(),
        }
    }
}

/// Longest queue of unplayed audio a speaker keeps before `write` blocks, milliseconds.
const SPEAKER_QUEUE_MS: u64 = 120;

struct Speaker {
    queue: Mutex<VecDeque<f32>>,
    played: AtomicU64,
    lost: Mutex<Option<String>>,
}

/// A speaker.
pub struct DeviceSink {
    device: String,
    rate: u32,
    shared: Arc<Speaker>,
    stop: Arc<AtomicBool>,
    resampler: StreamResampler,
}

impl DeviceSink {
    /// Opens output device `name` (`""` = default).
    pub fn open(name: &str) -> Result<DeviceSink, AudioError> {
        let shared = Arc::new(Speaker {
            queue: Mutex::new(VecDeque::new()),
            played: AtomicU64::new(0),
            lost: Mutex::new(None),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = sync_channel::<Result<(String, u32), AudioError>>(1);
        let (wanted, sh, st) = (name.to_string(), shared.clone(), stop.clone());
        std::thread::Builder::new()
            .name("sayri-speaker".into())
            .spawn(move || run_output(&wanted, sh, ready_tx, st))
            .map_err(|e| AudioError::Io(e.to_string()))?;
        let (device, rate) = ready_rx
            .recv()
            .map_err(|_| AudioError::Io("speaker thread ended".into()))??;
        Ok(DeviceSink {
            device,
            rate,
            shared,
            stop,
            resampler: StreamResampler::between(SAMPLE_RATE, rate)
                .map_err(|e| AudioError::Io(e.to_string()))?,
        })
    }
}

fn run_output(
    name: &str,
    shared: Arc<Speaker>,
    ready: SyncSender<Result<(String, u32), AudioError>>,
    stop: Arc<AtomicBool>,
) {
    let opened = (|| {
        let device = find_device(name, false)?;
        let label = device.to_string();
        let cfg = device
            .default_output_config()
            .map_err(|e| AudioError::NoDevice {
                device: format!("{label} ({e})"),
            })?;
        let channels = usize::from(cfg.channels()).max(1);
        let rate = cfg.sample_rate();
        let (data_sh, err_sh) = (shared.clone(), shared.clone());
        let stream = device
            .build_output_stream(
                cfg.config(),
                move |out: &mut [f32], _: &cpal::OutputCallbackInfo| {
                    let mut q = lock(&data_sh.queue);
                    let mut n = 0u64;
                    for frame in out.chunks_mut(channels) {
                        let v = q.pop_front();
                        n += u64::from(v.is_some());
                        frame.iter_mut().for_each(|s| *s = v.unwrap_or(0.0));
                    }
                    data_sh.played.fetch_add(n, Ordering::Relaxed);
                },
                move |e: cpal::Error| {
                    if let Ok(mut l) = err_sh.lost.lock() {
                        *l = Some(e.to_string());
                    }
                },
                None,
            )
            .map_err(|e| AudioError::NoDevice {
                device: format!("{label} ({e})"),
            })?;
        stream.play().map_err(|e| AudioError::NoDevice {
            device: format!("{label} ({e})"),
        })?;
        Ok((stream, label, rate))
    })();
    keep_alive(opened, ready, stop);
}

impl AudioSink for DeviceSink {
    fn write(&mut self, samples: &[i16]) -> Result<(), AudioError> {
        if let Some(reason) = self.shared.lost.lock().ok().and_then(|l| l.clone()) {
            return Err(AudioError::DeviceLost {
                device: self.device.clone(),
                reason,
            });
        }
        let out = self.resampler.push(samples);
        let limit = (u64::from(self.rate) * SPEAKER_QUEUE_MS / 1000) as usize;
        for _ in 0..100 {
            let len = self.shared.queue.lock().map(|q| q.len()).unwrap_or(0);
            if len <= limit {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut q = lock(&self.shared.queue);
        q.extend(out.iter().map(|&s| f32::from(s) / 32768.0));
        Ok(())
    }

    fn clear(&mut self) {
        if let Ok(mut q) = self.shared.queue.lock() {
            q.clear();
        }
    }

    fn position(&self) -> u64 {
        self.shared.played.load(Ordering::Relaxed) * u64::from(SAMPLE_RATE)
            / u64::from(self.rate.max(1))
    }

    fn name(&self) -> String {
        self.device.clone()
    }
}

impl Drop for DeviceSink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sayri_core::ports::audio::FRAME_SAMPLES;

    fn stream(rate: u32, cap_secs: usize) -> (Capture, MicStream, Arc<Backlog>) {
        let (capture, rx, backlog) = mic_queue(rate, cap_secs);
        let stop = Arc::new(AtomicBool::new(false));
        let mic = MicStream::new("test mic".into(), rate, rx, backlog.clone(), stop)
            .expect("a 48 kHz resampler");
        (capture, mic, backlog)
    }

    #[test]
    fn a_loop_far_behind_the_microphone_still_gets_every_sample_in_order() {
        // Ten seconds captured at 48 kHz in 10 ms callbacks before the loop reads anything (a
        // CPU busy with the models); each second at its own level, so order shows.
        let (capture, mut mic, backlog) = stream(48_000, MIC_BACKLOG_SECS);
        for second in 0..10u8 {
            for _ in 0..100 {
                capture.deliver(vec![0.05 * f32::from(second + 1); 480]);
            }
        }
        assert_eq!(backlog.dropped.load(Ordering::Relaxed), 0);
        // All ten seconds can be read (less the resampler's last block, held for more input).
        let frames = (10 * 16_000 - 2_000) / FRAME_SAMPLES;
        let mut buf = vec![0i16; FRAME_SAMPLES];
        let mut level_at = Vec::new();
        for f in 0..frames {
            assert_eq!(mic.read(&mut buf).expect("audio is waiting"), FRAME_SAMPLES);
            if f % 12 == 6 {
                level_at.push(buf[FRAME_SAMPLES / 2]);
            }
        }
        for (second, level) in level_at.iter().enumerate().take(10) {
            let want = 0.05 * (second + 1) as f32 * 32768.0;
            assert!(
                (f32::from(*level) - want).abs() < 300.0,
                "second {second}: {level}, not {want}"
            );
        }
    }

    #[test]
    fn only_a_backlog_beyond_its_cap_is_dropped_and_it_is_counted() {
        let (capture, mut mic, backlog) = stream(16_000, 1);
        for _ in 0..200 {
            capture.deliver(vec![0.1; 160]);
        }
        assert_eq!(backlog.dropped.load(Ordering::Relaxed), 16_000);
        assert_eq!(backlog.queued.load(Ordering::Relaxed), 16_000);
        let mut buf = vec![0i16; FRAME_SAMPLES];
        for _ in 0..5 {
            mic.read(&mut buf).expect("audio is waiting");
        }
        assert_eq!(
            backlog.queued.load(Ordering::Relaxed),
            16_000 - 5 * FRAME_SAMPLES
        );
        capture.deliver(vec![0.1; 160]);
        assert_eq!(
            backlog.dropped.load(Ordering::Relaxed),
            16_000,
            "room again once the loop caught up"
        );
        assert_eq!(mic.reported_drops, 16_000, "the drop was reported");
    }
}
