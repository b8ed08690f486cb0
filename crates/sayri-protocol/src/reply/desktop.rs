//! Replies of the front-end and desktop commands: `plugins_list`, `plugin_set_enabled`,
//! `ui_list`, `ui_start`, `ui_stop`, `ui_status`, `killall`, `clipboard_copy`, `window`,
//! `attach_image`.

use super::Never;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `plugins_list` → the gateway programs found, then the UIs.
pub type PluginsListReply = Vec<Plugin>;

/// A plugin: a channel gateway program or a UI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plugin {
    /// Its id (`telegram`, `orb`, `web`).
    pub id: String,
    /// Its display name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its version, when known.
    pub version: Option<String>,
    /// `gateway` or `ui`.
    #[serde(rename = "type")]
    pub kind: String,
    /// How senders are authorised: `pairing_otp` (gateways) or `none`.
    pub auth_mode: String,
    /// The vault keys it needs.
    pub required_secrets: Vec<String>,
    /// Its program (gateways).
    pub path: Option<PathBuf>,
    /// It has a background service of its own (none has).
    pub has_service: bool,
    /// Its service is enabled (`null`: it has none).
    pub service_enabled: Option<bool>,
    /// Its service runs (`null`: it has none).
    pub service_running: Option<bool>,
}

/// `plugin_set_enabled` never succeeds: no plugin of this Sayri has a background service, so
/// a known plugin is answered `invalid_params` saying how to start it, an unknown one
/// `not_found`.
pub type PluginSetEnabledReply = Never;

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
