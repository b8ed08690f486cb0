//! Speech-to-text adapters.

#[cfg(feature = "whisper")]
pub mod whisper;

#[cfg(feature = "whisper")]
pub use whisper::{WhisperStt, language_code};
