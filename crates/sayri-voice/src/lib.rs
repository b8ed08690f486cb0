//! Sayri's voice: audio in and out, VAD, wake word, speech to text, text to speech, the voice
//! loop that wires them, and voice model management.
//!
//! Heavy native engines sit behind features (all on by default): `whisper` (whisper.cpp),
//! `onnx` (Silero VAD and openWakeWord through ONNX Runtime loaded at run time), `mic` (sound
//! card through cpal/ALSA), `aec` (speexdsp echo canceller). Without them the crate still
//! offers WAV I/O, the energy VAD, espeak-ng/Piper speech and model management.
//!
//! The decisions (state machine, segmentation, what is spoken, hallucination and echo rules)
//! live in `sayri_core::domain::voice`; this crate only runs engines and moves audio.

pub mod audio;
pub mod echo;
pub mod engines;
pub mod models;
#[cfg(feature = "onnx")]
pub mod onnx;
pub mod plan;
pub mod stt;
pub mod tts;
pub mod vad;
pub mod voice_loop;
pub mod wake;
