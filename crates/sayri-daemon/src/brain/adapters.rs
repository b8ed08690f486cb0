//! The adapters the brain plugs into the core's ports: wall clock, event fan-out, the provider
//! client slot, and the sandbox that hands an agent its allowed secrets.

use crate::brain::endpoints::AgentEndpoints;
use crate::brain::{PROVIDER_KEY, redactor_for, settings};
use crate::bus::Broadcaster;
use crate::wire;
use futures::StreamExt;
use futures::future::BoxFuture;
use sayri_core::domain::config::Config;
use sayri_core::engine::broker::{PermissionRequest, PermissionSink};
use sayri_core::engine::{CoreEvent, EventSink};
use sayri_core::ports::{
    ChatError, ChatModel, ChatRequest, ChatStream, Clock, ExecRequest, ExecResult, ModelEndpoint,
    Redactor, Sandbox,
};
use sayri_core::sync::{lock, read, write};
use sayri_llm::OpenAiClient;
use sayri_protocol::event::AnyEvent;
use sayri_protocol::event::permissions::{PermissionRequested, PermissionResolved};
use sayri_sandbox::LinuxSandbox;
use sayri_vault::{SharedRedactor, Vault};
use serde_json::Value;
use std::sync::{Arc, Mutex, RwLock};
use tokio_util::sync::CancellationToken;

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

/// Randomness from the operating system (a version-4 UUID's random bits).
pub struct OsEntropy;

impl sayri_core::ports::Entropy for OsEntropy {
    fn nonce(&self) -> u64 {
        let (high, low) = uuid::Uuid::new_v4().as_u64_pair();
        high ^ low
    }
}

/// Sends core and broker events to every client, every string in them redacted (the engine and
/// the broker redact what they know to be command text or output; this catches the rest —
/// requests echoed in `user`, answers, errors). Never blocks (the broadcaster queues).
#[derive(Clone)]
pub struct BroadcastSink {
    broadcaster: Broadcaster,
    redactor: SharedRedactor,
}

impl BroadcastSink {
    /// A sink broadcasting through `broadcaster`, redacting with `redactor`.
    pub fn new(broadcaster: Broadcaster, redactor: SharedRedactor) -> Self {
        BroadcastSink {
            broadcaster,
            redactor,
        }
    }
}

/// Redacts every string inside `v`.
fn redact_strings(v: &mut Value, r: &sayri_vault::SecretRedactor) {
    match v {
        Value::String(s) => {
            let red = r.redact(s);
            if red != *s {
                *s = red;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| redact_strings(x, r)),
        Value::Object(m) => m.values_mut().for_each(|x| redact_strings(x, r)),
        _ => {}
    }
}

impl BroadcastSink {
    /// Broadcasts `event`, every string in it redacted (voice events: a secret read aloud is
    /// hidden in transcripts as in typed text).
    pub fn broadcast_redacted(&self, event: &AnyEvent) {
        let mut frame = match event.frame() {
            Ok(f) => f,
            Err(e) => {
                tracing::error!("cannot encode event {}: {e}", event.name());
                return;
            }
        };
        let r = self.redactor.current();
        if !r.is_empty() {
            frame
                .payload
                .values_mut()
                .for_each(|v| redact_strings(v, &r));
        }
        self.broadcaster.send_event(&frame);
    }
}

impl EventSink for BroadcastSink {
    fn emit(&self, event: CoreEvent) {
        let turn_ended = matches!(event, CoreEvent::Busy(false));
        self.broadcast_redacted(&wire::core_event(&event));
        if turn_ended {
            crate::footprint::release_freed_memory();
        }
    }
}

impl PermissionSink for BroadcastSink {
    fn permission_request(&self, request: &PermissionRequest) {
        self.broadcaster.emit(&PermissionRequested {
            request: wire::request(request),
        });
    }

    fn permission_resolved(&self, request_id: &str) {
        self.broadcaster.emit(&PermissionResolved {
            request_id: request_id.to_string(),
        });
    }
}

/// The provider client, rebuilt when `provider.*` settings or the provider key change; and,
/// once [`ReloadableModel::set_endpoints`] is called, the clients of agents with a model
/// endpoint of their own.
pub struct ReloadableModel {
    current: RwLock<Arc<dyn ChatModel>>,
    endpoints: std::sync::OnceLock<Arc<AgentEndpoints>>,
}

impl ReloadableModel {
    /// A model port over `client`.
    pub fn new(client: Arc<dyn ChatModel>) -> Self {
        ReloadableModel {
            current: RwLock::new(client),
            endpoints: std::sync::OnceLock::new(),
        }
    }

    /// Lets agents use their own endpoints (without it, such an agent's turn fails saying so).
    pub fn set_endpoints(&self, endpoints: Arc<AgentEndpoints>) {
        let _ = self.endpoints.set(endpoints);
    }

    /// The agents' endpoints, if set.
    pub fn endpoints(&self) -> Option<&Arc<AgentEndpoints>> {
        self.endpoints.get()
    }

    /// Replaces the client; running streams keep the old one.
    pub fn replace(&self, client: Arc<dyn ChatModel>) {
        *write(&self.current) = client;
    }

    fn get(&self) -> Arc<dyn ChatModel> {
        read(&self.current).clone()
    }
}

impl ChatModel for ReloadableModel {
    fn stream_chat(&self, request: ChatRequest) -> ChatStream {
        self.get().stream_chat(request)
    }

    fn context_window(&self, model: &str) -> BoxFuture<'static, Option<u32>> {
        self.get().context_window(model)
    }

    fn at_endpoint(&self, endpoint: &ModelEndpoint) -> Result<Arc<dyn ChatModel>, ChatError> {
        match self.endpoints.get() {
            Some(e) => e.model_for(endpoint),
            None => Err(ChatError::Config(format!(
                "this agent has a model endpoint of its own ({}), which this Sayri cannot use",
                endpoint.base_url
            ))),
        }
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

/// The provider client, built on first use: for an `https://` provider, creating the HTTP
/// client loads the system's CA certificates, which must not sit on the daemon's start-up
/// path (and a local `http://` provider never loads them at all).
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

    fn context_window(&self, model: &str) -> BoxFuture<'static, Option<u32>> {
        if let Some(built) = self.built.get() {
            return built.context_window(model);
        }
        let (built, build, model) = (self.built.clone(), self.build.clone(), model.to_string());
        Box::pin(async move {
            let m = tokio::task::spawn_blocking(move || build()).await.ok()?;
            built.get_or_init(|| m).clone().context_window(&model).await
        })
    }
}

/// Builds the provider client from the config and the key in the vault (lazily, see
/// [`LazyModel`]). A bad `provider.*` setting gives a model that fails every request with it.
pub fn build_model(
    cfg: &Config,
    key: Option<String>,
    redactor: Arc<dyn Redactor>,
) -> Arc<dyn ChatModel> {
    let cfg = cfg.clone();
    Arc::new(LazyModel {
        built: Arc::new(std::sync::OnceLock::new()),
        build: Arc::new(move || {
            let client = settings::client_config(&cfg, key.clone())
                .and_then(|c| OpenAiClient::new(c).map_err(|e| e.to_string()));
            match client {
                Ok(client) => Arc::new(client.with_redactor(redactor.clone())),
                Err(e) => Arc::new(BrokenModel(e)),
            }
        }),
    })
}

/// Adds to every command the secrets its agent may use, as environment variables: the names
/// travel in the request ([`ExecRequest::allowed_secrets`], from the profile the engine holds
/// for the turn — the profile is never re-read here), the values come from the vault. Nothing
/// else is inherited: the sandbox's environment policy starts from an allow-list.
///
/// Before every command the vault is re-read when another process (the `sayri vault` CLI)
/// changed it, and the redactor is rebuilt from it at once: a secret is never handed to a
/// command before the redactor knows it. Stored rows are then rewritten in the background. The
/// vault's file is read off the async worker threads ([`crate::offload::blocking`]).
///
/// While the vault cannot be opened, a command that names an allowed secret is refused and the
/// others run with a note (see [`super::locked_vault`]).
pub struct SecretsSandbox {
    /// The real sandbox.
    pub inner: Arc<LinuxSandbox>,
    /// The vault slot (`None` when unavailable: no secrets are added).
    pub vault: Arc<Mutex<Option<Vault>>>,
    /// Why the vault is unavailable (when the slot is `None`).
    pub vault_error: Option<String>,
    /// Rebuilt when the vault changed on disk.
    pub redactor: SharedRedactor,
    /// Rewritten (in the background) when the vault changed on disk.
    pub store: Arc<sayri_store::Store>,
}

/// What the vault gives a command (see [`SecretsSandbox::with_secrets`]).
enum VaultAnswer {
    /// Run it (its allowed secrets, if any, are in its environment).
    Run,
    /// The vault is locked: run it with a note saying why its secrets are missing.
    RunWithNote(String),
    /// The vault is locked and the command names an allowed secret: refuse it with this.
    Refuse(ExecResult),
}

impl SecretsSandbox {
    /// Re-reads the vault if it changed on disk, then adds the values of the request's allowed
    /// secrets to its environment. Blocks on the vault's file: call it through
    /// [`crate::offload::blocking`].
    fn with_secrets(&self, request: &mut ExecRequest) -> VaultAnswer {
        let allowed = &request.allowed_secrets;
        let mut guard = lock(&self.vault);
        let Some(vault) = guard.as_mut() else {
            if allowed.is_empty() {
                return VaultAnswer::Run;
            }
            let reason = self
                .vault_error
                .clone()
                .unwrap_or_else(|| "it could not be opened".into());
            let named = super::locked_vault::named_in(&request.command, allowed);
            if named.is_empty() {
                return VaultAnswer::RunWithNote(reason);
            }
            tracing::warn!(
                "refused a command of agent {} that needs {} while the vault is locked",
                request.agent_id,
                named.join(", ")
            );
            return VaultAnswer::Refuse(super::locked_vault::refusal(&named, &reason));
        };
        match vault.refresh() {
            Ok(true) => {
                let key = vault.get(PROVIDER_KEY);
                self.redactor
                    .replace(redactor_for(Some(vault), key.as_deref().map(|k| &**k)));
                crate::stored_secrets::spawn_rewrite(
                    self.store.clone(),
                    self.vault.clone(),
                    self.redactor.clone(),
                    false,
                );
            }
            Ok(false) => {}
            Err(e) => tracing::error!("vault not re-read, secrets unchanged: {e}"),
        }
        let values: Vec<(String, String)> = vault
            .env_for(allowed)
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect();
        request.env.extend(values);
        VaultAnswer::Run
    }
}

impl Sandbox for SecretsSandbox {
    fn run(
        &self,
        mut request: ExecRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ExecResult> {
        match crate::offload::blocking(|| self.with_secrets(&mut request)) {
            VaultAnswer::Run => self.inner.run(request, cancel),
            VaultAnswer::Refuse(refused) => Box::pin(async move { refused }),
            VaultAnswer::RunWithNote(reason) => {
                let allowed = request.allowed_secrets.clone();
                let run = self.inner.run(request, cancel);
                Box::pin(async move {
                    let mut result = run.await;
                    super::locked_vault::add_note(&mut result, &allowed, &reason);
                    result
                })
            }
        }
    }
}
