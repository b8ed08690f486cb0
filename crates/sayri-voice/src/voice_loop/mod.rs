//! The voice loop: microphone → echo canceller → VAD and wake word → speech to text → agent →
//! text to speech → speaker, driven by the voice state machine of `sayri-core`.
//!
//! The loop ticks once per 80 ms frame. Each tick it writes one frame of speech (or silence)
//! to the sink, reads one frame from the source, removes the echo of what it just played,
//! feeds the wake-word detector and the VAD, and carries out what the state machine decides.
//! Speech to text, the agent and synthesis run on worker threads, so the microphone is never
//! ignored while they work (the loop never goes deaf).
//!
//! **Live and offline sources.** With a live source (a microphone) the loop keeps real time:
//! a worker that is not done yet simply has not answered by the next tick. With a file or a
//! simulated room, frames arrive as fast as they are read, so the loop waits for its workers
//! instead — time "stops" while models compute, which makes runs reproducible and measures
//! latencies on the audio clock.
//!
//! **Echo and barge-in.** The microphone stays open while the assistant speaks. Its own voice
//! is removed by [`crate::echo::EchoCanceller`] with the played audio as reference; a wake-word
//! detection is vetoed when the played audio itself held the wake phrase at that moment and
//! the microphone held little more than its echo; the VAD ignores speech that is only echo.
//! A person's wake word over the assistant (or speech, in `always` mode) stops playback
//! within one frame.

mod runner;
mod workers;

use crate::echo::EchoCanceller;
use sayri_core::domain::voice::{SegmenterConfig, VoiceEvent, VoiceSettings};
use sayri_core::ports::audio::{AudioError, AudioSink, AudioSource};
use sayri_core::ports::speech::{SpeechToText, TextToSpeech, VoiceActivity, WakeWord};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use tokio_util::sync::CancellationToken;

/// The engines a loop runs.
pub struct Engines {
    /// Voice activity detection on the echo-cancelled microphone signal.
    pub vad: Box<dyn VoiceActivity>,
    /// The wake-word detector on the microphone, if any.
    pub wake: Option<Box<dyn WakeWord>>,
    /// A second detector of the same phrase run on the played audio, used to veto detections
    /// caused by the assistant's own voice. Without it, only echo cancellation protects.
    pub playback_wake: Option<Box<dyn WakeWord>>,
    /// Speech to text.
    pub stt: Box<dyn SpeechToText>,
    /// Text to speech; `None` = replies are not spoken.
    pub tts: Option<Arc<dyn TextToSpeech>>,
}

/// How the loop behaves.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopConfig {
    /// Mode, readiness, activation timeout and wake phrases for the state machine.
    pub settings: VoiceSettings,
    /// Utterance segmentation.
    pub segmenter: SegmenterConfig,
    /// Wake-word score at or above which the phrase counts as heard (0..1).
    pub wake_threshold: f32,
    /// After a detection, further detections are ignored for this long, milliseconds.
    pub wake_refractory_ms: u64,
    /// Partial transcripts while the person speaks, every this many milliseconds of speech;
    /// 0 = none.
    pub partial_every_ms: u64,
    /// Speak replies (when a TTS engine is present).
    pub speak_replies: bool,
    /// Remove the echo of the played audio from the microphone signal. Off only to show what
    /// happens without it.
    pub echo_cancel: bool,
    /// After a finite source ended, keep ticking (with silence) at most this long for pending
    /// work to finish, milliseconds of audio.
    pub max_drain_ms: u64,
    /// End the loop when a finite source ended and its work is done (true), or keep it running
    /// with the microphone off until a command opens it again (false, the daemon).
    pub end_with_source: bool,
    /// When the person pauses this long (milliseconds of silence after speech), transcribe
    /// the utterance so far at once: if no speech follows, that transcript is the utterance's
    /// (no second transcription after the end-of-speech silence), and a transcript that reads
    /// as a finished sentence ends the utterance before the whole `silence_ms`. 0 = off.
    pub early_transcribe_ms: u64,
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            settings: VoiceSettings::default(),
            segmenter: SegmenterConfig::default(),
            wake_threshold: 0.5,
            wake_refractory_ms: 1500,
            partial_every_ms: 1500,
            speak_replies: true,
            echo_cancel: true,
            max_drain_ms: 60_000,
            end_with_source: true,
            early_transcribe_ms: 160,
        }
    }
}

/// The agent that answers spoken queries (the daemon adapts its core turn to this).
pub trait Agent: Send + Sync {
    /// Answers `query`, calling `on_text` with each piece of the answer as it streams, and
    /// returns the final answer text (authoritative for echo checks). Should return soon after
    /// `cancel` fires. `Err` carries a user-facing message.
    fn answer(
        &self,
        query: &str,
        cancel: &CancellationToken,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<String, String>;
}

/// A command from outside (the daemon's `listen`, `stop_listening`, …).
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// `listen`: arm and listen for one query.
    StartListening,
    /// Capture one utterance and report it as a `transcript` event, without a query.
    ListenOnce,
    /// `stop_listening`.
    StopListening,
    /// `toggle_listening`.
    ToggleListening,
    /// `interrupt`: cancel the reply in flight.
    Interrupt,
    /// Whether a front-end is visible.
    UiVisible(bool),
    /// New settings (config changed).
    Reconfigure(VoiceSettings),
    /// A whole new configuration (segmentation, thresholds, what is spoken, settings); the
    /// utterance being collected is dropped and the microphone reopened as the mode needs.
    Configure(Box<LoopConfig>),
    /// Stop the loop.
    Shutdown,
}

/// An event with the moment it happened.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedEvent {
    /// Microphone samples processed when it happened (the loop's audio clock, 16 kHz).
    pub at: u64,
    /// The sink's sample clock at that moment.
    pub sink_position: u64,
    /// The event.
    pub event: VoiceEvent,
}

/// Counters of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoopStats {
    /// 80 ms frames processed.
    pub frames: u64,
    /// Wake-word detections accepted.
    pub wake_detections: u64,
    /// Frames whose wake-word detection was vetoed as the assistant's own voice.
    pub wake_vetoed: u64,
    /// Frames whose speech was ignored as echo.
    pub echo_speech_frames: u64,
    /// Utterances transcribed (final transcripts, a reused speculative one included).
    pub stt_calls: u64,
    /// Speculative transcriptions started at a pause.
    pub speculative_calls: u64,
    /// Utterances ended before the whole end-of-speech silence (the speculative transcript
    /// read as a finished sentence).
    pub early_ends: u64,
    /// Partial transcriptions run.
    pub partial_calls: u64,
    /// Queries sent to the agent.
    pub queries: u64,
    /// Replies cut short by barge-in, interrupt or stop.
    pub speech_stopped: u64,
}

/// Where a loop reads its commands (see [`command_channel`]).
pub struct CommandInbox {
    rx: Receiver<Command>,
}

/// A command channel made before the loop exists (commands sent meanwhile wait in it): pass
/// the inbox to [`VoiceLoop::with_commands`].
pub fn command_channel() -> (VoiceHandle, CommandInbox) {
    let (tx, rx) = channel();
    (VoiceHandle { tx }, CommandInbox { rx })
}

/// Sends commands to a running loop. Cheap to clone.
#[derive(Debug, Clone)]
pub struct VoiceHandle {
    tx: Sender<Command>,
}

impl VoiceHandle {
    /// Sends `cmd`; false when the loop has ended.
    pub fn send(&self, cmd: Command) -> bool {
        self.tx.send(cmd).is_ok()
    }
}

/// Why the loop stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum VoiceError {
    /// The audio source or sink failed for good.
    #[error(transparent)]
    Audio(#[from] AudioError),
    /// A worker waited on by an offline run never answered.
    #[error("{0}")]
    Stalled(String),
    /// The loop could not start its speech-to-text thread.
    #[error(
        "the voice loop could not start its speech-to-text thread: {0} (the system is out of threads or memory; close some programs and turn voice on again)"
    )]
    NoThread(std::io::Error),
}

/// A configured voice loop, ready to [`VoiceLoop::run`].
pub struct VoiceLoop {
    runner: runner::Runner,
}

impl VoiceLoop {
    /// Wires `engines` between `source` and `sink`; `agent` answers queries; `on_event`
    /// receives every event in order (on the loop's thread: keep it quick). Returns the loop
    /// and a handle for commands.
    pub fn new(
        engines: Engines,
        config: LoopConfig,
        source: Box<dyn AudioSource>,
        sink: Box<dyn AudioSink>,
        agent: Arc<dyn Agent>,
        on_event: Box<dyn FnMut(TimedEvent) + Send>,
    ) -> (VoiceLoop, VoiceHandle) {
        let (handle, inbox) = command_channel();
        let lp = VoiceLoop::with_commands(engines, config, source, sink, agent, on_event, inbox);
        (lp, handle)
    }

    /// As [`VoiceLoop::new`], reading commands from `inbox` (made by [`command_channel`]).
    pub fn with_commands(
        engines: Engines,
        config: LoopConfig,
        source: Box<dyn AudioSource>,
        sink: Box<dyn AudioSink>,
        agent: Arc<dyn Agent>,
        on_event: Box<dyn FnMut(TimedEvent) + Send>,
        inbox: CommandInbox,
    ) -> VoiceLoop {
        let runner = runner::Runner::new(
            engines,
            config,
            source,
            sink,
            agent,
            on_event,
            inbox.rx,
            EchoCanceller::new(),
        );
        VoiceLoop { runner }
    }

    /// Runs until [`Command::Shutdown`], or until a finite source ended and its pending work is
    /// done. Blocks the calling thread.
    pub fn run(self) -> Result<LoopStats, VoiceError> {
        self.runner.run()
    }
}
