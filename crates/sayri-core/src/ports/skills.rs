//! The installed skills, as the engine sees them: the prompt's one-line listing and the
//! model's `read_skill` step. The adapter re-checks every skill's files against its install
//! record on each call, so only content whose hashes match the last successful scan is ever
//! shown to the model.

use crate::domain::prompt::SkillSummary;

/// Why a skill's `SKILL.md` cannot be given to the model: a sentence for the model, naming
/// what the person can do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillReadError {
    /// The skill may not be shown as it stands: there is no such skill, it has no
    /// `SKILL.md`, or it changed since it was scanned ("changed since it was scanned; run
    /// `sayri skills scan <slug>`").
    #[error("{0}")]
    Refused(String),
    /// Its files cannot be read; the adapter's message names the file.
    #[error("{0}")]
    Unreadable(String),
}

/// Installed skills that passed their scan and still match it.
pub trait SkillLibrary: Send + Sync {
    /// The skills that may be offered now (state `ready`), in name order.
    fn offered(&self) -> Vec<SkillSummary>;

    /// The whole `SKILL.md` of installed skill `id` (slug or name).
    ///
    /// # Errors
    /// [`SkillReadError`]: no such skill, or the skill changed since it was scanned, or it
    /// cannot be read.
    fn read(&self, id: &str) -> Result<String, SkillReadError>;
}
