//! Wake-word adapters.

#[cfg(feature = "onnx")]
pub mod oww;

#[cfg(feature = "onnx")]
pub use oww::{OpenWakeWord, phrase_of_model};
