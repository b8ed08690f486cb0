//! Settings as clients see and change them, for the daemon's `config_*` commands and for
//! `sayri config` without a daemon alike: the shown (masked) value of a key, the `config_list`
//! rows, and the one change path of a key in `sayri.toml` (the key's own check, then what it
//! needs on this machine, under the writers' lock of [`crate::config_file`]).

use crate::config_file::{self, ConfigFileError};
use crate::settings_check;
use sayri_client::paths::Paths;
use sayri_core::domain::config::{Config, ConfigError, ConfigValue, mask_value};
use sayri_protocol::reply::config::ConfigRow;
use serde_json::Value;

/// The value of `name` in `cfg` as shown to clients: masked when the key is secret.
///
/// # Errors
/// [`ConfigError::UnknownKey`].
pub fn shown_value(name: &str, cfg: &Config) -> Result<Value, ConfigError> {
    let spec = Config::spec(name)?;
    let v = cfg.get(name)?;
    Ok(if spec.is_secret() { mask_value(&v) } else { v }.to_json())
}

/// Sets `name` to `value` in the file at `paths` (converted only where exact, see
/// [`sayri_core::domain::config::KeySpec::value_from_client`]; checked by its key's check and
/// by [`settings_check::check_change`]); the one change path of `config_set` and of
/// `sayri config set` without a daemon.
///
/// # Errors
/// A refused value, an invalid file, the lock, the write; nothing is written on error.
pub fn set_in_file(
    paths: &Paths,
    name: &str,
    value: &Value,
) -> Result<(Config, ConfigValue), ConfigFileError> {
    config_file::update(&paths.config_file(), |c| {
        let stored = c.set_from_client(name, value)?;
        settings_check::check_change(paths, c, name)?;
        Ok(stored)
    })
}

/// The `config_list` rows for `cfg` (also printed by `sayri config list` without a daemon):
/// every key in table order with its masked value, `is_secret`, `type` and `doc`;
/// `provider.api_key` shows `***` when `provider_key_in_vault`.
pub fn config_rows(cfg: &Config, provider_key_in_vault: bool) -> Vec<ConfigRow> {
    cfg.entries()
        .into_iter()
        .map(|(spec, v)| {
            let secret = spec.is_secret();
            let mut value = if secret { mask_value(&v) } else { v }.to_json();
            if provider_key_in_vault && spec.group == "provider" && spec.key == "api_key" {
                value = Value::from("***");
            }
            ConfigRow {
                group: spec.group.into(),
                key: spec.key.into(),
                value,
                is_secret: secret,
                ty: spec.ty.name().into(),
                doc: spec.doc.into(),
            }
        })
        .collect()
}
