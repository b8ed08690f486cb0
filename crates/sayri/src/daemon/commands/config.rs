//! `config_get`, `config_set`, `config_list`, typed: the string `"false"` is false, and a value
//! of the wrong type is refused naming the key and the expected type.
//!
//! Addressing: `key` = `"group.key"`, or `group` + `key`. Secret-looking values are masked in
//! `config_get`/`config_list` and in the `settings_changed` event; `config_set` echoes the stored
//! value unmasked to the client that set it. `config_set` persists to `sayri.toml` atomically and
//! broadcasts `settings_changed {keys: ["g.k"], values: {"g.k": masked value}}`.

use crate::config_file::{self, ConfigFileError};
use crate::daemon::dispatch::Ctx;
use sayri_core::domain::config::{Config, ConfigError, KEYS, mask_value};
use sayri_protocol::params::{ConfigGetParams, ConfigListParams, ConfigSetParams};
use sayri_protocol::{ErrorCode, ProtocolError, names};
use serde_json::{Map, Value, json};

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
pub async fn config_get(p: ConfigGetParams, ctx: Ctx) -> Result<Value, ProtocolError> {
    let name = p.setting();
    let spec = Config::spec(&name).map_err(config_err)?;
    let (value, _) = shown(&name, &ctx.daemon.config())?;
    let value = vault_aware(&name, value, &ctx);
    Ok(json!({"group": spec.group, "key": spec.key, "value": value}))
}

/// `config_set {key, value}` → `{"group","key","value"}` (stored value, unmasked).
pub async fn config_set(p: ConfigSetParams, ctx: Ctx) -> Result<Value, ProtocolError> {
    let name = p.setting();
    let spec = Config::spec(&name).map_err(config_err)?;
    let value = &p.value;
    if name == "provider.api_key"
        && let Some(done) = set_provider_key(value, &ctx)?
    {
        return Ok(done);
    }
    if name == "agent.default_agent" {
        check_agent(value, &ctx)?;
    }
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
    if let Ok(brain) = ctx.daemon.brain() {
        brain.config_changed(&cfg);
        if name == "agent.default_agent"
            && brain.core.active_agent().id != cfg.agent.default_agent
            && let Err(e) = brain.core.agent_switch(&cfg.agent.default_agent)
        {
            tracing::warn!("agent.default_agent saved, but the active agent stays: {e}");
        }
    }
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
pub async fn config_list(_: ConfigListParams, ctx: Ctx) -> Result<Value, ProtocolError> {
    let cfg = ctx.daemon.config();
    let mut out = Vec::with_capacity(KEYS.len());
    for spec in KEYS {
        let name = spec.full_name();
        let (value, secret) = shown(&name, &cfg)?;
        let value = vault_aware(&name, value, &ctx);
        out.push(json!({
            "group": spec.group, "key": spec.key, "value": value, "is_secret": secret,
            "type": spec.ty.name(), "doc": spec.doc,
        }));
    }
    Ok(Value::Array(out))
}

/// `provider.api_key` lives in the vault (`PROVIDER_API_KEY`), never in `sayri.toml`. Returns
/// `None` when there is no vault to hold it (the key then goes to the file as before).
fn set_provider_key(value: &Value, ctx: &Ctx) -> Result<Option<Value>, ProtocolError> {
    let Ok(brain) = ctx.daemon.brain() else {
        return Ok(None);
    };
    let key = match value {
        Value::String(s) => s.trim().to_string(),
        Value::Null => String::new(),
        _ => {
            return Err(ProtocolError::invalid_params(
                "provider.api_key must be a string",
            ));
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
    let shown = if key.is_empty() {
        json!("")
    } else {
        json!("***")
    };
    let mut values = Map::new();
    values.insert("provider.api_key".into(), shown.clone());
    let mut payload = Map::new();
    payload.insert("keys".into(), json!(["provider.api_key"]));
    payload.insert("values".into(), Value::Object(values));
    ctx.broadcaster()
        .broadcast(names::event::SETTINGS_CHANGED, payload);
    Ok(Some(
        json!({"group": "provider", "key": "api_key", "value": shown, "stored_in": "vault"}),
    ))
}

/// `provider.api_key` is shown as `***` when the vault holds it (the file then holds none).
fn vault_aware(name: &str, value: Value, ctx: &Ctx) -> Value {
    if name == "provider.api_key" && ctx.daemon.brain().is_ok_and(|b| b.provider_key().is_some()) {
        return json!("***");
    }
    value
}

/// `agent.default_agent` must name an agent that exists (a profile file, or the built-in
/// `default`), so a typo cannot leave the daemon without a usable agent.
fn check_agent(value: &Value, ctx: &Ctx) -> Result<(), ProtocolError> {
    let Ok(brain) = ctx.daemon.brain() else {
        return Ok(());
    };
    let id = value.as_str().unwrap_or_default();
    match brain.agents.load(id) {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(ProtocolError::new(
            ErrorCode::NotFound,
            format!(
                "agent not found: {id} — create {}/{id}.json first (see `sayri prompt show --agent ID`)",
                brain.agents.dir().display()
            ),
        )),
        Err(e) => Err(ProtocolError::invalid_params(e)),
    }
}
