//! The daemon's brain: the one [`SayriCore`] and the adapters wired into its ports.
//!
//! | port | adapter |
//! |---|---|
//! | `ChatModel` | [`ReloadableModel`] around `sayri_llm::OpenAiClient` (rebuilt on `provider.*` changes; agents with their own `model.base_url` get a client from [`endpoints::AgentEndpoints`]) |
//! | `Sandbox` | [`SecretsSandbox`] around `sayri_sandbox::LinuxSandbox` (adds the agent's allowed secrets) |
//! | `PermissionGate` | `sayri_core::engine::rules_gate::RulesGate` with the `PermissionBroker` |
//! | `SessionStore`, `ApprovalStore` | `sayri_store::Store` (`$STATE/sessions.db`, redacting what it writes) |
//! | `Redactor` | `sayri_vault::SharedRedactor` (every vault secret + the provider key) |
//! | `Clock` | [`SystemClock`] |
//! | `Entropy` | [`adapters::OsEntropy`] (the operating system's random numbers, through `uuid`) |
//!
//! Events of the core and of the broker go to every IPC client through the [`Broadcaster`],
//! redacted ([`BroadcastSink`]); the broker redacts its cards. When secrets change, stored rows
//! that hold one are rewritten ([`crate::stored_secrets`]).
//!
//! * [`adapters`] — the adapter types above.
//! * [`settings`] — how `sayri.toml` maps onto adapter and engine settings.
//! * Policies are loaded by [`crate::policies`], profiles by [`crate::agents`] — the same
//!   loaders `sayri permissions check` uses.
//!
//! [`Brain::build`] runs in named steps: open the store, open the vault and move a plaintext
//! provider key into it, build the adapters, load the policies, build engine and core, and
//! start the sandbox probe in the background.

pub mod adapters;
pub mod endpoints;
pub mod locked_vault;
pub mod settings;

use crate::agents::FileAgents;
use crate::bus::Broadcaster;
use crate::local_model::LocalModel;
use crate::offload::OffloadedStore;
use crate::policies;
use crate::stored_secrets;
use crate::supervisor::Supervisor;
pub use adapters::{BroadcastSink, ReloadableModel, SecretsSandbox, SystemClock, build_model};
use sayri_client::paths::Paths;
use sayri_core::assistant::SayriCore;
use sayri_core::domain::config::Config;
use sayri_core::engine::broker::PermissionBroker;
use sayri_core::engine::rules_gate::RulesGate;
use sayri_core::engine::{AgentEngine, EnginePorts};
use sayri_core::ports::{Clock, Redactor};
use sayri_core::sync::lock;
use sayri_sandbox::LinuxSandbox;
use sayri_store::Store;
use sayri_vault::{KeySource, SharedRedactor, Vault, VaultPaths};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// Name under which the provider API key lives in the vault.
pub const PROVIDER_KEY: &str = "PROVIDER_API_KEY";

/// Why the brain could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BrainError {
    /// The session database.
    #[error("cannot open the session database {path}: {message}")]
    Store {
        /// Database file.
        path: PathBuf,
        /// What went wrong and what to do.
        message: String,
    },
    /// Anything else that stops start-up, already phrased for the user.
    #[error("{0}")]
    Other(String),
}

/// Everything the daemon's command handlers need.
pub struct Brain {
    /// The one core.
    pub core: SayriCore,
    /// Open permission questions.
    pub broker: Arc<PermissionBroker>,
    /// The permission gate (policies can be reloaded).
    pub gate: Arc<RulesGate>,
    /// Sessions, messages, approvals, preferences.
    pub store: Arc<Store>,
    /// The vault; `None` when it could not be opened (reason in `vault_error`).
    pub vault: Arc<Mutex<Option<Vault>>>,
    /// Why the vault is unavailable.
    pub vault_error: Option<String>,
    /// Redacts every secret (vault values and the provider key).
    pub redactor: SharedRedactor,
    /// The sandbox (for `status`).
    pub sandbox: Arc<LinuxSandbox>,
    /// What each sandbox level can guarantee here, probed once in the background at start
    /// (`Err` with the reason when the probe failed; unset while it runs).
    pub sandbox_report: SandboxReport,
    /// The provider client slot.
    pub model: Arc<ReloadableModel>,
    /// Agent profiles on disk.
    pub agents: Arc<FileAgents>,
    /// The local model server (`provider.local_model`), a supervised child.
    pub local_model: Arc<LocalModel>,
    /// The user's MCP servers as turns use them (for `status`).
    pub mcp: Arc<crate::mcp_tools::McpService>,
}

impl Brain {
    /// Builds the brain. Opens the database and the vault, moves a plaintext provider key from
    /// the config into the vault (the caller then rewrites the config file: `migrated_key` is
    /// returned true), wires the adapters, and starts the sandbox probe in the background.
    ///
    /// # Errors
    /// The database cannot be opened, a policy file is unreadable or malformed, or the
    /// configured default agent is invalid.
    pub fn build(
        paths: &Paths,
        cfg: &Config,
        broadcaster: Broadcaster,
        supervisor: Supervisor,
    ) -> Result<(Brain, bool), BrainError> {
        let secrets = Secrets::open(paths, cfg);
        let redactor_port: Arc<dyn Redactor> = Arc::new(secrets.redactor.clone());
        let store = open_store(paths, redactor_port.clone())?;
        let local_model = LocalModel::new(paths.clone(), supervisor, redactor_port.clone());
        local_model.apply(cfg);
        let model = Arc::new(ReloadableModel::new(provider_model(
            &local_model,
            cfg,
            secrets.provider_key.clone(),
            redactor_port.clone(),
        )));
        let sandbox = Arc::new(LinuxSandbox::new(settings::sandbox_settings(paths, cfg)));
        let agents = Arc::new(FileAgents::new(paths.agents_dir()));
        let vault = Arc::new(Mutex::new(secrets.vault));
        model.set_endpoints(Arc::new(endpoints::AgentEndpoints::new(
            cfg,
            vault.clone(),
            redactor_port.clone(),
        )));
        let sink = BroadcastSink::new(broadcaster, secrets.redactor.clone());
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        // The core reaches the database only through this: every call off the async threads.
        let offloaded = Arc::new(OffloadedStore(store.clone()));
        let broker = Arc::new(
            PermissionBroker::new(Arc::new(sink.clone()), offloaded.clone(), clock.clone())
                .with_timeout(settings::ask_timeout(cfg))
                .with_redactor(redactor_port.clone()),
        );
        let policies = policies::load_for(cfg).map_err(|e| BrainError::Other(e.to_string()))?;
        let gate = Arc::new(RulesGate::new(
            policies,
            offloaded.clone(),
            broker.clone(),
            clock.clone(),
        ));
        let engine = Arc::new(AgentEngine::new(
            EnginePorts {
                model: model.clone(),
                sandbox: Arc::new(SecretsSandbox {
                    inner: sandbox.clone(),
                    vault: vault.clone(),
                    vault_error: secrets.vault_error.clone(),
                    redactor: secrets.redactor.clone(),
                    store: store.clone(),
                }),
                gate: gate.clone(),
                redactor: redactor_port,
                store: offloaded,
                clock,
                entropy: Arc::new(adapters::OsEntropy),
            },
            settings::engine_settings(cfg),
        ));
        engine.set_skills(Arc::new(crate::skills::Skills::new(paths.skills_dir())));
        engine.set_memory(store.clone());
        let mcp = Arc::new(crate::mcp_tools::McpService::new(
            &paths.config_dir,
            &paths.state_dir,
            sandbox.clone(),
            vault.clone(),
        ));
        engine.set_mcp(mcp.clone());
        let core = SayriCore::new(
            engine,
            agents.clone(),
            Arc::new(sink),
            &cfg.agent.default_agent,
        )
        .map_err(|e| BrainError::Other(e.to_string()))?;
        // A value set while the daemon was not running (or before this version) is rewritten
        // out of the stored rows, off the start-up path.
        stored_secrets::spawn_rewrite(store.clone(), vault.clone(), secrets.redactor.clone(), true);
        let brain = Brain {
            core,
            broker,
            gate,
            store,
            vault,
            vault_error: secrets.vault_error,
            redactor: secrets.redactor,
            sandbox_report: spawn_sandbox_probe(&sandbox),
            sandbox,
            model,
            agents,
            local_model,
            mcp,
        };
        Ok((brain, secrets.migrated))
    }

    /// Runs `f` with the store off the async worker threads ([`crate::offload::blocking`]):
    /// the way handlers and services call the store (`brain.db(|s| s.routines())`).
    pub fn db<T>(&self, f: impl FnOnce(&Store) -> T) -> T {
        crate::offload::store(&self.store, f)
    }

    /// Locks the vault slot.
    pub fn vault(&self) -> MutexGuard<'_, Option<Vault>> {
        lock(&self.vault)
    }

    /// The provider key from the vault, if any.
    pub fn provider_key(&self) -> Option<String> {
        self.vault()
            .as_ref()
            .and_then(|v| v.get(PROVIDER_KEY).map(|k| k.to_string()))
    }

    /// Rewrites the stored rows that hold a secret the redactor knows (blocking; see
    /// [`stored_secrets`]). `None` when the vault is unavailable or the store failed (logged).
    pub fn rewrite_stored_secrets(&self) -> Option<sayri_store::RewriteReport> {
        stored_secrets::rewrite_daemon(&self.store, &self.vault, &self.redactor, false)
    }

    /// [`Brain::rewrite_stored_secrets`] in the background (for callers that cannot wait).
    pub fn spawn_rewrite_stored_secrets(&self) {
        stored_secrets::spawn_rewrite(
            self.store.clone(),
            self.vault.clone(),
            self.redactor.clone(),
            false,
        );
    }

    /// Re-reads secrets: refreshes the redactor and the provider client after a vault change.
    /// Call [`Brain::rewrite_stored_secrets`] next (off the async threads) so rows stored
    /// before are rewritten too.
    pub fn secrets_changed(&self, cfg: &Config) {
        let key = self.provider_key();
        {
            let guard = self.vault();
            self.redactor
                .replace(redactor_for(guard.as_ref(), key.as_deref()));
        }
        self.model.replace(provider_model(
            &self.local_model,
            cfg,
            key,
            Arc::new(self.redactor.clone()),
        ));
    }

    /// Applies a new config (provider, engine settings, policies).
    pub fn config_changed(&self, cfg: &Config) {
        self.local_model.apply(cfg);
        self.model.replace(provider_model(
            &self.local_model,
            cfg,
            self.provider_key()
                .or_else(|| Some(cfg.provider.api_key.clone()).filter(|k| !k.is_empty())),
            Arc::new(self.redactor.clone()),
        ));
        if let Some(e) = self.model.endpoints() {
            e.config_changed(cfg);
        }
        self.core
            .engine()
            .set_settings(settings::engine_settings(cfg));
        match policies::load_for(cfg) {
            Ok(p) => self.gate.set_policies(p),
            Err(e) => tracing::error!("policies not reloaded: {e}"),
        }
    }
}

/// The provider's model: the local model server when `provider.local_model` is set, else the
/// client of `provider.base_url`.
fn provider_model(
    local: &Arc<LocalModel>,
    cfg: &Config,
    key: Option<String>,
    redactor: Arc<dyn Redactor>,
) -> Arc<dyn sayri_core::ports::ChatModel> {
    if cfg.provider.local_model.is_empty() {
        build_model(cfg, key, redactor)
    } else {
        local.chat(cfg)
    }
}

/// Opens and checks `$STATE/sessions.db`; every text it writes passes `redactor`. A corrupt
/// file does not stop the daemon: the store refuses every call with a message naming the file
/// and `sayri db recover` (said once here, in the log).
fn open_store(paths: &Paths, redactor: Arc<dyn Redactor>) -> Result<Arc<Store>, BrainError> {
    let db = paths.database();
    Store::open_checked(&db)
        .inspect(|s| {
            if let Some(why) = s.corruption() {
                tracing::error!("{why}");
            }
        })
        .map(|s| Arc::new(s.with_redactor(redactor)))
        .map_err(|e| BrainError::Store {
            path: db.clone(),
            message: e.to_string(),
        })
}

/// The vault, the provider key and the redactor that knows every secret.
struct Secrets {
    vault: Option<Vault>,
    vault_error: Option<String>,
    provider_key: Option<String>,
    redactor: SharedRedactor,
    /// A plaintext `provider.api_key` from the config was stored in the vault.
    migrated: bool,
}

impl Secrets {
    /// Opens the vault (an unavailable vault is logged and reported, not fatal), moves a
    /// plaintext provider key into it, and builds the redactor.
    fn open(paths: &Paths, cfg: &Config) -> Secrets {
        let (mut vault, vault_error) = match Vault::open(
            VaultPaths::new(&paths.config_dir, &paths.state_dir),
            KeySource::Auto,
        ) {
            Ok(v) => {
                if let Some(note) = v.status().creation_note() {
                    tracing::info!("{note}");
                }
                (Some(v), None)
            }
            Err(e) => {
                tracing::error!("vault unavailable: {e}");
                (None, Some(e.to_string()))
            }
        };
        let migrated = migrate_provider_key(vault.as_mut(), cfg);
        let provider_key = vault
            .as_ref()
            .and_then(|v| v.get(PROVIDER_KEY).map(|k| k.to_string()))
            .or_else(|| Some(cfg.provider.api_key.clone()).filter(|k| !k.is_empty()));
        let redactor = SharedRedactor::new(redactor_for(vault.as_ref(), provider_key.as_deref()));
        Secrets {
            vault,
            vault_error,
            provider_key,
            redactor,
            migrated,
        }
    }
}

/// Copies a plaintext `provider.api_key` from the config into the vault. Returns whether it was
/// stored (the caller then removes it from `sayri.toml`); without a vault it stays in the file.
fn migrate_provider_key(vault: Option<&mut Vault>, cfg: &Config) -> bool {
    if cfg.provider.api_key.is_empty() {
        return false;
    }
    let Some(vault) = vault else {
        tracing::warn!("provider.api_key stays in sayri.toml: the vault is unavailable");
        return false;
    };
    match vault.set(PROVIDER_KEY, &cfg.provider.api_key, "LLM provider API key") {
        Ok(_) => true,
        Err(e) => {
            tracing::error!("could not move provider.api_key into the vault: {e}");
            false
        }
    }
}

/// What each sandbox level can guarantee here (`Err` with the reason when the probe failed;
/// unset while it runs).
pub type SandboxReport = Arc<std::sync::OnceLock<Result<sayri_sandbox::CapabilityReport, String>>>;

/// Probes the sandbox once, off the start-up path, so `status` shows an unavailable level up
/// front and not only when a command is refused. Unavailable levels are logged.
fn spawn_sandbox_probe(sandbox: &Arc<LinuxSandbox>) -> SandboxReport {
    let slot: SandboxReport = Arc::new(std::sync::OnceLock::new());
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return slot;
    };
    let (sb, out) = (sandbox.clone(), slot.clone());
    handle.spawn(async move {
        #[cfg(feature = "test-probe-gate")]
        probe_gate::wait().await;
        let r = sb.capabilities().await.map_err(|e| e.to_string());
        if let Ok(report) = &r {
            for l in report.levels.iter().filter(|l| !l.guaranteed) {
                tracing::warn!(
                    "sandbox level {} is unavailable on this machine: {}",
                    l.level,
                    l.missing.join("; ")
                );
            }
        }
        let _ = out.set(r);
    });
    slot
}

/// A hold on the sandbox probe for tests, compiled only with the `test-probe-gate` cargo feature
/// (which only the crate's own test build turns on): when `SAYRI_TEST_SANDBOX_PROBE_GATE` names a
/// file, the probe starts only once that file exists, so a test sees `status` while the probe
/// has not finished (`sandbox: {"probing": true}`) for as long as it wants, then releases it.
#[cfg(feature = "test-probe-gate")]
mod probe_gate {
    use std::time::Duration;

    /// How often the gate file is looked for.
    const POLL: Duration = Duration::from_millis(20);

    /// Returns at once without the variable; otherwise once the file it names exists.
    pub async fn wait() {
        let Some(gate) = std::env::var_os("SAYRI_TEST_SANDBOX_PROBE_GATE") else {
            return;
        };
        let gate = std::path::PathBuf::from(gate);
        tracing::warn!(
            "the sandbox probe waits for the TEST GATE {} to exist",
            gate.display()
        );
        while !gate.exists() {
            tokio::time::sleep(POLL).await;
        }
    }
}

fn redactor_for(vault: Option<&Vault>, provider_key: Option<&str>) -> sayri_vault::SecretRedactor {
    let base = match vault {
        Some(v) => v.redactor(),
        None => sayri_vault::SecretRedactor::default(),
    };
    match provider_key {
        Some(k) if k.len() >= 4 && vault.and_then(|v| v.get(PROVIDER_KEY)).is_none() => {
            base.with_extra(PROVIDER_KEY, k)
        }
        _ => base,
    }
}
