//! Replies of the gateway commands: `gateway_list`, `gateway_save`, `gateway_start`,
//! `gateway_stop`, `gateway_delete`, `gateway_pin`, `gateway_peers`, `gateway_peer_add`,
//! `gateway_peer_remove`.

use super::runtime::SupervisedChild;
use crate::level::SandboxLevel;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A gateway instance: one channel bound to an agent at a level cap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayInstance {
    /// Its id (1–32 of `a–z 0–9 _ -`).
    pub id: String,
    /// Display name (the id when none was given).
    #[serde(default)]
    pub name: String,
    /// The plugin it runs: an installed gateway plugin of that id, else the built-in program
    /// (`telegram` runs `sayri-gateway-telegram`).
    pub plugin: String,
    /// The agent its messages go to.
    pub agent: String,
    /// Further agents a chat may switch to.
    #[serde(default)]
    pub agents: Vec<String>,
    /// The highest level its turns run at.
    pub level_cap: SandboxLevel,
    /// Environment variable name → vault key, given to the process.
    #[serde(default)]
    pub secrets: BTreeMap<String, String>,
    /// Plain settings given to the program as `--NAME VALUE`.
    #[serde(default)]
    pub options: BTreeMap<String, String>,
    /// Group chats whose paired members are answered.
    #[serde(default)]
    pub allowed_groups: Vec<String>,
    /// Started with the daemon.
    pub auto_start: bool,
    /// Takes messages of the original gateway wire (without a sender id) from the authors and
    /// chats named in `legacy_authors` / `legacy_chats` *(extension)*.
    #[serde(default)]
    pub legacy: bool,
    /// Authors whose original-wire messages are answered *(extension)*.
    #[serde(default)]
    pub legacy_authors: Vec<String>,
    /// Chat ids whose original-wire messages are answered *(extension)*.
    #[serde(default)]
    pub legacy_chats: Vec<String>,
    /// The vault key a plugin's required secrets are read from when `secrets` does not name
    /// them.
    #[serde(default)]
    pub secret_key: Option<String>,
    /// Whether a plugin gateway may resume a chat's previous session.
    #[serde(default = "yes")]
    pub allow_resume_previous: bool,
    /// Minutes of silence before a plugin gateway starts a new session.
    #[serde(default = "thirty")]
    pub inactivity_timeout_minutes: u32,
}

fn yes() -> bool {
    true
}

fn thirty() -> u32 {
    30
}

/// `gateway_list` → every instance with its process.
pub type GatewayListReply = Vec<GatewayEntry>;

/// One instance as `gateway_list` shows it: its settings and its process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GatewayEntry {
    /// Its settings.
    #[serde(flatten)]
    pub instance: GatewayInstance,
    /// The original's names of its settings, for the original's clients.
    #[serde(flatten)]
    pub original: OriginalInstanceNames,
    /// `starting`, `running`, `backoff`, `stopping`, `stopped` (also: never started) or
    /// `failed` (the crash-loop breaker tripped, or it could not be started).
    pub state: String,
    /// The program's pid while it runs.
    pub pid: Option<u32>,
    /// Restarts since it was last started by request.
    pub restarts: u32,
    /// Why it last stopped on its own or could not start.
    pub last_error: Option<String>,
    /// In `backoff`: milliseconds until the next start.
    pub restart_in_ms: Option<u64>,
    /// Its log file.
    pub log_file: PathBuf,
    /// Paired senders.
    pub peers: u64,
    /// The last reply it reported it could not deliver, since the daemon started.
    pub last_delivery_error: Option<String>,
    /// Replies waiting in its outbox to be delivered, as it last reported (they survive a
    /// restart of the gateway).
    #[serde(default)]
    pub pending_replies: u64,
    /// When the next delivery attempt is due (Unix seconds), while one waits for a rate limit
    /// or a failure to pass.
    #[serde(default)]
    pub next_retry_at: Option<f64>,
}

/// An instance's settings under the original's names, next to today's in `gateway_list`
/// *(original)*.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OriginalInstanceNames {
    /// `plugin`.
    pub plugin_id: String,
    /// `agent`.
    pub agent_id: String,
    /// `level_cap`, as a level name (`LEVEL_1_READONLY`).
    pub sandbox_level: String,
    /// `auto_start`.
    pub enabled: bool,
    /// Whether its process runs now (`starting`, `running` or `backoff`).
    pub running: bool,
    /// `running` or `stopped`, as the original's listing said.
    pub status: String,
    /// How the plugin authorizes senders (its manifest's `authorization.mode`; `pairing_otp`
    /// for the built-in Telegram gateway, `none` for a plugin that is not installed).
    pub auth_mode: String,
}

/// `gateway_save` → `{saved, instance_id, created, instance, restarted}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewaySaveReply {
    /// Always true.
    pub saved: bool,
    /// The instance.
    pub instance_id: String,
    /// It is new.
    pub created: bool,
    /// Its settings as stored.
    pub instance: GatewayInstance,
    /// It was running and was restarted with the new settings.
    pub restarted: bool,
}

/// `gateway_start` → `{started, already_running, instance_id, message, gateway}`; a running
/// instance is left as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayStartReply {
    /// It was started now (false when it was already running).
    pub started: bool,
    /// It was already running and nothing changed.
    pub already_running: bool,
    /// The instance.
    pub instance_id: String,
    /// A sentence saying so.
    pub message: String,
    /// Its process.
    pub gateway: SupervisedChild,
}

/// `gateway_stop` → `{stopped, instance_id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayStopReply {
    /// It was running.
    pub stopped: bool,
    /// The instance.
    pub instance_id: String,
}

/// `gateway_delete` → `{deleted, instance_id, secrets_deleted}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayDeleteReply {
    /// Always true.
    pub deleted: bool,
    /// The instance.
    pub instance_id: String,
    /// The vault keys deleted with it.
    pub secrets_deleted: Vec<String>,
}

/// `gateway_pin` → `{instance_id, pin, expires_at, expires_in}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GatewayPinReply {
    /// The instance.
    pub instance_id: String,
    /// The one-time PIN (6 digits), to send as `/pair PIN` in a private chat.
    pub pin: String,
    /// When it expires, Unix seconds.
    pub expires_at: f64,
    /// Seconds until then.
    pub expires_in: i64,
}

/// `gateway_peers` → the paired senders.
pub type GatewayPeersReply = Vec<GatewayPeer>;

/// A paired sender.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GatewayPeer {
    /// The sender id as the channel gives it.
    pub peer_id: String,
    /// The agent its chats start with.
    pub agent_id: String,
    /// When it was paired, Unix seconds.
    pub authorized_at: Option<f64>,
    /// `pin` or `desktop`.
    pub via: String,
    /// Its display name, as the channel gave it.
    pub name: String,
}

/// `gateway_peer_add` → `{instance_id, peer_id, added}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayPeerAddReply {
    /// The instance.
    pub instance_id: String,
    /// The sender.
    pub peer_id: String,
    /// False when it was paired already.
    pub added: bool,
}

/// `gateway_peer_remove` → `{instance_id, peer_id, removed}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayPeerRemoveReply {
    /// The instance.
    pub instance_id: String,
    /// The sender.
    pub peer_id: String,
    /// It was paired.
    pub removed: bool,
}
