//! Replies of the settings commands: `config_get`, `config_set`, `config_list`,
//! `settings_schema`, `settings_save`, `plugin_settings_set`.
//!
//! A setting's value is the JSON value of its key's type, so it stays a [`Value`]; secret
//! values are masked (up to 8 characters `***`, longer: first 3 + `...` + last 3).

use super::double_option;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `config_get` → `{group, key, value}` (masked).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigGetReply {
    /// The key's group (`provider`).
    pub group: String,
    /// The key within it (`model`).
    pub key: String,
    /// Its value, masked when secret.
    pub value: Value,
}

/// `config_set` → `{group, key, value}` (the stored value, unmasked; `provider.api_key`, kept
/// in the vault, shows `***` or `""` and says `stored_in: "vault"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigSetReply {
    /// The key's group.
    pub group: String,
    /// The key within it.
    pub key: String,
    /// The value stored.
    pub value: Value,
    /// `vault` when the value went to the vault instead of `sayri.toml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_in: Option<String>,
}

/// `config_list` → every setting in table order.
pub type ConfigListReply = Vec<ConfigRow>;

/// One row of `config_list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigRow {
    /// The key's group.
    pub group: String,
    /// The key within it.
    pub key: String,
    /// Its value, masked when secret.
    pub value: Value,
    /// The value is masked.
    pub is_secret: bool,
    /// `bool`, `int`, `float`, `str` or `list`.
    #[serde(rename = "type")]
    pub ty: String,
    /// What it does.
    pub doc: String,
}

/// `settings_schema` → `{sections, plugin_sections}`: the settings form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingsSchemaReply {
    /// The sections of Sayri's own settings, in form order.
    pub sections: Vec<SettingsSection>,
    /// One section per installed skill, then per UI plugin, that declares settings.
    pub plugin_sections: Vec<PluginSection>,
}

/// One section of the settings form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingsSection {
    /// `llm`, `assistant`, `speech_input`, `voice`, `interface` or `security`.
    pub id: String,
    /// Its heading.
    pub title: String,
    /// Its sub-heading.
    pub subtitle: String,
    /// The label of its save button.
    pub save_label: String,
    /// Its fields.
    pub fields: Vec<SettingsField>,
}

/// One field of a settings section: a key of the settings table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingsField {
    /// `group.key`.
    pub key: String,
    /// Its label.
    pub label: String,
    /// Its help text.
    pub hint: String,
    /// `toggle`, `choice`, `number`, `password`, `textarea`, `list` or `text`.
    pub kind: String,
    /// When it is saved: `section` (with its section's button).
    pub save: String,
    /// The key's type (as in `config_list`).
    #[serde(rename = "type")]
    pub ty: String,
    /// What the value must be, in the words of a refusal.
    pub expected: String,
    /// A secret (its value is masked).
    pub secret: bool,
    /// A change takes effect only after the daemon restarts.
    pub restart: bool,
    /// The value, masked when secret.
    pub value: Value,
    /// A number's lowest value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<Number>,
    /// A number's highest value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<Number>,
    /// A number's step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<f64>,
    /// A number's unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// What 0 means, for a number where 0 stands for something else (`min` is then 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero: Option<String>,
    /// The smallest value other than 0, for such a number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowest: Option<Number>,
    /// A choice's options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<Choice>>,
    /// The command that lists the options (`ui_list` for `ui.default_ui`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_options: Option<String>,
    /// The voice model a voice model field names, and whether it is installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asset: Option<AssetDescriptor>,
}

/// One option of a choice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// What is stored.
    pub value: String,
    /// What is shown.
    pub label: String,
}

/// The `asset` of a voice model field: the model the current settings name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssetDescriptor {
    /// `whisper_model`, `piper_voice` or `wake_word`.
    pub kind: String,
    /// What `asset_download` takes for it as `params` (the fields of
    /// [`crate::params::AssetParams`]; kept as an object so that a newer daemon's fields pass through).
    pub params: Map<String, Value>,
    /// Its name.
    pub name: String,
    /// Its name with its size.
    pub label: String,
    /// It is installed.
    pub downloaded: bool,
    /// Where it is (or would be) installed.
    pub path: PathBuf,
    /// Its megabytes, when known.
    pub size: Option<u32>,
    /// What `asset_download` would still need (e.g. a sha256), if anything.
    pub needs: Option<String>,
}

/// The settings section of an installed skill or of a UI plugin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PluginSection {
    /// `plugin:<slug>` or `plugin:<UI plugin id>`.
    pub id: String,
    /// The skill's slug, or the UI plugin's id.
    pub plugin_id: String,
    /// `skill` or `ui` (a UI plugin's manifest declares the settings).
    #[serde(rename = "type")]
    pub kind: String,
    /// The skill's or the plugin's name.
    pub title: String,
    /// Its description.
    pub subtitle: String,
    /// The label of its save button.
    pub save_label: String,
    /// The skill's state (as in `skills_list`); `installed` for a UI plugin.
    pub state: String,
    /// A UI plugin's settings file, which the plugin reads (`null` for a skill).
    pub settings_file: Option<PathBuf>,
    /// Its fields (none when the declaration cannot be used).
    pub fields: Vec<PluginField>,
    /// Why the declaration cannot be used (names the file and the setting), or `null`.
    pub error: Option<String>,
}

/// One setting a skill or a UI plugin declares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PluginField {
    /// The setting's key.
    pub key: String,
    /// Its label.
    pub label: String,
    /// Its help text.
    pub hint: String,
    /// `text`, `textarea`, `password`, `number`, `toggle` or `choice`.
    pub kind: String,
    /// When it is saved: `now` (each on its own, with `plugin_settings_set`).
    pub save: String,
    /// A secret (kept in the vault).
    pub secret: bool,
    /// What the value must be.
    pub expected: String,
    /// The stored value, else the default; a secret's is `***` when set, else `""`.
    pub value: Value,
    /// The default, if any.
    pub default: Option<Value>,
    /// A choice's options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<Choice>>,
    /// A number's lowest value (present for a number, possibly `null`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "double_option"
    )]
    pub min: Option<Option<f64>>,
    /// A number's highest value (present for a number, possibly `null`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "double_option"
    )]
    pub max: Option<Option<f64>>,
    /// A number's step (present for a number, possibly `null`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "double_option"
    )]
    pub step: Option<Option<f64>>,
}

/// `settings_save` → `{ok, saved, values, errors, restart_required}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingsSaveReply {
    /// No field was refused.
    pub ok: bool,
    /// The keys saved.
    pub saved: Vec<String>,
    /// Their values, masked when secret.
    pub values: Map<String, Value>,
    /// Per refused key, why.
    pub errors: BTreeMap<String, String>,
    /// The saved keys that take effect only after the daemon restarts.
    pub restart_required: Vec<String>,
}

/// `plugin_settings_set` → `{ok, plugin_id, key, value}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PluginSettingsSetReply {
    /// Always true.
    pub ok: bool,
    /// The skill's slug, or the UI plugin's id.
    pub plugin_id: String,
    /// The setting.
    pub key: String,
    /// The value as shown (a secret as `***` or `""`).
    pub value: Value,
}
