//! The daemon's brain: the one [`SayriCore`] and the adapters wired into its ports.
//!
//! | port | adapter |
//! |---|---|
//! | `ChatModel` | [`ReloadableModel`] around `sayri_llm::OpenAiClient` (rebuilt on `provider.*` changes) |
//! | `Sandbox` | [`SecretsSandbox`] around `sayri_sandbox::LinuxSandbox` (adds the agent's allowed secrets) |
//! | `PermissionGate` | `sayri_core::engine::rules_gate::RulesGate` with the `PermissionBroker` |
//! | `SessionStore`, `ApprovalStore` | `sayri_store::Store` (`$STATE/sessions.db`) |
//! | `Redactor` | `sayri_vault::SharedRedactor` (every vault secret + the provider key) |
//! | `Clock` | [`SystemClock`] |
//!
//! Events of the core and of the broker go to every IPC client through the [`Broadcaster`].

use crate::agents::FileAgents;
use crate::daemon::broadcast::Broadcaster;
use crate::paths::Paths;
use futures::StreamExt;
use futures::future::BoxFuture;
use sayri_core::assistant::SayriCore;
use sayri_core::domain::config::Config;
use sayri_core::domain::history::HistoryBudget;
use sayri_core::domain::permissions::PolicySet;
use sayri_core::engine::broker::{PermissionBroker, PermissionRequest, PermissionSink};
use sayri_core::engine::rules_gate::RulesGate;
use sayri_core::engine::{AgentEngine, CoreEvent, EnginePorts, EngineSettings, EventSink};
use sayri_core::ports::{
    ChatError, ChatModel, ChatRequest, ChatStream, Clock, ExecRequest, ExecResult, Redactor,
    Sandbox,
};
use sayri_llm::{ClientConfig, InlineThink, OpenAiClient};
use sayri_sandbox::{LinuxSandbox, LinuxSandboxSettings};
use sayri_store::Store;
use sayri_vault::{KeySource, SharedRedactor, Vault, VaultPaths};
use serde_json::{Map, Value};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

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

/// Wall-clock time.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_unix(&self) -> f64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    }
}

/// Sends core and broker events to every client. Never blocks (the broadcaster queues).
#[derive(Clone)]
pub struct BroadcastSink(pub Broadcaster);

fn as_map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => {
            let mut m = Map::new();
            m.insert("value".into(), other);
            m
        }
    }
}

impl EventSink for BroadcastSink {
    fn emit(&self, event: CoreEvent) {
        self.0.broadcast(event.name(), as_map(event.payload()));
    }
}

impl PermissionSink for BroadcastSink {
    fn permission_request(&self, request: &PermissionRequest) {
        let mut m = Map::new();
        m.insert(
            "request".into(),
            serde_json::to_value(request).unwrap_or(Value::Null),
        );
        self.0
            .broadcast(sayri_protocol::names::event::PERMISSION_REQUEST, m);
    }

    fn permission_resolved(&self, request_id: &str) {
        let mut m = Map::new();
        m.insert("request_id".into(), Value::String(request_id.to_string()));
        self.0
            .broadcast(sayri_protocol::names::event::PERMISSION_RESOLVED, m);
    }
}

/// The provider client, rebuilt when `provider.*` settings or the provider key change.
pub struct ReloadableModel {
    current: RwLock<Arc<dyn ChatModel>>,
}

impl ReloadableModel {
    /// A model port over `client`.
    pub fn new(client: Arc<dyn ChatModel>) -> Self {
        ReloadableModel {
            current: RwLock::new(client),
        }
    }

    /// Replaces the client; running streams keep the old one.
    pub fn replace(&self, client: Arc<dyn ChatModel>) {
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = client;
    }

    fn get(&self) -> Arc<dyn ChatModel> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl ChatModel for ReloadableModel {
    fn stream_chat(&self, request: ChatRequest) -> ChatStream {
        self.get().stream_chat(request)
    }
}

/// A model port that always fails with the same configuration error (bad `provider.*`).
struct BrokenModel(String);

impl ChatModel for BrokenModel {
    fn stream_chat(&self, _request: ChatRequest) -> ChatStream {
        Box::pin(futures::stream::once(futures::future::ready(Err(
            ChatError::Config(self.0.clone()),
        ))))
    }
}

/// The provider client, built on first use: creating the HTTP client loads the system's TLS
/// roots (about 100 ms and 10 MB), which must not sit on the daemon's start-up path.
struct LazyModel {
    built: Arc<std::sync::OnceLock<Arc<dyn ChatModel>>>,
    build: Arc<dyn Fn() -> Arc<dyn ChatModel> + Send + Sync>,
}

impl ChatModel for LazyModel {
    fn stream_chat(&self, request: ChatRequest) -> ChatStream {
        if let Some(model) = self.built.get() {
            return model.stream_chat(request);
        }
        let built = self.built.clone();
        let build = self.build.clone();
        let model = async move {
            let made = tokio::task::spawn_blocking(move || build()).await;
            match made {
                Ok(m) => built.get_or_init(|| m).clone(),
                Err(e) => Arc::new(BrokenModel(format!(
                    "could not start the model client: {e}"
                ))),
            }
        };
        Box::pin(futures::stream::once(model).flat_map(move |m| m.stream_chat(request.clone())))
    }
}

/// Builds the provider client from the config and the key in the vault (lazily, see
/// [`LazyModel`]).
pub fn build_model(
    cfg: &Config,
    key: Option<String>,
    redactor: Arc<dyn Redactor>,
) -> Arc<dyn ChatModel> {
    let cfg = cfg.clone();
    Arc::new(LazyModel {
        built: Arc::new(std::sync::OnceLock::new()),
        build: Arc::new(move || build_model_now(&cfg, key.clone(), redactor.clone())),
    })
}

fn build_model_now(
    cfg: &Config,
    key: Option<String>,
    redactor: Arc<dyn Redactor>,
) -> Arc<dyn ChatModel> {
    let mut headers = Vec::new();
    for line in &cfg.provider.extra_headers {
        match sayri_llm::parse_header_line(line) {
            Ok(h) => headers.push(h),
            Err(e) => {
                return Arc::new(BrokenModel(format!(
                    "provider.extra_headers: {e} — fix it with `sayri config set provider.extra_headers …`"
                )));
            }
        }
    }
    let secs = |n: i64, dflt: u64| {
        Duration::from_secs(u64::try_from(n).ok().filter(|n| *n > 0).unwrap_or(dflt))
    };
    let config = ClientConfig {
        base_url: cfg.provider.base_url.clone(),
        api_key: key.filter(|k| !k.is_empty()),
        connect_timeout: secs(cfg.provider.connect_timeout, 10),
        first_byte_timeout: secs(cfg.provider.timeout, 120),
        idle_timeout: secs(cfg.provider.idle_timeout, 60),
        retries: u32::try_from(cfg.provider.retries).unwrap_or(0),
        extra_headers: headers,
        native_tools: cfg.provider.native_tools,
        // Stream answer text at once; `<think>` tags are still split off (a missing opening
        // tag cannot be detected without holding the whole answer back).
        inline_think: InlineThink::Explicit,
        ..ClientConfig::default()
    };
    match OpenAiClient::new(config) {
        Ok(client) => Arc::new(client.with_redactor(redactor)),
        Err(e) => Arc::new(BrokenModel(e.to_string())),
    }
}

/// Engine settings from the config.
pub fn engine_settings(cfg: &Config) -> EngineSettings {
    let history_tokens = usize::try_from(cfg.agent.history_tokens)
        .unwrap_or(2500)
        .max(200);
    EngineSettings {
        model: cfg.provider.model.clone(),
        max_tokens: u32::try_from(cfg.provider.max_tokens)
            .ok()
            .filter(|n| *n > 0),
        strip_patterns: cfg.provider.strip_patterns.clone(),
        history: HistoryBudget {
            verbatim_tokens: history_tokens * 4 / 5,
            summary_tokens: history_tokens / 5,
        },
        output_limit: usize::try_from(cfg.agent.output_limit)
            .unwrap_or(65536)
            .max(1024),
        ..EngineSettings::default()
    }
}

/// Adds to every command the secrets its agent may use (`allowed_secrets`), as environment
/// variables. Nothing else is inherited: the sandbox's environment policy starts from an
/// allow-list.
///
/// Before every command the vault is re-read when another process (the `sayri vault` CLI)
/// changed it, and the redactor is rebuilt from it at once: a secret is never handed to a
/// command before the redactor knows it.
pub struct SecretsSandbox {
    inner: Arc<LinuxSandbox>,
    agents: Arc<FileAgents>,
    vault: Arc<Mutex<Option<Vault>>>,
    redactor: SharedRedactor,
}

impl Sandbox for SecretsSandbox {
    fn run(
        &self,
        mut request: ExecRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ExecResult> {
        let allowed = match self.agents.load(&request.agent_id) {
            Ok(Some(profile)) => profile.allowed_secrets,
            _ => Vec::new(),
        };
        {
            let mut guard = lock(&self.vault);
            if let Some(vault) = guard.as_mut() {
                match vault.refresh() {
                    Ok(true) => {
                        let key = vault.get(PROVIDER_KEY);
                        self.redactor
                            .replace(redactor_for(Some(vault), key.as_deref().map(|k| &**k)));
                    }
                    Ok(false) => {}
                    Err(e) => tracing::error!("vault not re-read, secrets unchanged: {e}"),
                }
                for (k, v) in vault.env_for(&allowed) {
                    request.env.push((k, v.to_string()));
                }
            }
        }
        self.inner.run(request, cancel)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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
    pub sandbox_report: Arc<std::sync::OnceLock<Result<sayri_sandbox::CapabilityReport, String>>>,
    /// The provider client slot.
    pub model: Arc<ReloadableModel>,
    /// Agent profiles on disk.
    pub agents: Arc<FileAgents>,
}

/// Sandbox settings for the daemon: the helper is this very binary (`sayri __sandbox-exec`).
pub fn sandbox_settings(paths: &Paths, cfg: &Config) -> LinuxSandboxSettings {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("sayri"));
    let mut s =
        LinuxSandboxSettings::from_env(exe, vec![OsString::from(sayri_sandbox::EXEC_HELPER_ARG)]);
    s.state_dir = paths.state_dir.clone();
    s.config_dir = paths.config_dir.clone();
    s.extra_deny_read = cfg.sandbox.deny_read.iter().map(PathBuf::from).collect();
    s.default_output_limit = usize::try_from(cfg.agent.output_limit)
        .unwrap_or(65536)
        .max(1024);
    s
}

/// System policy files: they always apply, whatever `permissions.policy_files` says (a user
/// setting — or a command running as the user — cannot switch the administrator's policy off).
pub const SYSTEM_POLICY_FILES: [&str; 2] =
    ["/usr/share/sayri/policies.json", "/etc/sayri/policies.json"];

/// Reads the system policy files and those named by `permissions.policy_files` (missing files
/// are skipped; an unreadable or malformed one is an error naming it). Policies only tighten.
pub fn load_policies(cfg: &Config) -> Result<PolicySet, String> {
    let mut texts = Vec::new();
    let mut files: Vec<String> = SYSTEM_POLICY_FILES.iter().map(|s| s.to_string()).collect();
    for f in &cfg.permissions.policy_files {
        if !files.contains(f) {
            files.push(f.clone());
        }
    }
    for path in &files {
        match std::fs::read_to_string(path) {
            Ok(text) => texts.push((path.clone(), text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot read policy file {path}: {e}")),
        }
    }
    PolicySet::load(texts.iter().map(|(p, t)| (p.as_str(), t.as_str()))).map_err(|e| e.to_string())
}

impl Brain {
    /// Builds the brain. Opens the database and the vault, migrates a plaintext provider key
    /// from the config into the vault (the caller rewrites the config file when
    /// `migrated_key` is returned true).
    pub fn build(
        paths: &Paths,
        cfg: &Config,
        broadcaster: Broadcaster,
    ) -> Result<(Brain, bool), BrainError> {
        let t0 = std::time::Instant::now();
        let db = paths.state_dir.join("sessions.db");
        let store = Arc::new(Store::open(&db).map_err(|e| BrainError::Store {
            path: db.clone(),
            message: e.to_string(),
        })?);

        tracing::debug!("brain: store open in {:?}", t0.elapsed());
        let (mut vault, vault_error) = match Vault::open(
            VaultPaths::new(&paths.config_dir, &paths.state_dir),
            KeySource::Auto,
        ) {
            Ok(v) => (Some(v), None),
            Err(e) => {
                tracing::error!("vault unavailable: {e}");
                (None, Some(e.to_string()))
            }
        };
        tracing::debug!("brain: vault open at {:?}", t0.elapsed());
        let mut migrated = false;
        if !cfg.provider.api_key.is_empty() {
            match vault.as_mut() {
                Some(v) => match v.set(PROVIDER_KEY, &cfg.provider.api_key, "LLM provider API key")
                {
                    Ok(_) => migrated = true,
                    Err(e) => {
                        tracing::error!("could not move provider.api_key into the vault: {e}")
                    }
                },
                None => {
                    tracing::warn!("provider.api_key stays in sayri.toml: the vault is unavailable")
                }
            }
        }
        let provider_key = vault
            .as_ref()
            .and_then(|v| v.get(PROVIDER_KEY).map(|k| k.to_string()))
            .or_else(|| Some(cfg.provider.api_key.clone()).filter(|k| !k.is_empty()));
        let redactor = SharedRedactor::new(redactor_for(vault.as_ref(), provider_key.as_deref()));
        let redactor_port: Arc<dyn Redactor> = Arc::new(redactor.clone());

        tracing::debug!("brain: redactor at {:?}", t0.elapsed());
        let model = Arc::new(ReloadableModel::new(build_model(
            cfg,
            provider_key,
            redactor_port.clone(),
        )));
        let sandbox = Arc::new(LinuxSandbox::new(sandbox_settings(paths, cfg)));
        let agents = Arc::new(FileAgents::new(paths.config_dir.join("agents")));
        let vault = Arc::new(Mutex::new(vault));

        let sink = BroadcastSink(broadcaster);
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let timeout = Duration::from_secs(
            u64::try_from(cfg.permissions.ask_timeout)
                .unwrap_or(120)
                .max(1),
        );
        let broker = Arc::new(
            PermissionBroker::new(Arc::new(sink.clone()), store.clone(), clock.clone())
                .with_timeout(timeout),
        );
        tracing::debug!("brain: model+sandbox+broker at {:?}", t0.elapsed());
        let policies = load_policies(cfg).map_err(BrainError::Other)?;
        let gate = Arc::new(RulesGate::new(
            policies,
            store.clone(),
            broker.clone(),
            clock.clone(),
        ));

        let engine = Arc::new(AgentEngine::new(
            EnginePorts {
                model: model.clone(),
                sandbox: Arc::new(SecretsSandbox {
                    inner: sandbox.clone(),
                    agents: agents.clone(),
                    vault: vault.clone(),
                    redactor: redactor.clone(),
                }),
                gate: gate.clone(),
                redactor: redactor_port,
                store: store.clone(),
                clock,
            },
            engine_settings(cfg),
        ));
        tracing::debug!("brain: engine at {:?}", t0.elapsed());
        let core = SayriCore::new(
            engine,
            agents.clone(),
            Arc::new(sink),
            &cfg.agent.default_agent,
        )
        .map_err(|e| BrainError::Other(e.to_string()))?;
        tracing::debug!("brain: core at {:?}", t0.elapsed());
        // Probe the kernel off the start-up path; `status` shows the result (case 34: an
        // unavailable level is visible up front, not only when a command is refused).
        let sandbox_report = Arc::new(std::sync::OnceLock::new());
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let (sb, slot) = (sandbox.clone(), sandbox_report.clone());
            handle.spawn(async move {
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
                let _ = slot.set(r);
            });
        }
        Ok((
            Brain {
                core,
                broker,
                gate,
                store,
                vault,
                vault_error,
                redactor,
                sandbox,
                sandbox_report,
                model,
                agents,
            },
            migrated,
        ))
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

    /// Re-reads secrets: refreshes the redactor and the provider client after a vault change.
    pub fn secrets_changed(&self, cfg: &Config) {
        let key = self.provider_key();
        {
            let guard = self.vault();
            self.redactor
                .replace(redactor_for(guard.as_ref(), key.as_deref()));
        }
        self.model
            .replace(build_model(cfg, key, Arc::new(self.redactor.clone())));
    }

    /// Applies a new config (provider, engine settings, policies).
    pub fn config_changed(&self, cfg: &Config) {
        self.model.replace(build_model(
            cfg,
            self.provider_key()
                .or_else(|| Some(cfg.provider.api_key.clone()).filter(|k| !k.is_empty())),
            Arc::new(self.redactor.clone()),
        ));
        self.core.engine().set_settings(engine_settings(cfg));
        match load_policies(cfg) {
            Ok(p) => self.gate.set_policies(p),
            Err(e) => tracing::error!("policies not reloaded: {e}"),
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
