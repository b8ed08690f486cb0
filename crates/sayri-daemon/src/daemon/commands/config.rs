//! `config_get`, `config_set`, `config_list`. Values are typed and never coerced: a JSON value of
//! the wrong type is refused, and every value passes its key's check (range, choices, URL,
//! pattern, absolute paths, …) and what it needs on this machine (`settings_check`) before
//! anything is written. A refusal names the key and what it expects; the file is unchanged.
//!
//! Addressing: `key` = `"group.key"`, or `group` + `key`. Secret-looking values are masked in
//! `config_get`/`config_list` and in the `settings_changed` event; `config_set` echoes the stored
//! value unmasked to the client that set it. `config_set` edits `sayri.toml` in place under the
//! writers' lock (see `config_file`) and broadcasts
//! `settings_changed {keys: ["g.k"], values: {"g.k": masked value}}`.

use crate::config_file::ConfigFileError;
use crate::config_values::{config_rows, set_in_file, shown_value};
use crate::daemon::dispatch::Ctx;
use sayri_core::domain::config::{Config, ConfigError, ConfigValue};
use sayri_protocol::event::settings::SettingsChanged;
use sayri_protocol::params::{ConfigGetParams, ConfigListParams, ConfigSetParams};
use sayri_protocol::reply::config::{ConfigGetReply, ConfigListReply, ConfigSetReply};
use sayri_protocol::{ErrorCode, ProtocolError};
use serde_json::{Map, Value};

fn config_err(e: ConfigError) -> ProtocolError {
    let code = match e {
        ConfigError::UnknownKey { .. } => ErrorCode::UnknownSetting,
        ConfigError::BadValue { .. } => ErrorCode::InvalidParams,
        ConfigError::Parse { .. } => ErrorCode::ConfigInvalid,
    };
    ProtocolError::new(code, e.to_string())
}

/// A failed change of `name` as a protocol error: a refused value is `invalid_params`, a file
/// that is not valid `config_invalid` (naming the file and line), a lock held too long `busy`.
pub fn change_err(name: &str, e: ConfigFileError) -> ProtocolError {
    match e {
        ConfigFileError::Config(c @ ConfigError::Parse { .. }) => ProtocolError::new(
            ErrorCode::ConfigInvalid,
            format!("cannot change {name}: the config file is invalid: {c}"),
        ),
        ConfigFileError::Config(c) => config_err(c),
        e @ ConfigFileError::Unusable { .. } => ProtocolError::invalid_params(e.to_string()),
        e @ ConfigFileError::Lock { .. } => ProtocolError::new(ErrorCode::Busy, e.to_string()),
        other => ProtocolError::internal(other.to_string()),
    }
}

/// `config_get {key}` → `{"group","key","value"(masked)}`.
pub async fn config_get(p: ConfigGetParams, ctx: Ctx) -> Result<ConfigGetReply, ProtocolError> {
    let name = p.setting();
    let spec = Config::spec(&name).map_err(config_err)?;
    let value = shown_value(&name, &ctx.daemon.config()).map_err(config_err)?;
    let value = vault_aware(&name, value, &ctx);
    Ok(ConfigGetReply {
        group: spec.group.into(),
        key: spec.key.into(),
        value,
    })
}

/// `config_set {key, value}` → `{"group","key","value"}` (stored value, unmasked).
pub async fn config_set(p: ConfigSetParams, ctx: Ctx) -> Result<ConfigSetReply, ProtocolError> {
    let name = p.setting();
    let spec = Config::spec(&name).map_err(config_err)?;
    let value = p.value;
    if name == "provider.api_key"
        && let Some(done) = set_provider_key(&value, &ctx)?
    {
        return Ok(done);
    }
    let guard = ctx.daemon.config_file_lock.lock().await;
    let (cfg, stored) = {
        let (paths, key) = (ctx.daemon.paths.clone(), name.clone());
        // The writers' lock may make this wait for a `sayri config set` in another process.
        tokio::task::spawn_blocking(move || set_in_file(&paths, &key, &value))
            .await
            .map_err(|e| ProtocolError::internal(format!("config_set stopped: {e}")))?
            .map_err(|e| change_err(&name, e))?
    };
    ctx.daemon.set_config(cfg.clone());
    drop(guard);
    let masked = shown_value(&name, &cfg).map_err(config_err)?;
    let mut values = Map::new();
    values.insert(name.clone(), masked);
    applied(&ctx, &cfg, &[name], values);
    Ok(ConfigSetReply {
        group: spec.group.into(),
        key: spec.key.into(),
        value: stored.to_json(),
        stored_in: None,
    })
}

/// After a change was written: the brain takes the new settings (provider client, engine,
/// policies; a new `agent.default_agent` becomes the active agent), and every client gets
/// `settings_changed {keys, values}` (`values` already masked).
pub fn applied(ctx: &Ctx, cfg: &Config, keys: &[String], values: Map<String, Value>) {
    if keys
        .iter()
        .any(|k| k.starts_with("stt.") || k.starts_with("tts."))
    {
        ctx.daemon.voice.reconfigure(cfg);
    }
    if let Ok(brain) = ctx.daemon.brain() {
        brain.config_changed(cfg);
        if keys.iter().any(|k| k == "agent.default_agent")
            && brain.core.active_agent().id != cfg.agent.default_agent
            && let Err(e) = brain.core.agent_switch(&cfg.agent.default_agent)
        {
            tracing::warn!("agent.default_agent saved, but the active agent stays: {e}");
        }
    }
    announce(ctx, keys, values);
}

/// Broadcasts `settings_changed {keys, values}`.
fn announce(ctx: &Ctx, keys: &[String], values: Map<String, Value>) {
    ctx.broadcaster().emit(&SettingsChanged {
        keys: keys.to_vec(),
        values,
    });
}

/// `config_list` → `[{"group","key","value"(masked),"is_secret","type","doc"}]` in table order.
pub async fn config_list(_: ConfigListParams, ctx: Ctx) -> Result<ConfigListReply, ProtocolError> {
    let in_vault = ctx.daemon.brain().is_ok_and(|b| b.provider_key().is_some());
    Ok(config_rows(&ctx.daemon.config(), in_vault))
}

/// `provider.api_key` lives in the vault (`PROVIDER_API_KEY`), never in `sayri.toml`. Returns
/// `None` when there is no vault to hold it (the key then goes to the file as before).
fn set_provider_key(value: &Value, ctx: &Ctx) -> Result<Option<ConfigSetReply>, ProtocolError> {
    let Some(shown) = store_provider_key(value, ctx)? else {
        return Ok(None);
    };
    let mut values = Map::new();
    values.insert("provider.api_key".into(), shown.clone());
    announce(ctx, &["provider.api_key".to_string()], values);
    Ok(Some(ConfigSetReply {
        group: "provider".into(),
        key: "api_key".into(),
        value: shown,
        stored_in: Some("vault".into()),
    }))
}

/// Stores `provider.api_key` in the vault (an empty value or `null` deletes it) and lets the
/// brain use it; returns the value as shown (`"***"`, or `""` when deleted), or `None` when
/// there is no vault (nothing is done). Does not announce the change.
///
/// # Errors
/// `invalid_params` when the key fails its check or the vault refuses it.
pub fn store_provider_key(value: &Value, ctx: &Ctx) -> Result<Option<Value>, ProtocolError> {
    let Ok(brain) = ctx.daemon.brain() else {
        return Ok(None);
    };
    let key = match value {
        Value::Null => String::new(),
        other => {
            // Surrounding blanks of a pasted key are dropped; the rest must pass the key's check.
            let trimmed = match other {
                Value::String(s) => Value::String(s.trim().to_string()),
                o => o.clone(),
            };
            let spec = Config::spec("provider.api_key").map_err(config_err)?;
            match spec.value_from_json(&trimmed).map_err(config_err)? {
                ConfigValue::Str(k) => k,
                _ => String::new(),
            }
        }
    };
    {
        let mut guard = brain.vault();
        let Some(vault) = guard.as_mut() else {
            return Ok(None);
        };
        let r = if key.is_empty() {
            vault.delete(crate::brain::PROVIDER_KEY).map(|_| ())
        } else {
            vault
                .set(crate::brain::PROVIDER_KEY, &key, "LLM provider API key")
                .map(|_| ())
        };
        r.map_err(|e| {
            ProtocolError::invalid_params(format!("cannot store provider.api_key: {e}"))
        })?;
    }
    brain.secrets_changed(&ctx.daemon.config());
    if !key.is_empty() {
        brain.spawn_rewrite_stored_secrets();
    }
    Ok(Some(Value::from(if key.is_empty() { "" } else { "***" })))
}

/// `provider.api_key` is shown as `***` when the vault holds it (the file then holds none).
pub fn vault_aware(name: &str, value: Value, ctx: &Ctx) -> Value {
    if name == "provider.api_key" && ctx.daemon.brain().is_ok_and(|b| b.provider_key().is_some()) {
        return Value::from("***");
    }
    value
}
