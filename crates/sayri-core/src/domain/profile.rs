//! Agent profiles (spec §7.1): who an agent is, its model settings and its sandbox.
//!
//! This module holds the data shape. Loading and validating `$CONFIG/agents/<id>.json` happens
//! in one place (the profile loader) so later features (agent creation, non-escalation) build on it.

use sayri_protocol::SandboxLevel;
use serde::{Deserialize, Serialize};

/// The model settings of an agent. `"default"` means "use the provider config".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelSettings {
    /// Provider id, `"default"` = `provider.*` of `sayri.toml`.
    pub provider: String,
    /// Model name, `"default"` = `provider.model`.
    pub model_name: String,
    /// Sampling temperature.
    pub temperature: f32,
    /// Completion cap; `None` = `provider.max_tokens`.
    pub max_tokens: Option<u32>,
}

impl Default for ModelSettings {
    fn default() -> Self {
        ModelSettings {
            provider: "default".into(),
            model_name: "default".into(),
            temperature: 0.7,
            max_tokens: None,
        }
    }
}

/// One permission rule as written in a profile or policy file:
/// `{"action": "shell", "resource": "git push*", "effect": "ask"}`.
/// Validation (known action/effect) is the permission engine's job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawRule {
    /// `shell | read | write | web | skill | subagent | *`.
    pub action: String,
    /// Whole-value wildcard pattern; defaults to `*`.
    #[serde(default = "star")]
    pub resource: String,
    /// `allow | ask | deny`.
    pub effect: String,
}

fn star() -> String {
    "*".into()
}

/// The sandbox part of an agent profile (spec §5.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// Isolation level.
    pub level: SandboxLevel,
    /// Per-command timeout in seconds (0 → 10).
    pub timeout_seconds: u64,
    /// Level-2 workspace; `None` = `$STATE/sandboxes/<agent_id>`.
    pub isolated_dir: Option<String>,
    /// Network for levels 1–2.
    pub allow_network: bool,
    /// Stored for compatibility; not enforced (spec §5.5).
    pub allowed_binaries: Vec<String>,
    /// Programs denied outright (become deny rules).
    pub blocked_binaries: Vec<String>,
    /// The agent's own rules, last match wins.
    pub permission_rules: Vec<RawRule>,
    /// Whether an `ask` produces a card (true) or is settled by the default (false).
    pub ask_before_run: bool,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            level: SandboxLevel::HostUser,
            timeout_seconds: 10,
            isolated_dir: None,
            allow_network: true,
            allowed_binaries: Vec::new(),
            blocked_binaries: ["mkfs", "dd", "shutdown", "reboot"]
                .map(String::from)
                .to_vec(),
            permission_rules: Vec::new(),
            ask_before_run: false,
        }
    }
}

/// An agent profile (`$CONFIG/agents/<id>.json`, spec §7.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentProfile {
    /// Identifier (file stem).
    pub id: String,
    /// Display name.
    pub name: String,
    /// One-line description.
    pub description: String,
    /// The agent's own system prompt text.
    pub system_prompt: String,
    /// Extra instructions appended to the prompt.
    pub custom_instructions: String,
    /// Model settings.
    pub model: ModelSettings,
    /// Sandbox settings.
    pub sandbox: SandboxConfig,
    /// Skills the agent may use (empty = all installed).
    pub allowed_skills: Vec<String>,
    /// Plugins the agent may use.
    pub allowed_plugins: Vec<String>,
    /// Tools the agent may use (empty = no restriction within its level).
    pub allowed_tools: Vec<String>,
    /// Secrets (vault keys) the agent's commands may receive as environment variables.
    pub allowed_secrets: Vec<String>,
    /// Allows up to 10 model calls per turn instead of 6.
    pub investigation_loop: bool,
    /// Records learned preferences (spec §4.9).
    pub reinforcement_learning: bool,
    /// Creation time, Unix seconds.
    pub created_at: f64,
}

impl Default for AgentProfile {
    fn default() -> Self {
        AgentProfile {
            id: "default".into(),
            name: "Main Sayri".into(),
            description: String::new(),
            system_prompt: String::new(),
            custom_instructions: String::new(),
            model: ModelSettings::default(),
            sandbox: SandboxConfig::default(),
            allowed_skills: Vec::new(),
            allowed_plugins: Vec::new(),
            allowed_tools: Vec::new(),
            allowed_secrets: Vec::new(),
            investigation_loop: false,
            reinforcement_learning: false,
            created_at: 0.0,
        }
    }
}

impl AgentProfile {
    /// The built-in `default` agent (level 3, host user), used when no `default.json` exists.
    pub fn builtin_default() -> Self {
        AgentProfile {
            description: "Main desktop assistant".into(),
            ..AgentProfile::default()
        }
    }
}
