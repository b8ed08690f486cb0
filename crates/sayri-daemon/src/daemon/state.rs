//! The daemon's shared state, handed to every command handler through [`crate::daemon::Ctx`].

use crate::brain::Brain;
use crate::bus::Broadcaster;
use crate::routines::Routines;
use crate::supervisor::{Launcher, Supervisor, SupervisorConfig};
use sayri_client::paths::Paths;
use sayri_core::domain::config::Config;
use sayri_core::sync::{read, write};
use sayri_protocol::{ErrorCode, ProtocolError};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// Everything the daemon owns. One instance per daemon, behind an `Arc`.
pub struct DaemonState {
    /// Resolved directories.
    pub paths: Paths,
    /// Current configuration (replaced whole on `config_set`).
    pub config: RwLock<Config>,
    /// Serialises read-modify-write cycles of `sayri.toml`.
    pub config_file_lock: tokio::sync::Mutex<()>,
    /// Event fan-out to every client.
    pub broadcaster: Broadcaster,
    /// Cancelled when a shutdown is requested (`quit`, SIGTERM, SIGINT).
    pub shutdown: CancellationToken,
    /// Cancelled once `shutdown` has been broadcast: connections stop reading requests.
    pub closing: CancellationToken,
    /// Cancelled after the shutdown grace period: cuts every remaining connection.
    pub terminate: CancellationToken,
    /// When the daemon started.
    pub started: Instant,
    /// The core and its adapters (set once at start; absent only in bare test daemons).
    pub brain: OnceLock<Arc<Brain>>,
    /// Long-running child programs (model server, gateways, plugin services); stopped at
    /// shutdown. A child that fails raises an `error` event and a desktop notification.
    pub supervisor: Supervisor,
    /// Routines, triggers and their scheduler (set once at start, with the brain).
    pub routines: OnceLock<Arc<Routines>>,
    /// Channel gateways: pairing PINs, refusal limits, per-chat locks.
    pub gateways: crate::gateways::Gateways,
    /// Why plugin background services failed to start before their program ran, for
    /// `plugins_list` and `status`.
    pub service_start_errors: crate::plugins::services::StartErrors,
    /// The voice loop (microphone, wake word, speech to text and speech); stopped at shutdown.
    pub voice: crate::voice::VoiceService,
    /// Voice model downloads running now (`asset_download`): one per asset at a time.
    pub assets: crate::assets::Downloads,
    /// Warnings about the sockets the service manager passed (a mode looser than 0600, a
    /// socket with an unknown name), for `status` and `sayri doctor`.
    pub socket_warnings: std::sync::Mutex<Vec<String>>,
}

impl DaemonState {
    /// New state for `paths` and `config`.
    pub fn new(paths: Paths, config: Config) -> Arc<Self> {
        let broadcaster = Broadcaster::default();
        let observer = crate::gateways::alerts::supervisor_observer(broadcaster.clone());
        Arc::new(DaemonState {
            voice: crate::voice::VoiceService::new(&config, broadcaster.clone()),
            config: RwLock::new(config),
            config_file_lock: tokio::sync::Mutex::new(()),
            broadcaster,
            shutdown: CancellationToken::new(),
            closing: CancellationToken::new(),
            terminate: CancellationToken::new(),
            started: Instant::now(),
            brain: OnceLock::new(),
            supervisor: Supervisor::with_observer(supervisor_config(&paths), observer),
            routines: OnceLock::new(),
            gateways: crate::gateways::Gateways::new(),
            service_start_errors: Default::default(),
            assets: crate::assets::Downloads::default(),
            socket_warnings: std::sync::Mutex::new(Vec::new()),
            paths,
        })
    }

    /// A copy of the current configuration.
    pub fn config(&self) -> Config {
        read(&self.config).clone()
    }

    /// Replaces the configuration.
    pub fn set_config(&self, cfg: Config) {
        *write(&self.config) = cfg;
    }

    /// The brain, or an `internal` error for a daemon started without one.
    pub fn brain(&self) -> Result<&Arc<Brain>, ProtocolError> {
        self.brain.get().ok_or_else(|| {
            ProtocolError::new(
                ErrorCode::Internal,
                "the assistant core is not running in this daemon",
            )
        })
    }

    /// The routines, or an `internal` error for a daemon started without them.
    pub fn routines(&self) -> Result<&Arc<Routines>, ProtocolError> {
        self.routines.get().ok_or_else(|| {
            ProtocolError::new(
                ErrorCode::Internal,
                "routines are not running in this daemon",
            )
        })
    }

    /// Asks the daemon to stop (idempotent).
    pub fn request_shutdown(&self) {
        self.shutdown.cancel();
    }
}

/// The supervisor's settings: logs in `$STATE/logs`, keepers run by the helper program
/// (`sayri-exec keep …`) and recorded in `$STATE/children`.
pub fn supervisor_config(paths: &Paths) -> SupervisorConfig {
    let helper = crate::brain::settings::helper_program();
    SupervisorConfig {
        log_dir: paths.logs_dir(),
        launcher: Launcher {
            program: helper.program,
            args: helper.args,
            registry: Some(sayri_sandbox::child_registry::ChildRegistry::new(
                paths.children_dir(),
            )),
        },
    }
}

/// The gateways' view of the daemon: only what they use.
impl crate::gateways::Host for DaemonState {
    fn brain(&self) -> Result<&Arc<Brain>, ProtocolError> {
        DaemonState::brain(self)
    }

    fn supervisor(&self) -> &Supervisor {
        &self.supervisor
    }

    fn gateways(&self) -> &crate::gateways::Gateways {
        &self.gateways
    }

    fn paths(&self) -> &Paths {
        &self.paths
    }

    fn bus(&self) -> &Broadcaster {
        &self.broadcaster
    }

    fn config(&self) -> Config {
        DaemonState::config(self)
    }

    fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }
}
