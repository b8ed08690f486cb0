//! `config_get`, `config_set`, `config_list` (spec §2.2), typed (spec §15.4: `"false"` is false).
//!
//! Addressing: `key` = `"group.key"`, or `group` + `key`. Secret-looking values are masked in
//! `config_get`/`config_list` and in the `settings_changed` event; `config_set` echoes the stored
//! value unmasked to the client that set it. `config_set` persists to `sayri.toml` atomically and
//! broadcasts `settings_changed {keys: ["g.k"], values: {"g.k": masked value}}`.

use crate::config_file::{self, ConfigFileError};
use crate::daemon::commands::required_str;
use crate::daemon::dispatch::Ctx;
use sayri_core::domain::config::{Config, ConfigError, KEYS, mask_value};
use sayri_protocol::{ErrorCode, ProtocolError, names};
use serde_json::{Map, Value, json};

fn full_key(params: &Value) -> Result<String, ProtocolError> {
    let key = required_str(params, "key")?;
    Ok(match params.get("group").and_then(Value::as_str) {
        Some(g) if !g.is_empty() && !key.contains('.') => format!("{g}.{key}"),
        _ => key.to_string(),
    })
}

fn config_err(e: ConfigError) -> ProtocolError {
    let code = match e {
        ConfigError::UnknownKey { .. } => ErrorCode::UnknownSetting,
        ConfigError::BadValue { .. } => ErrorCode::InvalidParams,
        ConfigError::Parse { .. } => ErrorCode::Internal,
    };
    ProtocolError::new(code, e.to_string())
}

fn shown(name: &str, cfg: &Config) -> Result<(Value, bool), ProtocolError> {
    let spec = Config::spec(name).map_err(config_err)?;
    let v = cfg.get(name).map_err(config_err)?;
    let secret = spec.is_secret();
    Ok((if secret { mask_value(&v) } else { v }.to_json(), secret))
}

/// `config_get {key}` → `{"group","key","value"(masked)}`.
pub async fn config_get(params: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let name = full_key(&params)?;
    let spec = Config::spec(&name).map_err(config_err)?;
    let (value, _) = shown(&name, &ctx.daemon.config())?;
    Ok(json!({"group": spec.group, "key": spec.key, "value": value}))
}

/// `config_set {key, value}` → `{"group","key","value"}` (stored value, unmasked).
pub async fn config_set(params: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let name = full_key(&params)?;
    let spec = Config::spec(&name).map_err(config_err)?;
    let value = params
        .get("value")
        .ok_or_else(|| ProtocolError::invalid_params("missing 'value'"))?;
    let path = ctx.daemon.paths.config_file();
    let _guard = ctx.daemon.config_file_lock.lock().await;
    let (cfg, stored) =
        config_file::update(&path, |c| c.set_json(&name, value)).map_err(|e| match e {
            ConfigFileError::Config(c @ ConfigError::Parse { .. }) => ProtocolError::new(
                ErrorCode::Internal,
                format!("cannot change {name}: the config file is invalid: {c}"),
            ),
            ConfigFileError::Config(c) => config_err(c),
            other => ProtocolError::internal(other.to_string()),
        })?;
    ctx.daemon.set_config(cfg.clone());
    drop(_guard);
    let (masked, _) = shown(&name, &cfg)?;
    let mut values = Map::new();
    values.insert(name.clone(), masked);
    let mut payload = Map::new();
    payload.insert("keys".into(), json!([name]));
    payload.insert("values".into(), Value::Object(values));
    ctx.broadcaster()
        .broadcast(names::event::SETTINGS_CHANGED, payload);
    Ok(json!({"group": spec.group, "key": spec.key, "value": stored.to_json()}))
}

/// `config_list` → `[{"group","key","value"(masked),"is_secret","type","doc"}]` in table order.
pub async fn config_list(_: Value, ctx: Ctx) -> Result<Value, ProtocolError> {
    let cfg = ctx.daemon.config();
    let mut out = Vec::with_capacity(KEYS.len());
    for spec in KEYS {
        let (value, secret) = shown(&spec.full_name(), &cfg)?;
        out.push(json!({
            "group": spec.group, "key": spec.key, "value": value, "is_secret": secret,
            "type": spec.ty.name(), "doc": spec.doc,
        }));
    }
    Ok(Value::Array(out))
}
