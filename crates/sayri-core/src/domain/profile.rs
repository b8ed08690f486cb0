//! Agent profiles: who an agent is, its model settings and its sandbox.
//!
//! This module holds the data shape and its validation ([`AgentProfile::from_json`]). What an
//! agent may actually do is its *effective* profile: for an agent with a creator (`parent`) it
//! is computed by `domain::agents::effective_profile` from the creator's current profile.
//!
//! The file format is the original one plus these fields (all optional):
//! * `parent` — the id of the agent that created this one; it can never do more than its creator.
//! * `allowed_secrets` — vault keys its commands receive as environment variables.
//! * `model.base_url` — an OpenAI-compatible endpoint of its own (else the provider's).
//! * `model.api_key_secret` — the vault key holding that endpoint's API key (never the key).

use sayri_permissions::{CreatorRules, DefaultEffect, ProfileRules, RawRule};
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
    /// Endpoint of this agent's model (`http(s)://host[:port]/v1`); `None` = `provider.base_url`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Name of the vault secret holding the API key for `base_url`. Without it no key is sent to
    /// an agent's own endpoint (the provider key only ever goes to `provider.base_url`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_secret: Option<String>,
}

impl Default for ModelSettings {
    fn default() -> Self {
        ModelSettings {
            provider: "default".into(),
            model_name: "default".into(),
            temperature: 0.7,
            max_tokens: None,
            base_url: None,
            api_key_secret: None,
        }
    }
}

/// The sandbox part of an agent profile.
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
    /// Stored so older profile files load; not enforced (rules and `blocked_binaries` are).
    pub allowed_binaries: Vec<String>,
    /// Programs denied outright (become deny rules).
    pub blocked_binaries: Vec<String>,
    /// The agent's own rules, last match wins.
    pub permission_rules: Vec<RawRule>,
    /// Whether an `ask` produces a card (true) or is settled by the default (false).
    pub ask_before_run: bool,
    /// What happens to a command or file write no rule matches (level 0 runs nothing).
    ///
    /// ```
    /// use sayri_core::domain::profile::AgentProfile;
    /// use sayri_permissions::DefaultEffect;
    /// assert_eq!(AgentProfile::builtin_default().sandbox.default_effect, DefaultEffect::ReadOnly);
    /// let p = AgentProfile::from_json(r#"{"sandbox": {"default_effect": "ask"}}"#, "x.json").unwrap();
    /// assert_eq!(p.sandbox.default_effect, DefaultEffect::Ask);
    /// ```
    pub default_effect: DefaultEffect,
}

/// The permission engine's view of a profile: its id, name, level and sandbox rules.
impl<'a> From<&'a AgentProfile> for ProfileRules<'a> {
    fn from(p: &'a AgentProfile) -> Self {
        ProfileRules {
            agent_id: &p.id,
            agent_name: &p.name,
            level: p.sandbox.level,
            ask_before_run: p.sandbox.ask_before_run,
            default_effect: p.sandbox.default_effect,
            blocked_binaries: &p.sandbox.blocked_binaries,
            permission_rules: &p.sandbox.permission_rules,
            creator_rules: &p.creator_rules,
        }
    }
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
            default_effect: DefaultEffect::Allow,
        }
    }
}

/// An agent profile (`$CONFIG/agents/<id>.json`).
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
    /// Records learned preferences: `(agent, request, command, success)` after a command that
    /// ran and is not a lookup.
    pub reinforcement_learning: bool,
    /// Creation time, Unix seconds.
    pub created_at: f64,
    /// The agent that created this one. Its effective profile never exceeds the creator's
    /// current one; only a person removes the link (`sayri agents detach`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The creators' rule layers, outermost creator first (see [`CreatorRules`]). Empty in a
    /// profile as written.
    #[serde(skip)]
    pub creator_rules: Vec<CreatorRules>,
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
            parent: None,
            creator_rules: Vec::new(),
        }
    }
}

impl AgentProfile {
    /// The built-in `default` agent (level 3, host user), used when no `default.json` exists.
    /// Safe by default: read-only commands run without a card, everything else asks
    /// ([`DefaultEffect::ReadOnly`] with `ask_before_run`).
    pub fn builtin_default() -> Self {
        let mut p = AgentProfile {
            description: "Main desktop assistant".into(),
            ..AgentProfile::default()
        };
        p.sandbox.default_effect = DefaultEffect::ReadOnly;
        p.sandbox.ask_before_run = true;
        p
    }
}

/// Whether `id` can name an agent: not empty, no leading dot, and only letters, digits, `-` and
/// `_` (so it is always a plain file stem under `$CONFIG/agents/` and a plain directory name
/// under the sandboxes root). The one check used by the daemon's loader, the CLI and the
/// `agent.default_agent` setting.
///
/// ```
/// use sayri_core::domain::profile::valid_agent_id;
/// assert!(valid_agent_id("research-2"));
/// assert!(!valid_agent_id("../etc"));
/// assert!(!valid_agent_id(".hidden"));
/// assert!(!valid_agent_id(""));
/// ```
pub fn valid_agent_id(id: &str) -> bool {
    !id.is_empty()
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

/// Whether `name` can name a vault secret: letters, digits, `_` and spaces, not starting with a
/// digit (the vault writes it upper-case with spaces as `_`; see [`secret_key`]).
pub fn valid_secret_name(name: &str) -> bool {
    let key = secret_key(name);
    !key.is_empty()
        && !key.starts_with(|c: char| c.is_ascii_digit())
        && key
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// A secret name as the vault stores it: trimmed, upper-case, spaces as `_`
/// (`" github token "` → `GITHUB_TOKEN`), so lists of secrets compare by what they name.
pub fn secret_key(name: &str) -> String {
    name.trim().to_uppercase().replace(' ', "_")
}

/// Why a profile file was rejected. Every variant names the file and, where known, the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    /// Not valid JSON, or not an object.
    #[error("{origin}: not a valid agent profile: {message} — fix the JSON or remove the file")]
    Syntax {
        /// File the text came from.
        origin: String,
        /// Parser message (with line and column).
        message: String,
    },
    /// A field has a value that is not allowed.
    #[error("{origin}: field `{field}`: {message}")]
    Field {
        /// File the text came from.
        origin: String,
        /// Dotted field path, e.g. `sandbox.level`.
        field: String,
        /// What is wrong and what to write instead.
        message: String,
    },
}

impl AgentProfile {
    /// Parses and validates a profile file's text (the JSON shape of [`AgentProfile`]). `origin`
    /// is the file path
    /// (for messages; its stem is the default `id`).
    ///
    /// Defaults: missing `id` → file stem, missing `name` → "Main Sayri" for `default` else the
    /// id, `timeout_seconds` 0 → 10, `isolated_dir` "" → none, absent `blocked_binaries` → the
    /// four defaults, present-but-empty → none. An unknown `sandbox.level` is an error (never
    /// silently level 3), and so are unknown fields, rules without action/effect, and
    /// out-of-range temperatures.
    pub fn from_json(text: &str, origin: &str) -> Result<AgentProfile, ProfileError> {
        let syntax = |message: String| ProfileError::Syntax {
            origin: origin.to_string(),
            message,
        };
        let field = |field: &str, message: String| ProfileError::Field {
            origin: origin.to_string(),
            field: field.to_string(),
            message,
        };
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| syntax(e.to_string()))?;
        let obj = value
            .as_object()
            .ok_or_else(|| syntax("the top level must be a JSON object".into()))?;
        // Level first, with a message that lists the valid levels (a misspelt level must not
        // load as some other level; pinned by `unknown_level_is_an_error_naming_file_and_field`).
        if let Some(level) = obj.get("sandbox").and_then(|s| s.get("level")) {
            let ok = level
                .as_str()
                .is_some_and(|s| s.parse::<SandboxLevel>().is_ok());
            if !ok {
                return Err(field(
                    "sandbox.level",
                    format!(
                        "unknown isolation level {level} — use one of LEVEL_0_NO_EXEC, LEVEL_1_READONLY, LEVEL_2_ISOLATED_DEV, LEVEL_3_HOST_USER, LEVEL_4_HOST_ROOT"
                    ),
                ));
            }
        }
        let mut normalised = value.clone();
        if let Some(l) = normalised
            .get_mut("sandbox")
            .and_then(|s| s.get_mut("level"))
            && let Some(parsed) = l.as_str().and_then(|s| s.parse::<SandboxLevel>().ok())
        {
            *l = serde_json::Value::String(parsed.name().to_string());
        }
        if let Some(d) = normalised
            .get_mut("sandbox")
            .and_then(|s| s.get_mut("isolated_dir"))
            && d.as_str() == Some("")
        {
            *d = serde_json::Value::Null;
        }
        let mut p: AgentProfile = serde_json::from_value(normalised).map_err(|e| {
            let msg = e.to_string();
            let name = msg
                .split('`')
                .nth(1)
                .filter(|_| msg.starts_with("unknown field") || msg.starts_with("missing field"))
                .unwrap_or("(see message)")
                .to_string();
            field(&name, format!("{msg} — fix or remove that field"))
        })?;
        let stem = std::path::Path::new(origin)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("agent")
            .to_string();
        if !obj.contains_key("id") || p.id.trim().is_empty() {
            p.id = stem;
        }
        if !obj.contains_key("name") || p.name.trim().is_empty() {
            p.name = if p.id == "default" {
                "Main Sayri".into()
            } else {
                p.id.clone()
            };
        }
        if p.sandbox.timeout_seconds == 0 {
            p.sandbox.timeout_seconds = 10;
        }
        if !(0.0..=2.0).contains(&p.model.temperature) {
            return Err(field(
                "model.temperature",
                format!("{} is outside 0–2", p.model.temperature),
            ));
        }
        for (i, r) in p.sandbox.permission_rules.iter().enumerate() {
            if r.action.trim().is_empty() || r.effect.trim().is_empty() {
                return Err(field(
                    &format!("sandbox.permission_rules[{i}]"),
                    "a rule needs a non-empty `action` and `effect`".into(),
                ));
            }
        }
        p.check_additions()
            .map_err(|(name, message)| field(name, message))?;
        Ok(p)
    }

    /// Checks the fields Sayri added to the original format: `parent`, `model.base_url`,
    /// `model.api_key_secret`, `allowed_secrets`. `Err((field, message))`.
    fn check_additions(&self) -> Result<(), (&'static str, String)> {
        if let Some(parent) = &self.parent {
            if !valid_agent_id(parent) {
                return Err((
                    "parent",
                    format!("{parent:?} is not an agent id (letters, digits, '-' and '_')"),
                ));
            }
            if *parent == self.id {
                return Err(("parent", "an agent cannot be its own creator".into()));
            }
        }
        if let Some(url) = &self.model.base_url {
            let rest = url
                .strip_prefix("http://")
                .or_else(|| url.strip_prefix("https://"));
            if rest.is_none_or(|r| r.is_empty() || r.starts_with('/')) {
                return Err((
                    "model.base_url",
                    format!(
                        "{url:?} is not an http(s) URL — write e.g. \"http://127.0.0.1:11434/v1\", or remove it to use the provider's"
                    ),
                ));
            }
        }
        if let Some(key) = &self.model.api_key_secret
            && !valid_secret_name(key)
        {
            return Err((
                "model.api_key_secret",
                format!(
                    "{key:?} is not a vault key name: write the NAME of a secret stored with `sayri vault set NAME`, never the key itself"
                ),
            ));
        }
        if let Some(bad) = self.allowed_secrets.iter().find(|s| !valid_secret_name(s)) {
            return Err((
                "allowed_secrets",
                format!("{bad:?} is not a vault key name (letters, digits, '_' and spaces)"),
            ));
        }
        Ok(())
    }

    /// The most model calls one turn may make: 10 with `investigation_loop`, else 6.
    pub fn max_model_calls(&self) -> usize {
        if self.investigation_loop { 10 } else { 6 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_level_is_an_error_naming_file_and_field() {
        let t = r#"{"id":"typo","sandbox":{"level":"LEVEL_1_READ_ONLY"}}"#;
        let e = AgentProfile::from_json(t, "/cfg/agents/typo.json").unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("/cfg/agents/typo.json") && s.contains("sandbox.level"),
            "{s}"
        );
        assert!(s.contains("LEVEL_1_READ_ONLY"), "{s}");
    }

    #[test]
    fn missing_fields_take_their_defaults() {
        let p = AgentProfile::from_json(
            r#"{"sandbox":{"timeout_seconds":0,"isolated_dir":""}}"#,
            "x/helper.json",
        )
        .unwrap();
        assert_eq!((p.id.as_str(), p.name.as_str()), ("helper", "helper"));
        assert_eq!(p.sandbox.timeout_seconds, 10);
        assert_eq!(p.sandbox.isolated_dir, None);
        assert_eq!(p.sandbox.blocked_binaries.len(), 4);
        assert_eq!(p.sandbox.level, SandboxLevel::HostUser);
        let p = AgentProfile::from_json(
            r#"{"id":"default","sandbox":{"blocked_binaries":[]}}"#,
            "d.json",
        )
        .unwrap();
        assert_eq!(p.name, "Main Sayri");
        assert!(p.sandbox.blocked_binaries.is_empty());
    }

    #[test]
    fn unknown_fields_bad_rules_and_syntax_are_errors() {
        let e = AgentProfile::from_json(r#"{"colour":"red"}"#, "a.json").unwrap_err();
        assert!(e.to_string().contains("colour"), "{e}");
        let e = AgentProfile::from_json(
            r#"{"sandbox":{"permission_rules":[{"action":"","effect":"allow"}]}}"#,
            "a.json",
        )
        .unwrap_err();
        assert!(e.to_string().contains("permission_rules[0]"), "{e}");
        assert!(matches!(
            AgentProfile::from_json("[1]", "a.json"),
            Err(ProfileError::Syntax { .. })
        ));
        assert!(matches!(
            AgentProfile::from_json("{", "a.json"),
            Err(ProfileError::Syntax { .. })
        ));
    }

    #[test]
    fn a_serialised_profile_loads_back_unchanged() {
        let p = AgentProfile {
            id: "c".into(),
            ..AgentProfile::default()
        };
        let text = serde_json::to_string_pretty(&p).unwrap();
        assert_eq!(AgentProfile::from_json(&text, "c.json").unwrap(), p);
    }
}
