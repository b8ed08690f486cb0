//! Settings of installed skills: the `plugin_sections` of `settings_schema` and
//! `plugin_settings_set`. A skill declares its settings in its `SKILL.md` frontmatter
//! (`sayri_core::domain::skills::settings`); plain values are stored beside the skill
//! (`crate::skills::settings`), secrets in the vault as `SKILL_<SLUG>_<KEY>` — never in a
//! file, a form, an event or the model's prompt.

use crate::brain::Brain;
use crate::daemon::dispatch::Ctx;
use crate::skills::{Skills, SkillsError};
use sayri_core::domain::skills::settings::{MASK, SettingSpec, vault_key};
use sayri_core::domain::skills::valid_slug;
use sayri_protocol::event::settings::PluginSettingsChanged;
use sayri_protocol::params::PluginSettingsSetParams;
use sayri_protocol::reply::config::{PluginSection, PluginSettingsSetReply};
use sayri_protocol::{ErrorCode, ProtocolError};
use serde_json::Value;
use std::sync::Arc;

fn library(ctx: &Ctx) -> Skills {
    Skills::new(ctx.daemon.paths.skills_dir())
}

/// Whether the vault holds `key` (false when there is no vault).
fn secret_set(brain: Option<&Arc<Brain>>, key: &str) -> bool {
    brain.is_some_and(|b| b.vault().as_ref().is_some_and(|v| v.get(key).is_some()))
}

/// The `plugin_sections` of `settings_schema`: one section per installed skill that declares
/// settings — `{id: "plugin:<slug>", plugin_id, title, subtitle, save_label, state, fields,
/// error}`; a skill whose declaration cannot be used has no fields and an `error` saying why.
pub async fn plugin_sections(ctx: &Ctx) -> Vec<PluginSection> {
    let lib = library(ctx);
    let brain = ctx.daemon.brain().ok().cloned();
    let built = tokio::task::spawn_blocking(move || -> Result<Vec<PluginSection>, SkillsError> {
        let mut out = Vec::new();
        for d in lib.with_settings()? {
            let stored = lib.stored_settings(&d.slug);
            let (fields, error) = match &d.settings {
                Ok(specs) => (
                    specs
                        .iter()
                        .map(|s| {
                            let set =
                                s.secret && secret_set(brain.as_ref(), &vault_key(&d.slug, &s.key));
                            s.field(stored.get(&s.key), set)
                        })
                        .collect(),
                    None,
                ),
                Err(e) => (Vec::new(), Some(e.to_string())),
            };
            out.push(PluginSection {
                id: format!("plugin:{}", d.slug),
                title: d.name,
                subtitle: d.description,
                save_label: "Save".into(),
                state: d.state.to_string(),
                fields,
                error,
                plugin_id: d.slug,
            });
        }
        Ok(out)
    })
    .await;
    match built {
        Ok(Ok(sections)) => sections,
        Ok(Err(e)) => {
            tracing::warn!("settings_schema: skill settings not listed: {e}");
            Vec::new()
        }
        Err(e) => {
            tracing::warn!("settings_schema: skill settings not listed: {e}");
            Vec::new()
        }
    }
}

/// The skill and setting a `plugin_settings_set` names.
fn find_setting(lib: &Skills, slug: &str, key: &str) -> Result<SettingSpec, ProtocolError> {
    if !valid_slug(slug) || !lib.skill_dir(slug).is_dir() {
        return Err(ProtocolError::new(
            ErrorCode::NotFound,
            format!("no skill {slug:?} is installed; `sayri skills list` shows the installed ones"),
        ));
    }
    let specs = lib
        .declared(slug)
        .map_err(|e| ProtocolError::invalid_params(e.to_string()))?;
    if specs.is_empty() {
        return Err(ProtocolError::invalid_params(format!(
            "skill {slug} declares no settings (a skill declares them under `settings:` in its SKILL.md frontmatter)"
        )));
    }
    let known: Vec<&str> = specs.iter().map(|s| s.key.as_str()).collect();
    let known = known.join(", ");
    specs.into_iter().find(|s| s.key == key).ok_or_else(|| {
        ProtocolError::invalid_params(format!(
            "skill {slug} has no setting {key:?}; its settings are: {known}"
        ))
    })
}

/// `plugin_settings_set {plugin_id, key, value}` → `{"ok", "plugin_id", "key", "value"}`:
/// checks `value` against the skill's declaration (never clamped), stores it (a secret in the
/// vault; `""` or `null` clears it, the masked `***` keeps it; `null` puts a plain setting back
/// to its default) and broadcasts `plugin_settings_changed {plugin_id, key, value}` with the
/// value as shown (a secret as `***` or `""`).
///
/// # Errors
/// `not_found` for a skill that is not installed; `invalid_params` when it declares no such
/// setting or the value is refused (a secret's value is never repeated); `internal` when the
/// value cannot be stored (no vault for a secret).
pub async fn plugin_settings_set(
    p: PluginSettingsSetParams,
    ctx: Ctx,
) -> Result<PluginSettingsSetReply, ProtocolError> {
    let slug = p
        .plugin_id
        .strip_prefix("plugin:")
        .unwrap_or(&p.plugin_id)
        .to_string();
    let lib = library(&ctx);
    let spec = {
        let (lib, slug, key) = (lib.clone(), slug.clone(), p.key.clone());
        tokio::task::spawn_blocking(move || find_setting(&lib, &slug, &key))
            .await
            .map_err(|e| ProtocolError::internal(format!("plugin_settings_set stopped: {e}")))??
    };
    let refused = |why: String| {
        ProtocolError::invalid_params(format!(
            "invalid value for setting {} of skill {slug}: {why}",
            spec.key
        ))
    };
    let shown = if spec.secret {
        set_secret(&ctx, &slug, &spec, &p.value, refused).await?
    } else {
        let value = match &p.value {
            Value::Null => None,
            v => Some(spec.check(v).map_err(|e| refused(e.to_string()))?),
        };
        let shown = value
            .clone()
            .or_else(|| spec.default.clone())
            .unwrap_or(Value::Null);
        let (lib, slug, key) = (lib.clone(), slug.clone(), spec.key.clone());
        tokio::task::spawn_blocking(move || lib.store_setting(&slug, &key, value))
            .await
            .map_err(|e| ProtocolError::internal(format!("plugin_settings_set stopped: {e}")))?
            .map_err(|e| ProtocolError::internal(e.to_string()))?;
        shown
    };
    ctx.broadcaster().emit(&PluginSettingsChanged {
        plugin_id: slug.clone(),
        key: spec.key.clone(),
        value: shown.clone(),
    });
    Ok(PluginSettingsSetReply {
        ok: true,
        plugin_id: slug,
        key: spec.key,
        value: shown,
    })
}

/// Stores (or clears) a secret setting in the vault; the value as shown (`***` or `""`).
async fn set_secret(
    ctx: &Ctx,
    slug: &str,
    spec: &SettingSpec,
    sent: &Value,
    refused: impl Fn(String) -> ProtocolError,
) -> Result<Value, ProtocolError> {
    let brain = ctx.daemon.brain()?;
    let key = vault_key(slug, &spec.key);
    let clear = matches!(sent, Value::Null) || sent.as_str() == Some("");
    if sent.as_str() == Some(MASK) {
        // The form sent back what it was shown: nothing changes.
        return Ok(Value::from(if secret_set(Some(brain), &key) {
            MASK
        } else {
            ""
        }));
    }
    let value = if clear {
        None
    } else {
        Some(spec.check(sent).map_err(|e| refused(e.to_string()))?)
    };
    {
        let mut guard = brain.vault();
        let vault = guard.as_mut().ok_or_else(|| {
            ProtocolError::internal(format!(
                "setting {} of skill {slug} is secret and goes to the vault, which is unavailable: {} — see `sayri vault status`",
                spec.key,
                brain.vault_error.as_deref().unwrap_or("unknown reason")
            ))
        })?;
        match value.as_ref().and_then(Value::as_str) {
            Some(v) => {
                vault
                    .set(&key, v, &format!("setting {} of skill {slug}", spec.key))
                    .map_err(|e| refused(e.to_string()))?;
            }
            None => {
                vault
                    .delete(&key)
                    .map_err(|e| ProtocolError::internal(e.to_string()))?;
            }
        }
    }
    brain.secrets_changed(&ctx.daemon.config());
    if value.is_some() {
        super::vault::rewrite_stored(brain).await;
    }
    Ok(Value::from(if value.is_some() { MASK } else { "" }))
}
