//! `settings_schema` and `settings_save`: the settings form of every front-end, generated from
//! the key table (`sayri_core::domain::config::form`), so a key declared there appears here
//! with its checks.
//!
//! `settings_save` checks each field on its own with the same checks as `config_set` (the key's
//! check, then what it needs on this machine): a refused field is reported in `errors` and
//! never clamped, the valid ones of the same call are saved together in one in-place edit of
//! `sayri.toml` under the writers' lock. A secret field sent empty, or sent back as the masked
//! value the schema showed, keeps its current value.

use super::config::{applied, change_err, store_provider_key, vault_aware};
use crate::config_file::{self, ConfigFileError};
use crate::daemon::dispatch::Ctx;
use crate::settings_check;
use sayri_core::domain::config::{Config, ConfigValue, form};
use sayri_protocol::ProtocolError;
use sayri_protocol::params::{SettingsSaveParams, SettingsSchemaParams};
use sayri_protocol::reply::config::{SettingsSaveReply, SettingsSchemaReply};
use serde_json::Value;
use std::collections::BTreeMap;

/// `settings_schema` → `{"sections": [{id, title, subtitle, save_label, fields}],
/// "plugin_sections": [...]}`; secret values masked. The voice model fields carry an `asset`
/// descriptor (what `asset_download` fetches for them); `plugin_sections` has one section per
/// installed skill that declares settings.
pub async fn settings_schema(
    _: SettingsSchemaParams,
    ctx: Ctx,
) -> Result<SettingsSchemaReply, ProtocolError> {
    let cfg = ctx.daemon.config();
    let mut sections = form::schema(&cfg);
    for field in sections.iter_mut().flat_map(|s| s.fields.iter_mut()) {
        field.value = vault_aware(&field.key, field.value.take(), &ctx);
    }
    super::assets::describe(&mut sections, &cfg);
    let plugin_sections = super::plugins::plugin_sections(&ctx).await;
    Ok(SettingsSchemaReply {
        sections,
        plugin_sections,
    })
}

/// The fields of one `settings_save` call, sorted out before anything is written.
#[derive(Default)]
struct Sorted {
    /// Checked values to write, by `"group.key"`.
    valid: Vec<(String, ConfigValue)>,
    /// `"group.key"` → why the field was refused.
    errors: BTreeMap<String, String>,
}

/// Checks every sent field against the current settings (the key's check only; what the value
/// needs on this machine is checked while writing). The provider key goes to the vault here
/// when there is one.
fn sort_fields(p: &SettingsSaveParams, cfg: &Config, ctx: &Ctx, saved: &mut Vec<String>) -> Sorted {
    let mut out = Sorted::default();
    for (name, sent) in &p.values {
        let spec = match Config::spec(name) {
            Ok(s) => s,
            Err(e) => {
                out.errors.insert(name.clone(), e.to_string());
                continue;
            }
        };
        let current = cfg.get(name).unwrap_or(ConfigValue::Bool(false));
        let in_vault = name == "provider.api_key" && vault_aware(name, Value::Null, ctx) == "***";
        if form::keeps_secret(spec, &current, sent) || (in_vault && sent.as_str() == Some("***")) {
            continue;
        }
        let value = match form::form_value(spec, sent) {
            Ok(v) => v,
            Err(e) => {
                out.errors.insert(name.clone(), e.to_string());
                continue;
            }
        };
        if name == "provider.api_key" {
            match store_provider_key(&value.to_json(), ctx) {
                Ok(Some(_)) => {
                    saved.push(name.clone());
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    out.errors.insert(name.clone(), e.message);
                    continue;
                }
            }
        }
        out.valid.push((name.clone(), value));
    }
    out
}

/// What one edit of `sayri.toml` did: the new settings, the keys written, the refused ones.
struct Written {
    cfg: Config,
    keys: Vec<String>,
    refused: BTreeMap<String, String>,
}

/// Writes the checked values in one edit of `sayri.toml`; a value that cannot work here
/// ([`settings_check::check_change`]) is taken back and reported.
fn write_fields(ctx: &Ctx, valid: Vec<(String, ConfigValue)>) -> Result<Written, ConfigFileError> {
    let paths = ctx.daemon.paths.clone();
    let (cfg, (written, refused)) = config_file::update(&paths.config_file(), |c| {
        let mut written = Vec::new();
        let mut refused = BTreeMap::new();
        for (name, value) in valid {
            let before = c.clone();
            let checked = c
                .set_json(&name, &value.to_json())
                .map_err(ConfigFileError::from)
                .and_then(|_| settings_check::check_change(&paths, c, &name));
            match checked {
                Ok(()) => written.push(name),
                Err(e) => {
                    *c = before;
                    refused.insert(name, e.to_string());
                }
            }
        }
        Ok((written, refused))
    })?;
    Ok(Written {
        cfg,
        keys: written,
        refused,
    })
}

/// `settings_save {values}` → `{"ok", "saved", "values", "errors", "restart_required"}`; `ok` is
/// true when no field was refused. Broadcasts `settings_changed` when anything was saved.
///
/// # Errors
/// `config_invalid` when `sayri.toml` is not valid (nothing is saved), `busy` when another
/// writer holds the file too long, `internal` when it cannot be written.
pub async fn settings_save(
    p: SettingsSaveParams,
    ctx: Ctx,
) -> Result<SettingsSaveReply, ProtocolError> {
    let guard = ctx.daemon.config_file_lock.lock().await;
    let mut saved = Vec::new();
    let sorted = sort_fields(&p, &ctx.daemon.config(), &ctx, &mut saved);
    let mut errors = sorted.errors;
    let cfg = if sorted.valid.is_empty() {
        ctx.daemon.config()
    } else {
        let task_ctx = ctx.clone();
        let written = tokio::task::spawn_blocking(move || write_fields(&task_ctx, sorted.valid))
            .await
            .map_err(|e| ProtocolError::internal(format!("settings_save stopped: {e}")))?
            .map_err(|e| change_err("the settings", e))?;
        ctx.daemon.set_config(written.cfg.clone());
        saved.extend(written.keys);
        errors.extend(written.refused);
        written.cfg
    };
    drop(guard);
    let mut values = form::masked_values(&cfg, &saved);
    for (k, v) in values.iter_mut() {
        *v = vault_aware(k, v.take(), &ctx);
    }
    if !saved.is_empty() {
        applied(&ctx, &cfg, &saved, values.clone());
    }
    let restart_required = saved
        .iter()
        .filter(|k| Config::spec(k).is_ok_and(|s| s.form.restart))
        .cloned()
        .collect();
    Ok(SettingsSaveReply {
        ok: errors.is_empty(),
        saved,
        values,
        errors,
        restart_required,
    })
}
