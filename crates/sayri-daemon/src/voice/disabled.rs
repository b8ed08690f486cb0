//! The voice service of a build without the `voice` feature: `listen` answers what to rebuild;
//! stopping (`stop_listening`, and `toggle_listening`, which can only stop here) succeeds with
//! nothing changed, as there is never a microphone to close; `status` still shows which models
//! are installed.

use super::status::{self, LoopState};
use crate::brain::Brain;
use crate::bus::Broadcaster;
use sayri_core::domain::config::Config;
use sayri_core::engine::CoreState;
use sayri_core::sync::{read, write};
use sayri_protocol::reply::runtime::StatusReply;
use sayri_protocol::{ErrorCode, ProtocolError};
use sayri_voice::models::ModelStore;
use sayri_voice::plan::VoicePlan;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Voice in a daemon built without it.
pub struct VoiceService {
    cfg: RwLock<Config>,
    store: ModelStore,
}

fn refused() -> ProtocolError {
    ProtocolError::new(ErrorCode::Unavailable, status::not_built())
}

impl VoiceService {
    /// The service for `cfg`.
    pub fn new(cfg: &Config, _broadcaster: Broadcaster) -> VoiceService {
        VoiceService {
            cfg: RwLock::new(cfg.clone()),
            store: ModelStore::open_default(),
        }
    }

    /// Nothing to attach without a loop.
    pub fn attach(&self, _brain: Arc<Brain>) {}

    /// Refused: no voice in this build.
    pub async fn listen(&self, _timeout: Duration) -> Result<String, ProtocolError> {
        Err(refused())
    }

    /// Nothing listens, so nothing to stop: succeeds with nothing changed.
    ///
    /// # Errors
    /// None.
    pub fn stop_listening(&self) -> Result<(), ProtocolError> {
        Ok(())
    }

    /// Refused: no voice in this build. The command handler answers `toggle_listening`
    /// without calling this when [`VoiceService::available`] is false.
    ///
    /// # Errors
    /// Always: listening cannot start.
    pub fn toggle(&self) -> Result<CoreState, ProtocolError> {
        Err(refused())
    }

    /// Whether this build has voice (never here).
    pub fn available(&self) -> bool {
        false
    }

    /// Nothing to interrupt.
    pub fn interrupt(&self) {}

    /// Nothing is spoken.
    pub fn before_typed_turn(&self) {}

    /// Keeps the settings for `status`.
    pub fn reconfigure(&self, cfg: &Config) {
        *write(&self.cfg) = cfg.clone();
    }

    /// The voice fields of `status` (everything not ready, saying what to rebuild).
    pub fn fill_status(&self, status: &mut StatusReply) {
        let cfg = read(&self.cfg).clone();
        let plan = VoicePlan::resolve(&cfg, &self.store);
        status::fill(status, &plan, false, &LoopState::default());
    }

    /// No voice state.
    pub fn state(&self) -> Option<CoreState> {
        None
    }

    /// Never busy.
    pub fn busy(&self) -> bool {
        false
    }

    /// Nothing to stop.
    pub fn shutdown(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn listening_says_the_build_lacks_voice_and_stopping_changes_nothing() {
        let v = VoiceService::new(&Config::default(), Broadcaster::default());
        assert!(!v.available());
        assert!(v.stop_listening().is_ok());
        assert_eq!(v.state(), None);
        let errors = [
            v.listen(Duration::from_secs(1)).await.unwrap_err(),
            v.toggle().unwrap_err(),
        ];
        for e in errors {
            assert_eq!(e.code, ErrorCode::Unavailable);
            assert!(e.message.contains("built without voice"), "{}", e.message);
            assert!(e.message.contains("cargo build"), "{}", e.message);
        }
        let mut st = StatusReply::default();
        v.fill_status(&mut st);
        assert!(!st.stt_ready && !st.tts_ready && !st.wake_ready);
        assert!(st.stt_missing[0].contains("built without voice"));
        assert!(!st.voice.built);
    }
}
