//! Replies of `ping`, `version`, `status`, `quit` and `client_hello`, and the status object
//! (also the `info` of the `ready` greeting).
//!
//! The status object is a snapshot that grows with the daemon: a reader takes what it knows,
//! so every member of [`StatusReply`] has a default when a daemon does not send it.

use crate::level::SandboxLevel;
use crate::params::AccessClass;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `ping` → `"pong"`.
pub type PingReply = String;

/// `version` → `{version, protocol_version}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionReply {
    /// The daemon's version (`0.1.0`).
    pub version: String,
    /// [`crate::PROTOCOL_VERSION`] of the daemon.
    pub protocol_version: u32,
}

/// `quit` → `{ok: true}`; the daemon stops right after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuitReply {
    /// Always true.
    pub ok: bool,
}

/// `client_hello` → `{access, allow}`: the limit just added to the connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientHelloReply {
    /// The highest class the connection keeps.
    pub access: AccessClass,
    /// The commands above it that it keeps anyway, in name order.
    pub allow: Vec<String>,
}

/// `status` → the status object (also the `info` of `ready`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StatusReply {
    /// The daemon's version.
    pub version: String,
    /// [`crate::PROTOCOL_VERSION`] of the daemon.
    pub protocol_version: u32,
    /// A typed turn's state while one runs, else the voice loop's (`idle`, `listening`,
    /// `activated`, `thinking`, `speaking`).
    pub state: String,
    /// A turn runs or a spoken answer plays.
    pub busy: bool,
    /// The active session (`null` before the core is up).
    pub session_id: Option<String>,
    /// The active agent.
    pub agent: String,
    /// What each sandbox level can guarantee here (`null` before the core is up).
    pub sandbox: Option<SandboxStatus>,
    /// Whether the vault opened (`null` before the core is up).
    pub vault: Option<VaultStatus>,
    /// The session database (`null` before the core is up).
    pub database: Option<super::database::DatabaseStatus>,
    /// Sentences about sockets the service manager passed (a mode looser than 0600, an
    /// unknown name); empty without socket activation.
    pub socket_warnings: Vec<String>,
    /// The model provider in use.
    pub provider: ProviderStatus,
    /// The local model server (`null` before the core is up).
    pub local_model: Option<LocalModelStatus>,
    /// Token accounting.
    pub tokens: TokensStatus,
    /// The configuration folder.
    pub config_dir: PathBuf,
    /// The state folder.
    pub state_dir: PathBuf,
    /// The daemon socket.
    pub socket: PathBuf,
    /// The daemon's process id.
    pub pid: u32,
    /// Connected clients.
    pub clients: u64,
    /// A front-end is connected to show what Sayri does (the original's field; while none is,
    /// a wake word makes the daemon ask front-ends to `show`).
    pub ui_visible: bool,
    /// Milliseconds since the daemon started.
    pub uptime_ms: u64,
    /// The child programs the daemon runs.
    pub supervised: Vec<SupervisedChild>,
    /// The scheduler (`null` before it started).
    pub routines: Option<RoutinesStatus>,
    /// The MCP servers the user added, in the file's order (left out while there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<McpServerState>,
    /// Speech to text can run.
    pub stt_ready: bool,
    /// What speech to text lacks, one sentence each saying what to install or rebuild.
    pub stt_missing: Vec<String>,
    /// Speech output can run.
    pub tts_ready: bool,
    /// What Piper lacks (may be listed while espeak-ng speaks).
    pub tts_missing: Vec<String>,
    /// The wake word can be heard.
    pub wake_ready: bool,
    /// What the wake word lacks.
    pub wake_missing: Vec<String>,
    /// `stt.mode` (`manual`, `wakeword`, `always`).
    pub stt_mode: String,
    /// The microphone is open.
    pub mic_on: bool,
    /// The next utterance is for Sayri.
    pub armed: bool,
    /// Speech output plays.
    pub speaking: bool,
    /// The phrase that really wakes Sayri, if any.
    pub wake_phrase: Option<String>,
    /// The voice loop's details.
    pub voice: VoiceStatus,
}

/// `status.sandbox`: still probing, the probe's error, or what each level guarantees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SandboxStatus {
    /// The probe ran.
    Probed {
        /// One entry per level, 0 to 4.
        levels: Vec<LevelStatus>,
        /// The levels whose guarantees do not hold here.
        unavailable: Vec<SandboxLevel>,
        /// Whether the kernel lets a process type into its terminal (`allowed`, `refused`,
        /// `allowed_without_setting`, `unknown`).
        legacy_tiocsti: String,
        /// That, as a sentence, and how Sayri blocks it.
        terminal_injection: String,
    },
    /// The probe failed.
    Failed {
        /// Why.
        error: String,
    },
    /// The probe runs.
    Probing {
        /// Always true.
        probing: bool,
    },
}

/// Where one MCP server stands, as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct McpServerState {
    /// The server's name.
    pub name: String,
    /// `false` when the user disabled it (kept, never connected).
    pub enabled: bool,
    /// `stdio` or `http`.
    pub transport: String,
    /// The daemon holds a connection to it now (a stdio server is running in its sandbox).
    pub connected: bool,
    /// How many of its tools the user approved (for its present definition).
    pub tools_approved: usize,
    /// How many approved tools it offered as approved when last asked (`null`: not asked since
    /// the daemon started).
    pub tools_offered: Option<usize>,
    /// The last failure connecting to it or calling it (one line), `null` after a success.
    pub last_error: Option<String>,
}

/// One level of [`SandboxStatus::Probed`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelStatus {
    /// The level.
    pub level: SandboxLevel,
    /// Every guarantee of the level holds here.
    pub available: bool,
    /// What is missing.
    pub missing: Vec<String>,
}

/// `status.vault`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct VaultStatus {
    /// The vault opened.
    pub available: bool,
    /// Why it did not (absent when it did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `status.provider`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ProviderStatus {
    /// The endpoint; while the local model is the provider, its loopback endpoint (`null`
    /// while it starts).
    pub base_url: Option<String>,
    /// The model (the local model's name while it is the provider).
    pub model: Option<String>,
    /// A provider key is set (in the vault or the file).
    pub api_key_set: bool,
    /// The local model is the provider.
    pub local: bool,
}

/// `status.local_model`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LocalModelStatus {
    /// `off`, `starting`, `ready` or `failed`.
    pub state: String,
    /// Its port, when ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Why it failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `provider.local_model` as set.
    pub configured: String,
    /// The model it serves, if any.
    pub model: Option<String>,
    /// Its log file.
    pub log_file: String,
}

/// `status.tokens`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TokensStatus {
    /// An exact tokenizer is loaded (false in the daemon: budgets use a calibrated estimate).
    pub exact_tokenizer_loaded: bool,
    /// Per model, the bytes per token measured so far.
    pub bytes_per_token: BTreeMap<String, f64>,
}

/// One child program the daemon runs (`status.supervised`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SupervisedChild {
    /// Its name (`local-model`, `gateway-<id>`, `ui-<id>`).
    pub name: String,
    /// `starting`, `running`, `backoff`, `stopping`, `stopped` or `failed`.
    pub state: String,
    /// The program's pid while it runs.
    pub pid: Option<u32>,
    /// The pid of its keeper while it runs.
    pub keeper_pid: Option<u32>,
    /// Restarts since it was last started by request.
    pub restarts: u32,
    /// Why it last exited on its own or could not start.
    pub last_error: Option<String>,
    /// In `backoff`: milliseconds until the next start.
    pub restart_in_ms: Option<u64>,
    /// Its log file.
    pub log_file: PathBuf,
}

/// `status.routines`: the scheduler.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RoutinesStatus {
    /// Routines.
    pub count: u64,
    /// Enabled routines.
    pub enabled: u64,
    /// Runs in progress, as `routine:<id>` / `trigger:<id>`.
    pub running: Vec<String>,
    /// The next routine to fire.
    pub next: Option<NextRoutine>,
    /// The system zone the scheduler uses.
    pub system_zone: String,
    /// Why the system zone could not be told, if so.
    pub zone_problem: Option<String>,
    /// What importing the original routines did, if anything.
    pub legacy_import: Option<String>,
    /// The scheduler runs on a test clock.
    pub test_clock: bool,
    /// The trigger files.
    pub triggers: TriggersStatus,
    /// The watches the triggers need.
    pub monitors: MonitorsStatus,
}

/// `status.routines.next`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NextRoutine {
    /// The routine.
    pub routine_id: String,
    /// When, RFC 3339 in its zone.
    pub at: String,
}

/// `status.routines.triggers`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TriggersStatus {
    /// Trigger files.
    pub count: u64,
    /// The files that cannot be used.
    pub invalid: Vec<InvalidTrigger>,
}

/// A trigger file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct InvalidTrigger {
    /// Its id (the file name without `.json`).
    pub id: String,
    /// The file.
    pub file: PathBuf,
    /// Why.
    pub error: String,
}

/// `status.routines.monitors`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MonitorsStatus {
    /// The triggers folder is watched.
    pub triggers_dir: bool,
    /// The `on_file_changed` triggers watched.
    pub files: Vec<String>,
    /// The battery is watched.
    pub battery: bool,
    /// The network is watched.
    pub network: bool,
    /// Per trigger that cannot watch: why.
    pub problems: BTreeMap<String, String>,
}

/// `status.voice`: the voice loop's details.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct VoiceStatus {
    /// This build has voice.
    pub built: bool,
    /// The loop runs.
    pub running: bool,
    /// The whisper model in use.
    pub whisper_model: Option<String>,
    /// The Piper voice in use.
    pub piper_voice: Option<String>,
    /// The speaking engine (`piper <voice>`, `espeak-ng <voice>`).
    pub tts_engine: Option<String>,
    /// The wake-word model in use.
    pub wake_model: Option<String>,
    /// Voice activity detection: `silero` or `energy`.
    pub vad: String,
    /// The microphone.
    pub input: String,
    /// The speaker.
    pub output: String,
    /// Where a choice differs from the settings.
    pub notes: Vec<String>,
    /// Why the loop could not start or stopped.
    pub error: Option<String>,
    /// What is wrong with the microphone now and what Sayri waits for (`None` while it
    /// delivers sound).
    pub mic_problem: Option<String>,
    /// The capture device in use, as the source names it.
    pub mic_device: Option<String>,
}
