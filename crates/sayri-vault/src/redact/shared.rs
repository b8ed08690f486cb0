//! `SharedRedactor`: one redactor handle whose secrets can be swapped while others hold it.

use std::sync::{Arc, RwLock};

use super::secret_redactor::SecretRedactor;

/// A [`sayri_core::ports::Redactor`] whose current [`SecretRedactor`] can be replaced at run time, so
/// the engine, store and logger can share one `Arc<dyn Redactor>` while `vault_set`/`vault_delete`
/// rebuild the secrets. Cloning shares the same slot.
#[derive(Clone, Default)]
pub struct SharedRedactor {
    slot: Arc<RwLock<SecretRedactor>>,
}

impl SharedRedactor {
    /// A shared slot holding `redactor`.
    pub fn new(redactor: SecretRedactor) -> Self {
        Self {
            slot: Arc::new(RwLock::new(redactor)),
        }
    }

    /// Replaces the secrets every holder of this slot redacts from now on.
    pub fn replace(&self, redactor: SecretRedactor) {
        match self.slot.write() {
            Ok(mut g) => *g = redactor,
            Err(poisoned) => *poisoned.into_inner() = redactor,
        }
    }

    /// The current redactor (a cheap clone), e.g. to start a [`super::StreamRedactor`].
    pub fn current(&self) -> SecretRedactor {
        match self.slot.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

impl std::fmt::Debug for SharedRedactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SharedRedactor")
            .field(&self.current())
            .finish()
    }
}

impl sayri_core::ports::Redactor for SharedRedactor {
    fn redact(&self, text: &str) -> String {
        self.current().redact(text)
    }

    fn redact_cut(&self, text: &str) -> String {
        self.current().redact_cut(text)
    }

    fn redact_cut_start(&self, text: &str) -> String {
        self.current().redact_cut_start(text)
    }
}
