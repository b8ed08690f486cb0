//! A speech-to-text engine loaded on demand and released at rest.
//!
//! * The engine is built by a loader: once when the voice loop starts (so a broken model is
//!   reported at start-up, not at the first question), then again whenever it is needed after
//!   a rest.
//! * [`SpeechToText::rest`] drops the engine and hands the freed heap back to the system, so
//!   a daemon waiting for its wake word does not hold whisper's weights and buffers.
//! * [`SpeechToText::prepare`] and [`SpeechToText::transcribe`] load it again when it rests;
//!   a load that fails is the call's error, and the next call tries again.

use sayri_core::ports::speech::{SpeechError, SpeechToText, Transcript};
use tokio_util::sync::CancellationToken;

/// Builds the engine; called again after every rest.
pub type SttLoader = Box<dyn FnMut() -> Result<Box<dyn SpeechToText>, SpeechError> + Send>;

/// An engine that is in memory only while it is used (see the module).
pub struct OnDemandStt {
    load: SttLoader,
    name: String,
    loaded: Option<Box<dyn SpeechToText>>,
}

impl OnDemandStt {
    /// Loads the engine once with `load` (its errors are this call's) and keeps it loaded
    /// until the first rest.
    ///
    /// # Errors
    /// The loader's error.
    pub fn new(mut load: SttLoader) -> Result<OnDemandStt, SpeechError> {
        let engine = load()?;
        Ok(OnDemandStt {
            name: engine.name(),
            load,
            loaded: Some(engine),
        })
    }

    /// Whether the engine is in memory now.
    pub fn is_loaded(&self) -> bool {
        self.loaded.is_some()
    }
}

impl SpeechToText for OnDemandStt {
    fn transcribe(
        &mut self,
        audio: &[i16],
        cancel: &CancellationToken,
    ) -> Result<Transcript, SpeechError> {
        self.prepare()?;
        match self.loaded.as_mut() {
            Some(engine) => engine.transcribe(audio, cancel),
            None => Err(SpeechError::Failed(format!("{} is not loaded", self.name))),
        }
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn prepare(&mut self) -> Result<(), SpeechError> {
        if self.loaded.is_none() {
            let started = std::time::Instant::now();
            self.loaded = Some((self.load)()?);
            tracing::debug!(engine = %self.name, ms = started.elapsed().as_millis() as u64, "speech to text loaded");
        }
        Ok(())
    }

    fn rest(&mut self) {
        if self.loaded.take().is_some() {
            give_back_free_heap();
            tracing::debug!(engine = %self.name, "speech to text released until it is needed");
        }
    }
}

/// Returns the heap's free pages to the system (glibc keeps freed memory for reuse, so the
/// released weights would otherwise still count as the daemon's memory).
fn give_back_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases free memory of the allocator's own arenas; it reads
    // no pointer of ours and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An engine that answers how many loads came before it.
    struct Counted(usize);

    impl SpeechToText for Counted {
        fn transcribe(
            &mut self,
            _: &[i16],
            _: &CancellationToken,
        ) -> Result<Transcript, SpeechError> {
            Ok(Transcript {
                text: format!("load {}", self.0),
                language: "en".into(),
            })
        }
        fn name(&self) -> String {
            "counted".into()
        }
    }

    fn counting(fail_after: usize) -> (SttLoader, Arc<AtomicUsize>) {
        let loads = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&loads);
        let loader: SttLoader = Box::new(move || {
            let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
            if n > fail_after {
                return Err(SpeechError::Failed("the model file is gone".into()));
            }
            Ok(Box::new(Counted(n)) as Box<dyn SpeechToText>)
        });
        (loader, loads)
    }

    #[test]
    fn it_loads_at_start_stays_until_rest_and_loads_again_only_when_needed() {
        let (loader, loads) = counting(usize::MAX);
        let mut stt = OnDemandStt::new(loader).unwrap();
        let cancel = CancellationToken::new();
        assert_eq!(stt.transcribe(&[], &cancel).unwrap().text, "load 1");
        assert_eq!(stt.transcribe(&[], &cancel).unwrap().text, "load 1");
        stt.rest();
        assert!(!stt.is_loaded());
        stt.rest();
        assert_eq!(loads.load(Ordering::SeqCst), 1, "resting loads nothing");
        stt.prepare().unwrap();
        stt.prepare().unwrap();
        assert_eq!(loads.load(Ordering::SeqCst), 2, "prepared once");
        stt.rest();
        assert_eq!(stt.transcribe(&[], &cancel).unwrap().text, "load 3");
        assert_eq!(stt.name(), "counted");
    }

    #[test]
    fn a_load_that_fails_is_the_calls_error_and_the_next_call_tries_again() {
        let (loader, loads) = counting(1);
        let mut stt = OnDemandStt::new(loader).unwrap();
        stt.rest();
        let cancel = CancellationToken::new();
        let e = stt.transcribe(&[], &cancel).unwrap_err();
        assert!(e.to_string().contains("the model file is gone"), "{e}");
        assert!(stt.prepare().is_err());
        assert_eq!(loads.load(Ordering::SeqCst), 3);
        let (broken, _) = counting(0);
        assert!(
            OnDemandStt::new(broken).is_err(),
            "a start-up failure is reported at once"
        );
    }
}
