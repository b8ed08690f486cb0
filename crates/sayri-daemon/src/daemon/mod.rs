//! `sayri daemon`: the single process that owns Sayri's brain and serves the NDJSON protocol on
//! `sayri-daemon.sock` (see `PROTOCOL.md`).
//!
//! * [`listener`] — singleton lock, stale socket, 0600, `SO_PEERCRED`.
//! * [`crate::command_peer`] — whether a peer runs inside a command of a turn (its [`Caller`](crate::command_peer::Caller)).
//! * [`connection`] — per-client framing, routing, bounded outbound queue.
//! * [`legacy`] — the legacy gateway socket `sayri.sock` (the original's gateway wire).
//! * [`dispatch`] — the command table: access class, run mode and typed handler per command.
//! * [`commands`] — the handlers, one file per area, and [`commands::register_all`].
//! * [`state`] — [`DaemonState`], what every handler shares.
//! * [`status`] — the `status` object.
//! * [`recovery`] — start-up after a crash: leftover children killed, interrupted turns closed.
//! * [`db_maintenance`] — the session database's log kept small, its damage told to clients.
//!
//! The routines and their scheduler live in [`crate::routines`] (started by [`Daemon::bind`]).

pub(crate) mod activation;
pub(crate) mod commands;
pub(crate) mod connection;
pub(crate) mod db_maintenance;
pub mod dispatch;
pub(crate) mod legacy;
pub(crate) mod listener;
pub(crate) mod recovery;
pub(crate) mod state;
pub(crate) mod status;

pub use dispatch::{Ctx, Dispatcher, Mode};
pub use listener::ListenError;
pub use state::DaemonState;

use crate::config_file::{self, ConfigFileError};
use listener::DaemonLock;
use sayri_client::paths::{Paths, PathsError};
use sayri_core::domain::config::Config;
use sayri_protocol::PROTOCOL_VERSION;
use sayri_protocol::event::window::Shutdown;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::UnixListener;
use tokio_util::task::TaskTracker;

/// How long clients get to receive their last frames (e.g. `shutdown`) before being cut off.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// Directories.
    #[error(transparent)]
    Paths(#[from] PathsError),
    /// The config file is unreadable or invalid.
    #[error(transparent)]
    Config(#[from] ConfigFileError),
    /// Lock or socket.
    #[error(transparent)]
    Listen(#[from] ListenError),
    /// The core could not be built (database, policies, agents).
    #[error(transparent)]
    Brain(#[from] crate::brain::BrainError),
    /// The scheduler's clock (a test clock asked for where none exists).
    #[error("{0}")]
    Clock(String),
}

/// A bound, not yet running daemon.
pub struct Daemon {
    state: Arc<DaemonState>,
    listener: UnixListener,
    /// The legacy gateway socket `sayri.sock` (`None` when it could not be bound).
    legacy: Option<UnixListener>,
    lock: DaemonLock,
    dispatcher: Arc<Dispatcher>,
    /// The socket came from the service manager (socket activation): it stays in place at exit,
    /// for the next activation.
    activated: bool,
    /// The same for the legacy socket.
    legacy_activated: bool,
    /// The control and legacy sockets at the original clients' paths in the state dir, when
    /// the runtime dir is elsewhere (see [`listener::bind_alias`]).
    aliases: Aliases,
}

/// Second listeners at the original paths.
#[derive(Default)]
struct Aliases {
    control: Option<listener::AliasSocket>,
    legacy: Option<listener::AliasSocket>,
}

impl Aliases {
    /// Binds what `paths` asks for; each path that cannot be bound is a warning.
    fn bind(paths: &Paths, warnings: &mut Vec<String>) -> Aliases {
        let mut one = |p: Option<std::path::PathBuf>| {
            p.and_then(|p| match listener::bind_alias(&p) {
                Ok(a) => Some(a),
                Err(w) => {
                    tracing::warn!("{w}");
                    warnings.push(w);
                    None
                }
            })
        };
        Aliases {
            control: one(paths.original_socket()),
            legacy: one(paths.original_legacy_socket()),
        }
    }
}

/// The command table with every command this build implements.
pub fn default_dispatcher() -> Dispatcher {
    let mut d = Dispatcher::new();
    commands::register_all(&mut d);
    d
}

impl Daemon {
    /// Prepares directories, loads the config, takes the lock and binds the socket.
    /// Must be called inside a Tokio runtime.
    pub fn bind(paths: Paths, dispatcher: Dispatcher) -> Result<Daemon, DaemonError> {
        paths.ensure_dirs()?;
        let (config, _existed) = config_file::load(&paths.config_file())?;
        Self::bind_with_config(paths, config, dispatcher)
    }

    /// As [`Daemon::bind`] with an already loaded config.
    pub fn bind_with_config(
        paths: Paths,
        config: Config,
        dispatcher: Dispatcher,
    ) -> Result<Daemon, DaemonError> {
        Self::bind_passed(paths, config, dispatcher, Vec::new())
    }

    /// As [`Daemon::bind_with_config`], listening on the sockets the service manager passed
    /// (`passed`: descriptor and name each, from `LISTEN_FDS`/`LISTEN_FDNAMES`; see
    /// [`activation::adopt`]) where there are; the daemon binds the others itself.
    pub fn bind_passed(
        paths: Paths,
        config: Config,
        dispatcher: Dispatcher,
        passed: Vec<(std::os::fd::OwnedFd, String)>,
    ) -> Result<Daemon, DaemonError> {
        paths.ensure_dirs()?;
        let lock = listener::acquire_lock(&paths.lock_file())?;
        let adopted = activation::adopt(passed, &paths.socket(), &paths.legacy_socket())?;
        let (listener, activated) = match adopted.control {
            Some(l) => (l, true),
            None => (listener::bind_private(&paths.socket())?, false),
        };
        let passed_legacy = adopted.legacy;
        // Only the lock holder may clean up, and before it starts a child of its own.
        recovery::kill_leftovers(&paths);
        let mut warnings = adopted.warnings;
        let aliases = Aliases::bind(&paths, &mut warnings);
        let state = DaemonState::new(paths, config);
        *state
            .socket_warnings
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = warnings;
        let cfg = state.config();
        let (brain, migrated_key) = crate::brain::Brain::build(
            &state.paths,
            &cfg,
            state.broadcaster.clone(),
            state.supervisor.clone(),
        )?;
        recovery::close_interrupted_turns(&brain.store, &crate::brain::SystemClock);
        if migrated_key {
            // The provider key now lives in the vault: remove the plaintext copy.
            match config_file::update(&state.paths.config_file(), |c| {
                Ok(c.set_json(
                    "provider.api_key",
                    &serde_json::Value::String(String::new()),
                )?)
            }) {
                Ok((c, _)) => {
                    state.set_config(c);
                    tracing::info!("moved provider.api_key from sayri.toml into the vault");
                }
                Err(e) => tracing::error!(
                    "provider.api_key was copied to the vault but could not be removed from sayri.toml: {e}"
                ),
            }
        }
        let brain = std::sync::Arc::new(brain);
        let _ = state.brain.set(brain.clone());
        state.voice.attach(brain.clone());
        let clock = crate::routines::clock_from_env().map_err(DaemonError::Clock)?;
        let routines = crate::routines::Routines::start(
            brain,
            clock,
            std::sync::Arc::new(crate::notify::DesktopNotifier::new()),
            state.broadcaster.clone(),
            state.paths.config_dir.clone(),
        );
        let _ = state.routines.set(routines);
        let legacy_activated = passed_legacy.is_some();
        let legacy = passed_legacy.or_else(|| legacy::bind(&state));
        Ok(Daemon {
            state,
            listener,
            legacy,
            lock,
            dispatcher: Arc::new(dispatcher),
            activated,
            legacy_activated,
            aliases,
        })
    }

    /// The shared state (for broadcasting or requesting shutdown from outside).
    pub fn state(&self) -> Arc<DaemonState> {
        self.state.clone()
    }

    /// Accepts clients until shutdown is requested, then says `shutdown` to everyone, lets them
    /// drain for [`SHUTDOWN_GRACE`], closes them, and removes the socket.
    pub async fn run(self) {
        let Daemon {
            state,
            listener,
            legacy,
            lock,
            dispatcher,
            activated,
            legacy_activated,
            aliases,
        } = self;
        let tracker = TaskTracker::new();
        if let Some(alias) = aliases.legacy {
            tracker.spawn(legacy::serve_alias(alias, state.clone(), tracker.clone()));
        }
        if let Some(legacy) = legacy {
            tracker.spawn(legacy::serve(
                legacy,
                state.clone(),
                tracker.clone(),
                !legacy_activated,
            ));
            start_enabled_programs(&state);
        }
        if let Some(alias) = aliases.control {
            let (state, dispatcher, inner) = (state.clone(), dispatcher.clone(), tracker.clone());
            tracker.spawn(async move {
                listener::accept_until(
                    &alias.listener,
                    &state.shutdown,
                    "control socket (original path): ",
                    |stream, slot| accept_control(stream, slot, &state, &dispatcher, &inner),
                )
                .await;
                alias.remove();
            });
        }
        tokio::spawn(db_maintenance::run(state.clone()));
        tracing::info!(
            "listening on {}{} (version {}, protocol {PROTOCOL_VERSION})",
            state.paths.socket().display(),
            if activated {
                " (socket passed by the service manager)"
            } else {
                ""
            },
            env!("CARGO_PKG_VERSION")
        );
        // Under systemd (`Type=notify`) the start completes here: the socket accepts clients.
        // Without $NOTIFY_SOCKET this does nothing.
        let status = format!("listening on {}", state.paths.socket().display());
        if let Err(e) = sd_notify::notify(&[
            sd_notify::NotifyState::Ready,
            sd_notify::NotifyState::Status(&status),
        ]) {
            tracing::warn!("cannot tell the service manager that the daemon is ready: {e}");
        }
        listener::accept_until(&listener, &state.shutdown, "", |stream, slot| {
            accept_control(stream, slot, &state, &dispatcher, &tracker);
        })
        .await;
        tracing::info!("shutting down");
        let _ = sd_notify::notify(&[sd_notify::NotifyState::Stopping]);
        drop(listener);
        stop_services(&state).await;
        if !activated {
            let _ = std::fs::remove_file(state.paths.socket());
        }
        state.broadcaster.emit(&Shutdown {});
        state.broadcaster.unregister_all();
        state.closing.cancel();
        tracker.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, tracker.wait())
            .await
            .is_err()
        {
            tracing::info!("closing connections that did not drain in time");
        }
        state.terminate.cancel();
        tracker.wait().await;
        drop(lock);
        tracing::info!("stopped");
    }
}

/// Starts what the person turned on: the gateway instances set to start with the daemon and the
/// plugins' enabled background services.
fn start_enabled_programs(state: &Arc<DaemonState>) {
    tokio::spawn(crate::gateways::auto_start(state.clone()));
    let services = state.clone();
    tokio::spawn(async move {
        crate::plugins::services::auto_start(
            services.supervisor.clone(),
            services.paths.clone(),
            services.brain.get().cloned(),
            services.service_start_errors.clone(),
        )
        .await;
    });
}

/// Stops the daemon's services in order: routines (no new one starts, running ones stop), open
/// questions and the running turn, the voice loop (microphone released, speech file finished),
/// then every supervised program.
async fn stop_services(state: &Arc<DaemonState>) {
    if let Some(routines) = state.routines.get() {
        routines.shutdown().await;
    }
    if let Some(brain) = state.brain.get() {
        // Each open question sends `permission_resolved` as it ends.
        brain.broker.shutdown();
        brain.core.interrupt();
    }
    let voice = state.clone();
    let _ = tokio::task::spawn_blocking(move || voice.voice.shutdown()).await;
    state.supervisor.shutdown().await;
}

/// Serves one accepted control-socket connection (at either path), unless its peer belongs to
/// a gateway's process tree: a gateway speaks through `sayri.sock` for its own instance only.
fn accept_control(
    stream: tokio::net::UnixStream,
    slot: listener::Slot,
    state: &Arc<DaemonState>,
    dispatcher: &Arc<Dispatcher>,
    tracker: &TaskTracker,
) {
    let pid = stream.peer_cred().ok().and_then(|c| c.pid());
    if let Some(id) = crate::gateways::peer::instance_of_process(&**state, pid) {
        tracing::warn!(
            "refused a connection from the process tree of gateway {id} to the control socket"
        );
        return;
    }
    let (state, dispatcher) = (state.clone(), dispatcher.clone());
    tracker.spawn(async move {
        let _slot = slot;
        connection::serve(stream, state, dispatcher).await;
    });
}

/// Runs the daemon in the foreground until `quit`, SIGTERM or SIGINT. Returns a one-line error
/// when it cannot start (invalid config with file:line, another daemon running, …).
///
/// `passed`: the listening sockets the service manager passed (socket activation) with their
/// names, empty when the daemon binds its own.
pub fn run_foreground(
    paths: Paths,
    passed: Vec<(std::os::fd::OwnedFd, String)>,
) -> Result<(), DaemonError> {
    crate::footprint::limit_malloc_arenas();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return Err(DaemonError::Listen(ListenError::Io {
                what: "start the async runtime for",
                path: paths.socket(),
                source: e,
            }));
        }
    };
    rt.block_on(async move {
        paths.ensure_dirs()?;
        let (config, _existed) = config_file::load(&paths.config_file())?;
        let daemon = Daemon::bind_passed(paths, config, default_dispatcher(), passed)?;
        let state = daemon.state();
        tokio::spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let (Ok(mut term), Ok(mut int)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) else {
                tracing::warn!("cannot install signal handlers; stop the daemon with `sayri quit`");
                return;
            };
            tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM received"),
                _ = int.recv() => tracing::info!("SIGINT received"),
            }
            state.request_shutdown();
        });
        daemon.run().await;
        Ok(())
    })
}
