//! Speech engines behind traits: voice activity detection, wake word, speech to text, text to
//! speech. All audio is 16 kHz mono `i16` (see [`crate::ports::audio`]).
//!
//! The engines are synchronous (they are CPU work); the voice loop runs them on its own
//! threads. Long operations take a [`CancellationToken`] and stop soon after it fires.

use tokio_util::sync::CancellationToken;

/// Why a speech engine failed, with what to do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpeechError {
    /// A model file or program is missing or unusable; `fix` says how to install it.
    #[error("{what} is not available: {reason} — {fix}")]
    NotReady {
        /// The engine or model (`"whisper model ggml-tiny.en.bin"`).
        what: String,
        /// What went wrong.
        reason: String,
        /// The command or setting that fixes it.
        fix: String,
    },
    /// The operation was cancelled through its token.
    #[error("cancelled")]
    Cancelled,
    /// The engine failed while running.
    #[error("{0}")]
    Failed(String),
}

/// Voice activity detection: how likely a frame holds speech.
pub trait VoiceActivity: Send {
    /// Probability (0..1) that `frame` holds speech. Frames may have any length; an adapter
    /// with a fixed window buffers internally and reports the most likely window that ended
    /// inside `frame` (or its last value when none ended).
    fn speech_probability(&mut self, frame: &[i16]) -> Result<f32, SpeechError>;

    /// Forgets the recurrent state (after a long pause, or when the stream restarts).
    fn reset(&mut self);

    /// Engine name for status (`"silero"`, `"energy"`).
    fn name(&self) -> &str;
}

/// A keyword spotter listening for one wake phrase on the audio stream.
pub trait WakeWord: Send {
    /// Feeds `frame` and returns the highest detection score (0..1) of the steps that ended
    /// inside it. The caller compares it with the configured threshold.
    fn score(&mut self, frame: &[i16]) -> Result<f32, SpeechError>;

    /// Clears the audio history, so a phrase heard before cannot fire again.
    fn reset(&mut self);

    /// The phrase this detector listens for (`"hey jarvis"`).
    fn phrase(&self) -> &str;
}

/// One transcription.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Transcript {
    /// The recognised text, trimmed.
    pub text: String,
    /// Language code used or detected (`"en"`).
    pub language: String,
}

/// Speech to text over a whole utterance.
pub trait SpeechToText: Send {
    /// Transcribes `audio` (16 kHz mono). Called repeatedly on a growing buffer for partial
    /// transcripts, then once on the whole utterance. Errors: [`SpeechError::Cancelled`] when
    /// `cancel` fired, [`SpeechError::Failed`] otherwise.
    fn transcribe(
        &mut self,
        audio: &[i16],
        cancel: &CancellationToken,
    ) -> Result<Transcript, SpeechError>;

    /// Engine and model name for status (`"whisper ggml-tiny.en.bin"`).
    fn name(&self) -> String;

    /// Gets ready to transcribe soon: loads what [`SpeechToText::rest`] released. Called when a
    /// query is about to be spoken (a wake word was heard, listening was asked for), so the
    /// loading overlaps the person's words. Engines that hold nothing releasable do nothing.
    ///
    /// # Errors
    /// The engine cannot be loaded; [`SpeechToText::transcribe`] will say so again.
    fn prepare(&mut self) -> Result<(), SpeechError> {
        Ok(())
    }

    /// Releases the memory transcription holds until the next [`SpeechToText::prepare`] or
    /// [`SpeechToText::transcribe`] (called after a quiet period, so a daemon at rest stays
    /// small). Engines that hold nothing releasable do nothing.
    fn rest(&mut self) {}
}

/// Audio produced by a [`TextToSpeech`] engine while it synthesises. Shared between the
/// thread that feeds text (and may cancel) and the thread that reads audio, hence `&self`.
pub trait SpeechStream: Send + Sync {
    /// The next chunk of 16 kHz mono audio, blocking until one is ready; `Ok(None)` when all
    /// text given so far has been spoken and no more will come, or after a cancel.
    fn next_chunk(&self) -> Result<Option<Vec<i16>>, SpeechError>;

    /// Adds text to speak after what was given so far (a reply streams in sentence by
    /// sentence). Errors when the stream was finished or cancelled.
    fn push_text(&self, text: &str) -> Result<(), SpeechError>;

    /// No more text will come; [`SpeechStream::next_chunk`] returns `None` once it is spoken.
    fn finish(&self);

    /// Stops synthesis at once (kills the engine's work); later calls return `Ok(None)`.
    fn cancel(&self);
}

/// Text to speech.
pub trait TextToSpeech: Send + Sync {
    /// Starts speaking `text` (already speakable: no markdown). More text can be pushed to the
    /// returned stream. Errors: [`SpeechError::NotReady`] when the voice or program is missing.
    fn start(&self, text: &str) -> Result<std::sync::Arc<dyn SpeechStream>, SpeechError>;

    /// Engine and voice name for status (`"piper en_US-joe-medium"`).
    fn name(&self) -> String;
}
