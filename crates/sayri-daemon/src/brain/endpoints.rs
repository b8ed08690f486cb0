//! Agents with a model of their own (`model.base_url` in their profile): one provider client
//! per endpoint and key, built like the provider's (timeouts and retries of `provider.*`) but
//! without the provider's extra headers, and with the key named by the agent's
//! `model.api_key_secret` read from the vault — never the provider's key, which only goes to
//! `provider.base_url`.

use crate::brain::adapters::build_model;
use sayri_core::domain::config::Config;
use sayri_core::ports::{ChatError, ChatModel, ModelEndpoint, Redactor};
use sayri_core::sync::{lock, read, write};
use sayri_vault::Vault;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, RwLock};

/// Clients for agents' own endpoints, cached per endpoint and key.
pub struct AgentEndpoints {
    cfg: RwLock<Config>,
    vault: Arc<Mutex<Option<Vault>>>,
    redactor: Arc<dyn Redactor>,
    clients: Mutex<HashMap<(ModelEndpoint, u64), Arc<dyn ChatModel>>>,
}

impl AgentEndpoints {
    /// Endpoints built under `cfg`, with keys from `vault`; answers redacted by `redactor`.
    pub fn new(
        cfg: &Config,
        vault: Arc<Mutex<Option<Vault>>>,
        redactor: Arc<dyn Redactor>,
    ) -> Self {
        AgentEndpoints {
            cfg: RwLock::new(cfg.clone()),
            vault,
            redactor,
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// Applies new `provider.*` timeouts to the clients built from now on.
    pub fn config_changed(&self, cfg: &Config) {
        *write(&self.cfg) = cfg.clone();
        lock(&self.clients).clear();
    }

    /// The client for `endpoint`.
    ///
    /// # Errors
    /// [`ChatError::Config`] when the key it names is not in the vault (or the vault is
    /// unavailable), saying how to fix it.
    pub fn model_for(&self, endpoint: &ModelEndpoint) -> Result<Arc<dyn ChatModel>, ChatError> {
        let key = match &endpoint.api_key_secret {
            None => None,
            Some(name) => {
                let guard = lock(&self.vault);
                let vault = guard.as_ref().ok_or_else(|| {
                    ChatError::Config(format!(
                        "the agent's model key {name} is in the vault, which is unavailable — see `sayri vault status`"
                    ))
                })?;
                let value = vault.get(name).ok_or_else(|| {
                    ChatError::Config(format!(
                        "the agent's model key {name} is not in the vault — add it with `sayri vault set {name}`, or fix model.api_key_secret in the agent's profile"
                    ))
                })?;
                Some(value.to_string())
            }
        };
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        let slot = (endpoint.clone(), h.finish());
        let mut clients = lock(&self.clients);
        if let Some(c) = clients.get(&slot) {
            return Ok(c.clone());
        }
        let mut cfg = read(&self.cfg).clone();
        cfg.provider.base_url = endpoint.base_url.clone();
        cfg.provider.extra_headers.clear();
        let client = build_model(&cfg, key, self.redactor.clone());
        clients.insert(slot, client.clone());
        Ok(client)
    }
}
