//! Events of settings and voice models: `settings_changed`, `plugin_settings_changed`,
//! `asset_progress`.

use crate::reply::double_option;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::PathBuf;

/// `settings_changed` → `{keys, values}`: `config_set` or `settings_save` stored something.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingsChanged {
    /// The keys stored (`group.key`).
    pub keys: Vec<String>,
    /// Their values, masked when secret.
    pub values: Map<String, Value>,
}

/// `plugin_settings_changed` → `{plugin_id, key, value}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PluginSettingsChanged {
    /// The skill's slug, or the UI plugin's id.
    pub plugin_id: String,
    /// The setting.
    pub key: String,
    /// Its value as shown (a secret as `***` or `""`).
    pub value: Value,
}

/// `asset_progress` → `{token, kind, name, percent}`; while the file arrives also `bytes`
/// and `total`; while it waits for another download of the same model `waiting`; when it
/// continues a broken-off one `resumed_from`; the last one `done: true`, `path` and
/// `already_installed`, or `done: false` and `error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssetProgress {
    /// The download (`<kind>:<name>`).
    pub token: String,
    /// `whisper_model`, `piper_voice` or `wake_word`.
    pub kind: String,
    /// The model.
    pub name: String,
    /// A whole number: 0 at the start, 100 once installed.
    pub percent: u8,
    /// Bytes received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The file's size (`null` when the server sent no length).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "double_option"
    )]
    pub total: Option<Option<u64>>,
    /// The last event: installed (true) or failed (false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<bool>,
    /// Where it was installed (with `done: true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Why it failed (with `done: false`; nothing was installed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A sentence naming the process whose download of the same model this one waits for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<String>,
    /// The bytes an earlier download kept, continued from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<u64>,
    /// With `done: true`: nothing was fetched (the model was there, with this sha256).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub already_installed: Option<bool>,
}
