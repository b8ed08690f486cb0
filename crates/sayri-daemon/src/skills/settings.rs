//! Values of the settings installed skills declare (`sayri_core::domain::skills::settings`):
//! plain values in `$CONFIG/skills/.settings/<slug>.json` (one flat JSON object, 0600, replaced
//! atomically); secrets never here — the daemon keeps them in the vault.
//!
//! The settings file lives outside the skill's folder, so setting a value never changes the
//! skill's content hash (its scan approval stays valid). Uninstalling a skill removes its
//! settings file; its secrets stay in the vault (`vault_delete` removes them).

use super::{Skills, SkillsError};
use sayri_core::domain::skills::settings::{self, SettingSpec};
use sayri_core::domain::skills::{SKILL_FILE, parse_skill_md};
use serde_json::{Map, Value};
use std::path::PathBuf;

/// Where settings files live, under the skills directory (a slug never starts with `.`).
const SETTINGS: &str = ".settings";

/// The settings one installed skill declares.
#[derive(Debug, Clone)]
pub struct Declared {
    /// The skill's slug.
    pub slug: String,
    /// `name` from its frontmatter (the slug when absent).
    pub name: String,
    /// `description` from its frontmatter.
    pub description: String,
    /// Its state (`ready`, `changed`, `rescan`, `unscanned`).
    pub state: &'static str,
    /// The declared settings, or why the declaration cannot be used.
    pub settings: Result<Vec<SettingSpec>, String>,
}

impl Skills {
    fn settings_path(&self, slug: &str) -> PathBuf {
        self.dir.join(SETTINGS).join(format!("{slug}.json"))
    }

    /// The settings `SKILL.md` of `slug` declares (read as it is on disk now).
    fn declared_of(&self, slug: &str) -> Result<Vec<SettingSpec>, String> {
        let path = self.skill_dir(slug).join(SKILL_FILE);
        let meta = std::fs::symlink_metadata(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if !meta.is_file() {
            return Err(format!("{} is not a regular file", path.display()));
        }
        let bytes =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let doc = parse_skill_md(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        settings::declared(&doc.metadata).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Every installed skill that declares settings (or whose declaration is broken), in slug
    /// order.
    ///
    /// # Errors
    /// The skills directory exists but cannot be read.
    pub fn with_settings(&self) -> Result<Vec<Declared>, SkillsError> {
        let mut out = Vec::new();
        for s in self.list()? {
            let settings = self.declared_of(&s.slug);
            if matches!(&settings, Ok(list) if list.is_empty()) {
                continue;
            }
            out.push(Declared {
                slug: s.slug,
                name: s.name,
                description: s.description,
                state: s.state,
                settings,
            });
        }
        Ok(out)
    }

    /// The settings installed skill `slug` declares.
    ///
    /// # Errors
    /// Not an installed skill, or its declaration cannot be used.
    pub fn declared(&self, slug: &str) -> Result<Vec<SettingSpec>, SkillsError> {
        self.installed_dir(slug)?;
        self.declared_of(slug).map_err(SkillsError::Invalid)
    }

    /// The stored plain values of `slug` (empty when none are stored or the file is unreadable).
    pub fn stored_settings(&self, slug: &str) -> Map<String, Value> {
        std::fs::read(self.settings_path(slug))
            .ok()
            .and_then(|b| serde_json::from_slice::<Map<String, Value>>(&b).ok())
            .unwrap_or_default()
    }

    /// Stores plain `value` for setting `key` of `slug` (`None` removes it: the default
    /// applies again). The caller checked the value against the declaration.
    ///
    /// # Errors
    /// The settings file cannot be written.
    pub fn store_setting(
        &self,
        slug: &str,
        key: &str,
        value: Option<Value>,
    ) -> Result<(), SkillsError> {
        let dir = self.dir.join(SETTINGS);
        sayri_client::paths::ensure_private_dir(&dir)
            .map_err(|e| SkillsError::Io(e.to_string()))?;
        let mut all = self.stored_settings(slug);
        match value {
            Some(v) => {
                all.insert(key.to_string(), v);
            }
            None => {
                all.remove(key);
            }
        }
        let mut text =
            serde_json::to_vec_pretty(&all).map_err(|e| SkillsError::Io(e.to_string()))?;
        text.push(b'\n');
        let path = self.settings_path(slug);
        sayri_vault::atomic_write::write_atomic(&path, &text)
            .map_err(|e| SkillsError::Io(format!("cannot write {}: {e}", path.display())))
    }

    /// Removes the settings file of `slug` (when it has one).
    pub(super) fn forget_settings(&self, slug: &str) {
        let _ = std::fs::remove_file(self.settings_path(slug));
    }

    /// What the model reads after a skill's `SKILL.md`: its settings' values (secrets only by
    /// where they are kept). Empty when it declares none or its declaration is broken.
    pub(super) fn settings_for_model(&self, slug: &str) -> String {
        match self.declared_of(slug) {
            Ok(specs) => settings::model_lines(slug, &specs, &self.stored_settings(slug)),
            Err(_) => String::new(),
        }
    }
}
