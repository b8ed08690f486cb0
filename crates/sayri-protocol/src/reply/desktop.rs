//! Replies of the front-end and desktop commands: `plugins_list`, `plugin_set_enabled`,
//! `ui_list`, `ui_start`, `ui_stop`, `ui_status`, `killall`, `clipboard_copy`, `window`,
//! `attach_image`.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `plugins_list` → the installed plugins (the user's, then the system's), the built-in
/// gateway programs not hidden by a plugin of the same id, then the built-in UIs; broken
/// plugin folders are listed too, with `error`.
pub type PluginsListReply = Vec<Plugin>;

/// A plugin: an installed plugin folder, a built-in gateway program or a built-in UI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plugin {
    /// Its id (`telegram`, `orb`, `web`, a plugin folder's id).
    pub id: String,
    /// Its display name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its version, when known.
    pub version: Option<String>,
    /// `gateway`, `ui`, `service`, `tool` or `mcp`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The same as `type` (the original listed both).
    #[serde(default)]
    pub plugin_type: String,
    /// Its author (`Sayri Community` when the manifest names none; `Sayri` for built-ins).
    #[serde(default)]
    pub author: String,
    /// `user` (`$CONFIG/plugins`), `system` (the system's plugins folder) or `builtin`.
    #[serde(default)]
    pub scope: String,
    /// How senders are authorised: `pairing_otp` (gateways) or `none`.
    pub auth_mode: String,
    /// The vault keys it needs.
    pub required_secrets: Vec<String>,
    /// Its folder (installed plugins) or program (built-in gateways).
    pub path: Option<PathBuf>,
    /// Its entrypoint, resolved inside its folder (installed plugins that have one).
    #[serde(default)]
    pub entrypoint: Option<PathBuf>,
    /// Why it cannot be used (a broken plugin folder: nothing of it is run), else `null`.
    #[serde(default)]
    pub error: Option<String>,
    /// It has a background service of its own.
    pub has_service: bool,
    /// Its service is enabled (`null`: it has none).
    pub service_enabled: Option<bool>,
    /// Its service runs (`null`: it has none).
    pub service_running: Option<bool>,
    /// Its service's process (`null`: it has none).
    #[serde(default)]
    pub service: Option<PluginService>,
}

/// A plugin's background service as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginService {
    /// `starting`, `running`, `backoff`, `stopping`, `stopped` (also: never started) or
    /// `failed`.
    pub state: String,
    /// The program's pid while it runs.
    pub pid: Option<u32>,
    /// Restarts since it was last started by request.
    pub restarts: u32,
    /// Why it last exited on its own or could not start.
    pub last_error: Option<String>,
    /// In `backoff`: milliseconds until the next start.
    pub restart_in_ms: Option<u64>,
    /// Its log file.
    pub log_file: PathBuf,
    /// The key of its enable flag in the plugin's settings file.
    pub enabled_key: String,
    /// The label of the settings form's check box for the flag.
    pub enabled_label: String,
    /// It starts with the daemon when enabled.
    pub auto_start: bool,
    /// The plugin's settings file.
    pub settings_file: PathBuf,
}

/// `plugin_set_enabled` → `{plugin_id, enabled, ok, message, service}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginSetEnabledReply {
    /// The plugin.
    pub plugin_id: String,
    /// The enable flag as now stored.
    pub enabled: bool,
    /// The service is now in the state asked for (running when enabled, stopped when not).
    pub ok: bool,
    /// A sentence saying what happened.
    pub message: String,
    /// Its service's process after the change.
    pub service: PluginService,
}

/// `ui_list` → every UI: Sayri's own (`orb`, `web`), then the UI plugins found (the user's,
/// then the system's).
pub type UiListReply = Vec<UiEntry>;

/// One front-end Sayri can run: one of its own, or a UI plugin (a plugin folder whose manifest
/// is of type `ui`, run as `python3 <entrypoint>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UiEntry {
    /// `orb`, `web`, or the plugin's id (`sayri-ui-clippy`).
    pub id: String,
    /// Its display name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// What it is.
    pub description: String,
    /// Who made it (`Sayri` for Sayri's own).
    pub author: String,
    /// `orb`, `web`, or a plugin's `ui.kind` (`character`, `desktop`, `orb`, `custom`).
    pub kind: String,
    /// A plugin's `ui.xui_renderer` (`speech-bubble`, `cajita-gtk`, …), when it declares one.
    pub xui_renderer: Option<String>,
    /// `builtin` (Sayri's own), `user` (`$CONFIG/plugins`) or `system` (the shared plugins
    /// folder).
    pub scope: String,
    /// A plugin's folder (`null` for Sayri's own).
    pub path: Option<PathBuf>,
    /// A plugin's entry point, an absolute path inside its folder (`null` for Sayri's own).
    pub entrypoint: Option<PathBuf>,
    /// It runs (started with `ui_start`).
    pub running: bool,
    /// Its pid while it runs.
    pub pid: Option<u32>,
    /// It is `ui.default_ui`.
    pub is_default: bool,
    /// Its supervised program's state (`null` when never started).
    pub state: Option<String>,
    /// Why it last stopped on its own.
    pub last_error: Option<String>,
    /// Its log file (`null` when never started).
    pub log_file: Option<PathBuf>,
}

/// `ui_start` → `{ui_id, running, already_running, pid, log_file}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UiStartReply {
    /// The UI.
    pub ui_id: String,
    /// It runs.
    pub running: bool,
    /// It ran before the call (nothing is started twice).
    pub already_running: bool,
    /// Its pid.
    pub pid: Option<u32>,
    /// Its log file.
    pub log_file: PathBuf,
}

/// `ui_stop` → `{ui_id, stopped}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UiStopReply {
    /// The UI.
    pub ui_id: String,
    /// It was running and is gone now.
    pub stopped: bool,
}

/// `ui_status` → `{ui_id, running, pid, state, last_error, log_file}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UiStatusReply {
    /// The UI.
    pub ui_id: String,
    /// It runs.
    pub running: bool,
    /// Its pid while it runs.
    pub pid: Option<u32>,
    /// Its supervised program's state (`null` when never started).
    pub state: Option<String>,
    /// Why it last stopped on its own.
    pub last_error: Option<String>,
    /// Its log file (`null` when never started).
    pub log_file: Option<PathBuf>,
}

/// `killall` → `{stopped, stopped_ui, signalled, errors, daemon_stopped}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillallReply {
    /// The supervised programs stopped.
    pub stopped: Vec<String>,
    /// The UIs among them.
    pub stopped_ui: Vec<String>,
    /// Always empty: nothing found by its name is ever signalled.
    pub signalled: Vec<String>,
    /// Per program that could not be stopped: why.
    pub errors: Vec<String>,
    /// The daemon stops after answering.
    pub daemon_stopped: bool,
}

/// `clipboard_copy` → `{copied: true, via}` or `{copied: false, reason}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClipboardCopyReply {
    /// The text is on the clipboard.
    pub copied: bool,
    /// The program that copied it (`wl-copy`, `xclip`, `xsel`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// Why each program failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `window` → `{event, clients}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowReply {
    /// The event broadcast (`show`, `hide`, `toggle`, `settings_requested`).
    pub event: String,
    /// The clients it reached (the requester too).
    pub clients: u64,
}

/// `attach_image` → `{path, mime, bytes, waiting}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachImageReply {
    /// The path as given.
    pub path: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime: String,
    /// Its size.
    pub bytes: u64,
    /// The images that go with the next request.
    pub waiting: u64,
}
