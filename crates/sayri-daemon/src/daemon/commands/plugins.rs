//! Settings of installed skills and of UI plugins: the `plugin_sections` of `settings_schema`
//! and `plugin_settings_set`.
//!
//! * A skill declares its settings in its `SKILL.md` frontmatter
//!   (`sayri_core::domain::skills::settings`); plain values are stored beside the skill
//!   (`crate::skills::settings`), secrets in the vault as `SKILL_<SLUG>_<KEY>`.
//! * A UI plugin declares them as the form nodes of its manifest's `ui.settings`
//!   (`sayri_core::domain::plugin_form`); plain values live in its own settings file, which
//!   the plugin reads (`crate::plugins::settings_file`: created with the defaults the first
//!   time, one key merged per change, atomically, never outside `$CONFIG`); secrets in the
//!   vault as `PLUGIN_<ID>_<KEY>`, handed to the plugin's program on its secrets descriptor
//!   when it starts.
//!
//! A secret is never in a file, a form, an event or the model's prompt. A skill and a UI
//! plugin of the same name: the skill's settings are the ones set.

use crate::brain::Brain;
use crate::daemon::DaemonState;
use crate::daemon::dispatch::Ctx;
use crate::plugins::settings_file::SettingsFileError;
use crate::skills::{Skills, SkillsError};
use crate::supervisor::ChildSpec;
use crate::ui_plugins::UiPlugin;
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
                kind: "skill".into(),
                settings_file: None,
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
    let mut sections = match built {
        Ok(Ok(sections)) => sections,
        Ok(Err(e)) => {
            tracing::warn!("settings_schema: skill settings not listed: {e}");
            Vec::new()
        }
        Err(e) => {
            tracing::warn!("settings_schema: skill settings not listed: {e}");
            Vec::new()
        }
    };
    sections.extend(ui_plugin_sections(ctx).await);
    sections
}

/// The vault key of secret setting `key` of UI plugin `id`: `PLUGIN_<ID>_<KEY>`, upper case,
/// every character other than a letter or digit as `_`.
///
/// ```text
/// sayri-ui-clippy, api.token → PLUGIN_SAYRI_UI_CLIPPY_API_TOKEN
/// ```
pub fn ui_vault_key(id: &str, key: &str) -> String {
    format!("PLUGIN_{id}_{key}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// One UI plugin's section: `{id: "plugin:<id>", plugin_id, type: "ui", title, subtitle,
/// save_label, state: "installed", settings_file, fields, error}`; values from its settings
/// file, else the defaults. A declaration or a settings file that cannot be used gives no
/// fields and an `error` saying why.
fn ui_plugin_section(
    plugin: &UiPlugin,
    config_dir: &std::path::Path,
    brain: Option<&Arc<Brain>>,
) -> PluginSection {
    let file = plugin.settings_file(config_dir);
    let stored = file
        .as_ref()
        .map_err(ToString::to_string)
        .and_then(|f| f.read().map_err(|e| e.to_string()));
    let (fields, error) = match (&plugin.settings, stored) {
        (Err(e), _) => (
            Vec::new(),
            Some(format!(
                "{}: {e}",
                plugin.dir.join("manifest.json").display()
            )),
        ),
        (Ok(_), Err(e)) => (Vec::new(), Some(e)),
        (Ok(specs), Ok(stored)) => {
            let stored = stored.unwrap_or_default();
            let fields = specs
                .iter()
                .map(|s| {
                    let set = s.secret && secret_set(brain, &ui_vault_key(&plugin.id, &s.key));
                    s.field(stored.get(&s.key), set)
                })
                .collect();
            (fields, None)
        }
    };
    PluginSection {
        id: format!("plugin:{}", plugin.id),
        plugin_id: plugin.id.clone(),
        kind: "ui".into(),
        title: plugin.name.clone(),
        subtitle: plugin.description.clone(),
        save_label: "Save".into(),
        state: "installed".into(),
        settings_file: file.ok().map(|f| f.path().to_path_buf()),
        fields,
        error,
    }
}

/// The sections of the UI plugins that declare settings (or whose declaration is broken).
async fn ui_plugin_sections(ctx: &Ctx) -> Vec<PluginSection> {
    let plugins = super::ui::ui_plugins(&ctx.daemon).await.plugins;
    let config_dir = ctx.daemon.paths.config_dir.clone();
    let brain = ctx.daemon.brain().ok().cloned();
    let built = tokio::task::spawn_blocking(move || {
        plugins
            .iter()
            .filter(|p| !matches!(&p.settings, Ok(s) if s.is_empty()))
            .map(|p| ui_plugin_section(p, &config_dir, brain.as_ref()))
            .collect::<Vec<_>>()
    })
    .await;
    built.unwrap_or_else(|e| {
        tracing::warn!("settings_schema: UI plugin settings not listed: {e}");
        Vec::new()
    })
}

/// `spec` with the secrets of `plugin`'s settings that the vault holds, for its program's
/// secrets descriptor (named by their setting keys).
pub(crate) fn with_ui_plugin_secrets(
    state: &DaemonState,
    plugin: &UiPlugin,
    mut spec: ChildSpec,
) -> ChildSpec {
    let Ok(brain) = state.brain() else {
        return spec;
    };
    let guard = brain.vault();
    let Some(vault) = guard.as_ref() else {
        return spec;
    };
    for s in plugin.declared().iter().filter(|s| s.secret) {
        if let Some(v) = vault.get(&ui_vault_key(&plugin.id, &s.key)) {
            spec = spec.secret(s.key.clone(), v.as_str());
        }
    }
    spec
}

/// The setting `key` of installed skill `slug` (the caller checked that it is installed).
fn find_setting(lib: &Skills, slug: &str, key: &str) -> Result<SettingSpec, ProtocolError> {
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

/// Whether `slug` names an installed skill.
fn is_skill(lib: &Skills, slug: &str) -> bool {
    valid_slug(slug) && lib.skill_dir(slug).is_dir()
}

/// `plugin_settings_set {plugin_id, key, value}` → `{"ok", "plugin_id", "key", "value"}`:
/// checks `value` against the declaration of the skill or UI plugin `plugin_id` (never
/// clamped), stores it (a secret in the vault; `""` or `null` clears it, the masked `***` keeps
/// it; `null` puts a plain setting back to its default) and broadcasts
/// `plugin_settings_changed {plugin_id, key, value}` with the value as shown (a secret as `***`
/// or `""`). A UI plugin's plain value goes into its settings file, merged with what is there.
///
/// # Errors
/// `not_found` for a skill or UI plugin that is not installed; `invalid_params` when it
/// declares no such setting, the value is refused (a secret's value is never repeated), or a
/// UI plugin's settings file cannot be used (nothing is written then); `internal` when the
/// value cannot be stored (no vault for a secret, a failed write).
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
        tokio::task::spawn_blocking(move || {
            is_skill(&lib, &slug)
                .then(|| find_setting(&lib, &slug, &key))
                .transpose()
        })
        .await
        .map_err(|e| ProtocolError::internal(format!("plugin_settings_set stopped: {e}")))??
    };
    let Some(spec) = spec else {
        return set_ui_plugin_setting(&slug, &p.key, &p.value, &ctx).await;
    };
    let refused = |why: String| {
        ProtocolError::invalid_params(format!(
            "invalid value for setting {} of skill {slug}: {why}",
            spec.key
        ))
    };
    let shown = if spec.secret {
        let owner = format!("skill {slug}");
        set_secret(
            &ctx,
            &vault_key(&slug, &spec.key),
            &owner,
            &spec,
            &p.value,
            refused,
        )
        .await?
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
    Ok(changed(&ctx, slug, spec.key, shown))
}

/// Broadcasts `plugin_settings_changed` and makes the reply.
fn changed(ctx: &Ctx, plugin_id: String, key: String, shown: Value) -> PluginSettingsSetReply {
    ctx.broadcaster().emit(&PluginSettingsChanged {
        plugin_id: plugin_id.clone(),
        key: key.clone(),
        value: shown.clone(),
    });
    PluginSettingsSetReply {
        ok: true,
        plugin_id,
        key,
        value: shown,
    }
}

/// The setting `key` of UI plugin `plugin`.
fn ui_setting(plugin: &UiPlugin, key: &str) -> Result<SettingSpec, ProtocolError> {
    let id = &plugin.id;
    let specs = plugin.settings.as_ref().map_err(|e| {
        ProtocolError::invalid_params(format!(
            "the settings UI plugin {id} declares cannot be used: {e}; fix `ui.settings` in {}",
            plugin.dir.join("manifest.json").display()
        ))
    })?;
    if specs.is_empty() {
        return Err(ProtocolError::invalid_params(format!(
            "UI plugin {id} declares no settings (a UI plugin declares them as the `ui.settings` form of its manifest.json)"
        )));
    }
    let known: Vec<&str> = specs.iter().map(|s| s.key.as_str()).collect();
    specs.iter().find(|s| s.key == key).cloned().ok_or_else(|| {
        ProtocolError::invalid_params(format!(
            "UI plugin {id} has no setting {key:?}; its settings are: {}",
            known.join(", ")
        ))
    })
}

/// A settings file error as the caller sees it: a refused place or a broken file is
/// `invalid_params` (nothing was written), a failed read or write `internal`.
fn file_err(e: SettingsFileError) -> ProtocolError {
    match e {
        SettingsFileError::Io { .. } => ProtocolError::internal(e.to_string()),
        _ => ProtocolError::invalid_params(e.to_string()),
    }
}

/// `plugin_settings_set` for a UI plugin.
async fn set_ui_plugin_setting(
    wanted: &str,
    key: &str,
    sent: &Value,
    ctx: &Ctx,
) -> Result<PluginSettingsSetReply, ProtocolError> {
    let found = super::ui::ui_plugins(&ctx.daemon).await;
    let Some(plugin) = crate::ui_plugins::find(&found.plugins, wanted) else {
        return Err(match found.why_unusable(wanted) {
            Some(why) => ProtocolError::invalid_params(why.to_string()),
            None => ProtocolError::new(
                ErrorCode::NotFound,
                format!(
                    "no skill or UI plugin named {wanted:?} is installed; `sayri skills list` shows the skills, `ui_list` the UIs"
                ),
            ),
        });
    };
    let spec = ui_setting(plugin, key)?;
    let id = plugin.id.clone();
    let refused = |why: String| {
        ProtocolError::invalid_params(format!(
            "invalid value for setting {key} of UI plugin {id}: {why}"
        ))
    };
    let shown = if spec.secret {
        let owner = format!("UI plugin {id}");
        set_secret(ctx, &ui_vault_key(&id, key), &owner, &spec, sent, refused).await?
    } else {
        let value = match sent {
            Value::Null => None,
            v => Some(spec.check(v).map_err(|e| refused(e.to_string()))?),
        };
        let file = plugin
            .settings_file(&ctx.daemon.paths.config_dir)
            .map_err(file_err)?;
        let specs = plugin.declared().to_vec();
        let k = spec.key.clone();
        let values = tokio::task::spawn_blocking(move || file.set(&specs, &k, value))
            .await
            .map_err(|e| ProtocolError::internal(format!("plugin_settings_set stopped: {e}")))?
            .map_err(file_err)?;
        values.get(key).cloned().unwrap_or(Value::Null)
    };
    Ok(changed(ctx, id, spec.key, shown))
}

/// Stores (or clears) a secret setting in the vault; the value as shown (`***` or `""`).
async fn set_secret(
    ctx: &Ctx,
    key: &str,
    owner: &str,
    spec: &SettingSpec,
    sent: &Value,
    refused: impl Fn(String) -> ProtocolError,
) -> Result<Value, ProtocolError> {
    let brain = ctx.daemon.brain()?;
    let clear = matches!(sent, Value::Null) || sent.as_str() == Some("");
    if sent.as_str() == Some(MASK) {
        // The form sent back what it was shown: nothing changes.
        return Ok(Value::from(if secret_set(Some(brain), key) {
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
                "setting {} of {owner} is secret and goes to the vault, which is unavailable: {} — see `sayri vault status`",
                spec.key,
                brain.vault_error.as_deref().unwrap_or("unknown reason")
            ))
        })?;
        match value.as_ref().and_then(Value::as_str) {
            Some(v) => {
                vault
                    .set(key, v, &format!("setting {} of {owner}", spec.key))
                    .map_err(|e| refused(e.to_string()))?;
            }
            None => {
                vault
                    .delete(key)
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
