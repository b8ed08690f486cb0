//! Sayri's voice: audio in and out, VAD, wake word, speech to text, text to speech, the voice
//! loop that wires them, and voice model management.
pub mod models;
