//! Channel gateways in the daemon: the GatewaySupervisor (instances run as supervised child
//! programs), the legacy socket `sayri.sock` they talk to, and the one place where their
//! updates are authorised.
//!
//! * [`launch`] — an instance becomes a [`ChildSpec`](crate::supervisor::ChildSpec): the program
//!   `sayri-gateway-<plugin>` (next to `sayri`, else on `PATH`), its options as arguments, only
//!   its own secrets from the vault through the environment.
//! * [`Gateways`] — start, stop, list, delete, auto-start; PINs and the refusal limit.
//! * [`peer`] — which instance a connecting process belongs to (its keeper is an ancestor).
//! * [`legacy`] — the `sayri.sock` listener: plain-text commands and JSON messages, one request
//!   per connection, the answer streamed as NDJSON until the turn ends.
//! * [`incoming`] — a message's path: instance, authorization (before any session, agent or
//!   model work), chat commands, the remote turn.
//! * [`replayed`] — the answer to an update, recorded so a restarted gateway gets it again
//!   instead of a second turn.
//! * [`alerts`] — a supervised child that fails, or a reply a gateway could not deliver,
//!   becomes an `error` event and a desktop notification.
//!
//! Rules a gateway process cannot change:
//! * It speaks for its own instance only: the daemon knows which instance a connection belongs
//!   to from the connecting process's ancestry, not from what the message says.
//! * Its turns run at most at the instance's level cap, with the instance's agents only.
//! * The daemon's control socket `sayri-daemon.sock` refuses it outright (it could otherwise
//!   run turns of the desktop's active agent at that agent's level).

pub mod alerts;
pub mod incoming;
pub mod launch;
pub mod peer;
pub mod replayed;

use crate::brain::Brain;
use crate::bus::Broadcaster;
use crate::supervisor::{ChildState, ChildStatus, Supervisor, SupervisorError};
use sayri_client::paths::Paths;
use sayri_core::domain::config::Config;
use sayri_core::domain::gateway::instance::DEFAULT_ID;
use sayri_core::domain::gateway::{GatewayInstance, PinBook, PinPolicy, ReplyLimiter};
use sayri_core::ports::Clock;
use sayri_core::sync::lock;
use sayri_protocol::ProtocolError;
use sayri_protocol::reply::gateways::{GatewayEntry, OriginalInstanceNames};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// What the gateways need of the daemon that runs them: the brain (store, vault, remote
/// turns), the supervisor their programs run under, their own shared state, the directories,
/// the event bus, the settings and the shutdown signal. The daemon's state implements it; the
/// gateways see nothing else of the server.
pub trait Host: Send + Sync {
    /// The brain, or why this daemon runs without one.
    ///
    /// # Errors
    /// An `internal` error for a daemon started without a brain.
    fn brain(&self) -> Result<&Arc<Brain>, ProtocolError>;
    /// The supervisor of child programs.
    fn supervisor(&self) -> &Supervisor;
    /// The gateways' shared state: pairing PINs, refusal limits, per-chat locks.
    fn gateways(&self) -> &Gateways;
    /// Sayri's directories.
    fn paths(&self) -> &Paths;
    /// The event bus (every connected client).
    fn bus(&self) -> &Broadcaster;
    /// A copy of the current settings.
    fn config(&self) -> Config;
    /// Cancelled when the daemon shuts down.
    fn shutdown(&self) -> &CancellationToken;
}

/// Prefix of the supervisor's name for an instance's process (`gateway-<id>`; its log is
/// `$STATE/logs/gateway-<id>.log`).
pub const CHILD_PREFIX: &str = "gateway-";

/// The supervised child's name of instance `id`.
pub fn child_name(id: &str) -> String {
    format!("{CHILD_PREFIX}{id}")
}

/// The instance id of a supervised child's name, if it is a gateway.
pub fn instance_of_child(name: &str) -> Option<&str> {
    name.strip_prefix(CHILD_PREFIX)
}

/// What the daemon remembers of an instance between events (not stored).
#[derive(Debug, Clone, Default)]
struct Notes {
    /// Why the last start request failed before a process ran (a missing secret, …).
    start_error: Option<String>,
    /// The last reply the gateway reported it could not deliver.
    delivery_error: Option<String>,
    /// Replies waiting in the gateway's outbox, as it last reported.
    pending_replies: u64,
    /// When its next delivery attempt is due, Unix seconds.
    next_retry_at: Option<f64>,
}

/// One lock per (instance id, chat id).
type ChatLocks = HashMap<(String, String), Arc<tokio::sync::Mutex<()>>>;

/// The gateways' shared state in the daemon ([`Host::gateways`]).
#[derive(Default)]
pub struct Gateways {
    pins: Mutex<PinBook>,
    refusals: Mutex<ReplyLimiter>,
    notes: Mutex<HashMap<String, Notes>>,
    /// One turn or chat command at a time per (instance, chat).
    chats: Mutex<ChatLocks>,
}

/// Errors of gateway operations, phrased for the user.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// No such instance.
    #[error("no gateway instance {0} (see `sayri gateway list`)")]
    Unknown(String),
    /// It cannot be started (program or secret missing, vault closed, …).
    #[error("{0}")]
    Start(String),
    /// The database failed.
    #[error("{0}")]
    Store(String),
    /// The supervisor refused.
    #[error(transparent)]
    Supervisor(#[from] SupervisorError),
}

impl Gateways {
    /// Fresh state: no PINs, nobody refused yet.
    pub fn new() -> Self {
        Gateways {
            pins: Mutex::new(PinBook::new(PinPolicy::default())),
            ..Default::default()
        }
    }

    /// Makes a new pairing PIN for `instance` (6 random digits) valid from `now`; returns it
    /// and when it expires (Unix seconds).
    pub fn issue_pin(&self, instance: &str, now: f64) -> (String, f64) {
        let code = random_pin();
        let expires = lock(&self.pins).issue(instance, &code, now);
        (code, expires)
    }

    fn note(&self, id: &str, f: impl FnOnce(&mut Notes)) {
        f(lock(&self.notes).entry(id.to_string()).or_default());
    }

    /// Records a reply instance `id` could not deliver.
    pub fn delivery_failed(&self, id: &str, error: &str) {
        self.note(id, |n| n.delivery_error = Some(error.to_string()));
    }

    /// Records what instance `id` reported of its outbox.
    pub fn outbox_reported(&self, id: &str, pending: u64, next_retry_at: Option<f64>) {
        self.note(id, |n| {
            n.pending_replies = pending;
            n.next_retry_at = next_retry_at;
        });
    }

    /// The lock serialising the turns and commands of one chat.
    fn chat_lock(&self, instance: &str, chat: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut chats = lock(&self.chats);
        // Locks nobody holds or waits for are dropped, so the map stays small.
        chats.retain(|_, l| Arc::strong_count(l) > 1);
        chats
            .entry((instance.to_string(), chat.to_string()))
            .or_default()
            .clone()
    }

    /// Forgets everything about instance `id` (it was deleted).
    fn forget(&self, id: &str) {
        lock(&self.pins).revoke(id);
        lock(&self.refusals).forget(id);
        lock(&self.notes).remove(id);
    }
}

/// Six random digits, uniformly drawn from the OS's random source (through a v4 UUID).
fn random_pin() -> String {
    loop {
        let b = uuid::Uuid::new_v4().into_bytes();
        let n = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        // Rejection sampling keeps every PIN equally likely.
        if n < u32::MAX - (u32::MAX % 1_000_000) {
            return format!("{:06}", n % 1_000_000);
        }
    }
}

fn store_err(e: impl std::fmt::Display) -> GatewayError {
    GatewayError::Store(e.to_string())
}

/// The instance `id` from the store; `default` exists unsaved as
/// [`GatewayInstance::implicit_default`] (original-wire messages off).
///
/// # Errors
/// Unknown id, or the database failed.
pub fn load(state: &dyn Host, id: &str) -> Result<GatewayInstance, GatewayError> {
    let brain = state.brain().map_err(|e| GatewayError::Store(e.message))?;
    brain
        .db(|s| s.gateway_instance(id))
        .map_err(store_err)?
        .or_else(|| (id == DEFAULT_ID).then(GatewayInstance::implicit_default))
        .ok_or_else(|| GatewayError::Unknown(id.to_string()))
}

/// Starts instance `id` unless it runs already. Returns its status and whether it was
/// already running (then nothing changed). One waiting to be restarted after a crash, failed
/// or stopped is started now.
///
/// # Errors
/// Unknown id, its program or a secret missing, the vault closed, the daemon shutting down.
pub async fn start(state: &dyn Host, id: &str) -> Result<(ChildStatus, bool), GatewayError> {
    load(state, id)?;
    let running = state
        .supervisor()
        .status(&child_name(id))
        .filter(|s| matches!(s.state, ChildState::Running | ChildState::Starting));
    match running {
        Some(status) => Ok((status, true)),
        None => Ok((restart(state, id).await?, false)),
    }
}

/// Starts instance `id`, stopping it first if it runs (its settings changed). Returns its
/// status.
///
/// # Errors
/// Unknown id, its program or a secret missing, the vault closed, the daemon shutting down.
pub async fn restart(state: &dyn Host, id: &str) -> Result<ChildStatus, GatewayError> {
    let inst = load(state, id)?;
    let spec = match launch::spec_for(state, &inst) {
        Ok(s) => s,
        Err(e) => {
            state
                .gateways()
                .note(id, |n| n.start_error = Some(e.clone()));
            return Err(GatewayError::Start(e));
        }
    };
    let name = child_name(id);
    if state
        .supervisor()
        .status(&name)
        .is_some_and(|s| !matches!(s.state, ChildState::Stopped | ChildState::Failed))
    {
        state.supervisor().stop(&name).await?;
    }
    let status = state.supervisor().start(spec)?;
    state.gateways().note(id, |n| {
        n.start_error = None;
        n.delivery_error = None;
    });
    tracing::info!("gateway {id}: started ({})", inst.plugin);
    Ok(status)
}

/// Stops instance `id` (SIGTERM, grace period, SIGKILL). Returns whether it was running (or
/// waiting to restart).
///
/// # Errors
/// Unknown id, or the database failed.
pub async fn stop(state: &dyn Host, id: &str) -> Result<bool, GatewayError> {
    load(state, id)?;
    state.gateways().note(id, |n| n.start_error = None);
    let name = child_name(id);
    let was_running = state
        .supervisor()
        .status(&name)
        .is_some_and(|s| !matches!(s.state, ChildState::Stopped | ChildState::Failed));
    match state.supervisor().stop(&name).await {
        Ok(_) => Ok(was_running),
        Err(SupervisorError::Unknown(_)) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Stops and deletes instance `id` with its peers and chats; unless `keep_secrets`, deletes
/// the vault secrets made for it. Returns the secrets deleted.
///
/// # Errors
/// Unknown id, or the database failed.
pub async fn delete(
    state: &dyn Host,
    id: &str,
    keep_secrets: bool,
) -> Result<Vec<String>, GatewayError> {
    let inst = load(state, id)?;
    let _ = state.supervisor().remove(&child_name(id)).await;
    let brain = state.brain().map_err(|e| GatewayError::Store(e.message))?;
    brain
        .db(|s| s.delete_gateway_instance(id))
        .map_err(store_err)?;
    state.gateways().forget(id);
    // Replies it had not delivered go with it.
    let dir = launch::state_dir(state.paths(), id);
    crate::offload::blocking(|| std::fs::remove_dir_all(dir)).ok();
    let mut deleted = Vec::new();
    if !keep_secrets {
        let prefix = GatewayInstance::own_secret_prefix(&inst.id);
        let mut guard = brain.vault();
        if let Some(vault) = guard.as_mut() {
            for key in inst.secrets.values().filter(|k| k.starts_with(&prefix)) {
                if let Ok(true) = vault.delete(key) {
                    deleted.push(key.clone());
                }
            }
        }
    }
    if !deleted.is_empty() {
        brain.secrets_changed(&state.config());
    }
    tracing::info!("gateway {id}: deleted");
    Ok(deleted)
}

/// Every instance with its process state, by id.
///
/// # Errors
/// The database failed or a row cannot be read.
pub fn list(state: &dyn Host) -> Result<Vec<GatewayEntry>, GatewayError> {
    let brain = state.brain().map_err(|e| GatewayError::Store(e.message))?;
    let (instances, peers) = brain
        .db(|s| Ok::<_, sayri_store::StoreError>((s.gateway_instances()?, s.peers()?)))
        .map_err(store_err)?;
    let notes = lock(&state.gateways().notes).clone();
    let dirs = crate::plugins::PluginDirs::from_env(state.paths());
    let found = crate::offload::blocking(|| crate::plugins::discover(&dirs));
    let auth_mode = |plugin: &str| match found.find(plugin) {
        Some(p) => p.auth_mode().to_string(),
        None if plugin == "telegram" => "pairing_otp".to_string(),
        None => "none".to_string(),
    };
    Ok(instances
        .into_iter()
        .map(|instance| {
            let name = child_name(&instance.id);
            let note = notes.get(&instance.id).cloned().unwrap_or_default();
            let status = state.supervisor().status(&name);
            let peers = peers
                .iter()
                .filter(|p| p.channel == instance.id && p.authorized)
                .count();
            let log_file = state.paths().logs_dir().join(format!("{name}.log"));
            let (state, last_error) = match (&status, &note.start_error) {
                (_, Some(e)) => (ChildState::Failed, Some(e.clone())),
                (Some(s), None) => (s.state, s.last_error.clone()),
                (None, None) => (ChildState::Stopped, None),
            };
            let running = matches!(
                state,
                ChildState::Starting | ChildState::Running | ChildState::Backoff
            );
            let original = OriginalInstanceNames {
                plugin_id: instance.plugin.clone(),
                agent_id: instance.agent.clone(),
                sandbox_level: instance.level_cap.name().to_string(),
                enabled: instance.auto_start,
                running,
                status: if running { "running" } else { "stopped" }.into(),
                auth_mode: auth_mode(&instance.plugin),
            };
            GatewayEntry {
                instance: crate::wire::gateway_instance(&instance),
                original,
                state: state.as_str().into(),
                pid: status.as_ref().and_then(|s| s.pid),
                restarts: status.as_ref().map_or(0, |s| s.restarts),
                last_error,
                restart_in_ms: status.as_ref().and_then(|s| s.restart_in_ms),
                log_file,
                peers: peers as u64,
                last_delivery_error: note.delivery_error,
                pending_replies: note.pending_replies,
                next_retry_at: note.next_retry_at,
            }
        })
        .collect())
}

/// Starts every instance marked `auto_start`; failures are logged and shown by
/// `gateway_list`.
pub async fn auto_start(state: Arc<dyn Host>) {
    let Ok(brain) = state.brain() else { return };
    let instances = match brain.db(|s| s.gateway_instances()) {
        Ok(i) => i,
        Err(e) => {
            crate::store_health::log_store_error(&brain.store, "gateways were not started", &e);
            return;
        }
    };
    for inst in instances.iter().filter(|i| i.auto_start) {
        if let Err(e) = start(&*state, &inst.id).await {
            tracing::error!("gateway {} was not started: {e}", inst.id);
        }
    }
}

/// `text` with every known secret replaced (`$SECRET:<KEY>`).
pub(crate) fn redacted(state: &dyn Host, text: &str) -> String {
    match state.brain() {
        Ok(b) => b.redactor.current().redact(text),
        Err(_) => text.to_string(),
    }
}

/// The current time as the daemon's clock gives it.
pub(crate) fn now() -> f64 {
    crate::brain::SystemClock.now_unix()
}
