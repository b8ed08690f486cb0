//! Voice decisions, free of I/O: the voice state machine, utterance segmentation from VAD
//! probabilities, the text a reply is spoken as, which transcripts are silence
//! hallucinations, and when a wake word or transcript is the assistant's own echo.
//!
//! The audio adapters and the loop that drives them live in the `sayri-voice` crate; this
//! module only decides.

pub mod echo;
pub mod endpoint;
pub mod events;
pub mod hallucination;
pub mod machine;
pub mod segmenter;
pub mod speakable;

pub use echo::{WakeEvidence, is_echo_of_reply, speech_is_echo, wake_is_echo, wake_threshold};
pub use endpoint::looks_complete;
pub use events::VoiceEvent;
pub use hallucination::{SpeechEvidence, clean_transcript};
pub use machine::{Action, Input, VoiceMachine, VoiceMode, VoiceSettings};
pub use segmenter::{Segment, Segmenter, SegmenterConfig};
pub use speakable::{SentenceSplitter, speakable_text};
