//! What a changed setting needs beyond its own check (`sayri_core::domain::config::Check`):
//! things on this machine and the parsers of the adapters that use it. Runs on the new settings
//! before a change is written — by the daemon's `config_set` and by `sayri config set` without a
//! daemon — so an accepted value never stops the daemon from starting or the provider client
//! from being built.
//!
//! * `permissions.policy_files`: every listed file that exists loads (a missing file is
//!   skipped, as at start); a directory, an unreadable or a malformed file is refused.
//! * `agent.default_agent`: the agent exists (a profile file, or the built-in `default`) and
//!   its file is valid.
//! * `provider.base_url`, `provider.extra_headers`: the provider client's own parsers accept
//!   them.
//! * `provider.local_model`: the model file exists (a path, or a name installed in
//!   `$STATE/models`) and the local model server's runtime is installed.
//! * Voice (`crate::voice::check_setting`): a `file:` microphone is a readable WAV file, a
//!   `file:` speaker a writable path, a model named instead of `auto` is installed.

use crate::agents::FileAgents;
use crate::config_file::ConfigFileError;
use crate::policies;
use sayri_client::paths::Paths;
use sayri_core::domain::config::Config;

/// Checks what `key`'s new value in `cfg` needs on this machine.
///
/// # Errors
/// [`ConfigFileError::Unusable`] naming the key, saying what stands in the way and what to do.
pub fn check_change(paths: &Paths, cfg: &Config, key: &str) -> Result<(), ConfigFileError> {
    let unusable = |expected: &str, problem: String| ConfigFileError::Unusable {
        key: key.to_string(),
        message: format!("expected {expected}; {problem}"),
    };
    match key {
        "permissions.policy_files" => policies::load_for(cfg).map(drop).map_err(|e| {
            unusable(
                "policy files that load (a file that does not exist yet is skipped)",
                e.to_string(),
            )
        }),
        "agent.default_agent" => default_agent_exists(paths, &cfg.agent.default_agent)
            .map_err(|e| unusable("an agent that exists", e)),
        "provider.base_url" => sayri_llm::Endpoint::parse(&cfg.provider.base_url)
            .map(drop)
            .map_err(|e| unusable("a URL the provider client accepts", e.to_string())),
        "provider.local_model" => {
            crate::local_model::check_setting(paths, &cfg.provider.local_model).map_err(|e| {
                unusable(
                    "a model file that exists and an installed local model server",
                    e.to_string(),
                )
            })
        }
        "provider.extra_headers" => crate::brain::settings::client_config(cfg, None)
            .map(drop)
            .map_err(|e| unusable("headers the provider client accepts", e)),
        _ => match crate::voice::check_setting(key, cfg) {
            Some(r) => r.map_err(|(expected, problem)| unusable(expected, problem)),
            None => Ok(()),
        },
    }
}

/// The agent `id` has a valid profile file, or is the built-in `default`.
fn default_agent_exists(paths: &Paths, id: &str) -> Result<(), String> {
    let agents = FileAgents::new(paths.agents_dir());
    match agents.load(id)? {
        Some(_) => Ok(()),
        None => Err(format!(
            "agent not found: {id} — create {}/{id}.json first (see `sayri prompt show --agent ID`)",
            agents.dir().display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use sayri_core::domain::config::{Check, Config};

    /// The key table refuses a provider key the vault would refuse to store.
    #[test]
    fn the_provider_key_check_asks_at_least_what_the_vault_stores() {
        let spec = Config::spec("provider.api_key").unwrap();
        assert!(
            matches!(spec.check, Check::Credential { min } if min >= sayri_vault::MIN_SECRET_CHARS),
            "{:?}",
            spec.check
        );
    }
}
