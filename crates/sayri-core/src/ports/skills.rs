//! The installed skills, as the engine sees them: the prompt's one-line listing and the
//! model's `read_skill` step. The adapter re-checks every skill's files against its install
//! record on each call, so only content whose hashes match the last successful scan is ever
//! shown to the model.

use crate::domain::prompt::SkillSummary;

/// Installed skills that passed their scan and still match it.
pub trait SkillLibrary: Send + Sync {
    /// The skills that may be offered now (state `ready`), in name order.
    fn offered(&self) -> Vec<SkillSummary>;

    /// The whole `SKILL.md` of installed skill `id` (slug or name).
    ///
    /// # Errors
    /// A sentence for the model: no such skill, or the skill changed since it was scanned
    /// ("changed since it was scanned; run `sayri skills scan <slug>`"), or it cannot be read.
    fn read(&self, id: &str) -> Result<String, String>;
}
